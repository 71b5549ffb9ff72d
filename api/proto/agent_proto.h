/*
 * agent_proto: the guest agent's wire protocol without sockets, processes
 * or threads (docs/agent-protocol.md is the specification; every number
 * here is in its limits table).
 *
 * Contract:
 *  - Framing: a message is one JSON object on one line ending in '\n',
 *    optionally followed by exactly `len` raw payload bytes. The framer is
 *    fed whatever read() returned, in any split, and reports one event per
 *    call. Header lines are bounded (AGENT_HEADER_MAX) and buffering stops
 *    there, without waiting for a newline. Payload is never copied.
 *  - Everything the peer sends is hostile: JSON is decoded with duplicate
 *    keys and NUL characters rejected, every field is type-, range- and
 *    length-checked, and unknown fields are refused (a misspelt option must
 *    not be silently ignored).
 *  - Errors are typed: an enum agent_code plus a message for a human. The
 *    first failing check wins, in the order the document gives, so a
 *    given bad input always yields the same code.
 *  - Reply lines are built here so that both sides agree byte for byte;
 *    none exceeds AGENT_HEADER_MAX.
 *  - No global state (jansson's own hash seed aside). Direction-agnostic:
 *    the host client library uses the same framer for the agent's replies.
 */
#ifndef KILN_AGENT_PROTO_H
#define KILN_AGENT_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define AGENT_PORT 1024
#define AGENT_PROTOCOL 1

#define AGENT_HEADER_MAX 65536   /* header line, '\n' included */
#define AGENT_LEN_MAX (1u << 20) /* payload bytes of one message */
#define AGENT_CHUNK_MAX 65536    /* payload per message the agent sends */
#define AGENT_PATH_MAX 4095      /* PATH_MAX less the NUL */
#define AGENT_ARGV_MAX 1024
#define AGENT_ENV_MAX 1024
#define AGENT_MAX_PROCS 128
#define AGENT_MAX_CONNS 128
/* tcp_connect bridges at once: forwarded ports can never take the slots
 * that exec, files and ping need. */
#define AGENT_MAX_BRIDGES 96
#define AGENT_OUTPUT_CAP_DEFAULT (1u << 20)
#define AGENT_OUTPUT_CAP_MAX (256u << 20)
#define AGENT_RING_DEFAULT (256u << 10)
#define AGENT_RING_MIN 4096u
#define AGENT_RING_MAX (4u << 20)
#define AGENT_TIMEOUT_MAX_MS 604800000u /* 7 days */
#define AGENT_DRAIN_MS 100
#define AGENT_LIST_DEPTH_MAX 32u
#define AGENT_LIST_LIMIT_DEFAULT 10000u
#define AGENT_LIST_LIMIT_MAX 1000000u
#define AGENT_DNS_MAX 3       /* resolv.conf MAXNS */
#define AGENT_HOSTNAME_MAX 64 /* HOST_NAME_MAX */
#define AGENT_IFNAME_MAX 15   /* IFNAMSIZ less the NUL */
/* configure.trust_ca: one PEM certificate (a CA's is 1..2 KiB; this leaves
 * room for a 4096-bit key and long names, and keeps a line well inside
 * AGENT_HEADER_MAX however JSON escapes it). */
#define AGENT_TRUST_CA_MAX 8192
#define AGENT_GRACE_DEFAULT_MS 100u
#define AGENT_GRACE_MAX_MS 60000u
#define AGENT_SHUTDOWN_LINGER_MS 5000 /* shutdown: the host's close of the reply awaited */
#define AGENT_TCP_CONNECT_MS 10000    /* tcp_connect: connect() to the guest port */
#define AGENT_TCP_HALF_IDLE_MS \
	60000 /* tcp_connect: one direction ended, the other idle this long */
/* watch: inotify watches per watch request, and events queued for a slow host. */
#define AGENT_WATCH_WATCHES_DEFAULT 8192u
#define AGENT_WATCH_WATCHES_MAX 65536u
#define AGENT_WATCH_QUEUE_DEFAULT 4096u
#define AGENT_WATCH_QUEUE_MIN 16u
#define AGENT_WATCH_QUEUE_MAX 65536u
/* watch streams at once: like bridges, they must leave connections free. */
#define AGENT_MAX_WATCH_STREAMS 16
/* Containers (docs/agent-protocol.md, 7.9). */
#define AGENT_MAX_CONTAINERS 64
#define AGENT_CID_MAX 128      /* a container id: it names the guest cgroup ctr-<cid> */
#define AGENT_SHARE_TAG_MAX 36 /* virtio-fs config space: tag[36] */
#define AGENT_CTR_MOUNTS_MAX 256
#define AGENT_CTR_OPTIONS_MAX 64 /* options of one mount */
#define AGENT_CTR_OPTION_MAX 255 /* bytes of one option */
#define AGENT_CTR_DATA_MAX 4095  /* a mount's data: mount(2) copies one page */
#define AGENT_CTR_GROUPS_MAX 1024
#define AGENT_CTR_EXECS_MAX 64 /* ctr_exec: a container's processes besides its init */
#define AGENT_CTR_UMASK_DEFAULT 022u
#define AGENT_CTR_ID_MAX 4294967294u /* uids and gids; (uid_t)-1 means "unchanged" to the kernel */
#define AGENT_CTR_RLIMITS_MAX 16     /* RLIM_NLIMITS: one entry per resource */
#define AGENT_CTR_CAPS_MAX 64        /* names in one capability set */
#define AGENT_CTR_PATHS_MAX 256      /* masked_paths, readonly_paths */
#define AGENT_CTR_PIDS_MAX 4194304   /* the kernel's PID_MAX_LIMIT: pids_max's bound */
#define AGENT_CTR_SYSCTL_MAX 256     /* sysctl entries */
#define AGENT_SYSCTL_KEY_MAX 255     /* bytes of a sysctl's name */
#define AGENT_SYSCTL_VALUE_MAX 4095  /* bytes of its value: proc writes one page */
#define AGENT_REQUEST_TIMEOUT_MS 30000
#define AGENT_UPLOAD_IDLE_MS 120000
#define AGENT_ERR_MESSAGE_MAX 512 /* message buffer, NUL included */
#define AGENT_PTY_ROWS_DEFAULT 24u
#define AGENT_PTY_COLS_DEFAULT 80u
#define AGENT_FILE_MODE_DEFAULT 0644u
#define AGENT_DIR_MODE_DEFAULT 0755u
/* sync_clock's optional `entropy`: hex, 1..AGENT_ENTROPY_MAX bytes. */
#define AGENT_ENTROPY_MAX 64
/* sync_clock accepts 2000-01-01 .. 2100-01-01: anything else is a host bug. */
#define AGENT_CLOCK_MIN_NS 946684800000000000LL
#define AGENT_CLOCK_MAX_NS 4102444800000000000LL

/* The unprivileged default user every rootfs provides. */
#define AGENT_USER_UID 1000u
#define AGENT_USER_GID 1000u
#define AGENT_USER_HOME "/home/user"
#define AGENT_ROOT_HOME "/root"
/* The directory a confined process sees read-write (its cwd and HOME). */
#define AGENT_WORKSPACE "/workspace"
#define AGENT_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* Error codes; agent_code_name() gives the wire string. */
enum agent_code {
	AGENT_OK = 0,
	AGENT_E_BAD_JSON,
	AGENT_E_HEADER_TOO_LONG,
	AGENT_E_TRUNCATED,
	AGENT_E_UNKNOWN_TYPE,
	AGENT_E_UNEXPECTED_TYPE,
	AGENT_E_MISSING_FIELD,
	AGENT_E_UNKNOWN_FIELD,
	AGENT_E_BAD_FIELD,
	AGENT_E_TOO_LARGE,
	AGENT_E_NOT_FOUND,
	AGENT_E_EXISTS,
	AGENT_E_NOT_DIRECTORY,
	AGENT_E_IS_DIRECTORY,
	AGENT_E_NOT_EMPTY,
	AGENT_E_PERMISSION_DENIED,
	AGENT_E_READ_ONLY,
	AGENT_E_NO_SPACE,
	AGENT_E_UNSAFE_PATH,
	AGENT_E_BAD_ARCHIVE,
	AGENT_E_INVALID_STATE,
	AGENT_E_BUSY,
	AGENT_E_TIMEOUT,
	AGENT_E_IO_ERROR,
	AGENT_E_REFUSED,
	AGENT_CODE_COUNT
};

/* The protocol's own limit, not a host buffer choice (lib/base/err.h). */
struct agent_err {
	enum agent_code code;
	char msg[AGENT_ERR_MESSAGE_MAX];
};

/* "bad_json", ...; "ok" for AGENT_OK; NULL when out of range. */
const char *agent_code_name(enum agent_code code);

/* The code an errno becomes (docs/agent-protocol.md, section 4). */
enum agent_code agent_errno_code(int errnum);

/* Format err->msg and set err->code; returns code. */
enum agent_code agent_err_set(struct agent_err *err, enum agent_code code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- framing ---- */

enum agent_ev {
	AGENT_EV_NEED_MORE, /* every byte fed was consumed; feed more */
	AGENT_EV_HEADER,    /* ev.header (caller owns a reference), ev.len */
	AGENT_EV_PAYLOAD,   /* ev.data/ev.data_len: a slice of the fed buffer */
	AGENT_EV_ERROR,     /* ev.err; the framer stays in error */
};

struct agent_event {
	enum agent_ev kind;
	json_t *header;
	uint64_t len;
	const uint8_t *data;
	size_t data_len;
	bool last;                   /* PAYLOAD: this slice completes the payload */
	const struct agent_err *err; /* ERROR: points into the framer */
};

struct agent_frame {
	char *line; /* partial header line, grown up to AGENT_HEADER_MAX */
	size_t line_len;
	size_t line_cap;
	uint64_t payload_len; /* of the current message */
	uint64_t payload_left;
	int state;
	struct agent_err err;
};

void agent_frame_init(struct agent_frame *f);
void agent_frame_free(struct agent_frame *f);

/*
 * Consume bytes from buf[0..n) and report one event. Returns the number of
 * bytes consumed (HEADER: through its '\n'; PAYLOAD: ev->data_len;
 * NEED_MORE: n; ERROR: 0). Call again with the rest until NEED_MORE.
 * A header with len 0 is followed by no PAYLOAD event.
 */
size_t agent_frame_feed(struct agent_frame *f, const void *buf, size_t n, struct agent_event *ev);

/*
 * The peer closed its side. NEED_MORE when that was at a message boundary
 * (a clean end), ERROR `truncated` inside a header line or a payload.
 */
void agent_frame_eof(struct agent_frame *f, struct agent_event *ev);

/*
 * Decode one header line (without its '\n') into a JSON object and its
 * `len` (0 when absent). On error *out is NULL. This is what the framer
 * runs on each line.
 */
enum agent_code agent_header_decode(const char *line, size_t n, json_t **out, uint64_t *len,
				    struct agent_err *err);

/* ---- requests ---- */

enum agent_type {
	AGENT_T_PING,
	AGENT_T_INFO,
	AGENT_T_EXEC,
	AGENT_T_SPAWN,
	AGENT_T_ATTACH,
	AGENT_T_STDIN,
	AGENT_T_SIGNAL,
	AGENT_T_RESIZE,
	AGENT_T_WAIT,
	AGENT_T_LIST_PROCESSES,
	AGENT_T_READ,
	AGENT_T_WRITE,
	AGENT_T_STAT,
	AGENT_T_EXISTS,
	AGENT_T_LIST_DIR,
	AGENT_T_MKDIR,
	AGENT_T_REMOVE,
	AGENT_T_RENAME,
	AGENT_T_TAR_UPLOAD,
	AGENT_T_TAR_DOWNLOAD,
	AGENT_T_CONFIGURE,
	AGENT_T_SYNC_CLOCK,
	AGENT_T_SHUTDOWN,
	AGENT_T_TCP_CONNECT,
	AGENT_T_RUN,
	AGENT_T_WATCH,
	AGENT_T_CTR_CREATE,
	AGENT_T_CTR_STDIO,
	AGENT_T_CTR_START,
	AGENT_T_CTR_WAIT,
	AGENT_T_CTR_SIGNAL,
	AGENT_T_CTR_RESIZE,
	AGENT_T_CTR_DELETE,
	AGENT_T_CTR_UPDATE,
	AGENT_T_CTR_EXEC,
	AGENT_T_DATA,
	AGENT_T_END,
	AGENT_TYPE_COUNT
};

/* Where on a connection a message arrives (docs/agent-protocol.md, section 3). */
enum agent_ctx {
	AGENT_CTX_REQUEST,  /* first message of a connection */
	AGENT_CTX_UPLOAD,   /* after write / tar_upload: data, end */
	AGENT_CTX_ATTACHED, /* after spawn / attach: stdin, signal, resize without id */
};

/* The wire name of a message type ("exec"), NULL when out of range. */
const char *agent_type_name(enum agent_type t);
/* Whether t is one of the file messages (read ... tar_download), which the
 * guest serves in one place (guest-init/agent/agent_files.c). */
bool agent_type_is_file(enum agent_type t);

enum agent_user { AGENT_USER_USER, AGENT_USER_ROOT };

struct agent_env {
	const char *key;
	const char *value; /* NULL: remove the variable from the base environment */
};

/* run's languages (docs/agent-protocol.md, 7.3.1). */
enum agent_lang {
	AGENT_LANG_NONE,
	AGENT_LANG_PYTHON,
	AGENT_LANG_JAVASCRIPT,
	AGENT_LANG_TYPESCRIPT,
	AGENT_LANG_BASH,
	AGENT_LANG_COUNT
};

/* "python", ...; NULL for AGENT_LANG_NONE or out of range. */
const char *agent_lang_name(enum agent_lang l);
/* The language a name stands for; AGENT_LANG_NONE when none. */
enum agent_lang agent_lang_by_name(const char *name);

/* run: the result file the code's `result` helper writes is sent back as
 * at most this many bytes (more is flagged, not sent). */
#define AGENT_RUN_RESULT_MAX (1u << 20)

/* exec, spawn and run. */
struct agent_proc_req {
	const char **argv; /* argc entries + NULL; `shell` already expanded */
	size_t argc;
	struct agent_env *env;
	size_t envc;
	const char *cwd; /* NULL: the user's home */
	enum agent_user user;
	bool shell;
	bool confine;         /* run in a mount namespace that shows /workspace (section 8) */
	uint32_t timeout_ms;  /* 0: none */
	uint32_t output_cap;  /* exec */
	bool pty;             /* spawn */
	uint16_t rows, cols;  /* spawn with pty */
	uint32_t ring_bytes;  /* spawn */
	enum agent_lang lang; /* run: argv is empty until the agent builds it */
	uint32_t code_len; /* run: the payload's first code_len bytes are the code, the rest stdin */
	const char *
		run_dir; /* run, confined: its directory, shown in the view; set by the agent, never parsed */
};

/* attach, stdin, signal, resize, wait: `id` is 0 on an attached stream. */
struct agent_ctl_req {
	uint32_t id;
	bool from_now; /* attach: "from":"now" */
	bool has_from; /* attach: numeric from given */
	uint64_t from;
	bool close;          /* stdin */
	int signo;           /* signal */
	bool group;          /* signal */
	uint16_t rows, cols; /* resize */
	uint32_t timeout_ms; /* wait */
};

/* read, write, stat, exists, list_dir, mkdir, remove, rename, tar_*. */
struct agent_file_req {
	const char *path;
	const char *to; /* rename: `from` is in path */
	enum agent_user user;
	uint64_t offset;                         /* read */
	uint64_t length;                         /* read; UINT64_MAX: to EOF */
	uint32_t mode;                           /* write, mkdir */
	bool create, exclusive, append, parents; /* write (parents: also mkdir) */
	bool recursive;                          /* remove */
	bool overwrite;                          /* rename */
	bool follow;                             /* stat, exists */
	uint32_t depth, limit;                   /* list_dir */
};

struct agent_addr {
	int family;        /* AF_INET or AF_INET6 */
	uint8_t bytes[16]; /* network order; 4 used for AF_INET */
	uint8_t prefix;    /* cidr only */
};

struct agent_configure_req {
	const char *hostname; /* NULL: unchanged */
	const char *iface;    /* "eth0" when not given */
	bool has_address, has_gateway, has_dns;
	struct agent_addr address, gateway;
	struct agent_addr dns[AGENT_DNS_MAX];
	size_t dns_n;
	uint32_t mtu;         /* 0: unchanged */
	const char *trust_ca; /* NULL: unchanged; "": remove; else one PEM certificate */
};

/* tcp_connect: a port on the guest's loopback. */
struct agent_tcp_req {
	uint16_t port;
	int family;          /* AF_INET (127.0.0.1) or AF_INET6 (::1) */
	const char *address; /* "127.0.0.1" or "::1", as given or the default */
};

/* watch: a directory's changes as a stream of fs_event lines. */
struct agent_watch_req {
	const char *path;
	bool recursive;
	uint32_t max_watches; /* inotify watches at most (recursive: one per directory) */
	uint32_t queue;       /* events held for a host that does not read */
	enum agent_user user;
};

/* ---- containers (docs/agent-protocol.md, 7.9) ---- */

enum agent_mount_type {
	AGENT_MNT_PROC,
	AGENT_MNT_SYSFS,
	AGENT_MNT_TMPFS,
	AGENT_MNT_DEVPTS,
	AGENT_MNT_MQUEUE,
	AGENT_MNT_CGROUP2,
	AGENT_MNT_BIND,
	AGENT_MNT_TYPE_COUNT
};

/* "proc", ... (also the filesystem type mount(2) takes, but for "bind");
 * NULL when out of range. agent_mount_type_parse: -1 when unknown. */
const char *agent_mount_type_name(enum agent_mount_type t);
int agent_mount_type_parse(const char *name);

struct agent_ctr_mount {
	const char *destination;
	enum agent_mount_type type;
	const char **options; /* optc entries + NULL */
	size_t optc;
	const char *share;  /* bind only */
	const char *source; /* bind only: relative to the share ("" or "." is its root) */
};

/* A process's privileges (7.9, `process`): its resource limits, its
 * capability sets, no_new_privs and its OOM score, applied in the guest
 * as runc applies them (docs/agent-protocol.md). */
struct agent_rlimit {
	int resource;        /* RLIMIT_* */
	uint64_t soft, hard; /* soft <= hard <= AGENT_RLIMIT_MAX */
};

#define AGENT_RLIMIT_MAX ((uint64_t)INT64_MAX) /* the wire's integers are signed */

enum agent_cap_set {
	AGENT_CAP_BOUNDING,
	AGENT_CAP_EFFECTIVE,
	AGENT_CAP_PERMITTED,
	AGENT_CAP_INHERITABLE,
	AGENT_CAP_AMBIENT,
	AGENT_CAP_SETS
};

struct agent_ctr_privs {
	struct agent_rlimit rlimits[AGENT_CTR_RLIMITS_MAX];
	size_t nrlimits;
	bool has_caps;                 /* false: the process keeps what the uid gives */
	uint64_t caps[AGENT_CAP_SETS]; /* bit n: capability n */
	bool no_new_privileges;
	bool has_oom_score_adj;
	int oom_score_adj; /* -1000..1000 */
};

/* "bounding", ...: the set's name (also OCI's key); NULL out of range. */
const char *agent_cap_set_name(enum agent_cap_set s);
/* "CAP_CHOWN" -> 0, ...; -1 when kiln knows no such capability.
 * agent_cap_name: NULL out of range. */
int agent_cap_parse(const char *name);
const char *agent_cap_name(int cap);
/* "RLIMIT_NOFILE" -> RLIMIT_NOFILE, ...; -1 when unknown. */
int agent_rlimit_parse(const char *name);
const char *agent_rlimit_name(int resource);
/* A sysctl's name as OCI gives it: '.'- or '/'-separated components of
 * letters, digits, '_' and '-', 1..AGENT_SYSCTL_KEY_MAX bytes. */
bool agent_sysctl_key_valid(const char *key);

/*
 * privs' fields into `process` (an object being built): rlimits,
 * capabilities, no_new_privileges, oom_score_adj, each only when set. The
 * host's encoders (agent_ctr_create_encode, kiln-runtime's) share it.
 * 0, or -ENOMEM.
 */
int agent_ctr_privs_encode(json_t *process, const struct agent_ctr_privs *privs);

/* How one process of a container runs: ctr_create's `process`. */
struct agent_ctr_process {
	const char **args; /* argc entries + NULL */
	size_t argc;
	const char **env; /* envc "KEY=VALUE" entries + NULL: the whole environment */
	size_t envc;
	const char *cwd; /* "/" when not given */
	uint32_t uid, gid;
	uint32_t *groups; /* additional_gids */
	size_t ngroups;
	uint32_t umask;
	bool terminal;
	uint16_t rows, cols; /* with terminal */
	struct agent_ctr_privs privs;
};

struct agent_sysctl {
	const char *key, *value;
};

/* ctr_create's `seccomp`: OCI's linux.seccomp with the syscalls already
 * numbers (the host resolves the names; the guest is the same arch),
 * compiled by the guest into a BPF filter (docs/agent-protocol.md 7.9). */
#define AGENT_SECCOMP_RULES_MAX 2048
#define AGENT_SECCOMP_ARGS_MAX 6
#define AGENT_SECCOMP_NR_MAX 1023 /* x86_64's numbers are below 1024 */
#define AGENT_SECCOMP_ERRNO_MAX 4095

enum agent_sc_action {
	AGENT_SC_ALLOW,
	AGENT_SC_ERRNO,
	AGENT_SC_KILL_THREAD,
	AGENT_SC_KILL_PROCESS,
	AGENT_SC_TRAP,
	AGENT_SC_TRACE,
	AGENT_SC_LOG,
	AGENT_SC_ACTIONS
};

enum agent_sc_op {
	AGENT_SC_EQ,
	AGENT_SC_NE,
	AGENT_SC_LT,
	AGENT_SC_LE,
	AGENT_SC_GT,
	AGENT_SC_GE,
	AGENT_SC_MASKED_EQ, /* (arg & value) == value_two */
	AGENT_SC_OPS
};

struct agent_sc_arg {
	uint32_t index; /* 0..5 */
	enum agent_sc_op op;
	uint64_t value, value_two;
};

/* One syscall's rule: every arg condition must hold (AND). */
struct agent_sc_rule {
	uint32_t nr;
	enum agent_sc_action action;
	uint32_t errno_ret; /* ERRNO's errno, TRACE's data */
	struct agent_sc_arg args[AGENT_SECCOMP_ARGS_MAX];
	size_t nargs;
};

struct agent_seccomp {
	enum agent_sc_action default_action;
	uint32_t default_errno;
	bool log, spec_allow; /* SECCOMP_FILTER_FLAG_LOG, _SPEC_ALLOW */
	struct agent_sc_rule *rules;
	size_t nrules;
};

/* "allow", ...; NULL out of range. agent_sc_*_parse: -1 when unknown. */
const char *agent_sc_action_name(enum agent_sc_action a);
int agent_sc_action_parse(const char *name);
const char *agent_sc_op_name(enum agent_sc_op o);
int agent_sc_op_parse(const char *name);

struct agent_ctr_create {
	const char *cid;
	const char *root_share;
	const char *root_source; /* beneath the share (a pod's container), NULL: the share itself */
	bool root_readonly;
	struct agent_ctr_mount *mounts;
	size_t nmounts;
	struct agent_ctr_process proc;
	const char *hostname;        /* NULL: the guest's */
	struct agent_sysctl *sysctl; /* written in the container's namespaces */
	size_t nsysctl;
	const char **masked, **readonly; /* absolute paths in the container */
	size_t nmasked, nreadonly;
	struct agent_seccomp *seccomp; /* NULL: none */
	uint64_t pids_max;             /* the container's guest cgroup's pids.max, 0: none */
};

/* c's sysctl, masked_paths, readonly_paths and seccomp into o (a ctr_create being
 * built), each only when it has entries: shared like agent_ctr_privs_encode.
 * 0, or -ENOMEM. */
int agent_ctr_confine_encode(json_t *o, const struct agent_ctr_create *c);

/* ctr_exec: a further process in a running container (exec 1..UINT32_MAX). */
struct agent_ctr_exec {
	const char *cid;
	uint32_t exec;
	struct agent_ctr_process proc;
};

enum agent_ctr_stream { AGENT_CTR_STDIN, AGENT_CTR_STDOUT, AGENT_CTR_STDERR, AGENT_CTR_PTY };
#define AGENT_CTR_STREAMS 4

/* "stdin", ...; NULL when out of range. agent_ctr_stream_parse: -1 when unknown. */
const char *agent_ctr_stream_name(enum agent_ctr_stream s);
int agent_ctr_stream_parse(const char *name);

/* ctr_stdio, ctr_start, ctr_wait, ctr_signal, ctr_resize, ctr_delete,
 * ctr_update. */
struct agent_ctr_req {
	const char *cid;
	uint32_t exec;                /* 0: the init */
	enum agent_ctr_stream stream; /* ctr_stdio */
	int signo;                    /* ctr_signal */
	bool all;                     /* ctr_signal */
	uint16_t rows, cols;          /* ctr_resize */
	uint32_t timeout_ms;          /* ctr_wait */
	uint64_t pids_max;            /* ctr_update: the new pids.max, 0: "max" (none) */
};

/* A container id: 1..AGENT_CID_MAX of [A-Za-z0-9_+.-], not "." or "..". */
bool agent_cid_valid(const char *s);
/* A virtio-fs tag: 1..AGENT_SHARE_TAG_MAX printable ASCII bytes without '/', ',', ':'. */
bool agent_share_tag_valid(const char *s);

/* What one mount option is (7.9, the mount's `options`). */
enum agent_mopt {
	AGENT_MOPT_SET,         /* *flag is an MS_ bit to set ("ro", "nosuid") */
	AGENT_MOPT_CLEAR,       /* *flag is an MS_ bit to clear ("rw", "suid") */
	AGENT_MOPT_BIND,        /* "bind" */
	AGENT_MOPT_RBIND,       /* "rbind": with the submounts */
	AGENT_MOPT_PROPAGATION, /* "private", "rshared", ...: accepted, changes nothing */
	AGENT_MOPT_DATA,        /* anything else: the filesystem's */
};
enum agent_mopt agent_mount_option(const char *opt, unsigned long *flag);

/*
 * A ctr_create (or ctr_* request) as the JSON object the agent parses: the
 * host builds its requests with these, so the two sides cannot disagree.
 * A new reference, or NULL when out of memory. Nothing is checked here:
 * agent_msg_parse judges the result.
 */
json_t *agent_ctr_create_encode(const struct agent_ctr_create *c);
json_t *agent_ctr_exec_encode(const struct agent_ctr_exec *x);
json_t *agent_ctr_req_encode(enum agent_type t, const struct agent_ctr_req *r);

struct agent_msg {
	enum agent_type type;
	uint64_t len; /* payload bytes that follow this header */
	json_t *json; /* strings above point into it; agent_msg_free drops it */
	union {
		struct agent_proc_req proc;
		struct agent_ctl_req ctl;
		struct agent_file_req file;
		struct agent_configure_req conf;
		struct agent_tcp_req tcp;
		struct agent_watch_req watch;
		struct agent_ctr_create ctr_create;
		struct agent_ctr_exec ctr_exec;
		struct agent_ctr_req ctr;
		struct {
			int64_t time_ns;
			const char *entropy; /* hex digits (checked), or NULL */
		} clock;                     /* sync_clock */
		uint32_t grace_ms;           /* shutdown */
	} u;
};

/*
 * Validate one decoded header as a message arriving in `ctx` and fill
 * `msg` (defaults applied). On success msg holds a reference to `hdr`
 * (the caller keeps its own) and must be released with agent_msg_free.
 * On error msg needs no freeing and err says why.
 */
enum agent_code agent_msg_parse(json_t *hdr, enum agent_ctx ctx, struct agent_msg *msg,
				struct agent_err *err);
void agent_msg_free(struct agent_msg *msg);

/* Decode + parse in one step (line without '\n'); for tests and the host. */
enum agent_code agent_msg_parse_line(const char *line, size_t n, enum agent_ctx ctx,
				     struct agent_msg *msg, struct agent_err *err);

/* ---- shared validators (configure and the kernel command line) ---- */

/* Signal number from a JSON integer 1..64 or a name ("TERM", "SIGTERM"). */
int agent_signal_number(const json_t *v);
/* Signal number of a name, with or without "SIG"; 0 if unknown. */
int agent_signal_by_name(const char *name);
int agent_parse_ip(const char *s, struct agent_addr *out);   /* 0 or -EINVAL */
int agent_parse_cidr(const char *s, struct agent_addr *out); /* 0 or -EINVAL */
bool agent_hostname_valid(const char *s);
bool agent_ifname_valid(const char *s);
/*
 * configure.trust_ca: NULL when s is exactly one PEM certificate: a
 * "-----BEGIN CERTIFICATE-----" line, 1..76-character lines of base64
 * that decode canonically to one DER SEQUENCE filling the whole body, an
 * "-----END CERTIFICATE-----" line with or without its '\n', nothing else
 * (no CR, no blank line, no headers, no text around it, at most
 * AGENT_TRUST_CA_MAX bytes). Otherwise why not, for a message.
 */
const char *agent_pem_cert_check(const char *s);
/* The cwd of a confined process: absent (NULL), or /workspace or below
 * it without ".." components (section 8, "Confinement"). */
bool agent_confine_cwd_ok(const char *cwd);
/* True when `path` lexically names "/" ("/", "//", "/.", "/a/..", ...). */
bool agent_path_is_root(const char *path);

/* ---- reply lines ---- */

/* One line, '\n' included, malloc'd; data == NULL after agent_line_free. */
struct agent_line {
	char *data;
	size_t len;
};

void agent_line_free(struct agent_line *l);

/* Serialise `obj` compactly as a line; -E2BIG beyond AGENT_HEADER_MAX, -ENOMEM. */
int agent_line_json(struct agent_line *out, const json_t *obj);

/* {"type":"error","code":...,"message":...}; the message is made valid UTF-8. */
int agent_line_error(struct agent_line *out, enum agent_code code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int agent_line_err(struct agent_line *out, const struct agent_err *err);

/* A named integer or boolean for ok / end lines. */
struct agent_kv {
	const char *key;
	int64_t value;
	bool is_bool;
};
#define AGENT_INT(k, v) ((struct agent_kv){ .key = (k), .value = (int64_t)(v) })
#define AGENT_BOOL(k, v) ((struct agent_kv){ .key = (k), .value = !!(v), .is_bool = true })

/* {"type":"ok",<kv>...} and {"type":"end",<kv>...} in the order given. */
int agent_line_ok(struct agent_line *out, const struct agent_kv *kv, size_t n);
int agent_line_end(struct agent_line *out, const struct agent_kv *kv, size_t n);

int agent_line_pong(struct agent_line *out);

struct agent_info {
	const char *kernel, *hostname;
	uint32_t cpus;
	uint64_t mem_total, mem_available, uptime_ms;
	int64_t time_ns;
	uint32_t processes;
};
int agent_line_info(struct agent_line *out, const struct agent_info *info);

enum agent_stream { AGENT_STDOUT, AGENT_STDERR, AGENT_DATA };
/* {"type":"stdout"|"stderr"|"data",["seq":S,]"len":N}; seq < 0 leaves it out. */
int agent_line_chunk(struct agent_line *out, enum agent_stream s, int64_t seq, uint64_t len);
int agent_line_gap(struct agent_line *out, uint64_t seq, uint64_t bytes);
int agent_line_spawned(struct agent_line *out, uint32_t id, int pid);
int agent_line_attached(struct agent_line *out, uint32_t id, int pid, bool pty, bool running,
			uint64_t seq);
int agent_line_file(struct agent_line *out, uint64_t size);
/* run: {"type":"result","size":S,"len":N}: the result file had S bytes;
 * N (S, or 0 when S > AGENT_RUN_RESULT_MAX) follow as the payload. */
int agent_line_result(struct agent_line *out, uint64_t size, uint64_t len);

struct agent_exit {
	uint32_t id; /* 0: an exec (no id field) */
	int pid;
	int exit_code; /* -1: none (signal) */
	int signo;     /* 0: none */
	bool timed_out;
	uint64_t stdout_bytes, stderr_bytes;
	bool is_exec; /* adds stdout_truncated / stderr_truncated */
	bool stdout_truncated, stderr_truncated;
	uint64_t wall_us, user_us, sys_us;
};
int agent_line_exit(struct agent_line *out, const struct agent_exit *e);

/* "file", "dir", ... for st_mode's S_IFMT bits; "unknown" otherwise. */
const char *agent_kind_name(uint32_t st_mode);

struct agent_stat {
	const char *path; /* raw bytes; made valid UTF-8 (with "lossy") */
	size_t path_len;
	uint32_t depth;   /* entry lines only */
	uint32_t st_mode; /* full st_mode: kind and permission bits */
	uint64_t size;
	uint32_t uid, gid;
	uint64_t nlink;
	int64_t mtime_ns;
	const char *target; /* symlinks: raw bytes, NULL otherwise */
	size_t target_len;
};
/* {"type":"stat",...} when entry is false, {"type":"entry",...,"depth":D} otherwise. */
int agent_line_stat(struct agent_line *out, const struct agent_stat *st, bool entry);
/* exists: st_mode only used when exists. */
int agent_line_exists(struct agent_line *out, bool exists, uint32_t st_mode);

struct agent_process_info {
	uint32_t id;
	int pid;
	const char *const *argv;
	size_t argc;
	bool pty, running;
	int exit_code; /* -1: none */
	int signo;     /* 0: none */
	bool timed_out;
	uint64_t seq;
	uint32_t attached;
};
/* A list_processes line; argv becomes argv0 + argv_truncated past 64 KiB. */
int agent_line_process(struct agent_line *out, const struct agent_process_info *p);

/* ---- watch (docs/agent-protocol.md, 7.8) ---- */

enum agent_fs_kind {
	AGENT_FS_CREATE,
	AGENT_FS_MODIFY,
	AGENT_FS_DELETE,
	AGENT_FS_RENAME,   /* path is the new name, old_path the old one */
	AGENT_FS_OVERFLOW, /* events were lost: reason, dropped */
	AGENT_FS_KIND_COUNT
};

/* "create", ...; NULL when out of range. agent_fs_kind_parse: -1 when unknown. */
const char *agent_fs_kind_name(enum agent_fs_kind k);
int agent_fs_kind_parse(const char *name);

struct agent_fs_event {
	enum agent_fs_kind kind;
	uint64_t seq;
	const char *path; /* below the watched directory; raw bytes */
	size_t path_len;
	const char *old_path; /* rename only */
	size_t old_len;
	bool is_dir;
	const char *reason; /* overflow: "queue", "kernel", "watch_limit" */
	uint64_t dropped;   /* overflow: events the agent dropped (0: unknown) */
};

/* {"type":"watching","path":P,"recursive":B,"watches":N} */
int agent_line_watching(struct agent_line *out, const char *path, bool recursive, uint32_t watches);
/* {"type":"fs_event","seq":S,"event":K,...}: paths made valid UTF-8 ("lossy"). */
int agent_line_fs_event(struct agent_line *out, const struct agent_fs_event *ev);
/* {"type":"watch_end","seq":S,"reason":R}: the last line of a watch. */
int agent_line_watch_end(struct agent_line *out, uint64_t seq, const char *reason);

/* ---- containers' replies (7.9) ---- */

/* {"type":"ctr_created","cid":C,"pid":P}, and with "exec":E before "pid"
 * when exec is not 0 (ctr_exec's reply). */
int agent_line_ctr_created(struct agent_line *out, const char *cid, uint32_t exec, int pid);

struct agent_ctr_exit {
	const char *cid;
	uint32_t exec;
	int pid;
	int exit_code; /* -1: none (a signal ended it) */
	int signo;     /* 0: none */
};
/* {"type":"exit","cid":C,"exec":E,"pid":P,"exit_code":X,"signal":S} */
int agent_line_ctr_exit(struct agent_line *out, const struct agent_ctr_exit *e);

#endif
