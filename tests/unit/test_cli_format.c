/*
 * Unit tests of api/kiln/cli_format.c: kilnd's JSON answers as text for
 * people (without --json).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/kiln/cli_format.h"

static char *fmt(int (*f)(FILE *, const json_t *), const char *json, int *rc)
{
	json_t *v = json_loads(json, 0, NULL);
	char *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);

	assert_non_null(v);
	*rc = f(m, v);
	fclose(m);
	json_decref(v);
	return buf;
}

static void test_format(void **state)
{
	char *out;
	int rc;

	(void)state;
	out = fmt(cli_format_health,
		  "{\"status\":\"ok\",\"version\":\"0.1.0\",\"uptime_s\":42,\"sandboxes\":1}", &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(out, "ok  kilnd 0.1.0  up 42s  1 sandbox\n");
	free(out);
	out = fmt(cli_format_health,
		  "{\"status\":\"ok\",\"version\":\"0.1.0\",\"uptime_s\":42,\"sandboxes\":0,\"pools\":["
		  "{\"image\":\"py\",\"size\":4,\"ready\":3,\"hits\":12,\"misses\":1,\"last_error\":null},"
		  "{\"image\":\"m\",\"size\":1,\"ready\":0,\"hits\":0,\"misses\":0,\"last_error\":\"boot\\nfailed\"}]}",
		  &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(out,
			    "ok  kilnd 0.1.0  up 42s  0 sandboxes\n"
			    "pool py: 3/4 ready, 12 served, 1 missed\n"
			    "pool m: 0/1 ready, 0 served, 0 missed; filling failed: boot?failed\n");
	free(out);
	out = fmt(cli_format_health, "{\"status\":\"ok\"}", &rc);
	assert_int_equal(rc, -1);
	assert_string_equal(out, "");
	free(out);

	out = fmt(cli_format_images,
		  "{\"images\":[{\"name\":\"minimal\",\"path\":\"/i/m.ext4\",\"size_bytes\":33554432,\"source\":\"option\"},"
		  "{\"name\":\"py\",\"path\":\"/i/py.ext4\",\"size_bytes\":1048576,\"source\":\"oci\","
		  "\"digest\":\"sha256:2c09fe1eeac0e10d8bc6d003fb3835fe00dc23b6110ae87beb1343c13639455b\"}],"
		  "\"kernel\":{\"path\":\"/k\",\"size_bytes\":1000}}",
		  &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(out,
			    "NAME     SIZE        SOURCE     DIGEST               PATH\n"
			    "minimal  32.0 MiB    option     -                    /i/m.ext4\n"
			    "py       1.0 MiB     oci        sha256:2c09fe1eeac0  /i/py.ext4\n"
			    "kernel: /k (1000 B)\n");
	free(out);
	out = fmt(cli_format_images, "{\"images\":[{\"name\":\"x\"}]}", &rc);
	assert_int_equal(rc, -1);
	free(out);

	out = fmt(cli_format_list,
		  "{\"sandboxes\":[{\"id\":\"3f9a1c2b7d4e\",\"state\":\"running\",\"image\":\"minimal\",\"cpus\":2,"
		  "\"memory_mib\":256,\"created_at\":\"2024-11-22T10:00:00.123Z\",\"labels\":{\"job\":\"4\\u001b2\",\"t\":\"ci\"}}]}",
		  &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(
		out,
		"ID            STATE     IMAGE    CPUS  MEMORY    CREATED                   LABELS\n"
		"3f9a1c2b7d4e  running   minimal  2     256 MiB   2024-11-22T10:00:00.123Z  job=4?2,t=ci\n");
	free(out);
	out = fmt(cli_format_list, "{\"sandboxes\":{}}", &rc);
	assert_int_equal(rc, -1);
	free(out);

	out = fmt(cli_format_state,
		  "{\"id\":\"abc\",\"state\":\"crashed\",\"last_exit\":{\"reason\":\"boot_failed\",\"message\":\"kiln-vmm: no kvm\"}}",
		  &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(out, "abc crashed (boot_failed: kiln-vmm: no kvm)\n");
	free(out);

	char size[32];
	cli_format_size(size, sizeof(size), 1536);
	assert_string_equal(size, "1.5 KiB");
}

static void test_format_new(void **state)
{
	char *s;
	int rc;

	(void)state;
	s = fmt(cli_format_procs,
		"{\"processes\":[{\"id\":1,\"pid\":61,\"argv\":[\"sh\",\"-c\",\"echo \\u001b[2J\"],\"pty\":true,"
		"\"running\":false,\"exit_code\":null,\"signal\":15,\"timed_out\":false,\"output_bytes\":2048,"
		"\"attached\":0},{\"id\":2,\"pid\":70,\"argv\":[\"sleep\"],\"pty\":false,\"running\":true,"
		"\"exit_code\":null,\"signal\":null,\"timed_out\":false,\"output_bytes\":0,\"attached\":1}]}",
		&rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s,
			    "ID     PID     STATE      PTY  OUTPUT     ARGV\n"
			    "1      61      signal 15  yes  2.0 KiB    sh -c echo ?[2J\n"
			    "2      70      running    no   0 B        sleep\n");
	free(s);
	s = fmt(cli_format_procs, "{\"processes\":[{\"id\":1}]}", &rc);
	assert_int_equal(rc, -1);
	assert_string_equal(s, "");
	free(s);

	s = fmt(cli_format_exit, "{\"id\":1,\"exit_code\":3,\"signal\":null,\"timed_out\":false}",
		&rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s, "exit 3\n");
	free(s);
	s = fmt(cli_format_exit, "{\"id\":1,\"exit_code\":124,\"signal\":null,\"timed_out\":true}",
		&rc);
	assert_string_equal(s, "timed out\n");
	free(s);

	s = fmt(cli_format_port,
		"{\"host_address\":\"127.0.0.1\",\"host_port\":40123,\"guest_port\":8080,\"target\":\"tcp\"}",
		&rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s, "127.0.0.1:40123 -> guest port 8080 (tcp)\n");
	free(s);
	s = fmt(cli_format_ports,
		"{\"ports\":[{\"host_address\":\"127.0.0.1\",\"host_port\":40123,\"guest_port\":8080,"
		"\"connections\":1,\"connections_total\":7}]}",
		&rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s,
			    "HOST                  GUEST      TARGET  OPEN     TOTAL\n"
			    "127.0.0.1:40123       8080       -       1        7\n");
	free(s);

	s = fmt(cli_format_fs_list,
		"{\"path\":\"/srv\",\"entries\":[{\"path\":\"/srv/app\",\"kind\":\"dir\",\"size\":4096,\"mode\":1005,"
		"\"uid\":1000,\"gid\":1000,\"mtime\":\"2024-11-22T10:00:00.000Z\"},{\"path\":\"/srv/l\",\"kind\":"
		"\"symlink\",\"size\":3,\"mode\":511,\"uid\":0,\"gid\":0,\"mtime\":\"2024-11-22T10:00:00.000Z\","
		"\"target\":\"app\"}],\"count\":2,\"truncated\":false,\"skipped\":0}",
		&rc);
	assert_int_equal(rc, 0);
	assert_string_equal(
		s,
		"drwxr-xr-t  1000  1000         4096 2024-11-22T10:00:00.000Z /srv/app\n"
		"lrwxrwxrwx     0     0            3 2024-11-22T10:00:00.000Z /srv/l -> app\n");
	free(s);

	s = fmt(cli_format_stat,
		"{\"path\":\"/bin/sh\",\"kind\":\"file\",\"size\":7,\"mode\":2541,\"mode_octal\":\"04755\",\"uid\":0,"
		"\"gid\":0,\"nlink\":1,\"mtime\":\"2024-11-22T18:26:40.123Z\"}",
		&rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s,
			    "path:  /bin/sh\nkind:  file\nsize:  7\nmode:  4755 (-rwsr-xr-x)\nowner: 0:0\n"
			    "links: 1\nmtime: 2024-11-22T18:26:40.123Z\n");
	free(s);
	s = fmt(cli_format_stat, "{\"path\":\"/x\",\"kind\":\"file\"}", &rc);
	assert_int_equal(rc, -1);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_format_new),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
