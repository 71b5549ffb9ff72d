/*
 * kiln-escape: the compromised kiln-vmm (docs/security.md, "The escape
 * suite").
 *
 *   kiln-escape [--canary FILE] [--tcp PORT] [--addr IPV4]... [--abstract NAME]
 *               [--unix PATH] [--pid PID] [--egress-dir DIR --egress-pid PID
 *               --egress-sock PATH] -- KILN-VMM-OPTIONS...
 *
 * It parses KILN-VMM-OPTIONS with kiln-vmm's own parser and sets the VM
 * up with kiln-vmm's own setup (vmm/kiln-vmm/setup.h: the VM created,
 * the control socket bound, the jail entered), so it holds exactly the
 * descriptors kiln-vmm holds when the guest starts. Then, instead of
 * running the guest, it plays an attacker who owns the process: each
 * attempt runs in a child of its own, under each thread role's seccomp
 * filter as kiln-vmm builds it (vcpu, device, control, restore) and, for the
 * attempts the jail alone must stop, under no filter at all ("jail").
 * Every attempt prints one line, "blocked" (with how) or "ESCAPED" (with
 * what it reached); the exit status is 0 when all were blocked, 1 when
 * any escaped, 2 for a usage or setup error.
 *
 * The targets are the runner's (tests/escape/escape_tests.sh): a canary
 * file outside the jail, a TCP listener on the host's loopback and its
 * other addresses, an abstract and a path Unix socket, and a process
 * whose command line holds "kiln-escape-marker"; and the sandbox's egress
 * proxy as kilnd lays it out (docs/security.md, "The egress proxy"): its
 * directory (another uid's, 0700, with ca.key and secrets.json), its
 * process (that uid, its own pid namespace) and the socket kilnd binds in
 * the jail directory for the VMM (the jail uid's, 0600), the one new
 * thing the VMM may reach. Before the setup it
 * notes what "outside" looks like (the host's / and /proc, a file handle
 * of the canary), since inside it can no longer look.
 *
 *   kiln-escape --park FD
 *
 * starts it as kilnd's zygotes start kiln-vmm (vmm/kiln-vmm/park.h):
 * KVM's VM made ahead, then the whole command line above waited for on
 * FD; so the suite also attacks what a claimed zygote holds.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vmm/control/control_client.h"
#include "vmm/control/exit_status.h"
#include "vmm/jail/seccomp_filter.h"
#include "vmm/kiln-vmm/park.h"
#include "vmm/kiln-vmm/setup.h"

#include "tests/escape/attempt.h"

#define MAX_ADDRS 8
#define MAX_FD 4096
#define MARKER "kiln-escape-marker"
#define EXEC_PROBE_STATUS 42

struct target {
	const char *canary, *abstract_name, *unix_path;
	const char *graft; /* a directory grafted into the share "escape" (kiln-runtime's pods) */
	/* The egress proxy's directory, process and socket (kilnd's layout). */
	const char *egress_dir, *egress_sock;
	pid_t egress_pid;
	/* A client share's socket (kilnd's vm/share-N.sock). */
	const char *share_sock;
	const char *addrs[MAX_ADDRS];
	int naddrs, tcp_port;
	pid_t pid;
	/* Noted before the jail: what "outside" is. */
	dev_t root_dev, proc_dev;
	ino_t root_ino, proc_ino;
	struct file_handle *fh;
};

/* An attempt: BLOCKED or ESCAPED, with a line in msg saying how or what. */
struct attempt {
	const char *name;
	int (*fn)(const struct target *t, char *msg);
	int jail_alone; /* the jail must stop it even without a seccomp filter */
};

/* "outside": the host's / or /proc, as noted before the jail. */
static const char *outside(const struct target *t, int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return NULL;
	if (st.st_dev == t->root_dev && st.st_ino == t->root_ino)
		return "the host's /";
	if (st.st_dev == t->proc_dev && st.st_ino == t->proc_ino)
		return "the host's /proc";
	return NULL;
}

/* From directory fd, ".." as far as it goes (64 steps); the top, or -1. */
static int climb(int fd)
{
	int cur = openat(fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);

	for (int i = 0; cur >= 0 && i < 64; i++) {
		int up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);

		if (up < 0)
			break;
		close(cur);
		cur = up;
	}
	return cur;
}

/* Does directory `top` show the canary, or the marker process's command line? */
static const char *sees_host(const struct target *t, int top)
{
	char path[64], buf[256];
	ssize_t n;
	int fd;

	if (t->canary && (fd = openat(top, t->canary + 1, O_RDONLY | O_CLOEXEC)) >= 0) {
		close(fd);
		return "the canary file";
	}
	for (int i = 0; t->pid > 0 && i < 2; i++) {
		snprintf(path, sizeof(path), i ? "%d/cmdline" : "proc/%d/cmdline", (int)t->pid);
		if ((fd = openat(top, path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 0 && memmem(buf, (size_t)n, MARKER, strlen(MARKER)))
			return "another process's command line";
	}
	return NULL;
}

/* Every descriptor that is a directory: climb with "..", directly and
 * through /proc/self/fd/N's magic link, and look around at the top. */
static int try_dotdot(const struct target *t, char *msg)
{
	char path[64], found[MSG_MAX] = "";
	size_t used = 0;
	int dirs = 0;

	for (int fd = 0; fd < MAX_FD; fd++) {
		struct stat st;
		const char *what;
		int top;

		if (fcntl(fd, F_GETFD) < 0 || fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		dirs++;
		/* Every descriptor that leads out is named, not just the first. */
		top = climb(fd);
		if (top >= 0 && ((what = outside(t, top)) || (what = sees_host(t, top))) &&
		    used < sizeof(found))
			used += (size_t)snprintf(found + used, sizeof(found) - used,
						 "%sdescriptor %d: \"..\" reaches %s",
						 used ? "; " : "", fd, what);
		if (top >= 0)
			close(top);
		snprintf(path, sizeof(path), "/proc/self/fd/%d/../../../../../../../..", fd);
		top = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (top >= 0 && ((what = outside(t, top)) || (what = sees_host(t, top))) &&
		    used < sizeof(found))
			used += (size_t)snprintf(found + used, sizeof(found) - used,
						 "%s/proc/self/fd/%d/.. reaches %s",
						 used ? "; " : "", fd, what);
		if (top >= 0)
			close(top);
	}
	if (used)
		return say(msg, ESCAPED, "%s", found);
	return say(msg, BLOCKED, "%d directory descriptors held; \"..\" from each stays inside",
		   dirs);
}

/* The host's files by path, from the jail's root and its /proc. */
static int try_paths(const struct target *t, char *msg)
{
	/* None of them on the way to a jail directory (the jail's root holds
	 * that path's components: /run/... or /tmp/... would be there). */
	static const char *const paths[] = { "/etc/passwd",
					     "/dev/kvm",
					     "/proc/1/root/etc/passwd",
					     "/proc/self/root/etc/passwd",
					     "/proc/sys/kernel/hostname",
					     "/sys/kernel",
					     "/usr/bin",
					     NULL };
	int fd;

	if (t->canary && (fd = open(t->canary, O_RDONLY | O_CLOEXEC)) >= 0) {
		close(fd);
		return say(msg, ESCAPED, "opens the canary %s", t->canary);
	}
	for (int i = 0; paths[i]; i++) {
		if ((fd = open(paths[i], O_RDONLY | O_CLOEXEC)) >= 0) {
			close(fd);
			return say(msg, ESCAPED, "opens %s", paths[i]);
		}
	}
	if (mkdir("/kiln-escape", 0700) == 0)
		return say(msg, ESCAPED, "writes to the jail's root");
	return say(msg, BLOCKED,
		   "the canary, /etc, /dev/kvm, /sys, /proc/sys not there; the root: %s",
		   strerror(errno));
}

/* /proc: any process other than this one, its command line above all. */
static int try_proc(const struct target *t, char *msg)
{
	char path[64], buf[256];
	DIR *d = opendir("/proc");
	struct dirent *de;
	int seen = 0, fd;
	ssize_t n;

	(void)t;
	while (d && (de = readdir(d))) {
		long pid = strtol(de->d_name, NULL, 10);

		if (pid <= 0 || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
			n = read(fd, buf, sizeof(buf) - 1);
			close(fd);
			if (n > 0 && memmem(buf, (size_t)n, MARKER, strlen(MARKER))) {
				closedir(d);
				return say(msg, ESCAPED,
					   "reads the marker process's command line in /proc/%ld",
					   pid);
			}
		}
		/* The parent (the VMM this child was forked from) is ours to see. */
		seen += pid != getppid();
	}
	if (d)
		closedir(d);
	if (seen)
		return say(msg, ESCAPED, "/proc shows %d process(es) besides the VMM itself", seen);
	return say(msg, BLOCKED, "/proc shows the VMM's own processes only");
}

/* A TCP connect with a 2 s bound: 0, or -errno. */
static int connect_tcp(const char *addr, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct pollfd p;
	int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), r = 0;
	socklen_t l = sizeof(r);

	if (s < 0)
		return -errno;
	inet_pton(AF_INET, addr, &a.sin_addr);
	if (connect(s, (struct sockaddr *)&a, sizeof(a)) < 0 && errno != EINPROGRESS) {
		r = -errno;
	} else {
		p = (struct pollfd){ .fd = s, .events = POLLOUT };
		if (poll(&p, 1, 2000) != 1)
			r = -ETIMEDOUT;
		else if (getsockopt(s, SOL_SOCKET, SO_ERROR, &r, &l) == 0 && r)
			r = -r;
	}
	close(s);
	return r;
}

/* Sockets of the host: abstract and path Unix sockets, TCP on loopback and the host's addresses. */
static int try_sockets(const struct target *t, char *msg)
{
	int r;

	if (t->abstract_name && (r = connect_unix(t->abstract_name, 1)) >= 0) {
		close(r);
		return say(msg, ESCAPED, "connects to the host's abstract socket @%s",
			   t->abstract_name);
	}
	if (t->unix_path && (r = connect_unix(t->unix_path, 0)) >= 0) {
		close(r);
		return say(msg, ESCAPED, "connects to the host's socket %s", t->unix_path);
	}
	if (t->tcp_port && (r = connect_tcp("127.0.0.1", t->tcp_port)) == 0)
		return say(msg, ESCAPED, "connects to 127.0.0.1:%d", t->tcp_port);
	for (int i = 0; t->tcp_port && i < t->naddrs; i++)
		if (connect_tcp(t->addrs[i], t->tcp_port) == 0)
			return say(msg, ESCAPED, "connects to %s:%d", t->addrs[i], t->tcp_port);
	r = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (r >= 0) {
		close(r);
		return say(msg, ESCAPED, "opens a raw packet socket");
	}
	return say(msg, BLOCKED,
		   "abstract, path and TCP sockets of the host unreachable, no raw socket");
}

/* ---- passt: frames straight into its socket ---- */

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	return sum;
}

/* A TCP SYN from the guest's address to dst:port, in passt's stream
 * framing (4-byte big-endian length, then the Ethernet frame). */
static size_t syn_frame(uint8_t *b, const uint8_t mac[6], const char *src, const char *dst,
			int port)
{
	uint8_t *eth = b + 4, *ip = eth + 14, *tcp = ip + 20, pseudo[12];
	uint32_t sum;

	memset(b, 0, 4 + 14 + 40);
	memset(eth, 0xff, 6); /* passt takes any destination MAC */
	memcpy(eth + 6, mac, 6);
	eth[12] = 0x08;
	ip[0] = 0x45;
	ip[3] = 40;
	ip[8] = 64;
	ip[9] = IPPROTO_TCP;
	inet_pton(AF_INET, src, ip + 12);
	inet_pton(AF_INET, dst, ip + 16);
	sum = csum_fold(csum_add(0, ip, 20));
	ip[10] = (uint8_t)(sum >> 8);
	ip[11] = (uint8_t)sum;
	tcp[0] = 0xc3;
	tcp[1] = 0x50; /* source port 50000 */
	tcp[2] = (uint8_t)(port >> 8);
	tcp[3] = (uint8_t)port;
	tcp[7] = 1;
	tcp[12] = 5 << 4;
	tcp[13] = 0x02; /* SYN */
	tcp[14] = 0xff;
	tcp[15] = 0xff;
	memcpy(pseudo, ip + 12, 8);
	pseudo[8] = 0;
	pseudo[9] = IPPROTO_TCP;
	pseudo[10] = 0;
	pseudo[11] = 20;
	sum = csum_fold(csum_add(csum_add(0, pseudo, 12), tcp, 20));
	tcp[16] = (uint8_t)(sum >> 8);
	tcp[17] = (uint8_t)sum;
	b[3] = 14 + 40;
	return 4 + 14 + 40;
}

/* Read passt's frames for 2 s: 1 when a SYN-ACK from one of the targets came back. */
static int synack_seen(int s, const uint32_t *dsts, int n, int port)
{
	uint8_t buf[65536];
	size_t have = 0;
	struct pollfd p = { .fd = s, .events = POLLIN };

	while (poll(&p, 1, 2000) == 1) {
		ssize_t k = read(s, buf + have, sizeof(buf) - have);

		if (k <= 0)
			return 0;
		have += (size_t)k;
		while (have >= 4) {
			size_t len = (size_t)buf[0] << 24 | (size_t)buf[1] << 16 |
				(size_t)buf[2] << 8 | buf[3];
			const uint8_t *f = buf + 4;

			if (len > sizeof(buf) - 4)
				return 0;
			if (have < 4 + len)
				break;
			if (len >= 14 + 40 && f[12] == 0x08 && f[13] == 0 &&
			    f[14 + 9] == IPPROTO_TCP && (f[14 + 20 + 13] & 0x12) == 0x12 &&
			    (f[14 + 20] << 8 | f[14 + 21]) == port)
				for (int i = 0; i < n; i++)
					if (!memcmp(f + 14 + 12, &dsts[i], 4))
						return 1;
			memmove(buf, buf + 4 + len, have - 4 - len);
			have -= 4 + len;
		}
	}
	return 0;
}

/* A connected Unix stream socket (not a listener): passt's end of the
 * socketpair kiln-vmm made before forking it (a socketpair's peer
 * credentials are its maker's, ours, so they cannot tell). */
static int is_passt_socket(int fd)
{
	int v;
	socklen_t l = sizeof(v);

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &l) < 0 || v != AF_UNIX)
		return 0;
	l = sizeof(v);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &l) < 0 || v != SOCK_STREAM)
		return 0;
	l = sizeof(v);
	return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &l) == 0 && v == 0;
}

/* Each such socket: SYNs to the host's loopback (directly and as passt's
 * gateway address) and to its other addresses, as a guest would send
 * them but past any filter. */
static int try_passt(const struct target *t, char *msg)
{
	static const uint8_t mac[6] = { 0x02, 0x6b, 0x69, 0x6c, 0x6e, 0x01 };
	const char *dsts[MAX_ADDRS + 2] = { "127.0.0.1", "10.0.2.2" };
	uint32_t bin[MAX_ADDRS + 2];
	int n = 2, tried = 0;

	if (!t->tcp_port)
		return say(msg, BLOCKED, "no --tcp listener given: nothing to aim at");
	for (int i = 0; i < t->naddrs; i++)
		dsts[n++] = t->addrs[i];
	for (int i = 0; i < n; i++)
		inet_pton(AF_INET, dsts[i], &bin[i]);
	for (int fd = 3; fd < MAX_FD; fd++) {
		uint8_t frame[128];

		if (!is_passt_socket(fd))
			continue;
		tried++;
		for (int i = 0; i < n; i++) {
			size_t len = syn_frame(frame, mac, "10.0.2.15", dsts[i], t->tcp_port);

			if (send(fd, frame, len, MSG_NOSIGNAL) != (ssize_t)len)
				return say(msg, BLOCKED,
					   "passt's socket closed (%s) after %d frames",
					   strerror(errno), i);
		}
		if (synack_seen(fd, bin, n, t->tcp_port))
			return say(msg, ESCAPED,
				   "descriptor %d: passt connected for us to the host", fd);
	}
	if (!tried)
		return say(msg, BLOCKED, "no passt socket held (no --net passt)");
	return say(msg, BLOCKED,
		   "SYNs into passt's socket to loopback, the gateway and the host's addresses: no SYN-ACK");
}

/* ---- processes, privileges, namespaces ---- */

/* Signal 0, ptrace and process_vm_readv of a pid: what was reached, or NULL. */
static const char *reaches_pid(pid_t pid)
{
	char buf[8];
	struct iovec local = { buf, sizeof(buf) }, remote = { (void *)0x400000, sizeof(buf) };

	if (kill(pid, 0) == 0)
		return "may signal";
	if (ptrace(PTRACE_ATTACH, pid, 0, 0) == 0)
		return "ptrace-attaches to";
	if (process_vm_readv(pid, &local, 1, &remote, 1, 0) >= 0 || errno == EFAULT)
		return "reads the memory of";
	return NULL;
}

/* The marker process by its host pid, then every pid of the jail's pid
 * namespace but the VMM and this child (passt among them, another uid). */
static int try_processes(const struct target *t, char *msg)
{
	const char *what;

	/* The marker's host pid names nothing in the jail's pid namespace
	 * (ESRCH): the sweep below is the real test; this one says so if a
	 * jail ever shares the host's. */
	if (t->pid > 0 && (what = reaches_pid(t->pid)))
		return say(msg, ESCAPED, "%s the marker's host pid %d", what, (int)t->pid);
	for (pid_t pid = 1; pid < 4096; pid++) {
		/* The VMM's own threads (the control thread) are its own:
		 * tgkill with signal 0 says whether pid is one of them. */
		if (pid == getpid() || pid == getppid() ||
		    syscall(SYS_tgkill, getppid(), pid, 0) == 0)
			continue;
		if ((what = reaches_pid(pid)))
			return say(msg, ESCAPED, "%s pid %d", what, (int)pid);
	}
	return say(msg, BLOCKED,
		   "no signal, ptrace or memory read of the marker's host pid %d or of any pid of the jail but the VMM's",
		   (int)t->pid);
}

/*
 * The egress proxy: its files (the CA's key, the secrets) and its process
 * are out of reach; its socket is the one thing the VMM may connect to
 * (said in the line, not judged: a thread role's filter may refuse
 * sockets altogether).
 */
static int try_egress(const struct target *t, char *msg)
{
	static const char *const files[] = { "ca.key", "secrets.json", "rules.json", "." };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char path[PATH_MAX];
	const char *what, *conn = "not tried";
	int fd;

	if (!t->egress_dir)
		return say(msg, BLOCKED, "no egress proxy given");
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", t->egress_dir, files[i]);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
			close(fd);
			return say(msg, ESCAPED, "opens the egress proxy's %s", path);
		}
	}
	if (t->egress_pid > 0 && (what = reaches_pid(t->egress_pid)))
		return say(msg, ESCAPED, "%s the egress proxy's host pid %d", what,
			   (int)t->egress_pid);
	if (t->egress_sock && strlen(t->egress_sock) < sizeof(sa.sun_path)) {
		strcpy(sa.sun_path, t->egress_sock);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		conn = fd < 0                                                  ? strerror(errno)
			: connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? "connects"
									       : strerror(errno);
		if (fd >= 0)
			close(fd);
	}
	return say(msg, BLOCKED,
		   "the egress proxy's files (ca.key, secrets.json) and pid %d out of reach; its socket: %s",
		   (int)t->egress_pid, conn);
}

/*
 * A client share's socket (vm/share-N.sock, kilnd's relay: docs/security.md,
 * "Client shares"): like the egress proxy's, a thing the VMM may connect
 * to, said in the line, not judged (kilnd checks every line it sends;
 * kilnd_shares_test tries hostile ones). Nothing else of kilnd's is there.
 */
static int try_share_sock(const struct target *t, char *msg)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *conn;
	int fd;

	if (!t->share_sock || strlen(t->share_sock) >= sizeof(sa.sun_path))
		return say(msg, BLOCKED, "no client share given");
	strcpy(sa.sun_path, t->share_sock);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	conn = fd < 0                                                  ? strerror(errno)
		: connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? "connects"
								       : strerror(errno);
	if (fd >= 0)
		close(fd);
	return say(msg, BLOCKED, "a client share's socket: %s", conn);
}

static int try_privileges(const struct target *t, char *msg)
{
	(void)t;
	if (setresuid(0, 0, 0) == 0 || setresgid(0, 0, 0) == 0)
		return say(msg, ESCAPED, "becomes root");
	if (mount("none", "/", "tmpfs", 0, NULL) == 0 ||
	    mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND, NULL) == 0)
		return say(msg, ESCAPED, "mounts");
	if (chroot("/") == 0)
		return say(msg, ESCAPED, "chroots");
	if (syscall(SYS_pivot_root, "/", "/") == 0)
		return say(msg, ESCAPED, "pivot_root");
	return say(msg, BLOCKED, "setresuid(0), mount, chroot, pivot_root: %s", strerror(errno));
}

static int try_namespaces(const struct target *t, char *msg)
{
	static const struct {
		int flag;
		const char *name;
	} ns[] = { { CLONE_NEWUSER, "user" },
		   { CLONE_NEWNS, "mount" },
		   { CLONE_NEWNET, "network" } };
	int fd;

	(void)t;
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
		if (unshare(ns[i].flag) == 0)
			return say(msg, ESCAPED, "makes a new %s namespace", ns[i].name);
	if ((fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) >= 0) {
		int r = setns(fd, 0);

		close(fd);
		if (r == 0)
			return say(msg, ESCAPED, "setns");
	}
	return say(msg, BLOCKED, "unshare (user, mount, network) and setns refused");
}

/* The canary by file handle, noted before the jail. */
static int try_handle(const struct target *t, char *msg)
{
	int fd, root = open("/", O_PATH | O_CLOEXEC);

	if (!t->fh)
		return say(msg, BLOCKED, "no canary handle");
	fd = (int)syscall(SYS_open_by_handle_at, root, t->fh, O_RDONLY | O_CLOEXEC);
	if (root >= 0)
		close(root);
	if (fd >= 0) {
		close(fd);
		return say(msg, ESCAPED, "open_by_handle_at opens the canary");
	}
	return say(msg, BLOCKED, "open_by_handle_at: %s", strerror(errno));
}

/* System calls a VMM never needs, each a large piece of kernel to attack. */
static int try_kernel_surface(const struct target *t, char *msg)
{
	struct perf_event_attr pe = { .type = PERF_TYPE_SOFTWARE,
				      .size = sizeof(pe),
				      .config = PERF_COUNT_SW_CPU_CLOCK };
	union bpf_attr ba;
	uint8_t params[120] = { 0 };
	long r;

	(void)t;
	if ((r = syscall(SYS_io_uring_setup, 4, params)) >= 0)
		return say(msg, ESCAPED, "io_uring_setup works");
	if ((r = syscall(SYS_userfaultfd, O_CLOEXEC)) >= 0)
		return say(msg, ESCAPED, "userfaultfd works");
	if ((r = syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0)) >= 0)
		return say(msg, ESCAPED, "perf_event_open works");
	memset(&ba, 0, sizeof(ba));
	ba.map_type = BPF_MAP_TYPE_ARRAY;
	ba.key_size = 4;
	ba.value_size = 4;
	ba.max_entries = 1;
	if ((r = syscall(SYS_bpf, BPF_MAP_CREATE, &ba, sizeof(ba))) >= 0)
		return say(msg, ESCAPED, "bpf works");
	if ((r = syscall(SYS_add_key, "user", "kiln-escape", "x", 1, -2)) >= 0)
		return say(msg, ESCAPED, "add_key works");
	return say(msg, BLOCKED, "io_uring, userfaultfd, perf_event_open, bpf, add_key refused");
}

/* A program of our own choosing, from memory: this binary, run with
 * --exec-probe, which exits EXEC_PROBE_STATUS at once. */
static int try_memfd_exec(const struct target *t, char *msg)
{
	static char *const argv[] = { "kiln-escape", "--exec-probe", NULL };
	char buf[65536];
	int in, mfd, st;
	ssize_t n;
	pid_t pid;

	(void)t;
	mfd = (int)syscall(SYS_memfd_create, "kiln-escape", 0);
	if (mfd < 0)
		return say(msg, BLOCKED, "memfd_create: %s", strerror(errno));
	in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	while (in >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(mfd, buf, (size_t)n) != n)
			break;
	if (in >= 0)
		close(in);
	pid = fork();
	if (pid == 0) {
		syscall(SYS_execveat, mfd, "", argv, environ, AT_EMPTY_PATH);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return say(msg, BLOCKED, "fork: %s", strerror(errno));
	if (WIFEXITED(st) && WEXITSTATUS(st) == EXEC_PROBE_STATUS)
		return say(msg, ESCAPED, "runs a program from a memfd");
	return say(msg, BLOCKED, "exec from a memfd refused (%s)",
		   WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "exit without running it");
}

static const struct attempt attempts[] = {
	{ "every descriptor's ..", try_dotdot, 1 },
	{ "host paths", try_paths, 1 },
	{ "/proc of other processes", try_proc, 1 },
	{ "host sockets", try_sockets, 1 },
	{ "frames into passt", try_passt, 1 },
	{ "signals and ptrace", try_processes, 1 },
	{ "the egress proxy", try_egress, 1 },
	{ "a client share's socket", try_share_sock, 1 },
	{ "root, mount, chroot", try_privileges, 1 },
	{ "namespaces", try_namespaces, 0 },
	{ "open by handle", try_handle, 1 },
	{ "io_uring, userfaultfd, perf, bpf, keys", try_kernel_surface, 0 },
	{ "memfd + exec", try_memfd_exec, 0 },
};

/* ---- running the attempts ---- */

/* One attempt in a child under role's filter (-1: none); 1 when it escaped. */
static int run_one(const struct target *t, const struct attempt *a, int role,
		   const struct seccomp_prog *progs)
{
	const char *rname = role < 0 ? "jail" : seccomp_role_name((enum seccomp_role)role);
	char msg[MSG_MAX] = "";
	int p[2], st, verdict = BLOCKED;
	ssize_t n;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0 || (pid = fork()) < 0) {
		printf("escape [%s] %s: cannot fork: %s\n", rname, a->name, strerror(errno));
		return 1;
	}
	if (pid == 0) {
		close(p[0]);
		if (role >= 0 && seccomp_filter_load(&progs[role]) < 0)
			_exit(3);
		verdict = a->fn(t, msg);
		if (write(p[1], msg, strlen(msg)) < 0)
			_exit(4);
		_exit(verdict);
	}
	close(p[1]);
	n = read(p[0], msg, sizeof(msg) - 1);
	msg[n > 0 ? n : 0] = '\0';
	close(p[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS) {
		printf("escape [%s] %s: blocked (seccomp killed it%s%s)\n", rname, a->name,
		       msg[0] ? " after: " : "", msg);
	} else if (WIFEXITED(st) && WEXITSTATUS(st) <= ESCAPED) {
		verdict = WEXITSTATUS(st);
		printf("escape [%s] %s: %s (%s)\n", rname, a->name,
		       verdict == ESCAPED ? "ESCAPED" : "blocked", msg);
	} else {
		verdict = ESCAPED;
		printf("escape [%s] %s: ESCAPED? the attempt ended oddly (status %#x)\n", rname,
		       a->name, st);
	}
	fflush(stdout);
	return verdict;
}

/* What outside looks like, before the jail hides it. */
static int note_outside(struct target *t)
{
	struct stat st;
	int mount_id;

	if (stat("/", &st) < 0)
		return -1;
	t->root_dev = st.st_dev;
	t->root_ino = st.st_ino;
	if (stat("/proc", &st) < 0)
		return -1;
	t->proc_dev = st.st_dev;
	t->proc_ino = st.st_ino;
	if (t->canary) {
		t->fh = calloc(1, sizeof(*t->fh) + MAX_HANDLE_SZ);
		if (!t->fh)
			return -1;
		t->fh->handle_bytes = MAX_HANDLE_SZ;
		if (name_to_handle_at(AT_FDCWD, t->canary, t->fh, &mount_id, 0) < 0) {
			free(t->fh);
			t->fh = NULL;
		}
	}
	return 0;
}

static int usage(const char *why)
{
	fprintf(stderr,
		"kiln-escape: %s\nusage: kiln-escape [--canary FILE] [--tcp PORT] [--addr IPV4]... "
		"[--abstract NAME] [--unix PATH] [--pid PID] [--graft DIR] [--egress-dir DIR "
		"--egress-pid PID --egress-sock PATH] [--share-sock PATH] -- KILN-VMM-OPTIONS...\n",
		why);
	return 2;
}

static int parse_target(int argc, char **argv, struct target *t, int *rest)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i += 2) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			return usage("an option without its value");
		if (!strcmp(argv[i], "--canary"))
			t->canary = v;
		else if (!strcmp(argv[i], "--tcp"))
			t->tcp_port = atoi(v);
		else if (!strcmp(argv[i], "--addr") && t->naddrs < MAX_ADDRS)
			t->addrs[t->naddrs++] = v;
		else if (!strcmp(argv[i], "--abstract"))
			t->abstract_name = v;
		else if (!strcmp(argv[i], "--unix"))
			t->unix_path = v;
		else if (!strcmp(argv[i], "--graft"))
			t->graft = v;
		else if (!strcmp(argv[i], "--pid"))
			t->pid = (pid_t)atoi(v);
		else if (!strcmp(argv[i], "--egress-dir"))
			t->egress_dir = v;
		else if (!strcmp(argv[i], "--egress-sock"))
			t->egress_sock = v;
		else if (!strcmp(argv[i], "--egress-pid"))
			t->egress_pid = (pid_t)atoi(v);
		else if (!strcmp(argv[i], "--share-sock"))
			t->share_sock = v;
		else
			return usage("unknown option");
	}
	if (i >= argc)
		return usage("no -- before kiln-vmm's options");
	if (t->canary && t->canary[0] != '/')
		return usage("--canary needs an absolute path");
	*rest = i;
	return 0;
}

#define GRAFT_WAIT_MS 60000

/* The helper (root, outside the jail): clone t->graft, wait for the
 * control socket, send `graft escape pod-member` with the clone, then
 * mark it done in the jail directory (which the jailed VMM sees). */
static int graft_start(const struct target *t, const struct vmm_opts *o, char *done, size_t cap)
{
	struct control_cmd cmd = { .op = CTL_GRAFT, .tag = "escape", .name = "pod-member" };
	struct control_reply rep;
	struct err e;
	struct stat st;
	int tree, fd;
	pid_t pid;

	if (!o->control_path || !o->jail_dir)
		return -1;
	snprintf(done, cap, "%s/graft-done", o->jail_dir);
	tree = (int)syscall(SYS_open_tree, AT_FDCWD, t->graft,
			    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (tree < 0)
		return -1;
	pid = fork();
	if (pid != 0) {
		close(tree);
		return pid < 0 ? -1 : 0;
	}
	for (int i = 0; i < GRAFT_WAIT_MS / 20 && stat(o->control_path, &st) < 0; i++)
		usleep(20000);
	if (control_client_run_fd(o->control_path, &cmd, tree, GRAFT_WAIT_MS, &rep, &e) < 0) {
		fprintf(stderr, "kiln-escape: graft: %s\n", e.msg);
		_exit(1);
	}
	fd = open(done, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	_exit(fd < 0);
}

/* The jailed VMM: until the helper's graft is in (its mark). */
static int graft_wait(const char *done)
{
	struct stat st;

	for (int i = 0; i < GRAFT_WAIT_MS / 20; i++) {
		if (stat(done, &st) == 0)
			return 0;
		usleep(20000);
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct seccomp_prog progs[SECCOMP_ROLE_COUNT] = { { 0 } };
	struct target t = { 0 };
	struct vmm_opts o;
	struct control *ctl;
	struct err e = { { 0 } };
	kiln_vm *vm;
	kiln_vm_prepared *prep = NULL;
	int rest, r, escaped = 0, tried = 0;
	char done[PATH_MAX];

	if (argc == 2 && !strcmp(argv[1], "--exec-probe"))
		return EXEC_PROBE_STATUS;
	/* As kiln-vmm --park does (vmm/kiln-vmm/main.c). */
	if (argc > 1 && !strcmp(argv[1], "--park")) {
		kiln_vm_prepare(&prep, NULL, 0);
		if ((r = park_wait(argc, argv, &argc, &argv, &e))) {
			kiln_vm_prepared_free(prep);
			if (r > 0)
				return 0;
			fprintf(stderr, "kiln-escape: %s\n", e.msg);
			return 2;
		}
	}
	if ((r = parse_target(argc, argv, &t, &rest)))
		return r;
	if (note_outside(&t) < 0)
		return usage("cannot look at / and /proc");
	/* kiln-vmm's parser sees argv[0] and what follows "--". */
	argv[rest] = argv[0];
	if ((r = vmm_opts_parse(argc - rest, argv + rest, &o)) != VMM_EXIT_OK) {
		kiln_vm_prepared_free(prep);
		vmm_opts_free(&o);
		return r == VMM_OPTS_DONE ? 0 : 2;
	}
	vmm_opts_prepared(&o, prep);
	/* a pod's graft as kiln-runtime makes it: root, outside the jail,
	 * sends a detached clone over the control socket once it listens */
	if (t.graft && graft_start(&t, &o, done, sizeof(done)) < 0)
		return usage("--graft needs --control and --jail, and a directory to clone");
	if (vmm_setup(&o, &vm, &ctl, &e) != VMM_EXIT_OK) {
		fprintf(stderr, "kiln-escape: kiln-vmm's setup: %s\n", e.msg);
		return 2;
	}
	if (t.graft && graft_wait(done) < 0) {
		fprintf(stderr, "kiln-escape: the graft never arrived (%s)\n", done);
		return 2;
	}
	for (int i = 0; i < SECCOMP_ROLE_COUNT; i++) {
		if (seccomp_filter_build((enum seccomp_role)i, SECCOMP_FILTER_KILL, &progs[i], &e) <
		    0) {
			fprintf(stderr, "kiln-escape: %s\n", e.msg);
			return 2;
		}
	}
	printf("escape: set up as kiln-vmm (pid %d, uid %d), attacking\n", (int)getpid(),
	       (int)getuid());
	for (size_t i = 0; i < sizeof(attempts) / sizeof(attempts[0]); i++) {
		for (int role = attempts[i].jail_alone ? -1 : 0; role < SECCOMP_ROLE_COUNT;
		     role++) {
			escaped += run_one(&t, &attempts[i], role, progs);
			tried++;
		}
	}
	printf("escape: %d attempts, %d blocked, %d escaped\n", tried, tried - escaped, escaped);
	control_stop(ctl);
	kiln_vm_destroy(vm);
	return escaped ? 1 : 0;
}
