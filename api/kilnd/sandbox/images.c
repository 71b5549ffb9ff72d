/* Image registry; see images.h. */
#include "api/kilnd/sandbox/images.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

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
	if (snprintf(path, PATH_MAX, "%s/images/%s%s", d->cfg.state_dir, name, suffix) < PATH_MAX &&
	    regular_file(path, NULL))
		return 0;
	api_err_set(e, API_E_IMAGE_NOT_FOUND,
		    "no image '%s': register it with --image %s=PATH or put it at %s/images/%s%s (GET /v1/images lists them)",
		    name, name, d->cfg.state_dir, name, suffix);
	return -1;
}

int images_check_disk(const char *name, const char *path, unsigned disk_mib, struct api_err *e)
{
	off_t size = 0;
	uint64_t need;

	if (!disk_mib)
		return 0;
	if (!regular_file(path, &size)) {
		api_err_set(e, API_E_IMAGE_NOT_FOUND, "image '%s' (%s) went away: register it again", name, path);
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

static int add(json_t *arr, const char *name, const char *path, const char *source)
{
	off_t size = 0;
	json_t *o;

	if (!regular_file(path, &size))
		size = -1; /* an --image file that went away still shows, with no size */
	o = json_pack("{s:s,s:s,s:o,s:s}", "name", name, "path", path, "size_bytes",
		      size >= 0 ? json_integer(size) : json_null(), "source", source);
	return o ? json_array_append_new(arr, o) : -1;
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
		add(arr, d->cfg.images[i].name, d->cfg.images[i].path, "option");
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
		add(arr, name, path, "state_dir");
	}
	if (dh)
		closedir(dh);
	regular_file(d->cfg.kernel, &ksize);
	kernel = json_pack("{s:s,s:o}", "path", d->cfg.kernel, "size_bytes",
			   ksize >= 0 ? json_integer(ksize) : json_null());
	return json_pack("{s:o,s:o}", "images", arr, "kernel", kernel);
}
