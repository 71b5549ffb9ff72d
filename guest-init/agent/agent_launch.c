#include "guest-init/agent/agent_launch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "guest-init/agent/agent_env.h"
#include "guest-init/agent/confine_apply.h"
#include "guest-init/sys/child.h"
#include "guest-init/sys/trust_ca.h"

/* What the child reports through the error pipe before it exits 127. */
enum launch_stage {
	STAGE_SETSID = 1,
	STAGE_TTY,
	STAGE_STDIO,
	STAGE_CONFINE,
	STAGE_NO_NEW_PRIVS,
	STAGE_PIDNS,
	STAGE_USER,
	STAGE_CWD,
	STAGE_EXEC
};

struct launch_fail {
	int stage;
	int err;
	size_t step; /* STAGE_CONFINE: the plan's failing step */
};

/* Everything the child needs, prepared by the parent. */
struct launch_plan {
	const char *path; /* resolved program */
	char *const *argv;
	char **envp;
	const char *cwd;
	unsigned uid, gid;
	int fd[3];  /* become the child's 0, 1, 2 */
	int slave;  /* pty slave, or -1 */
	int report; /* error pipe, write end */
	const struct rlimit *nofile;
	const struct confine_plan *confine; /* NULL: not confined */
};

static void __attribute__((noreturn))
child_fail_at(const struct launch_plan *pl, int stage, size_t step)
{
	struct launch_fail f = { stage, errno, step };
	ssize_t r = write(pl->report, &f, sizeof(f));

	(void)r; /* nothing left to tell if even this fails */
	_exit(127);
}

static void __attribute__((noreturn)) child_fail(const struct launch_plan *pl, int stage)
{
	child_fail_at(pl, stage, 0);
}

/* The user switch, the cwd and the exec: the last steps of every child. */
static void __attribute__((noreturn)) child_exec(const struct launch_plan *pl)
{
	/* Raw system calls: glibc's setuid() wrappers coordinate all threads
	 * of a process, which is not something to rely on in the child of a
	 * multithreaded fork. Here there is exactly one thread, so the
	 * per-thread credentials the kernel changes are the process's. */
	if (syscall(SYS_setgroups, 0, NULL) < 0 ||
	    syscall(SYS_setresgid, pl->gid, pl->gid, pl->gid) < 0 ||
	    syscall(SYS_setresuid, pl->uid, pl->uid, pl->uid) < 0)
		child_fail(pl, STAGE_USER);
	/* After the switch, so the user's own permissions decide. */
	if (chdir(pl->cwd) < 0)
		child_fail(pl, STAGE_CWD);
	execve(pl->path, pl->argv, pl->envp);
	child_fail(pl, STAGE_EXEC);
}

/*
 * A confined process also gets a PID namespace of its own: in the
 * agent's, its /proc would show the same user's unconfined processes, and
 * their /proc/PID/root and cwd are the real filesystem. The child stays
 * outside and forks the namespace's init; the init mounts the namespace's
 * /proc over the view's and forks the program (PID 2 there). Signals
 * reach the program as its process group's (agent_proc_signal signals a
 * confined process's whole group): the child and the init catch them only
 * to live on, and wait. The program's wait status goes back through a
 * pipe to the child, which ends the same way, so the agent sees the
 * program's own exit. Anything the program left running in the namespace
 * ends with it (the init's exit kills the namespace).
 */
static const int pass_sigs[] = { SIGHUP,  SIGINT,   SIGQUIT,   SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM,
				 SIGTERM, SIGWINCH, SIGCONT,   SIGTSTP, SIGTTIN, SIGTTOU, SIGURG,
				 SIGXCPU, SIGXFSZ,  SIGVTALRM, SIGPROF, SIGIO,   SIGPWR };

static void swallow(int sig)
{
	(void)sig;
}

static void catch_pass_sigs(void)
{
	struct sigaction sa = { .sa_handler = swallow };

	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(pass_sigs) / sizeof(pass_sigs[0]); i++)
		sigaction(pass_sigs[i], &sa, NULL);
}

static void __attribute__((noreturn)) ns_init(const struct launch_plan *pl, int status_w)
{
	int st = 0, s;
	pid_t prog, w;
	ssize_t n;

	if (umount2("/proc", MNT_DETACH) < 0 ||
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible") <
		    0)
		child_fail(pl, STAGE_PIDNS);
	catch_pass_sigs();
	prog = fork();
	if (prog < 0)
		child_fail(pl, STAGE_PIDNS);
	if (prog == 0) {
		close(status_w);
		child_exec(pl); /* execve resets the caught signals */
	}
	close(pl->report);
	/* Reap everything; the program's status is the one to pass on. */
	for (;;) {
		w = wait(&s);
		if (w == prog) {
			st = s;
			break;
		}
		if (w < 0 && errno != EINTR)
			break;
	}
	do
		n = write(status_w, &st, sizeof(st));
	while (n < 0 && errno == EINTR);
	_exit(0);
}

static void __attribute__((noreturn)) confined_run(const struct launch_plan *pl)
{
	int sp[2], st, gst = 0;
	sigset_t all;
	pid_t init;
	ssize_t n;

	if (pipe2(sp, O_CLOEXEC) < 0 || unshare(CLONE_NEWPID) < 0)
		child_fail(pl, STAGE_PIDNS);
	catch_pass_sigs();
	init = fork();
	if (init < 0)
		child_fail(pl, STAGE_PIDNS);
	if (init == 0) {
		close(sp[0]);
		ns_init(pl, sp[1]);
	}
	close(sp[1]);
	close(pl->report);
	while (waitpid(init, &gst, 0) < 0 && errno == EINTR)
		;
	do
		n = read(sp[0], &st, sizeof(st));
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(st))
		st = gst; /* the init itself was killed: its status */
	if (WIFSIGNALED(st)) {
		signal(WTERMSIG(st), SIG_DFL);
		sigfillset(&all);
		sigprocmask(SIG_UNBLOCK, &all, NULL);
		raise(WTERMSIG(st));
		_exit(128 + WTERMSIG(st));
	}
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 127);
}

/* After fork(): async-signal-safe system calls only (see agent_launch.h). */
static void __attribute__((noreturn)) child_run(const struct launch_plan *pl)
{
	child_reset(pl->nofile);
	if (setsid() < 0)
		child_fail(pl, STAGE_SETSID);
	/* The new session's leader takes the pty slave as its controlling
	 * terminal, so ^C and job control reach it. */
	if (pl->slave >= 0 && ioctl(pl->slave, TIOCSCTTY, 0) < 0)
		child_fail(pl, STAGE_TTY);
	for (int i = 0; i < 3; i++)
		if (dup2(pl->fd[i], i) < 0)
			child_fail(pl, STAGE_STDIO);
	/* As root, before the user switch; a failure stops here, so a process
	 * asked to be confined never runs unconfined. */
	if (pl->confine) {
		size_t step = 0;

		if (confine_apply(pl->confine, &step) < 0)
			child_fail_at(pl, STAGE_CONFINE, step);
		/* No exec of the process or anything it starts gains a
		 * privilege: set-uid and set-gid bits and file capabilities
		 * are ignored wherever the file is (a program guest root
		 * left in /workspace, one on a mount the view shows). */
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			child_fail(pl, STAGE_NO_NEW_PRIVS);
		confined_run(pl);
	}
	child_exec(pl);
}

bool agent_launch_is_exec_file(const char *path, void *ctx)
{
	struct stat st;

	(void)ctx;
	/* The agent is root, so access(X_OK) would say yes to anything with
	 * one x bit; this is the same test, and the exec itself decides. */
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111);
}

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static int setup_error(struct agent_err *err, const char *what, const char *step)
{
	int e = errno;

	agent_err_set(err, agent_errno_code(e), "%s: %s: %s%s", what, step, strerror(e),
		      agent_errno_code(e) == AGENT_E_BUSY ? "; retry later" : "");
	return -1;
}

/* The view of a confined process, laid out before the fork (the child
 * may not allocate). */
static int prepare_confine(struct confine_plan **plan, const char *what, const char *run_dir,
			   struct agent_err *err)
{
	int e = confine_workspace_ensure();

	if (e < 0) {
		agent_err_set(err, agent_errno_code(-e),
			      "%s: confine: cannot create " AGENT_WORKSPACE ": %s", what,
			      strerror(-e));
		return -1;
	}
	*plan = malloc(sizeof(**plan));
	if (!*plan) {
		agent_err_set(err, AGENT_E_BUSY, "%s: out of memory; retry later", what);
		return -1;
	}
	e = confine_plan_build(*plan, confine_probe, NULL, run_dir);
	if (e == -ENOENT) {
		agent_err_set(
			err, AGENT_E_NOT_FOUND,
			"%s: confine: " AGENT_WORKSPACE
			" is not a directory in this image; make it one, or run without \"confine\"",
			what);
		return -1;
	}
	if (e < 0) {
		agent_err_set(err, AGENT_E_IO_ERROR, "%s: confine: laying out the view failed: %s",
			      what, strerror(-e));
		return -1;
	}
	return 0;
}

/* The parent's ends and the child's ends of the three stdio channels. */
struct launch_fds {
	int parent[3]; /* in (write), out (read), err (read) */
	int child[3];
	int slave;
};

static int make_pipes(struct launch_fds *f, const char *what, struct agent_err *err)
{
	for (int i = 0; i < 3; i++) {
		int p[2];

		if (pipe2(p, O_CLOEXEC) < 0)
			return setup_error(err, what, "creating a pipe");
		/* stdin: the child reads p[0]; stdout/stderr: it writes p[1]. */
		f->child[i] = i == 0 ? p[0] : p[1];
		f->parent[i] = i == 0 ? p[1] : p[0];
		if (set_nonblock(f->parent[i]) < 0)
			return setup_error(err, what, "making a pipe non-blocking");
	}
	return 0;
}

static int make_pty(struct launch_fds *f, const struct agent_proc_req *req, const char *what,
		    struct agent_err *err)
{
	struct winsize ws = { .ws_row = req->rows, .ws_col = req->cols };
	char name[64];
	int m;

	m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0)
		return setup_error(err, what, "opening a pseudo-terminal");
	f->parent[0] = m;
	if (grantpt(m) < 0 || unlockpt(m) < 0 || ptsname_r(m, name, sizeof(name)) != 0)
		return setup_error(err, what, "preparing the pseudo-terminal");
	f->slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (f->slave < 0)
		return setup_error(err, what, "opening the terminal's slave side");
	/* The terminal belongs to the user who runs on it, as after a login. */
	if (fchown(f->slave, agent_user_uid(req->user), (gid_t)-1) < 0)
		return setup_error(err, what, "giving the terminal to its user");
	if (ioctl(m, TIOCSWINSZ, &ws) < 0)
		return setup_error(err, what, "setting the terminal size");
	/* Output is read from a second descriptor that the output reader
	 * owns, so it can close it without racing writers on parent[0]. */
	f->parent[1] = fcntl(m, F_DUPFD_CLOEXEC, 3);
	if (f->parent[1] < 0)
		return setup_error(err, what, "duplicating the terminal");
	if (set_nonblock(m) < 0)
		return setup_error(err, what, "making the terminal non-blocking");
	for (int i = 0; i < 3; i++)
		f->child[i] = f->slave;
	return 0;
}

static void close_all(struct launch_fds *f, bool parent_too)
{
	for (int i = 0; i < 3; i++) {
		if (f->child[i] != f->slave)
			close_fd(&f->child[i]);
		f->child[i] = -1;
		if (parent_too)
			close_fd(&f->parent[i]);
	}
	close_fd(&f->slave);
}

/* Turn the child's report into the protocol's error. */
static void child_error(const struct launch_fail *f, const char *what, const char *prog,
			const struct agent_proc_req *req, const char *cwd,
			const struct confine_plan *confine, struct agent_err *err)
{
	enum agent_code code = agent_errno_code(f->err);
	const char *why = strerror(f->err);
	char step[160];

	switch (f->stage) {
	case STAGE_CONFINE:
		confine_step_describe(confine, f->step, step, sizeof(step));
		agent_err_set(
			err, code,
			"%s: confining the process failed while %s: %s; it did not run (run it without \"confine\", or report this)",
			what, step, why);
		break;
	case STAGE_NO_NEW_PRIVS:
		agent_err_set(
			err, code,
			"%s: confining the process failed while setting no_new_privs: %s; it did not run (run it without \"confine\", or report this)",
			what, why);
		break;
	case STAGE_PIDNS:
		agent_err_set(
			err, code,
			"%s: confining the process failed while giving it a PID namespace of its own: %s; it did not run (run it without \"confine\", or report this)",
			what, why);
		break;
	case STAGE_EXEC:
		if (f->err == ENOENT && confine)
			agent_err_set(
				err, code,
				"%s: cannot run '%.200s' confined: it is not visible there (a confined process sees /usr, /bin, /sbin, /lib*, /opt, " AGENT_WORKSPACE
				" and /tmp)",
				what, prog);
		else if (f->err == ENOEXEC)
			agent_err_set(
				err, code,
				"%s: cannot run '%.200s': %s (not a binary this kernel runs, and no #! line); run it through an interpreter or with \"shell\": true",
				what, prog, why);
		else
			agent_err_set(err, code, "%s: cannot run '%.200s': %s", what, prog, why);
		break;
	case STAGE_CWD:
		agent_err_set(err, code, "%s: cannot change to directory '%.200s' as %s: %s", what,
			      cwd, agent_user_name(req->user), why);
		break;
	case STAGE_USER:
		agent_err_set(err, code, "%s: cannot switch to user '%s': %s", what,
			      agent_user_name(req->user), why);
		break;
	default:
		agent_err_set(err, code, "%s: setting up the process failed (step %d): %s", what,
			      f->stage, why);
		break;
	}
}

int agent_launch(struct reaper *r, const struct rlimit *nofile, const char *what,
		 const struct agent_proc_req *req, bool pty, struct reaper_child *rc,
		 struct agent_launch_io *io, struct agent_err *err)
{
	struct launch_fds f = { { -1, -1, -1 }, { -1, -1, -1 }, -1 };
	struct launch_plan pl = { .slave = -1, .report = -1, .nofile = nofile };
	struct launch_fail fail;
	struct confine_plan *plan = NULL;
	char prog[PATH_MAX];
	char **envp = NULL;
	int report[2] = { -1, -1 }, e, rc_ok = -1;
	ssize_t n;
	pid_t pid;

	memset(io, 0, sizeof(*io));
	io->in_fd = io->out_fd = io->err_fd = -1;
	if (agent_env_build(req, pty, trust_ca_installed(), &envp) < 0) {
		agent_err_set(err, AGENT_E_BUSY, "%s: out of memory; retry later", what);
		return -1;
	}
	if (req->confine && prepare_confine(&plan, what, req->run_dir, err) < 0)
		goto out;
	pl.cwd = req->cwd;
	if (!pl.cwd && plan)
		pl.cwd = AGENT_WORKSPACE;
	if (!pl.cwd)
		pl.cwd = is_dir(agent_user_home(req->user)) ? agent_user_home(req->user) : "/";
	e = agent_path_search(req->argv[0], agent_env_get(envp, "PATH"), pl.cwd,
			      agent_launch_is_exec_file, NULL, prog, sizeof(prog));
	if (e == -ENAMETOOLONG) {
		agent_err_set(err, AGENT_E_IO_ERROR, "%s: program path '%.200s' is too long", what,
			      req->argv[0]);
		goto out;
	}
	if (e < 0) {
		const char *path = agent_env_get(envp, "PATH");

		agent_err_set(
			err, AGENT_E_NOT_FOUND,
			"%s: '%.200s' not found in PATH (%.200s); give its full path or install it",
			what, req->argv[0], path ? path : AGENT_DEFAULT_PATH);
		goto out;
	}
	if ((pty ? make_pty(&f, req, what, err) : make_pipes(&f, what, err)) < 0)
		goto out;
	if (pipe2(report, O_CLOEXEC) < 0) {
		setup_error(err, what, "creating a pipe");
		goto out;
	}
	pl.path = prog;
	pl.argv = (char *const *)req->argv;
	pl.envp = envp;
	pl.uid = agent_user_uid(req->user);
	pl.gid = agent_user_gid(req->user);
	pl.slave = f.slave;
	pl.report = report[1];
	pl.confine = plan;
	for (int i = 0; i < 3; i++)
		pl.fd[i] = f.child[i];

	io->start_us = mono_us();
	reaper_fork_lock(r);
	pid = fork();
	if (pid == 0)
		child_run(&pl);
	e = errno;
	if (pid > 0)
		reaper_add(r, rc, pid);
	reaper_fork_unlock(r);
	if (pid < 0) {
		errno = e;
		setup_error(err, what, "fork");
		goto out;
	}

	close_all(&f, false);
	close_fd(&report[1]);
	/* EOF (0 bytes) means execve() succeeded and closed the pipe. */
	do
		n = read(report[0], &fail, sizeof(fail));
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof(fail)) {
		child_error(&fail, what, prog, req, pl.cwd, plan, err);
		reaper_wait(r, rc);
		goto out;
	}
	io->pid = pid;
	io->in_fd = f.parent[0];
	io->out_fd = f.parent[1];
	io->err_fd = pty ? -1 : f.parent[2];
	f.parent[0] = f.parent[1] = f.parent[2] = -1;
	rc_ok = 0;
out:
	close_all(&f, true);
	close_fd(&report[0]);
	close_fd(&report[1]);
	free(envp);
	free(plan);
	return rc_ok;
}
