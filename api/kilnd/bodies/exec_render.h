/*
 * exec_render: exec results as JSON (docs/api.md, "POST .../exec"): the
 * buffered result object and the streaming NDJSON events.
 *
 * Contract:
 *  - Pure (jansson only), no I/O, no global state.
 *  - Output bytes are the guest's and may be anything. In "auto" mode they
 *    become a JSON string when they are valid UTF-8 and base64 otherwise;
 *    the encoding is always stated next to them. The streaming encoder
 *    keeps, per stream, the up to 3 bytes of a UTF-8 character cut by a
 *    chunk boundary, so text stays text across chunks.
 *  - Event lines end in '\n' and are malloc'd (free()).
 */
#ifndef KILN_EXEC_RENDER_H
#define KILN_EXEC_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <kiln/agent.h>

#include "api/proto/agent_proto.h"
#include "api/kilnd/core/api_error.h"

/* An exec's or run's result as libkiln's kiln_agent_exec and
 * kiln_agent_run give it. exec_result_init before, exec_result_free after. */
struct exec_result {
	struct kiln_exit_status st;
	char *out, *err; /* kiln_free */
	size_t out_len, err_len;
	struct kiln_run_result run; /* run.data: kiln_free */
};

void exec_result_init(struct exec_result *r);
void exec_result_free(struct exec_result *r);

/*
 * The buffered result object. base64: always base64 ("output_encoding":
 * "base64"). duration_ms: the host's view. NULL when out of memory.
 */
/* How a process ended, as every exit object of the API says it: exit_code,
 * signal, timed_out, stdout_bytes, stderr_bytes (exit_render_status), and
 * its times wall_us, user_us, sys_us (exit_render_times), set on o.
 * 0 or -ENOMEM. */
int exit_render_status(json_t *o, const struct kiln_exit_status *ex);
int exit_render_times(json_t *o, const struct kiln_exit_status *ex);

json_t *exec_render_result(const struct exec_result *res, bool base64, double duration_ms);

/* Streaming state: bytes of an unfinished UTF-8 character, per stream. */
struct exec_stream_enc {
	bool base64;
	uint8_t hold[2][4];
	size_t hold_len[2];
};

void exec_stream_enc_init(struct exec_stream_enc *enc, bool base64);

/*
 * The event line for `n` bytes of stdout or stderr (AGENT_STDOUT or
 * AGENT_STDERR). 0 with *line (NULL when everything was held back) and
 * *len; -ENOMEM.
 */
int exec_event_output(struct exec_stream_enc *enc, enum agent_stream st, const uint8_t *d, size_t n,
		      char **line, size_t *len);

/* The event for bytes still held for st (an incomplete character at the
 * end of the output: sent as data_base64), or *line NULL when none. */
int exec_event_flush(struct exec_stream_enc *enc, enum agent_stream st, char **line, size_t *len);

/* The exit event. NULL when out of memory. */
char *exec_event_exit(const struct kiln_exit_status *ex, double duration_ms, size_t *len);

/*
 * run: the result file in res (run_result.h) as the members "result" and
 * "error" of o. 0 or -ENOMEM.
 */
int exec_render_run_result(json_t *o, const struct kiln_run_result *res);

/* run's last event: {"type":"result","result":...,"error":...}. NULL when out of memory. */
char *exec_event_result(const struct kiln_run_result *res, size_t *len);

/* Any event object as one compact NDJSON line; consumes o (NULL: out of memory gives NULL). */
char *exec_event_json(json_t *o, size_t *len);

/* The error event {"type":"error","error":{"code","message"}}. NULL when out of memory. */
char *exec_event_error(const struct api_err *e, size_t *len);

#endif
