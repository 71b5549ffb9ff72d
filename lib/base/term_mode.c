/* term_mode: raw terminal modes, saved and restored (term_mode.h). */
#include "lib/base/term_mode.h"

#include <errno.h>
#include <unistd.h>

int term_mode_enter(int fd, enum term_mode_kind kind, struct term_mode_saved *s)
{
	struct termios t;

	s->active = false;
	s->fd = fd;
	if (!isatty(fd))
		return -ENOTTY;
	if (tcgetattr(fd, &s->t) < 0)
		return -errno;
	t = s->t;
	if (kind == TERM_MODE_RAW) {
		cfmakeraw(&t);
	} else {
		t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		t.c_iflag &= ~(tcflag_t)ICRNL;
	}
	if (tcsetattr(fd, TCSADRAIN, &t) < 0)
		return -errno;
	s->active = true;
	return 0;
}

void term_mode_leave(struct term_mode_saved *s)
{
	int e = errno; /* from a signal handler: leave errno as it was */

	if (s->active) {
		s->active = false;
		tcsetattr(s->fd, TCSADRAIN, &s->t);
	}
	errno = e;
}
