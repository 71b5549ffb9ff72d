/*
 * time_text: a wall-clock time in milliseconds since the epoch as the API
 * writes it ("created", "mtime", checkpoint times): RFC 3339, UTC, with
 * milliseconds. Pure.
 */
#ifndef KILN_TIME_TEXT_H
#define KILN_TIME_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* RFC 3339 UTC with milliseconds into out (at least 32 bytes); a negative
 * or unrepresentable time is written as the epoch. */
void format_time_ms(int64_t ms, char *out, size_t cap);

#endif
