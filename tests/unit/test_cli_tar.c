/*
 * Unit tests of api/kiln/cli_tar.c: `kiln cp` of directories, the local
 * side of kilnd's tar.gz archives (docs/api.md, GET/PUT .../archive): a
 * local tree written as a ustar stream, and a ustar stream extracted into a
 * local directory.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/kiln/cli_tar.h"
#include "api/proto/gz_stream.h"

static char D[64];

static int setup(void **state)
{
	(void)state;
	snprintf(D, sizeof(D), "/tmp/kiln-cli-tar.XXXXXX");
	if (!mkdtemp(D))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];

	/* rm -r: the deep test's paths are longer than nftw can name. */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", D);
	return system(cmd) == 0 ? 0 : -1;
}

static void put(const char *rel, const char *data, size_t n, mode_t mode)
{
	char p[256];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", D, rel);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, n), (ssize_t)n);
	close(fd);
}

static void mk(const char *rel)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/%s", D, rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

static void ln(const char *target, const char *rel)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/%s", D, rel);
	assert_int_equal(symlink(target, p), 0);
}

static int dfd(const char *rel)
{
	char p[256];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", D, rel);
	fd = open(p, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	return fd;
}

static bool exists(const char *rel)
{
	char p[256];
	struct stat s;

	snprintf(p, sizeof(p), "%s/%s", D, rel);
	return lstat(p, &s) == 0;
}

static char *slurp(const char *rel, size_t *n)
{
	char p[256], *b = malloc(1 << 20);
	int fd;
	ssize_t got;

	snprintf(p, sizeof(p), "%s/%s", D, rel);
	fd = open(p, O_RDONLY | O_NOFOLLOW);
	assert_true(fd >= 0);
	got = read(fd, b, 1 << 20);
	assert_true(got >= 0);
	close(fd);
	*n = (size_t)got;
	return b;
}

struct mem {
	uint8_t *b;
	size_t n;
};

static int mem_out(void *arg, const void *p, size_t n)
{
	struct mem *m = arg;

	m->b = realloc(m->b, m->n + n);
	assert_non_null(m->b);
	memcpy(m->b + m->n, p, n);
	m->n += n;
	return 0;
}

struct warns {
	int n;
	char last[CLI_TAR_ERR_MAX];
};

static void on_warn(void *arg, const char *msg)
{
	struct warns *w = arg;

	w->n++;
	snprintf(w->last, sizeof(w->last), "%s", msg);
}

static int untar_out(void *arg, const void *p, size_t n)
{
	return cli_untar_feed(arg, p, n) ? -ECANCELED : 0;
}

static void test_tree_roundtrip(void **state)
{
	static char big[70001];
	struct cli_tar_stats st;
	struct mem tar = { 0 }, gz = { 0 };
	struct warns w = { 0 };
	struct gz_stream enc, dec;
	struct cli_untar u;
	char link[64], *got;
	struct err e;
	size_t n;
	int src, dst;

	(void)state;
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7 + i / 251);
	mk("src");
	mk("src/sub");
	mk("src/sub/empty");
	put("src/a.txt", "hello\n", 6, 0644);
	put("src/sub/run.sh", "#!/bin/sh\n", 10, 0755);
	put("src/sub/big.bin", big, sizeof(big), 0600);
	ln("a.txt", "src/l");
	ln("../a.txt", "src/sub/up");
	ln("/etc/passwd", "src/abs");       /* leaves the tree: skipped */
	ln("../../outside", "src/sub/esc"); /* so does this */
	assert_int_equal(mkfifo(strcat(strcpy(link, D), "/src/fifo"), 0644), 0);
	ln("sub", "src/dirlink"); /* a symlink to a directory: stored, not walked */

	src = dfd("src");
	assert_int_equal(cli_tar_write_dir(src, mem_out, &tar, on_warn, &w, &st, &e), 0);
	close(src);
	assert_int_equal(st.files, 3);
	assert_int_equal(st.dirs, 2);
	assert_int_equal(st.symlinks, 3);
	assert_int_equal(st.skipped, 3);
	assert_int_equal(st.bytes, 6 + 10 + sizeof(big));
	assert_int_equal(w.n, 3);
	assert_int_equal(tar.n % 512, 0);

	/* Through gzip both ways, fed to the extractor in odd pieces. */
	assert_int_equal(gz_enc_init(&enc, 6), 0);
	assert_int_equal(gz_enc_write(&enc, tar.b, tar.n, mem_out, &gz), 0);
	assert_int_equal(gz_enc_finish(&enc, mem_out, &gz), 0);
	gz_end(&enc);
	mk("dst");
	dst = dfd("dst");
	cli_untar_init(&u, dst, 022, "dst");
	assert_int_equal(gz_dec_init(&dec), 0);
	for (size_t off = 0; off < gz.n; off += 333)
		assert_int_equal(gz_dec_write(&dec, gz.b + off, gz.n - off < 333 ? gz.n - off : 333,
					      untar_out, &u),
				 0);
	assert_int_equal(gz_dec_finish(&dec), 0);
	gz_end(&dec);
	assert_int_equal(cli_untar_finish(&u), 0);
	assert_int_equal(u.st.files, 3);
	assert_int_equal(u.st.dirs, 2);
	assert_int_equal(u.st.symlinks, 3);
	cli_untar_free(&u);
	close(dst);

	got = slurp("dst/a.txt", &n);
	assert_int_equal(n, 6);
	assert_memory_equal(got, "hello\n", 6);
	free(got);
	got = slurp("dst/sub/big.bin", &n);
	assert_int_equal(n, sizeof(big));
	assert_memory_equal(got, big, sizeof(big));
	free(got);
	{
		char p[256];
		struct stat s;

		snprintf(p, sizeof(p), "%s/dst/sub/run.sh", D);
		assert_int_equal(stat(p, &s), 0);
		assert_int_equal(s.st_mode & 0777, 0755);
		snprintf(p, sizeof(p), "%s/dst/sub/empty", D);
		assert_int_equal(lstat(p, &s), 0);
		assert_true(S_ISDIR(s.st_mode));
		snprintf(p, sizeof(p), "%s/dst/l", D);
		assert_int_equal(readlink(p, link, sizeof(link)), 5);
		assert_memory_equal(link, "a.txt", 5);
		snprintf(p, sizeof(p), "%s/dst/dirlink", D);
		assert_int_equal(lstat(p, &s), 0);
		assert_true(S_ISLNK(s.st_mode));
	}
	assert_false(exists("dst/abs"));
	assert_false(exists("dst/sub/esc"));
	assert_false(exists("dst/fifo"));
	free(tar.b);
	free(gz.b);
}

/* An archive of hand-made members. */
static void tb_add(struct mem *t, char type, const char *name, const char *link,
		   const char *content)
{
	struct tar_out o = { .name = name,
			     .name_len = strlen(name),
			     .type = type,
			     .link = link,
			     .link_len = link ? strlen(link) : 0,
			     .size = content ? strlen(content) : 0,
			     .mode = 0644,
			     .mtime = 1000000000 };
	uint8_t hdr[TAR_HEADER_BUILD_MAX], zero[512] = { 0 };
	ssize_t w = tar_header_build(&o, hdr, sizeof(hdr));

	assert_true(w > 0);
	mem_out(t, hdr, (size_t)w);
	if (content) {
		mem_out(t, content, strlen(content));
		mem_out(t, zero, tar_pad(strlen(content)));
	}
}

static void tb_end(struct mem *t)
{
	uint8_t zero[1024] = { 0 };

	mem_out(t, zero, sizeof(zero));
}

/* Extract t into a fresh D/<dir>: the feed's result (0 or -1), u.err in err. */
static int extract(struct mem *t, const char *dir, char *err, size_t errsz)
{
	struct cli_untar u;
	int fd, rc;

	if (!exists(dir))
		mk(dir);
	fd = dfd(dir);
	cli_untar_init(&u, fd, 022, dir);
	rc = cli_untar_feed(&u, t->b, t->n);
	if (!rc)
		rc = cli_untar_finish(&u);
	snprintf(err, errsz, "%s", u.err);
	cli_untar_free(&u);
	close(fd);
	free(t->b);
	t->b = NULL;
	t->n = 0;
	return rc;
}

/* One hand-made 512-byte header (what tar_header_build would refuse to write). */
static void raw_hdr(struct mem *t, const char *name, char type, size_t size)
{
	uint8_t h[512] = { 0 };
	unsigned sum = 0;

	memcpy(h, name, strlen(name));
	snprintf((char *)h + 100, 8, "%07o", 0644);
	snprintf((char *)h + 124, 12, "%011zo", size);
	snprintf((char *)h + 136, 12, "%011o", 1000000000);
	h[156] = (uint8_t)type;
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	memset(h + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	mem_out(t, h, sizeof(h));
}

static void raw_data(struct mem *t, const char *d, size_t n)
{
	uint8_t zero[512] = { 0 };

	mem_out(t, d, n);
	mem_out(t, zero, tar_pad(n));
}

/* A member named `name` through a GNU long name or a pax path record. */
static void long_member(struct mem *t, const char *name, bool gnu, char type, const char *link)
{
	size_t n = strlen(name);

	if (gnu) {
		raw_hdr(t, "././@LongLink", 'L', n + 1);
		raw_data(t, name, n + 1);
	} else {
		size_t body = n + 7, len = body + 1; /* " path=" + "\n" */
		char *rec;

		while (len != body + (size_t)snprintf(NULL, 0, "%zu", len))
			len = body + (size_t)snprintf(NULL, 0, "%zu", len);
		rec = malloc(len + 1);
		assert_non_null(rec);
		snprintf(rec, len + 1, "%zu path=%s\n", len, name);
		raw_hdr(t, "PaxHeaders/x", 'x', len);
		raw_data(t, rec, len);
		free(rec);
	}
	raw_hdr(t, "short", type, 0);
	if (link) /* a hard link: its target in the header's link field */
		memcpy(t->b + t->n - 512 + 157, link, strlen(link));
	if (link) {
		unsigned sum = 0;
		uint8_t *h = t->b + t->n - 512;

		memset(h + 148, ' ', 8);
		for (int i = 0; i < 512; i++)
			sum += h[i];
		snprintf((char *)h + 148, 8, "%06o", sum);
	}
	tb_end(t);
}

/* A guest's `kiln cp` answer with a pax or GNU long name whose directory
 * component is longer than NAME_MAX (5000 bytes overran open_parent's
 * per-component stack buffer): refused, with what failed, nothing made. */
static void test_long_component(void **state)
{
	static const size_t comps[] = { NAME_MAX + 1, 5000 };
	char err[CLI_TAR_ERR_MAX], *name = malloc(6000);
	struct mem t = { 0 };

	(void)state;
	assert_non_null(name);
	mk("long");
	put("long/x", "x", 1, 0644);
	for (size_t i = 0; i < 2; i++) {
		for (int gnu = 0; gnu < 2; gnu++) {
			memset(name, 'c', comps[i]);
			strcpy(name + comps[i], "/f");
			long_member(&t, name, gnu, '0', NULL);
			assert_int_equal(extract(&t, "long", err, sizeof(err)), -1);
			assert_non_null(strstr(err, "name is too long"));
			/* The hard link's name the same. */
			long_member(&t, name, gnu, '1', "x");
			assert_int_equal(extract(&t, "long", err, sizeof(err)), -1);
			assert_non_null(strstr(err, "name is too long"));
		}
	}
	assert_false(exists("long/ccc"));
	free(name);
}

static void test_hostile_archives(void **state)
{
	struct mem t = { 0 };
	char err[CLI_TAR_ERR_MAX], victim[256];
	size_t n;
	char *got;

	(void)state;
	mk("outside");
	put("outside/victim", "keep", 4, 0644);

	/* `..` and absolute names: refused before anything is created. */
	tb_add(&t, '0', "../escaped", NULL, "x");
	tb_end(&t);
	assert_int_equal(extract(&t, "d1", err, sizeof(err)), -1);
	assert_non_null(strstr(err, ".."));
	assert_false(exists("escaped"));
	tb_add(&t, '0', "/tmp/kiln-cli-tar-abs", NULL, "x");
	tb_end(&t);
	assert_int_equal(extract(&t, "d1", err, sizeof(err)), -1);
	assert_false(exists("/tmp/kiln-cli-tar-abs"));

	/* A symlink of the archive leading out: refused by the reader. */
	tb_add(&t, '2', "out", "../outside", NULL);
	tb_end(&t);
	assert_int_equal(extract(&t, "d2", err, sizeof(err)), -1);
	assert_false(exists("d2/out"));

	/* A symlink that stays inside, then a member through it: the
	 * extractor never writes through a symlink. */
	tb_add(&t, '2', "s", ".", NULL);
	tb_add(&t, '0', "s/f", NULL, "x");
	tb_end(&t);
	assert_int_equal(extract(&t, "d3", err, sizeof(err)), -1);
	assert_string_equal(
		err,
		"archive member 's/f': its path goes through a symlink or a file here; refusing to "
		"write through it");
	assert_false(exists("d3/f"));

	/* A symlink already in the destination, pointing out: not followed. */
	mk("d4");
	snprintf(victim, sizeof(victim), "%s/outside", D);
	ln(victim, "d4/evil");
	tb_add(&t, '0', "evil/victim", NULL, "pwned");
	tb_end(&t);
	assert_int_equal(extract(&t, "d4", err, sizeof(err)), -1);
	got = slurp("outside/victim", &n);
	assert_int_equal(n, 4);
	assert_memory_equal(got, "keep", 4);
	free(got);

	/* A symlink in the way of a file is replaced, its target untouched. */
	mk("d5");
	snprintf(victim, sizeof(victim), "%s/outside/victim", D);
	ln(victim, "d5/t.txt");
	tb_add(&t, '0', "t.txt", NULL, "new");
	tb_end(&t);
	assert_int_equal(extract(&t, "d5", err, sizeof(err)), 0);
	got = slurp("d5/t.txt", &n);
	assert_memory_equal(got, "new", 3);
	free(got);
	got = slurp("outside/victim", &n);
	assert_memory_equal(got, "keep", 4);
	free(got);

	/* A directory in the way of a file is an error, not a removal. */
	mk("d6");
	mk("d6/x");
	tb_add(&t, '0', "x", NULL, "file");
	tb_end(&t);
	assert_int_equal(extract(&t, "d6", err, sizeof(err)), -1);
	assert_string_equal(err, "archive member 'x': a directory is in the way");
	assert_true(exists("d6/x"));

	/* Missing parents are created; a hard link to an earlier member. */
	tb_add(&t, '0', "p/q/r.txt", NULL, "deep");
	tb_add(&t, '1', "p/hard", "p/q/r.txt", NULL);
	tb_end(&t);
	assert_int_equal(extract(&t, "d7", err, sizeof(err)), 0);
	got = slurp("d7/p/hard", &n);
	assert_int_equal(n, 4);
	assert_memory_equal(got, "deep", 4);
	free(got);

	/* A cut archive: the member's data ends early. */
	tb_add(&t, '0', "cut.txt", NULL, "0123456789");
	t.n -= 600;
	assert_int_equal(extract(&t, "d8", err, sizeof(err)), -1);
	assert_true(strlen(err) > 0);
}

/* A guest's archive with a hard link to a symlink: `d/e/l -> ../../x`
 * stays inside, the same link as `top` would point out of the
 * destination. Only regular files may be hard-linked: refused, naming the
 * member, and no link leads out afterwards; a fifo already there neither. */
static void test_hardlink_not_file(void **state)
{
	struct mem t = { 0 };
	char err[CLI_TAR_ERR_MAX], got[16], p[256];

	(void)state;
	tb_add(&t, '5', "d/", NULL, NULL);
	tb_add(&t, '5', "d/e/", NULL, NULL);
	tb_add(&t, '2', "d/e/l", "../../x", NULL);
	tb_add(&t, '1', "top", "d/e/l", NULL);
	tb_end(&t);
	assert_int_equal(extract(&t, "h1", err, sizeof(err)), -1);
	assert_string_equal(err,
			    "archive member 'top': a hard link to 'd/e/l', which is not a regular file; an "
			    "archive may only hard-link files");
	assert_false(exists("h1/top"));
	snprintf(p, sizeof(p), "%s/h1/d/e/l", D); /* members before it stay */
	assert_int_equal(readlink(p, got, sizeof(got)), 7);
	assert_memory_equal(got, "../../x", 7);

	snprintf(p, sizeof(p), "%s/h1/fifo", D);
	assert_int_equal(mkfifo(p, 0644), 0);
	tb_add(&t, '1', "hf", "fifo", NULL);
	tb_end(&t);
	assert_int_equal(extract(&t, "h1", err, sizeof(err)), -1);
	assert_non_null(
		strstr(err,
		       "archive member 'hf': a hard link to 'fifo', which is not a regular file"));
	assert_false(exists("h1/hf"));
}

/* A tree deeper than an archive name can be: an error naming the path. */
static void test_writer_name_too_long(void **state)
{
	struct cli_tar_stats st;
	struct mem tar = { 0 };
	char name[251];
	struct err e;
	int fd, next;

	(void)state;
	memset(name, 'a', 250);
	name[250] = 0;
	mk("deep");
	fd = dfd("deep");
	/* 17 levels of 250 bytes: past AGENT_PATH_MAX, made relative to
	 * each other as the walk opens them. */
	for (int i = 0; i < 17; i++) {
		assert_int_equal(mkdirat(fd, name, 0755), 0);
		next = openat(fd, name, O_RDONLY | O_DIRECTORY);
		assert_true(next >= 0);
		close(fd);
		fd = next;
	}
	close(fd);
	fd = dfd("deep");
	assert_int_equal(cli_tar_write_dir(fd, mem_out, &tar, NULL, NULL, &st, &e), -ENAMETOOLONG);
	assert_non_null(strstr(e.msg, "path too long for an archive"));
	close(fd);
	free(tar.b);
}

static int fail_out(void *arg, const void *p, size_t n)
{
	(void)arg;
	(void)p;
	(void)n;
	return -EPIPE;
}

static void test_writer_output_fails(void **state)
{
	struct cli_tar_stats st;
	struct err e;
	int fd;

	(void)state;
	mk("w");
	put("w/f", "x", 1, 0644);
	fd = dfd("w");
	/* The consumer's failure (curl gone) stops the walk with its value. */
	assert_int_equal(cli_tar_write_dir(fd, fail_out, NULL, NULL, NULL, &st, &e), -EPIPE);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_tree_roundtrip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_archives, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hardlink_not_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_component, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writer_name_too_long, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writer_output_fails, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
