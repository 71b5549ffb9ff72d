/*
 * routes: kilnd's API, one table (routes.c) of every method and path
 * kilnd serves with its handler, body policy and body limit, which the
 * HTTP library (api/kilnd/http/http_route.h) matches requests against
 * and derives each path's Allow from; and the handlers it names, one
 * file per URL resource (the naming rule is at the top of routes.c).
 */
#ifndef KILN_ROUTES_H
#define KILN_ROUTES_H

#include <stddef.h>

#include "api/kilnd/http/http_route.h"

/* The body limits a route names (http_route.limit); kilnd fills their
 * values from its options (service.h). */
enum route_limit {
	LIMIT_NONE,    /* BODY_NONE */
	LIMIT_BODY,    /* --max-body: BODY_JSON and BODY_RAW */
	LIMIT_UPLOAD,  /* --max-upload: files and archives streamed to the guest */
	LIMIT_IMAGE,   /* --max-image: an image archive */
	LIMIT_CONTEXT, /* --max-image: a template's build context */
	LIMIT_COUNT
};

extern const struct http_route routes[];
extern const size_t routes_count;

/* health.c, metrics.c */
void handle_health(struct http_req *r);
void handle_metrics(struct http_req *r);

/* images.c: GET lists them; POST /v1/images streams its body (an image
 * archive) to a file like PUT .../files; GET and DELETE /v1/images/{name}. */
void handle_images(struct http_req *r);
void handle_image_import_begin(struct http_req *r);
void handle_image_get(struct http_req *r);
void handle_image_delete(struct http_req *r);

/* templates.c: POST /v1/templates streams its body (the build
 * context) to a file, then streams the build's log; GET and DELETE. */
void handle_templates(struct http_req *r);
void handle_template_build_begin(struct http_req *r);
void handle_template_get(struct http_req *r);
void handle_template_delete(struct http_req *r);

/* secrets.c: named secrets for the egress proxy (metadata out, values
 * never); PUT by name or POST with the name in the body. */
void handle_secret_list(struct http_req *r);
void handle_secret_create(struct http_req *r);
void handle_secret_get(struct http_req *r);
void handle_secret_put(struct http_req *r);
void handle_secret_delete(struct http_req *r);

/* sandboxes.c: the sandbox resource and its lifecycle actions. */
void handle_sandbox_list(struct http_req *r);
void handle_sandbox_create(struct http_req *r);
void handle_sandbox_get(struct http_req *r);
void handle_sandbox_delete(struct http_req *r);
void handle_sandbox_start(struct http_req *r);
void handle_sandbox_stop(struct http_req *r);
void handle_sandbox_pause(struct http_req *r);
void handle_sandbox_resume(struct http_req *r);
void handle_sandbox_hibernate(struct http_req *r);
void handle_sandbox_wake(struct http_req *r);

/* exec.c */
void handle_exec(struct http_req *r);
/* POST .../run: exec's machinery with a language and a structured result */
void handle_run(struct http_req *r);

/* files.c: GET answers like the others; PUT starts on the request's
 * first call (before its body) and then streams it (http_upload). */
void handle_file_get(struct http_req *r);
void handle_file_put_begin(struct http_req *r);

/* processes.c (and POST .../shell), processes_output.c, processes_tty.c:
 * background processes. */
void handle_proc_create(struct http_req *r);
void handle_shell(struct http_req *r);
void handle_proc_list(struct http_req *r);
void handle_proc_get(struct http_req *r);
void handle_proc_output(struct http_req *r);
void handle_proc_stdin(struct http_req *r);
void handle_proc_signal(struct http_req *r);
void handle_proc_wait(struct http_req *r);
void handle_proc_resize(struct http_req *r);
void handle_proc_tty(struct http_req *r);

/* files_meta.c: file metadata, .../files/{stat,list,mkdir,remove,rename} */
void handle_file_stat(struct http_req *r);
void handle_file_list(struct http_req *r);
void handle_file_mkdir(struct http_req *r);
void handle_file_remove(struct http_req *r);
void handle_file_rename(struct http_req *r);
/* files_watch.c: GET .../files/watch, NDJSON events. */
void handle_file_watch(struct http_req *r);

/* archive.c: tar.gz; PUT streams its body like PUT .../files. */
void handle_archive_get(struct http_req *r);
void handle_archive_put_begin(struct http_req *r);

/* checkpoints.c */
void handle_checkpoint_list(struct http_req *r);
void handle_checkpoint_create(struct http_req *r);
void handle_checkpoint_get(struct http_req *r);
void handle_checkpoint_delete(struct http_req *r);
void handle_checkpoint_restore(struct http_req *r);

/* firewall.c: GET/PUT .../firewall, GET .../firewall/log. */
void handle_firewall_get(struct http_req *r);
void handle_firewall_put(struct http_req *r);
void handle_firewall_log(struct http_req *r);
void handle_egress_log(struct http_req *r);
void handle_egress_decisions(struct http_req *r);

/* shares.c: GET .../shares/{n}/serve, a client serving a share (upgrade). */
void handle_share_serve(struct http_req *r);

/* ports.c */
void handle_port_add(struct http_req *r);
void handle_port_list(struct http_req *r);
void handle_port_remove(struct http_req *r);

/* previews.c */
void handle_preview_add(struct http_req *r);
void handle_preview_list(struct http_req *r);
void handle_preview_remove(struct http_req *r);

#endif
