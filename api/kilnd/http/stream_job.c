/* stream_job: see stream_job.h. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "api/kilnd/http/stream_job.h"

/* How often a waiting response looks for a client that went away. */
#define CLIENT_CHECK_MS 1000

int stream_job_init(struct stream_job *sj, size_t qbytes, void (*produce)(struct stream_job *),
		    void (*release)(struct stream_job *))
{
	atomic_init(&sj->refs, 1);
	sj->produce = produce;
	sj->release = release;
	sj->conn_fd = -1;
	return byte_queue_init(&sj->q, qbytes) ? -ENOMEM : 0;
}

void stream_job_put(struct stream_job *sj)
{
	if (atomic_fetch_sub(&sj->refs, 1) != 1)
		return;
	byte_queue_destroy(&sj->q);
	sj->release(sj);
}

void stream_job_close(struct stream_job *sj, int r)
{
	byte_queue_close(&sj->q, r < 0 ? (r == -ECANCELED ? r : -EIO) : 0);
}

static void *run(void *arg)
{
	struct stream_job *sj = arg;

	sj->produce(sj);
	stream_job_put(sj);
	return NULL;
}

static ssize_t reader(void *cls, char *buf, size_t max)
{
	struct stream_job *sj = cls;

	for (;;) {
		int err;
		ssize_t n = byte_queue_pop(&sj->q, buf, max, CLIENT_CHECK_MS, &err);

		if (n > 0)
			return n;
		if (n < 0 && err && err != -ECANCELED && sj->req) {
			snprintf(sj->req->cut_msg, sizeof(sj->req->cut_msg), "%s failed: %.200s",
				 sj->what, sj->err.code != API_OK ? sj->err.msg : strerror(-err));
			sj->req->cut = sj->req->cut_msg;
		}
		if (n < 0)
			return err ? HTTP_READER_ERROR : HTTP_READER_END;
		if (http_client_gone(sj->conn_fd))
			return HTTP_READER_ERROR;
	}
}

static void reader_free(void *cls)
{
	struct stream_job *sj = cls;

	byte_queue_abort(&sj->q);
	stream_job_put(sj);
}

void stream_job_respond(struct http_req *r, struct stream_job *sj, const char *content_type,
			bool empty_ok, const char *what)
{
	pthread_attr_t attr;
	struct api_err e;
	pthread_t th;
	int err;

	sj->conn_fd = http_conn_fd(r);
	sj->what = what;
	sj->req = r; /* while the response streams: send_stream runs the reader */
	atomic_store(&sj->refs, 2);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&th, &attr, run, sj);
	pthread_attr_destroy(&attr);
	if (err) {
		api_err_set(&e, API_E_INTERNAL, "%s: cannot start a thread: %s", what,
			    strerror(err));
		atomic_store(&sj->refs, 1);
		stream_job_put(sj);
		http_error(r, &e);
		return;
	}
	if (!byte_queue_wait_first(&sj->q, &err) && (err || !empty_ok)) {
		if (sj->err.code == API_OK)
			api_err_set(&sj->err, API_E_INTERNAL, "%s: ended without an answer", what);
		http_error(r, &sj->err);
		stream_job_put(sj);
		return;
	}
	http_stream(r, content_type, reader, sj, reader_free);
}
