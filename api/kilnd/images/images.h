/*
 * images: the read-only root images kilnd can boot, their records, and
 * its kernel (docs/api.md, "Images").
 *
 * Contract: images come from --image NAME=PATH (checked at start-up) and
 * from <state-dir>/images/NAME.ext4, which is looked at on every call, so
 * an image dropped there is usable without a restart. A --image of the
 * same name wins. Only regular files are images; names follow
 * image_name_valid() and paths host_path_valid(), since both end up on
 * kiln-vmm's command line (--disk-image PATH).
 *
 * Records: <state-dir>/images/.records/NAME.json holds what is known of
 * an image beyond its file: its sha256 digest (computed once, at import
 * or when first listed, and kept while the file's path, size and mtime
 * are the same), its source and creation time, and for an imported image
 * the archive's manifest digest and the config's runtime defaults
 * (images_defaults).
 */
#ifndef KILN_IMAGES_H
#define KILN_IMAGES_H

#include <jansson.h>

#include "api/kilnd/core/api_error.h"
#include "api/kilnd/core/kilnd.h"

/* The image called name: 0 and its absolute path in path (PATH_MAX), or
 * -1 with e (image_not_found, bad_field). */
int images_find(const struct kilnd *d, const char *name, char *path, struct api_err *e);

/* disk_mib (0: the image's size) holds the image at path: 0, or -1 with e
 * (bad_field: give at least the image's size in MiB). */
int images_check_disk(const char *name, const char *path, unsigned disk_mib, struct api_err *e);

/* The GET /v1/images body (new reference; NULL when out of memory). */
json_t *images_list(const struct kilnd *d);

/* GET /v1/images/{name}: 0 and *out (new reference), or -1 with e. */
int images_get(const struct kilnd *d, const char *name, json_t **out, struct api_err *e);

/*
 * Register the ext4 file at tmp_path (on the state directory's file
 * system) as image name: linked to <state-dir>/images/NAME.ext4 (root's,
 * 0644) with its record (source, created, digest and size of the file,
 * and every member of extra: manifest_digest, config, ...). The file must
 * be a regular file of the import uid (kilnd's own uid when not root)
 * with one link (image_file.h); the descriptor checked is the one linked.
 * -1 with e (exists: an image of that name is there already; internal: a
 * file that fails the checks).
 */
int images_register(struct kilnd *d, const char *name, const char *tmp_path, const char *source,
		    const json_t *extra, struct api_err *e);

/*
 * DELETE /v1/images/{name}: 0, or -1 with e: image_not_found; read_only
 * for a --image image; in_use while any sandbox (in any state: its
 * checkpoints and hibernation image need the image too) or --pool names it.
 */
int images_delete(struct kilnd *d, const char *name, struct api_err *e);

/* The image's runtime defaults, {"env", "working_dir", "user", ...}
 * (new reference), or NULL when it has none (not an imported image). */
json_t *images_defaults(const struct kilnd *d, const char *name);

#endif
