/*
 * images: the read-only root images kilnd can boot, and its kernel
 * (docs/api.md, "GET /v1/images").
 *
 * Contract: images come from --image NAME=PATH (checked at start-up) and
 * from <state-dir>/images/NAME.ext4, which is looked at on every call, so
 * an image dropped there is usable without a restart. A --image of the
 * same name wins. Only regular files are images; names follow
 * image_name_valid() and paths vmm_path_valid(), since both end up in
 * kiln-vmm's --disk option.
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

#endif
