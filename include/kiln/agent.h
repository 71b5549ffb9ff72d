/*
 * kiln/agent.h: talk to kiln-init's agent in a guest, over the VM's vsock
 * socket (kiln_vm_vsock_path; docs/agent-protocol.md). kilnd reaches its
 * guests through this API alone. Every request is its own vsock
 * connection, so one kiln_agent may be used from several threads at once;
 * but its message, code and kind (kiln_agent_errmsg, _errcode, _errkind)
 * are rewritten by every failing call, so they may be read only while no
 * other call on it runs: for each call's own failure, give each thread or
 * request its own kiln_agent (kiln_agent_new only allocates), as kilnd
 * does.
 *
 * Structs with a `size` first member grow at their end: set it to sizeof,
 * and libkiln reads and fills only what it covers.
 *
 *   kiln_agent *a;
 *   kiln_agent_new(kiln_vm_vsock_path(vm), &a);
 *   kiln_agent_wait_ready(a, 10000);
 *   const char *argv[] = { "uname", "-a", NULL };
 *   struct kiln_exec_opts o = { sizeof o, argv };
 *   struct kiln_exit_status st = { sizeof st };
 *   char *out; size_t n;
 *   kiln_agent_exec(a, &o, &st, &out, &n, NULL, NULL);
 *   kiln_free(out); kiln_agent_free(a);
 */
#ifndef KILN_PUBLIC_AGENT_H
#define KILN_PUBLIC_AGENT_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

KILN_BEGIN_DECLS

typedef struct kiln_agent kiln_agent;
typedef struct kiln_proc kiln_proc;

/* Flags; each function names the ones it takes. */
enum {
	KILN_AGENT_AS_ROOT = 1u << 0,    /* as root instead of the guest's user (uid 1000) */
	KILN_AGENT_SHELL = 1u << 1,      /* exec/spawn: /bin/sh -c argv[0] argv[1..] */
	KILN_AGENT_PTY = 1u << 2,        /* spawn: on a pseudo-terminal */
	KILN_AGENT_RESEED = 1u << 3,     /* sync_clock: also reseed the guest's CRNG */
	KILN_AGENT_PARENTS = 1u << 4,    /* file_write: create missing parents */
	KILN_AGENT_EXCLUSIVE = 1u << 5,  /* file_write: -EEXIST if it exists */
	KILN_AGENT_APPEND = 1u << 6,     /* file_write: append instead of truncating */
	KILN_AGENT_CLOSE = 1u << 7,      /* stdin: then close it (EOF) */
	KILN_AGENT_GROUP = 1u << 8,      /* signal: the process group */
	KILN_AGENT_NOFOLLOW = 1u << 9,   /* stat: the symbolic link itself (lstat) */
	KILN_AGENT_RECURSIVE = 1u << 10, /* remove: a whole tree; watch: subdirectories too */
	KILN_AGENT_OVERWRITE = 1u << 11, /* rename: replace an existing target */
	KILN_AGENT_NO_CREATE = 1u << 12, /* write_fd: -ENOENT instead of creating the file */
	KILN_AGENT_CONFINE = 1u << 13, /* exec/spawn/run: own mount namespace (/workspace, /tmp) */
	KILN_AGENT_DISCARD = 1u << 14  /* exec/run: keep no output, only the byte counts */
};

/* Output streams. */
enum kiln_stream { KILN_STDOUT = 1, KILN_STDERR = 2 };

/*
 * A client of the agent behind `vsock_path` (nothing is connected yet).
 * 0, -ENAMETOOLONG (longer than a sun_path), -ENOMEM. Any thread.
 */
KILN_API int kiln_agent_new(const char *vsock_path, kiln_agent **out);

/* Free the client. NULL is fine. No other call on a may run or follow. */
KILN_API void kiln_agent_free(kiln_agent *a);

/* kiln_agent_set_timeout's default, in ms: generous, for guests run
 * nested (50-100x slower than on real KVM). */
#define KILN_AGENT_TIMEOUT_DEFAULT_MS 10000

/* The host-side limit on connecting and on each immediate reply, in ms
 * (default KILN_AGENT_TIMEOUT_DEFAULT_MS; <= 0: none). 0. Not while other
 * calls run on a. */
KILN_API int kiln_agent_set_timeout(kiln_agent *a, int timeout_ms);

/* The message of the last failed call on a; "" when none. Only while no
 * other call on a runs (see the top of this file). */
KILN_API const char *kiln_agent_errmsg(const kiln_agent *a);

/*
 * The agent protocol's error code of the last failed call on a
 * (docs/agent-protocol.md, section 4: "not_found", "exists", "busy", ...)
 * or the host side's: "unreachable" (no VM or agent behind the socket),
 * "timeout", "protocol_error", "host_error"; "" when none.
 * The errno a call returned says the same in C terms (not_found ->
 * -ENOENT, exists -> -EEXIST, timeout -> -ETIMEDOUT, too_large -> -EFBIG,
 * busy -> -EBUSY, permission_denied -> -EACCES). Only while no other call
 * on a runs.
 */
KILN_API const char *kiln_agent_errcode(const kiln_agent *a);

/*
 * Where the last failed call on a failed; kiln_agent_errcode says what it
 * was. kiln_proc_errkind and kiln_watch_errkind say the same of a stream.
 */
enum kiln_agent_fail {
	KILN_AGENT_FAIL_NONE = 0,
	KILN_AGENT_FAIL_AGENT,       /* the agent answered with an error: errcode is its code */
	KILN_AGENT_FAIL_REQUEST,     /* refused before anything was sent: errcode is the agent's */
	KILN_AGENT_FAIL_UNREACHABLE, /* no VM or agent behind the socket, or it went away */
	KILN_AGENT_FAIL_TIMEOUT,     /* a host-side deadline passed (errcode "timeout") */
	KILN_AGENT_FAIL_PROTOCOL,    /* the agent's bytes broke the protocol */
	KILN_AGENT_FAIL_HOST         /* this side: memory, a local fd, a callback's return */
};

/*
 * The kind of the last failed call on a; KILN_AGENT_FAIL_NONE when none.
 * It tells an agent's own `timeout` (a guest-side limit: FAIL_AGENT) from
 * a host-side deadline (FAIL_TIMEOUT), which errcode and errno do not.
 * Only while no other call on a runs, as kiln_agent_errmsg.
 */
KILN_API enum kiln_agent_fail kiln_agent_errkind(const kiln_agent *a);

/*
 * Wait until the agent answers (the guest booted or resumed), polling for
 * at most timeout_ms. 0, -ETIMEDOUT, or -errno. Any thread.
 */
KILN_API int kiln_agent_wait_ready(kiln_agent *a, int timeout_ms);

/*
 * kiln_agent_wait_ready for a caller that waits in short slices (to look
 * at other things between them): each attempt may run on up to hold_ms
 * past timeout_ms while the VMM holds it, so a guest slower to answer
 * than a slice is still met (an abandoned attempt costs the guest a
 * connection setup all the same). A refusal or the VMM's end fails an
 * attempt at once. 0, -ETIMEDOUT, -EPROTONOSUPPORT (the agent speaks
 * another protocol), or -errno. Any thread.
 */
KILN_API int kiln_agent_wait_ready_hold(kiln_agent *a, int timeout_ms, int hold_ms);

/* The guest's settings kiln_agent_configure changes; NULL or 0 members
 * are left alone, at least one must be set. Set size = sizeof(struct
 * kiln_guest_config); a size that ends after mtu (before trust_ca was
 * added) is still taken, without trust_ca. */
struct kiln_guest_config {
	size_t size;
	const char *hostname;
	const char *interface; /* NULL: eth0 */
	const char *address;   /* "10.0.2.15/24" */
	const char *gateway;
	const char *const *dns; /* dns_n nameservers, with KILN_GUEST_SET_DNS */
	size_t dns_n;
	unsigned flags; /* KILN_GUEST_SET_DNS: replace the nameservers (dns_n may be 0) */
	uint32_t mtu;
	/*
	 * A CA certificate for the guest to trust (the egress proxy's, which
	 * intercepts TLS): the public PEM text of exactly one certificate, at
	 * most 8192 bytes, "-----BEGIN CERTIFICATE-----" to
	 * "-----END CERTIFICATE-----" and nothing else (never a key). kiln-init
	 * writes /run/kiln/egress-ca.pem and /run/kiln/ca-bundle.pem (the
	 * image's bundle plus it), patches the image's bundle and anchors on
	 * a writable root, and gives processes it starts SSL_CERT_FILE and
	 * its siblings (docs/agent-protocol.md, configure). "": remove it.
	 */
	const char *trust_ca;
};

enum { KILN_GUEST_SET_DNS = 1u << 0 };

/* Change the guest's hostname, address, route, nameservers, MTU and
 * trusted egress CA in one request (a fork of a snapshot gets its own
 * name this way). 0 or -errno (-EINVAL: nothing set, or a value the
 * agent refuses, checked before it is sent; kiln_agent_error says
 * why). Any thread. */
KILN_API int kiln_agent_configure(kiln_agent *a, const struct kiln_guest_config *cfg);

/* kiln_agent_configure with only trust_ca = pem (NULL or "": remove the
 * CA installed): what a host calls when a running guest's egress CA
 * appears, changes or goes. 0 or -errno as kiln_agent_configure. */
KILN_API int kiln_agent_trust_ca(kiln_agent *a, const char *pem);

/*
 * Set the guest's clock to the host's CLOCK_REALTIME (after a restore or
 * fork, the guest's clock is the snapshot's); KILN_AGENT_RESEED: also mix
 * 64 fresh random bytes into the guest's CRNG, so forks of one snapshot do
 * not share random numbers. *behind_ns (may be NULL): how far the guest
 * was behind. 0 or -errno. Any thread.
 */
KILN_API int kiln_agent_sync_clock(kiln_agent *a, unsigned flags, int64_t *behind_ns);

/* Ask the guest to power off after at most grace_ms for its processes.
 * 0 or -errno. Any thread. */
KILN_API int kiln_agent_shutdown(kiln_agent *a, int grace_ms);

/* What to run. Set size = sizeof(struct kiln_exec_opts): later versions
 * add fields at the end and read only what the caller's size covers. */
struct kiln_exec_opts {
	size_t size;
	const char *const *argv; /* NULL-terminated, at least argv[0] */
	const char *const *env; /* NULL-terminated "NAME=VALUE" (set) or "NAME" (unset); NULL: none */
	const char *cwd;        /* NULL: the user's home */
	unsigned flags;         /* KILN_AGENT_AS_ROOT, KILN_AGENT_SHELL; spawn: KILN_AGENT_PTY */
	uint32_t timeout_ms;    /* the guest kills the process after this long; 0: never */
	uint32_t output_cap; /* exec: bytes kept per stream, 0: 1 MiB; beyond: dropped, flagged */
	const void *stdin_data; /* exec: at most 1 MiB, then EOF; NULL: EOF at once */
	size_t stdin_len;
	/* Added after 0.1.0 (read only as far as size reaches): */
	uint32_t wait_ms;    /* exec/run: the host's limit on the whole call; 0: timeout_ms plus
			   * a margin when timeout_ms is set, else none */
	uint16_t rows, cols; /* spawn with KILN_AGENT_PTY: the terminal; 0: 24x80 */
	uint32_t ring_bytes; /* spawn: the guest's output ring; 0: the agent's default */
	const char *lang;    /* run: "python", "javascript", "typescript", "bash" */
	const void *code;    /* run: the program's text (argv unused) */
	size_t code_len;
};

/* How a process ended. Set size = sizeof(struct kiln_exit_status). */
struct kiln_exit_status {
	size_t size;
	uint32_t id;   /* spawned processes; 0 for exec */
	int pid;       /* in the guest */
	int exit_code; /* 0..255 (124 after a timeout); -1 when a signal ended it */
	int signal;    /* the signal that ended it; 0: none */
	int timed_out; /* killed after timeout_ms */
	uint64_t stdout_bytes, stderr_bytes; /* everything written, dropped bytes included */
	int stdout_truncated, stderr_truncated;
	uint64_t wall_us; /* measured in the guest */
	/* Added after 0.1.0 (read only as far as size reaches): */
	uint64_t user_us, sys_us; /* CPU time in the guest */
	uint64_t host_us;         /* exec/run: connect to exit, measured on this host */
};

/*
 * Run a process to its end and collect its output: *out and *err (malloc'd,
 * NUL-terminated, kiln_free; NULL pointers: that stream is discarded) and
 * their lengths (may be NULL). st (may be NULL) gets the exit status.
 * 0 when the process ran (whatever its exit code), or -errno: -ENOENT
 * (no such program), -ETIMEDOUT, -ECONNREFUSED/-ECONNRESET (VM or agent
 * gone), -EINVAL (bad options); kiln_agent_errcode names the agent's code.
 * Any thread.
 */
KILN_API int kiln_agent_exec(kiln_agent *a, const struct kiln_exec_opts *o,
			     struct kiln_exit_status *st, char **out, size_t *out_len, char **err,
			     size_t *err_len);

/* Receives output as it arrives; a negative return aborts the exec with
 * that value. */
typedef int (*kiln_output_fn)(void *arg, enum kiln_stream stream, const void *data, size_t n);

/* kiln_agent_exec passing output to fn as it arrives instead of
 * collecting it (fn runs on the calling thread). 0 or -errno. Any thread. */
KILN_API int kiln_agent_exec_stream(kiln_agent *a, const struct kiln_exec_opts *o,
				    kiln_output_fn fn, void *arg, struct kiln_exit_status *st);

/* What a run's program left in its result file (docs/agent-protocol.md,
 * 7.3.1). Set size = sizeof(struct kiln_run_result). */
struct kiln_run_result {
	size_t size;
	char *data; /* the file as the guest wrote it (untrusted bytes: validate them),
		     * NUL-terminated, kiln_free; NULL when empty or over the agent's limit */
	size_t len;
	uint64_t file_size; /* the file's size either way */
};

/*
 * Run o->code in o->lang (the agent's `run`; argv unused) as
 * kiln_agent_exec runs a program: the same output, limits and status,
 * plus res (may be NULL; res->data to kiln_free). A language whose
 * interpreter the image lacks: -ENOENT. Any thread.
 */
KILN_API int kiln_agent_run(kiln_agent *a, const struct kiln_exec_opts *o,
			    struct kiln_exit_status *st, char **out, size_t *out_len, char **err,
			    size_t *err_len, struct kiln_run_result *res);

/* kiln_agent_run passing output to fn as it arrives (as
 * kiln_agent_exec_stream). 0 or -errno. Any thread. */
KILN_API int kiln_agent_run_stream(kiln_agent *a, const struct kiln_exec_opts *o, kiln_output_fn fn,
				   void *arg, struct kiln_exit_status *st,
				   struct kiln_run_result *res);

/*
 * Start a background process (it outlives the connection; its output is
 * kept in a ring in the guest) and attach to it: *out streams its events
 * (kiln_proc_next). 0 or -errno. Any thread.
 */
KILN_API int kiln_agent_spawn(kiln_agent *a, const struct kiln_exec_opts *o, kiln_proc **out);

/* Attach to spawned process `id` again, replaying the output its ring
 * still holds. 0, -ENOENT (no such process), or -errno. Any thread. */
KILN_API int kiln_agent_attach(kiln_agent *a, uint32_t id, kiln_proc **out);

/* Where kiln_agent_attach_at starts the stream. */
enum kiln_attach_from {
	KILN_ATTACH_OLDEST = 0, /* the oldest output the ring still holds */
	KILN_ATTACH_NOW,        /* only what comes from now on */
	KILN_ATTACH_SEQ         /* at output offset `seq` (a gap first if it is gone) */
};

/* A process stream as its attach found it. Set size = sizeof(struct
 * kiln_proc_info). */
struct kiln_proc_info {
	size_t size;
	uint32_t id;
	int pid;
	int pty;      /* on a pseudo-terminal */
	int running;  /* 0: it had ended; the stream replays and ends with exit */
	uint64_t seq; /* the first output offset the stream covers */
};

/* kiln_agent_attach starting `from` (seq: with KILN_ATTACH_SEQ). 0 with
 * *out, -ENOENT, or -errno. Any thread. */
KILN_API int kiln_agent_attach_at(kiln_agent *a, uint32_t id, enum kiln_attach_from from,
				  uint64_t seq, kiln_proc **out);

/* What p's spawn or attach found into *info. 0, or -EINVAL when
 * info->size is too small. Any thread. */
KILN_API int kiln_proc_get_info(const kiln_proc *p, struct kiln_proc_info *info);

/* Resize spawned process `id`'s terminal. 0, -EINVAL (it has none), or
 * -errno. Any thread. */
KILN_API int kiln_agent_proc_resize(kiln_agent *a, uint32_t id, uint16_t rows, uint16_t cols);

/* One spawned process, as kiln_agent_list_procs sees it; the pointers
 * are valid during the callback only. */
struct kiln_proc_entry {
	size_t size;
	uint32_t id;
	int pid;
	const char *const *argv; /* argc entries (argv[0] only when argv_truncated) */
	size_t argc;
	int argv_truncated;
	int pty, running;
	int exit_code; /* -1: none (running, or a signal ended it) */
	int signal;    /* 0: none */
	int timed_out;
	uint64_t seq;      /* output bytes so far */
	uint32_t attached; /* streams attached now */
};

/* Called per process of kiln_agent_list_procs; a negative return stops
 * the list and is returned. */
typedef int (*kiln_proc_list_fn)(void *arg, const struct kiln_proc_entry *p);

/* The agent's spawned processes, in its order, to fn. *count (may be
 * NULL): how many. 0, fn's negative return, or -errno. Any thread. */
KILN_API int kiln_agent_list_procs(kiln_agent *a, kiln_proc_list_fn fn, void *arg, uint64_t *count);

/* Wait up to timeout_ms (0: no limit) for spawned process `id` to end.
 * 0 with *st, -ETIMEDOUT, -ENOENT, or -errno. Any thread. */
KILN_API int kiln_agent_proc_wait(kiln_agent *a, uint32_t id, uint32_t timeout_ms,
				  struct kiln_exit_status *st);

/* Send signal `signo` to spawned process `id` (KILN_AGENT_GROUP: to its
 * group). 0 or -errno. Any thread. */
KILN_API int kiln_agent_proc_signal(kiln_agent *a, uint32_t id, int signo, unsigned flags);

/* Write data[n] to spawned process `id`'s stdin (KILN_AGENT_CLOSE: then
 * close it). 0 or -errno. Any thread. */
KILN_API int kiln_agent_proc_stdin(kiln_agent *a, uint32_t id, const void *data, size_t n,
				   unsigned flags);

/* One event of a process stream. Set size = sizeof(struct kiln_proc_event). */
struct kiln_proc_event {
	size_t size;
	enum kiln_stream stream; /* output: which stream; 0 for the exit event */
	const void *data;        /* output, valid until the next call on the stream */
	size_t len;              /* output bytes; 0 for the exit event */
	uint64_t lost;           /* bytes lost to the guest's ring before this event */
	int exited;              /* 1: the last event, exit filled */
	/* Filled with exit.size set by libkiln (from ev->size). Embedded
	 * here, kiln_exit_status keeps this layout: what a process stream
	 * adds about an exit goes at this struct's end, as seq did. */
	struct kiln_exit_status exit;
	/* Added after 0.1.0: the output offset of data[0] (both streams
	 * count together; lost bytes end at seq); exit: the offset after
	 * the last byte. */
	uint64_t seq;
};

/*
 * The next event of the stream, waiting at most timeout_ms in all, lost
 * bytes reported in between included (< 0: no limit). 0 with *ev, -ETIMEDOUT, or -errno (-EPIPE after the exit
 * event). Not thread-safe: one thread at a time per kiln_proc.
 */
KILN_API int kiln_proc_next(kiln_proc *p, int timeout_ms, struct kiln_proc_event *ev);

/* Write to the process's stdin through the stream (KILN_AGENT_CLOSE: then
 * close it). 0 or -errno. One thread at a time per kiln_proc. */
KILN_API int kiln_proc_write_stdin(kiln_proc *p, const void *data, size_t n, unsigned flags);

/* Send a signal through the stream (KILN_AGENT_GROUP: to the group).
 * 0 or -errno. One thread at a time per kiln_proc. */
KILN_API int kiln_proc_signal(kiln_proc *p, int signo, unsigned flags);

/* Resize the process's terminal through the stream (ignored without
 * one). 0 or -errno. One thread at a time per kiln_proc. */
KILN_API int kiln_proc_resize(kiln_proc *p, uint16_t rows, uint16_t cols);

/* The stream's socket, to poll() for readable before kiln_proc_next
 * (call kiln_proc_pending first: decoded bytes may be buffered). One
 * thread at a time per kiln_proc. */
KILN_API int kiln_proc_fd(const kiln_proc *p);

/* 1 when decoded bytes are buffered (kiln_proc_next answers at once).
 * One thread at a time per kiln_proc. */
KILN_API int kiln_proc_pending(const kiln_proc *p);

/* The process's id (for kiln_agent_attach/proc_wait). Any thread. */
KILN_API uint32_t kiln_proc_id(const kiln_proc *p);

/* The message of the last failed call on p; "" when none. One thread at
 * a time per kiln_proc. */
KILN_API const char *kiln_proc_errmsg(const kiln_proc *p);

/* The code and kind of the last failed call on p (as kiln_agent_errcode
 * and kiln_agent_errkind); "" and KILN_AGENT_FAIL_NONE when none. One
 * thread at a time per kiln_proc. */
KILN_API const char *kiln_proc_errcode(const kiln_proc *p);
KILN_API enum kiln_agent_fail kiln_proc_errkind(const kiln_proc *p);

/* Detach (the process keeps running) and free. NULL is fine. No other
 * call on p may run or follow. */
KILN_API void kiln_proc_close(kiln_proc *p);

/*
 * Read the guest file `path` whole into *data (malloc'd, NUL-terminated
 * for convenience, kiln_free) and *len; at most `max` bytes (-EFBIG
 * beyond). flags: KILN_AGENT_AS_ROOT. 0 or -errno (-ENOENT...). Any
 * thread.
 */
KILN_API int kiln_agent_file_read(kiln_agent *a, const char *path, unsigned flags, size_t max,
				  void **data, size_t *len);

/*
 * Write data[n] to the guest file `path` (created mode `mode` when it
 * does not exist; mode < 0: 0644). flags: KILN_AGENT_AS_ROOT,
 * KILN_AGENT_PARENTS, KILN_AGENT_EXCLUSIVE, KILN_AGENT_APPEND. 0 or
 * -errno. Any thread.
 */
KILN_API int kiln_agent_file_write(kiln_agent *a, const char *path, unsigned flags, int mode,
				   const void *data, size_t n);

/*
 * Unpack the ustar archive read from `fd` (to its end) into the guest
 * directory `dir` (created if missing). flags: KILN_AGENT_AS_ROOT. 0 or
 * -errno. Any thread.
 */
KILN_API int kiln_agent_tar_upload(kiln_agent *a, const char *dir, unsigned flags, int fd);

/* Write the guest file or directory tree `path` to `fd` as a ustar
 * archive. flags: KILN_AGENT_AS_ROOT. 0 or -errno. Any thread. */
KILN_API int kiln_agent_tar_download(kiln_agent *a, const char *path, unsigned flags, int fd);

/* ---- streaming files and archives ---- */

/* Receives the bytes of a read or a download as they arrive; a negative
 * return aborts the transfer with that value (kind KILN_AGENT_FAIL_HOST). */
typedef int (*kiln_data_fn)(void *arg, const void *data, size_t n);

/* Fills buf (at most n bytes) for an upload: the count, 0 at the end, or
 * -errno, which abandons the upload before its end (the agent stops; what
 * it already wrote stays). */
typedef long (*kiln_source_fn)(void *arg, void *buf, size_t n);

/* Which part of a file kiln_agent_read reads. Set size = sizeof(struct
 * kiln_read_opts); NULL opts: the whole file as the guest's user. */
struct kiln_read_opts {
	size_t size;
	unsigned flags;  /* KILN_AGENT_AS_ROOT */
	uint64_t offset; /* first byte */
	uint64_t length; /* bytes at most, with has_length */
	int has_length;  /* 0: to the end */
};

/* What kiln_agent_read delivered. Set size = sizeof(struct kiln_read_info). */
struct kiln_read_info {
	size_t size;
	uint64_t file_size; /* the file's size when the agent opened it */
	uint64_t bytes;     /* bytes passed to fn */
};

/*
 * Stream the guest file `path` to fn in chunks (fn runs on the calling
 * thread), never holding it whole. info (may be NULL) says how much came.
 * 0, fn's negative return, or -errno (-ENOENT, -EISDIR...); after a
 * failure the bytes fn already got are incomplete. Any thread.
 */
KILN_API int kiln_agent_read(kiln_agent *a, const char *path, const struct kiln_read_opts *o,
			     kiln_data_fn fn, void *arg, struct kiln_read_info *info);

/* How kiln_agent_write_fd writes. Set size = sizeof(struct kiln_write_opts);
 * NULL opts: create or truncate, 0644, as the guest's user. */
struct kiln_write_opts {
	size_t size;
	unsigned flags; /* KILN_AGENT_AS_ROOT, _PARENTS, _EXCLUSIVE, _APPEND, _NO_CREATE */
	int mode;       /* a created file's permission bits; < 0: 0644 */
};

/*
 * Write everything readable from `fd` (to its EOF; blocking or not) to the
 * guest file `path`. *bytes (may be NULL): the bytes written. 0 or -errno
 * (-EEXIST with KILN_AGENT_EXCLUSIVE, -ENOENT with KILN_AGENT_NO_CREATE,
 * -EINVAL for both). Any thread.
 */
KILN_API int kiln_agent_write_fd(kiln_agent *a, const char *path, const struct kiln_write_opts *o,
				 int fd, uint64_t *bytes);

/* What a tar transfer moved. Set size = sizeof(struct kiln_tar_stats). */
struct kiln_tar_stats {
	size_t size;
	uint64_t files, dirs, symlinks, hardlinks;
	uint64_t skipped; /* members the agent left out (devices, ...) */
	uint64_t bytes;   /* the archive's bytes */
};

/*
 * kiln_agent_tar_upload with the archive from src (called on the calling
 * thread until it returns 0) instead of an fd. st (may be NULL) gets the
 * counts. 0, src's negative return, or -errno. Any thread.
 */
KILN_API int kiln_agent_tar_upload_cb(kiln_agent *a, const char *dir, unsigned flags,
				      kiln_source_fn src, void *arg, struct kiln_tar_stats *st);

/*
 * kiln_agent_tar_download with the archive passed to fn as it arrives.
 * st (may be NULL) gets the counts. 0, fn's negative return, or -errno.
 * Any thread.
 */
KILN_API int kiln_agent_tar_download_cb(kiln_agent *a, const char *path, unsigned flags,
					kiln_data_fn fn, void *arg, struct kiln_tar_stats *st);

/* ---- the guest itself ---- */

/* The agent answers: 0 with *protocol (may be NULL; 1 for this protocol
 * version), or -errno. Any thread. */
KILN_API int kiln_agent_ping(kiln_agent *a, int *protocol);

/* What kiln_agent_info reports. Set size = sizeof(struct kiln_guest_info). */
struct kiln_guest_info {
	size_t size;
	int protocol;
	char agent_version[64];
	char kernel[128]; /* uname -r */
	char hostname[65];
	uint32_t cpus;
	uint64_t mem_total, mem_available; /* bytes */
	uint64_t uptime_ms;
	int64_t time_ns;    /* the guest's CLOCK_REALTIME */
	uint32_t processes; /* the agent's running processes */
};

/* The agent's description of the guest into *info (strings longer than
 * their array are cut at a character boundary). 0 or -errno. Any thread. */
KILN_API int kiln_agent_info(kiln_agent *a, struct kiln_guest_info *info);

/* ---- the guest's files ---- */

enum kiln_file_kind {
	KILN_FILE_REGULAR = 0,
	KILN_FILE_DIR,
	KILN_FILE_SYMLINK,
	KILN_FILE_FIFO,
	KILN_FILE_SOCKET,
	KILN_FILE_CHAR,
	KILN_FILE_BLOCK,
	KILN_FILE_OTHER
};

/* One guest file, as kiln_agent_stat and kiln_agent_list see it. Set
 * size = sizeof(struct kiln_file_info) for kiln_agent_stat. */
struct kiln_file_info {
	size_t size;
	const char *path;   /* stat: malloc'd (kiln_free); list: valid during the callback */
	const char *target; /* a symbolic link's target (owned as path), else NULL */
	enum kiln_file_kind kind;
	uint64_t file_size; /* bytes */
	uint32_t mode;      /* permission bits */
	uint32_t uid, gid;
	uint64_t nlink;
	int64_t mtime_ns;
	uint32_t depth; /* list: 1 for the directory's own entries */
	int lossy;      /* the name held bytes that are not UTF-8, replaced by U+FFFD */
};

/* "file", "dir", "symlink", "fifo", "socket", "char", "block", "unknown":
 * the protocol's names. Static storage. Any thread. */
KILN_API const char *kiln_file_kind_name(enum kiln_file_kind kind);

/*
 * stat (or lstat with KILN_AGENT_NOFOLLOW) the guest file `path` into
 * *st. flags: KILN_AGENT_AS_ROOT, KILN_AGENT_NOFOLLOW. 0 (st->path and
 * st->target to kiln_free) or -errno (-ENOENT...). Any thread.
 */
KILN_API int kiln_agent_stat(kiln_agent *a, const char *path, unsigned flags,
			     struct kiln_file_info *st);

/* Called per entry of kiln_agent_list; a negative return stops the list
 * and is returned. */
typedef int (*kiln_list_fn)(void *arg, const struct kiln_file_info *entry);

/* How a kiln_agent_list ended. Set size = sizeof(struct kiln_list_end). */
struct kiln_list_end {
	size_t size;
	uint64_t count;   /* entries sent */
	int truncated;    /* the limit was reached */
	uint64_t skipped; /* entries the agent could not read */
};

/*
 * List the guest directory `path`, `depth` levels deep (0: 1), at most
 * `limit` entries (0: the agent's default, 10000): fn per entry,
 * depth-first, a directory before its contents. end may be NULL. flags:
 * KILN_AGENT_AS_ROOT. 0, fn's negative return, or -errno (-ENOTDIR...).
 * Any thread.
 */
KILN_API int kiln_agent_list(kiln_agent *a, const char *path, unsigned flags, uint32_t depth,
			     uint32_t limit, kiln_list_fn fn, void *arg, struct kiln_list_end *end);

/* Make the guest directory `path` (mode < 0: 0755). flags:
 * KILN_AGENT_AS_ROOT, KILN_AGENT_PARENTS. 0 or -errno (-EEXIST...). Any
 * thread. */
KILN_API int kiln_agent_mkdir(kiln_agent *a, const char *path, unsigned flags, int mode);

/* Remove a guest file, symbolic link or empty directory; with
 * KILN_AGENT_RECURSIVE a whole tree. flags: also KILN_AGENT_AS_ROOT.
 * 0 or -errno (-ENOTEMPTY...). Any thread. */
KILN_API int kiln_agent_remove(kiln_agent *a, const char *path, unsigned flags);

/* Rename `from` to `to` in the guest. flags: KILN_AGENT_AS_ROOT,
 * KILN_AGENT_OVERWRITE (else -EEXIST when `to` exists). 0 or -errno.
 * Any thread. */
KILN_API int kiln_agent_rename(kiln_agent *a, const char *from, const char *to, unsigned flags);

/* ---- the guest's ports ---- */

/*
 * Connect to guest TCP port `port` (1..65535) on the guest's loopback
 * (`address` "127.0.0.1" or "::1"; NULL: 127.0.0.1) through the agent.
 * 0 with *fd, a non-blocking close-on-exec stream socket carrying the
 * connection's bytes both ways (shutdown(SHUT_WR) reaches the guest
 * server as EOF; close ends it; the fd is the caller's), or -errno
 * (-ECONNREFUSED: nothing listens there). Any thread.
 */
KILN_API int kiln_agent_tcp_connect(kiln_agent *a, uint32_t port, const char *address, int *fd);

/*
 * Connect to the guest's AF_VSOCK port `port` itself, through the VM's
 * vsock socket (the VMM's CONNECT handshake; no agent request): for a
 * guest service of the caller's own. 0 with *fd, a non-blocking
 * close-on-exec stream socket positioned at the service's first byte (the
 * caller's), or -errno: -ECONNRESET (nothing listens there), -ENOENT or
 * -ECONNREFUSED (no VM behind the socket), -ETIMEDOUT (the client's
 * timeout). Any thread.
 */
KILN_API int kiln_agent_vsock_connect(kiln_agent *a, uint32_t port, int *fd);

/* ---- watching a directory ---- */

typedef struct kiln_watch kiln_watch;

enum kiln_fs_change {
	KILN_FS_CREATE = 0,
	KILN_FS_MODIFY,
	KILN_FS_DELETE,
	KILN_FS_RENAME,  /* path is the new name, old_path the old one */
	KILN_FS_OVERFLOW /* changes were lost: reason, dropped */
};

/* One change. Strings are valid until the next call on the watch. */
struct kiln_fs_event {
	size_t size; /* set to sizeof(struct kiln_fs_event) */
	enum kiln_fs_change change;
	uint64_t seq;         /* 0, 1, ... (checked: none is missed silently) */
	const char *path;     /* below the watched directory */
	const char *old_path; /* KILN_FS_RENAME, else NULL */
	int is_dir, lossy;
	const char *reason; /* KILN_FS_OVERFLOW: "queue", "kernel", "watch_limit" */
	uint64_t dropped;   /* KILN_FS_OVERFLOW */
};

/*
 * Watch the guest directory `path` for changes (one connection held
 * until kiln_watch_close). flags: KILN_AGENT_AS_ROOT,
 * KILN_AGENT_RECURSIVE. *watches (may be NULL): the inotify watches the
 * agent placed. 0 with *out, or -errno with the message on a. Any thread.
 */
KILN_API int kiln_agent_watch(kiln_agent *a, const char *path, unsigned flags, kiln_watch **out,
			      uint32_t *watches);

/* A watch's limits. Set size = sizeof(struct kiln_watch_opts). */
struct kiln_watch_opts {
	size_t size;
	unsigned flags;       /* KILN_AGENT_AS_ROOT, KILN_AGENT_RECURSIVE */
	uint32_t max_watches; /* inotify watches at most; 0: the agent's default (8192) */
	uint32_t queue;       /* changes queued for a slow reader; 0: the agent's default */
};

/* kiln_agent_watch with limits (o NULL: as kiln_agent_watch with flags 0).
 * 0 with *out, or -errno (-ENOENT, -ENOTDIR, -EINVAL...). Any thread. */
KILN_API int kiln_agent_watch_with(kiln_agent *a, const char *path, const struct kiln_watch_opts *o,
				   kiln_watch **out, uint32_t *watches);

/*
 * The next change, waiting at most timeout_ms (< 0: no limit): 0 with
 * *ev; 1 when the watch ended (the directory went: *end_reason, may be
 * NULL, says "deleted", "moved", "unmounted" or "error"); -ETIMEDOUT
 * when nothing came (the watch goes on); another -errno ends it (message
 * in kiln_watch_errmsg). One thread at a time per watch.
 */
KILN_API int kiln_watch_next(kiln_watch *w, int timeout_ms, struct kiln_fs_event *ev,
			     const char **end_reason);

/* The watch's socket, to poll() for readable before kiln_watch_next
 * (call kiln_watch_pending first: decoded changes may be buffered). */
KILN_API int kiln_watch_fd(const kiln_watch *w);

/* 1 when changes are buffered (kiln_watch_next answers at once). */
KILN_API int kiln_watch_pending(const kiln_watch *w);

/* The message of the last failed call on w; "" when none. */
KILN_API const char *kiln_watch_errmsg(const kiln_watch *w);

/* The code and kind of the last failed call on w (as kiln_agent_errcode
 * and kiln_agent_errkind: KILN_AGENT_FAIL_UNREACHABLE when the VM went
 * away); "" and KILN_AGENT_FAIL_NONE when none. One thread at a time per
 * watch. */
KILN_API const char *kiln_watch_errcode(const kiln_watch *w);
KILN_API enum kiln_agent_fail kiln_watch_errkind(const kiln_watch *w);

/* End the watch and free it. NULL is fine. No other call on w may run or
 * follow. */
KILN_API void kiln_watch_close(kiln_watch *w);

KILN_END_DECLS

#endif
