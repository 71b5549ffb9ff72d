/*
 * file_replace: a small file replaced whole and durably, the way every
 * record kiln keeps on disk is written (a sandbox's meta.json, its
 * firewall.json): a temporary file beside it, written, fsynced, renamed
 * over the old one, then the directory fsynced. A crash at any point
 * leaves the old file or the new one, never a torn or empty one (a
 * rename without the file's fsync can reach the disk before the data on
 * ext4 with some options, xfs, btrfs), and the rename itself survives
 * a power cut (the directory's fsync).
 *
 * Contract: thin syscalls, no allocation. The temporary file is
 * "<name>.tmp" in the same directory (the same filesystem, so rename is
 * atomic), opened O_NOFOLLOW (and O_TRUNC: a file left there by a crash
 * is reused, its permissions cut to mode's: a leftover never widens what
 * a 0600 file shows); it is removed on every failure.
 */
#ifndef KILN_FILE_REPLACE_H
#define KILN_FILE_REPLACE_H

#include <stddef.h>
#include <sys/types.h>

/* Replace dir/name with n bytes of buf, mode as open()'s. 0 or -errno
 * (errno set to the same): the step that failed, never close()'s error
 * over a write's. */
int file_replace(const char *dir, const char *name, const void *buf, size_t n, mode_t mode);

/* The same relative to directory descriptor dirfd (AT_FDCWD too); name
 * may be a path, whose own directory is the one fsynced. -EINVAL for an
 * empty name or one ending in '/'. */
int file_replace_at(int dirfd, const char *name, const void *buf, size_t n, mode_t mode);

/* The same, the temporary file chowned to uid:gid before anything is
 * written to it ((uid_t)-1, (gid_t)-1: that id left as is): a file handed
 * to a less privileged reader (a sandbox's egress proxy its secrets)
 * appears under its name already owned by it. */
int file_replace_owned_at(int dirfd, const char *name, const void *buf, size_t n, mode_t mode,
			  uid_t uid, gid_t gid);

#endif
