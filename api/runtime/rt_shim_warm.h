/*
 * rt_shim_warm: a warm start's template VM (rt_warm.h), made by the
 * shim of the first container that wants one: kiln-vmm booted in that
 * container's jail, as its uid, with an empty directory as each of the
 * shape's shares and no network interface; its snapshot taken once the
 * agent answers, copied into <root>/.warm/<name>, and the VM killed.
 * The jail is left as it was found (empty), so the container's own VM
 * starts in it next.
 *
 * Contract: the caller holds the template's lock exclusively
 * (rt_warm_take returned 0). Blocking; slow (a boot and a snapshot).
 */
#ifndef KILN_RT_SHIM_WARM_H
#define KILN_RT_SHIM_WARM_H

#include "api/agent-client/agent_client.h"
#include "api/runtime/rt_plan.h"
#include "api/runtime/rt_shim_vmm.h"
#include "api/runtime/rt_warm.h"
#include "lib/base/capped_log.h"
#include "lib/base/err.h"

struct rt_warm_make {
	const struct rt_files *files;
	const struct rt_sizing *size;
	const struct rt_warm_shape *shape;
	int warmfd;                       /* rt_warm_dir_open's */
	const char *jail;                 /* the container's jail directory (empty) */
	uint32_t jail_id;                 /* its uid and gid */
	const struct agent_client *agent; /* on the jail's vsock socket */
	int log_fd;                       /* kiln-vmm's stderr (the shim's capped log pipe) */
	struct capped_log *log;           /* that log, pumped while the template boots */
};

/* Make the template `name`: 0, or -errno with e (nothing left behind). */
int rt_warm_make(const struct rt_warm_make *m, const char *name, struct err *e);

#endif
