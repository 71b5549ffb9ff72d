/*
 * Unit tests of api/kilnd/endpoints/routes.c: kilnd's one route table
 * (docs/api.md, docs/openapi.yaml) as the HTTP layer's matcher
 * (http_route.h) uses it: every endpoint is reached with its handler and
 * body kind, near misses are 404, a wrong method is 405 with the path's
 * own Allow list, and every line of the table is well formed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "api/kilnd/endpoints/routes.h"
#include "tests/unit/kilnd_handler_stubs.h"

static int match(const char *method, const char *path, struct http_route_match *m,
		 struct api_err *e)
{
	return http_route_match(routes, routes_count, method, path, m, e);
}

/* The handler method + path runs (NULL: none), its {id} into id. */
static http_handler_fn op_of(const char *method, const char *path, char *id)
{
	struct http_route_match m;
	struct api_err e;

	if (match(method, path, &m, &e))
		return NULL;
	if (id)
		strcpy(id, m.id);
	return m.route->handler;
}

/* Whether the route of handler h takes a body. */
static bool has_body(http_handler_fn h)
{
	for (size_t i = 0; i < routes_count; i++)
		if (routes[i].handler == h)
			return routes[i].body != BODY_NONE;
	fail_msg("no route runs that handler");
	return false;
}

static void test_every_endpoint(void **state)
{
	char id[HTTP_PARAM_MAX + 1];

	(void)state;
	assert_ptr_equal(op_of("GET", "/v1/health", NULL), handle_health);
	assert_ptr_equal(op_of("GET", "/metrics", NULL), handle_metrics);
	assert_ptr_equal(op_of("GET", "/v1/images", NULL), handle_images);
	assert_ptr_equal(op_of("POST", "/v1/images", NULL), handle_image_import_begin);
	assert_true(has_body(handle_image_import_begin));
	assert_ptr_equal(op_of("GET", "/v1/images/alpine-3.20", id), handle_image_get);
	assert_string_equal(id, "alpine-3.20");
	assert_ptr_equal(op_of("DELETE", "/v1/images/x", id), handle_image_delete);
	assert_false(has_body(handle_image_delete));
	assert_ptr_equal(op_of("GET", "/v1/sandboxes", NULL), handle_sandbox_list);
	assert_ptr_equal(op_of("POST", "/v1/sandboxes", NULL), handle_sandbox_create);
	assert_ptr_equal(op_of("GET", "/v1/sandboxes/3f9a1c2b7d4e", id), handle_sandbox_get);
	assert_string_equal(id, "3f9a1c2b7d4e");
	assert_ptr_equal(op_of("DELETE", "/v1/sandboxes/abc", id), handle_sandbox_delete);
	assert_string_equal(id, "abc");
	assert_ptr_equal(op_of("POST", "/v1/sandboxes/x/start", id), handle_sandbox_start);
	assert_string_equal(id, "x");
	assert_ptr_equal(op_of("POST", "/v1/sandboxes/x/stop", NULL), handle_sandbox_stop);
	assert_ptr_equal(op_of("POST", "/v1/sandboxes/x/exec", NULL), handle_exec);
	assert_ptr_equal(op_of("GET", "/v1/sandboxes/x/files", NULL), handle_file_get);
	assert_ptr_equal(op_of("PUT", "/v1/sandboxes/x/files", NULL), handle_file_put_begin);
}

/* Near misses are 404, never a prefix match or a normalised path. */
static void test_near_misses_are_404(void **state)
{
	static const char *const paths[] = {
		"/",
		"",
		"/v1",
		"/v1/health/",
		"/v1//health",
		"/v1/healthz",
		"/v2/health",
		"v1/health",
		"/v1/sandboxes/",
		"/v1/sandboxes//exec",
		"/v1/sandboxes/x/exec/",
		"/v1/sandboxes/x/y",
		"/v1/sandboxes/x/exec/more",
		"/V1/health",
		"/v1/sandboxes/x/../y",
		"/metrics/",
	};
	struct http_route_match m;
	struct api_err e;

	(void)state;
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		assert_int_equal(match("GET", paths[i], &m, &e), -1);
		assert_int_equal(e.code, API_E_ROUTE_NOT_FOUND);
		assert_int_equal(api_code_status(e.code), 404);
		assert_null(m.route);
	}
	/* "x/../y" matched nothing, so nothing was captured as an id. */
	assert_string_equal(m.id, "");
}

static void test_wrong_method_is_405_with_allow(void **state)
{
	struct http_route_match m;
	struct api_err e;

	(void)state;
	assert_int_equal(match("DELETE", "/v1/sandboxes", &m, &e), -1);
	assert_int_equal(e.code, API_E_METHOD_NOT_ALLOWED);
	assert_int_equal(api_code_status(e.code), 405);
	assert_string_equal(m.allow, "GET, HEAD, POST, OPTIONS");
	assert_int_equal(match("POST", "/v1/sandboxes/x/files", &m, &e), -1);
	assert_string_equal(m.allow, "GET, HEAD, PUT, OPTIONS");
	assert_int_equal(match("GET", "/v1/sandboxes/x/exec", &m, &e), -1);
	assert_string_equal(m.allow, "POST, OPTIONS");
	/* Methods are case-sensitive (RFC 9110, 9.1). */
	assert_int_equal(match("get", "/v1/health", &m, &e), -1);
	assert_int_equal(e.code, API_E_METHOD_NOT_ALLOWED);
}

/* RFC 9110 sections 9.3.2 and 9.3.7: HEAD is the GET entry's wherever
 * there is one, OPTIONS is answered from Allow on every path the table
 * has; neither needs a line of the table. */
static void test_head_and_options(void **state)
{
	struct http_route_match m;
	struct api_err e;

	(void)state;
	assert_int_equal(match("HEAD", "/v1/health", &m, &e), 0);
	assert_ptr_equal(m.route->handler, handle_health);
	assert_int_equal(match("HEAD", "/v1/sandboxes/ab12/checkpoints/c1", &m, &e), 0);
	assert_ptr_equal(m.route->handler, handle_checkpoint_get);
	assert_string_equal(m.id, "ab12");
	assert_string_equal(m.sub, "c1");
	/* No GET, no HEAD. */
	assert_int_equal(match("HEAD", "/v1/sandboxes/x/exec", &m, &e), -1);
	assert_int_equal(e.code, API_E_METHOD_NOT_ALLOWED);
	assert_string_equal(m.allow, "POST, OPTIONS");
	assert_int_equal(match("HEAD", "/v1/nosuch", &m, &e), -1);
	assert_int_equal(e.code, API_E_ROUTE_NOT_FOUND);
	/* Methods are case-sensitive: "head" is not HEAD. */
	assert_int_equal(match("head", "/v1/health", &m, &e), -1);
	assert_int_equal(e.code, API_E_METHOD_NOT_ALLOWED);

	assert_int_equal(match("OPTIONS", "/v1/sandboxes", &m, &e), HTTP_ROUTE_OPTIONS);
	assert_null(m.route);
	assert_string_equal(m.allow, "GET, HEAD, POST, OPTIONS");
	assert_int_equal(match("OPTIONS", "/v1/sandboxes/ab/processes/7/stdin", &m, &e),
			 HTTP_ROUTE_OPTIONS);
	assert_string_equal(m.allow, "POST, OPTIONS");
	assert_string_equal(m.id, "ab");
	assert_string_equal(m.sub, "7");
	assert_int_equal(match("OPTIONS", "/v1/nosuch", &m, &e), -1);
	assert_int_equal(e.code, API_E_ROUTE_NOT_FOUND);
	assert_string_equal(m.allow, "");
}

/* A table that names HEAD or OPTIONS itself keeps them: its own entry
 * matches, and Allow does not list them twice. */
static void test_table_own_head_and_options(void **state)
{
	static const struct http_route t[] = {
		{ "GET", "/a", handle_health, BODY_NONE, 0 },
		{ "HEAD", "/a", handle_metrics, BODY_NONE, 0 },
		{ "OPTIONS", "/a", handle_images, BODY_NONE, 0 },
		{ "DELETE", "/b", handle_health, BODY_NONE, 0 },
	};
	struct http_route_match m;
	struct api_err e;

	(void)state;
	assert_int_equal(http_route_match(t, 4, "HEAD", "/a", &m, &e), 0);
	assert_ptr_equal(m.route, &t[1]);
	assert_string_equal(m.allow, "GET, HEAD, OPTIONS");
	assert_int_equal(http_route_match(t, 4, "OPTIONS", "/a", &m, &e), 0);
	assert_ptr_equal(m.route, &t[2]);
	assert_int_equal(http_route_match(t, 4, "HEAD", "/b", &m, &e), -1);
	assert_string_equal(m.allow, "DELETE, OPTIONS");
}

static void test_overlong_id_segment_is_404(void **state)
{
	char path[256];
	struct http_route_match m;
	struct api_err e;

	(void)state;
	snprintf(path, sizeof(path), "/v1/sandboxes/%065d", 0);
	assert_int_equal(match("GET", path, &m, &e), -1);
	assert_int_equal(e.code, API_E_ROUTE_NOT_FOUND);
	snprintf(path, sizeof(path), "/v1/sandboxes/%064d/exec", 0);
	assert_int_equal(match("POST", path, &m, &e), 0);
	assert_int_equal(strlen(m.id), 64);
}

/* Snapshots: pause, resume, hibernate, wake and the checkpoints. */
static void test_snapshot_endpoints(void **state)
{
	struct http_route_match m;
	struct api_err e;

	(void)state;
	assert_ptr_equal(op_of("POST", "/v1/sandboxes/x/pause", NULL), handle_sandbox_pause);
	assert_ptr_equal(op_of("POST", "/v1/sandboxes/x/resume", NULL), handle_sandbox_resume);
	assert_ptr_equal(op_of("POST", "/v1/sandboxes/x/hibernate", NULL),
			 handle_sandbox_hibernate);
	assert_ptr_equal(op_of("POST", "/v1/sandboxes/x/wake", NULL), handle_sandbox_wake);
	assert_ptr_equal(op_of("GET", "/v1/sandboxes/x/checkpoints", NULL), handle_checkpoint_list);
	assert_ptr_equal(op_of("POST", "/v1/sandboxes/x/checkpoints", NULL),
			 handle_checkpoint_create);
	assert_int_equal(match("DELETE", "/v1/sandboxes/ab12/checkpoints/before-tests", &m, &e), 0);
	assert_ptr_equal(m.route->handler, handle_checkpoint_delete);
	assert_string_equal(m.id, "ab12");
	assert_string_equal(m.sub, "before-tests");
	assert_ptr_equal(op_of("GET", "/v1/sandboxes/x/checkpoints/c", NULL),
			 handle_checkpoint_get);
	assert_int_equal(match("POST", "/v1/sandboxes/x/checkpoints/c1/restore", &m, &e), 0);
	assert_ptr_equal(m.route->handler, handle_checkpoint_restore);
	assert_string_equal(m.sub, "c1");
	assert_true(has_body(handle_checkpoint_create));
	assert_true(has_body(handle_sandbox_pause));
	assert_false(has_body(handle_checkpoint_delete));
	/* The firewall's PUT carries the rule set; its GET takes nothing. */
	assert_ptr_equal(op_of("PUT", "/v1/sandboxes/x/firewall", NULL), handle_firewall_put);
	assert_true(has_body(handle_firewall_put));
	assert_false(has_body(handle_firewall_get));
	assert_ptr_equal(op_of("GET", "/v1/sandboxes/x/firewall/log", NULL), handle_firewall_log);
	assert_false(has_body(handle_firewall_log));
	assert_ptr_equal(op_of("GET", "/v1/sandboxes/x/egress/log", NULL), handle_egress_log);
	assert_false(has_body(handle_egress_log));
	assert_ptr_equal(op_of("GET", "/v1/sandboxes/x/egress/decisions", NULL),
			 handle_egress_decisions);
	assert_false(has_body(handle_egress_decisions));
	assert_ptr_equal(op_of("GET", "/v1/sandboxes/x/shares/0/serve", NULL), handle_share_serve);
	assert_false(has_body(handle_share_serve));
	assert_int_equal(match("PUT", "/v1/sandboxes/x/firewall/log", &m, &e), -1);
	assert_int_equal(e.code, API_E_METHOD_NOT_ALLOWED);
	assert_int_equal(match("GET", "/v1/sandboxes/x/pause", &m, &e), -1);
	assert_int_equal(e.code, API_E_METHOD_NOT_ALLOWED);
	assert_string_equal(m.allow, "POST, OPTIONS");
	assert_int_equal(match("PUT", "/v1/sandboxes/x/checkpoints/c", &m, &e), -1);
	assert_string_equal(m.allow, "GET, HEAD, DELETE, OPTIONS");
	assert_int_equal(match("POST", "/v1/sandboxes/x/checkpoints/", &m, &e), -1);
	assert_int_equal(e.code, API_E_ROUTE_NOT_FOUND);
	assert_int_equal(match("POST", "/v1/sandboxes/x/checkpoints/c/restore/", &m, &e), -1);
	assert_int_equal(e.code, API_E_ROUTE_NOT_FOUND);
}

/* Background processes. */
static void test_process_endpoints(void **state)
{
	struct http_route_match m;
	struct api_err e;

	(void)state;
	assert_int_equal(match("POST", "/v1/sandboxes/sb1/processes", &m, &e), 0);
	assert_ptr_equal(m.route->handler, handle_proc_create);
	assert_string_equal(m.id, "sb1");
	assert_string_equal(m.sub, "");
	assert_int_equal(match("GET", "/v1/sandboxes/sb1/processes", &m, &e), 0);
	assert_ptr_equal(m.route->handler, handle_proc_list);
	assert_int_equal(match("GET", "/v1/sandboxes/sb1/processes/42", &m, &e), 0);
	assert_ptr_equal(m.route->handler, handle_proc_get);
	assert_string_equal(m.id, "sb1");
	assert_string_equal(m.sub, "42");
	assert_int_equal(match("GET", "/v1/sandboxes/a/processes/7/output", &m, &e), 0);
	assert_ptr_equal(m.route->handler, handle_proc_output);
	assert_int_equal(match("POST", "/v1/sandboxes/a/processes/7/stdin", &m, &e), 0);
	assert_ptr_equal(m.route->handler, handle_proc_stdin);
	assert_int_equal(match("POST", "/v1/sandboxes/a/processes/7/signal", &m, &e), 0);
	assert_ptr_equal(m.route->handler, handle_proc_signal);
	assert_int_equal(match("POST", "/v1/sandboxes/a/processes/7/wait", &m, &e), 0);
	assert_ptr_equal(m.route->handler, handle_proc_wait);
	assert_int_equal(match("POST", "/v1/sandboxes/a/processes/7/resize", &m, &e), 0);
	assert_ptr_equal(m.route->handler, handle_proc_resize);
	assert_int_equal(match("GET", "/v1/sandboxes/a/processes/7/tty", &m, &e), 0);
	assert_ptr_equal(m.route->handler, handle_proc_tty);
	assert_string_equal(m.sub, "7");
	assert_int_equal(match("POST", "/v1/sandboxes/a/shell", &m, &e), 0);
	assert_ptr_equal(m.route->handler, handle_shell);
	assert_true(has_body(handle_proc_stdin));
	assert_false(has_body(handle_proc_wait));
	assert_false(has_body(handle_proc_tty));

	assert_int_equal(match("POST", "/v1/sandboxes/a/processes/7", &m, &e), -1);
	assert_int_equal(e.code, API_E_METHOD_NOT_ALLOWED);
	assert_string_equal(m.allow, "GET, HEAD, OPTIONS");
	assert_int_equal(match("GET", "/v1/sandboxes/a/processes/7/stdin", &m, &e), -1);
	assert_int_equal(e.code, API_E_METHOD_NOT_ALLOWED);
	assert_int_equal(match("DELETE", "/v1/sandboxes/a/processes", &m, &e), -1);
	assert_string_equal(m.allow, "GET, HEAD, POST, OPTIONS");
	static const char *const miss[] = {
		"/v1/sandboxes/a/processes/",           "/v1/sandboxes/a/processes//output",
		"/v1/sandboxes/a/processes/7/",         "/v1/sandboxes/a/processes/7/x",
		"/v1/sandboxes/a/processes/7/tty/more", "/v1/sandboxes/a/shell/"
	};
	for (size_t i = 0; i < sizeof(miss) / sizeof(miss[0]); i++) {
		assert_int_equal(match("GET", miss[i], &m, &e), -1);
		if (e.code != API_E_ROUTE_NOT_FOUND)
			fail_msg("%s: %s", miss[i], api_code_name(e.code));
	}
}

/* Files, archives, ports. */
static void test_file_endpoints(void **state)
{
	struct http_route_match m;
	struct api_err e;

	(void)state;
	assert_int_equal(match("GET", "/v1/sandboxes/abc/files/stat", &m, &e), 0);
	assert_ptr_equal(m.route->handler, handle_file_stat);
	assert_string_equal(m.id, "abc");
	assert_int_equal(match("GET", "/v1/sandboxes/abc/files/list", &m, &e), 0);
	assert_ptr_equal(m.route->handler, handle_file_list);
	assert_int_equal(match("POST", "/v1/sandboxes/abc/files/mkdir", &m, &e), 0);
	assert_true(has_body(m.route->handler));
	assert_int_equal(match("POST", "/v1/sandboxes/abc/files/rename", &m, &e), 0);
	assert_ptr_equal(m.route->handler, handle_file_rename);
	assert_int_equal(match("GET", "/v1/sandboxes/abc/files/remove", &m, &e), -1);
	assert_int_equal(e.code, API_E_METHOD_NOT_ALLOWED);
	assert_int_equal(match("PUT", "/v1/sandboxes/abc/archive", &m, &e), 0);
	assert_ptr_equal(m.route->handler, handle_archive_put_begin);
	assert_true(has_body(m.route->handler));
	assert_int_equal(match("GET", "/v1/sandboxes/abc/archive", &m, &e), 0);
	assert_false(has_body(m.route->handler));
	assert_int_equal(match("POST", "/v1/sandboxes/abc/ports", &m, &e), 0);
	assert_ptr_equal(m.route->handler, handle_port_add);
	assert_int_equal(match("DELETE", "/v1/sandboxes/abc/ports/8080", &m, &e), 0);
	assert_ptr_equal(m.route->handler, handle_port_remove);
	assert_string_equal(m.sub, "8080");
	assert_int_equal(match("DELETE", "/v1/sandboxes/abc/ports", &m, &e), -1);
	assert_int_equal(e.code, API_E_METHOD_NOT_ALLOWED);
	assert_int_equal(match("DELETE", "/v1/sandboxes/abc/ports/", &m, &e), -1);
	assert_int_equal(e.code, API_E_ROUTE_NOT_FOUND);
	assert_int_equal(match("GET", "/v1/sandboxes/abc/files/stat/x", &m, &e), -1);
	assert_int_equal(e.code, API_E_ROUTE_NOT_FOUND);
}

/* The file watch. */
static void test_watch_endpoint(void **state)
{
	struct http_route_match m;
	struct api_err e;

	(void)state;
	assert_int_equal(match("GET", "/v1/sandboxes/abc/files/watch", &m, &e), 0);
	assert_ptr_equal(m.route->handler, handle_file_watch);
	assert_string_equal(m.id, "abc");
	assert_false(has_body(handle_file_watch));
	assert_int_equal(match("POST", "/v1/sandboxes/abc/files/watch", &m, &e), -1);
	assert_int_equal(e.code, API_E_METHOD_NOT_ALLOWED);
	assert_string_equal(m.allow, "GET, HEAD, OPTIONS");
}

/* pattern with every {name} segment given a value: a path it matches. */
static void path_of(const char *pattern, char *out, size_t cap)
{
	size_t n = 0;

	for (const char *p = pattern; *p && n + 3 < cap;) {
		if (*p == '{') {
			n += (size_t)snprintf(out + n, cap - n, "v%zu", n);
			p = strchr(p, '}') + 1;
		} else {
			out[n++] = *p++;
		}
	}
	out[n] = '\0';
}

/* The table's own shape: a handler each, one line per method and path,
 * patterns as docs/openapi.yaml writes them (at most HTTP_PARAMS
 * segments of {name}), a body policy and a limit that agree. */
static void test_table_shape(void **state)
{
	(void)state;
	assert_true(routes_count > 0);
	for (size_t i = 0; i < routes_count; i++) {
		const struct http_route *r = &routes[i];
		size_t params = 0;

		assert_non_null(r->handler);
		assert_int_equal(r->pattern[0], '/');
		for (const char *p = r->pattern; (p = strchr(p, '{')); p++)
			params++;
		assert_true(params <= HTTP_PARAMS);
		if (r->body == BODY_NONE)
			assert_int_equal(r->limit, LIMIT_NONE);
		else if (r->body == BODY_JSON || r->body == BODY_RAW)
			assert_int_equal(r->limit, LIMIT_BODY);
		else
			assert_true(r->limit == LIMIT_UPLOAD || r->limit == LIMIT_IMAGE ||
				    r->limit == LIMIT_CONTEXT);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(routes[j].method, r->method) &&
			    !strcmp(routes[j].pattern, r->pattern))
				fail_msg("%s %s: two lines", r->method, r->pattern);
	}
}

/*
 * Every line of the table answers its own method and path with its own
 * handler (no other pattern takes its path first); its path's Allow lists
 * exactly the methods of the lines with that pattern, in table order,
 * with HEAD after GET and OPTIONS last; HEAD runs the GET line, OPTIONS
 * is answered from Allow, and every other method on that path is 405
 * with that same Allow.
 */
static void test_allow_is_each_paths_methods(void **state)
{
	static const char *const methods[] = { "GET",   "POST", "PUT",     "DELETE",
					       "PATCH", "HEAD", "OPTIONS", "get" };

	(void)state;
	for (size_t i = 0; i < routes_count; i++) {
		const struct http_route *r = &routes[i];
		char path[256], allow[HTTP_ALLOW_MAX] = "";
		struct http_route_match m;
		struct api_err e;
		size_t len = 0;

		path_of(r->pattern, path, sizeof(path));
		const struct http_route *get = NULL;

		for (size_t j = 0; j < routes_count; j++) {
			if (strcmp(routes[j].pattern, r->pattern))
				continue;
			len += (size_t)snprintf(allow + len, sizeof(allow) - len, "%s%s",
						len ? ", " : "", routes[j].method);
			if (!strcmp(routes[j].method, "GET")) {
				len += (size_t)snprintf(allow + len, sizeof(allow) - len, ", HEAD");
				get = &routes[j];
			}
		}
		len += (size_t)snprintf(allow + len, sizeof(allow) - len, "%s%s", len ? ", " : "",
					"OPTIONS");
		assert_true(len < sizeof(allow));
		assert_int_equal(match(r->method, path, &m, &e), 0);
		assert_ptr_equal(m.route, r);
		assert_string_equal(m.allow, allow);
		stub_called = NULL;
		m.route->handler(NULL);
		assert_non_null(stub_called);
		for (size_t k = 0; k < sizeof(methods) / sizeof(methods[0]); k++) {
			bool own = false;

			for (size_t j = 0; j < routes_count; j++)
				own |= !strcmp(routes[j].pattern, r->pattern) &&
					!strcmp(routes[j].method, methods[k]);
			if (own)
				continue;
			if (!strcmp(methods[k], "HEAD") && get) {
				assert_int_equal(match(methods[k], path, &m, &e), 0);
				assert_ptr_equal(m.route, get);
				continue;
			}
			if (!strcmp(methods[k], "OPTIONS")) {
				assert_int_equal(match(methods[k], path, &m, &e),
						 HTTP_ROUTE_OPTIONS);
				assert_string_equal(m.allow, allow);
				continue;
			}
			assert_int_equal(match(methods[k], path, &m, &e), -1);
			if (e.code != API_E_METHOD_NOT_ALLOWED)
				fail_msg("%s %s: %s, not 405", methods[k], path,
					 api_code_name(e.code));
			assert_null(m.route);
			assert_string_equal(m.allow, allow);
			assert_non_null(strstr(e.msg, allow));
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_endpoint),
		cmocka_unit_test(test_near_misses_are_404),
		cmocka_unit_test(test_wrong_method_is_405_with_allow),
		cmocka_unit_test(test_head_and_options),
		cmocka_unit_test(test_table_own_head_and_options),
		cmocka_unit_test(test_overlong_id_segment_is_404),
		cmocka_unit_test(test_snapshot_endpoints),
		cmocka_unit_test(test_process_endpoints),
		cmocka_unit_test(test_file_endpoints),
		cmocka_unit_test(test_watch_endpoint),
		cmocka_unit_test(test_table_shape),
		cmocka_unit_test(test_allow_is_each_paths_methods),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
