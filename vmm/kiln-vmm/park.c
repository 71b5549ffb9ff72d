/* kiln-vmm --park: wait for the command line; see park.h. */
#include "vmm/kiln-vmm/park.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base/num_parse.h"

static bool is_one_of(int fd, const int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] == fd)
			return true;
	return false;
}

/* Descriptor i of the message becomes PARK_FD_BASE + i. Moved above the
 * range first, so that no descriptor's new number is another's old one. */
static int place_fds(int *fds, int n, struct err *e)
{
	int r = 0;

	/* A number taken by anything but the message's own descriptors (one
	 * inherited from whoever started kiln-vmm) would be replaced: refused,
	 * not swapped silently. */
	for (int i = 0; i < n && r == 0; i++)
		if (fcntl(PARK_FD_BASE + i, F_GETFD) >= 0 && !is_one_of(PARK_FD_BASE + i, fds, n))
			r = err_set(e, EEXIST,
				    "--park: descriptor %d is open already; the message's descriptors go to %d .. %d: start kiln-vmm --park without it",
				    PARK_FD_BASE + i, PARK_FD_BASE,
				    PARK_FD_BASE + PARK_FDS_MAX - 1);
	for (int i = 0; i < n; i++) {
		int high = r ? -1 : fcntl(fds[i], F_DUPFD_CLOEXEC, PARK_FD_BASE + PARK_FDS_MAX);

		if (high < 0 && r == 0)
			r = err_set(e, errno, "--park: descriptor %d: %s", i, strerror(errno));
		close(fds[i]);
		fds[i] = high;
	}
	for (int i = 0; i < n; i++) {
		/* dup2 clears close-on-exec on the copy, as for fd=N inherited. */
		if (r == 0 && dup2(fds[i], PARK_FD_BASE + i) < 0)
			r = err_set(e, errno, "--park: descriptor %d: %s", i, strerror(errno));
		if (fds[i] >= 0)
			close(fds[i]);
	}
	return r;
}

/* One message: its bytes into buf, its descriptors into fds[*nfds]. Its
 * length, 0 at the end (no descriptor kept), or -errno. */
static ssize_t receive(int sock, char *buf, int *fds, int *nfds, struct err *e)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * PARK_FDS_MAX)];
	} c;
	struct iovec iov = { .iov_base = buf, .iov_len = PARK_MSG_MAX };
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.b, .msg_controllen = sizeof(c.b)
	};
	ssize_t n;

	do
		n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return err_set(e, errno, "--park: waiting for the command line: %s",
			       strerror(errno));
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
		size_t k;

		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
			continue;
		k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
			if (*nfds < PARK_FDS_MAX)
				fds[(*nfds)++] = fd;
			else
				close(fd);
		}
	}
	if (n == 0 || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		for (int i = 0; i < *nfds; i++)
			close(fds[i]);
		*nfds = 0;
		if (n == 0)
			return 0;
		return err_set(e, EMSGSIZE,
			       "--park: the command line exceeds %d bytes or %d descriptors",
			       PARK_MSG_MAX, PARK_FDS_MAX);
	}
	return n;
}

int park_wait(int argc, char **argv, int *argc_out, char ***argv_out, struct err *e)
{
	struct stat st;
	uint64_t v;
	char *buf;
	char **av;
	ssize_t n;
	int sock, r, fds[PARK_FDS_MAX], nfds = 0;

	if (argc != 3 || strcmp(argv[1], "--park") != 0)
		return err_set(e, EINVAL, "--park FD is the only option when it is given");
	if (num_parse_u64(argv[2], 10, 3, INT32_MAX, &v) < 0)
		return err_set(e, EINVAL, "--park '%s': a descriptor number of at least 3",
			       argv[2]);
	sock = (int)v;
	if (fstat(sock, &st) < 0 || !S_ISSOCK(st.st_mode))
		return err_set(e, EBADF, "--park %d: not an open socket", sock);
	prctl(PR_SET_NAME, PARK_COMM);
	buf = malloc(PARK_MSG_MAX + 1);
	av = calloc(PARK_ARGS_MAX + 1, sizeof(*av));
	if (!buf || !av) {
		free(buf);
		free(av);
		return err_set(e, ENOMEM, "--park: out of memory");
	}
	n = receive(sock, buf, fds, &nfds, e);
	/* Closed first: its number may be one the descriptors take. */
	close(sock);
	if (n > 0 && (r = place_fds(fds, nfds, e)) < 0)
		n = r;
	/* A sandbox's kiln-vmm from here on (ps, pgrep -x kiln-vmm). */
	prctl(PR_SET_NAME, "kiln-vmm");
	if (n <= 0) {
		free(buf);
		free(av);
		return n == 0 ? 1 : (int)n;
	}
	if ((r = park_msg_split(buf, (size_t)n, av, argc_out, e)) < 0) {
		free(buf);
		free(av);
		return r;
	}
	*argv_out = av;
	return 0;
}
