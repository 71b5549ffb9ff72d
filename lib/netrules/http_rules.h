/*
 * http_rules: a sandbox's HTTP egress rules, and the decision for one
 * connection or one request: the `http` member of a firewall rule set
 * (net_rules), decided by the egress proxy kiln-egress (api/egress); the
 * packet filter steers the ports these rules list and binds their names.
 *
 *   [{"host": "api.github.com", "methods": ["GET", "POST"],
 *     "paths": ["/repos/"], "ports": [443], "intercept": true,
 *     "inject": [{"header": "authorization", "secret": "github",
 *                 "format": "Bearer {}"}]},
 *    {"host": "*.example.com", "action": "deny", "status": 451}]
 *
 * A rule: `host` (required; a DNS name or "*.suffix", as net_rules' host
 * rules: net_host_parse, net_rule_host_matches), `methods` (method names,
 * case-sensitive as RFC 9110 9.1 says: upper-case letters, digits, '-',
 * '_'), `paths` (path prefixes starting with '/'), `ports` (integers;
 * default 80 and 443), `action` ("allow", the default, or "deny"),
 * `status` (400..599, only with deny; default 403), `intercept` (decrypt
 * a TLS connection to read its requests; default false; plain HTTP is
 * always read), `inject` (headers added to each request the rule allows:
 * `header` a field name, lower-cased, never a hop-by-hop or framing field
 * (connection, content-length, expect, host, keep-alive,
 * proxy-authenticate, proxy-authorization, proxy-connection, te,
 * trailer, transfer-encoding, upgrade), at most once per rule; `secret`
 * the name of a secret kilnd holds, [a-z0-9_-]{1,64}; `format` the
 * value, with exactly one "{}" where the secret goes and no control
 * character). inject requires "intercept": true (a header can be added
 * to an HTTPS request only when kiln decrypts it) and action allow.
 *
 * Contract:
 *  - Parsing is strict, with net_rules' error type and wording
 *    (net_rules_fail): `firewall: http[2].methods[0] "get": ...`. Limits:
 *    HTTP_RULES_MAX rules; HTTP_LIST_MAX methods, paths, ports and
 *    injects in each; a path of HTTP_PATH_MAX bytes.
 *  - Secrets appear by name only: no value ever enters this module, and
 *    http_rules_to_json echoes the names. The proxy must refuse a secret
 *    value holding CR, LF or NUL before it formats a header with it.
 *  - Paths are compared in one form (http_path_norm): an escaped
 *    unreserved character ("%41") decoded, other escapes upper-cased. A
 *    path a server could read as another is refused outright rather
 *    than compared (RFC 3986 5.2.4, and servers that go further): a "."
 *    or ".." segment (also escaped, also before a ';' parameter, as
 *    Tomcat reads "..;"), an empty segment ("//": nginx merges slashes),
 *    a backslash or an escaped '/' or '\', a control or a byte outside
 *    ASCII. A rule's prefix is refused at parse for the same; a request's
 *    path only when a rule with `paths` is consulted
 *    (HTTP_DENY_BAD_PATH), so an API that escapes '/' in its paths
 *    (GitLab's "group%2Fproject") still works under rules without paths.
 *    A prefix matches whole segments: "/repos" matches "/repos" and
 *    "/repos/x", not "/repository"; "/repos/" matches "/repos/x" only.
 *    The query ("?...") is not part of the path.
 *  - Decision (http_rules_decide): the first rule whose host and port
 *    match (host: the destination's name the filter recorded, never the
 *    guest's Host header or SNI), and, when the request head is known,
 *    whose methods and paths match, decides: allow (HTTP_ALLOW) or deny
 *    (HTTP_DENY_RULE, with its status). No rule: HTTP_DENY_DEFAULT.
 *    Allowed with no head (a TLS connection), the rule's `intercept`
 *    says whether to decrypt it or splice it; its `inject` applies to
 *    the requests of an allowed, decrypted (or plain) connection.
 *  - When the head is not known (a TLS connection, before any request is
 *    read: method NULL), the first rule matching host and port decides
 *    alone, and one naming methods or paths fails closed: with intercept
 *    it says HTTP_NEED_HEAD (decrypt, then decide each request again with
 *    its head); without, HTTP_DENY_UNVERIFIABLE (a TLS splice never shows
 *    its requests, so the limit could not be held; a later, broader rule
 *    does not get to allow what this one limited).
 *  - The set is read-only after parsing.
 */
#ifndef KILN_HTTP_RULES_H
#define KILN_HTTP_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/netrules/net_rules.h"

#define HTTP_RULES_MAX 256
#define HTTP_LIST_MAX 16
#define HTTP_PATH_MAX 1024
#define HTTP_METHOD_MAX 32
#define HTTP_HEADER_MAX 64
#define HTTP_SECRET_MAX 64
#define HTTP_FORMAT_MAX 256
/* The longest request path (before its query) a path rule is checked against. */
#define HTTP_REQ_PATH_MAX 8192
#define HTTP_RULES_TEXT_MAX (1024 * 1024)
#define HTTP_DENY_STATUS 403

struct http_inject {
	char header[HTTP_HEADER_MAX + 1]; /* lower case */
	char secret[HTTP_SECRET_MAX + 1];
	char format[HTTP_FORMAT_MAX + 1];
};

struct http_rule {
	/* The host: is_host, wildcard and host set, so net_rule_host_matches
	 * decides it exactly as for the packet filter's host rules. */
	struct net_rule host;
	size_t n_methods, n_paths, n_ports, n_inject;
	char methods[HTTP_LIST_MAX][HTTP_METHOD_MAX + 1];
	char *paths[HTTP_LIST_MAX]; /* normal form (http_path_norm) */
	uint16_t ports[HTTP_LIST_MAX];
	struct http_inject *inject;
	bool deny;
	uint16_t status; /* deny: what the guest sees */
	bool intercept;
};

struct http_rules {
	size_t n;
	struct http_rule *rules;
};

/* Parse a JSON array of rules; *out is freed with http_rules_free. 0,
 * -EINVAL or -ENOMEM (with e filled). */
int http_rules_parse(const json_t *j, struct http_rules **out, struct net_rules_err *e);
int http_rules_parse_text(const char *text, size_t len, struct http_rules **out,
			  struct net_rules_err *e);
/* The rules as JSON (what parse takes back; secret names, never values),
 * or NULL out of memory. */
json_t *http_rules_to_json(const struct http_rules *r);
void http_rules_free(struct http_rules *r);

/* Some rule of r (NULL: none) is for port, or for name (exact or *.suffix):
 * the packet filter steers such flows and binds such names. */
bool http_rules_lists_port(const struct http_rules *r, uint16_t port);
bool http_rules_names(const struct http_rules *r, const char *name);

/* A connection, or one request on it. */
struct http_flow {
	/* The destination's name as the filter recorded it (the name the
	 * guest resolved through an allowed resolver), never the guest's
	 * Host header or SNI. Case and one trailing dot do not matter. */
	const char *host;
	uint16_t port;
	/* The request head's method and request-target (origin form,
	 * "/path?query"), or both NULL when no head is known. */
	const char *method;
	const char *path;
};

enum http_decision {
	HTTP_ALLOW,
	HTTP_DENY_RULE,         /* a deny rule matched: answer its status */
	HTTP_NEED_HEAD,         /* no head yet, the rule needs it and intercepts */
	HTTP_DENY_UNVERIFIABLE, /* no head and none to come: the rule limits methods or paths */
	HTTP_DENY_BAD_PATH,     /* a path rule was consulted and the path is not in normal form */
	HTTP_DENY_DEFAULT,      /* no rule matched */
};

/* Decide; *index is the deciding rule's (r->n, or 0 for NULL rules, when none). */
enum http_decision http_rules_decide(const struct http_rules *r, const struct http_flow *f,
				     size_t *index);

/*
 * s is a method as a rule names one: 1..HTTP_METHOD_MAX upper-case
 * letters, digits, '-' or '_'. A request's method outside this set could
 * never match a rule's, yet servers that fold case (Django, Werkzeug) read
 * "delete" as DELETE: the proxy refuses such a request rather than let it
 * pass a rule that denies DELETE.
 */
bool http_method_ok(const char *s);

/*
 * s is a secret's name as a rule names one (and as kilnd's secrets store
 * takes one, docs/api.md "Secrets"): 1..HTTP_SECRET_MAX of a-z, 0-9, '_'
 * and '-'.
 */
bool http_secret_name_ok(const char *s);

/* name (lower case) is a hop-by-hop or framing field the proxy owns
 * (connection, content-length, host, transfer-encoding, ...): no rule
 * injects it and no policy answer changes it. */
bool http_header_owned(const char *name);

/* "allow", "deny (rule)", "need the request head", ... for logs. */
const char *http_decision_name(enum http_decision d);

/*
 * The path s[0..n) in normal form into out (cap bytes, NUL-terminated):
 * 0, or -EINVAL with *why saying what is wrong ("has a \"..\" segment").
 */
int http_path_norm(const char *s, size_t n, char *out, size_t cap, const char **why);

#endif
