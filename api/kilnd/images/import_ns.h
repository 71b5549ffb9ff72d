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

#define IMPORT_NS_TMPFS_SIZE "size=16m"
#define IMPORT_NS_WORK "/run/import"

int import_ns_enter(const char **step);

#endif
