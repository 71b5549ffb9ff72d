/*
 * json_text: kiln's one way to write JSON text (kilnd's answers and
 * records, the CLI's output, the agent protocol both ends, kiln-vmm's
 * control lines, the image importer and kiln-runtime's state).
 *
 * jansson's json_dumps writes a real with "%.17g" (JSON_REAL_PRECISION
 * picks another fixed count): 3.142 comes out as 3.1419999999999999, a
 * duration as 440.76345600000002, 1e300 as 1.0000000000000001e+300. A
 * reader gets the same double back, but a person reads noise, and a fixed
 * count below 17 loses values. json_text writes each real as the shortest
 * text that reads back (strtod) as the same double, with the digits
 * Python's repr and JavaScript choose: 3.142, 0.1, 1e+300, 5e-324, -0.0.
 * Like Python it writes plain decimals for exponents -4..15 (0.0001,
 * 1000000000000000.0) and e-notation outside (1e-05, 1e+16), and always
 * with a '.' or an 'e', so a real reads back as a real (jansson keeps 5
 * and 5.0 apart; the typed field readers in json.h refuse a real where
 * an integer belongs).
 *
 * Contract: otherwise byte for byte what jansson 2.14's json_dumps writes
 * for the flags kiln uses: JSON_COMPACT, JSON_INDENT(n), JSON_SORT_KEYS
 * (keys by their bytes), JSON_ENCODE_ANY (a bare string, number, ...;
 * without it only an object or array), JSON_PRESERVE_ORDER (jansson
 * always keeps insertion order). JSON_REAL_PRECISION is ignored: every
 * real is shortest. JSON_ENSURE_ASCII, JSON_ESCAPE_SLASH and JSON_EMBED
 * are refused (NULL / -1): nothing in kiln wants them. A string or key
 * that is not valid UTF-8 (json_string_nocheck) and nesting deeper than
 * JSON_TEXT_DEPTH_MAX (a value that contains itself) are refused, as
 * jansson refuses them. The C locale is assumed ('.' as the decimal
 * point): no kiln program calls setlocale.
 *
 * Pure but for json_text_file and json_text_stdio; jansson only.
 */
#ifndef KILN_JSON_TEXT_H
#define KILN_JSON_TEXT_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

/* Deeper nesting is refused: jansson's own parser stops at 2048, so only
 * a value built in code (or one that contains itself) gets there. */
#define JSON_TEXT_DEPTH_MAX 2048

/* The longest text json_text_real writes, NUL included
 * ("-2.2250738585072014e-308"). */
#define JSON_TEXT_REAL_MAX 32

/* v as JSON text, NUL-terminated, malloc'd (free()); NULL when refused
 * (above) or out of memory. json_dumps's replacement. */
char *json_text(const json_t *v, size_t flags);

/* The bytes json_text(v, flags) writes, without the NUL; 0 when refused
 * or out of memory. json_dumpb(v, NULL, 0, flags)'s replacement. */
size_t json_text_len(const json_t *v, size_t flags);

/* v into the file path (created or truncated, mode 0666 & ~umask): 0, or
 * -1 with errno. json_dump_file's replacement. */
int json_text_file(const json_t *v, const char *path, size_t flags);

/* v onto the stream f (no newline after it): 0, or -1. json_dumpf's
 * replacement. */
int json_text_stdio(const json_t *v, FILE *f, size_t flags);

/* The double x (finite) as its shortest round-trip JSON text into out
 * (JSON_TEXT_REAL_MAX bytes); returns the length, or 0 for a NaN or an
 * infinity (which JSON cannot hold; jansson never makes such a real). */
size_t json_text_real(double x, char out[JSON_TEXT_REAL_MAX]);

#endif
