/*
 * Unit tests of api/kilnd/supervision/vmm_argv.c: the kiln-vmm command line
 * for one sandbox boot.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/core/api_error.h"
#include "api/kilnd/supervision/vmm_argv.h"
#include "api/kilnd/core/firewall_spec.h"
#include "api/kilnd/core/sandbox_spec.h"

static struct sandbox_spec base_spec(void)
{
	struct sandbox_spec s;

	memset(&s, 0, sizeof(s));
	strcpy(s.image, "minimal");
	strcpy(s.hostname, "box1");
	s.cpus = 2;
	s.memory_mib = 256;
	s.console = true;
	return s;
}

static void test_vmm_argv(void **state)
{
	struct sandbox_spec s = base_spec();
	struct vmm_launch l = { .vmm = "/k/build/kiln-vmm",
				.kernel = "/k/vmlinux",
				.image = "/img/minimal.ext4",
				.overlay = "/st/sandboxes/abc/overlay",
				.vsock = "/st/sandboxes/abc/vsock.sock",
				.control = "/st/sandboxes/abc/control.sock",
				.spec = &s };
	static const char *const want[] = { "/k/build/kiln-vmm",
					    "--kernel",
					    "/k/vmlinux",
					    "--disk-image",
					    "/img/minimal.ext4",
					    "--disk-overlay",
					    "/st/sandboxes/abc/overlay",
					    "--vsock-path",
					    "/st/sandboxes/abc/vsock.sock",
					    "--control",
					    "/st/sandboxes/abc/control.sock",
					    "--mem",
					    "256",
					    "--cpus",
					    "2",
					    "--boot-timeline=json",
					    "--console",
					    "--cmdline",
					    "quiet kiln.hostname=box1",
					    NULL };
	struct vmm_argv a;
	struct api_err e;

	(void)state;
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	for (size_t i = 0; want[i]; i++)
		assert_string_equal(a.argv[i], want[i]);
	assert_null(a.argv[a.argc]);
	assert_int_equal(a.argc, 19);
	vmm_argv_free(&a);

	/* Separators of kiln-vmm's --disk syntax are the paths' own, and a
	 * size is its own option too. */
	s.disk_mib = 2048;
	l.image = "/img/a,ro:b.ext4";
	l.overlay = "/st/sb/x,size=1/overlay";
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	assert_string_equal(a.argv[3], "--disk-image");
	assert_string_equal(a.argv[4], "/img/a,ro:b.ext4");
	assert_string_equal(a.argv[6], "/st/sb/x,size=1/overlay");
	assert_string_equal(a.argv[7], "--disk-size");
	assert_string_equal(a.argv[8], "2048");
	assert_int_equal(a.argc, 21);
	vmm_argv_free(&a);
	s.disk_mib = 0;
	l.image = "/img/minimal.ext4";
	l.overlay = "/st/sandboxes/abc/overlay";

	s.console = false;
	s.nshares = 2;
	strcpy(s.shares[0].host_path, "/srv/data");
	strcpy(s.shares[0].guest_path, "/mnt/data");
	s.shares[0].read_only = true;
	strcpy(s.shares[1].host_path, "/srv/out");
	strcpy(s.shares[1].guest_path, "/out");
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	assert_int_equal(a.argc, 22);
	assert_string_equal(a.argv[16], "--cmdline");
	assert_string_equal(a.argv[17],
			    "quiet kiln.hostname=box1 kiln.shares=kiln0:/mnt/data:ro,kiln1:/out");
	assert_string_equal(a.argv[18], "--share");
	assert_string_equal(a.argv[19], "/srv/data:kiln0:ro");
	assert_string_equal(a.argv[21], "/srv/out:kiln1");
	vmm_argv_free(&a);

	/* kilnd's starts: the directories it opened, never the paths. */
	static const int fds[2] = { 7, 12 }, stdio_fds[2] = { 7, 1 };
	l.share_fds = fds;
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	assert_int_equal(a.argc, 22);
	assert_string_equal(a.argv[19], "fd=7:kiln0:ro");
	assert_string_equal(a.argv[21], "fd=12:kiln1");
	vmm_argv_free(&a);
	l.share_fds = stdio_fds;
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	assert_non_null(strstr(e.msg, "descriptor 1"));
}

/* A client share (issue 37 item 6): its relay's socket, the tag and kiln.shares entry of any share, one timeout. */
static void test_vmm_argv_client_share(void **state)
{
	struct sandbox_spec s = base_spec();
	static const int fds[3] = { 7, -1, -1 };
	const char *socks[3] = { NULL, "/st/sandboxes/abc/vm/share-1.sock",
				 "/st/sandboxes/abc/vm/share-2.sock" };
	struct vmm_launch l = { .vmm = "/k/kiln-vmm",
				.kernel = "/k/vmlinux",
				.image = "/img/m.ext4",
				.overlay = "/st/sandboxes/abc/overlay",
				.vsock = "/st/sandboxes/abc/vm/vsock.sock",
				.control = "/st/sandboxes/abc/vm/control.sock",
				.share_fds = fds,
				.share_socks = socks,
				.spec = &s };
	struct vmm_argv a;
	struct api_err e;
	size_t i;

	(void)state;
	s.nshares = 3;
	strcpy(s.shares[0].host_path, "/srv/data");
	strcpy(s.shares[0].guest_path, "/mnt/data");
	strcpy(s.shares[1].guest_path, "/mnt/mem");
	s.shares[1].client = true;
	s.shares[1].timeout_ms = 250;
	strcpy(s.shares[2].guest_path, "/mnt/ro");
	s.shares[2].client = true;
	s.shares[2].read_only = true;
	s.shares[2].timeout_ms = 250;
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	for (i = 0; i < a.argc && strcmp(a.argv[i], "--cmdline") != 0; i++)
		;
	assert_true(i + 1 < a.argc);
	assert_non_null(strstr(a.argv[i + 1],
			       "kiln.shares=kiln0:/mnt/data,kiln1:/mnt/mem,kiln2:/mnt/ro:ro"));
	assert_string_equal(a.argv[i + 2], "--share");
	assert_string_equal(a.argv[i + 3], "fd=7:kiln0");
	assert_string_equal(a.argv[i + 4], "--share-remote");
	assert_string_equal(a.argv[i + 5], "/st/sandboxes/abc/vm/share-1.sock:kiln1");
	assert_string_equal(a.argv[i + 6], "--share-remote");
	assert_string_equal(a.argv[i + 7], "/st/sandboxes/abc/vm/share-2.sock:kiln2:ro");
	assert_string_equal(a.argv[i + 8], "--share-remote-timeout");
	assert_string_equal(a.argv[i + 9], "250");
	assert_int_equal(a.argc, i + 10);
	vmm_argv_free(&a);
	/* kiln-vmm splits SOCK:TAG at a ':'; none may hide in the path. */
	socks[1] = "/st:x/vm/share-1.sock";
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	assert_non_null(strstr(e.msg, "holds ':'"));
	socks[1] = NULL;
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	assert_non_null(strstr(e.msg, "client share socket"));
}

/* kilnd's jail (docs/security.md): --jail DIR --uid N --gid N, never without an id. */
static void test_vmm_argv_jail(void **state)
{
	struct sandbox_spec s = base_spec();
	struct vmm_launch l = { .vmm = "/k/kiln-vmm",
				.kernel = "/k/vmlinux",
				.image = "/img/m.ext4",
				.overlay = "/st/sandboxes/abc/overlay",
				.vsock = "/st/sandboxes/abc/vm/vsock.sock",
				.control = "/st/sandboxes/abc/vm/control.sock",
				.jail_dir = "/st/sandboxes/abc/vm",
				.jail_id = 2000000007,
				.spec = &s };
	struct vmm_argv a;
	struct api_err e;
	size_t i;

	(void)state;
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	for (i = 0; i < a.argc && strcmp(a.argv[i], "--jail") != 0; i++)
		;
	assert_true(i + 5 < a.argc);
	assert_string_equal(a.argv[i + 1], "/st/sandboxes/abc/vm");
	assert_string_equal(a.argv[i + 2], "--uid");
	assert_string_equal(a.argv[i + 3], "2000000007");
	assert_string_equal(a.argv[i + 4], "--gid");
	assert_string_equal(a.argv[i + 5], "2000000007");
	vmm_argv_free(&a);
	l.jail_id = 0;
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	assert_non_null(strstr(e.msg, "without an id"));
	l.jail_id = 5;
	l.jail_dir = "st/sandboxes/ab/vm";
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	assert_non_null(strstr(e.msg, "jail directory"));
}

/* A restore: the snapshot instead of a kernel, the same machine and devices. */
static void test_vmm_argv_restore(void **state)
{
	struct sandbox_spec s = base_spec();
	struct vmm_launch l = { .vmm = "/k/kiln-vmm",
				.kernel = NULL,
				.image = "/img/m.ext4",
				.overlay = "/st/sb/f00/overlay",
				.vsock = "/st/sb/f00/vsock.sock",
				.control = "/st/sb/f00/control.sock",
				.restore_dir = "/st/sb/abc/checkpoints/cp1",
				.spec = &s };
	static const char *const want[] = { "/k/kiln-vmm",
					    "--restore",
					    "/st/sb/abc/checkpoints/cp1",
					    "--disk-image",
					    "/img/m.ext4",
					    "--disk-overlay",
					    "/st/sb/f00/overlay",
					    "--vsock-path",
					    "/st/sb/f00/vsock.sock",
					    "--control",
					    "/st/sb/f00/control.sock",
					    "--mem",
					    "256",
					    "--cpus",
					    "2",
					    "--boot-timeline=json",
					    "--console",
					    NULL };
	struct vmm_argv a;
	struct api_err e;

	(void)state;
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	assert_int_equal(a.argc, 17);
	for (size_t i = 0; want[i]; i++)
		assert_string_equal(a.argv[i], want[i]);
	for (size_t i = 0; i < a.argc; i++) {
		assert_string_not_equal(a.argv[i], "--kernel");
		assert_string_not_equal(a.argv[i], "--cmdline");
	}
	vmm_argv_free(&a);
	l.restore_dir = "/st/sb/abc/checkpoints/a\nb";
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	assert_non_null(strstr(e.msg, "snapshot"));
	l.restore_dir = "checkpoints/cp1";
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	/* Without a snapshot, a boot needs its kernel. */
	l.restore_dir = NULL;
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	assert_non_null(strstr(e.msg, "kernel"));
	assert_int_equal(a.argc, 0);
}

/* Whatever slipped past validation is caught again before kiln-vmm sees it. */
static void test_vmm_argv_refuses_injection(void **state)
{
	struct sandbox_spec s = base_spec();
	struct vmm_launch l = { .vmm = "/v",
				.kernel = "/k",
				.image = "/i",
				.overlay = "/o",
				.vsock = "/s",
				.control = "/c",
				.spec = &s };
	struct vmm_argv a;
	struct api_err e;

	(void)state;
	strcpy(s.hostname, "x kiln.exec=reboot");
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	assert_non_null(strstr(e.msg, "hostname"));
	s = base_spec();
	l.image = "/i\n";
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	assert_non_null(strstr(e.msg, "image"));
	l.image = "/i";
	l.overlay = "relative";
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	l.overlay = "/o";
	s.nshares = 1;
	strcpy(s.shares[0].host_path, "a/evil");
	strcpy(s.shares[0].guest_path, "/m");
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	assert_non_null(strstr(e.msg, "host_path"));
	/* A colon is the directory's: kiln-vmm's tag is the last field, kilnd's own kiln0. */
	strcpy(s.shares[0].host_path, "/a:evil");
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	assert_string_equal(a.argv[a.argc - 1], "/a:evil:kiln0");
	vmm_argv_free(&a);
	strcpy(s.shares[0].host_path, "/a");
	strcpy(s.shares[0].guest_path, "/m kiln.exec=x");
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	assert_non_null(strstr(e.msg, "guest_path"));
	assert_int_equal(a.argc, 0);
	s = base_spec();
	l.control = "control.sock";
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	assert_non_null(strstr(e.msg, "control socket"));
}

static struct sandbox_spec passt_spec(void)
{
	struct sandbox_spec s;

	memset(&s, 0, sizeof(s));
	strcpy(s.image, "minimal");
	strcpy(s.hostname, "box1");
	s.cpus = 1;
	s.memory_mib = 128;
	s.network = SANDBOX_NET_PASST;
	return s;
}

static void test_argv_passt(void **state)
{
	struct sandbox_spec s = passt_spec();
	struct vmm_launch l = { .vmm = "/k/kiln-vmm",
				.kernel = "/k/vmlinux",
				.image = "/img/m.ext4",
				.overlay = "/st/sb/a/overlay",
				.vsock = "/st/sb/a/vsock.sock",
				.control = "/st/sb/a/control.sock",
				.firewall = "/st/sb/a/firewall.json",
				.spec = &s };
	static const char *const want[] = {
		"/k/kiln-vmm",
		"--kernel",
		"/k/vmlinux",
		"--disk-image",
		"/img/m.ext4",
		"--disk-overlay",
		"/st/sb/a/overlay",
		"--vsock-path",
		"/st/sb/a/vsock.sock",
		"--control",
		"/st/sb/a/control.sock",
		"--mem",
		"128",
		"--cpus",
		"1",
		"--boot-timeline=json",
		"--net",
		"passt",
		"--firewall",
		"/st/sb/a/firewall.json",
		"--firewall-log",
		"--cmdline",
		"quiet kiln.hostname=box1 kiln.ip=10.0.2.15/24 kiln.gw=10.0.2.2 kiln.dns=10.0.2.3",
		NULL
	};
	struct vmm_argv a;
	struct api_err e;

	(void)state;
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	for (size_t i = 0; want[i]; i++)
		assert_string_equal(a.argv[i], want[i]);
	assert_int_equal(a.argc, 23);
	vmm_argv_free(&a);

	/* A restore keeps the device and the rules, has no command line. */
	l.restore_dir = "/st/sb/a/hibernate";
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	assert_int_equal(a.argc, 21);
	assert_string_equal(a.argv[16], "--net");
	assert_string_equal(a.argv[19], "/st/sb/a/firewall.json");
	assert_string_equal(a.argv[20], "--firewall-log");
	for (size_t i = 0; i < a.argc; i++)
		assert_string_not_equal(a.argv[i], "--cmdline");
	vmm_argv_free(&a);

	/* kilnd --dns-resolver: passt's upstream nameserver, at boot and restore. */
	l.resolver = "192.0.2.53";
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	assert_string_equal(a.argv[17], "passt,resolver=192.0.2.53");
	vmm_argv_free(&a);
	l.resolver = "";
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	assert_string_equal(a.argv[17], "passt");
	vmm_argv_free(&a);

	/* The rules file is required and must be a plain absolute path. */
	l.firewall = NULL;
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	l.firewall = "st/sb/a/firewall.json";
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	/* Without a network the file is not looked at and nothing is added. */
	s.network = SANDBOX_NET_NONE;
	l.restore_dir = NULL;
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	for (size_t i = 0; i < a.argc; i++) {
		assert_string_not_equal(a.argv[i], "--net");
		assert_null(strstr(a.argv[i], "kiln.ip="));
	}
	vmm_argv_free(&a);
}

/* Rules with http entries: --egress-proxy SOCKET after the firewall, at boot and restore. */
static void test_argv_egress_proxy(void **state)
{
	struct sandbox_spec s = passt_spec();
	struct vmm_launch l = { .vmm = "/k/kiln-vmm",
				.kernel = "/k/vmlinux",
				.image = "/img/m.ext4",
				.overlay = "/st/sb/a/overlay",
				.vsock = "/st/sb/a/vm/vsock.sock",
				.control = "/st/sb/a/vm/control.sock",
				.firewall = "/st/sb/a/firewall.json",
				.egress_proxy = "/st/sb/a/vm/egress.sock",
				.spec = &s };
	struct vmm_argv a;
	struct api_err e;

	(void)state;
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	assert_int_equal(a.argc, 25);
	assert_string_equal(a.argv[20], "--firewall-log");
	assert_string_equal(a.argv[21], "--egress-proxy");
	assert_string_equal(a.argv[22], "/st/sb/a/vm/egress.sock");
	vmm_argv_free(&a);
	l.restore_dir = "/st/sb/a/vm/hibernate/image";
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	assert_int_equal(a.argc, 23);
	assert_string_equal(a.argv[21], "--egress-proxy");
	vmm_argv_free(&a);
	/* A path kiln-vmm could misread is refused. */
	l.egress_proxy = "vm/egress.sock";
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	/* "" or NULL: none. */
	l.egress_proxy = "";
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	for (size_t i = 0; i < a.argc; i++)
		assert_string_not_equal(a.argv[i], "--egress-proxy");
	vmm_argv_free(&a);
	/* Without a network, none either. */
	l.egress_proxy = "/st/sb/a/vm/egress.sock";
	s.network = SANDBOX_NET_NONE;
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	for (size_t i = 0; i < a.argc; i++)
		assert_string_not_equal(a.argv[i], "--egress-proxy");
	vmm_argv_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vmm_argv),
		cmocka_unit_test(test_vmm_argv_jail),
		cmocka_unit_test(test_vmm_argv_client_share),
		cmocka_unit_test(test_vmm_argv_refuses_injection),
		cmocka_unit_test(test_vmm_argv_restore),
		cmocka_unit_test(test_argv_passt),
		cmocka_unit_test(test_argv_egress_proxy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
