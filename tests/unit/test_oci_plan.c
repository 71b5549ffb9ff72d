/*
 * oci_plan: a container's filesystem is decided here, so the plan is
 * checked against fake mount tables: shares found by tag (escaped mount
 * points, bind mounts of a share's subdirectory and other filesystems
 * ignored), mounts in the request's order with their flags and data, a
 * bind never made writable, the default devices only in a tmpfs /dev,
 * pivot_root after every mount and read-only last; the PATH walk the child
 * runs without allocating.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>

#include "guest-init/agent/oci_plan.h"

/* A guest booted with kiln.oci and kiln.shares=r:/run/kiln/r,b:/run/kiln/b w. */
static const char mountinfo[] =
	"21 1 0:19 / / rw,relatime - tmpfs tmpfs rw,mode=755\n"
	"22 21 0:5 / /dev rw,nosuid - devtmpfs devtmpfs rw\n"
	"23 21 0:20 / /proc rw,nosuid,nodev,noexec - proc proc rw\n"
	"30 21 0:30 /sub /run/kiln/sub rw - virtiofs r rw\n"
	"31 21 0:30 / /run/kiln/r rw,nosuid,nodev shared:1 master:2 - virtiofs r rw\n"
	"32 21 0:31 / /run/kiln/b\\040w rw,nosuid,nodev - virtiofs b rw\n"
	"33 21 0:32 / /run/kiln/x rw - tmpfs b rw\n";

static struct agent_msg parse_ok(const char *line)
{
	struct agent_msg m;
	struct agent_err err;

	if (agent_msg_parse_line(line, strlen(line), AGENT_CTX_REQUEST, &m, &err))
		fail_msg("%s: %s", line, err.msg);
	return m;
}

static void test_share_find(void **state)
{
	char out[64];

	(void)state;
	assert_int_equal(oci_share_find(mountinfo, "r", out, sizeof(out)), 0);
	assert_string_equal(out, "/run/kiln/r"); /* not the bind of its /sub */
	assert_int_equal(oci_share_find(mountinfo, "b", out, sizeof(out)), 0);
	assert_string_equal(out, "/run/kiln/b w"); /* not the tmpfs whose source says b */
	assert_int_equal(oci_share_find(mountinfo, "tmpfs", out, sizeof(out)), -ENOENT);
	assert_int_equal(oci_share_find(mountinfo, "q", out, sizeof(out)), -ENOENT);
	assert_int_equal(oci_share_find(mountinfo, "r", out, 8), -ENAMETOOLONG);
	assert_int_equal(oci_share_find("", "r", out, sizeof(out)), -ENOENT);
	/* Lines cut short or without the separator are not mounts. */
	assert_int_equal(oci_share_find("31 21 0:30 / /x rw - virtiofs\n1 2 3 / /y rw virtiofs r rw",
					"r", out, sizeof(out)),
			 -ENOENT);
	/* A trailing lone backslash or a bad escape is taken as it is. */
	assert_int_equal(oci_share_find("1 2 0:1 / /a\\9\\ rw - virtiofs r rw", "r", out,
					sizeof(out)),
			 0);
	assert_string_equal(out, "/a\\9\\");
}

static void test_root_fstype(void **state)
{
	char out[32];

	(void)state;
	assert_int_equal(oci_root_fstype("1 1 0:2 / / rw - rootfs rootfs rw\n", out, sizeof(out)),
			 0);
	assert_string_equal(out, "rootfs");
	/* A tmpfs moved over the initramfs and entered: the top one counts. */
	assert_int_equal(oci_root_fstype("1 1 0:2 / / rw - rootfs rootfs rw\n"
					 "21 1 0:19 / / rw - tmpfs tmpfs rw\n",
					 out, sizeof(out)),
			 0);
	assert_string_equal(out, "tmpfs");
	assert_int_equal(oci_root_fstype(mountinfo, out, sizeof(out)), 0);
	assert_string_equal(out, "tmpfs");
	assert_int_equal(oci_root_fstype("22 21 0:5 / /dev rw - devtmpfs d rw\n", out, sizeof(out)),
			 -ENOENT);
}

/* Podman's default mounts, a volume and /etc/hosts, a read-only root. */
static const char podman[] =
	"{\"type\":\"ctr_create\",\"cid\":\"c1\",\"rootfs\":{\"share\":\"r\",\"readonly\":true},\"mounts\":["
	"{\"destination\":\"/proc\",\"type\":\"proc\",\"options\":[\"nosuid\",\"noexec\",\"nodev\"]},"
	"{\"destination\":\"/dev\",\"type\":\"tmpfs\",\"options\":[\"nosuid\",\"strictatime\",\"mode=755\",\"size=65536k\"]},"
	"{\"destination\":\"/dev/pts\",\"type\":\"devpts\",\"options\":[\"nosuid\",\"noexec\",\"newinstance\",\"ptmxmode=0666\",\"mode=0620\",\"gid=5\"]},"
	"{\"destination\":\"/sys\",\"type\":\"sysfs\",\"options\":[\"nosuid\",\"noexec\",\"nodev\",\"ro\"]},"
	"{\"destination\":\"/sys/fs/cgroup\",\"type\":\"cgroup2\",\"options\":[\"rprivate\",\"nosuid\",\"noexec\",\"nodev\",\"relatime\",\"ro\"]},"
	"{\"destination\":\"//data/\",\"type\":\"bind\",\"share\":\"b\",\"source\":\"rw/0\",\"options\":[\"rbind\",\"rw\",\"nosuid\"]},"
	"{\"destination\":\"/etc/hosts\",\"type\":\"bind\",\"share\":\"b\",\"source\":\"\",\"options\":[\"bind\",\"ro\",\"noatime\"]}],"
	"\"process\":{\"args\":[\"sh\"]}}";

static void test_plan_podman(void **state)
{
	struct agent_msg m = parse_ok(podman);
	struct agent_err err;
	struct oci_plan p;
	const struct oci_step *s;
	char what[256];

	(void)state;
	assert_int_equal(oci_plan_build(&p, &m.u.ctr_create, mountinfo, &err), 0);
	assert_int_equal(p.n, 11);
	s = p.step;
	assert_int_equal(s[0].op, OCI_ROOT);
	assert_string_equal(s[0].share, "/run/kiln/r");
	assert_string_equal(s[0].src, ".");
	assert_string_equal(s[0].dst, "");

	assert_int_equal(s[1].op, OCI_MOUNT);
	assert_string_equal(s[1].fstype, "proc");
	assert_string_equal(s[1].dst, "proc");
	assert_int_equal(s[1].flags, MS_NOSUID | MS_NOEXEC | MS_NODEV);
	assert_null(s[1].data);

	assert_string_equal(s[2].fstype, "tmpfs");
	assert_string_equal(s[2].dst, "dev");
	assert_int_equal(s[2].flags, MS_NOSUID | MS_STRICTATIME);
	assert_string_equal(s[2].data, "mode=755,size=65536k");

	assert_string_equal(s[3].fstype, "devpts");
	assert_string_equal(s[3].dst, "dev/pts");
	assert_string_equal(s[3].data, "newinstance,ptmxmode=0666,mode=0620,gid=5");

	assert_int_equal(s[4].flags, MS_NOSUID | MS_NOEXEC | MS_NODEV | MS_RDONLY);
	assert_string_equal(s[5].fstype, "cgroup2");
	assert_string_equal(s[5].dst, "sys/fs/cgroup");
	assert_int_equal(s[5].flags, MS_NOSUID | MS_NOEXEC | MS_NODEV | MS_RELATIME | MS_RDONLY);

	/* "rw" adds nothing to a bind (nor could it make one writable). */
	assert_int_equal(s[6].op, OCI_BIND);
	assert_string_equal(s[6].dst, "data/");
	assert_string_equal(s[6].share, "/run/kiln/b w");
	assert_string_equal(s[6].src, "rw/0");
	assert_true(s[6].recursive);
	assert_int_equal(s[6].attr_set, MOUNT_ATTR_NOSUID);
	assert_int_equal(s[6].attr_clr, 0);

	assert_string_equal(s[7].src, "."); /* the share itself */
	assert_false(s[7].recursive);
	assert_int_equal(s[7].attr_set, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOATIME);
	assert_int_equal(s[7].attr_clr, MOUNT_ATTR__ATIME);

	/* After every mount: the devices, the switch, then read-only. */
	assert_int_equal(s[8].op, OCI_DEVICES);
	assert_string_equal(s[8].dst, "dev");
	assert_int_equal(s[9].op, OCI_PIVOT);
	assert_int_equal(s[10].op, OCI_READONLY);

	oci_step_describe(&p, &m.u.ctr_create, 3, what, sizeof(what));
	assert_string_equal(what, "mounting devpts on /dev/pts (mounts[2])");
	oci_step_describe(&p, &m.u.ctr_create, 7, what, sizeof(what));
	assert_string_equal(what, "binding '.' of share 'b' on /etc/hosts (mounts[6])");
	oci_step_describe(&p, &m.u.ctr_create, 0, what, sizeof(what));
	assert_string_equal(what, "binding the root share 'r' (/run/kiln/r/.)");
	oci_step_describe(&p, &m.u.ctr_create, 99, what, sizeof(what));
	assert_string_equal(what, "step 99");
	oci_plan_free(&p);
	assert_int_equal(p.n, 0);
	agent_msg_free(&m);
}

static void test_plan_minimal(void **state)
{
	struct agent_msg m = parse_ok(
		"{\"type\":\"ctr_create\",\"cid\":\"c\",\"rootfs\":{\"share\":\"r\"},"
		"\"mounts\":[{\"destination\":\"/dev\",\"type\":\"devpts\"},"
		"{\"destination\":\"/x/dev\",\"type\":\"tmpfs\"}],"
		"\"process\":{\"args\":[\"sh\"]}}");
	struct agent_err err;
	struct oci_plan p;

	(void)state;
	assert_int_equal(oci_plan_build(&p, &m.u.ctr_create, mountinfo, &err), 0);
	/* No tmpfs on /dev: no devices made; not read-only. */
	assert_int_equal(p.n, 4);
	assert_int_equal(p.step[0].op, OCI_ROOT);
	assert_int_equal(p.step[1].op, OCI_MOUNT);
	assert_int_equal(p.step[2].op, OCI_MOUNT);
	assert_int_equal(p.step[3].op, OCI_PIVOT);
	oci_plan_free(&p);
	agent_msg_free(&m);
}

/* A pod's container: its root a directory beneath the pod's share. */
static void test_plan_root_beneath(void **state)
{
	struct agent_msg m = parse_ok(
		"{\"type\":\"ctr_create\",\"cid\":\"c\",\"rootfs\":{\"share\":\"r\","
		"\"source\":\"c2/root\",\"readonly\":true},\"process\":{\"args\":[\"sh\"]}}");
	struct agent_err err;
	struct oci_plan p;
	char what[256];

	(void)state;
	assert_int_equal(oci_plan_build(&p, &m.u.ctr_create, mountinfo, &err), 0);
	assert_int_equal(p.n, 3);
	assert_int_equal(p.step[0].op, OCI_ROOT);
	assert_string_equal(p.step[0].share, "/run/kiln/r");
	assert_string_equal(p.step[0].src, "c2/root");
	assert_int_equal(p.step[2].op, OCI_READONLY);
	oci_step_describe(&p, &m.u.ctr_create, 0, what, sizeof(what));
	assert_string_equal(what, "binding the root share 'r' (/run/kiln/r/c2/root)");
	oci_plan_free(&p);
	agent_msg_free(&m);
}

static void test_plan_refused(void **state)
{
	struct agent_msg m;
	struct agent_err err;
	struct oci_plan p;

	(void)state;
	m = parse_ok(
		"{\"type\":\"ctr_create\",\"cid\":\"c\",\"rootfs\":{\"share\":\"q\"},\"process\":{\"args\":[\"sh\"]}}");
	assert_int_equal(oci_plan_build(&p, &m.u.ctr_create, mountinfo, &err), -1);
	assert_int_equal(err.code, AGENT_E_NOT_FOUND);
	assert_non_null(strstr(err.msg, "rootfs: no virtio-fs share tagged 'q'"));
	assert_null(p.step);
	agent_msg_free(&m);

	m = parse_ok(
		"{\"type\":\"ctr_create\",\"cid\":\"c\",\"rootfs\":{\"share\":\"r\"},\"mounts\":["
		"{\"destination\":\"/a\",\"type\":\"tmpfs\",\"options\":[\"size=1k\"]},"
		"{\"destination\":\"/v\",\"type\":\"bind\",\"share\":\"tmpfs\",\"source\":\"x\"}],"
		"\"process\":{\"args\":[\"sh\"]}}");
	assert_int_equal(oci_plan_build(&p, &m.u.ctr_create, mountinfo, &err), -1);
	assert_int_equal(err.code, AGENT_E_NOT_FOUND);
	assert_non_null(strstr(err.msg, "mounts[1]: no virtio-fs share tagged 'tmpfs'"));
	agent_msg_free(&m);

	m = parse_ok(
		"{\"type\":\"ctr_create\",\"cid\":\"c\",\"rootfs\":{\"share\":\"r\"},\"mounts\":["
		"{\"destination\":\"//\",\"type\":\"tmpfs\"}],\"process\":{\"args\":[\"sh\"]}}");
	assert_int_equal(oci_plan_build(&p, &m.u.ctr_create, mountinfo, &err), -1);
	assert_int_equal(err.code, AGENT_E_BAD_FIELD);
	assert_non_null(strstr(err.msg, "mounts[0]: cannot mount over the container's root"));
	agent_msg_free(&m);
}

static void test_path_next(void **state)
{
	const char *cur = "/usr/bin::bin:/a-very-long-directory-name";
	char out[24];

	(void)state;
	assert_int_equal(oci_path_next(&cur, "sh", out, sizeof(out)), 1);
	assert_string_equal(out, "/usr/bin/sh");
	assert_int_equal(oci_path_next(&cur, "sh", out, sizeof(out)), 1);
	assert_string_equal(out, "sh"); /* an empty entry: the cwd */
	assert_int_equal(oci_path_next(&cur, "sh", out, sizeof(out)), 1);
	assert_string_equal(out, "bin/sh");
	/* The last one does not fit in 24 bytes: skipped, and done. */
	assert_int_equal(oci_path_next(&cur, "sh", out, sizeof(out)), 0);
	assert_int_equal(oci_path_next(&cur, "sh", out, sizeof(out)), 0);
	cur = "";
	assert_int_equal(oci_path_next(&cur, "x", out, sizeof(out)), 1);
	assert_string_equal(out, "x");
	assert_int_equal(oci_path_next(&cur, "x", out, sizeof(out)), 0);
}

static void test_env_path(void **state)
{
	const char *env[] = { "PATHX=/no", "HOME=/", "PATH=/bin", "PATH=/later" };

	(void)state;
	assert_string_equal(oci_env_path(env, 4), "/bin");
	assert_string_equal(oci_env_path(env, 2), AGENT_DEFAULT_PATH);
	assert_string_equal(oci_env_path(NULL, 0), AGENT_DEFAULT_PATH);
}

/* An exec joins every namespace the init has of its own, each once: all
 * but the PID one (the agent's fork puts it there), the mount namespace
 * last, so nothing after it resolves a path in the guest's tree. */
static void test_join(void **state)
{
	int seen = 0;
	size_t n = oci_join_count();

	(void)state;
	assert_int_equal(n, 4);
	for (size_t i = 0; i < n; i++) {
		int f = oci_join_flag(i);

		assert_true(f && (f & OCI_CTR_NAMESPACES) == f && !(f & seen));
		assert_int_equal(__builtin_popcount((unsigned)f), 1);
		seen |= f;
	}
	assert_int_equal(seen | CLONE_NEWPID, OCI_CTR_NAMESPACES);
	assert_int_equal(oci_join_flag(n - 1), CLONE_NEWNS);
	assert_string_equal(oci_join_name(n - 1), "mnt");
	assert_string_equal(oci_join_name(0), "ipc");
	assert_string_equal(oci_join_name(n), "?");
	assert_int_equal(oci_join_flag(n), 0);
	assert_false(OCI_CTR_NAMESPACES & CLONE_NEWNET); /* the guest's network */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_share_find),
		cmocka_unit_test(test_root_fstype),
		cmocka_unit_test(test_plan_podman),
		cmocka_unit_test(test_plan_minimal),
		cmocka_unit_test(test_plan_root_beneath),
		cmocka_unit_test(test_plan_refused),
		cmocka_unit_test(test_path_next),
		cmocka_unit_test(test_env_path),
		cmocka_unit_test(test_join),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
