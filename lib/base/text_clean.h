/*
 * text_clean: printable text from bytes someone else chose (a guest's
 * error message, a file name, a client's URL), so they cannot drive the
 * terminal (ESC sequences, 8-bit CSI) or forge log lines (newlines).
 *
 * Two rules, each with its own name:
 *  - term: for a terminal or a log line read by people. Valid UTF-8 is
 *    kept, so names in any script read as themselves; C0 controls
 *    (< 0x20, tab and newline included), DEL (0x7f), C1 controls
 *    (U+0080..U+009F: 0x9b is CSI on an 8-bit terminal) and every byte
 *    that is not part of valid UTF-8 become '?', one '?' per byte.
 *  - ascii: for lines that must stay 7-bit (kilnd's access log): every
 *    byte outside 0x20..0x7e becomes '?'.
 * And one check for values that are refused rather than replaced:
 * text_clean_control_at (C0 or DEL), the rule of kilnd's and kiln-vmm's
 * control-socket lines.
 *
 * Contract: pure apart from the FILE writer; no allocation, no state.
 * Replacing byte for byte keeps lengths, so an in-place clean never
 * moves a column.
 */
#ifndef KILN_TEXT_CLEAN_H
#define KILN_TEXT_CLEAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/*
 * The term rule's copy of s[0..n) into out[0..cap), NUL-terminated,
 * cut to fit at a character boundary (a character is never split).
 * Returns the bytes written, not counting the NUL. cap 0 writes nothing.
 */
size_t text_clean_term(char *out, size_t cap, const char *s, size_t n);
/* The term rule on the NUL-terminated s, in place. */
void text_clean_term_inplace(char *s);
/* The NUL-terminated s to f under the term rule. */
void text_clean_term_fput(FILE *f, const char *s);

/* The ascii rule's copy of s[0..n) (a NUL in it is '?' too),
 * NUL-terminated, cut to fit cap. Returns the bytes written. */
size_t text_clean_ascii(char *out, size_t cap, const char *s, size_t n);

/* The index of the first C0 control (< 0x20) or DEL in s[0..n); n when
 * there is none. */
size_t text_clean_control_at(const char *s, size_t n);

#endif
