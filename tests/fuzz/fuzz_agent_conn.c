/*
 * fuzz_agent_conn: the guest agent's side of a connection
 * (guest-init/agent/agent_conn.c over api/proto/agent_proto.c): the bytes
 * the host sends arrive on a socket, and the agent reads requests, their
 * payloads and follow-up messages as its serve loop does (write and
 * tar_upload go on with data/end, spawn and attach with stdin, signal,
 * resize), answering each refusal with an error line.
 *
 * Input: the byte stream from the host.
 * Invariants: agent_conn_next returns a message, a clean end or an error
 * with a code; a message's payload reads back exactly `len` bytes unless
 * the stream was cut (then `truncated`); every error the agent sends is
 * one well-formed protocol line {"type":"error","code":...}.
 */
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include "guest-init/agent/agent_conn.h"
#include "lib/base/mono.h"
#include "fuzz.h"

static struct agent_conn c;

/* What the agent sent back: whole lines, each an error object. */
static void check_replies(int peer)
{
	static char buf[1 << 16];
	ssize_t n = read(peer, buf, sizeof(buf));
	char *p = buf, *end;

	if (n <= 0)
		return;
	end = buf + n;
	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		json_t *j = NULL;
		uint64_t len;
		struct agent_err err;

		FUZZ_ASSERT(nl);
		FUZZ_ASSERT(agent_header_decode(p, (size_t)(nl - p), &j, &len, &err) == AGENT_OK);
		FUZZ_ASSERT(!strcmp(json_string_value(json_object_get(j, "type")), "error"));
		FUZZ_ASSERT(json_is_string(json_object_get(j, "code")));
		json_decref(j);
		p = nl + 1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t payload[4096];
	int sv[2];
	enum agent_ctx ctx = AGENT_CTX_REQUEST;

	if (size > 100000)
		return 0;
	FUZZ_ASSERT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	{
		int big = 1 << 20;

		setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
		setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	}
	FUZZ_ASSERT(write(sv[1], data, size) == (ssize_t)size);
	shutdown(sv[1], SHUT_WR);
	agent_conn_init(&c, sv[0]);
	agent_conn_deadline(&c, mono_ms() + 10000);

	for (int round = 0; round < 256; round++) {
		struct agent_msg msg;
		struct agent_err err = { 0 };
		int r = agent_conn_next(&c, ctx, &msg, &err);
		uint64_t got = 0;
		ssize_t k;

		if (r == 1)
			break;
		if (r < 0) {
			FUZZ_ASSERT(r == -1 && err.code != AGENT_OK && agent_code_name(err.code));
			FUZZ_ASSERT(agent_conn_send_err(&c, &err) == 0);
			break;
		}
		FUZZ_ASSERT(r == 0 && agent_type_name(msg.type));
		while ((k = agent_conn_payload(&c, payload, sizeof(payload), &err)) > 0)
			got += (uint64_t)k;
		if (k < 0) {
			FUZZ_ASSERT(err.code == AGENT_E_TRUNCATED && got < msg.len);
			agent_msg_free(&msg);
			break;
		}
		FUZZ_ASSERT(got == msg.len);
		/* What follows, as the serve loop reads it. */
		switch (msg.type) {
		case AGENT_T_WRITE:
		case AGENT_T_TAR_UPLOAD:
			ctx = AGENT_CTX_UPLOAD;
			break;
		case AGENT_T_SPAWN:
		case AGENT_T_ATTACH:
			ctx = AGENT_CTX_ATTACHED;
			break;
		case AGENT_T_END:
			ctx = AGENT_CTX_REQUEST;
			break;
		default:
			break;
		}
		agent_msg_free(&msg);
	}
	agent_conn_close(&c);
	check_replies(sv[1]);
	close(sv[1]);
	return 0;
}
