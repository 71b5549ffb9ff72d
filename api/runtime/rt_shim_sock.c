/* A container's shim socket; see rt_shim_sock.h. */
#include "api/runtime/rt_shim_sock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/base/fd_io.h"
#include "lib/base/mono.h"

static void sock_addr(int dirfd, struct sockaddr_un *a)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	snprintf(a->sun_path, sizeof(a->sun_path), "/proc/self/fd/%d/" RT_SHIM_SOCK, dirfd);
}

int rt_shim_sock_listen(int dirfd, int *fd, struct err *e)
{
	struct sockaddr_un a;
	int s, r;

	sock_addr(dirfd, &a);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return err_set(e, errno, "shim.sock: socket: %s", strerror(errno));
	unlinkat(dirfd, RT_SHIM_SOCK, 0);
	if (bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    fchmodat(dirfd, RT_SHIM_SOCK, 0600, 0) < 0 || listen(s, 8) < 0) {
		r = err_set(e, errno, "shim.sock: %s", strerror(errno));
		close(s);
		return r;
	}
	*fd = s;
	return 0;
}

/* One line from fd (up to '\n', at most RT_SHIM_LINE_MAX bytes) within
 * deadline; its length, or -errno. */
static ssize_t read_line(int fd, char *buf, int64_t deadline)
{
	size_t n = 0;

	while (n < RT_SHIM_LINE_MAX && (n == 0 || buf[n - 1] != '\n')) {
		struct pollfd p = { fd, POLLIN, 0 };
		int64_t left = deadline - mono_ms();
		ssize_t k;

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
			return -errno;
		if (!p.revents)
			continue;
		k = recv(fd, buf + n, RT_SHIM_LINE_MAX - n, MSG_DONTWAIT);
		if (k == 0)
			break;
		if (k < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (k > 0)
			n += (size_t)k;
	}
	return (ssize_t)n;
}

int rt_shim_sock_accept(int lfd, int *conn, struct rt_shim_req *r, struct err *e)
{
	char line[RT_SHIM_LINE_MAX];
	ssize_t n;
	int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

	if (c < 0)
		return err_set(e, errno, "shim.sock: accept: %s", strerror(errno));
	/* a command sends its line at once: a client that does not is
	 * dropped, it does not hold the shim */
	n = read_line(c, line, mono_ms() + RT_SHIM_CALL_MS);
	if (n < 0 || rt_shim_req_decode(line, (size_t)n, r, e) < 0) {
		if (n < 0)
			err_set(e, (int)-n, "shim.sock: reading a request: %s", strerror((int)-n));
		close(c);
		return -EINVAL;
	}
	*conn = c;
	return 0;
}

int rt_shim_sock_reply(int conn, const char *msg)
{
	char line[RT_SHIM_LINE_MAX];
	size_t n = rt_shim_reply_encode(msg, line);
	int r = fd_io_send_all(conn, line, n);

	close(conn);
	return r;
}

int rt_shim_sock_call(int dirfd, const struct rt_shim_req *req, int timeout_ms, struct err *e)
{
	char line[RT_SHIM_LINE_MAX];
	struct sockaddr_un a;
	ssize_t n;
	int s, r;

	sock_addr(dirfd, &a);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return err_set(e, errno, "shim.sock: socket: %s", strerror(errno));
	if (connect(s, (struct sockaddr *)&a, sizeof(a)) < 0) {
		r = err_set(e, errno, "the container's shim is not running (shim.sock: %s)",
			    strerror(errno));
		close(s);
		return r;
	}
	n = (ssize_t)rt_shim_req_encode(req, line);
	if (fd_io_send_all(s, line, (size_t)n) < 0) {
		r = err_set(e, errno, "shim.sock: sending: %s", strerror(errno));
		close(s);
		return r;
	}
	n = read_line(s, line, mono_ms() + timeout_ms);
	close(s);
	if (n == -ETIMEDOUT)
		return err_set(e, ETIMEDOUT, "the container's shim did not answer in %d ms",
			       timeout_ms);
	if (n < 0)
		return err_set(e, (int)-n, "shim.sock: %s", strerror((int)-n));
	return rt_shim_reply_decode(line, (size_t)n, e);
}
