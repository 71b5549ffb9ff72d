/*
 * json: kiln's one way to read JSON another program wrote, in two parts.
 *
 * The strict load (json_strict_*): a request body, kilnd's answers and
 * streams in the CLI, agent and kiln-vmm control lines, image manifests,
 * rule sets and the records on disk. Every reading refuses an object that
 * names a key twice (jansson's JSON_REJECT_DUPLICATES): jansson would keep
 * the last one, while another reader of the same bytes (a proxy, an SDK,
 * Python's json) may keep the first, so the object one side checked would
 * not be the one the other acts on. Contract: jansson's json_loadb,
 * json_loads and json_load_file with that flag and no other: the document
 * is one object or array, nothing may follow it, strings are valid UTF-8
 * without NUL. A NUL byte anywhere is refused too ("a NUL byte at byte
 * N"): jansson's number and literal scanners stop at one, so
 * `{"a":1<NUL>}` would read as `{"a":1}` while another reader refuses the
 * bytes or sees more. NULL with je filled (je->text "duplicate object key
 * near ..." for a repeated key) when refused; je may be NULL.
 *
 * Typed fields (json_field_*): typed, range-checked reads of a JSON
 * object's fields, the one set of checks behind every JSON protocol kiln
 * parses: the agent protocol (api/proto), kilnd's request bodies and
 * records, kiln-vmm's control replies (vmm/control). A getter returns 0
 * with *out set (to the default when the field is absent and not
 * required), or -1 with *f saying what was wrong. It writes no message:
 * each protocol words a fault in its own voice (docs/api.md and
 * docs/agent-protocol.md word them differently, and clients match on
 * them) and picks its own error code from f->fault. Integers must be JSON
 * integers (jansson keeps 5 and 5.0 apart) and are never negative;
 * strings are as the decoder gave them (valid UTF-8 without NUL,
 * jansson's default).
 *
 * Pure: jansson only (every program that links lib/base links jansson).
 */
#ifndef KILN_JSON_H
#define KILN_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* ---- the strict load ---- */

/* len bytes at buf (not NUL-terminated). */
json_t *json_strict_loadb(const char *buf, size_t len, json_error_t *je);
/* A NUL-terminated string. */
json_t *json_strict_loads(const char *s, json_error_t *je);
/* A whole file. */
json_t *json_strict_load_file(const char *path, json_error_t *je);

/* ---- typed fields ---- */

enum json_field_fault {
	JSON_FIELD_MISSING = 1, /* required and absent */
	JSON_FIELD_TYPE,        /* present, but of another JSON type */
	JSON_FIELD_RANGE,       /* an integer outside [min, max] */
	JSON_FIELD_LENGTH,      /* a string longer than max bytes */
	JSON_FIELD_UNKNOWN,     /* a key the object may not hold */
};

/* What the field should have been. */
enum json_field_want {
	JSON_FIELD_INTEGER,
	JSON_FIELD_BOOLEAN,
	JSON_FIELD_STRING,
};

/* A refused field: what the caller's message needs. */
struct json_field_fail {
	enum json_field_fault fault;
	enum json_field_want want;
	const char *key;   /* the field (UNKNOWN: the object's own key, borrowed from it) */
	const char *got;   /* TYPE: what the value is, json_field_kind() */
	long long value;   /* RANGE: the integer found */
	uint64_t min, max; /* integers: the bounds; LENGTH: the most bytes */
};

/* What v is, for a message: "an object", "a string", "null", ... */
const char *json_field_kind(const json_t *v);

/* An integer in [min, max]; absent: def (MISSING when required). */
int json_field_uint(const json_t *obj, const char *key, bool required, uint64_t min, uint64_t max,
		    uint64_t def, uint64_t *out, struct json_field_fail *f);

/* true or false; absent: def (MISSING when required). */
int json_field_bool(const json_t *obj, const char *key, bool required, bool def, bool *out,
		    struct json_field_fail *f);

/* A string of at most max bytes (SIZE_MAX: any); absent: NULL (MISSING
 * when required). The pointer is borrowed from obj. */
int json_field_string(const json_t *obj, const char *key, bool required, size_t max,
		      const char **out, struct json_field_fail *f);

/* UNKNOWN for the first key (in object order) that is not in allowed
 * (NULL-terminated). */
int json_field_only(const json_t *obj, const char *const *allowed, struct json_field_fail *f);

#endif
