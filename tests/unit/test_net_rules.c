/*
 * net_addr + net_rules: CIDRs parse strictly, the always-deny set
 * classifies what it should (embedded IPv4 included), a rule set's JSON is
 * validated with an error that names the field, and the decision follows
 * its precedence: deny rules, reserved, resolvers, the host's own
 * addresses (opened only by a rule naming one), private (lifted only by a
 * private CIDR rule), allow rules, outbound_internet, default deny.
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

#include "lib/netrules/net_rules.h"

static void cidr_ok(const char *s, const char *canon)
{
	struct net_cidr c;
	char back[NET_CIDR_STRLEN];
	struct err why;

	if (net_cidr_parse(s, &c, &why) < 0)
		fail_msg("'%s' refused: %s", s, why.msg);
	net_cidr_format(&c, back, sizeof(back));
	assert_string_equal(back, canon);
}

static void cidr_bad(const char *s, const char *why_has)
{
	struct net_cidr c;
	struct err why = { "" };

	assert_int_equal(net_cidr_parse(s, &c, &why), -EINVAL);
	if (!strstr(why.msg, why_has))
		fail_msg("'%s': reason '%s' does not mention '%s'", s, why.msg, why_has);
}

static void test_cidr_parse(void **state)
{
	(void)state;
	cidr_ok("10.0.0.0/8", "10.0.0.0/8");
	cidr_ok("1.2.3.4", "1.2.3.4/32");
	cidr_ok("0.0.0.0/0", "0.0.0.0/0");
	cidr_ok("2001:DB8::/32", "2001:db8::/32");
	cidr_ok("::/0", "::/0");
	cidr_ok("fd00::1", "fd00::1/128");
	cidr_bad("10.0.0.0/33", "prefix length must be 0..32 for IPv4");
	cidr_bad("2001:db8::/129", "0..128 for IPv6");
	cidr_bad("10.0.0.1/8", "did you mean 10.0.0.0/8?");
	cidr_bad("10.0.0.0/+8", "prefix length");
	cidr_bad("10.0.0.0/ 8", "prefix length");
	cidr_bad("10.0.0.0/", "prefix length");
	cidr_bad("10.0.0/8", "not an IPv4 or IPv6 address");
	cidr_bad("", "not an IPv4 or IPv6 address");
	cidr_bad("example.com/8", "not an IPv4 or IPv6 address");
}

static enum net_addr_class cls(const char *s)
{
	struct net_addr a;

	assert_int_equal(net_addr_parse(s, &a), 0);
	return net_addr_classify(&a);
}

static void test_classify(void **state)
{
	(void)state;
	assert_int_equal(cls("8.8.8.8"), NET_CLASS_PUBLIC);
	assert_int_equal(cls("2606:4700::1111"), NET_CLASS_PUBLIC);
	assert_int_equal(cls("169.254.169.254"), NET_CLASS_RESERVED);
	assert_int_equal(cls("127.0.0.1"), NET_CLASS_RESERVED);
	assert_int_equal(cls("0.0.0.0"), NET_CLASS_RESERVED);
	assert_int_equal(cls("255.255.255.255"), NET_CLASS_RESERVED);
	assert_int_equal(cls("224.0.0.251"), NET_CLASS_RESERVED);
	assert_int_equal(cls("100.100.100.200"),
			 NET_CLASS_RESERVED); /* inside 100.64/10, still reserved */
	assert_int_equal(cls("::1"), NET_CLASS_RESERVED);
	assert_int_equal(cls("fe80::1"), NET_CLASS_RESERVED);
	assert_int_equal(cls("fd00:ec2::254"), NET_CLASS_RESERVED);
	assert_int_equal(cls("::ffff:8.8.8.8"), NET_CLASS_RESERVED); /* mapped: never on the wire */
	/* NAT64 and 6to4 take the class of the IPv4 address they carry. */
	assert_int_equal(cls("64:ff9b::a9fe:a9fe"), NET_CLASS_RESERVED);
	assert_int_equal(cls("64:ff9b::a00:1"), NET_CLASS_PRIVATE);
	assert_int_equal(cls("64:ff9b::808:808"), NET_CLASS_PUBLIC);
	assert_int_equal(cls("2002:a9fe:a9fe::1"), NET_CLASS_RESERVED);
	assert_int_equal(cls("10.1.2.3"), NET_CLASS_PRIVATE);
	assert_int_equal(cls("172.31.255.255"), NET_CLASS_PRIVATE);
	assert_int_equal(cls("172.32.0.1"), NET_CLASS_PUBLIC);
	assert_int_equal(cls("192.168.1.1"), NET_CLASS_PRIVATE);
	assert_int_equal(cls("100.64.0.1"), NET_CLASS_PRIVATE);
	assert_int_equal(cls("fd12:3456::1"), NET_CLASS_PRIVATE);
}

static struct net_rules *rules(const char *json)
{
	struct net_rules_err e = { 0 };
	struct net_rules *r;

	if (net_rules_parse_text(json, strlen(json), &r, &e) < 0)
		fail_msg("rules refused: %s", e.msg);
	return r;
}

static void refused(const char *json, enum net_rules_ecode code, const char *msg_has)
{
	struct net_rules_err e = { 0 };
	struct net_rules *r = (struct net_rules *)1;

	assert_int_equal(net_rules_parse_text(json, strlen(json), &r, &e), -EINVAL);
	assert_null(r);
	if (!strstr(e.msg, msg_has))
		fail_msg("%s: message '%s' does not mention '%s'", json, e.msg, msg_has);
	assert_int_equal(e.code, code);
}

static void test_json_errors(void **state)
{
	(void)state;
	refused("{\"outbound\":true}", NET_RULES_E_UNKNOWN_FIELD, "unknown field \"outbound\"");
	refused("{\"outbound_internet\":1}", NET_RULES_E_BAD_FIELD,
		"\"outbound_internet\" must be true or false");
	refused("[]", NET_RULES_E_BAD_JSON, "must be a JSON object");
	refused("{\"allow\":[", NET_RULES_E_BAD_JSON, "invalid JSON at line 1");
	refused("{\"dns\":[],\"dns\":[]}", NET_RULES_E_BAD_JSON, "duplicate");
	refused("{\"allow\":{}}", NET_RULES_E_BAD_FIELD, "\"allow\" must be an array");
	refused("{\"allow\":[1]}", NET_RULES_E_BAD_FIELD, "allow[0] must be an object");
	refused("{\"allow\":[{\"cidr\":\"1.2.3.0/24\",\"port\":80}]}", NET_RULES_E_UNKNOWN_FIELD,
		"allow[0]: unknown field \"port\" (expected cidr, host, proto, ports)");
	refused("{\"deny\":[{}]}", NET_RULES_E_MISSING_FIELD,
		"deny[0]: needs \"cidr\" or \"host\"");
	refused("{\"allow\":[{\"cidr\":\"1.2.3.4\",\"host\":\"a.com\"}]}", NET_RULES_E_BAD_FIELD,
		"allow[0]: has both");
	refused("{\"allow\":[{\"cidr\":\"1.2.3.4\"},{\"cidr\":\"10.0.0.0/33\"}]}",
		NET_RULES_E_BAD_FIELD,
		"allow[1].cidr \"10.0.0.0/33\": prefix length must be 0..32 for IPv4");
	refused("{\"allow\":[{\"cidr\":\"10.0.0.1/8\"}]}", NET_RULES_E_BAD_FIELD,
		"did you mean 10.0.0.0/8?");
	refused("{\"allow\":[{\"cidr\":8}]}", NET_RULES_E_BAD_FIELD,
		"allow[0].cidr must be a string");
	refused("{\"allow\":[{\"cidr\":\"169.254.169.254\"}]}", NET_RULES_E_BAD_FIELD,
		"inside 169.254.0.0/16 (link-local, cloud metadata), which kiln never allows");
	refused("{\"allow\":[{\"cidr\":\"64:ff9b::a9fe:0/112\"}]}", NET_RULES_E_BAD_FIELD,
		"never allows");
	refused("{\"allow\":[{\"cidr\":\"1.2.3.4\",\"ports\":\"80-\"}]}", NET_RULES_E_BAD_FIELD,
		"allow[0].ports \"80-\": not a port or a range LO-HI of 1..65535");
	refused("{\"allow\":[{\"cidr\":\"1.2.3.4\",\"ports\":\"443-80\"}]}", NET_RULES_E_BAD_FIELD,
		"\"443-80\": not a port");
	refused("{\"allow\":[{\"cidr\":\"1.2.3.4\",\"ports\":\"0\"}]}", NET_RULES_E_BAD_FIELD,
		"\"0\": not a port");
	refused("{\"allow\":[{\"cidr\":\"1.2.3.4\",\"ports\":\"080\"}]}", NET_RULES_E_BAD_FIELD,
		"not a port");
	refused("{\"allow\":[{\"cidr\":\"1.2.3.4\",\"ports\":\"1-65536\"}]}", NET_RULES_E_BAD_FIELD,
		"not a port");
	refused("{\"allow\":[{\"cidr\":\"1.2.3.4\",\"ports\":\" 80\"}]}", NET_RULES_E_BAD_FIELD,
		"not a port");
	refused("{\"allow\":[{\"cidr\":\"1.2.3.4\",\"ports\":70000}]}", NET_RULES_E_BAD_FIELD,
		"allow[0].ports must be a port 1..65535");
	refused("{\"allow\":[{\"cidr\":\"1.2.3.4\",\"ports\":true}]}", NET_RULES_E_BAD_FIELD,
		"allow[0].ports must be");
	refused("{\"allow\":[{\"cidr\":\"1.2.3.4\",\"proto\":\"icmp\",\"ports\":80}]}",
		NET_RULES_E_BAD_FIELD, "allow[0].ports: only with proto tcp, udp or any");
	refused("{\"allow\":[{\"cidr\":\"1.2.3.4\",\"proto\":\"sctp\"}]}", NET_RULES_E_BAD_FIELD,
		"allow[0].proto must be \"tcp\", \"udp\", \"icmp\", \"icmpv6\" or \"any\"");
	refused("{\"allow\":[{\"host\":\"a..b.com\"}]}", NET_RULES_E_BAD_FIELD,
		"allow[0].host \"a..b.com\": not a DNS name or \"*.suffix\"");
	refused("{\"allow\":[{\"host\":\"*.\"}]}", NET_RULES_E_BAD_FIELD, "not a DNS name");
	refused("{\"allow\":[{\"host\":\"foo*.com\"}]}", NET_RULES_E_BAD_FIELD, "not a DNS name");
	refused("{\"allow\":[{\"host\":\"a.*.com\"}]}", NET_RULES_E_BAD_FIELD, "not a DNS name");
	refused("{\"allow\":[{\"host\":\"1.2.3.4/8\"}]}", NET_RULES_E_BAD_FIELD, "not a DNS name");
	refused("{\"allow\":[{\"host\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com\"}]}",
		NET_RULES_E_BAD_FIELD, "not a DNS name"); /* a 64-byte label */
	refused("{\"dns\":\"10.0.2.3\"}", NET_RULES_E_BAD_FIELD, "\"dns\" must be an array");
	refused("{\"dns\":[\"10.0.2.300\"]}", NET_RULES_E_BAD_FIELD,
		"dns[0] \"10.0.2.300\": not an IPv4 or IPv6");
	refused("{\"dns\":[\"127.0.0.53\"]}", NET_RULES_E_BAD_FIELD,
		"dns[0] \"127.0.0.53\" is inside 127.0.0.0/8 (loopback), which kiln never allows; a resolver must be");
	refused("{\"dns\":[\"::1\"]}", NET_RULES_E_BAD_FIELD, "a resolver must be");
	refused("{\"dns\":[\"224.0.0.251\"]}", NET_RULES_E_BAD_FIELD, "a resolver must be");
	/* dns entries are validated like any rule target: metadata, link-local
	 * and loopback in their mapped forms are refused, naming the entry. */
	refused("{\"dns\":[\"1.1.1.1\",\"169.254.169.254\"]}", NET_RULES_E_BAD_FIELD,
		"dns[1] \"169.254.169.254\" is inside 169.254.0.0/16 (link-local, cloud metadata), which kiln never allows");
	refused("{\"dns\":[\"100.100.100.200\"]}", NET_RULES_E_BAD_FIELD,
		"100.100.100.200 (cloud metadata)");
	refused("{\"dns\":[\"fd00:ec2::254\"]}", NET_RULES_E_BAD_FIELD, "(cloud metadata)");
	refused("{\"dns\":[\"::ffff:127.0.0.1\"]}", NET_RULES_E_BAD_FIELD,
		"::ffff:0:0/96 (IPv4-mapped)");
	refused("{\"dns\":[\"64:ff9b::7f00:35\"]}", NET_RULES_E_BAD_FIELD,
		"127.0.0.0/8 (loopback)");
	refused("{\"dns\":[\"64:ff9b::a9fe:a9fe\"]}", NET_RULES_E_BAD_FIELD, "169.254.0.0/16");
	refused("{\"dns\":[\"fe80::1\"]}", NET_RULES_E_BAD_FIELD,
		"dns[0] \"fe80::1\" is inside fe80::/10 (link-local)");
	refused("{\"dns\":[\"0.0.0.0\"]}", NET_RULES_E_BAD_FIELD, "0.0.0.0/8 (this network)");
	refused("{\"dns\":[\"255.255.255.255\"]}", NET_RULES_E_BAD_FIELD,
		"which kiln never allows");
	refused("{\"dns\":[\"1.1.1.1\",\"1.0.0.1\",\"8.8.8.8\",\"8.8.4.4\",\"9.9.9.9\"]}",
		NET_RULES_E_BAD_FIELD, "\"dns\" has 5 resolvers; at most 4");
}

static void test_json_too_many_rules(void **state)
{
	size_t cap = 64 + 40 * (NET_RULES_MAX + 1), n;
	char *j = malloc(cap);

	(void)state;
	n = (size_t)snprintf(j, cap, "{\"deny\":[");
	for (int i = 0; i <= NET_RULES_MAX; i++)
		n += (size_t)snprintf(j + n, cap - n, "%s{\"cidr\":\"1.2.%d.%d\"}", i ? "," : "",
				      i / 256, i % 256);
	snprintf(j + n, cap - n, "]}");
	refused(j, NET_RULES_E_BAD_FIELD, "\"deny\" has 257 rules; at most 256");
	free(j);
}

/* What the rule set says back is what it took in, normalised, and parses again to the same. */
static void test_json_round_trip(void **state)
{
	struct net_rules *r = rules(
		"{\"outbound_internet\":true,\"allow\":[{\"cidr\":\"10.0.0.0/8\",\"proto\":\"tcp\","
		"\"ports\":\"80-443\"},{\"host\":\"*.Example.COM.\",\"ports\":443},"
		"{\"cidr\":\"2001:db8::1\",\"proto\":\"icmpv6\"}],\"deny\":[{\"cidr\":\"203.0.113.7\"}],"
		"\"dns\":[\"10.0.2.3\",\"fd00::3\"]}");
	json_t *j = net_rules_to_json(r), *k;
	char *a, *b;
	struct net_rules *r2;
	struct net_rules_err e;

	(void)state;
	a = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
	assert_string_equal(
		a,
		"{\"allow\":[{\"cidr\":\"10.0.0.0/8\",\"ports\":\"80-443\",\"proto\":\"tcp\"},"
		"{\"host\":\"*.example.com\",\"ports\":\"443\"},"
		"{\"cidr\":\"2001:db8::1/128\",\"proto\":\"icmpv6\"}],"
		"\"deny\":[{\"cidr\":\"203.0.113.7/32\"}],\"dns\":[\"10.0.2.3\",\"fd00::3\"],"
		"\"outbound_internet\":true}");
	assert_int_equal(net_rules_parse(j, &r2, &e), 0);
	k = net_rules_to_json(r2);
	b = json_dumps(k, JSON_SORT_KEYS | JSON_COMPACT);
	assert_string_equal(a, b);
	assert_true(r->allow[0].lifts_private);
	assert_false(r->allow[1].lifts_private);
	free(a);
	free(b);
	json_decref(j);
	json_decref(k);
	net_rules_free(r);
	net_rules_free(r2);

	/* {} is a valid, empty rule set. */
	r = rules("{}");
	assert_int_equal(r->n_allow + r->n_deny + r->n_dns, 0);
	assert_false(r->outbound_internet);
	net_rules_free(r);
}

struct want {
	const char *dst;
	uint8_t proto;
	uint16_t port;
	const char *name; /* a name bound to dst, or NULL */
	enum net_decision dec;
	uint8_t list;
	uint16_t index;
};

static void decide_host(struct net_rules *r, const struct net_addr *host, size_t n_host,
			const struct want *w, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct net_addr a;
		const char *names[1] = { w[i].name };
		struct net_flow_dst d = { .addr = &a,
					  .proto = w[i].proto,
					  .port = w[i].port,
					  .names = names,
					  .n_names = w[i].name ? 1 : 0,
					  .host_addrs = host,
					  .n_host_addrs = n_host };
		struct net_rule_ref ref;
		enum net_decision dec;

		assert_int_equal(net_addr_parse(w[i].dst, &a), 0);
		dec = net_rules_decide(r, &d, &ref);
		if (dec != w[i].dec || ref.list != w[i].list || ref.index != w[i].index)
			fail_msg("case %zu (%s proto %u port %u name %s): decision %d ref %u[%u], want %d ref %u[%u]",
				 i, w[i].dst, w[i].proto, w[i].port, w[i].name ? w[i].name : "-",
				 dec, ref.list, ref.index, w[i].dec, w[i].list, w[i].index);
	}
}

static void decide_all(const char *json, const struct want *w, size_t n)
{
	struct net_rules *r = rules(json);

	decide_host(r, NULL, 0, w, n);
	net_rules_free(r);
}

/*
 * The host's own addresses: "everything public", a private block and host
 * rules do not reach them; only a rule naming the one address does.
 */
static void test_host_addresses(void **state)
{
	static const char *const host_text[] = { "203.0.113.5", "192.168.1.10", "2001:db8::5",
						 "127.0.0.1" };
	static const char json[] =
		"{\"outbound_internet\":true,"
		"\"allow\":[{\"cidr\":\"0.0.0.0/0\"},{\"cidr\":\"192.168.0.0/16\"},{\"host\":\"*.example.com\"},"
		"{\"cidr\":\"203.0.113.5/32\",\"proto\":\"tcp\",\"ports\":8080},{\"cidr\":\"2001:db8::/32\"},"
		"{\"cidr\":\"203.0.113.0/24\",\"ports\":22}],"
		"\"deny\":[{\"cidr\":\"203.0.113.5\",\"ports\":9}],"
		"\"dns\":[\"192.168.1.10\"]}";
	static const struct want w[] = {
		/* outbound_internet, 0.0.0.0/0 and a /24 naming the port: not enough. */
		{ "203.0.113.5", 6, 22, NULL, NET_DENY_HOST, NET_REF_NONE, 0 },
		{ "203.0.113.5", 17, 443, NULL, NET_DENY_HOST, NET_REF_NONE, 0 },
		/* A host rule (a name the guest resolved): never. */
		{ "203.0.113.5", 6, 443, "www.example.com", NET_DENY_HOST, NET_REF_NONE, 0 },
		/* The rule naming the address opens it, for its port only. */
		{ "203.0.113.5", 6, 8080, NULL, NET_ALLOW, NET_REF_ALLOW, 3 },
		{ "203.0.113.5", 17, 8080, NULL, NET_DENY_HOST, NET_REF_NONE, 0 },
		/* A deny rule still beats it. */
		{ "203.0.113.5", 6, 9, NULL, NET_DENY_RULE, NET_REF_DENY, 0 },
		/* A neighbour of the host is public as before. */
		{ "203.0.113.6", 6, 22, NULL, NET_ALLOW, NET_REF_ALLOW, 0 },
		/* The host's LAN address: the private /16 does not open it. */
		{ "192.168.1.10", 6, 80, NULL, NET_DENY_HOST, NET_REF_NONE, 0 },
		{ "192.168.1.11", 6, 80, NULL, NET_ALLOW, NET_REF_ALLOW, 1 },
		/* A `dns` entry names it: port 53 only. */
		{ "192.168.1.10", 17, 53, NULL, NET_ALLOW, NET_REF_DNS, 0 },
		/* IPv6, and the host's IPv4 address in NAT64 and 6to4 form. */
		{ "2001:db8::5", 6, 22, NULL, NET_DENY_HOST, NET_REF_NONE, 0 },
		{ "2001:db8::6", 6, 22, NULL, NET_ALLOW, NET_REF_ALLOW, 4 },
		{ "64:ff9b::cb00:7105", 6, 22, NULL, NET_DENY_HOST, NET_REF_NONE, 0 },
		{ "2002:cb00:7105::1", 6, 22, NULL, NET_DENY_HOST, NET_REF_NONE, 0 },
		/* Loopback stays reserved, listed or not. */
		{ "127.0.0.1", 6, 8080, NULL, NET_DENY_RESERVED, NET_REF_NONE, 0 },
	};
	struct net_addr host[4];
	struct net_rules *r = rules(json);

	(void)state;
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(net_addr_parse(host_text[i], &host[i]), 0);
	decide_host(r, host, 4, w, sizeof(w) / sizeof(w[0]));
	/* Without the host list, the same rules open the same address: the list decides. */
	{
		static const struct want open[] = { { "203.0.113.5", 6, 22, NULL, NET_ALLOW,
						      NET_REF_ALLOW, 0 } };

		decide_host(r, NULL, 0, open, 1);
	}
	net_rules_free(r);
}

/* A resolver entry never opens a reserved range, even one the parser was not asked about. */
static void test_resolver_after_reserved(void **state)
{
	static const struct want w[] = {
		{ "169.254.169.254", 17, 53, NULL, NET_DENY_RESERVED, NET_REF_NONE, 0 },
		{ "127.0.0.53", 6, 53, NULL, NET_DENY_RESERVED, NET_REF_NONE, 0 },
		{ "10.0.2.3", 17, 53, NULL, NET_ALLOW, NET_REF_DNS, 0 },
	};
	struct net_rules *r = rules("{\"dns\":[\"10.0.2.3\"]}");

	(void)state;
	/* As a rule set from an older parser could hold them. */
	net_addr_parse("169.254.169.254", &r->dns[1]);
	net_addr_parse("127.0.0.53", &r->dns[2]);
	r->n_dns = 3;
	decide_host(r, NULL, 0, w, sizeof(w) / sizeof(w[0]));
	net_rules_free(r);
}

static void test_precedence(void **state)
{
	static const char json[] =
		"{\"outbound_internet\":true,"
		"\"allow\":[{\"cidr\":\"203.0.113.0/24\",\"proto\":\"tcp\",\"ports\":\"80-443\"},"
		"{\"cidr\":\"10.1.0.0/16\",\"proto\":\"tcp\"},"
		"{\"cidr\":\"0.0.0.0/0\",\"proto\":\"udp\",\"ports\":53},"
		"{\"host\":\"*.example.com\",\"ports\":443},"
		"{\"host\":\"api.github.com\"}],"
		"\"deny\":[{\"cidr\":\"203.0.113.66\"},{\"host\":\"bad.example.com\"},"
		"{\"cidr\":\"198.51.100.0/24\",\"proto\":\"udp\"}],"
		"\"dns\":[\"10.0.2.3\"]}";
	static const struct want w[] = {
		/* An allow rule, inside its port range and outside it (then outbound_internet). */
		{ "203.0.113.5", 6, 443, NULL, NET_ALLOW, NET_REF_ALLOW, 0 },
		{ "203.0.113.5", 6, 8080, NULL, NET_ALLOW, NET_REF_INTERNET, 0 },
		/* Deny beats allow. */
		{ "203.0.113.66", 6, 443, NULL, NET_DENY_RULE, NET_REF_DENY, 0 },
		{ "198.51.100.1", 17, 53, NULL, NET_DENY_RULE, NET_REF_DENY, 2 },
		{ "198.51.100.1", 6, 53, NULL, NET_ALLOW, NET_REF_INTERNET, 0 },
		/* Reserved: whatever allows it. */
		{ "169.254.169.254", 6, 80, NULL, NET_DENY_RESERVED, NET_REF_NONE, 0 },
		{ "127.0.0.1", 17, 53, NULL, NET_DENY_RESERVED, NET_REF_NONE, 0 },
		/* Private: 0.0.0.0/0 and outbound_internet do not lift it; 10.1.0.0/16 does, for tcp. */
		{ "10.9.9.9", 17, 53, NULL, NET_DENY_PRIVATE, NET_REF_NONE, 0 },
		{ "192.168.1.1", 6, 443, NULL, NET_DENY_PRIVATE, NET_REF_NONE, 0 },
		{ "10.1.2.3", 6, 22, NULL, NET_ALLOW, NET_REF_ALLOW, 1 },
		{ "10.1.2.3", 17, 22, NULL, NET_DENY_PRIVATE, NET_REF_NONE, 0 },
		/* A host rule never lifts private (DNS rebinding). */
		{ "10.9.9.9", 6, 443, "www.example.com", NET_DENY_PRIVATE, NET_REF_NONE, 0 },
		/* The resolver, port 53, is allowed though private; other ports are not. */
		{ "10.0.2.3", 17, 53, NULL, NET_ALLOW, NET_REF_DNS, 0 },
		{ "10.0.2.3", 6, 53, NULL, NET_ALLOW, NET_REF_DNS, 0 },
		{ "10.0.2.3", 6, 80, NULL, NET_DENY_PRIVATE, NET_REF_NONE, 0 },
		/* Host rules: the name bound to the address decides. */
		{ "93.184.216.34", 6, 443, "www.example.com", NET_ALLOW, NET_REF_ALLOW, 3 },
		{ "93.184.216.34", 17, 443, "a.b.example.com", NET_ALLOW, NET_REF_ALLOW, 3 },
		{ "93.184.216.34", 6, 443, "bad.example.com", NET_DENY_RULE, NET_REF_DENY, 1 },
		{ "140.82.112.5", 1, 0, "api.github.com", NET_ALLOW, NET_REF_ALLOW, 4 },
	};

	(void)state;
	decide_all(json, w, sizeof(w) / sizeof(w[0]));
}

static void test_default_deny(void **state)
{
	static const char json[] =
		"{\"allow\":[{\"host\":\"*.example.com\"},{\"cidr\":\"2001:db8::/32\","
		"\"proto\":\"icmpv6\"},{\"cidr\":\"8.8.8.8\",\"ports\":53}]}";
	static const struct want w[] = {
		{ "1.1.1.1", 6, 443, NULL, NET_DENY_DEFAULT, NET_REF_NONE, 0 },
		/* "*.example.com" is not example.com itself, nor notexample.com. */
		{ "93.184.216.34", 6, 443, "example.com", NET_DENY_DEFAULT, NET_REF_NONE, 0 },
		{ "93.184.216.34", 6, 443, "notexample.com", NET_DENY_DEFAULT, NET_REF_NONE, 0 },
		{ "93.184.216.34", 6, 443, "x.example.com", NET_ALLOW, NET_REF_ALLOW, 0 },
		/* Protocol and family must both match. */
		{ "2001:db8::5", 58, 0, NULL, NET_ALLOW, NET_REF_ALLOW, 1 },
		{ "2001:db8::5", 6, 22, NULL, NET_DENY_DEFAULT, NET_REF_NONE, 0 },
		/* "ports" without proto: tcp and udp, not icmp. */
		{ "8.8.8.8", 17, 53, NULL, NET_ALLOW, NET_REF_ALLOW, 2 },
		{ "8.8.8.8", 6, 53, NULL, NET_ALLOW, NET_REF_ALLOW, 2 },
		{ "8.8.8.8", 1, 0, NULL, NET_DENY_DEFAULT, NET_REF_NONE, 0 },
	};

	(void)state;
	decide_all(json, w, sizeof(w) / sizeof(w[0]));
	/* No rules at all: everything is denied. */
	{
		struct net_addr a;
		struct net_flow_dst d = { .addr = &a, .proto = 6, .port = 443 };
		struct net_rule_ref ref;

		net_addr_parse("1.1.1.1", &a);
		assert_int_equal(net_rules_decide(NULL, &d, &ref), NET_DENY_DEFAULT);
	}
}

static void test_resolver_and_deny(void **state)
{
	/* A deny rule beats even the resolver exception. */
	static const struct want w[] = {
		{ "10.0.2.3", 17, 53, NULL, NET_DENY_RULE, NET_REF_DENY, 0 },
	};
	struct net_rules *r = rules(
		"{\"allow\":[{\"host\":\"api.github.com\"},{\"host\":\"*.npmjs.org\"}]}");

	(void)state;
	decide_all("{\"deny\":[{\"cidr\":\"10.0.0.0/8\"}],\"dns\":[\"10.0.2.3\"]}", w, 1);
	assert_true(net_rules_wants_name(r, "api.github.com"));
	assert_true(net_rules_wants_name(r, "registry.npmjs.org"));
	assert_false(net_rules_wants_name(r, "github.com"));
	assert_false(net_rules_wants_name(r, "npmjs.org"));
	net_rules_free(r);
}

static void test_counters_json(void **state)
{
	struct net_rules *r = rules(
		"{\"allow\":[{\"cidr\":\"1.2.3.4\"}],\"deny\":[{\"cidr\":\"5.6.7.8\"}]}");
	struct net_rule_ref ref = { NET_REF_ALLOW, 0 };
	json_t *j;
	char *s;

	(void)state;
	net_rules_counters(r, ref)->flows = 3;
	ref.list = NET_REF_DENY;
	net_rules_counters(r, ref)->packets = 7;
	ref.index = 1;
	assert_null(net_rules_counters(r, ref));
	ref.list = NET_REF_INFRA;
	assert_null(net_rules_counters(r, ref));
	j = net_rules_counters_json(r);
	s = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
	assert_string_equal(s,
			    "{\"allow\":[{\"bytes\":0,\"flows\":3,\"packets\":0}],"
			    "\"deny\":[{\"bytes\":0,\"flows\":0,\"packets\":7}],"
			    "\"dns\":{\"bytes\":0,\"flows\":0,\"packets\":0},"
			    "\"outbound_internet\":{\"bytes\":0,\"flows\":0,\"packets\":0}}");
	free(s);
	json_decref(j);
	net_rules_free(r);
}

/* "http" is the egress proxy's rules: parsed with http_rules' checks and
 * messages, printed back, and what the filter steers and binds. */
static void test_http_rules_key(void **state)
{
	struct net_rules *r = rules(
		"{\"allow\":[{\"host\":\"a.test\",\"ports\":22}],\"http\":["
		"{\"host\":\"api.test\"},{\"host\":\"*.pkg.test\",\"ports\":[8443]}]}");
	struct net_rules *none = rules("{\"allow\":[{\"host\":\"a.test\"}]}");
	json_t *j;
	char *a;

	(void)state;
	assert_non_null(r->http);
	assert_true(net_rules_steers(r, 80) && net_rules_steers(r, 443) &&
		    net_rules_steers(r, 8443));
	assert_false(net_rules_steers(r, 22) || net_rules_steers(r, 8080));
	assert_true(net_rules_wants_name(r, "api.test") && net_rules_wants_name(r, "x.pkg.test"));
	assert_true(net_rules_wants_name(r, "a.test"));
	assert_false(net_rules_wants_name(r, "pkg.test") || net_rules_wants_name(r, "b.test"));
	/* Without "http": nothing steered, and none in the JSON. */
	assert_null(none->http);
	assert_false(net_rules_steers(none, 80) || net_rules_steers(NULL, 443));
	j = net_rules_to_json(none);
	assert_null(json_object_get(j, "http"));
	json_decref(j);
	j = net_rules_to_json(r);
	a = json_dumps(json_object_get(j, "http"), JSON_SORT_KEYS | JSON_COMPACT);
	assert_string_equal(a,
			    "[{\"action\":\"allow\",\"host\":\"api.test\",\"intercept\":false},"
			    "{\"action\":\"allow\",\"host\":\"*.pkg.test\",\"intercept\":false,"
			    "\"ports\":[8443]}]");
	free(a);
	json_decref(j);
	refused("{\"http\":{}}", NET_RULES_E_BAD_JSON, "\"http\" must be an array of rules");
	refused("{\"http\":[{\"host\":\"a.test\",\"methods\":[\"get\"]}]}", NET_RULES_E_BAD_FIELD,
		"firewall: http[0].methods[0]");
	refused("{\"htttp\":[]}", NET_RULES_E_UNKNOWN_FIELD,
		"(expected outbound_internet, allow, deny, dns, http)");
	net_rules_free(r);
	net_rules_free(none);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cidr_parse),
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_json_errors),
		cmocka_unit_test(test_json_too_many_rules),
		cmocka_unit_test(test_json_round_trip),
		cmocka_unit_test(test_precedence),
		cmocka_unit_test(test_host_addresses),
		cmocka_unit_test(test_resolver_after_reserved),
		cmocka_unit_test(test_default_deny),
		cmocka_unit_test(test_resolver_and_deny),
		cmocka_unit_test(test_counters_json),
		cmocka_unit_test(test_http_rules_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
