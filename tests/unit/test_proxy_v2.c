/*
 * proxy_v2: the PROXY protocol v2 header of a steered flow
 * (lib/netrules/proxy_v2.c). Round trips, every refusal with its message,
 * a header cut at every byte, and bytes laid out by hand from the
 * specification (HAProxy's proxy-protocol.txt, 2.2) rather than by the
 * encoder under test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "lib/netrules/proxy_v2.h"

static const uint8_t SIG[12] = { 0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d,
				 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a };

/* 10.0.2.15:40000 -> 140.82.112.5:443 with AUTHORITY "api.github.com",
 * written out byte by byte. */
static size_t by_hand(uint8_t *b)
{
	static const uint8_t rest[] = {
		0x21, 0x11, 0x00, 12 + 3 + 14,                /* v2 PROXY, TCP4, length */
		10,   0,    2,    15,                         /* source */
		140,  82,   112,  5,                          /* destination */
		0x9c, 0x40, 0x01, 0xbb,                       /* 40000, 443 */
		0x02, 0x00, 14,   'a',         'p', 'i', '.', /* AUTHORITY */
		'g',  'i',  't',  'h',         'u', 'b', '.', 'c', 'o', 'm',
	};

	memcpy(b, SIG, 12);
	memcpy(b + 12, rest, sizeof(rest));
	return 12 + sizeof(rest);
}

static void test_decodes_the_specifications_bytes(void **state)
{
	uint8_t b[PROXY_V2_MAX];
	size_t n = by_hand(b), need;
	struct proxy_v2 h;
	struct err e = { { 0 } };

	(void)state;
	assert_int_equal(proxy_v2_decode(b, n, &h, &need, &e), (int)n);
	assert_int_equal(h.family, AF_INET);
	assert_memory_equal(h.src, ((uint8_t[]){ 10, 0, 2, 15 }), 4);
	assert_memory_equal(h.dst, ((uint8_t[]){ 140, 82, 112, 5 }), 4);
	assert_int_equal(h.sport, 40000);
	assert_int_equal(h.dport, 443);
	assert_string_equal(h.authority, "api.github.com");
	/* read as the filter's rules read a host: lower-cased */
	memcpy(b + 31, "API", 3);
	assert_int_equal(proxy_v2_decode(b, n, &h, &need, &e), (int)n);
	assert_string_equal(h.authority, "api.github.com");
}

static void test_encodes_the_same_bytes(void **state)
{
	uint8_t want[PROXY_V2_MAX], got[PROXY_V2_MAX];
	size_t n = by_hand(want);
	struct proxy_v2 h = { .family = AF_INET, .sport = 40000, .dport = 443 };

	(void)state;
	memcpy(h.src, (uint8_t[]){ 10, 0, 2, 15 }, 4);
	memcpy(h.dst, (uint8_t[]){ 140, 82, 112, 5 }, 4);
	strcpy(h.authority, "api.github.com");
	assert_int_equal(proxy_v2_encode(&h, got, sizeof(got)), (int)n);
	assert_memory_equal(got, want, n);
	assert_int_equal(proxy_v2_encode(&h, got, n - 1), -ENOSPC);
}

static void test_ipv6_without_authority_round_trips(void **state)
{
	uint8_t b[PROXY_V2_MAX];
	struct proxy_v2 h = { .family = AF_INET6, .sport = 1, .dport = 80 }, g;
	struct err e = { { 0 } };
	size_t need;
	int n;

	(void)state;
	assert_int_equal(inet_pton(AF_INET6, "fd00::15", h.src), 1);
	assert_int_equal(inet_pton(AF_INET6, "2001:db8::7", h.dst), 1);
	n = proxy_v2_encode(&h, b, sizeof(b));
	assert_int_equal(n, 16 + 36);
	assert_int_equal(b[13], 0x21);
	assert_int_equal(proxy_v2_decode(b, (size_t)n, &g, &need, &e), n);
	assert_memory_equal(g.src, h.src, 16);
	assert_memory_equal(g.dst, h.dst, 16);
	assert_int_equal(g.dport, 80);
	assert_string_equal(g.authority, "");
}

/* Cut anywhere before its end, a good header asks for more, and never for
 * more than it is; what follows it (the guest's first bytes) is not read. */
static void test_every_cut_asks_for_more(void **state)
{
	uint8_t b[PROXY_V2_MAX + 64];
	size_t n = by_hand(b), need;
	struct proxy_v2 h;
	struct err e = { { 0 } };

	(void)state;
	for (size_t cut = 0; cut < n; cut++) {
		assert_int_equal(proxy_v2_decode(b, cut, &h, &need, &e), 0);
		assert_true(need > cut && need <= n);
	}
	memcpy(b + n, "GET / HTTP/1.1\r\n", 16);
	assert_int_equal(proxy_v2_decode(b, n + 16, &h, &need, &e), (int)n);
}

static void refused(const uint8_t *b, size_t n, int code, const char *phrase)
{
	struct proxy_v2 h;
	struct err e = { { 0 } };
	size_t need;

	assert_int_equal(proxy_v2_decode(b, n, &h, &need, &e), -code);
	if (!strstr(e.msg, phrase))
		fail_msg("message '%s' lacks '%s'", e.msg, phrase);
}

static void test_refusals(void **state)
{
	uint8_t b[PROXY_V2_MAX + 64], c[PROXY_V2_MAX + 64];
	size_t n = by_hand(b);

	(void)state;
	refused((const uint8_t *)"PROXY TCP4 1.2.3.4", 18, EPROTO, "no signature");
	refused((const uint8_t *)"\r\n\r\nX", 5, EPROTO, "no signature"); /* at once */
	memcpy(c, b, n), c[12] = 0x20;                                    /* LOCAL */
	refused(c, n, EPROTO, "only 0x21");
	memcpy(c, b, n), c[12] = 0x31; /* version 3 */
	refused(c, n, EPROTO, "only 0x21");
	memcpy(c, b, n), c[13] = 0x12; /* UDP */
	refused(c, n, EPROTO, "only TCP");
	memcpy(c, b, n), c[13] = 0x31; /* UNIX */
	refused(c, n, EPROTO, "only TCP");
	memcpy(c, b, n), c[14] = 0x0a; /* 2560+ bytes */
	refused(c, n, EMSGSIZE, "at most 2560");
	memcpy(c, b, n), c[14] = 0, c[15] = 11; /* short of the addresses */
	refused(c, n, EPROTO, "the addresses need 12");
	memcpy(c, b, n), c[24] = c[25] = 0; /* source port 0 */
	refused(c, n, EPROTO, "port 0");
	/* a TLV longer than what is left */
	memcpy(c, b, n), c[30] = 15;
	refused(c, n, EPROTO, "TLV 0x02 says 15 bytes");
	/* a TLV's head cut short: the length covers 2 bytes of a 3-byte head */
	memcpy(c, b, 28), c[15] = 12 + 2, c[28] = 0x04, c[29] = 0;
	refused(c, 30, EPROTO, "cut short");
	/* AUTHORITY that is not a host name, empty, or twice */
	memcpy(c, b, n), c[32] = '\n';
	refused(c, n, EPROTO, "not a host name");
	memcpy(c, b, n), c[31] = '.';
	refused(c, n, EPROTO, "not a host name");
	memcpy(c, b, n), c[35] = '.'; /* "api..ithub.com" */
	refused(c, n, EPROTO, "not a host name");
	memcpy(c, b, 28), c[15] = 12 + 3, c[28] = 2, c[29] = 0, c[30] = 0;
	refused(c, 31, EPROTO, "not a host name");
	memcpy(c, b, n), memcpy(c + n, b + 28, 17), c[15] = (uint8_t)(c[15] + 17);
	refused(c, n + 17, EPROTO, "a second AUTHORITY");
}

/* Other senders' TLVs (NOOP, ALPN, a CRC) are skipped, as the
 * specification asks of a receiver. */
static void test_unknown_tlvs_are_skipped(void **state)
{
	uint8_t b[PROXY_V2_MAX];
	size_t n = by_hand(b), need;
	struct proxy_v2 h;
	struct err e = { { 0 } };
	static const uint8_t extra[] = { 0x04, 0x00, 0x02, 0xff, 0xff, 0x01, 0x00, 0x02, 'h', '2' };

	(void)state;
	memcpy(b + n, extra, sizeof(extra));
	b[15] = (uint8_t)(b[15] + sizeof(extra));
	assert_int_equal(proxy_v2_decode(b, n + sizeof(extra), &h, &need, &e),
			 (int)(n + sizeof(extra)));
	assert_string_equal(h.authority, "api.github.com");
}

/* The other names the filter bound to the destination (names of one CDN
 * share addresses): after the AUTHORITY, each ended by NUL. */
static void test_other_names_round_trip(void **state)
{
	uint8_t b[PROXY_V2_MAX], c[PROXY_V2_MAX];
	struct proxy_v2 h = { .family = AF_INET, .sport = 40000, .dport = 443 }, g;
	struct err e = { { 0 } };
	size_t need;
	int n;

	(void)state;
	strcpy(h.authority, "pypi.org");
	strcpy(h.also[0], "files.pythonhosted.org");
	strcpy(h.also[1], "x.test");
	h.n_also = 2;
	n = proxy_v2_encode(&h, b, sizeof(b));
	assert_int_equal(n, 16 + 12 + 3 + 8 + 3 + 23 + 7);
	assert_int_equal(b[16 + 12 + 3 + 8], PROXY_V2_TYPE_KILN_NAMES);
	assert_int_equal(proxy_v2_decode(b, (size_t)n, &g, &need, &e), n);
	assert_string_equal(g.authority, "pypi.org");
	assert_int_equal(g.n_also, 2);
	assert_string_equal(g.also[0], "files.pythonhosted.org");
	assert_string_equal(g.also[1], "x.test");
	assert_true(proxy_v2_names(&g, "pypi.org"));
	assert_true(proxy_v2_names(&g, "Files.PythonHosted.org."));
	assert_true(proxy_v2_names(&g, "x.test"));
	assert_false(proxy_v2_names(&g, "y.test"));
	assert_false(proxy_v2_names(&g, "pypi.or"));
	assert_false(proxy_v2_names(&g, ""));
	/* Bytes 39..71: the TLV (type, length 30), "files.pythonhosted.org\0x.test\0".
	 * Refused: not ended by NUL, an empty name, a bad one, twice, without AUTHORITY. */
	memcpy(c, b, (size_t)n), c[n - 1] = 't';
	refused(c, (size_t)n, EPROTO, "not ended by NUL");
	memcpy(c, b, (size_t)n), c[65] = '\0';
	refused(c, (size_t)n, EPROTO, "KILN_NAMES name 2 is not a host name");
	memcpy(c, b, (size_t)n), c[67] = ' ';
	refused(c, (size_t)n, EPROTO, "KILN_NAMES name 2 is not a host name");
	memcpy(c, b, (size_t)n), memcpy(c + n, b + 39, 33), c[15] = (uint8_t)(c[15] + 33);
	refused(c, (size_t)n + 33, EPROTO, "KILN_NAMES repeated");
	memcpy(c, b, 28), memcpy(c + 28, b + 39, 33), c[14] = 0, c[15] = 12 + 33;
	refused(c, 28 + 33, EPROTO, "without an AUTHORITY");
	h.authority[0] = '\0';
	assert_int_equal(proxy_v2_encode(&h, b, sizeof(b)), -EINVAL);
	strcpy(h.authority, "pypi.org");
	/* at most PROXY_V2_NAMES_MAX - 1 others */
	h.n_also = PROXY_V2_NAMES_MAX;
	for (size_t i = 0; i < PROXY_V2_NAMES_MAX - 1; i++)
		strcpy(h.also[i], "x.test");
	assert_int_equal(proxy_v2_encode(&h, b, sizeof(b)), -EINVAL);
	h.n_also = PROXY_V2_NAMES_MAX - 1;
	n = proxy_v2_encode(&h, b, sizeof(b));
	assert_true(n > 0);
	/* an eighth other name appended to the TLV */
	memcpy(b + n, "x.test", 7);
	b[41] = (uint8_t)(b[41] + 7);
	b[15] = (uint8_t)(b[15] + 7);
	refused(b, (size_t)n + 7, EPROTO, "over 7 names");
}

static void test_encode_refuses_what_decode_would(void **state)
{
	uint8_t b[PROXY_V2_MAX];
	struct proxy_v2 h = { .family = AF_INET, .sport = 1, .dport = 443 };

	(void)state;
	h.family = AF_UNIX;
	assert_int_equal(proxy_v2_encode(&h, b, sizeof(b)), -EINVAL);
	h.family = AF_INET, h.dport = 0;
	assert_int_equal(proxy_v2_encode(&h, b, sizeof(b)), -EINVAL);
	h.dport = 443;
	strcpy(h.authority, "bad name");
	assert_int_equal(proxy_v2_encode(&h, b, sizeof(b)), -EINVAL);
	/* one label of 64: not a DNS name */
	memset(h.authority, 'a', 64);
	h.authority[64] = '\0';
	assert_int_equal(proxy_v2_encode(&h, b, sizeof(b)), -EINVAL);
	/* the longest name: 63.63.63.61 */
	memset(h.authority, 'a', PROXY_V2_AUTHORITY_MAX);
	h.authority[63] = h.authority[127] = h.authority[191] = '.';
	h.authority[PROXY_V2_AUTHORITY_MAX] = '\0';
	assert_int_equal(proxy_v2_encode(&h, b, sizeof(b)), 16 + 12 + 3 + PROXY_V2_AUTHORITY_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decodes_the_specifications_bytes),
		cmocka_unit_test(test_encodes_the_same_bytes),
		cmocka_unit_test(test_ipv6_without_authority_round_trips),
		cmocka_unit_test(test_every_cut_asks_for_more),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_unknown_tlvs_are_skipped),
		cmocka_unit_test(test_other_names_round_trip),
		cmocka_unit_test(test_encode_refuses_what_decode_would),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
