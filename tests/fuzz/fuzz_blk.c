/*
 * fuzz_blk: the copy-on-write disk (devices/blk/blk_backend.c), the
 * backend of every writable virtio-blk disk: writes, discards,
 * write-zeroes, reads and flushes at any offset and length over a fresh
 * overlay, checked against a plain array; then the overlay file reopened,
 * first as written and then with bytes of its header and map damaged.
 *
 * Input: size choice (1 byte), a count and that many 6-byte operations
 * [op][offset: 2][length: 2][fill byte], then patches to the overlay file
 * [offset: 2][byte], applied before the second reopen.
 * Invariants: every read returns what the array says (the base where
 * nothing was written, zeros after a discard or write-zeroes, zeros past
 * the base); a range outside the disk is -EINVAL and changes nothing; the
 * overlay reopened reads the same; the base file never changes; a damaged
 * overlay is refused with a message or reads without crashing.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devices/blk/blk_backend.h"
#include "fuzz.h"

#define BASE_SIZE (64u << 10)
#define MAX_SIZE (96u << 10)

static char dir[] = "/dev/shm/kiln-fuzz-blk-XXXXXX";
static char base[64], overlay[64];
static uint8_t base_data[BASE_SIZE], model[MAX_SIZE], buf[MAX_SIZE];

static void cleanup(void)
{
	unlink(base);
	unlink(overlay);
	rmdir(dir);
}

static void setup_once(void)
{
	int fd;

	if (base[0])
		return;
	FUZZ_ASSERT(mkdtemp(dir));
	snprintf(base, sizeof(base), "%s/base.img", dir);
	snprintf(overlay, sizeof(overlay), "%s/disk.overlay", dir);
	for (size_t i = 0; i < BASE_SIZE; i++)
		base_data[i] = (uint8_t)(i * 7 + i / 4096 + 1);
	fd = open(base, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	FUZZ_ASSERT(fd >= 0 && write(fd, base_data, BASE_SIZE) == BASE_SIZE);
	close(fd);
	atexit(cleanup);
}

/* The whole disk reads as the model says. */
static void check_all(struct blk *b, uint64_t size)
{
	FUZZ_ASSERT(blk_size(b) == size);
	FUZZ_ASSERT(blk_read(b, 0, buf, size) == 0);
	FUZZ_ASSERT(!memcmp(buf, model, size));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct blk_cow_opts o = { .create = 1, .block_size = 4096 };
	struct err e = { { 0 } };
	struct blk *b = NULL;
	uint8_t sz = take8(&in);
	uint64_t disk;
	size_t nops = take8(&in) % 64;

	setup_once();
	unlink(overlay);
	o.size = sz % 3 == 0 ? 0 : sz % 3 == 1 ? BASE_SIZE + 8192 : MAX_SIZE;
	o.block_size = 4096u << ((sz >> 2) % 3);
	if (blk_open_cow(base, overlay, &o, &b, &e) != 0) {
		fprintf(stderr, "blk_open_cow: %s\n", e.msg);
		abort();
	}
	disk = blk_size(b);
	FUZZ_ASSERT(disk == (o.size ? o.size : BASE_SIZE));
	memset(model, 0, sizeof(model));
	memcpy(model, base_data, disk < BASE_SIZE ? disk : BASE_SIZE);

	for (size_t i = 0; i < nops; i++) {
		uint8_t op = take8(&in), fill = 0;
		uint64_t off = take16(&in), len = take16(&in);
		int in_range = off <= disk && len <= disk - off, r;

		if (op & 0x80) /* far away: the overflow checks */
			off = ~0ULL - off;
		if (op & 0x80)
			in_range = 0;
		fill = take8(&in);
		switch (op % 5) {
		case 0:
			memset(buf, fill, len);
			r = blk_write(b, off, buf, len);
			if (r == 0)
				memset(model + off, fill, len);
			break;
		case 1:
			r = blk_discard(b, off, len);
			if (r == 0)
				memset(model + off, 0, len);
			break;
		case 2:
			r = blk_write_zeroes(b, off, len);
			if (r == 0)
				memset(model + off, 0, len);
			break;
		case 3:
			r = blk_read(b, off, buf, len);
			if (r == 0)
				FUZZ_ASSERT(!memcmp(buf, model + off, len));
			break;
		default:
			r = blk_flush(b);
			in_range = 1;
			break;
		}
		FUZZ_ASSERT(in_range ? r == 0 : r == -EINVAL);
	}
	check_all(b, disk);
	FUZZ_ASSERT(blk_close(b) == 0);

	/* Reopened as written: the same disk. */
	o.create = 0;
	FUZZ_ASSERT(blk_open_cow(base, overlay, &o, &b, &e) == 0);
	check_all(b, disk);
	blk_close(b);

	/* Damaged: refused with a message, or read without crashing. */
	if (in.n >= 3) {
		int fd = open(overlay, O_RDWR);
		struct stat st;

		FUZZ_ASSERT(fd >= 0 && fstat(fd, &st) == 0);
		while (in.n >= 3) {
			uint16_t off = take16(&in);
			uint8_t v = take8(&in);

			if (st.st_size > 0)
				FUZZ_ASSERT(pwrite(fd, &v, 1, off % st.st_size) == 1);
		}
		close(fd);
		e.msg[0] = 0;
		if (blk_open_cow(base, overlay, &o, &b, &e) == 0) {
			int r = blk_read(b, 0, buf,
					 blk_size(b) < MAX_SIZE ? blk_size(b) : MAX_SIZE);

			FUZZ_ASSERT(r == 0 || r == -EIO || r == -EINVAL);
			blk_close(b);
		} else {
			FUZZ_ASSERT(e.msg[0]);
		}
	}
	{
		int fd = open(base, O_RDONLY);

		FUZZ_ASSERT(fd >= 0 && read(fd, buf, BASE_SIZE) == BASE_SIZE &&
			    !memcmp(buf, base_data, BASE_SIZE));
		close(fd);
	}
	return 0;
}
