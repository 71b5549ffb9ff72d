/*
 * json_fields: typed, range-checked access to the fields of a JSON request
 * body, with the error codes and words of docs/api.md (missing_field,
 * unknown_field, bad_field): lib/base/json's field checks in kilnd's voice.
 *
 * Contract: pure (jansson only). Bodies come from clients: integers must
 * be JSON integers (jansson keeps 5 and 5.0 apart), booleans true/false,
 * strings are valid UTF-8 without NUL (the decoder guarantees both).
 * `what` names the request in messages ("sandbox create").
 */
#ifndef KILN_JSON_FIELDS_H
#define KILN_JSON_FIELDS_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "api/kilnd/core/api_error.h"

/* -1 and unknown_field for the first key (in body order) not in allowed (NULL-terminated). */
int json_fields_only(const json_t *obj, const char *const *allowed, const char *what,
		     struct api_err *e);

/* Unsigned integer in [min, max]; absent: *out = def (or missing_field when required). */
int json_fields_uint(const json_t *obj, const char *key, bool required, uint64_t min, uint64_t max,
		     uint64_t def, uint64_t *out, const char *what, struct api_err *e);

/* Boolean; absent: *out = def. */
int json_fields_bool(const json_t *obj, const char *key, bool def, bool *out, const char *what,
		     struct api_err *e);

/* String of at most max bytes; absent: *out = NULL (or missing_field when required).
 * The pointer is borrowed from obj. */
int json_fields_string(const json_t *obj, const char *key, bool required, size_t max,
		       const char **out, const char *what, struct api_err *e);

#endif
