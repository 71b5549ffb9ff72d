/*
 * egress_flow: what kiln-egress does with one steered flow, decided from
 * what it has read: the PROXY v2 header kiln-vmm opened the stream with
 * (lib/netrules/proxy_v2.h) and the guest's first bytes after it.
 *
 * Contract:
 *  - Pure: no I/O, no allocation, no state between calls. The caller
 *    reads into one buffer and calls egress_flow_decide on all it has;
 *    EGRESS_NEED_MORE says how many bytes in all to wait for (never more
 *    than EGRESS_FIRST_MAX).
 *  - The first bytes are TLS (a handshake record: the ClientHello's SNI,
 *    lib/netrules/tls_hello.h) or one plain HTTP/1.x request head, read
 *    strictly: request line "METHOD SP origin-target SP HTTP/1.0|1.1"
 *    (METHOD as a rule names one, http_method_ok: upper case),
 *    CRLF line ends only, no control byte, no folded line, exactly one
 *    Host, at most one Content-Length (plain digits), no
 *    Transfer-Encoding (on a decrypted flow, egress_flow_request:
 *    "chunked" alone, never with Content-Length). Anything else fails
 *    closed.
 *  - The name is the SNI or the Host without its port, lower-cased, never
 *    an IP literal. It must be one of the header's names (its AUTHORITY
 *    or KILN_NAMES: the names kiln-vmm's filter bound to the
 *    destination, several when one CDN serves them), when it has one; the
 *    Host's port (80 when absent) must equal the destination port. Then
 *    http_rules_decide, for TLS without a head, for HTTP with method and
 *    target.
 *  - A TLS flow whose deciding rule intercepts or injects, or limits
 *    methods or paths (HTTP_NEED_HEAD), is allowed with intercept set:
 *    the caller decrypts it and reads each request with
 *    egress_flow_request, which decides again with method and path
 *    (the Host must then equal the flow's SNI name, its port 443 when
 *    absent). A plain HTTP request whose rule injects a secret is
 *    denied: secrets are sent only over TLS.
 *  - Only the first request of a plain HTTP connection is read: an allowed
 *    one says how many bytes (head and Content-Length body) the caller
 *    may forward before it ends the upstream direction, so a pipelined
 *    second request is never forwarded undecided.
 *  - Every deny has a fixed reason (a static string, no input text in it)
 *    for the log and the 403 body.
 *  - The name and port are what the caller resolves (egress_dest then
 *    checks the header's destination against the answers).
 */
#ifndef KILN_EGRESS_FLOW_H
#define KILN_EGRESS_FLOW_H

#include <stddef.h>
#include <stdint.h>

#include "lib/netrules/http_rules.h"
#include "lib/netrules/net_rules.h"
#include "lib/netrules/proxy_v2.h"

/* The most first bytes (after the PROXY header) read before deciding. */
#define EGRESS_FIRST_MAX 16384

enum egress_status {
	EGRESS_NEED_MORE,
	EGRESS_ALLOW,
	EGRESS_DENY,
};

enum egress_proto {
	EGRESS_PROTO_NONE, /* not known (yet), or neither */
	EGRESS_PROTO_TLS,
	EGRESS_PROTO_HTTP,
};

struct egress_flow {
	enum egress_status status;
	size_t need; /* NEED_MORE: read until this many bytes are in */
	enum egress_proto proto;
	char name[NET_HOST_MAX + 1]; /* "" until known */
	uint16_t port;               /* the destination port */
	char method[HTTP_METHOD_MAX + 1];
	/* ALLOW of plain HTTP: the request's bytes (head and body) */
	uint64_t request_len;
	/* A request read: its head's length, and its body chunked (else
	 * request_len - head_len bytes of Content-Length) */
	size_t head_len;
	bool chunked;
	char path[HTTP_REQ_PATH_MAX]; /* a request's target ("" for TLS) */
	bool intercept;               /* ALLOW of TLS: decrypt, read each request */
	enum http_decision decision;  /* when the rules were consulted: */
	bool ruled;                   /* they were (the name passed its checks) */
	bool callback;                /* DENY by the policy callback: its 403 body says so */
	size_t rule;                  /* the deciding rule, or SIZE_MAX when none */
	uint16_t status_code;         /* DENY of plain HTTP: the status to answer */
	const char *reason;           /* DENY: why; "" otherwise */
};

/* Decide on the first n bytes after the header. rules may be NULL (no rule: deny). */
void egress_flow_decide(const struct proxy_v2 *hdr, const uint8_t *buf, size_t n,
			const struct http_rules *rules, struct egress_flow *out);

/* Decide on one request head at buf[0..n) read from a decrypted TLS
 * flow to name (the SNI, already checked) on port. Every refusal has
 * proto EGRESS_PROTO_HTTP: it is answered. */
void egress_flow_request(const char *name, uint16_t port, const uint8_t *buf, size_t n,
			 const struct http_rules *rules, struct egress_flow *out);

/*
 * The answer to a denied plain HTTP request: a status line, a JSON body
 * {"error":"egress denied","reason":...,"rule":N|null|"callback"} and Connection:
 * close. Its length, or -ENOSPC when cap is too small (512 is enough).
 */
int egress_flow_deny_response(const struct egress_flow *f, char *buf, size_t cap);

#endif
