/*
 * rt_rootfs: the container's mount points, made in its rootfs on the
 * host before the VM starts, as runc makes them (in the rootfs itself, so
 * they stay, as under runc). The guest's virtio-fs server runs as the
 * container's unprivileged host id and cannot create entries in the
 * image's root-owned directories (until the shares are idmapped: design
 * 2.3), so the agent would fail on a destination the image lacks
 * (/proc, /sys, /etc/hosts).
 *
 * Which destinations: each mount's whose path does not lie below an
 * earlier mount's destination (/dev/pts under the /dev tmpfs is made in
 * that tmpfs by the guest, and nothing is made inside a bind's source).
 * A bind whose source is not a directory gets an empty file, every other
 * mount a directory (and missing parents, 0755).
 *
 * Contract: rt_rootfs_wanted is pure; rt_rootfs_mountpoints resolves
 * every path inside the rootfs (openat2 RESOLVE_IN_ROOT: a link in the
 * image is followed as if the rootfs were /, never out of it), creates
 * with O_EXCL/mkdirat only what is missing and leaves an existing entry
 * of any kind alone (the agent then says what is wrong with it).
 */
#ifndef KILN_RT_ROOTFS_H
#define KILN_RT_ROOTFS_H

#include <stdbool.h>
#include <stddef.h>

#include "api/runtime/rt_config.h"
#include "lib/base/err.h"

/* Whether mounts[i]'s destination is made on the host (see above). */
bool rt_rootfs_wanted(const struct rt_mount *mounts, size_t i);

/* Make the wanted mount points in the rootfs directory rootfs. */
int rt_rootfs_mountpoints(const char *rootfs, const struct rt_config *cfg, struct err *e);

#endif
