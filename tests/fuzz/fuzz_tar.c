/*
 * fuzz_tar: the agent's ustar reader (api/proto/agent_tar.c), what a
 * tar_upload streams into the guest, fed in any split; and its producer,
 * which must write back every member the reader accepted.
 *
 * Input: split seed (1 byte; bit 1: fix every ustar header's checksum
 * first), then the archive.
 * Invariants: the events do not depend on the split; every member's name
 * is normalised, relative, non-empty, without `..`; a symlink's target
 * passes the symlink rule again, a hard link's is a normalised name; a
 * FILE gets exactly `size` DATA bytes, slices of the fed buffer, before
 * FILE_END; an error is sticky; mode fits 07777; a member's header built
 * by tar_header_build reads back as the same member.
 */
#include <errno.h>

#include "api/proto/agent_tar.h"
#include "fuzz.h"
#include "tar_fixup.h"

struct trace {
	uint8_t buf[1 << 16];
	size_t n;
};

static void trace_add(struct trace *t, const void *p, size_t n)
{
	if (n > sizeof(t->buf) - t->n)
		n = sizeof(t->buf) - t->n;
	memcpy(t->buf + t->n, p, n);
	t->n += n;
}

static int name_ok(const char *s, size_t n)
{
	if (n == 0 || s[0] == '/' || strlen(s) != n)
		return 0;
	for (const char *c = s; c < s + n;) {
		const char *e = memchr(c, '/', (size_t)(s + n - c));
		size_t l = e ? (size_t)(e - c) : (size_t)(s + n - c);

		if ((l == 2 && c[0] == '.' && c[1] == '.') || (l == 1 && c[0] == '.') ||
		    (l == 0 && e && e + 1 < s + n))
			return 0;
		c += l + 1;
	}
	return 1;
}

/* The producer writes the member back; the reader must read the same. */
static void roundtrip(const struct tar_member *m)
{
	static uint8_t out[TAR_HEADER_BUILD_MAX + 2 * TAR_BLOCK];
	char name[8192];
	struct tar_out o = { .mode = m->mode, .mtime = m->mtime };
	struct tar_reader r;
	struct tar_event ev;
	ssize_t n;

	if (m->kind == TAR_HARDLINK || m->name_len + 2 > sizeof(name))
		return;
	memcpy(name, m->name, m->name_len + 1);
	o.name = name;
	o.name_len = m->name_len;
	o.type = m->kind == TAR_FILE ? '0' : m->kind == TAR_DIR ? '5' : '2';
	if (m->kind == TAR_DIR) {
		name[o.name_len++] = '/';
		name[o.name_len] = 0;
	}
	if (m->kind == TAR_SYMLINK) {
		o.link = m->link;
		o.link_len = m->link_len;
	}
	n = tar_header_build(&o, out, sizeof(out));
	if (n == -ENAMETOOLONG)
		return;
	FUZZ_ASSERT(n > 0 && n % TAR_BLOCK == 0);
	tar_reader_init(&r, "/t");
	FUZZ_ASSERT(tar_reader_feed(&r, out, (size_t)n, &ev) <= (size_t)n);
	if (ev.kind != TAR_EV_MEMBER) {
		fprintf(stderr, "built header for '%s' not read back: %d %s\n", m->name, ev.kind,
			ev.err ? ev.err->msg : "");
		FUZZ_ASSERT(!"header round trip");
	}
	FUZZ_ASSERT(ev.member->kind == m->kind && ev.member->name_len == m->name_len &&
		    memcmp(ev.member->name, m->name, m->name_len) == 0);
	if (m->kind == TAR_SYMLINK)
		FUZZ_ASSERT(ev.member->link_len == m->link_len &&
			    memcmp(ev.member->link, m->link, m->link_len) == 0);
	tar_reader_free(&r);
}

static void run(const uint8_t *s, size_t n, uint8_t seed, struct trace *t, int check)
{
	struct tar_reader r;
	size_t off = 0;
	uint32_t rnd = seed;
	uint64_t left = 0;
	int in_file = 0, ended = 0;
	struct tar_event ev;

	tar_reader_init(&r, "/t");
	for (;;) {
		size_t piece = n - off;

		if (seed && piece) {
			rnd = rnd * 1103515245u + 12345u;
			piece = 1 + (rnd >> 16) % 700;
			if (piece > n - off)
				piece = n - off;
		}
		for (size_t done = 0;;) {
			size_t used = tar_reader_feed(&r, s + off + done, piece - done, &ev);

			FUZZ_ASSERT(used <= piece - done);
			/* Events that depend on the split stay out of the trace. */
			if (ev.kind != TAR_EV_NEED_MORE && ev.kind != TAR_EV_DATA)
				trace_add(t, &ev.kind, 1);
			switch (ev.kind) {
			case TAR_EV_NEED_MORE:
				FUZZ_ASSERT(used == piece - done);
				break;
			case TAR_EV_MEMBER: {
				const struct tar_member *m = ev.member;

				FUZZ_ASSERT(!in_file && !ended);
				FUZZ_ASSERT(name_ok(m->name, m->name_len));
				FUZZ_ASSERT(m->mode <= 07777 && m->mtime_nsec < 1000000000u);
				if (m->kind == TAR_SYMLINK) {
					struct agent_err err;

					FUZZ_ASSERT(tar_symlink_check(m->name, m->name_len, m->link,
								      m->link_len, "/t",
								      &err) == AGENT_OK);
				}
				if (m->kind == TAR_HARDLINK)
					FUZZ_ASSERT(name_ok(m->link, m->link_len));
				trace_add(t, m->name, m->name_len);
				if (m->kind == TAR_FILE) {
					in_file = 1;
					left = m->size;
				}
				if (check)
					roundtrip(m);
				break;
			}
			case TAR_EV_DATA:
				FUZZ_ASSERT(in_file && ev.data == s + off + done &&
					    ev.data_len == used && used);
				FUZZ_ASSERT(ev.data_len <= left);
				left -= ev.data_len;
				trace_add(t, ev.data, ev.data_len);
				break;
			case TAR_EV_FILE_END:
				FUZZ_ASSERT(in_file && left == 0);
				in_file = 0;
				break;
			case TAR_EV_SKIPPED:
				FUZZ_ASSERT(!in_file);
				break;
			case TAR_EV_END:
				FUZZ_ASSERT(!in_file);
				ended = 1;
				break;
			case TAR_EV_ERROR:
				FUZZ_ASSERT(ev.err &&
					    (ev.err->code == AGENT_E_BAD_ARCHIVE ||
					     ev.err->code == AGENT_E_UNSAFE_PATH));
				trace_add(t, &ev.err->code, sizeof(ev.err->code));
				FUZZ_ASSERT(tar_reader_feed(&r, "", 0, &ev) == 0 &&
					    ev.kind == TAR_EV_ERROR);
				goto out;
			}
			done += used;
			if (ev.kind == TAR_EV_NEED_MORE)
				break;
		}
		off += piece;
		if (off == n)
			break;
	}
	tar_reader_finish(&r, &ev);
	FUZZ_ASSERT(ev.kind == TAR_EV_END || ev.kind == TAR_EV_ERROR);
	if (ev.kind == TAR_EV_END)
		FUZZ_ASSERT(!in_file);
	trace_add(t, &ev.kind, 1);
out:
	tar_reader_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct trace whole, split;

	static uint8_t *fixed;
	const uint8_t *a;

	if (size < 1)
		return 0;
	a = data + 1;
	if (data[0] & 2) {
		free(fixed);
		fixed = malloc(size);
		FUZZ_ASSERT(fixed);
		memcpy(fixed, data + 1, size - 1);
		tar_fixup(fixed, size - 1);
		a = fixed;
	}
	whole.n = split.n = 0;
	run(a, size - 1, 0, &whole, 1);
	run(a, size - 1, data[0] | 1, &split, 0);
	FUZZ_ASSERT(whole.n == split.n && memcmp(whole.buf, split.buf, whole.n) == 0);
	return 0;
}
