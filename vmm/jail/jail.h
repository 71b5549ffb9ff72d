/*
 * jail: confine the calling process before it runs a guest.
 *
 * jail_enter() runs once, in a single-threaded process that has opened
 * everything privileged it needs (/dev/kvm, images, overlays, TAP, passt,
 * shares, sockets), and leaves it:
 *
 *   - in new mount, IPC, UTS, cgroup and network namespaces (keep_net
 *     keeps the caller's network namespace: kiln-vmm never asks for it,
 *     an open TAP descriptor works from any namespace);
 *   - with a root of its own: an empty read-only tmpfs holding only
 *     `dir`, bound at its own absolute path (so every path the VM uses
 *     there, sockets and snapshot directories, reads the same inside and
 *     out), and /proc, a procfs of the jail's own pid namespace showing
 *     only its processes (subset=pid, hidepid=invisible), entered with
 *     pivot_root and the old root detached;
 *   - as uid:gid with no supplementary groups, every capability dropped
 *     from the effective, permitted, inheritable, ambient and bounding
 *     sets, and no_new_privs set.
 *
 * Its own pid namespace cannot be entered by a running process: the
 * caller must already be pid 1 of a new one (kilnd spawns kiln-vmm so;
 * kiln-vmm --jail forks into one itself). jail_enter checks it.
 *
 * Linux only; needs CAP_SYS_ADMIN, CAP_SETUID, CAP_SETGID and CAP_SETPCAP
 * on entry (root). docs/security.md says what each step stops.
 */
#ifndef KILN_JAIL_H
#define KILN_JAIL_H

#include <stdbool.h>
#include <sys/types.h>

#include "lib/base/err.h"

struct jail_spec {
	const char *dir; /* absolute, canonical (no symlink, "." or ".."), an existing directory */
	uid_t uid;       /* both non-zero */
	gid_t gid;
	bool keep_net; /* stay in the caller's network namespace (embedders only) */
};

/* 0, or -errno with e saying which step failed and what to do. On
 * failure the process may be half-confined: the caller must exit. */
int jail_enter(const struct jail_spec *j, struct err *e);

/* Checks jail_enter makes before touching anything (pure, for tests):
 * dir absolute and canonical in form, not under /proc, ids non-zero.
 * 0 or -EINVAL. */
int jail_spec_check(const struct jail_spec *j, struct err *e);

/* Number of threads of the calling process (from /proc/self/status), or
 * -errno. */
int jail_thread_count(void);

#endif
