/*
 * rt_rootfs: which mount points are made on the host (a destination
 * below an earlier one is not: component-wise, whatever the slashes), and
 * their making in a real rootfs directory: missing parents and
 * directories, an empty file for a bind of a file, existing entries of
 * any kind left alone, and an image's symbolic links (absolute, relative,
 * climbing, on the way or at the end) never leading a created entry out
 * of the rootfs. A too-long destination is refused with a message.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/runtime/rt_rootfs.h"
#include "tmpdir.h"

/* ---- rt_rootfs_wanted ---- */

/* The destinations, and "1" or "0" for each: wanted or not. */
static void check_wanted(const char *const *dest, size_t n, const char *want)
{
	struct rt_mount m[16];

	assert_true(n <= 16 && strlen(want) == n);
	memset(m, 0, sizeof(m));
	for (size_t i = 0; i < n; i++)
		m[i].destination = dest[i];
	for (size_t i = 0; i < n; i++)
		if (rt_rootfs_wanted(m, i) != (want[i] == '1'))
			fail_msg("mounts[%zu] %s: wanted is %d, expected %c", i, dest[i],
				 rt_rootfs_wanted(m, i), want[i]);
}

#define WANTED(want, ...)                                           \
	do {                                                        \
		static const char *const d_[] = { __VA_ARGS__ };    \
		check_wanted(d_, sizeof(d_) / sizeof(d_[0]), want); \
	} while (0)

static void test_wanted(void **state)
{
	(void)state;
	/* runc's default mounts: /dev/pts, /dev/shm, /dev/mqueue are made by
	 * the guest in the /dev tmpfs */
	WANTED("1111000", "/proc", "/dev", "/sys", "/etc/hosts", "/dev/pts", "/dev/shm",
	       "/dev/mqueue");
	/* a prefix that is not a whole component is not "below" */
	WANTED("1111", "/dev", "/devx", "/de", "/dev-pts");
	WANTED("110", "/dev/pts", "/dev", "/dev/pts/x");
	/* order matters: an earlier, deeper one says nothing of its parent */
	WANTED("11", "/a/b", "/a");
	/* the same destination again is made once */
	WANTED("10", "/etc/hosts", "/etc/hosts");
	/* "/" holds everything */
	WANTED("100", "/", "/proc", "/a/b");
	WANTED("10", "//", "/x");
	/* trailing slashes, on either side */
	WANTED("10", "/dev/", "/dev/pts");
	WANTED("10", "/dev", "/dev/pts/");
	WANTED("10", "/dev//", "/dev/pts");
	WANTED("10", "/dev", "/dev/");
	WANTED("110", "/dev/", "/devx/", "/devx");
	/* repeated slashes and "." components name the same path */
	WANTED("10", "/dev", "//dev/pts");
	WANTED("10", "/dev", "/dev//pts");
	WANTED("10", "//dev", "/dev/pts");
	WANTED("10", "/dev", "/./dev/pts");
	WANTED("10", "/dev/.", "/dev/pts");
	/* the first is always wanted */
	WANTED("1", "/");
}

/* ---- rt_rootfs_mountpoints ---- */

struct fx {
	struct tmpdir_fx t; /* first: tmpdir_teardown frees it */
	char rootfs[128];   /* <dir>/jail/rootfs: its grandparent is ours too */
	char outside[128];  /* <dir>/outside: what a link must never reach */
	char file[128];     /* <dir>/hostfile: a bind source that is a file */
	char hostdir[128];  /* <dir>/hostdir: one that is a directory */
	char fifo[128];     /* <dir>/fifo: one that is neither */
	struct rt_mount m[16];
	struct rt_config cfg;
	struct err e;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct tmpdir_fx *t;
	int fd;

	assert_non_null(f);
	tmpdir_setup(state);
	t = *state;
	f->t = *t;
	free(t);
	*state = f;
	snprintf(f->rootfs, sizeof(f->rootfs), "%s/jail/rootfs", f->t.dir);
	snprintf(f->outside, sizeof(f->outside), "%s/outside", f->t.dir);
	snprintf(f->file, sizeof(f->file), "%s/hostfile", f->t.dir);
	snprintf(f->hostdir, sizeof(f->hostdir), "%s/hostdir", f->t.dir);
	snprintf(f->fifo, sizeof(f->fifo), "%s/fifo", f->t.dir);
	assert_int_equal(mkfifoat(f->t.dfd, "fifo", 0600), 0);
	assert_int_equal(mkdirat(f->t.dfd, "jail", 0755), 0);
	assert_int_equal(mkdirat(f->t.dfd, "jail/rootfs", 0755), 0);
	assert_int_equal(mkdirat(f->t.dfd, "outside", 0755), 0);
	assert_int_equal(mkdirat(f->t.dfd, "hostdir", 0755), 0);
	fd = openat(f->t.dfd, "hostfile", O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "127.0.0.1 localhost\n", 20), 20);
	close(fd);
	f->cfg.mounts = f->m;
	umask(022);
	return 0;
}

static int teardown(void **state)
{
	return tmpdir_teardown(state);
}

static void add(struct fx *f, const char *dest, const char *type, const char *source)
{
	struct rt_mount *m = &f->m[f->cfg.nmounts++];

	assert_true(f->cfg.nmounts <= 16);
	m->destination = dest;
	m->type = type;
	m->source = source;
	m->bind = strcmp(type, "bind") == 0;
}

static int run(struct fx *f)
{
	f->e.msg[0] = '\0';
	return rt_rootfs_mountpoints(f->rootfs, &f->cfg, &f->e);
}

/* rel (below the tmpdir) is of type `fmt` (S_IFDIR, ...) with `perm`
 * (0: any) and, for a file, `size` bytes; a link is not followed. */
static void assert_entry(struct fx *f, const char *rel, mode_t fmt, mode_t perm, off_t size)
{
	struct stat st;

	if (fstatat(f->t.dfd, rel, &st, AT_SYMLINK_NOFOLLOW) < 0)
		fail_msg("%s: %s", rel, strerror(errno));
	if ((st.st_mode & S_IFMT) != fmt)
		fail_msg("%s: type %o, wanted %o", rel, st.st_mode & S_IFMT, fmt);
	if (perm && (st.st_mode & 07777) != perm)
		fail_msg("%s: mode %o, wanted %o", rel, st.st_mode & 07777, perm);
	if (fmt == S_IFREG && st.st_size != size)
		fail_msg("%s: %lld bytes, wanted %lld", rel, (long long)st.st_size,
			 (long long)size);
}

static void assert_absent(struct fx *f, const char *rel)
{
	if (tmpdir_exists(f->t.dfd, rel))
		fail_msg("%s exists", rel);
}

/* Directory rel (below the tmpdir) holds nothing but `keep`. */
static void assert_holds_only(struct fx *f, const char *rel, const char *const *keep, size_t n)
{
	int fd = openat(f->t.dfd, rel, O_RDONLY | O_DIRECTORY);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	assert_non_null(d);
	while ((de = readdir(d))) {
		bool known = strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0;

		for (size_t i = 0; i < n; i++)
			known |= strcmp(de->d_name, keep[i]) == 0;
		if (!known)
			fail_msg("%s/%s/%s was made outside the rootfs", f->t.dir, rel, de->d_name);
	}
	closedir(d);
}

/* Nothing was made outside the rootfs: its parents, "outside" and the
 * bind sources hold only what setup made. */
static void assert_nothing_outside(struct fx *f)
{
	static const char *const top[] = { "jail", "outside", "hostfile", "hostdir", "fifo" };
	static const char *const jail[] = { "rootfs" };

	assert_holds_only(f, ".", top, 5);
	assert_holds_only(f, "jail", jail, 1);
	assert_holds_only(f, "outside", NULL, 0);
	assert_holds_only(f, "hostdir", NULL, 0);
	assert_entry(f, "hostfile", S_IFREG, 0644, 20);
}

/* mkdir -p of rel below the tmpdir. */
static void mkdirs(struct fx *f, const char *rel)
{
	char p[256];

	snprintf(p, sizeof(p), "%s", rel);
	for (char *s = p;; s++) {
		if (*s != '/' && *s)
			continue;
		if (s > p) {
			char c = *s;

			*s = '\0';
			if (mkdirat(f->t.dfd, p, 0755) < 0 && errno != EEXIST)
				fail_msg("mkdir %s: %s", p, strerror(errno));
			*s = c;
		}
		if (!*s)
			return;
	}
}

static void test_makes_missing(void **state)
{
	struct fx *f = *state;

	add(f, "/proc", "proc", "proc");
	add(f, "/dev", "tmpfs", "tmpfs");
	add(f, "/dev/pts", "devpts", "devpts");
	add(f, "/sys/fs/cgroup", "cgroup", "cgroup");
	add(f, "/etc/hosts", "bind", f->file);
	add(f, "/data/vol", "bind", f->hostdir);
	add(f, "/data/vol/cache", "tmpfs", "tmpfs");
	add(f, "/x/y/fifo", "bind", f->fifo);
	add(f, "/gone", "bind", "/nonexistent-kiln-source");
	add(f, "//a///b/./c/", "tmpfs", "tmpfs");
	assert_int_equal(run(f), 0);
	assert_entry(f, "jail/rootfs/proc", S_IFDIR, 0755, 0);
	assert_entry(f, "jail/rootfs/dev", S_IFDIR, 0755, 0);
	assert_absent(f, "jail/rootfs/dev/pts"); /* the guest makes it in the tmpfs */
	assert_entry(f, "jail/rootfs/sys", S_IFDIR, 0755, 0);
	assert_entry(f, "jail/rootfs/sys/fs/cgroup", S_IFDIR, 0755, 0);
	assert_entry(f, "jail/rootfs/etc", S_IFDIR, 0755, 0);
	/* a bind of a file: an empty file, never a copy of the source */
	assert_entry(f, "jail/rootfs/etc/hosts", S_IFREG, 0644, 0);
	assert_entry(f, "jail/rootfs/data/vol", S_IFDIR, 0755, 0);
	assert_absent(f, "jail/rootfs/data/vol/cache"); /* it goes in the bind, in the guest */
	/* a fifo (or a device) is no directory: a file to bind it on */
	assert_entry(f, "jail/rootfs/x/y/fifo", S_IFREG, 0644, 0);
	/* a source that is missing: a directory (the guest says what is wrong) */
	assert_entry(f, "jail/rootfs/gone", S_IFDIR, 0755, 0);
	assert_entry(f, "jail/rootfs/a/b/c", S_IFDIR, 0755, 0);
	assert_nothing_outside(f);
	/* again: everything exists, nothing changes */
	assert_int_equal(run(f), 0);
	assert_entry(f, "jail/rootfs/etc/hosts", S_IFREG, 0644, 0);
	assert_absent(f, "jail/rootfs/dev/pts");
}

static void test_leaves_existing(void **state)
{
	struct fx *f = *state;
	int fd;

	/* /proc a file with content, /etc/hosts a directory, /tmp 1777, and
	 * /etc/resolv.conf a dangling link into the image */
	fd = openat(f->t.dfd, "jail/rootfs/proc", O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x", 1), 1);
	close(fd);
	assert_int_equal(mkdirat(f->t.dfd, "jail/rootfs/etc", 0700), 0);
	assert_int_equal(mkdirat(f->t.dfd, "jail/rootfs/etc/hosts", 0711), 0);
	assert_int_equal(mkdirat(f->t.dfd, "jail/rootfs/tmp", 0755), 0);
	assert_int_equal(fchmodat(f->t.dfd, "jail/rootfs/tmp", 01777, 0), 0);
	assert_int_equal(symlinkat("../run/resolv.conf", f->t.dfd, "jail/rootfs/etc/resolv.conf"),
			 0);
	add(f, "/proc", "proc", "proc");
	add(f, "/etc/hosts", "bind", f->file);
	add(f, "/tmp", "tmpfs", "tmpfs");
	add(f, "/etc/resolv.conf", "bind", f->file);
	assert_int_equal(run(f), 0);
	assert_entry(f, "jail/rootfs/proc", S_IFREG, 0600, 1);
	assert_entry(f, "jail/rootfs/etc", S_IFDIR, 0700, 0);
	assert_entry(f, "jail/rootfs/etc/hosts", S_IFDIR, 0711, 0);
	assert_entry(f, "jail/rootfs/tmp", S_IFDIR, 01777, 0);
	assert_entry(f, "jail/rootfs/etc/resolv.conf", S_IFLNK, 0, 0);
	assert_absent(f, "jail/rootfs/run");
	assert_nothing_outside(f);
}

/* Absolute links, as an image holds them: resolved as if the rootfs were
 * "/", so they name the rootfs's own entries, never the host's. */
static void test_absolute_links_stay_inside(void **state)
{
	struct fx *f = *state;
	char inside[256];
	int r;

	/* /var -> the host's "outside", a path the image has too; /etc ->
	 * the host's "hostdir", which the image lacks */
	assert_int_equal(symlinkat(f->outside, f->t.dfd, "jail/rootfs/var"), 0);
	assert_int_equal(symlinkat(f->hostdir, f->t.dfd, "jail/rootfs/etc"), 0);
	snprintf(inside, sizeof(inside), "jail/rootfs%s", f->outside);
	mkdirs(f, inside);
	add(f, "/var/lib/x", "tmpfs", "tmpfs");
	add(f, "/var/hosts", "bind", f->file);
	assert_int_equal(run(f), 0);
	snprintf(inside, sizeof(inside), "jail/rootfs%s/lib/x", f->outside);
	assert_entry(f, inside, S_IFDIR, 0755, 0);
	snprintf(inside, sizeof(inside), "jail/rootfs%s/hosts", f->outside);
	assert_entry(f, inside, S_IFREG, 0644, 0);
	assert_nothing_outside(f);
	/* /etc's target is missing in the image: made inside, or a failure
	 * naming the destination; never the host's hostdir */
	f->cfg.nmounts = 0;
	add(f, "/etc/hosts", "bind", f->file);
	add(f, "/etc/sub/dir", "tmpfs", "tmpfs");
	r = run(f);
	if (r < 0 && !strstr(f->e.msg, "/etc/hosts"))
		fail_msg("%d: '%s' does not name /etc/hosts", r, f->e.msg);
	if (r == 0) {
		snprintf(inside, sizeof(inside), "jail/rootfs%s/hosts", f->hostdir);
		assert_entry(f, inside, S_IFREG, 0644, 0);
	}
	assert_entry(f, "jail/rootfs/etc", S_IFLNK, 0, 0);
	assert_nothing_outside(f);
}

/* Relative links climbing past the rootfs: ".." at the rootfs's top stays
 * there, as at "/". */
static void test_climbing_links_stay_inside(void **state)
{
	struct fx *f = *state;

	/* rootfs/up -> ../.. would be the tmpdir on the host */
	assert_int_equal(symlinkat("../..", f->t.dfd, "jail/rootfs/up"), 0);
	assert_int_equal(symlinkat("../../../../../../../../outside", f->t.dfd, "jail/rootfs/deep"),
			 0);
	assert_int_equal(mkdirat(f->t.dfd, "jail/rootfs/outside", 0755), 0);
	add(f, "/up/escaped", "tmpfs", "tmpfs");
	add(f, "/up/up/up/escaped-file", "bind", f->file);
	add(f, "/deep/in", "tmpfs", "tmpfs");
	assert_int_equal(run(f), 0);
	assert_entry(f, "jail/rootfs/escaped", S_IFDIR, 0755, 0);
	assert_entry(f, "jail/rootfs/escaped-file", S_IFREG, 0644, 0);
	assert_entry(f, "jail/rootfs/outside/in", S_IFDIR, 0755, 0);
	assert_entry(f, "jail/rootfs/up", S_IFLNK, 0, 0);
	assert_nothing_outside(f);
}

/* A link as the last component, pointing out (absolute or climbing):
 * never followed to create its target, on the host or in the image. */
static void test_final_links_not_followed(void **state)
{
	struct fx *f = *state;
	char target[192];

	snprintf(target, sizeof(target), "%s/hosts", f->outside);
	assert_int_equal(mkdirat(f->t.dfd, "jail/rootfs/etc", 0755), 0);
	assert_int_equal(symlinkat(target, f->t.dfd, "jail/rootfs/etc/hosts"), 0);
	assert_int_equal(symlinkat("../../../outside/resolv", f->t.dfd, "jail/rootfs/etc/resolv"),
			 0);
	assert_int_equal(symlinkat("../../../outside", f->t.dfd, "jail/rootfs/etc/dir"), 0);
	add(f, "/etc/hosts", "bind", f->file);
	add(f, "/etc/resolv", "bind", f->file);
	add(f, "/etc/dir", "tmpfs", "tmpfs");
	assert_int_equal(run(f), 0);
	assert_entry(f, "jail/rootfs/etc/hosts", S_IFLNK, 0, 0);
	assert_entry(f, "jail/rootfs/etc/resolv", S_IFLNK, 0, 0);
	assert_entry(f, "jail/rootfs/etc/dir", S_IFLNK, 0, 0);
	assert_nothing_outside(f);
}

static void test_refusals(void **state)
{
	struct fx *f = *state;
	static char longest[RT_PATH_MAX + 1], longname[400];
	int fd;

	/* a destination of RT_PATH_MAX bytes (config.json allows one less) */
	longest[0] = '/';
	memset(longest + 1, 'a', RT_PATH_MAX - 1);
	longest[RT_PATH_MAX] = '\0';
	add(f, longest, "tmpfs", "tmpfs");
	assert_int_equal(run(f), -ENAMETOOLONG);
	assert_non_null(strstr(f->e.msg, "too long"));
	assert_true(strlen(f->e.msg) < 400); /* the path is cut, not the message's sense */
	assert_absent(f, "jail/rootfs/aaaa");
	/* one component longer than NAME_MAX */
	longname[0] = '/';
	memset(longname + 1, 'b', sizeof(longname) - 2);
	longname[sizeof(longname) - 1] = '\0';
	f->cfg.nmounts = 0;
	add(f, longname, "tmpfs", "tmpfs");
	assert_int_equal(run(f), -ENAMETOOLONG);
	assert_non_null(strstr(f->e.msg, "bbbb"));
	/* a file where a directory is needed */
	fd = openat(f->t.dfd, "jail/rootfs/etc", O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	close(fd);
	f->cfg.nmounts = 0;
	add(f, "/proc", "proc", "proc");
	add(f, "/etc/hosts", "bind", f->file);
	add(f, "/sys", "sysfs", "sysfs");
	assert_int_equal(run(f), -ENOTDIR);
	assert_non_null(strstr(f->e.msg, "/etc/hosts"));
	assert_entry(f, "jail/rootfs/proc", S_IFDIR, 0755, 0);
	assert_absent(f, "jail/rootfs/sys"); /* the first failure stops */
	/* the rootfs itself */
	snprintf(f->rootfs, sizeof(f->rootfs), "%s/no-such-rootfs", f->t.dir);
	assert_int_equal(run(f), -ENOENT);
	assert_non_null(strstr(f->e.msg, "root.path"));
	assert_non_null(strstr(f->e.msg, "no-such-rootfs"));
	snprintf(f->rootfs, sizeof(f->rootfs), "%s", f->file);
	assert_int_equal(run(f), -ENOTDIR);
	assert_nothing_outside(f);
}

/*
 * Chroot into jail, with the host's /proc bound in (LeakSanitizer reads
 * it), in a mount namespace of this process's own: nothing remains once
 * it exits. False (and nothing changed but maybe the namespace) when not
 * root.
 */
static bool enter_jail(const char *jail)
{
	char proc[96];

	snprintf(proc, sizeof(proc), "%s/proc", jail);
	return mkdir(proc, 0555) == 0 && unshare(CLONE_NEWNS) == 0 &&
		mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
		mount("/proc", proc, NULL, MS_BIND | MS_REC, NULL) == 0 && chroot(jail) == 0 &&
		chdir("/") == 0;
}

/*
 * The tests run chrooted into a fresh directory: what a broken
 * rt_rootfs_mountpoints would make "outside" through a planted link lands
 * in that directory, where the checks see it, and never in the host's /
 * (an escaping build once made /gone and /etc/resolv on the test host).
 * The parent removes the directory afterwards. Not root: in place.
 */
int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wanted),
		cmocka_unit_test_setup_teardown(test_makes_missing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_leaves_existing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_absolute_links_stay_inside, setup, teardown),
		cmocka_unit_test_setup_teardown(test_climbing_links_stay_inside, setup, teardown),
		cmocka_unit_test_setup_teardown(test_final_links_not_followed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
	};
	char jail[] = "/tmp/kiln-test-rootfs-jail-XXXXXX", tmp[64];
	int st = 0;
	pid_t pid;

	if (!mkdtemp(jail))
		return 1;
	snprintf(tmp, sizeof(tmp), "%s/tmp", jail);
	if (mkdir(tmp, 01777) < 0 || chmod(tmp, 01777) < 0)
		return 1;
	pid = fork();
	if (pid == 0) {
		if (!enter_jail(jail))
			fprintf(stderr, "test_rt_rootfs: not chrooted (%s): running in place\n",
				strerror(errno));
		exit(cmocka_run_group_tests(tests, NULL, NULL));
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		st = -1;
	nftw(jail, tmpdir_rm, 16, FTW_DEPTH | FTW_PHYS);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
