/*
 * agent_client: the host side of the guest agent protocol
 * (docs/agent-protocol.md), for kilnd, the kiln-agent CLI and tests.
 *
 * Contract:
 *  - The agent is reached through kiln-vmm's hybrid vsock socket: connect
 *    to the Unix socket, send "CONNECT 1024\n", read "OK <port>\n"; every
 *    byte after that is the protocol. One request per connection, so every
 *    call below opens its own connection and closes it (streams keep theirs
 *    until agent_client_stream_close()).
 *  - Replies are read with agent_proto's framer, the same state machine the
 *    agent runs, so the two sides cannot disagree about framing. Requests
 *    are checked with agent_proto's own parser before they are sent: a
 *    request the agent would refuse fails locally (AGENT_FAIL_REQUEST)
 *    without a connection.
 *  - The agent is hostile (a compromised guest): every reply field is
 *    type- and range-checked; memory stays bounded whatever it sends (one
 *    64 KiB read buffer per connection, header lines capped at 64 KiB by
 *    the framer, exec output capped at its output_cap, everything else
 *    streamed to callbacks or fds, never collected).
 *  - Every blocking read and write has a deadline. Immediate requests use
 *    the context's timeout_ms for the connect and for each reply; calls
 *    that wait for a guest process (exec, wait, stream events) document
 *    their own.
 *  - Errors are values: each function returns 0 (or a documented positive
 *    value) or -errno, and fills a struct agent_client_err saying what kind
 *    of failure it was, the agent's error code when there is one, and a
 *    message. Nothing here prints, exits, or touches signal dispositions
 *    (sends use MSG_NOSIGNAL). No global state: the context is a plain
 *    struct, safe to share between threads once initialised.
 *  - Fields of replies that this protocol version does not define are
 *    ignored (the agent refuses unknown request fields; a host reading a
 *    newer agent's reply checks info.protocol instead).
 */
#ifndef KILN_AGENT_CLIENT_H
#define KILN_AGENT_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "api/proto/agent_proto.h"
#include "lib/base/err.h"

/* Default for agent_client.timeout_ms: generous because the nested test
 * harness runs guests 50-100x slower than real KVM. */
#define AGENT_CLIENT_TIMEOUT_DEFAULT_MS 10000
/* The longest "OK <port>\n" / "ERROR <reason>\n" line kiln-vmm sends. */
#define AGENT_CLIENT_HANDSHAKE_MAX 256

/* ---- context and errors ---- */

struct agent_client {
	char uds_path[108]; /* kiln-vmm's --vsock socket (sizeof sun_path) */
	uint32_t port;      /* AGENT_PORT */
	int timeout_ms; /* connect + handshake, each send, each reply of an immediate request; <= 0: none */
};

/* What kind of failure an agent_client_err describes. */
enum agent_fail {
	AGENT_FAIL_NONE = 0,
	AGENT_FAIL_AGENT, /* the agent answered with an error line: code and message are its own */
	AGENT_FAIL_REQUEST, /* the request is invalid (code as the agent would say); nothing was sent */
	AGENT_FAIL_CONNECT, /* socket, CONNECT handshake, or the connection ended early (VM or agent gone) */
	AGENT_FAIL_TIMEOUT, /* a host-side deadline passed */
	AGENT_FAIL_PROTOCOL, /* the agent's bytes broke the protocol, or its version is incompatible */
	AGENT_FAIL_LOCAL,    /* a host-side failure: memory, a local fd, a callback */
};

struct agent_client_err {
	enum agent_fail fail;
	/* AGENT, REQUEST: the error code. PROTOCOL: the framer's code
	 * (bad_json, truncated, header_too_long, too_large) or io_error for a
	 * well-framed but wrong reply. TIMEOUT: timeout. Otherwise io_error. */
	enum agent_code code;
	int errnum; /* the positive errno the function returned as -errnum */
	char msg[ERR_MSG_MAX];
};

/*
 * Fill `c` for the vsock socket `uds_path` with default port and timeout.
 * 0, or -ENAMETOOLONG when the path does not fit a Unix socket address.
 */
int agent_client_init(struct agent_client *c, const char *uds_path);

/*
 * A short stable name for an error, for messages and scripts: the agent's
 * code ("not_found", ...) for AGENT and REQUEST failures; "unreachable",
 * "timeout", "protocol_error", "host_error" for the others; "ok" for none.
 */
const char *agent_client_err_name(const struct agent_client_err *err);

/* ---- connections ---- */

/*
 * Open one connection to the agent: connect to the Unix socket and do the
 * CONNECT handshake, all within c->timeout_ms. On success *fd is a
 * non-blocking, close-on-exec stream socket positioned at the first
 * protocol byte; the caller owns it. Failures are AGENT_FAIL_CONNECT
 * (-ENOENT/-ECONNREFUSED: no kiln-vmm listening; -ECONNRESET: kiln-vmm
 * closed without OK, i.e. the agent is not listening yet; -EPROTO: a
 * reply other than OK) or AGENT_FAIL_TIMEOUT.
 */
int agent_client_connect(const struct agent_client *c, int *fd, struct agent_client_err *err);

/*
 * Wait until the agent answers: repeat {connect, ping} with a 10 ms pause
 * doubling up to 100 ms until a pong arrives or timeout_ms passes
 * (docs/agent-protocol.md, section 1). A refused or closed connection, a
 * missing OK, or a `busy` error means "not yet". 0 when ready;
 * -EPROTONOSUPPORT (AGENT_FAIL_PROTOCOL, no retry) when the agent speaks
 * another protocol version; -ETIMEDOUT with the last reason otherwise.
 */
int agent_client_wait_ready(const struct agent_client *c, int timeout_ms,
			    struct agent_client_err *err);
/*
 * wait_ready, but each attempt may run on up to hold_ms past timeout_ms
 * while kiln-vmm holds it: a caller that waits in short slices (to look
 * at other things between them) does not abandon, at every slice, a
 * connection the guest is about to answer. An abandoned one still costs
 * the guest a connection setup (kiln-vmm accepts it from its backlog and
 * asks the guest), so slices shorter than the guest's answer would
 * never meet one. A refusal or the VMM's end fails the attempt at once;
 * only an answer that is slow to come holds it.
 */
int agent_client_wait_ready_hold(const struct agent_client *c, int timeout_ms, int hold_ms,
				 struct agent_client_err *err);

/* ---- simple requests ---- */

/* ping: 0 and *protocol set (1 for this protocol). */
int agent_client_ping(const struct agent_client *c, int *protocol, struct agent_client_err *err);

struct agent_client_info {
	int protocol;
	char agent_version[64];
	char kernel[128];
	char hostname[AGENT_HOSTNAME_MAX + 1];
	uint32_t cpus;
	uint64_t mem_total, mem_available; /* bytes */
	uint64_t uptime_ms;
	int64_t time_ns; /* guest CLOCK_REALTIME */
	uint32_t processes;
};

/* info: the agent's description of the guest. Strings longer than their
 * buffer are cut at a character boundary. */
int agent_client_info(const struct agent_client *c, struct agent_client_info *info,
		      struct agent_client_err *err);

/* ---- processes ---- */

/* Output of exec, or a callback's stream: AGENT_STDOUT or AGENT_STDERR. */
typedef int (*agent_client_output_fn)(void *arg, enum agent_stream stream, const void *data,
				      size_t n);

/* exec and spawn. Zero-initialised fields mean the protocol's defaults. */
struct agent_client_proc_opts {
	const char *const *argv;     /* NULL-terminated, at least argv[0] */
	bool shell;                  /* run /bin/sh -c argv[0] argv[1..] */
	const struct agent_env *env; /* value NULL: unset a base variable */
	size_t envc;
	const char *cwd;      /* NULL: the user's home */
	enum agent_user user; /* AGENT_USER_USER (uid 1000) or AGENT_USER_ROOT */
	uint32_t timeout_ms;  /* guest-side kill after this long; 0: none */
	bool confine; /* own mount namespace: /workspace, /tmp, the runtime (agent protocol 8) */

	/* exec only */
	uint32_t output_cap;    /* per stream; 0: AGENT_OUTPUT_CAP_DEFAULT */
	bool discard_output;    /* output_cap 0: only the exit status and byte counts */
	const void *stdin_data; /* at most AGENT_LEN_MAX bytes, then EOF */
	size_t stdin_len;
	/* Host-side limit on the whole exec. 0: timeout_ms plus the drain
	 * time and the context's timeout when timeout_ms is set, otherwise
	 * none (a process without a timeout may run as long as it likes; the
	 * call still ends when the VM or agent goes away). On expiry the
	 * connection is closed, which makes the agent kill the process group. */
	uint32_t wait_ms;
	/* Set: output is passed here as it arrives (still capped at
	 * output_cap per stream) instead of being collected in the result.
	 * A negative return aborts the exec with that value. */
	agent_client_output_fn on_output;
	void *on_output_arg;

	/* run only (agent_client_run): the code's language and text. code_len
	 * plus stdin_len is at most AGENT_LEN_MAX. argv and shell are unused. */
	enum agent_lang lang;
	const void *code;
	size_t code_len;

	/* spawn only */
	bool pty;
	uint16_t rows, cols; /* 0: 24x80; only with pty */
	uint32_t ring_bytes; /* 0: AGENT_RING_DEFAULT */
};

/* How a process ended: an exec's or spawned process's `exit` line. */
struct agent_client_exit {
	uint32_t id; /* spawned processes; 0 for exec */
	int pid;
	int exit_code; /* 0..255 (124 after a timeout); -1 when a signal ended it */
	int signal;    /* the signal that ended it; 0 when none */
	bool timed_out;
	uint64_t stdout_bytes, stderr_bytes;     /* everything written, dropped bytes included */
	bool stdout_truncated, stderr_truncated; /* exec: more than output_cap was written */
	uint64_t wall_us, user_us, sys_us;
};

struct agent_client_exec_result {
	struct agent_client_exit exit;
	/* Collected output, NUL-terminated for convenience (the NUL is not
	 * counted); owned by the result. NULL with on_output or no output. */
	uint8_t *out, *err;
	size_t out_len, err_len;
	uint64_t host_us; /* connect to exit line, measured on the host */
	/* run: the result file as the agent sent it (guest bytes: validate
	 * them, run_result.h), NUL-terminated, NULL when empty or over
	 * AGENT_RUN_RESULT_MAX; result_size is the file's size either way. */
	uint8_t *result;
	size_t result_len;
	uint64_t result_size;
};

/*
 * exec: run a process to completion and collect its result. 0 when the
 * process ran (whatever its exit status; see res->exit); -errno when it
 * did not or the result was lost (start errors such as not_found come as
 * AGENT_FAIL_AGENT). Output beyond the cap is dropped and flagged
 * *_truncated, also when a misbehaving agent sends more than the cap.
 * Release res with agent_client_exec_result_free() in every case.
 */
int agent_client_exec(const struct agent_client *c, const struct agent_client_proc_opts *o,
		      struct agent_client_exec_result *res, struct agent_client_err *err);

/*
 * run: code in o->lang (docs/agent-protocol.md, 7.3.1), as exec otherwise:
 * the same output, timeout and result, plus res->result. A language whose
 * interpreter the image lacks fails with AGENT_FAIL_AGENT, not_found.
 */
int agent_client_run(const struct agent_client *c, const struct agent_client_proc_opts *o,
		     struct agent_client_exec_result *res, struct agent_client_err *err);

/* Free an exec result's buffers (safe on a zeroed or already freed result). */
void agent_client_exec_result_free(struct agent_client_exec_result *res);

/* A spawned or attached process's event stream; one connection. */
struct agent_client_stream;

/* Where an attach starts (docs/agent-protocol.md, attach.from). */
enum agent_client_from { AGENT_FROM_OLDEST, AGENT_FROM_NOW, AGENT_FROM_SEQ };

struct agent_client_attached {
	uint32_t id;
	int pid;
	bool pty, running;
	uint64_t seq; /* first seq the stream covers */
};

/*
 * spawn: start a process that belongs to the agent, and attach to it from
 * seq 0. 0 with *stream (close it with agent_client_stream_close, which
 * detaches; the process keeps running) and info (may be NULL) filled.
 */
int agent_client_spawn(const struct agent_client *c, const struct agent_client_proc_opts *o,
		       struct agent_client_stream **stream, struct agent_client_attached *info,
		       struct agent_client_err *err);

/* attach: stream a spawned process's output from `from` (seq used with AGENT_FROM_SEQ). */
int agent_client_attach(const struct agent_client *c, uint32_t id, enum agent_client_from from,
			uint64_t seq, struct agent_client_stream **stream,
			struct agent_client_attached *info, struct agent_client_err *err);

enum agent_client_event_kind {
	AGENT_EVENT_STDOUT,
	AGENT_EVENT_STDERR,
	AGENT_EVENT_GAP,  /* gap_bytes from seq were lost to the ring */
	AGENT_EVENT_EXIT, /* the last event; exit is set */
};

struct agent_client_event {
	enum agent_client_event_kind kind;
	uint64_t seq;        /* STDOUT/STDERR: of data[0]; GAP: first lost byte */
	const uint8_t *data; /* STDOUT/STDERR; valid until the next call on the stream */
	size_t len;
	uint64_t gap_bytes;
	struct agent_client_exit exit;
};

/*
 * Next event of a stream, waiting at most timeout_ms (< 0: no limit).
 * A large output chunk may come as several events with consecutive seq.
 * 0 and *ev filled; 1 after EXIT, once the agent has closed the stream;
 * -ETIMEDOUT (AGENT_FAIL_TIMEOUT) when nothing arrived: the stream stays
 * usable; any other -errno ends the stream (close it).
 */
int agent_client_stream_next(struct agent_client_stream *s, int timeout_ms,
			     struct agent_client_event *ev, struct agent_client_err *err);

/*
 * Send bytes to the stream's process stdin (split into AGENT_CHUNK_MAX
 * messages); close: then close stdin (EOF, or VEOF on a PTY). Best effort
 * on the agent's side: nothing is answered. Each message must be accepted
 * within the context's timeout; a write that times out halfway leaves the
 * stream unable to send (-EPIPE from then on), reading still works.
 */
int agent_client_stream_stdin(struct agent_client_stream *s, const void *data, size_t n, bool close,
			      struct agent_client_err *err);
/* Send a signal (1..64) to the stream's process, or its group. */
int agent_client_stream_signal(struct agent_client_stream *s, int signo, bool group,
			       struct agent_client_err *err);
/* Resize the stream's terminal (pty processes; ignored otherwise). */
int agent_client_stream_resize(struct agent_client_stream *s, uint16_t rows, uint16_t cols,
			       struct agent_client_err *err);
/* The stream's socket, for poll()/epoll (readable: call stream_next). */
int agent_client_stream_fd(const struct agent_client_stream *s);
/* True when decoded bytes are buffered: call stream_next before polling again. */
bool agent_client_stream_pending(const struct agent_client_stream *s);
/* Close the connection (detach) and free the stream; NULL is fine. */
void agent_client_stream_close(struct agent_client_stream *s);

/*
 * wait: the exit of spawned process `id`. timeout_ms is the agent's
 * (0: wait forever); the host waits that long plus the context's timeout.
 * -EREMOTEIO with code `timeout` when it is still running.
 */
int agent_client_wait(const struct agent_client *c, uint32_t id, uint32_t timeout_ms,
		      struct agent_client_exit *ex, struct agent_client_err *err);

/* Signal spawned process `id` (or its group): the request form of the stream message. */
int agent_client_signal(const struct agent_client *c, uint32_t id, int signo, bool group,
			struct agent_client_err *err);
/* Write n bytes to process `id`'s stdin (several requests above AGENT_LEN_MAX), then close if asked. */
int agent_client_stdin(const struct agent_client *c, uint32_t id, const void *data, size_t n,
		       bool close, struct agent_client_err *err);
/* Resize process `id`'s terminal; invalid_state when it has none. */
int agent_client_resize(const struct agent_client *c, uint32_t id, uint16_t rows, uint16_t cols,
			struct agent_client_err *err);

/* One list_processes line; pointers are valid during the callback only. */
struct agent_client_process {
	uint32_t id;
	int pid;
	const char **argv; /* argc entries (argv[0] only when argv_truncated) */
	size_t argc;
	bool argv_truncated;
	bool pty, running;
	int exit_code; /* -1: none */
	int signal;    /* 0: none */
	bool timed_out;
	uint64_t seq;
	uint32_t attached;
};

/*
 * list_processes: call fn for each spawned process, in the agent's order.
 * *count (may be NULL) gets the number listed. fn returning < 0 stops the
 * listing and is returned (AGENT_FAIL_LOCAL).
 */
int agent_client_list_processes(const struct agent_client *c,
				int (*fn)(void *arg, const struct agent_client_process *p),
				void *arg, uint64_t *count, struct agent_client_err *err);

/* ---- files ---- */

/* Bytes of a download; < 0 aborts the transfer with that value. */
typedef int (*agent_client_data_fn)(void *arg, const void *data, size_t n);
/* Bytes of an upload into buf (at most n): the count, 0 at the end, or
 * -errno, which abandons the upload (the connection is closed before
 * `end`, so the agent stops; what it already wrote stays). */
typedef ssize_t (*agent_client_source_fn)(void *arg, void *buf, size_t n);

struct agent_client_read_opts {
	uint64_t offset;
	uint64_t length; /* with has_length */
	bool has_length;
	enum agent_user user;
};

struct agent_client_read_info {
	uint64_t size;  /* file size when the agent opened it */
	uint64_t bytes; /* bytes delivered */
};

/*
 * read: stream a guest file to fn in chunks. After an error the bytes
 * already delivered are incomplete: discard them. info may be NULL.
 */
int agent_client_read(const struct agent_client *c, const char *path,
		      const struct agent_client_read_opts *o, agent_client_data_fn fn, void *arg,
		      struct agent_client_read_info *info, struct agent_client_err *err);
/* read into a local fd (blocking or not). */
int agent_client_read_fd(const struct agent_client *c, const char *path,
			 const struct agent_client_read_opts *o, int fd,
			 struct agent_client_read_info *info, struct agent_client_err *err);

struct agent_client_write_opts {
	bool no_create; /* fail with not_found instead of creating */
	bool exclusive; /* fail with exists when it exists */
	bool append;    /* append instead of truncating */
	bool parents;   /* create missing parent directories */
	bool has_mode;
	uint32_t mode; /* with has_mode; else 0644 for a created file */
	enum agent_user user;
};

/* write: a buffer to a guest file, in AGENT_CHUNK_MAX data messages. *bytes (may be NULL): written. */
int agent_client_write(const struct agent_client *c, const char *path,
		       const struct agent_client_write_opts *o, const void *data, size_t n,
		       uint64_t *bytes, struct agent_client_err *err);
/* write: everything readable from fd until EOF. */
int agent_client_write_fd(const struct agent_client *c, const char *path,
			  const struct agent_client_write_opts *o, int fd, uint64_t *bytes,
			  struct agent_client_err *err);

enum agent_client_kind {
	AGENT_KIND_FILE,
	AGENT_KIND_DIR,
	AGENT_KIND_SYMLINK,
	AGENT_KIND_FIFO,
	AGENT_KIND_SOCKET,
	AGENT_KIND_CHAR,
	AGENT_KIND_BLOCK,
	AGENT_KIND_UNKNOWN,
};

/* "file", "dir", ...: the protocol's name of a kind. */
const char *agent_client_kind_name(enum agent_client_kind k);

/* A stat reply or list_dir entry. */
struct agent_client_stat {
	const char *path;   /* stat: owned (agent_client_stat_free); entry: valid in the callback */
	const char *target; /* symlinks; NULL otherwise */
	bool lossy;         /* non-UTF-8 bytes were replaced with U+FFFD */
	uint32_t depth;     /* list_dir entries */
	enum agent_client_kind kind;
	uint64_t size;
	uint32_t mode; /* permission bits */
	uint32_t uid, gid;
	uint64_t nlink;
	int64_t mtime_ns;
};

/* stat (follow: stat, else lstat). Release st with agent_client_stat_free(). */
int agent_client_stat(const struct agent_client *c, const char *path, bool follow,
		      enum agent_user user, struct agent_client_stat *st,
		      struct agent_client_err *err);
/* Free a stat result's strings (safe on a zeroed one). */
void agent_client_stat_free(struct agent_client_stat *st);

/* exists: *exists and, when it exists, *kind (may be NULL). */
int agent_client_exists(const struct agent_client *c, const char *path, bool follow,
			enum agent_user user, bool *exists, enum agent_client_kind *kind,
			struct agent_client_err *err);

struct agent_client_list_opts {
	uint32_t depth; /* 0: 1 */
	uint32_t limit; /* 0: AGENT_LIST_LIMIT_DEFAULT */
	enum agent_user user;
};

struct agent_client_list_end {
	uint64_t count;
	bool truncated;
	uint64_t skipped;
};

/*
 * list_dir: fn per entry (depth-first, a directory before its contents).
 * fn returning < 0 stops and is returned. end may be NULL.
 */
int agent_client_list_dir(const struct agent_client *c, const char *path,
			  const struct agent_client_list_opts *o,
			  int (*fn)(void *arg, const struct agent_client_stat *e), void *arg,
			  struct agent_client_list_end *end, struct agent_client_err *err);

/* mkdir; mode < 0: the default 0755. */
int agent_client_mkdir(const struct agent_client *c, const char *path, bool parents, int mode,
		       enum agent_user user, struct agent_client_err *err);
/* remove a file, symlink or empty directory; recursive: a whole tree. */
int agent_client_remove(const struct agent_client *c, const char *path, bool recursive,
			enum agent_user user, struct agent_client_err *err);
/* rename; overwrite: replace an existing target. */
int agent_client_rename(const struct agent_client *c, const char *from, const char *to,
			bool overwrite, enum agent_user user, struct agent_client_err *err);

struct agent_client_tar_stats {
	uint64_t files, dirs, symlinks, hardlinks, skipped, bytes;
};

/* tar_upload: stream a plain ustar archive read from fd into guest directory path. */
int agent_client_tar_upload(const struct agent_client *c, const char *path, enum agent_user user,
			    int fd, struct agent_client_tar_stats *stats,
			    struct agent_client_err *err);
/* tar_download: the guest path (directory contents, or one file) as a ustar archive to fd. */
int agent_client_tar_download(const struct agent_client *c, const char *path, enum agent_user user,
			      int fd, struct agent_client_tar_stats *stats,
			      struct agent_client_err *err);
/* tar_upload and tar_download with the archive from / to a callback
 * (kilnd converts tar.gz on the way). A callback's negative value ends
 * the transfer: AGENT_FAIL_LOCAL with that errno. */
int agent_client_tar_upload_cb(const struct agent_client *c, const char *path, enum agent_user user,
			       agent_client_source_fn src, void *arg,
			       struct agent_client_tar_stats *stats, struct agent_client_err *err);
int agent_client_tar_download_cb(const struct agent_client *c, const char *path,
				 enum agent_user user, agent_client_data_fn fn, void *arg,
				 struct agent_client_tar_stats *stats,
				 struct agent_client_err *err);

/* ---- TCP bridge ---- */

/*
 * tcp_connect: have the agent connect to guest TCP port `port` (1..65535)
 * on the guest's loopback, `address` "127.0.0.1" (NULL: the same) or
 * "::1", and hand back the connection as a byte stream. The connect, the
 * request and the agent's answer are bounded by the context's timeout.
 * 0 with *fd: a non-blocking, close-on-exec stream socket whose bytes are
 * the guest connection's from the first one on (the answer is read
 * without consuming a byte past it, so a server that speaks first loses
 * nothing). shutdown(*fd, SHUT_WR) reaches the guest server as EOF, its
 * EOF comes back as ours; close() ends the bridge. The caller owns *fd.
 * Failures: AGENT_FAIL_AGENT with `refused` (nothing listens there),
 * `timeout`, `busy`, `io_error`; AGENT_FAIL_REQUEST `bad_field` for a port
 * or address the agent would refuse; the connection failures of
 * agent_client_connect().
 */
int agent_client_tcp_connect(const struct agent_client *c, uint32_t port, const char *address,
			     int *fd, struct agent_client_err *err);

/* ---- containers (docs/agent-protocol.md, 7.9): kiln-runtime's calls ---- */

/*
 * ctr_create: req is the whole request object (type "ctr_create"; built
 * by kiln-runtime's plan), checked with the agent's own parser before it
 * is sent. The reply is bounded by the context's timeout. 0 with *pid
 * (the init's guest pid), or the agent's error (not_found with runc's
 * words for a program that is missing, permission_denied, ...).
 */
int agent_client_ctr_create(const struct agent_client *c, json_t *req, int *pid,
			    struct agent_client_err *err);

/*
 * ctr_exec: a further process in the running container `cid`, numbered
 * `exec` (1..UINT32_MAX, the caller's choice, not in use), `process` the
 * same object as ctr_create's `process` (copied; the request is checked
 * with the agent's own parser before it is sent). The reply is bounded
 * by the context's timeout. 0 with *pid (its guest pid), or the agent's
 * error: invalid_state (the container is not running), exists, busy,
 * not_found with runc's words for a missing program. It runs at
 * agent_client_ctr_start(c, cid, exec).
 */
int agent_client_ctr_exec(const struct agent_client *c, const char *cid, uint32_t exec,
			  const json_t *process, int *pid, struct agent_client_err *err);

/* ctr_stdio for exec `exec`'s stream (0: the init): 0 with *fd, the raw stream after the
 * agent's `ok` (as tcp_connect's): SHUT_WR on a stdin stream is the
 * process's EOF; an output stream ends at the output's end. */
int agent_client_ctr_stdio(const struct agent_client *c, const char *cid, uint32_t exec,
			   enum agent_ctr_stream stream, int *fd, struct agent_client_err *err);

/* ctr_start (of exec `exec`: 0 is the init), ctr_signal (signo 1..64;
 * all: every process of the container), ctr_resize, ctr_delete and
 * ctr_update (the container's pids.max; 0: none), each
 * answered `ok` within the context's timeout. A container that ended is
 * invalid_state. */
int agent_client_ctr_start(const struct agent_client *c, const char *cid, uint32_t exec,
			   struct agent_client_err *err);
int agent_client_ctr_signal(const struct agent_client *c, const char *cid, uint32_t exec, int signo,
			    bool all, struct agent_client_err *err);
int agent_client_ctr_resize(const struct agent_client *c, const char *cid, uint32_t exec,
			    uint16_t rows, uint16_t cols, struct agent_client_err *err);
int agent_client_ctr_delete(const struct agent_client *c, const char *cid,
			    struct agent_client_err *err);
int agent_client_ctr_update(const struct agent_client *c, const char *cid, uint64_t pids_max,
			    struct agent_client_err *err);

struct agent_client_ctr_exit {
	int pid;       /* the init's guest pid */
	int exit_code; /* 0..255, -1: a signal ended it */
	int signal;    /* 1..64, 0: none */
};

/*
 * ctr_wait for exec `exec` (0: the init), split so that a caller with a poll loop waits on
 * the connection: begin connects and sends (the context's timeout);
 * poll agent_client_ctr_wait_fd for POLLIN (or POLLHUP: the VM is gone);
 * end reads the exit within timeout_ms (<= 0: no limit). The agent
 * answers once the init was reaped and its connected output streams were
 * sent whole. Close with agent_client_ctr_wait_close (NULL is fine).
 */
struct agent_client_ctr_wait;

int agent_client_ctr_wait_begin(const struct agent_client *c, const char *cid, uint32_t exec,
				struct agent_client_ctr_wait **w, struct agent_client_err *err);
int agent_client_ctr_wait_fd(const struct agent_client_ctr_wait *w);
int agent_client_ctr_wait_end(struct agent_client_ctr_wait *w, int timeout_ms,
			      struct agent_client_ctr_exit *ex, struct agent_client_err *err);
void agent_client_ctr_wait_close(struct agent_client_ctr_wait *w);

/* ---- watch (docs/agent-protocol.md, 7.8) ---- */

struct agent_client_watch_opts {
	bool recursive;
	uint32_t max_watches; /* 0: AGENT_WATCH_WATCHES_DEFAULT */
	uint32_t queue;       /* 0: AGENT_WATCH_QUEUE_DEFAULT */
	enum agent_user user;
};

/* A directory's change stream; one connection. */
struct agent_client_watch;

struct agent_client_fs_event {
	enum agent_fs_kind kind;
	uint64_t seq;
	const char *path;     /* below the watched directory; valid until the next call */
	const char *old_path; /* rename only, else NULL */
	bool is_dir, lossy;
	const char *reason; /* overflow: "queue", "kernel", "watch_limit" */
	uint64_t dropped;   /* overflow */
};

/*
 * watch: start watching directory `path`. The connect, the request and the
 * agent's `watching` answer are bounded by the context's timeout. 0 with
 * *w (close it with agent_client_watch_close, which ends the watch) and
 * *watches (may be NULL: the inotify watches the agent placed). Failures:
 * AGENT_FAIL_AGENT with not_found, not_directory, permission_denied, busy;
 * AGENT_FAIL_REQUEST for options the agent would refuse.
 */
int agent_client_watch(const struct agent_client *c, const char *path,
		       const struct agent_client_watch_opts *o, struct agent_client_watch **w,
		       uint32_t *watches, struct agent_client_err *err);
/*
 * Next event, waiting at most timeout_ms (< 0: no limit). 0 and *ev;
 * 1 at the end: the agent's watch_end arrived (its reason, a static
 * string, in *end_reason: "deleted", "moved", "unmounted", "error");
 * a close without it is an error (AGENT_FAIL_CONNECT); -ETIMEDOUT when nothing
 * arrived (the watch stays usable); any other -errno ends it. Sequence
 * numbers are checked: each event's is the previous one's plus 1.
 */
int agent_client_watch_next(struct agent_client_watch *w, int timeout_ms,
			    struct agent_client_fs_event *ev, const char **end_reason,
			    struct agent_client_err *err);
/* The watch's socket, for poll(); readable: call watch_next. */
int agent_client_watch_fd(const struct agent_client_watch *w);
/* True when decoded bytes are buffered: call watch_next before polling again. */
bool agent_client_watch_pending(const struct agent_client_watch *w);
/* End the watch (the agent sees the close) and free it; NULL is fine. */
void agent_client_watch_close(struct agent_client_watch *w);

/* ---- lifecycle ---- */

/* configure: NULL / 0 / !set_dns leave a setting alone; at least one must be set. */
struct agent_client_configure {
	const char *hostname;
	const char *interface; /* NULL: eth0 */
	const char *address;   /* "10.0.2.15/24" */
	const char *gateway;
	const char *const *dns;
	size_t dns_n;
	bool set_dns; /* send dns (dns_n may be 0: no nameservers) */
	uint32_t mtu;
	const char *trust_ca; /* one PEM certificate to trust; "": remove it */
};

/* configure: hostname, addresses, routes, DNS, MTU, the trusted egress CA
 * in one request. Checked by the codec before it is sent, as every
 * request: a trust_ca it refuses is -EINVAL (bad_field, saying why). */
int agent_client_configure(const struct agent_client *c, const struct agent_client_configure *cfg,
			   struct agent_client_err *err);

/* sync_clock: set the guest's clock; *delta_ns (may be NULL): how far behind it was. */
int agent_client_sync_clock(const struct agent_client *c, int64_t time_ns, int64_t *delta_ns,
			    struct agent_client_err *err);
/*
 * The same, and mix `n` (1..AGENT_ENTROPY_MAX) bytes of `seed` into the
 * guest's random pool and reseed its CRNG: after a restore, so forks of one
 * snapshot do not share random numbers. seed == NULL: no entropy.
 */
int agent_client_sync_clock_seed(const struct agent_client *c, int64_t time_ns, const uint8_t *seed,
				 size_t n, int64_t *delta_ns, struct agent_client_err *err);

/* shutdown: the agent replies, then stops every process (grace_ms < 0: default) and resets the VM. */
int agent_client_shutdown(const struct agent_client *c, int grace_ms, struct agent_client_err *err);

#endif
