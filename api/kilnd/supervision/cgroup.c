/* The cgroup v2 directories of kilnd's VMMs; see cgroup.h. */
#include "api/kilnd/supervision/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "api/kilnd/core/kilnd.h"
#include "api/kilnd/core/names.h"
#include "lib/base/fd_io.h"

/* What every VMM's cgroup limits, and io where offered: with memory, it
 * makes the kernel throttle a VMM's dirty page cache (snapshot and overlay
 * writes) against its own memory.max rather than the host's (cgroup
 * writeback). No io.max is set: see docs/security.md. */
static const struct {
	const char *name;
	bool required;
} controllers[] = {
	{ "memory", true }, { "pids", true }, { "cpu", true }, { "io", false }, { NULL, false }
};
/* How long cgroup_remove waits for killed processes to leave (10 ms steps). */
#define REMOVE_TRIES 200

/* dir/name's contents (at most cap - 1 bytes), NUL-terminated. 0 or -errno. */
static int read_file(const char *dir, const char *name, char *out, size_t cap)
{
	char p[PATH_MAX];
	ssize_t n;
	int fd;

	if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, name) >= sizeof(p))
		return -ENAMETOOLONG;
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = fd_io_read_full(fd, out, cap - 1);
	close(fd);
	if (n < 0)
		return (int)n;
	/* One line of words in most files: no newline in messages. */
	while (n > 0 && out[n - 1] == '\n')
		n--;
	out[n] = '\0';
	return 0;
}

/* Write value into dir/name in one write (cgroup files take one value per write). 0 or -errno. */
static int write_file(const char *dir, const char *name, const char *value)
{
	char p[PATH_MAX];
	size_t len = strlen(value);
	ssize_t n;
	int fd;

	if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, name) >= sizeof(p))
		return -ENAMETOOLONG;
	fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	do
		n = write(fd, value, len);
	while (n < 0 && errno == EINTR);
	n = n < 0 ? -errno : (size_t)n == len ? 0 : -EIO;
	close(fd);
	return (int)n;
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

static bool is_cgroup2(const char *path)
{
	struct statfs fs;

	return statfs(path, &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
}

/* One level of the chain: it exists, offers every controller and hands them to its children. */
static int enable_level(const char *dir, struct err *e)
{
	char have[512], on[512], plus[32];
	int r;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		err_set(e, errno,
			"cgroup: cannot create %s: %s (run kilnd as root, or give it a delegated subtree: --cgroup-parent, docs/api.md)",
			dir, strerror(errno));
		return -1;
	}
	if ((r = read_file(dir, "cgroup.controllers", have, sizeof(have))) ||
	    (r = read_file(dir, "cgroup.subtree_control", on, sizeof(on)))) {
		err_set(e, -r, "cgroup: cannot read the controllers of %s: %s", dir, strerror(-r));
		return -1;
	}
	for (size_t i = 0; controllers[i].name; i++) {
		const char *c = controllers[i].name;

		if (has_word(on, c))
			continue;
		if (!has_word(have, c)) {
			if (!controllers[i].required)
				continue;
			err_set(e, EINVAL,
				"cgroup: the %s controller is not available in %s (it offers: %.100s); enable it above, or pick another --cgroup-parent",
				c, dir, have[0] ? have : "none");
			return -1;
		}
		snprintf(plus, sizeof(plus), "+%s", c);
		r = write_file(dir, "cgroup.subtree_control", plus);
		if (r && !controllers[i].required)
			continue;
		if (r == -EBUSY) {
			err_set(e, EINVAL,
				"cgroup: cannot enable %s below %s: processes live in it, and a cgroup that holds processes cannot hand controllers to children; use a --cgroup-parent beside kilnd's own cgroup (docs/api.md)",
				c, dir);
			return -1;
		}
		if (r) {
			err_set(e, -r,
				"cgroup: cannot enable %s below %s: %s (run kilnd as root, or delegate the subtree to it: docs/api.md)",
				c, dir, strerror(-r));
			return -1;
		}
	}
	return 0;
}

/* Remove the cgroups a previous kilnd left empty; a populated one holds a VMM that outlived it. */
static void remove_stale(const char *parent)
{
	DIR *dir = opendir(parent);
	struct dirent *de;
	char p[PATH_MAX];

	if (!dir)
		return;
	while ((de = readdir(dir))) {
		if (de->d_type != DT_DIR || !sandbox_id_valid(de->d_name))
			continue;
		snprintf(p, sizeof(p), "%s/%s", parent, de->d_name);
		if (rmdir(p) == 0)
			kilnd_log("cgroup: removed %s, left by an earlier kilnd", p);
		else
			kilnd_log("cgroup: %s is in use (%s): a VMM that outlived the previous kilnd (reattached or ended below); left alone",
				  p, strerror(errno));
	}
	closedir(dir);
}

int cgroup_setup(char *parent, size_t cap, struct err *e)
{
	char level[PATH_MAX];
	size_t len, root_len = 0;

	if (!parent[0])
		snprintf(parent, cap, "%s/kiln", CGROUP_DEFAULT_MOUNT);
	len = strlen(parent);
	while (len > 1 && parent[len - 1] == '/')
		parent[--len] = '\0';
	if (parent[0] != '/' || strstr(parent, "/../") || strstr(parent, "/./") ||
	    strstr(parent, "//") || (len >= 3 && strcmp(parent + len - 3, "/..") == 0) ||
	    (len >= 2 && strcmp(parent + len - 2, "/.") == 0)) {
		err_set(e, EINVAL,
			"--cgroup-parent '%s': must be an absolute path without . or .. components",
			parent);
		return -1;
	}
	/* The mount: the shortest existing prefix on cgroup2. */
	for (size_t i = 1; i <= len; i++) {
		if (i < len && parent[i] != '/')
			continue;
		snprintf(level, sizeof(level), "%.*s", (int)i, parent);
		if (is_cgroup2(level)) {
			root_len = i;
			break;
		}
	}
	if (!root_len) {
		err_set(e, EINVAL,
			"cgroup: %s is not on a cgroup v2 file system (mount one: mount -t cgroup2 none %s, or pass --cgroup-parent)",
			parent, CGROUP_DEFAULT_MOUNT);
		return -1;
	}
	/* Every level from the mount down to parent hands the controllers on. */
	for (size_t i = root_len; i <= len; i++) {
		if (i < len && parent[i] != '/')
			continue;
		snprintf(level, sizeof(level), "%.*s", (int)i, parent);
		if (enable_level(level, e))
			return -1;
	}
	snprintf(level, sizeof(level), "%s/cgroup.procs", parent);
	if (access(parent, W_OK) < 0 || access(level, W_OK) < 0) {
		err_set(e, errno,
			"cgroup: %s is not writable for kilnd: %s (run kilnd as root, or delegate it: docs/api.md)",
			parent, strerror(errno));
		return -1;
	}
	remove_stale(parent);
	return 0;
}

int cgroup_create(const char *parent, const char *id, const struct cg_limits *l, char *path,
		  size_t cap, int *procs_fd, struct api_err *e)
{
	char v[64], procs[PATH_MAX + 16];
	const char *what;
	int r;

	*procs_fd = -1;
	if ((size_t)snprintf(path, cap, "%s/%s", parent, id) >= cap) {
		api_err_set(e, API_E_SPAWN_FAILED,
			    "cgroup: the path of sandbox %s's cgroup is too long (--cgroup-parent %.200s...)",
			    id, parent);
		return -1;
	}
	/* A cgroup of an earlier boot whose removal failed: start it over,
	 * so its event counters describe this VMM alone. */
	cgroup_remove(path);
	if (mkdir(path, 0755) < 0) {
		api_err_set(e, API_E_SPAWN_FAILED, "cannot create the sandbox's cgroup %s: %s",
			    path, strerror(errno));
		return -1;
	}
	cg_limits_memory_max(l, v, sizeof(v));
	if ((r = write_file(path, what = "memory.max", v)))
		goto fail;
	/* Swapped-out guest RAM must not escape memory.max (absent without swap accounting). */
	if ((r = write_file(path, what = "memory.swap.max", "0")) && r != -ENOENT)
		goto fail;
	/* An OOM kill takes the VMM and its passt together, never half a sandbox. */
	if ((r = write_file(path, what = "memory.oom.group", "1")) && r != -ENOENT)
		goto fail;
	cg_limits_pids_max(l, v, sizeof(v));
	if ((r = write_file(path, what = "pids.max", v)))
		goto fail;
	cg_limits_cpu_max(l, v, sizeof(v));
	if ((r = write_file(path, what = "cpu.max", v)))
		goto fail;
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", path);
	*procs_fd = open(procs, O_WRONLY | O_CLOEXEC);
	if (*procs_fd < 0) {
		r = -errno;
		what = "cgroup.procs";
		goto fail;
	}
	return 0;
fail:
	api_err_set(e, API_E_SPAWN_FAILED, "cannot set %s of the sandbox's cgroup %s: %s", what,
		    path, strerror(-r));
	rmdir(path);
	return -1;
}

void cgroup_read_events(const char *path, struct cg_events *ev)
{
	char text[1024];

	*ev = (struct cg_events){ 0 };
	if (read_file(path, "memory.events", text, sizeof(text)) == 0)
		cg_events_value(text, "oom_kill", &ev->oom_kill);
	if (read_file(path, "pids.events", text, sizeof(text)) == 0)
		cg_events_value(text, "max", &ev->pids_max);
}

/* Remove the empty cgroups below path (a kiln-passt-<pid> a kiln-vmm made for its passt, egress_subgroup.h). */
static void remove_children(const char *path)
{
	DIR *dir = opendir(path);
	struct dirent *de;
	char p[PATH_MAX];

	while (dir && (de = readdir(dir)))
		if (de->d_type == DT_DIR && de->d_name[0] != '.' &&
		    (size_t)snprintf(p, sizeof(p), "%s/%s", path, de->d_name) < sizeof(p))
			rmdir(p);
	if (dir)
		closedir(dir);
}

int cgroup_remove(const char *path)
{
	struct timespec step = { .tv_nsec = 10 * 1000 * 1000 };

	for (int i = 0; i < REMOVE_TRIES; i++) {
		if (rmdir(path) == 0 || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			return -errno;
		/* Still populated: kill what is left (Linux 5.14+; before that
		 * the VMM's own exit has to empty it) and look again. */
		if (i == 0)
			write_file(path, "cgroup.kill", "1");
		remove_children(path);
		nanosleep(&step, NULL);
	}
	return -EBUSY;
}
