/* GET /v1/health (docs/api.md): the daemon's state, its jail, cgroups,
 * egress and pools. */
#include "api/kilnd/endpoints/handlers.h"
#include "api/kilnd/registry/sandbox.h"
#include "lib/base/version.h"

void handle_health(struct http_req *r)
{
	unsigned counts[SANDBOX_STATE_COUNT];
	size_t total;

	if (!http_no_query(r, "health"))
		return;
	const struct kilnd_config *c = &r->d->cfg;
	bool jailed = !c->no_jail && !c->jail_unavailable[0];
	/* Programs go on each sandbox's cgroup: none without cgroups. */
	json_t *egress_why = !c->cgroups
		? json_string("kilnd runs without cgroups (see cgroups.reason)")
		: c->egress ? json_null()
			    : json_string(c->egress_off);

	/* docs/api.md, "limits": what a state directory in RAM means */
	json_t *state_dir = json_pack(
		"{s:s,s:b,s:o}", "filesystem", c->state_fs, "in_ram", c->state_in_ram, "note",
		c->state_in_ram
			? json_string(
				  "the state directory is in RAM: what guests write to their disks and their snapshots count as their cgroups' memory, so kilnd raises each memory.max by twice the disk and the RAM above limits.memory_max_mib, and refuses (507) a checkpoint or hibernation that would not fit")
			: json_null());

	sandboxes_count(r->d, counts, &total);
	http_answer(r, 0, 200,
		    json_pack("{s:s,s:s,s:I,s:I,s:I,s:o,s:{s:b,s:s,s:o},s:{s:b,s:o,s:o},s:{s:b,s:o},s:o*}",
			      "status", "ok", "version", KILN_VERSION, "uptime_s",
			      (json_int_t)((mono_ms() - r->d->started_mono_ms) / 1000), "sandboxes",
			      (json_int_t)total, "boot_timeout_s",
			      (json_int_t)((c->boot_timeout_ms + 999) / 1000), "state_dir",
			      state_dir, "jail", "enabled", jailed, "mode",
			      jailed               ? "jailed"
				      : c->no_jail ? "off (--no-jail)"
						   : "unavailable",
			      "reason",
			      c->jail_unavailable[0] ? json_string(c->jail_unavailable)
						     : json_null(),
			      "cgroups", "used", c->cgroups, "parent",
			      c->cgroups ? json_string(c->cgroup_parent) : json_null(), "reason",
			      c->cgroups ? json_null() : json_string(c->cgroup_off), "egress",
			      "used", c->cgroups && c->egress, "reason", egress_why, "pools",
			      sandbox_pools_view(r->d)),
		    NULL);
}
