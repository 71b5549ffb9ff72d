/* kiln-vmm's device options into libkiln's typed calls; see devspec.h. */
#include "vmm/kiln-vmm/devspec.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/num_parse.h"

#define DISK_MAX_MIB (1u << 20) /* libkiln's limit, said in --disk's own words */

/* Split off the next comma-separated field of *s. */
static char *next_field(char **s)
{
	char *f = *s, *c;

	if (!f)
		return NULL;
	c = strchr(f, ',');
	if (c) {
		*c = '\0';
		*s = c + 1;
	} else {
		*s = NULL;
	}
	return f;
}

/* A libkiln call's result, its message into e. */
static int lib(const kiln_vm_config *cfg, int r, struct err *e)
{
	return r < 0 ? err_set(e, -r, "%s", kiln_vm_config_errmsg(cfg)) : 0;
}

/* A writable copy of spec to split in place; NULL with e set. */
static char *copy(const char *spec, struct err *e)
{
	char *s = strdup(spec ? spec : "");

	if (!s)
		err_set(e, ENOMEM, "out of memory");
	return s;
}

static int parse_mib(const char *path, const char *v, uint64_t *mib, struct err *e)
{
	if (num_parse_u64(v, 10, 1, DISK_MAX_MIB, mib))
		return err_set(e, EINVAL,
			       "--disk %s: size '%.40s' must be a whole number of MiB from 1 to %u",
			       path, v, DISK_MAX_MIB);
	return 0;
}

/* One disk into the config: its index is st->ndisk. */
static int add_disk(kiln_vm_config *cfg, struct devspec_state *st, const char *path, int ro,
		    const char *overlay, uint64_t mib, const char *serial, struct err *e)
{
	int r;

	if (mib && !overlay)
		return err_set(
			e, EINVAL,
			"--disk %s: size= is an overlay's virtual size: give overlay=PATH too (a raw image has its file's size)",
			path);
	if ((r = lib(cfg, kiln_vm_config_add_disk(cfg, path, ro ? KILN_DISK_READ_ONLY : 0, overlay),
		     e)))
		return r;
	if ((mib && (r = lib(cfg, kiln_vm_config_set_disk_size(cfg, st->ndisk, mib), e))) ||
	    (serial && (r = lib(cfg, kiln_vm_config_set_disk_serial(cfg, st->ndisk, serial), e))))
		return r;
	st->ndisk++;
	return 0;
}

static int parse_disk(kiln_vm_config *cfg, struct devspec_state *st, char *arg, struct err *e)
{
	char *rest = arg, *f, *path = next_field(&rest), *overlay = NULL, *serial = NULL;
	uint64_t mib = 0;
	int ro = 0;

	if (!path || !*path)
		return err_set(e, EINVAL,
			       "--disk: expected PATH[,ro][,overlay=PATH[,size=MIB]][,serial=ID]");
	while ((f = next_field(&rest))) {
		if (strcmp(f, "ro") == 0)
			ro = 1;
		else if (strncmp(f, "overlay=", 8) == 0 && f[8])
			overlay = f + 8;
		else if (strncmp(f, "serial=", 7) == 0 && f[7])
			serial = f + 7;
		else if (strncmp(f, "size=", 5) == 0) {
			if (parse_mib(path, f + 5, &mib, e))
				return -EINVAL;
		} else
			return err_set(
				e, EINVAL,
				"--disk %s: unknown or bad option '%.40s' (ro, overlay=PATH, serial=ID, size=MIB)",
				path, f);
	}
	return add_disk(cfg, st, path, ro, overlay, mib, serial, e);
}

int devspec_disk(kiln_vm_config *cfg, struct devspec_state *st, const char *spec, struct err *e)
{
	char *arg;
	int r;

	if ((r = devspec_finish(cfg, st, e)) || !(arg = copy(spec, e)))
		return r ? r : -ENOMEM;
	r = parse_disk(cfg, st, arg, e);
	free(arg);
	return r;
}

int devspec_disk_image(kiln_vm_config *cfg, struct devspec_state *st, const char *path,
		       struct err *e)
{
	int r;

	if ((r = devspec_finish(cfg, st, e)))
		return r;
	if (!path || !*path)
		return err_set(e, EINVAL, "--disk-image: expected a PATH");
	st->image = path;
	return 0;
}

int devspec_disk_overlay(struct devspec_state *st, const char *path, struct err *e)
{
	if (!st->image)
		return err_set(
			e, EINVAL,
			"--disk-overlay: give --disk-image PATH first (it is that disk's overlay)");
	if (st->overlay)
		return err_set(e, EINVAL, "--disk-overlay: given twice for --disk-image %s",
			       st->image);
	st->overlay = path;
	return 0;
}

int devspec_disk_size(struct devspec_state *st, const char *mib, struct err *e)
{
	if (!st->image)
		return err_set(
			e, EINVAL,
			"--disk-size: give --disk-image PATH first (it is that disk's overlay's size)");
	return parse_mib(st->image, mib, &st->size_mib, e);
}

int devspec_finish(kiln_vm_config *cfg, struct devspec_state *st, struct err *e)
{
	const char *image = st->image, *overlay = st->overlay;
	uint64_t mib = st->size_mib;

	if (!image)
		return 0;
	/* Pending no more, added or refused: the next --disk-image starts afresh. */
	st->image = st->overlay = NULL;
	st->size_mib = 0;
	return add_disk(cfg, st, image, 0, overlay, mib, NULL, e);
}

static int parse_share(kiln_vm_config *cfg, char *arg, int *fd, struct err *e)
{
	char *tag = strrchr(arg, ':');
	unsigned flags = 0;
	uint64_t n;

	if (tag && strcmp(tag, ":ro") == 0) {
		flags = KILN_SHARE_READ_ONLY;
		*tag = '\0';
		tag = strrchr(arg, ':');
	}
	if (!tag || tag == arg || !tag[1])
		return err_set(e, EINVAL,
			       "--share '%s': expected HOSTDIR:TAG[:ro] or fd=N:TAG[:ro]", arg);
	*tag++ = '\0';
	/* A directory its caller opened (kilnd: without following symbolic
	 * links, at every start): no path is resolved again. A directory
	 * really named "fd=3" is "./fd=3". */
	if (strncmp(arg, "fd=", 3) != 0)
		return lib(cfg, kiln_vm_config_add_share(cfg, tag, arg, flags), e);
	if (num_parse_u64(arg + 3, 10, 3, INT32_MAX, &n))
		return err_set(e, EINVAL,
			       "--share %s: fd=N needs a descriptor number of at least 3", arg);
	if (lib(cfg, kiln_vm_config_add_share_fd(cfg, tag, (int)n, flags), e))
		return -EINVAL;
	*fd = (int)n;
	return 0;
}

int devspec_share(kiln_vm_config *cfg, const char *spec, int *fd, struct err *e)
{
	char *arg = copy(spec, e);
	int r;

	*fd = -1;
	if (!arg)
		return -ENOMEM;
	r = parse_share(cfg, arg, fd, e);
	free(arg);
	return r;
}

static int parse_share_remote(kiln_vm_config *cfg, char *arg, struct err *e)
{
	char *tag = strrchr(arg, ':');
	unsigned flags = 0;

	if (tag && strcmp(tag, ":ro") == 0) {
		flags = KILN_SHARE_READ_ONLY;
		*tag = '\0';
		tag = strrchr(arg, ':');
	}
	if (!tag || tag == arg || !tag[1])
		return err_set(e, EINVAL, "--share-remote '%s': expected SOCK:TAG[:ro]", arg);
	*tag++ = '\0';
	return lib(cfg, kiln_vm_config_add_remote_share(cfg, arg, tag, flags), e);
}

int devspec_share_remote(kiln_vm_config *cfg, const char *spec, struct err *e)
{
	char *arg = copy(spec, e);
	int r;

	if (!arg)
		return -ENOMEM;
	r = parse_share_remote(cfg, arg, e);
	free(arg);
	return r;
}

static int parse_vsock(kiln_vm_config *cfg, char *arg, struct err *e)
{
	char *rest = arg, *f, *path = next_field(&rest);
	uint64_t cid = 3;

	if (!path || !*path)
		return err_set(e, EINVAL, "--vsock: expected PATH[,cid=N]");
	while ((f = next_field(&rest))) {
		if (strncmp(f, "cid=", 4) != 0)
			return err_set(e, EINVAL, "--vsock: unknown option '%.40s' (cid=N)", f);
		/* 0-2 are reserved (hypervisor, local, host); -1U is VMADDR_CID_ANY. */
		if (num_parse_u64(f + 4, 10, 3, 0xfffffffeULL, &cid))
			return err_set(e, EINVAL,
				       "--vsock: cid '%s' must be a number from 3 to 4294967294",
				       f + 4);
	}
	return lib(cfg, kiln_vm_config_set_vsock(cfg, path, (uint32_t)cid), e);
}

int devspec_vsock(kiln_vm_config *cfg, struct devspec_state *st, const char *spec, struct err *e)
{
	char *arg;
	int r;

	if (st->vsock)
		return err_set(e, EEXIST, "--vsock: given twice");
	if (!(arg = copy(spec, e)))
		return -ENOMEM;
	if (!(r = parse_vsock(cfg, arg, e)))
		st->vsock = 1;
	free(arg);
	return r;
}

int devspec_vsock_path(kiln_vm_config *cfg, struct devspec_state *st, const char *path,
		       struct err *e)
{
	int r;

	if (st->vsock)
		return err_set(e, EEXIST, "--vsock-path: a vsock device was given already");
	if (!path || !*path)
		return err_set(e, EINVAL, "--vsock-path: expected a PATH");
	if (!(r = lib(cfg, kiln_vm_config_set_vsock(cfg, path, 0), e)))
		st->vsock = 1;
	return r;
}

/* The fields of --net, each kept as given (libkiln checks them). */
struct net_fields {
	char *tap, *mac, *ip, *gw, *dns, *resolver;
	int passt;
};

static int net_field(struct net_fields *n, char *f)
{
	static const struct {
		const char *key;
		size_t off;
	} keys[] = {
		{ "tap=", offsetof(struct net_fields, tap) },
		{ "mac=", offsetof(struct net_fields, mac) },
		{ "ip=", offsetof(struct net_fields, ip) },
		{ "gw=", offsetof(struct net_fields, gw) },
		{ "dns=", offsetof(struct net_fields, dns) },
		{ "resolver=", offsetof(struct net_fields, resolver) },
	};

	if (strcmp(f, "passt") == 0) {
		n->passt = 1;
		return 0;
	}
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		size_t k = strlen(keys[i].key);

		if (strncmp(f, keys[i].key, k) == 0 && f[k]) {
			*(char **)((char *)n + keys[i].off) = f + k;
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_net(kiln_vm_config *cfg, char *arg, struct err *e)
{
	static const char usage[] =
		"tap=NAME or passt, then mac=MAC, ip=ADDR/PREFIX; passt also gw=, dns=, resolver=";
	struct net_fields n = { 0 };
	char *rest = arg, *f;

	while ((f = next_field(&rest)))
		if (net_field(&n, f))
			return err_set(e, EINVAL, "--net: unknown option '%.40s' (%s)", f, usage);
	if (!n.tap == !n.passt)
		return err_set(
			e, EINVAL,
			"--net: expected exactly one backend: tap=NAME[,mac=MAC] or passt[,mac=MAC]");
	if (n.tap && (n.gw || n.dns || n.resolver))
		return err_set(
			e, EINVAL,
			"--net tap=%s: gw=, dns= and resolver= are passt's (with a TAP the host configures the network)",
			n.tap);
	return lib(cfg,
		   n.tap ? kiln_vm_config_add_net_tap(cfg, n.tap, n.mac, n.ip)
			 : kiln_vm_config_add_net_passt(cfg, n.mac, n.ip, n.gw, n.dns, n.resolver),
		   e);
}

int devspec_net(kiln_vm_config *cfg, const char *spec, struct err *e)
{
	char *arg = copy(spec, e);
	int r;

	if (!arg)
		return -ENOMEM;
	r = parse_net(cfg, arg, e);
	free(arg);
	return r;
}

static int parse_net_rate(uint64_t rate[4], char *arg, struct err *e)
{
	static const char *const names[4] = { "tx_bytes", "tx_packets", "rx_bytes", "rx_packets" };
	char *rest = arg, *f;

	if (!*arg)
		return err_set(
			e, EINVAL,
			"--net-rate: expected tx_bytes=N,tx_packets=N,rx_bytes=N,rx_packets=N (per second)");
	while ((f = next_field(&rest))) {
		char *eq = strchr(f, '=');
		int i;

		for (i = 0; i < 4; i++)
			if (eq && (size_t)(eq - f) == strlen(names[i]) &&
			    strncmp(f, names[i], (size_t)(eq - f)) == 0)
				break;
		if (i == 4)
			return err_set(
				e, EINVAL,
				"--net-rate: unknown field '%.40s' (tx_bytes, tx_packets, rx_bytes, rx_packets)",
				f);
		/* The range is libkiln's to say; here only "a number". */
		if (num_parse_u64(eq + 1, 10, 0, UINT64_MAX, &rate[i]))
			return err_set(e, EINVAL,
				       "--net-rate %s: '%.40s' is not a number (0: unlimited)",
				       names[i], eq + 1);
	}
	return 0;
}

int devspec_net_rate(kiln_vm_config *cfg, struct devspec_state *st, const char *spec, struct err *e)
{
	uint64_t rate[4];
	char *arg = copy(spec, e);
	int r;

	if (!arg)
		return -ENOMEM;
	memcpy(rate, st->rate, sizeof(rate));
	if (!(r = parse_net_rate(rate, arg, e)) &&
	    !(r = lib(cfg, kiln_vm_config_set_net_rate(cfg, rate[0], rate[1], rate[2], rate[3]),
		      e)))
		memcpy(st->rate, rate, sizeof(rate));
	free(arg);
	return r;
}
