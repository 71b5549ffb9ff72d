/*
 * agent_impl: the layout behind kiln_agent (never installed), shared by
 * agent.c (processes, files' contents, tar) and agent_fs.c (metadata,
 * ports, watches).
 */
#ifndef KILN_LIB_AGENT_IMPL_H
#define KILN_LIB_AGENT_IMPL_H

#include <pthread.h>

#include <kiln/agent.h>

#include "api/agent-client/agent_client.h"

struct kiln_agent {
	struct agent_client c;
	pthread_mutex_t lk; /* guards err and code: requests run concurrently */
	char err[ERR_MSG_MAX];
	char code[32];
};

/* A failed agent_client call's r and e on a's message and code; returns
 * the errno the embedder sees (an agent's error code as its errno). */
int agent_fail(kiln_agent *a, int r, const struct agent_client_err *e);

#endif
