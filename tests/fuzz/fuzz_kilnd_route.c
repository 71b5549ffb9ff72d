/*
 * fuzz_kilnd_route: kilnd's route table (api/kilnd/http/route.c) and the
 * path segments it captures ({proc}: proc_id_parse, {cp}:
 * checkpoint_name_valid), any method and any path a client sends.
 *
 * Input: method (1 byte: one of the table below; 0xff: the method is the
 * bytes up to the first '\n'), then the path.
 * Invariants: a match names a real operation and the path is exactly its
 * pattern with the captured segments put back (so a capture is one
 * non-empty segment of at most ROUTE_ID_MAX bytes, no '/'); the same
 * request matches the same way twice; a refusal is route_not_found (no
 * captures) or method_not_allowed with an Allow list that does not hold
 * the method, both with a message; a process id that parses prints back
 * as the segment; a checkpoint name that passes holds only [A-Za-z0-9._-].
 */
#include "api/kilnd/http/route.h"
#include "api/kilnd/bodies/proc_spec.h"
#include "api/kilnd/registry/checkpoint.h"
#include "fuzz.h"

static const char *const methods[] = { "GET", "POST", "PUT", "DELETE", "HEAD", "get", "PATCH", "" };

/* Whether the comma-separated Allow value lists method. */
static int allow_has(const char *allow, const char *method)
{
	size_t n = strlen(method);

	for (const char *p = allow; p && *p;) {
		size_t t = strcspn(p, ",");

		if (t == n && !memcmp(p, method, n))
			return 1;
		p += t;
		p += strspn(p, ", ");
	}
	return 0;
}

static void check_proc(const char *seg)
{
	struct api_err e = { 0 };
	uint32_t id = 0;
	char back[16];

	if (proc_id_parse(seg, &id, &e) == 0) {
		snprintf(back, sizeof(back), "%u", id);
		FUZZ_ASSERT(id >= 1 && !strcmp(back, seg));
	} else {
		FUZZ_ASSERT(e.code == API_E_PROCESS_NOT_FOUND && e.msg[0]);
	}
}

static void check_cp(const char *seg)
{
	size_t n = strlen(seg);

	if (!checkpoint_name_valid(seg))
		return;
	FUZZ_ASSERT(n >= 1 && n <= CHECKPOINT_NAME_MAX && strspn(seg, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		    "abcdefghijklmnopqrstuvwxyz0123456789._-") == n);
	FUZZ_ASSERT(n < 4 || strcmp(seg + n - 4, ".tmp"));
}

static int is_proc_op(enum route_op op)
{
	return op == OP_PROC_GET || op == OP_PROC_OUTPUT || op == OP_PROC_STDIN || op == OP_PROC_SIGNAL ||
	       op == OP_PROC_WAIT || op == OP_PROC_RESIZE || op == OP_PROC_TTY;
}

static int is_cp_op(enum route_op op)
{
	return op == OP_CHECKPOINT_GET || op == OP_CHECKPOINT_DELETE || op == OP_CHECKPOINT_RESTORE;
}

/* The path with captures put back must be the path: rebuild it by
 * replacing the captures where they stand (after "/v1/sandboxes/" or
 * "/v1/images/" and,
 * for a second one, after the next "/<word>/"). */
static void check_captures(const char *path, const struct route_match *m)
{
	/* an {id} is a sandbox's, or an image's name (/v1/images/{id}) */
	static const char sbs[] = "/v1/sandboxes/", ims[] = "/v1/images/";
	const char *pre = strncmp(path, ims, sizeof(ims) - 1) ? sbs : ims;
	size_t il = strlen(m->id), pl = strlen(m->proc), prel = strlen(pre);

	FUZZ_ASSERT(il <= ROUTE_ID_MAX && pl <= ROUTE_ID_MAX);
	FUZZ_ASSERT(!strchr(m->id, '/') && !strchr(m->proc, '/'));
	if (!il) {
		FUZZ_ASSERT(!pl && path[0] == '/' && strncmp(path, sbs, sizeof(sbs) - 1) &&
			    strncmp(path, ims, sizeof(ims) - 1));
		return;
	}
	FUZZ_ASSERT(!strncmp(path, pre, prel));
	FUZZ_ASSERT(!strncmp(path + prel, m->id, il));
	FUZZ_ASSERT(pre == sbs || (!pl && path[prel + il] == '\0')); /* an image route has one segment */
	path += prel + il;
	FUZZ_ASSERT(*path == '\0' || *path == '/');
	if (pl) {
		const char *slash = strchr(path + 1, '/');

		FUZZ_ASSERT(slash && !strncmp(slash + 1, m->proc, pl));
		FUZZ_ASSERT(slash[1 + pl] == '\0' || slash[1 + pl] == '/');
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct route_match m, again;
	struct api_err e = { 0 }, e2 = { 0 };
	char *method = NULL, *path;
	const char *mp;
	size_t off = 1;
	int r;

	if (size < 1)
		return 0;
	if (data[0] == 0xff) {
		const uint8_t *nl = memchr(data + 1, '\n', size - 1);
		size_t ml = nl ? (size_t)(nl - data - 1) : size - 1;

		method = strndup((const char *)data + 1, ml);
		off = 1 + ml + (nl != NULL);
		mp = method;
	} else {
		mp = methods[data[0] % (sizeof(methods) / sizeof(methods[0]))];
	}
	path = strndup((const char *)data + off, size - off);
	if (!path || (data[0] == 0xff && !method)) {
		free(method);
		free(path);
		return 0;
	}

	r = route_match(mp, path, &m, &e);
	FUZZ_ASSERT(route_match(mp, path, &again, &e2) == r && again.op == m.op);
	FUZZ_ASSERT(!strcmp(again.id, m.id) && !strcmp(again.proc, m.proc));
	if (r == 0) {
		FUZZ_ASSERT(m.op > OP_NONE && m.op < OP_COUNT);
		FUZZ_ASSERT(m.allow && allow_has(m.allow, mp));
		check_captures(path, &m);
		(void)route_has_body(m.op);
		if (is_proc_op(m.op))
			check_proc(m.proc);
		if (is_cp_op(m.op))
			check_cp(m.proc);
	} else {
		FUZZ_ASSERT(r == -1 && m.op == OP_NONE && e.msg[0] && memchr(e.msg, 0, sizeof(e.msg)));
		if (e.code == API_E_METHOD_NOT_ALLOWED) {
			FUZZ_ASSERT(m.allow && m.allow[0] && !allow_has(m.allow, mp));
			check_captures(path, &m);
		} else {
			FUZZ_ASSERT(e.code == API_E_ROUTE_NOT_FOUND && !m.id[0] && !m.proc[0]);
		}
	}
	check_proc(path);
	check_cp(path);
	free(method);
	free(path);
	return 0;
}
