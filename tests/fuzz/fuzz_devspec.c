/*
 * fuzz_devspec: kiln-vmm's device options (vmm/kiln-vmm/devspec.c) through
 * libkiln's typed calls and the checks behind them (vmm/core/devcfg.c):
 * --disk, --share, --vsock, --net, --net-rate, and ADDR/PREFIX.
 *
 * Input: parser (1 byte), then the option text.
 * Invariants: a refusal is -EINVAL, -EEXIST or -E2BIG with a message and
 * (but for a disk, whose size or serial comes after it) adds nothing; an
 * accepted device holds copies the config owns, never the argument, a
 * serial fits VM_DISK_SERIAL_MAX and a tag VM_SHARE_TAG_MAX, a size is
 * whole MiB over an overlay, a guest CID is >= 3, a prefix is 1..30,
 * a network device has one backend.
 */
#include <errno.h>

#include "libkiln/handles.h"
#include "vmm/core/devcfg.h"
#include "vmm/kiln-vmm/devspec.h"
#include "fuzz.h"

static char *arg;
static size_t arg_len;

/* s is NULL, or a string outside the argument (the config's copy). */
static int owned(const char *s)
{
	return !s || s < arg || s > arg + arg_len;
}

static void check_disk(const struct vm_disk_cfg *d)
{
	FUZZ_ASSERT(d->path && owned(d->path) && owned(d->overlay) && owned(d->serial));
	FUZZ_ASSERT(!d->serial || strlen(d->serial) <= VM_DISK_SERIAL_MAX);
	FUZZ_ASSERT(!(d->overlay && d->read_only));
	FUZZ_ASSERT(!d->size ||
		    (d->overlay && d->size % (1u << 20) == 0 &&
		     d->size <= ((uint64_t)VM_DISK_MAX_MIB << 20)));
}

static void check_net(const struct vm_net_cfg *n)
{
	FUZZ_ASSERT(!!n->tap != !!n->passt);
	FUZZ_ASSERT(owned(n->tap) && owned(n->mac) && owned(n->ip) && owned(n->gw) &&
		    owned(n->dns) && owned(n->resolver));
	FUZZ_ASSERT(n->passt ? n->ip && n->gw && n->dns : !n->gw && !n->dns && !n->resolver);
	FUZZ_ASSERT(n->ip ? n->prefix >= 1 && n->prefix <= 30 : n->prefix == 0);
}

static int run(kiln_vm_config *cfg, uint8_t which, struct err *e)
{
	struct devspec_state st = { 0 };
	const struct vm_config *c = &cfg->c;
	int fd = -1, r = 0;

	switch (which) {
	case 0:
		r = devspec_disk(cfg, &st, arg, e);
		FUZZ_ASSERT(c->ndisk == (r ? c->ndisk : 1) && c->ndisk <= 1 &&
			    st.ndisk == (unsigned)!r);
		if (c->ndisk)
			check_disk(&c->disk[0]);
		break;
	case 1:
		r = devspec_share(cfg, arg, &fd, e);
		FUZZ_ASSERT(c->nshare == !r);
		if (!r) {
			const struct vm_share_cfg *s = &c->share[0];

			/* A path the config owns, or a descriptor (never stdio), not both. */
			FUZZ_ASSERT(s->host_dir ? owned(s->host_dir) && s->host_fd == -1 && fd == -1
						: s->host_fd >= 3 && fd == s->host_fd);
			FUZZ_ASSERT(s->tag && owned(s->tag) && strlen(s->tag) >= 1 &&
				    strlen(s->tag) <= VM_SHARE_TAG_MAX);
		}
		break;
	case 2:
		r = devspec_vsock(cfg, &st, arg, e);
		FUZZ_ASSERT(!c->vsock.uds == !!r);
		if (!r)
			FUZZ_ASSERT(owned(c->vsock.uds) && c->vsock.cid >= 3 &&
				    c->vsock.cid != 0xffffffffu);
		break;
	case 3:
		r = devspec_net(cfg, arg, e);
		FUZZ_ASSERT(c->nnet == !r);
		if (!r)
			check_net(&c->net[0]);
		break;
	case 4:
		r = devspec_net_rate(cfg, &st, arg, e);
		FUZZ_ASSERT(cfg->has_rate == !r);
		FUZZ_ASSERT(r ||
			    (c->net_rate.tx_bytes <= (1ull << 48) &&
			     c->net_rate.rx_bytes <= (1ull << 48) &&
			     c->net_rate.tx_packets <= (1ull << 48) &&
			     c->net_rate.rx_packets <= (1ull << 48)));
		break;
	case 5: {
		struct net_addr a;
		unsigned p = 0;

		if (devcfg_ip4_prefix(arg, &a, &p) == 0)
			FUZZ_ASSERT(p >= 1 && p <= 30);
		break;
	}
	}
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct err e = { { 0 } };
	kiln_vm_config *cfg;
	int r;

	if (size < 1)
		return 0;
	arg_len = size - 1;
	arg = malloc(arg_len + 1);
	cfg = kiln_vm_config_new();
	if (!arg || !cfg) {
		free(arg);
		kiln_vm_config_free(cfg);
		return 0;
	}
	memcpy(arg, data + 1, arg_len);
	arg[arg_len] = 0;
	arg_len = strlen(arg);
	r = run(cfg, data[0] % 6, &e);
	if (r) {
		FUZZ_ASSERT(r == -EINVAL || r == -EEXIST || r == -E2BIG || r == -ENAMETOOLONG);
		FUZZ_ASSERT(e.msg[0] && memchr(e.msg, 0, sizeof(e.msg)));
	}
	kiln_vm_config_free(cfg);
	free(arg);
	return 0;
}
