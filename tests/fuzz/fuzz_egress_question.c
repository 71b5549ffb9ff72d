/*
 * fuzz_egress_question: the questions kiln-egress builds from a hostile
 * guest's request head (api/egress/egress_question.c) after
 * egress_flow's checks, against a small rule set, one rule injecting.
 *
 * Input: a selector byte, then the guest's first bytes behind a fixed
 * PROXY v2 header: destination port 443 (bit 0) or 80; bit 1: a request
 * on a decrypted flow (egress_flow_request) rather than a flow's first
 * bytes; bit 2: asked with the injecting rule's names (as on its
 * decrypted flows); bit 3: the destination's name (AUTHORITY, and the
 * decrypted flow's) is api.test, else allowed.test.
 * Invariants: every flow the rules decided (ruled) makes a question, and
 * kilnd's cleaning takes it unchanged (a question it refused would be
 * lost: the flow would wait out its deadline); no header the rule
 * injects is listed when the rules allowed the request (a denied one
 * gets no secret: all its fields are listed); a request question lists at most 100 fields and
 * its path whole.
 */
#include <errno.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "api/egress/egress_http.h"
#include "api/egress/egress_question.h"
#include "fuzz.h"

static const char RULES[] =
	"[{\"host\":\"allowed.test\"},"
	"{\"host\":\"api.test\",\"methods\":[\"GET\"],\"paths\":[\"/repos/\"],"
	"\"intercept\":true,\"inject\":[{\"header\":\"authorization\",\"secret\":\"tok\","
	"\"format\":\"Bearer {}\"},{\"header\":\"x-api-key\",\"secret\":\"key\",\"format\":\"{}\"}]},"
	"{\"host\":\"denied.test\",\"action\":\"deny\",\"status\":451}]";

static void check(json_t *q, const struct http_rule *u, const struct egress_flow *f)
{
	struct err e = { { 0 } };
	json_t *out = NULL, *fields, *x;
	size_t i;

	FUZZ_ASSERT(q);
	if (egress_decision_question_clean(q, &out, &e)) {
		fprintf(stderr, "kilnd refuses: %s\n", e.msg);
		FUZZ_ASSERT(!"a question kilnd refuses");
	}
	FUZZ_ASSERT(json_equal(q, out));
	json_decref(out);
	fields = json_object_get(q, "headers");
	FUZZ_ASSERT(json_array_size(fields) <= EGRESS_DECISION_HEADERS_MAX);
	FUZZ_ASSERT(!fields || json_string_length(json_object_get(q, "path")) == strlen(f->path));
	json_array_foreach(fields, i, x)
	{
		const char *name = json_string_value(json_array_get(x, 0));

		for (size_t k = 0; u && f->status == EGRESS_ALLOW && k < u->n_inject; k++)
			FUZZ_ASSERT(
				!egress_http_same_field(name, strlen(name), u->inject[k].header));
	}
	json_decref(q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct http_rules *rules;
	struct fuzz_in in = { data, size };
	uint8_t sel = take8(&in);
	struct proxy_v2 h = { .family = AF_INET, .sport = 40000 };
	const struct http_rule *u;
	struct egress_flow f;

	if (!rules) {
		struct net_rules_err re;

		FUZZ_ASSERT(http_rules_parse_text(RULES, sizeof(RULES) - 1, &rules, &re) == 0);
	}
	h.dport = sel & 1 ? 443 : 80;
	strcpy(h.authority, sel & 8 ? "api.test" : "allowed.test");
	h.src[0] = 10, h.src[3] = 15, h.dst[0] = 10, h.dst[3] = 2;
	if (sel & 2)
		egress_flow_request(h.authority, h.dport, in.p, in.n, rules, &f);
	else
		egress_flow_decide(&h, in.p, in.n, rules, &f);
	if (!f.ruled || f.status == EGRESS_NEED_MORE)
		return 0;
	u = sel & 4 ? &rules->rules[1] : f.rule < rules->n ? &rules->rules[f.rule] : NULL;
	if (f.proto == EGRESS_PROTO_TLS)
		check(egress_question_connect(1, &h, &f), u, &f);
	else if (f.proto == EGRESS_PROTO_HTTP)
		check(egress_question_request(2, sel & 2 ? 1 : 0, &h,
					      sel & 2 ? h.authority : f.name, &f,
					      (const char *)in.p, u),
		      u, &f);
	return 0;
}
