/* http_token: see http_token.h. */
#include "lib/base/http_token.h"

#include <string.h>

bool http_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		(c && strchr("!#$%&'*+-.^_`|~", c));
}

bool http_token(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!http_tchar((unsigned char)s[i]))
			return false;
	return true;
}
