/*
 * agent_client_ctr: kiln-runtime's container calls (docs/agent-protocol.md
 * 7.9) against a scripted agent behind a real Unix socket (kiln-vmm's
 * CONNECT handshake from fake_vmm.h). Each request line the client sent
 * is recorded byte for byte and read back with the agent's own parser;
 * each reply is scripted: the codec's own reply lines, runc's error words,
 * and a hostile agent's lies (another container's exit, an exit with no
 * status, a close before the reply, silence; a ctr_exec reply naming
 * another exec). A request the agent would refuse never reaches the
 * socket.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api/agent-client/agent_client.h"
#include "lib/base/fd_io.h"
#include "lib/base/mono.h"
#include "fake_vmm.h"

/* ---- the scripted agent ---- */

#define STEPS_MAX 8
#define REQ_MAX 8192

struct step {
	const char *reply; /* written after the request line; NULL: nothing */
	int delay_ms;      /* before the reply */
	bool hold;         /* then record what the client sends until it closes */
};

struct fake {
	struct fake_vmm v;
	pthread_t th;
	const struct step *steps;
	size_t nsteps, served;
	char req[STEPS_MAX][REQ_MAX]; /* each request line, '\n' included */
	char after[STEPS_MAX][256];   /* the bytes after it (hold) */
	char bad[256];                /* what went wrong in the thread (no asserts there) */
};

/* The request line, a byte at a time: what follows it is not ours. */
static void fk_read_line(struct fake *f, int fd, char *line)
{
	size_t n = 0;

	while (n < REQ_MAX - 1 && read(fd, line + n, 1) == 1)
		if (line[n++] == '\n')
			break;
	line[n] = '\0';
	if (!n || line[n - 1] != '\n')
		snprintf(f->bad, sizeof(f->bad), "request %zu has no newline: '%.100s'", f->served,
			 line);
}

static void fk_serve(struct fake *f, const struct step *st, int fd)
{
	char *after = f->after[f->served];
	size_t n = 0;
	ssize_t r;

	fk_read_line(f, fd, f->req[f->served]);
	if (st->delay_ms)
		usleep((useconds_t)st->delay_ms * 1000);
	if (st->reply)
		fd_io_send_all(fd, st->reply,
			       strlen(st->reply)); /* a client gone: its test says so */
	if (!st->hold)
		return;
	while ((r = read(fd, after + n, 255 - n)) > 0)
		n += (size_t)r;
	after[n] = '\0';
}

static void *fk_main(void *arg)
{
	struct fake *f = arg;

	while (f->served < f->nsteps) {
		struct pollfd p = { .fd = f->v.lfd, .events = POLLIN };
		int fd;

		if (poll(&p, 1, 5000) != 1) {
			snprintf(f->bad, sizeof(f->bad), "no connection for step %zu", f->served);
			return NULL;
		}
		fd = fake_vmm_accept(&f->v);
		if (fd < 0) {
			snprintf(f->bad, sizeof(f->bad), "bad handshake for step %zu", f->served);
			return NULL;
		}
		fk_serve(f, &f->steps[f->served], fd);
		f->served++;
		close(fd);
	}
	return NULL;
}

static struct fake *fake_start(const struct step *steps, size_t n)
{
	struct fake *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_true(n <= STEPS_MAX);
	f->steps = steps;
	f->nsteps = n;
	fake_vmm_listen(&f->v);
	assert_int_equal(pthread_create(&f->th, NULL, fk_main, f), 0);
	return f;
}

/* Every step served; and no connection beyond them (a refused request
 * must not even connect). The recorded lines stay until fake_free. */
static void fake_stop(struct fake *f)
{
	struct pollfd p = { .fd = f->v.lfd, .events = POLLIN };

	assert_int_equal(pthread_join(f->th, NULL), 0);
	if (f->bad[0])
		fail_msg("fake agent: %s", f->bad);
	assert_int_equal(f->served, f->nsteps);
	assert_int_equal(poll(&p, 1, 0), 0);
	fake_vmm_close(&f->v);
}

static struct agent_client client_for(const struct fake *f, int timeout_ms)
{
	struct agent_client c;

	assert_int_equal(agent_client_init(&c, f->v.path), 0);
	c.timeout_ms = timeout_ms;
	return c;
}

static void assert_err(const struct agent_client_err *e, enum agent_fail fail, enum agent_code code)
{
	if (e->fail != fail || e->code != code)
		fail_msg("error fail=%d code=%s (%s), wanted fail=%d code=%s", e->fail,
			 agent_code_name(e->code), e->msg, fail, agent_code_name(code));
}

static void assert_msg_has(const struct agent_client_err *e, const char *words)
{
	if (!strstr(e->msg, words))
		fail_msg("message '%s' lacks '%s'", e->msg, words);
}

/* The recorded line is one the agent's parser takes, of type t. */
static void assert_agent_takes(const char *line, enum agent_type t, struct agent_msg *m)
{
	struct agent_err pe;
	size_t n = strlen(line);

	assert_true(n > 0 && line[n - 1] == '\n');
	if (agent_msg_parse_line(line, n - 1, AGENT_CTX_REQUEST, m, &pe) != AGENT_OK)
		fail_msg("the agent refuses '%s': %s", line, pe.msg);
	assert_int_equal(m->type, t);
}

#define OK "{\"type\":\"ok\"}\n"

/* ---- ctr_create ---- */

/* docs/agent-protocol.md 7.9's example, as kiln-runtime's plan builds it. */
static const char CREATE_REQ[] =
	"{\"type\":\"ctr_create\",\"cid\":\"c1\",\"rootfs\":{\"share\":\"r\"},\"mounts\":["
	"{\"destination\":\"/proc\",\"type\":\"proc\",\"options\":[\"nosuid\",\"noexec\",\"nodev\"]},"
	"{\"destination\":\"/dev\",\"type\":\"tmpfs\",\"options\":[\"nosuid\",\"strictatime\",\"mode=755\",\"size=65536k\"]},"
	"{\"destination\":\"/dev/pts\",\"type\":\"devpts\",\"options\":[\"nosuid\",\"noexec\",\"newinstance\",\"ptmxmode=0666\",\"mode=0620\",\"gid=5\"]},"
	"{\"destination\":\"/etc/hosts\",\"type\":\"bind\",\"share\":\"b\",\"source\":\"ro/0\",\"options\":[\"rbind\",\"ro\"]}],"
	"\"process\":{\"args\":[\"sh\",\"-c\",\"echo hi; exit 7\"],\"env\":[\"PATH=/usr/bin:/bin\",\"TERM=xterm\"],\"cwd\":\"/\"},"
	"\"hostname\":\"c1\"}";

static json_t *load(const char *s)
{
	json_error_t je;
	json_t *o = json_loads(s, 0, &je);

	if (!o)
		fail_msg("test JSON: %s", je.text);
	return o;
}

static void test_create(void **state)
{
	static char created[128];
	static struct step steps[1];
	struct agent_client_err e;
	struct agent_client c;
	struct agent_line line;
	struct agent_msg m;
	json_t *req = load(CREATE_REQ), *sent;
	struct fake *f;
	int pid = -1;

	(void)state;
	/* The agent's own reply line, from the codec it links. */
	assert_int_equal(agent_line_ctr_created(&line, "c1", 0, 231), 0);
	snprintf(created, sizeof(created), "%.*s", (int)line.len, line.data);
	agent_line_free(&line);
	steps[0] = (struct step){ .reply = created };
	f = fake_start(steps, 1);
	c = client_for(f, 2000);
	assert_int_equal(agent_client_ctr_create(&c, req, &pid, &e), 0);
	assert_int_equal(e.fail, AGENT_FAIL_NONE);
	assert_int_equal(pid, 231);
	fake_stop(f);
	/* What went out is the request, whole, and the agent's parser takes it. */
	assert_agent_takes(f->req[0], AGENT_T_CTR_CREATE, &m);
	assert_string_equal(m.u.ctr_create.cid, "c1");
	assert_int_equal(m.u.ctr_create.nmounts, 4);
	assert_string_equal(m.u.ctr_create.mounts[3].source, "ro/0");
	assert_int_equal(m.u.ctr_create.proc.argc, 3);
	agent_msg_free(&m);
	sent = load(f->req[0]);
	assert_true(json_equal(sent, req));
	json_decref(sent);
	/* The caller's object is the caller's: not consumed, not changed. */
	assert_int_equal(req->refcount, 1);
	json_decref(req);
	free(f);
}

static void test_create_agent_error(void **state)
{
	static const struct step steps[] = {
		/* runc's words, which engines match (Podman: exit code 127) */
		{ .reply =
			  "{\"type\":\"error\",\"code\":\"not_found\",\"message\":\"exec: \\\"nope\\\": executable file not found in $PATH\"}\n" },
		{ .reply =
			  "{\"type\":\"error\",\"code\":\"permission_denied\",\"message\":\"exec: \\\"/bin/x\\\": permission denied\"}\n" },
		{ .reply = "{\"type\":\"error\",\"code\":\"exists\",\"message\":\"\"}\n" },
	};
	struct agent_client_err e;
	struct agent_client c;
	json_t *req = load("{\"type\":\"ctr_create\",\"cid\":\"c2\",\"rootfs\":{\"share\":\"r\"},"
			   "\"process\":{\"args\":[\"nope\"],\"env\":[\"PATH=/usr/bin:/bin\"]}}");
	struct fake *f = fake_start(steps, 3);
	int pid = -1;

	(void)state;
	c = client_for(f, 2000);
	assert_int_equal(agent_client_ctr_create(&c, req, &pid, &e), -EREMOTEIO);
	assert_err(&e, AGENT_FAIL_AGENT, AGENT_E_NOT_FOUND);
	assert_string_equal(e.msg, "exec: \"nope\": executable file not found in $PATH");
	assert_int_equal(pid, 0);
	assert_int_equal(agent_client_ctr_create(&c, req, &pid, &e), -EREMOTEIO);
	assert_err(&e, AGENT_FAIL_AGENT, AGENT_E_PERMISSION_DENIED);
	assert_string_equal(e.msg, "exec: \"/bin/x\": permission denied");
	/* No message from the agent: ours still names the call and the code. */
	assert_int_equal(agent_client_ctr_create(&c, req, &pid, &e), -EREMOTEIO);
	assert_err(&e, AGENT_FAIL_AGENT, AGENT_E_EXISTS);
	assert_msg_has(&e, "ctr_create");
	assert_msg_has(&e, "exists");
	fake_stop(f);
	json_decref(req);
	free(f);
}

/* The agent's ctr_created, lying: the client must not take a pid from it. */
static void test_create_hostile_reply(void **state)
{
	static const struct step steps[] = {
		{ .reply = "{\"type\":\"ctr_created\",\"cid\":\"c1\"}\n" },
		{ .reply = "{\"type\":\"ctr_created\",\"cid\":\"c1\",\"pid\":-1}\n" },
		{ .reply = "{\"type\":\"ctr_created\",\"cid\":\"c1\",\"pid\":\"231\"}\n" },
		{ .reply = "{\"type\":\"ctr_created\",\"cid\":\"c1\",\"pid\":4294967297}\n" },
		{ .reply = OK },
		{ .reply = "{\"type\":\"ctr_created\",\"cid\":\"c1\",\"pid\":231" },
		{ .reply = NULL },
	};
	static const int rets[] = { -EPROTO, -EPROTO, -EPROTO,    -EPROTO,
				    -EPROTO, -EPROTO, -ECONNRESET };
	static const enum agent_fail fails[] = { AGENT_FAIL_PROTOCOL, AGENT_FAIL_PROTOCOL,
						 AGENT_FAIL_PROTOCOL, AGENT_FAIL_PROTOCOL,
						 AGENT_FAIL_PROTOCOL, AGENT_FAIL_PROTOCOL,
						 AGENT_FAIL_CONNECT };
	struct agent_client_err e;
	struct agent_client c;
	json_t *req = load(CREATE_REQ);
	struct fake *f = fake_start(steps, 7);

	(void)state;
	c = client_for(f, 2000);
	for (size_t i = 0; i < 7; i++) {
		int pid = -1, r = agent_client_ctr_create(&c, req, &pid, &e);

		if (r != rets[i] || e.fail != fails[i])
			fail_msg("step %zu: %d fail=%d (%s)", i, r, e.fail, e.msg);
		assert_int_equal(pid, 0);
		assert_msg_has(&e, "ctr_create");
	}
	fake_stop(f);
	json_decref(req);
	free(f);
}

/* Requests the agent's parser refuses: refused here, nothing connects. */
static void test_create_refused_unsent(void **state)
{
	static const char *const bad[] = {
		/* a cid naming the parent cgroup */
		"{\"type\":\"ctr_create\",\"cid\":\"..\",\"rootfs\":{\"share\":\"r\"},\"process\":{\"args\":[\"a\"]}}",
		/* no process */
		"{\"type\":\"ctr_create\",\"cid\":\"c1\",\"rootfs\":{\"share\":\"r\"}}",
		/* a relative mount destination */
		"{\"type\":\"ctr_create\",\"cid\":\"c1\",\"rootfs\":{\"share\":\"r\"},\"mounts\":[{\"destination\":\"proc\",\"type\":\"proc\"}],\"process\":{\"args\":[\"a\"]}}",
		/* a bind source escaping its share */
		"{\"type\":\"ctr_create\",\"cid\":\"c1\",\"rootfs\":{\"share\":\"r\"},\"mounts\":[{\"destination\":\"/x\",\"type\":\"bind\",\"share\":\"b\",\"source\":\"../../etc\"}],\"process\":{\"args\":[\"a\"]}}",
		/* an unknown field */
		"{\"type\":\"ctr_create\",\"cid\":\"c1\",\"rootfs\":{\"share\":\"r\"},\"process\":{\"args\":[\"a\"]},\"privileged\":true}",
		/* a request the agent takes, but not a ctr_create: it would
		 * start the container, then fail on the reply's type */
		"{\"type\":\"ctr_start\",\"cid\":\"c1\"}",
	};
	struct agent_client_err e;
	struct agent_client c;
	struct fake *f = fake_start(NULL, 0);

	(void)state;
	c = client_for(f, 2000);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *req = load(bad[i]);
		int pid = -1, r = agent_client_ctr_create(&c, req, &pid, &e);

		if (r != -EINVAL || e.fail != AGENT_FAIL_REQUEST)
			fail_msg("%s\n  gave %d fail=%d (%s)", bad[i], r, e.fail, e.msg);
		assert_int_equal(pid, 0);
		json_decref(req);
	}
	fake_stop(f);
	free(f);
}

/* ---- ctr_stdio ---- */

static void test_stdio_raw_stream(void **state)
{
	/* ok and the process's first output in one write: the client must
	 * stop reading at the newline, or "hi" is lost in its buffer. */
	static const struct step steps[] = {
		{ .reply = OK "hi\nthere", .hold = true },
		{ .reply = OK },
	};
	struct agent_client_err e;
	struct agent_client c;
	struct agent_msg m;
	struct fake *f = fake_start(steps, 2);
	char buf[64];
	size_t got = 0;
	int fd = -1;

	(void)state;
	c = client_for(f, 2000);
	assert_int_equal(agent_client_ctr_stdio(&c, "c1", 0, AGENT_CTR_STDOUT, &fd, &e), 0);
	assert_int_equal(e.fail, AGENT_FAIL_NONE);
	assert_true(fd >= 0);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	while (got < 8) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		assert_int_equal(poll(&p, 1, 5000), 1);
		n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
		if (n < 0 && errno == EAGAIN)
			continue;
		assert_true(n > 0);
		got += (size_t)n;
	}
	buf[got] = '\0';
	assert_string_equal(buf, "hi\nthere");
	/* Our bytes reach the agent raw, and SHUT_WR is their end. */
	assert_int_equal(send(fd, "abc\0def", 7, MSG_NOSIGNAL), 7);
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	close(fd);
	fd = -1;
	assert_int_equal(agent_client_ctr_stdio(&c, "c-9", 0, AGENT_CTR_PTY, &fd, &e), 0);
	close(fd);
	fake_stop(f);
	assert_string_equal(f->req[0],
			    "{\"type\":\"ctr_stdio\",\"cid\":\"c1\",\"stream\":\"stdout\"}\n");
	assert_agent_takes(f->req[0], AGENT_T_CTR_STDIO, &m);
	assert_int_equal(m.u.ctr.stream, AGENT_CTR_STDOUT);
	agent_msg_free(&m);
	assert_memory_equal(f->after[0], "abc\0def", 8);
	assert_string_equal(f->req[1],
			    "{\"type\":\"ctr_stdio\",\"cid\":\"c-9\",\"stream\":\"pty\"}\n");
	free(f);
}

static void test_stdio_errors(void **state)
{
	static const struct step steps[] = {
		{ .reply =
			  "{\"type\":\"error\",\"code\":\"invalid_state\",\"message\":\"ctr_stdio: stdout of \\\"c1\\\" is connected already\"}\n" },
		/* not ok: a raw stream must not start on another reply */
		{ .reply = "{\"type\":\"ctr_created\",\"cid\":\"c1\",\"pid\":2}\nhi" },
		{ .reply = NULL },
		{ .reply = "{\"type\":\"ok\"" },
	};
	struct agent_client_err e;
	struct agent_client c;
	struct fake *f = fake_start(steps, 4);
	int fd = 7;

	(void)state;
	c = client_for(f, 2000);
	assert_int_equal(agent_client_ctr_stdio(&c, "c1", 0, AGENT_CTR_STDOUT, &fd, &e),
			 -EREMOTEIO);
	assert_err(&e, AGENT_FAIL_AGENT, AGENT_E_INVALID_STATE);
	assert_msg_has(&e, "connected already");
	assert_int_equal(fd, -1);
	assert_int_equal(agent_client_ctr_stdio(&c, "c1", 0, AGENT_CTR_STDERR, &fd, &e), -EPROTO);
	assert_int_equal(e.fail, AGENT_FAIL_PROTOCOL);
	assert_int_equal(fd, -1);
	assert_int_equal(agent_client_ctr_stdio(&c, "c1", 0, AGENT_CTR_STDIN, &fd, &e),
			 -ECONNRESET);
	assert_int_equal(e.fail, AGENT_FAIL_CONNECT);
	assert_int_equal(fd, -1);
	assert_int_equal(agent_client_ctr_stdio(&c, "c1", 0, AGENT_CTR_STDIN, &fd, &e), -EPROTO);
	assert_err(&e, AGENT_FAIL_PROTOCOL, AGENT_E_TRUNCATED);
	assert_int_equal(fd, -1);
	/* refused before connecting */
	assert_int_equal(agent_client_ctr_stdio(&c, "", 0, AGENT_CTR_STDIN, &fd, &e), -EINVAL);
	assert_int_equal(e.fail, AGENT_FAIL_REQUEST);
	assert_int_equal(fd, -1);
	fake_stop(f);
	free(f);
}

/* ---- start, signal, resize, delete ---- */

static void test_controls_send(void **state)
{
	static const struct step steps[] = {
		{ .reply = OK }, { .reply = OK }, { .reply = OK }, { .reply = OK }, { .reply = OK },
	};
	struct agent_client_err e;
	struct agent_client c;
	struct agent_msg m;
	struct fake *f = fake_start(steps, 5);

	(void)state;
	c = client_for(f, 2000);
	assert_int_equal(agent_client_ctr_start(&c, "c1", 0, &e), 0);
	assert_int_equal(agent_client_ctr_signal(&c, "c1", 0, 15, true, &e), 0);
	assert_int_equal(agent_client_ctr_signal(&c, "c1", 0, 64, false, &e), 0);
	assert_int_equal(agent_client_ctr_resize(&c, "c1", 0, 50, 200, &e), 0);
	assert_int_equal(agent_client_ctr_delete(&c, "c1", &e), 0);
	assert_int_equal(e.fail, AGENT_FAIL_NONE);
	fake_stop(f);
	assert_string_equal(f->req[0], "{\"type\":\"ctr_start\",\"cid\":\"c1\"}\n");
	assert_agent_takes(f->req[0], AGENT_T_CTR_START, &m);
	agent_msg_free(&m);
	assert_string_equal(f->req[1],
			    "{\"type\":\"ctr_signal\",\"cid\":\"c1\",\"signal\":15,\"all\":true}\n");
	assert_agent_takes(f->req[1], AGENT_T_CTR_SIGNAL, &m);
	assert_int_equal(m.u.ctr.signo, 15);
	assert_true(m.u.ctr.all);
	agent_msg_free(&m);
	assert_string_equal(f->req[2],
			    "{\"type\":\"ctr_signal\",\"cid\":\"c1\",\"signal\":64,\"all\":false}\n");
	assert_agent_takes(f->req[2], AGENT_T_CTR_SIGNAL, &m);
	assert_int_equal(m.u.ctr.signo, 64);
	assert_false(m.u.ctr.all);
	agent_msg_free(&m);
	assert_string_equal(f->req[3],
			    "{\"type\":\"ctr_resize\",\"cid\":\"c1\",\"rows\":50,\"cols\":200}\n");
	assert_agent_takes(f->req[3], AGENT_T_CTR_RESIZE, &m);
	assert_int_equal(m.u.ctr.rows, 50);
	assert_int_equal(m.u.ctr.cols, 200);
	agent_msg_free(&m);
	assert_string_equal(f->req[4], "{\"type\":\"ctr_delete\",\"cid\":\"c1\"}\n");
	assert_agent_takes(f->req[4], AGENT_T_CTR_DELETE, &m);
	agent_msg_free(&m);
	free(f);
}

static void test_controls_refused_unsent(void **state)
{
	char cid[AGENT_CID_MAX + 2];
	struct agent_client_err e;
	struct agent_client c;
	struct fake *f = fake_start(NULL, 0);

	(void)state;
	memset(cid, 'a', sizeof(cid) - 1);
	cid[sizeof(cid) - 1] = '\0';
	c = client_for(f, 2000);
	assert_int_equal(agent_client_ctr_signal(&c, "c1", 0, 0, false, &e), -EINVAL);
	assert_err(&e, AGENT_FAIL_REQUEST, AGENT_E_BAD_FIELD);
	assert_int_equal(agent_client_ctr_signal(&c, "c1", 0, 65, false, &e), -EINVAL);
	assert_err(&e, AGENT_FAIL_REQUEST, AGENT_E_BAD_FIELD);
	assert_int_equal(agent_client_ctr_signal(&c, "c1", 0, -9, true, &e), -EINVAL);
	assert_err(&e, AGENT_FAIL_REQUEST, AGENT_E_BAD_FIELD);
	assert_int_equal(agent_client_ctr_resize(&c, "c1", 0, 0, 80, &e), -EINVAL);
	assert_err(&e, AGENT_FAIL_REQUEST, AGENT_E_BAD_FIELD);
	assert_int_equal(agent_client_ctr_resize(&c, "c1", 0, 24, 0, &e), -EINVAL);
	assert_err(&e, AGENT_FAIL_REQUEST, AGENT_E_BAD_FIELD);
	assert_int_equal(agent_client_ctr_start(&c, "..", 0, &e), -EINVAL);
	assert_err(&e, AGENT_FAIL_REQUEST, AGENT_E_BAD_FIELD);
	assert_msg_has(&e, "'cid'");
	assert_int_equal(agent_client_ctr_delete(&c, "a/b", &e), -EINVAL);
	assert_err(&e, AGENT_FAIL_REQUEST, AGENT_E_BAD_FIELD);
	assert_int_equal(agent_client_ctr_delete(&c, cid, &e), -EINVAL);
	assert_err(&e, AGENT_FAIL_REQUEST, AGENT_E_TOO_LARGE);
	assert_int_equal(agent_client_ctr_start(&c, "", 0, &e), -EINVAL);
	assert_err(&e, AGENT_FAIL_REQUEST, AGENT_E_BAD_FIELD);
	/* Not UTF-8: a request error naming the cid, not "out of memory". */
	assert_int_equal(agent_client_ctr_start(&c, "c\xff", 0, &e), -EINVAL);
	assert_int_equal(e.fail, AGENT_FAIL_REQUEST);
	assert_msg_has(&e, "cid");
	fake_stop(f);
	free(f);
}

static void test_controls_agent_errors(void **state)
{
	static const struct step steps[] = {
		{ .reply =
			  "{\"type\":\"error\",\"code\":\"invalid_state\",\"message\":\"container \\\"c1\\\" is not created (it is running)\"}\n" },
		{ .reply =
			  "{\"type\":\"error\",\"code\":\"invalid_state\",\"message\":\"container \\\"c1\\\" is not running\"}\n" },
		{ .reply =
			  "{\"type\":\"error\",\"code\":\"not_found\",\"message\":\"no container \\\"c1\\\"\"}\n" },
		/* hostile: not ok, an unknown code, silence, a close */
		{ .reply =
			  "{\"type\":\"exit\",\"cid\":\"c1\",\"exec\":0,\"pid\":2,\"exit_code\":0,\"signal\":null}\n" },
		{ .reply = "{\"type\":\"error\",\"code\":\"kaboom\",\"message\":\"x\"}\n" },
		{ .reply = OK, .delay_ms = 600 },
		{ .reply = NULL },
	};
	struct agent_client_err e;
	struct agent_client c;
	struct fake *f = fake_start(steps, 7);
	int64_t t0;

	(void)state;
	c = client_for(f, 2000);
	assert_int_equal(agent_client_ctr_start(&c, "c1", 0, &e), -EREMOTEIO);
	assert_err(&e, AGENT_FAIL_AGENT, AGENT_E_INVALID_STATE);
	assert_string_equal(e.msg, "container \"c1\" is not created (it is running)");
	assert_int_equal(agent_client_ctr_signal(&c, "c1", 0, 9, true, &e), -EREMOTEIO);
	assert_err(&e, AGENT_FAIL_AGENT, AGENT_E_INVALID_STATE);
	assert_int_equal(agent_client_ctr_delete(&c, "c1", &e), -EREMOTEIO);
	assert_err(&e, AGENT_FAIL_AGENT, AGENT_E_NOT_FOUND);
	assert_int_equal(agent_client_ctr_resize(&c, "c1", 0, 1, 1, &e), -EPROTO);
	assert_int_equal(e.fail, AGENT_FAIL_PROTOCOL);
	assert_msg_has(&e, "ctr_resize");
	assert_int_equal(agent_client_ctr_start(&c, "c1", 0, &e), -EPROTO);
	assert_int_equal(e.fail, AGENT_FAIL_PROTOCOL);
	assert_msg_has(&e, "kaboom");
	/* The reply is bounded by the context's timeout. */
	c.timeout_ms = 200;
	t0 = mono_ms();
	assert_int_equal(agent_client_ctr_signal(&c, "c1", 0, 15, false, &e), -ETIMEDOUT);
	assert_int_equal(e.fail, AGENT_FAIL_TIMEOUT);
	assert_true(mono_ms() - t0 < 1500); /* -ETIMEDOUT is the check; this catches a hang */
	c.timeout_ms = 2000;
	assert_int_equal(agent_client_ctr_delete(&c, "c1", &e), -ECONNRESET);
	assert_int_equal(e.fail, AGENT_FAIL_CONNECT);
	assert_msg_has(&e, "before replying");
	fake_stop(f);
	free(f);
}

/* ---- ctr_wait ---- */

/* begin, poll the connection as rt_shim does, end. */
static int wait_once(const struct agent_client *c, const char *cid, int poll_ms, int end_ms,
		     struct agent_client_ctr_exit *ex, struct agent_client_err *e)
{
	struct agent_client_ctr_wait *w = NULL;
	int r = agent_client_ctr_wait_begin(c, cid, 0, &w, e);

	if (r < 0) {
		assert_null(w);
		return r;
	}
	if (poll_ms) {
		struct pollfd p = { .fd = agent_client_ctr_wait_fd(w), .events = POLLIN };

		assert_int_equal(poll(&p, 1, poll_ms), 1);
	}
	r = agent_client_ctr_wait_end(w, end_ms, ex, e);
	agent_client_ctr_wait_close(w);
	return r;
}

static void test_wait_exit(void **state)
{
	static char lines[2][160];
	static struct step steps[2];
	const struct agent_ctr_exit code7 = { .cid = "c1", .pid = 231, .exit_code = 7 };
	const struct agent_ctr_exit killed = {
		.cid = "c1", .pid = 232, .exit_code = -1, .signo = 9
	};
	struct agent_client_ctr_exit ex;
	struct agent_client_err e;
	struct agent_client c;
	struct agent_line line;
	struct agent_msg m;
	struct fake *f;

	(void)state;
	/* The agent's own exit lines; the first after a while (the wait
	 * really waits, past the context's timeout). */
	assert_int_equal(agent_line_ctr_exit(&line, &code7), 0);
	snprintf(lines[0], sizeof(lines[0]), "%.*s", (int)line.len, line.data);
	agent_line_free(&line);
	assert_int_equal(agent_line_ctr_exit(&line, &killed), 0);
	snprintf(lines[1], sizeof(lines[1]), "%.*s", (int)line.len, line.data);
	agent_line_free(&line);
	assert_string_equal(
		lines[0],
		"{\"type\":\"exit\",\"cid\":\"c1\",\"exec\":0,\"pid\":231,\"exit_code\":7,\"signal\":null}\n");
	steps[0] = (struct step){ .reply = lines[0], .delay_ms = 400 };
	steps[1] = (struct step){ .reply = lines[1] };
	f = fake_start(steps, 2);
	c = client_for(f, 200);
	assert_int_equal(wait_once(&c, "c1", 5000, 0, &ex, &e), 0);
	assert_int_equal(e.fail, AGENT_FAIL_NONE);
	assert_int_equal(ex.pid, 231);
	assert_int_equal(ex.exit_code, 7);
	assert_int_equal(ex.signal, 0);
	assert_int_equal(wait_once(&c, "c1", 0, 2000, &ex, &e), 0);
	assert_int_equal(ex.pid, 232);
	assert_int_equal(ex.exit_code, -1);
	assert_int_equal(ex.signal, 9);
	fake_stop(f);
	assert_string_equal(f->req[0], "{\"type\":\"ctr_wait\",\"cid\":\"c1\"}\n");
	assert_agent_takes(f->req[0], AGENT_T_CTR_WAIT, &m);
	assert_int_equal(m.u.ctr.timeout_ms, 0);
	agent_msg_free(&m);
	free(f);
}

static void test_wait_hostile_exit(void **state)
{
	static const struct {
		const char *reply;
		int ret;
		enum agent_fail fail;
		const char *words;
	} cases[] = {
		{ "{\"type\":\"exit\",\"cid\":\"c2\",\"exec\":0,\"pid\":231,\"exit_code\":7,\"signal\":null}\n",
		  -EPROTO, AGENT_FAIL_PROTOCOL, "another container" },
		/* a prefix of our cid is another cid too */
		{ "{\"type\":\"exit\",\"cid\":\"c\",\"exec\":0,\"pid\":231,\"exit_code\":7,\"signal\":null}\n",
		  -EPROTO, AGENT_FAIL_PROTOCOL, "another container" },
		/* another exec's exit is not the init's */
		{ "{\"type\":\"exit\",\"cid\":\"c1\",\"exec\":1,\"pid\":231,\"exit_code\":7,\"signal\":null}\n",
		  -EPROTO, AGENT_FAIL_PROTOCOL, "exec 1" },
		{ "{\"type\":\"exit\",\"cid\":\"c1\",\"exec\":0,\"pid\":231,\"exit_code\":null,\"signal\":null}\n",
		  -EPROTO, AGENT_FAIL_PROTOCOL, "neither exit_code nor signal" },
		{ "{\"type\":\"exit\",\"cid\":\"c1\",\"exec\":0,\"pid\":231}\n", -EPROTO,
		  AGENT_FAIL_PROTOCOL, "exit_code" },
		{ "{\"type\":\"exit\",\"cid\":\"c1\",\"exec\":0,\"pid\":231,\"exit_code\":256,\"signal\":null}\n",
		  -EPROTO, AGENT_FAIL_PROTOCOL, "exit_code" },
		{ "{\"type\":\"exit\",\"cid\":\"c1\",\"exec\":0,\"pid\":231,\"exit_code\":null,\"signal\":65}\n",
		  -EPROTO, AGENT_FAIL_PROTOCOL, "signal" },
		{ "{\"type\":\"exit\",\"exec\":0,\"pid\":231,\"exit_code\":0,\"signal\":null}\n",
		  -EPROTO, AGENT_FAIL_PROTOCOL, "cid" },
		{ "{\"type\":\"exit\",\"cid\":\"c1\",\"exec\":0,\"pid\":-4,\"exit_code\":0,\"signal\":null}\n",
		  -EPROTO, AGENT_FAIL_PROTOCOL, "pid" },
		{ OK, -EPROTO, AGENT_FAIL_PROTOCOL, "'ok'" },
		{ "{\"type\":\"error\",\"code\":\"not_found\",\"message\":\"no container \\\"c1\\\"\"}\n",
		  -EREMOTEIO, AGENT_FAIL_AGENT, "no container" },
		/* closed before the reply: the VM went away */
		{ NULL, -ECONNRESET, AGENT_FAIL_CONNECT, "before replying" },
		/* closed inside it */
		{ "{\"type\":\"exit\",\"cid\":\"c1\",\"exec\":0,", -EPROTO, AGENT_FAIL_PROTOCOL,
		  "" },
	};
	enum { N = sizeof(cases) / sizeof(cases[0]) };
	struct step steps[N];
	struct agent_client_ctr_exit ex;
	struct agent_client_err e;
	struct agent_client c;
	struct fake *f;

	(void)state;
	for (size_t i = 0; i < N; i++) {
		struct fake *g;
		int r;

		steps[i] = (struct step){ .reply = cases[i].reply };
		g = fake_start(&steps[i], 1);
		c = client_for(g, 2000);
		r = wait_once(&c, "c1", 5000, 2000, &ex, &e);

		if (r != cases[i].ret || e.fail != cases[i].fail || !strstr(e.msg, cases[i].words))
			fail_msg("case %zu: %d fail=%d '%s', wanted %d fail=%d '%s'", i, r, e.fail,
				 e.msg, cases[i].ret, cases[i].fail, cases[i].words);
		fake_stop(g);
		free(g);
	}
	/* The wait's own request is refused before connecting. */
	f = fake_start(NULL, 0);
	c = client_for(f, 2000);
	assert_int_equal(wait_once(&c, ".", 0, 0, &ex, &e), -EINVAL);
	assert_err(&e, AGENT_FAIL_REQUEST, AGENT_E_BAD_FIELD);
	fake_stop(f);
	free(f);
	agent_client_ctr_wait_close(NULL);
}

static void test_wait_end_timeout(void **state)
{
	/* The agent holds the exit back (the container still runs). */
	static const struct step steps[] = { { .reply = NULL, .hold = true } };
	struct agent_client_ctr_wait *w = NULL;
	struct agent_client_ctr_exit ex;
	struct agent_client_err e;
	struct agent_client c;
	struct fake *f = fake_start(steps, 1);
	int64_t t0, dt;

	(void)state;
	c = client_for(f, 2000);
	assert_int_equal(agent_client_ctr_wait_begin(&c, "c1", 0, &w, &e), 0);
	assert_non_null(w);
	t0 = mono_ms();
	assert_int_equal(agent_client_ctr_wait_end(w, 300, &ex, &e), -ETIMEDOUT);
	dt = mono_ms() - t0;
	assert_int_equal(e.fail, AGENT_FAIL_TIMEOUT);
	assert_msg_has(&e, "ctr_wait");
	/* its own timeout, not the context's 2 s */
	if (dt < 250 || dt > 1500)
		fail_msg("wait_end returned after %lld ms, wanted about 300", (long long)dt);
	agent_client_ctr_wait_close(w);
	fake_stop(f);
	free(f);
}

/* ---- ctr_exec, and ctr_start of an exec ---- */

/* What goes out is a ctr_exec with the caller's process whole; the agent's
 * pid comes back only from a reply naming the same exec; a request the
 * agent would refuse (a bad process, the init's number, none) is not sent;
 * ctr_start names the exec it starts. */
static void test_exec(void **state)
{
	static char created[128];
	static struct step steps[] = {
		{ .reply = created },
		{ .reply = "{\"type\":\"ctr_created\",\"cid\":\"c1\",\"exec\":3,\"pid\":241}\n" },
		{ .reply = "{\"type\":\"ctr_created\",\"cid\":\"c1\",\"pid\":241}\n" },
		{ .reply =
			  "{\"type\":\"error\",\"code\":\"invalid_state\",\"message\":\"ctr_exec: container \\\"c1\\\" is not running (its init ended)\"}\n" },
		{ .reply = OK },
	};
	json_t *proc = load("{\"args\":[\"sh\",\"-c\",\"echo $$\"],\"env\":[\"PATH=/bin\"],"
			    "\"uid\":1000,\"terminal\":true,\"rows\":7,\"cols\":9}"),
	       *bad = load("{\"args\":[]}"), *sent;
	struct agent_client_err e;
	struct agent_client c;
	struct agent_line line;
	struct agent_msg m;
	struct fake *f;
	int pid = -1;

	(void)state;
	assert_int_equal(agent_line_ctr_created(&line, "c1", 1, 240), 0);
	snprintf(created, sizeof(created), "%.*s", (int)line.len, line.data);
	agent_line_free(&line);
	f = fake_start(steps, 5);
	c = client_for(f, 2000);
	assert_int_equal(agent_client_ctr_exec(&c, "c1", 1, proc, &pid, &e), 0);
	assert_int_equal(pid, 240);
	assert_int_equal(agent_client_ctr_exec(&c, "c1", 2, proc, &pid, &e), -EPROTO);
	assert_err(&e, AGENT_FAIL_PROTOCOL, AGENT_E_IO_ERROR);
	assert_msg_has(&e, "exec 3, not 2");
	assert_int_equal(pid, 0);
	assert_int_equal(agent_client_ctr_exec(&c, "c1", 2, proc, &pid, &e), -EPROTO);
	assert_int_equal(e.fail, AGENT_FAIL_PROTOCOL);
	assert_int_equal(agent_client_ctr_exec(&c, "c1", 3, proc, &pid, &e), -EREMOTEIO);
	assert_err(&e, AGENT_FAIL_AGENT, AGENT_E_INVALID_STATE);
	assert_msg_has(&e, "its init ended");
	/* Refused here, as the agent would: none of these connects. */
	assert_int_equal(agent_client_ctr_exec(&c, "c1", 4, bad, &pid, &e), -EINVAL);
	assert_err(&e, AGENT_FAIL_REQUEST, AGENT_E_BAD_FIELD);
	assert_int_equal(agent_client_ctr_exec(&c, "c1", 0, proc, &pid, &e), -EINVAL);
	assert_msg_has(&e, "'exec'");
	assert_int_equal(agent_client_ctr_exec(&c, "c1", 4, NULL, &pid, &e), -EINVAL);
	assert_msg_has(&e, "'process'");
	assert_int_equal(agent_client_ctr_exec(&c, "..", 4, proc, &pid, &e), -EINVAL);
	assert_msg_has(&e, "'cid'");
	assert_int_equal(agent_client_ctr_start(&c, "c1", 5, &e), 0);
	fake_stop(f);
	assert_agent_takes(f->req[0], AGENT_T_CTR_EXEC, &m);
	assert_string_equal(m.u.ctr_exec.cid, "c1");
	assert_int_equal(m.u.ctr_exec.exec, 1);
	assert_true(m.u.ctr_exec.proc.terminal && m.u.ctr_exec.proc.rows == 7);
	agent_msg_free(&m);
	sent = load(f->req[0]);
	assert_true(json_equal(json_object_get(sent, "process"), proc));
	json_decref(sent);
	assert_agent_takes(f->req[4], AGENT_T_CTR_START, &m);
	assert_int_equal(m.u.ctr.exec, 5);
	agent_msg_free(&m);
	assert_int_equal(proc->refcount, 1);
	json_decref(proc);
	json_decref(bad);
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create),
		cmocka_unit_test(test_create_agent_error),
		cmocka_unit_test(test_create_hostile_reply),
		cmocka_unit_test(test_create_refused_unsent),
		cmocka_unit_test(test_stdio_raw_stream),
		cmocka_unit_test(test_stdio_errors),
		cmocka_unit_test(test_controls_send),
		cmocka_unit_test(test_controls_refused_unsent),
		cmocka_unit_test(test_controls_agent_errors),
		cmocka_unit_test(test_wait_exit),
		cmocka_unit_test(test_wait_hostile_exit),
		cmocka_unit_test(test_wait_end_timeout),
		cmocka_unit_test(test_exec),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
