/*
 * Unit tests of api/kilnd/core/port_spec.c: the body of POST
 * /v1/sandboxes/{id}/ports (docs/api.md, "Ports"), validated into a port
 * mapping.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/core/port_spec.h"
#include "tests/unit/json_load.h"

static enum api_code port_code(const char *text, struct port_spec *s)
{
	json_t *j = J(text);
	struct api_err e = { 0 };
	int r = port_spec_parse(j, s, &e);

	/* guest_address borrows from the body: keep a static copy. */
	if (r == 0 && s->guest_address)
		s->guest_address = strcmp(s->guest_address, "::1") == 0 ? "::1" : "127.0.0.1";
	json_decref(j);
	return r ? e.code : API_OK;
}

static void test_port_body(void **state)
{
	struct port_spec s;

	(void)state;
	assert_int_equal(port_code("{\"guest_port\":8080}", &s), API_OK);
	assert_int_equal(s.guest_port, 8080);
	assert_int_equal(s.host_port, 0);
	/* A guest TCP port on the loopback is the default. */
	assert_int_equal(s.target, PORT_TARGET_TCP);
	assert_string_equal(s.guest_address, "127.0.0.1");
	assert_string_equal(port_target_name(s.target), "tcp");
	assert_int_equal(port_code("{\"guest_port\":80,\"host_port\":18080}", &s), API_OK);
	assert_int_equal(s.host_port, 18080);
	assert_int_equal(port_code("{\"host_port\":80}", &s), API_E_MISSING_FIELD);
	assert_int_equal(port_code("{\"guest_port\":0}", &s), API_E_BAD_FIELD);
	assert_int_equal(port_code("{\"guest_port\":65536}", &s), API_E_BAD_FIELD);
	assert_int_equal(port_code("{\"guest_port\":80,\"host_port\":70000}", &s), API_E_BAD_FIELD);
	assert_int_equal(port_code("{\"guest_port\":80.0}", &s), API_E_BAD_FIELD);
	assert_int_equal(port_code("{\"guest_port\":80,\"proto\":\"udp\"}", &s),
			 API_E_UNKNOWN_FIELD);

	assert_int_equal(port_code("{\"guest_port\":80,\"target\":\"tcp\",\"guest_address\":\"::1\"}",
				   &s),
			 API_OK);
	assert_int_equal(s.target, PORT_TARGET_TCP);
	assert_string_equal(s.guest_address, "::1");
	assert_int_equal(port_code("{\"guest_port\":80,\"guest_address\":\"10.0.2.15\"}", &s),
			 API_E_BAD_FIELD);
	assert_int_equal(port_code("{\"guest_port\":80,\"guest_address\":\"localhost\"}", &s),
			 API_E_BAD_FIELD);
	assert_int_equal(port_code("{\"guest_port\":80,\"guest_address\":1}", &s), API_E_BAD_FIELD);
	assert_int_equal(port_code("{\"guest_port\":80,\"target\":\"udp\"}", &s), API_E_BAD_FIELD);
	assert_int_equal(port_code("{\"guest_port\":80,\"target\":\"TCP\"}", &s), API_E_BAD_FIELD);
	assert_int_equal(port_code("{\"guest_port\":80,\"target\":null}", &s), API_E_BAD_FIELD);
	/* A bad target is reported before a bad address (the table's order). */
	assert_int_equal(port_code("{\"guest_port\":80,\"guest_address\":5,\"target\":\"x\"}", &s),
			 API_E_BAD_FIELD);

	assert_int_equal(port_code("{\"guest_port\":7070,\"target\":\"vsock\"}", &s), API_OK);
	assert_int_equal(s.target, PORT_TARGET_VSOCK);
	assert_null(s.guest_address);
	assert_string_equal(port_target_name(s.target), "vsock");
	assert_int_equal(
		port_code("{\"guest_port\":7070,\"target\":\"vsock\",\"guest_address\":\"127.0.0.1\"}",
			  &s),
		API_E_BAD_FIELD);
	/* The agent's own vsock port would bypass kilnd's peer check; TCP
	 * port 1024 in the guest is just a port. */
	assert_int_equal(port_code("{\"guest_port\":1024,\"target\":\"vsock\"}", &s),
			 API_E_BAD_FIELD);
	assert_int_equal(port_code("{\"guest_port\":1024}", &s), API_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_port_body),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
