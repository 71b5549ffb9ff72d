/* kiln CLI failures and exit statuses (cli_error.h). */
#include "api/kiln/cli_error.h"
#include "lib/base/json.h"
#include "lib/base/text_clean.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <jansson.h>

int cli_fail_set(struct cli_fail *f, int exit, const char *code, const char *fmt, ...)
{
	va_list ap;

	f->exit = exit;
	snprintf(f->code, sizeof(f->code), "%s", code ? code : "");
	va_start(ap, fmt);
	vsnprintf(f->msg, sizeof(f->msg), fmt, ap);
	va_end(ap);
	return -1;
}

int cli_exit_for_code(const char *code)
{
	/* route_not_found is not here: it means this kilnd lacks the
	 * endpoint (an older daemon), not that the user's object is missing. */
	static const char *const not_found[] = { "sandbox_not_found", "image_not_found",
						 "process_not_found", "not_found" };

	for (size_t i = 0; i < sizeof(not_found) / sizeof(not_found[0]); i++)
		if (!strcmp(code, not_found[i]))
			return CLI_EXIT_NOT_FOUND;
	return CLI_EXIT_API;
}

void cli_fail_from_response(long status, const char *body, size_t len, struct cli_fail *f)
{
	json_t *root = body && len ? json_strict_loadb(body, len, NULL) : NULL;
	const char *code = NULL, *msg = NULL;

	if (root &&
	    json_unpack(root, "{s:{s:s, s:s}}", "error", "code", &code, "message", &msg) == 0 &&
	    *code) {
		cli_fail_set(f, cli_exit_for_code(code), code, "%s", msg);
	} else if (status == 404) {
		cli_fail_set(
			f, CLI_EXIT_API, "http_404",
			"kilnd answered 404 without an error body (is something else listening on the socket?)");
	} else {
		cli_fail_set(f, CLI_EXIT_API, NULL, "kilnd answered HTTP %ld without an error body",
			     status);
	}
	json_decref(root);
}

void cli_fail_unreachable(const char *socket, int os_errno, const char *detail, struct cli_fail *f)
{
	const char *run = "kilnd must run there (start it with `kilnd --socket PATH`, "
			  "or point kiln at it with --socket or KILN_SOCKET)";

	switch (os_errno) {
	case ENOENT:
		cli_fail_set(f, CLI_EXIT_UNREACHABLE, NULL,
			     "cannot reach kilnd: no socket at %s; %s", socket, run);
		break;
	case ECONNREFUSED:
		cli_fail_set(f, CLI_EXIT_UNREACHABLE, NULL,
			     "cannot reach kilnd: connection refused at %s (nobody listens on it); %s",
			     socket, run);
		break;
	case EACCES:
	case EPERM:
		cli_fail_set(
			f, CLI_EXIT_UNREACHABLE, NULL,
			"cannot reach kilnd: permission denied on %s; the socket is mode 0660: join its group "
			"(kilnd --socket-group) and have kilnd allow you (--allow-uid/--allow-gid)",
			socket);
		break;
	case ENOTSOCK:
		cli_fail_set(f, CLI_EXIT_UNREACHABLE, NULL,
			     "cannot reach kilnd: %s is not a socket; %s", socket, run);
		break;
	default:
		cli_fail_set(f, CLI_EXIT_UNREACHABLE, NULL, "cannot reach kilnd at %s: %s%s%s",
			     socket,
			     os_errno ? strerror(os_errno)
				      : (detail ? detail : "connection failed"),
			     os_errno && detail ? " / " : "", os_errno && detail ? detail : "");
		break;
	}
}

int cli_fail_socket_path(const char *socket, struct cli_fail *f)
{
	struct sockaddr_un sa;
	size_t n = strlen(socket);

	if (n < sizeof(sa.sun_path))
		return 0;
	return cli_fail_set(
		f, CLI_EXIT_UNREACHABLE, NULL,
		"cannot reach kilnd: the socket path is %zu bytes, longer than a Unix socket address "
		"holds (%zu with its NUL): '%.60s...'; use a shorter path (kilnd --socket and kiln "
		"--socket or KILN_SOCKET)",
		n, sizeof(sa.sun_path), socket);
}

void cli_fail_timeout(const char *socket, bool connected, unsigned long long seconds,
		      struct cli_fail *f)
{
	if (!connected)
		cli_fail_set(f, CLI_EXIT_UNREACHABLE, NULL,
			     "cannot reach kilnd: no connection within %llu s at %s (its queue of connections is "
			     "full: kilnd is stuck or overloaded); wait longer with --request-timeout SECONDS or "
			     "KILN_REQUEST_TIMEOUT (0: no limit)",
			     seconds, socket);
	else
		cli_fail_set(f, CLI_EXIT_TIMEOUT, NULL,
			     "kilnd did not answer within %llu s at %s; the request may still take effect there "
			     "(check with `kiln ls`); wait longer with --request-timeout SECONDS or "
			     "KILN_REQUEST_TIMEOUT (0: no limit)",
			     seconds, socket);
}

void cli_fail_unresponsive(const char *socket, unsigned long long seconds, struct cli_fail *f)
{
	cli_fail_set(f, CLI_EXIT_TIMEOUT, NULL,
		     "kilnd at %s did not answer, nor a health check within %llu s; the request may "
		     "still take effect there (check with `kiln ls`); wait longer with "
		     "--request-timeout SECONDS or KILN_REQUEST_TIMEOUT (0: no limit)",
		     socket, seconds);
}

int cli_answer_need(const json_t *v, const char *field, json_type type, struct cli_fail *f)
{
	const json_t *x = json_object_get(v, field);
	const char *kind = type == JSON_STRING ? "a string "
		: type == JSON_INTEGER         ? "an integer "
		: type == JSON_OBJECT          ? "an object "
		: type == JSON_ARRAY           ? "an array "
					       : "";

	if (x && json_typeof(x) == type && (type != JSON_STRING || *json_string_value(x)))
		return 0;
	return cli_fail_set(f, CLI_EXIT_API, NULL,
			    "kilnd answered without %s'%s' (%s; another program on the socket, or a kilnd of "
			    "another version?); --json shows the answer",
			    kind, field,
			    !v                           ? "no body"
				    : !json_is_object(v) ? "not a JSON object"
				    : x                  ? "wrong type"
							 : "missing");
}

void cli_fail_print(FILE *out, const char *what, const struct cli_fail *f)
{
	size_t n = strlen(what);

	fputs("kiln: ", out);
	/* kilnd's messages often start with the same words ("image import:
	 * ..."): said once */
	if (strncmp(f->msg, what, n) != 0 || strncmp(f->msg + n, ": ", 2) != 0) {
		text_clean_term_fput(out, what);
		fputs(": ", out);
	}
	text_clean_term_fput(out, f->msg);
	if (f->code[0]) {
		fputs(" (", out);
		text_clean_term_fput(out, f->code);
		fputc(')', out);
	}
	fputc('\n', out);
}
