/* jail: namespaces, a root of one directory, an unprivileged uid; see jail.h. */
#include "vmm/jail/jail.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/base/fd_io.h"
#include "lib/base/num_parse.h"

/* The new root: a tmpfs with room for the path to `dir` and nothing else. */
#define JAIL_ROOT_OPTS "mode=0755,size=16k,nr_inodes=64"
#define JAIL_PROC_OPTS "subset=pid,hidepid=invisible"

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef MOVE_MOUNT_T_EMPTY_PATH
#define MOVE_MOUNT_T_EMPTY_PATH 0x00000040
#endif

int jail_spec_check(const struct jail_spec *j, struct err *e)
{
	const char *p = j->dir;

	if (!p || p[0] != '/' || p[1] == '\0')
		return err_set(e, EINVAL,
			       "jail: directory '%s' must be an absolute path other than /",
			       p ? p : "");
	/* The jail's own /proc is mounted at /proc of its root: a directory
	 * there would be hidden under it. */
	if (strcmp(p, "/proc") == 0 || strncmp(p, "/proc/", 6) == 0)
		return err_set(e, EINVAL, "jail: directory '%s' is under /proc: pick one elsewhere",
			       p);
	if (strlen(p) >= PATH_MAX / 2)
		return err_set(e, EINVAL, "jail: directory '%.64s...' is too long", p);
	/* Each component: not empty, not "." or "..", so the path names itself. */
	for (const char *c = p + 1; *c;) {
		size_t n = strcspn(c, "/");

		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return err_set(
				e, EINVAL,
				"jail: directory '%s' is not canonical (empty, '.' or '..' component)",
				p);
		c += n;
		if (*c == '/' && c[1] == '\0')
			return err_set(e, EINVAL, "jail: directory '%s' ends in '/'", p);
		if (*c == '/')
			c++;
	}
	if (j->uid == 0 || j->gid == 0 || j->uid == (uid_t)-1 || j->gid == (gid_t)-1)
		return err_set(e, EINVAL,
			       "jail: uid %u and gid %u must be unprivileged (not 0, not -1)",
			       (unsigned)j->uid, (unsigned)j->gid);
	return 0;
}

/* One entry per thread in /proc/self/task. */
int jail_thread_count(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* The highest capability number this kernel knows. */
static int last_cap(void)
{
	char buf[16] = { 0 };
	int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : fd_io_read_full(fd, buf, sizeof(buf) - 1);
	uint64_t v;

	if (fd >= 0)
		close(fd);
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	if (n <= 0 || num_parse_u64(buf, 10, 0, 63, &v) < 0)
		return CAP_LAST_CAP;
	return (int)v;
}

/* Make every component of `path` below directory fd `at` (a tmpfs root);
 * returns an O_PATH fd of the last one, or -errno. */
static int make_path(int at, const char *path)
{
	char comp[NAME_MAX + 1];
	int cur = fcntl(at, F_DUPFD_CLOEXEC, 0);

	if (cur < 0)
		return -errno;
	for (const char *c = path; *c;) {
		size_t n;
		int next;

		c += strspn(c, "/");
		n = strcspn(c, "/");
		if (n == 0)
			break;
		if (n > NAME_MAX) {
			close(cur);
			return -ENAMETOOLONG;
		}
		memcpy(comp, c, n);
		comp[n] = '\0';
		c += n;
		if (mkdirat(cur, comp, 0755) < 0 && errno != EEXIST) {
			int r = -errno;

			close(cur);
			return r;
		}
		next = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(cur);
		if (next < 0)
			return -errno;
		cur = next;
	}
	return cur;
}

/*
 * /proc inside the jail: a procfs of the jail's own pid namespace with
 * nothing but its processes' directories (subset=pid: no /proc/sys, no
 * sysrq-trigger, no kcore) and only those the jail uid may ptrace
 * (hidepid=invisible: not passt, which runs as another uid). virtio-fs
 * reopens its O_PATH descriptors through /proc/self/fd; the host's /proc
 * must not be what it uses, since ".." from there is the host's.
 */
static int mount_proc(struct err *e)
{
	if (mkdir("/proc", 0555) < 0 && errno != EEXIST)
		return err_set(e, errno, "jail: making /proc in the new root: %s", strerror(errno));
	/* Read-only too: the magic links virtio-fs reopens through are
	 * checked against their targets' mounts, not /proc's. */
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY,
		  JAIL_PROC_OPTS) < 0)
		return err_set(
			e, errno,
			"jail: mounting the jail's own /proc (%s): %s (Linux 5.8 or later is needed)",
			JAIL_PROC_OPTS, strerror(errno));
	return 0;
}

/* The new root: tmpfs over `dir` (this namespace only), `dir` itself bound
 * back at its own path inside, pivot_root into it, old root gone. */
static int enter_root(const char *dir, struct err *e)
{
	int tree = -1, root = -1, at = -1, r;

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return err_set(e, errno, "jail: making mounts private: %s", strerror(errno));
	/* A detached copy of just `dir` (not what is mounted below it). */
	tree = (int)syscall(SYS_open_tree, AT_FDCWD, dir, OPEN_TREE_CLONE | O_CLOEXEC);
	if (tree < 0)
		return err_set(e, errno, "jail: open_tree %s: %s (Linux 5.2 or later is needed)",
			       dir, strerror(errno));
	if (mount("kiln-jail", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, JAIL_ROOT_OPTS) <
	    0) {
		r = err_set(e, errno, "jail: tmpfs root on %s: %s", dir, strerror(errno));
		goto out;
	}
	root = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0) {
		r = err_set(e, errno, "jail: opening the new root: %s", strerror(errno));
		goto out;
	}
	at = make_path(root, dir);
	if (at < 0) {
		r = err_set(e, -at, "jail: making %s inside the new root: %s", dir, strerror(-at));
		goto out;
	}
	if (syscall(SYS_move_mount, tree, "", at, "",
		    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0) {
		r = err_set(e, errno, "jail: binding %s into the new root: %s", dir,
			    strerror(errno));
		goto out;
	}
	if (fchdir(root) < 0 || syscall(SYS_pivot_root, ".", ".") < 0) {
		r = err_set(e, errno, "jail: pivot_root into %s: %s", dir, strerror(errno));
		goto out;
	}
	/* The old root is stacked under the new one at "/": detach it. */
	if (umount2(".", MNT_DETACH) < 0 || chdir("/") < 0) {
		r = err_set(e, errno, "jail: detaching the old root: %s", strerror(errno));
		goto out;
	}
	if ((r = mount_proc(e)))
		goto out;
	if (mount(NULL, "/", NULL,
		  MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0 ||
	    mount(NULL, dir, NULL, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) <
		    0) {
		r = err_set(e, errno, "jail: remounting the root read-only: %s", strerror(errno));
		goto out;
	}
	r = 0;
out:
	if (at >= 0)
		close(at);
	if (root >= 0)
		close(root);
	close(tree);
	return r;
}

/* Bounding set first (needs CAP_SETPCAP; `top`, the kernel's highest
 * capability), then the ids, which empty the other sets on the way from
 * root; then make sure. */
static int drop_privileges(const struct jail_spec *j, int top, struct err *e)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { { 0 } };
	uid_t ru, eu, su;

	for (int c = 0; c <= top; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return err_set(e, errno,
				       "jail: dropping capability %d from the bounding set: %s", c,
				       strerror(errno));
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return err_set(e, errno, "jail: clearing ambient capabilities: %s",
			       strerror(errno));
	if (setgroups(0, NULL) < 0)
		return err_set(e, errno, "jail: setgroups: %s", strerror(errno));
	if (setresgid(j->gid, j->gid, j->gid) < 0)
		return err_set(e, errno, "jail: setresgid %u: %s", (unsigned)j->gid,
			       strerror(errno));
	if (setresuid(j->uid, j->uid, j->uid) < 0)
		return err_set(e, errno, "jail: setresuid %u: %s", (unsigned)j->uid,
			       strerror(errno));
	if (syscall(SYS_capset, &h, d) < 0)
		return err_set(e, errno, "jail: clearing capabilities: %s", strerror(errno));
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return err_set(e, errno, "jail: no_new_privs: %s", strerror(errno));
	/* Trust nothing above: read it all back. */
	if (getresuid(&ru, &eu, &su) < 0 || ru != j->uid || eu != j->uid || su != j->uid ||
	    getuid() == 0)
		return err_set(e, EPERM, "jail: still running as uid %u after setresuid",
			       (unsigned)geteuid());
	if (syscall(SYS_capget, &h, d) < 0 || d[0].effective || d[0].permitted ||
	    d[0].inheritable || d[1].effective || d[1].permitted || d[1].inheritable)
		return err_set(e, EPERM, "jail: capabilities still held after dropping them");
	if (prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0) != 0)
		return err_set(e, EPERM, "jail: CAP_SYS_ADMIN still in the bounding set");
	return 0;
}

int jail_enter(const struct jail_spec *j, struct err *e)
{
	struct stat st;
	char real[PATH_MAX];
	int threads, top, r, flags = CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;

	if ((r = jail_spec_check(j, e)))
		return r;
	if (lstat(j->dir, &st) < 0)
		return err_set(e, errno, "jail: directory %s: %s", j->dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return err_set(e, ENOTDIR, "jail: %s is not a directory", j->dir);
	if (!realpath(j->dir, real))
		return err_set(e, errno, "jail: directory %s: %s", j->dir, strerror(errno));
	if (strcmp(real, j->dir) != 0)
		return err_set(
			e, EINVAL,
			"jail: %s leads through a symbolic link (it resolves to %s): give the real path",
			j->dir, real);
	threads = jail_thread_count();
	if (threads != 1)
		return err_set(e, EBUSY,
			       "jail: the process has %d threads; enter the jail before starting any",
			       threads);
	if (getpid() != 1)
		return err_set(
			e, EPERM,
			"jail: not pid 1 of a new pid namespace (start the process in one: clone with CLONE_NEWPID)");
	if (geteuid() != 0)
		return err_set(e, EPERM, "jail: needs root to enter (it then drops to uid %u)",
			       (unsigned)j->uid);
	if (!j->keep_net)
		flags |= CLONE_NEWNET;
	if (unshare(flags) < 0)
		return err_set(e, errno, "jail: unshare (mount, ipc, uts, cgroup%s namespaces): %s",
			       j->keep_net ? "" : ", network", strerror(errno));
	if (sethostname("kiln-vmm", 8) < 0)
		return err_set(e, errno, "jail: sethostname: %s", strerror(errno));
	/* The kernel's highest capability, read while the host's /proc is
	 * still there (the jail's own shows no /proc/sys). */
	top = last_cap();
	if ((r = enter_root(j->dir, e)))
		return r;
	return drop_privileges(j, top, e);
}
