/*
 * fake_vmm: kiln-vmm's side of the hybrid vsock socket for tests of the
 * host library against the real agent handlers: a listening Unix socket
 * in a fresh /tmp directory, and the CONNECT 1024 / OK handshake on each
 * connection accepted from it. Include after cmocka.h.
 */
#ifndef KILN_TEST_FAKE_VMM_H
#define KILN_TEST_FAKE_VMM_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

struct fake_vmm {
	char dir[64], path[108];
	int lfd;
};

/* Listen on <fresh dir>/v.sock (the agent client's vsock path: v->path). */
static inline void fake_vmm_listen(struct fake_vmm *v)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	snprintf(v->dir, sizeof(v->dir), "/tmp/kiln-fake-vmm-XXXXXX");
	assert_non_null(mkdtemp(v->dir));
	snprintf(v->path, sizeof(v->path), "%s/v.sock", v->dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", v->path);
	v->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(v->lfd >= 0);
	assert_int_equal(bind(v->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(v->lfd, 4), 0);
}

/* The next connection once it said "CONNECT 1024\n" and got "OK 7\n";
 * -1 when it did not (safe off the test's thread: no asserts). */
static inline int fake_vmm_accept(struct fake_vmm *v)
{
	char line[32];
	size_t n = 0;
	int fd = accept4(v->lfd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return -1;
	while (n < sizeof(line) - 1 && read(fd, line + n, 1) == 1 && line[n++] != '\n')
		;
	line[n] = '\0';
	if (strcmp(line, "CONNECT 1024\n") != 0 || write(fd, "OK 7\n", 5) != 5) {
		close(fd);
		return -1;
	}
	return fd;
}

static inline void fake_vmm_close(struct fake_vmm *v)
{
	close(v->lfd);
	unlink(v->path);
	rmdir(v->dir);
}

#endif
