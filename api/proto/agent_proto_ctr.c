/*
 * agent_proto_ctr: the container messages of the agent protocol
 * (docs/agent-protocol.md, 7.9): ctr_create's nested request, ctr_exec
 * (its process object again), the ctr_* by-id requests, their encoders for the host, and the two reply lines.
 * agent_proto.c's message table calls the bodies (agent_proto_parse.h).
 */
#include "api/proto/agent_proto.h"
#include "api/proto/agent_proto_parse.h"
#include "lib/base/json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

/* ---- names ---- */

static const char *const mount_type_names[AGENT_MNT_TYPE_COUNT] = {
	[AGENT_MNT_PROC] = "proc",     [AGENT_MNT_SYSFS] = "sysfs",
	[AGENT_MNT_TMPFS] = "tmpfs",   [AGENT_MNT_DEVPTS] = "devpts",
	[AGENT_MNT_MQUEUE] = "mqueue", [AGENT_MNT_CGROUP2] = "cgroup2",
	[AGENT_MNT_BIND] = "bind",
};

const char *agent_mount_type_name(enum agent_mount_type t)
{
	return agent_name_at(mount_type_names, AGENT_MNT_TYPE_COUNT, (int)t);
}

int agent_mount_type_parse(const char *name)
{
	return agent_name_index(mount_type_names, AGENT_MNT_TYPE_COUNT, name);
}

static const char *const stream_names[AGENT_CTR_STREAMS] = {
	[AGENT_CTR_STDIN] = "stdin",
	[AGENT_CTR_STDOUT] = "stdout",
	[AGENT_CTR_STDERR] = "stderr",
	[AGENT_CTR_PTY] = "pty",
};

const char *agent_ctr_stream_name(enum agent_ctr_stream s)
{
	return agent_name_at(stream_names, AGENT_CTR_STREAMS, (int)s);
}

int agent_ctr_stream_parse(const char *name)
{
	return agent_name_index(stream_names, AGENT_CTR_STREAMS, name);
}

bool agent_cid_valid(const char *s)
{
	size_t n = strlen(s);

	/* The id names a cgroup directory: "." and ".." would name others. */
	if (n == 0 || n > AGENT_CID_MAX || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+-.") == n;
}

bool agent_share_tag_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > AGENT_SHARE_TAG_MAX)
		return false;
	/* ',' and ':' separate kiln.shares= entries; '/' would read as a path. */
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x21 || s[i] > 0x7e || s[i] == '/' || s[i] == ',' || s[i] == ':')
			return false;
	return true;
}

/* ---- mount options ---- */

struct mopt_word {
	const char *word;
	enum agent_mopt kind;
	unsigned long flag;
};

/* mount(8)'s words for the flags mount(2) takes (OCI's mount options). */
static const struct mopt_word mopt_words[] = {
	{ "ro", AGENT_MOPT_SET, MS_RDONLY },
	{ "rw", AGENT_MOPT_CLEAR, MS_RDONLY },
	{ "nosuid", AGENT_MOPT_SET, MS_NOSUID },
	{ "suid", AGENT_MOPT_CLEAR, MS_NOSUID },
	{ "nodev", AGENT_MOPT_SET, MS_NODEV },
	{ "dev", AGENT_MOPT_CLEAR, MS_NODEV },
	{ "noexec", AGENT_MOPT_SET, MS_NOEXEC },
	{ "exec", AGENT_MOPT_CLEAR, MS_NOEXEC },
	{ "sync", AGENT_MOPT_SET, MS_SYNCHRONOUS },
	{ "async", AGENT_MOPT_CLEAR, MS_SYNCHRONOUS },
	{ "dirsync", AGENT_MOPT_SET, MS_DIRSYNC },
	{ "mand", AGENT_MOPT_SET, MS_MANDLOCK },
	{ "nomand", AGENT_MOPT_CLEAR, MS_MANDLOCK },
	{ "atime", AGENT_MOPT_CLEAR, MS_NOATIME },
	{ "noatime", AGENT_MOPT_SET, MS_NOATIME },
	{ "diratime", AGENT_MOPT_CLEAR, MS_NODIRATIME },
	{ "nodiratime", AGENT_MOPT_SET, MS_NODIRATIME },
	{ "relatime", AGENT_MOPT_SET, MS_RELATIME },
	{ "norelatime", AGENT_MOPT_CLEAR, MS_RELATIME },
	{ "strictatime", AGENT_MOPT_SET, MS_STRICTATIME },
	{ "nostrictatime", AGENT_MOPT_CLEAR, MS_STRICTATIME },
	{ "bind", AGENT_MOPT_BIND, 0 },
	{ "rbind", AGENT_MOPT_RBIND, 0 },
	{ "private", AGENT_MOPT_PROPAGATION, 0 },
	{ "rprivate", AGENT_MOPT_PROPAGATION, 0 },
	{ "slave", AGENT_MOPT_PROPAGATION, 0 },
	{ "rslave", AGENT_MOPT_PROPAGATION, 0 },
	{ "shared", AGENT_MOPT_PROPAGATION, 0 },
	{ "rshared", AGENT_MOPT_PROPAGATION, 0 },
	{ "unbindable", AGENT_MOPT_PROPAGATION, 0 },
	{ "runbindable", AGENT_MOPT_PROPAGATION, 0 },
};

enum agent_mopt agent_mount_option(const char *opt, unsigned long *flag)
{
	*flag = 0;
	for (size_t i = 0; i < sizeof(mopt_words) / sizeof(mopt_words[0]); i++) {
		if (strcmp(mopt_words[i].word, opt) == 0) {
			*flag = mopt_words[i].flag;
			return mopt_words[i].kind;
		}
	}
	return AGENT_MOPT_DATA;
}

/* ---- ctr_create ---- */

/* A nested object as its own parse, named "<message> <what>" in messages. */
enum agent_code agent_sub_object(struct parse *p, json_t *v, const char *key,
				 const char *const *fields, char *name, size_t namesz,
				 struct parse *out)
{
	struct json_field_fail f;

	if (!json_is_object(v))
		return agent_err_set(p->err, AGENT_E_BAD_FIELD,
				     "%s: '%s' must be an object, not %s", p->name, key,
				     json_field_kind(v));
	snprintf(name, namesz, "%s %s", p->name, key);
	*out = (struct parse){ .obj = v, .name = name, .ctx = p->ctx, .err = p->err };
	return json_field_only(v, fields, &f) ? agent_field_refused(out, &f, NULL) : AGENT_OK;
}

/* An array field of at most max entries; NULL *out when absent. */
enum agent_code agent_field_array(struct parse *p, const char *key, bool required, size_t max,
				  const char *what, json_t **out)
{
	json_t *a = json_object_get(p->obj, key);

	*out = NULL;
	if (!a)
		return required ? agent_field_missing(p, key, what) : AGENT_OK;
	if (!json_is_array(a))
		return agent_err_set(p->err, AGENT_E_BAD_FIELD, "%s: '%s' must be %s, not %s",
				     p->name, key, what, json_field_kind(a));
	if (json_array_size(a) > max)
		return agent_err_set(p->err, AGENT_E_TOO_LARGE,
				     "%s: '%s' has %zu entries; at most %zu are allowed", p->name,
				     key, json_array_size(a), max);
	*out = a;
	return AGENT_OK;
}

enum agent_code agent_no_memory(struct parse *p)
{
	return agent_err_set(p->err, AGENT_E_BUSY, "%s: out of memory; retry later", p->name);
}

/* An array of strings as a NULL-terminated vector pointing into the JSON. */
enum agent_code agent_string_vector(struct parse *p, const char *key, json_t *a, const char ***out,
				    size_t *n)
{
	json_t *v;
	size_t i;

	json_array_foreach(a, i, v)
	{
		if (!json_is_string(v))
			return agent_err_set(p->err, AGENT_E_BAD_FIELD,
					     "%s: '%s[%zu]' must be a string, not %s", p->name, key,
					     i, json_field_kind(v));
	}
	*out = calloc(json_array_size(a) + 1, sizeof(**out));
	if (!*out)
		return agent_no_memory(p);
	json_array_foreach(a, i, v)(*out)[i] = json_string_value(v);
	*n = json_array_size(a);
	return AGENT_OK;
}

/* True when a '/'-separated path has a ".." component. */
bool agent_has_dotdot(const char *s)
{
	for (const char *c = s; (c = strstr(c, "..")); c += 2)
		if ((c == s || c[-1] == '/') && (c[2] == '\0' || c[2] == '/'))
			return true;
	return false;
}

static enum agent_code get_share(struct parse *p, const char *key, bool required, const char **out)
{
	enum agent_code c = agent_field_string(p, key, required, "a virtio-fs share tag", out);

	if (c || !*out)
		return c;
	if (!agent_share_tag_valid(*out))
		return agent_err_set(
			p->err, AGENT_E_BAD_FIELD,
			"%s: '%s' must be a virtio-fs tag: 1..%d printable ASCII bytes without '/', ',' or ':', got '%.100s'",
			p->name, key, AGENT_SHARE_TAG_MAX, *out);
	return AGENT_OK;
}

/* A path beneath a share: relative, without "..", bounded. */
static enum agent_code get_source(struct parse *p, bool required, const char **out)
{
	enum agent_code c = agent_field_string(p, "source", required,
					       "a path relative to the share", out);
	size_t n;

	if (c || !*out)
		return c;
	n = strlen(*out);
	if (n > AGENT_PATH_MAX)
		return agent_err_set(p->err, AGENT_E_TOO_LARGE,
				     "%s: 'source' is %zu bytes; paths are at most %d bytes",
				     p->name, n, AGENT_PATH_MAX);
	if ((*out)[0] == '/' || agent_has_dotdot(*out))
		return agent_err_set(
			p->err, AGENT_E_BAD_FIELD,
			"%s: 'source' must be relative to the share, without '..', got '%.200s'",
			p->name, *out);
	return AGENT_OK;
}

static enum agent_code parse_rootfs(struct parse *p, struct agent_ctr_create *c)
{
	static const char *const fields[] = { "share", "source", "readonly", NULL };
	json_t *v = json_object_get(p->obj, "rootfs");
	char name[64];
	struct parse sp;
	enum agent_code rc;

	if (!v)
		return agent_field_missing(p, "rootfs", "an object with the root's share");
	if ((rc = agent_sub_object(p, v, "rootfs", fields, name, sizeof(name), &sp)) ||
	    (rc = get_share(&sp, "share", true, &c->root_share)) ||
	    (rc = get_source(&sp, false, &c->root_source)))
		return rc;
	return agent_field_bool(&sp, "readonly", false, &c->root_readonly);
}

/* A mount's options: the count, each word's form, and the data they join into. */
static enum agent_code parse_options(struct parse *p, struct agent_ctr_mount *m)
{
	json_t *a;
	size_t data = 0;
	unsigned long flag;
	enum agent_code c = agent_field_array(p, "options", false, AGENT_CTR_OPTIONS_MAX,
					      "an array of strings", &a);

	if (c || !a)
		return c;
	if ((c = agent_string_vector(p, "options", a, &m->options, &m->optc)))
		return c;
	for (size_t i = 0; i < m->optc; i++) {
		size_t n = strlen(m->options[i]);

		if (n == 0 || n > AGENT_CTR_OPTION_MAX || strchr(m->options[i], ','))
			return agent_err_set(
				p->err, AGENT_E_BAD_FIELD,
				"%s: 'options[%zu]' must be 1..%d bytes without ',', got '%.100s'",
				p->name, i, AGENT_CTR_OPTION_MAX, m->options[i]);
		if (agent_mount_option(m->options[i], &flag) == AGENT_MOPT_DATA)
			data += n + (data ? 1 : 0);
	}
	if (data > AGENT_CTR_DATA_MAX)
		return agent_err_set(p->err, AGENT_E_TOO_LARGE,
				     "%s: the filesystem's options come to %zu bytes; at most %d",
				     p->name, data, AGENT_CTR_DATA_MAX);
	return AGENT_OK;
}

static enum agent_code parse_bind(struct parse *p, struct agent_ctr_mount *m)
{
	enum agent_code c;

	if (m->type != AGENT_MNT_BIND) {
		const char *k = json_object_get(p->obj, "share") ? "share" : "source";

		if (!json_object_get(p->obj, k))
			return AGENT_OK;
		return agent_err_set(p->err, AGENT_E_BAD_FIELD,
				     "%s: '%s' belongs to a bind; a %s mount is made in the guest",
				     p->name, k, mount_type_names[m->type]);
	}
	if ((c = get_share(p, "share", true, &m->share)))
		return c;
	return get_source(p, true, &m->source);
}

static enum agent_code parse_mount(struct parse *p, json_t *v, size_t i, struct agent_ctr_mount *m)
{
	static const char *const fields[] = { "destination", "type",   "options",
					      "share",       "source", NULL };
	char key[32], name[96];
	struct parse mp;
	const char *type;
	enum agent_code c;
	int t;

	snprintf(key, sizeof(key), "mounts[%zu]", i);
	if ((c = agent_sub_object(p, v, key, fields, name, sizeof(name), &mp)) ||
	    (c = agent_field_path(&mp, "destination", true, &m->destination)))
		return c;
	if (agent_has_dotdot(m->destination))
		return agent_err_set(p->err, AGENT_E_BAD_FIELD,
				     "%s: 'destination' must not have a '..' component, got '%.200s'",
				     mp.name, m->destination);
	if ((c = agent_field_string(&mp, "type", true, "a mount type", &type)))
		return c;
	t = agent_mount_type_parse(type);
	if (t < 0)
		return agent_err_set(
			p->err, AGENT_E_BAD_FIELD,
			"%s: 'type' must be proc, sysfs, tmpfs, devpts, mqueue, cgroup2 or bind, got '%.100s'",
			mp.name, type);
	m->type = (enum agent_mount_type)t;
	if ((c = parse_options(&mp, m)))
		return c;
	return parse_bind(&mp, m);
}

static enum agent_code parse_mounts(struct parse *p, struct agent_ctr_create *c)
{
	json_t *a, *v;
	size_t i;
	enum agent_code rc = agent_field_array(p, "mounts", false, AGENT_CTR_MOUNTS_MAX,
					       "an array of mounts", &a);

	if (rc || !a || !json_array_size(a))
		return rc;
	c->mounts = calloc(json_array_size(a), sizeof(*c->mounts));
	if (!c->mounts)
		return agent_no_memory(p);
	json_array_foreach(a, i, v)
	{
		c->nmounts = i + 1; /* what agent_ctr_create_free must look at */
		if ((rc = parse_mount(p, v, i, &c->mounts[i])))
			return rc;
	}
	return AGENT_OK;
}

static enum agent_code parse_args(struct parse *p, struct agent_ctr_process *r)
{
	json_t *a;
	enum agent_code c = agent_field_array(p, "args", true, AGENT_ARGV_MAX,
					      "an array of strings", &a);

	if (c)
		return c;
	if (!json_array_size(a))
		return agent_err_set(p->err, AGENT_E_BAD_FIELD,
				     "%s: 'args' must have at least one entry (args[0] is the program)",
				     p->name);
	if ((c = agent_string_vector(p, "args", a, &r->args, &r->argc)))
		return c;
	if (!r->args[0][0])
		return agent_err_set(p->err, AGENT_E_BAD_FIELD,
				     "%s: 'args[0]' must not be empty (it is the program to run)",
				     p->name);
	return AGENT_OK;
}

static enum agent_code parse_ctr_env(struct parse *p, struct agent_ctr_process *r)
{
	json_t *a;
	enum agent_code c = agent_field_array(p, "env", false, AGENT_ENV_MAX,
					      "an array of KEY=VALUE strings", &a);

	if (c)
		return c;
	if (!a) {
		r->env = calloc(1, sizeof(*r->env));
		return r->env ? AGENT_OK : agent_no_memory(p);
	}
	if ((c = agent_string_vector(p, "env", a, &r->env, &r->envc)))
		return c;
	for (size_t i = 0; i < r->envc; i++) {
		const char *eq = strchr(r->env[i], '=');

		if (!eq || eq == r->env[i])
			return agent_err_set(
				p->err, AGENT_E_BAD_FIELD,
				"%s: 'env[%zu]' must be KEY=VALUE with a non-empty KEY, got '%.100s'",
				p->name, i, r->env[i]);
	}
	return AGENT_OK;
}

static enum agent_code parse_groups(struct parse *p, struct agent_ctr_process *r)
{
	json_t *a, *v;
	size_t i;
	enum agent_code c = agent_field_array(p, "additional_gids", false, AGENT_CTR_GROUPS_MAX,
					      "an array of group ids", &a);

	if (c || !a || !json_array_size(a))
		return c;
	json_array_foreach(a, i, v)
	{
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > (json_int_t)AGENT_CTR_ID_MAX)
			return agent_err_set(
				p->err, AGENT_E_BAD_FIELD,
				"%s: 'additional_gids[%zu]' must be an integer from 0 to %u",
				p->name, i, AGENT_CTR_ID_MAX);
	}
	r->groups = calloc(json_array_size(a), sizeof(*r->groups));
	if (!r->groups)
		return agent_no_memory(p);
	json_array_foreach(a, i, v) r->groups[i] = (uint32_t)json_integer_value(v);
	r->ngroups = json_array_size(a);
	return AGENT_OK;
}

static enum agent_code parse_terminal(struct parse *p, struct agent_ctr_process *r)
{
	uint32_t rows, cols;
	enum agent_code c = agent_field_bool(p, "terminal", false, &r->terminal);
	bool has_rows = json_object_get(p->obj, "rows") != NULL;

	if (c)
		return c;
	if ((has_rows || json_object_get(p->obj, "cols")) && !r->terminal)
		return agent_err_set(p->err, AGENT_E_BAD_FIELD,
				     "%s: '%s' needs \"terminal\": true (only a terminal has a size)",
				     p->name, has_rows ? "rows" : "cols");
	if ((c = agent_field_u32(p, "rows", false, 1, 65535, AGENT_PTY_ROWS_DEFAULT, &rows)) ||
	    (c = agent_field_u32(p, "cols", false, 1, 65535, AGENT_PTY_COLS_DEFAULT, &cols)))
		return c;
	r->rows = (uint16_t)rows;
	r->cols = (uint16_t)cols;
	return AGENT_OK;
}

static enum agent_code parse_process(struct parse *p, struct agent_ctr_process *r)
{
	static const char *const fields[] = { "args",
					      "env",
					      "cwd",
					      "uid",
					      "gid",
					      "additional_gids",
					      "umask",
					      "terminal",
					      "rows",
					      "cols",
					      "rlimits",
					      "capabilities",
					      "no_new_privileges",
					      "oom_score_adj",
					      NULL };
	json_t *v = json_object_get(p->obj, "process");
	char name[64];
	struct parse pp;
	enum agent_code c;

	if (!v)
		return agent_field_missing(p, "process", "an object with the process's args");
	if ((c = agent_sub_object(p, v, "process", fields, name, sizeof(name), &pp)) ||
	    (c = parse_args(&pp, r)) || (c = parse_ctr_env(&pp, r)) ||
	    (c = agent_field_path(&pp, "cwd", false, &r->cwd)) ||
	    (c = agent_field_u32(&pp, "uid", false, 0, AGENT_CTR_ID_MAX, 0, &r->uid)) ||
	    (c = agent_field_u32(&pp, "gid", false, 0, AGENT_CTR_ID_MAX, 0, &r->gid)) ||
	    (c = parse_groups(&pp, r)) ||
	    (c = agent_field_u32(&pp, "umask", false, 0, 0777, AGENT_CTR_UMASK_DEFAULT, &r->umask)))
		return c;
	if (!r->cwd)
		r->cwd = "/";
	if ((c = parse_terminal(&pp, r)))
		return c;
	return agent_ctr_privs_parse(&pp, &r->privs);
}

static enum agent_code get_cid(struct parse *p, const char **cid)
{
	enum agent_code c = agent_field_string(p, "cid", true, "a container id", cid);

	if (c)
		return c;
	if (strlen(*cid) > AGENT_CID_MAX)
		return agent_err_set(p->err, AGENT_E_TOO_LARGE,
				     "%s: 'cid' is %zu bytes; container ids are at most %d",
				     p->name, strlen(*cid), AGENT_CID_MAX);
	if (!agent_cid_valid(*cid))
		return agent_err_set(
			p->err, AGENT_E_BAD_FIELD,
			"%s: 'cid' must be letters, digits, '_', '+', '-' and '.' (not . or ..), got '%.100s'",
			p->name, *cid);
	return AGENT_OK;
}

enum agent_code agent_ctr_create_body(struct parse *p, struct agent_msg *m)
{
	struct agent_ctr_create *c = &m->u.ctr_create;
	enum agent_code rc;

	if ((rc = get_cid(p, &c->cid)) || (rc = parse_rootfs(p, c)) || (rc = parse_mounts(p, c)) ||
	    (rc = parse_process(p, &c->proc)) ||
	    (rc = agent_field_string(p, "hostname", false, "a hostname", &c->hostname)) ||
	    (rc = agent_field_uint(p, "pids_max", false, 1, AGENT_CTR_PIDS_MAX, 0, &c->pids_max)) ||
	    (rc = agent_ctr_confine_parse(p, c)))
		return rc;
	if (c->hostname && !agent_hostname_valid(c->hostname))
		return agent_err_set(
			p->err, AGENT_E_BAD_FIELD,
			"%s: 'hostname' '%.100s' is not a valid hostname (1..64 bytes; labels of letters, digits and '-')",
			p->name, c->hostname);
	return AGENT_OK;
}

void agent_ctr_process_free(struct agent_ctr_process *r)
{
	free(r->args);
	free(r->env);
	free(r->groups);
}

void agent_ctr_create_free(struct agent_ctr_create *c)
{
	for (size_t i = 0; i < c->nmounts; i++)
		free(c->mounts[i].options);
	free(c->mounts);
	agent_ctr_process_free(&c->proc);
	agent_ctr_confine_free(c);
}

/* ---- ctr_exec ---- */

enum agent_code agent_ctr_exec_body(struct parse *p, struct agent_msg *m)
{
	struct agent_ctr_exec *x = &m->u.ctr_exec;
	enum agent_code rc;

	/* 0 is the init, which only ctr_create makes. */
	if ((rc = get_cid(p, &x->cid)) ||
	    (rc = agent_field_u32(p, "exec", true, 1, UINT32_MAX, 0, &x->exec)))
		return rc;
	return parse_process(p, &x->proc);
}

/* ---- the by-id requests ---- */

static enum agent_code parse_stream(struct parse *p, struct agent_ctr_req *r)
{
	const char *s;
	enum agent_code c = agent_field_string(p, "stream", true,
					       "\"stdin\", \"stdout\", \"stderr\" or \"pty\"", &s);
	int k;

	if (c)
		return c;
	k = agent_ctr_stream_parse(s);
	if (k < 0)
		return agent_err_set(
			p->err, AGENT_E_BAD_FIELD,
			"%s: 'stream' must be \"stdin\", \"stdout\", \"stderr\" or \"pty\", got '%.100s'",
			p->name, s);
	r->stream = (enum agent_ctr_stream)k;
	return AGENT_OK;
}

enum agent_code agent_ctr_body(struct parse *p, struct agent_msg *m)
{
	struct agent_ctr_req *r = &m->u.ctr;
	uint32_t rows, cols;
	enum agent_code c = get_cid(p, &r->cid);
	bool takes_exec = m->type != AGENT_T_CTR_DELETE && m->type != AGENT_T_CTR_UPDATE;

	if (c ||
	    (takes_exec && (c = agent_field_u32(p, "exec", false, 0, UINT32_MAX, 0, &r->exec))))
		return c;
	switch (m->type) {
	case AGENT_T_CTR_STDIO:
		return parse_stream(p, r);
	case AGENT_T_CTR_WAIT:
		return agent_field_u32(p, "timeout_ms", false, 0, AGENT_TIMEOUT_MAX_MS, 0,
				       &r->timeout_ms);
	case AGENT_T_CTR_SIGNAL:
		if ((c = agent_field_signal(p, &r->signo)) ||
		    (c = agent_field_bool(p, "all", false, &r->all)))
			return c;
		if (r->all && r->exec)
			return agent_err_set(
				p->err, AGENT_E_BAD_FIELD,
				"%s: 'all' signals the whole container; it goes with exec 0 only",
				p->name);
		return AGENT_OK;
	case AGENT_T_CTR_RESIZE:
		if ((c = agent_field_u32(p, "rows", true, 1, 65535, 0, &rows)) ||
		    (c = agent_field_u32(p, "cols", true, 1, 65535, 0, &cols)))
			return c;
		r->rows = (uint16_t)rows;
		r->cols = (uint16_t)cols;
		return AGENT_OK;
	case AGENT_T_CTR_UPDATE:
		return agent_field_uint(p, "pids_max", true, 0, AGENT_CTR_PIDS_MAX, 0,
					&r->pids_max);
	default:
		return AGENT_OK;
	}
}

/* ---- encoders (the host's side) ---- */

/* Sets k to v (taken over) in o; false when anything failed. */
bool agent_put(json_t *o, const char *k, json_t *v)
{
	return v && json_object_set_new(o, k, v) == 0;
}

json_t *agent_strings(const char *const *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++) {
		if (json_array_append_new(a, json_string(v[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static json_t *encode_mount(const struct agent_ctr_mount *m)
{
	json_t *o = json_object();
	bool ok = o && agent_put(o, "destination", json_string(m->destination)) &&
		agent_put(o, "type", json_string(agent_mount_type_name(m->type)));

	if (ok && m->optc)
		ok = agent_put(o, "options", agent_strings(m->options, m->optc));
	if (ok && m->share)
		ok = agent_put(o, "share", json_string(m->share));
	if (ok && m->source)
		ok = agent_put(o, "source", json_string(m->source));
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *encode_process(const struct agent_ctr_process *r)
{
	json_t *o = json_object(), *g = json_array();
	bool ok = o && g && agent_put(o, "args", agent_strings(r->args, r->argc)) &&
		agent_put(o, "env", agent_strings(r->env, r->envc)) &&
		agent_put(o, "cwd", json_string(r->cwd ? r->cwd : "/")) &&
		agent_put(o, "uid", json_integer(r->uid)) &&
		agent_put(o, "gid", json_integer(r->gid)) &&
		agent_put(o, "umask", json_integer(r->umask)) &&
		agent_put(o, "terminal", json_boolean(r->terminal));

	for (size_t i = 0; ok && i < r->ngroups; i++)
		ok = json_array_append_new(g, json_integer(r->groups[i])) == 0;
	ok = ok && agent_put(o, "additional_gids", json_incref(g));
	if (ok && r->terminal)
		ok = agent_put(o, "rows", json_integer(r->rows)) &&
			agent_put(o, "cols", json_integer(r->cols));
	ok = ok && agent_ctr_privs_encode(o, &r->privs) == 0;
	json_decref(g);
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *agent_ctr_create_encode(const struct agent_ctr_create *c)
{
	json_t *o = json_object(), *root = json_object(), *mounts = json_array();
	bool ok = o && root && mounts && agent_put(o, "type", json_string("ctr_create")) &&
		agent_put(o, "cid", json_string(c->cid)) &&
		agent_put(root, "share", json_string(c->root_share)) &&
		agent_put(root, "readonly", json_boolean(c->root_readonly)) &&
		(!c->root_source || agent_put(root, "source", json_string(c->root_source))) &&
		agent_put(o, "rootfs", json_incref(root));

	for (size_t i = 0; ok && i < c->nmounts; i++) {
		json_t *m = encode_mount(&c->mounts[i]);

		ok = m && json_array_append_new(mounts, m) == 0;
	}
	ok = ok && agent_put(o, "mounts", json_incref(mounts)) &&
		agent_put(o, "process", encode_process(&c->proc));
	if (ok && c->hostname)
		ok = agent_put(o, "hostname", json_string(c->hostname));
	if (ok && c->pids_max)
		ok = agent_put(o, "pids_max", json_integer((json_int_t)c->pids_max));
	ok = ok && agent_ctr_confine_encode(o, c) == 0;
	json_decref(root);
	json_decref(mounts);
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *agent_ctr_exec_encode(const struct agent_ctr_exec *x)
{
	json_t *o = json_object();
	bool ok = o && agent_put(o, "type", json_string("ctr_exec")) &&
		agent_put(o, "cid", json_string(x->cid)) &&
		agent_put(o, "exec", json_integer(x->exec)) &&
		agent_put(o, "process", encode_process(&x->proc));

	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *agent_ctr_req_encode(enum agent_type t, const struct agent_ctr_req *r)
{
	json_t *o = json_object();
	bool ok = o && agent_put(o, "type", json_string(agent_type_name(t))) &&
		agent_put(o, "cid", json_string(r->cid));

	if (ok && t != AGENT_T_CTR_DELETE && t != AGENT_T_CTR_UPDATE && r->exec)
		ok = agent_put(o, "exec", json_integer(r->exec));
	if (ok && t == AGENT_T_CTR_STDIO)
		ok = agent_put(o, "stream", json_string(agent_ctr_stream_name(r->stream)));
	if (ok && t == AGENT_T_CTR_WAIT && r->timeout_ms)
		ok = agent_put(o, "timeout_ms", json_integer(r->timeout_ms));
	if (ok && t == AGENT_T_CTR_SIGNAL)
		ok = agent_put(o, "signal", json_integer(r->signo)) &&
			agent_put(o, "all", json_boolean(r->all));
	if (ok && t == AGENT_T_CTR_RESIZE)
		ok = agent_put(o, "rows", json_integer(r->rows)) &&
			agent_put(o, "cols", json_integer(r->cols));
	if (ok && t == AGENT_T_CTR_UPDATE)
		ok = agent_put(o, "pids_max", json_integer((json_int_t)r->pids_max));
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* ---- reply lines ---- */

static int line_of(struct agent_line *out, json_t *o)
{
	int r = o ? agent_line_json(out, o) : -ENOMEM;

	json_decref(o);
	return r;
}

int agent_line_ctr_created(struct agent_line *out, const char *cid, uint32_t exec, int pid)
{
	if (!exec)
		return line_of(out,
			       json_pack("{s:s,s:s,s:i}", "type", "ctr_created", "cid", cid, "pid",
					 pid));
	return line_of(out,
		       json_pack("{s:s,s:s,s:I,s:i}", "type", "ctr_created", "cid", cid, "exec",
				 (json_int_t)exec, "pid", pid));
}

int agent_line_ctr_exit(struct agent_line *out, const struct agent_ctr_exit *e)
{
	return line_of(out,
		       json_pack("{s:s,s:s,s:I,s:i,s:o,s:o}", "type", "exit", "cid", e->cid, "exec",
				 (json_int_t)e->exec, "pid", e->pid, "exit_code",
				 e->exit_code >= 0 ? json_integer(e->exit_code) : json_null(),
				 "signal", e->signo > 0 ? json_integer(e->signo) : json_null()));
}
