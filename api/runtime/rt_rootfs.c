/* The container's mount points in its rootfs; see rt_rootfs.h. */
#include "api/runtime/rt_rootfs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "api/runtime/rt_state.h"

/* The next component of *p, skipping runs of '/' and "." components
 * (config.json does not normalise: "//dev/pts", "/dev/./pts" are
 * /dev/pts); its length in *n, NULL at the end. */
static const char *component(const char **p, size_t *n)
{
	for (;;) {
		const char *s = *p + strspn(*p, "/");

		*n = strcspn(s, "/");
		*p = s + *n;
		if (*n == 0)
			return NULL;
		if (*n != 1 || s[0] != '.')
			return s;
	}
}

/* Whether path lies at or below dir (both absolute, component-wise). */
static bool below(const char *path, const char *dir)
{
	for (;;) {
		size_t dn, pn;
		const char *d = component(&dir, &dn), *q;

		if (!d)
			return true;
		q = component(&path, &pn);
		if (!q || pn != dn || memcmp(q, d, dn) != 0)
			return false;
	}
}

bool rt_rootfs_wanted(const struct rt_mount *mounts, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (below(mounts[i].destination, mounts[j].destination))
			return false;
	return true;
}

static int open_in_root(int rootfd, const char *path, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)flags | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};

	return (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
}

/* dest's parents as directories, then dest itself (file or directory). */
static int make_one(int rootfd, const char *dest, bool file, struct err *e)
{
	char path[RT_PATH_MAX];
	size_t n = strlen(dest);

	if (n >= sizeof(path))
		return err_set(e, ENAMETOOLONG, "mount destination %.200s is too long", dest);
	memcpy(path, dest, n + 1);
	for (char *p = path + 1;; p++) {
		bool last = *p == '\0';
		char *slash, saved;
		int parent, fd;

		if (*p != '/' && !last)
			continue;
		saved = *p;
		*p = '\0';
		fd = open_in_root(rootfd, path, O_PATH);
		if (fd >= 0) {
			close(fd);
		} else if (errno == ENOENT) {
			slash = strrchr(path, '/');
			*slash = '\0';
			parent = open_in_root(rootfd, slash == path ? "/" : path,
					      O_PATH | O_DIRECTORY);
			*slash = '/';
			if (parent < 0)
				return err_set(e, errno, "mount destination %.200s: %s: %s", dest,
					       path, strerror(errno));
			if (last && file)
				fd = openat(parent, slash + 1,
					    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
					    0644);
			else
				fd = mkdirat(parent, slash + 1, 0755);
			if (fd < 0 && errno != EEXIST) {
				int err = errno;

				close(parent);
				return err_set(e, err,
					       "making mount point %.200s in the rootfs: %s", path,
					       strerror(err));
			}
			if (last && file && fd >= 0)
				close(fd);
			close(parent);
		} else if (errno != ELOOP && errno != EXDEV) {
			return err_set(e, errno, "mount destination %.200s: %s: %s", dest, path,
				       strerror(errno));
		}
		*p = saved;
		if (last)
			return 0;
	}
}

int rt_rootfs_mountpoints(const char *rootfs, const struct rt_config *cfg, struct err *e)
{
	int rootfd = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC), r = 0;

	if (rootfd < 0)
		return err_set(e, errno, "root.path %.200s: %s", rootfs, strerror(errno));
	for (size_t i = 0; !r && i < cfg->nmounts; i++) {
		const struct rt_mount *m = &cfg->mounts[i];
		struct stat st;
		bool file = m->bind && m->source && lstat(m->source, &st) == 0 &&
			!S_ISDIR(st.st_mode);

		if (rt_rootfs_wanted(cfg->mounts, i))
			r = make_one(rootfd, m->destination, file, e);
	}
	close(rootfd);
	return r;
}
