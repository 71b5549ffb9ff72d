/* The attributes as a debugfs script; see import_own.h. */
#include "api/image-import/import_own.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/image-import/oci_path.h"

#define OWN_PATH_MAX (OCI_PATH_MAX + 64) /* a member's name, or kiln's own (sbin/kiln-init) */

/* debugfs quoting: inside "...", a quote is doubled (its ss parser). */
static void quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static void sif(FILE *f, const char *path, const char *field, const char *fmt, unsigned v)
{
	fputs("sif ", f);
	quoted(f, path);
	fprintf(f, " %s ", field);
	fprintf(f, fmt, v);
	fputc('\n', f);
}

/* The entry at path (absolute, "/..."; base is its last component):
 * what debugfs must change. */
static void entry(FILE *f, const char *path, const char *base, size_t dirlen, const struct stat *st,
		  const struct import_attrs_slot *a)
{
	if (a && (S_ISCHR(a->mode) || S_ISBLK(a->mode))) {
		/* the placeholder goes; debugfs's mknod makes a name in its cwd */
		char dir[OWN_PATH_MAX + 2];

		snprintf(dir, sizeof(dir), "%.*s", (int)(dirlen ? dirlen : 1), path);
		fputs("rm ", f), quoted(f, path), fputs("\ncd ", f), quoted(f, dir);
		fputs("\nmknod ", f), quoted(f, base);
		fprintf(f, " %c %u %u\ncd /\n", S_ISBLK(a->mode) ? 'b' : 'c', a->rdev >> 20,
			a->rdev & 0xfffff);
	}
	/* an entry nothing was kept for (none: every one is) is root's */
	sif(f, path, "uid", "%u", a ? a->uid : 0);
	sif(f, path, "gid", "%u", a ? a->gid : 0);
	if (a && a->mode != st->st_mode && !S_ISLNK(st->st_mode))
		sif(f, path, "mode", "0%o", a->mode);
}

static void dir_time(int dfd, const char *name, const struct import_attrs_slot *a)
{
	struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT } };

	if (!a || a->mtime == IMPORT_NO_MTIME)
		return;
	ts[1].tv_sec = a->mtime;
	utimensat(dfd, name, ts, AT_SYMLINK_NOFOLLOW);
}

/* Everything below the directory fd (path: its absolute name, len long). */
static int walk(struct import_tree *t, int fd, char *path, size_t len, int depth, FILE *f,
		struct err *e)
{
	DIR *dh;
	struct dirent *de;
	int r = 0;

	if (depth > OCI_DEPTH_MAX + 8)
		return err_set(e, ELOOP, "'%s': deeper than %d directories", path, OCI_DEPTH_MAX);
	if ((fd = dup(fd)) < 0 || !(dh = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return err_set(e, EMFILE, "open '%s' to write its attributes: %s", path,
			       strerror(errno));
	}
	while (!r && (de = readdir(dh))) {
		const struct import_attrs_slot *a;
		size_t n = strlen(de->d_name);
		struct stat st;
		int sub;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (len + 1 + n >= OWN_PATH_MAX) {
			r = err_set(e, ENAMETOOLONG, "'%s/%s': name too long", path, de->d_name);
			break;
		}
		snprintf(path + len, OWN_PATH_MAX - len, "%s%s", len > 1 ? "/" : "", de->d_name);
		if (fstatat(dirfd(dh), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = err_set(e, errno, "stat '%s': %s", path, strerror(errno));
			break;
		}
		a = import_attrs_get(&t->attrs, st.st_ino);
		entry(f, path, de->d_name, len, &st, a);
		if (S_ISDIR(st.st_mode)) {
			sub = openat(dirfd(dh), de->d_name,
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			r = sub < 0 ? err_set(e, errno, "open '%s': %s", path, strerror(errno))
				    : walk(t, sub, path, strlen(path), depth + 1, f, e);
			if (sub >= 0)
				close(sub);
			/* after its contents: nothing moves it again */
			dir_time(dirfd(dh), de->d_name, a);
		}
		path[len] = '\0';
	}
	closedir(dh);
	return r;
}

int import_own_script(struct import_tree *t, FILE *out, struct err *e)
{
	char path[OWN_PATH_MAX + 1] = "/";
	const struct import_attrs_slot *a;
	struct stat st;
	int r;

	if (fstat(t->root, &st) < 0)
		return err_set(e, errno, "stat the image root: %s", strerror(errno));
	if ((r = walk(t, t->root, path, 1, 0, out, e)) < 0)
		return r;
	a = import_attrs_get(&t->attrs, st.st_ino);
	/* the root: root's, with the archive's mode and mtime */
	sif(out, "/", "uid", "%u", 0);
	sif(out, "/", "gid", "%u", 0);
	if (a && a->mode != st.st_mode && S_ISDIR(a->mode))
		sif(out, "/", "mode", "0%o", a->mode);
	dir_time(t->root, ".", a);
	if (fflush(out) != 0 || ferror(out))
		return err_set(e, EIO, "writing the ownership script failed: %s", strerror(errno));
	return 0;
}
