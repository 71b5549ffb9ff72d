/*
 * event_loop: watches cost memory only as they are added (chunks kept
 * until destroy, since epoll holds pointers to them), at most
 * EVENT_LOOP_MAX are watched at once, and each one's handler gets its own
 * fd's events wherever its watch sits; timers fire once.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "lib/guest/event_loop.h"
#include "heap_used.h"

static int fired[EVENT_LOOP_MAX + 1];
static int timer_fired;

static void on_event(void *ctx, int fd, uint32_t events)
{
	uint64_t v;

	(void)events;
	if (read(fd, &v, sizeof(v)) == sizeof(v))
		__atomic_add_fetch(&fired[(intptr_t)ctx], 1, __ATOMIC_SEQ_CST);
}

static void on_timer(void *ctx)
{
	(void)ctx;
	__atomic_add_fetch(&timer_fired, 1, __ATOMIC_SEQ_CST);
}

static void wait_for(int *counter, int want)
{
	for (int t = 0; t < 3000 && __atomic_load_n(counter, __ATOMIC_SEQ_CST) < want; t++)
		usleep(1000);
	assert_int_equal(__atomic_load_n(counter, __ATOMIC_SEQ_CST), want);
}

/*
 * A loop without watches is a few hundred bytes, not EVENT_LOOP_MAX
 * watches in place (10 KiB of every kiln-vmm); memory grows with the
 * watches in use, and all of it goes at destroy.
 */
static void test_memory_follows_watches(void **state)
{
	size_t base = heap_used(), empty, one;
	struct event_loop *l;
	int fd[20];

	(void)state;
	assert_int_equal(event_loop_create(&l), 0);
	empty = heap_used() - base;
	assert_true(empty <= 1024);
	for (int i = 0; i < 20; i++) {
		fd[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		assert_true(fd[i] >= 0);
		assert_int_equal(event_loop_add(l, fd[i], EPOLLIN, on_event, (void *)(intptr_t)i),
				 0);
		if (i == 0)
			one = heap_used() - base - empty;
	}
	assert_true(one <= 1024);
	assert_true(heap_used() - base - empty <= 2 * one); /* 20 watches: two chunks */
	/* A watch given back is used again: no new memory. */
	assert_int_equal(event_loop_del(l, fd[3]), 0);
	assert_int_equal(event_loop_add(l, fd[3], EPOLLIN, on_event, (void *)(intptr_t)3), 0);
	assert_true(heap_used() - base - empty <= 2 * one);
	event_loop_destroy(l);
	assert_int_equal(heap_used(), base);
	for (int i = 0; i < 20; i++)
		close(fd[i]);
}

/* EVENT_LOOP_MAX watches and no more; each handler gets its own fd's
 * events, in the first chunk or the last; a timer fires once. */
static void test_limit_and_delivery(void **state)
{
	struct event_loop *l;
	int fd[EVENT_LOOP_MAX + 1];
	uint64_t one = 1;
	const int pick[] = { 0, 15, 16, 100, EVENT_LOOP_MAX - 1 };

	(void)state;
	assert_int_equal(event_loop_create(&l), 0);
	for (int i = 0; i <= EVENT_LOOP_MAX; i++) {
		fd[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		assert_true(fd[i] >= 0);
	}
	for (int i = 0; i < EVENT_LOOP_MAX; i++)
		assert_int_equal(event_loop_add(l, fd[i], EPOLLIN, on_event, (void *)(intptr_t)i),
				 0);
	assert_int_equal(event_loop_add(l, fd[EVENT_LOOP_MAX], EPOLLIN, on_event,
					(void *)(intptr_t)EVENT_LOOP_MAX),
			 -ENOSPC);
	assert_int_equal(event_loop_timer(l, 1, on_timer, NULL), -ENOSPC);
	/* Watching a watched fd again replaces its watch: no new one. */
	assert_int_equal(event_loop_add(l, fd[7], EPOLLIN, on_event, (void *)(intptr_t)7), 0);
	assert_int_equal(event_loop_del(l, fd[200]), 0);
	assert_int_equal(event_loop_del(l, fd[200]), -ENOENT);
	assert_int_equal(event_loop_timer(l, 1, on_timer, NULL), 0);
	assert_int_equal(event_loop_start(l), 0);
	wait_for(&timer_fired, 1);
	for (size_t k = 0; k < sizeof(pick) / sizeof(pick[0]); k++) {
		assert_int_equal(write(fd[pick[k]], &one, sizeof(one)), sizeof(one));
		wait_for(&fired[pick[k]], 1);
	}
	/* The timer's watch was given back when it fired. */
	assert_int_equal(event_loop_add(l, fd[EVENT_LOOP_MAX], EPOLLIN, on_event,
					(void *)(intptr_t)EVENT_LOOP_MAX),
			 0);
	assert_int_equal(write(fd[EVENT_LOOP_MAX], &one, sizeof(one)), sizeof(one));
	wait_for(&fired[EVENT_LOOP_MAX], 1);
	assert_int_equal(fired[200], 0);
	assert_int_equal(__atomic_load_n(&timer_fired, __ATOMIC_SEQ_CST), 1);
	event_loop_destroy(l);
	for (int i = 0; i <= EVENT_LOOP_MAX; i++)
		close(fd[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memory_follows_watches),
		cmocka_unit_test(test_limit_and_delivery),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
