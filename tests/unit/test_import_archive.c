/*
 * api/image-import/import_archive.c: the byte caps on what an archive
 * decompresses to. A gzip outer or layer that inflates past the cap is
 * refused (EFBIG, the archive's fault) before it is written out, a member
 * that is only skipped counts too, and a write past RLIMIT_FSIZE fails
 * with EFBIG once SIGXFSZ is ignored (as kiln-image-import does).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>

#include "api/image-import/import_archive.h"

struct fx {
	char dir[64];
	int tar; /* the archive under test */
	struct import_tree t;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char p[128];

	snprintf(f->dir, sizeof(f->dir), "/tmp/kiln-arch-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(p, sizeof(p), "%s/tree", f->dir);
	mkdir(p, 0700);
	f->t.root = open(p, O_RDONLY | O_DIRECTORY);
	f->t.keep_attrs = true;
	snprintf(p, sizeof(p), "%s/archive", f->dir);
	f->tar = open(p, O_RDWR | O_CREAT | O_EXCL, 0600);
	*state = f;
	return f->t.root < 0 || f->tar < 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	import_attrs_free(&f->t.attrs);
	close(f->t.root);
	close(f->tar);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	if (system(cmd) != 0)
		return -1;
	free(f);
	return 0;
}

/* A tar (filter "gzip", "zstd" or NULL: plain) on f->tar: regular
 * members f0, f1, ... of sizes[i] zero bytes each. */
static void write_tar(struct fx *f, const char *filter, const uint64_t *sizes, size_t n)
{
	struct archive *w = archive_write_new();
	static char zero[1 << 16];

	assert_non_null(w);
	if (filter)
		assert_int_equal(archive_write_add_filter_by_name(w, filter), ARCHIVE_OK);
	assert_int_equal(archive_write_set_format_pax_restricted(w), ARCHIVE_OK);
	assert_int_equal(archive_write_open_fd(w, f->tar), ARCHIVE_OK);
	for (size_t i = 0; i < n; i++) {
		struct archive_entry *ent = archive_entry_new();
		char name[16];

		snprintf(name, sizeof(name), "f%zu", i);
		archive_entry_set_pathname(ent, name);
		archive_entry_set_filetype(ent, AE_IFREG);
		archive_entry_set_perm(ent, 0644);
		archive_entry_set_size(ent, (la_int64_t)sizes[i]);
		assert_int_equal(archive_write_header(w, ent), ARCHIVE_OK);
		for (uint64_t left = sizes[i]; left;) {
			size_t k = left > sizeof(zero) ? sizeof(zero) : (size_t)left;

			assert_int_equal(archive_write_data(w, zero, k), (la_ssize_t)k);
			left -= k;
		}
		archive_entry_free(ent);
	}
	assert_int_equal(archive_write_close(w), ARCHIVE_OK);
	archive_write_free(w);
	assert_int_equal(lseek(f->tar, 0, SEEK_SET), 0);
}

/* A gzip outer archive of 8 MiB of zeros (a few KiB on the wire) against a
 * 1 MiB cap: refused as too large, nothing near 8 MiB written. */
static void test_outer_gzip_bomb_capped(void **state)
{
	struct fx *f = *state;
	uint64_t sizes[] = { 8u << 20 };
	struct err e;
	struct stat st;

	write_tar(f, "gzip", sizes, 1);
	assert_int_equal(fstat(f->tar, &st), 0);
	assert_true(st.st_size < (1 << 20));
	f->t.max_bytes = 1u << 20;
	assert_int_equal(import_outer(f->tar, &f->t, &e), -EFBIG);
	assert_non_null(strstr(e.msg, "size cap"));
	assert_non_null(strstr(e.msg, "f0"));
}

/* Under the cap the same archive imports. */
static void test_outer_under_cap(void **state)
{
	struct fx *f = *state;
	uint64_t sizes[] = { 100000, 5000 };
	struct err e;

	write_tar(f, "gzip", sizes, 2);
	f->t.max_bytes = 1u << 20;
	assert_int_equal(import_outer(f->tar, &f->t, &e), 0);
	assert_int_equal(faccessat(f->t.root, "f1", F_OK, AT_SYMLINK_NOFOLLOW), 0);
}

/* A layer: the whiteout pass only skips members, but skipping decompresses
 * them; it is refused there by the members' declared sizes. */
static void test_layer_pass_capped(void **state)
{
	struct fx *f = *state;
	uint64_t sizes[] = { 600u << 10, 600u << 10 };
	struct err e;

	write_tar(f, "gzip", sizes, 2);
	f->t.max_bytes = 1u << 20;
	assert_int_equal(import_layer(f->tar, &f->t, false, &e), -EFBIG);
	assert_non_null(strstr(e.msg, "decompresses to more than 1048576 bytes"));
	/* the first pass ended it: nothing was written */
	assert_int_equal(f->t.bytes, 0);
}

/* A zstd layer (OCI's tar+zstd) imports like a gzip one; a zstd bomb is
 * capped the same way; what is no tar at all says which it reads. */
static void test_zstd_layer(void **state)
{
	struct fx *f = *state;
	uint64_t sizes[] = { 5000, 70000 }, bomb[] = { 8u << 20 };
	struct err e;
	struct stat st;

	write_tar(f, "zstd", sizes, 2);
	assert_int_equal(import_layer(f->tar, &f->t, false, &e), 0);
	assert_int_equal(fstatat(f->t.root, "f1", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_size, 70000);
	assert_int_equal(ftruncate(f->tar, 0), 0);
	assert_int_equal(lseek(f->tar, 0, SEEK_SET), 0);
	write_tar(f, "zstd", bomb, 1);
	f->t.max_bytes = 1u << 20;
	assert_int_equal(import_layer(f->tar, &f->t, false, &e), -EFBIG);
	assert_non_null(strstr(e.msg, "decompresses to more than 1048576 bytes"));
	assert_int_equal(ftruncate(f->tar, 0), 0);
	assert_int_equal(lseek(f->tar, 0, SEEK_SET), 0);
	assert_int_equal(write(f->tar,
			       "\x28\xb5\x2f\xfd"
			       "garbage",
			       11),
			 11);
	assert_int_equal(import_layer(f->tar, &f->t, false, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "(plain, gzip or zstd)"));
}

/* One member on w: a file of mode `mode` (data "x"), or a hard link to `link`. */
static void add(struct archive *w, const char *name, mode_t mode, const char *link)
{
	struct archive_entry *ent = archive_entry_new();

	archive_entry_set_pathname(ent, name);
	archive_entry_set_filetype(ent, AE_IFREG);
	archive_entry_set_perm(ent, mode);
	archive_entry_set_size(ent, link ? 0 : 1);
	if (link)
		archive_entry_set_hardlink(ent, link);
	assert_int_equal(archive_write_header(w, ent), ARCHIVE_OK);
	if (!link)
		assert_int_equal(archive_write_data(w, "x", 1), 1);
	archive_entry_free(ent);
}

static struct archive *tar_on(struct fx *f)
{
	struct archive *w = archive_write_new();

	assert_int_equal(ftruncate(f->tar, 0), 0);
	assert_int_equal(lseek(f->tar, 0, SEEK_SET), 0);
	assert_int_equal(archive_write_set_format_pax_restricted(w), ARCHIVE_OK);
	assert_int_equal(archive_write_open_fd(w, f->tar), ARCHIVE_OK);
	return w;
}

static void tar_done(struct archive *w)
{
	assert_int_equal(archive_write_close(w), ARCHIVE_OK);
	archive_write_free(w);
}

/* A hard link to /etc/shadow or up out of the tree: one line saying
 * which and why (it said the target twice and cut the reason). */
static void test_hard_link_messages(void **state)
{
	struct fx *f = *state;
	struct archive *w = tar_on(f);
	struct err e;

	add(w, "etc/passwd", 0644, NULL);
	add(w, "shadow-link", 0644, "/etc/shadow");
	tar_done(w);
	assert_int_equal(import_layer(f->tar, &f->t, false, &e), -EINVAL);
	assert_string_equal(
		e.msg,
		"member \"shadow-link\": hard link to \"/etc/shadow\": absolute path (layer members are relative to the image root)");
	w = tar_on(f);
	add(w, "up", 0644, "../../etc/passwd");
	tar_done(w);
	assert_int_equal(import_layer(f->tar, &f->t, false, &e), -EINVAL);
	assert_string_equal(
		e.msg,
		"member \"up\": hard link to \"../../etc/passwd\": '..' component (a member may not leave the image root)");
}

/* Set-uid members and a hard link to one, the first name whited out by
 * the next layer: the link is kept with the file's bits (by inode). */
static void test_set_uid_through_layers(void **state)
{
	struct fx *f = *state;
	struct archive *w = tar_on(f);
	struct err e;
	struct stat st;
	const struct import_attrs_slot *a;

	add(w, "bin/su", 04755, NULL);
	add(w, "bin/sg", 02755, NULL);
	add(w, "bin/su-link", 0, "bin/su");
	tar_done(w);
	assert_int_equal(import_layer(f->tar, &f->t, false, &e), 0);
	w = tar_on(f);
	add(w, "bin/.wh.su", 0644, NULL);
	tar_done(w);
	assert_int_equal(import_layer(f->tar, &f->t, false, &e), 0);
	assert_int_not_equal(fstatat(f->t.root, "bin/su", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(fstatat(f->t.root, "bin/su-link", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_mode & 07000, 0); /* never on a staging file */
	a = import_attrs_get(&f->t.attrs, st.st_ino);
	assert_non_null(a);
	assert_int_equal(a->mode, S_IFREG | 04755);
	assert_int_equal(fstatat(f->t.root, "bin/sg", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(import_attrs_get(&f->t.attrs, st.st_ino)->mode, S_IFREG | 02755);
}

/* A member larger than RLIMIT_FSIZE with SIGXFSZ ignored: the write fails
 * with EFBIG (bad_archive) and the process lives. */
static void test_fsize_limit_is_efbig(void **state)
{
	struct fx *f = *state;
	uint64_t sizes[] = { 256u << 10 };
	pid_t pid;
	int st;

	write_tar(f, NULL, sizes, 1);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = { 64u << 10, 64u << 10 };
		struct err e;

		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
			_exit(3);
		_exit(import_outer(f->tar, &f->t, &e) == -EFBIG && strstr(e.msg, "f0") ? 0 : 4);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_outer_gzip_bomb_capped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_outer_under_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_layer_pass_capped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fsize_limit_is_efbig, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zstd_layer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hard_link_messages, setup, teardown),
		cmocka_unit_test_setup_teardown(test_set_uid_through_layers, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
