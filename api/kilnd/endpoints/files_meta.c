/*
 * File metadata endpoints (docs/api.md): GET .../files/stat and
 * .../files/list, POST .../files/mkdir, .../files/remove, .../files/rename,
 * each one agent request (docs/agent-protocol.md, 7.5) through libkiln
 * (kiln/agent.h, a kiln_agent per request) whose error codes pass
 * through with their statuses (api_error.c).
 *
 * A listing may hold up to a million entries, so it is streamed like a
 * file download: a producer thread renders each entry into a byte_queue
 * that the response reads, and the status is decided by the first byte or
 * the end (a missing directory is a 404, not an empty 200).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/core/agent_error.h"
#include "api/kilnd/http/byte_queue.h"
#include "api/kilnd/bodies/files_spec.h"
#include "api/kilnd/endpoints/handlers.h"
#include "api/kilnd/registry/sandbox.h"
#include "api/kilnd/http/stream_job.h"
#include "lib/base/json_text.h"

#define LIST_QUEUE_BYTES (256u << 10)

/* The sandbox with a new client of its agent in *a (this request's own:
 * kiln_agent_free it), or an answered error (NULL). */
static struct sandbox *agent_of(struct http_req *r, kiln_agent **a)
{
	struct api_err e;
	struct sandbox *sb;

	if (http_guest_target(r, &sb, a, &e) == 0)
		return sb;
	http_error(r, &e);
	return NULL;
}

static void agent_error(struct http_req *r, const kiln_agent *a, const char *op, const char *path)
{
	char what[64 + AGENT_PATH_MAX];
	struct api_err e;

	snprintf(what, sizeof(what), "%s '%s'", op, path);
	api_err_from_agent(&e, a, what);
	http_error(r, &e);
}

/* Done with a request's agent and sandbox. */
static void agent_done(struct sandbox *sb, kiln_agent *a)
{
	kiln_agent_free(a);
	sandbox_put(sb);
}

void handle_file_stat(struct http_req *r)
{
	struct kiln_file_info st = { .size = sizeof(st) };
	enum agent_user user;
	kiln_agent *a;
	struct sandbox *sb;
	const char *path;
	struct api_err e;
	bool follow;
	json_t *o;

	if (query_file_stat(r->kv, r->nkv, &path, &follow, &user, &e)) {
		http_error(r, &e);
		return;
	}
	if (!(sb = agent_of(r, &a)))
		return;
	if (kiln_agent_stat(a, path, query_user_flags(user) | (follow ? 0 : KILN_AGENT_NOFOLLOW),
			    &st) < 0) {
		agent_error(r, a, "stat", path);
	} else if (!(o = file_stat_json(&st, false))) {
		api_err_set(&e, API_E_INTERNAL, "stat: out of memory rendering the answer");
		http_error(r, &e);
	} else {
		http_json(r, 200, o);
	}
	kiln_free((void *)st.path);
	kiln_free((void *)st.target);
	agent_done(sb, a);
}

/* ---- list ---- */

struct list_job {
	struct stream_job sj; /* first: the job is freed through it */
	struct sandbox *sb;
	kiln_agent *a;
	char path[AGENT_PATH_MAX + 1];
	struct file_list_opts o;
	bool opened; /* the object's head is queued */
};

static void list_release(struct stream_job *sj)
{
	struct list_job *j = (struct list_job *)sj;

	agent_done(j->sb, j->a);
	free(j);
}

/* Queue a JSON value's text (NULL: out of memory) followed by tail. */
static int push_json(struct list_job *j, json_t *v, const char *tail)
{
	char *s = v ? json_text(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	int r;

	json_decref(v);
	if (!s)
		return -ENOMEM;
	r = byte_queue_push(&j->sj.q, s, strlen(s));
	free(s);
	return r ? r : byte_queue_push(&j->sj.q, tail, strlen(tail));
}

/* {"path":...,"entries":[ before the first entry (or the end). */
static int open_listing(struct list_job *j)
{
	static const char head[] = "{\"path\":";
	int r;

	if (j->opened)
		return 0;
	j->opened = true;
	r = byte_queue_push(&j->sj.q, head, sizeof(head) - 1);
	return r ? r : push_json(j, json_string(j->path), ",\"entries\":[");
}

static int list_entry(void *arg, const struct kiln_file_info *st)
{
	struct list_job *j = arg;
	bool first = !j->opened;
	int r = open_listing(j);

	if (!r && !first)
		r = byte_queue_push(&j->sj.q, ",", 1);
	return r ? r : push_json(j, file_stat_json(st, true), "");
}

/* A failure halfway ends the stream without its last chunk, so the client
 * sees a broken transfer rather than JSON that stops (docs/api.md). */
static void list_produce(struct stream_job *sj)
{
	struct list_job *j = (struct list_job *)sj;
	struct kiln_list_end end = { .size = sizeof(end) };
	char tail[160];
	int r = kiln_agent_list(j->a, j->path, j->o.flags, j->o.depth, j->o.limit, list_entry, j,
				&end);

	if (r == 0) {
		snprintf(tail, sizeof(tail),
			 "],\"count\":%llu,\"truncated\":%s,\"skipped\":%llu}\n",
			 (unsigned long long)end.count, end.truncated ? "true" : "false",
			 (unsigned long long)end.skipped);
		r = open_listing(j);
		if (!r)
			r = byte_queue_push(&sj->q, tail, strlen(tail));
	} else if (r != -ECANCELED) {
		char what[64 + AGENT_PATH_MAX];

		snprintf(what, sizeof(what), "list '%s'", j->path);
		api_err_from_agent(&sj->err, j->a, what);
	}
	stream_job_close(sj, r);
}

void handle_file_list(struct http_req *r)
{
	struct list_job *j = calloc(1, sizeof(*j));
	const char *path;
	struct api_err e;

	if (!j || stream_job_init(&j->sj, LIST_QUEUE_BYTES, list_produce, list_release)) {
		free(j);
		api_err_set(&e, API_E_INTERNAL, "list: out of memory");
		http_error(r, &e);
		return;
	}
	if (query_file_list(r->kv, r->nkv, &path, &j->o, &e)) {
		byte_queue_destroy(&j->sj.q);
		free(j);
		http_error(r, &e);
		return;
	}
	if (!(j->sb = agent_of(r, &j->a))) {
		byte_queue_destroy(&j->sj.q);
		free(j);
		return;
	}
	snprintf(j->path, sizeof(j->path), "%s", path);
	stream_job_respond(r, &j->sj, "application/json", false, "list");
}

/* ---- mkdir, remove, rename ---- */

void handle_file_mkdir(struct http_req *r)
{
	kiln_agent *a;
	struct mkdir_spec s;
	struct sandbox *sb;
	struct api_err e;
	json_t *body = NULL;

	if (query_none(r->kv, r->nkv, "mkdir", &e) || http_body_json(r, false, &body, &e) ||
	    mkdir_spec_parse(body, &s, &e)) {
		http_error(r, &e);
		json_decref(body);
		return;
	}
	if ((sb = agent_of(r, &a))) {
		if (kiln_agent_mkdir(a, s.path,
				     query_user_flags(s.user) |
					     (s.parents ? KILN_AGENT_PARENTS : 0),
				     s.mode) < 0)
			agent_error(r, a, "mkdir", s.path);
		else
			http_json(r, 200, json_pack("{s:s}", "path", s.path));
		agent_done(sb, a);
	}
	json_decref(body);
}

void handle_file_remove(struct http_req *r)
{
	kiln_agent *a;
	struct remove_spec s;
	struct sandbox *sb;
	struct api_err e;
	json_t *body = NULL;

	if (query_none(r->kv, r->nkv, "remove", &e) || http_body_json(r, false, &body, &e) ||
	    remove_spec_parse(body, &s, &e)) {
		http_error(r, &e);
		json_decref(body);
		return;
	}
	if ((sb = agent_of(r, &a))) {
		if (kiln_agent_remove(a, s.path,
				      query_user_flags(s.user) |
					      (s.recursive ? KILN_AGENT_RECURSIVE : 0)) < 0)
			agent_error(r, a, "remove", s.path);
		else
			http_no_content(r);
		agent_done(sb, a);
	}
	json_decref(body);
}

void handle_file_rename(struct http_req *r)
{
	kiln_agent *a;
	struct rename_spec s;
	struct sandbox *sb;
	struct api_err e;
	json_t *body = NULL;

	if (query_none(r->kv, r->nkv, "rename", &e) || http_body_json(r, false, &body, &e) ||
	    rename_spec_parse(body, &s, &e)) {
		http_error(r, &e);
		json_decref(body);
		return;
	}
	if ((sb = agent_of(r, &a))) {
		if (kiln_agent_rename(a, s.from, s.to,
				      query_user_flags(s.user) |
					      (s.overwrite ? KILN_AGENT_OVERWRITE : 0)) < 0)
			agent_error(r, a, "rename", s.from);
		else
			http_json(r, 200, json_pack("{s:s,s:s}", "from", s.from, "to", s.to));
		agent_done(sb, a);
	}
	json_decref(body);
}
