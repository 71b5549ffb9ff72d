/*
 * net_state: virtio-net's saved device state (net_state.h).
 */
#include "devices/net/net_state.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "devices/net/pkt_parse.h"
#include "lib/netrules/net_addr.h"

#define V1_LEN 7
#define V2_LEN 10
#define V3_HDR 14
#define FLOW_LEN 37

size_t net_state_size(size_t nflows)
{
	return V3_HDR + nflows * FLOW_LEN;
}

static void flow_put(uint8_t *b, const struct conntrack_key *k)
{
	b[0] = k->family;
	memcpy(b + 1, k->guest, 16);
	memcpy(b + 17, k->remote, 16);
	b[33] = (uint8_t)(k->gport >> 8);
	b[34] = (uint8_t)k->gport;
	b[35] = (uint8_t)(k->rport >> 8);
	b[36] = (uint8_t)k->rport;
}

/* 0, or -EINVAL when the flow is not TCP over IPv4/IPv6 with both ports. */
static int flow_get(const uint8_t *b, struct conntrack_key *k)
{
	memset(k, 0, sizeof(*k));
	k->family = b[0];
	k->proto = PKT_PROTO_TCP;
	memcpy(k->guest, b + 1, 16);
	memcpy(k->remote, b + 17, 16);
	k->gport = (uint16_t)(b[33] << 8 | b[34]);
	k->rport = (uint16_t)(b[35] << 8 | b[36]);
	return (k->family == NET_AF4 || k->family == NET_AF6) && k->gport && k->rport ? 0 : -EINVAL;
}

size_t net_state_encode(const struct net_state *s, uint8_t *buf, size_t len)
{
	if (s->nflows > NET_STATE_FLOWS_MAX || len < net_state_size(s->nflows))
		return 0;
	buf[0] = 3;
	memcpy(buf + 1, s->mac, 6);
	buf[7] = s->held;
	buf[8] = (uint8_t)s->head;
	buf[9] = (uint8_t)(s->head >> 8);
	for (int i = 0; i < 4; i++)
		buf[10 + i] = (uint8_t)(s->nflows >> (8 * i));
	for (size_t i = 0; i < s->nflows; i++)
		flow_put(buf + V3_HDR + i * FLOW_LEN, &s->flows[i]);
	return net_state_size(s->nflows);
}

int net_state_decode(const uint8_t *buf, size_t len, struct net_state *out)
{
	size_t count = 0;

	memset(out, 0, sizeof(*out));
	if (!len ||
	    !((buf[0] == 1 && len == V1_LEN) || (buf[0] == 2 && len == V2_LEN) ||
	      (buf[0] == 3 && len >= V3_HDR)))
		return -EINVAL;
	out->version = buf[0];
	memcpy(out->mac, buf + 1, 6);
	/* The filter holds the guest to this MAC: a unicast one, never zero. */
	if ((out->mac[0] & 1) || !memcmp(out->mac, (const uint8_t[6]){ 0 }, 6))
		return -EINVAL;
	if (buf[0] >= 2) {
		if (buf[7] > 1)
			return -EINVAL;
		out->held = buf[7];
		out->head = (uint16_t)(buf[8] | buf[9] << 8);
	}
	if (buf[0] < 3)
		return 0;
	count = (size_t)buf[10] | (size_t)buf[11] << 8 | (size_t)buf[12] << 16 |
		(size_t)buf[13] << 24;
	if (count > NET_STATE_FLOWS_MAX || len != net_state_size(count))
		return -EINVAL;
	if (!count)
		return 0;
	if (!(out->flows = malloc(count * sizeof(*out->flows))))
		return -ENOMEM;
	for (size_t i = 0; i < count; i++)
		if (flow_get(buf + V3_HDR + i * FLOW_LEN, &out->flows[i]) < 0) {
			free(out->flows);
			out->flows = NULL;
			return -EINVAL;
		}
	out->nflows = count;
	return 0;
}
