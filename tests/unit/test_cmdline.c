/*
 * cmdline: the builder must never write past its buffer, must stay failed
 * once it overflowed (so a truncated command line is never booted), and
 * cmdline_has must match whole keys only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "vmm/boot/cmdline.h"

static int setup(void **state)
{
	struct cmdline *c = malloc(sizeof(*c));

	assert_non_null(c);
	memset(c, 0xcc, sizeof(*c)); /* cmdline_init must clear it all */
	cmdline_init(c);
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	free(*state);
	return 0;
}

/* A string of n copies of 'a'. */
static char *run_of(size_t n)
{
	char *s = malloc(n + 1);

	assert_non_null(s);
	memset(s, 'a', n);
	s[n] = '\0';
	return s;
}

/* Parameters are joined by single spaces, formatted printf-style. */
static void test_add_joins(void **state)
{
	struct cmdline *c = *state;

	assert_int_equal(c->len, 0);
	assert_string_equal(c->buf, "");
	cmdline_add(c, "a=%d", 1);
	cmdline_add(c, "b");
	cmdline_add(c, "console=%s", "ttyS0");
	assert_string_equal(c->buf, "a=1 b console=ttyS0");
	assert_int_equal(c->len, strlen(c->buf));
	assert_int_equal(c->overflow, 0);
}

/* Whole keys only: a prefix, a suffix or a value is not a key. */
static void test_has(void **state)
{
	struct cmdline *c = *state;

	cmdline_add(c, "a=1 quiet console=ttyS0");
	cmdline_add(c, "8250.nr_uarts=0");
	assert_true(cmdline_has(c, "a"));
	assert_true(cmdline_has(c, "quiet"));
	assert_true(cmdline_has(c, "console"));
	assert_true(cmdline_has(c, "8250.nr_uarts"));
	assert_false(cmdline_has(c, "consol"));
	assert_false(cmdline_has(c, "console=tty"));
	assert_false(cmdline_has(c, "onsole"));
	assert_false(cmdline_has(c, "ttyS0"));
	assert_false(cmdline_has(c, "1"));
	assert_false(cmdline_has(c, "quie"));
	assert_false(cmdline_has(c, "8250"));
}

static void test_has_empty(void **state)
{
	struct cmdline *c = *state;

	assert_false(cmdline_has(c, "console"));
}

/* Boundary: 4095 bytes plus the NUL fill the buffer exactly. */
static void test_exact_fit(void **state)
{
	struct cmdline *c = *state;
	char *a = run_of(4000), *b = run_of(CMDLINE_CAP - 1 - 4000 - 1);

	cmdline_add(c, "%s", a);
	cmdline_add(c, "%s", b);
	assert_int_equal(c->overflow, 0);
	assert_int_equal(c->len, CMDLINE_CAP - 1);
	assert_int_equal(strlen(c->buf), CMDLINE_CAP - 1);
	/* Now even an empty parameter (its separating space) does not fit. */
	cmdline_add(c, "%s", "");
	assert_int_equal(c->overflow, 1);
	free(a);
	free(b);
}

/* One byte too many overflows; later small parameters are not appended. */
static void test_overflow_sticky(void **state)
{
	struct cmdline *c = *state;
	char *a = run_of(4000), *b = run_of(CMDLINE_CAP - 1 - 4000); /* one too long */

	cmdline_add(c, "%s", a);
	cmdline_add(c, "%s", b);
	assert_int_equal(c->overflow, 1);
	cmdline_add(c, "late=1");
	assert_int_equal(c->overflow, 1);
	assert_false(cmdline_has(c, "late"));
	assert_null(strstr(c->buf, "late"));
	assert_true(strlen(c->buf) < CMDLINE_CAP);
	free(a);
	free(b);
}

/* A single parameter longer than the whole buffer. */
static void test_overflow_single(void **state)
{
	struct cmdline *c = *state;
	char *a = run_of(CMDLINE_CAP);

	cmdline_add(c, "%s", a);
	assert_int_equal(c->overflow, 1);
	assert_true(strlen(c->buf) < CMDLINE_CAP);
	free(a);
}

/* Console on: console=ttyS0, and the UART is not disabled. */
static void test_defaults_console_on(void **state)
{
	struct cmdline *c = *state;

	cmdline_defaults(c, 1);
	/* Keyboard-controller reset, forced: no IOAPIC/LAPIC teardown first. */
	assert_non_null(strstr(c->buf, "reboot=k,f "));
	assert_non_null(strstr(c->buf, "panic=-1"));
	assert_true(cmdline_has(c, "tsc"));
	assert_true(cmdline_has(c, "no_timer_check"));
	assert_true(cmdline_has(c, "console"));
	assert_non_null(strstr(c->buf, "console=ttyS0"));
	assert_false(cmdline_has(c, "8250.nr_uarts"));
	assert_false(cmdline_has(c, "quiet"));
	assert_int_equal(c->overflow, 0);
}

/* Console off: no console=, the 8250 driver registers no ports. */
static void test_defaults_console_off(void **state)
{
	struct cmdline *c = *state;

	cmdline_defaults(c, 0);
	assert_true(cmdline_has(c, "reboot"));
	assert_false(cmdline_has(c, "console"));
	assert_non_null(strstr(c->buf, "8250.nr_uarts=0"));
	assert_true(cmdline_has(c, "quiet"));
}

/* User parameters come after the defaults, so the kernel lets them win. */
static void test_user_params_last(void **state)
{
	struct cmdline *c = *state;
	const char *user = "console=hvc0";

	cmdline_defaults(c, 1);
	cmdline_add(c, "%s", user);
	assert_string_equal(c->buf + c->len - strlen(user), user);
	assert_true(strstr(c->buf, "console=ttyS0") < strstr(c->buf, user));
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_add_joins),           T(test_has),
		T(test_has_empty),           T(test_exact_fit),
		T(test_overflow_sticky),     T(test_overflow_single),
		T(test_defaults_console_on), T(test_defaults_console_off),
		T(test_user_params_last),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
