/*
 * agent_files: the file requests of docs/agent-protocol.md, section 7.5.
 * agent_files_serve() switches the thread to the request's user and calls
 * the operation; read, write, stat, exists, mkdir and rename live here,
 * list_dir in agent_list.c, remove in agent_remove.c, the tar requests in
 * agent_tar_io.c.
 */
#include "guest-init/agent/agent_files.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guest-init/agent/agent_files_ops.h"
#include "lib/base/fd_io.h"

/* ---- waiting on FIFOs and devices ---- */

/*
 * Read and write open non-regular files with O_NONBLOCK: a FIFO a guest
 * process planted at the path would otherwise block open() until some
 * writer (or reader) shows up, and a blocking read() or write() until it
 * moves data, with nobody noticing that the host gave up, so every such
 * request would hold a connection slot for good. Instead EAGAIN waits in
 * poll() beside the connection, and a host that leaves ends the wait.
 * Regular files ignore O_NONBLOCK. 0: fd is ready (or erred: retry the
 * call), HOST_GONE: the host left.
 */
#define HOST_GONE (-ESHUTDOWN) /* no read() or write() on a file returns it */

static int fd_wait(struct agent_conn *c, int fd, short events)
{
	struct pollfd pf[2] = {
		{ .fd = fd, .events = events },
		{ .fd = c->fd, .events = POLLRDHUP },
	};

	if (poll(pf, 2, -1) < 0 && errno != EINTR)
		return -errno;
	if (pf[1].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))
		return HOST_GONE;
	return 0;
}

/* fd_io's waiter: fd_wait() on the request's connection, so a host
 * that went away ends the write (HOST_GONE). */
static int conn_wait(void *arg, int fd, short events)
{
	return fd_wait(arg, fd, events);
}

/* read() that waits for a non-blocking fd. >= 0, or -errno (or HOST_GONE). */
static ssize_t read_wait(struct agent_conn *c, int fd, void *buf, size_t n)
{
	return fd_io_read_some(fd, buf, n, &(struct fd_io_waiter){ conn_wait, c });
}

/* Write all n bytes to a non-blocking fd. 0 or -errno (or HOST_GONE). */
static int write_all_wait(struct agent_conn *c, int fd, const uint8_t *p, size_t n)
{
	return fd_io_put_all(fd, p, n, 0, &(struct fd_io_waiter){ conn_wait, c });
}

/* ---- read ---- */

/* Move a non-seekable file (FIFO, some devices) to `offset` by reading. */
static int skip_bytes(struct agent_conn *c, int fd, uint64_t offset, uint8_t *buf)
{
	while (offset) {
		ssize_t r = read_wait(c, fd, buf,
				      offset < AGENT_CHUNK_MAX ? (size_t)offset : AGENT_CHUNK_MAX);

		if (r < 0)
			return (int)r;
		if (r == 0)
			return 0; /* past EOF: nothing to send */
		offset -= (uint64_t)r;
	}
	return 0;
}

void op_read(struct agent_conn *c, const struct agent_file_req *f)
{
	uint64_t left = f->length, sent = 0;
	struct agent_line l;
	struct stat st;
	uint8_t *buf = NULL;
	int fd;

	/* O_NONBLOCK: see fd_wait(). A FIFO without a writer reads as empty. */
	fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		fs_send_errno(c, errno, "read '%.200s'", f->path);
		return;
	}
	if (fstat(fd, &st) < 0) {
		fs_send_errno(c, errno, "read '%.200s': fstat", f->path);
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		fs_send_error(c, AGENT_E_IS_DIRECTORY,
			      "read '%.200s': it is a directory; use list_dir or tar_download",
			      f->path);
		goto out;
	}
	buf = malloc(AGENT_CHUNK_MAX);
	if (!buf) {
		fs_send_errno(c, ENOMEM, "read '%.200s'", f->path);
		goto out;
	}
	if (agent_conn_send_line(c, &l, agent_line_file(&l, (uint64_t)st.st_size)) < 0)
		goto out;
	if (f->offset && lseek(fd, (off_t)f->offset, SEEK_SET) < 0) {
		int e = errno == ESPIPE ? -skip_bytes(c, fd, f->offset, buf) : errno;

		if (e == -HOST_GONE)
			goto out; /* the host is gone */
		if (e) {
			fs_send_errno(c, e, "read '%.200s': seeking to %llu", f->path,
				      (unsigned long long)f->offset);
			goto out;
		}
	}
	while (left) {
		size_t want = left < AGENT_CHUNK_MAX ? (size_t)left : AGENT_CHUNK_MAX;
		ssize_t r = read_wait(c, fd, buf, want);

		if (r == HOST_GONE)
			goto out; /* the host is gone: stop producing */
		if (r < 0) {
			/* After data went out, an error replaces `end`: the
			 * host discards what it got (section 7.5). */
			fs_send_errno(c, (int)r, "read '%.200s' after %llu bytes", f->path,
				      (unsigned long long)sent);
			goto out;
		}
		if (r == 0)
			break;
		if (agent_line_chunk(&l, AGENT_DATA, -1, (uint64_t)r) < 0)
			goto out;
		if (agent_conn_send(c, &l, buf, (size_t)r) < 0) {
			agent_line_free(&l);
			goto out; /* the host is gone: stop producing */
		}
		agent_line_free(&l);
		sent += (uint64_t)r;
		left -= (uint64_t)r;
	}
	{
		const struct agent_kv kv = AGENT_INT("bytes", sent);

		agent_conn_send_line(c, &l, agent_line_end(&l, &kv, 1));
	}
out:
	free(buf);
	close(fd);
}

/* ---- write ---- */

/* Copy the current message's payload into fd. 0, or -1 after an error line. */
static int payload_to_file(struct agent_conn *c, int fd, uint8_t *buf, const char *path,
			   uint64_t *total)
{
	struct agent_err err;

	for (;;) {
		ssize_t r = agent_conn_payload(c, buf, AGENT_CHUNK_MAX, &err);
		int w;

		if (r < 0) {
			agent_conn_send_err(c, &err);
			return -1;
		}
		if (r == 0)
			return 0;
		w = write_all_wait(c, fd, buf, (size_t)r);
		if (w == HOST_GONE)
			return -1; /* the host is gone */
		if (w < 0) {
			fs_send_errno(c, w, "write '%.200s' after %llu bytes", path,
				      (unsigned long long)*total);
			return -1;
		}
		*total += (uint64_t)r;
	}
}

static void write_open_error(struct agent_conn *c, const struct agent_file_req *f, int e)
{
	if (e == EEXIST && f->exclusive)
		fs_send_error(
			c, AGENT_E_EXISTS,
			"write '%.200s': it exists and \"exclusive\" was given; remove it first or leave \"exclusive\" out",
			f->path);
	else if (e == ENOENT && !f->create)
		fs_send_error(
			c, AGENT_E_NOT_FOUND,
			"write '%.200s': no such file and \"create\" is false; create it or leave \"create\" out",
			f->path);
	else if (e == ENOENT && !f->parents)
		fs_send_error(
			c, AGENT_E_NOT_FOUND,
			"write '%.200s': its directory does not exist; create it or pass \"parents\": true",
			f->path);
	else
		fs_send_errno(c, e, "write '%.200s'", f->path);
}

void op_write(struct agent_conn *c, struct agent_msg *req)
{
	const struct agent_file_req *f = &req->u.file;
	/* O_NONBLOCK: see fd_wait(). A FIFO without a reader is ENXIO. */
	int flags = O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
	uint64_t total = 0;
	uint8_t *buf;
	int fd;

	if (f->create)
		flags |= O_CREAT;
	if (f->exclusive)
		flags |= O_EXCL;
	flags |= f->append ? O_APPEND : O_TRUNC;

	/* The umask is 0 here (fs_cred_enter), so a new file gets `mode`
	 * exactly; an existing file keeps its own. */
	fd = open(f->path, flags, f->mode);
	if (fd < 0 && errno == ENOENT && f->create && f->parents) {
		char dir[AGENT_PATH_MAX + 1];
		char *slash;
		int r;

		snprintf(dir, sizeof(dir), "%s", f->path);
		slash = strrchr(dir, '/');
		if (slash && slash != dir) {
			*slash = '\0';
			r = fs_mkdir_p(dir, AGENT_DIR_MODE_DEFAULT);
			if (r < 0) {
				fs_send_errno(c, r, "write '%.200s': creating its directories",
					      f->path);
				return;
			}
		}
		fd = open(f->path, flags, f->mode);
	}
	if (fd < 0) {
		/* Answered at once; the upload is never read (section 7.5). */
		write_open_error(c, f, errno);
		return;
	}
	buf = malloc(AGENT_CHUNK_MAX);
	if (!buf) {
		fs_send_errno(c, ENOMEM, "write '%.200s'", f->path);
		goto out;
	}
	/* The request's own payload arrives under the request deadline the
	 * server set; each later message gets the upload idle time. */
	if (payload_to_file(c, fd, buf, f->path, &total) < 0)
		goto out;
	for (;;) {
		struct agent_msg m;
		struct agent_err err;
		int r;

		agent_conn_deadline(c, mono_ms() + AGENT_UPLOAD_IDLE_MS);
		r = agent_conn_next(c, AGENT_CTX_UPLOAD, &m, &err);
		if (r == 1) {
			/* The host left without `end`: what was written stays. */
			fs_send_error(c, AGENT_E_TRUNCATED,
				      "write '%.200s': connection closed after %llu bytes without 'end'",
				      f->path, (unsigned long long)total);
			goto out;
		}
		if (r < 0) {
			agent_conn_send_err(c, &err);
			goto out;
		}
		if (m.type == AGENT_T_END) {
			struct agent_line l;
			const struct agent_kv kv = AGENT_INT("bytes", total);
			int e = close(fd) < 0 ? errno : 0;

			agent_msg_free(&m);
			fd = -1;
			/* Network and FUSE filesystems report some write
			 * errors (quota, EIO) only at close. */
			if (e && e != EINTR)
				fs_send_errno(c, e, "write '%.200s': closing", f->path);
			else
				agent_conn_send_line(c, &l, agent_line_ok(&l, &kv, 1));
			goto out;
		}
		agent_msg_free(&m);
		if (payload_to_file(c, fd, buf, f->path, &total) < 0)
			goto out;
	}
out:
	free(buf);
	if (fd >= 0)
		close(fd);
}

/* ---- stat, exists ---- */

void op_stat(struct agent_conn *c, const struct agent_file_req *f, bool exists_only)
{
	char target[AGENT_PATH_MAX + 1];
	struct agent_stat as;
	struct agent_line l;
	struct stat st;
	int flags = f->follow ? 0 : AT_SYMLINK_NOFOLLOW;
	const char *op = exists_only ? "exists" : "stat";

	if (fstatat(AT_FDCWD, f->path, &st, flags) < 0) {
		int e = errno;

		/* exists answers false only when the path names nothing. */
		if (exists_only && (e == ENOENT || e == ENOTDIR))
			agent_conn_send_line(c, &l, agent_line_exists(&l, false, 0));
		else
			fs_send_errno(c, e, "%s '%.200s'", op, f->path);
		return;
	}
	if (exists_only) {
		agent_conn_send_line(c, &l, agent_line_exists(&l, true, st.st_mode));
		return;
	}
	memset(&as, 0, sizeof(as));
	as.path = f->path;
	as.path_len = strlen(f->path);
	as.st_mode = st.st_mode;
	as.size = (uint64_t)st.st_size;
	as.uid = st.st_uid;
	as.gid = st.st_gid;
	as.nlink = st.st_nlink;
	as.mtime_ns = fs_mtime_ns(&st);
	if (S_ISLNK(st.st_mode)) {
		ssize_t n = readlink(f->path, target, sizeof(target));

		/* Replaced between the lstat and now, or unreadable: the
		 * stat still stands, with an empty target. */
		if (n < 0 || (size_t)n >= sizeof(target))
			n = 0;
		as.target = target;
		as.target_len = (size_t)n;
	}
	agent_conn_send_line(c, &l, agent_line_stat(&l, &as, false));
}

/* ---- mkdir ---- */

void op_mkdir(struct agent_conn *c, const struct agent_file_req *f)
{
	struct agent_line l;
	int r;

	if (f->parents) {
		r = fs_mkdir_p(f->path, f->mode);
		if (r == -EEXIST) {
			fs_send_error(
				c, AGENT_E_EXISTS,
				"mkdir '%.200s': something that is not a directory is in the way; remove it first",
				f->path);
			return;
		}
	} else {
		r = mkdir(f->path, f->mode & 07777) < 0 ? -errno : 0;
		if (r == -EEXIST) {
			fs_send_error(
				c, AGENT_E_EXISTS,
				"mkdir '%.200s': it exists; pass \"parents\": true to accept an existing directory",
				f->path);
			return;
		}
		if (r == -ENOENT) {
			fs_send_error(
				c, AGENT_E_NOT_FOUND,
				"mkdir '%.200s': its parent does not exist; pass \"parents\": true to create it",
				f->path);
			return;
		}
		if (!r)
			r = fs_dir_mode_fixup(AT_FDCWD, f->path, f->mode);
	}
	if (r < 0) {
		fs_send_errno(c, r, "mkdir '%.200s'", f->path);
		return;
	}
	agent_conn_send_line(c, &l, agent_line_ok(&l, NULL, 0));
}

/* ---- rename ---- */

void op_rename(struct agent_conn *c, const struct agent_file_req *f)
{
	struct agent_line l;
	unsigned flags = f->overwrite ? 0 : RENAME_NOREPLACE;

	if (renameat2(AT_FDCWD, f->path, AT_FDCWD, f->to, flags) == 0) {
		agent_conn_send_line(c, &l, agent_line_ok(&l, NULL, 0));
		return;
	}
	switch (errno) {
	case EEXIST:
		fs_send_error(
			c, AGENT_E_EXISTS,
			"rename '%.200s' to '%.200s': target exists; pass \"overwrite\": true to replace it",
			f->path, f->to);
		break;
	case EXDEV:
		fs_send_errno(c, EXDEV,
			      "rename '%.200s' to '%.200s' crosses filesystems; copy and remove instead",
			      f->path, f->to);
		break;
	case EINVAL:
		/* RENAME_NOREPLACE is refused by filesystems that cannot do
		 * it atomically; renaming into its own subdirectory also. */
		fs_send_errno(
			c, EINVAL,
			"rename '%.200s' to '%.200s' (a directory into itself, or \"overwrite\": false on a filesystem without RENAME_NOREPLACE)",
			f->path, f->to);
		break;
	default:
		fs_send_errno(c, errno, "rename '%.200s' to '%.200s'", f->path, f->to);
		break;
	}
}

/* ---- dispatch ---- */

void agent_files_serve(struct agent_conn *c, struct agent_msg *req)
{
	const struct agent_file_req *f = &req->u.file;
	struct fs_cred cred;
	int r;

	r = fs_cred_enter(&cred, f->user);
	if (r < 0) {
		fs_send_errno(c, r, "%s: cannot take on the credentials of '%s'",
			      agent_type_name(req->type),
			      f->user == AGENT_USER_ROOT ? "root" : "user");
		return;
	}
	switch (req->type) {
	case AGENT_T_READ:
		op_read(c, f);
		break;
	case AGENT_T_WRITE:
		op_write(c, req);
		break;
	case AGENT_T_STAT:
		op_stat(c, f, false);
		break;
	case AGENT_T_EXISTS:
		op_stat(c, f, true);
		break;
	case AGENT_T_LIST_DIR:
		op_list_dir(c, f);
		break;
	case AGENT_T_MKDIR:
		op_mkdir(c, f);
		break;
	case AGENT_T_REMOVE:
		op_remove(c, f);
		break;
	case AGENT_T_RENAME:
		op_rename(c, f);
		break;
	case AGENT_T_TAR_UPLOAD:
		op_tar_upload(c, req);
		break;
	case AGENT_T_TAR_DOWNLOAD:
		op_tar_download(c, f);
		break;
	default:
		fs_send_error(c, AGENT_E_UNEXPECTED_TYPE, "'%s' is not a file request",
			      agent_type_name(req->type) ? agent_type_name(req->type) : "?");
		break;
	}
	fs_cred_leave(&cred);
}
