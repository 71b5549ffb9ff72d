/* Warm starts' templates: names and the directory; see rt_warm.h. */
#include "api/runtime/rt_warm.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "api/runtime/rt_dir.h"
#include "lib/base/mono.h"

#define TMP_SUFFIX ".tmp"
#define LOCK_SUFFIX ".lock"
#define TAKE_POLL_US 20000

/* The text form of some files' identities, hashed. */
static uint64_t idents_hash(const struct rt_warm_ident *id, int n)
{
	char text[RT_WARM_FILES * 4 * 21 + 1];
	size_t used = 0;

	text[0] = '\0';
	for (int i = 0; i < n; i++)
		used += (size_t)snprintf(text + used, sizeof(text) - used, "%llx:%llx:%llx:%llx;",
					 (unsigned long long)id[i].dev,
					 (unsigned long long)id[i].ino,
					 (unsigned long long)id[i].size,
					 (unsigned long long)id[i].mtime_ns);
	return rt_hash64(text);
}

void rt_warm_name(const struct rt_warm_ident id[RT_WARM_FILES], const struct rt_warm_shape *sh,
		  char out[RT_WARM_NAME_MAX])
{
	const struct rt_warm_ident build[2] = { id[RT_WARM_VMM], id[RT_WARM_INITRD] };
	uint64_t kernel = idents_hash(&id[RT_WARM_KERNEL], 1);

	snprintf(out, RT_WARM_NAME_MAX, "%016llx-%08x-%um%uc-%s%s%s%s",
		 (unsigned long long)idents_hash(build, 2), (unsigned)(kernel ^ (kernel >> 32)),
		 sh->mem_mib, sh->cpus, sh->root_ro ? "R" : "r", sh->bro ? "o" : "",
		 sh->brw ? "w" : "", sh->pod ? "p" : "");
}

int rt_warm_wanted(const struct rt_config *c, struct err *e)
{
	const char *v = json_string_value(json_object_get(c->annotations, RT_WARM_ANNOTATION));

	if (!v || !strcmp(v, "true"))
		return 1;
	if (!strcmp(v, "false"))
		return 0;
	return err_set(e, EINVAL,
		       "annotation " RT_WARM_ANNOTATION " \"%.64s\": want true (resume a booted VM "
		       "when the container has no network interface) or false (always boot)",
		       v);
}

int rt_warm_idents(const char *const paths[RT_WARM_FILES], struct rt_warm_ident id[RT_WARM_FILES],
		   struct err *e)
{
	struct stat st;

	for (int i = 0; i < RT_WARM_FILES; i++) {
		if (stat(paths[i], &st) < 0)
			return err_set(e, errno, "%s: %s", paths[i], strerror(errno));
		id[i] = (struct rt_warm_ident){ (uint64_t)st.st_dev, (uint64_t)st.st_ino,
						(uint64_t)st.st_size,
						(uint64_t)st.st_mtim.tv_sec * 1000000000u +
							(uint64_t)st.st_mtim.tv_nsec };
	}
	return 0;
}

int rt_warm_dir_open(const char *root, int *fd, struct err *e)
{
	int rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	*fd = -1;
	if (rfd < 0)
		return err_set(e, errno, "--root %s: %s", root, strerror(errno));
	if (mkdirat(rfd, RT_WARM_DIR, 0700) < 0 && errno != EEXIST) {
		close(rfd);
		return err_set(e, errno, "--root/" RT_WARM_DIR ": %s", strerror(errno));
	}
	*fd = openat(rfd, RT_WARM_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(rfd);
	if (*fd < 0)
		return err_set(e, errno, "--root/" RT_WARM_DIR ": %s", strerror(errno));
	return 0;
}

/* A template is a directory holding kiln-vmm's state file: only
 * rt_warm_install renames one into place, whole; a directory without it
 * (a crash's leftover) is none. */
static bool template_ready(int warmfd, const char *name)
{
	char path[RT_WARM_NAME_MAX + 16];
	struct stat st;

	snprintf(path, sizeof(path), "%s/state", name);
	return fstatat(warmfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

static int lock_open(int warmfd, const char *name, struct err *e)
{
	char lock[RT_WARM_NAME_MAX + sizeof(LOCK_SUFFIX)];
	int fd;

	snprintf(lock, sizeof(lock), "%s" LOCK_SUFFIX, name);
	fd = openat(warmfd, lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return err_set(e, errno, "--root/" RT_WARM_DIR "/%s: %s", lock, strerror(errno));
	return fd;
}

/* flock, polled until the deadline (flock itself has no timeout). */
static int lock_until(int fd, int op, int64_t dl)
{
	while (flock(fd, op | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (mono_ms() >= dl)
			return -ETIMEDOUT;
		usleep(TAKE_POLL_US);
	}
	return 0;
}

int rt_warm_take(int warmfd, const char *name, int wait_ms, int *lockfd, struct err *e)
{
	int64_t dl = mono_deadline_ms(wait_ms);
	int fd = lock_open(warmfd, name, e), r;

	*lockfd = -1;
	if (fd < 0)
		return fd;
	/*
	 * Shared while a template exists: many VMs resume one at once. Only
	 * while none does is exclusive worth wanting, and only without
	 * waiting for it: a failed conversion drops the shared lock, so the
	 * loop goes back to shared (which waits out a maker) and looks again.
	 */
	for (;;) {
		r = lock_until(fd, LOCK_SH, dl);
		if (r < 0)
			break;
		if (template_ready(warmfd, name)) {
			*lockfd = fd;
			return 1;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			*lockfd = fd;
			if (!template_ready(warmfd, name))
				return 0;   /* the caller makes it */
			flock(fd, LOCK_SH); /* made meanwhile; from exclusive: never blocks */
			return 1;
		}
		if (mono_ms() >= dl) {
			r = -ETIMEDOUT;
			break;
		}
		usleep(TAKE_POLL_US);
	}
	close(fd);
	return err_set(e, -r, "the warm template %s: %s", name,
		       r == -ETIMEDOUT ? "another create is still making it" : strerror(-r));
}

int rt_warm_tmp_make(int warmfd, const char *name, int *tmpfd, struct err *e)
{
	char tmp[RT_WARM_NAME_MAX + sizeof(TMP_SUFFIX)];

	snprintf(tmp, sizeof(tmp), "%s" TMP_SUFFIX, name);
	rt_dir_clear(warmfd, tmp); /* a failed maker's */
	if (mkdirat(warmfd, tmp, 0700) < 0 ||
	    (*tmpfd = openat(warmfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return err_set(e, errno, "--root/" RT_WARM_DIR "/%s: %s", tmp, strerror(errno));
	return 0;
}

/* Another build's template (or its leftovers) that nobody holds. */
static void sweep_one(int warmfd, const char *entry, const char *keep)
{
	char name[RT_WARM_NAME_MAX], lock[RT_WARM_NAME_MAX + sizeof(LOCK_SUFFIX)];
	char tmp[RT_WARM_NAME_MAX + sizeof(TMP_SUFFIX)];
	const char *dot = strchr(entry, '.');
	size_t n = dot ? (size_t)(dot - entry) : strlen(entry);
	int lfd;

	if (n < RT_WARM_IDENT_LEN || n >= sizeof(name) || !strncmp(entry, keep, RT_WARM_IDENT_LEN))
		return;
	memcpy(name, entry, n);
	name[n] = '\0';
	snprintf(lock, sizeof(lock), "%s" LOCK_SUFFIX, name);
	snprintf(tmp, sizeof(tmp), "%s" TMP_SUFFIX, name);
	lfd = openat(warmfd, lock, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (lfd < 0)
		return; /* not a template's (no lock file): not ours to remove */
	if (flock(lfd, LOCK_EX | LOCK_NB) < 0) {
		close(lfd); /* in use: its users go on; a later sweep takes it */
		return;
	}
	/* The lock file stays: a create may hold it open already, and a new
	 * one of the same name would give two creates the exclusive lock. */
	rt_dir_clear(warmfd, name);
	rt_dir_clear(warmfd, tmp);
	close(lfd);
}

int rt_warm_install(int warmfd, const char *name, struct err *e)
{
	char tmp[RT_WARM_NAME_MAX + sizeof(TMP_SUFFIX)];
	int fd;
	DIR *d;
	struct dirent *de;

	snprintf(tmp, sizeof(tmp), "%s" TMP_SUFFIX, name);
	rt_dir_clear(warmfd, name); /* one without its state file */
	if (renameat(warmfd, tmp, warmfd, name) < 0)
		return err_set(e, errno, "--root/" RT_WARM_DIR "/%s: %s", name, strerror(errno));
	fd = fcntl(warmfd, F_DUPFD_CLOEXEC, 0);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	rewinddir(d);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && strcmp(de->d_name, RT_WARM_EMPTY))
			sweep_one(warmfd, de->d_name, name);
	closedir(d);
	return 0;
}

void rt_warm_release(int lockfd)
{
	if (lockfd >= 0)
		close(lockfd);
}
