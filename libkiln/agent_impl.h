/*
 * agent_impl: the layout behind kiln_agent (never installed), shared by
 * agent.c (processes, files' contents, tar) and agent_fs.c (metadata,
 * ports, watches).
 */
#ifndef KILN_LIB_AGENT_IMPL_H
#define KILN_LIB_AGENT_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include <kiln/agent.h>

#include "api/agent-client/agent_client.h"

/* The last failure of a handle, as its errmsg, errcode and errkind say. */
struct lk_err {
	char msg[ERR_MSG_MAX];
	char code[32];
	enum kiln_agent_fail kind;
};

struct kiln_agent {
	struct agent_client c;
	pthread_mutex_t lk; /* guards err: requests run concurrently */
	struct lk_err err;
};

/* A failed agent_client call's r and e into *le; returns the errno the
 * embedder sees (an agent's error code as its errno). */
int lk_err_note(struct lk_err *le, int r, const struct agent_client_err *e);
/* The same keeping r (a stream's -ETIMEDOUT must stay "nothing came"). */
int lk_err_set(struct lk_err *le, int r, const struct agent_client_err *e);

struct kiln_proc {
	struct agent_client_stream *s;
	uint32_t id;
	struct agent_client_attached info; /* what the spawn or attach found */
	uint64_t seq;                      /* the next output byte's offset */
	uint64_t lost;                     /* gap bytes not yet reported */
	bool exited;                       /* the exit event was delivered */
	struct lk_err err;
};

/* A kiln_proc over stream s (closed on failure). 0 or -ENOMEM. */
int agent_new_proc(kiln_agent *a, struct agent_client_stream *s,
		   const struct agent_client_attached *info, kiln_proc **out);

/* x as the caller's st (as far as st->size reaches); NULL st is fine. */
void agent_put_exit(struct kiln_exit_status *st, const struct agent_client_exit *x,
		    uint64_t host_us);

/* A field of a caller's sized struct its size covers. */
#define OPT_HAS(o, field) ((o)->size >= offsetof(__typeof__(*(o)), field) + sizeof((o)->field))

/* lk_err_note on a's own, under its lock. */
int agent_fail(kiln_agent *a, int r, const struct agent_client_err *e);

/* KILN_AGENT_AS_ROOT, or the guest's unprivileged user. */
static inline enum agent_user agent_user_of(unsigned flags)
{
	return (flags & KILN_AGENT_AS_ROOT) ? AGENT_USER_ROOT : AGENT_USER_USER;
}

/* A caller's struct whose size field is below what it must hold: -EINVAL. */
int agent_too_small(kiln_agent *a, const char *what);

#endif
