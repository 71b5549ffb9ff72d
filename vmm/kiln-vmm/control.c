/* kiln-vmm's control socket server; see control.h. */
#include "vmm/kiln-vmm/control.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/base/fd_io.h"
#include "lib/base/thread_start.h"
#include "vmm/control/control_proto.h"

/* A client that sends nothing for this long is dropped: one client at a time. */
#define CONTROL_IDLE_MS 60000

struct control {
	kiln_vm *vm;
	int listen_fd;
	int stop_fd;
	pthread_t thread;
	char path[108];
	int started; /* control_start ran: the thread is there to join */
};

static const char *state_of(kiln_vm *vm)
{
	return kiln_vm_is_paused(vm) ? "paused" : "running";
}

/* A failed libkiln call: its message into e, its -errno back. */
static int vm_err(kiln_vm *vm, int r, struct err *e)
{
	kiln_vm_errmsg_copy(vm, e->msg, sizeof(e->msg));
	return r;
}

/* firewall-set/-get: a reply of any length, malloc'd; NULL: the error is in e. */
static char *run_firewall(struct control *c, const struct control_cmd *cmd, struct err *e)
{
	char *obj, *r;
	int err;

	if (cmd->op == CTL_FIREWALL_SET) {
		size_t cut = 0;

		int rc = kiln_vm_firewall_set(c->vm, cmd->json, strlen(cmd->json), &cut);

		if (rc < 0) {
			vm_err(c->vm, rc, e);
			return NULL;
		}
		r = malloc(64);
		if (r)
			snprintf(r, 64, "{\"ok\":true,\"cut\":%zu}\n", cut);
		return r;
	}
	obj = NULL;
	if ((err = kiln_vm_firewall_get(c->vm, &obj)) < 0)
		vm_err(c->vm, err, e);
	r = obj ? control_reply_object(obj) : NULL;
	if (obj && !r)
		err_set(e, ENOMEM, "out of memory");
	kiln_free(obj);
	return r;
}

/*
 * Run one command; the reply line into out[n], or (firewall commands) a
 * malloc'd reply returned, which the caller frees.
 */
static char *run_command(struct control *c, char *line, int *fd, char *out, size_t n)
{
	struct control_cmd cmd;
	struct err e = { { 0 } };
	int r = 0;

	if (control_parse(line, &cmd, &e)) {
		control_reply_error(out, n, e.msg);
		return NULL;
	}
	switch (cmd.op) {
	case CTL_FIREWALL_SET:
	case CTL_FIREWALL_GET: {
		char *r = run_firewall(c, &cmd, &e);

		if (!r)
			control_reply_error(out, n, e.msg[0] ? e.msg : "control: out of memory");
		return r;
	}
	case CTL_PAUSE:
		if ((r = kiln_vm_pause(c->vm)) < 0)
			vm_err(c->vm, r, &e);
		break;
	case CTL_RESUME:
		if ((r = kiln_vm_resume(c->vm)) < 0)
			vm_err(c->vm, r, &e);
		break;
	case CTL_STATUS:
		break;
	case CTL_GRAFT:
		if (*fd < 0) {
			err_set(&e, EINVAL,
				"control: graft needs the directory's descriptor sent with its line "
				"(SCM_RIGHTS)");
			r = -EINVAL;
		} else if ((r = kiln_vm_share_graft(c->vm, cmd.tag, cmd.name, *fd)) < 0) {
			vm_err(c->vm, r, &e);
		} else {
			*fd = -1; /* the share's now */
		}
		break;
	case CTL_UNGRAFT:
		if ((r = kiln_vm_share_graft(c->vm, cmd.tag, cmd.name, -1)) < 0)
			vm_err(c->vm, r, &e);
		break;
	case CTL_SNAPSHOT: {
		uint64_t mem = 0, stored = 0, state = 0, disk = 0, pages = 0;
		double ms = 0;
		char dir[1024], base[CONTROL_BASE_MAX + 1],
			jbase[2 * CONTROL_BASE_MAX + 3] = "null";

		if ((r = kiln_vm_snapshot_layered(c->vm, cmd.dir, cmd.base,
						  cmd.compress ? KILN_SNAPSHOT_COMPRESS : 0)) < 0) {
			vm_err(c->vm, r, &e);
			break;
		}
		kiln_vm_snapshot_stats(c->vm, &mem, &stored, &state, &disk, &ms);
		if (kiln_vm_snapshot_base(c->vm, base, sizeof(base), &pages)) {
			jbase[0] = '"';
			control_json_escape(jbase + 1, sizeof(jbase) - 2, base);
			strcat(jbase, "\"");
		}
		control_json_escape(dir, sizeof(dir), cmd.dir);
		snprintf(out, n,
			 "{\"ok\":true,\"state\":\"%s\",\"dir\":\"%s\",\"memory_bytes\":%llu,"
			 "\"memory_stored_bytes\":%llu,\"state_bytes\":%llu,\"disk_bytes\":%llu,\"ms\":%.3f,"
			 "\"base\":%s,\"dirty_pages\":%llu}\n",
			 state_of(c->vm), dir, (unsigned long long)mem, (unsigned long long)stored,
			 (unsigned long long)state, (unsigned long long)disk, ms, jbase,
			 (unsigned long long)pages);
		return NULL;
	}
	}
	if (r) {
		control_reply_error(out, n, e.msg);
		return NULL;
	}
	snprintf(out, n, "{\"ok\":true,\"state\":\"%s\"}\n", state_of(c->vm));
	return NULL;
}

/* Up to cap bytes into buf; the one descriptor sent with them (graft's)
 * into *fd, replacing (closing) one not used yet. A message carrying
 * more than one, or cut short (MSG_CTRUNC), leaves none: all closed. */
static ssize_t recv_with_fd(int sock, char *buf, size_t cap, int *fd)
{
	union {
		struct cmsghdr h;
		char space[CMSG_SPACE(4 * sizeof(int))];
	} u;
	struct iovec iov = { buf, cap };
	struct msghdr m = { .msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.space,
			    .msg_controllen = sizeof(u.space) };
	ssize_t k = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	int got[4], n = 0;

	for (struct cmsghdr *h = k >= 0 ? CMSG_FIRSTHDR(&m) : NULL; h; h = CMSG_NXTHDR(&m, h)) {
		size_t nfd = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);

		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < nfd && n < 4; i++)
			memcpy(&got[n++], CMSG_DATA(h) + i * sizeof(int), sizeof(int));
	}
	if (n == 1 && !(m.msg_flags & MSG_CTRUNC)) {
		if (*fd >= 0)
			close(*fd);
		*fd = got[0];
	} else {
		for (int i = 0; i < n; i++)
			close(got[i]);
	}
	return k;
}

/* Serve one client until it leaves, goes quiet or we stop. */
static void serve_client(struct control *c, int fd)
{
	char reply[CONTROL_SHORT_REPLY_MAX];
	char *buf = malloc(CONTROL_LINE_MAX + 1); /* a firewall-set line is up to 256 KiB */
	size_t have = 0;
	int sent = -1; /* a descriptor the client sent, not taken yet */

	if (!buf)
		return;
	for (;;) {
		struct pollfd p[2] = { { .fd = fd, .events = POLLIN },
				       { .fd = c->stop_fd, .events = POLLIN } };
		char *nl;
		ssize_t k;
		int r = poll(p, 2, CONTROL_IDLE_MS);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || p[1].revents)
			break;
		k = recv_with_fd(fd, buf + have, CONTROL_LINE_MAX - have, &sent);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		have += (size_t)k;
		while ((nl = memchr(buf, '\n', have))) {
			size_t len = (size_t)(nl - buf) + 1;
			char *big;
			int bad;

			*nl = 0;
			big = run_command(c, buf, &sent, reply, sizeof(reply));
			if (sent >= 0) { /* one line's: never another's */
				close(sent);
				sent = -1;
			}
			bad = big ? fd_io_send_all(fd, big, strlen(big))
				  : fd_io_send_all(fd, reply, strlen(reply));
			free(big);
			if (bad)
				goto out;
			memmove(buf, buf + len, have - len);
			have -= len;
		}
		if (have == CONTROL_LINE_MAX) {
			control_reply_error(reply, sizeof(reply), "control: command line too long");
			fd_io_send_all(fd, reply, strlen(reply));
			break;
		}
	}
out:
	if (sent >= 0)
		close(sent);
	free(buf);
}

static void *control_thread(void *arg)
{
	struct control *c = arg;

	pthread_setname_np(pthread_self(), "kiln-control");
	/* Before the first client: this thread pauses, snapshots and
	 * destroys nothing else than the main thread may (its role). */
	if (kiln_seccomp_apply_control(c->vm) < 0) {
		fprintf(stderr, "kiln-vmm: control socket: %s\n", kiln_vm_errmsg(c->vm));
		kiln_vm_stop(c->vm);
		return NULL;
	}
	for (;;) {
		struct pollfd p[2] = { { .fd = c->listen_fd, .events = POLLIN },
				       { .fd = c->stop_fd, .events = POLLIN } };
		int fd;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		if (p[1].revents)
			return NULL;
		fd = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		serve_client(c, fd);
		close(fd);
	}
}

int control_open(kiln_vm *vm, const char *path, struct control **out, struct err *e)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct control *c;
	struct stat st;
	int err;

	*out = NULL;
	if (strlen(path) >= sizeof(a.sun_path))
		return err_set(e, ENAMETOOLONG,
			       "--control %s: a socket path must be under %zu bytes", path,
			       sizeof(a.sun_path));
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return err_set(
				e, EEXIST,
				"--control %s: exists and is not a socket; remove it or pick another path",
				path);
		unlink(path);
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return err_set(e, ENOMEM, "out of memory");
	c->vm = vm;
	snprintf(c->path, sizeof(c->path), "%s", path);
	memcpy(a.sun_path, path, strlen(path) + 1);
	c->stop_fd = eventfd(0, EFD_CLOEXEC);
	c->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->stop_fd < 0 || c->listen_fd < 0) {
		err = errno;
		goto fail;
	}
	/* umask is the whole process's, so chmod after bind: put the socket
	 * in a directory only its owner can enter (kilnd's sandbox directory
	 * is 0700) and there is no window. */
	if (bind(c->listen_fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		err = errno;
		goto fail;
	}
	if (chmod(path, 0600) < 0 || listen(c->listen_fd, 4) < 0) {
		err = errno;
		unlink(path);
		goto fail;
	}
	*out = c;
	return 0;
fail:
	if (c->listen_fd >= 0)
		close(c->listen_fd);
	if (c->stop_fd >= 0)
		close(c->stop_fd);
	free(c);
	return err_set(e, err, "--control %s: %s", path, strerror(err));
}

int control_start(struct control *c, struct err *e)
{
	int err = thread_start(&c->thread, control_thread, c);

	if (err)
		return err_set(e, err, "--control %s: starting its thread: %s", c->path,
			       strerror(err));
	c->started = 1;
	return 0;
}

void control_stop(struct control *c)
{
	uint64_t one = 1;

	if (!c)
		return;
	if (write(c->stop_fd, &one, sizeof(one)) < 0) {
		/* a fresh eventfd cannot refuse one write */
	}
	if (c->started)
		pthread_join(c->thread, NULL);
	close(c->listen_fd);
	close(c->stop_fd);
	unlink(c->path);
	free(c);
}
