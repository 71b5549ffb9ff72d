/*
 * agent_remove: remove (docs/agent-protocol.md, section 7.5).
 *
 * Safety rules, and the attack each one stops:
 *  - Every name is handled relative to a descriptor of its directory with
 *    AT_SYMLINK_NOFOLLOW / O_NOFOLLOW: a symlink is removed, never
 *    followed, so a link planted inside the tree cannot redirect the
 *    delete to /etc.
 *  - Mount points are not descended into (statx STATX_ATTR_MOUNT_ROOT,
 *    or a different device): `busy`. A share or /proc mounted below the
 *    tree is not emptied.
 *  - The tree is walked with one directory descriptor at a time. Going
 *    back up opens ".." and checks it is the directory we came from
 *    (device and inode recorded on the way down): if a guest process
 *    moved the subtree meanwhile, ".." leads elsewhere and the removal
 *    stops instead of emptying whatever it now sits in.
 *  - A parent is re-read from its start after each subdirectory is
 *    emptied (what was deleted is gone; the emptied subdirectory is then
 *    removed when it is met again), so no per-directory cursor or name
 *    list is kept: memory is one record per level.
 *  - "/" in any lexical spelling is refused (the parser does this, and we
 *    check again), and so is a path ending in "." or "..", whose target
 *    is not the entry its last name suggests.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "guest-init/agent/agent_files_ops.h"
#include "guest-init/agent/agent_walk.h"

/* One record per level: 16 bytes, so the deepest tree costs 1 MiB. */
#define REMOVE_DEPTH_MAX 65536
#define REMOVE_BUF 8192

struct rm_id {
	dev_t dev;
	ino_t ino;
};

struct rm {
	struct rm_id *stack;
	size_t depth, cap;
	struct rm_id emptied; /* the directory rm_tree last emptied and left */
	bool has_emptied;
	char where[256]; /* the entry an error is about */
};

static int stat_nofollow(int dirfd, const char *name, struct statx *sx)
{
	if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_TYPE | STATX_INO, sx) <
	    0)
		return -errno;
	return 0;
}

static bool is_mount_root(const struct statx *sx, const struct stat *parent)
{
	if ((sx->stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
	    (sx->stx_attributes & STATX_ATTR_MOUNT_ROOT))
		return true;
	return makedev(sx->stx_dev_major, sx->stx_dev_minor) != parent->st_dev;
}

static bool same(const struct stat *st, const struct rm_id *id)
{
	return st->st_dev == id->dev && st->st_ino == id->ino;
}

static int rm_push(struct rm *rm, const struct stat *st)
{
	if (rm->depth == rm->cap) {
		size_t cap = rm->cap ? rm->cap * 2 : 16;
		struct rm_id *ns;

		if (cap > REMOVE_DEPTH_MAX)
			return -ELOOP;
		ns = realloc(rm->stack, cap * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		rm->stack = ns;
		rm->cap = cap;
	}
	rm->stack[rm->depth].dev = st->st_dev;
	rm->stack[rm->depth].ino = st->st_ino;
	rm->depth++;
	return 0;
}

/* Note which entry an error is about, for the message. */
static int fail_at(struct rm *rm, const char *name, int err)
{
	snprintf(rm->where, sizeof(rm->where), "%s", name);
	return err;
}

/*
 * Handle one entry of the directory `fd` (whose stat is `dst`). Returns 0
 * when it is gone, 1 with *child set when it is a non-empty directory to
 * descend into, -errno otherwise.
 */
static int rm_entry(struct rm *rm, int fd, const struct stat *dst, const char *name, int *child)
{
	struct statx sx;
	struct stat cst;
	int r = stat_nofollow(fd, name, &sx);

	if (r == -ENOENT)
		return 0; /* gone meanwhile */
	if (r < 0)
		return fail_at(rm, name, r);
	if (!S_ISDIR(sx.stx_mode)) {
		if (unlinkat(fd, name, 0) < 0 && errno != ENOENT)
			return fail_at(rm, name, -errno);
		return 0;
	}
	if (is_mount_root(&sx, dst))
		return fail_at(rm, name, -EBUSY);
	if (unlinkat(fd, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
		return 0;
	if (errno != ENOTEMPTY && errno != EEXIST)
		return fail_at(rm, name, -errno);
	*child = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (*child < 0)
		return fail_at(rm, name, errno == ENOENT ? 0 : -errno);
	if (fstat(*child, &cst) < 0 || cst.st_ino != sx.stx_ino ||
	    cst.st_dev != makedev(sx.stx_dev_major, sx.stx_dev_minor)) {
		close(*child);
		return fail_at(rm, name, -EBUSY); /* swapped since the statx */
	}
	/* Just emptied, and still not removable: a guest process is filling
	 * it again (or the filesystem hides what is left). Going down again
	 * could go on for as long as that lasts, holding this connection;
	 * rm -rf gives up here too. */
	if (rm->has_emptied && same(&cst, &rm->emptied)) {
		close(*child);
		return fail_at(rm, name, -ENOTEMPTY);
	}
	r = rm_push(rm, &cst);
	if (r < 0) {
		close(*child);
		return fail_at(rm, name, r);
	}
	return 1;
}

/*
 * Empty the directory open as `fd` (its stat recorded as the first stack
 * entry) and everything below it. Consumes fd. 0 or -errno.
 */
static int rm_tree(struct rm *rm, int fd)
{
	uint8_t *buf = malloc(REMOVE_BUF);
	int r = 0;

	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		struct stat dst;
		bool descended = false;
		ssize_t n = 0;

		if (fstat(fd, &dst) < 0 || lseek(fd, 0, SEEK_SET) < 0) {
			r = fail_at(rm, ".", -errno);
			break;
		}
		while (!descended && (n = getdents64(fd, buf, REMOVE_BUF)) > 0) {
			size_t pos = 0;
			const char *name;
			int64_t off;

			while (walk_dirent(buf, (size_t)n, &pos, &name, &off)) {
				int child = -1;

				if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2])))
					continue;
				r = rm_entry(rm, fd, &dst, name, &child);
				if (r < 0)
					goto out;
				if (r == 1) {
					close(fd);
					fd = child;
					descended = true;
					break;
				}
			}
		}
		if (descended)
			continue;
		if (n < 0) {
			r = fail_at(rm, ".", -errno);
			break;
		}
		/* This directory is empty. The top one is removed by the
		 * caller; for the others, go back up to the recorded parent. */
		if (rm->depth == 1) {
			r = 0;
			break;
		}
		{
			int up = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			struct stat ust;

			if (up < 0) {
				r = fail_at(rm, "..", -errno);
				break;
			}
			if (fstat(up, &ust) < 0 || !same(&ust, &rm->stack[rm->depth - 2])) {
				close(up);
				r = fail_at(rm, "..", -ESTALE);
				break;
			}
			rm->emptied = rm->stack[rm->depth - 1];
			rm->has_emptied = true;
			rm->depth--;
			close(fd);
			fd = up;
		}
	}
out:
	free(buf);
	close(fd);
	return r;
}

static void remove_error(struct agent_conn *c, const char *path, const struct rm *rm, int r)
{
	if (r == -ESTALE)
		fs_send_error(
			c, AGENT_E_IO_ERROR,
			"remove '%.200s': a directory inside it was moved while it was being removed; stopped (what was removed stays), retry",
			path);
	else if (r == -EBUSY)
		fs_send_error(
			c, AGENT_E_BUSY,
			"remove '%.200s': '%.200s' inside it is a mount point (or changed while being removed); unmount it first",
			path, rm->where);
	else if (r == -ENOTEMPTY)
		fs_send_error(
			c, AGENT_E_NOT_EMPTY,
			"remove '%.200s': '%.200s' inside it filled up again while it was being removed; stop what writes there and retry (what was removed stays)",
			path, rm->where);
	else if (r == -ELOOP)
		fs_send_error(
			c, AGENT_E_IO_ERROR,
			"remove '%.200s': the tree is deeper than %d levels; remove its deepest part first",
			path, REMOVE_DEPTH_MAX);
	else
		fs_send_errno(c, r, "remove '%.200s': at '%.200s' inside it", path, rm->where);
}

void op_remove(struct agent_conn *c, const struct agent_file_req *f)
{
	char buf[AGENT_PATH_MAX + 1];
	size_t n = strlen(f->path);
	bool trailing = false;
	const char *parent, *name;
	struct rm rm = { 0 };
	struct statx sx;
	struct stat pst;
	struct agent_line l;
	char *slash;
	int pfd, r, fd;

	if (agent_path_is_root(f->path)) {
		fs_send_error(c, AGENT_E_UNSAFE_PATH,
			      "remove: refusing to remove '%.200s', which is the root directory",
			      f->path);
		return;
	}
	memcpy(buf, f->path, n + 1);
	while (n > 1 && buf[n - 1] == '/') {
		buf[--n] = '\0';
		trailing = true;
	}
	slash = strrchr(buf, '/');
	name = slash + 1;
	if (!strcmp(name, ".") || !strcmp(name, "..")) {
		fs_send_error(c, AGENT_E_BAD_FIELD,
			      "remove: '%.200s' ends in '%s'; name the entry itself", f->path,
			      name);
		return;
	}
	*slash = '\0';
	parent = slash == buf ? "/" : buf;

	pfd = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0) {
		fs_send_errno(c, errno, "remove '%.200s'", f->path);
		return;
	}
	r = fstat(pfd, &pst) < 0 ? -errno : stat_nofollow(pfd, name, &sx);
	if (r < 0) {
		fs_send_errno(c, r, "remove '%.200s'", f->path);
		goto out;
	}
	if (!S_ISDIR(sx.stx_mode)) {
		if (trailing) {
			fs_send_errno(c, ENOTDIR, "remove '%.200s'", f->path);
			goto out;
		}
		/* A file, or a symlink itself (never what it points to). */
		if (unlinkat(pfd, name, 0) < 0) {
			fs_send_errno(c, errno, "remove '%.200s'", f->path);
			goto out;
		}
		agent_conn_send_line(c, &l, agent_line_ok(&l, NULL, 0));
		goto out;
	}
	if (is_mount_root(&sx, &pst)) {
		fs_send_error(c, AGENT_E_BUSY,
			      "remove '%.200s': it is a mount point; unmount it first", f->path);
		goto out;
	}
	if (unlinkat(pfd, name, AT_REMOVEDIR) == 0) {
		agent_conn_send_line(c, &l, agent_line_ok(&l, NULL, 0));
		goto out;
	}
	r = errno;
	if ((r != ENOTEMPTY && r != EEXIST) || !f->recursive) {
		if (r == ENOTEMPTY || r == EEXIST)
			fs_send_error(
				c, AGENT_E_NOT_EMPTY,
				"remove '%.200s': the directory is not empty; pass \"recursive\": true to remove its contents too",
				f->path);
		else
			fs_send_errno(c, r, "remove '%.200s'", f->path);
		goto out;
	}

	fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		fs_send_errno(c, errno, "remove '%.200s'", f->path);
		goto out;
	}
	{
		struct stat st;

		r = fstat(fd, &st) < 0 ? -errno : rm_push(&rm, &st);
		if (r < 0) {
			close(fd);
			fs_send_errno(c, r, "remove '%.200s'", f->path);
			goto out;
		}
	}
	r = rm_tree(&rm, fd);
	if (r == 0 && unlinkat(pfd, name, AT_REMOVEDIR) < 0) {
		r = -errno;
		snprintf(rm.where, sizeof(rm.where), ".");
	}
	if (r < 0)
		remove_error(c, f->path, &rm, r);
	else
		agent_conn_send_line(c, &l, agent_line_ok(&l, NULL, 0));
out:
	free(rm.stack);
	close(pfd);
}
