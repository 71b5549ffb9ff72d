/*
 * agent_proto_sec: what confines a container's process (docs/agent-protocol.md,
 * 7.9): `process`'s rlimits, capabilities, no_new_privileges and
 * oom_score_adj, ctr_create's sysctl, masked_paths and readonly_paths (its
 * seccomp: agent_proto_seccomp.c); the capability and resource names both
 * ends check against; the encoder the host's requests share.
 */
#include "api/proto/agent_proto.h"
#include "api/proto/agent_proto_parse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* ---- names ---- */

static const char *const cap_set_names[AGENT_CAP_SETS] = {
	[AGENT_CAP_BOUNDING] = "bounding",   [AGENT_CAP_EFFECTIVE] = "effective",
	[AGENT_CAP_PERMITTED] = "permitted", [AGENT_CAP_INHERITABLE] = "inheritable",
	[AGENT_CAP_AMBIENT] = "ambient",
};

/* linux/capability.h's, 0 to CAP_LAST_CAP of the guest kernel (6.x). */
#define CAP_COUNT 41
static const char *const cap_names[CAP_COUNT] = {
	"CAP_CHOWN",
	"CAP_DAC_OVERRIDE",
	"CAP_DAC_READ_SEARCH",
	"CAP_FOWNER",
	"CAP_FSETID",
	"CAP_KILL",
	"CAP_SETGID",
	"CAP_SETUID",
	"CAP_SETPCAP",
	"CAP_LINUX_IMMUTABLE",
	"CAP_NET_BIND_SERVICE",
	"CAP_NET_BROADCAST",
	"CAP_NET_ADMIN",
	"CAP_NET_RAW",
	"CAP_IPC_LOCK",
	"CAP_IPC_OWNER",
	"CAP_SYS_MODULE",
	"CAP_SYS_RAWIO",
	"CAP_SYS_CHROOT",
	"CAP_SYS_PTRACE",
	"CAP_SYS_PACCT",
	"CAP_SYS_ADMIN",
	"CAP_SYS_BOOT",
	"CAP_SYS_NICE",
	"CAP_SYS_RESOURCE",
	"CAP_SYS_TIME",
	"CAP_SYS_TTY_CONFIG",
	"CAP_MKNOD",
	"CAP_LEASE",
	"CAP_AUDIT_WRITE",
	"CAP_AUDIT_CONTROL",
	"CAP_SETFCAP",
	"CAP_MAC_OVERRIDE",
	"CAP_MAC_ADMIN",
	"CAP_SYSLOG",
	"CAP_WAKE_ALARM",
	"CAP_BLOCK_SUSPEND",
	"CAP_AUDIT_READ",
	"CAP_PERFMON",
	"CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
};

static const char *const rlimit_names[AGENT_CTR_RLIMITS_MAX] = {
	[RLIMIT_CPU] = "RLIMIT_CPU",           [RLIMIT_FSIZE] = "RLIMIT_FSIZE",
	[RLIMIT_DATA] = "RLIMIT_DATA",         [RLIMIT_STACK] = "RLIMIT_STACK",
	[RLIMIT_CORE] = "RLIMIT_CORE",         [RLIMIT_RSS] = "RLIMIT_RSS",
	[RLIMIT_NPROC] = "RLIMIT_NPROC",       [RLIMIT_NOFILE] = "RLIMIT_NOFILE",
	[RLIMIT_MEMLOCK] = "RLIMIT_MEMLOCK",   [RLIMIT_AS] = "RLIMIT_AS",
	[RLIMIT_LOCKS] = "RLIMIT_LOCKS",       [RLIMIT_SIGPENDING] = "RLIMIT_SIGPENDING",
	[RLIMIT_MSGQUEUE] = "RLIMIT_MSGQUEUE", [RLIMIT_NICE] = "RLIMIT_NICE",
	[RLIMIT_RTPRIO] = "RLIMIT_RTPRIO",     [RLIMIT_RTTIME] = "RLIMIT_RTTIME",
};

const char *agent_cap_set_name(enum agent_cap_set s)
{
	return agent_name_at(cap_set_names, AGENT_CAP_SETS, (int)s);
}

int agent_cap_parse(const char *name)
{
	return agent_name_index(cap_names, CAP_COUNT, name);
}

const char *agent_cap_name(int cap)
{
	return agent_name_at(cap_names, CAP_COUNT, cap);
}

int agent_rlimit_parse(const char *name)
{
	return agent_name_index(rlimit_names, AGENT_CTR_RLIMITS_MAX, name);
}

const char *agent_rlimit_name(int resource)
{
	return agent_name_at(rlimit_names, AGENT_CTR_RLIMITS_MAX, resource);
}

bool agent_sysctl_key_valid(const char *key)
{
	size_t n = strlen(key), run = 0;

	if (n == 0 || n > AGENT_SYSCTL_KEY_MAX)
		return false;
	/* Components of [A-Za-z0-9_-]: no empty one, so no "/proc/sys/../". */
	for (size_t i = 0; i <= n; i++) {
		char c = key[i];

		if (c == '.' || c == '/' || c == '\0') {
			if (run == 0)
				return false;
			run = 0;
		} else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			   (c >= '0' && c <= '9') || c == '_' || c == '-') {
			run++;
		} else {
			return false;
		}
	}
	return true;
}

/* ---- process: rlimits, capabilities, no_new_privileges, oom_score_adj ---- */

static enum agent_code parse_rlimit(struct parse *p, json_t *v, size_t i,
				    struct agent_ctr_privs *out)
{
	static const char *const fields[] = { "type", "soft", "hard", NULL };
	struct agent_rlimit *l = &out->rlimits[i];
	char key[32], name[96];
	struct parse rp;
	const char *type;
	enum agent_code c;

	snprintf(key, sizeof(key), "rlimits[%zu]", i);
	if ((c = agent_sub_object(p, v, key, fields, name, sizeof(name), &rp)) ||
	    (c = agent_field_string(&rp, "type", true, "an RLIMIT_ name", &type)))
		return c;
	l->resource = agent_rlimit_parse(type);
	if (l->resource < 0)
		return agent_err_set(p->err, AGENT_E_BAD_FIELD,
				     "%s: 'type' '%.64s' is not a resource limit (RLIMIT_NOFILE, ...)",
				     rp.name, type);
	for (size_t j = 0; j < i; j++)
		if (out->rlimits[j].resource == l->resource)
			return agent_err_set(p->err, AGENT_E_BAD_FIELD, "%s: %s is given twice",
					     rp.name, type);
	if ((c = agent_field_uint(&rp, "soft", true, 0, AGENT_RLIMIT_MAX, 0, &l->soft)) ||
	    (c = agent_field_uint(&rp, "hard", true, 0, AGENT_RLIMIT_MAX, 0, &l->hard)))
		return c;
	if (l->soft > l->hard)
		return agent_err_set(p->err, AGENT_E_BAD_FIELD,
				     "%s: 'soft' %llu is above 'hard' %llu", rp.name,
				     (unsigned long long)l->soft, (unsigned long long)l->hard);
	return AGENT_OK;
}

static enum agent_code parse_rlimits(struct parse *p, struct agent_ctr_privs *out)
{
	json_t *a, *v;
	size_t i;
	enum agent_code c = agent_field_array(p, "rlimits", false, AGENT_CTR_RLIMITS_MAX,
					      "an array of resource limits", &a);

	if (c || !a)
		return c;
	json_array_foreach(a, i, v)
	{
		if ((c = parse_rlimit(p, v, i, out)))
			return c;
		out->nrlimits = i + 1;
	}
	return AGENT_OK;
}

static enum agent_code parse_cap_set(struct parse *p, enum agent_cap_set s, uint64_t *mask)
{
	const char *key = cap_set_names[s];
	json_t *a, *v;
	size_t i;
	enum agent_code c = agent_field_array(p, key, false, AGENT_CTR_CAPS_MAX,
					      "an array of capability names", &a);

	*mask = 0;
	if (c || !a)
		return c;
	json_array_foreach(a, i, v)
	{
		int cap = json_is_string(v) ? agent_cap_parse(json_string_value(v)) : -1;

		if (cap < 0)
			return agent_err_set(
				p->err, AGENT_E_BAD_FIELD,
				"%s: '%s[%zu]' must be a capability the guest kernel has (CAP_CHOWN .. CAP_CHECKPOINT_RESTORE)",
				p->name, key, i);
		*mask |= 1ull << cap;
	}
	return AGENT_OK;
}

static enum agent_code parse_caps(struct parse *p, struct agent_ctr_privs *out)
{
	static const char *const fields[] = { "bounding",    "effective", "permitted",
					      "inheritable", "ambient",   NULL };
	json_t *v = json_object_get(p->obj, "capabilities");
	char name[96];
	struct parse cp;
	enum agent_code c;

	if (!v)
		return AGENT_OK;
	if ((c = agent_sub_object(p, v, "capabilities", fields, name, sizeof(name), &cp)))
		return c;
	for (int s = 0; s < AGENT_CAP_SETS; s++)
		if ((c = parse_cap_set(&cp, (enum agent_cap_set)s, &out->caps[s])))
			return c;
	out->has_caps = true;
	return AGENT_OK;
}

static enum agent_code parse_oom(struct parse *p, struct agent_ctr_privs *out)
{
	json_t *v = json_object_get(p->obj, "oom_score_adj");

	if (!v)
		return AGENT_OK;
	if (!json_is_integer(v) || json_integer_value(v) < -1000 || json_integer_value(v) > 1000)
		return agent_err_set(p->err, AGENT_E_BAD_FIELD,
				     "%s: 'oom_score_adj' must be an integer from -1000 to 1000",
				     p->name);
	out->has_oom_score_adj = true;
	out->oom_score_adj = (int)json_integer_value(v);
	return AGENT_OK;
}

enum agent_code agent_ctr_privs_parse(struct parse *p, struct agent_ctr_privs *out)
{
	enum agent_code c;

	memset(out, 0, sizeof(*out));
	if ((c = parse_rlimits(p, out)) || (c = parse_caps(p, out)) ||
	    (c = agent_field_bool(p, "no_new_privileges", false, &out->no_new_privileges)))
		return c;
	return parse_oom(p, out);
}

/* ---- ctr_create: sysctl, masked_paths, readonly_paths ---- */

static enum agent_code parse_paths(struct parse *p, const char *key, const char ***out, size_t *n)
{
	json_t *a;
	enum agent_code c = agent_field_array(p, key, false, AGENT_CTR_PATHS_MAX,
					      "an array of absolute paths", &a);

	if (c || !a || !json_array_size(a))
		return c;
	if ((c = agent_string_vector(p, key, a, out, n)))
		return c;
	for (size_t i = 0; i < *n; i++) {
		size_t len = strlen((*out)[i]);

		if ((*out)[i][0] != '/' || len > AGENT_PATH_MAX || agent_has_dotdot((*out)[i]))
			return agent_err_set(
				p->err, AGENT_E_BAD_FIELD,
				"%s: '%s[%zu]' must be an absolute path of at most %d bytes without '..', got '%.100s'",
				p->name, key, i, AGENT_PATH_MAX, (*out)[i]);
	}
	return AGENT_OK;
}

static enum agent_code parse_sysctl(struct parse *p, struct agent_ctr_create *c)
{
	json_t *o = json_object_get(p->obj, "sysctl"), *v;
	const char *key;
	size_t i = 0;

	if (!o)
		return AGENT_OK;
	if (!json_is_object(o))
		return agent_err_set(p->err, AGENT_E_BAD_FIELD,
				     "%s: 'sysctl' must be an object of strings, not %s", p->name,
				     json_field_kind(o));
	if (json_object_size(o) > AGENT_CTR_SYSCTL_MAX)
		return agent_err_set(p->err, AGENT_E_TOO_LARGE,
				     "%s: 'sysctl' has %zu entries; at most %d are allowed",
				     p->name, json_object_size(o), AGENT_CTR_SYSCTL_MAX);
	if (!json_object_size(o))
		return AGENT_OK;
	c->sysctl = calloc(json_object_size(o), sizeof(*c->sysctl));
	if (!c->sysctl)
		return agent_no_memory(p);
	json_object_foreach(o, key, v)
	{
		if (!agent_sysctl_key_valid(key))
			return agent_err_set(
				p->err, AGENT_E_BAD_FIELD,
				"%s: sysctl '%.100s' is not a sysctl name ('.'-separated letters, digits, '_', '-'; at most %d bytes)",
				p->name, key, AGENT_SYSCTL_KEY_MAX);
		if (!json_is_string(v) || json_string_length(v) > AGENT_SYSCTL_VALUE_MAX ||
		    strlen(json_string_value(v)) != json_string_length(v))
			return agent_err_set(
				p->err, AGENT_E_BAD_FIELD,
				"%s: sysctl '%.100s' must be a string of at most %d bytes without NUL",
				p->name, key, AGENT_SYSCTL_VALUE_MAX);
		c->sysctl[i++] = (struct agent_sysctl){ key, json_string_value(v) };
		c->nsysctl = i;
	}
	return AGENT_OK;
}

enum agent_code agent_ctr_confine_parse(struct parse *p, struct agent_ctr_create *c)
{
	enum agent_code rc;

	if ((rc = parse_sysctl(p, c)) || (rc = agent_ctr_seccomp_parse(p, c)) ||
	    (rc = parse_paths(p, "masked_paths", &c->masked, &c->nmasked)))
		return rc;
	return parse_paths(p, "readonly_paths", &c->readonly, &c->nreadonly);
}

void agent_ctr_confine_free(struct agent_ctr_create *c)
{
	agent_ctr_seccomp_free(c);
	free(c->sysctl);
	free(c->masked);
	free(c->readonly);
}

/* ---- the encoder ---- */

static json_t *encode_caps(const uint64_t caps[AGENT_CAP_SETS])
{
	json_t *o = json_object();
	bool ok = o != NULL;

	for (int s = 0; ok && s < AGENT_CAP_SETS; s++) {
		json_t *a = json_array();

		ok = agent_put(o, cap_set_names[s], a);
		for (int cap = 0; ok && cap < CAP_COUNT; cap++)
			if (caps[s] & (1ull << cap))
				ok = json_array_append_new(a, json_string(cap_names[cap])) == 0;
	}
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *encode_rlimits(const struct agent_ctr_privs *pv)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < pv->nrlimits; i++) {
		const struct agent_rlimit *l = &pv->rlimits[i];

		if (json_array_append_new(a,
					  json_pack("{s:s,s:I,s:I}", "type",
						    agent_rlimit_name(l->resource), "soft",
						    (json_int_t)l->soft, "hard",
						    (json_int_t)l->hard)) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

int agent_ctr_privs_encode(json_t *o, const struct agent_ctr_privs *pv)
{
	bool ok = true;

	if (pv->nrlimits)
		ok = agent_put(o, "rlimits", encode_rlimits(pv));
	if (ok && pv->has_caps)
		ok = agent_put(o, "capabilities", encode_caps(pv->caps));
	if (ok && pv->no_new_privileges)
		ok = agent_put(o, "no_new_privileges", json_true());
	if (ok && pv->has_oom_score_adj)
		ok = agent_put(o, "oom_score_adj", json_integer(pv->oom_score_adj));
	return ok ? 0 : -ENOMEM;
}

int agent_ctr_confine_encode(json_t *o, const struct agent_ctr_create *c)
{
	json_t *s = c->nsysctl ? json_object() : NULL;
	bool ok = !c->nsysctl || agent_put(o, "sysctl", s);

	for (size_t i = 0; ok && i < c->nsysctl; i++)
		ok = agent_put(s, c->sysctl[i].key, json_string(c->sysctl[i].value));
	if (ok && c->nmasked)
		ok = agent_put(o, "masked_paths", agent_strings(c->masked, c->nmasked));
	if (ok && c->nreadonly)
		ok = agent_put(o, "readonly_paths", agent_strings(c->readonly, c->nreadonly));
	if (ok && c->seccomp)
		ok = agent_put(o, "seccomp", agent_ctr_seccomp_encode(c->seccomp));
	return ok ? 0 : -ENOMEM;
}
