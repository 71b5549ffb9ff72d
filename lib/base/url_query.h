/*
 * url_query: a URL's query string as decoded key/value pairs, and the
 * %HH decoding of a path or value. What each parameter means is the
 * endpoint's (kilnd: api/kilnd/core/query.h).
 *
 * Contract: pure, in place: the pairs point into the string split.
 */
#ifndef KILN_URL_QUERY_H
#define KILN_URL_QUERY_H

#include <stddef.h>

struct query_kv {
	const char *key;
	const char *value; /* NULL: no '=' */
};

/*
 * Decode %HH escapes of a URL path or query value in place (the HTTP
 * server calls this; '+' in query values became ' ' before). "%00" is
 * left as it is: a decoded NUL would silently cut the C string the
 * handlers see ("/etc/x%00y" would become "/etc/x"). Malformed escapes
 * stay as they are. Returns the new length.
 */
size_t query_unescape(char *s);

/*
 * Split the raw query q (after '?') into at most max decoded pairs in
 * place: '&' separates pairs (empty ones are skipped), the first '='
 * separates key and value, '+' becomes a space, then query_unescape.
 * 0 with *n, or -E2BIG when there are more than max.
 */
int query_split(char *q, struct query_kv *kv, size_t max, size_t *n);

#endif
