/* agent_client: containers (docs/agent-protocol.md 7.9), kiln-runtime's
 * calls; see agent_client.h. */
#include "api/agent-client/agent_client.h"
#include "api/agent-client/agent_client_impl.h"
#include "lib/base/utf8.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct agent_client_ctr_wait {
	struct agent_client_conn k;
	char cid[AGENT_CID_MAX + 1];
	uint32_t exec;
};

/* A ctr_* request from the codec's encoder: what the host sends is what
 * the agent's parser reads (agent_client_req_finish checks it so). */
static void ctr_req(struct agent_client_req *rq, enum agent_type t, const struct agent_ctr_req *r)
{
	rq->type = agent_type_name(t);
	rq->bad_key = NULL;
	/* jansson refuses a cid that is not UTF-8: name the field, not "no memory" */
	if (!utf8_valid((const uint8_t *)r->cid, strlen(r->cid))) {
		rq->o = NULL;
		rq->nomem = false;
		rq->bad_key = "cid";
		return;
	}
	rq->o = agent_ctr_req_encode(t, r);
	rq->nomem = !rq->o;
}

int agent_client_ctr_create(const struct agent_client *c, json_t *req, int *pid,
			    struct agent_client_err *err)
{
	struct agent_client_conn k = agent_client_msg_ctx("ctr_create");
	struct agent_client_req rq = { .type = "ctr_create" };
	const char *type = json_string_value(json_object_get(req, "type"));
	json_t *h;
	int r;

	ERR_INIT(err);
	*pid = 0;
	/* The agent's parser takes any request; only a ctr_create may go out
	 * under this name (another would run, then fail as a protocol error). */
	if (type && strcmp(type, "ctr_create") != 0)
		return agent_client_efail(err, AGENT_FAIL_REQUEST, AGENT_E_BAD_FIELD, EINVAL,
					  "ctr_create: the request's type is '%.64s'", type);
	rq.o = json_deep_copy(req);
	rq.nomem = !rq.o;
	r = agent_client_call_now(c, &rq, "ctr_created", &h, err);
	if (r < 0)
		return r;
	r = agent_client_r_pid(&k, h, pid, err);
	json_decref(h);
	return r;
}

int agent_client_ctr_exec(const struct agent_client *c, const char *cid, uint32_t exec,
			  const json_t *process, int *pid, struct agent_client_err *err)
{
	struct agent_client_conn k = agent_client_msg_ctx("ctr_exec");
	struct agent_client_req rq = { .o = json_object(), .type = "ctr_exec" };
	json_t *h;
	uint64_t got = 0;
	int r;

	ERR_INIT(err);
	*pid = 0;
	/* The agent's parser judges it before it is sent (a bad process is
	 * refused here, as the agent would). */
	rq.nomem = !rq.o || json_object_set_new(rq.o, "type", json_string("ctr_exec")) < 0 ||
		json_object_set_new(rq.o, "cid", json_string(cid)) < 0 ||
		json_object_set_new(rq.o, "exec", json_integer(exec)) < 0 ||
		json_object_set_new(rq.o, "process",
				    process ? json_deep_copy(process) : json_null()) < 0;
	r = agent_client_call_now(c, &rq, "ctr_created", &h, err);
	if (r < 0)
		return r;
	r = agent_client_r_uint(&k, h, "exec", UINT32_MAX, &got, err);
	if (r == 0 && got != exec)
		r = agent_client_efail(err, AGENT_FAIL_PROTOCOL, AGENT_E_IO_ERROR, EPROTO,
				       "ctr_exec: the agent's reply names exec %llu, not %u",
				       (unsigned long long)got, exec);
	if (r == 0)
		r = agent_client_r_pid(&k, h, pid, err);
	json_decref(h);
	return r;
}

int agent_client_ctr_stdio(const struct agent_client *c, const char *cid, uint32_t exec,
			   enum agent_ctr_stream stream, int *fd, struct agent_client_err *err)
{
	struct agent_ctr_req q = { .cid = cid, .exec = exec, .stream = stream };
	struct agent_client_req rq;

	ERR_INIT(err);
	ctr_req(&rq, AGENT_T_CTR_STDIO, &q);
	return agent_client_raw_open(c, &rq, fd, err);
}

static int ctr_ok(const struct agent_client *c, enum agent_type t, const struct agent_ctr_req *q,
		  struct agent_client_err *err)
{
	struct agent_client_req rq;

	ERR_INIT(err);
	ctr_req(&rq, t, q);
	return agent_client_call_ok(c, &rq, err);
}

int agent_client_ctr_start(const struct agent_client *c, const char *cid, uint32_t exec,
			   struct agent_client_err *err)
{
	struct agent_ctr_req q = { .cid = cid, .exec = exec };

	return ctr_ok(c, AGENT_T_CTR_START, &q, err);
}

int agent_client_ctr_signal(const struct agent_client *c, const char *cid, uint32_t exec, int signo,
			    bool all, struct agent_client_err *err)
{
	struct agent_ctr_req q = { .cid = cid, .exec = exec, .signo = signo, .all = all };

	return ctr_ok(c, AGENT_T_CTR_SIGNAL, &q, err);
}

int agent_client_ctr_resize(const struct agent_client *c, const char *cid, uint32_t exec,
			    uint16_t rows, uint16_t cols, struct agent_client_err *err)
{
	struct agent_ctr_req q = { .cid = cid, .exec = exec, .rows = rows, .cols = cols };

	return ctr_ok(c, AGENT_T_CTR_RESIZE, &q, err);
}

int agent_client_ctr_update(const struct agent_client *c, const char *cid, uint64_t pids_max,
			    struct agent_client_err *err)
{
	struct agent_ctr_req q = { .cid = cid, .pids_max = pids_max };

	return ctr_ok(c, AGENT_T_CTR_UPDATE, &q, err);
}

int agent_client_ctr_delete(const struct agent_client *c, const char *cid,
			    struct agent_client_err *err)
{
	struct agent_ctr_req q = { .cid = cid };

	return ctr_ok(c, AGENT_T_CTR_DELETE, &q, err);
}

int agent_client_ctr_wait_begin(const struct agent_client *c, const char *cid, uint32_t exec,
				struct agent_client_ctr_wait **out, struct agent_client_err *err)
{
	struct agent_ctr_req q = { .cid = cid, .exec = exec };
	struct agent_client_ctr_wait *w;
	struct agent_client_req rq;
	struct agent_line line;
	int64_t dl;
	int r;

	ERR_INIT(err);
	*out = NULL;
	ctr_req(&rq, AGENT_T_CTR_WAIT, &q);
	r = agent_client_req_finish(&rq, AGENT_CTX_REQUEST, 0, &line, err);
	if (r < 0)
		return r;
	w = calloc(1, sizeof(*w));
	if (!w) {
		agent_line_free(&line);
		return agent_client_efail(err, AGENT_FAIL_LOCAL, AGENT_E_IO_ERROR, ENOMEM,
					  "ctr_wait: out of memory");
	}
	snprintf(w->cid, sizeof(w->cid), "%s", cid);
	w->exec = exec;
	dl = mono_deadline_ms(c->timeout_ms);
	r = agent_client_conn_open(c, dl, "ctr_wait", &w->k, err);
	if (r == 0)
		r = agent_client_conn_send(&w->k, line.data, line.len, NULL, 0, dl, NULL, err);
	agent_line_free(&line);
	if (r < 0) {
		agent_client_ctr_wait_close(w);
		return r;
	}
	*out = w;
	return 0;
}

int agent_client_ctr_wait_fd(const struct agent_client_ctr_wait *w)
{
	return w->k.fd;
}

int agent_client_ctr_wait_end(struct agent_client_ctr_wait *w, int timeout_ms,
			      struct agent_client_ctr_exit *ex, struct agent_client_err *err)
{
	const char *type, *cid = NULL;
	json_t *h = NULL;
	uint64_t len, exec = 0;
	int r;

	ERR_INIT(err);
	memset(ex, 0, sizeof(*ex));
	agent_client_conn_wait(&w->k, timeout_ms);
	r = agent_client_conn_next(&w->k, &h, &len, err);
	if (r == 1)
		r = agent_client_closed_early(&w->k, "replying", err);
	if (r == 0)
		r = agent_client_reply_type(&w->k, h, len, &type, err);
	if (r == 0 && strcmp(type, "exit") != 0)
		r = agent_client_unexpected(&w->k, type, "exit", err);
	if (r == 0 && !(r = agent_client_r_str(&w->k, h, "cid", &cid, err)) && strcmp(cid, w->cid))
		r = agent_client_efail(err, AGENT_FAIL_PROTOCOL, AGENT_E_IO_ERROR, EPROTO,
				       "ctr_wait: the agent's exit names another container");
	if (r == 0)
		r = agent_client_r_uint(&w->k, h, "exec", UINT32_MAX, &exec, err);
	if (r == 0 && exec != w->exec)
		r = agent_client_efail(err, AGENT_FAIL_PROTOCOL, AGENT_E_IO_ERROR, EPROTO,
				       "ctr_wait: the agent's exit names exec %llu, not %u",
				       (unsigned long long)exec, w->exec);
	if (r == 0)
		r = agent_client_r_pid(&w->k, h, &ex->pid, err);
	if (r == 0)
		r = agent_client_r_status(&w->k, h, &ex->exit_code, &ex->signal, err);
	if (r == 0 && ex->exit_code < 0 && ex->signal == 0)
		r = agent_client_efail(err, AGENT_FAIL_PROTOCOL, AGENT_E_IO_ERROR, EPROTO,
				       "ctr_wait: the agent's exit has neither exit_code nor signal");
	json_decref(h);
	return r;
}

void agent_client_ctr_wait_close(struct agent_client_ctr_wait *w)
{
	if (!w)
		return;
	agent_client_conn_close(&w->k);
	free(w);
}
