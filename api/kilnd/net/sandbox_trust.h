/*
 * sandbox_trust: a sandbox's egress CA in its guest's trust
 * (docs/agent-protocol.md, configure.trust_ca; docs/architecture.md,
 * "The guest's trust in the egress CA").
 *
 * Contract:
 *  - The CA is <sandbox dir>/egress/ca.pem, written by the egress proxy's
 *    setup for sandboxes with `http` firewall rules. egress/ belongs to
 *    the proxy's uid, so root reads the file as one a less privileged
 *    process could have planted: through open_beneath (no symbolic link
 *    on the way, a regular file only), at most SANDBOX_TRUST_CA_MAX
 *    bytes. Its text is checked by the agent codec before it is sent.
 *  - sandbox_boot sends it (with a fork's hostname, in one configure)
 *    after every boot, restore, fork and wake that finds it (a fork
 *    without one gets "": its snapshot's guest may have had a CA), and
 *    a warm pool's hand-over with the configure that renames the sandbox;
 *    sandbox_trust_push sends it alone to a running sandbox, or "" when
 *    the file is gone (the guest then drops the CA).
 */
#ifndef KILN_SANDBOX_TRUST_H
#define KILN_SANDBOX_TRUST_H

#include <kiln/agent.h>

#include "api/kilnd/core/api_error.h"

struct sandbox;

/* configure.trust_ca's limit (AGENT_TRUST_CA_MAX): one PEM certificate. */
#define SANDBOX_TRUST_CA_MAX 8192
#define SANDBOX_TRUST_CA_REL "egress/ca.pem"

/* The CA's PEM text: 1 with *pem (malloc'd, NUL-terminated), 0 when the
 * sandbox has none (*pem NULL), -1 with e (a link on the way, not a
 * regular file, larger than SANDBOX_TRUST_CA_MAX, unreadable). */
int sandbox_trust_read(const struct sandbox *sb, char **pem, struct api_err *e);

/* e from a's failed configure carrying the CA: the agent's message
 * prefixed with the sandbox, what was being done and the CA's file. */
void sandbox_trust_fail(const struct sandbox *sb, const kiln_agent *a, const char *what,
			struct api_err *e);

/* Make the running guest's trust match the file now (a configure with
 * only trust_ca: the CA, or "" when there is none). For a sandbox whose
 * rules gain or lose `http` while it runs. 0, or -1 with e. Not under
 * reg.mu (it waits for the agent). */
int sandbox_trust_push(struct sandbox *sb, struct api_err *e);

#endif
