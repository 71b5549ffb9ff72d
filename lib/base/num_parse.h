/*
 * num_parse: the one parser for unsigned numbers written by people or
 * peers (command-line options, the kernel command line, URL segments and
 * query values).
 *
 * Contract:
 *  - The text is one or more digits of the base (10 or 8), nothing else:
 *    no sign, no leading or trailing space, no 0x, no suffix. strtoull
 *    would skip spaces, take '+' and wrap "-1" to 2^64-1; a value typed
 *    " 5" or "+5" is a mistake to report, not a number. Leading zeros are
 *    allowed (a caller that wants one spelling per value refuses them).
 *  - Results: 0 with *out set; -EINVAL when the text is not such a
 *    number (empty, NULL, a stray character); -ERANGE when it is one but
 *    overflows 64 bits or falls outside min..max. *out is untouched on
 *    error.
 *  - Pure: no allocation, no locale, no errno side effects.
 */
#ifndef KILN_NUM_PARSE_H
#define KILN_NUM_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* The NUL-terminated s in base (10 or 8), within min..max. */
int num_parse_u64(const char *s, int base, uint64_t min, uint64_t max, uint64_t *out);
/* The same for s[0..n) (not NUL-terminated: a segment of a longer string). */
int num_parse_u64_n(const char *s, size_t n, int base, uint64_t min, uint64_t max, uint64_t *out);
/* The value of one hex digit (0-9, a-f, A-F), or -1 (URL escapes, HTTP
 * chunk sizes). */
int num_hex_digit(char c);

#endif
