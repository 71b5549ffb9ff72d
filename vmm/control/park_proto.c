/* The parked kiln-vmm's message; see park_proto.h. */
#include "vmm/control/park_proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int park_msg_split(char *buf, size_t len, char **argv, int *argc, struct err *e)
{
	size_t off = 0;
	int n = 0;

	*argc = 0;
	if (len == 0 || len > PARK_MSG_MAX)
		return err_set(e, EINVAL, "--park: a command line of %zu bytes (1 .. %d)", len,
			       PARK_MSG_MAX);
	if (buf[len - 1] != '\0')
		return err_set(e, EINVAL, "--park: the command line does not end with a NUL");
	while (off < len) {
		size_t k = strlen(buf + off);

		if (n == PARK_ARGS_MAX)
			return err_set(e, EINVAL, "--park: more than %d arguments", PARK_ARGS_MAX);
		argv[n++] = buf + off;
		off += k + 1;
	}
	argv[n] = NULL;
	*argc = n;
	return 0;
}

int park_msg_pack(char *const *argv, char **out, size_t *len, struct err *e)
{
	size_t n = 0, i;
	char *at;

	*out = NULL;
	*len = 0;
	for (i = 0; argv[i]; i++) {
		if (i == PARK_ARGS_MAX)
			return err_set(e, E2BIG, "a zygote's command line: more than %d arguments",
				       PARK_ARGS_MAX);
		n += strlen(argv[i]) + 1;
		if (n > PARK_MSG_MAX)
			return err_set(e, E2BIG, "a zygote's command line: more than %d bytes",
				       PARK_MSG_MAX);
	}
	if (i == 0)
		return err_set(e, E2BIG, "a zygote's command line: no arguments");
	*out = at = malloc(n);
	if (!at)
		return err_set(e, ENOMEM, "a zygote's command line: out of memory");
	for (i = 0; argv[i]; i++) {
		size_t k = strlen(argv[i]) + 1;

		memcpy(at, argv[i], k);
		at += k;
	}
	*len = n;
	return 0;
}
