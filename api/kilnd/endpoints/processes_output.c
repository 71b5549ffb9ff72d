/*
 * GET /v1/sandboxes/{id}/processes/{proc}/output (docs/api.md): a
 * background process's output as NDJSON events, from an agent `attach`.
 *
 * No producer thread: the response's reader pulls the agent stream
 * itself, one event at a time, in the connection's own thread. The
 * agent keeps the process's output in its ring whatever the reader does,
 * so a slow client never slows the process (it gets a gap instead), and
 * a client that leaves only closes the attach: the process runs on.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/bodies/exec_render.h"
#include "api/kilnd/endpoints/processes.h"
#include "api/kilnd/endpoints/handlers.h"
#include "api/kilnd/http/line_feed.h"
#include "api/kilnd/bodies/proc_render.h"
#include "api/kilnd/bodies/proc_spec.h"

/* How often a reader waiting for a silent process looks for a client
 * that went away (and for kilnd shutting down). */
#define CLIENT_CHECK_MS 1000

struct out_job {
	struct kilnd *d;
	struct agent_client_stream *s;
	struct proc_out_enc enc;
	struct line_feed lf; /* the event being sent */
	bool ended;
	int conn_fd;
};

/* The next event line into j->lf.line; false at the end of the stream. */
static bool next_line(struct out_job *j)
{
	struct agent_client_event ev;
	struct agent_client_err ae;
	struct api_err e;
	int r;

	while (!j->ended) {
		r = agent_client_stream_next(j->s, CLIENT_CHECK_MS, &ev, &ae);
		if (r == 1) {
			j->ended = true;
			break;
		}
		if (r == -ETIMEDOUT) {
			if (http_client_gone(j->conn_fd) || atomic_load(&j->d->shutting_down))
				return false;
			continue;
		}
		if (r < 0) {
			/* The 200 is out: the failure is the last event. */
			api_err_from_agent(&e, &ae, "output");
			j->lf.line = exec_event_error(&e, &j->lf.len);
			j->ended = true;
			return j->lf.line != NULL;
		}
		switch (ev.kind) {
		case AGENT_EVENT_STDOUT:
		case AGENT_EVENT_STDERR:
			if (proc_event_output(&j->enc,
					      ev.kind == AGENT_EVENT_STDERR ? AGENT_STDERR
									    : AGENT_STDOUT,
					      ev.seq, ev.data, ev.len, &j->lf.line, &j->lf.len))
				return false;
			break;
		case AGENT_EVENT_GAP:
			j->lf.line = proc_event_gap(&j->enc, ev.seq, ev.gap_bytes, &j->lf.len);
			if (!j->lf.line)
				return false;
			break;
		case AGENT_EVENT_EXIT:
			j->lf.line = proc_event_exit(&j->enc, &ev.exit, &j->lf.len);
			if (!j->lf.line)
				return false;
			break;
		}
		if (j->lf.line)
			return true;
	}
	return false;
}

static bool more(void *arg)
{
	return next_line(arg);
}

static ssize_t out_reader(void *cls, char *buf, size_t max)
{
	struct out_job *j = cls;
	size_t n = line_feed_read(&j->lf, buf, max, more, j);

	if (n)
		return (ssize_t)n;
	return j->ended ? HTTP_READER_END : HTTP_READER_ERROR;
}

static void out_free(void *cls)
{
	struct out_job *j = cls;

	/* Closing the attach detaches; the process keeps running. */
	agent_client_stream_close(j->s);
	line_feed_free(&j->lf);
	free(j);
}

void handle_proc_output(struct http_req *r)
{
	struct agent_client_attached info;
	struct agent_client_err ae;
	struct agent_client c;
	struct proc_from from;
	struct api_err e;
	struct out_job *j;
	uint32_t id;
	bool base64;

	if (proc_query_output(r->kv, r->nkv, &from, &base64, &e) || proc_target(r, &c, &id, &e)) {
		http_error(r, &e);
		return;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		api_err_set(&e, API_E_INTERNAL, "output: out of memory");
		http_error(r, &e);
		return;
	}
	j->d = r->d;
	/* The wait for output has no deadline (CLIENT_CHECK_MS slices);
	 * the context's timeout bounds the connect and the attach reply. */
	if (agent_client_attach(&c, id, from.from, from.seq, &j->s, &info, &ae)) {
		proc_err_from_agent(&e, &ae, "output");
		free(j);
		http_error(r, &e);
		return;
	}
	proc_out_enc_init(&j->enc, base64);
	j->conn_fd = http_conn_fd(r);
	j->lf.line = proc_event_attached(&info, &j->lf.len);
	if (!j->lf.line) {
		out_free(j);
		api_err_set(&e, API_E_INTERNAL, "output: out of memory");
		http_error(r, &e);
		return;
	}
	http_stream(r, "application/x-ndjson", out_reader, j, out_free);
}
