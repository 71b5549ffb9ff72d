/*
 * fuzz_net_rules: the firewall rule-set language (lib/netrules/net_rules.c,
 * net_addr.c): any text PUT /firewall or kiln-vmm --net rules= may carry.
 *
 * Input: the JSON text.
 * Invariants: a refusal has an error code and a message; an accepted set
 * respects its limits, prints (net_rules_to_json) to a set that parses
 * again and prints the same (what GET returns, PUT takes back), and every
 * decision for a few destinations names a rule that exists.
 */
#include <errno.h>

#include "lib/netrules/net_rules.h"
#include "fuzz.h"

static const char *const dsts[] = { "93.184.216.34",   "10.0.2.3", "192.168.7.1", "169.254.169.254",
				    "2606:4700::1111", "fd00::3",  "::1" };

static void check_ref(const struct net_rules *r, struct net_rule_ref ref)
{
	switch (ref.list) {
	case NET_REF_ALLOW:
		FUZZ_ASSERT(ref.index < r->n_allow);
		break;
	case NET_REF_DENY:
		FUZZ_ASSERT(ref.index < r->n_deny);
		break;
	default:
		FUZZ_ASSERT(ref.list <= NET_REF_INFRA);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct net_rules *r = NULL, *r2 = NULL;
	struct net_rules_err e = { 0 };
	char *s1, *s2;
	json_t *j, *j2;
	int rc;

	rc = net_rules_parse_text((const char *)data, size, &r, &e);
	if (rc < 0) {
		FUZZ_ASSERT(rc == -EINVAL || rc == -ENOMEM);
		FUZZ_ASSERT(e.code >= NET_RULES_E_BAD_JSON && e.code <= NET_RULES_E_NOMEM);
		FUZZ_ASSERT(e.msg[0] && memchr(e.msg, 0, sizeof(e.msg)));
		return 0;
	}
	FUZZ_ASSERT(rc == 0 && r);
	FUZZ_ASSERT(r->n_allow <= NET_RULES_MAX && r->n_deny <= NET_RULES_MAX &&
		    r->n_dns <= NET_DNS_MAX);

	j = net_rules_to_json(r);
	FUZZ_ASSERT(j);
	s1 = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
	FUZZ_ASSERT(s1);
	if (net_rules_parse(j, &r2, &e) != 0) {
		fprintf(stderr, "printed rules refused: %s\n%s\n", e.msg, s1);
		FUZZ_ASSERT(!"printed rules parse again");
	}
	j2 = net_rules_to_json(r2);
	s2 = json_dumps(j2, JSON_SORT_KEYS | JSON_COMPACT);
	FUZZ_ASSERT(s2 && strcmp(s1, s2) == 0);

	for (size_t i = 0; i < sizeof(dsts) / sizeof(dsts[0]); i++) {
		struct net_addr a;
		const char *names[] = { "api.github.com", "x.example.com" };
		struct net_flow_dst d = {
			.addr = &a, .proto = 6, .port = 443, .names = names, .n_names = 2
		};
		struct net_rule_ref ref;
		enum net_decision dec;

		FUZZ_ASSERT(net_addr_parse(dsts[i], &a) == 0);
		dec = net_rules_decide(r, &d, &ref);
		FUZZ_ASSERT(dec <= NET_DENY_DEFAULT);
		check_ref(r, ref);
		if (dec == NET_ALLOW)
			FUZZ_ASSERT(ref.list != NET_REF_NONE && ref.list != NET_REF_DENY);
	}
	free(s1);
	free(s2);
	json_decref(j);
	json_decref(j2);
	net_rules_free(r);
	net_rules_free(r2);
	return 0;
}
