/*
 * fuzz_rt_exit: the exit file kiln-runtime's shim leaves in the state
 * directory (api/runtime/rt_exit.c), read as untrusted bytes.
 *
 * Input: the file.
 * Invariants: no crash; a failure says why; what is accepted is in
 * range, says exactly one of an exit code or a signal (unless the VM
 * crashed), encodes back to the same bytes, and gives the shim an end it
 * can take (an exit status 0..255 or a signal 1..64).
 */
#include <errno.h>

#include "api/runtime/rt_exit.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rt_exit x;
	struct rt_end end;
	struct err e = { { 0 } };
	char line[RT_EXIT_LINE_MAX];
	size_t n;

	if (rt_exit_decode((const char *)data, size, &x, &e) < 0) {
		FUZZ_ASSERT(e.msg[0]);
		return 0;
	}
	FUZZ_ASSERT(x.exit_code >= -1 && x.exit_code <= 255 && x.signo >= 0 && x.signo <= 64);
	FUZZ_ASSERT(x.vm_crashed || (x.exit_code < 0) != (x.signo == 0));
	n = rt_exit_encode(&x, line);
	FUZZ_ASSERT(n == size && !memcmp(line, data, n));
	rt_exit_end(&x, &end);
	FUZZ_ASSERT((end.kind == RT_END_EXIT && end.value >= 0 && end.value <= 255) ||
		    (end.kind == RT_END_SIGNAL && end.value >= 1 && end.value <= 64));
	return 0;
}
