/*
 * ctr_exec: a further process in a running container (agent_ctr.h;
 * docs/agent-protocol.md, 7.9): a slot in the container's exec table, the
 * stdio, a clone into the container's cgroup and its init's PID namespace,
 * the child joining the init's other namespaces (oci_apply.c), and its
 * start pipe, as ctr_create's init has.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "guest-init/agent/agent.h"
#include "guest-init/agent/agent_ctr.h"
#include "guest-init/agent/agent_serve.h"
#include "guest-init/agent/oci_apply.h"
#include "guest-init/agent/oci_plan.h"

/* A slot for exec x->exec in init's container, or NULL with the error
 * sent: the container must run, the number be free, a slot be left. */
static struct ctr_proc *reserve(struct agent_ctrs *t, struct agent_conn *c, struct ctr_proc *init,
				const struct agent_ctr_exec *x)
{
	struct ctr *k = init->ctr;
	struct ctr_proc *p = calloc(1, sizeof(*p));
	int slot = -1;
	bool dup = false, running;

	if (!p) {
		agent_reply_error(c, AGENT_E_BUSY, "ctr_exec: out of memory; retry later");
		return NULL;
	}
	ctr_proc_init(p, k, x->exec);
	pthread_mutex_lock(&t->lock);
	running = init->state == CTR_RUNNING;
	dup = ctr_find_proc(k, x->exec) != NULL;
	for (int i = 0; i < AGENT_CTR_EXECS_MAX && slot < 0; i++)
		if (!k->exec[i])
			slot = i;
	if (running && !dup && slot >= 0)
		k->exec[slot] = p;
	pthread_mutex_unlock(&t->lock);
	if (running && !dup && slot >= 0)
		return p;
	free(p);
	if (!running)
		agent_reply_error(
			c, AGENT_E_INVALID_STATE,
			"ctr_exec: container \"%s\" is not running (%s); an exec joins a running container",
			k->cid, init->state == CTR_CREATED ? "not started yet" : "its init ended");
	else if (dup)
		agent_reply_error(
			c, AGENT_E_EXISTS,
			"ctr_exec: container \"%s\" has an exec %u already; pick a free number",
			k->cid, x->exec);
	else
		agent_reply_error(
			c, AGENT_E_BUSY,
			"ctr_exec: container \"%s\" has %d execs, the most it may; wait for one to end",
			k->cid, AGENT_CTR_EXECS_MAX);
	return NULL;
}

/* Clone the exec and wait until it is set up. 0, or -1 with err set (the
 * child, if any, reaped). */
static int start_exec(struct agent_ctrs *t, struct ctr_proc *init, struct ctr_proc *p,
		      const struct agent_ctr_exec *x, struct agent_err *err)
{
	struct oci_child ch = { .proc = &x->proc,
				.path_var = oci_env_path(x->proc.env, x->proc.envc),
				.tty = -1,
				.join = init->pidfd,
				.nofile = t->nofile,
				.seccomp = &init->ctr->seccomp };
	int child[3] = { -1, -1, -1 }, slave = -1, report[2] = { -1, -1 }, start[2] = { -1, -1 };
	struct oci_report rep;
	int rc = -1, r;

	if (ctr_make_stdio(p, &x->proc, child, &slave) < 0) {
		ctr_setup_error(err, "ctr_exec", "making the process's stdio");
		goto out;
	}
	if (pipe2(report, O_CLOEXEC) < 0 || pipe2(start, O_CLOEXEC) < 0 ||
	    pipe2(p->stop, O_CLOEXEC) < 0) {
		ctr_setup_error(err, "ctr_exec", "making a pipe");
		goto out;
	}
	ch.tty = slave;
	ch.report = report[1];
	ch.start = start[0];
	for (int i = 0; i < 3; i++)
		ch.fd[i] = child[i];
	p->pid = ctr_clone(t, p, 0, init->pidfd, &ch);
	if (p->pid < 0) {
		/* A PID namespace whose init is gone takes no process (ENOMEM). */
		if (syscall(SYS_pidfd_send_signal, init->pidfd, 0, NULL, 0) < 0)
			agent_err_set(err, AGENT_E_INVALID_STATE,
				      "ctr_exec: container \"%s\" is not running (its init ended)",
				      p->ctr->cid);
		else
			ctr_setup_error(err, "ctr_exec", "clone3 into the container");
		goto out;
	}
	r = ctr_child_wait(t, p, report, start, &rep);
	if (r == 0)
		rc = 0;
	else if (r > 0)
		ctr_child_error(&rep, NULL, NULL, &x->proc, err);
	else
		agent_err_set(
			err, AGENT_E_INVALID_STATE,
			"ctr_exec: the process ended while being set up (container \"%s\" stopping?)",
			p->ctr->cid);
out:
	ctr_close_child_ends(child, &slave, report, start);
	return rc;
}

/* Forget p, which no one else knows yet (not ready) or was told of: KILL
 * and reap it first. */
static void drop(struct agent_ctrs *t, struct ctr_proc *p)
{
	if (p->pidfd >= 0)
		syscall(SYS_pidfd_send_signal, p->pidfd, SIGKILL, NULL, 0);
	pthread_mutex_lock(&t->lock);
	p->refs++;
	p->ctr->refs++;
	ctr_proc_told(p);
	pthread_mutex_unlock(&t->lock);
	ctr_put(p); /* the last reference: unlinks, reaps and frees it */
}

void agent_ctr_exec(struct agent *a, struct agent_conn *c, struct agent_msg *m)
{
	struct agent_ctrs *t = &a->ctrs;
	const struct agent_ctr_exec *x = &m->u.ctr_exec;
	/* The init's reference holds the container (ctr_delete waits for it). */
	struct ctr_proc *init = ctr_get(t, c, "ctr_exec", x->cid, 0);
	struct ctr_proc *p = init ? reserve(t, c, init, x) : NULL;
	struct agent_line l;
	struct agent_err err;

	if (!p)
		goto out;
	snprintf(p->prog, sizeof(p->prog), "%s", x->proc.args[0]);
	if (start_exec(t, init, p, x, &err) < 0) {
		/* Gone before the host hears of it: the number is free at once. */
		drop(t, p);
		agent_conn_send_err(c, &err);
		goto out;
	}
	pthread_mutex_lock(&t->lock);
	p->ready = true;
	pthread_mutex_unlock(&t->lock);
	/* The host left before it learnt of the exec: no one would wait. */
	if (agent_conn_send_line(c, &l, agent_line_ctr_created(&l, x->cid, x->exec, p->pid)) < 0)
		drop(t, p);
out:
	if (init)
		ctr_put(init);
}
