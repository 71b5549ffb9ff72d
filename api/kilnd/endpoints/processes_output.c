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
	kiln_proc *p;
	struct proc_out_enc enc;
	struct line_feed lf; /* the event being sent */
	bool ended;
	int conn_fd;
};

/* A stream's failure as the API's error (its not_found: the process). */
static void proc_err_fail(struct api_err *e, const kiln_proc *p)
{
	proc_err_from_agent_fail(e, kiln_proc_errkind(p), kiln_proc_errcode(p), kiln_proc_errmsg(p),
				 "output");
}

/* The lines of one event into j->lf.line (NULL when the encoder holds its
 * bytes back): a gap first when bytes were lost before it (libkiln folds
 * the agent's gap events into the next event, which starts where the
 * lost bytes end). -1 when out of memory. */
static int next_lines(struct out_job *j, const struct kiln_proc_event *ev)
{
	char *gap = NULL, *line = NULL;
	size_t gap_len = 0, len = 0;

	/* A guest's counts: a gap cannot start before the stream did. */
	if (ev->lost &&
	    !(gap = proc_event_gap(&j->enc, ev->lost <= ev->seq ? ev->seq - ev->lost : 0, ev->lost,
				   &gap_len)))
		return -1;
	if (ev->exited ? !(line = proc_event_exit(&j->enc, &ev->exit, &len))
		       : proc_event_output(&j->enc,
					   ev->stream == KILN_STDERR ? AGENT_STDERR : AGENT_STDOUT,
					   ev->seq, ev->data, ev->len, &line, &len) < 0) {
		free(gap);
		return -1;
	}
	if (!gap) {
		j->lf.line = line;
		j->lf.len = line ? len : 0;
		return 0;
	}
	if (line) {
		char *both = realloc(gap, gap_len + len + 1);

		if (!both) {
			free(gap);
			free(line);
			return -1;
		}
		memcpy(both + gap_len, line, len + 1);
		free(line);
		gap = both;
		gap_len += len;
	}
	j->lf.line = gap;
	j->lf.len = gap_len;
	return 0;
}

/* The next event line into j->lf.line; false at the end of the stream. */
static bool next_line(struct out_job *j)
{
	struct kiln_proc_event ev = { .size = sizeof(ev) };
	struct api_err e;
	int r;

	while (!j->ended) {
		r = kiln_proc_next(j->p, CLIENT_CHECK_MS, &ev);
		if (r == -ETIMEDOUT) {
			if (http_client_gone(j->conn_fd) || atomic_load(&j->d->shutting_down))
				return false;
			continue;
		}
		if (r < 0) {
			/* The 200 is out: the failure is the last event. */
			proc_err_fail(&e, j->p);
			j->lf.line = exec_event_error(&e, &j->lf.len);
			j->ended = true;
			return j->lf.line != NULL;
		}
		if (next_lines(j, &ev))
			return false;
		/* The exit is the stream's last event. */
		j->ended = ev.exited;
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
	kiln_proc_close(j->p);
	line_feed_free(&j->lf);
	free(j);
}

void handle_proc_output(struct http_req *r)
{
	struct kiln_proc_info info = { .size = sizeof(info) };
	kiln_agent *a = NULL;
	struct proc_from from;
	struct api_err e;
	struct out_job *j;
	uint32_t id;
	bool base64;

	if (proc_query_output(r->kv, r->nkv, &from, &base64, &e) || proc_target(r, &a, &id, &e)) {
		http_error(r, &e);
		return;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		kiln_agent_free(a);
		api_err_set(&e, API_E_INTERNAL, "output: out of memory");
		http_error(r, &e);
		return;
	}
	j->d = r->d;
	/* The wait for output has no deadline (CLIENT_CHECK_MS slices);
	 * the client's timeout bounds the connect and the attach reply. The
	 * stream keeps its own connection: the client is done after it. */
	if (kiln_agent_attach_at(a, id, from.from, from.seq, &j->p)) {
		proc_err_from_agent(&e, a, "output");
		kiln_agent_free(a);
		free(j);
		http_error(r, &e);
		return;
	}
	kiln_agent_free(a);
	kiln_proc_get_info(j->p, &info);
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
