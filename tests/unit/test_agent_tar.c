/*
 * agent_tar: archives are hostile. Every malformed header (checksum, magic,
 * numeric fields, sizes past the end, cut-off members, oversized or broken
 * pax records) must stop the reader with bad_archive, and every name or
 * link that could leave the target (absolute, `..`, symlinks climbing out,
 * hard links outside) with unsafe_path, before the member is reported. The
 * result must not depend on how the bytes were split. The producer's
 * headers must read back exactly, including pax names and base-256 sizes.
 *
 * Archives here are built by the test's own header writer, not by the
 * producer under test, so a shared mistake cannot cancel out.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/proto/agent_tar.h"

/* ---- an archive builder independent of agent_tar.c ---- */

struct arc {
	uint8_t *b;
	size_t n, cap;
};

static uint8_t *arc_grow(struct arc *a, size_t k)
{
	uint8_t *p;

	if (a->n + k > a->cap) {
		a->cap = (a->n + k) * 2;
		a->b = realloc(a->b, a->cap);
		assert_non_null(a->b);
	}
	p = a->b + a->n;
	memset(p, 0, k);
	a->n += k;
	return p;
}

static void oct(uint8_t *f, size_t w, unsigned long long v)
{
	char tmp[32];

	snprintf(tmp, sizeof(tmp), "%0*llo", (int)w - 1, v);
	memcpy(f, tmp, w - 1);
	f[w - 1] = 0;
}

static void fix_checksum(uint8_t *h)
{
	unsigned sum = 0;

	memset(h + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	h[155] = ' ';
}

/* One POSIX ustar header; returns it so a test can tamper and re-sum. */
static uint8_t *hdr(struct arc *a, const char *name, char type, unsigned long long size,
		    const char *link)
{
	uint8_t *h = arc_grow(a, 512);

	memcpy(h, name, strlen(name) < 100 ? strlen(name) : 100);
	oct(h + 100, 8, type == '5' ? 0755 : 0644);
	oct(h + 108, 8, 1000);
	oct(h + 116, 8, 1000);
	oct(h + 124, 12, size);
	oct(h + 136, 12, 1700000000);
	h[156] = (uint8_t)type;
	if (link)
		memcpy(h + 157, link, strlen(link) < 100 ? strlen(link) : 100);
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	fix_checksum(h);
	return h;
}

static void data(struct arc *a, const void *d, size_t n)
{
	memcpy(arc_grow(a, n), d, n);
	arc_grow(a, (512 - n % 512) % 512);
}

static void file(struct arc *a, const char *name, const char *content)
{
	hdr(a, name, '0', strlen(content), NULL);
	data(a, content, strlen(content));
}

static void zeros(struct arc *a, int blocks)
{
	arc_grow(a, 512 * (size_t)blocks);
}

/* A pax 'x' header with the given records (already formatted). */
static void pax(struct arc *a, char type, const char *records, size_t n)
{
	hdr(a, "PaxHeaders/x", type, n, NULL);
	data(a, records, n);
}

/* One pax record "%d key=value\n" whose length counts its own digits. */
static int rec_fmt(char *out, const char *k, const char *v)
{
	size_t body = 1 + strlen(k) + 1 + strlen(v) + 1, len = body + 1;

	while (len != body + (size_t)snprintf(NULL, 0, "%zu", len))
		len = body + (size_t)snprintf(NULL, 0, "%zu", len);
	return sprintf(out, "%zu %s=%s\n", len, k, v);
}

static void arc_free(struct arc *a)
{
	free(a->b);
	memset(a, 0, sizeof(*a));
}

/* ---- running the reader ---- */

struct tr {
	char s[8192];
	size_t n;
	enum agent_code code;
	char msg[AGENT_ERR_MESSAGE_MAX];
	int members;
};

static void tr_add(struct tr *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	t->n += (size_t)vsnprintf(t->s + t->n, sizeof(t->s) - t->n, fmt, ap);
	va_end(ap);
	assert_true(t->n < sizeof(t->s));
}

static const char kinds[] = { 'f', 'd', 'l', 'h' };

/* Returns true when the reader stopped (END or ERROR). */
static bool tr_event(struct tr *t, const struct tar_event *ev)
{
	const struct tar_member *m = ev->member;

	switch (ev->kind) {
	case TAR_EV_MEMBER:
		t->members++;
		tr_add(t, "%c:%s", kinds[m->kind], m->name);
		if (m->kind == TAR_FILE)
			tr_add(t, ":%llu", (unsigned long long)m->size);
		if (m->link)
			tr_add(t, "->%s", m->link);
		tr_add(t, "|");
		break;
	case TAR_EV_DATA:
		assert_true(ev->data_len > 0);
		tr_add(t, "%.*s", (int)ev->data_len, (const char *)ev->data);
		break;
	case TAR_EV_FILE_END:
		tr_add(t, "$|");
		break;
	case TAR_EV_SKIPPED:
		tr_add(t, "skip|");
		break;
	case TAR_EV_END:
		tr_add(t, "END");
		return true;
	case TAR_EV_ERROR:
		t->code = ev->err->code;
		snprintf(t->msg, sizeof(t->msg), "%s", ev->err->msg);
		tr_add(t, "E:%s", agent_code_name(ev->err->code));
		return true;
	default:
		break;
	}
	return false;
}

/* Feed `b` in `step`-byte pieces, then finish (unless the reader stopped). */
static void run_step(const uint8_t *b, size_t n, size_t step, struct tr *t)
{
	struct tar_reader r;
	struct tar_event ev;
	bool stop = false;

	memset(t, 0, sizeof(*t));
	tar_reader_init(&r, "/home/user/proj");
	for (size_t off = 0; off < n && !stop;) {
		size_t k = n - off < step ? n - off : step;
		size_t used = 0;

		for (;;) {
			used += tar_reader_feed(&r, b + off + used, k - used, &ev);
			if (ev.kind == TAR_EV_NEED_MORE)
				break;
			if (tr_event(t, &ev)) {
				stop = ev.kind == TAR_EV_ERROR;
				if (ev.kind == TAR_EV_END)
					continue; /* later bytes are ignored, still fed */
				break;
			}
		}
		assert_true(stop || used == k);
		off += k;
	}
	if (!stop) {
		tar_reader_finish(&r, &ev);
		if (ev.kind != TAR_EV_END || !strstr(t->s, "END"))
			tr_event(t, &ev);
	}
	tar_reader_free(&r);
}

/* The same transcript whatever the split; returns it in t. */
static void run(const struct arc *a, struct tr *t)
{
	static const size_t steps[] = { 1, 7, 511, 512, 513, 100000 };
	struct tr other;

	run_step(a->b, a->n, 100000, t);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		run_step(a->b, a->n, steps[i], &other);
		assert_string_equal(other.s, t->s);
	}
}

/* ---- tests ---- */

static void test_basic(void **state)
{
	struct arc a = { 0 };
	struct tr t;

	(void)state;
	hdr(&a, "src/", '5', 0, NULL);
	file(&a, "src/main.c", "int main(void) { return 0; }\n");
	file(&a, "Makefile", "");
	hdr(&a, "link", '2', 0, "src/main.c");
	hdr(&a, "hl", '1', 0, "src/main.c");
	hdr(&a, "old", '\0', 3, NULL);
	data(&a, "abc", 3);
	hdr(&a, "contig", '7', 2, NULL);
	data(&a, "xy", 2);
	zeros(&a, 2);
	/* Anything after the end-of-archive blocks is ignored. */
	memcpy(arc_grow(&a, 700), "garbage", 7);
	run(&a, &t);
	assert_string_equal(t.s,
			    "d:src|f:src/main.c:29|int main(void) { return 0; }\n$|"
			    "f:Makefile:0|$|l:link->src/main.c|h:hl->src/main.c|"
			    "f:old:3|abc$|f:contig:2|xy$|END");
	arc_free(&a);
}

static void test_member_fields(void **state)
{
	struct arc a = { 0 };
	struct tar_reader r;
	struct tar_event ev;
	uint8_t *h;

	(void)state;
	h = hdr(&a, "bin/tool", '0', 0, NULL);
	oct(h + 100, 8, 04755);
	oct(h + 136, 12, 1234567890);
	fix_checksum(h);
	tar_reader_init(&r, NULL);
	assert_int_equal(tar_reader_feed(&r, a.b, a.n, &ev), 512);
	assert_int_equal(ev.kind, TAR_EV_MEMBER);
	assert_int_equal(ev.member->mode, 04755);
	assert_int_equal(ev.member->mtime, 1234567890);
	assert_int_equal(ev.member->mtime_nsec, 0);
	assert_int_equal(tar_reader_feed(&r, NULL, 0, &ev), 0);
	assert_int_equal(ev.kind, TAR_EV_FILE_END);
	assert_int_equal(tar_reader_feed(&r, NULL, 0, &ev), 0);
	assert_int_equal(ev.kind, TAR_EV_NEED_MORE);
	tar_reader_finish(&r, &ev);
	assert_int_equal(ev.kind, TAR_EV_END);
	tar_reader_free(&r);
	arc_free(&a);
}

static void test_names(void **state)
{
	struct arc a = { 0 };
	struct tr t;
	uint8_t *h;

	(void)state;
	hdr(&a, "./", '5', 0, NULL); /* the target itself: skipped silently */
	hdr(&a, ".", '0', 0, NULL);  /* likewise, even as a file */
	file(&a, "./a//b/./c", "1");
	hdr(&a, "olddir/", '0', 0, NULL); /* v7: a file named with '/' is a directory */
	file(&a, "...", "2");             /* only `..` exactly is special */
	file(&a, "..a/b..", "3");
	h = hdr(&a, "name.txt", '0', 1, NULL); /* prefix + '/' + name */
	memcpy(h + 345, "some/prefix", 11);
	fix_checksum(h);
	data(&a, "4", 1);
	zeros(&a, 2);
	run(&a, &t);
	assert_string_equal(t.s,
			    "f:a/b/c:1|1$|d:olddir|f:...:1|2$|f:..a/b..:1|3$|"
			    "f:some/prefix/name.txt:1|4$|END");
	arc_free(&a);

	/* The GNU magic has no prefix field: those bytes are not a name. */
	h = hdr(&a, "gnu.txt", '0', 0, NULL);
	memcpy(h + 257, "ustar  ", 8);
	memcpy(h + 345, "junk", 4);
	fix_checksum(h);
	zeros(&a, 2);
	run(&a, &t);
	assert_string_equal(t.s, "f:gnu.txt:0|$|END");
	arc_free(&a);
}

static void test_dotdot(void **state)
{
	static const char *const bad[] = { "../../etc/passwd", "a/../../b",     "a/..", "..",
					   "./..//x",          "a/b/../../../c" };
	struct tr t;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct arc a = { 0 };

		file(&a, "first", "ok");
		file(&a, bad[i], "pwned");
		file(&a, "never", "x");
		zeros(&a, 2);
		run(&a, &t);
		assert_int_equal(t.code, AGENT_E_UNSAFE_PATH);
		/* Members before it were reported, nothing from it on. */
		assert_string_equal(t.s, "f:first:2|ok$|E:unsafe_path");
		arc_free(&a);
	}
	{
		struct arc a = { 0 };

		file(&a, "../../etc/passwd", "x");
		run(&a, &t);
		assert_string_equal(
			t.msg,
			"tar member '../../etc/passwd': '..' would leave /home/user/proj; the archive must hold relative paths inside the target");
		arc_free(&a);
	}
}

static void test_absolute(void **state)
{
	struct arc a = { 0 };
	struct tr t;

	(void)state;
	file(&a, "/etc/passwd", "x");
	run(&a, &t);
	assert_int_equal(t.code, AGENT_E_UNSAFE_PATH);
	assert_int_equal(t.members, 0);
	assert_string_equal(
		t.msg,
		"tar member '/etc/passwd': absolute name would leave /home/user/proj; the archive must hold relative paths inside the target");
	arc_free(&a);

	/* Through the ustar prefix too. */
	{
		uint8_t *h = hdr(&a, "passwd", '0', 0, NULL);

		memcpy(h + 345, "/etc", 4);
		fix_checksum(h);
	}
	run(&a, &t);
	assert_int_equal(t.code, AGENT_E_UNSAFE_PATH);
	arc_free(&a);
}

static void test_symlinks(void **state)
{
	static const struct {
		const char *name, *link;
		enum agent_code code;
	} cases[] = {
		{ "l", "x", AGENT_OK },
		{ "l", "./a/../b", AGENT_E_UNSAFE_PATH }, /* `..` after a name */
		{ "a/l", "../x", AGENT_OK },
		{ "a/b/l", "../../x/y", AGENT_OK },
		{ "a/l", "../../x", AGENT_E_UNSAFE_PATH },
		{ "l", "../x", AGENT_E_UNSAFE_PATH },
		{ "l", "..", AGENT_E_UNSAFE_PATH },
		{ "a/l", "..", AGENT_OK },
		{ "l", "/etc/passwd", AGENT_E_UNSAFE_PATH },
		{ "a/l", "x/../../y", AGENT_E_UNSAFE_PATH },
		{ "a/l", "./../x", AGENT_OK },
		{ "l", ".", AGENT_OK },
		{ "l", "", AGENT_E_BAD_ARCHIVE },
	};
	struct tr t;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct arc a = { 0 };

		hdr(&a, cases[i].name, '2', 0, cases[i].link);
		zeros(&a, 2);
		run(&a, &t);
		if (cases[i].code == AGENT_OK) {
			assert_int_equal(t.members, 1);
			assert_non_null(strstr(t.s, "END"));
		} else {
			assert_int_equal(t.members, 0);
			assert_int_equal(t.code, cases[i].code);
		}
		arc_free(&a);
	}
}

/* The classic: a symlink out of the target, then a file written through
 * it. The symlink is refused, so the file is never reported. */
static void test_symlink_then_write_through(void **state)
{
	struct arc a = { 0 };
	struct tr t;

	(void)state;
	hdr(&a, "evil", '2', 0, "../../../etc");
	file(&a, "evil/passwd", "root::0:0::/:/bin/sh\n");
	zeros(&a, 2);
	run(&a, &t);
	assert_string_equal(t.s, "E:unsafe_path");
	assert_string_equal(
		t.msg,
		"tar symlink 'evil' -> '../../../etc': '..' would leave /home/user/proj; the link must point inside the target");
	arc_free(&a);

	/* An in-target symlink, then `..` through it in a name: the name rule
	 * catches that before the extractor's openat2 would. */
	hdr(&a, "up", '2', 0, ".");
	file(&a, "up/../x", "x");
	zeros(&a, 2);
	run(&a, &t);
	assert_string_equal(t.s, "l:up->.|E:unsafe_path");
	arc_free(&a);
}

static void test_hardlinks(void **state)
{
	static const struct {
		const char *link;
		enum agent_code code;
	} cases[] = {
		{ "a/b", AGENT_OK },
		{ "./a//b", AGENT_OK },
		{ "../../etc/shadow", AGENT_E_UNSAFE_PATH },
		{ "/etc/shadow", AGENT_E_UNSAFE_PATH },
		{ "a/../../x", AGENT_E_UNSAFE_PATH },
		{ "./", AGENT_E_UNSAFE_PATH }, /* the target directory itself */
	};
	struct tr t;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct arc a = { 0 };

		hdr(&a, "h", '1', 0, cases[i].link);
		zeros(&a, 2);
		run(&a, &t);
		if (cases[i].code == AGENT_OK) {
			assert_string_equal(t.s, "h:h->a/b|END");
		} else {
			assert_int_equal(t.members, 0);
			assert_int_equal(t.code, cases[i].code);
		}
		arc_free(&a);
	}
}

static void test_bad_checksum(void **state)
{
	struct arc a = { 0 };
	struct tr t;
	uint8_t *h;

	(void)state;
	file(&a, "ok", "1");
	h = hdr(&a, "tampered", '0', 0, NULL);
	h[0] = 'T'; /* changed after the sum */
	zeros(&a, 2);
	run(&a, &t);
	assert_string_equal(t.s, "f:ok:1|1$|E:bad_archive");
	assert_string_equal(
		t.msg,
		"tar header at byte 1024: checksum mismatch; the archive is corrupt or not a tar file");
	arc_free(&a);

	/* A blank or garbage checksum field. */
	h = hdr(&a, "x", '0', 0, NULL);
	memset(h + 148, 0, 8);
	run(&a, &t);
	assert_int_equal(t.code, AGENT_E_BAD_ARCHIVE);
	arc_free(&a);
	h = hdr(&a, "x", '0', 0, NULL);
	memcpy(h + 148, "01234x7", 7);
	run(&a, &t);
	assert_int_equal(t.code, AGENT_E_BAD_ARCHIVE);
	arc_free(&a);

	/* Some old tars summed signed chars: accepted. */
	h = hdr(&a, "\xe9t\xe9", '0', 0, NULL);
	{
		int sum = 0;

		memset(h + 148, ' ', 8);
		for (int i = 0; i < 512; i++)
			sum += (signed char)h[i];
		snprintf((char *)h + 148, 8, "%06o", sum);
		h[155] = ' ';
	}
	zeros(&a, 2);
	run(&a, &t);
	assert_string_equal(t.s, "f:\xe9t\xe9:0|$|END");
	arc_free(&a);
}

static void test_not_ustar(void **state)
{
	struct arc a = { 0 };
	struct tr t;
	uint8_t *h;

	(void)state;
	h = hdr(&a, "x", '0', 0, NULL);
	memcpy(h + 257, "gzip\0", 6);
	fix_checksum(h);
	run(&a, &t);
	assert_string_equal(t.s, "E:bad_archive");
	arc_free(&a);

	/* Random bytes (a gzip stream, say): the checksum fails first. */
	arc_grow(&a, 512)[0] = 0x1f;
	a.b[1] = 0x8b;
	run(&a, &t);
	assert_string_equal(t.s, "E:bad_archive");
	arc_free(&a);
}

static void test_size_field(void **state)
{
	static const struct {
		const char field[12];
		size_t n;
		const char *want; /* NULL: bad_archive */
	} cases[] = {
		{ "00000000003", 12, "f:x:3|abc$|END" },
		{ "      3 \0\0\0", 12, "f:x:3|abc$|END" }, /* leading spaces, space-ended */
		{ "00000000003 ", 12, "f:x:3|abc$|END" },   /* no NUL at all */
		{ "0000000x003", 12, NULL },                /* garbage digit */
		{ "00000000009", 12, NULL },                /* 9 is not octal */
		{ "3 3", 12, NULL },                        /* digits after a terminator */
		{ "-3", 12, NULL },
	};
	struct tr t;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct arc a = { 0 };
		uint8_t *h = hdr(&a, "x", '0', 3, NULL);

		memset(h + 124, 0, 12);
		memcpy(h + 124, cases[i].field, cases[i].n);
		fix_checksum(h);
		data(&a, "abc", 3);
		zeros(&a, 2);
		run(&a, &t);
		if (cases[i].want) {
			assert_string_equal(t.s, cases[i].want);
		} else {
			assert_string_equal(t.s, "E:bad_archive");
			assert_non_null(strstr(t.msg, "size field"));
		}
		arc_free(&a);
	}
}

static void test_base256(void **state)
{
	struct arc a = { 0 };
	struct tr t;
	uint8_t *h;

	(void)state;
	/* Size 3 in base-256. */
	h = hdr(&a, "x", '0', 0, NULL);
	memset(h + 124, 0, 12);
	h[124] = 0x80;
	h[135] = 3;
	fix_checksum(h);
	data(&a, "abc", 3);
	zeros(&a, 2);
	run(&a, &t);
	assert_string_equal(t.s, "f:x:3|abc$|END");
	arc_free(&a);

	/* A negative size. */
	h = hdr(&a, "x", '0', 0, NULL);
	memset(h + 124, 0xff, 12);
	fix_checksum(h);
	run(&a, &t);
	assert_string_equal(t.s, "E:bad_archive");
	arc_free(&a);

	/* A size beyond int64. */
	h = hdr(&a, "x", '0', 0, NULL);
	memset(h + 124, 0xff, 12);
	h[124] = 0x80;
	fix_checksum(h);
	run(&a, &t);
	assert_string_equal(t.s, "E:bad_archive");
	arc_free(&a);
}

static void test_num_parse(void **state)
{
	int64_t v;

	(void)state;
	assert_int_equal(tar_num_parse((const uint8_t *)"0000644\0", 8, false, &v), 0);
	assert_int_equal(v, 0644);
	assert_int_equal(tar_num_parse((const uint8_t *)"\0\0\0\0\0\0\0\0", 8, false, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(tar_num_parse((const uint8_t *)"        ", 8, false, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(tar_num_parse((const uint8_t *)"\0"
							"123456",
				       7, false, &v),
			 -EINVAL);
	assert_int_equal(tar_num_parse((const uint8_t *)"8", 1, false, &v), -EINVAL);
	assert_int_equal(tar_num_parse((const uint8_t *)"", 0, false, &v), -EINVAL);
	/* 12 octal digits with no terminator still fit. */
	assert_int_equal(tar_num_parse((const uint8_t *)"777777777777", 12, false, &v), 0);
	assert_int_equal(v, 0777777777777LL);
	/* 23 digits overflow int64. */
	assert_int_equal(tar_num_parse((const uint8_t *)"77777777777777777777777", 23, false, &v),
			 -EINVAL);
	{
		/* Base-256: -1 and -2 (negative mtimes), and the positive max. */
		uint8_t m1[12], m2[12], big[12];

		memset(m1, 0xff, 12);
		memset(m2, 0xff, 12);
		m2[11] = 0xfe;
		assert_int_equal(tar_num_parse(m1, 12, true, &v), 0);
		assert_int_equal(v, -1);
		assert_int_equal(tar_num_parse(m2, 12, true, &v), 0);
		assert_int_equal(v, -2);
		assert_int_equal(tar_num_parse(m1, 12, false, &v), -EINVAL);
		memset(big, 0, 12);
		big[0] = 0x80;
		big[4] = 0x7f;
		memset(big + 5, 0xff, 7);
		assert_int_equal(tar_num_parse(big, 12, false, &v), 0);
		assert_int_equal(v, INT64_MAX);
		big[3] = 1;
		assert_int_equal(tar_num_parse(big, 12, false, &v), -EINVAL);
	}
}

/* The size says more than the archive holds: cut off, bad_archive. */
static void test_size_beyond_end(void **state)
{
	struct arc a = { 0 };
	struct tr t;

	(void)state;
	file(&a, "ok", "1");
	hdr(&a, "big", '0', 1000000, NULL);
	data(&a, "only this", 9);
	run(&a, &t);
	assert_int_equal(t.code, AGENT_E_BAD_ARCHIVE);
	/* The padding is read as data (NULs print as nothing here). */
	assert_string_equal(t.s, "f:ok:1|1$|f:big:1000000|only thisE:bad_archive");
	assert_non_null(strstr(t.msg, "cut off inside member 'big'"));
	arc_free(&a);
}

static void test_truncated(void **state)
{
	struct arc a = { 0 };
	struct tr t;

	(void)state;
	/* Inside a header block. */
	file(&a, "ok", "1");
	hdr(&a, "next", '0', 0, NULL);
	a.n -= 300;
	run(&a, &t);
	assert_string_equal(t.s, "f:ok:1|1$|E:bad_archive");
	assert_string_equal(
		t.msg,
		"archive cut off inside a header block (212 of 512 bytes at byte 1024); send the whole archive");
	arc_free(&a);

	/* Inside a member's data. */
	file(&a, "cut", "0123456789");
	a.n = 512 + 4;
	run(&a, &t);
	assert_string_equal(t.s, "f:cut:10|0123E:bad_archive");
	arc_free(&a);

	/* Inside its padding: the data is complete, the member is not. */
	file(&a, "cut", "0123456789");
	a.n = 512 + 100;
	run(&a, &t);
	assert_string_equal(t.s, "f:cut:10|0123456789$|E:bad_archive");
	arc_free(&a);

	/* At a member boundary without the zero blocks: fine. */
	file(&a, "whole", "abc");
	run(&a, &t);
	assert_string_equal(t.s, "f:whole:3|abc$|END");
	arc_free(&a);

	/* One zero block, then the end: fine. */
	file(&a, "whole", "abc");
	zeros(&a, 1);
	run(&a, &t);
	assert_string_equal(t.s, "f:whole:3|abc$|END");
	arc_free(&a);

	/* Nothing at all: an empty archive. */
	run(&a, &t);
	assert_string_equal(t.s, "END");
}

/* A lone zero block followed by a header is not an end marker. */
static void test_lone_zero_block(void **state)
{
	struct arc a = { 0 };
	struct tr t;

	(void)state;
	file(&a, "a", "1");
	zeros(&a, 1);
	file(&a, "b", "2");
	run(&a, &t);
	assert_string_equal(t.s, "f:a:1|1$|E:bad_archive");
	arc_free(&a);
}

static void test_dir_link_with_size(void **state)
{
	static const char types[] = { '5', '2', '1' };
	struct tr t;

	(void)state;
	for (size_t i = 0; i < sizeof(types); i++) {
		struct arc a = { 0 };

		hdr(&a, "x", types[i], 512, "y");
		zeros(&a, 3);
		run(&a, &t);
		assert_string_equal(t.s, "E:bad_archive");
		arc_free(&a);
	}
}

static void test_skipped_types(void **state)
{
	struct arc a = { 0 };
	struct tr t;

	(void)state;
	hdr(&a, "dev/null", '3', 0, NULL);
	hdr(&a, "disk", '4', 0, NULL);
	hdr(&a, "fifo", '6', 99999, NULL); /* no data follows a FIFO, whatever size says */
	hdr(&a, "sparse", 'S', 600, NULL);
	data(&a, "Sxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
	     77);
	arc_grow(&a, 512); /* the rest of the 600 bytes, padded */
	hdr(&a, "vendor", 'Z', 5, NULL);
	data(&a, "zzzzz", 5);
	hdr(&a, "../outside-but-skipped", '6', 0, NULL);
	file(&a, "after", "ok");
	zeros(&a, 2);
	run(&a, &t);
	assert_string_equal(t.s, "skip|skip|skip|skip|skip|skip|f:after:2|ok$|END");
	arc_free(&a);
}

static void test_gnu_long_names(void **state)
{
	struct arc a = { 0 };
	struct tr t;
	char longname[301], longlink[201], want[1024];

	(void)state;
	memset(longname, 'n', 300);
	longname[300] = '\0';
	memcpy(longname + 100, "/", 1);
	memset(longlink, 'k', 200);
	longlink[200] = '\0';

	hdr(&a, "././@LongLink", 'L', 301, NULL);
	data(&a, longname, 301);
	file(&a, "truncated-in-header", "x");
	hdr(&a, "././@LongLink", 'K', 201, NULL);
	data(&a, longlink, 201);
	hdr(&a, "ln", '2', 0, "truncated");
	zeros(&a, 2);
	run(&a, &t);
	snprintf(want, sizeof(want), "f:%s:1|x$|l:ln->%s|END", longname, longlink);
	assert_string_equal(t.s, want);
	arc_free(&a);

	/* An empty long name, and one above the limit. */
	hdr(&a, "././@LongLink", 'L', 0, NULL);
	file(&a, "x", "");
	run(&a, &t);
	assert_string_equal(t.s, "E:bad_archive");
	arc_free(&a);
	hdr(&a, "././@LongLink", 'L', 65537, NULL);
	run(&a, &t);
	assert_string_equal(t.s, "E:bad_archive");
	arc_free(&a);

	/* A long name that climbs out is caught like any name. */
	hdr(&a, "././@LongLink", 'L', 12, NULL);
	data(&a, "a/../../etc", 12);
	file(&a, "harmless", "x");
	run(&a, &t);
	assert_string_equal(t.s, "E:unsafe_path");
	arc_free(&a);
}

/* A name read back for extraction: each component at most NAME_MAX bytes,
 * the whole at most AGENT_PATH_MAX. A pax or GNU long name is otherwise
 * bounded only by TAR_EXT_MAX, and an extractor that copies a component
 * into a NAME_MAX- or PATH_MAX-sized buffer would overrun it. */
static void long_name_refused(const char *name, bool gnu)
{
	struct arc a = { 0 };
	struct tr t;
	size_t n = strlen(name);

	if (gnu) {
		hdr(&a, "././@LongLink", 'L', n + 1, NULL);
		data(&a, name, n + 1);
	} else {
		char *rec = malloc(n + 32);

		assert_non_null(rec);
		pax(&a, 'x', rec, (size_t)rec_fmt(rec, "path", name));
		free(rec);
	}
	file(&a, "short", "x");
	zeros(&a, 2);
	run(&a, &t);
	assert_string_equal(t.s, "E:bad_archive");
	assert_non_null(strstr(t.msg, "name is too long"));
	assert_non_null(strstr(t.msg, "at most 255 bytes per component and 4095 in all"));
	arc_free(&a);
}

static void test_name_limits(void **state)
{
	static const size_t comps[] = { NAME_MAX + 1, 5000 };
	char *name = malloc(8192);
	struct arc a = { 0 };
	struct tr t;
	size_t n;

	(void)state;
	assert_non_null(name);
	for (size_t i = 0; i < 2; i++) {
		/* One long component, alone and below a directory. */
		memset(name, 'c', comps[i]);
		name[comps[i]] = '\0';
		long_name_refused(name, false);
		long_name_refused(name, true);
		n = (size_t)sprintf(name, "dir/");
		memset(name + n, 'c', comps[i]);
		name[n + comps[i]] = '\0';
		long_name_refused(name, false);
		long_name_refused(name, true);
	}
	/* Short components, too many bytes in all. */
	for (n = 0; n < 4200; n += 10)
		memcpy(name + n, "ccccccccc/", 10);
	name[n] = '\0';
	long_name_refused(name, false);
	long_name_refused(name, true);
	/* A hard link's target is a name too. */
	memset(name, 'c', NAME_MAX + 1);
	name[NAME_MAX + 1] = '\0';
	hdr(&a, "././@LongLink", 'K', NAME_MAX + 2, NULL);
	data(&a, name, NAME_MAX + 2);
	hdr(&a, "hl", '1', 0, "x");
	zeros(&a, 2);
	run(&a, &t);
	assert_string_equal(t.s, "E:bad_archive");
	arc_free(&a);
	/* At the limits exactly: accepted. */
	memset(name, 'c', NAME_MAX);
	name[NAME_MAX] = '\0';
	hdr(&a, "././@LongLink", 'L', NAME_MAX + 1, NULL);
	data(&a, name, NAME_MAX + 1);
	file(&a, "short", "x");
	zeros(&a, 2);
	run(&a, &t);
	assert_int_equal(t.members, 1);
	assert_non_null(strstr(t.s, "|END"));
	arc_free(&a);
	free(name);
}

static void test_pax(void **state)
{
	struct arc a = { 0 };
	struct tr t;
	struct tar_reader r;
	struct tar_event ev;
	char rec[2048], want[2048];
	char longname[400];
	int n;

	(void)state;
	memset(longname, 'p', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	longname[50] = '/';
	longname[250] = '/'; /* components stay within NAME_MAX */
	/* path, linkpath, size, mtime, and keys that are ignored. */
	n = rec_fmt(rec, "path", longname);
	n += rec_fmt(rec + n, "mtime", "1700000000.123456789");
	n += rec_fmt(rec + n, "uid", "1000");
	n += rec_fmt(rec + n, "SCHILY.xattr.user.x", "yz");
	n += rec_fmt(rec + n, "size", "5");
	pax(&a, 'x', rec, (size_t)n);
	hdr(&a, "short", '0', 0, NULL); /* the pax size (5) wins */
	data(&a, "12345", 5);
	n = snprintf(rec, sizeof(rec), "22 linkpath=a/b/c/d/e\n");
	pax(&a, 'x', rec, (size_t)n);
	hdr(&a, "lnk", '2', 0, "ignored");
	zeros(&a, 2);
	run(&a, &t);
	snprintf(want, sizeof(want), "f:%s:5|12345$|l:lnk->a/b/c/d/e|END", longname);
	assert_string_equal(t.s, want);

	/* The pax mtime with its fraction. */
	tar_reader_init(&r, NULL);
	tar_reader_feed(&r, a.b, a.n, &ev);
	assert_int_equal(ev.kind, TAR_EV_MEMBER);
	assert_int_equal(ev.member->mtime, 1700000000);
	assert_int_equal(ev.member->mtime_nsec, 123456789);
	tar_reader_free(&r);
	arc_free(&a);

	/* pax wins over a GNU long name, in either order; 'g' is ignored;
	 * overrides apply to one member only. */
	n = snprintf(rec, sizeof(rec), "13 path=paxn\n");
	hdr(&a, "././@LongLink", 'L', 5, NULL);
	data(&a, "gnun", 5);
	pax(&a, 'x', rec, (size_t)n);
	file(&a, "hdrname", "");
	pax(&a, 'g', "19 path=globalname\n", 19);
	pax(&a, 'x', rec, (size_t)n);
	hdr(&a, "././@LongLink", 'L', 5, NULL);
	data(&a, "gnun", 5);
	file(&a, "hdrname", "");
	file(&a, "plain", "");
	/* A pax mtime before the epoch. */
	pax(&a, 'x', "15 mtime=-1.25\n", 15);
	file(&a, "old", "");
	zeros(&a, 2);
	run(&a, &t);
	assert_string_equal(t.s, "f:paxn:0|$|f:paxn:0|$|f:plain:0|$|f:old:0|$|END");
	tar_reader_init(&r, NULL);
	{
		size_t off = 0;

		for (;;) {
			off += tar_reader_feed(&r, a.b + off, a.n - off, &ev);
			if (ev.kind == TAR_EV_MEMBER && strcmp(ev.member->name, "old") == 0)
				break;
			assert_true(ev.kind != TAR_EV_ERROR && ev.kind != TAR_EV_NEED_MORE);
		}
		assert_int_equal(ev.member->mtime, -2);
		assert_int_equal(ev.member->mtime_nsec, 750000000);
	}
	tar_reader_free(&r);
	arc_free(&a);

	/* An empty pax value deletes the override. */
	pax(&a, 'x', "13 path=paxn\n8 path=\n", 21);
	file(&a, "fromheader", "");
	zeros(&a, 2);
	run(&a, &t);
	assert_string_equal(t.s, "f:fromheader:0|$|END");
	arc_free(&a);

	/* pax GNU sparse: the data is a map, not the file: skipped. */
	pax(&a, 'x', "22 GNU.sparse.major=1\n", 22);
	hdr(&a, "sparse", '0', 3, NULL);
	data(&a, "map", 3);
	file(&a, "after", "ok");
	zeros(&a, 2);
	run(&a, &t);
	assert_string_equal(t.s, "skip|f:after:2|ok$|END");
	arc_free(&a);
}

static void test_pax_hostile(void **state)
{
	static const struct {
		const char *rec;
		size_t n;
	} bad[] = {
		{ "99 path=x\n", 10 },         /* length beyond the data */
		{ "10 path=x\n", 10 },         /* well-formed: the control case */
		{ "8 pathx\n", 8 },            /* no '=' */
		{ "x path=a\n", 9 },           /* no length */
		{ "5 =a\n", 5 },               /* empty key */
		{ "000005 k=\n", 10 },         /* length shorter than its own digits */
		{ "8 size=\n9 size=x\n", 17 }, /* size not decimal */
		{ "14 size=-5000\n", 14 },
		{ "13 mtime=1.x\n", 13 },
		{ "12 path=a\0b\n", 12 },    /* NUL in a name */
		{ "12 path=abc\nJUNK", 16 }, /* trailing bytes that are no record */
	};
	struct tr t;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct arc a = { 0 };

		pax(&a, 'x', bad[i].rec, bad[i].n);
		file(&a, "member", "");
		zeros(&a, 2);
		run(&a, &t);
		if (i == 1) {
			assert_string_equal(t.s, "f:x:0|$|END");
		} else {
			assert_string_equal(t.s, "E:bad_archive");
		}
		arc_free(&a);
	}
}

static void test_pax_size_limit(void **state)
{
	struct arc a = { 0 };
	struct tr t;
	char *rec = malloc(65537 + 1);
	char want[64];

	(void)state;
	assert_non_null(rec);
	/* Exactly 65 536 bytes: one comment record, accepted. */
	memset(rec, 'c', 65536);
	memcpy(rec, "65536 comment=", 14);
	rec[65535] = '\n';
	pax(&a, 'x', rec, 65536);
	file(&a, "m", "");
	zeros(&a, 2);
	run(&a, &t);
	assert_string_equal(t.s, "f:m:0|$|END");
	arc_free(&a);

	/* One more byte: refused before any of it is buffered. */
	memcpy(rec, "65537 comment=", 14);
	rec[65535] = 'c';
	rec[65536] = '\n';
	pax(&a, 'x', rec, 65537);
	file(&a, "m", "");
	run(&a, &t);
	assert_string_equal(t.s, "E:bad_archive");
	snprintf(want, sizeof(want), "holds 65537 bytes; at most 65536");
	assert_non_null(strstr(t.msg, want));
	arc_free(&a);

	/* A huge size field on a pax header. */
	hdr(&a, "PaxHeaders/x", 'x', 077777777777ULL, NULL);
	run(&a, &t);
	assert_string_equal(t.s, "E:bad_archive");
	arc_free(&a);
	free(rec);
}

static void test_pax_without_member(void **state)
{
	struct arc a = { 0 };
	struct tr t;

	(void)state;
	pax(&a, 'x', "13 path=lost\n", 13);
	zeros(&a, 2);
	run(&a, &t);
	assert_string_equal(t.s, "E:bad_archive");
	arc_free(&a);

	pax(&a, 'x', "13 path=lost\n", 13);
	run(&a, &t);
	assert_string_equal(t.s, "E:bad_archive");
	assert_non_null(strstr(t.msg, "extended header without its member"));
	arc_free(&a);
}

/* Errors are sticky: feeding more after an error reports it again and
 * consumes nothing. */
static void test_sticky_error(void **state)
{
	struct arc a = { 0 };
	struct tar_reader r;
	struct tar_event ev;

	(void)state;
	file(&a, "/abs", "x");
	file(&a, "fine", "y");
	tar_reader_init(&r, NULL);
	assert_int_equal(tar_reader_feed(&r, a.b, a.n, &ev), 512);
	assert_int_equal(ev.kind, TAR_EV_ERROR);
	assert_int_equal(tar_reader_feed(&r, a.b + 512, a.n - 512, &ev), 0);
	assert_int_equal(ev.kind, TAR_EV_ERROR);
	tar_reader_finish(&r, &ev);
	assert_int_equal(ev.kind, TAR_EV_ERROR);
	assert_int_equal(ev.err->code, AGENT_E_UNSAFE_PATH);
	tar_reader_free(&r);
	arc_free(&a);
}

static void test_normalize(void **state)
{
	char out[64];
	size_t n;
	bool dir;
	struct agent_err err;

	(void)state;
	assert_int_equal(tar_name_normalize("a/./b//c/", 9, out, &n, &dir, NULL, &err), AGENT_OK);
	assert_string_equal(out, "a/b/c");
	assert_true(dir);
	assert_int_equal(tar_name_normalize(".//./", 5, out, &n, &dir, NULL, &err), AGENT_OK);
	assert_int_equal(n, 0);
	assert_int_equal(tar_name_normalize("", 0, out, &n, &dir, NULL, &err), AGENT_OK);
	assert_int_equal(n, 0);
	assert_int_equal(tar_name_normalize("a\0b", 3, out, &n, &dir, NULL, &err),
			 AGENT_E_BAD_ARCHIVE);
	assert_int_equal(tar_name_normalize("//x", 3, out, &n, &dir, NULL, &err),
			 AGENT_E_UNSAFE_PATH);
	assert_int_equal(tar_name_normalize("x/..", 4, out, &n, &dir, NULL, &err),
			 AGENT_E_UNSAFE_PATH);
	assert_string_equal(
		err.msg,
		"tar member 'x/..': '..' would leave the target directory; the archive must hold relative paths inside the target");
}

/* ---- producer ---- */

static void read_back(const uint8_t *b, size_t n, struct tar_member *out, char *name, char *link)
{
	struct tar_reader r;
	struct tar_event ev;
	size_t used;

	tar_reader_init(&r, NULL);
	used = tar_reader_feed(&r, b, n, &ev);
	assert_int_equal(used, n);
	assert_int_equal(ev.kind, TAR_EV_MEMBER);
	*out = *ev.member;
	strcpy(name, ev.member->name);
	strcpy(link, ev.member->link ? ev.member->link : "");
	tar_reader_free(&r);
}

static void test_producer_roundtrip(void **state)
{
	static uint8_t buf[TAR_HEADER_BUILD_MAX];
	static char name[AGENT_PATH_MAX + 2], link[AGENT_PATH_MAX + 1], gotn[8192], gotl[8192];
	static const size_t lens[] = { 1, 99, 100, 101, 150, 255, 256, 300, 4095 };
	struct tar_member m;

	(void)state;
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		size_t len = lens[i];
		struct tar_out o = {
			.type = '0', .mode = 0644, .uid = 1000, .gid = 1000, .mtime = 1700000000
		};
		ssize_t w;

		/* Components of 9 bytes, so the ustar split has slashes to use. */
		for (size_t k = 0; k < len; k++)
			name[k] = (k % 10 == 9) ? '/' : (char)('a' + k % 26);
		if (name[len - 1] == '/')
			name[len - 1] = 'z';
		name[len] = '\0';
		o.name = name;
		o.name_len = len;
		w = tar_header_build(&o, buf, sizeof(buf));
		assert_true(w > 0 && w % 512 == 0);
		/* Up to 100 bytes, or 256 with a split: one block, no pax. */
		if (len <= 100)
			assert_int_equal(w, 512);
		if (len > 256)
			assert_true(w > 1024);
		read_back(buf, (size_t)w, &m, gotn, gotl);
		assert_string_equal(gotn, name);
		assert_int_equal(m.kind, TAR_FILE);
		assert_int_equal(m.mode, 0644);
		assert_int_equal(m.mtime, 1700000000);
	}

	/* A name with no slash where ustar could split it: pax. */
	{
		struct tar_out o = { .type = '5', .mode = 0755 };
		ssize_t w;

		memset(name, 'd', 200);
		name[200] = '/';
		name[201] = '\0';
		o.name = name;
		o.name_len = 201;
		w = tar_header_build(&o, buf, sizeof(buf));
		assert_int_equal(w, 512 * 3);
		read_back(buf, (size_t)w, &m, gotn, gotl);
		assert_int_equal(m.kind, TAR_DIR);
		name[200] = '\0';
		assert_string_equal(gotn, name);
	}

	/* A long symlink target, a huge size, big ids, times outside octal. */
	{
		struct tar_out o = { .name = "l",
				     .name_len = 1,
				     .type = '2',
				     .mode = 0777,
				     .uid = 4000000000u,
				     .gid = 3000000,
				     .mtime = -5 };
		ssize_t w;

		memset(link, 'x', 4095);
		link[4095] = '\0';
		o.link = link;
		o.link_len = 4095;
		w = tar_header_build(&o, buf, sizeof(buf));
		assert_true(w > 4096);
		read_back(buf, (size_t)w, &m, gotn, gotl);
		assert_string_equal(gotl, link);
		assert_int_equal(m.mtime, -5);

		o.type = '0';
		o.link = NULL;
		o.link_len = 0;
		o.size = 9ULL << 30; /* 9 GiB: past the 11-digit octal field */
		o.mtime = 1LL << 40;
		w = tar_header_build(&o, buf, sizeof(buf));
		assert_int_equal(w, 1536);
		/* The pax record carries the size; the header's base-256 field
		 * agrees, for readers without pax. */
		assert_non_null(memmem(buf + 512, 512, "size=9663676416\n", 16));
		assert_int_equal(buf[1024 + 124], 0x80);
		{
			struct tar_reader r;
			struct tar_event ev;

			tar_reader_init(&r, NULL);
			tar_reader_feed(&r, buf, (size_t)w, &ev);
			assert_int_equal(ev.kind, TAR_EV_MEMBER);
			assert_int_equal(ev.member->size, 9ULL << 30);
			assert_int_equal(ev.member->mtime, 1LL << 40);
			tar_reader_free(&r);
		}
	}

	/* Limits. */
	{
		struct tar_out o = { .name = name, .type = '0' };

		memset(name, 'a', AGENT_PATH_MAX + 1);
		o.name_len = AGENT_PATH_MAX + 2;
		assert_int_equal(tar_header_build(&o, buf, sizeof(buf)), -ENAMETOOLONG);
		o.name_len = 0;
		assert_int_equal(tar_header_build(&o, buf, sizeof(buf)), -EINVAL);
		o.name_len = 5;
		assert_int_equal(tar_header_build(&o, buf, 511), -ENOSPC);
	}
}

/* The exact bytes of a simple header: what other tars expect. */
static void test_producer_bytes(void **state)
{
	uint8_t buf[TAR_HEADER_BUILD_MAX], want[512];
	struct tar_out o = { .name = "src/main.c",
			     .name_len = 10,
			     .type = '0',
			     .size = 12,
			     .mode = 0100644,
			     .uid = 1000,
			     .gid = 1000,
			     .mtime = 1732300000 };
	unsigned sum = 0;

	(void)state;
	assert_int_equal(tar_header_build(&o, buf, sizeof(buf)), 512);
	memset(want, 0, sizeof(want));
	memcpy(want, "src/main.c", 10);
	memcpy(want + 100, "0000644", 8);
	memcpy(want + 108, "0001750", 8);
	memcpy(want + 116, "0001750", 8);
	memcpy(want + 124, "00000000014", 12);
	memcpy(want + 136, "14720146340", 12);
	want[156] = '0';
	memcpy(want + 257,
	       "ustar\0"
	       "00",
	       8);
	memcpy(want + 329, "0000000", 8);
	memcpy(want + 337, "0000000", 8);
	memset(want + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += want[i];
	snprintf((char *)want + 148, 8, "%06o", sum);
	want[155] = ' ';
	assert_memory_equal(buf, want, 512);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_member_fields),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_dotdot),
		cmocka_unit_test(test_absolute),
		cmocka_unit_test(test_symlinks),
		cmocka_unit_test(test_symlink_then_write_through),
		cmocka_unit_test(test_hardlinks),
		cmocka_unit_test(test_bad_checksum),
		cmocka_unit_test(test_not_ustar),
		cmocka_unit_test(test_size_field),
		cmocka_unit_test(test_base256),
		cmocka_unit_test(test_num_parse),
		cmocka_unit_test(test_size_beyond_end),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_lone_zero_block),
		cmocka_unit_test(test_dir_link_with_size),
		cmocka_unit_test(test_skipped_types),
		cmocka_unit_test(test_gnu_long_names),
		cmocka_unit_test(test_name_limits),
		cmocka_unit_test(test_pax),
		cmocka_unit_test(test_pax_hostile),
		cmocka_unit_test(test_pax_size_limit),
		cmocka_unit_test(test_pax_without_member),
		cmocka_unit_test(test_sticky_error),
		cmocka_unit_test(test_normalize),
		cmocka_unit_test(test_producer_roundtrip),
		cmocka_unit_test(test_producer_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
