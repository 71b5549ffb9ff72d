/*
 * egress_policy and egress_prog, without a kernel: the table a rule set,
 * the host's addresses and a resolver make; that it agrees with the
 * packet filter's own decision (net_rules_decide) wherever a destination
 * alone can tell, and allows at least what the filter allows where it
 * cannot (host-name rules); and that the generated program, run here by a
 * small interpreter of the instructions it may contain, decides exactly
 * as the table does, for IPv4 hooks and IPv6 ones (IPv4-mapped
 * destinations included).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/egress/egress_prog.h"

#define TCP 6
#define UDP 17

/* --- a tiny eBPF interpreter: only what egress_prog may emit --- */

static uint64_t bswap(uint64_t v, int bits)
{
	return bits == 16 ? (uint64_t)__builtin_bswap16((uint16_t)v)
			  : (uint64_t)__builtin_bswap32((uint32_t)v);
}

/* Run prog on ctx; its return value. Fails the test on any other instruction or a backward jump. */
static uint64_t run(const struct bpf_insn *prog, int n, const struct bpf_sock_addr *ctx)
{
	uint64_t r[11] = { 0 };
	int pc = 0;

	while (pc < n) {
		const struct bpf_insn *i = &prog[pc++];
		uint32_t a;

		switch (i->code) {
		case BPF_ALU64 | BPF_MOV | BPF_X:
			/* r6 = r1: the context; loads go through ctx below. */
			r[i->dst_reg] = r[i->src_reg];
			break;
		case BPF_ALU64 | BPF_MOV | BPF_K:
			r[i->dst_reg] = (uint64_t)(int64_t)i->imm;
			break;
		case BPF_ALU | BPF_MOV | BPF_X:
			r[i->dst_reg] = (uint32_t)r[i->src_reg];
			break;
		case BPF_ALU | BPF_AND | BPF_K:
			r[i->dst_reg] = (uint32_t)r[i->dst_reg] & (uint32_t)i->imm;
			break;
		case BPF_ALU | BPF_END | BPF_TO_BE:
			assert_true(i->imm == 16 || i->imm == 32);
			r[i->dst_reg] = bswap(r[i->dst_reg], i->imm); /* a little-endian host */
			break;
		case BPF_LDX | BPF_MEM | BPF_W:
			assert_int_equal(i->src_reg, 6);
			assert_true(i->off >= 0 &&
				    (size_t)i->off + 4 <=
					    offsetof(struct bpf_sock_addr, msg_src_ip4));
			memcpy(&a, (const uint8_t *)ctx + i->off, 4);
			r[i->dst_reg] = a;
			break;
		case BPF_JMP32 | BPF_JNE | BPF_K:
		case BPF_JMP32 | BPF_JEQ | BPF_K:
		case BPF_JMP32 | BPF_JLT | BPF_K:
		case BPF_JMP32 | BPF_JGT | BPF_K: {
			uint32_t x = (uint32_t)r[i->dst_reg], y = (uint32_t)i->imm;
			bool t = BPF_OP(i->code) == BPF_JNE  ? x != y
				: BPF_OP(i->code) == BPF_JEQ ? x == y
				: BPF_OP(i->code) == BPF_JLT ? x < y
							     : x > y;

			assert_true(i->off >= 0);
			if (t)
				pc += i->off;
			break;
		}
		case BPF_JMP | BPF_EXIT:
			return r[0];
		default:
			fail_msg("instruction %d: code 0x%02x is not one egress_prog emits", pc - 1,
				 i->code);
		}
	}
	fail_msg("ran off the end of the program");
	return 0;
}

static struct net_addr A(const char *s) {
	struct net_addr a;

	assert_int_equal(net_addr_parse(s, &a), 0);
	return a;
}

/* What the kernel hands the program for a call to dst:port on a socket of proto. */
static struct bpf_sock_addr
ctx_of(const struct net_addr *dst, uint8_t proto, uint16_t port)
{
	struct bpf_sock_addr c;
	uint16_t p = htons(port);

	memset(&c, 0, sizeof(c));
	c.user_family = dst->family == NET_AF4 ? AF_INET : AF_INET6;
	if (dst->family == NET_AF4)
		memcpy(&c.user_ip4, dst->b, 4);
	else
		memcpy(c.user_ip6, dst->b, 16);
	memcpy(&c.user_port, &p, 2);
	c.protocol = proto;
	return c;
}

/* The program's verdict for dst (an IPv4 hook for IPv4, an IPv6 one for IPv6). */
static bool prog_allows(const struct egress_policy *p, const struct net_addr *dst, uint8_t proto,
			uint16_t port)
{
	struct bpf_insn *insns = calloc(EGRESS_INSNS_MAX(p->n), sizeof(*insns));
	struct bpf_sock_addr c = ctx_of(dst, proto, port);
	int n;
	uint64_t v;

	assert_non_null(insns);
	n = egress_prog_build(p, dst->family == NET_AF6, insns);
	assert_true(n > 0 && n <= (int)EGRESS_INSNS_MAX(p->n));
	v = run(insns, n, &c);
	free(insns);
	assert_true(v == 0 || v == 1);
	return v == 1;
}

/* Table and program agree, and say `want`. */
static void expect(const struct egress_policy *p, const char *dst, uint8_t proto, uint16_t port,
		   bool want)
{
	struct net_addr a = A(dst);
	bool t = egress_policy_allows(p, &a, proto, port), g = prog_allows(p, &a, proto, port);

	if (t != want || g != want)
		fail_msg("%s %s:%u: table %s, program %s, wanted %s", proto == TCP ? "tcp" : "udp",
			 dst, port, t ? "allow" : "deny", g ? "allow" : "deny",
			 want ? "allow" : "deny");
}

static struct net_rules *rules_of(const char *json)
{
	struct net_rules_err e;
	struct net_rules *r = NULL;

	if (net_rules_parse_text(json, strlen(json), &r, &e))
		fail_msg("%s: %s", json, e.msg);
	return r;
}

static const char *const host_text[] = { "127.0.0.1",          "::1",        "192.0.2.2", "fd00::2",
					 "fe80::fc:ff:fe00:1", "203.0.113.5" };
#define N_HOST (sizeof(host_text) / sizeof(host_text[0]))

static void host_list(struct net_addr *h)
{
	for (size_t i = 0; i < N_HOST; i++)
		h[i] = A(host_text[i]);
}

/* Without a firewall: the reserved classes and the host's addresses shut, everything else open. */
static void test_default_table(void **state)
{
	static const char *const shut[] = {
		"127.0.0.1",
		"127.1.2.3",
		"0.0.0.0",
		"0.1.2.3",
		"169.254.169.254",
		"169.254.0.1",
		"100.100.100.200",
		"168.63.129.16",
		"224.0.0.1",
		"239.255.255.250",
		"255.255.255.255",
		"240.0.0.1",
		"::1",
		"::",
		"fe80::1",
		"ff02::1",
		"fd00:ec2::254",
		"::ffff:127.0.0.1",
		"::ffff:169.254.169.254",
		"64:ff9b::7f00:1",
		"64:ff9b::a9fe:a9fe",
		"2002:7f00:1::",
		"2002:a9fe:a9fe::1",
		/* the host's own, and their NAT64/6to4 forms */
		"192.0.2.2",
		"::ffff:192.0.2.2",
		"64:ff9b::c000:202",
		"2002:c000:202::",
		"203.0.113.5",
		"fd00::2",
	};
	static const char *const open_[] = { "198.51.100.10", "8.8.8.8",     "10.1.2.3",
					     "192.168.1.1",   "2001:db8::1", "::ffff:198.51.100.10",
					     "192.0.2.3",     "203.0.113.6" };
	struct net_addr host[N_HOST], res = A("127.0.0.53");
	struct egress_policy p;
	struct err e;

	(void)state;
	host_list(host);
	assert_int_equal(egress_policy_build(NULL, host, N_HOST, &res, &p, &e), 0);
	assert_true(p.default_allow);
	for (size_t i = 0; i < sizeof(shut) / sizeof(shut[0]); i++) {
		expect(&p, shut[i], TCP, 80, false);
		expect(&p, shut[i], UDP, 53, false);
	}
	for (size_t i = 0; i < sizeof(open_) / sizeof(open_[0]); i++) {
		expect(&p, open_[i], TCP, 443, true);
		expect(&p, open_[i], UDP, 9, true);
	}
	/* passt's resolver: its port 53, nothing else of it. */
	expect(&p, "127.0.0.53", UDP, 53, true);
	expect(&p, "127.0.0.53", TCP, 53, true);
	expect(&p, "::ffff:127.0.0.53", UDP, 53, true);
	expect(&p, "127.0.0.53", UDP, 54, false);
	expect(&p, "127.0.0.53", TCP, 22, false);
	expect(&p, "127.0.0.1", UDP, 53, false);
	egress_policy_free(&p);
}

/* Canned rule sets for the comparison with the filter. */
static const char *const rule_sets[] = {
	"{}",
	"{\"outbound_internet\":true}",
	"{\"outbound_internet\":true,\"deny\":[{\"cidr\":\"198.51.100.0/24\",\"proto\":\"tcp\",\"ports\":\"80-90\"}]}",
	"{\"allow\":[{\"cidr\":\"10.0.0.0/8\"},{\"cidr\":\"198.51.100.7\",\"proto\":\"udp\",\"ports\":53}]}",
	"{\"allow\":[{\"cidr\":\"0.0.0.0/0\",\"proto\":\"tcp\",\"ports\":443}],\"dns\":[\"10.0.2.3\",\"1.1.1.1\"]}",
	"{\"allow\":[{\"cidr\":\"192.0.2.2\",\"proto\":\"tcp\",\"ports\":8080},{\"cidr\":\"192.168.0.0/16\"}],"
	"\"deny\":[{\"cidr\":\"192.168.7.0/24\"}]}",
	"{\"allow\":[{\"cidr\":\"203.0.113.5\"},{\"cidr\":\"2001:db8::/32\",\"ports\":\"1-1024\"}],"
	"\"outbound_internet\":true,\"deny\":[{\"cidr\":\"8.8.8.8\"}]}",
	"{\"allow\":[{\"cidr\":\"fd00::/8\"},{\"cidr\":\"::/0\",\"proto\":\"udp\"}]}",
};

/* Destinations worth asking about: every class, each rule's edges. */
static const char *const probes[] = {
	"127.0.0.1",
	"0.0.0.0",
	"169.254.169.254",
	"100.100.100.200",
	"224.0.0.1",
	"255.255.255.255",
	"10.0.2.3",
	"10.1.2.3",
	"1.1.1.1",
	"8.8.8.8",
	"8.8.8.9",
	"192.0.2.2",
	"192.0.2.3",
	"192.168.1.1",
	"192.168.7.7",
	"198.51.100.6",
	"198.51.100.7",
	"198.51.100.255",
	"203.0.113.5",
	"203.0.113.6",
	"100.64.0.1",
	"172.16.0.1",
	"::1",
	"::",
	"fe80::1",
	"ff02::1",
	"fd00::2",
	"fd00::3",
	"fc00::1",
	"2001:db8::1",
	"2001:db9::1",
	"2606:4700::1111",
	"64:ff9b::808:808",
	"64:ff9b::a01:203",
	"64:ff9b::c000:202",
	"2002:808:808::",
	"2002:c000:202::1",
};
static const uint16_t ports[] = { 1, 22, 53, 80, 85, 90, 91, 443, 1024, 1025, 8080, 65535 };

/*
 * For a rule set without host rules the table decides as the filter for
 * every destination but passt's resolver; the program as the table. The
 * resolver is left out here: it is the table's one extra opening.
 */
static void test_table_is_the_filter(void **state)
{
	struct net_addr host[N_HOST];

	(void)state;
	host_list(host);
	for (size_t s = 0; s < sizeof(rule_sets) / sizeof(rule_sets[0]); s++) {
		struct net_rules *r = rules_of(rule_sets[s]);
		struct egress_policy p;
		struct err e;

		assert_int_equal(egress_policy_build(r, host, N_HOST, NULL, &p, &e), 0);
		for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
			struct net_addr a = A(probes[i]);

			for (size_t k = 0; k < sizeof(ports) / sizeof(ports[0]); k++) {
				for (int proto = 0; proto < 2; proto++) {
					uint8_t pr = proto ? UDP : TCP;
					struct net_flow_dst d = { .addr = &a,
								  .proto = pr,
								  .port = ports[k],
								  .host_addrs = host,
								  .n_host_addrs = N_HOST };
					struct net_rule_ref ref;
					bool filter = net_rules_decide(r, &d, &ref) == NET_ALLOW;
					bool table = egress_policy_allows(&p, &a, pr, ports[k]);

					if (filter != table)
						fail_msg("rules %s: %s %s:%u: filter %s, table %s",
							 rule_sets[s], pr == TCP ? "tcp" : "udp",
							 probes[i], ports[k],
							 filter ? "allow" : "deny",
							 table ? "allow" : "deny");
					assert_int_equal(prog_allows(&p, &a, pr, ports[k]), table);
				}
			}
		}
		egress_policy_free(&p);
		net_rules_free(r);
	}
}

/*
 * A host-name rule: the table cannot see names, so it opens the rule's
 * ports to public addresses, never to private, reserved or host ones;
 * whatever the filter allows for a name the guest resolved, the table
 * allows too.
 */
static void test_host_rules_open_public_only(void **state)
{
	static const char json[] =
		"{\"allow\":[{\"host\":\"*.example.com\",\"proto\":\"tcp\",\"ports\":443}],\"dns\":[\"10.0.2.3\"]}";
	static const char *const names[] = { "api.example.com" };
	struct net_rules *r = rules_of(json);
	struct net_addr host[N_HOST];
	struct egress_policy p;
	struct err e;

	(void)state;
	host_list(host);
	assert_int_equal(egress_policy_build(r, host, N_HOST, NULL, &p, &e), 0);
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		struct net_addr a = A(probes[i]);
		struct net_flow_dst d = { .addr = &a,
					  .proto = TCP,
					  .port = 443,
					  .names = names,
					  .n_names = 1,
					  .host_addrs = host,
					  .n_host_addrs = N_HOST };
		struct net_rule_ref ref;

		if (net_rules_decide(r, &d, &ref) == NET_ALLOW &&
		    !egress_policy_allows(&p, &a, TCP, 443))
			fail_msg("%s:443: the filter allows it by name, the table does not",
				 probes[i]);
	}
	expect(&p, "198.51.100.10", TCP, 443, true);
	expect(&p, "2606:4700::1111", TCP, 443, true);
	expect(&p, "198.51.100.10", TCP, 80, false);
	expect(&p, "198.51.100.10", UDP, 443, false);
	expect(&p, "10.1.2.3", TCP, 443, false);
	expect(&p, "192.0.2.2", TCP, 443, false);
	expect(&p, "169.254.169.254", TCP, 443, false);
	expect(&p, "10.0.2.3", UDP, 53, true);
	egress_policy_free(&p);
	net_rules_free(r);
}

/* The resolver comes before everything: a deny rule over it does not cut passt's DNS. */
static void test_resolver_first(void **state)
{
	struct net_rules *r = rules_of(
		"{\"deny\":[{\"cidr\":\"0.0.0.0/0\"}],\"outbound_internet\":true}");
	struct net_addr res = A("192.0.2.53"), host = A("192.0.2.53");
	struct egress_policy p;
	struct err e;

	(void)state;
	assert_int_equal(egress_policy_build(r, &host, 1, &res, &p, &e), 0);
	expect(&p, "192.0.2.53", UDP, 53, true);
	expect(&p, "192.0.2.53", TCP, 53, true);
	expect(&p, "192.0.2.53", TCP, 80, false);
	expect(&p, "198.51.100.10", TCP, 443, false);
	egress_policy_free(&p);
	net_rules_free(r);
}

/* Port ranges mean TCP and UDP: an ICMP socket never matches a rule with ports. */
static void test_ports_mean_tcp_udp(void **state)
{
	struct net_rules *r = rules_of(
		"{\"allow\":[{\"cidr\":\"198.51.100.0/24\",\"ports\":\"100-200\"}]}");
	struct egress_policy p;
	struct net_addr a = A("198.51.100.1");
	struct err e;

	(void)state;
	assert_int_equal(egress_policy_build(r, NULL, 0, NULL, &p, &e), 0);
	expect(&p, "198.51.100.1", TCP, 100, true);
	expect(&p, "198.51.100.1", UDP, 200, true);
	expect(&p, "198.51.100.1", TCP, 99, false);
	expect(&p, "198.51.100.1", UDP, 201, false);
	assert_false(egress_policy_allows(&p, &a, 1, 150));
	assert_false(prog_allows(&p, &a, 1, 150));
	egress_policy_free(&p);
	net_rules_free(r);
}

/*
 * Ports an `http` rule lists are steered to the egress proxy: TCP there is
 * denied to passt before any allow (a CIDR allow, a host rule,
 * outbound_internet, passt's resolver), to every address and both
 * families; UDP and other ports are decided as before.
 */
static void test_steered_ports_denied_first(void **state)
{
	struct net_rules *r = rules_of(
		"{\"allow\":[{\"cidr\":\"198.51.100.0/24\"},{\"host\":\"api.example.com\"}],"
		"\"outbound_internet\":true,"
		"\"http\":[{\"host\":\"api.example.com\"},{\"host\":\"x.example.com\",\"ports\":[8080,8081,8443]}]}");
	struct net_addr res = A("192.0.2.53");
	struct egress_policy p;
	struct err e;

	(void)state;
	assert_int_equal(egress_steered_runs(r), 4); /* 80, 443, 8080-8081, 8443 */
	assert_int_equal(egress_policy_build(r, NULL, 0, &res, &p, &e), 0);
	expect(&p, "198.51.100.7", TCP, 443, false);
	expect(&p, "198.51.100.7", TCP, 80, false);
	expect(&p, "203.0.113.9", TCP, 8081, false);
	expect(&p, "203.0.113.9", TCP, 8443, false);
	expect(&p, "2001:db8::1", TCP, 443, false);
	expect(&p, "::ffff:198.51.100.7", TCP, 443, false);
	expect(&p, "64:ff9b::c633:6407", TCP, 80, false);
	/* Not steered: as the rules say. */
	expect(&p, "198.51.100.7", UDP, 443, true);
	expect(&p, "198.51.100.7", TCP, 22, true);
	expect(&p, "203.0.113.9", TCP, 8082, true);
	expect(&p, "203.0.113.9", TCP, 79, true);
	expect(&p, "192.0.2.53", UDP, 53, true);
	egress_policy_free(&p);
	net_rules_free(r);
	/* Without http rules nothing is steered. */
	r = rules_of("{\"outbound_internet\":true}");
	assert_int_equal(egress_steered_runs(r), 0);
	assert_int_equal(egress_policy_build(r, NULL, 0, NULL, &p, &e), 0);
	expect(&p, "198.51.100.7", TCP, 443, true);
	egress_policy_free(&p);
	net_rules_free(r);
}

/* The most a kilnd can hand it (every list full) still fits one program; a table too big is refused. */
static void test_sizes(void **state)
{
	struct net_addr *host = calloc(1024, sizeof(*host));
	struct net_rules *r;
	struct egress_policy p;
	struct bpf_insn *insns;
	char *json = malloc(64 * 1024), *w;
	struct err e;
	int n;

	(void)state;
	assert_non_null(host);
	assert_non_null(json);
	for (int i = 0; i < 1024; i++) {
		uint8_t b[4] = { 203, 0, (uint8_t)(i >> 8), (uint8_t)i };

		net_addr_set(&host[i], NET_AF4, b);
	}
	w = json + sprintf(json, "{\"allow\":[");
	for (int i = 0; i < 256; i++)
		w += sprintf(w,
			     "%s{\"cidr\":\"10.%d.0.0/16\",\"proto\":\"tcp\",\"ports\":\"1-%d\"}",
			     i ? "," : "", i, i + 1);
	w += sprintf(w, "],\"deny\":[");
	for (int i = 0; i < 256; i++)
		w += sprintf(w, "%s{\"cidr\":\"198.51.%d.0/24\"}", i ? "," : "", i);
	sprintf(w, "],\"dns\":[\"10.0.2.3\",\"1.1.1.1\",\"8.8.8.8\",\"9.9.9.9\"]}");
	r = rules_of(json);
	assert_int_equal(egress_policy_build(r, host, 1024, NULL, &p, &e), 0);
	insns = calloc(EGRESS_INSNS_MAX(p.n), sizeof(*insns));
	assert_non_null(insns);
	assert_true(egress_prog_build(&p, false, insns) > 0);
	n = egress_prog_build(&p, true, insns);
	assert_true(n > 0 && n <= (int)EGRESS_INSNS_MAX(p.n));
	expect(&p, "10.3.0.1", TCP, 4, true);
	expect(&p, "10.3.0.1", TCP, 5, false);
	expect(&p, "203.0.3.255", TCP, 80, false);
	expect(&p, "64:ff9b::cb00:3ff", TCP, 80, false);
	/* Past the limit: refused with a message, nothing half-built. */
	p.n = EGRESS_ENTRIES_MAX + 1;
	assert_int_equal(egress_prog_build(&p, false, insns), -E2BIG);
	egress_policy_free(&p);
	free(insns);
	free(json);
	free(host);
	net_rules_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_table),
		cmocka_unit_test(test_table_is_the_filter),
		cmocka_unit_test(test_host_rules_open_public_only),
		cmocka_unit_test(test_resolver_first),
		cmocka_unit_test(test_ports_mean_tcp_udp),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_steered_ports_denied_first),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
