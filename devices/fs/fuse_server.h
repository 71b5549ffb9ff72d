/*
 * fuse_server: an in-process FUSE passthrough server for virtio-fs
 * (virtio 1.2, 5.11; protocol from <linux/fuse.h>), serving one host
 * directory (the share) to one guest.
 *
 * Contract:
 *  - Pure request handling: fuse_server_handle() takes one request as the
 *    guest sent it (fuse_in_header + arguments) and writes one reply
 *    (fuse_out_header + body, or an error as -errno in the header). No
 *    threads, no guest memory; the device model (virtio_fs.c) moves bytes.
 *  - The guest is hostile. A request shorter than its header, whose
 *    header.len differs from what arrived, whose arguments are too short
 *    for the opcode, or whose names are not NUL-terminated gets -EINVAL;
 *    an unknown opcode gets -ENOSYS; a reply that does not fit in out_cap
 *    gets -ERANGE before the request has any effect. When not even a
 *    fuse_out_header fits, nothing is written and 0 is returned.
 *  - Node ids name O_PATH fds the server holds, in a table keyed by
 *    (st_dev, st_ino) with lookup counts; FORGET drops them. A node id that
 *    is unknown, stale (its slot was reused: the id carries a generation)
 *    or forgotten gets -ENOENT. File handles (fh) are indices plus a
 *    generation into a bounded table, checked on every use: -EBADF.
 *  - Confinement: every name the guest sends is one path component (no
 *    '/', not "." or "..": -EINVAL) and is resolved beneath its parent's
 *    fd with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) and
 *    O_NOFOLLOW, so a symlink in the share is a node the guest can
 *    readlink but never a path the host follows. Only regular files and
 *    directories are ever opened for I/O on the host (never fifos or
 *    device nodes); MKNOD creates only regular files, fifos and sockets.
 *    Reopening a node for I/O goes through /proc/self/fd of the server's
 *    own fd, opened when first needed (after the jail: its own /proc).
 *    The share itself is served from a detached clone of the directory
 *    (lib/base/mount_clone.h) when the process may make one, so ".." from any
 *    descriptor the server holds stops at the share's root.
 *  - A read-only share answers every modifying opcode (and OPEN for
 *    writing or with O_TRUNC) with -EROFS.
 *  - Modes the guest sets on regular files lose S_ISUID and S_ISGID: a VMM
 *    running as root must not let a guest plant set-id files on the host.
 *  - Bounded: at most FUSE_SERVER_MAX_INODES nodes and
 *    FUSE_SERVER_MAX_HANDLES open handles (-ENFILE beyond), I/O of at most
 *    FUSE_SERVER_MAX_WRITE bytes per request. Every node and handle holds
 *    one host fd, so the process's RLIMIT_NOFILE should be raised to its
 *    hard limit before a guest mounts a large tree (the caller's decision:
 *    this module changes no process-wide state).
 *  - Not implemented (-ENOSYS, so the guest kernel stops asking): xattrs,
 *    POSIX/flock locks (the guest kernel then keeps locks local), ioctl,
 *    poll, bmap, copy_file_range, DAX mappings, syncfs, tmpfile.
 *  - Snapshots: fuse_server_save() writes the node and handle tables
 *    (fuse_state.h) with each node's path beneath the share, derived from
 *    the kernel's name for its fd and checked by resolving it again;
 *    fuse_server_restore() reopens them in a new process (see there).
 *    Node ids and file handles the guest holds stay exactly valid.
 *  - Single-threaded: the caller serialises calls on one server.
 */
#ifndef KILN_FUSE_SERVER_H
#define KILN_FUSE_SERVER_H

#include <stddef.h>

#include "lib/base/err.h"

/*
 * Largest READ/WRITE payload, advertised as max_write and max_pages. A
 * virtio-fs request carries one descriptor per page plus four for the
 * headers, and virtq accepts chains of VIRTQ_MAX_CHAIN (256) buffers:
 * 128 pages leave room.
 */
#define FUSE_SERVER_MAX_WRITE (512u * 1024u)
/* Largest request and reply the server produces or accepts in full. */
#define FUSE_SERVER_MAX_REQUEST (FUSE_SERVER_MAX_WRITE + 4096u)
#define FUSE_SERVER_MAX_REPLY (FUSE_SERVER_MAX_WRITE + 4096u)
#define FUSE_SERVER_MAX_INODES (1u << 18)
#define FUSE_SERVER_MAX_GRAFTS 64 /* fuse_server_graft's names */
#define FUSE_SERVER_GRAFT_NAME_MAX 255
#define FUSE_SERVER_MAX_HANDLES 16384u

struct fuse_server;

/*
 * Serve directory `root` (read-only when `read_only`). Needs openat2
 * (Linux 5.6) and /proc mounted. 0, or -errno with `e` saying what failed.
 */
int fuse_server_open(struct fuse_server **out, const char *root, int read_only, struct err *e);

/*
 * The same for a directory the caller opened (any open mode, O_PATH
 * included): the server keeps its own descriptor of it (a detached clone,
 * see above), so dir_fd stays the caller's, and a caller about to jail
 * itself must close dir_fd: it still leads to the host's tree. Nothing is resolved by path: a caller that opened the
 * directory without following symbolic links (kilnd) shares exactly that
 * directory. -ENOTDIR when dir_fd is not a directory.
 */
int fuse_server_open_fd(struct fuse_server **out, int dir_fd, int read_only, struct err *e);

/*
 * Handle one request of `in_len` bytes at `in`; write the reply into
 * `out` (at most `out_cap` bytes). Returns the reply's length, or 0 when
 * the request gets no reply (FORGET, BATCH_FORGET, or out_cap too small
 * even for a fuse_out_header). Never fails otherwise: errors travel in the
 * reply.
 */
long fuse_server_handle(struct fuse_server *s, const void *in, size_t in_len, void *out,
			size_t out_cap);

/*
 * Drop the FUSE session: close every handle and forget every node but the
 * root, as if the guest had unmounted. For a device reset; INIT and
 * DESTROY do the same.
 */
void fuse_server_reset(struct fuse_server *s);

/* 1 while a guest session exists (INIT seen, no DESTROY or reset since). */
int fuse_server_active(const struct fuse_server *s);

/*
 * Save the session (node and handle tables) into buf (cap bytes): the
 * bytes written, -E2BIG when they do not fit, -errno. A node whose path
 * beneath the share cannot be found now (deleted, moved out of the share)
 * is saved stale.
 */
long fuse_server_save(struct fuse_server *s, void *buf, size_t cap);

/*
 * Replace the session with a saved one (a server just opened on the share,
 * which may be another directory). Every node is reopened by its path
 * beneath the root with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS) and O_PATH | O_NOFOLLOW, and kept when it is the
 * same kind of file (and, when the root is the very directory that was
 * saved, the same st_dev/st_ino); every handle is reopened from its node
 * with its flags minus O_CREAT/O_EXCL/O_TRUNC. What cannot be found again
 * becomes stale: its id stays valid for FORGET and RELEASE, everything
 * else gets -ESTALE. Never resolves anything outside the share. 0, or
 * -EINVAL with e saying why the bytes were refused (fuse_state_parse),
 * -ENOMEM; the server then has no session.
 */
int fuse_server_restore(struct fuse_server *s, const void *buf, size_t len, struct err *e);

/* Stale nodes plus stale handles (what the last restore could not reopen). */
unsigned fuse_server_stale(const struct fuse_server *s);

/*
 * Grafts: a directory attached beneath the share's root under a name,
 * after the guest mounted it (kiln-runtime's pod share: each further
 * container's rootfs and binds arrive while the VM runs, and the share is
 * a clone taken at boot that later host mounts never reach). A LOOKUP of
 * that name in the root is the grafted directory, whatever the share
 * holds there; READDIR does not list it; lookups beneath it are confined
 * as any (".." stops at the share's root in the guest; on the host the
 * descriptor must be a mount's root, a detached clone, so ".." from it
 * stops there).
 *
 * fuse_server_graft takes fd (O_PATH of a directory; on success the
 * server's, closed when replaced, ungrafted or at close) for name (one
 * component, 1..FUSE_SERVER_GRAFT_NAME_MAX bytes, not "." or ".."), and
 * replaces a graft of that name. 0; -EINVAL (the name), -ENOTDIR,
 * -EXDEV (not a mount's root), -ENOSPC (FUSE_SERVER_MAX_GRAFTS in use), -ENOMEM: fd stays the
 * caller's. fuse_server_ungraft drops one: 0 or -ENOENT; the guest's
 * nodes beneath it keep their own descriptors until it forgets them.
 * Not a session's: a reset or a restore keeps them; a snapshot saves the
 * nodes beneath a graft stale.
 */
int fuse_server_graft(struct fuse_server *s, const char *name, int fd);
int fuse_server_ungraft(struct fuse_server *s, const char *name);

/* Close every fd the server holds and free it; NULL is fine. */
void fuse_server_close(struct fuse_server *s);

#endif
