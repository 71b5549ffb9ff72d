#include "guest-init/sys/params.h"

#include <errno.h>
#include <string.h>

int param_get(const char *cmdline, const char *key, char *out, size_t outlen)
{
	size_t klen = strlen(key);
	const char *p = cmdline;
	int found = 0, toolong = 0;

	if (outlen)
		out[0] = '\0';
	while (*p) {
		const char *start, *val = NULL, *vend;
		int quoted = 0;

		while (*p == ' ' || *p == '\t' || *p == '\n')
			p++;
		if (!*p)
			break;
		start = p;
		/* A parameter ends at unquoted whitespace. */
		while (*p && (quoted || (*p != ' ' && *p != '\t' && *p != '\n'))) {
			if (*p == '"')
				quoted = !quoted;
			if (*p == '=' && !val)
				val = p + 1;
			p++;
		}
		vend = p;
		if ((size_t)((val ? val - 1 : vend) - start) != klen ||
		    strncmp(start, key, klen) != 0)
			continue;
		found = 1;
		toolong = 0;
		if (!val) {
			if (outlen)
				out[0] = '\0';
			continue;
		}
		if (*val == '"') {
			val++;
			if (vend > val && vend[-1] == '"')
				vend--;
		}
		if ((size_t)(vend - val) >= outlen) {
			/* A later occurrence that fits still wins. */
			if (outlen)
				out[0] = '\0';
			toolong = 1;
			continue;
		}
		memcpy(out, val, (size_t)(vend - val));
		out[vend - val] = '\0';
	}
	return toolong ? -E2BIG : found;
}
