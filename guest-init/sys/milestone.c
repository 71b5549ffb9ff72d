#include "guest-init/sys/milestone.h"

#include <sys/io.h>
#include <time.h>

void milestone_init(struct milestone *m)
{
	m->have_port = ioperm(MILESTONE_PORT, MILESTONE_PORT_LEN, 1) == 0;
}

void milestone_mark(const struct milestone *m, uint8_t code)
{
	struct timespec ts;

	if (!m->have_port)
		return;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	/* The time goes first: the VMM attaches it to the next code byte. Two
	 * threads marking at once could pair one's time with the other's
	 * code; only init (1), the agent's listen (2) and shutdown (3) mark,
	 * and they cannot overlap in a way that matters. */
	outl((uint32_t)(ts.tv_sec * 1000000 + ts.tv_nsec / 1000), MILESTONE_PORT + 4);
	outb(code, MILESTONE_PORT);
}
