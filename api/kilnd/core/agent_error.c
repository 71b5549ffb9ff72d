/* A failure of libkiln's agent API as a kilnd API error; see agent_error.h. */
#include "api/kilnd/core/agent_error.h"

#include <string.h>

#include "api/proto/agent_proto.h"

/* The agent's codes as API codes. Framing and request-shape codes mean
 * kilnd built a request the agent did not expect: a kilnd bug (500). */
static enum api_code from_agent_code(enum agent_code c)
{
	switch (c) {
	case AGENT_E_BAD_FIELD:
		return API_E_BAD_FIELD;
	case AGENT_E_TOO_LARGE:
		return API_E_TOO_LARGE;
	case AGENT_E_NOT_FOUND:
		return API_E_NOT_FOUND;
	case AGENT_E_EXISTS:
		return API_E_EXISTS;
	case AGENT_E_NOT_DIRECTORY:
		return API_E_NOT_DIRECTORY;
	case AGENT_E_IS_DIRECTORY:
		return API_E_IS_DIRECTORY;
	case AGENT_E_NOT_EMPTY:
		return API_E_NOT_EMPTY;
	case AGENT_E_PERMISSION_DENIED:
		return API_E_PERMISSION_DENIED;
	case AGENT_E_READ_ONLY:
		return API_E_READ_ONLY;
	case AGENT_E_NO_SPACE:
		return API_E_NO_SPACE;
	case AGENT_E_UNSAFE_PATH:
		return API_E_UNSAFE_PATH;
	case AGENT_E_BAD_ARCHIVE:
		return API_E_BAD_ARCHIVE;
	case AGENT_E_INVALID_STATE:
		return API_E_INVALID_STATE;
	case AGENT_E_BUSY:
		return API_E_BUSY;
	case AGENT_E_TIMEOUT:
		return API_E_TIMEOUT;
	case AGENT_E_IO_ERROR:
		return API_E_IO_ERROR;
	default:
		return API_E_INTERNAL;
	}
}

/* The agent's code named `name` ("not_found"), AGENT_CODE_COUNT if none. */
static enum agent_code agent_code_of(const char *name)
{
	for (int c = AGENT_OK; c < AGENT_CODE_COUNT; c++)
		if (agent_code_name((enum agent_code)c) &&
		    strcmp(agent_code_name((enum agent_code)c), name) == 0)
			return (enum agent_code)c;
	return AGENT_CODE_COUNT;
}

enum api_code api_err_from_agent_fail(struct api_err *e, enum kiln_agent_fail kind,
				      const char *code, const char *msg, const char *what)
{
	enum api_code c;

	switch (kind) {
	case KILN_AGENT_FAIL_AGENT:
	case KILN_AGENT_FAIL_REQUEST:
		c = from_agent_code(agent_code_of(code ? code : ""));
		break;
	case KILN_AGENT_FAIL_UNREACHABLE:
	case KILN_AGENT_FAIL_TIMEOUT:
		c = API_E_AGENT_UNAVAILABLE;
		break;
	case KILN_AGENT_FAIL_PROTOCOL:
		c = API_E_AGENT_PROTOCOL;
		break;
	default:
		c = API_E_INTERNAL;
		break;
	}
	/* libkiln's messages, as the agent's, name the operation already. */
	if (msg && msg[0])
		return api_err_set(e, c, "%s", msg);
	return api_err_set(e, c, "%s failed", what);
}

enum api_code api_err_from_agent(struct api_err *e, const kiln_agent *a, const char *what)
{
	return api_err_from_agent_fail(e, kiln_agent_errkind(a), kiln_agent_errcode(a),
				       kiln_agent_errmsg(a), what);
}
