/*
 * config_devices: the typed device calls of kiln_vm_config
 * (include/kiln/vm.h, "devices"). Each builds the device's vm_config entry
 * in a local copy, has vmm/core/devcfg.c check it (one set of rules,
 * whoever calls), and only then keeps it, its strings copied into the
 * config's `owned`: a refused call leaves the config as it was.
 */
#include <errno.h>
#include <string.h>
#include <sys/un.h>

#include "libkiln/handles.h"
#include "vmm/core/devcfg.h"

/* Copy *p into the config (NULL stays NULL); 0 or -ENOMEM. */
static int own(kiln_vm_config *cfg, char **p)
{
	if (*p && !(*p = strs_add(&cfg->owned, *p, strlen(*p))))
		return config_fail(cfg, ENOMEM, "out of memory");
	return 0;
}

/* A check's result, its message on the config. */
static int checked(kiln_vm_config *cfg, int r, const struct err *e)
{
	return r ? handle_err(cfg->err, r, e) : 0;
}

/* Disk `index`, or NULL with -ERANGE's message. */
static struct vm_disk_cfg *disk_at(kiln_vm_config *cfg, unsigned index)
{
	if (index >= (unsigned)cfg->c.ndisk) {
		config_fail(cfg, ERANGE, "disk %u: no such disk (%d added)", index, cfg->c.ndisk);
		return NULL;
	}
	return &cfg->c.disk[index];
}

int kiln_vm_config_add_disk(kiln_vm_config *cfg, const char *path, unsigned flags,
			    const char *overlay)
{
	struct vm_disk_cfg d = { .path = (char *)path,
				 .overlay = (char *)overlay,
				 .read_only = !!(flags & KILN_DISK_READ_ONLY) };
	struct err e = { { 0 } };
	int r;

	if (cfg->c.ndisk == VM_MAX_DISKS)
		return config_fail(cfg, E2BIG, "disk: at most %d disks", VM_MAX_DISKS);
	if ((r = checked(cfg, devcfg_disk_check(&d, &e), &e)) || (r = own(cfg, &d.path)) ||
	    (r = own(cfg, &d.overlay)))
		return r;
	cfg->c.disk[cfg->c.ndisk++] = d;
	return 0;
}

int kiln_vm_config_set_disk_size(kiln_vm_config *cfg, unsigned index, uint64_t mib)
{
	struct vm_disk_cfg *slot = disk_at(cfg, index), d;
	struct err e = { { 0 } };
	int r;

	if (!slot)
		return -ERANGE;
	d = *slot;
	/* Checked before the shift: a huge mib must not wrap to a valid size. */
	if (mib > VM_DISK_MAX_MIB)
		return config_fail(cfg, EINVAL,
				   "disk %s: size must be a whole number of MiB from 1 to %u",
				   d.path, VM_DISK_MAX_MIB);
	d.size = mib << 20;
	if ((r = checked(cfg, devcfg_disk_check(&d, &e), &e)))
		return r;
	*slot = d;
	return 0;
}

int kiln_vm_config_set_disk_serial(kiln_vm_config *cfg, unsigned index, const char *serial)
{
	struct vm_disk_cfg *slot = disk_at(cfg, index), d;
	struct err e = { { 0 } };
	int r;

	if (!slot)
		return -ERANGE;
	d = *slot;
	d.serial = (char *)serial;
	if ((r = checked(cfg, devcfg_disk_check(&d, &e), &e)) || (r = own(cfg, &d.serial)))
		return r;
	*slot = d;
	return 0;
}

static int add_share(kiln_vm_config *cfg, struct vm_share_cfg *s)
{
	struct err e = { { 0 } };
	int r;

	if (cfg->c.nshare == VM_MAX_SHARES)
		return config_fail(cfg, E2BIG, "share: at most %d shares", VM_MAX_SHARES);
	if ((r = checked(cfg, devcfg_share_check(s, &e), &e)) || (r = own(cfg, &s->tag)) ||
	    (r = own(cfg, &s->host_dir)) || (r = own(cfg, &s->remote)))
		return r;
	cfg->c.share[cfg->c.nshare++] = *s;
	return 0;
}

int kiln_vm_config_add_share(kiln_vm_config *cfg, const char *tag, const char *host_dir,
			     unsigned flags)
{
	struct vm_share_cfg s = { .tag = (char *)tag,
				  .host_dir = (char *)host_dir,
				  .host_fd = -1,
				  .read_only = !!(flags & KILN_SHARE_READ_ONLY) };

	if (!host_dir)
		return config_fail(cfg, EINVAL, "share %s: no host directory given",
				   tag ? tag : "");
	return add_share(cfg, &s);
}

int kiln_vm_config_add_share_fd(kiln_vm_config *cfg, const char *tag, int dir_fd, unsigned flags)
{
	struct vm_share_cfg s = { .tag = (char *)tag,
				  .host_fd = dir_fd,
				  .read_only = !!(flags & KILN_SHARE_READ_ONLY) };

	return add_share(cfg, &s);
}

int kiln_vm_config_add_remote_share(kiln_vm_config *cfg, const char *sock_path, const char *tag,
				    unsigned flags)
{
	struct vm_share_cfg s = { .tag = (char *)tag,
				  .host_fd = -1,
				  .remote = (char *)sock_path,
				  .read_only = !!(flags & KILN_SHARE_READ_ONLY) };

	if (!sock_path)
		return config_fail(cfg, EINVAL, "share %s: no socket path given", tag ? tag : "");
	return add_share(cfg, &s);
}

int kiln_vm_config_set_remote_share_timeout(kiln_vm_config *cfg, unsigned timeout_ms)
{
	if (timeout_ms < VM_SHARE_TIMEOUT_MS_MIN || timeout_ms > VM_SHARE_TIMEOUT_MS_MAX)
		return config_fail(cfg, EINVAL,
				   "share-remote-timeout %u: must be %d to %d milliseconds",
				   timeout_ms, VM_SHARE_TIMEOUT_MS_MIN, VM_SHARE_TIMEOUT_MS_MAX);
	cfg->c.share_remote_timeout_ms = (int)timeout_ms;
	return 0;
}

int kiln_vm_config_set_vsock(kiln_vm_config *cfg, const char *uds_path, uint32_t cid)
{
	struct vm_vsock_cfg v = { .uds = (char *)uds_path, .cid = cid ? cid : 3 };
	struct err e = { { 0 } };
	int r;

	if (!uds_path) {
		cfg->c.vsock.uds = NULL;
		return 0;
	}
	if (strlen(uds_path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return config_fail(cfg, ENAMETOOLONG,
				   "vsock %s: longer than a Unix socket path may be", uds_path);
	if ((r = checked(cfg, devcfg_vsock_check(&v, &e), &e)) || (r = own(cfg, &v.uds)))
		return r;
	cfg->c.vsock = v;
	return 0;
}

static int add_net(kiln_vm_config *cfg, struct vm_net_cfg *n)
{
	struct err e = { { 0 } };
	int r;

	if (cfg->c.nnet == VM_MAX_NETS)
		return config_fail(cfg, E2BIG, "net: at most %d network devices", VM_MAX_NETS);
	/* The check fills passt's defaults (static strings): copied too. */
	if ((r = checked(cfg, devcfg_net_check(n, &e), &e)) || (r = own(cfg, &n->tap)) ||
	    (r = own(cfg, &n->mac)) || (r = own(cfg, &n->ip)) || (r = own(cfg, &n->gw)) ||
	    (r = own(cfg, &n->dns)) || (r = own(cfg, &n->resolver)))
		return r;
	cfg->c.net[cfg->c.nnet++] = *n;
	return 0;
}

int kiln_vm_config_add_net_tap(kiln_vm_config *cfg, const char *tap, const char *mac,
			       const char *ip)
{
	struct vm_net_cfg n = { .tap = (char *)tap, .mac = (char *)mac, .ip = (char *)ip };

	if (!tap)
		return config_fail(cfg, EINVAL, "net: no TAP device name given");
	return add_net(cfg, &n);
}

int kiln_vm_config_add_net_passt(kiln_vm_config *cfg, const char *mac, const char *ip,
				 const char *gw, const char *dns, const char *resolver)
{
	struct vm_net_cfg n = { .passt = 1,
				.mac = (char *)mac,
				.ip = (char *)ip,
				.gw = (char *)gw,
				.dns = (char *)dns,
				.resolver = (char *)resolver };

	return add_net(cfg, &n);
}

int kiln_vm_config_set_net_rate(kiln_vm_config *cfg, uint64_t tx_bytes, uint64_t tx_packets,
				uint64_t rx_bytes, uint64_t rx_packets)
{
	struct vm_net_rate_cfg nr = { tx_bytes, tx_packets, rx_bytes, rx_packets };
	struct err e = { { 0 } };
	int r;

	if ((r = checked(cfg, devcfg_net_rate_check(&nr, &e), &e)))
		return r;
	cfg->c.net_rate = nr;
	cfg->has_rate = 1;
	return 0;
}
