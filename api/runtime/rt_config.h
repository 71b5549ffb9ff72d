/*
 * rt_config: a bundle's config.json (OCI runtime-spec config.md,
 * config-linux.md) and exec's process.json, read into what kiln-runtime
 * acts on, with the refusals of docs/oci-runtime.md: what a VM cannot
 * honour, or kiln does not do yet, is one line naming the field and why.
 *
 * Contract: pure (jansson only). The document is hostile: at most
 * RT_CONFIG_FILE_MAX bytes, strict JSON (a key given twice is refused),
 * every field kiln reads checked for type and bound (lists at most
 * RT_CONFIG_LIST_MAX, paths RT_PATH_MAX - 1 bytes, an argument or an
 * environment entry MAX_ARG_STRLEN). Fields kiln does not read are left
 * alone, as runc (a Go decoder) leaves them: engines add fields from
 * newer runtime-specs. JSON null is an absent field (Go writes nil
 * slices as null). Strings point into cfg->doc and live until
 * rt_config_free; every string list (args, env, options) is also
 * NULL-terminated, for execve. Results are 0, -EINVAL (e says which
 * field and why) or -ENOMEM.
 *
 * Accepted and not applied (docs/oci-runtime.md): apparmorProfile,
 * selinuxLabel, mountLabel (the guest kernel has no LSM), blockIO and
 * resources.devices (the guest kernel is the boundary); capabilities,
 * rlimits, seccomp, sysctl, maskedPaths, readonlyPaths, devices are kept
 * in doc for the guest's plan.
 */
#ifndef KILN_RT_CONFIG_H
#define KILN_RT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api/runtime/rt_state.h"
#include "lib/base/err.h"

#define RT_CONFIG_FILE_MAX (1u << 20) /* config.json, process.json */
#define RT_CONFIG_LIST_MAX 1024       /* args, env, mounts, gids, options, ... */
#define RT_CONFIG_HOOKS_MAX 64        /* per hook kind */
#define RT_CONFIG_ARG_MAX 131072      /* MAX_ARG_STRLEN: one argument or env entry */
#define RT_HOSTNAME_MAX 64            /* HOST_NAME_MAX */

enum rt_ns_type {
	RT_NS_PID,
	RT_NS_NETWORK,
	RT_NS_MOUNT,
	RT_NS_IPC,
	RT_NS_UTS,
	RT_NS_CGROUP,
	RT_NS_COUNT,
};

struct rt_namespace {
	enum rt_ns_type type;
	const char *path; /* NULL: a new one */
};

struct rt_mount {
	const char *destination; /* absolute, in the container */
	const char *type;        /* NULL: none given (a bind) */
	const char *source;      /* NULL: none */
	const char **options;
	size_t noptions;
	bool bind;     /* type "bind" or option bind/rbind */
	bool readonly; /* option ro */
};

struct rt_hook {
	const char *path; /* absolute, on the host */
	const char **args, **env;
	size_t nargs, nenv;
	int timeout; /* seconds, 0: none */
};

struct rt_hook_list {
	struct rt_hook *hooks;
	size_t n;
};

struct rt_process {
	const char **args; /* at least one, args[0] non-empty */
	size_t nargs;
	const char **env;
	size_t nenv;
	const char *cwd; /* absolute */
	uint32_t uid, gid;
	uint32_t *gids; /* additionalGids */
	size_t ngids;
	bool has_umask;
	uint32_t umask; /* 0..0777 */
	bool terminal;
	unsigned rows, cols; /* consoleSize, 0: not given */
	bool no_new_privileges;
	bool has_oom_score_adj;
	int oom_score_adj; /* -1000..1000 */
};

struct rt_resources {
	int64_t memory_limit; /* bytes, -1: none */
	int64_t cpu_quota;    /* microseconds per period, -1: none */
	bool cpu_quota_given; /* update: the quota was named (-1: make it unlimited) */
	uint64_t cpu_period;  /* microseconds, 0: none given */
	const char *cpuset_cpus;
	int64_t pids_limit; /* -1: none (0 and -1 in the config) */
};

struct rt_config {
	json_t *doc; /* owns every string below */
	const char *oci_version;
	const char *root_path; /* as given: relative to the bundle, or absolute */
	bool root_readonly;
	struct rt_process process;
	const char *hostname, *domainname; /* NULL: none */
	struct rt_mount *mounts;
	size_t nmounts;
	json_t *annotations; /* borrowed from doc; NULL: none */
	struct rt_namespace ns[RT_NS_COUNT];
	size_t nns;
	const char *cgroups_path; /* NULL: none */
	struct rt_resources resources;
	struct rt_hook_list prestart, create_runtime, poststart, poststop;
};

/* config.json's n bytes into *cfg (rt_config_free it, also on failure). */
int rt_config_parse(const char *buf, size_t n, struct rt_config *cfg, struct err *e);

void rt_config_free(struct rt_config *cfg);

/*
 * exec --process FILE: a process object alone (config.json's "process"),
 * checked as config.json's is; *doc owns p's strings (json_decref it,
 * also on failure; rt_process_free frees p's arrays).
 */
int rt_process_parse(const char *buf, size_t n, struct rt_process *p, json_t **doc, struct err *e);

void rt_process_free(struct rt_process *p);

/*
 * update --resources FILE: a LinuxResources object (config.json's
 * linux.resources) into *r, checked as config.json's; *doc owns r's
 * strings (json_decref it, also on failure).
 */
int rt_resources_parse(const char *buf, size_t n, struct rt_resources *r, json_t **doc,
		       struct err *e);

/* The namespace of type t in cfg, or NULL when the config names none
 * (the container shares the VM's, which is its own anyway). */
const struct rt_namespace *rt_config_ns(const struct rt_config *cfg, enum rt_ns_type t);

#endif
