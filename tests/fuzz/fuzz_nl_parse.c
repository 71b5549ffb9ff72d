/*
 * fuzz_nl_parse: rtnetlink dumps of a container's network namespace
 * (api/runtime/nl_parse.c), read as hostile bytes.
 *
 * Input: the bytes of one or more netlink messages, as recv() gives them.
 * Invariants: no crash or read past the input (ASan); a failure says
 * why; what is kept is within its bounds (links, addresses, routes), a
 * kept name is a C string of at most 15 bytes, a kept prefix fits its
 * family; the picked interface is not loopback and has a MAC, and every
 * address it gets is its own; what it becomes on kiln-vmm's and the
 * kernel's command lines (rt_plan_net) holds no quote, space or control
 * byte that would add an option or a parameter.
 */
#include <errno.h>
#include <sys/socket.h>

#include "api/runtime/nl_parse.h"
#include "api/runtime/rt_plan.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct nl_view v;
	struct nl_iface f;
	struct err e = { { 0 } };
	int r;

	memset(&v, 0, sizeof(v));
	r = nl_parse_dump(data, size, &v, &e);
	FUZZ_ASSERT(r == 0 || e.msg[0]);
	FUZZ_ASSERT(v.nlinks <= NL_LINKS_MAX && v.naddrs <= NL_ADDRS_MAX &&
		    v.nroutes <= NL_ROUTES_MAX);
	for (size_t i = 0; i < v.nlinks; i++)
		FUZZ_ASSERT(memchr(v.links[i].name, '\0', NL_IFNAME_MAX));
	for (size_t i = 0; i < v.naddrs; i++) {
		const struct nl_addr *a = &v.addrs[i].a;

		FUZZ_ASSERT((a->family == AF_INET && a->prefix <= 32) ||
			    (a->family == AF_INET6 && a->prefix <= 128));
	}
	if (r == 0 && nl_pick_iface(&v, &f, &e) == 0) {
		FUZZ_ASSERT(!f.link.loopback && f.link.has_mac && f.naddrs <= NL_ADDRS_MAX);
		for (size_t i = 0; i < f.naddrs; i++) {
			bool own = false;

			for (size_t k = 0; k < v.naddrs; k++)
				own |= v.addrs[k].index == f.link.index &&
					!memcmp(&v.addrs[k].a, &f.addrs[i], sizeof(f.addrs[i]));
			FUZZ_ASSERT(own);
		}
		static struct rt_plan plan;
		char net[RT_NET_OPT_MAX];

		memset(&plan, 0, sizeof(plan));
		if (rt_plan_net(&f, "kt0", plan.cmdline, sizeof(plan.cmdline), net, &e) == 0) {
			FUZZ_ASSERT(!strpbrk(net, " \"'\n\t") && !strpbrk(plan.cmdline, "\"'\n\t"));
			FUZZ_ASSERT(!strncmp(net, "tap=kt0,mac=", 12));
		}
	}
	return 0;
}
