/*
 * lib/base/term_mode.c on a real pseudo-terminal: RAW is cfmakeraw, KEYS
 * drops only echo, line editing and CR->NL (^C still signals), leave
 * restores exactly what enter found and can be called twice (a signal
 * handler and the normal path), and a pipe is -ENOTTY with nothing
 * changed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <string.h>
#include <unistd.h>

#include "lib/base/term_mode.h"

struct pty {
	int master, slave;
};

static int setup(void **state)
{
	static struct pty p;

	if (openpty(&p.master, &p.slave, NULL, NULL, NULL) < 0)
		return -1;
	*state = &p;
	return 0;
}

static int teardown(void **state)
{
	struct pty *p = *state;

	close(p->master);
	close(p->slave);
	return 0;
}

static void same_termios(const struct termios *a, const struct termios *b)
{
	assert_int_equal(a->c_iflag, b->c_iflag);
	assert_int_equal(a->c_oflag, b->c_oflag);
	assert_int_equal(a->c_cflag, b->c_cflag);
	assert_int_equal(a->c_lflag, b->c_lflag);
	assert_memory_equal(a->c_cc, b->c_cc, sizeof(a->c_cc));
}

static void test_raw(void **state)
{
	struct pty *p = *state;
	struct term_mode_saved s;
	struct termios before, now, want;

	assert_int_equal(tcgetattr(p->slave, &before), 0);
	assert_true(before.c_lflag & ICANON); /* a fresh pty is cooked */
	assert_int_equal(term_mode_enter(p->slave, TERM_MODE_RAW, &s), 0);
	assert_true(s.active);
	assert_int_equal(tcgetattr(p->slave, &now), 0);
	want = before;
	cfmakeraw(&want);
	same_termios(&now, &want);
	assert_false(now.c_lflag & ISIG); /* ^C is a byte for the remote side */
	term_mode_leave(&s);
	assert_false(s.active);
	assert_int_equal(tcgetattr(p->slave, &now), 0);
	same_termios(&now, &before);
}

static void test_keys(void **state)
{
	struct pty *p = *state;
	struct term_mode_saved s;
	struct termios before, now;

	assert_int_equal(tcgetattr(p->slave, &before), 0);
	assert_int_equal(term_mode_enter(p->slave, TERM_MODE_KEYS, &s), 0);
	assert_int_equal(tcgetattr(p->slave, &now), 0);
	assert_false(now.c_lflag & (ICANON | ECHO));
	assert_false(now.c_iflag & ICRNL);
	/* Kept: ^C signals, output processing stays. */
	assert_int_equal(now.c_lflag & ISIG, before.c_lflag & ISIG);
	assert_int_equal(now.c_oflag, before.c_oflag);
	assert_int_equal(now.c_cflag, before.c_cflag);
	term_mode_leave(&s);
	assert_int_equal(tcgetattr(p->slave, &now), 0);
	same_termios(&now, &before);
}

/* Twice (a handler, then the normal path): the second call must not put
 * back settings someone changed in between. */
static void test_leave_idempotent(void **state)
{
	struct pty *p = *state;
	struct term_mode_saved s;
	struct termios before, mine, now;

	assert_int_equal(tcgetattr(p->slave, &before), 0);
	assert_int_equal(term_mode_enter(p->slave, TERM_MODE_RAW, &s), 0);
	term_mode_leave(&s);
	mine = before;
	mine.c_lflag &= ~(tcflag_t)ECHO;
	assert_int_equal(tcsetattr(p->slave, TCSANOW, &mine), 0);
	errno = EBADF;
	term_mode_leave(&s);
	assert_int_equal(errno, EBADF); /* errno kept, for signal handlers */
	assert_int_equal(tcgetattr(p->slave, &now), 0);
	same_termios(&now, &mine);
	assert_int_equal(tcsetattr(p->slave, TCSANOW, &before), 0);
}

static void test_not_a_tty(void **state)
{
	struct term_mode_saved s;
	int fds[2];

	(void)state;
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(term_mode_enter(fds[0], TERM_MODE_RAW, &s), -ENOTTY);
	assert_false(s.active);
	term_mode_leave(&s); /* harmless */
	close(fds[0]);
	close(fds[1]);
	assert_int_equal(term_mode_enter(-1, TERM_MODE_KEYS, &s), -ENOTTY);
	assert_false(s.active);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_raw),
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_leave_idempotent),
		cmocka_unit_test(test_not_a_tty),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
