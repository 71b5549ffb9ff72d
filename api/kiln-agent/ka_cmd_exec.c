/*
 * ka_cmd_exec: run a process: exec (to completion, output streamed to
 * ours) and spawn (in the background, for attach and wait).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/kiln-agent/ka_cmds.h"
#include "lib/base/fd_io.h"

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

/* How a process runs, for exec and spawn alike (the agent's PROC_FIELDS). */
#define PROC_OPTS                                                                             \
	{ "user", required_argument, 0, OPT_USER }, { "cwd", required_argument, 0, OPT_CWD }, \
		{ "env", required_argument, 0, OPT_ENV },                                     \
		{ "timeout-ms", required_argument, 0, OPT_TIMEOUT_MS },                       \
		{ "shell", no_argument, 0, OPT_SHELL },                                       \
	{                                                                                     \
		"confine", no_argument, 0, OPT_CONFINE                                        \
	}

static int parse_proc(int argc, char **argv, bool spawn, struct proc_args *p)
{
	static const struct option exec_opts[] = {
		PROC_OPTS,
		{ "output-cap", required_argument, 0, OPT_OUTPUT_CAP },
		{ "stdin-file", required_argument, 0, OPT_STDIN_FILE },
		{ "json", no_argument, 0, OPT_JSON },
		{ 0, 0, 0, 0 },
	};
	static const struct option spawn_opts[] = {
		PROC_OPTS,
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
				return usage_error("--user must be 'user' or 'root', not '%s'",
						   optarg);
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
				return usage_error("--timeout-ms: '%s' is not 0..604800000",
						   optarg);
			break;
		case OPT_SHELL:
			p->o.shell = true;
			break;
		case OPT_CONFINE:
			p->o.confine = true;
			break;
		case OPT_OUTPUT_CAP:
			if (!parse_u32(optarg, AGENT_OUTPUT_CAP_MAX, &v))
				return usage_error("--output-cap: '%s' is not 0..268435456",
						   optarg);
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
				return usage_error("--ring-bytes: '%s' is not 4096..4194304",
						   optarg);
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

int slurp(const char *path, char **out, size_t *n)
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
	buf[len] = '\0';
	*out = buf;
	*n = len;
	return 0;
}

static int out_to_fds(void *arg, enum agent_stream s, const void *data, size_t n)
{
	(void)arg;
	return fd_io_write_all(s == AGENT_STDERR ? 2 : 1, data, n);
}

int cmd_exec(struct cli *cli, int argc, char **argv)
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
			fprintf(stderr,
				"kiln-agent: exec: --stdin-file %s: too_large: exec takes at most %u bytes of stdin; use spawn and stdin for more\n",
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
			fprintf(stderr,
				"kiln-agent: exec: output beyond --output-cap was dropped (stdout %" PRIu64
				" bytes, stderr %" PRIu64 " bytes written)\n",
				res.exit.stdout_bytes, res.exit.stderr_bytes);
		if (p.json || cli->json) {
			json_t *j = status_json(&res.exit);

			json_object_set_new(j, "stdout_truncated",
					    json_boolean(res.exit.stdout_truncated));
			json_object_set_new(j, "stderr_truncated",
					    json_boolean(res.exit.stderr_truncated));
			json_object_set_new(j, "host_us", json_integer((json_int_t)res.host_us));
			print_json(stderr, j);
		}
	}
	agent_client_exec_result_free(&res);
	free(in);
	proc_args_free(&p);
	return status;
}

int cmd_spawn(struct cli *cli, int argc, char **argv)
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
		print_json(stdout,
			   json_pack("{s:I, s:i}", "id", (json_int_t)info.id, "pid", info.pid));
	else
		printf("%u\n", info.id);
	return 0;
}
