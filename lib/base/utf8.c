/* utf8: the UTF-8 decoder (utf8.h). */
#include "lib/base/utf8.h"

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
