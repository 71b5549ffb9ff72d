/* A container's shim: its VM, its stdio, its end; see rt_shim.h. */
#include "api/runtime/rt_shim.h"
#include "api/runtime/rt_shim_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/prctl.h>
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
#include "api/runtime/rt_hooks.h"
#include "api/runtime/rt_log.h"
#include "api/runtime/rt_net.h"
#include "api/runtime/rt_shim_proto.h"
#include "api/runtime/rt_shim_sock.h"
#include "api/runtime/rt_shim_vmm.h"
#include "api/runtime/rt_trace.h"
#include "lib/base/fd_close.h"
#include "lib/base/fd_io.h"
#include "lib/base/fd_relay.h"
#include "lib/base/mono.h"
#include "lib/base/proc_stat.h"

void rt_shim_log(const struct shim *s, enum rt_log_level l, const char *msg)
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

int rt_shim_agent_fail(const struct agent_client_err *ae, const char *step, struct err *e)
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

/* A stream that ended before the checkpoint (stdin at its EOF, an output
 * the process closed): a socket whose peer is gone, so the pump ends at
 * once as the stream did (an output: the engine reads its EOF). */
static int stream_ended(int *sock, struct agent_client_err *ae)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		*ae = (struct agent_client_err){ .errnum = errno };
		snprintf(ae->msg, sizeof(ae->msg), "socketpair: %s", strerror(errno));
		return -1;
	}
	close(sv[1]);
	*sock = sv[0];
	return 0;
}

/*
 * One stream of the container's process. After a restore the guest's
 * relay of the stream may not have seen the reset of its old connection
 * yet ("connected already"): asked again for a while, as it frees it;
 * one that had ended before the checkpoint stays ended.
 */
static int stream_connect(struct shim *s, enum agent_ctr_stream stream, int *sock,
			  struct agent_client_err *ae)
{
	int64_t until = mono_ms() + (s->a->restore ? RESTORE_STREAM_MS : 0);
	int r;

	while ((r = agent_client_ctr_stdio(&s->ac, s->cid, s->exec, stream, sock, ae)) < 0 &&
	       ae->code == AGENT_E_INVALID_STATE && strstr(ae->msg, "connected already") &&
	       mono_ms() < until)
		usleep(20000);
	if (r < 0 && s->a->restore && ae->code == AGENT_E_INVALID_STATE &&
	    strstr(ae->msg, "that stream ended"))
		return stream_ended(sock, ae);
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

		if (stream_connect(s, io[i].stream, &sock, &ae) < 0)
			return rt_shim_agent_fail(&ae, "connecting the container's stdio", e);
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
	const struct rt_process *pr = s->a->proc;
	struct agent_client_err ae;
	int master, sock, r;

	if ((r = console_pty_open_raw(&master, &s->tty, e)) < 0)
		return r;
	if (pr->rows && pr->cols)
		console_pty_set_size(s->tty, pr->rows, pr->cols, e);
	if (ioctl(s->tty, TIOCSCTTY, 0) < 0)
		r = err_set(e, errno, "the terminal as the shim's: %s", strerror(errno));
	else if (stream_connect(s, AGENT_CTR_PTY, &sock, &ae) < 0)
		r = rt_shim_agent_fail(&ae, "connecting the container's terminal", e);
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

/* A `network` namespace without a path is a new one (rt_net.h): the
 * container's own VM's, made before the hooks so they find it as the
 * state's pid's. A pod's further container shares the sandbox's VM. */
static int own_netns(struct shim *s, struct err *e)
{
	const struct rt_namespace *ns = rt_config_ns(s->a->cfg, RT_NS_NETWORK);

	if (!ns || ns->path || s->member)
		return 0;
	return rt_net_unshare(&s->home_netns, e);
}

/* prestart and createRuntime, on the host, before the VM, in the
 * runtime's network namespace: the state on their stdin names the shim
 * as the container's pid (runtime-spec: a failure fails create). */
static int create_hooks(struct shim *s, struct err *e)
{
	const struct rt_config *cfg = s->a->cfg;
	struct rt_state_view v = { s->a->rec, RT_STATUS_CREATING, getpid() };
	char *state = NULL;
	int r = 0;

	if (!cfg->prestart.n && !cfg->create_runtime.n)
		return 0;
	if (rt_state_render_hook(&v, &state, e) < 0)
		return -ENOMEM;
	if (cfg->prestart.n)
		r = rt_hooks_run(&cfg->prestart, "prestart", state, s->home_netns, e);
	if (!r && cfg->create_runtime.n)
		r = rt_hooks_run(&cfg->create_runtime, "createRuntime", state, s->home_netns, e);
	free(state);
	return r;
}

/* An exec shim's setup: the container's agent, ctr_exec, its stdio,
 * ctr_start, the pid file last. */
static int exec_setup(struct shim *s, struct err *e)
{
	const struct rt_shim_args *a = s->a;
	char jail[RT_PATH_MAX], vsock[RT_PATH_MAX], control[RT_PATH_MAX];
	struct agent_client_err ae;
	int gpid, r;

	if ((r = signals_take(s, e)) < 0 || (r = rt_shim_vm_paths(s, jail, vsock, control, e)) < 0)
		return r;
	if (agent_client_ctr_exec(&s->ac, s->cid, s->exec, a->exec_process, &gpid, &ae) < 0)
		return err_set(e, ae.errnum ? ae.errnum : EIO, "%s", ae.msg);
	r = a->proc->terminal ? tty_connect(s, e) : stdio_connect(s, e);
	if (r < 0)
		return r;
	if (agent_client_ctr_wait_begin(&s->ac, s->cid, s->exec, &s->wait, &ae) < 0)
		return rt_shim_agent_fail(&ae, "waiting for the process", e);
	if (agent_client_ctr_start(&s->ac, s->cid, s->exec, &ae) < 0)
		return err_set(e, ae.errnum ? ae.errnum : EIO, "%s", ae.msg);
	s->started = true;
	return a->pid_file[0] ? rt_pid_file_write(a->pid_file, getpid(), e) : 0;
}

/* A pod's further container: the sandbox's agent (its VM runs). */
static int member_paths(struct shim *s, struct err *e)
{
	char jail[RT_PATH_MAX], vsock[RT_PATH_MAX], control[RT_PATH_MAX];

	return rt_shim_vm_paths(s, jail, vsock, control, e);
}

/* Everything create waits for; the pid file last (containerd takes the
 * create as done once it exists). */
static int shim_setup(struct shim *s, struct err *e)
{
	const struct rt_shim_args *a = s->a;
	struct agent_client_err ae;
	int gpid, r;

	rt_trace("shim: begins");
	/* the container's own VM enters its cgroup in vm_start */
	if ((r = signals_take(s, e)) < 0 || (r = own_netns(s, e)) < 0 ||
	    (r = create_hooks(s, e)) < 0 || (s->member && (r = rt_cgroup_enter(a->rec, e)) < 0))
		return r;
	r = s->member ? member_paths(s, e) : rt_shim_vm_boot(s, e);
	if (r < 0)
		return r;
	/* a restored guest has its container, running: the streams the
	 * snapshot's restore reset are connected again below */
	if (!a->restore && agent_client_ctr_create(&s->ac, a->plan->ctr_create, &gpid, &ae) < 0)
		return err_set(e, ae.errnum ? ae.errnum : EIO, "%s", ae.msg);
	s->made = s->member;
	rt_trace("shim: ctr_create done");
	r = a->proc->terminal ? tty_connect(s, e) : stdio_connect(s, e);
	if (r < 0 || (r = rt_shim_sock_listen(a->dirfd, &s->lfd, e)) < 0)
		return r;
	rt_trace("shim: stdio connected");
	if (agent_client_ctr_wait_begin(&s->ac, s->cid, s->exec, &s->wait, &ae) < 0)
		return rt_shim_agent_fail(&ae, "waiting for the container", e);
	rt_trace("shim: wait begun");
	a->rec->status = a->restore ? RT_STATUS_RUNNING : RT_STATUS_CREATED;
	if (a->restore_cid) /* its exec shims and a later checkpoint address it so */
		snprintf(a->rec->cid, sizeof(a->rec->cid), "%s", a->restore_cid);
	s->started = a->restore != NULL;
	a->rec->shim.pid = getpid();
	a->rec->vmm.pid = s->vmm_pid;
	if (proc_start_time(a->rec->shim.pid, &a->rec->shim.start) < 0 ||
	    (s->vmm_pid > 0 && proc_start_time(s->vmm_pid, &a->rec->vmm.start) < 0))
		return err_set(e, ESRCH, "reading the shim's and kiln-vmm's start times");
	if ((r = rt_dir_write_state(a->dirfd, a->rec, e)) < 0)
		return r;
	rt_trace("shim: state written");
	return a->pid_file[0] ? rt_pid_file_write(a->pid_file, getpid(), e) : 0;
}

/* ---- running ---- */

/* SIGKILL and reap kiln-vmm, once (an exec shim has none: never pid 0,
 * which would be the shim's process group). */
static void vmm_stop(struct shim *s)
{
	if (s->vmm_pid <= 0 || s->vmm_reaped)
		return;
	kill(s->vmm_pid, SIGKILL);
	waitpid(s->vmm_pid, NULL, 0);
	s->vmm_reaped = true;
}

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
		rt_shim_log(s, RT_LOG_ERROR, msg);
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
				agent_client_ctr_resize(&s->ac, s->cid, s->exec, (uint16_t)rows,
							(uint16_t)cols, &ae);
			continue;
		}
		if (si.ssi_signo == SIGCHLD) {
			if (!s->vmm_reaped && s->vmm_pid > 0 &&
			    rt_vmm_gone(s->vmm_pid, s->vmm_end, sizeof(s->vmm_end)))
				vm_ended(s);
			continue;
		}
		if (!s->ended)
			agent_client_ctr_signal(&s->ac, s->cid, s->exec, (int)si.ssi_signo, false,
						&ae);
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
	if (agent_client_ctr_signal(&quick, s->cid, s->exec, q->signo, q->all, &ae) == 0) {
		if (q->signo == SIGKILL && !s->kill_due)
			s->kill_due = mono_ms() + KILL_EXIT_MS;
		return NULL;
	}
	if (ae.fail == AGENT_FAIL_AGENT && ae.code == AGENT_E_INVALID_STATE)
		return "container not running";
	if (q->signo == SIGKILL && s->vmm_pid > 0) {
		/* The agent did not take it: the VM goes, and the container with it
		 * (SIGCHLD then ends the loop as killed). */
		s->killed = true;
		if (s->vmm_pid > 0 && !s->vmm_reaped)
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
		rt_shim_log(s, RT_LOG_WARNING, e.msg);
		return;
	}
	switch (q.op) {
	case RT_SHIM_START:
		if (s->started)
			msg = "cannot start an already running container";
		else if (s->ended)
			msg = "cannot start a container that has stopped";
		else if (agent_client_ctr_start(&s->ac, s->cid, s->exec, &ae) < 0)
			msg = memcpy(buf, ae.msg, sizeof(buf));
		else
			s->started = true;
		rt_trace("shim: ctr_start done");
		break;
	case RT_SHIM_KILL:
		msg = do_kill(s, &q, buf, sizeof(buf));
		break;
	case RT_SHIM_RESIZE:
		if (agent_client_ctr_resize(&s->ac, s->cid, s->exec, (uint16_t)q.rows,
					    (uint16_t)q.cols, &ae) < 0)
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

	rt_trace("shim: exit line");
	if (agent_client_ctr_wait_end(s->wait, LOOP_AGENT_MS, &ex, &ae) == 0 && !s->ended) {
		s->ended = true;
		s->x = (struct rt_exit){ .exit_code = ex.exit_code, .signo = ex.signal };
	} else if (!s->ended) {
		rt_shim_log(s, RT_LOG_WARNING, ae.msg);
		/* the connection ended: the VM it runs in (not its own: a pod's
		 * sandbox's, an exec's container's) is gone */
		if (s->vmm_pid <= 0 && ae.fail == AGENT_FAIL_CONNECT) {
			s->ended = true;
			s->x = (struct rt_exit){ .exit_code = -1, .vm_crashed = true };
		}
	}
	agent_client_ctr_wait_close(s->wait);
	s->wait = NULL;
}

/* The VM goes at once: the loop cannot go on (poll failed), or a KILL
 * the agent took brought no exit in time. */
static void vm_kill(struct shim *s, const char *why)
{
	rt_shim_log(s, RT_LOG_ERROR, why);
	s->killed = true;
	if (s->vmm_pid > 0 && !s->vmm_reaped) {
		vmm_stop(s);
		snprintf(s->vmm_end, sizeof(s->vmm_end), "was killed");
	}
	vm_ended(s);
}

static int loop_timeout(const struct shim *s)
{
	int64_t left;

	if (!s->kill_due)
		return -1;
	left = s->kill_due - mono_ms();
	return left < 0 ? 0 : (int)left;
}

static void shim_loop(struct shim *s)
{
	while (!s->ended) {
		struct pollfd p[4 + 2 * NPUMPS];
		nfds_t n = 4;
		int k;

		p[0] = (struct pollfd){ .fd = s->sfd, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = s->lfd, .events = POLLIN };
		p[2] = (struct pollfd){ .fd = s->wait ? agent_client_ctr_wait_fd(s->wait) : -1,
					.events = POLLIN };
		p[3] = (struct pollfd){ .fd = s->vlog.pipe_r, .events = POLLIN };
		for (size_t i = 0; i < s->npump; i++, n += 2)
			fd_pump_poll(&s->pump[i], &p[n]);
		k = poll(p, n, loop_timeout(s));
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			vm_kill(s, "the shim's poll failed: the container's VM is stopped");
			break;
		}
		if (k == 0 && s->kill_due && mono_ms() >= s->kill_due) {
			vm_kill(s,
				s->member
					? "the agent took KILL but the container did not end"
					: "the agent took KILL but the container did not end: its "
					  "VM is stopped");
			break;
		}
		for (size_t i = 0; i < s->npump; i++)
			fd_pump_step(&s->pump[i], &p[4 + 2 * i]);
		if (p[3].revents)
			capped_log_pump(&s->vlog);
		/* the exit line before the signals: a VM ending just after it
		 * sent the exit must not turn the exit into a crash */
		if (s->wait && p[2].revents)
			on_wait(s);
		if (p[0].revents)
			on_signals(s);
		if (p[1].revents & POLLIN)
			on_request(s);
	}
}

/* ---- the end ---- */

static void record_exit(struct shim *s)
{
	char line[RT_EXIT_LINE_MAX];
	size_t n = rt_exit_encode(&s->x, line);
	struct err e;

	if (rt_file_replace(s->a->dirfd, RT_EXIT_FILE, line, n, 0600, "the exit file", &e) < 0)
		rt_shim_log(s, RT_LOG_WARNING, e.msg);
}

static __attribute__((noreturn)) void end_as(const struct rt_exit *x)
{
	struct rlimit none = { 0, 0 };
	struct rt_end end;
	sigset_t all;

	rt_exit_end(x, &end);
	if (end.kind == RT_END_EXIT)
		_exit(end.value);
	/* no core and no core helper for a root process whose guest
	 * process died by a signal */
	prctl(PR_SET_DUMPABLE, 0);
	setrlimit(RLIMIT_CORE, &none);
	signal(end.value, SIG_DFL);
	sigfillset(&all);
	sigprocmask(SIG_UNBLOCK, &all, NULL);
	raise(end.value);
	_exit(128 + end.value);
}

/* Traced: the VM powered off rather than killed, so kiln-vmm prints its
 * boot timeline (kiln-vmm start to agent ready) into vmm.log, copied to
 * the trace. Only the traced run pays for the shutdown. */
static void trace_vm_timeline(struct shim *s)
{
	struct agent_client_err ae;
	char buf[4096], *line, *save = NULL;
	ssize_t n;
	int fd;

	if (!getenv(RT_TRACE_ENV) || s->vmm_pid <= 0 || s->vmm_reaped ||
	    agent_client_shutdown(&s->ac, 0, &ae) < 0)
		return;
	for (int i = 0; i < 1000 && !rt_vmm_gone(s->vmm_pid, s->vmm_end, sizeof(s->vmm_end)); i++)
		usleep(10000);
	s->vmm_reaped = true;
	while (capped_log_pump(&s->vlog))
		;
	fd = openat(s->a->dirfd, RT_VMM_LOG, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		rt_trace("kiln-vmm: %s", line);
}

/* A pod's further container is forgotten by the guest (its cid free
 * again, its root's dentries dropped); the sandbox's VM runs on. */
static void member_forget(struct shim *s)
{
	struct agent_client_err ae;

	if (s->made && agent_client_ctr_delete(&s->ac, s->cid, &ae) < 0)
		rt_shim_log(s, RT_LOG_WARNING, ae.msg);
	s->made = false;
}

static void shim_end(struct shim *s)
{
	/* The agent sent the output whole before its exit line: what is
	 * left is the engine reading it, as long as it keeps reading (the
	 * drain ends after RT_DRAIN_MS without progress, not in total). */
	for (;;) {
		uint64_t before = 0, after = 0;

		for (size_t i = 0; i < s->nout; i++)
			before += s->pump[i].bytes;
		if (fd_relay_run(s->pump, s->nout, -1, RT_DRAIN_MS) != FD_RELAY_TIMEOUT)
			break;
		for (size_t i = 0; i < s->nout; i++)
			after += s->pump[i].bytes;
		if (after == before)
			break;
	}
	rt_trace("shim: output drained");
	if (!s->exec)
		record_exit(s); /* the container's end, not an exec's */
	member_forget(s);
	trace_vm_timeline(s);
	vmm_stop(s);
	rt_trace("shim: kiln-vmm reaped");
	rt_net_close(&s->net);
	for (int i = 0; i < 4 && capped_log_pump(&s->vlog); i++)
		;
	capped_log_close(&s->vlog);
}

/* Nothing of create's but what the shim uses: the engine's other
 * descriptors (runc's init closes them too) and its working directory. */
static void shim_detach(const struct rt_shim_args *a)
{
	int keep[3] = { a->ready_fd, a->dirfd, a->log_fd };

	fd_close_except(keep, 3);
	setsid();
	(void)!chdir("/");
}

void rt_shim_main(const struct rt_shim_args *a)
{
	static struct shim s; /* the pump buffers: too big for the stack */
	char line[RT_SHIM_LINE_MAX];
	struct err e = { { 0 } };
	size_t n;

	s = (struct shim){ .a = a,
			   .cid = a->restore_cid ? a->restore_cid : a->cmd->id,
			   .sfd = -1,
			   .lfd = -1,
			   .tty = -1,
			   .home_netns = -1,
			   .warm_lock = -1 };
	s.vlog = (struct capped_log){ .fd = -1, .pipe_r = -1 };
	s.net = (struct rt_net){ .ns_fd = -1, .home_fd = -1 };
	for (int i = 0; i < NSHARES; i++)
		s.shares[i] = -1;
	shim_detach(a);
	if (a->exec_process) {
		/* no VM of its own: nothing to reap or kill, no record */
		s.exec = (uint32_t)getpid();
		s.vmm_reaped = true;
	} else if (a->sandbox) {
		s.member = true; /* the sandbox's VM: not its to reap or kill */
		s.vmm_reaped = true;
	}
	if ((a->exec_process ? exec_setup(&s, &e) : shim_setup(&s, &e)) < 0) {
		n = rt_shim_reply_encode(e.msg, line);
		(void)!fd_io_write_all(a->ready_fd, line, n);
		member_forget(&s);
		vmm_stop(&s);
		rt_net_close(&s.net);
		capped_log_pump(&s.vlog);
		_exit(1);
	}
	n = rt_shim_reply_encode(NULL, line);
	if (fd_io_write_all(a->ready_fd, line, n) < 0) {
		/* create is gone (the engine killed it): it told the engine
		 * the create failed, so nothing may run on */
		member_forget(&s);
		vmm_stop(&s);
		rt_net_close(&s.net);
		_exit(1);
	}
	close(a->ready_fd);
	rt_trace("shim: ready");
	s.ac.timeout_ms = LOOP_AGENT_MS;
	shim_loop(&s);
	shim_end(&s);
	end_as(&s.x);
}
