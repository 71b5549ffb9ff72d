/*
 * rt_shim_vmm: the shim's VM (rt_shim.h): kiln-vmm started as the shim's
 * child in a pid namespace of its own, and the boot waited for.
 *
 * Contract: thin syscalls; the argument vector is rt_plan_vmm_argv's.
 */
#ifndef KILN_RT_SHIM_VMM_H
#define KILN_RT_SHIM_VMM_H

#include <stddef.h>

#include "api/agent-client/agent_client.h"
#include "api/runtime/rt_state.h"
#include "lib/base/capped_log.h"
#include "lib/base/err.h"

/* kiln-vmm, the kernel and the initrd for a container: beside the
 * kiln-runtime binary (the build tree: kiln-vmm, kernel/vmlinux,
 * rootfs/oci-init.cpio), else kiln-vmm beside it and the others in
 * ../lib/kiln from it (make install). kernel_name: io.kiln.kernel's file,
 * NULL: vmlinux. */
struct rt_files {
	char vmm[RT_PATH_MAX], kernel[RT_PATH_MAX], initrd[RT_PATH_MAX];
};

int rt_files_find(const char *kernel_name, struct rt_files *f, struct err *e);

struct rt_vmm_spawn {
	char *const *argv;
	int log_fd;      /* kiln-vmm's stderr: the write end of the shim's capped log pipe */
	const int *keep; /* descriptors kiln-vmm inherits (the shares), -1 skipped */
	size_t nkeep;
};

/*
 * Start kiln-vmm: pid 1 of a new pid namespace, killed when the shim
 * dies (PR_SET_PDEATHSIG), its own session, default signal handling,
 * /dev/null as stdin and stdout, log_fd as stderr, and no descriptor but
 * the keep ones. 0 with *pid.
 */
int rt_vmm_spawn(const struct rt_vmm_spawn *s, int *pid, struct err *e);

/* Whether kiln-vmm (the shim's child pid) has ended: 1, reaped, with its
 * end in why[cap] ("exited with status 1"); 0 while it runs. */
int rt_vmm_gone(int pid, char *why, size_t cap);

/* Wait for the guest's agent, at most boot_ms, giving up at once when
 * kiln-vmm ends; its stderr is copied into log meanwhile. */
int rt_vmm_wait_agent(const struct agent_client *c, int vmm_pid, int boot_ms,
		      struct capped_log *log, struct err *e);

#endif
