/*
 * kiln ps, spawn, logs, kill, wait, stdin: background processes
 * (docs/api.md, "Processes"). A process belongs to the guest agent, not
 * to kiln: spawn prints its id and returns, and any later kiln reads its
 * output, writes its stdin, signals it or waits for it by that id.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/kiln/cli_body.h"
#include "api/kiln/cli_cmds.h"
#include "api/kiln/cli_exec_out.h"
#include "api/kiln/cli_format.h"
#include "lib/base/json.h"

/* Bytes per stdin request: kilnd's default --max-body is 2 MiB. */
#define STDIN_CHUNK (1u << 20)

static int proc_usage(struct cli_ctx *c, const char *cmd, int argc, char **argv,
		      struct cli_proc_req *p)
{
	struct err e;

	if (cli_proc_parse(cmd, argc, argv, &c->g, p, &e))
		return cli_usage_error(c, e.msg);
	return 0;
}

int cli_cmd_ps(struct cli_ctx *c, int argc, char **argv)
{
	char id[CLI_ID_MAX + 1], path[CLI_ID_MAX + 40], what[CLI_ID_MAX + 8];
	struct err e;

	if (cli_one_id(argc, argv, &c->g, id, &e))
		return cli_usage_error(c, e.msg);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/processes", id);
	snprintf(what, sizeof(what), "ps %s", id);
	return cli_call_show(c, what, "GET", path, NULL, cli_format_procs);
}

int cli_cmd_spawn(struct cli_ctx *c, int argc, char **argv)
{
	struct cli_spawn_req r;
	char path[CLI_ID_MAX + 40], what[CLI_ID_MAX + 8];
	struct err e;
	json_t *v = NULL;
	struct cli_fail f;
	int rc;

	if (cli_spawn_parse(argc, argv, &c->g, &r, &e))
		return cli_usage_error(c, e.msg);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/processes", r.id);
	snprintf(what, sizeof(what), "spawn %s", r.id);
	rc = r.send_stdin ? cli_body_stdin(c, r.body) : 0;
	c->wait_s = CLI_WAIT_BOOT; /* a hibernated sandbox wakes first */
	if (!rc)
		rc = cli_call_json(c, what, "POST", path, r.body, &v);
	if (!rc && cli_answer_need(v, "id", JSON_INTEGER, &f))
		rc = cli_report(c, what, &f);
	else if (!rc && !c->g.json)
		printf("%lld\n", (long long)json_integer_value(json_object_get(v, "id")));
	else if (!rc)
		cli_print_json(v, false);
	json_decref(v);
	json_decref(r.body);
	return rc;
}

int cli_cmd_logs(struct cli_ctx *c, int argc, char **argv)
{
	struct cli_proc_req p;
	struct cli_stream s;
	char path[CLI_ID_MAX + 160], what[CLI_ID_MAX + 32];
	struct cli_req req = { .method = "GET", .path = path };
	struct cli_fail f;
	json_t *v = NULL;
	int rc = proc_usage(c, "logs", argc, argv, &p);

	if (rc)
		return rc;
	snprintf(what, sizeof(what), "logs %s %lu", p.id, p.proc);
	cli_stream_init(&s, c, "logs");
	if (!p.follow) {
		/* The output so far ends at output_bytes: read up to there. */
		snprintf(path, sizeof(path), "/v1/sandboxes/%s/processes/%lu", p.id, p.proc);
		rc = cli_call_json(c, what, "GET", path, NULL, &v);
		if (rc)
			goto out;
		if (!json_is_integer(json_object_get(v, "output_bytes"))) {
			cli_fail_set(&f, CLI_EXIT_API, NULL,
				     "kilnd's process object has no output_bytes");
			rc = cli_report(c, what, &f);
			goto out;
		}
		s.nd.until = true;
		s.nd.until_seq = (unsigned long long)json_integer_value(
			json_object_get(v, "output_bytes"));
	}
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/processes/%lu/output%s", p.id, p.proc,
		 p.query);
	/* 0 also when the process's exit event came: logs shows, it does not wait. */
	rc = cli_stream_call(c, what, &req, &s);
out:
	json_decref(v);
	cli_ndjson_free(&s.nd);
	return rc;
}

int cli_cmd_kill(struct cli_ctx *c, int argc, char **argv)
{
	struct cli_proc_req p;
	char path[CLI_ID_MAX + 80], what[CLI_ID_MAX + 32];
	json_t *v = NULL;
	int rc = proc_usage(c, "kill", argc, argv, &p);

	if (rc)
		return rc;
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/processes/%lu/signal", p.id, p.proc);
	snprintf(what, sizeof(what), "kill %s %lu", p.id, p.proc);
	rc = cli_call_json(c, what, "POST", path, p.body, &v);
	json_decref(v);
	json_decref(p.body);
	return rc;
}

/*
 * One wait request: 0 with *v, 1 when kilnd says the process still runs
 * after the request's timeout_ms, or -1 with f.
 */
static int wait_once(struct cli_ctx *c, const char *path, json_t **v, struct cli_fail *f)
{
	struct cli_req req = { .method = "POST", .path = path };
	struct cli_resp resp;
	json_error_t je;

	*v = NULL;
	if (cli_call_quiet(c, &req, &resp, f))
		return strcmp(f->code, "timeout") ? -1 : 1;
	*v = resp.len ? json_strict_loadb(resp.body, resp.len, &je) : NULL;
	free(resp.body);
	if (resp.len && !*v)
		return cli_fail_set(f, CLI_EXIT_API, NULL, "kilnd's answer is not JSON (%s)",
				    je.text);
	return 0;
}

int cli_cmd_wait(struct cli_ctx *c, int argc, char **argv)
{
	struct cli_proc_req p;
	char path[CLI_ID_MAX + 160], what[CLI_ID_MAX + 32];
	json_t *v = NULL;
	struct cli_fail f;
	int rc = proc_usage(c, "wait", argc, argv, &p), status;
	bool sliced;

	if (rc)
		return rc;
	/* No --timeout-ms: waits of CLI_WAIT_SLICE_S, one after the other, so
	 * each answer is bounded and a socket that never answers is found. */
	sliced = p.wait_s < 0;
	if (sliced)
		snprintf(p.query, sizeof(p.query), "?timeout_ms=%d", CLI_WAIT_SLICE_S * 1000);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/processes/%lu/wait%s", p.id, p.proc,
		 p.query);
	snprintf(what, sizeof(what), "wait %s %lu", p.id, p.proc);
	/* The first may wake a hibernated sandbox. */
	c->wait_s = sliced ? CLI_WAIT_SLICE_S + CLI_WAIT_BOOT : p.wait_s;
	do
		rc = wait_once(c, path, &v, &f);
	while (rc > 0 && sliced);
	if (rc)
		return cli_report(c, what, &f);
	rc = cli_show(c, v, cli_format_exit);
	status = cli_exec_status(v);
	if (!rc && status < 0) {
		cli_fail_set(&f, CLI_EXIT_API, NULL,
			     "kilnd's exit object has no exit_code or signal");
		rc = cli_report(c, what, &f);
	} else if (!rc) {
		rc = status; /* as exec: the process's status is kiln's */
	}
	json_decref(v);
	return rc;
}

struct mem_src {
	const char *p;
	size_t left;
};

static ssize_t mem_read(void *arg, char *p, size_t n)
{
	struct mem_src *m = arg;

	if (n > m->left)
		n = m->left;
	memcpy(p, m->p, n);
	m->p += n;
	m->left -= n;
	return (ssize_t)n;
}

int cli_cmd_stdin(struct cli_ctx *c, int argc, char **argv)
{
	struct cli_proc_req p;
	char path[CLI_ID_MAX + 160], what[CLI_ID_MAX + 32], *buf = NULL;
	unsigned long long total = 0;
	bool closed = false;
	struct cli_fail f;
	int rc = proc_usage(c, "stdin", argc, argv, &p), fd = 0;

	if (rc)
		return rc;
	snprintf(what, sizeof(what), "stdin %s %lu", p.id, p.proc);
	if (p.file && strcmp(p.file, "-")) {
		fd = open(p.file, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			cli_fail_set(&f, CLI_EXIT_LOCAL, NULL, "'%s': %s", p.file, strerror(errno));
			return cli_report(c, what, &f);
		}
	}
	buf = malloc(STDIN_CHUNK);
	if (!buf) {
		cli_fail_set(&f, CLI_EXIT_API, NULL, "out of memory");
		rc = cli_report(c, what, &f);
	}
	/* One request per chunk; the last one closes when asked to. */
	while (!rc) {
		ssize_t got = fd_io_read_full(fd, buf, STDIN_CHUNK);
		bool eof = got >= 0 && got < (ssize_t)STDIN_CHUNK;
		struct mem_src m = { buf, got > 0 ? (size_t)got : 0 };
		struct cli_req req = {
			.method = "POST", .path = path, .source = mem_read, .source_arg = &m
		};
		struct cli_resp resp;

		if (got < 0) {
			cli_fail_set(&f, CLI_EXIT_LOCAL, NULL, "reading %s: %s",
				     p.file ? p.file : "stdin", strerror((int)-got));
			rc = cli_report(c, what, &f);
			break;
		}
		if (got == 0 && !p.close)
			break;
		req.source_size = got;
		snprintf(path, sizeof(path), "/v1/sandboxes/%s/processes/%lu/stdin%s", p.id, p.proc,
			 eof && p.close ? "?close=1" : "");
		rc = cli_call(c, what, &req, &resp);
		if (!rc)
			free(resp.body);
		total += (unsigned long long)got;
		closed = eof && p.close;
		if (eof)
			break;
	}
	if (!rc && c->g.json) {
		json_t *v = json_pack("{s:I, s:b}", "bytes", (json_int_t)total, "closed", closed);

		cli_print_json(v, false);
		json_decref(v);
	}
	free(buf);
	if (fd > 0)
		close(fd);
	return rc;
}
