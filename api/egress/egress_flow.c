/* egress_flow: see egress_flow.h. */
#include "api/egress/egress_flow.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "lib/base/http_token.h"
#include "lib/base/num_parse.h"
#include "lib/netrules/tls_hello.h"

/* The largest Content-Length taken (a body this size is relayed, not held). */
#define EGRESS_BODY_MAX (1ULL << 62)

/* The reasons (also the tests' vocabulary). */
#define R_NEITHER "neither TLS nor an HTTP request"
#define R_TLS_BAD "malformed TLS ClientHello"
#define R_TLS_NO_SNI "TLS ClientHello without SNI"
#define R_TLS_ECH "TLS ClientHello with ECH (its SNI is only the outer name)"
#define R_HEAD_BIG "request head over 16 KiB"
#define R_METHOD_LONG "request method too long"
#define R_METHOD "request method is not upper-case letters, digits, '-' or '_'"
#define R_TARGET "request target is not a path (origin form)"
#define R_TARGET_LONG "request target too long"
#define R_VERSION "not HTTP/1.0 or HTTP/1.1"
#define R_LINE_END "line not ended by CRLF"
#define R_FIELD "malformed header field"
#define R_FOLD "folded header line"
#define R_CONTROL "control byte in a header field"
#define R_NO_HOST "no Host field"
#define R_TWO_HOSTS "more than one Host field"
#define R_HOST "Host is not a DNS name"
#define R_HOST_IP "Host is an IP address, not a name"
#define R_HOST_PORT "Host's port is not a port number"
#define R_PORT "Host's port differs from the destination port"
#define R_TWO_LENGTHS "more than one Content-Length field"
#define R_LENGTH "Content-Length is not a number"
#define R_TE "Transfer-Encoding in a plain HTTP request (read on decrypted flows only)"
#define R_TE_BAD "Transfer-Encoding other than chunked alone"
#define R_TWO_TES "more than one Transfer-Encoding field"
#define R_TE_V10 "Transfer-Encoding in an HTTP/1.0 request"
#define R_TE_AND_LENGTH "both Content-Length and Transfer-Encoding"
#define R_AUTHORITY "name differs from the destination's recorded name"
#define R_SNI "Host differs from the TLS server name"
#define R_PLAIN_INJECT "secrets are sent only over TLS"

static void deny(struct egress_flow *out, const char *reason)
{
	out->status = EGRESS_DENY;
	out->reason = reason;
	out->status_code = HTTP_DENY_STATUS;
}

static void need(struct egress_flow *out, size_t n)
{
	out->status = EGRESS_NEED_MORE;
	out->need = n;
}

/* a and b name the same host: case and one trailing dot do not matter. */
static bool same_name(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);

	if (na && a[na - 1] == '.')
		na--;
	if (nb && b[nb - 1] == '.')
		nb--;
	return na == nb && strncasecmp(a, b, na) == 0;
}

/* The last label is all digits: an IPv4 literal ("127.1" too), never a name. */
static bool ip_like(const char *name)
{
	const char *last = strrchr(name, '.');

	last = last ? last + 1 : name;
	if (!*last)
		return false;
	for (; *last; last++)
		if (*last < '0' || *last > '9')
			return false;
	return true;
}

/* The rules' decision for out->name and port, with method and target for
 * a request (NULL for a TLS connection's first bytes); tls: the request
 * came over a decrypted TLS connection. */
static void decide(const struct http_rules *rules, const char *target, bool tls,
		   struct egress_flow *out)
{
	struct http_flow f = { .host = out->name, .port = out->port };
	const struct http_rule *u;
	size_t i;

	if (target) {
		f.method = out->method;
		f.path = target;
	}
	out->decision = http_rules_decide(rules, &f, &i);
	out->ruled = true;
	u = rules && i < rules->n ? &rules->rules[i] : NULL;
	out->rule = u ? i : SIZE_MAX;
	switch (out->decision) {
	case HTTP_ALLOW:
		/* A secret never crosses the network in clear text (a plain
		 * request is readable by anyone on the path). */
		if (target && !tls && u && u->n_inject) {
			deny(out, R_PLAIN_INJECT);
			return;
		}
		out->status = EGRESS_ALLOW;
		out->intercept = !target && u && (u->intercept || u->n_inject);
		return;
	case HTTP_NEED_HEAD:
		/* Decrypt, then decide each request with its method and path. */
		out->status = EGRESS_ALLOW;
		out->intercept = true;
		return;
	case HTTP_DENY_RULE:
		deny(out, "denied by rule");
		out->status_code = u ? u->status : HTTP_DENY_STATUS;
		return;
	case HTTP_DENY_UNVERIFIABLE:
		deny(out, "the rule limits methods or paths, which a TLS splice cannot check");
		return;
	case HTTP_DENY_BAD_PATH:
		deny(out, "request path not in normal form");
		return;
	case HTTP_DENY_DEFAULT:
		break;
	}
	deny(out, "no rule allows this host and port");
}

/* Whom a name is checked against: the header's names (AUTHORITY and the
 * others bound to the destination: one CDN's names share addresses), or
 * on a decrypted flow the SNI's name; none, any name. */
struct want {
	const struct proxy_v2 *hdr;
	const char *name;
};

static bool wanted(const struct want *w, const char *name)
{
	if (w->hdr)
		return !w->hdr->authority[0] || proxy_v2_names(w->hdr, name);
	return !w->name[0] || same_name(w->name, name);
}

/* The name (SNI or Host) against the header's names, then the rules. */
static void check_name(const struct want *want, const char *why, const struct http_rules *rules,
		       const char *target, bool tls, struct egress_flow *out)
{
	if (!wanted(want, out->name)) {
		deny(out, why);
		return;
	}
	decide(rules, target, tls, out);
}

static void read_tls(const struct proxy_v2 *hdr, const uint8_t *buf, size_t n,
		     const struct http_rules *rules, struct egress_flow *out)
{
	struct tls_hello h;

	out->proto = EGRESS_PROTO_TLS;
	switch (tls_hello_read(buf, n, &h, NULL)) {
	case TLS_HELLO_NEED_MORE:
		need(out, h.need);
		return;
	case TLS_HELLO_NOT_TLS:
	case TLS_HELLO_MALFORMED:
		deny(out, R_TLS_BAD);
		return;
	case TLS_HELLO_OK:
		break;
	}
	if (!h.has_sni) {
		deny(out, R_TLS_NO_SNI);
		return;
	}
	if (h.ech) {
		deny(out, R_TLS_ECH);
		return;
	}
	memcpy(out->name, h.sni, sizeof(out->name));
	check_name(&(struct want){ .hdr = hdr }, R_AUTHORITY, rules, NULL, true, out);
}

/* Where "\r\n\r\n" ends in buf[0..n), or 0. */
static size_t head_end(const uint8_t *buf, size_t n)
{
	for (size_t i = 3; i < n; i++)
		if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' &&
		    buf[i - 3] == '\r')
			return i + 1;
	return 0;
}

struct head {
	const char *target;
	size_t target_len;
	const char *host;
	size_t host_len;
	bool has_host, has_length, has_te, tls, v10;
	uint64_t length;
};

/* The request line buf[0..n) (without CRLF), method length m. NULL or a reason. */
static const char *request_line(const char *s, size_t n, size_t m, struct head *h)
{
	size_t i = m + 1, t;

	if (i >= n || s[i] != '/')
		return R_TARGET;
	for (t = i; t < n && s[t] > 0x20 && s[t] < 0x7f; t++)
		;
	if (t - i >= HTTP_REQ_PATH_MAX)
		return R_TARGET_LONG;
	if (t >= n || s[t] != ' ')
		return t < n && s[t] != ' ' ? R_TARGET : R_VERSION;
	h->target = s + i;
	h->target_len = t - i;
	if (n - t - 1 != 8 ||
	    (memcmp(s + t + 1, "HTTP/1.1", 8) != 0 && memcmp(s + t + 1, "HTTP/1.0", 8) != 0))
		return R_VERSION;
	h->v10 = s[t + 8] == '0';
	return NULL;
}

static bool field_is(const char *s, size_t n, const char *name)
{
	return strlen(name) == n && strncasecmp(s, name, n) == 0;
}

/* One field line s[0..n) (without CRLF). NULL or a reason. */
static const char *field(const char *s, size_t n, struct head *h)
{
	size_t c = 0, v, e;

	if (n && (s[0] == ' ' || s[0] == '\t'))
		return R_FOLD;
	while (c < n && http_tchar((unsigned char)s[c]))
		c++;
	if (c == 0 || c >= n || s[c] != ':')
		return R_FIELD;
	for (size_t i = c + 1; i < n; i++) {
		unsigned char b = (unsigned char)s[i];

		if ((b < 0x20 && b != '\t') || b == 0x7f)
			return R_CONTROL;
	}
	for (v = c + 1; v < n && (s[v] == ' ' || s[v] == '\t'); v++)
		;
	for (e = n; e > v && (s[e - 1] == ' ' || s[e - 1] == '\t'); e--)
		;
	if (field_is(s, c, "host")) {
		if (h->has_host)
			return R_TWO_HOSTS;
		h->has_host = true;
		h->host = s + v;
		h->host_len = e - v;
	} else if (field_is(s, c, "content-length")) {
		if (h->has_length)
			return R_TWO_LENGTHS;
		h->has_length = true;
		if (num_parse_u64_n(s + v, e - v, 10, 0, EGRESS_BODY_MAX, &h->length) < 0)
			return R_LENGTH;
	} else if (field_is(s, c, "transfer-encoding")) {
		/* Only on a decrypted flow, whose bodies the proxy frames
		 * itself (egress_http); and only "chunked" alone: a list
		 * ("gzip, chunked") or another coding is read differently
		 * by different servers, the start of request smuggling. */
		if (!h->tls)
			return R_TE;
		/* HTTP/1.0 has no Transfer-Encoding (RFC 9112 6.1): a server
		 * that ignores it reads no body, and the chunks as the next
		 * request, which no rule decided. */
		if (h->v10)
			return R_TE_V10;
		if (h->has_te)
			return R_TWO_TES;
		h->has_te = true;
		if (!field_is(s + v, e - v, "chunked"))
			return R_TE_BAD;
	}
	if (h->has_te && h->has_length)
		return R_TE_AND_LENGTH;
	return NULL;
}

/* The head's lines, s[0..n) through its empty line. NULL or a reason. */
static const char *read_head(const char *s, size_t n, size_t m, struct head *h)
{
	bool first = true;

	for (size_t at = 0;;) {
		const char *cr = memchr(s + at, '\r', n - at), *lf = memchr(s + at, '\n', n - at);
		const char *why;
		size_t len;

		/* The head ends in CRLF CRLF, so both are found. */
		if (!cr || !lf || lf != cr + 1)
			return R_LINE_END;
		len = (size_t)(cr - (s + at));
		if (len == 0)
			return first ? R_NEITHER : NULL;
		why = first ? request_line(s + at, len, m, h) : field(s + at, len, h);
		if (why)
			return why;
		first = false;
		at += len + 2;
	}
}

/* The Host value: name into out->name, port checked (80 when absent, 443
 * on a TLS flow). NULL or a reason. */
static const char *host_value(const struct head *h, uint16_t dport, struct egress_flow *out)
{
	char tmp[NET_HOST_MAX + 2];
	const char *colon = memchr(h->host, ':', h->host_len);
	size_t len = colon ? (size_t)(colon - h->host) : h->host_len;
	uint64_t port = h->tls ? 443 : 80;
	bool wild;

	if (memchr(h->host, '[', h->host_len))
		return R_HOST_IP;
	if (colon && num_parse_u64_n(colon + 1, h->host_len - len - 1, 10, 1, 65535, &port) < 0)
		return R_HOST_PORT;
	if (len == 0 || len >= sizeof(tmp))
		return R_HOST;
	memcpy(tmp, h->host, len);
	tmp[len] = '\0';
	if (strchr(tmp, '*') || net_host_parse(tmp, out->name, &wild) < 0 || wild) {
		out->name[0] = '\0';
		return R_HOST;
	}
	if (ip_like(out->name))
		return R_HOST_IP;
	if (port != dport)
		return R_PORT;
	return NULL;
}

/* A request head at buf[0..n): want says the names it must be for, why
 * the reason when it is not; tls: on a decrypted flow. */
static void read_http(const struct want *want, const char *why_not, uint16_t dport, bool tls,
		      const uint8_t *buf, size_t n, const struct http_rules *rules,
		      struct egress_flow *out)
{
	char *target = out->path;
	struct head h = { .tls = tls };
	const char *why;
	size_t m = 0, end;

	while (m < n && m <= HTTP_METHOD_MAX && http_tchar(buf[m]))
		m++;
	if (m > HTTP_METHOD_MAX) {
		deny(out, R_METHOD_LONG);
		return;
	}
	if (m < n && (m == 0 || buf[m] != ' ')) {
		deny(out, R_NEITHER);
		return;
	}
	out->proto = EGRESS_PROTO_HTTP;
	end = head_end(buf, n);
	if (!end) {
		if (n >= EGRESS_FIRST_MAX)
			deny(out, R_HEAD_BIG);
		else
			need(out, n + 1);
		return;
	}
	memcpy(out->method, buf, m);
	out->method[m] = '\0';
	/* A rule's methods are upper case; "delete" would slip past a rule
	 * denying DELETE to a server that folds case. */
	why = http_method_ok(out->method) ? read_head((const char *)buf, end, m, &h) : R_METHOD;
	if (!why && !h.has_host)
		why = R_NO_HOST;
	if (!why)
		why = host_value(&h, dport, out);
	if (why) {
		deny(out, why);
		return;
	}
	memcpy(target, h.target, h.target_len);
	target[h.target_len] = '\0';
	out->head_len = end;
	out->chunked = h.has_te;
	out->request_len = end + h.length;
	check_name(want, why_not, rules, target, tls, out);
}

void egress_flow_decide(const struct proxy_v2 *hdr, const uint8_t *buf, size_t n,
			const struct http_rules *rules, struct egress_flow *out)
{
	memset(out, 0, sizeof(*out));
	out->reason = "";
	out->rule = SIZE_MAX;
	out->port = hdr->dport;
	if (n == 0) {
		need(out, 1);
		return;
	}
	if (n > EGRESS_FIRST_MAX)
		n = EGRESS_FIRST_MAX;
	if (buf[0] == 0x16)
		read_tls(hdr, buf, n, rules, out);
	else
		read_http(&(struct want){ .hdr = hdr }, R_AUTHORITY, hdr->dport, false, buf, n,
			  rules, out);
}

void egress_flow_request(const char *name, uint16_t port, const uint8_t *buf, size_t n,
			 const struct http_rules *rules, struct egress_flow *out)
{
	memset(out, 0, sizeof(*out));
	out->reason = "";
	out->rule = SIZE_MAX;
	out->port = port;
	if (n == 0) {
		need(out, 1);
		return;
	}
	if (n > EGRESS_FIRST_MAX)
		n = EGRESS_FIRST_MAX;
	read_http(&(struct want){ .name = name }, R_SNI, port, true, buf, n, rules, out);
	if (out->status == EGRESS_DENY && out->proto != EGRESS_PROTO_HTTP)
		/* What is not a request head on a decrypted flow is still
		 * answered (over TLS), as a 400. */
		out->proto = EGRESS_PROTO_HTTP;
}

int egress_flow_deny_response(const struct egress_flow *f, char *buf, size_t cap)
{
	char body[384], rule[24], reason[256] = "";
	int nb, n;

	if (f->callback)
		snprintf(rule, sizeof(rule), "\"callback\"");
	else if (f->rule == SIZE_MAX)
		snprintf(rule, sizeof(rule), "null");
	else
		snprintf(rule, sizeof(rule), "%zu", f->rule);
	/* Fixed strings, a secret's name or OpenSSL's verification text:
	 * escaped all the same, so no reason can break the JSON. */
	for (size_t i = 0, o = 0; o + 7 < sizeof(reason); i++) {
		unsigned char c = (unsigned char)f->reason[i];

		if (!c) {
			reason[o] = '\0';
			break;
		}
		if (c == '"' || c == '\\')
			o += (size_t)snprintf(reason + o, sizeof(reason) - o, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			o += (size_t)snprintf(reason + o, sizeof(reason) - o, "\\u%04x", c);
		else
			reason[o++] = (char)c;
		reason[o] = '\0';
	}
	nb = snprintf(body, sizeof(body),
		      "{\"error\":\"egress denied\",\"reason\":\"%s\",\"rule\":%s}\n", reason,
		      rule);
	if (nb < 0 || (size_t)nb >= sizeof(body))
		return -ENOSPC;
	n = snprintf(buf, cap,
		     "HTTP/1.1 %u %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
		     "Connection: close\r\n\r\n%s",
		     f->status_code,
		     f->status_code == 403           ? "Forbidden"
			     : f->status_code == 502 ? "Bad Gateway"
			     : f->status_code == 400 ? "Bad Request"
						     : "Denied",
		     nb, body);
	if (n < 0 || (size_t)n >= cap)
		return -ENOSPC;
	return n;
}
