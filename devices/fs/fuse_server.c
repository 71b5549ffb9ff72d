#include "devices/fs/fuse_server.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fuse.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "devices/fs/fuse_req.h"
#include "devices/fs/fuse_slots.h"
#include "devices/fs/fuse_state.h"
#include "lib/base/le.h"
#include "lib/base/mount_clone.h"

/* The guest's kernel caches names and attributes this long (seconds): short,
 * because the host may change the share behind the guest's back. */
#define ATTR_TIMEOUT 1

/* INIT flags kiln implements, intersected with what the guest offers. */
#define INIT_FLAGS                                                                        \
	(FUSE_ASYNC_READ | FUSE_ATOMIC_O_TRUNC | FUSE_BIG_WRITES | FUSE_AUTO_INVAL_DATA | \
	 FUSE_DO_READDIRPLUS | FUSE_READDIRPLUS_AUTO | FUSE_PARALLEL_DIROPS | FUSE_MAX_PAGES)

/* Open flags passed through to the host. O_CREAT/O_EXCL come only from
 * CREATE; O_DIRECT would fail on the guest's unaligned buffers; O_NOATIME
 * fails with EPERM for files the VMM does not own; O_PATH, O_TMPFILE and
 * O_DIRECTORY are the server's to choose. */
#define OPEN_FLAGS (O_ACCMODE | O_APPEND | O_NONBLOCK | O_SYNC | O_DSYNC | O_TRUNC | O_LARGEFILE)

/* The node and handle tables' slots (fuse_slots.h): a slot's fd is
 * FUSE_SLOT_STALE for a node or handle a restore could not find again. */
#define SLOT_FREE FUSE_SLOT_FREE
#define SLOT_STALE FUSE_SLOT_STALE

struct fs_inode {
	struct fuse_slot slot; /* fd: O_PATH, no follow; next: the hash chain while used */
	uint64_t nlookup;
	dev_t dev;
	ino_t ino;
	mode_t type; /* S_IFMT bits, saved with the node */
};

struct fs_handle {
	struct fuse_slot slot; /* fd: a real open fd */
	int dir;
	int flags; /* what the host opened it with: a restore opens it so again */
	uint64_t nodeid;
};

struct fuse_server {
	int proc_fd; /* /proc/self/fd, to reopen our own O_PATH fds */
	int read_only;
	int active;
	struct fuse_slots inodes;  /* of struct fs_inode; slot 0 the root, FUSE_ROOT_ID */
	int32_t *buckets;          /* (dev, ino) hash of the open nodes */
	uint32_t nbuckets;         /* a power of two */
	struct fuse_slots handles; /* of struct fs_handle */
	struct fs_graft {          /* fuse_server_graft's: a name beneath the root */
		char *name;        /* NULL: a free entry */
		int fd;            /* O_PATH, the directory (a detached clone) */
	} graft[FUSE_SERVER_MAX_GRAFTS];
};

/* ---- inode table ---- */

static struct fs_inode *inode_at(const struct fuse_server *s, uint32_t i)
{
	return fuse_slots_at(&s->inodes, i);
}

static uint32_t key_hash(dev_t dev, ino_t ino, uint32_t n)
{
	uint64_t k = (uint64_t)ino * 0x9e3779b97f4a7c15ULL ^ (uint64_t)dev * 0xc2b2ae3d27d4eb4fULL;

	return (uint32_t)(k >> 32) & (n - 1);
}

/* Slot 0 is the root: FUSE_ROOT_ID (1). Others never produce 1. */
static uint64_t inode_id(const struct fuse_server *s, int32_t i)
{
	return fuse_slots_id(&s->inodes, (uint32_t)i);
}

static struct fs_inode *inode_get(struct fuse_server *s, uint64_t nodeid)
{
	return fuse_slots_get(&s->inodes, nodeid);
}

/* The fd of node `nodeid`, or -ENOENT for ids the guest made up or kept
 * after forgetting them, -ESTALE for a node a restore could not find. */
static int node_fd(struct fuse_server *s, uint64_t nodeid)
{
	struct fs_inode *n = inode_get(s, nodeid);

	return !n ? -ENOENT : n->slot.fd == SLOT_STALE ? -ESTALE : n->slot.fd;
}

static void inode_hash(struct fuse_server *s, uint32_t i)
{
	struct fs_inode *n = inode_at(s, i);
	uint32_t h = key_hash(n->dev, n->ino, s->nbuckets);

	n->slot.next = s->buckets[h];
	s->buckets[h] = (int32_t)i;
}

/* A hash as large as the table, of its open nodes. */
static int inodes_rehash(struct fuse_server *s)
{
	int32_t *b = malloc(s->inodes.cap * sizeof(*b));

	if (!b)
		return -ENOMEM;
	free(s->buckets);
	s->buckets = b;
	s->nbuckets = s->inodes.cap;
	for (uint32_t i = 0; i < s->nbuckets; i++)
		b[i] = -1;
	for (uint32_t i = 0; i < s->inodes.cap; i++)
		if (inode_at(s, i)->slot.fd >= 0)
			inode_hash(s, i);
	return 0;
}

static int inodes_grow(struct fuse_server *s)
{
	int err = fuse_slots_grow(&s->inodes);

	return err < 0 ? err : inodes_rehash(s);
}

static int32_t inode_find(struct fuse_server *s, dev_t dev, ino_t ino)
{
	for (int32_t i = s->buckets[key_hash(dev, ino, s->nbuckets)]; i >= 0;
	     i = inode_at(s, (uint32_t)i)->slot.next)
		if (inode_at(s, (uint32_t)i)->dev == dev && inode_at(s, (uint32_t)i)->ino == ino)
			return i;
	return -1;
}

/* Take ownership of O_PATH `fd` for (dev, ino); returns the slot or -errno
 * (fd is closed on failure). */
static int32_t inode_insert(struct fuse_server *s, int fd, const struct stat *st)
{
	int32_t i = fuse_slots_take(&s->inodes, fd);
	struct fs_inode *n;

	if (i < 0)
		return i;
	n = inode_at(s, (uint32_t)i);
	n->dev = st->st_dev;
	n->ino = st->st_ino;
	n->type = st->st_mode & S_IFMT;
	n->nlookup = 1;
	/* The table grew: a hash as large, this node in it (out of memory,
	 * the smaller hash still serves). */
	if (s->nbuckets == s->inodes.cap || inodes_rehash(s) < 0)
		inode_hash(s, (uint32_t)i);
	return i;
}

static void inode_free(struct fuse_server *s, int32_t i)
{
	struct fs_inode *n = inode_at(s, (uint32_t)i);
	int32_t *pp = &s->buckets[key_hash(n->dev, n->ino, s->nbuckets)];

	/* Only open nodes are hashed: a stale one has no (dev, ino) here. */
	if (n->slot.fd >= 0) {
		while (*pp != i)
			pp = &inode_at(s, (uint32_t)*pp)->slot.next;
		*pp = n->slot.next;
	}
	fuse_slots_release(&s->inodes, (uint32_t)i);
}

static void inode_forget(struct fuse_server *s, uint64_t nodeid, uint64_t count)
{
	struct fs_inode *n = inode_get(s, nodeid);

	if (!n)
		return; /* FORGET has no reply: nothing to tell a lying guest */
	n->nlookup -= count < n->nlookup ? count : n->nlookup;
	if (n->nlookup == 0 && n != inode_at(s, 0))
		inode_free(s, (int32_t)(n - inode_at(s, 0)));
}

/* ---- handle table ---- */

static struct fs_handle *handle_at(const struct fuse_server *s, uint32_t i)
{
	return fuse_slots_at(&s->handles, i);
}

/* Take ownership of open `fd`; the fh for it, or -errno (fd closed). */
static int64_t handle_alloc(struct fuse_server *s, int fd, int dir, int flags, uint64_t nodeid)
{
	int32_t i = fuse_slots_take(&s->handles, fd);
	struct fs_handle *h;

	if (i < 0)
		return i;
	h = handle_at(s, (uint32_t)i);
	h->dir = dir;
	h->flags = flags;
	h->nodeid = nodeid;
	return (int64_t)fuse_slots_id(&s->handles, (uint32_t)i);
}

/* The slot `fh` names, open or stale, when it is of the kind asked for. */
static struct fs_handle *handle_slot(struct fuse_server *s, uint64_t fh, int dir)
{
	struct fs_handle *h = fuse_slots_get(&s->handles, fh);

	return h && h->dir == dir ? h : NULL;
}

/* The handle `fh` names, when it is open and of the kind asked for. */
static struct fs_handle *handle_get(struct fuse_server *s, uint64_t fh, int dir)
{
	struct fs_handle *h = handle_slot(s, fh, dir);

	return h && h->slot.fd >= 0 ? h : NULL;
}

/* The handle fh names into *h, open and of the kind asked for: 0, or
 * -ESTALE for a stale handle (its file was not found again after a
 * restore), -EBADF for none at all. */
static int handle_open(struct fuse_server *s, uint64_t fh, int dir, struct fs_handle **h)
{
	*h = handle_get(s, fh, dir);
	if (*h)
		return 0;
	return handle_slot(s, fh, dir) ? -ESTALE : -EBADF;
}

static void handle_free(struct fuse_server *s, struct fs_handle *h)
{
	fuse_slots_release(&s->handles, (uint32_t)(h - handle_at(s, 0)));
}

/* ---- helpers ---- */

static int sys_openat2(int dirfd, const char *name, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.mode = (flags & O_CREAT) ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, dirfd, name, &how, sizeof(how));

	return fd < 0 ? -errno : (int)fd;
}

/*
 * /proc/self/fd, where an O_PATH descriptor is opened again for I/O.
 * Opened when first needed and kept: by then the VMM is in its jail,
 * whose /proc is a procfs of its own pid namespace and nothing else; a
 * descriptor of the host's /proc kept from before the jail would lead
 * out of it (".." from /proc/self/fd is the host's /proc, and every
 * process's files beside it). -1 (errno set) when unusable: the caller's
 * call then fails with EBADF, which the guest sees.
 */
static int proc_dir(struct fuse_server *s)
{
	struct statfs sfs;
	int fd;

	if (s->proc_fd >= 0)
		return s->proc_fd;
	fd = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0 && (fstatfs(fd, &sfs) < 0 || sfs.f_type != PROC_SUPER_MAGIC)) {
		close(fd);
		fd = -1;
		errno = ENOENT;
	}
	s->proc_fd = fd;
	return fd;
}

/* Setup, before the jail, must not leave the host's /proc open for
 * after it; a restore (on the restore thread, in the jail, or unjailed
 * for an embedder that restores before jailing itself) leaves nothing
 * either, so the device thread opens its own when it first needs one. */
static void proc_forget(struct fuse_server *s)
{
	if (s->proc_fd >= 0)
		close(s->proc_fd);
	s->proc_fd = -1;
}

static void fd_name(int fd, char buf[16])
{
	snprintf(buf, 16, "%d", fd);
}

/* Open what our O_PATH `fd` refers to, for I/O. Callers have checked its
 * type: only regular files and directories get here. */
static int reopen(struct fuse_server *s, int fd, int flags)
{
	char n[16];
	int r;

	fd_name(fd, n);
	r = openat(proc_dir(s), n, flags | O_CLOEXEC);
	return r < 0 ? -errno : r;
}

static int stat_fd(int fd, struct stat *st)
{
	return fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

/* Regular files may not carry set-id bits (see the header). */
static mode_t safe_mode(mode_t type, mode_t mode)
{
	mode &= 07777;
	if (S_ISREG(type))
		mode &= ~(mode_t)(S_ISUID | S_ISGID);
	return mode;
}

static void fill_attr(struct fuse_attr *a, const struct stat *st)
{
	memset(a, 0, sizeof(*a));
	a->ino = st->st_ino;
	a->size = (uint64_t)st->st_size;
	a->blocks = (uint64_t)st->st_blocks;
	a->atime = (uint64_t)st->st_atim.tv_sec;
	a->mtime = (uint64_t)st->st_mtim.tv_sec;
	a->ctime = (uint64_t)st->st_ctim.tv_sec;
	a->atimensec = (uint32_t)st->st_atim.tv_nsec;
	a->mtimensec = (uint32_t)st->st_mtim.tv_nsec;
	a->ctimensec = (uint32_t)st->st_ctim.tv_nsec;
	a->mode = st->st_mode;
	a->nlink = (uint32_t)st->st_nlink;
	a->uid = st->st_uid;
	a->gid = st->st_gid;
	/* glibc's dev_t encoding equals the kernel's new_encode_dev() below 2^32. */
	a->rdev = (uint32_t)st->st_rdev;
	a->blksize = (uint32_t)st->st_blksize;
}

/* Turn O_PATH `fd` into a node (new, or one more lookup of a known one) and
 * describe it. Consumes fd. */
static int entry_from_fd(struct fuse_server *s, int fd, struct fuse_entry_out *eo)
{
	struct stat st;
	int32_t i;
	int err = stat_fd(fd, &st);

	if (err < 0) {
		close(fd);
		return err;
	}
	i = inode_find(s, st.st_dev, st.st_ino);
	if (i >= 0) {
		close(fd);
		inode_at(s, (uint32_t)i)->nlookup++;
	} else {
		i = inode_insert(s, fd, &st);
		if (i < 0)
			return i;
	}
	memset(eo, 0, sizeof(*eo));
	eo->nodeid = inode_id(s, i);
	eo->entry_valid = ATTR_TIMEOUT;
	eo->attr_valid = ATTR_TIMEOUT;
	fill_attr(&eo->attr, &st);
	return 0;
}

/* The confined lookup every name goes through: one component beneath
 * dirfd, symlinks not followed. */
static int lookup_name(struct fuse_server *s, int dirfd, const char *name,
		       struct fuse_entry_out *eo)
{
	int fd = sys_openat2(dirfd, name, O_PATH | O_NOFOLLOW, 0);

	if (fd < 0)
		return fd;
	return entry_from_fd(s, fd, eo);
}

/* Creation honours the guest's mode (already umasked by the guest kernel),
 * not the VMM's umask. */
static int fix_mode(struct fuse_server *s, int pathfd, mode_t mode)
{
	struct stat st;
	char n[16];
	int err = stat_fd(pathfd, &st);

	if (err < 0)
		return err;
	if (S_ISLNK(st.st_mode) || (st.st_mode & 07777) == mode)
		return 0;
	fd_name(pathfd, n);
	return fchmodat(proc_dir(s), n, mode, 0) < 0 ? -errno : 0;
}

/* The same for a file CREATE just made, through its open fd. */
static int fix_mode_open(int fd, mode_t mode)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if ((st.st_mode & 07777) != mode && fchmod(fd, mode) < 0)
		return -errno;
	return 0;
}

static int reply_entry(struct fuse_server *s, struct fuse_req *r, int dirfd, const char *name,
		       mode_t mode)
{
	struct fuse_entry_out eo;
	int fd = sys_openat2(dirfd, name, O_PATH | O_NOFOLLOW, 0);
	int err;

	if (fd < 0)
		return fd;
	if ((err = fix_mode(s, fd, mode)) < 0) {
		close(fd);
		return err;
	}
	if ((err = entry_from_fd(s, fd, &eo)) < 0)
		return err;
	memcpy(r->body, &eo, sizeof(eo));
	return sizeof(eo);
}

/* ---- session ---- */

void fuse_server_reset(struct fuse_server *s)
{
	for (uint32_t i = 0; i < s->handles.cap; i++)
		if (handle_at(s, i)->slot.fd != SLOT_FREE)
			fuse_slots_release(&s->handles, i);
	for (uint32_t i = 1; i < s->inodes.cap; i++)
		if (inode_at(s, i)->slot.fd != SLOT_FREE)
			inode_free(s, (int32_t)i);
	s->active = 0;
}

int fuse_server_active(const struct fuse_server *s)
{
	return s->active;
}

static int op_init(struct fuse_server *s, struct fuse_req *r)
{
	int n = fuse_req_init(r, INIT_FLAGS, FUSE_SERVER_MAX_WRITE);

	if (n < 0)
		return n;
	/* A new mount (or a driver that reset without DESTROY) starts clean. */
	fuse_server_reset(s);
	s->active = 1;
	return n;
}

static int op_destroy(struct fuse_server *s, struct fuse_req *r)
{
	(void)r;
	fuse_server_reset(s);
	return 0;
}

static struct fs_graft *graft_find(struct fuse_server *s, const char *name)
{
	for (size_t i = 0; i < FUSE_SERVER_MAX_GRAFTS; i++)
		if (s->graft[i].name && strcmp(s->graft[i].name, name) == 0)
			return &s->graft[i];
	return NULL;
}

static int op_lookup(struct fuse_server *s, struct fuse_req *r)
{
	struct fuse_entry_out eo;
	struct fs_graft *g;
	const char *name;
	int dirfd = node_fd(s, r->h.nodeid), err, fd;

	if (dirfd < 0)
		return dirfd;
	if ((err = fuse_req_name(r, &name)) < 0)
		return err;
	/* A grafted name in the root is its directory, whatever the share
	 * holds under that name: a descriptor of our own of it. */
	g = r->h.nodeid == FUSE_ROOT_ID ? graft_find(s, name) : NULL;
	if (g) {
		fd = sys_openat2(g->fd, ".", O_PATH | O_DIRECTORY, 0);
		err = fd < 0 ? fd : entry_from_fd(s, fd, &eo);
	} else {
		err = lookup_name(s, dirfd, name, &eo);
	}
	if (err < 0)
		return err;
	memcpy(r->body, &eo, sizeof(eo));
	return sizeof(eo);
}

/* fuse_req_forget's callback. */
static void forget_one(void *ctx, uint64_t nodeid, uint64_t nlookup)
{
	inode_forget(ctx, nodeid, nlookup);
}

static int reply_attr(struct fuse_req *r, int fd)
{
	struct fuse_attr_out ao = { .attr_valid = ATTR_TIMEOUT };
	struct stat st;
	int err = stat_fd(fd, &st);

	if (err < 0)
		return err;
	fill_attr(&ao.attr, &st);
	memcpy(r->body, &ao, sizeof(ao));
	return sizeof(ao);
}

/* The node the request names, its argument struct taken into in: the
 * node's fd, or -errno. */
static int node_arg(struct fuse_server *s, struct fuse_req *r, void *in, size_t n)
{
	int fd = node_fd(s, r->h.nodeid), err;

	if (fd < 0)
		return fd;
	return (err = fuse_req_take(r, in, n)) < 0 ? err : fd;
}

static int op_getattr(struct fuse_server *s, struct fuse_req *r)
{
	struct fuse_getattr_in in;
	int fd = node_arg(s, r, &in, sizeof(in));

	if (fd < 0)
		return fd;
	return reply_attr(r, fd);
}

static int set_size(struct fuse_server *s, int fd, const struct stat *st, struct fs_handle *h,
		    uint64_t size)
{
	int wfd, err = 0;

	if (S_ISDIR(st->st_mode))
		return -EISDIR;
	if (!S_ISREG(st->st_mode))
		return -EINVAL;
	if (size > INT64_MAX)
		return -EFBIG;
	if (h)
		return ftruncate(h->slot.fd, (off_t)size) < 0 ? -errno : 0;
	wfd = reopen(s, fd, O_WRONLY);
	if (wfd < 0)
		return wfd;
	if (ftruncate(wfd, (off_t)size) < 0)
		err = -errno;
	close(wfd);
	return err;
}

static int op_setattr(struct fuse_server *s, struct fuse_req *r)
{
	struct fuse_setattr_in in;
	struct fs_handle *h = NULL;
	struct stat st;
	char n[16];
	int fd = node_arg(s, r, &in, sizeof(in)), err;

	if (fd < 0)
		return fd;
	if ((err = stat_fd(fd, &st)) < 0)
		return err;
	if (in.valid & FATTR_FH) {
		/* A handle of another node would truncate the wrong file. */
		h = handle_get(s, in.fh, 0);
		if (!h || h->nodeid != r->h.nodeid)
			return -EBADF;
	}
	fd_name(fd, n);
	if (in.valid & FATTR_MODE) {
		if (S_ISLNK(st.st_mode))
			return -EOPNOTSUPP; /* Linux has no lchmod */
		if (fchmodat(proc_dir(s), n, safe_mode(st.st_mode, in.mode), 0) < 0)
			return -errno;
	}
	if (in.valid & (FATTR_UID | FATTR_GID)) {
		uid_t uid = (in.valid & FATTR_UID) ? in.uid : (uid_t)-1;
		gid_t gid = (in.valid & FATTR_GID) ? in.gid : (gid_t)-1;

		if (fchownat(fd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
	}
	if ((in.valid & FATTR_SIZE) && (err = set_size(s, fd, &st, h, in.size)) < 0)
		return err;
	/* Times last, so a truncate does not overwrite the mtime asked for. */
	if (in.valid & (FATTR_ATIME | FATTR_MTIME)) {
		struct timespec ts[2] = { { 0, UTIME_OMIT }, { 0, UTIME_OMIT } };

		if (in.valid & FATTR_ATIME_NOW)
			ts[0].tv_nsec = UTIME_NOW;
		else if (in.valid & FATTR_ATIME)
			ts[0] = (struct timespec){ (time_t)in.atime, in.atimensec };
		if (in.valid & FATTR_MTIME_NOW)
			ts[1].tv_nsec = UTIME_NOW;
		else if (in.valid & FATTR_MTIME)
			ts[1] = (struct timespec){ (time_t)in.mtime, in.mtimensec };
		if (utimensat(fd, "", ts, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
	}
	return reply_attr(r, fd);
}

static int op_readlink(struct fuse_server *s, struct fuse_req *r)
{
	size_t cap = r->cap < PATH_MAX ? r->cap : PATH_MAX;
	int fd = node_fd(s, r->h.nodeid), err;
	struct stat st;
	ssize_t n;

	if (fd < 0)
		return fd;
	if ((err = stat_fd(fd, &st)) < 0)
		return err;
	if (!S_ISLNK(st.st_mode))
		return -EINVAL; /* readlink(2) on a non-link */
	n = readlinkat(fd, "", (char *)r->body, cap);
	return n < 0 ? -errno : (int)n;
}

static int op_symlink(struct fuse_server *s, struct fuse_req *r)
{
	const char *name, *target;
	int dirfd = node_fd(s, r->h.nodeid), err;

	if (dirfd < 0)
		return dirfd;
	/* Arguments: the new entry's name, then the link's contents. */
	if ((err = fuse_req_name(r, &name)) < 0)
		return err;
	if (!(target = fuse_req_str(r)) || !target[0])
		return -EINVAL;
	if (strlen(target) >= PATH_MAX)
		return -ENAMETOOLONG;
	/* The contents are only ever read back, never followed by the host. */
	if (symlinkat(target, dirfd, name) < 0)
		return -errno;
	return reply_entry(s, r, dirfd, name, 0);
}

static int op_mknod(struct fuse_server *s, struct fuse_req *r)
{
	struct fuse_mknod_in in;
	const char *name;
	mode_t type, mode;
	int dirfd = node_fd(s, r->h.nodeid), err;

	if (dirfd < 0)
		return dirfd;
	if ((err = fuse_req_take(r, &in, sizeof(in))) < 0 || (err = fuse_req_name(r, &name)) < 0)
		return err;
	type = in.mode & S_IFMT;
	if (type == 0)
		type = S_IFREG;
	/* Device nodes in a host directory are a way out of the sandbox. */
	if (type != S_IFREG && type != S_IFIFO && type != S_IFSOCK)
		return -EPERM;
	mode = safe_mode(type, in.mode);
	if (mknodat(dirfd, name, type | mode, 0) < 0)
		return -errno;
	return reply_entry(s, r, dirfd, name, mode);
}

static int op_mkdir(struct fuse_server *s, struct fuse_req *r)
{
	struct fuse_mkdir_in in;
	const char *name;
	mode_t mode;
	int dirfd = node_fd(s, r->h.nodeid), err;

	if (dirfd < 0)
		return dirfd;
	if ((err = fuse_req_take(r, &in, sizeof(in))) < 0 || (err = fuse_req_name(r, &name)) < 0)
		return err;
	mode = safe_mode(S_IFDIR, in.mode);
	if (mkdirat(dirfd, name, mode) < 0)
		return -errno;
	return reply_entry(s, r, dirfd, name, mode);
}

/* UNLINK, and RMDIR (r->variant). */
static int op_unlink(struct fuse_server *s, struct fuse_req *r)
{
	const char *name;
	int dirfd = node_fd(s, r->h.nodeid), err;

	if (dirfd < 0)
		return dirfd;
	if ((err = fuse_req_name(r, &name)) < 0)
		return err;
	return unlinkat(dirfd, name, r->variant ? AT_REMOVEDIR : 0) < 0 ? -errno : 0;
}

static int do_rename(struct fuse_server *s, struct fuse_req *r, uint64_t newdir, uint32_t flags)
{
	const char *oldname, *newname;
	int olddirfd = node_fd(s, r->h.nodeid), newdirfd = node_fd(s, newdir), err;

	if (olddirfd < 0)
		return olddirfd;
	if (newdirfd < 0)
		return newdirfd;
	/* RENAME_WHITEOUT needs privilege and means nothing to a share. */
	if (flags & ~(uint32_t)(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	if ((err = fuse_req_name(r, &oldname)) < 0 || (err = fuse_req_name(r, &newname)) < 0)
		return err;
	return renameat2(olddirfd, oldname, newdirfd, newname, flags) < 0 ? -errno : 0;
}

static int op_rename(struct fuse_server *s, struct fuse_req *r)
{
	struct fuse_rename_in in;
	int err = fuse_req_take(r, &in, sizeof(in));

	return err < 0 ? err : do_rename(s, r, in.newdir, 0);
}

static int op_rename2(struct fuse_server *s, struct fuse_req *r)
{
	struct fuse_rename2_in in;
	int err = fuse_req_take(r, &in, sizeof(in));

	return err < 0 ? err : do_rename(s, r, in.newdir, in.flags);
}

static int op_link(struct fuse_server *s, struct fuse_req *r)
{
	struct fuse_link_in in;
	struct stat st;
	const char *name;
	char n[16];
	int dirfd = node_fd(s, r->h.nodeid), oldfd, err;

	if (dirfd < 0)
		return dirfd;
	if ((err = fuse_req_take(r, &in, sizeof(in))) < 0 || (err = fuse_req_name(r, &name)) < 0)
		return err;
	if ((oldfd = node_fd(s, in.oldnodeid)) < 0)
		return oldfd;
	if ((err = stat_fd(oldfd, &st)) < 0)
		return err;
	if (S_ISDIR(st.st_mode))
		return -EPERM;
	/* linkat(AT_EMPTY_PATH) needs CAP_DAC_READ_SEARCH; the /proc magic link
	 * reaches the same inode without it (links to the symlink itself). */
	fd_name(oldfd, n);
	if (linkat(proc_dir(s), n, dirfd, name, AT_SYMLINK_FOLLOW) < 0)
		return -errno;
	return reply_entry(s, r, dirfd, name, st.st_mode & 07777);
}

static int open_flags(struct fuse_server *s, uint32_t guest, int *flags)
{
	*flags = (int)guest & OPEN_FLAGS;
	if (s->read_only && ((*flags & O_ACCMODE) != O_RDONLY || (*flags & O_TRUNC)))
		return -EROFS;
	return 0;
}

static int reply_open(struct fuse_server *s, struct fuse_req *r, int fd, int dir, int flags)
{
	struct fuse_open_out oo = { 0 };
	int64_t fh = handle_alloc(s, fd, dir, flags, r->h.nodeid);

	if (fh < 0)
		return (int)fh;
	oo.fh = (uint64_t)fh;
	memcpy(r->body, &oo, sizeof(oo));
	return sizeof(oo);
}

/* Which files the host opens for the guest: regular files only. The guest
 * kernel opens fifos and devices itself; a host fifo would block the device
 * thread, a symlink would be followed. OPEN and CREATE both apply it. */
static int open_type_check(mode_t mode)
{
	if (S_ISDIR(mode))
		return -EISDIR;
	if (S_ISLNK(mode))
		return -ELOOP;
	if (!S_ISREG(mode))
		return -EACCES;
	return 0;
}

/* CREATE without O_EXCL on a name that exists: look at what it is through
 * an O_PATH descriptor (which opens nothing) before opening it for real. */
static int create_open_existing(struct fuse_server *s, int dirfd, const char *name, int flags)
{
	struct stat st;
	int pfd = sys_openat2(dirfd, name, O_PATH | O_NOFOLLOW, 0), fd, err;

	if (pfd < 0)
		return pfd;
	if ((err = stat_fd(pfd, &st)) < 0 || (err = open_type_check(st.st_mode)) < 0) {
		close(pfd);
		return err;
	}
	fd = reopen(s, pfd, flags | O_NOCTTY);
	close(pfd);
	return fd;
}

static int op_open(struct fuse_server *s, struct fuse_req *r)
{
	struct fuse_open_in in;
	struct stat st;
	int fd = node_arg(s, r, &in, sizeof(in)), flags, err;

	if (fd < 0)
		return fd;
	if ((err = stat_fd(fd, &st)) < 0 || (err = open_flags(s, in.flags, &flags)) < 0)
		return err;
	if ((err = open_type_check(st.st_mode)) < 0)
		return err;
	if ((fd = reopen(s, fd, flags | O_NOCTTY)) < 0)
		return fd;
	return reply_open(s, r, fd, 0, flags);
}

static int op_create(struct fuse_server *s, struct fuse_req *r)
{
	struct fuse_create_in in;
	struct fuse_entry_out eo;
	struct fs_handle *h;
	const char *name;
	mode_t mode;
	int64_t fh;
	int dirfd = node_fd(s, r->h.nodeid), flags, fd, pfd, err, created = 1;
	char n[16];

	if (dirfd < 0)
		return dirfd;
	if ((err = fuse_req_take(r, &in, sizeof(in))) < 0 || (err = fuse_req_name(r, &name)) < 0 ||
	    (err = open_flags(s, in.flags, &flags)) < 0)
		return err;
	mode = safe_mode(S_IFREG, in.mode);
	/* O_EXCL first, so we know whether our mode applies; O_NOFOLLOW so a
	 * dangling symlink does not create its target. */
	fd = sys_openat2(dirfd, name, flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY, mode);
	if (fd == -EEXIST && !(in.flags & O_EXCL)) {
		created = 0;
		fd = create_open_existing(s, dirfd, name, flags);
	}
	if (fd < 0)
		return fd;
	if (created && (err = fix_mode_open(fd, mode)) < 0) {
		close(fd);
		return err;
	}
	fd_name(fd, n);
	pfd = openat(proc_dir(s), n, O_PATH | O_CLOEXEC);
	if (pfd < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	fh = handle_alloc(s, fd, 0, flags, 0);
	if (fh < 0) {
		close(pfd);
		return (int)fh;
	}
	if ((err = entry_from_fd(s, pfd, &eo)) < 0) {
		handle_free(s, handle_get(s, (uint64_t)fh, 0));
		return err;
	}
	h = handle_get(s, (uint64_t)fh, 0);
	h->nodeid = eo.nodeid;
	memcpy(r->body, &eo, sizeof(eo));
	memcpy(r->body + sizeof(eo), &(struct fuse_open_out){ .fh = (uint64_t)fh },
	       sizeof(struct fuse_open_out));
	return sizeof(eo) + sizeof(struct fuse_open_out);
}

static int op_read(struct fuse_server *s, struct fuse_req *r)
{
	struct fuse_read_in in;
	struct fs_handle *h;
	size_t want, done = 0;
	int err;

	if ((err = fuse_req_take(r, &in, sizeof(in))) < 0 ||
	    (err = handle_open(s, in.fh, 0, &h)) < 0)
		return err;
	if (in.offset > INT64_MAX)
		return -EINVAL;
	want = in.size;
	if (want > r->cap)
		want = r->cap;
	if (want > FUSE_SERVER_MAX_WRITE)
		want = FUSE_SERVER_MAX_WRITE;
	/* A short read means end of file to the guest: fill what we can. */
	while (done < want) {
		ssize_t n = pread(h->slot.fd, r->body + done, want - done,
				  (off_t)(in.offset + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return done ? (int)done : -errno;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (int)done;
}

static int op_write(struct fuse_server *s, struct fuse_req *r)
{
	struct fuse_write_in in;
	struct fuse_write_out wo = { 0 };
	struct fs_handle *h;
	size_t done = 0;
	int err;

	if ((err = fuse_req_take(r, &in, sizeof(in))) < 0)
		return err;
	if (in.size > r->alen)
		return -EINVAL; /* the data the guest claims is not there */
	if ((err = handle_open(s, in.fh, 0, &h)) < 0)
		return err;
	if (in.offset > INT64_MAX)
		return -EINVAL;
	while (done < in.size) {
		ssize_t n = pwrite(h->slot.fd, r->arg + done, in.size - done,
				   (off_t)(in.offset + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			if (!done)
				return -errno;
			break;
		}
		if (n == 0) { /* nothing moved: stop, or this loop never ends */
			if (!done)
				return -EIO;
			break;
		}
		done += (size_t)n;
	}
	wo.size = (uint32_t)done;
	memcpy(r->body, &wo, sizeof(wo));
	return sizeof(wo);
}

static int op_statfs(struct fuse_server *s, struct fuse_req *r)
{
	struct fuse_statfs_out so = { 0 };
	struct statfs st;
	int fd = node_fd(s, r->h.nodeid);

	if (fd < 0)
		return fd;
	if (fstatfs(fd, &st) < 0)
		return -errno;
	so.st.blocks = st.f_blocks;
	so.st.bfree = st.f_bfree;
	so.st.bavail = st.f_bavail;
	so.st.files = st.f_files;
	so.st.ffree = st.f_ffree;
	so.st.bsize = (uint32_t)st.f_bsize;
	so.st.namelen = (uint32_t)st.f_namelen;
	so.st.frsize = (uint32_t)st.f_frsize;
	memcpy(r->body, &so, sizeof(so));
	return sizeof(so);
}

/* RELEASE, and RELEASEDIR (r->variant). */
static int op_release(struct fuse_server *s, struct fuse_req *r)
{
	int dir = r->variant;
	struct fuse_release_in in;
	struct fs_handle *h;
	int err;

	if ((err = fuse_req_take(r, &in, sizeof(in))) < 0)
		return err;
	if (!(h = handle_slot(s, in.fh, dir)))
		return -EBADF;
	handle_free(s, h);
	return 0;
}

/* FSYNC, and FSYNCDIR (r->variant). */
static int op_fsync(struct fuse_server *s, struct fuse_req *r)
{
	int dir = r->variant;
	struct fuse_fsync_in in;
	struct fs_handle *h;
	int err;

	if ((err = fuse_req_take(r, &in, sizeof(in))) < 0 ||
	    (err = handle_open(s, in.fh, dir, &h)) < 0)
		return err;
	err = (in.fsync_flags & FUSE_FSYNC_FDATASYNC) ? fdatasync(h->slot.fd) : fsync(h->slot.fd);
	return err < 0 ? -errno : 0;
}

/* close(2) in the guest: nothing is buffered here, so nothing to flush. */
static int op_flush(struct fuse_server *s, struct fuse_req *r)
{
	struct fuse_flush_in in;
	int err;

	if ((err = fuse_req_take(r, &in, sizeof(in))) < 0)
		return err;
	return handle_slot(s, in.fh, 0) ? 0 : -EBADF;
}

static int op_opendir(struct fuse_server *s, struct fuse_req *r)
{
	struct fuse_open_in in;
	struct stat st;
	int fd = node_arg(s, r, &in, sizeof(in)), err;

	if (fd < 0)
		return fd;
	if ((err = stat_fd(fd, &st)) < 0)
		return err;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if ((fd = reopen(s, fd, O_RDONLY | O_DIRECTORY)) < 0)
		return fd;
	return reply_open(s, r, fd, 1, O_RDONLY | O_DIRECTORY);
}

/*
 * READDIR, and READDIRPLUS (r->variant). The offset the guest hands back is the d_off of
 * the last entry it got, which lseek() on the directory understands, so no
 * per-handle cursor is kept: every call seeks, reads and stops at the first
 * entry that does not fit (it is read again next time).
 */
static int op_readdir(struct fuse_server *s, struct fuse_req *r)
{
	int plus = r->variant;
	struct fuse_read_in in;
	struct fs_handle *h;
	uint64_t dbuf[1024]; /* getdents64 wants 8-byte aligned records */
	size_t cap, used = 0;
	int err;

	if ((err = fuse_req_take(r, &in, sizeof(in))) < 0 ||
	    (err = handle_open(s, in.fh, 1, &h)) < 0)
		return err;
	if (in.offset > INT64_MAX)
		return -EINVAL;
	cap = in.size < r->cap ? in.size : r->cap;
	if (cap > FUSE_SERVER_MAX_WRITE)
		cap = FUSE_SERVER_MAX_WRITE;
	if (lseek(h->slot.fd, (off_t)in.offset, SEEK_SET) < 0)
		return -errno;
	for (;;) {
		ssize_t n = getdents64(h->slot.fd, dbuf, sizeof(dbuf));
		size_t pos = 0;

		if (n < 0)
			return used ? (int)used : -errno;
		if (n == 0)
			break;
		while (pos < (size_t)n) {
			const struct dirent64 *de = (const void *)((uint8_t *)dbuf + pos);
			size_t maxname = de->d_reclen - offsetof(struct dirent64, d_name);
			size_t namelen = strnlen(de->d_name, maxname);
			size_t head = plus ? FUSE_NAME_OFFSET_DIRENTPLUS : FUSE_NAME_OFFSET;
			size_t rec = FUSE_DIRENT_ALIGN(head + namelen);
			struct fuse_dirent d = {
				.ino = de->d_ino,
				.off = (uint64_t)de->d_off,
				.namelen = (uint32_t)namelen,
				.type = de->d_type,
			};

			if (rec > cap - used)
				return (int)used;
			memset(r->body + used, 0, rec);
			if (plus) {
				struct fuse_entry_out eo = { 0 };
				int dot = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..");

				/* The guest takes no reference for . and .., and
				 * nodeid 0 means "no entry data" when a lookup
				 * fails: the name is listed all the same. */
				if (!dot && lookup_name(s, h->slot.fd, de->d_name, &eo) < 0)
					memset(&eo, 0, sizeof(eo));
				memcpy(r->body + used, &eo, sizeof(eo));
				memcpy(r->body + used + sizeof(eo), &d, sizeof(d));
			} else {
				memcpy(r->body + used, &d, sizeof(d));
			}
			memcpy(r->body + used + head, de->d_name, namelen);
			used += rec;
			pos += de->d_reclen;
		}
	}
	return (int)used;
}

static int op_access(struct fuse_server *s, struct fuse_req *r)
{
	struct fuse_access_in in;
	int fd = node_arg(s, r, &in, sizeof(in));

	if (fd < 0)
		return fd;
	if (in.mask & ~(uint32_t)(R_OK | W_OK | X_OK))
		return -EINVAL;
	if (s->read_only && (in.mask & W_OK))
		return -EROFS;
	return faccessat(fd, "", (int)in.mask, AT_EMPTY_PATH | AT_EACCESS) < 0 ? -errno : 0;
}

static int op_lseek(struct fuse_server *s, struct fuse_req *r)
{
	struct fuse_lseek_in in;
	struct fuse_lseek_out lo;
	struct fs_handle *h;
	off_t off;
	int err;

	if ((err = fuse_req_take(r, &in, sizeof(in))) < 0 ||
	    (err = handle_open(s, in.fh, 0, &h)) < 0)
		return err;
	if (in.whence != SEEK_SET && in.whence != SEEK_CUR && in.whence != SEEK_END &&
	    in.whence != SEEK_DATA && in.whence != SEEK_HOLE)
		return -EINVAL;
	if ((off = lseek(h->slot.fd, (off_t)in.offset, (int)in.whence)) < 0)
		return -errno;
	lo.offset = (uint64_t)off;
	memcpy(r->body, &lo, sizeof(lo));
	return sizeof(lo);
}

static int op_fallocate(struct fuse_server *s, struct fuse_req *r)
{
	struct fuse_fallocate_in in;
	struct fs_handle *h;
	int err;

	if ((err = fuse_req_take(r, &in, sizeof(in))) < 0 ||
	    (err = handle_open(s, in.fh, 0, &h)) < 0)
		return err;
	if (in.offset > INT64_MAX || in.length > INT64_MAX)
		return -EINVAL;
	return fallocate(h->slot.fd, (int)in.mode, (off_t)in.offset, (off_t)in.length) < 0 ? -errno
											   : 0;
}

/* xattrs are not passed through: -ENOSYS makes the guest kernel stop asking
 * (and skip the security.capability lookup it would do on every write). */
static int op_nosys(struct fuse_server *s, struct fuse_req *r)
{
	(void)s;
	(void)r;
	return -ENOSYS;
}

/* ---- dispatch ---- */

struct op {
	int (*fn)(struct fuse_server *s, struct fuse_req *r);
	uint32_t reply; /* body bytes the reply needs, checked before any effect */
	int modifies;   /* refused with EROFS on a read-only share */
	int variant;    /* r->variant: the directory (or PLUS) form of the same op */
};

static const struct op ops[] = {
	[FUSE_INIT] = { op_init, FUSE_COMPAT_22_INIT_OUT_SIZE, 0, 0 },
	[FUSE_DESTROY] = { op_destroy, 0, 0, 0 },
	[FUSE_LOOKUP] = { op_lookup, sizeof(struct fuse_entry_out), 0, 0 },
	[FUSE_GETATTR] = { op_getattr, sizeof(struct fuse_attr_out), 0, 0 },
	[FUSE_SETATTR] = { op_setattr, sizeof(struct fuse_attr_out), 1, 0 },
	[FUSE_READLINK] = { op_readlink, 0, 0, 0 },
	[FUSE_SYMLINK] = { op_symlink, sizeof(struct fuse_entry_out), 1, 0 },
	[FUSE_MKNOD] = { op_mknod, sizeof(struct fuse_entry_out), 1, 0 },
	[FUSE_MKDIR] = { op_mkdir, sizeof(struct fuse_entry_out), 1, 0 },
	[FUSE_UNLINK] = { op_unlink, 0, 1, 0 },
	[FUSE_RMDIR] = { op_unlink, 0, 1, 1 },
	[FUSE_RENAME] = { op_rename, 0, 1, 0 },
	[FUSE_RENAME2] = { op_rename2, 0, 1, 0 },
	[FUSE_LINK] = { op_link, sizeof(struct fuse_entry_out), 1, 0 },
	[FUSE_OPEN] = { op_open, sizeof(struct fuse_open_out), 0, 0 },
	[FUSE_CREATE] = { op_create, sizeof(struct fuse_entry_out) + sizeof(struct fuse_open_out),
			  1, 0 },
	[FUSE_READ] = { op_read, 0, 0, 0 },
	[FUSE_WRITE] = { op_write, sizeof(struct fuse_write_out), 1, 0 },
	[FUSE_STATFS] = { op_statfs, sizeof(struct fuse_statfs_out), 0, 0 },
	[FUSE_RELEASE] = { op_release, 0, 0, 0 },
	[FUSE_FLUSH] = { op_flush, 0, 0, 0 },
	[FUSE_FSYNC] = { op_fsync, 0, 0, 0 },
	[FUSE_OPENDIR] = { op_opendir, sizeof(struct fuse_open_out), 0, 0 },
	[FUSE_READDIR] = { op_readdir, 0, 0, 0 },
	[FUSE_READDIRPLUS] = { op_readdir, 0, 0, 1 },
	[FUSE_RELEASEDIR] = { op_release, 0, 0, 1 },
	[FUSE_FSYNCDIR] = { op_fsync, 0, 0, 1 },
	[FUSE_ACCESS] = { op_access, 0, 0, 0 },
	[FUSE_LSEEK] = { op_lseek, sizeof(struct fuse_lseek_out), 0, 0 },
	[FUSE_FALLOCATE] = { op_fallocate, 0, 1, 0 },
	[FUSE_GETXATTR] = { op_nosys, 0, 0, 0 },
	[FUSE_LISTXATTR] = { op_nosys, 0, 0, 0 },
	[FUSE_SETXATTR] = { op_nosys, 0, 1, 0 },
	[FUSE_REMOVEXATTR] = { op_nosys, 0, 1, 0 },
};

long fuse_server_handle(struct fuse_server *s, const void *in, size_t in_len, void *out,
			size_t out_cap)
{
	struct fuse_req r;
	const struct op *op;
	int n = fuse_req_parse(&r, in, in_len, out, out_cap);

	if (n == -ENOBUFS)
		return 0;
	if (n < 0)
		return fuse_req_reply(out, r.h.unique, n, 0);
	if (r.h.opcode == FUSE_FORGET || r.h.opcode == FUSE_BATCH_FORGET) {
		if (s->active)
			fuse_req_forget(&r, forget_one, s);
		return 0;
	}
	if (!s->active && r.h.opcode != FUSE_INIT)
		return fuse_req_reply(out, r.h.unique, -EIO, 0);
	if (r.h.opcode >= sizeof(ops) / sizeof(ops[0]) || !ops[r.h.opcode].fn)
		return fuse_req_reply(out, r.h.unique, -ENOSYS, 0);
	op = &ops[r.h.opcode];
	if (s->read_only && op->modifies)
		return fuse_req_reply(out, r.h.unique, -EROFS, 0);
	if (r.cap < op->reply)
		return fuse_req_reply(out, r.h.unique, -ERANGE, 0);
	r.variant = op->variant;
	n = op->fn(s, &r);
	return n < 0 ? fuse_req_reply(out, r.h.unique, n, 0)
		     : fuse_req_reply(out, r.h.unique, 0, (size_t)n);
}

/* ---- snapshots (fuse_state.h holds the format) ---- */

#define SAVE_V1_MAGIC 0x6b667331u /* "kfs1": a save without a session */

/* How a restore resolves a saved path: beneath the root, no "..", no
 * symbolic link and no /proc magic link on the way, the last component
 * not followed (O_PATH | O_NOFOLLOW opens a trailing symlink itself). */
static int open_beneath(struct fuse_server *s, const char *path)
{
	struct open_how how = {
		.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS,
	};
	long fd = syscall(SYS_openat2, inode_at(s, 0)->slot.fd, path, &how, sizeof(how));

	return fd < 0 ? -errno : (int)fd;
}

/* What the kernel says our fd's path is now (renames since the lookup
 * included); its length or -1. */
static ssize_t fd_path(struct fuse_server *s, int fd, char *buf, size_t cap)
{
	char n[16];
	ssize_t l;

	fd_name(fd, n);
	l = readlinkat(proc_dir(s), n, buf, cap - 1);
	if (l <= 0 || (size_t)l >= cap - 1)
		return -1;
	buf[l] = '\0';
	return l;
}

/*
 * The path of node n relative to the share root, or 0 when it has none
 * (then it is saved stale). The kernel's name for the fd, minus the
 * root's, is only a candidate: a deleted file reads "x (deleted)", a file
 * moved out of the share has another prefix, a name may hold anything. So
 * the candidate is resolved again beneath the root exactly as a restore
 * would, and kept only when it reaches the same (st_dev, st_ino).
 */
static size_t node_path(struct fuse_server *s, const struct fs_inode *n, const char *root,
			ssize_t rlen, char *out)
{
	char link[PATH_MAX + 16];
	size_t pre = rlen == 1 ? 0 : (size_t)rlen; /* a share of "/" has children "/x" */
	struct stat st;
	ssize_t l;
	int fd;

	if (rlen <= 0 || (l = fd_path(s, n->slot.fd, link, sizeof(link))) < 0)
		return 0;
	if ((size_t)l <= pre + 1 || memcmp(link, root, pre) || link[pre] != '/' ||
	    !fuse_state_path_ok(link + pre + 1, (size_t)l - pre - 1))
		return 0;
	if ((fd = open_beneath(s, link + pre + 1)) < 0)
		return 0;
	l = stat_fd(fd, &st) < 0 || st.st_dev != n->dev || st.st_ino != n->ino
		? 0
		: l - (ssize_t)pre - 1;
	close(fd);
	if (l > 0)
		memcpy(out, link + pre + 1, (size_t)l);
	return (size_t)l;
}

static void save_nodes(struct fuse_server *s, struct fuse_state_writer *w)
{
	char root[PATH_MAX + 16], path[PATH_MAX];
	ssize_t rlen = fd_path(s, inode_at(s, 0)->slot.fd, root, sizeof(root));

	for (uint32_t i = 1; i < s->inodes.cap; i++) {
		const struct fs_inode *n = inode_at(s, i);
		struct fuse_state_node r = { .slot = i, .gen = n->slot.gen, .path = path };

		if (n->slot.fd == SLOT_FREE && !n->slot.gen)
			continue; /* a slot never used: restored as it is */
		if (n->slot.fd != SLOT_FREE) {
			r.nlookup = n->nlookup ? n->nlookup : 1;
			r.mode = n->type;
			r.dev = n->dev;
			r.ino = n->ino;
			r.path_len = n->slot.fd >= 0 ? (uint16_t)node_path(s, n, root, rlen, path)
						     : 0;
		}
		fuse_state_put_node(w, &r);
	}
}

static void save_handles(struct fuse_server *s, struct fuse_state_writer *w)
{
	for (uint32_t i = 0; i < s->handles.cap; i++) {
		const struct fs_handle *h = handle_at(s, i);
		struct fuse_state_handle r = { .slot = i, .gen = h->slot.gen };

		if (h->slot.fd == SLOT_FREE && !h->slot.gen)
			continue;
		if (h->slot.fd != SLOT_FREE) {
			/* A handle of no node (a guest that forgot it) is restored stale. */
			r.nodeid = h->nodeid ? h->nodeid : UINT64_MAX;
			r.flags = (uint32_t)h->flags;
			r.dir = (uint32_t)h->dir |
				(h->slot.fd == SLOT_STALE ? FUSE_STATE_HANDLE_STALE : 0);
		}
		fuse_state_put_handle(w, &r);
	}
}

long fuse_server_save(struct fuse_server *s, void *buf, size_t cap)
{
	struct fuse_state st = { .inode_cap = s->inodes.cap, .handle_cap = s->handles.cap };
	struct fuse_state_writer w;
	struct stat rst;
	int err;

	if ((err = stat_fd(inode_at(s, 0)->slot.fd, &rst)) < 0)
		return err;
	st.root_dev = rst.st_dev;
	st.root_ino = rst.st_ino;
	st.flags = s->active ? FUSE_STATE_ACTIVE : 0;
	fuse_state_begin(&w, buf, cap, &st);
	if (s->active) {
		save_nodes(s, &w);
		save_handles(s, &w);
	}
	return fuse_state_finish(&w);
}

/*
 * Reopen saved node n: the same kind of file at the same path beneath the
 * root, and, when the share is the very directory it was (same root
 * dev/ino: a wake, a fork of a sandbox sharing that directory), the very
 * same file. Another directory (a share moved or copied) keeps the names
 * the guest knew, whatever their inode numbers. The fd, or -ESTALE.
 */
static int node_reopen(struct fuse_server *s, const struct fuse_state_node *n, int same,
		       struct stat *st)
{
	char path[PATH_MAX];
	int fd;

	if (!n->path_len)
		return -ESTALE;
	memcpy(path, n->path, n->path_len);
	path[n->path_len] = '\0';
	if ((fd = open_beneath(s, path)) < 0)
		return -ESTALE;
	if (stat_fd(fd, st) < 0 || (st->st_mode & S_IFMT) != n->mode ||
	    (same && (st->st_dev != n->dev || st->st_ino != n->ino)) ||
	    inode_find(s, st->st_dev, st->st_ino) >= 0) {
		close(fd); /* replaced, or a second name of a node already back */
		return -ESTALE;
	}
	return fd;
}

static void restore_node(struct fuse_server *s, const struct fuse_state_node *r, int same)
{
	struct fs_inode *n = inode_at(s, r->slot);
	struct stat st;
	int fd;

	n->slot.gen = r->gen;
	if (!r->nlookup)
		return; /* free, with its generation */
	fd = node_reopen(s, r, same, &st);
	n->slot.fd = fd >= 0 ? fd : SLOT_STALE;
	n->nlookup = r->nlookup;
	n->type = r->mode;
	n->dev = fd >= 0 ? st.st_dev : 0;
	n->ino = fd >= 0 ? st.st_ino : 0;
	if (fd >= 0)
		inode_hash(s, r->slot);
}

/*
 * Reopen a handle from its node with exactly the checks the request that
 * made it applies, since the table is bytes a VMM wrote and may name any
 * flags: a directory handle only as OPENDIR opens one (a directory,
 * O_RDONLY | O_DIRECTORY); a file handle only with flags OPEN could have
 * recorded (nothing outside OPEN_FLAGS, nothing a read-only share
 * refuses: open_flags) on a regular file (open_type_check), as the file
 * is now. O_TRUNC acted at the open and is not applied again (a restore
 * must not empty a file). The open itself is the kernel's check with the
 * caller's credentials, as OPEN's is: the restore runs after the jail
 * (docs/security.md), so a file its uid may not open stays closed. The
 * fd, or -ESTALE.
 */
static int handle_reopen(struct fuse_server *s, const struct fuse_state_handle *r, int *flags)
{
	struct fs_inode *n = inode_get(s, r->nodeid);
	struct stat st;
	int fd;

	*flags = 0;
	if (!n || n->slot.fd < 0 || (r->dir & FUSE_STATE_HANDLE_STALE) ||
	    stat_fd(n->slot.fd, &st) < 0)
		return -ESTALE;
	if (r->dir & 1) {
		if (r->flags != (uint32_t)(O_RDONLY | O_DIRECTORY) || !S_ISDIR(st.st_mode))
			return -ESTALE;
		*flags = O_RDONLY | O_DIRECTORY;
		fd = reopen(s, n->slot.fd, *flags);
		return fd < 0 ? -ESTALE : fd;
	}
	if ((r->flags & ~(uint32_t)OPEN_FLAGS) || open_flags(s, r->flags, flags) < 0 ||
	    open_type_check(st.st_mode) < 0)
		return -ESTALE;
	*flags &= ~O_TRUNC;
	fd = reopen(s, n->slot.fd, *flags | O_NOCTTY);
	return fd < 0 ? -ESTALE : fd;
}

static void restore_handle(struct fuse_server *s, const struct fuse_state_handle *r)
{
	struct fs_handle *h = handle_at(s, r->slot);
	int fd, flags;

	h->slot.gen = r->gen;
	if (!r->nodeid)
		return;
	fd = handle_reopen(s, r, &flags);
	h->slot.fd = fd >= 0 ? fd : SLOT_STALE;
	h->dir = (int)(r->dir & 1);
	h->flags = flags;
	h->nodeid = r->nodeid;
}

int fuse_server_restore(struct fuse_server *s, const void *buf, size_t len, struct err *e)
{
	struct fuse_state st;
	struct stat rst;
	int err, same;

	fuse_server_reset(s);
	if (len == 4 && le_get32(buf) == SAVE_V1_MAGIC)
		return 0; /* saved before node tables were: no session */
	if ((err = fuse_state_parse(buf, len, &st, e)) < 0)
		return err;
	if (!(st.flags & FUSE_STATE_ACTIVE)) {
		fuse_state_free(&st);
		return 0;
	}
	/* The tables as large as they were, so every saved slot exists. */
	while (s->inodes.cap < st.inode_cap && (err = inodes_grow(s)) == 0)
		;
	while (err == 0 && s->handles.cap < st.handle_cap &&
	       (err = fuse_slots_grow(&s->handles)) == 0)
		;
	if (err < 0 || (err = stat_fd(inode_at(s, 0)->slot.fd, &rst)) < 0) {
		fuse_state_free(&st);
		return err_set(e, -err, "share state: %s restoring %u nodes", strerror(-err),
			       st.nnodes);
	}
	same = rst.st_dev == st.root_dev && rst.st_ino == st.root_ino;
	for (uint32_t i = 0; i < st.nnodes; i++)
		restore_node(s, &st.nodes[i], same);
	for (uint32_t i = 0; i < st.nhandles; i++)
		restore_handle(s, &st.handles[i]);
	proc_forget(s);
	fuse_slots_relink(&s->inodes);
	fuse_slots_relink(&s->handles);
	s->active = 1;
	fuse_state_free(&st);
	return 0;
}

unsigned fuse_server_stale(const struct fuse_server *s)
{
	return fuse_slots_stale(&s->inodes) + fuse_slots_stale(&s->handles);
}

/* ---- lifetime ---- */

/* Serve the directory fd (taken over in every case); name for messages. */
static int serve_dir(struct fuse_server **out, int fd, const char *name, int read_only,
		     struct err *e)
{
	struct fuse_server *s = calloc(1, sizeof(*s));
	struct stat st;
	int err;

	if (!s) {
		close(fd);
		return err_set(e, ENOMEM, "out of memory");
	}
	s->proc_fd = -1;
	fuse_slots_init(&s->inodes, sizeof(struct fs_inode), FUSE_SERVER_MAX_INODES, FUSE_ROOT_ID);
	fuse_slots_init(&s->handles, sizeof(struct fs_handle), FUSE_SERVER_MAX_HANDLES, 0);
	s->read_only = read_only;
	/* Checked now, so a host without /proc is told at setup; opened
	 * again when first used (proc_dir). */
	if (proc_dir(s) < 0) {
		close(fd);
		err = err_set(e, ENOENT, "share %s: /proc/self/fd unusable (mount /proc)", name);
		goto fail;
	}
	proc_forget(s);
	if (fstat(fd, &st) < 0) {
		err = err_set(e, errno, "share %s: %s", name, strerror(errno));
		close(fd);
		goto fail;
	}
	if (inodes_grow(s) < 0) {
		close(fd);
		err = err_set(e, ENOMEM, "out of memory");
		goto fail;
	}
	/* Slot 0, the first off the free list: the root, FUSE_ROOT_ID. */
	if (inode_insert(s, fd, &st) != 0) {
		err = err_set(e, EIO, "share %s: root node not in slot 0", name);
		goto fail;
	}
	*out = s;
	return 0;
fail:
	fuse_server_close(s);
	return err;
}

/* The share's directory as a mount of its own (lib/base/mount_clone.h);
 * *fd closed on failure. */
static int clone_share(int *fd, int read_only, const char *name, struct err *e)
{
	char what[PATH_MAX + 16];
	int cloned, err;

	snprintf(what, sizeof(what), "share %s", name);
	if ((err = mount_clone_dir(fd, read_only, what, &cloned, e)) < 0)
		close(*fd);
	return err;
}

int fuse_server_open(struct fuse_server **out, const char *root, int read_only, struct err *e)
{
	char name[PATH_MAX + 2];
	int fd, probe, err;

	snprintf(name, sizeof(name), "'%s'", root);
	/* The share root itself is the host's choice, so it may be a symlink. */
	fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return err_set(e, errno, "share %s: %s (give an existing directory)", name,
			       strerror(errno));
	if ((err = clone_share(&fd, read_only, name, e)) < 0)
		return err;
	probe = sys_openat2(fd, ".", O_PATH, 0);
	close(fd);
	if (probe < 0)
		return err_set(e, -probe, "share %s: openat2: %s (virtio-fs needs Linux 5.6+)",
			       name, strerror(-probe));
	return serve_dir(out, probe, name, read_only, e);
}

int fuse_server_open_fd(struct fuse_server **out, int dir_fd, int read_only, struct err *e)
{
	char name[32];
	int fd, err;

	snprintf(name, sizeof(name), "fd=%d", dir_fd);
	/* Our own descriptor of that very directory: "." resolves nothing,
	 * and O_DIRECTORY refuses anything else. */
	fd = sys_openat2(dir_fd, ".", O_PATH | O_DIRECTORY, 0);
	if (fd < 0)
		return err_set(e, -fd, "share %s: %s%s", name, strerror(-fd),
			       fd == -ENOSYS          ? " (virtio-fs needs Linux 5.6+)"
				       : fd == -EBADF ? " (no such open descriptor)"
						      : "");
	if ((err = clone_share(&fd, read_only, name, e)) < 0)
		return err;
	return serve_dir(out, fd, name, read_only, e);
}

int fuse_server_graft(struct fuse_server *s, const char *name, int fd)
{
	struct fs_graft *g;
	struct statx sx;
	char *copy;

	if (!name[0] || strlen(name) > FUSE_SERVER_GRAFT_NAME_MAX || strchr(name, '/') ||
	    !strcmp(name, ".") || !strcmp(name, ".."))
		return -EINVAL;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_TYPE, &sx) < 0)
		return -errno;
	if (!S_ISDIR(sx.stx_mode))
		return -ENOTDIR;
	/* A mount's root (a detached clone): ".." from it leads nowhere. */
	if (!(sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) ||
	    !(sx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
		return -EXDEV;
	g = graft_find(s, name);
	for (size_t i = 0; !g && i < FUSE_SERVER_MAX_GRAFTS; i++)
		if (!s->graft[i].name)
			g = &s->graft[i];
	if (!g)
		return -ENOSPC;
	if (!(copy = strdup(name)))
		return -ENOMEM;
	if (g->name)
		close(g->fd);
	free(g->name);
	g->name = copy;
	g->fd = fd;
	return 0;
}

int fuse_server_ungraft(struct fuse_server *s, const char *name)
{
	struct fs_graft *g = graft_find(s, name);

	if (!g)
		return -ENOENT;
	close(g->fd);
	free(g->name);
	g->name = NULL;
	return 0;
}

void fuse_server_close(struct fuse_server *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < FUSE_SERVER_MAX_GRAFTS; i++)
		if (s->graft[i].name)
			fuse_server_ungraft(s, s->graft[i].name);
	if (s->inodes.base) {
		fuse_server_reset(s);
		if (inode_at(s, 0)->slot.fd >= 0)
			close(inode_at(s, 0)->slot.fd);
	}
	if (s->proc_fd >= 0)
		close(s->proc_fd);
	fuse_slots_fini(&s->handles);
	fuse_slots_fini(&s->inodes);
	free(s->buckets);
	free(s);
}
