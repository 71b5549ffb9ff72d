/*
 * rt_cli: kiln-runtime's command line, which is runc's: engines (conmon,
 * containerd's runc shim through go-runc, Docker through that shim) run
 * an OCI runtime with runc's global flags and commands
 * (docs/oci-runtime.md; runc's man pages, runc-*.8).
 *
 * Contract: pure. rt_cli_parse reads argv (argv[0] is the program) into
 * a struct rt_cmd whose strings point into argv (nothing is allocated).
 * Every flag a command has in runc is in one of three sets:
 *  - used: it sets a field of rt_cmd;
 *  - accepted and ignored (kept in cmd->ignored for a debug log line):
 *    what means nothing for a VM (--no-pivot, --no-new-keyring, criu's
 *    tuning, AppArmor and SELinux labels, --criu, --rootless);
 *  - refused: what kiln cannot honour (--preserve-fds N > 0, lazy
 *    migration, pre-dumps, RDT schemas), one line naming it and why.
 * A flag no command of runc has is refused as unknown. Spellings are
 * Go's flag package's (runc's): one or two dashes, "--f=v" or "--f v",
 * booleans as "--f" or "--f=true|false|1|0|t|f"; for every command but
 * exec and ps a flag may follow the positional arguments (urfave/cli's
 * reordering), and "--" ends the flags. Global flags come before the
 * command. Failures are -EINVAL with e->msg one line saying what and
 * what to do.
 */
#ifndef KILN_RT_CLI_H
#define KILN_RT_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/base/err.h"

#define RT_ROOT_DEFAULT "/run/kiln-runtime"
#define RT_CLI_ENV_MAX 1024    /* exec -e */
#define RT_CLI_CAPS_MAX 64     /* exec -c: there are 41 capabilities */
#define RT_CLI_GIDS_MAX 256    /* exec -g */
#define RT_CLI_IGNORED_MAX 32  /* flags kept for the debug log */
#define RT_CLI_EMPTY_NS_MAX 16 /* checkpoint/restore --empty-ns */

enum rt_verb {
	RT_NONE, /* only global flags: --version or --help */
	RT_CREATE,
	RT_START,
	RT_STATE,
	RT_KILL,
	RT_DELETE,
	RT_EXEC,
	RT_PS,
	RT_PAUSE,
	RT_RESUME,
	RT_CHECKPOINT,
	RT_RESTORE,
	RT_UPDATE,
	RT_FEATURES,
	RT_LIST,
	RT_SPEC,
};

enum rt_log_format { RT_LOG_TEXT, RT_LOG_JSON };
enum rt_format { RT_FORMAT_TABLE, RT_FORMAT_JSON };

struct rt_global {
	const char *root; /* --root, RT_ROOT_DEFAULT */
	const char *log;  /* --log FILE, NULL: stderr only */
	enum rt_log_format log_format;
	bool debug;
	bool systemd_cgroup;   /* --systemd-cgroup, or crun's --cgroup-manager systemd */
	bool cgroups_disabled; /* crun's --cgroup-manager disabled (Podman --cgroups=disabled) */
	bool version, help;
};

/* update's per-field flags: NULL when not given (values are checked
 * numbers; cpuset is runc's list syntax, checked by the caller). */
struct rt_update {
	const char *resources; /* -r FILE, "-" for stdin */
	bool has_memory, has_cpu_quota, has_cpu_period, has_pids;
	int64_t memory, cpu_quota, pids_limit; /* -1: unlimited */
	uint64_t cpu_period;
	const char *cpuset_cpus;
};

struct rt_cmd {
	struct rt_global g;
	enum rt_verb verb;
	const char *verb_name; /* as typed */
	bool help;             /* COMMAND --help: Podman probes `checkpoint --help` */
	const char *id;

	const char *bundle; /* create, restore, spec: -b, default "." */
	const char *pid_file;
	const char *console_socket;
	bool detach; /* exec, restore -d */
	bool force;  /* delete -f */
	bool all;    /* kill -a */
	int signal;  /* kill: 0..64, default SIGTERM */

	/* exec */
	const char *process; /* -p process.json */
	bool tty, no_new_privs;
	const char *cwd;
	const char *env[RT_CLI_ENV_MAX];
	size_t nenv;
	const char *caps[RT_CLI_CAPS_MAX];
	size_t ncaps;
	bool has_user;
	uint32_t uid, gid; /* -u UID[:GID] (GID 0 when absent, as runc) */
	uint32_t gids[RT_CLI_GIDS_MAX];
	size_t ngids;
	/* exec: the command after ID; ps: the ps arguments after ID */
	char *const *args;
	size_t nargs;

	enum rt_format format; /* ps, list -f */
	bool quiet;            /* list -q */

	/* checkpoint, restore */
	const char *image_path, *work_path;
	bool leave_running;

	struct rt_update update;
	bool rootless_spec; /* spec --rootless */

	const char *ignored[RT_CLI_IGNORED_MAX];
	size_t nignored;
};

/* argv[0..argc) into *cmd; 0, or -EINVAL with e. */
int rt_cli_parse(int argc, char *const *argv, struct rt_cmd *cmd, struct err *e);

/*
 * A signal as kill takes it (runc's rule): a number 0..64, or a name in
 * any case with or without "SIG" (TERM, sigkill, SIGRTMIN+3). 0, or
 * -EINVAL with e.
 */
int rt_signal_parse(const char *s, int *sig, struct err *e);

/* The command's name as runc spells it ("create"), "" for RT_NONE. */
const char *rt_verb_name(enum rt_verb v);

/* The one-screen usage of a command (RT_NONE: the program's). */
const char *rt_cli_usage(enum rt_verb v);

#endif
