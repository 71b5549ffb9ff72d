/* tls_hello: see tls_hello.h. */
#include "lib/netrules/tls_hello.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lib/base/text_clean.h"

#define REC_HDR 5
#define REC_MAX 16384 /* a plaintext record's most (RFC 8446 5.1) */
#define HS_HDR 4
#define CT_HANDSHAKE 22
#define HS_CLIENT_HELLO 1
/* The smallest body: version, random, empty session id, one suite, one method. */
#define HELLO_MIN (2 + 32 + 1 + 2 + 2 + 1 + 1)

/* Extension types (IANA TLS ExtensionType registry, from the RFCs named). */
#define EXT_SERVER_NAME 0         /* RFC 6066 3 */
#define EXT_ALPN 16               /* RFC 7301 3.1 */
#define EXT_SUPPORTED_VERSIONS 43 /* RFC 8446 4.2.1 */
#define EXT_PRE_SHARED_KEY 41     /* RFC 8446 4.2.11 */
#define EXT_ECH 0xfe0d            /* encrypted_client_hello (TLS ECH) */
#define SNI_HOST_NAME 0

static enum tls_hello_status bad(struct err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static enum tls_hello_status bad(struct err *e, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!e)
		return TLS_HELLO_MALFORMED;
	n = snprintf(e->msg, sizeof(e->msg), "TLS ClientHello: ");
	va_start(ap, fmt);
	vsnprintf(e->msg + n, sizeof(e->msg) - (size_t)n, fmt, ap);
	va_end(ap);
	return TLS_HELLO_MALFORMED;
}

const char *tls_hello_status_name(enum tls_hello_status s)
{
	switch (s) {
	case TLS_HELLO_OK:
		return "ok";
	case TLS_HELLO_NEED_MORE:
		return "need more";
	case TLS_HELLO_NOT_TLS:
		return "not TLS";
	default:
		return "malformed";
	}
}

/* A bounded reader over part of the message: every take checks the rest. */
struct cur {
	const uint8_t *p;
	size_t n;
};

static bool take(struct cur *c, size_t k, const uint8_t **out)
{
	if (k > c->n)
		return false;
	*out = c->p;
	c->p += k;
	c->n -= k;
	return true;
}

static bool take_u8(struct cur *c, unsigned *v)
{
	const uint8_t *p;

	if (!take(c, 1, &p))
		return false;
	*v = p[0];
	return true;
}

static bool take_u16(struct cur *c, unsigned *v)
{
	const uint8_t *p;

	if (!take(c, 2, &p))
		return false;
	*v = (unsigned)p[0] << 8 | p[1];
	return true;
}

/* A vector with a `width`-byte length (1 or 2) in front, as a reader of its own. */
static bool take_vec(struct cur *c, int width, struct cur *sub)
{
	unsigned len;

	if (!(width == 1 ? take_u8(c, &len) : take_u16(c, &len)))
		return false;
	sub->n = len;
	return take(c, len, &sub->p);
}

/*
 * The handshake message, reassembled from the records at buf into msg
 * (TLS_HELLO_MAX bytes): OK with *msg_len and h->len set, NEED_MORE with
 * h->need, or MALFORMED.
 */
static enum tls_hello_status gather(const uint8_t *buf, size_t n, uint8_t *msg, size_t *msg_len,
				    struct tls_hello *h, struct err *e)
{
	size_t off = 0, got = 0, want = 0;

	for (;;) {
		size_t rlen;

		/* The next record (a header and at least a byte) would end past
		 * the bound: refused now, so `need` never asks past it. */
		if (off + REC_HDR >= TLS_HELLO_MAX)
			return bad(e,
				   "its records span more than %d bytes; kiln reads no larger ClientHello",
				   TLS_HELLO_MAX);
		if (n < off + REC_HDR) {
			h->need = off + REC_HDR;
			return TLS_HELLO_NEED_MORE;
		}
		if (buf[off] != CT_HANDSHAKE)
			return bad(e,
				   "a record of type %u at byte %zu, inside the ClientHello (its fragments must follow each other)",
				   buf[off], off);
		if (buf[off + 1] != 3)
			return bad(e, "record version %u.%u at byte %zu is not TLS (3.x)",
				   buf[off + 1], buf[off + 2], off);
		if (off == 0)
			h->record_version = (uint16_t)(buf[1] << 8 | buf[2]);
		rlen = (size_t)buf[off + 3] << 8 | buf[off + 4];
		/* RFC 8446 5.1: no empty handshake fragment, none over 2^14. */
		if (rlen == 0 || rlen > REC_MAX)
			return bad(e,
				   "record at byte %zu has length %zu; a handshake record holds 1..%d bytes",
				   off, rlen, REC_MAX);
		if (off + REC_HDR + rlen > TLS_HELLO_MAX)
			return bad(e,
				   "its records span more than %d bytes; kiln reads no larger ClientHello",
				   TLS_HELLO_MAX);
		if (n < off + REC_HDR + rlen) {
			h->need = off + REC_HDR + rlen;
			return TLS_HELLO_NEED_MORE;
		}
		/* got <= off, so got + rlen <= TLS_HELLO_MAX - REC_HDR: msg holds it. */
		memcpy(msg + got, buf + off + REC_HDR, rlen);
		got += rlen;
		off += REC_HDR + rlen;
		if (msg[0] != HS_CLIENT_HELLO)
			return bad(e, "handshake message type %u, not client_hello (1)", msg[0]);
		if (want == 0 && got >= HS_HDR) {
			want = HS_HDR + ((size_t)msg[1] << 16 | (size_t)msg[2] << 8 | msg[3]);
			if (want > TLS_HELLO_MAX - REC_HDR)
				return bad(e, "its length %zu is more than the %d bytes kiln reads",
					   want - HS_HDR, TLS_HELLO_MAX - REC_HDR - HS_HDR);
		}
		if (want && got >= want) {
			if (got > want)
				return bad(e,
					   "%zu bytes follow it in its record; the client's first flight is the ClientHello alone",
					   got - want);
			*msg_len = want;
			h->len = off;
			return TLS_HELLO_OK;
		}
	}
}

/* The name quoted in a message: printable ASCII, cut. */
static const char *quote(const uint8_t *p, size_t n, char *buf, size_t cap)
{
	text_clean_ascii(buf, cap, (const char *)p, n);
	return buf;
}

/* A DNS host name (see tls_hello.h), lower-cased into out. */
static enum tls_hello_status sni_name(const uint8_t *p, size_t n, char *out, struct err *e)
{
	size_t label = 0, last = 0;
	bool digits = true, last_digits = false;
	char q[72];

	if (n > TLS_HELLO_NAME_MAX)
		return bad(e, "server_name of %zu bytes; a DNS name has at most %d", n,
			   TLS_HELLO_NAME_MAX);
	if (memchr(p, ':', n))
		return bad(e,
			   "server_name \"%s\" is an IP address literal, which RFC 6066 does not permit",
			   quote(p, n, q, sizeof(q)));
	if (p[n - 1] == '.')
		return bad(e, "server_name \"%s\" ends with a dot; RFC 6066 sends names without it",
			   quote(p, n, q, sizeof(q)));
	for (size_t i = 0; i <= n; i++) {
		char c = i < n ? (char)p[i] : '.';

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if ((c == '.' && (label == 0 || label > 63 || p[i - 1] == '-')) ||
		    (c == '-' && label == 0))
			return bad(e,
				   "server_name \"%s\": label %zu is not 1..63 letters, digits or inner '-'",
				   quote(p, n, q, sizeof(q)), last + 1);
		if (c == '.') {
			label = 0;
			last++;
			last_digits = digits;
			digits = true;
		} else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-') {
			label++;
			digits = digits && c >= '0' && c <= '9';
		} else {
			return bad(e,
				   "server_name \"%s\" has a byte 0x%02x; a host name is letters, digits, '-' and '.'",
				   quote(p, n, q, sizeof(q)), p[i]);
		}
		if (i < n)
			out[i] = c;
	}
	/* An all-digit last label: "10.0.0.1", "127.1". */
	if (last_digits)
		return bad(e,
			   "server_name \"%s\" is an IP address literal, which RFC 6066 does not permit",
			   quote(p, n, q, sizeof(q)));
	out[n] = '\0';
	return TLS_HELLO_OK;
}

static enum tls_hello_status ext_server_name(struct cur d, struct tls_hello *h, struct err *e)
{
	struct cur list;

	if (!take_vec(&d, 2, &list) || d.n || list.n == 0)
		return bad(e,
			   "server_name extension: its list does not fill it exactly, or is empty");
	while (list.n) {
		unsigned type;
		struct cur name;
		enum tls_hello_status s;

		if (!take_u8(&list, &type) || type != SNI_HOST_NAME)
			return bad(e,
				   "server_name entry of type %u; host_name (0) is the only one defined",
				   type);
		if (!take_vec(&list, 2, &name) || name.n == 0)
			return bad(e, "server_name host_name runs past its list, or is empty");
		if (h->has_sni)
			return bad(e,
				   "server_name has two host_name entries (RFC 6066 allows one)");
		s = sni_name(name.p, name.n, h->sni, e);
		if (s != TLS_HELLO_OK)
			return s;
		h->has_sni = true;
	}
	return TLS_HELLO_OK;
}

static enum tls_hello_status ext_alpn(struct cur d, struct tls_hello *h, struct err *e)
{
	struct cur list;

	if (!take_vec(&d, 2, &list) || d.n || list.n < 2)
		return bad(e, "ALPN extension: its list does not fill it exactly, or is empty");
	while (list.n) {
		struct cur name;

		if (!take_vec(&list, 1, &name) || name.n == 0)
			return bad(e, "ALPN protocol name runs past its list, or is empty");
		if (name.n == 2 && !memcmp(name.p, "h2", 2))
			h->alpn_h2 = true;
		if (name.n == 8 && !memcmp(name.p, "http/1.1", 8))
			h->alpn_http11 = true;
	}
	h->has_alpn = true;
	return TLS_HELLO_OK;
}

static enum tls_hello_status ext_versions(struct cur d, struct tls_hello *h, struct err *e)
{
	struct cur list;

	if (!take_vec(&d, 1, &list) || d.n || list.n < 2 || list.n % 2)
		return bad(e,
			   "supported_versions extension: not a list of 2-byte versions filling it");
	while (list.n) {
		unsigned v = 0;

		take_u16(&list, &v); /* list.n is even and not 0: it takes two bytes */
		if (v == 0x0304)
			h->tls13 = true;
	}
	return TLS_HELLO_OK;
}

static enum tls_hello_status extensions(struct cur x, struct tls_hello *h, struct err *e)
{
	/* One bit per extension type: a repeat is found in one pass
	 * whatever the count (RFC 8446 4.2: no type twice). */
	uint8_t seen[65536 / 8];

	memset(seen, 0, sizeof(seen));
	while (x.n) {
		unsigned type;
		struct cur d;
		enum tls_hello_status s = TLS_HELLO_OK;

		if (!take_u16(&x, &type) || !take_vec(&x, 2, &d))
			return bad(e, "an extension runs past the extensions' length");
		if (seen[type / 8] & (1u << (type % 8)))
			return bad(e, "extension %u appears twice", type);
		seen[type / 8] |= (uint8_t)(1u << (type % 8));
		if (type == EXT_PRE_SHARED_KEY && x.n)
			return bad(e, "pre_shared_key is not the last extension (RFC 8446 4.2.11)");
		if (type == EXT_SERVER_NAME)
			s = ext_server_name(d, h, e);
		else if (type == EXT_ALPN)
			s = ext_alpn(d, h, e);
		else if (type == EXT_SUPPORTED_VERSIONS)
			s = ext_versions(d, h, e);
		else if (type == EXT_ECH)
			h->ech = true;
		if (s != TLS_HELLO_OK)
			return s;
	}
	return TLS_HELLO_OK;
}

/* The ClientHello body (after the 4-byte handshake header). */
static enum tls_hello_status body(struct cur c, struct tls_hello *h, struct err *e)
{
	struct cur sid, suites, comp, x;
	const uint8_t *random;
	unsigned v;

	if (c.n < HELLO_MIN)
		return bad(e, "%zu bytes long; the smallest is %d", c.n, HELLO_MIN);
	take_u16(&c, &v);
	if (v < 0x0301 || v > 0x0303)
		return bad(e, "legacy_version 0x%04x is not TLS 1.0..1.2 (0x0301..0x0303)", v);
	h->version = (uint16_t)v;
	take(&c, 32, &random);
	if (!take_vec(&c, 1, &sid) || sid.n > 32)
		return bad(e, "session_id of %zu bytes; at most 32", sid.n);
	if (!take_vec(&c, 2, &suites) || suites.n < 2 || suites.n % 2)
		return bad(e, "cipher_suites is not a list of 2-byte suites inside the message");
	if (!take_vec(&c, 1, &comp) || comp.n == 0)
		return bad(e, "compression_methods is empty or runs past the message");
	if (c.n == 0)
		return TLS_HELLO_OK; /* RFC 5246 7.4.1.2: extensions may be absent */
	if (!take_vec(&c, 2, &x) || c.n)
		return bad(e, "the extensions' length does not reach exactly to the message's end");
	return extensions(x, h, e);
}

enum tls_hello_status tls_hello_read(const uint8_t *buf, size_t n, struct tls_hello *h,
				     struct err *e)
{
	uint8_t msg[TLS_HELLO_MAX];
	size_t len = 0;
	enum tls_hello_status s;

	memset(h, 0, sizeof(*h));
	if (n == 0) {
		h->need = 1;
		return TLS_HELLO_NEED_MORE;
	}
	if (buf[0] != CT_HANDSHAKE) {
		if (e)
			snprintf(e->msg, sizeof(e->msg),
				 "not TLS: the first byte is 0x%02x, not a handshake record (22)",
				 buf[0]);
		return TLS_HELLO_NOT_TLS;
	}
	s = gather(buf, n, msg, &len, h, e);
	if (s == TLS_HELLO_OK)
		s = body((struct cur){ msg + HS_HDR, len - HS_HDR }, h, e);
	/* A refusal leaves nothing half-read for a caller to trust. */
	if (s == TLS_HELLO_MALFORMED)
		memset(h, 0, sizeof(*h));
	return s;
}
