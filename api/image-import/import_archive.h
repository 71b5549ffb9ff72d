/*
 * import_archive: reading tar streams with libarchive into a staging tree
 * (import_tree.h): the outer archive an image arrives in, and each layer
 * with its whiteouts (OCI image-spec "layer.md").
 *
 * Contract: the bytes are hostile. Only tar (ustar, pax, GNU) is read,
 * plain or gzip: no other filter, so no external decompressor is ever
 * run. Every member name goes through oci_path_clean; the first bad
 * member ends the import with an error naming it (member "NAME": why).
 */
#ifndef KILN_IMPORT_ARCHIVE_H
#define KILN_IMPORT_ARCHIVE_H

#include <stdbool.h>

#include "api/image-import/import_tree.h"
#include "lib/base/err.h"

/* The most members the outer archive may hold (docker save writes 3-4
 * per layer, an OCI layout one per blob). */
#define IMPORT_OUTER_MEMBERS_MAX 4096

/* The outer archive on fd: its regular files into t (directories are
 * made as needed; links and other members are skipped). */
int import_outer(int fd, struct import_tree *t, struct err *e);

/*
 * Apply one layer (a tar, plain or gzip, at fd's start; fd must be
 * seekable) to t: first its whiteouts (they hide lower layers' entries
 * only), then its other members in order. Device nodes are refused
 * unless devices is set (then recorded for debugfs).
 */
int import_layer(int fd, struct import_tree *t, bool devices, struct err *e);

#endif
