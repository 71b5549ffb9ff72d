/* kilnd's preview reverse proxy; see preview_server.h. */
#include "api/kilnd/preview/preview_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <kiln/agent.h>

#include "api/kilnd/preview/preview_route.h"
#include "api/kilnd/http/http_head.h"
#include "api/kilnd/http/http_io.h"
#include "api/kilnd/net/port_fwd.h"
#include "api/kilnd/registry/sandbox.h"
#include "lib/base/accept_loop.h"
#include "lib/base/mono.h"
#include "lib/base/sock_relay.h"

struct preview_server {
	struct kilnd *d;
	int listen_fd;
	int stop_fd;        /* eventfd: written once by quiesce, never read: readable for all */
	int accept_stop_fd; /* eventfd: the same for the listener thread alone */
	pthread_t listener;
	bool listening;
	pthread_mutex_t mu;
	pthread_cond_t idle;      /* caps.active fell to 0 */
	struct preview_caps caps; /* mu: connection threads, per address and sandbox */
};

struct pconn {
	struct preview_server *s;
	int fd;
	uint32_t addr; /* the client's, counted in s->caps */
	char client[INET_ADDRSTRLEN];
	uint8_t *in, *out; /* PREVIEW_BUF each: client → guest, guest → client */
};

/* ---- one connection ---- */

/* Everything of p[0..n) within the client timeout (http_io.h); false when it failed. */
static bool send_all(struct pconn *c, const char *p, size_t n)
{
	return http_io_send(c->fd, p, n, (int)c->s->d->cfg.client_timeout_s * 1000,
			    c->s->stop_fd) == 0;
}

static void answer_err(struct pconn *c, const struct preview_err *e)
{
	char buf[1024];
	size_t n = preview_err_answer(e, buf, sizeof(buf));

	send_all(c, buf, n);
	/* Unread input would make close() send a reset over the answer. */
	shutdown(c->fd, SHUT_WR);
}

/*
 * Read one request head into c->in: its length (*got: all bytes read), or
 * -1 with e (timeout, too large, closed, bare LF). The whole head within
 * --preview-head-timeout: a client trickling a byte at a time holds its
 * slot no longer.
 */
static long read_head(struct pconn *c, size_t *got, struct preview_err *e)
{
	unsigned limit_s = c->s->d->cfg.preview_head_timeout_s;
	int64_t deadline = mono_ms() + (int64_t)limit_s * 1000;
	struct http_head_scan sc = { 0 };
	struct api_err ae;
	size_t n = 0;
	long end;

	for (;;) {
		int w = http_io_wait(c->fd, POLLIN, deadline, c->s->stop_fd);
		ssize_t r;

		if (w == -ETIMEDOUT)
			return preview_err_set(e, 408, "request_timeout",
					       "no complete request head within %u s", limit_s);
		if (w == -ESHUTDOWN)
			return preview_err_set(e, 503, "shutting_down", "kilnd is stopping");
		if (w < 0)
			return preview_err_set(e, 500, "internal", "poll: %s", strerror(-w));
		/* Never more than a head can be: HTTP_HEAD_MAX + what follows in the same read. */
		r = recv(c->fd, c->in + n, HTTP_HEAD_MAX - n, MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
			return preview_err_set(e, 400, "closed",
					       "the connection ended before a request head");
		if (r < 0)
			continue;
		n += (size_t)r;
		end = http_head_scan_end((const char *)c->in, n, &sc, &ae);
		if (end < 0)
			return preview_err_set(e, api_code_status(ae.code), api_code_name(ae.code),
					       "%s", ae.msg);
		if (end > 0) {
			*got = n;
			return end;
		}
	}
}

/* Reach the guest port for r on sb (waking it): the socket, or -1 with e. */
static int guest_open(struct sandbox *sb, const struct preview_req *r,
		      const struct preview_grant *g, struct preview_err *e)
{
	struct api_err se;
	json_t *env = NULL;
	kiln_agent *a;
	int fd = -1;

	if (g->state == SANDBOX_STOPPED || g->state == SANDBOX_CRASHED)
		return preview_err_set(
			e, 503, "sandbox_not_running",
			"sandbox %s is %s: start it (POST /v1/sandboxes/%s/start) and try again",
			r->id, sandbox_state_name(g->state), r->id);
	/* Waits for a hibernation or checkpoint under way; wakes a hibernated
	 * one; a client of libkiln's public agent API (kiln/agent.h) of this
	 * connection's own. */
	if (sandbox_agent_new(sb, &a, &env, &se))
		return se.code == API_E_INTERNAL
			? preview_err_set(e, 500, "internal", "sandbox %s: %s", r->id, se.msg)
			: preview_err_set(e, 503, "sandbox_not_running", "%s", se.msg);
	json_decref(env);
	kiln_agent_set_timeout(a, PORT_FWD_CONNECT_MS);
	if (kiln_agent_tcp_connect(a, r->port, "127.0.0.1", &fd) < 0)
		preview_err_set(
			e, 502, "guest_unreachable",
			"nothing answers on port %u of sandbox %s (%s): is a server listening on 127.0.0.1 or 0.0.0.0 there?",
			(unsigned)r->port, r->id, kiln_agent_errcode(a));
	kiln_agent_free(a);
	return fd;
}

/*
 * Count a connection to sandbox id (--preview-max-per-sandbox): true, or
 * false with e (503 with Retry-After: the sandbox has its share already,
 * relays to a server of its that never answers, say).
 */
static bool sandbox_share_take(struct preview_server *s, const char *id, struct preview_err *e)
{
	enum preview_cap cap;

	pthread_mutex_lock(&s->mu);
	cap = preview_caps_sandbox_enter(&s->caps, id);
	pthread_mutex_unlock(&s->mu);
	if (cap == PREVIEW_CAP_OK)
		return true;
	preview_err_set(
		e, 503, "too_many_connections",
		"sandbox %s has %u preview connections open already (--preview-max-per-sandbox): close some, or retry",
		id, s->caps.per_sandbox);
	e->retry_after_s = 1;
	return false;
}

/* Serve the connection c: answer or relay; returns when it is done. */
static void serve(struct pconn *c)
{
	struct preview_server *s = c->s;
	struct http_head h;
	struct preview_req r;
	struct preview_grant g;
	struct preview_err e;
	struct api_err ae;
	struct sandbox *sb = NULL;
	const struct preview_cred *cred = NULL;
	bool authorized = false, counted = false;
	size_t got = 0, extra;
	uint64_t body = 0;
	long hlen = read_head(c, &got, &e), flen;
	int guest = -1, errnum;

	if (hlen < 0) {
		if (!strcmp(e.code, "closed"))
			return; /* the client went away: nobody to tell */
		answer_err(c, &e);
		return;
	}
	if (http_head_parse((char *)c->in, (size_t)hlen, &h, &ae)) {
		preview_err_set(&e, api_code_status(ae.code), api_code_name(ae.code), "%s", ae.msg);
		answer_err(c, &e);
		return;
	}
	if (preview_route(&h, s->d->cfg.preview_domain, &r, &e)) {
		answer_err(c, &e);
		return;
	}
	sb = sandbox_preview_find(s->d, r.id, r.port, &g);
	if (!sb) {
		preview_err_set(&e, 404, "preview_not_found",
				"sandbox %s has no preview of port %u", r.id, (unsigned)r.port);
		answer_err(c, &e);
		return;
	}
	authorized = g.public_ || (cred = preview_auth(&r, g.token));
	if (!authorized) {
		preview_err_set(
			&e, 401, "unauthorized",
			"this preview needs its token: header X-Kiln-Preview-Token or Authorization: Bearer, its cookie, or ?token= (GET /v1/sandboxes/%s/previews shows it)",
			r.id);
		answer_err(c, &e);
		goto out;
	}
	if (cred && cred->kind == PREVIEW_CRED_QUERY &&
	    (!strcmp(h.method, "GET") || !strcmp(h.method, "HEAD"))) {
		/* A first visit: the cookie, and the URL without the token. */
		flen = preview_redirect(&h, &r, g.token, (char *)c->out, PREVIEW_BUF);
		if (flen > 0)
			send_all(c, (const char *)c->out, (size_t)flen);
		shutdown(c->fd, SHUT_WR);
		goto out;
	}
	/* One request per connection, and only it reaches the guest: past an
	 * upgrade the bytes are the upgraded protocol's, else the client's
	 * bytes end with the body its head announced. Nothing after it is
	 * read, so a guest that keeps the connection open (whatever it
	 * answers) never gets a later request of the browser's, routed and
	 * checked by no one, with another preview's token in it. */
	extra = got - (size_t)hlen;
	if (!r.upgrade) {
		if (h.body == HTTP_BODY_CHUNKED) {
			preview_err_set(
				&e, 411, "length_required",
				"a chunked request body cannot go through a preview: send it with Content-Length");
			answer_err(c, &e);
			goto out;
		}
		body = h.body == HTTP_BODY_LENGTH ? h.content_length : 0;
		if (extra > body)
			extra = (size_t)body;
	}
	if (!sandbox_share_take(s, r.id, &e)) {
		answer_err(c, &e);
		goto out;
	}
	counted = true;
	guest = guest_open(sb, &r, &g, &e);
	if (guest < 0) {
		answer_err(c, &e);
		goto out;
	}
	/* The head the guest gets, then the bytes that came after it. */
	flen = preview_head_rewrite(&h, &r, g.public_ ? NULL : g.token, c->client, (char *)c->out,
				    PREVIEW_BUF);
	if (flen < 0 || extra > PREVIEW_BUF - (size_t)flen) {
		preview_err_set(&e, 431, "headers_too_large",
				"the request head is too large to forward");
		answer_err(c, &e);
		goto out;
	}
	memcpy(c->out + flen, c->in + hlen, extra);
	{
		struct sock_relay rl = { .fd = { c->fd, guest },
					 .stop_fd = s->stop_fd,
					 .half_idle_ms = PORT_FWD_HALF_IDLE_MS };

		rl.dir[0] = (struct sock_relay_dir){ .buf = c->out,
						     .cap = PREVIEW_BUF,
						     .end = (size_t)flen + extra,
						     .capped = !r.upgrade,
						     .left = r.upgrade ? 0 : body - extra };
		rl.dir[1] = (struct sock_relay_dir){ .buf = c->in, .cap = PREVIEW_BUF };
		sock_relay_run(&rl, &errnum);
	}
out:
	explicit_bzero(&g, sizeof(g));
	if (counted) {
		pthread_mutex_lock(&s->mu);
		preview_caps_sandbox_leave(&s->caps, r.id);
		pthread_mutex_unlock(&s->mu);
	}
	if (guest >= 0)
		close(guest);
	/* Activity for its idle timeout, once the request had its token. */
	if (authorized)
		sandbox_put(sb);
	else
		sandbox_put_quiet(sb);
}

/* A connection admitted from addr has ended. */
static void slot_give_back(struct preview_server *s, uint32_t addr)
{
	pthread_mutex_lock(&s->mu);
	preview_caps_leave(&s->caps, addr);
	if (s->caps.active == 0)
		pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->mu);
}

static void *conn_main(void *arg)
{
	struct pconn *c = arg;
	struct preview_server *s = c->s;

	serve(c);
	close(c->fd);
	slot_give_back(s, c->addr);
	free(c->in);
	free(c->out);
	free(c);
	return NULL;
}

/* ---- listener ---- */

/*
 * Beyond a cap (why: PREVIEW_CAP_FULL, or _CLIENT from this address): a
 * short answer with Retry-After if the socket takes it now, then close.
 */
static void refuse(const struct preview_server *s, int fd, enum preview_cap why)
{
	struct preview_err e;
	char buf[1024];
	size_t n;

	if (why == PREVIEW_CAP_CLIENT)
		preview_err_set(
			&e, 429, "too_many_connections",
			"%u preview connections from this address are open already (--preview-max-per-client): close some, or retry",
			s->caps.per_client);
	else
		preview_err_set(&e, 503, "too_many_connections",
				"%d preview connections are open already: retry",
				PREVIEW_CONNS_MAX);
	e.retry_after_s = 1;
	/* What the client sent already is read and dropped: unread input
	 * would make close() send a reset, which can overtake the answer. */
	for (int i = 0; i < 4 && recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0; i++) {
	}
	n = preview_err_answer(&e, buf, sizeof(buf));
	if (send(fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* the client is not reading: it gets the close */
	}
	shutdown(fd, SHUT_WR);
	close(fd);
}

static int accept_one(void *arg)
{
	struct preview_server *s = arg;
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	int fd = accept4(s->listen_fd, (struct sockaddr *)&a, &alen, SOCK_NONBLOCK | SOCK_CLOEXEC);
	struct pconn *c = NULL;
	pthread_attr_t attr;
	pthread_t th;
	enum preview_cap cap;
	bool room;
	int err;

	if (fd < 0)
		return errno;
	pthread_mutex_lock(&s->mu);
	cap = preview_caps_admit(&s->caps, a.sin_addr.s_addr);
	pthread_mutex_unlock(&s->mu);
	room = cap == PREVIEW_CAP_OK;
	if (room && (c = calloc(1, sizeof(*c)))) {
		c->in = malloc(PREVIEW_BUF);
		c->out = malloc(PREVIEW_BUF);
	}
	if (!room || !c || !c->in || !c->out) {
		if (c) {
			free(c->in);
			free(c->out);
			free(c);
		}
		c = NULL;
		goto refused;
	}
	c->s = s;
	c->fd = fd;
	c->addr = a.sin_addr.s_addr;
	if (!inet_ntop(AF_INET, &a.sin_addr, c->client, sizeof(c->client)))
		snprintf(c->client, sizeof(c->client), "unknown");
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&th, &attr, conn_main, c);
	pthread_attr_destroy(&attr);
	if (!err)
		return 0;
	free(c->in);
	free(c->out);
	free(c);
refused:
	/* Out of memory or threads: the pool is as good as full. */
	refuse(s, fd, room ? PREVIEW_CAP_FULL : cap);
	if (room)
		slot_give_back(s, a.sin_addr.s_addr);
	return 0;
}

static void *listener_main(void *arg)
{
	struct preview_server *s = arg;

	/* The listener is closed by preview_server_stop_accepting() after the
	 * join: its number stays valid for a handover until then. */
	accept_loop(s->listen_fd, s->accept_stop_fd, accept_one, s);
	return NULL;
}

/*
 * The preview listener the kilnd before this one handed over (--upgrade),
 * when it listens on the address asked for now; -1 (it is closed) when
 * there is none or it listens elsewhere (the options changed).
 */
static int handed_listener(struct kilnd *d, const struct sockaddr_in *want)
{
	struct sockaddr_in got;
	socklen_t len = sizeof(got);
	int fd = d->cfg.preview_fd;

	if (fd < 0)
		return -1;
	d->cfg.preview_fd = -1;
	if (getsockname(fd, (struct sockaddr *)&got, &len) == 0 && len == sizeof(got) &&
	    got.sin_family == AF_INET && got.sin_port == want->sin_port &&
	    got.sin_addr.s_addr == want->sin_addr.s_addr)
		return fd;
	kilnd_log("--upgrade: the previous kilnd's preview listener is not on %s:%u; listening anew",
		  d->cfg.preview_addr, (unsigned)d->cfg.preview_port);
	close(fd);
	return -1;
}

int preview_server_listen_fd(const struct preview_server *s)
{
	return s ? s->listen_fd : -1;
}

int preview_server_start(struct kilnd *d, struct preview_server **out, struct err *e)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(d->cfg.preview_port) };
	struct preview_server *s = calloc(1, sizeof(*s));
	pthread_condattr_t ca;
	int one = 1, code;

	*out = NULL;
	if (!s) {
		err_set(e, EINVAL, "--preview-listen: out of memory");
		return -1;
	}
	s->d = d;
	preview_caps_init(&s->caps, d->cfg.preview_max_per_client, d->cfg.preview_max_per_sandbox);
	pthread_mutex_init(&s->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* preview_server_drain */
	pthread_cond_init(&s->idle, &ca);
	pthread_condattr_destroy(&ca);
	s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	s->accept_stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	s->listen_fd = -1;
	if (s->stop_fd < 0 || s->accept_stop_fd < 0) {
		err_set(e, errno,
			"--preview-listen: cannot make an eventfd: %s (too many open files? raise the limit)",
			strerror(errno));
		goto fail;
	}
	if (inet_pton(AF_INET, d->cfg.preview_addr, &a.sin_addr) != 1) {
		err_set(e, EINVAL, "--preview-listen '%s': not an IPv4 address",
			d->cfg.preview_addr);
		goto fail;
	}
	s->listen_fd = handed_listener(d, &a);
	if (s->listen_fd >= 0)
		goto listening;
	s->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->listen_fd < 0) {
		err_set(e, errno, "--preview-listen: socket: %s", strerror(errno));
		goto fail;
	}
	/* A restarted kilnd takes its port back at once despite TIME_WAIT. */
	setsockopt(s->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s->listen_fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(s->listen_fd, 128) < 0) {
		code = errno;
		err_set(e, code, "--preview-listen %s:%u: %s%s", d->cfg.preview_addr,
			(unsigned)d->cfg.preview_port, strerror(code),
			code == EADDRINUSE              ? " (pick another port)"
				: code == EACCES        ? " (ports below 1024 need privilege)"
				: code == EADDRNOTAVAIL ? " (not an address of this host)"
							: "");
		goto fail;
	}
listening:
	code = pthread_create(&s->listener, NULL, listener_main, s);
	if (code) {
		err_set(e, code, "--preview-listen: cannot start a thread: %s", strerror(code));
		goto fail;
	}
	s->listening = true;
	*out = s;
	return 0;
fail:
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->stop_fd >= 0)
		close(s->stop_fd);
	if (s->accept_stop_fd >= 0)
		close(s->accept_stop_fd);
	pthread_cond_destroy(&s->idle);
	pthread_mutex_destroy(&s->mu);
	free(s);
	return -1;
}

void preview_server_stop_accepting(struct preview_server *s)
{
	uint64_t one = 1;

	if (!s || !s->listening)
		return;
	if (write(s->accept_stop_fd, &one, sizeof(one)) < 0)
		kilnd_log("preview listener: cannot signal its thread: %s", strerror(errno));
	pthread_join(s->listener, NULL);
	s->listening = false;
	close(s->listen_fd);
	s->listen_fd = -1;
}

void preview_server_drain(struct preview_server *s, int ms)
{
	struct timespec until;

	if (!s)
		return;
	mono_deadline_in(&until, ms); /* idle waits on CLOCK_MONOTONIC */
	pthread_mutex_lock(&s->mu);
	while (s->caps.active > 0 && pthread_cond_timedwait(&s->idle, &s->mu, &until) == 0) {
	}
	pthread_mutex_unlock(&s->mu);
}

void preview_server_quiesce(struct preview_server *s)
{
	uint64_t one = 1;

	if (!s)
		return;
	preview_server_stop_accepting(s);
	if (write(s->stop_fd, &one, sizeof(one)) < 0)
		kilnd_log("preview listener: cannot signal its threads: %s", strerror(errno));
}

void preview_server_free(struct preview_server *s)
{
	if (!s)
		return;
	preview_server_quiesce(s);
	/* Each thread ends within its timeouts: the head's, the guest connect's, a wake's. */
	pthread_mutex_lock(&s->mu);
	while (s->caps.active)
		pthread_cond_wait(&s->idle, &s->mu);
	pthread_mutex_unlock(&s->mu);
	close(s->stop_fd);
	close(s->accept_stop_fd);
	pthread_cond_destroy(&s->idle);
	pthread_mutex_destroy(&s->mu);
	free(s);
}
