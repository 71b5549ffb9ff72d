/*
 * devspec: parsing kiln-vmm's device options into vm_config entries.
 *
 *   --disk PATH[,ro][,overlay=PATH[,size=MIB]][,serial=ID]
 *   --share HOSTDIR:TAG[:ro]   or   --share fd=N:TAG[:ro]
 *   --vsock PATH[,cid=N]
 *   --net tap=NAME[,mac=aa:bb:cc:dd:ee:ff][,ip=ADDR/PREFIX]
 *   --net passt[,mac=MAC][,ip=ADDR/PREFIX][,gw=ADDR][,dns=ADDR][,resolver=ADDR]
 *   --net-rate tx_bytes=N,tx_packets=N,rx_bytes=N,rx_packets=N  (per second)
 *
 * Pure. The parsed structs point into `arg`, which must outlive them (argv
 * does). Each parser returns 0 or -EINVAL with a one-line reason in `e`.
 */
#ifndef KILN_DEVSPEC_H
#define KILN_DEVSPEC_H

#include <stdint.h>

#include "lib/base/err.h"
#include "lib/netrules/net_addr.h"

#define DEVSPEC_MAX_DISKS 8
#define DEVSPEC_MAX_SHARES 8
#define DEVSPEC_MAX_NETS 4
#define DEVSPEC_SERIAL_MAX 20 /* VIRTIO_BLK_ID_BYTES */
#define DEVSPEC_DISK_MAX_MIB (1u << 20) /* size=: 1 TiB */
#define DEVSPEC_TAG_MAX 36    /* virtio-fs tag bytes */

struct devspec_disk_cfg {
	char *path;
	int read_only;
	char *overlay; /* copy-on-write overlay over a read-only `path`, or NULL */
	char *serial;  /* or NULL */
	uint64_t size; /* size=MIB, in bytes: a new overlay's virtual size; 0 = the base's */
};

struct devspec_share_cfg {
	char *host_dir; /* NULL when given as fd=N */
	int host_fd;    /* fd=N: an open directory (N >= 3) shared instead of a path; else -1 */
	char *tag;
	int read_only;
};

struct devspec_vsock_cfg {
	char *uds;     /* host Unix socket path; NULL = no vsock */
	uint32_t cid;  /* guest CID, >= 3 */
};

struct devspec_net_cfg {
	char *tap;     /* TAP interface name (the tap backend), or NULL */
	int passt;     /* the passt backend */
	char *mac;     /* or NULL: a random locally administered address */
	/*
	 * The guest's IPv4 address ADDR/PREFIX: passt gives it to the guest,
	 * and the packet filter takes only it as a source. passt: defaults
	 * below; tap: NULL = any source address.
	 */
	char *ip;
	unsigned prefix; /* ip's PREFIX, 1-30 (0 when ip is NULL) */
	char *gw;      /* passt: its gateway address */
	char *dns;     /* passt: the guest's resolver address, forwarded to `resolver` */
	char *resolver; /* passt: the nameserver it forwards to; NULL: the host's first */
};

/* passt's guest network when not given: QEMU's user-mode layout. */
#define DEVSPEC_PASST_IP "10.0.2.15/24"
#define DEVSPEC_PASST_GW "10.0.2.2"
#define DEVSPEC_PASST_DNS "10.0.2.3"

/*
 * The packet filter's token buckets, per second (0: unlimited). A bucket
 * holds one second's worth, so bursts up to N pass at once.
 */
struct devspec_net_rate_cfg {
	uint64_t tx_bytes, tx_packets, rx_bytes, rx_packets;
};

/* `arg` is modified in place (separators become NULs). */
int devspec_disk(char *arg, struct devspec_disk_cfg *out, struct err *e);
int devspec_share(char *arg, struct devspec_share_cfg *out, struct err *e);
int devspec_vsock(char *arg, struct devspec_vsock_cfg *out, struct err *e);
int devspec_net(char *arg, struct devspec_net_cfg *out, struct err *e);
/* "ADDR/PREFIX", IPv4, prefix 1-30 (a host address in its network). 0 or -EINVAL. */
int devspec_ip4_prefix(const char *s, struct net_addr *addr, unsigned *prefix);
/* Fields not given keep their value in *out. */
int devspec_net_rate(char *arg, struct devspec_net_rate_cfg *out, struct err *e);

#endif
