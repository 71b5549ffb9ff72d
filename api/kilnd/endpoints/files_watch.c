/*
 * GET /v1/sandboxes/{id}/files/watch (docs/api.md, "Watching files"): a
 * guest directory's changes as NDJSON events, from an agent `watch`.
 *
 * Like a process's output stream, no producer thread: the response's
 * reader pulls the agent's events itself, one at a time, in the
 * connection's own thread, so kilnd holds one line per watch whatever the
 * client does. A client that does not read stops the reader; the agent
 * then queues a bounded number of events and reports the rest as one
 * `overflow` event. A client that leaves closes the agent's watch.
 *
 * The request holds its sandbox reference for the stream's life: a watch
 * is activity, so the sandbox is not hibernated for idleness under it.
 * When the sandbox stops or is hibernated anyway, its VMM and with it the
 * agent's connection end: the stream's last line is an `end` event with
 * reason "sandbox_stopped" and the state the sandbox is in.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/core/agent_error.h"
#include "api/kilnd/bodies/exec_render.h"
#include "api/kilnd/bodies/watch_render.h"
#include "api/kilnd/endpoints/handlers.h"
#include "api/kilnd/http/line_feed.h"
#include "api/kilnd/registry/sandbox.h"

/* How often a reader waiting for a quiet directory looks for a client
 * that went away (and for kilnd shutting down). */
#define CLIENT_CHECK_MS 1000

struct watch_job {
	struct kilnd *d;
	struct sandbox *sb;
	kiln_watch *w;
	struct line_feed lf; /* the event being sent */
	bool ended;
	int conn_fd;
};

/* The sandbox's state name now, into buf, for the end event. */
static const char *state_now(struct sandbox *sb, char *buf, size_t cap)
{
	json_t *v = sandbox_view(sb);
	const char *s = v ? json_string_value(json_object_get(v, "state")) : NULL;

	snprintf(buf, cap, "%s", s ? s : "unknown");
	json_decref(v);
	return buf;
}

/* The line after the agent's connection failed: an end when the sandbox
 * left `running` (stop, hibernation, crash), else the error. */
static char *lost_line(struct watch_job *j, size_t *len)
{
	char state[32];
	struct api_err e;

	state_now(j->sb, state, sizeof(state));
	if (kiln_watch_errkind(j->w) == KILN_AGENT_FAIL_UNREACHABLE &&
	    strcmp(state, "running") != 0)
		return watch_line_end("sandbox_stopped", state, len);
	api_err_from_agent_fail(&e, kiln_watch_errkind(j->w), kiln_watch_errcode(j->w),
				kiln_watch_errmsg(j->w), "watch");
	return exec_event_error(&e, len);
}

/* The next line into j->lf.line; false when the stream must break off. */
static bool next_line(struct watch_job *j)
{
	struct kiln_fs_event ev = { .size = sizeof(ev) };
	const char *reason;
	int r;

	if (j->ended)
		return false;
	for (;;) {
		r = kiln_watch_next(j->w, CLIENT_CHECK_MS, &ev, &reason);
		if (r == -ETIMEDOUT) {
			if (http_client_gone(j->conn_fd))
				return false;
			if (atomic_load(&j->d->shutting_down)) {
				j->ended = true;
				j->lf.line = watch_line_end("kilnd_shutdown", NULL, &j->lf.len);
				return j->lf.line != NULL;
			}
			continue;
		}
		j->ended = r != 0;
		if (r == 1)
			j->lf.line = watch_line_end(reason, NULL, &j->lf.len);
		else if (r < 0)
			j->lf.line = lost_line(j, &j->lf.len);
		else
			j->lf.line = watch_line_event(&ev, &j->lf.len);
		return j->lf.line != NULL;
	}
}

static bool more(void *arg)
{
	return next_line(arg);
}

static ssize_t watch_reader(void *cls, char *buf, size_t max)
{
	struct watch_job *j = cls;
	size_t n = line_feed_read(&j->lf, buf, max, more, j);

	if (n)
		return (ssize_t)n;
	return j->ended ? HTTP_READER_END : HTTP_READER_ERROR;
}

static void job_free(void *cls)
{
	struct watch_job *j = cls;

	/* The agent sees the close and ends its watch. */
	kiln_watch_close(j->w);
	sandbox_put(j->sb);
	line_feed_free(&j->lf);
	free(j);
}

void handle_file_watch(struct http_req *r)
{
	struct kiln_watch_opts o;
	struct watch_job *j;
	kiln_agent *a;
	const char *path;
	struct api_err e;
	uint32_t watches = 0;
	char what[32 + AGENT_PATH_MAX];

	if (query_file_watch(r->kv, r->nkv, &path, &o, &e)) {
		http_error(r, &e);
		return;
	}
	if (!(j = calloc(1, sizeof(*j)))) {
		api_err_set(&e, API_E_INTERNAL, "watch: out of memory");
		http_error(r, &e);
		return;
	}
	j->d = r->d;
	if (http_guest_target(r, &j->sb, &a, &e)) {
		free(j);
		http_error(r, &e);
		return;
	}
	/* The client's timeout bounds the connect and the agent's answer;
	 * the events themselves have no deadline (CLIENT_CHECK_MS slices).
	 * The watch keeps its own connection: the client is done after it. */
	if (kiln_agent_watch_with(a, path, &o, &j->w, &watches)) {
		snprintf(what, sizeof(what), "watch '%s'", path);
		api_err_from_agent(&e, a, what);
		kiln_agent_free(a);
		job_free(j);
		http_error(r, &e);
		return;
	}
	kiln_agent_free(a);
	j->conn_fd = http_conn_fd(r);
	j->lf.line = watch_line_started(path, (o.flags & KILN_AGENT_RECURSIVE) != 0, watches,
					&j->lf.len);
	if (!j->lf.line) {
		job_free(j);
		api_err_set(&e, API_E_INTERNAL, "watch: out of memory");
		http_error(r, &e);
		return;
	}
	http_stream(r, "application/x-ndjson", watch_reader, j, job_free);
}
