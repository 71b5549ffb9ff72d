/*
 * devspec: kiln-vmm's device options, parsed in the program into
 * libkiln's typed calls (the config is read back through libkiln's
 * handles.h). --net takes exactly one backend (tap=NAME or passt) with its
 * own options, passt gets QEMU's user-mode layout unless told otherwise,
 * addresses are checked by libkiln (a gateway outside the guest's network,
 * a DNS address on the guest or gateway are refused), --net-rate takes
 * four named per-second limits, --disk-image takes its path whole. Every
 * refusal names the option or the field; a refused one adds nothing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "libkiln/handles.h"
#include "vmm/core/devcfg.h"
#include "vmm/kiln-vmm/devspec.h"

/* --net on a fresh config: *c is its device when accepted. */
static int net(const char *s, struct vm_net_cfg *c, struct err *e)
{
	static kiln_vm_config *cfg;
	int r;

	kiln_vm_config_free(cfg);
	cfg = kiln_vm_config_new();
	r = devspec_net(cfg, s, e);
	assert_int_equal(cfg->c.nnet, r ? 0 : 1);
	*c = cfg->c.net[0];
	return r;
}

/* --net-rate on one config across calls, as kiln-vmm's options are. */
static kiln_vm_config *rate_cfg;
static struct devspec_state rate_st;

static int rate(const char *s, struct vm_net_rate_cfg *r, struct err *e)
{
	int rc = devspec_net_rate(rate_cfg, &rate_st, s, e);

	*r = rate_cfg->c.net_rate;
	return rc;
}

static void test_tap(void **state)
{
	struct vm_net_cfg c;
	struct err e = { { 0 } };

	(void)state;
	assert_int_equal(net("tap=kt0", &c, &e), 0);
	assert_string_equal(c.tap, "kt0");
	assert_int_equal(c.passt, 0);
	assert_null(c.ip);
	assert_null(c.gw);
	assert_int_equal(net("tap=kt0,mac=02:00:00:00:00:07,ip=10.77.0.2/24", &c, &e), 0);
	assert_string_equal(c.mac, "02:00:00:00:00:07");
	assert_string_equal(c.ip, "10.77.0.2/24");
	assert_int_equal(net("tap=kt0,gw=10.77.0.1", &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "are passt's"));
	assert_int_equal(net("tap=kt0,dns=10.77.0.1", &c, &e), -EINVAL);
	assert_int_equal(net("tap=kt0,mac=01:00:00:00:00:01", &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "not a unicast MAC"));
	assert_int_equal(net("tap=kt0,ip=10.77.0.2", &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "net ip=10.77.0.2: expected an IPv4 ADDRESS/PREFIX"));
	assert_int_equal(net("tap=kt0,ip=fd00::2/64", &c, &e), -EINVAL);
	assert_int_equal(net("tap=kt0,ip=10.77.0.2/31", &c, &e), -EINVAL);
	assert_int_equal(net("tap=kt0,ip=10.77.0.2/-1", &c, &e), -EINVAL);
	assert_int_equal(net("tap=kt0,speed=10", &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "unknown option 'speed=10'"));
}

static void test_passt_defaults_and_options(void **state)
{
	struct vm_net_cfg c;
	struct err e = { { 0 } };

	(void)state;
	assert_int_equal(net("passt", &c, &e), 0);
	assert_int_equal(c.passt, 1);
	assert_null(c.tap);
	assert_string_equal(c.ip, "10.0.2.15/24");
	assert_string_equal(c.gw, "10.0.2.2");
	assert_string_equal(c.dns, "10.0.2.3");
	assert_int_equal(
		net("passt,mac=02:00:00:00:00:09,ip=192.168.7.20/24,gw=192.168.7.1,dns=192.168.7.3",
		    &c, &e),
		0);
	assert_string_equal(c.ip, "192.168.7.20/24");
	assert_string_equal(c.gw, "192.168.7.1");
	assert_string_equal(c.dns, "192.168.7.3");
	/* The gateway must be on the guest's network and not the guest. */
	assert_int_equal(net("passt,gw=10.0.3.1", &c, &e), -EINVAL);
	assert_non_null(
		strstr(e.msg,
		       "net gw=10.0.3.1: must be another address in the guest's network 10.0.2.15/24"));
	assert_int_equal(net("passt,gw=10.0.2.15", &c, &e), -EINVAL);
	assert_int_equal(net("passt,dns=10.0.2.2", &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "net dns=10.0.2.2: must differ"));
	assert_int_equal(net("passt,dns=resolver.example", &c, &e), -EINVAL);
	assert_int_equal(net("passt,dns=::1", &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "net dns=::1: not an IPv4 address"));
	/* resolver=: where passt sends that DNS; IPv4, and passt's only. */
	assert_null(c.resolver);
	assert_int_equal(net("passt,resolver=10.0.0.53", &c, &e), 0);
	assert_string_equal(c.resolver, "10.0.0.53");
	assert_int_equal(net("passt,resolver=dns.example", &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "net resolver=dns.example: not an IPv4 address"));
	assert_int_equal(net("passt,resolver=127.0.0.53", &c, &e), 0); /* a local stub resolver */
	assert_int_equal(net("passt,resolver=10.0.2.3", &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "net resolver=10.0.2.3: must be a unicast address"));
	assert_int_equal(net("passt,resolver=0.0.0.0", &c, &e), -EINVAL);
	assert_int_equal(net("passt,resolver=224.0.0.251", &c, &e), -EINVAL);
	assert_int_equal(net("passt,resolver=255.255.255.255", &c, &e), -EINVAL);
	assert_int_equal(net("tap=kt0,resolver=10.0.0.53", &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "resolver= are passt's"));
}

static void test_one_backend(void **state)
{
	struct vm_net_cfg c;
	struct err e = { { 0 } };

	(void)state;
	assert_int_equal(net("mac=02:00:00:00:00:01", &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "exactly one backend"));
	assert_int_equal(net("tap=kt0,passt", &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "exactly one backend"));
	assert_int_equal(net("", &c, &e), -EINVAL);
	assert_int_equal(net("tap=", &c, &e), -EINVAL);
}

static void test_net_rate(void **state)
{
	struct vm_net_rate_cfg r = { 0 };
	struct err e = { { 0 } };

	(void)state;
	rate_cfg = kiln_vm_config_new();
	assert_int_equal(rate("tx_bytes=1000000,rx_packets=500", &r, &e), 0);
	assert_int_equal(r.tx_bytes, 1000000);
	assert_int_equal(r.rx_packets, 500);
	assert_int_equal(r.tx_packets, 0);
	assert_int_equal(r.rx_bytes, 0);
	/* A second --net-rate adds to the first. */
	assert_int_equal(rate("tx_packets=100,rx_bytes=0", &r, &e), 0);
	assert_int_equal(r.tx_bytes, 1000000);
	assert_int_equal(r.tx_packets, 100);
	assert_int_equal(rate("tx_byte=1", &r, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "unknown field 'tx_byte=1'"));
	assert_int_equal(rate("tx_bytes", &r, &e), -EINVAL);
	assert_int_equal(rate("tx_bytes=", &r, &e), -EINVAL);
	assert_int_equal(rate("tx_bytes=-1", &r, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "--net-rate tx_bytes: '-1' is not a number"));
	assert_int_equal(rate("tx_bytes=1M", &r, &e), -EINVAL);
	/* num_parse: no sign, no space, only digits; same message as any bad number. */
	assert_int_equal(rate("tx_bytes=+5", &r, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "--net-rate tx_bytes: '+5' is not a number"));
	assert_int_equal(rate("tx_bytes= 5", &r, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "--net-rate tx_bytes: ' 5' is not a number"));
	assert_int_equal(rate("tx_bytes=0x10", &r, &e), -EINVAL);
	assert_int_equal(rate("tx_bytes=18446744073709551616", &r, &e), -EINVAL); /* 2^64 */
	assert_int_equal(rate("rx_bytes=281474976710657", &r, &e), -EINVAL);      /* 2^48 + 1 */
	assert_string_equal(
		e.msg,
		"net-rate rx_bytes: 281474976710657 is more than 281474976710656 per second");
	assert_int_equal(r.rx_bytes, 0); /* a refused one changes nothing */
	assert_int_equal(rate("rx_bytes=281474976710656", &r, &e), 0);
	assert_int_equal(rate("", &r, &e), -EINVAL);
	assert_int_equal(rate_cfg->has_rate, 1);
	kiln_vm_config_free(rate_cfg);
}

static void test_ip4_prefix(void **state)
{
	struct net_addr a;
	unsigned p;

	(void)state;
	assert_int_equal(devcfg_ip4_prefix("10.0.2.15/24", &a, &p), 0);
	assert_int_equal(p, 24);
	assert_int_equal(a.family, NET_AF4);
	assert_int_equal(a.b[3], 15);
	assert_int_equal(devcfg_ip4_prefix("10.0.2.15/0", &a, &p), -EINVAL);
	assert_int_equal(devcfg_ip4_prefix("10.0.2.15/24x", &a, &p), -EINVAL);
	assert_int_equal(devcfg_ip4_prefix("10.0.2/24", &a, &p), -EINVAL);
	assert_int_equal(devcfg_ip4_prefix("/24", &a, &p), -EINVAL);
	assert_int_equal(devcfg_ip4_prefix("10.0.2.15/", &a, &p), -EINVAL);
	assert_int_equal(devcfg_ip4_prefix("10.0.2.15/+24", &a, &p), -EINVAL);
	assert_int_equal(devcfg_ip4_prefix("10.0.2.15/ 24", &a, &p), -EINVAL);
	assert_int_equal(devcfg_ip4_prefix("10.0.2.15/-24", &a, &p), -EINVAL);
	assert_int_equal(devcfg_ip4_prefix("10.0.2.15/31", &a, &p), -EINVAL);
	assert_int_equal(devcfg_ip4_prefix("10.0.2.15/4294967320", &a, &p),
			 -EINVAL); /* 2^32 + 24 */
	assert_int_equal(devcfg_ip4_prefix("10.0.2.15/1", &a, &p), 0);
	assert_int_equal(p, 1);
	assert_int_equal(devcfg_ip4_prefix("10.0.2.15/30", &a, &p), 0);
	assert_int_equal(p, 30);
}

/* libkiln keeps the prefix it checked, for the passt backend. */
static void test_net_prefix(void **state)
{
	struct vm_net_cfg c;
	struct err e = { { 0 } };

	(void)state;
	assert_int_equal(net("passt", &c, &e), 0);
	assert_int_equal(c.prefix, 24);
	assert_int_equal(net("passt,ip=10.1.0.9/16,gw=10.1.200.1", &c, &e), 0);
	assert_int_equal(c.prefix, 16);
	assert_int_equal(net("tap=kt0", &c, &e), 0);
	assert_int_equal(c.prefix, 0);
	assert_int_equal(net("tap=kt0,ip=10.77.0.2/+24", &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "net ip=10.77.0.2/+24: expected an IPv4 ADDRESS/PREFIX"));
}

static int vsock(const char *s, struct vm_vsock_cfg *v, struct err *e)
{
	kiln_vm_config *cfg = kiln_vm_config_new();
	struct devspec_state st = { 0 };
	int r = devspec_vsock(cfg, &st, s, e);

	assert_int_equal(!cfg->c.vsock.uds, !!r);
	v->cid = cfg->c.vsock.cid;
	/* A second one is refused. */
	if (!r)
		assert_int_equal(devspec_vsock(cfg, &st, s, e), -EEXIST);
	kiln_vm_config_free(cfg);
	return r;
}

static void test_vsock_cid(void **state)
{
	struct vm_vsock_cfg v;
	struct err e = { { 0 } };

	(void)state;
	assert_int_equal(vsock("/run/v.sock", &v, &e), 0);
	assert_int_equal(v.cid, 3);
	assert_int_equal(vsock("/run/v.sock,cid=3", &v, &e), 0);
	assert_int_equal(v.cid, 3);
	assert_int_equal(vsock("/run/v.sock,cid=4294967294", &v, &e), 0);
	assert_int_equal(v.cid, 4294967294u);
	static const char *const bad[] = { "2",  "4294967295", "",
					   "+5", " 5",         "5 ",
					   "-5", "0x10",       "99999999999999999999" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char s[64];

		snprintf(s, sizeof(s), "/run/v.sock,cid=%s", bad[i]);
		assert_int_equal(vsock(s, &v, &e), -EINVAL);
		assert_non_null(strstr(e.msg, "must be a number from 3 to 4294967294"));
	}
	assert_int_equal(vsock("/run/v.sock,port=5", &v, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "unknown option"));
}

/* --share on a fresh config; the strings copied out before it goes. */
static int share(const char *s, struct vm_share_cfg *c, struct err *e)
{
	static char dir[256], tag[64];
	kiln_vm_config *cfg = kiln_vm_config_new();
	int fd, r = devspec_share(cfg, s, &fd, e);

	assert_int_equal(cfg->c.nshare, r ? 0 : 1);
	*c = cfg->c.share[0];
	if (!r) {
		assert_int_equal(fd, c->host_fd);
		snprintf(tag, sizeof(tag), "%s", c->tag);
		c->tag = tag;
		if (c->host_dir) {
			snprintf(dir, sizeof(dir), "%s", c->host_dir);
			c->host_dir = dir;
		}
	}
	kiln_vm_config_free(cfg);
	return r;
}

/* --share DIR:TAG[:ro], or fd=N:TAG[:ro] for a directory kilnd opened. */
static void test_share_forms(void **state)
{
	struct vm_share_cfg c;
	struct err e = { { 0 } };

	(void)state;
	assert_int_equal(share("/srv/data:kiln0:ro", &c, &e), 0);
	assert_string_equal(c.host_dir, "/srv/data");
	assert_int_equal(c.host_fd, -1);
	assert_string_equal(c.tag, "kiln0");
	assert_int_equal(c.read_only, 1);
	assert_int_equal(share("fd=7:kiln1", &c, &e), 0);
	assert_null(c.host_dir);
	assert_int_equal(c.host_fd, 7);
	assert_string_equal(c.tag, "kiln1");
	assert_int_equal(c.read_only, 0);
	assert_int_equal(share("fd=12:t:ro", &c, &e), 0);
	assert_int_equal(c.host_fd, 12);
	assert_int_equal(c.read_only, 1);
	/* A directory named like that is still reachable as a path. */
	assert_int_equal(share("./fd=3:t", &c, &e), 0);
	assert_string_equal(c.host_dir, "./fd=3");
	/* Never stdio, never a non-number. */
	static const char *const bad[] = { "fd=0:t",  "fd=2:t",  "fd=:t",           "fd=3x:t",
					   "fd=-4:t", "fd= 3:t", "fd=4294967299:t", "fd=0x5:t" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(share(bad[i], &c, &e), -EINVAL);
		assert_non_null(strstr(e.msg, "fd=N"));
	}
	assert_int_equal(share("nodir", &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "fd=N:TAG"));
	/* A colon in the directory is the directory's: the tag is the last field. */
	assert_int_equal(share("/srv/a:b:t", &c, &e), 0);
	assert_string_equal(c.host_dir, "/srv/a:b");
	assert_string_equal(c.tag, "t");
	assert_int_equal(share("/srv/a:t,x", &c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "tag 't,x'"));
}

/* --share-remote SOCK:TAG[:ro]: a client-served share. */
static void test_share_remote_forms(void **state)
{
	kiln_vm_config *cfg = kiln_vm_config_new();
	struct err e = { { 0 } };
	char longpath[200];

	(void)state;
	assert_int_equal(devspec_share_remote(cfg, "vm/share-0.sock:mem", &e), 0);
	assert_int_equal(devspec_share_remote(cfg, "/run/a:b.sock:ro2:ro", &e), 0);
	assert_int_equal(cfg->c.nshare, 2);
	assert_string_equal(cfg->c.share[0].remote, "vm/share-0.sock");
	assert_string_equal(cfg->c.share[0].tag, "mem");
	assert_null(cfg->c.share[0].host_dir);
	assert_int_equal(cfg->c.share[0].host_fd, -1);
	assert_int_equal(cfg->c.share[0].read_only, 0);
	assert_string_equal(cfg->c.share[1].remote, "/run/a:b.sock");
	assert_string_equal(cfg->c.share[1].tag, "ro2");
	assert_int_equal(cfg->c.share[1].read_only, 1);
	static const char *const bad[] = { "nosock", ":t", "s:", "s:ro" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(devspec_share_remote(cfg, bad[i], &e), -EINVAL);
		assert_non_null(strstr(e.msg, "SOCK:TAG"));
	}
	memset(longpath, 's', sizeof(longpath));
	memcpy(longpath + 150, ":t", 3);
	assert_int_equal(devspec_share_remote(cfg, longpath, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "1 to 107 bytes"));
	assert_int_equal(devspec_share_remote(cfg, "s:a b", &e), -EINVAL);
	assert_non_null(strstr(e.msg, "tag 'a b'"));
	assert_int_equal(cfg->c.nshare, 2);
	kiln_vm_config_free(cfg);
}

/* --disk's fields; --disk-image PATH [--disk-overlay] [--disk-size] take
 * their values whole, so a path may hold the separators. */
static void test_disk_forms(void **state)
{
	kiln_vm_config *cfg = kiln_vm_config_new();
	struct devspec_state st = { 0 };
	struct err e = { { 0 } };

	(void)state;
	assert_int_equal(devspec_disk(cfg, &st, "/img,overlay=/ovl,size=4096,serial=abc", &e), 0);
	assert_int_equal(cfg->c.ndisk, 1);
	assert_string_equal(cfg->c.disk[0].overlay, "/ovl");
	assert_string_equal(cfg->c.disk[0].serial, "abc");
	assert_true(cfg->c.disk[0].size == 4096ull << 20);
	assert_int_equal(devspec_disk(cfg, &st, "/img,bogus", &e), -EINVAL);
	assert_string_equal(
		e.msg,
		"--disk /img: unknown or bad option 'bogus' (ro, overlay=PATH, serial=ID, size=MIB)");
	assert_int_equal(devspec_disk(cfg, &st, "/img,size=64", &e), -EINVAL);
	assert_string_equal(
		e.msg,
		"--disk /img: size= is an overlay's virtual size: give overlay=PATH too (a raw image has its file's size)");
	static const char *const sizes[] = {
		"0", "1048577", "-1", "18446744073709551616", "4k", ""
	};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char s[64];

		snprintf(s, sizeof(s), "/img,overlay=/o,size=%s", sizes[i]);
		assert_int_equal(devspec_disk(cfg, &st, s, &e), -EINVAL);
		assert_non_null(strstr(e.msg, "must be a whole number of MiB from 1 to 1048576"));
	}
	assert_int_equal(devspec_disk(cfg, &st, "/img,ro,overlay=/o", &e), -EINVAL);
	assert_non_null(strstr(e.msg, "read-only and an overlay together"));
	assert_int_equal(devspec_disk(cfg, &st, "", &e), -EINVAL);
	assert_int_equal(cfg->c.ndisk, 1);
	assert_int_equal(st.ndisk, 1);

	/* The whole-value form: separators are the path's. */
	assert_int_equal(devspec_disk_size(&st, "8", &e), -EINVAL);
	assert_non_null(strstr(e.msg, "give --disk-image PATH first"));
	assert_int_equal(devspec_disk_image(cfg, &st, "/a,ro:b", &e), 0);
	assert_int_equal(devspec_disk_overlay(&st, "/o,size=1:x", &e), 0);
	assert_int_equal(devspec_disk_overlay(&st, "/o2", &e), -EINVAL);
	assert_int_equal(devspec_disk_size(&st, "0", &e), -EINVAL);
	assert_int_equal(devspec_disk_size(&st, "8", &e), 0);
	assert_int_equal(cfg->c.ndisk, 1); /* not before the next disk or the end */
	assert_int_equal(devspec_finish(cfg, &st, &e), 0);
	assert_int_equal(cfg->c.ndisk, 2);
	assert_string_equal(cfg->c.disk[1].path, "/a,ro:b");
	assert_string_equal(cfg->c.disk[1].overlay, "/o,size=1:x");
	assert_int_equal(cfg->c.disk[1].read_only, 0);
	assert_true(cfg->c.disk[1].size == 8ull << 20);
	/* A --disk after --disk-image adds the image first, in order. */
	assert_int_equal(devspec_disk_image(cfg, &st, "/b", &e), 0);
	assert_int_equal(devspec_disk(cfg, &st, "/c", &e), 0);
	assert_string_equal(cfg->c.disk[2].path, "/b");
	assert_null(cfg->c.disk[2].overlay);
	assert_string_equal(cfg->c.disk[3].path, "/c");
	assert_int_equal(devspec_finish(cfg, &st, &e), 0);
	assert_int_equal(cfg->c.ndisk, 4);
	/* --disk-size without an overlay is refused when the disk is added. */
	assert_int_equal(devspec_disk_image(cfg, &st, "/d", &e), 0);
	assert_int_equal(devspec_disk_size(&st, "8", &e), 0);
	assert_int_equal(devspec_finish(cfg, &st, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "size= is an overlay's virtual size"));
	assert_int_equal(cfg->c.ndisk, 4);
	/* A serial libkiln refuses (more than 20 bytes): the option fails
	 * (kiln-vmm stops there; the disk itself was added first). */
	assert_int_equal(devspec_disk(cfg, &st, "/img,serial=123456789012345678901", &e), -EINVAL);
	assert_non_null(strstr(e.msg, "serial '123456789012345678901' must be 1 to 20 bytes"));
	assert_int_equal(st.ndisk, 4);
	kiln_vm_config_free(cfg);
}

static void test_vsock_path_whole(void **state)
{
	kiln_vm_config *cfg = kiln_vm_config_new();
	struct devspec_state st = { 0 };
	struct err e = { { 0 } };

	(void)state;
	assert_int_equal(devspec_vsock_path(cfg, &st, "/run/a,cid=9:b", &e), 0);
	assert_string_equal(cfg->c.vsock.uds, "/run/a,cid=9:b");
	assert_int_equal(cfg->c.vsock.cid, 3);
	assert_int_equal(devspec_vsock(cfg, &st, "/run/v", &e), -EEXIST);
	assert_int_equal(devspec_vsock_path(cfg, &st, "/run/v", &e), -EEXIST);
	kiln_vm_config_free(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tap),
		cmocka_unit_test(test_passt_defaults_and_options),
		cmocka_unit_test(test_one_backend),
		cmocka_unit_test(test_net_rate),
		cmocka_unit_test(test_ip4_prefix),
		cmocka_unit_test(test_net_prefix),
		cmocka_unit_test(test_vsock_cid),
		cmocka_unit_test(test_share_forms),
		cmocka_unit_test(test_share_remote_forms),
		cmocka_unit_test(test_disk_forms),
		cmocka_unit_test(test_vsock_path_whole),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
