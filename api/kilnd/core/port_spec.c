/* Port mapping request bodies; see port_spec.h. */
#include "api/kilnd/core/port_spec.h"

#include <stdio.h>
#include <string.h>

#include "api/kilnd/core/json_fields.h"
#include "api/proto/agent_proto.h"

const char *port_target_name(enum port_target t)
{
	return t == PORT_TARGET_VSOCK ? "vsock" : "tcp";
}

int port_spec_parse(const json_t *body, struct port_spec *s, struct api_err *e)
{
	static const char *const allowed[] = { "guest_port", "host_port", "target", "guest_address",
					       NULL };
	static const char what[] = "port mapping";
	const char *target, *addr;
	uint64_t g, h;

	memset(s, 0, sizeof(*s));
	if (json_fields_only(body, allowed, what, e) ||
	    json_fields_uint(body, "guest_port", true, 1, 65535, 0, &g, what, e) ||
	    json_fields_uint(body, "host_port", false, 0, 65535, 0, &h, what, e) ||
	    json_fields_string(body, "target", false, 16, &target, what, e))
		return -1;
	if (!target || strcmp(target, "tcp") == 0) {
		s->target = PORT_TARGET_TCP;
	} else if (strcmp(target, "vsock") == 0) {
		s->target = PORT_TARGET_VSOCK;
	} else {
		api_err_set(e, API_E_BAD_FIELD,
			    "%s: target must be 'tcp' (a guest TCP port) or 'vsock' (a guest vsock port)",
			    what);
		return -1;
	}
	if (json_fields_string(body, "guest_address", false, 64, &addr, what, e))
		return -1;
	if (s->target == PORT_TARGET_VSOCK && addr) {
		api_err_set(e, API_E_BAD_FIELD, "%s: guest_address applies to target 'tcp' only",
			    what);
		return -1;
	}
	if (s->target == PORT_TARGET_TCP) {
		/* The agent's own rule (tcp_connect): the guest's loopback only. */
		if (addr && strcmp(addr, "127.0.0.1") != 0 && strcmp(addr, "::1") != 0) {
			api_err_set(e, API_E_BAD_FIELD,
				    "%s: guest_address must be '127.0.0.1' or '::1' (the guest's loopback)",
				    what);
			return -1;
		}
		s->guest_address = addr ? addr : "127.0.0.1";
	}
	if (s->target == PORT_TARGET_VSOCK && g == AGENT_PORT) {
		api_err_set(e, API_E_BAD_FIELD,
			    "%s: vsock port %u is the guest agent's; it cannot be forwarded (use exec and files instead)",
			    what, (unsigned)AGENT_PORT);
		return -1;
	}
	s->guest_port = (uint32_t)g;
	s->host_port = (uint16_t)h;
	return 0;
}
