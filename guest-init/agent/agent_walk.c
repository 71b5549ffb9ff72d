/*
 * agent_walk: bounded depth-first directory walk (contract in agent_walk.h).
 */
#include "guest-init/agent/agent_walk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "guest-init/agent/agent_files_ops.h"

/* linux_dirent64 (getdents64(2)): d_ino u64, d_off s64, d_reclen u16,
 * d_type u8, then the NUL-terminated name. */
#define DIRENT_OFF 8
#define DIRENT_RECLEN 16
#define DIRENT_NAME 19

bool walk_dirent(const uint8_t *buf, size_t len, size_t *pos, const char **name, int64_t *off)
{
	size_t p = *pos;
	uint16_t reclen;

	if (p >= len || len - p < DIRENT_NAME + 1)
		return false;
	memcpy(&reclen, buf + p + DIRENT_RECLEN, sizeof(reclen));
	/* The kernel fills this buffer, but one bad length must not make us
	 * read past it. */
	if (reclen < DIRENT_NAME + 1 || reclen > len - p ||
	    !memchr(buf + p + DIRENT_NAME, '\0', reclen - DIRENT_NAME))
		return false;
	memcpy(off, buf + p + DIRENT_OFF, sizeof(*off));
	*name = (const char *)buf + p + DIRENT_NAME;
	*pos = p + reclen;
	return true;
}

static void level_close(struct walk *w, struct walk_level *l)
{
	if (l->fd >= 0) {
		close(l->fd);
		w->nopen--;
	}
	l->fd = -1;
	free(l->buf);
	l->buf = NULL;
	l->pos = l->len = 0;
}

/* Make room for one more open level by closing the shallowest open one. */
static void evict(struct walk *w)
{
	if (w->nopen < WALK_OPEN_MAX)
		return;
	for (size_t i = 0; i < w->depth; i++)
		if (w->lv[i].fd >= 0) {
			level_close(w, &w->lv[i]);
			return;
		}
}

static int push(struct walk *w, int fd, const struct stat *st, size_t path_len)
{
	struct walk_level *l;

	if (w->depth == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 8;
		struct walk_level *nl = realloc(w->lv, cap * sizeof(*nl));

		if (!nl) {
			close(fd);
			return -ENOMEM;
		}
		w->lv = nl;
		w->cap = cap;
	}
	evict(w);
	l = &w->lv[w->depth];
	memset(l, 0, sizeof(*l));
	l->buf = malloc(WALK_BUF);
	if (!l->buf) {
		close(fd);
		return -ENOMEM;
	}
	l->fd = fd;
	l->dev = st->st_dev;
	l->ino = st->st_ino;
	l->path_len = path_len;
	w->depth++;
	w->nopen++;
	return 0;
}

static void pop(struct walk *w)
{
	level_close(w, &w->lv[w->depth - 1]);
	w->depth--;
}

/*
 * Reopen a level closed by evict(): by its path below the root, never
 * through a symlink and never above the root, and only if it is still the
 * same directory.
 */
static int reopen(struct walk *w, struct walk_level *l)
{
	char saved = w->path[l->path_len];
	const char *rel = l->path_len > w->rel_off ? w->path + w->rel_off : ".";
	struct stat st;
	int fd;

	w->path[l->path_len] = '\0';
	fd = fs_openat2(w->rootfd, rel, O_RDONLY | O_DIRECTORY, 0,
			RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	w->path[l->path_len] = saved;
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0 || st.st_dev != l->dev || st.st_ino != l->ino) {
		close(fd);
		return -ESTALE;
	}
	if (l->resume && lseek(fd, l->resume, SEEK_SET) < 0) {
		close(fd);
		return -errno;
	}
	evict(w);
	l->buf = malloc(WALK_BUF);
	if (!l->buf) {
		close(fd);
		return -ENOMEM;
	}
	l->fd = fd;
	l->pos = l->len = 0;
	w->nopen++;
	return 0;
}

int walk_open(struct walk *w, int dirfd, const char *prefix)
{
	size_t n = strlen(prefix);
	struct stat st;
	int r;

	memset(w, 0, sizeof(*w));
	w->rootfd = -1;
	if (n > AGENT_PATH_MAX) {
		close(dirfd);
		return -ENAMETOOLONG;
	}
	memcpy(w->path, prefix, n + 1);
	w->rel_off = n && prefix[n - 1] != '/' ? n + 1 : n;
	if (fstat(dirfd, &st) < 0) {
		close(dirfd);
		return -errno;
	}
	w->rootfd = openat(dirfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (w->rootfd < 0) {
		int e = -errno;

		close(dirfd);
		return e;
	}
	r = push(w, dirfd, &st, n);
	/* The callers do not walk_close() a walk that failed to open: the
	 * root's O_PATH descriptor and the level array must not stay. */
	if (r < 0)
		walk_close(w);
	return r;
}

int walk_next(struct walk *w, struct walk_entry *e)
{
	while (w->depth) {
		struct walk_level *l = &w->lv[w->depth - 1];
		const char *name;
		int64_t off;
		size_t nlen, base, sep, len;

		if (l->fd < 0) {
			int r = reopen(w, l);

			if (r == -ENOMEM)
				return r;
			if (r < 0) {
				/* Moved, replaced or gone: the rest of it is lost. */
				w->skipped++;
				pop(w);
				continue;
			}
		}
		if (l->pos >= l->len) {
			ssize_t n = getdents64(l->fd, l->buf, WALK_BUF);

			if (n <= 0) {
				/* End of the directory, or a read error that
				 * ends it early (counted). */
				if (n < 0)
					w->skipped++;
				pop(w);
				continue;
			}
			l->pos = 0;
			l->len = (size_t)n;
		}
		if (!walk_dirent(l->buf, l->len, &l->pos, &name, &off)) {
			l->pos = l->len;
			continue;
		}
		l->resume = off;
		if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2])))
			continue;

		nlen = strlen(name);
		base = l->path_len;
		sep = base && w->path[base - 1] != '/';
		len = base + sep + nlen;
		if (len > AGENT_PATH_MAX) {
			w->skipped++;
			continue;
		}
		if (fstatat(l->fd, name, &e->st, AT_SYMLINK_NOFOLLOW) < 0) {
			w->skipped++; /* vanished since readdir */
			continue;
		}
		if (sep)
			w->path[base] = '/';
		memcpy(w->path + base + sep, name, nlen + 1);
		e->name = w->path + base + sep;
		e->path = w->path;
		e->path_len = len;
		e->depth = (uint32_t)w->depth;
		e->dirfd = l->fd;
		return 1;
	}
	return 0;
}

int walk_descend(struct walk *w, const struct walk_entry *e)
{
	struct stat st;
	int fd = openat(e->dirfd, e->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	/* The entry may have been swapped since its lstat. */
	if (fstat(fd, &st) < 0 || st.st_dev != e->st.st_dev || st.st_ino != e->st.st_ino) {
		close(fd);
		return -ESTALE;
	}
	return push(w, fd, &st, e->path_len);
}

void walk_close(struct walk *w)
{
	while (w->depth)
		pop(w);
	free(w->lv);
	w->lv = NULL;
	w->cap = 0;
	if (w->rootfd >= 0)
		close(w->rootfd);
	w->rootfd = -1;
}
