#include "lib/netrules/net_rules.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/json.h"
#include "lib/netrules/http_rules.h"

static const char what[] = "firewall";

int net_rules_fail(struct net_rules_err *e, enum net_rules_ecode code, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!e)
		return code == NET_RULES_E_NOMEM ? -ENOMEM : -EINVAL;
	e->code = code;
	n = snprintf(e->msg, sizeof(e->msg), "%s: ", what);
	va_start(ap, fmt);
	vsnprintf(e->msg + n, sizeof(e->msg) - (size_t)n, fmt, ap);
	va_end(ap);
	return code == NET_RULES_E_NOMEM ? -ENOMEM : -EINVAL;
}

/* The first key of obj not in allowed (NULL-terminated), or NULL. */
static const char *unknown_key(const json_t *obj, const char *const *allowed)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)obj, key, v)
	{
		size_t i;

		for (i = 0; allowed[i]; i++)
			if (!strcmp(key, allowed[i]))
				break;
		if (!allowed[i])
			return key;
	}
	return NULL;
}

const char *net_proto_name(uint8_t proto, char *buf, size_t cap)
{
	switch (proto) {
	case 0:
		return "any";
	case 1:
		return "icmp";
	case 6:
		return "tcp";
	case 17:
		return "udp";
	case 58:
		return "icmpv6";
	default:
		snprintf(buf, cap, "proto %u", proto);
		return buf;
	}
}

static int proto_parse(const char *s, uint8_t *out)
{
	static const struct {
		const char *name;
		uint8_t proto;
	} names[] = { { "any", 0 }, { "tcp", 6 }, { "udp", 17 }, { "icmp", 1 }, { "icmpv6", 58 } };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(s, names[i].name)) {
			*out = names[i].proto;
			return 0;
		}
	}
	return -EINVAL;
}

/* A decimal port 1..65535 at *p, no sign or leading zeros beyond "0". */
static int port_at(const char **p, uint16_t *out)
{
	unsigned long v = 0;
	const char *s = *p;
	size_t n = 0;

	while (s[n] >= '0' && s[n] <= '9') {
		if (n == 5)
			return -EINVAL;
		v = v * 10 + (unsigned long)(s[n] - '0');
		n++;
	}
	if (n == 0 || v < 1 || v > 65535 || (n > 1 && s[0] == '0'))
		return -EINVAL;
	*out = (uint16_t)v;
	*p = s + n;
	return 0;
}

static int ports_parse(const json_t *v, uint16_t *lo, uint16_t *hi)
{
	const char *s;

	if (json_is_integer(v)) {
		json_int_t n = json_integer_value(v);

		if (n < 1 || n > 65535)
			return -EINVAL;
		*lo = *hi = (uint16_t)n;
		return 0;
	}
	if (!json_is_string(v))
		return -EINVAL;
	s = json_string_value(v);
	if (port_at(&s, lo) < 0)
		return -EINVAL;
	*hi = *lo;
	if (*s == '-') {
		s++;
		if (port_at(&s, hi) < 0 || *hi < *lo)
			return -EINVAL;
	}
	return *s ? -EINVAL : 0;
}

int net_host_parse(const char *s, char *out, bool *wildcard)
{
	size_t n = strlen(s), label = 0;

	*wildcard = false;
	if (n >= 2 && s[0] == '*' && s[1] == '.') {
		*wildcard = true;
		s += 2;
		n -= 2;
	}
	if (n && s[n - 1] == '.')
		n--;
	if (n == 0 || n > NET_HOST_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c == '.') {
			if (label == 0)
				return -EINVAL;
			label = 0;
		} else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
			   c == '_') {
			if (++label > 63)
				return -EINVAL;
		} else {
			return -EINVAL;
		}
		out[i] = c;
	}
	if (label == 0)
		return -EINVAL;
	out[n] = '\0';
	return 0;
}

static int parse_rule(const json_t *v, const char *list, size_t i, bool allow, struct net_rule *r,
		      struct net_rules_err *e)
{
	static const char *const fields[] = { "cidr", "host", "proto", "ports", NULL };
	const json_t *cidr = json_object_get(v, "cidr"), *host = json_object_get(v, "host");
	const json_t *proto = json_object_get(v, "proto"), *ports = json_object_get(v, "ports");
	const char *bad;

	if (!json_is_object(v))
		return net_rules_fail(e, NET_RULES_E_BAD_FIELD, "%s[%zu] must be an object", list,
				      i);
	bad = unknown_key(v, fields);
	if (bad)
		return net_rules_fail(
			e, NET_RULES_E_UNKNOWN_FIELD,
			"%s[%zu]: unknown field \"%.60s\" (expected cidr, host, proto, ports)",
			list, i, bad);
	if (!cidr && !host)
		return net_rules_fail(e, NET_RULES_E_MISSING_FIELD,
				      "%s[%zu]: needs \"cidr\" or \"host\"", list, i);
	if (cidr && host)
		return net_rules_fail(e, NET_RULES_E_BAD_FIELD,
				      "%s[%zu]: has both \"cidr\" and \"host\"; one rule takes one",
				      list, i);
	if (proto) {
		if (!json_is_string(proto) || proto_parse(json_string_value(proto), &r->proto) < 0)
			return net_rules_fail(
				e, NET_RULES_E_BAD_FIELD,
				"%s[%zu].proto must be \"tcp\", \"udp\", \"icmp\", \"icmpv6\" or \"any\"",
				list, i);
	}
	if (ports) {
		if (ports_parse(ports, &r->port_lo, &r->port_hi) < 0) {
			if (json_is_string(ports))
				return net_rules_fail(
					e, NET_RULES_E_BAD_FIELD,
					"%s[%zu].ports \"%.40s\": not a port or a range LO-HI of 1..65535",
					list, i, json_string_value(ports));
			return net_rules_fail(
				e, NET_RULES_E_BAD_FIELD,
				"%s[%zu].ports must be a port 1..65535 or a string \"LO-HI\"", list,
				i);
		}
		if (r->proto != 0 && r->proto != 6 && r->proto != 17)
			return net_rules_fail(e, NET_RULES_E_BAD_FIELD,
					      "%s[%zu].ports: only with proto tcp, udp or any",
					      list, i);
	}
	if (cidr) {
		struct err why;
		const char *rwhy;

		if (!json_is_string(cidr))
			return net_rules_fail(e, NET_RULES_E_BAD_FIELD,
					      "%s[%zu].cidr must be a string like \"10.0.0.0/8\"",
					      list, i);
		if (net_cidr_parse(json_string_value(cidr), &r->cidr, &why) < 0)
			return net_rules_fail(e, NET_RULES_E_BAD_FIELD,
					      "%s[%zu].cidr \"%.60s\": %s", list, i,
					      json_string_value(cidr), why.msg);
		if (allow && net_cidr_in_reserved(&r->cidr, &rwhy))
			return net_rules_fail(
				e, NET_RULES_E_BAD_FIELD,
				"%s[%zu].cidr \"%.60s\" is inside %s, which kiln never allows",
				list, i, json_string_value(cidr), rwhy);
		r->lifts_private = allow && net_cidr_in_private(&r->cidr);
	} else {
		if (!json_is_string(host) ||
		    net_host_parse(json_string_value(host), r->host, &r->wildcard) < 0)
			return net_rules_fail(e, NET_RULES_E_BAD_FIELD,
					      "%s[%zu].host \"%.80s\": " NET_HOST_FORM, list, i,
					      json_is_string(host) ? json_string_value(host) : "");
		r->is_host = true;
	}
	return 0;
}

static int parse_list(const json_t *j, const char *list, bool allow, struct net_rule **out,
		      size_t *n, struct net_rules_err *e)
{
	const json_t *a = json_object_get(j, list);
	size_t count;
	int rc;

	*n = 0;
	if (!a)
		return 0;
	if (!json_is_array(a))
		return net_rules_fail(e, NET_RULES_E_BAD_FIELD, "\"%s\" must be an array of rules",
				      list);
	count = json_array_size(a);
	if (count > NET_RULES_MAX)
		return net_rules_fail(e, NET_RULES_E_BAD_FIELD, "\"%s\" has %zu rules; at most %d",
				      list, count, NET_RULES_MAX);
	if (count == 0)
		return 0;
	*out = calloc(count, sizeof(**out));
	if (!*out)
		return net_rules_fail(e, NET_RULES_E_NOMEM, "out of memory");
	for (size_t i = 0; i < count; i++) {
		rc = parse_rule(json_array_get(a, i), list, i, allow, &(*out)[i], e);
		if (rc < 0)
			return rc;
	}
	*n = count;
	return 0;
}

static int parse_dns(const json_t *j, struct net_rules *r, struct net_rules_err *e)
{
	const json_t *a = json_object_get(j, "dns");

	if (!a)
		return 0;
	if (!json_is_array(a))
		return net_rules_fail(e, NET_RULES_E_BAD_FIELD,
				      "\"dns\" must be an array of resolver addresses");
	if (json_array_size(a) > NET_DNS_MAX)
		return net_rules_fail(e, NET_RULES_E_BAD_FIELD,
				      "\"dns\" has %zu resolvers; at most %d", json_array_size(a),
				      NET_DNS_MAX);
	for (size_t i = 0; i < json_array_size(a); i++) {
		const json_t *v = json_array_get(a, i);
		struct net_addr *d = &r->dns[i];

		if (!json_is_string(v) || net_addr_parse(json_string_value(v), d) < 0)
			return net_rules_fail(e, NET_RULES_E_BAD_FIELD,
					      "dns[%zu] \"%.60s\": not an IPv4 or IPv6 address", i,
					      json_is_string(v) ? json_string_value(v) : "");
		/* The same always-deny set as allow rules: a resolver entry is
		 * no way to the metadata service or the host's loopback. */
		if (net_addr_classify(d) == NET_CLASS_RESERVED)
			return net_rules_fail(
				e, NET_RULES_E_BAD_FIELD,
				"dns[%zu] \"%.60s\" is inside %s, which kiln never allows; a resolver must be a unicast address the guest reaches through its network",
				i, json_string_value(v), net_addr_class_why(d));
	}
	r->n_dns = json_array_size(a);
	return 0;
}

int net_rules_parse(const json_t *j, struct net_rules **out, struct net_rules_err *e)
{
	static const char *const fields[] = {
		"outbound_internet", "allow", "deny", "dns", "http", NULL
	};
	struct net_rules *r;
	const json_t *oi;
	const char *bad;
	int rc;

	*out = NULL;
	if (!json_is_object(j))
		return net_rules_fail(e, NET_RULES_E_BAD_JSON,
				      "the rule set must be a JSON object");
	bad = unknown_key(j, fields);
	if (bad)
		return net_rules_fail(
			e, NET_RULES_E_UNKNOWN_FIELD,
			"unknown field \"%.60s\" (expected outbound_internet, allow, deny, dns, http)",
			bad);
	r = calloc(1, sizeof(*r));
	if (!r)
		return net_rules_fail(e, NET_RULES_E_NOMEM, "out of memory");
	oi = json_object_get(j, "outbound_internet");
	if (oi && !json_is_boolean(oi)) {
		rc = net_rules_fail(e, NET_RULES_E_BAD_FIELD,
				    "\"outbound_internet\" must be true or false");
		goto bad;
	}
	r->outbound_internet = oi && json_is_true(oi);
	rc = parse_list(j, "allow", true, &r->allow, &r->n_allow, e);
	if (rc == 0)
		rc = parse_list(j, "deny", false, &r->deny, &r->n_deny, e);
	if (rc == 0)
		rc = parse_dns(j, r, e);
	if (rc == 0 && json_object_get(j, "http"))
		rc = http_rules_parse(json_object_get(j, "http"), &r->http, e);
	if (rc == 0) {
		*out = r;
		return 0;
	}
bad:
	net_rules_free(r);
	return rc;
}

json_t *net_rules_load(const char *text, size_t len, size_t max, const char *what,
		       struct net_rules_err *e)
{
	json_error_t je;
	json_t *j;

	if (len > max) {
		net_rules_fail(e, NET_RULES_E_BAD_JSON, "%s is larger than %zu bytes", what, max);
		return NULL;
	}
	j = json_strict_loadb(text, len, &je);
	if (!j)
		net_rules_fail(e, NET_RULES_E_BAD_JSON, "invalid JSON at line %d column %d: %s",
			       je.line, je.column, je.text);
	return j;
}

int net_rules_parse_text(const char *text, size_t len, struct net_rules **out,
			 struct net_rules_err *e)
{
	json_t *j = net_rules_load(text, len, NET_RULES_TEXT_MAX, "the rule set", e);
	int rc;

	*out = NULL;
	if (!j)
		return -EINVAL;
	rc = net_rules_parse(j, out, e);
	json_decref(j);
	return rc;
}

void net_rules_free(struct net_rules *r)
{
	if (!r)
		return;
	free(r->allow);
	free(r->deny);
	http_rules_free(r->http);
	free(r);
}

static json_t *rule_json(const struct net_rule *r)
{
	json_t *o = json_object();
	char buf[NET_HOST_MAX + 3];

	if (!o)
		return NULL;
	if (r->is_host) {
		snprintf(buf, sizeof(buf), "%s%s", r->wildcard ? "*." : "", r->host);
		json_object_set_new(o, "host", json_string(buf));
	} else {
		net_cidr_format(&r->cidr, buf, sizeof(buf));
		json_object_set_new(o, "cidr", json_string(buf));
	}
	if (r->proto)
		json_object_set_new(o, "proto",
				    json_string(net_proto_name(r->proto, buf, sizeof(buf))));
	if (r->port_lo) {
		if (r->port_lo == r->port_hi)
			snprintf(buf, sizeof(buf), "%u", r->port_lo);
		else
			snprintf(buf, sizeof(buf), "%u-%u", r->port_lo, r->port_hi);
		json_object_set_new(o, "ports", json_string(buf));
	}
	return o;
}

json_t *net_rules_to_json(const struct net_rules *r)
{
	json_t *allow = json_array(), *deny = json_array(), *dns = json_array(), *o;
	char buf[NET_ADDR_STRLEN];

	if (!allow || !deny || !dns)
		goto oom;
	for (size_t i = 0; r && i < r->n_allow; i++)
		if (json_array_append_new(allow, rule_json(&r->allow[i])) < 0)
			goto oom;
	for (size_t i = 0; r && i < r->n_deny; i++)
		if (json_array_append_new(deny, rule_json(&r->deny[i])) < 0)
			goto oom;
	for (size_t i = 0; r && i < r->n_dns; i++) {
		net_addr_format(&r->dns[i], buf, sizeof(buf));
		if (json_array_append_new(dns, json_string(buf)) < 0)
			goto oom;
	}
	o = json_pack("{sbsososo}", "outbound_internet", r && r->outbound_internet, "allow", allow,
		      "deny", deny, "dns", dns);
	if (o && r && r->http && json_object_set_new(o, "http", http_rules_to_json(r->http)) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
oom:
	json_decref(allow);
	json_decref(deny);
	json_decref(dns);
	return NULL;
}

static json_t *ctr_json(const struct net_rule_counters *c)
{
	return json_pack("{sIsIsI}", "flows", (json_int_t)c->flows, "packets",
			 (json_int_t)c->packets, "bytes", (json_int_t)c->bytes);
}

json_t *net_rules_counters_json(const struct net_rules *r)
{
	static const struct net_rule_counters zero;
	json_t *allow = json_array(), *deny = json_array();

	if (!allow || !deny)
		goto oom;
	for (size_t i = 0; r && i < r->n_allow; i++)
		if (json_array_append_new(allow, ctr_json(&r->allow[i].ctr)) < 0)
			goto oom;
	for (size_t i = 0; r && i < r->n_deny; i++)
		if (json_array_append_new(deny, ctr_json(&r->deny[i].ctr)) < 0)
			goto oom;
	return json_pack("{sosososo}", "allow", allow, "deny", deny, "outbound_internet",
			 ctr_json(r ? &r->internet_ctr : &zero), "dns",
			 ctr_json(r ? &r->dns_ctr : &zero));
oom:
	json_decref(allow);
	json_decref(deny);
	return NULL;
}

bool net_rule_host_matches(const struct net_rule *rule, const char *name)
{
	size_t n = strlen(name), h = strlen(rule->host);

	if (!rule->wildcard)
		return n == h && !memcmp(name, rule->host, n);
	/* "*.example.com": at least one label before ".example.com". */
	return n > h + 1 && name[n - h - 1] == '.' && !memcmp(name + n - h, rule->host, h);
}

static bool rule_matches(const struct net_rule *r, const struct net_flow_dst *d)
{
	if (r->proto && r->proto != d->proto)
		return false;
	if (r->port_lo) {
		if (d->proto != 6 && d->proto != 17)
			return false;
		if (d->port < r->port_lo || d->port > r->port_hi)
			return false;
	}
	if (!r->is_host)
		return net_cidr_contains(&r->cidr, d->addr);
	for (size_t i = 0; i < d->n_names; i++)
		if (net_rule_host_matches(r, d->names[i]))
			return true;
	return false;
}

/*
 * A CIDR rule for exactly one address (a bare address, /32 or /128): the
 * only kind that opens one of the host's own addresses, so no broad block
 * ("everything public", a LAN's /16) reaches a service the host runs.
 */
bool net_rule_names_one(const struct net_rule *r)
{
	return !r->is_host && r->cidr.prefix == (r->cidr.addr.family == NET_AF4 ? 32 : 128);
}

bool net_addr_in_list(const struct net_addr *a, const struct net_addr *list, size_t n)
{
	for (size_t i = 0; list && i < n; i++)
		if (net_addr_equal(a, &list[i]))
			return true;
	return false;
}

/* a is one of the host's addresses, also in the NAT64 or 6to4 form of an IPv4 one. */
static bool is_host_addr(const struct net_flow_dst *d)
{
	struct net_addr v4;

	if (net_addr_in_list(d->addr, d->host_addrs, d->n_host_addrs))
		return true;
	return net_addr_embedded_v4(d->addr, &v4) &&
		net_addr_in_list(&v4, d->host_addrs, d->n_host_addrs);
}

enum net_decision net_rules_decide(const struct net_rules *r, const struct net_flow_dst *d,
				   struct net_rule_ref *ref)
{
	enum net_addr_class cls = net_addr_classify(d->addr);
	bool host;

	ref->list = NET_REF_NONE;
	ref->index = 0;
	for (size_t i = 0; r && i < r->n_deny; i++) {
		if (rule_matches(&r->deny[i], d)) {
			ref->list = NET_REF_DENY;
			ref->index = (uint16_t)i;
			return NET_DENY_RULE;
		}
	}
	/* Before the resolvers: a `dns` entry never opens a reserved range. */
	if (cls == NET_CLASS_RESERVED)
		return NET_DENY_RESERVED;
	if ((d->proto == 6 || d->proto == 17) && d->port == 53 &&
	    net_rules_is_resolver(r, d->addr)) {
		ref->list = NET_REF_DNS;
		return NET_ALLOW;
	}
	host = is_host_addr(d);
	for (size_t i = 0; r && i < r->n_allow; i++) {
		const struct net_rule *a = &r->allow[i];

		if (cls == NET_CLASS_PRIVATE && !a->lifts_private)
			continue;
		if (host && !net_rule_names_one(a))
			continue;
		if (rule_matches(a, d)) {
			ref->list = NET_REF_ALLOW;
			ref->index = (uint16_t)i;
			return NET_ALLOW;
		}
	}
	if (host)
		return NET_DENY_HOST;
	if (cls == NET_CLASS_PRIVATE)
		return NET_DENY_PRIVATE;
	if (r && r->outbound_internet) {
		ref->list = NET_REF_INTERNET;
		return NET_ALLOW;
	}
	return NET_DENY_DEFAULT;
}

struct net_rule_counters *net_rules_counters(struct net_rules *r, struct net_rule_ref ref)
{
	if (!r)
		return NULL;
	switch (ref.list) {
	case NET_REF_ALLOW:
		return ref.index < r->n_allow ? &r->allow[ref.index].ctr : NULL;
	case NET_REF_DENY:
		return ref.index < r->n_deny ? &r->deny[ref.index].ctr : NULL;
	case NET_REF_INTERNET:
		return &r->internet_ctr;
	case NET_REF_DNS:
		return &r->dns_ctr;
	default:
		return NULL;
	}
}

bool net_rules_is_resolver(const struct net_rules *r, const struct net_addr *addr)
{
	for (size_t i = 0; r && i < r->n_dns; i++)
		if (net_addr_equal(&r->dns[i], addr))
			return true;
	return false;
}

bool net_rules_wants_name(const struct net_rules *r, const char *name)
{
	for (size_t i = 0; r && i < r->n_allow; i++)
		if (r->allow[i].is_host && net_rule_host_matches(&r->allow[i], name))
			return true;
	for (size_t i = 0; r && i < r->n_deny; i++)
		if (r->deny[i].is_host && net_rule_host_matches(&r->deny[i], name))
			return true;
	return r && http_rules_names(r->http, name);
}

bool net_rules_steers(const struct net_rules *r, uint16_t port)
{
	return r && http_rules_lists_port(r->http, port);
}
