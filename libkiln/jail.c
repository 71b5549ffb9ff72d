/* libkiln's jail step (kiln/jail.h) over vmm/jail. */
#include <kiln/jail.h>

#include <errno.h>
#include <stdio.h>

#include "vmm/jail/jail.h"

int kiln_jail_enter(const char *dir, uint32_t uid, uint32_t gid, unsigned flags, char *err,
		    size_t err_size)
{
	struct jail_spec j = {
		.dir = dir, .uid = uid, .gid = gid, .keep_net = (flags & KILN_JAIL_KEEP_NET) != 0
	};
	struct err e = { { 0 } };
	int r;

	if (flags & ~(unsigned)KILN_JAIL_KEEP_NET)
		r = err_set(&e, EINVAL, "jail: unknown flags %#x",
			    flags & ~(unsigned)KILN_JAIL_KEEP_NET);
	else
		r = jail_enter(&j, &e);
	if (err && err_size)
		snprintf(err, err_size, "%s", r ? e.msg : "");
	return r;
}
