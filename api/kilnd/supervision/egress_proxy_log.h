/*
 * egress_proxy_log: the egress proxy's decision lines, read back for
 * `GET /v1/sandboxes/{id}/egress/log` (docs/api.md).
 *
 * kiln-egress writes one JSON object per flow or decrypted request on its
 * stdout (the shared plan's interface 2), which kilnd keeps as
 * <sandbox>/egress.log. The proxy parses what guests and upstream servers
 * send, so it is assumed compromised: every line is hostile. A line is
 * kept only when it is one JSON object of at most EGRESS_LOG_LINE_MAX
 * bytes with a string "decision"; it is then made again from the known
 * fields alone, each of its documented type (anything else dropped):
 * strings (time, src, dst, name, sni, host, method, path, decision,
 * rule, reason) cut to EGRESS_LOG_FIELD_MAX bytes with control
 * characters replaced (text_clean term rule), "rule" also as an integer,
 * bytes_up and bytes_down non-negative integers, "injected" an array of
 * at most EGRESS_LOG_INJECTED_MAX header names (strings that are not
 * dropped; a header value is never in it: the proxy writes names only).
 *
 * Contract: pure (jansson, the text cleaner); fuzzed (fuzz_egress_log).
 */
#ifndef KILN_EGRESS_PROXY_LOG_H
#define KILN_EGRESS_PROXY_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define EGRESS_LOG_LINE_MAX 8192
#define EGRESS_LOG_FIELD_MAX 1024
#define EGRESS_LOG_INJECTED_MAX 16
/* ?lines= of GET .../egress/log: its default and its most. */
#define EGRESS_LOG_LINES_DEFAULT 100
#define EGRESS_LOG_LINES_MAX 1000

/* One line (no newline) made again as above, or NULL: dropped (or out of memory). */
json_t *egress_log_entry(const char *line, size_t len);

/*
 * The last `lines` lines of buf[0..n) that egress_log_entry keeps, oldest
 * first, as a JSON array. whole: buf is the log from its start; else its
 * first (partial) line is skipped. NULL when out of memory.
 */
json_t *egress_log_tail(const uint8_t *buf, size_t n, bool whole, size_t lines);

#endif
