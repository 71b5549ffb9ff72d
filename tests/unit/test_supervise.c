/*
 * supervise: what a spawned kiln-vmm inherits. Exactly the request's
 * keep_fds (its shares' directories, --share fd=N) survive the exec; every
 * other descriptor of kilnd's, close-on-exec or not, is closed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/kilnd/sandbox/supervise.h"

struct ended {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	int status;
};

static void on_exit_cb(void *arg, const struct vmm_exit_info *info)
{
	struct ended *x = arg;

	pthread_mutex_lock(&x->mu);
	x->done = true;
	x->status = info->status;
	pthread_cond_signal(&x->cv);
	pthread_mutex_unlock(&x->mu);
}

static void test_keep_fds_only(void **state)
{
	struct ended x = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, -2 };
	char dir[] = "/tmp/kiln-sup-XXXXXX", cons[64], vlog[64], script[256];
	int kept, shut, plain;
	struct vmm_proc *proc;
	struct api_err e;
	pid_t pid;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(cons, sizeof(cons), "%s/console.log", dir);
	snprintf(vlog, sizeof(vlog), "%s/vmm.log", dir);
	kept = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	shut = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	plain = open("/", O_PATH | O_DIRECTORY); /* not close-on-exec: closed all the same */
	assert_true(kept >= 3 && shut >= 3 && plain >= 3);
	snprintf(script, sizeof(script), "[ -e /proc/self/fd/%d ] && [ ! -e /proc/self/fd/%d ] && [ ! -e /proc/self/fd/%d ]",
		 kept, shut, plain);
	char *argv[] = { "/bin/sh", "-c", script, NULL };
	struct vmm_spawn_req req = { .argv = argv, .console_log = cons, .vmm_log = vlog, .on_exit = on_exit_cb,
				     .arg = &x, .keep_fds = &kept, .nkeep = 1, .cgroup_fd = -1 };

	assert_int_equal(vmm_spawn(&req, &proc, &pid, &e), 0);
	pthread_mutex_lock(&x.mu);
	while (!x.done)
		pthread_cond_wait(&x.cv, &x.mu);
	pthread_mutex_unlock(&x.mu);
	assert_int_equal(x.status, 0);
	/* kilnd's own stay as they were. */
	assert_true(fcntl(kept, F_GETFD) & FD_CLOEXEC);
	close(kept);
	close(shut);
	close(plain);
	unlink(cons);
	unlink(vlog);
	rmdir(dir);
	/* The monitor thread frees proc after on_exit; give it the moment. */
	usleep(100000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keep_fds_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
