#include "guest-init/sys/reaper.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

int reaper_init(struct reaper *r)
{
	pthread_condattr_t ca;
	sigset_t chld;
	int e;

	memset(r, 0, sizeof(*r));
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	e = pthread_sigmask(SIG_BLOCK, &chld, NULL);
	if (e)
		return -e;
	pthread_mutex_init(&r->lock, NULL);
	/* Deadlines are CLOCK_MONOTONIC: sync_clock may move the wall clock. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->cond, &ca);
	pthread_condattr_destroy(&ca);
	return 0;
}

/* Hand one reaped pid to its owner, or drop it (an orphan). */
static void reaper_dispatch(struct reaper *r, pid_t pid, int status, const struct rusage *ru)
{
	struct reaper_child **pp, *ch = NULL;

	pthread_mutex_lock(&r->lock);
	for (pp = &r->children; *pp; pp = &(*pp)->next) {
		if ((*pp)->pid == pid) {
			ch = *pp;
			*pp = ch->next;
			break;
		}
	}
	if (ch) {
		ch->status = status;
		ch->ru = *ru;
		ch->next = NULL;
		if (ch->on_exit)
			ch->on_exit(ch);
		ch->reaped = true;
		pthread_cond_broadcast(&r->cond);
	}
	pthread_mutex_unlock(&r->lock);
}

void reaper_run(struct reaper *r)
{
	sigset_t chld;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	for (;;) {
		struct rusage ru;
		int status;
		bool sleep;
		pid_t pid = wait4(-1, &status, 0, &ru);

		if (pid > 0) {
			reaper_dispatch(r, pid, status, &ru);
			continue;
		}
		if (errno != ECHILD)
			continue; /* EINTR */
		pthread_mutex_lock(&r->lock);
		/* A fork registered since wait4() returned means there is a
		 * child again: wait for it instead of sleeping. */
		sleep = !r->children;
		if (sleep) {
			r->idle = true;
			pthread_cond_broadcast(&r->cond);
		}
		pthread_mutex_unlock(&r->lock);
		if (!sleep)
			continue;
		/* SIGCHLD is blocked everywhere, so one that came after wait4()
		 * is still pending and this returns at once. A stale one from
		 * before costs one more round. */
		while (sigwaitinfo(&chld, NULL) < 0 && errno == EINTR)
			;
	}
}

void *reaper_thread(void *arg)
{
	reaper_run(arg);
	return NULL;
}

void reaper_fork_lock(struct reaper *r)
{
	pthread_mutex_lock(&r->lock);
}

void reaper_add(struct reaper *r, struct reaper_child *ch, pid_t pid)
{
	ch->pid = pid;
	ch->reaped = false;
	ch->next = r->children;
	r->children = ch;
	r->idle = false;
}

void reaper_fork_unlock(struct reaper *r)
{
	pthread_mutex_unlock(&r->lock);
}

int reaper_wait(struct reaper *r, struct reaper_child *ch)
{
	int st;

	pthread_mutex_lock(&r->lock);
	while (!ch->reaped)
		pthread_cond_wait(&r->cond, &r->lock);
	st = ch->status;
	pthread_mutex_unlock(&r->lock);
	return st;
}

bool reaper_wait_idle(struct reaper *r, int64_t deadline_ms)
{
	struct timespec ts = { .tv_sec = deadline_ms / 1000,
			       .tv_nsec = (long)(deadline_ms % 1000) * 1000000 };
	bool idle;

	pthread_mutex_lock(&r->lock);
	while (!r->idle && pthread_cond_timedwait(&r->cond, &r->lock, &ts) != ETIMEDOUT)
		;
	idle = r->idle;
	pthread_mutex_unlock(&r->lock);
	return idle;
}
