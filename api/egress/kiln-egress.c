/*
 * kiln-egress: the HTTP(S) egress proxy of issue 37. kiln-vmm opens one
 * Unix stream connection per steered guest flow, starting with a PROXY v2
 * header; this program reads it and the flow's first bytes, decides
 * (egress_flow), resolves the name with the host's resolver, checks the
 * header's destination against the answers (egress_dest), connects there
 * and relays both ways; or, when the deciding rule intercepts, injects or
 * limits methods or paths of a TLS flow, terminates the guest's TLS with
 * a leaf of the sandbox's CA, verifies the upstream's, and reads, decides
 * and forwards each request (egress_tls, egress_intercept).
 *
 *   kiln-egress (--socket PATH | --listen-fd N) --rules FILE [--ca DIR]
 *               [--secrets FILE] [--upstream-ca FILE] [--policy-fd N]
 *               [--allow-private CIDR]...
 *   kiln-egress --init-ca DIR
 *
 * One thread per connection, at most EGRESS_CONNS at once; the header and
 * first bytes must arrive within 10 s, the upstream connect too; a flow,
 * spliced or decrypted, with no byte either way for EGRESS_IDLE_MS ends. A denied
 * plain HTTP request (or decrypted one) gets a 403 (or the rule's status)
 * with a JSON body naming the reason and the rule; a denied TLS flow not
 * decrypted is closed with a reset (SO_LINGER 0). One JSON line per flow
 * and per decrypted request on stdout (egress_log: no header value, no
 * secret in it); diagnostics on stderr. SIGHUP reloads --rules and
 * --secrets (egress_conf): new flows, and the next request of every
 * decrypted flow already open, take the new ones. With --policy-fd, a
 * client holding kilnd's decision stream is asked about each flow and
 * request whose name passed its checks, and its answer decides
 * (egress_ask, egress_question).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <netinet/in.h>

#include "api/egress/egress_ask.h"
#include "api/egress/egress_conf.h"
#include "api/egress/egress_dest.h"
#include "api/egress/egress_flow.h"
#include "api/egress/egress_intercept.h"
#include "api/egress/egress_log.h"
#include "api/egress/egress_tls.h"
#include "lib/base/fd_io.h"
#include "lib/base/mono.h"
#include "lib/base/num_parse.h"
#include "lib/base/sock_relay.h"
#include "lib/netrules/net_host_addrs.h"

#define EGRESS_CONNS 256
#define EGRESS_ALLOW_MAX 16
#define EGRESS_FIRST_MS 10000
#define EGRESS_CONNECT_MS 10000
#define EGRESS_ADDRS_MAX 32
#define EGRESS_RELAY_BUF 65536
/* After one direction has ended, a silent other one is given this long. */
#define EGRESS_HALF_IDLE_MS 60000

struct egress_cfg {
	const char *socket_path, *rules_path, *secrets_path, *ca_dir, *upstream_ca;
	struct egress_tls tls;
	struct egress_logger log; /* decisions, on stdout */
	int listen_fd;            /* --listen-fd, or -1 */
	int policy_fd;            /* --policy-fd, or -1 */
	struct egress_ask *ask;   /* the decision stream, or NULL */
	const char *init_ca;      /* --init-ca DIR: make or check the CA, and exit */
	/* The current configuration: a flow holds the one it began with;
	 * SIGHUP swaps in a new one under the lock. */
	pthread_mutex_t lock;
	struct egress_conf *conf;
	struct net_cidr allow[EGRESS_ALLOW_MAX];
	size_t n_allow;
	struct net_addr *host; /* the host's own addresses, taken at start */
	size_t n_host;
	atomic_int active;
};

struct conn {
	int fd;
	struct egress_cfg *cfg;
	struct egress_conf *conf; /* held for the flow */
};

/* What one flow's log line says. */
struct flow_log {
	struct proxy_v2 hdr;
	bool have_hdr;
	struct egress_log out;
	char reason[ERR_MSG_MAX]; /* a reason made for this flow */
};

static void log_flow(struct egress_cfg *cfg, struct flow_log *l)
{
	l->out.hdr = l->have_hdr ? &l->hdr : NULL;
	egress_log_write(&cfg->log, &l->out);
}

/* Read more of fd into buf[*n..cap) before the deadline: 0, or -ETIMEDOUT,
 * -ECONNRESET (closed first) or -errno. */
static int read_more(int fd, uint8_t *buf, size_t *n, size_t cap, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - mono_ms();
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&p, 1, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!p.revents)
			continue;
		r = read(fd, buf + *n, cap - *n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ECONNRESET;
		*n += (size_t)r;
		return 0;
	}
}

/* The header, then first bytes until egress_flow decides. 0 with *hlen the
 * header's length, or a reason in *why. */
static int read_flow(struct conn *c, uint8_t *buf, size_t *n, size_t *hlen, struct flow_log *l,
		     struct egress_flow *f, const char **why)
{
	int64_t deadline = mono_ms() + EGRESS_FIRST_MS;
	size_t cap = PROXY_V2_MAX + EGRESS_FIRST_MAX, need = 16;
	struct err e = { { 0 } };
	int r;

	for (;;) {
		while (*n < need)
			if ((r = read_more(c->fd, buf, n, cap, deadline)) < 0)
				goto failed;
		r = proxy_v2_decode(buf, *n, &l->hdr, &need, &e);
		if (r > 0)
			break;
		if (r < 0) {
			*why = "bad PROXY v2 header";
			return -EINVAL;
		}
	}
	l->have_hdr = true;
	*hlen = (size_t)r;
	for (;;) {
		egress_flow_decide(&l->hdr, buf + *hlen, *n - *hlen, c->conf->rules, f);
		if (f->status != EGRESS_NEED_MORE)
			return 0;
		while (*n - *hlen < f->need)
			if ((r = read_more(c->fd, buf, n, cap, deadline)) < 0)
				goto failed;
	}
failed:
	*why = r == -ETIMEDOUT ? "no header or first bytes within 10 s" : "closed before deciding";
	return r;
}

/* The name's addresses from the host's resolver: their count, or -1. */
static int resolve(const char *name, struct net_addr *out, size_t cap)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *ai;
	size_t n = 0;

	if (getaddrinfo(name, NULL, &hints, &res) != 0)
		return -1;
	for (ai = res; ai && n < cap; ai = ai->ai_next) {
		if (ai->ai_family == AF_INET)
			net_addr_set(&out[n++], NET_AF4,
				     (const uint8_t *)&((struct sockaddr_in *)ai->ai_addr)
					     ->sin_addr);
		else if (ai->ai_family == AF_INET6)
			net_addr_set(&out[n++], NET_AF6,
				     (const uint8_t *)&((struct sockaddr_in6 *)ai->ai_addr)
					     ->sin6_addr);
	}
	freeaddrinfo(res);
	return (int)n;
}

/* A TCP connection to the header's destination within 10 s: the socket, or -errno. */
static int connect_upstream(const struct proxy_v2 *h)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t len;
	struct pollfd p;
	int fd, err = 0, rc;
	socklen_t elen = sizeof(err);

	if (h->family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(h->dport);
		memcpy(&s6->sin6_addr, h->dst, 16);
		len = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(h->dport);
		memcpy(&s4->sin_addr, h->dst, 4);
		len = sizeof(*s4);
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&ss, len) < 0 && errno != EINPROGRESS) {
		err = errno;
		goto fail;
	}
	p = (struct pollfd){ .fd = fd, .events = POLLOUT };
	do
		rc = poll(&p, 1, EGRESS_CONNECT_MS);
	while (rc < 0 && errno == EINTR);
	if (rc <= 0) {
		err = rc == 0 ? ETIMEDOUT : errno;
		goto fail;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0 || err) {
		err = err ? err : errno;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -err;
}

/* Refuse the flow: plain HTTP gets the answer, TLS (and the rest) a reset. */
static void refuse(int fd, const struct egress_flow *f)
{
	char answer[512];
	int n;

	if (f->proto == EGRESS_PROTO_HTTP &&
	    (n = egress_flow_deny_response(f, answer, sizeof(answer))) > 0) {
		fd_io_send_all(fd, answer, (size_t)n);
		shutdown(fd, SHUT_WR);
		return;
	}
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &(struct linger){ .l_onoff = 1, .l_linger = 0 },
		   sizeof(struct linger));
}

/* Relay an allowed flow: the bytes already read (only the first request's,
 * for plain HTTP), then both ways. */
static void relay(int guest, int up, const uint8_t *first, size_t n, const struct egress_flow *f,
		  struct flow_log *l)
{
	static const size_t cap = EGRESS_RELAY_BUF;
	struct sock_relay r = { .fd = { guest, up },
				.stop_fd = -1,
				.half_idle_ms = EGRESS_HALF_IDLE_MS,
				/* A spliced flow the guest holds open and never
				 * uses ends as a decrypted one does. */
				.idle_ms = EGRESS_IDLE_MS };
	uint8_t *b0 = malloc(cap > n ? cap : n), *b1 = malloc(cap);
	int errnum = 0;

	if (!b0 || !b1)
		goto out;
	memcpy(b0, first, n);
	r.dir[0] = (struct sock_relay_dir){ .buf = b0, .cap = cap > n ? cap : n, .end = n };
	r.dir[1] = (struct sock_relay_dir){ .buf = b1, .cap = cap };
	if (f->proto == EGRESS_PROTO_HTTP) {
		/* One request: never forward a pipelined second one undecided. */
		r.dir[0].capped = true;
		if (f->request_len <= n) {
			r.dir[0].end = (size_t)f->request_len;
			r.dir[0].left = 0;
			/* All of it is in: anything more from the guest (a second
			 * request, its close, a half-close too) ends the flow, so a
			 * kept-alive connection does not hold a slot for nothing. */
			r.stop_fd = guest;
		} else {
			r.dir[0].left = f->request_len - n;
		}
	}
	sock_relay_run(&r, &errnum);
	l->out.up = r.dir[0].bytes;
	l->out.down = r.dir[1].bytes;
out:
	free(b0);
	free(b1);
}

/* Where the flow may go: its name resolved, the header's destination
 * checked against the answers. NULL, or why not. */
static const char *destination(struct conn *c, const struct egress_flow *f,
			       const struct proxy_v2 *h)
{
	struct net_addr addrs[EGRESS_ADDRS_MAX], dst;
	int na = resolve(f->name, addrs, EGRESS_ADDRS_MAX);

	egress_dest_of(h, &dst);
	return na < 0 ? "the name does not resolve"
		      : egress_dest_check(&dst, addrs, (size_t)na, c->cfg->allow, c->cfg->n_allow,
					  c->cfg->host, c->cfg->n_host);
}

/* The configuration in use now, held for the flow in place of the one
 * it held (egress_icpt.conf_now: called between requests). */
static const struct egress_conf *conf_now(void *arg)
{
	struct conn *c = arg;
	struct egress_conf *old = NULL;

	pthread_mutex_lock(&c->cfg->lock);
	if (c->conf != c->cfg->conf) {
		old = c->conf;
		c->conf = egress_conf_hold(c->cfg->conf);
	}
	pthread_mutex_unlock(&c->cfg->lock);
	egress_conf_drop(old);
	return c->conf;
}

/* A flow to decrypt: the guest's TLS ended here with a leaf for its
 * name, the upstream's verified, then each request (egress_intercept). */
static void intercept(struct conn *c, const uint8_t *first, size_t n, struct egress_flow *f,
		      struct flow_log *l, uint64_t flow_id)
{
	struct egress_tls *t = &c->cfg->tls;
	struct egress_icpt x = { .conf = c->conf,
				 .conf_now = conf_now,
				 .conf_arg = c,
				 .hdr = &l->hdr,
				 .name = f->name,
				 .log = &c->cfg->log,
				 .guest = c->fd,
				 .up = -1,
				 .ask = c->cfg->ask,
				 .flow_id = flow_id };
	struct err e = { { 0 } };
	const char *why;

	if (!t->ca) {
		f->reason = l->out.reason = "the rule decrypts, and kiln-egress has no --ca";
		refuse(c->fd, f);
		return;
	}
	fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
	x.gs = egress_tls_accept(t, c->fd, first, n, f->name, mono_ms() + EGRESS_FIRST_MS, &e);
	if (!x.gs) {
		/* Bytes the guest chose, never a secret: its handshake. */
		snprintf(l->reason, sizeof(l->reason), "%s", e.msg);
		l->out.reason = l->reason;
		return;
	}
	f->proto = EGRESS_PROTO_HTTP; /* refusals from here are answered */
	if ((why = destination(c, f, &l->hdr)) != NULL) {
		f->reason = l->out.reason = why;
		f->status_code = HTTP_DENY_STATUS;
		goto refused;
	}
	x.up = connect_upstream(&l->hdr);
	if (x.up < 0) {
		f->reason = l->out.reason = "upstream connect failed";
		f->status_code = 502;
		goto refused;
	}
	x.us = egress_tls_connect(t, x.up, f->name, mono_ms() + EGRESS_CONNECT_MS, &e);
	if (!x.us) {
		snprintf(l->reason, sizeof(l->reason), "%s", e.msg);
		f->reason = l->out.reason = l->reason;
		f->status_code = 502;
		goto refused;
	}
	l->out.decision = "allow";
	why = egress_icpt_run(&x);
	l->out.reason = why ? why : "";
	l->out.up = x.up_bytes;
	l->out.down = x.down_bytes;
	egress_tls_close(x.us);
	egress_tls_close(x.gs);
	close(x.up);
	return;
refused:
	egress_icpt_refuse(x.gs, c->fd, f);
	egress_tls_close(x.gs);
	if (x.up >= 0)
		close(x.up);
}

/* The flow asked about while a client holds the decision stream (its
 * name passed its checks): the answer applied to f (and the log), kept in
 * *asked; *flow_id the id a decrypted flow's requests name. */
static void ask_flow(struct conn *c, struct egress_flow *f, struct flow_log *l,
		     const uint8_t *first, struct egress_asked *asked, uint64_t *flow_id, char *why,
		     size_t cap)
{
	const struct http_rules *rules = c->conf->rules;
	const struct http_rule *u = rules && f->rule < rules->n ? &rules->rules[f->rule] : NULL;
	uint64_t id;

	*asked = (struct egress_asked){ .how = EGRESS_ASKED_NONE };
	if (!f->ruled || !c->cfg->ask)
		return;
	id = egress_ask_id(c->cfg->ask);
	if (f->proto == EGRESS_PROTO_TLS)
		*flow_id = id;
	if (!egress_ask_attached(c->cfg->ask))
		return;
	egress_ask(c->cfg->ask,
		   f->proto == EGRESS_PROTO_TLS
			   ? egress_question_connect(id, &l->hdr, f)
			   : egress_question_request(id, 0, &l->hdr, f->name, f,
						     (const char *)first, u),
		   id, asked);
	l->out.policy = egress_question_apply(f, asked, why, cap);
}

/* A plain HTTP request's head with an allowed answer's header changes:
 * *first and *n become a new buffer (the caller frees *fresh) and
 * f->request_len follows the head's new length. 0, or -1 (the request is
 * then refused). */
static int rewrite_head(struct conn *c, struct egress_flow *f, const struct egress_answer *a,
			const uint8_t **first, size_t *n, uint8_t **fresh)
{
	const struct http_rules *rules = c->conf->rules;
	const struct http_rule *u = rules && f->rule < rules->n ? &rules->rules[f->rule] : NULL;
	struct egress_inject_field chg[2 * EGRESS_DECISION_FIELDS];
	size_t nc = egress_question_changes(a, u, chg), rest = *n - f->head_len, cap;
	long len;

	if (!nc)
		return 0;
	cap = egress_http_inject_size(f->head_len, chg, nc) + rest;
	*fresh = malloc(cap);
	if (!*fresh)
		return -1;
	len = egress_http_inject((const char *)*first, f->head_len, chg, nc, (char *)*fresh, cap);
	if (len < 0)
		return -1;
	memcpy(*fresh + len, *first + f->head_len, rest);
	f->request_len = f->request_len - f->head_len + (uint64_t)len;
	f->head_len = (size_t)len;
	*first = *fresh;
	*n = (size_t)len + rest;
	return 0;
}

static void serve(struct conn *c)
{
	uint8_t *buf = malloc(PROXY_V2_MAX + EGRESS_FIRST_MAX), *fresh = NULL;
	struct flow_log l = { .out = { .decision = "deny", .reason = "", .rule = SIZE_MAX } };
	struct egress_flow f = { .proto = EGRESS_PROTO_NONE };
	struct egress_asked asked = { .how = EGRESS_ASKED_NONE };
	char asked_why[EGRESS_DECISION_REASON_MAX + 64];
	const uint8_t *first;
	const char *why = NULL;
	size_t n = 0, hlen = 0;
	uint64_t flow_id = 0;
	int up;

	if (!buf) {
		l.out.reason = "out of memory";
		goto out;
	}
	if (read_flow(c, buf, &n, &hlen, &l, &f, &why) < 0) {
		l.out.reason = why;
		f.proto = EGRESS_PROTO_NONE;
		refuse(c->fd, &f);
		goto out;
	}
	l.out.name = f.name;
	l.out.sni = f.proto == EGRESS_PROTO_TLS ? f.name : NULL;
	l.out.rule = f.rule;
	if (f.proto == EGRESS_PROTO_HTTP) {
		l.out.host = f.name;
		l.out.method = f.method;
		l.out.path = f.path;
	}
	ask_flow(c, &f, &l, buf + hlen, &asked, &flow_id, asked_why, sizeof(asked_why));
	if (f.status == EGRESS_DENY) {
		l.out.reason = f.reason;
		refuse(c->fd, &f);
		goto out;
	}
	if (f.intercept) {
		intercept(c, buf + hlen, n - hlen, &f, &l, flow_id);
		goto out;
	}
	first = buf + hlen;
	n -= hlen;
	if (f.proto == EGRESS_PROTO_HTTP && asked.a &&
	    rewrite_head(c, &f, asked.a, &first, &n, &fresh) < 0) {
		f.reason = l.out.reason = "the request head could not be rewritten";
		f.status_code = 400;
		refuse(c->fd, &f);
		goto out;
	}
	if ((why = destination(c, &f, &l.hdr)) != NULL) {
		f.reason = l.out.reason = why;
		f.status_code = HTTP_DENY_STATUS;
		refuse(c->fd, &f);
		goto out;
	}
	up = connect_upstream(&l.hdr);
	if (up < 0) {
		f.reason = l.out.reason = "upstream connect failed";
		f.status_code = 502;
		refuse(c->fd, &f);
		goto out;
	}
	l.out.decision = "allow";
	relay(c->fd, up, first, n, &f, &l);
	close(up);
out:
	log_flow(c->cfg, &l);
	egress_asked_free(&asked);
	free(fresh);
	free(buf);
}

static void *conn_thread(void *arg)
{
	struct conn *c = arg;

	pthread_mutex_lock(&c->cfg->lock);
	c->conf = egress_conf_hold(c->cfg->conf);
	pthread_mutex_unlock(&c->cfg->lock);
	serve(c);
	egress_conf_drop(c->conf);
	close(c->fd);
	atomic_fetch_sub(&c->cfg->active, 1);
	free(c);
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: kiln-egress (--socket PATH | --listen-fd N) --rules FILE\n"
		"                   [--ca DIR] [--secrets FILE] [--upstream-ca FILE]\n"
		"                   [--policy-fd N] [--allow-private CIDR]...\n"
		"       kiln-egress --init-ca DIR\n"
		"  --socket PATH         the Unix socket kiln-vmm hands steered flows to\n"
		"  --listen-fd N         that socket, already listening, inherited as fd N\n"
		"  --rules FILE          the sandbox's firewall rule set (its \"http\" rules\n"
		"                        are read) or a JSON array of http rules alone\n"
		"  --ca DIR              the sandbox's CA, DIR/ca.key and DIR/ca.pem: TLS\n"
		"                        flows whose rule intercepts or injects are\n"
		"                        decrypted with leaves it signs (without it they\n"
		"                        are denied)\n"
		"  --secrets FILE        a JSON object of secret names to values, for the\n"
		"                        rules' inject headers (sent over TLS only)\n"
		"  --upstream-ca FILE    the certificates an intercepted flow's upstream is\n"
		"                        verified against (default: the host's trust store)\n"
		"  --policy-fd N         kilnd's end of the decision stream (docs/api.md,\n"
		"                        \"The egress decision stream\"): while a client\n"
		"                        holds it, each flow and request is asked about\n"
		"  --allow-private CIDR  also connect to addresses in CIDR though they are\n"
		"                        private or reserved (tests; up to 16); one of\n"
		"                        the host's own addresses only when CIDR is it alone\n"
		"  --init-ca DIR         make DIR/ca.key (0600) and DIR/ca.pem when absent,\n"
		"                        check them when present; exit 0 or 1\n"
		"SIGHUP reads --rules and --secrets again (a bad file keeps those in use).\n"
		"Decisions: one JSON line per flow and per decrypted request on stdout.\n");
}

/* The arguments into cfg: 0, or 2 after saying what is wrong. */
static int parse_args(int argc, char **argv, struct egress_cfg *cfg)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		struct err e = { { 0 } };

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 1;
		}
		if (!v) {
			fprintf(stderr, "kiln-egress: %s: %s\n", a,
				strncmp(a, "--", 2) ? "unknown argument" : "needs a value");
			usage(stderr);
			return 2;
		}
		i++;
		if (!strcmp(a, "--socket")) {
			cfg->socket_path = v;
		} else if (!strcmp(a, "--listen-fd")) {
			uint64_t fd;

			if (num_parse_u64(v, 10, 0, INT32_MAX, &fd) < 0) {
				fprintf(stderr,
					"kiln-egress: --listen-fd %s: not a descriptor number\n",
					v);
				return 2;
			}
			cfg->listen_fd = (int)fd;
		} else if (!strcmp(a, "--policy-fd")) {
			uint64_t fd;

			if (num_parse_u64(v, 10, 0, INT32_MAX, &fd) < 0) {
				fprintf(stderr,
					"kiln-egress: --policy-fd %s: not a descriptor number\n",
					v);
				return 2;
			}
			cfg->policy_fd = (int)fd;
		} else if (!strcmp(a, "--rules")) {
			cfg->rules_path = v;
		} else if (!strcmp(a, "--secrets")) {
			cfg->secrets_path = v;
		} else if (!strcmp(a, "--ca")) {
			cfg->ca_dir = v;
		} else if (!strcmp(a, "--upstream-ca")) {
			cfg->upstream_ca = v;
		} else if (!strcmp(a, "--init-ca")) {
			if (argc != 3) {
				fprintf(stderr,
					"kiln-egress: --init-ca DIR takes no other option\n");
				return 2;
			}
			cfg->init_ca = v;
			return 0;
		} else if (!strcmp(a, "--allow-private")) {
			if (cfg->n_allow == EGRESS_ALLOW_MAX) {
				fprintf(stderr, "kiln-egress: --allow-private: at most %d blocks\n",
					EGRESS_ALLOW_MAX);
				return 2;
			}
			if (net_cidr_parse(v, &cfg->allow[cfg->n_allow++], &e) < 0) {
				fprintf(stderr, "kiln-egress: --allow-private %s: %s\n", v, e.msg);
				return 2;
			}
		} else {
			fprintf(stderr, "kiln-egress: %s: unknown option\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (cfg->socket_path && cfg->listen_fd >= 0) {
		fprintf(stderr, "kiln-egress: --socket and --listen-fd: give one, not both\n");
		return 2;
	}
	if ((!cfg->socket_path && cfg->listen_fd < 0) || !cfg->rules_path) {
		fprintf(stderr,
			"kiln-egress: --rules and one of --socket and --listen-fd are "
			"needed\n");
		usage(stderr);
		return 2;
	}
	return 0;
}

/* Say on stderr what of c cannot work as written: rules that decrypt
 * without --ca, secrets a rule names that --secrets does not hold (their
 * flows and requests are refused; this says why before one comes). */
static void warn_conf(const struct egress_cfg *cfg, const struct egress_conf *c)
{
	for (size_t i = 0; i < c->rules->n; i++) {
		const struct http_rule *u = &c->rules->rules[i];

		if (u->intercept && !cfg->tls.ca)
			fprintf(stderr,
				"kiln-egress: rule %zu decrypts TLS and there is no --ca: its TLS "
				"flows are refused\n",
				i);
		for (size_t k = 0; k < u->n_inject; k++)
			if (!egress_conf_secret(c, u->inject[k].secret))
				fprintf(stderr,
					"kiln-egress: rule %zu injects secret %s, which --secrets "
					"does not hold: its requests are refused\n",
					i, u->inject[k].secret);
	}
}

/* Load the files anew (SIGHUP): a bad one keeps the old configuration. */
static void reload(struct egress_cfg *cfg)
{
	struct egress_conf *c, *old;
	struct err e = { { 0 } };

	if (egress_conf_load(cfg->rules_path, cfg->secrets_path, &c, &e) < 0) {
		fprintf(stderr, "kiln-egress: SIGHUP: %s: kept the rules and secrets in use\n",
			e.msg);
		return;
	}
	pthread_mutex_lock(&cfg->lock);
	old = cfg->conf;
	cfg->conf = c;
	pthread_mutex_unlock(&cfg->lock);
	egress_conf_drop(old);
	fprintf(stderr, "kiln-egress: SIGHUP: reloaded, %zu rules\n", c->rules->n);
	warn_conf(cfg, c);
}

/* An inherited listening socket (kilnd binds it before the VMM starts):
 * it must be a listening Unix stream socket. fd, or -1 after saying why. */
static int listen_inherited(int fd)
{
	int type = 0, acc = 0;
	socklen_t len = sizeof(type), alen = sizeof(acc);
	struct sockaddr_storage ss;
	socklen_t slen = sizeof(ss);

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &alen) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &slen) < 0) {
		fprintf(stderr,
			"kiln-egress: --listen-fd %d: %s: pass a listening Unix stream socket\n",
			fd, strerror(errno));
		return -1;
	}
	if (type != SOCK_STREAM || ss.ss_family != AF_UNIX || !acc) {
		fprintf(stderr,
			"kiln-egress: --listen-fd %d: not a listening Unix stream socket: pass the "
			"socket kilnd bound\n",
			fd);
		return -1;
	}
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	return fd;
}

/* The listening socket, or -1 after saying why. A socket left by an
 * earlier run is replaced; any other file at the path is not. */
static int listen_on(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "kiln-egress: --socket %s: longer than %zu bytes\n", path,
			sizeof(sa.sun_path) - 1);
		return -1;
	}
	strcpy(sa.sun_path, path);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			fprintf(stderr, "kiln-egress: --socket %s: exists and is not a socket\n",
				path);
			return -1;
		}
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0) {
		fprintf(stderr, "kiln-egress: --socket %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static void accept_one(struct egress_cfg *cfg, int lfd, pthread_attr_t *attr)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	struct conn *c;
	pthread_t t;

	if (fd < 0) {
		if (errno == EMFILE || errno == ENFILE)
			usleep(100000);
		else if (errno != EINTR && errno != ECONNABORTED && errno != EAGAIN)
			fprintf(stderr, "kiln-egress: accept: %s\n", strerror(errno));
		return;
	}
	if (atomic_fetch_add(&cfg->active, 1) >= EGRESS_CONNS) {
		fprintf(stderr, "kiln-egress: %d flows open: refusing another\n", EGRESS_CONNS);
		goto drop;
	}
	c = malloc(sizeof(*c));
	if (!c)
		goto drop;
	*c = (struct conn){ .fd = fd, .cfg = cfg };
	if (pthread_create(&t, attr, conn_thread, c) != 0) {
		free(c);
		goto drop;
	}
	return;
drop:
	atomic_fetch_sub(&cfg->active, 1);
	close(fd);
}

int main(int argc, char **argv)
{
	struct egress_cfg cfg = { .listen_fd = -1,
				  .policy_fd = -1,
				  .lock = PTHREAD_MUTEX_INITIALIZER,
				  .log = { .fd = STDOUT_FILENO,
					   .lock = PTHREAD_MUTEX_INITIALIZER } };
	struct err e = { { 0 } };
	pthread_attr_t attr;
	sigset_t hup;
	int lfd, sfd, rc;

	if ((rc = parse_args(argc, argv, &cfg)) != 0)
		return rc == 1 ? 0 : rc;
	if (cfg.init_ca) {
		char line[2048];

		if (egress_tls_init_ca(cfg.init_ca, line, sizeof(line), &e) < 0) {
			fprintf(stderr, "%s\n", e.msg);
			return 1;
		}
		printf("%s\n", line);
		return 0;
	}
	if (egress_tls_init(&cfg.tls, cfg.ca_dir, cfg.upstream_ca, &e) < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return 1;
	}
	if (egress_conf_load(cfg.rules_path, cfg.secrets_path, &cfg.conf, &e) < 0) {
		fprintf(stderr, "kiln-egress: %s\n", e.msg);
		return 1;
	}
	if (cfg.policy_fd >= 0 && !(cfg.ask = egress_ask_start(cfg.policy_fd, &e))) {
		fprintf(stderr, "%s\n", e.msg);
		return 1;
	}
	if (net_host_addrs(&cfg.host, &cfg.n_host, &e) < 0) {
		fprintf(stderr, "kiln-egress: the host's own addresses: %s\n", e.msg);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	/* SIGHUP arrives as a descriptor in this loop alone: every thread
	 * made below inherits the mask, so none is interrupted by it. */
	sigemptyset(&hup);
	sigaddset(&hup, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &hup, NULL);
	sfd = signalfd(-1, &hup, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		fprintf(stderr, "kiln-egress: signalfd: %s\n", strerror(errno));
		return 1;
	}
	lfd = cfg.listen_fd >= 0 ? listen_inherited(cfg.listen_fd) : listen_on(cfg.socket_path);
	if (lfd < 0)
		return 1;
	/* A connection gone between poll and accept must not block the loop
	 * (and with it SIGHUP). */
	fcntl(lfd, F_SETFL, fcntl(lfd, F_GETFL) | O_NONBLOCK);
	fprintf(stderr, "kiln-egress: listening on %s, %zu rules\n",
		cfg.socket_path ? cfg.socket_path : "an inherited socket", cfg.conf->rules->n);
	warn_conf(&cfg, cfg.conf);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (;;) {
		struct pollfd p[2] = { { .fd = lfd, .events = POLLIN },
				       { .fd = sfd, .events = POLLIN } };
		struct signalfd_siginfo si;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "kiln-egress: poll: %s\n", strerror(errno));
			return 1;
		}
		if (p[1].revents && read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			reload(&cfg);
		if (p[0].revents)
			accept_one(&cfg, lfd, &attr);
	}
}
