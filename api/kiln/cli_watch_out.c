/* kiln fs watch's output from kilnd's NDJSON events; see cli_watch_out.h. */
#include "api/kiln/cli_watch_out.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/base/json.h"
#include "lib/base/text_clean.h"

void cli_watch_out_init(struct cli_watch_out *o, bool raw, cli_write_fn w, void *arg)
{
	memset(o, 0, sizeof(*o));
	o->raw = raw;
	o->w = w;
	o->arg = arg;
}

void cli_watch_out_free(struct cli_watch_out *o)
{
	free(o->buf);
	o->buf = NULL;
	o->len = 0;
}

static int bad(struct cli_watch_out *o, const char *why)
{
	o->failed = true;
	return cli_fail_set(&o->fail, CLI_EXIT_API, "bad_stream",
			    "kilnd's watch stream is broken: %s", why);
}

static int wr(struct cli_watch_out *o, int fd, const char *s, size_t n)
{
	if (o->w(o->arg, fd, s, n) < 0) {
		o->failed = true;
		return cli_fail_set(&o->fail, CLI_EXIT_LOCAL, NULL,
				    "writing the events failed (the reader went away)");
	}
	return 0;
}

static int out(struct cli_watch_out *o, int fd, const char *s)
{
	return wr(o, fd, s, strlen(s));
}

/* A path field of e, scrubbed for the terminal; NULL when absent or not a string. */
static const char *path_of(const json_t *e, const char *key, char *buf, size_t cap)
{
	const char *s = json_string_value(json_object_get(e, key));

	if (!s)
		return NULL;
	text_clean_term(buf, cap, s, strlen(s));
	return buf;
}

/* One event in the human format. */
static int show(struct cli_watch_out *o, const json_t *e, const char *type)
{
	/* A path is at most 4095 bytes from the guest, each at most 3 once
	 * made valid UTF-8; scrubbing keeps lengths. */
	char p[3 * 4096 + 1], old[3 * 4096 + 1], line[sizeof(p) + sizeof(old) + 64];
	bool dir = json_is_true(json_object_get(e, "is_dir"));

	if (!strcmp(type, "overflow")) {
		const char *why = json_string_value(json_object_get(e, "reason"));
		char r[32];

		text_clean_term(r, sizeof(r), why ? why : "?", strlen(why ? why : "?"));
		snprintf(line, sizeof(line),
			 "overflow  %lld events lost (%s); rescan to catch up\n",
			 (long long)json_integer_value(json_object_get(e, "dropped")), r);
		return out(o, 1, line);
	}
	if (!path_of(e, "path", p, sizeof(p)))
		return bad(o, "an event without its path");
	if (!strcmp(type, "rename")) {
		if (!path_of(e, "old_path", old, sizeof(old)))
			return bad(o, "a rename without old_path");
		snprintf(line, sizeof(line), "rename  %s%s -> %s%s\n", old, dir ? "/" : "", p,
			 dir ? "/" : "");
	} else {
		snprintf(line, sizeof(line), "%-6s  %s%s\n", type, p, dir ? "/" : "");
	}
	return out(o, 1, line);
}

static int apply(struct cli_watch_out *o, const char *text, size_t n)
{
	json_error_t je;
	json_t *e = json_strict_loadb(text, n, &je);
	const char *type = json_string_value(json_object_get(e, "type"));
	int rc = 0;

	if (!json_is_object(e) || !type) {
		json_decref(e);
		return bad(o, "a line that is not an event object");
	}
	if (o->ended) {
		rc = bad(o, "an event after the end event");
	} else if (!strcmp(type, "error")) {
		const json_t *err = json_object_get(e, "error");
		const char *code = json_string_value(json_object_get(err, "code"));
		const char *msg = json_string_value(json_object_get(err, "message"));

		o->failed = true;
		rc = cli_fail_set(&o->fail, code ? cli_exit_for_code(code) : CLI_EXIT_API,
				  code ? code : "error", "%s", msg ? msg : "the watch failed");
	} else if (o->raw) {
		if ((rc = wr(o, 1, text, n)) == 0)
			rc = wr(o, 1, "\n", 1);
	} else if (!strcmp(type, "create") || !strcmp(type, "modify") || !strcmp(type, "delete") ||
		   !strcmp(type, "rename") || !strcmp(type, "overflow")) {
		rc = show(o, e, type);
	}
	if (!rc && !o->raw && !strcmp(type, "watching")) {
		const char *path = json_string_value(json_object_get(e, "path"));
		char p[3 * 4096 + 1], line[sizeof(p) + 96];

		text_clean_term(p, sizeof(p), path ? path : "?", strlen(path ? path : "?"));
		snprintf(line, sizeof(line),
			 "kiln: watching %s (%s, %lld directories); Ctrl-C ends\n", p,
			 json_is_true(json_object_get(e, "recursive")) ? "recursive"
								       : "not recursive",
			 (long long)json_integer_value(json_object_get(e, "watches")));
		rc = out(o, 2, line);
	}
	if (!rc && !strcmp(type, "end")) {
		const char *why = json_string_value(json_object_get(e, "reason"));
		char r[64], line[128];

		o->ended = true;
		if (!o->raw) {
			text_clean_term(r, sizeof(r), why ? why : "?", strlen(why ? why : "?"));
			snprintf(line, sizeof(line), "kiln: the watch ended: %s\n", r);
			rc = out(o, 2, line);
		}
	}
	json_decref(e);
	return rc;
}

int cli_watch_out_feed(struct cli_watch_out *o, const char *p, size_t n)
{
	while (n && !o->failed) {
		const char *nl = memchr(p, '\n', n);
		size_t take = nl ? (size_t)(nl - p) : n;

		if (o->len + take > CLI_WATCH_LINE_MAX)
			return bad(o, "a line longer than 64 KiB");
		if (!o->buf && !(o->buf = malloc(CLI_WATCH_LINE_MAX)))
			return cli_fail_set(&o->fail, CLI_EXIT_LOCAL, NULL, "out of memory");
		memcpy(o->buf + o->len, p, take);
		o->len += take;
		p += take;
		n -= take;
		if (!nl)
			break;
		p++;
		n--;
		if (o->len && apply(o, o->buf, o->len))
			return -1;
		o->len = 0;
	}
	return o->failed ? -1 : 0;
}

int cli_watch_out_end(struct cli_watch_out *o)
{
	if (o->failed)
		return -1;
	if (o->len)
		return bad(o, "it ended inside a line");
	if (!o->ended)
		return bad(o, "it ended without its end event");
	return 0;
}
