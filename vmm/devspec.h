/*
 * devspec: parsing kiln-vmm's device options into kiln_vm_config entries.
 *
 *   --disk PATH[,ro][,overlay=PATH][,serial=ID]
 *   --share HOSTDIR:TAG[:ro]
 *   --vsock PATH[,cid=N]
 *   --net tap=NAME[,mac=aa:bb:cc:dd:ee:ff]
 *
 * Pure. The parsed structs point into `arg`, which must outlive them (argv
 * does). Each parser returns 0 or -EINVAL with a one-line reason in `e`.
 */
#ifndef KILN_DEVSPEC_H
#define KILN_DEVSPEC_H

#include <stdint.h>

#include "error.h"

#define KILN_MAX_DISKS 8
#define KILN_MAX_SHARES 8
#define KILN_MAX_NETS 4
#define KILN_SERIAL_MAX 20 /* VIRTIO_BLK_ID_BYTES */
#define KILN_TAG_MAX 36    /* virtio-fs tag bytes */

struct kiln_disk_cfg {
	char *path;
	int read_only;
	char *overlay; /* copy-on-write overlay over a read-only `path`, or NULL */
	char *serial;  /* or NULL */
};

struct kiln_share_cfg {
	char *host_dir;
	char *tag;
	int read_only;
};

struct kiln_vsock_cfg {
	char *uds;     /* host Unix socket path; NULL = no vsock */
	uint32_t cid;  /* guest CID, >= 3 */
};

struct kiln_net_cfg {
	char *tap;     /* TAP interface name */
	char *mac;     /* or NULL: a random locally administered address */
};

/* `arg` is modified in place (separators become NULs). */
int devspec_disk(char *arg, struct kiln_disk_cfg *out, struct kiln_error *e);
int devspec_share(char *arg, struct kiln_share_cfg *out, struct kiln_error *e);
int devspec_vsock(char *arg, struct kiln_vsock_cfg *out, struct kiln_error *e);
int devspec_net(char *arg, struct kiln_net_cfg *out, struct kiln_error *e);

#endif
