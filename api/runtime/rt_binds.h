/*
 * rt_binds: the host side of a container's bind mounts (rt_plan's
 * binds): each source bound at <id>/binds/ro/<n> or <id>/binds/rw/<n> in
 * the container's state directory, whose two directories kiln-vmm serves
 * as the shares "bro" and "brw" (design 2.3). Never a file's parent
 * directory is shared: Podman's userdata directory beside /etc/hosts also
 * holds config.json and the pid file.
 *
 * Contract: root, in the runtime's mount namespace. A source is opened
 * with openat2(RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS) from "/": a
 * symbolic link anywhere on the way is refused (its owner could point it
 * anywhere between checks); only a directory or a regular file is
 * shared. The bind is a detached clone of the opened source
 * (open_tree(OPEN_TREE_CLONE), AT_RECURSIVE for rbind), made read-only
 * before it is attached (mount_setattr) when the mount says ro, then
 * moved onto the entry (move_mount): no path is resolved twice.
 * rt_binds_release detaches every bind under binds/ (delete does it
 * before removing the directory, which never enters a mount).
 */
#ifndef KILN_RT_BINDS_H
#define KILN_RT_BINDS_H

#include <stddef.h>

#include "api/runtime/rt_plan.h"
#include "api/runtime/rt_state.h"
#include "lib/base/err.h"

/* Bind each of b[0..n) under dirfd's binds/; on failure what was bound
 * is released again. */
int rt_binds_prepare(int dirfd, const struct rt_bind *b, size_t n, struct err *e);

/* Detach every bind under dirfd's binds/ro and binds/rw (lazily: an
 * open file in it does not hold delete). 0, or the first -errno. */
int rt_binds_release(int dirfd, struct err *e);

/*
 * A pod (rt_plan.h "Pods"): the sandbox's pod/ (the share, empty) and
 * slots/ directories, made before its VM boots (rt_binds_pod_dir); a
 * further container's slot slots/<id>, its rootfs bound at
 * slots/<id>/root (read-only when asked, its submounts too) and its binds
 * under slots/<id>/binds as above (rt_binds_member); the slot as a
 * detached clone with its mounts, nosuid, nodev and noexec, for the VM's
 * graft (rt_binds_member_clone: *tree, O_PATH); the slot unmounted and
 * removed again (rt_binds_member_release: nothing there is fine), or
 * every slot of a sandbox going (rt_binds_pod_release). A release never
 * enters a mount: what it cannot unmount stays, with an error.
 */
int rt_binds_pod_dir(int dirfd, struct err *e);
int rt_binds_member(int sandbox_dirfd, const char *id, const char *rootfs, bool readonly,
		    const struct rt_bind *b, size_t n, struct err *e);
int rt_binds_member_clone(int sandbox_dirfd, const char *id, int *tree, struct err *e);
int rt_binds_member_release(int sandbox_dirfd, const char *id, struct err *e);
int rt_binds_pod_release(int dirfd, struct err *e);

#endif
