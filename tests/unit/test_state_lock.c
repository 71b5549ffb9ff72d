/*
 * api/kilnd/core/state_lock.c: one kilnd per state directory. A lock held
 * by a live process refuses the next one with a line naming the holder's
 * pid and socket; the lock goes when its process ends, even when a child
 * it forked (a kiln-vmm) lives on holding the inherited descriptor; the
 * lock file's words are someone else's bytes and come out as one clean
 * line.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/kilnd/core/state_lock.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/kiln-state-lock-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char path[128];

	(void)state;
	snprintf(path, sizeof(path), "%s/%s", dir, STATE_LOCK_FILE);
	unlink(path);
	return rmdir(dir);
}

/* A child that takes the lock, says so on ready[1], and holds it until
 * go[0] is closed. With fork_holder, it forks a grandchild first that
 * keeps the inherited descriptor open (sleeping) and then exits itself:
 * the grandchild's pid goes down ready[1] too. */
static pid_t holder(const char *sock, bool fork_holder, int ready[2], int go[2])
{
	pid_t pid;

	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(go), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char c;
		struct err err;
		int fd;

		close(ready[0]);
		close(go[1]);
		if (state_lock_take(dir, sock, &fd, &err))
			_exit(2);
		if (fork_holder) {
			pid_t g = fork();

			if (g == 0) {
				/* What a VMM between fork and exec (or one that
				 * outlives kilnd) is: the descriptor, no exec. */
				close(ready[1]);
				pause();
				_exit(0);
			}
			if (write(ready[1], &g, sizeof(g)) != sizeof(g))
				_exit(3);
			_exit(0);
		}
		if (write(ready[1], "y", 1) != 1 || read(go[0], &c, 1) < 0)
			_exit(3);
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	return pid;
}

static void test_second_is_refused_naming_the_first(void **state)
{
	char want[256], c;
	struct err err;
	int ready[2], go[2], fd, st;
	pid_t pid;

	(void)state;
	pid = holder("/run/first.sock", false, ready, go);
	assert_int_equal(read(ready[0], &c, 1), 1);
	assert_int_equal(state_lock_take(dir, "/run/second.sock", &fd, &err), -1);
	snprintf(want, sizeof(want),
		 "state directory %s is in use by kilnd pid %ld (its socket /run/first.sock)", dir,
		 (long)pid);
	if (!strstr(err.msg, want))
		fail_msg("want '%s' in '%s'", want, err.msg);
	assert_non_null(strstr(err.msg, "stop it or use another --state-dir"));
	assert_null(strchr(err.msg, '\n'));
	/* The refusal did not take the lock from the first, nor rewrite its file. */
	assert_int_equal(state_lock_take(dir, "/run/second.sock", &fd, &err), -1);
	assert_non_null(strstr(err.msg, "/run/first.sock"));
	close(go[1]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(ready[0]);
	/* The first is gone: the lock is free, and the file now names us. */
	assert_int_equal(state_lock_take(dir, "/run/second.sock", &fd, &err), 0);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
}

/* kilnd forks kiln-vmm children: a child alive with the inherited
 * descriptor must not keep the state directory locked once kilnd died.
 * flock or an OFD lock would (they belong to the open file description). */
static void test_lock_dies_with_its_process_not_its_children(void **state)
{
	struct err err;
	int ready[2], go[2], fd, st;
	pid_t pid, grandchild;

	(void)state;
	pid = holder("/run/first.sock", true, ready, go);
	assert_int_equal(read(ready[0], &grandchild, sizeof(grandchild)),
			 (ssize_t)sizeof(grandchild));
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(kill(grandchild, 0), 0); /* still alive, descriptor open */
	int r = state_lock_take(dir, "/run/second.sock", &fd, &err);

	kill(grandchild, SIGKILL);
	close(ready[0]);
	close(go[1]);
	if (r)
		fail_msg("the lock outlived its kilnd: %s", err.msg);
	close(fd);
}

static void test_relative_socket_is_made_absolute(void **state)
{
	char path[128], buf[512], cwd[256], want[512];
	struct err err;
	int fd, lf;
	ssize_t n;

	(void)state;
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(state_lock_take(dir, "rel/k.sock", &fd, &err), 0);
	snprintf(path, sizeof(path), "%s/%s", dir, STATE_LOCK_FILE);
	lf = open(path, O_RDONLY);
	n = read(lf, buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	snprintf(want, sizeof(want), "pid %ld\nsocket %s/rel/k.sock\n", (long)getpid(), cwd);
	assert_string_equal(buf, want);
	/* (Closing lf drops the lock: a record lock's rule; kilnd never opens it twice.) */
	close(lf);
	close(fd);
}

/* A lock file that is a symbolic link is not followed. */
static void test_symlinked_lock_file_refused(void **state)
{
	char path[128];
	struct err err;
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/%s", dir, STATE_LOCK_FILE);
	assert_int_equal(symlink("/etc/passwd", path), 0);
	assert_int_equal(state_lock_take(dir, "/run/k.sock", &fd, &err), -1);
	assert_non_null(strstr(err.msg, "cannot open the state directory's lock"));
	assert_non_null(strstr(err.msg, path));
}

static void test_parse(void **state)
{
	static const char hostile[] = "garbage\npid 12x\nsocket /a\x1b[2J\tb\nmore";
	char out[256], sock[64];
	pid_t pid;

	(void)state;
	state_lock_format(4321, "/run/kiln/kiln.sock", out, sizeof(out));
	assert_string_equal(out, "pid 4321\nsocket /run/kiln/kiln.sock\n");
	state_lock_parse(out, strlen(out), &pid, sock, sizeof(sock));
	assert_int_equal(pid, 4321);
	assert_string_equal(sock, "/run/kiln/kiln.sock");
	/* Not a pid: none; controls in the path: '?', one line. */
	state_lock_parse(hostile, sizeof(hostile) - 1, &pid, sock, sizeof(sock));
	assert_int_equal(pid, 0);
	assert_string_equal(sock, "/a?[2J?b");
	/* Empty (a holder that had not written yet), or cut short. */
	state_lock_parse("", 0, &pid, sock, sizeof(sock));
	assert_int_equal(pid, 0);
	assert_string_equal(sock, "");
	state_lock_parse("pid 7\nsock", 10, &pid, sock, sizeof(sock));
	assert_int_equal(pid, 7);
	assert_string_equal(sock, "");
	/* Out of range pids are not pids. */
	state_lock_parse("pid 0\n", 6, &pid, sock, sizeof(sock));
	assert_int_equal(pid, 0);
	state_lock_parse("pid 99999999999\n", 16, &pid, sock, sizeof(sock));
	assert_int_equal(pid, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_second_is_refused_naming_the_first, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_lock_dies_with_its_process_not_its_children,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_relative_socket_is_made_absolute, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_symlinked_lock_file_refused, setup, teardown),
		cmocka_unit_test(test_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
