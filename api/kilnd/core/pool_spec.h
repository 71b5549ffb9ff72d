/*
 * pool_spec: kilnd's warm pools (--pool), as pure logic: the option's
 * syntax, the create body a pool's sandboxes are made from, and which
 * create requests a pool can serve (docs/api.md, "Warm pools").
 *
 * Contract:
 *  - Pure (jansson only); the daemon's side is registry/sandbox_pool.c.
 *  - A pool's sandboxes are made from a create body of the fields that
 *    shape the VM (image, cpus, memory_mib, network); every other field
 *    of a create (hostname, env, labels, timeout_s, idle_timeout_s) is
 *    applied when a request takes one. A create fits a pool when every
 *    VM-shaping field of its parsed spec equals the pool's, and it asks
 *    for nothing only a boot can give (shares, the console, its own
 *    firewall rules or cgroup limits).
 */
#ifndef KILN_POOL_SPEC_H
#define KILN_POOL_SPEC_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "api/kilnd/core/names.h"
#include "api/kilnd/core/sandbox_spec.h"
#include "lib/base/err.h"

#define KILND_MAX_POOLS 8
#define POOL_SIZE_MAX 64
#define POOL_ARG_MAX 256

/* One --pool IMAGE=N[,cpus=C][,memory_mib=M][,network=none|passt]. */
struct pool_cfg {
	char image[IMAGE_NAME_MAX + 1];
	unsigned size;       /* 1..POOL_SIZE_MAX sandboxes kept ready */
	unsigned cpus;       /* 0: the create default */
	unsigned memory_mib; /* 0: the create default */
	enum sandbox_network network;
};

/*
 * Parse one --pool argument into *out. 0, or -1 with e saying
 * which part is wrong and what is expected. Ranges beyond syntax (cpus
 * against --max-cpus, ...) are sandbox_spec_parse()'s, on pool_cfg_body().
 */
int pool_cfg_parse(const char *arg, struct pool_cfg *out, struct err *e);

/* The create body a pool's sandboxes are made from (new reference; NULL when out of memory). */
json_t *pool_cfg_body(const struct pool_cfg *c);

/*
 * Can a sandbox made from the pool spec `pool` serve a create of `want`
 * (both parsed by sandbox_spec_parse)? true, or false with *why naming
 * the first field that differs (a static string).
 */
bool pool_spec_fits(const struct sandbox_spec *pool, const struct sandbox_spec *want,
		    const char **why);

#endif
