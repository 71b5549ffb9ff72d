/*
 * root_tmpfs: leave the initramfs for a tmpfs root (kiln.oci, docs/guest.md).
 *
 * pivot_root(2) refuses a root that is the initramfs itself (it has no
 * parent mount), and a container's init needs a real pivot_root into its
 * share: chroot would leave the guest's tree one ".." away. So kiln-init,
 * booted from an initramfs that holds only itself, moves a fresh tmpfs over
 * "/" and enters it before it mounts anything, as switch_root does. Its own
 * code stays mapped from the initramfs; nothing else of it is needed.
 *
 * Contract: called by PID 1 before any thread exists and before /dev,
 * /proc and the rest are mounted (they would stay on the old root). 0, or
 * -errno with *why naming the step.
 */
#ifndef KILN_INIT_ROOT_TMPFS_H
#define KILN_INIT_ROOT_TMPFS_H

int root_tmpfs_enter(const char **why);

#endif
