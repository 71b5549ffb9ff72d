/*
 * virtio_fs: a host directory shared with the guest (virtio 1.2, 5.11),
 * served by the in-process FUSE passthrough server (fuse_server.h); or a
 * client-served share, whose files a server on a Unix socket serves
 * (fuse_remote.h, fuse_remote_io.h: each request that needs the client is
 * one line to it, the device thread waiting for the reply at most the
 * share's timeout).
 *
 * Contract:
 *  - Two queues: 0 = hiprio (FORGET), 1 = the one request queue
 *    (num_request_queues = 1). No device feature bits (no notification
 *    queue, no DAX window).
 *  - Each chain is one FUSE request: its device-readable part is gathered
 *    into a buffer of FUSE_SERVER_MAX_REQUEST bytes, handled, and the
 *    reply scattered into its device-writable part; the used length is the
 *    reply's length. A request longer than that buffer (the driver broke
 *    the max_write it negotiated) is answered with -E2BIG, not handled;
 *    the device stays usable. A malformed chain or ring (virtq_pop()
 *    -EINVAL) marks the device DEVICE_NEEDS_RESET.
 *  - The guest mounts it with `mount -t virtiofs TAG DIR`.
 *  - Requests run synchronously on the thread that delivers the queue
 *    notification, under the device lock.
 *  - Snapshots: a client-served share refuses to be saved (-EOPNOTSUPP:
 *    the client's tree is not the snapshot's to keep). save() writes the FUSE session (fuse_server_save: every
 *    node by its path beneath the share, every open handle); restore()
 *    reopens them beneath the share given at restore, confined as lookups
 *    are, and logs how many could not be found (those are stale: the
 *    guest gets ESTALE). A state the format refuses fails the restore.
 */
#ifndef KILN_VIRTIO_FS_H
#define KILN_VIRTIO_FS_H

#include "lib/base/err.h"
#include "devices/virtio/virtio_dev.h"

/* The tag is 36 bytes in config space, NUL-padded, not NUL-terminated
 * when it uses all 36 (5.11.4). */
#define VIRTIO_FS_TAG_MAX 36

struct virtio_fs_config {
	const char *dir; /* host directory to share, or NULL: */
	int dir_fd;      /* with dir NULL, an open directory (>= 3) to share; the caller keeps it */
	const char *remote;    /* with dir NULL and dir_fd -1: a client-served share's socket */
	int remote_timeout_ms; /* its reply timeout; 0: FS_REMOTE_TIMEOUT_MS_DEFAULT */
	const char *tag;       /* mount tag the guest sees, 1..36 bytes */
	int read_only;         /* refuse every modification with EROFS */
};

/*
 * Create the device for cfg (copied; the strings need not outlive the
 * call). 0, or -errno with `e` saying what failed (-EINVAL for a missing
 * directory or an empty or over-long tag; errors of fuse_server_open()).
 */
int virtio_fs_create(const struct virtio_fs_config *cfg, struct virtio_dev **out, struct err *e);

/*
 * When d is the virtio-fs device tagged tag (a host directory's: a
 * client-served share has no grafts, -EOPNOTSUPP): graft fd (an O_PATH
 * directory, the server's on success) as name in its share's root, or
 * with fd -1 drop that graft (fuse_server_graft, fuse_server_ungraft),
 * under the device lock. -ENODEV when d is not that device; the
 * server's errors otherwise. Any thread.
 */
int virtio_fs_graft(struct virtio_dev *d, const char *tag, const char *name, int fd);

#endif
