/* A capped log fed from a pipe; see capped_log.h. */
#include "lib/base/capped_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "lib/base/fd_io.h"

int capped_log_open(struct capped_log *l, int dirfd, const char *name, const char *old,
		    uint64_t cap)
{
	*l = (struct capped_log){
		.dirfd = dirfd, .name = name, .old = old, .pipe_r = -1, .cap = cap
	};
	unlinkat(dirfd, old, 0);
	l->fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	return l->fd < 0 ? -errno : 0;
}

void capped_log_write(struct capped_log *l, const void *p, size_t n)
{
	if (l->fd < 0)
		return;
	if (l->written + n > l->cap) {
		renameat(l->dirfd, l->name, l->dirfd, l->old);
		close(l->fd);
		l->fd = openat(l->dirfd, l->name,
			       O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
		l->written = 0;
		if (l->fd < 0)
			return;
	}
	if (fd_io_write_all(l->fd, p, n) < 0)
		return; /* a full disk costs the log, never the VM */
	l->written += n;
}

void capped_log_attach(struct capped_log *l, int pipe_r)
{
	if (l->pipe_r >= 0)
		close(l->pipe_r);
	l->pipe_r = pipe_r;
}

bool capped_log_pump(struct capped_log *l)
{
	uint8_t buf[16384];
	size_t took = 0;

	if (l->pipe_r < 0)
		return false;
	for (;;) {
		ssize_t n = took < CAPPED_LOG_PUMP_MAX ? read(l->pipe_r, buf, sizeof(buf)) : -1;

		if (took >= CAPPED_LOG_PUMP_MAX)
			return true; /* a writer that never stops waits for the next poll */
		if (n > 0) {
			capped_log_write(l, buf, (size_t)n);
			if (l->tap)
				l->tap(l->tap_arg, (const char *)buf, (size_t)n);
			took += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return true;
		close(l->pipe_r);
		l->pipe_r = -1;
		return false;
	}
}

void capped_log_close(struct capped_log *l)
{
	if (l->fd >= 0)
		close(l->fd);
	if (l->pipe_r >= 0)
		close(l->pipe_r);
	l->fd = l->pipe_r = -1;
}
