/*
 * devices/fs/fuse_slots, the slot table behind the FUSE server's nodes and
 * handles. The ids are the guest's to send back, so a made-up, reused or
 * out-of-range id must find nothing; a guest that opens without end must
 * meet the table's cap (-ENFILE, its descriptor closed) and not an
 * allocation without bound.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "devices/fs/fuse_slots.h"

struct entry {
	struct fuse_slot slot;
	int payload;
};

static int open_fd(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	return fd;
}

static int fd_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* Ids carry the index plus first_id and the generation; a freed slot's
 * old id finds nothing, and its next occupant has a new id. */
static void test_ids_and_generations(void **state)
{
	struct fuse_slots t;
	int32_t a, b;
	uint64_t id_a;
	int fd;

	(void)state;
	fuse_slots_init(&t, sizeof(struct entry), 1024, 1);
	a = fuse_slots_take(&t, open_fd());
	b = fuse_slots_take(&t, open_fd());
	assert_int_equal(a, 0); /* lowest first */
	assert_int_equal(b, 1);
	assert_int_equal(t.cap, FUSE_SLOTS_MIN);
	id_a = fuse_slots_id(&t, (uint32_t)a);
	assert_int_equal(id_a, 1); /* index 0 is id 1: FUSE_ROOT_ID */
	assert_ptr_equal(fuse_slots_get(&t, id_a), fuse_slots_at(&t, 0));
	assert_ptr_equal(fuse_slots_get(&t, fuse_slots_id(&t, 1)), fuse_slots_at(&t, 1));
	/* Made up: id 0 (below first_id), beyond the table, a free slot. */
	assert_null(fuse_slots_get(&t, 0));
	assert_null(fuse_slots_get(&t, t.cap + 1));
	assert_null(fuse_slots_get(&t, 0xffffffffULL));
	assert_null(fuse_slots_get(&t, 3));
	/* Freed: its descriptor closed, its id dead, its slot taken next
	 * under another id. */
	fd = ((struct fuse_slot *)fuse_slots_at(&t, 0))->fd;
	fuse_slots_release(&t, 0);
	assert_false(fd_open(fd));
	assert_null(fuse_slots_get(&t, id_a));
	assert_int_equal(fuse_slots_take(&t, open_fd()), 0);
	assert_int_not_equal(fuse_slots_id(&t, 0), id_a);
	assert_null(fuse_slots_get(&t, id_a));
	assert_non_null(fuse_slots_get(&t, fuse_slots_id(&t, 0)));
	fuse_slots_release(&t, 0);
	fuse_slots_release(&t, 1);
	fuse_slots_fini(&t);
}

/* A stale slot is found by its id (the guest may still forget it) and
 * counted; releasing it closes nothing. */
static void test_stale(void **state)
{
	struct fuse_slots t;
	struct fuse_slot *s;

	(void)state;
	fuse_slots_init(&t, sizeof(struct entry), 1024, 0);
	assert_int_equal(fuse_slots_grow(&t), 0);
	s = fuse_slots_at(&t, 5);
	s->fd = FUSE_SLOT_STALE;
	s->gen = 7;
	fuse_slots_relink(&t);
	assert_int_equal(fuse_slots_stale(&t), 1);
	assert_ptr_equal(fuse_slots_get(&t, (7ULL << 32) | 5), s);
	assert_null(fuse_slots_get(&t, (6ULL << 32) | 5));
	/* relink left 5 off the free list: 0..4 come first, then 6. */
	for (int32_t i = 0; i < 5; i++)
		assert_int_equal(fuse_slots_take(&t, FUSE_SLOT_STALE), i);
	assert_int_equal(fuse_slots_take(&t, FUSE_SLOT_STALE), 6);
	fuse_slots_release(&t, 5);
	assert_int_equal(s->fd, FUSE_SLOT_FREE);
	assert_int_equal(s->gen, 8);
	assert_int_equal(fuse_slots_stale(&t), 6);
	fuse_slots_fini(&t);
}

/* Doubling up to max, then -ENFILE with the descriptor closed; the
 * entries' own fields survive the growth. */
static void test_grows_to_its_cap(void **state)
{
	struct fuse_slots t;
	int32_t i;
	int fd;

	(void)state;
	fuse_slots_init(&t, sizeof(struct entry), 256, 0);
	for (int n = 0; n < 256; n++) {
		i = fuse_slots_take(&t, FUSE_SLOT_STALE);
		assert_int_equal(i, n);
		((struct entry *)fuse_slots_at(&t, (uint32_t)i))->payload = n * 3;
	}
	assert_int_equal(t.cap, 256);
	fd = open_fd();
	assert_int_equal(fuse_slots_take(&t, fd), -ENFILE);
	assert_false(fd_open(fd));
	assert_int_equal(fuse_slots_grow(&t), -ENFILE);
	for (uint32_t n = 0; n < 256; n++)
		assert_int_equal(((struct entry *)fuse_slots_at(&t, n))->payload, (int)n * 3);
	fuse_slots_fini(&t);
	assert_null(t.base);
	assert_int_equal(t.cap, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ids_and_generations),
		cmocka_unit_test(test_stale),
		cmocka_unit_test(test_grows_to_its_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
