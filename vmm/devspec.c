#include "devspec.h"

#include "virtio_net.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

int devspec_disk(char *arg, struct kiln_disk_cfg *out, struct kiln_error *e)
{
	char *rest = arg, *f;

	memset(out, 0, sizeof(*out));
	out->path = next_field(&rest);
	if (!out->path || !*out->path)
		return kiln_errf(e, EINVAL, "--disk: expected PATH[,ro][,overlay=PATH][,serial=ID]");
	while ((f = next_field(&rest))) {
		if (strcmp(f, "ro") == 0)
			out->read_only = 1;
		else if (strncmp(f, "overlay=", 8) == 0 && f[8])
			out->overlay = f + 8;
		else if (strncmp(f, "serial=", 7) == 0 && f[7] && strlen(f + 7) <= KILN_SERIAL_MAX)
			out->serial = f + 7;
		else
			return kiln_errf(e, EINVAL, "--disk %s: unknown or bad option '%.40s' (ro, overlay=PATH, serial=ID of at most %d bytes)",
					 out->path, f, KILN_SERIAL_MAX);
	}
	if (out->overlay && out->read_only)
		return kiln_errf(e, EINVAL, "--disk %s: 'ro' and 'overlay=' together make no sense: an overlay exists to take writes",
				 out->path);
	return 0;
}

int devspec_share(char *arg, struct kiln_share_cfg *out, struct kiln_error *e)
{
	char *tag = strrchr(arg, ':');

	memset(out, 0, sizeof(*out));
	if (tag && strcmp(tag, ":ro") == 0) {
		out->read_only = 1;
		*tag = '\0';
		tag = strrchr(arg, ':');
	}
	if (!tag || tag == arg || !tag[1])
		return kiln_errf(e, EINVAL, "--share '%s': expected HOSTDIR:TAG[:ro]", arg);
	*tag++ = '\0';
	if (strlen(tag) > KILN_TAG_MAX || strchr(tag, ',') || strchr(tag, ' '))
		return kiln_errf(e, EINVAL, "--share: tag '%s' must be at most %d bytes, without spaces or commas",
				 tag, KILN_TAG_MAX);
	out->host_dir = arg;
	out->tag = tag;
	return 0;
}

int devspec_vsock(char *arg, struct kiln_vsock_cfg *out, struct kiln_error *e)
{
	char *rest = arg, *f;

	memset(out, 0, sizeof(*out));
	out->cid = 3;
	out->uds = next_field(&rest);
	if (!out->uds || !*out->uds)
		return kiln_errf(e, EINVAL, "--vsock: expected PATH[,cid=N]");
	while ((f = next_field(&rest))) {
		char *end;
		unsigned long long v;

		if (strncmp(f, "cid=", 4) != 0)
			return kiln_errf(e, EINVAL, "--vsock: unknown option '%.40s' (cid=N)", f);
		errno = 0;
		v = strtoull(f + 4, &end, 10);
		/* 0-2 are reserved (hypervisor, local, host); -1U is VMADDR_CID_ANY. */
		if (errno || *end || f[4] == '\0' || v < 3 || v >= 0xffffffffULL)
			return kiln_errf(e, EINVAL, "--vsock: cid '%s' must be a number from 3 to 4294967294", f + 4);
		out->cid = (uint32_t)v;
	}
	return 0;
}

int devspec_net(char *arg, struct kiln_net_cfg *out, struct kiln_error *e)
{
	char *rest = arg, *f;

	memset(out, 0, sizeof(*out));
	while ((f = next_field(&rest))) {
		if (strncmp(f, "tap=", 4) == 0 && f[4])
			out->tap = f + 4;
		else if (strncmp(f, "mac=", 4) == 0 && f[4])
			out->mac = f + 4;
		else
			return kiln_errf(e, EINVAL, "--net: unknown option '%.40s' (tap=NAME, mac=MAC)", f);
	}
	if (!out->tap)
		return kiln_errf(e, EINVAL, "--net: expected tap=NAME[,mac=MAC] (the only backend so far is tap)");
	if (out->mac) {
		uint8_t mac[6];

		if (net_parse_mac(out->mac, mac))
			return kiln_errf(e, EINVAL, "--net mac=%s: not a unicast MAC address like 02:00:00:00:00:01", out->mac);
	}
	return 0;
}
