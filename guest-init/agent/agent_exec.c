/*
 * exec (docs/agent-protocol.md, section 7.3): a process tied to its
 * connection. The connection's thread feeds it the request's stdin, sends
 * its output as it arrives (at most output_cap per stream, the rest read
 * and counted), enforces the timeout, watches the host (gone or talking
 * out of turn: kill the group), and finally sends `exit`.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "guest-init/agent/agent_serve.h"

struct exec_state {
	struct agent_conn *c;
	struct agent_proc *p;
	uint8_t *in; /* the request's stdin payload */
	size_t in_len, in_off;
	bool stdin_done;
	uint32_t cap;
	uint64_t total[2], sent[2];
	bool trunc[2];
	int64_t deadline_ms; /* 0: no timeout */
	bool killed;         /* the timeout fired */
	bool gone;           /* the host left or broke the protocol */
};

/*
 * Sends block while the host does not read (section 3, backpressure), but
 * not past a pending timeout: the process must still be killed on time.
 */
static void send_limit(struct exec_state *s, int64_t now)
{
	int64_t ms = s->deadline_ms && !s->killed ? s->deadline_ms - now : 0;
	struct timeval tv;

	if (ms < 0)
		return;
	if (s->deadline_ms && !s->killed && ms == 0)
		ms = 1;
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	setsockopt(s->c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* Send one output chunk within the cap. False when the host is gone. */
static bool send_output(struct exec_state *s, int i, const uint8_t *buf, size_t n)
{
	static const enum agent_stream streams[2] = { AGENT_STDOUT, AGENT_STDERR };
	uint64_t room = s->cap > s->sent[i] ? s->cap - s->sent[i] : 0;
	size_t keep = n < room ? n : (size_t)room;
	struct agent_line l;
	int r;

	s->total[i] += n;
	if (keep < n)
		s->trunc[i] = true;
	if (!keep)
		return true;
	if (s->deadline_ms && !s->killed)
		send_limit(s, mono_ms());
	r = agent_line_chunk(&l, streams[i], -1, keep);
	if (r == 0) {
		r = agent_conn_send(s->c, &l, buf, keep);
		agent_line_free(&l);
	}
	if (r == -EAGAIN || r == -EWOULDBLOCK) {
		/* The timeout passed while the host was not reading. The line
		 * may be half sent, so the connection cannot go on. */
		agent_proc_kill_group(s->p, true);
		s->killed = true;
	}
	if (r < 0)
		return false;
	s->sent[i] += keep;
	return true;
}

/*
 * Anything from the host after the request ends the exec (section 3,
 * context "none"): EOF or a reset means it left; bytes are a protocol
 * error, answered once. True when the exec must stop.
 */
static bool host_interrupts(struct exec_state *s, short revents)
{
	uint8_t b;
	ssize_t r;

	if (!s->c->rlen && !s->c->eof) {
		if (!revents)
			return false;
		r = recv(s->c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
			return true;
		if (r < 0)
			return (revents & (POLLHUP | POLLERR | POLLRDHUP)) != 0;
	} else if (s->c->eof && !s->c->rlen) {
		return true;
	}
	agent_reply_error(
		s->c, AGENT_E_UNEXPECTED_TYPE,
		"exec: the host sent more after the request; an exec connection takes nothing more, so the process was killed");
	return true;
}

static void feed_stdin(struct exec_state *s)
{
	size_t n;

	switch (agent_proc_write_stdin(s->p, s->in + s->in_off, s->in_len - s->in_off, &n)) {
	case AGENT_STDIN_WROTE:
		s->in_off += n;
		if (s->in_off < s->in_len)
			return;
		break;
	case AGENT_STDIN_FULL:
		return;
	default:
		/* The process exited or closed its stdin: the rest is dropped. */
		break;
	}
	agent_proc_eof_stdin(s->p);
	s->stdin_done = true;
	free(s->in);
	s->in = NULL;
}

static void exec_loop(struct exec_state *s, uint8_t *buf)
{
	struct agent_proc *p = s->p;
	int *fds[2] = { &p->out_fd, &p->err_fd };
	struct agent_drain d = { 0, 0 };

	for (;;) {
		struct pollfd pf[5];
		int idx[2] = { -1, -1 }, in_idx = -1, n = 0, wait, left;
		int64_t now = mono_ms();

		if (s->deadline_ms && !s->killed && now >= s->deadline_ms) {
			agent_proc_kill_group(p, true);
			s->killed = true;
			send_limit(s, now);
		}
		if (!d.reap_ms) {
			pthread_mutex_lock(&p->tab->lock);
			if (p->exited)
				d.reap_ms = now;
			pthread_mutex_unlock(&p->tab->lock);
		}
		if (d.reap_ms && *fds[0] < 0 && *fds[1] < 0)
			return;
		left = agent_drain_left(&d, now);
		if (left == 0)
			return;
		wait = left;
		if (s->deadline_ms && !s->killed && (wait < 0 || s->deadline_ms - now < wait))
			wait = (int)(s->deadline_ms - now);
		agent_output_poll(fds, pf, &n, idx);
		if (!s->stdin_done) {
			in_idx = n;
			pf[n++] = (struct pollfd){ .fd = p->in_fd, .events = POLLOUT };
		}
		pf[n++] = (struct pollfd){ .fd = p->wake_fd, .events = POLLIN };
		pf[n++] = (struct pollfd){ .fd = s->c->fd, .events = POLLIN | POLLRDHUP };
		if (s->c->rlen || s->c->eof)
			wait = 0;
		if (poll(pf, (nfds_t)n, wait) < 0) {
			if (errno != EINTR)
				usleep(10000); /* ENOMEM: retry rather than abandon the process */
			continue;
		}
		if (host_interrupts(s, pf[n - 1].revents)) {
			s->gone = true;
			return;
		}
		if (pf[n - 2].revents)
			agent_wake_drain(p->wake_fd);
		if (in_idx >= 0 && pf[in_idx].revents)
			feed_stdin(s);
		for (int i = 0; i < 2; i++) {
			ssize_t r = idx[i] >= 0 && pf[idx[i]].revents
				? agent_output_read(fds[i], buf)
				: 0;

			if (r > 0) {
				d.last_ms = mono_ms();
				if (!send_output(s, i, buf, (size_t)r)) {
					s->gone = true;
					return;
				}
			}
		}
	}
}

void agent_exec_run(struct agent *a, struct agent_conn *c, const struct agent_proc_req *req,
		    uint8_t *in, size_t in_len, agent_exec_hook before_exit, void *hook_arg)
{
	struct exec_state s = { .c = c, .in = in, .in_len = in_len, .cap = req->output_cap };
	struct agent_err err;
	struct agent_exit e;
	struct agent_line l;
	uint8_t *buf;

	agent_conn_deadline(c, 0);
	buf = malloc(AGENT_CHUNK_MAX);
	s.p = buf ? agent_proc_start(&a->procs, req, false, &err) : NULL;
	if (!s.p) {
		if (!buf)
			agent_err_set(&err, AGENT_E_BUSY, "exec: out of memory; retry later");
		agent_conn_send_err(c, &err);
		free(buf);
		free(s.in);
		return;
	}
	if (req->timeout_ms)
		s.deadline_ms = s.p->start_us / 1000 + req->timeout_ms;
	if (!s.in_len) {
		agent_proc_eof_stdin(s.p);
		s.stdin_done = true;
	}
	exec_loop(&s, buf);
	if (s.gone) {
		/* Section 3: a disconnected exec is killed, reaped (agent_proc_put
		 * waits for the reaper) and its result discarded. */
		agent_proc_kill_group(s.p, false);
	} else {
		pthread_mutex_lock(&a->procs.lock);
		agent_proc_exit_info(s.p, &e);
		pthread_mutex_unlock(&a->procs.lock);
		e.is_exec = true;
		e.stdout_bytes = s.total[0];
		e.stderr_bytes = s.total[1];
		e.stdout_truncated = s.trunc[0];
		e.stderr_truncated = s.trunc[1];
		if (!before_exit || before_exit(hook_arg, c) == 0)
			agent_conn_send_line(c, &l, agent_line_exit(&l, &e));
	}
	for (int i = 0; i < 2; i++) {
		int *fd = i ? &s.p->err_fd : &s.p->out_fd;

		if (*fd >= 0)
			close(*fd);
		*fd = -1;
	}
	free(buf);
	free(s.in);
	agent_proc_put(s.p);
}

int agent_exec_payload(struct agent_conn *c, const struct agent_msg *m, uint8_t **out)
{
	size_t n = (size_t)m->len;
	struct agent_err err;

	*out = NULL;
	if (!n)
		return 0;
	*out = malloc(n);
	if (!*out) {
		agent_reply_error(c, AGENT_E_BUSY,
				  "%s: no memory for a %zu-byte payload; retry later",
				  agent_type_name(m->type), n);
		return -ENOMEM;
	}
	if (agent_conn_payload_all(c, *out, n, &err) < 0) {
		agent_conn_send_err(c, &err);
		free(*out);
		*out = NULL;
		return -EIO;
	}
	return 0;
}

void agent_serve_exec(struct agent *a, struct agent_conn *c, struct agent_msg *m)
{
	uint8_t *in;

	/* The process starts only after the whole request arrived (7.3). */
	if (agent_exec_payload(c, m, &in) == 0)
		agent_exec_run(a, c, &m->u.proc, in, (size_t)m->len, NULL, NULL);
}
