/* A client share's relay between kiln-vmm and the API client; see share_relay.h. */
#include "api/kilnd/supervision/share_relay.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api/kilnd/core/share_line.h"
#include "api/kilnd/core/log_limit.h"
#include "api/kilnd/registry/sandbox_impl.h"
#include "api/kilnd/supervision/sandbox_jail.h"
#include "lib/base/mono.h"
#include "lib/base/thread_start.h"

/* What may wait to be read by one end: a few lines. */
#define RELAY_OUT_MAX (4 * SHARE_LINE_MAX)
/* Longest wait in a poll: the thread and share_relay_serve look at
 * kilnd shutting down this often. */
#define RELAY_POLL_MS 1000
/* Bad lines from one relay's ends: one log line per period. */
#define RELAY_LOG_PERIOD_MS 10000

/* One end of the relay (kiln-vmm's connection, the client's): the
 * thread's alone. */
struct end {
	int fd; /* -1: none */
	char *in;
	size_t in_n;
	bool skipping; /* a line too long: drop bytes up to its '\n' */
	char *out;
	size_t out_n;
};

struct share_relay {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int refs;         /* mu: the sandbox's and a claim's */
	bool claimed;     /* mu: a client holds the share */
	bool stopping;    /* mu: share_relays_end asked the thread to end */
	bool done;        /* mu: the thread ended */
	int client;       /* mu: the client's socket, handed to the thread; -1: none */
	bool client_kick; /* mu: share_relay_serve gives it up (kilnd stops) */
	const char *extra;
	size_t extra_n; /* mu: bytes the client sent behind its request */
	int wake;       /* eventfd: a client came or the relay stops */
	int lfd;        /* vm/share-N.sock, listening */
	pthread_t thread;
	struct kilnd *d;
	size_t index;
	char id[SANDBOX_ID_LEN + 1];
	char sock[KILND_SOCKET_MAX];
	/* the thread's */
	struct end vm, cl;
	struct share_req pending; /* pending.id 0: none */
	struct log_limit ll;
};

int share_relay_path(const struct sandbox *sb, size_t i, char *buf, size_t cap)
{
	return sandbox_pathf(buf, cap, "%s/vm/share-%zu.sock", sb->dir, i);
}

static void say(struct share_relay *r, const char *who, const char *why, bool answered)
{
	unsigned long held = 0;

	if (log_limit_pass(&r->ll, mono_ms(), RELAY_LOG_PERIOD_MS, &held))
		kilnd_log("sandbox %s: shares[%zu]: a bad line from %s (%s); %s%s", r->id, r->index,
			  who, why, answered ? "answered EIO" : "dropped",
			  held ? " (more such lines not logged)" : "");
}

static void end_drop(struct end *e)
{
	e->fd = -1;
	e->in_n = e->out_n = 0;
	e->skipping = false;
}

/* Queued bytes out, as many as the socket takes now. false: the end is gone. */
static bool end_flush(struct end *e)
{
	while (e->out_n) {
		ssize_t n = send(e->fd, e->out, e->out_n, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return true;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		memmove(e->out, e->out + n, e->out_n - (size_t)n);
		e->out_n -= (size_t)n;
	}
	return true;
}

/* line and its '\n' queued and flushed. false: the end is gone (or does
 * not read what it is sent). No end: nothing to do. */
static bool end_put(struct end *e, const char *line)
{
	size_t n = line ? strlen(line) : 0;

	if (e->fd < 0)
		return true;
	if (!line || e->out_n + n + 1 > RELAY_OUT_MAX)
		return false;
	memcpy(e->out + e->out_n, line, n);
	e->out[e->out_n + n] = '\n';
	e->out_n += n + 1;
	return end_flush(e);
}

static void drop_vm(struct share_relay *r)
{
	if (r->vm.fd >= 0)
		close(r->vm.fd);
	end_drop(&r->vm);
	r->pending.id = 0; /* a reply to it finds no request */
}

/* The client's connection given back (the HTTP server closes it). */
static void drop_client(struct share_relay *r)
{
	char *eio;

	if (r->cl.fd < 0)
		return;
	end_drop(&r->cl);
	if (r->pending.id) {
		eio = share_reply_eio(r->pending.id);
		if (!end_put(&r->vm, eio))
			drop_vm(r);
		free(eio);
		r->pending.id = 0;
	}
	pthread_mutex_lock(&r->mu);
	r->client = -1;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

static void to_vm_eio(struct share_relay *r, uint32_t id)
{
	char *eio = share_reply_eio(id);

	if (!end_put(&r->vm, eio))
		drop_vm(r);
	free(eio);
}

/* A request line from kiln-vmm. */
static void vm_line(struct share_relay *r, const char *line, size_t n)
{
	char why[SHARE_WHY_MAX], *canon;
	struct share_req req;

	if (share_request_check(line, n, &req, &canon, why)) {
		say(r, "kiln-vmm", why, req.id != 0);
		if (req.id)
			to_vm_eio(r, req.id);
		return;
	}
	/* One outstanding at a time: a new one replaces what kiln-vmm gave up on. */
	if (r->cl.fd < 0) {
		to_vm_eio(r, req.id);
	} else if (end_put(&r->cl, canon)) {
		r->pending = req;
	} else {
		drop_client(r);
		to_vm_eio(r, req.id);
	}
	free(canon);
}

static void client_error(struct share_relay *r, const char *why)
{
	char *line = share_client_error(why);

	if (!end_put(&r->cl, line))
		drop_client(r);
	free(line);
}

/* A reply line from the client. */
static void client_line(struct share_relay *r, const char *line, size_t n)
{
	char why[SHARE_WHY_MAX], msg[SHARE_WHY_MAX + 64], *canon;

	if (!r->pending.id) {
		client_error(r, "no request is outstanding (kiln-vmm gave up on it: too late)");
		return;
	}
	switch (share_reply_check(line, n, &r->pending, &canon, why)) {
	case 0:
		break;
	case -2:
		/* Late (kiln-vmm gave up on it) or made up: the request
		 * outstanding still waits for its own answer. */
		snprintf(msg, sizeof(msg), "reply refused: %s (too late?)", why);
		client_error(r, msg);
		return;
	default:
		snprintf(msg, sizeof(msg), "reply refused: %s; the guest gets EIO", why);
		to_vm_eio(r, r->pending.id);
		r->pending.id = 0;
		client_error(r, msg);
		return;
	}
	r->pending.id = 0;
	if (!end_put(&r->vm, canon))
		drop_vm(r);
	free(canon);
}

/* The whole lines in e->in handled; a line longer than SHARE_LINE_MAX is
 * refused whole. */
static void end_lines(struct share_relay *r, struct end *e, bool vm)
{
	size_t at = 0;

	for (;;) {
		char *nl = memchr(e->in + at, '\n', e->in_n - at);
		size_t len;

		if (!nl)
			break;
		len = (size_t)(nl - (e->in + at));
		if (e->skipping)
			e->skipping = false;
		else if (vm)
			vm_line(r, e->in + at, len);
		else
			client_line(r, e->in + at, len);
		at += len + 1;
		if (e->fd < 0) /* dropped while handling it */
			return;
	}
	memmove(e->in, e->in + at, e->in_n - at);
	e->in_n -= at;
	if (e->in_n == SHARE_LINE_MAX) {
		if (!e->skipping) {
			if (vm)
				say(r, "kiln-vmm", "a line longer than 262144 bytes", false);
			else
				client_error(r, "a line longer than 262144 bytes: refused");
		}
		e->skipping = true;
		e->in_n = 0;
	}
}

/* Bytes from one end into its lines. false: the end is gone (EOF or an error). */
static bool end_read(struct share_relay *r, struct end *e, bool vm)
{
	ssize_t got = recv(e->fd, e->in + e->in_n, SHARE_LINE_MAX - e->in_n, MSG_DONTWAIT);

	if (got < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
	if (got == 0)
		return false;
	e->in_n += (size_t)got;
	end_lines(r, e, vm);
	return true;
}

/* A client handed over (share_relay_serve), or one to give back. */
static void client_sync(struct share_relay *r)
{
	int fd;
	bool kick;

	pthread_mutex_lock(&r->mu);
	fd = r->client;
	kick = r->client_kick;
	if (fd >= 0 && r->cl.fd < 0 && !kick) {
		size_t n = r->extra_n < SHARE_LINE_MAX ? r->extra_n : SHARE_LINE_MAX;

		r->cl.fd = fd;
		memcpy(r->cl.in, r->extra, n);
		r->cl.in_n = n;
		r->extra_n = 0;
	}
	pthread_mutex_unlock(&r->mu);
	if (kick)
		drop_client(r);
	else if (r->cl.in_n)
		end_lines(r, &r->cl, false);
}

static void accept_vm(struct share_relay *r)
{
	int fd = accept4(r->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return;
	/* kiln-vmm reconnects after a timeout: the old connection is done. */
	drop_vm(r);
	r->vm.fd = fd;
}

/* Only share_relays_end stops a relay: while kilnd shuts down, its VMMs
 * (stopped first, or left running for the next kilnd) still get their
 * EIO answers at once rather than waiting out the timeout. */
static bool stopping(struct share_relay *r)
{
	bool s;

	pthread_mutex_lock(&r->mu);
	s = r->stopping;
	pthread_mutex_unlock(&r->mu);
	return s;
}

static void *relay_main(void *arg)
{
	struct share_relay *r = arg;

	while (!stopping(r)) {
		struct pollfd p[4];
		uint64_t v;

		client_sync(r);
		p[0] = (struct pollfd){ .fd = r->wake, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = r->lfd, .events = POLLIN };
		p[2] = (struct pollfd){ .fd = r->vm.fd,
					.events = POLLIN | (r->vm.out_n ? POLLOUT : 0) };
		p[3] = (struct pollfd){ .fd = r->cl.fd,
					.events = POLLIN | (r->cl.out_n ? POLLOUT : 0) };
		if (poll(p, 4, RELAY_POLL_MS) < 0 && errno != EINTR)
			break;
		if (p[0].revents & POLLIN)
			(void)!read(r->wake, &v, sizeof(v));
		if (p[1].revents & POLLIN)
			accept_vm(r);
		if (r->vm.fd >= 0 && p[2].fd == r->vm.fd) {
			if ((p[2].revents & POLLOUT) && !end_flush(&r->vm))
				drop_vm(r);
			else if ((p[2].revents & (POLLIN | POLLHUP | POLLERR)) &&
				 !end_read(r, &r->vm, true))
				drop_vm(r);
		}
		if (r->cl.fd >= 0 && p[3].fd == r->cl.fd) {
			if ((p[3].revents & POLLOUT) && !end_flush(&r->cl))
				drop_client(r);
			else if ((p[3].revents & (POLLIN | POLLHUP | POLLERR)) &&
				 !end_read(r, &r->cl, false))
				drop_client(r);
		}
	}
	drop_client(r);
	drop_vm(r);
	pthread_mutex_lock(&r->mu);
	r->done = true;
	r->client = -1;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

static void relay_put(struct share_relay *r)
{
	bool last;

	pthread_mutex_lock(&r->mu);
	last = --r->refs == 0;
	pthread_mutex_unlock(&r->mu);
	if (!last)
		return;
	if (r->wake >= 0)
		close(r->wake);
	free(r->vm.in);
	free(r->vm.out);
	free(r->cl.in);
	free(r->cl.out);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

/* The thread stopped and joined, the socket gone; the sandbox's reference dropped. */
static void relay_end(struct share_relay *r)
{
	uint64_t one = 1;

	pthread_mutex_lock(&r->mu);
	r->stopping = true;
	pthread_mutex_unlock(&r->mu);
	(void)!write(r->wake, &one, sizeof(one));
	pthread_join(r->thread, NULL);
	close(r->lfd);
	unlink(r->sock);
	relay_put(r);
}

static struct share_relay *relay_new(struct sandbox *sb, size_t i, struct api_err *e)
{
	struct share_relay *r = calloc(1, sizeof(*r));
	char what[32];

	if (!r) {
		api_err_set(e, API_E_INTERNAL, "sandbox %s: shares[%zu]: out of memory", sb->rec.id,
			    i);
		return NULL;
	}
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	r->refs = 1;
	r->client = -1;
	r->wake = r->lfd = -1;
	r->vm.fd = r->cl.fd = -1;
	r->d = sb->d;
	r->index = i;
	snprintf(r->id, sizeof(r->id), "%s", sb->rec.id);
	snprintf(what, sizeof(what), "shares[%zu]", i);
	r->vm.in = malloc(SHARE_LINE_MAX);
	r->vm.out = malloc(RELAY_OUT_MAX);
	r->cl.in = malloc(SHARE_LINE_MAX);
	r->cl.out = malloc(RELAY_OUT_MAX);
	r->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!r->vm.in || !r->vm.out || !r->cl.in || !r->cl.out || r->wake < 0) {
		api_err_set(e, API_E_INTERNAL, "sandbox %s: %s: out of memory or descriptors",
			    sb->rec.id, what);
		relay_put(r);
		return NULL;
	}
	if (share_relay_path(sb, i, r->sock, sizeof(r->sock))) {
		api_err_set(e, API_E_SPAWN_FAILED,
			    "sandbox %s: %s: the socket path is too long (a shorter --state-dir)",
			    sb->rec.id, what);
		relay_put(r);
		return NULL;
	}
	r->lfd = sandbox_jail_listen(sb, r->sock, what, e);
	if (r->lfd < 0) {
		relay_put(r);
		return NULL;
	}
	if (thread_start(&r->thread, relay_main, r)) {
		api_err_set(e, API_E_INTERNAL, "sandbox %s: %s: no thread for its relay",
			    sb->rec.id, what);
		close(r->lfd);
		unlink(r->sock);
		relay_put(r);
		return NULL;
	}
	return r;
}

int share_relays_start(struct sandbox *sb, struct api_err *e)
{
	struct share_relay *made[SPEC_MAX_SHARES] = { 0 };
	const struct sandbox_spec *s = &sb->rec.spec; /* immutable after creation */

	share_relays_end(sb);
	for (size_t i = 0; i < s->nshares; i++) {
		if (!s->shares[i].client)
			continue;
		made[i] = relay_new(sb, i, e);
		if (!made[i]) {
			for (size_t j = 0; j < i; j++)
				if (made[j])
					relay_end(made[j]);
			return -1;
		}
	}
	kilnd_lock(sb->d);
	memcpy(sb->relays, made, sizeof(made));
	kilnd_unlock(sb->d);
	return 0;
}

void share_relays_end(struct sandbox *sb)
{
	struct share_relay *had[SPEC_MAX_SHARES];

	kilnd_lock(sb->d);
	memcpy(had, sb->relays, sizeof(had));
	memset(sb->relays, 0, sizeof(sb->relays));
	kilnd_unlock(sb->d);
	for (size_t i = 0; i < SPEC_MAX_SHARES; i++)
		if (had[i])
			relay_end(had[i]);
}

int share_relay_claim(struct sandbox *sb, size_t i, struct share_relay **out, struct api_err *e)
{
	const struct sandbox_spec *s = &sb->rec.spec;
	struct share_relay *r;
	enum sandbox_state st;

	*out = NULL;
	if (i >= s->nshares) {
		api_err_set(e, API_E_NOT_FOUND, "sandbox %s has no shares[%zu] (it has %zu shares)",
			    sb->rec.id, i, s->nshares);
		return -1;
	}
	if (!s->shares[i].client) {
		api_err_set(e, API_E_BAD_FIELD,
			    "sandbox %s: shares[%zu] (%s) is a host directory, not a client share (\"client\": true)",
			    sb->rec.id, i, s->shares[i].guest_path);
		return -1;
	}
	kilnd_lock(sb->d);
	r = sb->relays[i];
	st = sb->rec.state;
	if (r) {
		pthread_mutex_lock(&r->mu);
		if (r->claimed) {
			pthread_mutex_unlock(&r->mu);
			kilnd_unlock(sb->d);
			api_err_set(e, API_E_BUSY,
				    "sandbox %s: shares[%zu] is served by another client already (one at a time; close that one first)",
				    sb->rec.id, i);
			return -1;
		}
		r->claimed = true;
		r->refs++;
		pthread_mutex_unlock(&r->mu);
	}
	kilnd_unlock(sb->d);
	if (!r) {
		api_err_set(e, API_E_WRONG_STATE,
			    "sandbox %s is %s: its shares are served while it runs (start or wake it first)",
			    sb->rec.id, sandbox_state_name(st));
		return -1;
	}
	*out = r;
	return 0;
}

void share_relay_serve(struct share_relay *r, const char *extra, size_t extra_n, int sock)
{
	uint64_t one = 1;

	pthread_mutex_lock(&r->mu);
	if (r->done) {
		pthread_mutex_unlock(&r->mu);
		return;
	}
	r->client = sock;
	r->extra = extra;
	r->extra_n = extra_n;
	pthread_mutex_unlock(&r->mu);
	(void)!write(r->wake, &one, sizeof(one));
	pthread_mutex_lock(&r->mu);
	while (r->client == sock) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += RELAY_POLL_MS / 1000;
		pthread_cond_timedwait(&r->cv, &r->mu, &ts);
		if (atomic_load(&r->d->shutting_down) && !r->client_kick) {
			r->client_kick = true;
			(void)!write(r->wake, &one, sizeof(one));
		}
	}
	r->client_kick = false;
	pthread_mutex_unlock(&r->mu);
}

void share_relay_release(struct share_relay *r)
{
	pthread_mutex_lock(&r->mu);
	r->claimed = false;
	pthread_mutex_unlock(&r->mu);
	relay_put(r);
}
