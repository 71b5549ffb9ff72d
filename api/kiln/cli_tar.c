/* A local tree as a ustar stream and back (cli_tar.h). */
#include "api/kiln/cli_tar.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base/fd_io.h"

/* ---- writer ---- */

#define COPY_CHUNK (64u << 10)

struct tar_walk {
	cli_tar_out_fn out;
	void *out_arg;
	cli_tar_warn_fn warn;
	void *warn_arg;
	struct cli_tar_stats *st;
	struct err *e;
	char name[AGENT_PATH_MAX + 2]; /* the member's name, relative */
	uint8_t *buf;                  /* COPY_CHUNK, also for headers */
};

static int walk_fail(struct tar_walk *w, int e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int walk_fail(struct tar_walk *w, int e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(w->e->msg, sizeof(w->e->msg), fmt, ap);
	va_end(ap);
	return e > 0 ? -e : e;
}

static void walk_warn(struct tar_walk *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void walk_warn(struct tar_walk *w, const char *fmt, ...)
{
	char msg[CLI_TAR_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (w->warn)
		w->warn(w->warn_arg, msg);
}

static int put_header(struct tar_walk *w, char type, const char *link, size_t link_len,
		      uint64_t size, const struct stat *s)
{
	struct tar_out m = {
		.name = w->name,
		.name_len = strlen(w->name),
		.type = type,
		.link = link,
		.link_len = link_len,
		.size = size,
		.mode = s->st_mode & 07777,
		.uid = s->st_uid,
		.gid = s->st_gid,
		.mtime = s->st_mtim.tv_sec,
	};
	ssize_t n = tar_header_build(&m, w->buf, COPY_CHUNK);

	if (n < 0)
		return walk_fail(w, (int)n,
				 "'%.300s': %s (an archive member may be at most %d bytes long)",
				 w->name, strerror((int)-n), AGENT_PATH_MAX);
	return w->out(w->out_arg, w->buf, (size_t)n);
}

/* The file `base` of dirfd, its data padded to the block. */
static int put_file(struct tar_walk *w, int dirfd, const char *base)
{
	int fd = openat(dirfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	uint64_t left;
	struct stat s;
	int rc;

	if (fd < 0)
		return walk_fail(w, errno, "'%.300s': %s", w->name, strerror(errno));
	if (fstat(fd, &s)) {
		rc = walk_fail(w, errno, "'%.300s': %s", w->name, strerror(errno));
		close(fd);
		return rc;
	}
	if (!S_ISREG(s.st_mode)) {
		close(fd);
		return walk_fail(w, EINVAL, "'%.300s': changed while the archive was written",
				 w->name);
	}
	rc = put_header(w, '0', NULL, 0, (uint64_t)s.st_size, &s);
	for (left = (uint64_t)s.st_size; !rc && left;) {
		ssize_t got = read(fd, w->buf, left < COPY_CHUNK ? (size_t)left : COPY_CHUNK);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			rc = walk_fail(w, errno, "reading '%.300s': %s", w->name, strerror(errno));
		else if (got == 0)
			rc = walk_fail(
				w, EIO,
				"'%.300s' shrank while it was read; copy it again when it is not being written",
				w->name);
		else
			rc = w->out(w->out_arg, w->buf, (size_t)got);
		if (got > 0)
			left -= (uint64_t)got;
	}
	close(fd);
	if (!rc && tar_pad((uint64_t)s.st_size)) {
		memset(w->buf, 0, TAR_BLOCK);
		rc = w->out(w->out_arg, w->buf, tar_pad((uint64_t)s.st_size));
	}
	if (!rc) {
		w->st->files++;
		w->st->bytes += (uint64_t)s.st_size;
	}
	return rc;
}

static int put_symlink(struct tar_walk *w, int dirfd, const char *base, const struct stat *s)
{
	char link[AGENT_PATH_MAX + 1];
	struct agent_err ae;
	ssize_t n = readlinkat(dirfd, base, link, sizeof(link));

	if (n < 0)
		return walk_fail(w, errno, "'%.300s': %s", w->name, strerror(errno));
	if ((size_t)n >= sizeof(link))
		return walk_fail(w, ENAMETOOLONG, "'%.300s': its target is too long", w->name);
	link[n] = 0;
	/* The agent refuses the whole archive for a link out of the target
	 * (tar_symlink_check is its rule): leave this one out instead. */
	if (tar_symlink_check(w->name, strlen(w->name), link, (size_t)n, ".", &ae) != AGENT_OK) {
		walk_warn(w,
			  "skipped symlink '%.200s' -> '%.200s': it points outside the copied directory",
			  w->name, link);
		w->st->skipped++;
		return 0;
	}
	w->st->symlinks++;
	return put_header(w, '2', link, (size_t)n, 0, s);
}

static int put_dir(struct tar_walk *w, int dirfd, int depth);

/* One directory entry; w->name holds its member name. */
static int put_entry(struct tar_walk *w, int dirfd, const char *base, int depth)
{
	struct stat s;
	int fd, rc;

	if (fstatat(dirfd, base, &s, AT_SYMLINK_NOFOLLOW))
		return walk_fail(w, errno, "'%.300s': %s", w->name, strerror(errno));
	if (S_ISREG(s.st_mode))
		return put_file(w, dirfd, base);
	if (S_ISLNK(s.st_mode))
		return put_symlink(w, dirfd, base, &s);
	if (!S_ISDIR(s.st_mode)) {
		walk_warn(w, "skipped '%.300s': not a file, directory or symlink", w->name);
		w->st->skipped++;
		return 0;
	}
	if (depth >= CLI_TAR_DEPTH_MAX)
		return walk_fail(w, ELOOP, "'%.300s': directories nested deeper than %d", w->name,
				 CLI_TAR_DEPTH_MAX);
	fd = openat(dirfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return walk_fail(w, errno, "'%.300s': %s", w->name, strerror(errno));
	strcat(w->name, "/");
	rc = put_header(w, '5', NULL, 0, 0, &s);
	if (!rc) {
		w->st->dirs++;
		rc = put_dir(w, fd, depth + 1); /* closes fd */
	} else {
		close(fd);
	}
	return rc;
}

/* The entries of fd (owned: closed here); w->name is their prefix ("" or "dir/"). */
static int put_dir(struct tar_walk *w, int fd, int depth)
{
	size_t plen = strlen(w->name);
	DIR *d = fdopendir(fd);
	struct dirent *de;
	int rc = 0;

	if (!d) {
		rc = walk_fail(w, errno, "'%.300s': %s", plen ? w->name : ".", strerror(errno));
		close(fd);
		return rc;
	}
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno)
				rc = walk_fail(w, errno, "reading '%.300s': %s",
					       plen ? w->name : ".", strerror(errno));
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (plen + strlen(de->d_name) + 1 >= sizeof(w->name)) {
			rc = walk_fail(w, ENAMETOOLONG,
				       "'%.200s...%.100s': path too long for an archive", w->name,
				       de->d_name);
			break;
		}
		strcpy(w->name + plen, de->d_name);
		rc = put_entry(w, dirfd(d), de->d_name, depth);
		w->name[plen] = 0;
		if (rc)
			break;
	}
	closedir(d);
	return rc;
}

int cli_tar_write_dir(int dirfd, cli_tar_out_fn out, void *out_arg, cli_tar_warn_fn warn,
		      void *warn_arg, struct cli_tar_stats *st, struct err *e)
{
	struct tar_walk w = {
		.out = out, .out_arg = out_arg, .warn = warn, .warn_arg = warn_arg, .st = st, .e = e
	};
	int fd, rc;

	memset(st, 0, sizeof(*st));
	e->msg[0] = 0;
	w.buf = malloc(COPY_CHUNK);
	if (!w.buf)
		return walk_fail(&w, ENOMEM, "out of memory");
	/* put_dir closes what it is given: hand it a duplicate of the caller's. */
	fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		rc = walk_fail(&w, errno, "the directory: %s", strerror(errno));
	else
		rc = put_dir(&w, fd, 0);
	if (!rc) {
		/* End of archive: two zero blocks. */
		memset(w.buf, 0, 2 * TAR_BLOCK);
		rc = out(out_arg, w.buf, 2 * TAR_BLOCK);
	}
	free(w.buf);
	return rc;
}

/* ---- extractor ---- */

static int untar_fail(struct cli_untar *u, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int untar_fail(struct cli_untar *u, const char *fmt, ...)
{
	va_list ap;

	if (!u->failed) {
		va_start(ap, fmt);
		vsnprintf(u->err, sizeof(u->err), fmt, ap);
		va_end(ap);
	}
	u->failed = true;
	return -1;
}

static int member_errno(struct cli_untar *u, const struct tar_member *m, const char *doing, int e)
{
	if (e == ELOOP || e == ENOTDIR)
		return untar_fail(u,
				  "archive member '%.200s': its path goes through a symlink or a file here; "
				  "refusing to write through it",
				  m->name);
	return untar_fail(u, "archive member '%.200s': %s: %s", m->name, doing, strerror(e));
}

/*
 * The directory of the first len bytes of name, below root, never
 * through a symlink; missing levels are created. fd (root itself when
 * len is 0: not to be closed) or -errno.
 */
static int open_parent(struct cli_untar *u, const char *name, size_t len)
{
	char comp[NAME_MAX + 1];
	int cur = u->root;
	size_t i = 0;

	while (i < len) {
		size_t k = 0;
		int fd;

		while (i + k < len && name[i + k] != '/')
			k++;
		/* The reader caps components at NAME_MAX (tar_name_normalize);
		 * checked again here because the buffer is on the stack. */
		if (k > NAME_MAX) {
			if (cur != u->root)
				close(cur);
			return -ENAMETOOLONG;
		}
		memcpy(comp, name + i, k);
		comp[k] = 0;
		i += k + 1;
		fd = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT) {
			if (mkdirat(cur, comp, 0777 & ~u->umask) && errno != EEXIST)
				fd = -1;
			else
				fd = openat(cur, comp,
					    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (fd < 0) {
			int e = errno;

			if (cur != u->root)
				close(cur);
			return -e;
		}
		if (cur != u->root)
			close(cur);
		cur = fd;
	}
	return cur;
}

static const char *split_base(const char *name, size_t len, size_t *dir_len)
{
	const char *slash = memrchr(name, '/', len);

	*dir_len = slash ? (size_t)(slash - name) : 0;
	return slash ? slash + 1 : name;
}

/* Remove what is at base, unless it is a directory: a symlink there is
 * replaced, never followed. */
static int clear_way(struct cli_untar *u, const struct tar_member *m, int pfd, const char *base)
{
	struct stat s;

	if (fstatat(pfd, base, &s, AT_SYMLINK_NOFOLLOW)) {
		if (errno == ENOENT)
			return 0;
		return member_errno(u, m, "looking at what is there", errno);
	}
	if (S_ISDIR(s.st_mode))
		return untar_fail(u, "archive member '%.200s': a directory is in the way", m->name);
	if (unlinkat(pfd, base, 0))
		return member_errno(u, m, "replacing what is there", errno);
	return 0;
}

static int make_dir(struct cli_untar *u, const struct tar_member *m, int pfd, const char *base)
{
	struct stat s;

	if (mkdirat(pfd, base, ((m->mode & 0777) | 0700) & ~u->umask) == 0)
		return 0;
	if (errno != EEXIST)
		return member_errno(u, m, "creating it", errno);
	if (fstatat(pfd, base, &s, AT_SYMLINK_NOFOLLOW))
		return member_errno(u, m, "looking at what is there", errno);
	if (!S_ISDIR(s.st_mode))
		return untar_fail(
			u,
			"archive member '%.200s/': something that is not a directory is in the way",
			m->name);
	return 0;
}

/* Only to a regular file: a hard link to a symlink is that symlink again
 * at another depth (`d/e/l -> ../../x` stays in, the same linked as `top`
 * points out), and directories, fifos and devices have no place either. */
static int make_hardlink(struct cli_untar *u, const struct tar_member *m, int pfd, const char *base)
{
	size_t sdlen;
	const char *sbase = split_base(m->link, m->link_len, &sdlen);
	int spfd, rc = 0;
	struct stat s;

	/* A link to itself is already so (and clearing the way would
	 * delete the file). */
	if (m->link_len == m->name_len && !memcmp(m->link, m->name, m->name_len)) {
		u->st.hardlinks++;
		return 0;
	}
	spfd = open_parent(u, m->link, sdlen);
	if (spfd < 0)
		return member_errno(u, m, "opening its link's directory", -spfd);
	if (fstatat(spfd, sbase, &s, AT_SYMLINK_NOFOLLOW))
		rc = member_errno(u, m, "looking at its link (it must come earlier in the archive)",
				  errno);
	else if (!S_ISREG(s.st_mode))
		rc = untar_fail(u,
				"archive member '%.200s': a hard link to '%.200s', which is not a regular file; "
				"an archive may only hard-link files",
				m->name, m->link);
	else
		rc = clear_way(u, m, pfd, base);
	if (!rc && linkat(spfd, sbase, pfd, base, 0))
		rc = member_errno(u, m, "creating the hard link", errno);
	if (spfd != u->root)
		close(spfd);
	if (!rc)
		u->st.hardlinks++;
	return rc;
}

static int create_member(struct cli_untar *u, const struct tar_member *m)
{
	size_t dlen;
	const char *base = split_base(m->name, m->name_len, &dlen);
	int pfd, rc = 0;

	if (!m->name_len) {
		/* "./": the destination itself, which exists. */
		if (m->kind == TAR_DIR)
			return 0;
		return untar_fail(u, "an archive member names the destination itself");
	}
	pfd = open_parent(u, m->name, dlen);
	if (pfd < 0)
		return member_errno(u, m, "opening its directory", -pfd);
	switch (m->kind) {
	case TAR_FILE:
		rc = clear_way(u, m, pfd, base);
		if (!rc) {
			u->fd = openat(pfd, base,
				       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY |
					       O_CLOEXEC,
				       m->mode & 0777 & ~u->umask);
			if (u->fd < 0)
				rc = member_errno(u, m, "creating it", errno);
			u->mtime = m->mtime;
			u->mtime_nsec = m->mtime_nsec;
		}
		break;
	case TAR_DIR:
		rc = make_dir(u, m, pfd, base);
		if (!rc)
			u->st.dirs++;
		break;
	case TAR_SYMLINK:
		rc = clear_way(u, m, pfd, base);
		if (!rc && symlinkat(m->link, pfd, base))
			rc = member_errno(u, m, "creating the symlink", errno);
		if (!rc)
			u->st.symlinks++;
		break;
	case TAR_HARDLINK:
		rc = make_hardlink(u, m, pfd, base);
		break;
	}
	if (pfd != u->root)
		close(pfd);
	return rc;
}

static int finish_file(struct cli_untar *u, const struct tar_member *m)
{
	struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT },
				  { .tv_sec = u->mtime, .tv_nsec = u->mtime_nsec } };
	int e;

	(void)futimens(u->fd, ts);
	e = close(u->fd) ? errno : 0;
	u->fd = -1;
	if (e && e != EINTR)
		return member_errno(u, m, "closing it", e);
	u->st.files++;
	return 0;
}

void cli_untar_init(struct cli_untar *u, int root, mode_t umask, const char *what)
{
	memset(u, 0, sizeof(*u));
	tar_reader_init(&u->rd, what);
	u->root = root;
	u->fd = -1;
	u->umask = umask;
}

int cli_untar_feed(struct cli_untar *u, const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t off = 0;

	if (u->failed)
		return -1;
	/* After the end-of-archive blocks, whatever follows is padding. */
	if (u->ended)
		return 0;
	for (;;) {
		struct tar_event ev;
		int r;

		off += tar_reader_feed(&u->rd, b + off, n - off, &ev);
		switch (ev.kind) {
		case TAR_EV_NEED_MORE:
			return 0;
		case TAR_EV_MEMBER:
			if (create_member(u, ev.member))
				return -1;
			break;
		case TAR_EV_DATA:
			r = fd_io_write_all(u->fd, ev.data, ev.data_len);
			if (r)
				return member_errno(u, ev.member, "writing", -r);
			u->st.bytes += ev.data_len;
			break;
		case TAR_EV_FILE_END:
			if (finish_file(u, ev.member))
				return -1;
			break;
		case TAR_EV_SKIPPED:
			u->st.skipped++;
			break;
		case TAR_EV_END:
			u->ended = true;
			return 0;
		case TAR_EV_ERROR:
			return untar_fail(u, "%s", ev.err->msg);
		}
	}
}

int cli_untar_finish(struct cli_untar *u)
{
	struct tar_event ev;

	if (u->failed)
		return -1;
	if (!u->ended) {
		tar_reader_finish(&u->rd, &ev);
		if (ev.kind == TAR_EV_ERROR)
			return untar_fail(u, "%s", ev.err->msg);
	}
	return 0;
}

void cli_untar_free(struct cli_untar *u)
{
	if (u->fd >= 0)
		close(u->fd);
	u->fd = -1;
	tar_reader_free(&u->rd);
}
