#include "guest-init/sys/child.h"

#include <signal.h>
#include <string.h>
#include <sys/io.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/close_range.h>

#include "guest-init/sys/milestone.h"

void child_reset(const struct rlimit *nofile)
{
	struct sigaction sa;
	sigset_t none;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	/* SIGKILL and SIGSTOP refuse; NSIG covers the real-time signals. */
	for (int s = 1; s < NSIG; s++)
		sigaction(s, &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* Turning permission off needs no privilege and fails harmlessly
	 * when it was never on. */
	ioperm(MILESTONE_PORT, MILESTONE_PORT_LEN, 0);
	if (nofile)
		setrlimit(RLIMIT_NOFILE, nofile);
	/* kiln-init opens everything close-on-exec; this also covers what
	 * it inherited or a library opened without the flag. Marking instead
	 * of closing keeps the launcher's error pipe until the exec. */
	syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
}
