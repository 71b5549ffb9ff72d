/*
 * term_mode: switch a terminal to a raw mode and back, the one way
 * (kiln shell; kiln-agent attach and kiln-vmm --console to follow).
 *
 * Modes:
 *  - TERM_MODE_RAW: cfmakeraw. Every key goes through as a byte (^C is a
 *    byte for the remote side, not SIGINT here); for a remote terminal.
 *  - TERM_MODE_KEYS: keys without echo or line editing (~ICANON ~ECHO,
 *    ~ICRNL so Enter is '\r' as on a serial line), but ISIG and OPOST
 *    kept: ^C still signals this process, and output still gets its
 *    "\n" -> "\r\n". For a local console that ^C should end.
 *
 * Contract:
 *  - term_mode_enter saves the settings in *s first; the change is made
 *    with TCSADRAIN, so output already queued is written with the old
 *    settings. 0 entered; -ENOTTY when fd is not a terminal (nothing
 *    changed: not an error for callers that run under pipes); -errno.
 *  - term_mode_leave restores what enter saved. It is idempotent and
 *    async-signal-safe (tcsetattr only), so a signal handler may call it
 *    before the process dies; a caller that can be killed by a signal
 *    must do so, or the user's terminal stays raw.
 *  - No global state: the saved settings are the caller's.
 */
#ifndef KILN_TERM_MODE_H
#define KILN_TERM_MODE_H

#include <stdbool.h>
#include <termios.h>

enum term_mode_kind {
	TERM_MODE_RAW,
	TERM_MODE_KEYS,
};

struct term_mode_saved {
	volatile bool active; /* read by signal handlers */
	int fd;
	struct termios t;
};

int term_mode_enter(int fd, enum term_mode_kind kind, struct term_mode_saved *s);
void term_mode_leave(struct term_mode_saved *s);

#endif
