/*
 * cli_watch_out: the NDJSON stream of GET .../files/watch (docs/api.md,
 * "Watching files") turned into kiln fs watch's output, one line per
 * event as it arrives.
 *
 * Contract:
 *  - Pure: output goes through a cli_write_fn (fds 1 and 2), no global
 *    state; a test collects it.
 *  - Lines are bounded (CLI_WATCH_LINE_MAX): a broken or hostile server
 *    cannot make the CLI buffer without end. Names are printed through
 *    the CLI's scrubber, so a file name cannot drive the terminal.
 *  - Human format (default), one line per event on stdout:
 *      create  a/b.txt          (directories end in '/')
 *      modify  a/b.txt
 *      delete  a/b.txt
 *      rename  a/b.txt -> a/c.txt
 *      overflow  12 events lost (queue); rescan to catch up
 *    and on stderr the start ("kiln: watching /w (recursive, 3
 *    directories); Ctrl-C ends") and the end's reason;
 *    raw (--json): each line exactly as kilnd sent it, nothing on stderr.
 *  - The `end` event finishes the stream (its reason on stderr); an
 *    `error` event or a malformed line fails it. Unknown event types are
 *    skipped (newer kilnd).
 */
#ifndef KILN_CLI_WATCH_OUT_H
#define KILN_CLI_WATCH_OUT_H

#include <stdbool.h>
#include <stddef.h>

#include "api/kiln/cli_error.h"
#include "api/kiln/cli_exec_out.h"

/* Two paths of AGENT_PATH_MAX, JSON-escaped (up to 6 bytes a byte), and the rest. */
#define CLI_WATCH_LINE_MAX (64u << 10)

struct cli_watch_out {
	char *buf;
	size_t len;
	bool raw;    /* --json */
	bool ended;  /* the end event arrived */
	bool failed; /* an error event or a malformed line: fail says why */
	struct cli_fail fail;
	cli_write_fn w;
	void *arg;
};

void cli_watch_out_init(struct cli_watch_out *o, bool raw, cli_write_fn w, void *arg);
void cli_watch_out_free(struct cli_watch_out *o);
/* Feed response bytes; complete lines are applied. 0, or -1 with o->fail. */
int cli_watch_out_feed(struct cli_watch_out *o, const char *p, size_t n);
/* At the end of the response: 0 when the end event came, else -1 with o->fail. */
int cli_watch_out_end(struct cli_watch_out *o);

#endif
