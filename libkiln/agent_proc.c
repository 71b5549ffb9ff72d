/*
 * agent_proc: what kiln_agent offers about spawned processes beyond
 * spawn, attach and their stream's events (include/kiln/agent.h: attach
 * at a point, the stream's fd and terminal, resize and list by id), over
 * api/agent-client: options and results converted, the message kept per
 * handle.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "libkiln/agent_impl.h"

_Static_assert((int)KILN_ATTACH_NOW == (int)AGENT_FROM_NOW &&
		       (int)KILN_ATTACH_SEQ == (int)AGENT_FROM_SEQ,
	       "attach points in the client's order");

int kiln_agent_attach_at(kiln_agent *a, uint32_t id, enum kiln_attach_from from, uint64_t seq,
			 kiln_proc **out)
{
	struct agent_client_attached info = { 0 };
	struct agent_client_stream *s = NULL;
	struct agent_client_err e = { 0 };
	int r;

	*out = NULL;
	if ((unsigned)from > KILN_ATTACH_SEQ) {
		e.fail = AGENT_FAIL_REQUEST;
		e.code = AGENT_E_BAD_FIELD;
		snprintf(e.msg, sizeof(e.msg), "attach: unknown starting point %d", (int)from);
		return agent_fail(a, -EINVAL, &e);
	}
	r = agent_client_attach(&a->c, id, (enum agent_client_from)from, seq, &s, &info, &e);
	return r < 0 ? agent_fail(a, r, &e) : agent_new_proc(a, s, &info, out);
}

int kiln_proc_get_info(const kiln_proc *p, struct kiln_proc_info *info)
{
	if (!info || info->size < sizeof(*info))
		return -EINVAL;
	info->id = p->info.id;
	info->pid = p->info.pid;
	info->pty = p->info.pty;
	info->running = p->info.running;
	info->seq = p->info.seq;
	return 0;
}

int kiln_proc_resize(kiln_proc *p, uint16_t rows, uint16_t cols)
{
	struct agent_client_err e = { 0 };
	int r = agent_client_stream_resize(p->s, rows, cols, &e);

	return r < 0 ? lk_err_set(&p->err, r, &e) : 0;
}

int kiln_proc_fd(const kiln_proc *p)
{
	return agent_client_stream_fd(p->s);
}

int kiln_proc_pending(const kiln_proc *p)
{
	return agent_client_stream_pending(p->s);
}

int kiln_agent_proc_resize(kiln_agent *a, uint32_t id, uint16_t rows, uint16_t cols)
{
	struct agent_client_err e = { 0 };
	int r = agent_client_resize(&a->c, id, rows, cols, &e);

	return r < 0 ? agent_fail(a, r, &e) : 0;
}

struct list_relay {
	kiln_proc_list_fn fn;
	void *arg;
};

static int relay_proc(void *arg, const struct agent_client_process *p)
{
	struct list_relay *l = arg;
	struct kiln_proc_entry o = { .size = sizeof(o) };

	o.id = p->id;
	o.pid = p->pid;
	o.argv = p->argv;
	o.argc = p->argc;
	o.argv_truncated = p->argv_truncated;
	o.pty = p->pty;
	o.running = p->running;
	o.exit_code = p->exit_code;
	o.signal = p->signal;
	o.timed_out = p->timed_out;
	o.seq = p->seq;
	o.attached = p->attached;
	return l->fn(l->arg, &o);
}

int kiln_agent_list_procs(kiln_agent *a, kiln_proc_list_fn fn, void *arg, uint64_t *count)
{
	struct agent_client_err e = { 0 };
	struct list_relay l = { fn, arg };
	uint64_t n = 0;
	int r;

	if (!fn) {
		e.fail = AGENT_FAIL_LOCAL;
		snprintf(e.msg, sizeof(e.msg), "list processes: no callback given");
		return agent_fail(a, -EINVAL, &e);
	}
	if ((r = agent_client_list_processes(&a->c, relay_proc, &l, &n, &e)) < 0)
		return agent_fail(a, r, &e);
	if (count)
		*count = n;
	return 0;
}
