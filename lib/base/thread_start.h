/*
 * thread_start: pthread_create with the stack size of every thread a VM
 * runs (vCPUs, the device loop, the runner, the restore and filter
 * threads, kiln-vmm's control thread).
 *
 * glibc's default is the soft RLIMIT_STACK, 8 MiB. Only the pages a
 * stack touches cost memory (12-16 KiB per VM thread, measured), but an
 * 8 MiB mapping holds whole 2 MiB-aligned ranges, and with transparent
 * huge pages set to `always` (Debian's default, and the nested harness)
 * the kernel may back one with a 2 MiB page: one kiln-vmm measured 2 MiB
 * private in one vCPU's stack. A stack under 2 MiB can never hold one.
 * 1 MiB is still many times the deepest chain measured (file_copy's
 * 64 KiB bounce buffer, glibc's 33 KiB unbuffered fprintf, jansson's
 * parser at its depth limit).
 *
 * Contract: as pthread_create (0 or a positive errno); only the stack
 * size differs. No state.
 */
#ifndef KILN_THREAD_START_H
#define KILN_THREAD_START_H

#include <pthread.h>

#define THREAD_STACK_BYTES (1024 * 1024)

int thread_start(pthread_t *t, void *(*fn)(void *), void *arg);

#endif
