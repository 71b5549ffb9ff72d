/*
 * cli_exec_out: an exec's result (docs/api.md, POST .../exec) turned into
 * our stdout, stderr and exit status: the buffered JSON object, and the
 * NDJSON stream split into lines and applied event by event.
 *
 * Contract:
 *  - Pure: output goes through a caller's write function (the CLI's
 *    writes fds 1 and 2; a test's collects), no global state.
 *  - The stream's lines are bounded (CLI_NDJSON_LINE_MAX): a broken or
 *    hostile server cannot make the CLI buffer without end.
 *  - Exit status: the process's exit_code; 128 + signal when a signal
 *    ended it (the shell's convention); 124 when timeout_ms expired (the
 *    agent reports that as exit_code 124 already, this keeps it so).
 */
#ifndef KILN_CLI_EXEC_OUT_H
#define KILN_CLI_EXEC_OUT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "api/kiln/cli_error.h"

/* Output events are the agent's chunks; base64 and JSON escaping make a
 * line at most a few times larger. 16 MiB is far above that. */
#define CLI_NDJSON_LINE_MAX (16u << 20)

/* fd is 1 or 2. Returns 0, or -errno (EPIPE: our reader went away). */
typedef int (*cli_write_fn)(void *arg, int fd, const void *p, size_t n);

/* The exit status an exec result or exit event stands for; -1 if malformed. */
int cli_exec_status(const json_t *result);

/*
 * Write a buffered result's stdout and stderr (text or base64) and warn on
 * stderr when kilnd truncated one. 0 with *status, or -1 with f.
 */
int cli_exec_result(const json_t *result, cli_write_fn w, void *arg, int *status,
		    struct cli_fail *f);

struct cli_ndjson {
	char *buf;
	size_t len, cap;
	bool done;  /* the exit (or error) event arrived, or until_seq was reached */
	int status; /* the exit status, once done */
	struct cli_fail fail;
	bool failed; /* an error event or a malformed line */
	cli_write_fn w;
	void *arg;
	/*
	 * A process's output stream (GET .../processes/{proc}/output) read up
	 * to a point: with until set, the stream is done once the output
	 * events (which carry seq) reach until_seq, or the attached event
	 * starts at or past it; `reached` then says so and status is 0.
	 */
	bool until, reached;
	unsigned long long until_seq;
	const char *who; /* names the command in warnings ("exec", "logs") */
	/* run's stream (POST .../run?stream=1): a `result` event follows exit
	 * and is the last; it is kept here (cli_ndjson_free drops it). */
	bool want_result;
	bool exited;
	json_t *result;
};

void cli_ndjson_init(struct cli_ndjson *n, cli_write_fn w, void *arg);
void cli_ndjson_free(struct cli_ndjson *n);

/*
 * Events other than output, exit, error (and result, with want_result) are skipped, except gap (a
 * warning on stderr: bytes lost from a process's ring) and, for exit,
 * a warning when kilnd truncated a stream at output_cap.
 *
 * Feed response bytes. Complete lines are applied as they arrive; a
 * partial one is kept. 0, or -1 with n->fail set (malformed event, line
 * over the bound, error event, failed write, bytes after the last event).
 */
int cli_ndjson_feed(struct cli_ndjson *n, const char *p, size_t len);

/*
 * At the end of the response: 0 with n->status when the exit event came,
 * else -1 with n->fail (the stream ended early or with an error event).
 */
int cli_ndjson_end(struct cli_ndjson *n);

#endif
