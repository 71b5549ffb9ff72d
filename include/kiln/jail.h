/*
 * kiln/jail.h: confine the process that runs a VM, once everything
 * privileged is open and before the guest runs (docs/security.md).
 *
 *   kiln_vm_create(cfg, &vm);                  // opens /dev/kvm, images, TAP...
 *   kiln_jail_enter("/run/vm1", 1000001, 1000001, 0, err, sizeof(err));
 *   kiln_vm_start(vm);
 *
 * The step is process-wide: call it from a single-threaded process that
 * is pid 1 of a new pid namespace (clone(CLONE_NEWPID), or unshare and
 * fork), as root. It leaves the process in new mount, IPC, UTS, cgroup
 * and (without KILN_JAIL_KEEP_NET) network namespaces; its root an empty
 * read-only tmpfs holding only `dir`, bound at its own absolute path, so
 * the paths of sockets and snapshot directories kept there read the same
 * inside and out (put them there; anything else must be open already),
 * and /proc, a procfs of its own pid namespace (its processes only);
 * running as uid:gid with no supplementary groups, no capabilities in any
 * set (bounding included) and no_new_privs. It does not close
 * descriptors: the program knows which it needs, and must close every
 * descriptor of a host directory it still holds (a share's, given to
 * kiln_vm_config_add_share_fd: the VM serves its own detached
 * clone), since ".." from one leads out of any jail. -EINVAL also for a
 * dir under /proc (the jail's own /proc is mounted there).
 */
#ifndef KILN_PUBLIC_JAIL_H
#define KILN_PUBLIC_JAIL_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

KILN_BEGIN_DECLS

/* Flags of kiln_jail_enter. */
enum {
	/* Stay in the caller's network namespace, and so reach its loopback
	 * and abstract sockets. Not needed for a TAP device (an open TAP
	 * descriptor works from any namespace); kiln-vmm never sets it. */
	KILN_JAIL_KEEP_NET = 1u << 0
};

/*
 * Enter the jail. dir: absolute, canonical (no symlink, "." or ".."
 * component), an existing directory. uid, gid: not 0. 0, or -errno with
 * the step that failed in err[err_size] (may be NULL): -EINVAL bad
 * arguments, -EBUSY more than one thread, -EPERM not root or not pid 1
 * of a pid namespace. After a failure past the checks the process may be
 * half-confined and must exit.
 */
KILN_API int kiln_jail_enter(const char *dir, uint32_t uid, uint32_t gid, unsigned flags, char *err,
			     size_t err_size);

KILN_END_DECLS

#endif
