/* Two-way byte relay between stream sockets; see sock_relay.h. */
#include "lib/base/sock_relay.h"
#include "lib/base/mono.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>

/* A failure that only means "try again later". */
static bool transient(int e)
{
	return e == EAGAIN || e == EWOULDBLOCK || e == EINTR;
}

/* Read into the (empty) buffer. 1 moved or reached EOF, 0 nothing, -errno. */
static int dir_read(struct sock_relay_dir *d, int from)
{
	size_t want = d->capped && d->left < d->cap ? (size_t)d->left : d->cap;
	ssize_t n;

	if (d->capped && !d->left) {
		d->eof = true;
		return 1;
	}
	n = recv(from, d->buf, want, MSG_DONTWAIT);
	if (n > 0) {
		d->off = 0;
		d->end = (size_t)n;
		if (d->capped && !(d->left -= (uint64_t)n))
			d->eof = true;
		return 1;
	}
	if (n == 0) {
		d->eof = true;
		return 1;
	}
	return transient(errno) ? 0 : -errno;
}

/* Write what is buffered. 1 moved, 0 nothing, -errno. */
static int dir_write(struct sock_relay_dir *d, int to)
{
	ssize_t n = send(to, d->buf + d->off, d->end - d->off, MSG_NOSIGNAL | MSG_DONTWAIT);

	if (n < 0)
		return transient(errno) ? 0 : -errno;
	d->off += (size_t)n;
	d->bytes += (uint64_t)n;
	if (d->off == d->end)
		d->off = d->end = 0;
	return n > 0;
}

/*
 * A direction whose source ended and whose bytes are all out: pass the
 * EOF on. ENOTCONN means the destination is already gone entirely; its
 * own direction reports that.
 */
static void dir_finish(struct sock_relay_dir *d, int to)
{
	if (d->done || !d->eof || d->off != d->end)
		return;
	if (!d->capped)
		shutdown(to, SHUT_WR);
	d->done = true;
}

enum sock_relay_end sock_relay_run(struct sock_relay *r, int *errnum)
{
	int64_t last_move = mono_ms();

	*errnum = 0;
	for (int i = 0; i < 2; i++) {
		if (r->dir[i].capped && !r->dir[i].left)
			r->dir[i].eof = true; /* everything it may send is pre-filled */
	}
	for (;;) {
		struct pollfd p[3];
		int timeout = -1, n;

		for (int i = 0; i < 2; i++)
			dir_finish(&r->dir[i], r->fd[1 - i]);
		if (r->dir[0].done && r->dir[1].done)
			return SOCK_RELAY_DONE;
		if (r->half_idle_ms > 0 && (r->dir[0].done || r->dir[1].done)) {
			int64_t left = last_move + r->half_idle_ms - mono_ms();

			if (left <= 0)
				return SOCK_RELAY_IDLE;
			timeout = (int)left;
		}
		if (r->idle_ms > 0) {
			int64_t left = last_move + r->idle_ms - mono_ms();

			if (left <= 0)
				return SOCK_RELAY_IDLE;
			if (timeout < 0 || left < timeout)
				timeout = (int)left;
		}
		/* fd[i] is read for dir[i] (only into an empty buffer, never
		 * after its EOF) and written for dir[1 - i] (only with bytes
		 * waiting). A side with nothing to wait for is left out, so
		 * its POLLHUP cannot spin the loop. */
		for (int i = 0; i < 2; i++) {
			const struct sock_relay_dir *in = &r->dir[i], *out = &r->dir[1 - i];

			p[i].fd = r->fd[i];
			p[i].events = 0;
			p[i].revents = 0;
			if (!in->eof && in->off == in->end)
				p[i].events |= POLLIN;
			if (out->off != out->end)
				p[i].events |= POLLOUT;
			if (!p[i].events)
				p[i].fd = -1;
		}
		p[2].fd = r->stop_fd;
		p[2].events = POLLIN;
		p[2].revents = 0;
		n = poll(p, 3, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			*errnum = errno;
			return SOCK_RELAY_FAILED;
		}
		if (p[2].revents & POLLIN)
			return SOCK_RELAY_STOPPED;
		for (int i = 0; i < 2; i++) {
			short ev = p[i].revents;
			int m;

			if (ev & POLLNVAL) {
				*errnum = EBADF;
				return SOCK_RELAY_FAILED;
			}
			/* HUP and ERR wake both kinds of waiter: the call itself
			 * then reads the EOF or returns the error. */
			if ((p[i].events & POLLIN) && (ev & (POLLIN | POLLHUP | POLLERR))) {
				m = dir_read(&r->dir[i], r->fd[i]);
				if (m < 0) {
					*errnum = -m;
					return SOCK_RELAY_FAILED;
				}
				if (m)
					last_move = mono_ms();
			}
			if ((p[i].events & POLLOUT) && (ev & (POLLOUT | POLLHUP | POLLERR))) {
				m = dir_write(&r->dir[1 - i], r->fd[i]);
				if (m < 0) {
					*errnum = -m;
					return SOCK_RELAY_FAILED;
				}
				if (m)
					last_move = mono_ms();
			}
		}
	}
}
