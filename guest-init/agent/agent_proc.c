#include "guest-init/agent/agent_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

int agent_procs_init(struct agent_procs *t, struct reaper *r, const struct rlimit *nofile,
		     int null_fd, pthread_attr_t *thread_attr)
{
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
	t->reaper = r;
	t->nofile = nofile;
	t->null_fd = null_fd;
	t->thread_attr = thread_attr;
	return 0;
}

static void poke(int efd)
{
	uint64_t one = 1;
	ssize_t r = write(efd, &one, sizeof(one));

	/* EAGAIN only when the counter is near 2^64: it is pending anyway. */
	(void)r;
}

/* ---- entries ---- */

/* The reaper's hook: reaper lock held, so only the table lock is taken. */
static void proc_on_exit(struct reaper_child *rc)
{
	struct agent_proc *p = (struct agent_proc *)((char *)rc - offsetof(struct agent_proc, rc));

	pthread_mutex_lock(&p->tab->lock);
	p->exited = true;
	p->status = rc->status;
	p->ru = rc->ru;
	p->reap_us = mono_us();
	agent_proc_notify(p);
	poke(p->wake_fd);
	pthread_mutex_unlock(&p->tab->lock);
}

static char **copy_argv(const struct agent_proc_req *req)
{
	size_t bytes = 0;
	char **v, *s;

	for (size_t i = 0; i < req->argc; i++)
		bytes += strlen(req->argv[i]) + 1;
	v = malloc((req->argc + 1) * sizeof(*v) + bytes);
	if (!v)
		return NULL;
	s = (char *)(v + req->argc + 1);
	for (size_t i = 0; i < req->argc; i++) {
		size_t n = strlen(req->argv[i]) + 1;

		v[i] = memcpy(s, req->argv[i], n);
		s += n;
	}
	v[req->argc] = NULL;
	return v;
}

static void proc_free(struct agent_proc *p)
{
	/* The reaper may still be finishing the hook of a process that just
	 * exited; after this it never touches rc again. */
	if (p->pid > 0)
		reaper_wait(p->tab->reaper, &p->rc);
	if (p->in_fd >= 0)
		close(p->in_fd);
	if (p->out_fd >= 0)
		close(p->out_fd);
	if (p->err_fd >= 0)
		close(p->err_fd);
	if (p->wake_fd >= 0)
		close(p->wake_fd);
	agent_ring_free(&p->ring);
	free(p->argv);
	free(p);
}

static struct agent_proc *proc_new(struct agent_procs *t, const struct agent_proc_req *req,
				   bool spawn)
{
	struct agent_proc *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->tab = t;
	p->in_fd = p->out_fd = p->err_fd = -1;
	p->refs = 1;
	p->rc.on_exit = proc_on_exit;
	p->pty = spawn && req->pty;
	p->timeout_ms = req->timeout_ms;
	p->argc = req->argc;
	p->argv = copy_argv(req);
	p->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!p->argv || p->wake_fd < 0 ||
	    (spawn && agent_ring_init(&p->ring, req->ring_bytes) < 0)) {
		proc_free(p);
		return NULL;
	}
	return p;
}

/* Drop a reference with the lock held; true when the caller must free. */
static bool put_locked(struct agent_proc *p)
{
	if (--p->refs)
		return false;
	if (p->all_prev) {
		*p->all_prev = p->all_next;
		if (p->all_next)
			p->all_next->all_prev = p->all_prev;
	}
	return true;
}

void agent_proc_put(struct agent_proc *p)
{
	bool last;

	if (!p)
		return;
	pthread_mutex_lock(&p->tab->lock);
	last = put_locked(p);
	pthread_mutex_unlock(&p->tab->lock);
	if (last)
		proc_free(p);
}

static unsigned running_locked(struct agent_procs *t)
{
	unsigned n = 0;

	for (struct agent_proc *p = t->all; p; p = p->all_next)
		n += !p->exited;
	return n;
}

unsigned agent_procs_running(struct agent_procs *t)
{
	unsigned n;

	pthread_mutex_lock(&t->lock);
	n = running_locked(t);
	pthread_mutex_unlock(&t->lock);
	return n;
}

/*
 * A table slot for a new spawn: a free one, or the one of the oldest
 * entry whose process is done (section 7.4, "Table and retention").
 * -1 when every slot holds a process that still runs. *evicted gets the
 * evicted entry whose last reference the caller must drop.
 */
static int slot_take(struct agent_procs *t, struct agent_proc **evicted)
{
	int best = -1;

	*evicted = NULL;
	for (int i = 0; i < AGENT_MAX_PROCS; i++) {
		struct agent_proc *q = t->slot[i];

		if (!q)
			return i;
		if (q->listed && q->done && (best < 0 || q->id < t->slot[best]->id))
			best = i;
	}
	if (best >= 0) {
		t->slot[best]->listed = false;
		*evicted = t->slot[best];
		t->slot[best] = NULL;
	}
	return best;
}

/* Account for p (and give it a slot when spawned); err on busy. */
static int reserve(struct agent_procs *t, struct agent_proc *p, bool spawn, const char *what,
		   int *slot, struct agent_err *err)
{
	struct agent_proc *evicted = NULL;
	int rc = -1;

	pthread_mutex_lock(&t->lock);
	if (running_locked(t) >= AGENT_MAX_PROCS) {
		agent_err_set(
			err, AGENT_E_BUSY,
			"%s: %d processes are running, the most the agent runs at once; retry when one has exited",
			what, AGENT_MAX_PROCS);
		goto out;
	}
	if (spawn && t->next_id == UINT32_MAX) {
		agent_err_set(err, AGENT_E_BUSY,
			      "%s: every process id of this boot is used; reboot the sandbox",
			      what);
		goto out;
	}
	*slot = -1;
	if (spawn) {
		*slot = slot_take(t, &evicted);
		if (*slot < 0) {
			agent_err_set(
				err, AGENT_E_BUSY,
				"%s: all %d process table slots hold running processes; wait for one to exit",
				what, AGENT_MAX_PROCS);
			goto out;
		}
		/* Taken but not listed until the process has started. */
		t->slot[*slot] = p;
		p->refs++;
	}
	p->all_next = t->all;
	if (t->all)
		t->all->all_prev = &p->all_next;
	p->all_prev = &t->all;
	t->all = p;
	rc = 0;
out:
	if (evicted && !put_locked(evicted))
		evicted = NULL;
	pthread_mutex_unlock(&t->lock);
	if (evicted)
		proc_free(evicted);
	return rc;
}

static void *pump_main(void *arg);

struct agent_proc *agent_proc_start(struct agent_procs *t, const struct agent_proc_req *req,
				    bool spawn, struct agent_err *err)
{
	const char *what = spawn ? "spawn" : "exec";
	struct agent_launch_io io;
	struct agent_proc *p = proc_new(t, req, spawn);
	pthread_t th;
	int slot = -1;

	if (!p) {
		agent_err_set(err, AGENT_E_BUSY, "%s: out of memory or descriptors; retry later",
			      what);
		return NULL;
	}
	p->confined = req->confine;
	if (reserve(t, p, spawn, what, &slot, err) < 0) {
		agent_proc_put(p);
		return NULL;
	}
	if (agent_launch(t->reaper, t->nofile, what, req, p->pty, &p->rc, &io, err) < 0) {
		pthread_mutex_lock(&t->lock);
		if (slot >= 0) {
			t->slot[slot] = NULL;
			p->refs--;
		}
		pthread_mutex_unlock(&t->lock);
		p->pid = 0; /* already reaped (or never forked): nothing to wait for */
		agent_proc_put(p);
		return NULL;
	}
	pthread_mutex_lock(&t->lock);
	p->pid = io.pid;
	p->start_us = io.start_us;
	p->in_fd = io.in_fd;
	p->out_fd = io.out_fd;
	p->err_fd = io.err_fd;
	if (spawn) {
		p->id = ++t->next_id;
		p->listed = true;
		p->refs++; /* the pump's */
	}
	pthread_mutex_unlock(&t->lock);
	if (spawn && pthread_create(&th, t->thread_attr, pump_main, p) != 0) {
		/* Nobody would read its output or notice its exit: it must not run. */
		agent_proc_kill_group(p, false);
		reaper_wait(t->reaper, &p->rc);
		pthread_mutex_lock(&t->lock);
		p->listed = false;
		/* An attach or wait that found it meanwhile waits for `done`,
		 * which only the pump would have set. */
		p->done = true;
		agent_proc_notify(p);
		t->slot[slot] = NULL;
		p->refs -= 2; /* the table's and the pump's */
		pthread_mutex_unlock(&t->lock);
		agent_proc_put(p);
		agent_err_set(err, AGENT_E_BUSY,
			      "%s: cannot start the output reader thread; retry later", what);
		return NULL;
	}
	return p;
}

struct agent_proc *agent_proc_get(struct agent_procs *t, uint32_t id)
{
	struct agent_proc *found = NULL;

	pthread_mutex_lock(&t->lock);
	for (int i = 0; i < AGENT_MAX_PROCS && !found; i++) {
		struct agent_proc *q = t->slot[i];

		if (q && q->listed && q->id == id) {
			q->refs++;
			found = q;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return found;
}

static int by_id(const void *a, const void *b)
{
	const struct agent_proc *x = *(struct agent_proc *const *)a,
				*y = *(struct agent_proc *const *)b;

	return x->id < y->id ? -1 : x->id > y->id;
}

int agent_procs_list(struct agent_procs *t, struct agent_proc ***out)
{
	struct agent_proc **v = malloc(AGENT_MAX_PROCS * sizeof(*v));
	int n = 0;

	*out = v;
	if (!v)
		return -ENOMEM;
	pthread_mutex_lock(&t->lock);
	for (int i = 0; i < AGENT_MAX_PROCS; i++) {
		struct agent_proc *q = t->slot[i];

		if (q && q->listed) {
			q->refs++;
			v[n++] = q;
		}
	}
	pthread_mutex_unlock(&t->lock);
	qsort(v, (size_t)n, sizeof(*v), by_id);
	return n;
}

/* ---- locked helpers ---- */

void agent_proc_watch_add(struct agent_proc *p, struct agent_watch *w)
{
	w->next = p->watchers;
	p->watchers = w;
}

void agent_proc_watch_del(struct agent_proc *p, struct agent_watch *w)
{
	for (struct agent_watch **pp = &p->watchers; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			return;
		}
	}
}

void agent_proc_notify(struct agent_proc *p)
{
	for (struct agent_watch *w = p->watchers; w; w = w->next)
		poke(w->efd);
}

static uint64_t tv_us(const struct timeval *tv)
{
	return (uint64_t)tv->tv_sec * 1000000 + (uint64_t)tv->tv_usec;
}

void agent_proc_exit_info(const struct agent_proc *p, struct agent_exit *e)
{
	memset(e, 0, sizeof(*e));
	e->id = p->id;
	e->pid = p->pid;
	e->exit_code = -1;
	if (p->timed_out) {
		e->exit_code = 124; /* as timeout(1) */
		e->timed_out = true;
	} else if (WIFEXITED(p->status)) {
		e->exit_code = WEXITSTATUS(p->status);
	} else if (WIFSIGNALED(p->status)) {
		e->signo = WTERMSIG(p->status);
	}
	e->stdout_bytes = p->ring.total[AGENT_STDOUT];
	e->stderr_bytes = p->ring.total[AGENT_STDERR];
	e->wall_us = p->reap_us > p->start_us ? (uint64_t)(p->reap_us - p->start_us) : 0;
	e->user_us = tv_us(&p->ru.ru_utime);
	e->sys_us = tv_us(&p->ru.ru_stime);
}

void agent_proc_info(const struct agent_proc *p, struct agent_process_info *i)
{
	struct agent_exit e;

	memset(i, 0, sizeof(*i));
	i->id = p->id;
	i->pid = p->pid;
	i->argv = (const char *const *)p->argv;
	i->argc = p->argc;
	i->pty = p->pty;
	i->running = !p->exited;
	i->exit_code = -1;
	if (p->exited) {
		agent_proc_exit_info(p, &e);
		i->exit_code = e.exit_code;
		i->signo = e.signo;
		i->timed_out = e.timed_out;
	}
	i->seq = p->ring.head;
	for (const struct agent_watch *w = p->watchers; w; w = w->next)
		i->attached += w->stream;
}

/* Replace a shared descriptor by /dev/null: see "Contract" in agent_proc.h.
 * dup3 with O_CLOEXEC: dup2 would clear the flag, and the number would
 * then leak into every later child (agent_launch.h: all close-on-exec). */
static void retire_fd(struct agent_proc *p, int fd)
{
	if (fd >= 0)
		dup3(p->tab->null_fd, fd, O_CLOEXEC);
}

void agent_proc_close_stdin(struct agent_proc *p)
{
	if (p->in_closed)
		return;
	p->in_closed = true;
	if (!p->pty)
		retire_fd(p, p->in_fd);
}

void agent_proc_kill_group(struct agent_proc *p, bool timeout)
{
	pthread_mutex_lock(&p->tab->lock);
	/* Until the reap the group id is the live leader's pid. After it,
	 * the group lives on in leftovers until done, and an empty group's
	 * id is only reused once pids wrap around, far beyond one drain. */
	if (!p->done)
		kill(-p->pid, SIGKILL);
	if (timeout && !p->exited)
		p->timed_out = true;
	pthread_mutex_unlock(&p->tab->lock);
}

int agent_proc_signal(struct agent_proc *p, int signo, bool group)
{
	int r = -ESRCH;

	pthread_mutex_lock(&p->tab->lock);
	/* Only before the reap: after it the pid may belong to someone else.
	 * A confined process's pid is the launcher outside its PID namespace
	 * (agent_launch.c): the program gets the signal as one of its group. */
	if (!p->exited)
		r = kill(group || p->confined ? -p->pid : p->pid, signo) < 0 ? -errno : 0;
	pthread_mutex_unlock(&p->tab->lock);
	return r;
}

int agent_proc_resize(struct agent_proc *p, uint16_t rows, uint16_t cols)
{
	struct winsize ws = { .ws_row = rows, .ws_col = cols };
	int r;

	pthread_mutex_lock(&p->tab->lock);
	if (p->exited)
		r = -ESRCH;
	else if (!p->pty)
		r = -ENOTTY;
	else
		r = ioctl(p->in_fd, TIOCSWINSZ, &ws) < 0 ? -errno : 0;
	pthread_mutex_unlock(&p->tab->lock);
	return r;
}

enum agent_stdin_res agent_proc_write_stdin(struct agent_proc *p, const void *buf, size_t len,
					    size_t *n)
{
	enum agent_stdin_res res;
	ssize_t r;

	*n = 0;
	pthread_mutex_lock(&p->tab->lock);
	if (p->exited) {
		res = AGENT_STDIN_EXITED;
	} else if (p->in_closed) {
		res = AGENT_STDIN_CLOSED;
	} else if ((r = write(p->in_fd, buf, len)) >= 0) {
		*n = (size_t)r;
		res = AGENT_STDIN_WROTE;
	} else if (errno == EAGAIN || errno == EINTR) {
		res = AGENT_STDIN_FULL;
	} else {
		/* EPIPE: the process closed its stdin; EIO: its terminal is gone. */
		res = AGENT_STDIN_CLOSED;
	}
	pthread_mutex_unlock(&p->tab->lock);
	return res;
}

enum agent_stdin_res agent_proc_eof_stdin(struct agent_proc *p)
{
	enum agent_stdin_res res = AGENT_STDIN_WROTE;

	pthread_mutex_lock(&p->tab->lock);
	if (p->exited) {
		res = AGENT_STDIN_EXITED;
	} else if (p->in_closed) {
		res = AGENT_STDIN_CLOSED;
	} else if (p->pty) {
		struct termios tio;
		unsigned char eof = 4; /* ^D, the default VEOF */

		if (tcgetattr(p->in_fd, &tio) == 0 && tio.c_cc[VEOF] != _POSIX_VDISABLE)
			eof = tio.c_cc[VEOF];
		if (write(p->in_fd, &eof, 1) == 1)
			agent_proc_close_stdin(p);
		else
			res = errno == EAGAIN ? AGENT_STDIN_FULL : AGENT_STDIN_CLOSED;
	} else {
		agent_proc_close_stdin(p);
	}
	pthread_mutex_unlock(&p->tab->lock);
	return res;
}

/* ---- the drain rule and the pump ---- */

int agent_drain_left(const struct agent_drain *d, int64_t now)
{
	int64_t idle_end, cap_end, end;

	if (!d->reap_ms)
		return -1;
	idle_end = (d->last_ms > d->reap_ms ? d->last_ms : d->reap_ms) + AGENT_DRAIN_MS;
	cap_end = d->reap_ms + AGENT_DRAIN_CAP_MS;
	end = idle_end < cap_end ? idle_end : cap_end;
	return end <= now ? 0 : (int)(end - now);
}

void agent_wake_drain(int fd)
{
	uint64_t v;
	ssize_t r = read(fd, &v, sizeof(v));

	(void)r; /* EAGAIN: nothing pending */
}

void agent_output_poll(int *const fds[2], struct pollfd *pf, int *n, int idx[2])
{
	for (int i = 0; i < 2; i++) {
		idx[i] = -1;
		if (*fds[i] >= 0) {
			idx[i] = *n;
			pf[(*n)++] = (struct pollfd){ .fd = *fds[i], .events = POLLIN };
		}
	}
}

ssize_t agent_output_read(int *fd, uint8_t *buf)
{
	ssize_t r = read(*fd, buf, AGENT_CHUNK_MAX);

	if (r > 0)
		return r;
	if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
		close(*fd);
		*fd = -1;
	}
	return 0;
}

/*
 * A spawned process's output reader: pipes (or the pty) into the ring,
 * watchers poked, the timeout enforced, the drain rule applied. It owns
 * out_fd and err_fd.
 */
static void *pump_main(void *arg)
{
	struct agent_proc *p = arg;
	struct agent_procs *t = p->tab;
	static const enum agent_stream streams[2] = { AGENT_STDOUT, AGENT_STDERR };
	int *fds[2] = { &p->out_fd, &p->err_fd };
	struct agent_drain d = { 0, 0 };
	int64_t deadline = p->timeout_ms ? p->start_us / 1000 + p->timeout_ms : 0;
	uint8_t buf[AGENT_CHUNK_MAX]; /* pump threads get AGENT_THREAD_STACK */
	bool killed = false;

	for (;;) {
		struct pollfd pf[3];
		int64_t now = mono_ms();
		int wait = -1, left, n = 0, idx[2];

		if (deadline && !killed && now >= deadline) {
			agent_proc_kill_group(p, true);
			killed = true;
		}
		if (!d.reap_ms) {
			pthread_mutex_lock(&t->lock);
			if (p->exited)
				d.reap_ms = now;
			pthread_mutex_unlock(&t->lock);
		}
		if (d.reap_ms && p->out_fd < 0 && p->err_fd < 0)
			break;
		left = agent_drain_left(&d, now);
		if (left == 0)
			break;
		wait = left;
		if (deadline && !killed && (wait < 0 || deadline - now < wait))
			wait = (int)(deadline - now);
		agent_output_poll(fds, pf, &n, idx);
		pf[n++] = (struct pollfd){ .fd = p->wake_fd, .events = POLLIN };
		if (poll(pf, (nfds_t)n, wait) < 0) {
			/* ENOMEM: try again shortly rather than stop reading. */
			if (errno != EINTR)
				usleep(10000);
			continue;
		}
		if (pf[n - 1].revents)
			agent_wake_drain(p->wake_fd);
		for (int i = 0; i < 2; i++) {
			ssize_t r = idx[i] >= 0 && pf[idx[i]].revents
				? agent_output_read(fds[i], buf)
				: 0;

			if (r > 0) {
				pthread_mutex_lock(&t->lock);
				agent_ring_write(&p->ring, streams[i], buf, (size_t)r);
				agent_proc_notify(p);
				pthread_mutex_unlock(&t->lock);
				d.last_ms = mono_ms();
			}
		}
	}
	for (int i = 0; i < 2; i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
	pthread_mutex_lock(&t->lock);
	p->done = true;
	p->in_closed = true;
	retire_fd(p, p->in_fd);
	/* Reaped, so the exit hook will not poke it again: a retained entry
	 * keeps as few descriptors as possible. */
	close(p->wake_fd);
	p->wake_fd = -1;
	agent_proc_notify(p);
	pthread_mutex_unlock(&t->lock);
	agent_proc_put(p);
	return NULL;
}
