/*
 * fuzz_egress_decision: the decision stream's lines
 * (lib/netrules/egress_decision.c), read by kilnd from a client and from
 * kiln-egress, and by kiln-egress from kilnd: any of them may be hostile.
 *
 * Input: one line's bytes (as kilnd and kiln-egress read it: strict JSON).
 * Invariants: a refusal has a message; an accepted control line keeps its
 * bounds (an answer: id 1..2^53, status 400..599, reason and changes only
 * with their decision, at most 16 changes each of lower-case token names
 * kiln-egress does not own and values of visible ASCII, space and tab;
 * an attach: deadline_ms 10..60000) and made into JSON text again reads
 * back the same; a cleaned question is the line itself, of a question's
 * kind, and cleans again to the same.
 */
#include <errno.h>

#include "lib/base/http_token.h"
#include "lib/base/json.h"
#include "lib/base/json_text.h"
#include "lib/netrules/egress_decision.h"
#include "lib/netrules/http_rules.h"
#include "fuzz.h"

static void check_text(const char *s, size_t n, bool tab)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		FUZZ_ASSERT((c >= 0x20 && c <= 0x7e) || (tab && c == '\t'));
	}
}

static void check_name(const char *s)
{
	size_t n = strlen(s);

	FUZZ_ASSERT(n >= 1 && n <= EGRESS_DECISION_NAME_MAX && http_token(s, n));
	for (size_t i = 0; i < n; i++)
		FUZZ_ASSERT(!(s[i] >= 'A' && s[i] <= 'Z'));
	FUZZ_ASSERT(!http_header_owned(s));
}

static void check_answer(const struct egress_answer *a)
{
	FUZZ_ASSERT(a->id >= 1 && a->id <= (uint64_t)1 << 53);
	FUZZ_ASSERT(a->verdict == EGRESS_VERDICT_RULES || a->verdict == EGRESS_VERDICT_ALLOW ||
		    a->verdict == EGRESS_VERDICT_DENY);
	FUZZ_ASSERT(a->status >= 400 && a->status <= 599);
	FUZZ_ASSERT(strlen(a->reason) <= EGRESS_DECISION_REASON_MAX);
	check_text(a->reason, strlen(a->reason), false);
	if (a->verdict != EGRESS_VERDICT_DENY)
		FUZZ_ASSERT(a->status == 403 && !a->reason[0]);
	if (a->verdict != EGRESS_VERDICT_ALLOW)
		FUZZ_ASSERT(!a->n_set && !a->n_remove);
	FUZZ_ASSERT(a->n_set <= EGRESS_DECISION_FIELDS && a->n_remove <= EGRESS_DECISION_FIELDS);
	for (size_t i = 0; i < a->n_set; i++) {
		check_name(a->set[i].name);
		FUZZ_ASSERT(strlen(a->set[i].value) <= EGRESS_DECISION_VALUE_MAX);
		check_text(a->set[i].value, strlen(a->set[i].value), true);
	}
	for (size_t i = 0; i < a->n_remove; i++)
		check_name(a->remove[i]);
}

/* j as JSON text, read back as a control line: its kind, *a, *at. */
static void again(json_t *j, enum egress_control want, struct egress_answer *a,
		  struct egress_attach *at)
{
	struct err e = { { 0 } };
	enum egress_control kind;
	char *text;
	json_t *back;

	FUZZ_ASSERT(j);
	text = json_text(j, JSON_COMPACT);
	json_decref(j);
	FUZZ_ASSERT(text);
	back = json_strict_loads(text, NULL);
	free(text);
	FUZZ_ASSERT(back);
	FUZZ_ASSERT(egress_control_parse(back, &kind, a, at, &e) == 0);
	FUZZ_ASSERT(kind == want);
	json_decref(back);
}

static void check_control(const json_t *j)
{
	struct egress_answer *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	struct egress_attach at, at2;
	struct err e = { { 0 } };
	enum egress_control kind;

	FUZZ_ASSERT(a && b);
	if (egress_control_parse(j, &kind, a, &at, &e)) {
		FUZZ_ASSERT(e.msg[0]);
	} else if (kind == EGRESS_CONTROL_ANSWER) {
		check_answer(a);
		again(egress_answer_json(a), EGRESS_CONTROL_ANSWER, b, &at2);
		/* Both parses start from a zeroed answer. */
		FUZZ_ASSERT(!memcmp(a, b, sizeof(*a)));
	} else if (kind == EGRESS_CONTROL_ATTACH) {
		FUZZ_ASSERT(at.deadline_ms >= EGRESS_DECISION_DEADLINE_MIN &&
			    at.deadline_ms <= EGRESS_DECISION_DEADLINE_MAX);
		again(egress_attach_json(&at), EGRESS_CONTROL_ATTACH, b, &at2);
		FUZZ_ASSERT(at2.deadline_ms == at.deadline_ms &&
			    at2.on_timeout_rules == at.on_timeout_rules);
	} else {
		FUZZ_ASSERT(kind == EGRESS_CONTROL_DETACH);
	}
	free(a);
	free(b);
}

static void check_question(const json_t *j)
{
	struct err e = { { 0 } };
	json_t *out, *out2;
	const char *kind;
	int rc = egress_decision_question_clean(j, &out, &e);

	if (rc) {
		FUZZ_ASSERT(!out && e.msg[0]);
		return;
	}
	FUZZ_ASSERT(out && out != j && json_equal(out, j));
	kind = json_string_value(json_object_get(out, "kind"));
	FUZZ_ASSERT(kind && (!strcmp(kind, "connect") || !strcmp(kind, "request")));
	FUZZ_ASSERT(egress_decision_question_clean(out, &out2, &e) == 0);
	FUZZ_ASSERT(json_equal(out, out2));
	json_decref(out2);
	json_decref(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *j = json_strict_loadb((const char *)data, size, NULL);

	if (!j)
		return 0;
	check_control(j);
	check_question(j);
	json_decref(j);
	return 0;
}
