/*
 * GET /v1/sandboxes/{id}/processes/{proc}/tty (docs/api.md, "The tty
 * stream"): an HTTP/1.1 upgrade to a raw byte stream with a process's
 * terminal. Client bytes go to the process's stdin (minus the resize
 * escape of tty_escape.h); the process's output comes back as it is.
 *
 * The attach happens before the 101, so an unknown process or a stopped
 * sandbox gets its normal error status. The session then runs in the
 * connection's own thread (the HTTP server's thread per connection
 * lets an upgrade handler block) as one poll loop over the client socket
 * and the agent stream.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "api/kilnd/endpoints/processes.h"
#include "api/kilnd/endpoints/handlers.h"
#include "api/kilnd/bodies/proc_spec.h"
#include "api/kilnd/bodies/tty_escape.h"
#include "lib/base/fd_io.h"

#define TTY_PROTOCOL "kiln-tty"
/* Client bytes per read. */
#define TTY_IN_CHUNK 16384
/* A lone ESC (the Escape key) could begin a resize escape; held this
 * long without more input, it goes to the process after all, so a
 * full-screen program does not wait for the next key to see it. */
#define TTY_ESC_HOLD_MS 100
/* Longest wait in any poll: the loop looks at kilnd shutting down. */
#define TTY_POLL_MS 1000

struct tty_session {
	struct kilnd *d;
	kiln_proc *p;
	struct tty_esc esc;
	int64_t held_since; /* mono ms when the escape parser began holding */
};

static void tty_release(void *cls)
{
	struct tty_session *t = cls;

	kiln_proc_close(t->p);
	free(t);
}

/* fd_io's waiter for the client socket: wait a poll tick, and give up
 * when kilnd stops. */
static int client_wait(void *arg, int fd, short events)
{
	struct tty_session *t = arg;
	struct pollfd p = { .fd = fd, .events = events };

	if (atomic_load(&t->d->shutting_down))
		return -ESHUTDOWN;
	poll(&p, 1, TTY_POLL_MS);
	return 0;
}

/* All of d[0..n) to the client; false when it is gone or kilnd stops. */
static bool client_send(struct tty_session *t, int sock, const uint8_t *d, size_t n)
{
	return fd_io_put_all(sock, d, n, FD_IO_SEND, &(struct fd_io_waiter){ client_wait, t }) == 0;
}

/* Client input through the escape parser to the process. */
static bool forward_input(struct tty_session *t, const uint8_t *in, size_t n)
{
	uint8_t out[TTY_IN_CHUNK + TTY_ESC_MAX];

	while (n) {
		size_t olen = 0, k, take = n < TTY_IN_CHUNK ? n : TTY_IN_CHUNK;
		enum tty_esc_ev ev;
		uint16_t rows = 0, cols = 0;
		bool was_holding = tty_esc_pending(&t->esc) > 0;

		k = tty_esc_feed(&t->esc, in, take, out, &olen, &ev, &rows, &cols);
		in += k;
		n -= k;
		if (olen && kiln_proc_write_stdin(t->p, out, olen, 0))
			return false;
		/* Resizes are best effort on the agent's side too (ignored
		 * without a PTY); a bad size is dropped. */
		if (ev == TTY_ESC_RESIZE && kiln_proc_resize(t->p, rows, cols))
			return false;
		if (tty_esc_pending(&t->esc) && (!was_holding || ev != TTY_ESC_NONE))
			t->held_since = mono_ms();
	}
	return true;
}

/* The escape parser held a prefix for TTY_ESC_HOLD_MS: it was input. */
static bool flush_held(struct tty_session *t)
{
	uint8_t out[TTY_ESC_MAX];
	size_t olen = 0;

	tty_esc_flush(&t->esc, out, &olen);
	return kiln_proc_write_stdin(t->p, out, olen, 0) == 0;
}

/* One agent event to the client. 1: the stream ended (the process
 * exited); 0: go on; -1: stop. */
static int forward_output(struct tty_session *t, int sock)
{
	struct kiln_proc_event ev = { .size = sizeof(ev) };
	int r = kiln_proc_next(t->p, 1, &ev);

	if (r == -ETIMEDOUT)
		return 0;
	if (r < 0)
		return -1;
	/* Lost bytes: nothing to say in a raw stream; exit: the close follows. */
	if (ev.exited)
		return 1;
	return client_send(t, sock, ev.data, ev.len) ? 0 : -1;
}

static void tty_run(void *cls, const char *extra, size_t extra_n, int sock)
{
	uint8_t in[TTY_IN_CHUNK];
	struct tty_session *t = cls;
	bool in_open = true;

	/* Bytes the client sent right behind its request. */
	if (extra_n && !forward_input(t, (const uint8_t *)extra, extra_n))
		return;
	while (!atomic_load(&t->d->shutting_down)) {
		struct pollfd p[2] = {
			/* POLLHUP comes without asking: after a half-close, only
			 * the full close is of interest. */
			{ .fd = sock, .events = in_open ? POLLIN : 0 },
			{ .fd = kiln_proc_fd(t->p), .events = POLLIN },
		};
		int timeout = TTY_POLL_MS, r;

		if (kiln_proc_pending(t->p)) {
			timeout = 0;
		} else if (tty_esc_pending(&t->esc)) {
			int64_t left = t->held_since + TTY_ESC_HOLD_MS - mono_ms();

			timeout = left < 0 ? 0 : (int)left;
		}
		if (poll(p, 2, timeout) < 0 && errno != EINTR)
			return;
		if (tty_esc_pending(&t->esc) && mono_ms() - t->held_since >= TTY_ESC_HOLD_MS &&
		    !flush_held(t))
			return;
		if ((p[1].revents & (POLLIN | POLLHUP | POLLERR)) || kiln_proc_pending(t->p)) {
			r = forward_output(t, sock);
			if (r != 0)
				return;
		}
		if (p[0].revents & POLLIN) {
			ssize_t n = recv(sock, in, sizeof(in), 0);

			if (n > 0 && !forward_input(t, in, (size_t)n))
				return;
			if (n == 0)
				in_open = false; /* half-closed: output goes on until the exit */
			if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				return;
			continue;
		}
		if (p[0].revents & (POLLHUP | POLLERR | POLLNVAL))
			return; /* gone: the attach closes, the process runs on */
	}
}

/* Does the comma-separated header value list the token (any case)? */
void handle_proc_tty(struct http_req *r)
{
	struct tty_session *t;
	kiln_agent *a = NULL;
	struct proc_from from;
	struct api_err e;
	uint32_t id;

	if (proc_query_tty(r->kv, r->nkv, &from, &e) || proc_target(r, &a, &id, &e)) {
		http_error(r, &e);
		return;
	}
	if (!http_has_token(http_header(r, "Connection"), "upgrade") ||
	    !http_has_token(http_header(r, "Upgrade"), TTY_PROTOCOL)) {
		api_err_set(&e, API_E_BAD_FIELD,
			    "tty: this endpoint switches protocols; send 'Connection: Upgrade' and 'Upgrade: " TTY_PROTOCOL
			    "' (docs/api.md, \"The tty stream\")");
		kiln_agent_free(a);
		http_error(r, &e);
		return;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		kiln_agent_free(a);
		api_err_set(&e, API_E_INTERNAL, "tty: out of memory");
		http_error(r, &e);
		return;
	}
	t->d = r->d;
	tty_esc_init(&t->esc);
	if (kiln_agent_attach_at(a, id, from.from, from.seq, &t->p)) {
		proc_err_from_agent(&e, a, "tty");
		kiln_agent_free(a);
		free(t);
		http_error(r, &e);
		return;
	}
	kiln_agent_free(a);
	http_upgrade(r, TTY_PROTOCOL, tty_run, t, tty_release);
}
