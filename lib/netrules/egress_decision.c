/* egress_decision: see egress_decision.h. */
#include "lib/netrules/egress_decision.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lib/base/http_token.h"
#include "lib/base/num_parse.h"
#include "lib/netrules/http_rules.h"
#include "lib/netrules/net_rules.h"

/* Fields a question's strings may not exceed (besides headers). */
#define Q_ADDR_MAX 64
#define Q_METHOD_MAX 32
#define Q_PATH_MAX 8192
#define Q_HEADER_NAME_MAX 256

/* s is n bytes of visible ASCII and space (and tab, when tab). */
static bool printable(const char *s, size_t n, bool tab)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c < 0x20 && !(tab && c == '\t')) || c > 0x7e)
			return false;
	}
	return true;
}

/* A field name an answer may change: a lower-case token, not owned. */
static const char *name_fault(const char *s, size_t n)
{
	if (n == 0 || n > EGRESS_DECISION_NAME_MAX || !http_token(s, n))
		return "is not a header name (a token of 1..64 bytes)";
	for (size_t i = 0; i < n; i++)
		if (s[i] >= 'A' && s[i] <= 'Z')
			return "is not lower case";
	if (http_header_owned(s))
		return "is a hop-by-hop or framing field kiln-egress owns";
	return NULL;
}

/* The id of j's "id": 1..2^53. */
static int get_id(const json_t *j, uint64_t *id, struct err *e)
{
	json_t *v = json_object_get(j, "id");

	if (!json_is_integer(v) || json_integer_value(v) < 1 ||
	    json_integer_value(v) > (json_int_t)1 << 53)
		return err_set(e, EINVAL, "\"id\" must be the question's id (an integer from 1)");
	*id = (uint64_t)json_integer_value(v);
	return 0;
}

static int parse_set(const json_t *v, struct egress_answer *a, struct err *e)
{
	const char *k;
	json_t *x;

	if (!json_is_object(v))
		return err_set(e, EINVAL, "\"set_headers\" must be an object of names to values");
	if (json_object_size(v) > EGRESS_DECISION_FIELDS)
		return err_set(e, EINVAL, "\"set_headers\": at most %d fields",
			       EGRESS_DECISION_FIELDS);
	json_object_foreach((json_t *)v, k, x)
	{
		const char *why = name_fault(k, strlen(k));
		struct egress_field_change *c = &a->set[a->n_set];
		size_t n;

		if (why)
			return err_set(e, EINVAL, "\"set_headers\": \"%.64s\" %s", k, why);
		if (!json_is_string(x))
			return err_set(e, EINVAL, "\"set_headers\": \"%s\" must be a string", k);
		n = json_string_length(x);
		if (n > EGRESS_DECISION_VALUE_MAX || !printable(json_string_value(x), n, true))
			return err_set(e, EINVAL,
				       "\"set_headers\": \"%s\": a value is at most %d bytes of "
				       "visible ASCII, space and tab",
				       k, EGRESS_DECISION_VALUE_MAX);
		strcpy(c->name, k);
		memcpy(c->value, json_string_value(x), n);
		c->value[n] = '\0';
		a->n_set++;
	}
	return 0;
}

static int parse_remove(const json_t *v, struct egress_answer *a, struct err *e)
{
	size_t i;
	json_t *x;

	if (!json_is_array(v))
		return err_set(e, EINVAL, "\"remove_headers\" must be an array of names");
	if (json_array_size(v) > EGRESS_DECISION_FIELDS)
		return err_set(e, EINVAL, "\"remove_headers\": at most %d names",
			       EGRESS_DECISION_FIELDS);
	json_array_foreach(v, i, x)
	{
		const char *why;

		if (!json_is_string(x))
			return err_set(e, EINVAL, "\"remove_headers\": each must be a string");
		why = name_fault(json_string_value(x), json_string_length(x));
		if (why)
			return err_set(e, EINVAL, "\"remove_headers\": \"%.64s\" %s",
				       json_string_value(x), why);
		strcpy(a->remove[a->n_remove++], json_string_value(x));
	}
	return 0;
}

int egress_answer_parse(const json_t *j, struct egress_answer *a, struct err *e)
{
	const char *k, *d;
	json_t *v;

	memset(a, 0, sizeof(*a));
	if (!json_is_object(j))
		return err_set(e, EINVAL, "an answer is a JSON object");
	json_object_foreach((json_t *)j, k, v) if (
		strcmp(k, "id") && strcmp(k, "decision") && strcmp(k, "status") &&
		strcmp(k, "reason") && strcmp(k, "set_headers") &&
		strcmp(k,
		       "remove_headers")) return err_set(e, EINVAL,
							 "unknown field \"%.64s\" (an answer has id, decision, status, "
							 "reason, set_headers, remove_headers)",
							 k);
	if (get_id(j, &a->id, e))
		return -EINVAL;
	d = json_string_value(json_object_get(j, "decision"));
	if (d && !strcmp(d, "allow"))
		a->verdict = EGRESS_VERDICT_ALLOW;
	else if (d && !strcmp(d, "deny"))
		a->verdict = EGRESS_VERDICT_DENY;
	else if (d && !strcmp(d, "rules"))
		a->verdict = EGRESS_VERDICT_RULES;
	else
		return err_set(e, EINVAL, "\"decision\" must be \"allow\", \"deny\" or \"rules\"");
	a->status = 403;
	if ((v = json_object_get(j, "status"))) {
		if (a->verdict != EGRESS_VERDICT_DENY)
			return err_set(e, EINVAL, "\"status\" goes with \"deny\" only");
		if (!json_is_integer(v) || json_integer_value(v) < 400 ||
		    json_integer_value(v) > 599)
			return err_set(e, EINVAL, "\"status\" must be an integer 400..599");
		a->status = (uint16_t)json_integer_value(v);
	}
	if ((v = json_object_get(j, "reason"))) {
		size_t n = json_string_length(v);

		if (a->verdict != EGRESS_VERDICT_DENY)
			return err_set(e, EINVAL, "\"reason\" goes with \"deny\" only");
		if (!json_is_string(v) || n > EGRESS_DECISION_REASON_MAX ||
		    !printable(json_string_value(v), n, false))
			return err_set(e, EINVAL,
				       "\"reason\" must be at most %d bytes of printable ASCII",
				       EGRESS_DECISION_REASON_MAX);
		memcpy(a->reason, json_string_value(v), n);
	}
	if ((v = json_object_get(j, "set_headers")) &&
	    (a->verdict != EGRESS_VERDICT_ALLOW || parse_set(v, a, e)))
		return a->verdict != EGRESS_VERDICT_ALLOW
			? err_set(e, EINVAL, "\"set_headers\" goes with \"allow\" only")
			: -EINVAL;
	if ((v = json_object_get(j, "remove_headers")) &&
	    (a->verdict != EGRESS_VERDICT_ALLOW || parse_remove(v, a, e)))
		return a->verdict != EGRESS_VERDICT_ALLOW
			? err_set(e, EINVAL, "\"remove_headers\" goes with \"allow\" only")
			: -EINVAL;
	return 0;
}

json_t *egress_answer_json(const struct egress_answer *a)
{
	static const char *const word[] = { "rules", "allow", "deny" };
	json_t *j = json_pack("{s:I,s:s}", "id", (json_int_t)a->id, "decision", word[a->verdict]);
	json_t *set = NULL, *rm = NULL;

	if (!j)
		return NULL;
	if (a->verdict == EGRESS_VERDICT_DENY &&
	    (json_object_set_new(j, "status", json_integer(a->status)) ||
	     json_object_set_new(j, "reason", json_string(a->reason))))
		goto fail;
	if (a->n_set) {
		if (!(set = json_object()) || json_object_set_new(j, "set_headers", set))
			goto fail;
		for (size_t i = 0; i < a->n_set; i++)
			if (json_object_set_new(set, a->set[i].name, json_string(a->set[i].value)))
				goto fail;
	}
	if (a->n_remove) {
		if (!(rm = json_array()) || json_object_set_new(j, "remove_headers", rm))
			goto fail;
		for (size_t i = 0; i < a->n_remove; i++)
			if (json_array_append_new(rm, json_string(a->remove[i])))
				goto fail;
	}
	return j;
fail:
	json_decref(j);
	return NULL;
}

int egress_attach_parse_query(const char *deadline_ms, const char *on_timeout,
			      struct egress_attach *out, struct err *e)
{
	uint64_t ms = EGRESS_DECISION_DEADLINE_DEFAULT;

	if (deadline_ms &&
	    num_parse_u64(deadline_ms, 10, EGRESS_DECISION_DEADLINE_MIN,
			  EGRESS_DECISION_DEADLINE_MAX, &ms) < 0)
		return err_set(e, EINVAL, "deadline_ms '%.32s' must be an integer %d..%d",
			       deadline_ms, EGRESS_DECISION_DEADLINE_MIN,
			       EGRESS_DECISION_DEADLINE_MAX);
	out->deadline_ms = (unsigned)ms;
	out->on_timeout_rules = false;
	if (on_timeout && !strcmp(on_timeout, "rules"))
		out->on_timeout_rules = true;
	else if (on_timeout && strcmp(on_timeout, "deny"))
		return err_set(e, EINVAL, "on_timeout '%.32s' must be \"deny\" or \"rules\"",
			       on_timeout);
	return 0;
}

json_t *egress_attach_json(const struct egress_attach *at)
{
	return json_pack("{s:{s:I,s:s}}", "attach", "deadline_ms", (json_int_t)at->deadline_ms,
			 "on_timeout", at->on_timeout_rules ? "rules" : "deny");
}

int egress_control_parse(const json_t *j, enum egress_control *kind, struct egress_answer *a,
			 struct egress_attach *at, struct err *e)
{
	json_t *v;

	if (!json_is_object(j))
		return err_set(e, EINVAL, "a control line is a JSON object");
	if ((v = json_object_get(j, "attach"))) {
		json_t *ms = json_object_get(v, "deadline_ms");
		const char *ot = json_string_value(json_object_get(v, "on_timeout"));
		char num[24];

		if (json_object_size(j) != 1 || !json_is_object(v) || json_object_size(v) != 2 ||
		    !json_is_integer(ms) || !ot)
			return err_set(e, EINVAL,
				       "attach: {\"attach\":{\"deadline_ms\":N,\"on_timeout\":...}}");
		snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(ms));
		*kind = EGRESS_CONTROL_ATTACH;
		return egress_attach_parse_query(num, ot, at, e);
	}
	if ((v = json_object_get(j, "detach"))) {
		if (json_object_size(j) != 1 || !json_is_true(v))
			return err_set(e, EINVAL, "detach: {\"detach\":true}");
		*kind = EGRESS_CONTROL_DETACH;
		return 0;
	}
	*kind = EGRESS_CONTROL_ANSWER;
	return egress_answer_parse(j, a, e);
}

/* ---- questions ---- */

/* v is a string of at most max bytes, printable (tab too when tab). */
static bool str_ok(const json_t *v, size_t max, bool tab)
{
	return json_is_string(v) && json_string_length(v) <= max &&
		printable(json_string_value(v), json_string_length(v), tab);
}

static bool headers_ok(const json_t *v)
{
	size_t i;
	json_t *x;

	if (!json_is_array(v) || json_array_size(v) > EGRESS_DECISION_HEADERS_MAX)
		return false;
	json_array_foreach(v, i, x)
	{
		json_t *n = json_array_get(x, 0);

		if (!json_is_array(x) || json_array_size(x) != 2 || !json_is_string(n) ||
		    !json_string_length(n) || json_string_length(n) > Q_HEADER_NAME_MAX ||
		    !http_token(json_string_value(n), json_string_length(n)) ||
		    !str_ok(json_array_get(x, 1), EGRESS_DECISION_VALUE_MAX, true))
			return false;
	}
	return true;
}

static bool inject_ok(const json_t *v)
{
	size_t i;
	json_t *x;

	if (!json_is_array(v) || json_array_size(v) > EGRESS_DECISION_FIELDS)
		return false;
	json_array_foreach(v, i,
			   x) if (!json_is_string(x) || !json_string_length(x) ||
				  !http_token(json_string_value(x), json_string_length(x)) ||
				  json_string_length(x) > EGRESS_DECISION_NAME_MAX) return false;
	return true;
}

static bool word_ok(const json_t *v, const char *a, const char *b)
{
	const char *s = json_string_value(v);

	return s && (!strcmp(s, a) || !strcmp(s, b));
}

static bool index_ok(const json_t *v)
{
	return json_is_null(v) ||
		(json_is_integer(v) && json_integer_value(v) >= 0 &&
		 json_integer_value(v) <= (json_int_t)1 << 53);
}

/* Whether field k's value v is well-formed in a question of kind request (or connect). */
static bool q_field_ok(const char *k, const json_t *v, bool request)
{
	if (!strcmp(k, "kind") || !strcmp(k, "id"))
		return true; /* checked before */
	if (!strcmp(k, "src") || !strcmp(k, "dst"))
		return str_ok(v, Q_ADDR_MAX, false);
	if (!strcmp(k, "name"))
		return str_ok(v, NET_HOST_MAX, false);
	if (!strcmp(k, "proto"))
		return word_ok(v, "tls", "http");
	if (!strcmp(k, "static"))
		return word_ok(v, "allow", "deny");
	if (!strcmp(k, "reason"))
		return str_ok(v, EGRESS_DECISION_REASON_MAX, false);
	if (!strcmp(k, "rule"))
		return index_ok(v);
	if (!request)
		return !strcmp(k, "intercept") && json_is_boolean(v);
	if (!strcmp(k, "flow"))
		return index_ok(v);
	if (!strcmp(k, "method"))
		return json_is_string(v) && json_string_length(v) <= Q_METHOD_MAX &&
			http_token(json_string_value(v), json_string_length(v));
	if (!strcmp(k, "path"))
		return str_ok(v, Q_PATH_MAX, false);
	if (!strcmp(k, "headers"))
		return headers_ok(v);
	if (!strcmp(k, "inject"))
		return inject_ok(v);
	return false;
}

/* What each question has (reason only when the rules denied). */
static const char *const q_connect_fields[] = { "src",    "dst",  "name",      "proto",
						"static", "rule", "intercept", NULL };
static const char *const q_request_fields[] = { "src",    "dst",     "name",   "proto",
						"static", "rule",    "flow",   "method",
						"path",   "headers", "inject", NULL };

int egress_decision_question_clean(const json_t *in, json_t **out, struct err *e)
{
	const char *kind = json_string_value(json_object_get(in, "kind")), *k;
	uint64_t id;
	bool request;
	json_t *v;

	*out = NULL;
	if (!json_is_object(in) || !kind || (strcmp(kind, "connect") && strcmp(kind, "request")))
		return err_set(e, EINVAL, "not a question: \"kind\" is not connect or request");
	if (get_id(in, &id, e))
		return -EINVAL;
	request = !strcmp(kind, "request");
	json_object_foreach((json_t *)in, k, v)
	{
		if (!q_field_ok(k, v, request))
			return err_set(e, EINVAL, "question %llu: field \"%.64s\" is malformed",
				       (unsigned long long)id, k);
	}
	/* Every field a client reads is there: a compromised proxy's partial
	 * question would break a callback that trusts the protocol. */
	for (const char *const *r = request ? q_request_fields : q_connect_fields; *r; r++)
		if (!json_object_get(in, *r))
			return err_set(e, EINVAL, "question %llu: no field \"%s\"",
				       (unsigned long long)id, *r);
	*out = json_deep_copy(in);
	return *out ? 0 : err_set(e, ENOMEM, "out of memory");
}
