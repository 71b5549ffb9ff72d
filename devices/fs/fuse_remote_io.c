#include "devices/fs/fuse_remote_io.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/base/fd_io.h"
#include "lib/base/mono.h"

int fuse_remote_io_init(struct fuse_remote_io *io, const char *path, int timeout_ms)
{
	memset(io, 0, sizeof(*io));
	io->fd = -1;
	if (!path || !path[0] || strlen(path) >= sizeof(io->path) ||
	    timeout_ms < FS_REMOTE_TIMEOUT_MS_MIN || timeout_ms > FS_REMOTE_TIMEOUT_MS_MAX)
		return -EINVAL;
	strcpy(io->path, path);
	io->timeout_ms = timeout_ms;
	io->line = malloc(FS_REMOTE_LINE_MAX);
	io->buf = malloc(FS_REMOTE_LINE_MAX);
	if (!io->line || !io->buf) {
		fuse_remote_io_fini(io);
		return -ENOMEM;
	}
	return 0;
}

void fuse_remote_io_batch(struct fuse_remote_io *io)
{
	io->shed = 0;
}

void fuse_remote_io_close(struct fuse_remote_io *io)
{
	if (io->fd >= 0)
		close(io->fd);
	io->fd = -1;
	io->have = 0;
}

void fuse_remote_io_fini(struct fuse_remote_io *io)
{
	fuse_remote_io_close(io);
	free(io->line);
	free(io->buf);
	io->line = io->buf = NULL;
}

/* One line to the log, at most one a second (a hostile client must not
 * flood it): what was held back is counted in the next. */
static void io_log(struct fuse_remote_io *io, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void io_log(struct fuse_remote_io *io, const char *fmt, ...)
{
	char msg[512];
	int64_t now = mono_ms();
	va_list ap;
	int n;

	if (!io->log)
		return;
	if (now < io->log_next_ms) {
		io->log_dropped++;
		return;
	}
	n = snprintf(msg, sizeof(msg), "virtio-fs %s: ", io->name ? io->name : io->path);
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	if (io->log_dropped) {
		size_t l = strlen(msg);

		snprintf(msg + l, sizeof(msg) - l, " (%u similar lines not logged)",
			 io->log_dropped);
	}
	io->log(io->log_ctx, msg);
	io->log_next_ms = now + 1000;
	io->log_dropped = 0;
}

static int io_connect(struct fuse_remote_io *io)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), err;

	if (fd < 0)
		return -errno;
	strcpy(sa.sun_path, io->path);
	/* AF_UNIX connects at once or fails (EAGAIN: the backlog is full). */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	io->fd = fd;
	io->have = 0;
	io->st.connects++;
	return 0;
}

/* fd_io's waiter: poll until the request's deadline. */
static int wait_until(void *arg, int fd, short events)
{
	int64_t left = *(int64_t *)arg - mono_ms();
	struct pollfd p = { .fd = fd, .events = events };
	int n;

	if (left <= 0)
		return -ETIMEDOUT;
	do
		n = poll(&p, 1, (int)left);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == 0 ? -ETIMEDOUT : 0;
}

/* Read until buf holds a '\n': the line's length without it, or -errno. */
static long read_line(struct fuse_remote_io *io, int64_t *deadline)
{
	struct fd_io_waiter w = { wait_until, deadline };
	char *nl;

	while (!(nl = memchr(io->buf, '\n', io->have))) {
		ssize_t n;

		if (io->have == FS_REMOTE_LINE_MAX)
			return -EPROTO;
		n = fd_io_read_some(io->fd, io->buf + io->have, FS_REMOTE_LINE_MAX - io->have, &w);
		if (n == 0)
			return -EPIPE;
		if (n < 0)
			return n;
		io->have += (size_t)n;
	}
	return nl - io->buf;
}

/* Between requests the server has nothing to say: an idle connection
 * that is readable has ended (kilnd restarted or dropped it) or holds
 * bytes nobody asked for. Either way it is closed, so this request
 * connects again rather than failing on it (or reading those bytes as
 * its reply). */
static void drop_stale(struct fuse_remote_io *io)
{
	struct pollfd p = { .fd = io->fd, .events = POLLIN };

	if (io->fd >= 0 && poll(&p, 1, 0) > 0 && p.revents)
		fuse_remote_io_close(io);
}

long fuse_remote_io_call(struct fuse_remote_io *io, const char *line, size_t len,
			 const char **reply)
{
	int64_t deadline = mono_ms() + io->timeout_ms;
	struct fd_io_waiter w = { wait_until, &deadline };
	long n;
	int err;

	io->st.asked++;
	if (io->shed) {
		io->st.shed++;
		return -ETIMEDOUT;
	}
	drop_stale(io);
	if (io->fd < 0 && (err = io_connect(io)) < 0) {
		io->st.unreachable++;
		io_log(io, "cannot connect to %s: %s (the guest gets EIO)", io->path,
		       strerror(-err));
		return -ENOTCONN;
	}
	err = fd_io_put_all(io->fd, line, len, FD_IO_SEND, &w);
	n = err < 0 ? err : read_line(io, &deadline);
	if (n < 0) {
		if (n == -ETIMEDOUT) {
			io->st.timeouts++;
			io->shed = 1;
		}
		io_log(io, "%s (the guest gets EIO; the next request connects again)",
		       n == -ETIMEDOUT        ? "no reply within the timeout"
			       : n == -EPROTO ? "a reply line longer than the protocol allows"
			       : n == -EPIPE  ? "the server closed the connection"
					      : strerror((int)-n));
		fuse_remote_io_close(io);
		return n;
	}
	*reply = io->buf;
	/* One request outstanding: anything after its reply is nobody's. */
	if ((size_t)n + 1 != io->have) {
		io_log(io, "bytes after the reply line: connection dropped");
		io->st.broken++;
		close(io->fd);
		io->fd = -1;
	}
	io->have = 0;
	return n;
}

long fuse_remote_io_handle(struct fuse_remote_io *io, struct fuse_remote *fr, const void *in,
			   size_t in_len, void *out, size_t out_cap)
{
	const char *reply = NULL;
	struct err e;
	size_t ll;
	long n = fuse_remote_begin(fr, in, in_len, out, out_cap, io->line, &ll);

	if (!ll)
		return n;
	n = fuse_remote_io_call(io, io->line, ll, &reply);
	n = fuse_remote_finish(fr, n >= 0 ? reply : NULL, n >= 0 ? (size_t)n : 0, out, out_cap, &e);
	if (e.msg[0]) {
		io->st.broken++;
		io_log(io, "broken reply: %s (the guest gets EIO; connection dropped)", e.msg);
		fuse_remote_io_close(io);
	} else if (reply) {
		io->st.answered++;
	}
	return n;
}
