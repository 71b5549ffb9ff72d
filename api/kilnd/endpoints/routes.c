/*
 * routes: kilnd's API, every method and path it serves (docs/api.md,
 * docs/openapi.yaml), one entry per line:
 *
 *	{ METHOD, PATTERN, handler, BODY_<policy>, LIMIT_<name> },
 *
 * PATTERN is the path as docs/openapi.yaml writes it, "{name}" standing
 * for one segment ({id}: a sandbox, an image or a template; {name}: a
 * secret; {proc}: a process id; {port}: a host or guest port; {cp}: a
 * checkpoint; {n}: a share's index). The
 * HTTP library matches requests against this table and answers a path
 * known without the method 405, its Allow listing the path's methods in
 * the order of their lines here. A body is BODY_NONE (any byte is 413),
 * BODY_JSON or BODY_RAW (collected up to --max-body, then the handler
 * runs and reads it as a JSON object or as bytes) or BODY_UPLOAD (the
 * handler runs first and streams it, up to the limit named). Adding an endpoint is one line here, its handler, its
 * description in docs/openapi.yaml and docs/api.md.
 *
 * Naming rule: a handler lives in endpoints/<resource>[_<part>].c, where
 * <resource> is the path's first segment after /v1/sandboxes/{id}/ for a
 * sandbox's sub-resources, and after /v1/ (or /) otherwise; _<part>
 * names a piece of the resource's sub-paths given a file of its own
 * (files_meta.c: /files/{stat,list,mkdir,remove,rename}; files_watch.c:
 * /files/watch; processes_output.c, processes_tty.c). Three kinds of path
 * live with the resource they act on rather than under their own
 * segment: a sandbox's lifecycle actions (start, stop, pause, resume,
 * hibernate, wake) in sandboxes.c, /run (exec with a language) in
 * exec.c, /shell (a process with a terminal) in processes.c. The
 * comment above each group names its file. Not resources: routes.c
 * (this table), handlers.c (what handlers share), service.c (the table
 * served with kilnd's limits, peers and log).
 */
#include "api/kilnd/endpoints/routes.h"

/* clang-format off: one route a line (tests/unit/api_spec_test reads them so) */
const struct http_route routes[] = {
	/* health.c, metrics.c */
	{ "GET", "/v1/health", handle_health, BODY_NONE, LIMIT_NONE },
	{ "GET", "/metrics", handle_metrics, BODY_NONE, LIMIT_NONE },
	/* images.c */
	{ "GET", "/v1/images", handle_images, BODY_NONE, LIMIT_NONE },
	{ "POST", "/v1/images", handle_image_import_begin, BODY_UPLOAD, LIMIT_IMAGE },
	{ "GET", "/v1/images/{id}", handle_image_get, BODY_NONE, LIMIT_NONE },
	{ "DELETE", "/v1/images/{id}", handle_image_delete, BODY_NONE, LIMIT_NONE },
	/* templates.c */
	{ "GET", "/v1/templates", handle_templates, BODY_NONE, LIMIT_NONE },
	{ "POST", "/v1/templates", handle_template_build_begin, BODY_UPLOAD, LIMIT_CONTEXT },
	{ "GET", "/v1/templates/{id}", handle_template_get, BODY_NONE, LIMIT_NONE },
	{ "DELETE", "/v1/templates/{id}", handle_template_delete, BODY_NONE, LIMIT_NONE },
	/* secrets.c */
	{ "GET", "/v1/secrets", handle_secret_list, BODY_NONE, LIMIT_NONE },
	{ "POST", "/v1/secrets", handle_secret_create, BODY_JSON, LIMIT_BODY },
	{ "GET", "/v1/secrets/{name}", handle_secret_get, BODY_NONE, LIMIT_NONE },
	{ "PUT", "/v1/secrets/{name}", handle_secret_put, BODY_JSON, LIMIT_BODY },
	{ "DELETE", "/v1/secrets/{name}", handle_secret_delete, BODY_NONE, LIMIT_NONE },
	/* sandboxes.c: the sandbox and its lifecycle actions */
	{ "GET", "/v1/sandboxes", handle_sandbox_list, BODY_NONE, LIMIT_NONE },
	{ "POST", "/v1/sandboxes", handle_sandbox_create, BODY_JSON, LIMIT_BODY },
	{ "GET", "/v1/sandboxes/{id}", handle_sandbox_get, BODY_NONE, LIMIT_NONE },
	{ "DELETE", "/v1/sandboxes/{id}", handle_sandbox_delete, BODY_NONE, LIMIT_NONE },
	{ "POST", "/v1/sandboxes/{id}/start", handle_sandbox_start, BODY_JSON, LIMIT_BODY },
	{ "POST", "/v1/sandboxes/{id}/stop", handle_sandbox_stop, BODY_JSON, LIMIT_BODY },
	{ "POST", "/v1/sandboxes/{id}/pause", handle_sandbox_pause, BODY_JSON, LIMIT_BODY },
	{ "POST", "/v1/sandboxes/{id}/resume", handle_sandbox_resume, BODY_JSON, LIMIT_BODY },
	{ "POST", "/v1/sandboxes/{id}/hibernate", handle_sandbox_hibernate, BODY_JSON, LIMIT_BODY },
	{ "POST", "/v1/sandboxes/{id}/wake", handle_sandbox_wake, BODY_JSON, LIMIT_BODY },
	/* checkpoints.c */
	{ "GET", "/v1/sandboxes/{id}/checkpoints", handle_checkpoint_list, BODY_NONE, LIMIT_NONE },
	{ "POST", "/v1/sandboxes/{id}/checkpoints", handle_checkpoint_create, BODY_JSON,
	  LIMIT_BODY },
	{ "GET", "/v1/sandboxes/{id}/checkpoints/{cp}", handle_checkpoint_get, BODY_NONE,
	  LIMIT_NONE },
	{ "DELETE", "/v1/sandboxes/{id}/checkpoints/{cp}", handle_checkpoint_delete, BODY_NONE,
	  LIMIT_NONE },
	{ "POST", "/v1/sandboxes/{id}/checkpoints/{cp}/restore", handle_checkpoint_restore,
	  BODY_JSON, LIMIT_BODY },
	/* exec.c (with /run) */
	{ "POST", "/v1/sandboxes/{id}/exec", handle_exec, BODY_JSON, LIMIT_BODY },
	{ "POST", "/v1/sandboxes/{id}/run", handle_run, BODY_JSON, LIMIT_BODY },
	/* files.c */
	{ "GET", "/v1/sandboxes/{id}/files", handle_file_get, BODY_NONE, LIMIT_NONE },
	{ "PUT", "/v1/sandboxes/{id}/files", handle_file_put_begin, BODY_UPLOAD, LIMIT_UPLOAD },
	/* files_meta.c */
	{ "GET", "/v1/sandboxes/{id}/files/stat", handle_file_stat, BODY_NONE, LIMIT_NONE },
	{ "GET", "/v1/sandboxes/{id}/files/list", handle_file_list, BODY_NONE, LIMIT_NONE },
	{ "POST", "/v1/sandboxes/{id}/files/mkdir", handle_file_mkdir, BODY_JSON, LIMIT_BODY },
	{ "POST", "/v1/sandboxes/{id}/files/remove", handle_file_remove, BODY_JSON, LIMIT_BODY },
	{ "POST", "/v1/sandboxes/{id}/files/rename", handle_file_rename, BODY_JSON, LIMIT_BODY },
	/* files_watch.c */
	{ "GET", "/v1/sandboxes/{id}/files/watch", handle_file_watch, BODY_NONE, LIMIT_NONE },
	/* archive.c */
	{ "GET", "/v1/sandboxes/{id}/archive", handle_archive_get, BODY_NONE, LIMIT_NONE },
	{ "PUT", "/v1/sandboxes/{id}/archive", handle_archive_put_begin, BODY_UPLOAD,
	  LIMIT_UPLOAD },
	/* processes.c (with /shell) */
	{ "GET", "/v1/sandboxes/{id}/processes", handle_proc_list, BODY_NONE, LIMIT_NONE },
	{ "POST", "/v1/sandboxes/{id}/processes", handle_proc_create, BODY_JSON, LIMIT_BODY },
	{ "POST", "/v1/sandboxes/{id}/shell", handle_shell, BODY_JSON, LIMIT_BODY },
	{ "GET", "/v1/sandboxes/{id}/processes/{proc}", handle_proc_get, BODY_NONE, LIMIT_NONE },
	{ "POST", "/v1/sandboxes/{id}/processes/{proc}/stdin", handle_proc_stdin, BODY_RAW,
	  LIMIT_BODY },
	{ "POST", "/v1/sandboxes/{id}/processes/{proc}/signal", handle_proc_signal, BODY_JSON,
	  LIMIT_BODY },
	{ "POST", "/v1/sandboxes/{id}/processes/{proc}/wait", handle_proc_wait, BODY_NONE,
	  LIMIT_NONE },
	{ "POST", "/v1/sandboxes/{id}/processes/{proc}/resize", handle_proc_resize, BODY_JSON,
	  LIMIT_BODY },
	/* processes_output.c */
	{ "GET", "/v1/sandboxes/{id}/processes/{proc}/output", handle_proc_output, BODY_NONE,
	  LIMIT_NONE },
	/* processes_tty.c */
	{ "GET", "/v1/sandboxes/{id}/processes/{proc}/tty", handle_proc_tty, BODY_NONE,
	  LIMIT_NONE },
	/* shares.c */
	{ "GET", "/v1/sandboxes/{id}/shares/{n}/serve", handle_share_serve, BODY_NONE, LIMIT_NONE },
	/* ports.c */
	{ "GET", "/v1/sandboxes/{id}/ports", handle_port_list, BODY_NONE, LIMIT_NONE },
	{ "POST", "/v1/sandboxes/{id}/ports", handle_port_add, BODY_JSON, LIMIT_BODY },
	{ "DELETE", "/v1/sandboxes/{id}/ports/{port}", handle_port_remove, BODY_NONE, LIMIT_NONE },
	/* previews.c */
	{ "GET", "/v1/sandboxes/{id}/previews", handle_preview_list, BODY_NONE, LIMIT_NONE },
	{ "POST", "/v1/sandboxes/{id}/previews", handle_preview_add, BODY_JSON, LIMIT_BODY },
	{ "DELETE", "/v1/sandboxes/{id}/previews/{port}", handle_preview_remove, BODY_NONE,
	  LIMIT_NONE },
	/* firewall.c (with /log) */
	{ "GET", "/v1/sandboxes/{id}/firewall", handle_firewall_get, BODY_NONE, LIMIT_NONE },
	{ "PUT", "/v1/sandboxes/{id}/firewall", handle_firewall_put, BODY_JSON, LIMIT_BODY },
	{ "GET", "/v1/sandboxes/{id}/firewall/log", handle_firewall_log, BODY_NONE, LIMIT_NONE },
	{ "GET", "/v1/sandboxes/{id}/egress/log", handle_egress_log, BODY_NONE, LIMIT_NONE },
	/* egress_decisions.c */
	{ "GET", "/v1/sandboxes/{id}/egress/decisions", handle_egress_decisions, BODY_NONE,
	  LIMIT_NONE },
};
/* clang-format on */

const size_t routes_count = sizeof(routes) / sizeof(routes[0]);
