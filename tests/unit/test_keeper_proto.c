/*
 * keeper_proto: the keeper's hello and exit lines, read as hostile input
 * (a damaged vmm.exit, numbers out of range, trailing bytes).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "api/kilnd/keeper/keeper_proto.h"

#define S(x) (x), strlen(x)

static void test_hello_roundtrip(void **state)
{
	struct keeper_vmm_id id = { .pid = 4321, .start = 987654321ull }, back;
	char line[KEEPER_LINE_MAX];
	int n;

	(void)state;
	n = keeper_hello_format(line, sizeof(line), &id);
	assert_true(n > 0);
	assert_string_equal(line, "kiln-keeper 1 pid=4321 start=987654321\n");
	assert_int_equal(keeper_hello_parse(line, (size_t)n, &back), 0);
	assert_int_equal(back.pid, 4321);
	assert_true(back.start == 987654321ull);
	assert_int_equal(keeper_hello_format(line, 10, &id), -ENOSPC);
}

static void test_hello_hostile(void **state)
{
	static const char *const bad[] = {
		"",
		"\n",
		"kiln-keeper 1 pid=4321 start=5",      /* no newline */
		"kiln-keeper 1 pid=4321 start=5\n\n",  /* a second line */
		"kiln-keeper 1 pid=4321 start=5\nx",   /* bytes after it */
		"kiln-keeper 2 pid=4321 start=5\n",    /* another version */
		"kiln-keeper 1 pid=0 start=5\n",       /* no pid 0 */
		"kiln-keeper 1 pid=4194305 start=5\n", /* beyond PID_MAX_LIMIT */
		"kiln-keeper 1 pid=-4 start=5\n",
		"kiln-keeper 1 pid=+4 start=5\n",
		"kiln-keeper 1 pid= 4 start=5\n",
		"kiln-keeper 1 pid=4  start=5\n",
		"kiln-keeper 1 start=5 pid=4\n",                    /* order */
		"kiln-keeper 1 pid=4 start=18446744073709551616\n", /* 2^64 */
		"kiln-keeper 1 pid=4 start=5 extra=1\n",
		"kiln-keeper 1 pid=4 start=0x5\n",
		"kiln-keeper 1 pid=4\n",
		"KILN-KEEPER 1 pid=4 start=5\n",
	};
	struct keeper_vmm_id id = { .pid = 77, .start = 77 };

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (keeper_hello_parse(S(bad[i]), &id) != -EINVAL)
			fail_msg("accepted: '%s'", bad[i]);
	}
	/* A NUL inside: refused, not cut there. */
	assert_int_equal(keeper_hello_parse("kiln-keeper 1 pid=4\0start=5\n", 29, &id), -EINVAL);
	/* *id untouched by every refusal. */
	assert_int_equal(id.pid, 77);
	/* Longer than a line may be. */
	char big[KEEPER_LINE_MAX + 40];

	memset(big, '0', sizeof(big));
	memcpy(big, "kiln-keeper 1 pid=4 start=", 26);
	big[sizeof(big) - 1] = '\n';
	assert_int_equal(keeper_hello_parse(big, sizeof(big), &id), -EINVAL);
}

static void test_exit_roundtrip(void **state)
{
	struct keeper_exit x = { .id = { .pid = 12, .start = 34 }, .status = 0 }, back;
	char line[KEEPER_LINE_MAX];
	int n;

	(void)state;
	n = keeper_exit_format(line, sizeof(line), &x);
	assert_string_equal(line, "kiln-keeper 1 exit pid=12 start=34 status=0 signal=0\n");
	assert_int_equal(keeper_exit_parse(line, (size_t)n, &back), 0);
	assert_int_equal(back.status, 0);
	assert_int_equal(back.signal, 0);
	x.status = -1;
	x.signal = 9;
	n = keeper_exit_format(line, sizeof(line), &x);
	assert_string_equal(line, "kiln-keeper 1 exit pid=12 start=34 status=-1 signal=9\n");
	assert_int_equal(keeper_exit_parse(line, (size_t)n, &back), 0);
	assert_int_equal(back.status, -1);
	assert_int_equal(back.signal, 9);
	x.status = 255;
	x.signal = 0;
	n = keeper_exit_format(line, sizeof(line), &x);
	assert_int_equal(keeper_exit_parse(line, (size_t)n, &back), 0);
	assert_int_equal(back.status, 255);
	/* Nothing out of range is ever written. */
	x.status = 256;
	assert_int_equal(keeper_exit_format(line, sizeof(line), &x), -EINVAL);
	x.status = 1;
	x.signal = 9;
	assert_int_equal(keeper_exit_format(line, sizeof(line), &x), -EINVAL);
}

static void test_exit_hostile(void **state)
{
	static const char *const bad[] = {
		"kiln-keeper 1 exit pid=12 start=34 status=0 signal=9\n",  /* both */
		"kiln-keeper 1 exit pid=12 start=34 status=-1 signal=0\n", /* neither */
		"kiln-keeper 1 exit pid=12 start=34 status=256 signal=0\n",
		"kiln-keeper 1 exit pid=12 start=34 status=0256 signal=0\n",
		"kiln-keeper 1 exit pid=12 start=34 status=-2 signal=0\n",
		"kiln-keeper 1 exit pid=12 start=34 status=-1 signal=65\n",
		"kiln-keeper 1 exit pid=12 start=34 status=1 signal=0", /* no newline: cut short */
		"kiln-keeper 1 exit pid=12 start=34 status=1\n",
		"kiln-keeper 1 exit pid=12 start=34 status= signal=0\n",
		"kiln-keeper 1 exit pid=12 start=34 signal=0 status=1\n",
		"kiln-keeper 1 pid=12 start=34\n", /* a hello is no exit */
		"kiln-keeper 1 exit pid=12 start=34 status=1 signal=0\nkiln-keeper 1 exit pid=12 start=34 status=0 signal=0\n",
		"kiln-keeper 1 exit pid=12 start=34 status=1 signal=0 \n",
	};
	struct keeper_exit x = { .status = 99 };

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (keeper_exit_parse(S(bad[i]), &x) != -EINVAL)
			fail_msg("accepted: '%s'", bad[i]);
	}
	assert_int_equal(x.status, 99);
}

static void test_claim(void **state)
{
	static const char *const bad[] = {
		"claim ",     "claim x",     "claim  /x", "Claim /x", "claim/x",
		"claim /x\n", "claim /a\nb", "",          "claim",
	};
	char line[PATH_MAX + 16], dir[PATH_MAX], big[PATH_MAX + 1];
	int n;

	(void)state;
	n = keeper_claim_format(line, sizeof(line), "/var/lib/kiln/sandboxes/a1");
	assert_int_equal(n, (int)strlen("claim /var/lib/kiln/sandboxes/a1"));
	assert_int_equal(keeper_claim_parse(line, (size_t)n, dir, sizeof(dir)), 0);
	assert_string_equal(dir, "/var/lib/kiln/sandboxes/a1");
	/* the NUL is not part of the message: one inside is refused */
	assert_int_equal(keeper_claim_parse(line, (size_t)n + 1, dir, sizeof(dir)), -EINVAL);
	assert_int_equal(keeper_claim_parse(line, (size_t)n, dir, 5), -EINVAL);
	assert_int_equal(keeper_claim_format(line, 8, "/var/lib"), -ENOSPC);
	assert_int_equal(keeper_claim_format(line, sizeof(line), "rel"), -EINVAL);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(keeper_claim_parse(bad[i], strlen(bad[i]), dir, sizeof(dir)),
				 -EINVAL);
	memset(big, 'a', sizeof(big) - 1);
	big[0] = '/';
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(keeper_claim_format(line, sizeof(line), big), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hello_roundtrip), cmocka_unit_test(test_hello_hostile),
		cmocka_unit_test(test_exit_roundtrip),  cmocka_unit_test(test_exit_hostile),
		cmocka_unit_test(test_claim),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
