/*
 * agent_tar_io: tar_upload and tar_download (docs/agent-protocol.md,
 * section 7.5): the syscall side of agent_tar.
 *
 * Upload confinement, in layers:
 *  1. agent_tar refuses absolute names, `..` components, symlink targets
 *     that climb out and hard links outside, before a member is reported.
 *  2. Every member is created relative to a descriptor of the target
 *     directory: its parent is opened with openat2(RESOLVE_BENEATH |
 *     RESOLVE_NO_MAGICLINKS) (missing parents are created one level at a
 *     time, each re-resolved the same way), and the member itself is one
 *     name in that parent, created with O_CREAT|O_EXCL|O_NOFOLLOW or
 *     mkdirat/symlinkat/linkat, which never follow a final symlink. A
 *     symlink that already sits in the target, or one an earlier member
 *     planted, cannot lead a later member outside: the kernel answers
 *     EXDEV, which is `unsafe_path`.
 *  3. A symlink member's parent is also opened with RESOLVE_NO_SYMLINKS:
 *     agent_tar's climb check counts the member's directory depth from its
 *     name, which is only its real depth when no symlink was crossed to get
 *     there (with `a -> .`, `a/l -> ../x` would otherwise point out).
 *  4. An existing non-directory where a member goes is unlinked first,
 *     never opened through; a directory there is kept for a directory
 *     member and refused (`is_directory`) for anything else.
 *  5. A hard link's target must be a regular file (looked at with
 *     AT_SYMLINK_NOFOLLOW): a hard link to a symlink is that symlink again
 *     at another depth, so `d/e/l -> ../../x` linked as `top` would point
 *     out of the target although each member passed layer 1.
 * The request's user (fsuid/fsgid) owns everything created; archive
 * ownership is ignored, and modes are masked to 0777 for "user".
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guest-init/agent/agent_files_ops.h"
#include "api/proto/agent_tar.h"
#include "guest-init/agent/agent_walk.h"
#include "lib/base/fd_io.h"

#define CONFINED (RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)

/* ---- upload ---- */

struct upload {
	struct agent_conn *c;
	const char *target;
	int tfd; /* O_PATH of the target directory */
	bool root;
	int fd;     /* the file being written, -1 */
	bool ended; /* end-of-archive seen: the rest is ignored */
	struct tar_reader rd;
	uint64_t files, dirs, symlinks, hardlinks, skipped, bytes;
};

static int member_errno(struct upload *u, const struct tar_member *m, const char *what, int e)
{
	if (e < 0)
		e = -e;
	if (e == EXDEV)
		fs_send_error(
			u->c, AGENT_E_UNSAFE_PATH,
			"tar member '%.200s': its path leads out of %.200s through a symlink; the archive must stay inside the target",
			m->name, u->target);
	else if (e == ELOOP && m->kind == TAR_SYMLINK)
		fs_send_error(
			u->c, AGENT_E_UNSAFE_PATH,
			"tar symlink '%.200s': its directory is reached through a symlink; a symlink member must sit in a real directory",
			m->name);
	else if (e == ELOOP)
		fs_send_error(
			u->c, AGENT_E_UNSAFE_PATH,
			"tar member '%.200s': its path goes through a symlink loop or a /proc link; the archive must hold plain paths",
			m->name);
	else
		fs_send_errno(u->c, e, "tar member '%.200s': %s", m->name, what);
	return -1;
}

/*
 * The directory `len` bytes of `name` name, below the target, opened
 * O_PATH and confined; missing levels are created (0755, the user's). The
 * target itself when len is 0 (not to be closed). fd or -errno.
 */
static int open_dir_below(struct upload *u, const char *name, size_t len, uint64_t resolve)
{
	char path[AGENT_PATH_MAX + 1];
	int prev = -1, fd;

	if (!len)
		return u->tfd;
	if (len > AGENT_PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(path, name, len);
	path[len] = '\0';
	fd = fs_openat2(u->tfd, path, O_PATH | O_DIRECTORY, 0, resolve);
	if (fd != -ENOENT)
		return fd;
	/* Create what is missing, one level at a time; each new level is
	 * opened again from the target, so it too must resolve beneath it. */
	for (size_t i = 0; i <= len; i++) {
		size_t start;

		if (i < len && path[i] != '/')
			continue;
		path[i] = '\0';
		fd = fs_openat2(u->tfd, path, O_PATH | O_DIRECTORY, 0, resolve);
		if (fd == -ENOENT) {
			start = i;
			while (start > 0 && path[start - 1] != '\0' && path[start - 1] != '/')
				start--;
			if (mkdirat(prev >= 0 ? prev : u->tfd, path + start,
				    AGENT_DIR_MODE_DEFAULT) < 0 &&
			    errno != EEXIST) {
				fd = -errno;
			} else {
				fd = fs_openat2(u->tfd, path, O_PATH | O_DIRECTORY, 0, resolve);
			}
		}
		if (i < len)
			path[i] = '/';
		if (prev >= 0)
			close(prev);
		if (fd < 0)
			return fd;
		prev = fd;
	}
	return prev;
}

static void close_dir(struct upload *u, int fd)
{
	if (fd >= 0 && fd != u->tfd)
		close(fd);
}

/* Split a normalised name into its directory part (length) and last name. */
static const char *base_of(const char *name, size_t len, size_t *dir_len)
{
	const char *slash = memrchr(name, '/', len);

	*dir_len = slash ? (size_t)(slash - name) : 0;
	return slash ? slash + 1 : name;
}

/* Clear the way for a non-directory: unlink what is there, unless it is
 * a directory. 0 or -1 after an error line. */
static int clear_way(struct upload *u, const struct tar_member *m, int pfd, const char *base)
{
	if (unlinkat(pfd, base, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno == EISDIR) {
		fs_send_error(u->c, AGENT_E_IS_DIRECTORY,
			      "tar member '%.200s': a directory is in the way; a %s cannot replace it",
			      m->name, m->kind == TAR_FILE ? "file" : "link");
		return -1;
	}
	return member_errno(u, m, "replacing what is there", errno);
}

static uint32_t member_mode(const struct upload *u, const struct tar_member *m)
{
	/* No setuid, setgid or sticky bits for "user" (section 7.5). */
	return m->mode & (u->root ? 07777 : 0777);
}

static int create_member(struct upload *u, const struct tar_member *m)
{
	size_t dlen;
	const char *base = base_of(m->name, m->name_len, &dlen);
	uint64_t resolve = CONFINED | (m->kind == TAR_SYMLINK ? RESOLVE_NO_SYMLINKS : 0);
	int pfd = open_dir_below(u, m->name, dlen, resolve);
	int r = 0;

	if (pfd < 0)
		return member_errno(u, m, "opening its directory", pfd);
	switch (m->kind) {
	case TAR_FILE:
		if (clear_way(u, m, pfd, base) < 0) {
			r = -1;
			break;
		}
		u->fd = fs_openat2(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY,
				   member_mode(u, m), CONFINED);
		if (u->fd < 0)
			r = member_errno(u, m, "creating it", u->fd);
		break;
	case TAR_DIR:
		if (mkdirat(pfd, base, member_mode(u, m)) == 0) {
			int e = fs_dir_mode_fixup(pfd, base, member_mode(u, m));

			if (e < 0)
				r = member_errno(u, m, "setting its mode", e);
		} else if (errno != EEXIST) {
			r = member_errno(u, m, "creating it", errno);
		} else {
			struct stat st;

			/* An existing directory is fine (its mode is kept);
			 * anything else there is not replaced. */
			if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
				r = member_errno(u, m, "looking at what is there", errno);
			} else if (!S_ISDIR(st.st_mode)) {
				fs_send_error(
					u->c, AGENT_E_EXISTS,
					"tar member '%.200s/': a non-directory is in the way; remove it first",
					m->name);
				r = -1;
			}
		}
		if (!r)
			u->dirs++;
		break;
	case TAR_SYMLINK:
		if (clear_way(u, m, pfd, base) < 0) {
			r = -1;
			break;
		}
		if (symlinkat(m->link, pfd, base) < 0) {
			r = member_errno(u, m, "creating the symlink", errno);
			break;
		}
		{
			struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT },
						  { .tv_sec = m->mtime,
						    .tv_nsec = m->mtime_nsec } };

			/* Best effort: some filesystems keep no symlink times. */
			(void)utimensat(pfd, base, ts, AT_SYMLINK_NOFOLLOW);
		}
		u->symlinks++;
		break;
	case TAR_HARDLINK: {
		size_t sdlen;
		const char *sbase = base_of(m->link, m->link_len, &sdlen);
		int spfd = u->tfd, e = 0;
		struct stat st, pst, spst;

		/* The link's directory must exist already: only look, confined
		 * the same way. */
		if (sdlen > AGENT_PATH_MAX) {
			/* tar_name_normalize caps it; the buffer is on the stack. */
			spfd = -ENAMETOOLONG;
		} else if (sdlen) {
			char sdir[AGENT_PATH_MAX + 1];

			memcpy(sdir, m->link, sdlen);
			sdir[sdlen] = '\0';
			spfd = fs_openat2(u->tfd, sdir, O_PATH | O_DIRECTORY, 0, CONFINED);
		}
		if (spfd < 0)
			e = -spfd;
		else if (fstatat(spfd, sbase, &st, AT_SYMLINK_NOFOLLOW) < 0)
			e = errno;
		if (e) {
			if (e == ENOENT)
				fs_send_error(
					u->c, AGENT_E_NOT_FOUND,
					"tar hard link '%.200s' -> '%.200s': no such file; the file must come earlier in the archive",
					m->name, m->link);
			else
				member_errno(u, m, "looking at its link", e);
			r = -1;
		} else if (!S_ISREG(st.st_mode)) {
			/* Layer 5: not a symlink (nor a directory, fifo or device). */
			fs_send_error(
				u->c, AGENT_E_UNSAFE_PATH,
				"tar hard link '%.200s' -> '%.200s': not a regular file; an archive may only hard-link files",
				m->name, m->link);
			r = -1;
		} else if (fstat(pfd, &pst) == 0 && fstat(spfd, &spst) == 0 &&
			   pst.st_dev == spst.st_dev && pst.st_ino == spst.st_ino &&
			   strcmp(base, sbase) == 0) {
			/* A link to itself: already so (and unlinking first
			 * would delete the file). */
			u->hardlinks++;
		} else if (clear_way(u, m, pfd, base) < 0) {
			r = -1;
		} else if (linkat(spfd, sbase, pfd, base, 0) < 0) {
			r = member_errno(u, m, "creating the hard link", errno);
		} else {
			u->hardlinks++;
		}
		close_dir(u, spfd);
		break;
	}
	}
	close_dir(u, pfd);
	return r;
}

static int finish_file(struct upload *u, const struct tar_member *m)
{
	struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT },
				  { .tv_sec = m->mtime, .tv_nsec = m->mtime_nsec } };
	int e;

	(void)futimens(u->fd, ts);
	e = close(u->fd) < 0 ? errno : 0;
	u->fd = -1;
	/* Write errors may surface only at close on network/FUSE filesystems. */
	if (e && e != EINTR)
		return member_errno(u, m, "closing it", e);
	u->files++;
	return 0;
}

/* Run archive bytes through the reader. 0, or -1 after an error line. */
static int upload_feed(struct upload *u, const uint8_t *buf, size_t n)
{
	size_t off = 0;

	u->bytes += n;
	if (u->ended)
		return 0;
	for (;;) {
		struct tar_event ev;
		int r;

		off += tar_reader_feed(&u->rd, buf + off, n - off, &ev);
		switch (ev.kind) {
		case TAR_EV_NEED_MORE:
			return 0;
		case TAR_EV_MEMBER:
			if (create_member(u, ev.member) < 0)
				return -1;
			break;
		case TAR_EV_DATA:
			r = fd_io_write_all(u->fd, ev.data, ev.data_len);
			if (r < 0)
				return member_errno(u, ev.member, "writing", r);
			break;
		case TAR_EV_FILE_END:
			if (finish_file(u, ev.member) < 0)
				return -1;
			break;
		case TAR_EV_SKIPPED:
			u->skipped++;
			break;
		case TAR_EV_END:
			u->ended = true;
			return 0;
		case TAR_EV_ERROR:
			agent_conn_send_err(u->c, ev.err);
			return -1;
		}
	}
}

/* Feed the current message's payload. 0, or -1 after an error line. */
static int upload_payload(struct upload *u, uint8_t *buf)
{
	struct agent_err err;

	for (;;) {
		ssize_t r = agent_conn_payload(u->c, buf, AGENT_CHUNK_MAX, &err);

		if (r < 0) {
			agent_conn_send_err(u->c, &err);
			return -1;
		}
		if (r == 0)
			return 0;
		if (upload_feed(u, buf, (size_t)r) < 0)
			return -1;
	}
}

static void upload_end(struct upload *u)
{
	struct tar_event ev;

	if (!u->ended) {
		tar_reader_finish(&u->rd, &ev);
		if (ev.kind == TAR_EV_ERROR) {
			agent_conn_send_err(u->c, ev.err);
			return;
		}
	}
	{
		const struct agent_kv kv[] = {
			AGENT_INT("files", u->files),       AGENT_INT("dirs", u->dirs),
			AGENT_INT("symlinks", u->symlinks), AGENT_INT("hardlinks", u->hardlinks),
			AGENT_INT("skipped", u->skipped),   AGENT_INT("bytes", u->bytes),
		};
		struct agent_line l;

		agent_conn_send_line(u->c, &l, agent_line_ok(&l, kv, 6));
	}
}

void op_tar_upload(struct agent_conn *c, struct agent_msg *req)
{
	const struct agent_file_req *f = &req->u.file;
	struct upload u = {
		.c = c, .target = f->path, .tfd = -1, .fd = -1, .root = f->user == AGENT_USER_ROOT
	};
	uint8_t *buf = NULL;
	int r;

	r = fs_mkdir_p(f->path, AGENT_DIR_MODE_DEFAULT);
	if (r == -EEXIST) {
		/* `exists`, as for mkdir with parents (section 7.5). */
		fs_send_error(
			c, AGENT_E_EXISTS,
			"tar_upload '%.200s': a non-directory is in the way of the target; remove it or choose another path",
			f->path);
		return;
	}
	if (r < 0) {
		fs_send_errno(c, r, "tar_upload '%.200s': creating the target", f->path);
		return;
	}
	u.tfd = open(f->path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (u.tfd < 0) {
		fs_send_errno(c, errno, "tar_upload '%.200s'", f->path);
		return;
	}
	tar_reader_init(&u.rd, f->path);
	buf = malloc(AGENT_CHUNK_MAX);
	if (!buf) {
		fs_send_errno(c, ENOMEM, "tar_upload '%.200s'", f->path);
		goto out;
	}
	if (upload_payload(&u, buf) < 0)
		goto out;
	for (;;) {
		struct agent_msg m;
		struct agent_err err;

		agent_conn_deadline(c, mono_ms() + AGENT_UPLOAD_IDLE_MS);
		r = agent_conn_next(c, AGENT_CTX_UPLOAD, &m, &err);
		if (r == 1) {
			/* The host left without `end`: what was extracted stays. */
			fs_send_error(
				c, AGENT_E_TRUNCATED,
				"tar_upload '%.200s': connection closed after %llu bytes without 'end'",
				f->path, (unsigned long long)u.bytes);
			goto out;
		}
		if (r < 0) {
			agent_conn_send_err(c, &err);
			goto out;
		}
		if (m.type == AGENT_T_END) {
			agent_msg_free(&m);
			upload_end(&u);
			goto out;
		}
		agent_msg_free(&m);
		if (upload_payload(&u, buf) < 0)
			goto out;
	}
out:
	if (u.fd >= 0)
		close(u.fd);
	tar_reader_free(&u.rd);
	free(buf);
	close(u.tfd);
}

/* ---- download ---- */

struct download {
	struct agent_conn *c;
	const char *path;
	uint8_t *out;
	size_t olen;
	uint64_t bytes, files, dirs, symlinks, skipped;
};

/* Send what is buffered as one data chunk. 0, or -1 when the host is gone. */
static int flush(struct download *d)
{
	struct agent_line l;
	int r;

	if (!d->olen)
		return 0;
	if (agent_line_chunk(&l, AGENT_DATA, -1, d->olen) < 0)
		return -1;
	r = agent_conn_send(d->c, &l, d->out, d->olen);
	agent_line_free(&l);
	if (r < 0)
		return -1;
	d->bytes += d->olen;
	d->olen = 0;
	return 0;
}

static int room(struct download *d, size_t need)
{
	return AGENT_CHUNK_MAX - d->olen < need ? flush(d) : 0;
}

static int put_zeros(struct download *d, size_t n)
{
	while (n) {
		size_t k;

		if (d->olen == AGENT_CHUNK_MAX && flush(d) < 0)
			return -1;
		k = AGENT_CHUNK_MAX - d->olen < n ? AGENT_CHUNK_MAX - d->olen : n;
		memset(d->out + d->olen, 0, k);
		d->olen += k;
		n -= k;
	}
	return 0;
}

static int put_header(struct download *d, const struct tar_out *o)
{
	ssize_t w;

	if (room(d, TAR_HEADER_BUILD_MAX) < 0)
		return -1;
	w = tar_header_build(o, d->out + d->olen, AGENT_CHUNK_MAX - d->olen);
	if (w < 0) {
		fs_send_errno(d->c, (int)w, "tar_download '%.200s': member '%.200s'", d->path,
			      o->name);
		return -1;
	}
	d->olen += (size_t)w;
	return 0;
}

/*
 * Exactly `size` bytes of fd, then padding. A file that shrank is padded
 * with zeros, one that grew is cut (section 7.5). 0, or -1 when the
 * download is over (error line sent, or the host gone).
 */
static int put_data(struct download *d, int fd, uint64_t size, const char *name)
{
	uint64_t left = size;

	while (left) {
		size_t want;
		ssize_t r;

		if (d->olen == AGENT_CHUNK_MAX && flush(d) < 0)
			return -1;
		want = AGENT_CHUNK_MAX - d->olen < left ? AGENT_CHUNK_MAX - d->olen : (size_t)left;
		r = read(fd, d->out + d->olen, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			/* The header promised these bytes: the archive cannot
			 * go on, so the error replaces `end`. */
			fs_send_errno(d->c, errno, "tar_download '%.200s': reading '%.200s'",
				      d->path, name);
			return -1;
		}
		if (r == 0)
			return put_zeros(d, (size_t)left + tar_pad(size));
		d->olen += (size_t)r;
		left -= (uint64_t)r;
	}
	return put_zeros(d, tar_pad(size));
}

static void out_from_stat(struct tar_out *o, const struct stat *st)
{
	o->mode = st->st_mode & 07777;
	o->uid = st->st_uid;
	o->gid = st->st_gid;
	o->mtime = st->st_mtim.tv_sec;
}

/* One regular file from its open descriptor, as member `member`. */
static int put_file_fd(struct download *d, int fd, const char *member, size_t member_len,
		       const struct stat *seen)
{
	struct tar_out o = { .name = member, .name_len = member_len, .type = '0' };
	struct stat st;
	int r;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (seen && (st.st_dev != seen->st_dev || st.st_ino != seen->st_ino))) {
		d->skipped++; /* replaced since the walk saw it */
		return 0;
	}
	out_from_stat(&o, &st);
	o.size = (uint64_t)st.st_size;
	r = put_header(d, &o);
	if (!r)
		r = put_data(d, fd, o.size, member);
	if (!r)
		d->files++;
	return r;
}

/* One regular file, opened from its directory without following links. */
static int put_file(struct download *d, const struct walk_entry *e)
{
	int fd, r;

	/* O_NONBLOCK: if a FIFO was swapped in since the lstat, the open
	 * must not wait for a writer; put_file_fd then refuses it. */
	fd = openat(e->dirfd, e->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		d->skipped++;
		return 0;
	}
	r = put_file_fd(d, fd, e->path, e->path_len, &e->st);
	close(fd);
	return r;
}

static int put_entry(struct download *d, struct walk *w, const struct walk_entry *e)
{
	struct tar_out o = { .name = e->path, .name_len = e->path_len };
	mode_t fmt = e->st.st_mode & S_IFMT;

	if (fmt == S_IFREG)
		return put_file(d, e);
	out_from_stat(&o, &e->st);
	if (fmt == S_IFDIR) {
		char name[AGENT_PATH_MAX + 2];

		/* Directory members end in '/' (section 7.5). */
		memcpy(name, e->path, e->path_len);
		name[e->path_len] = '/';
		o.name = name;
		o.name_len = e->path_len + 1;
		o.type = '5';
		if (put_header(d, &o) < 0)
			return -1;
		d->dirs++;
		if (walk_descend(w, e) < 0)
			d->skipped++;
		return 0;
	}
	if (fmt == S_IFLNK) {
		char target[AGENT_PATH_MAX + 1];
		ssize_t n = readlinkat(e->dirfd, e->name, target, sizeof(target));

		if (n <= 0 || (size_t)n >= sizeof(target)) {
			d->skipped++;
			return 0;
		}
		o.type = '2';
		o.link = target;
		o.link_len = (size_t)n;
		if (put_header(d, &o) < 0)
			return -1;
		d->symlinks++;
		return 0;
	}
	d->skipped++; /* devices, FIFOs, sockets */
	return 0;
}

void op_tar_download(struct agent_conn *c, const struct agent_file_req *f)
{
	struct download d = { .c = c, .path = f->path };
	struct stat st;
	int fd;

	/* O_NONBLOCK so that naming a FIFO does not wait for a writer. */
	fd = open(f->path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		fs_send_errno(c, errno, "tar_download '%.200s'", f->path);
		return;
	}
	if (fstat(fd, &st) < 0) {
		fs_send_errno(c, errno, "tar_download '%.200s'", f->path);
		close(fd);
		return;
	}
	d.out = malloc(AGENT_CHUNK_MAX);
	if (!d.out) {
		fs_send_errno(c, ENOMEM, "tar_download '%.200s'", f->path);
		close(fd);
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		struct walk w;
		struct walk_entry e;
		int r = walk_open(&w, fd, "");

		if (r < 0) {
			fs_send_errno(c, r, "tar_download '%.200s'", f->path);
			goto out;
		}
		while ((r = walk_next(&w, &e)) > 0)
			if (put_entry(&d, &w, &e) < 0)
				break;
		d.skipped += w.skipped;
		walk_close(&w);
		if (r > 0)
			goto out; /* stopped: error sent or host gone */
		if (r < 0) {
			fs_send_errno(c, r, "tar_download '%.200s'", f->path);
			goto out;
		}
	} else if (S_ISREG(st.st_mode)) {
		/* A single file, under its base name. */
		const char *base = strrchr(f->path, '/') + 1;
		int r = put_file_fd(&d, fd, base, strlen(base), NULL);

		close(fd);
		if (r < 0)
			goto out;
	} else {
		close(fd);
		d.skipped++;
	}
	if (put_zeros(&d, 2 * TAR_BLOCK) < 0 || flush(&d) < 0)
		goto out;
	{
		const struct agent_kv kv[] = {
			AGENT_INT("bytes", d.bytes),     AGENT_INT("files", d.files),
			AGENT_INT("dirs", d.dirs),       AGENT_INT("symlinks", d.symlinks),
			AGENT_INT("skipped", d.skipped),
		};
		struct agent_line l;

		agent_conn_send_line(c, &l, agent_line_end(&l, kv, 5));
	}
out:
	free(d.out);
}
