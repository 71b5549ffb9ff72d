/*
 * libkiln's agent API for what kilnd asks of a guest beyond processes
 * (kiln/agent.h: ping, info, stat, list, mkdir, remove, rename,
 * tcp_connect, watch, streaming read, write and tar), through a kiln-vmm-like socket to the agent's real
 * handlers serving a scratch directory of this machine: results arrive
 * converted, the agent's error codes as errnos with the message on the
 * handle with the failure's kind, a struct whose size field is too
 * small is refused, and a callback that stops is obeyed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kiln/agent.h>

#include "guest-init/agent/agent_conn.h"
#include "guest-init/agent/agent_files.h"
#include "guest-init/agent/agent_tcp.h"
#include "guest-init/agent/agent_serve.h"
#include "lib/base/mono.h"
#include "fake_agent.h"
#include "tests/unit/test_ca_pem.h"

/* kiln-vmm's side and the agent's connection thread (fake_agent.h):
 * files, tcp_connect and watch by the real handlers, ping and info from
 * the protocol's own line builders. */
static void serve_one(struct agent_conn *c, struct agent_msg *m)
{
	struct agent_info info = { .kernel = "6.1.0-kiln",
				   .hostname = "box1",
				   .cpus = 2,
				   .mem_total = 1 << 27,
				   .mem_available = 1 << 26,
				   .uptime_ms = 412,
				   .time_ns = 17,
				   .processes = 3 };
	struct agent_line l;

	switch (m->type) {
	case AGENT_T_PING:
		agent_conn_send_line(c, &l, agent_line_pong(&l));
		break;
	case AGENT_T_INFO:
		agent_conn_send_line(c, &l, agent_line_info(&l, &info));
		break;
	case AGENT_T_TCP_CONNECT:
		agent_tcp_serve(c, m);
		break;
	case AGENT_T_WATCH:
		agent_serve_watch(NULL, c, m);
		break;
	default:
		agent_files_serve(c, m);
	}
}

static kiln_agent *start(struct fake_agent *v, int nconn)
{
	kiln_agent *a;

	fake_agent_start(v, nconn, serve_one);
	assert_int_equal(kiln_agent_new(v->v.path, &a), 0);
	return a;
}

static void stop(struct fake_agent *v, kiln_agent *a)
{
	fake_agent_stop(v);
	kiln_agent_free(a);
}

static void test_ping_and_info(void **state)
{
	struct fake_agent v;
	kiln_agent *a = start(&v, 2);
	struct kiln_guest_info info = { .size = sizeof(info) }, small = { .size = 8 };
	int protocol = 0;

	(void)state;
	assert_int_equal(kiln_agent_ping(a, &protocol), 0);
	assert_int_equal(protocol, 1);
	assert_int_equal(kiln_agent_info(a, &info), 0);
	assert_string_equal(info.kernel, "6.1.0-kiln");
	assert_string_equal(info.hostname, "box1");
	assert_int_equal(info.cpus, 2);
	assert_true(info.mem_total == 1 << 27 && info.uptime_ms == 412 && info.processes == 3);
	assert_int_equal(info.protocol, 1);
	/* Refused before any connection (the fake serves two only). */
	assert_int_equal(kiln_agent_info(a, &small), -EINVAL);
	assert_non_null(strstr(kiln_agent_errmsg(a), "size field is too small"));
	stop(&v, a);
}

/* list's callback: "depth name kind" lines, stopping when asked. */
struct seen {
	char text[512];
	int stop_after;
	int n;
};

static int on_entry(void *arg, const struct kiln_file_info *e)
{
	struct seen *s = arg;
	const char *base = strrchr(e->path, '/');
	size_t len = strlen(s->text);

	snprintf(s->text + len, sizeof(s->text) - len, "%u %s %s\n", e->depth,
		 base ? base + 1 : e->path, kiln_file_kind_name(e->kind));
	return ++s->n == s->stop_after ? -ECANCELED : 0;
}

static void test_files_metadata(void **state)
{
	char dir[64] = "/tmp/kiln-lk-agent-XXXXXX", p[160], q[160];
	struct kiln_file_info st = { .size = sizeof(st) };
	struct kiln_list_end end = { .size = sizeof(end) };
	struct seen seen = { .stop_after = 0 };
	struct fake_agent v;
	kiln_agent *a;

	(void)state;
	assert_non_null(mkdtemp(dir));
	a = start(&v, 12);
	snprintf(p, sizeof(p), "%s/m/a/b", dir);
	/* The agent runs as this test's user: AS_ROOT keeps it so. */
	assert_int_equal(kiln_agent_mkdir(a, p, KILN_AGENT_AS_ROOT, 0700), -ENOENT);
	assert_string_equal(kiln_agent_errcode(a), "not_found");
	assert_int_equal(kiln_agent_mkdir(a, p, KILN_AGENT_AS_ROOT | KILN_AGENT_PARENTS, 0700), 0);
	assert_int_equal(kiln_agent_mkdir(a, p, KILN_AGENT_AS_ROOT, 0700), -EEXIST);
	assert_string_equal(kiln_agent_errcode(a), "exists");
	assert_int_equal(kiln_agent_stat(a, p, KILN_AGENT_AS_ROOT, &st), 0);
	assert_int_equal(st.kind, KILN_FILE_DIR);
	assert_int_equal(st.mode & 0777, 0700);
	assert_int_equal(st.uid, getuid());
	kiln_free((void *)st.path);
	kiln_free((void *)st.target);
	snprintf(q, sizeof(q), "%s/m/l", dir);
	assert_int_equal(symlink("a", q), 0);
	assert_int_equal(kiln_agent_stat(a, q, KILN_AGENT_AS_ROOT | KILN_AGENT_NOFOLLOW, &st), 0);
	assert_int_equal(st.kind, KILN_FILE_SYMLINK);
	assert_string_equal(st.target, "a");
	kiln_free((void *)st.path);
	kiln_free((void *)st.target);

	snprintf(p, sizeof(p), "%s/m", dir);
	assert_int_equal(kiln_agent_list(a, p, KILN_AGENT_AS_ROOT, 3, 0, on_entry, &seen, &end), 0);
	/* Depth-first, a directory before its contents; siblings in the
	 * directory's own order. */
	assert_true(strcmp(seen.text, "1 a dir\n2 b dir\n1 l symlink\n") == 0 ||
		    strcmp(seen.text, "1 l symlink\n1 a dir\n2 b dir\n") == 0);
	assert_true(end.count == 3 && !end.truncated && end.skipped == 0);
	memset(&seen, 0, sizeof(seen));
	seen.stop_after = 1;
	assert_int_equal(kiln_agent_list(a, p, KILN_AGENT_AS_ROOT, 3, 0, on_entry, &seen, NULL),
			 -ECANCELED);
	assert_int_equal(seen.n, 1);

	snprintf(p, sizeof(p), "%s/m/a", dir);
	snprintf(q, sizeof(q), "%s/m/l", dir);
	assert_int_equal(kiln_agent_rename(a, p, q, KILN_AGENT_AS_ROOT), -EEXIST);
	assert_int_equal(kiln_agent_rename(a, q, p, KILN_AGENT_AS_ROOT | KILN_AGENT_OVERWRITE),
			 -EISDIR);
	snprintf(q, sizeof(q), "%s/m/c", dir);
	assert_int_equal(kiln_agent_rename(a, p, q, KILN_AGENT_AS_ROOT), 0);
	assert_int_equal(kiln_agent_remove(a, q, KILN_AGENT_AS_ROOT), -ENOTEMPTY);
	assert_string_equal(kiln_agent_errcode(a), "not_empty");
	assert_int_equal(kiln_agent_remove(a, q, KILN_AGENT_AS_ROOT | KILN_AGENT_RECURSIVE), 0);
	stop(&v, a);
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	assert_int_equal(system(p), 0);
}

/* A read's or download's sink: collects up to cap bytes, and stops once
 * it holds `stop` bytes (0: never). */
struct sink {
	char *buf;
	size_t n, cap, stop;
};

static int on_data(void *arg, const void *data, size_t n)
{
	struct sink *k = arg;

	if (n > k->cap - k->n)
		return -EFBIG;
	memcpy(k->buf + k->n, data, n);
	k->n += n;
	return k->stop && k->n >= k->stop ? -ECANCELED : 0;
}

/* A tar upload's source: a buffer's bytes in 7-byte pieces. */
struct source {
	const char *p;
	size_t left;
};

static long from_buf(void *arg, void *buf, size_t n)
{
	struct source *s = arg;

	n = n < 7 ? n : 7;
	n = n < s->left ? n : s->left;
	memcpy(buf, s->p, n);
	s->p += n;
	s->left -= n;
	return (long)n;
}

/* A source that claims more bytes than the buffer it was given holds. */
static long overlong(void *arg, void *buf, size_t n)
{
	(void)arg;
	memset(buf, 'x', n);
	return (long)n + 1;
}

static long refuse(void *arg, void *buf, size_t n)
{
	(void)arg, (void)buf, (void)n;
	return -EPIPE;
}

/* Write `text` through a pipe to the guest file p. */
static int write_text(kiln_agent *a, const char *p, const struct kiln_write_opts *o,
		      const char *text, uint64_t *bytes)
{
	int fds[2], r;

	assert_int_equal(pipe(fds), 0);
	assert_int_equal(write(fds[1], text, strlen(text)), (ssize_t)strlen(text));
	close(fds[1]);
	r = kiln_agent_write_fd(a, p, o, fds[0], bytes);
	close(fds[0]);
	return r;
}

static void test_read_write_streams(void **state)
{
	char dir[64] = "/tmp/kiln-lk-io-XXXXXX", p[160], buf[64];
	struct kiln_write_opts wo = { .size = sizeof(wo),
				      .flags = KILN_AGENT_AS_ROOT,
				      .mode = 0600 };
	struct kiln_read_opts ro = { .size = sizeof(ro), .flags = KILN_AGENT_AS_ROOT };
	struct kiln_read_info info = { .size = sizeof(info) };
	struct sink k = { .buf = buf, .cap = sizeof(buf) };
	struct fake_agent v;
	struct stat sst;
	uint64_t bytes = 1;
	kiln_agent *a;

	(void)state;
	assert_non_null(mkdtemp(dir));
	a = start(&v, 6);
	snprintf(p, sizeof(p), "%s/f", dir);
	/* NO_CREATE on a file that is not there: the agent's not_found. */
	wo.flags |= KILN_AGENT_NO_CREATE;
	assert_int_equal(write_text(a, p, &wo, "x", &bytes), -ENOENT);
	assert_int_equal(kiln_agent_errkind(a), KILN_AGENT_FAIL_AGENT);
	assert_string_equal(kiln_agent_errcode(a), "not_found");
	assert_int_equal(bytes, 0);
	wo.flags &= ~KILN_AGENT_NO_CREATE;
	assert_int_equal(write_text(a, p, &wo, "hello, guest", &bytes), 0);
	assert_int_equal(bytes, 12);
	assert_int_equal(stat(p, &sst), 0);
	assert_int_equal(sst.st_mode & 0777, 0600);
	wo.flags |= KILN_AGENT_APPEND;
	assert_int_equal(write_text(a, p, &wo, "!", NULL), 0);
	/* Refused before a connection: the fake serves six. */
	wo.size = 4;
	assert_int_equal(write_text(a, p, &wo, "x", NULL), -EINVAL);
	assert_int_equal(kiln_agent_errkind(a), KILN_AGENT_FAIL_HOST);

	/* A range, and what came. */
	ro.offset = 7;
	ro.length = 3;
	ro.has_length = 1;
	assert_int_equal(kiln_agent_read(a, p, &ro, on_data, &k, &info), 0);
	assert_int_equal(k.n, 3);
	assert_memory_equal(k.buf, "gue", 3);
	assert_true(info.file_size == 13 && info.bytes == 3);
	/* A callback that stops: its value, a failure of this side. */
	k.n = 0;
	k.stop = 1;
	ro.has_length = 0;
	assert_int_equal(kiln_agent_read(a, p, &ro, on_data, &k, NULL), -ECANCELED);
	assert_int_equal(kiln_agent_errkind(a), KILN_AGENT_FAIL_HOST);
	assert_int_equal(kiln_agent_read(a, dir, &ro, on_data, &k, NULL), -EISDIR);
	assert_string_equal(kiln_agent_errcode(a), "is_directory");
	assert_int_equal(kiln_agent_read(a, p, NULL, NULL, NULL, NULL), -EINVAL);
	stop(&v, a);
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	assert_int_equal(system(p), 0);
}

static void test_tar_streams(void **state)
{
	char dir[64] = "/tmp/kiln-lk-tar-XXXXXX", p[160];
	struct kiln_tar_stats down = { .size = sizeof(down) }, up = { .size = sizeof(up) },
			      small = { .size = 4 };
	struct sink k = { .cap = 64 << 10 };
	struct source src;
	struct fake_agent v;
	kiln_agent *a;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_non_null(k.buf = malloc(k.cap));
	snprintf(p, sizeof(p), "%s/in", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/in/sub", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/in/sub/a.txt", dir);
	assert_non_null(f = fopen(p, "w"));
	fputs("tar me", f);
	fclose(f);
	a = start(&v, 4);
	assert_int_equal(kiln_agent_tar_download_cb(a, dir, 0, on_data, &k, &small), -EINVAL);
	snprintf(p, sizeof(p), "%s/in", dir);
	assert_int_equal(kiln_agent_tar_download_cb(a, p, KILN_AGENT_AS_ROOT, on_data, &k, &down),
			 0);
	assert_true(down.files == 1 && down.dirs >= 1 && down.bytes == k.n && k.n % 512 == 0);
	/* The archive up again, in small pieces, into a new directory. */
	src = (struct source){ k.buf, k.n };
	snprintf(p, sizeof(p), "%s/out", dir);
	assert_int_equal(kiln_agent_tar_upload_cb(a, p, KILN_AGENT_AS_ROOT, from_buf, &src, &up),
			 0);
	assert_true(up.files == 1 && up.dirs == down.dirs && up.bytes == k.n);
	snprintf(p, sizeof(p), "%s/out/sub/a.txt", dir);
	assert_non_null(f = fopen(p, "r"));
	fclose(f);
	/* A source that fails abandons the upload with its value. */
	snprintf(p, sizeof(p), "%s/out2", dir);
	assert_int_equal(kiln_agent_tar_upload_cb(a, p, KILN_AGENT_AS_ROOT, refuse, NULL, NULL),
			 -EPIPE);
	assert_int_equal(kiln_agent_errkind(a), KILN_AGENT_FAIL_HOST);
	/* One that claims more than its buffer: refused, nothing past it sent. */
	snprintf(p, sizeof(p), "%s/out3", dir);
	assert_int_equal(kiln_agent_tar_upload_cb(a, p, KILN_AGENT_AS_ROOT, overlong, NULL, NULL),
			 -EINVAL);
	assert_int_equal(kiln_agent_errkind(a), KILN_AGENT_FAIL_HOST);
	assert_non_null(strstr(kiln_agent_errmsg(a), "for a 65536-byte buffer"));
	stop(&v, a);
	free(k.buf);
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	assert_int_equal(system(p), 0);
}

/* Nothing listens behind the socket: the host's "unreachable". */
static void test_unreachable(void **state)
{
	kiln_agent *a;
	struct kiln_file_info st = { .size = sizeof(st) };

	(void)state;
	assert_int_equal(kiln_agent_new("/nonexistent/kiln-vsock.sock", &a), 0);
	assert_int_equal(kiln_agent_errkind(a), KILN_AGENT_FAIL_NONE);
	assert_true(kiln_agent_stat(a, "/", 0, &st) < 0);
	assert_int_equal(kiln_agent_errkind(a), KILN_AGENT_FAIL_UNREACHABLE);
	assert_string_equal(kiln_agent_errcode(a), "unreachable");
	kiln_agent_free(a);
}

/* ---- processes and the guest's settings: a scripted agent ---- */

/* The requests the scripted agent saw, one header line each. */
static char seen_hdrs[2048];

static void reply(struct agent_conn *c, const char *text)
{
	size_t n = strlen(text);

	assert_int_equal(write(c->fd, text, n), (ssize_t)n);
}

#define EXIT_LINE(id)                                                                            \
	"{\"type\":\"exit\",\"id\":" #id ",\"pid\":61,\"exit_code\":null,\"signal\":15,"         \
	"\"timed_out\":false,\"stdout_bytes\":6,\"stderr_bytes\":3,\"wall_us\":9,\"user_us\":1," \
	"\"sys_us\":2}\n"

/* What the agent answers, by request: canned lines in the protocol's
 * shapes (docs/agent-protocol.md), the request's type noted. */
static void serve_scripted(struct agent_conn *c, struct agent_msg *m)
{
	const char *t = agent_type_name(m->type);
	size_t n = strlen(seen_hdrs);

	/* configure notes its trust_ca: +ca (a certificate), -ca (""), none. */
	snprintf(seen_hdrs + n, sizeof(seen_hdrs) - n, "%s%s ", t ? t : "?",
		 m->type != AGENT_T_CONFIGURE || !m->u.conf.trust_ca ? ""
			 : *m->u.conf.trust_ca                       ? "+ca"
								     : "-ca");
	switch (m->type) {
	case AGENT_T_EXEC:
		reply(c,
		      "{\"type\":\"stdout\",\"len\":3}\nhi\n"
		      "{\"type\":\"exit\",\"pid\":57,\"exit_code\":3,\"signal\":null,"
		      "\"timed_out\":false,\"stdout_bytes\":3,\"stderr_bytes\":0,"
		      "\"stdout_truncated\":false,\"stderr_truncated\":false,\"wall_us\":1830,"
		      "\"user_us\":412,\"sys_us\":907}\n");
		break;
	case AGENT_T_RUN:
		reply(c,
		      "{\"type\":\"stderr\",\"len\":2}\nno"
		      "{\"type\":\"result\",\"size\":11,\"len\":11}\n{\"value\":1}"
		      "{\"type\":\"exit\",\"pid\":58,\"exit_code\":0,\"signal\":null,"
		      "\"timed_out\":false,\"stdout_bytes\":0,\"stderr_bytes\":2,"
		      "\"stdout_truncated\":false,\"stderr_truncated\":false,\"wall_us\":5,"
		      "\"user_us\":1,\"sys_us\":1}\n");
		break;
	case AGENT_T_ATTACH:
		if (m->u.ctl.id == 9) {
			/* A hostile agent: nothing but gaps, for 3 s. */
			char line[96];
			int64_t end = mono_ms() + 3000;
			uint64_t seq = 0;

			reply(c,
			      "{\"type\":\"attached\",\"id\":9,\"pid\":62,\"pty\":false,"
			      "\"running\":true,\"seq\":0}\n");
			while (mono_ms() < end) {
				int n = snprintf(line, sizeof(line),
						 "{\"type\":\"gap\",\"seq\":%llu,\"bytes\":1}\n",
						 (unsigned long long)seq++);

				/* until the client closes (no SIGPIPE then) */
				if (send(c->fd, line, (size_t)n, MSG_NOSIGNAL) != n)
					break;
			}
			break;
		}
		/* From seq 2, which the ring lost: a gap, output, the exit. */
		reply(c,
		      "{\"type\":\"attached\",\"id\":4,\"pid\":61,\"pty\":true,\"running\":false,"
		      "\"seq\":2}\n"
		      "{\"type\":\"gap\",\"seq\":2,\"bytes\":100}\n"
		      "{\"type\":\"stderr\",\"seq\":102,\"len\":3}\nerr"
		      "{\"type\":\"gap\",\"seq\":105,\"bytes\":5}\n" EXIT_LINE(4));
		break;
	case AGENT_T_LIST_PROCESSES:
		reply(c,
		      "{\"type\":\"process\",\"id\":1,\"pid\":61,\"argv\":[\"sh\",\"-i\"],"
		      "\"pty\":true,\"running\":true,\"exit_code\":null,\"signal\":null,"
		      "\"timed_out\":false,\"seq\":17,\"attached\":1}\n"
		      "{\"type\":\"process\",\"id\":3,\"pid\":64,\"argv0\":\"sleep\","
		      "\"argv_truncated\":true,\"pty\":false,\"running\":false,\"exit_code\":null,"
		      "\"signal\":15,\"timed_out\":false,\"seq\":0,\"attached\":0}\n"
		      "{\"type\":\"end\",\"count\":2}\n");
		break;
	case AGENT_T_RESIZE:
		reply(c,
		      "{\"type\":\"error\",\"code\":\"invalid_state\",\"message\":\"resize: process 9 has no terminal\"}\n");
		break;
	case AGENT_T_CONFIGURE:
	case AGENT_T_PING:
		reply(c,
		      m->type == AGENT_T_PING ? "{\"type\":\"pong\",\"protocol\":1}\n"
					      : "{\"type\":\"ok\"}\n");
		break;
	default:
		reply(c,
		      "{\"type\":\"error\",\"code\":\"io_error\",\"message\":\"not scripted\"}\n");
	}
}

static int collect_out(void *arg, enum kiln_stream st, const void *data, size_t n)
{
	struct sink *k = arg;

	assert_int_equal(st, KILN_STDERR);
	return on_data(k, data, n);
}

static void test_exec_and_run(void **state)
{
	const char *argv[] = { "sh", "-c", "echo hi; exit 3", NULL };
	struct kiln_exec_opts o = { .size = sizeof(o), .argv = argv, .flags = KILN_AGENT_CONFINE };
	struct kiln_exit_status st = { .size = sizeof(st) };
	struct kiln_run_result rr = { .size = sizeof(rr) };
	char buf[16];
	struct sink k = { .buf = buf, .cap = sizeof(buf) };
	struct fake_agent v;
	kiln_agent *a;
	char *out = NULL;
	size_t n = 0;

	(void)state;
	seen_hdrs[0] = '\0';
	fake_agent_start(&v, 3, serve_scripted);
	assert_int_equal(kiln_agent_new(v.v.path, &a), 0);
	assert_int_equal(kiln_agent_exec(a, &o, &st, &out, &n, NULL, NULL), 0);
	assert_string_equal(out, "hi\n");
	kiln_free(out);
	assert_true(st.exit_code == 3 && st.wall_us == 1830 && st.user_us == 412 &&
		    st.sys_us == 907);
	assert_true(st.host_us > 0);

	o.argv = NULL;
	o.lang = "python";
	o.code = "print(1)";
	o.code_len = 8;
	assert_int_equal(kiln_agent_run(a, &o, &st, NULL, NULL, &out, &n, &rr), 0);
	assert_string_equal(out, "no");
	kiln_free(out);
	assert_true(rr.len == 11 && rr.file_size == 11);
	assert_string_equal(rr.data, "{\"value\":1}");
	kiln_free(rr.data);
	assert_int_equal(kiln_agent_run_stream(a, &o, collect_out, &k, &st, NULL), 0);
	assert_memory_equal(k.buf, "no", 2);
	/* Refused before a connection: the fake serves three. */
	o.lang = "cobol";
	assert_int_equal(kiln_agent_run(a, &o, &st, NULL, NULL, NULL, NULL, NULL), -EINVAL);
	assert_int_equal(kiln_agent_errkind(a), KILN_AGENT_FAIL_REQUEST);
	assert_string_equal(kiln_agent_errcode(a), "bad_field");
	o.lang = NULL;
	assert_int_equal(kiln_agent_run(a, &o, &st, NULL, NULL, NULL, NULL, NULL), -EINVAL);
	fake_agent_stop(&v);
	kiln_agent_free(a);
	assert_string_equal(seen_hdrs, "exec run run ");
}

/* A caller built against 0.1.0: its event and exit status are shorter. */
struct old_exit_status {
	size_t size;
	uint32_t id;
	int pid, exit_code, signal, timed_out;
	uint64_t stdout_bytes, stderr_bytes;
	int stdout_truncated, stderr_truncated;
	uint64_t wall_us;
};
struct old_proc_event {
	size_t size;
	enum kiln_stream stream;
	const void *data;
	size_t len;
	uint64_t lost;
	int exited;
	struct old_exit_status exit;
};

struct seen_procs {
	char text[128];
};

static int on_proc(void *arg, const struct kiln_proc_entry *p)
{
	struct seen_procs *s = arg;
	size_t n = strlen(s->text);

	snprintf(s->text + n, sizeof(s->text) - n, "%u:%s:%zu:%d:%d:%llu:%u ", p->id, p->argv[0],
		 p->argc, p->running, p->signal, (unsigned long long)p->seq, p->attached);
	return 0;
}

static void test_attach_list_resize(void **state)
{
	struct kiln_proc_event ev = { .size = sizeof(ev) };
	struct kiln_proc_info info = { .size = sizeof(info) };
	struct old_proc_event old = { .size = sizeof(old) };
	struct seen_procs sp = { "" };
	struct fake_agent v;
	kiln_proc *p;
	kiln_agent *a;
	uint64_t count = 0;

	(void)state;
	seen_hdrs[0] = '\0';
	fake_agent_start(&v, 10, serve_scripted);
	assert_int_equal(kiln_agent_new(v.v.path, &a), 0);
	assert_int_equal(kiln_agent_attach_at(a, 4, KILN_ATTACH_SEQ, 2, &p), 0);
	assert_int_equal(kiln_proc_get_info(p, &info), 0);
	assert_true(info.id == 4 && info.pid == 61 && info.pty && !info.running && info.seq == 2);
	assert_true(kiln_proc_fd(p) >= 0);
	/* The gap comes folded into the next event, its start at seq - lost. */
	assert_int_equal(kiln_proc_next(p, 2000, &ev), 0);
	assert_true(ev.stream == KILN_STDERR && ev.len == 3 && ev.lost == 100 && ev.seq == 102);
	assert_int_equal(kiln_proc_next(p, 2000, &ev), 0);
	assert_true(ev.exited && ev.lost == 5 && ev.seq == 110);
	assert_true(ev.exit.signal == 15 && ev.exit.exit_code == -1 && ev.exit.user_us == 1 &&
		    ev.exit.sys_us == 2);
	assert_int_equal(kiln_proc_next(p, 2000, &ev), -EPIPE);
	kiln_proc_close(p);

	/* The same stream read by an older caller: no byte past its struct. */
	assert_int_equal(kiln_agent_attach(a, 4, &p), 0);
	assert_int_equal(kiln_proc_next(p, 2000, (struct kiln_proc_event *)&old), 0);
	assert_int_equal(kiln_proc_next(p, 2000, (struct kiln_proc_event *)&old), 0);
	assert_true(old.exited && old.exit.size == sizeof(old.exit) && old.exit.signal == 15 &&
		    old.exit.wall_us == 9);
	kiln_proc_close(p);

	/* Gaps alone do not keep the caller past its timeout; none is lost. */
	{
		int64_t t0;

		assert_int_equal(kiln_agent_attach(a, 9, &p), 0);
		t0 = mono_ms();
		assert_int_equal(kiln_proc_next(p, 300, &ev), -ETIMEDOUT);
		assert_true(mono_ms() - t0 < 2500);
		assert_string_equal(kiln_proc_errcode(p), "timeout");
		kiln_proc_close(p);
	}

	assert_int_equal(kiln_agent_list_procs(a, on_proc, &sp, &count), 0);
	assert_int_equal(count, 2);
	assert_string_equal(sp.text, "1:sh:2:1:0:17:1 3:sleep:1:0:15:0:0 ");
	assert_int_equal(kiln_agent_proc_resize(a, 9, 24, 80), -EINVAL);
	assert_string_equal(kiln_agent_errcode(a), "invalid_state");
	assert_int_equal(kiln_agent_errkind(a), KILN_AGENT_FAIL_AGENT);
	assert_non_null(strstr(kiln_agent_errmsg(a), "no terminal"));
	assert_int_equal(kiln_agent_attach_at(a, 4, (enum kiln_attach_from)7, 0, &p), -EINVAL);
	assert_null(p);
	{
		struct kiln_guest_config cfg = { .size = sizeof(cfg), .hostname = "fork-1" };

		assert_int_equal(kiln_agent_configure(a, &cfg), 0);
		cfg.trust_ca = TEST_CA_PEM;
		assert_int_equal(kiln_agent_configure(a, &cfg), 0);
		/* A caller built before trust_ca: its size ends at mtu, the rest unread. */
		cfg.size = offsetof(struct kiln_guest_config, trust_ca);
		assert_int_equal(kiln_agent_configure(a, &cfg), 0);
		cfg.size = offsetof(struct kiln_guest_config, mtu);
		assert_int_equal(kiln_agent_configure(a, &cfg), -EINVAL);
		cfg.size = 4;
		assert_int_equal(kiln_agent_configure(a, &cfg), -EINVAL);
		assert_int_equal(kiln_agent_trust_ca(a, TEST_CA_PEM), 0);
		assert_int_equal(kiln_agent_trust_ca(a, NULL), 0);
		/* A private key is no certificate: refused before it is sent. */
		assert_int_equal(
			kiln_agent_trust_ca(
				a,
				"-----BEGIN PRIVATE KEY-----\nMAEA\n-----END PRIVATE KEY-----\n"),
			-EINVAL);
		assert_string_equal(kiln_agent_errcode(a), "bad_field");
		assert_non_null(strstr(kiln_agent_errmsg(a), "BEGIN CERTIFICATE"));
	}
	fake_agent_stop(&v);
	kiln_agent_free(a);
	assert_string_equal(
		seen_hdrs,
		"attach attach attach list_processes resize configure configure+ca configure configure+ca configure-ca ");
}

static void test_wait_ready_hold_and_vsock(void **state)
{
	struct fake_agent v;
	kiln_agent *a;
	int fd = -1;
	char buf[64] = "";

	(void)state;
	seen_hdrs[0] = '\0';
	fake_agent_start(&v, 2, serve_scripted);
	assert_int_equal(kiln_agent_new(v.v.path, &a), 0);
	assert_int_equal(kiln_agent_wait_ready_hold(a, 2000, 500), 0);
	/* A raw vsock port: the VMM's handshake only, then the service's
	 * bytes. The fake VMM knows port 1024 alone, so the service is the
	 * scripted agent, reading our bytes as its request. */
	assert_int_equal(kiln_agent_vsock_connect(a, 1024, &fd), 0);
	assert_int_equal(write(fd, "{\"type\":\"ping\"}\n", 16), 16);
	for (int i = 0; i < 500 && read(fd, buf, sizeof(buf) - 1) <= 0; i++)
		usleep(10000);
	assert_non_null(strstr(buf, "pong"));
	close(fd);
	fake_agent_stop(&v);
	kiln_agent_free(a);
	assert_string_equal(seen_hdrs, "ping ping ");
}

static void test_tcp_connect(void **state)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	struct fake_agent v;
	kiln_agent *a;
	int ls, fd = -1, peer;
	char buf[8] = "";

	(void)state;
	ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(ls, 1), 0);
	assert_int_equal(getsockname(ls, (struct sockaddr *)&sa, &sl), 0);
	a = start(&v, 1);
	assert_int_equal(kiln_agent_tcp_connect(a, ntohs(sa.sin_port), NULL, &fd), 0);
	peer = accept(ls, NULL, NULL);
	assert_true(peer >= 0);
	assert_int_equal(write(peer, "hi", 2), 2);
	for (int i = 0; i < 500 && recv(fd, buf, sizeof(buf) - 1, 0) <= 0; i++)
		usleep(10000);
	assert_string_equal(buf, "hi");
	close(peer);
	close(fd);
	close(ls);
	stop(&v, a);
}

static void test_watch(void **state)
{
	char dir[64] = "/tmp/kiln-lk-watch-XXXXXX", p[160];
	struct kiln_fs_event ev = { .size = sizeof(ev) }, small = { .size = 4 };
	struct kiln_watch_opts wo = { .size = sizeof(wo),
				      .flags = KILN_AGENT_AS_ROOT | KILN_AGENT_RECURSIVE };
	const char *end = NULL;
	struct fake_agent v;
	kiln_watch *w;
	kiln_agent *a;
	uint32_t watches = 0;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	a = start(&v, 2);
	snprintf(p, sizeof(p), "%s/none", dir);
	assert_int_equal(kiln_agent_watch(a, p, KILN_AGENT_AS_ROOT, &w, NULL), -ENOENT);
	assert_null(w);
	assert_int_equal(kiln_agent_watch(a, dir, KILN_AGENT_AS_ROOT | KILN_AGENT_RECURSIVE, &w,
					  &watches),
			 0);
	assert_true(watches >= 1);
	assert_true(kiln_watch_fd(w) >= 0);
	assert_int_equal(kiln_watch_next(w, 10, &small, NULL), -EINVAL);
	assert_int_equal(kiln_watch_next(w, 10, &ev, NULL), -ETIMEDOUT);
	snprintf(p, sizeof(p), "%s/new", dir);
	f = fopen(p, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(kiln_watch_next(w, 5000, &ev, &end), 0);
	assert_int_equal(ev.change, KILN_FS_CREATE);
	assert_string_equal(ev.path, "new");
	assert_int_equal(ev.seq, 0);
	assert_int_equal(ev.is_dir, 0);
	kiln_watch_close(w);
	kiln_watch_close(NULL);
	stop(&v, a);
	/* With limits: a queue below the agent's least is refused before
	 * it is sent (one connection), with the agent's bad_field. */
	a = start(&v, 1);
	wo.max_watches = 4;
	assert_int_equal(kiln_agent_watch_with(a, dir, &wo, &w, &watches), 0);
	assert_true(watches >= 1 && watches <= 4);
	assert_int_equal(kiln_watch_next(w, 10, &ev, NULL), -ETIMEDOUT);
	assert_int_equal(kiln_watch_errkind(w), KILN_AGENT_FAIL_TIMEOUT);
	assert_string_equal(kiln_watch_errcode(w), "timeout");
	kiln_watch_close(w);
	wo.queue = 1;
	assert_true(kiln_agent_watch_with(a, dir, &wo, &w, NULL) < 0);
	assert_int_equal(kiln_agent_errkind(a), KILN_AGENT_FAIL_REQUEST);
	assert_string_equal(kiln_agent_errcode(a), "bad_field");
	wo.size = 4;
	assert_int_equal(kiln_agent_watch_with(a, dir, &wo, &w, NULL), -EINVAL);
	stop(&v, a);
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	assert_int_equal(system(p), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ping_and_info),
		cmocka_unit_test(test_files_metadata),
		cmocka_unit_test(test_read_write_streams),
		cmocka_unit_test(test_tar_streams),
		cmocka_unit_test(test_unreachable),
		cmocka_unit_test(test_exec_and_run),
		cmocka_unit_test(test_attach_list_resize),
		cmocka_unit_test(test_wait_ready_hold_and_vsock),
		cmocka_unit_test(test_tcp_connect),
		cmocka_unit_test(test_watch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
