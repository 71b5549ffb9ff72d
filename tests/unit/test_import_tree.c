/*
 * api/image-import/import_tree.c: the staging tree a hostile archive's
 * members are written into. Whatever links the tree already holds, no
 * member lands outside it: creation below a symlink is refused, a symlink
 * replacing a directory is removed as a link (its target untouched), a
 * hard link must name an earlier member; whiteouts remove, opaque
 * directories empty; ownership is recorded for debugfs, quoted, by inode:
 * set-uid bits and a hard link's owner survive whatever happens to the
 * first path, a directory keeps its own mtime, a replaced entry's
 * attributes never reach what replaced it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "api/image-import/import_own.h"
#include "api/image-import/import_tree.h"

struct fx {
	char dir[64];       /* scratch: tree/ and outside/ */
	char script[16384]; /* the ownership script written (own()) */
	struct import_tree t;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char p[128];

	snprintf(f->dir, sizeof(f->dir), "/tmp/kiln-tree-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(p, sizeof(p), "%s/tree", f->dir);
	mkdir(p, 0700);
	f->t.root = open(p, O_RDONLY | O_DIRECTORY);
	snprintf(p, sizeof(p), "%s/outside", f->dir);
	mkdir(p, 0700);
	f->t.keep_attrs = true;
	*state = f;
	return f->t.root < 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	import_attrs_free(&f->t.attrs);
	close(f->t.root);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	if (system(cmd) != 0)
		return -1;
	free(f);
	return 0;
}

static const struct import_attr dir_attr = { .mode = S_IFDIR | 0755 };
static const struct import_attr file_attr = { .uid = 1000, .gid = 1000, .mode = S_IFREG | 0640 };
static const struct import_attr link_attr = { .mode = S_IFLNK | 0777 };

static int put_file(struct fx *f, const char *path, const char *data, struct err *e)
{
	int fd, r = tree_file_open(&f->t, path, &file_attr, &fd, e);

	if (r < 0)
		return r;
	assert_int_equal(write(fd, data, strlen(data)), (ssize_t)strlen(data));
	return tree_file_done(&f->t, fd, strlen(data), e);
}

/* The tree is complete: its ownership script into f->script. */
static void own(struct fx *f)
{
	FILE *m = fmemopen(f->script, sizeof(f->script) - 1, "w");
	struct err e;

	assert_non_null(m);
	assert_int_equal(import_own_script(&f->t, m, &e), 0);
	fclose(m);
}

static bool exists(struct fx *f, const char *rel)
{
	char p[256];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", f->dir, rel);
	return lstat(p, &st) == 0;
}

static void test_no_escape_through_symlinks(void **state)
{
	struct fx *f = *state;
	struct err e;

	/* a relative link to ../outside is refused by the plan; one that the
	 * tree holds anyway (here made by hand) is never passed through */
	assert_int_equal(symlinkat("../outside", f->t.root, "esc"), 0);
	assert_int_equal(put_file(f, "esc/pwned", "x", &e), -ELOOP);
	assert_non_null(strstr(e.msg, "'esc' is a symlink"));
	assert_false(exists(f, "outside/pwned"));
	assert_int_equal(tree_mkdir(&f->t, "esc/sub", &dir_attr, &e), -ELOOP);
	assert_int_equal(tree_remove(&f->t, "esc/x", &e), -ELOOP);
	assert_int_equal(tree_empty_dir(&f->t, "esc", &e), 0);
	/* replacing the link with a file removes the link, not its target */
	assert_int_equal(put_file(f, "esc", "now a file", &e), 0);
	assert_true(exists(f, "outside"));
	/* a symlink whose target leaves the tree is refused before it exists */
	assert_int_equal(tree_symlink(&f->t, "up", "../../..", &link_attr, &e), -EINVAL);
	assert_false(exists(f, "tree/up"));
}

static void test_hard_links(void **state)
{
	struct fx *f = *state;
	struct err e;
	struct stat st;

	assert_int_equal(put_file(f, "a/b/file", "data", &e), 0); /* parents made as needed */
	assert_int_equal(tree_hardlink(&f->t, "a/hard", "a/b/file", &e), 0);
	assert_int_equal(fstatat(f->t.root, "a/hard", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_nlink, 2);
	assert_int_equal(tree_hardlink(&f->t, "x", "missing", &e), -ENOENT);
	assert_int_equal(tree_hardlink(&f->t, "x", "a/b", &e), -ENOENT); /* a directory */
	/* a link to a target through a symlink is refused too */
	assert_int_equal(symlinkat("/etc", f->t.root, "etc"), 0);
	assert_true(tree_hardlink(&f->t, "x", "etc/passwd", &e) < 0);
}

/* A hard link to a symlink is the symlink at another depth: kept when
 * its target stays inside from there, refused when it would climb out
 * (a/b/l -> ../../x is inside the image; top -> ../../x is not). */
static void test_hard_link_to_a_symlink(void **state)
{
	static const struct import_attr link_attr = { .mode = 0777 };
	struct fx *f = *state;
	struct err e;
	char to[64];
	ssize_t n;

	assert_int_equal(put_file(f, "a/b/file", "data", &e), 0);
	assert_int_equal(tree_symlink(&f->t, "a/b/l", "../../x", &link_attr, &e), 0);
	assert_int_equal(tree_hardlink(&f->t, "top", "a/b/l", &e), -EINVAL);
	assert_non_null(strstr(e.msg, "hard link 'top' to the symlink 'a/b/l'"));
	assert_false(exists(f, "tree/top"));
	assert_int_equal(put_file(f, "c/d/keep", "data", &e), 0);
	assert_int_equal(tree_hardlink(&f->t, "c/d/l2", "a/b/l", &e), 0);
	n = readlinkat(f->t.root, "c/d/l2", to, sizeof(to) - 1);
	assert_int_equal(n, 7);
	to[n] = '\0';
	assert_string_equal(to, "../../x");
}

static void test_whiteouts_and_replacement(void **state)
{
	struct fx *f = *state;
	struct err e;

	assert_int_equal(put_file(f, "d/one", "1", &e), 0);
	assert_int_equal(put_file(f, "d/sub/two", "2", &e), 0);
	assert_int_equal(put_file(f, "keep", "k", &e), 0);
	assert_int_equal(tree_empty_dir(&f->t, "d", &e), 0);
	assert_true(exists(f, "tree/d"));
	assert_false(exists(f, "tree/d/one"));
	assert_false(exists(f, "tree/d/sub"));
	assert_int_equal(tree_remove(&f->t, "keep", &e), 0);
	assert_false(exists(f, "tree/keep"));
	assert_int_equal(tree_remove(&f->t, "never/was", &e), 0);
	/* a file replaces a directory with its contents, a directory a file */
	assert_int_equal(put_file(f, "d/sub/three", "3", &e), 0);
	assert_int_equal(put_file(f, "d", "file now", &e), 0);
	assert_int_equal(tree_mkdir(&f->t, "d", &dir_attr, &e), 0);
	assert_int_equal(f->t.entries, 9);
}

static void test_caps_and_script(void **state)
{
	struct fx *f = *state;
	struct err e;

	assert_int_equal(put_file(f, "we\"ird name", "x", &e), 0);
	assert_int_equal(tree_device(&f->t, "dev/null",
				     &(struct import_attr){ .mode = S_IFCHR | 0666 }, 1, 3, &e),
			 0);
	own(f);
	assert_non_null(strstr(f->script, "sif \"/we\"\"ird name\" uid 1000\n"));
	assert_non_null(
		strstr(f->script, "rm \"/dev/null\"\ncd \"/dev\"\nmknod \"null\" c 1 3\ncd /\n"));
	assert_non_null(strstr(f->script, "sif \"/dev/null\" mode 020666\n"));
	assert_non_null(strstr(f->script, "sif \"/\" uid 0\nsif \"/\" gid 0\n"));
	assert_int_equal(tree_device(&f->t, "dev/big", &(struct import_attr){ .mode = S_IFCHR },
				     4096, 0, &e),
			 -EINVAL);
	assert_string_equal(e.msg, "device numbers 4096:0 are out of range");
	f->t.max_entries = f->t.entries + 1;
	assert_int_equal(put_file(f, "one", "1", &e), 0);
	assert_int_equal(put_file(f, "two", "2", &e), -EFBIG);
	assert_non_null(strstr(e.msg, "member cap"));
	f->t.max_entries = 0;
	f->t.max_bytes = f->t.bytes + 4096;
	assert_int_equal(put_file(f, "three", "3", &e), 0);
	assert_int_equal(put_file(f, "four", "4", &e), -EFBIG);
	assert_non_null(strstr(e.msg, "size cap"));
}

static int put(struct fx *f, const char *path, const struct import_attr *a)
{
	struct err e;
	int fd, r = tree_file_open(&f->t, path, a, &fd, &e);

	if (r < 0)
		return r;
	/* the write a set-uid file's data is: the kernel clears the bit of a
	 * file that has it, so the staging file must not rely on it */
	assert_int_equal(write(fd, "data", 4), 4);
	return tree_file_done(&f->t, fd, 4, &e);
}

/* 4755, 2755 and 6755 with owner write came out 0755: the staging file
 * had its mode before the data. The bits are applied by debugfs, also to
 * a hard link whose first path a later layer whited out; the staging
 * files never carry them. */
static void test_special_bits_and_links(void **state)
{
	static const struct import_attr su = { .mode = S_IFREG | 04755 },
					sg = { .uid = 0, .gid = 42, .mode = S_IFREG | 02755 },
					both = { .mode = S_IFREG | 06755 },
					sticky = { .mode = S_IFDIR | 01777 };
	struct fx *f = *state;
	struct err e;
	struct stat st;

	assert_int_equal(put(f, "bin/su", &su), 0);
	assert_int_equal(put(f, "bin/sg", &sg), 0);
	assert_int_equal(put(f, "bin/both", &both), 0);
	assert_int_equal(tree_mkdir(&f->t, "tmp", &sticky, &e), 0);
	assert_int_equal(tree_hardlink(&f->t, "usr/su-link", "bin/su", &e), 0);
	assert_int_equal(tree_hardlink(&f->t, "usr/both-link", "bin/both", &e), 0);
	/* a later layer removes the first path; the link keeps the file */
	assert_int_equal(tree_remove(&f->t, "bin/su", &e), 0);
	assert_int_equal(fstatat(f->t.root, "usr/su-link", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_mode & 07000, 0);
	own(f);
	assert_null(strstr(f->script, "\"/bin/su\""));
	assert_non_null(strstr(f->script, "sif \"/usr/su-link\" mode 0104755\n"));
	assert_non_null(strstr(f->script, "sif \"/usr/su-link\" uid 0\n"));
	assert_non_null(strstr(f->script, "sif \"/bin/sg\" mode 0102755\n"));
	assert_non_null(strstr(f->script, "sif \"/bin/sg\" gid 42\n"));
	assert_non_null(strstr(f->script, "sif \"/bin/both\" mode 0106755\n"));
	assert_non_null(strstr(f->script, "sif \"/usr/both-link\" mode 0106755\n"));
	assert_non_null(strstr(f->script, "sif \"/tmp\" mode 041777\n"));
}

/* A directory's mtime is the archive's, not the time its contents were
 * written (set on the staging directory once the tree is complete); a
 * parent no member names keeps the time it was made. */
static void test_directory_mtimes(void **state)
{
	static const struct import_attr etc = { .mode = S_IFDIR | 0755, .mtime = 1000000000 },
					root = { .mode = S_IFDIR | 0755, .mtime = 999 };
	struct fx *f = *state;
	struct err e;
	struct stat st;

	assert_int_equal(tree_mkdir(&f->t, "", &root, &e), 0);
	assert_int_equal(tree_mkdir(&f->t, "etc", &etc, &e), 0);
	assert_int_equal(put_file(f, "etc/passwd", "root:x:0:0::/root:/bin/sh\n", &e), 0);
	assert_int_equal(put_file(f, "etc/sub/deep", "x", &e), 0);
	assert_int_equal(put_file(f, "top", "x", &e), 0);
	own(f);
	assert_int_equal(fstatat(f->t.root, "etc", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_mtime, 1000000000);
	assert_int_equal(fstat(f->t.root, &st), 0);
	assert_int_equal(st.st_mtime, 999);
	assert_int_equal(fstatat(f->t.root, "etc/sub", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(st.st_mtime > 1000000000);
}

/* A directory of mode 0500 replaced by a file: its mode (with the
 * directory type) must not land on the file, as a path-kept record did. */
static void test_replaced_entry_attributes(void **state)
{
	static const struct import_attr d = { .uid = 7, .mode = S_IFDIR | 0500, .mtime = 5 };
	struct fx *f = *state;
	struct err e;

	assert_int_equal(tree_mkdir(&f->t, "x", &d, &e), 0);
	assert_int_equal(tree_remove(&f->t, "x", &e), 0);
	assert_int_equal(put_file(f, "x", "now a file", &e), 0);
	own(f);
	assert_null(strstr(f->script, "040500"));
	assert_null(strstr(f->script, "\"/x\" uid 7"));
	assert_non_null(strstr(f->script, "sif \"/x\" uid 1000\n"));
}

/* A device node a later layer whites out is gone (its mknod was written
 * at once, so it came back); one replaced by a file is that file. */
static void test_device_removed_or_replaced(void **state)
{
	static const struct import_attr blk = { .gid = 6, .mode = S_IFBLK | 0660 };
	struct fx *f = *state;
	struct err e;

	assert_int_equal(tree_device(&f->t, "dev/sda", &blk, 8, 0, &e), 0);
	assert_int_equal(tree_device(&f->t, "dev/sdb", &blk, 8, 16, &e), 0);
	assert_int_equal(tree_remove(&f->t, "dev/sda", &e), 0);
	assert_int_equal(put_file(f, "dev/sdb", "a file now", &e), 0);
	own(f);
	assert_null(strstr(f->script, "sda"));
	assert_null(strstr(f->script, "mknod"));
	assert_null(strstr(f->script, "060660"));
	assert_non_null(strstr(f->script, "sif \"/dev/sdb\" uid 1000\n"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_no_escape_through_symlinks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hard_links, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hard_link_to_a_symlink, setup, teardown),
		cmocka_unit_test_setup_teardown(test_whiteouts_and_replacement, setup, teardown),
		cmocka_unit_test_setup_teardown(test_caps_and_script, setup, teardown),
		cmocka_unit_test_setup_teardown(test_special_bits_and_links, setup, teardown),
		cmocka_unit_test_setup_teardown(test_directory_mtimes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_replaced_entry_attributes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_device_removed_or_replaced, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
