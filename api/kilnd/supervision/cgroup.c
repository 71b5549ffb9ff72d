/* The cgroup v2 directories of kilnd's VMMs, kilnd's policy over lib/cgroup; see cgroup.h. */
#include "api/kilnd/supervision/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api/kilnd/core/kilnd.h"
#include "api/kilnd/core/names.h"
#include "lib/cgroup/cgroup_tree.h"

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

/* Where kilnd's own advice goes after lib/cgroup's: the option and the
 * documentation of the parent kilnd uses. */
#define PARENT_HINT \
	"use a --cgroup-parent kilnd may write and whose levels hold no processes (beside kilnd's own cgroup), or run kilnd as root (docs/api.md)"

int cgroup_setup(char *parent, size_t cap, struct err *e)
{
	char procs[PATH_MAX + 16];
	struct err ce;
	size_t len;

	if (!parent[0])
		snprintf(parent, cap, "%s/kiln", CGROUP_MOUNT_DEFAULT);
	len = strlen(parent);
	while (len > 1 && parent[len - 1] == '/')
		parent[--len] = '\0';
	if (!cgroup_tree_path_clean(parent)) {
		err_set(e, EINVAL,
			"--cgroup-parent '%s': must be an absolute path without . or .. components",
			parent);
		return -1;
	}
	if (cgroup_tree_enable(parent, &ce) < 0) {
		err_set(e, EINVAL, "%s; %s", ce.msg, PARENT_HINT);
		return -1;
	}
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", parent);
	if (access(parent, W_OK) < 0 || access(procs, W_OK) < 0) {
		err_set(e, errno,
			"cgroup: %s is not writable for kilnd: %s (run kilnd as root, or delegate it: docs/api.md)",
			parent, strerror(errno));
		return -1;
	}
	remove_stale(parent);
	return 0;
}

int cgroup_create(const char *parent, const char *id, const struct cg_limits *l, uint64_t extra_mib,
		  char *path, size_t cap, int *procs_fd, struct api_err *e)
{
	char mem[32], pids[32], cpu[48];
	struct cgroup_limits cl = { mem, pids, cpu, true };
	struct err ce;

	*procs_fd = -1;
	if ((size_t)snprintf(path, cap, "%s/%s", parent, id) >= cap) {
		api_err_set(e, API_E_SPAWN_FAILED,
			    "cgroup: the path of sandbox %s's cgroup is too long (--cgroup-parent %.200s...)",
			    id, parent);
		return -1;
	}
	/* A cgroup of an earlier boot whose removal failed: start it over,
	 * so its event counters describe this VMM alone. */
	cgroup_leaf_remove(path);
	cg_limits_memory_max(l, extra_mib, mem, sizeof(mem));
	cg_limits_pids_max(l, pids, sizeof(pids));
	cg_limits_cpu_max(l, cpu, sizeof(cpu));
	/* An OOM kill takes the VMM and its passt together, never half a
	 * sandbox (cl.oom_group). */
	if (cgroup_leaf_create(path, &cl, procs_fd, &ce) < 0) {
		api_err_set(e, API_E_SPAWN_FAILED, "the sandbox's %s", ce.msg);
		return -1;
	}
	return 0;
}
