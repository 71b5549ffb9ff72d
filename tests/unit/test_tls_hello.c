/*
 * tls_hello: the ClientHellos OpenSSL really sends (tls_hello_capture.h,
 * captured from `openssl s_client` and curl against `openssl s_server`) read as
 * what they are, whole, cut anywhere and re-fragmented; and every
 * refusal, built here byte by byte, with its exact message.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/netrules/tls_hello.h"
#include "tests/unit/tls_hello_capture.h"

#define BUF_MAX (TLS_HELLO_MAX * 2)

struct buf {
	uint8_t b[BUF_MAX];
	size_t n;
};

static void put(struct buf *o, const void *p, size_t n)
{
	assert_true(o->n + n <= sizeof(o->b));
	memcpy(o->b + o->n, p, n);
	o->n += n;
}

static void put8(struct buf *o, unsigned v)
{
	uint8_t b = (uint8_t)v;

	put(o, &b, 1);
}

static void put16(struct buf *o, unsigned v)
{
	put8(o, v >> 8);
	put8(o, v);
}

/* An extension: type, length, data. */
static void ext(struct buf *x, unsigned type, const void *data, size_t n)
{
	put16(x, type);
	put16(x, (unsigned)n);
	put(x, data, n);
}

/* server_name with one host_name entry. */
static void ext_sni(struct buf *x, const char *name)
{
	struct buf d = { .n = 0 };
	size_t n = strlen(name);

	put16(&d, (unsigned)(n + 3));
	put8(&d, 0);
	put16(&d, (unsigned)n);
	put(&d, name, n);
	ext(x, 0, d.b, d.n);
}

/* A ClientHello message (handshake header included) with the extensions
 * block x (NULL: none at all). */
static void hello_msg(struct buf *m, const struct buf *x)
{
	struct buf body = { .n = 0 };
	static const uint8_t random[32] = { 1, 2, 3 };

	put16(&body, 0x0303);
	put(&body, random, 32);
	put8(&body, 0);  /* session_id */
	put16(&body, 2); /* cipher_suites */
	put16(&body, 0x1301);
	put8(&body, 1); /* compression_methods */
	put8(&body, 0);
	if (x) {
		put16(&body, (unsigned)x->n);
		put(&body, x->b, x->n);
	}
	put8(m, 1);
	put8(m, (unsigned)(body.n >> 16));
	put16(m, (unsigned)(body.n & 0xffff));
	put(m, body.b, body.n);
}

/* msg in records of at most frag bytes each. */
static void records(struct buf *o, const uint8_t *msg, size_t n, size_t frag)
{
	for (size_t off = 0; off < n; off += frag) {
		size_t k = n - off < frag ? n - off : frag;

		put8(o, 22);
		put16(o, 0x0301);
		put16(o, (unsigned)k);
		put(o, msg + off, k);
	}
}

/* A whole single-record ClientHello with the extensions block x. */
static void hello(struct buf *o, const struct buf *x)
{
	struct buf m = { .n = 0 };

	o->n = 0;
	hello_msg(&m, x);
	records(o, m.b, m.n, 16384);
}

static enum tls_hello_status read_buf(const struct buf *o, struct tls_hello *h, struct err *e)
{
	return tls_hello_read(o->b, o->n, h, e);
}

static void refused_bytes(const uint8_t *b, size_t n, const char *msg)
{
	struct tls_hello h;
	struct err e = { "" };
	enum tls_hello_status s = tls_hello_read(b, n, &h, &e);

	if (s != TLS_HELLO_MALFORMED)
		fail_msg("status %s, want malformed with: %s", tls_hello_status_name(s), msg);
	assert_string_equal(e.msg, msg);
	assert_false(h.has_sni);
	assert_int_equal(h.len, 0);
}

static void refused(const struct buf *o, const char *msg)
{
	refused_bytes(o->b, o->n, msg);
}

/* A hello with one server_name of `name`, refused with msg. */
static void sni_refused(const char *name, const char *msg)
{
	struct buf x = { .n = 0 }, o;

	ext_sni(&x, name);
	hello(&o, &x);
	refused(&o, msg);
}

static void sni_ok(const char *name, const char *want)
{
	struct buf x = { .n = 0 }, o;
	struct tls_hello h;
	struct err e = { "" };

	ext_sni(&x, name);
	hello(&o, &x);
	if (read_buf(&o, &h, &e) != TLS_HELLO_OK)
		fail_msg("'%s' refused: %s", name, e.msg);
	assert_true(h.has_sni);
	assert_string_equal(h.sni, want);
}

/* What OpenSSL sends with ALPN: TLS 1.3, SNI x.test, h2 and http/1.1. */
static void test_capture_alpn(void **state)
{
	struct tls_hello h;
	struct err e = { "" };

	(void)state;
	if (tls_hello_read(capture_alpn, sizeof(capture_alpn), &h, &e) != TLS_HELLO_OK)
		fail_msg("the real ClientHello refused: %s", e.msg);
	assert_int_equal(h.len, sizeof(capture_alpn));
	assert_true(h.has_sni);
	assert_string_equal(h.sni, "x.test");
	assert_true(h.has_alpn);
	assert_true(h.alpn_h2);
	assert_true(h.alpn_http11);
	assert_true(h.tls13);
	assert_false(h.ech);
	assert_int_equal(h.record_version, 0x0301);
	assert_int_equal(h.version, 0x0303);
}

/* -tls1_2: no supported_versions with 1.3, no ALPN, SNI still. */
static void test_capture_tls12(void **state)
{
	struct tls_hello h;
	struct err e = { "" };

	(void)state;
	if (tls_hello_read(capture_tls12, sizeof(capture_tls12), &h, &e) != TLS_HELLO_OK)
		fail_msg("the real ClientHello refused: %s", e.msg);
	assert_int_equal(h.len, sizeof(capture_tls12));
	assert_string_equal(h.sni, "x.test");
	assert_false(h.has_alpn);
	assert_false(h.tls13);
}

/* curl's, padded to 512 bytes (RFC 7685), h2 first. */
static void test_capture_curl(void **state)
{
	struct tls_hello h;
	struct err e = { "" };

	(void)state;
	if (tls_hello_read(capture_curl, sizeof(capture_curl), &h, &e) != TLS_HELLO_OK)
		fail_msg("curl's ClientHello refused: %s", e.msg);
	assert_int_equal(h.len, sizeof(capture_curl));
	assert_string_equal(h.sni, "x.test");
	assert_true(h.alpn_h2 && h.alpn_http11 && h.tls13);
}

/* Every cut of the capture asks for more, never past the whole, and
 * bytes after it (early data, the next flight) are not its business. */
static void test_capture_cut(void **state)
{
	uint8_t more[sizeof(capture_alpn) + 10];
	struct tls_hello h;

	(void)state;
	for (size_t k = 0; k < sizeof(capture_alpn); k++) {
		assert_int_equal(tls_hello_read(capture_alpn, k, &h, NULL), TLS_HELLO_NEED_MORE);
		assert_true(h.need > k && h.need <= sizeof(capture_alpn));
	}
	memcpy(more, capture_alpn, sizeof(capture_alpn));
	memcpy(more + sizeof(capture_alpn), "\x17\x03\x03\x00\x05hello", 10);
	assert_int_equal(tls_hello_read(more, sizeof(more), &h, NULL), TLS_HELLO_OK);
	assert_int_equal(h.len, sizeof(capture_alpn));
}

/* The capture's message fragmented over records of 1, 7 and 100 bytes. */
static void test_capture_fragmented(void **state)
{
	static const size_t frags[] = { 1, 7, 100 };
	const uint8_t *msg = capture_alpn + 5;
	size_t n = sizeof(capture_alpn) - 5;

	(void)state;
	for (size_t i = 0; i < sizeof(frags) / sizeof(frags[0]); i++) {
		struct buf o = { .n = 0 };
		struct tls_hello h;
		struct err e = { "" };

		records(&o, msg, n, frags[i]);
		if (read_buf(&o, &h, &e) != TLS_HELLO_OK)
			fail_msg("in records of %zu: %s", frags[i], e.msg);
		assert_int_equal(h.len, o.n);
		assert_string_equal(h.sni, "x.test");
		assert_true(h.alpn_h2);
		for (size_t k = 0; k < o.n; k++)
			assert_int_equal(tls_hello_read(o.b, k, &h, NULL), TLS_HELLO_NEED_MORE);
	}
}

static void test_not_tls(void **state)
{
	struct tls_hello h;
	struct err e = { "" };

	(void)state;
	assert_int_equal(tls_hello_read((const uint8_t *)"GET / HTTP/1.1\r\n", 16, &h, &e),
			 TLS_HELLO_NOT_TLS);
	assert_string_equal(e.msg, "not TLS: the first byte is 0x47, not a handshake record (22)");
	/* SSL 2.0's record header. */
	assert_int_equal(tls_hello_read((const uint8_t *)"\x80\x2e\x01", 3, &h, &e),
			 TLS_HELLO_NOT_TLS);
	assert_int_equal(tls_hello_read(NULL, 0, &h, &e), TLS_HELLO_NEED_MORE);
	assert_int_equal(h.need, 1);
	assert_int_equal(tls_hello_read((const uint8_t *)"\x16\x03", 2, &h, &e),
			 TLS_HELLO_NEED_MORE);
	assert_int_equal(h.need, 5);
	assert_string_equal(tls_hello_status_name(TLS_HELLO_NOT_TLS), "not TLS");
}

static void test_records(void **state)
{
	struct buf o, m = { .n = 0 }, x = { .n = 0 };

	(void)state;
	refused_bytes((const uint8_t *)"\x16\x02\x00\x00\x10", 5,
		      "TLS ClientHello: record version 2.0 at byte 0 is not TLS (3.x)");
	refused_bytes(
		(const uint8_t *)"\x16\x03\x01\x00\x00", 5,
		"TLS ClientHello: record at byte 0 has length 0; a handshake record holds 1..16384 bytes");
	refused_bytes(
		(const uint8_t *)"\x16\x03\x01\x40\x01", 5,
		"TLS ClientHello: record at byte 0 has length 16385; a handshake record holds 1..16384 bytes");
	refused_bytes((const uint8_t *)"\x16\x03\x01\x00\x01\x02", 6,
		      "TLS ClientHello: handshake message type 2, not client_hello (1)");
	refused_bytes((const uint8_t *)"\x16\x03\x01\x00\x04\x01\x00\x40\x00", 9,
		      "TLS ClientHello: its length 16384 is more than the 16375 bytes kiln reads");

	/* Another record between two fragments. */
	ext_sni(&x, "x.test");
	hello_msg(&m, &x);
	o.n = 0;
	records(&o, m.b, 20, 20);
	put(&o, "\x17\x03\x03\x00\x01\x00", 6);
	refused(&o,
		"TLS ClientHello: a record of type 23 at byte 25, inside the ClientHello (its fragments must follow each other)");

	/* Bytes after the message in its record. */
	put(&m, "\x0f\x00\x00\x00", 4);
	o.n = 0;
	records(&o, m.b, m.n, 16384);
	refused(&o,
		"TLS ClientHello: 4 bytes follow it in its record; the client's first flight is the ClientHello alone");

	/* A message that fits, in so many records that they do not. */
	x.n = 0;
	for (int i = 0; i < 500; i++)
		ext(&x, 0x1000 + (unsigned)i, "abcd", 4);
	m.n = 0;
	hello_msg(&m, &x);
	o.n = 0;
	records(&o, m.b, m.n, 1);
	refused(&o,
		"TLS ClientHello: its records span more than 16384 bytes; kiln reads no larger ClientHello");
	/* Cut where the next record's header would end past the bound: refused
	 * then, never a `need` past TLS_HELLO_MAX (16380 is 2730 records of 6). */
	refused_bytes(
		o.b, 16380,
		"TLS ClientHello: its records span more than 16384 bytes; kiln reads no larger ClientHello");
	for (size_t k = 0; k < 16380; k += 997) {
		struct tls_hello h;

		assert_int_equal(tls_hello_read(o.b, k, &h, NULL), TLS_HELLO_NEED_MORE);
		assert_true(h.need <= TLS_HELLO_MAX);
	}
	o.n = 0;
	records(&o, m.b, m.n, 16384);
	assert_int_equal(tls_hello_read(o.b, o.n, &(struct tls_hello){ 0 }, NULL), TLS_HELLO_OK);
}

/* Overwrite byte at of a copy of the plain hello (no extensions) and expect msg. */
static void body_refused(size_t at, const uint8_t *with, size_t n, size_t cut, const char *msg)
{
	struct buf o;

	hello(&o, NULL);
	memcpy(o.b + at, with, n);
	o.n -= cut;
	/* keep the record and handshake lengths true to the cut */
	o.b[3] = (uint8_t)((o.n - 5) >> 8);
	o.b[4] = (uint8_t)(o.n - 5);
	o.b[7] = (uint8_t)((o.n - 9) >> 8);
	o.b[8] = (uint8_t)(o.n - 9);
	refused(&o, msg);
}

static void test_body(void **state)
{
	struct buf o, x = { .n = 0 };
	struct tls_hello h;
	struct err e = { "" };

	(void)state;
	/* No extensions at all: TLS 1.2 allows it, and there is no SNI. */
	hello(&o, NULL);
	assert_int_equal(read_buf(&o, &h, &e), TLS_HELLO_OK);
	assert_false(h.has_sni);
	assert_string_equal(h.sni, "");

	/* Offsets: record 5 + handshake 4; version at 9, random 11..42,
	 * session_id length 43, suites 44..47, compression 48..49. */
	body_refused(9, (const uint8_t *)"\x03\x00", 2, 0,
		     "TLS ClientHello: legacy_version 0x0300 is not TLS 1.0..1.2 (0x0301..0x0303)");
	body_refused(43, (const uint8_t *)"\x21", 1, 0,
		     "TLS ClientHello: session_id of 33 bytes; at most 32");
	body_refused(
		44, (const uint8_t *)"\x00\x03", 2, 0,
		"TLS ClientHello: cipher_suites is not a list of 2-byte suites inside the message");
	body_refused(48, (const uint8_t *)"\x00", 1, 0,
		     "TLS ClientHello: compression_methods is empty or runs past the message");
	body_refused(0, (const uint8_t *)"\x16", 1, 2,
		     "TLS ClientHello: 39 bytes long; the smallest is 41");

	/* Extensions whose length is not the rest of the message. */
	ext(&x, 23, "", 0);
	hello(&o, &x);
	o.b[50]++;
	refused(&o,
		"TLS ClientHello: the extensions' length does not reach exactly to the message's end");
	x.n = 0;
	put16(&x, 23);
	put16(&x, 9);
	hello(&o, &x);
	refused(&o, "TLS ClientHello: an extension runs past the extensions' length");
}

static void test_extensions(void **state)
{
	struct buf o, x = { .n = 0 };
	struct tls_hello h;

	(void)state;
	ext(&x, 23, "", 0);
	ext(&x, 23, "", 0);
	hello(&o, &x);
	refused(&o, "TLS ClientHello: extension 23 appears twice");

	x.n = 0;
	ext_sni(&x, "a.test");
	ext_sni(&x, "b.test");
	hello(&o, &x);
	refused(&o, "TLS ClientHello: extension 0 appears twice");

	x.n = 0;
	ext(&x, 41, "psk", 3);
	ext(&x, 23, "", 0);
	hello(&o, &x);
	refused(&o, "TLS ClientHello: pre_shared_key is not the last extension (RFC 8446 4.2.11)");

	/* Last, it is fine; encrypted_client_hello is noticed. */
	x.n = 0;
	ext_sni(&x, "public.example");
	ext(&x, 0xfe0d, "ech", 3);
	ext(&x, 41, "psk", 3);
	hello(&o, &x);
	assert_int_equal(read_buf(&o, &h, NULL), TLS_HELLO_OK);
	assert_true(h.ech);
	assert_string_equal(h.sni, "public.example");

	/* ALPN: an empty name, a list that does not fill the extension. */
	x.n = 0;
	ext(&x, 16, "\x00\x03\x02h2\x00", 6);
	hello(&o, &x);
	refused(&o,
		"TLS ClientHello: ALPN extension: its list does not fill it exactly, or is empty");
	x.n = 0;
	ext(&x, 16, "\x00\x04\x02h2\x00", 6);
	hello(&o, &x);
	refused(&o, "TLS ClientHello: ALPN protocol name runs past its list, or is empty");
	x.n = 0;
	ext(&x, 16, "\x00\x03\x02h3", 5);
	hello(&o, &x);
	assert_int_equal(read_buf(&o, &h, NULL), TLS_HELLO_OK);
	assert_true(h.has_alpn);
	assert_false(h.alpn_h2 || h.alpn_http11);

	x.n = 0;
	ext(&x, 43, "\x03\x03\x04\x03", 4);
	hello(&o, &x);
	refused(&o,
		"TLS ClientHello: supported_versions extension: not a list of 2-byte versions filling it");
}

static void test_server_name_list(void **state)
{
	struct buf o, x = { .n = 0 };

	(void)state;
	/* Two host_name entries in one list (RFC 6066: one of each type). */
	ext(&x, 0, "\x00\x0e\x00\x00\x04\x61.bc\x00\x00\x04\x64.ef", 16);
	hello(&o, &x);
	refused(&o, "TLS ClientHello: server_name has two host_name entries (RFC 6066 allows one)");
	x.n = 0;
	ext(&x, 0, "\x00\x07\x01\x00\x04x.yz", 9);
	hello(&o, &x);
	refused(&o,
		"TLS ClientHello: server_name entry of type 1; host_name (0) is the only one defined");
	x.n = 0;
	ext(&x, 0, "\x00\x00", 2);
	hello(&o, &x);
	refused(&o,
		"TLS ClientHello: server_name extension: its list does not fill it exactly, or is empty");
	x.n = 0;
	ext(&x, 0, "\x00\x03\x00\x00\x00", 5);
	hello(&o, &x);
	refused(&o, "TLS ClientHello: server_name host_name runs past its list, or is empty");
	/* An empty extension: some servers send one back; a client never does. */
	x.n = 0;
	ext(&x, 0, "", 0);
	hello(&o, &x);
	refused(&o,
		"TLS ClientHello: server_name extension: its list does not fill it exactly, or is empty");
}

static void test_server_name(void **state)
{
	char long_label[80], long_name[300];

	(void)state;
	sni_ok("X.Test", "x.test");
	sni_ok("a-b.c0.example", "a-b.c0.example");
	sni_ok("localhost", "localhost");
	sni_ok("1.2.3.example", "1.2.3.example");
	sni_refused(
		"10.0.0.1",
		"TLS ClientHello: server_name \"10.0.0.1\" is an IP address literal, which RFC 6066 does not permit");
	sni_refused(
		"127.1",
		"TLS ClientHello: server_name \"127.1\" is an IP address literal, which RFC 6066 does not permit");
	sni_refused(
		"::1",
		"TLS ClientHello: server_name \"::1\" is an IP address literal, which RFC 6066 does not permit");
	sni_refused(
		"[2001:db8::1]",
		"TLS ClientHello: server_name \"[2001:db8::1]\" is an IP address literal, which RFC 6066 does not permit");
	sni_refused(
		"x.test.",
		"TLS ClientHello: server_name \"x.test.\" ends with a dot; RFC 6066 sends names without it");
	sni_refused(
		"a..test",
		"TLS ClientHello: server_name \"a..test\": label 2 is not 1..63 letters, digits or inner '-'");
	sni_refused(
		".test",
		"TLS ClientHello: server_name \".test\": label 1 is not 1..63 letters, digits or inner '-'");
	sni_refused(
		"-a.test",
		"TLS ClientHello: server_name \"-a.test\": label 1 is not 1..63 letters, digits or inner '-'");
	sni_refused(
		"a-.test",
		"TLS ClientHello: server_name \"a-.test\": label 1 is not 1..63 letters, digits or inner '-'");
	sni_refused(
		"a_b.test",
		"TLS ClientHello: server_name \"a_b.test\" has a byte 0x5f; a host name is letters, digits, '-' and '.'");
	sni_refused(
		"a\nb.test",
		"TLS ClientHello: server_name \"a?b.test\" has a byte 0x0a; a host name is letters, digits, '-' and '.'");
	sni_refused(
		"*.test",
		"TLS ClientHello: server_name \"*.test\" has a byte 0x2a; a host name is letters, digits, '-' and '.'");
	memset(long_label, 'a', 64);
	strcpy(long_label + 64, ".test");
	sni_refused(
		long_label,
		"TLS ClientHello: server_name \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.test\": label 1 is not 1..63 letters, digits or inner '-'");
	long_label[63] = '\0';
	strcat(long_label, ".test");
	sni_ok(long_label, long_label);
	/* 253 bytes is the most: 63 + 1 + 63 + 1 + 63 + 1 + 61. */
	memset(long_name, 'a', 253);
	long_name[63] = long_name[127] = long_name[191] = '.';
	long_name[253] = '\0';
	sni_ok(long_name, long_name);
	long_name[253] = 'a';
	long_name[254] = '\0';
	sni_refused(long_name,
		    "TLS ClientHello: server_name of 254 bytes; a DNS name has at most 253");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_capture_alpn),
		cmocka_unit_test(test_capture_tls12),
		cmocka_unit_test(test_capture_curl),
		cmocka_unit_test(test_capture_cut),
		cmocka_unit_test(test_capture_fragmented),
		cmocka_unit_test(test_not_tls),
		cmocka_unit_test(test_records),
		cmocka_unit_test(test_body),
		cmocka_unit_test(test_extensions),
		cmocka_unit_test(test_server_name_list),
		cmocka_unit_test(test_server_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
