/* Passing the listening sockets from a running kilnd to its successor; see handover.h. */
#include "api/kilnd/supervision/handover.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "api/kilnd/core/state_lock.h"

static int sock_path(const char *state_dir, struct sockaddr_un *sa)
{
	*sa = (struct sockaddr_un){ .sun_family = AF_UNIX };
	return (size_t)snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%s", state_dir,
				HANDOVER_SOCK_NAME) >= sizeof(sa->sun_path)
		? -1
		: 0;
}

/* The pid the kernel says holds state_dir's lock, or 0. */
static pid_t lock_holder(const char *state_dir)
{
	char path[PATH_MAX];
	struct flock q = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", state_dir, STATE_LOCK_FILE) >=
	    sizeof(path))
		return 0;
	/* Opening and closing it drops no lock: this process holds none. */
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	if (fcntl(fd, F_GETLK, &q) < 0 || q.l_type == F_UNLCK)
		q.l_pid = 0;
	close(fd);
	return q.l_pid;
}

/* The descriptors of one message: 1..HANDOVER_MAX_FDS of them into fds,
 * their number returned; 0 (and none kept) for anything else. */
static int take_fds(int conn, int fds[HANDOVER_MAX_FDS])
{
	union {
		char buf[CMSG_SPACE((HANDOVER_MAX_FDS + 1) * sizeof(int))];
		struct cmsghdr align;
	} u;
	char byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = u.buf,
			      .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;
	int n = 0;
	bool bad;

	if (recvmsg(conn, &msg, MSG_CMSG_CLOEXEC) != 1)
		return 0;
	/* Whatever arrived is closed if the message is refused: a truncated
	 * one has lost descriptors, one with too many is not from kilnd. */
	bad = msg.msg_flags & MSG_CTRUNC;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int got;

			memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (n < HANDOVER_MAX_FDS) {
				fds[n++] = got;
			} else {
				close(got);
				bad = true;
			}
		}
	}
	if (bad) {
		while (n > 0)
			close(fds[--n]);
	}
	return n;
}

/* A listening stream socket of this address family? */
static bool is_listener(int fd, sa_family_t family)
{
	int v = 0, type = 0;
	socklen_t len = sizeof(v), tlen = sizeof(type);
	struct sockaddr_storage sa;
	socklen_t salen = sizeof(sa);

	return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &len) == 0 && v &&
		getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) == 0 && type == SOCK_STREAM &&
		getsockname(fd, (struct sockaddr *)&sa, &salen) == 0 && sa.ss_family == family;
}

int handover_request(const char *state_dir, int *listen_fd, int *preview_fd, pid_t *old,
		     struct err *e)
{
	struct sockaddr_un sa;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct pollfd p;
	int s, conn = -1, fd = -1, fds[HANDOVER_MAX_FDS], n;
	pid_t holder = lock_holder(state_dir);

	if (!holder) {
		err_set(e, EINVAL, "--upgrade: no kilnd holds %s/%s: start kilnd without --upgrade",
			state_dir, STATE_LOCK_FILE);
		return -1;
	}
	if (sock_path(state_dir, &sa)) {
		err_set(e, EINVAL, "--upgrade: the state directory's path is too long for %s",
			HANDOVER_SOCK_NAME);
		return -1;
	}
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	unlink(sa.sun_path);
	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    chmod(sa.sun_path, 0600) < 0 || listen(s, 1) < 0) {
		err_set(e, errno, "--upgrade: cannot listen on %s: %s", sa.sun_path,
			strerror(errno));
		goto out;
	}
	if (kill(holder, SIGUSR2) < 0) {
		err_set(e, errno, "--upgrade: cannot signal kilnd pid %d: %s", (int)holder,
			strerror(errno));
		goto out;
	}
	p = (struct pollfd){ .fd = s, .events = POLLIN };
	if (poll(&p, 1, HANDOVER_ANSWER_MS) != 1 ||
	    (conn = accept4(s, NULL, NULL, SOCK_CLOEXEC)) < 0) {
		err_set(e, EINVAL,
			"--upgrade: kilnd pid %d did not hand over within %d s (a kilnd older than --upgrade ends on SIGUSR2 instead: then start kilnd without --upgrade)",
			(int)holder, HANDOVER_ANSWER_MS / 1000);
		goto out;
	}
	/* Only the lock's holder hands over its socket. */
	if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.pid != holder) {
		err_set(e, EINVAL, "--upgrade: %s was answered by pid %d, not by kilnd pid %d",
			sa.sun_path, (int)cred.pid, (int)holder);
		goto out;
	}
	{
		struct timeval tv = { .tv_sec = HANDOVER_ANSWER_MS / 1000 };

		setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	/* The API socket, then (kilnd with --preview-listen) the preview listener. */
	n = take_fds(conn, fds);
	if (n == 0 || !is_listener(fds[0], AF_UNIX) || (n == 2 && !is_listener(fds[1], AF_INET))) {
		err_set(e, EINVAL,
			n == 0 || !is_listener(fds[0], AF_UNIX)
				? "--upgrade: kilnd pid %d sent no listening API socket (it keeps serving)"
				: "--upgrade: kilnd pid %d sent a preview listener that is not a listening TCP socket (it keeps serving)",
			(int)holder);
		/* Refused: the old kilnd keeps serving. */
		(void)!send(conn, "n", 1, MSG_NOSIGNAL);
		while (n > 0)
			close(fds[--n]);
		goto out;
	}
	/* Taken: only now does the old kilnd stop serving. */
	if (send(conn, "k", 1, MSG_NOSIGNAL) != 1) {
		err_set(e, errno,
			"--upgrade: cannot tell kilnd pid %d its sockets were taken: %s (it keeps serving)",
			(int)holder, strerror(errno));
		while (n > 0)
			close(fds[--n]);
		goto out;
	}
	fd = fds[0];
	*listen_fd = fd;
	*preview_fd = n == 2 ? fds[1] : -1;
	*old = holder;
out:
	if (conn >= 0)
		close(conn);
	if (s >= 0)
		close(s);
	unlink(sa.sun_path);
	return fd >= 0 ? 0 : -1;
}

/*
 * After sending: did the new kilnd take the sockets? It answers one byte
 * once it has checked them, 'k' (taken) or 'n'. A kilnd from before that
 * answer closes the connection without one: it took a single socket (and
 * refuses two), so a close is a yes only when one was sent. 0: taken
 * (stop serving); -1 with err: keep serving.
 */
static int handover_taken(int s, size_t nfds, struct err *e)
{
	struct pollfd p = { .fd = s, .events = POLLIN };
	char ack;
	ssize_t n = -1;

	if (poll(&p, 1, HANDOVER_ANSWER_MS) == 1)
		n = recv(s, &ack, 1, 0);
	if (n == 1 && ack == 'k')
		return 0;
	if (n == 0 && nfds == 1)
		return 0;
	err_set(e, EINVAL,
		"the new kilnd did not take the %s (see its log; a kilnd older than this one takes no preview listener: start it without --upgrade, or give this one no --preview-listen)",
		nfds == 1 ? "API socket" : "API socket and preview listener");
	return -1;
}

int handover_send(const char *state_dir, int listen_fd, int preview_fd, struct err *e)
{
	int fds[2] = { listen_fd, preview_fd };
	size_t nfds = preview_fd >= 0 ? 2 : 1;
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	char byte = 'k';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = u.buf,
			      .msg_controllen = CMSG_SPACE(nfds * sizeof(int)) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	struct sockaddr_un sa;
	int s, r = -1;

	if (sock_path(state_dir, &sa)) {
		err_set(e, EINVAL, "the path of %s is too long", HANDOVER_SOCK_NAME);
		return -1;
	}
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
	memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    sendmsg(s, &msg, MSG_NOSIGNAL) != 1) {
		err_set(e, errno, "SIGUSR2, but no new kilnd waits on %s: %s", sa.sun_path,
			strerror(errno));
		goto out;
	}
	r = handover_taken(s, nfds, e);
out:
	if (s >= 0)
		close(s);
	return r;
}
