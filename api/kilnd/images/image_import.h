/*
 * image_import: running kiln-image-import (api/image-import/) for
 * POST /v1/images: a work directory under <state-dir>/images/, the
 * importer as a child with the least privilege kilnd can give it
 * (docs/security.md, "Image import"), its answer read back, the image
 * registered (images_register).
 *
 * Contract: one import at a time per kilnd (they share the import uid
 * and its rlimits; a lock file serializes them). The archive is a file
 * kilnd wrote into the work directory; the importer reads it on stdin and
 * writes only below its work directory (import_ns.h: a root kilnd gives
 * it namespaces of its own; it can read what any unprivileged user of the
 * host can; docs/security.md). It runs in its own process group, killed
 * whole when it ends or times out; under a root kilnd it is also the first
 * process of a PID namespace of its own, so nothing it started outlives it
 * and it signals nothing outside (not another kilnd's importer, which has
 * the same uid by default).
 */
#ifndef KILN_IMAGE_IMPORT_H
#define KILN_IMAGE_IMPORT_H

#include <stdbool.h>

#include <jansson.h>

#include "api/kilnd/core/api_error.h"
#include "api/kilnd/core/kilnd.h"

#define IMAGE_IMPORT_WORK_MAX 512

/* A new work directory (path: IMAGE_IMPORT_WORK_MAX bytes) and, open for
 * writing in it, the file the archive goes to (*fd). -1 with e. */
int image_import_begin(struct kilnd *d, char *work, int *fd, struct api_err *e);

/*
 * Import the archive written into work (its fd closed by the caller) as
 * image name: 0 and *out (the new image's GET /v1/images/{name} view),
 * or -1 with e (bad_archive naming the member, exists, internal). The
 * work directory is removed in every case.
 */
int image_import_finish(struct kilnd *d, const char *work, const char *name, const char *ref,
			bool devices, json_t **out, struct api_err *e);

/*
 * The importer and kiln-init, found at each import: `given` (--importer,
 * --kiln-init) when not "", else name next to kilnd (self_dir: the build
 * tree), else in ../lib/kiln/ from it (make install). Into out (PATH_MAX).
 */
void image_import_helper(const char *given, const char *self_dir, const char *name, char *out);

/* At start, before serving: remove the work directories (.import-*) an
 * import left when kilnd was killed during it (the importer's trees
 * through `kiln-image-import --clean`, as the import uid). */
void image_import_sweep(struct kilnd *d);

/* Remove a work directory without importing (the upload failed): no
 * importer has run in it, so it is removed as root; no child runs and
 * nothing is killed (another client's import may be running). */
void image_import_abort(struct kilnd *d, const char *work);

#endif
