/*
 * kilnd's file metadata, archive and port requests: body and query
 * validation (exact codes for malformed input), the agent code → HTTP
 * status mapping these endpoints rely on, the stat JSON, and the gzip
 * stream wrapper (round trips, corrupt, truncated, concatenated and
 * padded input, non-gzip bodies, bounded output blocks).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/bodies/files_spec.h"
#include "api/kilnd/core/port_spec.h"
#include "api/proto/gz_stream.h"
#include "api/kilnd/core/query.h"

static json_t *J(const char *text)
{
	json_error_t je;
	json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &je);

	if (!j)
		fail_msg("test JSON does not parse: %s: %s", text, je.text);
	return j;
}

static enum api_code mkdir_code(const char *text, struct mkdir_spec *s)
{
	json_t *j = J(text);
	struct api_err e = { 0 };
	int r = mkdir_spec_parse(j, s, &e);

	json_decref(j);
	return r ? e.code : API_OK;
}

static void test_mkdir_body(void **state)
{
	struct mkdir_spec s;

	(void)state;
	assert_int_equal(mkdir_code("{\"path\":\"/a/b\"}", &s), API_OK);
	assert_false(s.parents);
	assert_int_equal(s.mode, -1);
	assert_int_equal(s.user, AGENT_USER_USER);
	assert_int_equal(mkdir_code("{\"path\":\"/a\",\"parents\":true,\"mode\":448,\"user\":\"root\"}",
				    &s),
			 API_OK);
	assert_true(s.parents);
	assert_int_equal(s.mode, 0700);
	assert_int_equal(s.user, AGENT_USER_ROOT);
	assert_int_equal(mkdir_code("{\"path\":\"/a\",\"mode\":0}", &s), API_OK);
	assert_int_equal(s.mode, 0);

	assert_int_equal(mkdir_code("{}", &s), API_E_MISSING_FIELD);
	assert_int_equal(mkdir_code("{\"path\":\"a/b\"}", &s), API_E_BAD_FIELD);
	assert_int_equal(mkdir_code("{\"path\":\"\"}", &s), API_E_BAD_FIELD);
	assert_int_equal(mkdir_code("{\"path\":7}", &s), API_E_BAD_FIELD);
	assert_int_equal(mkdir_code("{\"path\":\"/a\",\"mode\":4096}", &s), API_E_BAD_FIELD);
	assert_int_equal(mkdir_code("{\"path\":\"/a\",\"mode\":-1}", &s), API_E_BAD_FIELD);
	assert_int_equal(mkdir_code("{\"path\":\"/a\",\"mode\":\"0755\"}", &s), API_E_BAD_FIELD);
	assert_int_equal(mkdir_code("{\"path\":\"/a\",\"parents\":1}", &s), API_E_BAD_FIELD);
	assert_int_equal(mkdir_code("{\"path\":\"/a\",\"user\":\"daemon\"}", &s), API_E_BAD_FIELD);
	assert_int_equal(mkdir_code("{\"path\":\"/a\",\"parent\":true}", &s), API_E_UNKNOWN_FIELD);
}

static void test_long_path_refused(void **state)
{
	size_t n = AGENT_PATH_MAX + 1;
	char *p = malloc(n + 1);
	struct remove_spec s;
	struct api_err e = { 0 };
	json_t *j;

	(void)state;
	memset(p, 'a', n);
	p[0] = '/';
	p[n] = '\0';
	j = json_pack("{s:s}", "path", p);
	assert_int_equal(remove_spec_parse(j, &s, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	json_decref(j);
	p[n - 1] = '\0'; /* exactly AGENT_PATH_MAX bytes: fine */
	j = json_pack("{s:s}", "path", p);
	assert_int_equal(remove_spec_parse(j, &s, &e), 0);
	json_decref(j);
	free(p);
}

static void test_remove_and_rename_bodies(void **state)
{
	struct remove_spec rm;
	struct rename_spec mv;
	struct api_err e = { 0 };
	json_t *j;

	(void)state;
	j = J("{\"path\":\"/tmp/x\",\"recursive\":true}");
	assert_int_equal(remove_spec_parse(j, &rm, &e), 0);
	assert_true(rm.recursive);
	assert_string_equal(rm.path, "/tmp/x");
	json_decref(j);
	j = J("{\"path\":\"/tmp/x\",\"force\":true}");
	assert_int_equal(remove_spec_parse(j, &rm, &e), -1);
	assert_int_equal(e.code, API_E_UNKNOWN_FIELD);
	json_decref(j);

	j = J("{\"from\":\"/a\",\"to\":\"/b\",\"overwrite\":true}");
	assert_int_equal(rename_spec_parse(j, &mv, &e), 0);
	assert_string_equal(mv.from, "/a");
	assert_string_equal(mv.to, "/b");
	assert_true(mv.overwrite);
	json_decref(j);
	j = J("{\"from\":\"/a\"}");
	assert_int_equal(rename_spec_parse(j, &mv, &e), -1);
	assert_int_equal(e.code, API_E_MISSING_FIELD);
	assert_non_null(strstr(e.msg, "'to'"));
	json_decref(j);
	j = J("{\"from\":\"a\",\"to\":\"/b\"}");
	assert_int_equal(rename_spec_parse(j, &mv, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	json_decref(j);
}

static enum api_code port_code(const char *text, struct port_spec *s)
{
	json_t *j = J(text);
	struct api_err e = { 0 };
	int r = port_spec_parse(j, s, &e);

	/* guest_address borrows from the body: keep a static copy. */
	if (r == 0 && s->guest_address)
		s->guest_address = strcmp(s->guest_address, "::1") == 0 ? "::1" : "127.0.0.1";
	json_decref(j);
	return r ? e.code : API_OK;
}

static void test_port_body(void **state)
{
	struct port_spec s;

	(void)state;
	assert_int_equal(port_code("{\"guest_port\":8080}", &s), API_OK);
	assert_int_equal(s.guest_port, 8080);
	assert_int_equal(s.host_port, 0);
	/* A guest TCP port on the loopback is the default. */
	assert_int_equal(s.target, PORT_TARGET_TCP);
	assert_string_equal(s.guest_address, "127.0.0.1");
	assert_string_equal(port_target_name(s.target), "tcp");
	assert_int_equal(port_code("{\"guest_port\":80,\"host_port\":18080}", &s), API_OK);
	assert_int_equal(s.host_port, 18080);
	assert_int_equal(port_code("{\"host_port\":80}", &s), API_E_MISSING_FIELD);
	assert_int_equal(port_code("{\"guest_port\":0}", &s), API_E_BAD_FIELD);
	assert_int_equal(port_code("{\"guest_port\":65536}", &s), API_E_BAD_FIELD);
	assert_int_equal(port_code("{\"guest_port\":80,\"host_port\":70000}", &s), API_E_BAD_FIELD);
	assert_int_equal(port_code("{\"guest_port\":80.0}", &s), API_E_BAD_FIELD);
	assert_int_equal(port_code("{\"guest_port\":80,\"proto\":\"udp\"}", &s),
			 API_E_UNKNOWN_FIELD);

	assert_int_equal(port_code("{\"guest_port\":80,\"target\":\"tcp\",\"guest_address\":\"::1\"}",
				   &s),
			 API_OK);
	assert_int_equal(s.target, PORT_TARGET_TCP);
	assert_string_equal(s.guest_address, "::1");
	assert_int_equal(port_code("{\"guest_port\":80,\"guest_address\":\"10.0.2.15\"}", &s),
			 API_E_BAD_FIELD);
	assert_int_equal(port_code("{\"guest_port\":80,\"guest_address\":\"localhost\"}", &s),
			 API_E_BAD_FIELD);
	assert_int_equal(port_code("{\"guest_port\":80,\"guest_address\":1}", &s), API_E_BAD_FIELD);
	assert_int_equal(port_code("{\"guest_port\":80,\"target\":\"udp\"}", &s), API_E_BAD_FIELD);
	assert_int_equal(port_code("{\"guest_port\":80,\"target\":\"TCP\"}", &s), API_E_BAD_FIELD);
	assert_int_equal(port_code("{\"guest_port\":80,\"target\":null}", &s), API_E_BAD_FIELD);
	/* A bad target is reported before a bad address (the table's order). */
	assert_int_equal(port_code("{\"guest_port\":80,\"guest_address\":5,\"target\":\"x\"}", &s),
			 API_E_BAD_FIELD);

	assert_int_equal(port_code("{\"guest_port\":7070,\"target\":\"vsock\"}", &s), API_OK);
	assert_int_equal(s.target, PORT_TARGET_VSOCK);
	assert_null(s.guest_address);
	assert_string_equal(port_target_name(s.target), "vsock");
	assert_int_equal(
		port_code("{\"guest_port\":7070,\"target\":\"vsock\",\"guest_address\":\"127.0.0.1\"}",
			  &s),
		API_E_BAD_FIELD);
	/* The agent's own vsock port would bypass kilnd's peer check; TCP
	 * port 1024 in the guest is just a port. */
	assert_int_equal(port_code("{\"guest_port\":1024,\"target\":\"vsock\"}", &s),
			 API_E_BAD_FIELD);
	assert_int_equal(port_code("{\"guest_port\":1024}", &s), API_OK);
}

static void test_queries(void **state)
{
	struct query_kv kv[4];
	struct file_list_opts lo;
	struct api_err e = { 0 };
	enum agent_user u;
	const char *path;
	bool follow;

	(void)state;
	kv[0] = (struct query_kv){ "path", "/etc" };
	assert_int_equal(query_file_stat(kv, 1, &path, &follow, &u, &e), 0);
	assert_true(follow);
	kv[1] = (struct query_kv){ "follow", "false" };
	assert_int_equal(query_file_stat(kv, 2, &path, &follow, &u, &e), 0);
	assert_false(follow);
	kv[1] = (struct query_kv){ "depth", "2" };
	assert_int_equal(query_file_stat(kv, 2, &path, &follow, &u, &e), -1);
	assert_int_equal(e.code, API_E_UNKNOWN_FIELD);

	assert_int_equal(query_file_list(kv, 2, &path, &lo, &e), 0);
	assert_int_equal(lo.depth, 2);
	assert_int_equal(lo.limit, AGENT_LIST_LIMIT_DEFAULT);
	kv[2] = (struct query_kv){ "limit", "5" };
	assert_int_equal(query_file_list(kv, 3, &path, &lo, &e), 0);
	assert_int_equal(lo.limit, 5);
	kv[1] = (struct query_kv){ "depth", "33" };
	assert_int_equal(query_file_list(kv, 2, &path, &lo, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	kv[1] = (struct query_kv){ "depth", "0" };
	assert_int_equal(query_file_list(kv, 2, &path, &lo, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	kv[1] = (struct query_kv){ "limit", "1000001" };
	assert_int_equal(query_file_list(kv, 2, &path, &lo, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	kv[1] = (struct query_kv){ "limit", "-1" };
	assert_int_equal(query_file_list(kv, 2, &path, &lo, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	assert_int_equal(query_file_list(kv + 1, 1, &path, &lo, &e), -1);

	kv[1] = (struct query_kv){ "user", "root" };
	assert_int_equal(query_archive(kv, 2, &path, &u, &e), 0);
	assert_int_equal(u, AGENT_USER_ROOT);
	kv[0] = (struct query_kv){ "path", "relative/dir" };
	assert_int_equal(query_archive(kv, 2, &path, &u, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
	assert_int_equal(query_archive(kv + 1, 1, &path, &u, &e), -1);
	assert_int_equal(e.code, API_E_MISSING_FIELD);
	kv[0] = (struct query_kv){ "path", "/x" };
	kv[1] = (struct query_kv){ "path", "/y" };
	assert_int_equal(query_archive(kv, 2, &path, &u, &e), -1);
	assert_int_equal(e.code, API_E_BAD_FIELD);
}

/* The statuses these endpoints promise in docs/api.md. */
static void test_agent_codes_to_status(void **state)
{
	static const struct {
		enum agent_code agent;
		unsigned status;
		const char *name;
	} want[] = {
		{ AGENT_E_NOT_FOUND, 404, "not_found" },
		{ AGENT_E_EXISTS, 409, "exists" },
		{ AGENT_E_NOT_EMPTY, 409, "not_empty" },
		{ AGENT_E_PERMISSION_DENIED, 403, "permission_denied" },
		{ AGENT_E_UNSAFE_PATH, 400, "unsafe_path" },
		{ AGENT_E_BAD_ARCHIVE, 400, "bad_archive" },
		{ AGENT_E_NOT_DIRECTORY, 400, "not_directory" },
		{ AGENT_E_IS_DIRECTORY, 400, "is_directory" },
		{ AGENT_E_READ_ONLY, 409, "read_only" },
		{ AGENT_E_NO_SPACE, 507, "no_space" },
		{ AGENT_E_BUSY, 503, "busy" },
		{ AGENT_E_IO_ERROR, 500, "io_error" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct api_err e;

		/* libkiln names the agent's code; kilnd maps the name. */
		api_err_from_agent_fail(&e, KILN_AGENT_FAIL_AGENT, agent_code_name(want[i].agent),
					"m", "x");
		assert_string_equal(api_code_name(e.code), want[i].name);
		assert_int_equal(api_code_status(e.code), want[i].status);
		assert_string_equal(e.msg, "m");
	}
}

static void test_stat_json(void **state)
{
	struct kiln_file_info st = { .size = sizeof(st),
				     .path = "/bin/sh",
				     .target = "busybox",
				     .kind = KILN_FILE_SYMLINK,
				     .file_size = 7,
				     .mode = 0777,
				     .uid = 0,
				     .gid = 0,
				     .nlink = 1,
				     .mtime_ns = 1732300000123456789LL,
				     .depth = 2 };
	json_t *o = file_stat_json(&st, false);
	char *s;

	(void)state;
	assert_non_null(o);
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(
		s,
		"{\"gid\":0,\"kind\":\"symlink\",\"mode\":511,\"mode_octal\":\"0777\","
		"\"mtime\":\"2024-11-22T18:26:40.123Z\",\"mtime_ns\":1732300000123456789,"
		"\"nlink\":1,\"path\":\"/bin/sh\",\"size\":7,\"target\":\"busybox\",\"uid\":0}");
	free(s);
	json_decref(o);
	st.target = NULL;
	st.kind = KILN_FILE_REGULAR;
	st.lossy = 1;
	st.mtime_ns = -1; /* 1 ns before the epoch: floor, not truncation */
	o = file_stat_json(&st, true);
	assert_int_equal(json_integer_value(json_object_get(o, "depth")), 2);
	assert_true(json_is_true(json_object_get(o, "lossy")));
	assert_null(json_object_get(o, "target"));
	assert_string_equal(json_string_value(json_object_get(o, "mtime")),
			    "1970-01-01T00:00:00.000Z");
	json_decref(o);
}

/* ---- gzip ---- */

struct sink {
	unsigned char *p;
	size_t n, cap;
	size_t max_block;
	int fail_after; /* > 0: fail on that call */
	int calls;
};

static int sink_out(void *arg, const void *data, size_t n)
{
	struct sink *s = arg;

	s->calls++;
	if (s->fail_after && s->calls >= s->fail_after)
		return -ECANCELED;
	if (n > s->max_block)
		s->max_block = n;
	if (s->n + n > s->cap) {
		s->cap = (s->n + n) * 2;
		s->p = realloc(s->p, s->cap);
		assert_non_null(s->p);
	}
	memcpy(s->p + s->n, data, n);
	s->n += n;
	return 0;
}

static void gzip(const void *in, size_t n, struct sink *out)
{
	struct gz_stream g;

	memset(out, 0, sizeof(*out));
	assert_int_equal(gz_enc_init(&g, 6), 0);
	assert_int_equal(gz_enc_write(&g, in, n, sink_out, out), 0);
	assert_int_equal(gz_enc_finish(&g, sink_out, out), 0);
	gz_end(&g);
}

/* Decompress in pieces of `step` bytes; returns the first error or finish's result. */
static int gunzip(const void *in, size_t n, size_t step, struct sink *out, struct gz_stream *g)
{
	const unsigned char *p = in;
	int r = 0;

	memset(out, 0, sizeof(*out));
	assert_int_equal(gz_dec_init(g), 0);
	for (size_t off = 0; off < n && r == 0; off += step)
		r = gz_dec_write(g, p + off, n - off < step ? n - off : step, sink_out, out);
	if (r == 0)
		r = gz_dec_finish(g);
	return r;
}

static unsigned char *pattern(size_t n)
{
	unsigned char *b = malloc(n);
	uint32_t x = 12345;

	assert_non_null(b);
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		/* Half compressible, half noise. */
		b[i] = (i / 4096) % 2 ? (unsigned char)(x >> 16) : (unsigned char)(i % 7);
	}
	return b;
}

static void test_gz_round_trip(void **state)
{
	static const size_t steps[] = { 7, 4096, 1 << 20 };
	size_t n = 3u << 20;
	unsigned char *data = pattern(n);
	struct sink z, out;
	struct gz_stream g;

	(void)state;
	gzip(data, n, &z);
	assert_true(z.n > 18);
	assert_int_equal(z.p[0], 0x1f);
	assert_int_equal(z.p[1], 0x8b);
	assert_true(z.max_block <= GZ_BLOCK);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		assert_int_equal(gunzip(z.p, z.n, steps[i], &out, &g), 0);
		assert_int_equal(out.n, n);
		assert_memory_equal(out.p, data, n);
		assert_true(out.max_block <= GZ_BLOCK);
		gz_end(&g);
		free(out.p);
	}
	free(z.p);
	/* Byte by byte on a small input. */
	gzip(data, 5000, &z);
	assert_int_equal(gunzip(z.p, z.n, 1, &out, &g), 0);
	assert_int_equal(out.n, 5000);
	assert_memory_equal(out.p, data, 5000);
	gz_end(&g);
	free(out.p);
	free(z.p);
	free(data);
}

static void test_gz_empty_payload(void **state)
{
	struct sink z, out;
	struct gz_stream g;

	(void)state;
	gzip("", 0, &z);
	assert_int_equal(gunzip(z.p, z.n, 4096, &out, &g), 0);
	assert_int_equal(out.n, 0);
	gz_end(&g);
	free(out.p);
	free(z.p);
}

struct counter {
	size_t blocks, total;
};

static int count(void *arg, const void *data, size_t k)
{
	struct counter *c = arg;

	(void)data;
	if (k > GZ_BLOCK)
		return -E2BIG;
	c->blocks++;
	c->total += k;
	return 0;
}

/* A bomb: 64 MiB of zeros compress to ~64 KiB; the output still comes
 * out in bounded blocks, for the consumer to pace or refuse. */
static void test_gz_bomb_is_streamed(void **state)
{
	size_t n = 64u << 20;
	unsigned char *zeros = calloc(1, n);
	struct counter c = { 0 };
	struct gz_stream g;
	struct sink z;

	(void)state;
	assert_non_null(zeros);
	gzip(zeros, n, &z);
	free(zeros);
	assert_true(z.n < n / 500);
	assert_int_equal(gz_dec_init(&g), 0);
	assert_int_equal(gz_dec_write(&g, z.p, z.n, count, &c), 0);
	assert_int_equal(gz_dec_finish(&g), 0);
	assert_int_equal(c.total, n);
	assert_true(c.blocks >= n / GZ_BLOCK);
	gz_end(&g);
	free(z.p);
}

static void test_gz_bad_input(void **state)
{
	unsigned char *data = pattern(100000);
	struct sink z, out;
	struct gz_stream g;
	unsigned char *bad;

	(void)state;
	gzip(data, 100000, &z);
	bad = malloc(z.n + 16);
	assert_non_null(bad);

	/* Truncated anywhere: never a clean end. */
	for (size_t cut = 1; cut < z.n; cut += cut < 16 ? 1 : 997) {
		assert_int_equal(gunzip(z.p, z.n - cut, 4096, &out, &g), -EBADMSG);
		assert_non_null(strstr(gz_why(&g), "ends in the middle"));
		gz_end(&g);
		free(out.p);
	}
	/* A flipped byte in the trailer's CRC. */
	memcpy(bad, z.p, z.n);
	bad[z.n - 6] ^= 0x40;
	assert_int_equal(gunzip(bad, z.n, 4096, &out, &g), -EBADMSG);
	gz_end(&g);
	free(out.p);
	/* Not gzip: a plain tar starts with a file name. */
	assert_int_equal(gunzip("hello.txt\0\0\0\0\0\0\0\0\0\0\0\0\0", 22, 4096, &out, &g),
			 -EBADMSG);
	assert_non_null(strstr(gz_why(&g), "not gzip"));
	gz_end(&g);
	free(out.p);
	/* Empty body. */
	assert_int_equal(gunzip("", 0, 4096, &out, &g), -EBADMSG);
	assert_non_null(strstr(gz_why(&g), "empty"));
	gz_end(&g);
	free(out.p);
	/* Trailing garbage after a whole member. */
	memcpy(bad, z.p, z.n);
	memcpy(bad + z.n, "junk", 4);
	assert_int_equal(gunzip(bad, z.n + 4, 4096, &out, &g), -EBADMSG);
	assert_non_null(strstr(gz_why(&g), "trailing"));
	gz_end(&g);
	free(out.p);
	/* NUL padding is fine (gzip(1) accepts it), but nothing after it. */
	memset(bad + z.n, 0, 16);
	assert_int_equal(gunzip(bad, z.n + 16, 4096, &out, &g), 0);
	assert_int_equal(out.n, 100000);
	gz_end(&g);
	free(out.p);
	bad[z.n + 15] = 0x1f;
	assert_int_equal(gunzip(bad, z.n + 16, 4096, &out, &g), -EBADMSG);
	assert_non_null(strstr(gz_why(&g), "padding"));
	gz_end(&g);
	free(out.p);
	/* Writes after a failure keep failing. */
	assert_int_equal(gz_dec_init(&g), 0);
	assert_int_equal(gz_dec_write(&g, "xx", 2, sink_out, &out), -EBADMSG);
	assert_int_equal(gz_dec_write(&g, z.p, z.n, sink_out, &out), -EBADMSG);
	gz_end(&g);
	free(bad);
	free(z.p);
	free(data);
}

static void test_gz_concatenated_members(void **state)
{
	struct sink a, b, out;
	struct gz_stream g;
	unsigned char *both;

	(void)state;
	gzip("first ", 6, &a);
	gzip("second", 6, &b);
	both = malloc(a.n + b.n);
	assert_non_null(both);
	memcpy(both, a.p, a.n);
	memcpy(both + a.n, b.p, b.n);
	for (size_t step = 1; step <= a.n + b.n; step += 5) {
		assert_int_equal(gunzip(both, a.n + b.n, step, &out, &g), 0);
		assert_int_equal(out.n, 12);
		assert_memory_equal(out.p, "first second", 12);
		gz_end(&g);
		free(out.p);
	}
	free(both);
	free(a.p);
	free(b.p);
}

static void test_gz_callback_error_stops(void **state)
{
	unsigned char *data = pattern(1u << 20);
	struct sink z, out;
	struct gz_stream g;

	(void)state;
	gzip(data, 1u << 20, &z);
	memset(&out, 0, sizeof(out));
	out.fail_after = 2;
	assert_int_equal(gz_dec_init(&g), 0);
	assert_int_equal(gz_dec_write(&g, z.p, z.n, sink_out, &out), -ECANCELED);
	assert_int_equal(out.calls, 2);
	gz_end(&g);
	free(out.p);
	/* The encoder passes its callback's error on too. */
	memset(&out, 0, sizeof(out));
	out.fail_after = 1;
	assert_int_equal(gz_enc_init(&g, 6), 0);
	assert_int_equal(gz_enc_write(&g, data, 1u << 20, sink_out, &out), -ECANCELED);
	gz_end(&g);
	gz_end(&g); /* twice is fine */
	free(out.p);
	free(z.p);
	free(data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mkdir_body),
		cmocka_unit_test(test_long_path_refused),
		cmocka_unit_test(test_remove_and_rename_bodies),
		cmocka_unit_test(test_port_body),
		cmocka_unit_test(test_queries),
		cmocka_unit_test(test_agent_codes_to_status),
		cmocka_unit_test(test_stat_json),
		cmocka_unit_test(test_gz_round_trip),
		cmocka_unit_test(test_gz_empty_payload),
		cmocka_unit_test(test_gz_bomb_is_streamed),
		cmocka_unit_test(test_gz_bad_input),
		cmocka_unit_test(test_gz_concatenated_members),
		cmocka_unit_test(test_gz_callback_error_stops),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
