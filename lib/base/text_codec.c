/* UTF-8 and base64 for JSON bodies; see text_codec.h. */
#include "lib/base/text_codec.h"

#include <errno.h>
#include <string.h>

size_t utf8_complete_prefix(const uint8_t *s, size_t n)
{
	/* A sequence is at most 4 bytes: only its lead can be within the last 3. */
	size_t start = n > 3 ? n - 3 : 0;

	for (size_t i = n; i > start; i--) {
		uint8_t c = s[i - 1];

		if ((c & 0xc0) != 0x80) {
			/* The last lead byte: held back only if incomplete and valid so far. */
			return utf8_seq_len(s + i - 1, n - (i - 1)) < 0 ? i - 1 : n;
		}
	}
	return n;
}

size_t utf8_sanitize(const uint8_t *s, size_t n, bool drop_controls, char *out)
{
	size_t i = 0, o = 0;

	while (i < n) {
		int l = utf8_seq_len(s + i, n - i);

		if (l <= 0) {
			/* U+FFFD, the replacement character, per invalid byte. */
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
			continue;
		}
		if (drop_controls && l == 1 && (s[i] < 0x20 || s[i] == 0x7f) && s[i] != '\t') {
			i++;
			continue;
		}
		memcpy(out + o, s + i, (size_t)l);
		o += (size_t)l;
		i += (size_t)l;
	}
	out[o] = '\0';
	return o;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t base64_encoded_size(size_t n)
{
	return (n + 2) / 3 * 4 + 1;
}

size_t base64_encode(const uint8_t *s, size_t n, char *out)
{
	size_t o = 0, i = 0;

	for (; i + 3 <= n; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];

		out[o++] = b64[v >> 18];
		out[o++] = b64[(v >> 12) & 63];
		out[o++] = b64[(v >> 6) & 63];
		out[o++] = b64[v & 63];
	}
	if (n - i == 1) {
		uint32_t v = (uint32_t)s[i] << 16;

		out[o++] = b64[v >> 18];
		out[o++] = b64[(v >> 12) & 63];
		out[o++] = '=';
		out[o++] = '=';
	} else if (n - i == 2) {
		uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8;

		out[o++] = b64[v >> 18];
		out[o++] = b64[(v >> 12) & 63];
		out[o++] = b64[(v >> 6) & 63];
		out[o++] = '=';
	}
	out[o] = '\0';
	return o;
}

static int b64_val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int base64_decode(const char *s, size_t n, uint8_t *out, size_t *outlen)
{
	size_t o = 0;

	if (n % 4)
		return -EINVAL;
	for (size_t i = 0; i < n; i += 4) {
		int v[4], pad = 0;
		bool last = i + 4 == n;

		for (int j = 0; j < 4; j++) {
			if (s[i + j] == '=' && last && j >= 2) {
				v[j] = 0;
				pad++;
				continue;
			}
			if (pad)
				return -EINVAL; /* data after padding */
			v[j] = b64_val(s[i + j]);
			if (v[j] < 0)
				return -EINVAL;
		}
		uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];

		/* Canonical form: the bits padding covers must be zero. */
		if ((pad == 1 && (w & 0xff)) || (pad == 2 && (w & 0xffff)))
			return -EINVAL;
		out[o++] = (uint8_t)(w >> 16);
		if (pad < 2)
			out[o++] = (uint8_t)(w >> 8);
		if (pad < 1)
			out[o++] = (uint8_t)w;
	}
	*outlen = o;
	return 0;
}
