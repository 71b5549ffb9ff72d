/*
 * kiln-udp-flood: a guest-side helper for kiln's network tests (only in the
 * test image, build/rootfs/minimal-test.cpio).
 *
 *   kiln-udp-flood ADDR PORT COUNT SIZE
 *
 * Sends COUNT UDP datagrams of SIZE bytes (8..1400) to the IPv4 ADDR:PORT
 * as fast as the guest's stack takes them, each starting with its sequence
 * number (4 bytes, big-endian), so the receiver can count losses and
 * duplicates. The socket blocks when its send buffer is full, which is how
 * the device's backpressure reaches the sender; a send refused for want of
 * buffers (ENOBUFS, reported at all only with IP_RECVERR, which is set) is
 * retried after a millisecond, so nothing is lost on the guest's side.
 * Prints "udp-flood sent N in S s (R retries)".
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	uint8_t buf[1400] = { 0 };
	unsigned long count, size, port, retries = 0;
	char *end1, *end2, *end3;
	double t0;
	int s, one = 1;

	if (argc != 5) {
		fprintf(stderr, "usage: kiln-udp-flood ADDR PORT COUNT SIZE\n");
		return 2;
	}
	port = strtoul(argv[2], &end1, 10);
	count = strtoul(argv[3], &end2, 10);
	size = strtoul(argv[4], &end3, 10);
	if (inet_pton(AF_INET, argv[1], &a.sin_addr) != 1 || *end1 || port < 1 || port > 65535 ||
	    *end2 || !count || count > 0xffffffffUL || *end3 || size < 8 || size > sizeof(buf)) {
		fprintf(stderr,
			"kiln-udp-flood: need an IPv4 address, a port 1..65535, a COUNT 1..2^32-1 and a SIZE 8..%zu\n",
			sizeof(buf));
		return 2;
	}
	a.sin_port = htons((uint16_t)port);
	s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0 || setsockopt(s, IPPROTO_IP, IP_RECVERR, &one, sizeof(one)) < 0 ||
	    connect(s, (struct sockaddr *)&a, sizeof(a)) < 0) {
		perror("kiln-udp-flood: socket/connect");
		return 1;
	}
	t0 = now_s();
	for (unsigned long i = 0; i < count; i++) {
		buf[0] = (uint8_t)(i >> 24);
		buf[1] = (uint8_t)(i >> 16);
		buf[2] = (uint8_t)(i >> 8);
		buf[3] = (uint8_t)i;
		while (send(s, buf, size, 0) < 0) {
			if (errno != ENOBUFS && errno != EINTR) {
				perror("kiln-udp-flood: send");
				return 1;
			}
			retries++;
			usleep(1000);
		}
	}
	printf("udp-flood sent %lu in %.3f s (%lu retries)\n", count, now_s() - t0, retries);
	close(s);
	return 0;
}
