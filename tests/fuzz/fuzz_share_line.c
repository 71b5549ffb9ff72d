/*
 * fuzz_share_line: a client share's lines (api/kilnd/core/share_line.c)
 * as kilnd reads them: requests from a (compromised) kiln-vmm and
 * replies from the client, both hostile.
 *
 * Input: the first byte picks the op a reply answers and the bytes a read
 * asked for; the rest is one line, tried as a request and as a reply.
 * Invariants: a line accepted is written anew as compact JSON with no
 * newline or NUL that is itself accepted and written the same (the
 * canonical form is a fixed point); a refused line says why and gives no
 * output; a refused request names an id only when the line had one.
 */
#include <stdbool.h>

#include "api/kilnd/core/share_line.h"
#include "fuzz.h"

static void check_canon(const char *canon)
{
	FUZZ_ASSERT(canon && canon[0] == '{');
	FUZZ_ASSERT(!strchr(canon, '\n'));
	FUZZ_ASSERT(strlen(canon) < SHARE_LINE_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[SHARE_WHY_MAX], *canon = NULL, *again = NULL;
	struct share_req r, r2;
	const char *line;
	size_t n;

	if (size < 1)
		return 0;
	line = (const char *)data + 1;
	n = size - 1;
	why[0] = '\0';
	if (share_request_check(line, n, &r, &canon, why) == 0) {
		check_canon(canon);
		FUZZ_ASSERT(r.id != 0 && r.op <= SHARE_OP_TRUNCATE && r.size <= SHARE_IO_MAX);
		FUZZ_ASSERT(share_request_check(canon, strlen(canon), &r2, &again, why) == 0);
		FUZZ_ASSERT(strcmp(canon, again) == 0 && r2.id == r.id && r2.op == r.op &&
			    r2.size == r.size);
		free(again);
		again = NULL;
	} else {
		FUZZ_ASSERT(!canon && why[0]);
	}
	free(canon);
	canon = NULL;
	r = (struct share_req){ .id = 1 + (data[0] & 3),
				.op = (enum share_op)((data[0] >> 2) % (SHARE_OP_TRUNCATE + 1)),
				.size = (uint64_t)(data[0] >> 6) * 4 };
	why[0] = '\0';
	if (share_reply_check(line, n, &r, &canon, why) == 0) {
		check_canon(canon);
		FUZZ_ASSERT(share_reply_check(canon, strlen(canon), &r, &again, why) == 0);
		FUZZ_ASSERT(strcmp(canon, again) == 0);
		free(again);
	} else {
		FUZZ_ASSERT(!canon && why[0]);
	}
	free(canon);
	return 0;
}
