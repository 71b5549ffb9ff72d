/* egress_intercept: see egress_intercept.h. */
#include "api/egress/egress_intercept.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <openssl/err.h>

#include "api/egress/egress_ask.h"
#include "api/egress/egress_http.h"
#include "api/egress/egress_tls.h"
#include "lib/base/mono.h"

#define DOWN_BUF 16384

/* Bytes waiting for a peer to take them. Filled only when empty (a
 * TLS write that must be retried sees the same bytes), and wiped when
 * emptied: the upstream's may hold a secret. */
struct obuf {
	uint8_t *b;
	size_t off, len, cap;
	bool want_read; /* the last write wants the socket readable */
};

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
	struct egress_asked asked;                 /* the request's answer */
	char why[EGRESS_DECISION_REASON_MAX + 64]; /* a callback's refusal */
	struct obuf up_out; /* to the upstream: heads (injected) and bodies */
	struct obuf down;   /* to the guest: the upstream's bytes */
};

static bool pending(const struct obuf *o)
{
	return o->off < o->len;
}

/* Append (only to an empty buffer or within one process() call). */
static int obuf_put(struct obuf *o, const void *p, size_t n)
{
	if (o->len + n > o->cap) {
		size_t cap = o->len + n > 2 * o->cap ? o->len + n : 2 * o->cap;
		uint8_t *b = malloc(cap);

		if (!b)
			return -ENOMEM;
		if (o->b) {
			memcpy(b, o->b, o->len);
			explicit_bzero(o->b, o->cap);
		}
		free(o->b);
		o->b = b;
		o->cap = cap;
	}
	memcpy(o->b + o->len, p, n);
	o->len += n;
	return 0;
}

static void obuf_empty(struct obuf *o)
{
	if (o->b)
		explicit_bzero(o->b, o->len);
	o->off = o->len = 0;
	o->want_read = false;
}

static void obuf_free(struct obuf *o)
{
	if (o->b)
		explicit_bzero(o->b, o->cap);
	free(o->b);
}

/* Write what s takes now: 0 (some, all or none of it), or -EPIPE. */
static int obuf_flush(struct obuf *o, SSL *s)
{
	size_t done = 0;
	int r;

	ERR_clear_error();
	errno = 0;
	r = SSL_write_ex(s, o->b + o->off, o->len - o->off, &done);
	if (r == 1) {
		o->off += done;
		o->want_read = false;
		if (o->off == o->len)
			obuf_empty(o);
		return 0;
	}
	switch (SSL_get_error(s, r)) {
	case SSL_ERROR_WANT_READ:
		o->want_read = true;
		return 0;
	case SSL_ERROR_WANT_WRITE:
		o->want_read = false;
		return 0;
	default:
		ERR_clear_error();
		return -EPIPE;
	}
}

/* All of o to s before EGRESS_WRITE_MS (the way out of a flow). */
static int obuf_flush_all(struct obuf *o, SSL *s, int fd)
{
	int r = 0;

	if (pending(o))
		r = egress_tls_write(s, fd, o->b + o->off, o->len - o->off,
				     mono_ms() + EGRESS_WRITE_MS);
	obuf_empty(o);
	return r;
}

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

	if (obuf_flush_all(&s->up_out, x->us, x->up) < 0 ||
	    obuf_flush_all(&s->down, x->gs, x->guest) < 0)
		return;
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
	else
		obuf_flush_all(&s->down, s->x->gs, s->x->guest);
	answer(s);
	return "a request was refused";
}

/* Bytes for the upstream, sent by the loop (in order, after those before). */
static int to_upstream(struct session *s, const void *buf, size_t n)
{
	int r = obuf_put(&s->up_out, buf, n);

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
	struct egress_inject_field inj[HTTP_LIST_MAX + 2 * EGRESS_DECISION_FIELDS];
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
	if (s->asked.a)
		ni += egress_question_changes(s->asked.a, u, inj + ni);
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

/* The request in s->f, asked about while a client holds the decision
 * stream: the answer applied to s->f, kept in s->asked for send_head. */
static void ask(struct session *s)
{
	struct egress_icpt *x = s->x;
	const struct http_rules *rules = x->conf->rules;
	const struct http_rule *u;
	uint64_t id;

	egress_asked_free(&s->asked);
	if (!s->f.ruled || !egress_ask_attached(x->ask))
		return;
	u = rules && s->f.rule < rules->n ? &rules->rules[s->f.rule] : NULL;
	id = egress_ask_id(x->ask);
	egress_ask(x->ask,
		   egress_question_request(id, x->flow_id, x->hdr, x->name, &s->f,
					   (const char *)s->req, u),
		   id, &s->asked);
	s->rl.policy = egress_question_apply(&s->f, &s->asked, s->why, sizeof(s->why));
}

/* Forward what of s->req the current body or the next heads allow.
 * NULL to go on, or why the flow ends. */
static const char *process(struct session *s)
{
	struct egress_icpt *x = s->x;
	int r;

	while (s->rn) {
		if (s->body == BODY_NONE) {
			/* Between requests: the secrets and rules of now. */
			if (x->conf_now)
				x->conf = x->conf_now(x->conf_arg);
			egress_flow_request(x->name, x->hdr->dport, s->req, s->rn, x->conf->rules,
					    &s->f);
			s->rl = (struct egress_log){ 0 };
			if (s->f.status == EGRESS_NEED_MORE)
				return NULL;
			s->open = true;
			ask(s);
			if (s->f.status == EGRESS_DENY)
				return refuse(s, true);
			r = send_head(s);
			egress_asked_free(&s->asked);
			if (r < 0)
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

/* The guest's bytes, when the upstream has taken the last: 0, or the end. */
static const char *from_guest(struct session *s, bool *guest_done)
{
	struct egress_icpt *x = s->x;
	ssize_t r = egress_tls_read(x->gs, x->guest, s->req + s->rn, sizeof(s->req) - s->rn);

	if (r > 0) {
		s->rn += (size_t)r;
		return process(s);
	}
	if (r == 0)
		return NULL;
	/* The guest is done sending: its last answers still come back, and
	 * the upstream is told (below, once it has all), so it closes once
	 * they are sent. */
	*guest_done = true;
	return s->body != BODY_NONE || s->rn ? "the guest closed within a request" : NULL;
}

/* The upstream's bytes into s->down (empty): 0, or -1 at its end. */
static int from_upstream(struct session *s)
{
	struct egress_icpt *x = s->x;
	ssize_t r;

	if (!s->down.b && !(s->down.b = malloc(DOWN_BUF)))
		return -1;
	s->down.cap = DOWN_BUF;
	r = egress_tls_read(x->us, x->up, s->down.b, DOWN_BUF);
	if (r < 0)
		return -1;
	s->down.len = (size_t)r;
	x->down_bytes += (uint64_t)r;
	return 0;
}

/* Each direction on its own: the guest is read only when the upstream
 * has taken all it was sent, the upstream only when the guest has taken
 * all it was sent, and each write goes as far as its peer takes it, so
 * an upstream that answers before it has read a body, or a guest that
 * sends while it is being answered, never stalls the other way. */
const char *egress_icpt_run(struct egress_icpt *x)
{
	struct session *s = calloc(1, sizeof(*s));
	bool guest_done = false, up_done = false, up_told = false;
	const char *why = NULL;

	if (!s)
		return "out of memory";
	s->x = x;
	while (!why) {
		bool read_g = !guest_done && !pending(&s->up_out) && s->rn < sizeof(s->req);
		bool read_u = !up_done && !pending(&s->down);
		bool gp = read_g && egress_tls_pending(x->gs);
		bool upp = read_u && egress_tls_pending(x->us);
		struct pollfd p[2] = { { .fd = x->guest }, { .fd = x->up } };

		if (read_g)
			p[0].events |= POLLIN;
		if (pending(&s->down))
			p[0].events |= s->down.want_read ? POLLIN : POLLOUT;
		if (read_u)
			p[1].events |= POLLIN;
		if (pending(&s->up_out))
			p[1].events |= s->up_out.want_read ? POLLIN : POLLOUT;
		if (!p[0].events && !p[1].events) {
			why = up_done ? "the upstream closed" : "the guest closed";
			break;
		}
		/* A socket waited on for nothing is left out: its hang-up
		 * would wake the loop at once, again and again. */
		if (!p[0].events)
			p[0].fd = -1;
		if (!p[1].events)
			p[1].fd = -1;
		if (!gp && !upp) {
			int rc = poll(p, 2, guest_done ? EGRESS_DRAIN_MS : EGRESS_IDLE_MS);

			if (rc < 0 && errno == EINTR)
				continue;
			if (rc <= 0) {
				why = rc == 0 ? "idle" : "poll failed";
				break;
			}
		}
		/* Every direction that can move does, each iteration: none
		 * waits behind another (nor spins while another is ready). */
		if (pending(&s->down) && obuf_flush(&s->down, x->gs) < 0)
			why = "the guest stopped reading";
		if (!why && pending(&s->up_out) && obuf_flush(&s->up_out, x->us) < 0)
			why = "the upstream write failed";
		if (!why && read_g && (gp || (p[0].revents & (POLLIN | POLLHUP | POLLERR))))
			why = from_guest(s, &guest_done);
		if (!why && read_u && (upp || (p[1].revents & (POLLIN | POLLHUP | POLLERR))) &&
		    from_upstream(s) < 0)
			up_done = true;
		if (!why && guest_done && !up_told && !pending(&s->up_out)) {
			SSL_shutdown(x->us);
			shutdown(x->up, SHUT_WR);
			up_told = true;
		}
		if (!why && up_done && !pending(&s->down))
			why = "the upstream closed";
	}
	if (s->open)
		log_request(s, "allow", why);
	obuf_free(&s->up_out);
	obuf_free(&s->down);
	egress_asked_free(&s->asked);
	free(s);
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
