#include "guest-init/agent/agent.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <linux/vm_sockets.h>

#include "guest-init/agent/agent_conn.h"
#include "guest-init/agent/agent_files.h"
#include "guest-init/agent/agent_serve.h"
#include "guest-init/agent/agent_tcp.h"

/* Rings from this size up are fresh mappings, committed only as written. */
#define AGENT_MMAP_THRESHOLD (128 << 10)

int agent_create(struct reaper *r, struct shutdown *s, const struct milestone *ms,
		 struct agent **out)
{
	struct agent *a;
	struct rlimit rl;
	int fd, e;

	*out = NULL;
	/* A pipe created while 0..2 are free would take one of them, and the
	 * child's dup2(fd, fd) would keep close-on-exec on it. */
	while ((fd = open("/dev/null", O_RDWR)) >= 0 && fd < 3)
		;
	if (fd >= 3)
		close(fd);
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->reaper = r;
	a->shutdown = s;
	a->ms = ms;
	a->resolv_conf = "/etc/resolv.conf";
	a->trust_root = "";
	a->listen_fd = -1;
	a->null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (a->null_fd < 0) {
		e = -errno;
		free(a);
		return e;
	}
	/* The protocol says writes to a gone host are errors, not signals
	 * (agent_conn sends with MSG_NOSIGNAL; stdin pipes need this). */
	signal(SIGPIPE, SIG_IGN);
	/* Pinning the threshold also stops glibc from raising it after a
	 * large free, which would move later rings onto the heap. */
	mallopt(M_MMAP_THRESHOLD, AGENT_MMAP_THRESHOLD);
	/* 128 connections with their processes' pipes need more than PID 1's
	 * default 1024 descriptors; children get the default back. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		a->child_nofile = rl;
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	} else {
		a->child_nofile.rlim_cur = a->child_nofile.rlim_max = 1024;
	}
	pthread_attr_init(&a->thread_attr);
	pthread_attr_setdetachstate(&a->thread_attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&a->thread_attr, AGENT_THREAD_STACK);
	pthread_mutex_init(&a->conn_lock, NULL);
	pthread_mutex_init(&a->trust_lock, NULL);
	agent_procs_init(&a->procs, r, &a->child_nofile, a->null_fd, &a->thread_attr);
	agent_ctrs_init(&a->ctrs, r, &a->child_nofile);
	*out = a;
	return 0;
}

/* ---- replies shared by the handlers ---- */

int agent_reply_error(struct agent_conn *c, enum agent_code code, const char *fmt, ...)
{
	struct agent_err err;
	va_list ap;

	err.code = code;
	va_start(ap, fmt);
	vsnprintf(err.msg, sizeof(err.msg), fmt, ap);
	va_end(ap);
	return agent_conn_send_err(c, &err);
}

int agent_reply_ok(struct agent_conn *c)
{
	struct agent_line l;

	return agent_conn_send_line(c, &l, agent_line_ok(&l, NULL, 0));
}

/* ---- connections ---- */

/* One of `max` slots of a kind of long-lived connection (bridges,
 * watches), so they can never take the slots exec, files and ping need.
 * false when all are taken. */
static bool slot_take(struct agent *a, unsigned *count, unsigned max)
{
	bool ok;

	pthread_mutex_lock(&a->conn_lock);
	ok = *count < max;
	if (ok)
		(*count)++;
	pthread_mutex_unlock(&a->conn_lock);
	return ok;
}

static void slot_put(struct agent *a, unsigned *count)
{
	pthread_mutex_lock(&a->conn_lock);
	(*count)--;
	pthread_mutex_unlock(&a->conn_lock);
}

/* tcp_connect within AGENT_MAX_BRIDGES: the bridge holds its slot while it runs. */
static void serve_tcp(struct agent *a, struct agent_conn *c, struct agent_msg *m)
{
	if (!slot_take(a, &a->bridges, AGENT_MAX_BRIDGES)) {
		agent_reply_error(
			c, AGENT_E_BUSY,
			"tcp_connect: %d bridges are open, the most the agent runs at once (its other connections stay free for exec and files); retry when one has ended",
			AGENT_MAX_BRIDGES);
		return;
	}
	agent_tcp_serve(c, m);
	slot_put(a, &a->bridges);
}

/* watch within AGENT_MAX_WATCH_STREAMS: a stream holds its slot while it runs. */
static void serve_watch(struct agent *a, struct agent_conn *c, struct agent_msg *m)
{
	if (!slot_take(a, &a->watches, AGENT_MAX_WATCH_STREAMS)) {
		agent_reply_error(
			c, AGENT_E_BUSY,
			"watch: %d watches are open, the most the agent runs at once; end one first",
			AGENT_MAX_WATCH_STREAMS);
		return;
	}
	agent_serve_watch(a, c, m);
	slot_put(a, &a->watches);
}

typedef void serve_fn(struct agent *a, struct agent_conn *c, struct agent_msg *m);

/* The handler of each request; the file messages are served together
 * (agent_type_is_file: api/proto's message table says which they are). */
static serve_fn *const serve[AGENT_TYPE_COUNT] = {
	[AGENT_T_PING] = agent_serve_ping,
	[AGENT_T_INFO] = agent_serve_info,
	[AGENT_T_EXEC] = agent_serve_exec,
	[AGENT_T_RUN] = agent_serve_run,
	[AGENT_T_SPAWN] = agent_serve_spawn,
	[AGENT_T_ATTACH] = agent_serve_attach,
	[AGENT_T_STDIN] = agent_serve_stdin,
	[AGENT_T_SIGNAL] = agent_serve_signal,
	[AGENT_T_RESIZE] = agent_serve_resize,
	[AGENT_T_WAIT] = agent_serve_wait,
	[AGENT_T_LIST_PROCESSES] = agent_serve_list_processes,
	[AGENT_T_CONFIGURE] = agent_serve_configure,
	[AGENT_T_SYNC_CLOCK] = agent_serve_sync_clock,
	[AGENT_T_SHUTDOWN] = agent_serve_shutdown,
	[AGENT_T_TCP_CONNECT] = serve_tcp,
	[AGENT_T_WATCH] = serve_watch,
	[AGENT_T_CTR_CREATE] = agent_ctr_create,
	[AGENT_T_CTR_STDIO] = agent_ctr_stdio,
	[AGENT_T_CTR_START] = agent_ctr_start,
	[AGENT_T_CTR_WAIT] = agent_ctr_wait,
	[AGENT_T_CTR_SIGNAL] = agent_ctr_signal,
	[AGENT_T_CTR_RESIZE] = agent_ctr_resize,
	[AGENT_T_CTR_UPDATE] = agent_ctr_update,
	[AGENT_T_CTR_DELETE] = agent_ctr_delete,
	[AGENT_T_CTR_EXEC] = agent_ctr_exec,
};

static void dispatch(struct agent *a, struct agent_conn *c, struct agent_msg *m)
{
	if (agent_type_is_file(m->type))
		agent_files_serve(c, m);
	else if ((unsigned)m->type < AGENT_TYPE_COUNT && serve[m->type])
		serve[m->type](a, c, m);
	else /* data / end: agent_msg_parse refuses them as requests. */
		agent_reply_error(c, AGENT_E_UNEXPECTED_TYPE, "'%s' is not valid as a request",
				  agent_type_name(m->type));
}

struct conn_job {
	struct agent *a;
	int fd;
};

static void *conn_main(void *arg)
{
	struct conn_job *j = arg;
	struct agent *a = j->a;
	struct agent_conn *c = malloc(sizeof(*c));
	struct agent_msg m;
	struct agent_err err;

	if (!c) {
		close(j->fd);
	} else {
		agent_conn_init(c, j->fd);
		agent_conn_deadline(c, mono_ms() + AGENT_REQUEST_TIMEOUT_MS);
		switch (agent_conn_next(c, AGENT_CTX_REQUEST, &m, &err)) {
		case 0:
			dispatch(a, c, &m);
			agent_msg_free(&m);
			break;
		case 1:
			break; /* closed without a request */
		default:
			agent_conn_send_err(c, &err);
			break;
		}
		agent_conn_close(c);
		free(c);
	}
	free(j);
	pthread_mutex_lock(&a->conn_lock);
	a->conns--;
	pthread_mutex_unlock(&a->conn_lock);
	return NULL;
}

/* Answer `busy` on a connection that gets no thread, then close it. */
static void conn_refuse(int fd, const char *why)
{
	struct timeval tv = { .tv_sec = 1 };
	struct agent_line l;

	/* The accept thread must not hang on a host that does not read. */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (agent_line_error(&l, AGENT_E_BUSY, "%s", why) == 0) {
		ssize_t r = send(fd, l.data, l.len, MSG_NOSIGNAL);

		(void)r; /* best effort: the connection closes either way */
		agent_line_free(&l);
	}
	close(fd);
}

void agent_accepted(struct agent *a, int fd)
{
	struct conn_job *j;
	pthread_t th;

	pthread_mutex_lock(&a->conn_lock);
	if (a->conns >= AGENT_MAX_CONNS) {
		pthread_mutex_unlock(&a->conn_lock);
		conn_refuse(
			fd,
			"the agent serves at most 128 connections at once; retry when one has finished");
		return;
	}
	a->conns++;
	pthread_mutex_unlock(&a->conn_lock);
	j = malloc(sizeof(*j));
	if (j) {
		j->a = a;
		j->fd = fd;
		if (pthread_create(&th, &a->thread_attr, conn_main, j) == 0)
			return;
		free(j);
	}
	pthread_mutex_lock(&a->conn_lock);
	a->conns--;
	pthread_mutex_unlock(&a->conn_lock);
	conn_refuse(fd,
		    "the agent cannot start a thread for this connection (out of memory); retry later");
}

static void *accept_main(void *arg)
{
	struct agent *a = arg;

	for (;;) {
		struct sockaddr_vm peer;
		socklen_t plen = sizeof(peer);
		int fd = accept4(a->listen_fd, (struct sockaddr *)&peer, &plen, SOCK_CLOEXEC);

		if (fd >= 0) {
			/* A guest process over vsock loopback is not the host:
			 * closed unanswered, and it takes no connection slot. */
			if (!agent_peer_is_host((struct sockaddr *)&peer, plen))
				close(fd);
			else
				agent_accepted(a, fd);
			continue;
		}
		/* Out of descriptors or memory: the connection waits in the
		 * backlog; do not spin on it. */
		if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS)
			usleep(10000);
	}
	return NULL;
}

/*
 * The receive credit each connection grants the host: Linux's default is
 * 256 KiB, handed back after 192 KiB are read, so a bulk upload costs
 * four credit round trips (a tx kick, an interrupt and its acknowledgement
 * each way) per MiB. 1 MiB makes it one. Accepted connections inherit it
 * from the listener; it is memory only while the host sends faster than
 * the agent reads. A kernel that refuses keeps its default.
 */
#define AGENT_VSOCK_BUF (1ull << 20)

static void vsock_buffer(int fd, unsigned long long bytes)
{
	(void)!setsockopt(fd, AF_VSOCK, SO_VM_SOCKETS_BUFFER_MAX_SIZE, &bytes, sizeof(bytes));
	(void)!setsockopt(fd, AF_VSOCK, SO_VM_SOCKETS_BUFFER_SIZE, &bytes, sizeof(bytes));
}

int agent_listen(struct agent *a)
{
	struct sockaddr_vm sa = {
		.svm_family = AF_VSOCK,
		.svm_port = AGENT_PORT,
		.svm_cid = VMADDR_CID_ANY,
	};
	pthread_t th;
	int fd, e;

	fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	vsock_buffer(fd, AGENT_VSOCK_BUF);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, AGENT_MAX_CONNS) < 0) {
		e = -errno;
		close(fd);
		return e;
	}
	a->listen_fd = fd;
	milestone_mark(a->ms, MS_AGENT_READY);
	e = pthread_create(&th, &a->thread_attr, accept_main, a);
	return -e;
}

int agent_start(struct reaper *r, struct shutdown *s, const struct milestone *ms,
		struct agent **out)
{
	int e = agent_create(r, s, ms, out);

	if (e < 0)
		return e;
	return agent_listen(*out);
}
