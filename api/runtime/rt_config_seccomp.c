/*
 * config.json's linux.seccomp (runtime-spec config-linux.md "Seccomp")
 * into the agent's `seccomp` (docs/agent-protocol.md 7.9), which the guest
 * compiles into its BPF filter: syscall names resolved to this
 * architecture's numbers (the guest's, under KVM) with libseccomp's table;
 * a name this architecture lacks is skipped, as runc skips it (profiles
 * list every architecture's); a rule naming one argument index twice
 * becomes one rule per condition, as runc makes it; a rule that does what
 * the default does is dropped. Bounded: 1024 entries, 6 conditions each,
 * AGENT_SECCOMP_RULES_MAX rules in all.
 */
#include "api/runtime/rt_config.h"
#include "api/runtime/rt_config_read.h"

#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/json.h"

#define SC_WHERE "linux.seccomp"

static const struct {
	const char *name;
	enum agent_sc_action action;
} sc_actions[] = {
	{ "SCMP_ACT_ALLOW", AGENT_SC_ALLOW },
	{ "SCMP_ACT_ERRNO", AGENT_SC_ERRNO },
	{ "SCMP_ACT_KILL", AGENT_SC_KILL_THREAD },
	{ "SCMP_ACT_KILL_THREAD", AGENT_SC_KILL_THREAD },
	{ "SCMP_ACT_KILL_PROCESS", AGENT_SC_KILL_PROCESS },
	{ "SCMP_ACT_TRAP", AGENT_SC_TRAP },
	{ "SCMP_ACT_TRACE", AGENT_SC_TRACE },
	{ "SCMP_ACT_LOG", AGENT_SC_LOG },
};

static const struct {
	const char *name;
	enum agent_sc_op op;
} sc_ops[] = {
	{ "SCMP_CMP_EQ", AGENT_SC_EQ },
	{ "SCMP_CMP_NE", AGENT_SC_NE },
	{ "SCMP_CMP_LT", AGENT_SC_LT },
	{ "SCMP_CMP_LE", AGENT_SC_LE },
	{ "SCMP_CMP_GT", AGENT_SC_GT },
	{ "SCMP_CMP_GE", AGENT_SC_GE },
	{ "SCMP_CMP_MASKED_EQ", AGENT_SC_MASKED_EQ },
};

static int read_action(const json_t *o, const char *key, const char *w, enum agent_sc_action *out,
		       struct err *e)
{
	const char *s;
	char p[WHERE_MAX];

	if (cfg_get_string(o, key, true, 64, w, &s, e) < 0)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(sc_actions) / sizeof(sc_actions[0]); i++) {
		if (!strcmp(s, sc_actions[i].name)) {
			*out = sc_actions[i].action;
			return 0;
		}
	}
	cfg_path_of(p, w, key);
	if (!strcmp(s, "SCMP_ACT_NOTIFY"))
		return err_set(e, EINVAL,
			       "config.json: %s SCMP_ACT_NOTIFY is not supported: the filter runs in "
			       "the VM, out of a host listener's reach",
			       p);
	return err_set(e, EINVAL, "config.json: %s \"%.40s\" is not a seccomp action", p, s);
}

/* errnoRet: EPERM when absent (runc's). */
static int read_errno(const json_t *o, const char *key, const char *w, uint32_t *out, struct err *e)
{
	bool has;
	int64_t v = 0;

	if (cfg_get_int(o, key, w, 0, AGENT_SECCOMP_ERRNO_MAX, &has, &v, e) < 0)
		return -EINVAL;
	*out = has ? (uint32_t)v : EPERM;
	return 0;
}

static int read_arg(const json_t *j, const char *w, struct agent_sc_arg *a, struct err *e)
{
	const char *op;
	bool has;
	int64_t v = 0;

	if (!json_is_object(j))
		return cfg_not_a(j, "an object", w, e);
	if (cfg_get_int(j, "index", w, 0, 5, &has, &v, e) < 0)
		return -EINVAL;
	if (!has)
		return err_set(e, EINVAL, "config.json: %s.index is missing", w);
	a->index = (uint32_t)v;
	if (cfg_get_int(j, "value", w, 0, INT64_MAX, &has, &v, e) < 0)
		return -EINVAL;
	a->value = (uint64_t)v;
	v = 0;
	if (cfg_get_int(j, "valueTwo", w, 0, INT64_MAX, &has, &v, e) < 0 ||
	    cfg_get_string(j, "op", true, 32, w, &op, e) < 0)
		return -EINVAL;
	a->value_two = (uint64_t)v;
	for (size_t i = 0; i < sizeof(sc_ops) / sizeof(sc_ops[0]); i++) {
		if (!strcmp(op, sc_ops[i].name)) {
			a->op = sc_ops[i].op;
			return 0;
		}
	}
	return err_set(e, EINVAL, "config.json: %s.op \"%.32s\" is not a seccomp comparison", w,
		       op);
}

/* A syscalls entry's conditions into r; *split: an index given twice. */
static int read_args(const json_t *j, const char *w, struct agent_sc_rule *r, bool *split,
		     struct err *e)
{
	char aw[WHERE_MAX + 32];
	json_t *a;

	*split = false;
	if (cfg_get_array(j, "args", AGENT_SECCOMP_ARGS_MAX, w, &a, e) < 0)
		return -EINVAL;
	for (size_t i = 0; a && i < json_array_size(a); i++) {
		snprintf(aw, sizeof(aw), "%s.args[%zu]", w, i);
		if (read_arg(json_array_get(a, i), aw, &r->args[i], e) < 0)
			return -EINVAL;
		for (size_t k = 0; k < i; k++)
			*split |= r->args[k].index == r->args[i].index;
		r->nargs = i + 1;
	}
	return 0;
}

static int add_rule(struct agent_seccomp *s, const struct agent_sc_rule *r, struct err *e)
{
	if (r->action == s->default_action && !r->nargs &&
	    (r->action != AGENT_SC_ERRNO || r->errno_ret == s->default_errno))
		return 0;
	if (s->nrules >= AGENT_SECCOMP_RULES_MAX)
		return err_set(e, EINVAL,
			       "config.json: " SC_WHERE " makes more than %d rules: name fewer "
			       "syscalls",
			       AGENT_SECCOMP_RULES_MAX);
	s->rules[s->nrules++] = *r;
	return 0;
}

/* One rule per resolved name (and per condition when split). */
static int add_names(struct agent_seccomp *s, const char *const *names, size_t n,
		     const struct agent_sc_rule *tmpl, bool split, struct err *e)
{
	for (size_t i = 0; i < n; i++) {
		int nr = seccomp_syscall_resolve_name(names[i]);
		struct agent_sc_rule r = *tmpl;

		if (nr < 0 || nr > AGENT_SECCOMP_NR_MAX)
			continue; /* not this architecture's */
		r.nr = (uint32_t)nr;
		if (!split) {
			if (add_rule(s, &r, e) < 0)
				return -EINVAL;
			continue;
		}
		for (size_t k = 0; k < tmpl->nargs; k++) {
			r.args[0] = tmpl->args[k];
			r.nargs = 1;
			if (add_rule(s, &r, e) < 0)
				return -EINVAL;
		}
	}
	return 0;
}

static int read_syscall(const json_t *j, size_t i, struct agent_seccomp *s, struct err *e)
{
	struct agent_sc_rule r = { 0 };
	const char **names = NULL;
	char w[WHERE_MAX];
	size_t n = 0;
	bool split;
	int rc;

	snprintf(w, sizeof(w), SC_WHERE ".syscalls[%zu]", i);
	if (!json_is_object(j))
		return cfg_not_a(j, "an object", w, e);
	if (read_action(j, "action", w, &r.action, e) < 0 ||
	    read_errno(j, "errnoRet", w, &r.errno_ret, e) < 0 ||
	    read_args(j, w, &r, &split, e) < 0 ||
	    cfg_get_strings(j, "names", 64, w, &names, &n, e) < 0) {
		free(names);
		return -EINVAL;
	}
	rc = add_names(s, names, n, &r, split, e);
	free(names);
	return rc;
}

static int read_flags(const json_t *sc, struct agent_seccomp *s, struct err *e)
{
	const char **f = NULL;
	size_t n = 0;
	int rc = 0;

	if (cfg_get_strings(sc, "flags", 64, SC_WHERE, &f, &n, e) < 0) {
		free(f);
		return -EINVAL;
	}
	for (size_t i = 0; !rc && i < n; i++) {
		if (!strcmp(f[i], "SECCOMP_FILTER_FLAG_LOG"))
			s->log = true;
		else if (!strcmp(f[i], "SECCOMP_FILTER_FLAG_SPEC_ALLOW"))
			s->spec_allow = true;
		else if (strcmp(f[i],
				"SECCOMP_FILTER_FLAG_TSYNC")) /* one thread: nothing to sync */
			rc = err_set(e, EINVAL,
				     "config.json: " SC_WHERE
				     ".flags[%zu] \"%.40s\" is not supported "
				     "(SECCOMP_FILTER_FLAG_LOG, _SPEC_ALLOW, _TSYNC are)",
				     i, f[i]);
	}
	free(f);
	return rc;
}

static int read_seccomp(const json_t *sc, struct agent_seccomp *s, struct err *e)
{
	const char *listener;
	json_t *calls, *arches;

	if (read_action(sc, "defaultAction", SC_WHERE, &s->default_action, e) < 0 ||
	    read_errno(sc, "defaultErrnoRet", SC_WHERE, &s->default_errno, e) < 0 ||
	    read_flags(sc, s, e) < 0 ||
	    cfg_get_array(sc, "architectures", 64, SC_WHERE, &arches, e) < 0 ||
	    cfg_get_string(sc, "listenerPath", false, RT_PATH_MAX - 1, SC_WHERE, &listener, e) <
		    0 ||
	    cfg_get_array(sc, "syscalls", RT_CONFIG_LIST_MAX, SC_WHERE, &calls, e) < 0)
		return -EINVAL;
	if (listener && *listener)
		return err_set(e, EINVAL,
			       "config.json: " SC_WHERE
			       ".listenerPath is not supported: the filter "
			       "runs in the VM, out of a host listener's reach");
	if (!calls || !json_array_size(calls))
		return 0;
	s->rules = calloc(AGENT_SECCOMP_RULES_MAX, sizeof(*s->rules));
	if (!s->rules)
		return err_set(e, ENOMEM, "config.json: out of memory reading " SC_WHERE);
	for (size_t i = 0; i < json_array_size(calls); i++)
		if (read_syscall(json_array_get(calls, i), i, s, e) < 0)
			return -EINVAL;
	return 0;
}

int rt_config_read_seccomp(const json_t *lx, struct rt_config *c, struct err *e)
{
	json_t *sc;

	if (cfg_get_object(lx, "seccomp", "linux", &sc, e) < 0)
		return -EINVAL;
	if (!sc)
		return 0;
	c->seccomp = calloc(1, sizeof(*c->seccomp));
	if (!c->seccomp)
		return err_set(e, ENOMEM, "config.json: out of memory reading " SC_WHERE);
	return read_seccomp(sc, c->seccomp, e);
}

void rt_config_free_seccomp(struct rt_config *c)
{
	if (c->seccomp)
		free(c->seccomp->rules);
	free(c->seccomp);
	c->seccomp = NULL;
}
