/* num_parse: strict unsigned numbers (num_parse.h). */
#include "lib/base/num_parse.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

int num_parse_u64_n(const char *s, size_t n, int base, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	bool wide = false;

	if (!s || n == 0 || (base != 10 && base != 8))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned)(s[i] - '0');

		if (s[i] < '0' || d >= (unsigned)base)
			return -EINVAL;
		/* Keep reading after an overflow: "99999999999999999999x" is
		 * not a number at all, which says more than "too large". */
		if (v > (UINT64_MAX - d) / (unsigned)base)
			wide = true;
		else
			v = v * (unsigned)base + d;
	}
	if (wide || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int num_parse_u64(const char *s, int base, uint64_t min, uint64_t max, uint64_t *out)
{
	return num_parse_u64_n(s, s ? strlen(s) : 0, base, min, max, out);
}

int num_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}
