/*
 * GET/PUT /v1/sandboxes/{id}/files?path= (docs/api.md): guest files as raw
 * bytes, streamed both ways, never held whole in memory.
 *
 * GET: a producer thread runs the agent read into a byte_queue that the
 * response's reader drains (bounded: a slow client slows the agent). The
 * status is decided by the first byte or the end, whichever comes first,
 * so "not found" is a 404 and not an empty 200.
 * PUT: the body goes through a pipe into kiln_agent_write_fd(), run by
 * a writer thread for the length of the request.
 *
 * Each job has its own kiln_agent (sandbox_agent_new): its failure is
 * the job's, whichever thread ran the request.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/kilnd/core/agent_error.h"
#include "api/kilnd/endpoints/handlers.h"
#include "api/kilnd/registry/sandbox.h"
#include "api/kilnd/http/stream_job.h"
#include "lib/base/fd_io.h"

#define READ_QUEUE_BYTES (256u << 10)

/* ---- GET ---- */

struct read_job {
	struct stream_job sj; /* first: the job is freed through it */
	struct sandbox *sb;
	kiln_agent *a;
	char path[AGENT_PATH_MAX + 1];
	struct kiln_read_opts o;
};

static void read_release(struct stream_job *sj)
{
	struct read_job *j = (struct read_job *)sj;

	kiln_agent_free(j->a);
	sandbox_put(j->sb);
	free(j);
}

static int read_sink(void *arg, const void *data, size_t n)
{
	struct read_job *j = arg;

	return byte_queue_push(&j->sj.q, data, n);
}

static void read_produce(struct stream_job *sj)
{
	struct read_job *j = (struct read_job *)sj;
	int r = kiln_agent_read(j->a, j->path, &j->o, read_sink, j, NULL);

	if (r < 0 && r != -ECANCELED) {
		char what[64 + AGENT_PATH_MAX];

		snprintf(what, sizeof(what), "read '%s'", j->path);
		api_err_from_agent(&j->sj.err, j->a, what);
	}
	stream_job_close(sj, r);
}

void handle_file_get(struct http_req *r)
{
	struct read_job *j = calloc(1, sizeof(*j));
	const char *path;
	struct api_err e;

	if (!j || stream_job_init(&j->sj, READ_QUEUE_BYTES, read_produce, read_release)) {
		free(j);
		api_err_set(&e, API_E_INTERNAL, "file read: out of memory");
		http_error(r, &e);
		return;
	}
	if (query_file_get(r->kv, r->nkv, &path, &j->o, &e) ||
	    http_guest_target(r, &j->sb, &j->a, &e)) {
		byte_queue_destroy(&j->sj.q);
		free(j);
		http_error(r, &e);
		return;
	}
	snprintf(j->path, sizeof(j->path), "%s", path);
	/* An empty file is an empty 200: the stream just ends. */
	stream_job_respond(r, &j->sj, "application/octet-stream", true, "file read");
}

/* ---- PUT ---- */

struct write_job {
	struct sandbox *sb;
	kiln_agent *a;
	char path[AGENT_PATH_MAX + 1];
	struct kiln_write_opts o;
	int pipe_r, pipe_w;
	pthread_t th;
	uint64_t bytes;
	int rc;
};

static void *writer(void *arg)
{
	struct write_job *j = arg;

	j->rc = kiln_agent_write_fd(j->a, j->path, &j->o, j->pipe_r, &j->bytes);
	/* Early end (an error): the handler's next write gets EPIPE and it
	 * drops the rest of the body. */
	close(j->pipe_r);
	return NULL;
}

static int put_data(struct http_req *r, const void *p, size_t n)
{
	struct write_job *j = r->up;

	/* EPIPE: the writer ended; its result says why */
	return fd_io_write_all(j->pipe_w, p, n);
}

/* Close the body's pipe and wait for the agent's answer. */
static void put_finish(struct write_job *j)
{
	close(j->pipe_w);
	pthread_join(j->th, NULL);
	sandbox_put(j->sb);
}

static void put_free(struct write_job *j)
{
	kiln_agent_free(j->a);
	free(j);
}

static void put_end(struct http_req *r, bool too_large)
{
	struct write_job *j = r->up;
	struct api_err e;
	char what[64 + AGENT_PATH_MAX];

	put_finish(j);
	if (too_large) {
		api_err_set(&e, API_E_BODY_TOO_LARGE,
			    "the upload is larger than %llu bytes (--max-upload); '%s' holds what arrived before",
			    (unsigned long long)r->d->cfg.max_upload, j->path);
		http_error(r, &e);
	} else if (j->rc < 0) {
		snprintf(what, sizeof(what), "write '%s'", j->path);
		api_err_from_agent(&e, j->a, what);
		http_error(r, &e);
	} else {
		http_json(r, 200,
			  json_pack("{s:s,s:I}", "path", j->path, "bytes", (json_int_t)j->bytes));
	}
	put_free(j);
	r->up = NULL;
}

static void put_abort(struct http_req *r)
{
	struct write_job *j = r->up;

	if (!j)
		return;
	put_finish(j);
	put_free(j);
	r->up = NULL;
}

static const struct http_upload_ops put_ops = { .data = put_data,
						.end = put_end,
						.cancel = put_abort };

void handle_file_put_begin(struct http_req *r)
{
	struct write_job *j = calloc(1, sizeof(*j));
	const char *path;
	struct api_err e;
	int fds[2], err;

	if (!j) {
		api_err_set(&e, API_E_INTERNAL, "file write: out of memory");
		http_error(r, &e);
		return;
	}
	if (query_file_put(r->kv, r->nkv, &path, &j->o, &e) ||
	    http_guest_target(r, &j->sb, &j->a, &e))
		goto fail;
	snprintf(j->path, sizeof(j->path), "%s", path);
	if (pipe2(fds, O_CLOEXEC) < 0) {
		api_err_set(&e, API_E_INTERNAL, "file write: pipe: %s", strerror(errno));
		goto fail;
	}
	j->pipe_r = fds[0];
	j->pipe_w = fds[1];
	err = pthread_create(&j->th, NULL, writer, j);
	if (err) {
		close(fds[0]);
		close(fds[1]);
		api_err_set(&e, API_E_INTERNAL, "file write: cannot start a thread: %s",
			    strerror(err));
		goto fail;
	}
	http_upload(r, &put_ops, j);
	return;
fail:
	if (j->sb)
		sandbox_put(j->sb);
	put_free(j);
	http_error(r, &e);
}
