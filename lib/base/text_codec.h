/*
 * text_codec: UTF-8 checks and base64 for kilnd's JSON bodies.
 *
 * Contract:
 *  - Pure: no allocation except where a function says it returns a
 *    malloc'd buffer, no I/O, no global state.
 *  - UTF-8 is RFC 3629: no overlong forms, no surrogates (U+D800..DFFF),
 *    nothing above U+10FFFF. JSON strings must be valid UTF-8 (jansson
 *    refuses anything else), so every byte string that came from a guest
 *    goes through utf8_valid() or utf8_sanitize() before it becomes JSON.
 *  - base64 is RFC 4648 with padding; the decoder accepts only canonical
 *    input (no whitespace, no missing padding, zero pad bits), so one
 *    value has one encoding.
 */
#ifndef KILN_TEXT_CODEC_H
#define KILN_TEXT_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/base/utf8.h" /* utf8_valid, which the users of this module check with */

/*
 * Length of the longest prefix of s[0..n) that does not end inside a
 * UTF-8 sequence: n minus the bytes of an incomplete but so far valid
 * sequence at the end (at most 3). A streamed chunk is cut there so a
 * character split between two reads is sent whole with the next one.
 * Invalid bytes are not held back (they could never complete).
 */
size_t utf8_complete_prefix(const uint8_t *s, size_t n);

/*
 * Copy s[0..n) to out as valid UTF-8: each invalid byte becomes U+FFFD,
 * and with drop_controls, C0 controls other than tab (and DEL) are
 * dropped (console output carries escape sequences and CRs). out must hold
 * 3 * n + 1 bytes; the result is NUL-terminated. Returns its length.
 */
size_t utf8_sanitize(const uint8_t *s, size_t n, bool drop_controls, char *out);

/* Bytes base64_encode writes for n input bytes, NUL included. */
size_t base64_encoded_size(size_t n);
/* Encode s[0..n) into out (base64_encoded_size(n) bytes); returns the length without the NUL. */
size_t base64_encode(const uint8_t *s, size_t n, char *out);
/*
 * Decode canonical base64 s[0..n) into out (at least n / 4 * 3 bytes).
 * 0 and *outlen, or -EINVAL for anything non-canonical.
 */
int base64_decode(const char *s, size_t n, uint8_t *out, size_t *outlen);

#endif
