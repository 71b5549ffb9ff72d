/*
 * ka_common: what kiln-agent's commands share: the error line and exit
 * status of a failure, argument parsers, and output helpers.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/base/json_text.h"
#include "lib/base/num_parse.h"
#include "lib/base/text_clean.h"

#include "api/kiln-agent/ka_cmds.h"

int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "kiln-agent: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "; see kiln-agent --help\n");
	return EXIT_USAGE;
}

int exit_for(const struct agent_client_err *e)
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

int report(const char *what, const struct agent_client_err *e)
{
	/* An agent error's message is the guest's text, and what may quote a
	 * name the caller took from the guest. */
	fputs("kiln-agent: ", stderr);
	print_guest_text(stderr, what);
	fprintf(stderr, ": %s: ", agent_client_err_name(e));
	print_guest_text(stderr, e->msg);
	fputc('\n', stderr);
	return exit_for(e);
}

/* The same for commands whose status is a process's. */
int report_proc(const char *what, const struct agent_client_err *e)
{
	report(what, e);
	if (e->fail == AGENT_FAIL_AGENT && e->code == AGENT_E_NOT_FOUND)
		return EXIT_PROC_NOT_FOUND;
	if (e->fail == AGENT_FAIL_AGENT &&
	    (e->code == AGENT_E_PERMISSION_DENIED || e->code == AGENT_E_IO_ERROR))
		return EXIT_PROC_CANNOT_RUN;
	return EXIT_PROC_FAILED;
}

int local_error(const char *what, int errnum)
{
	fprintf(stderr, "kiln-agent: %s: host_error: %s\n", what, strerror(errnum));
	return EXIT_HOST;
}

/* ---- argument parsing ---- */

/* Digits only (no sign or space), at most max (lib/base/num_parse). */
bool parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	return num_parse_u64(s, 10, 0, max, out) == 0;
}

bool parse_u32(const char *s, uint32_t max, uint32_t *out)
{
	uint64_t v;

	if (!parse_u64(s, max, &v))
		return false;
	*out = (uint32_t)v;
	return true;
}

bool parse_mode(const char *s, uint32_t *out)
{
	uint64_t v;

	if (num_parse_u64(s, 8, 0, 07777, &v) < 0)
		return false;
	*out = (uint32_t)v;
	return true;
}

bool parse_user(const char *s, enum agent_user *u)
{
	if (strcmp(s, "user") == 0)
		*u = AGENT_USER_USER;
	else if (strcmp(s, "root") == 0)
		*u = AGENT_USER_ROOT;
	else
		return false;
	return true;
}

bool parse_signal(const char *s, int *signo)
{
	uint32_t v;

	if (parse_u32(s, 64, &v) && v >= 1) {
		*signo = (int)v;
		return true;
	}
	*signo = agent_signal_by_name(s);
	return *signo > 0;
}

bool parse_id(const char *s, uint32_t *id)
{
	return parse_u32(s, UINT32_MAX, id) && *id > 0;
}

/* getopt_long over a command's own arguments (argv[0] is its name). */
int next_opt(int argc, char **argv, const char *shortopts, const struct option *longopts)
{
	return getopt_long(argc, argv, shortopts, longopts, NULL);
}

void opts_reset(void)
{
	/* GNU getopt: 0 reinitialises it for a new argument vector. */
	optind = 0;
}

/* ---- output ---- */

void print_guest_text(FILE *f, const char *s)
{
	text_clean_term_fput(f, s);
}

/* Print one JSON object as a line and drop it. */
void print_json(FILE *f, json_t *o)
{
	char *s = o ? json_text(o, JSON_COMPACT) : NULL;

	if (s) {
		fprintf(f, "%s\n", s);
		free(s);
	}
	json_decref(o);
}

json_t *status_json(const struct agent_client_exit *x)
{
	return json_pack("{s:I, s:o, s:o, s:b, s:I, s:I, s:I, s:I, s:I}", "pid", (json_int_t)x->pid,
			 "exit_code", x->exit_code >= 0 ? json_integer(x->exit_code) : json_null(),
			 "signal", x->signal ? json_integer(x->signal) : json_null(), "timed_out",
			 x->timed_out, "stdout_bytes", (json_int_t)x->stdout_bytes, "stderr_bytes",
			 (json_int_t)x->stderr_bytes, "wall_us", (json_int_t)x->wall_us, "user_us",
			 (json_int_t)x->user_us, "sys_us", (json_int_t)x->sys_us);
}

/* A process status as the shell would give it. */
int proc_status(const struct agent_client_exit *x)
{
	if (x->timed_out)
		return EXIT_PROC_TIMEOUT;
	if (x->exit_code >= 0)
		return x->exit_code;
	return 128 + x->signal;
}

void describe_status(char *buf, size_t n, const struct agent_client_exit *x)
{
	if (x->timed_out)
		snprintf(buf, n, "timed out (killed)");
	else if (x->exit_code >= 0)
		snprintf(buf, n, "exited %d", x->exit_code);
	else
		snprintf(buf, n, "killed by signal %d (%s)", x->signal, strsignal(x->signal));
}
