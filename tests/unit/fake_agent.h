/*
 * fake_agent: kiln-vmm's side of the hybrid vsock socket (fake_vmm.h) and
 * the agent's connection thread, for tests of the host library against
 * the agent's real handlers: `nconn` connections accepted one after the
 * other, each request read by the real parser and given to `serve`.
 * Include after cmocka.h.
 */
#ifndef KILN_TEST_FAKE_AGENT_H
#define KILN_TEST_FAKE_AGENT_H

#include <pthread.h>

#include "guest-init/agent/agent_conn.h"
#include "lib/base/mono.h"
#include "fake_vmm.h"

struct fake_agent {
	struct fake_vmm v;
	int nconn;
	void (*serve)(struct agent_conn *c, struct agent_msg *m);
	pthread_t th;
};

static inline void *fake_agent_main(void *arg)
{
	struct fake_agent *f = arg;

	for (int i = 0; i < f->nconn; i++) {
		struct agent_conn *c = malloc(sizeof(*c));
		struct agent_msg m;
		struct agent_err err;
		int fd = fake_vmm_accept(&f->v);

		if (fd < 0 || !c) {
			if (fd >= 0)
				close(fd);
			free(c);
			return NULL;
		}
		agent_conn_init(c, fd);
		agent_conn_deadline(c, mono_ms() + 5000);
		if (agent_conn_next(c, AGENT_CTX_REQUEST, &m, &err) == 0) {
			f->serve(c, &m);
			agent_msg_free(&m);
		} else {
			agent_conn_send_err(c, &err);
		}
		agent_conn_close(c);
		free(c);
	}
	return NULL;
}

/* Listen (f->v.path is the vsock path to give the client) and serve. */
static inline void fake_agent_start(struct fake_agent *f, int nconn,
				    void (*serve)(struct agent_conn *c, struct agent_msg *m))
{
	memset(f, 0, sizeof(*f));
	f->nconn = nconn;
	f->serve = serve;
	fake_vmm_listen(&f->v);
	assert_int_equal(pthread_create(&f->th, NULL, fake_agent_main, f), 0);
}

/* Join once all nconn connections were served. */
static inline void fake_agent_stop(struct fake_agent *f)
{
	assert_int_equal(pthread_join(f->th, NULL), 0);
	fake_vmm_close(&f->v);
}

#endif
