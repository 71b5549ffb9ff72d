#include "guest-init/sys/rootfs_grow.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "lib/base/le.h"

/* The kernel's ioctl (fs/ext4/ext4.h; not in the uapi headers): the new
 * size in blocks. Online growth only. */
#define KILN_EXT4_IOC_RESIZE_FS _IOW('f', 16, uint64_t)

/* Superblock fields (offsets within the superblock). */
#define SB_BLOCKS_LO 0x04
#define SB_LOG_BLOCK_SIZE 0x18
#define SB_MAGIC 0x38
#define SB_FEATURE_INCOMPAT 0x60
#define SB_BLOCKS_HI 0x150
#define EXT4_MAGIC 0xEF53
#define INCOMPAT_64BIT 0x80

int rootfs_ext4_parse(const uint8_t *sb, size_t len, struct rootfs_ext4 *out)
{
	uint32_t log;
	uint64_t blocks;

	if (len < ROOTFS_SB_SIZE || le_get16(sb + SB_MAGIC) != EXT4_MAGIC)
		return -EINVAL;
	log = le_get32(sb + SB_LOG_BLOCK_SIZE);
	if (log > 6) /* 1 KiB << 6 = 64 KiB, ext4's largest block */
		return -EINVAL;
	blocks = le_get32(sb + SB_BLOCKS_LO);
	if (le_get32(sb + SB_FEATURE_INCOMPAT) & INCOMPAT_64BIT)
		blocks |= (uint64_t)le_get32(sb + SB_BLOCKS_HI) << 32;
	if (!blocks)
		return -EINVAL;
	out->block_size = 1024u << log;
	out->blocks = blocks;
	return 0;
}

uint64_t rootfs_grow_target(const struct rootfs_ext4 *fs, uint64_t dev_bytes)
{
	uint64_t n = dev_bytes / fs->block_size;

	return n > fs->blocks ? n : 0;
}

int rootfs_grow(const char *dev, const char *mnt, uint64_t *from, uint64_t *to, const char **why)
{
	uint8_t sb[ROOTFS_SB_SIZE];
	struct rootfs_ext4 fs;
	uint64_t size, n;
	ssize_t k;
	int fd, r = 0;

	fd = open(dev, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*why = "opening the root device";
		return -errno;
	}
	k = pread(fd, sb, sizeof(sb), ROOTFS_SB_OFFSET);
	if (k < 0 || ioctl(fd, BLKGETSIZE64, &size) < 0) {
		r = -errno;
		*why = k < 0 ? "reading its superblock" : "reading its size";
	}
	close(fd);
	if (r)
		return r;
	if (rootfs_ext4_parse(sb, (size_t)k, &fs)) {
		*why = "reading its superblock (not ext4)";
		return -EINVAL;
	}
	n = rootfs_grow_target(&fs, size);
	if (!n)
		return 0;
	fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		*why = "opening the root directory";
		return -errno;
	}
	if (ioctl(fd, KILN_EXT4_IOC_RESIZE_FS, &n) < 0) {
		r = -errno;
		*why = "resizing the filesystem (EXT4_IOC_RESIZE_FS)";
	}
	close(fd);
	if (r)
		return r;
	*from = fs.blocks * fs.block_size;
	*to = n * fs.block_size;
	return 1;
}
