/*
 * base64: RFC 4648 base64 with padding, for byte strings in kilnd's JSON
 * bodies and the kiln CLI's.
 *
 * Contract:
 *  - Pure: no allocation, no I/O, no global state.
 *  - The decoder accepts only canonical input (no whitespace, no missing
 *    padding, zero pad bits), so one value has one encoding.
 *  - Bytes that are text go through lib/base/utf8.h instead (utf8_valid,
 *    utf8_lossy) before they become a JSON string.
 */
#ifndef KILN_BASE64_H
#define KILN_BASE64_H

#include <stddef.h>
#include <stdint.h>

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
