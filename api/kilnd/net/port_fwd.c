/* 127.0.0.1 → guest TCP or vsock port forwarding; see port_fwd.h. */
#include "api/kilnd/net/port_fwd.h"

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

#include <kiln/agent.h>

#include "api/kilnd/core/kilnd.h"
#include "api/kilnd/registry/sandbox_record.h"
#include "lib/base/accept_loop.h"
#include "lib/base/sock_relay.h"

struct port_fwd {
	atomic_int refs; /* the owner, the listener, each relay */
	int listen_fd;
	int stop_fd; /* eventfd: written once by close, never read, so it stays readable for all */
	pthread_t listener;
	/* The guest's agent (libkiln): tcp through its tcp_connect, vsock
	 * straight to the port (no agent request). Shared by the relays:
	 * its errmsg is any relay's last failure, so none reads it (a
	 * failed connect only counts as unreachable). */
	kiln_agent *agent;
	uint16_t host_port;
	uint32_t guest_port;
	enum port_target target;
	char guest_address[16]; /* tcp: "127.0.0.1" or "::1" */
	int64_t created_ms;
	atomic_uint active;
	atomic_ullong total, refused, unreachable;
};

static void fwd_put(struct port_fwd *f)
{
	if (atomic_fetch_sub(&f->refs, 1) != 1)
		return;
	close(f->stop_fd);
	kiln_agent_free(f->agent);
	free(f);
}

/* ---- one connection ---- */

struct relay {
	struct port_fwd *f;
	int tcp;
};

/* The guest end of one connection: a stream socket, or -1. */
static int guest_open(struct port_fwd *f)
{
	int fd = -1;

	if (f->target == PORT_TARGET_TCP)
		kiln_agent_tcp_connect(f->agent, f->guest_port, f->guest_address, &fd);
	else
		kiln_agent_vsock_connect(f->agent, f->guest_port, &fd);
	return fd;
}

static void relay_run(struct port_fwd *f, int tcp, int guest)
{
	struct sock_relay r = { .fd = { tcp, guest },
				.stop_fd = f->stop_fd,
				.half_idle_ms = PORT_FWD_HALF_IDLE_MS };
	int err;

	r.dir[0].buf = malloc(PORT_FWD_BUF);
	r.dir[1].buf = malloc(PORT_FWD_BUF);
	r.dir[0].cap = r.dir[1].cap = PORT_FWD_BUF;
	if (r.dir[0].buf && r.dir[1].buf)
		sock_relay_run(&r, &err);
	free(r.dir[0].buf);
	free(r.dir[1].buf);
}

static void *relay_main(void *arg)
{
	struct relay *rl = arg;
	struct port_fwd *f = rl->f;
	int guest = guest_open(f);

	if (guest >= 0) {
		relay_run(f, rl->tcp, guest);
		close(guest);
	} else {
		/* Counted before the client sees its connection closed. */
		atomic_fetch_add(&f->unreachable, 1);
	}
	close(rl->tcp);
	free(rl);
	atomic_fetch_sub(&f->active, 1);
	fwd_put(f);
	return NULL;
}

/* ---- listener ---- */

/* 0, or the errno of a failed accept. */
static int accept_one(void *arg)
{
	struct port_fwd *f = arg;
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

	accept_loop(f->listen_fd, f->stop_fd, accept_one, f);
	/* The port is free once this returns (port_fwd_close joins). */
	close(f->listen_fd);
	f->listen_fd = -1;
	return NULL;
}

int port_fwd_open(const char *uds_path, const struct port_spec *spec, struct port_fwd **out,
		  struct api_err *e)
{
	uint16_t host_port = spec->host_port;
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(host_port),
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
	if (kiln_agent_new(uds_path, &f->agent)) {
		api_err_set(e, API_E_INTERNAL,
			    "port mapping: vsock socket path too long, or out of memory");
		goto fail;
	}
	if (spec->target == PORT_TARGET_TCP)
		snprintf(f->guest_address, sizeof(f->guest_address), "%s", spec->guest_address);
	kiln_agent_set_timeout(f->agent, PORT_FWD_CONNECT_MS);
	f->guest_port = spec->guest_port;
	f->target = spec->target;
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
			api_err_set(e, API_E_EXISTS,
				    "host port %u on 127.0.0.1 is in use; pick another or pass 0 for any",
				    (unsigned)host_port);
		else if (err == EACCES)
			api_err_set(e, API_E_PERMISSION_DENIED,
				    "host port %u is privileged; kilnd may not bind it (use a port above 1023)",
				    (unsigned)host_port);
		else
			api_err_set(e, API_E_INTERNAL, "port mapping: bind 127.0.0.1:%u: %s",
				    (unsigned)host_port, strerror(err));
		goto fail;
	}
	if (listen(f->listen_fd, 64) < 0 ||
	    getsockname(f->listen_fd, (struct sockaddr *)&a, &alen) < 0) {
		api_err_set(e, API_E_INTERNAL, "port mapping: listen: %s", strerror(errno));
		goto fail;
	}
	f->host_port = ntohs(a.sin_port);
	err = pthread_create(&f->listener, NULL, listener_main, f);
	if (err) {
		api_err_set(e, API_E_INTERNAL, "port mapping: cannot start a thread: %s",
			    strerror(err));
		goto fail;
	}
	*out = f;
	return 0;
fail:
	if (f->listen_fd >= 0)
		close(f->listen_fd);
	if (f->stop_fd >= 0)
		close(f->stop_fd);
	kiln_agent_free(f->agent);
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
	json_t *o;

	format_time_ms(f->created_ms, created, sizeof(created));
	o = json_pack("{s:s,s:i,s:s}", "host_address", "127.0.0.1", "host_port", (int)f->host_port,
		      "target", port_target_name(f->target));
	if (!o)
		return NULL;
	if ((f->target == PORT_TARGET_TCP &&
	     json_object_set_new(o, "guest_address", json_string(f->guest_address))) ||
	    json_object_update_new(o,
				   json_pack("{s:I,s:i,s:I,s:I,s:I,s:s}", "guest_port",
					     (json_int_t)f->guest_port, "connections",
					     (int)atomic_load(&f->active), "connections_total",
					     (json_int_t)atomic_load(&f->total), "refused",
					     (json_int_t)atomic_load(&f->refused),
					     "guest_unreachable",
					     (json_int_t)atomic_load(&f->unreachable), "created_at",
					     created))) {
		json_decref(o);
		return NULL;
	}
	return o;
}

void port_fwd_close(struct port_fwd *f)
{
	uint64_t one = 1;

	if (!f)
		return;
	if (write(f->stop_fd, &one, sizeof(one)) < 0)
		kilnd_log("port %u: cannot signal its threads: %s", (unsigned)f->host_port,
			  strerror(errno));
	pthread_join(f->listener, NULL);
	fwd_put(f); /* the listener's reference */
	fwd_put(f); /* the owner's */
}
