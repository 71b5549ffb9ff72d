/* A container's shim: its VM, its stdio, its end; see rt_shim.h. */
#include "api/runtime/rt_shim.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api/agent-client/agent_client.h"
#include "api/runtime/console_sock.h"
#include "api/runtime/rt_cgroup.h"
#include "api/runtime/rt_dir.h"
#include "api/runtime/rt_exit.h"
#include "api/runtime/rt_log.h"
#include "api/runtime/rt_shim_proto.h"
#include "api/runtime/rt_shim_sock.h"
#include "api/runtime/rt_shim_vmm.h"
#include "lib/base/fd_io.h"
#include "lib/base/fd_relay.h"
#include "lib/base/proc_stat.h"
#include "lib/base/share_open.h"

#define PUMP_BUF (64u * 1024)
#define KILL_AGENT_MS 2000 /* kill 9: the agent's answer, then the VM itself */

/* The pumps, the container's output first (drained at the end alone):
 * stdout, stderr, stdin; with a terminal, its output and its input. */
#define NPUMPS 3

struct shim {
	const struct rt_shim_args *a;
	struct agent_client ac;
	const char *cid;
	int vmm_pid;
	bool vmm_reaped;
	char vmm_end[64];
	int sfd, lfd;
	struct capped_log vlog; /* kiln-vmm's stderr */
	struct agent_client_ctr_wait *wait;
	struct fd_pump pump[NPUMPS];
	uint8_t buf[NPUMPS][PUMP_BUF];
	size_t npump, nout; /* pumps in use; the first nout are output */
	int tty;            /* the host pty's slave (with a terminal), -1: none */
	int shares[3];
	bool started;
	bool killed; /* kill 9 went to the VM itself */
	bool ended;
	struct rt_exit x;
};

static void shim_log(const struct shim *s, enum rt_log_level l, const char *msg)
{
	char line[ERR_MSG_MAX + 128], t[40];
	struct timespec now;

	if (s->a->log_fd < 0)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	rt_log_time(t, &now, true);
	if (rt_log_line(line, sizeof(line), s->a->cmd->g.log_format, l, t, msg) > 0)
		(void)!fd_io_write_all(s->a->log_fd, line, strlen(line));
}

static int agent_fail(const struct agent_client_err *ae, const char *step, struct err *e)
{
	return err_set(e, ae->errnum ? ae->errnum : EIO, "%s: %s", step, ae->msg);
}

/* Signals the shim takes through its signalfd: kiln-vmm's end and those
 * it forwards to the container (conmon signals the pid it waits on). */
static int signals_take(struct shim *s, struct err *e)
{
	static const int sigs[] = { SIGCHLD, SIGTERM, SIGINT,  SIGHUP,
				    SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH };
	sigset_t set;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(&set, sigs[i]);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0 ||
	    (s->sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) < 0)
		return err_set(e, errno, "the shim's signals: %s", strerror(errno));
	return 0;
}

/* The rootfs and the two bind directories, opened without following a
 * link, as kiln-vmm's shares. */
static int shares_open(struct shim *s, struct err *e)
{
	const struct rt_shim_args *a = s->a;
	char path[RT_PATH_MAX];
	int r = share_open(a->rec->rootfs, NULL, 0, &s->shares[0], e);

	if (!r && a->plan->has_ro_binds) {
		snprintf(path, sizeof(path), "%s/binds/ro", a->dir);
		r = share_open(path, NULL, 0, &s->shares[1], e);
	}
	if (!r && a->plan->has_rw_binds) {
		snprintf(path, sizeof(path), "%s/binds/rw", a->dir);
		r = share_open(path, NULL, 0, &s->shares[2], e);
	}
	return r;
}

/* kiln-vmm, jailed, as the shim's child. */
static int vm_start(struct shim *s, struct err *e)
{
	const struct rt_shim_args *a = s->a;
	char jail[RT_PATH_MAX], vsock[RT_PATH_MAX + 8], control[RT_PATH_MAX + 8];
	struct rt_sizing size;
	struct rt_files f;
	struct rt_argv *argv;
	int logp[2] = { -1, -1 }, r;

	if (rt_plan_sizing(a->cfg, &size, e) < 0 || rt_files_find(size.kernel, &f, e) < 0)
		return -EINVAL;
	if (mkdirat(a->dirfd, RT_JAIL_DIR, 0755) < 0 && errno != EEXIST)
		return err_set(e, errno, "making the jail directory: %s", strerror(errno));
	if ((size_t)snprintf(jail, sizeof(jail), "%s/" RT_JAIL_DIR, a->dir) >= sizeof(jail) ||
	    (size_t)snprintf(vsock, sizeof(vsock), "%s/vsock", jail) >= sizeof(vsock) ||
	    (size_t)snprintf(control, sizeof(control), "%s/control", jail) >= sizeof(control))
		return err_set(e, ENAMETOOLONG, "the container's directory path is too long");
	r = agent_client_init(&s->ac, vsock);
	if (r < 0)
		return err_set(e, -r,
			       "the vsock socket's path %s is longer than a Unix socket takes: use a "
			       "shorter --root",
			       vsock);
	s->ac.timeout_ms = RT_AGENT_MS;
	if ((r = shares_open(s, e)) < 0)
		return r;
	argv = calloc(1, sizeof(*argv));
	if (!argv)
		return err_set(e, ENOMEM, "out of memory");
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
		.root_readonly = a->cfg->root_readonly,
		.size = &size,
		.cmdline = a->plan->cmdline,
	};
	r = rt_plan_vmm_argv(&l, argv, e);
	if (!r &&
	    (pipe2(logp, O_CLOEXEC) < 0 ||
	     capped_log_open(&s->vlog, a->dirfd, RT_VMM_LOG, RT_VMM_LOG_OLD, RT_VMM_LOG_CAP) < 0))
		r = err_set(e, errno, "%s: %s", RT_VMM_LOG, strerror(errno));
	if (!r) {
		struct rt_vmm_spawn sp = { argv->argv, logp[1], s->shares, 3 };

		fcntl(logp[0], F_SETFL, O_NONBLOCK);
		s->vlog.pipe_r = logp[0];
		logp[0] = -1;
		r = rt_vmm_spawn(&sp, &s->vmm_pid, e);
	}
	for (int i = 0; i < 2; i++)
		if (logp[i] >= 0)
			close(logp[i]);
	free(argv);
	for (int i = 0; i < 3; i++)
		if (s->shares[i] >= 0) {
			close(s->shares[i]);
			s->shares[i] = -1;
		}
	return r;
}

static int stdio_connect(struct shim *s, struct err *e)
{
	static const struct {
		enum agent_ctr_stream stream;
		int fd;
		enum fd_pump_eof eof;
		bool to_guest;
	} io[] = {
		{ AGENT_CTR_STDOUT, 1, FD_PUMP_CLOSE, false },
		{ AGENT_CTR_STDERR, 2, FD_PUMP_CLOSE, false },
		{ AGENT_CTR_STDIN, 0, FD_PUMP_SHUT_WR, true },
	};
	struct agent_client_err ae;

	for (size_t i = 0; i < sizeof(io) / sizeof(io[0]); i++) {
		int sock, r;

		if (agent_client_ctr_stdio(&s->ac, s->cid, io[i].stream, &sock, &ae) < 0)
			return agent_fail(&ae, "connecting the container's stdio", e);
		r = io[i].to_guest
			? fd_pump_init(&s->pump[i], io[i].fd, sock, s->buf[i], PUMP_BUF, io[i].eof)
			: fd_pump_init(&s->pump[i], sock, io[i].fd, s->buf[i], PUMP_BUF, io[i].eof);
		if (r < 0)
			return err_set(e, -r, "the container's stdio (fd %d): %s", io[i].fd,
				       strerror(-r));
		s->npump = i + 1;
	}
	s->nout = 2;
	return 0;
}

/*
 * With a terminal: a host pty whose master goes to the engine's console
 * socket (as runc sends it) and whose raw slave the shim relays to and
 * from the guest's pty stream. The shim is the slave's session, so the
 * engine's TIOCSWINSZ on the master reaches it as SIGWINCH (then
 * ctr_resize) and the master's close as SIGHUP (forwarded).
 */
static int tty_connect(struct shim *s, struct err *e)
{
	const struct rt_process *pr = &s->a->cfg->process;
	struct agent_client_err ae;
	int master, sock, r;

	if ((r = console_pty_open_raw(&master, &s->tty, e)) < 0)
		return r;
	if (pr->rows && pr->cols)
		console_pty_set_size(s->tty, pr->rows, pr->cols, e);
	if (ioctl(s->tty, TIOCSCTTY, 0) < 0)
		r = err_set(e, errno, "the terminal as the shim's: %s", strerror(errno));
	else if (agent_client_ctr_stdio(&s->ac, s->cid, AGENT_CTR_PTY, &sock, &ae) < 0)
		r = agent_fail(&ae, "connecting the container's terminal", e);
	else if ((r = fd_pump_init(&s->pump[0], sock, s->tty, s->buf[0], PUMP_BUF, FD_PUMP_KEEP)) ==
			 0 &&
		 (r = fd_pump_init(&s->pump[1], s->tty, sock, s->buf[1], PUMP_BUF,
				   FD_PUMP_SHUT_WR)) == 0) {
		s->npump = 2;
		s->nout = 1;
		r = console_sock_hand_over(s->a->cmd->console_socket, master, e);
	} else {
		r = err_set(e, -r, "the container's terminal: %s", strerror(-r));
	}
	close(master);
	return r;
}

/* Everything create waits for; the pid file last (containerd takes the
 * create as done once it exists). */
static int shim_setup(struct shim *s, struct err *e)
{
	const struct rt_shim_args *a = s->a;
	struct agent_client_err ae;
	struct timespec now;
	int gpid, r;

	if ((r = signals_take(s, e)) < 0 || (r = rt_cgroup_enter(a->rec, e)) < 0 ||
	    (r = vm_start(s, e)) < 0 ||
	    (r = rt_vmm_wait_agent(&s->ac, s->vmm_pid, RT_BOOT_MS, &s->vlog, e)) < 0)
		return r;
	clock_gettime(CLOCK_REALTIME, &now);
	if (agent_client_sync_clock(&s->ac, (int64_t)now.tv_sec * 1000000000 + now.tv_nsec, NULL,
				    &ae) < 0)
		return agent_fail(&ae, "setting the guest's clock", e);
	if (agent_client_ctr_create(&s->ac, a->plan->ctr_create, &gpid, &ae) < 0)
		return err_set(e, ae.errnum ? ae.errnum : EIO, "%s", ae.msg);
	r = a->cfg->process.terminal ? tty_connect(s, e) : stdio_connect(s, e);
	if (r < 0 || (r = rt_shim_sock_listen(a->dirfd, &s->lfd, e)) < 0)
		return r;
	if (agent_client_ctr_wait_begin(&s->ac, s->cid, &s->wait, &ae) < 0)
		return agent_fail(&ae, "waiting for the container", e);
	a->rec->status = RT_STATUS_CREATED;
	a->rec->shim.pid = getpid();
	a->rec->vmm.pid = s->vmm_pid;
	if (proc_start_time(a->rec->shim.pid, &a->rec->shim.start) < 0 ||
	    proc_start_time(s->vmm_pid, &a->rec->vmm.start) < 0)
		return err_set(e, ESRCH, "reading the shim's and kiln-vmm's start times");
	if ((r = rt_dir_write_state(a->dirfd, a->rec, e)) < 0)
		return r;
	return a->cmd->pid_file ? rt_pid_file_write(a->cmd->pid_file, getpid(), e) : 0;
}

/* ---- running ---- */

static void vm_ended(struct shim *s)
{
	s->vmm_reaped = true;
	if (s->ended)
		return;
	s->ended = true;
	s->x = (struct rt_exit){ .exit_code = -1, .vm_crashed = !s->killed };
	if (s->killed)
		s->x.signo = SIGKILL;
	else {
		char msg[160];

		snprintf(msg, sizeof(msg), "container %s: kiln-vmm %s before the container ended",
			 s->cid, s->vmm_end);
		shim_log(s, RT_LOG_ERROR, msg);
	}
}

static void on_signals(struct shim *s)
{
	struct signalfd_siginfo si;
	struct agent_client_err ae;

	while (read(s->sfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGWINCH) {
			unsigned rows, cols;
			struct err ignored;

			if (s->tty >= 0 && !s->ended &&
			    console_pty_get_size(s->tty, &rows, &cols, &ignored) == 0 && rows &&
			    cols)
				agent_client_ctr_resize(&s->ac, s->cid, (uint16_t)rows,
							(uint16_t)cols, &ae);
			continue;
		}
		if (si.ssi_signo == SIGCHLD) {
			if (!s->vmm_reaped &&
			    rt_vmm_gone(s->vmm_pid, s->vmm_end, sizeof(s->vmm_end)))
				vm_ended(s);
			continue;
		}
		if (!s->ended)
			agent_client_ctr_signal(&s->ac, s->cid, (int)si.ssi_signo, false, &ae);
	}
}

static const char *do_kill(struct shim *s, const struct rt_shim_req *q, char *msg, size_t cap)
{
	struct agent_client quick = s->ac;
	struct agent_client_err ae;

	if (s->ended)
		return "container not running";
	if (!q->signo)
		return NULL;
	if (q->signo == SIGKILL)
		quick.timeout_ms = KILL_AGENT_MS;
	if (agent_client_ctr_signal(&quick, s->cid, q->signo, q->all, &ae) == 0)
		return NULL;
	if (ae.fail == AGENT_FAIL_AGENT && ae.code == AGENT_E_INVALID_STATE)
		return "container not running";
	if (q->signo == SIGKILL) {
		/* The agent did not take it: the VM goes, and the container with it. */
		s->killed = true;
		kill(s->vmm_pid, SIGKILL);
		return NULL;
	}
	snprintf(msg, cap, "kill: %.900s", ae.msg);
	return msg;
}

static void on_request(struct shim *s)
{
	struct agent_client_err ae;
	struct rt_shim_req q;
	char buf[ERR_MSG_MAX];
	const char *msg = NULL;
	struct err e;
	int conn;

	if (rt_shim_sock_accept(s->lfd, &conn, &q, &e) < 0) {
		shim_log(s, RT_LOG_WARNING, e.msg);
		return;
	}
	switch (q.op) {
	case RT_SHIM_START:
		if (s->started)
			msg = "cannot start an already running container";
		else if (s->ended)
			msg = "cannot start a container that has stopped";
		else if (agent_client_ctr_start(&s->ac, s->cid, &ae) < 0)
			msg = memcpy(buf, ae.msg, sizeof(buf));
		else
			s->started = true;
		break;
	case RT_SHIM_KILL:
		msg = do_kill(s, &q, buf, sizeof(buf));
		break;
	case RT_SHIM_RESIZE:
		if (agent_client_ctr_resize(&s->ac, s->cid, (uint16_t)q.rows, (uint16_t)q.cols,
					    &ae) < 0)
			msg = memcpy(buf, ae.msg, sizeof(buf));
		break;
	}
	rt_shim_sock_reply(conn, msg);
}

/* The agent's exit line (or the connection's end: the VM is going). */
static void on_wait(struct shim *s)
{
	struct agent_client_ctr_exit ex;
	struct agent_client_err ae;

	if (agent_client_ctr_wait_end(s->wait, RT_AGENT_MS, &ex, &ae) == 0 && !s->ended) {
		s->ended = true;
		s->x = (struct rt_exit){ .exit_code = ex.exit_code, .signo = ex.signal };
	} else if (!s->ended) {
		shim_log(s, RT_LOG_WARNING, ae.msg);
	}
	agent_client_ctr_wait_close(s->wait);
	s->wait = NULL;
}

static void shim_loop(struct shim *s)
{
	while (!s->ended) {
		struct pollfd p[4 + 2 * NPUMPS];
		nfds_t n = 4;

		p[0] = (struct pollfd){ .fd = s->sfd, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = s->lfd, .events = POLLIN };
		p[2] = (struct pollfd){ .fd = s->wait ? agent_client_ctr_wait_fd(s->wait) : -1,
					.events = POLLIN };
		p[3] = (struct pollfd){ .fd = s->vlog.pipe_r, .events = POLLIN };
		for (size_t i = 0; i < s->npump; i++, n += 2)
			fd_pump_poll(&s->pump[i], &p[n]);
		if (poll(p, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			shim_log(s, RT_LOG_ERROR, "the shim's poll failed");
			s->killed = true;
			kill(s->vmm_pid, SIGKILL);
		}
		for (size_t i = 0; i < s->npump; i++)
			fd_pump_step(&s->pump[i], &p[4 + 2 * i]);
		if (p[3].revents)
			capped_log_pump(&s->vlog);
		if (p[0].revents)
			on_signals(s);
		if (p[1].revents & POLLIN)
			on_request(s);
		if (s->wait && p[2].revents)
			on_wait(s);
	}
}

/* ---- the end ---- */

static void record_exit(struct shim *s)
{
	char line[RT_EXIT_LINE_MAX];
	size_t n = rt_exit_encode(&s->x, line);
	struct err e;

	if (rt_file_replace(s->a->dirfd, RT_EXIT_FILE, line, n, 0600, "the exit file", &e) < 0)
		shim_log(s, RT_LOG_WARNING, e.msg);
}

static __attribute__((noreturn)) void end_as(const struct rt_exit *x)
{
	struct rlimit none = { 0, 0 };
	struct rt_end end;
	sigset_t all;

	rt_exit_end(x, &end);
	if (end.kind == RT_END_EXIT)
		exit(end.value);
	setrlimit(RLIMIT_CORE, &none);
	signal(end.value, SIG_DFL);
	sigfillset(&all);
	sigprocmask(SIG_UNBLOCK, &all, NULL);
	raise(end.value);
	exit(128 + end.value);
}

static void shim_end(struct shim *s)
{
	/* The agent sent the output whole before its exit line: what is
	 * left is the engine reading it. */
	fd_relay_run(s->pump, s->nout, -1, RT_DRAIN_MS);
	record_exit(s);
	if (!s->vmm_reaped) {
		kill(s->vmm_pid, SIGKILL);
		waitpid(s->vmm_pid, NULL, 0);
	}
	capped_log_pump(&s->vlog);
	capped_log_close(&s->vlog);
}

void rt_shim_main(const struct rt_shim_args *a)
{
	static struct shim s; /* the pump buffers: too big for the stack */
	char line[RT_SHIM_LINE_MAX];
	struct err e = { { 0 } };
	size_t n;

	s = (struct shim){
		.a = a, .cid = a->cmd->id, .sfd = -1, .lfd = -1, .shares = { -1, -1, -1 }
	};
	setsid();
	if (shim_setup(&s, &e) < 0) {
		n = rt_shim_reply_encode(e.msg, line);
		(void)!fd_io_write_all(a->ready_fd, line, n);
		if (s.vmm_pid > 0) {
			kill(s.vmm_pid, SIGKILL);
			waitpid(s.vmm_pid, NULL, 0);
		}
		capped_log_pump(&s.vlog);
		_exit(1);
	}
	n = rt_shim_reply_encode(NULL, line);
	(void)!fd_io_write_all(a->ready_fd, line, n);
	close(a->ready_fd);
	shim_loop(&s);
	shim_end(&s);
	end_as(&s.x);
}
