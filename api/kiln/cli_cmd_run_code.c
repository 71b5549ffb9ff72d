/*
 * kiln run-code: run a snippet of Python, JavaScript, TypeScript or bash
 * in a sandbox (docs/api.md, POST .../run); -i sends our stdin to it. Its stdout and stderr become
 * ours, then its result (what the code passed to result.set) is printed
 * on stdout as one line of JSON, and an error (result.error or an
 * uncaught exception) as "kiln: run-code: TYPE: MESSAGE" on stderr. kiln
 * exits with the code's status (124 after --timeout-ms).
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
#include "lib/base/fd_io.h"
#include "lib/base/json_text.h"

/* docs/api.md: code and stdin together are at most 1 MiB. */
#define RUN_CODE_MAX (1u << 20)
#define RUN_CODE_USAGE \
	"kiln run-code ID --language python|javascript|typescript|bash (-c CODE | --file FILE | -)"

enum { RC_STREAM = CLI_PO_END, RC_LANG = 'l', RC_FILE = 'f', RC_CODE = 'c', RC_STDIN = 'i' };

struct run_code_req {
	char id[CLI_ID_MAX + 1];
	json_t *body;
	const char *file; /* --file, or "-" for stdin */
	bool have_code;   /* -c */
	bool stream;
	bool send_stdin; /* -i */
};

static int rc_opt(void *arg, int opt, const char *v, struct err *e)
{
	struct run_code_req *x = arg;

	switch (opt) {
	case RC_LANG:
		return cli_body_str(x->body, "language", "--language", v, e);
	case RC_CODE:
		x->have_code = true;
		return cli_body_str(x->body, "code", "-c", v, e);
	case RC_FILE:
		x->file = v;
		return 0;
	case RC_STREAM:
		x->stream = true;
		return 0;
	case RC_STDIN:
		x->send_stdin = true;
		return 0;
	}
	return 1;
}

static int rc_parse(int argc, char **argv, struct cli_globals *g, struct run_code_req *x,
		    struct err *e)
{
	static const struct option opts[] = {
		CLI_PROC_OPTIONS,
		{ "language", required_argument, NULL, RC_LANG },
		{ "file", required_argument, NULL, RC_FILE },
		{ "code", required_argument, NULL, RC_CODE },
		{ "stream", no_argument, NULL, RC_STREAM },
		{ "stdin", no_argument, NULL, RC_STDIN },
		CLI_GLOBAL_OPTIONS,
	};
	struct cli_getopt s;
	bool have_id = false;
	int opt, rc = 0;

	memset(x, 0, sizeof(*x));
	x->body = json_object();
	cli_getopt_init(&s, argc, argv, opts, g, e);
	while (!rc && (opt = cli_getopt_next(&s)) != CLI_GETOPT_DONE) {
		if (opt == CLI_GETOPT_ERROR) {
			rc = -1;
		} else if (opt == CLI_GETOPT_WORD && !have_id) {
			rc = cli_id_operand(x->id, s.value, e);
			have_id = true;
		} else if (opt == CLI_GETOPT_WORD && !strcmp(s.value, "-") && !x->file) {
			x->file = "-";
		} else if (opt == CLI_GETOPT_WORD || opt == CLI_GETOPT_REST) {
			err_set(e, EINVAL, "unexpected argument '%s' (%s)",
				opt == CLI_GETOPT_REST ? "--" : s.value, RUN_CODE_USAGE);
			rc = -1;
		} else {
			rc = cli_proc_opt(x->body, opt, s.value, e);
			if (rc == 1)
				rc = rc_opt(x, opt, s.value, e);
		}
	}
	if (!rc && !have_id)
		rc = -1, err_set(e, EINVAL, "missing sandbox id (%s)", RUN_CODE_USAGE);
	if (!rc && !json_object_get(x->body, "language"))
		rc = -1, err_set(e, EINVAL, "missing --language (%s)", RUN_CODE_USAGE);
	if (!rc && x->have_code == !!x->file)
		rc = -1,
		err_set(e, EINVAL, "give the code once: -c CODE, --file FILE or - for stdin (%s)",
			RUN_CODE_USAGE);
	if (!rc && x->send_stdin && x->file && !strcmp(x->file, "-"))
		rc = -1,
		err_set(e, EINVAL,
			"-i sends stdin to the code, '-' reads the code from it: not both");
	if (rc) {
		json_decref(x->body);
		x->body = NULL;
	}
	return rc;
}

/* The code from a file or stdin into body.code (UTF-8, at most 1 MiB). */
static int read_code(struct cli_ctx *c, struct run_code_req *x)
{
	int fd = strcmp(x->file, "-") ? open(x->file, O_RDONLY | O_CLOEXEC) : 0;
	uint8_t *buf = malloc(RUN_CODE_MAX + 1);
	struct cli_fail f;
	ssize_t n = -ENOMEM;
	json_t *s;

	if (fd < 0) {
		free(buf);
		cli_fail_set(&f, CLI_EXIT_LOCAL, NULL, "cannot open '%s': %m", x->file);
		return cli_report(c, "run-code", &f);
	}
	if (buf)
		n = fd_io_read_full(fd, buf, RUN_CODE_MAX + 1);
	if (fd > 0)
		close(fd);
	if (n < 0) {
		free(buf);
		cli_fail_set(&f, CLI_EXIT_LOCAL, NULL, "reading the code from '%s': %s", x->file,
			     strerror((int)-n));
		return cli_report(c, "run-code", &f);
	}
	if ((size_t)n > RUN_CODE_MAX) {
		free(buf);
		cli_fail_set(&f, CLI_EXIT_USAGE, NULL,
			     "the code in '%s' is over 1 MiB, run's limit", x->file);
		return cli_report(c, "run-code", &f);
	}
	s = json_stringn((const char *)buf, (size_t)n);
	free(buf);
	if (!s) {
		cli_fail_set(&f, CLI_EXIT_USAGE, NULL, "the code in '%s' is not UTF-8 text",
			     x->file);
		return cli_report(c, "run-code", &f);
	}
	json_object_set_new(x->body, "code", s);
	return 0;
}

/* After the output: the result on stdout, an error on stderr. */
static void print_result(const json_t *value, const json_t *error)
{
	char *v = json_text(value ? value : json_null(), JSON_COMPACT | JSON_ENCODE_ANY);

	fflush(stdout);
	if (json_is_object(error))
		fprintf(stderr, "kiln: run-code: %s: %s\n",
			json_string_value(json_object_get(error, "type")) ?: "Error",
			json_string_value(json_object_get(error, "message")) ?: "");
	if (v)
		printf("%s\n", v);
	free(v);
}

/* After a buffered run's output: a line break if it lacked one, then the result. */
static void after_buffered(const json_t *r)
{
	const char *out = json_string_value(json_object_get(r, "stdout"));
	size_t n = out ? strlen(out) : 0;

	if (n && out[n - 1] != '\n')
		fputc('\n', stdout);
	print_result(json_object_get(r, "result"), json_object_get(r, "error"));
}

static void after_stream(const json_t *ev)
{
	print_result(json_object_get(ev, "result"), json_object_get(ev, "error"));
}

int cli_cmd_run_code(struct cli_ctx *c, int argc, char **argv)
{
	struct run_code_req x;
	char what[128], path[160];
	struct err e;
	long long saved = c->wait_s;
	int rc;

	if (rc_parse(argc, argv, &c->g, &x, &e))
		return cli_usage_error(c, e.msg);
	rc = x.file ? read_code(c, &x) : 0;
	if (!rc && x.send_stdin)
		rc = cli_body_stdin(c, x.body);
	snprintf(what, sizeof(what), "run-code %s", x.id);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/run%s", x.id, x.stream ? "?stream=1" : "");
	if (x.stream && !json_object_get(x.body, "output_cap"))
		json_object_set_new(x.body, "output_cap", json_integer(CLI_STREAM_OUTPUT_CAP));
	c->wait_s = cli_exec_wait_s(x.body, x.stream);
	if (!rc)
		rc = x.stream ? cli_exec_stream(c, what, path, x.body, NULL, after_stream)
			      : cli_exec_buffered(c, what, path, x.body, after_buffered);
	c->wait_s = saved;
	json_decref(x.body);
	return rc;
}
