/* egress_intercept: see egress_intercept.h. */
#include "api/egress/egress_intercept.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "api/egress/egress_http.h"
#include "api/egress/egress_tls.h"
#include "lib/base/mono.h"

#define DOWN_BUF 16384

enum body {
	BODY_NONE, /* reading a head */
	BODY_LENGTH,
	BODY_CHUNKED,
};

struct session {
	struct egress_icpt *x;
	uint8_t req[EGRESS_FIRST_MAX]; /* guest bytes not yet forwarded */
	size_t rn;
	enum body body;
	uint64_t left; /* BODY_LENGTH */
	struct egress_chunked ch;
	unsigned forwarded; /* requests sent upstream */
	/* The request being forwarded, for its log line. */
	struct egress_flow f;
	struct egress_log rl;
	bool open;
	char reason[128];
};

static void consume(struct session *s, size_t n)
{
	memmove(s->req, s->req + n, s->rn - n);
	s->rn -= n;
}

static void log_request(struct session *s, const char *decision, const char *reason)
{
	s->rl.hdr = s->x->hdr;
	s->rl.name = s->x->name;
	s->rl.sni = s->x->name;
	s->rl.host = s->f.name;
	s->rl.method = s->f.method;
	s->rl.path = s->f.path;
	s->rl.decision = decision;
	s->rl.reason = reason;
	s->rl.rule = s->f.rule;
	egress_log_write(s->x->log, &s->rl);
	s->open = false;
}

/* Relay what the upstream still sends of earlier answers until it ends
 * or is quiet for EGRESS_DRAIN_MS, after telling it the guest is done. */
static void drain(struct session *s)
{
	struct egress_icpt *x = s->x;
	uint8_t buf[DOWN_BUF];

	SSL_shutdown(x->us);
	shutdown(x->up, SHUT_WR);
	for (;;) {
		struct pollfd p = { .fd = x->up, .events = POLLIN };
		ssize_t r;

		if (!egress_tls_pending(x->us) && poll(&p, 1, EGRESS_DRAIN_MS) <= 0)
			return;
		r = egress_tls_read(x->us, x->up, buf, sizeof(buf));
		if (r < 0)
			return;
		if (r > 0) {
			if (egress_tls_write(x->gs, x->guest, buf, (size_t)r,
					     mono_ms() + EGRESS_WRITE_MS) < 0)
				return;
			x->down_bytes += (uint64_t)r;
		}
	}
}

/* Answer the refusal in s->f to the guest. */
static void answer(struct session *s)
{
	char out[512];
	int n = egress_flow_deny_response(&s->f, out, sizeof(out));

	if (n > 0)
		egress_tls_write(s->x->gs, s->x->guest, out, (size_t)n,
				 mono_ms() + EGRESS_WRITE_MS);
}

/* Refuse the request in s->f (already logged or not): earlier answers
 * first, then the refusal. */
static const char *refuse(struct session *s, bool drain_first)
{
	if (s->open)
		log_request(s, "deny", s->f.reason);
	if (drain_first && s->forwarded)
		drain(s);
	answer(s);
	return "a request was refused";
}

static int to_upstream(struct session *s, const void *buf, size_t n)
{
	int r = egress_tls_write(s->x->us, s->x->up, buf, n, mono_ms() + EGRESS_WRITE_MS);

	if (r == 0) {
		s->x->up_bytes += n;
		s->rl.up += n;
	}
	return r;
}

/* The allowed head in s->req[0..f.head_len) with its rule's headers, to
 * the upstream. 0, or -errno: with a refusal's reason in s->f when the
 * request is to be answered (a secret not set), else the upstream failed. */
static int send_head(struct session *s)
{
	const struct http_rules *rules = s->x->conf->rules;
	const struct http_rule *u = s->f.rule < rules->n ? &rules->rules[s->f.rule] : NULL;
	struct egress_inject_field inj[HTTP_LIST_MAX];
	size_t ni = u ? u->n_inject : 0, cap;
	char *out;
	long n;
	int r;

	for (size_t i = 0; i < ni; i++) {
		const char *v = egress_conf_secret(s->x->conf, u->inject[i].secret);

		if (!v) {
			snprintf(s->reason, sizeof(s->reason), "secret %s is not set",
				 u->inject[i].secret);
			s->f.reason = s->reason;
			s->f.status_code = HTTP_DENY_STATUS;
			return -ENOENT;
		}
		inj[i] = (struct egress_inject_field){ .name = u->inject[i].header,
						       .format = u->inject[i].format,
						       .value = v };
		s->rl.injected[i] = u->inject[i].header;
	}
	s->rl.n_injected = ni;
	cap = egress_http_inject_size(s->f.head_len, inj, ni);
	out = malloc(cap);
	if (!out)
		return -ENOMEM;
	n = egress_http_inject((const char *)s->req, s->f.head_len, inj, ni, out, cap);
	r = n < 0 ? (int)n : to_upstream(s, out, (size_t)n);
	/* The head held the secrets' values. */
	explicit_bzero(out, cap);
	free(out);
	if (n < 0) {
		s->f.reason = "the request head could not be rewritten";
		s->f.status_code = 400;
	}
	return r;
}

/* Forward what of s->req the current body or the next heads allow.
 * NULL to go on, or why the flow ends. */
static const char *process(struct session *s)
{
	struct egress_icpt *x = s->x;

	while (s->rn) {
		if (s->body == BODY_NONE) {
			egress_flow_request(x->name, x->hdr->dport, s->req, s->rn, x->conf->rules,
					    &s->f);
			s->rl = (struct egress_log){ 0 };
			if (s->f.status == EGRESS_NEED_MORE)
				return NULL;
			s->open = true;
			if (s->f.status == EGRESS_DENY)
				return refuse(s, true);
			if (send_head(s) < 0)
				return s->f.reason && s->f.reason[0] ? refuse(s, true)
								     : "the upstream write failed";
			consume(s, s->f.head_len);
			s->forwarded++;
			if (s->f.chunked) {
				s->body = BODY_CHUNKED;
				egress_chunked_init(&s->ch);
			} else if (s->f.request_len > s->f.head_len) {
				s->body = BODY_LENGTH;
				s->left = s->f.request_len - s->f.head_len;
			} else {
				log_request(s, "allow", "");
			}
			continue;
		}
		if (s->body == BODY_LENGTH) {
			size_t take = s->rn < s->left ? s->rn : (size_t)s->left;

			if (to_upstream(s, s->req, take) < 0)
				return "the upstream write failed";
			consume(s, take);
			s->left -= take;
		} else {
			const char *why;
			size_t used;
			int r = egress_chunked_feed(&s->ch, s->req, s->rn, &used, &why);

			if (used && to_upstream(s, s->req, used) < 0)
				return "the upstream write failed";
			consume(s, used);
			if (r < 0) {
				/* Part of the body is upstream already: it
				 * cannot be finished, so no answer is awaited. */
				s->f.reason = why;
				s->f.status_code = 400;
				return refuse(s, false);
			}
			if (r == 0)
				continue;
			s->left = 0;
		}
		if (!s->left) {
			s->body = BODY_NONE;
			log_request(s, "allow", "");
		}
	}
	return NULL;
}

const char *egress_icpt_run(struct egress_icpt *x)
{
	struct session *s = calloc(1, sizeof(*s));
	uint8_t *down = malloc(DOWN_BUF);
	bool guest_done = false;
	const char *why = NULL;

	if (!s || !down) {
		why = "out of memory";
		goto out;
	}
	s->x = x;
	while (!why) {
		bool gp = !guest_done && egress_tls_pending(x->gs), up = egress_tls_pending(x->us);
		struct pollfd p[2] = { { .fd = guest_done ? -1 : x->guest, .events = POLLIN },
				       { .fd = x->up, .events = POLLIN } };
		ssize_t r;

		if (!gp && !up) {
			int rc = poll(p, 2, guest_done ? EGRESS_DRAIN_MS : EGRESS_IDLE_MS);

			if (rc < 0 && errno == EINTR)
				continue;
			if (rc <= 0) {
				why = rc == 0 ? "idle" : "poll failed";
				break;
			}
		}
		if (gp || p[0].revents) {
			r = egress_tls_read(x->gs, x->guest, s->req + s->rn,
					    sizeof(s->req) - s->rn);
			if (r < 0) {
				/* The guest is done sending: its last answers
				 * still come back, and the upstream is told, so
				 * it closes once they are sent. */
				guest_done = true;
				if (s->body != BODY_NONE || s->rn)
					why = "the guest closed within a request";
				SSL_shutdown(x->us);
				shutdown(x->up, SHUT_WR);
			} else {
				s->rn += (size_t)r;
				why = process(s);
			}
		}
		if (!why && (up || p[1].revents)) {
			r = egress_tls_read(x->us, x->up, down, DOWN_BUF);
			if (r < 0)
				why = "the upstream closed";
			else if (r > 0 &&
				 egress_tls_write(x->gs, x->guest, down, (size_t)r,
						  mono_ms() + EGRESS_WRITE_MS) < 0)
				why = "the guest stopped reading";
			else
				x->down_bytes += (uint64_t)r;
		}
	}
	if (s->open)
		log_request(s, "allow", why);
out:
	free(s);
	free(down);
	return why;
}

void egress_icpt_refuse(SSL *gs, int guest, const struct egress_flow *f)
{
	int64_t deadline = mono_ms() + 10000;
	char buf[4096], out[512];
	size_t n = 0;
	int len;

	while (n < sizeof(buf) - 1 && mono_ms() < deadline) {
		struct pollfd p = { .fd = guest, .events = POLLIN };
		ssize_t r;

		if (!egress_tls_pending(gs) && poll(&p, 1, (int)(deadline - mono_ms())) <= 0)
			break;
		r = egress_tls_read(gs, guest, buf + n, sizeof(buf) - 1 - n);
		if (r < 0)
			break;
		n += (size_t)r;
		buf[n] = '\0';
		if (strstr(buf, "\r\n\r\n"))
			break;
	}
	len = egress_flow_deny_response(f, out, sizeof(out));
	if (len > 0)
		egress_tls_write(gs, guest, out, (size_t)len, mono_ms() + EGRESS_WRITE_MS);
}
