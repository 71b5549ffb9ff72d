/*
 * kiln-agent: a command-line client of the guest agent, over
 * api/agent_client. For tests, scripts and humans poking at a running VM:
 *
 *   kiln-agent --vsock /run/vm1.vsock exec -- uname -a
 *
 * Only main() and the command functions here print and pick exit
 * statuses; everything protocol-related lives in the library.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "api/agent-client/agent_client.h"

/* Exit statuses (also in the usage text). */
enum {
	EXIT_FALSE = 1,       /* exists: the path does not exist */
	EXIT_USAGE = 2,       /* bad command line, or a request the agent would refuse */
	EXIT_AGENT = 3,       /* the agent answered with an error */
	EXIT_UNREACHABLE = 4, /* no kiln-vmm socket, no agent listening, connection lost */
	EXIT_TIMEOUT = 5,     /* no answer in time */
	EXIT_PROTOCOL = 6,    /* the agent broke the protocol or speaks another version */
	EXIT_HOST = 7,        /* a local failure (memory, stdin/stdout) */
	/* exec, wait, attach end with the process's own status, so their
	 * failures use the shell's conventions instead. */
	EXIT_PROC_TIMEOUT = 124,
	EXIT_PROC_FAILED = 125,
	EXIT_PROC_CANNOT_RUN = 126,
	EXIT_PROC_NOT_FOUND = 127,
};

static const char usage_text[] =
	"usage: kiln-agent --vsock PATH [--timeout MS] [--json] COMMAND [ARGS]\n"
	"\n"
	"Talks to the kiln guest agent through kiln-vmm's --vsock socket PATH.\n"
	"--timeout MS: connect and reply timeout (default 10000); wait-ready waits this long.\n"
	"--json: machine-readable output (one JSON object per line).\n"
	"\n"
	"commands:\n"
	"  wait-ready                         wait until the agent answers\n"
	"  ping | info\n"
	"  exec [--user root|user] [--cwd DIR] [--env K=V|K]... [--timeout-ms N]\n"
	"       [--output-cap BYTES] [--stdin-file FILE|-] [--shell] [--json] -- ARGV...\n"
	"                                     run to completion; its stdout/stderr go to ours\n"
	"  spawn [--pty] [--rows R --cols C] [--ring-bytes N] [--user U] [--cwd DIR]\n"
	"        [--env K=V]... [--timeout-ms N] [--shell] -- ARGV...    print the new id\n"
	"  attach ID [--from SEQ|now] [--no-stdin]\n"
	"                                     stream output, forward stdin (EOF closes its stdin)\n"
	"  signal ID SIG [--group]            SIG: a number or a name (TERM, SIGKILL, ...)\n"
	"  stdin ID [--close]                 send our stdin to process ID\n"
	"  resize ID ROWS COLS\n"
	"  wait ID [--timeout-ms N]\n"
	"  ps\n"
	"  read PATH [--offset N] [--length N] [--user U]      file to stdout\n"
	"  write PATH [--mode OCTAL] [--append] [--exclusive] [--no-create] [--parents]\n"
	"        [--user U]                   stdin to file\n"
	"  stat PATH [--no-follow] [--user U]\n"
	"  exists PATH [--no-follow] [--user U]\n"
	"  ls PATH [--depth N] [--limit N] [--user U]\n"
	"  mkdir [-p] [--mode OCTAL] [--user U] PATH\n"
	"  rm [-r] [--user U] PATH\n"
	"  mv [--overwrite] [--user U] FROM TO\n"
	"  tar-up DIR [--user U]              extract a plain tar archive from stdin into DIR\n"
	"  tar-down PATH [--user U]           PATH as a tar archive on stdout\n"
	"  configure [--hostname H] [--interface IF] [--address A/PREFIX] [--gateway G]\n"
	"            [--dns IP]... [--no-dns] [--mtu N]\n"
	"  sync-clock [NS]                    set the guest clock (default: this host's)\n"
	"  shutdown [--grace-ms N]\n"
	"\n"
	"exit status: 0 done; 1 exists: no such path; 2 usage or invalid request;\n"
	"  3 the agent reported an error; 4 agent unreachable (no VM, agent not\n"
	"  listening, connection lost); 5 timed out; 6 protocol error or incompatible\n"
	"  agent; 7 local failure.\n"
	"  exec, wait and attach exit with the process's status instead: its exit\n"
	"  code, 124 if it timed out, 128+N if signal N killed it; 125 if kiln-agent\n"
	"  or the agent failed, 126 if it could not be started, 127 if not found.\n"
	"errors: one line 'kiln-agent: <what failed>: <code>: <message>' on stderr.\n";

struct cli {
	struct agent_client c;
	bool json;
};

static int __attribute__((format(printf, 1, 2))) usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "kiln-agent: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "; see kiln-agent --help\n");
	return EXIT_USAGE;
}

static int exit_for(const struct agent_client_err *e)
{
	switch (e->fail) {
	case AGENT_FAIL_AGENT:
		return EXIT_AGENT;
	case AGENT_FAIL_REQUEST:
		return EXIT_USAGE;
	case AGENT_FAIL_CONNECT:
		return EXIT_UNREACHABLE;
	case AGENT_FAIL_TIMEOUT:
		return EXIT_TIMEOUT;
	case AGENT_FAIL_PROTOCOL:
		return EXIT_PROTOCOL;
	default:
		return EXIT_HOST;
	}
}

static int report(const char *what, const struct agent_client_err *e)
{
	fprintf(stderr, "kiln-agent: %s: %s: %s\n", what, agent_client_err_name(e), e->message);
	return exit_for(e);
}

/* The same for commands whose status is a process's. */
static int report_proc(const char *what, const struct agent_client_err *e)
{
	report(what, e);
	if (e->fail == AGENT_FAIL_AGENT && e->code == AGENT_E_NOT_FOUND)
		return EXIT_PROC_NOT_FOUND;
	if (e->fail == AGENT_FAIL_AGENT &&
	    (e->code == AGENT_E_PERMISSION_DENIED || e->code == AGENT_E_IO_ERROR))
		return EXIT_PROC_CANNOT_RUN;
	return EXIT_PROC_FAILED;
}

static int local_error(const char *what, int errnum)
{
	fprintf(stderr, "kiln-agent: %s: host_error: %s\n", what, strerror(errnum));
	return EXIT_HOST;
}

/* ---- argument parsing ---- */

static bool parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s[0] || s[0] == '-' || s[0] == '+')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return false;
	*out = v;
	return true;
}

static bool parse_u32(const char *s, uint32_t max, uint32_t *out)
{
	uint64_t v;

	if (!parse_u64(s, max, &v))
		return false;
	*out = (uint32_t)v;
	return true;
}

static bool parse_mode(const char *s, uint32_t *out)
{
	char *end;
	unsigned long v;

	if (!s[0] || s[0] == '-')
		return false;
	errno = 0;
	v = strtoul(s, &end, 8);
	if (errno || *end || v > 07777)
		return false;
	*out = (uint32_t)v;
	return true;
}

static bool parse_user(const char *s, enum agent_user *u)
{
	if (strcmp(s, "user") == 0)
		*u = AGENT_USER_USER;
	else if (strcmp(s, "root") == 0)
		*u = AGENT_USER_ROOT;
	else
		return false;
	return true;
}

static bool parse_signal(const char *s, int *signo)
{
	uint32_t v;

	if (parse_u32(s, 64, &v) && v >= 1) {
		*signo = (int)v;
		return true;
	}
	*signo = agent_signal_by_name(s);
	return *signo > 0;
}

static bool parse_id(const char *s, uint32_t *id)
{
	return parse_u32(s, UINT32_MAX, id) && *id > 0;
}

/* getopt_long over a command's own arguments (argv[0] is its name). */
static int next_opt(int argc, char **argv, const char *shortopts, const struct option *longopts)
{
	return getopt_long(argc, argv, shortopts, longopts, NULL);
}

static void opts_reset(void)
{
	/* GNU getopt: 0 reinitialises it for a new argument vector. */
	optind = 0;
}

/* ---- output ---- */

static int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Print one JSON object as a line and drop it. */
static void print_json(FILE *f, json_t *o)
{
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;

	if (s) {
		fprintf(f, "%s\n", s);
		free(s);
	}
	json_decref(o);
}

static json_t *status_json(const struct agent_client_exit *x)
{
	return json_pack("{s:I, s:o, s:o, s:b, s:I, s:I, s:I, s:I, s:I}", "pid", (json_int_t)x->pid,
			 "exit_code", x->exit_code >= 0 ? json_integer(x->exit_code) : json_null(),
			 "signal", x->signal ? json_integer(x->signal) : json_null(), "timed_out",
			 x->timed_out, "stdout_bytes", (json_int_t)x->stdout_bytes, "stderr_bytes",
			 (json_int_t)x->stderr_bytes, "wall_us", (json_int_t)x->wall_us, "user_us",
			 (json_int_t)x->user_us, "sys_us", (json_int_t)x->sys_us);
}

/* A process status as the shell would give it. */
static int proc_status(const struct agent_client_exit *x)
{
	if (x->timed_out)
		return EXIT_PROC_TIMEOUT;
	if (x->exit_code >= 0)
		return x->exit_code;
	return 128 + x->signal;
}

static void describe_status(char *buf, size_t n, const struct agent_client_exit *x)
{
	if (x->timed_out)
		snprintf(buf, n, "timed out (killed)");
	else if (x->exit_code >= 0)
		snprintf(buf, n, "exited %d", x->exit_code);
	else
		snprintf(buf, n, "killed by signal %d (%s)", x->signal, strsignal(x->signal));
}

/* ---- commands ---- */

static int cmd_wait_ready(struct cli *cli, int argc, char **argv)
{
	struct agent_client_err e;

	(void)argv;
	if (argc > 1)
		return usage_error("wait-ready: unexpected argument '%s'", argv[1]);
	if (agent_client_wait_ready(&cli->c, cli->c.timeout_ms, &e) < 0)
		return report("wait-ready", &e);
	return 0;
}

static int64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int cmd_ping(struct cli *cli, int argc, char **argv)
{
	struct agent_client_err e;
	int64_t t0 = mono_us();
	int proto = 0;

	if (argc > 1)
		return usage_error("ping: unexpected argument '%s'", argv[1]);
	if (agent_client_ping(&cli->c, &proto, &e) < 0)
		return report("ping", &e);
	if (cli->json)
		print_json(stdout, json_pack("{s:i, s:I}", "protocol", proto, "rtt_us",
					     (json_int_t)(mono_us() - t0)));
	else
		printf("pong protocol %d (%" PRId64 " us)\n", proto, mono_us() - t0);
	return 0;
}

static int cmd_info(struct cli *cli, int argc, char **argv)
{
	struct agent_client_info in;
	struct agent_client_err e;

	if (argc > 1)
		return usage_error("info: unexpected argument '%s'", argv[1]);
	if (agent_client_info(&cli->c, &in, &e) < 0)
		return report("info", &e);
	if (cli->json) {
		print_json(stdout, json_pack("{s:i, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I}",
					     "protocol", in.protocol, "agent_version", in.agent_version,
					     "kernel", in.kernel, "hostname", in.hostname, "cpus",
					     (json_int_t)in.cpus, "mem_total", (json_int_t)in.mem_total,
					     "mem_available", (json_int_t)in.mem_available, "uptime_ms",
					     (json_int_t)in.uptime_ms, "time_ns", (json_int_t)in.time_ns,
					     "processes", (json_int_t)in.processes));
		return 0;
	}
	printf("protocol %d\nagent_version %s\nkernel %s\nhostname %s\ncpus %u\n"
	       "mem_total %" PRIu64 "\nmem_available %" PRIu64 "\nuptime_ms %" PRIu64 "\n"
	       "time_ns %" PRId64 "\nprocesses %u\n",
	       in.protocol, in.agent_version, in.kernel, in.hostname, in.cpus, in.mem_total,
	       in.mem_available, in.uptime_ms, in.time_ns, in.processes);
	return 0;
}

/* exec and spawn options; env entries point into argv. */
struct proc_args {
	struct agent_client_proc_opts o;
	struct agent_env *env;
	char **keys;
	const char *stdin_file;
	bool json;
	bool attach_no_stdin;
};

static void proc_args_free(struct proc_args *p)
{
	for (size_t i = 0; i < p->o.envc; i++)
		free(p->keys[i]);
	free(p->keys);
	free(p->env);
}

enum {
	OPT_USER = 256,
	OPT_CWD,
	OPT_ENV,
	OPT_TIMEOUT_MS,
	OPT_OUTPUT_CAP,
	OPT_STDIN_FILE,
	OPT_SHELL,
	OPT_JSON,
	OPT_PTY,
	OPT_ROWS,
	OPT_COLS,
	OPT_RING,
	OPT_FROM,
	OPT_NO_STDIN,
	OPT_GROUP,
	OPT_CLOSE,
	OPT_OFFSET,
	OPT_LENGTH,
	OPT_MODE,
	OPT_APPEND,
	OPT_EXCLUSIVE,
	OPT_NO_CREATE,
	OPT_PARENTS,
	OPT_NO_FOLLOW,
	OPT_DEPTH,
	OPT_LIMIT,
	OPT_OVERWRITE,
	OPT_HOSTNAME,
	OPT_INTERFACE,
	OPT_ADDRESS,
	OPT_GATEWAY,
	OPT_DNS,
	OPT_NO_DNS,
	OPT_MTU,
	OPT_GRACE,
};

static int parse_proc(int argc, char **argv, bool spawn, struct proc_args *p)
{
	static const struct option exec_opts[] = {
		{ "user", required_argument, 0, OPT_USER },
		{ "cwd", required_argument, 0, OPT_CWD },
		{ "env", required_argument, 0, OPT_ENV },
		{ "timeout-ms", required_argument, 0, OPT_TIMEOUT_MS },
		{ "shell", no_argument, 0, OPT_SHELL },
		{ "output-cap", required_argument, 0, OPT_OUTPUT_CAP },
		{ "stdin-file", required_argument, 0, OPT_STDIN_FILE },
		{ "json", no_argument, 0, OPT_JSON },
		{ 0, 0, 0, 0 },
	};
	static const struct option spawn_opts[] = {
		{ "user", required_argument, 0, OPT_USER },
		{ "cwd", required_argument, 0, OPT_CWD },
		{ "env", required_argument, 0, OPT_ENV },
		{ "timeout-ms", required_argument, 0, OPT_TIMEOUT_MS },
		{ "shell", no_argument, 0, OPT_SHELL },
		{ "pty", no_argument, 0, OPT_PTY },
		{ "rows", required_argument, 0, OPT_ROWS },
		{ "cols", required_argument, 0, OPT_COLS },
		{ "ring-bytes", required_argument, 0, OPT_RING },
		{ 0, 0, 0, 0 },
	};
	const char *cmd = spawn ? "spawn" : "exec";
	uint32_t v;
	int c;

	memset(p, 0, sizeof(*p));
	/* At most one env entry per argument. */
	p->env = calloc((size_t)argc, sizeof(*p->env));
	p->keys = calloc((size_t)argc, sizeof(*p->keys));
	if (!p->env || !p->keys)
		return local_error(cmd, ENOMEM);
	p->o.env = p->env;
	opts_reset();
	while ((c = next_opt(argc, argv, "+", spawn ? spawn_opts : exec_opts)) != -1) {
		switch (c) {
		case OPT_USER:
			if (!parse_user(optarg, &p->o.user))
				return usage_error("--user must be 'user' or 'root', not '%s'", optarg);
			break;
		case OPT_CWD:
			p->o.cwd = optarg;
			break;
		case OPT_ENV: {
			const char *eq = strchr(optarg, '=');
			size_t i = p->o.envc;

			p->keys[i] = eq ? strndup(optarg, (size_t)(eq - optarg)) : strdup(optarg);
			if (!p->keys[i])
				return local_error(cmd, ENOMEM);
			p->env[i].key = p->keys[i];
			/* "K" alone removes K from the base environment. */
			p->env[i].value = eq ? eq + 1 : NULL;
			p->o.envc++;
			break;
		}
		case OPT_TIMEOUT_MS:
			if (!parse_u32(optarg, AGENT_TIMEOUT_MAX_MS, &p->o.timeout_ms))
				return usage_error("--timeout-ms: '%s' is not 0..604800000", optarg);
			break;
		case OPT_SHELL:
			p->o.shell = true;
			break;
		case OPT_OUTPUT_CAP:
			if (!parse_u32(optarg, AGENT_OUTPUT_CAP_MAX, &v))
				return usage_error("--output-cap: '%s' is not 0..268435456", optarg);
			p->o.output_cap = v;
			p->o.discard_output = v == 0;
			break;
		case OPT_STDIN_FILE:
			p->stdin_file = optarg;
			break;
		case OPT_JSON:
			p->json = true;
			break;
		case OPT_PTY:
			p->o.pty = true;
			break;
		case OPT_ROWS:
		case OPT_COLS:
			if (!parse_u32(optarg, 65535, &v) || v == 0)
				return usage_error("--rows/--cols: '%s' is not 1..65535", optarg);
			if (c == OPT_ROWS)
				p->o.rows = (uint16_t)v;
			else
				p->o.cols = (uint16_t)v;
			break;
		case OPT_RING:
			if (!parse_u32(optarg, AGENT_RING_MAX, &p->o.ring_bytes) ||
			    p->o.ring_bytes < AGENT_RING_MIN)
				return usage_error("--ring-bytes: '%s' is not 4096..4194304", optarg);
			break;
		default:
			return usage_error("%s: bad option", cmd);
		}
	}
	if (optind >= argc)
		return usage_error("%s: no command given (put it after --)", cmd);
	p->o.argv = (const char *const *)argv + optind;
	return 0;
}

/* Read all of a file (or stdin for "-"), at most AGENT_LEN_MAX bytes. */
static int slurp(const char *path, char **out, size_t *n)
{
	int fd = strcmp(path, "-") == 0 ? 0 : open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	char *buf;

	*out = NULL;
	*n = 0;
	if (fd < 0)
		return -errno;
	buf = malloc(AGENT_LEN_MAX + 1);
	if (!buf) {
		if (fd)
			close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t r = read(fd, buf + len, AGENT_LEN_MAX + 1 - len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;

			free(buf);
			if (fd)
				close(fd);
			return -e;
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len > AGENT_LEN_MAX) {
			free(buf);
			if (fd)
				close(fd);
			return -E2BIG;
		}
	}
	if (fd)
		close(fd);
	*out = buf;
	*n = len;
	return 0;
}

static int out_to_fds(void *arg, enum agent_stream s, const void *data, size_t n)
{
	(void)arg;
	return write_all(s == AGENT_STDERR ? 2 : 1, data, n);
}

static int cmd_exec(struct cli *cli, int argc, char **argv)
{
	struct agent_client_exec_result res;
	struct agent_client_err e;
	struct proc_args p;
	char *in = NULL;
	size_t in_len = 0;
	int r, status;

	r = parse_proc(argc, argv, false, &p);
	if (r) {
		proc_args_free(&p);
		return r == EXIT_USAGE ? EXIT_USAGE : EXIT_PROC_FAILED;
	}
	if (p.stdin_file) {
		r = slurp(p.stdin_file, &in, &in_len);
		if (r == -E2BIG) {
			fprintf(stderr, "kiln-agent: exec: --stdin-file %s: too_large: exec takes at most %u bytes of stdin; use spawn and stdin for more\n",
				p.stdin_file, AGENT_LEN_MAX);
			proc_args_free(&p);
			return EXIT_USAGE;
		}
		if (r < 0) {
			fprintf(stderr, "kiln-agent: exec: --stdin-file %s: host_error: %s\n",
				p.stdin_file, strerror(-r));
			proc_args_free(&p);
			return EXIT_PROC_FAILED;
		}
		p.o.stdin_data = in;
		p.o.stdin_len = in_len;
	}
	/* Stream output as it arrives instead of holding up to the cap. */
	p.o.on_output = out_to_fds;
	r = agent_client_exec(&cli->c, &p.o, &res, &e);
	if (r < 0) {
		char what[300];

		snprintf(what, sizeof(what), "exec '%.256s'", p.o.argv[0]);
		status = report_proc(what, &e);
	} else {
		status = proc_status(&res.exit);
		if (res.exit.stdout_truncated || res.exit.stderr_truncated)
			fprintf(stderr, "kiln-agent: exec: output beyond --output-cap was dropped (stdout %" PRIu64 " bytes, stderr %" PRIu64 " bytes written)\n",
				res.exit.stdout_bytes, res.exit.stderr_bytes);
		if (p.json || cli->json) {
			json_t *j = status_json(&res.exit);

			json_object_set_new(j, "stdout_truncated", json_boolean(res.exit.stdout_truncated));
			json_object_set_new(j, "stderr_truncated", json_boolean(res.exit.stderr_truncated));
			json_object_set_new(j, "host_us", json_integer((json_int_t)res.host_us));
			print_json(stderr, j);
		}
	}
	agent_client_exec_result_free(&res);
	free(in);
	proc_args_free(&p);
	return status;
}

static int cmd_spawn(struct cli *cli, int argc, char **argv)
{
	struct agent_client_attached info;
	struct agent_client_stream *s;
	struct agent_client_err e;
	struct proc_args p;
	int r;

	r = parse_proc(argc, argv, true, &p);
	if (r) {
		proc_args_free(&p);
		return r;
	}
	r = agent_client_spawn(&cli->c, &p.o, &s, &info, &e);
	proc_args_free(&p);
	if (r < 0)
		return report("spawn", &e);
	/* Closing detaches: the process keeps running for attach/wait. */
	agent_client_stream_close(s);
	if (cli->json)
		print_json(stdout, json_pack("{s:I, s:i}", "id", (json_int_t)info.id, "pid", info.pid));
	else
		printf("%u\n", info.id);
	return 0;
}

/* The terminal mode to restore after a raw-mode attach. */
struct tty_state {
	bool raw;
	struct termios saved;
};

static void tty_raw(struct tty_state *t)
{
	struct termios raw;

	if (tcgetattr(0, &t->saved) < 0)
		return;
	raw = t->saved;
	cfmakeraw(&raw);
	if (tcsetattr(0, TCSANOW, &raw) == 0)
		t->raw = true;
}

static void tty_restore(struct tty_state *t)
{
	if (t->raw)
		tcsetattr(0, TCSANOW, &t->saved);
	t->raw = false;
}

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
		if (write_all(ev.kind == AGENT_EVENT_STDERR ? 2 : 1, ev.data, ev.len) < 0)
			return -EPIPE;
		break;
	case AGENT_EVENT_GAP:
		fprintf(stderr, "\r\nkiln-agent: attach: %" PRIu64 " bytes of output from seq %" PRIu64 " were lost (the ring overflowed)\r\n",
			ev.gap_bytes, ev.seq);
		break;
	case AGENT_EVENT_EXIT:
		*status = proc_status(&ev.exit);
		break;
	}
	return 0;
}

static int cmd_attach(struct cli *cli, int argc, char **argv)
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
	struct tty_state tty = { 0 };
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
				return usage_error("--from: '%s' is not a sequence number or 'now'", optarg);
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

		tty_raw(&tty);
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
				tty_restore(&tty);
				status = report_proc("attach: stdin", &e);
				break;
			}
		}
		if (agent_client_stream_pending(s) || (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
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
				tty_restore(&tty);
				status = report_proc("attach", &e);
				break;
			}
		}
	}
	tty_restore(&tty);
	free(buf);
	agent_client_stream_close(s);
	return status;
}

static int cmd_signal(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = { { "group", no_argument, 0, OPT_GROUP }, { 0, 0, 0, 0 } };
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

static int cmd_stdin(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = { { "close", no_argument, 0, OPT_CLOSE }, { 0, 0, 0, 0 } };
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

static int cmd_resize(struct cli *cli, int argc, char **argv)
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

static int cmd_wait(struct cli *cli, int argc, char **argv)
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
	struct agent_client_exit x = { .exit_code = p->exit_code, .signal = p->signal,
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
		print_json(stdout, json_pack("{s:I, s:i, s:o, s:b, s:b, s:o, s:o, s:b, s:I, s:I}",
					     "id", (json_int_t)p->id, "pid", p->pid, "argv", argv,
					     "pty", p->pty, "running", p->running, "exit_code",
					     p->exit_code >= 0 ? json_integer(p->exit_code) : json_null(),
					     "signal", p->signal ? json_integer(p->signal) : json_null(),
					     "timed_out", p->timed_out, "seq", (json_int_t)p->seq,
					     "attached", (json_int_t)p->attached));
		return 0;
	}
	printf("%u\t%d\t%s\t%" PRIu64 "\t%u\t", p->id, p->pid, state, p->seq, p->attached);
	for (size_t i = 0; i < p->argc; i++)
		printf("%s%s", i ? " " : "", p->argv[i]);
	printf("%s\n", p->argv_truncated ? " ..." : "");
	return 0;
}

static int cmd_ps(struct cli *cli, int argc, char **argv)
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

/* Options shared by the file commands; parse_file fills what it sees. */
struct file_args {
	enum agent_user user;
	const char *paths[2];
	int npaths;
	struct agent_client_read_opts read;
	struct agent_client_write_opts write;
	struct agent_client_list_opts list;
	bool no_follow, parents, recursive, overwrite, has_mode;
	uint32_t mode;
};

static int parse_file(int argc, char **argv, int want_paths, struct file_args *fa)
{
	static const struct option opts[] = {
		{ "user", required_argument, 0, OPT_USER },
		{ "offset", required_argument, 0, OPT_OFFSET },
		{ "length", required_argument, 0, OPT_LENGTH },
		{ "mode", required_argument, 0, OPT_MODE },
		{ "append", no_argument, 0, OPT_APPEND },
		{ "exclusive", no_argument, 0, OPT_EXCLUSIVE },
		{ "no-create", no_argument, 0, OPT_NO_CREATE },
		{ "parents", no_argument, 0, OPT_PARENTS },
		{ "no-follow", no_argument, 0, OPT_NO_FOLLOW },
		{ "depth", required_argument, 0, OPT_DEPTH },
		{ "limit", required_argument, 0, OPT_LIMIT },
		{ "overwrite", no_argument, 0, OPT_OVERWRITE },
		{ "recursive", no_argument, 0, 'r' },
		{ 0, 0, 0, 0 },
	};
	uint64_t v;
	int c;

	memset(fa, 0, sizeof(*fa));
	opts_reset();
	while ((c = next_opt(argc, argv, "pr", opts)) != -1) {
		switch (c) {
		case OPT_USER:
			if (!parse_user(optarg, &fa->user))
				return usage_error("--user must be 'user' or 'root', not '%s'", optarg);
			break;
		case OPT_OFFSET:
			if (!parse_u64(optarg, INT64_MAX, &fa->read.offset))
				return usage_error("--offset: '%s' is not a byte offset", optarg);
			break;
		case OPT_LENGTH:
			if (!parse_u64(optarg, INT64_MAX, &fa->read.length))
				return usage_error("--length: '%s' is not a byte count", optarg);
			fa->read.has_length = true;
			break;
		case OPT_MODE:
			if (!parse_mode(optarg, &fa->mode))
				return usage_error("--mode: '%s' is not an octal mode 0..7777", optarg);
			fa->has_mode = true;
			break;
		case OPT_APPEND:
			fa->write.append = true;
			break;
		case OPT_EXCLUSIVE:
			fa->write.exclusive = true;
			break;
		case OPT_NO_CREATE:
			fa->write.no_create = true;
			break;
		case OPT_PARENTS:
		case 'p':
			fa->parents = true;
			break;
		case 'r':
			fa->recursive = true;
			break;
		case OPT_NO_FOLLOW:
			fa->no_follow = true;
			break;
		case OPT_DEPTH:
			if (!parse_u64(optarg, AGENT_LIST_DEPTH_MAX, &v) || v == 0)
				return usage_error("--depth: '%s' is not 1..32", optarg);
			fa->list.depth = (uint32_t)v;
			break;
		case OPT_LIMIT:
			if (!parse_u64(optarg, AGENT_LIST_LIMIT_MAX, &v) || v == 0)
				return usage_error("--limit: '%s' is not 1..1000000", optarg);
			fa->list.limit = (uint32_t)v;
			break;
		case OPT_OVERWRITE:
			fa->overwrite = true;
			break;
		default:
			return EXIT_USAGE;
		}
	}
	if (argc - optind != want_paths)
		return usage_error("%s: wrong number of paths", argv[0]);
	for (int i = 0; i < want_paths; i++)
		fa->paths[i] = argv[optind + i];
	fa->npaths = want_paths;
	fa->read.user = fa->write.user = fa->list.user = fa->user;
	fa->write.parents = fa->parents;
	fa->write.has_mode = fa->has_mode;
	fa->write.mode = fa->mode;
	return 0;
}

static void what_path(char *buf, size_t n, const char *cmd, const char *path)
{
	snprintf(buf, n, "%s %s", cmd, path);
}

static int cmd_read(struct cli *cli, int argc, char **argv)
{
	struct agent_client_err e;
	struct file_args fa;
	char what[AGENT_PATH_MAX + 16];
	int r = parse_file(argc, argv, 1, &fa);

	if (r)
		return r;
	if (agent_client_read_fd(&cli->c, fa.paths[0], &fa.read, 1, NULL, &e) < 0) {
		what_path(what, sizeof(what), "read", fa.paths[0]);
		return report(what, &e);
	}
	return 0;
}

static int cmd_write(struct cli *cli, int argc, char **argv)
{
	struct agent_client_err e;
	struct file_args fa;
	char what[AGENT_PATH_MAX + 16];
	uint64_t bytes = 0;
	int r = parse_file(argc, argv, 1, &fa);

	if (r)
		return r;
	if (agent_client_write_fd(&cli->c, fa.paths[0], &fa.write, 0, &bytes, &e) < 0) {
		what_path(what, sizeof(what), "write", fa.paths[0]);
		return report(what, &e);
	}
	if (cli->json)
		print_json(stdout, json_pack("{s:I}", "bytes", (json_int_t)bytes));
	return 0;
}

static json_t *stat_json(const struct agent_client_stat *st, bool entry)
{
	json_t *o = json_pack("{s:s, s:s, s:I, s:i, s:I, s:I, s:I, s:I}", "path", st->path, "kind",
			      agent_client_kind_name(st->kind), "size", (json_int_t)st->size, "mode",
			      (int)st->mode, "uid", (json_int_t)st->uid, "gid", (json_int_t)st->gid,
			      "nlink", (json_int_t)st->nlink, "mtime_ns", (json_int_t)st->mtime_ns);

	if (o && entry)
		json_object_set_new(o, "depth", json_integer(st->depth));
	if (o && st->target)
		json_object_set_new(o, "target", json_string(st->target));
	if (o && st->lossy)
		json_object_set_new(o, "lossy", json_true());
	return o;
}

static int cmd_stat(struct cli *cli, int argc, char **argv)
{
	struct agent_client_stat st;
	struct agent_client_err e;
	struct file_args fa;
	char what[AGENT_PATH_MAX + 16];
	int r = parse_file(argc, argv, 1, &fa);

	if (r)
		return r;
	if (agent_client_stat(&cli->c, fa.paths[0], !fa.no_follow, fa.user, &st, &e) < 0) {
		what_path(what, sizeof(what), "stat", fa.paths[0]);
		return report(what, &e);
	}
	if (cli->json) {
		print_json(stdout, stat_json(&st, false));
	} else {
		printf("path %s\nkind %s\nsize %" PRIu64 "\nmode %04o\nuid %u\ngid %u\nnlink %" PRIu64
		       "\nmtime_ns %" PRId64 "\n",
		       st.path, agent_client_kind_name(st.kind), st.size, st.mode, st.uid, st.gid,
		       st.nlink, st.mtime_ns);
		if (st.target)
			printf("target %s\n", st.target);
	}
	agent_client_stat_free(&st);
	return 0;
}

static int cmd_exists(struct cli *cli, int argc, char **argv)
{
	enum agent_client_kind kind;
	struct agent_client_err e;
	struct file_args fa;
	char what[AGENT_PATH_MAX + 16];
	bool ex = false;
	int r = parse_file(argc, argv, 1, &fa);

	if (r)
		return r;
	if (agent_client_exists(&cli->c, fa.paths[0], !fa.no_follow, fa.user, &ex, &kind, &e) < 0) {
		what_path(what, sizeof(what), "exists", fa.paths[0]);
		return report(what, &e);
	}
	if (cli->json)
		print_json(stdout, ex ? json_pack("{s:b, s:s}", "exists", 1, "kind",
						  agent_client_kind_name(kind))
				      : json_pack("{s:b}", "exists", 0));
	else if (ex)
		printf("true %s\n", agent_client_kind_name(kind));
	else
		printf("false\n");
	return ex ? 0 : EXIT_FALSE;
}

static int print_entry(void *arg, const struct agent_client_stat *st)
{
	const struct cli *cli = arg;

	if (cli->json) {
		print_json(stdout, stat_json(st, true));
		return 0;
	}
	printf("%-7s %04o %12" PRIu64 " %s%s%s\n", agent_client_kind_name(st->kind), st->mode,
	       st->size, st->path, st->target ? " -> " : "", st->target ? st->target : "");
	return 0;
}

static int cmd_ls(struct cli *cli, int argc, char **argv)
{
	struct agent_client_list_end end;
	struct agent_client_err e;
	struct file_args fa;
	char what[AGENT_PATH_MAX + 16];
	int r = parse_file(argc, argv, 1, &fa);

	if (r)
		return r;
	if (agent_client_list_dir(&cli->c, fa.paths[0], &fa.list, print_entry, cli, &end, &e) < 0) {
		what_path(what, sizeof(what), "ls", fa.paths[0]);
		return report(what, &e);
	}
	if (end.truncated)
		fprintf(stderr, "kiln-agent: ls: stopped after %" PRIu64 " entries (--limit)\n",
			end.count);
	if (end.skipped)
		fprintf(stderr, "kiln-agent: ls: %" PRIu64 " unreadable entries skipped\n",
			end.skipped);
	return 0;
}

static int cmd_mkdir(struct cli *cli, int argc, char **argv)
{
	struct agent_client_err e;
	struct file_args fa;
	char what[AGENT_PATH_MAX + 16];
	int r = parse_file(argc, argv, 1, &fa);

	if (r)
		return r;
	if (agent_client_mkdir(&cli->c, fa.paths[0], fa.parents, fa.has_mode ? (int)fa.mode : -1,
			       fa.user, &e) < 0) {
		what_path(what, sizeof(what), "mkdir", fa.paths[0]);
		return report(what, &e);
	}
	return 0;
}

static int cmd_rm(struct cli *cli, int argc, char **argv)
{
	struct agent_client_err e;
	struct file_args fa;
	char what[AGENT_PATH_MAX + 16];
	int r = parse_file(argc, argv, 1, &fa);

	if (r)
		return r;
	if (agent_client_remove(&cli->c, fa.paths[0], fa.recursive, fa.user, &e) < 0) {
		what_path(what, sizeof(what), "rm", fa.paths[0]);
		return report(what, &e);
	}
	return 0;
}

static int cmd_mv(struct cli *cli, int argc, char **argv)
{
	struct agent_client_err e;
	struct file_args fa;
	char what[AGENT_PATH_MAX + 16];
	int r = parse_file(argc, argv, 2, &fa);

	if (r)
		return r;
	if (agent_client_rename(&cli->c, fa.paths[0], fa.paths[1], fa.overwrite, fa.user, &e) < 0) {
		what_path(what, sizeof(what), "mv", fa.paths[0]);
		return report(what, &e);
	}
	return 0;
}

static void print_tar(const struct cli *cli, FILE *f, const struct agent_client_tar_stats *t,
		      bool upload)
{
	if (cli->json) {
		json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I}", "files", (json_int_t)t->files,
				      "dirs", (json_int_t)t->dirs, "symlinks", (json_int_t)t->symlinks,
				      "skipped", (json_int_t)t->skipped, "bytes", (json_int_t)t->bytes);

		if (o && upload)
			json_object_set_new(o, "hardlinks", json_integer((json_int_t)t->hardlinks));
		print_json(f, o);
		return;
	}
	fprintf(f, "%" PRIu64 " files, %" PRIu64 " dirs, %" PRIu64 " symlinks, %" PRIu64
		   " hardlinks, %" PRIu64 " skipped, %" PRIu64 " bytes\n",
		t->files, t->dirs, t->symlinks, t->hardlinks, t->skipped, t->bytes);
}

static int cmd_tar_up(struct cli *cli, int argc, char **argv)
{
	struct agent_client_tar_stats t;
	struct agent_client_err e;
	struct file_args fa;
	char what[AGENT_PATH_MAX + 16];
	int r = parse_file(argc, argv, 1, &fa);

	if (r)
		return r;
	if (isatty(0))
		return usage_error("tar-up: stdin is a terminal; pipe a tar archive into it");
	if (agent_client_tar_upload(&cli->c, fa.paths[0], fa.user, 0, &t, &e) < 0) {
		what_path(what, sizeof(what), "tar-up", fa.paths[0]);
		return report(what, &e);
	}
	print_tar(cli, stdout, &t, true);
	return 0;
}

static int cmd_tar_down(struct cli *cli, int argc, char **argv)
{
	struct agent_client_tar_stats t;
	struct agent_client_err e;
	struct file_args fa;
	char what[AGENT_PATH_MAX + 16];
	int r = parse_file(argc, argv, 1, &fa);

	if (r)
		return r;
	if (isatty(1))
		return usage_error("tar-down: stdout is a terminal; redirect the archive to a file or pipe");
	if (agent_client_tar_download(&cli->c, fa.paths[0], fa.user, 1, &t, &e) < 0) {
		what_path(what, sizeof(what), "tar-down", fa.paths[0]);
		fprintf(stderr, "kiln-agent: tar-down: the archive on stdout is incomplete; discard it\n");
		return report(what, &e);
	}
	/* stdout carries the archive: the summary goes to stderr. */
	print_tar(cli, stderr, &t, false);
	return 0;
}

static int cmd_configure(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "hostname", required_argument, 0, OPT_HOSTNAME },
		{ "interface", required_argument, 0, OPT_INTERFACE },
		{ "address", required_argument, 0, OPT_ADDRESS },
		{ "gateway", required_argument, 0, OPT_GATEWAY },
		{ "dns", required_argument, 0, OPT_DNS },
		{ "no-dns", no_argument, 0, OPT_NO_DNS },
		{ "mtu", required_argument, 0, OPT_MTU },
		{ 0, 0, 0, 0 },
	};
	struct agent_client_configure cfg = { 0 };
	struct agent_client_err e;
	const char *dns[AGENT_DNS_MAX];
	int c;

	opts_reset();
	while ((c = next_opt(argc, argv, "", opts)) != -1) {
		switch (c) {
		case OPT_HOSTNAME:
			cfg.hostname = optarg;
			break;
		case OPT_INTERFACE:
			cfg.interface = optarg;
			break;
		case OPT_ADDRESS:
			cfg.address = optarg;
			break;
		case OPT_GATEWAY:
			cfg.gateway = optarg;
			break;
		case OPT_DNS:
			if (cfg.dns_n == AGENT_DNS_MAX)
				return usage_error("--dns: at most 3 servers (resolv.conf's limit)");
			dns[cfg.dns_n++] = optarg;
			cfg.set_dns = true;
			break;
		case OPT_NO_DNS:
			cfg.set_dns = true;
			break;
		case OPT_MTU:
			if (!parse_u32(optarg, 65535, &cfg.mtu))
				return usage_error("--mtu: '%s' is not 68..65535", optarg);
			break;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind != argc)
		return usage_error("configure: unexpected argument '%s'", argv[optind]);
	cfg.dns = dns;
	if (agent_client_configure(&cli->c, &cfg, &e) < 0)
		return report("configure", &e);
	return 0;
}

static int cmd_sync_clock(struct cli *cli, int argc, char **argv)
{
	struct agent_client_err e;
	struct timespec ts;
	int64_t t, delta = 0;
	uint64_t v;

	if (argc > 2)
		return usage_error("sync-clock: unexpected argument '%s'", argv[2]);
	if (argc == 2) {
		if (!parse_u64(argv[1], INT64_MAX, &v))
			return usage_error("sync-clock: '%s' is not nanoseconds since the epoch", argv[1]);
		t = (int64_t)v;
	} else {
		clock_gettime(CLOCK_REALTIME, &ts);
		t = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	}
	if (agent_client_sync_clock(&cli->c, t, &delta, &e) < 0)
		return report("sync-clock", &e);
	if (cli->json)
		print_json(stdout, json_pack("{s:I}", "delta_ns", (json_int_t)delta));
	else
		printf("delta_ns %" PRId64 "\n", delta);
	return 0;
}

static int cmd_shutdown(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "grace-ms", required_argument, 0, OPT_GRACE }, { 0, 0, 0, 0 }
	};
	struct agent_client_err e;
	uint32_t grace;
	int g = -1, c;

	opts_reset();
	while ((c = next_opt(argc, argv, "", opts)) != -1) {
		if (c != OPT_GRACE || !parse_u32(optarg, AGENT_GRACE_MAX_MS, &grace))
			return usage_error("shutdown: --grace-ms takes 0..60000");
		g = (int)grace;
	}
	if (optind != argc)
		return usage_error("shutdown: unexpected argument '%s'", argv[optind]);
	if (agent_client_shutdown(&cli->c, g, &e) < 0)
		return report("shutdown", &e);
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(struct cli *cli, int argc, char **argv);
} commands[] = {
	{ "wait-ready", cmd_wait_ready },
	{ "ping", cmd_ping },
	{ "info", cmd_info },
	{ "exec", cmd_exec },
	{ "spawn", cmd_spawn },
	{ "attach", cmd_attach },
	{ "signal", cmd_signal },
	{ "stdin", cmd_stdin },
	{ "resize", cmd_resize },
	{ "wait", cmd_wait },
	{ "ps", cmd_ps },
	{ "read", cmd_read },
	{ "write", cmd_write },
	{ "stat", cmd_stat },
	{ "exists", cmd_exists },
	{ "ls", cmd_ls },
	{ "mkdir", cmd_mkdir },
	{ "rm", cmd_rm },
	{ "mv", cmd_mv },
	{ "tar-up", cmd_tar_up },
	{ "tar-down", cmd_tar_down },
	{ "configure", cmd_configure },
	{ "sync-clock", cmd_sync_clock },
	{ "shutdown", cmd_shutdown },
};

int main(int argc, char **argv)
{
	enum { G_VSOCK = 1, G_TIMEOUT, G_JSON, G_HELP };
	static const struct option opts[] = {
		{ "vsock", required_argument, 0, G_VSOCK },
		{ "timeout", required_argument, 0, G_TIMEOUT },
		{ "json", no_argument, 0, G_JSON },
		{ "help", no_argument, 0, G_HELP },
		{ 0, 0, 0, 0 },
	};
	struct cli cli = { 0 };
	const char *vsock = NULL;
	uint32_t timeout = AGENT_CLIENT_TIMEOUT_DEFAULT_MS;
	int c;

	/* "+": stop at the command; its own options come after it. */
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case G_VSOCK:
			vsock = optarg;
			break;
		case G_TIMEOUT:
			if (!parse_u32(optarg, INT32_MAX, &timeout) || timeout == 0)
				return usage_error("--timeout: '%s' is not a positive number of ms", optarg);
			break;
		case G_JSON:
			cli.json = true;
			break;
		case 'h':
		case G_HELP:
			fputs(usage_text, stdout);
			return 0;
		default:
			fputs(usage_text, stderr);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fputs(usage_text, stderr);
		return EXIT_USAGE;
	}
	if (!vsock)
		return usage_error("--vsock PATH is required (kiln-vmm's --vsock socket)");
	if (agent_client_init(&cli.c, vsock) < 0)
		return usage_error("--vsock: '%s' is too long for a Unix socket path", vsock);
	cli.c.timeout_ms = (int)timeout;
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, argv[optind]) == 0)
			return commands[i].fn(&cli, argc - optind, argv + optind);
	return usage_error("unknown command '%s'", argv[optind]);
}
