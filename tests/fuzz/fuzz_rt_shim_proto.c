/*
 * fuzz_rt_shim_proto: the lines between kiln-runtime's commands and a
 * container's shim (api/runtime/rt_shim_proto.c).
 *
 * Input: selector byte (% 2: a request line, a reply line), then the line.
 * Invariants: no crash; a refused line says why; an accepted request is
 * in range and encodes back to the same bytes; an accepted reply is ok,
 * or err with a message of one printable line that encodes back the same.
 */
#include <errno.h>

#include "api/runtime/rt_shim_proto.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *line = (const char *)data + 1;
	size_t n = size ? size - 1 : 0, k;
	struct rt_shim_req r;
	struct err e = { { 0 } };
	char out[RT_SHIM_LINE_MAX];
	int ret;

	if (!size)
		return 0;
	if (data[0] % 2 == 0) {
		ret = rt_shim_req_decode(line, n, &r, &e);
		FUZZ_ASSERT(ret == 0 || (ret == -EINVAL && e.msg[0]));
		if (ret)
			return 0;
		FUZZ_ASSERT(r.signo >= 0 && r.signo <= 64);
		FUZZ_ASSERT(r.op != RT_SHIM_RESIZE ||
			    (r.rows >= 1 && r.rows <= 65535 && r.cols >= 1 && r.cols <= 65535));
		k = rt_shim_req_encode(&r, out);
		FUZZ_ASSERT(k == n && !memcmp(out, line, n));
		return 0;
	}
	ret = rt_shim_reply_decode(line, n, &e);
	FUZZ_ASSERT(ret == 0 || ret == -EIO || (ret == -EINVAL && e.msg[0]));
	if (ret == -EIO) {
		FUZZ_ASSERT(!strchr(e.msg, '\n'));
		k = rt_shim_reply_encode(e.msg, out);
		/* what the shim encodes is clean; a raw line may not be */
		FUZZ_ASSERT(k <= RT_SHIM_LINE_MAX && out[k - 1] == '\n');
	}
	return 0;
}
