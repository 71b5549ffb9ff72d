/* Lines between kiln-runtime's commands and a shim; see rt_shim_proto.h. */
#include "api/runtime/rt_shim_proto.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lib/base/num_parse.h"
#include "lib/base/text_clean.h"

size_t rt_shim_req_encode(const struct rt_shim_req *r, char *buf)
{
	switch (r->op) {
	case RT_SHIM_KILL:
		return (size_t)snprintf(buf, RT_SHIM_LINE_MAX, "kill %d%s\n", r->signo,
					r->all ? " all" : "");
	case RT_SHIM_RESIZE:
		return (size_t)snprintf(buf, RT_SHIM_LINE_MAX, "resize %u %u\n", r->rows, r->cols);
	default:
		return (size_t)snprintf(buf, RT_SHIM_LINE_MAX, "start\n");
	}
}

/* One line: n bytes ending in its only '\n'. */
static bool one_line(const char *buf, size_t n)
{
	return n > 0 && n <= RT_SHIM_LINE_MAX && buf[n - 1] == '\n' &&
		memchr(buf, '\n', n) == buf + n - 1;
}

/* The next word of [*p, end) (up to ' ' or '\n'), *p moved past it and
 * one following space. */
static size_t word(const char **p, const char *end, const char **w)
{
	size_t k = 0;

	*w = *p;
	while (*p + k < end && (*p)[k] != ' ' && (*p)[k] != '\n')
		k++;
	*p += k;
	if (*p < end && **p == ' ')
		(*p)++;
	return k;
}

static bool number(const char *w, size_t k, uint64_t min, uint64_t max, uint64_t *v)
{
	return !(k > 1 && w[0] == '0') && num_parse_u64_n(w, k, 10, min, max, v) == 0;
}

int rt_shim_req_decode(const char *buf, size_t n, struct rt_shim_req *r, struct err *e)
{
	const char *p = buf, *end = buf + n - 1, *w;
	uint64_t a, b;
	size_t k;

	/* one space between words, none at the end */
	if (!one_line(buf, n) || (n >= 2 && buf[n - 2] == ' '))
		goto bad;
	memset(r, 0, sizeof(*r));
	k = word(&p, end, &w);
	if (k == 5 && !memcmp(w, "start", 5) && p == end) {
		r->op = RT_SHIM_START;
		return 0;
	}
	if (k == 4 && !memcmp(w, "kill", 4)) {
		k = word(&p, end, &w);
		if (!number(w, k, 0, 64, &a))
			goto bad;
		r->op = RT_SHIM_KILL;
		r->signo = (int)a;
		if (p < end) {
			k = word(&p, end, &w);
			if (k != 3 || memcmp(w, "all", 3) || p != end)
				goto bad;
			r->all = true;
		}
		if (p != end)
			goto bad;
		return 0;
	}
	if (k == 6 && !memcmp(w, "resize", 6)) {
		k = word(&p, end, &w);
		if (!number(w, k, 1, 65535, &a))
			goto bad;
		k = word(&p, end, &w);
		if (!number(w, k, 1, 65535, &b) || p != end)
			goto bad;
		*r = (struct rt_shim_req){ .op = RT_SHIM_RESIZE,
					   .rows = (unsigned)a,
					   .cols = (unsigned)b };
		return 0;
	}
bad:
	return err_set(e, EINVAL,
		       "the shim's request is not one of: start, kill SIGNO [all], "
		       "resize ROWS COLS");
}

size_t rt_shim_reply_encode(const char *msg, char *buf)
{
	size_t k;

	if (!msg)
		return (size_t)snprintf(buf, RT_SHIM_LINE_MAX, "ok\n");
	memcpy(buf, "err ", 4);
	k = 4 + text_clean_term(buf + 4, ERR_MSG_MAX, msg, strlen(msg));
	if (k == 4)
		k += (size_t)snprintf(buf + 4, 2, "?");
	buf[k++] = '\n';
	buf[k] = '\0';
	return k;
}

int rt_shim_reply_decode(const char *buf, size_t n, struct err *e)
{
	if (one_line(buf, n) && n == 3 && !memcmp(buf, "ok\n", 3))
		return 0;
	if (one_line(buf, n) && n > 5 && !memcmp(buf, "err ", 4) && n - 5 < ERR_MSG_MAX) {
		if (e)
			snprintf(e->msg, sizeof(e->msg), "%.*s", (int)(n - 5), buf + 4);
		return -EIO;
	}
	return err_set(e, EINVAL,
		       n ? "the container's shim answered out of turn"
			 : "the container's shim ended without an answer (see --log and the "
			   "container's vmm.log)");
}
