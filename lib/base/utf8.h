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

/*
 * Length of the longest prefix of s[0..n) that does not end inside a
 * UTF-8 sequence: n minus the bytes of an incomplete but so far valid
 * sequence at the end (at most 3). A streamed chunk is cut there so a
 * character split between two reads is sent whole with the next one.
 * Invalid bytes are not held back (they could never complete).
 */
size_t utf8_complete_prefix(const uint8_t *s, size_t n);

/* utf8_lossy flags. */
#define UTF8_DROP_CONTROLS 1u /* drop C0 controls other than tab, and DEL (console output) */

/*
 * Copy s[0..n) into out[0..cap) as valid UTF-8, NUL-terminated: each byte
 * that is not part of a valid sequence becomes U+FFFD, and a character
 * that does not fit whole ends the copy (cap >= 3 * n + 1 always fits).
 * Returns the bytes written, not counting the NUL; cap 0 writes nothing.
 * *lossy (may be NULL) is set to true when a byte was replaced (the
 * agent protocol's "lossy" flag); dropped controls do not count.
 */
size_t utf8_lossy(char *out, size_t cap, const uint8_t *s, size_t n, unsigned flags, bool *lossy);

#endif
