/*
 * POST /v1/sandboxes/{id}/exec, buffered and streaming (docs/api.md), and
 * POST .../run, which is the same request with a language and code in
 * place of argv (the agent's `run`) and a structured result: buffered,
 * the response gains "result" and "error"; streaming, a `result` event
 * follows `exit`.
 *
 * Streaming: a producer thread runs the agent exec and turns its output
 * into NDJSON lines in a byte_queue; the HTTP response reads the queue.
 * The response starts with the first event, so an exec that fails before
 * any output still gets a real status, or EXEC_HEAD_MS after the exec was
 * asked for when it has written nothing by then: a client bounds its
 * wait for the head, and must be able to tell a quiet process from a
 * socket that never answers (byte_queue_wait_begin). A failure after the
 * head is the stream's last event. The job is shared by the producer
 * and the response and freed by whichever finishes last: the producer
 * cannot be interrupted while the agent is silent (kiln_agent_exec_stream
 * has no cancel), so it may outlive the response until the process writes
 * or exits. The job has its own kiln_agent (sandbox_agent_new), so the
 * failure it reads is its own.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/core/agent_error.h"
#include "api/kilnd/http/byte_queue.h"
#include "api/kilnd/bodies/exec_render.h"
#include "api/kilnd/bodies/exec_spec.h"
#include "api/kilnd/endpoints/handlers.h"
#include "api/kilnd/registry/sandbox.h"

/* Events in flight between the agent and a slow client. */
#define EXEC_QUEUE_BYTES (256u << 10)
/* The longest a stream's head waits for the first event (docs/api.md,
 * "Streaming"): a start failure (no such program) comes within it. */
#define EXEC_HEAD_MS 1000
/* How often a waiting stream looks for a client that went away. */
#define CLIENT_CHECK_MS 1000

struct exec_job {
	atomic_int refs;
	struct kilnd *d;
	struct sandbox *sb;
	kiln_agent *a;
	struct exec_spec spec;
	json_t *env;
	struct byte_queue q;
	struct exec_stream_enc enc;
	struct api_err err; /* the producer's failure, when nothing was sent */
	double t0;
	int conn_fd;
};

static void job_put(struct exec_job *j)
{
	if (atomic_fetch_sub(&j->refs, 1) != 1)
		return;
	byte_queue_destroy(&j->q);
	exec_spec_free(&j->spec);
	json_decref(j->env);
	kiln_agent_free(j->a);
	sandbox_put(j->sb);
	free(j);
}

static void count_exec(struct kilnd *d, bool ran, double ms)
{
	pthread_mutex_lock(&d->metrics_mu);
	if (ran) {
		d->metrics.execs++;
		histogram_observe(&d->metrics.exec_seconds, ms / 1000.0);
	} else {
		d->metrics.exec_errors++;
	}
	pthread_mutex_unlock(&d->metrics_mu);
}

static int push_line(struct exec_job *j, char *line, size_t len)
{
	int r = line ? byte_queue_push(&j->q, line, len) : 0;

	free(line);
	return r;
}

static int on_output(void *arg, enum kiln_stream st, const void *data, size_t n)
{
	struct exec_job *j = arg;
	char *line;
	size_t len;

	if (exec_event_output(&j->enc, st == KILN_STDERR ? AGENT_STDERR : AGENT_STDOUT, data, n,
			      &line, &len))
		return -ENOMEM;
	/* -ECANCELED when the client is gone: the exec ends, the agent kills the process. */
	return push_line(j, line, len);
}

static void *producer(void *arg)
{
	struct exec_job *j = arg;
	struct exec_result res;
	struct kiln_exec_opts o;
	char *line;
	size_t len;
	double ms;
	int r;

	exec_result_init(&res);
	exec_spec_opts(&j->spec, &o);
	r = j->spec.lang ? kiln_agent_run_stream(j->a, &o, on_output, j, &res.st, &res.run)
			 : kiln_agent_exec_stream(j->a, &o, on_output, j, &res.st);
	ms = mono_ms_f() - j->t0;
	count_exec(j->d, r == 0, ms);
	if (r == 0) {
		for (int s = AGENT_STDOUT; s <= AGENT_STDERR && r == 0; s++)
			if (exec_event_flush(&j->enc, (enum agent_stream)s, &line, &len) == 0)
				r = push_line(j, line, len);
		if (r == 0) {
			line = exec_event_exit(&res.st, ms, &len);
			r = line ? push_line(j, line, len) : -ENOMEM;
		}
		if (r == 0 && j->spec.lang) {
			line = exec_event_result(&res.run, &len);
			r = line ? push_line(j, line, len) : -ENOMEM;
		}
		byte_queue_close(&j->q, r);
	} else if (r != -ECANCELED) {
		api_err_from_agent(&j->err, j->a, j->spec.what);
		/* The 200 went out (with output, or after EXEC_HEAD_MS): the
		 * error is the last event. Otherwise the handler answers with
		 * its status. */
		if (!byte_queue_fail_unbegun(&j->q, -EIO)) {
			line = exec_event_error(&j->err, &len);
			push_line(j, line, len);
			byte_queue_close(&j->q, 0);
		}
	} else {
		byte_queue_close(&j->q, r);
	}
	exec_result_free(&res);
	job_put(j);
	return NULL;
}

static ssize_t reader(void *cls, char *buf, size_t max)
{
	struct exec_job *j = cls;

	for (;;) {
		int err;
		ssize_t n = byte_queue_pop(&j->q, buf, max, CLIENT_CHECK_MS, &err);

		if (n > 0)
			return n;
		if (n < 0)
			return err ? HTTP_READER_ERROR : HTTP_READER_END;
		if (http_client_gone(j->conn_fd))
			return HTTP_READER_ERROR;
	}
}

static void reader_free(void *cls)
{
	struct exec_job *j = cls;

	byte_queue_abort(&j->q);
	job_put(j);
}

static void stream(struct http_req *r, struct exec_job *j)
{
	pthread_attr_t attr;
	struct api_err e;
	pthread_t th;
	int err, rc;

	if (byte_queue_init(&j->q, EXEC_QUEUE_BYTES)) {
		api_err_set(&e, API_E_INTERNAL, "exec: out of memory");
		http_error(r, &e);
		job_put(j);
		return;
	}
	exec_stream_enc_init(&j->enc, j->spec.base64_output);
	j->conn_fd = http_conn_fd(r);
	atomic_store(&j->refs, 2);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&th, &attr, producer, j);
	pthread_attr_destroy(&attr);
	if (rc) {
		api_err_set(&e, API_E_INTERNAL, "exec: cannot start a thread: %s", strerror(rc));
		http_error(r, &e);
		atomic_store(&j->refs, 1);
		job_put(j);
		return;
	}
	if (!byte_queue_wait_begin(&j->q, EXEC_HEAD_MS, &err)) {
		/* Ended before its first event: a start error with its own status. */
		if (j->err.code == API_OK)
			api_err_set(&j->err, API_E_INTERNAL, "exec: ended without a result");
		http_error(r, &j->err);
		job_put(j);
		return;
	}
	http_stream(r, "application/x-ndjson", reader, j, reader_free);
}

static void buffered(struct http_req *r, struct exec_job *j)
{
	struct exec_result res;
	struct kiln_exec_opts o;
	struct api_err e;
	json_t *out;
	double ms;
	int rc;

	exec_result_init(&res);
	exec_spec_opts(&j->spec, &o);
	rc = j->spec.lang ? kiln_agent_run(j->a, &o, &res.st, &res.out, &res.out_len, &res.err,
					   &res.err_len, &res.run)
			  : kiln_agent_exec(j->a, &o, &res.st, &res.out, &res.out_len, &res.err,
					    &res.err_len);
	ms = mono_ms_f() - j->t0;
	count_exec(j->d, rc == 0, ms);
	if (rc) {
		api_err_from_agent(&e, j->a, j->spec.what);
		http_error(r, &e);
	} else if (!(out = exec_render_result(&res, j->spec.base64_output, ms)) ||
		   (j->spec.lang && exec_render_run_result(out, &res.run))) {
		json_decref(out);
		api_err_set(&e, API_E_INTERNAL, "%s: out of memory rendering the result",
			    j->spec.what);
		http_error(r, &e);
	} else {
		http_json(r, 200, out);
	}
	exec_result_free(&res);
	job_put(j);
}

static void serve(struct http_req *r, bool run)
{
	const char *accept = http_header(r, "Accept");
	struct exec_job *j;
	struct api_err e;
	json_t *body = NULL;
	bool want_stream;

	if (query_exec(r->kv, r->nkv, &want_stream, &e) || http_body_json(r, false, &body, &e)) {
		http_error(r, &e);
		return;
	}
	if (accept && strstr(accept, "application/x-ndjson"))
		want_stream = true;
	j = calloc(1, sizeof(*j));
	if (!j) {
		json_decref(body);
		api_err_set(&e, API_E_INTERNAL, "exec: out of memory");
		http_error(r, &e);
		return;
	}
	atomic_init(&j->refs, 1);
	j->d = r->d;
	j->t0 = mono_ms_f();
	j->sb = sandbox_get(r->d, &r->peer, r->rm.id, &e);
	if (!j->sb) {
		json_decref(body);
		free(j);
		http_error(r, &e);
		return;
	}
	if ((run ? run_spec_parse(body, want_stream, &j->spec, &e)
		 : exec_spec_parse(body, want_stream, &j->spec, &e)) ||
	    sandbox_agent_new(j->sb, &j->a, &j->env, &e) || exec_env_merge(&j->spec, j->env, &e)) {
		json_decref(body);
		http_error(r, &e);
		job_put(j);
		return;
	}
	{
		json_t *def = sandbox_image_defaults(
			j->sb); /* an imported image's WorkingDir and User */

		exec_spec_image_defaults(&j->spec, def);
		json_decref(def);
	}
	json_decref(body); /* the spec keeps its own reference */
	if (want_stream)
		stream(r, j);
	else
		buffered(r, j);
}

void handle_exec(struct http_req *r)
{
	serve(r, false);
}

void handle_run(struct http_req *r)
{
	serve(r, true);
}
