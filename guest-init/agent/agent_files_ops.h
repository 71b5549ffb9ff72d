/*
 * agent_files_ops: the file operations behind agent_files_serve(), and the
 * helpers they share (docs/agent-protocol.md, section 7.5).
 *
 * Contract:
 *  - Each op_* handler runs with the request user's credentials already in
 *    place (fs_cred_enter), sends every reply line of its request itself
 *    (including error lines) and returns. A failed send means the host is
 *    gone: the handler stops. Handlers never close the connection.
 *  - Nothing is held whole in memory: transfers move in AGENT_CHUNK_MAX
 *    pieces, directory walks hold a bounded number of descriptors.
 *  - Guest paths from requests are resolved normally (symlinks followed)
 *    unless a field says otherwise; only tar members are confined.
 */
#ifndef KILN_AGENT_FILES_OPS_H
#define KILN_AGENT_FILES_OPS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "guest-init/agent/agent_conn.h"
#include "api/proto/agent_proto.h"

/* ---- credentials (agent_fs.c) ---- */

/*
 * The calling thread's file credentials, switched to the request's user
 * for one operation. Only this thread changes: fsuid/fsgid and the
 * supplementary groups through raw syscalls (glibc's wrappers would
 * broadcast setgroups to every thread), and the umask through a private
 * fs_struct (unshare(CLONE_FS)), set to 0 so that modes are applied exactly.
 */
struct fs_cred {
	uid_t uid;
	gid_t gid;
	uid_t old_fsuid;
	gid_t old_fsgid;
	mode_t old_umask;
	gid_t *groups; /* supplementary groups dropped for the operation */
	int ngroups;
	int stage; /* how far fs_cred_enter got, for leave */
};

/* Switch to `user`. 0, or -errno with everything undone. */
int fs_cred_enter(struct fs_cred *c, enum agent_user user);
/* Restore what fs_cred_enter changed. */
void fs_cred_leave(struct fs_cred *c);

/* ---- shared helpers (agent_fs.c) ---- */

/*
 * Send an error line for errno value `err` (positive or negative): the
 * code from agent_errno_code(), the message "<what>: <strerror>; <hint>".
 * Returns what the send returned.
 */
int fs_send_errno(struct agent_conn *c, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Send an error line with an explicit code. */
int fs_send_error(struct agent_conn *c, enum agent_code code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * mkdir -p: create every missing directory of `path` with exactly `mode`;
 * existing directories (symlinks to them too) are fine. 0, -EEXIST when a
 * non-directory is in the way, or another -errno.
 */
int fs_mkdir_p(const char *path, mode_t mode);

/*
 * Give the directory `name` in `dirfd`, just created by us, exactly `mode`
 * when it has bits mkdir(2) drops (setuid, setgid). Never follows a
 * symlink swapped in meanwhile. 0 or -errno.
 */
int fs_dir_mode_fixup(int dirfd, const char *name, mode_t mode);

/* openat2() with `resolve` flags and O_CLOEXEC; fd or -errno. */
int fs_openat2(int dirfd, const char *path, int flags, mode_t mode, uint64_t resolve);

/* st_mtim as nanoseconds since the epoch, saturated to int64. */
int64_t fs_mtime_ns(const struct stat *st);

/* ---- operations ---- */

void op_read(struct agent_conn *c, const struct agent_file_req *f);
void op_write(struct agent_conn *c, struct agent_msg *req);
void op_stat(struct agent_conn *c, const struct agent_file_req *f, bool exists_only);
void op_mkdir(struct agent_conn *c, const struct agent_file_req *f);
void op_rename(struct agent_conn *c, const struct agent_file_req *f);
void op_list_dir(struct agent_conn *c, const struct agent_file_req *f);     /* agent_list.c */
void op_remove(struct agent_conn *c, const struct agent_file_req *f);       /* agent_remove.c */
void op_tar_upload(struct agent_conn *c, struct agent_msg *req);            /* agent_tar_io.c */
void op_tar_download(struct agent_conn *c, const struct agent_file_req *f); /* agent_tar_io.c */

#endif
