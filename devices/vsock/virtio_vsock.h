/*
 * virtio_vsock: a userspace virtio-vsock device (virtio 1.2, 5.10) whose
 * host side is a Unix socket speaking Firecracker's hybrid protocol.
 *
 *  - Host-initiated: kiln listens on `uds_path`. A host process connects,
 *    sends "CONNECT <port>\n"; kiln sends the guest a REQUEST to <port>. On
 *    the guest's RESPONSE the client reads "OK <hostport>\n" (hostport is
 *    the local port kiln gave the connection) and bytes then flow both
 *    ways; on RST the client is closed. A malformed line gets
 *    "ERROR <reason>\n" and a close.
 *  - Guest-initiated: a guest connection to CID 2 port X is connected to the
 *    Unix socket "<uds_path>_X"; nobody listening there means RST.
 *
 * Queues: 0 rx, 1 tx, 2 event. Config space: le64 guest_cid. No feature
 * bits (no SEQPACKET). Do not include <linux/virtio_vsock.h> next to this
 * header: its `struct virtio_vsock_config` (the config space) has the same
 * name as ours.
 *
 * Threading: every socket is non-blocking and watched by the VM's event
 * loop; all device work runs in that thread (the transport calls notify()
 * from it too) under d->lock, which the transport also takes for
 * activate/reset/config from vCPU threads.
 *
 * Lifecycle: virtio_vsock_create() binds and listens at once (so a bad path
 * is reported at start-up and early host clients wait in the backlog);
 * clients are accepted from the driver's DRIVER_OK on. A driver reset
 * closes every host connection and stops accepting; the listening socket
 * stays bound. destroy() closes everything and unlinks uds_path; call it
 * with the event loop stopped.
 *
 * Snapshots: save() keeps only the guest CID. Connections do not survive
 * (their host ends belong to the old process): restore() comes up with no
 * connections, accepts host clients again, and sends the guest
 * VIRTIO_VSOCK_EVENT_TRANSPORT_RESET on the event queue so it drops the
 * connections it still believes in; guest listeners stay. restore() must be
 * given the same guest_cid the snapshot was taken with.
 */
#ifndef KILN_VIRTIO_VSOCK_H
#define KILN_VIRTIO_VSOCK_H

#include <stdint.h>

#include "lib/base/err.h"
#include "devices/virtio/virtio_dev.h"

struct event_loop;

struct virtio_vsock_config {
	uint64_t guest_cid;   /* >= 3 (0, 1 and 2 are reserved, vsock(7)); < 2^32 - 1 */
	const char *uds_path; /* host listening socket; guest ports at "<uds_path>_<port>" */
	/* Optional: called (device thread, device lock held) once at the
	 * first host CONNECT ("vsock_first_connect") and once at the guest's
	 * first accept of one ("vsock_first_ok"): the restore timeline's
	 * host-to-agent legs. */
	void (*mark)(void *ctx, const char *name);
	void *mark_ctx;
};

/*
 * Create the device and its listening socket at cfg->uds_path (an existing
 * socket file there is replaced, any other file is an error). 0, or -errno
 * with `e` saying what failed: bad CID, path too long for a Unix socket
 * address (with room for "_4294967295"), bind/listen failure.
 */
int virtio_vsock_create(const struct virtio_vsock_config *cfg, struct event_loop *loop,
			struct virtio_dev **out, struct err *e);

#endif
