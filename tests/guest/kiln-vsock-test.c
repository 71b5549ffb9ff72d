/*
 * kiln-vsock-test: a guest-side helper for kiln's integration tests (it is
 * only in the test image, build/rootfs/minimal-test.cpio).
 *
 *   kiln-vsock-test listen PORT      accept one connection, echo until EOF
 *   kiln-vsock-test send CID PORT N  send N pseudo-random bytes, read the echo
 *                                    back and check it; prints "vsock-ok N"
 */
#include <linux/vm_sockets.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static uint8_t gen(uint64_t i)
{
	uint64_t x = i * 0x9e3779b97f4a7c15ULL;

	x ^= x >> 29;
	return (uint8_t)(x * 0xbf58476d1ce4e5b9ULL >> 56);
}

static int die(const char *what)
{
	perror(what);
	return 1;
}

int main(int argc, char **argv)
{
	struct sockaddr_vm a = { .svm_family = AF_VSOCK };
	static uint8_t buf[65536];

	if (argc == 3 && strcmp(argv[1], "listen") == 0) {
		int s = socket(AF_VSOCK, SOCK_STREAM, 0), c;
		ssize_t n;

		a.svm_cid = VMADDR_CID_ANY;
		a.svm_port = (unsigned)atoi(argv[2]);
		if (s < 0 || bind(s, (void *)&a, sizeof(a)) < 0 || listen(s, 1) < 0)
			return die("listen");
		c = accept(s, NULL, NULL);
		if (c < 0)
			return die("accept");
		while ((n = read(c, buf, sizeof(buf))) > 0)
			for (ssize_t off = 0; off < n;) {
				ssize_t w = write(c, buf + off, (size_t)(n - off));
				if (w <= 0)
					return die("write");
				off += w;
			}
		close(c);
		return 0;
	}
	if (argc == 5 && strcmp(argv[1], "send") == 0) {
		uint64_t total = strtoull(argv[4], NULL, 10), sent = 0, got = 0;
		int s = socket(AF_VSOCK, SOCK_STREAM, 0);

		a.svm_cid = (unsigned)atoi(argv[2]);
		a.svm_port = (unsigned)atoi(argv[3]);
		if (s < 0 || connect(s, (void *)&a, sizeof(a)) < 0)
			return die("connect");
		/* Interleave sending and reading so neither side's buffers fill. */
		while (got < total) {
			if (sent < total) {
				size_t n = total - sent < 16384 ? (size_t)(total - sent) : 16384;
				for (size_t i = 0; i < n; i++)
					buf[i] = gen(sent + i);
				ssize_t w = write(s, buf, n);
				if (w <= 0)
					return die("write");
				sent += (uint64_t)w;
				if (sent == total)
					shutdown(s, SHUT_WR);
			}
			while (got < sent) {
				ssize_t r = read(s, buf, sizeof(buf));
				if (r <= 0)
					return die("read");
				for (ssize_t i = 0; i < r; i++)
					if (buf[i] != gen(got + (uint64_t)i)) {
						fprintf(stderr, "mismatch at byte %llu\n",
							(unsigned long long)(got + (uint64_t)i));
						return 1;
					}
				got += (uint64_t)r;
			}
		}
		printf("vsock-ok %llu\n", (unsigned long long)got);
		return 0;
	}
	fprintf(stderr, "usage: kiln-vsock-test listen PORT | send CID PORT N\n");
	return 2;
}
