/* kilnd error codes and bodies; see api_error.h and docs/api.md. */
#include "api/kilnd/core/api_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/base/json_text.h"
#include "lib/base/utf8.h"

static const struct {
	const char *name;
	unsigned status;
} codes[API_CODE_COUNT] = {
	[API_OK] = { "ok", 200 },
	[API_E_BAD_REQUEST] = { "bad_request", 400 },
	[API_E_BAD_JSON] = { "bad_json", 400 },
	[API_E_MISSING_FIELD] = { "missing_field", 400 },
	[API_E_UNKNOWN_FIELD] = { "unknown_field", 400 },
	[API_E_BAD_FIELD] = { "bad_field", 400 },
	[API_E_TOO_LARGE] = { "too_large", 400 },
	[API_E_NOT_DIRECTORY] = { "not_directory", 400 },
	[API_E_IS_DIRECTORY] = { "is_directory", 400 },
	[API_E_UNSAFE_PATH] = { "unsafe_path", 400 },
	[API_E_BAD_ARCHIVE] = { "bad_archive", 400 },
	[API_E_FORBIDDEN] = { "forbidden", 403 },
	[API_E_PERMISSION_DENIED] = { "permission_denied", 403 },
	[API_E_ROUTE_NOT_FOUND] = { "route_not_found", 404 },
	[API_E_SANDBOX_NOT_FOUND] = { "sandbox_not_found", 404 },
	[API_E_IMAGE_NOT_FOUND] = { "image_not_found", 404 },
	[API_E_PROCESS_NOT_FOUND] = { "process_not_found", 404 },
	[API_E_CHECKPOINT_NOT_FOUND] = { "checkpoint_not_found", 404 },
	[API_E_NOT_FOUND] = { "not_found", 404 },
	[API_E_METHOD_NOT_ALLOWED] = { "method_not_allowed", 405 },
	[API_E_REQUEST_TIMEOUT] = { "request_timeout", 408 },
	[API_E_WRONG_STATE] = { "wrong_state", 409 },
	[API_E_LIMIT_REACHED] = { "limit_reached", 409 },
	[API_E_EXISTS] = { "exists", 409 },
	[API_E_NOT_EMPTY] = { "not_empty", 409 },
	[API_E_INVALID_STATE] = { "invalid_state", 409 },
	[API_E_READ_ONLY] = { "read_only", 409 },
	[API_E_UNSUPPORTED] = { "unsupported", 409 },
	[API_E_IN_USE] = { "in_use", 409 },
	[API_E_BUSY] = { "busy", 409 },
	[API_E_BODY_TOO_LARGE] = { "body_too_large", 413 },
	[API_E_URI_TOO_LONG] = { "uri_too_long", 414 },
	[API_E_HEADERS_TOO_LARGE] = { "headers_too_large", 431 },
	[API_E_INTERNAL] = { "internal", 500 },
	[API_E_SPAWN_FAILED] = { "spawn_failed", 500 },
	[API_E_BOOT_FAILED] = { "boot_failed", 500 },
	[API_E_IO_ERROR] = { "io_error", 500 },
	[API_E_AGENT_PROTOCOL] = { "agent_protocol_error", 502 },
	[API_E_AGENT_UNAVAILABLE] = { "agent_unavailable", 503 },
	[API_E_NO_EGRESS_PROXY] = { "no_egress_proxy", 409 },
	[API_E_JAIL_UNAVAILABLE] = { "jail_unavailable", 503 },
	[API_E_TOO_MANY_CONNECTIONS] = { "too_many_connections", 503 },
	[API_E_SHUTTING_DOWN] = { "shutting_down", 503 },
	[API_E_TIMEOUT] = { "timeout", 504 },
	[API_E_NO_SPACE] = { "no_space", 507 },
	[API_E_HTTP_VERSION] = { "http_version_not_supported", 505 },
};

const char *api_code_name(enum api_code code)
{
	if ((unsigned)code >= API_CODE_COUNT)
		return "internal";
	return codes[code].name;
}

unsigned api_code_status(enum api_code code)
{
	if ((unsigned)code >= API_CODE_COUNT)
		return 500;
	return codes[code].status;
}

enum api_code api_err_vset(struct api_err *e, enum api_code code, const char *fmt, va_list ap)
{
	if (e) {
		e->code = code;
		vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	}
	return code;
}

enum api_code api_err_set(struct api_err *e, enum api_code code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	api_err_vset(e, code, fmt, ap);
	va_end(ap);
	return code;
}

char *api_error_body(const struct api_err *e)
{
	size_t n = strnlen(e->msg, sizeof(e->msg));
	char clean[3 * ERR_MSG_MAX + 1];
	json_t *o;
	char *s;

	utf8_lossy(clean, sizeof(clean), (const uint8_t *)e->msg, n, 0, NULL);
	o = json_pack("{s:{s:s,s:s}}", "error", "code", api_code_name(e->code), "message", clean);
	if (!o)
		return NULL;
	s = json_text(o, JSON_COMPACT);
	json_decref(o);
	return s;
}
