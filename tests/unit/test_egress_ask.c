/*
 * egress_ask: kiln-egress's end of the decision stream, the test playing
 * kilnd on the other end of a socket pair: nothing asked while detached,
 * a question answered by its id, a deadline's timeout with its on_timeout,
 * a detach or kilnd gone ending a wait at once, late, made-up and
 * malformed lines dropped without touching another question, and many
 * questions at once each getting its own answer.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api/egress/egress_ask.h"
#include "lib/base/json.h"
#include "lib/base/mono.h"

/* Every channel started: kiln-egress keeps its one for its life, so
 * none is ever freed (held here, not reported as leaks). */
static struct egress_ask *started[16];
static size_t n_started;

struct chan {
	struct egress_ask *k;
	int fd; /* kilnd's end */
	char buf[EGRESS_DECISION_LINE_MAX];
	size_t n;
};

static void chan_open(struct chan *c)
{
	int sv[2];
	struct err e = { { 0 } };

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	c->fd = sv[0];
	c->n = 0;
	c->k = egress_ask_start(sv[1], &e);
	assert_non_null(c->k);
	assert_true(n_started < sizeof(started) / sizeof(started[0]));
	started[n_started++] = c->k;
}

static void put(struct chan *c, const char *line)
{
	size_t n = strlen(line);

	assert_int_equal(write(c->fd, line, n), (ssize_t)n);
}

/* Wait (at most 5 s) until egress_ask_attached says want. */
static void settle(struct chan *c, bool want)
{
	int64_t end = mono_ms() + 5000;

	while (egress_ask_attached(c->k) != want && mono_ms() < end)
		usleep(1000);
	assert_int_equal(egress_ask_attached(c->k), want);
}

static void attach(struct chan *c, unsigned ms, bool rules)
{
	char line[128];

	snprintf(line, sizeof(line), "{\"attach\":{\"deadline_ms\":%u,\"on_timeout\":\"%s\"}}\n",
		 ms, rules ? "rules" : "deny");
	put(c, line);
	settle(c, true);
}

/* The next question whose line parses (kilnd drops the others): its id. */
static uint64_t question_parsed(struct chan *c)
{
	for (;;) {
		char *nl;

		while (!(nl = memchr(c->buf, '\n', c->n))) {
			struct pollfd p = { .fd = c->fd, .events = POLLIN };
			ssize_t r;

			assert_true(c->n < sizeof(c->buf));
			if (poll(&p, 1, 2000) != 1)
				return 0;
			r = read(c->fd, c->buf + c->n, sizeof(c->buf) - c->n);
			assert_true(r > 0);
			c->n += (size_t)r;
		}
		{
			size_t len = (size_t)(nl - c->buf);
			json_t *q = json_strict_loadb(c->buf, len, NULL);
			uint64_t id = (uint64_t)json_integer_value(json_object_get(q, "id"));

			json_decref(q);
			memmove(c->buf, nl + 1, c->n - len - 1);
			c->n -= len + 1;
			if (id)
				return id;
		}
	}
}

/* The next question kiln-egress wrote (within 2 s): its id. */
static uint64_t question(struct chan *c)
{
	uint64_t id = question_parsed(c);

	assert_true(id != 0);
	return id;
}

struct asker {
	struct chan *c;
	uint64_t id;
	struct egress_asked out;
	int64_t took_ms;
	pthread_t t;
};

static void *ask_thread(void *arg)
{
	struct asker *a = arg;
	int64_t t0 = mono_ms();

	egress_ask(a->c->k, json_pack("{s:s,s:I}", "kind", "connect", "id", (json_int_t)a->id),
		   a->id, &a->out);
	a->took_ms = mono_ms() - t0;
	return NULL;
}

static void ask_start(struct asker *a, struct chan *c)
{
	a->c = c;
	a->id = egress_ask_id(c->k);
	assert_int_equal(pthread_create(&a->t, NULL, ask_thread, a), 0);
}

static void ask_join(struct asker *a)
{
	assert_int_equal(pthread_join(a->t, NULL), 0);
}

static void test_detached(void **state)
{
	struct chan *c = malloc(sizeof(*c));
	struct egress_asked out;
	struct pollfd p;

	(void)state;
	chan_open(c);
	assert_false(egress_ask_attached(c->k));
	assert_int_equal(egress_ask_id(c->k), 1);
	assert_int_equal(egress_ask_id(c->k), 2);
	egress_ask(c->k, json_object(), 2, &out);
	assert_int_equal(out.how, EGRESS_ASKED_NONE);
	assert_null(out.a);
	/* Nothing was written. */
	p = (struct pollfd){ .fd = c->fd, .events = POLLIN };
	assert_int_equal(poll(&p, 1, 50), 0);
	/* No channel: not asked either. */
	assert_false(egress_ask_attached(NULL));
	assert_int_equal(egress_ask_id(NULL), 0);
	egress_ask(NULL, json_object(), 1, &out);
	assert_int_equal(out.how, EGRESS_ASKED_NONE);
	close(c->fd);
	free(c);
}

static void test_answered(void **state)
{
	struct chan *c = malloc(sizeof(*c));
	struct asker a;
	char line[128];

	(void)state;
	chan_open(c);
	attach(c, 60000, false);
	ask_start(&a, c);
	assert_int_equal(question(c), a.id);
	/* A made-up id, a malformed line and a line of junk: dropped. */
	put(c, "{\"id\":999,\"decision\":\"allow\"}\n");
	snprintf(line, sizeof(line), "{\"id\":%llu,\"decision\":\"allow\",\"status\":451}\n",
		 (unsigned long long)a.id);
	put(c, line);
	put(c, "not json\n\n");
	snprintf(line, sizeof(line),
		 "{\"id\":%llu,\"decision\":\"deny\",\"status\":451,\"reason\":\"no\"}\n",
		 (unsigned long long)a.id);
	put(c, line);
	ask_join(&a);
	assert_int_equal(a.out.how, EGRESS_ASKED_ANSWER);
	assert_non_null(a.out.a);
	assert_int_equal(a.out.a->verdict, EGRESS_VERDICT_DENY);
	assert_int_equal(a.out.a->status, 451);
	assert_string_equal(a.out.a->reason, "no");
	assert_int_equal(a.out.deadline_ms, 60000);
	egress_asked_free(&a.out);
	assert_null(a.out.a);
	/* A late second answer to it: dropped, the next question unharmed. */
	put(c, line);
	ask_start(&a, c);
	assert_int_equal(question(c), a.id);
	snprintf(line, sizeof(line), "{\"id\":%llu,\"decision\":\"rules\"}\n",
		 (unsigned long long)a.id);
	put(c, line);
	ask_join(&a);
	assert_int_equal(a.out.how, EGRESS_ASKED_ANSWER);
	assert_int_equal(a.out.a->verdict, EGRESS_VERDICT_RULES);
	egress_asked_free(&a.out);
	close(c->fd);
	free(c);
}

static void test_timeout(void **state)
{
	struct chan *c = malloc(sizeof(*c));
	struct asker a;
	char line[128];

	(void)state;
	chan_open(c);
	attach(c, 50, true);
	ask_start(&a, c);
	assert_int_equal(question(c), a.id);
	ask_join(&a);
	assert_int_equal(a.out.how, EGRESS_ASKED_TIMEOUT);
	assert_null(a.out.a);
	assert_int_equal(a.out.deadline_ms, 50);
	assert_true(a.out.timeout_rules);
	assert_true(a.took_ms >= 45 && a.took_ms < 4000);
	/* Its answer after the deadline: dropped. */
	snprintf(line, sizeof(line), "{\"id\":%llu,\"decision\":\"allow\"}\n",
		 (unsigned long long)a.id);
	put(c, line);
	/* The next client's parameters apply to the next question. */
	put(c, "{\"detach\":true}\n");
	settle(c, false);
	attach(c, 10, false);
	ask_start(&a, c);
	assert_int_equal(question(c), a.id);
	ask_join(&a);
	assert_int_equal(a.out.how, EGRESS_ASKED_TIMEOUT);
	assert_int_equal(a.out.deadline_ms, 10);
	assert_false(a.out.timeout_rules);
	close(c->fd);
	free(c);
}

static void test_detach_ends_waits(void **state)
{
	struct chan *c = malloc(sizeof(*c));
	struct asker a[3];

	(void)state;
	chan_open(c);
	attach(c, 60000, false);
	for (int i = 0; i < 3; i++)
		ask_start(&a[i], c);
	for (int i = 0; i < 3; i++)
		question(c);
	put(c, "{\"detach\":true}\n");
	for (int i = 0; i < 3; i++) {
		ask_join(&a[i]);
		assert_int_equal(a[i].out.how, EGRESS_ASKED_TIMEOUT);
		assert_true(a[i].took_ms < 5000);
	}
	assert_false(egress_ask_attached(c->k));
	/* Detached: not asked. */
	ask_start(&a[0], c);
	ask_join(&a[0]);
	assert_int_equal(a[0].out.how, EGRESS_ASKED_NONE);
	/* Attached again, then kilnd gone: the wait ends, for good. */
	attach(c, 60000, false);
	ask_start(&a[0], c);
	question(c);
	close(c->fd);
	ask_join(&a[0]);
	assert_int_equal(a[0].out.how, EGRESS_ASKED_TIMEOUT);
	assert_true(a[0].took_ms < 5000);
	assert_false(egress_ask_attached(c->k));
	free(c);
}

/* A question cut short by its deadline (kilnd not reading) leaves the
 * stream mid-line: the next question must still arrive as a line of its
 * own, never glued to the cut one (kilnd would drop both). */
static void test_cut_line(void **state)
{
	struct chan *c = malloc(sizeof(*c));
	struct egress_asked out;
	struct asker a;
	size_t big = 100000;
	char *pad = malloc(big + 1);
	int sv[2], small = 4096;
	struct err e = { { 0 } };
	uint64_t id;

	(void)state;
	assert_non_null(pad);
	memset(pad, 'p', big);
	pad[big] = '\0';
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
	assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
	c->fd = sv[0];
	c->n = 0;
	c->k = egress_ask_start(sv[1], &e);
	assert_non_null(c->k);
	started[n_started++] = c->k;
	attach(c, 20, false);
	/* Nobody reads: the line is cut when its deadline passes. */
	id = egress_ask_id(c->k);
	egress_ask(c->k,
		   json_pack("{s:s,s:I,s:s}", "kind", "connect", "id", (json_int_t)id, "pad", pad),
		   id, &out);
	assert_int_equal(out.how, EGRESS_ASKED_TIMEOUT);
	/* A deadline a loaded machine (sanitizers, tests in parallel) cannot
	 * miss for the next one: detached first, so the new attach is in
	 * force once attached again. */
	put(c, "{\"detach\":true}\n");
	settle(c, false);
	attach(c, 5000, false);
	/* Now kilnd reads again: the next question is whole on its own line. */
	ask_start(&a, c);
	assert_int_equal(question_parsed(c), a.id);
	ask_join(&a);
	close(c->fd);
	free(pad);
	free(c);
}

/* Many questions at once, answered in reverse order: each its own. */
static void test_many(void **state)
{
	enum { N = 40 };
	struct chan *c = malloc(sizeof(*c));
	struct asker *a = calloc(N, sizeof(*a));
	uint64_t ids[N];
	char line[128];

	(void)state;
	chan_open(c);
	attach(c, 60000, false);
	for (int i = 0; i < N; i++)
		ask_start(&a[i], c);
	for (int i = 0; i < N; i++)
		ids[i] = question(c);
	for (int i = N - 1; i >= 0; i--) {
		snprintf(line, sizeof(line), "{\"id\":%llu,\"decision\":\"deny\",\"status\":%d}\n",
			 (unsigned long long)ids[i], 400 + (int)(ids[i] % 100));
		put(c, line);
	}
	for (int i = 0; i < N; i++) {
		ask_join(&a[i]);
		assert_int_equal(a[i].out.how, EGRESS_ASKED_ANSWER);
		assert_int_equal(a[i].out.a->id, a[i].id);
		assert_int_equal(a[i].out.a->status, 400 + a[i].id % 100);
		egress_asked_free(&a[i].out);
	}
	close(c->fd);
	free(a);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_detached), cmocka_unit_test(test_answered),
		cmocka_unit_test(test_timeout),  cmocka_unit_test(test_detach_ends_waits),
		cmocka_unit_test(test_many),     cmocka_unit_test(test_cut_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
