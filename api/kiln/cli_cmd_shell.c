/*
 * kiln shell and kiln attach: a process's terminal over kilnd's tty
 * stream (docs/api.md, GET .../processes/{proc}/tty, `Upgrade:
 * kiln-tty`). shell creates the process (POST .../shell, or .../processes
 * with "pty" for a PROGRAM), attach joins one that runs.
 *
 * libcurl cannot hand over a connection after a 101, so this is a plain
 * AF_UNIX socket with the request written by hand (cli_tty.h builds it
 * and parses the answer's head). Then one poll loop relays our stdin to
 * the socket (buffered, so a full socket never stops us reading the
 * process's output: kilnd's side is one loop too, and two blocked
 * writers would wait on each other forever) and the socket to our stdout.
 *
 * When stdin is a terminal it is put in raw mode, so keys (Ctrl-C, Ctrl-Z,
 * Ctrl-D) reach the process instead of acting on kiln; it is restored on
 * every way out: the stream's end, an error, and SIGINT, SIGTERM, SIGHUP
 * or SIGQUIT, which a self-pipe turns into loop events. The terminal's
 * size goes with the create and, on SIGWINCH, in-band as the resize
 * escape. When stdin is not a terminal (`printf 'ls\n' | kiln shell ID`),
 * its end is sent as the terminal's ^D, since a PTY cannot be half-closed.
 *
 * kilnd closes the stream after the process's last output; the exit
 * status then comes from POST .../wait, and is kiln's.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "api/kiln/cli_body.h"
#include "api/kiln/cli_cmds.h"
#include "api/kiln/cli_exec_out.h"
#include "api/kiln/cli_format.h"
#include "api/kiln/cli_tty.h"
#include "lib/base/json.h"
#include "lib/base/term_mode.h"

#define IN_CHUNK 16384
#define OUT_MAX (4 * IN_CHUNK)
/* An error body is kilnd's one JSON line; anything longer is cut. */
#define ERR_BODY_MAX 65536
/* After the stream ended the process has exited; wait answers at once.
 * A stream cut for another reason (kilnd stopping) must not hang here. */
#define WAIT_AFTER_MS 10000

/* The write end of the self-pipe: a signal handler has nothing else. */
static int sig_fd = -1;

static void on_signal(int sig)
{
	unsigned char b = (unsigned char)sig;
	int e = errno;

	if (write(sig_fd, &b, 1) < 0) {
		/* Full pipe: enough signals are queued already. */
	}
	errno = e;
}

struct tty_session {
	struct cli_ctx *c;
	const char *what;
	int sock;
	int winfd;                   /* a terminal to take the size from, or -1 */
	struct term_mode_saved term; /* stdin's settings while it is raw */
	bool send_eot;               /* stdin is not a terminal and the process has a PTY */
	int sigr;                    /* the self-pipe's read end */
	char out[OUT_MAX];           /* our stdin (and resize escapes) on the way to kilnd */
	size_t out_len;
	int last; /* the last byte queued, -1: none */
	bool in_open, wr_closed, resize_pending;
	int signal; /* the signal that ended the session, or 0 */
};

static int tty_fail(struct tty_session *t, int exit, const char *fmt, const char *arg)
{
	struct cli_fail f;

	cli_fail_set(&f, exit, NULL, fmt, arg);
	return cli_report(t->c, t->what, &f);
}

/* kilnd's error answer: the rest of its body, then the usual report. */
static int tty_error_answer(struct tty_session *t, const struct cli_http_head *h, char *buf,
			    size_t have)
{
	size_t want = h->content_length >= 0 && h->content_length < ERR_BODY_MAX
		? (size_t)h->content_length
		: ERR_BODY_MAX;
	char *body = malloc(ERR_BODY_MAX + 1);
	struct cli_fail f;
	size_t len;

	if (!body)
		return tty_fail(t, CLI_EXIT_API, "out of memory%s", "");
	len = have < want ? have : want;
	memcpy(body, buf, len);
	while (len < want) {
		ssize_t n = recv(t->sock, body + len, want - len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	body[len] = 0;
	if (h->status == 101)
		cli_fail_set(&f, CLI_EXIT_API, NULL,
			     "kilnd switched to a protocol other than " CLI_TTY_PROTOCOL);
	else
		cli_fail_from_response(h->status, body, len, &f);
	free(body);
	return cli_report(t->c, t->what, &f);
}

/* SO_SNDTIMEO and SO_RCVTIMEO of seconds (0: none). */
static void set_timeouts(int sock, unsigned long seconds)
{
	struct timeval tv = { .tv_sec = (time_t)seconds };

	setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

/*
 * Connect, ask for the upgrade and read the answer's head; what came
 * after a 101 is the terminal's first output and goes to stdout. 0, or
 * the exit status after a report.
 */
static int tty_open(struct tty_session *t, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *sock = t->c->g.socket;
	char req[CLI_QUERY_MAX + 256], *buf;
	struct cli_http_head h;
	struct cli_fail f;
	size_t len = 0;
	int n, rc = 0;

	if (cli_fail_socket_path(sock, &f))
		return cli_report(t->c, t->what, &f);
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	t->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (t->sock < 0)
		return tty_fail(t, CLI_EXIT_API, "socket: %s", strerror(errno));
	/* As cli_http: a connection and an answer's head within the base
	 * timeout (a Unix socket's connect() waits SO_SNDTIMEO on a full
	 * queue); the session itself may then be quiet for ever. */
	set_timeouts(t->sock, t->c->g.timeout_s);
	if (connect(t->sock, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = errno;
		struct stat st;

		if (e == EAGAIN || e == EWOULDBLOCK || e == EINPROGRESS) {
			cli_fail_timeout(sock, false, t->c->g.timeout_s, &f);
			return cli_report(t->c, t->what, &f);
		}

		/* As cli_http: a regular file at the path answers ECONNREFUSED. */
		if (e == ECONNREFUSED && stat(sock, &st) == 0 && !S_ISSOCK(st.st_mode))
			e = ENOTSOCK;
		cli_fail_unreachable(sock, e, NULL, &f);
		return cli_report(t->c, t->what, &f);
	}
	n = cli_tty_request(req, sizeof(req), path);
	if (n < 0)
		return tty_fail(t, CLI_EXIT_USAGE, "the request path is too long%s", "");
	if (fd_io_send_all(t->sock, req, (size_t)n))
		return tty_fail(t, CLI_EXIT_API, "sending the request to kilnd: %s",
				strerror(errno));
	buf = malloc(CLI_TTY_HEAD_MAX + IN_CHUNK);
	if (!buf)
		return tty_fail(t, CLI_EXIT_API, "out of memory%s", "");
	for (;;) {
		ssize_t got = recv(t->sock, buf + len, CLI_TTY_HEAD_MAX + IN_CHUNK - len, 0);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			cli_fail_timeout(sock, true, t->c->g.timeout_s, &f);
			rc = cli_report(t->c, t->what, &f);
			break;
		}
		if (got <= 0) {
			rc = tty_fail(t, CLI_EXIT_API,
				      "kilnd closed the connection before answering (%s)",
				      got < 0 ? strerror(errno) : "end of stream");
			break;
		}
		len += (size_t)got;
		n = cli_http_head_parse(buf, len, &h);
		if (n < 0) {
			rc = tty_fail(t, CLI_EXIT_API,
				      "kilnd's answer is not an HTTP response head%s", "");
			break;
		}
		if (n == 0)
			continue;
		set_timeouts(t->sock, 0);
		if (h.status != 101 || !h.upgrade)
			rc = tty_error_answer(t, &h, buf + h.len, len - h.len);
		else if (len > h.len && fd_io_write_all(1, buf + h.len, len - h.len))
			rc = tty_fail(t, CLI_EXIT_LOCAL, "writing to stdout: %s", strerror(errno));
		break;
	}
	free(buf);
	return rc;
}

static bool term_size(int fd, unsigned *rows, unsigned *cols)
{
	struct winsize ws;

	if (fd < 0 || ioctl(fd, TIOCGWINSZ, &ws) || !ws.ws_row || !ws.ws_col)
		return false;
	*rows = ws.ws_row;
	*cols = ws.ws_col;
	return true;
}

/* Queue a resize escape for our terminal's size, when there is room. */
static void queue_resize(struct tty_session *t)
{
	unsigned rows, cols;

	t->resize_pending = false;
	if (!term_size(t->winfd, &rows, &cols) || t->wr_closed)
		return;
	if (t->out_len + CLI_TTY_ESC_MAX > sizeof(t->out)) {
		t->resize_pending = true;
		return;
	}
	t->out_len += cli_tty_resize_escape(t->out + t->out_len, rows, cols);
}

static void read_stdin(struct tty_session *t)
{
	ssize_t n = read(0, t->out + t->out_len, IN_CHUNK);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n > 0) {
		t->out_len += (size_t)n;
		t->last = (unsigned char)t->out[t->out_len - 1];
		return;
	}
	/* EOF (or a terminal that hung up: EIO). */
	t->in_open = false;
	if (t->send_eot)
		t->out_len += cli_tty_eof_bytes(t->last, t->out + t->out_len);
}

/* Our queued bytes to kilnd, as far as the socket takes them. */
static void flush_out(struct tty_session *t)
{
	ssize_t w = send(t->sock, t->out, t->out_len, MSG_NOSIGNAL | MSG_DONTWAIT);

	if (w > 0) {
		memmove(t->out, t->out + w, t->out_len - (size_t)w);
		t->out_len -= (size_t)w;
	} else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
		/* kilnd stopped reading: the output side tells the end. */
		t->out_len = 0;
		t->in_open = false;
		t->wr_closed = true;
	}
}

/* The relay. 0 when kilnd closed the stream, else the exit status after a report. */
static int relay(struct tty_session *t)
{
	char buf[IN_CHUNK];

	for (;;) {
		struct pollfd p[3] = {
			{ .fd = t->in_open && t->out_len + IN_CHUNK + 2 <= sizeof(t->out) ? 0 : -1,
			  .events = POLLIN },
			{ .fd = t->sock, .events = POLLIN | (t->out_len ? POLLOUT : 0) },
			{ .fd = t->sigr, .events = POLLIN },
		};
		unsigned char sigs[16];
		ssize_t n;

		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			return tty_fail(t, CLI_EXIT_API, "poll: %s", strerror(errno));
		}
		if (p[2].revents & POLLIN) {
			n = read(t->sigr, sigs, sizeof(sigs));
			for (ssize_t i = 0; i < n; i++) {
				if (sigs[i] == SIGWINCH) {
					queue_resize(t);
				} else {
					t->signal = sigs[i];
					return 0;
				}
			}
		}
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			n = recv(t->sock, buf, sizeof(buf), 0);
			if (n == 0 ||
			    (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
				return 0; /* the stream's end: the process exited (or kilnd went away) */
			if (n > 0 && fd_io_write_all(1, buf, (size_t)n))
				return tty_fail(t, CLI_EXIT_LOCAL, "writing to stdout: %s",
						strerror(errno));
		}
		if ((p[1].revents & POLLOUT) && t->out_len)
			flush_out(t);
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR))
			read_stdin(t);
		if (t->resize_pending)
			queue_resize(t);
		if (!t->in_open && !t->out_len && !t->wr_closed) {
			/* Half-close: no more input, output goes on until the exit. */
			shutdown(t->sock, SHUT_WR);
			t->wr_closed = true;
		}
	}
}

static const int tty_signals[] = { SIGWINCH, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP };
#define N_TTY_SIGNALS (sizeof(tty_signals) / sizeof(tty_signals[0]))

/*
 * One session on path: connect, switch, relay, restore. 0 when the
 * stream ended (the process exited), else kiln's exit status (128+N for a
 * terminating signal N, reported in t->signal).
 */
static int tty_session_run(struct tty_session *t, const char *path)
{
	struct sigaction old[N_TTY_SIGNALS];
	int pfd[2], rc;

	t->sock = -1;
	t->last = -1;
	t->in_open = true;
	rc = tty_open(t, path);
	if (rc)
		goto out;
	if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK)) {
		rc = tty_fail(t, CLI_EXIT_API, "pipe: %s", strerror(errno));
		goto out;
	}
	t->sigr = pfd[0];
	sig_fd = pfd[1];
	for (size_t i = 0; i < N_TTY_SIGNALS; i++) {
		struct sigaction sa = { .sa_handler = on_signal };

		/* SIGPIPE: a closed stdout is an EPIPE we report. SIGTSTP from
		 * outside would stop kiln with the terminal still raw. */
		if (tty_signals[i] == SIGPIPE || tty_signals[i] == SIGTSTP)
			sa.sa_handler = SIG_IGN;
		sigemptyset(&sa.sa_mask);
		sigaction(tty_signals[i], &sa, &old[i]);
	}
	/* Not a terminal (a pipe, a script): bytes go through as they are. */
	term_mode_enter(0, TERM_MODE_RAW, &t->term);
	if (fcntl(t->sock, F_SETFL, fcntl(t->sock, F_GETFL) | O_NONBLOCK))
		rc = tty_fail(t, CLI_EXIT_API, "fcntl: %s", strerror(errno));
	else
		rc = relay(t);
	term_mode_leave(&t->term);
	for (size_t i = 0; i < N_TTY_SIGNALS; i++)
		sigaction(tty_signals[i], &old[i], NULL);
	sig_fd = -1;
	close(pfd[0]);
	close(pfd[1]);
	if (!rc && t->signal)
		rc = 128 + t->signal;
out:
	if (t->sock >= 0)
		close(t->sock);
	return rc;
}

/* The process's exit status once the stream ended (POST .../wait). */
static int tty_exit_status(struct tty_session *t, const char *id, unsigned long proc)
{
	char path[CLI_ID_MAX + 96];
	struct cli_req req = { .method = "POST", .path = path };
	struct cli_resp resp;
	struct cli_fail f;
	json_t *v;
	int status;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s/processes/%lu/wait?timeout_ms=%d", id, proc,
		 WAIT_AFTER_MS);
	if (cli_call_quiet(t->c, &req, &resp, &f)) {
		if (!strcmp(f.code, "timeout"))
			cli_fail_set(&f, CLI_EXIT_API, NULL,
				     "the terminal stream ended but process %lu still runs; `kiln attach %s %lu` "
				     "joins it again",
				     proc, id, proc);
		return cli_report(t->c, t->what, &f);
	}
	v = json_strict_loadb(resp.body, resp.len, NULL);
	free(resp.body);
	status = cli_exec_status(v);
	if (v && t->c->g.json)
		cli_print_json(v, false);
	json_decref(v);
	if (status < 0)
		return tty_fail(t, CLI_EXIT_API, "kilnd's exit object has no exit_code or signal%s",
				"");
	return status;
}

/* Hang up a process we created when kiln itself is told to stop, as a
 * terminal closing would (best effort: its failure is not reported). */
static void hang_up(struct tty_session *t, const char *id, unsigned long proc)
{
	char path[CLI_ID_MAX + 96];
	const char *body = "{\"signal\":\"HUP\",\"group\":true}";
	struct cli_req req = { .method = "POST", .path = path, .body = body };
	struct cli_resp resp;
	struct cli_fail f;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s/processes/%lu/signal", id, proc);
	if (cli_call_quiet(t->c, &req, &resp, &f) == 0)
		free(resp.body);
}

static int tty_attach(struct tty_session *t, const char *id, unsigned long proc, const char *query,
		      bool owned)
{
	char path[CLI_ID_MAX + 160];
	int rc;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s/processes/%lu/tty%s", id, proc, query);
	rc = tty_session_run(t, path);
	if (t->signal) {
		if (owned)
			hang_up(t, id, proc);
		return rc;
	}
	return rc ? rc : tty_exit_status(t, id, proc);
}

int cli_cmd_shell(struct cli_ctx *c, int argc, char **argv)
{
	struct tty_session *t = calloc(1, sizeof(*t));
	struct cli_shell_req r;
	char path[CLI_ID_MAX + 40], what[CLI_ID_MAX + 16];
	struct err e;
	unsigned rows, cols;
	json_t *v = NULL, *pid;
	int rc;

	if (!t)
		return CLI_EXIT_API;
	if (cli_shell_parse(argc, argv, &c->g, &r, &e)) {
		free(t);
		return cli_usage_error(c, e.msg);
	}
	snprintf(what, sizeof(what), "shell %s", r.id);
	t->c = c;
	t->what = what;
	t->winfd = isatty(0) ? 0 : isatty(1) ? 1 : -1;
	t->send_eot = !isatty(0);
	if (term_size(t->winfd, &rows, &cols)) {
		json_object_set_new(r.body, "rows", json_integer(rows));
		json_object_set_new(r.body, "cols", json_integer(cols));
	}
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/%s", r.id,
		 r.has_argv ? "processes" : "shell");
	c->wait_s = CLI_WAIT_BOOT; /* a hibernated sandbox wakes first */
	rc = cli_call_json(c, what, "POST", path, r.body, &v);
	c->wait_s = 0;
	pid = json_object_get(v, "id");
	if (!rc && (!json_is_integer(pid) || json_integer_value(pid) < 1))
		rc = tty_fail(t, CLI_EXIT_API, "kilnd's answer has no process id%s", "");
	if (!rc)
		rc = tty_attach(t, r.id, (unsigned long)json_integer_value(pid), "", true);
	json_decref(v);
	json_decref(r.body);
	free(t);
	return rc;
}

int cli_cmd_attach(struct cli_ctx *c, int argc, char **argv)
{
	struct tty_session *t = calloc(1, sizeof(*t));
	struct cli_proc_req p;
	char path[CLI_ID_MAX + 64], what[CLI_ID_MAX + 32];
	struct err e;
	json_t *v = NULL;
	int rc;

	if (!t)
		return CLI_EXIT_API;
	if (cli_proc_parse("attach", argc, argv, &c->g, &p, &e)) {
		free(t);
		return cli_usage_error(c, e.msg);
	}
	snprintf(what, sizeof(what), "attach %s %lu", p.id, p.proc);
	t->c = c;
	t->what = what;
	t->winfd = isatty(0) ? 0 : isatty(1) ? 1 : -1;
	/* The process object says whether there is a PTY (for ^D at the end
	 * of a piped stdin) and names a missing process before any switch. */
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/processes/%lu", p.id, p.proc);
	rc = cli_call_json(c, what, "GET", path, NULL, &v);
	if (!rc) {
		t->send_eot = !isatty(0) && json_is_true(json_object_get(v, "pty"));
		/* Our terminal's size, first thing: the process may have been
		 * started (or last attached) with another. */
		queue_resize(t);
		rc = tty_attach(t, p.id, p.proc, p.query, false);
	}
	json_decref(v);
	free(t);
	return rc;
}
