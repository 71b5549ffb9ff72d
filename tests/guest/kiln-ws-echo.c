/*
 * kiln-ws-echo: a guest-side helper for kiln's preview tests (only in the
 * test image): a WebSocket echo server (RFC 6455) on 127.0.0.1:PORT.
 *
 *   kiln-ws-echo PORT
 *
 * Each connection (one child each) gets the opening handshake answered
 * (Sec-WebSocket-Accept: base64 of SHA-1 of the key and the RFC's GUID,
 * section 4.2.2), then every text or binary frame the client sends
 * (masked, as clients must) comes back unmasked with the same opcode; a
 * close frame is answered with a close and ends it. A request without
 * Sec-WebSocket-Key gets 400. Frames up to 64 KiB; tests need no more.
 * Self-contained (static, no library beyond libc): the image has no other.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define FRAME_MAX 65536

/* ---- SHA-1 (FIPS 180-4 section 6.1), one message at once ---- */

static uint32_t rol(uint32_t x, int n)
{
	return (x << n) | (x >> (32 - n));
}

static void sha1_block(uint32_t h[5], const uint8_t *p)
{
	uint32_t w[80], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
			(uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 80; i++)
		w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	for (int i = 0; i < 80; i++) {
		uint32_t f, k, t;

		if (i < 20) {
			f = (b & c) | (~b & d);
			k = 0x5a827999;
		} else if (i < 40) {
			f = b ^ c ^ d;
			k = 0x6ed9eba1;
		} else if (i < 60) {
			f = (b & c) | (b & d) | (c & d);
			k = 0x8f1bbcdc;
		} else {
			f = b ^ c ^ d;
			k = 0xca62c1d6;
		}
		t = rol(a, 5) + f + e + k + w[i];
		e = d;
		d = c;
		c = rol(b, 30);
		b = a;
		a = t;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
}

/* msg: at most 200 bytes (a key and the GUID). */
static void sha1(const uint8_t *msg, size_t n, uint8_t out[20])
{
	uint32_t h[5] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0 };
	uint8_t buf[256] = { 0 };
	size_t total = (n + 9 + 63) / 64 * 64;
	uint64_t bits = (uint64_t)n * 8;

	memcpy(buf, msg, n);
	buf[n] = 0x80;
	for (int i = 0; i < 8; i++)
		buf[total - 1 - i] = (uint8_t)(bits >> (8 * i));
	for (size_t off = 0; off < total; off += 64)
		sha1_block(h, buf + off);
	for (int i = 0; i < 5; i++)
		for (int j = 0; j < 4; j++)
			out[4 * i + j] = (uint8_t)(h[i] >> (24 - 8 * j));
}

static void base64(const uint8_t *in, size_t n, char *out)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) |
			(i + 2 < n ? in[i + 2] : 0);

		out[o++] = t[v >> 18 & 63];
		out[o++] = t[v >> 12 & 63];
		out[o++] = i + 1 < n ? t[v >> 6 & 63] : '=';
		out[o++] = i + 2 < n ? t[v & 63] : '=';
	}
	out[o] = '\0';
}

/* ---- one connection ---- */

static int read_full(int fd, void *p, size_t n)
{
	for (size_t got = 0; got < n;) {
		ssize_t r = read(fd, (char *)p + got, n - got);

		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

static int write_full(int fd, const void *p, size_t n)
{
	for (size_t put = 0; put < n;) {
		ssize_t w = write(fd, (const char *)p + put, n - put);

		if (w <= 0)
			return -1;
		put += (size_t)w;
	}
	return 0;
}

static int handshake(int fd)
{
	static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
	char head[8192], key[128], accept_[64], ans[256];
	uint8_t digest[20];
	size_t n = 0;
	char *k, *end;

	while (n < sizeof(head) - 1) {
		ssize_t r = read(fd, head + n,
				 1); /* byte by byte: nothing after the head is taken */

		if (r <= 0)
			return -1;
		n++;
		head[n] = '\0';
		if (n >= 4 && !memcmp(head + n - 4, "\r\n\r\n", 4))
			break;
	}
	k = strcasestr(head, "\r\nSec-WebSocket-Key:");
	if (!k) {
		static const char bad[] =
			"HTTP/1.1 400 Bad Request\r\nContent-Length: 14\r\nConnection: close\r\n\r\nnot websocket\n";

		write_full(fd, bad, sizeof(bad) - 1);
		return -1;
	}
	k += strlen("\r\nSec-WebSocket-Key:");
	k += strspn(k, " \t");
	end = strstr(k, "\r\n");
	if (!end || (size_t)(end - k) + sizeof(guid) > sizeof(key))
		return -1;
	while (end > k && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	memcpy(key, k, (size_t)(end - k));
	memcpy(key + (end - k), guid, sizeof(guid));
	sha1((const uint8_t *)key, strlen(key), digest);
	base64(digest, sizeof(digest), accept_);
	n = (size_t)
		snprintf(ans, sizeof(ans),
			 "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
			 "Sec-WebSocket-Accept: %s\r\n\r\n",
			 accept_);
	return write_full(fd, ans, n);
}

static void echo(int fd)
{
	static uint8_t payload[FRAME_MAX];
	uint8_t h[2], ext[8], mask[4], out[10];

	while (read_full(fd, h, 2) == 0) {
		uint8_t op = h[0] & 0x0f;
		uint64_t len = h[1] & 0x7f;
		size_t o = 0;

		if (len == 126) {
			if (read_full(fd, ext, 2))
				return;
			len = (uint64_t)ext[0] << 8 | ext[1];
		} else if (len == 127) {
			if (read_full(fd, ext, 8))
				return;
			len = 0;
			for (int i = 0; i < 8; i++)
				len = len << 8 | ext[i];
		}
		if (!(h[1] & 0x80) || len > FRAME_MAX || read_full(fd, mask, 4) ||
		    read_full(fd, payload, (size_t)len))
			return;
		for (uint64_t i = 0; i < len; i++)
			payload[i] ^= mask[i & 3];
		out[o++] = (uint8_t)(0x80 | op);
		if (len < 126) {
			out[o++] = (uint8_t)len;
		} else {
			out[o++] = 126;
			out[o++] = (uint8_t)(len >> 8);
			out[o++] = (uint8_t)len;
		}
		if (write_full(fd, out, o) || write_full(fd, payload, (size_t)len) || op == 8)
			return;
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1, ls;
	long port = argc == 2 ? strtol(argv[1], NULL, 10) : 0;

	if (port < 1 || port > 65535) {
		fprintf(stderr, "usage: kiln-ws-echo PORT\n");
		return 2;
	}
	a.sin_port = htons((uint16_t)port);
	signal(SIGCHLD, SIG_IGN); /* children reaped by the kernel */
	ls = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(ls, 16) < 0) {
		perror("kiln-ws-echo: listen");
		return 1;
	}
	for (;;) {
		int fd = accept(ls, NULL, NULL);

		if (fd < 0)
			continue;
		if (fork() == 0) {
			close(ls);
			if (handshake(fd) == 0)
				echo(fd);
			_exit(0);
		}
		close(fd);
	}
}
