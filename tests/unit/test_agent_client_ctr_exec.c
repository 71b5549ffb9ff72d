/*
 * agent_client_ctr_exec and ctr_start of an exec against a fake agent
 * (fake_agent.h: kiln-vmm's handshake and the agent's own parser): what
 * the host sends is the request the agent reads (cid, its exec number,
 * the process object whole), a process the agent would refuse is refused
 * before anything is sent, the agent's error comes back as its own, and a
 * reply naming another exec is a protocol failure, not a pid.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/agent-client/agent_client.h"
#include "guest-init/agent/agent_serve.h"
#include "fake_agent.h"

/* ctr_exec 1: created as pid 240; 2: a reply naming exec 3; 3: refused
 * as a stopped container. ctr_start: ok for exec 5 alone. */
static void serve(struct agent_conn *c, struct agent_msg *m)
{
	const struct agent_ctr_exec *x = &m->u.ctr_exec;
	struct agent_line l;

	if (m->type == AGENT_T_CTR_START) {
		if (strcmp(m->u.ctr.cid, "c1") == 0 && m->u.ctr.exec == 5)
			agent_reply_ok(c);
		else
			agent_reply_error(c, AGENT_E_NOT_FOUND, "no exec %u", m->u.ctr.exec);
		return;
	}
	assert_int_equal(m->type, AGENT_T_CTR_EXEC);
	assert_string_equal(x->cid, "c1");
	assert_int_equal(x->proc.argc, 3);
	assert_string_equal(x->proc.args[2], "echo $$");
	assert_string_equal(x->proc.env[0], "PATH=/bin");
	assert_int_equal(x->proc.uid, 1000);
	assert_true(x->proc.terminal && x->proc.rows == 7);
	if (x->exec == 1)
		agent_conn_send_line(c, &l, agent_line_ctr_created(&l, "c1", 1, 240));
	else if (x->exec == 2)
		agent_conn_send_line(c, &l, agent_line_ctr_created(&l, "c1", 3, 241));
	else
		agent_reply_error(c, AGENT_E_INVALID_STATE,
				  "ctr_exec: container \"c1\" is not running (its init ended)");
}

static void test_exec(void **state)
{
	struct fake_agent f;
	struct agent_client ac;
	struct agent_client_err err;
	json_t *proc = json_pack("{s:[s,s,s],s:[s],s:i,s:b,s:i,s:i}", "args", "sh", "-c", "echo $$",
				 "env", "PATH=/bin", "uid", 1000, "terminal", 1, "rows", 7, "cols",
				 9);
	json_t *bad = json_pack("{s:[]}", "args");
	int pid = -1;

	(void)state;
	fake_agent_start(&f, 4, serve);
	assert_int_equal(agent_client_init(&ac, f.v.path), 0);
	assert_int_equal(agent_client_ctr_exec(&ac, "c1", 1, proc, &pid, &err), 0);
	assert_int_equal(pid, 240);
	assert_int_equal(agent_client_ctr_exec(&ac, "c1", 2, proc, &pid, &err), -EPROTO);
	assert_int_equal(err.fail, AGENT_FAIL_PROTOCOL);
	assert_non_null(strstr(err.msg, "exec 3, not 2"));
	assert_int_equal(agent_client_ctr_exec(&ac, "c1", 3, proc, &pid, &err), -EREMOTEIO);
	assert_int_equal(err.fail, AGENT_FAIL_AGENT);
	assert_int_equal(err.code, AGENT_E_INVALID_STATE);
	assert_non_null(strstr(err.msg, "its init ended"));
	/* Refused here, as the agent would: nothing is sent for these. */
	assert_int_equal(agent_client_ctr_exec(&ac, "c1", 4, bad, &pid, &err), -EINVAL);
	assert_true(err.fail == AGENT_FAIL_REQUEST && err.code == AGENT_E_BAD_FIELD);
	assert_int_equal(agent_client_ctr_exec(&ac, "c1", 0, proc, &pid, &err), -EINVAL);
	assert_true(err.fail == AGENT_FAIL_REQUEST && strstr(err.msg, "'exec'"));
	assert_int_equal(agent_client_ctr_exec(&ac, "c1", 4, NULL, &pid, &err), -EINVAL);
	assert_true(err.fail == AGENT_FAIL_REQUEST && strstr(err.msg, "'process'"));
	assert_int_equal(agent_client_ctr_exec(&ac, "../x", 4, proc, &pid, &err), -EINVAL);
	assert_true(err.fail == AGENT_FAIL_REQUEST && strstr(err.msg, "'cid'"));
	/* ctr_start names the exec it starts. */
	assert_int_equal(agent_client_ctr_start(&ac, "c1", 5, &err), 0);
	fake_agent_stop(&f);
	json_decref(proc);
	json_decref(bad);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exec),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
