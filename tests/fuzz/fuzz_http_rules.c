/*
 * fuzz_http_rules: the HTTP egress rules' language
 * (lib/netrules/http_rules.c): any text the firewall's planned `http`
 * field may carry (issue 37).
 *
 * Input: the JSON text.
 * Invariants: a refusal has an error code and a message; accepted rules
 * respect their limits, their paths are in normal form already (normalizing
 * again changes nothing), they print (http_rules_to_json) to rules that
 * parse again and print the same; every decision for a few connections
 * and requests names a rule that exists and fits it (allow or deny by the
 * rule's action; "need the head" only without one and from a rule that
 * limits methods or paths and intercepts), or none for the default deny.
 */
#include <errno.h>

#include "lib/netrules/http_rules.h"
#include "fuzz.h"

static const struct http_flow flows[] = {
	{ "api.github.com", 443, NULL, NULL },
	{ "api.github.com", 443, "GET", "/repos/a/b?x=1" },
	{ "x.example.com", 80, "POST", "/admin/../x" },
	{ "x.example.com", 8080, "DELETE", "/a%2Fb" },
	{ "example.com", 443, "GET", "/" },
	{ "a.test", 443, "PUT", "/~me/%41" },
};

static void check_decision(const struct http_rules *r, const struct http_flow *f)
{
	size_t index;
	enum http_decision d = http_rules_decide(r, f, &index);
	const struct http_rule *u = index < r->n ? &r->rules[index] : NULL;

	FUZZ_ASSERT(index <= r->n);
	switch (d) {
	case HTTP_ALLOW:
	case HTTP_DENY_RULE:
		FUZZ_ASSERT(u && u->deny == (d == HTTP_DENY_RULE));
		break;
	case HTTP_NEED_HEAD:
	case HTTP_DENY_UNVERIFIABLE:
		FUZZ_ASSERT(u && !f->method && (u->n_methods || u->n_paths));
		FUZZ_ASSERT(u->intercept == (d == HTTP_NEED_HEAD));
		break;
	case HTTP_DENY_BAD_PATH:
		FUZZ_ASSERT(u && u->n_paths && f->method);
		break;
	case HTTP_DENY_DEFAULT:
		FUZZ_ASSERT(!u);
		break;
	default:
		FUZZ_ASSERT(!"a decision");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_rules *r = NULL, *r2 = NULL;
	struct net_rules_err e = { 0 };
	char *s1, *s2;
	json_t *j, *j2;
	int rc;

	rc = http_rules_parse_text((const char *)data, size, &r, &e);
	if (rc < 0) {
		FUZZ_ASSERT(rc == -EINVAL || rc == -ENOMEM);
		FUZZ_ASSERT(e.code >= NET_RULES_E_BAD_JSON && e.code <= NET_RULES_E_NOMEM);
		FUZZ_ASSERT(e.msg[0] && memchr(e.msg, 0, sizeof(e.msg)));
		FUZZ_ASSERT(!r);
		return 0;
	}
	FUZZ_ASSERT(rc == 0 && r && r->n <= HTTP_RULES_MAX);
	for (size_t i = 0; i < r->n; i++) {
		const struct http_rule *u = &r->rules[i];

		FUZZ_ASSERT(u->n_methods <= HTTP_LIST_MAX && u->n_paths <= HTTP_LIST_MAX &&
			    u->n_ports <= HTTP_LIST_MAX && u->n_inject <= HTTP_LIST_MAX);
		FUZZ_ASSERT(!u->n_inject || (u->intercept && !u->deny));
		FUZZ_ASSERT(u->deny ? u->status >= 400 && u->status <= 599 : u->status == 0);
		for (size_t k = 0; k < u->n_paths; k++) {
			char again[HTTP_PATH_MAX + 1];
			const char *why;

			FUZZ_ASSERT(http_path_norm(u->paths[k], strlen(u->paths[k]), again,
						   sizeof(again), &why) == 0);
			FUZZ_ASSERT(!strcmp(again, u->paths[k]));
		}
	}

	j = http_rules_to_json(r);
	FUZZ_ASSERT(j);
	s1 = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
	FUZZ_ASSERT(s1);
	if (http_rules_parse(j, &r2, &e) != 0) {
		fprintf(stderr, "printed rules refused: %s\n%s\n", e.msg, s1);
		FUZZ_ASSERT(!"printed rules parse again");
	}
	j2 = http_rules_to_json(r2);
	s2 = json_dumps(j2, JSON_SORT_KEYS | JSON_COMPACT);
	FUZZ_ASSERT(s2 && strcmp(s1, s2) == 0);

	for (size_t i = 0; i < sizeof(flows) / sizeof(flows[0]); i++)
		check_decision(r, &flows[i]);
	free(s1);
	free(s2);
	json_decref(j);
	json_decref(j2);
	http_rules_free(r);
	http_rules_free(r2);
	return 0;
}
