#include "devices/fs/fuse_remote.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "devices/fs/fuse_req.h"
#include "devices/fs/fuse_slots.h"
#include "lib/base/base64.h"
#include "lib/base/json_text.h"
#include "lib/base/utf8.h"

/* The guest caches names and attributes this long (seconds): the client
 * may change its tree behind the guest's back. */
#define ATTR_TIMEOUT 1

/* No READDIRPLUS (a listing would cost a stat line per name), no atomic
 * O_TRUNC (the guest kernel sends SETATTR(size) instead, one truncate
 * line); AUTO_INVAL_DATA drops cached pages when a stat shows the file
 * changed. */
#define INIT_FLAGS                                                                         \
	(FUSE_ASYNC_READ | FUSE_BIG_WRITES | FUSE_AUTO_INVAL_DATA | FUSE_PARALLEL_DIROPS | \
	 FUSE_MAX_PAGES)

/* A node or handle slot in use: it holds no descriptor (fuse_slots.h's
 * fd), so it is marked as a restore's stale slot would be, which the
 * table never closes. */
#define SLOT_USED FUSE_SLOT_STALE
#define NBUCKETS 4096u
/* A listing's inode numbers: "unknown" (FUSE_UNKNOWN_INO, not in older
 * headers); the guest learns the real ones by LOOKUP. */
#define UNKNOWN_INO 0xffffffffu /* the path hash's chains (a power of two) */

struct rattr {
	uint32_t mode; /* S_IFREG or S_IFDIR | permission bits */
	uint64_t size;
	uint64_t mtime;
	uint32_t mtime_ns;
};

struct rnode {
	struct fuse_slot slot; /* next: the hash chain while hashed */
	uint64_t nlookup;
	char *path; /* absolute, "/" the root */
	int hashed; /* its path names it: not unlinked, not replaced */
	struct rattr a;
};

struct rhandle {
	struct fuse_slot slot;
	uint64_t nodeid;
	int dir;
	int flags;
};

/* The request the line asked about, kept until its reply. */
struct pending {
	uint32_t opcode; /* 0: none */
	uint64_t unique, nodeid;
	uint32_t id;
	char *path; /* LOOKUP/MKDIR/CREATE/UNLINK/RMDIR: the entry; RENAME: from */
	char *to;   /* RENAME */
	uint32_t mode, flags;
	uint64_t offset, size; /* READ/WRITE/READDIR; SETATTR: the new size */
	size_t cap;            /* the reply body's room */
};

struct fuse_remote {
	int read_only;
	int active;
	uint32_t next_id;
	struct fuse_slots nodes; /* of struct rnode; slot 0 the root */
	int32_t buckets[NBUCKETS];
	struct fuse_slots handles; /* of struct rhandle */
	struct pending p;
};

/* ---- nodes ---- */

static struct rnode *node_at(const struct fuse_remote *fr, uint32_t i)
{
	return fuse_slots_at(&fr->nodes, i);
}

static struct rnode *node_get(const struct fuse_remote *fr, uint64_t nodeid)
{
	return fuse_slots_get(&fr->nodes, nodeid);
}

static uint32_t path_hash(const char *p)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	return h & (NBUCKETS - 1);
}

static void hash_add(struct fuse_remote *fr, uint32_t i)
{
	struct rnode *n = node_at(fr, i);
	uint32_t b = path_hash(n->path);

	n->slot.next = fr->buckets[b];
	fr->buckets[b] = (int32_t)i;
	n->hashed = 1;
}

static void hash_del(struct fuse_remote *fr, uint32_t i)
{
	struct rnode *n = node_at(fr, i);
	int32_t *pp = &fr->buckets[path_hash(n->path)];

	if (!n->hashed)
		return;
	while (*pp >= 0 && *pp != (int32_t)i)
		pp = &node_at(fr, (uint32_t)*pp)->slot.next;
	if (*pp >= 0)
		*pp = n->slot.next;
	n->hashed = 0;
}

static int32_t node_find(const struct fuse_remote *fr, const char *path)
{
	int32_t i = fr->buckets[path_hash(path)];

	while (i >= 0 && strcmp(node_at(fr, (uint32_t)i)->path, path) != 0)
		i = node_at(fr, (uint32_t)i)->slot.next;
	return i;
}

static void node_free(struct fuse_remote *fr, uint32_t i)
{
	struct rnode *n = node_at(fr, i);

	hash_del(fr, i);
	free(n->path);
	n->path = NULL;
	fuse_slots_release(&fr->nodes, i);
}

static void node_forget(struct fuse_remote *fr, uint64_t nodeid, uint64_t count)
{
	struct rnode *n = node_get(fr, nodeid);
	uint32_t i = (uint32_t)nodeid - fr->nodes.first_id;

	/* The root is never forgotten: the guest holds it for the mount. */
	if (!n || i == 0)
		return;
	n->nlookup = count >= n->nlookup ? 0 : n->nlookup - count;
	if (!n->nlookup)
		node_free(fr, i);
}

/* The node for path with attributes a: the one known (one more lookup;
 * replaced when its type changed behind the guest's back) or a new one.
 * Its id, or -errno. */
static int64_t node_enter(struct fuse_remote *fr, const char *path, const struct rattr *a)
{
	int32_t i = node_find(fr, path);
	struct rnode *n;
	char *copy;

	if (i > 0 && (node_at(fr, (uint32_t)i)->a.mode & S_IFMT) != (a->mode & S_IFMT)) {
		hash_del(fr, (uint32_t)i);
		i = -1;
	}
	if (i == 0)
		return -EIO; /* the root is never looked up by a name */
	if (i < 0) {
		if (!(copy = strdup(path)))
			return -ENOMEM;
		if ((i = fuse_slots_take(&fr->nodes, SLOT_USED)) < 0) {
			free(copy);
			return i;
		}
		n = node_at(fr, (uint32_t)i);
		n->nlookup = 0;
		n->path = copy;
		hash_add(fr, (uint32_t)i);
	}
	n = node_at(fr, (uint32_t)i);
	n->nlookup++;
	n->a = *a;
	return (int64_t)fuse_slots_id(&fr->nodes, (uint32_t)i);
}

/* The node at path, if one is known, no longer names it. */
static void node_unlink(struct fuse_remote *fr, const char *path)
{
	int32_t i = node_find(fr, path);

	if (i > 0)
		hash_del(fr, (uint32_t)i);
}

/* 1 when path is p (pl bytes) or lies beneath it. */
static int beneath(const char *path, const char *p, size_t pl)
{
	return strncmp(path, p, pl) == 0 && (path[pl] == '\0' || path[pl] == '/');
}

/* After a rename of from to to: what was at to (and beneath it) is no
 * longer named by its path; the nodes at from and beneath it now live
 * beneath to (one whose new path would be too long is unlinked). */
static void nodes_move(struct fuse_remote *fr, const char *from, const char *to)
{
	size_t fl = strlen(from), tl = strlen(to);

	if (strcmp(from, to) == 0)
		return; /* rename(2) of a name onto itself changes nothing */
	for (uint32_t i = 1; i < fr->nodes.cap; i++) {
		struct rnode *n = node_at(fr, i);

		if (n->slot.fd != FUSE_SLOT_FREE && n->hashed && beneath(n->path, to, tl))
			hash_del(fr, i);
	}
	for (uint32_t i = 1; i < fr->nodes.cap; i++) {
		struct rnode *n = node_at(fr, i);
		size_t pl, nl;
		char *np;

		if (n->slot.fd == FUSE_SLOT_FREE || !n->hashed || !beneath(n->path, from, fl))
			continue;
		hash_del(fr, i);
		pl = strlen(n->path);
		nl = tl + (pl - fl);
		if (nl > FS_REMOTE_PATH_MAX || !(np = malloc(nl + 1)))
			continue;
		memcpy(np, to, tl);
		memcpy(np + tl, n->path + fl, pl - fl + 1);
		free(n->path);
		n->path = np;
		hash_add(fr, i);
	}
}

/* ---- handles ---- */

static struct rhandle *handle_get(struct fuse_remote *fr, uint64_t fh, int dir)
{
	struct rhandle *h = fuse_slots_get(&fr->handles, fh);

	return h && h->dir == dir ? h : NULL;
}

/* The node an open handle is of: NULL when the handle is made up. */
static struct rnode *handle_node(struct fuse_remote *fr, uint64_t fh, int dir)
{
	struct rhandle *h = handle_get(fr, fh, dir);

	return h ? node_get(fr, h->nodeid) : NULL;
}

/* Take the argument struct `in` (size bytes, its file handle first: the
 * read, write and readdir ones) and find the handle's node: 0, -EINVAL
 * (short), -EBADF (no such open handle). */
static int handle_arg(struct fuse_remote *fr, struct fuse_req *r, void *in, size_t size, int dir,
		      struct rnode **n)
{
	uint64_t fh;
	int err = fuse_req_take(r, in, size);

	if (err < 0)
		return err;
	memcpy(&fh, in, sizeof(fh));
	return (*n = handle_node(fr, fh, dir)) ? 0 : -EBADF;
}

static int64_t handle_new(struct fuse_remote *fr, uint64_t nodeid, int dir, int flags)
{
	int32_t i = fuse_slots_take(&fr->handles, SLOT_USED);
	struct rhandle *h;

	if (i < 0)
		return i;
	h = fuse_slots_at(&fr->handles, (uint32_t)i);
	h->nodeid = nodeid;
	h->dir = dir;
	h->flags = flags;
	return (int64_t)fuse_slots_id(&fr->handles, (uint32_t)i);
}

static void handle_free(struct fuse_remote *fr, uint64_t fh)
{
	fuse_slots_release(&fr->handles, (uint32_t)fh - fr->handles.first_id);
}

/* ---- session ---- */

int fuse_remote_new(struct fuse_remote **out, int read_only)
{
	struct fuse_remote *fr = calloc(1, sizeof(*fr));
	struct rnode *root;
	int32_t i;

	if (!fr)
		return -ENOMEM;
	fr->read_only = read_only;
	for (uint32_t b = 0; b < NBUCKETS; b++)
		fr->buckets[b] = -1;
	fuse_slots_init(&fr->nodes, sizeof(struct rnode), FUSE_REMOTE_MAX_NODES, FUSE_ROOT_ID);
	/* fh 0 is never valid: a zeroed argument names no handle. */
	fuse_slots_init(&fr->handles, sizeof(struct rhandle), FUSE_REMOTE_MAX_HANDLES, 1);
	if ((i = fuse_slots_take(&fr->nodes, SLOT_USED)) != 0) {
		fuse_remote_free(fr);
		return -ENOMEM;
	}
	root = node_at(fr, 0);
	root->nlookup = 1;
	root->a.mode = S_IFDIR | 0755;
	if (!(root->path = strdup("/"))) {
		fuse_remote_free(fr);
		return -ENOMEM;
	}
	hash_add(fr, 0);
	*out = fr;
	return 0;
}

static void pending_clear(struct fuse_remote *fr)
{
	free(fr->p.path);
	free(fr->p.to);
	memset(&fr->p, 0, sizeof(fr->p));
}

void fuse_remote_reset(struct fuse_remote *fr)
{
	for (uint32_t i = 0; i < fr->handles.cap; i++)
		if (((struct fuse_slot *)fuse_slots_at(&fr->handles, i))->fd != FUSE_SLOT_FREE)
			fuse_slots_release(&fr->handles, i);
	for (uint32_t i = 1; i < fr->nodes.cap; i++)
		if (node_at(fr, i)->slot.fd != FUSE_SLOT_FREE)
			node_free(fr, i);
	pending_clear(fr);
	fr->active = 0;
}

void fuse_remote_free(struct fuse_remote *fr)
{
	if (!fr)
		return;
	fuse_remote_reset(fr);
	if (fr->nodes.cap)
		free(node_at(fr, 0)->path);
	fuse_slots_fini(&fr->nodes);
	fuse_slots_fini(&fr->handles);
	free(fr);
}

uint32_t fuse_remote_pending_id(const struct fuse_remote *fr)
{
	return fr->p.id;
}

static unsigned used(const struct fuse_slots *t)
{
	unsigned n = 0;

	for (uint32_t i = 0; i < t->cap; i++)
		n += ((struct fuse_slot *)fuse_slots_at(t, i))->fd != FUSE_SLOT_FREE;
	return n;
}

unsigned fuse_remote_nodes(const struct fuse_remote *fr)
{
	return used(&fr->nodes);
}

unsigned fuse_remote_handles(const struct fuse_remote *fr)
{
	return used(&fr->handles);
}

/* ---- attributes ---- */

static void fill_attr(struct fuse_attr *fa, uint64_t nodeid, const struct rattr *a)
{
	memset(fa, 0, sizeof(*fa));
	fa->ino = nodeid;
	fa->size = a->size;
	fa->blocks = (a->size + 511) / 512;
	fa->atime = fa->mtime = fa->ctime = a->mtime;
	fa->atimensec = fa->mtimensec = fa->ctimensec = a->mtime_ns;
	fa->mode = a->mode;
	fa->nlink = S_ISDIR(a->mode) ? 2 : 1;
	fa->blksize = 4096;
}

static int reply_attr(struct fuse_req *r, uint64_t nodeid, const struct rattr *a)
{
	struct fuse_attr_out ao = { .attr_valid = ATTR_TIMEOUT };

	fill_attr(&ao.attr, nodeid, a);
	memcpy(r->body, &ao, sizeof(ao));
	return sizeof(ao);
}

static void fill_entry(struct fuse_entry_out *eo, uint64_t nodeid, const struct rattr *a)
{
	memset(eo, 0, sizeof(*eo));
	eo->nodeid = nodeid;
	eo->entry_valid = ATTR_TIMEOUT;
	eo->attr_valid = ATTR_TIMEOUT;
	fill_attr(&eo->attr, nodeid, a);
}

/* ---- request lines ---- */

/* parent's path + "/" + name, checked against the protocol's bounds. */
static int child_path(const struct rnode *parent, const char *name, char **out)
{
	size_t pl = strlen(parent->path), nl = strlen(name);
	int root = pl == 1;
	char *p;

	if (nl > FS_REMOTE_NAME_MAX || (root ? 0 : pl) + 1 + nl > FS_REMOTE_PATH_MAX)
		return -ENAMETOOLONG;
	/* A JSON string is UTF-8: a name that is not cannot be asked about. */
	if (!utf8_valid((const uint8_t *)name, nl))
		return -EINVAL;
	if (!(p = malloc((root ? 0 : pl) + nl + 2)))
		return -ENOMEM;
	memcpy(p, parent->path, root ? 0 : pl);
	p[root ? 0 : pl] = '/';
	memcpy(p + (root ? 0 : pl) + 1, name, nl + 1);
	*out = p;
	return 0;
}

/* The line for op on path with fields (an object, consumed; NULL: its
 * making failed), into line: 0 and *line_len, or -errno. */
static int make_line(struct fuse_remote *fr, const char *op, const char *path, json_t *fields,
		     char *line, size_t *line_len)
{
	json_t *o = fields;
	size_t n = 0;
	char *text = NULL;
	int err = 0;

	if (!o)
		return -ENOMEM; /* json_object() or json_pack() failed */
	if (++fr->next_id == 0)
		fr->next_id = 1; /* ids are 1..2^32-1 */
	if (json_object_set_new(o, "id", json_integer(fr->next_id)) ||
	    json_object_set_new(o, "op", json_string(op)) ||
	    json_object_set_new(o, "path", json_string(path)))
		err = -ENOMEM;
	/* The bounds of every field keep the line below the maximum. */
	if (!err && !(text = json_text(o, JSON_COMPACT)))
		err = -ENOMEM;
	if (!err && (n = strlen(text)) > FS_REMOTE_LINE_MAX - 1)
		err = -EINVAL;
	if (!err) {
		memcpy(line, text, n);
		line[n++] = '\n';
		*line_len = n;
	}
	free(text);
	json_decref(o);
	if (!err)
		fr->p.id = fr->next_id;
	return err;
}

/* Remember what a line asks about (path: owned, handed over). */
static void pend(struct fuse_remote *fr, const struct fuse_req *r, char *path)
{
	fr->p.opcode = r->h.opcode;
	fr->p.unique = r->h.unique;
	fr->p.nodeid = r->h.nodeid;
	fr->p.path = path;
}

/* Ask op about path (owned: kept in the pending request). */
static int ask(struct fuse_remote *fr, const struct fuse_req *r, const char *op, char *path,
	       json_t *fields, char *line, size_t *line_len)
{
	int err = make_line(fr, op, path, fields, line, line_len);

	if (err < 0) {
		free(path);
		*line_len = 0;
		return err;
	}
	pend(fr, r, path);
	return 0;
}

/* ---- requests ---- */

static int op_entry_name(struct fuse_remote *fr, struct fuse_req *r, char **path)
{
	struct rnode *parent = node_get(fr, r->h.nodeid);
	const char *name;
	int err;

	if (!parent)
		return -ENOENT;
	if (!S_ISDIR(parent->a.mode))
		return -ENOTDIR;
	if ((err = fuse_req_name(r, &name)) < 0)
		return err;
	return child_path(parent, name, path);
}

static int begin_lookup(struct fuse_remote *fr, struct fuse_req *r, char *line, size_t *ll)
{
	char *path;
	int err = op_entry_name(fr, r, &path);

	return err < 0 ? err : ask(fr, r, "stat", path, json_object(), line, ll);
}

static int begin_getattr(struct fuse_remote *fr, struct fuse_req *r, char *line, size_t *ll)
{
	struct rnode *n = node_get(fr, r->h.nodeid);
	char *path;

	if (!n)
		return -ENOENT;
	if (!(path = strdup(n->path)))
		return -ENOMEM;
	return ask(fr, r, "stat", path, json_object(), line, ll);
}

static int begin_setattr(struct fuse_remote *fr, struct fuse_req *r, char *line, size_t *ll)
{
	struct fuse_setattr_in in;
	struct rnode *n = node_get(fr, r->h.nodeid);
	char *path;
	int err;

	if (!n)
		return -ENOENT;
	if ((err = fuse_req_take(r, &in, sizeof(in))) < 0)
		return err;
	/* Modes, owners and times are not the protocol's: the guest gets the
	 * attributes as they are. */
	if (!(in.valid & FATTR_SIZE))
		return reply_attr(r, r->h.nodeid, &n->a);
	if (S_ISDIR(n->a.mode))
		return -EISDIR;
	if (in.size > INT64_MAX)
		return -EFBIG;
	if (!(path = strdup(n->path)))
		return -ENOMEM;
	fr->p.size = in.size;
	return ask(fr, r, "truncate", path, json_pack("{sI}", "size", (json_int_t)in.size), line,
		   ll);
}

static int begin_mkdir(struct fuse_remote *fr, struct fuse_req *r, char *line, size_t *ll)
{
	struct fuse_mkdir_in in;
	char *path;
	int err;

	if ((err = fuse_req_take(r, &in, sizeof(in))) < 0 ||
	    (err = op_entry_name(fr, r, &path)) < 0)
		return err;
	fr->p.mode = in.mode & 07777;
	return ask(fr, r, "mkdir", path, json_pack("{sI}", "mode", (json_int_t)fr->p.mode), line,
		   ll);
}

/* CREATE, and MKNOD of a regular file (flags -1: no handle wanted). */
static int begin_create(struct fuse_remote *fr, struct fuse_req *r, char *line, size_t *ll)
{
	uint32_t mode, flags = 0;
	char *path;
	int err;

	if (r->h.opcode == FUSE_CREATE) {
		struct fuse_create_in in;

		if ((err = fuse_req_take(r, &in, sizeof(in))) < 0)
			return err;
		mode = in.mode;
		flags = in.flags;
	} else {
		struct fuse_mknod_in in;

		if ((err = fuse_req_take(r, &in, sizeof(in))) < 0)
			return err;
		mode = in.mode;
		if ((mode & S_IFMT) != S_IFREG && (mode & S_IFMT) != 0)
			return -EPERM; /* the protocol has regular files and directories */
	}
	if ((err = op_entry_name(fr, r, &path)) < 0)
		return err;
	/* No set-id files: the client may store them on a host. */
	fr->p.mode = mode & 07777 & ~(uint32_t)(S_ISUID | S_ISGID);
	fr->p.flags = flags;
	return ask(fr, r, "create", path, json_pack("{sI}", "mode", (json_int_t)fr->p.mode), line,
		   ll);
}

static int begin_remove(struct fuse_remote *fr, struct fuse_req *r, char *line, size_t *ll)
{
	char *path;
	int err = op_entry_name(fr, r, &path);

	if (err < 0)
		return err;
	return ask(fr, r, r->h.opcode == FUSE_RMDIR ? "rmdir" : "unlink", path, json_object(), line,
		   ll);
}

static int begin_rename(struct fuse_remote *fr, struct fuse_req *r, char *line, size_t *ll)
{
	struct fuse_rename_in in;
	struct rnode *newdir;
	const char *newname;
	char *from = NULL, *to = NULL;
	int err;

	if ((err = fuse_req_take(r, &in, sizeof(in))) < 0 ||
	    (err = op_entry_name(fr, r, &from)) < 0)
		return err;
	if (!(newdir = node_get(fr, in.newdir)))
		err = -ENOENT;
	else if (!S_ISDIR(newdir->a.mode))
		err = -ENOTDIR;
	else if ((err = fuse_req_name(r, &newname)) == 0)
		err = child_path(newdir, newname, &to);
	/* A directory into itself, or anything onto its own ancestor (which
	 * is never empty): refused as rename(2) does, so the client need not
	 * know the rules and the node table never moves a parent's nodes
	 * beneath its child. */
	if (!err && strncmp(to, from, strlen(from)) == 0 && to[strlen(from)] == '/')
		err = -EINVAL;
	else if (!err && strncmp(from, to, strlen(to)) == 0 && from[strlen(to)] == '/')
		err = -ENOTEMPTY;
	if (err < 0) {
		free(from);
		free(to);
		return err;
	}
	fr->p.to = to;
	return ask(fr, r, "rename", from, json_pack("{ss}", "to", to), line, ll);
}

static int begin_open(struct fuse_remote *fr, struct fuse_req *r, int dir)
{
	struct fuse_open_in in;
	struct fuse_open_out oo = { 0 };
	struct rnode *n = node_get(fr, r->h.nodeid);
	int64_t fh;
	int err;

	if (!n)
		return -ENOENT;
	if ((err = fuse_req_take(r, &in, sizeof(in))) < 0)
		return err;
	if (dir && !S_ISDIR(n->a.mode))
		return -ENOTDIR;
	if (!dir && S_ISDIR(n->a.mode))
		return -EISDIR;
	if (fr->read_only && ((in.flags & O_ACCMODE) != O_RDONLY || (in.flags & O_TRUNC)))
		return -EROFS;
	if ((fh = handle_new(fr, r->h.nodeid, dir, (int)in.flags)) < 0)
		return (int)fh;
	oo.fh = (uint64_t)fh;
	memcpy(r->body, &oo, sizeof(oo));
	return sizeof(oo);
}

static int begin_read(struct fuse_remote *fr, struct fuse_req *r, char *line, size_t *ll)
{
	struct fuse_read_in in;
	struct rnode *n;
	char *path;
	int err;

	if ((err = handle_arg(fr, r, &in, sizeof(in), 0, &n)) < 0)
		return err;
	if (in.offset > INT64_MAX)
		return -EINVAL;
	fr->p.size = in.size;
	if (fr->p.size > r->cap)
		fr->p.size = r->cap;
	if (fr->p.size > FS_REMOTE_IO_MAX)
		fr->p.size = FS_REMOTE_IO_MAX;
	if (!fr->p.size)
		return 0;
	if (!(path = strdup(n->path)))
		return -ENOMEM;
	fr->p.offset = in.offset;
	return ask(fr, r, "read", path,
		   json_pack("{sIsI}", "offset", (json_int_t)in.offset, "size",
			     (json_int_t)fr->p.size),
		   line, ll);
}

static int begin_write(struct fuse_remote *fr, struct fuse_req *r, char *line, size_t *ll)
{
	struct fuse_write_in in;
	struct rnode *n;
	size_t size;
	char *path, *b64;
	json_t *f;
	int err;

	if ((err = handle_arg(fr, r, &in, sizeof(in), 0, &n)) < 0)
		return err;
	if (in.size > r->alen)
		return -EINVAL; /* the data the guest claims is not there */
	if (in.offset > INT64_MAX)
		return -EINVAL;
	/* max_write is FS_REMOTE_IO_MAX: more is a short write. */
	size = in.size < FS_REMOTE_IO_MAX ? in.size : FS_REMOTE_IO_MAX;
	if (!(b64 = malloc(base64_encoded_size(size))))
		return -ENOMEM;
	base64_encode(r->arg, size, b64);
	f = json_pack("{sIss}", "offset", (json_int_t)in.offset, "data", b64);
	free(b64);
	if (!(path = strdup(n->path))) {
		json_decref(f);
		return -ENOMEM;
	}
	fr->p.offset = in.offset;
	fr->p.size = size;
	return ask(fr, r, "write", path, f, line, ll);
}

static int begin_readdir(struct fuse_remote *fr, struct fuse_req *r, char *line, size_t *ll)
{
	struct fuse_read_in in;
	struct rnode *n;
	char *path;
	int err;

	if ((err = handle_arg(fr, r, &in, sizeof(in), 1, &n)) < 0)
		return err;
	/* Offsets are positions in the listing: "." 1, ".." 2, the client's
	 * entries from 3 (each reply is the listing again). */
	if (in.offset > FS_REMOTE_ENTRIES_MAX + 2)
		return 0;
	if (!(path = strdup(n->path)))
		return -ENOMEM;
	fr->p.offset = in.offset;
	fr->p.cap = in.size < r->cap ? in.size : r->cap;
	return ask(fr, r, "readdir", path, json_object(), line, ll);
}

static int begin_release(struct fuse_remote *fr, struct fuse_req *r)
{
	struct fuse_release_in in;
	int err;

	if ((err = fuse_req_take(r, &in, sizeof(in))) < 0)
		return err;
	if (!handle_get(fr, in.fh, r->h.opcode == FUSE_RELEASEDIR))
		return -EBADF;
	handle_free(fr, in.fh);
	return 0;
}

/* FLUSH, FSYNC, FSYNCDIR: nothing is buffered here. */
static int begin_sync(struct fuse_remote *fr, struct fuse_req *r)
{
	uint64_t fh; /* the first field of fuse_flush_in and fuse_fsync_in */
	int err;

	if ((err = fuse_req_take(r, &fh, sizeof(fh))) < 0)
		return err;
	return handle_get(fr, fh, r->h.opcode == FUSE_FSYNCDIR) ? 0 : -EBADF;
}

static int begin_statfs(struct fuse_req *r)
{
	struct fuse_statfs_out so = { 0 };

	if (r->cap < sizeof(so))
		return -ERANGE;
	/* The client's capacity is not the protocol's: a large free space. */
	so.st.blocks = so.st.bfree = so.st.bavail = 1ull << 28;
	so.st.files = so.st.ffree = FUSE_REMOTE_MAX_NODES;
	so.st.bsize = so.st.frsize = 4096;
	so.st.namelen = FS_REMOTE_NAME_MAX;
	memcpy(r->body, &so, sizeof(so));
	return sizeof(so);
}

static int begin_access(struct fuse_remote *fr, struct fuse_req *r)
{
	struct fuse_access_in in;
	int err;

	if (!node_get(fr, r->h.nodeid))
		return -ENOENT;
	if ((err = fuse_req_take(r, &in, sizeof(in))) < 0)
		return err;
	return fr->read_only && (in.mask & W_OK) ? -EROFS : 0;
}

/* fuse_req_forget's callback. */
static void forget_one(void *ctx, uint64_t nodeid, uint64_t nlookup)
{
	node_forget(ctx, nodeid, nlookup);
}

static bool modifies(uint32_t opcode)
{
	switch (opcode) {
	case FUSE_SETATTR:
	case FUSE_SYMLINK:
	case FUSE_MKNOD:
	case FUSE_MKDIR:
	case FUSE_UNLINK:
	case FUSE_RMDIR:
	case FUSE_RENAME:
	case FUSE_RENAME2:
	case FUSE_LINK:
	case FUSE_CREATE:
	case FUSE_WRITE:
	case FUSE_FALLOCATE:
	case FUSE_SETXATTR:
	case FUSE_REMOVEXATTR:
		return true;
	default:
		return false;
	}
}

/* Body bytes the reply needs, checked before the request has any effect. */
static size_t reply_need(uint32_t opcode)
{
	switch (opcode) {
	case FUSE_LOOKUP:
	case FUSE_MKDIR:
	case FUSE_MKNOD:
		return sizeof(struct fuse_entry_out);
	case FUSE_CREATE:
		return sizeof(struct fuse_entry_out) + sizeof(struct fuse_open_out);
	case FUSE_GETATTR:
	case FUSE_SETATTR:
		return sizeof(struct fuse_attr_out);
	case FUSE_OPEN:
	case FUSE_OPENDIR:
		return sizeof(struct fuse_open_out);
	case FUSE_WRITE:
		return sizeof(struct fuse_write_out);
	default:
		return 0;
	}
}

static int dispatch(struct fuse_remote *fr, struct fuse_req *r, char *line, size_t *ll)
{
	switch (r->h.opcode) {
	case FUSE_LOOKUP:
		return begin_lookup(fr, r, line, ll);
	case FUSE_GETATTR:
		return begin_getattr(fr, r, line, ll);
	case FUSE_SETATTR:
		return begin_setattr(fr, r, line, ll);
	case FUSE_MKDIR:
		return begin_mkdir(fr, r, line, ll);
	case FUSE_MKNOD:
	case FUSE_CREATE:
		return begin_create(fr, r, line, ll);
	case FUSE_UNLINK:
	case FUSE_RMDIR:
		return begin_remove(fr, r, line, ll);
	case FUSE_RENAME:
		return begin_rename(fr, r, line, ll);
	case FUSE_OPEN:
		return begin_open(fr, r, 0);
	case FUSE_OPENDIR:
		return begin_open(fr, r, 1);
	case FUSE_READ:
		return begin_read(fr, r, line, ll);
	case FUSE_WRITE:
		return begin_write(fr, r, line, ll);
	case FUSE_READDIR:
		return begin_readdir(fr, r, line, ll);
	case FUSE_RELEASE:
	case FUSE_RELEASEDIR:
		return begin_release(fr, r);
	case FUSE_FLUSH:
	case FUSE_FSYNC:
	case FUSE_FSYNCDIR:
		return begin_sync(fr, r);
	case FUSE_STATFS:
		return begin_statfs(r);
	case FUSE_ACCESS:
		return begin_access(fr, r);
	case FUSE_DESTROY:
		fuse_remote_reset(fr);
		return 0;
	default:
		/* RENAME2 (flags the protocol cannot ask for: the guest kernel
		 * then answers EINVAL itself), links, xattrs, locks... */
		return -ENOSYS;
	}
}

long fuse_remote_begin(struct fuse_remote *fr, const void *in, size_t in_len, void *out,
		       size_t out_cap, char *line, size_t *line_len)
{
	struct fuse_req r;
	int n = fuse_req_parse(&r, in, in_len, out, out_cap);

	*line_len = 0;
	pending_clear(fr);
	if (n == -ENOBUFS)
		return 0;
	if (n < 0)
		return fuse_req_reply(out, r.h.unique, n, 0);
	if (r.h.opcode == FUSE_FORGET || r.h.opcode == FUSE_BATCH_FORGET) {
		if (fr->active)
			fuse_req_forget(&r, forget_one, fr);
		return 0;
	}
	if (r.h.opcode == FUSE_INIT) {
		n = fuse_req_init(&r, INIT_FLAGS, FS_REMOTE_IO_MAX);
		if (n >= 0) {
			/* A new mount (or a driver reset without DESTROY) starts clean. */
			fuse_remote_reset(fr);
			fr->active = 1;
		}
	} else if (!fr->active) {
		n = -EIO;
	} else if (fr->read_only && modifies(r.h.opcode)) {
		n = -EROFS;
	} else if (r.cap < reply_need(r.h.opcode)) {
		n = -ERANGE;
	} else {
		n = dispatch(fr, &r, line, line_len);
	}
	if (*line_len)
		return 0;
	return n < 0 ? fuse_req_reply(out, r.h.unique, n, 0)
		     : fuse_req_reply(out, r.h.unique, 0, (size_t)n);
}

/* ---- replies ---- */

static const struct {
	const char *name;
	int err;
} errnames[] = {
	{ "ENOENT", ENOENT },
	{ "EEXIST", EEXIST },
	{ "ENOTDIR", ENOTDIR },
	{ "EISDIR", EISDIR },
	{ "ENOTEMPTY", ENOTEMPTY },
	{ "EACCES", EACCES },
	{ "EPERM", EPERM },
	{ "EROFS", EROFS },
	{ "ENOSPC", ENOSPC },
	{ "EINVAL", EINVAL },
	{ "EIO", EIO },
	{ "ENOSYS", ENOSYS },
	{ "EFBIG", EFBIG },
	{ "ENAMETOOLONG", ENAMETOOLONG },
};

/* A u64 field within [0, max]: 0, or -1 (absent, not an integer, out of
 * bounds). */
static int get_u64(json_t *o, const char *key, uint64_t max, uint64_t *v)
{
	json_t *j = json_object_get(o, key);

	if (!json_is_integer(j) || json_integer_value(j) < 0 ||
	    (uint64_t)json_integer_value(j) > max)
		return -1;
	*v = (uint64_t)json_integer_value(j);
	return 0;
}

/* "file" or "dir": S_IFREG or S_IFDIR, else 0. */
static uint32_t get_type(json_t *o)
{
	const char *t = json_string_value(json_object_get(o, "type"));

	if (!t)
		return 0;
	return !strcmp(t, "file") ? S_IFREG : !strcmp(t, "dir") ? S_IFDIR : 0;
}

static int parse_stat(json_t *o, struct rattr *a, struct err *e)
{
	json_t *mode = json_object_get(o, "mode"), *mtime = json_object_get(o, "mtime");
	uint32_t type = get_type(o);
	uint64_t m = 0;

	memset(a, 0, sizeof(*a));
	if (!type)
		return err_set(e, EIO, "stat: \"type\" must be \"file\" or \"dir\"");
	if (get_u64(o, "size", INT64_MAX, &a->size))
		return err_set(e, EIO, "stat: \"size\" must be an integer from 0 to 2^63-1");
	if (mode && get_u64(o, "mode", 07777, &m))
		return err_set(e, EIO, "stat: \"mode\" must be an integer from 0 to 0o7777");
	a->mode = type | (uint32_t)(mode ? m : type == S_IFDIR ? 0755 : 0644);
	if (mtime) {
		double t = json_number_value(mtime);

		/* 2^53: a double's integers are exact below it. */
		if (!json_is_number(mtime) || !isfinite(t) || t < 0 || t > 9007199254740992.0)
			return err_set(e, EIO, "stat: \"mtime\" must be a number of seconds >= 0");
		a->mtime = (uint64_t)t;
		a->mtime_ns = (uint32_t)((t - (double)a->mtime) * 1e9);
		if (a->mtime_ns > 999999999u)
			a->mtime_ns = 999999999u;
	}
	return 0;
}

static int finish_entry(struct fuse_remote *fr, struct fuse_req *r, const struct rattr *a)
{
	struct fuse_entry_out eo;
	int64_t id = node_enter(fr, fr->p.path, a);

	if (id < 0)
		return (int)id;
	fill_entry(&eo, (uint64_t)id, a);
	memcpy(r->body, &eo, sizeof(eo));
	return sizeof(eo);
}

static int finish_getattr(struct fuse_remote *fr, struct fuse_req *r, const struct rattr *a)
{
	struct rnode *n = node_get(fr, fr->p.nodeid);

	if (!n)
		return -ENOENT;
	if ((n->a.mode & S_IFMT) != (a->mode & S_IFMT)) {
		/* Replaced by the other kind: the guest must look it up again. */
		if (fr->p.nodeid != FUSE_ROOT_ID)
			hash_del(fr, (uint32_t)fr->p.nodeid - fr->nodes.first_id);
		return -ESTALE;
	}
	n->a = *a;
	return reply_attr(r, fr->p.nodeid, a);
}

static int finish_create(struct fuse_remote *fr, struct fuse_req *r)
{
	struct rattr a = { .mode = S_IFREG | fr->p.mode };
	struct fuse_open_out oo = { 0 };
	struct fuse_entry_out eo;
	int64_t id = node_enter(fr, fr->p.path, &a), fh = 0;

	if (id < 0)
		return (int)id;
	if (fr->p.opcode == FUSE_CREATE &&
	    (fh = handle_new(fr, (uint64_t)id, 0, (int)fr->p.flags)) < 0) {
		node_forget(fr, (uint64_t)id, 1);
		return (int)fh;
	}
	fill_entry(&eo, (uint64_t)id, &a);
	memcpy(r->body, &eo, sizeof(eo));
	if (fr->p.opcode == FUSE_MKNOD)
		return sizeof(eo);
	oo.fh = (uint64_t)fh;
	memcpy(r->body + sizeof(eo), &oo, sizeof(oo));
	return sizeof(eo) + sizeof(oo);
}

static int finish_read(struct fuse_remote *fr, struct fuse_req *r, json_t *o, struct err *e)
{
	json_t *d = json_object_get(o, "data");
	const char *s = json_string_value(d);
	size_t dl = json_string_length(d), want, got;

	/* The decoded length, known before anything is written: at most the
	 * size asked (which the reply's room holds). */
	if (!s || dl % 4)
		return err_set(e, EIO, "read: \"data\" must be base64 (padded)");
	want = dl / 4 * 3 - (dl && s[dl - 1] == '=') - (dl > 1 && s[dl - 2] == '=');
	if (want > fr->p.size || base64_decode(s, dl, r->body, &got) || got != want)
		return err_set(e, EIO,
			       "read: \"data\" is not canonical base64 of at most %llu bytes",
			       (unsigned long long)fr->p.size);
	return (int)got;
}

static int finish_write(struct fuse_remote *fr, struct fuse_req *r, json_t *o, struct err *e)
{
	struct fuse_write_out wo = { 0 };
	struct rnode *n = node_get(fr, fr->p.nodeid);
	uint64_t size;

	if (get_u64(o, "size", fr->p.size, &size))
		return err_set(e, EIO, "write: \"size\" must be an integer from 0 to %llu",
			       (unsigned long long)fr->p.size);
	if (n && size && fr->p.offset + size > n->a.size)
		n->a.size = fr->p.offset + size;
	wo.size = (uint32_t)size;
	memcpy(r->body, &wo, sizeof(wo));
	return sizeof(wo);
}

/* One directory entry at r->body + *used when it fits: 0, or 1 when full. */
static int put_dirent(struct fuse_req *r, size_t cap, size_t *used, const char *name, uint64_t off,
		      uint32_t type)
{
	size_t nl = strlen(name), rec = FUSE_DIRENT_ALIGN(FUSE_NAME_OFFSET + nl);
	struct fuse_dirent d = {
		.ino = UNKNOWN_INO, .off = off, .namelen = (uint32_t)nl, .type = type
	};

	if (rec > cap - *used)
		return 1;
	memset(r->body + *used, 0, rec);
	memcpy(r->body + *used, &d, sizeof(d));
	memcpy(r->body + *used + FUSE_NAME_OFFSET, name, nl);
	*used += rec;
	return 0;
}

static int finish_readdir(struct fuse_remote *fr, struct fuse_req *r, json_t *o, struct err *e)
{
	json_t *list = json_object_get(o, "entries"), *ent;
	size_t used = 0, cap = fr->p.cap, i;

	if (!json_is_array(list) || json_array_size(list) > FS_REMOTE_ENTRIES_MAX)
		return err_set(e, EIO, "readdir: \"entries\" must be an array of at most %u",
			       FS_REMOTE_ENTRIES_MAX);
	/* Every entry is checked, not only the ones this reply lists. */
	json_array_foreach(list, i, ent)
	{
		const char *name = json_string_value(json_object_get(ent, "name"));

		if (!json_is_object(ent) || !get_type(ent))
			return err_set(e, EIO,
				       "readdir: entry %zu needs \"type\" \"file\" or \"dir\"", i);
		if (!name || strlen(name) != json_string_length(json_object_get(ent, "name")) ||
		    fuse_name_check(name) < 0)
			return err_set(e, EIO,
				       "readdir: entry %zu's \"name\" is not one path component",
				       i);
	}
	if (fr->p.offset < 1 && put_dirent(r, cap, &used, ".", 1, DT_DIR))
		return (int)used;
	if (fr->p.offset < 2 && put_dirent(r, cap, &used, "..", 2, DT_DIR))
		return (int)used;
	for (i = fr->p.offset < 3 ? 0 : fr->p.offset - 2; i < json_array_size(list); i++) {
		ent = json_array_get(list, i);
		if (put_dirent(r, cap, &used, json_string_value(json_object_get(ent, "name")),
			       i + 3, get_type(ent) == S_IFDIR ? DT_DIR : DT_REG))
			break;
	}
	return (int)used;
}

/* What the op's ok reply means: the reply's body length or -errno. */
static int finish_ok(struct fuse_remote *fr, struct fuse_req *r, json_t *o, struct err *e)
{
	struct rnode *n;
	struct rattr a;
	int err;

	switch (fr->p.opcode) {
	case FUSE_LOOKUP:
	case FUSE_GETATTR:
		if ((err = parse_stat(o, &a, e)) < 0)
			return err;
		return fr->p.opcode == FUSE_LOOKUP ? finish_entry(fr, r, &a)
						   : finish_getattr(fr, r, &a);
	case FUSE_SETATTR:
		if (!(n = node_get(fr, fr->p.nodeid)))
			return -ENOENT;
		n->a.size = fr->p.size;
		return reply_attr(r, fr->p.nodeid, &n->a);
	case FUSE_MKDIR:
		a = (struct rattr){ .mode = S_IFDIR | fr->p.mode };
		return finish_entry(fr, r, &a);
	case FUSE_CREATE:
	case FUSE_MKNOD:
		return finish_create(fr, r);
	case FUSE_UNLINK:
	case FUSE_RMDIR:
		node_unlink(fr, fr->p.path);
		return 0;
	case FUSE_RENAME:
		nodes_move(fr, fr->p.path, fr->p.to);
		return 0;
	case FUSE_READ:
		return finish_read(fr, r, o, e);
	case FUSE_WRITE:
		return finish_write(fr, r, o, e);
	case FUSE_READDIR:
		return finish_readdir(fr, r, o, e);
	default:
		return err_set(e, EIO, "no request was asked");
	}
}

/* The reply line's meaning: a body length, -errno the client answered, or
 * -EIO with e set for a line that breaks the protocol. */
static int finish_line(struct fuse_remote *fr, struct fuse_req *r, const char *reply, size_t len,
		       struct err *e)
{
	json_error_t je;
	json_t *o, *err;
	uint64_t id;
	int n = -EIO;

	if (len && reply[len - 1] == '\n')
		len--;
	if (len >= FS_REMOTE_LINE_MAX)
		return err_set(e, EIO, "a reply line longer than %u bytes", FS_REMOTE_LINE_MAX);
	if (!(o = json_loadb(reply, len, JSON_REJECT_DUPLICATES, &je)))
		return err_set(e, EIO, "a reply that is not JSON (%.80s)", je.text);
	if (!json_is_object(o)) {
		err_set(e, EIO, "a reply that is not a JSON object");
	} else if (get_u64(o, "id", UINT32_MAX, &id) || id != fr->p.id) {
		err_set(e, EIO, "a reply whose \"id\" is not the request's (%u)", fr->p.id);
	} else if ((err = json_object_get(o, "error"))) {
		const char *name = json_string_value(err);

		for (size_t i = 0; name && i < sizeof(errnames) / sizeof(errnames[0]); i++)
			if (!strcmp(name, errnames[i].name))
				n = -errnames[i].err;
		if (n == -EIO && !(name && !strcmp(name, "EIO")))
			err_set(e, EIO, "a reply's \"error\" is not one of the protocol's names");
	} else {
		n = finish_ok(fr, r, o, e);
	}
	json_decref(o);
	return n;
}

long fuse_remote_finish(struct fuse_remote *fr, const char *reply, size_t len, void *out,
			size_t out_cap, struct err *e)
{
	struct fuse_req r;
	int n;

	e->msg[0] = '\0';
	if (out_cap < sizeof(struct fuse_out_header) || !fr->p.opcode) {
		pending_clear(fr);
		return 0;
	}
	memset(&r, 0, sizeof(r));
	r.h.opcode = fr->p.opcode;
	r.h.unique = fr->p.unique;
	r.body = (uint8_t *)out + sizeof(struct fuse_out_header);
	r.cap = out_cap - sizeof(struct fuse_out_header);
	n = reply ? finish_line(fr, &r, reply, len, e) : -EIO;
	pending_clear(fr);
	return n < 0 ? fuse_req_reply(out, r.h.unique, n, 0)
		     : fuse_req_reply(out, r.h.unique, 0, (size_t)n);
}
