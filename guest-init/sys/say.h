/*
 * say: kiln-init's console messages ("kiln-init: what failed: why"). The
 * console is the only place a problem at boot can be reported.
 */
#ifndef KILN_INIT_SAY_H
#define KILN_INIT_SAY_H

void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
