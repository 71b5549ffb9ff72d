/*
 * proc_render: background processes as JSON (docs/api.md, "Processes"):
 * the process object, the exit object of wait, and the NDJSON events of
 * GET .../output.
 *
 * Contract:
 *  - Pure (jansson only), no I/O, no global state.
 *  - Output events carry the seq of their first byte (the agent's byte
 *    numbering over stdout and stderr together), so a client can reattach
 *    with ?from=<last seq + bytes> and miss nothing the ring still holds.
 *  - In "auto" mode output is a JSON string when valid UTF-8 and base64
 *    otherwise (data / data_base64). Up to 3 bytes of a character cut at
 *    the end of a chunk are held back and sent with the next chunk of the
 *    same stream; anything else (the other stream, a gap, the exit) sends
 *    them first, as base64, so seq order is never broken.
 *  - Event lines end in '\n', are malloc'd (free()); one call may return
 *    two lines in one buffer (the held bytes, then its own).
 */
#ifndef KILN_PROC_RENDER_H
#define KILN_PROC_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <kiln/agent.h>

#include "api/proto/agent_proto.h"

/* The process object: id, pid, argv, pty, running, exit_code, signal,
 * timed_out, output_bytes, attached. NULL when out of memory. */
json_t *proc_render_view(const struct kiln_proc_entry *p);

/* The exit object (wait; the exit event without "type"). */
json_t *proc_render_exit(const struct kiln_exit_status *ex);

struct proc_out_enc {
	bool base64;
	enum agent_stream st; /* of the held bytes */
	uint64_t seq;         /* of held[0] */
	uint8_t held[4];
	size_t held_len;
};

void proc_out_enc_init(struct proc_out_enc *enc, bool base64);

/* {"type":"attached","id","pid","pty","running","seq"}: the first event. */
char *proc_event_attached(const struct kiln_proc_info *a, size_t *len);

/* Output d[0..n) of stream st starting at seq. 0 with *line (NULL when
 * everything was held back) and *len; -ENOMEM. */
int proc_event_output(struct proc_out_enc *enc, enum agent_stream st, uint64_t seq,
		      const uint8_t *d, size_t n, char **line, size_t *len);

/* {"type":"gap","seq","bytes"}, after any held bytes. NULL: out of memory. */
char *proc_event_gap(struct proc_out_enc *enc, uint64_t seq, uint64_t bytes, size_t *len);

/* {"type":"exit",...the exit object}, after any held bytes. */
char *proc_event_exit(struct proc_out_enc *enc, const struct kiln_exit_status *ex, size_t *len);

#endif
