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
	bool begun; /* the consumer began its answer before any byte (byte_queue_wait_begin) */
	int error;  /* with closed: 0 or -errno */
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
 * Consumer: wait (no limit) until at least one byte is queued or the
 * producer closed. Returns true when bytes are there (or were pushed and
 * already taken), false when it closed without ever pushing a byte;
 * *err is the close error then.
 */
bool byte_queue_wait_first(struct byte_queue *q, int *err);

/*
 * Consumer: byte_queue_wait_first for at most timeout_ms. When it passes
 * with nothing pushed and the producer still at work, the answer is
 * declared begun (a client must not take a quiet producer for a dead
 * server) and this returns true as if bytes were there. false: closed
 * without a byte and not begun, *err the close error.
 */
bool byte_queue_wait_begin(struct byte_queue *q, int timeout_ms, int *err);

/*
 * Producer, on failure: close with err if the consumer has not begun its
 * answer (no byte pushed, not begun) and return true: the consumer answers
 * with the failure's own status. false when the answer has begun: the
 * producer reports the failure in the stream, then closes. One decision
 * under the queue's lock, so it cannot cross byte_queue_wait_begin's.
 */
bool byte_queue_fail_unbegun(struct byte_queue *q, int err);

#endif
