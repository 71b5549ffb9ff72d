/*
 * import_ns: the namespaces kilnd puts the image importer in, when kilnd
 * is root (docs/security.md, "Image import"). In the forked child, before
 * it drops to the import uid:
 *  - new network, IPC and UTS namespaces: no interface but a loopback
 *    that is down, no abstract Unix sockets of the host, no System V IPC;
 *  - a new mount namespace, every mount private, where /tmp, /var/tmp,
 *    /dev/shm and /run are empty tmpfs of its own (no host sockets or
 *    scratch files to reach; at most IMPORT_NS_TMPFS_SIZE each).
 * The caller's current directory (the work directory, entered before,
 * even beneath one of the hidden paths) is bound to IMPORT_NS_WORK in the
 * new /run and entered, so its ".." is that tmpfs, not the host's
 * directories around it. The importer is executed from a descriptor
 * opened before, so it does not depend on what the mounts hide.
 *
 * Only system calls, no allocation: safe in the child of a threaded
 * process. 0, or -errno with *step naming what failed.
 */
#ifndef KILN_IMPORT_NS_H
#define KILN_IMPORT_NS_H

#include <stddef.h>
#include <sys/types.h>

#define IMPORT_NS_TMPFS_SIZE "size=16m"
#define IMPORT_NS_WORK "/run/import"

int import_ns_enter(const char **step);

/*
 * The same steps for another confined helper (the egress proxy keeps the
 * host's network namespace: it connects upstream): unshare a mount
 * namespace and clone_flags' others, make every mount private, mount an
 * empty tmpfs on each of hidden[0..nhidden), bind the current directory
 * to work (inside one of them) and enter it. 0, or -errno with *step.
 */
struct confine_ns {
	int clone_flags; /* besides CLONE_NEWNS */
	const char *const *hidden;
	size_t nhidden;
	const char *work;
};
int confine_ns_enter(const struct confine_ns *ns, const char **step);

/* Drop to uid and gid id, no supplementary groups, with the raw system
 * calls: 0 or -errno. kilnd's raw clone (CLONE_NEWPID) is no fork to the
 * C library: in the child it still lists kilnd's threads, and its
 * setgroups, setresgid and setresuid wait for each to change ids too,
 * for one that kilnd was creating at the clone (a new connection's, a
 * sandbox monitor's) forever: the import hung to its hour's deadline. */
int import_ns_drop(uid_t id);

#endif
