/*
 * http_route: a route table's entry and the matcher over a table the
 * caller owns. The library knows no route: the API server's one table is
 * api/kilnd/endpoints/routes.c.
 *
 * Contract: pure. The path is the URL path only (no query string), as the
 * client sent it. A pattern is literal text with "{name}" segments, each
 * matching one non-empty segment of at most HTTP_PARAM_MAX bytes (no
 * '/'); exact otherwise: no trailing '/', no empty segments, no prefix
 * matching, no decoding. The first pattern in table order that matches
 * the path names the resource; an entry of that pattern with the method
 * is the match. The table need not list the two methods HTTP gives every
 * resource (RFC 9110 sections 9.3.2 and 9.3.7): HEAD matches the
 * resource's GET entry (the server sends that answer's head only), and
 * OPTIONS is HTTP_ROUTE_OPTIONS, answered by the server from Allow. A
 * resource without the method is method_not_allowed (405). Allow lists
 * the methods of that pattern's entries in table order, HEAD after GET,
 * then OPTIONS; anything else is route_not_found (404). Whether the
 * resource a {name} names exists is the handler's question.
 */
#ifndef KILN_HTTP_ROUTE_H
#define KILN_HTTP_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#include "api/kilnd/core/api_error.h"

/* A captured {name} segment's longest length, and how many one pattern
 * may hold. */
#define HTTP_PARAM_MAX 64
#define HTTP_PARAMS 2
/* An Allow value: every method of one pattern, ", "-separated. */
#define HTTP_ALLOW_MAX 64
/* http_route_match's answer for OPTIONS on a resource whose entries have
 * none: m->allow (and the captures) are filled, m->route is NULL. */
#define HTTP_ROUTE_OPTIONS 1

struct http_req;
/* One endpoint's handler; it answers through the http_* functions of http.h. */
typedef void (*http_handler_fn)(struct http_req *r);

/* What a route does with a request body. */
enum http_body_policy {
	BODY_NONE, /* none: any byte of one is answered 413 */
	BODY_JSON, /* collected whole up to the limit, then the handler runs and reads a JSON object */
	BODY_RAW,    /* the same, read as bytes (the route's description tells them apart) */
	BODY_UPLOAD, /* the handler runs first and takes it as it streams (http_upload) */
};

struct http_route {
	const char *method;
	const char *pattern;
	http_handler_fn handler;
	enum http_body_policy body;
	unsigned limit; /* index into the service's limits (http.h); 0 with BODY_NONE */
};

struct http_route_match {
	const struct http_route *route; /* NULL when none matched */
	char id[HTTP_PARAM_MAX + 1];    /* the first {name} segment, "" when none */
	char sub[HTTP_PARAM_MAX + 1];   /* the second, "" when none */
	char allow[HTTP_ALLOW_MAX];     /* the matched path's methods, "" when no path matched */
};

/*
 * Match method and path against the n entries of table. 0 and *m filled
 * (for HEAD, m->route may be the GET entry); HTTP_ROUTE_OPTIONS (above);
 * otherwise -1 with e set to route_not_found (no captures), or
 * method_not_allowed with m->allow and the captures set.
 */
int http_route_match(const struct http_route *table, size_t n, const char *method, const char *path,
		     struct http_route_match *m, struct api_err *e);

/* The Allow value of pattern in table: its entries' methods, in table
 * order, HEAD after GET and OPTIONS last unless the table names them,
 * ", "-separated (truncated to cap). */
void http_route_allow(const struct http_route *table, size_t n, const char *pattern, char *buf,
		      size_t cap);

#endif
