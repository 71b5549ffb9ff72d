/*
 * port_spec: the body of POST /v1/sandboxes/{id}/ports (docs/api.md,
 * "Ports"), validated into a port mapping.
 *
 * Contract: pure (jansson only). Unknown fields are refused; strings
 * borrow from the body: keep it alive.
 */
#ifndef KILN_PORT_SPEC_H
#define KILN_PORT_SPEC_H

#include <stdint.h>

#include <jansson.h>

#include "api/kilnd/core/api_error.h"

/* What a port mapping reaches in the guest. */
enum port_target {
	PORT_TARGET_TCP,   /* a TCP port on the guest's loopback, through the agent's tcp_connect */
	PORT_TARGET_VSOCK, /* an AF_VSOCK port, through kiln-vmm's CONNECT */
};

struct port_spec {
	uint32_t guest_port;
	uint16_t host_port; /* 0: any free port */
	enum port_target target;
	const char *guest_address; /* tcp: "127.0.0.1" or "::1"; vsock: NULL */
};

/* "tcp", "vsock". */
const char *port_target_name(enum port_target t);

/*
 * POST .../ports: {"guest_port": 1..65535, "host_port": 0 (any free port)
 * or 1..65535, "target": "tcp" (default) or "vsock", "guest_address":
 * "127.0.0.1" (default) or "::1", tcp only}. With target vsock the
 * agent's vsock port is refused: forwarding it would hand the agent
 * (root exec) to every local user that can reach 127.0.0.1, past kilnd's
 * peer check. guest_address borrows from body.
 */
int port_spec_parse(const json_t *body, struct port_spec *s, struct api_err *e);

#endif
