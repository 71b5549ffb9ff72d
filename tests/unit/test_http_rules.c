/*
 * http_rules: the HTTP egress rules' JSON is validated with an error that
 * names the field (exact messages), prints back to what parses again, and
 * the decision is the first matching rule's, failing closed where the
 * request cannot be checked: a TLS splice against a method or path limit,
 * a path a server could read as another.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/netrules/http_rules.h"

static struct http_rules *rules(const char *text)
{
	struct http_rules *r = NULL;
	struct net_rules_err e = { 0 };

	if (http_rules_parse_text(text, strlen(text), &r, &e) != 0)
		fail_msg("'%s' refused: %s", text, e.msg);
	return r;
}

static void refused(const char *text, enum net_rules_ecode code, const char *msg)
{
	struct http_rules *r = (struct http_rules *)1;
	struct net_rules_err e = { 0 };

	assert_int_equal(http_rules_parse_text(text, strlen(text), &r, &e),
			 code == NET_RULES_E_NOMEM ? -ENOMEM : -EINVAL);
	assert_null(r);
	assert_int_equal(e.code, code);
	assert_string_equal(e.msg, msg);
}

static void test_refused_shape(void **state)
{
	(void)state;
	refused("{\"host\":\"a.test\"}", NET_RULES_E_BAD_JSON,
		"firewall: \"http\" must be an array of rules");
	refused("[{\"host\":\"a.test\"", NET_RULES_E_BAD_JSON,
		"firewall: invalid JSON at line 1 column 17: '}' expected near end of file");
	refused("[1]", NET_RULES_E_BAD_FIELD, "firewall: http[0] must be an object");
	refused("[{\"host\":\"a.test\",\"method\":[\"GET\"]}]", NET_RULES_E_UNKNOWN_FIELD,
		"firewall: http[0]: unknown field \"method\" (expected host, methods, paths, ports, action, status, intercept, inject)");
	refused("[{\"methods\":[\"GET\"]}]", NET_RULES_E_MISSING_FIELD,
		"firewall: http[0]: needs \"host\"");
	refused("[{\"host\":\"a.test\"},{\"host\":\"a..test\"}]", NET_RULES_E_BAD_FIELD,
		"firewall: http[1].host \"a..test\": not a DNS name or \"*.suffix\" (labels of 1..63 letters, digits, '-' or '_'; 253 bytes at most)");
	refused("[{\"host\":\"a.*.test\"}]", NET_RULES_E_BAD_FIELD,
		"firewall: http[0].host \"a.*.test\": not a DNS name or \"*.suffix\" (labels of 1..63 letters, digits, '-' or '_'; 253 bytes at most)");
	refused("[{\"host\":7}]", NET_RULES_E_BAD_FIELD,
		"firewall: http[0].host \"\": not a DNS name or \"*.suffix\" (labels of 1..63 letters, digits, '-' or '_'; 253 bytes at most)");
}

/* The text's bound: one byte over is refused, at it is read. */
static void test_text_max(void **state)
{
	size_t n = HTTP_RULES_TEXT_MAX + 1;
	char *big = malloc(n + 1);
	struct http_rules *r;

	(void)state;
	memset(big, ' ', n);
	big[0] = '[';
	big[n - 1] = ']';
	big[n] = '\0';
	refused(big, NET_RULES_E_BAD_JSON,
		"firewall: the http rule set is larger than 1048576 bytes");
	big[n - 1] = '\0';
	big[n - 2] = ']';
	r = rules(big);
	assert_int_equal(r->n, 0);
	http_rules_free(r);
	free(big);
}

static void test_refused_lists(void **state)
{
	(void)state;
	refused("[{\"host\":\"a.test\",\"methods\":\"GET\"}]", NET_RULES_E_BAD_FIELD,
		"firewall: http[0].methods must be an array");
	refused("[{\"host\":\"a.test\",\"methods\":[\"A\",\"B\",\"C\",\"D\",\"E\",\"F\",\"G\",\"H\","
		"\"I\",\"J\",\"K\",\"L\",\"M\",\"N\",\"O\",\"P\",\"Q\"]}]",
		NET_RULES_E_BAD_FIELD, "firewall: http[0].methods has 17 entries; at most 16");
	refused("[{\"host\":\"a.test\",\"methods\":[\"GET\",\"get\"]}]", NET_RULES_E_BAD_FIELD,
		"firewall: http[0].methods[1] \"get\": not a method (1..32 upper-case letters, digits, '-' or '_'; methods are case-sensitive)");
	refused("[{\"host\":\"a.test\",\"methods\":[\"\"]}]", NET_RULES_E_BAD_FIELD,
		"firewall: http[0].methods[0] \"\": not a method (1..32 upper-case letters, digits, '-' or '_'; methods are case-sensitive)");
	refused("[{\"host\":\"a.test\",\"methods\":[\"GET /\"]}]", NET_RULES_E_BAD_FIELD,
		"firewall: http[0].methods[0] \"GET /\": not a method (1..32 upper-case letters, digits, '-' or '_'; methods are case-sensitive)");
	refused("[{\"host\":\"a.test\",\"ports\":[443,0]}]", NET_RULES_E_BAD_FIELD,
		"firewall: http[0].ports[1] must be a port 1..65535");
	refused("[{\"host\":\"a.test\",\"ports\":[\"443\"]}]", NET_RULES_E_BAD_FIELD,
		"firewall: http[0].ports[0] must be a port 1..65535");
	refused("[{\"host\":\"a.test\",\"ports\":[65536]}]", NET_RULES_E_BAD_FIELD,
		"firewall: http[0].ports[0] must be a port 1..65535");
}

static void test_refused_paths(void **state)
{
	char long_path[HTTP_PATH_MAX + 64];
	int n;

	(void)state;
	refused("[{\"host\":\"a.test\",\"paths\":[\"repos/\"]}]", NET_RULES_E_BAD_FIELD,
		"firewall: http[0].paths[0] \"repos/\" does not start with '/'");
	refused("[{\"host\":\"a.test\",\"paths\":[1]}]", NET_RULES_E_BAD_FIELD,
		"firewall: http[0].paths[0] must be a string like \"/repos/\"");
	refused("[{\"host\":\"a.test\",\"paths\":[\"/a/../b\"]}]", NET_RULES_E_BAD_FIELD,
		"firewall: http[0].paths[0] \"/a/../b\" has a \".\" or \"..\" segment");
	refused("[{\"host\":\"a.test\",\"paths\":[\"/a/%2e%2E/b\"]}]", NET_RULES_E_BAD_FIELD,
		"firewall: http[0].paths[0] \"/a/%2e%2E/b\" has a \".\" or \"..\" segment");
	refused("[{\"host\":\"a.test\",\"paths\":[\"/a/..;x/b\"]}]", NET_RULES_E_BAD_FIELD,
		"firewall: http[0].paths[0] \"/a/..;x/b\" has a \".\" or \"..\" segment");
	refused("[{\"host\":\"a.test\",\"paths\":[\"/a/.\"]}]", NET_RULES_E_BAD_FIELD,
		"firewall: http[0].paths[0] \"/a/.\" has a \".\" or \"..\" segment");
	refused("[{\"host\":\"a.test\",\"paths\":[\"/a//b\"]}]", NET_RULES_E_BAD_FIELD,
		"firewall: http[0].paths[0] \"/a//b\" has an empty segment (\"//\"), which some servers merge");
	refused("[{\"host\":\"a.test\",\"paths\":[\"/a%2Fb\"]}]", NET_RULES_E_BAD_FIELD,
		"firewall: http[0].paths[0] \"/a%2Fb\" has an escaped control, '/' or '\\', which servers decode differently");
	refused("[{\"host\":\"a.test\",\"paths\":[\"/a\\\\b\"]}]", NET_RULES_E_BAD_FIELD,
		"firewall: http[0].paths[0] \"/a\\b\" has a backslash, '?' or '#'");
	refused("[{\"host\":\"a.test\",\"paths\":[\"/a?x=1\"]}]", NET_RULES_E_BAD_FIELD,
		"firewall: http[0].paths[0] \"/a?x=1\" has a backslash, '?' or '#'");
	refused("[{\"host\":\"a.test\",\"paths\":[\"/a b\"]}]", NET_RULES_E_BAD_FIELD,
		"firewall: http[0].paths[0] \"/a b\" has a space, a control or a byte outside ASCII");
	refused("[{\"host\":\"a.test\",\"paths\":[\"/caf\\u00e9\"]}]", NET_RULES_E_BAD_FIELD,
		"firewall: http[0].paths[0] \"/caf\xc3\xa9\" has a space, a control or a byte outside ASCII");
	refused("[{\"host\":\"a.test\",\"paths\":[\"/a%4\"]}]", NET_RULES_E_BAD_FIELD,
		"firewall: http[0].paths[0] \"/a%4\" has a '%' that is not followed by two hex digits");
	n = snprintf(long_path, sizeof(long_path), "[{\"host\":\"a.test\",\"paths\":[\"/");
	memset(long_path + n, 'a', HTTP_PATH_MAX);
	strcpy(long_path + n + HTTP_PATH_MAX, "\"]}]");
	refused(long_path, NET_RULES_E_BAD_FIELD,
		"firewall: http[0].paths[0] is longer than 1024 bytes");
}

static void test_refused_verdict(void **state)
{
	(void)state;
	refused("[{\"host\":\"a.test\",\"action\":\"drop\"}]", NET_RULES_E_BAD_FIELD,
		"firewall: http[0].action must be \"allow\" or \"deny\"");
	refused("[{\"host\":\"a.test\",\"status\":404}]", NET_RULES_E_BAD_FIELD,
		"firewall: http[0].status: only with \"action\": \"deny\"");
	refused("[{\"host\":\"a.test\",\"action\":\"deny\",\"status\":302}]", NET_RULES_E_BAD_FIELD,
		"firewall: http[0].status must be an integer 400..599");
	refused("[{\"host\":\"a.test\",\"action\":\"deny\",\"status\":\"403\"}]",
		NET_RULES_E_BAD_FIELD, "firewall: http[0].status must be an integer 400..599");
	refused("[{\"host\":\"a.test\",\"intercept\":1}]", NET_RULES_E_BAD_FIELD,
		"firewall: http[0].intercept must be true or false");
}

#define INJ(x) "[{\"host\":\"a.test\",\"intercept\":true,\"inject\":[" x "]}]"

static void test_refused_inject(void **state)
{
	(void)state;
	refused(INJ("\"authorization\""), NET_RULES_E_BAD_FIELD,
		"firewall: http[0].inject[0] must be an object");
	refused(INJ("{\"header\":\"x\",\"secret\":\"s\",\"format\":\"{}\",\"value\":\"v\"}"),
		NET_RULES_E_UNKNOWN_FIELD,
		"firewall: http[0].inject[0]: unknown field \"value\" (expected header, secret, format)");
	refused(INJ("{\"header\":\"x\",\"secret\":\"s\"}"), NET_RULES_E_MISSING_FIELD,
		"firewall: http[0].inject[0]: needs \"header\", \"secret\" and \"format\", each a string");
	refused(INJ("{\"header\":\"x-a:b\",\"secret\":\"s\",\"format\":\"{}\"}"),
		NET_RULES_E_BAD_FIELD,
		"firewall: http[0].inject[0].header \"x-a:b\": not a field name (a token of 1..64 bytes)");
	refused(INJ("{\"header\":\"\",\"secret\":\"s\",\"format\":\"{}\"}"), NET_RULES_E_BAD_FIELD,
		"firewall: http[0].inject[0].header \"\": not a field name (a token of 1..64 bytes)");
	refused(INJ("{\"header\":\"Content-Length\",\"secret\":\"s\",\"format\":\"{}\"}"),
		NET_RULES_E_BAD_FIELD,
		"firewall: http[0].inject[0].header \"content-length\" is a hop-by-hop or framing field the proxy owns; inject another");
	refused(INJ("{\"header\":\"HOST\",\"secret\":\"s\",\"format\":\"{}\"}"),
		NET_RULES_E_BAD_FIELD,
		"firewall: http[0].inject[0].header \"host\" is a hop-by-hop or framing field the proxy owns; inject another");
	refused(INJ("{\"header\":\"transfer-encoding\",\"secret\":\"s\",\"format\":\"{}\"}"),
		NET_RULES_E_BAD_FIELD,
		"firewall: http[0].inject[0].header \"transfer-encoding\" is a hop-by-hop or framing field the proxy owns; inject another");
	refused(INJ("{\"header\":\"connection\",\"secret\":\"s\",\"format\":\"{}\"}"),
		NET_RULES_E_BAD_FIELD,
		"firewall: http[0].inject[0].header \"connection\" is a hop-by-hop or framing field the proxy owns; inject another");
	refused(INJ("{\"header\":\"x-key\",\"secret\":\"a\",\"format\":\"{}\"},"
		    "{\"header\":\"X-Key\",\"secret\":\"b\",\"format\":\"{}\"}"),
		NET_RULES_E_BAD_FIELD,
		"firewall: http[0].inject[1].header \"x-key\" is injected twice");
	refused(INJ("{\"header\":\"x\",\"secret\":\"GitHub\",\"format\":\"{}\"}"),
		NET_RULES_E_BAD_FIELD,
		"firewall: http[0].inject[0].secret \"GitHub\": not a secret name (1..64 of a-z, 0-9, '_', '-')");
	refused(INJ("{\"header\":\"x\",\"secret\":\"\",\"format\":\"{}\"}"), NET_RULES_E_BAD_FIELD,
		"firewall: http[0].inject[0].secret \"\": not a secret name (1..64 of a-z, 0-9, '_', '-')");
	refused(INJ("{\"header\":\"x\",\"secret\":\"s\",\"format\":\"Bearer\"}"),
		NET_RULES_E_BAD_FIELD,
		"firewall: http[0].inject[0].format must hold \"{}\" exactly once, where the secret goes (\"Bearer {}\")");
	refused(INJ("{\"header\":\"x\",\"secret\":\"s\",\"format\":\"{}{}\"}"),
		NET_RULES_E_BAD_FIELD,
		"firewall: http[0].inject[0].format must hold \"{}\" exactly once, where the secret goes (\"Bearer {}\")");
	refused(INJ("{\"header\":\"x\",\"secret\":\"s\",\"format\":\"{}\\r\\nX-Evil: 1\"}"),
		NET_RULES_E_BAD_FIELD,
		"firewall: http[0].inject[0].format has a control character (CR, LF, NUL, ...), which a header value may not hold");
	refused("[{\"host\":\"a.test\",\"inject\":[{\"header\":\"x\",\"secret\":\"s\",\"format\":\"{}\"}]}]",
		NET_RULES_E_BAD_FIELD,
		"firewall: http[0].inject needs \"intercept\": true (kiln adds a header to an HTTPS request only when it decrypts it)");
	refused("[{\"host\":\"a.test\",\"intercept\":true,\"action\":\"deny\",\"inject\":[{\"header\":"
		"\"x\",\"secret\":\"s\",\"format\":\"{}\"}]}]",
		NET_RULES_E_BAD_FIELD, "firewall: http[0].inject: only with \"action\": \"allow\"");
}

static void test_too_many_rules(void **state)
{
	size_t cap = 64 + 24 * (HTTP_RULES_MAX + 1), n;
	char *j = malloc(cap);

	(void)state;
	n = (size_t)snprintf(j, cap, "[");
	for (int i = 0; i <= HTTP_RULES_MAX; i++)
		n += (size_t)snprintf(j + n, cap - n, "%s{\"host\":\"h%d.test\"}", i ? "," : "", i);
	snprintf(j + n, cap - n, "]");
	refused(j, NET_RULES_E_BAD_FIELD, "firewall: \"http\" has 257 rules; at most 256");
	free(j);
}

static char *dump(const json_t *j)
{
	char *s = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);

	assert_non_null(s);
	return s;
}

/* What the rules say back is what they took in, normalized, and parses again the same. */
static void test_round_trip(void **state)
{
	struct http_rules *r = rules(
		"[{\"host\":\"API.GitHub.com.\",\"methods\":[\"GET\",\"POST\"],"
		"\"paths\":[\"/repos/\",\"/%7euser/%c3%a9\"],\"ports\":[443,8443],\"intercept\":true,"
		"\"inject\":[{\"header\":\"Authorization\",\"secret\":\"github\",\"format\":\"Bearer {}\"}]},"
		"{\"host\":\"*.example.com\",\"action\":\"deny\",\"status\":451},"
		"{\"host\":\"a.test\",\"action\":\"deny\"},{\"host\":\"pypi.org\",\"action\":\"allow\"}]");
	struct http_rules *r2;
	struct net_rules_err e;
	json_t *j = http_rules_to_json(r), *k;
	char *a = dump(j), *b;

	(void)state;
	assert_string_equal(
		a,
		"[{\"action\":\"allow\",\"host\":\"api.github.com\",\"inject\":[{\"format\":\"Bearer {}\","
		"\"header\":\"authorization\",\"secret\":\"github\"}],\"intercept\":true,"
		"\"methods\":[\"GET\",\"POST\"],\"paths\":[\"/repos/\",\"/~user/%C3%A9\"],"
		"\"ports\":[443,8443]},"
		"{\"action\":\"deny\",\"host\":\"*.example.com\",\"intercept\":false,\"status\":451},"
		"{\"action\":\"deny\",\"host\":\"a.test\",\"intercept\":false,\"status\":403},"
		"{\"action\":\"allow\",\"host\":\"pypi.org\",\"intercept\":false}]");
	assert_int_equal(http_rules_parse(j, &r2, &e), 0);
	k = http_rules_to_json(r2);
	b = dump(k);
	assert_string_equal(a, b);
	free(a);
	free(b);
	json_decref(j);
	json_decref(k);
	http_rules_free(r);
	http_rules_free(r2);

	r = rules("[]");
	assert_int_equal(r->n, 0);
	j = http_rules_to_json(r);
	a = dump(j);
	assert_string_equal(a, "[]");
	free(a);
	json_decref(j);
	http_rules_free(r);
}

struct want {
	const char *host;
	uint16_t port;
	const char *method, *path;
	enum http_decision dec;
	size_t index;
};

static void decide_all(const struct http_rules *r, const struct want *w, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct http_flow f = { .host = w[i].host,
				       .port = w[i].port,
				       .method = w[i].method,
				       .path = w[i].path };
		size_t index;
		enum http_decision d = http_rules_decide(r, &f, &index);

		if (d != w[i].dec || index != w[i].index)
			fail_msg("case %zu (%s:%u %s %s): %s rule %zu, want %s rule %zu", i,
				 w[i].host ? w[i].host : "NULL", w[i].port,
				 w[i].method ? w[i].method : "-", w[i].path ? w[i].path : "-",
				 http_decision_name(d), index, http_decision_name(w[i].dec),
				 w[i].index);
	}
}

/*
 * "*.example.com" is net_rule_host_matches': one or more labels before
 * ".example.com", never example.com itself nor a name that merely ends
 * in "example.com"; names compare in lower case, one trailing dot dropped.
 */
static void test_wildcard(void **state)
{
	struct http_rules *r = rules("[{\"host\":\"*.example.com\"},{\"host\":\"example.org\"}]");
	const struct want w[] = {
		{ "a.example.com", 443, NULL, NULL, HTTP_ALLOW, 0 },
		{ "a.b.example.com", 443, NULL, NULL, HTTP_ALLOW, 0 },
		{ "A.Example.COM.", 80, "GET", "/", HTTP_ALLOW, 0 },
		{ "example.com", 443, NULL, NULL, HTTP_DENY_DEFAULT, 2 },
		{ "badexample.com", 443, NULL, NULL, HTTP_DENY_DEFAULT, 2 },
		{ ".example.com", 443, NULL, NULL, HTTP_DENY_DEFAULT, 2 },
		{ "example.com.evil.test", 443, NULL, NULL, HTTP_DENY_DEFAULT, 2 },
		{ "example.org", 443, NULL, NULL, HTTP_ALLOW, 1 },
		{ "a.example.org", 443, NULL, NULL, HTTP_DENY_DEFAULT, 2 },
		/* The destination's name is a name, never a pattern. */
		{ "*.example.com", 443, NULL, NULL, HTTP_DENY_DEFAULT, 2 },
		{ NULL, 443, NULL, NULL, HTTP_DENY_DEFAULT, 2 },
		{ "", 443, NULL, NULL, HTTP_DENY_DEFAULT, 2 },
	};

	(void)state;
	decide_all(r, w, sizeof(w) / sizeof(w[0]));
	http_rules_free(r);
}

/* The first matching rule decides; ports default to 80 and 443. */
static void test_order(void **state)
{
	struct http_rules *r = rules(
		"[{\"host\":\"api.test\",\"methods\":[\"DELETE\"],\"action\":\"deny\",\"status\":405},"
		"{\"host\":\"api.test\",\"methods\":[\"GET\",\"DELETE\"]},"
		"{\"host\":\"*.test\",\"ports\":[8080],\"action\":\"deny\"},"
		"{\"host\":\"*.test\",\"ports\":[8080]},"
		"{\"host\":\"*.test\"}]");
	const struct want w[] = {
		{ "api.test", 443, "DELETE", "/x", HTTP_DENY_RULE, 0 },
		{ "api.test", 443, "GET", "/x", HTTP_ALLOW, 1 },
		{ "api.test", 443, "POST", "/x", HTTP_ALLOW, 4 },
		{ "api.test", 80, "POST", "/x", HTTP_ALLOW, 4 },
		{ "api.test", 8080, "GET", "/x", HTTP_DENY_RULE, 2 },
		{ "api.test", 8443, "GET", "/x", HTTP_DENY_DEFAULT, 5 },
		{ "b.test", 443, "DELETE", "/x", HTTP_ALLOW, 4 },
		{ "b.test", 8080, "GET", "/", HTTP_DENY_RULE, 2 },
	};

	(void)state;
	decide_all(r, w, sizeof(w) / sizeof(w[0]));
	assert_int_equal(r->rules[0].status, 405);
	assert_int_equal(r->rules[2].status, HTTP_DENY_STATUS);
	http_rules_free(r);
	/* No rules, or none at all: the default deny. */
	decide_all(NULL,
		   (const struct want[]){ { "a.test", 443, NULL, NULL, HTTP_DENY_DEFAULT, 0 } }, 1);
}

/* Prefixes match whole segments; a path a server could read as another
 * is refused when (and only when) a path rule is consulted. */
static void test_paths(void **state)
{
	struct http_rules *r = rules(
		"[{\"host\":\"api.test\",\"paths\":[\"/admin\"],\"action\":\"deny\"},"
		"{\"host\":\"api.test\",\"paths\":[\"/repos/\",\"/user\",\"/~me\"]},"
		"{\"host\":\"gitlab.test\"}]");
	const struct want w[] = {
		{ "api.test", 443, "GET", "/repos/a/b?page=2", HTTP_ALLOW, 1 },
		{ "api.test", 443, "GET", "/repos", HTTP_DENY_DEFAULT, 3 },
		{ "api.test", 443, "GET", "/user", HTTP_ALLOW, 1 },
		{ "api.test", 443, "GET", "/user/keys", HTTP_ALLOW, 1 },
		{ "api.test", 443, "GET", "/user?x", HTTP_ALLOW, 1 },
		{ "api.test", 443, "GET", "/users", HTTP_DENY_DEFAULT, 3 },
		{ "api.test", 443, "GET", "/%7Eme/x", HTTP_ALLOW, 1 },
		{ "api.test", 443, "GET", "/admin", HTTP_DENY_RULE, 0 },
		{ "api.test", 443, "GET", "/admin/x", HTTP_DENY_RULE, 0 },
		{ "api.test", 443, "GET", "/administrator", HTTP_DENY_DEFAULT, 3 },
		/* Escaped unreserved characters are the characters. */
		{ "api.test", 443, "GET", "/%61dmin", HTTP_DENY_RULE, 0 },
		{ "api.test", 443, "GET", "/%75ser", HTTP_ALLOW, 1 },
		/* The ways around a prefix: refused before any rule says yes. */
		{ "api.test", 443, "GET", "/repos/../admin", HTTP_DENY_BAD_PATH, 0 },
		{ "api.test", 443, "GET", "/repos/%2e%2e/admin", HTTP_DENY_BAD_PATH, 0 },
		{ "api.test", 443, "GET", "/repos/..;/admin", HTTP_DENY_BAD_PATH, 0 },
		{ "api.test", 443, "GET", "//admin", HTTP_DENY_BAD_PATH, 0 },
		{ "api.test", 443, "GET", "/repos%2f..%2fadmin", HTTP_DENY_BAD_PATH, 0 },
		{ "api.test", 443, "GET", "/repos\\..\\admin", HTTP_DENY_BAD_PATH, 0 },
		{ "api.test", 443, "GET", "http://api.test/admin", HTTP_DENY_BAD_PATH, 0 },
		{ "api.test", 443, "GET", "*", HTTP_DENY_BAD_PATH, 0 },
		{ "api.test", 443, "GET", NULL, HTTP_DENY_BAD_PATH, 0 },
		/* No path rule consulted: the path is not the rules' business. */
		{ "gitlab.test", 443, "GET", "/api/v4/projects/group%2Fproject", HTTP_ALLOW, 2 },
		{ "gitlab.test", 443, "GET", "/a/../b", HTTP_ALLOW, 2 },
	};

	(void)state;
	decide_all(r, w, sizeof(w) / sizeof(w[0]));
	http_rules_free(r);
}

/*
 * A connection whose requests are not known (TLS, before or without
 * decryption): the first rule on host and port decides alone, and one
 * limiting methods or paths fails closed, even with a broader rule after it.
 */
static void test_no_head(void **state)
{
	struct http_rules *r = rules(
		"[{\"host\":\"api.github.com\",\"methods\":[\"GET\"]},"
		"{\"host\":\"uploads.github.com\",\"paths\":[\"/repos/\"],\"intercept\":true},"
		"{\"host\":\"blocked.github.com\",\"action\":\"deny\",\"status\":451},"
		"{\"host\":\"*.github.com\"}]");
	const struct want w[] = {
		{ "api.github.com", 443, NULL, NULL, HTTP_DENY_UNVERIFIABLE, 0 },
		{ "uploads.github.com", 443, NULL, NULL, HTTP_NEED_HEAD, 1 },
		{ "blocked.github.com", 443, NULL, NULL, HTTP_DENY_RULE, 2 },
		{ "raw.github.com", 443, NULL, NULL, HTTP_ALLOW, 3 },
		/* Once decrypted (or plain HTTP), each request is decided with its head. */
		{ "api.github.com", 80, "GET", "/", HTTP_ALLOW, 0 },
		{ "api.github.com", 80, "POST", "/", HTTP_ALLOW, 3 },
		{ "uploads.github.com", 443, "PUT", "/repos/x", HTTP_ALLOW, 1 },
		{ "uploads.github.com", 443, "PUT", "/orgs/x", HTTP_ALLOW, 3 },
	};

	(void)state;
	decide_all(r, w, sizeof(w) / sizeof(w[0]));
	assert_string_equal(http_decision_name(HTTP_DENY_UNVERIFIABLE),
			    "deny (the rule limits methods or paths, and the flow is not decrypted)");
	http_rules_free(r);
}

static void norm_ok(const char *in, const char *want)
{
	char out[64];
	const char *why = NULL;

	if (http_path_norm(in, strlen(in), out, sizeof(out), &why) < 0)
		fail_msg("'%s' refused: %s", in, why);
	assert_string_equal(out, want);
}

static void norm_bad(const char *in, size_t cap, const char *why_want)
{
	char out[64];
	const char *why = NULL;

	assert_true(cap <= sizeof(out));
	assert_int_equal(http_path_norm(in, strlen(in), out, cap, &why), -EINVAL);
	assert_string_equal(why, why_want);
}

static void test_path_norm(void **state)
{
	(void)state;
	norm_ok("/", "/");
	norm_ok("/a/b/", "/a/b/");
	norm_ok("/%7e%41%2d", "/~A-");
	norm_ok("/a%3bb%c3%A9", "/a%3Bb%C3%A9");
	norm_ok("/a/.b/..c/...", "/a/.b/..c/...");
	norm_ok("/a;x=1/b", "/a;x=1/b");
	norm_bad("", 64, "does not start with '/'");
	norm_bad("/a/%2e", 64, "has a \".\" or \"..\" segment");
	norm_bad("/./a", 64, "has a \".\" or \"..\" segment");
	norm_bad("/a/.;x", 64, "has a \".\" or \"..\" segment");
	norm_bad("/a%00", 64,
		 "has an escaped control, '/' or '\\', which servers decode differently");
	norm_bad("/a%5c", 64,
		 "has an escaped control, '/' or '\\', which servers decode differently");
	norm_bad("/a%zz", 64, "has a '%' that is not followed by two hex digits");
	norm_bad("/a%", 64, "has a '%' that is not followed by two hex digits");
	norm_bad("/a#f", 64, "has a backslash, '?' or '#'");
	norm_bad("/abcd", 5, "is too long");
	norm_ok("/abc", "/abc");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refused_shape),   cmocka_unit_test(test_text_max),
		cmocka_unit_test(test_refused_lists),   cmocka_unit_test(test_refused_paths),
		cmocka_unit_test(test_refused_verdict), cmocka_unit_test(test_refused_inject),
		cmocka_unit_test(test_too_many_rules),  cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_wildcard),        cmocka_unit_test(test_order),
		cmocka_unit_test(test_paths),           cmocka_unit_test(test_no_head),
		cmocka_unit_test(test_path_norm),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
