/*
 * A sandbox's shares, opened for one kiln-vmm start (sandbox_impl.h):
 * every boot, wake, fork and restore goes through spawn_and_wait, which
 * opens them here and hands kiln-vmm the directories (--share fd=N), so
 * a tree changed since the create cannot widen what is shared
 * (share_open.h, docs/security.md "Sandbox owners and shares").
 */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "api/kilnd/registry/sandbox_impl.h"
#include "lib/base/share_open.h"

int sandbox_shares_open(struct sandbox *sb, int fds[SPEC_MAX_SHARES], struct api_err *e)
{
	const struct kilnd_config *cfg = &sb->d->cfg;
	/* The owner never changes; root's sandboxes may share any directory. */
	bool confined = sb->rec.owner_uid != 0;
	size_t n = sb->rec.spec.nshares;

	for (size_t i = 0; i < n; i++) {
		const struct share_spec *sh = &sb->rec.spec.shares[i];
		struct err why;
		int r;

		fds[i] = -1;
		if (sh->client) /* served through kilnd (share_relay.h) */
			continue;
		r = share_open(sh->host_path, confined ? cfg->share_roots : NULL,
			       confined ? cfg->nshare_roots : 0, &fds[i], &why);
		if (r) {
			api_err_set(e,
				    r == -ELOOP || r == -EPERM || r == -EINVAL ? API_E_FORBIDDEN
									       : API_E_BOOT_FAILED,
				    "sandbox %s: shares[%zu] (guest_path %s) refused at this start: %s",
				    sb->rec.id, i, sh->guest_path, why.msg);
			sandbox_shares_close(fds, i);
			return -1;
		}
	}
	return 0;
}

void sandbox_shares_close(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}
