/* URL query strings; see url_query.h. */
#include "lib/base/url_query.h"

#include <errno.h>
#include <string.h>

#include "lib/base/num_parse.h"

size_t query_unescape(char *s)
{
	size_t r = 0, w = 0;

	while (s[r]) {
		int hi = s[r] == '%' ? num_hex_digit(s[r + 1]) : -1;
		int lo = hi >= 0 ? num_hex_digit(s[r + 2]) : -1;

		if (lo >= 0 && (hi | lo)) {
			s[w++] = (char)(hi << 4 | lo);
			r += 3;
		} else {
			s[w++] = s[r++];
		}
	}
	s[w] = '\0';
	return w;
}

static void plus_to_space(char *s)
{
	for (; *s; s++)
		if (*s == '+')
			*s = ' ';
}

int query_split(char *q, struct query_kv *kv, size_t max, size_t *n)
{
	*n = 0;
	while (q && *q) {
		char *amp = strchr(q, '&'), *eq;

		if (amp)
			*amp = '\0';
		if (*q) {
			if (*n == max)
				return -E2BIG;
			eq = strchr(q, '=');
			if (eq)
				*eq++ = '\0';
			plus_to_space(q);
			query_unescape(q);
			if (eq) {
				plus_to_space(eq);
				query_unescape(eq);
			}
			kv[(*n)++] = (struct query_kv){ .key = q, .value = eq };
		}
		q = amp ? amp + 1 : NULL;
	}
	return 0;
}
