/*
 * in_child: run a probe in a forked child and return how it ended, for
 * tests of confinement that a process applies to itself once and for good
 * (test_import_ns, test_import_seccomp).
 */
#ifndef KILN_TEST_IN_CHILD_H
#define KILN_TEST_IN_CHILD_H

#include <sys/wait.h>
#include <unistd.h>

typedef int probe_fn(void *arg);

/* The child's exit code, or 100 + signal when a signal ended it. */
static inline int in_child(probe_fn *probe, void *arg)
{
	int st;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(probe(arg));
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

#endif
