/* A container's host cgroup: made, entered, removed; see rt_cgroup.h. */
#include "api/runtime/rt_cgroup.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api/runtime/rt_plan.h"
#include "lib/cgroup/cgroup_leaf.h"
#include "lib/cgroup/cgroup_tree.h"

/* Whether path is one rt_plan_cgroup gives: clean, strictly below the mount. */
static bool below_mount(const char *path)
{
	size_t n = strlen(CGROUP_MOUNT_DEFAULT);

	return cgroup_tree_path_clean(path) && strncmp(path, CGROUP_MOUNT_DEFAULT, n) == 0 &&
		path[n] == '/' && path[n + 1];
}

/* The leaf, made afresh: an empty one left by an earlier create of the
 * same ID is removed first (rmdir takes only an empty directory). */
static int leaf_make(const char *dir, const struct rt_sizing *size, struct err *e)
{
	char mem[32], pids[16], cpu[48];
	struct cgroup_limits l = { mem, pids, cpu, false };
	int r;

	snprintf(mem, sizeof(mem), "%" PRId64, size->host_memory_max);
	snprintf(pids, sizeof(pids), "%d", RT_CGROUP_PIDS_MAX);
	if (size->cpu_quota > 0)
		snprintf(cpu, sizeof(cpu), "%" PRId64 " %" PRIu64, size->cpu_quota,
			 size->cpu_period);
	else
		snprintf(cpu, sizeof(cpu), "max %" PRIu64, size->cpu_period);
	r = cgroup_leaf_create(dir, &l, NULL, e);
	if (r != -EEXIST)
		return r;
	if (rmdir(dir) < 0)
		return err_set(e, EEXIST,
			       "the container's cgroup %s exists and is in use (%s): give the "
			       "container a cgroupsPath of its own",
			       dir, strerror(errno));
	return cgroup_leaf_create(dir, &l, NULL, e);
}

int rt_cgroup_make(const struct rt_cmd *c, const struct rt_config *cfg, struct rt_state_rec *rec,
		   struct err *e)
{
	char dir[RT_PATH_MAX], parent[RT_PATH_MAX];
	struct rt_sizing size;
	struct err ce;
	char *slash;

	if (c->g.cgroups_disabled)
		return 0;
	if (rt_plan_sizing(cfg, &size, e) < 0 ||
	    rt_plan_cgroup(cfg, c->id, c->g.systemd_cgroup, dir, sizeof(dir), e) < 0)
		return -EINVAL;
	if (!below_mount(dir))
		return err_set(e, EINVAL, "the container's cgroup %.200s is not below %s", dir,
			       CGROUP_MOUNT_DEFAULT);
	snprintf(parent, sizeof(parent), "%s", dir);
	slash = strrchr(parent, '/');
	*slash = '\0';
	if (cgroup_tree_enable(parent, &ce) < 0 || leaf_make(dir, &size, &ce) < 0)
		return err_set(e, EINVAL,
			       "%s (or pass --cgroup-manager disabled, Podman's --cgroups=disabled: "
			       "the VM then runs in the engine's cgroup)",
			       ce.msg);
	snprintf(rec->cgroup, sizeof(rec->cgroup), "%s", dir);
	return 0;
}

int rt_cgroup_enter(const struct rt_state_rec *rec, struct err *e)
{
	return rec->cgroup[0] ? cgroup_leaf_enter(rec->cgroup, e) : 0;
}

int rt_cgroup_remove(const struct rt_state_rec *rec, struct err *e)
{
	int r;

	if (!rec->cgroup[0] || !below_mount(rec->cgroup))
		return 0;
	r = cgroup_leaf_remove(rec->cgroup);
	return r ? err_set(e, -r, "container \"%s\": removing its cgroup %s: %s", rec->id,
			   rec->cgroup, strerror(-r))
		 : 0;
}
