/*
 * Spawned processes (docs/agent-protocol.md, section 7.4): `spawn` and
 * `attach` turn their connection into an attached stream; `stdin`,
 * `signal`, `resize`, `wait` and `list_processes` as requests of their own.
 *
 * An attached stream is one thread multiplexing three things with poll():
 * the process's ring (woken by its watcher eventfd) towards the host, the
 * host's stdin/signal/resize messages, and pending stdin bytes towards the
 * process. Pending stdin stops the reading of further messages (section 3,
 * backpressure) but never the output.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "guest-init/agent/agent_serve.h"

struct stream {
	struct agent_conn *c;
	struct agent_proc *p;
	struct agent_watch w;
	uint64_t cursor;
	uint8_t *out; /* one chunk of ring output */
	uint8_t *in;  /* one chunk of stdin on its way to the process */
	size_t in_len, in_off;
	bool close_after; /* the current stdin message ends with close */
};

static void drain_efd(int efd)
{
	uint64_t v;
	ssize_t r = read(efd, &v, sizeof(v));

	(void)r; /* EAGAIN: nothing was pending */
}

static int watch_start(struct agent_proc *p, struct agent_watch *w, bool stream)
{
	w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	w->stream = stream;
	if (w->efd < 0)
		return -errno;
	pthread_mutex_lock(&p->tab->lock);
	agent_proc_watch_add(p, w);
	pthread_mutex_unlock(&p->tab->lock);
	return 0;
}

static void watch_stop(struct agent_proc *p, struct agent_watch *w)
{
	pthread_mutex_lock(&p->tab->lock);
	agent_proc_watch_del(p, w);
	pthread_mutex_unlock(&p->tab->lock);
	close(w->efd);
}

static struct agent_proc *find(struct agent *a, struct agent_conn *c, const struct agent_msg *m)
{
	struct agent_proc *p = agent_proc_get(&a->procs, m->u.ctl.id);

	if (!p)
		agent_reply_error(
			c, AGENT_E_NOT_FOUND,
			"%s: no process with id %u (never spawned, or evicted from the table after it exited); list_processes shows the table",
			agent_type_name(m->type), m->u.ctl.id);
	return p;
}

static int send_exit(struct agent_conn *c, const struct agent_exit *e)
{
	struct agent_line l;

	return agent_conn_send_line(c, &l, agent_line_exit(&l, e));
}

/* ---- the attached stream ---- */

/* Move pending stdin on; finish with close when the message asked for it. */
static void stream_stdin(struct stream *s)
{
	size_t n;

	if (s->in_off < s->in_len) {
		switch (agent_proc_write_stdin(s->p, s->in + s->in_off, s->in_len - s->in_off,
					       &n)) {
		case AGENT_STDIN_WROTE:
			s->in_off += n;
			break;
		case AGENT_STDIN_FULL:
			return;
		default:
			/* Best effort on a stream (7.4): exited or closed drops it. */
			s->in_off = s->in_len;
			break;
		}
		if (s->in_off < s->in_len)
			return;
	}
	if (s->close_after && !s->c->payload_left) {
		if (agent_proc_eof_stdin(s->p) == AGENT_STDIN_FULL)
			return; /* the terminal's input queue is full: again when writable */
		s->close_after = false;
	}
}

static bool stdin_pending(const struct stream *s)
{
	return s->in_off < s->in_len || (s->close_after && !s->c->payload_left);
}

/* One message or payload chunk from the host. False: the stream ends. */
static bool stream_input(struct stream *s)
{
	struct agent_msg m;
	struct agent_err err;
	ssize_t n;
	int r;

	if (s->c->payload_left) {
		n = agent_conn_payload(s->c, s->in, AGENT_CHUNK_MAX, &err);
		if (n < 0)
			return false; /* the host left inside a stdin message: detach */
		s->in_len = (size_t)n;
		s->in_off = 0;
		stream_stdin(s);
		return true;
	}
	r = agent_conn_next(s->c, AGENT_CTX_ATTACHED, &m, &err);
	if (r == 1)
		return false; /* the host closed: detach, the process runs on */
	if (r < 0) {
		agent_conn_send_err(s->c, &err);
		return false;
	}
	switch (m.type) {
	case AGENT_T_STDIN:
		s->close_after = m.u.ctl.close;
		s->in_len = s->in_off = 0;
		if (!m.len)
			stream_stdin(s);
		break;
	case AGENT_T_SIGNAL:
		agent_proc_signal(s->p, m.u.ctl.signo, m.u.ctl.group);
		break;
	case AGENT_T_RESIZE:
		agent_proc_resize(s->p, m.u.ctl.rows, m.u.ctl.cols);
		break;
	default:
		break; /* the parser admits nothing else on a stream */
	}
	agent_msg_free(&m);
	return true;
}

/* Send the next ring event. 1: sent something, 0: nothing new, -1: stop. */
static int stream_output(struct stream *s)
{
	struct agent_ring_chunk ch;
	struct agent_exit e;
	struct agent_line l;
	enum agent_ring_kind k;
	bool done;
	int r;

	pthread_mutex_lock(&s->p->tab->lock);
	k = agent_ring_read(&s->p->ring, &s->cursor, s->out, AGENT_CHUNK_MAX, &ch);
	done = s->p->done;
	if (k == AGENT_RING_NONE && done)
		agent_proc_exit_info(s->p, &e);
	pthread_mutex_unlock(&s->p->tab->lock);
	switch (k) {
	case AGENT_RING_GAP:
		r = agent_conn_send_line(s->c, &l, agent_line_gap(&l, ch.seq, ch.len));
		return r < 0 ? -1 : 1;
	case AGENT_RING_DATA:
		r = agent_line_chunk(&l, ch.stream, (int64_t)ch.seq, ch.len);
		if (r == 0) {
			r = agent_conn_send(s->c, &l, s->out, (size_t)ch.len);
			agent_line_free(&l);
		}
		return r < 0 ? -1 : 1;
	default:
		if (!done)
			return 0;
		send_exit(s->c, &e); /* all output was sent: the stream ends */
		return -1;
	}
}

static void stream_run(struct agent_conn *c, struct agent_proc *p, uint64_t cursor)
{
	struct stream s = { .c = c, .p = p, .cursor = cursor };

	agent_conn_deadline(c, 0); /* attached streams have no idle timeout */
	s.out = malloc(AGENT_CHUNK_MAX);
	s.in = malloc(AGENT_CHUNK_MAX);
	if (!s.out || !s.in || watch_start(p, &s.w, true) < 0) {
		agent_reply_error(c, AGENT_E_BUSY,
				  "%s: out of memory or descriptors; attach again later",
				  p->pty ? "pty stream" : "stream");
		free(s.out);
		free(s.in);
		return;
	}
	for (;;) {
		struct pollfd pf[3];
		int n = 0, sock, in = -1, got = stream_output(&s);
		bool pending, buffered;

		if (got < 0)
			break;
		pending = stdin_pending(&s);
		buffered = !pending && (c->rlen || c->eof);
		pf[n++] = (struct pollfd){ .fd = s.w.efd, .events = POLLIN };
		/* With stdin pending no message is read (backpressure), but a
		 * host that leaves is still noticed. */
		sock = n;
		pf[n++] = (struct pollfd){
			.fd = c->fd, .events = (short)(pending ? POLLRDHUP : POLLIN | POLLRDHUP)
		};
		if (pending) {
			in = n;
			/* The number stays valid while p is referenced (agent_proc.h). */
			pf[n++] = (struct pollfd){ .fd = p->in_fd, .events = POLLOUT };
		}
		if (poll(pf, (nfds_t)n, got || buffered ? 0 : -1) < 0) {
			if (errno != EINTR)
				usleep(10000);
			continue;
		}
		if (pf[0].revents)
			drain_efd(s.w.efd);
		if (in >= 0 && pf[in].revents)
			stream_stdin(&s);
		if (pending && (pf[sock].revents & (POLLRDHUP | POLLHUP | POLLERR)))
			break; /* detach: the process runs on */
		if (!pending && (buffered || pf[sock].revents) && !stream_input(&s))
			break;
	}
	watch_stop(p, &s.w);
	free(s.out);
	free(s.in);
}

void agent_serve_spawn(struct agent *a, struct agent_conn *c, struct agent_msg *m)
{
	struct agent_err err;
	struct agent_line l;
	struct agent_proc *p = agent_proc_start(&a->procs, &m->u.proc, true, &err);

	if (!p) {
		agent_conn_send_err(c, &err);
		return;
	}
	if (agent_conn_send_line(c, &l, agent_line_spawned(&l, p->id, p->pid)) == 0)
		stream_run(c, p, 0);
	agent_proc_put(p);
}

void agent_serve_attach(struct agent *a, struct agent_conn *c, struct agent_msg *m)
{
	const struct agent_ctl_req *r = &m->u.ctl;
	struct agent_proc *p = find(a, c, m);
	struct agent_line l;
	uint64_t seq;
	bool running;

	if (!p)
		return;
	pthread_mutex_lock(&a->procs.lock);
	seq = agent_ring_attach_seq(&p->ring, r->from_now, r->has_from, r->from);
	running = !p->exited;
	pthread_mutex_unlock(&a->procs.lock);
	if (agent_conn_send_line(c, &l,
				 agent_line_attached(&l, p->id, p->pid, p->pty, running, seq)) == 0)
		stream_run(c, p, seq);
	agent_proc_put(p);
}

/* ---- requests with an id ---- */

/*
 * Wait for `fd` to be ready for `events` (fd < 0: only for a change of the
 * process), the process to change, or timeout_ms (-1: none). 1: something
 * happened (re-check), 0: timed out, -1: the host left.
 */
static int wait_for(struct agent_conn *c, int efd, int fd, short events, int timeout_ms)
{
	struct pollfd pf[3] = {
		{ .fd = c->fd, .events = POLLRDHUP },
		{ .fd = efd, .events = POLLIN },
		{ .fd = fd, .events = events },
	};
	int r;

	if (c->eof)
		return -1;
	r = poll(pf, fd >= 0 ? 3 : 2, timeout_ms);
	if (r < 0)
		return 1;
	if (pf[0].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))
		return -1;
	if (pf[1].revents)
		drain_efd(efd);
	return r > 0;
}

static void stdin_refused(struct agent_conn *c, const struct agent_proc *p,
			  enum agent_stdin_res res, uint64_t written)
{
	if (res == AGENT_STDIN_EXITED)
		agent_reply_error(
			c, AGENT_E_INVALID_STATE,
			"stdin: process %u has exited (%llu bytes of this request were written)",
			p->id, (unsigned long long)written);
	else
		agent_reply_error(
			c, AGENT_E_INVALID_STATE,
			"stdin: process %u's stdin is closed (%llu bytes of this request were written)",
			p->id, (unsigned long long)written);
}

void agent_serve_stdin(struct agent *a, struct agent_conn *c, struct agent_msg *m)
{
	struct agent_proc *p = find(a, c, m);
	struct agent_watch w;
	struct agent_err err;
	enum agent_stdin_res res = AGENT_STDIN_WROTE;
	uint64_t written = 0;
	uint8_t *buf;
	size_t n, off;
	ssize_t got;

	if (!p)
		return;
	pthread_mutex_lock(&a->procs.lock);
	if (p->exited)
		res = AGENT_STDIN_EXITED;
	else if (p->in_closed)
		res = AGENT_STDIN_CLOSED;
	pthread_mutex_unlock(&a->procs.lock);
	if (res != AGENT_STDIN_WROTE) {
		stdin_refused(c, p, res, 0);
		agent_proc_put(p);
		return;
	}
	buf = malloc(AGENT_CHUNK_MAX);
	if (!buf || watch_start(p, &w, false) < 0) {
		agent_reply_error(c, AGENT_E_BUSY,
				  "stdin: out of memory or descriptors; retry later");
		free(buf);
		agent_proc_put(p);
		return;
	}
	while (c->payload_left) {
		/* The host gets the request timeout for each chunk; the
		 * process may take as long as it likes to read them. */
		agent_conn_deadline(c, mono_ms() + AGENT_REQUEST_TIMEOUT_MS);
		got = agent_conn_payload(c, buf, AGENT_CHUNK_MAX, &err);
		if (got < 0) {
			agent_conn_send_err(c, &err);
			goto out;
		}
		for (off = 0; off < (size_t)got;) {
			res = agent_proc_write_stdin(p, buf + off, (size_t)got - off, &n);
			if (res == AGENT_STDIN_WROTE) {
				off += n;
				written += n;
			} else if (res != AGENT_STDIN_FULL) {
				stdin_refused(c, p, res, written);
				goto out;
			} else if (wait_for(c, w.efd, p->in_fd, POLLOUT, -1) < 0) {
				goto out; /* the host left: stop, what was written stays */
			}
		}
	}
	while (m->u.ctl.close) {
		res = agent_proc_eof_stdin(p);
		if (res == AGENT_STDIN_WROTE)
			break;
		if (res != AGENT_STDIN_FULL) {
			stdin_refused(c, p, res, written);
			goto out;
		}
		if (wait_for(c, w.efd, p->in_fd, POLLOUT, -1) < 0)
			goto out;
	}
	agent_reply_ok(c);
out:
	watch_stop(p, &w);
	free(buf);
	agent_proc_put(p);
}

void agent_serve_signal(struct agent *a, struct agent_conn *c, struct agent_msg *m)
{
	struct agent_proc *p = find(a, c, m);
	int r;

	if (!p)
		return;
	r = agent_proc_signal(p, m->u.ctl.signo, m->u.ctl.group);
	if (r == -ESRCH)
		agent_reply_error(c, AGENT_E_INVALID_STATE, "signal: process %u has exited", p->id);
	else if (r < 0)
		agent_reply_error(c, agent_errno_code(-r),
				  "signal: sending signal %d to process %u: %s", m->u.ctl.signo,
				  p->id, strerror(-r));
	else
		agent_reply_ok(c);
	agent_proc_put(p);
}

void agent_serve_resize(struct agent *a, struct agent_conn *c, struct agent_msg *m)
{
	struct agent_proc *p = find(a, c, m);
	int r;

	if (!p)
		return;
	r = agent_proc_resize(p, m->u.ctl.rows, m->u.ctl.cols);
	if (r == -ESRCH)
		agent_reply_error(c, AGENT_E_INVALID_STATE, "resize: process %u has exited", p->id);
	else if (r == -ENOTTY)
		agent_reply_error(c, AGENT_E_INVALID_STATE,
				  "resize: process %u has no terminal; spawn it with \"pty\": true",
				  p->id);
	else if (r < 0)
		agent_reply_error(c, AGENT_E_IO_ERROR, "resize: process %u: %s", p->id,
				  strerror(-r));
	else
		agent_reply_ok(c);
	agent_proc_put(p);
}

void agent_serve_wait(struct agent *a, struct agent_conn *c, struct agent_msg *m)
{
	struct agent_proc *p = find(a, c, m);
	int64_t deadline = 0;
	struct agent_watch w;
	struct agent_exit e;

	if (!p)
		return;
	if (watch_start(p, &w, false) < 0) {
		agent_reply_error(c, AGENT_E_BUSY, "wait: out of descriptors; retry later");
		agent_proc_put(p);
		return;
	}
	if (m->u.ctl.timeout_ms)
		deadline = mono_ms() + m->u.ctl.timeout_ms;
	for (;;) {
		bool done;
		int left = -1;

		pthread_mutex_lock(&a->procs.lock);
		done = p->done;
		if (done)
			agent_proc_exit_info(p, &e);
		pthread_mutex_unlock(&a->procs.lock);
		if (done) {
			send_exit(c, &e);
			break;
		}
		if (deadline) {
			int64_t l = deadline - mono_ms();

			if (l <= 0) {
				agent_reply_error(c, AGENT_E_TIMEOUT,
						  "wait: process %u is still running after %u ms",
						  p->id, m->u.ctl.timeout_ms);
				break;
			}
			left = (int)l;
		}
		if (wait_for(c, w.efd, -1, 0, left) < 0)
			break; /* the host stopped waiting */
	}
	watch_stop(p, &w);
	agent_proc_put(p);
}

void agent_serve_list_processes(struct agent *a, struct agent_conn *c, struct agent_msg *m)
{
	struct agent_proc **v;
	struct agent_process_info info;
	struct agent_kv kv;
	struct agent_line l;
	int n = agent_procs_list(&a->procs, &v), i, sent = 0;

	(void)m;
	if (n < 0) {
		agent_reply_error(c, AGENT_E_BUSY, "list_processes: out of memory; retry later");
		return;
	}
	for (i = 0; i < n; i++) {
		pthread_mutex_lock(&a->procs.lock);
		agent_proc_info(v[i], &info);
		pthread_mutex_unlock(&a->procs.lock);
		/* argv is fixed for the entry's life, so the line is built unlocked. */
		if (sent == i && agent_conn_send_line(c, &l, agent_line_process(&l, &info)) == 0)
			sent++;
	}
	if (sent == n) {
		kv = AGENT_INT("count", n);
		agent_conn_send_line(c, &l, agent_line_end(&l, &kv, 1));
	}
	for (i = 0; i < n; i++)
		agent_proc_put(v[i]);
	free(v);
}
