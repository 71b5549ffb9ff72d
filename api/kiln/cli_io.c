/* Whole writes to files and sockets (cli_io.h). */
#include "api/kiln/cli_io.h"

#include <errno.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

static int put_all(int fd, const void *p, size_t n, bool sock)
{
	const char *b = p;

	while (n) {
		ssize_t w = sock ? send(fd, b, n, MSG_NOSIGNAL) : write(fd, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

int cli_write_all(int fd, const void *p, size_t n)
{
	return put_all(fd, p, n, false);
}

int cli_send_all(int fd, const void *p, size_t n)
{
	return put_all(fd, p, n, true);
}
