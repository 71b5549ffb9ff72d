/*
 * preview_route: what kilnd's preview proxy (preview_server.h) decides
 * from one request head, as pure functions: which sandbox and port it is
 * for, which credentials it carries, and the head the guest gets instead.
 *
 * Contract:
 *  - Pure: no I/O, no allocation; everything points into the parsed head
 *    (http_head.h) or is written into the caller's buffer, bounded by its
 *    capacity. Hostile heads are the input: every length is checked.
 *  - Routing: the Host header "PORT-ID.DOMAIN[:port]" (case-insensitive,
 *    DOMAIN being --preview-domain) names the preview; else the path
 *    prefix "/preview/ID/PORT" (followed by '/' or nothing), stripped
 *    before forwarding ("/preview/ID/PORT" alone forwards "/"). ID is a
 *    sandbox id (12 hex digits), PORT 1..65535 without leading zeros.
 *    Anything else is not a preview URL (404).
 *  - Credentials: every X-Kiln-Preview-Token field, every "Authorization:
 *    Bearer T", every cookie kiln_preview_ID_PORT and every "token" query
 *    parameter, at most PREVIEW_CREDS_MAX of them. The request is allowed
 *    when any one equals the preview's token (preview_token_equal).
 *  - The forwarded head drops what carried the preview token (the
 *    X-Kiln-Preview-Token fields, an Authorization field holding exactly
 *    the token, every kiln_preview_* cookie, "token" parameters holding
 *    the token) or could (a Referer's "token" parameters and fragment; a
 *    Referer still holding the token, or not plain URL bytes, whole), the
 *    hop-by-hop fields (Connection, Keep-Alive,
 *    Proxy-Connection) and any X-Forwarded-* or Forwarded a client sent;
 *    it adds "Connection: close" (or "Connection: Upgrade" for an upgrade:
 *    the rest of the connection is the upgraded protocol's), and
 *    X-Forwarded-For, -Proto, -Host and, for the path form, -Prefix. So one
 *    connection carries one request (or one upgrade) to one preview: the
 *    guest answers it and closes, and the client opens another.
 */
#ifndef KILN_PREVIEW_ROUTE_H
#define KILN_PREVIEW_ROUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/kilnd/core/names.h"
#include "api/kilnd/http/http_head.h"

#define PREVIEW_CREDS_MAX 8
/* "kiln_preview_" ID "_" PORT */
#define PREVIEW_COOKIE_MAX (13 + SANDBOX_ID_LEN + 1 + 5)

enum preview_form {
	PREVIEW_BY_HOST,
	PREVIEW_BY_PATH,
};

enum preview_cred_kind {
	PREVIEW_CRED_HEADER, /* X-Kiln-Preview-Token */
	PREVIEW_CRED_BEARER, /* Authorization: Bearer */
	PREVIEW_CRED_COOKIE, /* kiln_preview_ID_PORT */
	PREVIEW_CRED_QUERY,  /* ?token= */
};

struct preview_cred {
	enum preview_cred_kind kind;
	const char *p; /* into the head; not NUL-terminated */
	size_t n;
};

struct preview_req {
	char id[SANDBOX_ID_LEN + 1];
	uint16_t port;
	enum preview_form form;
	const char *rest;                    /* the path to forward (from '/') */
	size_t rest_len;                     /* "/" alone when the prefix ended the path */
	bool upgrade;                        /* Upgrade with Connection: upgrade (a WebSocket) */
	char cookie[PREVIEW_COOKIE_MAX + 1]; /* this preview's cookie name */
	struct preview_cred creds[PREVIEW_CREDS_MAX];
	size_t ncreds;
};

/* An answer the proxy gives itself (not the guest's). */
struct preview_err {
	unsigned status;
	const char *code;       /* "unauthorized", "preview_not_found", ... */
	unsigned retry_after_s; /* > 0: the answer says Retry-After */
	char msg[256];
};

/* Fill e (status, code, formatted message; no Retry-After); returns -1. */
int preview_err_set(struct preview_err *e, unsigned status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * Route the parsed head h: 0 with *r (id, port, form, rest, upgrade,
 * cookie name, credentials), or -1 with e: 404 preview_not_found when it
 * names no preview in either form.
 */
int preview_route(const struct http_head *h, const char *domain, struct preview_req *r,
		  struct preview_err *e);

/* The credential of r that equals token, or NULL (token NULL: none). */
const struct preview_cred *preview_auth(const struct preview_req *r, const char *token);

/*
 * The head to send the guest, into out[cap]: its length, or -1 when it
 * does not fit cap, or would be more than kilnd's parser takes itself
 * (HTTP_HEAD_MAX bytes, HTTP_FIELDS_MAX fields: the proxy's fields come
 * on top of the client's). token: the preview's (what is stripped), or NULL for a
 * public preview; client: the client's address for X-Forwarded-For.
 */
long preview_head_rewrite(const struct http_head *h, const struct preview_req *r, const char *token,
			  const char *client, char *out, size_t cap);

/*
 * A first visit with ?token=: the 302 answer that sets the preview's
 * cookie (HttpOnly, SameSite=Lax, Path the preview's) and sends the
 * browser to the same URL without the token; or, when the path holds a
 * '\', a space or a control byte (a browser would read it as another
 * site: "/\evil.example"), the proxy's 400 bad_request answer instead
 * (preview_err_answer), no cookie set. Its length in out[cap], or -1
 * when it does not fit.
 */
long preview_redirect(const struct http_head *h, const struct preview_req *r, const char *token,
		      char *out, size_t cap);

/* The proxy's own answer for e (JSON {"error":{"code","message"}}, then
 * the connection closes), into out[cap]; its length (cut to fit). */
size_t preview_err_answer(const struct preview_err *e, char *out, size_t cap);

#endif
