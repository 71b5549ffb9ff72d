/*
 * Unit tests of api/kilnd/supervision/vmm_output.c: what a finished
 * kiln-vmm left behind, read back for the sandbox's last_exit
 * (docs/api.md): the last console lines, its last error line, and the boot
 * timeline it printed with --boot-timeline=json.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/supervision/vmm_output.h"
#include "tests/unit/bytes.h"

static void test_vmm_output(void **state)
{
	const char *console =
		"partial line\r\nkernel: x\r\n\x1b[1mbold\x1b[0m\r\n\r\nbad \xff byte\r\nlast";
	const char *err =
		"kiln-vmm: something early\n"
		"{\"unit\":\"ms\",\"milestones\":[{\"name\":\"vm_ready\",\"ms\":1.5}],\"exit\":{\"reason\":\"triple_fault\",\"status\":4}}\n"
		"kiln-vmm: guest triple fault at rip 0x0\n";
	json_t *t, *m;

	(void)state;
	t = vmm_output_tail(U(console), strlen(console), false, 3, 512);
	assert_int_equal(json_array_size(t), 3);
	assert_string_equal(json_string_value(json_array_get(t, 0)), "[1mbold[0m");
	assert_string_equal(json_string_value(json_array_get(t, 1)), "bad \xef\xbf\xbd byte");
	assert_string_equal(json_string_value(json_array_get(t, 2)), "last");
	json_decref(t);
	/* Not from the start: the first, partial line is dropped. */
	t = vmm_output_tail(U(console), strlen(console), false, 100, 512);
	assert_int_equal(json_array_size(t), 4);
	assert_string_equal(json_string_value(json_array_get(t, 0)), "kernel: x");
	json_decref(t);
	t = vmm_output_tail(U(console), strlen(console), true, 100, 4);
	assert_int_equal(json_array_size(t), 5);
	assert_string_equal(json_string_value(json_array_get(t, 0)), "part");
	json_decref(t);
	t = vmm_output_tail(U(""), 0, true, 5, 10);
	assert_int_equal(json_array_size(t), 0);
	json_decref(t);

	m = vmm_output_message(U(err), strlen(err));
	assert_string_equal(json_string_value(m), "kiln-vmm: guest triple fault at rip 0x0");
	json_decref(m);
	assert_null(vmm_output_message(U("no messages\n"), 12));
	t = vmm_output_timeline(U(err), strlen(err));
	assert_non_null(t);
	assert_string_equal(json_string_value(
				    json_object_get(json_object_get(t, "exit"), "reason")),
			    "triple_fault");
	json_decref(t);
	assert_null(vmm_output_timeline(U("{\"unit\":\"ms\",\"milestones\":[oops\n"), 31));
	assert_null(vmm_output_timeline(U("{\"unit\":\"ms\",\"milestones\":7}\n"), 29));
}

/* The denied-flow log: only kiln-vmm's "firewall: " lines, prefix cut,
 * the last N, oldest first; a line that only starts like one is not one. */
static void test_vmm_output_prefixed(void **state)
{
	const char *log =
		"kiln-vmm: firewall: egress drop_private tcp 10.0.2.15:40000 -> 10.77.2.10:8080\n"
		"kiln-vmm: virtio-net: something else\n"
		"kiln-vmm: firewall: egress drop_default udp 10.0.2.15:5353 -> 203.0.113.9:53\n"
		"kiln-vmm: firewall:x\n"
		"kiln-vmm: firewall: egress drop_reserved tcp 10.0.2.15:40002 -> 10.0.2.2:80 (3 more not logged)\n";
	json_t *t;

	(void)state;
	t = vmm_output_tail_prefixed(U(log), strlen(log), true, "kiln-vmm: firewall: ", 100, 512);
	assert_int_equal(json_array_size(t), 3);
	assert_string_equal(json_string_value(json_array_get(t, 0)),
			    "egress drop_private tcp 10.0.2.15:40000 -> 10.77.2.10:8080");
	assert_string_equal(
		json_string_value(json_array_get(t, 2)),
		"egress drop_reserved tcp 10.0.2.15:40002 -> 10.0.2.2:80 (3 more not logged)");
	json_decref(t);
	t = vmm_output_tail_prefixed(U(log), strlen(log), true, "kiln-vmm: firewall: ", 1, 512);
	assert_int_equal(json_array_size(t), 1);
	assert_non_null(strstr(json_string_value(json_array_get(t, 0)), "drop_reserved"));
	json_decref(t);
	/* Not from the start of the file: the first (partial) line is not read. */
	t = vmm_output_tail_prefixed(U(log), strlen(log), false, "kiln-vmm: firewall: ", 100, 512);
	assert_int_equal(json_array_size(t), 2);
	json_decref(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vmm_output),
		cmocka_unit_test(test_vmm_output_prefixed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
