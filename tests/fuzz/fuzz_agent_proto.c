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
 * header (agent_line_json) decodes back to the same JSON. A container
 * request (7.9) keeps every count within its limit, every vector
 * NULL-terminated, and what the host's encoder makes of the parsed
 * request parses again to the same request.
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

static void same_strings(const char **a, const char **b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		FUZZ_ASSERT(strcmp(a[i], b[i]) == 0);
	FUZZ_ASSERT(!a[n] && !b[n]);
}

static void same_process(const struct agent_ctr_process *a, const struct agent_ctr_process *b)
{
	FUZZ_ASSERT(a->argc == b->argc && a->envc == b->envc);
	same_strings(a->args, b->args, a->argc);
	same_strings(a->env, b->env, a->envc);
	FUZZ_ASSERT(strcmp(a->cwd, b->cwd) == 0 && a->uid == b->uid && a->gid == b->gid &&
		    a->umask == b->umask);
	FUZZ_ASSERT(a->ngroups == b->ngroups && a->terminal == b->terminal);
	for (size_t i = 0; i < a->ngroups; i++)
		FUZZ_ASSERT(a->groups[i] == b->groups[i]);
	FUZZ_ASSERT(!a->terminal || (a->rows == b->rows && a->cols == b->cols));
}

static void same_create(const struct agent_ctr_create *a, const struct agent_ctr_create *b)
{
	FUZZ_ASSERT(strcmp(a->cid, b->cid) == 0 && strcmp(a->root_share, b->root_share) == 0);
	FUZZ_ASSERT(!a->root_source == !b->root_source &&
		    (!a->root_source || strcmp(a->root_source, b->root_source) == 0));
	FUZZ_ASSERT(a->root_readonly == b->root_readonly && a->nmounts == b->nmounts &&
		    a->pids_max == b->pids_max);
	for (size_t i = 0; i < a->nmounts; i++) {
		const struct agent_ctr_mount *x = &a->mounts[i], *y = &b->mounts[i];

		FUZZ_ASSERT(strcmp(x->destination, y->destination) == 0 && x->type == y->type);
		FUZZ_ASSERT(x->optc == y->optc && !x->share == !y->share &&
			    !x->source == !y->source);
		if (x->optc)
			same_strings(x->options, y->options, x->optc);
	}
	same_process(&a->proc, &b->proc);
	FUZZ_ASSERT(!a->hostname == !b->hostname);
}

/* ctr_create's bounds, and the host's encoding of it read back the same. */
static void check_ctr_create(const struct agent_ctr_create *c)
{
	struct agent_msg back;
	struct agent_err err = { 0 };
	json_t *o;

	FUZZ_ASSERT(agent_cid_valid(c->cid) && agent_share_tag_valid(c->root_share));
	FUZZ_ASSERT(c->nmounts <= AGENT_CTR_MOUNTS_MAX && c->proc.argc >= 1 &&
		    c->proc.argc <= AGENT_ARGV_MAX && c->proc.envc <= AGENT_ENV_MAX &&
		    c->proc.ngroups <= AGENT_CTR_GROUPS_MAX && c->proc.umask <= 0777);
	for (size_t i = 0; i < c->nmounts; i++) {
		FUZZ_ASSERT(c->mounts[i].optc <= AGENT_CTR_OPTIONS_MAX);
		FUZZ_ASSERT((c->mounts[i].type == AGENT_MNT_BIND) == (c->mounts[i].share != NULL));
	}
	o = agent_ctr_create_encode(c);
	if (!o)
		return;
	FUZZ_ASSERT(agent_msg_parse(o, AGENT_CTX_REQUEST, &back, &err) == AGENT_OK);
	same_create(c, &back.u.ctr_create);
	agent_msg_free(&back);
	json_decref(o);
}

/* ctr_exec: a number that is never the init's, the process's bounds, and
 * the host's encoding read back the same. */
static void check_ctr_exec(const struct agent_ctr_exec *x)
{
	struct agent_msg back;
	struct agent_err err = { 0 };
	json_t *o;

	FUZZ_ASSERT(agent_cid_valid(x->cid) && x->exec >= 1);
	FUZZ_ASSERT(x->proc.argc >= 1 && x->proc.argc <= AGENT_ARGV_MAX &&
		    x->proc.envc <= AGENT_ENV_MAX && x->proc.ngroups <= AGENT_CTR_GROUPS_MAX &&
		    x->proc.umask <= 0777);
	o = agent_ctr_exec_encode(x);
	if (!o)
		return;
	FUZZ_ASSERT(agent_msg_parse(o, AGENT_CTX_REQUEST, &back, &err) == AGENT_OK);
	FUZZ_ASSERT(back.type == AGENT_T_CTR_EXEC && back.u.ctr_exec.exec == x->exec &&
		    strcmp(back.u.ctr_exec.cid, x->cid) == 0);
	same_process(&x->proc, &back.u.ctr_exec.proc);
	agent_msg_free(&back);
	json_decref(o);
}

static void check_ctr_req(enum agent_type t, const struct agent_ctr_req *r)
{
	struct agent_msg back;
	struct agent_err err = { 0 };
	json_t *o = agent_ctr_req_encode(t, r);

	if (!o)
		return;
	FUZZ_ASSERT(agent_msg_parse(o, AGENT_CTX_REQUEST, &back, &err) == AGENT_OK);
	FUZZ_ASSERT(back.type == t && strcmp(back.u.ctr.cid, r->cid) == 0 &&
		    back.u.ctr.exec == r->exec);
	FUZZ_ASSERT(back.u.ctr.stream == r->stream && back.u.ctr.signo == r->signo &&
		    back.u.ctr.all == r->all && back.u.ctr.rows == r->rows &&
		    back.u.ctr.cols == r->cols && back.u.ctr.timeout_ms == r->timeout_ms);
	agent_msg_free(&back);
	json_decref(o);
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
		if (msg.type == AGENT_T_CTR_CREATE)
			check_ctr_create(&msg.u.ctr_create);
		else if (msg.type == AGENT_T_CTR_EXEC)
			check_ctr_exec(&msg.u.ctr_exec);
		else if (msg.type >= AGENT_T_CTR_STDIO && msg.type <= AGENT_T_CTR_DELETE)
			check_ctr_req(msg.type, &msg.u.ctr);
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
