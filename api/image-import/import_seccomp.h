/*
 * import_seccomp: the seccomp filter kiln-image-import puts on itself
 * before it reads a byte of the archive (docs/security.md, "Image
 * import"). The importer parses hostile archives with libarchive and runs
 * mkfs.ext4 and debugfs, so it cannot have an allowlist as tight as
 * kiln-vmm's threads; instead every call that reaches past its own files
 * is refused with EPERM: other processes (ptrace, process_vm_*, kcmp),
 * namespaces and mounts (unshare, setns, mount and the new mount API,
 * pivot_root, chroot, clone with namespace flags), the kernel's attack
 * surface it never needs (bpf, perf_event_open, userfaultfd, io_uring,
 * keyrings, modules, kexec, reboot, swap, the clock, host names), and
 * every socket that is not AF_UNIX, leaving its process group (setsid,
 * setpgid) and the terminal ioctls TIOCSTI and TIOCLINUX. clone3 answers
 * ENOSYS, so the C library falls back to clone, whose flags the filter
 * can see. The filter
 * is inherited by what the importer executes; calls of a foreign ABI
 * (i386, x32) kill the process.
 */
#ifndef KILN_IMPORT_SECCOMP_H
#define KILN_IMPORT_SECCOMP_H

#include "lib/base/err.h"

/* Build and load the filter on the calling process (NO_NEW_PRIVS
 * included). 0, or -errno with e set. */
int import_seccomp_load(struct err *e);

#endif
