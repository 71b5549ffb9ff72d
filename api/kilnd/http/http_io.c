/* Socket I/O under deadlines; see http_io.h. */
#include "api/kilnd/http/http_io.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include "lib/base/mono.h"

int http_io_wait(int fd, short events, int64_t deadline_ms, int stop_fd)
{
	struct pollfd p[2] = { { .fd = fd, .events = events },
			       { .fd = stop_fd, .events = POLLIN } };
	int64_t left = deadline_ms - mono_ms();
	int r;

	if (left <= 0)
		return -ETIMEDOUT;
	r = poll(p, stop_fd >= 0 ? 2 : 1, left > INT32_MAX ? INT32_MAX : (int)left);
	if (r < 0)
		return errno == EINTR ? 0 : -errno;
	if (r == 0)
		return -ETIMEDOUT;
	return stop_fd >= 0 && (p[1].revents & POLLIN) ? -ESHUTDOWN : 0;
}

int http_io_send(int fd, const void *p, size_t n, int timeout_ms, int stop_fd)
{
	struct iovec iov = { .iov_base = (void *)p, .iov_len = n };

	return http_io_sendv(fd, &iov, 1, timeout_ms, stop_fd);
}

/* Past the k bytes of iov[0..*n) written: drops the pieces sent whole
 * and advances the first one left. */
static struct iovec *iov_advance(struct iovec *iov, size_t *n, size_t k)
{
	while (*n && k >= iov->iov_len) {
		k -= iov->iov_len;
		iov++;
		(*n)--;
	}
	if (*n) {
		iov->iov_base = (char *)iov->iov_base + k;
		iov->iov_len -= k;
	}
	return iov;
}

int http_io_sendv(int fd, struct iovec *iov, size_t n, int timeout_ms, int stop_fd)
{
	iov = iov_advance(iov, &n, 0); /* empty pieces */
	while (n) {
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = n };
		ssize_t k = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		int r;

		if (k > 0) {
			iov = iov_advance(iov, &n, (size_t)k);
			continue;
		}
		if (k < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		/* The deadline restarts with each write that made progress. */
		r = http_io_wait(fd, POLLOUT, mono_ms() + timeout_ms, stop_fd);
		if (r < 0)
			return r;
	}
	return 0;
}

const char *http_reason(unsigned status)
{
	switch (status) {
	case 100:
		return "Continue";
	case 101:
		return "Switching Protocols";
	case 200:
		return "OK";
	case 201:
		return "Created";
	case 202:
		return "Accepted";
	case 204:
		return "No Content";
	case 302:
		return "Found";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 408:
		return "Request Timeout";
	case 409:
		return "Conflict";
	case 411:
		return "Length Required";
	case 413:
		return "Content Too Large";
	case 414:
		return "URI Too Long";
	case 429:
		return "Too Many Requests";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 502:
		return "Bad Gateway";
	case 503:
		return "Service Unavailable";
	case 504:
		return "Gateway Timeout";
	case 505:
		return "HTTP Version Not Supported";
	case 507:
		return "Insufficient Storage";
	default:
		return "";
	}
}
