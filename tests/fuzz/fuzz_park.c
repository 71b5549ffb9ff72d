/*
 * fuzz_park: kiln-vmm --park's command line (vmm/control/park_proto.c),
 * the one message a zygote reads before it becomes a sandbox's kiln-vmm,
 * split, then packed again as kilnd packs it.
 *
 * Input: the message's bytes.
 * Invariants: accepted only when it ends with a NUL, is 1 .. PARK_MSG_MAX
 * bytes and holds 1 .. PARK_ARGS_MAX arguments; then the arguments lie in
 * the buffer in order, each ended by its NUL, and cover it exactly.
 */
#include <errno.h>

#include "vmm/control/park_proto.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *argv[PARK_ARGS_MAX + 1];
	char *buf = malloc(size ? size : 1);
	struct err e;
	size_t at = 0;
	int argc = -1, r;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	r = park_msg_split(buf, size, argv, &argc, &e);
	if (r < 0) {
		FUZZ_ASSERT(r == -EINVAL && e.msg[0]);
		free(buf);
		return 0;
	}
	FUZZ_ASSERT(size >= 1 && size <= PARK_MSG_MAX && buf[size - 1] == '\0');
	FUZZ_ASSERT(argc >= 1 && argc <= PARK_ARGS_MAX && argv[argc] == NULL);
	for (int i = 0; i < argc; i++) {
		FUZZ_ASSERT(argv[i] == buf + at);
		at += strlen(argv[i]) + 1;
	}
	FUZZ_ASSERT(at == size);
	/* kilnd's packing of the same arguments gives the same bytes */
	{
		char *packed;
		size_t len;

		FUZZ_ASSERT(park_msg_pack(argv, &packed, &len, &e) == 0);
		FUZZ_ASSERT(len == size && memcmp(packed, data, size) == 0);
		free(packed);
	}
	free(buf);
	return 0;
}
