/*
 * handlers: one function per endpoint of docs/api.md, called by http.c
 * once the request passed the peer check, its route and its body limit.
 * Each answers exactly once through the http_* functions.
 */
#ifndef KILN_HANDLERS_H
#define KILN_HANDLERS_H

#include "api/kilnd/http/http.h"

/* dispatch.c: one handler per route operation, for http_start(). */
extern const http_handler_fn dispatch_handlers[OP_COUNT];

/* handlers.c: what several endpoints share. */
/* No query parameters: true, or false after answering 400 itself. */
bool http_no_query(struct http_req *r, const char *what);
/* Whether a body of its declared length can fit in state_dir/sub
 * (import_room.h); 0, or -1 with e (no_space). */
int http_room_check(struct http_req *r, const char *sub, const char *what, const char *holds, struct api_err *e);

struct sandbox;

/* The sandbox the path names, as a reference (sandbox_put it), after
 * refusing any query string; NULL when it answered 400/404 itself. */
struct sandbox *http_sandbox_target(struct http_req *r, const char *what);
/* The same for an action (POST .../pause, .../restore): an optional body
 * must be {}, as actions take no options yet. */
struct sandbox *http_sandbox_action_target(struct http_req *r, const char *what);
/* 200/201 with json, or e's error (rc != 0), or 500 when json is NULL
 * (out of memory rendering it). json is taken over. */
void http_answer(struct http_req *r, int rc, unsigned status, json_t *json, const struct api_err *e);

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

/* ports.c */
void handle_port_add(struct http_req *r);
void handle_port_list(struct http_req *r);
void handle_port_remove(struct http_req *r);

/* previews.c */
void handle_preview_add(struct http_req *r);
void handle_preview_list(struct http_req *r);
void handle_preview_remove(struct http_req *r);

#endif
