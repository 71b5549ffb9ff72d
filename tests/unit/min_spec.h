/*
 * min_spec: the smallest valid sandbox spec, parsed by the real
 * sandbox_spec_parse, for tests of kilnd's registry and records
 * (test_sandbox, test_sandbox_record).
 */
#ifndef KILN_TEST_MIN_SPEC_H
#define KILN_TEST_MIN_SPEC_H

#include <jansson.h>

#include "api/kilnd/core/sandbox_spec.h"

/* A valid spec (the view renders it). */
static inline void min_spec(struct sandbox_spec *spec)
{
	static const struct sandbox_limits lim = { .max_cpus = 8,
						   .max_memory_mib = 4096,
						   .max_disk_mib = SPEC_DISK_MAX_MIB };
	json_t *body = json_pack("{s:s}", "image", "minimal");
	struct api_err e;

	assert_int_equal(sandbox_spec_parse(body, &lim, spec, &e), 0);
	json_decref(body);
}

#endif
