/*
 * Background processes (docs/api.md, "Processes"): create, shell, list,
 * get, stdin, signal, wait, resize. Each is one agent request (a spawn
 * whose stream is closed at once, so the process runs detached; the
 * by-id requests; list_processes); the output stream and the tty are in
 * processes_output.c and processes_tty.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/core/agent_error.h"
#include "api/kilnd/endpoints/processes.h"
#include "api/kilnd/endpoints/handlers.h"
#include "api/kilnd/bodies/proc_render.h"
#include "api/kilnd/bodies/proc_spec.h"
#include "api/kilnd/registry/sandbox.h"

/* A wait is cut into agent waits this long, so that a client that went
 * away stops costing a connection within this time. */
#define WAIT_SLICE_MS 2000u

int proc_target(struct http_req *r, kiln_agent **a, uint32_t *id, struct api_err *e)
{
	struct sandbox *sb = sandbox_get(r->d, &r->peer, r->rm.id, e);
	json_t *env = NULL;
	int rc;

	*a = NULL;
	if (!sb)
		return -1;
	rc = (r->rm.sub[0] && proc_id_parse(r->rm.sub, id, e)) || sandbox_agent_new(sb, a, &env, e)
		? -1
		: 0;
	json_decref(env);
	sandbox_put(sb);
	return rc;
}

/* The body as JSON, or an error answer. */
static bool body_or_answer(struct http_req *r, bool optional, json_t **body)
{
	struct api_err e;

	if (http_body_json(r, optional, body, &e) == 0)
		return true;
	http_error(r, &e);
	return false;
}

static void oom(struct http_req *r, const char *what)
{
	struct api_err e;

	api_err_set(&e, API_E_INTERNAL, "%s: out of memory", what);
	http_error(r, &e);
}

/* POST .../processes and POST .../shell. */
static void create(struct http_req *r, bool shell)
{
	const char *what = shell ? "shell" : "process";
	struct kiln_proc_info info = { .size = sizeof(info) };
	struct kiln_exec_opts o;
	struct proc_spec spec = { 0 };
	struct sandbox *sb = NULL;
	kiln_agent *a = NULL;
	kiln_proc *p;
	struct api_err e;
	json_t *body = NULL, *env = NULL, *out;
	char loc[256];

	if (query_none(r->kv, r->nkv, what, &e))
		goto fail;
	if (!body_or_answer(r, shell, &body))
		return;
	if (!(sb = sandbox_get(r->d, &r->peer, r->rm.id, &e)))
		goto fail;
	if ((shell ? proc_shell_parse(body, &spec, &e) : proc_spec_parse(body, &spec, &e)) ||
	    sandbox_agent_new(sb, &a, &env, &e) || exec_env_merge(&spec.x, env, &e))
		goto fail;
	{
		json_t *def = sandbox_image_defaults(
			sb); /* an imported image's WorkingDir and User */

		exec_spec_image_defaults(&spec.x, def);
		json_decref(def);
	}
	proc_spec_opts(&spec, &o);
	if (kiln_agent_spawn(a, &o, &p)) {
		api_err_from_agent(&e, a, what);
		goto fail;
	}
	kiln_proc_get_info(p, &info);
	/* Closing the spawn's stream detaches: the process runs on. */
	kiln_proc_close(p);
	/* Like exec's: the bytes, then EOF. By id, so the answer comes once
	 * they are in the pipe (or the process is gone). */
	if (spec.x.stdin_data &&
	    kiln_agent_proc_stdin(a, info.id, spec.x.stdin_data, spec.x.stdin_len,
				  KILN_AGENT_CLOSE)) {
		api_err_from_agent(&e, a, what);
		api_err_set(&e, e.code,
			    "process %u (pid %d) started, but its stdin was not delivered: %.900s",
			    info.id, info.pid, kiln_agent_errmsg(a));
		goto fail;
	}
	snprintf(loc, sizeof(loc), "/v1/sandboxes/%s/processes/%u", r->rm.id, info.id);
	out = json_pack("{s:I,s:i}", "id", (json_int_t)info.id, "pid", info.pid);
	if (out && shell) {
		char tty[sizeof(loc) + 8];

		snprintf(tty, sizeof(tty), "%s/tty", loc);
		if (json_object_set_new(out, "tty", json_string(tty))) {
			json_decref(out);
			out = NULL;
		}
	}
	if (out)
		http_json_located(r, 201, out, loc);
	else
		oom(r, what);
	goto done;
fail:
	http_error(r, &e);
done:
	proc_spec_free(&spec);
	json_decref(body);
	json_decref(env);
	kiln_agent_free(a);
	if (sb)
		sandbox_put(sb);
}

void handle_proc_create(struct http_req *r)
{
	create(r, false);
}

void handle_shell(struct http_req *r)
{
	create(r, true);
}

struct list_ctx {
	json_t *arr;
	uint32_t want; /* 0: every process */
	json_t *found;
};

static int list_one(void *arg, const struct kiln_proc_entry *p)
{
	struct list_ctx *l = arg;
	json_t *v;

	if (l->want && p->id != l->want)
		return 0;
	v = proc_render_view(p);
	if (!v)
		return -ENOMEM;
	if (l->want) {
		/* The agent client refuses a repeated id; were one to pass,
		 * the first answer would leak. */
		json_decref(l->found);
		l->found = v;
		return 0;
	}
	return json_array_append_new(l->arr, v) ? -ENOMEM : 0;
}

/* GET .../processes and GET .../processes/{proc}. */
static void list(struct http_req *r, bool one)
{
	struct list_ctx l = { 0 };
	kiln_agent *a = NULL;
	struct api_err e;

	if (query_none(r->kv, r->nkv, one ? "process" : "process list", &e) ||
	    proc_target(r, &a, &l.want, &e)) {
		http_error(r, &e);
		return;
	}
	if (!one && !(l.arr = json_array())) {
		kiln_agent_free(a);
		oom(r, "process list");
		return;
	}
	if (kiln_agent_list_procs(a, list_one, &l, NULL)) {
		api_err_from_agent(&e, a, "list processes");
		http_error(r, &e);
	} else if (!one) {
		json_t *o = json_pack("{s:O}", "processes", l.arr);

		if (o)
			http_json(r, 200, o);
		else
			oom(r, "process list");
	} else if (l.found) {
		http_json(r, 200, l.found);
		l.found = NULL;
	} else {
		api_err_set(&e, API_E_PROCESS_NOT_FOUND,
			    "no process %u in sandbox %s (it never existed, or a newer one took its slot)",
			    l.want, r->rm.id);
		http_error(r, &e);
	}
	json_decref(l.arr);
	json_decref(l.found);
	kiln_agent_free(a);
}

void handle_proc_list(struct http_req *r)
{
	list(r, false);
}

void handle_proc_get(struct http_req *r)
{
	list(r, true);
}

void handle_proc_stdin(struct http_req *r)
{
	kiln_agent *a = NULL;
	struct api_err e;
	uint32_t id;
	bool close;

	if (proc_query_stdin(r->kv, r->nkv, &close, &e) || proc_target(r, &a, &id, &e)) {
		http_error(r, &e);
		return;
	}
	if (kiln_agent_proc_stdin(a, id, r->body, r->body_len, close ? KILN_AGENT_CLOSE : 0)) {
		proc_err_from_agent(&e, a, "stdin");
		http_error(r, &e);
	} else {
		http_json(r, 200,
			  json_pack("{s:I,s:b}", "bytes", (json_int_t)r->body_len, "closed",
				    close));
	}
	kiln_agent_free(a);
}

/* What a control of a running process says (signal or resize). */
struct ctl_args {
	int signo;
	bool group;
	uint16_t rows, cols;
};

/* A control of a running process: its body parsed, sent to the agent,
 * answered 204. */
struct proc_ctl {
	const char *name;
	int (*parse)(const json_t *body, struct ctl_args *a, struct api_err *e);
	int (*send)(kiln_agent *ag, uint32_t id, const struct ctl_args *a);
};

static int parse_signal(const json_t *body, struct ctl_args *a, struct api_err *e)
{
	return proc_signal_parse(body, &a->signo, &a->group, e);
}

static int send_signal(kiln_agent *ag, uint32_t id, const struct ctl_args *a)
{
	return kiln_agent_proc_signal(ag, id, a->signo, a->group ? KILN_AGENT_GROUP : 0);
}

static int parse_resize(const json_t *body, struct ctl_args *a, struct api_err *e)
{
	return proc_resize_parse(body, &a->rows, &a->cols, e);
}

static int send_resize(kiln_agent *ag, uint32_t id, const struct ctl_args *a)
{
	return kiln_agent_proc_resize(ag, id, a->rows, a->cols);
}

static const struct proc_ctl ctl_signal = { "signal", parse_signal, send_signal };
static const struct proc_ctl ctl_resize = { "resize", parse_resize, send_resize };

static void proc_ctl(struct http_req *r, const struct proc_ctl *op)
{
	kiln_agent *ag = NULL;
	struct ctl_args a = { 0 };
	struct api_err e;
	json_t *body = NULL;
	uint32_t id;

	if (query_none(r->kv, r->nkv, op->name, &e))
		goto fail;
	if (!body_or_answer(r, false, &body))
		return;
	if (proc_target(r, &ag, &id, &e) || op->parse(body, &a, &e))
		goto fail;
	if (op->send(ag, id, &a)) {
		proc_err_from_agent(&e, ag, op->name);
		goto fail;
	}
	json_decref(body);
	kiln_agent_free(ag);
	http_no_content(r);
	return;
fail:
	json_decref(body);
	kiln_agent_free(ag);
	http_error(r, &e);
}

void handle_proc_signal(struct http_req *r)
{
	proc_ctl(r, &ctl_signal);
}

void handle_proc_resize(struct http_req *r)
{
	proc_ctl(r, &ctl_resize);
}

void handle_proc_wait(struct http_req *r)
{
	struct kiln_exit_status ex = { .size = sizeof(ex) };
	kiln_agent *a = NULL;
	struct api_err e;
	uint32_t id, timeout_ms, left;
	int fd = http_conn_fd(r);
	json_t *o;

	if (proc_query_wait(r->kv, r->nkv, &timeout_ms, &e) || proc_target(r, &a, &id, &e)) {
		http_error(r, &e);
		return;
	}
	left = timeout_ms;
	for (;;) {
		uint32_t slice = timeout_ms && left < WAIT_SLICE_MS ? left : WAIT_SLICE_MS;

		if (kiln_agent_proc_wait(a, id, slice, &ex) == 0)
			break;
		/* The agent's own timeout: still running after the slice. */
		if (kiln_agent_errkind(a) != KILN_AGENT_FAIL_AGENT ||
		    strcmp(kiln_agent_errcode(a), "timeout") != 0) {
			proc_err_from_agent(&e, a, "wait");
			goto fail;
		}
		if (timeout_ms && (left -= slice) == 0) {
			api_err_set(&e, API_E_TIMEOUT, "wait: process %u still runs after %u ms",
				    id, timeout_ms);
			goto fail;
		}
		if (http_client_gone(fd) || atomic_load(&r->d->shutting_down)) {
			api_err_set(&e, API_E_AGENT_UNAVAILABLE,
				    "wait: the client or kilnd went away");
			goto fail;
		}
		/* A waiting client keeps the sandbox from its idle hibernation. */
		sandbox_touch(r->d, &r->peer, r->rm.id);
	}
	kiln_agent_free(a);
	o = proc_render_exit(&ex);
	if (o)
		http_json(r, 200, o);
	else
		oom(r, "wait");
	return;
fail:
	kiln_agent_free(a);
	http_error(r, &e);
}
