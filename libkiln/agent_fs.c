/*
 * agent_fs: kiln_agent's requests about the guest's files (stat, list,
 * mkdir, remove, rename), its ports (tcp_connect, vsock_connect), itself (ping, info,
 * wait_ready_hold, configure)
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
	struct lk_err err;
};

_Static_assert(sizeof(((struct kiln_guest_info *)0)->hostname) == AGENT_HOSTNAME_MAX + 1,
	       "hostname fits");
_Static_assert((int)KILN_FILE_OTHER == (int)AGENT_KIND_UNKNOWN &&
		       (int)KILN_FILE_BLOCK == (int)AGENT_KIND_BLOCK,
	       "kinds in the client's order");
_Static_assert((int)KILN_FS_OVERFLOW == (int)AGENT_FS_OVERFLOW &&
		       (int)KILN_FS_RENAME == (int)AGENT_FS_RENAME,
	       "changes in the protocol's order");

#define user_of agent_user_of
#define too_small agent_too_small

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

int kiln_agent_wait_ready_hold(kiln_agent *a, int timeout_ms, int hold_ms)
{
	struct agent_client_err e = { 0 };
	int r = agent_client_wait_ready_hold(&a->c, timeout_ms, hold_ms, &e);

	return r < 0 ? agent_fail(a, r, &e) : 0;
}

int kiln_agent_configure(kiln_agent *a, const struct kiln_guest_config *cfg)
{
	struct agent_client_configure c = { 0 };
	struct agent_client_err e = { 0 };
	int r;

	if (!cfg || !OPT_HAS(cfg, mtu))
		return too_small(a, "guest config");
	c.hostname = cfg->hostname;
	c.interface = cfg->interface;
	c.address = cfg->address;
	c.gateway = cfg->gateway;
	c.dns = cfg->dns;
	c.dns_n = cfg->dns_n;
	c.set_dns = !!(cfg->flags & KILN_GUEST_SET_DNS);
	c.mtu = cfg->mtu;
	if (OPT_HAS(cfg, trust_ca))
		c.trust_ca = cfg->trust_ca;
	r = agent_client_configure(&a->c, &c, &e);
	return r < 0 ? agent_fail(a, r, &e) : 0;
}

int kiln_agent_trust_ca(kiln_agent *a, const char *pem)
{
	struct kiln_guest_config cfg = { .size = sizeof(cfg), .trust_ca = pem ? pem : "" };

	return kiln_agent_configure(a, &cfg);
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

int kiln_agent_vsock_connect(kiln_agent *a, uint32_t port, int *fd)
{
	struct agent_client_err e = { 0 };
	struct agent_client c = a->c; /* the same socket and timeout, another port */
	int r;

	c.port = port;
	r = agent_client_connect(&c, fd, &e);
	return r < 0 ? agent_fail(a, r, &e) : 0;
}

int kiln_agent_watch(kiln_agent *a, const char *path, unsigned flags, kiln_watch **out,
		     uint32_t *watches)
{
	struct kiln_watch_opts o = { .size = sizeof(o), .flags = flags };

	return kiln_agent_watch_with(a, path, &o, out, watches);
}

int kiln_agent_watch_with(kiln_agent *a, const char *path, const struct kiln_watch_opts *wo,
			  kiln_watch **out, uint32_t *watches)
{
	struct agent_client_watch_opts o = { 0 };
	struct agent_client_err e = { 0 };
	kiln_watch *w;
	int r;

	*out = NULL;
	if (wo && wo->size < sizeof(*wo))
		return too_small(a, "watch options");
	if (wo) {
		o.recursive = !!(wo->flags & KILN_AGENT_RECURSIVE);
		o.user = user_of(wo->flags);
		o.max_watches = wo->max_watches;
		o.queue = wo->queue;
	}
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
		e.fail = AGENT_FAIL_LOCAL;
		snprintf(e.msg, sizeof(e.msg),
			 "watch: the event's size field is too small (set it to sizeof)");
		return lk_err_set(&w->err, -EINVAL, &e);
	}
	r = agent_client_watch_next(w->w, timeout_ms, &in, &end, &e);
	if (r < 0)
		return lk_err_set(&w->err, r, &e);
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
	return w->err.msg;
}

const char *kiln_watch_errcode(const kiln_watch *w)
{
	return w->err.code;
}

enum kiln_agent_fail kiln_watch_errkind(const kiln_watch *w)
{
	return w->err.kind;
}

void kiln_watch_close(kiln_watch *w)
{
	if (!w)
		return;
	agent_client_watch_close(w->w);
	free(w);
}
