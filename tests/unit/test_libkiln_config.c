/*
 * libkiln's configuration and the checks that need no KVM: each device is
 * a typed call, refused with a message naming the field and leaving the
 * config as it was,
 * limits say so, a bad firewall is refused at the setter, kiln_vm_create
 * refuses a kick signal without a handler (libkiln installs none by
 * itself), a fork refuses a TAP network, and a VM created from a config
 * does not see later changes to it (it keeps its own copy).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>

#include <kiln/kiln.h>

#include "libkiln/handles.h"

static void test_defaults_and_setters_copy(void **state)
{
	kiln_vm_config *c = kiln_vm_config_new();
	char path[32] = "/tmp/kernel";

	(void)state;
	assert_non_null(c);
	assert_int_equal(c->c.mem_mib, 128);
	assert_int_equal(c->c.cpus, 1);
	assert_int_equal(c->c.console_out_fd, -1);
	assert_int_equal(c->c.rng, 1);
	assert_int_equal(c->c.kick_signal, SIGUSR1);
	assert_int_equal(kiln_vm_config_set_kernel(c, path), 0);
	strcpy(path, "/changed");
	assert_string_equal(c->c.kernel, "/tmp/kernel");
	assert_string_equal(kiln_vm_config_errmsg(c), "");
	kiln_vm_config_free(c);
	kiln_vm_config_free(NULL);
}

/* Each device is a typed call; a refused one names the field and leaves
 * the config as it was; every string is copied. */
static void test_disk_calls(void **state)
{
	kiln_vm_config *c = kiln_vm_config_new();
	char path[16] = "/img";

	(void)state;
	assert_int_equal(kiln_vm_config_add_disk(c, path, 0, "/ovl"), 0);
	strcpy(path, "/changed");
	assert_string_equal(c->c.disk[0].path, "/img");
	assert_string_equal(c->c.disk[0].overlay, "/ovl");
	assert_int_equal(kiln_vm_config_add_disk(c, NULL, 0, NULL), -EINVAL);
	assert_string_equal(kiln_vm_config_errmsg(c), "disk: no image path given");
	assert_int_equal(kiln_vm_config_add_disk(c, "/img", KILN_DISK_READ_ONLY, "/o"), -EINVAL);
	assert_non_null(strstr(kiln_vm_config_errmsg(c), "read-only and an overlay together"));
	assert_int_equal(kiln_vm_config_add_disk(c, "/img", 0, ""), -EINVAL);
	assert_int_equal(c->c.ndisk, 1);
	/* size: MiB of an overlay, 1 MiB .. 1 TiB; 0 is the base's. */
	assert_int_equal(kiln_vm_config_set_disk_size(c, 0, 4096), 0);
	assert_true(c->c.disk[0].size == 4096ull << 20);
	assert_int_equal(kiln_vm_config_set_disk_size(c, 0, 1048577), -EINVAL);
	assert_string_equal(kiln_vm_config_errmsg(c),
			    "disk /img: size must be a whole number of MiB from 1 to 1048576");
	/* A size that would wrap when shifted to bytes is still too big. */
	assert_int_equal(kiln_vm_config_set_disk_size(c, 0, 1ull << 44), -EINVAL);
	assert_int_equal(kiln_vm_config_set_disk_size(c, 0, UINT64_MAX), -EINVAL);
	assert_true(c->c.disk[0].size == 4096ull << 20);
	assert_int_equal(kiln_vm_config_set_disk_size(c, 1, 64), -ERANGE);
	assert_string_equal(kiln_vm_config_errmsg(c), "disk 1: no such disk (1 added)");
	assert_int_equal(kiln_vm_config_set_disk_serial(c, 0, "abc"), 0);
	assert_string_equal(c->c.disk[0].serial, "abc");
	assert_int_equal(kiln_vm_config_set_disk_serial(c, 0, "123456789012345678901"), -EINVAL);
	assert_int_equal(kiln_vm_config_set_disk_serial(c, 0, ""), -EINVAL);
	assert_string_equal(c->c.disk[0].serial, "abc");
	assert_int_equal(kiln_vm_config_set_disk_serial(c, 0, NULL), 0);
	assert_null(c->c.disk[0].serial);
	/* A raw image has its file's size. */
	assert_int_equal(kiln_vm_config_add_disk(c, "/raw", KILN_DISK_READ_ONLY, NULL), 0);
	assert_int_equal(kiln_vm_config_set_disk_size(c, 1, 64), -EINVAL);
	assert_non_null(strstr(kiln_vm_config_errmsg(c), "size is an overlay's virtual size"));
	assert_int_equal(kiln_vm_config_set_disk_size(c, 1, 0), 0);
	for (int i = 2; i < 8; i++)
		assert_int_equal(kiln_vm_config_add_disk(c, "/img", KILN_DISK_READ_ONLY, NULL), 0);
	assert_int_equal(kiln_vm_config_add_disk(c, "/img", 0, NULL), -E2BIG);
	assert_string_equal(kiln_vm_config_errmsg(c), "disk: at most 8 disks");
	kiln_vm_config_free(c);
}

/* Client-served shares: a socket path, a tag, the one timeout. */
static void test_remote_share_calls(void **state)
{
	kiln_vm_config *c = kiln_vm_config_new();

	(void)state;
	assert_int_equal(kiln_vm_config_add_remote_share(c, "vm/share-0.sock", "mem",
							 KILN_SHARE_READ_ONLY),
			 0);
	assert_string_equal(c->c.share[0].remote, "vm/share-0.sock");
	assert_int_equal(c->c.share[0].read_only, 1);
	assert_int_equal(kiln_vm_config_add_remote_share(c, NULL, "t", 0), -EINVAL);
	assert_non_null(strstr(kiln_vm_config_errmsg(c), "no socket path"));
	assert_int_equal(kiln_vm_config_add_remote_share(c, "", "t", 0), -EINVAL);
	assert_int_equal(kiln_vm_config_add_remote_share(c, "s", "a,b", 0), -EINVAL);
	assert_int_equal(c->c.share_remote_timeout_ms, 0);
	assert_int_equal(kiln_vm_config_set_remote_share_timeout(c, 99), -EINVAL);
	assert_non_null(strstr(kiln_vm_config_errmsg(c), "100 to 60000"));
	assert_int_equal(kiln_vm_config_set_remote_share_timeout(c, 60001), -EINVAL);
	assert_int_equal(kiln_vm_config_set_remote_share_timeout(c, 100), 0);
	assert_int_equal(kiln_vm_config_set_remote_share_timeout(c, 60000), 0);
	assert_int_equal(c->c.share_remote_timeout_ms, 60000);
	/* Counted with the host directories' shares. */
	for (int i = 1; i < 8; i++)
		assert_int_equal(kiln_vm_config_add_share(c, "t", "/srv", 0), 0);
	assert_int_equal(kiln_vm_config_add_remote_share(c, "s", "t", 0), -E2BIG);
	kiln_vm_config_free(c);
}

static void test_share_calls(void **state)
{
	kiln_vm_config *c = kiln_vm_config_new();
	char tag[64];

	(void)state;
	/* Any path: no separator of kiln-vmm's syntax is special here. */
	assert_int_equal(kiln_vm_config_add_share(c, "kiln0", "/srv/a,b:c", KILN_SHARE_READ_ONLY),
			 0);
	assert_string_equal(c->c.share[0].host_dir, "/srv/a,b:c");
	assert_int_equal(c->c.share[0].host_fd, -1);
	assert_int_equal(c->c.share[0].read_only, 1);
	assert_int_equal(kiln_vm_config_add_share_fd(c, "kiln1", 7, 0), 0);
	assert_null(c->c.share[1].host_dir);
	assert_int_equal(c->c.share[1].host_fd, 7);
	assert_int_equal(c->c.share[1].read_only, 0);
	/* Never stdio; a tag that fits the kernel command line. */
	for (int fd = -5; fd < 3; fd++)
		assert_int_equal(kiln_vm_config_add_share_fd(c, "t", fd, 0), -EINVAL);
	assert_non_null(strstr(kiln_vm_config_errmsg(c), "stdio"));
	static const char *const bad[] = { "", "a b", "a,b", "a:b",
					   "0123456789012345678901234567890123456" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(kiln_vm_config_add_share(c, bad[i], "/srv", 0), -EINVAL);
		assert_non_null(strstr(kiln_vm_config_errmsg(c), "must be 1 to 36 bytes"));
	}
	assert_int_equal(kiln_vm_config_add_share(c, NULL, "/srv", 0), -EINVAL);
	assert_int_equal(kiln_vm_config_add_share(c, "t", NULL, 0), -EINVAL);
	assert_int_equal(kiln_vm_config_add_share(c, "t", "", 0), -EINVAL);
	assert_int_equal(c->c.nshare, 2);
	for (int i = 2; i < 8; i++) {
		snprintf(tag, sizeof(tag), "t%d", i);
		assert_int_equal(kiln_vm_config_add_share(c, tag, "/srv", 0), 0);
	}
	assert_string_equal(c->c.share[7].tag, "t7");
	assert_int_equal(kiln_vm_config_add_share(c, "t8", "/srv", 0), -E2BIG);
	kiln_vm_config_free(c);
}

static void test_net_calls(void **state)
{
	kiln_vm_config *c = kiln_vm_config_new();

	(void)state;
	assert_int_equal(kiln_vm_config_add_net_tap(c, "kt0", "01:00:00:00:00:01", NULL), -EINVAL);
	assert_string_equal(
		kiln_vm_config_errmsg(c),
		"net mac=01:00:00:00:00:01: not a unicast MAC address like 02:00:00:00:00:01");
	assert_int_equal(kiln_vm_config_add_net_tap(c, NULL, NULL, NULL), -EINVAL);
	assert_int_equal(kiln_vm_config_add_net_tap(c, "", NULL, NULL), -EINVAL);
	assert_int_equal(kiln_vm_config_add_net_tap(c, "0123456789abcdef", NULL, NULL), -EINVAL);
	assert_int_equal(kiln_vm_config_add_net_tap(c, "kt0", NULL, "10.77.0.2"), -EINVAL);
	assert_int_equal(c->c.nnet, 0);
	assert_int_equal(kiln_vm_config_add_net_tap(c, "kt0", "02:00:00:00:00:07", "10.77.0.2/24"),
			 0);
	assert_string_equal(c->c.net[0].tap, "kt0");
	assert_int_equal(c->c.net[0].prefix, 24);
	/* passt: NULL takes QEMU's user-mode layout, copied like the rest. */
	assert_int_equal(kiln_vm_config_add_net_passt(c, NULL, NULL, NULL, NULL, NULL), 0);
	assert_int_equal(c->c.net[1].passt, 1);
	assert_string_equal(c->c.net[1].ip, "10.0.2.15/24");
	assert_string_equal(c->c.net[1].gw, "10.0.2.2");
	assert_string_equal(c->c.net[1].dns, "10.0.2.3");
	assert_null(c->c.net[1].resolver);
	assert_int_equal(kiln_vm_config_add_net_passt(c, NULL, "192.168.7.20/24", "10.0.3.1", NULL,
						      NULL),
			 -EINVAL);
	assert_string_equal(
		kiln_vm_config_errmsg(c),
		"net gw=10.0.3.1: must be another address in the guest's network 192.168.7.20/24");
	assert_int_equal(kiln_vm_config_add_net_passt(c, NULL, NULL, NULL, NULL, "10.0.2.3"),
			 -EINVAL);
	assert_int_equal(kiln_vm_config_add_net_passt(c, NULL, NULL, NULL, NULL, "127.0.0.53"), 0);
	assert_string_equal(c->c.net[2].resolver, "127.0.0.53");
	assert_int_equal(kiln_vm_config_add_net_passt(c, NULL, NULL, NULL, NULL, NULL), 0);
	assert_int_equal(kiln_vm_config_add_net_passt(c, NULL, NULL, NULL, NULL, NULL), -E2BIG);
	assert_string_equal(kiln_vm_config_errmsg(c), "net: at most 4 network devices");
	/* Rates: at most a bucket's 2^48; a refused one changes nothing. */
	assert_int_equal(kiln_vm_config_set_net_rate(c, 1000, 0, 0, 5), 0);
	assert_int_equal(c->has_rate, 1);
	assert_int_equal(kiln_vm_config_set_net_rate(c, 0, 0, (1ull << 48) + 1, 0), -EINVAL);
	assert_string_equal(
		kiln_vm_config_errmsg(c),
		"net-rate rx_bytes: 281474976710657 is more than 281474976710656 per second");
	assert_true(c->c.net_rate.tx_bytes == 1000 && c->c.net_rate.rx_packets == 5 &&
		    c->c.net_rate.rx_bytes == 0);
	kiln_vm_config_free(c);
}

static void test_vsock_and_firewall_checked_at_the_setter(void **state)
{
	kiln_vm_config *c = kiln_vm_config_new();
	char longp[200];

	(void)state;
	memset(longp, 'a', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	assert_int_equal(kiln_vm_config_set_vsock(c, longp, 0), -ENAMETOOLONG);
	assert_int_equal(kiln_vm_config_set_vsock(c, "/v", 2), -EINVAL);
	assert_int_equal(kiln_vm_config_set_vsock(c, "/v", 0xffffffffu), -EINVAL);
	assert_int_equal(kiln_vm_config_set_vsock(c, "", 0), -EINVAL);
	assert_null(c->c.vsock.uds);
	assert_int_equal(kiln_vm_config_set_vsock(c, "/v", 0), 0);
	assert_int_equal(c->c.vsock.cid, 3);
	assert_int_equal(kiln_vm_config_set_vsock(c, "/w,cid=9", 7),
			 0); /* a second replaces the first */
	assert_string_equal(c->c.vsock.uds, "/w,cid=9");
	assert_int_equal(c->c.vsock.cid, 7);
	assert_int_equal(kiln_vm_config_set_firewall(c, "{\"allow\":[{\"cidr\":\"10.0.0.1/8\"}]}",
						     33),
			 -EINVAL);
	assert_non_null(strstr(kiln_vm_config_errmsg(c), "did you mean 10.0.0.0/8?"));
	assert_null(c->c.firewall);
	assert_int_equal(kiln_vm_config_set_firewall(c, "{}", KILN_VM_FIREWALL_MAX + 1), -EFBIG);
	assert_int_equal(kiln_vm_config_set_kick_signal(c, SIGKILL), -EINVAL);
	assert_int_equal(kiln_vm_config_set_console(c, -2, 1), -EBADF);
	kiln_vm_config_free(c);
}

static void test_create_refuses_a_kick_signal_without_handler(void **state)
{
	kiln_vm_config *c = kiln_vm_config_new();
	kiln_vm *vm = (kiln_vm *)1;

	(void)state;
	signal(SIGUSR2, SIG_DFL);
	kiln_vm_config_set_kernel(c, "/nonexistent");
	assert_int_equal(kiln_vm_config_set_kick_signal(c, SIGUSR2), 0);
	assert_int_equal(kiln_vm_create(c, &vm), -EINVAL);
	assert_null(vm);
	assert_non_null(strstr(kiln_vm_config_errmsg(c), "kick signal 12 has no handler"));
	/* Only when asked: then the kernel file is the next thing checked. */
	assert_int_equal(kiln_kick_signal_install(SIGUSR2), 0);
	assert_int_equal(kiln_vm_create(c, &vm), -ENOENT);
	assert_non_null(strstr(kiln_vm_config_errmsg(c), "/nonexistent"));
	signal(SIGUSR2, SIG_DFL);
	kiln_vm_config_free(c);
}

static void test_fork_refuses_tap_and_firewall_needs_a_net(void **state)
{
	kiln_vm_config *c = kiln_vm_config_new();
	kiln_vm *vm;

	(void)state;
	assert_int_equal(kiln_vm_config_add_net_tap(c, "kt0", NULL, NULL), 0);
	assert_int_equal(kiln_vm_fork(c, "/snap", "/tmp", &vm), -EBUSY);
	assert_non_null(strstr(kiln_vm_config_errmsg(c), "TAP 'kt0'"));
	kiln_vm_config_free(c);

	c = kiln_vm_config_new();
	kiln_vm_config_set_kernel(c, "/nonexistent");
	assert_int_equal(kiln_vm_config_set_firewall(c, "{}", 2), 0);
	assert_int_equal(kiln_vm_create(c, &vm), -EINVAL);
	assert_string_equal(kiln_vm_config_errmsg(c), "a firewall needs a network device");
	kiln_vm_config_free(c);
}

/* `http` rules need an egress proxy, and an egress proxy needs a firewall: refused at create. */
static void test_egress_proxy_and_http_rules_go_together(void **state)
{
	static const char http[] = "{\"http\":[{\"host\":\"web.test\"}]}";
	kiln_vm_config *c = kiln_vm_config_new();
	kiln_vm *vm;
	char longp[200];

	(void)state;
	kiln_vm_config_set_kernel(c, "/nonexistent");
	assert_int_equal(kiln_vm_config_add_net_passt(c, NULL, NULL, NULL, NULL, NULL), 0);
	assert_int_equal(kiln_vm_config_set_firewall(c, http, strlen(http)), 0);
	assert_int_equal(kiln_vm_config_needs_egress_proxy(c), 1);
	assert_int_equal(kiln_vm_create(c, &vm), -EINVAL);
	assert_string_equal(kiln_vm_config_errmsg(c), KILN_VM_EGRESS_PROXY_MISSING);
	assert_int_equal(kiln_vm_config_set_egress_proxy(c, "/run/egress.sock"), 0);
	assert_int_equal(kiln_vm_config_needs_egress_proxy(c), 0);
	/* Without `http` nothing needs it; a proxy without a firewall is refused. */
	assert_int_equal(kiln_vm_config_set_firewall(c, "{}", 2), 0);
	assert_int_equal(kiln_vm_config_needs_egress_proxy(c), 0);
	assert_int_equal(kiln_vm_config_set_firewall(c, NULL, 0), 0);
	assert_int_equal(kiln_vm_create(c, &vm), -EINVAL);
	assert_non_null(strstr(kiln_vm_config_errmsg(c), "an egress proxy needs a firewall"));
	memset(longp, 'a', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	assert_int_equal(kiln_vm_config_set_egress_proxy(c, longp), -ENAMETOOLONG);
	assert_non_null(strstr(kiln_vm_config_errmsg(c), "not a Unix socket path"));
	kiln_vm_config_free(c);
}

/* A stand-in for kiln_vm_prepare's result: two pipe ends as its /dev/kvm
 * and VM descriptors, so who closes them shows without KVM. */
static kiln_vm_prepared *fake_prepared(int fds[2])
{
	struct vm_kvm_prep *p = calloc(1, sizeof(*p));
	int pp[2];

	assert_non_null(p);
	assert_int_equal(pipe2(pp, O_CLOEXEC), 0);
	p->kvm_fd = fds[0] = pp[0];
	p->vm_fd = fds[1] = pp[1];
	return (kiln_vm_prepared *)p;
}

static int is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* Prepared KVM parts: taken by the next create whatever it returns (an
 * early refusal, a kernel that is not there), replaced or dropped by the
 * setter, freed with the config; kiln_vm_prepare without a usable KVM is
 * -errno with kvm_open's message and no handle. */
static void test_prepared_parts_are_taken_once(void **state)
{
	kiln_vm_config *c = kiln_vm_config_new();
	kiln_vm_prepared *p;
	kiln_vm *vm;
	char msg[256] = "";
	int fds[2], again[2], got[3];

	(void)state;
	p = fake_prepared(fds);
	assert_int_equal(kiln_vm_prepared_fds(p, got, 1), -ENOSPC);
	assert_int_equal(kiln_vm_prepared_fds(p, got, 3), 2);
	assert_int_equal(got[0], fds[0]);
	assert_int_equal(got[1], fds[1]);
	/* refused before KVM: taken all the same */
	kiln_vm_config_set_kernel(c, "/nonexistent");
	assert_int_equal(kiln_vm_config_set_firewall(c, "{}", 2), 0);
	assert_int_equal(kiln_vm_config_set_prepared(c, p), 0);
	assert_int_equal(kiln_vm_create(c, &vm), -EINVAL);
	assert_false(is_open(fds[0]) || is_open(fds[1]));
	kiln_vm_config_free(c);
	/* refused inside vm_create (no kernel file): taken and closed */
	assert_int_equal(kiln_kick_signal_install(SIGUSR1), 0);
	c = kiln_vm_config_new();
	kiln_vm_config_set_kernel(c, "/nonexistent");
	kiln_vm_config_set_prepared(c, fake_prepared(fds));
	assert_int_equal(kiln_vm_create(c, &vm), -ENOENT);
	assert_false(is_open(fds[0]) || is_open(fds[1]));
	assert_int_equal(kiln_vm_create(c, &vm), -ENOENT); /* nothing stale left to take */
	/* replaced, dropped, freed with the config */
	kiln_vm_config_set_prepared(c, fake_prepared(fds));
	kiln_vm_config_set_prepared(c, fake_prepared(again));
	assert_false(is_open(fds[0]) || is_open(fds[1]));
	kiln_vm_config_set_prepared(c, NULL);
	assert_false(is_open(again[0]) || is_open(again[1]));
	kiln_vm_config_set_prepared(c, fake_prepared(fds));
	kiln_vm_config_free(c);
	assert_false(is_open(fds[0]) || is_open(fds[1]));
	kiln_vm_prepared_free(NULL);
	signal(SIGUSR1, SIG_DFL);
	/* the real call: without KVM (this host's may be missing or kvm-pvm) a message */
	if (kiln_vm_prepare(&p, msg, sizeof(msg)) < 0) {
		assert_null(p);
		assert_non_null(strstr(msg, "/dev/kvm"));
	} else {
		assert_int_equal(kiln_vm_prepared_fds(p, got, 2), 2);
		assert_true(is_open(got[0]) && is_open(got[1]));
		kiln_vm_prepared_free(p);
		assert_false(is_open(got[0]) || is_open(got[1]));
	}
}

/* Filters are on unless the caller says otherwise; a mode that is none
 * of the three is refused with a message and changes nothing. */
static void test_seccomp_kill_by_default_and_bad_mode_refused(void **state)
{
	kiln_vm_config *c = kiln_vm_config_new();

	(void)state;
	assert_non_null(c);
	assert_int_equal(c->seccomp, KILN_SECCOMP_KILL);
	assert_int_equal(kiln_vm_config_set_seccomp(c, KILN_SECCOMP_LOG), 0);
	assert_int_equal(c->seccomp, KILN_SECCOMP_LOG);
	assert_int_equal(kiln_vm_config_set_seccomp(c, (enum kiln_seccomp_mode)7), -EINVAL);
	assert_non_null(strstr(kiln_vm_config_errmsg(c), "none of kill, log, off"));
	assert_int_equal(c->seccomp, KILN_SECCOMP_LOG);
	assert_int_equal(kiln_vm_config_set_seccomp(c, KILN_SECCOMP_OFF), 0);
	kiln_vm_config_free(c);
}

static void test_names_and_version(void **state)
{
	(void)state;
	assert_string_equal(kiln_vm_exit_name(KILN_VM_EXIT_RESET), "reset");
	assert_string_equal(kiln_vm_exit_name(KILN_VM_EXIT_EARLY_RESET), "reset_before_init");
	assert_string_equal(kiln_vm_exit_name(KILN_VM_EXIT_TRIPLE_FAULT), "triple_fault");
	assert_string_equal(kiln_vm_exit_name(KILN_VM_EXIT_FAILURE), "failure");
	assert_string_equal(kiln_vm_exit_name(KILN_VM_EXIT_STOPPED), "stopped");
	assert_string_equal(kiln_vm_exit_name(KILN_VM_EXIT_NONE), "running");
	assert_string_equal(kiln_version(), KILN_VERSION_STRING);
}

static void test_agent_handle_refuses_long_paths_and_bad_exec(void **state)
{
	char longp[200];
	kiln_agent *a;
	struct kiln_exec_opts o = { .size = sizeof(o) };

	(void)state;
	memset(longp, 'a', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	assert_int_equal(kiln_agent_new(longp, &a), -ENAMETOOLONG);
	assert_null(a);
	assert_int_equal(kiln_agent_new("/tmp/kiln-no-such.sock", &a), 0);
	assert_int_equal(kiln_agent_exec(a, &o, NULL, NULL, NULL, NULL, NULL), -EINVAL);
	assert_string_equal(kiln_agent_errmsg(a), "exec: no argv given");
	/* The caller's options: refused before anything is sent. */
	assert_string_equal(kiln_agent_errcode(a), "bad_field");
	assert_int_equal(kiln_agent_errkind(a), KILN_AGENT_FAIL_REQUEST);
	/* Nothing listens there: the connection fails, not the agent. */
	assert_true(kiln_agent_wait_ready(a, 50) < 0);
	assert_true(strcmp(kiln_agent_errcode(a), "unreachable") == 0 ||
		    strcmp(kiln_agent_errcode(a), "timeout") == 0);
	kiln_agent_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_and_setters_copy),
		cmocka_unit_test(test_disk_calls),
		cmocka_unit_test(test_share_calls),
		cmocka_unit_test(test_remote_share_calls),
		cmocka_unit_test(test_net_calls),
		cmocka_unit_test(test_vsock_and_firewall_checked_at_the_setter),
		cmocka_unit_test(test_create_refuses_a_kick_signal_without_handler),
		cmocka_unit_test(test_fork_refuses_tap_and_firewall_needs_a_net),
		cmocka_unit_test(test_egress_proxy_and_http_rules_go_together),
		cmocka_unit_test(test_prepared_parts_are_taken_once),
		cmocka_unit_test(test_seccomp_kill_by_default_and_bad_mode_refused),
		cmocka_unit_test(test_names_and_version),
		cmocka_unit_test(test_agent_handle_refuses_long_paths_and_bad_exec),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
