/*
 * route: which endpoint of docs/api.md a method and path name.
 *
 * Contract: pure. The path is the URL path only (no query string), as the
 * HTTP server decoded it. Exact segments only: no trailing '/', no
 * empty segments, no prefix matching. A path that names a known resource
 * with a method it does not have is method_not_allowed (405) with the
 * Allow header's value; anything else unknown is route_not_found (404).
 * An {id} segment (an image's name under /v1/images, a template's under /v1/templates; and a {proc} segment, a guest process's id, or {cp},
 * a checkpoint's name) is captured as given (at most 64 bytes); whether
 * such a sandbox, process or checkpoint exists is the caller's question.
 */
#ifndef KILN_ROUTE_H
#define KILN_ROUTE_H

#include "api/kilnd/core/api_error.h"

enum route_op {
	OP_NONE = 0,
	OP_HEALTH,
	OP_METRICS,
	OP_IMAGES_LIST,
	OP_SANDBOX_LIST,
	OP_SANDBOX_CREATE,
	OP_SANDBOX_GET,
	OP_SANDBOX_DELETE,
	OP_SANDBOX_START,
	OP_SANDBOX_STOP,
	OP_EXEC,
	OP_RUN,
	OP_FILE_GET,
	OP_FILE_PUT,
	OP_PROC_CREATE,
	OP_PROC_LIST,
	OP_PROC_GET,
	OP_PROC_OUTPUT,
	OP_PROC_STDIN,
	OP_PROC_SIGNAL,
	OP_PROC_WAIT,
	OP_PROC_RESIZE,
	OP_PROC_TTY,
	OP_SHELL,
	OP_FILE_STAT,
	OP_FILE_LIST,
	OP_FILE_MKDIR,
	OP_FILE_REMOVE,
	OP_FILE_RENAME,
	OP_FILE_WATCH,
	OP_ARCHIVE_GET,
	OP_ARCHIVE_PUT,
	OP_PORT_LIST,
	OP_PORT_ADD,
	OP_PORT_REMOVE,
	OP_SANDBOX_PAUSE,
	OP_SANDBOX_RESUME,
	OP_SANDBOX_HIBERNATE,
	OP_SANDBOX_WAKE,
	OP_CHECKPOINT_LIST,
	OP_CHECKPOINT_CREATE,
	OP_CHECKPOINT_GET,
	OP_CHECKPOINT_DELETE,
	OP_CHECKPOINT_RESTORE,
	OP_FIREWALL_GET,
	OP_FIREWALL_PUT,
	OP_FIREWALL_LOG,
	OP_PREVIEW_LIST,
	OP_PREVIEW_ADD,
	OP_PREVIEW_REMOVE,
	OP_IMAGE_IMPORT,
	OP_IMAGE_GET,
	OP_IMAGE_DELETE,
	OP_TEMPLATES_LIST,
	OP_TEMPLATE_BUILD,
	OP_TEMPLATE_GET,
	OP_TEMPLATE_DELETE,
	OP_COUNT /* not an operation: the number of them */
};

#define ROUTE_ID_MAX 64

struct route_match {
	enum route_op op;
	char id[ROUTE_ID_MAX + 1]; /* the {id} segment, "" when the route has none */
	char proc[ROUTE_ID_MAX + 1]; /* the {proc} segment (a process id), {port} (a host port) or {cp}
				      * (a checkpoint name), "" when none */
	const char *allow;         /* methods of the matched path ("GET, POST") */
};

/*
 * Match method and path. 0 and *m filled; otherwise -1 with e set to
 * route_not_found, or method_not_allowed with m->allow set.
 */
int route_match(const char *method, const char *path, struct route_match *m, struct api_err *e);

/* True when the operation takes a request body (JSON or upload). */
bool route_has_body(enum route_op op);

#endif
