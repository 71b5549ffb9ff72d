/*
 * mem_grow: the one step of a growable buffer. Memory follows the largest
 * size asked for: the capacity doubles from `first` until it holds `need`,
 * and is never more than `max` (a protocol's limit on one line or body).
 *
 * Contract: returns the (re)allocated buffer with *cap its new size, or
 * NULL (ENOMEM, or need > max) with buf and *cap untouched, so the caller
 * still owns and frees buf. Call it when need > *cap.
 */
#ifndef KILN_MEM_GROW_H
#define KILN_MEM_GROW_H

#include <stddef.h>

void *mem_grow(void *buf, size_t *cap, size_t need, size_t first, size_t max);

#endif
