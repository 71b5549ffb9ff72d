/* A process's start time from /proc; see proc_stat.h. */
#include "lib/base/proc_stat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "lib/base/fd_io.h"
#include "lib/base/num_parse.h"

int proc_stat_start_time(const char *buf, size_t n, uint64_t *start)
{
	const char *p = NULL, *end = buf + n, *s;

	for (size_t i = n; i > 0; i--) {
		if (buf[i - 1] == ')') {
			p = buf + i;
			break;
		}
	}
	if (!p)
		return -EINVAL;
	/* After ')': " <field 3> <field 4> ... <field 22> ...". */
	for (int field = 3; field <= 22; field++) {
		if (p >= end || *p != ' ')
			return -EINVAL;
		s = ++p;
		while (p < end && *p != ' ' && *p != '\n')
			p++;
		if (p == s)
			return -EINVAL;
		if (field == 22)
			return num_parse_u64_n(s, (size_t)(p - s), 10, 0, UINT64_MAX, start)
				? -EINVAL
				: 0;
	}
	return -EINVAL;
}

int proc_stat_state(const char *buf, size_t n, char *state)
{
	const char *p = NULL;

	for (size_t i = n; i > 0 && !p; i--)
		if (buf[i - 1] == ')')
			p = buf + i;
	/* After the name's last ')': " <state> " */
	if (!p || buf + n - p < 3 || p[0] != ' ' || p[1] == ' ' || p[2] != ' ')
		return -EINVAL;
	*state = p[1];
	return 0;
}

int proc_start_time(int pid, uint64_t *start)
{
	return proc_stat_read(pid, start, NULL);
}

int proc_stat_read(int pid, uint64_t *start, char *state)
{
	char path[64], buf[1024];
	ssize_t n;
	int fd, r;

	if (pid < 1 || pid > PROC_PID_MAX)
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = fd_io_read_full(fd, buf, sizeof(buf));
	r = n < 0 ? (int)n : 0;
	close(fd);
	if (r)
		return r;
	r = proc_stat_start_time(buf, (size_t)n, start);
	if (!r && state)
		r = proc_stat_state(buf, (size_t)n, state);
	return r;
}
