/*
 * kiln-bench-get: bench/egress's guest half (only in the test image,
 * build/rootfs/minimal-test.*). N HTTP or HTTPS GETs in a row, each on a
 * fresh connection: the name looked up (the guest's resolver), a TCP
 * connect, for https:// a full TLS handshake (OpenSSL, linked statically;
 * no session reuse, the server's certificate not checked: the benchmark
 * times the path, kiln's tests check trust), the request with
 * "Connection: close", the answer read to its end. Prints one
 * "run EXIT USEC" line per request (EXIT 0: a 200 came back; wall time
 * from the lookup to the close) and "wall SECONDS" for the whole loop;
 * the first failure's reason goes to stderr.
 *
 *   kiln-bench-get N URL        URL: http[s]://HOST[:PORT]/PATH
 *
 * busybox wget cannot stand in for it: its own TLS sends no
 * signature_algorithms, so OpenSSL 3 servers (kiln-egress, the test
 * hosts) refuse its ECDHE handshakes ("no shared cipher").
 */
#include <errno.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct url {
	bool tls;
	char host[256];
	char port[8];
	const char *path;
};

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int parse_url(const char *s, struct url *u)
{
	const char *h, *end, *colon;
	size_t n;

	if (strncmp(s, "https://", 8) == 0) {
		u->tls = true;
		h = s + 8;
	} else if (strncmp(s, "http://", 7) == 0) {
		u->tls = false;
		h = s + 7;
	} else {
		return -1;
	}
	end = strchr(h, '/');
	u->path = end ? end : "/";
	if (!end)
		end = h + strlen(h);
	colon = memchr(h, ':', (size_t)(end - h));
	n = (size_t)((colon ? colon : end) - h);
	if (n == 0 || n >= sizeof(u->host))
		return -1;
	memcpy(u->host, h, n);
	u->host[n] = '\0';
	if (colon) {
		n = (size_t)(end - colon - 1);
		if (n == 0 || n >= sizeof(u->port))
			return -1;
		memcpy(u->port, colon + 1, n);
		u->port[n] = '\0';
	} else {
		strcpy(u->port, u->tls ? "443" : "80");
	}
	return 0;
}

/* A TCP connection to u, or -1 (why in *err). */
static int dial(const struct url *u, const char **err)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	int fd, rc = getaddrinfo(u->host, u->port, &hints, &ai);

	if (rc != 0) {
		*err = gai_strerror(rc);
		return -1;
	}
	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		*err = strerror(errno);
		close(fd);
		fd = -1;
	} else if (fd < 0) {
		*err = strerror(errno);
	}
	freeaddrinfo(ai);
	return fd;
}

static ssize_t io(SSL *ssl, int fd, void *buf, size_t n, bool write_it)
{
	int r;

	if (!ssl)
		return write_it ? write(fd, buf, n) : read(fd, buf, n);
	r = write_it ? SSL_write(ssl, buf, (int)n) : SSL_read(ssl, buf, (int)n);
	if (r > 0)
		return r;
	/* The end of the answer: close_notify, or a close without one. */
	r = SSL_get_error(ssl, r);
	return r == SSL_ERROR_ZERO_RETURN || r == SSL_ERROR_SYSCALL ? 0 : -1;
}

/* One GET; 0 when the answer was a 200, else 1 with *err set. */
static int get(SSL_CTX *ctx, const struct url *u, const char **err)
{
	char req[1024], buf[16384], head[16] = "";
	size_t got = 0;
	ssize_t r;
	SSL *ssl = NULL;
	int n, fd = dial(u, err), rc = 1;

	if (fd < 0)
		return 1;
	if (u->tls) {
		ssl = SSL_new(ctx);
		if (!ssl || !SSL_set_tlsext_host_name(ssl, u->host) || !SSL_set_fd(ssl, fd) ||
		    SSL_connect(ssl) != 1) {
			*err = ERR_reason_error_string(ERR_peek_last_error());
			if (!*err)
				*err = "TLS handshake failed";
			goto out;
		}
	}
	n = snprintf(req, sizeof(req),
		     "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: kiln-bench-get\r\n"
		     "Connection: close\r\n\r\n",
		     u->path, u->host);
	if (n < 0 || (size_t)n >= sizeof(req) || io(ssl, fd, req, (size_t)n, true) != n) {
		*err = "cannot send the request";
		goto out;
	}
	while ((r = io(ssl, fd, buf, sizeof(buf), false)) > 0) {
		if (got < sizeof(head) - 1) {
			size_t k = sizeof(head) - 1 - got < (size_t)r ? sizeof(head) - 1 - got
								      : (size_t)r;

			memcpy(head + got, buf, k);
			head[got + k] = '\0';
		}
		got += (size_t)r;
	}
	if (r < 0)
		*err = "read failed";
	else if (strncmp(head, "HTTP/1.1 200", 12) != 0 && strncmp(head, "HTTP/1.0 200", 12) != 0)
		*err = "the answer is not a 200";
	else
		rc = 0;
out:
	if (ssl) {
		SSL_shutdown(ssl);
		SSL_free(ssl);
	}
	close(fd);
	return rc;
}

int main(int argc, char **argv)
{
	struct url u;
	SSL_CTX *ctx;
	long n = argc == 3 ? atol(argv[1]) : 0;
	bool told = false;
	double start;

	if (n <= 0 || parse_url(argv[2], &u) < 0) {
		fprintf(stderr,
			"usage: kiln-bench-get N http[s]://HOST[:PORT]/PATH (N at least 1)\n");
		return 2;
	}
	ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx) {
		fprintf(stderr, "kiln-bench-get: cannot make an OpenSSL context\n");
		return 1;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	/* Python's test servers close without close_notify. */
	SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
	start = now();
	for (long i = 0; i < n; i++) {
		const char *err = NULL;
		double t = now();
		int rc = get(ctx, &u, &err);

		printf("run %d %.0f\n", rc, (now() - t) * 1e6);
		if (rc && !told) {
			fprintf(stderr, "kiln-bench-get: %s: %s\n", argv[2], err ? err : "failed");
			told = true;
		}
	}
	printf("wall %.6f\n", now() - start);
	SSL_CTX_free(ctx);
	return 0;
}
