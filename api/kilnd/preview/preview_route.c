/* The preview proxy's decisions on a request head; see preview_route.h. */
#include "api/kilnd/preview/preview_route.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "api/kilnd/core/preview_spec.h"
#include "api/kilnd/http/http_io.h"
#include "lib/base/num_parse.h"

int preview_err_set(struct preview_err *e, unsigned status, const char *code, const char *fmt, ...)
{
	va_list ap;

	e->status = status;
	e->code = code;
	e->retry_after_s = 0;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- routing ---- */

/* "1".."65535" without leading zeros, exactly n bytes. */
static bool port_parse(const char *s, size_t n, uint16_t *port)
{
	unsigned v = 0;

	if (n == 0 || n > 5 || s[0] == '0')
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v > 65535)
		return false;
	*port = (uint16_t)v;
	return true;
}

/* SANDBOX_ID_LEN hex digits at s (upper case too when fold: a host name), lowercased into id. */
static bool id_parse(const char *s, size_t n, bool fold, char id[SANDBOX_ID_LEN + 1])
{
	if (n != SANDBOX_ID_LEN)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (fold && c >= 'A' && c <= 'F')
			c = (char)(c - 'A' + 'a');
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
		id[i] = c;
	}
	id[n] = '\0';
	return true;
}

/* Host "PORT-ID.DOMAIN[:digits]". */
static bool route_host(const char *host, const char *domain, struct preview_req *r)
{
	size_t n = strlen(host), dl = strlen(domain);
	const char *colon = memchr(host, ':', n), *dash;

	if (colon) {
		/* Only a port may follow: "[::1]:80" and the like are not ours. */
		if (colon == host ||
		    strspn(colon + 1, "0123456789") != (size_t)(host + n - colon - 1) || !colon[1])
			return false;
		n = (size_t)(colon - host);
	}
	/* label '.' domain */
	if (n < dl + 2 || host[n - dl - 1] != '.' || strncasecmp(host + n - dl, domain, dl) != 0)
		return false;
	n -= dl + 1;
	dash = memchr(host, '-', n);
	if (!dash || !port_parse(host, (size_t)(dash - host), &r->port) ||
	    !id_parse(dash + 1, (size_t)(host + n - dash - 1), true, r->id))
		return false;
	r->form = PREVIEW_BY_HOST;
	r->rest = NULL; /* the whole path: set by the caller */
	return true;
}

/* Path "/preview/ID/PORT" then '/' or its end. */
static bool route_path(const char *path, struct preview_req *r)
{
	static const char pre[] = "/preview/";
	const char *p = path + sizeof(pre) - 1, *end;

	if (strncmp(path, pre, sizeof(pre) - 1) != 0 || !id_parse(p, strcspn(p, "/"), false, r->id))
		return false;
	p += SANDBOX_ID_LEN;
	if (*p != '/')
		return false;
	p++;
	end = p + strcspn(p, "/");
	if (!port_parse(p, (size_t)(end - p), &r->port))
		return false;
	r->form = PREVIEW_BY_PATH;
	if (*end) {
		r->rest = end;
		r->rest_len = strlen(end);
	} else {
		r->rest = "/";
		r->rest_len = 1;
	}
	return true;
}

static void cred_add(struct preview_req *r, enum preview_cred_kind kind, const char *p, size_t n)
{
	/* More than a few is no client's need; the rest are not looked at. */
	if (r->ncreds == PREVIEW_CREDS_MAX)
		return;
	r->creds[r->ncreds++] = (struct preview_cred){ .kind = kind, .p = p, .n = n };
}

/* Trim spaces and tabs around s[0..*n). */
static const char *trim(const char *s, size_t *n)
{
	while (*n && (*s == ' ' || *s == '\t')) {
		s++;
		(*n)--;
	}
	while (*n && (s[*n - 1] == ' ' || s[*n - 1] == '\t'))
		(*n)--;
	return s;
}

/* "Bearer T": T, or NULL. */
static const char *bearer(const char *v, size_t *n)
{
	size_t len = strlen(v);

	if (len < 7 || strncasecmp(v, "bearer", 6) != 0 || (v[6] != ' ' && v[6] != '\t'))
		return NULL;
	*n = len - 6;
	return trim(v + 6, n);
}

/* Calls fn for each "name=value" of a Cookie value (';'-separated). */
static void cookies_each(const char *v, const char *name, struct preview_req *r)
{
	size_t nl = strlen(name);

	while (*v) {
		size_t n = strcspn(v, ";");
		const char *c = trim(v, &n);

		if (n > nl && c[nl] == '=' && memcmp(c, name, nl) == 0)
			cred_add(r, PREVIEW_CRED_COOKIE, c + nl + 1, n - nl - 1);
		v += strcspn(v, ";");
		if (*v)
			v++;
	}
}

static void query_creds(const char *q, struct preview_req *r)
{
	while (q && *q) {
		size_t n = strcspn(q, "&");

		if (n >= 6 && memcmp(q, "token=", 6) == 0)
			cred_add(r, PREVIEW_CRED_QUERY, q + 6, n - 6);
		q += n;
		if (*q)
			q++;
	}
}

static bool is_upgrade(const struct http_head *h)
{
	bool conn = false;

	for (size_t i = 0; i < h->nfields; i++)
		if (!strcasecmp(h->fields[i].name, "Connection") &&
		    http_has_token(h->fields[i].value, "upgrade"))
			conn = true;
	return conn && http_head_field(h, "Upgrade");
}

int preview_route(const struct http_head *h, const char *domain, struct preview_req *r,
		  struct preview_err *e)
{
	const char *host = http_head_field(h, "Host");

	memset(r, 0, sizeof(*r));
	if (host && route_host(host, domain, r)) {
		r->rest = h->path;
		r->rest_len = strlen(h->path);
	} else if (!route_path(h->path, r)) {
		memset(r, 0, sizeof(*r));
		return preview_err_set(
			e, 404, "preview_not_found",
			"not a preview URL: use http://PORT-ID.%s/ or /preview/ID/PORT/ (POST /v1/sandboxes/ID/previews makes one)",
			domain);
	}
	snprintf(r->cookie, sizeof(r->cookie), "kiln_preview_%s_%u", r->id, (unsigned)r->port);
	r->upgrade = is_upgrade(h);
	for (size_t i = 0; i < h->nfields; i++) {
		const struct http_field *f = &h->fields[i];
		const char *t;
		size_t n;

		if (!strcasecmp(f->name, "X-Kiln-Preview-Token"))
			cred_add(r, PREVIEW_CRED_HEADER, f->value, strlen(f->value));
		else if (!strcasecmp(f->name, "Authorization") && (t = bearer(f->value, &n)))
			cred_add(r, PREVIEW_CRED_BEARER, t, n);
		else if (!strcasecmp(f->name, "Cookie"))
			cookies_each(f->value, r->cookie, r);
	}
	query_creds(h->query, r);
	return 0;
}

const struct preview_cred *preview_auth(const struct preview_req *r, const char *token)
{
	const struct preview_cred *hit = NULL;

	if (!token)
		return NULL;
	/* Every one is compared, the match or not: the time says nothing. */
	for (size_t i = 0; i < r->ncreds; i++)
		if (preview_token_equal(r->creds[i].p, r->creds[i].n, token) && !hit)
			hit = &r->creds[i];
	return hit;
}

/* ---- writing heads ---- */

struct out {
	char *p;
	size_t n, cap;
	bool over;
	size_t lines; /* line ends written (values hold none: the parser refused them) */
};

static void put(struct out *o, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		o->lines += s[i] == '\n';
	if (o->over || n > o->cap - o->n) {
		o->over = true;
		return;
	}
	memcpy(o->p + o->n, s, n);
	o->n += n;
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static void putf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void putf(struct out *o, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf))
		o->over = true;
	else
		put(o, buf, (size_t)n);
}

/* The query without "token" parameters that hold token ("" when none is left). */
static void put_query(struct out *o, const char *q, const char *token, bool with_mark)
{
	bool first = true;

	while (q && *q) {
		size_t n = strcspn(q, "&");

		if (!(token && n >= 6 && memcmp(q, "token=", 6) == 0 &&
		      preview_token_equal(q + 6, n - 6, token))) {
			put(o, first ? "?" : "&", first ? (with_mark ? 1 : 0) : 1);
			put(o, q, n);
			first = false;
		}
		q += n;
		if (*q)
			q++;
	}
}

/* Fields a client may not pass to the guest as they are. */
static bool dropped(const struct http_field *f, const char *token)
{
	static const char *const names[] = { "Connection",        "Keep-Alive",
					     "Proxy-Connection",  "X-Kiln-Preview-Token",
					     "X-Forwarded-For",   "X-Forwarded-Host",
					     "X-Forwarded-Proto", "X-Forwarded-Prefix",
					     "Forwarded",         NULL };
	const char *t;
	size_t n;

	for (size_t i = 0; names[i]; i++)
		if (!strcasecmp(f->name, names[i]))
			return true;
	return token && !strcasecmp(f->name, "Authorization") && (t = bearer(f->value, &n)) &&
		preview_token_equal(t, n, token);
}

/* A Cookie field without kilnd's cookies (kiln_preview_*: this preview's
 * and any other's, which are never the app's); nothing when none is left. */
static void put_cookie(struct out *o, const char *v)
{
	static const char ours[] = "kiln_preview_";
	bool first = true;

	while (*v) {
		size_t n = strcspn(v, ";");
		const char *c = trim(v, &n);

		if (n && !(n >= sizeof(ours) - 1 && memcmp(c, ours, sizeof(ours) - 1) == 0)) {
			puts_(o, first ? "Cookie: " : "; ");
			put(o, c, n);
			first = false;
		}
		v += strcspn(v, ";");
		if (*v)
			v++;
	}
	if (!first)
		puts_(o, "\r\n");
}

/* The byte at s[*i] of s[0..n), a %HH escape being one byte; moves *i past it. */
static int pct_byte(const char *s, size_t n, size_t *i)
{
	int hi = s[*i] == '%' && *i + 2 < n ? num_hex_digit(s[*i + 1]) : -1;
	int lo = hi >= 0 ? num_hex_digit(s[*i + 2]) : -1;

	if (lo >= 0) {
		*i += 3;
		return hi << 4 | lo;
	}
	return (unsigned char)s[(*i)++];
}

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

/* s[0..n), percent-decoded, is "token" in any case ("%74oken", "TOKEN"). */
static bool names_token(const char *s, size_t n)
{
	static const char want[] = "token";
	size_t i = 0, k = 0;

	while (i < n) {
		if (k == sizeof(want) - 1 || lower(pct_byte(s, n, &i)) != want[k])
			return false;
		k++;
	}
	return k == sizeof(want) - 1;
}

/* token appears in s[0..n), raw or percent-encoded, in any case. */
static bool holds_token(const char *s, size_t n, const char *token)
{
	size_t tl = token ? strlen(token) : 0;

	for (size_t i = 0; tl && i < n; i++) {
		size_t j = i, k = 0;

		while (k < tl && j < n &&
		       lower(pct_byte(s, n, &j)) == lower((unsigned char)token[k]))
			k++;
		if (k == tl)
			return true;
	}
	return false;
}

/*
 * The Referer field without what could carry a preview token to the
 * guest: its "token" query parameters, whatever their value (on the path
 * form's single origin the referring page may be another preview's, with
 * that one's token), and its fragment (RFC 9110 section 10.1.3: a
 * referrer has none). Left out whole when it is not plain URL bytes, is
 * empty without them, or still holds this preview's token anywhere (in
 * its path, %-encoded, in capitals).
 */
static void put_referer(struct out *o, const char *v, const char *token)
{
	static const char name[] = "Referer: ";
	size_t start = o->n, lines = o->lines, end = strcspn(v, "#"), q = strcspn(v, "?#");
	bool over = o->over, first = true;

	for (const char *c = v; *c; c++)
		if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f)
			return;
	puts_(o, name);
	put(o, v, q);
	for (size_t i = q + 1; i < end;) {
		size_t k = strcspn(v + i, "&#"), eq = strcspn(v + i, "=&#");

		if (k && !names_token(v + i, eq)) {
			put(o, first ? "?" : "&", 1);
			put(o, v + i, k);
			first = false;
		}
		i += k + 1;
	}
	if (!o->over &&
	    (o->n == start + sizeof(name) - 1 ||
	     holds_token(o->p + start + sizeof(name) - 1, o->n - start - (sizeof(name) - 1),
			 token))) {
		o->n = start;
		o->lines = lines;
		o->over = over;
		return;
	}
	puts_(o, "\r\n");
}

long preview_head_rewrite(const struct http_head *h, const struct preview_req *r, const char *token,
			  const char *client, char *out, size_t cap)
{
	struct out o = { .p = out, .cap = cap };
	const char *host = http_head_field(h, "Host");

	puts_(&o, h->method);
	puts_(&o, " ");
	put(&o, r->rest, r->rest_len);
	put_query(&o, h->query, token, true);
	putf(&o, " HTTP/1.%d\r\n", h->minor);
	for (size_t i = 0; i < h->nfields; i++) {
		const struct http_field *f = &h->fields[i];

		if (dropped(f, token))
			continue;
		if (!strcasecmp(f->name, "Cookie")) {
			put_cookie(&o, f->value);
			continue;
		}
		if (!strcasecmp(f->name, "Referer")) {
			put_referer(&o, f->value, token);
			continue;
		}
		puts_(&o, f->name);
		puts_(&o, ": ");
		puts_(&o, f->value);
		puts_(&o, "\r\n");
	}
	puts_(&o, r->upgrade ? "Connection: Upgrade\r\n" : "Connection: close\r\n");
	putf(&o, "X-Forwarded-For: %s\r\nX-Forwarded-Proto: http\r\n", client);
	/* A name and a port; a longer Host is no host name and not repeated. */
	if (host && strlen(host) <= PREVIEW_DOMAIN_MAX + 8) {
		puts_(&o, "X-Forwarded-Host: ");
		puts_(&o, host);
		puts_(&o, "\r\n");
	}
	if (r->form == PREVIEW_BY_PATH)
		putf(&o, "X-Forwarded-Prefix: /preview/%s/%u\r\n", r->id, (unsigned)r->port);
	puts_(&o, "\r\n");
	/* Within kilnd's own limits for a head (what its parser takes), so a
	 * guest server never sees more than a client could send kilnd. */
	if (o.over || o.n > HTTP_HEAD_MAX || o.lines - 2 > HTTP_FIELDS_MAX)
		return -1;
	return (long)o.n;
}

/*
 * A target a browser keeps on this site as the Location of a redirect: a
 * browser reads '\' as '/' (so "/\evil.example" is "//evil.example",
 * another host) and drops tabs and line ends from a URL before reading
 * it ("/\t/evil.example" is that too); a space or another control byte
 * is no URL's either (and a line end would end the field). None of these
 * may be anywhere in the path, nor but '\' in the query. %-escapes stay
 * as they are: a browser resolving a Location decodes none, so
 * "/%5Cevil.example" and "/%2F%2Fevil.example" are paths of this site.
 */
static bool url_bytes(const char *s, bool backslash)
{
	for (; s && *s; s++)
		if ((*s == '\\' && !backslash) || (unsigned char)*s <= 0x20 ||
		    (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

long preview_redirect(const struct http_head *h, const struct preview_req *r, const char *token,
		      char *out, size_t cap)
{
	struct out o = { .p = out, .cap = cap };
	struct preview_err e;
	const char *path = h->path;
	size_t n;

	if (path[0] != '/' || !url_bytes(path, false) || !url_bytes(h->query, true)) {
		preview_err_set(
			&e, 400, "bad_request",
			"no redirect to a path with a '\\', space or control byte (a browser would leave this site): give the token in X-Kiln-Preview-Token or open another path with ?token=");
		n = preview_err_answer(&e, out, cap);
		return n ? (long)n : -1;
	}
	/* "//host/x" is another site to a browser (a scheme-relative URL):
	 * the redirect stays on this one, as "/host/x". */
	while (path[0] == '/' && path[1] == '/')
		path++;
	puts_(&o, "HTTP/1.1 302 Found\r\nLocation: ");
	puts_(&o, path);
	put_query(&o, h->query, token, true);
	putf(&o, "\r\nSet-Cookie: %s=%s; Path=", r->cookie, token);
	if (r->form == PREVIEW_BY_PATH)
		putf(&o, "/preview/%s/%u", r->id, (unsigned)r->port);
	else
		puts_(&o, "/");
	puts_(&o,
	      "; HttpOnly; SameSite=Lax\r\nCache-Control: no-store\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
	return o.over ? -1 : (long)o.n;
}

size_t preview_err_answer(const struct preview_err *e, char *out, size_t cap)
{
	char body[sizeof(e->msg) * 2 + 128], retry[32] = "";
	struct out b = { .p = body, .cap = sizeof(body) };
	int n;

	putf(&b, "{\"error\":{\"code\":\"%s\",\"message\":\"", e->code);
	/* The message is kilnd's own text; escaped all the same. */
	for (const char *s = e->msg; *s && !b.over; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			put(&b, "\\", 1);
		put(&b, c < 0x20 || c == 0x7f ? "?" : s, 1);
	}
	puts_(&b, "\"}}\n");
	if (e->retry_after_s)
		snprintf(retry, sizeof(retry), "Retry-After: %u\r\n", e->retry_after_s);
	n = snprintf(out, cap,
		     "HTTP/1.1 %u %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n%s%s"
		     "Cache-Control: no-store\r\nConnection: close\r\n\r\n",
		     e->status, http_reason(e->status), b.n,
		     e->status == 401 ? "WWW-Authenticate: Bearer realm=\"kiln preview\"\r\n" : "",
		     retry);
	if (n < 0 || (size_t)n >= cap)
		return 0;
	if (b.n > cap - (size_t)n)
		b.n = cap - (size_t)n;
	memcpy(out + n, body, b.n);
	return (size_t)n + b.n;
}
