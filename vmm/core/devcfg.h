/*
 * devcfg: what each device of a vm_config is, and the checks every way
 * into one shares (libkiln's typed setters, include/kiln/vm.h; kiln-vmm's
 * option syntax is parsed in its own program, vmm/kiln-vmm/devspec.c, into
 * those setters).
 *
 * Pure: no file is opened here. Each check returns 0 or -EINVAL with a
 * one-line reason in `e` naming the field ("net gw=10.1.1.1: ...").
 */
#ifndef KILN_DEVCFG_H
#define KILN_DEVCFG_H

#include <stdint.h>

#include "devices/fs/fuse_remote_io.h"
#include "lib/base/err.h"
#include "lib/netrules/net_addr.h"

#define VM_MAX_DISKS 8
#define VM_MAX_SHARES 8
#define VM_MAX_NETS 4
#define VM_DISK_SERIAL_MAX 20      /* VIRTIO_BLK_ID_BYTES */
#define VM_DISK_MAX_MIB (1u << 20) /* an overlay's size: 1 TiB */
#define VM_SHARE_TAG_MAX 36        /* virtio-fs tag bytes */
#define VM_SHARE_SOCK_MAX 107      /* a remote share's socket path: sun_path less its NUL */
/* Client-served shares' reply timeout (one for all of them), in ms. */
#define VM_SHARE_TIMEOUT_MS_MIN FS_REMOTE_TIMEOUT_MS_MIN
#define VM_SHARE_TIMEOUT_MS_MAX FS_REMOTE_TIMEOUT_MS_MAX

struct vm_disk_cfg {
	char *path;
	int read_only;
	char *overlay; /* copy-on-write overlay over a read-only `path`, or NULL */
	char *serial;  /* or NULL */
	uint64_t size; /* in bytes, whole MiB: a new overlay's virtual size; 0 = the base's */
};

struct vm_share_cfg {
	char *host_dir; /* NULL when given as a descriptor or served remotely */
	int host_fd;    /* an open directory (>= 3) shared instead of a path; else -1 */
	char *remote;   /* a client-served share: its server's Unix socket; else NULL */
	char *tag;
	int read_only;
};

struct vm_vsock_cfg {
	char *uds;    /* host Unix socket path; NULL = no vsock */
	uint32_t cid; /* guest CID, >= 3 */
};

struct vm_net_cfg {
	char *tap; /* TAP interface name (the tap backend), or NULL */
	int passt; /* the passt backend */
	char *mac; /* or NULL: a random locally administered address */
	/*
	 * The guest's IPv4 address ADDR/PREFIX: passt gives it to the guest,
	 * and the packet filter takes only it as a source. passt: defaults
	 * below; tap: NULL = any source address.
	 */
	char *ip;
	unsigned prefix; /* ip's PREFIX, 1-30 (0 when ip is NULL) */
	char *gw;        /* passt: its gateway address */
	char *dns;       /* passt: the guest's resolver address, forwarded to `resolver` */
	char *resolver;  /* passt: the nameserver it forwards to; NULL: the host's first */
};

/* passt's guest network when not given: QEMU's user-mode layout. */
#define VM_PASST_IP "10.0.2.15/24"
#define VM_PASST_GW "10.0.2.2"
#define VM_PASST_DNS "10.0.2.3"

/*
 * The packet filter's token buckets, per second (0: unlimited). A bucket
 * holds one second's worth, so bursts up to N pass at once.
 */
struct vm_net_rate_cfg {
	uint64_t tx_bytes, tx_packets, rx_bytes, rx_packets;
};

/* A disk: a path; a serial of at most VM_DISK_SERIAL_MAX bytes; a size
 * only over an overlay, whole MiB up to VM_DISK_MAX_MIB; not read-only
 * with an overlay. */
int devcfg_disk_check(const struct vm_disk_cfg *d, struct err *e);

/* A share: a tag of 1..VM_SHARE_TAG_MAX bytes without spaces, commas or
 * colons; a host directory path, a descriptor >= 3 (0-2 are stdio, never
 * a directory handed over), or a client's socket path (shorter than
 * sun_path), exactly one. */
int devcfg_share_check(const struct vm_share_cfg *s, struct err *e);

/* A guest CID: 3..0xfffffffe (0-2 are reserved, -1 is VMADDR_CID_ANY). */
int devcfg_vsock_check(const struct vm_vsock_cfg *v, struct err *e);

/*
 * A network device: exactly one backend, a unicast MAC, ip= ADDR/PREFIX;
 * passt's gw=, dns=, resolver= addresses that fit together (defaults set
 * here when NULL). Fills n->prefix.
 */
int devcfg_net_check(struct vm_net_cfg *n, struct err *e);

/* Each rate at most the filter's bucket size (0: unlimited). */
int devcfg_net_rate_check(const struct vm_net_rate_cfg *r, struct err *e);

/* "ADDR/PREFIX", IPv4, prefix 1-30 (a host address in its network). 0 or -EINVAL. */
int devcfg_ip4_prefix(const char *s, struct net_addr *addr, unsigned *prefix);

#endif
