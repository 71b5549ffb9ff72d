/*
 * GET /v1/sandboxes/{id}/egress/decisions (docs/api.md, "The egress
 * decision stream"): an HTTP/1.1 upgrade to NDJSON both ways between one
 * client and the sandbox's kiln-egress, whose questions the client
 * answers (lib/netrules/egress_decision.h has the lines).
 *
 * kilnd sits between them and trusts neither: each question from the
 * proxy (assumed compromised, like the VMM) is checked and written anew
 * (egress_decision_question_clean), each answer from the client too
 * (egress_answer_parse: a bad one gets an "error" line and is not
 * forwarded; the question waits on for a good one until its deadline).
 * The session runs in the connection's own thread (as the tty stream's)
 * holding a reference to the sandbox, which keeps it from hibernating
 * for idleness. It ends with an "end" line when the proxy ends (it was
 * stopped, restarted, or its sandbox stopped) or kilnd stops; when the
 * client goes, the proxy is told (detach) and the rules decide alone.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api/kilnd/endpoints/handlers.h"
#include "api/kilnd/http/http_head.h"
#include "api/kilnd/registry/sandbox.h"
#include "api/kilnd/registry/sandbox_impl.h"
#include "api/kilnd/supervision/egress_proxy_run.h"
#include "lib/base/fd_io.h"
#include "lib/base/json.h"
#include "lib/base/json_text.h"
#include "lib/netrules/egress_decision.h"

#define DECISIONS_PROTOCOL "kiln-decisions"
/* Longest wait in any poll: the loop looks at kilnd shutting down. */
#define DECISIONS_POLL_MS 1000
/* Lines from the proxy dropped and logged, at most this many per session. */
#define DECISIONS_LOG_MAX 8

/* Bytes of one peer up to its next newline. */
struct line_in {
	char *buf;
	size_t n;
	bool skipping; /* the rest of a line over EGRESS_DECISION_LINE_MAX */
};

struct decisions {
	struct kilnd *d;
	struct sandbox *sb;
	char id[SANDBOX_ID_LEN + 1];
	struct egress_attach at;
	int proxy; /* kilnd's end of the proxy's stream (a copy) */
	struct line_in from_client, from_proxy;
	unsigned dropped;
};

/* Free s (and let go of what it holds: the stream, the sandbox). */
static void decisions_free(struct decisions *s)
{
	if (s->proxy >= 0) {
		close(s->proxy);
		egress_run_policy_detach(s->d, s->id);
	}
	if (s->sb)
		sandbox_put(s->sb);
	free(s->from_client.buf);
	free(s->from_proxy.buf);
	free(s);
}

static void decisions_release(void *cls)
{
	decisions_free(cls);
}

/* fd_io's waiter: a poll tick, and give up when kilnd stops. */
static int peer_wait(void *arg, int fd, short events)
{
	struct decisions *s = arg;
	struct pollfd p = { .fd = fd, .events = events };

	if (atomic_load(&s->d->shutting_down))
		return -ESHUTDOWN;
	poll(&p, 1, DECISIONS_POLL_MS);
	return 0;
}

/* j as one line to fd; false when that peer is gone. */
static bool send_line(struct decisions *s, int fd, json_t *j)
{
	char *text = j ? json_text(j, JSON_COMPACT) : NULL;
	bool ok = false;

	if (text) {
		size_t n = strlen(text);

		text[n] = '\n';
		ok = fd_io_put_all(fd, text, n + 1, FD_IO_SEND,
				   &(struct fd_io_waiter){ peer_wait, s }) == 0;
	}
	free(text);
	json_decref(j);
	return ok;
}

/* A question from the proxy, checked, to the client. */
static bool from_proxy(struct decisions *s, int sock, const char *line, size_t n)
{
	struct err e = { { 0 } };
	json_error_t je;
	json_t *in = json_strict_loadb(line, n, &je), *out = NULL;
	int r = in ? egress_decision_question_clean(in, &out, &e) : -EINVAL;

	json_decref(in);
	if (r < 0) {
		if (s->dropped++ < DECISIONS_LOG_MAX)
			kilnd_log("sandbox %s: egress decision stream: a line from kiln-egress dropped: %s",
				  s->id, in ? e.msg : je.text);
		return true;
	}
	return send_line(s, sock, out);
}

/* An answer from the client, checked, to the proxy; a bad one gets an error line. */
static bool from_client(struct decisions *s, int sock, const char *line, size_t n)
{
	struct egress_answer *a = malloc(sizeof(*a));
	struct err e = { { 0 } };
	json_error_t je;
	json_t *in = json_strict_loadb(line, n, &je), *id = json_object_get(in, "id");
	bool ok;

	if (!a || !in || egress_answer_parse(in, a, &e)) {
		ok = send_line(s, sock,
			       json_pack("{s:s,s:O,s:s}", "kind", "error", "id",
					 json_is_integer(id) ? id : json_null(), "message",
					 !a            ? "out of memory"
						 : !in ? je.text
						       : e.msg));
		free(a);
		json_decref(in);
		return ok;
	}
	json_decref(in);
	/* The proxy gone: the end comes from its side of the loop. */
	send_line(s, s->proxy, egress_answer_json(a));
	free(a);
	return true;
}

/* Each whole line li holds to take(), the rest kept: 0, or -1 when take
 * said stop (a line over EGRESS_DECISION_LINE_MAX is dropped; from the
 * client, with an error line). */
static int take_lines(struct decisions *s, int sock, struct line_in *li, bool client,
		      bool (*take)(struct decisions *, int, const char *, size_t))
{
	char *nl;

	while ((nl = memchr(li->buf, '\n', li->n))) {
		size_t len = (size_t)(nl - li->buf);

		if (!li->skipping && len && !take(s, sock, li->buf, len))
			return -1;
		li->skipping = false;
		memmove(li->buf, nl + 1, li->n - len - 1);
		li->n -= len + 1;
	}
	if (li->n < EGRESS_DECISION_LINE_MAX)
		return 0;
	li->skipping = true;
	li->n = 0;
	if (client &&
	    !send_line(s, sock,
		       json_pack("{s:s,s:n,s:s}", "kind", "error", "id", "message",
				 "a line over 131072 bytes: dropped")))
		return -1;
	return 0;
}

/* Read what fd has into li and take its lines. -1: fd ended or failed
 * (or take said stop), 0: go on. */
static int pump(struct decisions *s, int fd, int sock, struct line_in *li,
		bool (*take)(struct decisions *, int, const char *, size_t))
{
	ssize_t r = recv(fd, li->buf + li->n, EGRESS_DECISION_LINE_MAX - li->n, MSG_DONTWAIT);

	if (r < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	if (r == 0)
		return -1;
	li->n += (size_t)r;
	return take_lines(s, sock, li, fd == sock, take);
}

/* Why the proxy's end closed, for the "end" line. */
static const char *end_reason(struct decisions *s)
{
	enum sandbox_state st;

	if (atomic_load(&s->d->shutting_down))
		return "kilnd_shutdown";
	/* Its entry stays while it is to run: it is being started again. */
	if (egress_run_has(s->d, s->id))
		return "egress_proxy_restarted";
	kilnd_lock(s->d);
	st = s->sb->rec.state;
	kilnd_unlock(s->d);
	return st == SANDBOX_RUNNING ? "egress_proxy_stopped" : "sandbox_stopped";
}

static void decisions_run(void *cls, const char *extra, size_t extra_n, int sock)
{
	struct decisions *s = cls;
	const char *why = NULL;

	if (!send_line(s, sock,
		       json_pack("{s:s,s:I,s:s}", "kind", "attached", "deadline_ms",
				 (json_int_t)s->at.deadline_ms, "on_timeout",
				 s->at.on_timeout_rules ? "rules" : "deny")) ||
	    !send_line(s, s->proxy, egress_attach_json(&s->at)))
		goto out;
	/* Bytes the client sent right behind its request. */
	if (extra_n > EGRESS_DECISION_LINE_MAX)
		extra_n = EGRESS_DECISION_LINE_MAX;
	memcpy(s->from_client.buf, extra, extra_n);
	s->from_client.n = extra_n;
	if (take_lines(s, sock, &s->from_client, true, from_client) < 0)
		goto out;
	while (!atomic_load(&s->d->shutting_down)) {
		struct pollfd p[2] = { { .fd = sock, .events = POLLIN },
				       { .fd = s->proxy, .events = POLLIN } };

		if (poll(p, 2, DECISIONS_POLL_MS) < 0 && errno != EINTR)
			break;
		if (p[1].revents && pump(s, s->proxy, sock, &s->from_proxy, from_proxy) < 0) {
			why = end_reason(s);
			break;
		}
		if (p[0].revents && pump(s, sock, sock, &s->from_client, from_client) < 0)
			goto out; /* the client went */
	}
	if (!why)
		why = "kilnd_shutdown";
	send_line(s, sock, json_pack("{s:s,s:s}", "kind", "end", "reason", why));
out:
	/* The proxy stops asking (if it still runs). */
	send_line(s, s->proxy, json_pack("{s:b}", "detach", 1));
	shutdown(sock, SHUT_RDWR);
}

/* 0 with s->proxy, or -1 with e. */
static int attach(struct decisions *s, struct api_err *e)
{
	enum sandbox_state st;
	int r = egress_run_policy_attach(s->d, s->id, &s->proxy);

	if (r == -EBUSY) {
		api_err_set(e, API_E_BUSY,
			    "sandbox %s: another client holds its egress decision stream (one at a "
			    "time): close that one first",
			    s->id);
		return -1;
	}
	if (r == 0)
		return 0;
	if (r == -EAGAIN) {
		api_err_set(e, API_E_BUSY,
			    "sandbox %s: its egress proxy ended and is being started again: retry in a "
			    "few seconds",
			    s->id);
		return -1;
	}
	kilnd_lock(s->d);
	st = s->sb->rec.state;
	kilnd_unlock(s->d);
	if (st != SANDBOX_RUNNING)
		api_err_set(e, API_E_WRONG_STATE,
			    "sandbox %s is %s: the egress decision stream needs it running", s->id,
			    sandbox_state_name(st));
	else if (r == -ENOENT)
		api_err_set(e, API_E_NO_EGRESS_PROXY,
			    "sandbox %s runs no egress proxy: its firewall has no \"http\" rules, so "
			    "no flow would be asked about (add one with PUT "
			    "/v1/sandboxes/%s/firewall)",
			    s->id, s->id);
	else
		api_err_set(e, API_E_INTERNAL, "sandbox %s: egress decision stream: %s", s->id,
			    strerror(-r));
	return -1;
}

void handle_egress_decisions(struct http_req *r)
{
	static const char *const known[] = { "deadline_ms", "on_timeout", NULL };
	struct decisions *s;
	struct err pe = { { 0 } };
	struct egress_attach at;
	struct api_err e;
	const char *dl = NULL, *ot = NULL;

	if (query_check_keys(r->kv, r->nkv, known, NULL, "egress decisions", &e)) {
		http_error(r, &e);
		return;
	}
	for (size_t i = 0; i < r->nkv; i++)
		if (!strcmp(r->kv[i].key, "deadline_ms"))
			dl = r->kv[i].value;
		else
			ot = r->kv[i].value;
	if (egress_attach_parse_query(dl, ot, &at, &pe)) {
		api_err_set(&e, API_E_BAD_FIELD, "egress decisions: %s", pe.msg);
		http_error(r, &e);
		return;
	}
	if (!http_has_token(http_header(r, "Connection"), "upgrade") ||
	    !http_has_token(http_header(r, "Upgrade"), DECISIONS_PROTOCOL)) {
		api_err_set(&e, API_E_BAD_FIELD,
			    "egress decisions: this endpoint switches protocols; send 'Connection: "
			    "Upgrade' and 'Upgrade: " DECISIONS_PROTOCOL
			    "' (docs/api.md, \"The egress decision stream\")");
		http_error(r, &e);
		return;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		api_err_set(&e, API_E_INTERNAL, "egress decisions: out of memory");
		http_error(r, &e);
		return;
	}
	*s = (struct decisions){ .d = r->d, .at = at, .proxy = -1 };
	s->from_client.buf = malloc(EGRESS_DECISION_LINE_MAX);
	s->from_proxy.buf = malloc(EGRESS_DECISION_LINE_MAX);
	if (!s->from_client.buf || !s->from_proxy.buf) {
		api_err_set(&e, API_E_INTERNAL, "egress decisions: out of memory");
		goto fail;
	}
	s->sb = sandbox_get(r->d, &r->peer, r->rm.id, &e);
	if (!s->sb)
		goto fail;
	snprintf(s->id, sizeof(s->id), "%s", s->sb->rec.id);
	if (attach(s, &e))
		goto fail;
	http_upgrade(r, DECISIONS_PROTOCOL, decisions_run, s, decisions_release);
	return;
fail:
	decisions_free(s);
	http_error(r, &e);
}
