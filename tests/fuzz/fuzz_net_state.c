/*
 * fuzz_net_state: virtio-net's saved state (devices/net/net_state.c), the
 * bytes a snapshot file hands the restored device.
 *
 * Input: the saved state, as it is.
 * Invariants: decode accepts only whole states of versions 1-3; what it
 * accepts has held 0 or 1, at most NET_STATE_FLOWS_MAX flows, each TCP
 * over IPv4 or IPv6 with both ports; a version 3 state encodes back to
 * exactly its bytes.
 */
#include <errno.h>

#include "devices/net/net_state.h"
#include "devices/net/pkt_parse.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct net_state s;
	uint8_t *again;
	int r = net_state_decode(data, size, &s);

	FUZZ_ASSERT(r == 0 || r == -EINVAL || r == -ENOMEM);
	if (r < 0)
		return 0;
	FUZZ_ASSERT(s.version >= 1 && s.version <= 3);
	FUZZ_ASSERT(!(s.mac[0] & 1) && memcmp(s.mac, (const uint8_t[6]){ 0 }, 6));
	FUZZ_ASSERT(s.nflows <= NET_STATE_FLOWS_MAX && (s.nflows == 0) == (s.flows == NULL));
	for (size_t i = 0; i < s.nflows; i++) {
		FUZZ_ASSERT(s.flows[i].proto == PKT_PROTO_TCP && s.flows[i].gport &&
			    s.flows[i].rport);
		FUZZ_ASSERT(s.flows[i].family == 4 || s.flows[i].family == 6);
	}
	if (s.version == 3) {
		FUZZ_ASSERT(size == net_state_size(s.nflows));
		again = malloc(size);
		if (again) {
			FUZZ_ASSERT(net_state_encode(&s, again, size) == size);
			FUZZ_ASSERT(!memcmp(again, data, size));
			free(again);
		}
	}
	free(s.flows);
	return 0;
}
