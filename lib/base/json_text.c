/* JSON text with shortest round-trip reals; see json_text.h. */
#include "lib/base/json_text.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/mem_grow.h"
#include "lib/base/utf8.h"

/* The flags kiln writes with; any other bit is refused. */
#define SUPPORTED                                                                                  \
	(JSON_MAX_INDENT | JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER | \
	 JSON_REAL_PRECISION(31))

struct out {
	char *p;
	size_t len, cap;
};

static int put(struct out *o, const char *s, size_t n)
{
	if (n >= SIZE_MAX / 2 - o->len)
		return -1;
	if (o->len + n + 1 > o->cap) {
		char *np = mem_grow(o->p, &o->cap, o->len + n + 1, 256, SIZE_MAX / 2);

		if (!np)
			return -1;
		o->p = np;
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
	o->p[o->len] = '\0';
	return 0;
}

/*
 * The significant digits of |x| (at most 17, no trailing zero but for
 * "0") and the decimal exponent of the first: the fewest digits that read
 * back as x. printf rounds correctly, so when a text of p digits reads
 * back, the one it writes (the nearest) does too, except at a power of
 * two, where the doubles below are twice as dense as above and the
 * nearest can fall out below while its neighbour above reads back: that
 * one is tried too. 17 digits always read back (IEEE 754, 5.12.2).
 */
static void real_digits(double ax, char digits[20], int *exp10)
{
	char t[JSON_TEXT_REAL_MAX];
	unsigned long long m = 0;
	int prec, e10 = 0;

	for (prec = 1; prec <= 17; prec++) {
		double back;
		char *c;

		snprintf(t, sizeof(t), "%.*e", prec - 1, ax); /* d.ddde+XX */
		back = strtod(t, NULL);
		m = 0;
		for (c = t; *c != 'e'; c++)
			if (*c != '.')
				m = m * 10 + (unsigned)(*c - '0');
		e10 = atoi(c + 1) - (prec - 1); /* |x| ~ m * 10^e10 */
		if (back == ax || prec == 17)
			break;
		snprintf(t, sizeof(t), "%llue%d", back < ax ? m + 1 : m - 1, e10);
		if (strtod(t, NULL) == ax) {
			m = back < ax ? m + 1 : m - 1;
			break;
		}
	}
	snprintf(digits, 20, "%llu", m);
	*exp10 = e10 + (int)strlen(digits) - 1;
	for (size_t l = strlen(digits); l > 1 && digits[l - 1] == '0'; l--)
		digits[l - 1] = '\0';
}

/* n zeros at o; returns o after them. */
static char *zeros(char *o, size_t n)
{
	memset(o, '0', n);
	return o + n;
}

size_t json_text_real(double x, char out[JSON_TEXT_REAL_MAX])
{
	char digits[20], *o = out;
	size_t n, ip;
	int exp10;

	if (!isfinite(x))
		return 0;
	real_digits(fabs(x), digits, &exp10);
	n = strlen(digits);
	if (signbit(x))
		*o++ = '-';
	if (exp10 < -4 || exp10 >= 16) {
		/* e-notation outside Python repr's plain range: 1e+16, 2.5e-05 */
		*o++ = digits[0];
		if (n > 1)
			o += sprintf(o, ".%s", digits + 1);
		o += sprintf(o, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
	} else if (exp10 < 0) {
		/* 0.000123 */
		o = zeros(o + sprintf(o, "0."), (size_t)(-exp10 - 1));
		o += sprintf(o, "%s", digits);
	} else {
		/* 123.45, 1000.0: a real stays a real when read back (5.0, not 5) */
		ip = (size_t)exp10 + 1;
		o += sprintf(o, "%.*s", (int)(n < ip ? n : ip), digits);
		o = zeros(o, n < ip ? ip - n : 0);
		o += sprintf(o, ".%s", n > ip ? digits + ip : "0");
	}
	return (size_t)(o - out);
}

/* A string's bytes between quotes, escaped as jansson escapes them: '"',
 * '\\' and the C0 controls (\b \f \n \r \t, else \u00XX). */
static const char short_escape[] = { ['"'] = '"',  ['\\'] = '\\', ['\b'] = 'b', ['\f'] = 'f',
				     ['\n'] = 'n', ['\r'] = 'r',  ['\t'] = 't' };

static int put_string(struct out *o, const char *s, size_t n)
{
	size_t run = 0, i = 0;

	if (put(o, "\"", 1))
		return -1;
	while (i < n) {
		unsigned char c = (unsigned char)s[i];
		char esc[8];
		int l;

		if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
			i++;
			continue;
		}
		if (c >= 0x80) {
			l = utf8_seq_len((const uint8_t *)s + i, n - i);
			if (l <= 0)
				return -1;
			i += (size_t)l;
			continue;
		}
		if (put(o, s + run, i - run))
			return -1;
		if (c < sizeof(short_escape) && short_escape[c])
			snprintf(esc, sizeof(esc), "\\%c", short_escape[c]);
		else
			snprintf(esc, sizeof(esc), "\\u%04X", c);
		if (put(o, esc, strlen(esc)))
			return -1;
		run = ++i;
	}
	return put(o, s + run, n - run) || put(o, "\"", 1) ? -1 : 0;
}

/* jansson's dump_indent: a newline and depth * n spaces with JSON_INDENT(n);
 * else one space after a ',' (space) unless JSON_COMPACT. */
static int put_indent(struct out *o, size_t flags, unsigned depth, bool space)
{
	size_t n = (size_t)(flags & JSON_MAX_INDENT) * depth;

	if (flags & JSON_MAX_INDENT) {
		if (put(o, "\n", 1))
			return -1;
		for (; n > 0; n--)
			if (put(o, " ", 1))
				return -1;
		return 0;
	}
	return space && !(flags & JSON_COMPACT) ? put(o, " ", 1) : 0;
}

struct key {
	const char *s;
	size_t len;
	json_t *v;
};

/* jansson's order: by bytes, a prefix first. */
static int key_cmp(const void *a, const void *b)
{
	const struct key *x = a, *y = b;
	int r = memcmp(x->s, y->s, x->len < y->len ? x->len : y->len);

	return r ? r : (x->len > y->len) - (x->len < y->len);
}

static int put_value(struct out *o, const json_t *v, size_t flags, unsigned depth);

/* Between the brackets: n members (keys NULL: an array's), jansson's layout. */
static int put_members(struct out *o, const struct key *m, size_t n, size_t flags, unsigned depth,
		       bool object)
{
	if (put_indent(o, flags, depth + 1, false))
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (object &&
		    (put_string(o, m[i].s, m[i].len) || put(o, ": ", flags & JSON_COMPACT ? 1 : 2)))
			return -1;
		if (put_value(o, m[i].v, flags, depth + 1))
			return -1;
		if (i + 1 < n ? put(o, ",", 1) || put_indent(o, flags, depth + 1, true)
			      : put_indent(o, flags, depth, false))
			return -1;
	}
	return 0;
}

static int put_container(struct out *o, const json_t *v, size_t flags, unsigned depth)
{
	bool object = json_is_object(v);
	size_t n = object ? json_object_size(v) : json_array_size(v), i = 0;
	struct key *m;
	int r;

	if (put(o, object ? "{" : "[", 1))
		return -1;
	if (n == 0)
		return put(o, object ? "}" : "]", 1);
	if (depth >= JSON_TEXT_DEPTH_MAX || !(m = calloc(n, sizeof(*m))))
		return -1;
	if (object) {
		for (void *it = json_object_iter((json_t *)v); it && i < n;
		     it = json_object_iter_next((json_t *)v, it), i++) {
			m[i].s = json_object_iter_key(it);
			m[i].len = json_object_iter_key_len(it);
			m[i].v = json_object_iter_value(it);
		}
		n = i;
		if ((flags & JSON_SORT_KEYS) && n > 1)
			qsort(m, n, sizeof(*m), key_cmp);
	} else {
		for (; i < n; i++)
			m[i].v = json_array_get(v, i);
	}
	r = put_members(o, m, n, flags, depth, object);
	free(m);
	return r || put(o, object ? "}" : "]", 1) ? -1 : 0;
}

static int put_value(struct out *o, const json_t *v, size_t flags, unsigned depth)
{
	char num[JSON_TEXT_REAL_MAX]; /* also an int64's 20 digits and sign */
	size_t n;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
	case JSON_ARRAY:
		return put_container(o, v, flags, depth);
	case JSON_STRING:
		return put_string(o, json_string_value(v), json_string_length(v));
	case JSON_INTEGER:
		n = (size_t)snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
				     json_integer_value(v));
		return put(o, num, n);
	case JSON_REAL:
		n = json_text_real(json_real_value(v), num);
		return n ? put(o, num, n) : -1;
	case JSON_TRUE:
		return put(o, "true", 4);
	case JSON_FALSE:
		return put(o, "false", 5);
	case JSON_NULL:
		return put(o, "null", 4);
	}
	return -1;
}

char *json_text(const json_t *v, size_t flags)
{
	struct out o = { 0 };

	if (!v || (flags & ~(size_t)SUPPORTED) ||
	    (!(flags & JSON_ENCODE_ANY) && !json_is_object(v) && !json_is_array(v)))
		return NULL;
	if (put_value(&o, v, flags, 0)) {
		free(o.p);
		return NULL;
	}
	return o.p;
}

size_t json_text_len(const json_t *v, size_t flags)
{
	char *s = json_text(v, flags);
	size_t n = s ? strlen(s) : 0;

	free(s);
	return n;
}

int json_text_stdio(const json_t *v, FILE *f, size_t flags)
{
	char *s = json_text(v, flags);
	size_t n = s ? strlen(s) : 0;
	int r = s && fwrite(s, 1, n, f) == n ? 0 : -1;

	free(s);
	return r;
}

int json_text_file(const json_t *v, const char *path, size_t flags)
{
	char *s = json_text(v, flags);
	FILE *f;
	int r;

	if (!s) {
		errno = EINVAL;
		return -1;
	}
	f = fopen(path, "we");
	r = f && fputs(s, f) >= 0 ? 0 : -1;
	if (f && fclose(f) && r == 0)
		r = -1;
	free(s);
	return r;
}
