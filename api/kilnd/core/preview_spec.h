/*
 * preview_spec: a sandbox's preview URLs (docs/api.md, "Preview URLs") as
 * data: the POST .../previews body, the entry a sandbox record keeps for
 * each preview in meta.json, and the object the API shows.
 *
 * Contract:
 *  - Pure (jansson and formatting only): no I/O, no randomness (the
 *    caller draws the token's bytes with getrandom and hands them in).
 *  - A record entry is {"port", "public", "token" (absent when public),
 *    "created_at"}; preview_entry_check() refuses anything else, so a
 *    damaged meta.json is refused with a message, never half-loaded.
 *  - Tokens are PREVIEW_TOKEN_BYTES random bytes (192 bits) as lowercase
 *    hex. preview_token_equal() compares in time that does not depend on
 *    where two tokens differ: a client cannot guess one byte by byte.
 *  - The URLs: host-based http://PORT-ID.DOMAIN:LPORT/ and path-based
 *    http://ADDR:LPORT/preview/ID/PORT/ (ADDR, LPORT: --preview-listen).
 */
#ifndef KILN_PREVIEW_SPEC_H
#define KILN_PREVIEW_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api/kilnd/core/api_error.h"

#define PREVIEWS_MAX 16
#define PREVIEW_TOKEN_BYTES 24
#define PREVIEW_TOKEN_LEN (2 * PREVIEW_TOKEN_BYTES)
/* A DNS name: 253 bytes at most (RFC 1035 section 2.3.4 less the root dot). */
#define PREVIEW_DOMAIN_MAX 253

/* Where kilnd's preview listener is and what its URLs are named under. */
struct preview_where {
	const char *addr;   /* the listen address, as given ("127.0.0.1") */
	uint16_t port;      /* the listen port */
	const char *domain; /* --preview-domain */
};

/* POST .../previews {"port": 1..65535, "public": false}. 0, or -1 with e. */
int preview_body_parse(const json_t *body, uint16_t *port, bool *public_, struct api_err *e);

/* The record entry for a new preview; token_raw is ignored when public_.
 * NULL when out of memory. */
json_t *preview_entry_new(uint16_t port, bool public_, const uint8_t token_raw[PREVIEW_TOKEN_BYTES],
			  const char *created_at);

/* A record entry as meta.json holds it. 0, or -1 with e (bad_field). */
int preview_entry_check(const json_t *entry, struct api_err *e);

/* A record's whole "previews" list: absent (NULL) is fine; at most
 * PREVIEWS_MAX entries, each checked, no port twice. 0, or -1 with e. */
int preview_list_check(const json_t *list, struct api_err *e);

/* The entry of list for port, or NULL. */
json_t *preview_list_find(const json_t *list, uint16_t port, size_t *index);

/* The API object: {"id": "ID/PORT", "sandbox", "port", "public", "url",
 * "path_url", "token" (only when not public), "created_at"}; where NULL
 * (kilnd has no --preview-listen): url and path_url are null. New
 * reference; NULL when out of memory. */
json_t *preview_view(const json_t *entry, const char *sandbox_id,
		     const struct preview_where *where);

/* True when a is exactly the token (PREVIEW_TOKEN_LEN bytes), compared
 * without an early exit. n: a's length (a need not end in NUL). */
bool preview_token_equal(const char *a, size_t n, const char *token);

/* True for a name --preview-domain may take: dot-separated labels of
 * [a-z0-9-] (lowercase: Host is compared case-insensitively), 1..63 bytes,
 * no '-' at either end, at most PREVIEW_DOMAIN_MAX bytes. */
bool preview_domain_valid(const char *s);

#endif
