/* The confined view as a list of steps; see confine_plan.h. */
#include "guest-init/agent/confine_plan.h"
#include "guest-init/sys/trust_ca.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>

/* The image's programs and libraries. /lib32, /libx32 and /opt are shown
 * when present (multilib runtimes, vendor runtimes installed to /opt). */
static const char *const runtime_dirs[] = { "usr",   "bin",   "sbin",   "lib",
					    "lib32", "lib64", "libx32", "opt" };

/*
 * What of /etc a confined process sees: name resolution, the dynamic
 * linker's cache, TLS trust, time zone, and Debian's alternatives (/usr/bin
 * links such as cc and awk point into /etc/alternatives). Not passwd,
 * group, shadow, ssh keys or anything an image keeps there otherwise: a
 * confined process learns no account names and reads no configuration
 * secrets. Tools that look the user up in passwd find nobody (whoami
 * fails); USER, LOGNAME and HOME are in the environment.
 */
static const char *const etc_entries[] = {
	"alternatives",  "ca-certificates", "ca-certificates.conf",
	"gai.conf",      "host.conf",       "hostname",
	"hosts",         "ld.so.cache",     "ld.so.conf",
	"ld.so.conf.d",  "localtime",       "mime.types",
	"nsswitch.conf", "os-release",      "protocols",
	"resolv.conf",   "services",        "ssl",
	"timezone",
};

/* For a run (agent_run.c): the helpers its interpreter loads, in the
 * agent's run-code directory, shown read-only; with them the run's own
 * directory (its code and its result file), writable: the result file is
 * the run user's, in a directory of root's, so the user can write that
 * file and nothing else there. Other runs' directories, and the rest of
 * /run (sockets, the agent's state), are not shown: a confined run cannot
 * read another run's code nor write its result. */
static const char *const run_helpers[] = { "run.py", "result.sh", "prelude.js" };

static const char *const trust_files[] = { "egress-ca.pem", "ca-bundle.pem" };

/* Device nodes, bound from the guest's devtmpfs (a bind keeps the node
 * usable on a nodev mount). No disks, no consoles, no /dev/kmsg. */
static const char *const dev_nodes[] = { "null", "zero", "full", "random", "urandom", "tty" };

#define N(a) (sizeof(a) / sizeof((a)[0]))

struct builder {
	struct confine_plan *p;
	confine_probe_fn probe;
	void *ctx;
	int err;
};

static struct confine_step *add(struct builder *b, enum confine_op op, const char *src,
				const char *dst)
{
	struct confine_step *s;

	if (b->err)
		return NULL;
	if (b->p->n == CONFINE_STEPS_MAX) {
		b->err = -E2BIG;
		return NULL;
	}
	s = &b->p->step[b->p->n];
	memset(s, 0, sizeof(*s));
	s->op = op;
	if (snprintf(s->src, sizeof(s->src), "%s", src ? src : "") >= (int)sizeof(s->src) ||
	    snprintf(s->dst, sizeof(s->dst), "%s%s",
		     dst && dst[0] == '/' && strcmp(dst, "/") ? CONFINE_ROOT : "",
		     dst ? dst : "") >= (int)sizeof(s->dst)) {
		b->err = -ENAMETOOLONG;
		return NULL;
	}
	b->p->n++;
	return s;
}

static void mkdir_at(struct builder *b, const char *dst, unsigned mode)
{
	struct confine_step *s = add(b, CONFINE_MKDIR, NULL, dst);

	if (s)
		s->mode = mode;
}

static void mount_at(struct builder *b, const char *fstype, const char *dst, unsigned long flags,
		     const char *data)
{
	struct confine_step *s;

	mkdir_at(b, dst, 0755);
	s = add(b, CONFINE_MOUNT, NULL, dst);
	if (s) {
		s->fstype = fstype;
		s->flags = flags;
		s->data = data;
	}
}

static void bind(struct builder *b, const char *src, const char *dst, unsigned long flags)
{
	struct confine_step *s = add(b, CONFINE_BIND, src, dst);

	if (s)
		s->flags = flags;
}

/*
 * Show the real `path` at the same place: a directory or file bound (and
 * read-only unless `writable`), a symbolic link recreated (its target is
 * then resolved inside the view), nothing when absent.
 */
static void show(struct builder *b, const char *path, bool writable)
{
	char link[CONFINE_PATH_MAX];

	switch (b->probe(b->ctx, path, link, sizeof(link))) {
	case CONFINE_DIR:
		mkdir_at(b, path, 0755);
		bind(b, path, path, 0);
		break;
	case CONFINE_NODE:
		add(b, CONFINE_FILE, NULL, path);
		bind(b, path, path, 0);
		break;
	case CONFINE_LINK:
		add(b, CONFINE_SYMLINK, link, path);
		return;
	case CONFINE_ABSENT:
		return;
	}
	/* Writable (a run's directory) is still no place for a set-uid
	 * program or a device node to take effect. */
	add(b, writable ? CONFINE_NOSUID : CONFINE_READONLY, NULL, path);
}

static void show_each(struct builder *b, const char *dir, const char *const *names, size_t n)
{
	char path[CONFINE_PATH_MAX];

	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		show(b, path, false);
	}
}

static void dev(struct builder *b)
{
	static const struct {
		const char *name, *to;
	} links[] = {
		{ "ptmx", "pts/ptmx" },          { "fd", "/proc/self/fd" },
		{ "stdin", "/proc/self/fd/0" },  { "stdout", "/proc/self/fd/1" },
		{ "stderr", "/proc/self/fd/2" },
	};
	char path[CONFINE_PATH_MAX];

	mount_at(b, "tmpfs", "/dev", MS_NOSUID | MS_NOEXEC, "mode=0755");
	for (size_t i = 0; i < N(dev_nodes); i++) {
		snprintf(path, sizeof(path), "/dev/%s", dev_nodes[i]);
		/* Nodes only: a plain file here would not be the device. */
		if (b->probe(b->ctx, path, NULL, 0) != CONFINE_NODE)
			continue;
		add(b, CONFINE_FILE, NULL, path);
		bind(b, path, path, 0);
	}
	/* The guest's devpts: a PTY process's own terminal is there. */
	if (b->probe(b->ctx, "/dev/pts", NULL, 0) == CONFINE_DIR) {
		mkdir_at(b, "/dev/pts", 0755);
		bind(b, "/dev/pts", "/dev/pts", 0);
	}
	for (size_t i = 0; i < N(links); i++) {
		snprintf(path, sizeof(path), "/dev/%s", links[i].name);
		add(b, CONFINE_SYMLINK, links[i].to, path);
	}
	mount_at(b, "tmpfs", "/dev/shm", MS_NOSUID | MS_NODEV, "mode=1777");
}

int confine_plan_build(struct confine_plan *p, confine_probe_fn probe, void *ctx,
		       const char *run_dir)
{
	struct builder b = { .p = p, .probe = probe, .ctx = ctx };
	char path[CONFINE_PATH_MAX];
	struct confine_step *s;

	p->n = 0;
	switch (probe(ctx, CONFINE_WORKSPACE, NULL, 0)) {
	case CONFINE_DIR:
	case CONFINE_LINK: /* a bind follows it, as the unconfined view does */
		break;
	default:
		return -ENOENT;
	}
	add(&b, CONFINE_UNSHARE, NULL, NULL);
	add(&b, CONFINE_PRIVATE, NULL, "/");
	/* The new root's mount point, on the guest's /run (then a tmpfs of
	 * this namespace's own is mounted on it, so it stays empty). */
	s = add(&b, CONFINE_MKDIR, NULL, NULL);
	if (s) {
		snprintf(s->dst, sizeof(s->dst), "%s", CONFINE_ROOT);
		s->mode = 0700;
	}
	s = add(&b, CONFINE_MOUNT, NULL, NULL);
	if (s) {
		snprintf(s->dst, sizeof(s->dst), "%s", CONFINE_ROOT);
		s->fstype = "tmpfs";
		s->flags = MS_NOSUID | MS_NODEV;
		s->data = "mode=0755";
	}
	for (size_t i = 0; i < N(runtime_dirs); i++) {
		snprintf(path, sizeof(path), "/%s", runtime_dirs[i]);
		show(&b, path, false);
	}
	mkdir_at(&b, "/etc", 0755);
	show_each(&b, "/etc", etc_entries, N(etc_entries));
	/* The egress CA's files, which the environment names (trust_ca.h):
	 * without them TLS would fail, not merely skip the CA. */
	if (probe(ctx, TRUST_BUNDLE_FILE, NULL, 0) == CONFINE_NODE) {
		mkdir_at(&b, "/run", 0755);
		mkdir_at(&b, TRUST_RUN_DIR, 0755);
		show_each(&b, TRUST_RUN_DIR, trust_files, N(trust_files));
	}
	if (run_dir) {
		/* only a directory of the run-code directory's own */
		const char *name;

		if (strncmp(run_dir, CONFINE_RUN_DIR "/", sizeof(CONFINE_RUN_DIR)))
			return -EINVAL;
		name = run_dir + sizeof(CONFINE_RUN_DIR);
		if (!*name || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..") ||
		    probe(ctx, run_dir, NULL, 0) != CONFINE_DIR)
			return -EINVAL;
		mkdir_at(&b, "/run", 0755);
		mkdir_at(&b, CONFINE_RUN_DIR, 0755);
		show_each(&b, CONFINE_RUN_DIR, run_helpers, N(run_helpers));
		show(&b, run_dir, true);
	}
	/* Read-write, with whatever is mounted below it (a share). Guest root
	 * can write there, and mount there, what it likes: a set-uid-root
	 * program or a device node, on a mount of its own without nosuid.
	 * None of it takes effect in the view, at any depth. */
	mkdir_at(&b, CONFINE_WORKSPACE, 0755);
	bind(&b, CONFINE_WORKSPACE, CONFINE_WORKSPACE, MS_REC);
	add(&b, CONFINE_NOSUID, NULL, CONFINE_WORKSPACE);
	mount_at(&b, "tmpfs", "/tmp", MS_NOSUID | MS_NODEV, "mode=1777");
	dev(&b);
	/* A proc of its own: this namespace's mounts in /proc/self/mounts,
	 * and (hidepid) no view of root's processes, the agent's included,
	 * for the default user. */
	mount_at(&b, "proc", "/proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible");
	s = add(&b, CONFINE_PIVOT, NULL, NULL);
	if (s)
		snprintf(s->dst, sizeof(s->dst), "%s", CONFINE_ROOT);
	/* Nothing new at the top level: files go to /workspace or /tmp. */
	add(&b, CONFINE_READONLY, NULL, "/");
	return b.err;
}

/* dst as the confined process sees it: without the new root's prefix. */
static const char *seen(const struct confine_step *s)
{
	size_t n = strlen(CONFINE_ROOT);

	if (s->op != CONFINE_PIVOT && strncmp(s->dst, CONFINE_ROOT, n) == 0 && s->dst[n] == '/')
		return s->dst + n;
	return s->dst;
}

void confine_step_describe(const struct confine_plan *p, size_t i, char *buf, size_t bufsz)
{
	const struct confine_step *s;

	if (i >= p->n) {
		snprintf(buf, bufsz, "step %zu", i);
		return;
	}
	s = &p->step[i];
	switch (s->op) {
	case CONFINE_UNSHARE:
		snprintf(buf, bufsz, "creating a mount namespace");
		break;
	case CONFINE_PRIVATE:
		snprintf(buf, bufsz, "making the mounts private");
		break;
	case CONFINE_MKDIR:
		snprintf(buf, bufsz, "creating directory %s", seen(s));
		break;
	case CONFINE_FILE:
		snprintf(buf, bufsz, "creating mount point %s", seen(s));
		break;
	case CONFINE_SYMLINK:
		snprintf(buf, bufsz, "creating link %s -> %s", seen(s), s->src);
		break;
	case CONFINE_MOUNT:
		snprintf(buf, bufsz, "mounting %s on %s", s->fstype, seen(s));
		break;
	case CONFINE_BIND:
		snprintf(buf, bufsz, "showing %s", s->src);
		break;
	case CONFINE_READONLY:
		snprintf(buf, bufsz, "making %s read-only", seen(s));
		break;
	case CONFINE_NOSUID:
		snprintf(buf, bufsz, "making %s nosuid and nodev", seen(s));
		break;
	case CONFINE_PIVOT:
		snprintf(buf, bufsz, "switching to the new root");
		break;
	}
}
