/* A cgroup that holds processes: made, entered, read, removed; see cgroup_leaf.h. */
#include "lib/cgroup/cgroup_leaf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/cgroup/cgroup_file.h"

/* How long cgroup_leaf_remove waits for killed processes to leave (10 ms steps). */
#define REMOVE_TRIES 200

/* l's values into dir's files; the name of the file that failed in *what. 0 or -errno. */
static int write_limits(const char *dir, const struct cgroup_limits *l, const char **what)
{
	int r;

	if (l->memory_max) {
		if ((r = cgroup_file_write(dir, *what = "memory.max", l->memory_max)))
			return r;
		/* Swapped-out memory must not escape memory.max (absent without swap accounting). */
		if ((r = cgroup_file_write(dir, *what = "memory.swap.max", "0")) && r != -ENOENT)
			return r;
	}
	if (l->oom_group && (r = cgroup_file_write(dir, *what = "memory.oom.group", "1")) &&
	    r != -ENOENT)
		return r;
	if (l->pids_max && (r = cgroup_file_write(dir, *what = "pids.max", l->pids_max)))
		return r;
	if (l->cpu_max && (r = cgroup_file_write(dir, *what = "cpu.max", l->cpu_max)))
		return r;
	return 0;
}

int cgroup_leaf_create(const char *dir, const struct cgroup_limits *l, int *procs_fd, struct err *e)
{
	char procs[PATH_MAX];
	const char *what = "cgroup.procs";
	int r;

	if (procs_fd)
		*procs_fd = -1;
	if ((size_t)snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir) >= sizeof(procs))
		return err_set(e, ENAMETOOLONG, "cgroup: the path %.200s... is too long", dir);
	if (mkdir(dir, 0755) < 0)
		return err_set(e, errno, "cgroup: cannot create %s: %s", dir, strerror(errno));
	r = write_limits(dir, l, &what);
	if (!r && procs_fd && (*procs_fd = open(procs, O_WRONLY | O_CLOEXEC)) < 0)
		r = -errno;
	if (!r)
		return 0;
	rmdir(dir);
	return err_set(e, -r, "cgroup: cannot set %s of %s: %s", what, dir, strerror(-r));
}

int cgroup_leaf_enter(const char *dir, struct err *e)
{
	int r = cgroup_file_write(dir, "cgroup.procs", "0");

	return r ? err_set(e, -r, "cgroup: cannot move into %s: %s", dir, strerror(-r)) : 0;
}

int cgroup_events_value(const char *text, const char *key, uint64_t *out)
{
	size_t klen = strlen(key);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		const char *v;
		char *end;

		if (strncmp(p, key, klen) || p[klen] != ' ')
			continue;
		v = p + klen + 1;
		if (*v < '0' || *v > '9')
			return -1;
		*out = strtoull(v, &end, 10);
		return *end == '\n' || *end == '\0' ? 0 : -1;
	}
	return -1;
}

void cgroup_leaf_events(const char *dir, struct cgroup_events *ev)
{
	char text[1024];

	*ev = (struct cgroup_events){ 0 };
	if (cgroup_file_read(dir, "memory.events", text, sizeof(text)) == 0 &&
	    cgroup_events_value(text, "oom_kill", &ev->oom_kill) < 0)
		ev->oom_kill = 0;
	if (cgroup_file_read(dir, "pids.events", text, sizeof(text)) == 0 &&
	    cgroup_events_value(text, "max", &ev->pids_max) < 0)
		ev->pids_max = 0;
}

/* Remove the empty cgroups below dir. */
static void remove_children(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char p[PATH_MAX];

	while (d && (de = readdir(d)))
		if (de->d_type == DT_DIR && de->d_name[0] != '.' &&
		    (size_t)snprintf(p, sizeof(p), "%s/%s", dir, de->d_name) < sizeof(p))
			rmdir(p);
	if (d)
		closedir(d);
}

int cgroup_leaf_remove(const char *dir)
{
	struct timespec step = { .tv_nsec = 10 * 1000 * 1000 };

	for (int i = 0; i < REMOVE_TRIES; i++) {
		if (rmdir(dir) == 0 || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			return -errno;
		/* Still populated: kill what is left (Linux 5.14+; before that
		 * the processes' own exit has to empty it) and look again. */
		if (i == 0)
			cgroup_file_write(dir, "cgroup.kill", "1");
		remove_children(dir);
		nanosleep(&step, NULL);
	}
	return -EBUSY;
}
