/*
 * timeline: boot milestones timestamped against kiln-vmm's start.
 *
 * Host-side milestones (vm_ready, first_kvm_run, vm_exit) are recorded by
 * the VMM; guest-side ones arrive through the boot-timer port
 * (boot_timer.h). Thread-safe: every vCPU may record.
 */
#ifndef KILN_TIMELINE_H
#define KILN_TIMELINE_H

#include <pthread.h>
#include <stdint.h>
#include <stddef.h>

#define TIMELINE_MAX 64
#define TIMELINE_NAME 32

struct milestone {
	char name[TIMELINE_NAME];
	uint64_t ns; /* since t0 */
	int derived; /* computed from the guest's clock, not observed */
};

struct timeline {
	pthread_mutex_t lock;
	uint64_t t0_ns; /* CLOCK_MONOTONIC at kiln-vmm start */
	int n;
	struct milestone m[TIMELINE_MAX];
};

void timeline_init(struct timeline *t, uint64_t t0_ns);
void timeline_destroy(struct timeline *t);

/* Record `name` at absolute CLOCK_MONOTONIC time `abs_ns`. Drops entries past
 * TIMELINE_MAX (a chatty guest cannot grow it). */
void timeline_mark_at(struct timeline *t, const char *name, uint64_t abs_ns, int derived);
void timeline_mark(struct timeline *t, const char *name);

/* 1 when a milestone called `name` was recorded. */
int timeline_has(struct timeline *t, const char *name);

/* Entries so far; entry i's name (copied, NUL-terminated, cut to n),
 * time since t0 and derived flag: 0 or -ERANGE. Entries never change once
 * recorded. */
int timeline_count(struct timeline *t);
int timeline_get(struct timeline *t, int i, char *name, size_t n, uint64_t *ns, int *derived);
/* The first milestone called `name`: 0 with *ns, or -ENOENT. */
int timeline_find(struct timeline *t, const char *name, uint64_t *ns);

#endif
