/*
 * vmm_argv: the kiln-vmm command line for one sandbox boot.
 *
 * Contract: pure. Everything that reaches kiln-vmm's options or the
 * guest's kernel command line is checked again here, even though the
 * spec was validated on the way in: a space or quote on the kernel
 * command line would add parameters. Paths go one per option, which
 * kiln-vmm takes whole (--disk-image, --disk-overlay, --vsock-path;
 * shares by descriptor, or DIR:TAG whose tag kilnd names), so a path may
 * hold any character but a control one (a snapshot's DIR is the rest of a
 * control socket line). The guest learns its hostname and
 * shares from the command line (kiln.hostname=, kiln.shares=TAG:/path[:ro]);
 * share tags are kiln0..kiln7 in spec order. Every VMM serves its control
 * socket (--control: pause, resume, snapshot). A restore (--restore DIR)
 * has no --kernel and no --cmdline (the guest's kernel runs on from the
 * snapshot) and the same memory, vCPUs and devices as a boot, which the
 * snapshot requires. A sandbox with network passt gets `--net passt
 * --firewall FILE` (its current rules, on boot and restore alike) and, on
 * a boot, kiln.ip=/kiln.gw=/kiln.dns= with passt's addresses, and when
 * its rules have `http` entries `--egress-proxy SOCKET` (the path is the
 * same inside the jail: the jail directory sits at its own path). A client
 * share is `--share-remote SOCKET:TAG[:ro]` (its relay's socket, which may
 * not hold ':') and `--share-remote-timeout MS` once, and has a tag and a
 * kiln.shares= entry as a host share has.
 */
#ifndef KILN_VMM_ARGV_H
#define KILN_VMM_ARGV_H

#include <stddef.h>
#include <stdint.h>

#include "api/kilnd/core/api_error.h"
#include "api/kilnd/core/sandbox_spec.h"

#define VMM_ARGV_MAX 64

struct vmm_launch {
	const char *vmm; /* kiln-vmm binary */
	const char *kernel;
	const char *image;       /* read-only base */
	const char *overlay;     /* the sandbox's copy-on-write overlay (kiln-vmm creates it) */
	const char *vsock;       /* the sandbox's vsock Unix socket */
	const char *control;     /* the sandbox's kiln-vmm control socket */
	const char *restore_dir; /* a snapshot to resume instead of booting; NULL: boot */
	const char *firewall;    /* the rule set file; needed when spec->network is passt */
	const char *resolver;    /* passt's upstream nameserver (IPv4), or NULL/"": the host's */
	/* The egress proxy's socket (egress_proxy.h) when the rules have
	 * `http` entries: --egress-proxy PATH; NULL or "": none. */
	const char *egress_proxy;
	const char *
		jail_dir; /* kiln-vmm --jail: the sockets' and snapshots' directory; NULL: unjailed */
	uint32_t jail_id; /* its --uid and --gid (non-zero with jail_dir) */
	/* One open directory per spec share (share_open.h), passed as
	 * --share fd=N:TAG: kiln-vmm resolves no share path. NULL: the
	 * paths (--share DIR:TAG). */
	const int *share_fds;
	/* Per spec share, the socket of a client share's relay
	 * (share_relay.h), passed as --share-remote PATH:TAG[:ro] with
	 * --share-remote-timeout (the spec's timeout_ms); NULL entries for
	 * host shares. */
	const char *const *share_socks;
	const struct sandbox_spec *spec;
};

struct vmm_argv {
	char *argv[VMM_ARGV_MAX + 1]; /* NULL-terminated; each malloc'd */
	size_t argc;
};

/* Build the argument vector. 0, or -1 with e (bad_field for a relative
 * path or a name kiln-vmm could misread, internal when out of memory). */
int vmm_argv_build(const struct vmm_launch *l, struct vmm_argv *out, struct api_err *e);

void vmm_argv_free(struct vmm_argv *a);

#endif
