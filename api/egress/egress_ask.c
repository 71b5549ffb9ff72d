/* egress_ask: see egress_ask.h. */
#include "api/egress/egress_ask.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/base/json.h"
#include "lib/base/json_text.h"
#include "lib/base/mono.h"
#include "lib/base/thread_start.h"

struct waiter {
	uint64_t id;  /* 0: free */
	unsigned gen; /* the attach it was asked under */
	struct egress_answer *a;
};

struct egress_ask {
	int fd;
	pthread_mutex_t write_mu;
	bool cut;           /* write_mu: a line was cut short, the stream is mid-line */
	pthread_mutex_t mu; /* everything below */
	pthread_cond_t cv;  /* an answer came, or a detach */
	bool attached;
	unsigned gen; /* attaches so far */
	struct egress_attach at;
	uint64_t next_id;
	struct waiter w[EGRESS_ASK_WAITING];
};

/* An answer for a question waiting: handed over, or dropped. mu held. */
static void deliver(struct egress_ask *k, struct egress_answer *a)
{
	for (size_t i = 0; i < EGRESS_ASK_WAITING; i++)
		if (k->w[i].id == a->id && !k->w[i].a) {
			k->w[i].a = a;
			pthread_cond_broadcast(&k->cv);
			return;
		}
	free(a);
}

static void take_line(struct egress_ask *k, const char *line, size_t n)
{
	struct egress_answer *a = malloc(sizeof(*a));
	struct err e = { { 0 } };
	enum egress_control kind;
	struct egress_attach at;
	json_error_t je;
	json_t *j = json_strict_loadb(line, n, &je);

	if (!a || !j || egress_control_parse(j, &kind, a, &at, &e)) {
		fprintf(stderr, "kiln-egress: --policy-fd: a line dropped: %s\n",
			!a           ? "out of memory"
				: !j ? je.text
				     : e.msg);
		free(a);
		json_decref(j);
		return;
	}
	json_decref(j);
	pthread_mutex_lock(&k->mu);
	switch (kind) {
	case EGRESS_CONTROL_ATTACH:
		k->attached = true;
		k->gen++;
		k->at = at;
		break;
	case EGRESS_CONTROL_DETACH:
		k->attached = false;
		pthread_cond_broadcast(&k->cv);
		break;
	case EGRESS_CONTROL_ANSWER:
		deliver(k, a);
		a = NULL;
		break;
	}
	pthread_mutex_unlock(&k->mu);
	free(a);
}

static void *reader(void *arg)
{
	struct egress_ask *k = arg;
	char *buf = malloc(EGRESS_DECISION_LINE_MAX);
	size_t n = 0;
	bool skipping = false; /* the rest of a line too long */

	while (buf) {
		struct pollfd p = { .fd = k->fd, .events = POLLIN };
		ssize_t r;
		char *nl;

		if (poll(&p, 1, -1) < 0 && errno != EINTR)
			break;
		r = read(k->fd, buf + n, EGRESS_DECISION_LINE_MAX - n);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
		while ((nl = memchr(buf, '\n', n))) {
			size_t len = (size_t)(nl - buf);

			if (!skipping)
				take_line(k, buf, len);
			skipping = false;
			memmove(buf, nl + 1, n - len - 1);
			n -= len + 1;
		}
		if (n == EGRESS_DECISION_LINE_MAX) {
			if (!skipping)
				fprintf(stderr,
					"kiln-egress: --policy-fd: a line over %d bytes dropped\n",
					EGRESS_DECISION_LINE_MAX);
			skipping = true;
			n = 0;
		}
	}
	/* kilnd is gone: nobody will answer again. */
	pthread_mutex_lock(&k->mu);
	k->attached = false;
	k->gen++;
	pthread_cond_broadcast(&k->cv);
	pthread_mutex_unlock(&k->mu);
	free(buf);
	return NULL;
}

struct egress_ask *egress_ask_start(int fd, struct err *e)
{
	struct egress_ask *k = calloc(1, sizeof(*k));
	pthread_condattr_t ca;
	pthread_t t;
	int type = 0;
	socklen_t len = sizeof(type);

	if (!k) {
		err_set(e, ENOMEM, "kiln-egress: --policy-fd: out of memory");
		return NULL;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_STREAM) {
		err_set(e, EINVAL,
			"kiln-egress: --policy-fd %d: not a stream socket: pass kilnd's socket pair's end",
			fd);
		free(k);
		return NULL;
	}
	k->fd = fd;
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	pthread_mutex_init(&k->mu, NULL);
	pthread_mutex_init(&k->write_mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&k->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (thread_start(&t, reader, k) != 0) {
		err_set(e, EAGAIN, "kiln-egress: --policy-fd: cannot start its thread");
		free(k);
		return NULL;
	}
	pthread_detach(t);
	return k;
}

uint64_t egress_ask_id(struct egress_ask *k)
{
	uint64_t id;

	if (!k)
		return 0;
	pthread_mutex_lock(&k->mu);
	id = ++k->next_id;
	pthread_mutex_unlock(&k->mu);
	return id;
}

bool egress_ask_attached(struct egress_ask *k)
{
	bool at;

	if (!k)
		return false;
	pthread_mutex_lock(&k->mu);
	at = k->attached;
	pthread_mutex_unlock(&k->mu);
	return at;
}

/* s[0..n) before deadline: how many bytes went (n, or fewer when it
 * passed or the socket failed). write_mu held. */
static size_t send_bytes(struct egress_ask *k, const char *s, size_t n, int64_t deadline)
{
	size_t sent = 0;

	while (sent < n) {
		struct pollfd p = { .fd = k->fd, .events = POLLOUT };
		int64_t left = deadline - mono_ms();
		ssize_t w;

		if (left <= 0 || (poll(&p, 1, (int)left) < 0 && errno != EINTR))
			break;
		w = send(k->fd, s + sent, n - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (w < 0)
			break;
		sent += (size_t)w;
	}
	return sent;
}

/* The line, whole, before deadline: 0 or -1. A line cut short leaves
 * the stream mid-line: the next one first ends it ("\n", so kilnd drops
 * the cut one alone), or it would be glued to it and dropped too. */
static int send_line(struct egress_ask *k, const char *s, size_t n, int64_t deadline)
{
	size_t sent;
	int rc = -1;

	pthread_mutex_lock(&k->write_mu);
	if (k->cut && send_bytes(k, "\n", 1, deadline) != 1)
		goto out;
	k->cut = false;
	sent = send_bytes(k, s, n, deadline);
	k->cut = sent > 0 && sent < n;
	rc = sent == n ? 0 : -1;
out:
	pthread_mutex_unlock(&k->write_mu);
	return rc;
}

void egress_ask(struct egress_ask *k, json_t *q, uint64_t id, struct egress_asked *out)
{
	struct waiter *w = NULL;
	struct timespec dl;
	char *text = NULL;
	unsigned gen;
	int64_t deadline;

	*out = (struct egress_asked){ .how = EGRESS_ASKED_NONE };
	if (!k || !q)
		goto done;
	pthread_mutex_lock(&k->mu);
	if (!k->attached) {
		pthread_mutex_unlock(&k->mu);
		goto done;
	}
	out->how = EGRESS_ASKED_TIMEOUT;
	out->deadline_ms = k->at.deadline_ms;
	out->timeout_rules = k->at.on_timeout_rules;
	gen = k->gen;
	for (size_t i = 0; i < EGRESS_ASK_WAITING && !w; i++)
		if (!k->w[i].id)
			w = &k->w[i];
	if (w)
		*w = (struct waiter){ .id = id, .gen = gen };
	pthread_mutex_unlock(&k->mu);
	if (!w)
		goto done;
	deadline = mono_ms() + out->deadline_ms;
	mono_deadline_in(&dl, out->deadline_ms);
	text = json_text(q, JSON_COMPACT);
	if (text) {
		size_t n = strlen(text);

		text[n] = '\n';
		if (send_line(k, text, n + 1, deadline) < 0)
			fprintf(stderr,
				"kiln-egress: --policy-fd: question %llu not sent in time\n",
				(unsigned long long)id);
	}
	pthread_mutex_lock(&k->mu);
	while (!w->a && k->attached && k->gen == gen &&
	       pthread_cond_timedwait(&k->cv, &k->mu, &dl) != ETIMEDOUT)
		;
	if (w->a) {
		out->how = EGRESS_ASKED_ANSWER;
		out->a = w->a;
	}
	*w = (struct waiter){ 0 };
	pthread_mutex_unlock(&k->mu);
done:
	free(text);
	json_decref(q);
}

void egress_asked_free(struct egress_asked *out)
{
	free(out->a);
	out->a = NULL;
}
