/*
 * utf8: the one UTF-8 decoder (RFC 3629, section 4): no overlong forms,
 * no surrogates (U+D800..DFFF), nothing above U+10FFFF. The agent
 * protocol codec (both ends), kilnd's JSON bodies and the text scrubbers
 * all judge bytes by it, so guest and host never disagree on what is
 * valid.
 *
 * Contract: pure; no allocation, no state.
 */
#ifndef KILN_UTF8_H
#define KILN_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The sequence at s[0..n) (n >= 1): its length (1..4) when valid; 0 when
 * the bytes there are invalid; -k when they are a valid but incomplete
 * start that needs k more bytes.
 */
int utf8_seq_len(const uint8_t *s, size_t n);

/* True when s[0..n) is entirely valid UTF-8. */
bool utf8_valid(const uint8_t *s, size_t n);

#endif
