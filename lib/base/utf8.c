/* utf8: the UTF-8 decoder (utf8.h). */
#include "lib/base/utf8.h"

#include <string.h>

/* The second byte's range depends on the first (RFC 3629, section 4):
 * that is what excludes overlongs, surrogates and code points above
 * U+10FFFF. */
int utf8_seq_len(const uint8_t *s, size_t n)
{
	uint8_t c = s[0], lo = 0x80, hi = 0xbf;
	int need;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		need = 1;
	else if (c >= 0xe0 && c <= 0xef) {
		need = 2;
		if (c == 0xe0)
			lo = 0xa0; /* overlong */
		else if (c == 0xed)
			hi = 0x9f; /* surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 3;
		if (c == 0xf0)
			lo = 0x90; /* overlong */
		else if (c == 0xf4)
			hi = 0x8f; /* above U+10FFFF */
	} else
		return 0;
	for (int i = 1; i <= need; i++) {
		if ((size_t)i >= n)
			return -(need - i + 1);
		if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xbf))
			return 0;
	}
	return need + 1;
}

bool utf8_valid(const uint8_t *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		int l = utf8_seq_len(s + i, n - i);

		if (l <= 0)
			return false;
		i += (size_t)l;
	}
	return true;
}

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

size_t utf8_lossy(char *out, size_t cap, const uint8_t *s, size_t n, unsigned flags, bool *lossy)
{
	static const char repl[] = "\xef\xbf\xbd"; /* U+FFFD, the replacement character */
	size_t i = 0, o = 0;

	if (!cap)
		return 0;
	while (i < n) {
		int l = utf8_seq_len(s + i, n - i);
		size_t cl = l > 0 ? (size_t)l : 3;

		if ((flags & UTF8_DROP_CONTROLS) && l == 1 && (s[i] < 0x20 || s[i] == 0x7f) &&
		    s[i] != '\t') {
			i++;
			continue;
		}
		if (o + cl > cap - 1)
			break;
		memcpy(out + o, l > 0 ? (const char *)s + i : repl, cl);
		o += cl;
		if (l <= 0 && lossy)
			*lossy = true;
		i += l > 0 ? (size_t)l : 1;
	}
	out[o] = '\0';
	return o;
}
