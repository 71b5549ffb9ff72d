/*
 * api/runtime/rt_warm.c: a warm template's name (what it must match),
 * the io.kiln.warm annotation, and the templates' directory on a real
 * filesystem under /tmp: the lock taken exclusive when there is none
 * yet and shared once there is, a maker's leftovers cleared, and other
 * builds' templates swept unless someone holds them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <jansson.h>

#include "api/runtime/rt_plan.h"
#include "api/runtime/rt_warm.h"

static struct err e;
static char top[64];

static int setup(void **state)
{
	(void)state;
	snprintf(top, sizeof(top), "/tmp/test_rt_warm.XXXXXX");
	return mkdtemp(top) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[160];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	return system(cmd) == 0 ? 0 : -1;
}

static const struct rt_warm_ident files[RT_WARM_FILES] = {
	{ 1, 100, 4096, 7 },
	{ 1, 101, 8192, 8 },
	{ 1, 102, 512, 9 },
};

static void test_name(void **state)
{
	struct rt_warm_shape sh = { .mem_mib = 512, .cpus = 1 };
	struct rt_warm_ident other[RT_WARM_FILES];
	char a[RT_WARM_NAME_MAX], b[RT_WARM_NAME_MAX];

	(void)state;
	rt_warm_name(files, &sh, a);
	assert_int_equal(strlen(a), RT_WARM_IDENT_LEN + 9 + strlen("-512m1c-r"));
	assert_string_equal(a + RT_WARM_IDENT_LEN + 9, "-512m1c-r");
	assert_int_equal(strspn(a, "0123456789abcdef"), RT_WARM_IDENT_LEN);
	assert_int_equal(a[RT_WARM_IDENT_LEN], '-');
	assert_int_equal(strspn(a + RT_WARM_IDENT_LEN + 1, "0123456789abcdef"), 8);
	/* the same files and shape: the same name */
	rt_warm_name(files, &sh, b);
	assert_string_equal(a, b);
	/* every shape's field shows */
	sh = (struct rt_warm_shape){ 4096, 64, true, true, true, true };
	rt_warm_name(files, &sh, b);
	assert_string_equal(b + RT_WARM_IDENT_LEN + 9, "-4096m64c-Rowp");
	assert_memory_equal(a, b, RT_WARM_IDENT_LEN + 9);
	/* a rebuilt kiln-vmm or initrd (any of its four words): another
	 * build's name; another kernel: the same build's, another name */
	for (int f = 0; f < RT_WARM_FILES; f++)
		for (int w = 0; w < 4; w++) {
			memcpy(other, files, sizeof(other));
			((uint64_t *)&other[f])[w]++;
			rt_warm_name(other, &sh, a);
			assert_string_not_equal(a, b);
			if (f == RT_WARM_KERNEL)
				assert_memory_equal(a, b, RT_WARM_IDENT_LEN);
			else
				assert_memory_not_equal(a, b, RT_WARM_IDENT_LEN);
		}
}

static void test_wanted(void **state)
{
	struct rt_config c = { 0 };

	(void)state;
	assert_int_equal(rt_warm_wanted(&c, &e), 1);
	c.annotations = json_pack("{s:s}", RT_WARM_ANNOTATION, "true");
	assert_int_equal(rt_warm_wanted(&c, &e), 1);
	json_object_set_new(c.annotations, RT_WARM_ANNOTATION, json_string("false"));
	assert_int_equal(rt_warm_wanted(&c, &e), 0);
	json_object_set_new(c.annotations, RT_WARM_ANNOTATION, json_string("no"));
	assert_int_equal(rt_warm_wanted(&c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "io.kiln.warm \"no\""));
	assert_non_null(strstr(e.msg, "want true"));
	json_object_set_new(c.annotations, RT_WARM_ANNOTATION, json_integer(1));
	assert_int_equal(rt_warm_wanted(&c, &e), 1); /* not a string: config.json's are */
	json_decref(c.annotations);
}

static void test_cmdline(void **state)
{
	struct rt_warm_shape sh = { .root_ro = true, .brw = true };
	char out[RT_CMDLINE_MAX], tiny[24];

	(void)state;
	assert_int_equal(rt_plan_cmdline(&sh, NULL, out, sizeof(out), &e), 0);
	assert_string_equal(out, "kiln.oci kiln.shares=r:/run/kiln/root:ro,brw:/run/kiln/binds/rw");
	sh = (struct rt_warm_shape){ .bro = true, .pod = true };
	assert_int_equal(rt_plan_cmdline(&sh, "box", out, sizeof(out), &e), 0);
	assert_string_equal(out,
			    "kiln.oci kiln.shares=r:/run/kiln/root,bro:/run/kiln/binds/ro:ro,"
			    "pod:/run/kiln/pod kiln.hostname=box");
	assert_int_equal(rt_plan_cmdline(&sh, NULL, tiny, sizeof(tiny), &e), -E2BIG);
}

static int fd_at(int dirfd, const char *name)
{
	return openat(dirfd, name, O_RDONLY | O_CLOEXEC);
}

/* What a maker leaves: <name>.tmp with kiln-vmm's state file. */
static void make_tmp(int warmfd, const char *name)
{
	int tmpfd, f;

	assert_int_equal(rt_warm_tmp_make(warmfd, name, &tmpfd, &e), 0);
	f = openat(tmpfd, "state", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(f >= 0);
	close(f);
	close(tmpfd);
}

static void test_take_and_install(void **state)
{
	struct rt_warm_shape sh = { .mem_mib = 512, .cpus = 1 };
	char name[RT_WARM_NAME_MAX], other[RT_WARM_NAME_MAX], path[256];
	struct rt_warm_ident old[RT_WARM_FILES];
	int warmfd, lock, lock2, held, r, fd;
	struct stat st;

	(void)state;
	assert_int_equal(rt_warm_dir_open(top, &warmfd, &e), 0);
	assert_int_equal(fstat(warmfd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	rt_warm_name(files, &sh, name);

	/* none yet: the lock exclusive, to make it; a second taker waits */
	assert_int_equal(rt_warm_take(warmfd, name, 1000, &lock, &e), 0);
	assert_int_equal(rt_warm_take(warmfd, name, 100, &lock2, &e), -ETIMEDOUT);
	assert_non_null(strstr(e.msg, "another create is still making it"));
	assert_int_equal(lock2, -1);

	/* a maker's leftovers are cleared: <name>.tmp starts empty */
	make_tmp(warmfd, name);
	snprintf(path, sizeof(path), "%s.tmp/junk", name);
	fd = openat(warmfd, path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	close(fd);
	make_tmp(warmfd, name);
	assert_int_equal(fd_at(warmfd, path), -1);

	/* another build's template, held by a VM resuming it, and one not */
	memcpy(old, files, sizeof(old));
	old[RT_WARM_VMM].mtime_ns++;
	rt_warm_name(old, &sh, other);
	make_tmp(warmfd, other);
	assert_int_equal(rt_warm_install(warmfd, other, &e), 0);
	held = openat(warmfd, strcat(strcpy(path, other), ".lock"), O_RDWR | O_CREAT | O_CLOEXEC,
		      0600);
	assert_true(held >= 0);
	assert_int_equal(flock(held, LOCK_SH), 0);

	assert_int_equal(rt_warm_install(warmfd, name, &e), 0);
	assert_true((fd = fd_at(warmfd, strcat(strcpy(path, name), "/state"))) >= 0);
	close(fd);
	assert_int_equal(fd_at(warmfd, strcat(strcpy(path, name), ".tmp")), -1);
	/* held: it stays */
	assert_true((fd = fd_at(warmfd, strcat(strcpy(path, other), "/state"))) >= 0);
	close(fd);
	rt_warm_release(lock);

	/* made: shared, many at once */
	assert_int_equal(rt_warm_take(warmfd, name, 1000, &lock, &e), 1);
	assert_int_equal(rt_warm_take(warmfd, name, 1000, &lock2, &e), 1);
	rt_warm_release(lock2);

	/* once free, the next install sweeps the other build's (its lock
	 * file stays: a create may hold it open) */
	close(held);
	make_tmp(warmfd, name);
	assert_int_equal(rt_warm_install(warmfd, name, &e), 0);
	assert_int_equal(fd_at(warmfd, other), -1);
	assert_true((fd = fd_at(warmfd, strcat(strcpy(path, other), ".lock"))) >= 0);
	close(fd);
	assert_true((fd = fd_at(warmfd, strcat(strcpy(path, name), "/state"))) >= 0);
	close(fd);
	rt_warm_release(lock);

	/* a directory without its state file is not a template */
	rt_dir_clear(warmfd, name);
	assert_int_equal(mkdirat(warmfd, name, 0700), 0);
	r = rt_warm_take(warmfd, name, 1000, &lock, &e);
	assert_int_equal(r, 0);
	rt_warm_release(lock);
	close(warmfd);
}

/*
 * A taker that found no template and lost the race for exclusive (others
 * hold it shared) still sees the template once it is there: it waits
 * shared, not for exclusive, which the others' shared locks would hold
 * off for as long as they resume.
 */
static void test_take_sees_a_template_made_meanwhile(void **state)
{
	struct rt_warm_shape sh = { .mem_mib = 64, .cpus = 1 };
	char name[RT_WARM_NAME_MAX], path[256];
	int warmfd, holder, status, hp[2], fd;
	pid_t h, w;

	(void)state;
	assert_int_equal(rt_warm_dir_open(top, &warmfd, &e), 0);
	rt_warm_name(files, &sh, name);
	assert_int_equal(pipe(hp), 0);
	h = fork();
	assert_true(h >= 0);
	if (h == 0) { /* a VM resuming: holds the lock shared until told */
		char c;

		holder = openat(warmfd, strcat(strcpy(path, name), ".lock"),
				O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (holder < 0 || flock(holder, LOCK_SH) < 0)
			_exit(2);
		close(hp[1]);
		_exit(read(hp[0], &c, 1) < 0 ? 3 : 0);
	}
	close(hp[0]);
	usleep(100000);
	w = fork();
	assert_true(w >= 0);
	if (w == 0) {
		int lock, r = rt_warm_take(warmfd, name, 5000, &lock, &e);

		_exit(r == 1 ? 0 : 10 + (r < 0 ? 1 : 0));
	}
	usleep(300000); /* the taker found none, and no exclusive */
	/* made meanwhile (as a maker's install leaves it) */
	assert_int_equal(mkdirat(warmfd, name, 0700), 0);
	fd = openat(warmfd, strcat(strcpy(path, name), "/state"), O_WRONLY | O_CREAT | O_CLOEXEC,
		    0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(waitpid(w, &status, 0), w);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0); /* not a timeout behind the holder */
	close(hp[1]);
	assert_int_equal(waitpid(h, &status, 0), h);
	assert_int_equal(WEXITSTATUS(status), 0);
	close(warmfd);
}

static void test_dir_refusals(void **state)
{
	char path[128];
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/missing/root", top);
	assert_int_equal(rt_warm_dir_open(path, &fd, &e), -ENOENT);
	assert_non_null(strstr(e.msg, "--root"));
	assert_int_equal(fd, -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_name),
		cmocka_unit_test(test_wanted),
		cmocka_unit_test(test_cmdline),
		cmocka_unit_test_setup_teardown(test_take_and_install, setup, teardown),
		cmocka_unit_test_setup_teardown(test_take_sees_a_template_made_meanwhile, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_dir_refusals, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
