/*
 * zygote: kilnd's pool of parked kiln-vmms (docs/architecture.md, "The
 * fork path"). Each is a keeper whose kiln-vmm was started with `--park`
 * (supervise.h, vmm_park): the two fork/execs and the dynamic loading a
 * sandbox start used to pay are done ahead, off the request's path. A
 * start takes one (zygote_take) and claims it for its sandbox
 * (vmm_claim); the pool's thread starts another.
 *
 * Contract:
 *  - A parked zygote holds nothing of any sandbox: no file, cgroup, jail
 *    or guest. It is root, in kilnd's cgroup, and reads one thing, its
 *    command line from kilnd (docs/security.md, "Zygotes").
 *  - Zygotes never outlive this kilnd: its end (exit, kill -9, an
 *    upgrade's hand-over) closes their sockets, and a keeper whose socket
 *    ends kills and reaps its kiln-vmm and exits.
 *  - A pool that cannot refill (a start failed) retries with a backoff up
 *    to ZYGOTE_BACKOFF_MAX_MS, said once in kilnd's log; meanwhile
 *    zygote_take finds none and the caller starts kiln-vmm as before.
 *  - One that died while parked is reaped by the pool's thread (each
 *    second) or skipped by zygote_take; never handed out.
 */
#ifndef KILN_ZYGOTE_H
#define KILN_ZYGOTE_H

#include <stdbool.h>

#include "api/kilnd/supervision/supervise.h"

#define ZYGOTES_MAX 64
#define ZYGOTE_BACKOFF_MAX_MS 30000

struct zygote_pool;

/* A pool of `size` (0: none; zygote_take always false). 0, or -ENOMEM. */
int zygote_pool_new(unsigned size, const char *keeper, const char *vmm, unsigned grace_s,
		    bool new_pid_ns, struct zygote_pool **out);
/* Its thread, which fills it. 0 or -errno. */
int zygote_pool_start(struct zygote_pool *p);
/* One parked zygote into *z, or false (none ready: start kiln-vmm as before). */
bool zygote_take(struct zygote_pool *p, struct vmm_zygote *z);
/* Stop the thread and end every parked zygote; zygote_take finds none
 * from then on, from any thread (the pool stays allocated). NULL is fine. */
void zygote_pool_stop(struct zygote_pool *p);
/* Stop it and free it, once no thread can call zygote_take. NULL is fine. */
void zygote_pool_free(struct zygote_pool *p);

/* How many are parked now (metrics, tests). */
unsigned zygote_pool_ready(struct zygote_pool *p);

#endif
