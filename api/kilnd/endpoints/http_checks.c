/* Checks several endpoints share; see handlers.h. */
#include <limits.h>
#include <stdio.h>
#include <sys/statvfs.h>

#include "api/kilnd/images/import_room.h"
#include "api/kilnd/endpoints/handlers.h"

bool http_no_query(struct http_req *r, const char *what)
{
	struct api_err e;

	if (query_none(r->kv, r->nkv, what, &e) == 0)
		return true;
	http_error(r, &e);
	return false;
}

/* A declared length that surely cannot fit in state_dir/sub is refused
 * before the body (import_room.h); where the file system cannot say, the
 * upload goes on and a full disk ends it with no_space as before. */
int http_room_check(struct http_req *r, const char *sub, const char *what, const char *holds, struct api_err *e)
{
	char dir[PATH_MAX + 16];
	struct statvfs fs;

	if (r->head->body != HTTP_BODY_LENGTH)
		return 0;
	/* where the upload is written (a mount of its own, perhaps) */
	snprintf(dir, sizeof(dir), "%.4000s/%s", r->d->cfg.state_dir, sub);
	if (statvfs(dir, &fs) < 0) {
		snprintf(dir, sizeof(dir), "%.4000s", r->d->cfg.state_dir);
		if (statvfs(dir, &fs) < 0)
			return 0;
	}
	return import_room_check(what, holds, r->head->content_length, (uint64_t)fs.f_bavail * fs.f_frsize, dir, e);
}
