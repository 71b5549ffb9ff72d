/*
 * import_tree: the staging tree an image is assembled in, written only
 * through directory file descriptors (openat/mkdirat/... relative to the
 * tree's root fd, every component opened O_NOFOLLOW|O_DIRECTORY), so no
 * member, whatever the links already in the tree, can make the importer
 * write outside it.
 *
 * Contract: paths given here are cleaned (oci_path.h). Owners, modes,
 * directory mtimes and device numbers the importer cannot give the
 * staging files (it is not root, a write clears set-uid bits, a
 * directory's mtime moves as it is filled) are kept by inode in t->attrs
 * (when t->keep_attrs) and written out once the tree is complete
 * (import_own.h), for debugfs to apply to the ext4 image after `mkfs.ext4
 * -d` (import_ext4.h). Staging files never carry set-uid, set-gid or
 * sticky bits. A device node is a placeholder empty file until then.
 * Errors: -errno with e saying what failed; the caller names the member.
 */
#ifndef KILN_IMPORT_TREE_H
#define KILN_IMPORT_TREE_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "api/image-import/import_attrs.h"
#include "lib/base/err.h"

struct import_tree {
	int root;                        /* the tree's root directory */
	bool keep_attrs;                 /* the image's tree (not the outer archive's) */
	struct import_attrs attrs;       /* by inode, when keep_attrs */
	uint64_t bytes;                  /* regular file bytes written, 4 KiB per file rounded up */
	uint64_t entries;                /* entries created */
	uint64_t max_bytes, max_entries; /* 0: no cap */
};

struct import_attr {
	uid_t uid;
	gid_t gid;
	mode_t mode; /* with the type bits */
	int64_t mtime;
};

/* The directory holding path's last component (created as root-owned
 * 0755 directories when missing and create is set): a new fd and *base
 * pointing into path; -errno with e (ELOOP: below a symlink; ENOTDIR:
 * below a non-directory; ENOENT: missing and !create). */
int tree_parent(struct import_tree *t, const char *path, int create, int *dirfd, const char **base,
		struct err *e);

/* Remove path and everything below it (a whiteout); absent is 0. */
int tree_remove(struct import_tree *t, const char *path, struct err *e);
/* Remove every entry of directory path (an opaque whiteout). */
int tree_empty_dir(struct import_tree *t, const char *path, struct err *e);

/* A directory (kept when it exists as one). */
int tree_mkdir(struct import_tree *t, const char *path, const struct import_attr *a, struct err *e);
/* A regular file: a new fd open for writing (the caller writes, then
 * tree_file_done). */
int tree_file_open(struct import_tree *t, const char *path, const struct import_attr *a, int *fd,
		   struct err *e);
int tree_file_done(struct import_tree *t, int fd, uint64_t size, struct err *e);
int tree_symlink(struct import_tree *t, const char *path, const char *target,
		 const struct import_attr *a, struct err *e);
/* A hard link at path to the existing non-directory target. */
int tree_hardlink(struct import_tree *t, const char *path, const char *target, struct err *e);
int tree_fifo(struct import_tree *t, const char *path, const struct import_attr *a, struct err *e);
/* A device node: an empty placeholder file (the importer cannot mknod),
 * made a device by debugfs (import_own.h). */
int tree_device(struct import_tree *t, const char *path, const struct import_attr *a,
		unsigned major, unsigned minor, struct err *e);

/* A symlink's target at path ("" when path is no symlink). */
int tree_readlink(struct import_tree *t, const char *name, char *buf, size_t n);

#endif
