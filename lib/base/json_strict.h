/*
 * json_strict: the one way kiln reads JSON that another program wrote: a
 * request body, kilnd's answers and streams in the CLI, agent and
 * kiln-vmm control lines, image manifests, rule sets and the records on
 * disk. Every reading refuses an object that names a key twice
 * (jansson's JSON_REJECT_DUPLICATES): jansson would keep the last one,
 * while another reader of the same bytes (a proxy, an SDK, Python's json)
 * may keep the first, so the object one side checked would not be the
 * one the other acts on.
 *
 * Contract: jansson's json_loadb, json_loads and json_load_file with that
 * flag and no other: the document is one object or array, nothing may
 * follow it, strings are valid UTF-8 without NUL. NULL with je filled
 * (je->text "duplicate object key near ..." for a repeated key) when
 * refused; je may be NULL.
 */
#ifndef KILN_JSON_STRICT_H
#define KILN_JSON_STRICT_H

#include <stddef.h>

#include <jansson.h>

/* len bytes at buf (not NUL-terminated). */
json_t *json_strict_loadb(const char *buf, size_t len, json_error_t *je);
/* A NUL-terminated string. */
json_t *json_strict_loads(const char *s, json_error_t *je);
/* A whole file. */
json_t *json_strict_load_file(const char *path, json_error_t *je);

#endif
