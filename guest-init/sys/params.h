/*
 * params: kiln-init's settings from the kernel command line.
 *
 * Pure. kiln's parameters are dotted (`kiln.exec=...`) so the kernel passes
 * them over instead of handing them to init as arguments or environment.
 * A value may be double-quoted to hold spaces, as the kernel allows.
 */
#ifndef KILN_INIT_PARAMS_H
#define KILN_INIT_PARAMS_H

#include <stddef.h>

/*
 * Find `key` in `cmdline`; copy its value (without quotes) into out.
 * Returns 1 when found (a bare `key` gives ""), 0 when absent, -E2BIG
 * when the value does not fit in `outlen` bytes (out is then "").
 * The last occurrence wins, like the kernel's own parameters.
 */
int param_get(const char *cmdline, const char *key, char *out, size_t outlen);

#endif
