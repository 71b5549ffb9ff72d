/*
 * vmm_output: what a finished kiln-vmm left behind, read back for the
 * sandbox's last_exit (docs/api.md): the last console lines, its last
 * error line, and the boot timeline it printed with --boot-timeline=json.
 *
 * Contract: pure; works on the tail of a log already read into memory.
 * The console is written by the guest, so it is hostile: lines are made
 * valid UTF-8, control characters are dropped, and every line and the
 * number of lines are capped. The timeline line is kiln-vmm's own output,
 * but it is parsed, not trusted (a guest cannot write to kiln-vmm's
 * stderr, but a wrong line must not make kilnd fail).
 */
#ifndef KILN_VMM_OUTPUT_H
#define KILN_VMM_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define CONSOLE_TAIL_LINES 20
#define CONSOLE_LINE_MAX 512

/* Visit the lines of buf[0..n) from the last one backwards (whole: buf
 * starts at a line's start; else its first line is skipped); fn returns
 * false to stop. */
void vmm_output_lines_backwards(const uint8_t *buf, size_t n, bool whole,
				bool (*fn)(void *arg, const uint8_t *l, size_t len), void *arg);

/*
 * The last max_lines non-empty lines of buf[0..n) as a JSON array of
 * strings, each cut to line_max bytes. whole: buf starts at the start of
 * the log; otherwise its first (probably partial) line is skipped.
 * NULL when out of memory.
 */
json_t *vmm_output_tail(const uint8_t *buf, size_t n, bool whole, size_t max_lines,
			size_t line_max);

/* As vmm_output_tail, but only the lines that start with `prefix`, which
 * is cut off (kiln-vmm's "kiln-vmm: firewall: " lines, for instance). */
json_t *vmm_output_tail_prefixed(const uint8_t *buf, size_t n, bool whole, const char *prefix,
				 size_t max_lines, size_t line_max);

/* kiln-vmm's last "kiln-vmm: ..." line in buf, sanitized, as a JSON
 * string; NULL when there is none. */
json_t *vmm_output_message(const uint8_t *buf, size_t n);

/* The last timeline object kiln-vmm printed ({"unit":"ms","milestones":
 * [...],"exit":{...}}), or NULL. */
json_t *vmm_output_timeline(const uint8_t *buf, size_t n);

#endif
