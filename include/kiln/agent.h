/*
 * kiln/agent.h: talk to kiln-init's agent in a guest, over the VM's vsock
 * socket (kiln_vm_vsock_path; docs/agent-protocol.md). The same client
 * code kilnd uses. Every request is its own vsock connection, so one
 * kiln_agent may be used from several threads at once; its message
 * (kiln_agent_errmsg) is then the last failure's of any of them.
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
	KILN_AGENT_OVERWRITE = 1u << 11  /* rename: replace an existing target */
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

/* The host-side limit on connecting and on each immediate reply, in ms
 * (default 10000; <= 0: none). 0. Not while other calls run on a. */
KILN_API int kiln_agent_set_timeout(kiln_agent *a, int timeout_ms);

/* The message of the last failed call on a; "" when none. Any thread. */
KILN_API const char *kiln_agent_errmsg(const kiln_agent *a);

/*
 * The agent protocol's error code of the last failed call on a
 * (docs/agent-protocol.md, section 4: "not_found", "exists", "busy", ...)
 * or the host side's: "unreachable" (no VM or agent behind the socket),
 * "timeout", "protocol_error", "host_error"; "" when none.
 * The errno a call returned says the same in C terms (not_found ->
 * -ENOENT, exists -> -EEXIST, timeout -> -ETIMEDOUT, too_large -> -EFBIG,
 * busy -> -EBUSY, permission_denied -> -EACCES). Any thread.
 */
KILN_API const char *kiln_agent_errcode(const kiln_agent *a);

/*
 * Wait until the agent answers (the guest booted or resumed), polling for
 * at most timeout_ms. 0, -ETIMEDOUT, or -errno. Any thread.
 */
KILN_API int kiln_agent_wait_ready(kiln_agent *a, int timeout_ms);

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

/*
 * Start a background process (it outlives the connection; its output is
 * kept in a ring in the guest) and attach to it: *out streams its events
 * (kiln_proc_next). 0 or -errno. Any thread.
 */
KILN_API int kiln_agent_spawn(kiln_agent *a, const struct kiln_exec_opts *o, kiln_proc **out);

/* Attach to spawned process `id` again, replaying the output its ring
 * still holds. 0, -ENOENT (no such process), or -errno. Any thread. */
KILN_API int kiln_agent_attach(kiln_agent *a, uint32_t id, kiln_proc **out);

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
	enum kiln_stream stream;      /* output: which stream; 0 for the exit event */
	const void *data;             /* output, valid until the next call on the stream */
	size_t len;                   /* output bytes; 0 for the exit event */
	uint64_t lost;                /* bytes lost to the guest's ring before this event */
	int exited;                   /* 1: the last event, exit filled */
	struct kiln_exit_status exit; /* set exit.size too */
};

/*
 * The next event of the stream, waiting at most timeout_ms (< 0: no
 * limit). 0 with *ev, -ETIMEDOUT, or -errno (-EPIPE after the exit
 * event). Not thread-safe: one thread at a time per kiln_proc.
 */
KILN_API int kiln_proc_next(kiln_proc *p, int timeout_ms, struct kiln_proc_event *ev);

/* Write to the process's stdin through the stream (KILN_AGENT_CLOSE: then
 * close it). 0 or -errno. One thread at a time per kiln_proc. */
KILN_API int kiln_proc_write_stdin(kiln_proc *p, const void *data, size_t n, unsigned flags);

/* Send a signal through the stream (KILN_AGENT_GROUP: to the group).
 * 0 or -errno. One thread at a time per kiln_proc. */
KILN_API int kiln_proc_signal(kiln_proc *p, int signo, unsigned flags);

/* The process's id (for kiln_agent_attach/proc_wait). Any thread. */
KILN_API uint32_t kiln_proc_id(const kiln_proc *p);

/* The message of the last failed call on p; "" when none. One thread at
 * a time per kiln_proc. */
KILN_API const char *kiln_proc_errmsg(const kiln_proc *p);

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

/* End the watch and free it. NULL is fine. No other call on w may run or
 * follow. */
KILN_API void kiln_watch_close(kiln_watch *w);

KILN_END_DECLS

#endif
