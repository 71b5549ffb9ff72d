/*
 * http_token: the characters an HTTP method and a field name are made of
 * (tchar, RFC 9110 section 5.6.2), for every parser of HTTP in kiln:
 * kilnd's request heads and the egress rules' methods and headers.
 *
 * Contract: pure, no state.
 */
#ifndef KILN_HTTP_TOKEN_H
#define KILN_HTTP_TOKEN_H

#include <stdbool.h>
#include <stddef.h>

/* c is a tchar. */
bool http_tchar(unsigned char c);

/* s[0..n) is a token: one or more tchars. */
bool http_token(const char *s, size_t n);

#endif
