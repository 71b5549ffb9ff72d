/*
 * file_copy: a regular file's bytes into another, holes kept: a snapshot's
 * RAM file is mostly holes, and a copy that filled them would take the
 * guest's whole RAM on disk.
 *
 * Contract: thin syscalls; neither descriptor is closed. Across
 * filesystems (copy_file_range's EXDEV) the extents are read and written.
 */
#ifndef KILN_FILE_COPY_H
#define KILN_FILE_COPY_H

#include <stdint.h>
#include <sys/types.h>

/* Bytes data .. hole of in to the same offsets of out. 0 or -errno. */
int file_copy_extent(int in, int out, off_t data, off_t hole);

/*
 * Copy the whole regular file in into out (empty, open for writing): a
 * reflink when the filesystem can, else its data extents only, so holes
 * stay holes. *bytes (may be NULL) is what in takes on disk. 0 or -errno.
 */
int file_copy_sparse(int in, int out, uint64_t *bytes);

#endif
