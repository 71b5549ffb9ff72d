/* The levels above a cgroup, made and enabled; see cgroup_tree.h. */
#include "lib/cgroup/cgroup_tree.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/cgroup/cgroup_file.h"

/* What every cgroup below limits, and io where offered: with memory, it
 * makes the kernel throttle a cgroup's dirty page cache (a VMM's snapshot
 * and overlay writes) against its own memory.max rather than the host's
 * (cgroup writeback). */
static const struct {
	const char *name;
	bool required;
} controllers[] = {
	{ "memory", true }, { "pids", true }, { "cpu", true }, { "io", false }, { NULL, false }
};

bool cgroup_tree_path_clean(const char *path)
{
	const char *s = path;

	if (path[0] != '/')
		return false;
	while (*s == '/') {
		size_t n = strcspn(++s, "/");

		if (path[1] == '\0')
			return true; /* "/" itself */
		if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return false;
		s += n;
	}
	return true;
}

/* Whether word is one of the space-separated words of text. */
static bool has_word(const char *text, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = text; (p = strstr(p, word)); p += n)
		if ((p == text || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || p[n] == '\0'))
			return true;
	return false;
}

/* One controller handed on by dir, which offers have and enables on. */
static int enable_one(const char *dir, size_t i, const char *have, const char *on, struct err *e)
{
	const char *c = controllers[i].name;
	char plus[32];
	int r;

	if (has_word(on, c))
		return 0;
	if (!has_word(have, c))
		return controllers[i].required
			? err_set(e, EINVAL,
				  "cgroup: the %s controller is not available in %s (it offers: %.100s); enable it above",
				  c, dir, have[0] ? have : "none")
			: 0;
	snprintf(plus, sizeof(plus), "+%s", c);
	r = cgroup_file_write(dir, "cgroup.subtree_control", plus);
	if (!r || !controllers[i].required)
		return 0;
	if (r == -EBUSY)
		return err_set(
			e, EINVAL,
			"cgroup: cannot enable %s below %s: processes live in it, and a cgroup that holds processes cannot hand controllers to children",
			c, dir);
	return err_set(
		e, -r,
		"cgroup: cannot enable %s below %s: %s (run as root, or on a subtree delegated to this user)",
		c, dir, strerror(-r));
}

/* One level of the chain: it exists, offers every controller and hands them to its children. */
static int enable_level(const char *dir, struct err *e)
{
	char have[512], on[512];
	int r;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return err_set(
			e, errno,
			"cgroup: cannot create %s: %s (run as root, or on a subtree delegated to this user)",
			dir, strerror(errno));
	if ((r = cgroup_file_read(dir, "cgroup.controllers", have, sizeof(have))) ||
	    (r = cgroup_file_read(dir, "cgroup.subtree_control", on, sizeof(on))))
		return err_set(e, -r, "cgroup: cannot read the controllers of %s: %s", dir,
			       strerror(-r));
	for (size_t i = 0; controllers[i].name; i++)
		if ((r = enable_one(dir, i, have, on, e)) < 0)
			return r;
	return 0;
}

int cgroup_tree_enable(const char *dir, struct err *e)
{
	char level[PATH_MAX];
	size_t len = strlen(dir), root_len = 0;
	int r;

	if (!cgroup_tree_path_clean(dir) || len >= sizeof(level))
		return err_set(
			e, EINVAL,
			"cgroup: '%.200s': want an absolute path without empty, . or .. components",
			dir);
	/* The mount: the shortest existing prefix on cgroup2. */
	for (size_t i = 1; i <= len && !root_len; i++) {
		if (i < len && dir[i] != '/')
			continue;
		snprintf(level, sizeof(level), "%.*s", (int)i, dir);
		if (cgroup_file_is_v2(level))
			root_len = i;
	}
	if (!root_len)
		return err_set(
			e, EINVAL,
			"cgroup: %s is not on a cgroup v2 file system (mount one: mount -t cgroup2 none %s)",
			dir, CGROUP_MOUNT_DEFAULT);
	/* Every level from the mount down to dir hands the controllers on. */
	for (size_t i = root_len; i <= len; i++) {
		if (i < len && dir[i] != '/')
			continue;
		snprintf(level, sizeof(level), "%.*s", (int)i, dir);
		if ((r = enable_level(level, e)) < 0)
			return r;
	}
	return 0;
}
