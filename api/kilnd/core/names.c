/* Name and path syntax; see names.h. */
#include "api/kilnd/core/names.h"

#include <string.h>

static bool is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

void sandbox_id_format(const uint8_t rnd[SANDBOX_ID_RANDOM_BYTES], char *out)
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < SANDBOX_ID_RANDOM_BYTES; i++) {
		out[2 * i] = hex[rnd[i] >> 4];
		out[2 * i + 1] = hex[rnd[i] & 15];
	}
	out[SANDBOX_ID_LEN] = '\0';
}

bool sandbox_id_valid(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++) {
		if (i >= SANDBOX_ID_LEN ||
		    !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	}
	return i == SANDBOX_ID_LEN;
}

static bool name_like(const char *s, size_t max, const char *extra)
{
	size_t n = strnlen(s, max + 1);

	if (n == 0 || n > max || !is_alnum(s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum(s[i]) && !strchr(extra, s[i]))
			return false;
	return true;
}

bool image_name_valid(const char *s)
{
	return name_like(s, IMAGE_NAME_MAX, "._-");
}

bool image_ref_valid(const char *s)
{
	return name_like(s, IMAGE_REF_MAX, "._:@/+-");
}

bool label_key_valid(const char *s)
{
	return name_like(s, LABEL_KEY_MAX, "._/-");
}

bool dns_name_valid(const char *s, size_t max, bool lower_only)
{
	size_t n = strnlen(s, max + 1), label = 0;

	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i <= n; i++) {
		if (i == n || s[i] == '.') {
			if (label == 0 || label > 63 || s[i - 1] == '-')
				return false;
			label = 0;
			continue;
		}
		if ((!is_alnum(s[i]) && s[i] != '-') || (lower_only && s[i] >= 'A' && s[i] <= 'Z'))
			return false;
		if (label == 0 && s[i] == '-')
			return false;
		label++;
	}
	return true;
}

bool hostname_valid(const char *s)
{
	return dns_name_valid(s, HOSTNAME_MAX, false);
}

bool guest_mount_path_valid(const char *s, size_t max)
{
	size_t n = strnlen(s, max + 1);

	if (n < 2 || n > max || s[0] != '/')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum(s[i]) && !strchr("._/+-", s[i]))
			return false;
	/* Components: no "." or ".." (the guest resolves them, but a mount
	 * point that is not what it says would surprise). Empty ones ("//")
	 * and a trailing '/' are harmless and allowed; "//" alone is "/". */
	size_t parts = 0;

	for (const char *c = s; *c;) {
		const char *e;
		size_t l;

		while (*c == '/')
			c++;
		e = strchrnul(c, '/');
		l = (size_t)(e - c);
		if ((l == 1 && c[0] == '.') || (l == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		parts += l > 0;
		c = e;
	}
	return parts > 0;
}

bool guest_path_valid(const char *s, size_t max)
{
	size_t n = strnlen(s, max + 1);

	return n >= 1 && n <= max && s[0] == '/';
}

bool host_path_valid(const char *s)
{
	if (s[0] != '/')
		return false;
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}
