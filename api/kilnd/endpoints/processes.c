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

#include "api/kilnd/endpoints/processes.h"
#include "api/kilnd/endpoints/handlers.h"
#include "api/kilnd/bodies/proc_render.h"
#include "api/kilnd/bodies/proc_spec.h"
#include "api/kilnd/registry/sandbox.h"

/* A wait is cut into agent waits this long, so that a client that went
 * away stops costing a connection within this time. */
#define WAIT_SLICE_MS 2000u

int proc_target(struct http_req *r, struct agent_client *c, uint32_t *id, struct api_err *e)
{
	struct sandbox *sb = sandbox_get(r->d, &r->peer, r->rm.id, e);
	json_t *env = NULL;
	int rc;

	if (!sb)
		return -1;
	rc = (r->rm.sub[0] && proc_id_parse(r->rm.sub, id, e)) || sandbox_agent(sb, c, &env, e) ? -1
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
	struct agent_client_attached info;
	struct agent_client_proc_opts o;
	struct agent_client_stream *s;
	struct agent_client_err ae;
	struct proc_spec spec = { 0 };
	struct sandbox *sb = NULL;
	struct agent_client c;
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
	    sandbox_agent(sb, &c, &env, &e) || exec_env_merge(&spec.x, env, &e))
		goto fail;
	{
		json_t *def = sandbox_image_defaults(
			sb); /* an imported image's WorkingDir and User */

		exec_spec_image_defaults(&spec.x, def);
		json_decref(def);
	}
	proc_spec_opts(&spec, &o);
	if (agent_client_spawn(&c, &o, &s, &info, &ae)) {
		api_err_from_agent(&e, &ae, what);
		goto fail;
	}
	/* Closing the spawn's stream detaches: the process runs on. */
	agent_client_stream_close(s);
	/* Like exec's: the bytes, then EOF. By id, so the answer comes once
	 * they are in the pipe (or the process is gone). */
	if (spec.x.stdin_data &&
	    agent_client_stdin(&c, info.id, spec.x.stdin_data, spec.x.stdin_len, true, &ae)) {
		api_err_from_agent(&e, &ae, what);
		api_err_set(&e, e.code,
			    "process %u (pid %d) started, but its stdin was not delivered: %.900s",
			    info.id, info.pid, ae.msg);
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

static int list_one(void *arg, const struct agent_client_process *p)
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
	struct agent_client_err ae;
	struct agent_client c;
	struct api_err e;

	if (query_none(r->kv, r->nkv, one ? "process" : "process list", &e) ||
	    proc_target(r, &c, &l.want, &e)) {
		http_error(r, &e);
		return;
	}
	if (!one && !(l.arr = json_array())) {
		oom(r, "process list");
		return;
	}
	if (agent_client_list_processes(&c, list_one, &l, NULL, &ae)) {
		api_err_from_agent(&e, &ae, "list processes");
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
	struct agent_client_err ae;
	struct agent_client c;
	struct api_err e;
	uint32_t id;
	bool close;

	if (proc_query_stdin(r->kv, r->nkv, &close, &e) || proc_target(r, &c, &id, &e)) {
		http_error(r, &e);
		return;
	}
	if (agent_client_stdin(&c, id, r->body, r->body_len, close, &ae)) {
		proc_err_from_agent(&e, &ae, "stdin");
		http_error(r, &e);
		return;
	}
	http_json(r, 200,
		  json_pack("{s:I,s:b}", "bytes", (json_int_t)r->body_len, "closed", close));
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
	int (*send)(const struct agent_client *c, uint32_t id, const struct ctl_args *a,
		    struct agent_client_err *ae);
};

static int parse_signal(const json_t *body, struct ctl_args *a, struct api_err *e)
{
	return proc_signal_parse(body, &a->signo, &a->group, e);
}

static int send_signal(const struct agent_client *c, uint32_t id, const struct ctl_args *a,
		       struct agent_client_err *ae)
{
	return agent_client_signal(c, id, a->signo, a->group, ae);
}

static int parse_resize(const json_t *body, struct ctl_args *a, struct api_err *e)
{
	return proc_resize_parse(body, &a->rows, &a->cols, e);
}

static int send_resize(const struct agent_client *c, uint32_t id, const struct ctl_args *a,
		       struct agent_client_err *ae)
{
	return agent_client_resize(c, id, a->rows, a->cols, ae);
}

static const struct proc_ctl ctl_signal = { "signal", parse_signal, send_signal };
static const struct proc_ctl ctl_resize = { "resize", parse_resize, send_resize };

static void proc_ctl(struct http_req *r, const struct proc_ctl *op)
{
	struct agent_client_err ae;
	struct agent_client c;
	struct ctl_args a = { 0 };
	struct api_err e;
	json_t *body = NULL;
	uint32_t id;

	if (query_none(r->kv, r->nkv, op->name, &e))
		goto fail;
	if (!body_or_answer(r, false, &body))
		return;
	if (proc_target(r, &c, &id, &e) || op->parse(body, &a, &e))
		goto fail;
	if (op->send(&c, id, &a, &ae)) {
		proc_err_from_agent(&e, &ae, op->name);
		goto fail;
	}
	json_decref(body);
	http_no_content(r);
	return;
fail:
	json_decref(body);
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
	struct agent_client_exit ex;
	struct agent_client_err ae;
	struct agent_client c;
	struct api_err e;
	uint32_t id, timeout_ms, left;
	int fd = http_conn_fd(r);
	json_t *o;

	if (proc_query_wait(r->kv, r->nkv, &timeout_ms, &e) || proc_target(r, &c, &id, &e)) {
		http_error(r, &e);
		return;
	}
	left = timeout_ms;
	for (;;) {
		uint32_t slice = timeout_ms && left < WAIT_SLICE_MS ? left : WAIT_SLICE_MS;

		if (agent_client_wait(&c, id, slice, &ex, &ae) == 0)
			break;
		if (ae.fail != AGENT_FAIL_AGENT || ae.code != AGENT_E_TIMEOUT) {
			proc_err_from_agent(&e, &ae, "wait");
			http_error(r, &e);
			return;
		}
		if (timeout_ms && (left -= slice) == 0) {
			api_err_set(&e, API_E_TIMEOUT, "wait: process %u still runs after %u ms",
				    id, timeout_ms);
			http_error(r, &e);
			return;
		}
		if (http_client_gone(fd) || atomic_load(&r->d->shutting_down)) {
			api_err_set(&e, API_E_AGENT_UNAVAILABLE,
				    "wait: the client or kilnd went away");
			http_error(r, &e);
			return;
		}
		/* A waiting client keeps the sandbox from its idle hibernation. */
		sandbox_touch(r->d, &r->peer, r->rm.id);
	}
	o = proc_render_exit(&ex);
	if (o)
		http_json(r, 200, o);
	else
		oom(r, "wait");
}
