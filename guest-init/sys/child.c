#include "guest-init/sys/child.h"

#include <signal.h>
#include <string.h>
#include <sys/io.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/close_range.h>

#include "guest-init/sys/milestone.h"
#include "lib/base/sig_reset.h"

void child_reset(const struct rlimit *nofile)
{
	sig_reset_all();
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
