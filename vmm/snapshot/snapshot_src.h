/*
 * snapshot_src: a snapshot directory's files opened now and read later.
 *
 * A restore reads bytes a VMM wrote (its own hibernation image or
 * checkpoint, or another sandbox's checkpoint for a fork), so kiln-vmm
 * reads and parses them only once it is in its jail, under a seccomp
 * filter (docs/security.md, "Restore"). Opening them is the part that
 * needs the privileges it starts with: a fork's snapshot is another jail
 * uid's 0600 files. snap_src_open() therefore opens, before the jail, and
 * reads no byte of any file:
 *   - the snapshot directory (never through a symlink), and in it each
 *     file a restore may read, by its fixed name (snap_src_file);
 *   - when the snapshot is a layer (it has a memory.layer), the same in
 *     every sibling directory whose name a layer could give as its parent
 *     (snap_layer_name_valid), at most SNAP_SRC_SIBLINGS of them: which one
 *     is the parent is known only from the layer's bytes.
 * Every file is opened O_NOFOLLOW and O_NONBLOCK; a regular file with
 * other hard links is not kept (its slot says -EMLINK): that is how a VMM
 * would plant a file it may not read (a root-only one) in its own
 * snapshot for root to open (snapshots are written through a temporary
 * file and a rename, and copied by reflink: never linked). Nothing is
 * refused here: a missing or refused file is an error only when the
 * restore asks for it.
 *
 * After the jail, snap_src_take() hands each file over once, checked with
 * snap_file_open's checks and messages; a sibling beyond the limit is
 * opened then, by name, with the jail's own permissions.
 */
#ifndef KILN_SNAPSHOT_SRC_H
#define KILN_SNAPSHOT_SRC_H

#include <stdint.h>

#include "lib/base/err.h"

#define SNAP_SRC_DISKS 8      /* disk0 .. disk7: vmm/core's VM_MAX_DISKS */
#define SNAP_SRC_SIBLINGS 128 /* sibling snapshots opened ahead for a layer chain */

enum snap_src_file {
	SNAP_SRC_STATE,
	SNAP_SRC_MEM,
	SNAP_SRC_MEMZ,
	SNAP_SRC_LAYER,
	SNAP_SRC_WORKINGSET,
	SNAP_SRC_DISK0,
	SNAP_SRC_NFILES = SNAP_SRC_DISK0 + SNAP_SRC_DISKS,
};

struct snap_src_dir {
	char name[64];           /* "" for the snapshot itself */
	int dirfd;               /* the directory, for siblings' names */
	int fd[SNAP_SRC_NFILES]; /* open, or -errno (-ENOENT: none) */
};

struct snap_src {
	int updir; /* the directory holding the snapshot (layer parents are there); -1 */
	int ndirs; /* dirs[0] is the snapshot, then its siblings */
	struct snap_src_dir *dirs;
};

/*
 * Open the snapshot directory `path` and its files as above. 0, or -errno
 * with e set when the directory itself cannot be opened (then nothing is
 * held). Free with snap_src_close.
 */
int snap_src_open(struct snap_src *s, const char *path, struct err *e);

/* The file's name in a snapshot directory ("state", "disk3"). */
const char *snap_src_name(enum snap_src_file f, char buf[16]);

/*
 * Directory `dir` (0: the snapshot; snap_src_sibling's index) 's file f,
 * handed over (the caller closes it) and checked as snap_file_open checks.
 * The fd, or -errno with e set; -ENOENT when there is none, e set too.
 */
int snap_src_take(struct snap_src *s, int dir, enum snap_src_file f, struct err *e);

/*
 * The index of sibling snapshot `name`, opened now by name relative to
 * the snapshot's directory when it was not opened ahead. The index, or
 * -errno with e set.
 */
int snap_src_sibling(struct snap_src *s, const char *name, struct err *e);

/* Close everything still held; safe twice and on a zeroed struct. */
void snap_src_close(struct snap_src *s);

#endif
