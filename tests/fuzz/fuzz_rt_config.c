/*
 * fuzz_rt_config: a bundle's config.json and exec's process.json
 * (api/runtime/rt_config.c), written by an engine or planted by anyone
 * who can write the bundle.
 *
 * Input: selector byte (% 3: config.json, process.json, update's
 * resources), then the document.
 * Invariants: no crash or leak; a failure is -EINVAL (or -ENOMEM) with a
 * message; what is accepted holds what rt_config.h promises: a command
 * (args[0] non-empty), NULL-terminated lists, an absolute cwd, lists within RT_CONFIG_LIST_MAX,
 * every mount's destination absolute and every bind with a source, each
 * namespace type once and only a network namespace with a path, absolute
 * hook paths, umask within 0777, limits -1 or more, rlimits, capabilities,
 * sysctls, masked/read-only paths and seccomp rules within the guest
 * agent's own bounds and names. An accepted config
 * is also planned (api/runtime/rt_plan.c): the VM's size within kiln-vmm's
 * bounds, a host cgroup under /sys/fs/cgroup with no "." or ".."
 * component (either form), a pod role whose sandbox is a valid ID (its
 * own for a sandbox, another for a member), a kernel command line without quotes or
 * control bytes, one guest mount per config mount, binds within bounds.
 */
#include <errno.h>

#include "api/runtime/rt_config.h"
#include "api/runtime/rt_plan.h"
#include "api/runtime/rt_pod.h"
#include "fuzz.h"

/* What the guest's agent checks again (api/proto): the host must not
 * send what it would refuse. */
static void check_privs(const struct agent_ctr_privs *pv)
{
	FUZZ_ASSERT(pv->oom_score_adj >= -1000 && pv->oom_score_adj <= 1000);
	FUZZ_ASSERT(pv->nrlimits <= AGENT_CTR_RLIMITS_MAX);
	for (size_t i = 0; i < pv->nrlimits; i++) {
		FUZZ_ASSERT(agent_rlimit_name(pv->rlimits[i].resource));
		FUZZ_ASSERT(pv->rlimits[i].soft <= pv->rlimits[i].hard &&
			    pv->rlimits[i].hard <= AGENT_RLIMIT_MAX);
		for (size_t j = 0; j < i; j++)
			FUZZ_ASSERT(pv->rlimits[j].resource != pv->rlimits[i].resource);
	}
	for (int s = 0; s < AGENT_CAP_SETS; s++)
		FUZZ_ASSERT(!pv->caps[s] || (pv->has_caps && !(pv->caps[s] >> 41)));
}

static void check_process(const struct rt_process *p)
{
	FUZZ_ASSERT(p->nargs >= 1 && p->nargs <= RT_CONFIG_LIST_MAX && p->args[0][0]);
	FUZZ_ASSERT(p->nenv <= RT_CONFIG_LIST_MAX && p->ngids <= RT_CONFIG_LIST_MAX);
	FUZZ_ASSERT(p->cwd && p->cwd[0] == '/');
	FUZZ_ASSERT(!p->args[p->nargs] && (!p->env || !p->env[p->nenv])); /* for execve */
	for (size_t i = 0; i < p->nenv; i++)
		FUZZ_ASSERT(p->env[i][0] != '=' && strchr(p->env[i], '='));
	FUZZ_ASSERT(p->umask <= 0777 && p->rows <= 65535 && p->cols <= 65535);
	check_privs(&p->privs);
}

static void check_hooks(const struct rt_hook_list *l)
{
	FUZZ_ASSERT(l->n <= RT_CONFIG_HOOKS_MAX);
	for (size_t i = 0; i < l->n; i++)
		FUZZ_ASSERT(l->hooks[i].path[0] == '/' && l->hooks[i].timeout >= 0);
}

static void check_config(const struct rt_config *c)
{
	check_process(&c->process);
	FUZZ_ASSERT(!strncmp(c->oci_version, "1.", 2) && c->root_path[0]);
	FUZZ_ASSERT(c->nmounts <= RT_CONFIG_LIST_MAX && c->nns <= RT_NS_COUNT);
	for (size_t i = 0; i < c->nmounts; i++) {
		const char *d = c->mounts[i].destination;
		size_t n = strlen(d);

		FUZZ_ASSERT(d[0] == '/' && (!c->mounts[i].bind || c->mounts[i].source));
		FUZZ_ASSERT(!strstr(d, "/../") && (n < 3 || strcmp(d + n - 3, "/..")));
	}
	for (size_t i = 0; i < c->nns; i++) {
		FUZZ_ASSERT(rt_config_ns(c, c->ns[i].type) == &c->ns[i]);
		FUZZ_ASSERT(!c->ns[i].path ||
			    (c->ns[i].type == RT_NS_NETWORK && c->ns[i].path[0] == '/'));
	}
	FUZZ_ASSERT(c->resources.memory_limit >= -1 && c->resources.cpu_quota >= -1 &&
		    (c->resources.pids_limit == -1 || c->resources.pids_limit > 0));
	FUZZ_ASSERT(!c->hostname || strlen(c->hostname) <= RT_HOSTNAME_MAX);
	FUZZ_ASSERT(!c->annotations ||
		    json_object_size(c->annotations) <= RT_STATE_ANNOTATIONS_MAX);
	FUZZ_ASSERT(c->nsysctl <= AGENT_CTR_SYSCTL_MAX && c->nmasked <= AGENT_CTR_PATHS_MAX &&
		    c->nreadonly <= AGENT_CTR_PATHS_MAX);
	for (size_t i = 0; i < c->nsysctl; i++)
		FUZZ_ASSERT(agent_sysctl_key_valid(c->sysctl[i].key) &&
			    strlen(c->sysctl[i].value) <= AGENT_SYSCTL_VALUE_MAX);
	for (size_t i = 0; c->seccomp && i < c->seccomp->nrules; i++) {
		const struct agent_sc_rule *r = &c->seccomp->rules[i];

		FUZZ_ASSERT(c->seccomp->nrules <= AGENT_SECCOMP_RULES_MAX);
		FUZZ_ASSERT(r->nr <= AGENT_SECCOMP_NR_MAX && r->nargs <= AGENT_SECCOMP_ARGS_MAX &&
			    r->errno_ret <= AGENT_SECCOMP_ERRNO_MAX &&
			    agent_sc_action_name(r->action));
		for (size_t k = 0; k < r->nargs; k++)
			FUZZ_ASSERT(r->args[k].index <= 5 && agent_sc_op_name(r->args[k].op));
	}
	for (size_t i = 0; i < c->nmasked; i++)
		FUZZ_ASSERT(c->masked_paths[i][0] == '/');
	for (size_t i = 0; i < c->nreadonly; i++)
		FUZZ_ASSERT(c->readonly_paths[i][0] == '/');
	check_hooks(&c->prestart);
	check_hooks(&c->create_runtime);
	check_hooks(&c->poststart);
	check_hooks(&c->poststop);
}

static void check_cgroup(const char *p)
{
	FUZZ_ASSERT(!strncmp(p, "/sys/fs/cgroup/", 15));
	FUZZ_ASSERT(!strstr(p, "/../") && !strstr(p, "/./") && !strstr(p, "//"));
	FUZZ_ASSERT(strcmp(p + strlen(p) - 3, "/..") && strcmp(p + strlen(p) - 2, "/."));
	for (const char *s = p; *s; s++)
		FUZZ_ASSERT((unsigned char)*s >= 0x20 && *s != 0x7f);
}

static void check_plan(const struct rt_config *c)
{
	static struct rt_plan plan;
	struct rt_sizing s;
	char cg[RT_PATH_MAX];
	struct err e;

	if (rt_plan_sizing(c, &s, &e) == 0)
		FUZZ_ASSERT(s.mem_mib >= RT_RAM_MIN_MIB && s.mem_mib <= RT_RAM_MAX_MIB &&
			    s.cpus >= 1 && s.cpus <= RT_CPUS_MAX &&
			    (!s.kernel || (!strchr(s.kernel, '/') && s.kernel[0] != '.')));
	for (int systemd = 0; systemd < 2; systemd++)
		if (rt_plan_cgroup(c, "c1", systemd, cg, sizeof(cg), &e) == 0)
			check_cgroup(cg);
	struct rt_pod pod = { RT_POD_NONE, "" };
	if (rt_pod_decide(c->annotations, "c1", &pod, &e) == 0)
		FUZZ_ASSERT(pod.role == RT_POD_NONE ||
			    (pod.role == RT_POD_SANDBOX && !strcmp(pod.sandbox, "c1")) ||
			    (pod.role == RT_POD_MEMBER && strcmp(pod.sandbox, "c1") &&
			     rt_id_check(pod.sandbox, NULL) == 0));
	if (rt_plan_build(c, "c1", pod.role, &plan, &e) == 0) {
		FUZZ_ASSERT(!strpbrk(plan.cmdline, "\"'\n\r\t"));
		FUZZ_ASSERT(json_array_size(json_object_get(plan.ctr_create, "mounts")) ==
			    c->nmounts);
		FUZZ_ASSERT(plan.nbinds <= RT_BINDS_MAX && plan.nbinds <= c->nmounts);
		for (size_t i = 0; i < plan.nbinds; i++)
			FUZZ_ASSERT(plan.binds[i].source[0] == '/');
	}
	rt_plan_free(&plan);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rt_config c;
	struct rt_process p;
	const char *doc = (const char *)data + 1;
	size_t n = size ? size - 1 : 0;
	struct err e = { { 0 } };
	json_t *j = NULL;
	int r;

	if (!size)
		return 0;
	if (data[0] % 3 == 2) {
		struct rt_resources res;

		r = rt_resources_parse(doc, n, &res, &j, &e);
		if (!r)
			FUZZ_ASSERT(res.memory_limit >= -1 && res.cpu_quota >= -1 &&
				    (res.pids_limit == -1 || res.pids_limit > 0));
		json_decref(j);
	} else if (data[0] % 3 == 0) {
		r = rt_config_parse(doc, n, &c, &e);
		if (!r) {
			check_config(&c);
			check_plan(&c);
		}
		rt_config_free(&c);
	} else {
		r = rt_process_parse(doc, n, &p, &j, &e);
		if (!r)
			check_process(&p);
		rt_process_free(&p);
		json_decref(j);
	}
	FUZZ_ASSERT(!r || ((r == -EINVAL || r == -ENOMEM) && e.msg[0]));
	return 0;
}
