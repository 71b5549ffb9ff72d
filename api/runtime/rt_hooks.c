/* The bundle's hooks on the host; see rt_hooks.h. */
#include "api/runtime/rt_hooks.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/base/mono.h"
#include "lib/base/sig_reset.h"
#include "lib/base/text_clean.h"

/* What the child is given: its program, stdio and namespace. */
struct hook_child_args {
	const char *path;
	char *const *argv, *const *envp;
	int in, out, err_pipe, netns;
};

struct hook_io {
	int in, out, err_pipe; /* parent's ends: state socket, output pipe, exec error */
	const char *state;
	size_t state_len, sent;
	char output[RT_HOOK_OUTPUT_MAX];
	size_t got;
};

/* In the child: its namespace, stdio in place, nothing else open, then
 * exec. Only async-signal-safe calls; a failure goes back as its errno. */
static void hook_child(const struct hook_child_args *c)
{
	int e;

	setpgid(0, 0);
	sig_reset_all();
	if (c->netns >= 0 && setns(c->netns, CLONE_NEWNET) < 0)
		goto fail;
	if (dup2(c->in, 0) < 0 || dup2(c->out, 1) < 0 || dup2(c->out, 2) < 0)
		goto fail;
	if (c->err_pipe != 3 && (dup2(c->err_pipe, 3) < 0 || fcntl(3, F_SETFD, FD_CLOEXEC) < 0))
		goto fail;
	close_range(4, ~0U, 0);
	execve(c->path, c->argv, c->envp);
fail:
	e = errno;
	if (write(3, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

/* Feed the state, collect output, until the hook's output ends (it
 * exited, or closed it) or the deadline; 0, or -ETIMEDOUT. */
static int hook_wait_output(struct hook_io *io, int64_t deadline)
{
	for (;;) {
		struct pollfd p[2] = { { io->out, POLLIN, 0 }, { io->in, POLLOUT, 0 } };
		int wait = deadline < 0 ? -1 : (int)(deadline - mono_ms());
		char buf[4096];
		ssize_t n;

		if (deadline >= 0 && wait <= 0)
			return -ETIMEDOUT;
		if (io->in < 0)
			p[1].fd = -1;
		if (poll(p, 2, wait) < 0 && errno != EINTR)
			return -errno;
		if (p[1].revents) {
			n = send(io->in, io->state + io->sent, io->state_len - io->sent,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n > 0)
				io->sent += (size_t)n;
			/* all sent, or the hook will not read it: its EOF */
			if (io->sent == io->state_len || (n < 0 && errno != EAGAIN)) {
				close(io->in);
				io->in = -1;
			}
		}
		if (!p[0].revents)
			continue;
		n = read(io->out, buf, sizeof(buf));
		if (n <= 0)
			return 0;
		for (ssize_t i = 0; i < n && io->got < sizeof(io->output) - 1; i++)
			io->output[io->got++] = buf[i];
	}
}

static int hook_failed(const char *where, const struct rt_hook *h, struct hook_io *io, int status,
		       struct err *e)
{
	char out[RT_HOOK_OUTPUT_MAX];

	text_clean_term(out, sizeof(out), io->output, io->got);
	if (WIFSIGNALED(status))
		return err_set(e, EIO, "%s %.200s: killed by signal %d%s%s", where, h->path,
			       WTERMSIG(status), io->got ? ": " : "", out);
	return err_set(e, EIO, "%s %.200s: exited with status %d%s%s", where, h->path,
		       WEXITSTATUS(status), io->got ? ": " : "", out);
}

/* Reap the hook (pid) once its output ended or its time is up. */
static int hook_finish(const struct rt_hook *h, const char *where, pid_t pid, struct hook_io *io,
		       int r, struct err *e)
{
	int status = 0, exec_errno = 0;

	if (r == -ETIMEDOUT) {
		kill(-pid, SIGKILL); /* the hook and what it started */
		kill(pid, SIGKILL);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (read(io->err_pipe, &exec_errno, sizeof(exec_errno)) == (ssize_t)sizeof(exec_errno))
		return err_set(e, exec_errno, "%s %.200s: cannot be executed: %s", where, h->path,
			       strerror(exec_errno));
	if (r == -ETIMEDOUT)
		return err_set(e, ETIMEDOUT, "%s %.200s: timed out after %d s", where, h->path,
			       h->timeout);
	if (r < 0)
		return err_set(e, -r, "%s %.200s: %s", where, h->path, strerror(-r));
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return hook_failed(where, h, io, status, e);
	return 0;
}

/* list[0..n) NULL-terminated in a new array; none: {first, NULL}. */
static char **vector(const char *const *list, size_t n, const char *first)
{
	char **v = calloc(n + 2, sizeof(char *));

	if (v && !n)
		v[0] = (char *)first;
	for (size_t i = 0; v && i < n; i++)
		v[i] = (char *)list[i];
	return v;
}

static int hook_spawn(const struct rt_hook *h, const char *where, const char *state_json,
		      char *const *argv, char *const *envp, int netns, struct err *e)
{
	struct hook_io io = { .state = state_json, .state_len = strlen(state_json) };
	int sv[2], outp[2], errp[2], r;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return err_set(e, errno, "%s: socketpair: %s", where, strerror(errno));
	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		close(sv[0]);
		close(sv[1]);
		return err_set(e, errno, "%s: pipe: %s", where, strerror(errno));
	}
	pid = fork();
	if (pid == 0) {
		struct hook_child_args c = { h->path, argv, envp, sv[1], outp[1], errp[1], netns };

		hook_child(&c);
	}
	if (pid > 0)
		setpgid(pid, pid); /* also here: a timeout may come before the child's own */
	close(sv[1]);
	close(outp[1]);
	close(errp[1]);
	io.in = sv[0];
	io.out = outp[0];
	io.err_pipe = errp[0];
	if (pid < 0)
		r = err_set(e, errno, "%s: fork: %s", where, strerror(errno));
	else
		r = hook_finish(h, where, pid, &io,
				hook_wait_output(&io,
						 h->timeout ? mono_ms() + h->timeout * 1000LL : -1),
				e);
	if (io.in >= 0)
		close(io.in);
	close(io.out);
	close(io.err_pipe);
	return r;
}

int rt_hook_run(const struct rt_hook *h, const char *where, const char *state_json, int netns,
		struct err *e)
{
	char **argv = vector(h->args, h->nargs, h->path), **envp = vector(h->env, h->nenv, NULL);
	int r;

	if (!argv || !envp)
		r = err_set(e, ENOMEM, "%s: out of memory", where);
	else
		r = hook_spawn(h, where, state_json, argv, envp, netns, e);
	free(argv);
	free(envp);
	return r;
}

int rt_hooks_run(const struct rt_hook_list *l, const char *kind, const char *state_json, int netns,
		 struct err *e)
{
	char where[64];

	for (size_t i = 0; i < l->n; i++) {
		snprintf(where, sizeof(where), "hooks.%s[%zu]", kind, i);
		if (rt_hook_run(&l->hooks[i], where, state_json, netns, e) < 0)
			return -EIO;
	}
	return 0;
}
