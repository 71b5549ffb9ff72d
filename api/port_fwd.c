/* TCP → guest vsock port forwarding; see port_fwd.h. */
#include "port_fwd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent_client.h"
#include "kilnd.h"
#include "sandbox_record.h"

struct port_fwd {
	atomic_int refs;       /* the owner, the listener, each relay */
	int listen_fd;
	int stop_fd;           /* eventfd: written once by close, never read, so it stays readable for all */
	pthread_t listener;
	struct agent_client c; /* port = the guest port */
	uint16_t host_port;
	uint32_t guest_port;
	int64_t created_ms;
	atomic_uint active;
	atomic_ullong total, refused;
};

static void fwd_put(struct port_fwd *f)
{
	if (atomic_fetch_sub(&f->refs, 1) != 1)
		return;
	close(f->stop_fd);
	free(f);
}

/* ---- one connection ---- */

struct pipe_dir {
	int from, to;
	uint8_t *buf;
	size_t len, off;
	bool eof;
};

struct relay {
	struct port_fwd *f;
	int tcp;
};

/* Move bytes: read into an empty buffer, write out a full one. -1 on an error. */
static int pump_read(struct pipe_dir *d)
{
	ssize_t n = recv(d->from, d->buf, PORT_FWD_BUF, 0);

	if (n > 0) {
		d->len = (size_t)n;
		d->off = 0;
		return 0;
	}
	if (n == 0) {
		d->eof = true;
		return 0;
	}
	return errno == EAGAIN || errno == EINTR ? 0 : -1;
}

static int pump_write(struct pipe_dir *d)
{
	ssize_t n = send(d->to, d->buf + d->off, d->len - d->off, MSG_NOSIGNAL);

	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	d->off += (size_t)n;
	if (d->off == d->len)
		d->len = d->off = 0;
	return 0;
}

static void relay_run(struct port_fwd *f, int tcp, int vs)
{
	struct pipe_dir dir[2] = { { .from = tcp, .to = vs }, { .from = vs, .to = tcp } };
	int64_t drain_until = 0;

	dir[0].buf = malloc(PORT_FWD_BUF);
	dir[1].buf = malloc(PORT_FWD_BUF);
	if (!dir[0].buf || !dir[1].buf)
		goto out;
	for (;;) {
		struct pollfd p[3] = { { .fd = tcp }, { .fd = vs }, { .fd = f->stop_fd, .events = POLLIN } };
		bool closing = dir[0].eof || dir[1].eof;
		int timeout = -1, r;

		if (closing) {
			if (!dir[0].len && !dir[1].len)
				break;
			if (!drain_until)
				drain_until = mono_ms() + PORT_FWD_DRAIN_MS;
			timeout = (int)(drain_until - mono_ms());
			if (timeout <= 0)
				break;
		}
		/* Read a side only into an empty buffer and never after an EOF
		 * (bounded memory); poll a side only for what it is needed for,
		 * so a hung-up socket cannot spin the loop. */
		for (int i = 0; i < 2; i++) {
			if (!closing && !dir[i].len)
				p[i].events |= POLLIN;
			if (dir[1 - i].len)
				p[i].events |= POLLOUT;
			if (!p[i].events)
				p[i].fd = -1;
		}
		r = poll(p, 3, timeout);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || (p[2].revents & POLLIN))
			break;
		if ((p[0].revents | p[1].revents) & (POLLERR | POLLNVAL))
			break;
		for (int i = 0; i < 2; i++) {
			if ((p[i].revents & (POLLIN | POLLHUP)) && (p[i].events & POLLIN) && pump_read(&dir[i]) < 0)
				goto out;
			if ((p[i].revents & (POLLOUT | POLLHUP)) && (p[i].events & POLLOUT) &&
			    pump_write(&dir[1 - i]) < 0)
				goto out;
		}
	}
out:
	free(dir[0].buf);
	free(dir[1].buf);
}

static void *relay_main(void *arg)
{
	struct relay *rl = arg;
	struct port_fwd *f = rl->f;
	struct agent_client_err ae;
	int vs = -1;

	if (agent_client_connect(&f->c, &vs, &ae) == 0) {
		relay_run(f, rl->tcp, vs);
		close(vs);
	}
	/* No guest listener: the client sees its connection closed. */
	close(rl->tcp);
	free(rl);
	atomic_fetch_sub(&f->active, 1);
	fwd_put(f);
	return NULL;
}

/* ---- listener ---- */

/* 0, or the errno of a failed accept. */
static int accept_one(struct port_fwd *f)
{
	int fd = accept4(f->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	struct relay *rl;
	pthread_attr_t attr;
	pthread_t th;
	int err;

	if (fd < 0)
		return errno; /* EAGAIN, a connection reset before accept, EMFILE: try again later */
	if (atomic_fetch_add(&f->active, 1) >= PORT_FWD_CONNS_MAX || !(rl = malloc(sizeof(*rl)))) {
		atomic_fetch_sub(&f->active, 1);
		atomic_fetch_add(&f->refused, 1);
		close(fd);
		return 0;
	}
	rl->f = f;
	rl->tcp = fd;
	atomic_fetch_add(&f->refs, 1);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&th, &attr, relay_main, rl);
	pthread_attr_destroy(&attr);
	if (err) {
		close(fd);
		free(rl);
		atomic_fetch_sub(&f->active, 1);
		atomic_fetch_add(&f->refused, 1);
		fwd_put(f);
		return 0;
	}
	atomic_fetch_add(&f->total, 1);
	return 0;
}

static void *listener_main(void *arg)
{
	struct port_fwd *f = arg;

	for (;;) {
		struct pollfd p[2] = { { .fd = f->listen_fd, .events = POLLIN }, { .fd = f->stop_fd, .events = POLLIN } };
		int r = poll(p, 2, -1);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || (p[1].revents & POLLIN))
			break;
		if (p[0].revents & POLLIN) {
			r = accept_one(f);
			/* Out of descriptors leaves the connection queued and the
			 * socket readable: a short pause keeps that from spinning. */
			if (r == EMFILE || r == ENFILE)
				usleep(10000);
		} else if (p[0].revents & (POLLERR | POLLNVAL)) {
			break;
		}
	}
	/* The port is free once this returns (port_fwd_close joins). */
	close(f->listen_fd);
	f->listen_fd = -1;
	return NULL;
}

int port_fwd_open(const char *uds_path, uint32_t guest_port, uint16_t host_port, struct port_fwd **out,
		  struct api_err *e)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(host_port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	struct port_fwd *f = calloc(1, sizeof(*f));
	int one = 1, err;

	*out = NULL;
	if (!f) {
		api_err_set(e, API_E_INTERNAL, "port mapping: out of memory");
		return -1;
	}
	f->listen_fd = f->stop_fd = -1;
	if (agent_client_init(&f->c, uds_path)) {
		api_err_set(e, API_E_INTERNAL, "port mapping: vsock socket path too long");
		goto fail;
	}
	f->c.port = guest_port;
	f->c.timeout_ms = PORT_FWD_CONNECT_MS;
	f->guest_port = guest_port;
	f->created_ms = wall_ms();
	atomic_init(&f->refs, 2); /* the owner and the listener */
	f->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	f->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (f->stop_fd < 0 || f->listen_fd < 0) {
		api_err_set(e, API_E_INTERNAL, "port mapping: socket: %s", strerror(errno));
		goto fail;
	}
	/* A mapping just removed leaves TIME_WAIT connections on its port:
	 * SO_REUSEADDR lets a new mapping take it at once. It does not let
	 * two listeners share a port. */
	setsockopt(f->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(f->listen_fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		err = errno;
		if (err == EADDRINUSE)
			api_err_set(e, API_E_EXISTS, "host port %u on 127.0.0.1 is in use; pick another or pass 0 for any",
				    (unsigned)host_port);
		else if (err == EACCES)
			api_err_set(e, API_E_PERMISSION_DENIED,
				    "host port %u is privileged; kilnd may not bind it (use a port above 1023)",
				    (unsigned)host_port);
		else
			api_err_set(e, API_E_INTERNAL, "port mapping: bind 127.0.0.1:%u: %s", (unsigned)host_port,
				    strerror(err));
		goto fail;
	}
	if (listen(f->listen_fd, 64) < 0 || getsockname(f->listen_fd, (struct sockaddr *)&a, &alen) < 0) {
		api_err_set(e, API_E_INTERNAL, "port mapping: listen: %s", strerror(errno));
		goto fail;
	}
	f->host_port = ntohs(a.sin_port);
	err = pthread_create(&f->listener, NULL, listener_main, f);
	if (err) {
		api_err_set(e, API_E_INTERNAL, "port mapping: cannot start a thread: %s", strerror(err));
		goto fail;
	}
	*out = f;
	return 0;
fail:
	if (f->listen_fd >= 0)
		close(f->listen_fd);
	if (f->stop_fd >= 0)
		close(f->stop_fd);
	free(f);
	return -1;
}

uint16_t port_fwd_host_port(const struct port_fwd *f)
{
	return f->host_port;
}

json_t *port_fwd_view(const struct port_fwd *f)
{
	char created[40];

	format_time_ms(f->created_ms, created, sizeof(created));
	return json_pack("{s:s,s:i,s:I,s:i,s:I,s:I,s:s}", "host_address", "127.0.0.1", "host_port", (int)f->host_port,
			 "guest_port", (json_int_t)f->guest_port, "connections", (int)atomic_load(&f->active),
			 "connections_total", (json_int_t)atomic_load(&f->total), "refused",
			 (json_int_t)atomic_load(&f->refused), "created_at", created);
}

void port_fwd_close(struct port_fwd *f)
{
	uint64_t one = 1;

	if (!f)
		return;
	if (write(f->stop_fd, &one, sizeof(one)) < 0)
		kilnd_log("port %u: cannot signal its threads: %s", (unsigned)f->host_port, strerror(errno));
	pthread_join(f->listener, NULL);
	fwd_put(f); /* the listener's reference */
	fwd_put(f); /* the owner's */
}
