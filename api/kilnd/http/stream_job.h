/*
 * stream_job: a response body produced by a worker thread (an agent read,
 * an archive, a listing, exec events) into a bounded byte_queue that
 * the HTTP server drains.
 *
 * Contract:
 *  - Embed struct stream_job in the handler's job and give it `produce`
 *    (runs on its own thread, pushes with byte_queue_push and ends with
 *    stream_job_close) and `release` (frees the job around it; the queue is
 *    already destroyed).
 *  - The job is reference counted: the caller's reference from
 *    stream_job_init, the producer's and the response's. Whoever finishes
 *    last releases it, because the producer cannot always be interrupted
 *    while the agent is silent.
 *  - The status is decided by the first byte or the end, whichever comes
 *    first: a producer that fails before any byte answers with its own
 *    error (sj->err), not an empty 200. A failure after bytes went out
 *    ends the stream without its last chunk, so the client sees a broken
 *    transfer, never a short body.
 */
#ifndef KILN_STREAM_JOB_H
#define KILN_STREAM_JOB_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "api/kilnd/core/api_error.h"
#include "api/kilnd/http/byte_queue.h"
#include "api/kilnd/http/http.h"

struct stream_job {
	atomic_int refs;
	struct byte_queue q;
	struct api_err err; /* the producer's failure, when nothing was sent */
	int conn_fd;
	const char *what;     /* for the log: "file read" */
	struct http_req *req; /* the response it feeds: its cut says why it broke */
	void (*produce)(struct stream_job *sj);
	void (*release)(struct stream_job *sj);
};

/* One reference (the caller's) and a queue of qbytes. 0 or -ENOMEM. */
int stream_job_init(struct stream_job *sj, size_t qbytes, void (*produce)(struct stream_job *),
		    void (*release)(struct stream_job *));

/* Drop a reference; the last one destroys the queue and calls release. */
void stream_job_put(struct stream_job *sj);

/* End the stream after an agent call returned r: 0 ends it cleanly,
 * -ECANCELED (the response went away) and any other error end it broken. */
void stream_job_close(struct stream_job *sj, int r);

/*
 * Start the producer and answer the request: its error status when it
 * ended before a byte (an empty body is a 200 when empty_ok and it ended
 * cleanly), else a chunked stream of content_type. Takes over the
 * caller's reference. `what` names the operation in messages.
 */
void stream_job_respond(struct http_req *r, struct stream_job *sj, const char *content_type,
			bool empty_ok, const char *what);

#endif
