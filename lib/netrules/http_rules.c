/* http_rules: see http_rules.h. */
#include "lib/netrules/http_rules.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/http_token.h"
#include "lib/base/json.h"
#include "lib/base/num_parse.h"

static const char *const rule_fields[] = { "host",   "methods",   "paths",  "ports", "action",
					   "status", "intercept", "inject", NULL };
static const char *const inject_fields[] = { "header", "secret", "format", NULL };

/* Fields the proxy itself writes or that frame the message (RFC 9110 7.6.1
 * hop-by-hop, RFC 9112 6 framing): an injected one would let a rule split
 * or smuggle requests, or speak for the proxy. */
static const char *const owned_headers[] = { "connection",
					     "content-length",
					     "expect",
					     "host",
					     "keep-alive",
					     "proxy-authenticate",
					     "proxy-authorization",
					     "proxy-connection",
					     "te",
					     "trailer",
					     "transfer-encoding",
					     "upgrade",
					     NULL };

/* ---- paths ---- */

/* RFC 3986 2.3: what an escape may be decoded to without changing the URI. */
static bool unreserved(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		c == '-' || c == '.' || c == '_' || c == '~';
}

/* The segment out[from..to) is "." or ".." (before any ';' parameter). */
static bool dot_segment(const char *out, size_t from, size_t to)
{
	const char *semi = memchr(out + from, ';', to - from);
	size_t n = (semi ? (size_t)(semi - out) : to) - from;

	return (n == 1 && out[from] == '.') || (n == 2 && out[from] == '.' && out[from + 1] == '.');
}

/* One character of s at *i (an escape is three), normalized into esc[]: its length, or 0 with *why. */
static size_t path_char(const char *s, size_t n, size_t *i, char esc[3], bool *slash,
			const char **why)
{
	unsigned char c = (unsigned char)s[*i];
	int hi, lo;

	*slash = c == '/';
	if (c <= 0x20 || c >= 0x7f) {
		*why = "has a space, a control or a byte outside ASCII";
		return 0;
	}
	if (c == '\\' || c == '?' || c == '#') {
		*why = "has a backslash, '?' or '#'";
		return 0;
	}
	esc[0] = (char)c;
	if (c != '%')
		return 1;
	hi = *i + 2 < n ? num_hex_digit(s[*i + 1]) : -1;
	lo = *i + 2 < n ? num_hex_digit(s[*i + 2]) : -1;
	if (hi < 0 || lo < 0) {
		*why = "has a '%' that is not followed by two hex digits";
		return 0;
	}
	*i += 2;
	c = (unsigned char)(hi << 4 | lo);
	if (c < 0x20 || c == 0x7f || c == '/' || c == '\\') {
		*why = "has an escaped control, '/' or '\\', which servers decode differently";
		return 0;
	}
	if (unreserved(c)) {
		esc[0] = (char)c;
		return 1;
	}
	esc[1] = "0123456789ABCDEF"[hi];
	esc[2] = "0123456789ABCDEF"[lo];
	return 3;
}

int http_path_norm(const char *s, size_t n, char *out, size_t cap, const char **why)
{
	size_t o = 0, seg = 1;

	if (n == 0 || s[0] != '/') {
		*why = "does not start with '/'";
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		char esc[3];
		bool slash;
		size_t k = path_char(s, n, &i, esc, &slash, why);

		if (k == 0)
			return -EINVAL;
		if (slash && o > 0) {
			if (o == seg) {
				*why = "has an empty segment (\"//\"), which some servers merge";
				return -EINVAL;
			}
			if (dot_segment(out, seg, o))
				goto dot;
			seg = o + 1;
		}
		if (o + k >= cap) {
			*why = "is too long";
			return -EINVAL;
		}
		memcpy(out + o, esc, k);
		o += k;
	}
	if (o > seg && dot_segment(out, seg, o))
		goto dot;
	out[o] = '\0';
	return 0;
dot:
	*why = "has a \".\" or \"..\" segment";
	return -EINVAL;
}

/* ---- parsing ---- */

/* v is an array of at most HTTP_LIST_MAX entries (or absent: 0). */
static int list_size(const json_t *v, size_t i, const char *field, size_t *n,
		     struct net_rules_err *e)
{
	*n = 0;
	if (!v)
		return 0;
	if (!json_is_array(v))
		return net_rules_fail(e, NET_RULES_E_BAD_FIELD, "http[%zu].%s must be an array", i,
				      field);
	*n = json_array_size(v);
	if (*n > HTTP_LIST_MAX)
		return net_rules_fail(e, NET_RULES_E_BAD_FIELD,
				      "http[%zu].%s has %zu entries; at most %d", i, field, *n,
				      HTTP_LIST_MAX);
	return 0;
}

/* A method: case-sensitive (RFC 9110 9.1), so only the upper-case spellings
 * every registered method has, and "get" is refused rather than never matched. */
bool http_method_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > HTTP_METHOD_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
		      s[i] == '_'))
			return false;
	return true;
}

static int parse_methods(const json_t *a, size_t i, struct http_rule *r, struct net_rules_err *e)
{
	int rc = list_size(a, i, "methods", &r->n_methods, e);

	for (size_t k = 0; rc == 0 && k < r->n_methods; k++) {
		const json_t *m = json_array_get(a, k);

		if (!json_is_string(m) || !http_method_ok(json_string_value(m)))
			return net_rules_fail(
				e, NET_RULES_E_BAD_FIELD,
				"http[%zu].methods[%zu] \"%.40s\": not a method (1..%d upper-case letters, digits, '-' or '_'; methods are case-sensitive)",
				i, k, json_is_string(m) ? json_string_value(m) : "",
				HTTP_METHOD_MAX);
		strcpy(r->methods[k], json_string_value(m));
	}
	return rc;
}

static int parse_paths(const json_t *a, size_t i, struct http_rule *r, struct net_rules_err *e)
{
	size_t n;
	int rc = list_size(a, i, "paths", &n, e);

	for (size_t k = 0; rc == 0 && k < n; k++) {
		const json_t *p = json_array_get(a, k);
		char norm[HTTP_PATH_MAX + 1];
		const char *why;

		if (!json_is_string(p))
			return net_rules_fail(e, NET_RULES_E_BAD_FIELD,
					      "http[%zu].paths[%zu] must be a string like \"/repos/\"",
					      i, k);
		if (json_string_length(p) > HTTP_PATH_MAX)
			return net_rules_fail(e, NET_RULES_E_BAD_FIELD,
					      "http[%zu].paths[%zu] is longer than %d bytes", i, k,
					      HTTP_PATH_MAX);
		if (http_path_norm(json_string_value(p), json_string_length(p), norm, sizeof(norm),
				   &why) < 0)
			return net_rules_fail(e, NET_RULES_E_BAD_FIELD,
					      "http[%zu].paths[%zu] \"%.60s\" %s", i, k,
					      json_string_value(p), why);
		r->paths[k] = strdup(norm);
		if (!r->paths[k])
			return net_rules_fail(e, NET_RULES_E_NOMEM, "out of memory");
		r->n_paths = k + 1;
	}
	return rc;
}

static int parse_ports(const json_t *a, size_t i, struct http_rule *r, struct net_rules_err *e)
{
	int rc = list_size(a, i, "ports", &r->n_ports, e);

	for (size_t k = 0; rc == 0 && k < r->n_ports; k++) {
		const json_t *p = json_array_get(a, k);

		if (!json_is_integer(p) || json_integer_value(p) < 1 ||
		    json_integer_value(p) > 65535)
			return net_rules_fail(e, NET_RULES_E_BAD_FIELD,
					      "http[%zu].ports[%zu] must be a port 1..65535", i, k);
		r->ports[k] = (uint16_t)json_integer_value(p);
	}
	return rc;
}

static bool in_list(const char *s, const char *const *list)
{
	for (size_t i = 0; list[i]; i++)
		if (!strcmp(s, list[i]))
			return true;
	return false;
}

bool http_header_owned(const char *name)
{
	return in_list(name, owned_headers);
}

bool http_secret_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > HTTP_SECRET_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
		      s[i] == '_'))
			return false;
	return true;
}

/* The header name: a token, lower-cased, not one the proxy owns, not twice. */
static int inject_header(const char *h, size_t i, size_t k, struct http_rule *r,
			 struct net_rules_err *e)
{
	struct http_inject *x = &r->inject[k];
	size_t n = strlen(h);

	if (n > HTTP_HEADER_MAX || !http_token(h, n))
		return net_rules_fail(
			e, NET_RULES_E_BAD_FIELD,
			"http[%zu].inject[%zu].header \"%.40s\": not a field name (a token of 1..%d bytes)",
			i, k, h, HTTP_HEADER_MAX);
	for (size_t c = 0; c <= n; c++)
		x->header[c] = (char)(h[c] >= 'A' && h[c] <= 'Z' ? h[c] - 'A' + 'a' : h[c]);
	if (http_header_owned(x->header))
		return net_rules_fail(
			e, NET_RULES_E_BAD_FIELD,
			"http[%zu].inject[%zu].header \"%s\" is a hop-by-hop or framing field the proxy owns; inject another",
			i, k, x->header);
	for (size_t c = 0; c < k; c++)
		if (!strcmp(r->inject[c].header, x->header))
			return net_rules_fail(e, NET_RULES_E_BAD_FIELD,
					      "http[%zu].inject[%zu].header \"%s\" is injected twice",
					      i, k, x->header);
	return 0;
}

/* The value's template: one "{}", nothing a field value may not hold. */
static int inject_format(const json_t *f, size_t i, size_t k, struct http_inject *x,
			 struct net_rules_err *e)
{
	const char *s = json_string_value(f), *at = strstr(s, "{}");
	size_t n = json_string_length(f);

	if (n > HTTP_FORMAT_MAX)
		return net_rules_fail(e, NET_RULES_E_BAD_FIELD,
				      "http[%zu].inject[%zu].format is longer than %d bytes", i, k,
				      HTTP_FORMAT_MAX);
	for (size_t c = 0; c < n; c++)
		if ((unsigned char)s[c] < 0x20 || s[c] == 0x7f)
			return net_rules_fail(
				e, NET_RULES_E_BAD_FIELD,
				"http[%zu].inject[%zu].format has a control character (CR, LF, NUL, ...), which a header value may not hold",
				i, k);
	if (!at || strstr(at + 2, "{}"))
		return net_rules_fail(
			e, NET_RULES_E_BAD_FIELD,
			"http[%zu].inject[%zu].format must hold \"{}\" exactly once, where the secret goes (\"Bearer {}\")",
			i, k);
	memcpy(x->format, s, n + 1);
	return 0;
}

static int parse_inject_one(const json_t *v, size_t i, size_t k, struct http_rule *r,
			    struct net_rules_err *e)
{
	struct http_inject *x = &r->inject[k];
	const json_t *h = json_object_get(v, "header"), *s = json_object_get(v, "secret"),
		     *f = json_object_get(v, "format");
	struct json_field_fail ff;
	int rc;

	if (!json_is_object(v))
		return net_rules_fail(e, NET_RULES_E_BAD_FIELD,
				      "http[%zu].inject[%zu] must be an object", i, k);
	if (json_field_only(v, inject_fields, &ff) < 0)
		return net_rules_fail(
			e, NET_RULES_E_UNKNOWN_FIELD,
			"http[%zu].inject[%zu]: unknown field \"%.60s\" (expected header, secret, format)",
			i, k, ff.key);
	if (!json_is_string(h) || !json_is_string(s) || !json_is_string(f))
		return net_rules_fail(
			e, NET_RULES_E_MISSING_FIELD,
			"http[%zu].inject[%zu]: needs \"header\", \"secret\" and \"format\", each a string",
			i, k);
	rc = inject_header(json_string_value(h), i, k, r, e);
	if (rc < 0)
		return rc;
	if (!http_secret_name_ok(json_string_value(s)))
		return net_rules_fail(
			e, NET_RULES_E_BAD_FIELD,
			"http[%zu].inject[%zu].secret \"%.40s\": not a secret name (1..%d of a-z, 0-9, '_', '-')",
			i, k, json_string_value(s), HTTP_SECRET_MAX);
	strcpy(x->secret, json_string_value(s));
	return inject_format(f, i, k, x, e);
}

static int parse_inject(const json_t *a, size_t i, struct http_rule *r, struct net_rules_err *e)
{
	size_t n;
	int rc = list_size(a, i, "inject", &n, e);

	if (rc < 0 || n == 0)
		return rc;
	r->inject = calloc(n, sizeof(*r->inject));
	if (!r->inject)
		return net_rules_fail(e, NET_RULES_E_NOMEM, "out of memory");
	r->n_inject = n;
	for (size_t k = 0; k < n; k++) {
		rc = parse_inject_one(json_array_get(a, k), i, k, r, e);
		if (rc < 0)
			return rc;
	}
	if (!r->intercept)
		return net_rules_fail(
			e, NET_RULES_E_BAD_FIELD,
			"http[%zu].inject needs \"intercept\": true (kiln adds a header to an HTTPS request only when it decrypts it)",
			i);
	if (r->deny)
		return net_rules_fail(e, NET_RULES_E_BAD_FIELD,
				      "http[%zu].inject: only with \"action\": \"allow\"", i);
	return 0;
}

/* action, status and intercept. */
static int parse_verdict(const json_t *v, size_t i, struct http_rule *r, struct net_rules_err *e)
{
	const json_t *action = json_object_get(v, "action"), *status = json_object_get(v, "status");
	const json_t *intercept = json_object_get(v, "intercept");

	if (action) {
		const char *a = json_is_string(action) ? json_string_value(action) : "";

		if (strcmp(a, "allow") && strcmp(a, "deny"))
			return net_rules_fail(e, NET_RULES_E_BAD_FIELD,
					      "http[%zu].action must be \"allow\" or \"deny\"", i);
		r->deny = !strcmp(a, "deny");
	}
	if (status) {
		if (!json_is_integer(status) || json_integer_value(status) < 400 ||
		    json_integer_value(status) > 599)
			return net_rules_fail(e, NET_RULES_E_BAD_FIELD,
					      "http[%zu].status must be an integer 400..599", i);
		if (!r->deny)
			return net_rules_fail(e, NET_RULES_E_BAD_FIELD,
					      "http[%zu].status: only with \"action\": \"deny\"",
					      i);
	}
	r->status = r->deny ? (uint16_t)(status ? json_integer_value(status) : HTTP_DENY_STATUS)
			    : 0;
	if (intercept && !json_is_boolean(intercept))
		return net_rules_fail(e, NET_RULES_E_BAD_FIELD,
				      "http[%zu].intercept must be true or false", i);
	r->intercept = intercept && json_is_true(intercept);
	return 0;
}

static int parse_rule(const json_t *v, size_t i, struct http_rule *r, struct net_rules_err *e)
{
	const json_t *host = json_object_get(v, "host");
	struct json_field_fail ff;
	int rc;

	if (!json_is_object(v))
		return net_rules_fail(e, NET_RULES_E_BAD_FIELD, "http[%zu] must be an object", i);
	if (json_field_only(v, rule_fields, &ff) < 0)
		return net_rules_fail(
			e, NET_RULES_E_UNKNOWN_FIELD,
			"http[%zu]: unknown field \"%.60s\" (expected host, methods, paths, ports, action, status, intercept, inject)",
			i, ff.key);
	if (!host)
		return net_rules_fail(e, NET_RULES_E_MISSING_FIELD, "http[%zu]: needs \"host\"", i);
	if (!json_is_string(host) ||
	    net_host_parse(json_string_value(host), r->host.host, &r->host.wildcard) < 0)
		return net_rules_fail(e, NET_RULES_E_BAD_FIELD,
				      "http[%zu].host \"%.80s\": " NET_HOST_FORM, i,
				      json_is_string(host) ? json_string_value(host) : "");
	r->host.is_host = true;
	rc = parse_methods(json_object_get(v, "methods"), i, r, e);
	if (rc == 0)
		rc = parse_paths(json_object_get(v, "paths"), i, r, e);
	if (rc == 0)
		rc = parse_ports(json_object_get(v, "ports"), i, r, e);
	if (rc == 0)
		rc = parse_verdict(v, i, r, e);
	if (rc == 0)
		rc = parse_inject(json_object_get(v, "inject"), i, r, e);
	return rc;
}

int http_rules_parse(const json_t *j, struct http_rules **out, struct net_rules_err *e)
{
	struct http_rules *r;
	size_t n;
	int rc = 0;

	*out = NULL;
	if (!json_is_array(j))
		return net_rules_fail(e, NET_RULES_E_BAD_JSON,
				      "\"http\" must be an array of rules");
	n = json_array_size(j);
	if (n > HTTP_RULES_MAX)
		return net_rules_fail(e, NET_RULES_E_BAD_FIELD,
				      "\"http\" has %zu rules; at most %d", n, HTTP_RULES_MAX);
	r = calloc(1, sizeof(*r));
	if (!r || (n && !(r->rules = calloc(n, sizeof(*r->rules))))) {
		free(r);
		return net_rules_fail(e, NET_RULES_E_NOMEM, "out of memory");
	}
	/* Counted as they are tried, the refused one too, so a refusal frees
	 * what every rule so far holds. */
	for (size_t i = 0; rc == 0 && i < n; i++, r->n++)
		rc = parse_rule(json_array_get(j, i), i, &r->rules[i], e);
	if (rc < 0) {
		http_rules_free(r);
		return rc;
	}
	*out = r;
	return 0;
}

int http_rules_parse_text(const char *text, size_t len, struct http_rules **out,
			  struct net_rules_err *e)
{
	json_t *j = net_rules_load(text, len, HTTP_RULES_TEXT_MAX, "the http rule set", e);
	int rc;

	*out = NULL;
	if (!j)
		return -EINVAL;
	rc = http_rules_parse(j, out, e);
	json_decref(j);
	return rc;
}

void http_rules_free(struct http_rules *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		for (size_t k = 0; k < r->rules[i].n_paths; k++)
			free(r->rules[i].paths[k]);
		free(r->rules[i].inject);
	}
	free(r->rules);
	free(r);
}

/* ---- printing ---- */

static json_t *inject_json(const struct http_inject *x)
{
	return json_pack("{ssssss}", "header", x->header, "secret", x->secret, "format", x->format);
}

static json_t *rule_json(const struct http_rule *r)
{
	json_t *o = json_object(), *a;
	char host[NET_HOST_MAX + 3];

	if (!o)
		return NULL;
	snprintf(host, sizeof(host), "%s%s", r->host.wildcard ? "*." : "", r->host.host);
	json_object_set_new(o, "host", json_string(host));
	if (r->n_methods && (a = json_array()) && !json_object_set_new(o, "methods", a))
		for (size_t k = 0; k < r->n_methods; k++)
			json_array_append_new(a, json_string(r->methods[k]));
	if (r->n_paths && (a = json_array()) && !json_object_set_new(o, "paths", a))
		for (size_t k = 0; k < r->n_paths; k++)
			json_array_append_new(a, json_string(r->paths[k]));
	if (r->n_ports && (a = json_array()) && !json_object_set_new(o, "ports", a))
		for (size_t k = 0; k < r->n_ports; k++)
			json_array_append_new(a, json_integer(r->ports[k]));
	json_object_set_new(o, "action", json_string(r->deny ? "deny" : "allow"));
	if (r->deny)
		json_object_set_new(o, "status", json_integer(r->status));
	json_object_set_new(o, "intercept", json_boolean(r->intercept));
	if (r->n_inject && (a = json_array()) && !json_object_set_new(o, "inject", a))
		for (size_t k = 0; k < r->n_inject; k++)
			json_array_append_new(a, inject_json(&r->inject[k]));
	return o;
}

json_t *http_rules_to_json(const struct http_rules *r)
{
	json_t *a = json_array();

	for (size_t i = 0; a && r && i < r->n; i++) {
		if (json_array_append_new(a, rule_json(&r->rules[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

/* ---- deciding ---- */

const char *http_decision_name(enum http_decision d)
{
	switch (d) {
	case HTTP_ALLOW:
		return "allow";
	case HTTP_DENY_RULE:
		return "deny (rule)";
	case HTTP_NEED_HEAD:
		return "need the request head";
	case HTTP_DENY_UNVERIFIABLE:
		return "deny (the rule limits methods or paths, and the flow is not decrypted)";
	case HTTP_DENY_BAD_PATH:
		return "deny (path not in normal form)";
	default:
		return "deny (no rule)";
	}
}

static bool port_matches(const struct http_rule *r, uint16_t port)
{
	if (r->n_ports == 0)
		return port == 80 || port == 443;
	for (size_t k = 0; k < r->n_ports; k++)
		if (r->ports[k] == port)
			return true;
	return false;
}

bool http_rules_lists_port(const struct http_rules *r, uint16_t port)
{
	for (size_t i = 0; r && i < r->n; i++)
		if (port_matches(&r->rules[i], port))
			return true;
	return false;
}

bool http_rules_names(const struct http_rules *r, const char *name)
{
	for (size_t i = 0; r && i < r->n; i++)
		if (net_rule_host_matches(&r->rules[i].host, name))
			return true;
	return false;
}

static bool method_matches(const struct http_rule *r, const char *m)
{
	for (size_t k = 0; k < r->n_methods; k++)
		if (!strcmp(r->methods[k], m))
			return true;
	return false;
}

/* Whole segments: "/repos" is a prefix of "/repos" and "/repos/x", not "/repository". */
static bool path_matches(const struct http_rule *r, const char *path)
{
	for (size_t k = 0; k < r->n_paths; k++) {
		const char *p = r->paths[k];
		size_t n = strlen(p);

		if (!strncmp(path, p, n) && (p[n - 1] == '/' || path[n] == '\0' || path[n] == '/'))
			return true;
	}
	return false;
}

/* The request-target's path, before its query, in normal form. */
static int request_path(const char *target, char *out)
{
	const char *why;

	if (!target)
		return -EINVAL;
	return http_path_norm(target, strcspn(target, "?"), out, HTTP_REQ_PATH_MAX, &why);
}

enum http_decision http_rules_decide(const struct http_rules *r, const struct http_flow *f,
				     size_t *index)
{
	char host[NET_HOST_MAX + 1], path[HTTP_REQ_PATH_MAX];
	int path_rc = 1; /* 1: not read yet */
	size_t n = r ? r->n : 0;
	bool wild;

	*index = n;
	if (!f->host || net_host_parse(f->host, host, &wild) < 0 || wild)
		return HTTP_DENY_DEFAULT;
	for (size_t i = 0; i < n; i++) {
		const struct http_rule *u = &r->rules[i];

		if (!net_rule_host_matches(&u->host, host) || !port_matches(u, f->port))
			continue;
		if (!f->method) {
			*index = i;
			if (u->n_methods || u->n_paths)
				return u->intercept ? HTTP_NEED_HEAD : HTTP_DENY_UNVERIFIABLE;
			return u->deny ? HTTP_DENY_RULE : HTTP_ALLOW;
		}
		if (u->n_methods && !method_matches(u, f->method))
			continue;
		if (u->n_paths) {
			if (path_rc == 1)
				path_rc = request_path(f->path, path);
			if (path_rc < 0) {
				*index = i;
				return HTTP_DENY_BAD_PATH;
			}
			if (!path_matches(u, path))
				continue;
		}
		*index = i;
		return u->deny ? HTTP_DENY_RULE : HTTP_ALLOW;
	}
	return HTTP_DENY_DEFAULT;
}
