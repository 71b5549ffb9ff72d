/*
 * import_own: the staging tree's kept attributes (import_attrs.h) as a
 * debugfs script, once the tree is complete: for every path, its owner,
 * its mode where the staging file's differs (set-uid, set-gid and sticky
 * bits, a directory's forced 0700, a fifo's 0600), a device node made in
 * place of its placeholder; and each directory's mtime set on the staging
 * directory after everything in it was written (mkfs.ext4 -d copies it).
 * The root is root's whatever the archive said (as kiln's images are).
 *
 * Contract: walks only the staging tree, through directory descriptors,
 * never following a link; paths are quoted for debugfs (a '"' doubled;
 * the name rules keep newlines out). -errno with e.
 */
#ifndef KILN_IMPORT_OWN_H
#define KILN_IMPORT_OWN_H

#include <stdio.h>

#include "api/image-import/import_tree.h"

int import_own_script(struct import_tree *t, FILE *out, struct err *e);

#endif
