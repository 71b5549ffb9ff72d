/* Handing a pty master over --console-socket; see console_sock.h. */
#include "api/runtime/console_sock.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/base/term_mode.h"

int console_pty_open(int *master, int *slave, struct err *e)
{
	char name[64];
	int m, s, r;

	m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0)
		return err_set(e, errno, "opening a pty (/dev/ptmx): %s; is devpts mounted?",
			       strerror(errno));
	if (unlockpt(m) < 0 || (r = ptsname_r(m, name, sizeof(name))) != 0) {
		r = errno;
		close(m);
		return err_set(e, r, "unlocking the pty: %s", strerror(r));
	}
	s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (s < 0) {
		r = errno;
		close(m);
		return err_set(e, r, "opening the pty's slave %s: %s", name, strerror(r));
	}
	*master = m;
	*slave = s;
	return 0;
}

int console_pty_open_raw(int *master, int *slave, struct err *e)
{
	struct term_mode_saved saved;
	int r = console_pty_open(master, slave, e);

	if (r < 0)
		return r;
	/* the settings saved are never restored: the slave is the shim's */
	r = term_mode_enter(*slave, TERM_MODE_RAW, &saved);
	if (r < 0) {
		close(*master);
		close(*slave);
		return err_set(e, -r, "making the pty raw: %s", strerror(-r));
	}
	return 0;
}

int console_pty_set_size(int fd, unsigned rows, unsigned cols, struct err *e)
{
	struct winsize w = { .ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols };

	if (rows > 65535 || cols > 65535)
		return err_set(e, EINVAL, "a terminal of %ux%u: at most 65535 each way", rows,
			       cols);
	if (ioctl(fd, TIOCSWINSZ, &w) < 0)
		return err_set(e, errno, "setting the terminal's size: %s", strerror(errno));
	return 0;
}

int console_pty_get_size(int fd, unsigned *rows, unsigned *cols, struct err *e)
{
	struct winsize w;

	if (ioctl(fd, TIOCGWINSZ, &w) < 0)
		return err_set(e, errno, "reading the terminal's size: %s", strerror(errno));
	*rows = w.ws_row;
	*cols = w.ws_col;
	return 0;
}

/* Where to connect: path itself, or /proc/self/fd/N/NAME through its
 * directory's descriptor *dirfd when path does not fit in sun_path. */
static int sock_addr(const char *path, struct sockaddr_un *a, int *dirfd, struct err *e)
{
	char copy[4096], base[4096];

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	*dirfd = -1;
	if (strlen(path) < sizeof(a->sun_path)) {
		memcpy(a->sun_path, path, strlen(path) + 1);
		return 0;
	}
	if (strlen(path) >= sizeof(copy))
		return err_set(e, ENAMETOOLONG, "--console-socket: the path is too long");
	snprintf(copy, sizeof(copy), "%s", path);
	snprintf(base, sizeof(base), "%s", basename(copy));
	*dirfd = open(dirname(copy), O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (*dirfd < 0)
		return err_set(e, errno, "--console-socket %.200s: its directory: %s", path,
			       strerror(errno));
	if ((size_t)snprintf(a->sun_path, sizeof(a->sun_path), "/proc/self/fd/%d/%s", *dirfd,
			     base) >= sizeof(a->sun_path)) {
		close(*dirfd);
		*dirfd = -1;
		return err_set(e, ENAMETOOLONG,
			       "--console-socket %.200s: the socket's name is too long", path);
	}
	return 0;
}

int console_sock_connect(const char *path, int *fd, struct err *e)
{
	struct sockaddr_un a;
	int dirfd, s, r;

	if (sock_addr(path, &a, &dirfd, e) < 0)
		return -ENAMETOOLONG;
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		r = err_set(e, errno, "--console-socket: socket: %s", strerror(errno));
	} else if (connect(s, (struct sockaddr *)&a, sizeof(a)) < 0) {
		r = err_set(e, errno,
			    "--console-socket %.200s: connect: %s (is the engine listening?)", path,
			    strerror(errno));
		close(s);
	} else {
		*fd = s;
		r = 0;
	}
	if (dirfd >= 0)
		close(dirfd);
	return r;
}

int console_sock_send(int sock, int master, const char *name, struct err *e)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = (void *)name, .iov_len = strlen(name) };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = ctl.buf,
		.msg_controllen = sizeof(ctl.buf),
	};
	struct cmsghdr *c;
	ssize_t n;

	if (iov.iov_len == 0 || iov.iov_len >= CONSOLE_NAME_MAX)
		return err_set(e, EINVAL, "console socket: the pty's name must be 1 to %d bytes",
			       CONSOLE_NAME_MAX - 1);
	memset(&ctl, 0, sizeof(ctl));
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &master, sizeof(int));
	do
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return err_set(e, errno, "--console-socket: sending the pty: %s", strerror(errno));
	/* A stream socket could take part of the name; runc's receiver
	 * reads one message, so a short send is a failure here too. */
	if ((size_t)n != iov.iov_len)
		return err_set(e, EIO, "--console-socket: sent %zd of %zu bytes of the pty's name",
			       n, iov.iov_len);
	return 0;
}

int console_sock_hand_over(const char *path, int master, struct err *e)
{
	int s, r;

	r = console_sock_connect(path, &s, e);
	if (r < 0)
		return r;
	r = console_sock_send(s, master, CONSOLE_MASTER_NAME, e);
	close(s);
	return r;
}

/* Close every descriptor a message carried (all but the one kept). */
static void close_fds(struct msghdr *msg, int keep)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (fd != keep)
				close(fd);
		}
	}
}

int console_sock_recv(int sock, int *fd, char *name, size_t cap, struct err *e)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = name, .iov_len = cap ? cap - 1 : 0 };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = ctl.buf,
		.msg_controllen = sizeof(ctl.buf),
	};
	struct cmsghdr *c;
	ssize_t n;
	int got = -1;

	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return err_set(e, errno, "console socket: recvmsg: %s", strerror(errno));
	if (cap)
		name[n] = '\0';
	c = CMSG_FIRSTHDR(&msg);
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
	    c->cmsg_len == CMSG_LEN(sizeof(int)) && !CMSG_NXTHDR(&msg, c) &&
	    !(msg.msg_flags & MSG_CTRUNC))
		memcpy(&got, CMSG_DATA(c), sizeof(int));
	close_fds(&msg, got);
	if (got < 0)
		return err_set(e, EBADMSG,
			       "console socket: the message did not carry exactly one descriptor");
	*fd = got;
	return 0;
}
