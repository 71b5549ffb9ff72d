/*
 * egress_proxy_plan: the pure parts of running a sandbox's egress proxy
 * (kiln-egress, issue 37; docs/security.md, "The egress proxy"): which
 * uid it runs as, and its command line.
 *
 * The proxy's uid (= gid) is derived from the sandbox's jail id:
 * egress_first + (jail_id - jail_first), so the --egress-ids range
 * (FIRST, as many ids as --jail-ids) maps one to one onto the jail range.
 * Jail ids are unique among live sandboxes, so proxy uids are too; the
 * ranges may not overlap, nor hold the import id (egress_ids_check), so
 * a proxy can signal or ptrace no VMM, no importer and no other proxy. The
 * id is kept in meta.json (`"egress": {"uid", "gid"}`) like the jail id.
 *
 * Command line (the shared plan's interface 2):
 *   kiln-egress --listen-fd 3 --policy-fd 4 --rules DIR/rules.json --ca DIR
 *               --secrets DIR/secrets.json [--upstream-ca DIR/upstream-ca.pem]
 *   kiln-egress --init-ca DIR
 * DIR is the sandbox's egress/ directory as the proxy sees it
 * (EGRESS_NS_DIR, bound there in its own mount namespace).
 */
#ifndef KILN_EGRESS_PROXY_PLAN_H
#define KILN_EGRESS_PROXY_PLAN_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where the proxy sees its egress/ directory (a tmpfs of its own on /tmp holds it). */
#define EGRESS_NS_TMP "/tmp"
#define EGRESS_NS_DIR "/tmp/egress"
/* Files in egress/ besides rules.json and secrets.json: kilnd's
 * --dns-resolver as a resolv.conf (bound on /etc/resolv.conf in the
 * proxy's mount namespace) and its --egress-upstream-ca (--upstream-ca). */
#define EGRESS_RESOLV_CONF "resolv.conf"
#define EGRESS_UPSTREAM_CA "upstream-ca.pem"
/* The listening socket's descriptor in the proxy (--listen-fd), and its
 * end of the decision stream's socket pair (--policy-fd). */
#define EGRESS_LISTEN_FD 3
#define EGRESS_POLICY_FD 4

/*
 * Whether egress_first as --egress-ids (with --jail-ids' count) is usable:
 * 0, or -1 with why (one line) when it reaches the last uid, overlaps
 * the jail range or holds the import id.
 */
int egress_ids_check(uint32_t egress_first, uint32_t jail_first, uint32_t jail_count,
		     uint32_t import_id, char *why, size_t cap);

/* The proxy uid of jail id jail_id; 0 when jail_id is outside the jail range. */
uint32_t egress_id_of(uint32_t jail_id, uint32_t jail_first, uint32_t jail_count,
		      uint32_t egress_first);

#define EGRESS_ARGV_MAX 16

struct egress_argv {
	char *argv[EGRESS_ARGV_MAX + 1]; /* NULL-terminated; point into the buffers below */
	char prog[PATH_MAX];
	char fd[16], policy_fd[16];
};

/* kiln-egress (prog) serving a sandbox (with --upstream-ca
 * EGRESS_NS_DIR/EGRESS_UPSTREAM_CA when upstream_ca): 0, or -1 when prog
 * is not an absolute path (or too long). */
int egress_argv_serve(const char *prog, bool upstream_ca, struct egress_argv *out);
/* kiln-egress --init-ca EGRESS_NS_DIR: 0 or -1 as above. */
int egress_argv_init_ca(const char *prog, struct egress_argv *out);

#endif
