/*
 * egress_proxy: one kiln-egress per sandbox whose firewall rules have
 * `http` entries (issue 37; docs/security.md, "The egress proxy"),
 * started, confined and watched by kilnd.
 *
 * Contract:
 *  - Files (the shared plan's interface 4): <sandbox>/egress/, owned by
 *    the proxy's uid, 0700, holding rules.json (the firewall JSON) and
 *    secrets.json (the owner's secrets its rules name: secrets.h), both 0600 and
 *    the proxy's, given to it on their descriptors (file_replace_owned_at);
 *    the CA there made by `kiln-egress --init-ca` run as the proxy;
 *    <sandbox>/vm/egress.sock bound by kilnd (root, before the VMM starts),
 *    given to the jail uid, 0600, its descriptor the proxy's --listen-fd;
 *    <sandbox>/egress.log the proxy's stdout and stderr, capped like
 *    vmm.log (capped_log, KEEPER_LOG_CAP and one ".1").
 *  - Confinement (a root kilnd): the proxy's own uid = gid
 *    (egress_proxy_plan.h, meta.json's "egress"), no supplementary
 *    groups, no capabilities, NO_NEW_PRIVS, the seccomp allowlist
 *    (egress_proxy_seccomp.h), pid 1 of its own pid namespace, its own
 *    mount (/tmp, /var/tmp, /dev/shm empty tmpfs; egress/ bound at
 *    EGRESS_NS_DIR), IPC and UTS namespaces, the host's network
 *    namespace (it connects upstream), a cgroup of its own
 *    (<cgroup-parent>/egress-<id>, not the sandbox's, whose programs hold
 *    passt) with egress programs that keep it off the host's loopback,
 *    its own addresses, link-local and metadata (egress_policy without
 *    rules), rlimits, and a parent-death SIGKILL. Under --no-jail it runs
 *    as kilnd's uid with the seccomp filter alone, as the VMM runs
 *    unconfined.
 *  - Watching (egress_proxy_run.h): one thread of kilnd forks, reaps (pidfds) and restarts
 *    proxies and copies their output, so the parent-death signal ties
 *    each to kilnd's life, not to a request's thread. A proxy that ends
 *    while its sandbox runs is started again after a backoff (1 s,
 *    doubling to 60 s; back to 1 s after a minute of running), with a
 *    log line and kiln_egress_proxy_restarts_total. It ends with its
 *    sandbox's VMM (egress_proxy_end) and with kilnd; a restarted kilnd
 *    starts it again for each reattached sandbox (the VMM connects per
 *    flow, by path: a socket bound afresh serves it).
 *  - No global state: the runner hangs off struct kilnd.
 */
#ifndef KILN_EGRESS_PROXY_H
#define KILN_EGRESS_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api/kilnd/core/api_error.h"
#include "api/kilnd/supervision/egress_tally.h"
#include "lib/base/err.h"

struct kilnd;
struct sandbox;

/* The runner: its thread and filter. 0, or -1 with e. Before sandboxes load. */
int egress_proxies_new(struct kilnd *d, struct err *e);
/* Kill every proxy and end the thread (after every sandbox stopped). */
void egress_proxies_free(struct kilnd *d);

/*
 * Before a boot of sb (booting, owned by the caller): its stored rules
 * have `http` entries: the files, vm/egress.sock and a running proxy;
 * none: no proxy (one left is stopped). For every passt sandbox, sock
 * (cap bytes) is the socket's path for kiln-vmm's --egress-proxy (the
 * same inside its jail: the jail directory sits at its own path), so
 * http rules a PUT adds later steer at once; without network sock is "".
 * 0, or -1 with e.
 */
int egress_proxy_boot(struct sandbox *sb, char *sock, size_t cap, struct api_err *e);

/*
 * The rules changed (canon; NULL: the stored ones) on a running sandbox,
 * or kilnd reattached to it: `http` entries: the proxy runs with them
 * (started, or rules.json rewritten and the proxy told); none: stopped.
 * 0, or -1 with e.
 */
int egress_proxy_sync(struct sandbox *sb, const json_t *canon, struct api_err *e);

/* A secret sandbox id's rules name was set or deleted (secrets_changed):
 * its running proxy gets secrets.json anew and a SIGHUP. */
void egress_proxy_secrets_changed(struct kilnd *d, const char *id);

/* sb's VMM ended (or never started): its proxy, if any, is stopped and
 * its socket removed. */
void egress_proxy_end(struct sandbox *sb);

/* For /metrics: proxies running now, restarts and their decisions
 * (egress_tally.h) since kilnd started. */
void egress_proxies_counts(struct kilnd *d, unsigned *running, uint64_t *restarts,
			   struct egress_counts *decisions);

/*
 * GET .../egress/log: the last `lines` decision lines of egress.log
 * (egress_proxy_log.h) as {"lines": [...]}. 409 wrong_state for a
 * sandbox whose rules have no `http` entries. 0, or -1 with e.
 */
int egress_proxy_log(struct sandbox *sb, size_t lines, json_t **out, struct api_err *e);

#endif
