/*
 * agent_fs: kiln_agent's requests about the guest's files (stat, list,
 * mkdir, remove, rename), its ports (tcp_connect), itself (ping, info)
 * and kiln_watch (include/kiln/agent.h), over api/agent-client: options
 * and results converted, the message kept per handle.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libkiln/agent_impl.h"

struct kiln_watch {
	struct agent_client_watch *w;
	char err[ERR_MSG_MAX];
};

_Static_assert(sizeof(((struct kiln_guest_info *)0)->hostname) == AGENT_HOSTNAME_MAX + 1,
	       "hostname fits");
_Static_assert((int)KILN_FILE_OTHER == (int)AGENT_KIND_UNKNOWN &&
		       (int)KILN_FILE_BLOCK == (int)AGENT_KIND_BLOCK,
	       "kinds in the client's order");
_Static_assert((int)KILN_FS_OVERFLOW == (int)AGENT_FS_OVERFLOW &&
		       (int)KILN_FS_RENAME == (int)AGENT_FS_RENAME,
	       "changes in the protocol's order");

static enum agent_user user_of(unsigned flags)
{
	return flags & KILN_AGENT_AS_ROOT ? AGENT_USER_ROOT : AGENT_USER_USER;
}

/* A caller's struct with size < what it must hold at least. */
static int too_small(kiln_agent *a, const char *what)
{
	struct agent_client_err e = { .fail = AGENT_FAIL_LOCAL };

	snprintf(e.msg, sizeof(e.msg), "%s: its size field is too small (set it to sizeof)", what);
	return agent_fail(a, -EINVAL, &e);
}

int kiln_agent_ping(kiln_agent *a, int *protocol)
{
	struct agent_client_err e = { 0 };
	int p, r = agent_client_ping(&a->c, &p, &e);

	if (r < 0)
		return agent_fail(a, r, &e);
	if (protocol)
		*protocol = p;
	return 0;
}

int kiln_agent_info(kiln_agent *a, struct kiln_guest_info *info)
{
	struct agent_client_err e = { 0 };
	struct agent_client_info in;
	int r;

	if (!info || info->size < sizeof(*info))
		return too_small(a, "info");
	if ((r = agent_client_info(&a->c, &in, &e)) < 0)
		return agent_fail(a, r, &e);
	info->protocol = in.protocol;
	snprintf(info->agent_version, sizeof(info->agent_version), "%s", in.agent_version);
	snprintf(info->kernel, sizeof(info->kernel), "%s", in.kernel);
	snprintf(info->hostname, sizeof(info->hostname), "%s", in.hostname);
	info->cpus = in.cpus;
	info->mem_total = in.mem_total;
	info->mem_available = in.mem_available;
	info->uptime_ms = in.uptime_ms;
	info->time_ns = in.time_ns;
	info->processes = in.processes;
	return 0;
}

const char *kiln_file_kind_name(enum kiln_file_kind kind)
{
	if ((unsigned)kind > KILN_FILE_OTHER)
		kind = KILN_FILE_OTHER;
	return agent_client_kind_name((enum agent_client_kind)kind);
}

/* An agent_client_stat as a kiln_file_info (strings not copied). */
static void put_info(struct kiln_file_info *o, const struct agent_client_stat *s)
{
	o->path = s->path;
	o->target = s->target;
	o->kind = (enum kiln_file_kind)s->kind;
	o->file_size = s->size;
	o->mode = s->mode;
	o->uid = s->uid;
	o->gid = s->gid;
	o->nlink = s->nlink;
	o->mtime_ns = s->mtime_ns;
	o->depth = s->depth;
	o->lossy = s->lossy;
}

int kiln_agent_stat(kiln_agent *a, const char *path, unsigned flags, struct kiln_file_info *st)
{
	struct agent_client_err e = { 0 };
	struct agent_client_stat s = { 0 };
	char *p = NULL, *t = NULL;
	int r;

	if (!st || st->size < sizeof(*st))
		return too_small(a, "stat");
	r = agent_client_stat(&a->c, path, !(flags & KILN_AGENT_NOFOLLOW), user_of(flags), &s, &e);
	if (r < 0)
		return agent_fail(a, r, &e);
	/* The caller's copies, released with kiln_free like all libkiln memory. */
	if ((s.path && !(p = strdup(s.path))) || (s.target && !(t = strdup(s.target)))) {
		free(p);
		agent_client_stat_free(&s);
		e = (struct agent_client_err){ .fail = AGENT_FAIL_LOCAL };
		snprintf(e.msg, sizeof(e.msg), "stat: out of memory");
		return agent_fail(a, -ENOMEM, &e);
	}
	put_info(st, &s);
	st->path = p;
	st->target = t;
	agent_client_stat_free(&s);
	return 0;
}

struct list_relay {
	kiln_list_fn fn;
	void *arg;
};

static int relay_entry(void *arg, const struct agent_client_stat *s)
{
	struct list_relay *l = arg;
	struct kiln_file_info o = { .size = sizeof(o) };

	put_info(&o, s);
	return l->fn(l->arg, &o);
}

int kiln_agent_list(kiln_agent *a, const char *path, unsigned flags, uint32_t depth, uint32_t limit,
		    kiln_list_fn fn, void *arg, struct kiln_list_end *end)
{
	struct agent_client_list_opts o = { .depth = depth,
					    .limit = limit,
					    .user = user_of(flags) };
	struct agent_client_list_end le = { 0 };
	struct agent_client_err e = { 0 };
	struct list_relay l = { fn, arg };
	int r;

	if (!fn) {
		e.fail = AGENT_FAIL_LOCAL;
		snprintf(e.msg, sizeof(e.msg), "list: no callback given");
		return agent_fail(a, -EINVAL, &e);
	}
	if (end && end->size < sizeof(*end))
		return too_small(a, "list end");
	r = agent_client_list_dir(&a->c, path, &o, relay_entry, &l, &le, &e);
	if (r < 0) /* a stop by fn is fn's value, with "stopped by the caller" on a */
		return agent_fail(a, r, &e);
	if (end) {
		end->count = le.count;
		end->truncated = le.truncated;
		end->skipped = le.skipped;
	}
	return 0;
}

int kiln_agent_mkdir(kiln_agent *a, const char *path, unsigned flags, int mode)
{
	struct agent_client_err e = { 0 };
	int r = agent_client_mkdir(&a->c, path, !!(flags & KILN_AGENT_PARENTS), mode,
				   user_of(flags), &e);

	return r < 0 ? agent_fail(a, r, &e) : 0;
}

int kiln_agent_remove(kiln_agent *a, const char *path, unsigned flags)
{
	struct agent_client_err e = { 0 };
	int r = agent_client_remove(&a->c, path, !!(flags & KILN_AGENT_RECURSIVE), user_of(flags),
				    &e);

	return r < 0 ? agent_fail(a, r, &e) : 0;
}

int kiln_agent_rename(kiln_agent *a, const char *from, const char *to, unsigned flags)
{
	struct agent_client_err e = { 0 };
	int r = agent_client_rename(&a->c, from, to, !!(flags & KILN_AGENT_OVERWRITE),
				    user_of(flags), &e);

	return r < 0 ? agent_fail(a, r, &e) : 0;
}

int kiln_agent_tcp_connect(kiln_agent *a, uint32_t port, const char *address, int *fd)
{
	struct agent_client_err e = { 0 };
	int r = agent_client_tcp_connect(&a->c, port, address, fd, &e);

	return r < 0 ? agent_fail(a, r, &e) : 0;
}

int kiln_agent_watch(kiln_agent *a, const char *path, unsigned flags, kiln_watch **out,
		     uint32_t *watches)
{
	struct agent_client_watch_opts o = { .recursive = !!(flags & KILN_AGENT_RECURSIVE),
					     .user = user_of(flags) };
	struct agent_client_err e = { 0 };
	kiln_watch *w;
	int r;

	*out = NULL;
	if (!(w = calloc(1, sizeof(*w)))) {
		e.fail = AGENT_FAIL_LOCAL;
		snprintf(e.msg, sizeof(e.msg), "watch: out of memory");
		return agent_fail(a, -ENOMEM, &e);
	}
	if ((r = agent_client_watch(&a->c, path, &o, &w->w, watches, &e)) < 0) {
		free(w);
		return agent_fail(a, r, &e);
	}
	*out = w;
	return 0;
}

int kiln_watch_next(kiln_watch *w, int timeout_ms, struct kiln_fs_event *ev,
		    const char **end_reason)
{
	struct agent_client_err e = { 0 };
	struct agent_client_fs_event in;
	const char *end = NULL;
	int r;

	if (!ev || ev->size < sizeof(*ev)) {
		snprintf(w->err, sizeof(w->err),
			 "watch: the event's size field is too small (set it to sizeof)");
		return -EINVAL;
	}
	r = agent_client_watch_next(w->w, timeout_ms, &in, &end, &e);
	if (r < 0) {
		snprintf(w->err, sizeof(w->err), "%s", e.msg[0] ? e.msg : strerror(-r));
		return r;
	}
	if (r == 1) {
		if (end_reason)
			*end_reason = end;
		return 1;
	}
	ev->change = (enum kiln_fs_change)in.kind;
	ev->seq = in.seq;
	ev->path = in.path;
	ev->old_path = in.old_path;
	ev->is_dir = in.is_dir;
	ev->lossy = in.lossy;
	ev->reason = in.reason;
	ev->dropped = in.dropped;
	return 0;
}

int kiln_watch_fd(const kiln_watch *w)
{
	return agent_client_watch_fd(w->w);
}

int kiln_watch_pending(const kiln_watch *w)
{
	return agent_client_watch_pending(w->w);
}

const char *kiln_watch_errmsg(const kiln_watch *w)
{
	return w->err;
}

void kiln_watch_close(kiln_watch *w)
{
	if (!w)
		return;
	agent_client_watch_close(w->w);
	free(w);
}
