/*
 * kiln-bench-guest: the guest half of bench/devices (it is only in the test
 * image, build/rootfs/minimal-test.cpio). Each mode measures inside the
 * guest, so kiln-vmm and QEMU are timed by the same clock and the same code,
 * and prints one "bench NAME VALUE UNIT" line per figure.
 *
 *   kiln-bench-guest blk DEV MIB OPS   sequential 1 MiB write then read of
 *                                      MIB MiB, then OPS random 4 KiB reads
 *                                      and writes, all O_DIRECT
 *   kiln-bench-guest vsock PORT MIB    send MIB MiB to CID 2 PORT, then read
 *                                      MIB MiB back from the same connection
 *   kiln-bench-guest fs DIR N          N small files (4 KiB): create+write,
 *                                      stat, read, unlink
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/vm_sockets.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MIB (1024 * 1024)
#define SMALL 4096

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int die(const char *what)
{
	fprintf(stderr, "kiln-bench-guest: %s: %s\n", what, strerror(errno));
	return 1;
}

static void report(const char *name, double value, const char *unit)
{
	printf("bench %s %.1f %s\n", name, value, unit);
	fflush(stdout);
}

/* xorshift64: a reproducible offset sequence, the same for every VMM. */
static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int full_io(int fd, void *buf, size_t len, off_t off, int write_it)
{
	ssize_t n = write_it ? pwrite(fd, buf, len, off) : pread(fd, buf, len, off);

	if (n < 0)
		return -1;
	if ((size_t)n != len) {
		errno = EIO;
		return -1;
	}
	return 0;
}

static int bench_blk(const char *dev, long mib, long ops)
{
	uint64_t seed = 0x9e3779b97f4a7c15ULL, blocks = (uint64_t)mib * (MIB / SMALL);
	void *buf;
	double t;
	int fd = open(dev, O_RDWR | O_DIRECT);

	if (fd < 0)
		return die(dev);
	if (posix_memalign(&buf, SMALL, MIB))
		return die("posix_memalign");
	memset(buf, 0xa5, MIB);

	t = now();
	for (long i = 0; i < mib; i++)
		if (full_io(fd, buf, MIB, (off_t)i * MIB, 1) < 0)
			return die("sequential write");
	if (fsync(fd) < 0)
		return die("fsync");
	report("blk_seq_write", (double)mib / (now() - t), "MiB/s");

	t = now();
	for (long i = 0; i < mib; i++)
		if (full_io(fd, buf, MIB, (off_t)i * MIB, 0) < 0)
			return die("sequential read");
	report("blk_seq_read", (double)mib / (now() - t), "MiB/s");

	t = now();
	for (long i = 0; i < ops; i++)
		if (full_io(fd, buf, SMALL, (off_t)(next_rand(&seed) % blocks) * SMALL, 0) < 0)
			return die("random read");
	report("blk_rand_read", (double)ops / (now() - t), "IOPS");

	t = now();
	for (long i = 0; i < ops; i++)
		if (full_io(fd, buf, SMALL, (off_t)(next_rand(&seed) % blocks) * SMALL, 1) < 0)
			return die("random write");
	if (fsync(fd) < 0)
		return die("fsync");
	report("blk_rand_write", (double)ops / (now() - t), "IOPS");
	close(fd);
	free(buf);
	return 0;
}

/* The host side (bench/devices) reads MIB MiB, then writes MIB MiB back and
 * closes: the two directions are timed one after the other. */
static int bench_vsock(unsigned port, long mib)
{
	static char buf[256 * 1024];
	struct sockaddr_vm a = { .svm_family = AF_VSOCK,
				 .svm_cid = VMADDR_CID_HOST,
				 .svm_port = port };
	long long total = (long long)mib * MIB, done;
	double t;
	/* The receive credit kiln's guest agent gives its connections
	 * (guest-init/agent/agent.c), so both VMMs move data the way the
	 * agent's transfers do. */
	unsigned long long credit = 1ull << 20;
	int s = socket(AF_VSOCK, SOCK_STREAM, 0);

	if (s >= 0) {
		(void)!setsockopt(s, AF_VSOCK, SO_VM_SOCKETS_BUFFER_MAX_SIZE, &credit,
				  sizeof(credit));
		(void)!setsockopt(s, AF_VSOCK, SO_VM_SOCKETS_BUFFER_SIZE, &credit, sizeof(credit));
	}
	if (s < 0 || connect(s, (void *)&a, sizeof(a)) < 0)
		return die("vsock connect");
	memset(buf, 0x5a, sizeof(buf));
	t = now();
	for (done = 0; done < total;) {
		size_t n = total - done < (long long)sizeof(buf) ? (size_t)(total - done)
								 : sizeof(buf);
		ssize_t w = write(s, buf, n);

		if (w <= 0)
			return die("vsock write");
		done += w;
	}
	/* The host answers once it has everything: the time includes the
	 * last byte's arrival, not only the guest's buffers filling. */
	if (read(s, buf, 1) != 1)
		return die("vsock ack");
	report("vsock_guest_to_host", (double)mib / (now() - t), "MiB/s");

	t = now();
	for (done = 0; done < total;) {
		ssize_t r = read(s, buf, sizeof(buf));

		if (r <= 0)
			return die("vsock read");
		done += r;
	}
	report("vsock_host_to_guest", (double)mib / (now() - t), "MiB/s");
	close(s);
	return 0;
}

static int bench_fs(const char *dir, long n)
{
	static char buf[SMALL];
	char path[4096];
	struct stat st;
	double t;

	memset(buf, 0x3c, sizeof(buf));
	t = now();
	for (long i = 0; i < n; i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/f%ld", dir, i);
		fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
		if (fd < 0 || write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) || close(fd) < 0)
			return die("create");
	}
	report("fs_create", (double)n / (now() - t), "files/s");

	t = now();
	for (long i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/f%ld", dir, i);
		if (stat(path, &st) < 0)
			return die("stat");
	}
	report("fs_stat", (double)n / (now() - t), "files/s");

	t = now();
	for (long i = 0; i < n; i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/f%ld", dir, i);
		fd = open(path, O_RDONLY);
		if (fd < 0 || read(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) || close(fd) < 0)
			return die("read");
	}
	report("fs_read", (double)n / (now() - t), "files/s");

	t = now();
	for (long i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/f%ld", dir, i);
		if (unlink(path) < 0)
			return die("unlink");
	}
	report("fs_unlink", (double)n / (now() - t), "files/s");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "blk") == 0)
		return bench_blk(argv[2], atol(argv[3]), atol(argv[4]));
	if (argc == 4 && strcmp(argv[1], "vsock") == 0)
		return bench_vsock((unsigned)atoi(argv[2]), atol(argv[3]));
	if (argc == 4 && strcmp(argv[1], "fs") == 0)
		return bench_fs(argv[2], atol(argv[3]));
	fprintf(stderr, "usage: kiln-bench-guest blk DEV MIB OPS | vsock PORT MIB | fs DIR N\n");
	return 2;
}
