/*
 * What kilnd writes: error bodies, exec results and NDJSON events (guest
 * bytes that are not UTF-8 must still make valid JSON; a character split
 * between chunks stays text), Prometheus text, the kiln-vmm command line
 * (no way to inject kernel parameters or kiln-vmm options), and what it
 * reads back from a dead VMM's console and stderr (hostile bytes, capped).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/core/api_error.h"
#include "api/kilnd/bodies/exec_render.h"
#include "api/kilnd/core/metrics.h"
#include "api/kilnd/supervision/vmm_argv.h"
#include "api/kilnd/supervision/vmm_output.h"
#include "lib/base/base64.h"
#include "lib/base/utf8.h"

#define U(s) ((const uint8_t *)(s))

static void test_utf8(void **state)
{
	(void)state;
	assert_true(utf8_valid(U("héllo €𝄞"), strlen("héllo €𝄞")));
	assert_true(utf8_valid(U(""), 0));
	assert_true(utf8_valid(U("a\0b"), 3));          /* NUL is a character; JSON escapes it */
	assert_false(utf8_valid(U("\xc3"), 1));         /* truncated */
	assert_false(utf8_valid(U("\xc0\xaf"), 2));     /* overlong '/' */
	assert_false(utf8_valid(U("\xe0\x80\xaf"), 3)); /* overlong */
	assert_false(utf8_valid(U("\xed\xa0\x80"), 3)); /* surrogate U+D800 */
	assert_false(utf8_valid(U("\xf4\x90\x80\x80"), 4)); /* above U+10FFFF */
	assert_false(utf8_valid(U("\xff"), 1));
	assert_false(utf8_valid(U("\x80"), 1));

	/* Held back: only an incomplete but valid start. */
	assert_int_equal(utf8_complete_prefix(U("ab\xe2\x82"), 4), 2);
	assert_int_equal(utf8_complete_prefix(U("ab\xe2"), 3), 2);
	assert_int_equal(utf8_complete_prefix(U("ab\xe2\x82\xac"), 5), 5);
	assert_int_equal(utf8_complete_prefix(U("\xf0\x9d\x84"), 3), 0);
	assert_int_equal(utf8_complete_prefix(U("ab\xff"), 3), 3);
	assert_int_equal(utf8_complete_prefix(U("ab\xe2\x28"), 4), 4); /* invalid already */
	assert_int_equal(utf8_complete_prefix(U(""), 0), 0);

	char out[64];

	assert_int_equal(utf8_lossy(out, sizeof(out), U("a\xffz"), 3, 0, NULL), 5);
	assert_string_equal(out, "a\xef\xbf\xbdz");
	utf8_lossy(out, sizeof(out), U("\x1b[31mred\r\tx\x7f"), 12, UTF8_DROP_CONTROLS, NULL);
	assert_string_equal(out, "[31mred\tx");
}

static void test_base64(void **state)
{
	static const struct {
		const char *raw;
		size_t n;
		const char *b64;
	} v[] = {
		/* RFC 4648, section 10 */
		{ "", 0, "" },
		{ "f", 1, "Zg==" },
		{ "fo", 2, "Zm8=" },
		{ "foo", 3, "Zm9v" },
		{ "foob", 4, "Zm9vYg==" },
		{ "fooba", 5, "Zm9vYmE=" },
		{ "foobar", 6, "Zm9vYmFy" },
		{ "\x00\xff\xfe", 3, "AP/+" },
	};
	char enc[32];
	uint8_t dec[32];
	size_t n;

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		assert_int_equal(base64_encode(U(v[i].raw), v[i].n, enc), strlen(v[i].b64));
		assert_string_equal(enc, v[i].b64);
		assert_int_equal(base64_encoded_size(v[i].n), strlen(v[i].b64) + 1);
		assert_int_equal(base64_decode(v[i].b64, strlen(v[i].b64), dec, &n), 0);
		assert_int_equal(n, v[i].n);
		assert_memory_equal(dec, v[i].raw, n);
	}
	static const char *const bad[] = { "Zg",       "Zg=",  "Z===",   "Zh==", "Zm9=",
					   "Zg==Zg==", "Zm 9", "Zm9v\n", "Zm-_", "=Zg=" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (base64_decode(bad[i], strlen(bad[i]), dec, &n) != -EINVAL)
			fail_msg("'%s' decoded", bad[i]);
}

static void test_error_bodies(void **state)
{
	struct api_err e;
	char *body;

	(void)state;
	api_err_set(&e, API_E_WRONG_STATE, "sandbox %s is stopped; start it first", "abc");
	body = api_error_body(&e);
	assert_string_equal(
		body,
		"{\"error\":{\"code\":\"wrong_state\",\"message\":\"sandbox abc is stopped; start it first\"}}");
	free(body);
	/* A message quoting guest bytes that are not UTF-8 still makes JSON. */
	api_err_set(&e, API_E_NOT_FOUND, "read '/tmp/\xff\"x'");
	body = api_error_body(&e);
	assert_string_equal(
		body,
		"{\"error\":{\"code\":\"not_found\",\"message\":\"read '/tmp/\xef\xbf\xbd\\\"x'\"}}");
	free(body);

	/* Every code has a name and a status in its class. */
	for (int c = 1; c < API_CODE_COUNT; c++) {
		unsigned s = api_code_status((enum api_code)c);

		assert_true(s >= 400 && s <= 599);
		assert_string_not_equal(api_code_name((enum api_code)c), "ok");
	}
	assert_int_equal(api_code_status(API_E_BODY_TOO_LARGE), 413);
	assert_int_equal(api_code_status(API_E_AGENT_UNAVAILABLE), 503);
	assert_int_equal(api_code_status(API_CODE_COUNT), 500);
}

static void test_agent_errors_map(void **state)
{
	struct api_err e;

	(void)state;
	assert_int_equal(api_err_from_agent_fail(&e, KILN_AGENT_FAIL_AGENT, "not_found",
						 "exec: 'nope' not found", "exec"),
			 API_E_NOT_FOUND);
	assert_string_equal(e.msg, "exec: 'nope' not found");
	assert_int_equal(api_err_from_agent_fail(&e, KILN_AGENT_FAIL_AGENT, "not_found", "",
						 "exec"),
			 API_E_NOT_FOUND);
	assert_string_equal(e.msg, "exec failed");
	assert_int_equal(api_err_from_agent_fail(&e, KILN_AGENT_FAIL_AGENT, "not_found", NULL, "x"),
			 API_E_NOT_FOUND);
	assert_string_equal(e.msg, "x failed");
	assert_int_equal(api_err_from_agent_fail(&e, KILN_AGENT_FAIL_AGENT, "permission_denied",
						 "m", "x"),
			 API_E_PERMISSION_DENIED);
	assert_int_equal(api_code_status(api_err_from_agent_fail(&e, KILN_AGENT_FAIL_AGENT,
								 "no_space", "m", "x")),
			 507);
	/* A request kilnd built wrong: its bug. So is a code no agent sends. */
	assert_int_equal(api_err_from_agent_fail(&e, KILN_AGENT_FAIL_AGENT, "unknown_type", "m",
						 "x"),
			 API_E_INTERNAL);
	assert_int_equal(api_err_from_agent_fail(&e, KILN_AGENT_FAIL_AGENT, "made_up", "m", "x"),
			 API_E_INTERNAL);
	assert_int_equal(api_err_from_agent_fail(&e, KILN_AGENT_FAIL_REQUEST, "too_large", "m",
						 "x"),
			 API_E_TOO_LARGE);
	/* The agent's own timeout is the API's; a host-side deadline is an
	 * agent that does not answer. */
	assert_int_equal(api_err_from_agent_fail(&e, KILN_AGENT_FAIL_AGENT, "timeout", "m", "x"),
			 API_E_TIMEOUT);
	assert_int_equal(api_err_from_agent_fail(&e, KILN_AGENT_FAIL_TIMEOUT, "timeout", "m", "x"),
			 API_E_AGENT_UNAVAILABLE);
	assert_int_equal(api_err_from_agent_fail(&e, KILN_AGENT_FAIL_UNREACHABLE, "unreachable",
						 "m", "x"),
			 API_E_AGENT_UNAVAILABLE);
	assert_int_equal(api_code_status(api_err_from_agent_fail(&e, KILN_AGENT_FAIL_PROTOCOL,
								 "protocol_error", "m", "x")),
			 502);
	assert_int_equal(api_err_from_agent_fail(&e, KILN_AGENT_FAIL_HOST, "host_error", "m", "x"),
			 API_E_INTERNAL);
	assert_int_equal(api_err_from_agent_fail(&e, KILN_AGENT_FAIL_NONE, "", "m", "x"),
			 API_E_INTERNAL);
}

static void test_exec_result(void **state)
{
	char bin[] = { 'a', (char)0xff, 0 };
	struct exec_result res = {
		.st = { .size = sizeof(res.st),
			.pid = 57,
			.exit_code = 3,
			.stdout_bytes = 10,
			.stderr_bytes = 2,
			.stderr_truncated = 1,
			.wall_us = 1830 },
		.out = "got hello\n",
		.out_len = 10,
		.err = bin,
		.err_len = 2,
	};
	json_t *o;

	(void)state;
	o = exec_render_result(&res, false, 2.5);
	assert_int_equal(json_integer_value(json_object_get(o, "exit_code")), 3);
	assert_true(json_is_null(json_object_get(o, "signal")));
	assert_string_equal(json_string_value(json_object_get(o, "stdout")), "got hello\n");
	assert_string_equal(json_string_value(json_object_get(o, "stdout_encoding")), "utf-8");
	assert_string_equal(json_string_value(json_object_get(o, "stderr")), "Yf8=");
	assert_string_equal(json_string_value(json_object_get(o, "stderr_encoding")), "base64");
	assert_true(json_is_true(json_object_get(o, "stderr_truncated")));
	assert_int_equal(json_integer_value(json_object_get(o, "stdout_bytes")), 10);
	assert_int_equal(json_integer_value(json_object_get(o, "wall_us")), 1830);
	json_decref(o);

	/* A signal: exit_code null; no output at all: empty strings. */
	res.st.signal = 9;
	res.st.exit_code = -1;
	res.out = res.err = NULL;
	res.out_len = res.err_len = 0;
	o = exec_render_result(&res, true, 1);
	assert_true(json_is_null(json_object_get(o, "exit_code")));
	assert_int_equal(json_integer_value(json_object_get(o, "signal")), 9);
	assert_string_equal(json_string_value(json_object_get(o, "stdout")), "");
	assert_string_equal(json_string_value(json_object_get(o, "stdout_encoding")), "base64");
	json_decref(o);
}

static void expect_line(char *line, size_t len, const char *want)
{
	assert_non_null(line);
	assert_int_equal(len, strlen(want));
	assert_string_equal(line, want);
	free(line);
}

static void test_stream_events(void **state)
{
	struct exec_stream_enc enc;
	char *line;
	size_t len;

	(void)state;
	exec_stream_enc_init(&enc, false);
	assert_int_equal(exec_event_output(&enc, AGENT_STDOUT, U("hi\n"), 3, &line, &len), 0);
	expect_line(line, len, "{\"type\":\"stdout\",\"data\":\"hi\\n\"}\n");
	/* "€" = e2 82 ac split across three chunks, interleaved with stderr. */
	assert_int_equal(exec_event_output(&enc, AGENT_STDOUT, U("x\xe2"), 2, &line, &len), 0);
	expect_line(line, len, "{\"type\":\"stdout\",\"data\":\"x\"}\n");
	assert_int_equal(exec_event_output(&enc, AGENT_STDERR, U("e"), 1, &line, &len), 0);
	expect_line(line, len, "{\"type\":\"stderr\",\"data\":\"e\"}\n");
	assert_int_equal(exec_event_output(&enc, AGENT_STDOUT, U("\x82"), 1, &line, &len), 0);
	assert_null(line); /* still incomplete: nothing to send */
	assert_int_equal(exec_event_output(&enc, AGENT_STDOUT, U("\xac!"), 2, &line, &len), 0);
	expect_line(line, len, "{\"type\":\"stdout\",\"data\":\"\xe2\x82\xac!\"}\n");
	/* Not UTF-8: base64, nothing held. */
	assert_int_equal(exec_event_output(&enc, AGENT_STDERR, U("\xff\xe2"), 2, &line, &len), 0);
	expect_line(line, len, "{\"type\":\"stderr\",\"data_base64\":\"/+I=\"}\n");
	/* An incomplete character at the very end is flushed as base64. */
	assert_int_equal(exec_event_output(&enc, AGENT_STDOUT, U("\xf0\x9d"), 2, &line, &len), 0);
	assert_null(line);
	assert_int_equal(exec_event_flush(&enc, AGENT_STDERR, &line, &len), 0);
	assert_null(line);
	assert_int_equal(exec_event_flush(&enc, AGENT_STDOUT, &line, &len), 0);
	expect_line(line, len, "{\"type\":\"stdout\",\"data_base64\":\"8J0=\"}\n");
	/* NUL bytes are valid UTF-8 and JSON-escaped. */
	assert_int_equal(exec_event_output(&enc, AGENT_STDOUT, U("a\0b"), 3, &line, &len), 0);
	expect_line(line, len, "{\"type\":\"stdout\",\"data\":\"a\\u0000b\"}\n");

	exec_stream_enc_init(&enc, true);
	assert_int_equal(exec_event_output(&enc, AGENT_STDOUT, U("hi"), 2, &line, &len), 0);
	expect_line(line, len, "{\"type\":\"stdout\",\"data_base64\":\"aGk=\"}\n");

	struct kiln_exit_status ex = {
		.size = sizeof(ex), .pid = 5, .exit_code = 0, .stdout_bytes = 2
	};

	line = exec_event_exit(&ex, 1.5, &len);
	assert_non_null(line);
	assert_int_equal(line[len - 1], '\n');
	assert_non_null(
		strstr(line,
		       "{\"type\":\"exit\",\"exit_code\":0,\"signal\":null,\"timed_out\":false,"));
	free(line);

	struct api_err e;

	api_err_set(&e, API_E_AGENT_UNAVAILABLE, "the VM went away");
	line = exec_event_error(&e, &len);
	expect_line(
		line, len,
		"{\"type\":\"error\",\"error\":{\"code\":\"agent_unavailable\",\"message\":\"the VM went away\"}}\n");
}

static void test_metrics_text(void **state)
{
	struct kiln_metrics m;
	unsigned states[SANDBOX_STATE_COUNT] = { [SANDBOX_RUNNING] = 2, [SANDBOX_CRASHED] = 1 };
	char *t;
	size_t len;

	(void)state;
	metrics_init(&m);
	m.boots = 3;
	histogram_observe(&m.boot_seconds, 0.004);
	histogram_observe(&m.boot_seconds, 0.005); /* le is inclusive */
	histogram_observe(&m.boot_seconds, 0.3);
	histogram_observe(&m.boot_seconds, 1000);
	histogram_observe(&m.exec_seconds, -1); /* clock trouble counts as 0 */
	metrics_http(&m, 201);
	metrics_http(&m, 404);
	metrics_http(&m, 999);
	m.hibernations = 4;
	m.wake_cold_boots = 1;
	m.boot_retries = 2;
	histogram_observe(&m.restore_seconds, 0.02);
	t = metrics_render(&m, states, &len);
	assert_non_null(t);
	assert_int_equal(strlen(t), len);
	assert_non_null(strstr(t, "kiln_sandboxes{state=\"running\"} 2\n"));
	assert_non_null(strstr(t, "kiln_sandboxes{state=\"booting\"} 0\n"));
	assert_non_null(strstr(t, "kiln_sandboxes{state=\"crashed\"} 1\n"));
	assert_non_null(strstr(t, "kiln_sandboxes{state=\"paused\"} 0\n"));
	assert_non_null(strstr(t, "kiln_sandboxes{state=\"hibernated\"} 0\n"));
	assert_non_null(strstr(t, "kiln_hibernations_total 4\n"));
	assert_non_null(strstr(t, "kiln_wake_cold_boots_total 1\n"));
	assert_non_null(
		strstr(t, "# TYPE kiln_boot_retries_total counter\nkiln_boot_retries_total 2\n"));
	assert_non_null(strstr(t, "kiln_pauses_total 0\n"));
	assert_non_null(strstr(t, "kiln_restore_seconds_bucket{le=\"0.025\"} 1\n"));
	assert_non_null(strstr(t, "# TYPE kiln_boots_total counter\nkiln_boots_total 3\n"));
	assert_non_null(strstr(t, "kiln_boot_seconds_bucket{le=\"0.005\"} 2\n"));
	assert_non_null(strstr(t, "kiln_boot_seconds_bucket{le=\"0.25\"} 2\n"));
	assert_non_null(strstr(t, "kiln_boot_seconds_bucket{le=\"0.5\"} 3\n"));
	assert_non_null(strstr(t, "kiln_boot_seconds_bucket{le=\"120\"} 3\n"));
	assert_non_null(strstr(t, "kiln_boot_seconds_bucket{le=\"+Inf\"} 4\n"));
	assert_non_null(strstr(t, "kiln_boot_seconds_count 4\n"));
	assert_non_null(strstr(t, "kiln_boot_seconds_sum 1000.309000\n"));
	assert_non_null(strstr(t, "kiln_exec_seconds_bucket{le=\"0.0005\"} 1\n"));
	assert_non_null(strstr(t, "kiln_http_requests_total{class=\"2xx\"} 1\n"));
	assert_non_null(strstr(t, "kiln_http_requests_total{class=\"4xx\"} 1\n"));
	assert_non_null(strstr(t, "kiln_http_requests_total{class=\"5xx\"} 0\n"));
	assert_int_equal(t[len - 1], '\n');
	free(t);
}

static struct sandbox_spec base_spec(void)
{
	struct sandbox_spec s;

	memset(&s, 0, sizeof(s));
	strcpy(s.image, "minimal");
	strcpy(s.hostname, "box1");
	s.cpus = 2;
	s.memory_mib = 256;
	s.console = true;
	return s;
}

static void test_vmm_argv(void **state)
{
	struct sandbox_spec s = base_spec();
	struct vmm_launch l = { .vmm = "/k/build/kiln-vmm",
				.kernel = "/k/vmlinux",
				.image = "/img/minimal.ext4",
				.overlay = "/st/sandboxes/abc/overlay",
				.vsock = "/st/sandboxes/abc/vsock.sock",
				.control = "/st/sandboxes/abc/control.sock",
				.spec = &s };
	static const char *const want[] = { "/k/build/kiln-vmm",
					    "--kernel",
					    "/k/vmlinux",
					    "--disk-image",
					    "/img/minimal.ext4",
					    "--disk-overlay",
					    "/st/sandboxes/abc/overlay",
					    "--vsock-path",
					    "/st/sandboxes/abc/vsock.sock",
					    "--control",
					    "/st/sandboxes/abc/control.sock",
					    "--mem",
					    "256",
					    "--cpus",
					    "2",
					    "--boot-timeline=json",
					    "--console",
					    "--cmdline",
					    "quiet kiln.hostname=box1",
					    NULL };
	struct vmm_argv a;
	struct api_err e;

	(void)state;
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	for (size_t i = 0; want[i]; i++)
		assert_string_equal(a.argv[i], want[i]);
	assert_null(a.argv[a.argc]);
	assert_int_equal(a.argc, 19);
	vmm_argv_free(&a);

	/* Separators of kiln-vmm's --disk syntax are the paths' own, and a
	 * size is its own option too. */
	s.disk_mib = 2048;
	l.image = "/img/a,ro:b.ext4";
	l.overlay = "/st/sb/x,size=1/overlay";
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	assert_string_equal(a.argv[3], "--disk-image");
	assert_string_equal(a.argv[4], "/img/a,ro:b.ext4");
	assert_string_equal(a.argv[6], "/st/sb/x,size=1/overlay");
	assert_string_equal(a.argv[7], "--disk-size");
	assert_string_equal(a.argv[8], "2048");
	assert_int_equal(a.argc, 21);
	vmm_argv_free(&a);
	s.disk_mib = 0;
	l.image = "/img/minimal.ext4";
	l.overlay = "/st/sandboxes/abc/overlay";

	s.console = false;
	s.nshares = 2;
	strcpy(s.shares[0].host_path, "/srv/data");
	strcpy(s.shares[0].guest_path, "/mnt/data");
	s.shares[0].read_only = true;
	strcpy(s.shares[1].host_path, "/srv/out");
	strcpy(s.shares[1].guest_path, "/out");
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	assert_int_equal(a.argc, 22);
	assert_string_equal(a.argv[16], "--cmdline");
	assert_string_equal(a.argv[17],
			    "quiet kiln.hostname=box1 kiln.shares=kiln0:/mnt/data:ro,kiln1:/out");
	assert_string_equal(a.argv[18], "--share");
	assert_string_equal(a.argv[19], "/srv/data:kiln0:ro");
	assert_string_equal(a.argv[21], "/srv/out:kiln1");
	vmm_argv_free(&a);

	/* kilnd's starts: the directories it opened, never the paths. */
	static const int fds[2] = { 7, 12 }, stdio_fds[2] = { 7, 1 };
	l.share_fds = fds;
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	assert_int_equal(a.argc, 22);
	assert_string_equal(a.argv[19], "fd=7:kiln0:ro");
	assert_string_equal(a.argv[21], "fd=12:kiln1");
	vmm_argv_free(&a);
	l.share_fds = stdio_fds;
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	assert_non_null(strstr(e.msg, "descriptor 1"));
}

/* kilnd's jail (docs/security.md): --jail DIR --uid N --gid N, never without an id. */
static void test_vmm_argv_jail(void **state)
{
	struct sandbox_spec s = base_spec();
	struct vmm_launch l = { .vmm = "/k/kiln-vmm",
				.kernel = "/k/vmlinux",
				.image = "/img/m.ext4",
				.overlay = "/st/sandboxes/abc/overlay",
				.vsock = "/st/sandboxes/abc/vm/vsock.sock",
				.control = "/st/sandboxes/abc/vm/control.sock",
				.jail_dir = "/st/sandboxes/abc/vm",
				.jail_id = 2000000007,
				.spec = &s };
	struct vmm_argv a;
	struct api_err e;
	size_t i;

	(void)state;
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	for (i = 0; i < a.argc && strcmp(a.argv[i], "--jail") != 0; i++)
		;
	assert_true(i + 5 < a.argc);
	assert_string_equal(a.argv[i + 1], "/st/sandboxes/abc/vm");
	assert_string_equal(a.argv[i + 2], "--uid");
	assert_string_equal(a.argv[i + 3], "2000000007");
	assert_string_equal(a.argv[i + 4], "--gid");
	assert_string_equal(a.argv[i + 5], "2000000007");
	vmm_argv_free(&a);
	l.jail_id = 0;
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	assert_non_null(strstr(e.msg, "without an id"));
	l.jail_id = 5;
	l.jail_dir = "st/sandboxes/ab/vm";
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	assert_non_null(strstr(e.msg, "jail directory"));
}

/* A restore: the snapshot instead of a kernel, the same machine and devices. */
static void test_vmm_argv_restore(void **state)
{
	struct sandbox_spec s = base_spec();
	struct vmm_launch l = { .vmm = "/k/kiln-vmm",
				.kernel = NULL,
				.image = "/img/m.ext4",
				.overlay = "/st/sb/f00/overlay",
				.vsock = "/st/sb/f00/vsock.sock",
				.control = "/st/sb/f00/control.sock",
				.restore_dir = "/st/sb/abc/checkpoints/cp1",
				.spec = &s };
	static const char *const want[] = { "/k/kiln-vmm",
					    "--restore",
					    "/st/sb/abc/checkpoints/cp1",
					    "--disk-image",
					    "/img/m.ext4",
					    "--disk-overlay",
					    "/st/sb/f00/overlay",
					    "--vsock-path",
					    "/st/sb/f00/vsock.sock",
					    "--control",
					    "/st/sb/f00/control.sock",
					    "--mem",
					    "256",
					    "--cpus",
					    "2",
					    "--boot-timeline=json",
					    "--console",
					    NULL };
	struct vmm_argv a;
	struct api_err e;

	(void)state;
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	assert_int_equal(a.argc, 17);
	for (size_t i = 0; want[i]; i++)
		assert_string_equal(a.argv[i], want[i]);
	for (size_t i = 0; i < a.argc; i++) {
		assert_string_not_equal(a.argv[i], "--kernel");
		assert_string_not_equal(a.argv[i], "--cmdline");
	}
	vmm_argv_free(&a);
	l.restore_dir = "/st/sb/abc/checkpoints/a\nb";
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	assert_non_null(strstr(e.msg, "snapshot"));
	l.restore_dir = "checkpoints/cp1";
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	/* Without a snapshot, a boot needs its kernel. */
	l.restore_dir = NULL;
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	assert_non_null(strstr(e.msg, "kernel"));
	assert_int_equal(a.argc, 0);
}

/* Whatever slipped past validation is caught again before kiln-vmm sees it. */
static void test_vmm_argv_refuses_injection(void **state)
{
	struct sandbox_spec s = base_spec();
	struct vmm_launch l = { .vmm = "/v",
				.kernel = "/k",
				.image = "/i",
				.overlay = "/o",
				.vsock = "/s",
				.control = "/c",
				.spec = &s };
	struct vmm_argv a;
	struct api_err e;

	(void)state;
	strcpy(s.hostname, "x kiln.exec=reboot");
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	assert_non_null(strstr(e.msg, "hostname"));
	s = base_spec();
	l.image = "/i\n";
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	assert_non_null(strstr(e.msg, "image"));
	l.image = "/i";
	l.overlay = "relative";
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	l.overlay = "/o";
	s.nshares = 1;
	strcpy(s.shares[0].host_path, "a/evil");
	strcpy(s.shares[0].guest_path, "/m");
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	assert_non_null(strstr(e.msg, "host_path"));
	/* A colon is the directory's: kiln-vmm's tag is the last field, kilnd's own kiln0. */
	strcpy(s.shares[0].host_path, "/a:evil");
	assert_int_equal(vmm_argv_build(&l, &a, &e), 0);
	assert_string_equal(a.argv[a.argc - 1], "/a:evil:kiln0");
	vmm_argv_free(&a);
	strcpy(s.shares[0].host_path, "/a");
	strcpy(s.shares[0].guest_path, "/m kiln.exec=x");
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	assert_non_null(strstr(e.msg, "guest_path"));
	assert_int_equal(a.argc, 0);
	s = base_spec();
	l.control = "control.sock";
	assert_int_equal(vmm_argv_build(&l, &a, &e), -1);
	assert_non_null(strstr(e.msg, "control socket"));
}

static void test_vmm_output(void **state)
{
	const char *console =
		"partial line\r\nkernel: x\r\n\x1b[1mbold\x1b[0m\r\n\r\nbad \xff byte\r\nlast";
	const char *err =
		"kiln-vmm: something early\n"
		"{\"unit\":\"ms\",\"milestones\":[{\"name\":\"vm_ready\",\"ms\":1.5}],\"exit\":{\"reason\":\"triple_fault\",\"status\":4}}\n"
		"kiln-vmm: guest triple fault at rip 0x0\n";
	json_t *t, *m;

	(void)state;
	t = vmm_output_tail(U(console), strlen(console), false, 3, 512);
	assert_int_equal(json_array_size(t), 3);
	assert_string_equal(json_string_value(json_array_get(t, 0)), "[1mbold[0m");
	assert_string_equal(json_string_value(json_array_get(t, 1)), "bad \xef\xbf\xbd byte");
	assert_string_equal(json_string_value(json_array_get(t, 2)), "last");
	json_decref(t);
	/* Not from the start: the first, partial line is dropped. */
	t = vmm_output_tail(U(console), strlen(console), false, 100, 512);
	assert_int_equal(json_array_size(t), 4);
	assert_string_equal(json_string_value(json_array_get(t, 0)), "kernel: x");
	json_decref(t);
	t = vmm_output_tail(U(console), strlen(console), true, 100, 4);
	assert_int_equal(json_array_size(t), 5);
	assert_string_equal(json_string_value(json_array_get(t, 0)), "part");
	json_decref(t);
	t = vmm_output_tail(U(""), 0, true, 5, 10);
	assert_int_equal(json_array_size(t), 0);
	json_decref(t);

	m = vmm_output_message(U(err), strlen(err));
	assert_string_equal(json_string_value(m), "kiln-vmm: guest triple fault at rip 0x0");
	json_decref(m);
	assert_null(vmm_output_message(U("no messages\n"), 12));
	t = vmm_output_timeline(U(err), strlen(err));
	assert_non_null(t);
	assert_string_equal(json_string_value(
				    json_object_get(json_object_get(t, "exit"), "reason")),
			    "triple_fault");
	json_decref(t);
	assert_null(vmm_output_timeline(U("{\"unit\":\"ms\",\"milestones\":[oops\n"), 31));
	assert_null(vmm_output_timeline(U("{\"unit\":\"ms\",\"milestones\":7}\n"), 29));
}

/* The denied-flow log: only kiln-vmm's "firewall: " lines, prefix cut,
 * the last N, oldest first; a line that only starts like one is not one. */
static void test_vmm_output_prefixed(void **state)
{
	const char *log =
		"kiln-vmm: firewall: egress drop_private tcp 10.0.2.15:40000 -> 10.77.2.10:8080\n"
		"kiln-vmm: virtio-net: something else\n"
		"kiln-vmm: firewall: egress drop_default udp 10.0.2.15:5353 -> 203.0.113.9:53\n"
		"kiln-vmm: firewall:x\n"
		"kiln-vmm: firewall: egress drop_reserved tcp 10.0.2.15:40002 -> 10.0.2.2:80 (3 more not logged)\n";
	json_t *t;

	(void)state;
	t = vmm_output_tail_prefixed(U(log), strlen(log), true, "kiln-vmm: firewall: ", 100, 512);
	assert_int_equal(json_array_size(t), 3);
	assert_string_equal(json_string_value(json_array_get(t, 0)),
			    "egress drop_private tcp 10.0.2.15:40000 -> 10.77.2.10:8080");
	assert_string_equal(
		json_string_value(json_array_get(t, 2)),
		"egress drop_reserved tcp 10.0.2.15:40002 -> 10.0.2.2:80 (3 more not logged)");
	json_decref(t);
	t = vmm_output_tail_prefixed(U(log), strlen(log), true, "kiln-vmm: firewall: ", 1, 512);
	assert_int_equal(json_array_size(t), 1);
	assert_non_null(strstr(json_string_value(json_array_get(t, 0)), "drop_reserved"));
	json_decref(t);
	/* Not from the start of the file: the first (partial) line is not read. */
	t = vmm_output_tail_prefixed(U(log), strlen(log), false, "kiln-vmm: firewall: ", 100, 512);
	assert_int_equal(json_array_size(t), 2);
	json_decref(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_base64),
		cmocka_unit_test(test_error_bodies),
		cmocka_unit_test(test_agent_errors_map),
		cmocka_unit_test(test_exec_result),
		cmocka_unit_test(test_stream_events),
		cmocka_unit_test(test_metrics_text),
		cmocka_unit_test(test_vmm_argv),
		cmocka_unit_test(test_vmm_argv_jail),
		cmocka_unit_test(test_vmm_argv_refuses_injection),
		cmocka_unit_test(test_vmm_argv_restore),
		cmocka_unit_test(test_vmm_output),
		cmocka_unit_test(test_vmm_output_prefixed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
