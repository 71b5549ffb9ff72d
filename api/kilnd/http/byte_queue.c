/* A bounded producer/consumer byte pipe; see byte_queue.h. */
#include "api/kilnd/http/byte_queue.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/base/mono.h"

int byte_queue_init(struct byte_queue *q, size_t cap)
{
	pthread_condattr_t ca;
	int r;

	memset(q, 0, sizeof(*q));
	q->buf = malloc(cap);
	if (!q->buf)
		return -ENOMEM;
	q->cap = cap;
	if ((r = pthread_mutex_init(&q->mu, NULL))) {
		free(q->buf);
		return -r;
	}
	/* Timed waits against CLOCK_MONOTONIC: a clock step must not stretch them. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	r = pthread_cond_init(&q->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (r) {
		pthread_mutex_destroy(&q->mu);
		free(q->buf);
		return -r;
	}
	return 0;
}

void byte_queue_destroy(struct byte_queue *q)
{
	pthread_cond_destroy(&q->cv);
	pthread_mutex_destroy(&q->mu);
	free(q->buf);
	q->buf = NULL;
}

int byte_queue_push(struct byte_queue *q, const void *data, size_t n)
{
	const uint8_t *p = data;
	int r = 0;

	pthread_mutex_lock(&q->mu);
	while (n) {
		size_t room, tail, k;

		while (!q->aborted && q->len == q->cap)
			pthread_cond_wait(&q->cv, &q->mu);
		if (q->aborted) {
			r = -ECANCELED;
			break;
		}
		room = q->cap - q->len;
		tail = (q->head + q->len) % q->cap;
		k = n < room ? n : room;
		if (k > q->cap - tail)
			k = q->cap - tail; /* up to the end of the ring; the rest next round */
		memcpy(q->buf + tail, p, k);
		q->len += k;
		q->pushed += k;
		p += k;
		n -= k;
		pthread_cond_broadcast(&q->cv);
	}
	pthread_mutex_unlock(&q->mu);
	return r;
}

void byte_queue_close(struct byte_queue *q, int err)
{
	pthread_mutex_lock(&q->mu);
	q->closed = true;
	q->error = err;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
}

void byte_queue_abort(struct byte_queue *q)
{
	pthread_mutex_lock(&q->mu);
	q->aborted = true;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
}

ssize_t byte_queue_pop(struct byte_queue *q, void *out, size_t max, int timeout_ms, int *err)
{
	struct timespec dl;
	size_t k;

	if (timeout_ms >= 0)
		mono_deadline_in(&dl, timeout_ms);
	pthread_mutex_lock(&q->mu);
	while (q->len == 0 && !q->closed) {
		if (timeout_ms < 0) {
			pthread_cond_wait(&q->cv, &q->mu);
		} else if (pthread_cond_timedwait(&q->cv, &q->mu, &dl) == ETIMEDOUT) {
			if (q->len == 0 && !q->closed) {
				pthread_mutex_unlock(&q->mu);
				return 0;
			}
		}
	}
	if (q->len == 0) {
		*err = q->error;
		pthread_mutex_unlock(&q->mu);
		return -1;
	}
	k = max < q->len ? max : q->len;
	if (k > q->cap - q->head)
		k = q->cap - q->head;
	memcpy(out, q->buf + q->head, k);
	q->head = (q->head + k) % q->cap;
	q->len -= k;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
	return (ssize_t)k;
}

bool byte_queue_wait_first(struct byte_queue *q, int *err)
{
	bool any;

	pthread_mutex_lock(&q->mu);
	while (q->pushed == 0 && !q->closed)
		pthread_cond_wait(&q->cv, &q->mu);
	any = q->pushed > 0;
	*err = q->error;
	pthread_mutex_unlock(&q->mu);
	return any;
}

bool byte_queue_wait_begin(struct byte_queue *q, int timeout_ms, int *err)
{
	struct timespec dl;
	bool any;

	mono_deadline_in(&dl, timeout_ms);
	pthread_mutex_lock(&q->mu);
	while (q->pushed == 0 && !q->closed && !q->begun)
		if (pthread_cond_timedwait(&q->cv, &q->mu, &dl) == ETIMEDOUT && q->pushed == 0 &&
		    !q->closed)
			q->begun = true;
	any = q->pushed > 0 || q->begun;
	*err = q->error;
	pthread_mutex_unlock(&q->mu);
	return any;
}

bool byte_queue_fail_unbegun(struct byte_queue *q, int err)
{
	bool unbegun;

	pthread_mutex_lock(&q->mu);
	unbegun = q->pushed == 0 && !q->begun;
	if (unbegun) {
		q->closed = true;
		q->error = err;
		pthread_cond_broadcast(&q->cv);
	}
	pthread_mutex_unlock(&q->mu);
	return unbegun;
}
