/* An accept thread's loop; see accept_loop.h. */
#include "lib/base/accept_loop.h"

#include <errno.h>
#include <poll.h>
#include <unistd.h>

void accept_loop(int listen_fd, int stop_fd, int (*on_ready)(void *arg), void *arg)
{
	for (;;) {
		struct pollfd p[2] = { { .fd = listen_fd, .events = POLLIN },
				       { .fd = stop_fd, .events = POLLIN } };
		int r = poll(p, 2, -1);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || (p[1].revents & POLLIN))
			return;
		if (p[0].revents & POLLIN) {
			r = on_ready(arg);
			if (r == EMFILE || r == ENFILE || r == ENOBUFS || r == ENOMEM)
				usleep(10000);
		} else if (p[0].revents & (POLLERR | POLLNVAL)) {
			return;
		}
	}
}
