/*
 * image_file: taking over the image file an importer made (its uid's,
 * in its work directory) without trusting anything about it but what
 * fstat says of the descriptor kilnd holds.
 *
 * Contract: the file is opened without following a symlink and without
 * blocking on a fifo; it must be a regular file owned by the importer's
 * uid with exactly one link (so it is no hard link to a file of root's,
 * such as /etc/shadow). The descriptor checked is the one linked into
 * place (through /proc/self/fd), never the path again.
 */
#ifndef KILN_IMAGE_FILE_H
#define KILN_IMAGE_FILE_H

#include <sys/stat.h>
#include <sys/types.h>

#include "lib/base/err.h"

/* Open path read-only and check it (above): the fd (st filled), or -errno
 * with e. */
int image_file_open(const char *path, uid_t owner, struct stat *st, struct err *e);

/* Link the file open on fd at dest (never replacing one there: -EEXIST). */
int image_file_link(int fd, const char *dest, struct err *e);

#endif
