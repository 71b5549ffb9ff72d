/*
 * proxy_v2 against HAProxy (Debian's haproxy): a reader and a writer of
 * the PROXY protocol kiln did not write. HAProxy reads kiln's header
 * (accept-proxy) and answers with the addresses, ports and AUTHORITY it
 * understood; HAProxy writes one (send-proxy-v2) for a TCP connection it
 * relays, and kiln's decoder reads it. Fails, saying so, when haproxy is
 * missing (scripts/install-deps installs it).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/netrules/proxy_v2.h"

struct fx {
	char dir[64], cfg[128], in[128], back[128];
	int port; /* HAProxy's TCP front, relayed to `back` with a header */
	pid_t pid;
};

static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t n = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM, 0), port;

	assert_true(s >= 0);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&a, &n), 0);
	port = ntohs(a.sin_port);
	close(s);
	return port;
}

static int unix_socket(const char *path, int listening)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(s >= 0);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (listening) {
		assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
		assert_int_equal(listen(s, 4), 0);
	} else if (connect(s, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(s);
		return -1;
	}
	return s;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	FILE *c;

	assert_non_null(f);
	if (system("command -v haproxy >/dev/null 2>&1") != 0) {
		free(f);
		print_error("haproxy is not installed: run scripts/install-deps\n");
		return -1;
	}
	snprintf(f->dir, sizeof(f->dir), "/tmp/kiln-pp2-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->cfg, sizeof(f->cfg), "%s/haproxy.cfg", f->dir);
	snprintf(f->in, sizeof(f->in), "%s/in.sock", f->dir);
	snprintf(f->back, sizeof(f->back), "%s/back.sock", f->dir);
	f->port = free_port();
	c = fopen(f->cfg, "w");
	assert_non_null(c);
	fprintf(c,
		"defaults\n  timeout connect 5s\n  timeout client 5s\n  timeout server 5s\n"
		"frontend reads_kilns\n  mode http\n  bind unix@%s accept-proxy\n"
		"  http-request return status 200 content-type text/plain lf-string "
		"\"%%[src] %%[src_port] %%[dst] %%[dst_port] %%[fc_pp_authority]\"\n"
		"frontend writes_one\n  mode tcp\n  bind 127.0.0.1:%d\n  default_backend to_kiln\n"
		"backend to_kiln\n  mode tcp\n  server k unix@%s send-proxy-v2\n",
		f->in, f->port, f->back);
	fclose(c);
	f->pid = fork();
	assert_true(f->pid >= 0);
	if (f->pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		execlp("haproxy", "haproxy", "-db", "-f", f->cfg, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500 && access(f->in, F_OK) != 0; i++)
		usleep(10000);
	assert_int_equal(access(f->in, F_OK), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	kill(f->pid, SIGTERM);
	waitpid(f->pid, NULL, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static size_t read_all(int s, char *buf, size_t cap)
{
	size_t n = 0;
	ssize_t r;

	while (n < cap - 1 && (r = read(s, buf + n, cap - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
	return n;
}

/* HAProxy reads kiln's header: both families, with and without AUTHORITY. */
static void test_haproxy_reads_kilns_header(void **state)
{
	struct fx *f = *state;
	static const char req[] =
		"GET / HTTP/1.1\r\nHost: api.github.com\r\nConnection: close\r\n\r\n";
	struct proxy_v2 h4 = { .family = AF_INET, .sport = 40000, .dport = 443 };
	struct proxy_v2 h6 = { .family = AF_INET6, .sport = 1, .dport = 80 };
	const struct {
		const struct proxy_v2 *h;
		const char *want;
	} cases[] = {
		{ &h4, "10.0.2.15 40000 140.82.112.5 443 api.github.com" },
		{ &h6, "fd00::15 1 2001:db8::7 80 " }, /* no AUTHORITY: empty */
	};

	memcpy(h4.src, (uint8_t[]){ 10, 0, 2, 15 }, 4);
	memcpy(h4.dst, (uint8_t[]){ 140, 82, 112, 5 }, 4);
	strcpy(h4.authority, "api.github.com");
	assert_int_equal(inet_pton(AF_INET6, "fd00::15", h6.src), 1);
	assert_int_equal(inet_pton(AF_INET6, "2001:db8::7", h6.dst), 1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t b[PROXY_V2_MAX];
		char got[4096];
		int n = proxy_v2_encode(cases[i].h, b, sizeof(b)), s = unix_socket(f->in, 0);

		assert_true(n > 0 && s >= 0);
		assert_int_equal(write(s, b, (size_t)n), n);
		assert_int_equal(write(s, req, sizeof(req) - 1), (ssize_t)sizeof(req) - 1);
		read_all(s, got, sizeof(got));
		close(s);
		/* the body, after the head, is exactly what was wanted */
		if (strncmp(got, "HTTP/1.1 200", 12) || !strstr(got, "\r\n\r\n") ||
		    strcmp(strstr(got, "\r\n\r\n") + 4, cases[i].want))
			fail_msg("haproxy answered:\n%s\nwanted a 200 whose body is '%s'", got,
				 cases[i].want);
	}
}

/* kiln reads HAProxy's header for a TCP connection it relays. */
static void test_kiln_reads_haproxys_header(void **state)
{
	struct fx *f = *state;
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)f->port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in mine;
	socklen_t ml = sizeof(mine);
	uint8_t b[PROXY_V2_MAX + 16];
	struct proxy_v2 h;
	struct err e = { { 0 } };
	size_t have = 0, need = 16;
	int l = unix_socket(f->back, 1), c = socket(AF_INET, SOCK_STREAM, 0), s, r = 0;

	assert_true(c >= 0);
	assert_int_equal(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(c, (struct sockaddr *)&mine, &ml), 0);
	assert_int_equal(write(c, "hello", 5), 5);
	s = accept(l, NULL, NULL);
	assert_true(s >= 0);
	while ((r = proxy_v2_decode(b, have, &h, &need, &e)) == 0) {
		ssize_t n = read(s, b + have, need - have);

		assert_true(n > 0);
		have += (size_t)n;
	}
	if (r < 0)
		fail_msg("kiln refused haproxy's header: %s", e.msg);
	assert_int_equal(h.family, AF_INET);
	assert_memory_equal(h.src, &mine.sin_addr, 4);
	assert_int_equal(h.sport, ntohs(mine.sin_port));
	assert_memory_equal(h.dst, &a.sin_addr, 4);
	assert_int_equal(h.dport, f->port);
	assert_string_equal(h.authority, "");
	close(s);
	close(c);
	close(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_haproxy_reads_kilns_header),
		cmocka_unit_test(test_kiln_reads_haproxys_header),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
