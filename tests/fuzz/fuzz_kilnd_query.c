/*
 * fuzz_kilnd_query: what a kilnd client sends outside JSON bodies: URL
 * query strings (api/kilnd/core/query.c, and the process endpoints' in
 * api/kilnd/bodies/proc_spec.c) and the raw tty stream's resize
 * escape (api/kilnd/bodies/tty_escape.c).
 *
 * Input: selector (1 byte: 0..11 and 13 queries, 12 the tty), then
 *   query selectors: a query string "k=v&k&..." split as the HTTP server
 *     does (at most HTTP's 32 pairs; '+' is a space, then %HH decoded by
 *     query_unescape), handed to one endpoint's parser;
 *   the tty selector: a chunk-size byte, then the client's stream.
 * Invariants: query_unescape never lengthens a string and never decodes a
 * NUL (the returned length is strlen's); a refusal has an API code and a
 * message; an accepted path is absolute and fits AGENT_PATH_MAX, depth and
 * limit and timeouts are inside the documented ranges, a label filter has
 * a non-empty key. The tty parser consumes something of every non-empty
 * chunk, holds less than TTY_ESC_MAX bytes, reports sizes 1..65535 only,
 * gives the same bytes and events for the fuzzer's split as for the whole
 * stream at once, and a stream without a sequence comes out byte for byte.
 */
#include "api/kilnd/core/names.h"
#include "api/kilnd/core/query.h"
#include "api/kilnd/bodies/proc_spec.h"
#include "api/kilnd/bodies/tty_escape.h"
#include "fuzz.h"

#define PAIRS_MAX 32 /* HTTP_QUERY_MAX */
#define NSEL \
	16 /* 12 query parsers, the tty stream (12), the watch query (13), image import (14), template build (15) */
#define TTY_SEL 12

static void check_path(const char *p)
{
	FUZZ_ASSERT(p && p[0] == '/' && strlen(p) <= AGENT_PATH_MAX);
}

static int run_query(unsigned sel, const struct query_kv *kv, size_t n, struct api_err *e)
{
	switch (sel) {
	case 0:
		return query_none(kv, n, "health", e);
	case 1: {
		bool stream = false;

		return query_exec(kv, n, &stream, e);
	}
	case 2: {
		struct list_filter f;
		json_t *labels;
		int r = query_list(kv, n, &f, e);

		if (r)
			return r;
		FUZZ_ASSERT(f.state >= -1 && f.state < SANDBOX_STATE_COUNT &&
			    f.nlabels <= QUERY_LABELS_MAX);
		labels = json_pack("{ss}", "team", "a=b");
		for (size_t i = 0; i < f.nlabels; i++)
			FUZZ_ASSERT(f.label_key_len[i] >= 1 &&
				    f.label_key[i][f.label_key_len[i]] == '=');
		(void)list_filter_match(&f, SANDBOX_RUNNING, labels);
		json_decref(labels);
		return 0;
	}
	case 3: {
		const char *p = NULL;
		struct kiln_read_opts o = { 0 };
		int r = query_file_get(kv, n, &p, &o, e);

		if (!r)
			check_path(p);
		return r;
	}
	case 4: {
		const char *p = NULL;
		struct kiln_write_opts o = { 0 };
		int r = query_file_put(kv, n, &p, &o, e);

		if (!r) {
			check_path(p);
			FUZZ_ASSERT(o.mode == -1 || (o.mode >= 0 && o.mode <= 07777));
		}
		return r;
	}
	case 5: {
		const char *p = NULL;
		bool follow;
		enum agent_user u;
		int r = query_file_stat(kv, n, &p, &follow, &u, e);

		if (!r)
			check_path(p);
		return r;
	}
	case 6: {
		const char *p = NULL;
		struct file_list_opts o = { 0 };
		int r = query_file_list(kv, n, &p, &o, e);

		if (!r) {
			check_path(p);
			FUZZ_ASSERT(o.depth >= 1 && o.depth <= AGENT_LIST_DEPTH_MAX);
			FUZZ_ASSERT(o.limit >= 1 && o.limit <= AGENT_LIST_LIMIT_MAX);
		}
		return r;
	}
	case 7: {
		const char *p = NULL;
		enum agent_user u;
		int r = query_archive(kv, n, &p, &u, e);

		if (!r)
			check_path(p);
		return r;
	}
	case 8: {
		struct proc_from f;
		bool b64;

		return proc_query_output(kv, n, &f, &b64, e);
	}
	case 9: {
		struct proc_from f;

		return proc_query_tty(kv, n, &f, e);
	}
	case 10: {
		bool close;

		return proc_query_stdin(kv, n, &close, e);
	}
	case 14: {
		const char *name = NULL, *ref = NULL;
		bool devices;
		int r = query_image_import(kv, n, &name, &devices, &ref, e);

		if (!r)
			FUZZ_ASSERT(name && image_name_valid(name) &&
				    (!ref || image_ref_valid(ref)));
		return r;
	}
	case 15: {
		struct template_build_query q;
		int r = query_template_build(kv, n, &q, e);

		if (!r)
			FUZZ_ASSERT(q.name && image_name_valid(q.name) &&
				    (!q.file || (q.file[0] && q.file[0] != '/')));
		return r;
	}
	case 13: {
		const char *p = NULL;
		struct kiln_watch_opts o = { 0 };
		int r = query_file_watch(kv, n, &p, &o, e);

		if (!r) {
			check_path(p);
			FUZZ_ASSERT(o.max_watches >= 1 && o.max_watches <= AGENT_WATCH_WATCHES_MAX);
			FUZZ_ASSERT(o.queue >= AGENT_WATCH_QUEUE_MIN &&
				    o.queue <= AGENT_WATCH_QUEUE_MAX);
		}
		return r;
	}
	default: {
		uint32_t t = 0;
		int r = proc_query_wait(kv, n, &t, e);

		if (!r)
			FUZZ_ASSERT(t <= AGENT_TIMEOUT_MAX_MS);
		return r;
	}
	}
}

static void unescape(char *s)
{
	size_t before = strlen(s), after = query_unescape(s);

	FUZZ_ASSERT(after <= before && after == strlen(s));
}

static void fuzz_query(unsigned sel, const uint8_t *data, size_t size)
{
	struct query_kv kv[PAIRS_MAX];
	struct api_err e = { 0 };
	char *text = strndup((const char *)data, size), *save = NULL;
	size_t n = 0;

	if (!text)
		return;
	for (char *tok = strtok_r(text, "&", &save); tok && n < PAIRS_MAX;
	     tok = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(tok, '=');

		if (eq) {
			*eq++ = '\0';
			for (char *c = eq; *c; c++)
				if (*c == '+')
					*c = ' ';
			unescape(eq);
		}
		unescape(tok);
		kv[n++] = (struct query_kv){ .key = tok, .value = eq };
	}
	if (run_query(sel, kv, n, &e)) {
		FUZZ_ASSERT(e.code > API_OK && e.code < API_CODE_COUNT);
		FUZZ_ASSERT(e.msg[0] && memchr(e.msg, 0, sizeof(e.msg)));
	}
	free(text);
}

/* What a tty stream came to: the bytes for the process and the events
 * (3 bytes each: event, rows, cols, folded into one record). */
struct tty_run {
	uint8_t *out;
	size_t outlen;
	uint32_t ev[64];
	size_t nev;
};

static void tty_run(const uint8_t *data, size_t size, size_t chunk, struct tty_run *t)
{
	struct tty_esc p;
	size_t off = 0;

	tty_esc_init(&p);
	while (off < size) {
		size_t n = size - off < chunk ? size - off : chunk, used;
		enum tty_esc_ev ev = TTY_ESC_NONE;
		uint16_t rows = 0, cols = 0;

		used = tty_esc_feed(&p, data + off, n, t->out, &t->outlen, &ev, &rows, &cols);
		FUZZ_ASSERT(used >= 1 && used <= n);
		FUZZ_ASSERT(tty_esc_pending(&p) < TTY_ESC_MAX);
		FUZZ_ASSERT(t->outlen + tty_esc_pending(&p) <= off + used);
		FUZZ_ASSERT(ev == TTY_ESC_NONE || ev == TTY_ESC_RESIZE || ev == TTY_ESC_BAD_SIZE);
		if (ev == TTY_ESC_RESIZE)
			FUZZ_ASSERT(rows >= 1 && cols >= 1);
		if (ev != TTY_ESC_NONE && t->nev < 64)
			t->ev[t->nev++] = (uint32_t)ev << 30 ^ (uint32_t)rows << 15 ^ cols ^
				(uint32_t)t->outlen << 8;
		off += used;
	}
	tty_esc_flush(&p, t->out, &t->outlen);
	FUZZ_ASSERT(tty_esc_pending(&p) == 0);
}

/* The fuzzer's split, then the whole stream at once: the same bytes and
 * the same events at the same places (tty_escape.h: any split works). */
static void fuzz_tty(const uint8_t *data, size_t size)
{
	struct tty_run a = { 0 }, b = { 0 };
	size_t chunk;

	if (size < 1)
		return;
	chunk = (size_t)data[0] % 32 + 1;
	data++;
	size--;
	a.out = malloc(size + TTY_ESC_MAX);
	b.out = malloc(size + TTY_ESC_MAX);
	if (a.out && b.out) {
		tty_run(data, size, chunk, &a);
		tty_run(data, size, size ? size : 1, &b);
		FUZZ_ASSERT(a.outlen == b.outlen && !memcmp(a.out, b.out, a.outlen));
		FUZZ_ASSERT(a.nev == b.nev && !memcmp(a.ev, b.ev, a.nev * sizeof(a.ev[0])));
		if (!a.nev)
			FUZZ_ASSERT(a.outlen == size && !memcmp(a.out, data, size));
	}
	free(a.out);
	free(b.out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned sel;

	if (size < 1)
		return 0;
	sel = data[0] % NSEL;
	if (sel == TTY_SEL)
		fuzz_tty(data + 1, size - 1);
	else
		fuzz_query(sel, data + 1, size - 1);
	return 0;
}
