/*
 * net_state: virtio-net's saved device state, encoded and decoded (the
 * snapshot's bytes are hostile: a snapshot file can be edited).
 *
 * Version 3 (written), versions 1 and 2 (still read):
 *
 *   0 version | 1 MAC[6] | 7 held (0/1) | 8 head (le16) | 10 count (le32) |
 *   14 count x { family (4/6), guest[16], remote[16], gport (be16), rport (be16) }
 *
 * Version 1 ends after the MAC, version 2 after the head. `held`: a
 * transmit chain was held (for tokens or backend room) at `head`. The
 * flows: the guest's TCP flows that carried data when the snapshot was
 * taken (net_filter_tcp_flows()), each TCP over IPv4 or IPv6 with both
 * ports set, at most NET_STATE_FLOWS_MAX.
 *
 * Contract: pure; decode reads exactly buf[0..len) and refuses anything
 * else than one of the three layouts whole (-EINVAL), and a MAC that is
 * multicast or all zero (the restored filter holds the guest to it).
 */
#ifndef KILN_NET_STATE_H
#define KILN_NET_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "devices/net/conntrack.h"

#define NET_STATE_FLOWS_MAX 65536u

struct net_state {
	uint8_t version; /* decode: 1, 2 or 3; encode writes 3 */
	uint8_t mac[6];
	bool held;
	uint16_t head;
	size_t nflows;
	struct conntrack_key *flows; /* decode: malloc'd, NULL when none; the caller frees */
};

/* The bytes version 3 takes with nflows flows. */
size_t net_state_size(size_t nflows);

/* s into buf: its length, or 0 when len is too small or s has too many flows. */
size_t net_state_encode(const struct net_state *s, uint8_t *buf, size_t len);

/* buf into *out: 0, -EINVAL (not a whole state of a known version), -ENOMEM. */
int net_state_decode(const uint8_t *buf, size_t len, struct net_state *out);

#endif
