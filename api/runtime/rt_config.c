/* A bundle's config.json and exec's process.json; see rt_config.h. */
#include "api/runtime/rt_config.h"

#include "api/runtime/rt_pod.h"
#include "api/runtime/rt_config_read.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/json.h"

/* JSON null reads as absent: Go writes nil as null. */
json_t *cfg_member(const json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_null(v) ? NULL : v;
}

/* "process.user" + "uid" -> "process.user.uid" into buf. */
const char *cfg_path_of(char buf[WHERE_MAX], const char *where, const char *key)
{
	snprintf(buf, WHERE_MAX, "%s%s%s", where, *where ? "." : "", key);
	return buf;
}

int cfg_not_a(const json_t *v, const char *what, const char *where, struct err *e)
{
	return err_set(e, EINVAL, "config.json: %s is %s, not %s", where, json_field_kind(v), what);
}

/* An object member (NULL when absent). */
int cfg_get_object(const json_t *o, const char *key, const char *where, json_t **out, struct err *e)
{
	char w[WHERE_MAX];

	*out = cfg_member(o, key);
	if (*out && !json_is_object(*out))
		return cfg_not_a(*out, "an object", cfg_path_of(w, where, key), e);
	return 0;
}

/* A string of at most max bytes (NULL when absent and not required). */
int cfg_get_string(const json_t *o, const char *key, bool required, size_t max, const char *where,
		   const char **out, struct err *e)
{
	json_t *v = cfg_member(o, key);
	char w[WHERE_MAX];

	*out = NULL;
	cfg_path_of(w, where, key);
	if (!v)
		return required ? err_set(e, EINVAL, "config.json: %s is missing", w) : 0;
	if (!json_is_string(v))
		return cfg_not_a(v, "a string", w, e);
	if (json_string_length(v) > max)
		return err_set(e, EINVAL, "config.json: %s is longer than %zu bytes", w, max);
	*out = json_string_value(v);
	return 0;
}

int cfg_get_bool(const json_t *o, const char *key, const char *where, bool *out, struct err *e)
{
	json_t *v = cfg_member(o, key);
	char w[WHERE_MAX];

	*out = false;
	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return cfg_not_a(v, "true or false", cfg_path_of(w, where, key), e);
	*out = json_is_true(v);
	return 0;
}

/* An integer in [min, max]; *has false when absent. */
int cfg_get_int(const json_t *o, const char *key, const char *where, int64_t min, int64_t max,
		bool *has, int64_t *out, struct err *e)
{
	json_t *v = cfg_member(o, key);
	char w[WHERE_MAX];

	*has = v != NULL;
	if (!v)
		return 0;
	cfg_path_of(w, where, key);
	if (!json_is_integer(v))
		return cfg_not_a(v, "an integer", w, e);
	if (json_integer_value(v) < min || json_integer_value(v) > max)
		return err_set(e, EINVAL, "config.json: %s is %lld, outside %lld..%lld", w,
			       (long long)json_integer_value(v), (long long)min, (long long)max);
	*out = json_integer_value(v);
	return 0;
}

/* An array member of at most max elements (NULL when absent). */
int cfg_get_array(const json_t *o, const char *key, size_t max, const char *where, json_t **out,
		  struct err *e)
{
	char w[WHERE_MAX];

	*out = cfg_member(o, key);
	if (!*out)
		return 0;
	cfg_path_of(w, where, key);
	if (!json_is_array(*out))
		return cfg_not_a(*out, "an array", w, e);
	if (json_array_size(*out) > max)
		return err_set(e, EINVAL,
			       "config.json: %s has %zu entries, at most %zu are allowed", w,
			       json_array_size(*out), max);
	return 0;
}

/* An array of strings, each at most len bytes, into a new array *out. */
int cfg_get_strings(const json_t *o, const char *key, size_t len, const char *where,
		    const char ***out, size_t *n, struct err *e)
{
	json_t *a;
	char w[WHERE_MAX];

	*out = NULL;
	*n = 0;
	if (cfg_get_array(o, key, RT_CONFIG_LIST_MAX, where, &a, e) < 0)
		return -EINVAL;
	if (!a || !json_array_size(a))
		return 0;
	cfg_path_of(w, where, key);
	/* NULL-terminated: args and env go to execve as they are */
	*out = calloc(json_array_size(a) + 1, sizeof(char *));
	if (!*out)
		return err_set(e, ENOMEM, "config.json: out of memory reading %s", w);
	for (size_t i = 0; i < json_array_size(a); i++) {
		json_t *s = json_array_get(a, i);

		if (!json_is_string(s))
			return err_set(e, EINVAL, "config.json: %s[%zu] is %s, not a string", w, i,
				       json_field_kind(s));
		if (json_string_length(s) > len)
			return err_set(e, EINVAL, "config.json: %s[%zu] is longer than %zu bytes",
				       w, i, len);
		(*out)[(*n)++] = json_string_value(s);
	}
	return 0;
}

int cfg_absolute(const char *p, const char *where, struct err *e)
{
	if (p && p[0] != '/')
		return err_set(e, EINVAL, "config.json: %s \"%.100s\" is not an absolute path",
			       where, p);
	return 0;
}

static int read_gids(const json_t *user, struct rt_process *p, struct err *e)
{
	json_t *a;

	if (cfg_get_array(user, "additionalGids", RT_CONFIG_LIST_MAX, "process.user", &a, e) < 0)
		return -EINVAL;
	if (!a || !json_array_size(a))
		return 0;
	p->gids = calloc(json_array_size(a), sizeof(uint32_t));
	if (!p->gids)
		return err_set(e, ENOMEM, "config.json: out of memory reading additionalGids");
	for (size_t i = 0; i < json_array_size(a); i++) {
		json_t *g = json_array_get(a, i);

		if (!json_is_integer(g) || json_integer_value(g) < 0 ||
		    json_integer_value(g) > UINT32_MAX - 1)
			return err_set(e, EINVAL,
				       "config.json: process.user.additionalGids[%zu] is not a gid "
				       "(0..4294967294)",
				       i);
		p->gids[p->ngids++] = (uint32_t)json_integer_value(g);
	}
	return 0;
}

/* process.user: numeric ids (runc reads no passwd file; the engine has
 * resolved names into the config). */
static int read_user(const json_t *proc, struct rt_process *p, struct err *e)
{
	json_t *u;
	bool has;
	int64_t v = 0;

	if (cfg_get_object(proc, "user", "process", &u, e) < 0)
		return -EINVAL;
	if (!u)
		return 0;
	if (cfg_get_int(u, "uid", "process.user", 0, UINT32_MAX - 1, &has, &v, e) < 0)
		return -EINVAL;
	p->uid = has ? (uint32_t)v : 0;
	if (cfg_get_int(u, "gid", "process.user", 0, UINT32_MAX - 1, &has, &v, e) < 0)
		return -EINVAL;
	p->gid = has ? (uint32_t)v : 0;
	if (cfg_get_int(u, "umask", "process.user", 0, 0777, &p->has_umask, &v, e) < 0)
		return -EINVAL;
	p->umask = p->has_umask ? (uint32_t)v : 0;
	return read_gids(u, p, e);
}

static int read_console(const json_t *proc, struct rt_process *p, struct err *e)
{
	json_t *c;
	bool has;
	int64_t v = 0;

	if (cfg_get_object(proc, "consoleSize", "process", &c, e) < 0)
		return -EINVAL;
	if (!c)
		return 0;
	if (cfg_get_int(c, "height", "process.consoleSize", 0, 65535, &has, &v, e) < 0)
		return -EINVAL;
	p->rows = has ? (unsigned)v : 0;
	if (cfg_get_int(c, "width", "process.consoleSize", 0, 65535, &has, &v, e) < 0)
		return -EINVAL;
	p->cols = has ? (unsigned)v : 0;
	return 0;
}

static int read_process(const json_t *proc, struct rt_process *p, struct err *e)
{
	if (cfg_get_strings(proc, "args", RT_CONFIG_ARG_MAX, "process", &p->args, &p->nargs, e) <
		    0 ||
	    cfg_get_strings(proc, "env", RT_CONFIG_ARG_MAX, "process", &p->env, &p->nenv, e) < 0)
		return -EINVAL;
	if (p->nargs == 0 || !p->args[0][0])
		return err_set(e, EINVAL,
			       "config.json: process.args is empty: give the command to run");
	/* runc's rule (and the agent's): NAME=VALUE with a name */
	for (size_t i = 0; i < p->nenv; i++)
		if (p->env[i][0] == '=' || !strchr(p->env[i], '='))
			return err_set(e, EINVAL,
				       "config.json: process.env[%zu] \"%.64s\": invalid environment "
				       "variable: want NAME=VALUE",
				       i, p->env[i]);
	if (cfg_get_string(proc, "cwd", true, RT_PATH_MAX - 1, "process", &p->cwd, e) < 0 ||
	    cfg_absolute(p->cwd, "process.cwd", e) < 0)
		return -EINVAL;
	if (cfg_get_bool(proc, "terminal", "process", &p->terminal, e) < 0 ||
	    rt_config_read_privs(proc, p, e) < 0 || read_console(proc, p, e) < 0)
		return -EINVAL;
	return read_user(proc, p, e);
}

void rt_process_free(struct rt_process *p)
{
	free(p->args);
	free(p->env);
	free(p->gids);
	memset(p, 0, sizeof(*p));
}

/* The whole document: bounded, strict, an object. */
static json_t *load(const char *buf, size_t n, const char *name, struct err *e)
{
	json_error_t je;
	json_t *j;

	if (n > RT_CONFIG_FILE_MAX) {
		err_set(e, EINVAL, "%s is larger than %u bytes", name, RT_CONFIG_FILE_MAX);
		return NULL;
	}
	j = json_strict_loadb(buf, n, &je);
	if (!j) {
		err_set(e, EINVAL, "%s is not JSON: %.200s (line %d)", name, je.text, je.line);
		return NULL;
	}
	if (!json_is_object(j)) {
		err_set(e, EINVAL, "%s is %s, not an object", name, json_field_kind(j));
		json_decref(j);
		return NULL;
	}
	return j;
}

/* The readers word a fault as config.json's; another document's
 * reading names its own document instead. */
static int renamed(int r, const char *doc, struct err *e)
{
	static const char prefix[] = "config.json: ";
	char msg[ERR_MSG_MAX];

	if (r < 0 && e && !strncmp(e->msg, prefix, sizeof(prefix) - 1)) {
		snprintf(msg, sizeof(msg), "%s: %s", doc, e->msg + sizeof(prefix) - 1);
		memcpy(e->msg, msg, sizeof(msg));
	}
	return r;
}

int rt_process_parse(const char *buf, size_t n, struct rt_process *p, json_t **doc, struct err *e)
{
	memset(p, 0, sizeof(*p));
	*doc = load(buf, n, "process.json", e);
	if (!*doc)
		return -EINVAL;
	return renamed(read_process(*doc, p, e), "process.json", e);
}

static bool has_option(const struct rt_mount *m, const char *o)
{
	for (size_t i = 0; i < m->noptions; i++)
		if (strcmp(m->options[i], o) == 0)
			return true;
	return false;
}

bool cfg_has_dotdot(const char *p)
{
	for (const char *s = p; (s = strstr(s, "..")); s += 2)
		if ((s == p || s[-1] == '/') && (s[2] == '/' || !s[2]))
			return true;
	return false;
}

static int read_mount(const json_t *j, size_t i, struct rt_mount *m, struct err *e)
{
	char w[WHERE_MAX];

	snprintf(w, sizeof(w), "mounts[%zu]", i);
	if (!json_is_object(j))
		return cfg_not_a(j, "an object", w, e);
	if (cfg_get_string(j, "destination", true, RT_PATH_MAX - 1, w, &m->destination, e) < 0 ||
	    cfg_get_string(j, "type", false, 255, w, &m->type, e) < 0 ||
	    cfg_get_string(j, "source", false, RT_PATH_MAX - 1, w, &m->source, e) < 0 ||
	    cfg_get_strings(j, "options", 4096, w, &m->options, &m->noptions, e) < 0)
		return -EINVAL;
	if (m->destination[0] != '/')
		return err_set(e, EINVAL,
			       "config.json: %s.destination \"%.100s\" is not an absolute path", w,
			       m->destination);
	/* resolved inside the container's root by the guest, which refuses
	 * a ".." component: say so here, with the field's name */
	if (cfg_has_dotdot(m->destination))
		return err_set(e, EINVAL,
			       "config.json: %s.destination \"%.100s\" has a '..' component", w,
			       m->destination);
	m->bind = (m->type && strcmp(m->type, "bind") == 0) || has_option(m, "bind") ||
		has_option(m, "rbind");
	m->readonly = has_option(m, "ro");
	if (m->bind && !m->source)
		return err_set(e, EINVAL, "config.json: %s is a bind mount without a source", w);
	return 0;
}

static int read_mounts(const json_t *doc, struct rt_config *c, struct err *e)
{
	json_t *a;

	if (cfg_get_array(doc, "mounts", RT_CONFIG_LIST_MAX, "", &a, e) < 0)
		return -EINVAL;
	if (!a || !json_array_size(a))
		return 0;
	c->mounts = calloc(json_array_size(a), sizeof(*c->mounts));
	if (!c->mounts)
		return err_set(e, ENOMEM, "config.json: out of memory reading mounts");
	for (size_t i = 0; i < json_array_size(a); i++) {
		int r = read_mount(json_array_get(a, i), i, &c->mounts[i], e);

		c->nmounts = i + 1;
		if (r < 0)
			return r;
	}
	return 0;
}

static int read_hook(const json_t *j, const char *w, struct rt_hook *h, struct err *e)
{
	bool has;
	int64_t t = 0;

	if (!json_is_object(j))
		return cfg_not_a(j, "an object", w, e);
	if (cfg_get_string(j, "path", true, RT_PATH_MAX - 1, w, &h->path, e) < 0 ||
	    cfg_get_strings(j, "args", RT_CONFIG_ARG_MAX, w, &h->args, &h->nargs, e) < 0 ||
	    cfg_get_strings(j, "env", RT_CONFIG_ARG_MAX, w, &h->env, &h->nenv, e) < 0 ||
	    cfg_get_int(j, "timeout", w, 1, INT32_MAX, &has, &t, e) < 0)
		return -EINVAL;
	h->timeout = has ? (int)t : 0;
	if (h->path[0] != '/')
		return err_set(e, EINVAL, "config.json: %s.path \"%.100s\" is not an absolute path",
			       w, h->path);
	return 0;
}

static int read_hook_list(const json_t *hooks, const char *kind, struct rt_hook_list *l,
			  struct err *e)
{
	json_t *a;
	char w[WHERE_MAX];

	if (cfg_get_array(hooks, kind, RT_CONFIG_HOOKS_MAX, "hooks", &a, e) < 0)
		return -EINVAL;
	if (!a || !json_array_size(a))
		return 0;
	l->hooks = calloc(json_array_size(a), sizeof(*l->hooks));
	if (!l->hooks)
		return err_set(e, ENOMEM, "config.json: out of memory reading hooks");
	for (size_t i = 0; i < json_array_size(a); i++) {
		snprintf(w, sizeof(w), "hooks.%s[%zu]", kind, i);
		l->n = i + 1;
		if (read_hook(json_array_get(a, i), w, &l->hooks[i], e) < 0)
			return -EINVAL;
	}
	return 0;
}

/* createContainer and startContainer run in the container's namespaces,
 * which are inside the VM, where the host's hook binaries are not. */
static int read_hooks(const json_t *doc, struct rt_config *c, struct err *e)
{
	static const char *const inside[] = { "createContainer", "startContainer" };
	json_t *hooks, *a;

	if (cfg_get_object(doc, "hooks", "", &hooks, e) < 0)
		return -EINVAL;
	if (!hooks)
		return 0;
	for (size_t i = 0; i < 2; i++) {
		if (cfg_get_array(hooks, inside[i], RT_CONFIG_HOOKS_MAX, "hooks", &a, e) < 0)
			return -EINVAL;
		if (a && json_array_size(a))
			return err_set(e, EINVAL,
				       "config.json: hooks.%s is not supported: those hooks run in "
				       "the container's namespaces, which are inside a VM",
				       inside[i]);
	}
	if (read_hook_list(hooks, "prestart", &c->prestart, e) < 0 ||
	    read_hook_list(hooks, "createRuntime", &c->create_runtime, e) < 0 ||
	    read_hook_list(hooks, "poststart", &c->poststart, e) < 0 ||
	    read_hook_list(hooks, "poststop", &c->poststop, e) < 0)
		return -EINVAL;
	return 0;
}

static const char *const ns_names[RT_NS_COUNT] = {
	[RT_NS_PID] = "pid", [RT_NS_NETWORK] = "network", [RT_NS_MOUNT] = "mount",
	[RT_NS_IPC] = "ipc", [RT_NS_UTS] = "uts",         [RT_NS_CGROUP] = "cgroup",
};

static int ns_type(const char *s, const char *w, enum rt_ns_type *t, struct err *e)
{
	for (int i = 0; i < RT_NS_COUNT; i++) {
		if (strcmp(s, ns_names[i]) == 0) {
			*t = (enum rt_ns_type)i;
			return 0;
		}
	}
	if (strcmp(s, "user") == 0)
		return err_set(e, EINVAL,
			       "config.json: %s: a user namespace for the container is not "
			       "supported yet (Podman --userns, Docker userns-remap); run without one",
			       w);
	if (strcmp(s, "time") == 0)
		return err_set(e, EINVAL,
			       "config.json: %s: time namespaces are not supported: the VM has its "
			       "own clock",
			       w);
	return err_set(e, EINVAL, "config.json: %s.type \"%.32s\" is not a namespace type", w, s);
}

/* Whether the config is a pod's further container (rt_pod.h; its
 * annotations' refusals are create's to say). */
static bool pod_member(const struct rt_config *c)
{
	return rt_pod_role(json_object_get(c->doc, "annotations"), "") == RT_POD_MEMBER;
}

static int read_namespace(const json_t *j, size_t i, struct rt_config *c, struct err *e)
{
	char w[WHERE_MAX];
	const char *type, *path;
	enum rt_ns_type t = RT_NS_PID;

	snprintf(w, sizeof(w), "linux.namespaces[%zu]", i);
	if (!json_is_object(j))
		return cfg_not_a(j, "an object", w, e);
	if (cfg_get_string(j, "type", true, 32, w, &type, e) < 0 ||
	    cfg_get_string(j, "path", false, RT_PATH_MAX - 1, w, &path, e) < 0 ||
	    ns_type(type, w, &t, e) < 0)
		return -EINVAL;
	if (rt_config_ns(c, t))
		return err_set(e, EINVAL, "config.json: %s: namespace %s is listed twice", w, type);
	if (path && !*path)
		path = NULL;
	if (path && cfg_absolute(path, w, e) < 0)
		return -EINVAL;
	/* A network namespace made by the engine's network (netavark, CNI,
	 * libnetwork) is where the VM's TAP goes. A pod's further container
	 * names its sandbox's namespaces: it runs in the sandbox's VM and
	 * shares its network (rt_pod.h); nothing else is joined. */
	if (path && t != RT_NS_NETWORK && !pod_member(c))
		return err_set(
			e, EINVAL,
			"config.json: %s: joining the %s namespace at %.100s is not "
			"supported (only a pod's further container names its sandbox's); give no path",
			w, type, path);
	c->ns[c->nns++] = (struct rt_namespace){ t, path };
	return 0;
}

const struct rt_namespace *rt_config_ns(const struct rt_config *cfg, enum rt_ns_type t)
{
	for (size_t i = 0; i < cfg->nns; i++)
		if (cfg->ns[i].type == t)
			return &cfg->ns[i];
	return NULL;
}

static int read_namespaces(const json_t *lx, struct rt_config *c, struct err *e)
{
	json_t *a;

	if (cfg_get_array(lx, "namespaces", RT_CONFIG_LIST_MAX, "linux", &a, e) < 0)
		return -EINVAL;
	for (size_t i = 0; a && i < json_array_size(a); i++)
		if (read_namespace(json_array_get(a, i), i, c, e) < 0)
			return -EINVAL;
	return 0;
}

/* A limit where -1 means none (runc's convention). */
static int get_limit(const json_t *o, const char *key, const char *where, int64_t *out,
		     struct err *e)
{
	bool has;

	*out = -1;
	return cfg_get_int(o, key, where, -1, INT64_MAX, &has, out, e);
}

/* A LinuxResources object (config.json's linux.resources, update's
 * --resources file) into *r. */
static int read_resources_obj(const json_t *res, struct rt_resources *r, struct err *e)
{
	json_t *mem, *cpu, *pids, *huge;
	bool has;
	int64_t period = 0;

	r->memory_limit = r->cpu_quota = r->pids_limit = -1;
	if (cfg_get_array(res, "hugepageLimits", RT_CONFIG_LIST_MAX, "linux.resources", &huge, e) <
	    0)
		return -EINVAL;
	if (huge && json_array_size(huge))
		return err_set(e, EINVAL,
			       "config.json: linux.resources.hugepageLimits is not supported: the "
			       "guest's memory is not backed by the host's huge pages");
	if (cfg_get_object(res, "memory", "linux.resources", &mem, e) < 0 ||
	    cfg_get_object(res, "cpu", "linux.resources", &cpu, e) < 0 ||
	    cfg_get_object(res, "pids", "linux.resources", &pids, e) < 0)
		return -EINVAL;
	if (mem && get_limit(mem, "limit", "linux.resources.memory", &r->memory_limit, e) < 0)
		return -EINVAL;
	if (cpu &&
	    (get_limit(cpu, "quota", "linux.resources.cpu", &r->cpu_quota, e) < 0 ||
	     cfg_get_int(cpu, "period", "linux.resources.cpu", 0, INT64_MAX, &has, &period, e) <
		     0 ||
	     cfg_get_string(cpu, "cpus", false, 4096, "linux.resources.cpu", &r->cpuset_cpus, e) <
		     0))
		return -EINVAL;
	r->cpu_period = (uint64_t)period;
	r->cpu_quota_given = cpu && json_is_integer(json_object_get(cpu, "quota"));
	if (pids &&
	    cfg_get_int(pids, "limit", "linux.resources.pids", INT64_MIN, INT64_MAX, &has,
			&r->pids_limit, e) < 0)
		return -EINVAL;
	if (r->pids_limit <= 0)
		r->pids_limit = -1; /* runtime-spec: 0 or less is no limit */
	return 0;
}

static int read_resources(const json_t *lx, struct rt_config *c, struct err *e)
{
	json_t *res;

	c->resources.memory_limit = c->resources.cpu_quota = c->resources.pids_limit = -1;
	if (cfg_get_object(lx, "resources", "linux", &res, e) < 0)
		return -EINVAL;
	return res ? read_resources_obj(res, &c->resources, e) : 0;
}

int rt_resources_parse(const char *buf, size_t n, struct rt_resources *r, json_t **doc,
		       struct err *e)
{
	memset(r, 0, sizeof(*r));
	r->memory_limit = r->cpu_quota = r->pids_limit = -1;
	*doc = load(buf, n, "update --resources", e);
	if (!*doc)
		return -EINVAL;
	return renamed(read_resources_obj(*doc, r, e), "update --resources", e);
}

static int read_linux_refusals(const json_t *lx, struct err *e)
{
	static const char *const maps[] = { "uidMappings", "gidMappings" };
	const char *prop;
	json_t *a;

	for (size_t i = 0; i < 2; i++) {
		if (cfg_get_array(lx, maps[i], RT_CONFIG_LIST_MAX, "linux", &a, e) < 0)
			return -EINVAL;
		if (a && json_array_size(a))
			return err_set(e, EINVAL,
				       "config.json: linux.%s: a user namespace for the container "
				       "is not supported yet (Podman --userns, Docker userns-remap); "
				       "run without one",
				       maps[i]);
	}
	if (cfg_member(lx, "intelRdt"))
		return err_set(e, EINVAL,
			       "config.json: linux.intelRdt is not supported: the guest has no "
			       "Intel RDT");
	if (cfg_get_string(lx, "rootfsPropagation", false, 32, "linux", &prop, e) < 0)
		return -EINVAL;
	if (prop && *prop && strcmp(prop, "private") && strcmp(prop, "rprivate") &&
	    strcmp(prop, "slave") && strcmp(prop, "rslave"))
		return err_set(e, EINVAL,
			       "config.json: linux.rootfsPropagation \"%.32s\" is not supported: "
			       "the rootfs is the VM's, nothing propagates to the host; use private "
			       "or slave",
			       prop);
	return 0;
}

static int read_linux(const json_t *doc, struct rt_config *c, struct err *e)
{
	json_t *lx;

	if (cfg_get_object(doc, "linux", "", &lx, e) < 0)
		return -EINVAL;
	if (!lx)
		return 0;
	if (read_linux_refusals(lx, e) < 0 || read_namespaces(lx, c, e) < 0 ||
	    rt_config_read_confine(lx, c, e) < 0 || rt_config_read_seccomp(lx, c, e) < 0 ||
	    cfg_get_string(lx, "cgroupsPath", false, RT_PATH_MAX - 1, "linux", &c->cgroups_path,
			   e) < 0)
		return -EINVAL;
	return read_resources(lx, c, e);
}

static int read_root(const json_t *doc, struct rt_config *c, struct err *e)
{
	json_t *root;

	if (cfg_get_object(doc, "root", "", &root, e) < 0)
		return -EINVAL;
	if (!root)
		return err_set(e, EINVAL, "config.json: root is missing: give root.path");
	if (cfg_get_string(root, "path", true, RT_PATH_MAX - 1, "root", &c->root_path, e) < 0 ||
	    cfg_get_bool(root, "readonly", "root", &c->root_readonly, e) < 0)
		return -EINVAL;
	if (!*c->root_path)
		return err_set(e, EINVAL, "config.json: root.path is empty");
	return 0;
}

/* ociVersion: 1.x (runc reads 1.0 to 1.2; 2.x may change what fields
 * mean). */
static int read_version(const json_t *doc, struct rt_config *c, struct err *e)
{
	if (cfg_get_string(doc, "ociVersion", true, 64, "", &c->oci_version, e) < 0)
		return -EINVAL;
	if (strncmp(c->oci_version, "1.", 2) != 0)
		return err_set(e, EINVAL,
			       "config.json: ociVersion \"%.32s\" is not supported: kiln-runtime "
			       "reads runtime-spec 1.x",
			       c->oci_version);
	return 0;
}

static int read_config(const json_t *doc, struct rt_config *c, struct err *e)
{
	json_t *proc;

	if (read_version(doc, c, e) < 0 || read_root(doc, c, e) < 0)
		return -EINVAL;
	if (cfg_get_object(doc, "process", "", &proc, e) < 0)
		return -EINVAL;
	if (!proc)
		return err_set(e, EINVAL,
			       "config.json: process is missing: give the command to run");
	if (read_process(proc, &c->process, e) < 0 ||
	    cfg_get_string(doc, "hostname", false, RT_HOSTNAME_MAX, "", &c->hostname, e) < 0 ||
	    cfg_get_string(doc, "domainname", false, RT_HOSTNAME_MAX, "", &c->domainname, e) < 0 ||
	    read_mounts(doc, c, e) < 0 || read_hooks(doc, c, e) < 0 || read_linux(doc, c, e) < 0)
		return -EINVAL;
	return rt_annotations_read(cfg_member(doc, "annotations"), "config.json", &c->annotations,
				   e);
}

int rt_config_parse(const char *buf, size_t n, struct rt_config *cfg, struct err *e)
{
	int r;

	memset(cfg, 0, sizeof(*cfg));
	cfg->resources.memory_limit = cfg->resources.cpu_quota = cfg->resources.pids_limit = -1;
	cfg->doc = load(buf, n, "config.json", e);
	if (!cfg->doc)
		return -EINVAL;
	r = read_config(cfg->doc, cfg, e);
	/* rt_annotations_read took a reference of its own: the config's
	 * annotations are borrowed from doc. */
	json_decref(cfg->annotations);
	return r < 0 ? r : 0;
}

static void free_hooks(struct rt_hook_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->hooks[i].args);
		free(l->hooks[i].env);
	}
	free(l->hooks);
	memset(l, 0, sizeof(*l));
}

void rt_config_free(struct rt_config *cfg)
{
	rt_process_free(&cfg->process);
	for (size_t i = 0; i < cfg->nmounts; i++)
		free(cfg->mounts[i].options);
	free(cfg->mounts);
	free(cfg->sysctl);
	free(cfg->masked_paths);
	free(cfg->readonly_paths);
	rt_config_free_seccomp(cfg);
	free_hooks(&cfg->prestart);
	free_hooks(&cfg->create_runtime);
	free_hooks(&cfg->poststart);
	free_hooks(&cfg->poststop);
	json_decref(cfg->doc);
	memset(cfg, 0, sizeof(*cfg));
}
