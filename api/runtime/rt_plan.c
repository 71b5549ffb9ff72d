/* From a parsed config to the VM, its cgroup and ctr_create; see rt_plan.h. */
#include "api/runtime/rt_plan.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/num_parse.h"

#define MIB (1024 * 1024)
#define CPUSET_MAX 1024 /* CPU numbers a cpuset may name */

static const char *annotation(const struct rt_config *c, const char *key)
{
	return json_string_value(json_object_get(c->annotations, key));
}

/* A cpuset list ("0-3,5"): how many CPUs it names. */
static int cpuset_count(const char *s, unsigned *n, struct err *e)
{
	unsigned char seen[CPUSET_MAX / 8] = { 0 };
	const char *p = s;

	*n = 0;
	while (*p) {
		size_t len = strcspn(p, ","), dash = strcspn(p, "-");
		uint64_t lo, hi;

		if (dash > len)
			dash = len;
		if (num_parse_u64_n(p, dash, 10, 0, CPUSET_MAX - 1, &lo) < 0 ||
		    (dash < len &&
		     num_parse_u64_n(p + dash + 1, len - dash - 1, 10, lo, CPUSET_MAX - 1, &hi) <
			     0))
			return err_set(e, EINVAL,
				       "config.json: linux.resources.cpu.cpus \"%.64s\" is not a CPU "
				       "list (\"0-3,5\", CPUs below %d)",
				       s, CPUSET_MAX);
		if (dash == len)
			hi = lo;
		for (uint64_t c = lo; c <= hi; c++) {
			*n += !(seen[c / 8] & (1u << (c % 8)));
			seen[c / 8] |= (unsigned char)(1u << (c % 8));
		}
		p += len + (p[len] == ',');
		if (p[-1] == ',' && !*p)
			return err_set(e, EINVAL,
				       "config.json: linux.resources.cpu.cpus \"%.64s\" is not a CPU "
				       "list (it ends in ',')",
				       s);
	}
	return 0;
}

static int annotation_number(const struct rt_config *c, const char *key, uint64_t min, uint64_t max,
			     uint64_t *out, struct err *e)
{
	const char *v = annotation(c, key);

	if (!v)
		return 0;
	if (num_parse_u64(v, 10, min, max, out) < 0)
		return err_set(e, EINVAL,
			       "annotation %s \"%.32s\": want a number from %llu to %llu", key, v,
			       (unsigned long long)min, (unsigned long long)max);
	return 1;
}

static int size_memory(const struct rt_config *c, struct rt_sizing *s, struct err *e)
{
	int64_t limit = c->resources.memory_limit;
	uint64_t mib = RT_RAM_DEFAULT_MIB;
	int r = annotation_number(c, "io.kiln.memory", RT_RAM_MIN_MIB, RT_RAM_MAX_MIB, &mib, e);

	if (r < 0)
		return r;
	if (!r && limit > 0) {
		mib = ((uint64_t)limit + MIB - 1) / MIB;
		if (mib < RT_RAM_MIN_MIB)
			return err_set(e, EINVAL,
				       "config.json: linux.resources.memory.limit is %lld bytes: a "
				       "kiln VM needs at least %d MiB",
				       (long long)limit, RT_RAM_MIN_MIB);
		if (mib > RT_RAM_MAX_MIB)
			return err_set(e, EINVAL,
				       "config.json: linux.resources.memory.limit is over %u MiB",
				       RT_RAM_MAX_MIB);
	}
	s->mem_mib = (unsigned)mib;
	s->host_memory_max = (int64_t)(mib + RT_VMM_OVERHEAD_MIB) * MIB;
	return 0;
}

static int size_cpus(const struct rt_config *c, struct rt_sizing *s, struct err *e)
{
	const struct rt_resources *res = &c->resources;
	uint64_t cpus = 1;
	unsigned n;
	int r = annotation_number(c, "io.kiln.cpus", 1, RT_CPUS_MAX, &cpus, e);

	if (r < 0)
		return r;
	s->cpu_quota = -1;
	s->cpu_period = res->cpu_period ? res->cpu_period : RT_CPU_PERIOD_DEFAULT;
	if (res->cpu_quota > 0) {
		s->cpu_quota = res->cpu_quota;
		if (!r)
			cpus = ((uint64_t)res->cpu_quota + s->cpu_period - 1) / s->cpu_period;
	} else if (res->cpuset_cpus && *res->cpuset_cpus) {
		if (cpuset_count(res->cpuset_cpus, &n, e) < 0)
			return -EINVAL;
		if (!r)
			cpus = n;
	}
	/* More vCPUs than the quota pays for would only be throttled;
	 * above kiln-vmm's bound the quota still holds on the host. */
	s->cpus = (unsigned)(cpus > RT_CPUS_MAX ? RT_CPUS_MAX : cpus < 1 ? 1 : cpus);
	return 0;
}

/* io.kiln.kernel names a file in kiln's own lib directory: a plain name. */
static int kernel_choice(const struct rt_config *c, struct rt_sizing *s, struct err *e)
{
	const char *k = annotation(c, "io.kiln.kernel");

	s->kernel = k;
	if (!k)
		return 0;
	if (!*k || strlen(k) > 64 ||
	    strspn(k,
		   "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		   "0123456789._-") != strlen(k) ||
	    k[0] == '.')
		return err_set(e, EINVAL,
			       "annotation io.kiln.kernel \"%.64s\": want the name of a kernel file "
			       "in kiln's lib directory (letters, digits, . _ -)",
			       k);
	return 0;
}

int rt_plan_sizing(const struct rt_config *c, struct rt_sizing *s, struct err *e)
{
	memset(s, 0, sizeof(*s));
	if (annotation(c, "io.kiln.firewall"))
		return err_set(e, EINVAL,
			       "annotation io.kiln.firewall is not supported yet (it comes with the "
			       "container network); leave it out");
	if (size_memory(c, s, e) < 0 || size_cpus(c, s, e) < 0 || rt_warm_wanted(c, e) < 0)
		return -EINVAL;
	return kernel_choice(c, s, e);
}

int rt_plan_update(const struct rt_sizing *boot, const struct rt_resources *req,
		   const char *current, char cpu_max[RT_CPU_MAX_LEN], struct err *e)
{
	char quota[24] = "max";

	if (req->pids_limit > AGENT_CTR_PIDS_MAX)
		return err_set(e, EINVAL,
			       "update: pids.limit %lld is above the guest kernel's %d processes",
			       (long long)req->pids_limit, AGENT_CTR_PIDS_MAX);
	if (req->cpuset_cpus)
		return err_set(e, EINVAL,
			       "update: cpuset.cpus: a kiln VM's %u vCPUs are fixed at boot: leave "
			       "it out (cpu quota and period are taken)",
			       boot->cpus);
	if (req->memory_limit > 0 && ((uint64_t)req->memory_limit + MIB - 1) / MIB < boot->mem_mib)
		return err_set(e, EINVAL,
			       "update: memory.limit %lld bytes is below the VM's RAM (%u MiB, "
			       "fixed at boot): a kiln VM's RAM cannot shrink",
			       (long long)req->memory_limit, boot->mem_mib);
	if (!req->cpu_quota_given && !req->cpu_period)
		return 0;
	if (req->cpu_quota > 0)
		snprintf(quota, sizeof(quota), "%lld", (long long)req->cpu_quota);
	else if (!req->cpu_quota_given && current) /* a period alone keeps the quota */
		snprintf(quota, sizeof(quota), "%.*s", (int)strcspn(current, " "), current);
	/* a quota alone keeps the period: cpu.max takes "QUOTA" */
	if (req->cpu_period)
		snprintf(cpu_max, RT_CPU_MAX_LEN, "%s %llu", quota,
			 (unsigned long long)req->cpu_period);
	else
		snprintf(cpu_max, RT_CPU_MAX_LEN, "%s", quota);
	return 1;
}

/* A cgroup path's components: none empty, "." or "..", no control bytes. */
static int cgroup_path_ok(const char *p, const char *what, struct err *e)
{
	const char *s = p;

	while (*s == '/')
		s++;
	while (*s) {
		size_t n = strcspn(s, "/");

		if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return err_set(e, EINVAL,
				       "config.json: %s \"%.100s\" has a '.' or '..' component",
				       what, p);
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
				return err_set(e, EINVAL,
					       "config.json: %s holds a control character", what);
		s += n;
		if (*s == '/' && s[1] == '/')
			return err_set(e, EINVAL,
				       "config.json: %s \"%.100s\" has an empty component", what,
				       p);
		while (*s == '/')
			s++;
	}
	return 0;
}

/* "a-b-c.slice" -> "a.slice/a-b.slice/a-b-c.slice" (systemd's nesting;
 * "-.slice", the root slice, is ""). */
static int slice_path(const char *slice, size_t len, char *out, size_t cap, struct err *e)
{
	size_t k = 0;

	out[0] = '\0';
	if (len == 7 && strncmp(slice, "-.slice", 7) == 0)
		return 0;
	if (len < 7 || strncmp(slice + len - 6, ".slice", 6) != 0 || memchr(slice, '/', len))
		return err_set(e, EINVAL,
			       "config.json: linux.cgroupsPath: \"%.*s\" is not a systemd slice "
			       "name (NAME.slice)",
			       (int)(len > 64 ? 64 : len), slice);
	for (size_t i = 0; i < len - 6; i++) {
		if (slice[i] != '-')
			continue;
		if (i == 0 || slice[i - 1] == '-' || i == len - 7)
			return err_set(e, EINVAL,
				       "config.json: linux.cgroupsPath: slice \"%.*s\" has an empty "
				       "part",
				       (int)(len > 64 ? 64 : len), slice);
		k += (size_t)snprintf(out + k, k < cap ? cap - k : 0, "%.*s.slice/", (int)i, slice);
	}
	k += (size_t)snprintf(out + k, k < cap ? cap - k : 0, "%.*s", (int)len, slice);
	return k < cap ? 0 : err_set(e, ENAMETOOLONG, "config.json: linux.cgroupsPath is too long");
}

/* The unit: "prefix-name.scope", "name.scope" without a prefix, or a
 * slice named as the name itself. */
static int unit_name(const char *prefix, size_t plen, const char *name, char *out, size_t cap)
{
	size_t n = strlen(name);

	if (n > 6 && strcmp(name + n - 6, ".slice") == 0)
		return snprintf(out, cap, "%s", name);
	if (!plen)
		return snprintf(out, cap, "%s.scope", name);
	return snprintf(out, cap, "%.*s-%s.scope", (int)plen, prefix, name);
}

static int systemd_cgroup(const char *path, char *out, size_t cap, struct err *e)
{
	const char *c1 = strchr(path, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	char slice[RT_PATH_MAX], unit[RT_PATH_MAX];
	size_t n;

	if (!c1 || !c2 || strchr(c2 + 1, ':'))
		return err_set(e, EINVAL,
			       "config.json: linux.cgroupsPath \"%.100s\": with --systemd-cgroup "
			       "want slice:prefix:name",
			       path);
	if (!c2[1] || strchr(c2 + 1, '/') || memchr(c1 + 1, '/', (size_t)(c2 - c1 - 1)) ||
	    !strcmp(c2 + 1, ".") || !strcmp(c2 + 1, "..") ||
	    cgroup_path_ok(path, "linux.cgroupsPath", e) < 0)
		return err_set(e, EINVAL,
			       "config.json: linux.cgroupsPath \"%.100s\": the prefix and name must "
			       "be plain names",
			       path);
	if (c1 == path)
		snprintf(slice, sizeof(slice), "system.slice");
	else if (slice_path(path, (size_t)(c1 - path), slice, sizeof(slice), e) < 0)
		return -EINVAL;
	if ((size_t)unit_name(c1 + 1, (size_t)(c2 - c1 - 1), c2 + 1, unit, sizeof(unit)) >=
	    sizeof(unit))
		return err_set(e, ENAMETOOLONG, "config.json: linux.cgroupsPath is too long");
	n = (size_t)snprintf(out, cap, "/sys/fs/cgroup/%s%s%s", slice, *slice ? "/" : "", unit);
	return n < cap ? 0 : err_set(e, ENAMETOOLONG, "config.json: linux.cgroupsPath is too long");
}

int rt_plan_cgroup(const struct rt_config *c, const char *id, bool systemd, char *out, size_t cap,
		   struct err *e)
{
	const char *p = c->cgroups_path;
	size_t n;

	if (p && !*p)
		p = NULL;
	if (systemd) {
		char def[RT_ID_MAX + 32];

		if (!p) {
			snprintf(def, sizeof(def), "system.slice:kiln-runtime:%s", id);
			p = def;
		}
		return systemd_cgroup(p, out, cap, e);
	}
	if (p && strchr(p, ':') && p[0] != '/')
		return err_set(e, EINVAL,
			       "config.json: linux.cgroupsPath \"%.100s\" is systemd's form: pass "
			       "--systemd-cgroup, or give a path",
			       p);
	if (p && cgroup_path_ok(p, "linux.cgroupsPath", e) < 0)
		return -EINVAL;
	/* The container's cgroup is removed at delete: never the root's. */
	if (p && !p[strspn(p, "/")])
		return err_set(e, EINVAL,
			       "config.json: linux.cgroupsPath \"%.32s\" names the root cgroup: "
			       "give a cgroup of the container's own",
			       p);
	if (p)
		n = (size_t)snprintf(out, cap, "/sys/fs/cgroup/%s", p + strspn(p, "/"));
	else
		n = (size_t)snprintf(out, cap, "/sys/fs/cgroup/kiln-runtime/%s", id);
	while (n > 1 && n < cap && out[n - 1] == '/')
		out[--n] = '\0';
	return n < cap ? 0 : err_set(e, ENAMETOOLONG, "config.json: linux.cgroupsPath is too long");
}

/* Options that are the runtime's business, not a filesystem's: crun's
 * and Podman's own words, which a guest mount would refuse. */
static bool runtime_option(const char *o)
{
	static const char *const words[] = { "tmpcopyup", "notmpcopyup", "copy-symlink",
					     "idmap",     "ridmap",      "z",
					     "Z",         "U",           "nocopyup" };

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strcmp(o, words[i]) == 0)
			return true;
	return false;
}

static int mount_options(const struct rt_mount *m, size_t i, json_t *mj, struct err *e)
{
	json_t *a = json_array();
	size_t data = 0;

	if (!a || json_object_set_new(mj, "options", a) < 0)
		return err_set(e, ENOMEM, "out of memory building ctr_create");
	for (size_t k = 0; k < m->noptions; k++) {
		const char *o = m->options[k];

		if (runtime_option(o))
			continue;
		if (!*o || strchr(o, ',') || strlen(o) > 255)
			return err_set(e, EINVAL,
				       "config.json: mounts[%zu].options[%zu] \"%.64s\": an option is "
				       "1 to 255 bytes without ','",
				       i, k, o);
		if (json_array_size(a) >= RT_MOUNT_OPTIONS_MAX)
			return err_set(e, EINVAL,
				       "config.json: mounts[%zu] has more than %d options", i,
				       RT_MOUNT_OPTIONS_MAX);
		data += strlen(o) + 1;
		if (data > RT_MOUNT_DATA_MAX + 1)
			return err_set(e, EINVAL,
				       "config.json: mounts[%zu]'s options are over %d bytes together",
				       i, RT_MOUNT_DATA_MAX);
		json_array_append_new(a, json_string(o));
	}
	return 0;
}

/* The guest's type for a config mount's type, NULL: not made in a VM. */
static const char *guest_type(const struct rt_mount *m)
{
	static const char *const same[] = { "proc", "sysfs", "tmpfs", "devpts", "mqueue" };

	if (m->bind)
		return "bind";
	if (!m->type)
		return NULL;
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++)
		if (strcmp(m->type, same[i]) == 0)
			return same[i];
	if (strcmp(m->type, "cgroup") == 0 || strcmp(m->type, "cgroup2") == 0)
		return "cgroup2";
	return NULL;
}

/* Podman binds a host tmpfs on /dev/shm; the VM's /dev/shm is its own:
 * a guest tmpfs of Podman's default --shm-size. */
static json_t *dev_shm(void)
{
	return json_pack("{s:s,s:s,s:[s,s,s,s,s]}", "destination", "/dev/shm", "type", "tmpfs",
			 "options", "nosuid", "nodev", "noexec", "mode=1777", "size=65536k");
}

static int add_bind(struct rt_plan *p, const struct rt_mount *m, size_t i, json_t *mj,
		    struct err *e)
{
	unsigned idx = 0;
	bool recursive = false;
	char src[RT_CID_MAX + 32];

	if (p->nbinds >= RT_BINDS_MAX)
		return err_set(e, EINVAL, "config.json: more than %d bind mounts", RT_BINDS_MAX);
	if (m->source[0] != '/')
		return err_set(e, EINVAL,
			       "config.json: mounts[%zu].source \"%.100s\": a bind's source must "
			       "be an absolute host path",
			       i, m->source);
	for (size_t k = 0; k < p->nbinds; k++)
		idx += p->binds[k].readonly == m->readonly;
	for (size_t k = 0; k < m->noptions; k++)
		recursive |= strcmp(m->options[k], "rbind") == 0;
	p->binds[p->nbinds++] = (struct rt_bind){ m->source, m->readonly, recursive, idx };
	p->has_ro_binds |= m->readonly;
	p->has_rw_binds |= !m->readonly;
	if (p->member)
		snprintf(src, sizeof(src), "%s/" RT_BINDS_DIR "/%s/%u", p->member,
			 m->readonly ? "ro" : "rw", idx);
	else
		snprintf(src, sizeof(src), "%u", idx);
	if (json_object_set_new(mj, "share",
				json_string(p->member             ? RT_SHARE_POD
						    : m->readonly ? RT_SHARE_BINDS_RO
								  : RT_SHARE_BINDS_RW)) < 0 ||
	    json_object_set_new(mj, "source", json_string(src)) < 0)
		return err_set(e, ENOMEM, "out of memory building ctr_create");
	return 0;
}

static int plan_mount(struct rt_plan *p, const struct rt_mount *m, size_t i, json_t *mounts,
		      struct err *e)
{
	const char *type = guest_type(m);
	json_t *mj;

	if (!type)
		return err_set(e, EINVAL,
			       "config.json: mounts[%zu] (%.100s) of type \"%.32s\" cannot be made "
			       "in a VM: use proc, sysfs, tmpfs, devpts, mqueue, cgroup or a bind",
			       i, m->destination, m->type ? m->type : "");
	if (m->bind && strcmp(m->destination, "/dev/shm") == 0)
		return json_array_append_new(mounts, dev_shm()) < 0
			? err_set(e, ENOMEM, "out of memory building ctr_create")
			: 0;
	mj = json_pack("{s:s,s:s}", "destination", m->destination, "type", type);
	if (!mj || json_array_append_new(mounts, mj) < 0)
		return err_set(e, ENOMEM, "out of memory building ctr_create");
	if (mount_options(m, i, mj, e) < 0)
		return -EINVAL;
	return m->bind ? add_bind(p, m, i, mj, e) : 0;
}

static json_t *strings(const char *const *s, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		if (json_array_append_new(a, json_string(s[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

json_t *rt_plan_process(const struct rt_process *pr)
{
	json_t *gids = json_array();
	json_t *j;

	for (size_t i = 0; gids && i < pr->ngids; i++)
		json_array_append_new(gids, json_integer(pr->gids[i]));
	j = json_pack("{s:o,s:o,s:s,s:I,s:I,s:o,s:b}", "args", strings(pr->args, pr->nargs), "env",
		      strings(pr->env, pr->nenv), "cwd", pr->cwd, "uid", (json_int_t)pr->uid, "gid",
		      (json_int_t)pr->gid, "additional_gids", gids, "terminal", pr->terminal);
	if (j && pr->has_umask)
		json_object_set_new(j, "umask", json_integer(pr->umask));
	if (j && pr->terminal && pr->rows && pr->cols) {
		json_object_set_new(j, "rows", json_integer(pr->rows));
		json_object_set_new(j, "cols", json_integer(pr->cols));
	}
	if (j && agent_ctr_privs_encode(j, &pr->privs) < 0) {
		json_decref(j);
		return NULL;
	}
	return j;
}

/* A hostname as the kernel command line and the guest take it. */
static int hostname_ok(const char *h, struct err *e)
{
	/* the agent's rule (docs/agent-protocol.md, configure): dot-separated
	 * labels of 1..63 letters, digits and '-', none starting or ending
	 * with '-'; said here with the field's name */
	for (const char *l = h;;) {
		size_t n = strcspn(l, ".");

		if (n == 0 || n > 63 || l[0] == '-' || l[n - 1] == '-' ||
		    strspn(l, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") !=
			    n)
			return err_set(e, EINVAL,
				       "config.json: hostname \"%.64s\": want dot-separated labels of "
				       "1 to 63 letters, digits and '-' (not first or last)",
				       h);
		if (!l[n])
			return 0;
		l += n + 1;
	}
}

/* Append to the command line cmd[cap] of *n bytes; once it is full,
 * nothing more (*n then says so: n >= cap). */
static void cmdline_add(char *cmd, size_t cap, size_t *n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void cmdline_add(char *cmd, size_t cap, size_t *n, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (*n >= cap)
		return;
	va_start(ap, fmt);
	w = vsnprintf(cmd + *n, cap - *n, fmt, ap);
	va_end(ap);
	*n = w < 0 ? cap : *n + (size_t)w;
}

int rt_plan_cmdline(const struct rt_warm_shape *sh, const char *hostname, char *out, size_t cap,
		    struct err *e)
{
	size_t n = 0;

	out[0] = '\0';
	cmdline_add(out, cap, &n, "kiln.oci kiln.shares=" RT_SHARE_ROOT ":/run/kiln/root%s",
		    sh->root_ro ? ":ro" : "");
	if (sh->bro)
		cmdline_add(out, cap, &n, "," RT_SHARE_BINDS_RO ":/run/kiln/binds/ro:ro");
	if (sh->brw)
		cmdline_add(out, cap, &n, "," RT_SHARE_BINDS_RW ":/run/kiln/binds/rw");
	if (sh->pod)
		cmdline_add(out, cap, &n, "," RT_SHARE_POD ":/run/kiln/pod");
	if (hostname && *hostname)
		cmdline_add(out, cap, &n, " kiln.hostname=%s", hostname);
	return n < cap ? 0 : err_set(e, E2BIG, "the kernel command line is too long");
}

void rt_plan_shape(const struct rt_plan *p, const struct rt_config *c, const struct rt_sizing *size,
		   struct rt_warm_shape *sh)
{
	*sh = (struct rt_warm_shape){ .mem_mib = size ? size->mem_mib : 0,
				      .cpus = size ? size->cpus : 0,
				      .root_ro = c->root_readonly,
				      .bro = p->has_ro_binds,
				      .brw = p->has_rw_binds,
				      .pod = p->pod_share };
}

static int plan_cmdline(const struct rt_config *c, struct rt_plan *p, struct err *e)
{
	struct rt_warm_shape sh;

	rt_plan_shape(p, c, NULL, &sh);
	return rt_plan_cmdline(&sh, c->hostname, p->cmdline, sizeof(p->cmdline), e);
}

/* A pod's container: its root is <id>/root in the pod's share. */
static int pod_root(struct rt_plan *p, bool readonly, struct err *e)
{
	char src[RT_CID_MAX + 8];

	snprintf(src, sizeof(src), "%s/" RT_POD_ROOT, p->member);
	if (json_object_set_new(p->ctr_create, "rootfs",
				json_pack("{s:s,s:s,s:b}", "share", RT_SHARE_POD, "source", src,
					  "readonly", readonly)) < 0)
		return err_set(e, ENOMEM, "out of memory building ctr_create");
	return 0;
}

static int plan_request(const struct rt_config *c, const char *id, struct rt_plan *p, struct err *e)
{
	json_t *mounts = json_array(), *proc = rt_plan_process(&c->process);
	const struct agent_ctr_create confine = { .sysctl = c->sysctl,
						  .nsysctl = c->nsysctl,
						  .masked = c->masked_paths,
						  .nmasked = c->nmasked,
						  .readonly = c->readonly_paths,
						  .nreadonly = c->nreadonly,
						  .seccomp = c->seccomp };

	p->ctr_create = json_pack("{s:s,s:s,s:{s:s,s:b},s:o,s:o}", "type", "ctr_create", "cid", id,
				  "rootfs", "share", RT_SHARE_ROOT, "readonly", c->root_readonly,
				  "mounts", mounts, "process", proc);
	if (!p->ctr_create)
		return err_set(e, ENOMEM, "out of memory building ctr_create");
	if (p->member && pod_root(p, c->root_readonly, e) < 0)
		return -ENOMEM;
	if (c->hostname && *c->hostname &&
	    json_object_set_new(p->ctr_create, "hostname", json_string(c->hostname)) < 0)
		return err_set(e, ENOMEM, "out of memory building ctr_create");
	/* linux.resources.pids: the guest's cgroup of the container (the
	 * VMM's host cgroup counts the VMM's threads, not the container's) */
	if (c->resources.pids_limit > AGENT_CTR_PIDS_MAX)
		return err_set(e, EINVAL,
			       "config.json: linux.resources.pids.limit %lld is above the guest "
			       "kernel's %d processes: give a lower one or none",
			       (long long)c->resources.pids_limit, AGENT_CTR_PIDS_MAX);
	if (c->resources.pids_limit > 0 &&
	    json_object_set_new(p->ctr_create, "pids_max",
				json_integer((json_int_t)c->resources.pids_limit)) < 0)
		return err_set(e, ENOMEM, "out of memory building ctr_create");
	if (agent_ctr_confine_encode(p->ctr_create, &confine) < 0)
		return err_set(e, ENOMEM, "out of memory building ctr_create");
	if (c->nmounts > RT_MOUNTS_MAX)
		return err_set(e, EINVAL,
			       "config.json: %zu mounts; a VM's container takes at most %d",
			       c->nmounts, RT_MOUNTS_MAX);
	for (size_t i = 0; i < c->nmounts; i++)
		if (plan_mount(p, &c->mounts[i], i, mounts, e) < 0)
			return -EINVAL;
	return 0;
}

int rt_plan_build(const struct rt_config *c, const char *id, enum rt_pod_role pod,
		  struct rt_plan *p, struct err *e)
{
	memset(p, 0, sizeof(*p));
	p->pod_share = pod == RT_POD_SANDBOX;
	p->member = pod == RT_POD_MEMBER ? id : NULL;
	if (strlen(id) > RT_CID_MAX)
		return err_set(e, EINVAL,
			       "container ID of %zu bytes: kiln-runtime takes at most %d (the guest's "
			       "limit)",
			       strlen(id), RT_CID_MAX);
	if (c->hostname && *c->hostname && hostname_ok(c->hostname, e) < 0)
		return -EINVAL;
	if (plan_request(c, id, p, e) < 0)
		return -EINVAL;
	return plan_cmdline(c, p, e);
}

void rt_plan_free(struct rt_plan *p)
{
	json_decref(p->ctr_create);
	p->ctr_create = NULL;
}

int rt_plan_net(const struct nl_iface *f, const char *tap, char *cmdline, size_t cap, char *net,
		struct err *e)
{
	const struct nl_addr *v4 = NULL;
	char ip[INET_ADDRSTRLEN], gw[INET_ADDRSTRLEN];
	size_t n = strnlen(cmdline, cap);
	const uint8_t *m = f->link.mac;

	for (size_t i = 0; i < f->naddrs && !v4; i++)
		if (f->addrs[i].family == AF_INET)
			v4 = &f->addrs[i];
	if (!v4)
		return err_set(e, EINVAL,
			       "interface %s has no IPv4 address: IPv6-only networks are not "
			       "supported yet",
			       f->link.name);
	if (v4->prefix < 1 || v4->prefix > 30)
		return err_set(e, EINVAL,
			       "interface %s: a /%u IPv4 address is not supported yet (the guest "
			       "takes a prefix of 1 to 30, a gateway inside it)",
			       f->link.name, v4->prefix);
	if (f->link.mtu && (f->link.mtu < 68 || f->link.mtu > 65535))
		return err_set(e, EINVAL, "interface %s: MTU %u is outside 68..65535", f->link.name,
			       f->link.mtu);
	inet_ntop(AF_INET, v4->addr, ip, sizeof(ip));
	snprintf(net, RT_NET_OPT_MAX, "tap=%s,mac=%02x:%02x:%02x:%02x:%02x:%02x,ip=%s/%u", tap,
		 m[0], m[1], m[2], m[3], m[4], m[5], ip, v4->prefix);
	cmdline_add(cmdline, cap, &n, " kiln.ip=%s/%u", ip, v4->prefix);
	if (f->has_gw4) {
		inet_ntop(AF_INET, f->gw4, gw, sizeof(gw));
		cmdline_add(cmdline, cap, &n, " kiln.gw=%s", gw);
	}
	if (f->link.mtu)
		cmdline_add(cmdline, cap, &n, " kiln.mtu=%u", f->link.mtu);
	return n < cap ? 0 : err_set(e, E2BIG, "the kernel command line is too long");
}

/* One argument into out (copied into its buffer). */
static int arg(struct rt_argv *a, struct err *e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int arg(struct rt_argv *a, struct err *e, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (a->argc >= RT_ARGV_MAX)
		return err_set(e, E2BIG, "kiln-vmm's command line has too many arguments");
	va_start(ap, fmt);
	n = vsnprintf(a->buf + a->used, sizeof(a->buf) - a->used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(a->buf) - a->used)
		return err_set(e, E2BIG, "kiln-vmm's command line is too long");
	a->argv[a->argc++] = a->buf + a->used;
	a->argv[a->argc] = NULL;
	a->used += (size_t)n + 1;
	return 0;
}

/* A path kiln-vmm takes whole: absolute, no control character. */
static int path_ok(const char *p, const char *what, struct err *e)
{
	if (!p || p[0] != '/')
		return err_set(e, EINVAL, "%s: want an absolute path", what);
	for (const char *s = p; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return err_set(e, EINVAL, "%s: the path holds a control character", what);
	return 0;
}

static int share_arg(struct rt_argv *a, int fd, const char *tag, bool ro, struct err *e)
{
	if (fd < 0)
		return 0;
	if (fd < 3)
		return err_set(e, EINVAL, "share %s: descriptor %d is stdio's", tag, fd);
	if (arg(a, e, "--share") < 0 || arg(a, e, "fd=%d:%s%s", fd, tag, ro ? ":ro" : "") < 0)
		return -E2BIG;
	return 0;
}

int rt_plan_vmm_argv(const struct rt_vmm_launch *l, struct rt_argv *a, struct err *e)
{
	memset(a, 0, sizeof(*a));
	if (path_ok(l->vmm, "kiln-vmm", e) < 0 || path_ok(l->kernel, "the kernel", e) < 0 ||
	    path_ok(l->initrd, "the initrd", e) < 0 ||
	    path_ok(l->vsock, "the vsock socket", e) < 0 ||
	    path_ok(l->control, "the control socket", e) < 0 ||
	    path_ok(l->jail_dir, "the jail directory", e) < 0 ||
	    (l->restore && path_ok(l->restore, "--image-path", e) < 0))
		return -EINVAL;
	if (!l->jail_id)
		return err_set(e, EINVAL, "the jail's uid and gid must not be 0");
	if (l->root_fd < 0)
		return err_set(e, EINVAL, "the container's rootfs share is missing");
	if (!l->cmdline || strpbrk(l->cmdline, "\"'\n\r\t"))
		return err_set(e, EINVAL,
			       "the kernel command line holds a quote or a control byte");
	if (arg(a, e, "%s", l->vmm) < 0 || arg(a, e, "--kernel") < 0 ||
	    arg(a, e, "%s", l->kernel) < 0 || arg(a, e, "--initrd") < 0 ||
	    arg(a, e, "%s", l->initrd) < 0 || arg(a, e, "--mem") < 0 ||
	    arg(a, e, "%u", l->size->mem_mib) < 0 || arg(a, e, "--cpus") < 0 ||
	    arg(a, e, "%u", l->size->cpus) < 0 || arg(a, e, "--vsock-path") < 0 ||
	    arg(a, e, "%s", l->vsock) < 0 || arg(a, e, "--control") < 0 ||
	    arg(a, e, "%s", l->control) < 0 || arg(a, e, "--cmdline") < 0 ||
	    arg(a, e, "%s", l->cmdline) < 0 ||
	    share_arg(a, l->root_fd, RT_SHARE_ROOT, l->root_readonly, e) < 0 ||
	    share_arg(a, l->bro_fd, RT_SHARE_BINDS_RO, true, e) < 0 ||
	    share_arg(a, l->brw_fd, RT_SHARE_BINDS_RW, false, e) < 0 ||
	    share_arg(a, l->pod_fd, RT_SHARE_POD, false, e) < 0 ||
	    (l->net && (arg(a, e, "--net") < 0 || arg(a, e, "%s", l->net) < 0)) ||
	    (l->restore && (arg(a, e, "--restore") < 0 || arg(a, e, "%s", l->restore) < 0)) ||
	    arg(a, e, "--jail") < 0 || arg(a, e, "%s", l->jail_dir) < 0 || arg(a, e, "--uid") < 0 ||
	    arg(a, e, "%u", l->jail_id) < 0 || arg(a, e, "--gid") < 0 ||
	    arg(a, e, "%u", l->jail_id) < 0)
		return a->argc >= RT_ARGV_MAX ? -E2BIG : -EINVAL;
	return 0;
}
