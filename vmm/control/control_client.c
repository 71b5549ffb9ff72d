/* kiln-vmm's control socket, the client's transport; see control_client.h. */
#include "vmm/control/control_client.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/base/fd_io.h"
#include "lib/base/mono.h"

/* Wait for events on fd until the deadline. 1 ready, 0 timed out, -errno. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		int64_t left = deadline - mono_ms();
		int r;

		if (left <= 0)
			return 0;
		r = poll(&p, 1, left > 60000 ? 60000 : (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r > 0)
			return 1;
	}
}

/* fd_io's waiter: wait_fd() until the exchange's deadline. */
static int deadline_wait(void *arg, int fd, short events)
{
	int r = wait_fd(fd, events, *(const int64_t *)arg);

	return r > 0 ? 0 : r < 0 ? r : -ETIMEDOUT;
}

/* The line's first bytes with the descriptor (SCM_RIGHTS); how many
 * went, or -1 with errno. */
static ssize_t send_with_fd(int sock, const char *line, size_t len, int fd, int64_t deadline)
{
	union {
		struct cmsghdr h;
		char space[CMSG_SPACE(sizeof(int))];
	} u = { 0 };
	struct iovec iov = { (void *)line, len };
	struct msghdr m = { .msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.space,
			    .msg_controllen = sizeof(u.space) };
	struct cmsghdr *h = CMSG_FIRSTHDR(&m);
	ssize_t k;

	h->cmsg_level = SOL_SOCKET;
	h->cmsg_type = SCM_RIGHTS;
	h->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(h), &fd, sizeof(int));
	while ((k = sendmsg(sock, &m, MSG_NOSIGNAL)) < 0 &&
	       (errno == EINTR || (errno == EAGAIN && wait_fd(sock, POLLOUT, deadline) > 0)))
		;
	return k;
}

/*
 * Send line[len] (ending in its newline; modified), with send_fd (>= 0)
 * along with its first bytes, and read one reply line of at most
 * reply_max bytes into *reply (malloc'd, without the newline).
 */
static int exchange(const char *sock_path, char *line, size_t len, int send_fd, size_t reply_max,
		    int timeout_ms, char **reply_out, struct err *e)
{
	size_t sent = 0;
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char *reply;
	int64_t deadline;
	size_t have = 0;
	int fd, r;

	*reply_out = NULL;
	if (timeout_ms <= 0)
		timeout_ms = CONTROL_CLIENT_TIMEOUT_MS;
	deadline = mono_ms() + timeout_ms;
	if (strlen(sock_path) >= sizeof(a.sun_path))
		return err_set(e, ENAMETOOLONG, "kiln-vmm control socket '%s': path too long",
			       sock_path);
	memcpy(a.sun_path, sock_path, strlen(sock_path) + 1);
	reply = malloc(reply_max + 1);
	if (!reply)
		return err_set(e, ENOMEM, "kiln-vmm control: out of memory");
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		r = err_set(e, errno, "kiln-vmm control: socket: %s", strerror(errno));
		free(reply);
		return r;
	}
	/* A Unix connect does not block on a listening socket; a full backlog
	 * (EAGAIN) means kiln-vmm is busy with other clients. */
	while (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN && mono_ms() < deadline) {
			usleep(10000);
			continue;
		}
		r = err_set(e, errno == EAGAIN ? ETIMEDOUT : errno,
			    "cannot reach kiln-vmm's control socket %s: %s (has the VM ended?)",
			    sock_path, strerror(errno));
		close(fd);
		free(reply);
		return r;
	}
	/* fd_io sets errno to what failed (ETIMEDOUT, EIO for a 0-byte
	 * send, ...) for io_fail's message. */
	if (send_fd >= 0) {
		ssize_t k = send_with_fd(fd, line, len, send_fd, deadline);

		if (k <= 0) {
			errno = k == 0 ? EIO : errno;
			goto io_fail;
		}
		sent = (size_t)k;
	}
	if (fd_io_put_all(fd, line + sent, len - sent, FD_IO_SEND,
			  &(struct fd_io_waiter){ deadline_wait, &deadline }) < 0)
		goto io_fail;
	for (;;) {
		char *nl = memchr(reply, '\n', have);
		ssize_t k;

		if (nl) {
			*nl = '\0';
			break;
		}
		if (have == reply_max) {
			r = err_set(e, EPROTO, "kiln-vmm control: a reply longer than %zu bytes",
				    reply_max);
			close(fd);
			free(reply);
			return r;
		}
		r = wait_fd(fd, POLLIN, deadline);
		if (r <= 0) {
			errno = r ? -r : ETIMEDOUT;
			goto io_fail;
		}
		k = recv(fd, reply + have, reply_max - have, 0);
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (k == 0)
			errno = ECONNRESET;
		if (k <= 0)
			goto io_fail;
		have += (size_t)k;
	}
	close(fd);
	*reply_out = reply;
	return 0;

io_fail:
	line[len - 1] = '\0';
	if (errno == ETIMEDOUT)
		r = err_set(e, ETIMEDOUT, "kiln-vmm did not answer '%.200s' within %d ms", line,
			    timeout_ms);
	else
		r = err_set(e, errno ? errno : EIO,
			    "kiln-vmm control '%.200s': %s (has the VM ended?)", line,
			    strerror(errno));
	close(fd);
	free(reply);
	return r;
}

int control_client_run(const char *sock_path, const struct control_cmd *cmd, int timeout_ms,
		       struct control_reply *out, struct err *e)
{
	return control_client_run_fd(sock_path, cmd, -1, timeout_ms, out, e);
}

int control_client_run_fd(const char *sock_path, const struct control_cmd *cmd, int send_fd,
			  int timeout_ms, struct control_reply *out, struct err *e)
{
	char *line, *reply;
	size_t len;
	int r;

	memset(out, 0, sizeof(*out));
	r = control_request(cmd, &line, &len, e);
	if (r)
		return r == -EINVAL ? -EINVAL : r;
	r = exchange(sock_path, line, len, send_fd, control_reply_max(cmd->op), timeout_ms, &reply,
		     e);
	free(line);
	if (r)
		return r == -EINVAL ? -EIO : r;
	r = control_reply_parse(reply, cmd->op, out, e);
	free(reply);
	return r ? -EPROTO : 0;
}
