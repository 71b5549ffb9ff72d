/*
 * tcp_reset: segments made up for the guest (tcp_reset.h).
 */
#include "devices/net/tcp_reset.h"

#include <string.h>

#include "lib/netrules/net_addr.h"
#include "devices/net/tcp_seg.h"

bool tcp_reset_seg(const struct pkt *p, struct tcp_seg *s)
{
	const uint8_t *th = p->l4;
	uint32_t seq, len;

	if ((p->l3 != PKT_L3_IP4 && p->l3 != PKT_L3_IP6) || p->proto != PKT_PROTO_TCP ||
	    !(p->flags & PKT_F_L4) || (p->flags & (PKT_F_FRAG | PKT_F_FRAG_LATER)) ||
	    (p->tcp_flags & PKT_TCP_RST) || !th || p->l4_len < 20)
		return false;
	memset(s, 0, sizeof(*s));
	s->family = p->src.family;
	memcpy(s->src_mac, p->dst_mac, 6);
	memcpy(s->dst_mac, p->src_mac, 6);
	memcpy(s->src, p->dst.b, 16);
	memcpy(s->dst, p->src.b, 16);
	s->sport = p->dport;
	s->dport = p->sport;
	if (p->tcp_flags & PKT_TCP_ACK) {
		s->seq = tcp_seg_get32(th + 8);
		s->flags = PKT_TCP_RST;
	} else {
		/* SEG.LEN counts SYN and FIN as one each. */
		seq = tcp_seg_get32(th + 4);
		len = (uint32_t)p->payload_len + !!(p->tcp_flags & PKT_TCP_SYN) +
			!!(p->tcp_flags & PKT_TCP_FIN);
		s->ack = seq + len;
		s->flags = PKT_TCP_RST | PKT_TCP_ACK;
	}
	return true;
}

size_t tcp_reset_reply(const struct pkt *p, uint8_t *out, size_t cap)
{
	struct tcp_seg s;

	return tcp_reset_seg(p, &s) ? tcp_seg_build(&s, out, cap) : 0;
}

size_t tcp_reset_probe(const struct conntrack_key *k, unsigned half, const uint8_t guest_mac[6],
		       const uint8_t src_mac[6], uint8_t *out, size_t cap)
{
	struct tcp_seg s;

	if (k->proto != PKT_PROTO_TCP || (k->family != NET_AF4 && k->family != NET_AF6) ||
	    !k->gport || !k->rport)
		return 0;
	memset(&s, 0, sizeof(s));
	s.family = k->family;
	memcpy(s.src_mac, src_mac, 6);
	memcpy(s.dst_mac, guest_mac, 6);
	memcpy(s.src, k->remote, 16);
	memcpy(s.dst, k->guest, 16);
	s.sport = k->rport;
	s.dport = k->gport;
	s.seq = half ? 0x80000000u : 0;
	s.flags = PKT_TCP_ACK;
	return tcp_seg_build(&s, out, cap);
}
