/* net_host_addrs: the host's addresses, each once. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/netrules/net_host_addrs.h"

static void test_add_dedups_and_caps(void **state)
{
	struct net_addr list[2], a, b, c;
	size_t n = 0;

	(void)state;
	net_addr_parse("203.0.113.5", &a);
	net_addr_parse("2001:db8::5", &b);
	net_addr_parse("203.0.113.6", &c);
	assert_int_equal(net_host_addrs_add(list, &n, 2, &a), 0);
	assert_int_equal(net_host_addrs_add(list, &n, 2, &a), 0);
	assert_int_equal(n, 1);
	assert_int_equal(net_host_addrs_add(list, &n, 2, &b), 0);
	assert_int_equal(net_host_addrs_add(list, &n, 2, &c), -ENOSPC);
	assert_int_equal(n, 2);
	assert_true(net_addr_equal(&list[1], &b));
}

/* Whatever this machine has: no address twice, each of a known family. */
static void test_this_host(void **state)
{
	struct net_addr *list;
	struct err e = { { 0 } };
	size_t n;

	(void)state;
	assert_int_equal(net_host_addrs(&list, &n, &e), 0);
	for (size_t i = 0; i < n; i++) {
		assert_true(list[i].family == NET_AF4 || list[i].family == NET_AF6);
		for (size_t j = i + 1; j < n; j++)
			assert_false(net_addr_equal(&list[i], &list[j]));
	}
	free(list);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_dedups_and_caps),
		cmocka_unit_test(test_this_host),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
