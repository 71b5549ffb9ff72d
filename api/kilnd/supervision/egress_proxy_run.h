/*
 * egress_proxy_run: the runner behind egress_proxy.h. One thread of kilnd
 * forks each sandbox's kiln-egress confined (egress_proxy.h says how),
 * watches it through a pidfd, starts it again after a backoff when it
 * ends while wanted, and copies its output into <sandbox>/egress.log
 * (capped_log). Forking from that one long-lived thread is what makes
 * each proxy's parent-death signal mean "kilnd ended", not "a request's
 * thread ended".
 *
 * Contract: entries by sandbox id, at most one each; every call may wait
 * for the runner (a start, a reap) but never takes the registry's lock,
 * so callers may hold it. egress_proxies_new/free (egress_proxy.h) make
 * and end it.
 */
#ifndef KILN_EGRESS_PROXY_RUN_H
#define KILN_EGRESS_PROXY_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kilnd;

struct egress_run_spec {
	const char *id;   /* the sandbox's */
	const char *dir;  /* its directory: egress/ and egress.log in it */
	const char *sock; /* vm/egress.sock, unlinked when the entry ends */
	uint32_t uid;     /* the proxy's uid = gid; 0: kilnd's own (--no-jail) */
	int listen_fd;    /* the bound, listening socket: taken (closed when the entry ends) */
};

/* Start a proxy for s (none may run for s->id): 0 once it runs, or -1
 * with why (nothing left: the descriptor closed, the socket unlinked). */
int egress_run_start(struct kilnd *d, const struct egress_run_spec *s, char *why, size_t cap);
/* Whether an entry for id exists (running, or waiting to start again). */
bool egress_run_has(struct kilnd *d, const char *id);
/* Send sig (0: none) to id's proxy if it runs; whether an entry exists. */
bool egress_run_signal(struct kilnd *d, const char *id, int sig);
/*
 * The decision stream (docs/api.md, "The egress decision stream"): a
 * copy of kilnd's end of the socket pair id's running proxy reads as
 * --policy-fd, for the one client that may hold it. 0 with *fd (the
 * caller's to close; end of file on it: that proxy ended), -ENOENT (no
 * proxy for id), -EAGAIN (it is to be started again: its backoff) or
 * -EBUSY (a client holds it). Detach lets the next one in.
 */
int egress_run_policy_attach(struct kilnd *d, const char *id, int *fd);
void egress_run_policy_detach(struct kilnd *d, const char *id);
/* End id's entry: its proxy killed and reaped, the socket unlinked, its
 * cgroup removed, the log closed. Whether there was one. */
bool egress_run_end(struct kilnd *d, const char *id);

#endif
