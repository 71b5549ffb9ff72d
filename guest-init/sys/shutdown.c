#include "guest-init/sys/shutdown.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/reboot.h>
#include <time.h>
#include <unistd.h>

#include "guest-init/sys/say.h"
#include "lib/base/mono.h"

void shutdown_init(struct shutdown *s, const struct milestone *ms, struct reaper *r)
{
	pthread_mutex_init(&s->lock, NULL);
	s->ms = ms;
	s->reaper = r;
}

void shutdown_run(struct shutdown *s, uint32_t grace_ms)
{
	/* Never unlocked: the machine resets while it is held. */
	pthread_mutex_lock(&s->lock);
	milestone_mark(s->ms, MS_SHUTDOWN);
	/* kill(-1) from PID 1 reaches every process but kiln-init itself. */
	kill(-1, SIGTERM);
	reaper_wait_idle(s->reaper, mono_ms() + grace_ms);
	kill(-1, SIGKILL);
	sync();
	reboot(RB_AUTOBOOT);
	say("reboot failed: %s", strerror(errno));
	for (;;)
		pause();
}
