/* An exec's result into our output and exit status (cli_exec_out.h). */
#include "api/kiln/cli_exec_out.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/base64.h"
#include "lib/base/json.h"
#include "lib/base/mem_grow.h"

int cli_exec_status(const json_t *r)
{
	const json_t *code = json_object_get(r, "exit_code"), *sig = json_object_get(r, "signal");

	if (json_is_true(json_object_get(r, "timed_out")))
		return 124;
	if (json_is_integer(code) && json_integer_value(code) >= 0 &&
	    json_integer_value(code) <= 255)
		return (int)json_integer_value(code);
	if (json_is_integer(sig) && json_integer_value(sig) > 0 && json_integer_value(sig) < 128)
		return 128 + (int)json_integer_value(sig);
	return -1;
}

/* Write text, or decode base64 and write it; *bytes: how many were written. */
static int put_data(cli_write_fn w, void *arg, int fd, const char *s, size_t n, bool base64,
		    struct cli_fail *f, size_t *bytes)
{
	uint8_t *raw;
	size_t rawlen = n;
	int rc;

	if (!base64) {
		rc = n ? w(arg, fd, s, n) : 0;
	} else {
		raw = malloc(n / 4 * 3 + 1);
		if (!raw)
			return cli_fail_set(f, CLI_EXIT_API, NULL, "out of memory decoding output");
		if (base64_decode(s, n, raw, &rawlen)) {
			free(raw);
			return cli_fail_set(f, CLI_EXIT_API, NULL,
					    "kilnd sent output that is not valid base64");
		}
		rc = rawlen ? w(arg, fd, raw, rawlen) : 0;
		free(raw);
	}
	if (bytes)
		*bytes = rawlen;
	if (rc)
		return cli_fail_set(f, CLI_EXIT_API, NULL, "writing the process's %s: %s",
				    fd == 1 ? "stdout" : "stderr", strerror(-rc));
	return 0;
}

static int put_stream(const json_t *r, const char *name, int fd, cli_write_fn w, void *arg,
		      struct cli_fail *f)
{
	char key[32];
	const json_t *data = json_object_get(r, name);
	const char *enc;

	snprintf(key, sizeof(key), "%s_encoding", name);
	enc = json_string_value(json_object_get(r, key));
	if (!json_is_string(data) || !enc || (strcmp(enc, "utf-8") && strcmp(enc, "base64")))
		return cli_fail_set(f, CLI_EXIT_API, NULL, "kilnd's exec result has no valid '%s'",
				    name);
	return put_data(w, arg, fd, json_string_value(data), json_string_length(data),
			!strcmp(enc, "base64"), f, NULL);
}

static void warn_truncated(const json_t *r, const char *name, cli_write_fn w, void *arg)
{
	char key[32], msg[160];
	int n;

	snprintf(key, sizeof(key), "%s_truncated", name);
	if (!json_is_true(json_object_get(r, key)))
		return;
	snprintf(key, sizeof(key), "%s_bytes", name);
	n = snprintf(msg, sizeof(msg),
		     "kiln: exec: %s truncated: the process wrote %lld bytes "
		     "(without --buffered, exec streams up to 256 MiB)\n",
		     name, (long long)json_integer_value(json_object_get(r, key)));
	w(arg, 2, msg, (size_t)n);
}

int cli_exec_result(const json_t *r, cli_write_fn w, void *arg, int *status, struct cli_fail *f)
{
	int st = cli_exec_status(r);

	if (!json_is_object(r) || st < 0)
		return cli_fail_set(f, CLI_EXIT_API, NULL,
				    "kilnd's exec result has no exit_code or signal");
	if (put_stream(r, "stdout", 1, w, arg, f) || put_stream(r, "stderr", 2, w, arg, f))
		return -1;
	warn_truncated(r, "stdout", w, arg);
	warn_truncated(r, "stderr", w, arg);
	*status = st;
	return 0;
}

void cli_ndjson_init(struct cli_ndjson *n, cli_write_fn w, void *arg)
{
	memset(n, 0, sizeof(*n));
	n->w = w;
	n->arg = arg;
}

void cli_ndjson_free(struct cli_ndjson *n)
{
	free(n->buf);
	n->buf = NULL;
	json_decref(n->result);
	n->result = NULL;
}

static int ndjson_fail(struct cli_ndjson *n, const char *fmt, const char *detail)
{
	n->failed = true;
	return cli_fail_set(&n->fail, CLI_EXIT_API, NULL, fmt, detail);
}

/* A warning line on stderr through the writer (failures ignored: it is advice). */
static void warn(struct cli_ndjson *n, const char *fmt, const char *what, long long v)
{
	char msg[256];
	int k = snprintf(msg, sizeof(msg), fmt, n->who ? n->who : "exec", what, v);

	if (k > 0)
		n->w(n->arg, 2, msg, (size_t)k < sizeof(msg) ? (size_t)k : sizeof(msg) - 1);
}

/* until: an event that starts at seq and carries bytes reached until_seq? */
static void check_until(struct cli_ndjson *n, const json_t *ev, size_t bytes)
{
	const json_t *seq = json_object_get(ev, "seq");

	if (n->until && json_is_integer(seq) && json_integer_value(seq) >= 0 &&
	    (unsigned long long)json_integer_value(seq) + bytes >= n->until_seq) {
		n->reached = true;
		n->done = true;
		n->status = 0;
	}
}

static void warn_truncated_event(struct cli_ndjson *n, const json_t *ev)
{
	static const char *const names[] = { "stdout", "stderr" };

	for (int i = 0; i < 2; i++) {
		char key[32];

		snprintf(key, sizeof(key), "%s_truncated", names[i]);
		if (!json_is_true(json_object_get(ev, key)))
			continue;
		snprintf(key, sizeof(key), "%s_bytes", names[i]);
		warn(n, "kiln: %s: %s truncated at output_cap: the process wrote %lld bytes\n",
		     names[i], (long long)json_integer_value(json_object_get(ev, key)));
	}
}

static int apply_event(struct cli_ndjson *n, const char *line, size_t len)
{
	json_error_t je;
	json_t *ev;
	const char *type;
	int rc = 0;

	if (n->done)
		return ndjson_fail(n, "kilnd sent %s after the last event", "bytes");
	ev = json_strict_loadb(line, len, &je);
	type = json_string_value(json_object_get(ev, "type"));
	if (!ev) {
		rc = ndjson_fail(n, "kilnd sent a stream line that is not JSON (%s)", je.text);
	} else if (!type) {
		rc = ndjson_fail(n, "kilnd sent a stream line that is not an event%s", "");
	} else if (!strcmp(type, "stdout") || !strcmp(type, "stderr")) {
		int fd = type[3] == 'o' ? 1 : 2;
		const json_t *d = json_object_get(ev, "data"),
			     *b = json_object_get(ev, "data_base64");
		size_t bytes = 0;

		if (json_is_string(d))
			rc = put_data(n->w, n->arg, fd, json_string_value(d), json_string_length(d),
				      false, &n->fail, &bytes);
		else if (json_is_string(b))
			rc = put_data(n->w, n->arg, fd, json_string_value(b), json_string_length(b),
				      true, &n->fail, &bytes);
		else
			rc = ndjson_fail(n, "kilnd sent a %s event without data", type);
		n->failed |= rc != 0;
		if (!rc)
			check_until(n, ev, bytes);
	} else if (!strcmp(type, "attached")) {
		check_until(n, ev, 0);
	} else if (!strcmp(type, "gap")) {
		warn(n,
		     "kiln: %s: %s: %lld bytes of output were lost (overwritten in the ring before they were read)\n",
		     "gap", (long long)json_integer_value(json_object_get(ev, "bytes")));
		check_until(n, ev, (size_t)json_integer_value(json_object_get(ev, "bytes")));
	} else if (!strcmp(type, "exit")) {
		n->status = cli_exec_status(ev);
		if (n->status < 0)
			rc = ndjson_fail(n, "kilnd's exit event has no exit_code or signal%s", "");
		else
			warn_truncated_event(n, ev);
		if (n->until)
			n->status = 0;
		n->exited = true;
		n->done = !n->want_result;
	} else if (!strcmp(type, "result") && n->want_result && n->exited) {
		n->result = json_incref(ev);
		n->done = true;
	} else if (!strcmp(type, "error")) {
		const char *code = json_string_value(
			json_object_get(json_object_get(ev, "error"), "code"));
		const char *msg = json_string_value(
			json_object_get(json_object_get(ev, "error"), "message"));

		n->done = true;
		n->failed = true;
		rc = cli_fail_set(&n->fail, code ? cli_exit_for_code(code) : CLI_EXIT_API, code,
				  "failed after output was sent: %s", msg ? msg : "(no message)");
	}
	/* Other types are skipped: a newer kilnd may add events, and output
	 * and exit (and run's result) are all this client needs. */
	json_decref(ev);
	return rc;
}

int cli_ndjson_feed(struct cli_ndjson *n, const char *p, size_t len)
{
	while (len) {
		const char *nl = memchr(p, '\n', len);
		size_t take = nl ? (size_t)(nl - p) : len;

		if (n->failed)
			return -1;
		if (n->len + take > CLI_NDJSON_LINE_MAX)
			return ndjson_fail(n, "kilnd sent a stream line over %s", "16 MiB");
		if (!nl || n->len) {
			if (n->len + take > n->cap) {
				char *nb = mem_grow(n->buf, &n->cap, n->len + take, 4096,
						    CLI_NDJSON_LINE_MAX);

				if (!nb)
					return ndjson_fail(n, "out of memory reading the %s",
							   "stream");
				n->buf = nb;
			}
			memcpy(n->buf + n->len, p, take);
			n->len += take;
		}
		if (!nl)
			return 0;
		if (n->len) {
			if (apply_event(n, n->buf, n->len))
				return -1;
			n->len = 0;
		} else if (take && apply_event(n, p, take)) {
			return -1;
		}
		p += take + 1;
		len -= take + 1;
	}
	return n->failed ? -1 : 0;
}

int cli_ndjson_end(struct cli_ndjson *n)
{
	if (n->failed)
		return -1;
	if (n->len)
		return ndjson_fail(n,
				   "the stream ended inside an event (kilnd or the sandbox went away%s)",
				   "");
	if (!n->done && n->exited)
		return ndjson_fail(
			n,
			"the stream ended after the exit event, without the result event (kilnd or the sandbox went away%s)",
			"");
	if (!n->done)
		return ndjson_fail(
			n,
			"the stream ended without an exit event (kilnd or the sandbox went away%s)",
			"");
	return 0;
}
