/* A container's filesystem as a list of steps; see oci_plan.h. */
#include "guest-init/agent/oci_plan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

/* ---- the mount table ---- */

/* Undo mountinfo's octal escapes (\040 for a space, ...) of s[0..n) into out. */
static int unescape(const char *s, size_t n, char *out, size_t outsz)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char ch = s[i];

		if (ch == '\\' && i + 3 < n && s[i + 1] >= '0' && s[i + 1] <= '3' &&
		    s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
			ch = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 +
				    (s[i + 3] - '0'));
			i += 3;
		}
		if (o + 1 >= outsz)
			return -ENAMETOOLONG;
		out[o++] = ch;
	}
	out[o] = '\0';
	return 0;
}

/* One mountinfo line's fields that matter here, as slices of the line. */
struct mi_line {
	const char *root, *point, *fstype, *source;
	size_t root_n, point_n, fstype_n, source_n;
};

/* Split line [s, e) into its fields; false when it is not a mount line. */
static bool mi_parse(const char *s, const char *e, struct mi_line *m)
{
	const char *f[64];
	size_t fn[64], n = 0, sep = 0;

	while (s < e && n < 64) {
		const char *w;

		while (s < e && *s == ' ')
			s++;
		if (s == e)
			break;
		w = s;
		while (s < e && *s != ' ')
			s++;
		f[n] = w;
		fn[n] = (size_t)(s - w);
		if (!sep && n >= 6 && fn[n] == 1 && w[0] == '-')
			sep = n;
		n++;
	}
	/* ID PARENT MAJ:MIN ROOT POINT OPTIONS [TAGS...] - FSTYPE SOURCE SUPER */
	if (!sep || sep + 2 >= n)
		return false;
	*m = (struct mi_line){ f[3],  f[4],  f[sep + 1],  f[sep + 2],
			       fn[3], fn[4], fn[sep + 1], fn[sep + 2] };
	return true;
}

static bool slice_is(const char *s, size_t n, const char *want)
{
	return strlen(want) == n && memcmp(s, want, n) == 0;
}

int oci_share_find(const char *mountinfo, const char *tag, char *out, size_t outsz)
{
	char src[AGENT_SHARE_TAG_MAX * 4 + 1];

	for (const char *s = mountinfo, *e; *s; s = *e ? e + 1 : e) {
		struct mi_line m;

		e = strchr(s, '\n');
		if (!e)
			e = s + strlen(s);
		if (!mi_parse(s, e, &m) || !slice_is(m.fstype, m.fstype_n, "virtiofs") ||
		    !slice_is(m.root, m.root_n, "/"))
			continue;
		if (unescape(m.source, m.source_n, src, sizeof(src)) < 0 || strcmp(src, tag) != 0)
			continue;
		return unescape(m.point, m.point_n, out, outsz);
	}
	return -ENOENT;
}

int oci_root_fstype(const char *mountinfo, char *out, size_t outsz)
{
	int r = -ENOENT;

	/* The last mount on "/" is the one on top: what the reader's "/" is. */
	for (const char *s = mountinfo, *e; *s; s = *e ? e + 1 : e) {
		struct mi_line m;

		e = strchr(s, '\n');
		if (!e)
			e = s + strlen(s);
		if (mi_parse(s, e, &m) && slice_is(m.point, m.point_n, "/"))
			r = unescape(m.fstype, m.fstype_n, out, outsz);
	}
	return r;
}

/* ---- building ---- */

struct builder {
	struct oci_plan *p;
	size_t cap;
	const struct agent_ctr_create *c;
	const char *mountinfo;
	struct agent_err *err;
};

static int no_memory(struct builder *b)
{
	agent_err_set(b->err, AGENT_E_BUSY, "ctr_create: out of memory; retry later");
	return -1;
}

static struct oci_step *add(struct builder *b, enum oci_op op, const char *dst, size_t mount)
{
	struct oci_step *s;

	if (b->p->n == b->cap)
		return NULL; /* sized for the request: cannot happen */
	s = &b->p->step[b->p->n++];
	*s = (struct oci_step){ .op = op, .dst = dst, .mount = mount };
	return s;
}

/* Keep a string the plan allocated; NULL when out of memory (s freed). */
static char *own(struct builder *b, char *s)
{
	char **o;

	if (!s)
		return NULL;
	o = realloc(b->p->owned, (b->p->nowned + 1) * sizeof(*o));
	if (!o) {
		free(s);
		return NULL;
	}
	b->p->owned = o;
	o[b->p->nowned++] = s;
	return s;
}

/* The mount point of share `tag`, owned by the plan. */
static const char *share_point(struct builder *b, const char *tag, const char *what)
{
	char buf[AGENT_PATH_MAX + 1];
	char *s;
	int r = oci_share_find(b->mountinfo, tag, buf, sizeof(buf));

	if (r < 0) {
		agent_err_set(
			b->err, AGENT_E_NOT_FOUND,
			"ctr_create: %s: no virtio-fs share tagged '%s' is mounted in the guest; name it in kiln.shares= (TAG:/path) when the guest boots",
			what, tag);
		return NULL;
	}
	s = own(b, strdup(buf));
	if (!s)
		no_memory(b);
	return s;
}

/* The filesystem options of m, joined with ',' (NULL when none), and its flags. */
static int split_options(struct builder *b, const struct agent_ctr_mount *m, unsigned long *flags,
			 const char **data, bool *rbind)
{
	char *d = calloc(1, AGENT_CTR_DATA_MAX + 2);
	size_t len = 0;
	unsigned long f;

	if (!d)
		return no_memory(b);
	*flags = 0;
	*rbind = false;
	for (size_t i = 0; i < m->optc; i++) {
		size_t n = strlen(m->options[i]);

		switch (agent_mount_option(m->options[i], &f)) {
		case AGENT_MOPT_SET:
			*flags |= f;
			break;
		case AGENT_MOPT_CLEAR:
			*flags &= ~f;
			break;
		case AGENT_MOPT_RBIND:
			*rbind = true;
			break;
		case AGENT_MOPT_DATA:
			/* The codec bounds the joined length (AGENT_CTR_DATA_MAX). */
			if (len + n + 1 > AGENT_CTR_DATA_MAX + 1)
				break;
			if (len)
				d[len++] = ',';
			memcpy(d + len, m->options[i], n);
			len += n;
			break;
		default:
			break;
		}
	}
	if (!len) {
		free(d);
		*data = NULL;
		return 0;
	}
	*data = own(b, d);
	return *data ? 0 : no_memory(b);
}

/* A bind's flags as mount_setattr attributes. Only ever added: a bind
 * cannot be made writable (or suid) when its share's mount is not. */
static void bind_attr(unsigned long flags, struct oci_step *s)
{
	static const struct {
		unsigned long ms;
		uint64_t attr;
	} map[] = {
		{ MS_RDONLY, MOUNT_ATTR_RDONLY },         { MS_NOSUID, MOUNT_ATTR_NOSUID },
		{ MS_NODEV, MOUNT_ATTR_NODEV },           { MS_NOEXEC, MOUNT_ATTR_NOEXEC },
		{ MS_NODIRATIME, MOUNT_ATTR_NODIRATIME },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (flags & map[i].ms)
			s->attr_set |= map[i].attr;
	/* The access-time mode is one field: clear it to set one of them. */
	if (flags & (MS_NOATIME | MS_STRICTATIME | MS_RELATIME)) {
		s->attr_clr |= MOUNT_ATTR__ATIME;
		s->attr_set |= flags & MS_NOATIME ? MOUNT_ATTR_NOATIME
			: flags & MS_STRICTATIME  ? MOUNT_ATTR_STRICTATIME
						  : MOUNT_ATTR_RELATIME;
	}
}

static const char *relative(const char *path)
{
	while (*path == '/')
		path++;
	return path;
}

static int add_mount(struct builder *b, size_t i, bool *devices)
{
	const struct agent_ctr_mount *m = &b->c->mounts[i];
	const char *dst = relative(m->destination);
	struct oci_step *s;
	unsigned long flags;
	const char *data;
	bool rbind;
	char what[48];

	if (!*dst) {
		agent_err_set(
			b->err, AGENT_E_BAD_FIELD,
			"ctr_create: mounts[%zu]: cannot mount over the container's root; the root is 'rootfs'",
			i);
		return -1;
	}
	if (split_options(b, m, &flags, &data, &rbind) < 0)
		return -1;
	if (m->type != AGENT_MNT_BIND) {
		s = add(b, OCI_MOUNT, dst, i);
		s->fstype = agent_mount_type_name(m->type);
		s->flags = flags;
		s->data = data;
		if (m->type == AGENT_MNT_TMPFS && strcmp(dst, "dev") == 0)
			*devices = true;
		return 0;
	}
	snprintf(what, sizeof(what), "mounts[%zu]", i);
	s = add(b, OCI_BIND, dst, i);
	s->share = share_point(b, m->share, what);
	if (!s->share)
		return -1;
	s->src = m->source[0] && strcmp(m->source, ".") != 0 ? m->source : ".";
	s->recursive = rbind;
	bind_attr(flags, s);
	return 0;
}

int oci_plan_build(struct oci_plan *p, const struct agent_ctr_create *c, const char *mountinfo,
		   struct agent_err *err)
{
	struct builder b = {
		.p = p, .cap = c->nmounts + 4, .c = c, .mountinfo = mountinfo, .err = err
	};
	struct oci_step *s;
	bool devices = false;

	memset(p, 0, sizeof(*p));
	p->step = calloc(b.cap, sizeof(*p->step));
	if (!p->step)
		return no_memory(&b);
	s = add(&b, OCI_ROOT, "", SIZE_MAX);
	s->share = share_point(&b, c->root_share, "rootfs");
	if (!s->share)
		goto fail;
	s->src = c->root_source && c->root_source[0] ? c->root_source : ".";
	for (size_t i = 0; i < c->nmounts; i++)
		if (add_mount(&b, i, &devices) < 0)
			goto fail;
	if (devices)
		add(&b, OCI_DEVICES, "dev", SIZE_MAX);
	add(&b, OCI_PIVOT, "", SIZE_MAX);
	if (c->root_readonly)
		add(&b, OCI_READONLY, "", SIZE_MAX);
	return 0;
fail:
	oci_plan_free(p);
	return -1;
}

void oci_plan_free(struct oci_plan *p)
{
	for (size_t i = 0; i < p->nowned; i++)
		free(p->owned[i]);
	free(p->owned);
	free(p->step);
	memset(p, 0, sizeof(*p));
}

void oci_step_describe(const struct oci_plan *p, const struct agent_ctr_create *c, size_t i,
		       char *buf, size_t bufsz)
{
	const struct oci_step *s = i < p->n ? &p->step[i] : NULL;

	if (!s) {
		snprintf(buf, bufsz, "step %zu", i);
		return;
	}
	switch (s->op) {
	case OCI_ROOT:
		snprintf(buf, bufsz, "binding the root share '%s' (%s/%.200s)", c->root_share,
			 s->share, s->src);
		break;
	case OCI_MOUNT:
		snprintf(buf, bufsz, "mounting %s on /%.200s (mounts[%zu])", s->fstype, s->dst,
			 s->mount);
		break;
	case OCI_BIND:
		snprintf(buf, bufsz, "binding '%.200s' of share '%s' on /%.200s (mounts[%zu])",
			 s->src, c->mounts[s->mount].share, s->dst, s->mount);
		break;
	case OCI_DEVICES:
		snprintf(buf, bufsz, "creating the default devices in /dev");
		break;
	case OCI_PIVOT:
		snprintf(buf, bufsz, "pivot_root into the root share '%s'", c->root_share);
		break;
	case OCI_READONLY:
		snprintf(buf, bufsz, "making / read-only");
		break;
	}
}

/* ---- an exec's namespaces ---- */

static const struct {
	int flag;
	const char *name;
} join_steps[] = {
	{ CLONE_NEWIPC, "ipc" },
	{ CLONE_NEWUTS, "uts" },
	{ CLONE_NEWCGROUP, "cgroup" },
	{ CLONE_NEWNS, "mnt" },
};

size_t oci_join_count(void)
{
	return sizeof(join_steps) / sizeof(join_steps[0]);
}

int oci_join_flag(size_t i)
{
	return i < oci_join_count() ? join_steps[i].flag : 0;
}

const char *oci_join_name(size_t i)
{
	return i < oci_join_count() ? join_steps[i].name : "?";
}

/* ---- the program ---- */

int oci_path_next(const char **cursor, const char *name, char *out, size_t outsz)
{
	size_t nl = strlen(name);

	while (*cursor) {
		const char *dir = *cursor, *end = strchr(dir, ':');
		size_t dl = end ? (size_t)(end - dir) : strlen(dir), o = 0;

		*cursor = end ? end + 1 : NULL;
		if (dl + 1 + nl + 1 > outsz)
			continue; /* a candidate that does not fit cannot be the program */
		if (dl) {
			memcpy(out, dir, dl);
			o = dl;
			out[o++] = '/';
		}
		memcpy(out + o, name, nl + 1);
		return 1;
	}
	return 0;
}

const char *oci_env_path(const char *const *env, size_t envc)
{
	for (size_t i = 0; i < envc; i++)
		if (strncmp(env[i], "PATH=", 5) == 0)
			return env[i] + 5;
	return AGENT_DEFAULT_PATH;
}
