/*
 * confine_plan: what a confined process sees is decided here, so the plan
 * is checked against fake root filesystems: the runtime read-only, links
 * (merged /usr) recreated, /etc reduced to its allowlist (never passwd),
 * /workspace read-write, private /tmp, every mount point made before its
 * mount, and the switch of root last but for making it read-only.
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

#include "guest-init/agent/confine_plan.h"

struct fake_entry {
	const char *path;
	enum confine_kind kind;
	const char *link;
};

struct fake_fs {
	const struct fake_entry *e;
	size_t n;
	unsigned probes;
};

static enum confine_kind fake_probe(void *ctx, const char *path, char *link, size_t linksz)
{
	struct fake_fs *fs = ctx;

	fs->probes++;
	for (size_t i = 0; i < fs->n; i++) {
		if (strcmp(fs->e[i].path, path) != 0)
			continue;
		/* As confine_probe: a target too long for the buffer is absent. */
		if (fs->e[i].kind == CONFINE_LINK && link &&
		    snprintf(link, linksz, "%s", fs->e[i].link) >= (int)linksz)
			return CONFINE_ABSENT;
		return fs->e[i].kind;
	}
	return CONFINE_ABSENT;
}

/* A Debian bookworm root: merged /usr, the usual /etc. */
static const struct fake_entry debian[] = {
	{ "/usr", CONFINE_DIR, NULL },
	{ "/bin", CONFINE_LINK, "usr/bin" },
	{ "/sbin", CONFINE_LINK, "usr/sbin" },
	{ "/lib", CONFINE_LINK, "usr/lib" },
	{ "/lib64", CONFINE_LINK, "usr/lib64" },
	{ "/opt", CONFINE_DIR, NULL },
	{ "/home", CONFINE_DIR, NULL },
	{ "/root", CONFINE_DIR, NULL },
	{ "/etc/passwd", CONFINE_NODE, NULL },
	{ "/etc/shadow", CONFINE_NODE, NULL },
	{ "/etc/group", CONFINE_NODE, NULL },
	{ "/etc/hosts", CONFINE_NODE, NULL },
	{ "/etc/resolv.conf", CONFINE_NODE, NULL },
	{ "/etc/ssl", CONFINE_DIR, NULL },
	{ "/etc/alternatives", CONFINE_DIR, NULL },
	{ "/etc/localtime", CONFINE_LINK, "/usr/share/zoneinfo/Etc/UTC" },
	{ "/etc/os-release", CONFINE_LINK, "../usr/lib/os-release" },
	{ "/etc/ld.so.cache", CONFINE_NODE, NULL },
	{ "/workspace", CONFINE_DIR, NULL },
	{ "/dev/null", CONFINE_NODE, NULL },
	{ "/dev/zero", CONFINE_NODE, NULL },
	{ "/dev/full", CONFINE_NODE, NULL },
	{ "/dev/random", CONFINE_NODE, NULL },
	{ "/dev/urandom", CONFINE_NODE, NULL },
	{ "/dev/tty", CONFINE_NODE, NULL },
	{ "/dev/pts", CONFINE_DIR, NULL },
	{ "/dev/vda", CONFINE_NODE, NULL },
	{ "/run/kiln-run", CONFINE_DIR, NULL },
	{ "/run/kiln-run/run.py", CONFINE_NODE, NULL },
	{ "/run/kiln-run/result.sh", CONFINE_NODE, NULL },
	{ "/run/kiln-run/prelude.js", CONFINE_NODE, NULL },
	{ "/run/kiln-run/r.abc123", CONFINE_DIR, NULL },
	{ "/run/kiln-run/r.other1", CONFINE_DIR, NULL },
	{ "/run/kiln-vsock.sock", CONFINE_NODE, NULL },
};

/* The minimal (busybox) image: real directories, no /usr/lib. */
static const struct fake_entry minimal[] = {
	{ "/bin", CONFINE_DIR, NULL },         { "/sbin", CONFINE_DIR, NULL },
	{ "/usr", CONFINE_DIR, NULL },         { "/etc", CONFINE_DIR, NULL },
	{ "/etc/passwd", CONFINE_NODE, NULL }, { "/workspace", CONFINE_DIR, NULL },
	{ "/dev/null", CONFINE_NODE, NULL },   { "/dev/pts", CONFINE_DIR, NULL },
};

#define FS(a)                                    \
	{                                        \
		a, sizeof(a) / sizeof((a)[0]), 0 \
	}
#define R CONFINE_ROOT

static struct confine_plan plan; /* 87 KiB: off the stack */

static const struct confine_step *find(enum confine_op op, const char *dst)
{
	for (size_t i = 0; i < plan.n; i++)
		if (plan.step[i].op == op && strcmp(plan.step[i].dst, dst) == 0)
			return &plan.step[i];
	return NULL;
}

static size_t index_of(const struct confine_step *s)
{
	assert_non_null(s);
	return (size_t)(s - plan.step);
}

/* No step names the path, as source or target. */
static void assert_unseen(const char *path)
{
	char in_root[CONFINE_PATH_MAX];

	snprintf(in_root, sizeof(in_root), R "%s", path);
	for (size_t i = 0; i < plan.n; i++) {
		if (strcmp(plan.step[i].src, path) == 0 || strcmp(plan.step[i].dst, in_root) == 0)
			fail_msg("step %zu shows %s", i, path);
	}
}

/* A run sees the helpers (read-only) and its own directory (writable:
 * its result file), never another run's; a run_dir elsewhere is refused. */
static void test_run_sees_its_own_directory_only(void **state)
{
	static const char *const bad[] = {
		"/run/kiln-run/",
		"/run/kiln-run",
		"/run/kiln-run/r.abc123/x",
		"/run/kiln-run/../kiln-run/r.abc123",
		"/tmp/r.abc123",
		"/run/kiln-run/r.missing",
		"/run/kiln-runx/r.abc123",
		"/run/kiln-run/..",
		"/run/kiln-run/.",
	};
	struct fake_fs fs = FS(debian);

	(void)state;
	assert_int_equal(confine_plan_build(&plan, fake_probe, &fs, "/run/kiln-run/r.abc123"), 0);
	assert_non_null(find(CONFINE_MKDIR, R "/run"));
	assert_non_null(find(CONFINE_MKDIR, R "/run/kiln-run"));
	assert_null(
		find(CONFINE_BIND, R "/run/kiln-run")); /* the directory itself is the view's own */
	assert_string_equal(find(CONFINE_BIND, R "/run/kiln-run/r.abc123")->src,
			    "/run/kiln-run/r.abc123");
	assert_null(find(CONFINE_READONLY, R "/run/kiln-run/r.abc123"));
	assert_true(index_of(find(CONFINE_NOSUID, R "/run/kiln-run/r.abc123")) >
		    index_of(find(CONFINE_BIND, R "/run/kiln-run/r.abc123")));
	for (const char *const *h =
		     (const char *const[]){ "/run.py", "/result.sh", "/prelude.js", NULL };
	     *h; h++) {
		char dst[CONFINE_PATH_MAX];

		snprintf(dst, sizeof(dst), R "/run/kiln-run%s", *h);
		assert_non_null(find(CONFINE_BIND, dst));
		assert_non_null(find(CONFINE_READONLY, dst));
	}
	assert_unseen("/run/kiln-run/r.other1");
	assert_unseen("/run/kiln-vsock.sock");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(confine_plan_build(&plan, fake_probe, &fs, bad[i]), -EINVAL);
}

/* With the egress CA installed, its two files are shown read-only (the
 * environment names them); nothing else of /run/kiln. Without it, none. */
static void test_trust_files_shown(void **state)
{
	static const struct fake_entry with_ca[] = {
		{ "/usr", CONFINE_DIR, NULL },
		{ "/workspace", CONFINE_DIR, NULL },
		{ "/run/kiln", CONFINE_DIR, NULL },
		{ "/run/kiln/ca-bundle.pem", CONFINE_NODE, NULL },
		{ "/run/kiln/egress-ca.pem", CONFINE_NODE, NULL },
		{ "/run/kiln/other", CONFINE_NODE, NULL },
	};
	struct fake_fs fs = FS(with_ca), none = FS(minimal);

	(void)state;
	assert_int_equal(confine_plan_build(&plan, fake_probe, &fs, NULL), 0);
	assert_true(index_of(find(CONFINE_MKDIR, R "/run")) <
		    index_of(find(CONFINE_MKDIR, R "/run/kiln")));
	for (const char *const *f = (const char *const[]){ "/run/kiln/ca-bundle.pem",
							   "/run/kiln/egress-ca.pem", NULL };
	     *f; f++) {
		char dst[CONFINE_PATH_MAX];

		snprintf(dst, sizeof(dst), R "%s", *f);
		assert_string_equal(find(CONFINE_BIND, dst)->src, *f);
		assert_true(index_of(find(CONFINE_READONLY, dst)) >
			    index_of(find(CONFINE_BIND, dst)));
	}
	assert_null(find(CONFINE_BIND, R "/run/kiln"));
	assert_unseen("/run/kiln/other");
	assert_int_equal(confine_plan_build(&plan, fake_probe, &none, NULL), 0);
	assert_unseen("/run/kiln/ca-bundle.pem");
	assert_null(find(CONFINE_MKDIR, R "/run/kiln"));
}

static void test_debian_view(void **state)
{
	struct fake_fs fs = FS(debian);
	const struct confine_step *s;

	(void)state;
	assert_int_equal(confine_plan_build(&plan, fake_probe, &fs, NULL), 0);
	/* Namespace first, nothing propagating back to the agent's mounts. */
	assert_int_equal(plan.step[0].op, CONFINE_UNSHARE);
	assert_int_equal(plan.step[1].op, CONFINE_PRIVATE);
	assert_string_equal(plan.step[1].dst, "/");
	s = find(CONFINE_MOUNT, R);
	assert_non_null(s);
	assert_string_equal(s->fstype, "tmpfs");
	assert_true(index_of(find(CONFINE_MKDIR, R)) < index_of(s));

	/* The runtime: /usr bound read-only, the merged-/usr links recreated. */
	s = find(CONFINE_BIND, R "/usr");
	assert_non_null(s);
	assert_string_equal(s->src, "/usr");
	assert_int_equal(s->flags & MS_REC, 0); /* read-only covers all of it */
	assert_true(index_of(find(CONFINE_READONLY, R "/usr")) > index_of(s));
	assert_string_equal(find(CONFINE_SYMLINK, R "/bin")->src, "usr/bin");
	assert_string_equal(find(CONFINE_SYMLINK, R "/lib64")->src, "usr/lib64");
	assert_null(find(CONFINE_BIND, R "/bin"));
	assert_non_null(find(CONFINE_READONLY, R "/opt"));

	/* /etc: the allowlist only. */
	assert_non_null(find(CONFINE_MKDIR, R "/etc"));
	assert_non_null(find(CONFINE_FILE, R "/etc/hosts"));
	assert_string_equal(find(CONFINE_BIND, R "/etc/hosts")->src, "/etc/hosts");
	assert_non_null(find(CONFINE_READONLY, R "/etc/hosts"));
	assert_non_null(find(CONFINE_MKDIR, R "/etc/ssl"));
	assert_non_null(find(CONFINE_READONLY, R "/etc/alternatives"));
	assert_string_equal(find(CONFINE_SYMLINK, R "/etc/localtime")->src,
			    "/usr/share/zoneinfo/Etc/UTC");
	assert_non_null(find(CONFINE_READONLY, R "/etc/ld.so.cache"));
	assert_unseen("/etc/passwd");
	assert_unseen("/etc/shadow");
	assert_unseen("/etc/group");
	assert_unseen("/home");
	assert_unseen("/root");
	assert_unseen("/dev/vda");
	assert_unseen("/sys");

	/* Nothing of /run for an exec: not the runs' directories, not the agent's sockets. */
	assert_null(find(CONFINE_MKDIR, R "/run"));
	assert_unseen("/run/kiln-run");
	assert_unseen("/run/kiln-run/r.abc123");
	assert_unseen("/run/kiln-vsock.sock");

	/* /workspace read-write with its submounts; /tmp private. */
	s = find(CONFINE_BIND, R "/workspace");
	assert_non_null(s);
	assert_string_equal(s->src, "/workspace");
	assert_int_equal(s->flags, MS_REC);
	assert_null(find(CONFINE_READONLY, R "/workspace"));
	/* ... and nosuid, nodev, submounts too: guest root's set-uid program
	 * or device node there is no way out of the view. */
	assert_true(index_of(find(CONFINE_NOSUID, R "/workspace")) > index_of(s));
	s = find(CONFINE_MOUNT, R "/tmp");
	assert_string_equal(s->fstype, "tmpfs");
	assert_string_equal(s->data, "mode=1777");
	assert_int_equal(s->flags, MS_NOSUID | MS_NODEV);
	assert_string_equal(find(CONFINE_MOUNT, R "/dev/shm")->data, "mode=1777");

	/* /dev: the harmless nodes, the terminals, the /proc links. */
	assert_string_equal(find(CONFINE_MOUNT, R "/dev")->fstype, "tmpfs");
	assert_true(index_of(find(CONFINE_MOUNT, R "/dev")) <
		    index_of(find(CONFINE_FILE, R "/dev/null")));
	assert_string_equal(find(CONFINE_BIND, R "/dev/urandom")->src, "/dev/urandom");
	assert_string_equal(find(CONFINE_BIND, R "/dev/pts")->src, "/dev/pts");
	assert_string_equal(find(CONFINE_SYMLINK, R "/dev/ptmx")->src, "pts/ptmx");
	assert_string_equal(find(CONFINE_SYMLINK, R "/dev/fd")->src, "/proc/self/fd");
	s = find(CONFINE_MOUNT, R "/proc");
	assert_string_equal(s->fstype, "proc");
	assert_string_equal(s->data, "hidepid=invisible");

	/* Then the switch, and the new root made read-only. */
	assert_int_equal(plan.step[plan.n - 2].op, CONFINE_PIVOT);
	assert_string_equal(plan.step[plan.n - 2].dst, R);
	assert_int_equal(plan.step[plan.n - 1].op, CONFINE_READONLY);
	assert_string_equal(plan.step[plan.n - 1].dst, "/");
}

/* Every bind and mount lands on a mount point an earlier step made, inside
 * the new root; everything but the first steps and the last happens there. */
static void assert_well_formed(void)
{
	for (size_t i = 0; i < plan.n; i++) {
		const struct confine_step *s = &plan.step[i];
		bool found = false;

		if (s->op == CONFINE_UNSHARE || s->op == CONFINE_PRIVATE ||
		    s->op == CONFINE_PIVOT || i == plan.n - 1)
			continue;
		assert_memory_equal(s->dst, R, strlen(R));
		if (s->op != CONFINE_BIND && s->op != CONFINE_MOUNT)
			continue;
		for (size_t j = 0; j < i && !found; j++)
			found = (plan.step[j].op == CONFINE_MKDIR ||
				 plan.step[j].op == CONFINE_FILE) &&
				strcmp(plan.step[j].dst, s->dst) == 0;
		if (!found)
			fail_msg("step %zu mounts on %s, which no earlier step made", i, s->dst);
		/* A bind outside /dev (whose nodes and terminals are the
		 * guest's own) is then made read-only or nosuid: no set-uid
		 * program anywhere in the view takes effect. */
		if (s->op != CONFINE_BIND || !strncmp(s->dst, R "/dev/", strlen(R "/dev/")))
			continue;
		found = false;
		for (size_t j = i + 1; j < plan.n && !found; j++)
			found = (plan.step[j].op == CONFINE_READONLY ||
				 plan.step[j].op == CONFINE_NOSUID) &&
				strcmp(plan.step[j].dst, s->dst) == 0;
		if (!found)
			fail_msg("step %zu shows %s with set-uid programs taking effect (neither read-only nor nosuid)",
				 i, s->dst);
	}
}

static void test_minimal_view_and_shape(void **state)
{
	struct fake_fs fs = FS(minimal);
	struct fake_fs deb = FS(debian);

	(void)state;
	assert_int_equal(confine_plan_build(&plan, fake_probe, &fs, NULL), 0);
	assert_well_formed();
	assert_non_null(find(CONFINE_READONLY, R "/bin"));
	assert_non_null(find(CONFINE_READONLY, R "/sbin"));
	assert_null(find(CONFINE_SYMLINK, R "/lib"));
	assert_null(find(CONFINE_BIND, R "/lib"));
	assert_null(find(CONFINE_BIND, R "/dev/tty")); /* absent there: left out */
	assert_unseen("/etc/passwd");
	assert_non_null(find(CONFINE_MKDIR, R "/etc")); /* an empty /etc */
	assert_null(find(CONFINE_MKDIR, R "/run"));     /* no helpers, no /run */
	assert_int_equal(confine_plan_build(&plan, fake_probe, &deb, NULL), 0);
	assert_well_formed();
}

/* Every entry of every list present: the plan still fits. */
static enum confine_kind all_dirs(void *ctx, const char *path, char *link, size_t linksz)
{
	(void)ctx;
	(void)link;
	(void)linksz;
	return strncmp(path, "/dev/", 5) == 0 && strcmp(path, "/dev/pts") != 0 ? CONFINE_NODE
									       : CONFINE_DIR;
}

static void test_fullest_root_fits(void **state)
{
	(void)state;
	assert_int_equal(confine_plan_build(&plan, all_dirs, NULL, NULL), 0);
	assert_int_equal(confine_plan_build(&plan, all_dirs, NULL, "/run/kiln-run/r.abcdef"), 0);
	assert_true(plan.n < CONFINE_STEPS_MAX);
	assert_well_formed();
}

static void test_workspace_must_exist(void **state)
{
	static const struct fake_entry file_ws[] = { { "/usr", CONFINE_DIR, NULL },
						     { "/workspace", CONFINE_NODE, NULL } };
	static const struct fake_entry link_ws[] = { { "/workspace", CONFINE_LINK, "/srv/ws" } };
	struct fake_fs none = FS(minimal), file = FS(file_ws), link = FS(link_ws);

	(void)state;
	none.n = 4; /* without /workspace and what follows it */
	assert_int_equal(confine_plan_build(&plan, fake_probe, &none, NULL), -ENOENT);
	assert_int_equal(confine_plan_build(&plan, fake_probe, &file, NULL), -ENOENT);
	/* A link is shown like the unconfined view shows it: followed. */
	assert_int_equal(confine_plan_build(&plan, fake_probe, &link, NULL), 0);
	assert_string_equal(find(CONFINE_BIND, R "/workspace")->src, "/workspace");
}

/* A link target that would not fit a step is left out, not cut short. */
static void test_long_link_target(void **state)
{
	static char target[CONFINE_PATH_MAX + 10];
	struct fake_entry e[] = { { "/workspace", CONFINE_DIR, NULL },
				  { "/bin", CONFINE_LINK, target } };
	struct fake_fs fs = FS(e);

	(void)state;
	memset(target, 'a', sizeof(target) - 1);
	assert_int_equal(confine_plan_build(&plan, fake_probe, &fs, NULL), 0);
	assert_null(find(CONFINE_SYMLINK, R "/bin"));
	target[CONFINE_PATH_MAX - 1] = 0;
	assert_int_equal(confine_plan_build(&plan, fake_probe, &fs, NULL), 0);
	assert_int_equal(strlen(find(CONFINE_SYMLINK, R "/bin")->src), CONFINE_PATH_MAX - 1);
}

static void test_describe(void **state)
{
	struct fake_fs fs = FS(debian);
	char buf[160];

	(void)state;
	assert_int_equal(confine_plan_build(&plan, fake_probe, &fs, NULL), 0);
	confine_step_describe(&plan, 0, buf, sizeof(buf));
	assert_string_equal(buf, "creating a mount namespace");
	confine_step_describe(&plan, index_of(find(CONFINE_MOUNT, R "/tmp")), buf, sizeof(buf));
	assert_string_equal(buf, "mounting tmpfs on /tmp");
	confine_step_describe(&plan, index_of(find(CONFINE_BIND, R "/usr")), buf, sizeof(buf));
	assert_string_equal(buf, "showing /usr");
	confine_step_describe(&plan, index_of(find(CONFINE_READONLY, R "/etc/hosts")), buf,
			      sizeof(buf));
	assert_string_equal(buf, "making /etc/hosts read-only");
	confine_step_describe(&plan, index_of(find(CONFINE_NOSUID, R "/workspace")), buf,
			      sizeof(buf));
	assert_string_equal(buf, "making /workspace nosuid and nodev");
	confine_step_describe(&plan, index_of(find(CONFINE_SYMLINK, R "/bin")), buf, sizeof(buf));
	assert_string_equal(buf, "creating link /bin -> usr/bin");
	confine_step_describe(&plan, index_of(find(CONFINE_MKDIR, R)), buf, sizeof(buf));
	assert_string_equal(buf, "creating directory " R);
	confine_step_describe(&plan, plan.n - 2, buf, sizeof(buf));
	assert_string_equal(buf, "switching to the new root");
	confine_step_describe(&plan, plan.n - 1, buf, sizeof(buf));
	assert_string_equal(buf, "making / read-only");
	confine_step_describe(&plan, plan.n + 5, buf, sizeof(buf));
	assert_non_null(strstr(buf, "step"));
	/* A short buffer is cut, never overrun. */
	confine_step_describe(&plan, 0, buf, 5);
	assert_string_equal(buf, "crea");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_debian_view),
		cmocka_unit_test(test_trust_files_shown),
		cmocka_unit_test(test_run_sees_its_own_directory_only),
		cmocka_unit_test(test_minimal_view_and_shape),
		cmocka_unit_test(test_fullest_root_fits),
		cmocka_unit_test(test_workspace_must_exist),
		cmocka_unit_test(test_long_link_target),
		cmocka_unit_test(test_describe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
