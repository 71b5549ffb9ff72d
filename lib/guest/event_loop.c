#include "lib/guest/event_loop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "lib/base/thread_start.h"

/*
 * Watches are allocated WATCH_CHUNK at a time as fds are added, and kept
 * until the loop is destroyed: epoll holds pointers to them. A VM watches
 * about a dozen fds; EVENT_LOOP_MAX of them in place were 10 KiB of every
 * kiln-vmm.
 */
#define WATCH_CHUNK 16
_Static_assert(EVENT_LOOP_MAX % WATCH_CHUNK == 0, "chunks tile the table");

struct watch {
	int fd;
	event_fn *fn;
	void *ctx;
	void (*timer_fn)(void *ctx); /* for one-shot timers */
	void *timer_ctx;
};

struct event_loop {
	int epfd;
	int stop_fd; /* eventfd: wakes the loop to stop */
	pthread_t thread;
	int running;          /* started and not stopped (the caller's view) */
	int created;          /* the thread exists: parked or running */
	pthread_mutex_t lock; /* guards the watch table and the fields below */
	pthread_cond_t park_cv;
	int parked, go, quit;    /* the thread is parked; wake it to run; to end */
	int (*enter)(void *ctx); /* run by the thread on itself first (seccomp) */
	void *enter_ctx;
	struct watch *w[EVENT_LOOP_MAX / WATCH_CHUNK]; /* chunks, allocated in order */
};

/* Watch i; NULL past the chunks allocated so far. */
static struct watch *watch_at(struct event_loop *l, int i)
{
	struct watch *c = l->w[i / WATCH_CHUNK];

	return c ? &c[i % WATCH_CHUNK] : NULL;
}

static struct watch *find(struct event_loop *l, int fd)
{
	struct watch *w;

	for (int i = 0; i < EVENT_LOOP_MAX && (w = watch_at(l, i)); i++)
		if (w->fn && w->fd == fd)
			return w;
	return NULL;
}

/* An unused watch, in a new chunk when the others are all in use. 0, or
 * -ENOSPC (EVENT_LOOP_MAX in use) or -ENOMEM. */
static int watch_new(struct event_loop *l, struct watch **out)
{
	struct watch *w;
	int i;

	for (i = 0; i < EVENT_LOOP_MAX && (w = watch_at(l, i)); i++)
		if (!w->fn) {
			*out = w;
			return 0;
		}
	if (i == EVENT_LOOP_MAX)
		return -ENOSPC;
	if (!(l->w[i / WATCH_CHUNK] = calloc(WATCH_CHUNK, sizeof(*w))))
		return -ENOMEM;
	*out = l->w[i / WATCH_CHUNK];
	return 0;
}

int event_loop_create(struct event_loop **out)
{
	struct event_loop *l = calloc(1, sizeof(*l));
	struct epoll_event ev = { .events = EPOLLIN };

	if (!l)
		return -ENOMEM;
	l->epfd = l->stop_fd = -1;
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->park_cv, NULL);
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	l->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ev.data.ptr = NULL; /* NULL marks the stop fd */
	if (l->epfd < 0 || l->stop_fd < 0 ||
	    epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->stop_fd, &ev) < 0) {
		int err = errno;

		event_loop_destroy(l);
		return -err;
	}
	*out = l;
	return 0;
}

/* Register fd; timer_fn/timer_ctx are set under the same lock, before epoll
 * can report the fd, so a timer cannot fire without its callback. */
static int add_watch(struct event_loop *l, int fd, uint32_t events, event_fn *fn, void *ctx,
		     void (*timer_fn)(void *), void *timer_ctx)
{
	struct epoll_event ev = { .events = events };
	struct watch *w;
	int op = EPOLL_CTL_MOD, err;

	pthread_mutex_lock(&l->lock);
	w = find(l, fd);
	if (!w) {
		op = EPOLL_CTL_ADD;
		if ((err = watch_new(l, &w)) < 0) {
			pthread_mutex_unlock(&l->lock);
			return err;
		}
	}
	w->fd = fd;
	w->fn = fn;
	w->ctx = ctx;
	w->timer_fn = timer_fn;
	w->timer_ctx = timer_ctx;
	ev.data.ptr = w;
	if (epoll_ctl(l->epfd, op, fd, &ev) < 0) {
		err = errno;
		if (op == EPOLL_CTL_ADD)
			memset(w, 0, sizeof(*w));
		pthread_mutex_unlock(&l->lock);
		return -err;
	}
	pthread_mutex_unlock(&l->lock);
	return 0;
}

int event_loop_add(struct event_loop *l, int fd, uint32_t events, event_fn *fn, void *ctx)
{
	return add_watch(l, fd, events, fn, ctx, NULL, NULL);
}

int event_loop_mod(struct event_loop *l, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events };
	struct watch *w;
	int r = 0;

	pthread_mutex_lock(&l->lock);
	w = find(l, fd);
	if (!w)
		r = -ENOENT;
	else {
		ev.data.ptr = w;
		if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
			r = -errno;
	}
	pthread_mutex_unlock(&l->lock);
	return r;
}

int event_loop_del(struct event_loop *l, int fd)
{
	struct watch *w;

	pthread_mutex_lock(&l->lock);
	w = find(l, fd);
	if (w) {
		epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
		memset(w, 0, sizeof(*w));
	}
	pthread_mutex_unlock(&l->lock);
	return w ? 0 : -ENOENT;
}

static void timer_fired(void *ctx, int fd, uint32_t events)
{
	struct event_loop *l = ctx;
	struct watch *w;
	void (*fn)(void *) = NULL;
	void *fctx = NULL;

	(void)events;
	pthread_mutex_lock(&l->lock);
	w = find(l, fd);
	if (w) {
		fn = w->timer_fn;
		fctx = w->timer_ctx;
		epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
		memset(w, 0, sizeof(*w));
	}
	pthread_mutex_unlock(&l->lock);
	close(fd);
	if (fn)
		fn(fctx);
}

int event_loop_timer(struct event_loop *l, unsigned ms, void (*fn)(void *ctx), void *ctx)
{
	struct itimerspec its = { .it_value = { .tv_sec = ms / 1000,
						.tv_nsec = (long)(ms % 1000) * 1000000 + 1 } };
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	int err;

	if (fd < 0)
		return -errno;
	if (timerfd_settime(fd, 0, &its, NULL) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	if ((err = add_watch(l, fd, EPOLLIN, timer_fired, l, fn, ctx))) {
		close(fd);
		return err;
	}
	return 0;
}

/* Handle events until a stop is requested. */
static void run_until_stop(struct event_loop *l)
{
	struct epoll_event ev[32];

	for (;;) {
		int n = epoll_wait(l->epfd, ev, 32, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return;
		for (int i = 0; i < n; i++) {
			struct watch *w = ev[i].data.ptr, copy;

			if (!w)
				return; /* stop requested */
			pthread_mutex_lock(&l->lock);
			copy = *w; /* the handler may delete its own watch */
			pthread_mutex_unlock(&l->lock);
			if (copy.fn)
				copy.fn(copy.ctx, copy.fd, ev[i].events);
		}
	}
}

/*
 * The thread lives as long as the loop: a stop parks it, a start wakes
 * it. So it is created once, from vm_run, and never by a thread that
 * already carries a seccomp filter of another role (filters are inherited
 * and stack): a VM resumed from its control thread keeps a device thread
 * with the device filter alone.
 */
static void *loop_thread(void *arg)
{
	struct event_loop *l = arg;
	int dead = 0, end;

	pthread_setname_np(pthread_self(), "kiln-devices");
	if (l->enter && l->enter(l->enter_ctx) < 0)
		dead = 1; /* the hook said why (the VM stops): handle nothing */
	for (;;) {
		if (!dead)
			run_until_stop(l);
		pthread_mutex_lock(&l->lock);
		l->parked = 1;
		pthread_cond_broadcast(&l->park_cv);
		while (!l->quit && (dead || !l->go)) {
			pthread_cond_wait(&l->park_cv, &l->lock);
			if (dead && !l->parked) {
				l->parked = 1; /* a start cannot wake a dead loop */
				pthread_cond_broadcast(&l->park_cv);
			}
		}
		end = l->quit;
		l->go = 0;
		pthread_mutex_unlock(&l->lock);
		if (end)
			return NULL;
	}
}

void event_loop_set_enter(struct event_loop *l, int (*enter)(void *ctx), void *ctx)
{
	l->enter = enter;
	l->enter_ctx = ctx;
}

int event_loop_start(struct event_loop *l)
{
	int err;

	if (l->running)
		return 0;
	if (l->created) {
		pthread_mutex_lock(&l->lock);
		l->parked = 0;
		l->go = 1;
		pthread_cond_broadcast(&l->park_cv);
		pthread_mutex_unlock(&l->lock);
		l->running = 1;
		return 0;
	}
	if ((err = thread_start(&l->thread, loop_thread, l)))
		return -err;
	l->created = l->running = 1;
	return 0;
}

void event_loop_stop(struct event_loop *l)
{
	uint64_t one = 1;

	if (!l || !l->running)
		return;
	if (write(l->stop_fd, &one, sizeof(one)) < 0) {
		/* cannot fail for a fresh eventfd; nothing else to do */
	}
	pthread_mutex_lock(&l->lock);
	while (!l->parked)
		pthread_cond_wait(&l->park_cv, &l->lock);
	pthread_mutex_unlock(&l->lock);
	l->running = 0;
	/* Drain the stop request, so the loop can be started again (resume). */
	if (read(l->stop_fd, &one, sizeof(one)) < 0) {
		/* EAGAIN: nothing pending; nothing else to do */
	}
}

void event_loop_destroy(struct event_loop *l)
{
	if (!l)
		return;
	event_loop_stop(l);
	if (l->created) {
		pthread_mutex_lock(&l->lock);
		l->quit = 1;
		pthread_cond_broadcast(&l->park_cv);
		pthread_mutex_unlock(&l->lock);
		pthread_join(l->thread, NULL);
	}
	for (int i = 0; i < EVENT_LOOP_MAX; i++) {
		struct watch *w = watch_at(l, i);

		if (w && w->timer_fn)
			close(w->fd);
	}
	for (int k = 0; k < EVENT_LOOP_MAX / WATCH_CHUNK; k++)
		free(l->w[k]);
	if (l->epfd >= 0)
		close(l->epfd);
	if (l->stop_fd >= 0)
		close(l->stop_fd);
	pthread_cond_destroy(&l->park_cv);
	pthread_mutex_destroy(&l->lock);
	free(l);
}
