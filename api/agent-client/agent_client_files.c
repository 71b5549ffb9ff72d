/* agent_client: file requests, streamed to and from callbacks and fds (agent_client.h). */
#include "api/agent-client/agent_client.h"
#include "api/agent-client/agent_client_impl.h"
#include "lib/base/fd_io.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- files ---- */

/* fd_io's waiter for a local non-blocking fd: no deadline. */
static int local_wait(void *arg, int fd, short events)
{
	(void)arg;
	return agent_client_wait_fd(fd, events, 0);
}

static int fd_sink(void *arg, const void *data, size_t n)
{
	return fd_io_put_all(*(int *)arg, data, n, 0, &(struct fd_io_waiter){ local_wait, NULL });
}

/*
 * Stream `data` replies to fn until `end`; *got counts the bytes. `end`
 * is returned for the caller to check (json_decref).
 */
static int download(const struct agent_client *c, struct agent_client_conn *k,
		    agent_client_data_fn fn, void *arg, uint64_t limit, uint64_t *got, json_t **end,
		    struct agent_client_err *err)
{
	*end = NULL;
	for (;;) {
		const char *type;
		uint64_t len;
		json_t *h;
		int r;

		r = agent_client_next_reply(c, k, &h, &len, &type, "the end of the transfer", err);
		if (r < 0)
			return r;
		if (strcmp(type, "end") == 0) {
			*end = h;
			return 0;
		}
		if (strcmp(type, "data") != 0) {
			r = agent_client_unexpected(k, type, "data or end", err);
			json_decref(h);
			return r;
		}
		json_decref(h);
		if (len > limit - *got)
			return AGENT_CLIENT_PROTO_FAIL(
				err, "%s: the agent sent more than the %llu bytes asked for",
				k->what, (unsigned long long)limit);
		for (;;) {
			const uint8_t *p;
			size_t n;

			agent_client_conn_wait(k, c->timeout_ms);
			r = agent_client_conn_payload(k, &p, &n, err);
			if (r == 1)
				break;
			if (r < 0)
				return r;
			*got += n;
			r = fn(arg, p, n);
			if (r < 0)
				return agent_client_efail(err, AGENT_FAIL_LOCAL, AGENT_E_IO_ERROR,
							  -r, "%s: storing the data failed: %s",
							  k->what, strerror(-r));
		}
	}
}

int agent_client_read(const struct agent_client *c, const char *path,
		      const struct agent_client_read_opts *o, agent_client_data_fn fn, void *arg,
		      struct agent_client_read_info *info, struct agent_client_err *err)
{
	static const struct agent_client_read_opts defaults;
	struct agent_client_read_info local;
	const char *type;
	struct agent_client_req rq;
	struct agent_client_conn k;
	uint64_t len, bytes = 0;
	json_t *h = NULL, *end = NULL;
	int r;

	ERR_INIT(err);
	if (!o)
		o = &defaults;
	if (!info)
		info = &local;
	memset(info, 0, sizeof(*info));
	agent_client_req_init(&rq, "read");
	agent_client_req_str(&rq, "path", path);
	if (o->offset)
		agent_client_req_int(&rq, "offset",
				     o->offset > INT64_MAX ? INT64_MAX : (int64_t)o->offset);
	if (o->has_length)
		agent_client_req_int(&rq, "length",
				     o->length > INT64_MAX ? INT64_MAX : (int64_t)o->length);
	agent_client_req_user(&rq, o->user);
	r = agent_client_open_listing(c, &rq, &k, err);
	if (r < 0)
		return r;
	r = agent_client_next_reply(c, &k, &h, &len, &type, "replying", err);
	if (r == 0 && strcmp(type, "file") != 0)
		r = agent_client_unexpected(&k, type, "file", err);
	if (r == 0)
		r = agent_client_r_u64(&k, h, "size", &info->size, err);
	if (r == 0)
		r = download(c, &k, fn, arg, o->has_length ? o->length : UINT64_MAX, &info->bytes,
			     &end, err);
	if (r == 0)
		r = agent_client_r_u64(&k, end, "bytes", &bytes, err);
	if (r == 0 && bytes != info->bytes)
		r = AGENT_CLIENT_PROTO_FAIL(err,
					    "read: the agent reported %llu bytes but sent %llu",
					    (unsigned long long)bytes,
					    (unsigned long long)info->bytes);
	json_decref(h);
	json_decref(end);
	agent_client_conn_close(&k);
	return r;
}

int agent_client_read_fd(const struct agent_client *c, const char *path,
			 const struct agent_client_read_opts *o, int fd,
			 struct agent_client_read_info *info, struct agent_client_err *err)
{
	return agent_client_read(c, path, o, fd_sink, &fd, info, err);
}

/* Where an upload's bytes come from: returns bytes, 0 at the end, -errno. */
typedef agent_client_source_fn source_fn;

struct buf_src {
	const uint8_t *p;
	size_t n, off;
};

static ssize_t buf_source(void *arg, void *buf, size_t n)
{
	struct buf_src *s = arg;
	size_t k = s->n - s->off < n ? s->n - s->off : n;

	memcpy(buf, s->p + s->off, k);
	s->off += k;
	return (ssize_t)k;
}

/* Whatever one read() gives: a slow pipe must not hold back bytes it
 * already produced until a whole chunk is full (the agent's upload idle
 * timeout is per message). */
static ssize_t fd_source(void *arg, void *buf, size_t n)
{
	int fd = *(int *)arg;

	return fd_io_read_some(fd, buf, n, &(struct fd_io_waiter){ local_wait, NULL });
}

/*
 * The agent answered in the middle of an upload (it never does unless it
 * failed): read that answer and turn it into the error.
 */
static int upload_answer(const struct agent_client *c, struct agent_client_conn *k, int fallback,
			 struct agent_client_err *err)
{
	struct agent_client_err saved = *err;
	const char *type;
	uint64_t len;
	json_t *h;
	int r;

	/* A send that timed out means a stalled agent: no answer is coming. */
	if (fallback == -ETIMEDOUT)
		return fallback;
	r = agent_client_next_reply(c, k, &h, &len, &type, "the end of the upload", err);

	if (r == -EREMOTEIO)
		return r;
	if (r == 0) {
		r = agent_client_unexpected(k, type, "nothing before 'end'", err);
		json_decref(h);
		return r;
	}
	if (fallback) {
		*err = saved;
		return fallback;
	}
	return r;
}

static bool readable_now(struct agent_client_conn *k)
{
	struct pollfd p = { .fd = k->fd, .events = POLLIN };

	return k->len > 0 || k->eof || poll(&p, 1, 0) > 0;
}

/* write / tar_upload: the request, data chunks from src, end; *reply gets the ok line. */
static int upload(const struct agent_client *c, struct agent_client_req *rq, source_fn src,
		  void *arg, json_t **reply, struct agent_client_err *err)
{
	struct agent_line line;
	struct agent_client_conn k;
	const char *type;
	uint64_t len;
	uint8_t *chunk = NULL;
	int r;

	*reply = NULL;
	r = agent_client_open_listing(c, rq, &k, err);
	if (r < 0)
		return r;
	chunk = malloc(AGENT_CHUNK_MAX);
	if (!chunk) {
		r = agent_client_efail(err, AGENT_FAIL_LOCAL, AGENT_E_BUSY, ENOMEM,
				       "%s: out of memory", k.what);
		goto out;
	}
	for (;;) {
		ssize_t n = src(arg, chunk, AGENT_CHUNK_MAX);

		if (n < 0) {
			/* Closing mid-upload stops the agent; what it wrote stays. */
			r = agent_client_efail(err, AGENT_FAIL_LOCAL, AGENT_E_IO_ERROR, (int)-n,
					       "%s: reading the local data: %s", k.what,
					       strerror((int)-n));
			goto out;
		}
		if (n == 0)
			break;
		if ((size_t)n > AGENT_CHUNK_MAX) {
			/* more than the buffer holds: never send what lies past it */
			r = agent_client_efail(err, AGENT_FAIL_LOCAL, AGENT_E_IO_ERROR, EINVAL,
					       "%s: the data source returned %zd bytes for a %d-byte "
					       "buffer",
					       k.what, n, AGENT_CHUNK_MAX);
			goto out;
		}
		/* The agent refuses at open (not_found, ...) and closes: stop
		 * sending into a dead connection and report its reason. */
		if (readable_now(&k)) {
			r = upload_answer(c, &k, 0, err);
			goto out;
		}
		r = agent_line_chunk(&line, AGENT_DATA, -1, (uint64_t)n);
		if (r < 0) {
			r = agent_client_efail(err, AGENT_FAIL_LOCAL, AGENT_E_BUSY, -r,
					       "%s: out of memory", k.what);
			goto out;
		}
		r = agent_client_conn_send(&k, line.data, line.len, chunk, (size_t)n,
					   mono_deadline_ms(c->timeout_ms), NULL, err);
		agent_line_free(&line);
		if (r < 0) {
			r = upload_answer(c, &k, r, err);
			goto out;
		}
	}
	r = agent_line_end(&line, NULL, 0);
	if (r < 0) {
		r = agent_client_efail(err, AGENT_FAIL_LOCAL, AGENT_E_BUSY, -r, "%s: out of memory",
				       k.what);
		goto out;
	}
	r = agent_client_conn_send(&k, line.data, line.len, NULL, 0,
				   mono_deadline_ms(c->timeout_ms), NULL, err);
	agent_line_free(&line);
	if (r < 0) {
		r = upload_answer(c, &k, r, err);
		goto out;
	}
	r = agent_client_next_reply(c, &k, reply, &len, &type, "replying to 'end'", err);
	if (r == 0 && strcmp(type, "ok") != 0) {
		r = agent_client_unexpected(&k, type, "ok", err);
		json_decref(*reply);
		*reply = NULL;
	}
out:
	free(chunk);
	agent_client_conn_close(&k);
	return r;
}

static int write_by(const struct agent_client *c, const char *path,
		    const struct agent_client_write_opts *o, source_fn src, void *arg,
		    uint64_t *bytes, struct agent_client_err *err)
{
	static const struct agent_client_write_opts defaults;
	struct agent_client_conn k = agent_client_msg_ctx("write");
	struct agent_client_req rq;
	uint64_t b = 0;
	json_t *h;
	int r;

	if (!o)
		o = &defaults;
	agent_client_req_init(&rq, "write");
	agent_client_req_str(&rq, "path", path);
	if (o->no_create)
		agent_client_req_set(&rq, "create", json_false());
	if (o->exclusive)
		agent_client_req_true(&rq, "exclusive");
	if (o->append)
		agent_client_req_true(&rq, "append");
	if (o->has_mode)
		agent_client_req_int(&rq, "mode", o->mode);
	if (o->parents)
		agent_client_req_true(&rq, "parents");
	agent_client_req_user(&rq, o->user);
	r = upload(c, &rq, src, arg, &h, err);
	if (r < 0)
		return r;
	r = agent_client_r_u64(&k, h, "bytes", &b, err);
	json_decref(h);
	if (bytes)
		*bytes = b;
	return r;
}

int agent_client_write(const struct agent_client *c, const char *path,
		       const struct agent_client_write_opts *o, const void *data, size_t n,
		       uint64_t *bytes, struct agent_client_err *err)
{
	struct buf_src s = { .p = data, .n = n };

	ERR_INIT(err);
	return write_by(c, path, o, buf_source, &s, bytes, err);
}

int agent_client_write_fd(const struct agent_client *c, const char *path,
			  const struct agent_client_write_opts *o, int fd, uint64_t *bytes,
			  struct agent_client_err *err)
{
	ERR_INIT(err);
	return write_by(c, path, o, fd_source, &fd, bytes, err);
}

static const char *const kind_names[] = {
	[AGENT_KIND_FILE] = "file",       [AGENT_KIND_DIR] = "dir",
	[AGENT_KIND_SYMLINK] = "symlink", [AGENT_KIND_FIFO] = "fifo",
	[AGENT_KIND_SOCKET] = "socket",   [AGENT_KIND_CHAR] = "char",
	[AGENT_KIND_BLOCK] = "block",     [AGENT_KIND_UNKNOWN] = "unknown",
};

const char *agent_client_kind_name(enum agent_client_kind k)
{
	return (unsigned)k <= AGENT_KIND_UNKNOWN ? kind_names[k] : "unknown";
}

static enum agent_client_kind kind_of(const char *s)
{
	for (int i = 0; i < AGENT_KIND_UNKNOWN; i++)
		if (strcmp(kind_names[i], s) == 0)
			return (enum agent_client_kind)i;
	return AGENT_KIND_UNKNOWN;
}

/* A stat or entry line; strings point into h. */
static int parse_stat(struct agent_client_conn *k, json_t *h, bool entry,
		      struct agent_client_stat *st, struct agent_client_err *err)
{
	const char *kind;
	json_t *lossy = json_object_get(h, "lossy");
	int r;

	memset(st, 0, sizeof(*st));
	if ((r = agent_client_r_str(k, h, "path", &st->path, err)) ||
	    (r = agent_client_r_str(k, h, "kind", &kind, err)) ||
	    (r = agent_client_r_u64(k, h, "size", &st->size, err)) ||
	    (r = agent_client_r_u32(k, h, "mode", 07777, &st->mode, err)) ||
	    (r = agent_client_r_u32(k, h, "uid", UINT32_MAX, &st->uid, err)) ||
	    (r = agent_client_r_u32(k, h, "gid", UINT32_MAX, &st->gid, err)) ||
	    (r = agent_client_r_u64(k, h, "nlink", &st->nlink, err)) ||
	    (r = agent_client_r_sint(k, h, "mtime_ns", &st->mtime_ns, err)))
		return r;
	if (entry && (r = agent_client_r_u32(k, h, "depth", AGENT_LIST_DEPTH_MAX, &st->depth, err)))
		return r;
	if (json_object_get(h, "target") &&
	    (r = agent_client_r_str(k, h, "target", &st->target, err)))
		return r;
	if (lossy && (r = agent_client_r_bool(k, h, "lossy", &st->lossy, err)))
		return r;
	st->kind = kind_of(kind);
	return 0;
}

void agent_client_stat_free(struct agent_client_stat *st)
{
	free((char *)st->path);
	free((char *)st->target);
	st->path = st->target = NULL;
}

int agent_client_stat(const struct agent_client *c, const char *path, bool follow,
		      enum agent_user user, struct agent_client_stat *st,
		      struct agent_client_err *err)
{
	struct agent_client_conn k = agent_client_msg_ctx("stat");
	struct agent_client_stat tmp;
	struct agent_client_req rq;
	json_t *h;
	int r;

	ERR_INIT(err);
	memset(st, 0, sizeof(*st));
	agent_client_req_init(&rq, "stat");
	agent_client_req_str(&rq, "path", path);
	if (!follow)
		agent_client_req_set(&rq, "follow", json_false());
	agent_client_req_user(&rq, user);
	r = agent_client_call_now(c, &rq, "stat", &h, err);
	if (r < 0)
		return r;
	r = parse_stat(&k, h, false, &tmp, err);
	if (r == 0) {
		*st = tmp;
		st->path = strdup(tmp.path);
		st->target = tmp.target ? strdup(tmp.target) : NULL;
		if (!st->path || (tmp.target && !st->target)) {
			agent_client_stat_free(st);
			r = agent_client_efail(err, AGENT_FAIL_LOCAL, AGENT_E_BUSY, ENOMEM,
					       "stat: out of memory");
		}
	}
	json_decref(h);
	return r;
}

int agent_client_exists(const struct agent_client *c, const char *path, bool follow,
			enum agent_user user, bool *exists, enum agent_client_kind *kind,
			struct agent_client_err *err)
{
	struct agent_client_conn k = agent_client_msg_ctx("exists");
	struct agent_client_req rq;
	const char *ks = NULL;
	json_t *h;
	bool e = false;
	int r;

	ERR_INIT(err);
	agent_client_req_init(&rq, "exists");
	agent_client_req_str(&rq, "path", path);
	if (!follow)
		agent_client_req_set(&rq, "follow", json_false());
	agent_client_req_user(&rq, user);
	r = agent_client_call_now(c, &rq, "exists", &h, err);
	if (r < 0)
		return r;
	r = agent_client_r_bool(&k, h, "exists", &e, err);
	if (r == 0 && e)
		r = agent_client_r_str(&k, h, "kind", &ks, err);
	if (exists)
		*exists = r == 0 && e;
	if (kind)
		*kind = ks ? kind_of(ks) : AGENT_KIND_UNKNOWN;
	json_decref(h);
	return r;
}

int agent_client_list_dir(const struct agent_client *c, const char *path,
			  const struct agent_client_list_opts *o,
			  int (*fn)(void *arg, const struct agent_client_stat *e), void *arg,
			  struct agent_client_list_end *end, struct agent_client_err *err)
{
	static const struct agent_client_list_opts defaults;
	struct agent_client_list_end local;
	uint64_t seen = 0;
	struct agent_client_req rq;
	struct agent_client_conn k;
	int r;

	ERR_INIT(err);
	if (!o)
		o = &defaults;
	if (!end)
		end = &local;
	memset(end, 0, sizeof(*end));
	agent_client_req_init(&rq, "list_dir");
	agent_client_req_str(&rq, "path", path);
	if (o->depth)
		agent_client_req_int(&rq, "depth", o->depth);
	if (o->limit)
		agent_client_req_int(&rq, "limit", o->limit);
	agent_client_req_user(&rq, o->user);
	r = agent_client_open_listing(c, &rq, &k, err);
	if (r < 0)
		return r;
	for (;;) {
		struct agent_client_stat e;
		const char *type;
		uint64_t len;
		json_t *h;

		r = agent_client_next_reply(c, &k, &h, &len, &type, "the end of the listing", err);
		if (r < 0)
			break;
		if (strcmp(type, "end") == 0) {
			if ((r = agent_client_r_u64(&k, h, "count", &end->count, err)) == 0 &&
			    (r = agent_client_r_bool(&k, h, "truncated", &end->truncated, err)) ==
				    0)
				r = agent_client_r_u64(&k, h, "skipped", &end->skipped, err);
			if (r == 0 && end->count != seen)
				r = AGENT_CLIENT_PROTO_FAIL(
					err,
					"list_dir: the agent counted %llu entries but sent %llu",
					(unsigned long long)end->count, (unsigned long long)seen);
			json_decref(h);
			break;
		}
		if (strcmp(type, "entry") != 0)
			r = agent_client_unexpected(&k, type, "entry or end", err);
		else
			r = parse_stat(&k, h, true, &e, err);
		if (r == 0) {
			seen++;
			r = fn(arg, &e);
			if (r < 0)
				agent_client_efail(err, AGENT_FAIL_LOCAL, AGENT_E_IO_ERROR, -r,
						   "list_dir: stopped by the caller: %s",
						   strerror(-r));
		}
		json_decref(h);
		if (r < 0)
			break;
	}
	agent_client_conn_close(&k);
	return r;
}

int agent_client_mkdir(const struct agent_client *c, const char *path, bool parents, int mode,
		       enum agent_user user, struct agent_client_err *err)
{
	struct agent_client_req rq;

	ERR_INIT(err);
	agent_client_req_init(&rq, "mkdir");
	agent_client_req_str(&rq, "path", path);
	if (parents)
		agent_client_req_true(&rq, "parents");
	if (mode >= 0)
		agent_client_req_int(&rq, "mode", mode);
	agent_client_req_user(&rq, user);
	return agent_client_call_ok(c, &rq, err);
}

int agent_client_remove(const struct agent_client *c, const char *path, bool recursive,
			enum agent_user user, struct agent_client_err *err)
{
	struct agent_client_req rq;

	ERR_INIT(err);
	agent_client_req_init(&rq, "remove");
	agent_client_req_str(&rq, "path", path);
	if (recursive)
		agent_client_req_true(&rq, "recursive");
	agent_client_req_user(&rq, user);
	return agent_client_call_ok(c, &rq, err);
}

int agent_client_rename(const struct agent_client *c, const char *from, const char *to,
			bool overwrite, enum agent_user user, struct agent_client_err *err)
{
	struct agent_client_req rq;

	ERR_INIT(err);
	agent_client_req_init(&rq, "rename");
	agent_client_req_str(&rq, "from", from);
	agent_client_req_str(&rq, "to", to);
	if (overwrite)
		agent_client_req_true(&rq, "overwrite");
	agent_client_req_user(&rq, user);
	return agent_client_call_ok(c, &rq, err);
}

static int tar_upload_by(const struct agent_client *c, const char *path, enum agent_user user,
			 source_fn src, void *arg, struct agent_client_tar_stats *stats,
			 struct agent_client_err *err)
{
	struct agent_client_conn k = agent_client_msg_ctx("tar_upload");
	struct agent_client_tar_stats local;
	struct agent_client_req rq;
	json_t *h;
	int r;

	ERR_INIT(err);
	if (!stats)
		stats = &local;
	memset(stats, 0, sizeof(*stats));
	agent_client_req_init(&rq, "tar_upload");
	agent_client_req_str(&rq, "path", path);
	agent_client_req_user(&rq, user);
	r = upload(c, &rq, src, arg, &h, err);
	if (r < 0)
		return r;
	if (!(r = agent_client_r_u64(&k, h, "files", &stats->files, err)) &&
	    !(r = agent_client_r_u64(&k, h, "dirs", &stats->dirs, err)) &&
	    !(r = agent_client_r_u64(&k, h, "symlinks", &stats->symlinks, err)) &&
	    !(r = agent_client_r_u64(&k, h, "hardlinks", &stats->hardlinks, err)) &&
	    !(r = agent_client_r_u64(&k, h, "skipped", &stats->skipped, err)))
		r = agent_client_r_u64(&k, h, "bytes", &stats->bytes, err);
	json_decref(h);
	return r;
}

int agent_client_tar_upload(const struct agent_client *c, const char *path, enum agent_user user,
			    int fd, struct agent_client_tar_stats *stats,
			    struct agent_client_err *err)
{
	return tar_upload_by(c, path, user, fd_source, &fd, stats, err);
}

int agent_client_tar_upload_cb(const struct agent_client *c, const char *path, enum agent_user user,
			       agent_client_source_fn src, void *arg,
			       struct agent_client_tar_stats *stats, struct agent_client_err *err)
{
	return tar_upload_by(c, path, user, src, arg, stats, err);
}

int agent_client_tar_download_cb(const struct agent_client *c, const char *path,
				 enum agent_user user, agent_client_data_fn fn, void *arg,
				 struct agent_client_tar_stats *stats, struct agent_client_err *err)
{
	struct agent_client_tar_stats local;
	struct agent_client_req rq;
	struct agent_client_conn k;
	uint64_t got = 0;
	json_t *end = NULL;
	int r;

	ERR_INIT(err);
	if (!stats)
		stats = &local;
	memset(stats, 0, sizeof(*stats));
	agent_client_req_init(&rq, "tar_download");
	agent_client_req_str(&rq, "path", path);
	agent_client_req_user(&rq, user);
	r = agent_client_open_listing(c, &rq, &k, err);
	if (r < 0)
		return r;
	r = download(c, &k, fn, arg, UINT64_MAX, &got, &end, err);
	if (r == 0 && !(r = agent_client_r_u64(&k, end, "bytes", &stats->bytes, err)) &&
	    !(r = agent_client_r_u64(&k, end, "files", &stats->files, err)) &&
	    !(r = agent_client_r_u64(&k, end, "dirs", &stats->dirs, err)) &&
	    !(r = agent_client_r_u64(&k, end, "symlinks", &stats->symlinks, err)) &&
	    !(r = agent_client_r_u64(&k, end, "skipped", &stats->skipped, err)) &&
	    stats->bytes != got)
		r = AGENT_CLIENT_PROTO_FAIL(err,
					    "tar_download: the agent reported %llu bytes but sent %llu",
					    (unsigned long long)stats->bytes,
					    (unsigned long long)got);
	json_decref(end);
	agent_client_conn_close(&k);
	return r;
}

int agent_client_tar_download(const struct agent_client *c, const char *path, enum agent_user user,
			      int fd, struct agent_client_tar_stats *stats,
			      struct agent_client_err *err)
{
	return agent_client_tar_download_cb(c, path, user, fd_sink, &fd, stats, err);
}
