/*
 * agent_proto: everything the host sends the agent is hostile. The framer
 * must give the same messages whatever way the bytes are split, stop
 * buffering at the header limit, and notice a len that lies; the parser
 * must turn every malformed, mistyped, out-of-range or unknown field into
 * the exact documented error code; the reply lines must be byte for byte
 * what docs/agent-protocol.md shows.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "api/proto/agent_proto.h"
#include "lib/base/version.h"
#include "tests/unit/test_ca_pem.h"

/* ---- framing helpers ---- */

/* What a stream decoded to, independent of how its bytes were split:
 * each header as compact JSON + '|', each payload's bytes + '|', and the
 * final state ("EOF:ok" or "E:<code>"). */
struct tr {
	char *buf;
	size_t len, cap;
	bool failed;
	enum agent_code code;
};

static void tr_add(struct tr *t, const void *p, size_t n)
{
	if (t->len + n + 1 > t->cap) {
		t->cap = (t->len + n + 1) * 2;
		t->buf = realloc(t->buf, t->cap);
		assert_non_null(t->buf);
	}
	memcpy(t->buf + t->len, p, n);
	t->len += n;
	t->buf[t->len] = '\0';
}

static void tr_str(struct tr *t, const char *s)
{
	tr_add(t, s, strlen(s));
}

static void tr_event(struct tr *t, const struct agent_event *ev)
{
	char *s;

	switch (ev->kind) {
	case AGENT_EV_HEADER:
		s = json_dumps(ev->header, JSON_COMPACT);
		assert_non_null(s);
		tr_str(t, s);
		tr_str(t, "|");
		free(s);
		json_decref(ev->header);
		break;
	case AGENT_EV_PAYLOAD:
		assert_true(ev->data_len > 0);
		tr_add(t, ev->data, ev->data_len);
		if (ev->last)
			tr_str(t, "|");
		break;
	case AGENT_EV_ERROR:
		assert_non_null(ev->err);
		t->failed = true;
		t->code = ev->err->code;
		tr_str(t, "E:");
		tr_str(t, agent_code_name(ev->err->code));
		break;
	default:
		break;
	}
}

/* Feed one chunk until the framer wants more (or has failed). */
static void tr_feed(struct agent_frame *f, struct tr *t, const uint8_t *p, size_t n)
{
	while (!t->failed) {
		struct agent_event ev;
		size_t used = agent_frame_feed(f, p, n, &ev);

		assert_true(used <= n);
		tr_event(t, &ev);
		if (ev.kind == AGENT_EV_NEED_MORE) {
			assert_int_equal(used, n);
			return;
		}
		p += used;
		n -= used;
	}
}

static void tr_eof(struct agent_frame *f, struct tr *t)
{
	struct agent_event ev;

	if (t->failed)
		return;
	agent_frame_eof(f, &ev);
	if (ev.kind == AGENT_EV_NEED_MORE)
		tr_str(t, "EOF:ok");
	else
		tr_event(t, &ev);
}

/* Decode `n` bytes cut into pieces of the sizes `cut` returns. */
static struct tr run_cut(const void *buf, size_t n, size_t (*cut)(size_t i, void *arg), void *arg)
{
	struct agent_frame f;
	struct tr t = { 0 };
	const uint8_t *p = buf;
	size_t off = 0;

	agent_frame_init(&f);
	for (size_t i = 0; off < n && !t.failed; i++) {
		size_t c = cut(i, arg);

		if (c > n - off)
			c = n - off;
		tr_feed(&f, &t, p + off, c);
		off += c;
	}
	tr_eof(&f, &t);
	assert_true(f.line_cap <= AGENT_HEADER_MAX);
	agent_frame_free(&f);
	return t;
}

static size_t cut_all(size_t i, void *arg)
{
	(void)i;
	return *(size_t *)arg;
}

static size_t cut_one(size_t i, void *arg)
{
	(void)i;
	(void)arg;
	return 1;
}

/* First piece `*arg` bytes, then everything. */
static size_t cut_at(size_t i, void *arg)
{
	return i == 0 ? *(size_t *)arg : SIZE_MAX;
}

/* Deterministic pseudo-random sizes 1..17 (LCG state in arg). */
static size_t cut_random(size_t i, void *arg)
{
	uint32_t *s = arg;

	(void)i;
	*s = *s * 1103515245u + 12345u;
	return 1 + (*s >> 16) % 17;
}

static struct tr run_whole(const void *buf, size_t n)
{
	size_t all = n ? n : 1;

	return run_cut(buf, n, cut_all, &all);
}

static void tr_free(struct tr *t)
{
	free(t->buf);
}

/* A stream with no payload, payloads holding '\n', '{', NUL and 0xff, and len 0. */
static const char stream[] = "{\"type\":\"ping\"}\n"
			     "{\"type\":\"write\",\"path\":\"/tmp/a\",\"len\":5}\nab\ncd"
			     "{\"type\":\"data\",\"len\":0}\n"
			     "{\"type\":\"data\",\"len\":3}\n\0\xff{"
			     " {\"type\":\"end\"}\r\n";
static const char stream_tr[] = "{\"type\":\"ping\"}|"
				"{\"type\":\"write\",\"path\":\"/tmp/a\",\"len\":5}|ab\ncd|"
				"{\"type\":\"data\",\"len\":0}|"
				"{\"type\":\"data\",\"len\":3}|\0\xff{|"
				"{\"type\":\"end\"}|EOF:ok";

static void assert_tr(const struct tr *t, const char *want, size_t wantlen)
{
	if (t->len != wantlen || memcmp(t->buf, want, wantlen) != 0)
		fail_msg("transcript '%s' != '%s'", t->buf, want);
}

static void test_frame_all_at_once(void **state)
{
	struct tr t = run_whole(stream, sizeof(stream) - 1);

	(void)state;
	assert_tr(&t, stream_tr, sizeof(stream_tr) - 1);
	tr_free(&t);
}

static void test_frame_every_split(void **state)
{
	size_t n = sizeof(stream) - 1;

	(void)state;
	for (size_t i = 0; i <= n; i++) {
		struct tr t = run_cut(stream, n, cut_at, &i);

		assert_tr(&t, stream_tr, sizeof(stream_tr) - 1);
		tr_free(&t);
	}
	{
		struct tr t = run_cut(stream, n, cut_one, NULL);

		assert_tr(&t, stream_tr, sizeof(stream_tr) - 1);
		tr_free(&t);
	}
	for (uint32_t seed = 1; seed < 64; seed++) {
		uint32_t s = seed;
		struct tr t = run_cut(stream, n, cut_random, &s);

		assert_tr(&t, stream_tr, sizeof(stream_tr) - 1);
		tr_free(&t);
	}
}

/* Every byte value passes through a payload untouched and uncopied. */
static void test_frame_binary_payload(void **state)
{
	uint8_t buf[32 + 256];
	struct agent_frame f;
	struct agent_event ev;
	int hl = snprintf((char *)buf, 32, "{\"type\":\"data\",\"len\":256}\n");
	size_t used;

	(void)state;
	for (int i = 0; i < 256; i++)
		buf[hl + i] = (uint8_t)i;
	agent_frame_init(&f);
	used = agent_frame_feed(&f, buf, (size_t)hl + 256, &ev);
	assert_int_equal(ev.kind, AGENT_EV_HEADER);
	assert_int_equal(used, hl);
	assert_int_equal(ev.len, 256);
	json_decref(ev.header);
	used = agent_frame_feed(&f, buf + hl, 256, &ev);
	assert_int_equal(ev.kind, AGENT_EV_PAYLOAD);
	assert_int_equal(used, 256);
	assert_ptr_equal(ev.data, buf + hl); /* a slice of our buffer: zero copy */
	assert_true(ev.last);
	assert_int_equal(agent_frame_feed(&f, buf, 0, &ev), 0);
	assert_int_equal(ev.kind, AGENT_EV_NEED_MORE);
	agent_frame_free(&f);
}

/* A len that lies: fewer bytes, then EOF, at every split. */
static void test_frame_len_lies(void **state)
{
	static const char s[] = "{\"type\":\"data\",\"len\":10}\nabcd";
	struct agent_frame f;
	struct agent_event ev;

	(void)state;
	for (size_t i = 0; i < sizeof(s); i++) {
		struct tr t = run_cut(s, sizeof(s) - 1, cut_at, &i);
		static const char want[] = "{\"type\":\"data\",\"len\":10}|abcdE:truncated";

		assert_tr(&t, want, sizeof(want) - 1);
		tr_free(&t);
	}
	agent_frame_init(&f);
	agent_frame_feed(&f, s, sizeof(s) - 1, &ev);
	json_decref(ev.header);
	agent_frame_feed(&f, s + 25, 4, &ev);
	assert_int_equal(ev.kind, AGENT_EV_PAYLOAD);
	assert_false(ev.last);
	agent_frame_eof(&f, &ev);
	assert_int_equal(ev.kind, AGENT_EV_ERROR);
	assert_int_equal(ev.err->code, AGENT_E_TRUNCATED);
	assert_non_null(strstr(ev.err->msg, "after 4 of 10 payload bytes"));
	agent_frame_free(&f);
}

static void test_frame_eof_cases(void **state)
{
	static const char partial[] = "{\"type\":\"ping\"";
	struct tr t;

	(void)state;
	t = run_whole(partial, sizeof(partial) - 1);
	assert_tr(&t, "E:truncated", 11);
	tr_free(&t);
	t = run_whole("", 0); /* connect, then close: a clean end */
	assert_tr(&t, "EOF:ok", 6);
	tr_free(&t);
	t = run_whole("{\"type\":\"ping\"}\n", 16);
	assert_tr(&t, "{\"type\":\"ping\"}|EOF:ok", 22);
	tr_free(&t);
}

/* A header of `content` bytes: {"type":"ping","pad":"aaaa..."} padded to size. */
static char *long_header(size_t content)
{
	static const char pre[] = "{\"type\":\"ping\",\"pad\":\"";
	char *s = malloc(content + 2);
	size_t pl = sizeof(pre) - 1;

	assert_non_null(s);
	assert_true(content >= pl + 2);
	memcpy(s, pre, pl);
	memset(s + pl, 'a', content - pl - 2);
	memcpy(s + content - 2, "\"}", 2);
	s[content] = '\n';
	s[content + 1] = '\0';
	return s;
}

static void test_frame_header_limit(void **state)
{
	size_t max = AGENT_HEADER_MAX - 1; /* content bytes, '\n' excluded */
	char *ok = long_header(max), *big = long_header(max + 1);
	struct tr t;
	struct agent_frame f;
	struct agent_event ev;
	size_t fed = 0;
	char a = 'a';

	(void)state;
	t = run_whole(ok, max + 1);
	assert_false(t.failed);
	assert_int_equal(t.len, max + 1 + 6); /* header + "|" + "EOF:ok" */
	tr_free(&t);
	t = run_cut(ok, max + 1, cut_one, NULL);
	assert_false(t.failed);
	tr_free(&t);

	t = run_whole(big, max + 2);
	assert_tr(&t, "E:header_too_long", 17);
	tr_free(&t);
	t = run_cut(big, max + 2, cut_one, NULL);
	assert_tr(&t, "E:header_too_long", 17);
	tr_free(&t);

	/* A peer that never sends '\n' fails on the first byte past the
	 * limit, not whenever (if ever) the newline comes. */
	agent_frame_init(&f);
	for (;;) {
		agent_frame_feed(&f, &a, 1, &ev);
		if (ev.kind != AGENT_EV_NEED_MORE)
			break;
		fed++;
		assert_true(fed <= max);
	}
	assert_int_equal(fed, max);
	assert_int_equal(ev.kind, AGENT_EV_ERROR);
	assert_int_equal(ev.err->code, AGENT_E_HEADER_TOO_LONG);
	assert_true(f.line_cap <= AGENT_HEADER_MAX);
	/* The error is sticky. */
	assert_int_equal(agent_frame_feed(&f, "\n", 1, &ev), 0);
	assert_int_equal(ev.kind, AGENT_EV_ERROR);
	assert_int_equal(ev.err->code, AGENT_E_HEADER_TOO_LONG);
	agent_frame_eof(&f, &ev);
	assert_int_equal(ev.kind, AGENT_EV_ERROR);
	agent_frame_free(&f);
	free(ok);
	free(big);
}

/* Decode one line (with '\n' appended) through the framer; return the code. */
static enum agent_code frame_code(const char *line, size_t n)
{
	char *buf = malloc(n + 1);
	struct tr t;
	enum agent_code c;

	assert_non_null(buf);
	memcpy(buf, line, n);
	buf[n] = '\n';
	t = run_whole(buf, n + 1);
	c = t.failed ? t.code : AGENT_OK;
	tr_free(&t);
	free(buf);
	return c;
}

#define FRAME_CODE(lit) frame_code(lit, sizeof(lit) - 1)

static void test_frame_bad_json(void **state)
{
	char *deep;

	(void)state;
	assert_int_equal(FRAME_CODE("{\"type\":\"ping\"}"), AGENT_OK);
	assert_int_equal(FRAME_CODE(""), AGENT_E_BAD_JSON); /* empty line */
	assert_int_equal(FRAME_CODE("   "), AGENT_E_BAD_JSON);
	assert_int_equal(FRAME_CODE("[1,2,3]"), AGENT_E_BAD_JSON); /* not an object */
	assert_int_equal(FRAME_CODE("\"ping\""), AGENT_E_BAD_JSON);
	assert_int_equal(FRAME_CODE("42"), AGENT_E_BAD_JSON);
	assert_int_equal(FRAME_CODE("null"), AGENT_E_BAD_JSON);
	assert_int_equal(FRAME_CODE("{\"type\":"), AGENT_E_BAD_JSON);             /* cut short */
	assert_int_equal(FRAME_CODE("{\"type\":\"ping\"} {}"), AGENT_E_BAD_JSON); /* two values */
	assert_int_equal(FRAME_CODE("{'type':'ping'}"), AGENT_E_BAD_JSON);
	assert_int_equal(FRAME_CODE("\x16\x03\x01\x02\x00"), AGENT_E_BAD_JSON); /* a TLS hello */
	assert_int_equal(FRAME_CODE("GET / HTTP/1.1"), AGENT_E_BAD_JSON);
	/* Invalid UTF-8: stray byte, overlong '/', a UTF-16 surrogate, above U+10FFFF. */
	assert_int_equal(FRAME_CODE("{\"type\":\"\xff\"}"), AGENT_E_BAD_JSON);
	assert_int_equal(FRAME_CODE("{\"path\":\"\xc0\xaf\"}"), AGENT_E_BAD_JSON);
	assert_int_equal(FRAME_CODE("{\"path\":\"\xed\xa0\x80\"}"), AGENT_E_BAD_JSON);
	assert_int_equal(FRAME_CODE("{\"path\":\"\xf4\x90\x80\x80\"}"), AGENT_E_BAD_JSON);
	/* NUL: escaped in a string (would cut a C path short) or raw. */
	assert_int_equal(FRAME_CODE("{\"path\":\"/tmp/a\\u0000/etc\"}"), AGENT_E_BAD_JSON);
	assert_int_equal(FRAME_CODE("{\"type\":\"ping\"}\0"), AGENT_E_BAD_JSON);
	/* Duplicate keys: two readers could pick different ones. */
	assert_int_equal(FRAME_CODE("{\"type\":\"ping\",\"type\":\"shutdown\"}"), AGENT_E_BAD_JSON);
	/* An integer beyond 64 bits. */
	assert_int_equal(FRAME_CODE("{\"type\":\"ping\",\"x\":123456789012345678901234567890}"),
			 AGENT_E_BAD_JSON);
	/* Deep nesting: refused, not a stack overflow. */
	deep = malloc(40001);
	assert_non_null(deep);
	memcpy(deep, "{\"a\":", 5);
	memset(deep + 5, '[', 39995);
	deep[40000] = '\0';
	assert_int_equal(frame_code(deep, 40000), AGENT_E_BAD_JSON);
	free(deep);
}

static void test_frame_len_field(void **state)
{
	(void)state;
	assert_int_equal(FRAME_CODE("{\"type\":\"data\",\"len\":-1}"), AGENT_E_BAD_FIELD);
	assert_int_equal(FRAME_CODE("{\"type\":\"data\",\"len\":1.5}"), AGENT_E_BAD_FIELD);
	assert_int_equal(FRAME_CODE("{\"type\":\"data\",\"len\":1e3}"), AGENT_E_BAD_FIELD);
	assert_int_equal(FRAME_CODE("{\"type\":\"data\",\"len\":\"5\"}"), AGENT_E_BAD_FIELD);
	assert_int_equal(FRAME_CODE("{\"type\":\"data\",\"len\":null}"), AGENT_E_BAD_FIELD);
	assert_int_equal(FRAME_CODE("{\"type\":\"data\",\"len\":true}"), AGENT_E_BAD_FIELD);
	assert_int_equal(FRAME_CODE("{\"type\":\"data\",\"len\":1048577}"), AGENT_E_TOO_LARGE);
	assert_int_equal(FRAME_CODE("{\"type\":\"data\",\"len\":9223372036854775807}"),
			 AGENT_E_TOO_LARGE);
	/* 1 MiB is allowed: the framer then waits for that many bytes. */
	{
		static const char s[] = "{\"type\":\"data\",\"len\":1048576}\n";
		struct tr t = run_whole(s, sizeof(s) - 1);

		assert_tr(&t, "{\"type\":\"data\",\"len\":1048576}|E:truncated", 41);
		tr_free(&t);
	}
}

/* A bad header in the middle: what came before is delivered, then the error. */
static void test_frame_error_after_messages(void **state)
{
	static const char s[] =
		"{\"type\":\"data\",\"len\":2}\nxy{\"type\":\"end\"\n{\"type\":\"end\"}\n";
	static const char want[] = "{\"type\":\"data\",\"len\":2}|xy|E:bad_json";

	(void)state;
	for (size_t i = 0; i < sizeof(s); i++) {
		struct tr t = run_cut(s, sizeof(s) - 1, cut_at, &i);

		assert_tr(&t, want, sizeof(want) - 1);
		tr_free(&t);
	}
}

/* ---- request parsing ---- */

static enum agent_code parse_ctx(const char *line, enum agent_ctx ctx, struct agent_msg *m,
				 struct agent_err *err)
{
	return agent_msg_parse_line(line, strlen(line), ctx, m, err);
}

/* The code for `line` as a request; the message is freed. */
static enum agent_code code_in(enum agent_ctx ctx, const char *line)
{
	struct agent_msg m;
	struct agent_err err;
	enum agent_code c = parse_ctx(line, ctx, &m, &err);

	if (c == AGENT_OK)
		agent_msg_free(&m);
	else
		assert_true(err.msg[0] != '\0');
	return c;
}

#define REQ(line) code_in(AGENT_CTX_REQUEST, line)
#define ATT(line) code_in(AGENT_CTX_ATTACHED, line)
#define UPL(line) code_in(AGENT_CTX_UPLOAD, line)

static void test_parse_type(void **state)
{
	struct agent_msg m;
	struct agent_err err;

	(void)state;
	assert_int_equal(REQ("{}"), AGENT_E_MISSING_FIELD);
	assert_int_equal(REQ("{\"len\":0}"), AGENT_E_MISSING_FIELD);
	assert_int_equal(REQ("{\"type\":5}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":null}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":[\"ping\"]}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"PING\"}"), AGENT_E_UNKNOWN_TYPE);
	assert_int_equal(REQ("{\"type\":\"\"}"), AGENT_E_UNKNOWN_TYPE);
	assert_int_equal(parse_ctx("{\"type\":\"launch_missiles\"}", AGENT_CTX_REQUEST, &m, &err),
			 AGENT_E_UNKNOWN_TYPE);
	assert_string_equal(err.msg,
			    "unknown message type 'launch_missiles'; see "
			    "docs/agent-protocol.md for the list");
	/* len is checked before type, as the framer does. */
	assert_int_equal(REQ("{\"type\":\"nope\",\"len\":-1}"), AGENT_E_BAD_FIELD);
	/* Every type parses in its context when its required fields are there. */
	assert_int_equal(REQ("{\"type\":\"ping\"}"), AGENT_OK);
	assert_int_equal(REQ("{\"type\":\"info\"}"), AGENT_OK);
	assert_int_equal(REQ("{\"type\":\"list_processes\"}"), AGENT_OK);
	assert_int_equal(UPL("{\"type\":\"data\",\"len\":7}"), AGENT_OK);
	assert_int_equal(UPL("{\"type\":\"end\"}"), AGENT_OK);
	assert_string_equal(agent_type_name(AGENT_T_LIST_DIR), "list_dir");
	assert_null(agent_type_name(AGENT_TYPE_COUNT));
}

static void test_parse_context(void **state)
{
	(void)state;
	assert_int_equal(REQ("{\"type\":\"data\",\"len\":5}"), AGENT_E_UNEXPECTED_TYPE);
	assert_int_equal(REQ("{\"type\":\"end\"}"), AGENT_E_UNEXPECTED_TYPE);
	assert_int_equal(UPL("{\"type\":\"ping\"}"), AGENT_E_UNEXPECTED_TYPE);
	assert_int_equal(UPL("{\"type\":\"stdin\",\"len\":1}"), AGENT_E_UNEXPECTED_TYPE);
	assert_int_equal(UPL("{\"type\":\"write\",\"path\":\"/a\"}"), AGENT_E_UNEXPECTED_TYPE);
	assert_int_equal(ATT("{\"type\":\"exec\",\"argv\":[\"ls\"]}"), AGENT_E_UNEXPECTED_TYPE);
	assert_int_equal(ATT("{\"type\":\"data\",\"len\":1}"), AGENT_E_UNEXPECTED_TYPE);
	assert_int_equal(ATT("{\"type\":\"attach\",\"id\":1}"), AGENT_E_UNEXPECTED_TYPE);
	assert_int_equal(ATT("{\"type\":\"wait\",\"id\":1}"), AGENT_E_UNEXPECTED_TYPE);
	/* Unknown stays unknown in every context. */
	assert_int_equal(ATT("{\"type\":\"bogus\"}"), AGENT_E_UNKNOWN_TYPE);
	assert_int_equal(UPL("{\"type\":\"bogus\"}"), AGENT_E_UNKNOWN_TYPE);
}

static void test_parse_unknown_field_and_len(void **state)
{
	struct agent_msg m;
	struct agent_err err;

	(void)state;
	assert_int_equal(parse_ctx("{\"type\":\"ping\",\"verbose\":true}", AGENT_CTX_REQUEST, &m,
				   &err),
			 AGENT_E_UNKNOWN_FIELD);
	assert_string_equal(err.msg, "ping: unknown field 'verbose'");
	/* A typo is never ignored. */
	assert_int_equal(REQ("{\"type\":\"exec\",\"argv\":[\"ls\"],\"timout_ms\":5}"),
			 AGENT_E_UNKNOWN_FIELD);
	/* Unknown fields are found before any field value is looked at. */
	assert_int_equal(REQ("{\"type\":\"exec\",\"argv\":5,\"zzz\":1}"), AGENT_E_UNKNOWN_FIELD);
	/* A field of another type of message is unknown here. */
	assert_int_equal(REQ("{\"type\":\"spawn\",\"argv\":[\"ls\"],\"output_cap\":5}"),
			 AGENT_E_UNKNOWN_FIELD);
	assert_int_equal(REQ("{\"type\":\"end\",\"bytes\":5}"), AGENT_E_UNEXPECTED_TYPE);
	assert_int_equal(UPL("{\"type\":\"end\",\"bytes\":5}"), AGENT_E_UNKNOWN_FIELD);
	/* len only on payload types; 0 is the same as absent. */
	assert_int_equal(REQ("{\"type\":\"ping\",\"len\":0}"), AGENT_OK);
	assert_int_equal(REQ("{\"type\":\"ping\",\"len\":3}"), AGENT_E_BAD_FIELD);
	assert_int_equal(UPL("{\"type\":\"end\",\"len\":1}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"spawn\",\"argv\":[\"ls\"],\"len\":1}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"tar_download\",\"path\":\"/a\",\"len\":1}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"tar_upload\",\"path\":\"/a\",\"len\":1}"), AGENT_OK);
	assert_int_equal(REQ("{\"type\":\"write\",\"path\":\"/a\",\"len\":1048576}"), AGENT_OK);
	assert_int_equal(REQ("{\"type\":\"write\",\"path\":\"/a\",\"len\":1048577}"),
			 AGENT_E_TOO_LARGE);
}

static void test_parse_exec(void **state)
{
	struct agent_msg m;
	struct agent_err err;
	const char *line = "{\"type\":\"exec\",\"argv\":[\"echo $1\",\"sh\",\"hi\"],\"shell\":true,"
			   "\"env\":{\"A\":\"1\",\"HOME\":null},\"cwd\":\"/srv\",\"user\":\"root\","
			   "\"timeout_ms\":500,\"output_cap\":0,\"len\":6}";

	(void)state;
	assert_int_equal(parse_ctx(line, AGENT_CTX_REQUEST, &m, &err), AGENT_OK);
	assert_int_equal(m.type, AGENT_T_EXEC);
	assert_int_equal(m.len, 6);
	assert_int_equal(m.u.proc.argc, 5);
	assert_string_equal(m.u.proc.argv[0], "/bin/sh");
	assert_string_equal(m.u.proc.argv[1], "-c");
	assert_string_equal(m.u.proc.argv[2], "echo $1");
	assert_string_equal(m.u.proc.argv[4], "hi");
	assert_null(m.u.proc.argv[5]);
	assert_true(m.u.proc.shell);
	assert_int_equal(m.u.proc.envc, 2);
	assert_string_equal(m.u.proc.env[0].key, "A");
	assert_string_equal(m.u.proc.env[0].value, "1");
	assert_string_equal(m.u.proc.env[1].key, "HOME");
	assert_null(m.u.proc.env[1].value);
	assert_string_equal(m.u.proc.cwd, "/srv");
	assert_int_equal(m.u.proc.user, AGENT_USER_ROOT);
	assert_int_equal(m.u.proc.timeout_ms, 500);
	assert_int_equal(m.u.proc.output_cap, 0);
	agent_msg_free(&m);

	/* Defaults. */
	assert_int_equal(parse_ctx("{\"type\":\"exec\",\"argv\":[\"true\"]}", AGENT_CTX_REQUEST, &m,
				   &err),
			 AGENT_OK);
	assert_int_equal(m.u.proc.argc, 1);
	assert_string_equal(m.u.proc.argv[0], "true");
	assert_null(m.u.proc.argv[1]);
	assert_false(m.u.proc.shell);
	assert_int_equal(m.u.proc.envc, 0);
	assert_null(m.u.proc.cwd);
	assert_int_equal(m.u.proc.user, AGENT_USER_USER);
	assert_int_equal(m.u.proc.timeout_ms, 0);
	assert_int_equal(m.u.proc.output_cap, AGENT_OUTPUT_CAP_DEFAULT);
	assert_int_equal(m.len, 0);
	agent_msg_free(&m);
}

/* A JSON array of n strings "x" as argv. */
static char *argv_line(const char *type, size_t n, const char *extra)
{
	size_t cap = 64 + n * 4 + strlen(extra);
	char *s = malloc(cap), *p;

	assert_non_null(s);
	p = s + sprintf(s, "{\"type\":\"%s\",\"argv\":[", type);
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s\"x\"", i ? "," : "");
	sprintf(p, "]%s}", extra);
	return s;
}

static char *env_line(size_t n)
{
	char *s = malloc(64 + n * 16), *p;

	assert_non_null(s);
	p = s + sprintf(s, "{\"type\":\"exec\",\"argv\":[\"x\"],\"env\":{");
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%s\"K%zu\":\"v\"", i ? "," : "", i);
	sprintf(p, "}}");
	return s;
}

static void test_parse_exec_bad(void **state)
{
	struct agent_msg m;
	struct agent_err err;
	char *s, *path;

	(void)state;
	assert_int_equal(parse_ctx("{\"type\":\"exec\"}", AGENT_CTX_REQUEST, &m, &err),
			 AGENT_E_MISSING_FIELD);
	assert_string_equal(err.msg, "exec: missing required field 'argv' (array of strings)");
	assert_int_equal(parse_ctx("{\"type\":\"exec\",\"argv\":\"ls\"}", AGENT_CTX_REQUEST, &m,
				   &err),
			 AGENT_E_BAD_FIELD);
	assert_string_equal(err.msg, "exec: 'argv' must be an array of strings, not a string");
	assert_int_equal(parse_ctx("{\"type\":\"exec\",\"argv\":[]}", AGENT_CTX_REQUEST, &m, &err),
			 AGENT_E_BAD_FIELD);
	assert_string_equal(err.msg,
			    "exec: 'argv' must have at least one entry (argv[0] is the program)");
	assert_int_equal(REQ("{\"type\":\"exec\",\"argv\":[\"ls\",1]}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"exec\",\"argv\":[\"ls\",null]}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"exec\",\"argv\":[\"\"]}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"exec\",\"argv\":[\"\",\"x\"]}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"exec\",\"argv\":[\"x\",\"\"]}"),
			 AGENT_OK); /* empty args are fine */
	assert_int_equal(REQ("{\"type\":\"exec\",\"argv\":[\"ls\"],\"shell\":1}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"exec\",\"argv\":[\"ls\"],\"shell\":\"yes\"}"),
			 AGENT_E_BAD_FIELD);

	/* argv count limits, with and without the two words /bin/sh -c adds. */
	s = argv_line("exec", AGENT_ARGV_MAX, "");
	assert_int_equal(REQ(s), AGENT_OK);
	free(s);
	s = argv_line("exec", AGENT_ARGV_MAX + 1, "");
	assert_int_equal(REQ(s), AGENT_E_TOO_LARGE);
	free(s);
	s = argv_line("exec", AGENT_ARGV_MAX - 2, ",\"shell\":true");
	assert_int_equal(REQ(s), AGENT_OK);
	free(s);
	s = argv_line("spawn", AGENT_ARGV_MAX - 1, ",\"shell\":true");
	assert_int_equal(REQ(s), AGENT_E_TOO_LARGE);
	free(s);

	/* env */
	assert_int_equal(REQ("{\"type\":\"exec\",\"argv\":[\"x\"],\"env\":[\"A=1\"]}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"exec\",\"argv\":[\"x\"],\"env\":{\"A=B\":\"1\"}}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"exec\",\"argv\":[\"x\"],\"env\":{\"\":\"1\"}}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"exec\",\"argv\":[\"x\"],\"env\":{\"A\":1}}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"exec\",\"argv\":[\"x\"],\"env\":{\"A\":{}}}"),
			 AGENT_E_BAD_FIELD);
	s = env_line(AGENT_ENV_MAX);
	assert_int_equal(REQ(s), AGENT_OK);
	free(s);
	s = env_line(AGENT_ENV_MAX + 1);
	assert_int_equal(REQ(s), AGENT_E_TOO_LARGE);
	free(s);

	/* cwd, user, numbers */
	assert_int_equal(REQ("{\"type\":\"exec\",\"argv\":[\"x\"],\"cwd\":\"tmp\"}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"exec\",\"argv\":[\"x\"],\"cwd\":\"\"}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"exec\",\"argv\":[\"x\"],\"cwd\":7}"), AGENT_E_BAD_FIELD);
	path = malloc(AGENT_PATH_MAX + 100);
	assert_non_null(path);
	s = malloc(AGENT_PATH_MAX + 200);
	assert_non_null(s);
	memset(path, 'p', AGENT_PATH_MAX + 1);
	path[0] = '/';
	path[AGENT_PATH_MAX + 1] = '\0';
	sprintf(s, "{\"type\":\"exec\",\"argv\":[\"x\"],\"cwd\":\"%s\"}", path);
	assert_int_equal(REQ(s), AGENT_E_TOO_LARGE);
	path[AGENT_PATH_MAX] = '\0';
	sprintf(s, "{\"type\":\"exec\",\"argv\":[\"x\"],\"cwd\":\"%s\"}", path);
	assert_int_equal(REQ(s), AGENT_OK);
	free(s);
	free(path);
	assert_int_equal(REQ("{\"type\":\"exec\",\"argv\":[\"x\"],\"user\":\"admin\"}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"exec\",\"argv\":[\"x\"],\"user\":0}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"exec\",\"argv\":[\"x\"],\"timeout_ms\":-1}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"exec\",\"argv\":[\"x\"],\"timeout_ms\":1.5}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"exec\",\"argv\":[\"x\"],\"timeout_ms\":\"5\"}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"exec\",\"argv\":[\"x\"],\"timeout_ms\":604800000}"),
			 AGENT_OK);
	assert_int_equal(parse_ctx("{\"type\":\"exec\",\"argv\":[\"x\"],\"timeout_ms\":604800001}",
				   AGENT_CTX_REQUEST, &m, &err),
			 AGENT_E_BAD_FIELD);
	assert_string_equal(err.msg,
			    "exec: 'timeout_ms' must be an integer from 0 to 604800000 "
			    "(got 604800001)");
	assert_int_equal(REQ("{\"type\":\"exec\",\"argv\":[\"x\"],\"output_cap\":268435456}"),
			 AGENT_OK);
	assert_int_equal(REQ("{\"type\":\"exec\",\"argv\":[\"x\"],\"output_cap\":268435457}"),
			 AGENT_E_BAD_FIELD);
	/* Field order decides which error comes first: argv before cwd. */
	assert_int_equal(REQ("{\"type\":\"exec\",\"cwd\":\"rel\",\"argv\":[]}"), AGENT_E_BAD_FIELD);
	assert_int_equal(parse_ctx("{\"type\":\"exec\",\"cwd\":\"rel\",\"argv\":[]}",
				   AGENT_CTX_REQUEST, &m, &err),
			 AGENT_E_BAD_FIELD);
	assert_non_null(strstr(err.msg, "'argv'"));
}

/* confine: a strict bool on exec and spawn, and a cwd the confined view
 * shows (section 8, "Confinement"). */
static void test_parse_confine(void **state)
{
	struct agent_msg m;
	struct agent_err err;

	(void)state;
	assert_int_equal(parse_ctx("{\"type\":\"exec\",\"argv\":[\"cat\"],\"confine\":true}",
				   AGENT_CTX_REQUEST, &m, &err),
			 AGENT_OK);
	assert_true(m.u.proc.confine);
	assert_null(m.u.proc.cwd);
	agent_msg_free(&m);
	assert_int_equal(parse_ctx("{\"type\":\"spawn\",\"argv\":[\"sh\"],\"confine\":true,"
				   "\"cwd\":\"/workspace/src\",\"pty\":true}",
				   AGENT_CTX_REQUEST, &m, &err),
			 AGENT_OK);
	assert_true(m.u.proc.confine);
	assert_string_equal(m.u.proc.cwd, "/workspace/src");
	agent_msg_free(&m);
	assert_int_equal(parse_ctx("{\"type\":\"exec\",\"argv\":[\"x\"]}", AGENT_CTX_REQUEST, &m,
				   &err),
			 AGENT_OK);
	assert_false(m.u.proc.confine);
	agent_msg_free(&m);
	/* Without confine any cwd is fine, as before. */
	assert_int_equal(REQ("{\"type\":\"exec\",\"argv\":[\"x\"],\"confine\":false,\"cwd\":\"/tmp\"}"),
			 AGENT_OK);

	assert_int_equal(parse_ctx("{\"type\":\"exec\",\"argv\":[\"x\"],\"confine\":\"yes\"}",
				   AGENT_CTX_REQUEST, &m, &err),
			 AGENT_E_BAD_FIELD);
	assert_string_equal(err.msg, "exec: 'confine' must be true or false, not a string");
	assert_int_equal(REQ("{\"type\":\"spawn\",\"argv\":[\"x\"],\"confine\":1}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"exec\",\"argv\":[\"x\"],\"confine\":null}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(
		parse_ctx("{\"type\":\"exec\",\"argv\":[\"x\"],\"confine\":true,\"cwd\":\"/etc\"}",
			  AGENT_CTX_REQUEST, &m, &err),
		AGENT_E_BAD_FIELD);
	assert_string_equal(err.msg,
			    "exec: 'cwd' '/etc' is not visible to a confined process; give /workspace "
			    "or a directory below it (without '..'), or leave it out");
	assert_int_equal(
		REQ("{\"type\":\"spawn\",\"argv\":[\"x\"],\"confine\":true,\"cwd\":\"/workspace/../etc\"}"),
		AGENT_E_BAD_FIELD);
	/* confine is not a field of the other messages. */
	assert_int_equal(REQ("{\"type\":\"read\",\"path\":\"/a\",\"confine\":true}"),
			 AGENT_E_UNKNOWN_FIELD);
}

static void test_confine_cwd_ok(void **state)
{
	static const char *const ok[] = { "/workspace",     "/workspace/",    "/workspace/a/b",
					  "/workspace/..x", "/workspace/a..", "/workspace/./a",
					  "/workspace//a" };
	static const char *const bad[] = { "/",
					   "/tmp",
					   "/workspaces",
					   "/workspace-x",
					   "/workspace/..",
					   "/workspace/../",
					   "/workspace/a/../../etc",
					   "/work",
					   "workspace",
					   "/Workspace",
					   "" };

	(void)state;
	assert_true(agent_confine_cwd_ok(NULL));
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		assert_true(agent_confine_cwd_ok(ok[i]));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (agent_confine_cwd_ok(bad[i]))
			fail_msg("'%s' accepted", bad[i]);
	}
}

static void test_parse_spawn(void **state)
{
	struct agent_msg m;
	struct agent_err err;

	(void)state;
	assert_int_equal(parse_ctx("{\"type\":\"spawn\",\"argv\":[\"sh\"]}", AGENT_CTX_REQUEST, &m,
				   &err),
			 AGENT_OK);
	assert_false(m.u.proc.pty);
	assert_int_equal(m.u.proc.ring_bytes, AGENT_RING_DEFAULT);
	agent_msg_free(&m);
	assert_int_equal(parse_ctx("{\"type\":\"spawn\",\"argv\":[\"sh\"],\"pty\":true}",
				   AGENT_CTX_REQUEST, &m, &err),
			 AGENT_OK);
	assert_true(m.u.proc.pty);
	assert_int_equal(m.u.proc.rows, 24);
	assert_int_equal(m.u.proc.cols, 80);
	agent_msg_free(&m);
	assert_int_equal(parse_ctx("{\"type\":\"spawn\",\"argv\":[\"sh\"],\"pty\":true,\"rows\":65535,"
				   "\"cols\":1,\"ring_bytes\":4096}",
				   AGENT_CTX_REQUEST, &m, &err),
			 AGENT_OK);
	assert_int_equal(m.u.proc.rows, 65535);
	assert_int_equal(m.u.proc.cols, 1);
	assert_int_equal(m.u.proc.ring_bytes, 4096);
	agent_msg_free(&m);
	assert_int_equal(REQ("{\"type\":\"spawn\",\"argv\":[\"sh\"],\"rows\":30}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"spawn\",\"argv\":[\"sh\"],\"pty\":false,\"cols\":30}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"spawn\",\"argv\":[\"sh\"],\"pty\":true,\"rows\":0}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"spawn\",\"argv\":[\"sh\"],\"pty\":true,\"cols\":65536}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"spawn\",\"argv\":[\"sh\"],\"ring_bytes\":4095}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"spawn\",\"argv\":[\"sh\"],\"ring_bytes\":4194305}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"spawn\",\"argv\":[\"sh\"],\"pty\":\"yes\"}"),
			 AGENT_E_BAD_FIELD);
}

static void test_parse_process_control(void **state)
{
	struct agent_msg m;
	struct agent_err err;

	(void)state;
	/* attach */
	assert_int_equal(REQ("{\"type\":\"attach\"}"), AGENT_E_MISSING_FIELD);
	assert_int_equal(REQ("{\"type\":\"attach\",\"id\":0}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"attach\",\"id\":4294967296}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"attach\",\"id\":\"1\"}"), AGENT_E_BAD_FIELD);
	assert_int_equal(parse_ctx("{\"type\":\"attach\",\"id\":4294967295}", AGENT_CTX_REQUEST, &m,
				   &err),
			 AGENT_OK);
	assert_int_equal(m.u.ctl.id, 4294967295u);
	assert_false(m.u.ctl.has_from);
	assert_false(m.u.ctl.from_now);
	agent_msg_free(&m);
	assert_int_equal(parse_ctx("{\"type\":\"attach\",\"id\":3,\"from\":\"now\"}",
				   AGENT_CTX_REQUEST, &m, &err),
			 AGENT_OK);
	assert_true(m.u.ctl.from_now);
	agent_msg_free(&m);
	assert_int_equal(parse_ctx("{\"type\":\"attach\",\"id\":3,\"from\":995904}",
				   AGENT_CTX_REQUEST, &m, &err),
			 AGENT_OK);
	assert_true(m.u.ctl.has_from);
	assert_int_equal(m.u.ctl.from, 995904);
	agent_msg_free(&m);
	assert_int_equal(REQ("{\"type\":\"attach\",\"id\":3,\"from\":-1}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"attach\",\"id\":3,\"from\":\"later\"}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"attach\",\"id\":3,\"from\":1.0}"), AGENT_E_BAD_FIELD);

	/* stdin: id required as a request, refused on a stream. */
	assert_int_equal(REQ("{\"type\":\"stdin\",\"len\":3}"), AGENT_E_MISSING_FIELD);
	assert_int_equal(parse_ctx("{\"type\":\"stdin\",\"id\":3,\"len\":3,\"close\":true}",
				   AGENT_CTX_REQUEST, &m, &err),
			 AGENT_OK);
	assert_int_equal(m.u.ctl.id, 3);
	assert_true(m.u.ctl.close);
	assert_int_equal(m.len, 3);
	agent_msg_free(&m);
	assert_int_equal(parse_ctx("{\"type\":\"stdin\",\"len\":8}", AGENT_CTX_ATTACHED, &m, &err),
			 AGENT_OK);
	assert_int_equal(m.u.ctl.id, 0);
	assert_false(m.u.ctl.close);
	agent_msg_free(&m);
	assert_int_equal(parse_ctx("{\"type\":\"stdin\",\"id\":3,\"len\":8}", AGENT_CTX_ATTACHED,
				   &m, &err),
			 AGENT_E_BAD_FIELD);
	assert_string_equal(err.msg,
			    "stdin: 'id' is not allowed on an attached stream; the "
			    "stream's process is implied");
	assert_int_equal(ATT("{\"type\":\"stdin\",\"close\":\"yes\"}"), AGENT_E_BAD_FIELD);

	/* signal: numbers and names. */
	assert_int_equal(parse_ctx("{\"type\":\"signal\",\"signal\":\"TERM\"}", AGENT_CTX_ATTACHED,
				   &m, &err),
			 AGENT_OK);
	assert_int_equal(m.u.ctl.signo, 15);
	assert_false(m.u.ctl.group);
	agent_msg_free(&m);
	assert_int_equal(
		parse_ctx("{\"type\":\"signal\",\"id\":2,\"signal\":\"SIGKILL\",\"group\":true}",
			  AGENT_CTX_REQUEST, &m, &err),
		AGENT_OK);
	assert_int_equal(m.u.ctl.signo, 9);
	assert_true(m.u.ctl.group);
	agent_msg_free(&m);
	assert_int_equal(ATT("{\"type\":\"signal\",\"signal\":64}"), AGENT_OK);
	assert_int_equal(ATT("{\"type\":\"signal\",\"signal\":1}"), AGENT_OK);
	assert_int_equal(ATT("{\"type\":\"signal\",\"signal\":\"WINCH\"}"), AGENT_OK);
	assert_int_equal(ATT("{\"type\":\"signal\"}"), AGENT_E_MISSING_FIELD);
	assert_int_equal(ATT("{\"type\":\"signal\",\"signal\":0}"), AGENT_E_BAD_FIELD);
	assert_int_equal(ATT("{\"type\":\"signal\",\"signal\":65}"), AGENT_E_BAD_FIELD);
	assert_int_equal(ATT("{\"type\":\"signal\",\"signal\":-9}"), AGENT_E_BAD_FIELD);
	assert_int_equal(ATT("{\"type\":\"signal\",\"signal\":\"term\"}"), AGENT_E_BAD_FIELD);
	assert_int_equal(ATT("{\"type\":\"signal\",\"signal\":\"SIG\"}"), AGENT_E_BAD_FIELD);
	assert_int_equal(ATT("{\"type\":\"signal\",\"signal\":\"SIGFOO\"}"), AGENT_E_BAD_FIELD);
	assert_int_equal(ATT("{\"type\":\"signal\",\"signal\":9.0}"), AGENT_E_BAD_FIELD);
	assert_int_equal(ATT("{\"type\":\"signal\",\"signal\":\"TERM\",\"group\":1}"),
			 AGENT_E_BAD_FIELD);

	/* resize */
	assert_int_equal(parse_ctx("{\"type\":\"resize\",\"rows\":50,\"cols\":200}",
				   AGENT_CTX_ATTACHED, &m, &err),
			 AGENT_OK);
	assert_int_equal(m.u.ctl.rows, 50);
	assert_int_equal(m.u.ctl.cols, 200);
	agent_msg_free(&m);
	assert_int_equal(ATT("{\"type\":\"resize\",\"rows\":50}"), AGENT_E_MISSING_FIELD);
	assert_int_equal(ATT("{\"type\":\"resize\",\"rows\":0,\"cols\":80}"), AGENT_E_BAD_FIELD);
	assert_int_equal(ATT("{\"type\":\"resize\",\"rows\":24,\"cols\":65536}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"resize\",\"rows\":24,\"cols\":80}"),
			 AGENT_E_MISSING_FIELD);

	/* wait */
	assert_int_equal(parse_ctx("{\"type\":\"wait\",\"id\":3}", AGENT_CTX_REQUEST, &m, &err),
			 AGENT_OK);
	assert_int_equal(m.u.ctl.timeout_ms, 0);
	agent_msg_free(&m);
	assert_int_equal(REQ("{\"type\":\"wait\",\"id\":3,\"timeout_ms\":604800001}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"wait\"}"), AGENT_E_MISSING_FIELD);
}

static void test_parse_files(void **state)
{
	struct agent_msg m;
	struct agent_err err;

	(void)state;
	/* read */
	assert_int_equal(parse_ctx("{\"type\":\"read\",\"path\":\"/etc/hostname\"}",
				   AGENT_CTX_REQUEST, &m, &err),
			 AGENT_OK);
	assert_string_equal(m.u.file.path, "/etc/hostname");
	assert_int_equal(m.u.file.offset, 0);
	assert_true(m.u.file.length == UINT64_MAX);
	assert_int_equal(m.u.file.user, AGENT_USER_USER);
	agent_msg_free(&m);
	assert_int_equal(parse_ctx("{\"type\":\"read\",\"path\":\"/x\",\"offset\":1,\"length\":3,"
				   "\"user\":\"root\"}",
				   AGENT_CTX_REQUEST, &m, &err),
			 AGENT_OK);
	assert_int_equal(m.u.file.offset, 1);
	assert_int_equal(m.u.file.length, 3);
	assert_int_equal(m.u.file.user, AGENT_USER_ROOT);
	agent_msg_free(&m);
	assert_int_equal(REQ("{\"type\":\"read\"}"), AGENT_E_MISSING_FIELD);
	assert_int_equal(REQ("{\"type\":\"read\",\"path\":5}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"read\",\"path\":\"etc/passwd\"}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"read\",\"path\":\"/x\",\"offset\":-1}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"read\",\"path\":\"/x\",\"length\":\"all\"}"),
			 AGENT_E_BAD_FIELD);

	/* write */
	assert_int_equal(parse_ctx("{\"type\":\"write\",\"path\":\"/a\"}", AGENT_CTX_REQUEST, &m,
				   &err),
			 AGENT_OK);
	assert_true(m.u.file.create);
	assert_false(m.u.file.exclusive);
	assert_false(m.u.file.append);
	assert_false(m.u.file.parents);
	assert_int_equal(m.u.file.mode, 0644);
	agent_msg_free(&m);
	assert_int_equal(parse_ctx("{\"type\":\"write\",\"path\":\"/a\",\"create\":true,\"exclusive\":true,"
				   "\"append\":true,\"mode\":4095,\"parents\":true,\"len\":4}",
				   AGENT_CTX_REQUEST, &m, &err),
			 AGENT_OK);
	assert_true(m.u.file.exclusive);
	assert_true(m.u.file.append);
	assert_true(m.u.file.parents);
	assert_int_equal(m.u.file.mode, 07777);
	assert_int_equal(m.len, 4);
	agent_msg_free(&m);
	assert_int_equal(
		REQ("{\"type\":\"write\",\"path\":\"/a\",\"create\":false,\"exclusive\":true}"),
		AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"write\",\"path\":\"/a\",\"mode\":4096}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"write\",\"path\":\"/a\",\"mode\":\"0644\"}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"write\",\"path\":\"/a\",\"append\":0}"),
			 AGENT_E_BAD_FIELD);

	/* stat, exists */
	assert_int_equal(parse_ctx("{\"type\":\"stat\",\"path\":\"/bin/sh\",\"follow\":false}",
				   AGENT_CTX_REQUEST, &m, &err),
			 AGENT_OK);
	assert_false(m.u.file.follow);
	agent_msg_free(&m);
	assert_int_equal(parse_ctx("{\"type\":\"exists\",\"path\":\"/nope\"}", AGENT_CTX_REQUEST,
				   &m, &err),
			 AGENT_OK);
	assert_true(m.u.file.follow);
	agent_msg_free(&m);
	assert_int_equal(REQ("{\"type\":\"exists\",\"path\":\"nope\"}"), AGENT_E_BAD_FIELD);

	/* list_dir */
	assert_int_equal(parse_ctx("{\"type\":\"list_dir\",\"path\":\"/srv\"}", AGENT_CTX_REQUEST,
				   &m, &err),
			 AGENT_OK);
	assert_int_equal(m.u.file.depth, 1);
	assert_int_equal(m.u.file.limit, AGENT_LIST_LIMIT_DEFAULT);
	agent_msg_free(&m);
	assert_int_equal(
		REQ("{\"type\":\"list_dir\",\"path\":\"/srv\",\"depth\":32,\"limit\":1000000}"),
		AGENT_OK);
	assert_int_equal(REQ("{\"type\":\"list_dir\",\"path\":\"/srv\",\"depth\":0}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"list_dir\",\"path\":\"/srv\",\"depth\":33}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"list_dir\",\"path\":\"/srv\",\"limit\":0}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"list_dir\",\"path\":\"/srv\",\"limit\":1000001}"),
			 AGENT_E_BAD_FIELD);

	/* mkdir */
	assert_int_equal(parse_ctx("{\"type\":\"mkdir\",\"path\":\"/a/b\",\"parents\":true}",
				   AGENT_CTX_REQUEST, &m, &err),
			 AGENT_OK);
	assert_true(m.u.file.parents);
	assert_int_equal(m.u.file.mode, 0755);
	agent_msg_free(&m);

	/* remove: no spelling of "/" gets through. */
	assert_int_equal(REQ("{\"type\":\"remove\",\"path\":\"/tmp/x\",\"recursive\":true}"),
			 AGENT_OK);
	assert_int_equal(REQ("{\"type\":\"remove\",\"path\":\"/\",\"recursive\":true}"),
			 AGENT_E_UNSAFE_PATH);
	assert_int_equal(REQ("{\"type\":\"remove\",\"path\":\"//\"}"), AGENT_E_UNSAFE_PATH);
	assert_int_equal(REQ("{\"type\":\"remove\",\"path\":\"/./.\"}"), AGENT_E_UNSAFE_PATH);
	assert_int_equal(REQ("{\"type\":\"remove\",\"path\":\"/tmp/..\"}"), AGENT_E_UNSAFE_PATH);
	assert_int_equal(REQ("{\"type\":\"remove\",\"path\":\"/../..\"}"), AGENT_E_UNSAFE_PATH);
	assert_int_equal(REQ("{\"type\":\"remove\",\"path\":\"/tmp/../etc\"}"), AGENT_OK);
	assert_int_equal(REQ("{\"type\":\"remove\",\"path\":\"/tmp\",\"recursive\":\"yes\"}"),
			 AGENT_E_BAD_FIELD);

	/* rename */
	assert_int_equal(parse_ctx("{\"type\":\"rename\",\"from\":\"/tmp/a\",\"to\":\"/tmp/b\"}",
				   AGENT_CTX_REQUEST, &m, &err),
			 AGENT_OK);
	assert_string_equal(m.u.file.path, "/tmp/a");
	assert_string_equal(m.u.file.to, "/tmp/b");
	assert_false(m.u.file.overwrite);
	agent_msg_free(&m);
	assert_int_equal(REQ("{\"type\":\"rename\",\"from\":\"/tmp/a\"}"), AGENT_E_MISSING_FIELD);
	assert_int_equal(REQ("{\"type\":\"rename\",\"from\":\"/tmp/a\",\"to\":\"b\"}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"rename\",\"path\":\"/tmp/a\",\"to\":\"/b\"}"),
			 AGENT_E_UNKNOWN_FIELD);

	/* tar */
	assert_int_equal(REQ("{\"type\":\"tar_upload\",\"path\":\"/home/user/proj\"}"), AGENT_OK);
	assert_int_equal(
		REQ("{\"type\":\"tar_download\",\"path\":\"/home/user/proj\",\"user\":\"root\"}"),
		AGENT_OK);
	assert_int_equal(REQ("{\"type\":\"tar_download\"}"), AGENT_E_MISSING_FIELD);
}

/* configure.trust_ca: one PEM certificate, strictly; "" removes. */
static void test_parse_trust_ca(void **state)
{
	const char *good = TEST_CA_PEM;
	char buf[AGENT_TRUST_CA_MAX + 64], line[4 * AGENT_TRUST_CA_MAX];
	struct agent_msg m;
	struct agent_err err;
	json_t *o;
	char *enc;

	(void)state;
	assert_null(agent_pem_cert_check(good));
	/* Without the last newline too. */
	snprintf(buf, sizeof(buf), "%.*s", (int)strlen(good) - 1, good);
	assert_null(agent_pem_cert_check(buf));

	assert_int_equal(parse_ctx("{\"type\":\"configure\",\"trust_ca\":\"" TEST_CA_PEM_JSON "\"}",
				   AGENT_CTX_REQUEST, &m, &err),
			 AGENT_OK);
	assert_string_equal(m.u.conf.trust_ca, good);
	assert_null(m.u.conf.hostname);
	agent_msg_free(&m);
	assert_int_equal(parse_ctx("{\"type\":\"configure\",\"trust_ca\":\"\"}", AGENT_CTX_REQUEST,
				   &m, &err),
			 AGENT_OK);
	assert_string_equal(m.u.conf.trust_ca, "");
	agent_msg_free(&m);
	assert_int_equal(REQ("{\"type\":\"configure\",\"hostname\":\"a\",\"trust_ca\":\"\"}"),
			 AGENT_OK);
	assert_int_equal(REQ("{\"type\":\"configure\",\"trust_ca\":5}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"configure\",\"trust_ca\":null}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"configure\",\"trust_ca\":\"hello\"}"), AGENT_E_BAD_FIELD);

	/* Each way of not being exactly one certificate. */
	static const char *const bad[] = {
		"-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n", /* no body */
		"-----BEGIN CERTIFICATE-----\nMIIB\n",                      /* no END */
		"-----BEGIN CERTIFICATE-----\nMIIB",
		"-----BEGIN CERTIFICATE-----",
		"-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n",
		"-----BEGIN CERTIFICATE-----\nMIIB\n-----END PRIVATE KEY-----\n",
		"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\nx",
		"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n\n",
		"-----BEGIN CERTIFICATE-----\nMI IB\n-----END CERTIFICATE-----\n",
		"-----BEGIN CERTIFICATE-----\nMIIB\r\n-----END CERTIFICATE-----\n",
		"-----BEGIN CERTIFICATE-----\n\nMIIB\n-----END CERTIFICATE-----\n",
		"-----BEGIN CERTIFICATE-----\nProc-Type: 4\n-----END CERTIFICATE-----\n",
		" -----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
		"-----BEGIN CERTIFICATE-----\r\nMIIB\n-----END CERTIFICATE-----\n",
		"-----BEGIN CERTIFICATE-----\nMII\n-----END CERTIFICATE-----\n", /* not canonical */
		"-----BEGIN CERTIFICATE-----\nMA==\n-----END CERTIFICATE-----\n", /* 0x30 alone */
		"-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n", /* 30 00: empty */
		"-----BEGIN CERTIFICATE-----\nMAIA\n-----END CERTIFICATE-----\n", /* says 2, has 1 */
		"-----BEGIN CERTIFICATE-----\nMIEBAA==\n-----END CERTIFICATE-----\n", /* long form for 1 */
		"-----BEGIN CERTIFICATE-----\nAgEA\n-----END CERTIFICATE-----\n", /* an INTEGER */
		"-----BEGIN CERTIFICATE-----\nMA==\nMA==\n-----END CERTIFICATE-----\n", /* '=' inside */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_non_null(agent_pem_cert_check(bad[i]));
		o = json_pack("{s:s, s:s}", "type", "configure", "trust_ca", bad[i]);
		enc = json_dumps(o, JSON_COMPACT);
		assert_int_equal(REQ(enc), AGENT_E_BAD_FIELD);
		free(enc);
		json_decref(o);
	}
	/* The shape is checked, not X.509 (kiln-init has no TLS library; the
	 * guest's own reject a bad certificate when they load the bundle). */
	assert_null(agent_pem_cert_check(
		"-----BEGIN CERTIFICATE-----\nMAEA\n-----END CERTIFICATE-----\n"));
	/* Two certificates: only one is taken. */
	snprintf(buf, sizeof(buf), "%s%s", good, good);
	assert_non_null(strstr(agent_pem_cert_check(buf), "only one"));
	/* A line over 76 characters. */
	snprintf(buf, sizeof(buf), "-----BEGIN CERTIFICATE-----\n%s\n-----END CERTIFICATE-----\n",
		 "MIIBkTCCATegAwIBAgIUbMvzJj/EbO58zmwtWaG5MUmPQPkwCgYIKoZIzj0EAwIwMIIBkTCCATegAwIB");
	assert_non_null(strstr(agent_pem_cert_check(buf), "76"));
	/* Over the limit: too_large, before any look at the text. */
	memset(buf, 'A', AGENT_TRUST_CA_MAX + 1);
	buf[AGENT_TRUST_CA_MAX + 1] = '\0';
	o = json_pack("{s:s, s:s}", "type", "configure", "trust_ca", buf);
	enc = json_dumps(o, JSON_COMPACT);
	assert_int_equal(parse_ctx(enc, AGENT_CTX_REQUEST, &m, &err), AGENT_E_TOO_LARGE);
	assert_non_null(strstr(err.msg, "8192"));
	free(enc);
	json_decref(o);
	assert_non_null(agent_pem_cert_check(buf));
	/* The message says what is wrong and what to send. */
	snprintf(line, sizeof(line), "{\"type\":\"configure\",\"trust_ca\":\"x\"}");
	assert_int_equal(parse_ctx(line, AGENT_CTX_REQUEST, &m, &err), AGENT_E_BAD_FIELD);
	assert_non_null(strstr(err.msg, "BEGIN CERTIFICATE"));
	assert_non_null(strstr(err.msg, ".pem"));
}

static void test_parse_configure(void **state)
{
	struct agent_msg m;
	struct agent_err err;

	(void)state;
	assert_int_equal(
		parse_ctx("{\"type\":\"configure\",\"hostname\":\"box1\",\"address\":\"10.0.2.15/24\","
			  "\"gateway\":\"10.0.2.2\",\"dns\":[\"10.0.2.3\",\"fd00::3\"],\"mtu\":1500}",
			  AGENT_CTX_REQUEST, &m, &err),
		AGENT_OK);
	assert_string_equal(m.u.conf.hostname, "box1");
	assert_string_equal(m.u.conf.iface, "eth0");
	assert_true(m.u.conf.has_address);
	assert_int_equal(m.u.conf.address.family, AF_INET);
	assert_int_equal(m.u.conf.address.prefix, 24);
	assert_memory_equal(m.u.conf.address.bytes, "\x0a\x00\x02\x0f", 4);
	assert_true(m.u.conf.has_gateway);
	assert_memory_equal(m.u.conf.gateway.bytes, "\x0a\x00\x02\x02", 4);
	assert_int_equal(m.u.conf.dns_n, 2);
	assert_int_equal(m.u.conf.dns[1].family, AF_INET6);
	assert_int_equal(m.u.conf.mtu, 1500);
	agent_msg_free(&m);
	assert_int_equal(
		parse_ctx("{\"type\":\"configure\",\"interface\":\"eth1\",\"address\":\"fd00::2/64\"}",
			  AGENT_CTX_REQUEST, &m, &err),
		AGENT_OK);
	assert_string_equal(m.u.conf.iface, "eth1");
	assert_int_equal(m.u.conf.address.family, AF_INET6);
	assert_int_equal(m.u.conf.address.prefix, 64);
	agent_msg_free(&m);
	assert_int_equal(REQ("{\"type\":\"configure\",\"dns\":[]}"),
			 AGENT_OK); /* clears resolv.conf */

	assert_int_equal(REQ("{\"type\":\"configure\"}"), AGENT_E_MISSING_FIELD);
	/* An interface alone configures nothing. */
	assert_int_equal(REQ("{\"type\":\"configure\",\"interface\":\"eth0\"}"),
			 AGENT_E_MISSING_FIELD);
	assert_int_equal(REQ("{\"type\":\"configure\",\"interface\":\"eth0\",\"hostname\":\"a\"}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"configure\",\"hostname\":\"-bad\"}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"configure\",\"hostname\":\"bad-\"}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"configure\",\"hostname\":\"a..b\"}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"configure\",\"hostname\":\"a_b\"}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"configure\",\"hostname\":\"\"}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"configure\",\"hostname\":\"a b\"}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"configure\",\"hostname\":\"a.b-c.d9\"}"), AGENT_OK);
	assert_int_equal(REQ("{\"type\":\"configure\",\"hostname\":"
			     "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}"),
			 AGENT_E_BAD_FIELD); /* 65 bytes */
	assert_int_equal(REQ("{\"type\":\"configure\",\"hostname\":5}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"configure\",\"interface\":\"eth0/x\",\"mtu\":1500}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"configure\",\"interface\":\"..\",\"mtu\":1500}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(
		REQ("{\"type\":\"configure\",\"interface\":\"averyveryverylong\",\"mtu\":1500}"),
		AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"configure\",\"address\":\"10.0.2.15\"}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"configure\",\"address\":\"10.0.2.15/33\"}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"configure\",\"address\":\"10.0.2.15/\"}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"configure\",\"address\":\"10.0.2.15/2x\"}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"configure\",\"address\":\"10.0.2/24\"}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"configure\",\"address\":\"fd00::2/129\"}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"configure\",\"gateway\":\"10.0.2.2/24\"}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(
		REQ("{\"type\":\"configure\",\"address\":\"10.0.2.15/24\",\"gateway\":\"fd00::1\"}"),
		AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"configure\",\"dns\":\"1.1.1.1\"}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"configure\",\"dns\":[\"dns.google\"]}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"configure\",\"dns\":[1]}"), AGENT_E_BAD_FIELD);
	assert_int_equal(
		REQ("{\"type\":\"configure\",\"dns\":[\"1.1.1.1\",\"1.0.0.1\",\"8.8.8.8\",\"9.9.9.9\"]}"),
		AGENT_E_TOO_LARGE);
	assert_int_equal(REQ("{\"type\":\"configure\",\"mtu\":67}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"configure\",\"mtu\":65536}"), AGENT_E_BAD_FIELD);
}

static void test_parse_clock_shutdown(void **state)
{
	struct agent_msg m;
	struct agent_err err;

	(void)state;
	assert_int_equal(parse_ctx("{\"type\":\"sync_clock\",\"time_ns\":1732312345123456789}",
				   AGENT_CTX_REQUEST, &m, &err),
			 AGENT_OK);
	assert_true(m.u.clock.time_ns == 1732312345123456789LL);
	assert_null(m.u.clock.entropy);
	agent_msg_free(&m);
	assert_int_equal(
		parse_ctx("{\"type\":\"sync_clock\",\"time_ns\":1732312345123456789,\"entropy\":\"00ff7A\"}",
			  AGENT_CTX_REQUEST, &m, &err),
		AGENT_OK);
	assert_string_equal(m.u.clock.entropy, "00ff7A");
	agent_msg_free(&m);
	/* entropy: even count of hex digits, 1..64 bytes. */
	assert_int_equal(
		REQ("{\"type\":\"sync_clock\",\"time_ns\":946684800000000000,\"entropy\":\"\"}"),
		AGENT_E_BAD_FIELD);
	assert_int_equal(
		REQ("{\"type\":\"sync_clock\",\"time_ns\":946684800000000000,\"entropy\":\"abc\"}"),
		AGENT_E_BAD_FIELD);
	assert_int_equal(
		REQ("{\"type\":\"sync_clock\",\"time_ns\":946684800000000000,\"entropy\":\"zz\"}"),
		AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"sync_clock\",\"time_ns\":946684800000000000,\"entropy\":12}"),
			 AGENT_E_BAD_FIELD);
	{
		char req[256], hex[131];

		memset(hex, 'a', 130);
		hex[130] = 0; /* 65 bytes: one too many */
		snprintf(req, sizeof(req),
			 "{\"type\":\"sync_clock\",\"time_ns\":946684800000000000,\"entropy\":\"%s\"}",
			 hex);
		assert_int_equal(REQ(req), AGENT_E_BAD_FIELD);
		hex[128] = 0; /* 64 bytes */
		snprintf(req, sizeof(req),
			 "{\"type\":\"sync_clock\",\"time_ns\":946684800000000000,\"entropy\":\"%s\"}",
			 hex);
		assert_int_equal(REQ(req), AGENT_OK);
	}
	assert_int_equal(REQ("{\"type\":\"sync_clock\"}"), AGENT_E_MISSING_FIELD);
	assert_int_equal(REQ("{\"type\":\"sync_clock\",\"time_ns\":0}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"sync_clock\",\"time_ns\":-1}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"sync_clock\",\"time_ns\":1.7e18}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"sync_clock\",\"time_ns\":4102444800000000001}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"sync_clock\",\"time_ns\":946684800000000000}"), AGENT_OK);

	assert_int_equal(parse_ctx("{\"type\":\"shutdown\"}", AGENT_CTX_REQUEST, &m, &err),
			 AGENT_OK);
	assert_int_equal(m.u.grace_ms, AGENT_GRACE_DEFAULT_MS);
	agent_msg_free(&m);
	assert_int_equal(REQ("{\"type\":\"shutdown\",\"grace_ms\":60000}"), AGENT_OK);
	assert_int_equal(REQ("{\"type\":\"shutdown\",\"grace_ms\":60001}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"shutdown\",\"reboot\":true}"), AGENT_E_UNKNOWN_FIELD);
}

static void test_parse_tcp_connect(void **state)
{
	struct agent_msg m;
	struct agent_err err;

	(void)state;
	assert_int_equal(parse_ctx("{\"type\":\"tcp_connect\",\"port\":8080}", AGENT_CTX_REQUEST,
				   &m, &err),
			 AGENT_OK);
	assert_int_equal(m.type, AGENT_T_TCP_CONNECT);
	assert_int_equal(m.u.tcp.port, 8080);
	assert_int_equal(m.u.tcp.family, AF_INET);
	assert_string_equal(m.u.tcp.address, "127.0.0.1");
	agent_msg_free(&m);
	assert_int_equal(parse_ctx("{\"type\":\"tcp_connect\",\"port\":65535,\"address\":\"::1\"}",
				   AGENT_CTX_REQUEST, &m, &err),
			 AGENT_OK);
	assert_int_equal(m.u.tcp.port, 65535);
	assert_int_equal(m.u.tcp.family, AF_INET6);
	assert_string_equal(m.u.tcp.address, "::1");
	agent_msg_free(&m);
	assert_int_equal(REQ("{\"type\":\"tcp_connect\",\"port\":1,\"address\":\"127.0.0.1\"}"),
			 AGENT_OK);

	assert_int_equal(parse_ctx("{\"type\":\"tcp_connect\"}", AGENT_CTX_REQUEST, &m, &err),
			 AGENT_E_MISSING_FIELD);
	assert_string_equal(err.msg, "tcp_connect: missing required field 'port' (integer)");
	assert_int_equal(REQ("{\"type\":\"tcp_connect\",\"port\":0}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"tcp_connect\",\"port\":65536}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"tcp_connect\",\"port\":-80}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"tcp_connect\",\"port\":80.0}"), AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"tcp_connect\",\"port\":\"80\"}"), AGENT_E_BAD_FIELD);
	/* The guest's loopback only: never a proxy onto the guest's network. */
	assert_int_equal(parse_ctx("{\"type\":\"tcp_connect\",\"port\":80,\"address\":\"10.0.2.2\"}",
				   AGENT_CTX_REQUEST, &m, &err),
			 AGENT_E_BAD_FIELD);
	assert_string_equal(
		err.msg,
		"tcp_connect: 'address' must be \"127.0.0.1\" or \"::1\" (the guest's loopback), got '10.0.2.2'");
	assert_int_equal(REQ("{\"type\":\"tcp_connect\",\"port\":80,\"address\":\"localhost\"}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"tcp_connect\",\"port\":80,\"address\":\"127.0.0.2\"}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"tcp_connect\",\"port\":80,\"address\":\"0:0:0:0:0:0:0:1\"}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"tcp_connect\",\"port\":80,\"address\":1}"),
			 AGENT_E_BAD_FIELD);
	/* Unknown fields, a payload, the wrong context: as for every request. */
	assert_int_equal(parse_ctx("{\"type\":\"tcp_connect\",\"port\":80,\"host\":\"::1\"}",
				   AGENT_CTX_REQUEST, &m, &err),
			 AGENT_E_UNKNOWN_FIELD);
	assert_string_equal(err.msg, "tcp_connect: unknown field 'host'");
	assert_int_equal(REQ("{\"type\":\"tcp_connect\",\"port\":80,\"len\":5}"),
			 AGENT_E_BAD_FIELD);
	assert_int_equal(REQ("{\"type\":\"tcp_connect\",\"port\":80,\"len\":0}"), AGENT_OK);
	assert_int_equal(ATT("{\"type\":\"tcp_connect\",\"port\":80}"), AGENT_E_UNEXPECTED_TYPE);
	assert_int_equal(UPL("{\"type\":\"tcp_connect\",\"port\":80}"), AGENT_E_UNEXPECTED_TYPE);
	assert_string_equal(agent_type_name(AGENT_T_TCP_CONNECT), "tcp_connect");
}

/* The framer and the parser together, as the agent runs them on an upload. */
static void test_upload_through_framer(void **state)
{
	static const char s[] =
		"{\"type\":\"write\",\"path\":\"/home/user/a.bin\",\"mode\":384,\"len\":4}\nabcd"
		"{\"type\":\"data\",\"len\":3}\nefg"
		"{\"type\":\"end\"}\n";
	static const enum agent_type want[] = { AGENT_T_WRITE, AGENT_T_DATA, AGENT_T_END };
	struct agent_frame f;
	struct agent_event ev;
	const char *p = s;
	size_t n = sizeof(s) - 1, got = 0, payload = 0;
	enum agent_ctx ctx = AGENT_CTX_REQUEST;

	(void)state;
	agent_frame_init(&f);
	while (n) {
		size_t used = agent_frame_feed(&f, p, n, &ev);

		assert_int_not_equal(ev.kind, AGENT_EV_ERROR);
		if (ev.kind == AGENT_EV_HEADER) {
			struct agent_msg m;
			struct agent_err err;

			assert_int_equal(agent_msg_parse(ev.header, ctx, &m, &err), AGENT_OK);
			json_decref(ev.header); /* m keeps its own reference */
			assert_int_equal(m.type, want[got]);
			if (m.type == AGENT_T_WRITE)
				assert_int_equal(m.u.file.mode, 0600);
			got++;
			ctx = AGENT_CTX_UPLOAD;
			agent_msg_free(&m);
		} else if (ev.kind == AGENT_EV_PAYLOAD) {
			payload += ev.data_len;
		}
		p += used;
		n -= used;
	}
	assert_int_equal(got, 3);
	assert_int_equal(payload, 7);
	agent_frame_free(&f);
}

/* ---- reply lines ---- */

static void assert_line(int r, struct agent_line *l, const char *want)
{
	assert_int_equal(r, 0);
	assert_non_null(l->data);
	assert_int_equal(l->len, strlen(want));
	assert_memory_equal(l->data, want, l->len);
	agent_line_free(l);
	assert_null(l->data);
}

static void test_line_error(void **state)
{
	struct agent_line l;
	struct agent_err err;

	(void)state;
	assert_line(
		agent_line_error(&l, AGENT_E_UNKNOWN_TYPE,
				 "unknown message type '%s'; see docs/agent-protocol.md for the list",
				 "launch_missiles"),
		&l,
		"{\"type\":\"error\",\"code\":\"unknown_type\",\"message\":\"unknown message type "
		"'launch_missiles'; see docs/agent-protocol.md for the list\"}\n");
	/* Quotes and control characters are escaped; the line stays one line. */
	assert_line(
		agent_line_error(&l, AGENT_E_NOT_FOUND, "no \"%s\"\nhere", "a/b"), &l,
		"{\"type\":\"error\",\"code\":\"not_found\",\"message\":\"no \\\"a/b\\\"\\nhere\"}\n");
	/* A file name from disk that is not UTF-8 still gives valid JSON. */
	assert_line(agent_line_error(&l, AGENT_E_IO_ERROR, "read '/tmp/%s': I/O error", "\xff\xfe"),
		    &l,
		    "{\"type\":\"error\",\"code\":\"io_error\",\"message\":\"read '/tmp/\xef\xbf\xbd\xef\xbf\xbd': "
		    "I/O error\"}\n");
	/* Not a code: never an "ok" error. */
	assert_line(agent_line_error(&l, AGENT_OK, "x"), &l,
		    "{\"type\":\"error\",\"code\":\"io_error\",\"message\":\"x\"}\n");
	assert_line(agent_line_error(&l, (enum agent_code)999, "x"), &l,
		    "{\"type\":\"error\",\"code\":\"io_error\",\"message\":\"x\"}\n");
	/* A parse error goes out unchanged. */
	assert_int_equal(parse_ctx("{\"type\":\"ping\",\"verbose\":true}", AGENT_CTX_REQUEST,
				   &(struct agent_msg){ 0 }, &err),
			 AGENT_E_UNKNOWN_FIELD);
	assert_line(
		agent_line_err(&l, &err), &l,
		"{\"type\":\"error\",\"code\":\"unknown_field\",\"message\":\"ping: unknown field 'verbose'\"}\n");
	/* Messages are bounded. */
	{
		char big[2000];

		memset(big, 'x', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		assert_int_equal(agent_line_error(&l, AGENT_E_BUSY, "%s", big), 0);
		assert_true(l.len < AGENT_ERR_MESSAGE_MAX + 64);
		agent_line_free(&l);
	}
}

static void test_line_simple(void **state)
{
	struct agent_line l;
	const struct agent_kv ok_bytes[] = { AGENT_INT("bytes", 7) };
	const struct agent_kv end_list[] = { AGENT_INT("count", 2), AGENT_BOOL("truncated", false),
					     AGENT_INT("skipped", 0) };
	const struct agent_kv clock[] = { AGENT_INT("delta_ns", -5) };

	(void)state;
	assert_line(agent_line_ok(&l, NULL, 0), &l, "{\"type\":\"ok\"}\n");
	assert_line(agent_line_ok(&l, ok_bytes, 1), &l, "{\"type\":\"ok\",\"bytes\":7}\n");
	assert_line(agent_line_ok(&l, clock, 1), &l, "{\"type\":\"ok\",\"delta_ns\":-5}\n");
	assert_line(agent_line_end(&l, end_list, 3), &l,
		    "{\"type\":\"end\",\"count\":2,\"truncated\":false,\"skipped\":0}\n");
	assert_line(agent_line_pong(&l), &l, "{\"type\":\"pong\",\"protocol\":1}\n");
	assert_line(agent_line_chunk(&l, AGENT_STDOUT, -1, 10), &l,
		    "{\"type\":\"stdout\",\"len\":10}\n");
	assert_line(agent_line_chunk(&l, AGENT_STDERR, 17, 6), &l,
		    "{\"type\":\"stderr\",\"seq\":17,\"len\":6}\n");
	assert_line(agent_line_chunk(&l, AGENT_DATA, -1, 3), &l, "{\"type\":\"data\",\"len\":3}\n");
	assert_int_equal(agent_line_chunk(&l, AGENT_DATA, -1, AGENT_LEN_MAX + 1), -EINVAL);
	assert_line(agent_line_gap(&l, 0, 995904), &l,
		    "{\"type\":\"gap\",\"seq\":0,\"bytes\":995904}\n");
	assert_line(agent_line_spawned(&l, 1, 61), &l,
		    "{\"type\":\"spawned\",\"id\":1,\"pid\":61}\n");
	assert_line(
		agent_line_attached(&l, 1, 61, true, true, 0), &l,
		"{\"type\":\"attached\",\"id\":1,\"pid\":61,\"pty\":true,\"running\":true,\"seq\":0}\n");
	assert_line(agent_line_file(&l, 5), &l, "{\"type\":\"file\",\"size\":5}\n");
	assert_line(agent_line_exists(&l, false, 0), &l,
		    "{\"type\":\"exists\",\"exists\":false}\n");
	assert_line(agent_line_exists(&l, true, 0040755), &l,
		    "{\"type\":\"exists\",\"exists\":true,\"kind\":\"dir\"}\n");
}

static void test_line_info_exit(void **state)
{
	struct agent_line l;
	const struct agent_info info = {
		.kernel = "6.1.0-kiln",
		.hostname = "kiln",
		.cpus = 2,
		.mem_total = 130023424,
		.mem_available = 110100480,
		.uptime_ms = 412,
		.time_ns = 1732312345123456789LL,
	};
	struct agent_exit e = {
		.pid = 57,
		.exit_code = 3,
		.stdout_bytes = 10,
		.stderr_bytes = 5,
		.is_exec = true,
		.wall_us = 1830,
		.user_us = 412,
		.sys_us = 907,
	};

	(void)state;
	assert_line(agent_line_info(&l, &info), &l,
		    "{\"type\":\"info\",\"protocol\":1,\"agent_version\":\"" KILN_VERSION "\","
		    "\"kernel\":\"6.1.0-kiln\",\"hostname\":\"kiln\",\"cpus\":2,\"mem_total\":130023424,"
		    "\"mem_available\":110100480,\"uptime_ms\":412,\"time_ns\":1732312345123456789,"
		    "\"processes\":0}\n");
	assert_line(agent_line_exit(&l, &e), &l,
		    "{\"type\":\"exit\",\"pid\":57,\"exit_code\":3,\"signal\":null,\"timed_out\":false,"
		    "\"stdout_bytes\":10,\"stderr_bytes\":5,\"stdout_truncated\":false,"
		    "\"stderr_truncated\":false,\"wall_us\":1830,\"user_us\":412,\"sys_us\":907}\n");
	/* A timeout: 124, no signal, flagged. */
	e.exit_code = 124;
	e.timed_out = true;
	e.stdout_truncated = true;
	assert_line(agent_line_exit(&l, &e), &l,
		    "{\"type\":\"exit\",\"pid\":57,\"exit_code\":124,\"signal\":null,\"timed_out\":true,"
		    "\"stdout_bytes\":10,\"stderr_bytes\":5,\"stdout_truncated\":true,"
		    "\"stderr_truncated\":false,\"wall_us\":1830,\"user_us\":412,\"sys_us\":907}\n");
	/* A spawned process killed by a signal: id, no truncation flags. */
	e = (struct agent_exit){ .id = 3, .pid = 64, .exit_code = -1, .signo = 15, .wall_us = 2 };
	assert_line(agent_line_exit(&l, &e), &l,
		    "{\"type\":\"exit\",\"id\":3,\"pid\":64,\"exit_code\":null,\"signal\":15,"
		    "\"timed_out\":false,\"stdout_bytes\":0,\"stderr_bytes\":0,\"wall_us\":2,"
		    "\"user_us\":0,\"sys_us\":0}\n");
}

static void test_line_stat(void **state)
{
	struct agent_line l;
	struct agent_stat st = {
		.path = "/bin/sh",
		.path_len = 7,
		.st_mode = 0120777,
		.size = 7,
		.nlink = 1,
		.mtime_ns = 1732300000000000000LL,
		.target = "busybox",
		.target_len = 7,
	};

	(void)state;
	assert_line(
		agent_line_stat(&l, &st, false), &l,
		"{\"type\":\"stat\",\"path\":\"/bin/sh\",\"kind\":\"symlink\",\"size\":7,\"mode\":511,"
		"\"uid\":0,\"gid\":0,\"nlink\":1,\"mtime_ns\":1732300000000000000,\"target\":\"busybox\"}\n");
	st = (struct agent_stat){ .path = "/srv/app/main.py",
				  .path_len = 16,
				  .depth = 2,
				  .st_mode = 0100644,
				  .size = 12,
				  .uid = 1000,
				  .gid = 1000,
				  .nlink = 1,
				  .mtime_ns = 1 };
	assert_line(agent_line_stat(&l, &st, true), &l,
		    "{\"type\":\"entry\",\"path\":\"/srv/app/main.py\",\"depth\":2,\"kind\":\"file\",\"size\":12,"
		    "\"mode\":420,\"uid\":1000,\"gid\":1000,\"nlink\":1,\"mtime_ns\":1}\n");
	/* A name that is not UTF-8: replaced and flagged, still one valid line. */
	st = (struct agent_stat){
		.path = "/tmp/a\xff", .path_len = 7, .depth = 1, .st_mode = 0010600
	};
	assert_line(
		agent_line_stat(&l, &st, true), &l,
		"{\"type\":\"entry\",\"path\":\"/tmp/a\xef\xbf\xbd\",\"lossy\":true,\"depth\":1,"
		"\"kind\":\"fifo\",\"size\":0,\"mode\":384,\"uid\":0,\"gid\":0,\"nlink\":0,\"mtime_ns\":0}\n");
	assert_string_equal(agent_kind_name(0140000), "socket");
	assert_string_equal(agent_kind_name(0020000), "char");
	assert_string_equal(agent_kind_name(0060000), "block");
	assert_string_equal(agent_kind_name(0), "unknown");
}

static void test_line_process(void **state)
{
	struct agent_line l;
	const char *argv[] = { "sleep", "100" };
	struct agent_process_info p = {
		.id = 3,
		.pid = 64,
		.argv = argv,
		.argc = 2,
		.exit_code = -1,
		.signo = 15,
	};
	char **big;
	size_t n = 100;

	(void)state;
	assert_line(agent_line_process(&l, &p), &l,
		    "{\"type\":\"process\",\"id\":3,\"pid\":64,\"argv\":[\"sleep\",\"100\"],\"pty\":false,"
		    "\"running\":false,\"exit_code\":null,\"signal\":15,\"timed_out\":false,\"seq\":0,"
		    "\"attached\":0}\n");
	/* An argv near the request limit: the line falls back to argv0. */
	big = calloc(n, sizeof(*big));
	assert_non_null(big);
	for (size_t i = 0; i < n; i++) {
		big[i] = malloc(1000);
		assert_non_null(big[i]);
		memset(big[i], 'a' + (int)(i % 26), 999);
		big[i][999] = '\0';
	}
	big[0][5] = '\0';
	p = (struct agent_process_info){ .id = 4,
					 .pid = 65,
					 .argv = (const char *const *)big,
					 .argc = n,
					 .running = true,
					 .exit_code = -1 };
	assert_line(agent_line_process(&l, &p), &l,
		    "{\"type\":\"process\",\"id\":4,\"pid\":65,\"argv0\":\"aaaaa\",\"argv_truncated\":true,"
		    "\"pty\":false,\"running\":true,\"exit_code\":null,\"signal\":null,\"timed_out\":false,"
		    "\"seq\":0,\"attached\":0}\n");
	for (size_t i = 0; i < n; i++)
		free(big[i]);
	free(big);
}

/* No line the agent sends may exceed the header limit. */
static void test_line_limit(void **state)
{
	struct agent_line l;
	json_t *o = json_object();
	char *s = malloc(AGENT_HEADER_MAX);

	(void)state;
	assert_non_null(s);
	/* {"s":"..."} is 8 bytes + the string; + '\n'. */
	memset(s, 'x', AGENT_HEADER_MAX - 9);
	s[AGENT_HEADER_MAX - 9] = '\0';
	json_object_set_new(o, "s", json_string(s));
	assert_int_equal(agent_line_json(&l, o), 0);
	assert_int_equal(l.len, AGENT_HEADER_MAX);
	assert_int_equal(l.data[l.len - 1], '\n');
	agent_line_free(&l);
	s[AGENT_HEADER_MAX - 9] = 'x';
	s[AGENT_HEADER_MAX - 8] = '\0';
	json_object_set_new(o, "s", json_string(s));
	assert_int_equal(agent_line_json(&l, o), -E2BIG);
	assert_null(l.data);
	json_decref(o);
	free(s);
}

/* What the agent sends, the host's framer reads back. */
static void test_line_roundtrip(void **state)
{
	struct agent_line l;
	struct agent_frame f;
	struct agent_event ev;

	(void)state;
	assert_int_equal(agent_line_error(&l, AGENT_E_BAD_JSON, "bad \xc3\x28 byte"), 0);
	agent_frame_init(&f);
	assert_int_equal(agent_frame_feed(&f, l.data, l.len, &ev), l.len);
	assert_int_equal(ev.kind, AGENT_EV_HEADER);
	assert_string_equal(json_string_value(json_object_get(ev.header, "code")), "bad_json");
	assert_string_equal(json_string_value(json_object_get(ev.header, "message")),
			    "bad \xef\xbf\xbd( byte");
	json_decref(ev.header);
	agent_frame_free(&f);
	agent_line_free(&l);
}

/* ---- small pieces ---- */

static void test_codes(void **state)
{
	(void)state;
	for (int c = 0; c < AGENT_CODE_COUNT; c++) {
		const char *n = agent_code_name((enum agent_code)c);

		assert_non_null(n);
		for (const char *p = n; *p; p++)
			assert_true((*p >= 'a' && *p <= 'z') || *p == '_');
		for (int d = 0; d < c; d++)
			assert_string_not_equal(n, agent_code_name((enum agent_code)d));
	}
	assert_null(agent_code_name(AGENT_CODE_COUNT));
	assert_int_equal(agent_errno_code(ENOENT), AGENT_E_NOT_FOUND);
	assert_int_equal(agent_errno_code(-ENOENT), AGENT_E_NOT_FOUND);
	assert_int_equal(agent_errno_code(ESRCH), AGENT_E_NOT_FOUND);
	assert_int_equal(agent_errno_code(EEXIST), AGENT_E_EXISTS);
	assert_int_equal(agent_errno_code(ENOTDIR), AGENT_E_NOT_DIRECTORY);
	assert_int_equal(agent_errno_code(EISDIR), AGENT_E_IS_DIRECTORY);
	assert_int_equal(agent_errno_code(ENOTEMPTY), AGENT_E_NOT_EMPTY);
	assert_int_equal(agent_errno_code(EACCES), AGENT_E_PERMISSION_DENIED);
	assert_int_equal(agent_errno_code(EPERM), AGENT_E_PERMISSION_DENIED);
	assert_int_equal(agent_errno_code(EROFS), AGENT_E_READ_ONLY);
	assert_int_equal(agent_errno_code(ENOSPC), AGENT_E_NO_SPACE);
	assert_int_equal(agent_errno_code(EDQUOT), AGENT_E_NO_SPACE);
	assert_int_equal(agent_errno_code(EMFILE), AGENT_E_BUSY);
	assert_int_equal(agent_errno_code(ENOMEM), AGENT_E_BUSY);
	assert_int_equal(agent_errno_code(EBUSY), AGENT_E_BUSY);
	assert_int_equal(agent_errno_code(ETIMEDOUT), AGENT_E_TIMEOUT);
	assert_int_equal(agent_errno_code(ECONNREFUSED), AGENT_E_REFUSED);
	assert_string_equal(agent_code_name(AGENT_E_REFUSED), "refused");
	assert_int_equal(agent_errno_code(EXDEV), AGENT_E_IO_ERROR);
	assert_int_equal(agent_errno_code(EIO), AGENT_E_IO_ERROR);
	assert_int_equal(agent_errno_code(0), AGENT_E_IO_ERROR);
}

/* Docs move with code: every code and message type is in the document. */
static void test_documented(void **state)
{
	FILE *fp = fopen("docs/agent-protocol.md", "r");
	char *doc, key[64];
	long n;

	(void)state;
	if (!fp)
		skip(); /* run from outside the checkout */
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	doc = malloc((size_t)n + 1);
	assert_non_null(doc);
	assert_int_equal(fread(doc, 1, (size_t)n, fp), n);
	doc[n] = '\0';
	fclose(fp);
	for (int c = 1; c < AGENT_CODE_COUNT; c++) {
		snprintf(key, sizeof(key), "| `%s` |", agent_code_name((enum agent_code)c));
		if (!strstr(doc, key))
			fail_msg("error code %s is not in docs/agent-protocol.md", key);
	}
	for (int t = 0; t < AGENT_TYPE_COUNT; t++) {
		snprintf(key, sizeof(key), "{\"type\":\"%s\"", agent_type_name((enum agent_type)t));
		if (!strstr(doc, key))
			fail_msg("message %s has no example in docs/agent-protocol.md", key);
	}
	free(doc);
}

/* The guest serves the file messages in one place; the message table
 * says which they are, and nothing else is one. */
static void test_type_is_file(void **state)
{
	static const char *const files[] = { "read",       "write",       "stat",   "exists",
					     "list_dir",   "mkdir",       "remove", "rename",
					     "tar_upload", "tar_download" };
	int n = 0;

	(void)state;
	for (int t = 0; t < AGENT_TYPE_COUNT; t++) {
		bool want = false;

		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
			want |= strcmp(agent_type_name((enum agent_type)t), files[i]) == 0;
		assert_int_equal(agent_type_is_file((enum agent_type)t), want);
		n += want;
	}
	assert_int_equal(n, 10);
	assert_false(agent_type_is_file(AGENT_TYPE_COUNT));
	assert_false(agent_type_is_file((enum agent_type) - 1));
}

static void test_validators(void **state)
{
	struct agent_addr a;

	(void)state;
	assert_int_equal(agent_parse_cidr("192.168.1.7/0", &a), 0);
	assert_int_equal(a.prefix, 0);
	assert_int_equal(agent_parse_cidr("::/128", &a), 0);
	assert_int_equal(a.family, AF_INET6);
	assert_int_equal(agent_parse_cidr("/24", &a), -EINVAL);
	assert_int_equal(agent_parse_cidr("1.2.3.4/0024", &a), -EINVAL);
	assert_int_equal(agent_parse_cidr("1.2.3.4/-1", &a), -EINVAL);
	assert_int_equal(agent_parse_cidr("1.2.3.4/24/1", &a), -EINVAL);
	assert_int_equal(agent_parse_ip("1.2.3.4 ", &a), -EINVAL);
	assert_int_equal(agent_parse_ip("", &a), -EINVAL);
	assert_true(agent_hostname_valid("kiln"));
	assert_false(agent_hostname_valid("a."));
	assert_false(agent_hostname_valid(".a"));
	assert_true(agent_ifname_valid("eth0"));
	assert_false(agent_ifname_valid(""));
	assert_false(agent_ifname_valid("a b"));
	assert_true(agent_path_is_root("/"));
	assert_true(agent_path_is_root("/a/b/../.."));
	assert_false(agent_path_is_root("/a/b/.."));
	assert_false(agent_path_is_root("/..a"));
	assert_int_equal(agent_signal_by_name("SIGHUP"), 1);
	assert_int_equal(agent_signal_by_name("STKFLT"), 16);
	assert_int_equal(agent_signal_by_name("SIGSIGTERM"), 0);
	assert_int_equal(agent_signal_by_name(""), 0);
}

/* The agent's run message: language and code_len within len. */
static void test_agent_run_message(void **state)
{
	static const struct {
		const char *line;
		enum agent_code code;
	} bad[] = {
		{ "{\"type\":\"run\",\"code_len\":0}", AGENT_E_MISSING_FIELD },
		{ "{\"type\":\"run\",\"language\":\"cobol\",\"code_len\":0}", AGENT_E_BAD_FIELD },
		{ "{\"type\":\"run\",\"language\":\"python\"}", AGENT_E_MISSING_FIELD },
		{ "{\"type\":\"run\",\"language\":\"python\",\"code_len\":5,\"len\":4}",
		  AGENT_E_BAD_FIELD },
		{ "{\"type\":\"run\",\"language\":\"python\",\"code_len\":-1}", AGENT_E_BAD_FIELD },
		{ "{\"type\":\"run\",\"language\":\"python\",\"code_len\":0,\"argv\":[\"sh\"]}",
		  AGENT_E_UNKNOWN_FIELD },
		{ "{\"type\":\"run\",\"language\":\"python\",\"code_len\":0,\"shell\":true}",
		  AGENT_E_UNKNOWN_FIELD },
		{ "{\"type\":\"run\",\"language\":\"python\",\"code_len\":0,\"user\":\"x\"}",
		  AGENT_E_BAD_FIELD },
		{ "{\"type\":\"run\",\"language\":\"python\",\"code_len\":0,\"len\":1048577}",
		  AGENT_E_TOO_LARGE },
	};
	struct agent_msg m;
	struct agent_err err;
	const char *ok = "{\"type\":\"run\",\"language\":\"javascript\",\"code_len\":3,\"len\":5,"
			 "\"env\":{\"A\":\"1\"},\"timeout_ms\":9,\"output_cap\":7}";

	(void)state;
	assert_int_equal(agent_msg_parse_line(ok, strlen(ok), AGENT_CTX_REQUEST, &m, &err),
			 AGENT_OK);
	assert_int_equal(m.type, AGENT_T_RUN);
	assert_int_equal(m.u.proc.lang, AGENT_LANG_JAVASCRIPT);
	assert_int_equal(m.u.proc.code_len, 3);
	assert_int_equal(m.len, 5);
	assert_null(m.u.proc.argv);
	assert_int_equal(m.u.proc.envc, 1);
	assert_int_equal(m.u.proc.timeout_ms, 9);
	assert_int_equal(m.u.proc.output_cap, 7);
	agent_msg_free(&m);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		enum agent_code c = agent_msg_parse_line(bad[i].line, strlen(bad[i].line),
							 AGENT_CTX_REQUEST, &m, &err);

		if (c != bad[i].code)
			fail_msg("%s: got %s (%s), want %s", bad[i].line, agent_code_name(c),
				 err.msg, agent_code_name(bad[i].code));
	}
	assert_null(agent_lang_name(AGENT_LANG_NONE));
	assert_null(agent_lang_name(AGENT_LANG_COUNT));
	assert_int_equal(agent_lang_by_name("bash"), AGENT_LANG_BASH);
	assert_int_equal(agent_lang_by_name("sh"), AGENT_LANG_NONE);
}

static void test_agent_result_line(void **state)
{
	struct agent_line l;

	(void)state;
	assert_int_equal(agent_line_result(&l, 12, 12), 0);
	assert_int_equal(l.len, strlen("{\"type\":\"result\",\"size\":12,\"len\":12}\n"));
	assert_memory_equal(l.data, "{\"type\":\"result\",\"size\":12,\"len\":12}\n", l.len);
	agent_line_free(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frame_all_at_once),
		cmocka_unit_test(test_parse_confine),
		cmocka_unit_test(test_confine_cwd_ok),
		cmocka_unit_test(test_frame_every_split),
		cmocka_unit_test(test_frame_binary_payload),
		cmocka_unit_test(test_frame_len_lies),
		cmocka_unit_test(test_frame_eof_cases),
		cmocka_unit_test(test_frame_header_limit),
		cmocka_unit_test(test_frame_bad_json),
		cmocka_unit_test(test_frame_len_field),
		cmocka_unit_test(test_frame_error_after_messages),
		cmocka_unit_test(test_parse_type),
		cmocka_unit_test(test_parse_context),
		cmocka_unit_test(test_parse_unknown_field_and_len),
		cmocka_unit_test(test_parse_exec),
		cmocka_unit_test(test_parse_exec_bad),
		cmocka_unit_test(test_parse_spawn),
		cmocka_unit_test(test_parse_process_control),
		cmocka_unit_test(test_parse_files),
		cmocka_unit_test(test_parse_configure),
		cmocka_unit_test(test_parse_trust_ca),
		cmocka_unit_test(test_parse_clock_shutdown),
		cmocka_unit_test(test_parse_tcp_connect),
		cmocka_unit_test(test_upload_through_framer),
		cmocka_unit_test(test_line_error),
		cmocka_unit_test(test_line_simple),
		cmocka_unit_test(test_line_info_exit),
		cmocka_unit_test(test_line_stat),
		cmocka_unit_test(test_line_process),
		cmocka_unit_test(test_line_limit),
		cmocka_unit_test(test_line_roundtrip),
		cmocka_unit_test(test_codes),
		cmocka_unit_test(test_documented),
		cmocka_unit_test(test_validators),
		cmocka_unit_test(test_type_is_file),
		cmocka_unit_test(test_agent_run_message),
		cmocka_unit_test(test_agent_result_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
