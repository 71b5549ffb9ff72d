/*
 * agent: kiln_agent and kiln_proc (include/kiln/agent.h) over
 * api/agent-client, the agent protocol client kilnd uses. The wrapper
 * converts options and results and keeps the message per handle; the
 * protocol, its limits and its errno mapping are agent_client's.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <kiln/agent.h>

#include "libkiln/agent_impl.h"
#include "lib/base/mono.h"

_Static_assert((int)KILN_AGENT_FAIL_UNREACHABLE == (int)AGENT_FAIL_CONNECT &&
		       (int)KILN_AGENT_FAIL_HOST == (int)AGENT_FAIL_LOCAL,
	       "failure kinds in the client's order");

/*
 * The agent's own error codes (docs/agent-protocol.md, section 4) come
 * back from agent_client as -EREMOTEIO; an embedder wants the errno the
 * code stands for (the inverse of agent_errno_code).
 */
static int code_errno(enum agent_code code)
{
	switch (code) {
	case AGENT_E_NOT_FOUND:
		return ENOENT;
	case AGENT_E_EXISTS:
		return EEXIST;
	case AGENT_E_NOT_DIRECTORY:
		return ENOTDIR;
	case AGENT_E_IS_DIRECTORY:
		return EISDIR;
	case AGENT_E_NOT_EMPTY:
		return ENOTEMPTY;
	case AGENT_E_PERMISSION_DENIED:
	case AGENT_E_UNSAFE_PATH:
		return EACCES;
	case AGENT_E_READ_ONLY:
		return EROFS;
	case AGENT_E_NO_SPACE:
		return ENOSPC;
	case AGENT_E_TOO_LARGE:
		return EFBIG;
	case AGENT_E_BUSY:
		return EBUSY;
	case AGENT_E_TIMEOUT:
		return ETIMEDOUT;
	case AGENT_E_REFUSED:
		return ECONNREFUSED;
	case AGENT_E_INVALID_STATE:
		return EINVAL;
	case AGENT_E_IO_ERROR:
		return EIO;
	case AGENT_E_BAD_ARCHIVE:
		return EBADMSG; /* the caller's tar: not a libkiln bug */
	default:
		return EPROTO; /* a request the agent found malformed: a libkiln bug */
	}
}

#define user_of agent_user_of

int lk_err_note(struct lk_err *le, int r, const struct agent_client_err *e)
{
	if (r == -EREMOTEIO && e->fail == AGENT_FAIL_AGENT)
		r = -code_errno(e->code);
	return lk_err_set(le, r, e);
}

int lk_err_set(struct lk_err *le, int r, const struct agent_client_err *e)
{
	const char *name = agent_client_err_name(e);

	snprintf(le->msg, sizeof(le->msg), "%s", e->msg[0] ? e->msg : strerror(-r));
	snprintf(le->code, sizeof(le->code), "%s",
		 e->fail != AGENT_FAIL_NONE && name ? name : "host_error");
	/* libkiln's own refusals (a struct too small, no memory) are this
	 * side's too. */
	le->kind = e->fail != AGENT_FAIL_NONE ? (enum kiln_agent_fail)e->fail
					      : KILN_AGENT_FAIL_HOST;
	return r;
}

int agent_fail(kiln_agent *a, int r, const struct agent_client_err *e)
{
	pthread_mutex_lock(&a->lk);
	r = lk_err_note(&a->err, r, e);
	pthread_mutex_unlock(&a->lk);
	return r;
}

int agent_too_small(kiln_agent *a, const char *what)
{
	struct agent_client_err e = { .fail = AGENT_FAIL_LOCAL };

	snprintf(e.msg, sizeof(e.msg), "%s: its size field is too small (set it to sizeof)", what);
	return agent_fail(a, -EINVAL, &e);
}

int kiln_agent_new(const char *vsock_path, kiln_agent **out)
{
	kiln_agent *a;
	int r;

	*out = NULL;
	if (!vsock_path)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	if ((r = agent_client_init(&a->c, vsock_path)) < 0) {
		free(a);
		return r;
	}
	a->c.timeout_ms = KILN_AGENT_TIMEOUT_DEFAULT_MS;
	pthread_mutex_init(&a->lk, NULL);
	*out = a;
	return 0;
}

void kiln_agent_free(kiln_agent *a)
{
	if (!a)
		return;
	pthread_mutex_destroy(&a->lk);
	free(a);
}

int kiln_agent_set_timeout(kiln_agent *a, int timeout_ms)
{
	a->c.timeout_ms = timeout_ms;
	return 0;
}

const char *kiln_agent_errmsg(const kiln_agent *a)
{
	return a->err.msg;
}

const char *kiln_agent_errcode(const kiln_agent *a)
{
	return a->err.code;
}

enum kiln_agent_fail kiln_agent_errkind(const kiln_agent *a)
{
	return a->err.kind;
}

int kiln_agent_wait_ready(kiln_agent *a, int timeout_ms)
{
	struct agent_client_err e = { 0 };
	int r = agent_client_wait_ready(&a->c, timeout_ms, &e);

	return r < 0 ? agent_fail(a, r, &e) : 0;
}

static int64_t realtime_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
}

int kiln_agent_sync_clock(kiln_agent *a, unsigned flags, int64_t *behind_ns)
{
	struct agent_client_err e = { 0 };
	uint8_t seed[AGENT_ENTROPY_MAX];
	int64_t d = 0;
	int r;

	/* As kilnd's sandbox_sync_guest: getrandom never fails once the host booted. */
	if ((flags & KILN_AGENT_RESEED) &&
	    getrandom(seed, sizeof(seed), 0) == (ssize_t)sizeof(seed)) {
		r = agent_client_sync_clock_seed(&a->c, realtime_ns(), seed, sizeof(seed), &d, &e);
		explicit_bzero(seed, sizeof(seed));
	} else {
		r = agent_client_sync_clock(&a->c, realtime_ns(), &d, &e);
	}
	if (r < 0)
		return agent_fail(a, r, &e);
	if (behind_ns)
		*behind_ns = d;
	return 0;
}

int kiln_agent_shutdown(kiln_agent *a, int grace_ms)
{
	struct agent_client_err e = { 0 };
	int r = agent_client_shutdown(&a->c, grace_ms, &e);

	return r < 0 ? agent_fail(a, r, &e) : 0;
}

/* Options in agent_client's terms; env entries point into o->env. */
struct conv {
	struct agent_client_proc_opts p;
	struct agent_env *env;
	char **keys;
};

static void conv_free(struct conv *c)
{
	for (size_t i = 0; c->keys && i < c->p.envc; i++)
		free(c->keys[i]);
	free(c->keys);
	free(c->env);
}

/* run: code and lang instead of argv. */
static int conv_opts(kiln_agent *a, const struct kiln_exec_opts *o, bool run, struct conv *c)
{
	struct agent_client_err e = { 0 };
	size_t n = 0;

	memset(c, 0, sizeof(*c));
	if (!o || o->size < sizeof(size_t) + sizeof(void *) ||
	    (run ? !OPT_HAS(o, code_len) || !o->lang || (!o->code && o->code_len)
		 : !o->argv || !o->argv[0])) {
		e.fail = AGENT_FAIL_REQUEST; /* the caller's options, as an unknown lang is */
		e.code = AGENT_E_BAD_FIELD;
		snprintf(e.msg, sizeof(e.msg),
			 run ? "run: no lang and code given" : "exec: no argv given");
		return agent_fail(a, -EINVAL, &e);
	}
	c->p.argv = o->argv;
	c->p.cwd = o->cwd;
	c->p.shell = !!(o->flags & KILN_AGENT_SHELL);
	c->p.pty = !!(o->flags & KILN_AGENT_PTY);
	c->p.user = user_of(o->flags);
	c->p.timeout_ms = o->timeout_ms;
	c->p.output_cap = o->output_cap;
	c->p.stdin_data = o->stdin_data;
	c->p.stdin_len = o->stdin_len;
	c->p.confine = !!(o->flags & KILN_AGENT_CONFINE);
	/* output_cap 0 is "the default" to the client: DISCARD keeps none. */
	c->p.discard_output = !!(o->flags & KILN_AGENT_DISCARD);
	/* Fields a caller built against 0.1.0 lacks stay 0: the defaults. */
	if (OPT_HAS(o, code_len)) {
		c->p.wait_ms = o->wait_ms;
		c->p.rows = o->rows;
		c->p.cols = o->cols;
		c->p.ring_bytes = o->ring_bytes;
		c->p.code = o->code;
		c->p.code_len = o->code_len;
		if (run && !(c->p.lang = agent_lang_by_name(o->lang))) {
			snprintf(e.msg, sizeof(e.msg),
				 "run: unknown language '%.32s' (python, javascript, typescript, bash)",
				 o->lang);
			e.fail = AGENT_FAIL_REQUEST;
			e.code = AGENT_E_BAD_FIELD;
			return agent_fail(a, -EINVAL, &e);
		}
	}
	while (o->env && o->env[n])
		n++;
	if (n) {
		c->env = calloc(n, sizeof(*c->env));
		c->keys = calloc(n, sizeof(*c->keys));
		if (!c->env || !c->keys) {
			conv_free(c);
			snprintf(e.msg, sizeof(e.msg), "out of memory");
			return agent_fail(a, -ENOMEM, &e);
		}
		for (size_t i = 0; i < n; i++) {
			const char *eq = strchr(o->env[i], '=');

			c->keys[i] = eq ? strndup(o->env[i], (size_t)(eq - o->env[i]))
					: strdup(o->env[i]);
			c->p.envc = i + 1;
			if (!c->keys[i]) {
				conv_free(c);
				snprintf(e.msg, sizeof(e.msg), "out of memory");
				return agent_fail(a, -ENOMEM, &e);
			}
			c->env[i].key = c->keys[i];
			c->env[i].value = eq ? eq + 1 : NULL;
		}
	}
	c->p.env = c->env;
	c->p.envc = n;
	return 0;
}

void agent_put_exit(struct kiln_exit_status *st, const struct agent_client_exit *x,
		    uint64_t host_us)
{
	struct kiln_exit_status s;

	if (!st)
		return;
	memset(&s, 0, sizeof(s));
	s.size = st->size;
	s.id = x->id;
	s.pid = x->pid;
	s.exit_code = x->exit_code;
	s.signal = x->signal;
	s.timed_out = x->timed_out;
	s.stdout_bytes = x->stdout_bytes;
	s.stderr_bytes = x->stderr_bytes;
	s.stdout_truncated = x->stdout_truncated;
	s.stderr_truncated = x->stderr_truncated;
	s.wall_us = x->wall_us;
	s.user_us = x->user_us;
	s.sys_us = x->sys_us;
	s.host_us = host_us;
	/* An older caller's struct is shorter: fill only what it has. */
	memcpy(st, &s, st->size < sizeof(s) ? st->size : sizeof(s));
}

struct relay {
	kiln_output_fn fn;
	void *arg;
};

static int relay_output(void *arg, enum agent_stream stream, const void *data, size_t n)
{
	struct relay *r = arg;

	return r->fn(r->arg, stream == AGENT_STDERR ? KILN_STDERR : KILN_STDOUT, data, n);
}

/* Where an exec's or run's results go; NULL members are not wanted. */
struct exec_out {
	kiln_output_fn fn; /* set: output streamed, not collected */
	void *arg;
	struct kiln_exit_status *st;
	char **out, **err;
	size_t *out_len, *err_len;
	struct kiln_run_result *rr;
};

static void take(uint8_t **from, size_t len, char **to, size_t *to_len)
{
	if (to) {
		*to = (char *)*from;
		*from = NULL;
	}
	if (to_len)
		*to_len = len;
}

/* exec, exec_stream, run, run_stream: one agent_client call each. */
static int exec_any(kiln_agent *a, const struct kiln_exec_opts *o, bool run,
		    const struct exec_out *x)
{
	struct agent_client_exec_result res = { 0 };
	struct agent_client_err e = { 0 };
	struct relay rl = { x->fn, x->arg };
	struct conv c;
	int r;

	if (x->rr && x->rr->size < sizeof(*x->rr))
		return agent_too_small(a, "run result");
	if ((r = conv_opts(a, o, run, &c)))
		return r;
	if (x->fn) {
		c.p.on_output = relay_output;
		c.p.on_output_arg = &rl;
	}
	r = run ? agent_client_run(&a->c, &c.p, &res, &e)
		: agent_client_exec(&a->c, &c.p, &res, &e);
	conv_free(&c);
	if (r < 0) {
		agent_client_exec_result_free(&res);
		return agent_fail(a, r, &e);
	}
	agent_put_exit(x->st, &res.exit, res.host_us);
	take(&res.out, res.out_len, x->out, x->out_len);
	take(&res.err, res.err_len, x->err, x->err_len);
	if (x->rr) {
		x->rr->file_size = res.result_size;
		x->rr->data = NULL;
		take(&res.result, res.result_len, &x->rr->data, &x->rr->len);
	}
	agent_client_exec_result_free(&res);
	return 0;
}

int kiln_agent_exec(kiln_agent *a, const struct kiln_exec_opts *o, struct kiln_exit_status *st,
		    char **out, size_t *out_len, char **err, size_t *err_len)
{
	struct exec_out x = {
		.st = st, .out = out, .out_len = out_len, .err = err, .err_len = err_len
	};

	return exec_any(a, o, false, &x);
}

int kiln_agent_exec_stream(kiln_agent *a, const struct kiln_exec_opts *o, kiln_output_fn fn,
			   void *arg, struct kiln_exit_status *st)
{
	struct exec_out x = { .fn = fn, .arg = arg, .st = st };

	if (!fn)
		return kiln_agent_exec(a, o, st, NULL, NULL, NULL, NULL);
	return exec_any(a, o, false, &x);
}

int kiln_agent_run(kiln_agent *a, const struct kiln_exec_opts *o, struct kiln_exit_status *st,
		   char **out, size_t *out_len, char **err, size_t *err_len,
		   struct kiln_run_result *res)
{
	struct exec_out x = {
		.st = st, .out = out, .out_len = out_len, .err = err, .err_len = err_len, .rr = res
	};

	return exec_any(a, o, true, &x);
}

int kiln_agent_run_stream(kiln_agent *a, const struct kiln_exec_opts *o, kiln_output_fn fn,
			  void *arg, struct kiln_exit_status *st, struct kiln_run_result *res)
{
	struct exec_out x = { .fn = fn, .arg = arg, .st = st, .rr = res };

	return exec_any(a, o, true, &x);
}

int agent_new_proc(kiln_agent *a, struct agent_client_stream *s,
		   const struct agent_client_attached *info, kiln_proc **out)
{
	struct agent_client_err e = { .fail = AGENT_FAIL_LOCAL };
	kiln_proc *p = calloc(1, sizeof(*p));

	if (!p) {
		agent_client_stream_close(s);
		snprintf(e.msg, sizeof(e.msg), "out of memory");
		return agent_fail(a, -ENOMEM, &e);
	}
	p->s = s;
	p->id = info->id;
	p->info = *info;
	p->seq = info->seq;
	*out = p;
	return 0;
}

int kiln_agent_spawn(kiln_agent *a, const struct kiln_exec_opts *o, kiln_proc **out)
{
	struct agent_client_attached info = { 0 };
	struct agent_client_stream *s = NULL;
	struct agent_client_err e = { 0 };
	struct conv c;
	int r;

	*out = NULL;
	if ((r = conv_opts(a, o, false, &c)))
		return r;
	r = agent_client_spawn(&a->c, &c.p, &s, &info, &e);
	conv_free(&c);
	return r < 0 ? agent_fail(a, r, &e) : agent_new_proc(a, s, &info, out);
}

int kiln_agent_attach(kiln_agent *a, uint32_t id, kiln_proc **out)
{
	return kiln_agent_attach_at(a, id, KILN_ATTACH_OLDEST, 0, out);
}

int kiln_agent_proc_wait(kiln_agent *a, uint32_t id, uint32_t timeout_ms,
			 struct kiln_exit_status *st)
{
	struct agent_client_exit x = { 0 };
	struct agent_client_err e = { 0 };
	int r = agent_client_wait(&a->c, id, timeout_ms, &x, &e);

	if (r < 0)
		return agent_fail(a, r, &e);
	agent_put_exit(st, &x, 0);
	return 0;
}

int kiln_agent_proc_signal(kiln_agent *a, uint32_t id, int signo, unsigned flags)
{
	struct agent_client_err e = { 0 };
	int r = agent_client_signal(&a->c, id, signo, !!(flags & KILN_AGENT_GROUP), &e);

	return r < 0 ? agent_fail(a, r, &e) : 0;
}

int kiln_agent_proc_stdin(kiln_agent *a, uint32_t id, const void *data, size_t n, unsigned flags)
{
	struct agent_client_err e = { 0 };
	int r = agent_client_stdin(&a->c, id, data, n, !!(flags & KILN_AGENT_CLOSE), &e);

	return r < 0 ? agent_fail(a, r, &e) : 0;
}

/* A stream's errno stays the client's: -ETIMEDOUT only when nothing came. */
static int pfail(kiln_proc *p, int r, const struct agent_client_err *e)
{
	return lk_err_set(&p->err, r, e);
}

/* The size of ev->exit a caller's ev->size covers (0.1.0's struct is
 * shorter, and ev->exit with it). */
static size_t exit_room(size_t size)
{
	size_t at = offsetof(struct kiln_proc_event, exit);

	if (size <= at)
		return 0;
	size -= at;
	return size < sizeof(struct kiln_exit_status) ? size : sizeof(struct kiln_exit_status);
}

int kiln_proc_next(kiln_proc *p, int timeout_ms, struct kiln_proc_event *ev)
{
	struct agent_client_event x = { 0 };
	struct agent_client_err e = { 0 };
	size_t size = ev->size;
	int r;

	if (p->exited) {
		e.fail = AGENT_FAIL_LOCAL;
		snprintf(e.msg, sizeof(e.msg), "the process's stream ended with its exit");
		return pfail(p, -EPIPE, &e);
	}
	/* A gap is folded into the next event's `lost`; kept across a
	 * timeout, so none is missed. One deadline for the whole call: a
	 * guest sending only gaps must not keep the caller past timeout_ms. */
	int64_t deadline = timeout_ms >= 0 ? mono_deadline_ms(timeout_ms) : 0;

	for (;;) {
		int left = timeout_ms;

		if (timeout_ms >= 0) {
			int64_t ms = deadline - mono_ms();

			left = ms > 0 ? (int)ms : 0;
		}
		if ((r = agent_client_stream_next(p->s, left, &x, &e)) < 0)
			return pfail(p, r, &e);
		if (r == 1) {
			e.fail = AGENT_FAIL_CONNECT;
			snprintf(e.msg, sizeof(e.msg),
				 "the process's stream ended without its exit");
			return pfail(p, -EPIPE, &e);
		}
		if (x.kind != AGENT_EVENT_GAP)
			break;
		/* the guest's counts: saturated, never wrapped */
		p->lost = x.gap_bytes > UINT64_MAX - p->lost ? UINT64_MAX : p->lost + x.gap_bytes;
		p->seq = x.seq + x.gap_bytes;
		/* Buffered gaps answer without waiting: check the deadline here
		 * too, or a guest that keeps sending them holds the caller. */
		if (timeout_ms >= 0 && mono_ms() >= deadline) {
			e.fail = AGENT_FAIL_TIMEOUT;
			e.code = AGENT_E_TIMEOUT;
			snprintf(e.msg, sizeof(e.msg),
				 "no output within %d ms, only lost-byte notices", timeout_ms);
			return pfail(p, -ETIMEDOUT, &e);
		}
	}
	memset(ev, 0, size < sizeof(*ev) ? size : sizeof(*ev));
	ev->size = size;
	ev->lost = p->lost;
	p->lost = 0;
	if (x.kind == AGENT_EVENT_EXIT) {
		p->exited = true;
		ev->exited = 1;
		if (exit_room(size) >= sizeof(size_t)) {
			ev->exit.size = exit_room(size);
			agent_put_exit(&ev->exit, &x.exit, 0);
		}
	} else {
		ev->stream = x.kind == AGENT_EVENT_STDERR ? KILN_STDERR : KILN_STDOUT;
		ev->data = x.data;
		ev->len = x.len;
		p->seq = x.seq + x.len;
	}
	if (size >= offsetof(struct kiln_proc_event, seq) + sizeof(ev->seq))
		ev->seq = x.kind == AGENT_EVENT_EXIT ? p->seq : x.seq;
	return 0;
}

int kiln_proc_write_stdin(kiln_proc *p, const void *data, size_t n, unsigned flags)
{
	struct agent_client_err e = { 0 };
	int r = agent_client_stream_stdin(p->s, data, n, !!(flags & KILN_AGENT_CLOSE), &e);

	return r < 0 ? pfail(p, r, &e) : 0;
}

int kiln_proc_signal(kiln_proc *p, int signo, unsigned flags)
{
	struct agent_client_err e = { 0 };
	int r = agent_client_stream_signal(p->s, signo, !!(flags & KILN_AGENT_GROUP), &e);

	return r < 0 ? pfail(p, r, &e) : 0;
}

uint32_t kiln_proc_id(const kiln_proc *p)
{
	return p->id;
}

const char *kiln_proc_errmsg(const kiln_proc *p)
{
	return p->err.msg;
}

const char *kiln_proc_errcode(const kiln_proc *p)
{
	return p->err.code;
}

enum kiln_agent_fail kiln_proc_errkind(const kiln_proc *p)
{
	return p->err.kind;
}

void kiln_proc_close(kiln_proc *p)
{
	if (!p)
		return;
	agent_client_stream_close(p->s);
	free(p);
}

struct collect {
	char *buf;
	size_t len, cap, max;
};

static int collect(void *arg, const void *data, size_t n)
{
	struct collect *c = arg;

	if (n > c->max - c->len)
		return -EFBIG;
	if (c->len + n + 1 > c->cap) {
		size_t cap = (c->len + n + 1) * 2;
		char *b = realloc(c->buf, cap);

		if (!b)
			return -ENOMEM;
		c->buf = b;
		c->cap = cap;
	}
	memcpy(c->buf + c->len, data, n);
	c->len += n;
	return 0;
}

int kiln_agent_file_read(kiln_agent *a, const char *path, unsigned flags, size_t max, void **data,
			 size_t *len)
{
	struct agent_client_read_opts o = { 0 };
	struct agent_client_err e = { 0 };
	struct agent_client_read_info info = { 0 };
	struct collect c = { .max = max };
	int r;

	*data = NULL;
	o.user = user_of(flags);
	r = agent_client_read(&a->c, path, &o, collect, &c, &info, &e);
	if (r < 0) {
		free(c.buf);
		if (r == -EFBIG && !e.msg[0])
			snprintf(e.msg, sizeof(e.msg), "%s: larger than %zu bytes", path, max);
		return agent_fail(a, r, &e);
	}
	if (!c.buf && !(c.buf = malloc(1))) {
		snprintf(e.msg, sizeof(e.msg), "out of memory");
		return agent_fail(a, -ENOMEM, &e);
	}
	c.buf[c.len] = '\0';
	*data = c.buf;
	if (len)
		*len = c.len;
	return 0;
}

int kiln_agent_file_write(kiln_agent *a, const char *path, unsigned flags, int mode,
			  const void *data, size_t n)
{
	struct agent_client_write_opts o = { 0 };
	struct agent_client_err e = { 0 };
	int r;

	o.parents = !!(flags & KILN_AGENT_PARENTS);
	o.exclusive = !!(flags & KILN_AGENT_EXCLUSIVE);
	o.append = !!(flags & KILN_AGENT_APPEND);
	o.has_mode = mode >= 0;
	o.mode = mode >= 0 ? (uint32_t)mode : 0;
	o.user = user_of(flags);
	r = agent_client_write(&a->c, path, &o, data, n, NULL, &e);
	return r < 0 ? agent_fail(a, r, &e) : 0;
}

/* A tree to or from the guest as a tar stream on fd. */
static int tar(kiln_agent *a,
	       int (*call)(const struct agent_client *c, const char *path, enum agent_user user,
			   int fd, struct agent_client_tar_stats *stats,
			   struct agent_client_err *err),
	       const char *path, unsigned flags, int fd)
{
	struct agent_client_err e = { 0 };
	struct agent_client_tar_stats st = { 0 };
	int r = call(&a->c, path, user_of(flags), fd, &st, &e);

	return r < 0 ? agent_fail(a, r, &e) : 0;
}

int kiln_agent_tar_upload(kiln_agent *a, const char *dir, unsigned flags, int fd)
{
	return tar(a, agent_client_tar_upload, dir, flags, fd);
}

int kiln_agent_tar_download(kiln_agent *a, const char *path, unsigned flags, int fd)
{
	return tar(a, agent_client_tar_download, path, flags, fd);
}
