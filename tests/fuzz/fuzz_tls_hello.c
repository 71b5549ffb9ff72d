/*
 * fuzz_tls_hello: the egress proxy's first look at a connection
 * (lib/netrules/tls_hello.c): any bytes a guest's client may send first.
 *
 * Input: the client's bytes, as they are (the seeds are real ClientHellos
 * from openssl s_client, tests/fuzz/capture-tls-hello).
 * Invariants: need stays within TLS_HELLO_MAX and past what was given; an
 * accepted hello spans at most what was given and TLS_HELLO_MAX, its SNI
 * is a lower-case LDH name of at most 253 bytes, and reading exactly its
 * `len` bytes gives the same answer; a refusal has a message; a cut of
 * the input (a third, a half, one byte short of the hello) never reads as
 * more than the whole: it asks for more, or is refused or not TLS the
 * same way.
 */
#include "lib/netrules/tls_hello.h"
#include "fuzz.h"

static void check_one(const uint8_t *data, size_t size, struct tls_hello *h,
		      enum tls_hello_status s, const struct err *e)
{
	switch (s) {
	case TLS_HELLO_OK:
		FUZZ_ASSERT(h->len > 0 && h->len <= size && h->len <= TLS_HELLO_MAX);
		FUZZ_ASSERT(strlen(h->sni) <= TLS_HELLO_NAME_MAX);
		FUZZ_ASSERT(h->has_sni == (h->sni[0] != '\0'));
		for (const char *c = h->sni; *c; c++)
			FUZZ_ASSERT((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
				    *c == '-' || *c == '.');
		break;
	case TLS_HELLO_NEED_MORE:
		FUZZ_ASSERT(h->need > size && h->need <= TLS_HELLO_MAX);
		break;
	case TLS_HELLO_NOT_TLS:
		FUZZ_ASSERT(size > 0 && data[0] != 22);
		FUZZ_ASSERT(e->msg[0]);
		break;
	case TLS_HELLO_MALFORMED:
		FUZZ_ASSERT(e->msg[0] && memchr(e->msg, 0, sizeof(e->msg)));
		FUZZ_ASSERT(!h->has_sni && h->len == 0);
		break;
	default:
		FUZZ_ASSERT(!"a status");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tls_hello h, p;
	struct err e = { "" }, pe = { "" };
	enum tls_hello_status s = tls_hello_read(data, size, &h, &e);
	size_t cuts[3] = { size / 3, size / 2, 0 };

	check_one(data, size, &h, s, &e);
	if (s == TLS_HELLO_OK) {
		cuts[2] = h.len - 1;
		FUZZ_ASSERT(tls_hello_read(data, h.len, &p, NULL) == TLS_HELLO_OK);
		FUZZ_ASSERT(p.len == h.len && !strcmp(p.sni, h.sni) && p.alpn_h2 == h.alpn_h2 &&
			    p.alpn_http11 == h.alpn_http11 && p.ech == h.ech);
	}
	for (size_t i = 0; i < 3; i++) {
		enum tls_hello_status ps = tls_hello_read(data, cuts[i], &p, &pe);

		check_one(data, cuts[i], &p, ps, &pe);
		if (s == TLS_HELLO_OK && cuts[i] < h.len)
			FUZZ_ASSERT(ps == TLS_HELLO_NEED_MORE && p.need <= h.len);
		if (s == TLS_HELLO_NEED_MORE)
			FUZZ_ASSERT(ps == TLS_HELLO_NEED_MORE && p.need <= h.need);
		if (s == TLS_HELLO_NOT_TLS && cuts[i] > 0)
			FUZZ_ASSERT(ps == TLS_HELLO_NOT_TLS);
		if (ps == TLS_HELLO_MALFORMED)
			FUZZ_ASSERT(s == TLS_HELLO_MALFORMED && !strcmp(pe.msg, e.msg));
	}
	return 0;
}
