/*
 * proc_spec: the requests of kilnd's background processes
 * (docs/api.md, "Processes"): the create and shell bodies, the signal and
 * resize bodies, the {proc} path segment and the query parameters of
 * output, tty, stdin and wait, validated into what libkiln's agent API
 * (kiln/agent.h) takes.
 *
 * Contract:
 *  - Pure (jansson only). Unknown fields and query parameters are refused;
 *    the first failing check wins, in the order of the tables in
 *    docs/api.md. Limits are the agent's (docs/agent-protocol.md, 5 and
 *    7.4), so a request that passes here is not refused for its shape.
 *  - The create body is exec's without output_cap and output_encoding,
 *    plus pty, rows, cols and ring_bytes; it is parsed by exec_spec (so
 *    both endpoints read argv, env, cwd, user, timeout_ms and stdin the
 *    same way) and released with proc_spec_free().
 */
#ifndef KILN_PROC_SPEC_H
#define KILN_PROC_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include <kiln/agent.h>

#include "api/proto/agent_proto.h"
#include "api/kilnd/core/agent_error.h"
#include "api/kilnd/core/api_error.h"
#include "api/kilnd/bodies/exec_spec.h"
#include "api/kilnd/core/query.h"

struct proc_spec {
	struct exec_spec x; /* argv, env, cwd, user, timeout_ms, stdin */
	bool pty;
	uint16_t rows, cols; /* 0: the agent's 24x80 */
	uint32_t ring_bytes; /* 0: AGENT_RING_DEFAULT */
};

/* POST .../processes. 0, or -1 with e; proc_spec_free() either way. */
int proc_spec_parse(json_t *body, struct proc_spec *s, struct api_err *e);

/* POST .../shell: body NULL or {rows, cols, user, cwd, env, timeout_ms,
 * ring_bytes}; the process is "sh" on a PTY. */
int proc_shell_parse(const json_t *body, struct proc_spec *s, struct api_err *e);

/* libkiln's spawn options from a parsed (and exec_env_merge'd) spec. Stdin
 * is not part of a spawn: the caller sends s->x.stdin_data itself. */
void proc_spec_opts(const struct proc_spec *s, struct kiln_exec_opts *o);

void proc_spec_free(struct proc_spec *s);

/* The {proc} path segment: a decimal process id 1..4294967295 without
 * sign or leading zeros; anything else is 404 process_not_found. */
int proc_id_parse(const char *seg, uint32_t *id, struct api_err *e);

/* An agent failure on a by-id request: api_err_from_agent_fail, except
 * that the agent's not_found (no such id, or evicted) is
 * process_not_found. */
void proc_err_from_agent_fail(struct api_err *e, enum kiln_agent_fail kind, const char *code,
			      const char *msg, const char *what);
/* The same with a's last failure (a: the request's own kiln_agent). */
void proc_err_from_agent(struct api_err *e, const kiln_agent *a, const char *what);

/* POST .../signal: {"signal": name or 1..64, "group": bool}. */
int proc_signal_parse(const json_t *body, int *signo, bool *group, struct api_err *e);

/* POST .../resize: {"rows": 1..65535, "cols": 1..65535}, both required. */
int proc_resize_parse(const json_t *body, uint16_t *rows, uint16_t *cols, struct api_err *e);

/* Where an output or tty stream starts: from=SEQ|now (default: the oldest
 * byte the ring holds). */
struct proc_from {
	enum kiln_attach_from from;
	uint64_t seq;
};

/* GET .../output: from, encoding=auto|base64. */
int proc_query_output(const struct query_kv *kv, size_t n, struct proc_from *f, bool *base64,
		      struct api_err *e);
/* GET .../tty: from. */
int proc_query_tty(const struct query_kv *kv, size_t n, struct proc_from *f, struct api_err *e);
/* POST .../stdin: close=1|0|true|false. */
int proc_query_stdin(const struct query_kv *kv, size_t n, bool *close, struct api_err *e);
/* POST .../wait: timeout_ms (0..AGENT_TIMEOUT_MAX_MS, 0 or absent: no limit). */
int proc_query_wait(const struct query_kv *kv, size_t n, uint32_t *timeout_ms, struct api_err *e);

#endif
