/* agent_client: watch, a directory's change stream (agent_client.h). */
#include <stdlib.h>
#include <string.h>

#include "api/agent-client/agent_client_impl.h"

struct agent_client_watch {
	struct agent_client_conn k;
	json_t *cur;  /* the header the last event's strings point into */
	uint64_t seq; /* the next event's */
	bool done;    /* watch_end arrived */
	const char *end_reason;
};

static const char *const end_reasons[] = { "deleted", "moved", "unmounted", "error" };
static const char *const overflow_reasons[] = { "queue", "kernel", "watch_limit" };

/* The static copy of s when it is one of v[0..n), else NULL. */
static const char *known(const char *s, const char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, v[i]) == 0)
			return v[i];
	return NULL;
}

int agent_client_watch(const struct agent_client *c, const char *path,
		       const struct agent_client_watch_opts *o, struct agent_client_watch **out,
		       uint32_t *watches, struct agent_client_err *err)
{
	struct agent_client_watch *w;
	struct agent_client_req rq;
	json_t *h = NULL;
	int64_t dl;
	int r;

	ERR_INIT(err);
	*out = NULL;
	agent_client_req_init(&rq, "watch");
	agent_client_req_str(&rq, "path", path);
	if (o && o->recursive)
		agent_client_req_true(&rq, "recursive");
	if (o && o->max_watches)
		agent_client_req_int(&rq, "max_watches", o->max_watches);
	if (o && o->queue)
		agent_client_req_int(&rq, "queue", o->queue);
	if (o)
		agent_client_req_user(&rq, o->user);
	w = calloc(1, sizeof(*w));
	if (!w) {
		json_decref(rq.o); /* what sending it would have done */
		return agent_client_efail(err, AGENT_FAIL_LOCAL, AGENT_E_BUSY, ENOMEM,
					  "watch: out of memory");
	}
	dl = mono_deadline_ms(c->timeout_ms);
	r = agent_client_conn_call(c, &rq, NULL, 0, "watching", dl, dl, &w->k, &h, err);
	if (r == 0 && watches)
		r = agent_client_r_u32(&w->k, h, "watches", AGENT_WATCH_WATCHES_MAX, watches, err);
	json_decref(h);
	if (r < 0) {
		agent_client_watch_close(w);
		return r;
	}
	*out = w;
	return 0;
}

/* A path field: a non-empty relative path of at most AGENT_PATH_MAX bytes. */
static int r_relpath(struct agent_client_conn *k, json_t *h, const char *key, const char **out,
		     struct agent_client_err *err)
{
	int r = agent_client_r_str(k, h, key, out, err);

	if (r == 0 && (!**out || **out == '/' || strlen(*out) > AGENT_PATH_MAX))
		r = AGENT_CLIENT_PROTO_FAIL(
			err, "watch: '%s' of an event is not a path below the watched directory",
			key);
	return r;
}

/* Fill ev from an fs_event header (w->cur). */
static int parse_event(struct agent_client_watch *w, json_t *h, struct agent_client_fs_event *ev,
		       struct agent_client_err *err)
{
	struct agent_client_conn *k = &w->k;
	const char *kind, *reason;
	int r, kn;

	if ((r = agent_client_r_u64(k, h, "seq", &ev->seq, err)) ||
	    (r = agent_client_r_str(k, h, "event", &kind, err)))
		return r;
	if (ev->seq != w->seq)
		return AGENT_CLIENT_PROTO_FAIL(err, "watch: event %llu arrived where %llu was next",
					       (unsigned long long)ev->seq,
					       (unsigned long long)w->seq);
	if ((kn = agent_fs_kind_parse(kind)) < 0)
		return AGENT_CLIENT_PROTO_FAIL(err, "watch: unknown event '%.40s'", kind);
	ev->kind = (enum agent_fs_kind)kn;
	if (ev->kind == AGENT_FS_OVERFLOW) {
		if ((r = agent_client_r_str(k, h, "reason", &reason, err)) ||
		    (r = agent_client_r_u64(k, h, "dropped", &ev->dropped, err)))
			return r;
		ev->reason = known(reason, overflow_reasons,
				   sizeof(overflow_reasons) / sizeof(*overflow_reasons));
		if (!ev->reason)
			return AGENT_CLIENT_PROTO_FAIL(err,
						       "watch: unknown overflow reason '%.40s'",
						       reason);
	} else {
		if ((r = r_relpath(k, h, "path", &ev->path, err)) ||
		    (r = agent_client_r_bool(k, h, "is_dir", &ev->is_dir, err)))
			return r;
		if (ev->kind == AGENT_FS_RENAME &&
		    (r = r_relpath(k, h, "old_path", &ev->old_path, err)))
			return r;
		if (json_object_get(h, "lossy") &&
		    (r = agent_client_r_bool(k, h, "lossy", &ev->lossy, err)))
			return r;
	}
	w->seq++;
	return 0;
}

int agent_client_watch_next(struct agent_client_watch *w, int timeout_ms,
			    struct agent_client_fs_event *ev, const char **end_reason,
			    struct agent_client_err *err)
{
	struct agent_client_conn *k = &w->k;
	const char *type, *reason;
	uint64_t len, seq;
	json_t *h;
	int r;

	ERR_INIT(err);
	memset(ev, 0, sizeof(*ev));
	json_decref(w->cur);
	w->cur = NULL;
	if (end_reason)
		*end_reason = w->end_reason;
	if (w->done)
		return 1;
	agent_client_conn_wait(k, timeout_ms < 0 ? 0 : timeout_ms > 0 ? timeout_ms : 1);
	r = agent_client_conn_next(k, &h, &len, err);
	if (r == 1)
		return agent_client_closed_early(k, "the watch's end line", err);
	if (r < 0)
		return r;
	if ((r = agent_client_reply_type(k, h, len, &type, err)) < 0) {
		json_decref(h);
		return r;
	}
	if (strcmp(type, "fs_event") == 0) {
		w->cur = h;
		return parse_event(w, h, ev, err);
	}
	if (strcmp(type, "watch_end") == 0) {
		r = agent_client_r_u64(k, h, "seq", &seq, err);
		if (r == 0)
			r = agent_client_r_str(k, h, "reason", &reason, err);
		if (r == 0 && seq != w->seq)
			r = AGENT_CLIENT_PROTO_FAIL(err,
						    "watch: watch_end at %llu, but %llu events came",
						    (unsigned long long)seq,
						    (unsigned long long)w->seq);
		if (r == 0 &&
		    !(w->end_reason = known(reason, end_reasons,
					    sizeof(end_reasons) / sizeof(*end_reasons))))
			r = AGENT_CLIENT_PROTO_FAIL(err, "watch: unknown end reason '%.40s'",
						    reason);
		json_decref(h);
		if (r < 0)
			return r;
		/* The last line: the agent closes after it, nothing to wait for. */
		w->done = true;
		if (end_reason)
			*end_reason = w->end_reason;
		return 1;
	}
	r = agent_client_unexpected(k, type, "fs_event or watch_end", err);
	json_decref(h);
	return r;
}

int agent_client_watch_fd(const struct agent_client_watch *w)
{
	return w->k.fd;
}

bool agent_client_watch_pending(const struct agent_client_watch *w)
{
	return w->k.len > 0 || w->k.eof;
}

void agent_client_watch_close(struct agent_client_watch *w)
{
	if (!w)
		return;
	json_decref(w->cur);
	agent_client_conn_close(&w->k);
	free(w);
}
