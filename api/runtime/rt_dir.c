/* kiln-runtime's state directory on disk; see rt_dir.h. */
#include "api/runtime/rt_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/base/fd_io.h"
#include "lib/base/file_replace.h"
#include "lib/base/proc_stat.h"

/* mkdir -p with 0700 for what is missing. */
static int make_parents(const char *path, struct err *e)
{
	char p[RT_PATH_MAX];

	if ((size_t)snprintf(p, sizeof(p), "%s", path) >= sizeof(p))
		return err_set(e, ENAMETOOLONG, "--root: the path is too long");
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0700) < 0 && errno != EEXIST)
			return err_set(e, errno, "--root %.200s: making %.200s: %s", path, p,
				       strerror(errno));
		*s = '/';
	}
	if (mkdir(p, 0700) < 0 && errno != EEXIST)
		return err_set(e, errno, "--root %.200s: %s", path, strerror(errno));
	return 0;
}

int rt_dir_open_root(const char *root, bool create, int *fd, struct err *e)
{
	struct stat st;
	int d;

	if (create && make_parents(root, e) < 0)
		return -EIO;
	d = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d < 0)
		return err_set(e, errno, "--root %.200s: %s", root, strerror(errno));
	if (fstat(d, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
		close(d);
		return err_set(e, EPERM,
			       "--root %.200s: owned by another user or writable by others; give "
			       "a directory of kiln-runtime's own (0700)",
			       root);
	}
	*fd = d;
	return 0;
}

int rt_dir_make(int rootfd, const char *id, int *dirfd, struct err *e)
{
	if (mkdirat(rootfd, id, 0700) < 0) {
		if (errno == EEXIST)
			return err_set(e, EEXIST, "container \"%s\" already exists", id);
		return err_set(e, errno, "container \"%s\": making its state directory: %s", id,
			       strerror(errno));
	}
	return rt_dir_open(rootfd, id, dirfd, e);
}

int rt_dir_open(int rootfd, const char *id, int *dirfd, struct err *e)
{
	int d = openat(rootfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (d < 0) {
		if (errno == ENOENT)
			return err_set(e, ENOENT, "container \"%s\" does not exist", id);
		return err_set(e, errno, "container \"%s\": its state directory: %s", id,
			       strerror(errno));
	}
	*dirfd = d;
	return 0;
}

int rt_dir_lock(int dirfd, const char *id, int wait_ms, int *lockfd, struct err *e)
{
	struct timespec pause = { 0, 20 * 1000 * 1000 };
	int fd = openat(dirfd, RT_LOCK_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0)
		return err_set(e, errno, "container \"%s\": its lock: %s", id, strerror(errno));
	for (int waited = 0; flock(fd, LOCK_EX | LOCK_NB) < 0; waited += 20) {
		if (errno != EWOULDBLOCK || waited >= wait_ms) {
			int r = errno == EWOULDBLOCK ? EBUSY : errno;

			close(fd);
			return err_set(e, r,
				       "container \"%s\" is busy: another kiln-runtime command holds "
				       "it; try again",
				       id);
		}
		nanosleep(&pause, NULL);
	}
	*lockfd = fd;
	return 0;
}

int rt_file_read(int dirfd, const char *name, bool follow, size_t max, const char *what, char **buf,
		 size_t *n, struct err *e)
{
	/* O_NONBLOCK: a FIFO put there opens at once, and is refused below */
	int fd = openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
	struct stat st;
	ssize_t got;

	*buf = NULL;
	if (fd < 0)
		return err_set(e, errno, "%s: %s", what, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return err_set(e, EINVAL, "%s is not a regular file", what);
	}
	if ((uint64_t)st.st_size > max) {
		close(fd);
		return err_set(e, EFBIG, "%s is larger than %zu bytes", what, max);
	}
	*buf = malloc((size_t)st.st_size + 1);
	got = *buf ? fd_io_read_full(fd, *buf, (size_t)st.st_size + 1) : -ENOMEM;
	close(fd);
	/* Grown since fstat, or unreadable: refused, never cut. */
	if (got < 0 || got > st.st_size) {
		free(*buf);
		*buf = NULL;
		return err_set(e, got == -ENOMEM ? ENOMEM : EIO, "%s: reading it failed", what);
	}
	(*buf)[got] = '\0';
	*n = (size_t)got;
	return 0;
}

int rt_file_read_in(const char *dir, const char *dir_what, const char *name, bool follow,
		    size_t max, const char *what, char **buf, size_t *n, struct err *e)
{
	int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r;

	*buf = NULL;
	if (dirfd < 0)
		return err_set(e, errno, "%s %.200s: %s", dir_what, dir, strerror(errno));
	r = rt_file_read(dirfd, name, follow, max, what, buf, n, e);
	close(dirfd);
	return r;
}

int rt_dir_read_state(int dirfd, const char *id, struct rt_state_rec *r, struct err *e)
{
	char what[RT_ID_MAX + 64], *buf;
	size_t n;
	int ret;

	memset(r, 0, sizeof(*r));
	snprintf(what, sizeof(what), "container \"%s\": state.json", id);
	ret = rt_file_read(dirfd, RT_STATE_FILE, false, RT_STATE_FILE_MAX, what, &buf, &n, e);
	/* A directory without its record: a create that died midway. */
	if (ret == -ENOENT)
		return err_set(e, ENOENT, "container \"%s\" does not exist (no state)", id);
	if (ret < 0)
		return ret;
	ret = rt_state_decode(buf, n, r, e);
	free(buf);
	return ret;
}

int rt_file_replace(int dirfd, const char *name, const void *buf, size_t n, mode_t mode,
		    const char *what, struct err *e)
{
	int r = file_replace_at(dirfd, name, buf, n, mode);

	if (r == -ENAMETOOLONG)
		return err_set(e, ENAMETOOLONG, "%s: the path is too long", what);
	if (r == -EINVAL)
		return err_set(e, EINVAL,
			       "%s: names no file (empty, or ends in '/'): give the path of a file",
			       what);
	if (r < 0)
		return err_set(e, -r, "%s: writing it: %s", what, strerror(-r));
	return 0;
}

int rt_dir_write_state(int dirfd, const struct rt_state_rec *r, struct err *e)
{
	char what[RT_ID_MAX + 40], *s;
	int ret;

	if (rt_state_encode(r, &s, e) < 0)
		return -ENOMEM;
	snprintf(what, sizeof(what), "container \"%s\": state.json", r->id);
	ret = rt_file_replace(dirfd, RT_STATE_FILE, s, strlen(s), 0600, what, e);
	free(s);
	return ret;
}

/* Whether the directory fd is the root of a mount (a bind mount of the
 * same filesystem has the same st_dev: only statx tells). */
static bool mount_root(int fd)
{
	struct statx sx;

	/* Unknown (the call failed, or a kernel before 5.8 that does not
	 * report the attribute): do not descend. A delete that refuses is
	 * better than one that empties a user's volume. */
	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx) < 0 ||
	    !(sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
		return true;
	return sx.stx_attributes & STATX_ATTR_MOUNT_ROOT;
}

/* Empty the directory dfd (its entries, depth levels down). */
static int empty_dir(int dfd, int depth, struct err *e)
{
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (depth > RT_REMOVE_DEPTH)
		return err_set(e, ELOOP, "the state directory is nested deeper than %d",
			       RT_REMOVE_DEPTH);
	d = fdopendir(dup(dfd));
	if (!d)
		return err_set(e, errno, "reading the state directory: %s", strerror(errno));
	while (!r && (de = readdir(d))) {
		int sub;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (unlinkat(dfd, de->d_name, 0) == 0)
			continue;
		if (errno != EISDIR && errno != EPERM) {
			r = err_set(e, errno, "removing %.100s: %s", de->d_name, strerror(errno));
			break;
		}
		sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0) {
			r = err_set(e, errno, "removing %.100s: %s", de->d_name, strerror(errno));
		} else if (mount_root(sub)) {
			r = err_set(e, EBUSY,
				    "%.100s is still mounted: it is not removed (nor what it holds)",
				    de->d_name);
		} else {
			r = empty_dir(sub, depth + 1, e);
			if (!r && unlinkat(dfd, de->d_name, AT_REMOVEDIR) < 0)
				r = err_set(e, errno, "removing %.100s: %s", de->d_name,
					    strerror(errno));
		}
		if (sub >= 0)
			close(sub);
	}
	closedir(d);
	return r;
}

int rt_dir_remove(int rootfd, const char *id, struct err *e)
{
	struct err inner;
	int d, r;

	r = rt_dir_open(rootfd, id, &d, e);
	if (r < 0)
		return r;
	if (mount_root(d)) {
		close(d);
		return err_set(e, EBUSY, "container \"%s\": its state directory is a mount point",
			       id);
	}
	r = empty_dir(d, 0, &inner);
	close(d);
	if (r < 0)
		return err_set(e, -r, "container \"%s\": %s", id, inner.msg);
	if (unlinkat(rootfd, id, AT_REMOVEDIR) < 0)
		return err_set(e, errno, "container \"%s\": removing its state directory: %s", id,
			       strerror(errno));
	return 0;
}

int rt_pid_file_write(const char *path, int pid, struct err *e)
{
	char text[16], what[64 + 200];
	int n = snprintf(text, sizeof(text), "%d", pid);

	snprintf(what, sizeof(what), "--pid-file %.200s", path);
	return rt_file_replace(AT_FDCWD, path, text, (size_t)n, 0644, what, e);
}

/* Where to start looking: the ID's own slot, so parallel creates of
 * different containers rarely race for one file (O_EXCL decides). */
static unsigned id_slot(const char *id, unsigned slots)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (; *id; id++)
		h = (h ^ (uint8_t)*id) * 16777619u;
	return h % slots;
}

int rt_ids_take(int rootfd, const char *id, unsigned slots, uint32_t *first, struct err *e)
{
	unsigned start;
	int dfd;

	if (slots == 0 || slots > RT_IDS_SLOTS)
		slots = RT_IDS_SLOTS;
	start = id_slot(id, slots);
	if (mkdirat(rootfd, RT_IDS_DIR, 0700) < 0 && errno != EEXIST)
		return err_set(e, errno, "--root/%s: %s", RT_IDS_DIR, strerror(errno));
	dfd = openat(rootfd, RT_IDS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return err_set(e, errno, "--root/%s: %s", RT_IDS_DIR, strerror(errno));
	for (unsigned k = 0; k < slots; k++) {
		uint32_t f = RT_IDS_BASE + ((start + k) % slots) * RT_IDS_SIZE;
		char name[16];
		int fd;

		snprintf(name, sizeof(name), "%u", f);
		fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno == EEXIST)
			continue;
		if (fd < 0 || fd_io_write_all(fd, id, strlen(id)) < 0) {
			int r = err_set(e, errno, "--root/%s/%s: %s", RT_IDS_DIR, name,
					strerror(errno));

			if (fd >= 0) {
				close(fd);
				unlinkat(dfd, name, 0);
			}
			close(dfd);
			return r;
		}
		close(fd);
		close(dfd);
		*first = f;
		return 0;
	}
	close(dfd);
	return err_set(e, EAGAIN,
		       "no free host id range: %u containers hold them all; delete stopped ones",
		       slots);
}

int rt_ids_free(int rootfd, uint32_t first, const char *id, struct err *e)
{
	char path[64], *held;
	size_t n;
	int r;

	snprintf(path, sizeof(path), RT_IDS_DIR "/%u", first);
	r = rt_file_read(rootfd, path, false, RT_ID_MAX, path, &held, &n, e);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	r = strcmp(held, id) == 0 && unlinkat(rootfd, path, 0) < 0
		? err_set(e, errno, "--root/%s: %s", path, strerror(errno))
		: 0;
	free(held);
	return r;
}

bool rt_proc_alive(int pid, uint64_t start)
{
	uint64_t st;
	char state;

	return proc_stat_read(pid, &st, &state) == 0 && st == start && state != 'Z' && state != 'X';
}

enum rt_status rt_dir_status(const struct rt_state_rec *r, int *pid)
{
	if (r->status != RT_STATUS_STOPPED && rt_proc_alive(r->shim.pid, r->shim.start)) {
		*pid = r->shim.pid;
		return r->status;
	}
	*pid = 0;
	return RT_STATUS_STOPPED;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int rt_dir_list(int rootfd, char ***ids, size_t *n, struct err *e)
{
	DIR *d = fdopendir(dup(rootfd));
	struct dirent *de;
	size_t cap = 0;
	char **v = NULL;

	*ids = NULL;
	*n = 0;
	if (!d)
		return err_set(e, errno, "reading --root: %s", strerror(errno));
	while ((de = readdir(d)) && *n < RT_LIST_MAX) {
		if (de->d_type != DT_DIR || rt_id_check(de->d_name, NULL) < 0 ||
		    strcmp(de->d_name, RT_IDS_DIR) == 0 || strcmp(de->d_name, RT_WARM_DIR) == 0)
			continue;
		if (*n == cap) {
			char **nv = realloc(v, (cap ? cap * 2 : 16) * sizeof(char *));

			if (!nv)
				break;
			v = nv;
			cap = cap ? cap * 2 : 16;
		}
		if (!(v[*n] = strdup(de->d_name)))
			break;
		(*n)++;
	}
	closedir(d);
	if (de && *n < RT_LIST_MAX) {
		rt_dir_list_free(v, *n);
		*n = 0;
		return err_set(e, ENOMEM, "out of memory listing --root");
	}
	if (*n)
		qsort(v, *n, sizeof(char *), by_name);
	*ids = v;
	return 0;
}

void rt_dir_list_free(char **ids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
}

void rt_dir_clear(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(fd, de->d_name, 0); /* a directory stays: rmdir then fails */
	closedir(d);
	unlinkat(dirfd, name, AT_REMOVEDIR);
}

uint64_t rt_hash64(const char *s)
{
	uint64_t h = 14695981039346656037ull; /* FNV-1a */

	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return h;
}

void rt_jail_path(const char *dir, char out[RT_JAIL_PATH_MAX])
{
	snprintf(out, RT_JAIL_PATH_MAX, RT_JAIL_ROOT "/%016llx",
		 (unsigned long long)rt_hash64(dir));
}

void rt_tap_name(const char *jail, char out[RT_TAP_NAME_MAX])
{
	const char *slash = strrchr(jail, '/');

	snprintf(out, RT_TAP_NAME_MAX, "kt%.12s", slash ? slash + 1 : jail);
}

int rt_jail_make(const char *jail, struct err *e)
{
	if (mkdir(RT_JAIL_ROOT, 0711) < 0 && errno != EEXIST)
		return err_set(e, errno, "%s: %s", RT_JAIL_ROOT, strerror(errno));
	if (mkdir(jail, 0755) < 0 && errno != EEXIST)
		return err_set(e, errno, "the jail directory %s: %s", jail, strerror(errno));
	return 0;
}

int rt_jail_remove(const char *jail, struct err *e)
{
	struct stat st;

	/* only kiln-vmm's sockets are there: no directory to descend */
	rt_dir_clear(AT_FDCWD, jail);
	if (lstat(jail, &st) == 0)
		return err_set(e, ENOTEMPTY,
			       "removing %s: it is still there (not a directory, or "
			       "it holds a directory)",
			       jail);
	return errno == ENOENT ? 0 : err_set(e, errno, "%s: %s", jail, strerror(errno));
}
