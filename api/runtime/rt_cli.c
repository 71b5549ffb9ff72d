/* runc's command line; see rt_cli.h. */
#include "api/runtime/rt_cli.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "api/runtime/rt_state.h"
#include "lib/base/num_parse.h"

/* What a flag sets (USE), or nothing (IGNORE, REFUSE). */
enum opt {
	O_NONE,
	O_HELP,
	/* global */
	O_ROOT,
	O_LOG,
	O_LOG_FORMAT,
	O_DEBUG,
	O_SYSTEMD,
	O_CGROUP_MANAGER,
	O_VERSION,
	/* commands */
	O_BUNDLE,
	O_CONSOLE,
	O_PID_FILE,
	O_DETACH,
	O_FORCE,
	O_ALL,
	O_PRESERVE_FDS,
	O_PROCESS,
	O_TTY,
	O_CWD,
	O_ENV,
	O_USER,
	O_GIDS,
	O_NNP,
	O_CAP,
	O_FORMAT,
	O_QUIET,
	O_IMAGE,
	O_WORK,
	O_LEAVE,
	O_RESOURCES,
	O_MEMORY,
	O_CPU_QUOTA,
	O_CPU_PERIOD,
	O_CPUSET,
	O_PIDS,
	O_ROOTLESS_SPEC,
};

enum use { USE, IGNORE, REFUSE };

struct flag {
	const char *name; /* long, without dashes */
	char short_name;
	bool value; /* takes a value */
	enum use use;
	enum opt opt;
	const char *why; /* REFUSE: the reason, ending the one line */
};

#define F_END                                     \
	{                                         \
		NULL, 0, false, USE, O_NONE, NULL \
	}
#define F_HELP                                        \
	{                                             \
		"help", 'h', false, USE, O_HELP, NULL \
	}

static const struct flag global_flags[] = {
	{ "root", 0, true, USE, O_ROOT, NULL },
	{ "log", 0, true, USE, O_LOG, NULL },
	{ "log-format", 0, true, USE, O_LOG_FORMAT, NULL },
	{ "debug", 0, false, USE, O_DEBUG, NULL },
	{ "systemd-cgroup", 0, false, USE, O_SYSTEMD, NULL },
	{ "cgroup-manager", 0, true, USE, O_CGROUP_MANAGER, NULL }, /* crun's, Podman passes it */
	{ "criu", 0, true, IGNORE, O_NONE, NULL },                  /* kiln snapshots the VM */
	{ "rootless", 0, true, IGNORE, O_NONE, NULL },              /* go-runc --rootless=B */
	{ "version", 'v', false, USE, O_VERSION, NULL },
	F_HELP,
	F_END,
};

#define PRESERVE_FDS                                               \
	{                                                          \
		"preserve-fds", 0, true, USE, O_PRESERVE_FDS, NULL \
	}

static const struct flag create_flags[] = {
	{ "bundle", 'b', true, USE, O_BUNDLE, NULL },
	{ "console-socket", 0, true, USE, O_CONSOLE, NULL },
	{ "pid-file", 0, true, USE, O_PID_FILE, NULL },
	{ "no-pivot", 0, false, IGNORE, O_NONE, NULL }, /* the guest pivots always */
	{ "no-new-keyring", 0, false, IGNORE, O_NONE,
	  NULL },                                       /* the guest kernel's keyring is the VM's */
	{ "detach", 'd', false, IGNORE, O_NONE, NULL }, /* go-runc's; create always detaches */
	PRESERVE_FDS,
	F_HELP,
	F_END,
};

static const struct flag kill_flags[] = {
	{ "all", 'a', false, USE, O_ALL, NULL },
	F_HELP,
	F_END,
};

static const struct flag delete_flags[] = {
	{ "force", 'f', false, USE, O_FORCE, NULL },
	F_HELP,
	F_END,
};

static const struct flag exec_flags[] = {
	{ "console-socket", 0, true, USE, O_CONSOLE, NULL },
	{ "cwd", 0, true, USE, O_CWD, NULL },
	{ "env", 'e', true, USE, O_ENV, NULL },
	{ "tty", 't', false, USE, O_TTY, NULL },
	{ "user", 'u', true, USE, O_USER, NULL },
	{ "additional-gids", 'g', true, USE, O_GIDS, NULL },
	{ "process", 'p', true, USE, O_PROCESS, NULL },
	{ "detach", 'd', false, USE, O_DETACH, NULL },
	{ "pid-file", 0, true, USE, O_PID_FILE, NULL },
	{ "no-new-privs", 0, false, USE, O_NNP, NULL },
	{ "cap", 'c', true, USE, O_CAP, NULL },
	{ "process-label", 0, true, IGNORE, O_NONE, NULL }, /* the guest kernel has no LSM */
	{ "apparmor", 0, true, IGNORE, O_NONE, NULL },
	{ "no-subreaper", 0, false, IGNORE, O_NONE, NULL }, /* the exec shim is the waiter */
	{ "cgroup", 0, true, REFUSE, O_NONE,
	  "a sub-cgroup of the container is a guest cgroup kiln-runtime does not name; leave it out" },
	PRESERVE_FDS,
	F_HELP,
	F_END,
};

static const struct flag format_flags[] = {
	{ "format", 'f', true, USE, O_FORMAT, NULL },
	F_HELP,
	F_END,
};

static const struct flag list_flags[] = {
	{ "format", 'f', true, USE, O_FORMAT, NULL },
	{ "quiet", 'q', false, USE, O_QUIET, NULL },
	F_HELP,
	F_END,
};

/* criu's flags, shared by checkpoint and restore: kiln snapshots the
 * whole VM, so what tunes criu's dump means nothing; what asks for an
 * incremental or remote dump is refused. */
#define CRIU_IGNORED(n, v)                    \
	{                                     \
		n, 0, v, IGNORE, O_NONE, NULL \
	}
#define CRIU_FLAGS                                                                                     \
	{ "image-path", 0, true, USE, O_IMAGE, NULL },                                                 \
		{ "work-path", 0, true, USE, O_WORK, NULL },                                           \
		CRIU_IGNORED("tcp-established", false), CRIU_IGNORED("ext-unix-sk", false),            \
		CRIU_IGNORED("shell-job", false), CRIU_IGNORED("file-locks", false),                   \
		CRIU_IGNORED("manage-cgroups-mode", true), CRIU_IGNORED("empty-ns", true),             \
		CRIU_IGNORED("auto-dedup", false),                                                     \
		{ "lazy-pages",                                                                        \
		  0,                                                                                   \
		  false,                                                                               \
		  REFUSE,                                                                              \
		  O_NONE,                                                                              \
		  "lazy migration is criu's; kiln restores a VM's memory from its snapshot" },         \
		{ "parent-path", 0,                                                                    \
		  true,          REFUSE,                                                               \
		  O_NONE,        "incremental checkpoints are not supported; checkpoint without it" }, \
		{ "status-fd", 0, true, IGNORE, O_NONE, NULL },                                        \
	{                                                                                              \
		"page-server", 0, true, REFUSE, O_NONE,                                                \
			"a remote page server is criu's; checkpoint to a local --image-path"           \
	}

static const struct flag checkpoint_flags[] = {
	CRIU_FLAGS,
	{ "leave-running", 0, false, USE, O_LEAVE, NULL },
	{ "pre-dump", 0, false, REFUSE, O_NONE,
	  "pre-dumps are criu's; checkpoint once without --pre-dump" },
	F_HELP,
	F_END,
};

static const struct flag restore_flags[] = {
	CRIU_FLAGS,
	{ "bundle", 'b', true, USE, O_BUNDLE, NULL },
	{ "console-socket", 0, true, USE, O_CONSOLE, NULL },
	{ "detach", 'd', false, USE, O_DETACH, NULL },
	{ "pid-file", 0, true, USE, O_PID_FILE, NULL },
	{ "no-subreaper", 0, false, IGNORE, O_NONE, NULL },
	{ "no-pivot", 0, false, IGNORE, O_NONE, NULL },
	{ "lsm-profile", 0, true, IGNORE, O_NONE, NULL },
	{ "lsm-mount-context", 0, true, IGNORE, O_NONE, NULL },
	F_HELP,
	F_END,
};

#define UPDATE_IGNORED(n)                        \
	{                                        \
		n, 0, true, IGNORE, O_NONE, NULL \
	}
#define RDT_WHY "the guest has no Intel RDT; leave it out"

/* Resource fields a VM has no counterpart for (block I/O weights, CPU
 * shares between the guest's own processes, swap) are accepted and
 * ignored as the config's are (docs/oci-runtime.md). */
static const struct flag update_flags[] = {
	{ "resources", 'r', true, USE, O_RESOURCES, NULL },
	{ "memory", 0, true, USE, O_MEMORY, NULL },
	{ "cpu-quota", 0, true, USE, O_CPU_QUOTA, NULL },
	{ "cpu-period", 0, true, USE, O_CPU_PERIOD, NULL },
	{ "cpuset-cpus", 0, true, USE, O_CPUSET, NULL },
	{ "pids-limit", 0, true, USE, O_PIDS, NULL },
	UPDATE_IGNORED("blkio-weight"),
	UPDATE_IGNORED("cpu-share"),
	UPDATE_IGNORED("cpuset-mems"),
	UPDATE_IGNORED("memory-reservation"),
	UPDATE_IGNORED("memory-swap"),
	UPDATE_IGNORED("kernel-memory"),
	UPDATE_IGNORED("kernel-memory-tcp"),
	UPDATE_IGNORED("cpu-idle"),
	{ "cpu-rt-period", 0, true, REFUSE, O_NONE,
	  "real-time CPU time is the guest kernel's; leave it out" },
	{ "cpu-rt-runtime", 0, true, REFUSE, O_NONE,
	  "real-time CPU time is the guest kernel's; leave it out" },
	{ "l3-cache-schema", 0, true, REFUSE, O_NONE, RDT_WHY },
	{ "mem-bw-schema", 0, true, REFUSE, O_NONE, RDT_WHY },
	F_HELP,
	F_END,
};

static const struct flag spec_flags[] = {
	{ "bundle", 'b', true, USE, O_BUNDLE, NULL },
	{ "rootless", 0, false, USE, O_ROOTLESS_SPEC, NULL },
	F_HELP,
	F_END,
};

static const struct flag help_only[] = { F_HELP, F_END };

/* A command: its flags and positional arguments. An ID is the first
 * positional when `id`; `rest` commands (exec, ps) take everything after
 * the ID as their own arguments and do not reorder flags. */
struct verb_def {
	const char *name;
	enum rt_verb verb;
	const struct flag *flags;
	bool id;
	size_t max_pos; /* with the ID; rest: unbounded */
	bool rest;
	const char *usage;
};

static const struct verb_def verbs[] = {
	{ "create", RT_CREATE, create_flags, true, 1, false,
	  "create [--bundle DIR] [--pid-file F] [--console-socket SOCK] ID" },
	{ "start", RT_START, help_only, true, 1, false, "start ID" },
	{ "state", RT_STATE, help_only, true, 1, false, "state ID" },
	{ "kill", RT_KILL, kill_flags, true, 2, false, "kill [--all] ID [SIGNAL]" },
	{ "delete", RT_DELETE, delete_flags, true, 1, false, "delete [--force] ID" },
	{ "exec", RT_EXEC, exec_flags, true, 1, true,
	  "exec [--process F | flags] [--tty] [--detach] [--pid-file F] ID [COMMAND ARG...]" },
	{ "ps", RT_PS, format_flags, true, 1, true, "ps [--format table|json] ID [PS ARG...]" },
	{ "pause", RT_PAUSE, help_only, true, 1, false, "pause ID" },
	{ "resume", RT_RESUME, help_only, true, 1, false, "resume ID" },
	{ "checkpoint", RT_CHECKPOINT, checkpoint_flags, true, 1, false,
	  "checkpoint --image-path DIR [--work-path DIR] [--leave-running] ID" },
	{ "restore", RT_RESTORE, restore_flags, true, 1, false,
	  "restore --image-path DIR --bundle DIR [--detach] [--pid-file F] ID" },
	{ "update", RT_UPDATE, update_flags, true, 1, false,
	  "update [--resources FILE|-] [--memory N] [--cpu-quota N] [--cpu-period N] ID" },
	{ "features", RT_FEATURES, help_only, false, 0, false, "features" },
	{ "list", RT_LIST, list_flags, false, 0, false, "list [--format table|json] [--quiet]" },
	{ "spec", RT_SPEC, spec_flags, false, 0, false, "spec [--bundle DIR] [--rootless]" },
};

/* runc commands kiln-runtime does not have, and what to use instead. */
static const struct {
	const char *name, *why;
} missing_verbs[] = {
	{ "run", "run is create then start: engines call those two" },
	{ "events", "container events and stats are not supported yet" },
};

static const char program_usage[] =
	"usage: kiln-runtime [--root DIR] [--log FILE] [--log-format text|json] [--systemd-cgroup]\n"
	"                    [--debug] COMMAND [FLAGS] ARGS\n"
	"commands: create start state kill delete exec ps pause resume checkpoint restore update\n"
	"          features list spec (runc's command line; docs/oci-runtime.md)";

const char *rt_verb_name(enum rt_verb v)
{
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (verbs[i].verb == v)
			return verbs[i].name;
	return "";
}

const char *rt_cli_usage(enum rt_verb v)
{
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (verbs[i].verb == v)
			return verbs[i].usage;
	return program_usage;
}

/* Signal names as runc knows them (golang.org/x/sys/unix's list), plus
 * the aliases kill(1) takes. */
static const struct {
	const char *name;
	int sig;
} signals[] = {
	{ "HUP", SIGHUP },       { "INT", SIGINT },       { "QUIT", SIGQUIT },
	{ "ILL", SIGILL },       { "TRAP", SIGTRAP },     { "ABRT", SIGABRT },
	{ "IOT", SIGIOT },       { "BUS", SIGBUS },       { "FPE", SIGFPE },
	{ "KILL", SIGKILL },     { "USR1", SIGUSR1 },     { "SEGV", SIGSEGV },
	{ "USR2", SIGUSR2 },     { "PIPE", SIGPIPE },     { "ALRM", SIGALRM },
	{ "TERM", SIGTERM },     { "STKFLT", SIGSTKFLT }, { "CHLD", SIGCHLD },
	{ "CLD", SIGCHLD },      { "CONT", SIGCONT },     { "STOP", SIGSTOP },
	{ "TSTP", SIGTSTP },     { "TTIN", SIGTTIN },     { "TTOU", SIGTTOU },
	{ "URG", SIGURG },       { "XCPU", SIGXCPU },     { "XFSZ", SIGXFSZ },
	{ "VTALRM", SIGVTALRM }, { "PROF", SIGPROF },     { "WINCH", SIGWINCH },
	{ "IO", SIGIO },         { "POLL", SIGPOLL },     { "PWR", SIGPWR },
	{ "SYS", SIGSYS },
};

/* The guest kernel's real-time range: 34..64 (glibc reserves 32 and 33
 * for itself, but the guest's processes may use any). */
#define RT_SIGMIN 34
#define RT_SIGMAX 64

/* "RTMIN", "RTMIN+N", "RTMAX", "RTMAX-N" (upper case, no SIG). */
static int rt_signal_name(const char *s, int *sig)
{
	uint64_t n = 0;
	bool min = strncmp(s, "RTMIN", 5) == 0, max = strncmp(s, "RTMAX", 5) == 0;

	if (!min && !max)
		return -1;
	if (s[5] &&
	    (s[5] != (min ? '+' : '-') ||
	     num_parse_u64(s + 6, 10, 0, RT_SIGMAX - RT_SIGMIN, &n) < 0))
		return -1;
	*sig = min ? RT_SIGMIN + (int)n : RT_SIGMAX - (int)n;
	return 0;
}

int rt_signal_parse(const char *s, int *sig, struct err *e)
{
	char up[16];
	const char *name = up;
	uint64_t n;
	size_t len = strlen(s);

	if (num_parse_u64(s, 10, 0, RT_SIGMAX, &n) == 0) {
		*sig = (int)n;
		return 0;
	}
	if (len == 0 || len >= sizeof(up))
		goto bad;
	for (size_t i = 0; i <= len; i++)
		up[i] = (char)(s[i] >= 'a' && s[i] <= 'z' ? s[i] - 'a' + 'A' : s[i]);
	if (strncmp(up, "SIG", 3) == 0)
		name += 3;
	for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++) {
		if (strcmp(name, signals[i].name) == 0) {
			*sig = signals[i].sig;
			return 0;
		}
	}
	if (rt_signal_name(name, sig) == 0)
		return 0;
bad:
	return err_set(e, EINVAL,
		       "kill: unknown signal \"%.32s\": give a name (TERM, SIGKILL) or a number 0-%d",
		       s, RT_SIGMAX);
}

/* Go's strconv.ParseBool, which urfave/cli uses for "--flag=value". */
static int parse_bool(const char *v, bool *out)
{
	static const char *const yes[] = { "1", "t", "T", "true", "TRUE", "True" };
	static const char *const no[] = { "0", "f", "F", "false", "FALSE", "False" };

	for (size_t i = 0; i < 6; i++) {
		if (strcmp(v, yes[i]) == 0)
			return *out = true, 0;
		if (strcmp(v, no[i]) == 0)
			return *out = false, 0;
	}
	return -1;
}

/* A signed limit: a number, or -1 for unlimited (runc's update). */
static int parse_limit(const char *v, int64_t *out)
{
	uint64_t n;

	if (strcmp(v, "-1") == 0)
		return *out = -1, 0;
	if (num_parse_u64(v, 10, 0, INT64_MAX, &n) < 0)
		return -1;
	*out = (int64_t)n;
	return 0;
}

/* "UID[:GID]", numbers (runc's exec -u takes no names: there is no
 * passwd file on the host side to read them from). */
static int parse_user(struct rt_cmd *c, const char *v, struct err *e)
{
	const char *colon = strchr(v, ':');
	uint64_t uid, gid = 0;
	size_t ulen = colon ? (size_t)(colon - v) : strlen(v);

	if (num_parse_u64_n(v, ulen, 10, 0, UINT32_MAX - 1, &uid) < 0 ||
	    (colon && num_parse_u64(colon + 1, 10, 0, UINT32_MAX - 1, &gid) < 0))
		return err_set(e, EINVAL,
			       "exec --user \"%.64s\": want UID or UID:GID, as numbers (names are "
			       "not looked up)",
			       v);
	c->has_user = true;
	c->uid = (uint32_t)uid;
	c->gid = (uint32_t)gid;
	return 0;
}

/* A list flag's next slot, or -EINVAL saying the bound. */
static int push(const char **list, size_t *n, size_t max, const char *v, const char *flag,
		struct err *e)
{
	if (*n >= max)
		return err_set(e, EINVAL, "--%s is given more than %zu times: pass fewer", flag,
			       max);
	list[(*n)++] = v;
	return 0;
}

static int set_global(struct rt_cmd *c, enum opt o, const char *v, struct err *e)
{
	switch (o) {
	case O_ROOT:
		if (!*v)
			return err_set(e, EINVAL, "--root is empty: give the state directory");
		c->g.root = v;
		return 0;
	case O_LOG:
		c->g.log = *v ? v : NULL;
		return 0;
	case O_LOG_FORMAT:
		if (strcmp(v, "text") == 0)
			c->g.log_format = RT_LOG_TEXT;
		else if (strcmp(v, "json") == 0)
			c->g.log_format = RT_LOG_JSON;
		else
			return err_set(e, EINVAL, "--log-format \"%.32s\": want text or json", v);
		return 0;
	case O_CGROUP_MANAGER:
		c->g.systemd_cgroup = strcmp(v, "systemd") == 0;
		c->g.cgroups_disabled = strcmp(v, "disabled") == 0;
		if (!c->g.systemd_cgroup && !c->g.cgroups_disabled && strcmp(v, "cgroupfs") != 0)
			return err_set(e, EINVAL,
				       "--cgroup-manager \"%.32s\": want cgroupfs, systemd or disabled",
				       v);
		return 0;
	default:
		return 0;
	}
}

static int set_number(const char *flag, const char *v, uint64_t max, uint64_t *out, struct err *e)
{
	if (num_parse_u64(v, 10, 0, max, out) < 0)
		return err_set(e, EINVAL, "--%s \"%.32s\": want a number from 0 to %llu", flag, v,
			       (unsigned long long)max);
	return 0;
}

static int set_format(struct rt_cmd *c, const char *v, struct err *e)
{
	if (strcmp(v, "table") == 0)
		c->format = RT_FORMAT_TABLE;
	else if (strcmp(v, "json") == 0)
		c->format = RT_FORMAT_JSON;
	else
		return err_set(e, EINVAL, "%s --format \"%.32s\": want table or json", c->verb_name,
			       v);
	return 0;
}

static int set_update(struct rt_cmd *c, enum opt o, const char *flag, const char *v, struct err *e)
{
	struct rt_update *u = &c->update;
	uint64_t n;
	int r = 0;

	switch (o) {
	case O_RESOURCES:
		u->resources = v;
		break;
	case O_MEMORY:
		r = parse_limit(v, &u->memory);
		u->has_memory = true;
		break;
	case O_CPU_QUOTA:
		r = parse_limit(v, &u->cpu_quota);
		u->has_cpu_quota = true;
		break;
	case O_PIDS:
		r = parse_limit(v, &u->pids_limit);
		u->has_pids = true;
		break;
	case O_CPU_PERIOD:
		if (set_number(flag, v, UINT32_MAX, &n, e) < 0)
			return -EINVAL;
		u->cpu_period = n;
		u->has_cpu_period = true;
		break;
	case O_CPUSET:
		u->cpuset_cpus = v;
		break;
	default:
		break;
	}
	if (r < 0)
		return err_set(e, EINVAL, "update --%s \"%.32s\": want a number of bytes or -1",
			       flag, v);
	return 0;
}

/* Flags that fill a string field: where it goes. */
static const char **string_field(struct rt_cmd *c, enum opt o)
{
	switch (o) {
	case O_BUNDLE:
		return &c->bundle;
	case O_CONSOLE:
		return &c->console_socket;
	case O_PID_FILE:
		return &c->pid_file;
	case O_PROCESS:
		return &c->process;
	case O_CWD:
		return &c->cwd;
	case O_IMAGE:
		return &c->image_path;
	case O_WORK:
		return &c->work_path;
	default:
		return NULL;
	}
}

static int set_value(struct rt_cmd *c, enum opt o, const char *flag, const char *v, struct err *e)
{
	const char **field = string_field(c, o);
	uint64_t n;

	if (field) {
		if (!*v)
			return err_set(e, EINVAL, "%s --%s is empty: give a path", c->verb_name,
				       flag);
		*field = v;
		return 0;
	}
	switch (o) {
	case O_ENV:
		if (!strchr(v, '=') || v[0] == '=')
			return err_set(e, EINVAL, "exec --env \"%.64s\": want NAME=VALUE", v);
		return push(c->env, &c->nenv, RT_CLI_ENV_MAX, v, flag, e);
	case O_CAP:
		return push(c->caps, &c->ncaps, RT_CLI_CAPS_MAX, v, flag, e);
	case O_USER:
		return parse_user(c, v, e);
	case O_GIDS:
		if (c->ngids >= RT_CLI_GIDS_MAX)
			return err_set(e, EINVAL, "--%s is given more than %d times: pass fewer",
				       flag, RT_CLI_GIDS_MAX);
		if (set_number(flag, v, UINT32_MAX - 1, &n, e) < 0)
			return -EINVAL;
		c->gids[c->ngids++] = (uint32_t)n;
		return 0;
	case O_PRESERVE_FDS:
		if (set_number(flag, v, INT32_MAX, &n, e) < 0)
			return -EINVAL;
		if (n > 0)
			return err_set(e, EINVAL,
				       "%s --preserve-fds %llu: descriptors cannot be passed into "
				       "a VM; pass 0",
				       c->verb_name, (unsigned long long)n);
		return 0;
	case O_FORMAT:
		return set_format(c, v, e);
	default:
		return set_update(c, o, flag, v, e);
	}
}

static void set_bool(struct rt_cmd *c, enum opt o, bool b)
{
	switch (o) {
	case O_HELP:
		c->help = c->g.help = b;
		break;
	case O_DEBUG:
		c->g.debug = b;
		break;
	case O_SYSTEMD:
		c->g.systemd_cgroup = b;
		break;
	case O_VERSION:
		c->g.version = b;
		break;
	case O_DETACH:
		c->detach = b;
		break;
	case O_FORCE:
		c->force = b;
		break;
	case O_ALL:
		c->all = b;
		break;
	case O_TTY:
		c->tty = b;
		break;
	case O_NNP:
		c->no_new_privs = b;
		break;
	case O_QUIET:
		c->quiet = b;
		break;
	case O_LEAVE:
		c->leave_running = b;
		break;
	case O_ROOTLESS_SPEC:
		c->rootless_spec = b;
		break;
	default:
		break;
	}
}

/* Whether arg is a flag: "-x...", but not "-" (stdin) or "--". */
static bool is_flag(const char *arg)
{
	return arg[0] == '-' && arg[1] && strcmp(arg, "--") != 0;
}

static const struct flag *find_flag(const struct flag *set, const char *name, size_t len)
{
	for (const struct flag *f = set; f->name; f++) {
		if (strlen(f->name) == len && strncmp(f->name, name, len) == 0)
			return f;
		if (len == 1 && f->short_name == name[0])
			return f;
	}
	return NULL;
}

/* The flag argv[*i] (and its value, maybe argv[*i + 1]) against set;
 * *i moves past what it used. `where` names the command for messages. */
static int take_flag(struct rt_cmd *c, const struct flag *set, int argc, char *const *argv, int *i,
		     const char *where, struct err *e)
{
	const char *arg = argv[*i], *name = arg + (arg[1] == '-' ? 2 : 1);
	const char *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	const struct flag *f = name[0] == '-' ? NULL : find_flag(set, name, len);
	const char *v = eq ? eq + 1 : NULL;
	bool b = true;

	if (!f) {
		int n = (int)(eq ? (size_t)(eq - arg) : strlen(arg));

		return err_set(e, EINVAL,
			       "%s: unknown flag \"%.*s\" (see 'kiln-runtime %s%s--help')", where,
			       n > 64 ? 64 : n, arg, c->verb == RT_NONE ? "" : c->verb_name,
			       c->verb == RT_NONE ? "" : " ");
	}
	if (f->value && !v) {
		if (*i + 1 >= argc)
			return err_set(e, EINVAL, "%s: flag --%s needs a value", where, f->name);
		v = argv[++*i];
	}
	if (!f->value && v && parse_bool(v, &b) < 0)
		return err_set(e, EINVAL, "%s: flag --%s takes true or false, not \"%.32s\"", where,
			       f->name, v);
	(*i)++;
	if (f->use == REFUSE)
		return err_set(e, EINVAL, "%s --%s: %s", where, f->name, f->why);
	if (f->use == IGNORE) {
		if (c->nignored < RT_CLI_IGNORED_MAX)
			c->ignored[c->nignored++] = f->name;
		return 0;
	}
	if (!f->value) {
		set_bool(c, f->opt, b);
		return 0;
	}
	return c->verb == RT_NONE ? set_global(c, f->opt, v, e)
				  : set_value(c, f->opt, f->name, v, e);
}

static const struct verb_def *find_verb(const char *name)
{
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(verbs[i].name, name) == 0)
			return &verbs[i];
	return NULL;
}

/* What no verb_def holds: `help [COMMAND]` and runc's commands kiln
 * does not have. */
static int other_verb(const char *name, int argc, char *const *argv, int i, struct rt_cmd *c,
		      struct err *e)
{
	const struct verb_def *v;

	if (strcmp(name, "help") == 0) {
		c->g.help = true;
		if (i + 1 < argc && (v = find_verb(argv[i + 1]))) {
			c->verb = v->verb;
			c->verb_name = v->name;
			c->help = true;
		}
		return 0;
	}
	for (size_t k = 0; k < sizeof(missing_verbs) / sizeof(missing_verbs[0]); k++)
		if (strcmp(missing_verbs[k].name, name) == 0)
			return err_set(e, EINVAL, "%s: %s", name, missing_verbs[k].why);
	return err_set(e, EINVAL, "unknown command \"%.64s\": run 'kiln-runtime --help'", name);
}

/* The positional arguments once the flags are read. */
static int positionals(const struct verb_def *v, const char *const *pos, size_t npos,
		       struct rt_cmd *c, struct err *e)
{
	if (v->id && npos == 0)
		return err_set(e, EINVAL, "%s: no container ID given (usage: kiln-runtime %s)",
			       v->name, v->usage);
	if (v->id) {
		if (rt_id_check(pos[0], e) < 0)
			return -EINVAL;
		c->id = pos[0];
	}
	if (v->verb == RT_KILL && npos == 2 && rt_signal_parse(pos[1], &c->signal, e) < 0)
		return -EINVAL;
	if (v->verb == RT_EXEC && !c->process && c->nargs == 0)
		return err_set(e, EINVAL,
			       "exec: no command: give it after the ID, or --process FILE");
	if (v->verb == RT_EXEC && c->process && c->nargs)
		return err_set(e, EINVAL,
			       "exec: both --process and a command are given: pass one of them");
	return 0;
}

static int parse_command(const struct verb_def *v, int argc, char *const *argv, int i,
			 struct rt_cmd *c, struct err *e)
{
	const char *pos[3];
	size_t npos = 0;
	bool flags_done = false;

	c->verb = v->verb;
	c->verb_name = v->name;
	while (i < argc) {
		const char *a = argv[i];

		if (v->rest && npos == 1) {
			/* exec ID -- CMD: the "--" only separates */
			i += strcmp(a, "--") == 0 && !flags_done;
			c->args = argv + i;
			c->nargs = (size_t)(argc - i);
			break;
		}
		if (!flags_done && strcmp(a, "--") == 0) {
			flags_done = true;
			i++;
		} else if (!flags_done && is_flag(a)) {
			if (take_flag(c, v->flags, argc, argv, &i, v->name, e) < 0)
				return -EINVAL;
		} else if (npos >= v->max_pos) {
			return err_set(e, EINVAL,
				       "%s: unexpected argument \"%.64s\" (usage: kiln-runtime %s)",
				       v->name, a, v->usage);
		} else {
			pos[npos++] = a;
			i++;
		}
	}
	if (c->help)
		return 0;
	return positionals(v, pos, npos, c, e);
}

static void defaults(struct rt_cmd *c)
{
	memset(c, 0, sizeof(*c));
	c->g.root = RT_ROOT_DEFAULT;
	c->g.log_format = RT_LOG_TEXT;
	c->verb_name = "";
	c->bundle = ".";
	c->signal = SIGTERM;
	c->format = RT_FORMAT_TABLE;
}

int rt_cli_parse(int argc, char *const *argv, struct rt_cmd *c, struct err *e)
{
	const struct verb_def *v;
	int i = 1;

	defaults(c);
	while (i < argc && is_flag(argv[i]))
		if (take_flag(c, global_flags, argc, argv, &i, "kiln-runtime", e) < 0)
			return -EINVAL;
	if (i < argc && strcmp(argv[i], "--") == 0)
		i++;
	if (i >= argc) {
		if (c->g.version || c->g.help)
			return 0;
		return err_set(e, EINVAL, "no command given: run 'kiln-runtime --help'");
	}
	v = find_verb(argv[i]);
	if (!v)
		return other_verb(argv[i], argc, argv, i, c, e);
	return parse_command(v, argc, argv, i + 1, c, e);
}
