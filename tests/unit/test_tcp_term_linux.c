/*
 * tcp_term against a TCP stack kiln did not write: Linux's. A TAP device
 * in a network namespace of the test's own plays the guest's virtio-net
 * link: Linux's frames go through pkt_parse into tcp_term, tcp_term's
 * frames go back, and the test answers ARP for the gateway and serves
 * HTTP on tcp_term's host side. curl (and one client of the test's, to
 * reset mid-transfer) runs in that namespace against 203.0.113.7, a
 * documentation address that is nowhere else.
 *
 * Skipped, with the reason, unless run as root with /dev/net/tun, ip and
 * curl (scripts/install-deps).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "devices/net/pkt_parse.h"
#include "devices/net/tcp_term.h"
#include "lib/base/mono.h"
#include "frames.h"
#include "sh.h"

#define TAP "kt0"
#define GUEST "10.0.2.15"
#define GW "10.0.2.2"
#define REMOTE "203.0.113.7"
#define GUEST6 "fd00::15"
#define GW6 "fd00::2"
#define REMOTE6 "2001:db8::7"
#define BIG (1024 * 1024)
#define READ_STEP 8192 /* bytes the server takes per flow per turn: a slow host side */
#define DEADLINE_MS 30000

static char why_skip[512], tmpdir[64];
static int tap = -1;
/* The client running against the link, until run_link() reaps it. */
static pid_t child;
static uint8_t guest_mac[6];
static const uint8_t gw_mac[6] = { 0x52, 0x54, 0x00, 0x0a, 0x0b, 0x0c };

/* The HTTP server's side of one flow. */
struct conn {
	bool used;
	struct tcp_term_flow *f;
	char head[4096];
	size_t head_len;
	bool head_done, post;
	size_t body_want, body_got;
	uint32_t body_hash;
	char resp_head[256];
	size_t resp_head_len, resp_body_len, resp_off; /* resp_off counts head and body */
	bool responding, shut;
};

/* What a run saw. */
struct run {
	struct tcp_term t;
	struct conn conns[TCP_TERM_DEFAULT_CAPACITY];
	int opened, closed_clean, closed_reset, open_now, open_most;
	bool saw_rx_full, saw_tx_full; /* the guest's window closed; ours did */
	bool saw_zero_window;          /* the guest's own window closed */

	size_t post_got;
	uint32_t post_hash;
};

#define SKIP_UNLESS_READY()                                                       \
	do {                                                                      \
		if (why_skip[0]) {                                                \
			print_message("tcp_term_linux: skipped: %s\n", why_skip); \
			skip();                                                   \
		}                                                                 \
	} while (0)

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 31 + 7 + (i >> 12));
}

/* FNV-1a, to compare a megabyte without keeping it. */
static uint32_t fnv(uint32_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static int group_setup(void **state)
{
	struct ifreq ifr;
	int sock;

	(void)state;
	if (geteuid() != 0)
		return snprintf(why_skip, sizeof(why_skip),
				"needs root (a TAP device, a network namespace)"),
		       0;
	if (sh("command -v curl >/dev/null && command -v ip >/dev/null"))
		return snprintf(why_skip, sizeof(why_skip),
				"needs curl and ip (scripts/install-deps)"),
		       0;
	if (unshare(CLONE_NEWNET) < 0)
		return snprintf(why_skip, sizeof(why_skip), "cannot make a network namespace: %s",
				strerror(errno)),
		       0;
	tap = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (tap < 0)
		return snprintf(why_skip, sizeof(why_skip), "cannot open /dev/net/tun: %s",
				strerror(errno)),
		       0;
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	strcpy(ifr.ifr_name, TAP);
	assert_int_equal(ioctl(tap, TUNSETIFF, &ifr), 0);
	/* IPv6 without duplicate address detection or router solicitations:
	 * usable at once, and the link carries only what the tests make. */
	assert_int_equal(sh("ip link set lo up &&"
			    " echo 0 >/proc/sys/net/ipv6/conf/" TAP "/accept_dad &&"
			    " echo 0 >/proc/sys/net/ipv6/conf/" TAP "/router_solicitations &&"
			    " ip addr add " GUEST "/24 dev " TAP " && ip -6 addr add " GUEST6
			    "/64 dev " TAP " nodad && ip link set " TAP " up &&"
			    " ip route add 203.0.113.0/24 via " GW " dev " TAP " &&"
			    " ip -6 route add 2001:db8::/32 via " GW6 " dev " TAP),
			 0);
	/* Its MAC (sysfs shows the namespace the test started in, not this one). */
	sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(sock >= 0);
	assert_int_equal(ioctl(sock, SIOCGIFHWADDR, &ifr), 0);
	memcpy(guest_mac, ifr.ifr_hwaddr.sa_data, 6);
	close(sock);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/kiln-tcp-term-%d", (int)getpid());
	assert_int_equal(mkdir(tmpdir, 0700), 0);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	if (tap >= 0)
		close(tap);
	if (tmpdir[0])
		sh("rm -rf %s", tmpdir);
	return 0;
}

/*
 * After each test: a client a failed assertion left running (mid-transfer,
 * or blocked on a link no one serves) is killed, so its segments cannot
 * reach the next test's tcp_term and no process outlives the test.
 */
static int end_child(void **state)
{
	(void)state;
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		child = 0;
	}
	return 0;
}

/* ARP for anything but the guest's own address: the gateway's MAC. */
static void answer_arp(const struct pkt *p)
{
	uint8_t f[42];
	uint8_t me[4];

	inet_pton(AF_INET, GUEST, me);
	if (p->arp.op != 1 || !memcmp(p->arp.tpa, me, 4))
		return;
	memcpy(f, p->src_mac, 6);
	memcpy(f + 6, gw_mac, 6);
	f[12] = 0x08;
	f[13] = 0x06;
	memcpy(f + 14, (const uint8_t[8]){ 0, 1, 8, 0, 6, 4, 0, 2 }, 8);
	memcpy(f + 22, gw_mac, 6);
	memcpy(f + 28, p->arp.tpa, 4);
	memcpy(f + 32, p->arp.sha, 6);
	memcpy(f + 38, p->arp.spa, 4);
	assert_int_equal(write(tap, f, sizeof(f)), (ssize_t)sizeof(f));
}

/* A neighbour solicitation for the IPv6 gateway: the advertisement (RFC 4861 4.4). */
static void answer_ns(const struct pkt *p)
{
	uint8_t f[14 + 40 + 32], gw[16], *ip = f + 14, *icmp = ip + 40;
	uint32_t sum;

	inet_pton(AF_INET6, GW6, gw);
	if (p->icmp_type != 135 || p->payload_len < 16 || memcmp(p->payload, gw, 16))
		return;
	memset(f, 0, sizeof(f));
	memcpy(f, p->src_mac, 6);
	memcpy(f + 6, gw_mac, 6);
	fr_put16(f + 12, 0x86dd);
	ip[0] = 0x60;
	fr_put16(ip + 4, 32);
	ip[6] = 58;
	ip[7] = 255; /* RFC 4861 7.1.2: a hop limit of 255, or it is ignored */
	memcpy(ip + 8, gw, 16);
	memcpy(ip + 24, p->src.b, 16);
	icmp[0] = 136;
	icmp[4] = 0x60; /* solicited, override */
	memcpy(icmp + 8, gw, 16);
	icmp[24] = 2; /* target link-layer address */
	icmp[25] = 1;
	memcpy(icmp + 26, gw_mac, 6);
	sum = fr_csum(0, ip + 8, 32) + 32 + 58;
	fr_put16(icmp + 2, (uint16_t)~fr_csum(sum, icmp, 32));
	assert_int_equal(write(tap, f, sizeof(f)), (ssize_t)sizeof(f));
}

static struct conn *conn_of(struct run *r, struct tcp_term_flow *f)
{
	return &r->conns[f - r->t.flows];
}

/* The request head is in: choose the response. */
static void route(struct conn *c)
{
	const char *cl = strcasestr(c->head, "\r\ncontent-length:");

	c->post = !strncmp(c->head, "POST ", 5);
	c->body_want = cl ? strtoul(cl + 17, NULL, 10) : 0;
	if (!strncmp(c->head, "GET / ", 6)) {
		c->resp_body_len = 20;
	} else {
		c->resp_body_len = BIG;
	}
}

static void respond(struct run *r, struct conn *c)
{
	c->responding = true;
	if (c->post) {
		r->post_got = c->body_got;
		r->post_hash = c->body_hash;
	}
	c->resp_head_len = (size_t)snprintf(c->resp_head, sizeof(c->resp_head),
					    "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n"
					    "X-Got: %zu %08x\r\nConnection: close\r\n\r\n",
					    c->resp_body_len, c->body_got, c->body_hash);
}

/* Take what the guest sent, at most READ_STEP a turn. */
static void serve_read(struct run *r, struct conn *c)
{
	uint8_t buf[READ_STEP];
	size_t n, i = 0;

	if (tcp_term_readable(c->f) == c->f->rx.cap)
		r->saw_rx_full = true;
	n = tcp_term_read(&r->t, c->f, buf, sizeof(buf), mono_ns());

	while (i < n && !c->head_done) {
		if (c->head_len + 1 >= sizeof(c->head))
			fail_msg("request head too long");
		c->head[c->head_len++] = (char)buf[i++];
		c->head[c->head_len] = 0;
		if (c->head_len >= 4 && !memcmp(c->head + c->head_len - 4, "\r\n\r\n", 4)) {
			c->head_done = true;
			route(c);
		}
	}
	if (i < n) {
		c->body_hash = fnv(c->body_hash, buf + i, n - i);
		c->body_got += n - i;
	}
	if (c->head_done && !c->responding && c->body_got >= c->body_want)
		respond(r, c);
}

static void serve_write(struct run *r, struct conn *c)
{
	uint8_t buf[16384];
	size_t total = c->resp_head_len + c->resp_body_len, n, put;

	while (c->responding && c->resp_off < total) {
		n = 0;
		if (c->resp_off < c->resp_head_len) {
			n = c->resp_head_len - c->resp_off;
			memcpy(buf, c->resp_head + c->resp_off, n);
		}
		for (; n < sizeof(buf) && c->resp_off + n < total; n++) {
			size_t b = c->resp_off + n - c->resp_head_len;

			buf[n] = c->resp_body_len == 20 ? (uint8_t) "hello from tcp_term\n"[b]
							: pattern(b);
		}
		put = tcp_term_write(&r->t, c->f, buf, n, mono_ns());
		c->resp_off += put;
		if (put < n) {
			r->saw_tx_full = true;
			return; /* tx full: WRITABLE comes */
		}
	}
	if (c->responding && c->resp_off == total && !c->shut) {
		tcp_term_shutdown(&r->t, c->f, mono_ns());
		c->shut = true;
	}
}

static void take_events(struct run *r)
{
	struct tcp_term_event ev;
	struct conn *c;

	while (tcp_term_event(&r->t, &ev)) {
		c = conn_of(r, ev.flow);
		switch (ev.kind) {
		case TCP_TERM_EV_OPEN:
			memset(c, 0, sizeof(*c));
			c->used = true;
			c->f = ev.flow;
			c->body_hash = 2166136261u;
			r->opened++;
			if (++r->open_now > r->open_most)
				r->open_most = r->open_now;
			break;
		case TCP_TERM_EV_CLOSED:
			if (ev.reset)
				r->closed_reset++;
			else
				r->closed_clean++;
			tcp_term_release(&r->t, ev.flow, mono_ns());
			c->used = false;
			r->open_now--;
			break;
		default:
			break; /* READABLE, WRITABLE, EOF: every turn serves them all */
		}
	}
}

/* Run the link and the server until the child pid ends and every flow is closed. */
static int run_link(struct run *r, pid_t pid)
{
	static uint8_t frame[65536];
	int64_t deadline = mono_ms() + DEADLINE_MS;
	int status = -1;
	bool backlog;
	struct pkt p;
	ssize_t n;
	size_t len;

	for (;;) {
		struct pollfd pfd = { .fd = tap, .events = POLLIN };

		backlog = false;
		for (size_t i = 0; i < TCP_TERM_DEFAULT_CAPACITY; i++)
			if (r->conns[i].used && tcp_term_readable(r->conns[i].f))
				backlog = true;
		poll(&pfd, 1, backlog ? 1 : 20);
		while ((n = read(tap, frame, sizeof(frame))) > 0) {
			if (pkt_parse(frame, (size_t)n, &p) < 0)
				continue;
			if (p.l3 == PKT_L3_ARP)
				answer_arp(&p);
			else if (p.l3 == PKT_L3_IP6 && p.proto == PKT_PROTO_ICMP6)
				answer_ns(&p);
			else if (p.proto == PKT_PROTO_TCP)
				assert_int_equal(tcp_term_input(&r->t, &p, mono_ns()), 0);
		}
		take_events(r);
		for (size_t i = 0; i < TCP_TERM_DEFAULT_CAPACITY; i++) {
			struct conn *c = &r->conns[i];

			if (!c->used)
				continue;
			serve_read(r, c);
			serve_write(r, c);
		}
		take_events(r);
		while ((len = tcp_term_next_frame(&r->t, frame, TCP_TERM_MAX_FRAME, mono_ns())))
			assert_int_equal(write(tap, frame, len), (ssize_t)len);
		tcp_term_expire(&r->t, mono_ns());
		for (size_t i = 0; i < TCP_TERM_DEFAULT_CAPACITY; i++)
			if (r->conns[i].used && r->conns[i].f->state == TCP_TERM_ESTABLISHED &&
			    r->conns[i].f->snd_wnd == 0)
				r->saw_zero_window = true;

		if (status < 0 && waitpid(pid, &status, WNOHANG) == pid) {
			child = 0;
			if (!WIFEXITED(status))
				status = 128;
			else
				status = WEXITSTATUS(status);
		}
		if (status >= 0) {
			bool any = false;

			for (size_t i = 0; i < TCP_TERM_DEFAULT_CAPACITY; i++)
				any |= r->conns[i].used;
			if (!any)
				return status;
		}
		if (mono_ms() > deadline)
			fail_msg("the link ran %d ms without the client finishing", DEADLINE_MS);
	}
}

static struct run *run_init(void)
{
	struct tcp_term_config c = { .key = { 0x1234, 0x5678 } };
	struct run *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	memcpy(c.guest_mac, guest_mac, 6);
	memcpy(c.gw_mac, gw_mac, 6);
	assert_int_equal(tcp_term_init(&r->t, &c), 0);
	return r;
}

static pid_t spawn(char *const argv[])
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	return child = pid;
}

/*
 * curl with these arguments (NULL-ended, at most 32) in the test's
 * namespace, run against the link: its exit status. No ~/.curlrc, no
 * proxy from the environment: only the link is under test.
 */
static int curl(struct run *r, const char *const args[])
{
	const char *argv[40] = { "curl", "-q", "--noproxy", "*", "-sS", "--max-time", "25" };
	size_t n = 7;

	for (size_t i = 0; args[i] && n + 1 < sizeof(argv) / sizeof(argv[0]); i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	return run_link(r, spawn((char *const *)argv));
}

static size_t slurp(const char *path, uint8_t *buf, size_t cap)
{
	FILE *f = fopen(path, "rb");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, cap, f);
	fclose(f);
	return n;
}

/* The file at path is the server's /big, byte for byte. */
static void check_big(const char *path)
{
	static uint8_t big[BIG + 1];

	assert_int_equal(slurp(path, big, sizeof(big)), BIG);
	for (size_t i = 0; i < BIG; i++)
		if (big[i] != pattern(i))
			fail_msg("%s: byte %zu is %02x, want %02x", path, i, big[i], pattern(i));
}

static void run_end(struct run *r)
{
	tcp_term_free(&r->t);
	free(r);
}

static void test_curl_gets_a_page(void **state)
{
	struct run *r;
	char out[128];
	uint8_t body[256];
	size_t n;

	(void)state;
	SKIP_UNLESS_READY();
	r = run_init();
	snprintf(out, sizeof(out), "%s/page", tmpdir);
	assert_int_equal(curl(r, (const char *[]){ "-o", out, "http://" REMOTE "/", NULL }), 0);
	n = slurp(out, body, sizeof(body));
	assert_int_equal(n, 20);
	assert_memory_equal(body, "hello from tcp_term\n", 20);
	assert_int_equal(r->opened, 1);
	assert_int_equal(r->closed_clean, 1);
	assert_int_equal(r->closed_reset, 0);
	assert_int_equal(r->t.stats.bad_checksum, 0);
	run_end(r);
}

static void test_curl_posts_and_gets_a_megabyte(void **state)
{
	struct run *r;
	static uint8_t big[BIG + 1];
	char in[128], out[128], hdr[128], want[64];
	uint8_t got[2048];
	FILE *f;
	size_t n;

	(void)state;
	SKIP_UNLESS_READY();
	r = run_init();
	for (size_t i = 0; i < BIG; i++)
		big[i] = (uint8_t)(pattern(i) ^ 0x5a);
	snprintf(in, sizeof(in), "%s/up", tmpdir);
	snprintf(out, sizeof(out), "%s/down", tmpdir);
	snprintf(hdr, sizeof(hdr), "%s/hdr", tmpdir);
	f = fopen(in, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(big, 1, BIG, f), BIG);
	fclose(f);
	char data[140];
	snprintf(data, sizeof(data), "@%s", in);
	assert_int_equal(curl(r,
			      (const char *[]){ "-H", "Expect:", "--data-binary", data, "-D", hdr,
						"-o", out, "http://" REMOTE "/upload", NULL }),
			 0);
	/* The server saw every byte of the upload, in order. */
	assert_int_equal(r->post_got, BIG);
	assert_int_equal(r->post_hash, fnv(2166136261u, big, BIG));
	n = slurp(hdr, got, sizeof(got) - 1);
	got[n] = 0;
	snprintf(want, sizeof(want), "X-Got: %d %08x", BIG, fnv(2166136261u, big, BIG));
	assert_non_null(strstr((char *)got, want));
	/* And curl every byte of the download. */
	check_big(out);
	assert_int_equal(r->closed_clean, 1);
	assert_int_equal(r->t.stats.bad_checksum, 0);
	/* A slow host side filled rx (the guest waited on a zero window), a
	 * fast one tx: nothing was lost either way. */
	assert_true(r->saw_rx_full);
	assert_true(r->saw_tx_full);
	run_end(r);
}

static void test_curl_over_ipv6_gets_a_megabyte(void **state)
{
	struct run *r;
	char out[128];

	(void)state;
	SKIP_UNLESS_READY();
	r = run_init();
	snprintf(out, sizeof(out), "%s/down6", tmpdir);
	assert_int_equal(curl(r,
			      (const char *[]){ "-g", "-o", out, "http://[" REMOTE6 "]/big",
						NULL }),
			 0);
	check_big(out);
	assert_int_equal(r->opened, 1);
	assert_int_equal(r->closed_clean, 1);
	assert_int_equal(r->t.stats.bad_checksum, 0);
	run_end(r);
}

/*
 * A client's socket to REMOTE:80 (with a receive buffer of rcvbuf bytes
 * unless 0) that has asked for /big; -10 or -11 when that failed.
 */
static int get_big(int rcvbuf)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(80) };
	const char req[] = "GET /big HTTP/1.1\r\nHost: x\r\n\r\n";
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	inet_pton(AF_INET, REMOTE, &a.sin_addr);
	if (fd < 0 ||
	    (rcvbuf && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) < 0) ||
	    connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		return -10;
	if (write(fd, req, sizeof(req) - 1) != (ssize_t)sizeof(req) - 1)
		return -11;
	return fd;
}

/* A client of the test's own that reads part of a download, then resets (SO_LINGER 0). */
static int reset_client(void)
{
	struct linger l = { 1, 0 };
	char buf[4096];
	size_t got = 0;
	ssize_t n;
	int fd = get_big(0);

	if (fd < 0)
		return -fd;
	while (got < 200000 && (n = read(fd, buf, sizeof(buf))) > 0)
		got += (size_t)n;
	if (got < 200000)
		return 12;
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(fd);
	return 0;
}

static void test_curl_fetches_eight_at_once(void **state)
{
	struct run *r;
	char out[8][128];
	const char *args[32];
	size_t n = 0;

	(void)state;
	SKIP_UNLESS_READY();
	r = run_init();
	args[n++] = "--parallel";
	args[n++] = "--parallel-immediate";
	for (int i = 0; i < 8; i++) {
		snprintf(out[i], sizeof(out[i]), "%s/par%d", tmpdir, i);
		args[n++] = "-o";
		args[n++] = out[i];
		args[n++] = "http://" REMOTE "/big";
	}
	args[n] = NULL;
	assert_int_equal(curl(r, args), 0);
	assert_int_equal(r->opened, 8);
	assert_int_equal(r->closed_clean, 8);
	assert_true(r->open_most > 1); /* at the same time, taking turns */
	for (int i = 0; i < 8; i++)
		check_big(out[i]);
	run_end(r);
}

/*
 * A client of the test's own that reads nothing for a while through a
 * small receive buffer, so its window closes, then reads the whole
 * download and checks every byte.
 */
static int slow_client(void)
{
	static uint8_t buf[BIG + 4096];
	size_t got = 0, body;
	ssize_t n;
	char *end;
	int fd = get_big(4096);

	if (fd < 0)
		return -fd;
	usleep(300 * 1000);
	while (got < sizeof(buf) && (n = read(fd, buf + got, sizeof(buf) - got)) > 0)
		got += (size_t)n;
	end = memmem(buf, got, "\r\n\r\n", 4);
	if (!end)
		return 12;
	body = (size_t)((uint8_t *)end + 4 - buf);
	if (got - body != BIG)
		return 13;
	for (size_t i = 0; i < BIG; i++)
		if (buf[body + i] != pattern(i))
			return 14;
	close(fd);
	return 0;
}

/* One of the clients above in a child, run against the link: its exit status. */
static int run_client(struct run *r, int (*client)(void))
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(25); /* as curl's --max-time: a client never outlives its test */
		_exit(client());
	}
	child = pid;
	return run_link(r, pid);
}

static void test_a_client_whose_window_closes(void **state)
{
	struct run *r;

	(void)state;
	SKIP_UNLESS_READY();
	r = run_init();
	assert_int_equal(run_client(r, slow_client), 0);
	assert_true(r->saw_zero_window);
	assert_int_equal(r->closed_clean, 1);
	run_end(r);
}

static void test_a_client_that_resets_mid_transfer(void **state)
{
	struct run *r;

	(void)state;
	SKIP_UNLESS_READY();
	r = run_init();
	assert_int_equal(run_client(r, reset_client), 0);
	assert_int_equal(r->opened, 1);
	assert_int_equal(r->closed_reset, 1);
	assert_int_equal(r->closed_clean, 0);
	assert_int_equal(r->t.stats.resets_in, 1);
	assert_int_equal(tcp_term_count(&r->t), 0);
	run_end(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_curl_gets_a_page, end_child),
		cmocka_unit_test_teardown(test_curl_posts_and_gets_a_megabyte, end_child),
		cmocka_unit_test_teardown(test_curl_fetches_eight_at_once, end_child),
		cmocka_unit_test_teardown(test_a_client_whose_window_closes, end_child),
		cmocka_unit_test_teardown(test_a_client_that_resets_mid_transfer, end_child),
		cmocka_unit_test_teardown(test_curl_over_ipv6_gets_a_megabyte, end_child),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
