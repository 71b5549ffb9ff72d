/*
 * snapshot_io: durable files and directories for snapshots.
 *
 * Contract: nothing a snapshot replaces is touched until its replacement
 * is complete and on disk. A file is written as NAME.tmp beside NAME,
 * fsynced, renamed over NAME, and the directory fsynced; a failed write
 * (ENOSPC, EFBIG, EIO) removes NAME.tmp and leaves NAME as it was. A
 * whole snapshot (state, memory, disk overlay) is built the same way one
 * level up: in the directory NAME.tmp, swapped with NAME in one
 * renameat2(RENAME_EXCHANGE) only when every file in it is synced, so a
 * crash or a full disk at any point leaves the previous checkpoint whole.
 * Names are single path components (no '/', not "." or ".."); every
 * function works relative to a directory fd. Reading is capped: a file
 * larger than the caller allows is refused before it is read.
 */
#ifndef KILN_SNAPSHOT_IO_H
#define KILN_SNAPSHOT_IO_H

#include <stddef.h>
#include <stdint.h>

#include "lib/base/err.h"

/*
 * Create DIRFD/NAME.tmp, a new empty file (a stale one is removed first,
 * never truncated: it could be a hard link planted by whoever else
 * writes the directory), mode 0600, for writing, never through a
 * symlink. Returns the fd or -errno.
 */
int snap_tmp_open(int dirfd, const char *name, struct err *e);

/*
 * fsync `fd`, close it, rename NAME.tmp to NAME and fsync the directory.
 * `fd` is closed in every case; on failure NAME.tmp is removed and NAME is
 * untouched. Returns 0 or -errno.
 */
int snap_tmp_commit(int dirfd, const char *name, int fd, struct err *e);

/* Close `fd` (when >= 0) and remove NAME.tmp. */
void snap_tmp_abort(int dirfd, const char *name, int fd);

/* The whole file NAME, atomically: snap_tmp_open + write + snap_tmp_commit. */
int snap_write_atomic(int dirfd, const char *name, const void *buf, size_t len, struct err *e);

/*
 * Open the regular file DIRFD/NAME of a snapshot for reading, never through
 * a symlink (O_NOFOLLOW: a link planted in the directory would hand the
 * restore any file the VMM can read) and without blocking on a fifo or
 * device (refused before anything is read). Returns the fd (O_CLOEXEC) or
 * -errno: -ELOOP for a symlink, -EINVAL for anything not a regular file.
 */
int snap_file_open(int dirfd, const char *name, struct err *e);

/*
 * snap_file_open in two steps: the open alone (the fd, or -errno; no
 * check), and the checks on its result, with snap_file_open's messages
 * (-EMLINK: snapshot_src refused a file with other hard links). snapshot_src opens
 * before a jail and checks after it. snap_file_check closes a refused fd.
 */
int snap_file_openat(int dirfd, const char *name);
int snap_file_check(int fd, const char *name, struct err *e);

/*
 * Read the whole regular file DIRFD/NAME into a malloc'd buffer (*buf,
 * *len; free it). A file larger than `cap` is refused with -EFBIG before
 * it is read; one that grows while read is refused too. Returns 0 or -errno.
 */
int snap_read_file(int dirfd, const char *name, size_t cap, uint8_t **buf, size_t *len,
		   struct err *e);

/* The same from a file snap_file_open/snap_file_check opened (fd, closed
 * here; a negative fd is returned as it is, its message already set). */
int snap_read_fd(int fd, const char *name, size_t cap, uint8_t **buf, size_t *len, struct err *e);

/* A whole file's copy, holes kept: lib/base/file_copy.h, file_copy_sparse. */

/*
 * Make `out` (open for writing) a copy of the regular file `in`, in place:
 * a reflink when the filesystem can, else `in`'s data extents copied over
 * and its holes punched, then `out` cut to `in`'s size and synced. For a
 * file a jailed process holds open but cannot reach by path (a restore's
 * overlays). Not atomic: a failure part way leaves `out` part old, part
 * new (where both were the same, as for a wake, nothing changes). Neither
 * fd is closed. 0 or -errno.
 */
int snap_copy_over(int in, int out);

/*
 * Start a snapshot directory: create PARENTFD/NAME.tmp fresh (removing a
 * stale one a crash left, which may hold only regular files) and return
 * an fd to it (O_DIRECTORY), or -errno. Write the snapshot's files into it
 * with snap_tmp_open/snap_tmp_commit or snap_write_atomic.
 */
int snap_dir_begin(int parentfd, const char *name, struct err *e);

/*
 * Make NAME.tmp the snapshot NAME: fsync the directory `dirfd` (closed
 * here), then exchange it with an existing NAME (or rename it when there is
 * none), fsync the parent, and remove the previous checkpoint. On failure
 * before the exchange, NAME.tmp is removed and NAME is untouched. Returns
 * 0 or -errno.
 */
int snap_dir_commit(int parentfd, const char *name, int dirfd, struct err *e);

/* Close `dirfd` (when >= 0) and remove NAME.tmp with the files in it. */
void snap_dir_abort(int parentfd, const char *name, int dirfd);

/* Remove the directory PARENTFD/NAME and the regular files in it. 0 or -errno. */
int snap_dir_remove(int parentfd, const char *name);

#endif
