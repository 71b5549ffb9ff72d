/* A container's own VM for its shim, booted or resumed; see rt_shim_int.h. */
#include "api/runtime/rt_shim_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "api/runtime/rt_cgroup.h"
#include "api/runtime/rt_dir.h"
#include "api/runtime/rt_shim_vmm.h"
#include "api/runtime/rt_shim_warm.h"
#include "api/runtime/rt_trace.h"
#include "api/runtime/rt_warm.h"
#include "lib/base/share_open.h"
#include "lib/base/text_clean.h"

/* The rootfs, the two bind directories and a pod sandbox's pod/,
 * opened without following a link, as kiln-vmm's shares. */
static int shares_open(struct shim *s, struct err *e)
{
	static const char *const sub[NSHARES] = { NULL, RT_BINDS_DIR "/ro", RT_BINDS_DIR "/rw",
						  RT_POD_DIR };
	const struct rt_shim_args *a = s->a;
	const bool want[NSHARES] = { true, a->plan->has_ro_binds, a->plan->has_rw_binds,
				     a->plan->pod_share };
	char path[RT_PATH_MAX];
	int r = share_open(a->rec->rootfs, NULL, 0, &s->shares[0], e);

	for (int i = 1; !r && i < NSHARES; i++) {
		if (!want[i])
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", a->dir, sub[i]) >= sizeof(path))
			return err_set(e, ENAMETOOLONG,
				       "the container's directory path is too long");
		r = share_open(path, NULL, 0, &s->shares[i], e);
	}
	return r;
}

/* The jail directory and its two sockets' paths; the agent client. */
int rt_shim_vm_paths(struct shim *s, char *jail, char *vsock, char *control, struct err *e)
{
	int r;

	if (!s->exec && !s->member && (r = rt_jail_make(s->a->jail, e)) < 0)
		return r;
	if ((size_t)snprintf(jail, RT_PATH_MAX, "%s", s->a->jail) >= RT_PATH_MAX ||
	    (size_t)snprintf(vsock, RT_PATH_MAX, "%s/vsock", jail) >= RT_PATH_MAX ||
	    (size_t)snprintf(control, RT_PATH_MAX, "%s/control", jail) >= RT_PATH_MAX)
		return err_set(e, ENAMETOOLONG, "the container's directory path is too long");
	r = agent_client_init(&s->ac, vsock);
	if (r < 0)
		return err_set(e, -r,
			       "the vsock socket's path %s is longer than a Unix socket takes: use a "
			       "shorter --root",
			       vsock);
	s->ac.timeout_ms = RT_AGENT_MS;
	return 0;
}

/* kiln-vmm's stderr: a pipe the shim copies into vmm.log, capped. */
static int vm_log_open(struct shim *s, int *wfd, struct err *e)
{
	int p[2], r;

	*wfd = -1;
	if (pipe2(p, O_CLOEXEC) < 0)
		return err_set(e, errno, "kiln-vmm's log pipe: %s", strerror(errno));
	r = capped_log_open(&s->vlog, s->a->dirfd, RT_VMM_LOG, RT_VMM_LOG_OLD, RT_VMM_LOG_CAP);
	if (r < 0 || fcntl(p[0], F_SETFL, O_NONBLOCK) < 0) {
		r = err_set(e, r < 0 ? -r : errno, "%s: %s", RT_VMM_LOG,
			    strerror(r < 0 ? -r : errno));
		close(p[0]);
		close(p[1]);
		return r;
	}
	capped_log_attach(&s->vlog, p[0]);
	*wfd = p[1];
	return 0;
}

/* The part of a --net value after the TAP's name (mac=,ip=): "" none. */
static const char *net_identity(const char *net)
{
	const char *comma = strchr(net, ',');

	return comma ? comma + 1 : net;
}

/* A restored guest keeps the MAC and address it had: the engine's
 * network must give the same (else it would answer nothing). */
static bool same_net(const char *saved, const char *now, struct err *e)
{
	const char *was = net_identity(saved ? saved : ""), *is = net_identity(now);

	if (!strcmp(was, is))
		return true;
	err_set(e, EINVAL,
		"restore: the checkpoint's VM had network \"%s\", the network namespace now gives "
		"\"%s\": restore the container with its own address and MAC (Podman: without "
		"--ignore-static-ip or --ignore-static-mac)",
		was[0] ? was : "none", is[0] ? is : "none");
	return false;
}

/* <root>/.warm/<name>, made when missing (rt_shim_warm), into s->warm,
 * its lock held: the VM resumes it rather than booting. Any failure
 * costs only the warm start (a line in --log, then a cold boot). */
static void warm_pick(struct shim *s, const struct rt_files *f, const struct rt_sizing *size,
		      int logw)
{
	const struct rt_shim_args *a = s->a;
	const char *paths[RT_WARM_FILES] = { f->vmm, f->kernel, f->initrd };
	const char *slash = strrchr(a->dir, '/');
	struct rt_warm_ident id[RT_WARM_FILES];
	struct rt_warm_shape sh;
	char name[RT_WARM_NAME_MAX], root[RT_PATH_MAX], msg[ERR_MSG_MAX + 64];
	struct err we = { { 0 } };
	int warmfd = -1, r;

	if (s->member || a->restore || s->warm_failed || rt_warm_wanted(a->cfg, NULL) != 1 ||
	    !slash)
		return;
	snprintf(root, sizeof(root), "%.*s", (int)(slash - a->dir), a->dir);
	rt_plan_shape(a->plan, a->cfg, size, &sh);
	r = rt_warm_idents(paths, id, &we);
	if (!r) {
		rt_warm_name(id, &sh, name);
		r = rt_warm_dir_open(root[0] ? root : "/", &warmfd, &we);
	}
	if (!r)
		r = rt_warm_take(warmfd, name, RT_BOOT_MS, &s->warm_lock, &we);
	if (r == 0) {
		const struct rt_warm_make m = { f,      size,    &sh,
						warmfd, a->jail, a->rec->id_range,
						&s->ac, logw,    &s->vlog };

		rt_trace("shim: making the warm template");
		r = rt_warm_make(&m, name, &we);
		if (r == 0 && flock(s->warm_lock, LOCK_SH) < 0)
			r = err_set(&we, errno, "the warm template's lock: %s", strerror(errno));
		r = r < 0 ? r : 1;
	}
	if (warmfd >= 0)
		close(warmfd);
	if (r == 1 &&
	    (size_t)snprintf(s->warm, sizeof(s->warm), "%s/" RT_WARM_DIR "/%s", root, name) <
		    sizeof(s->warm))
		return;
	rt_warm_release(s->warm_lock);
	s->warm_lock = -1;
	s->warm[0] = '\0';
	snprintf(msg, sizeof(msg), "warm start: %s; booting the VM instead",
		 we.msg[0] ? we.msg : "the template's path is too long");
	rt_shim_log(s, RT_LOG_WARNING, msg);
}

/* The container's network namespace: the engine's, the shim's own
 * (own_netns), or none (NULL: loopback only). */
static const char *net_path(const struct shim *s, const struct rt_namespace *ns)
{
	if (ns && ns->path)
		return ns->path;
	return s->home_netns >= 0 ? RT_NET_OWN : NULL;
}

/* kiln-vmm, jailed, as the shim's child; started in the container's
 * network namespace (when it has one: the engine's, or the shim's own)
 * so it opens the TAP there. */
static int vm_start(struct shim *s, struct err *e)
{
	const struct rt_shim_args *a = s->a;
	const struct rt_namespace *ns = rt_config_ns(a->cfg, RT_NS_NETWORK);
	char jail[RT_PATH_MAX], vsock[RT_PATH_MAX], control[RT_PATH_MAX];
	char cmdline[RT_CMDLINE_MAX], net[RT_NET_OPT_MAX], tap[RT_TAP_NAME_MAX];
	struct rt_sizing size;
	struct rt_files f;
	struct rt_argv *argv = NULL;
	int logw = -1, nic = 0, r;

	if (rt_plan_sizing(a->cfg, &size, e) < 0 || rt_files_find(size.kernel, &f, e) < 0)
		return -EINVAL;
	if ((r = rt_shim_vm_paths(s, jail, vsock, control, e)) < 0 || (r = shares_open(s, e)) < 0)
		return r;
	memcpy(cmdline, a->plan->cmdline, sizeof(cmdline));
	rt_tap_name(jail, tap);
	if ((r = rt_net_open(&s->net, net_path(s, ns), tap, e)) < 0 ||
	    (r = rt_net_enter(&s->net, e)) < 0)
		return r;
	nic = rt_net_attach(&s->net, cmdline, sizeof(cmdline), net, e);
	if (nic > 0) { /* for delete, should the shim be killed (its own: gone
			* with it); for checkpoint */
		snprintf(a->rec->netns, sizeof(a->rec->netns), "%s", ns->path ? ns->path : "");
		snprintf(a->rec->tap, sizeof(a->rec->tap), "%s", tap);
		snprintf(a->rec->net, sizeof(a->rec->net), "%s", net);
	}
	if (nic >= 0 && a->restore && !same_net(a->restore_net, nic > 0 ? net : "", e))
		nic = -EINVAL;
	argv = calloc(1, sizeof(*argv));
	r = nic < 0 ? nic : argv ? 0 : err_set(e, ENOMEM, "out of memory");
	if (!r)
		r = vm_log_open(s, &logw, e);
	if (!r && nic == 0) /* a NIC's address is the boot's: only a VM without one resumes */
		warm_pick(s, &f, &size, logw);
	/* A template is made outside the container's cgroup (its copy in
	 * .warm outlives the container); the container's VM starts in it.
	 * The template's VM used the jail: it must be there again. */
	if (!r && (r = rt_jail_make(jail, e)) == 0)
		r = rt_cgroup_enter(a->rec, e);
	struct rt_vmm_launch l = {
		.vmm = f.vmm,
		.kernel = f.kernel,
		.initrd = f.initrd,
		.vsock = vsock,
		.control = control,
		.jail_dir = jail,
		.jail_id = a->rec->id_range,
		.root_fd = s->shares[0],
		.bro_fd = s->shares[1],
		.brw_fd = s->shares[2],
		.pod_fd = s->shares[3],
		.root_readonly = a->cfg->root_readonly,
		.size = &size,
		.cmdline = cmdline,
		.net = nic > 0 ? net : NULL,
		.restore = a->restore ? a->restore
			: s->warm[0]  ? s->warm
				      : NULL,
	};
	if (!r)
		r = rt_plan_vmm_argv(&l, argv, e);
	if (!r && getenv(RT_TRACE_ENV) && argv->argc < RT_ARGV_MAX) /* its milestones, at its end */
		argv->argv[argv->argc++] = "--boot-timeline";
	if (!r) {
		struct rt_vmm_spawn sp = { argv->argv, logw, s->shares, NSHARES };

		r = rt_vmm_spawn(&sp, &s->vmm_pid, e);
	}
	if (rt_net_leave(&s->net, e) < 0 && !r)
		r = -EINVAL; /* the shim must not run on in the container's network */
	if (logw >= 0)
		close(logw);
	free(argv);
	for (int i = 0; i < NSHARES; i++)
		if (s->shares[i] >= 0) {
			close(s->shares[i]);
			s->shares[i] = -1;
		}
	return r;
}

/* The last line kiln-vmm wrote to vmm.log (its reason, when it ended
 * during boot), cleaned to printable text: the create that failed
 * removes the state directory, so the engine's error must carry it. */
static void vmm_log_tail(const struct shim *s, char *out, size_t cap)
{
	char buf[512];
	int fd = openat(s->a->dirfd, RT_VMM_LOG, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	off_t end = fd < 0 ? -1 : lseek(fd, 0, SEEK_END);
	ssize_t n = 0;
	char *line;

	out[0] = '\0';
	if (end > 0)
		n = pread(fd, buf, sizeof(buf) - 1,
			  end > (off_t)sizeof(buf) - 1 ? end - (off_t)sizeof(buf) + 1 : 0);
	if (fd >= 0)
		close(fd);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	if (n <= 0)
		return;
	buf[n] = '\0';
	line = strrchr(buf, '\n');
	line = line ? line + 1 : buf;
	text_clean_term(out, cap, line, strlen(line));
}

/*
 * kiln-vmm ended while it resumed the warm template (one a host's new
 * kernel or CPU no longer takes, or a damaged one): the template goes, so
 * no later container meets it, and the VM is started again, booting.
 * Other VMs resuming it meanwhile have its files open already.
 */
static void warm_drop(struct shim *s, const struct err *why)
{
	char msg[ERR_MSG_MAX + RT_PATH_MAX + 96], dir[RT_PATH_MAX];
	char *slash;
	struct err ignored;
	int fd;

	snprintf(dir, sizeof(dir), "%s", s->warm);
	slash = strrchr(dir, '/');
	snprintf(msg, sizeof(msg),
		 "warm start: %s; the template %s is removed, booting the VM instead", why->msg,
		 dir);
	rt_shim_log(s, RT_LOG_WARNING, msg);
	if (slash) {
		*slash = '\0';
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0) {
			rt_dir_clear(fd, slash + 1);
			close(fd);
		}
	}
	rt_warm_release(s->warm_lock);
	s->warm_lock = -1;
	s->warm[0] = '\0';
	s->warm_failed = true;
	/* as before the first start: vm_start opens each afresh */
	capped_log_close(&s->vlog);
	rt_net_close(&s->net);
	rt_jail_remove(s->a->jail, &ignored);
	s->vmm_pid = -1;
	s->vmm_reaped = false;
}

/* The container's own VM: kiln-vmm started, its agent answering, the
 * guest's clock set. */
int rt_shim_vm_boot(struct shim *s, struct err *e)
{
	uint8_t seed[AGENT_ENTROPY_MAX];
	struct agent_client_err ae;
	struct timespec now;
	int r = vm_start(s, e);

	if (r < 0)
		return r;
	rt_trace(s->warm[0] ? "shim: kiln-vmm started, resuming the warm template"
			    : "shim: kiln-vmm started");
	r = rt_vmm_wait_agent(&s->ac, s->vmm_pid, RT_BOOT_MS, &s->vlog, e);
	if (r == -ECHILD) {
		s->vmm_reaped = true;
		char tail[200], first[ERR_MSG_MAX];

		capped_log_pump(&s->vlog);
		vmm_log_tail(s, tail, sizeof(tail));
		memcpy(first, e->msg, sizeof(first));
		if (tail[0])
			err_set(e, ECHILD, "%.200s: %s", first, tail);
	}
	if (r == -ECHILD && s->warm[0]) {
		warm_drop(s, e);
		return rt_shim_vm_boot(s, e); /* once: warm_failed */
	}
	if (r < 0)
		return r;
	rt_trace("shim: agent ready");
	rt_warm_release(s->warm_lock); /* kiln-vmm has the template's files open */
	s->warm_lock = -1;
	/* Entropy too: a resumed guest (a warm start, a restore) holds the
	 * random pool of the snapshot, every other one resumed from it too. */
	if (getrandom(seed, sizeof(seed), 0) != (ssize_t)sizeof(seed))
		return err_set(e, EIO,
			       "the guest's entropy: the host's getrandom gave less than %zu "
			       "bytes (its random pool not ready yet?): retry the create",
			       sizeof(seed));
	clock_gettime(CLOCK_REALTIME, &now);
	if (agent_client_sync_clock_seed(&s->ac, (int64_t)now.tv_sec * 1000000000 + now.tv_nsec,
					 seed, sizeof(seed), NULL, &ae) < 0)
		return rt_shim_agent_fail(&ae, "setting the guest's clock", e);
	rt_trace("shim: clock synced");
	return 0;
}
