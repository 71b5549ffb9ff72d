/*
 * GET /v1/sandboxes/{id}/shares/{n}/serve (docs/api.md, "Client
 * shares"): an HTTP/1.1 upgrade (Upgrade: kiln-fs) after which the client
 * serves share n's files, one NDJSON line each way (share_line.h):
 * kilnd sends kiln-vmm's requests, the client answers them.
 *
 * The claim happens before the 101, so an unknown share, a host share,
 * a sandbox without a VMM or a share with a client already get their
 * error status. The session then runs in the share's relay thread
 * (share_relay.h) while this connection's thread waits for it to end.
 */
#include "api/kilnd/endpoints/handlers.h"
#include "api/kilnd/registry/sandbox.h"
#include "api/kilnd/supervision/share_relay.h"
#include "lib/base/num_parse.h"

#define SHARE_PROTOCOL "kiln-fs"

static void serve_run(void *cls, const char *extra, size_t extra_n, int sock)
{
	share_relay_serve(cls, extra, extra_n, sock);
}

static void serve_release(void *cls)
{
	share_relay_release(cls);
}

void handle_share_serve(struct http_req *r)
{
	struct share_relay *relay = NULL;
	struct sandbox *sb;
	struct api_err e;
	uint64_t n;

	if (!http_no_query(r, "shares serve"))
		return;
	if (num_parse_u64(r->rm.sub, 10, 0, SPEC_MAX_SHARES - 1, &n)) {
		api_err_set(&e, API_E_NOT_FOUND,
			    "share '%.40s' is not a share index (0..%d, the position in the sandbox's shares)",
			    r->rm.sub, SPEC_MAX_SHARES - 1);
		http_error(r, &e);
		return;
	}
	sb = sandbox_get(r->d, &r->peer, r->rm.id, &e);
	if (!sb) {
		http_error(r, &e);
		return;
	}
	if (!http_has_token(http_header(r, "Connection"), "upgrade") ||
	    !http_has_token(http_header(r, "Upgrade"), SHARE_PROTOCOL)) {
		api_err_set(&e, API_E_BAD_FIELD,
			    "shares: this endpoint switches protocols; send 'Connection: Upgrade' and 'Upgrade: " SHARE_PROTOCOL
			    "' (docs/api.md, \"Client shares\")");
		sandbox_put_quiet(sb);
		http_error(r, &e);
		return;
	}
	if (share_relay_claim(sb, (size_t)n, &relay, &e)) {
		sandbox_put_quiet(sb);
		http_error(r, &e);
		return;
	}
	sandbox_put(sb);
	http_upgrade(r, SHARE_PROTOCOL, serve_run, relay, serve_release);
}
