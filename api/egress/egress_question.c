/* egress_question: see egress_question.h. */
#include "api/egress/egress_question.h"

#include <stdio.h>
#include <string.h>

#include "api/egress/egress_log.h"

static json_t *index_or_null(size_t i)
{
	return i == SIZE_MAX ? json_null() : json_integer((json_int_t)i);
}

/* The fields every question has. NULL out of memory. */
static json_t *question(const char *kind, uint64_t id, const struct proxy_v2 *h, const char *name,
			const struct egress_flow *f)
{
	json_t *q = json_object();

	if (!q || json_object_set_new(q, "kind", json_string(kind)) ||
	    json_object_set_new(q, "id", json_integer((json_int_t)id)) ||
	    json_object_set_new(q, "src", egress_log_endpoint(h, true)) ||
	    json_object_set_new(q, "dst", egress_log_endpoint(h, false)) ||
	    json_object_set_new(q, "name", json_string(name)) ||
	    json_object_set_new(q, "proto",
				json_string(f->proto == EGRESS_PROTO_TLS ? "tls" : "http")) ||
	    json_object_set_new(q, "static",
				json_string(f->status == EGRESS_ALLOW ? "allow" : "deny")) ||
	    json_object_set_new(q, "rule", index_or_null(f->rule)) ||
	    (f->status != EGRESS_ALLOW &&
	     json_object_set_new(q, "reason", json_string(f->reason)))) {
		json_decref(q);
		return NULL;
	}
	return q;
}

json_t *egress_question_connect(uint64_t id, const struct proxy_v2 *h, const struct egress_flow *f)
{
	json_t *q = question("connect", id, h, f->name, f);

	if (q && json_object_set_new(q, "intercept", json_boolean(f->intercept))) {
		json_decref(q);
		return NULL;
	}
	return q;
}

/* The line s[0..n) names a field u injects. */
static bool injected_by(const struct http_rule *u, const char *s, size_t n)
{
	for (size_t i = 0; u && i < u->n_inject; i++)
		if (egress_http_same_field(s, n, u->inject[i].header))
			return true;
	return false;
}

/* s[0..n) cut to max bytes as a JSON string of visible ASCII, space and
 * tab ('?' for the rest). */
static json_t *shown(const char *s, size_t n, size_t max)
{
	/* A path (HTTP_REQ_PATH_MAX - 1) or a field's value (VALUE_MAX). */
	char buf[HTTP_REQ_PATH_MAX > EGRESS_DECISION_VALUE_MAX ? HTTP_REQ_PATH_MAX
							       : EGRESS_DECISION_VALUE_MAX];

	if (n > max)
		n = max;
	if (n > sizeof(buf))
		n = sizeof(buf);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		buf[i] = (c >= 0x20 && c <= 0x7e) || c == '\t' ? (char)c : '?';
	}
	return json_stringn(buf, n);
}

/* The head's fields (after its request line) as [name, value] pairs. */
static json_t *fields(const char *head, size_t n, const struct http_rule *u)
{
	json_t *arr = json_array();
	size_t at;
	const char *cr = memchr(head, '\r', n);

	if (!arr || !cr)
		return arr;
	for (at = (size_t)(cr - head) + 2; at + 2 < n;) {
		const char *end = memchr(head + at, '\r', n - at), *colon;
		size_t len, name_len, v;

		if (!end)
			break;
		len = (size_t)(end - (head + at));
		colon = memchr(head + at, ':', len);
		if (colon && json_array_size(arr) < EGRESS_DECISION_HEADERS_MAX) {
			/* A longer name is cut (kilnd takes 256 bytes), never left out. */
			char name[257];
			size_t cut;

			name_len = (size_t)(colon - (head + at));
			cut = name_len < sizeof(name) ? name_len : sizeof(name) - 1;
			if (name_len && !injected_by(u, head + at, name_len)) {
				for (size_t i = 0; i < cut; i++) {
					char c = head[at + i];

					name[i] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
				}
				for (v = name_len + 1;
				     v < len && (head[at + v] == ' ' || head[at + v] == '\t'); v++)
					;
				while (len > v &&
				       (head[at + len - 1] == ' ' || head[at + len - 1] == '\t'))
					len--;
				json_array_append_new(arr,
						      json_pack("[s%o]", name, cut,
								shown(head + at + v, len - v,
								      EGRESS_DECISION_VALUE_MAX)));
			}
		}
		at = (size_t)(end - head) + 2;
	}
	return arr;
}

json_t *egress_question_request(uint64_t id, uint64_t flow, const struct proxy_v2 *h,
				const char *name, const struct egress_flow *f, const char *head,
				const struct http_rule *u)
{
	json_t *q = question("request", id, h, name, f), *inj = json_array();

	/* A request the rules denied carries no rule's secrets, even allowed
	 * (egress_question_apply): its fields of u's names go as sent. */
	if (f->status != EGRESS_ALLOW)
		u = NULL;
	for (size_t i = 0; inj && u && i < u->n_inject; i++)
		json_array_append_new(inj, json_string(u->inject[i].header));
	if (!q || !inj ||
	    json_object_set_new(q, "flow", flow ? json_integer((json_int_t)flow) : json_null()) ||
	    json_object_set_new(q, "method", json_string(f->method)) ||
	    json_object_set_new(q, "path", shown(f->path, strlen(f->path), sizeof(f->path))) ||
	    json_object_set_new(q, "headers", fields(head, f->head_len, u)) ||
	    json_object_set_new(q, "inject", inj)) {
		json_decref(q);
		return NULL;
	}
	return q;
}

const char *egress_question_apply(struct egress_flow *f, const struct egress_asked *o, char *why,
				  size_t cap)
{
	switch (o->how) {
	case EGRESS_ASKED_NONE:
		return NULL;
	case EGRESS_ASKED_TIMEOUT:
		if (o->timeout_rules)
			return "timeout";
		snprintf(why, cap, "the policy callback did not answer within %u ms",
			 o->deadline_ms);
		f->status = EGRESS_DENY;
		f->status_code = HTTP_DENY_STATUS;
		f->reason = why;
		f->callback = true;
		return "timeout";
	case EGRESS_ASKED_ANSWER:
		break;
	}
	switch (o->a->verdict) {
	case EGRESS_VERDICT_RULES:
		break;
	case EGRESS_VERDICT_ALLOW:
		if (f->status != EGRESS_ALLOW) {
			/* The rules denied it: nothing decrypts it, and no
			 * rule decided it, so no rule's secrets go with it (a
			 * path rule refusing a path not in normal form names
			 * itself). */
			f->status = EGRESS_ALLOW;
			f->intercept = false;
			f->rule = SIZE_MAX;
			f->reason = "";
		}
		break;
	case EGRESS_VERDICT_DENY:
		snprintf(why, cap, "%s",
			 o->a->reason[0] ? o->a->reason : "denied by the policy callback");
		f->status = EGRESS_DENY;
		f->status_code = o->a->status;
		f->reason = why;
		f->callback = true;
		break;
	}
	return "callback";
}

size_t egress_question_changes(const struct egress_answer *a, const struct http_rule *u,
			       struct egress_inject_field *out)
{
	size_t n = 0;

	if (a->verdict != EGRESS_VERDICT_ALLOW)
		return 0;
	for (size_t i = 0; i < a->n_remove; i++)
		if (!injected_by(u, a->remove[i], strlen(a->remove[i])))
			out[n++] = (struct egress_inject_field){ .name = a->remove[i] };
	for (size_t i = 0; i < a->n_set; i++)
		if (!injected_by(u, a->set[i].name, strlen(a->set[i].name)))
			out[n++] = (struct egress_inject_field){ .name = a->set[i].name,
								 .format = "{}",
								 .value = a->set[i].value };
	return n;
}
