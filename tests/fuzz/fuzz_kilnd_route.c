/*
 * fuzz_kilnd_route: kilnd's route table (api/kilnd/endpoints/routes.c)
 * through the HTTP library's matcher (api/kilnd/http/http_route.c), and
 * the path segments it captures ({proc}: proc_id_parse, {cp}:
 * checkpoint_name_valid), any method and any path a client sends.
 *
 * Input: method (1 byte: one of the table below; 0xff: the method is the
 * bytes up to the first '\n'), then the path.
 * Invariants: a match is a line of the table with that method (HEAD:
 * the GET line, when the pattern has no HEAD line), and the
 * path is exactly its pattern with the captured segments put back (so a
 * capture is one non-empty segment of at most HTTP_PARAM_MAX bytes, no
 * '/'); the same request matches the same way twice; a refusal is
 * route_not_found (no captures, no Allow) or method_not_allowed, whose
 * path is a pattern's with its captures put back and whose Allow is that
 * pattern's methods, none of them the method; OPTIONS on a pattern
 * without an OPTIONS line is HTTP_ROUTE_OPTIONS with that Allow and no
 * route; both refusals with a message; a
 * process id that parses prints back as the segment; a checkpoint name
 * that passes holds only [A-Za-z0-9._-].
 */
#include "api/kilnd/endpoints/routes.h"
#include "api/kilnd/bodies/proc_spec.h"
#include "api/kilnd/registry/checkpoint.h"
#include "fuzz.h"
#include "tests/unit/kilnd_handler_stubs.h"

static const char *const methods[] = { "GET", "POST",  "PUT", "DELETE", "HEAD",
				       "get", "PATCH", "",    "OPTIONS" };

static void check_proc(const char *seg)
{
	struct api_err e = { 0 };
	uint32_t id = 0;
	char back[16];

	if (proc_id_parse(seg, &id, &e) == 0) {
		snprintf(back, sizeof(back), "%u", id);
		FUZZ_ASSERT(id >= 1 && !strcmp(back, seg));
	} else {
		FUZZ_ASSERT(e.code == API_E_PROCESS_NOT_FOUND && e.msg[0]);
	}
}

static void check_cp(const char *seg)
{
	size_t n = strlen(seg);

	if (!checkpoint_name_valid(seg))
		return;
	FUZZ_ASSERT(n >= 1 && n <= CHECKPOINT_NAME_MAX &&
		    strspn(seg,
			   "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
			   "abcdefghijklmnopqrstuvwxyz0123456789._-") == n);
	FUZZ_ASSERT(n < 4 || strcmp(seg + n - 4, ".tmp"));
}

/* Whether pattern with its {name} segments replaced by m's captures, in
 * order, is path (and takes exactly as many captures as m holds). */
static int rebuilds(const char *pattern, const struct http_route_match *m, const char *path)
{
	const char *caps[HTTP_PARAMS] = { m->id, m->sub };
	size_t k = 0;

	for (const char *p = pattern; *p;) {
		if (*p == '{') {
			size_t n;

			if (k == HTTP_PARAMS)
				return 0;
			n = strlen(caps[k]);
			if (!n || n > HTTP_PARAM_MAX || strchr(caps[k], '/') ||
			    strncmp(path, caps[k], n))
				return 0;
			path += n;
			k++;
			p = strchr(p, '}') + 1;
			continue;
		}
		if (*p++ != *path++)
			return 0;
	}
	return *path == '\0' && (k == HTTP_PARAMS || !caps[k][0]);
}

/* The first pattern of the table that rebuilds path, or NULL. */
static const char *pattern_of(const struct http_route_match *m, const char *path)
{
	for (size_t i = 0; i < routes_count; i++)
		if (rebuilds(routes[i].pattern, m, path))
			return routes[i].pattern;
	return NULL;
}

static int has_method(const char *pattern, const char *method)
{
	for (size_t i = 0; i < routes_count; i++)
		if (!strcmp(routes[i].pattern, pattern) && !strcmp(routes[i].method, method))
			return 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_route_match m, again;
	struct api_err e = { 0 }, e2 = { 0 };
	char *method = NULL, *path, allow[HTTP_ALLOW_MAX];
	const char *mp, *pat;
	size_t off = 1;
	int r;

	if (size < 1)
		return 0;
	if (data[0] == 0xff) {
		const uint8_t *nl = memchr(data + 1, '\n', size - 1);
		size_t ml = nl ? (size_t)(nl - data - 1) : size - 1;

		method = strndup((const char *)data + 1, ml);
		off = 1 + ml + (nl != NULL);
		mp = method;
	} else {
		mp = methods[data[0] % (sizeof(methods) / sizeof(methods[0]))];
	}
	path = strndup((const char *)data + off, size - off);
	if (!path || (data[0] == 0xff && !method)) {
		free(method);
		free(path);
		return 0;
	}

	r = http_route_match(routes, routes_count, mp, path, &m, &e);
	FUZZ_ASSERT(http_route_match(routes, routes_count, mp, path, &again, &e2) == r &&
		    again.route == m.route);
	FUZZ_ASSERT(!strcmp(again.id, m.id) && !strcmp(again.sub, m.sub) &&
		    !strcmp(again.allow, m.allow));
	if (r == 0) {
		FUZZ_ASSERT(m.route >= routes && m.route < routes + routes_count);
		FUZZ_ASSERT(!strcmp(m.route->method, mp) ||
			    (!strcmp(mp, "HEAD") && !strcmp(m.route->method, "GET") &&
			     !has_method(m.route->pattern, "HEAD")));
		FUZZ_ASSERT(rebuilds(m.route->pattern, &m, path));
		FUZZ_ASSERT(!strcmp(pattern_of(&m, path), m.route->pattern));
		http_route_allow(routes, routes_count, m.route->pattern, allow, sizeof(allow));
		FUZZ_ASSERT(!strcmp(allow, m.allow));
		if (strstr(m.route->pattern, "{proc}"))
			check_proc(m.sub);
		if (strstr(m.route->pattern, "{cp}"))
			check_cp(m.sub);
	} else if (r == HTTP_ROUTE_OPTIONS) {
		pat = pattern_of(&m, path);
		FUZZ_ASSERT(!strcmp(mp, "OPTIONS") && !m.route && pat && !has_method(pat, mp));
		http_route_allow(routes, routes_count, pat, allow, sizeof(allow));
		FUZZ_ASSERT(!strcmp(allow, m.allow) && strstr(m.allow, "OPTIONS"));
	} else {
		FUZZ_ASSERT(r == -1 && !m.route && e.msg[0] && memchr(e.msg, 0, sizeof(e.msg)));
		if (e.code == API_E_METHOD_NOT_ALLOWED) {
			pat = pattern_of(&m, path);
			FUZZ_ASSERT(pat && m.allow[0] && !has_method(pat, mp) &&
				    strcmp(mp, "OPTIONS") &&
				    (strcmp(mp, "HEAD") || !has_method(pat, "GET")));
			http_route_allow(routes, routes_count, pat, allow, sizeof(allow));
			FUZZ_ASSERT(!strcmp(allow, m.allow));
		} else {
			FUZZ_ASSERT(e.code == API_E_ROUTE_NOT_FOUND && !m.id[0] && !m.sub[0] &&
				    !m.allow[0]);
		}
	}
	check_proc(path);
	check_cp(path);
	free(method);
	free(path);
	return 0;
}
