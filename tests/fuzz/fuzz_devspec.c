/*
 * fuzz_devspec: kiln-vmm's device-option parsers (vmm/core/devspec.c):
 * --disk, --share, --vsock, --net, --net-rate, and ADDR/PREFIX. kilnd
 * builds these from API requests, so a client reaches them.
 *
 * Input: parser (1 byte), then the option text.
 * Invariants: a refusal is -EINVAL with a message; an accepted option's
 * strings point into the argument and are NUL-terminated inside it, a
 * serial fits DEVSPEC_SERIAL_MAX and a tag DEVSPEC_TAG_MAX, a guest CID is >= 3,
 * a prefix is 1..30.
 */
#include <errno.h>

#include "vmm/core/devspec.h"
#include "fuzz.h"

static char *arg;
static size_t arg_len;

/* s is NULL, or a NUL-terminated string inside the argument. */
static int inside(const char *s)
{
	return !s || (s >= arg && s < arg + arg_len + 1 && memchr(s, 0, (size_t)(arg + arg_len + 1 - s)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct err e = { { 0 } };
	uint8_t which;
	int r = 0;

	if (size < 1)
		return 0;
	which = data[0] % 6;
	arg_len = size - 1;
	arg = malloc(arg_len + 1);
	if (!arg)
		return 0;
	memcpy(arg, data + 1, arg_len);
	arg[arg_len] = 0;
	arg_len = strlen(arg);

	switch (which) {
	case 0: {
		struct devspec_disk_cfg d = { 0 };

		if (!(r = devspec_disk(arg, &d, &e))) {
			FUZZ_ASSERT(d.path && inside(d.path) && inside(d.overlay) && inside(d.serial));
			FUZZ_ASSERT(!d.serial || strlen(d.serial) <= DEVSPEC_SERIAL_MAX);
			/* size=: whole MiB, 1 MiB .. 1 TiB, and only over an overlay. */
			FUZZ_ASSERT(!d.size || (d.overlay && d.size % (1u << 20) == 0 &&
						d.size <= ((uint64_t)DEVSPEC_DISK_MAX_MIB << 20)));
		}
		break;
	}
	case 1: {
		struct devspec_share_cfg s = { 0 };

		if (!(r = devspec_share(arg, &s, &e))) {
			/* A path inside arg, or a descriptor (never stdio), not both. */
			FUZZ_ASSERT(s.host_dir ? inside(s.host_dir) && s.host_fd == -1 : s.host_fd >= 3);
			FUZZ_ASSERT(s.tag && inside(s.tag));
			FUZZ_ASSERT(strlen(s.tag) >= 1 && strlen(s.tag) <= DEVSPEC_TAG_MAX);
		}
		break;
	}
	case 2: {
		struct devspec_vsock_cfg v = { 0 };

		if (!(r = devspec_vsock(arg, &v, &e)))
			FUZZ_ASSERT(v.uds && inside(v.uds) && v.cid >= 3);
		break;
	}
	case 3: {
		struct devspec_net_cfg n = { 0 };

		if (!(r = devspec_net(arg, &n, &e))) {
			FUZZ_ASSERT(!!n.tap != !!n.passt);
			/* passt's addresses default to QEMU's user-mode layout. */
			FUZZ_ASSERT(inside(n.tap) && inside(n.mac) && inside(n.resolver));
			FUZZ_ASSERT(inside(n.ip) || !strcmp(n.ip, DEVSPEC_PASST_IP));
			FUZZ_ASSERT(inside(n.gw) || !strcmp(n.gw, DEVSPEC_PASST_GW));
			FUZZ_ASSERT(inside(n.dns) || !strcmp(n.dns, DEVSPEC_PASST_DNS));
		}
		break;
	}
	case 4: {
		struct devspec_net_rate_cfg c = { 0 };

		r = devspec_net_rate(arg, &c, &e);
		break;
	}
	case 5: {
		struct net_addr a;
		unsigned p = 0;

		if (devspec_ip4_prefix(arg, &a, &p) == 0)
			FUZZ_ASSERT(p >= 1 && p <= 30);
		e.msg[0] = 'x';
		break;
	}
	}
	if (r) {
		FUZZ_ASSERT(r == -EINVAL);
		FUZZ_ASSERT(e.msg[0] && memchr(e.msg, 0, sizeof(e.msg)));
	}
	free(arg);
	return 0;
}
