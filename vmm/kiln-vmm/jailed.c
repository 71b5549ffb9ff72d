/* kiln-vmm's pid namespace and descriptor hygiene for --jail; see jailed.h. */
#include "vmm/kiln-vmm/jailed.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The parent's one piece of state, for its signal handler. */
static pid_t jailed_child;

static void pass_on(int sig)
{
	if (jailed_child > 0)
		kill(jailed_child, sig);
}

int jailed_fork_pid1(struct err *e)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa = { .sa_handler = pass_on };
	int status;
	pid_t pid;

	if (unshare(CLONE_NEWPID) < 0)
		return err_set(e, errno, "--jail: a new pid namespace: %s (root is needed)",
			       strerror(errno));
	pid = fork();
	if (pid < 0)
		return err_set(e, errno, "--jail: fork into the pid namespace: %s",
			       strerror(errno));
	if (pid == 0)
		return 0;
	jailed_child = pid;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			_exit(1);
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

void jailed_close_fds(const int *keep, int n)
{
	int hi = 3;

	/* Close the gaps between kept descriptors, then everything above. */
	for (;;) {
		int next = -1;

		for (int i = 0; i < n; i++)
			if (keep[i] >= hi && (next < 0 || keep[i] < next))
				next = keep[i];
		if (next < 0)
			break;
		if (next > hi)
			close_range((unsigned)hi, (unsigned)next - 1, 0);
		hi = next + 1;
	}
	close_range((unsigned)hi, ~0U, 0);
}
