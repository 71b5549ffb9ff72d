/*
 * watch_render: the NDJSON lines of GET /v1/sandboxes/{id}/files/watch
 * (docs/api.md, "Watching files"), from libkiln's events (kiln/agent.h).
 *
 * Contract: pure (jansson only). Each function returns one compact JSON
 * object ending in '\n' (malloc'd, *len without the NUL), or NULL when
 * out of memory. libkiln's agent client has already checked every field.
 */
#ifndef KILN_WATCH_RENDER_H
#define KILN_WATCH_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kiln/agent.h>

#include "api/proto/agent_proto.h"

/* {"type":"watching","path":P,"recursive":B,"watches":N}: the first line. */
char *watch_line_started(const char *path, bool recursive, uint32_t watches, size_t *len);
/* {"type":"create"|"modify"|"delete"|"rename"|"overflow","seq":S,...}. */
char *watch_line_event(const struct kiln_fs_event *ev, size_t *len);
/* {"type":"end","reason":R[,"state":S]}: the last line of a stream that ended cleanly. */
char *watch_line_end(const char *reason, const char *state, size_t *len);

#endif
