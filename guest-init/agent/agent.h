/*
 * agent: kiln-init's guest agent server (docs/agent-protocol.md is the
 * contract; docs/architecture.md has the picture).
 *
 * Threads:
 *  - the accept thread takes connections on AF_VSOCK port 1024 and starts
 *    one detached thread per connection, at most AGENT_MAX_CONNS at once
 *    (one more is answered `busy` and closed);
 *  - a connection thread reads the one request (within
 *    AGENT_REQUEST_TIMEOUT_MS), serves it, and closes; `exec` runs its
 *    process's I/O in that thread, `spawn`/`attach` turn it into the
 *    attached stream;
 *  - each spawned process has a pump thread that reads its output into its
 *    ring (agent_proc.c), so a slow or absent reader never blocks it;
 *  - the reaper (reaper.c, started by init.c) is the only waiter for
 *    children and hands exits to the process table.
 *
 * Everything hangs off one struct agent made by agent_create(); nothing is
 * global. The file operations are served by agent_files_serve()
 * (agent_files.h), the TCP bridge by agent_tcp_serve() (agent_tcp.h).
 * Each request handler replies on the connection it is given; the
 * connection thread closes the connection and frees the request
 * afterwards.
 */
#ifndef KILN_AGENT_H
#define KILN_AGENT_H

#include <pthread.h>
#include <sys/resource.h>

#include "guest-init/agent/agent_ctr.h"
#include "guest-init/agent/agent_proc.h"
#include "guest-init/sys/milestone.h"
#include "guest-init/sys/reaper.h"
#include "guest-init/sys/shutdown.h"

/*
 * Stack of every agent thread. jansson parses recursively and a header may
 * nest 2048 levels (agent_proto.h); the pump keeps a 64 KiB chunk buffer on
 * its stack. Only touched pages cost memory.
 */
#define AGENT_THREAD_STACK (2u << 20)

struct agent {
	struct reaper *reaper;
	struct shutdown *shutdown;
	const struct milestone *ms;
	const char *resolv_conf;    /* where configure writes DNS servers */
	const char *trust_root;     /* beneath which configure installs trust_ca ("") */
	pthread_mutex_t trust_lock; /* one configure at a time (trust_ca.h) */
	struct agent_procs procs;
	struct agent_ctrs ctrs;     /* containers (agent_ctr.h) */
	pthread_attr_t thread_attr; /* detached, AGENT_THREAD_STACK */
	pthread_mutex_t conn_lock;
	unsigned conns;   /* open connections, under conn_lock */
	unsigned bridges; /* of which tcp_connect bridges, under conn_lock */
	unsigned watches; /* of which watch streams, under conn_lock */
	int listen_fd;
	int null_fd;                /* /dev/null, O_RDWR */
	struct rlimit child_nofile; /* the open-file limit children get back */
};

/*
 * Set up the agent's state: /dev/null, fds 0..2 guaranteed open (so no
 * pipe lands there and gets dup2()'d onto itself in a child), SIGPIPE
 * ignored, the open-file limit raised to its hard limit for connections,
 * glibc's mmap threshold pinned (agent_ring.h). 0 or -errno.
 */
int agent_create(struct reaper *r, struct shutdown *s, const struct milestone *ms,
		 struct agent **out);

/*
 * Listen on AF_VSOCK port AGENT_PORT (any CID), mark `agent_ready` and
 * start the accept thread. 0 or -errno.
 */
int agent_listen(struct agent *a);

/* agent_create() and agent_listen(): what init.c calls. */
int agent_start(struct reaper *r, struct shutdown *s, const struct milestone *ms,
		struct agent **out);

/*
 * Serve an accepted connection (fd is taken over) on its own thread, or
 * answer `busy` and close it when AGENT_MAX_CONNS are open. The accept
 * thread calls this; tests call it with any stream socket.
 */
void agent_accepted(struct agent *a, int fd);

#endif
