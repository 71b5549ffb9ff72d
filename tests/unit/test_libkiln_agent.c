/*
 * libkiln's agent API for what kilnd asks of a guest beyond processes
 * (kiln/agent.h: ping, info, stat, list, mkdir, remove, rename,
 * tcp_connect, watch), through a kiln-vmm-like socket to the agent's real
 * handlers serving a scratch directory of this machine: results arrive
 * converted, the agent's error codes as errnos with the message on the
 * handle, a struct whose size field is too small is refused, and a list
 * callback that stops is obeyed.
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
#include "fake_agent.h"

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
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	assert_int_equal(system(p), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ping_and_info),
		cmocka_unit_test(test_files_metadata),
		cmocka_unit_test(test_tcp_connect),
		cmocka_unit_test(test_watch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
