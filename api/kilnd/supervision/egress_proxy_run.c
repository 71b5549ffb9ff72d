/* The egress proxies' runner; see egress_proxy_run.h. */
#include "api/kilnd/supervision/egress_proxy_run.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/kilnd/images/image_import.h"
#include "api/kilnd/images/import_ns.h"
#include "api/kilnd/keeper/keeper.h"
#include "api/kilnd/net/sandbox_egress.h"
#include "api/kilnd/registry/sandbox_impl.h"
#include "api/kilnd/supervision/cgroup.h"
#include "api/kilnd/supervision/egress_proxy.h"
#include "api/kilnd/supervision/egress_proxy_plan.h"
#include "api/kilnd/supervision/egress_proxy_seccomp.h"
#include "api/kilnd/supervision/egress_tally.h"
#include "lib/base/capped_log.h"
#include "lib/base/sig_reset.h"
#include "lib/base/thread_start.h"
#include "lib/egress/egress_cgroup.h"
#include "lib/egress/egress_policy.h"
#include "lib/netrules/net_host_addrs.h"

#define BACKOFF_FIRST_MS 1000
#define BACKOFF_MAX_MS 60000
/* A proxy that ran this long before it ended starts again at once (after BACKOFF_FIRST_MS). */
#define BACKOFF_RESET_MS 60000
/* --init-ca makes a key and a certificate: milliseconds; generous. */
#define INIT_CA_TIMEOUT_MS 30000
/* What a proxy may use: ample for one sandbox's flows. */
#define PROXY_MEMORY_MIB 512
#define PROXY_PIDS 512
#define PROXY_CPU_CENTI 100
#define PROXY_NOFILE 4096

struct egress_proxies;

struct egress_ent {
	struct egress_ent *next;
	struct egress_proxies *px;
	char id[SANDBOX_ID_LEN + 1];
	char dir[PATH_MAX];          /* the sandbox's */
	char edir[PATH_MAX + 16];    /* <dir>/egress */
	char sock[KILND_SOCKET_MAX]; /* <dir>/vm/egress.sock */
	char cg[PATH_MAX];           /* its cgroup; "": none */
	uint32_t uid;                /* the proxy's; 0: kilnd's own (--no-jail) */
	int listen_fd;               /* kilnd's copy: the socket outlives a proxy's restart */
	int policy_fd;               /* kilnd's end of the running proxy's decision stream, or -1 */
	bool policy_held;            /* a client holds it (egress_run_policy_attach) */
	int dirfd;                   /* the sandbox directory, for the log */
	struct capped_log log;       /* egress.log: the proxy's stdout and stderr */
	struct egress_tally tally;   /* its decision lines, counted into px->counts */
	pid_t pid;                   /* 0: not running */
	int pidfd;
	bool want;      /* keep it running */
	bool start_now; /* the runner starts it, then sets started */
	bool started;
	char start_err[ERR_MSG_MAX]; /* why the last start failed; "": it did not */
	unsigned fails;
	int64_t next_mono, started_mono; /* next start (when !pid && want); the last start */
};

struct egress_proxies {
	struct kilnd *d;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* an entry started or was reaped */
	int wake;          /* eventfd: the runner looks again */
	pthread_t th;
	bool stop;
	struct egress_ent *list;
	struct egress_filter filter;
	unsigned running;
	uint64_t restarts;
	struct egress_counts counts; /* every proxy's decisions since kilnd started */
};

/* capped_log's tap: the runner pumps with px->mu held. */
static void tally_tap(void *arg, const char *p, size_t n)
{
	struct egress_ent *en = arg;

	egress_tally_feed(&en->tally, p, n, &en->px->counts);
}

/* ---- the runner's side: forking, reaping, logs ---- */

static void wake(struct egress_proxies *px)
{
	uint64_t one = 1;

	if (write(px->wake, &one, sizeof(one)) < 0) {
		/* a full counter already wakes it */
	}
}

/* In the child: why it cannot go on, into egress.log, then exit 126. */
static void child_fail(const char *what, int errnum)
{
	const char *name = strerrorname_np(errnum);
	const char *parts[] = { "kilnd: could not confine the egress proxy: ", what, ": ",
				name ? name : "error", "\n" };

	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (write(2, parts[i], strlen(parts[i])) < 0)
			break;
	_exit(126);
}

/*
 * egress/resolv.conf bound on /etc/resolv.conf (as root, before the uid
 * drop). egress/ is the proxy's: one that was compromised can leave a
 * symlink there before it dies, and mount(2) would follow it, binding
 * any file the link names (through directories the proxy's uid cannot
 * search) where the next proxy reads it. So the name is opened without
 * following a link, must be a regular file, and that file is bound
 * through its descriptor. Child only: system calls alone.
 */
static void bind_resolv_conf(void)
{
	char src[32] = "/proc/self/fd/", digits[12];
	struct stat st;
	size_t n = strlen(src), k = 0;
	int fd = open(EGRESS_NS_DIR "/" EGRESS_RESOLV_CONF, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		child_fail("opening its " EGRESS_RESOLV_CONF, errno);
	if (fstat(fd, &st) < 0)
		child_fail("its " EGRESS_RESOLV_CONF, errno);
	if (!S_ISREG(st.st_mode))
		child_fail("its " EGRESS_RESOLV_CONF
			   " is not a regular file (a link left in egress/?)",
			   EINVAL);
	for (unsigned v = (unsigned)fd; k == 0 || v; v /= 10)
		digits[k++] = (char)('0' + v % 10);
	while (k)
		src[n++] = digits[--k];
	src[n] = '\0';
	if (mount(src, "/etc/resolv.conf", NULL, MS_BIND, NULL) < 0)
		child_fail("binding its " EGRESS_RESOLV_CONF " on /etc/resolv.conf", errno);
	close(fd);
}

struct child_req {
	const struct egress_proxies *px;
	const struct egress_ent *ent;
	char *const *argv;
	int out;      /* stdout and stderr */
	int procs_fd; /* its cgroup's cgroup.procs, or -1 */
	int listen;   /* --listen-fd's socket, or -1 */
	int policy;   /* --policy-fd's end, or -1 (with listen only) */
	bool root;
	bool resolv; /* bind egress/resolv.conf on /etc/resolv.conf (--dns-resolver) */
};

/*
 * The proxy's child: only system calls from here (kilnd has threads, and
 * this is the raw clone of one). The order is the importer's (image_import.c):
 * descriptors, signals, the program opened, the cgroup, the namespaces
 * with egress/ bound at EGRESS_NS_DIR, the uid, NO_NEW_PRIVS, the
 * parent-death signal, rlimits, then the filter and the exec. Never returns.
 */
static void child(const struct child_req *c)
{
	static const char *const hidden[] = { EGRESS_NS_TMP, "/var/tmp", "/dev/shm" };
	/* IPC and UTS of its own; the host's network: it connects upstream. */
	static const struct confine_ns ns = { CLONE_NEWIPC | CLONE_NEWUTS, hidden,
					      sizeof(hidden) / sizeof(hidden[0]), EGRESS_NS_DIR };
	char *envp[] = { "PATH=/usr/bin:/bin", "LC_ALL=C", NULL };
	const struct {
		int res;
		rlim_t v;
	} lim[] = { { RLIMIT_CORE, 0 }, { RLIMIT_NOFILE, PROXY_NOFILE } };
	const char *step;
	sigset_t hup;
	int prog, null, tty, r;

	/* Into its cgroup first: everything after is charged there. */
	if (c->procs_fd >= 0 && write(c->procs_fd, "0", 1) != 1)
		_exit(126);
	null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null < 0 || dup2(null, 0) < 0 || dup2(c->out, 1) < 0 || dup2(c->out, 2) < 0)
		_exit(126);
	/* Both above their places first, so neither dup2 lands on the other
	 * (dup2 leaves the copies without O_CLOEXEC). */
	if (c->listen >= 0) {
		int l = fcntl(c->listen, F_DUPFD_CLOEXEC, EGRESS_POLICY_FD + 1);
		int p = fcntl(c->policy, F_DUPFD_CLOEXEC, EGRESS_POLICY_FD + 1);

		if (l < 0 || p < 0 || dup2(l, EGRESS_LISTEN_FD) < 0 ||
		    dup2(p, EGRESS_POLICY_FD) < 0)
			child_fail("the listening socket and the decision stream", errno);
	}
	close_range(c->listen >= 0 ? EGRESS_POLICY_FD + 1 : 3, ~0U, 0);
	sig_reset_all();
	/* SIGHUP (reload) blocked across the exec: kiln-egress takes it from a
	 * signalfd, and one sent before it got there stays pending instead of
	 * ending it (SIGHUP's default). */
	sigemptyset(&hup);
	sigaddset(&hup, SIGHUP);
	sigprocmask(SIG_BLOCK, &hup, NULL);
	tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (tty >= 0) {
		ioctl(tty, TIOCNOTTY);
		close(tty);
	}
	prog = open(c->argv[0], O_PATH | O_CLOEXEC);
	if (prog < 0)
		child_fail(c->argv[0], errno);
	if (chdir(c->ent->edir) < 0)
		child_fail(c->ent->edir, errno);
	if (c->root && (r = confine_ns_enter(&ns, &step)) < 0)
		child_fail(step, -r);
	/* The resolver the guest's DNS goes to, in this mount namespace only. */
	if (c->root && c->resolv)
		bind_resolv_conf();
	if (c->root && c->ent->uid && (r = import_ns_drop(c->ent->uid)) < 0)
		child_fail("dropping to the proxy's uid", -r);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		child_fail("prctl", errno);
	for (size_t i = 0; i < sizeof(lim) / sizeof(lim[0]); i++) {
		struct rlimit rl = { lim[i].v, lim[i].v };

		if (setrlimit(lim[i].res, &rl) < 0)
			child_fail("setrlimit", errno);
	}
	if ((r = egress_filter_install(&c->px->filter)) < 0)
		child_fail("seccomp", -r);
	syscall(SYS_execveat, prog, "", c->argv, envp, AT_EMPTY_PATH);
	child_fail("exec", errno);
}

/* The proxy's cgroup, made afresh, with its egress programs; procs_fd
 * its cgroup.procs. 0, or -1 with why. Runner only. */
static int cgroup_make(struct egress_proxies *px, struct egress_ent *en, int *procs_fd, char *why,
		       size_t cap)
{
	static const struct cg_limits lim = { PROXY_MEMORY_MIB, PROXY_PIDS, PROXY_CPU_CENTI };
	struct kilnd *d = px->d;
	char name[SANDBOX_ID_LEN + 16];
	struct net_addr *host = NULL, res;
	struct egress_policy p;
	struct api_err ae;
	struct err e;
	size_t n = 0;
	int fd, r;

	*procs_fd = -1;
	en->cg[0] = '\0';
	if (!d->cfg.cgroups)
		return 0;
	snprintf(name, sizeof(name), "egress-%s", en->id);
	if (cgroup_create(d->cfg.cgroup_parent, name, &lim, 0, en->cg, sizeof(en->cg), procs_fd,
			  &ae)) {
		snprintf(why, cap, "%s", ae.msg);
		return -1;
	}
	if (!d->cfg.egress)
		return 0;
	/* No rule set: the reserved classes and the host's own addresses shut
	 * (kiln-egress refuses private destinations itself), its resolver open. */
	if (net_host_addrs(&host, &n, &e) ||
	    egress_policy_build(NULL, host, n, sandbox_egress_resolver(d, &res), &p, &e)) {
		free(host);
		snprintf(why, cap, "%s", e.msg);
		return -1;
	}
	free(host);
	fd = open(en->cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	r = fd < 0 ? err_set(&e, errno, "cannot open %s: %s", en->cg, strerror(errno))
		   : egress_cgroup_apply(fd, &p, &e);
	if (fd >= 0)
		close(fd);
	egress_policy_free(&p);
	if (r) {
		snprintf(why, cap, "%s", e.msg);
		return -1;
	}
	return 0;
}

/* Fork a confined child running argv with out as its stdout and stderr:
 * its pid, or -errno. Runner only (its parent-death signal is this thread's). */
static pid_t spawn(struct egress_proxies *px, struct egress_ent *en, char *const *argv, int out,
		   int procs_fd, int listen, int policy)
{
	struct child_req c = { px,
			       en,
			       argv,
			       out,
			       procs_fd,
			       listen,
			       policy,
			       geteuid() == 0,
			       px->d->cfg.dns_resolver[0] != '\0' };
	pid_t pid;

	/* A root kilnd: pid 1 of a pid namespace of its own, so nothing it
	 * starts outlives it and it signals nothing outside. */
	pid = c.root ? (pid_t)syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, NULL, NULL, NULL, NULL)
		     : fork();
	if (pid == 0)
		child(&c);
	return pid < 0 ? -errno : pid;
}

/* Wait up to ms for pid (pidfd; -1: none, no limit) to end and reap it:
 * its status, or -1 (killed). */
static int wait_end(pid_t pid, int pidfd, int ms)
{
	struct pollfd p = { pidfd, POLLIN, 0 };
	int st;

	if (pidfd >= 0 && poll(&p, 1, ms) <= 0)
		syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * `kiln-egress --init-ca DIR` as the proxy, confined the same way: makes
 * the sandbox's CA in egress/ the first time, checks it afterwards. 0, or
 * -1 with why. Runner only.
 */
static int init_ca(struct egress_proxies *px, struct egress_ent *en, int procs_fd, char *why,
		   size_t cap)
{
	struct egress_argv a;
	char prog[PATH_MAX];
	pid_t pid;
	int pidfd, st;

	image_import_helper(px->d->cfg.egress_prog, px->d->cfg.self_dir, "kiln-egress", prog);
	if (egress_argv_init_ca(prog, &a)) {
		snprintf(why, cap, "kiln-egress '%.200s' is not an absolute path (--egress-proxy)",
			 prog);
		return -1;
	}
	pid = spawn(px, en, a.argv, en->log.fd >= 0 ? en->log.fd : 2, procs_fd, -1, -1);
	if (pid < 0) {
		snprintf(why, cap, "cannot start kiln-egress --init-ca: %s", strerror((int)-pid));
		return -1;
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	st = wait_end(pid, pidfd, INIT_CA_TIMEOUT_MS);
	if (pidfd >= 0)
		close(pidfd);
	if (st != 0) {
		snprintf(why, cap,
			 "kiln-egress --init-ca failed (status %d; its line is in %.400s/egress.log)",
			 st, en->dir);
		return -1;
	}
	return 0;
}

/* The last proxy's pipe: what it wrote (bounded) into the log, then closed. */
static void log_detach(struct egress_ent *en)
{
	for (int i = 0; i < 16 && capped_log_pump(&en->log); i++)
		;
	capped_log_attach(&en->log, -1);
}

/* Start en's proxy. Runner only, px->mu held. 0, or -1 with en->start_err. */
static int start(struct egress_proxies *px, struct egress_ent *en)
{
	struct egress_argv a;
	char prog[PATH_MAX];
	int pipefd[2], procs_fd = -1, pair[2] = { -1, -1 };
	pid_t pid;

	en->start_err[0] = '\0';
	image_import_helper(px->d->cfg.egress_prog, px->d->cfg.self_dir, "kiln-egress", prog);
	if (egress_argv_serve(prog, px->d->cfg.egress_upstream_ca[0] != '\0', &a)) {
		snprintf(en->start_err, sizeof(en->start_err),
			 "kiln-egress '%.200s' is not an absolute path (--egress-proxy)", prog);
		return -1;
	}
	if (en->cg[0])
		cgroup_leaf_remove(en->cg);
	if (cgroup_make(px, en, &procs_fd, en->start_err, sizeof(en->start_err)))
		goto fail;
	/* The sandbox's CA: made the first time, checked at each new entry. */
	if (!en->started_mono && init_ca(px, en, procs_fd, en->start_err, sizeof(en->start_err)))
		goto fail;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) {
		snprintf(en->start_err, sizeof(en->start_err), "socketpair: %s", strerror(errno));
		goto fail;
	}
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		snprintf(en->start_err, sizeof(en->start_err), "pipe: %s", strerror(errno));
		goto fail;
	}
	pid = spawn(px, en, a.argv, pipefd[1], procs_fd, en->listen_fd, pair[1]);
	close(pipefd[1]);
	close(pair[1]);
	pair[1] = -1;
	if (pid < 0) {
		close(pipefd[0]);
		snprintf(en->start_err, sizeof(en->start_err), "cannot start kiln-egress: %s",
			 strerror((int)-pid));
		goto fail;
	}
	en->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (en->pidfd < 0) {
		/* Without one it cannot be watched: end it. */
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(pipefd[0]);
		close(pair[0]);
		pair[0] = -1;
		snprintf(en->start_err, sizeof(en->start_err), "pidfd_open: %s", strerror(errno));
		goto fail;
	}
	if (procs_fd >= 0)
		close(procs_fd);
	/* Non-blocking on kilnd's end only: the proxy's writes wait for the runner. */
	fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
	log_detach(en);
	capped_log_attach(&en->log, pipefd[0]);
	en->policy_fd = pair[0];
	en->pid = pid;
	en->started_mono = mono_ms();
	px->running++;
	kilnd_log("sandbox %s: egress proxy kiln-egress pid %d started (uid %u)", en->id, (int)pid,
		  en->uid);
	return 0;
fail:
	if (procs_fd >= 0)
		close(procs_fd);
	for (int i = 0; i < 2; i++)
		if (pair[i] >= 0)
			close(pair[i]);
	if (en->cg[0])
		cgroup_leaf_remove(en->cg);
	return -1;
}

/* en's proxy ended (its pidfd is readable): reap it, and plan the next start. px->mu held. */
static void reap(struct egress_proxies *px, struct egress_ent *en)
{
	int64_t now = mono_ms(), backoff;
	int st;

	if (waitpid(en->pid, &st, WNOHANG) <= 0)
		return;
	close(en->pidfd);
	en->pidfd = -1;
	en->pid = 0;
	/* A client holding the stream reads its end; the next proxy gets a new pair. */
	if (en->policy_fd >= 0)
		close(en->policy_fd);
	en->policy_fd = -1;
	px->running--;
	if (!en->want)
		return;
	if (now - en->started_mono >= BACKOFF_RESET_MS)
		en->fails = 0;
	backoff = (int64_t)BACKOFF_FIRST_MS << (en->fails < 6 ? en->fails : 6);
	if (backoff > BACKOFF_MAX_MS)
		backoff = BACKOFF_MAX_MS;
	en->fails++;
	en->next_mono = now + backoff;
	px->restarts++;
	kilnd_log("sandbox %s: egress proxy kiln-egress %s %d while the sandbox runs; starting it again in %lld ms (its output: %s/egress.log)",
		  en->id, WIFEXITED(st) ? "exited with status" : "was killed by signal",
		  WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), (long long)backoff, en->dir);
}

/* Every start due now; the ms until the next one (-1: none). px->mu held. */
static int starts_due(struct egress_proxies *px)
{
	int64_t now = mono_ms(), next = -1;

	for (struct egress_ent *en = px->list; en; en = en->next) {
		if (en->start_now) {
			en->start_now = false;
			start(px, en);
			en->started = true;
			pthread_cond_broadcast(&px->cv);
			continue;
		}
		if (!en->want || en->pid)
			continue;
		if (en->next_mono <= now) {
			if (start(px, en)) {
				kilnd_log("sandbox %s: egress proxy: %s; trying again later",
					  en->id, en->start_err);
				en->next_mono = now + BACKOFF_MAX_MS;
			}
			continue;
		}
		if (next < 0 || en->next_mono - now < next)
			next = en->next_mono - now;
	}
	return next < 0 ? -1 : (int)next;
}

#define POLL_MAX 1024

static void *runner(void *arg)
{
	struct egress_proxies *px = arg;
	struct pollfd p[POLL_MAX];
	struct egress_ent *who[POLL_MAX];
	bool is_log[POLL_MAX];

	pthread_mutex_lock(&px->mu);
	while (!px->stop) {
		int timeout = starts_due(px);
		size_t n = 1;

		p[0] = (struct pollfd){ px->wake, POLLIN, 0 };
		for (struct egress_ent *en = px->list; en && n + 2 <= POLL_MAX; en = en->next) {
			if (en->pidfd >= 0) {
				who[n] = en, is_log[n] = false;
				p[n++] = (struct pollfd){ en->pidfd, POLLIN, 0 };
			}
			if (en->log.pipe_r >= 0) {
				who[n] = en, is_log[n] = true;
				p[n++] = (struct pollfd){ en->log.pipe_r, POLLIN, 0 };
			}
		}
		pthread_mutex_unlock(&px->mu);
		if (poll(p, n, timeout) < 0 && errno != EINTR) {
			pthread_mutex_lock(&px->mu);
			break;
		}
		pthread_mutex_lock(&px->mu);
		if (p[0].revents) {
			uint64_t v;

			if (read(px->wake, &v, sizeof(v)) < 0) {
				/* nothing to drain */
			}
		}
		/* Entries are removed only by this thread's callers waiting on
		 * cv for a reap, so who[] is still valid: logs first. */
		for (size_t i = 1; i < n; i++)
			if (p[i].revents && is_log[i] && who[i]->log.pipe_r == p[i].fd)
				capped_log_pump(&who[i]->log);
		for (size_t i = 1; i < n; i++)
			if (p[i].revents && !is_log[i] && who[i]->pidfd == p[i].fd)
				reap(px, who[i]);
		pthread_cond_broadcast(&px->cv);
	}
	pthread_mutex_unlock(&px->mu);
	return NULL;
}

int egress_proxies_new(struct kilnd *d, struct err *e)
{
	struct egress_proxies *px = calloc(1, sizeof(*px));

	d->egress_proxies = NULL;
	if (!px)
		return err_set(e, ENOMEM, "egress proxies: out of memory");
	px->d = d;
	pthread_mutex_init(&px->mu, NULL);
	pthread_cond_init(&px->cv, NULL);
	px->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (px->wake < 0) {
		free(px);
		return err_set(e, errno, "egress proxies: eventfd: %s", strerror(errno));
	}
	if (egress_filter_build(&px->filter, e)) {
		close(px->wake);
		free(px);
		return -1;
	}
	if (thread_start(&px->th, runner, px)) {
		egress_filter_free(&px->filter);
		close(px->wake);
		free(px);
		return err_set(e, EAGAIN, "egress proxies: cannot start their thread");
	}
	d->egress_proxies = px;
	return 0;
}

/* Close what kilnd holds of en and free it; its proxy has been reaped. */
static void ent_free(struct egress_ent *en)
{
	if (en->listen_fd >= 0)
		close(en->listen_fd);
	if (en->policy_fd >= 0)
		close(en->policy_fd);
	unlink(en->sock);
	capped_log_close(&en->log);
	if (en->dirfd >= 0)
		close(en->dirfd);
	if (en->cg[0])
		cgroup_leaf_remove(en->cg);
	free(en);
}

/* Take en out of the list once its proxy is gone (SIGKILL, then the reap). px->mu held. */
static void ent_end_locked(struct egress_proxies *px, struct egress_ent *en)
{
	en->want = false;
	en->start_now = false;
	if (en->pidfd >= 0)
		syscall(SYS_pidfd_send_signal, en->pidfd, SIGKILL, NULL, 0);
	wake(px);
	while (en->pid && !px->stop)
		pthread_cond_wait(&px->cv, &px->mu);
	for (struct egress_ent **pp = &px->list; *pp; pp = &(*pp)->next)
		if (*pp == en) {
			*pp = en->next;
			break;
		}
}

void egress_proxies_free(struct kilnd *d)
{
	struct egress_proxies *px = d->egress_proxies;

	if (!px)
		return;
	pthread_mutex_lock(&px->mu);
	while (px->list) {
		struct egress_ent *en = px->list;

		ent_end_locked(px, en);
		ent_free(en);
	}
	px->stop = true;
	wake(px);
	pthread_mutex_unlock(&px->mu);
	pthread_join(px->th, NULL);
	egress_filter_free(&px->filter);
	close(px->wake);
	pthread_mutex_destroy(&px->mu);
	pthread_cond_destroy(&px->cv);
	free(px);
	d->egress_proxies = NULL;
}

static struct egress_ent *find_locked(struct egress_proxies *px, const char *id)
{
	for (struct egress_ent *en = px->list; en; en = en->next)
		if (!strcmp(en->id, id))
			return en;
	return NULL;
}

void egress_proxies_counts(struct kilnd *d, unsigned *running, uint64_t *restarts,
			   struct egress_counts *decisions)
{
	struct egress_proxies *px = d->egress_proxies;

	*running = 0;
	*restarts = 0;
	memset(decisions, 0, sizeof(*decisions));
	if (!px)
		return;
	pthread_mutex_lock(&px->mu);
	*running = px->running;
	*restarts = px->restarts;
	*decisions = px->counts;
	pthread_mutex_unlock(&px->mu);
}

static struct egress_ent *ent_new(const struct egress_run_spec *s, char *why, size_t cap)
{
	struct egress_ent *en = calloc(1, sizeof(*en));
	int r;

	if (!en) {
		snprintf(why, cap, "out of memory");
		return NULL;
	}
	snprintf(en->id, sizeof(en->id), "%s", s->id);
	snprintf(en->dir, sizeof(en->dir), "%s", s->dir);
	snprintf(en->edir, sizeof(en->edir), "%s/egress", s->dir);
	snprintf(en->sock, sizeof(en->sock), "%s", s->sock);
	en->uid = s->uid;
	en->pidfd = -1;
	en->policy_fd = -1;
	en->listen_fd = s->listen_fd;
	en->log.fd = en->log.pipe_r = -1;
	en->dirfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	r = en->dirfd < 0 ? -errno
			  : capped_log_open(&en->log, en->dirfd, "egress.log", "egress.log.1",
					    KEEPER_LOG_CAP);
	en->log.tap = tally_tap;
	en->log.tap_arg = en;
	if (r < 0) {
		snprintf(why, cap, "%.400s/egress.log: %s", s->dir, strerror(-r));
		ent_free(en);
		return NULL;
	}
	return en;
}

int egress_run_start(struct kilnd *d, const struct egress_run_spec *s, char *why, size_t cap)
{
	struct egress_proxies *px = d->egress_proxies;
	struct egress_ent *en = ent_new(s, why, cap);

	if (!en)
		return -1;
	en->px = px;
	pthread_mutex_lock(&px->mu);
	en->want = true;
	en->start_now = true;
	en->next = px->list;
	px->list = en;
	wake(px);
	while (!en->started && !px->stop)
		pthread_cond_wait(&px->cv, &px->mu);
	if (!en->pid) {
		snprintf(why, cap, "%s", en->start_err[0] ? en->start_err : "kilnd is stopping");
		ent_end_locked(px, en);
		pthread_mutex_unlock(&px->mu);
		ent_free(en);
		return -1;
	}
	pthread_mutex_unlock(&px->mu);
	return 0;
}

bool egress_run_signal(struct kilnd *d, const char *id, int sig)
{
	struct egress_proxies *px = d->egress_proxies;
	struct egress_ent *en;

	if (!px)
		return false;
	pthread_mutex_lock(&px->mu);
	en = find_locked(px, id);
	if (en && en->pid && sig)
		syscall(SYS_pidfd_send_signal, en->pidfd, sig, NULL, 0);
	pthread_mutex_unlock(&px->mu);
	return en != NULL;
}

bool egress_run_end(struct kilnd *d, const char *id)
{
	struct egress_proxies *px = d->egress_proxies;
	struct egress_ent *en;

	if (!px)
		return false;
	pthread_mutex_lock(&px->mu);
	en = find_locked(px, id);
	if (en)
		ent_end_locked(px, en);
	pthread_mutex_unlock(&px->mu);
	if (en)
		ent_free(en);
	return en != NULL;
}

int egress_run_policy_attach(struct kilnd *d, const char *id, int *fd)
{
	struct egress_proxies *px = d->egress_proxies;
	struct egress_ent *en;
	int r = -ENOENT;

	*fd = -1;
	if (!px)
		return r;
	pthread_mutex_lock(&px->mu);
	en = find_locked(px, id);
	if (en && en->policy_held) {
		r = -EBUSY;
	} else if (en && en->pid && en->policy_fd >= 0) {
		*fd = fcntl(en->policy_fd, F_DUPFD_CLOEXEC, 3);
		r = *fd < 0 ? -errno : 0;
		en->policy_held = *fd >= 0;
	} else if (en) {
		r = -EAGAIN; /* between a proxy's end and its next start */
	}
	pthread_mutex_unlock(&px->mu);
	return r;
}

void egress_run_policy_detach(struct kilnd *d, const char *id)
{
	struct egress_proxies *px = d->egress_proxies;
	struct egress_ent *en;

	if (!px)
		return;
	pthread_mutex_lock(&px->mu);
	en = find_locked(px, id);
	if (en)
		en->policy_held = false;
	pthread_mutex_unlock(&px->mu);
}

bool egress_run_has(struct kilnd *d, const char *id)
{
	return egress_run_signal(d, id, 0);
}
