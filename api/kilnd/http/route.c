/* Endpoint matching; see route.h. */
#include "api/kilnd/http/route.h"

#include <string.h>

/* One resource path and its operations by method. "{id}", "{proc}",
 * "{port}" and "{cp}" match one non-empty segment each. */
static const struct {
	const char *pattern;
	const char *allow;
	struct {
		const char *method;
		enum route_op op;
	} ops[3];
} routes[] = {
	{ "/v1/health", "GET", { { "GET", OP_HEALTH } } },
	{ "/metrics", "GET", { { "GET", OP_METRICS } } },
	{ "/v1/images", "GET, POST", { { "GET", OP_IMAGES_LIST }, { "POST", OP_IMAGE_IMPORT } } },
	{ "/v1/images/{id}", "GET, DELETE", { { "GET", OP_IMAGE_GET }, { "DELETE", OP_IMAGE_DELETE } } },
	{ "/v1/templates", "GET, POST", { { "GET", OP_TEMPLATES_LIST }, { "POST", OP_TEMPLATE_BUILD } } },
	{ "/v1/templates/{id}", "GET, DELETE", { { "GET", OP_TEMPLATE_GET }, { "DELETE", OP_TEMPLATE_DELETE } } },
	{ "/v1/sandboxes", "GET, POST", { { "GET", OP_SANDBOX_LIST }, { "POST", OP_SANDBOX_CREATE } } },
	{ "/v1/sandboxes/{id}", "GET, DELETE",
	  { { "GET", OP_SANDBOX_GET }, { "DELETE", OP_SANDBOX_DELETE } } },
	{ "/v1/sandboxes/{id}/start", "POST", { { "POST", OP_SANDBOX_START } } },
	{ "/v1/sandboxes/{id}/stop", "POST", { { "POST", OP_SANDBOX_STOP } } },
	{ "/v1/sandboxes/{id}/exec", "POST", { { "POST", OP_EXEC } } },
	{ "/v1/sandboxes/{id}/run", "POST", { { "POST", OP_RUN } } },
	{ "/v1/sandboxes/{id}/files", "GET, PUT", { { "GET", OP_FILE_GET }, { "PUT", OP_FILE_PUT } } },
	{ "/v1/sandboxes/{id}/processes", "GET, POST",
	  { { "GET", OP_PROC_LIST }, { "POST", OP_PROC_CREATE } } },
	{ "/v1/sandboxes/{id}/processes/{proc}", "GET", { { "GET", OP_PROC_GET } } },
	{ "/v1/sandboxes/{id}/processes/{proc}/output", "GET", { { "GET", OP_PROC_OUTPUT } } },
	{ "/v1/sandboxes/{id}/processes/{proc}/stdin", "POST", { { "POST", OP_PROC_STDIN } } },
	{ "/v1/sandboxes/{id}/processes/{proc}/signal", "POST", { { "POST", OP_PROC_SIGNAL } } },
	{ "/v1/sandboxes/{id}/processes/{proc}/wait", "POST", { { "POST", OP_PROC_WAIT } } },
	{ "/v1/sandboxes/{id}/processes/{proc}/resize", "POST", { { "POST", OP_PROC_RESIZE } } },
	{ "/v1/sandboxes/{id}/processes/{proc}/tty", "GET", { { "GET", OP_PROC_TTY } } },
	{ "/v1/sandboxes/{id}/shell", "POST", { { "POST", OP_SHELL } } },
	{ "/v1/sandboxes/{id}/files/stat", "GET", { { "GET", OP_FILE_STAT } } },
	{ "/v1/sandboxes/{id}/files/list", "GET", { { "GET", OP_FILE_LIST } } },
	{ "/v1/sandboxes/{id}/files/mkdir", "POST", { { "POST", OP_FILE_MKDIR } } },
	{ "/v1/sandboxes/{id}/files/remove", "POST", { { "POST", OP_FILE_REMOVE } } },
	{ "/v1/sandboxes/{id}/files/rename", "POST", { { "POST", OP_FILE_RENAME } } },
	{ "/v1/sandboxes/{id}/files/watch", "GET", { { "GET", OP_FILE_WATCH } } },
	{ "/v1/sandboxes/{id}/archive", "GET, PUT", { { "GET", OP_ARCHIVE_GET }, { "PUT", OP_ARCHIVE_PUT } } },
	{ "/v1/sandboxes/{id}/ports", "GET, POST", { { "GET", OP_PORT_LIST }, { "POST", OP_PORT_ADD } } },
	{ "/v1/sandboxes/{id}/ports/{port}", "DELETE", { { "DELETE", OP_PORT_REMOVE } } },
	{ "/v1/sandboxes/{id}/previews", "GET, POST", { { "GET", OP_PREVIEW_LIST }, { "POST", OP_PREVIEW_ADD } } },
	{ "/v1/sandboxes/{id}/previews/{port}", "DELETE", { { "DELETE", OP_PREVIEW_REMOVE } } },
	{ "/v1/sandboxes/{id}/pause", "POST", { { "POST", OP_SANDBOX_PAUSE } } },
	{ "/v1/sandboxes/{id}/resume", "POST", { { "POST", OP_SANDBOX_RESUME } } },
	{ "/v1/sandboxes/{id}/hibernate", "POST", { { "POST", OP_SANDBOX_HIBERNATE } } },
	{ "/v1/sandboxes/{id}/wake", "POST", { { "POST", OP_SANDBOX_WAKE } } },
	{ "/v1/sandboxes/{id}/checkpoints", "GET, POST",
	  { { "GET", OP_CHECKPOINT_LIST }, { "POST", OP_CHECKPOINT_CREATE } } },
	{ "/v1/sandboxes/{id}/checkpoints/{cp}", "GET, DELETE",
	  { { "GET", OP_CHECKPOINT_GET }, { "DELETE", OP_CHECKPOINT_DELETE } } },
	{ "/v1/sandboxes/{id}/checkpoints/{cp}/restore", "POST", { { "POST", OP_CHECKPOINT_RESTORE } } },
	{ "/v1/sandboxes/{id}/firewall", "GET, PUT", { { "GET", OP_FIREWALL_GET }, { "PUT", OP_FIREWALL_PUT } } },
	{ "/v1/sandboxes/{id}/firewall/log", "GET", { { "GET", OP_FIREWALL_LOG } } },
};

/* Match path against pattern; the {id} segment goes to id, {proc}, {port} or {cp} to proc. */
static bool match_pattern(const char *pattern, const char *path, char *id, char *proc)
{
	const char *p = pattern, *s = path;

	id[0] = '\0';
	proc[0] = '\0';
	while (*p) {
		bool is_id = strncmp(p, "{id}", 4) == 0;

		/* {port} (a host port) and {cp} (a checkpoint name) share proc:
		 * no route has two of them. */
		bool is_cp = strncmp(p, "{cp}", 4) == 0;

		if (is_id || is_cp || strncmp(p, "{proc}", 6) == 0 || strncmp(p, "{port}", 6) == 0) {
			size_t n = strcspn(s, "/");
			char *to = is_id ? id : proc;

			if (n == 0 || n > ROUTE_ID_MAX)
				return false;
			memcpy(to, s, n);
			to[n] = '\0';
			s += n;
			p += is_id || is_cp ? 4 : 6;
			continue;
		}
		if (*p != *s)
			return false;
		p++;
		s++;
	}
	return *s == '\0';
}

int route_match(const char *method, const char *path, struct route_match *m, struct api_err *e)
{
	memset(m, 0, sizeof(*m));
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		if (!match_pattern(routes[i].pattern, path, m->id, m->proc))
			continue;
		m->allow = routes[i].allow;
		for (size_t j = 0; j < 3 && routes[i].ops[j].method; j++) {
			if (strcmp(routes[i].ops[j].method, method) == 0) {
				m->op = routes[i].ops[j].op;
				return 0;
			}
		}
		api_err_set(e, API_E_METHOD_NOT_ALLOWED, "%.16s %.200s: method not allowed here (allowed: %s)",
			    method, path, routes[i].allow);
		return -1;
	}
	m->id[0] = '\0';
	m->proc[0] = '\0';
	api_err_set(e, API_E_ROUTE_NOT_FOUND, "%.200s: no such endpoint (see docs/api.md)", path);
	return -1;
}

bool route_has_body(enum route_op op)
{
	return op == OP_SANDBOX_CREATE || op == OP_SANDBOX_START || op == OP_SANDBOX_STOP ||
	       op == OP_EXEC || op == OP_RUN || op == OP_FILE_PUT || op == OP_PROC_CREATE || op == OP_PROC_STDIN ||
	       op == OP_PROC_SIGNAL || op == OP_PROC_RESIZE || op == OP_SHELL ||
	       op == OP_FILE_MKDIR || op == OP_FILE_REMOVE || op == OP_FILE_RENAME || op == OP_ARCHIVE_PUT ||
	       op == OP_PORT_ADD || op == OP_SANDBOX_PAUSE || op == OP_SANDBOX_RESUME ||
	       op == OP_SANDBOX_HIBERNATE || op == OP_SANDBOX_WAKE || op == OP_CHECKPOINT_CREATE ||
	       op == OP_CHECKPOINT_RESTORE || op == OP_FIREWALL_PUT || op == OP_PREVIEW_ADD ||
	       op == OP_IMAGE_IMPORT || op == OP_TEMPLATE_BUILD;
}
