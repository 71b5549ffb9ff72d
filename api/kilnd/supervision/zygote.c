/* kilnd's pool of parked kiln-vmms; see zygote.h. */
#include "api/kilnd/supervision/zygote.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/kilnd/core/kilnd_log.h"
#include "lib/base/mono.h"

#define BACKOFF_FIRST_MS 1000

struct zygote_pool {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a take, or the stop */
	struct vmm_zygote v[ZYGOTES_MAX];
	unsigned n, size;
	const char *keeper, *vmm;
	unsigned grace_s;
	bool pidns, stop, started;
	bool nice;    /* parked at nice 19 (kilnd is root: only root can give 0 back) */
	bool claimed; /* one was taken since the thread last looked: the backoff starts over */
	pthread_t th;
};

int zygote_pool_new(unsigned size, const char *keeper, const char *vmm, unsigned grace_s,
		    bool new_pid_ns, struct zygote_pool **out)
{
	struct zygote_pool *p = calloc(1, sizeof(*p));
	pthread_condattr_t ca;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cv, &ca);
	pthread_condattr_destroy(&ca);
	p->size = size > ZYGOTES_MAX ? ZYGOTES_MAX : size;
	p->keeper = keeper;
	p->vmm = vmm;
	p->grace_s = grace_s;
	p->pidns = new_pid_ns;
	p->nice = geteuid() == 0;
	*out = p;
	return 0;
}

/* Take out the dead ones (under mu); their keepers are reaped after. */
static unsigned take_dead_locked(struct zygote_pool *p, struct vmm_zygote *dead)
{
	unsigned k = 0, nd = 0;

	for (unsigned i = 0; i < p->n; i++) {
		if (vmm_zygote_alive(&p->v[i]))
			p->v[k++] = p->v[i];
		else
			dead[nd++] = p->v[i];
	}
	p->n = k;
	return nd;
}

static void wait_ms_locked(struct zygote_pool *p, int64_t ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&p->cv, &p->mu, &ts);
}

/* The fill thread's retry state: a start that failed, or a zygote that
 * died parked, waits a doubling backoff, said once until one is claimed. */
struct refill {
	int64_t retry_at, backoff;
	bool said;
};

static void refill_failed(struct refill *f, const char *what)
{
	if (!f->said)
		kilnd_log("zygotes: %s; sandboxes start kiln-vmm themselves until one is ready (retrying with a backoff)",
			  what);
	f->said = true;
	f->retry_at = mono_ms() + f->backoff;
	f->backoff = f->backoff * 2 > ZYGOTE_BACKOFF_MAX_MS ? ZYGOTE_BACKOFF_MAX_MS
							    : f->backoff * 2;
}

/* End the dead ones (mu dropped meanwhile). true when there were any. */
static bool reap_dead_locked(struct zygote_pool *p)
{
	struct vmm_zygote dead[ZYGOTES_MAX];
	unsigned nd = take_dead_locked(p, dead);

	if (!nd)
		return false;
	pthread_mutex_unlock(&p->mu);
	for (unsigned i = 0; i < nd; i++)
		vmm_zygote_end(&dead[i]);
	pthread_mutex_lock(&p->mu);
	return true;
}

static void *fill(void *arg)
{
	struct zygote_pool *p = arg;
	struct refill f = { .backoff = BACKOFF_FIRST_MS };
	struct vmm_zygote z;
	struct api_err e;
	char what[sizeof(e.msg) + 32];
	int r;

	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		if (p->claimed) {
			p->claimed = false;
			f = (struct refill){ .backoff = BACKOFF_FIRST_MS };
		}
		if (reap_dead_locked(p)) {
			refill_failed(&f, "a parked kiln-vmm ended before it was claimed");
			continue;
		}
		if (p->n >= p->size || mono_ms() < f.retry_at) {
			wait_ms_locked(p, p->n >= p->size ? 1000 : f.retry_at - mono_ms());
			continue;
		}
		pthread_mutex_unlock(&p->mu);
		r = vmm_park(p->keeper, p->vmm, p->grace_s, p->pidns, p->nice, &z, &e);
		pthread_mutex_lock(&p->mu);
		if (r) {
			snprintf(what, sizeof(what), "cannot start one (%s)", e.msg);
			refill_failed(&f, what);
		} else if (p->stop || p->n >= p->size) {
			pthread_mutex_unlock(&p->mu);
			vmm_zygote_end(&z);
			pthread_mutex_lock(&p->mu);
		} else {
			p->v[p->n++] = z;
		}
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int zygote_pool_start(struct zygote_pool *p)
{
	int r;

	if (!p || !p->size)
		return 0;
	r = pthread_create(&p->th, NULL, fill, p);
	if (r)
		return -r;
	p->started = true;
	return 0;
}

bool zygote_take(struct zygote_pool *p, struct vmm_zygote *z)
{
	struct vmm_zygote dead[ZYGOTES_MAX];
	unsigned nd = 0;
	bool got = false;

	if (!p || !p->size)
		return false;
	pthread_mutex_lock(&p->mu);
	while (p->n && !got && !p->stop) {
		*z = p->v[--p->n];
		if (vmm_zygote_alive(z))
			got = p->claimed = true;
		else
			dead[nd++] = *z;
	}
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (unsigned i = 0; i < nd; i++)
		vmm_zygote_end(&dead[i]);
	return got;
}

unsigned zygote_pool_ready(struct zygote_pool *p)
{
	unsigned n;

	if (!p)
		return 0;
	pthread_mutex_lock(&p->mu);
	n = p->n;
	pthread_mutex_unlock(&p->mu);
	return n;
}

void zygote_pool_stop(struct zygote_pool *p)
{
	struct vmm_zygote v[ZYGOTES_MAX];
	unsigned n;

	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	if (p->started)
		pthread_join(p->th, NULL);
	p->started = false;
	pthread_mutex_lock(&p->mu);
	n = p->n;
	memcpy(v, p->v, sizeof(v[0]) * n);
	p->n = 0;
	pthread_mutex_unlock(&p->mu);
	for (unsigned i = 0; i < n; i++)
		vmm_zygote_end(&v[i]);
}

void zygote_pool_free(struct zygote_pool *p)
{
	if (!p)
		return;
	zygote_pool_stop(p);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}
