/* text_clean: printable text from untrusted bytes (text_clean.h). */
#include "lib/base/text_clean.h"

#include <stdint.h>
#include <string.h>

#include "lib/base/utf8.h"

/*
 * The unit at s[0..n) under the term rule: its length, and whether it is
 * kept. A refused unit is one byte (an invalid byte, a C0 control, DEL)
 * or a whole 2-byte C1 character.
 */
static size_t term_unit(const uint8_t *s, size_t n, bool *keep)
{
	int l = utf8_seq_len(s, n);

	if (l <= 0) {
		*keep = false;
		return 1;
	}
	if (l == 1)
		*keep = s[0] >= 0x20 && s[0] != 0x7f;
	else /* U+0080..U+009F is C2 80..C2 9F */
		*keep = !(l == 2 && s[0] == 0xc2 && s[1] <= 0x9f);
	return (size_t)l;
}

size_t text_clean_term(char *out, size_t cap, const char *s, size_t n)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t i = 0, o = 0;

	if (!cap)
		return 0;
	while (i < n) {
		bool keep;
		size_t l = term_unit(p + i, n - i, &keep);

		if (o + l >= cap)
			break;
		if (keep)
			memcpy(out + o, s + i, l);
		else
			memset(out + o, '?', l);
		o += l;
		i += l;
	}
	out[o] = '\0';
	return o;
}

void text_clean_term_inplace(char *s)
{
	uint8_t *p = (uint8_t *)s;
	size_t n = strlen(s);

	for (size_t i = 0; i < n;) {
		bool keep;
		size_t l = term_unit(p + i, n - i, &keep);

		if (!keep)
			memset(p + i, '?', l);
		i += l;
	}
}

void text_clean_term_fput(FILE *f, const char *s)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t n = strlen(s);

	for (size_t i = 0; i < n;) {
		bool keep;
		size_t l = term_unit(p + i, n - i, &keep);

		for (size_t k = 0; k < l; k++)
			fputc(keep ? s[i + k] : '?', f);
		i += l;
	}
}

size_t text_clean_ascii(char *out, size_t cap, const char *s, size_t n)
{
	size_t i;

	if (!cap)
		return 0;
	for (i = 0; i < n && i + 1 < cap; i++)
		out[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	out[i] = '\0';
	return i;
}

size_t text_clean_control_at(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((uint8_t)s[i] < 0x20 || s[i] == 0x7f)
			break;
	return i;
}
