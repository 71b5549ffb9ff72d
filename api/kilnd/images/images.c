/* Image registry and records; see images.h. */
#include "api/kilnd/images/images.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/kilnd/images/image_file.h"
#include "api/kilnd/registry/sandbox_impl.h"
#include "api/kilnd/registry/sandbox_record.h"
#include "lib/base/json.h"
#include "lib/base/json_text.h"
#include "lib/digest/digest.h"

static const char suffix[] = ".ext4";

static const struct kilnd_image *option_image(const struct kilnd *d, const char *name)
{
	for (size_t i = 0; i < d->cfg.nimages; i++)
		if (strcmp(d->cfg.images[i].name, name) == 0)
			return &d->cfg.images[i];
	return NULL;
}

static bool regular_file(const char *path, off_t *size)
{
	struct stat st;

	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return false;
	if (size)
		*size = st.st_size;
	return true;
}

static int state_path(const struct kilnd *d, const char *name, char *path)
{
	return snprintf(path, PATH_MAX, "%s/images/%s%s", d->cfg.state_dir, name, suffix) < PATH_MAX
		? 0
		: -1;
}

int images_find(const struct kilnd *d, const char *name, char *path, struct api_err *e)
{
	const struct kilnd_image *im;

	if (!image_name_valid(name)) {
		api_err_set(e, API_E_BAD_FIELD, "image '%.80s' is not an image name", name);
		return -1;
	}
	im = option_image(d, name);
	if (im) {
		snprintf(path, PATH_MAX, "%s", im->path);
		return 0;
	}
	if (state_path(d, name, path) == 0 && regular_file(path, NULL))
		return 0;
	api_err_set(e, API_E_IMAGE_NOT_FOUND,
		    "no image '%s': register it with --image %s=PATH, import one (POST /v1/images?name=%s) or put it at %s/images/%s%s (GET /v1/images lists them)",
		    name, name, name, d->cfg.state_dir, name, suffix);
	return -1;
}

int images_check_disk(const char *name, const char *path, unsigned disk_mib, struct api_err *e)
{
	off_t size = 0;
	uint64_t need;

	if (!disk_mib)
		return 0;
	if (!regular_file(path, &size)) {
		api_err_set(e, API_E_IMAGE_NOT_FOUND,
			    "image '%s' (%s) went away: register it again", name, path);
		return -1;
	}
	need = ((uint64_t)size + (1u << 20) - 1) >> 20;
	if ((uint64_t)disk_mib < need) {
		api_err_set(e, API_E_BAD_FIELD,
			    "disk_mib %u is smaller than image '%s' (%llu MiB): give at least %llu, or leave it out for the image's size",
			    disk_mib, name, (unsigned long long)need, (unsigned long long)need);
		return -1;
	}
	return 0;
}

/* ---- records ---- */

static void record_path(const struct kilnd *d, const char *name, char *out, size_t cap)
{
	snprintf(out, cap, "%s/images/.records/%s.json", d->cfg.state_dir, name);
}

static json_t *record_load(const struct kilnd *d, const char *name)
{
	char p[PATH_MAX + 64];
	json_t *j;

	record_path(d, name, p, sizeof(p));
	j = json_strict_load_file(p, NULL);
	if (j && !json_is_object(j)) {
		json_decref(j);
		j = NULL;
	}
	return j;
}

/* Written whole then renamed: a reader sees the old record or the new. */
static int record_save(const struct kilnd *d, const char *name, json_t *rec)
{
	char dir[PATH_MAX + 32], p[PATH_MAX + 64], tmp[PATH_MAX + 96];

	snprintf(dir, sizeof(dir), "%s/images/.records", d->cfg.state_dir);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -1;
	record_path(d, name, p, sizeof(p));
	snprintf(tmp, sizeof(tmp), "%s.%d.%ld.tmp", p, (int)getpid(), (long)gettid());
	if (json_text_file(rec, tmp, JSON_COMPACT) < 0 || rename(tmp, p) < 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

static json_t *rfc3339(int64_t ms)
{
	char buf[40];

	format_time_ms(ms, buf, sizeof(buf));
	return json_string(buf);
}

/* The record of the file at path as it is now: the stored one when it
 * still describes this file (path, size, mtime), else a new one with
 * the file's digest (computed here, once) and source. */
static json_t *record_current(const struct kilnd *d, const char *name, const char *path,
			      const char *source)
{
	json_t *rec = record_load(d, name);
	char digest[DIGEST_STR_LEN];
	struct stat st;
	int fd;

	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
		json_decref(rec);
		return NULL;
	}
	if (rec && json_is_string(json_object_get(rec, "path")) &&
	    strcmp(json_string_value(json_object_get(rec, "path")), path) == 0 &&
	    json_integer_value(json_object_get(rec, "size_bytes")) == st.st_size &&
	    json_integer_value(json_object_get(rec, "mtime_ns")) ==
		    (json_int_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec &&
	    json_is_string(json_object_get(rec, "digest")))
		return rec;
	json_decref(rec);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || digest_fd(fd, digest) < 0) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	close(fd);
	rec = json_pack("{s:s,s:I,s:I,s:s,s:s,s:o}", "path", path, "size_bytes",
			(json_int_t)st.st_size, "mtime_ns",
			(json_int_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec, "digest",
			digest, "source", source, "created",
			rfc3339((int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000));
	if (rec)
		record_save(d, name, rec);
	return rec;
}

/* One image as GET /v1/images shows it (new reference). */
static json_t *image_view(const struct kilnd *d, const char *name, const char *path, bool option)
{
	json_t *rec = record_current(d, name, path, option ? "option" : "state_dir"), *o;
	const char *src = json_string_value(json_object_get(rec, "source"));
	off_t size = -1;

	if (!regular_file(path, &size))
		size = -1; /* an --image file that went away still shows, with no size */
	/* a record of an imported image says oci; --image always wins */
	if (option || !src)
		src = option ? "option" : "state_dir";
	o = json_pack("{s:s,s:s,s:o,s:s,s:O?,s:O?}", "name", name, "path", path, "size_bytes",
		      size >= 0 ? json_integer(size) : json_null(), "source", src, "digest",
		      json_object_get(rec, "digest"), "created", json_object_get(rec, "created"));
	if (o && !option && strcmp(src, "oci") == 0) {
		static const char *const extra[] = { "manifest_digest", "format", "config_digest",
						     "layers", "config" };

		for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++)
			if (json_object_get(rec, extra[i]))
				json_object_set(o, extra[i], json_object_get(rec, extra[i]));
	}
	json_decref(rec);
	return o;
}

json_t *images_list(const struct kilnd *d)
{
	json_t *arr = json_array(), *kernel;
	char dir[PATH_MAX + 16];
	struct dirent *de;
	off_t ksize = -1;
	DIR *dh;

	if (!arr)
		return NULL;
	for (size_t i = 0; i < d->cfg.nimages; i++)
		json_array_append_new(arr,
				      image_view(d, d->cfg.images[i].name, d->cfg.images[i].path,
						 true));
	snprintf(dir, sizeof(dir), "%s/images", d->cfg.state_dir);
	dh = opendir(dir);
	while (dh && (de = readdir(dh))) {
		char name[IMAGE_NAME_MAX + 1], path[PATH_MAX];
		size_t n = strlen(de->d_name);

		if (n <= strlen(suffix) || n - strlen(suffix) > IMAGE_NAME_MAX ||
		    strcmp(de->d_name + n - strlen(suffix), suffix) != 0)
			continue;
		memcpy(name, de->d_name, n - strlen(suffix));
		name[n - strlen(suffix)] = '\0';
		if (!image_name_valid(name) || option_image(d, name))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path) ||
		    !regular_file(path, NULL))
			continue;
		json_array_append_new(arr, image_view(d, name, path, false));
	}
	if (dh)
		closedir(dh);
	regular_file(d->cfg.kernel, &ksize);
	kernel = json_pack("{s:s,s:o}", "path", d->cfg.kernel, "size_bytes",
			   ksize >= 0 ? json_integer(ksize) : json_null());
	return json_pack("{s:o,s:o}", "images", arr, "kernel", kernel);
}

int images_get(const struct kilnd *d, const char *name, json_t **out, struct api_err *e)
{
	char path[PATH_MAX];

	if (images_find(d, name, path, e))
		return -1;
	*out = image_view(d, name, path, option_image(d, name) != NULL);
	if (!*out) {
		api_err_set(e, API_E_INTERNAL, "image '%s': out of memory", name);
		return -1;
	}
	return 0;
}

int images_register(struct kilnd *d, const char *name, const char *tmp_path, const char *source,
		    const json_t *extra, struct api_err *e)
{
	char path[PATH_MAX], digest[DIGEST_STR_LEN];
	const char *k;
	json_t *rec, *v;
	struct stat st;
	struct err fe;
	int fd, r;

	if (option_image(d, name) || state_path(d, name, path) < 0 || regular_file(path, NULL)) {
		api_err_set(e, API_E_EXISTS,
			    "an image named '%s' exists: pick another name, or DELETE /v1/images/%s first",
			    name, name);
		return -1;
	}
	/* the importer's file: trusted only as far as fstat of this fd says */
	fd = image_file_open(tmp_path, geteuid() == 0 ? d->cfg.import_id : geteuid(), &st, &fe);
	if (fd < 0) {
		api_err_set(e, API_E_INTERNAL, "image '%s': the importer's image: %s", name,
			    fe.msg);
		return -1;
	}
	if (fchown(fd, 0, 0) < 0 || fchmod(fd, 0644) < 0 || digest_fd(fd, digest) < 0 ||
	    fstat(fd, &st) < 0) {
		api_err_set(e, API_E_IO_ERROR, "image '%s': reading the new image failed: %s", name,
			    strerror(errno));
		close(fd);
		return -1;
	}
	/* link, not rename: an image of that name that appeared meanwhile is
	 * never replaced; the fd checked above, not the path again */
	if ((r = image_file_link(fd, path, &fe)) < 0) {
		api_err_set(e, r == -EEXIST ? API_E_EXISTS : API_E_IO_ERROR, "image '%s': %s", name,
			    fe.msg);
		close(fd);
		return -1;
	}
	close(fd);
	unlink(tmp_path);
	rec = json_pack("{s:s,s:I,s:I,s:s,s:s,s:o}", "path", path, "size_bytes",
			(json_int_t)st.st_size, "mtime_ns",
			(json_int_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec, "digest",
			digest, "source", source, "created", rfc3339(wall_ms()));
	if (rec && extra)
		json_object_foreach((json_t *)extra, k, v) if (!json_object_get(rec, k))
			json_object_set(rec, k, v);
	if (!rec || record_save(d, name, rec) < 0)
		kilnd_log("image %s: its record could not be written; GET /v1/images will compute it again",
			  name);
	json_decref(rec);
	return 0;
}

/* Who names the image, under reg.mu: a sandbox (any state) or a pool. */
static const char *image_user_locked(struct kilnd *d, const char *name)
{
	for (size_t i = 0; i < d->reg.n; i++)
		if (strcmp(d->reg.v[i]->rec.spec.image, name) == 0)
			return d->reg.v[i]->rec.id;
	for (size_t i = 0; i < d->cfg.npools; i++)
		if (strcmp(d->cfg.pools[i].image, name) == 0)
			return "--pool";
	return NULL;
}

int images_delete(struct kilnd *d, const char *name, struct api_err *e)
{
	char path[PATH_MAX], rp[PATH_MAX + 64];
	const char *user;

	if (images_find(d, name, path, e))
		return -1;
	if (option_image(d, name)) {
		api_err_set(e, API_E_READ_ONLY,
			    "image '%s' comes from kilnd's --image option: it cannot be deleted through the API",
			    name);
		return -1;
	}
	kilnd_lock(d);
	user = image_user_locked(d, name);
	/* A template's hidden sandbox: name the template, the thing to delete. */
	for (size_t i = 0; user && i < d->reg.n; i++)
		if (d->reg.v[i]->rec.id == user && d->reg.v[i]->rec.tmpl_build[0]) {
			api_err_set(e, API_E_IN_USE,
				    "image '%s' is in use by template '%s': DELETE /v1/templates/%s first",
				    name, d->reg.v[i]->rec.tmpl_build, d->reg.v[i]->rec.tmpl_build);
			kilnd_unlock(d);
			return -1;
		}
	if (user) {
		api_err_set(e, API_E_IN_USE, "image '%s' is in use by %s%s: delete %s first", name,
			    strcmp(user, "--pool") ? "sandbox " : "", user,
			    strcmp(user, "--pool") ? "that sandbox (and so its checkpoints)"
						   : "the pool (restart kilnd without it)");
		kilnd_unlock(d);
		return -1;
	}
	if (unlink(path) < 0 && errno != ENOENT) {
		api_err_set(e, API_E_IO_ERROR, "image '%s': remove %s: %s", name, path,
			    strerror(errno));
		kilnd_unlock(d);
		return -1;
	}
	kilnd_unlock(d);
	record_path(d, name, rp, sizeof(rp));
	unlink(rp);
	return 0;
}

json_t *images_defaults(const struct kilnd *d, const char *name)
{
	char path[PATH_MAX];
	json_t *rec, *c;
	struct stat st;

	if (option_image(d, name) || state_path(d, name, path) < 0 || stat(path, &st) < 0)
		return NULL;
	rec = record_load(d, name);
	c = json_object_get(rec, "config");
	/* only while the record still describes the file */
	if (!json_is_object(c) ||
	    json_integer_value(json_object_get(rec, "size_bytes")) != st.st_size) {
		json_decref(rec);
		return NULL;
	}
	json_incref(c);
	json_decref(rec);
	return c;
}
