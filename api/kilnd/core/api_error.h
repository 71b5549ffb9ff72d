/*
 * api_error: kilnd's error codes, their HTTP statuses and the JSON error
 * body {"error":{"code":"...","message":"..."}} (docs/api.md, "Conventions").
 *
 * Contract:
 *  - Pure: no I/O, no global state. A struct api_err is a plain value that
 *    library code fills and only the HTTP layer turns into a response.
 *  - A program decides by the code alone; every code has exactly one
 *    status, so the table in docs/api.md and api_code_status() agree.
 *  - The agent's errors (docs/agent-protocol.md, section 4) keep their
 *    code names where they mean the same thing to an API client.
 */
#ifndef KILN_API_ERROR_H
#define KILN_API_ERROR_H

#include <stdarg.h>

#include "lib/base/err.h"

enum api_code {
	API_OK = 0,
	API_E_BAD_REQUEST,
	API_E_BAD_JSON,
	API_E_MISSING_FIELD,
	API_E_UNKNOWN_FIELD,
	API_E_BAD_FIELD,
	API_E_TOO_LARGE,
	API_E_NOT_DIRECTORY,
	API_E_IS_DIRECTORY,
	API_E_UNSAFE_PATH,
	API_E_BAD_ARCHIVE,
	API_E_FORBIDDEN,
	API_E_PERMISSION_DENIED,
	API_E_ROUTE_NOT_FOUND,
	API_E_SANDBOX_NOT_FOUND,
	API_E_IMAGE_NOT_FOUND,
	API_E_PROCESS_NOT_FOUND,
	API_E_CHECKPOINT_NOT_FOUND,
	API_E_NOT_FOUND,
	API_E_METHOD_NOT_ALLOWED,
	API_E_REQUEST_TIMEOUT,
	API_E_WRONG_STATE,
	API_E_LIMIT_REACHED,
	API_E_EXISTS,
	API_E_NOT_EMPTY,
	API_E_INVALID_STATE,
	API_E_READ_ONLY,
	API_E_UNSUPPORTED,
	API_E_IN_USE,
	API_E_BODY_TOO_LARGE,
	API_E_URI_TOO_LONG,
	API_E_HEADERS_TOO_LARGE,
	API_E_INTERNAL,
	API_E_SPAWN_FAILED,
	API_E_BOOT_FAILED,
	API_E_IO_ERROR,
	API_E_AGENT_PROTOCOL,
	API_E_AGENT_UNAVAILABLE,
	API_E_BUSY,
	API_E_NO_EGRESS_PROXY,
	API_E_JAIL_UNAVAILABLE,
	API_E_TOO_MANY_CONNECTIONS,
	API_E_SHUTTING_DOWN,
	API_E_TIMEOUT,
	API_E_NO_SPACE,
	API_E_HTTP_VERSION,
	API_CODE_COUNT
};

struct api_err {
	enum api_code code;
	char msg[ERR_MSG_MAX];
};

/* "bad_json", ...; "ok" for API_OK; "internal" when out of range. */
const char *api_code_name(enum api_code code);

/* The HTTP status of a code (200 for API_OK, 500 when out of range). */
unsigned api_code_status(enum api_code code);

/* Set e's code and formatted message; returns the code. e may be NULL. */
enum api_code api_err_set(struct api_err *e, enum api_code code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
enum api_code api_err_vset(struct api_err *e, enum api_code code, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/*
 * The JSON error body for e, NUL-terminated, malloc'd (free()); the
 * message is made valid UTF-8 first (it may quote guest bytes). NULL only
 * when out of memory.
 */
char *api_error_body(const struct api_err *e);

#endif
