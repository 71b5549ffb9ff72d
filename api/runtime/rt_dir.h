/*
 * rt_dir: kiln-runtime's state directory on disk (--root, default
 * /run/kiln-runtime; docs/oci-runtime.md "State directory"):
 *
 *   <root>/            0700, made with its parents by create
 *     <id>/            0700: one per container
 *       lock           flock'ed by every command but state and list
 *       state.json     rt_state's record, written tmp + fsync + rename
 *       ...            the shim's socket, logs and the jail directory vm/
 *
 * Contract: system calls on descriptors (openat, never a path joined
 * from an ID: the ID was checked by rt_id_check, and still no link in
 * <root> is followed). Results are 0 or -errno with e saying what failed
 * in the words engines match: `container "ID" does not exist`
 * (containerd and Podman read "does not exist" as no such container),
 * `container "ID" already exists`.
 */
#ifndef KILN_RT_DIR_H
#define KILN_RT_DIR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "api/runtime/rt_state.h"
#include "lib/base/err.h"

#define RT_STATE_FILE "state.json"
#define RT_LOCK_FILE "lock"
#define RT_LOCK_WAIT_MS 30000 /* then one line: another command holds the container */
#define RT_REMOVE_DEPTH 16    /* how deep delete descends (vm/checkpoints/...) */
#define RT_LIST_MAX 65536     /* containers `list` reads */

/* Open <root> (*fd); with create, make it and its parents (0700) first.
 * A root that is not a directory, or that another user owns or may
 * write, is refused: every container's record is in it. */
int rt_dir_open_root(const char *root, bool create, int *fd, struct err *e);

/* Make <root>/<id> (0700) and open it (*dirfd). */
int rt_dir_make(int rootfd, const char *id, int *dirfd, struct err *e);

/* Open an existing <root>/<id> (*dirfd). */
int rt_dir_open(int rootfd, const char *id, int *dirfd, struct err *e);

/* Take the container's lock (exclusive flock on <id>/lock), waiting up to
 * wait_ms; *lockfd holds it until closed. */
int rt_dir_lock(int dirfd, const char *id, int wait_ms, int *lockfd, struct err *e);

/* The regular file name beneath dirfd (a link followed only with
 * follow), read whole into *buf (malloc'ed, NUL-terminated, *n bytes):
 * -EFBIG over max bytes. e names the file as `what`. */
int rt_file_read(int dirfd, const char *name, bool follow, size_t max, const char *what, char **buf,
		 size_t *n, struct err *e);

/* The same for name in the directory dir (a path; "dir: ..." when it
 * cannot be opened, named dir_what). */
int rt_file_read_in(const char *dir, const char *dir_what, const char *name, bool follow,
		    size_t max, const char *what, char **buf, size_t *n, struct err *e);

/* name (beneath dirfd, AT_FDCWD: from the current directory) replaced
 * whole (lib/base/file_replace: name.tmp, fsync, rename, the directory's
 * fsync), so a reader never sees it half-written. e starts with `what`. */
int rt_file_replace(int dirfd, const char *name, const void *buf, size_t n, mode_t mode,
		    const char *what, struct err *e);

/* state.json, read whole (at most RT_STATE_FILE_MAX) and decoded. */
int rt_dir_read_state(int dirfd, const char *id, struct rt_state_rec *r, struct err *e);

/* state.json written to state.json.tmp, fsync'ed and renamed over. */
int rt_dir_write_state(int dirfd, const struct rt_state_rec *r, struct err *e);

/*
 * Remove <root>/<id> and what it holds, never following a link and
 * never descending into a mount point (a bind still mounted there is
 * the user's data: -EBUSY, and nothing of it is touched), at most
 * RT_REMOVE_DEPTH deep.
 */
int rt_dir_remove(int rootfd, const char *id, struct err *e);

/*
 * --pid-file PATH: pid as decimal text (runc writes no newline), written
 * to a temporary file beside PATH and renamed over it, so the engine that
 * waits for the file (containerd's shim reads it once create returns,
 * conmon too) never reads it half-written. PATH must be absolute or is
 * taken from the current directory, as runc.
 */
int rt_pid_file_write(const char *path, int pid, struct err *e);

/*
 * Host id ranges for the containers' jails: <root>/.ids/<first>, made
 * O_EXCL and holding the container's ID, one per container; the range
 * is first..first+RT_IDS_SIZE-1 (a user namespace's 0..65535 once
 * shares are idmapped), apart from kilnd's --jail-ids.
 */
#define RT_IDS_DIR ".ids"
#define RT_WARM_DIR ".warm" /* warm starts' templates (rt_warm.h) */
#define RT_IDS_BASE 2100000000u
#define RT_IDS_SIZE 65536u
#define RT_IDS_SLOTS 256u /* RT_IDS_BASE + slots * size stays below 2^31 */

/* Take a free range of slots (at most RT_IDS_SLOTS) for container id. */
int rt_ids_take(int rootfd, const char *id, unsigned slots, uint32_t *first, struct err *e);

/* Give back the range starting at first, when id holds it (not
 * another container's after a reuse). */
int rt_ids_free(int rootfd, uint32_t first, const char *id, struct err *e);

/* Every file of dirfd/name removed (not followed, no directory
 * descended), then the directory: kiln-vmm's snapshots. Quiet. */
void rt_dir_clear(int dirfd, const char *name);

/* 64-bit FNV-1a of a string: names, never a security boundary. Pure. */
uint64_t rt_hash64(const char *s);

/*
 * kiln-vmm's jail directory, where its vsock and control sockets are:
 * RT_JAIL_ROOT/<16 hex digits of a hash of the container's directory
 * path>, short whatever --root is (a Unix socket's path has 107 bytes,
 * kiln-vmm's vsock 96 to leave room for its ports: Docker's runtime root
 * /var/run/docker/runtime-runc/moby/<64 hex>/ alone takes 98). Pure.
 */
#define RT_JAIL_ROOT "/run/kiln-runtime-vm"
#define RT_JAIL_PATH_MAX 64
void rt_jail_path(const char *dir, char out[RT_JAIL_PATH_MAX]);

/* The TAP kiln-runtime makes in the container's network namespace
 * (rt_net.h): "kt" and 12 hex digits of the jail path's hash, its own
 * whatever else shares the namespace (IFNAMSIZ: at most 15 bytes). Pure. */
#define RT_TAP_NAME_MAX 16
void rt_tap_name(const char *jail, char out[RT_TAP_NAME_MAX]);

/* Make RT_JAIL_ROOT (0711) and the jail directory (0755, root's). */
int rt_jail_make(const char *jail, struct err *e);

/* Remove the jail directory and the sockets in it (gone: 0). */
int rt_jail_remove(const char *jail, struct err *e);

/* Whether the process pid started at start is alive (a zombie is not:
 * it has ended, its parent has not reaped it yet). */
bool rt_proc_alive(int pid, uint64_t start);

/* The status to report of a record: its own while its shim lives, else
 * stopped; *pid the shim's pid, 0 once stopped (runc's rule). */
enum rt_status rt_dir_status(const struct rt_state_rec *r, int *pid);

/* The IDs under <root> (valid names only, sorted); free with
 * rt_dir_list_free. */
int rt_dir_list(int rootfd, char ***ids, size_t *n, struct err *e);

void rt_dir_list_free(char **ids, size_t n);

#endif
