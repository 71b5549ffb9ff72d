/* agent_client: exec, spawned processes and their streams (agent_client.h). */
#include "api/agent-client/agent_client.h"
#include "api/agent-client/agent_client_impl.h"
#include "lib/base/utf8.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- processes ---- */

/* The fields exec and spawn share. */
static void req_proc(struct agent_client_req *rq, const struct agent_client_proc_opts *o)
{
	json_t *argv = o->lang ? NULL : json_array();

	if (!argv && !o->lang)
		rq->nomem = true;
	for (size_t i = 0; argv && o->argv && o->argv[i]; i++) {
		json_t *v = agent_client_req_string(rq, "argv", o->argv[i]);

		if (v && json_array_append_new(argv, v) < 0)
			rq->nomem = true;
	}
	if (argv)
		agent_client_req_set(rq, "argv", argv);
	if (o->shell && !o->lang)
		agent_client_req_true(rq, "shell");
	if (o->envc) {
		json_t *env = json_object();

		if (!env)
			rq->nomem = true;
		for (size_t i = 0; env && i < o->envc; i++) {
			json_t *v = o->env[i].value
				? agent_client_req_string(rq, "env", o->env[i].value)
				: json_null();

			if (!utf8_valid((const uint8_t *)o->env[i].key, strlen(o->env[i].key))) {
				json_decref(v);
				if (!rq->bad_key)
					rq->bad_key = "env";
				continue;
			}
			if (v && json_object_set_new(env, o->env[i].key, v) < 0)
				rq->nomem = true;
		}
		agent_client_req_set(rq, "env", env);
	}
	if (o->cwd)
		agent_client_req_str(rq, "cwd", o->cwd);
	agent_client_req_user(rq, o->user);
	if (o->timeout_ms)
		agent_client_req_int(rq, "timeout_ms", o->timeout_ms);
	if (o->confine)
		agent_client_req_set(rq, "confine", json_true());
}

/* Output of one exec stream: collected up to the cap, or passed on. */
struct sink {
	uint8_t **buf;
	size_t *len;
	size_t alloc;
	uint64_t kept; /* bytes accepted so far (the cap counts these) */
	bool truncated;
};

static int sink_add(struct sink *s, const struct agent_client_proc_opts *o, enum agent_stream st,
		    uint64_t cap, const uint8_t *d, size_t n, struct agent_client_err *err)
{
	size_t take = cap - s->kept < n ? (size_t)(cap - s->kept) : n;

	/* A hostile agent may send more than the cap it was given; the
	 * excess is dropped as the agent itself should have. */
	if (take < n)
		s->truncated = true;
	if (!take)
		return 0;
	s->kept += take;
	if (o->on_output) {
		int r = o->on_output(o->on_output_arg, st, d, take);

		if (r < 0)
			return agent_client_efail(err, AGENT_FAIL_LOCAL, AGENT_E_IO_ERROR, -r,
						  "exec: the output callback failed: %s",
						  strerror(-r));
		return 0;
	}
	if (*s->len + take + 1 > s->alloc) {
		size_t want = s->alloc ? s->alloc : 4096;
		uint8_t *nb;

		while (want < *s->len + take + 1)
			want *= 2;
		if (want > cap + 1)
			want = (size_t)cap + 1;
		nb = realloc(*s->buf, want);
		if (!nb)
			return agent_client_efail(err, AGENT_FAIL_LOCAL, AGENT_E_BUSY, ENOMEM,
						  "exec: out of memory for %zu bytes of output",
						  want);
		*s->buf = nb;
		s->alloc = want;
	}
	memcpy(*s->buf + *s->len, d, take);
	*s->len += take;
	(*s->buf)[*s->len] = '\0';
	return 0;
}

void agent_client_exec_result_free(struct agent_client_exec_result *res)
{
	free(res->out);
	free(res->err);
	free(res->result);
	res->out = res->err = res->result = NULL;
	res->out_len = res->err_len = res->result_len = 0;
}

/* run's `result` line and its payload (at most AGENT_RUN_RESULT_MAX). */
static int read_result(struct agent_client_conn *k, json_t *h, uint64_t len, bool *seen,
		       struct agent_client_exec_result *res, struct agent_client_err *err)
{
	uint64_t size;
	int r;

	if (*seen)
		return AGENT_CLIENT_PROTO_FAIL(err, "%s: the agent sent a second result", k->what);
	*seen = true;
	r = agent_client_r_uint(k, h, "size", UINT64_MAX, &size, err);
	if (r < 0)
		return r;
	/* The whole file, or nothing when it is over the cap. (The agent
	 * may read less than the size it saw if the code shrank the file
	 * meanwhile; a shorter payload is fine, a longer one is a lie.) */
	if (size > AGENT_RUN_RESULT_MAX ? len != 0 : len > size)
		return AGENT_CLIENT_PROTO_FAIL(
			err, "%s: the agent's result line says size %llu but carries %llu bytes",
			k->what, (unsigned long long)size, (unsigned long long)len);
	res->result_size = size;
	if (len) {
		res->result = malloc((size_t)len + 1);
		if (!res->result)
			return agent_client_efail(err, AGENT_FAIL_LOCAL, AGENT_E_BUSY, ENOMEM,
						  "%s: out of memory for a %llu-byte result",
						  k->what, (unsigned long long)len);
	}
	for (;;) {
		const uint8_t *p;
		size_t n;

		r = agent_client_conn_payload(k, &p, &n, err);
		if (r == 1)
			break;
		if (r < 0)
			return r;
		if (res->result_len + n > len)
			return AGENT_CLIENT_PROTO_FAIL(err,
						       "%s: the agent's result overran its len",
						       k->what);
		memcpy(res->result + res->result_len, p, n);
		res->result_len += n;
	}
	if (res->result)
		res->result[res->result_len] = '\0';
	return 0;
}

int agent_client_run(const struct agent_client *c, const struct agent_client_proc_opts *o,
		     struct agent_client_exec_result *res, struct agent_client_err *err)
{
	if (!o->lang || !agent_lang_name(o->lang)) {
		ERR_INIT(err);
		memset(res, 0, sizeof(*res));
		return agent_client_efail(err, AGENT_FAIL_REQUEST, AGENT_E_BAD_FIELD, EINVAL,
					  "run: no language given");
	}
	return agent_client_exec(c, o, res, err);
}

int agent_client_exec(const struct agent_client *c, const struct agent_client_proc_opts *o,
		      struct agent_client_exec_result *res, struct agent_client_err *err)
{
	int64_t start = mono_us();
	uint64_t cap = o->discard_output ? 0
		: o->output_cap          ? o->output_cap
					 : AGENT_OUTPUT_CAP_DEFAULT;
	struct sink so = { .buf = &res->out, .len = &res->out_len };
	struct sink se = { .buf = &res->err, .len = &res->err_len };
	struct agent_line line;
	struct agent_client_req rq;
	struct agent_client_conn k;
	int64_t dl;
	int r;

	const char *what = o->lang ? "run" : "exec";
	bool seen_result = false;
	const void *payload = o->stdin_data;
	size_t plen = o->stdin_len;
	uint8_t *joined = NULL;

	ERR_INIT(err);
	memset(res, 0, sizeof(*res));
	if (o->lang) {
		/* run's payload: the code, then stdin. */
		if (o->code_len > AGENT_LEN_MAX || o->stdin_len > AGENT_LEN_MAX - o->code_len)
			return agent_client_efail(
				err, AGENT_FAIL_REQUEST, AGENT_E_TOO_LARGE, E2BIG,
				"run: code and stdin are %zu bytes together; at most %u",
				o->code_len +
					(o->stdin_len > AGENT_LEN_MAX ? AGENT_LEN_MAX
								      : o->stdin_len),
				AGENT_LEN_MAX);
		plen = o->code_len + o->stdin_len;
		joined = malloc(plen ? plen : 1);
		if (!joined)
			return agent_client_efail(err, AGENT_FAIL_LOCAL, AGENT_E_BUSY, ENOMEM,
						  "run: out of memory");
		if (o->code_len)
			memcpy(joined, o->code, o->code_len);
		if (o->stdin_len)
			memcpy(joined + o->code_len, o->stdin_data, o->stdin_len);
		payload = joined;
	}
	agent_client_req_init(&rq, what);
	if (o->lang) {
		agent_client_req_str(&rq, "language", agent_lang_name(o->lang));
		agent_client_req_int(&rq, "code_len", (int64_t)o->code_len);
	}
	req_proc(&rq, o);
	if (cap != AGENT_OUTPUT_CAP_DEFAULT)
		agent_client_req_int(&rq, "output_cap", (int64_t)cap);
	r = agent_client_req_finish(&rq, AGENT_CTX_REQUEST, plen, &line, err);
	if (r < 0) {
		free(joined);
		return r;
	}
	dl = mono_deadline_ms(c->timeout_ms);
	r = agent_client_conn_open(c, dl, what, &k, err);
	if (r < 0) {
		agent_line_free(&line);
		free(joined);
		return r;
	}
	r = agent_client_conn_send(&k, line.data, line.len, payload, plen, dl, NULL, err);
	agent_line_free(&line);
	free(joined);
	if (r < 0)
		goto out;
	if (o->wait_ms)
		agent_client_conn_wait(&k, o->wait_ms);
	else if (o->timeout_ms && c->timeout_ms > 0)
		agent_client_conn_wait(&k, (int64_t)o->timeout_ms + AGENT_DRAIN_MS + c->timeout_ms);
	else
		agent_client_conn_wait(&k, 0);

	for (;;) {
		const char *type;
		json_t *h;
		uint64_t len;
		struct sink *s;
		enum agent_stream st;

		r = agent_client_conn_next(&k, &h, &len, err);
		if (r == 1)
			r = agent_client_closed_early(&k, "the process's exit line", err);
		if (r < 0)
			goto out;
		r = agent_client_reply_type(&k, h, len, &type, err);
		if (r == 0 && strcmp(type, "exit") == 0) {
			r = agent_client_parse_exit(&k, h, true, &res->exit, err);
			json_decref(h);
			break;
		}
		if (r == 0 && o->lang && strcmp(type, "result") == 0) {
			r = read_result(&k, h, len, &seen_result, res, err);
			json_decref(h);
			if (r < 0)
				goto out;
			continue;
		}
		if (r == 0 && strcmp(type, "stdout") != 0 && strcmp(type, "stderr") != 0)
			r = agent_client_unexpected(&k, type,
						    o->lang ? "stdout, stderr, result or exit"
							    : "stdout, stderr or exit",
						    err);
		st = r == 0 && strcmp(type, "stderr") == 0 ? AGENT_STDERR : AGENT_STDOUT;
		json_decref(h);
		if (r < 0)
			goto out;
		s = st == AGENT_STDERR ? &se : &so;
		for (;;) {
			const uint8_t *p;
			size_t n;

			r = agent_client_conn_payload(&k, &p, &n, err);
			if (r == 1)
				break;
			if (r < 0)
				goto out;
			r = sink_add(s, o, st, cap, p, n, err);
			if (r < 0)
				goto out;
		}
	}
	if (r == 0) {
		res->exit.stdout_truncated |= so.truncated;
		res->exit.stderr_truncated |= se.truncated;
	}
out:
	res->host_us = (uint64_t)(mono_us() - start);
	/* Closing an unfinished exec is how the agent learns to kill it. */
	agent_client_conn_close(&k);
	return r;
}

struct agent_client_stream {
	struct agent_client_conn k;
	int timeout_ms;        /* for sends */
	enum agent_stream cur; /* stream of the payload being delivered */
	uint64_t seq;          /* seq of the next payload byte */
	bool exited;           /* EXIT delivered; only the close is left */
	bool done;
	bool send_broken; /* a message went out half: nothing more may follow */
	char what[16];
};

/* Connect, send a spawn/attach request, read its first reply into *hdr. */
static int stream_open(const struct agent_client *c, struct agent_client_req *rq, const char *want,
		       struct agent_client_stream **out, json_t **hdr, struct agent_client_err *err)
{
	struct agent_client_stream *s = calloc(1, sizeof(*s));
	int64_t dl = mono_deadline_ms(c->timeout_ms);
	int r;

	*out = NULL;
	*hdr = NULL;
	if (!s) {
		json_decref(rq->o); /* what sending it would have done */
		rq->o = NULL;
		return agent_client_efail(err, AGENT_FAIL_LOCAL, AGENT_E_BUSY, ENOMEM,
					  "%s: out of memory", rq->type);
	}
	snprintf(s->what, sizeof(s->what), "%s", rq->type);
	s->timeout_ms = c->timeout_ms;
	r = agent_client_conn_call(c, rq, NULL, 0, want, dl, dl, &s->k, hdr, err);
	s->k.what = s->what;
	if (r < 0) {
		agent_client_stream_close(s);
		return r;
	}
	*out = s;
	return 0;
}

/* What the first line of spawn's or attach's stream says, into info. */
typedef int attached_read(struct agent_client_stream *s, json_t *h, const void *arg,
			  struct agent_client_attached *info, struct agent_client_err *err);

/* spawn and attach: rq sent, its stream opened on a `want` line that
 * `read` takes into info (NULL: the caller does not want it). */
static int attached_open(const struct agent_client *c, struct agent_client_req *rq,
			 const char *want, attached_read *read, const void *arg,
			 struct agent_client_stream **stream, struct agent_client_attached *info,
			 struct agent_client_err *err)
{
	struct agent_client_attached local;
	struct agent_client_stream *s;
	json_t *h;
	int r;

	if (!info)
		info = &local;
	memset(info, 0, sizeof(*info));
	*stream = NULL;
	r = stream_open(c, rq, want, &s, &h, err);
	if (r < 0)
		return r;
	r = read(s, h, arg, info, err);
	json_decref(h);
	if (r < 0) {
		agent_client_stream_close(s);
		return r;
	}
	s->seq = info->seq;
	*stream = s;
	return 0;
}

static int read_spawned(struct agent_client_stream *s, json_t *h, const void *arg,
			struct agent_client_attached *info, struct agent_client_err *err)
{
	const struct agent_client_proc_opts *o = arg;
	int r;

	if ((r = agent_client_r_u32(&s->k, h, "id", UINT32_MAX, &info->id, err)) == 0 &&
	    info->id == 0)
		r = AGENT_CLIENT_PROTO_FAIL(err, "spawn: the agent handed out process id 0");
	if (r == 0)
		r = agent_client_r_pid(&s->k, h, &info->pid, err);
	info->pty = o->pty;
	info->running = true;
	return r;
}

int agent_client_spawn(const struct agent_client *c, const struct agent_client_proc_opts *o,
		       struct agent_client_stream **stream, struct agent_client_attached *info,
		       struct agent_client_err *err)
{
	struct agent_client_req rq;

	ERR_INIT(err);
	agent_client_req_init(&rq, "spawn");
	req_proc(&rq, o);
	if (o->pty) {
		agent_client_req_true(&rq, "pty");
		if (o->rows)
			agent_client_req_int(&rq, "rows", o->rows);
		if (o->cols)
			agent_client_req_int(&rq, "cols", o->cols);
	}
	if (o->ring_bytes)
		agent_client_req_int(&rq, "ring_bytes", o->ring_bytes);
	return attached_open(c, &rq, "spawned", read_spawned, o, stream, info, err);
}

static int read_attached(struct agent_client_stream *s, json_t *h, const void *arg,
			 struct agent_client_attached *info, struct agent_client_err *err)
{
	uint32_t id = *(const uint32_t *)arg;
	int r;

	if (!(r = agent_client_r_u32(&s->k, h, "id", UINT32_MAX, &info->id, err)) &&
	    !(r = agent_client_r_pid(&s->k, h, &info->pid, err)) &&
	    !(r = agent_client_r_bool(&s->k, h, "pty", &info->pty, err)) &&
	    !(r = agent_client_r_bool(&s->k, h, "running", &info->running, err)) &&
	    !(r = agent_client_r_u64(&s->k, h, "seq", &info->seq, err)) && info->id != id)
		r = AGENT_CLIENT_PROTO_FAIL(err,
					    "attach: asked for process %u, the agent attached %u",
					    id, info->id);
	return r;
}

int agent_client_attach(const struct agent_client *c, uint32_t id, enum agent_client_from from,
			uint64_t seq, struct agent_client_stream **stream,
			struct agent_client_attached *info, struct agent_client_err *err)
{
	struct agent_client_req rq;

	ERR_INIT(err);
	agent_client_req_init(&rq, "attach");
	agent_client_req_int(&rq, "id", id);
	if (from == AGENT_FROM_NOW)
		agent_client_req_str(&rq, "from", "now");
	else if (from == AGENT_FROM_SEQ)
		agent_client_req_int(&rq, "from", seq > INT64_MAX ? INT64_MAX : (int64_t)seq);
	return attached_open(c, &rq, "attached", read_attached, &id, stream, info, err);
}

int agent_client_stream_next(struct agent_client_stream *s, int timeout_ms,
			     struct agent_client_event *ev, struct agent_client_err *err)
{
	struct agent_client_conn *k = &s->k;

	ERR_INIT(err);
	memset(ev, 0, sizeof(*ev));
	if (s->done)
		return 1;
	agent_client_conn_wait(k, timeout_ms < 0 ? 0 : timeout_ms > 0 ? timeout_ms : 1);
	for (;;) {
		const char *type;
		json_t *h;
		uint64_t len, seq;
		int r;

		if (k->in_payload) {
			const uint8_t *p;
			size_t n;

			r = agent_client_conn_payload(k, &p, &n, err);
			if (r < 0)
				return r;
			if (r == 0) {
				ev->kind = s->cur == AGENT_STDERR ? AGENT_EVENT_STDERR
								  : AGENT_EVENT_STDOUT;
				ev->seq = s->seq;
				ev->data = p;
				ev->len = n;
				s->seq += n;
				return 0;
			}
		}
		r = agent_client_conn_next(k, &h, &len, err);
		if (r == 1) {
			if (s->exited) {
				s->done = true;
				return 1;
			}
			return agent_client_closed_early(k, "the process's exit line", err);
		}
		if (r < 0)
			return r;
		if (s->exited) {
			json_decref(h);
			return AGENT_CLIENT_PROTO_FAIL(
				err, "%s: the agent sent a message after the exit line", s->what);
		}
		r = agent_client_reply_type(k, h, len, &type, err);
		if (r < 0) {
			json_decref(h);
			return r;
		}
		if (strcmp(type, "stdout") == 0 || strcmp(type, "stderr") == 0) {
			s->cur = type[3] == 'e' ? AGENT_STDERR : AGENT_STDOUT;
			if (json_object_get(h, "seq")) {
				r = agent_client_r_u64(k, h, "seq", &seq, err);
				if (r == 0)
					s->seq = seq;
			}
			json_decref(h);
			if (r < 0)
				return r;
			continue; /* its payload, if any, comes next */
		}
		if (strcmp(type, "gap") == 0) {
			r = agent_client_r_u64(k, h, "seq", &ev->seq, err);
			if (r == 0)
				r = agent_client_r_u64(k, h, "bytes", &ev->gap_bytes, err);
			json_decref(h);
			if (r < 0)
				return r;
			ev->kind = AGENT_EVENT_GAP;
			s->seq = ev->seq + ev->gap_bytes;
			return 0;
		}
		if (strcmp(type, "exit") == 0) {
			r = agent_client_parse_exit(k, h, false, &ev->exit, err);
			json_decref(h);
			if (r < 0)
				return r;
			ev->kind = AGENT_EVENT_EXIT;
			s->exited = true;
			return 0;
		}
		r = agent_client_unexpected(k, type, "stdout, stderr, gap or exit", err);
		json_decref(h);
		return r;
	}
}

/* One control message on an attached stream. */
static int stream_send(struct agent_client_stream *s, struct agent_client_req *rq,
		       const void *payload, size_t n, struct agent_client_err *err)
{
	struct agent_line line;
	size_t sent = 0;
	int r;

	if (s->send_broken) {
		json_decref(rq->o);
		return agent_client_efail(
			err, AGENT_FAIL_LOCAL, AGENT_E_INVALID_STATE, EPIPE,
			"%s: an earlier message was only half sent; this stream can no longer send (reading still works)",
			s->what);
	}
	r = agent_client_req_finish(rq, AGENT_CTX_ATTACHED, n, &line, err);
	if (r < 0)
		return r;
	r = agent_client_conn_send(&s->k, line.data, line.len, payload, n,
				   mono_deadline_ms(s->timeout_ms), &sent, err);
	if (r < 0 && sent > 0)
		s->send_broken = true;
	agent_line_free(&line);
	return r;
}

int agent_client_stream_stdin(struct agent_client_stream *s, const void *data, size_t n, bool close,
			      struct agent_client_err *err)
{
	size_t off = 0;

	ERR_INIT(err);
	if (n == 0 && !close)
		return 0;
	do {
		size_t chunk = n - off < AGENT_CHUNK_MAX ? n - off : AGENT_CHUNK_MAX;
		struct agent_client_req rq;
		int r;

		agent_client_req_init(&rq, "stdin");
		if (close && off + chunk == n)
			agent_client_req_true(&rq, "close");
		/* No arithmetic on a NULL `data` when only closing. */
		r = stream_send(s, &rq, chunk ? (const uint8_t *)data + off : NULL, chunk, err);
		if (r < 0)
			return r;
		off += chunk;
	} while (off < n);
	return 0;
}

int agent_client_stream_signal(struct agent_client_stream *s, int signo, bool group,
			       struct agent_client_err *err)
{
	struct agent_client_req rq;

	ERR_INIT(err);
	agent_client_req_init(&rq, "signal");
	agent_client_req_int(&rq, "signal", signo);
	if (group)
		agent_client_req_true(&rq, "group");
	return stream_send(s, &rq, NULL, 0, err);
}

int agent_client_stream_resize(struct agent_client_stream *s, uint16_t rows, uint16_t cols,
			       struct agent_client_err *err)
{
	struct agent_client_req rq;

	ERR_INIT(err);
	agent_client_req_init(&rq, "resize");
	agent_client_req_int(&rq, "rows", rows);
	agent_client_req_int(&rq, "cols", cols);
	return stream_send(s, &rq, NULL, 0, err);
}

int agent_client_stream_fd(const struct agent_client_stream *s)
{
	return s->k.fd;
}

bool agent_client_stream_pending(const struct agent_client_stream *s)
{
	return s->k.len > 0 || s->k.eof;
}

void agent_client_stream_close(struct agent_client_stream *s)
{
	if (!s)
		return;
	agent_client_conn_close(&s->k);
	free(s);
}

int agent_client_wait(const struct agent_client *c, uint32_t id, uint32_t timeout_ms,
		      struct agent_client_exit *ex, struct agent_client_err *err)
{
	struct agent_client_conn k = agent_client_msg_ctx("wait");
	struct agent_client_req rq;
	int64_t dl, reply_dl = 0;
	json_t *h;
	int r;

	ERR_INIT(err);
	memset(ex, 0, sizeof(*ex));
	agent_client_req_init(&rq, "wait");
	agent_client_req_int(&rq, "id", id);
	if (timeout_ms)
		agent_client_req_int(&rq, "timeout_ms", timeout_ms);
	dl = mono_deadline_ms(c->timeout_ms);
	if (timeout_ms && c->timeout_ms > 0)
		reply_dl = mono_deadline_ms((int64_t)timeout_ms + c->timeout_ms);
	r = agent_client_call(c, &rq, NULL, 0, "exit", dl, reply_dl, &h, err);
	if (r < 0)
		return r;
	r = agent_client_parse_exit(&k, h, false, ex, err);
	json_decref(h);
	return r;
}

int agent_client_signal(const struct agent_client *c, uint32_t id, int signo, bool group,
			struct agent_client_err *err)
{
	struct agent_client_req rq;

	ERR_INIT(err);
	agent_client_req_init(&rq, "signal");
	agent_client_req_int(&rq, "id", id);
	agent_client_req_int(&rq, "signal", signo);
	if (group)
		agent_client_req_true(&rq, "group");
	return agent_client_call_ok(c, &rq, err);
}

int agent_client_stdin(const struct agent_client *c, uint32_t id, const void *data, size_t n,
		       bool close, struct agent_client_err *err)
{
	size_t off = 0;

	ERR_INIT(err);
	if (n == 0 && !close)
		return 0;
	do {
		size_t chunk = n - off < AGENT_LEN_MAX ? n - off : AGENT_LEN_MAX;
		int64_t dl = mono_deadline_ms(c->timeout_ms);
		struct agent_client_req rq;
		json_t *h;
		int r;

		agent_client_req_init(&rq, "stdin");
		agent_client_req_int(&rq, "id", id);
		if (close && off + chunk == n)
			agent_client_req_true(&rq, "close");
		r = agent_client_call(c, &rq, chunk ? (const uint8_t *)data + off : NULL, chunk,
				      "ok", dl, dl, &h, err);
		json_decref(h);
		if (r < 0)
			return r;
		off += chunk;
	} while (off < n);
	return 0;
}

int agent_client_resize(const struct agent_client *c, uint32_t id, uint16_t rows, uint16_t cols,
			struct agent_client_err *err)
{
	struct agent_client_req rq;

	ERR_INIT(err);
	agent_client_req_init(&rq, "resize");
	agent_client_req_int(&rq, "id", id);
	agent_client_req_int(&rq, "rows", rows);
	agent_client_req_int(&rq, "cols", cols);
	return agent_client_call_ok(c, &rq, err);
}

static int parse_process(struct agent_client_conn *k, json_t *h, struct agent_client_process *p,
			 struct agent_client_err *err)
{
	json_t *argv = json_object_get(h, "argv");
	int r;

	memset(p, 0, sizeof(*p));
	if ((r = agent_client_r_u32(k, h, "id", UINT32_MAX, &p->id, err)) ||
	    (r = agent_client_r_pid(k, h, &p->pid, err)) ||
	    (r = agent_client_r_bool(k, h, "pty", &p->pty, err)) ||
	    (r = agent_client_r_bool(k, h, "running", &p->running, err)) ||
	    (r = agent_client_r_status(k, h, &p->exit_code, &p->signal, err)) ||
	    (r = agent_client_r_bool(k, h, "timed_out", &p->timed_out, err)) ||
	    (r = agent_client_r_u64(k, h, "seq", &p->seq, err)) ||
	    (r = agent_client_r_u32(k, h, "attached", UINT32_MAX, &p->attached, err)))
		return r;
	if (!argv) {
		const char *a0;

		if ((r = agent_client_r_str(k, h, "argv0", &a0, err)) ||
		    (r = agent_client_r_bool(k, h, "argv_truncated", &p->argv_truncated, err)))
			return r;
		argv = json_object_get(h, "argv0");
		p->argc = 1;
	} else if (!json_is_array(argv)) {
		return AGENT_CLIENT_PROTO_FAIL(err,
					       "list_processes: the agent's 'argv' is not an array");
	} else {
		p->argc = json_array_size(argv);
		/* spawn takes at most AGENT_ARGV_MAX arguments; more is a lie that
		 * would cost the caller (kilnd renders every one) memory. */
		if (p->argc > AGENT_ARGV_MAX)
			return AGENT_CLIENT_PROTO_FAIL(
				err,
				"list_processes: the agent's 'argv' has %zu entries, more than %d",
				p->argc, AGENT_ARGV_MAX);
	}
	/* Bounded by the 64 KiB header: at most ~22k entries. */
	p->argv = calloc(p->argc + 1, sizeof(*p->argv));
	if (!p->argv)
		return agent_client_efail(err, AGENT_FAIL_LOCAL, AGENT_E_BUSY, ENOMEM,
					  "list_processes: out of memory");
	if (json_is_string(argv)) {
		p->argv[0] = json_string_value(argv);
		return 0;
	}
	for (size_t i = 0; i < p->argc; i++) {
		json_t *v = json_array_get(argv, i);

		if (!json_is_string(v)) {
			free(p->argv);
			p->argv = NULL;
			return AGENT_CLIENT_PROTO_FAIL(
				err, "list_processes: the agent's 'argv[%zu]' is not a string", i);
		}
		p->argv[i] = json_string_value(v);
	}
	return 0;
}

/*
 * A process line the listing may still take. The agent's table holds
 * AGENT_MAX_PROCS processes and a process line has no payload, so a reply
 * is at most AGENT_MAX_PROCS lines of AGENT_HEADER_MAX bytes: a guest that
 * sends more (1,000 entries took kilnd to 1.3 GiB) is refused.
 */
static int list_entry_check(uint64_t len, uint64_t seen, struct agent_client_err *err)
{
	if (len)
		return AGENT_CLIENT_PROTO_FAIL(
			err,
			"list_processes: a process line carries a %llu-byte payload; it has none",
			(unsigned long long)len);
	if (seen >= AGENT_MAX_PROCS)
		return AGENT_CLIENT_PROTO_FAIL(
			err,
			"list_processes: the agent sent more than %d processes, its table's size",
			AGENT_MAX_PROCS);
	return 0;
}

/* Ids are never reused, so one listed twice is a lie (and would make a
 * by-id lookup keep two answers). */
static int list_id_check(const uint32_t *ids, uint64_t seen, uint32_t id,
			 struct agent_client_err *err)
{
	for (uint64_t i = 0; i < seen; i++)
		if (ids[i] == id)
			return AGENT_CLIENT_PROTO_FAIL(err,
						       "list_processes: the agent sent process %u twice",
						       id);
	return 0;
}

int agent_client_list_processes(const struct agent_client *c,
				int (*fn)(void *arg, const struct agent_client_process *p),
				void *arg, uint64_t *count, struct agent_client_err *err)
{
	struct agent_client_req rq;
	struct agent_client_conn k;
	uint32_t ids[AGENT_MAX_PROCS];
	uint64_t seen = 0;
	int r;

	ERR_INIT(err);
	agent_client_req_init(&rq, "list_processes");
	r = agent_client_open_listing(c, &rq, &k, err);
	if (r < 0)
		return r;
	for (;;) {
		struct agent_client_process p;
		const char *type;
		uint64_t len, n;
		json_t *h;

		r = agent_client_next_reply(c, &k, &h, &len, &type, "the end of the list", err);
		if (r < 0)
			break;
		if (strcmp(type, "end") == 0) {
			r = agent_client_r_u64(&k, h, "count", &n, err);
			if (r == 0 && n != seen)
				r = AGENT_CLIENT_PROTO_FAIL(
					err,
					"list_processes: the agent counted %llu processes but sent %llu",
					(unsigned long long)n, (unsigned long long)seen);
			json_decref(h);
			break;
		}
		if (strcmp(type, "process") != 0) {
			r = agent_client_unexpected(&k, type, "process or end", err);
			json_decref(h);
			break;
		}
		r = list_entry_check(len, seen, err);
		if (r == 0)
			r = parse_process(&k, h, &p, err);
		if (r == 0 && (r = list_id_check(ids, seen, p.id, err)) < 0)
			free(p.argv);
		if (r == 0) {
			ids[seen] = p.id;
			seen++;
			r = fn(arg, &p);
			if (r < 0)
				agent_client_efail(err, AGENT_FAIL_LOCAL, AGENT_E_IO_ERROR, -r,
						   "list_processes: stopped by the caller: %s",
						   strerror(-r));
			free(p.argv);
		}
		json_decref(h);
		if (r < 0)
			break;
	}
	agent_client_conn_close(&k);
	if (count)
		*count = seen;
	return r;
}
