/*
 * egress_intercept: a decrypted flow's requests, one by one. The guest's
 * TLS is terminated (egress_tls_accept) and the upstream's verified
 * (egress_tls_connect) before this runs; here each HTTP/1.1 request the
 * guest sends is read strictly (egress_flow_request: the head; its body
 * framed by Content-Length, or chunked by egress_chunked), decided again
 * with its method and path, its rule's headers injected
 * (egress_http_inject, the secrets from the flow's egress_conf), and
 * forwarded; the upstream's bytes are relayed back as they come (not
 * parsed). Each request leaves one log line. While a client holds the
 * decision stream, each request is asked about before it is refused or
 * forwarded (egress_ask.h), and an allowed answer's header changes are
 * made with the rule's injection (the rule's secret wins a clash).
 *
 * A refused request (the rules, a malformed head or body, a secret not
 * set) gets the answer egress_flow_deny_response writes (over TLS), and
 * the connection is closed after it: the answers to requests forwarded
 * before it are relayed first (the upstream is told the guest is done
 * and drained for at most EGRESS_DRAIN_MS), so the guest never reads the
 * refusal as the answer to another request. A malformed body that was
 * partly forwarded closes the upstream at once instead.
 *
 * Each request is decided and injected with the configuration in use
 * when its head is read (conf_now), not the one the flow began with.
 *
 * Secret values live only in the formatted head, wiped once written.
 *
 * One thread serves both directions, each on its own: the guest is read
 * when the upstream has taken what it was sent, the upstream when the
 * guest has, and writes go as far as the peer takes them, so an upstream
 * that answers before it reads a body never stalls the flow. A flow
 * with nothing moving for EGRESS_IDLE_MS ends.
 */
#ifndef KILN_EGRESS_INTERCEPT_H
#define KILN_EGRESS_INTERCEPT_H

#include <stdint.h>
#include <openssl/ssl.h>

#include "api/egress/egress_conf.h"
#include "api/egress/egress_flow.h"
#include "api/egress/egress_log.h"

/* Idle limit of a decrypted flow (no byte either way); the drain before
 * a refusal; a write to a peer that does not read. */
#define EGRESS_IDLE_MS 120000
#define EGRESS_DRAIN_MS 10000
#define EGRESS_WRITE_MS 30000

struct egress_icpt {
	const struct egress_conf *conf;
	/* The configuration in use now (SIGHUP swaps it), for each next
	 * request: so a secret replaced or deleted (it leaked) stops going
	 * out on flows already open, and changed rules decide their next
	 * request. NULL: conf throughout. */
	const struct egress_conf *(*conf_now)(void *arg);
	void *conf_arg;
	const struct proxy_v2 *hdr;
	const char *name; /* the flow's name (SNI = AUTHORITY) */
	struct egress_logger *log;
	int guest, up; /* non-blocking sockets */
	SSL *gs, *us;
	uint64_t up_bytes, down_bytes; /* decrypted bytes each way */
	/* The decision stream (NULL: none): each request whose name passed
	 * its checks is asked (egress_question.h) while a client holds it;
	 * flow_id: the flow's connect question's id. */
	struct egress_ask *ask;
	uint64_t flow_id;
};

/* Serve the flow's requests until either end closes, a request is
 * refused, or it idles. The reason it ended (a fixed string). */
const char *egress_icpt_run(struct egress_icpt *x);

/*
 * Refuse a flow already terminated (gs) whose upstream could not be
 * reached or verified: read the guest's first request head (at most
 * 10 s) so the guest is reading, then answer f's refusal and close.
 */
void egress_icpt_refuse(SSL *gs, int guest, const struct egress_flow *f);

#endif
