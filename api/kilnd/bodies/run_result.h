/*
 * run_result: the result file of a run (docs/api.md, "POST .../run"), as
 * the guest's `result` helpers wrote it, turned into the response's
 * `result` and `error` members.
 *
 * Contract:
 *  - Pure (jansson only). The bytes are the guest's: anything at all.
 *    They never fail the request: a file that is not what the helpers
 *    write becomes an `error` of type "ResultInvalid" (or
 *    "ResultTooLarge"), with a message saying what was wrong, and
 *    `result` null.
 *  - What the helpers write: a JSON object with at most the members
 *    "value" (any JSON) and "error" ({"type": string, "message": string,
 *    "traceback": string or null}); an empty file is no result at all.
 *    Strings are valid UTF-8 without NUL (jansson's decoder), duplicate
 *    keys are refused, nesting is bounded by jansson (2048 levels).
 */
#ifndef KILN_RUN_RESULT_H
#define KILN_RUN_RESULT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* The longest type name and message kept from the guest (longer: cut). */
#define RUN_RESULT_TYPE_MAX 256
#define RUN_RESULT_TEXT_MAX (64u << 10)

/*
 * Parse `len` bytes of a result file whose size was `size` (size > len
 * when the agent left out a file over its cap). *value and *error get new
 * references (JSON null when absent). 0, or -ENOMEM (nothing set).
 */
int run_result_parse(const uint8_t *buf, size_t len, uint64_t size, json_t **value, json_t **error);

#endif
