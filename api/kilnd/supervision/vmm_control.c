/* kiln-vmm's control socket, the client side; see vmm_control.h. */
#include "api/kilnd/supervision/vmm_control.h"
#include "lib/base/fd_io.h"
#include "lib/base/mono.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Wait for events on fd until the deadline. 1 ready, 0 timed out, -errno. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		int64_t left = deadline - mono_ms();
		int r;

		if (left <= 0)
			return 0;
		r = poll(&p, 1, left > 60000 ? 60000 : (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r > 0)
			return 1;
	}
}

/* fd_io's waiter: wait_fd() until the exchange's deadline. */
static int deadline_wait(void *arg, int fd, short events)
{
	int r = wait_fd(fd, events, *(const int64_t *)arg);

	return r > 0 ? 0 : r < 0 ? r : -ETIMEDOUT;
}

/*
 * Send line[len] (ending in its newline; modified) and read one reply line
 * of at most reply_max bytes into *reply (malloc'd, without the newline).
 */
static int exchange(const char *sock_path, char *line, size_t len, size_t reply_max, int timeout_ms,
		    char **reply_out, struct api_err *e)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char *reply;
	int64_t deadline;
	size_t have = 0;
	int fd, r;

	*reply_out = NULL;
	if (timeout_ms <= 0)
		timeout_ms = VMM_CONTROL_TIMEOUT_MS;
	deadline = mono_ms() + timeout_ms;
	if (strlen(sock_path) >= sizeof(a.sun_path)) {
		api_err_set(e, API_E_INTERNAL, "kiln-vmm control socket '%s': path too long",
			    sock_path);
		return -1;
	}
	memcpy(a.sun_path, sock_path, strlen(sock_path) + 1);
	reply = malloc(reply_max + 1);
	if (!reply) {
		api_err_set(e, API_E_INTERNAL, "kiln-vmm control: out of memory");
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		api_err_set(e, API_E_INTERNAL, "kiln-vmm control: socket: %s", strerror(errno));
		free(reply);
		return -1;
	}
	/* A Unix connect does not block on a listening socket; a full backlog
	 * (EAGAIN) means kiln-vmm is busy with other clients. */
	while (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN && mono_ms() < deadline) {
			usleep(10000);
			continue;
		}
		api_err_set(e, errno == EAGAIN ? API_E_TIMEOUT : API_E_INTERNAL,
			    "cannot reach kiln-vmm's control socket %s: %s (has the VM ended?)",
			    sock_path, strerror(errno));
		close(fd);
		free(reply);
		return -1;
	}
	/* fd_io sets errno to what failed (ETIMEDOUT, EIO for a 0-byte
	 * send, ...) for io_fail's message. */
	if (fd_io_put_all(fd, line, len, FD_IO_SEND,
			  &(struct fd_io_waiter){ deadline_wait, &deadline }) < 0)
		goto io_fail;
	for (;;) {
		char *nl = memchr(reply, '\n', have);
		ssize_t k;

		if (nl) {
			*nl = '\0';
			break;
		}
		if (have == reply_max) {
			api_err_set(e, API_E_INTERNAL,
				    "kiln-vmm control: a reply longer than %zu bytes", reply_max);
			close(fd);
			free(reply);
			return -1;
		}
		r = wait_fd(fd, POLLIN, deadline);
		if (r <= 0) {
			errno = r ? -r : ETIMEDOUT;
			goto io_fail;
		}
		k = recv(fd, reply + have, reply_max - have, 0);
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (k == 0)
			errno = ECONNRESET;
		if (k <= 0)
			goto io_fail;
		have += (size_t)k;
	}
	close(fd);
	*reply_out = reply;
	return 0;

io_fail:
	line[len - 1] = '\0';
	if (errno == ETIMEDOUT)
		api_err_set(e, API_E_TIMEOUT, "kiln-vmm did not answer '%.200s' within %d ms", line,
			    timeout_ms);
	else
		api_err_set(e, API_E_INTERNAL, "kiln-vmm control '%.200s': %s (has the VM ended?)",
			    line, strerror(errno));
	close(fd);
	free(reply);
	return -1;
}

int vmm_control_run(const char *sock_path, const struct control_cmd *cmd, int timeout_ms,
		    struct control_reply *out, struct api_err *e)
{
	struct err why = { { 0 } };
	char *line, *reply;
	size_t len;
	int r;

	memset(out, 0, sizeof(*out));
	r = control_request(cmd, &line, &len, &why);
	if (r) {
		api_err_set(e, r == -EINVAL ? API_E_BAD_FIELD : API_E_INTERNAL, "%s", why.msg);
		return -1;
	}
	r = exchange(sock_path, line, len, control_reply_max(cmd->op), timeout_ms, &reply, e);
	free(line);
	if (r)
		return -1;
	r = control_reply_parse(reply, cmd->op, out, &why);
	free(reply);
	if (r) {
		api_err_set(e, API_E_INTERNAL, "%s", why.msg);
		return -1;
	}
	return 0;
}

int vmm_control_call(const char *sock_path, enum control_op op, const char *dir, bool compress,
		     int timeout_ms, struct control_reply *out, struct api_err *e)
{
	struct control_cmd cmd = { .op = op, .compress = compress, .dir = dir };

	return vmm_control_run(sock_path, &cmd, timeout_ms, out, e);
}

int vmm_control_firewall(const char *sock_path, const char *rules, int timeout_ms, size_t *cut,
			 json_t **obj, struct api_err *e)
{
	struct control_cmd cmd = { .op = rules ? CTL_FIREWALL_SET : CTL_FIREWALL_GET,
				   .json = rules };
	struct control_reply rep;

	if (cut)
		*cut = 0;
	if (obj)
		*obj = NULL;
	if (vmm_control_run(sock_path, &cmd, timeout_ms, &rep, e))
		return -1;
	if (cut)
		*cut = rep.cut;
	if (obj)
		*obj = rep.firewall;
	else
		json_decref(rep.firewall);
	return 0;
}
