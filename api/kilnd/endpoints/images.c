/*
 * POST /v1/images?name=NAME (docs/api.md, "POST /v1/images"): the body,
 * an OCI image-layout or docker save tarball, is streamed to a file in an
 * import work directory (never held in memory; --max-image), then
 * kiln-image-import turns it into an image (images/image_import.h).
 * GET /v1/images lists them; GET and DELETE /v1/images/{name}: one
 * image's record, and its removal.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/kilnd/endpoints/handlers.h"
#include "api/kilnd/images/image_import.h"
#include "api/kilnd/images/images.h"
#include "lib/base/fd_io.h"

struct import_job {
	char work[IMAGE_IMPORT_WORK_MAX];
	char name[IMAGE_NAME_MAX + 1];
	char ref[IMAGE_REF_MAX + 1]; /* "": none asked for */
	bool devices;
	int fd;
	int err; /* the first write error (-errno); the rest of the body is dropped */
};

static int import_data(struct http_req *r, const void *p, size_t n)
{
	struct import_job *j = r->up;

	if (j->err)
		return j->err;
	j->err = fd_io_write_all(j->fd, p, n);
	return j->err;
}

static void import_end(struct http_req *r, bool too_large)
{
	struct import_job *j = r->up;
	struct api_err e;
	char loc[32 + IMAGE_NAME_MAX];
	json_t *view;

	if (j->fd >= 0 && close(j->fd) < 0 && !j->err)
		j->err = -errno;
	j->fd = -1;
	if (too_large || j->err) {
		image_import_abort(r->d, j->work);
		if (too_large)
			api_err_set(&e, API_E_BODY_TOO_LARGE,
				    "the image archive is larger than %llu bytes (--max-image)",
				    (unsigned long long)r->d->cfg.max_image);
		else
			api_err_set(&e, j->err == -ENOSPC ? API_E_NO_SPACE : API_E_IO_ERROR,
				    "image import: writing the archive to %s failed: %s", j->work,
				    strerror(-j->err));
		http_error(r, &e);
	} else if (image_import_finish(r->d, j->work, j->name, j->ref, j->devices, &view, &e) < 0) {
		http_error(r, &e);
	} else {
		kilnd_log("image %s: imported (%s)", j->name,
			  json_string_value(json_object_get(view, "digest"))
				  ? json_string_value(json_object_get(view, "digest"))
				  : "?");
		snprintf(loc, sizeof(loc), "/v1/images/%s", j->name);
		http_json_located(r, 201, view, loc);
	}
	free(j);
	r->up = NULL;
}

static void import_cancel(struct http_req *r)
{
	struct import_job *j = r->up;

	if (!j)
		return;
	if (j->fd >= 0)
		close(j->fd);
	image_import_abort(r->d, j->work);
	free(j);
	r->up = NULL;
}

static const struct http_upload_ops import_ops = { .data = import_data,
						   .end = import_end,
						   .cancel = import_cancel };

void handle_image_import_begin(struct http_req *r)
{
	struct import_job *j = calloc(1, sizeof(*j));
	const char *name, *ref;
	char path[PATH_MAX];
	struct api_err e, nf;

	if (!j) {
		api_err_set(&e, API_E_INTERNAL, "image import: out of memory");
		http_error(r, &e);
		return;
	}
	j->fd = -1;
	if (query_image_import(r->kv, r->nkv, &name, &j->devices, &ref, &e))
		goto fail;
	/* device nodes in an image are root's to ask for (docs/security.md) */
	if (j->devices && r->peer.uid != 0) {
		api_err_set(&e, API_E_FORBIDDEN,
			    "image import: devices=1 is for root clients only");
		goto fail;
	}
	/* refused before a byte of the body is read */
	if (images_find(r->d, name, path, &nf) == 0) {
		api_err_set(&e, API_E_EXISTS,
			    "an image named '%s' exists: pick another name, or DELETE /v1/images/%s first",
			    name, name);
		goto fail;
	}
	if (http_room_check(r, "images", "image import",
			    "the archive, its unpacked layers and the image", &e))
		goto fail;
	snprintf(j->name, sizeof(j->name), "%s", name);
	snprintf(j->ref, sizeof(j->ref), "%s", ref ? ref : "");
	if (image_import_begin(r->d, j->work, &j->fd, &e))
		goto fail;
	http_upload(r, &import_ops, j);
	return;
fail:
	free(j);
	http_error(r, &e);
}

void handle_image_get(struct http_req *r)
{
	struct api_err e;
	json_t *o;

	if (!http_no_query(r, "image"))
		return;
	if (images_get(r->d, r->rm.id, &o, &e))
		http_error(r, &e);
	else
		http_json(r, 200, o);
}

void handle_image_delete(struct http_req *r)
{
	struct api_err e;

	if (!http_no_query(r, "image delete"))
		return;
	if (images_delete(r->d, r->rm.id, &e)) {
		http_error(r, &e);
		return;
	}
	kilnd_log("image %s: deleted", r->rm.id);
	http_no_content(r);
}

void handle_images(struct http_req *r)
{
	if (http_no_query(r, "images"))
		http_answer(r, 0, 200, images_list(r->d), NULL);
}
