/*
 * kiln-runtime: an OCI runtime with runc's command line that runs each
 * container in a kiln microVM (docs/oci-runtime.md). This file is main:
 * the command table, the error and log lines, exit statuses (0, or 1 on
 * any error, as runc). The decisions live in the modules: rt_cli (argv),
 * rt_config (config.json), rt_plan (the VM), rt_state and rt_dir (the
 * state directory), rt_log (--log lines).
 *
 * Work in progress (issue 34, slice 1): create checks the bundle and
 * plans the VM, then says the VM boot is not wired yet and leaves
 * nothing behind; state, list, delete and features work on the state
 * directory; the commands that need the shim or the VM say "not yet".
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include "api/runtime/rt_cli.h"
#include "api/runtime/rt_config.h"
#include "api/runtime/rt_dir.h"
#include "api/runtime/rt_hooks.h"
#include "api/runtime/rt_log.h"
#include "api/runtime/rt_plan.h"
#include "api/runtime/rt_pod.h"
#include "api/runtime/rt_shim_sock.h"
#include "api/runtime/rt_state.h"
#include "lib/base/fd_io.h"
#include "lib/base/proc_stat.h"
#include "lib/base/text_clean.h"
#include "lib/base/version.h"

#define SHIM_KILL_WAIT_MS 2000 /* delete --force: the shim's end after SIGKILL */

static int log_fd = -1; /* --log, opened once in main */

/* One --log line (and, for an error, the same text on stderr). */
static void report(const struct rt_cmd *c, enum rt_log_level l, const char *msg)
{
	char line[RT_LOG_LINE_MAX], t[RT_LOG_TIME_MAX];
	struct timespec now;
	int n;

	if (l == RT_LOG_ERROR) {
		fputs("kiln-runtime: ", stderr);
		text_clean_term_fput(stderr, msg);
		fputc('\n', stderr);
	}
	if (log_fd < 0 || (l == RT_LOG_DEBUG && !c->g.debug))
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	rt_log_time(t, &now, false);
	n = rt_log_line(line, sizeof(line), c->g.log_format, l, t, msg);
	if (n > 0)
		fd_io_write_all(log_fd, line, (size_t)n);
}

static int not_yet(const struct rt_cmd *c, struct err *e)
{
	return err_set(e, ENOSYS,
		       "%s: not supported yet: it needs the container's VM, which this kiln-runtime "
		       "does not boot yet",
		       c->verb_name);
}

/* The bundle's config.json, read whole and parsed. */
static int read_config(const char *bundle, struct rt_config *cfg, struct err *e)
{
	char what[RT_PATH_MAX + 16], *buf;
	size_t n;
	int dirfd, r;

	memset(cfg, 0, sizeof(*cfg));
	snprintf(what, sizeof(what), "%.4000s/config.json", bundle);
	dirfd = open(bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return err_set(e, errno, "--bundle %.200s: %s", bundle, strerror(errno));
	r = rt_file_read(dirfd, "config.json", true, RT_CONFIG_FILE_MAX, what, &buf, &n, e);
	close(dirfd);
	if (r < 0)
		return r;
	r = rt_config_parse(buf, n, cfg, e);
	free(buf);
	return r;
}

/* root.path as an absolute directory (relative: to the bundle). */
static int rootfs_path(const char *bundle, const struct rt_config *cfg, char *out, struct err *e)
{
	char joined[RT_PATH_MAX];
	struct stat st;

	if ((size_t)snprintf(joined, sizeof(joined), "%s/%s",
			     cfg->root_path[0] == '/' ? "" : bundle,
			     cfg->root_path) >= sizeof(joined))
		return err_set(e, ENAMETOOLONG, "root.path is too long");
	if (!realpath(joined, out) || stat(out, &st) < 0)
		return err_set(e, errno, "root.path %.200s: %s", joined, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return err_set(e, ENOTDIR, "root.path %.200s is not a directory", joined);
	return 0;
}

/* What create checks before it makes anything: runc's own refusals of
 * the flags against the config, then the config and its plan. */
static int create_checks(const struct rt_cmd *c, const struct rt_config *cfg, struct err *e)
{
	struct rt_sizing size;
	struct rt_plan plan;
	struct rt_pod pod;
	char cg[RT_PATH_MAX];
	int r;

	if (cfg->process.terminal && !c->console_socket)
		return err_set(e, EINVAL,
			       "process.terminal is true but no --console-socket is given: the "
			       "engine must pass one to receive the terminal");
	if (!cfg->process.terminal && c->console_socket)
		return err_set(e, EINVAL,
			       "--console-socket is given but process.terminal is false: there is "
			       "no terminal to send");
	if (rt_pod_decide(cfg->annotations, c->id, &pod, e) < 0)
		return -EINVAL;
	if (pod.role == RT_POD_MEMBER)
		return err_set(e, ENOSYS,
			       "create: container \"%s\" of pod sandbox \"%s\": running a pod's "
			       "containers in its sandbox's VM is not supported yet",
			       c->id, pod.sandbox);
	if (rt_plan_sizing(cfg, &size, e) < 0 ||
	    (!c->g.cgroups_disabled &&
	     rt_plan_cgroup(cfg, c->id, c->g.systemd_cgroup, cg, sizeof(cg), e) < 0))
		return -EINVAL;
	r = rt_plan_build(cfg, c->id, &plan, e);
	rt_plan_free(&plan);
	return r;
}

static void record_init(struct rt_state_rec *r, const struct rt_cmd *c, const char *bundle,
			const char *rootfs, const struct rt_config *cfg)
{
	struct timespec now;

	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "%s", c->id);
	snprintf(r->bundle, sizeof(r->bundle), "%s", bundle);
	snprintf(r->rootfs, sizeof(r->rootfs), "%s", rootfs);
	clock_gettime(CLOCK_REALTIME, &now);
	rt_log_time(r->created, &now, true);
	r->status = RT_STATUS_CREATING;
	r->annotations = cfg->annotations;
}

static int cmd_create(const struct rt_cmd *c, struct err *e)
{
	char bundle[RT_PATH_MAX], rootfs[RT_PATH_MAX];
	struct rt_config cfg;
	struct rt_state_rec rec;
	struct err ignored;
	int r, rootfd = -1, dirfd = -1, lockfd = -1;

	if (geteuid() != 0)
		return err_set(e, EPERM,
			       "create: kiln-runtime needs root (kiln-vmm's jail does): rootless "
			       "engines are not supported");
	if (!realpath(c->bundle, bundle))
		return err_set(e, errno, "--bundle %.200s: %s", c->bundle, strerror(errno));
	r = read_config(bundle, &cfg, e);
	if (!r)
		r = create_checks(c, &cfg, e);
	if (!r)
		r = rootfs_path(bundle, &cfg, rootfs, e);
	if (!r)
		r = rt_dir_open_root(c->g.root, true, &rootfd, e);
	if (!r)
		r = rt_dir_make(rootfd, c->id, &dirfd, e);
	if (!r)
		r = rt_dir_lock(dirfd, c->id, RT_LOCK_WAIT_MS, &lockfd, e);
	if (!r) {
		record_init(&rec, c, bundle, rootfs, &cfg);
		r = rt_dir_write_state(dirfd, &rec, e);
	}
	if (!r)
		r = not_yet(c, e);
	/* A create that fails leaves nothing behind (runc's rule: the
	 * engine retries with the same ID). */
	if (dirfd >= 0)
		rt_dir_remove(rootfd, c->id, &ignored);
	if (lockfd >= 0)
		close(lockfd);
	if (dirfd >= 0)
		close(dirfd);
	if (rootfd >= 0)
		close(rootfd);
	rt_config_free(&cfg);
	return r;
}

/* The container's directory and record (locked unless lockfd is NULL). */
static int open_container(const struct rt_cmd *c, int *rootfd, int *dirfd, int *lockfd,
			  struct rt_state_rec *rec, struct err *e)
{
	int r;

	memset(rec, 0, sizeof(*rec));
	*dirfd = -1;
	if (lockfd)
		*lockfd = -1;
	r = rt_dir_open_root(c->g.root, false, rootfd, e);
	if (r == -ENOENT)
		return err_set(e, ENOENT, "container \"%s\" does not exist", c->id);
	if (r < 0)
		return r;
	r = rt_dir_open(*rootfd, c->id, dirfd, e);
	if (!r && lockfd)
		r = rt_dir_lock(*dirfd, c->id, RT_LOCK_WAIT_MS, lockfd, e);
	if (!r)
		r = rt_dir_read_state(*dirfd, c->id, rec, e);
	return r;
}

static void close_container(int rootfd, int dirfd, int lockfd, struct rt_state_rec *rec)
{
	if (lockfd >= 0)
		close(lockfd);
	if (dirfd >= 0)
		close(dirfd);
	if (rootfd >= 0)
		close(rootfd);
	rt_state_rec_free(rec);
}

static int print(char *s)
{
	fputs(s, stdout);
	free(s);
	return fflush(stdout) == 0 ? 0 : -EIO;
}

static int cmd_state(const struct rt_cmd *c, struct err *e)
{
	struct rt_state_rec rec;
	struct rt_state_view v = { &rec, 0, 0 };
	int rootfd, dirfd, r;
	char *s;

	r = open_container(c, &rootfd, &dirfd, NULL, &rec, e);
	if (!r) {
		v.status = rt_dir_status(&rec, &v.pid);
		r = rt_state_render(&v, &s, e);
	}
	if (!r)
		r = print(s);
	close_container(rootfd, dirfd, -1, &rec);
	return r;
}

/* One record for `list`, 0 with *rec or <0 when it cannot be read (a
 * create in progress or dying: skipped, as runc skips what it cannot
 * load). */
static int list_one(int rootfd, const char *id, struct rt_state_rec *rec)
{
	int d, r = rt_dir_open(rootfd, id, &d, NULL);

	if (r < 0)
		return r;
	r = rt_dir_read_state(d, id, rec, NULL);
	close(d);
	return r;
}

static int cmd_list(const struct rt_cmd *c, struct err *e)
{
	struct rt_state_rec *recs = NULL;
	struct rt_state_view *views = NULL;
	char **ids = NULL, *s;
	size_t n = 0, k = 0;
	int rootfd, r;

	r = rt_dir_open_root(c->g.root, false, &rootfd, e);
	if (r == -ENOENT)
		r = 0, rootfd = -1; /* nothing was ever created */
	if (!r && rootfd >= 0)
		r = rt_dir_list(rootfd, &ids, &n, e);
	if (!r && n) {
		recs = calloc(n, sizeof(*recs));
		views = calloc(n, sizeof(*views));
		if (!recs || !views)
			r = err_set(e, ENOMEM, "out of memory listing containers");
	}
	for (size_t i = 0; !r && i < n; i++) {
		if (list_one(rootfd, ids[i], &recs[k]) < 0)
			continue;
		views[k].rec = &recs[k];
		views[k].status = rt_dir_status(&recs[k], &views[k].pid);
		k++;
	}
	if (!r)
		r = rt_state_render_list(views, k, c->format == RT_FORMAT_JSON, c->quiet, &s, e);
	if (!r)
		r = print(s);
	for (size_t i = 0; i < k; i++)
		rt_state_rec_free(&recs[i]);
	free(recs);
	free(views);
	rt_dir_list_free(ids, n);
	if (rootfd >= 0)
		close(rootfd);
	return r;
}

/* SIGKILL the shim named by the record (its pidfd pins the process, the
 * start time checked after it is open) and wait for its end. */
static int kill_shim(const struct rt_state_rec *rec, struct err *e)
{
	int fd = (int)syscall(SYS_pidfd_open, rec->shim.pid, 0);
	struct pollfd p;

	if (fd < 0)
		return errno == ESRCH ? 0
				      : err_set(e, errno, "container \"%s\": its shim: %s", rec->id,
						strerror(errno));
	if (!rt_proc_alive(rec->shim.pid, rec->shim.start)) {
		close(fd); /* another process took the pid: not ours to kill */
		return 0;
	}
	if (syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0) < 0 && errno != ESRCH) {
		close(fd);
		return err_set(e, errno, "container \"%s\": killing its shim: %s", rec->id,
			       strerror(errno));
	}
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	poll(&p, 1, SHIM_KILL_WAIT_MS);
	close(fd);
	return 0;
}

/* poststop hooks once the container is gone (runtime-spec: a failure
 * is logged as a warning, delete still succeeds). */
static void run_poststop(const struct rt_cmd *c, const struct rt_state_rec *rec)
{
	struct rt_state_view v = { rec, RT_STATUS_STOPPED, 0 };
	struct rt_config cfg;
	struct err e;
	char *state = NULL;

	if (!rec->bundle[0] || read_config(rec->bundle, &cfg, &e) < 0) {
		if (rec->bundle[0])
			report(c, RT_LOG_WARNING, e.msg);
		return;
	}
	if (cfg.poststop.n &&
	    (rt_state_render_hook(&v, &state, &e) < 0 ||
	     rt_hooks_run(&cfg.poststop, "poststop", state, &e) < 0))
		report(c, RT_LOG_WARNING, e.msg);
	free(state);
	rt_config_free(&cfg);
}

static int cmd_delete(const struct rt_cmd *c, struct err *e)
{
	struct rt_state_rec rec;
	int rootfd, dirfd, lockfd, pid, r;
	enum rt_status st;

	r = open_container(c, &rootfd, &dirfd, &lockfd, &rec, e);
	if (r == -ENOENT && dirfd >= 0)
		r = 0; /* a create that died before its record: remove what it left */
	st = r ? RT_STATUS_STOPPED : rt_dir_status(&rec, &pid);
	if (!r && (st == RT_STATUS_RUNNING || st == RT_STATUS_PAUSED) && !c->force)
		r = err_set(e, EBUSY,
			    "cannot delete container %s that is not stopped: %s (use --force)",
			    c->id, rt_status_name(st));
	if (!r && st != RT_STATUS_STOPPED)
		r = kill_shim(&rec, e);
	if (!r)
		r = rt_dir_remove(rootfd, c->id, e);
	if (!r && rec.id_range)
		r = rt_ids_free(rootfd, rec.id_range, c->id, e);
	if (!r)
		run_poststop(c, &rec);
	close_container(rootfd, dirfd, lockfd, &rec);
	return r;
}

/* A container held for a command that goes to its shim: its record,
 * status and directory under its lock. */
struct held {
	int rootfd, dirfd, lockfd;
	struct rt_state_rec rec;
	enum rt_status st;
};

static int hold(const struct rt_cmd *c, struct held *h, struct err *e)
{
	int pid, r = open_container(c, &h->rootfd, &h->dirfd, &h->lockfd, &h->rec, e);

	h->st = r ? RT_STATUS_STOPPED : rt_dir_status(&h->rec, &pid);
	return r;
}

static void release(struct held *h)
{
	close_container(h->rootfd, h->dirfd, h->lockfd, &h->rec);
}

/* poststart hooks (a failure is a warning, the container runs on). */
static void run_poststart(const struct rt_cmd *c, const struct rt_state_rec *rec)
{
	struct rt_state_view v = { rec, RT_STATUS_RUNNING, rec->shim.pid };
	struct rt_config cfg;
	struct err e;
	char *state = NULL;

	if (read_config(rec->bundle, &cfg, &e) < 0) {
		report(c, RT_LOG_WARNING, e.msg);
		return;
	}
	if (cfg.poststart.n &&
	    (rt_state_render_hook(&v, &state, &e) < 0 ||
	     rt_hooks_run(&cfg.poststart, "poststart", state, &e) < 0))
		report(c, RT_LOG_WARNING, e.msg);
	free(state);
	rt_config_free(&cfg);
}

static int cmd_kill(const struct rt_cmd *c, struct err *e)
{
	struct rt_shim_req req = { .op = RT_SHIM_KILL, .signo = c->signal, .all = c->all };
	struct held h;
	int r = hold(c, &h, e);

	if (!r && h.st == RT_STATUS_STOPPED)
		r = err_set(e, ESRCH, "container not running");
	if (!r)
		r = rt_shim_sock_call(h.dirfd, &req, RT_SHIM_CALL_MS, e);
	release(&h);
	return r;
}

static int cmd_start(const struct rt_cmd *c, struct err *e)
{
	struct rt_shim_req req = { .op = RT_SHIM_START };
	struct held h;
	int r = hold(c, &h, e);

	if (!r && h.st == RT_STATUS_STOPPED)
		r = err_set(e, EINVAL, "cannot start a container that has stopped");
	else if (!r && h.st != RT_STATUS_CREATED)
		r = err_set(e, EINVAL, "cannot start an already running container");
	if (!r)
		r = rt_shim_sock_call(h.dirfd, &req, RT_SHIM_CALL_MS, e);
	if (!r) {
		h.rec.status = RT_STATUS_RUNNING;
		r = rt_dir_write_state(h.dirfd, &h.rec, e);
	}
	if (!r)
		run_poststart(c, &h.rec);
	release(&h);
	return r;
}

static int cmd_features(const struct rt_cmd *c, struct err *e)
{
	char *s;

	(void)c;
	if (rt_state_render_features(&s, e) < 0)
		return -ENOMEM;
	return print(s);
}

/* `spec`: a starting config.json in the bundle, never over one. */
static int cmd_spec(const struct rt_cmd *c, struct err *e)
{
	char *s;
	int dirfd, fd, r;

	if (c->rootless_spec)
		return err_set(e, EINVAL, "spec --rootless: kiln-runtime runs as root only");
	dirfd = open(c->bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return err_set(e, errno, "--bundle %.200s: %s", c->bundle, strerror(errno));
	fd = openat(dirfd, "config.json", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		    0644);
	close(dirfd);
	if (fd < 0 && errno == EEXIST)
		return err_set(e, EEXIST, "spec: %.200s/config.json exists: remove it first",
			       c->bundle);
	if (fd < 0)
		return err_set(e, errno, "spec: %.200s/config.json: %s", c->bundle,
			       strerror(errno));
	r = rt_state_render_spec(&s, e);
	if (!r && fd_io_write_all(fd, s, strlen(s)) < 0)
		r = err_set(e, EIO, "spec: writing config.json: %s", strerror(errno));
	if (!r)
		free(s);
	close(fd);
	return r;
}

/* `ps`: the host pids standing for the container's processes, the
 * shims' (the engine's view of the container; its guest pids would name
 * unrelated host processes): a JSON array (containerd's shim reads it),
 * or a PID column. */
static int cmd_ps(const struct rt_cmd *c, struct err *e)
{
	struct held h;
	int r = hold(c, &h, e);

	if (r < 0) {
		release(&h);
		return r;
	}
	printf(c->format == RT_FORMAT_JSON ? "[" : "PID\n");
	if (h.st != RT_STATUS_STOPPED)
		printf(c->format == RT_FORMAT_JSON ? "%d" : "%d\n", h.rec.shim.pid);
	printf(c->format == RT_FORMAT_JSON ? "]\n" : "");
	release(&h);
	return fflush(stdout) == 0 ? 0 : -EIO;
}

typedef int command_fn(const struct rt_cmd *c, struct err *e);

static const struct {
	enum rt_verb verb;
	command_fn *run;
} commands[] = {
	{ RT_CREATE, cmd_create },     { RT_START, cmd_start },   { RT_STATE, cmd_state },
	{ RT_KILL, cmd_kill },         { RT_DELETE, cmd_delete }, { RT_LIST, cmd_list },
	{ RT_FEATURES, cmd_features }, { RT_SPEC, cmd_spec },     { RT_PS, cmd_ps },
};

static int run(const struct rt_cmd *c, struct err *e)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (commands[i].verb == c->verb)
			return commands[i].run(c, e);
	return not_yet(c, e);
}

static void open_log(const struct rt_cmd *c)
{
	if (c->g.log)
		log_fd = open(c->g.log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (c->g.log && log_fd < 0)
		fprintf(stderr, "kiln-runtime: --log %s: %s (logging to stderr only)\n", c->g.log,
			strerror(errno));
}

int main(int argc, char **argv)
{
	static struct rt_cmd c;
	struct err e = { { 0 } };

	if (rt_cli_parse(argc, argv, &c, &e) < 0) {
		open_log(&c);
		report(&c, RT_LOG_ERROR, e.msg);
		return 1;
	}
	if (c.g.version && c.verb == RT_NONE) {
		printf("kiln-runtime version %s\nspec: %s\n", KILN_VERSION, RT_OCI_VERSION);
		return 0;
	}
	if (c.g.help) {
		if (c.verb == RT_NONE)
			printf("%s\n", rt_cli_usage(c.verb));
		else
			printf("usage: kiln-runtime %s\n", rt_cli_usage(c.verb));
		return 0;
	}
	open_log(&c);
	for (size_t i = 0; i < c.nignored; i++) {
		char msg[128];

		snprintf(msg, sizeof(msg), "%s: --%s is accepted and ignored", c.verb_name,
			 c.ignored[i]);
		report(&c, RT_LOG_DEBUG, msg);
	}
	if (run(&c, &e) < 0) {
		report(&c, RT_LOG_ERROR, e.msg);
		return 1;
	}
	return 0;
}
