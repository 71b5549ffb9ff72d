#include "devices/fs/fuse_state.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "devices/fs/fuse_server.h"
#include "lib/base/le.h"

/* ---- writing ---- */

static uint8_t *room(struct fuse_state_writer *w, size_t n)
{
	uint8_t *p;

	if (w->err || n > w->cap - w->len) {
		w->err = -E2BIG;
		return NULL;
	}
	p = w->buf + w->len;
	w->len += n;
	return p;
}

void fuse_state_begin(struct fuse_state_writer *w, void *buf, size_t cap,
		      const struct fuse_state *st)
{
	uint8_t *p;

	memset(w, 0, sizeof(*w));
	w->buf = buf;
	w->cap = cap;
	if (!(p = room(w, FUSE_STATE_HEADER)))
		return;
	le_put32(p, FUSE_STATE_MAGIC);
	le_put32(p + 4, st->flags);
	le_put64(p + 8, st->root_dev);
	le_put64(p + 16, st->root_ino);
	le_put32(p + 24, st->inode_cap);
	le_put32(p + 28, st->handle_cap);
	/* The counts (32, 36) are filled in by fuse_state_finish(). */
	memset(p + 32, 0, 8);
}

void fuse_state_put_node(struct fuse_state_writer *w, const struct fuse_state_node *n)
{
	uint8_t *p = w->nhandles ? NULL : room(w, FUSE_STATE_NODE + (size_t)n->path_len);

	if (!p) {
		w->err = w->err ? w->err : -EINVAL;
		return;
	}
	le_put32(p, n->slot);
	le_put32(p + 4, n->gen);
	le_put64(p + 8, n->nlookup);
	le_put32(p + 16, n->mode);
	le_put16(p + 20, n->path_len);
	le_put16(p + 22, 0);
	le_put64(p + 24, n->dev);
	le_put64(p + 32, n->ino);
	if (n->path_len)
		memcpy(p + FUSE_STATE_NODE, n->path, n->path_len);
	w->nnodes++;
}

void fuse_state_put_handle(struct fuse_state_writer *w, const struct fuse_state_handle *h)
{
	uint8_t *p = room(w, FUSE_STATE_HANDLE);

	if (!p)
		return;
	le_put32(p, h->slot);
	le_put32(p + 4, h->gen);
	le_put64(p + 8, h->nodeid);
	le_put32(p + 16, h->flags);
	le_put32(p + 20, h->dir);
	w->nhandles++;
}

long fuse_state_finish(struct fuse_state_writer *w)
{
	if (w->err)
		return w->err;
	le_put32(w->buf + 32, w->nnodes);
	le_put32(w->buf + 36, w->nhandles);
	return (long)w->len;
}

/* ---- reading ---- */

int fuse_state_path_ok(const char *path, size_t len)
{
	size_t start = 0;

	if (len == 0 || len >= PATH_MAX || memchr(path, 0, len))
		return 0;
	/* Every component: non-empty (no leading, trailing or double '/'),
	 * not "." or "..", at most NAME_MAX. */
	for (size_t i = 0; i <= len; i++) {
		size_t n;

		if (i < len && path[i] != '/')
			continue;
		n = i - start;
		if (n == 0 || n > NAME_MAX || (n == 1 && path[start] == '.') ||
		    (n == 2 && path[start] == '.' && path[start + 1] == '.'))
			return 0;
		start = i + 1;
	}
	return 1;
}

static int pow2_in(uint32_t v, uint32_t lo, uint32_t hi)
{
	return v >= lo && v <= hi && !(v & (v - 1));
}

static int known_type(uint32_t mode)
{
	switch (mode) {
	case S_IFREG:
	case S_IFDIR:
	case S_IFLNK:
	case S_IFIFO:
	case S_IFSOCK:
	case S_IFCHR:
	case S_IFBLK:
		return 1;
	}
	return 0;
}

static int parse_node(const uint8_t *p, size_t left, const struct fuse_state *st, uint32_t prev,
		      struct fuse_state_node *n, size_t *used, struct err *e)
{
	if (left < FUSE_STATE_NODE)
		return err_set(e, EINVAL, "share state: node records run past the end");
	n->slot = le_get32(p);
	n->gen = le_get32(p + 4);
	n->nlookup = le_get64(p + 8);
	n->mode = le_get32(p + 16);
	n->path_len = le_get16(p + 20);
	n->dev = le_get64(p + 24);
	n->ino = le_get64(p + 32);
	n->path = (const char *)p + FUSE_STATE_NODE;
	if (n->slot == 0 || n->slot >= st->inode_cap || n->slot <= prev)
		return err_set(e, EINVAL, "share state: node slot %u out of range or out of order",
			       n->slot);
	if (le_get16(p + 22) || n->path_len > left - FUSE_STATE_NODE)
		return err_set(e, EINVAL, "share state: node %u's path runs past the end", n->slot);
	if (n->nlookup == 0 ? (n->mode || n->path_len || n->dev || n->ino) : !known_type(n->mode))
		return err_set(e, EINVAL, "share state: node %u has no valid file type", n->slot);
	if (n->path_len && !fuse_state_path_ok(n->path, n->path_len))
		return err_set(e, EINVAL,
			       "share state: node %u's path is not a plain path beneath the share",
			       n->slot);
	*used = FUSE_STATE_NODE + n->path_len;
	return 0;
}

static int parse_handle(const uint8_t *p, const struct fuse_state *st, int64_t prev,
			struct fuse_state_handle *h, struct err *e)
{
	h->slot = le_get32(p);
	h->gen = le_get32(p + 4);
	h->nodeid = le_get64(p + 8);
	h->flags = le_get32(p + 16);
	h->dir = le_get32(p + 20);
	if (h->slot >= st->handle_cap || (int64_t)h->slot <= prev)
		return err_set(e, EINVAL,
			       "share state: handle slot %u out of range or out of order", h->slot);
	if (h->dir > (1u | FUSE_STATE_HANDLE_STALE) || (h->nodeid == 0 && (h->flags || h->dir)))
		return err_set(e, EINVAL, "share state: handle %u is malformed", h->slot);
	return 0;
}

int fuse_state_parse(const void *buf, size_t len, struct fuse_state *st, struct err *e)
{
	const uint8_t *p = buf;
	size_t off = FUSE_STATE_HEADER;
	uint32_t prev = 0;
	int err;

	memset(st, 0, sizeof(*st));
	if (len < FUSE_STATE_HEADER || le_get32(p) != FUSE_STATE_MAGIC)
		return err_set(e, EINVAL, "share state: not a kiln virtio-fs state (version 2)");
	st->flags = le_get32(p + 4);
	st->root_dev = le_get64(p + 8);
	st->root_ino = le_get64(p + 16);
	st->inode_cap = le_get32(p + 24);
	st->handle_cap = le_get32(p + 28);
	st->nnodes = le_get32(p + 32);
	st->nhandles = le_get32(p + 36);
	if ((st->flags & ~FUSE_STATE_ACTIVE) ||
	    !pow2_in(st->inode_cap, 64, FUSE_SERVER_MAX_INODES) ||
	    (st->handle_cap && !pow2_in(st->handle_cap, 64, FUSE_SERVER_MAX_HANDLES)))
		return err_set(e, EINVAL,
			       "share state: table sizes %u/%u beyond the server's limits",
			       st->inode_cap, st->handle_cap);
	/* Counts the bytes cannot hold are refused before anything is allocated. */
	if (st->nnodes >= st->inode_cap || st->nhandles > st->handle_cap ||
	    (uint64_t)st->nnodes * FUSE_STATE_NODE + (uint64_t)st->nhandles * FUSE_STATE_HANDLE >
		    len - off)
		return err_set(e, EINVAL,
			       "share state: %u nodes and %u handles do not fit in %zu bytes",
			       st->nnodes, st->nhandles, len);
	if (!(st->flags & FUSE_STATE_ACTIVE) && (st->nnodes || st->nhandles))
		return err_set(e, EINVAL, "share state: nodes saved without a session");
	st->nodes = calloc(st->nnodes ? st->nnodes : 1, sizeof(*st->nodes));
	st->handles = calloc(st->nhandles ? st->nhandles : 1, sizeof(*st->handles));
	if (!st->nodes || !st->handles) {
		fuse_state_free(st);
		return err_set(e, ENOMEM, "out of memory");
	}
	for (uint32_t i = 0; i < st->nnodes; i++) {
		size_t used = 0;

		if ((err = parse_node(p + off, len - off, st, prev, &st->nodes[i], &used, e)) < 0)
			goto fail;
		prev = st->nodes[i].slot;
		off += used;
	}
	if ((uint64_t)st->nhandles * FUSE_STATE_HANDLE != len - off) {
		err = err_set(e, EINVAL, "share state: %zu bytes where %u handles should be",
			      len - off, st->nhandles);
		goto fail;
	}
	for (uint32_t i = 0; i < st->nhandles; i++, off += FUSE_STATE_HANDLE) {
		if ((err = parse_handle(p + off, st, i ? (int64_t)st->handles[i - 1].slot : -1,
					&st->handles[i], e)) < 0)
			goto fail;
	}
	return 0;
fail:
	fuse_state_free(st);
	return err;
}

void fuse_state_free(struct fuse_state *st)
{
	free(st->nodes);
	free(st->handles);
	st->nodes = NULL;
	st->handles = NULL;
}
