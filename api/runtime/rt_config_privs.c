/*
 * What confines the container's process in config.json: process.rlimits,
 * capabilities, noNewPrivileges, oomScoreAdj; linux.sysctl, maskedPaths,
 * readonlyPaths (see rt_config.h). Checked against the bounds and names the
 * guest's agent checks again (api/proto's), so a config the guest would
 * refuse is refused here, naming the field.
 */
#include "api/runtime/rt_config.h"
#include "api/runtime/rt_config_read.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/json.h"

static int read_rlimit(const json_t *j, size_t i, struct agent_ctr_privs *pv, struct err *e)
{
	struct agent_rlimit *l = &pv->rlimits[i];
	char w[WHERE_MAX];
	const char *type;
	int64_t soft = 0, hard = 0;
	bool has;

	snprintf(w, sizeof(w), "process.rlimits[%zu]", i);
	if (!json_is_object(j))
		return cfg_not_a(j, "an object", w, e);
	if (cfg_get_string(j, "type", true, 32, w, &type, e) < 0 ||
	    cfg_get_int(j, "soft", w, 0, INT64_MAX, &has, &soft, e) < 0 ||
	    cfg_get_int(j, "hard", w, 0, INT64_MAX, &has, &hard, e) < 0)
		return -EINVAL;
	l->resource = agent_rlimit_parse(type);
	if (l->resource < 0)
		return err_set(e, EINVAL,
			       "config.json: %s.type \"%.32s\" is not a resource limit (RLIMIT_NOFILE, "
			       "...)",
			       w, type);
	for (size_t k = 0; k < i; k++)
		if (pv->rlimits[k].resource == l->resource)
			return err_set(e, EINVAL, "config.json: %s: %s is given twice", w, type);
	if (soft > hard)
		return err_set(e, EINVAL, "config.json: %s: soft %lld is above hard %lld", w,
			       (long long)soft, (long long)hard);
	l->soft = (uint64_t)soft;
	l->hard = (uint64_t)hard;
	return 0;
}

static int read_rlimits(const json_t *proc, struct agent_ctr_privs *pv, struct err *e)
{
	json_t *a;

	if (cfg_get_array(proc, "rlimits", AGENT_CTR_RLIMITS_MAX, "process", &a, e) < 0)
		return -EINVAL;
	for (size_t i = 0; a && i < json_array_size(a); i++) {
		if (read_rlimit(json_array_get(a, i), i, pv, e) < 0)
			return -EINVAL;
		pv->nrlimits = i + 1;
	}
	return 0;
}

static int read_cap_set(const json_t *caps, enum agent_cap_set s, uint64_t *mask, struct err *e)
{
	const char *key = agent_cap_set_name(s);
	char w[WHERE_MAX];
	json_t *a;

	*mask = 0;
	snprintf(w, sizeof(w), "process.capabilities.%s", key);
	if (cfg_get_array(caps, key, AGENT_CTR_CAPS_MAX, "process.capabilities", &a, e) < 0)
		return -EINVAL;
	for (size_t i = 0; a && i < json_array_size(a); i++) {
		json_t *v = json_array_get(a, i);
		int cap = json_is_string(v) ? agent_cap_parse(json_string_value(v)) : -1;

		if (!json_is_string(v))
			return err_set(e, EINVAL, "config.json: %s[%zu] is %s, not a string", w, i,
				       json_field_kind(v));
		if (cap < 0)
			return err_set(e, EINVAL,
				       "config.json: %s[%zu] \"%.40s\" is not a capability the guest "
				       "kernel has (CAP_CHOWN .. CAP_CHECKPOINT_RESTORE)",
				       w, i, json_string_value(v));
		*mask |= 1ull << cap;
	}
	return 0;
}

static int read_caps(const json_t *proc, struct agent_ctr_privs *pv, struct err *e)
{
	json_t *caps;

	if (cfg_get_object(proc, "capabilities", "process", &caps, e) < 0)
		return -EINVAL;
	if (!caps)
		return 0;
	for (int s = 0; s < AGENT_CAP_SETS; s++)
		if (read_cap_set(caps, (enum agent_cap_set)s, &pv->caps[s], e) < 0)
			return -EINVAL;
	pv->has_caps = true;
	return 0;
}

int rt_config_read_privs(const json_t *proc, struct rt_process *p, struct err *e)
{
	struct agent_ctr_privs *pv = &p->privs;
	int64_t v = 0;

	memset(pv, 0, sizeof(*pv));
	if (read_rlimits(proc, pv, e) < 0 || read_caps(proc, pv, e) < 0 ||
	    cfg_get_bool(proc, "noNewPrivileges", "process", &pv->no_new_privileges, e) < 0 ||
	    cfg_get_int(proc, "oomScoreAdj", "process", -1000, 1000, &pv->has_oom_score_adj, &v,
			e) < 0)
		return -EINVAL;
	pv->oom_score_adj = (int)v;
	return 0;
}

static int read_sysctl(const json_t *lx, struct rt_config *c, struct err *e)
{
	json_t *o, *v;
	const char *key;

	if (cfg_get_object(lx, "sysctl", "linux", &o, e) < 0)
		return -EINVAL;
	if (!o || !json_object_size(o))
		return 0;
	if (json_object_size(o) > AGENT_CTR_SYSCTL_MAX)
		return err_set(e, EINVAL,
			       "config.json: linux.sysctl has %zu entries, at most %d are allowed",
			       json_object_size(o), AGENT_CTR_SYSCTL_MAX);
	c->sysctl = calloc(json_object_size(o), sizeof(*c->sysctl));
	if (!c->sysctl)
		return err_set(e, ENOMEM, "config.json: out of memory reading linux.sysctl");
	json_object_foreach(o, key, v)
	{
		if (!agent_sysctl_key_valid(key))
			return err_set(e, EINVAL,
				       "config.json: linux.sysctl \"%.64s\" is not a sysctl name "
				       "('.'-separated letters, digits, '_' and '-')",
				       key);
		if (!json_is_string(v) || json_string_length(v) > AGENT_SYSCTL_VALUE_MAX ||
		    strlen(json_string_value(v)) != json_string_length(v))
			return err_set(e, EINVAL,
				       "config.json: linux.sysctl.%.64s is not a string of at most %d "
				       "bytes without NUL",
				       key, AGENT_SYSCTL_VALUE_MAX);
		c->sysctl[c->nsysctl++] = (struct agent_sysctl){ key, json_string_value(v) };
	}
	return 0;
}

static int read_paths(const json_t *lx, const char *key, const char ***out, size_t *n,
		      struct err *e)
{
	char w[WHERE_MAX];

	cfg_path_of(w, "linux", key);
	if (cfg_get_strings(lx, key, RT_PATH_MAX - 1, "linux", out, n, e) < 0)
		return -EINVAL;
	if (*n > AGENT_CTR_PATHS_MAX)
		return err_set(e, EINVAL, "config.json: %s has %zu entries, at most %d are allowed",
			       w, *n, AGENT_CTR_PATHS_MAX);
	for (size_t i = 0; i < *n; i++)
		if ((*out)[i][0] != '/' || cfg_has_dotdot((*out)[i]))
			return err_set(e, EINVAL,
				       "config.json: %s[%zu] \"%.100s\" is not an absolute path "
				       "without '..'",
				       w, i, (*out)[i]);
	return 0;
}

int rt_config_read_confine(const json_t *lx, struct rt_config *c, struct err *e)
{
	if (read_sysctl(lx, c, e) < 0 ||
	    read_paths(lx, "maskedPaths", &c->masked_paths, &c->nmasked, e) < 0)
		return -EINVAL;
	return read_paths(lx, "readonlyPaths", &c->readonly_paths, &c->nreadonly, e);
}
