/* A container's state record and runc's state output; see rt_state.h. */
#include "api/runtime/rt_state.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/proto/agent_proto.h"
#include "api/runtime/rt_dir.h"
#include "lib/base/json.h"
#include "lib/base/json_text.h"
#include "lib/base/version.h"

static const char *const status_names[] = {
	[RT_STATUS_CREATING] = "creating", [RT_STATUS_CREATED] = "created",
	[RT_STATUS_RUNNING] = "running",   [RT_STATUS_PAUSED] = "paused",
	[RT_STATUS_STOPPED] = "stopped",
};

const char *rt_status_name(enum rt_status s)
{
	if ((unsigned)s >= sizeof(status_names) / sizeof(status_names[0]))
		return "unknown";
	return status_names[s];
}

int rt_id_check(const char *id, struct err *e)
{
	size_t n = strlen(id);

	if (n == 0 || n > RT_ID_MAX)
		return err_set(e, EINVAL, "container ID of %zu bytes: give 1 to %d", n, RT_ID_MAX);
	for (size_t i = 0; i < n; i++) {
		char c = id[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '+' || c == '-' || c == '.'))
			return err_set(e, EINVAL,
				       "invalid container ID format: \"%.64s\" may hold only letters, "
				       "digits and _ + - .",
				       id);
	}
	/* The ID names <root>/<id>: "." and ".." would be the root or its
	 * parent. */
	if (strcmp(id, ".") == 0 || strcmp(id, "..") == 0)
		return err_set(e, EINVAL, "invalid container ID format: \"%s\" names a directory",
			       id);
	/* kiln-runtime's own directories in --root (rt_dir.h, rt_warm.h) */
	if (strcmp(id, RT_IDS_DIR) == 0 || strcmp(id, RT_WARM_DIR) == 0)
		return err_set(e, EINVAL,
			       "container ID \"%s\" is reserved (kiln-runtime's own directory in "
			       "--root): choose another",
			       id);
	return 0;
}

static json_t *proc_json(const struct rt_proc_id *p)
{
	return json_pack("{s:i,s:I}", "pid", p->pid, "start", (json_int_t)p->start);
}

int rt_state_encode(const struct rt_state_rec *r, char **out, struct err *e)
{
	json_t *j = json_pack("{s:i,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:o,s:o,s:I,s:s,s:s,s:s,s:s}",
			      "kiln_state", RT_STATE_VERSION, "id", r->id, "cid", r->cid, "sandbox",
			      r->sandbox, "bundle", r->bundle, "rootfs", r->rootfs, "created",
			      r->created, "status", rt_status_name(r->status), "shim",
			      proc_json(&r->shim), "vmm", proc_json(&r->vmm), "id_range",
			      (json_int_t)r->id_range, "cgroup", r->cgroup, "netns", r->netns,
			      "tap", r->tap, "net", r->net);

	if (j && r->annotations && json_object_set(j, "annotations", r->annotations) < 0) {
		json_decref(j);
		j = NULL;
	}
	*out = j ? json_text(j, JSON_PRESERVE_ORDER | JSON_COMPACT) : NULL;
	json_decref(j);
	if (!*out)
		return err_set(e, ENOMEM, "state.json: out of memory encoding the record");
	return 0;
}

static int field_fail(const struct json_field_fail *f, const char *where, struct err *e)
{
	switch (f->fault) {
	case JSON_FIELD_MISSING:
		return err_set(e, EINVAL, "%s: \"%s\" is missing", where, f->key);
	case JSON_FIELD_TYPE:
		return err_set(e, EINVAL, "%s: \"%s\" is %s", where, f->key, f->got);
	case JSON_FIELD_RANGE:
		return err_set(e, EINVAL, "%s: \"%s\" is %lld, outside %llu..%llu", where, f->key,
			       f->value, (unsigned long long)f->min, (unsigned long long)f->max);
	case JSON_FIELD_LENGTH:
		return err_set(e, EINVAL, "%s: \"%s\" is longer than %llu bytes", where, f->key,
			       (unsigned long long)f->max);
	default:
		return err_set(e, EINVAL, "%s: unknown key \"%.64s\"", where, f->key);
	}
}

/* A string field into buf[cap] (absent and not required: ""). */
static int copy_string(const json_t *o, const char *key, bool required, char *buf, size_t cap,
		       struct err *e)
{
	struct json_field_fail f;
	const char *s;

	if (json_field_string(o, key, required, cap - 1, &s, &f) < 0)
		return field_fail(&f, "state.json", e);
	snprintf(buf, cap, "%s", s ? s : "");
	return 0;
}

static int read_proc(const json_t *o, const char *key, struct rt_proc_id *p, struct err *e)
{
	static const char *const keys[] = { "pid", "start", NULL };
	const json_t *v = json_object_get(o, key);
	struct json_field_fail f;
	uint64_t pid, start;

	if (!v)
		return 0;
	if (!json_is_object(v))
		return err_set(e, EINVAL, "state.json: \"%s\" is %s, not an object", key,
			       json_field_kind(v));
	if (json_field_only(v, keys, &f) < 0 ||
	    json_field_uint(v, "pid", true, 0, INT32_MAX, 0, &pid, &f) < 0 ||
	    json_field_uint(v, "start", true, 0, INT64_MAX, 0, &start, &f) < 0)
		return field_fail(&f, key, e);
	p->pid = (int)pid;
	p->start = start;
	return 0;
}

int rt_annotations_read(json_t *v, const char *where, json_t **out, struct err *e)
{
	const char *k;
	json_t *s;

	if (!v)
		return 0;
	if (!json_is_object(v))
		return err_set(e, EINVAL, "%s: \"annotations\" is %s, not an object", where,
			       json_field_kind(v));
	if (json_object_size(v) > RT_STATE_ANNOTATIONS_MAX)
		return err_set(e, EINVAL, "%s: more than %d annotations", where,
			       RT_STATE_ANNOTATIONS_MAX);
	json_object_foreach(v, k, s)
	{
		if (!json_is_string(s))
			return err_set(e, EINVAL, "%s: annotation \"%.64s\" is %s, not a string",
				       where, k, json_field_kind(s));
	}
	*out = json_incref(v);
	return 0;
}

static int read_status(const json_t *j, enum rt_status *st, struct err *e)
{
	const char *s = json_string_value(json_object_get(j, "status"));

	for (size_t i = 0; s && i < sizeof(status_names) / sizeof(status_names[0]); i++) {
		if (strcmp(s, status_names[i]) == 0) {
			*st = (enum rt_status)i;
			return 0;
		}
	}
	return err_set(e, EINVAL,
		       "state.json: \"status\" is not one of creating, created, "
		       "running, paused, stopped");
}

static int read_rec(json_t *j, struct rt_state_rec *r, struct err *e)
{
	static const char *const keys[] = { "kiln_state",  "id",      "cid",    "sandbox", "bundle",
					    "rootfs",      "created", "status", "shim",    "vmm",
					    "id_range",    "cgroup",  "netns",  "tap",     "net",
					    "annotations", NULL };
	struct json_field_fail f;
	uint64_t ver, range;

	if (json_field_only(j, keys, &f) < 0 ||
	    json_field_uint(j, "kiln_state", true, 0, UINT32_MAX, 0, &ver, &f) < 0 ||
	    json_field_uint(j, "id_range", false, 0, UINT32_MAX, 0, &range, &f) < 0)
		return field_fail(&f, "state.json", e);
	if (ver != RT_STATE_VERSION)
		return err_set(e, EINVAL,
			       "state.json: version %llu, this kiln-runtime reads %d: delete the "
			       "container with the kiln-runtime that made it",
			       (unsigned long long)ver, RT_STATE_VERSION);
	r->id_range = (uint32_t)range;
	if (copy_string(j, "id", true, r->id, sizeof(r->id), e) < 0 ||
	    copy_string(j, "bundle", true, r->bundle, sizeof(r->bundle), e) < 0 ||
	    copy_string(j, "rootfs", true, r->rootfs, sizeof(r->rootfs), e) < 0 ||
	    copy_string(j, "created", true, r->created, sizeof(r->created), e) < 0 ||
	    copy_string(j, "cgroup", false, r->cgroup, sizeof(r->cgroup), e) < 0 ||
	    copy_string(j, "netns", false, r->netns, sizeof(r->netns), e) < 0 ||
	    copy_string(j, "tap", false, r->tap, sizeof(r->tap), e) < 0 ||
	    copy_string(j, "cid", false, r->cid, sizeof(r->cid), e) < 0 ||
	    copy_string(j, "sandbox", false, r->sandbox, sizeof(r->sandbox), e) < 0 ||
	    copy_string(j, "net", false, r->net, sizeof(r->net), e) < 0)
		return -EINVAL;
	if (rt_id_check(r->id, e) < 0 || (r->cid[0] && rt_id_check(r->cid, e) < 0) ||
	    (r->sandbox[0] && rt_id_check(r->sandbox, e) < 0) ||
	    read_status(j, &r->status, e) < 0 || read_proc(j, "shim", &r->shim, e) < 0 ||
	    read_proc(j, "vmm", &r->vmm, e) < 0)
		return -EINVAL;
	return rt_annotations_read(json_object_get(j, "annotations"), "state.json", &r->annotations,
				   e);
}

int rt_state_decode(const char *buf, size_t n, struct rt_state_rec *r, struct err *e)
{
	json_error_t je;
	json_t *j;
	int ret;

	memset(r, 0, sizeof(*r));
	if (n > RT_STATE_FILE_MAX)
		return err_set(e, EINVAL, "state.json is larger than %u bytes", RT_STATE_FILE_MAX);
	j = json_strict_loadb(buf, n, &je);
	if (!j)
		return err_set(e, EINVAL, "state.json is not JSON: %.200s", je.text);
	if (!json_is_object(j))
		ret = err_set(e, EINVAL, "state.json is not an object");
	else
		ret = read_rec(j, r, e);
	json_decref(j);
	if (ret < 0)
		rt_state_rec_free(r);
	return ret;
}

void rt_state_rec_free(struct rt_state_rec *r)
{
	json_decref(r->annotations);
	r->annotations = NULL;
}

/* runc's containerState (list.go): the spec's fields plus rootfs,
 * created and owner; annotations only when there are some. */
static json_t *state_json(const struct rt_state_view *v)
{
	const struct rt_state_rec *r = v->rec;
	json_t *j = json_pack("{s:s,s:s,s:i,s:s,s:s,s:s,s:s,s:s}", "ociVersion", RT_OCI_VERSION,
			      "id", r->id, "pid", v->pid, "status", rt_status_name(v->status),
			      "bundle", r->bundle, "rootfs", r->rootfs, "created", r->created,
			      "owner", "");

	if (j && r->annotations && json_object_size(r->annotations) &&
	    json_object_set(j, "annotations", r->annotations) < 0) {
		json_decref(j);
		return NULL;
	}
	return j;
}

/* j dumped with flags and a newline into *out; j is released. */
static int dump(json_t *j, size_t flags, char **out, struct err *e)
{
	char *s = j ? json_text(j, flags | JSON_PRESERVE_ORDER) : NULL;
	size_t n = s ? strlen(s) : 0;

	json_decref(j);
	*out = s ? realloc(s, n + 2) : NULL;
	if (!*out) {
		free(s);
		return err_set(e, ENOMEM, "out of memory writing the answer");
	}
	memcpy(*out + n, "\n", 2);
	return 0;
}

int rt_state_render(const struct rt_state_view *v, char **out, struct err *e)
{
	return dump(state_json(v), JSON_INDENT(2), out, e);
}

int rt_state_render_hook(const struct rt_state_view *v, char **out, struct err *e)
{
	const struct rt_state_rec *r = v->rec;
	json_t *j = json_pack("{s:s,s:s,s:s,s:i,s:s}", "ociVersion", RT_OCI_VERSION, "id", r->id,
			      "status", rt_status_name(v->status), "pid", v->pid, "bundle",
			      r->bundle);

	if (j && r->annotations && json_object_size(r->annotations) &&
	    json_object_set(j, "annotations", r->annotations) < 0) {
		json_decref(j);
		j = NULL;
	}
	return dump(j, JSON_COMPACT, out, e);
}

/* runc's table is Go's tabwriter (minwidth 12, padding 3): a column is
 * as wide as its widest cell plus 3, at least 12; the last one is not
 * padded. */
#define LIST_COLS 6
#define TAB_MIN 12
#define TAB_PAD 3

static void list_cells(const struct rt_state_view *v, char pid[16], const char *cell[LIST_COLS])
{
	snprintf(pid, 16, "%d", v->pid);
	cell[0] = v->rec->id;
	cell[1] = pid;
	cell[2] = rt_status_name(v->status);
	cell[3] = v->rec->bundle;
	cell[4] = v->rec->created;
	cell[5] = "root";
}

static int render_table(const struct rt_state_view *v, size_t n, char **out, struct err *e)
{
	static const char *const head[LIST_COLS] = { "ID",     "PID",     "STATUS",
						     "BUNDLE", "CREATED", "OWNER" };
	size_t width[LIST_COLS], len = 0;
	const char *cell[LIST_COLS];
	char pid[16];
	char *buf;
	FILE *f;

	for (int c = 0; c < LIST_COLS; c++)
		width[c] = strlen(head[c]);
	for (size_t i = 0; i < n; i++) {
		list_cells(&v[i], pid, cell);
		for (int c = 0; c < LIST_COLS; c++)
			if (strlen(cell[c]) > width[c])
				width[c] = strlen(cell[c]);
	}
	f = open_memstream(&buf, &len);
	if (!f)
		return err_set(e, ENOMEM, "out of memory writing the list");
	for (size_t i = 0; i <= n; i++) {
		if (i)
			list_cells(&v[i - 1], pid, cell);
		for (int c = 0; c < LIST_COLS; c++) {
			const char *s = i ? cell[c] : head[c];
			size_t w = width[c] + TAB_PAD < TAB_MIN ? TAB_MIN : width[c] + TAB_PAD;

			if (c < LIST_COLS - 1)
				fprintf(f, "%-*s", (int)w, s);
			else
				fprintf(f, "%s\n", s);
		}
	}
	if (fclose(f) != 0) {
		free(buf);
		return err_set(e, ENOMEM, "out of memory writing the list");
	}
	*out = buf;
	return 0;
}

int rt_state_render_list(const struct rt_state_view *v, size_t n, bool json, bool quiet, char **out,
			 struct err *e)
{
	json_t *a;

	if (quiet) {
		size_t len = 0;
		char *buf;
		FILE *f = open_memstream(&buf, &len);

		if (!f)
			return err_set(e, ENOMEM, "out of memory writing the list");
		for (size_t i = 0; i < n; i++)
			fprintf(f, "%s\n", v[i].rec->id);
		if (fclose(f) != 0) {
			free(buf);
			return err_set(e, ENOMEM, "out of memory writing the list");
		}
		*out = buf;
		return 0;
	}
	if (!json)
		return render_table(v, n, out, e);
	a = json_array();
	for (size_t i = 0; a && i < n; i++) {
		if (json_array_append_new(a, state_json(&v[i])) < 0) {
			json_decref(a);
			a = NULL;
		}
	}
	return dump(a, JSON_COMPACT, out, e);
}

/* Mount options the guest applies (guest-init's OCI mounts). */
static const char *const mount_options[] = {
	"async", "atime",       "bind",    "defaults",   "dev",      "diratime", "dirsync",
	"exec",  "noatime",     "nodev",   "nodiratime", "noexec",   "nosuid",   "private",
	"rbind", "relatime",    "remount", "ro",         "rprivate", "rslave",   "rw",
	"slave", "strictatime", "suid",    "sync",
};

static json_t *strings(const char *const *s, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, json_string(s[i]));
	return a;
}

#define ARRAY(a) strings(a, sizeof(a) / sizeof(a[0]))

/* The capabilities the guest kernel knows: the agent protocol's names. */
static json_t *cap_names(void)
{
	json_t *a = json_array();

	for (int i = 0; a && agent_cap_name(i); i++)
		json_array_append_new(a, json_string(agent_cap_name(i)));
	return a;
}

/* runc's seccomp features: what rt_config_seccomp.c takes. */
static json_t *seccomp_features(void)
{
	static const char *const actions[] = { "SCMP_ACT_ALLOW",       "SCMP_ACT_ERRNO",
					       "SCMP_ACT_KILL",        "SCMP_ACT_KILL_PROCESS",
					       "SCMP_ACT_KILL_THREAD", "SCMP_ACT_LOG",
					       "SCMP_ACT_TRACE",       "SCMP_ACT_TRAP" };
	static const char *const ops[] = { "SCMP_CMP_EQ", "SCMP_CMP_GE", "SCMP_CMP_GT",
					   "SCMP_CMP_LE", "SCMP_CMP_LT", "SCMP_CMP_MASKED_EQ",
					   "SCMP_CMP_NE" };
	static const char *const archs[] = { "SCMP_ARCH_X86_64" };
	static const char *const flags[] = { "SECCOMP_FILTER_FLAG_LOG",
					     "SECCOMP_FILTER_FLAG_SPEC_ALLOW",
					     "SECCOMP_FILTER_FLAG_TSYNC" };

	return json_pack("{s:b,s:o,s:o,s:o,s:o,s:o}", "enabled", 1, "actions", ARRAY(actions),
			 "operators", ARRAY(ops), "archs", ARRAY(archs), "knownFlags", ARRAY(flags),
			 "supportedFlags", ARRAY(flags));
}

int rt_state_render_features(char **out, struct err *e)
{
	static const char *const hooks[] = { "prestart", "createRuntime", "poststart", "poststop" };
	/* user and time namespaces are refused (docs/oci-runtime.md) */
	static const char *const ns[] = { "cgroup", "ipc", "mount", "network", "pid", "uts" };
	static const char *const unsafe[] = { "io.kiln." };
	json_t *off = json_pack("{s:b}", "enabled", 0);
	json_t *linux_ = json_pack("{s:o,s:o,s:{s:b,s:b,s:b,s:b},s:o,s:O,s:O,s:O,s:{s:O}}",
				   "namespaces", ARRAY(ns), "capabilities", cap_names(), "cgroup",
				   "v1", 0, "v2", 1, "systemd", 1, "systemdUser", 0, "seccomp",
				   seccomp_features(), "apparmor", off, "selinux", off, "intelRdt",
				   off, "mountExtensions", "idmap", off);
	json_t *j =
		json_pack("{s:s,s:s,s:o,s:o,s:o,s:{s:s,s:s,s:s,s:s,s:s,s:s},s:o}", "ociVersionMin",
			  RT_OCI_VERSION_MIN, "ociVersionMax", RT_OCI_VERSION_MAX, "hooks",
			  ARRAY(hooks), "mountOptions", ARRAY(mount_options), "linux", linux_,
			  "annotations", "io.kiln.runtime.version", KILN_VERSION, "io.kiln.kernel",
			  "the guest kernel: a file next to kiln-runtime's own", "io.kiln.memory",
			  "guest RAM in MiB (default: linux.resources.memory.limit, else 512)",
			  "io.kiln.cpus",
			  "vCPUs (default: the CPU quota over its period, rounded up, else 1)",
			  "io.kiln.warm",
			  "true (default): resume a booted VM's snapshot when the container has "
			  "no network interface; false: always boot",
			  "io.kiln.firewall", "kiln's packet filter rules (kiln-vmm --firewall)",
			  "potentiallyUnsafeConfigAnnotations", ARRAY(unsafe));

	json_decref(off);
	return dump(j, JSON_INDENT(2), out, e);
}

/* A mount of the example spec. */
static json_t *spec_mount(const char *dest, const char *type, const char *opts)
{
	json_t *o = json_array();
	char buf[128], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", opts);
	for (char *t = strtok_r(buf, ",", &save); o && t; t = strtok_r(NULL, ",", &save))
		json_array_append_new(o, json_string(t));
	return json_pack("{s:s,s:s,s:s,s:o}", "destination", dest, "type", type, "source", type,
			 "options", o);
}

int rt_state_render_spec(char **out, struct err *e)
{
	static const char *const caps3[] = { "CAP_AUDIT_WRITE", "CAP_KILL",
					     "CAP_NET_BIND_SERVICE" };
	static const char *const env[] = {
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm"
	};
	static const char *const masked[] = { "/proc/acpi",          "/proc/asound",
					      "/proc/kcore",         "/proc/keys",
					      "/proc/latency_stats", "/proc/timer_list",
					      "/proc/timer_stats",   "/proc/sched_debug",
					      "/sys/firmware",       "/proc/scsi" };
	static const char *const readonly[] = { "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
						"/proc/sysrq-trigger" };
	json_t *j = json_pack(
		"{s:s,s:{s:b,s:{s:i,s:i},s:[s],s:o,s:s,s:{s:o,s:o,s:o,s:o},s:[{s:s,s:i,s:i}],s:b},"
		"s:{s:s,s:b},s:s,s:[o,o,o,o,o,o,o],s:{s:{s:[{s:b,s:s}]},s:[{s:s},{s:s},{s:s},{s:s},"
		"{s:s},{s:s}],s:o,s:o}}",
		"ociVersion", RT_OCI_VERSION, "process", "terminal", 0, "user", "uid", 0, "gid", 0,
		"args", "sh", "env", ARRAY(env), "cwd", "/", "capabilities", "bounding",
		ARRAY(caps3), "effective", ARRAY(caps3), "permitted", ARRAY(caps3), "ambient",
		ARRAY(caps3), "rlimits", "type", "RLIMIT_NOFILE", "hard", 1024, "soft", 1024,
		"noNewPrivileges", 1, "root", "path", "rootfs", "readonly", 1, "hostname", "kiln",
		"mounts", spec_mount("/proc", "proc", "nosuid,noexec,nodev"),
		spec_mount("/dev", "tmpfs", "nosuid,strictatime,mode=755,size=65536k"),
		spec_mount("/dev/pts", "devpts",
			   "nosuid,noexec,newinstance,ptmxmode=0666,mode=0620,gid=5"),
		spec_mount("/dev/shm", "tmpfs", "nosuid,noexec,nodev,mode=1777,size=65536k"),
		spec_mount("/dev/mqueue", "mqueue", "nosuid,noexec,nodev"),
		spec_mount("/sys", "sysfs", "nosuid,noexec,nodev,ro"),
		spec_mount("/sys/fs/cgroup", "cgroup", "nosuid,noexec,nodev,relatime,ro"), "linux",
		"resources", "devices", "allow", 0, "access", "rwm", "namespaces", "type", "pid",
		"type", "network", "type", "ipc", "type", "uts", "type", "mount", "type", "cgroup",
		"maskedPaths", ARRAY(masked), "readonlyPaths", ARRAY(readonly));

	return dump(j, JSON_INDENT(2), out, e);
}
