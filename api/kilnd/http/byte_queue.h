/*
 * byte_queue: a bounded byte pipe between one producer thread (an agent
 * transfer: exec output, a file download) and one consumer (the HTTP
 * response reader), with backpressure both ways and cancellation.
 *
 * Contract:
 *  - Memory is bounded by the capacity given at init: a producer that
 *    pushes more than the consumer reads waits, which makes the agent
 *    client stop reading the guest (the guest's writer blocks, as with a
 *    pipe). Nothing is dropped.
 *  - The producer ends with byte_queue_close(err): err 0 is a clean end of
 *    stream; a negative err is delivered to the consumer after the bytes
 *    already queued, so it can abort the response instead of ending it.
 *  - The consumer ends with byte_queue_abort() (the client went away): every
 *    pending and later push fails with -ECANCELED, so the producer stops.
 *  - No global state; only pthreads. The struct is shared: the owner
 *    frees it when both sides are done (see its users).
 */
#ifndef KILN_BYTE_QUEUE_H
#define KILN_BYTE_QUEUE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct byte_queue {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint8_t *buf;
	size_t cap, head, len;
	uint64_t pushed; /* bytes ever pushed */
	bool closed, aborted;
	bool answered; /* the consumer began its answer before any byte */
	int error;     /* with closed: 0 or -errno */
};

/* 0 or -ENOMEM / -errno from pthread init. */
int byte_queue_init(struct byte_queue *q, size_t cap);
void byte_queue_destroy(struct byte_queue *q);

/* Producer: queue all n bytes, waiting for room. 0, or -ECANCELED once aborted. */
int byte_queue_push(struct byte_queue *q, const void *data, size_t n);

/* Producer: no more bytes; err 0 (clean end) or -errno. */
void byte_queue_close(struct byte_queue *q, int err);

/* Consumer: the reader is gone; wakes and fails the producer. */
void byte_queue_abort(struct byte_queue *q);

/*
 * Consumer: take up to max bytes, waiting at most timeout_ms (< 0: no
 * limit). Returns the count (> 0); 0 when the wait timed out; -1 at the
 * end (closed, nothing left), with *err 0 for a clean end or the
 * producer's -errno.
 */
ssize_t byte_queue_pop(struct byte_queue *q, void *out, size_t max, int timeout_ms, int *err);

/*
 * Consumer: wait up to timeout_ms (< 0: no limit) until at least one byte
 * is queued or the producer closed. Returns 1 when bytes are there (or
 * were pushed and already taken); -1 when it closed without ever pushing
 * a byte, *err the close error then; 0 when neither came in time: the
 * queue is then answered (the consumer begins its answer without a byte),
 * so a failure of the producer from then on must travel inside the
 * stream (byte_queue_close_unanswered).
 */
int byte_queue_wait_first(struct byte_queue *q, int timeout_ms, int *err);

/*
 * Producer: close with err only if the consumer has not begun its answer
 * (no byte pushed, no timed-out byte_queue_wait_first): true, and the
 * consumer answers with the failure's own status. Otherwise false and
 * nothing changes: the producer reports the failure in the stream, then
 * closes. One decision under the lock, so the two sides cannot disagree.
 */
bool byte_queue_close_unanswered(struct byte_queue *q, int err);

#endif
