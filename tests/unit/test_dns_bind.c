/*
 * dns_bind: names bind to addresses only from the answer to a query the
 * guest sent (same resolver, port, id and question), once; only the
 * question name's own records and its CNAME chain bind; names decode with
 * a bounded, loop-free walk; TTLs are clamped; the tables stay bounded.
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

#include "devices/net/dns_bind.h"
#include "frames.h"

#define S 1000000000ULL

static const uint64_t key[2] = { 0x0123456789abcdefULL, 0xfedcba9876543210ULL };

static struct net_addr ip(const char *s)
{
	struct net_addr a;

	assert_int_equal(net_addr_parse(s, &a), 0);
	return a;
}

static int setup(void **state)
{
	struct dns_bind *d = malloc(sizeof(*d));

	assert_non_null(d);
	assert_int_equal(dns_bind_init(d, 16, key), 0);
	*state = d;
	return 0;
}

static int teardown(void **state)
{
	dns_bind_free(*state);
	free(*state);
	return 0;
}

/* Names bound to addr now. */
static size_t names(struct dns_bind *d, const char *addr, uint64_t now, const char **out)
{
	struct net_addr a = ip(addr);

	return dns_bind_names(d, &a, now, out, DNS_BIND_PER_ADDR);
}

/* The guest asks resolver from port for name. */
static void ask(struct dns_bind *d, const char *resolver, uint16_t port, uint16_t id,
		const char *name, uint16_t qtype, uint64_t now)
{
	uint8_t m[512];
	size_t n = dns_msg(m, id, false, name, qtype, 0);
	struct dns_question q;
	struct net_addr r = ip(resolver);

	assert_int_equal(dns_parse_query(m, n, &q), 0);
	dns_bind_query(d, &r, port, &q, now);
}

/* Deliver a response (heap copy of exact length). */
static int answer(struct dns_bind *d, const char *resolver, uint16_t port, const uint8_t *m,
		  size_t n, bool partial, uint64_t now)
{
	struct net_addr r = ip(resolver);
	uint8_t *c = fr_exact(m, n);
	int rc = dns_bind_answer(d, &r, port, c, n, partial, now);

	free(c);
	return rc;
}

static void test_name_decode(void **state)
{
	uint8_t m[700];
	char out[DNS_NAME_MAX + 1];
	size_t off, n;

	(void)state;
	memset(m, 0, sizeof(m));
	n = 12 + dns_put_name(m + 12, "WWW.Example.COM");
	off = 12;
	assert_int_equal(dns_name_decode(m, n, &off, out), 0);
	assert_string_equal(out, "www.example.com");
	assert_int_equal(off, n);
	/* A pointer to it from later: "api" + pointer to offset 16 (example.com). */
	m[n] = 3;
	memcpy(m + n + 1, "api", 3);
	m[n + 4] = 0xc0;
	m[n + 5] = 16;
	off = n;
	assert_int_equal(dns_name_decode(m, n + 6, &off, out), 0);
	assert_string_equal(out, "api.example.com");
	assert_int_equal(off, n + 6);
	/* A pointer to itself, and one pointing forward: refused (no loops). */
	m[40] = 0xc0;
	m[41] = 40;
	off = 40;
	assert_int_equal(dns_name_decode(m, 42, &off, out), -EINVAL);
	m[40] = 0xc0;
	m[41] = 50;
	m[50] = 0;
	off = 40;
	assert_int_equal(dns_name_decode(m, 51, &off, out), -EINVAL);
	/* Two names pointing at each other: a -> b -> a. */
	m[60] = 1, m[61] = 'a', m[62] = 0xc0, m[63] = 64; /* forward: refused at once */
	m[64] = 1, m[65] = 'b', m[66] = 0xc0, m[67] = 60;
	off = 64;
	assert_int_equal(dns_name_decode(m, 68, &off, out), -EINVAL);
	/* A label with a dot inside cannot pose as two labels. */
	n = dns_put_name(m + 100, "x.example.com");
	m[100] = 9; /* "x" + ".example" as one label */
	off = 100;
	assert_int_equal(dns_name_decode(m, 100 + n, &off, out), -EINVAL);
	/* Reserved label types 0x40 and 0x80. */
	m[200] = 0x41;
	off = 200;
	assert_int_equal(dns_name_decode(m, 300, &off, out), -EINVAL);
	/* Longer than 255 bytes on the wire: five 63-byte labels. */
	for (int i = 0; i < 5; i++) {
		m[300 + 64 * i] = 63;
		memset(m + 301 + 64 * i, 'a', 63);
	}
	m[300 + 320] = 0;
	off = 300;
	assert_int_equal(dns_name_decode(m, sizeof(m), &off, out), -EINVAL);
	/* Four 63-byte labels minus one byte = 253 characters: the longest name. */
	m[300 + 192] = 61;
	m[300 + 192 + 62] = 0;
	off = 300;
	assert_int_equal(dns_name_decode(m, sizeof(m), &off, out), 0);
	assert_int_equal(strlen(out), 253);
	/* Runs off the end. */
	off = 300;
	assert_int_equal(dns_name_decode(m, 330, &off, out), -EINVAL);
}

/* A chain of pointers each going back one name: more than DNS_MAX_JUMPS is refused. */
static void test_pointer_chain(void **state)
{
	uint8_t m[512];
	char out[DNS_NAME_MAX + 1];
	size_t off, n = 12;

	(void)state;
	memset(m, 0, 12);
	m[n++] = 1;
	m[n++] = 'z';
	m[n++] = 0;
	for (int i = 0; i < DNS_MAX_JUMPS + 2; i++) { /* each: "a" + pointer to the previous name */
		size_t prev = i == 0 ? 12 : n - 4;

		m[n++] = 1;
		m[n++] = 'a';
		m[n++] = (uint8_t)(0xc0 | (prev >> 8));
		m[n++] = (uint8_t)prev;
	}
	off = 15 + 4 * (DNS_MAX_JUMPS - 1);
	assert_int_equal(dns_name_decode(m, n, &off, out), 0);
	off = 15 + 4 * (DNS_MAX_JUMPS + 1);
	assert_int_equal(dns_name_decode(m, n, &off, out), -EINVAL);
}

static void test_query_parse(void **state)
{
	uint8_t m[512];
	struct dns_question q;
	size_t n = dns_msg(m, 0xbeef, false, "Api.GitHub.com", 28, 0);

	(void)state;
	assert_int_equal(dns_parse_query(m, n, &q), 0);
	assert_int_equal(q.id, 0xbeef);
	assert_int_equal(q.qtype, 28);
	assert_string_equal(q.name, "api.github.com");
	for (size_t cut = 0; cut < n; cut++) {
		uint8_t *c = fr_exact(m, cut);

		assert_int_equal(dns_parse_query(c, cut, &q), -EINVAL);
		free(c);
	}
	m[2] |= 0x80; /* a response is no query */
	assert_int_equal(dns_parse_query(m, n, &q), -EINVAL);
	m[2] = 0x28; /* opcode 5 (update) */
	assert_int_equal(dns_parse_query(m, n, &q), -EINVAL);
	n = dns_msg(m, 1, false, "a.com", 1, 0);
	m[5] = 2; /* two questions */
	assert_int_equal(dns_parse_query(m, n, &q), -EINVAL);
}

static void test_bind_answer(void **state)
{
	struct dns_bind *d = *state;
	uint8_t m[512];
	const char *nm[DNS_BIND_PER_ADDR];
	size_t n;

	ask(d, "10.0.2.3", 40000, 0x1234, "api.github.com", 1, 0);
	n = dns_msg(m, 0x1234, true, "api.github.com", 1, 2);
	n = dns_rr_a(m, n, NULL, "140.82.112.5", 60);
	n = dns_rr_a(m, n, NULL, "140.82.112.6", 60);
	assert_int_equal(names(d, "140.82.112.5", 0, nm), 0);
	assert_int_equal(answer(d, "10.0.2.3", 40000, m, n, false, S), 2);
	assert_int_equal(names(d, "140.82.112.5", S, nm), 1);
	assert_string_equal(nm[0], "api.github.com");
	assert_int_equal(names(d, "140.82.112.6", S, nm), 1);
	/* Once: the same answer again (a replay) binds nothing more. */
	assert_int_equal(answer(d, "10.0.2.3", 40000, m, n, false, S), -ENOENT);
	assert_int_equal(d->unmatched, 1);
}

static void test_spoofed_answers(void **state)
{
	struct dns_bind *d = *state;
	uint8_t m[512];
	const char *nm[DNS_BIND_PER_ADDR];
	size_t n;

	ask(d, "10.0.2.3", 40000, 0x1234, "api.github.com", 1, 0);
	n = dns_msg(m, 0x1234, true, "api.github.com", 1, 1);
	n = dns_rr_a(m, n, NULL, "6.6.6.6", 60);
	/* Wrong id, wrong port, another resolver: nothing binds. */
	m[0] = 0x12, m[1] = 0x35;
	assert_int_equal(answer(d, "10.0.2.3", 40000, m, n, false, S), -ENOENT);
	m[1] = 0x34;
	assert_int_equal(answer(d, "10.0.2.3", 40001, m, n, false, S), -ENOENT);
	assert_int_equal(answer(d, "8.8.8.8", 40000, m, n, false, S), -ENOENT);
	/* Right id and port, another question. */
	n = dns_msg(m, 0x1234, true, "evil.com", 1, 1);
	n = dns_rr_a(m, n, NULL, "6.6.6.6", 60);
	assert_int_equal(answer(d, "10.0.2.3", 40000, m, n, false, S), -ENOENT);
	/* Right question, another type (AAAA asked as A). */
	n = dns_msg(m, 0x1234, true, "api.github.com", 28, 1);
	n = dns_rr_a(m, n, NULL, "2001:db8::6", 60);
	assert_int_equal(answer(d, "10.0.2.3", 40000, m, n, false, S), -ENOENT);
	/* Too late: the query was forgotten. */
	n = dns_msg(m, 0x1234, true, "api.github.com", 1, 1);
	n = dns_rr_a(m, n, NULL, "6.6.6.6", 60);
	assert_int_equal(answer(d, "10.0.2.3", 40000, m, n, false, DNS_QUERY_TIMEOUT_NS + 1),
			 -ENOENT);
	assert_int_equal(names(d, "6.6.6.6", S, nm), 0);
	assert_int_equal(d->count, 0);
}

/* Records of other names in a genuine answer bind nothing; the CNAME chain does. */
static void test_unrelated_and_cname(void **state)
{
	struct dns_bind *d = *state;
	uint8_t m[512], t[64];
	const char *nm[DNS_BIND_PER_ADDR];
	size_t n, tl;

	ask(d, "10.0.2.3", 40000, 7, "api.github.com", 1, 0);
	n = dns_msg(m, 7, true, "api.github.com", 1, 4);
	/* The address record first, the chain after it: order does not matter. */
	n = dns_rr_a(m, n, "lb.github.io", "1.2.3.4", 60);
	tl = dns_put_name(t, "lb.github.io");
	n = dns_rr(m, n, "edge.github.com", 5, 60, t, (uint16_t)tl);
	tl = dns_put_name(t, "edge.github.com");
	n = dns_rr(m, n, NULL, 5, 60, t, (uint16_t)tl);
	n = dns_rr_a(m, n, "evil.com", "6.6.6.6", 60); /* not on the chain */
	assert_int_equal(answer(d, "10.0.2.3", 40000, m, n, false, S), 1);
	assert_int_equal(names(d, "1.2.3.4", S, nm), 1);
	assert_string_equal(nm[0], "api.github.com"); /* bound to the name the guest asked */
	assert_int_equal(names(d, "6.6.6.6", S, nm), 0);
}

static void test_rcode_and_malformed(void **state)
{
	struct dns_bind *d = *state;
	uint8_t m[512];
	const char *nm[DNS_BIND_PER_ADDR];
	size_t n, full;

	/* NXDOMAIN with a record in it anyway: nothing binds. */
	ask(d, "10.0.2.3", 1000, 1, "a.example.com", 1, 0);
	n = dns_msg(m, 1, true, "a.example.com", 1, 1);
	n = dns_rr_a(m, n, NULL, "1.1.1.1", 60);
	m[3] = 0x83;
	assert_int_equal(answer(d, "10.0.2.3", 1000, m, n, false, S), 0);
	assert_int_equal(names(d, "1.1.1.1", S, nm), 0);

	/* A record whose owner is a pointer loop: malformed, nothing binds. */
	ask(d, "10.0.2.3", 1000, 2, "b.example.com", 1, 0);
	n = dns_msg(m, 2, true, "b.example.com", 1, 2);
	n = dns_rr_a(m, n, NULL, "2.2.2.2", 60);
	m[n] = 0xc0;
	m[n + 1] = (uint8_t)n; /* points at itself */
	memcpy(m + n + 2, "\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04\x02\x02\x02\x03", 14);
	n += 16;
	assert_int_equal(answer(d, "10.0.2.3", 1000, m, n, false, S), -EINVAL);
	assert_int_equal(names(d, "2.2.2.2", S, nm), 0);

	/* Cut short: nothing binds, unless the caller says partial is fine (a
	 * first fragment); then the whole records before the cut do. */
	ask(d, "10.0.2.3", 1000, 3, "c.example.com", 1, 0);
	n = dns_msg(m, 3, true, "c.example.com", 1, 2);
	n = dns_rr_a(m, n, NULL, "3.3.3.3", 60);
	full = dns_rr_a(m, n, NULL, "3.3.3.4", 60);
	assert_int_equal(answer(d, "10.0.2.3", 1000, m, full - 1, false, S), -EINVAL);
	ask(d, "10.0.2.3", 1000, 3, "c.example.com", 1, 0);
	assert_int_equal(answer(d, "10.0.2.3", 1000, m, full - 1, true, S), 1);
	assert_int_equal(names(d, "3.3.3.3", S, nm), 1);
	assert_int_equal(names(d, "3.3.3.4", S, nm), 0);

	/* An A record of the wrong length. */
	ask(d, "10.0.2.3", 1000, 4, "d.example.com", 1, 0);
	n = dns_msg(m, 4, true, "d.example.com", 1, 1);
	n = dns_rr(m, n, NULL, 1, 60, "\x04\x04\x04\x04\x04", 5);
	assert_int_equal(answer(d, "10.0.2.3", 1000, m, n, false, S), 0);
}

/* Every cut of a genuine answer: no over-read, no binding from a malformed one. */
static void test_truncated_answers(void **state)
{
	struct dns_bind *d = *state;
	uint8_t m[512], t[64];
	size_t n, tl;

	n = dns_msg(m, 9, true, "api.github.com", 1, 2);
	tl = dns_put_name(t, "x.github.io");
	n = dns_rr(m, n, NULL, 5, 60, t, (uint16_t)tl);
	n = dns_rr_a(m, n, "x.github.io", "1.2.3.4", 60);
	for (size_t cut = 0; cut < n; cut++) {
		ask(d, "10.0.2.3", 1000, 9, "api.github.com", 1, 0);
		assert_true(answer(d, "10.0.2.3", 1000, m, cut, false, S) < 0);
	}
	assert_int_equal(d->count, 0);
	ask(d, "10.0.2.3", 1000, 9, "api.github.com", 1, 0);
	assert_int_equal(answer(d, "10.0.2.3", 1000, m, n, false, S), 1);
}

static void test_ttl_clamp(void **state)
{
	struct dns_bind *d = *state;
	uint8_t m[512];
	const char *nm[DNS_BIND_PER_ADDR];
	size_t n;

	ask(d, "10.0.2.3", 1000, 1, "short.example.com", 1, 0);
	n = dns_msg(m, 1, true, "short.example.com", 1, 1);
	n = dns_rr_a(m, n, NULL, "1.1.1.1", 0);
	assert_int_equal(answer(d, "10.0.2.3", 1000, m, n, false, 0), 1);
	ask(d, "10.0.2.3", 1000, 2, "long.example.com", 1, 0);
	n = dns_msg(m, 2, true, "long.example.com", 1, 1);
	n = dns_rr_a(m, n, NULL, "2.2.2.2", 7 * 86400);
	assert_int_equal(answer(d, "10.0.2.3", 1000, m, n, false, 0), 1);
	/* TTL 0 still binds for the minimum; a week binds for the maximum. */
	assert_int_equal(names(d, "1.1.1.1", (DNS_TTL_MIN_S - 1) * S, nm), 1);
	assert_int_equal(names(d, "1.1.1.1", DNS_TTL_MIN_S * S, nm), 0);
	assert_int_equal(names(d, "2.2.2.2", (DNS_TTL_MAX_S - 1) * S, nm), 1);
	assert_int_equal(names(d, "2.2.2.2", DNS_TTL_MAX_S * S, nm), 0);
	/* Expired bindings are still there for re-deciding flows, until replaced. */
	{
		struct net_addr a = ip("2.2.2.2");

		assert_int_equal(dns_bind_names_any(d, &a, nm, DNS_BIND_PER_ADDR), 1);
	}
}

static void bind_name(struct dns_bind *d, const char *name, const char *addr, uint32_t ttl,
		      uint64_t now)
{
	static uint16_t id;
	uint8_t m[512];
	size_t n;

	id++;
	ask(d, "10.0.2.3", 1000, id, name, 1, now);
	n = dns_msg(m, id, true, name, 1, 1);
	n = dns_rr_a(m, n, NULL, addr, ttl);
	assert_int_equal(answer(d, "10.0.2.3", 1000, m, n, false, now), 1);
}

static void test_table_limits(void **state)
{
	struct dns_bind *d = *state; /* 16 bindings */
	const char *nm[DNS_BIND_PER_ADDR];
	char name[64], addr[32];

	/* Many names for one address: at most DNS_BIND_PER_ADDR, the closest to expiry gives way. */
	for (int i = 0; i < DNS_BIND_PER_ADDR + 3; i++) {
		snprintf(name, sizeof(name), "n%d.example.com", i);
		bind_name(d, name, "9.9.9.9", 100 + (uint32_t)i, 0);
	}
	assert_int_equal(names(d, "9.9.9.9", 0, nm), DNS_BIND_PER_ADDR);
	assert_int_equal(d->count, DNS_BIND_PER_ADDR);
	for (size_t i = 0; i < DNS_BIND_PER_ADDR; i++)
		assert_string_not_equal(nm[i], "n0.example.com");
	/* The whole table: never more than its capacity. */
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "m%d.example.com", i);
		snprintf(addr, sizeof(addr), "8.8.%d.%d", i / 256, i % 256);
		bind_name(d, name, addr, 200 + (uint32_t)i, 0);
	}
	assert_int_equal(d->count, 16);
	assert_int_equal(names(d, "8.8.0.39", 0, nm), 1); /* the newest is in */
	assert_int_equal(names(d, "8.8.0.0", 0, nm), 0);  /* the one nearest expiry went */
	/* Pending queries: at most DNS_PENDING_MAX; the oldest are forgotten. */
	for (int i = 0; i < DNS_PENDING_MAX + 10; i++)
		ask(d, "10.0.2.3", 2000, (uint16_t)(5000 + i), "p.example.com", 1, (uint64_t)i);
	{
		int used = 0;

		for (int i = 0; i < DNS_PENDING_MAX; i++)
			used += d->pending[i].used;
		assert_int_equal(used, DNS_PENDING_MAX);
	}
	/* Only A and AAAA are worth remembering. */
	memset(d->pending, 0, sizeof(d->pending));
	ask(d, "10.0.2.3", 2000, 1, "p.example.com", 16 /* TXT */, 0);
	for (int i = 0; i < DNS_PENDING_MAX; i++)
		assert_false(d->pending[i].used);
}

/* Random bytes after a genuine question: no report, no binding from garbage owners. */
static void test_fuzz_answers(void **state)
{
	struct dns_bind *d = *state;
	uint64_t seed = 42;
	uint8_t m[512];

	for (int it = 0; it < 50000; it++) {
		size_t n = dns_msg(m, 77, true, "f.example.com", 1, (uint16_t)(fr_rand(&seed) % 8));
		size_t extra = fr_rand(&seed) % 200;

		for (size_t k = 0; k < extra; k++)
			m[n + k] = (uint8_t)fr_rand(&seed);
		/* Sprinkle pointers. */
		if (extra > 2 && fr_rand(&seed) % 2)
			m[n + fr_rand(&seed) % (extra - 1)] = 0xc0;
		ask(d, "10.0.2.3", 1000, 77, "f.example.com", 1, 0);
		answer(d, "10.0.2.3", 1000, m, n + extra, fr_rand(&seed) % 2, S);
	}
	assert_true(d->count <= d->capacity);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_name_decode),
		cmocka_unit_test(test_pointer_chain),
		cmocka_unit_test(test_query_parse),
		cmocka_unit_test_setup_teardown(test_bind_answer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_spoofed_answers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unrelated_and_cname, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rcode_and_malformed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncated_answers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ttl_clamp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_table_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fuzz_answers, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
