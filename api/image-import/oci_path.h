/*
 * oci_path: the pure rules for applying an image layer's members to a
 * tree (OCI image-spec "layer.md": changesets, whiteouts, opaque
 * directories): which member paths are acceptable, what a whiteout
 * removes, and whether a link stays inside the tree.
 *
 * Contract: pure, no file system. Member names are hostile (the archive
 * is a client's): every path that leaves here is relative, has no "."
 * or ".." component, no empty component, no control character (the
 * ownership pass writes paths into a debugfs script, one per line), at
 * most OCI_PATH_MAX bytes and OCI_DEPTH_MAX components. Errors name what
 * is wrong; the caller names the member and the layer.
 */
#ifndef KILN_OCI_PATH_H
#define KILN_OCI_PATH_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/base/err.h"

#define OCI_PATH_MAX 4095
#define OCI_NAME_MAX 255
#define OCI_DEPTH_MAX 128

/*
 * Clean a member name ("./usr/bin/", "usr//bin") into out (OCI_PATH_MAX
 * + 1 bytes): 0, with out "" for the root itself; or -EINVAL with e
 * (absolute path, ".." component, control character, too long, too deep).
 */
int oci_path_clean(const char *in, char *out, struct err *e);

enum oci_whiteout {
	OCI_WH_NONE = 0,
	OCI_WH_FILE,   /* ".wh.NAME": remove NAME from the lower layers */
	OCI_WH_OPAQUE, /* ".wh..wh..opq": empty the directory of lower layers' entries */
};

/*
 * What a cleaned member path is. For OCI_WH_FILE target (OCI_PATH_MAX + 1)
 * is the path removed; for OCI_WH_OPAQUE the directory emptied ("" for the
 * root). -EINVAL with e for a whiteout of nothing (".wh.", ".wh..", ".wh...")
 * or another ".wh..wh." name (reserved by the spec).
 */
int oci_whiteout(const char *clean, enum oci_whiteout *kind, char *target, struct err *e);

/*
 * A symbolic link at the cleaned path member pointing at target: 0 when
 * the target, read as the guest will (an absolute one from the tree's
 * root, a relative one from member's directory), never climbs above the
 * root; -EINVAL with e otherwise (also for an empty or over-long target
 * or a control character in it).
 */
int oci_symlink_check(const char *member, const char *target, struct err *e);

/* Whether name's last component is a whiteout marker (".wh." prefix). */
bool oci_is_whiteout_name(const char *clean);

#endif
