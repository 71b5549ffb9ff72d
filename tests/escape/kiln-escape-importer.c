/*
 * kiln-escape-importer: the compromised image importer (docs/security.md,
 * "The escape suite").
 *
 * kilnd runs it in place of kiln-image-import (`kilnd --importer`), so it
 * starts exactly as the importer does: as the import uid, no_new_privs,
 * in kilnd's own namespaces for the importer, rlimits, a fixed
 * environment, the archive on stdin. It then loads the importer's own
 * seccomp filter (import_seccomp_load, the same function), as the
 * importer does before it reads a byte, and plays an importer that a
 * hostile archive took over. The archive is the runner's note of the
 * targets, one KEY=VALUE a line: canary (a root-only file), state (kilnd's
 * state directory), socket (kilnd's API socket), tcp (a port on the host's
 * loopback), abstract (an abstract socket's name), pid (kilnd's pid).
 *
 * Each attempt runs in a child, once under the importer's confinement
 * alone ("confined") and once with its filter too ("seccomp"). Every
 * attempt prints a line on stderr; the last line, which kilnd hands the
 * client as the import's error, is "escape: N attempts, M blocked, K
 * escaped: " and every attempt's verdict. Exit status 2, kiln-image-import's "bad archive", so that
 * line comes back as the 400's message.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/image-import/import_seccomp.h"
#include "lib/base/fd_io.h"

#include "tests/escape/attempt.h"

#define VALUE_MAX 256

struct target {
	char canary[VALUE_MAX], state[VALUE_MAX], socket[VALUE_MAX], abstract[VALUE_MAX];
	int tcp;
	pid_t pid;
};

/* The canary (root's, 0600) and kilnd's state: no read, no write. */
static int try_files(const struct target *t, char *msg)
{
	char path[VALUE_MAX + 32];
	int fd;

	if ((fd = open(t->canary, O_RDONLY | O_CLOEXEC)) >= 0) {
		close(fd);
		return say(msg, ESCAPED, "reads the canary %s", t->canary);
	}
	snprintf(path, sizeof(path), "%s/kiln-escape", t->state);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) >= 0) {
		close(fd);
		unlink(path);
		return say(msg, ESCAPED, "writes into kilnd's state directory");
	}
	snprintf(path, sizeof(path), "%s/images/kiln-escape", t->state);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) >= 0) {
		close(fd);
		unlink(path);
		return say(msg, ESCAPED, "writes into kilnd's images");
	}
	if (mkdir("/kiln-escape", 0700) == 0) {
		rmdir("/kiln-escape");
		return say(msg, ESCAPED, "writes to the host's /");
	}
	return say(msg, BLOCKED, "the canary, kilnd's state and images, / refused: %s",
		   strerror(errno));
}

/* kilnd's API answering a listing: the one thing its socket must not give. */
static int kilnd_answers(int s)
{
	static const char req[] = "GET /v1/sandboxes HTTP/1.0\r\nHost: kiln\r\n\r\n";
	char buf[64] = "";
	struct pollfd p = { .fd = s, .events = POLLIN };

	if (write(s, req, sizeof(req) - 1) < 0 || poll(&p, 1, 5000) != 1 ||
	    read(s, buf, sizeof(buf) - 1) <= 0)
		return 0;
	return strncmp(buf, "HTTP/1.1 200", 12) == 0;
}

static int try_sockets(const struct target *t, char *msg)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)t->tcp) };
	int s;

	if ((s = connect_unix(t->socket, 0)) >= 0) {
		int yes = kilnd_answers(s);

		close(s);
		if (yes)
			return say(msg, ESCAPED, "kilnd's API answers it");
	}
	if ((s = connect_unix(t->abstract, 1)) >= 0) {
		close(s);
		return say(msg, ESCAPED, "connects to the host's abstract socket @%s", t->abstract);
	}
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (s >= 0 && t->tcp && connect(s, (struct sockaddr *)&a, sizeof(a)) == 0) {
		close(s);
		return say(msg, ESCAPED, "connects to 127.0.0.1:%d", t->tcp);
	}
	if (s >= 0)
		close(s);
	return say(msg, BLOCKED,
		   "kilnd's API, the host's abstract socket and loopback unreachable");
}

/* kilnd, then every pid but this importer's own. */
static int try_processes(const struct target *t, char *msg)
{
	char path[64];
	int fd;

	if (ptrace(PTRACE_ATTACH, t->pid, 0, 0) == 0)
		return say(msg, ESCAPED, "ptrace-attaches to kilnd");
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)t->pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		close(fd);
		return say(msg, ESCAPED, "reads kilnd's environment");
	}
	for (pid_t pid = 1; pid < 65536; pid++)
		if (pid != getpid() && pid != getppid() && kill(pid, 0) == 0)
			return say(msg, ESCAPED, "may signal pid %d", (int)pid);
	return say(msg, BLOCKED,
		   "no ptrace of kilnd, no /proc of it, no signal to any other process");
}

static int try_privileges(const struct target *t, char *msg)
{
	uint8_t params[120] = { 0 };

	(void)t;
	if (setresuid(0, 0, 0) == 0)
		return say(msg, ESCAPED, "becomes root");
	if (mount("none", "/tmp", "tmpfs", 0, NULL) == 0)
		return say(msg, ESCAPED, "mounts");
	if (unshare(CLONE_NEWUSER) == 0)
		return say(msg, ESCAPED, "makes a user namespace");
	if (syscall(SYS_io_uring_setup, 4, params) >= 0)
		return say(msg, ESCAPED, "io_uring_setup works");
	if (syscall(SYS_userfaultfd, O_CLOEXEC) >= 0)
		return say(msg, ESCAPED, "userfaultfd works");
	return say(msg, BLOCKED,
		   "setresuid(0), mount, a user namespace, io_uring, userfaultfd refused");
}

static const struct {
	const char *name;
	int (*fn)(const struct target *t, char *msg);
	int confined; /* the confinement must stop it without the filter */
} attempts[] = {
	{ "files of root and kilnd", try_files, 1 },
	{ "kilnd's socket and the host's", try_sockets, 1 },
	{ "kilnd and other processes", try_processes, 1 },
	{ "root, mount, namespaces, kernel surface", try_privileges, 0 },
};

/* One attempt in a child, with the importer's filter when `filtered`; 1
 * when it escaped. Its verdict is added to `all` (the last line, the one
 * kilnd hands the client, carries every attempt). */
static int run_one(const struct target *t, int i, int filtered, char *all, size_t cap)
{
	const char *how = filtered ? "seccomp" : "confined";
	char msg[MSG_MAX] = "";
	struct err e;
	int p[2], st, verdict;
	ssize_t n;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0 || (pid = fork()) < 0)
		return 1;
	if (pid == 0) {
		close(p[0]);
		if (filtered && import_seccomp_load(&e) < 0)
			_exit(3);
		verdict = attempts[i].fn(t, msg);
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
	verdict = !(WIFEXITED(st) && WEXITSTATUS(st) == BLOCKED) &&
		!(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS);
	fprintf(stderr, "escape [importer, %s] %s: %s (%s)\n", how, attempts[i].name,
		verdict ? "ESCAPED" : "blocked", msg[0] ? msg : "no word from it");
	n = (ssize_t)strlen(all);
	if ((size_t)n < cap)
		snprintf(all + n, cap - (size_t)n, "%s[%s] %s: %s", n ? "; " : "", how,
			 attempts[i].name, verdict ? msg : "blocked");
	return verdict;
}

/* The runner's note of the targets, on stdin. */
static int read_targets(struct target *t)
{
	char buf[4096], *line, *save = NULL;
	ssize_t n = fd_io_read_full(STDIN_FILENO, buf, sizeof(buf) - 1);

	if (n <= 0)
		return -1;
	buf[n] = '\0';
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *v = strchr(line, '=');

		if (!v)
			continue;
		*v++ = '\0';
		if (!strcmp(line, "canary"))
			snprintf(t->canary, sizeof(t->canary), "%s", v);
		else if (!strcmp(line, "state"))
			snprintf(t->state, sizeof(t->state), "%s", v);
		else if (!strcmp(line, "socket"))
			snprintf(t->socket, sizeof(t->socket), "%s", v);
		else if (!strcmp(line, "abstract"))
			snprintf(t->abstract, sizeof(t->abstract), "%s", v);
		else if (!strcmp(line, "tcp"))
			t->tcp = atoi(v);
		else if (!strcmp(line, "pid"))
			t->pid = (pid_t)atoi(v);
	}
	return t->canary[0] && t->state[0] && t->socket[0] && t->pid > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct target t = { 0 };
	char all[2048] = "";
	int tried = 0, escaped = 0;

	(void)argc;
	(void)argv;
	if (read_targets(&t) < 0) {
		fprintf(stderr,
			"kiln-escape-importer: the archive must be the targets' note (canary=, state=, socket=, pid=, ...)\n");
		return 2;
	}
	fprintf(stderr, "escape: set up as kiln-image-import (uid %d), attacking\n", (int)getuid());
	for (size_t i = 0; i < sizeof(attempts) / sizeof(attempts[0]); i++) {
		for (int filtered = !attempts[i].confined; filtered < 2; filtered++) {
			escaped += run_one(&t, (int)i, filtered, all, sizeof(all));
			tried++;
		}
	}
	fprintf(stderr, "escape: %d attempts, %d blocked, %d escaped: %s\n", tried, tried - escaped,
		escaped, all);
	return 2;
}
