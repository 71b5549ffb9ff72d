/*
 * api/runtime/rt_binds.c: a container's bind mounts made on the host
 * under its state directory, in a child with a mount namespace of its
 * own (root; skipped otherwise): a directory and a file bound, read-only
 * where asked, submounts only with rbind; a source through a symbolic
 * link or a socket refused; release detaches them all so delete can
 * remove the directory, and the sources are untouched.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "api/runtime/rt_binds.h"
#include "api/runtime/rt_dir.h"
#include "lib/base/fd_io.h"

static char top[] = "/tmp/test_rt_binds.XXXXXX";

#define CHECK(cond, code)                                                                      \
	do {                                                                                   \
		if (!(cond)) {                                                                 \
			fprintf(stderr, "%s:%d: %s (%s)\n", __FILE__, __LINE__, #cond, e.msg); \
			_exit(code);                                                           \
		}                                                                              \
	} while (0)

static void path_of(char *out, size_t n, const char *rel)
{
	snprintf(out, n, "%s/%s", top, rel);
}

/* The whole scenario, in the child. */
static void scenario(void)
{
	struct err e = { { 0 } };
	char vol[128], hosts[128], state[128], link[128], sock[128], p[256], buf[16];
	struct rt_bind b[3];
	int dirfd, rootfd, fd;
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	path_of(vol, sizeof(vol), "volume");
	path_of(hosts, sizeof(hosts), "hosts");
	path_of(state, sizeof(state), "root");
	path_of(link, sizeof(link), "link");
	path_of(sock, sizeof(sock), "sock");
	CHECK(mkdir(vol, 0755) == 0 && mkdir(state, 0700) == 0, 2);
	snprintf(p, sizeof(p), "%s/data", vol);
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	CHECK(fd >= 0 && write(fd, "vol", 3) == 3, 2);
	close(fd);
	fd = open(hosts, O_CREAT | O_WRONLY, 0644);
	CHECK(fd >= 0 && write(fd, "127.0.0.1 c\n", 12) == 12, 2);
	close(fd);
	CHECK(rt_dir_open_root(state, false, &rootfd, &e) == 0 &&
		      rt_dir_make(rootfd, "c1", &dirfd, &e) == 0,
	      3);
	b[0] = (struct rt_bind){ vol, false, true, 0 };
	b[1] = (struct rt_bind){ hosts, true, false, 0 };
	b[2] = (struct rt_bind){ vol, true, false, 1 };
	CHECK(rt_binds_prepare(dirfd, b, 3, &e) == 0, 4);
	/* the volume, read and written through its bind */
	CHECK(openat(dirfd, "binds/rw/0/data", O_RDONLY) >= 0, 5);
	fd = openat(dirfd, "binds/rw/0/new", O_CREAT | O_WRONLY, 0644);
	CHECK(fd >= 0, 5);
	close(fd);
	snprintf(p, sizeof(p), "%s/new", vol);
	CHECK(access(p, F_OK) == 0, 5);
	/* the file, read-only */
	fd = openat(dirfd, "binds/ro/0", O_RDONLY);
	CHECK(fd >= 0 && read(fd, buf, sizeof(buf)) == 12, 6);
	close(fd);
	CHECK(openat(dirfd, "binds/ro/0", O_WRONLY) < 0 && errno == EROFS, 6);
	CHECK(openat(dirfd, "binds/ro/1/x", O_CREAT | O_WRONLY, 0644) < 0 && errno == EROFS, 6);
	/* release: nothing mounted is left, delete removes all, sources kept */
	CHECK(rt_binds_release(dirfd, &e) == 0, 7);
	CHECK(faccessat(dirfd, "binds/rw/0/data", F_OK, 0) < 0, 7);
	close(dirfd);
	CHECK(rt_dir_remove(rootfd, "c1", &e) == 0, 7);
	snprintf(p, sizeof(p), "%s/data", vol);
	CHECK(access(p, F_OK) == 0 && access(hosts, F_OK) == 0, 7);
	/* refused: a link on the way, a socket; nothing left mounted */
	CHECK(symlink(vol, link) == 0, 8);
	CHECK(rt_dir_make(rootfd, "c2", &dirfd, &e) == 0, 8);
	b[0] = (struct rt_bind){ hosts, false, false, 0 };
	b[1] = (struct rt_bind){ link, false, false, 1 };
	CHECK(rt_binds_prepare(dirfd, b, 2, &e) == -ELOOP && strstr(e.msg, "a symbolic link"), 8);
	CHECK(faccessat(dirfd, "binds/rw/0", F_OK, 0) == 0, 8);
	{
		struct stat st1, st2;

		/* the first bind was undone: binds/rw/0 is the empty file again */
		CHECK(fstatat(dirfd, "binds/rw/0", &st1, 0) == 0 && stat(hosts, &st2) == 0 &&
			      st1.st_ino != st2.st_ino,
		      8);
	}
	memcpy(a.sun_path, sock, strlen(sock) + 1); /* /tmp/...: well under sun_path */
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0, 9);
	b[0] = (struct rt_bind){ sock, false, false, 2 };
	CHECK(rt_binds_prepare(dirfd, b, 1, &e) == -EINVAL &&
		      strstr(e.msg, "only a directory or a regular file"),
	      9);
	close(dirfd);
	CHECK(rt_dir_remove(rootfd, "c2", &e) == 0, 10);
	_exit(0);
}

static void test_binds(void **state)
{
	pid_t pid;
	int st;
	char cmd[64];

	(void)state;
	assert_non_null(mkdtemp(top));
	pid = fork();
	if (pid == 0) {
		if (unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			_exit(77);
		scenario();
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	assert_int_equal(system(cmd), 0);
	if (WEXITSTATUS(st) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_binds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
