/*
 * agent_walk: a depth-first directory walk with bounded memory and
 * descriptors, for list_dir and tar_download.
 *
 * Contract:
 *  - Pre-order: walk_next() returns each entry of the current directory
 *    (lstat'ed, never followed); the caller decides whether to descend
 *    into a directory entry with walk_descend() before the next call.
 *    `.` and `..` are never returned.
 *  - At most WALK_OPEN_MAX directory descriptors (plus one O_PATH of the
 *    root) are open at once, each with a WALK_BUF getdents buffer. Deeper
 *    walks close the shallowest open directory and reopen it on the way
 *    back, from the root with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)
 *    and its recorded device and inode checked, then resume at the
 *    directory offset where it stopped. A directory that was moved or
 *    replaced meanwhile is not followed: the rest of it is skipped.
 *  - Per level a small record (inode, offset, path length) is kept; depth
 *    is bounded by the path length, because entries whose path would
 *    exceed AGENT_PATH_MAX bytes are skipped, not returned.
 *  - Skipped entries (vanished, unreadable on reopen, path too long) are
 *    counted in `skipped`; errors never end the walk.
 */
#ifndef KILN_AGENT_WALK_H
#define KILN_AGENT_WALK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "api/proto/agent_proto.h"

#define WALK_OPEN_MAX 8
#define WALK_BUF 4096

struct walk_level {
	int fd;       /* -1 while closed */
	uint8_t *buf; /* getdents64 buffer while open */
	size_t pos, len;
	int64_t resume; /* d_off after the last entry consumed */
	dev_t dev;
	ino_t ino;
	size_t path_len; /* length of this directory's path in walk.path */
};

struct walk_entry {
	const char *name; /* NUL-terminated, valid until the next walk call */
	const char *path; /* prefix + path below the root, NUL-terminated */
	size_t path_len;
	uint32_t depth; /* 1: a child of the root */
	int dirfd;      /* the directory holding it, valid until the next call */
	struct stat st; /* lstat */
};

struct walk {
	int rootfd;
	struct walk_level *lv;
	size_t depth, cap, nopen;
	size_t rel_off; /* where the part below the root begins in path */
	char path[AGENT_PATH_MAX + 1];
	uint64_t skipped;
};

/*
 * Start at `dirfd` (an O_RDONLY|O_DIRECTORY descriptor; the walk owns it
 * from now on, also on failure). Entry paths are `prefix` + "/" + the path
 * below the root (no separator when prefix is empty or ends in '/').
 * 0 or -errno.
 */
int walk_open(struct walk *w, int dirfd, const char *prefix);
/* 1 with e filled, 0 when the walk is complete, -ENOMEM. */
int walk_next(struct walk *w, struct walk_entry *e);
/* Descend into directory entry e (just returned). 0 or -errno; on error
 * the walk goes on without it. */
int walk_descend(struct walk *w, const struct walk_entry *e);
void walk_close(struct walk *w);

/*
 * One linux_dirent64 record from a getdents64() buffer, bounds-checked.
 * Returns true with *name and *off (the position after it) and advances
 * *pos; false at the end of the buffer or on a malformed record.
 */
bool walk_dirent(const uint8_t *buf, size_t len, size_t *pos, const char **name, int64_t *off);

#endif
