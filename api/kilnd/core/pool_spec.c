/* kilnd's warm pools as pure logic: --pool syntax and fit; see pool_spec.h. */
#include "api/kilnd/core/pool_spec.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lib/base/num_parse.h"

/* One KEY=VALUE of the options after the size: 0, or -1 with e. */
static int pool_option(const char *opt, size_t n, struct pool_cfg *out, struct err *e)
{
	const char *eq = memchr(opt, '=', n);
	size_t klen = eq ? (size_t)(eq - opt) : n;
	const char *val = eq ? eq + 1 : NULL;
	size_t vlen = eq ? n - klen - 1 : 0;
	uint64_t v;

	if (!eq) {
		err_set(e, EINVAL, "'%.*s': expected KEY=VALUE (cpus, memory_mib or network)",
			(int)n, opt);
		return -1;
	}
	if (klen == 4 && memcmp(opt, "cpus", 4) == 0) {
		if (out->cpus || num_parse_u64_n(val, vlen, 10, 1, 64, &v)) {
			err_set(e, EINVAL, "cpus '%.*s': once, a number from 1 to 64", (int)vlen,
				val);
			return -1;
		}
		out->cpus = (unsigned)v;
		return 0;
	}
	if (klen == 10 && memcmp(opt, "memory_mib", 10) == 0) {
		if (out->memory_mib ||
		    num_parse_u64_n(val, vlen, 10, SPEC_MEM_MIN_MIB, 1048576, &v)) {
			err_set(e, EINVAL, "memory_mib '%.*s': once, MiB from %u to 1048576",
				(int)vlen, val, SPEC_MEM_MIN_MIB);
			return -1;
		}
		out->memory_mib = (unsigned)v;
		return 0;
	}
	if (klen == 7 && memcmp(opt, "network", 7) == 0) {
		char word[8];

		if (vlen >= sizeof(word)) {
			err_set(e, EINVAL, "network '%.*s': \"none\" or \"passt\"",
				(int)(vlen > 32 ? 32 : vlen), val);
			return -1;
		}
		memcpy(word, val, vlen);
		word[vlen] = '\0';
		if (firewall_network_parse(word, &out->network)) {
			err_set(e, EINVAL, "network '%s': \"none\" or \"passt\"", word);
			return -1;
		}
		return 0;
	}
	err_set(e, EINVAL, "unknown option '%.*s' (cpus, memory_mib or network)",
		(int)(klen > 32 ? 32 : klen), opt);
	return -1;
}

int pool_cfg_parse(const char *arg, struct pool_cfg *out, struct err *e)
{
	const char *eq, *p, *end;
	uint64_t size;
	size_t n;

	memset(out, 0, sizeof(*out));
	out->network = SANDBOX_NET_NONE;
	if (!arg || strlen(arg) > POOL_ARG_MAX) {
		err_set(e, EINVAL,
			"expected IMAGE=N[,cpus=C][,memory_mib=M][,network=none|passt], at most %d bytes",
			POOL_ARG_MAX);
		return -1;
	}
	eq = strchr(arg, '=');
	n = eq ? (size_t)(eq - arg) : 0;
	if (!eq || n == 0 || n > IMAGE_NAME_MAX) {
		err_set(e, EINVAL, "expected IMAGE=N[,cpus=C][,memory_mib=M][,network=none|passt]");
		return -1;
	}
	memcpy(out->image, arg, n);
	out->image[n] = '\0';
	if (!image_name_valid(out->image)) {
		err_set(e, EINVAL, "image '%s': 1..64 of [A-Za-z0-9._-], first a letter or digit",
			out->image);
		return -1;
	}
	p = eq + 1;
	end = strchr(p, ',');
	n = end ? (size_t)(end - p) : strlen(p);
	if (num_parse_u64_n(p, n, 10, 1, POOL_SIZE_MAX, &size)) {
		err_set(e, EINVAL, "size '%.*s': a number of sandboxes from 1 to %d",
			(int)(n > 32 ? 32 : n), p, POOL_SIZE_MAX);
		return -1;
	}
	out->size = (unsigned)size;
	while (end) {
		p = end + 1;
		end = strchr(p, ',');
		n = end ? (size_t)(end - p) : strlen(p);
		if (pool_option(p, n, out, e))
			return -1;
	}
	return 0;
}

json_t *pool_cfg_body(const struct pool_cfg *c)
{
	json_t *b = json_pack("{s:s,s:s}", "image", c->image, "network",
			      firewall_network_name(c->network));

	if (b && c->cpus && json_object_set_new(b, "cpus", json_integer(c->cpus)))
		goto oom;
	if (b && c->memory_mib && json_object_set_new(b, "memory_mib", json_integer(c->memory_mib)))
		goto oom;
	return b;
oom:
	json_decref(b);
	return NULL;
}

bool pool_spec_fits(const struct sandbox_spec *pool, const struct sandbox_spec *want,
		    const char **why)
{
	const char *w = NULL;

	if (strcmp(pool->image, want->image) != 0)
		w = "image";
	else if (pool->cpus != want->cpus)
		w = "cpus";
	else if (pool->memory_mib != want->memory_mib)
		w = "memory_mib";
	else if (pool->disk_mib != want->disk_mib)
		w = "disk_mib";
	else if (pool->network != want->network)
		w = "network";
	else if (want->nshares != pool->nshares)
		w = "shares";
	else if (want->console != pool->console)
		w = "console";
	else if (want->firewall)
		w = "firewall";
	else if (want->limits.memory_max_mib != pool->limits.memory_max_mib ||
		 want->limits.pids_max != pool->limits.pids_max ||
		 want->limits.cpu_max_centi != pool->limits.cpu_max_centi)
		w = "limits";
	if (why)
		*why = w;
	return w == NULL;
}
