/*
 * fuzz_egress_flow: kiln-egress's decision on a steered flow
 * (api/egress/egress_flow.c) from the PROXY v2 header and the guest's
 * first bytes, both as a compromised kiln-vmm and a hostile guest could
 * write them, against a small fixed rule set.
 *
 * Input: a selector byte, then either (bit 0 set) the stream itself, a
 * PROXY v2 header then the first bytes, or (clear) the first bytes alone
 * behind a fixed header: destination port 443 (bit 1) or 80, AUTHORITY
 * "allowed.test" (bit 2) or none.
 * Invariants: a need for more is past what was given and at most
 * EGRESS_FIRST_MAX; a deny has a reason, a status of 400..599 and a 403
 * answer that fits 512 bytes; an allow names a DNS name that is no IP
 * literal, one of the header's names (AUTHORITY, KILN_NAMES) when it
 * has them, on the header's port, through a rule that is not a deny; an allowed request's bytes
 * start with its whole head, and its method is one a rule could name.
 * Selector bit 3: the bytes are a request on a decrypted flow
 * (egress_flow_request) to the AUTHORITY's name (or allowed.test): the
 * same invariants, every refusal answered (proto HTTP), an allowed head
 * ending in its empty line within the input, a chunked one with no
 * Content-Length body counted.
 */
#include <errno.h>
#include <stdbool.h>
#include <strings.h>
#include <sys/socket.h>

#include "api/egress/egress_flow.h"
#include "fuzz.h"

static const char RULES[] =
	"[{\"host\":\"allowed.test\"},{\"host\":\"*.wild.test\",\"ports\":[8080]},"
	"{\"host\":\"api.test\",\"methods\":[\"GET\"],\"paths\":[\"/repos/\"]},"
	"{\"host\":\"denied.test\",\"action\":\"deny\",\"status\":451},"
	"{\"host\":\"icpt.test\",\"intercept\":true}]";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct http_rules *rules;
	struct fuzz_in in = { data, size };
	uint8_t sel = take8(&in);
	struct proxy_v2 h = { .family = AF_INET, .sport = 40000 };
	struct egress_flow f;
	struct err e = { { 0 } };
	char answer[512], name[NET_HOST_MAX + 1];
	bool wild;

	if (!rules) {
		struct net_rules_err re;

		FUZZ_ASSERT(http_rules_parse_text(RULES, sizeof(RULES) - 1, &rules, &re) == 0);
	}
	if (sel & 1) {
		size_t need;
		int r = proxy_v2_decode(in.p, in.n, &h, &need, &e);

		if (r <= 0)
			return 0;
		in.p += r;
		in.n -= (size_t)r;
	} else {
		h.dport = sel & 2 ? 443 : 80;
		if (sel & 4)
			strcpy(h.authority, "allowed.test");
	}
	/* bit 3: a request head on a decrypted flow to the AUTHORITY's name */
	if (sel & 8)
		egress_flow_request(h.authority[0] ? h.authority : "allowed.test", h.dport, in.p,
				    in.n, rules, &f);
	else
		egress_flow_decide(&h, in.p, in.n, rules, &f);
	if ((sel & 8) && f.status == EGRESS_DENY)
		FUZZ_ASSERT(f.proto == EGRESS_PROTO_HTTP);
	if ((sel & 8) && f.status == EGRESS_ALLOW) {
		FUZZ_ASSERT(f.proto == EGRESS_PROTO_HTTP && !f.intercept);
		FUZZ_ASSERT(f.head_len >= 18 && f.head_len <= in.n && f.request_len >= f.head_len);
		FUZZ_ASSERT(!f.chunked || f.request_len == f.head_len);
		FUZZ_ASSERT(memcmp(in.p + f.head_len - 4, "\r\n\r\n", 4) == 0);
	}
	switch (f.status) {
	case EGRESS_NEED_MORE:
		FUZZ_ASSERT(f.need > in.n && f.need <= EGRESS_FIRST_MAX);
		break;
	case EGRESS_DENY:
		FUZZ_ASSERT(f.reason && f.reason[0]);
		FUZZ_ASSERT(f.status_code >= 400 && f.status_code <= 599);
		FUZZ_ASSERT(egress_flow_deny_response(&f, answer, sizeof(answer)) > 0);
		break;
	case EGRESS_ALLOW:
		FUZZ_ASSERT(f.reason && !f.reason[0]);
		FUZZ_ASSERT(f.proto == EGRESS_PROTO_TLS || f.proto == EGRESS_PROTO_HTTP);
		FUZZ_ASSERT(net_host_parse(f.name, name, &wild) == 0 && !wild);
		FUZZ_ASSERT(strcmp(name, f.name) == 0);
		/* a request: the SNI's name (the AUTHORITY here); a flow: one of the header's names */
		FUZZ_ASSERT(!h.authority[0] || strcasecmp(h.authority, f.name) == 0 ||
			    (!(sel & 8) && proxy_v2_names(&h, f.name)));
		FUZZ_ASSERT(f.port == h.dport);
		FUZZ_ASSERT(f.rule < rules->n && !rules->rules[f.rule].deny);
		if (f.proto == EGRESS_PROTO_HTTP)
			FUZZ_ASSERT(f.request_len >= 18 && in.n >= 18 && http_method_ok(f.method));
		break;
	}
	return 0;
}
