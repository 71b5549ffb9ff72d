/* The tty stream's request, answer head and resize escape (cli_tty.h). */
#include "api/kiln/cli_tty.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

int cli_tty_request(char *buf, size_t n, const char *path)
{
	int w = snprintf(buf, n,
			 "GET %s HTTP/1.1\r\n"
			 "Host: kiln\r\n"
			 "Connection: Upgrade\r\n"
			 "Upgrade: " CLI_TTY_PROTOCOL "\r\n"
			 "\r\n",
			 path);

	if (w < 0 || (size_t)w >= n)
		return -ENAMETOOLONG;
	return w;
}

/* Does the comma-separated value v[0..n) list token (any case)? */
static bool lists_token(const char *v, size_t n, const char *token)
{
	size_t tn = strlen(token), i = 0;

	while (i < n) {
		size_t s, e;

		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		s = i;
		while (i < n && v[i] != ',')
			i++;
		e = i;
		while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (e - s == tn && !strncasecmp(v + s, token, tn))
			return true;
	}
	return false;
}

/* A header line name: value (no CR/LF) into h. -1 for a malformed line. */
static int head_field(const char *l, size_t n, struct cli_http_head *h)
{
	const char *colon = memchr(l, ':', n);
	size_t nl, vs;
	const char *v;

	if (!colon || colon == l)
		return -1;
	nl = (size_t)(colon - l);
	for (vs = nl + 1; vs < n && (l[vs] == ' ' || l[vs] == '\t'); vs++)
		;
	v = l + vs;
	n -= vs;
	if (nl == 14 && !strncasecmp(l, "Content-Length", 14)) {
		long long cl = 0;

		if (!n)
			return -1;
		for (size_t i = 0; i < n; i++) {
			if (v[i] < '0' || v[i] > '9' || cl > (1LL << 40))
				return -1;
			cl = cl * 10 + (v[i] - '0');
		}
		h->content_length = cl;
	} else if (nl == 17 && !strncasecmp(l, "Transfer-Encoding", 17)) {
		h->chunked = lists_token(v, n, "chunked");
	} else if (nl == 7 && !strncasecmp(l, "Upgrade", 7)) {
		h->upgrade = lists_token(v, n, CLI_TTY_PROTOCOL);
	}
	return 0;
}

int cli_http_head_parse(const char *p, size_t n, struct cli_http_head *h)
{
	size_t i = 0;
	bool first = true;

	memset(h, 0, sizeof(*h));
	h->content_length = -1;
	if (n > CLI_TTY_HEAD_MAX)
		n = CLI_TTY_HEAD_MAX + 1;
	/* Reject what is not a response as soon as its first bytes say so,
	 * rather than waiting for a blank line that may never come. */
	if (memcmp(p, "HTTP/1.", n < 7 ? n : 7))
		return -1;
	for (;;) {
		const char *nl = memchr(p + i, '\n', n - i);
		size_t len;

		if (!nl)
			return n > CLI_TTY_HEAD_MAX ? -1 : 0;
		len = (size_t)(nl - (p + i));
		if (len && p[i + len - 1] == '\r')
			len--;
		if (first) {
			const char *l = p + i;

			/* "HTTP/1.x SSS reason": three digits, then space or end. */
			if (len < 12 || l[7] < '0' || l[7] > '9' || l[8] != ' ' || l[9] < '1' ||
			    l[9] > '5' || l[10] < '0' || l[10] > '9' || l[11] < '0' ||
			    l[11] > '9' || (len > 12 && l[12] != ' '))
				return -1;
			h->status = (l[9] - '0') * 100 + (l[10] - '0') * 10 + (l[11] - '0');
			first = false;
		} else if (len == 0) {
			h->len = (size_t)(nl - p) + 1;
			return h->len > CLI_TTY_HEAD_MAX ? -1 : 1;
		} else if (head_field(p + i, len, h)) {
			return -1;
		}
		i = (size_t)(nl - p) + 1;
	}
}

size_t cli_tty_resize_escape(char *buf, unsigned rows, unsigned cols)
{
	rows = rows < 1 ? 1 : rows > 65535 ? 65535 : rows;
	cols = cols < 1 ? 1 : cols > 65535 ? 65535 : cols;
	return (size_t)snprintf(buf, CLI_TTY_ESC_MAX, "\x1b]kiln;resize;%u;%u\x07", rows, cols);
}

size_t cli_tty_eof_bytes(int last, char *buf)
{
	size_t n = 0;

	if (last >= 0 && last != '\n' && last != '\r')
		buf[n++] = '\n';
	buf[n++] = 4;
	return n;
}
