/* One-way byte pumps between any descriptors; see fd_relay.h. */
#include "lib/base/fd_relay.h"

#include <errno.h>
#include <limits.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base/mono.h"

#define FD_RELAY_MAX 8

int fd_pump_init(struct fd_pump *p, int src, int dst, void *buf, size_t cap,
		 enum fd_pump_eof on_eof)
{
	struct stat s, d;

	if (fstat(src, &s) < 0 || fstat(dst, &d) < 0)
		return -errno;
	*p = (struct fd_pump){ .src = src, .dst = dst, .buf = buf, .cap = cap, .on_eof = on_eof };
	p->src_sock = S_ISSOCK(s.st_mode);
	p->dst_sock = S_ISSOCK(d.st_mode);
	return 0;
}

void fd_pump_poll(const struct fd_pump *p, struct pollfd pfd[2])
{
	pfd[0] = (struct pollfd){ .fd = -1, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = -1, .events = POLLOUT };
	if (p->done)
		return;
	if (!p->eof && p->off == p->end)
		pfd[0].fd = p->src;
	if (p->off != p->end)
		pfd[1].fd = p->dst;
}

static bool transient(int e)
{
	return e == EAGAIN || e == EWOULDBLOCK || e == EINTR;
}

static void pump_read(struct fd_pump *p)
{
	ssize_t n = p->src_sock ? recv(p->src, p->buf, p->cap, MSG_DONTWAIT)
				: read(p->src, p->buf, p->cap);

	if (n > 0) {
		p->off = 0;
		p->end = (size_t)n;
	} else if (n == 0 || !transient(errno)) {
		p->err = n < 0 ? errno : 0;
		p->eof = true;
	}
}

static void pump_write(struct fd_pump *p)
{
	size_t want = p->end - p->off;
	ssize_t n;

	if (!p->dst_sock && want > PIPE_BUF)
		want = PIPE_BUF;
	n = p->dst_sock ? send(p->dst, p->buf + p->off, want, MSG_DONTWAIT | MSG_NOSIGNAL)
			: write(p->dst, p->buf + p->off, want);
	if (n < 0) {
		if (!transient(errno)) {
			p->err = errno;
			p->done = true;
			if (p->on_eof == FD_PUMP_CLOSE)
				close(p->dst); /* the pump owns it either way */
		}
		return;
	}
	p->off += (size_t)n;
	p->bytes += (uint64_t)n;
	if (p->off == p->end)
		p->off = p->end = 0;
}

static void pump_finish(struct fd_pump *p)
{
	if (p->done || !p->eof || p->off != p->end)
		return;
	if (p->on_eof == FD_PUMP_SHUT_WR)
		shutdown(p->dst, SHUT_WR);
	else if (p->on_eof == FD_PUMP_CLOSE)
		close(p->dst);
	p->done = true;
}

int fd_pump_step(struct fd_pump *p, const struct pollfd pfd[2])
{
	struct fd_pump before = *p;

	/* HUP and ERR wake a waiter too: the call then sees the EOF or
	 * the error. */
	if (pfd[0].fd >= 0 && (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)))
		pump_read(p);
	if (pfd[1].fd >= 0 && (pfd[1].revents & (POLLOUT | POLLHUP | POLLERR)))
		pump_write(p);
	if (pfd[0].revents & POLLNVAL || pfd[1].revents & POLLNVAL) {
		p->err = EBADF;
		p->done = true;
	}
	pump_finish(p);
	return p->end != before.end || p->off != before.off || p->eof != before.eof ||
		p->done != before.done;
}

enum fd_relay_end fd_relay_run(struct fd_pump *p, size_t n, int stop_fd, int timeout_ms)
{
	int64_t deadline = timeout_ms >= 0 ? mono_ms() + timeout_ms : -1;
	struct pollfd pfd[2 * FD_RELAY_MAX + 1];

	if (n > FD_RELAY_MAX)
		return FD_RELAY_FAILED;
	for (;;) {
		bool all_done = true;
		int wait = -1;

		for (size_t i = 0; i < n; i++) {
			pump_finish(&p[i]);
			all_done &= p[i].done;
			fd_pump_poll(&p[i], &pfd[2 * i]);
		}
		if (all_done)
			return FD_RELAY_DONE;
		if (deadline >= 0) {
			int64_t left = deadline - mono_ms();

			if (left <= 0)
				return FD_RELAY_TIMEOUT;
			wait = (int)left;
		}
		pfd[2 * n] = (struct pollfd){ .fd = stop_fd, .events = POLLIN };
		if (poll(pfd, 2 * n + 1, wait) < 0) {
			if (errno == EINTR)
				continue;
			return FD_RELAY_FAILED;
		}
		if (pfd[2 * n].revents & POLLIN)
			return FD_RELAY_STOPPED;
		for (size_t i = 0; i < n; i++)
			fd_pump_step(&p[i], &pfd[2 * i]);
	}
}
