/*
 * sandbox_jail: the directory and the ids a sandbox's kiln-vmm is jailed
 * with (docs/security.md).
 *
 * <sandbox dir>/vm is the jail's one directory (kiln-vmm --jail): root's,
 * mode 0755, holding the vsock and control sockets (bound by kiln-vmm
 * before it drops root) and two directories the jailed VMM writes,
 * owned by its uid, mode 0700: checkpoints/ and hibernate/. Everything
 * else of the sandbox (meta.json, logs, the overlay) stays root's and out
 * of its reach. kilnd opens what is inside those two directories only
 * through sandbox_jail_open (the VMM may have planted links or fifos).
 */
#ifndef KILN_KILND_SANDBOX_JAIL_H
#define KILN_KILND_SANDBOX_JAIL_H

#include <stddef.h>
#include <stdint.h>

#include "api/kilnd/core/api_error.h"
#include "lib/base/err.h"
#include "lib/base/open_beneath.h"

struct sandbox;

/*
 * Before each kiln-vmm start (boot, wake, fork, restore): give the
 * sandbox its jail id if it has none yet (and jails are on), and make the
 * directories above with their owners and modes (also for records from
 * before the jail). 0 with *id (0: --no-jail) and the jail directory in
 * dir[cap], or -1 with e: jail_unavailable (kilnd cannot jail),
 * limit_reached (every --jail-ids id is in use), internal.
 */
int sandbox_jail_prepare(struct sandbox *sb, char *dir, size_t cap, uint32_t *id,
			 struct api_err *e);

/*
 * The one way kilnd (root) opens something in the directories the jailed
 * VMM writes: rel ("checkpoints/ready/disk0", "hibernate/image") beneath
 * the sandbox's vm/, through open_beneath (no symbolic link anywhere on
 * the way, no fifo waited on, only the kind asked for; docs/security.md,
 * "What kilnd opens in jail-writable directories"). The descriptor (st
 * filled when not NULL), or -errno with e naming the sandbox's vm/ and
 * rel (open_beneath.h's codes).
 */
int sandbox_jail_open(const struct sandbox *sb, const char *rel, enum open_beneath_kind kind,
		      struct stat *st, struct err *e);

/*
 * A socket the jailed VMM connects to (vm/egress.sock, vm/share-N.sock),
 * bound afresh at path by kilnd (root: vm/ is root's, so neither name can
 * be replaced under it), given to the jail uid, 0600, listening. Its
 * descriptor (close-on-exec), or -1 with e (spawn_failed naming what).
 */
int sandbox_jail_listen(struct sandbox *sb, const char *path, const char *what, struct api_err *e);

#endif
