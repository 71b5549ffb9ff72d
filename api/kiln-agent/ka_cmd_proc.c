/*
 * ka_cmd_proc: processes already running: attach, signal, stdin, resize,
 * wait, ps.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "api/kiln-agent/ka_cmds.h"
#include "lib/base/fd_io.h"
#include "lib/base/term_mode.h"

/* One event: output to our fds, gaps noted, exit recorded. 1 when done. */
static int attach_event(struct agent_client_stream *s, int timeout_ms, int *status,
			struct agent_client_err *e)
{
	struct agent_client_event ev;
	int r = agent_client_stream_next(s, timeout_ms, &ev, e);

	if (r != 0)
		return r;
	switch (ev.kind) {
	case AGENT_EVENT_STDOUT:
	case AGENT_EVENT_STDERR:
		if (fd_io_write_all(ev.kind == AGENT_EVENT_STDERR ? 2 : 1, ev.data, ev.len) < 0)
			return -EPIPE;
		break;
	case AGENT_EVENT_GAP:
		fprintf(stderr,
			"\r\nkiln-agent: attach: %" PRIu64 " bytes of output from seq %" PRIu64
			" were lost (the ring overflowed)\r\n",
			ev.gap_bytes, ev.seq);
		break;
	case AGENT_EVENT_EXIT:
		*status = proc_status(&ev.exit);
		break;
	}
	return 0;
}

int cmd_attach(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "from", required_argument, 0, OPT_FROM },
		{ "no-stdin", no_argument, 0, OPT_NO_STDIN },
		{ 0, 0, 0, 0 },
	};
	enum agent_client_from from = AGENT_FROM_OLDEST;
	struct agent_client_attached info;
	struct agent_client_stream *s;
	struct agent_client_err e;
	struct term_mode_saved tty = { 0 };
	bool forward = true, in_eof = false;
	uint64_t seq = 0;
	uint32_t id;
	int c, r, status = EXIT_PROC_FAILED;
	char *buf;

	opts_reset();
	while ((c = next_opt(argc, argv, "", opts)) != -1) {
		if (c == OPT_FROM) {
			if (strcmp(optarg, "now") == 0)
				from = AGENT_FROM_NOW;
			else if (parse_u64(optarg, INT64_MAX, &seq))
				from = AGENT_FROM_SEQ;
			else
				return usage_error("--from: '%s' is not a sequence number or 'now'",
						   optarg);
		} else if (c == OPT_NO_STDIN) {
			forward = false;
		} else {
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 1 || !parse_id(argv[optind], &id))
		return usage_error("attach: expected one process id");
	r = agent_client_attach(&cli->c, id, from, seq, &s, &info, &e);
	if (r < 0)
		return report_proc("attach", &e);
	buf = malloc(AGENT_CHUNK_MAX);
	if (!buf) {
		agent_client_stream_close(s);
		return local_error("attach", ENOMEM);
	}
	if (forward && info.pty && isatty(0)) {
		struct winsize ws;

		term_mode_enter(0, TERM_MODE_RAW, &tty);
		if (ioctl(0, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col)
			agent_client_stream_resize(s, ws.ws_row, ws.ws_col, NULL);
	}
	for (;;) {
		struct pollfd p[2] = {
			{ .fd = agent_client_stream_fd(s), .events = POLLIN },
			{ .fd = 0, .events = POLLIN },
		};
		nfds_t n = forward && !in_eof ? 2 : 1;

		if (!agent_client_stream_pending(s) && poll(p, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			r = local_error("attach: poll", errno);
			break;
		}
		if (n == 2 && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			ssize_t k = read(0, buf, AGENT_CHUNK_MAX);

			if (k < 0 && errno == EINTR)
				continue;
			in_eof = k <= 0;
			r = agent_client_stream_stdin(s, buf, k > 0 ? (size_t)k : 0, in_eof, &e);
			if (r < 0) {
				term_mode_leave(&tty);
				status = report_proc("attach: stdin", &e);
				break;
			}
		}
		if (agent_client_stream_pending(s) ||
		    (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			/* Readable means a message is coming: allow it the reply timeout. */
			r = attach_event(s, cli->c.timeout_ms, &status, &e);
			if (r == 1)
				break;
			if (r == -ETIMEDOUT)
				continue;
			if (r == -EPIPE) {
				status = EXIT_PROC_FAILED;
				break;
			}
			if (r < 0) {
				term_mode_leave(&tty);
				status = report_proc("attach", &e);
				break;
			}
		}
	}
	term_mode_leave(&tty);
	free(buf);
	agent_client_stream_close(s);
	return status;
}

int cmd_signal(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = { { "group", no_argument, 0, OPT_GROUP },
					      { 0, 0, 0, 0 } };
	struct agent_client_err e;
	bool group = false;
	uint32_t id;
	int c, signo;

	opts_reset();
	while ((c = next_opt(argc, argv, "", opts)) != -1) {
		if (c != OPT_GROUP)
			return EXIT_USAGE;
		group = true;
	}
	if (argc - optind != 2 || !parse_id(argv[optind], &id))
		return usage_error("signal: expected ID SIG");
	if (!parse_signal(argv[optind + 1], &signo))
		return usage_error("signal: '%s' is not a signal number or name", argv[optind + 1]);
	if (agent_client_signal(&cli->c, id, signo, group, &e) < 0)
		return report("signal", &e);
	return 0;
}

int cmd_stdin(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = { { "close", no_argument, 0, OPT_CLOSE },
					      { 0, 0, 0, 0 } };
	struct agent_client_err e;
	bool close_it = false;
	size_t len = 0;
	uint32_t id;
	char *buf;
	int c, r = 0;

	opts_reset();
	while ((c = next_opt(argc, argv, "", opts)) != -1) {
		if (c != OPT_CLOSE)
			return EXIT_USAGE;
		close_it = true;
	}
	if (argc - optind != 1 || !parse_id(argv[optind], &id))
		return usage_error("stdin: expected one process id");
	/* Requests of up to 1 MiB: one round trip per MiB. */
	buf = malloc(AGENT_LEN_MAX);
	if (!buf)
		return local_error("stdin", ENOMEM);
	for (;;) {
		ssize_t k = read(0, buf + len, AGENT_LEN_MAX - len);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			r = local_error("stdin: reading our stdin", errno);
			break;
		}
		len += (size_t)k;
		if (k > 0 && len < AGENT_LEN_MAX)
			continue;
		if ((len || (k == 0 && close_it)) &&
		    agent_client_stdin(&cli->c, id, buf, len, k == 0 && close_it, &e) < 0) {
			r = report("stdin", &e);
			break;
		}
		len = 0;
		if (k == 0)
			break;
	}
	free(buf);
	return r;
}

int cmd_resize(struct cli *cli, int argc, char **argv)
{
	struct agent_client_err e;
	uint32_t id, rows, cols;

	if (argc != 4 || !parse_id(argv[1], &id) || !parse_u32(argv[2], 65535, &rows) ||
	    !parse_u32(argv[3], 65535, &cols))
		return usage_error("resize: expected ID ROWS COLS");
	if (agent_client_resize(&cli->c, id, (uint16_t)rows, (uint16_t)cols, &e) < 0)
		return report("resize", &e);
	return 0;
}

int cmd_wait(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "timeout-ms", required_argument, 0, OPT_TIMEOUT_MS }, { 0, 0, 0, 0 }
	};
	struct agent_client_exit x;
	struct agent_client_err e;
	uint32_t id, timeout = 0;
	char desc[96];
	int c;

	opts_reset();
	while ((c = next_opt(argc, argv, "", opts)) != -1) {
		if (c != OPT_TIMEOUT_MS || !parse_u32(optarg, AGENT_TIMEOUT_MAX_MS, &timeout))
			return usage_error("wait: bad option");
	}
	if (argc - optind != 1 || !parse_id(argv[optind], &id))
		return usage_error("wait: expected one process id");
	if (agent_client_wait(&cli->c, id, timeout, &x, &e) < 0)
		return report_proc("wait", &e);
	if (cli->json) {
		print_json(stdout, status_json(&x));
	} else {
		describe_status(desc, sizeof(desc), &x);
		printf("%s\n", desc);
	}
	return proc_status(&x);
}

static int print_process(void *arg, const struct agent_client_process *p)
{
	const struct cli *cli = arg;
	struct agent_client_exit x = { .exit_code = p->exit_code,
				       .signal = p->signal,
				       .timed_out = p->timed_out };
	char state[96];

	if (p->running)
		snprintf(state, sizeof(state), "running");
	else
		describe_status(state, sizeof(state), &x);
	if (cli->json) {
		json_t *argv = json_array();

		for (size_t i = 0; argv && i < p->argc; i++)
			json_array_append_new(argv, json_string(p->argv[i]));
		print_json(stdout,
			   json_pack("{s:I, s:i, s:o, s:b, s:b, s:o, s:o, s:b, s:I, s:I}", "id",
				     (json_int_t)p->id, "pid", p->pid, "argv", argv, "pty", p->pty,
				     "running", p->running, "exit_code",
				     p->exit_code >= 0 ? json_integer(p->exit_code) : json_null(),
				     "signal", p->signal ? json_integer(p->signal) : json_null(),
				     "timed_out", p->timed_out, "seq", (json_int_t)p->seq,
				     "attached", (json_int_t)p->attached));
		return 0;
	}
	printf("%u\t%d\t%s\t%" PRIu64 "\t%u\t", p->id, p->pid, state, p->seq, p->attached);
	for (size_t i = 0; i < p->argc; i++) {
		if (i)
			putchar(' ');
		print_guest_text(stdout, p->argv[i]);
	}
	printf("%s\n", p->argv_truncated ? " ..." : "");
	return 0;
}

int cmd_ps(struct cli *cli, int argc, char **argv)
{
	struct agent_client_err e;

	if (argc > 1)
		return usage_error("ps: unexpected argument '%s'", argv[1]);
	if (!cli->json)
		printf("ID\tPID\tSTATE\tSEQ\tATTACHED\tARGV\n");
	if (agent_client_list_processes(&cli->c, print_process, cli, NULL, &e) < 0)
		return report("ps", &e);
	return 0;
}
