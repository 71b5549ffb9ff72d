/* The system calls of a container's init; see oci_apply.h. */
#include "guest-init/agent/oci_apply.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/openat2.h>

#include "guest-init/agent/oci_privs.h"
#include "guest-init/sys/child.h"
#include "lib/base/fd_close.h"

/* What the steps share: the new root, once OCI_ROOT made it. */
struct apply {
	int root;
	int side; /* of the failing call */
};

static int openat2_(int dfd, const char *path, unsigned long flags, unsigned long resolve)
{
	struct open_how how = { .flags = flags, .resolve = resolve };

	return (int)syscall(SYS_openat2, dfd, path, &how, sizeof(how));
}

/* "/proc/self/fd/N" for fd, without printf (no allocation, no locks). */
static const char *fd_path(char buf[32], int fd)
{
	static const char pre[] = "/proc/self/fd/";
	char digits[12];
	int n = 0;

	do
		digits[n++] = (char)('0' + fd % 10);
	while ((fd /= 10) && n < 11);
	memcpy(buf, pre, sizeof(pre) - 1);
	for (int i = 0; i < n; i++)
		buf[sizeof(pre) - 1 + i] = digits[n - 1 - i];
	buf[sizeof(pre) - 1 + n] = '\0';
	return buf;
}

static int in_root(struct apply *a, const char *rel, unsigned long flags)
{
	return openat2_(a->root, *rel ? rel : ".", flags | O_CLOEXEC, RESOLVE_IN_ROOT);
}

/*
 * Make rel (relative to the new root) exist: its missing parents as
 * directories (0755), itself as a directory or, with file, an empty file
 * (0644). Each component is resolved inside the root, so a link in the
 * image cannot make the agent create anything outside it.
 */
static int make_in_root(struct apply *a, const char *rel, bool file)
{
	char p[AGENT_PATH_MAX + 1];
	size_t n = strlen(rel);
	int fd;

	if (n >= sizeof(p)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(p, rel, n + 1);
	while (n && p[n - 1] == '/')
		p[--n] = '\0';
	for (size_t i = 0; i <= n; i++) {
		char *slash, *last;
		int dir, r;

		if (i < n && p[i] != '/')
			continue;
		p[i] = '\0';
		fd = in_root(a, p, O_PATH);
		if (fd >= 0 || errno != ENOENT) {
			if (fd >= 0)
				close(fd);
			p[i] = i < n ? '/' : '\0';
			if (fd < 0)
				return -1;
			continue;
		}
		slash = strrchr(p, '/');
		last = slash ? slash + 1 : p;
		if (slash)
			*slash = '\0';
		dir = in_root(a, slash ? p : "", O_PATH | O_DIRECTORY);
		if (slash)
			*slash = '/';
		if (dir < 0)
			return -1;
		if (i == n && file) {
			r = openat(dir, last, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
				   0644);
			if (r >= 0)
				close(r);
		} else {
			r = mkdirat(dir, last, 0755);
		}
		close(dir);
		if (r < 0 && errno != EEXIST)
			return -1;
		p[i] = i < n ? '/' : '\0';
	}
	return 0;
}

static int do_root(struct apply *a, const struct oci_step *s)
{
	int share, src, tree;

	/* The root (the share, or a directory beneath it reached without a
	 * link: a pod's container) bound on itself: the container's own
	 * mount, which pivot_root needs (a mount point) and which nothing
	 * outside this namespace sees. The clone's descriptor, once
	 * attached, is that mount's root. */
	share = open(s->share, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (share < 0)
		return -1;
	src = openat2_(share, s->src, O_PATH | O_DIRECTORY | O_CLOEXEC,
		       RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	close(share);
	if (src < 0)
		return -1;
	tree = (int)syscall(SYS_open_tree, src, "",
			    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	if (tree >= 0 &&
	    syscall(SYS_move_mount, tree, "", src, "",
		    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0) {
		close(tree);
		tree = -1;
	}
	close(src);
	a->root = tree;
	return tree < 0 ? -1 : 0;
}

static int do_mount(struct apply *a, const struct oci_step *s)
{
	char buf[32];
	int fd, r;

	if (make_in_root(a, s->dst, false) < 0)
		return -1;
	fd = in_root(a, s->dst, O_PATH);
	if (fd < 0)
		return -1;
	r = mount(s->fstype, fd_path(buf, fd), s->fstype, s->flags, s->data);
	close(fd);
	return r;
}

static int do_bind(struct apply *a, const struct oci_step *s)
{
	struct mount_attr attr = { .attr_set = s->attr_set, .attr_clr = s->attr_clr };
	unsigned rec = s->recursive ? AT_RECURSIVE : 0;
	int share, src, tree = -1, dst = -1, r = -1;
	struct stat st;

	a->side = OCI_SIDE_SRC;
	share = open(s->share, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (share < 0)
		return -1;
	/* No O_NOFOLLOW: with it the last link would be opened itself;
	 * without, RESOLVE_NO_SYMLINKS refuses it (ELOOP) like any other. */
	src = openat2_(share, s->src, O_PATH | O_CLOEXEC,
		       RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	close(share);
	if (src < 0)
		return -1;
	if (fstat(src, &st) < 0)
		goto out;
	tree = (int)syscall(SYS_open_tree, src, "",
			    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | rec);
	if (tree < 0)
		goto out;
	if ((attr.attr_set || attr.attr_clr) &&
	    syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | rec, &attr, sizeof(attr)) < 0)
		goto out;
	a->side = OCI_SIDE_DST;
	if (make_in_root(a, s->dst, !S_ISDIR(st.st_mode)) < 0)
		goto out;
	dst = in_root(a, s->dst, O_PATH);
	if (dst < 0)
		goto out;
	r = (int)syscall(SYS_move_mount, tree, "", dst, "",
			 MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
out:
	if (dst >= 0)
		close(dst);
	if (tree >= 0)
		close(tree);
	close(src);
	return r;
}

/* runc's defaults for a tmpfs /dev: the usual character devices, the
 * links to /proc, and ptmx to the devpts mounted with newinstance. */
static int do_devices(struct apply *a, const struct oci_step *s)
{
	static const struct {
		const char *name;
		unsigned maj, min;
	} nodes[] = { { "null", 1, 3 },   { "zero", 1, 5 },    { "full", 1, 7 },
		      { "random", 1, 8 }, { "urandom", 1, 9 }, { "tty", 5, 0 } };
	static const char *const links[][2] = {
		{ "fd", "/proc/self/fd" },       { "stdin", "/proc/self/fd/0" },
		{ "stdout", "/proc/self/fd/1" }, { "stderr", "/proc/self/fd/2" },
		{ "ptmx", "pts/ptmx" },
	};
	int dev = in_root(a, s->dst, O_PATH | O_DIRECTORY);

	if (dev < 0)
		return -1;
	for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		if (mknodat(dev, nodes[i].name, S_IFCHR | 0666,
			    makedev(nodes[i].maj, nodes[i].min)) < 0 &&
		    errno != EEXIST)
			goto fail;
	}
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++)
		if (symlinkat(links[i][1], dev, links[i][0]) < 0 && errno != EEXIST)
			goto fail;
	close(dev);
	return 0;
fail:
	close(dev);
	return -1;
}

/* pivot_root(".", ".") stacks the old root under the new one; the lazy
 * unmount drops it, so nothing of the guest's own tree stays reachable. */
static int do_pivot(struct apply *a)
{
	if (fchdir(a->root) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 ||
	    umount2(".", MNT_DETACH) < 0)
		return -1;
	return chdir("/");
}

static int do_readonly(void)
{
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY };

	return (int)syscall(SYS_mount_setattr, AT_FDCWD, "/", 0, &attr, sizeof(attr));
}

static int apply_step(struct apply *a, const struct oci_step *s)
{
	a->side = OCI_SIDE_DST;
	switch (s->op) {
	case OCI_ROOT:
		return do_root(a, s);
	case OCI_MOUNT:
		return do_mount(a, s);
	case OCI_BIND:
		return do_bind(a, s);
	case OCI_DEVICES:
		return do_devices(a, s);
	case OCI_PIVOT:
		return do_pivot(a);
	case OCI_READONLY:
		return do_readonly();
	}
	errno = EINVAL;
	return -1;
}

static void __attribute__((noreturn))
fail(const struct oci_child *c, int stage, size_t step, int side)
{
	struct oci_report r = { .stage = stage, .err = errno, .step = step, .side = side };
	ssize_t n = write(c->report, &r, sizeof(r));

	(void)n; /* nothing left to tell if even this fails */
	_exit(127);
}

static void setup_stdio(const struct oci_child *c)
{
	int keep[3] = { c->report, c->start, c->join };

	if (setsid() < 0)
		fail(c, OCI_STAGE_STDIO, 0, 0);
	if (c->tty >= 0 && ioctl(c->tty, TIOCSCTTY, 0) < 0)
		fail(c, OCI_STAGE_STDIO, 0, 0);
	/* The agent keeps 0..2 open on /dev/null, so no pipe is one of them. */
	for (int i = 0; i < 3; i++)
		if (dup2(c->fd[i], i) < 0)
			fail(c, OCI_STAGE_STDIO, 0, 0);
	/* The agent keeps 0..2 taken, so the pipes are above them. Closing
	 * the rest is not close-on-exec's job: this child may wait for its
	 * start as long as the host likes, and until then it would hold
	 * whatever the agent had open at the clone, such as another
	 * container's output pipe, whose reader then never sees its end. */
	fd_close_except(keep, 3);
}

/* An exec: into the init's namespaces but the PID one, which it is in. */
static void join(const struct oci_child *c)
{
	for (size_t i = 0; i < oci_join_count(); i++)
		if (syscall(SYS_setns, c->join, oci_join_flag(i)) < 0)
			fail(c, OCI_STAGE_JOIN, i, 0);
	close(c->join);
}

/* runc's order: the bounding set cut and the permitted set kept while
 * root, the ids, then the capability sets the process runs with. */
static void set_ids(const struct oci_child *c)
{
	const struct agent_ctr_process *p = c->proc;

	/* Without no_new_privs a filter needs CAP_SYS_ADMIN: now, before the
	 * capabilities go (runc's order); with it, last before execve. */
	if (!p->privs.no_new_privileges && oci_seccomp_install(c->seccomp) < 0)
		fail(c, OCI_STAGE_SECCOMP, 0, 0);
	if (oci_caps_bound(&p->privs) < 0)
		fail(c, OCI_STAGE_CAPS, 0, 0);
	/* Raw calls: glibc's wrappers would coordinate threads this
	 * single-threaded child of a threaded process does not have. */
	if (syscall(SYS_setgroups, p->ngroups, p->groups) < 0 ||
	    syscall(SYS_setresgid, p->gid, p->gid, p->gid) < 0 ||
	    syscall(SYS_setresuid, p->uid, p->uid, p->uid) < 0)
		fail(c, OCI_STAGE_USER, 0, 0);
	if (oci_caps_set(&p->privs) < 0)
		fail(c, OCI_STAGE_CAPS, 0, 1);
	/* After the switch, so the user's own permissions decide. */
	if (chdir(p->cwd) < 0)
		fail(c, OCI_STAGE_CWD, 0, 0);
}

/* An executable as Go's exec.LookPath (which runc uses) takes one: not a
 * directory, an x bit set. */
static bool runnable(const char *path, struct stat *st)
{
	return stat(path, st) == 0 && !S_ISDIR(st->st_mode) && (st->st_mode & 0111);
}

/* args[0] in the container, into prog: a name with '/' as it is, else the
 * first runnable PATH candidate. */
static void look_up(const struct oci_child *c, char *prog, size_t sz)
{
	const char *name = c->proc->args[0], *cur = c->path_var;
	struct stat st;

	if (strchr(name, '/')) {
		size_t n = strlen(name);

		if (n >= sz) {
			errno = ENAMETOOLONG;
			fail(c, OCI_STAGE_LOOKUP, 0, 0);
		}
		memcpy(prog, name, n + 1);
		if (stat(prog, &st) < 0)
			fail(c, OCI_STAGE_LOOKUP, 0, 0);
		if (S_ISDIR(st.st_mode) || !(st.st_mode & 0111)) {
			errno = EACCES;
			fail(c, OCI_STAGE_LOOKUP, 0, 0);
		}
		return;
	}
	while (oci_path_next(&cur, name, prog, sz))
		if (runnable(prog, &st))
			return;
	errno = ENOENT;
	fail(c, OCI_STAGE_LOOKUP, 0, 0);
}

/* After pivot_root, in the container's own tree: runc's order. */
static void confine_paths(const struct oci_child *c)
{
	const struct agent_ctr_create *r = c->create;
	size_t i = 0;

	if (!r)
		return;
	if (oci_readonly_paths(r->readonly, r->nreadonly, &i) < 0)
		fail(c, OCI_STAGE_READONLY, i, 0);
	if (oci_mask_paths(r->masked, r->nmasked, &i) < 0)
		fail(c, OCI_STAGE_MASK, i, 0);
}

/* The init: its stdio, sysctls, every mount of the plan, pivot_root,
 * hostname, read-only and masked paths. */
static void make_container(const struct oci_child *c)
{
	struct apply a = { .root = -1 };
	size_t i = 0;

	umask(0); /* the devices' modes exactly; the process's own comes last */
	setup_stdio(c);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		fail(c, OCI_STAGE_PRIVATE, 0, 0);
	/* In the container's namespaces already; the guest's /proc is gone
	 * once pivot_root is done. */
	if (c->create && oci_write_sysctls(c->create->sysctl, c->create->nsysctl, &i) < 0)
		fail(c, OCI_STAGE_SYSCTL, i, 0);
	for (size_t i = 0; i < c->plan->n; i++)
		if (apply_step(&a, &c->plan->step[i]) < 0)
			fail(c, OCI_STAGE_PLAN, i, a.side);
	if (a.root >= 0)
		close(a.root);
	if (c->hostname && sethostname(c->hostname, strlen(c->hostname)) < 0)
		fail(c, OCI_STAGE_HOSTNAME, 0, 0);
	confine_paths(c);
}

/* An exec: nothing of the agent's left to trace or steal, then in. */
static void enter_container(const struct oci_child *c)
{
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		fail(c, OCI_STAGE_STDIO, 0, 0);
	setup_stdio(c);
	join(c);
}

void oci_child_run(const struct oci_child *c)
{
	struct oci_report ready = { .stage = OCI_STAGE_READY };
	char prog[AGENT_PATH_MAX + 1], go;
	ssize_t n;

	size_t i = 0;

	child_reset(c->nofile);
	/* While root and in the guest's mount namespace, the guest's /proc. */
	if (oci_set_rlimits(&c->proc->privs, &i) < 0)
		fail(c, OCI_STAGE_RLIMIT, i, 0);
	if (oci_set_oom_score(&c->proc->privs) < 0)
		fail(c, OCI_STAGE_OOM, 0, 0);
	if (!c->plan)
		enter_container(c);
	else
		make_container(c);
	umask(c->proc->umask);
	set_ids(c);
	look_up(c, prog, sizeof(prog));
	if (oci_no_new_privs(&c->proc->privs) < 0)
		fail(c, OCI_STAGE_NNP, 0, 0);
	if (write(c->report, &ready, sizeof(ready)) != (ssize_t)sizeof(ready))
		_exit(127);
	do
		n = read(c->start, &go, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		_exit(1); /* deleted before it started */
	if (c->proc->privs.no_new_privileges && oci_seccomp_install(c->seccomp) < 0)
		fail(c, OCI_STAGE_SECCOMP, 0, 0);
	execve(prog, (char *const *)c->proc->args, (char *const *)c->proc->env);
	fail(c, OCI_STAGE_EXEC, 0, 0);
}
