/* The egress proxy's uid and command line; see egress_proxy_plan.h. */
#include "api/kilnd/supervision/egress_proxy_plan.h"

#include <stdio.h>
#include <string.h>

int egress_ids_check(uint32_t egress_first, uint32_t jail_first, uint32_t jail_count,
		     uint32_t import_id, char *why, size_t cap)
{
	uint64_t e_end = (uint64_t)egress_first + jail_count,
		 j_end = (uint64_t)jail_first + jail_count;

	if (egress_first == 0 || e_end > UINT32_MAX) {
		snprintf(why, cap,
			 "--egress-ids %u: the range (as many ids as --jail-ids, %u) must lie within 1..4294967294",
			 egress_first, jail_count);
		return -1;
	}
	if (egress_first < j_end && jail_first < e_end) {
		snprintf(why, cap,
			 "--egress-ids %u overlaps --jail-ids %u:%u: a proxy would share a sandbox's uid; give --egress-ids FIRST outside it",
			 egress_first, jail_first, jail_count);
		return -1;
	}
	if (import_id >= egress_first && import_id < e_end) {
		snprintf(why, cap,
			 "--egress-ids %u:%u holds the --import-id %u: a proxy would share the importer's uid; give --egress-ids FIRST past it",
			 egress_first, jail_count, import_id);
		return -1;
	}
	return 0;
}

uint32_t egress_id_of(uint32_t jail_id, uint32_t jail_first, uint32_t jail_count,
		      uint32_t egress_first)
{
	if (jail_id < jail_first || jail_id - jail_first >= jail_count)
		return 0;
	return egress_first + (jail_id - jail_first);
}

static int set_prog(const char *prog, struct egress_argv *out)
{
	memset(out, 0, sizeof(*out));
	if (!prog || prog[0] != '/' || strlen(prog) >= sizeof(out->prog))
		return -1;
	strcpy(out->prog, prog);
	out->argv[0] = out->prog;
	return 0;
}

int egress_argv_serve(const char *prog, bool upstream_ca, struct egress_argv *out)
{
	static char *const plan[] = { "--rules",   EGRESS_NS_DIR "/rules.json",
				      "--ca",      EGRESS_NS_DIR,
				      "--secrets", EGRESS_NS_DIR "/secrets.json",
				      NULL };
	size_t n = 1;

	if (set_prog(prog, out))
		return -1;
	snprintf(out->fd, sizeof(out->fd), "%d", EGRESS_LISTEN_FD);
	out->argv[n++] = "--listen-fd";
	out->argv[n++] = out->fd;
	snprintf(out->policy_fd, sizeof(out->policy_fd), "%d", EGRESS_POLICY_FD);
	out->argv[n++] = "--policy-fd";
	out->argv[n++] = out->policy_fd;
	for (char *const *a = plan; *a; a++)
		out->argv[n++] = *a;
	if (upstream_ca) {
		out->argv[n++] = "--upstream-ca";
		out->argv[n++] = EGRESS_NS_DIR "/" EGRESS_UPSTREAM_CA;
	}
	return 0;
}

int egress_argv_init_ca(const char *prog, struct egress_argv *out)
{
	if (set_prog(prog, out))
		return -1;
	out->argv[1] = "--init-ca";
	out->argv[2] = EGRESS_NS_DIR;
	return 0;
}
