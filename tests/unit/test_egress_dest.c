/*
 * egress_dest: whether kiln-egress may connect to a flow's destination
 * (api/egress/egress_dest.c): only an address the name resolved to, never
 * a reserved or private one unless an override block holds it, never one
 * of the host's own unless an override names exactly it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>
#include <sys/socket.h>

#include "api/egress/egress_dest.h"

#define NOT_AMONG "destination is not among the name's addresses"
#define NO_ADDR "the name has no address"
#define PRIVATE "destination is a private address"
#define RESERVED "destination is a reserved address (loopback, link-local, metadata, ...)"
#define HOST "destination is one of this host's own addresses"

/* The host's own addresses in these tests: public ones, and a loopback one
 * (Debian's 127.0.1.1 for the host name). */
static const char *const HOST_ADDRS[] = { "198.51.100.7", "2001:db8::1", "127.0.1.1" };
#define N_HOST (sizeof(HOST_ADDRS) / sizeof(HOST_ADDRS[0]))

static struct net_addr addr(const char *s)
{
	struct net_addr a;

	if (net_addr_parse(s, &a) < 0)
		fail_msg("address %s", s);
	return a;
}

static struct net_cidr cidr(const char *s)
{
	struct net_cidr c;
	struct err e;

	if (net_cidr_parse(s, &c, &e) < 0)
		fail_msg("cidr %s: %s", s, e.msg);
	return c;
}

/* The reason for dst against the resolved list (comma-free, space-separated). */
static const char *check(const char *dst, const char *const *resolved, size_t n, const char *allow)
{
	struct net_addr d = addr(dst), r[8], host[N_HOST];
	struct net_cidr c;

	for (size_t i = 0; i < n; i++)
		r[i] = addr(resolved[i]);
	for (size_t i = 0; i < N_HOST; i++)
		host[i] = addr(HOST_ADDRS[i]);
	if (allow)
		c = cidr(allow);
	return egress_dest_check(&d, r, n, allow ? &c : NULL, allow ? 1 : 0, host, N_HOST);
}

static void test_public_among_answers(void **state)
{
	const char *const two[] = { "140.82.112.5", "2606:50c0:8000::153" };

	(void)state;
	assert_null(check("140.82.112.5", two, 2, NULL));
	assert_null(check("2606:50c0:8000::153", two, 2, NULL));
	assert_string_equal(check("140.82.112.6", two, 2, NULL), NOT_AMONG);
	assert_string_equal(check("140.82.112.5", NULL, 0, NULL), NO_ADDR);
	/* The families are never mixed: the mapped form is another address. */
	assert_string_equal(check("::ffff:140.82.112.5", two, 2, NULL), NOT_AMONG);
}

static void test_classes_refused_even_when_resolved(void **state)
{
	static const struct {
		const char *a, *why;
	} cases[] = {
		{ "127.0.0.1", RESERVED },       { "169.254.169.254", RESERVED },
		{ "0.0.0.0", RESERVED },         { "::1", RESERVED },
		{ "fe80::1", RESERVED },         { "224.0.0.1", RESERVED },
		{ "::ffff:10.0.0.1", RESERVED }, { "64:ff9b::a9fe:a9fe", RESERVED },
		{ "10.1.2.3", PRIVATE },         { "192.168.1.1", PRIVATE },
		{ "172.16.0.1", PRIVATE },       { "100.64.0.1", PRIVATE },
		{ "fd00::1", PRIVATE },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *const one[] = { cases[i].a };
		const char *why = check(cases[i].a, one, 1, NULL);

		if (!why || strcmp(why, cases[i].why) != 0)
			fail_msg("%s: \"%s\", want \"%s\"", cases[i].a, why ? why : "(allowed)",
				 cases[i].why);
	}
}

static void test_override(void **state)
{
	const char *const lo[] = { "127.0.0.1" };
	const char *const ten[] = { "10.1.2.3" };

	(void)state;
	assert_null(check("127.0.0.1", lo, 1, "127.0.0.0/8"));
	assert_null(check("10.1.2.3", ten, 1, "10.0.0.0/8"));
	assert_string_equal(check("10.1.2.3", ten, 1, "127.0.0.0/8"), PRIVATE);
	/* The override never makes an unresolved address reachable. */
	assert_string_equal(check("127.0.0.2", lo, 1, "127.0.0.0/8"), NOT_AMONG);
}

/* The host's own addresses, public or not: a name a rule allows that
 * resolves to the host must not reach a service the host runs (the packet
 * filter's NET_DENY_HOST). Only an override naming the one address opens it. */
static void test_host_addresses(void **state)
{
	const char *const pub[] = { "198.51.100.7" }, *const pub6[] = { "2001:db8::1" };
	const char *const nat64[] = { "64:ff9b::c633:6407" }, *const to4[] = { "2002:c633:6407::1" };
	const char *const lo[] = { "127.0.1.1" };

	(void)state;
	assert_string_equal(check("198.51.100.7", pub, 1, NULL), HOST);
	assert_string_equal(check("2001:db8::1", pub6, 1, NULL), HOST);
	/* 198.51.100.7 behind NAT64 and 6to4. */
	assert_string_equal(check("64:ff9b::c633:6407", nat64, 1, NULL), HOST);
	assert_string_equal(check("2002:c633:6407::1", to4, 1, NULL), HOST);
	/* A broad override does not open it; one naming the address does. */
	assert_string_equal(check("198.51.100.7", pub, 1, "198.51.100.0/24"), HOST);
	assert_string_equal(check("127.0.1.1", lo, 1, "127.0.0.0/8"), HOST);
	assert_null(check("198.51.100.7", pub, 1, "198.51.100.7/32"));
	assert_null(check("127.0.1.1", lo, 1, "127.0.1.1/32"));
	/* Its neighbour is another machine. */
	assert_null(check("198.51.100.8", (const char *const[]){ "198.51.100.8" }, 1, NULL));
}

static void test_header_destination(void **state)
{
	struct proxy_v2 h = { .family = AF_INET6 };
	struct net_addr a, want = addr("2001:db8::7");

	(void)state;
	memcpy(h.dst, want.b, 16);
	egress_dest_of(&h, &a);
	assert_true(net_addr_equal(&a, &want));
	memset(&h, 0, sizeof(h));
	h.family = AF_INET;
	memcpy(h.dst, (uint8_t[]){ 140, 82, 112, 5 }, 4);
	egress_dest_of(&h, &a);
	want = addr("140.82.112.5");
	assert_true(net_addr_equal(&a, &want));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_public_among_answers),
		cmocka_unit_test(test_classes_refused_even_when_resolved),
		cmocka_unit_test(test_override),
		cmocka_unit_test(test_host_addresses),
		cmocka_unit_test(test_header_destination),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
