/*
 * libkiln's configuration and the checks that need no KVM: device specs
 * are refused with kiln-vmm's messages and leave the config as it was,
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
#include <signal.h>
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

static void test_devices_use_kiln_vmm_syntax_and_messages(void **state)
{
	kiln_vm_config *c = kiln_vm_config_new();

	(void)state;
	assert_int_equal(kiln_vm_config_add_device(c, "disk", "/img,overlay=/ovl,serial=abc"), 0);
	assert_int_equal(c->c.ndisk, 1);
	assert_string_equal(c->c.disk[0].overlay, "/ovl");
	assert_int_equal(kiln_vm_config_add_device(c, "disk", "/img,bogus"), -EINVAL);
	assert_non_null(strstr(kiln_vm_config_errmsg(c), "--disk"));
	assert_int_equal(c->c.ndisk, 1);
	/* size=: an overlay's virtual size in MiB, 1 MiB .. 1 TiB, only with overlay=. */
	assert_int_equal(kiln_vm_config_add_device(c, "disk", "/img,overlay=/o2,size=4096"), 0);
	assert_int_equal(c->c.ndisk, 2);
	assert_true(c->c.disk[1].size == 4096ull << 20);
	assert_true(c->c.disk[0].size == 0);
	assert_int_equal(kiln_vm_config_add_device(c, "disk", "/img,size=64"), -EINVAL);
	assert_string_equal(kiln_vm_config_errmsg(c),
			    "--disk /img: size= is an overlay's virtual size: give overlay=PATH too (a raw image has its file's size)");
	assert_int_equal(kiln_vm_config_add_device(c, "disk", "/img,overlay=/o3,size=0"), -EINVAL);
	assert_string_equal(kiln_vm_config_errmsg(c), "--disk /img: size '0' must be a whole number of MiB from 1 to 1048576");
	assert_int_equal(kiln_vm_config_add_device(c, "disk", "/img,overlay=/o3,size=1048577"), -EINVAL);
	assert_int_equal(kiln_vm_config_add_device(c, "disk", "/img,overlay=/o3,size=-1"), -EINVAL);
	assert_int_equal(kiln_vm_config_add_device(c, "disk", "/img,overlay=/o3,size=18446744073709551616"), -EINVAL);
	assert_int_equal(kiln_vm_config_add_device(c, "disk", "/img,overlay=/o3,size=4k"), -EINVAL);
	assert_int_equal(c->c.ndisk, 2);
	assert_int_equal(kiln_vm_config_add_device(c, "net", "tap=kt0,mac=01:00:00:00:00:01"), -EINVAL);
	assert_non_null(strstr(kiln_vm_config_errmsg(c), "not a unicast MAC"));
	assert_int_equal(c->c.nnet, 0);
	assert_int_equal(kiln_vm_config_add_device(c, "vsock", "/tmp/v.sock,cid=2"), -EINVAL);
	assert_null(c->c.vsock.uds);
	assert_int_equal(kiln_vm_config_add_device(c, "vsock", "/tmp/v.sock,cid=7"), 0);
	assert_int_equal(kiln_vm_config_add_device(c, "vsock", "/tmp/w.sock"), -EEXIST);
	assert_string_equal(kiln_vm_config_errmsg(c), "--vsock: given twice");
	assert_int_equal(kiln_vm_config_add_device(c, "floppy", "/a"), -EINVAL);
	assert_non_null(strstr(kiln_vm_config_errmsg(c), "unknown kind 'floppy'"));
	for (int i = 2; i < 8; i++)
		assert_int_equal(kiln_vm_config_add_disk(c, "/img", KILN_DISK_READ_ONLY, NULL), 0);
	assert_int_equal(kiln_vm_config_add_disk(c, "/img", 0, NULL), -E2BIG);
	assert_string_equal(kiln_vm_config_errmsg(c), "--disk: at most 8 disks");
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
	assert_int_equal(kiln_vm_config_set_vsock(c, "/v", 0), 0);
	assert_int_equal(c->c.vsock.cid, 3);
	assert_int_equal(kiln_vm_config_set_firewall(c, "{\"allow\":[{\"cidr\":\"10.0.0.1/8\"}]}", 33), -EINVAL);
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
	assert_int_equal(kiln_vm_config_add_device(c, "net", "tap=kt0"), 0);
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
	assert_string_equal(kiln_agent_errcode(a), "host_error");
	/* Nothing listens there: the connection fails, not the agent. */
	assert_true(kiln_agent_wait_ready(a, 50) < 0);
	assert_true(strcmp(kiln_agent_errcode(a), "unreachable") == 0 || strcmp(kiln_agent_errcode(a), "timeout") == 0);
	kiln_agent_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_and_setters_copy),
		cmocka_unit_test(test_devices_use_kiln_vmm_syntax_and_messages),
		cmocka_unit_test(test_vsock_and_firewall_checked_at_the_setter),
		cmocka_unit_test(test_create_refuses_a_kick_signal_without_handler),
		cmocka_unit_test(test_fork_refuses_tap_and_firewall_needs_a_net),
		cmocka_unit_test(test_seccomp_kill_by_default_and_bad_mode_refused),
		cmocka_unit_test(test_names_and_version),
		cmocka_unit_test(test_agent_handle_refuses_long_paths_and_bad_exec),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
