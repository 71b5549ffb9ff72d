/* Route matching over a caller's table; see http_route.h. */
#include "api/kilnd/http/http_route.h"

#include <stdio.h>
#include <string.h>

/* Match path against pattern; the {name} segments go to params in order. */
static bool match_pattern(const char *pattern, const char *path,
			  char params[HTTP_PARAMS][HTTP_PARAM_MAX + 1])
{
	const char *p = pattern, *s = path;
	size_t k = 0;

	for (size_t i = 0; i < HTTP_PARAMS; i++)
		params[i][0] = '\0';
	while (*p) {
		const char *close = *p == '{' ? strchr(p, '}') : NULL;

		if (close) {
			size_t n = strcspn(s, "/");

			if (n == 0 || n > HTTP_PARAM_MAX || k == HTTP_PARAMS)
				return false;
			memcpy(params[k], s, n);
			params[k++][n] = '\0';
			s += n;
			p = close + 1;
			continue;
		}
		if (*p != *s)
			return false;
		p++;
		s++;
	}
	return *s == '\0';
}

/* Whether table has an entry of pattern with method. */
static const struct http_route *entry_of(const struct http_route *table, size_t n,
					 const char *pattern, const char *method)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(table[i].pattern, pattern) && !strcmp(table[i].method, method))
			return &table[i];
	return NULL;
}

/* method appended to the ", "-separated list buf[0..*len). */
static void allow_add(char *buf, size_t cap, size_t *len, const char *method)
{
	int k;

	if (*len >= cap)
		return;
	k = snprintf(buf + *len, cap - *len, "%s%s", *len ? ", " : "", method);
	*len = k < 0 ? cap : *len + (size_t)k;
}

void http_route_allow(const struct http_route *table, size_t n, const char *pattern, char *buf,
		      size_t cap)
{
	bool head = !entry_of(table, n, pattern, "HEAD");
	size_t len = 0;

	if (cap)
		buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		if (strcmp(table[i].pattern, pattern))
			continue;
		allow_add(buf, cap, &len, table[i].method);
		/* RFC 9110 section 9.3.2: HEAD wherever GET is. */
		if (head && !strcmp(table[i].method, "GET"))
			allow_add(buf, cap, &len, "HEAD");
	}
	if (!entry_of(table, n, pattern, "OPTIONS"))
		allow_add(buf, cap, &len, "OPTIONS");
}

int http_route_match(const struct http_route *table, size_t n, const char *method, const char *path,
		     struct http_route_match *m, struct api_err *e)
{
	char params[HTTP_PARAMS][HTTP_PARAM_MAX + 1];
	const char *pattern = NULL;

	memset(m, 0, sizeof(*m));
	for (size_t i = 0; i < n; i++) {
		if (match_pattern(table[i].pattern, path, params)) {
			pattern = table[i].pattern;
			break;
		}
	}
	if (!pattern) {
		api_err_set(e, API_E_ROUTE_NOT_FOUND, "%.200s: no such endpoint (see docs/api.md)",
			    path);
		return -1;
	}
	memcpy(m->id, params[0], sizeof(m->id));
	memcpy(m->sub, params[1], sizeof(m->sub));
	http_route_allow(table, n, pattern, m->allow, sizeof(m->allow));
	m->route = entry_of(table, n, pattern, method);
	if (!m->route && !strcmp(method, "HEAD"))
		m->route = entry_of(table, n, pattern, "GET");
	if (m->route)
		return 0;
	if (!strcmp(method, "OPTIONS"))
		return HTTP_ROUTE_OPTIONS;
	api_err_set(e, API_E_METHOD_NOT_ALLOWED,
		    "%.16s %.200s: method not allowed here (allowed: %s)", method, path, m->allow);
	return -1;
}
