/*
 * rootfs_grow: kiln-init grows the root ext4 filesystem to its disk when
 * the disk is larger (a sandbox created with disk_mib: kiln-vmm's
 * `--disk IMAGE,overlay=OVL,size=MIB` makes the overlay's virtual disk
 * larger than the image it starts as).
 *
 * Contract:
 *  - rootfs_ext4_parse() and rootfs_grow_target() are pure: the first reads
 *    the geometry out of a copy of the superblock (1024 bytes from byte
 *    1024 of the device), refusing anything that is not a plausible ext4
 *    superblock; the second says to how many blocks to grow (0: nothing to
 *    do, the disk is not larger by a whole block).
 *  - rootfs_grow() does the I/O: reads the superblock and the size of
 *    `dev`, and when the disk is larger asks the kernel to resize the
 *    mounted filesystem online (EXT4_IOC_RESIZE_FS on `mnt`). 1: grown
 *    (*from and *to in bytes), 0: nothing to do, -errno with `why` naming
 *    the step that failed. The caller only reports a failure: the guest
 *    then runs on the image's size.
 */
#ifndef KILN_INIT_ROOTFS_GROW_H
#define KILN_INIT_ROOTFS_GROW_H

#include <stddef.h>
#include <stdint.h>

#define ROOTFS_SB_OFFSET 1024
#define ROOTFS_SB_SIZE 1024

struct rootfs_ext4 {
	uint32_t block_size; /* bytes: 1024 .. 65536 */
	uint64_t blocks;     /* the filesystem's size in blocks */
};

/* 0, or -EINVAL when sb (len bytes) is not an ext4 superblock kiln can grow. */
int rootfs_ext4_parse(const uint8_t *sb, size_t len, struct rootfs_ext4 *out);

/* The block count that fills a disk of dev_bytes, when it is more than
 * fs->blocks; else 0. */
uint64_t rootfs_grow_target(const struct rootfs_ext4 *fs, uint64_t dev_bytes);

int rootfs_grow(const char *dev, const char *mnt, uint64_t *from, uint64_t *to, const char **why);

#endif
