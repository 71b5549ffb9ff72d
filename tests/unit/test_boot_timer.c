/*
 * boot_timer: the guest writes milestones to an I/O port. The guest is
 * untrusted, so odd sizes and offsets are ignored and a guest that writes
 * milestones in a loop cannot grow the timeline.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "devices/pseudo/boot_timer.h"
#include "lib/base/mono.h"

struct fx {
	struct timeline tl;
	struct boot_timer bt;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	/* t0 = 0: milestone times are absolute, so no derived time clamps to 0. */
	timeline_init(&f->tl, 0);
	boot_timer_init(&f->bt, &f->tl);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	timeline_destroy(&f->tl);
	free(f);
	return 0;
}

static void mark(struct fx *f, uint8_t code)
{
	boot_timer_io(&f->bt, 0, &code, 1, 1);
}

static void uptime(struct fx *f, uint32_t us)
{
	uint8_t d[4];

	memcpy(d, &us, 4);
	boot_timer_io(&f->bt, 4, d, 4, 1);
}

/* The three known codes get their documented names, in order. */
static void test_known_codes(void **state)
{
	struct fx *f = *state;

	mark(f, BOOT_MS_INIT_STARTED);
	mark(f, BOOT_MS_AGENT_READY);
	mark(f, BOOT_MS_SHUTDOWN);
	assert_int_equal(f->tl.n, 3);
	assert_string_equal(f->tl.m[0].name, "init_started");
	assert_string_equal(f->tl.m[1].name, "agent_ready");
	assert_string_equal(f->tl.m[2].name, "shutdown_requested");
	for (int i = 0; i < 3; i++)
		assert_int_equal(f->tl.m[i].derived, 0);
	assert_true(f->tl.m[0].ns <= f->tl.m[1].ns && f->tl.m[1].ns <= f->tl.m[2].ns);
	/* Without the guest clock there is no derived kernel_start. */
	assert_false(timeline_has(&f->tl, "kernel_start"));
}

/* Unknown codes are kept as guest_<code>; code 0 means nothing. */
static void test_unknown_code(void **state)
{
	struct fx *f = *state;
	char buf[16];

	assert_string_equal(boot_timer_name(42, buf, sizeof(buf)), "guest_42");
	assert_string_equal(boot_timer_name(255, buf, sizeof(buf)), "guest_255");
	assert_string_equal(boot_timer_name(BOOT_MS_AGENT_READY, buf, sizeof(buf)), "agent_ready");
	mark(f, 0);
	assert_int_equal(f->tl.n, 0);
	mark(f, 200);
	assert_int_equal(f->tl.n, 1);
	assert_string_equal(f->tl.m[0].name, "guest_200");
}

/* Guest uptime with init_started yields kernel_start exactly that much earlier. */
static void test_derived_kernel_start(void **state)
{
	struct fx *f = *state;

	uptime(f, 1500); /* 1.5 ms since the guest kernel started */
	mark(f, BOOT_MS_INIT_STARTED);
	assert_int_equal(f->tl.n, 2);
	assert_string_equal(f->tl.m[0].name, "kernel_start");
	assert_int_equal(f->tl.m[0].derived, 1);
	assert_string_equal(f->tl.m[1].name, "init_started");
	assert_int_equal(f->tl.m[1].derived, 0);
	assert_int_equal(f->tl.m[1].ns - f->tl.m[0].ns, 1500000);
}

/* The uptime belongs to the next milestone only; it is not reused later. */
static void test_uptime_consumed(void **state)
{
	struct fx *f = *state;

	uptime(f, 1000);
	mark(f, BOOT_MS_AGENT_READY);
	mark(f, BOOT_MS_INIT_STARTED);
	assert_int_equal(f->tl.n, 2);
	assert_false(timeline_has(&f->tl, "kernel_start"));
}

/* Writes of the wrong size or at other offsets change nothing. */
static void test_wrong_size_ignored(void **state)
{
	struct fx *f = *state;
	uint8_t d[8] = { BOOT_MS_INIT_STARTED, 0, 0, 0, 0, 0, 0, 0 };

	boot_timer_io(&f->bt, 0, d, 2, 1);
	boot_timer_io(&f->bt, 0, d, 4, 1);
	boot_timer_io(&f->bt, 0, d, 8, 1);
	for (uint64_t off = 1; off < BOOT_TIMER_LEN; off++)
		boot_timer_io(&f->bt, off, d, 1, 1);
	assert_int_equal(f->tl.n, 0);

	/* A 2-byte uptime is not an uptime: no kernel_start follows. */
	d[0] = 0xe8;
	d[1] = 0x03;
	boot_timer_io(&f->bt, 4, d, 2, 1);
	boot_timer_io(&f->bt, 4, d, 1, 1);
	boot_timer_io(&f->bt, 4, d, 8, 1);
	assert_int_equal(f->bt.have_guest_us, 0);
	mark(f, BOOT_MS_INIT_STARTED);
	assert_int_equal(f->tl.n, 1);
	assert_false(timeline_has(&f->tl, "kernel_start"));
}

/* The port is write-only: reads return zero. */
static void test_reads_zero(void **state)
{
	struct fx *f = *state;
	uint8_t d[4] = { 0xff, 0xff, 0xff, 0xff };

	uptime(f, 7);
	boot_timer_io(&f->bt, 4, d, 4, 0);
	assert_memory_equal(d, "\0\0\0\0", 4);
	assert_int_equal(f->tl.n, 0);
}

/* A guest marking in a loop cannot grow the timeline past TIMELINE_MAX;
 * what is kept is the earliest marks, and nothing is written out of bounds. */
static void test_flood_bounded(void **state)
{
	struct fx *f = *state;

	for (int i = 0; i < 3 * TIMELINE_MAX; i++) {
		uptime(f, 10);
		mark(f, (uint8_t)(BOOT_MS_INIT_STARTED + i));
	}
	assert_true(f->tl.n <= TIMELINE_MAX);
	assert_true(f->tl.n >= TIMELINE_MAX / 2);
	assert_true(timeline_has(&f->tl, "kernel_start"));
	assert_true(timeline_has(&f->tl, "guest_10"));
	assert_false(timeline_has(&f->tl, "guest_190")); /* the 190th mark */
	/* A host milestone after the flood does not overflow either. */
	timeline_mark(&f->tl, "vm_exit");
	assert_true(f->tl.n <= TIMELINE_MAX);
}

/* However long the flood, the host's own vm_exit still fits afterwards. */
static void test_flood_leaves_room_for_host(void **state)
{
	struct fx *f = *state;

	for (int i = 0; i < 3 * TIMELINE_MAX; i++) {
		uptime(f, 10);
		mark(f, 200);
	}
	assert_true(f->tl.n <= BOOT_TIMER_MAX_MARKS);
	timeline_mark(&f->tl, "vm_exit");
	assert_true(timeline_has(&f->tl, "vm_exit"));
}

/* A guest claiming more uptime than the VMM has existed gets no derived
 * kernel_start (it would be clamped to the VMM's start and mislead). */
static void test_impossible_uptime_dropped(void **state)
{
	struct fx *f = *state;

	f->tl.t0_ns = mono_ns() - 1000000; /* the VMM started 1 ms ago */
	uptime(f, 5000000);                /* guest claims 5 s */
	mark(f, BOOT_MS_INIT_STARTED);
	assert_true(timeline_has(&f->tl, "init_started"));
	assert_false(timeline_has(&f->tl, "kernel_start"));
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_known_codes),
		T(test_unknown_code),
		T(test_derived_kernel_start),
		T(test_uptime_consumed),
		T(test_wrong_size_ignored),
		T(test_reads_zero),
		T(test_flood_bounded),
		T(test_flood_leaves_room_for_host),
		T(test_impossible_uptime_dropped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
