/*
 * A template build's context (api/kilnd/images/build_context.c):
 * finding the build file, hostile archives refused naming the member,
 * COPY digests, and the ustar stream a COPY sends to the guest.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "api/kilnd/images/build_context.h"
#include "api/proto/gz_stream.h"

/* the cap on inflated bytes (--max-image) the tests pass */
#define CTX_MAX (64ull << 20)

struct arc {
	uint8_t *p;
	size_t n, cap;
};

static void add(struct arc *a, const void *p, size_t n)
{
	if (a->n + n > a->cap) {
		a->cap = (a->n + n) * 2 + 4096;
		a->p = realloc(a->p, a->cap);
		assert_non_null(a->p);
	}
	memcpy(a->p + a->n, p, n);
	a->n += n;
}

/* One member: type '0' file (data), '5' dir, '2' symlink (data: target), '1' hard link. */
static void member(struct arc *a, const char *name, char type, const char *data)
{
	uint8_t hdr[TAR_HEADER_BUILD_MAX], zero[TAR_BLOCK] = { 0 };
	struct tar_out o = { .name = name,
			     .name_len = strlen(name),
			     .type = type == '1' ? '0' : type,
			     .mode = 0644 };
	ssize_t n;

	if (type == '2') {
		o.link = data;
		o.link_len = strlen(data);
	} else if (type == '0') {
		o.size = strlen(data);
	}
	n = tar_header_build(&o, hdr, sizeof(hdr));
	assert_true(n >= TAR_BLOCK);
	if (type == '1') {
		/* a hard link: typeflag '1', linkname, fixed checksum */
		unsigned sum = 0;
		uint8_t *h = hdr + n - TAR_BLOCK;

		h[156] = '1';
		snprintf((char *)h + 157, 100, "%s", data);
		memset(h + 148, ' ', 8);
		for (int i = 0; i < TAR_BLOCK; i++)
			sum += h[i];
		snprintf((char *)h + 148, 8, "%06o", sum);
	}
	add(a, hdr, (size_t)n);
	if (type == '0') {
		add(a, data, strlen(data));
		add(a, zero, tar_pad(strlen(data)));
	}
}

static int gz_out(void *arg, const void *p, size_t n)
{
	return write(*(int *)arg, p, n) == (ssize_t)n ? 0 : -5;
}

/* The archive, ended and gzipped, in a memfd. */
static int finish(struct arc *a)
{
	uint8_t zero[2 * TAR_BLOCK] = { 0 };
	struct gz_stream g;
	int fd = memfd_create("ctx", 0);

	add(a, zero, sizeof(zero));
	assert_true(fd >= 0);
	assert_int_equal(gz_enc_init(&g, 1), 0);
	assert_int_equal(gz_enc_write(&g, a->p, a->n, gz_out, &fd), 0);
	assert_int_equal(gz_enc_finish(&g, gz_out, &fd), 0);
	gz_end(&g);
	free(a->p);
	memset(a, 0, sizeof(*a));
	return fd;
}

static int sample(void)
{
	struct arc a = { 0 };

	member(&a, "Dockerfile", '0', "FROM other\n");
	member(&a, "Kilnfile", '0',
	       "FROM minimal\nCOPY app/ /srv/\nCOPY app/a.txt /etc/b.txt\nCOPY . /all/\n");
	member(&a, "app/", '5', "");
	member(&a, "app/a.txt", '0', "alpha");
	member(&a, "app/sub/", '5', "");
	member(&a, "app/sub/c.txt", '0', "gamma");
	member(&a, "app/link", '2', "a.txt");
	member(&a, "build/other.kf", '0', "FROM x\n");
	return finish(&a);
}

static void scan_bad(int fd, const char *file, enum api_code code, const char *part)
{
	struct build_context c;
	struct api_err e = { 0 };

	assert_int_equal(build_context_scan(fd, file, CTX_MAX, &c, &e), -1);
	assert_int_equal(e.code, code);
	if (!strstr(e.msg, part))
		fail_msg("message '%s' does not name '%s'", e.msg, part);
	assert_null(c.m);
	close(fd);
}

static void test_build_file(void **state)
{
	struct build_context c;
	struct api_err e = { 0 };
	int fd = sample();

	(void)state;
	/* Kilnfile wins over Dockerfile */
	assert_int_equal(build_context_scan(fd, NULL, CTX_MAX, &c, &e), 0);
	assert_int_equal(c.n, 8);
	assert_true(strncmp(c.buildfile, "FROM minimal\n", 13) == 0);
	build_context_free(&c);
	assert_int_equal(build_context_scan(fd, "./build/other.kf", CTX_MAX, &c, &e), 0);
	assert_string_equal(c.buildfile, "FROM x\n");
	build_context_free(&c);
	scan_bad(fd, "nope", API_E_BAD_FIELD, "no regular file 'nope'");
	{
		struct arc a = { 0 };

		member(&a, "x.txt", '0', "x");
		scan_bad(finish(&a), NULL, API_E_BAD_FIELD, "no Kilnfile or Dockerfile");
	}
}

static void test_hostile(void **state)
{
	struct arc a = { 0 };
	int fd;

	(void)state;
	member(&a, "Kilnfile", '0', "FROM m\n");
	member(&a, "../escape", '0', "x");
	scan_bad(finish(&a), NULL, API_E_BAD_ARCHIVE, "escape");
	member(&a, "/etc/passwd", '0', "x");
	scan_bad(finish(&a), NULL, API_E_BAD_ARCHIVE, "/etc/passwd");
	member(&a, "d/", '5', "");
	member(&a, "d/up", '2', "../../..");
	scan_bad(finish(&a), NULL, API_E_BAD_ARCHIVE, "d/up");
	/* not gzip, and a cut archive */
	fd = memfd_create("ctx", 0);
	assert_int_equal(write(fd, "plain tar?", 10), 10);
	scan_bad(fd, NULL, API_E_BAD_ARCHIVE, "not a whole tar.gz");
	{
		uint8_t gz[] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3 };

		fd = memfd_create("ctx", 0);
		assert_int_equal(write(fd, gz, sizeof(gz)), (ssize_t)sizeof(gz));
		scan_bad(fd, NULL, API_E_BAD_ARCHIVE, "tar.gz");
	}
	/* an oversize build file */
	{
		char *big = malloc(BUILDFILE_MAX + 2);

		memset(big, 'x', BUILDFILE_MAX + 1);
		big[BUILDFILE_MAX + 1] = 0;
		member(&a, "Kilnfile", '0', big);
		free(big);
		scan_bad(finish(&a), NULL, API_E_BAD_FIELD, "larger than");
	}
}

static const struct bf_step *copy_step(struct buildfile *bf, const char *text, size_t i)
{
	struct api_err e = { 0 };

	if (buildfile_parse(text, strlen(text), bf, &e))
		fail_msg("%s", e.msg);
	return &bf->steps[i];
}

/* The names (and kinds) of a COPY's ustar stream, space-separated. */
static void copied(int ctx_fd, const struct build_context *c, const struct bf_step *s,
		   const char *want_target, const char *want)
{
	char target[256], got[1024] = "";
	int out = memfd_create("copy", 0);
	struct api_err e = { 0 };
	struct tar_reader r;
	struct tar_event ev;
	uint8_t buf[1 << 16];
	ssize_t n;

	assert_int_equal(build_context_copy_tar(ctx_fd, c, s, out, target, sizeof(target), &e), 0);
	assert_string_equal(target, want_target);
	n = pread(out, buf, sizeof(buf), 0);
	assert_true(n > 0);
	tar_reader_init(&r, "t");
	for (size_t off = 0;;) {
		size_t used = tar_reader_feed(&r, buf + off, (size_t)n - off, &ev);

		off += used;
		if (ev.kind == TAR_EV_MEMBER) {
			strcat(got, ev.member->name);
			strcat(got, ev.member->kind == TAR_DIR ? "/ " : " ");
		}
		assert_int_not_equal(ev.kind, TAR_EV_ERROR);
		if (ev.kind == TAR_EV_END || (ev.kind == TAR_EV_NEED_MORE && off == (size_t)n))
			break;
	}
	tar_reader_free(&r);
	close(out);
	assert_string_equal(got, want);
}

static void test_copy(void **state)
{
	struct build_context c;
	struct buildfile bf;
	struct api_err e = { 0 };
	char d1[DIGEST_STR_LEN], d2[DIGEST_STR_LEN];
	int fd = sample(), fd2;

	(void)state;
	assert_int_equal(build_context_scan(fd, NULL, CTX_MAX, &c, &e), 0);
	/* a directory: its contents go into the destination */
	copied(fd, &c, copy_step(&bf, "FROM m\nCOPY app/ /srv/", 1), "/srv",
	       "a.txt sub/ sub/c.txt link ");
	buildfile_free(&bf);
	/* one file to a file name: into its parent, renamed */
	copied(fd, &c, copy_step(&bf, "FROM m\nCOPY app/a.txt /etc/b.txt", 1), "/etc", "b.txt ");
	buildfile_free(&bf);
	/* one file into a directory */
	copied(fd, &c, copy_step(&bf, "FROM m\nWORKDIR /w\nCOPY app/sub/c.txt ./", 2), "/w",
	       "c.txt ");
	buildfile_free(&bf);
	/* several sources */
	copied(fd, &c, copy_step(&bf, "FROM m\nCOPY app/sub build /x/", 1), "/x",
	       "c.txt other.kf ");
	buildfile_free(&bf);
	/* digests: the same content gives the same, other content another */
	assert_int_equal(build_context_copy_digest(&c, copy_step(&bf, "FROM m\nCOPY app /x/", 1),
						   d1, &e),
			 0);
	buildfile_free(&bf);
	{
		struct arc a = { 0 };
		struct build_context c2;

		member(&a, "Kilnfile", '0', "FROM m\n");
		member(&a, "app/", '5', "");
		member(&a, "app/a.txt", '0', "ALPHA");
		member(&a, "app/sub/", '5', "");
		member(&a, "app/sub/c.txt", '0', "gamma");
		member(&a, "app/link", '2', "a.txt");
		fd2 = finish(&a);
		assert_int_equal(build_context_scan(fd2, NULL, CTX_MAX, &c2, &e), 0);
		assert_int_equal(build_context_copy_digest(&c2,
							   copy_step(&bf, "FROM m\nCOPY app /x/",
								     1),
							   d2, &e),
				 0);
		buildfile_free(&bf);
		assert_string_not_equal(d1, d2);
		build_context_free(&c2);
		close(fd2);
	}
	assert_int_equal(build_context_copy_digest(&c,
						   copy_step(&bf, "FROM m\nCOPY app/sub /x/", 1),
						   d2, &e),
			 0);
	assert_string_not_equal(d1, d2);
	buildfile_free(&bf);
	/* a source that is not there */
	assert_int_equal(build_context_copy_digest(&c, copy_step(&bf, "FROM m\n\nCOPY nope /x/", 1),
						   d2, &e),
			 -1);
	assert_non_null(strstr(e.msg, "line 3: COPY: 'nope' is not in the build context"));
	buildfile_free(&bf);
	build_context_free(&c);
	close(fd);
}

static void test_hard_link(void **state)
{
	struct arc a = { 0 };
	struct build_context c;
	struct buildfile bf;
	struct api_err e = { 0 };
	char target[64];
	int fd, out;

	(void)state;
	member(&a, "Kilnfile", '0', "FROM m\n");
	member(&a, "a", '0', "x");
	member(&a, "b", '1', "a");
	fd = finish(&a);
	assert_int_equal(build_context_scan(fd, NULL, CTX_MAX, &c, &e), 0);
	/* refused by the check before anything boots (the COPY digest) */
	{
		char digest[DIGEST_STR_LEN];

		assert_int_equal(build_context_copy_digest(&c,
							   copy_step(&bf, "FROM m\nCOPY . /x/", 1),
							   digest, &e),
				 -1);
		assert_int_equal(e.code, API_E_BAD_ARCHIVE);
		assert_non_null(strstr(e.msg, "'b' is a hard link"));
		buildfile_free(&bf);
		/* a hard link that no COPY names is harmless */
		assert_int_equal(build_context_copy_digest(&c,
							   copy_step(&bf, "FROM m\nCOPY a /x/", 1),
							   digest, &e),
				 0);
		buildfile_free(&bf);
	}
	out = memfd_create("copy", 0);
	assert_int_equal(build_context_copy_tar(fd, &c, copy_step(&bf, "FROM m\nCOPY . /x/", 1),
						out, target, sizeof(target), &e),
			 -1);
	assert_non_null(strstr(e.msg, "'b' is a hard link"));
	buildfile_free(&bf);
	build_context_free(&c);
	close(out);
	close(fd);
}

/* A gzip bomb: refused at the cap naming the member, not inflated; a COPY
 * that re-packs more than the cap is refused too. */
static void test_bomb(void **state)
{
	struct arc a = { 0 };
	struct build_context c;
	struct buildfile bf;
	struct api_err e = { 0 };
	char target[64], *big = malloc(300001);
	int fd, out;

	(void)state;
	assert_non_null(big);
	memset(big, 'z', 300000);
	big[300000] = '\0';
	member(&a, "Kilnfile", '0', "FROM m\nCOPY . /x/\n");
	member(&a, "zeros", '0', big);
	fd = finish(&a);
	/* 300 KB of data inflates past a 100 KB cap, inside 'zeros' */
	assert_int_equal(build_context_scan(fd, NULL, 100000, &c, &e), -1);
	assert_int_equal(e.code, API_E_BAD_ARCHIVE);
	if (!strstr(e.msg, "more than 100000 bytes (--max-image), at member 'zeros'"))
		fail_msg("message '%s'", e.msg);
	assert_null(c.m);
	/* under the cap the scan passes; a COPY's re-pack is capped as well */
	assert_int_equal(build_context_scan(fd, NULL, 400000, &c, &e), 0);
	c.max_bytes = 200000;
	out = memfd_create("copy", 0);
	assert_int_equal(build_context_copy_tar(fd, &c, copy_step(&bf, "FROM m\nCOPY . /x/", 1),
						out, target, sizeof(target), &e),
			 -1);
	assert_int_equal(e.code, API_E_BAD_ARCHIVE);
	assert_non_null(strstr(e.msg, "more than 200000 bytes"));
	buildfile_free(&bf);
	build_context_free(&c);
	close(out);
	close(fd);
	free(big);
}

/* A member name that does not fit under the destination is refused, never
 * cut short into another name in the guest. */
static void test_long_name(void **state)
{
	struct arc a = { 0 };
	struct build_context c;
	struct buildfile bf;
	struct api_err e = { 0 };
	char target[4200], name[4096];
	size_t o = 0;
	int fd, out;

	(void)state;
	/* 15 components of 250 bytes and a file: 3770 bytes, fits a name */
	for (int i = 0; i < 15; i++) {
		memset(name + o, 'a' + i, 250);
		o += 250;
		name[o++] = '/';
	}
	memcpy(name + o, "f", 2);
	member(&a, "Kilnfile", '0', "FROM m\n");
	member(&a, name, '0', "x");
	fd = finish(&a);
	assert_int_equal(build_context_scan(fd, NULL, CTX_MAX, &c, &e), 0);
	out = memfd_create("copy", 0);
	/* under a short destination it goes */
	assert_int_equal(build_context_copy_tar(fd, &c, copy_step(&bf, "FROM m\nCOPY . /x/", 1),
						out, target, sizeof(target), &e),
			 0);
	buildfile_free(&bf);
	/* under a long one it would pass 4095 bytes: refused */
	assert_int_equal(
		build_context_copy_tar(
			fd, &c,
			copy_step(&bf,
				  "FROM m\nCOPY . /a-rather-long-destination-directory/"
				  "that-goes-on-and-on/and-on-and-on/and-on-still/"
				  "and-further-yet/beyond-that-too/and-then-some/"
				  "more-of-it/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx/"
				  "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy/"
				  "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz/"
				  "wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww/",
				  1),
			out, target, sizeof(target), &e),
		-1);
	assert_int_equal(e.code, API_E_BAD_ARCHIVE);
	assert_non_null(strstr(e.msg, "too long a name"));
	buildfile_free(&bf);
	build_context_free(&c);
	close(out);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build_file), cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_copy),       cmocka_unit_test(test_hard_link),
		cmocka_unit_test(test_bomb),       cmocka_unit_test(test_long_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
