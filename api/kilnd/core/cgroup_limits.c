/* A sandbox's cgroup limits; see cgroup_limits.h. */
#include "api/kilnd/core/cgroup_limits.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/core/json_fields.h"

void cg_limits_default(unsigned cpus, unsigned memory_mib, struct cg_limits *out)
{
	uint64_t over = CG_OVERHEAD_BASE_MIB + memory_mib / 16u;

	if (over > CG_OVERHEAD_MAX_MIB)
		over = CG_OVERHEAD_MAX_MIB;
	out->memory_max_mib = (uint64_t)memory_mib + over;
	out->pids_max = CG_PIDS_DEFAULT_BASE + cpus;
	out->cpu_max_centi = cpus > CG_CPU_MAX_CENTI / 100u ? CG_CPU_MAX_CENTI : cpus * 100u;
}

/* CPUs as a JSON number with at most two decimals, into hundredths. */
static int parse_cpus(const json_t *v, uint32_t *centi, const char *what, struct api_err *e)
{
	double x, r;
	uint64_t c;

	if (!json_is_number(v))
		goto bad;
	x = json_number_value(v);
	/* Compare before converting: a huge or NaN value never reaches the cast. */
	if (!(x >= 0.01 - 1e-9 && x <= CG_CPU_MAX_CENTI / 100.0))
		goto bad;
	r = x * 100.0;
	c = (uint64_t)(r + 0.5);
	if (r - (double)c > 1e-6 || (double)c - r > 1e-6)
		goto bad;
	*centi = (uint32_t)c;
	return 0;
bad:
	api_err_set(e, API_E_BAD_FIELD,
		    "%s: limits.cpu_max must be a number of CPUs from 0.01 to %u with at most two decimals (like 1.5)",
		    what, CG_CPU_MAX_CENTI / 100u);
	return -1;
}

int cg_limits_parse(const json_t *v, unsigned cpus, unsigned memory_mib, struct cg_limits *out,
		    const char *what, struct api_err *e)
{
	static const char *const fields[] = { "memory_max_mib", "pids_max", "cpu_max", NULL };
	char w[64];
	uint64_t n, floor_mib = (uint64_t)memory_mib + CG_MEMORY_FLOOR_MIB;
	json_t *cpu;

	cg_limits_default(cpus, memory_mib, out);
	if (!v)
		return 0;
	snprintf(w, sizeof(w), "%s: limits", what);
	if (!json_is_object(v)) {
		api_err_set(e, API_E_BAD_FIELD,
			    "%s must be an object (memory_max_mib, pids_max, cpu_max)", w);
		return -1;
	}
	if (json_fields_only(v, fields, w, e))
		return -1;
	if (json_fields_uint(v, "memory_max_mib", false, 0, CG_MEMORY_MAX_MIB, out->memory_max_mib,
			     &n, w, e))
		return -1;
	if (n < floor_mib) {
		api_err_set(e, API_E_BAD_FIELD,
			    "%s: limits.memory_max_mib %" PRIu64
			    " leaves the VMM no room above the guest's %u MiB of RAM: give at least %" PRIu64
			    " (memory_mib + %u), or leave it out for the default",
			    what, n, memory_mib, floor_mib, CG_MEMORY_FLOOR_MIB);
		return -1;
	}
	out->memory_max_mib = n;
	if (json_fields_uint(v, "pids_max", false, CG_PIDS_FLOOR + cpus, CG_PIDS_MAX, out->pids_max,
			     &n, w, e))
		return -1;
	out->pids_max = (uint32_t)n;
	cpu = json_object_get(v, "cpu_max");
	if (cpu && parse_cpus(cpu, &out->cpu_max_centi, what, e))
		return -1;
	return 0;
}

json_t *cg_limits_to_json(const struct cg_limits *l)
{
	json_t *cpu = l->cpu_max_centi % 100u ? json_real(l->cpu_max_centi / 100.0)
					      : json_integer(l->cpu_max_centi / 100u);

	return json_pack("{s:I,s:I,s:o}", "memory_max_mib", (json_int_t)l->memory_max_mib,
			 "pids_max", (json_int_t)l->pids_max, "cpu_max", cpu);
}

void cg_limits_memory_max(const struct cg_limits *l, uint64_t extra_mib, char *out, size_t cap)
{
	snprintf(out, cap, "%" PRIu64, (l->memory_max_mib + extra_mib) << 20);
}

uint64_t cg_ram_state_mib(unsigned memory_mib, uint64_t disk_mib)
{
	return 2 * disk_mib + memory_mib;
}

int cg_snapshot_room(uint64_t current, uint64_t max, uint64_t need, char *msg, size_t cap)
{
	if (!max || (current <= max && need <= max - current))
		return 0;
	snprintf(msg, cap,
		 "the snapshot needs up to %" PRIu64 " MiB and the sandbox's cgroup has %" PRIu64
		 " MiB left under memory.max: the state directory is in RAM (tmpfs), so snapshot files count as the sandbox's memory; delete one of its checkpoints, or give kilnd a --state-dir on a disk",
		 (need + (1 << 20) - 1) >> 20, current < max ? (max - current) >> 20 : 0);
	return -1;
}

void cg_limits_pids_max(const struct cg_limits *l, char *out, size_t cap)
{
	snprintf(out, cap, "%" PRIu32, l->pids_max);
}

void cg_limits_cpu_max(const struct cg_limits *l, char *out, size_t cap)
{
	/* A quota of c hundredths of a CPU per period. */
	snprintf(out, cap, "%" PRIu64 " %u", (uint64_t)l->cpu_max_centi * (CG_CPU_PERIOD_US / 100u),
		 CG_CPU_PERIOD_US);
}

const char *cg_limit_hit(const struct cgroup_events *ev, const struct cg_limits *l, char *msg,
			 size_t cap)
{
	if (ev->oom_kill) {
		snprintf(msg, cap,
			 "kiln-vmm was killed by the kernel's OOM killer at the sandbox's cgroup memory.max (limits.memory_max_mib %" PRIu64
			 " MiB); create the sandbox with a larger limits.memory_max_mib",
			 l->memory_max_mib);
		return "memory_limit";
	}
	if (ev->pids_max) {
		snprintf(msg, cap,
			 "kiln-vmm could not start a thread or process: the sandbox's cgroup pids.max (limits.pids_max %" PRIu32
			 ") refused %" PRIu64 "; create the sandbox with a larger limits.pids_max",
			 l->pids_max, ev->pids_max);
		return "pids_limit";
	}
	return NULL;
}
