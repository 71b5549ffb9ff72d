/*
 * fuzz_snapshot: the snapshot directory's files (vmm/snapshot/): the state
 * file parser, its writer, and the compressed memory file, all of which a
 * restore reads from a directory someone else may have written.
 *
 * Input: mode (1 byte), then:
 *   mode % 4 == 0: a state file to parse (bit 7: first make its total and
 *     checksum right, so the fuzzer gets past the CRC; bit 6: check it
 *     against this host, else only inspect);
 *   mode % 4 == 1: sections [type 4][index 4][name len 1][name][len 2][data]
 *     written with the writer, then parsed back;
 *   mode % 4 == 2: a compressed memory file, read into 64 KiB of RAM;
 *   mode % 4 == 3: 64 KiB of RAM written compressed and read back.
 * Invariants: a refusal is one of the documented SNAP_ERR_* codes with a
 * message; a parsed view's sections lie inside the buffer, sorted lookups
 * find each of them, every section decodes through a cursor to its end;
 * what the writer wrote parses back to the same sections, and any single
 * damaged byte is refused; a memory file round trip is exact.
 */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vmm/snapshot/snapshot_file.h"
#include "vmm/snapshot/snapshot_mem.h"
#include "fuzz.h"
#include "snap_seal.h"

#define MEM (64u << 10)

static const struct snap_compat WHO = {
	.kiln_version = "0.1.0",
	.cpu = { .vendor = "AuthenticAMD",
		 .family = 25,
		 .model = 33,
		 .features = 0x1234abcd5678ef01ull },
};

static int documented(int r)
{
	return r == SNAP_ERR_MAGIC || r == SNAP_ERR_TRUNCATED || r == SNAP_ERR_CHECKSUM ||
		r == SNAP_ERR_FORMAT || r == SNAP_ERR_KILN_VERSION || r == SNAP_ERR_CPU ||
		r == SNAP_ERR_MALFORMED || r == SNAP_ERR_DUPLICATE || r == SNAP_ERR_TOO_BIG ||
		r == -ENOMEM;
}

static void check_view(const uint8_t *b, size_t len, const struct snap_view *v)
{
	FUZZ_ASSERT(v->count <= SNAP_MAX_SECTIONS);
	for (uint32_t i = 0; i < v->count; i++) {
		const struct snap_section *s = &v->sections[i];
		struct snap_cursor c;
		struct err e;

		FUZZ_ASSERT(s->data >= b && s->len <= len && (size_t)(s->data - b) <= len - s->len);
		FUZZ_ASSERT(s->type != 0 && s->name[0] && memchr(s->name, 0, sizeof(s->name)));
		FUZZ_ASSERT(snap_find(v, s->type, s->index) == s);
		snap_cursor_init(&c, s);
		for (uint64_t k = 0; k + 8 <= s->len; k += 8)
			snap_get_u64(&c);
		while (c.off < s->len)
			snap_get_u8(&c);
		FUZZ_ASSERT(!c.bad && snap_cursor_end(&c, &e) == 0);
		snap_get_u32(&c); /* past the end: zeros, and the cursor turns bad */
		FUZZ_ASSERT(c.bad && snap_cursor_end(&c, &e) == SNAP_ERR_MALFORMED);
	}
}

static void parse_raw(const uint8_t *p, size_t n, uint8_t mode)
{
	struct snap_view v;
	struct err e = { { 0 } };
	size_t in_len = n;
	uint8_t *b;
	int r;

	if (mode & 0x80)
		n = (n + 7) & ~(size_t)7;
	b = calloc(1, n ? n : 1);
	if (!b)
		return;
	memcpy(b, p, in_len);
	if (mode & 0x80)
		snap_seal(b, n);
	memset(&v, 0, sizeof(v));
	r = snap_parse(b, n, (mode & 0x40) ? &WHO : NULL, &v, &e);
	if (r == 0) {
		check_view(b, n, &v);
		snap_view_free(&v);
	} else {
		FUZZ_ASSERT(documented(r) && e.msg[0]);
	}
	free(b);
}

static void write_parse(struct fuzz_in *in)
{
	struct snap_writer w;
	struct err e = { { 0 } };
	const uint8_t *out;
	size_t out_len;
	struct {
		uint32_t type, index;
		char name[SNAP_NAME_MAX + 2];
		const uint8_t *data;
		size_t len;
	} sec[32];
	int n = 0, r, refused = 0;
	uint8_t flip;

	FUZZ_ASSERT(snap_writer_init(&w, &WHO, &e) == 0);
	flip = take8(in);
	while (in->n && n < 32) {
		size_t nl, got;
		const uint8_t *name;

		sec[n].type = take32(in);
		sec[n].index = take32(in);
		nl = take8(in) % (SNAP_NAME_MAX + 2);
		name = take_bytes(in, nl, &got);
		memcpy(sec[n].name, name, got);
		sec[n].name[got] = 0;
		sec[n].data = take_bytes(in, take16(in), &sec[n].len);
		r = snap_add(&w, sec[n].type, sec[n].index, sec[n].name, sec[n].data, sec[n].len,
			     &e);
		if (r) {
			/* A bad name or type 0; the error sticks to the writer. */
			FUZZ_ASSERT(r == -EINVAL && e.msg[0]);
			refused = 1;
			break;
		}
		n++;
	}
	r = snap_finish(&w, &out, &out_len, &e);
	if (r == 0) {
		struct snap_view v;
		uint8_t *copy;

		memset(&v, 0, sizeof(v));
		FUZZ_ASSERT(snap_parse(out, out_len, &WHO, &v, &e) == 0);
		FUZZ_ASSERT(v.count == (uint32_t)n);
		for (int i = 0; i < n; i++) {
			const struct snap_section *s = &v.sections[i];

			FUZZ_ASSERT(s->type == sec[i].type && s->index == sec[i].index &&
				    !strcmp(s->name, sec[i].name));
			FUZZ_ASSERT(s->len == sec[i].len && !memcmp(s->data, sec[i].data, s->len));
		}
		check_view(out, out_len, &v);
		snap_view_free(&v);
		/* One damaged byte anywhere: refused. */
		copy = malloc(out_len);
		FUZZ_ASSERT(copy);
		memcpy(copy, out, out_len);
		copy[(flip * 2654435761u) % out_len] ^= (uint8_t)(flip | 1);
		memset(&v, 0, sizeof(v));
		FUZZ_ASSERT(snap_parse(copy, out_len, &WHO, &v, &e) != 0);
		free(copy);
	} else {
		FUZZ_ASSERT(r == SNAP_ERR_DUPLICATE || r == SNAP_ERR_TOO_BIG || r == -ENOMEM ||
			    (refused && r == -EINVAL));
	}
	snap_writer_free(&w);
}

static void mem_file(const uint8_t *p, size_t n, int roundtrip)
{
	static uint8_t *mem, *back;
	struct err e = { { 0 } };
	int fd = memfd_create("fuzz-memory.z", MFD_CLOEXEC), r;

	FUZZ_ASSERT(fd >= 0);
	if (!mem) {
		mem = malloc(MEM);
		back = malloc(MEM);
		FUZZ_ASSERT(mem && back);
	}
	if (roundtrip) {
		memset(mem, 0, MEM);
		memcpy(mem, p, n < MEM ? n : MEM);
		FUZZ_ASSERT(snap_mem_write_z(fd, mem, MEM, 1, NULL, &e) == 0);
		memset(back, 0, MEM); /* zero-filled, as a fresh mapping is */
		FUZZ_ASSERT(snap_mem_read_z(fd, back, MEM, &e) == 0);
		FUZZ_ASSERT(!memcmp(mem, back, MEM));
		/* tests/fuzz/make-seeds: a real memory file for the mode-2 seeds. */
		if (getenv("KILN_FUZZ_SAVE_MEMZ")) {
			FILE *f = fopen(getenv("KILN_FUZZ_SAVE_MEMZ"), "wb");
			uint8_t buf[1 << 16];
			ssize_t k;

			fputc(2, f);
			lseek(fd, 0, SEEK_SET);
			while ((k = read(fd, buf, sizeof(buf))) > 0)
				fwrite(buf, 1, (size_t)k, f);
			fclose(f);
		}
	} else {
		FUZZ_ASSERT(write(fd, p, n) == (ssize_t)n);
		memset(back, 0, MEM);
		r = snap_mem_read_z(fd, back, MEM, &e);
		if (r)
			FUZZ_ASSERT(r < 0 && e.msg[0]);
	}
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	uint8_t mode = take8(&in);
	size_t got;
	const uint8_t *p;

	switch (mode % 4) {
	case 0:
		p = take_bytes(&in, in.n, &got);
		parse_raw(p, got, mode);
		break;
	case 1:
		write_parse(&in);
		break;
	default:
		p = take_bytes(&in, in.n, &got);
		mem_file(p, got, mode % 4 == 3);
		break;
	}
	return 0;
}
