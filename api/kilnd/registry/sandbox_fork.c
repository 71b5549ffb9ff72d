/*
 * Forks: POST /v1/sandboxes {"from_checkpoint":"<sandbox id>/<name>"}
 * (sandbox.h, docs/api.md "Forks"). A new sandbox of its own (directory,
 * overlay, vsock and control sockets) resumes another sandbox's
 * checkpoint: kiln-vmm copies the checkpoint's disk into the new overlay
 * and maps its memory copy-on-write, so forks of one checkpoint share
 * its pages in the page cache. Once the agent answers it gets its own
 * hostname and the host's clock (sandbox_boot), and the port mappings
 * the source had at the checkpoint, each on a new host port.
 */
#include <stdio.h>
#include <string.h>

#include "api/kilnd/registry/sandbox_impl.h"

int sandbox_fork(struct kilnd *d, const json_t *body, const struct peer *peer, json_t **view,
		 struct api_err *e)
{
	char id[SANDBOX_ID_LEN + 1], name[CHECKPOINT_NAME_MAX + 1], ref[CHECKPOINT_REF_MAX + 1];
	char dir[PATH_MAX], image[PATH_MAX];
	struct boot_src src = { .restore_dir = dir, .from = "checkpoint", .checkpoint = ref };
	struct sandbox_spec spec;
	struct sandbox *from, *sb;
	json_t *ports = NULL, *cp;
	bool hostname_given, found;
	int r;

	if (fork_ref_parse(body, id, name, e))
		return -1;
	/* Only from a sandbox this client may see: another uid's checkpoint
	 * is as missing as its sandbox. */
	from = sandbox_get(d, peer, id, e);
	if (!from)
		return -1;
	snprintf(ref, sizeof(ref), "%s/%s", id, name);
	if (sandbox_checkpoint_dir(from, name, dir, sizeof(dir))) {
		api_err_set(e, API_E_INTERNAL, "fork: checkpoint path too long");
		sandbox_put(from);
		return -1;
	}
	/* The source's spec and image are fixed since its creation. */
	if (fork_spec_parse(body, &from->rec.spec, &d->cfg.limits, &spec, &hostname_given, e)) {
		sandbox_put(from);
		return -1;
	}
	/* A fork starts with the source's current firewall rules. */
	if (spec.network == SANDBOX_NET_PASST && !spec.firewall &&
	    sandbox_firewall_current(from, &spec.firewall, e)) {
		sandbox_spec_free(&spec);
		sandbox_put(from);
		return -1;
	}
	kilnd_lock(d);
	/* Not while a deleted checkpoint is folded into the one we read. */
	sandbox_wait_unmerging_locked(from);
	/* A sandbox being deleted takes its checkpoints with it. */
	cp = from->rec.state != SANDBOX_DELETING
		? checkpoint_find(from->rec.checkpoints, name, NULL)
		: NULL;
	found = cp != NULL;
	/* Holds the checkpoint: neither it nor its sandbox is deleted while
	 * kiln-vmm copies and maps it. */
	if (found) {
		from->cp_readers++;
		ports = json_deep_copy(json_object_get(cp, "ports"));
	}
	kilnd_unlock(d);
	if (!found) {
		api_err_set(e, API_E_CHECKPOINT_NOT_FOUND,
			    "sandbox %s has no checkpoint '%s' (GET /v1/sandboxes/%s/checkpoints lists them)",
			    id, name, id);
		sandbox_spec_free(&spec);
		sandbox_put(from);
		return -1;
	}
	snprintf(image, sizeof(image), "%s", from->rec.image_path);
	sb = sandbox_create_entry(d, peer->uid, &spec, image, !hostname_given, false, e);
	if (sb) {
		/* Its own name: the checkpoint's guest still has the source's. */
		src.hostname = sb->rec.spec.hostname;
		kilnd_log("sandbox %s: forking checkpoint %s", sb->rec.id, ref);
		kilnd_lock(d);
		sb->refs++; /* create_finish drops the caller's */
		kilnd_unlock(d);
		r = sandbox_create_finish(sb, &src, view, e);
		/* Before the answer: GET .../ports lists them at once. */
		if (r == 0 && json_array_size(ports))
			sandbox_ports_open_new(sb, ports);
		sandbox_put(sb);
	} else {
		r = -1;
	}
	json_decref(ports);
	kilnd_lock(d);
	from->cp_readers--;
	pthread_cond_broadcast(&from->cv);
	kilnd_unlock(d);
	sandbox_put(from);
	if (r == 0)
		SANDBOX_METRIC(d, forks);
	return r;
}
