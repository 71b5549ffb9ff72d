/*
 * fuse_remote_io: a client-served share's socket against stand-in
 * servers on a real Unix socket: one that answers, one that never
 * answers (the guest's request fails with EIO within the timeout and
 * the next connects again), one that closes, one that sends garbage or
 * too much, and no server at all (EIO at once).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "devices/fs/fuse_remote_io.h"
#include "lib/base/mono.h"

enum mode { ANSWER, SILENT, CLOSE, WRONG_ID, TWO_LINES, ENDLESS, ONCE };

struct server {
	int lfd;
	enum mode mode;
	pthread_t th;
	int accepted;
	int held[8], nheld; /* SILENT's connections, kept open until stop() */
};

struct fx {
	char dir[64], path[128];
	struct server srv;
	struct fuse_remote_io io;
	struct fuse_remote *fr;
	uint8_t in[4096], out[FS_REMOTE_IO_MAX + 4096];
	uint64_t unique;
	char logged[1024];
	int nlogged;
};

/* Read one line from c into buf: its id, or 0 at end. */
static unsigned read_id(int c, char *buf, size_t cap)
{
	size_t have = 0;
	json_t *o;
	unsigned id;

	while (have < cap - 1) {
		ssize_t n = read(c, buf + have, 1);

		if (n <= 0)
			return 0;
		if (buf[have++] == '\n')
			break;
	}
	o = json_loadb(buf, have, 0, NULL);
	id = o ? (unsigned)json_integer_value(json_object_get(o, "id")) : 0;
	json_decref(o);
	return id;
}

static void *serve(void *arg)
{
	struct server *s = arg;
	static char buf[FS_REMOTE_LINE_MAX + 16];

	for (;;) {
		int c = accept(s->lfd, NULL, NULL);
		unsigned id;

		if (c < 0)
			return NULL;
		__atomic_add_fetch(&s->accepted, 1, __ATOMIC_SEQ_CST);
		while ((id = read_id(c, buf, sizeof(buf)))) {
			int n = 0;

			switch (s->mode) {
			case ANSWER:
			case ONCE:
				n = snprintf(buf, sizeof(buf),
					     "{\"id\":%u,\"type\":\"file\",\"size\":3}\n", id);
				break;
			case WRONG_ID:
				n = snprintf(buf, sizeof(buf),
					     "{\"id\":%u,\"type\":\"file\",\"size\":3}\n", id + 7);
				break;
			case TWO_LINES:
				n = snprintf(buf, sizeof(buf),
					     "{\"id\":%u,\"type\":\"file\",\"size\":3}\n{}\n", id);
				break;
			case ENDLESS:
				memset(buf, ' ', FS_REMOTE_LINE_MAX + 8);
				n = FS_REMOTE_LINE_MAX + 8;
				break;
			case SILENT:
				break;
			case CLOSE:
				break;
			}
			if (s->mode == CLOSE || s->mode == SILENT)
				break;
			if (send(c, buf, (size_t)n, MSG_NOSIGNAL) != n || s->mode == ONCE)
				break;
		}
		if (s->mode == SILENT && s->nheld < 8)
			s->held[s->nheld++] = c; /* never answered, never closed */
		else
			close(c);
	}
}

static void log_line(void *ctx, const char *line)
{
	struct fx *f = ctx;

	snprintf(f->logged, sizeof(f->logged), "%s", line);
	f->nlogged++;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct fuse_init_in ii = { .major = FUSE_KERNEL_VERSION, .minor = 31 };
	struct fuse_in_header h = { .len = sizeof(h) + sizeof(ii), .opcode = FUSE_INIT };

	strcpy(f->dir, "/tmp/kiln-fsio-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/share.sock", f->dir);
	assert_int_equal(fuse_remote_io_init(&f->io, f->path, 300), 0);
	f->io.log = log_line;
	f->io.log_ctx = f;
	f->io.name = "mem";
	assert_int_equal(fuse_remote_new(&f->fr, 0), 0);
	memcpy(f->in, &h, sizeof(h));
	memcpy(f->in + sizeof(h), &ii, sizeof(ii));
	assert_true(fuse_remote_io_handle(&f->io, f->fr, f->in, h.len, f->out, sizeof(f->out)) > 0);
	f->srv.lfd = -1;
	*state = f;
	return 0;
}

static void start(struct fx *f, enum mode mode)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	f->srv.mode = mode;
	f->srv.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	strcpy(sa.sun_path, f->path);
	assert_int_equal(bind(f->srv.lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(f->srv.lfd, 4), 0);
	assert_int_equal(pthread_create(&f->srv.th, NULL, serve, &f->srv), 0);
}

static void stop(struct fx *f)
{
	if (f->srv.lfd < 0)
		return;
	shutdown(f->srv.lfd, SHUT_RDWR);
	pthread_join(f->srv.th, NULL);
	close(f->srv.lfd);
	for (int i = 0; i < f->srv.nheld; i++)
		close(f->srv.held[i]);
	unlink(f->path);
	f->srv.lfd = -1;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	fuse_remote_io_fini(&f->io);
	stop(f);
	fuse_remote_free(f->fr);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* A LOOKUP of "a" in the root through io: the reply's error. */
static int lookup(struct fx *f)
{
	struct fuse_in_header h = { .len = sizeof(h) + 2,
				    .opcode = FUSE_LOOKUP,
				    .unique = ++f->unique,
				    .nodeid = FUSE_ROOT_ID };
	struct fuse_out_header oh;
	long n;

	memcpy(f->in, &h, sizeof(h));
	memcpy(f->in + sizeof(h), "a", 2);
	n = fuse_remote_io_handle(&f->io, f->fr, f->in, h.len, f->out, sizeof(f->out));
	assert_true(n >= (long)sizeof(oh));
	memcpy(&oh, f->out, sizeof(oh));
	assert_int_equal(oh.unique, f->unique);
	return oh.error;
}

static void test_answers(void **state)
{
	struct fx *f = *state;

	start(f, ANSWER);
	assert_int_equal(lookup(f), 0);
	assert_int_equal(lookup(f), 0);
	/* One connection for both. */
	assert_int_equal(f->io.st.connects, 1);
	assert_int_equal(f->io.st.answered, 2);
	assert_int_equal(f->nlogged, 0);
}

static void test_no_server_is_eio_at_once(void **state)
{
	struct fx *f = *state;
	int64_t t0 = mono_ms();

	assert_int_equal(lookup(f), -EIO);
	assert_true(mono_ms() - t0 < 250); /* at once: well under the 300 ms timeout */
	assert_int_equal(f->io.st.unreachable, 1);
	assert_non_null(strstr(f->logged, "cannot connect"));
	assert_non_null(strstr(f->logged, "virtio-fs mem:"));
	/* The server appears: the next request connects. */
	start(f, ANSWER);
	assert_int_equal(lookup(f), 0);
}

static void test_silent_server_times_out(void **state)
{
	struct fx *f = *state;
	int64_t t0 = mono_ms(), took;

	start(f, SILENT);
	assert_int_equal(lookup(f), -EIO);
	took = mono_ms() - t0;
	assert_true(took >= 290 && took < 5000);
	assert_int_equal(f->io.st.timeouts, 1);
	assert_int_equal(f->io.fd, -1);
	assert_non_null(strstr(f->logged, "no reply within the timeout"));
	/* The rest of the batch fails at once: a hung client holds the
	 * device thread one timeout per notification, not one per request. */
	t0 = mono_ms();
	assert_int_equal(lookup(f), -EIO);
	assert_true(mono_ms() - t0 < 250); /* at once: well under the 300 ms timeout */
	assert_int_equal(f->io.st.shed, 1);
	assert_int_equal(f->io.st.connects, 1);
	/* The next batch's request connects again (never in a loop: one per
	 * request) and waits again. */
	fuse_remote_io_batch(&f->io);
	t0 = mono_ms();
	assert_int_equal(lookup(f), -EIO);
	assert_true(mono_ms() - t0 >= 290);
	assert_int_equal(f->io.st.connects, 2);
	assert_int_equal(__atomic_load_n(&f->srv.accepted, __ATOMIC_SEQ_CST), 2);
}

static void test_closing_server(void **state)
{
	struct fx *f = *state;

	start(f, CLOSE);
	assert_int_equal(lookup(f), -EIO);
	assert_int_equal(f->io.fd, -1);
	assert_non_null(strstr(f->logged, "closed"));
}

static void test_wrong_id_drops_the_connection(void **state)
{
	struct fx *f = *state;

	start(f, WRONG_ID);
	assert_int_equal(lookup(f), -EIO);
	assert_int_equal(f->io.fd, -1);
	assert_int_equal(f->io.st.broken, 1);
	assert_non_null(strstr(f->logged, "broken reply"));
	/* Logged at most once a second. */
	assert_int_equal(lookup(f), -EIO);
	assert_int_equal(f->nlogged, 1);
	assert_int_equal(f->io.st.connects, 2);
}

static void test_extra_line_drops_the_connection(void **state)
{
	struct fx *f = *state;

	start(f, TWO_LINES);
	/* The reply counts; what follows it closes the connection. */
	assert_int_equal(lookup(f), 0);
	assert_int_equal(f->io.fd, -1);
	assert_int_equal(lookup(f), 0);
	assert_int_equal(f->io.st.connects, 2);
}

/* The server ended an idle connection (kilnd restarted, or dropped it):
 * the next request connects again instead of failing on the dead one. */
static void test_idle_connection_ended(void **state)
{
	struct fx *f = *state;

	start(f, ONCE);
	assert_int_equal(lookup(f), 0);
	/* The server has closed its end by now. */
	for (int i = 0; i < 100 && __atomic_load_n(&f->srv.accepted, __ATOMIC_SEQ_CST) < 1; i++)
		usleep(10000);
	usleep(50000);
	assert_int_equal(lookup(f), 0);
	assert_int_equal(lookup(f), 0);
	assert_int_equal(f->io.st.connects, 3);
	assert_int_equal(f->nlogged, 0);
}

static void test_endless_line(void **state)
{
	struct fx *f = *state;

	start(f, ENDLESS);
	assert_int_equal(lookup(f), -EIO);
	assert_int_equal(f->io.fd, -1);
	assert_non_null(strstr(f->logged, "longer than"));
}

static void test_init_bounds(void **state)
{
	struct fuse_remote_io io;
	char longpath[200];

	(void)state;
	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[sizeof(longpath) - 1] = '\0';
	assert_int_equal(fuse_remote_io_init(&io, longpath, 1000), -EINVAL);
	assert_int_equal(fuse_remote_io_init(&io, "", 1000), -EINVAL);
	assert_int_equal(fuse_remote_io_init(&io, "/x", 99), -EINVAL);
	assert_int_equal(fuse_remote_io_init(&io, "/x", 60001), -EINVAL);
	assert_int_equal(fuse_remote_io_init(&io, "/x", 100), 0);
	fuse_remote_io_fini(&io);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_answers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_server_is_eio_at_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_silent_server_times_out, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_connection_ended, setup, teardown),
		cmocka_unit_test_setup_teardown(test_closing_server, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wrong_id_drops_the_connection, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_extra_line_drops_the_connection, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_endless_line, setup, teardown),
		cmocka_unit_test(test_init_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
