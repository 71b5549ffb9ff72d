/* sig_reset: see sig_reset.h. */
#include "lib/base/sig_reset.h"

#include <signal.h>

void sig_reset_all(void)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t none;

	for (int s = 1; s < NSIG; s++)
		sigaction(s, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}
