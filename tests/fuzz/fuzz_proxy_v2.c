/*
 * fuzz_proxy_v2: the PROXY protocol v2 header that opens a steered flow
 * (lib/netrules/proxy_v2.c), as a compromised kiln-vmm could write it to
 * the egress proxy.
 *
 * Input: the stream's first bytes.
 * Invariants: a need for more is larger than what was given and at most
 * PROXY_V2_MAX; a refusal says why; an accepted header is at most the
 * input and PROXY_V2_MAX, has ports, a TCP family and an authority that
 * is "" or a host name, other names (KILN_NAMES) only with an authority
 * and at most PROXY_V2_NAMES_MAX - 1 of them, each a name it answers to, and encodes to a header that decodes to the same
 * fields (kiln's own TLVs only: others are dropped).
 */
#include <errno.h>
#include <sys/socket.h>

#include "lib/netrules/proxy_v2.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t again[PROXY_V2_MAX];
	struct proxy_v2 h, g;
	struct err e = { { 0 } };
	size_t need = 0, need2;
	int r = proxy_v2_decode(data, size, &h, &need, &e), n;

	if (r == 0) {
		FUZZ_ASSERT(need > size && need <= PROXY_V2_MAX);
		return 0;
	}
	if (r < 0) {
		FUZZ_ASSERT(e.msg[0]);
		return 0;
	}
	FUZZ_ASSERT((size_t)r <= size && r <= PROXY_V2_MAX);
	FUZZ_ASSERT(h.family == AF_INET || h.family == AF_INET6);
	FUZZ_ASSERT(h.sport && h.dport);
	FUZZ_ASSERT(strlen(h.authority) <= PROXY_V2_AUTHORITY_MAX);
	FUZZ_ASSERT(h.n_also < PROXY_V2_NAMES_MAX && (!h.n_also || h.authority[0]));
	for (size_t i = 0; i < h.n_also; i++)
		FUZZ_ASSERT(h.also[i][0] && proxy_v2_names(&h, h.also[i]));
	n = proxy_v2_encode(&h, again, sizeof(again));
	FUZZ_ASSERT(n > 0 && n <= r);
	FUZZ_ASSERT(proxy_v2_decode(again, (size_t)n, &g, &need2, &e) == n);
	FUZZ_ASSERT(memcmp(&g, &h, sizeof(g)) == 0);
	return 0;
}
