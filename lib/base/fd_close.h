/*
 * fd_close: close every descriptor from 3 up but a few, the one way a
 * freshly forked child drops what its (multithreaded) parent had open:
 * kiln-init's container processes before they wait for their start,
 * kiln-runtime's shim when it detaches from the engine.
 *
 * Contract: raw close_range(2) calls only, no allocation, no locks:
 * async-signal-safe, for the child of a threaded process. 0..2 are never
 * closed; entries of keep below 3 (-1: none) are ignored; keep is
 * reordered (sorted ascending).
 */
#ifndef KILN_FD_CLOSE_H
#define KILN_FD_CLOSE_H

#include <stddef.h>

void fd_close_except(int *keep, size_t n);

#endif
