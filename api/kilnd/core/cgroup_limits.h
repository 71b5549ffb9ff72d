/*
 * cgroup_limits: a sandbox's cgroup v2 limits (docs/api.md, "limits"):
 * their defaults from the sandbox's cpus and memory_mib, the `limits`
 * object of POST /v1/sandboxes validated into a struct and back to JSON,
 * the values kilnd writes into memory.max, pids.max and cpu.max, and how
 * a VMM's end reads in memory.events and pids.events (struct
 * cgroup_events, lib/cgroup/cgroup_leaf.h).
 *
 * Contract:
 *  - Pure (jansson only); the files themselves are supervision/cgroup.c's
 *    and lib/cgroup's.
 *  - memory.max bounds the whole VMM: guest RAM (which the guest may touch
 *    in full) plus the VMM's own memory (its code, thread stacks, device
 *    buffers, the page cache of its overlay and snapshot files). The
 *    default overhead grows with RAM (page tables, dirty log) and is
 *    capped, so the bound stays close to memory_mib; an explicit value
 *    below memory_mib + CG_MEMORY_FLOOR_MIB is refused, since the VMM
 *    would be killed as soon as the guest uses its RAM.
 *  - Every field is bounded; the first failing check wins and names its
 *    field.
 */
#ifndef KILN_CGROUP_LIMITS_H
#define KILN_CGROUP_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api/kilnd/core/api_error.h"
#include "lib/cgroup/cgroup_leaf.h"

/* Default VMM overhead above guest RAM: base + RAM/16, at most the cap. */
#define CG_OVERHEAD_BASE_MIB 64u
#define CG_OVERHEAD_MAX_MIB 512u
/* The least room an explicit memory_max_mib leaves above guest RAM. */
#define CG_MEMORY_FLOOR_MIB 16u
#define CG_MEMORY_MAX_MIB (1ull << 22) /* 4 TiB */
/* kiln-vmm's threads: main, runner, control, event loops, one per vCPU,
 * plus passt (a child process). The floor leaves room for all but the
 * vCPUs, which are added. */
#define CG_PIDS_FLOOR 16u
#define CG_PIDS_DEFAULT_BASE 64u
#define CG_PIDS_MAX 65536u
/* cpu_max in hundredths of a CPU: 1 = 0.01 CPU, the kernel's least quota
 * (1 ms per 100 ms period). */
#define CG_CPU_PERIOD_US 100000u
#define CG_CPU_MAX_CENTI 102400u /* 1024 CPUs */

struct cg_limits {
	uint64_t memory_max_mib;
	uint32_t pids_max;
	uint32_t cpu_max_centi; /* CPUs x 100 */
};

/*
 * A state directory in RAM (tmpfs, ramfs): what the guest writes to its
 * disk (the overlay, up to the disk's size) and a snapshot kiln-vmm
 * writes (its RAM and a copy of the overlay) are pages charged to the
 * VMM's cgroup. memory.max then gets this much above memory_max_mib:
 * the disk once for the overlay and one snapshot (RAM + disk), so that a
 * guest filling its disk, then checkpointed, is not OOM-killed.
 */
uint64_t cg_ram_state_mib(unsigned memory_mib, uint64_t disk_mib);

/*
 * May a snapshot of at most need bytes be written into a cgroup at
 * current of max bytes (its state directory in RAM)? 0, or -1 with why
 * in msg (what to do included).
 */
int cg_snapshot_room(uint64_t current, uint64_t max, uint64_t need, char *msg, size_t cap);

/* The defaults for a sandbox of cpus vCPUs and memory_mib of RAM. */
void cg_limits_default(unsigned cpus, unsigned memory_mib, struct cg_limits *out);

/*
 * The create body's `limits` (v; NULL: absent, all defaults) for a sandbox
 * of cpus and memory_mib. 0, or -1 with e (bad_field or unknown_field,
 * naming the field). what names the request ("sandbox create").
 */
int cg_limits_parse(const json_t *v, unsigned cpus, unsigned memory_mib, struct cg_limits *out,
		    const char *what, struct api_err *e);

/* {"memory_max_mib","pids_max","cpu_max"}: every field, so parsing it
 * again gives the same limits (new reference; NULL when out of memory). */
json_t *cg_limits_to_json(const struct cg_limits *l);

/* The contents of memory.max, pids.max and cpu.max ("QUOTA PERIOD"). */
void cg_limits_memory_max(const struct cg_limits *l, uint64_t extra_mib, char *out, size_t cap);
void cg_limits_pids_max(const struct cg_limits *l, char *out, size_t cap);
void cg_limits_cpu_max(const struct cg_limits *l, char *out, size_t cap);

/*
 * Whether the VMM's end was a limit's doing: the last_exit reason
 * ("memory_limit", "pids_limit") with a message for the client in
 * msg[cap], or NULL when no limit was hit.
 */
const char *cg_limit_hit(const struct cgroup_events *ev, const struct cg_limits *l, char *msg,
			 size_t cap);

#endif
