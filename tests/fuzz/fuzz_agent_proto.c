/*
 * fuzz_agent_proto: the agent protocol codec (api/proto/agent_proto.c),
 * which both ends link: the framer fed a byte stream in any split, every
 * header decoded and parsed as a request in each context, and re-encoded.
 *
 * Input: split seed (1 byte), then the stream.
 * Invariants: the events do not depend on how the stream was split (fed
 * whole and fed in the seed's pieces give the same headers, the same
 * payload bytes, the same error); a header is a JSON object whose `len`
 * is within AGENT_LEN_MAX, followed by exactly `len` payload bytes, the
 * last slice flagged; a framer in error stays there; a parsed message
 * has a wire name, its header's len, argv NULL-terminated; an encoded
 * header (agent_line_json) decodes back to the same JSON.
 */
#include <errno.h>

#include "api/proto/agent_proto.h"
#include "fuzz.h"

struct trace {
	char buf[1 << 16];
	size_t n;
};

static void trace_add(struct trace *t, const void *p, size_t n)
{
	if (n > sizeof(t->buf) - t->n)
		n = sizeof(t->buf) - t->n;
	memcpy(t->buf + t->n, p, n);
	t->n += n;
}

static void check_msg(json_t *hdr, uint64_t len)
{
	for (int ctx = AGENT_CTX_REQUEST; ctx <= AGENT_CTX_ATTACHED; ctx++) {
		struct agent_msg msg;
		struct agent_err err = { 0 };
		enum agent_code c = agent_msg_parse(hdr, (enum agent_ctx)ctx, &msg, &err);

		if (c != AGENT_OK) {
			FUZZ_ASSERT(agent_code_name(c));
			FUZZ_ASSERT(memchr(err.msg, 0, sizeof(err.msg)));
			continue;
		}
		FUZZ_ASSERT(agent_type_name(msg.type));
		FUZZ_ASSERT(msg.len == len);
		if (msg.type == AGENT_T_EXEC || msg.type == AGENT_T_SPAWN) {
			FUZZ_ASSERT(msg.u.proc.argc >= 1 &&
				    msg.u.proc.argv[msg.u.proc.argc] == NULL);
			for (size_t i = 0; i < msg.u.proc.argc; i++)
				FUZZ_ASSERT(msg.u.proc.argv[i]);
		}
		agent_msg_free(&msg);
	}
}

static void check_reencode(json_t *hdr)
{
	struct agent_line l = { 0 };
	struct agent_err err = { 0 };
	json_t *back = NULL;
	uint64_t len;

	if (agent_line_json(&l, hdr) != 0)
		return; /* -E2BIG: a header that would not fit a line */
	FUZZ_ASSERT(l.len >= 1 && l.data[l.len - 1] == '\n' && l.len <= AGENT_HEADER_MAX);
	FUZZ_ASSERT(agent_header_decode(l.data, l.len - 1, &back, &len, &err) == AGENT_OK);
	FUZZ_ASSERT(json_equal(hdr, back));
	json_decref(back);
	agent_line_free(&l);
}

/* Feed `s` in pieces (sizes from `seed`; 0: whole), recording the events. */
static void run(const uint8_t *s, size_t n, uint8_t seed, struct trace *t, int check)
{
	struct agent_frame f;
	size_t off = 0;
	uint32_t rnd = seed;
	uint64_t want = 0, got = 0;
	int in_error = 0;

	agent_frame_init(&f);
	while (off < n) {
		size_t piece = n - off;

		if (seed) {
			rnd = rnd * 1103515245u + 12345u;
			piece = 1 + (rnd >> 16) % 64;
			if (piece > n - off)
				piece = n - off;
		}
		for (size_t done = 0; done < piece;) {
			struct agent_event ev;
			size_t used = agent_frame_feed(&f, s + off + done, piece - done, &ev);

			FUZZ_ASSERT(used <= piece - done);
			if (ev.kind == AGENT_EV_ERROR) {
				FUZZ_ASSERT(used == 0 && ev.err);
				trace_add(t, "E", 1);
				trace_add(t, agent_code_name(ev.err->code),
					  strlen(agent_code_name(ev.err->code)));
				in_error = 1;
				goto out;
			}
			FUZZ_ASSERT(!in_error);
			if (ev.kind == AGENT_EV_NEED_MORE) {
				FUZZ_ASSERT(used == piece - done);
				break;
			}
			if (ev.kind == AGENT_EV_HEADER) {
				char *dump = json_dumps(ev.header,
							JSON_SORT_KEYS | JSON_COMPACT |
								JSON_ENCODE_ANY);

				FUZZ_ASSERT(want == got); /* the previous payload was complete */
				FUZZ_ASSERT(json_is_object(ev.header) && ev.len <= AGENT_LEN_MAX);
				trace_add(t, "H", 1);
				trace_add(t, dump, strlen(dump));
				free(dump);
				want = ev.len;
				got = 0;
				if (check) {
					check_msg(ev.header, ev.len);
					check_reencode(ev.header);
				}
				json_decref(ev.header);
			} else {
				FUZZ_ASSERT(ev.kind == AGENT_EV_PAYLOAD);
				FUZZ_ASSERT(ev.data == s + off + done && ev.data_len == used &&
					    used > 0);
				got += used;
				FUZZ_ASSERT(got <= want && ev.last == (got == want));
				trace_add(t, ev.data, ev.data_len);
			}
			done += used;
		}
		off += piece;
	}
	{
		struct agent_event ev;
		int clean = want == got && f.line_len == 0; /* at a message boundary */

		agent_frame_eof(&f, &ev);
		FUZZ_ASSERT(ev.kind == AGENT_EV_NEED_MORE || ev.kind == AGENT_EV_ERROR);
		FUZZ_ASSERT((ev.kind == AGENT_EV_NEED_MORE) == clean);
		trace_add(t, ev.kind == AGENT_EV_ERROR ? "T" : "K", 1);
	}
out:
	if (in_error) {
		struct agent_event ev;

		FUZZ_ASSERT(agent_frame_feed(&f, "\n", 1, &ev) == 0 && ev.kind == AGENT_EV_ERROR);
	}
	agent_frame_free(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct trace whole, split;
	uint8_t seed;

	if (size < 1)
		return 0;
	seed = data[0] | 1;
	whole.n = split.n = 0;
	run(data + 1, size - 1, 0, &whole, 1);
	run(data + 1, size - 1, seed, &split, 0);
	FUZZ_ASSERT(whole.n == split.n && memcmp(whole.buf, split.buf, whole.n) == 0);
	return 0;
}
