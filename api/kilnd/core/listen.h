/*
 * listen: the API's Unix socket, bound by kilnd itself (the HTTP server
 * of http.h then serves it), and the check of each
 * peer's credentials.
 *
 * Contract: listen_unix() creates the parent directory (0755) if missing,
 * refuses to take over a socket another process is listening on, replaces
 * a stale one (nothing listening) and nothing else (a regular file at the
 * path is an error), and leaves the socket with mode 0660 and the given
 * group. Errors are -1 with a message in e (what failed, what to do).
 */
#ifndef KILN_LISTEN_H
#define KILN_LISTEN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "api/kilnd/core/kilnd.h"
#include "lib/base/err.h"
#include "lib/base/peer_cred.h"

/* Bind and listen; *fd is close-on-exec. */
int listen_unix(const char *path, bool set_gid, gid_t gid, int *fd, struct err *e);

/* root, kilnd's own uid, --allow-uid, or a primary gid in --allow-gid. */
bool peer_allowed(const struct kilnd_config *cfg, const struct peer *p);

#endif
