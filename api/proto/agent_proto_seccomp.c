/*
 * agent_proto_seccomp: ctr_create's `seccomp` (docs/agent-protocol.md,
 * 7.9): the actions' and comparisons' names, the parse (every count and
 * number bounded: the guest compiles what it reads into its BPF filter)
 * and the encoder the host's requests share.
 */
#include "api/proto/agent_proto.h"
#include "api/proto/agent_proto_parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const sc_action_names[AGENT_SC_ACTIONS] = {
	[AGENT_SC_ALLOW] = "allow",
	[AGENT_SC_ERRNO] = "errno",
	[AGENT_SC_KILL_THREAD] = "kill_thread",
	[AGENT_SC_KILL_PROCESS] = "kill_process",
	[AGENT_SC_TRAP] = "trap",
	[AGENT_SC_TRACE] = "trace",
	[AGENT_SC_LOG] = "log",
};

static const char *const sc_op_names[AGENT_SC_OPS] = {
	[AGENT_SC_EQ] = "eq",
	[AGENT_SC_NE] = "ne",
	[AGENT_SC_LT] = "lt",
	[AGENT_SC_LE] = "le",
	[AGENT_SC_GT] = "gt",
	[AGENT_SC_GE] = "ge",
	[AGENT_SC_MASKED_EQ] = "masked_eq",
};

const char *agent_sc_action_name(enum agent_sc_action a)
{
	return agent_name_at(sc_action_names, AGENT_SC_ACTIONS, (int)a);
}

int agent_sc_action_parse(const char *name)
{
	return agent_name_index(sc_action_names, AGENT_SC_ACTIONS, name);
}

const char *agent_sc_op_name(enum agent_sc_op o)
{
	return agent_name_at(sc_op_names, AGENT_SC_OPS, (int)o);
}

int agent_sc_op_parse(const char *name)
{
	return agent_name_index(sc_op_names, AGENT_SC_OPS, name);
}

/* An action field: its name into *out. */
static enum agent_code sc_action(struct parse *p, const char *key, bool required,
				 enum agent_sc_action *out)
{
	const char *s = NULL;
	enum agent_code c = agent_field_string(p, key, required, "a seccomp action", &s);
	int a;

	if (c || !s)
		return c;
	a = agent_sc_action_parse(s);
	if (a < 0)
		return agent_err_set(
			p->err, AGENT_E_BAD_FIELD,
			"%s: '%s' must be allow, errno, kill_thread, kill_process, trap, trace or log, got '%.40s'",
			p->name, key, s);
	*out = (enum agent_sc_action)a;
	return AGENT_OK;
}

static enum agent_code sc_arg(struct parse *p, json_t *v, size_t i, struct agent_sc_arg *a)
{
	static const char *const fields[] = { "index", "op", "value", "value_two", NULL };
	char key[32], name[128];
	struct parse ap;
	const char *op;
	enum agent_code c;
	int o;

	snprintf(key, sizeof(key), "args[%zu]", i);
	if ((c = agent_sub_object(p, v, key, fields, name, sizeof(name), &ap)) ||
	    (c = agent_field_u32(&ap, "index", true, 0, 5, 0, &a->index)) ||
	    (c = agent_field_string(&ap, "op", true, "a comparison", &op)))
		return c;
	o = agent_sc_op_parse(op);
	if (o < 0)
		return agent_err_set(p->err, AGENT_E_BAD_FIELD,
				     "%s: 'op' must be eq, ne, lt, le, gt, ge or masked_eq, got '%.40s'",
				     ap.name, op);
	a->op = (enum agent_sc_op)o;
	if ((c = agent_field_uint(&ap, "value", true, 0, INT64_MAX, 0, &a->value)))
		return c;
	return agent_field_uint(&ap, "value_two", false, 0, INT64_MAX, 0, &a->value_two);
}

static enum agent_code sc_rule(struct parse *p, json_t *v, size_t i, struct agent_sc_rule *r)
{
	static const char *const fields[] = { "nr", "action", "errno", "args", NULL };
	char key[32], name[96];
	struct parse rp;
	json_t *a, *av;
	size_t k;
	enum agent_code c;

	snprintf(key, sizeof(key), "rules[%zu]", i);
	if ((c = agent_sub_object(p, v, key, fields, name, sizeof(name), &rp)) ||
	    (c = agent_field_u32(&rp, "nr", true, 0, AGENT_SECCOMP_NR_MAX, 0, &r->nr)) ||
	    (c = sc_action(&rp, "action", true, &r->action)) ||
	    (c = agent_field_u32(&rp, "errno", false, 0, AGENT_SECCOMP_ERRNO_MAX, 1,
				 &r->errno_ret)) ||
	    (c = agent_field_array(&rp, "args", false, AGENT_SECCOMP_ARGS_MAX,
				   "an array of argument conditions", &a)))
		return c;
	json_array_foreach(a, k, av)
	{
		if ((c = sc_arg(&rp, av, k, &r->args[k])))
			return c;
		r->nargs = k + 1;
	}
	return AGENT_OK;
}

static enum agent_code sc_flags(struct parse *p, struct agent_seccomp *s)
{
	json_t *a, *v;
	size_t i;
	enum agent_code c = agent_field_array(p, "flags", false, 2, "an array of flags", &a);

	if (c || !a)
		return c;
	json_array_foreach(a, i, v)
	{
		const char *f = json_string_value(v);

		if (f && !strcmp(f, "log"))
			s->log = true;
		else if (f && !strcmp(f, "spec_allow"))
			s->spec_allow = true;
		else
			return agent_err_set(p->err, AGENT_E_BAD_FIELD,
					     "%s: 'flags[%zu]' must be \"log\" or \"spec_allow\"",
					     p->name, i);
	}
	return AGENT_OK;
}

enum agent_code agent_ctr_seccomp_parse(struct parse *p, struct agent_ctr_create *c)
{
	static const char *const fields[] = { "default_action", "default_errno", "flags", "rules",
					      NULL };
	json_t *v = json_object_get(p->obj, "seccomp"), *a, *rv;
	struct agent_seccomp *s;
	char name[64];
	struct parse sp;
	size_t i;
	enum agent_code rc;

	if (!v)
		return AGENT_OK;
	if ((rc = agent_sub_object(p, v, "seccomp", fields, name, sizeof(name), &sp)))
		return rc;
	s = c->seccomp = calloc(1, sizeof(*s));
	if (!s)
		return agent_no_memory(p);
	if ((rc = sc_action(&sp, "default_action", true, &s->default_action)) ||
	    (rc = agent_field_u32(&sp, "default_errno", false, 0, AGENT_SECCOMP_ERRNO_MAX, 1,
				  &s->default_errno)) ||
	    (rc = sc_flags(&sp, s)) ||
	    (rc = agent_field_array(&sp, "rules", false, AGENT_SECCOMP_RULES_MAX,
				    "an array of rules", &a)))
		return rc;
	if (!a || !json_array_size(a))
		return AGENT_OK;
	s->rules = calloc(json_array_size(a), sizeof(*s->rules));
	if (!s->rules)
		return agent_no_memory(p);
	json_array_foreach(a, i, rv)
	{
		if ((rc = sc_rule(&sp, rv, i, &s->rules[i])))
			return rc;
		s->nrules = i + 1;
	}
	return AGENT_OK;
}

static json_t *encode_sc_rule(const struct agent_sc_rule *r)
{
	json_t *o = json_pack("{s:I,s:s,s:I}", "nr", (json_int_t)r->nr, "action",
			      agent_sc_action_name(r->action), "errno", (json_int_t)r->errno_ret);
	json_t *a = r->nargs ? json_array() : NULL;
	bool ok = o && (!r->nargs || agent_put(o, "args", a));

	for (size_t i = 0; ok && i < r->nargs; i++) {
		const struct agent_sc_arg *g = &r->args[i];

		ok = json_array_append_new(a,
					   json_pack("{s:I,s:s,s:I,s:I}", "index",
						     (json_int_t)g->index, "op",
						     agent_sc_op_name(g->op), "value",
						     (json_int_t)g->value, "value_two",
						     (json_int_t)g->value_two)) == 0;
	}
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *agent_ctr_seccomp_encode(const struct agent_seccomp *s)
{
	json_t *o = json_pack("{s:s,s:I}", "default_action",
			      agent_sc_action_name(s->default_action), "default_errno",
			      (json_int_t)s->default_errno);
	json_t *f = json_array(), *rules = json_array();
	bool ok = o && f && rules;

	if (ok && s->log)
		ok = json_array_append_new(f, json_string("log")) == 0;
	if (ok && s->spec_allow)
		ok = json_array_append_new(f, json_string("spec_allow")) == 0;
	for (size_t i = 0; ok && i < s->nrules; i++)
		ok = json_array_append_new(rules, encode_sc_rule(&s->rules[i])) == 0;
	ok = ok && agent_put(o, "flags", json_incref(f)) &&
		agent_put(o, "rules", json_incref(rules));
	json_decref(f);
	json_decref(rules);
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

void agent_ctr_seccomp_free(struct agent_ctr_create *c)
{
	if (c->seccomp)
		free(c->seccomp->rules);
	free(c->seccomp);
	c->seccomp = NULL;
}
