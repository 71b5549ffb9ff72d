/* The keeper's lines and /proc/PID/stat's start time; see keeper_proto.h. */
#include "api/kilnd/keeper/keeper_proto.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lib/base/num_parse.h"

/* Take the literal word at *p (then a space or the end), advancing *p. */
static bool take(const char **p, const char *end, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(end - *p) < n || memcmp(*p, word, n) != 0)
		return false;
	*p += n;
	return true;
}

/* "key=digits" then one space (last: the newline, which must end buf). */
static bool take_num(const char **p, const char *end, const char *key, bool last, uint64_t min,
		     uint64_t max, uint64_t *out)
{
	const char *s;

	if (!take(p, end, key) || !take(p, end, "="))
		return false;
	s = *p;
	while (*p < end && **p >= '0' && **p <= '9')
		(*p)++;
	if (*p == s || *p - s > 20 || num_parse_u64_n(s, (size_t)(*p - s), 10, min, max, out))
		return false;
	if (last)
		return *p + 1 == end && **p == '\n';
	return take(p, end, " ");
}

/* The exit status field: "-1" or 0..255. */
static bool take_status(const char **p, const char *end, int *status)
{
	uint64_t v;

	if (!take(p, end, "status="))
		return false;
	if (take(p, end, "-1 ")) {
		*status = -1;
		return true;
	}
	/* take_num wants its key: "status=" was taken, so match digits here. */
	const char *s = *p;

	while (*p < end && **p >= '0' && **p <= '9')
		(*p)++;
	if (*p == s || *p - s > 3 || num_parse_u64_n(s, (size_t)(*p - s), 10, 0, 255, &v))
		return false;
	*status = (int)v;
	return take(p, end, " ");
}

static bool id_fields(const char **p, const char *end, struct keeper_vmm_id *id, bool last)
{
	uint64_t pid, start;

	if (!take_num(p, end, "pid", false, 1, KEEPER_PID_MAX, &pid) ||
	    !take_num(p, end, "start", last, 0, UINT64_MAX, &start))
		return false;
	id->pid = (int)pid;
	id->start = start;
	return true;
}

static bool line_ok(const char *buf, size_t n)
{
	return n > 0 && n <= KEEPER_LINE_MAX && !memchr(buf, '\0', n) &&
		memchr(buf, '\n', n) == buf + n - 1;
}

int keeper_hello_format(char *out, size_t cap, const struct keeper_vmm_id *id)
{
	int n = snprintf(out, cap, "kiln-keeper %d pid=%d start=%llu\n", KEEPER_PROTO_VERSION,
			 id->pid, (unsigned long long)id->start);

	return n < 0 || (size_t)n >= cap ? -ENOSPC : n;
}

int keeper_hello_parse(const char *buf, size_t n, struct keeper_vmm_id *id)
{
	const char *p = buf, *end = buf + n;
	struct keeper_vmm_id v;

	if (!line_ok(buf, n) || !take(&p, end, "kiln-keeper 1 ") || !id_fields(&p, end, &v, true))
		return -EINVAL;
	*id = v;
	return 0;
}

int keeper_exit_format(char *out, size_t cap, const struct keeper_exit *x)
{
	int n;

	if (x->id.pid < 1 || x->id.pid > KEEPER_PID_MAX ||
	    !((x->status >= 0 && x->status <= 255 && x->signal == 0) ||
	      (x->status == -1 && x->signal >= 1 && x->signal <= 64)))
		return -EINVAL;
	n = snprintf(out, cap, "kiln-keeper %d exit pid=%d start=%llu status=%d signal=%d\n",
		     KEEPER_PROTO_VERSION, x->id.pid, (unsigned long long)x->id.start, x->status,
		     x->signal);
	return n < 0 || (size_t)n >= cap ? -ENOSPC : n;
}

int keeper_exit_parse(const char *buf, size_t n, struct keeper_exit *x)
{
	const char *p = buf, *end = buf + n;
	struct keeper_exit v;
	uint64_t sig;

	if (!line_ok(buf, n) || !take(&p, end, "kiln-keeper 1 exit ") ||
	    !id_fields(&p, end, &v.id, false) || !take_status(&p, end, &v.status) ||
	    !take_num(&p, end, "signal", true, 0, 64, &sig))
		return -EINVAL;
	v.signal = (int)sig;
	/* A status or a signal, never both or neither. */
	if ((v.status >= 0) == (v.signal != 0))
		return -EINVAL;
	*x = v;
	return 0;
}

#define CLAIM_HEAD "claim "

/* An absolute path of n bytes with no NUL or newline, below PATH_MAX. */
static bool claim_path_ok(const char *p, size_t n)
{
	return n >= 1 && n < PATH_MAX && p[0] == '/' && !memchr(p, '\0', n) && !memchr(p, '\n', n);
}

int keeper_claim_format(char *out, size_t cap, const char *dir)
{
	size_t n = strlen(dir), head = sizeof(CLAIM_HEAD) - 1;

	if (!claim_path_ok(dir, n))
		return -EINVAL;
	if (head + n + 1 > cap)
		return -ENOSPC;
	memcpy(out, CLAIM_HEAD, head);
	memcpy(out + head, dir, n + 1);
	return (int)(head + n);
}

int keeper_claim_parse(const char *buf, size_t n, char *dir, size_t cap)
{
	size_t head = sizeof(CLAIM_HEAD) - 1;

	if (n <= head || memcmp(buf, CLAIM_HEAD, head) != 0 ||
	    !claim_path_ok(buf + head, n - head) || n - head + 1 > cap)
		return -EINVAL;
	memcpy(dir, buf + head, n - head);
	dir[n - head] = '\0';
	return 0;
}
