/*
 * agent_io: kiln_agent's streaming transfers (include/kiln/agent.h: read
 * to a callback, write from an fd, tar through callbacks), over
 * api/agent-client: options and results converted, the message kept per
 * handle. Nothing is held whole: what kilnd streams between an HTTP body
 * and a guest file goes through here a chunk at a time.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "libkiln/agent_impl.h"

int kiln_agent_read(kiln_agent *a, const char *path, const struct kiln_read_opts *o,
		    kiln_data_fn fn, void *arg, struct kiln_read_info *info)
{
	struct agent_client_read_opts ro = { 0 };
	struct agent_client_read_info ri = { 0 };
	struct agent_client_err e = { 0 };
	int r;

	if ((o && o->size < sizeof(*o)) || (info && info->size < sizeof(*info)))
		return agent_too_small(a, o && o->size < sizeof(*o) ? "read options" : "read info");
	if (!fn) {
		e.fail = AGENT_FAIL_LOCAL;
		snprintf(e.msg, sizeof(e.msg), "read: no callback given");
		return agent_fail(a, -EINVAL, &e);
	}
	if (o) {
		ro.offset = o->offset;
		ro.length = o->length;
		ro.has_length = o->has_length;
		ro.user = agent_user_of(o->flags);
	}
	if ((r = agent_client_read(&a->c, path, &ro, fn, arg, &ri, &e)) < 0)
		return agent_fail(a, r, &e);
	if (info) {
		info->file_size = ri.size;
		info->bytes = ri.bytes;
	}
	return 0;
}

int kiln_agent_write_fd(kiln_agent *a, const char *path, const struct kiln_write_opts *o, int fd,
			uint64_t *bytes)
{
	struct agent_client_write_opts wo = { 0 };
	struct agent_client_err e = { 0 };
	uint64_t n = 0;
	int r;

	if (o && o->size < sizeof(*o))
		return agent_too_small(a, "write options");
	if (o) {
		wo.parents = !!(o->flags & KILN_AGENT_PARENTS);
		wo.exclusive = !!(o->flags & KILN_AGENT_EXCLUSIVE);
		wo.append = !!(o->flags & KILN_AGENT_APPEND);
		wo.no_create = !!(o->flags & KILN_AGENT_NO_CREATE);
		wo.has_mode = o->mode >= 0;
		wo.mode = o->mode >= 0 ? (uint32_t)o->mode : 0;
		wo.user = agent_user_of(o->flags);
	}
	r = agent_client_write_fd(&a->c, path, &wo, fd, &n, &e);
	/* What went out before a failure is written too: say so either way. */
	if (bytes)
		*bytes = n;
	return r < 0 ? agent_fail(a, r, &e) : 0;
}

static void put_stats(struct kiln_tar_stats *st, const struct agent_client_tar_stats *in)
{
	if (!st)
		return;
	st->files = in->files;
	st->dirs = in->dirs;
	st->symlinks = in->symlinks;
	st->hardlinks = in->hardlinks;
	st->skipped = in->skipped;
	st->bytes = in->bytes;
}

struct source {
	kiln_source_fn fn;
	void *arg;
};

static ssize_t relay_source(void *arg, void *buf, size_t n)
{
	struct source *s = arg;

	return s->fn(s->arg, buf, n);
}

int kiln_agent_tar_upload_cb(kiln_agent *a, const char *dir, unsigned flags, kiln_source_fn src,
			     void *arg, struct kiln_tar_stats *st)
{
	struct agent_client_tar_stats ts = { 0 };
	struct agent_client_err e = { 0 };
	struct source s = { src, arg };
	int r;

	if (st && st->size < sizeof(*st))
		return agent_too_small(a, "tar stats");
	if (!src) {
		e.fail = AGENT_FAIL_LOCAL;
		snprintf(e.msg, sizeof(e.msg), "tar upload: no source given");
		return agent_fail(a, -EINVAL, &e);
	}
	r = agent_client_tar_upload_cb(&a->c, dir, agent_user_of(flags), relay_source, &s, &ts, &e);
	if (r < 0)
		return agent_fail(a, r, &e);
	put_stats(st, &ts);
	return 0;
}

int kiln_agent_tar_download_cb(kiln_agent *a, const char *path, unsigned flags, kiln_data_fn fn,
			       void *arg, struct kiln_tar_stats *st)
{
	struct agent_client_tar_stats ts = { 0 };
	struct agent_client_err e = { 0 };
	int r;

	if (st && st->size < sizeof(*st))
		return agent_too_small(a, "tar stats");
	if (!fn) {
		e.fail = AGENT_FAIL_LOCAL;
		snprintf(e.msg, sizeof(e.msg), "tar download: no callback given");
		return agent_fail(a, -EINVAL, &e);
	}
	r = agent_client_tar_download_cb(&a->c, path, agent_user_of(flags), fn, arg, &ts, &e);
	if (r < 0)
		return agent_fail(a, r, &e);
	put_stats(st, &ts);
	return 0;
}
