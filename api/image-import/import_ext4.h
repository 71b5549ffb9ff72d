/*
 * import_ext4: a flattened staging tree (import_tree.h) into a bootable
 * ext4 image: kiln-init injected as rootfs/build-minimal does, the
 * directories the guest needs made, `mkfs.ext4 -d`, then the recorded
 * ownership and modes applied with `debugfs -w`. No root needed: the
 * tree and the image are the caller's own files.
 *
 * This is the step a template build reuses: any tree + kiln-init -> an
 * image kilnd can register.
 */
#ifndef KILN_IMPORT_EXT4_H
#define KILN_IMPORT_EXT4_H

#include <stdint.h>

#include "api/image-import/import_tree.h"
#include "lib/base/err.h"

/* Headroom (docs/api.md, "POST /v1/images"): the image is
 * (content + 4 KiB per entry) * 5/4 + 64 MiB, in whole MiB. */
#define IMPORT_HEADROOM_MIB 64

/* Copy kiln-init (read from init_fd) to /sbin/kiln-init (through a
 * top-level sbin symlink such as usr/sbin), link /init and /sbin/init to
 * it, and make /proc /sys /dev /run /tmp /root /home/user /workspace
 * where missing (/workspace and /home/user owned by user 1000). */
int import_inject_init(struct import_tree *t, int init_fd, struct err *e);

/* The tree's size in bytes for mkfs (see IMPORT_HEADROOM_MIB). */
uint64_t import_image_bytes(const struct import_tree *t);

/* mkfs.ext4 -d stage_dir into out (created), then debugfs -w -f script:
 * 0, or -errno with e (the tool's exit and what to check). */
int import_make_ext4(const char *stage_dir, const char *script, const char *out, uint64_t bytes,
		     uint64_t inodes, struct err *e);

#endif
