/* A sandbox's directory and its meta.json; see sandbox_impl.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/kilnd/registry/sandbox_impl.h"
#include "lib/base/file_replace.h"
#include "lib/base/json_text.h"

/* snprintf for paths: -ENAMETOOLONG instead of a silently cut path. */
int sandbox_pathf(char *out, size_t cap, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out, cap, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

/* Rewrite meta.json atomically and durably (file_replace: temporary file,
 * fsync, rename, the directory's fsync). Under reg.mu. */
int sandbox_persist_locked(struct sandbox *sb)
{
	json_t *m = sandbox_record_persist(&sb->rec);
	char *s = m ? json_text(m, JSON_COMPACT) : NULL;
	int r;

	json_decref(m);
	if (!s) {
		kilnd_log("sandbox %s: cannot save meta.json: out of memory", sb->rec.id);
		return -ENOMEM;
	}
	r = file_replace(sb->dir, "meta.json", s, strlen(s), 0600);
	if (r)
		kilnd_log("sandbox %s: cannot save %s/meta.json: %s", sb->rec.id, sb->dir,
			  strerror(-r));
	free(s);
	return r;
}

/* Sandbox directory → checkpoints → one checkpoint → its files: anything
 * deeper is not kilnd's and is left with a log line. */
#define REMOVE_DEPTH_MAX 4

/* Empty the directory dfd (taken over) and its subdirectories. Entries
 * are removed relative to their directory and never followed: a symlink
 * is removed as a link. */
static void empty_dir(int dfd, const char *path, int depth)
{
	DIR *dh = fdopendir(dfd);
	struct dirent *de;

	if (!dh) {
		kilnd_log("cannot read %s to remove it: %s", path, strerror(errno));
		close(dfd);
		return;
	}
	while ((de = readdir(dh))) {
		int sub;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (unlinkat(dirfd(dh), de->d_name, 0) == 0)
			continue;
		if (errno != EISDIR && errno != EPERM) {
			kilnd_log("cannot remove %s/%s: %s", path, de->d_name, strerror(errno));
			continue;
		}
		sub = depth < REMOVE_DEPTH_MAX
			? openat(dirfd(dh), de->d_name,
				 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
			: -1;
		if (sub < 0) {
			kilnd_log("cannot remove %s/%s: %s", path, de->d_name,
				  depth < REMOVE_DEPTH_MAX ? strerror(errno) : "nested too deep");
			continue;
		}
		empty_dir(sub, de->d_name, depth + 1);
		if (unlinkat(dirfd(dh), de->d_name, AT_REMOVEDIR) < 0)
			kilnd_log("cannot remove %s/%s: %s", path, de->d_name, strerror(errno));
	}
	closedir(dh);
}

/* Remove a directory and everything beneath it; see sandbox_impl.h. */
void sandbox_remove_dir(const char *dir)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (dfd < 0) {
		/* A link or a fifo where the directory was (a jailed VMM can
		 * put one in its checkpoints/): removed as itself, not followed. */
		if ((errno == ELOOP || errno == ENOTDIR) && unlink(dir) == 0)
			return;
		if (errno != ENOENT)
			kilnd_log("cannot open %s to remove it: %s", dir, strerror(errno));
		return;
	}
	empty_dir(dfd, dir, 1);
	if (rmdir(dir) < 0)
		kilnd_log("cannot remove %s: %s", dir, strerror(errno));
}
