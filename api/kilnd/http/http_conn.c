/* http_conn: see http_conn.h. The server's start and stop live here too. */
#include "api/kilnd/http/http_conn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "api/kilnd/http/http_io.h"
#include "lib/base/accept_loop.h"
#include "lib/base/mono.h"

/* conn_linger: how long, and how much, to drop before closing. */
#define LINGER_MS 1000
#define LINGER_MAX (1u << 20)

enum http_admit http_admit(unsigned serving, const unsigned refusing[2],
			   const struct http_admit_peer *p, unsigned uid_max, struct api_err *e)
{
	unsigned limit = p->privileged ? HTTP_CONNECTION_LIMIT
				       : HTTP_CONNECTION_LIMIT - HTTP_CONNECTION_RESERVE;
	bool uid_full = !p->privileged && uid_max && p->uid_serving >= uid_max;

	if (p->allowed && serving < limit && !uid_full)
		return HTTP_ADMIT_SERVE;
	if (refusing[p->allowed] >= HTTP_REFUSING_MAX)
		return HTTP_ADMIT_DROP;
	if (!p->allowed)
		api_err_set(e, API_E_FORBIDDEN,
			    "uid %u (gid %u) may not use this kilnd; it allows root, its own uid, --allow-uid and "
			    "--allow-gid",
			    (unsigned)p->uid, (unsigned)p->gid);
	else if (uid_full)
		api_err_set(e, API_E_TOO_MANY_CONNECTIONS,
			    "uid %u holds %u connections to kilnd already, its most "
			    "(--max-connections-per-uid %u); close idle ones or retry",
			    (unsigned)p->uid, p->uid_serving, uid_max);
	else
		api_err_set(e, API_E_TOO_MANY_CONNECTIONS,
			    "kilnd serves %u connections already (at most %d, the last %d kept for root and "
			    "kilnd's own uid); close idle ones or retry",
			    serving, HTTP_CONNECTION_LIMIT, HTTP_CONNECTION_RESERVE);
	return HTTP_ADMIT_REFUSE;
}

static ssize_t fill(struct http_conn *c, int64_t deadline_ms, int stop_fd)
{
	if (c->start == c->end)
		c->start = c->end = c->pin;
	if (c->end == sizeof(c->buf)) {
		if (c->start == c->pin)
			return -ENOBUFS;
		memmove(c->buf + c->pin, c->buf + c->start, c->end - c->start);
		c->end -= c->start - c->pin;
		c->start = c->pin;
	}
	for (;;) {
		ssize_t n = recv(c->fd, c->buf + c->end, sizeof(c->buf) - c->end, 0);
		int r;

		if (n >= 0) {
			c->end += (size_t)n;
			return n;
		}
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		r = http_io_wait(c->fd, POLLIN, deadline_ms, stop_fd);
		if (r < 0)
			return r;
	}
}

ssize_t conn_fill(struct http_conn *c, int64_t deadline_ms)
{
	return fill(c, deadline_ms, -1);
}

ssize_t conn_fill_head(struct http_conn *c, int64_t deadline_ms)
{
	/* http_quiesce's byte stays in the pipe: readable from then on. */
	return fill(c, deadline_ms, c->srv->wake[0]);
}

int conn_send(struct http_conn *c, const void *p, size_t n)
{
	return http_io_send(c->fd, p, n, c->srv->timeout_ms, -1);
}

int conn_sendv(struct http_conn *c, struct iovec *iov, size_t n)
{
	return http_io_sendv(c->fd, iov, n, c->srv->timeout_ms, -1);
}

void conn_linger(struct http_conn *c)
{
	int64_t deadline = mono_ms() + LINGER_MS;
	size_t dropped = 0;

	shutdown(c->fd, SHUT_WR);
	while (dropped < LINGER_MAX) {
		c->start = c->end = c->pin;
		ssize_t n = conn_fill(c, deadline);

		if (n <= 0)
			break;
		dropped += (size_t)n;
	}
	c->start = c->end = c->pin;
}

/* ---- the connection list and threads ---- */

static void conn_end(struct http_conn *c)
{
	struct http_server *s = c->srv;

	pthread_mutex_lock(&s->mu);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	if (c->refuse)
		s->refusing[c->refuse_kind]--;
	else
		s->serving--;
	pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->mu);
	close(c->fd);
	free(c);
}

static void *conn_thread(void *arg)
{
	struct http_conn *c = arg;

	if (c->refuse)
		http_conn_refuse(c);
	else
		http_conn_serve(c);
	conn_end(c);
	return NULL;
}

/* Decide and start a thread for the accepted fd (closed on any failure). */
static void conn_admit(struct http_server *s, int fd)
{
	struct http_conn *c = calloc(1, sizeof(*c));
	struct http_admit_peer p = { 0 };
	pthread_attr_t attr;
	pthread_t th;
	enum http_admit a;
	int err;

	if (!c || peer_of(fd, &c->peer) < 0) {
		free(c);
		close(fd);
		return;
	}
	c->srv = s;
	c->fd = fd;
	p.uid = c->peer.uid;
	p.gid = c->peer.gid;
	p.allowed = s->svc->peer_allowed(s->svc, &c->peer);
	p.privileged = c->peer.uid == 0 || c->peer.uid == getuid();
	pthread_mutex_lock(&s->mu);
	/* At most HTTP_CONNECTION_LIMIT served: a short walk. */
	for (struct http_conn *o = s->conns; o && !p.privileged; o = o->next)
		p.uid_serving += !o->refuse && o->peer.uid == p.uid;
	a = s->stopping ? HTTP_ADMIT_DROP
			: http_admit(s->serving, s->refusing, &p, s->svc->uid_max, &c->err);
	if (a != HTTP_ADMIT_DROP) {
		c->refuse = a == HTTP_ADMIT_REFUSE;
		c->refuse_kind = p.allowed;
		if (c->refuse)
			s->refusing[c->refuse_kind]++;
		else
			s->serving++;
		c->next = s->conns;
		if (s->conns)
			s->conns->prev = c;
		s->conns = c;
	}
	pthread_mutex_unlock(&s->mu);
	if (a == HTTP_ADMIT_DROP) {
		free(c);
		close(fd);
		return;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&th, &attr, conn_thread, c);
	pthread_attr_destroy(&attr);
	if (err)
		conn_end(c);
}

/* One connection off the listen queue (accept_loop's on_ready). */
static int accept_one(void *arg)
{
	struct http_server *s = arg;
	int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return errno;
	conn_admit(s, fd);
	return 0;
}

static void *accept_thread(void *arg)
{
	struct http_server *s = arg;

	/* http_quiesce makes wake[0] readable: the loop ends. */
	accept_loop(s->listen_fd, s->wake[0], accept_one, s);
	return NULL;
}

struct http_server *http_start(const struct http_service *svc, int listen_fd, struct err *e)
{
	struct http_server *s;
	int code;

	/* Every route answers within its limit: a mistake in the table is
	 * found at start. */
	for (size_t i = 0; i < svc->nroutes; i++) {
		const struct http_route *rt = &svc->routes[i];

		if (!rt->handler || (rt->body != BODY_NONE && rt->limit >= svc->nlimits)) {
			err_set(e, EINVAL, "route %s %s: no handler, or a limit the service lacks",
				rt->method, rt->pattern);
			return NULL;
		}
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		err_set(e, EINVAL, "out of memory starting the HTTP server");
		return NULL;
	}
	s->svc = svc;
	s->listen_fd = listen_fd;
	s->timeout_ms = svc->timeout_ms;
	if (pipe2(s->wake, O_CLOEXEC) < 0) {
		err_set(e, errno, "cannot start the HTTP server: pipe: %s", strerror(errno));
		free(s);
		return NULL;
	}
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->idle, NULL);
	code = pthread_create(&s->accept_thread, NULL, accept_thread, s);
	if (code) {
		err_set(e, code, "cannot start the HTTP server's thread: %s", strerror(code));
		close(s->wake[0]);
		close(s->wake[1]);
		free(s);
		return NULL;
	}
	s->accepting = true;
	return s;
}

void http_quiesce(struct http_server *s)
{
	if (!s->accepting)
		return;
	(void)!write(s->wake[1], "", 1);
	pthread_join(s->accept_thread, NULL);
	s->accepting = false;
}

bool http_drain(struct http_server *s, int ms)
{
	struct timespec dl;
	bool idle;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += ms / 1000;
	dl.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&s->mu);
	while (s->serving && pthread_cond_timedwait(&s->idle, &s->mu, &dl) == 0)
		;
	idle = s->serving == 0;
	pthread_mutex_unlock(&s->mu);
	return idle;
}

void http_stop(struct http_server *s)
{
	http_quiesce(s);
	pthread_mutex_lock(&s->mu);
	s->stopping = true;
	/* Every wait in poll() ends; handlers see kilnd shutting down. */
	for (struct http_conn *c = s->conns; c; c = c->next)
		shutdown(c->fd, SHUT_RDWR);
	while (s->serving || s->refusing[0] || s->refusing[1])
		pthread_cond_wait(&s->idle, &s->mu);
	pthread_mutex_unlock(&s->mu);
	close(s->wake[0]);
	close(s->wake[1]);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->idle);
	free(s);
}
