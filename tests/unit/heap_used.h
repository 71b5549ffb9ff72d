/*
 * heap_used: bytes malloc'd and not yet freed, from the ASan allocator
 * every unit test runs under (the Makefile's SAN flags). For tests that
 * pin what a structure costs: the declaration is ASan's public interface
 * (<sanitizer/allocator_interface.h>, which gcc does not install).
 * Count only while no other thread allocates.
 */
#ifndef KILN_TEST_HEAP_USED_H
#define KILN_TEST_HEAP_USED_H

#include <stddef.h>

size_t __sanitizer_get_current_allocated_bytes(void);

static inline size_t heap_used(void)
{
	return __sanitizer_get_current_allocated_bytes();
}

#endif
