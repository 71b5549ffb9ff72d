/* kiln-vmm command lines; see vmm_argv.h. */
#include "api/kilnd/supervision/vmm_argv.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/kilnd/core/names.h"

static int add(struct vmm_argv *a, struct api_err *e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int add(struct vmm_argv *a, struct api_err *e, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (a->argc == VMM_ARGV_MAX) {
		api_err_set(e, API_E_INTERNAL, "kiln-vmm command line: more than %d arguments",
			    VMM_ARGV_MAX);
		return -1;
	}
	va_start(ap, fmt);
	r = vasprintf(&a->argv[a->argc], fmt, ap);
	va_end(ap);
	if (r < 0) {
		a->argv[a->argc] = NULL;
		api_err_set(e, API_E_INTERNAL, "kiln-vmm command line: out of memory");
		return -1;
	}
	a->argc++;
	return 0;
}

static int check_path(const char *what, const char *p, struct api_err *e)
{
	if (!p || !host_path_valid(p)) {
		api_err_set(e, API_E_BAD_FIELD,
			    "%s '%.200s' must be an absolute path without control characters", what,
			    p ? p : "(none)");
		return -1;
	}
	return 0;
}

int vmm_argv_build(const struct vmm_launch *l, struct vmm_argv *a, struct api_err *e)
{
	const struct sandbox_spec *s = l->spec;
	char shares[SPEC_MAX_SHARES * (SPEC_GUEST_PATH_MAX + 16) + 16] = "";
	size_t off = 0;

	memset(a, 0, sizeof(*a));
	if (check_path("kiln-vmm", l->vmm, e) ||
	    (!l->restore_dir && check_path("kernel", l->kernel, e)) ||
	    check_path("image", l->image, e) || check_path("overlay", l->overlay, e) ||
	    check_path("vsock socket", l->vsock, e) ||
	    check_path("control socket", l->control, e) ||
	    (l->restore_dir && check_path("snapshot", l->restore_dir, e)))
		return -1;
	if (s->network == SANDBOX_NET_PASST && check_path("firewall rules", l->firewall, e))
		return -1;
	if (s->network == SANDBOX_NET_PASST && l->egress_proxy && *l->egress_proxy &&
	    check_path("egress proxy socket", l->egress_proxy, e))
		return -1;
	if (!hostname_valid(s->hostname)) {
		api_err_set(e, API_E_BAD_FIELD, "hostname '%.80s' is invalid", s->hostname);
		return -1;
	}
	if (s->nshares > SPEC_MAX_SHARES) {
		api_err_set(e, API_E_BAD_FIELD, "at most %d shares", SPEC_MAX_SHARES);
		return -1;
	}
	for (size_t i = 0; i < s->nshares; i++) {
		const struct share_spec *sh = &s->shares[i];

		if (sh->client) {
			const char *sock = l->share_socks ? l->share_socks[i] : NULL;

			if (check_path("client share socket", sock, e))
				return -1;
			/* kiln-vmm splits SOCK:TAG[:ro] at a ':'. */
			if (strchr(sock, ':')) {
				api_err_set(e, API_E_BAD_FIELD,
					    "client share socket '%.200s' holds ':', which kiln-vmm's --share-remote cannot take (a --state-dir without ':')",
					    sock);
				return -1;
			}
		} else if (check_path("share host_path", sh->host_path, e)) {
			return -1;
		}
		if (!sh->client && l->share_fds && l->share_fds[i] < 3) {
			api_err_set(e, API_E_INTERNAL, "share %zu: descriptor %d is not a share's",
				    i, l->share_fds[i]);
			return -1;
		}
		if (!guest_mount_path_valid(sh->guest_path, SPEC_GUEST_PATH_MAX)) {
			api_err_set(e, API_E_BAD_FIELD, "share guest_path '%.140s' is invalid",
				    sh->guest_path);
			return -1;
		}
		off += (size_t)snprintf(shares + off, sizeof(shares) - off, "%skiln%zu:%s%s",
					i ? "," : "", i, sh->guest_path,
					sh->read_only ? ":ro" : "");
	}
	if (add(a, e, "%s", l->vmm))
		goto fail;
	if (l->restore_dir ? (add(a, e, "--restore") || add(a, e, "%s", l->restore_dir))
			   : (add(a, e, "--kernel") || add(a, e, "%s", l->kernel)))
		goto fail;
	/* Paths one per option, taken whole by kiln-vmm: no character of a
	 * path is a separator. The size only shapes an overlay kiln-vmm
	 * creates (the first boot). */
	if (add(a, e, "--disk-image") || add(a, e, "%s", l->image) || add(a, e, "--disk-overlay") ||
	    add(a, e, "%s", l->overlay) ||
	    (s->disk_mib && (add(a, e, "--disk-size") || add(a, e, "%u", s->disk_mib))) ||
	    add(a, e, "--vsock-path") || add(a, e, "%s", l->vsock) || add(a, e, "--control") ||
	    add(a, e, "%s", l->control) || add(a, e, "--mem") || add(a, e, "%u", s->memory_mib) ||
	    add(a, e, "--cpus") || add(a, e, "%u", s->cpus) || add(a, e, "--boot-timeline=json"))
		goto fail;
	if (s->console && add(a, e, "--console"))
		goto fail;
	if (l->jail_dir && !l->jail_id) {
		api_err_set(e, API_E_INTERNAL, "kiln-vmm command line: a jail without an id");
		goto fail;
	}
	if (l->jail_dir &&
	    (check_path("jail directory", l->jail_dir, e) || add(a, e, "--jail") ||
	     add(a, e, "%s", l->jail_dir) || add(a, e, "--uid") || add(a, e, "%u", l->jail_id) ||
	     add(a, e, "--gid") || add(a, e, "%u", l->jail_id)))
		goto fail;
	if (s->network == SANDBOX_NET_PASST &&
	    (add(a, e, "--net") ||
	     (l->resolver && *l->resolver ? add(a, e, "passt,resolver=%s", l->resolver)
					  : add(a, e, "passt")) ||
	     add(a, e, "--firewall") || add(a, e, "%s", l->firewall) ||
	     /* Denied flows go to vmm.log (rate-limited): GET .../firewall/log. */
	     add(a, e, "--firewall-log")))
		goto fail;
	/* Steered flows (the rules' http ports) go to the sandbox's egress proxy. */
	if (s->network == SANDBOX_NET_PASST && l->egress_proxy && *l->egress_proxy &&
	    (add(a, e, "--egress-proxy") || add(a, e, "%s", l->egress_proxy)))
		goto fail;
	/* quiet: with the console on, only warnings and panics reach it (each
	 * byte is a VM exit); kiln-vmm adds quiet itself when it is off. */
	if (!l->restore_dir &&
	    (add(a, e, "--cmdline") ||
	     add(a, e, "quiet kiln.hostname=%s%s%s%s", s->hostname,
		 s->nshares ? " kiln.shares=" : "", shares,
		 s->network == SANDBOX_NET_PASST ? " kiln.ip=" FW_PASST_GUEST_IP
						   " kiln.gw=" FW_PASST_GATEWAY
						   " kiln.dns=" FW_PASST_DNS
						 : "")))
		goto fail;
	for (size_t i = 0; i < s->nshares; i++) {
		const char *ro = s->shares[i].read_only ? ":ro" : "";

		if (s->shares[i].client) {
			if (add(a, e, "--share-remote") ||
			    add(a, e, "%s:kiln%zu%s", l->share_socks[i], i, ro))
				goto fail;
			continue;
		}
		if (add(a, e, "--share") ||
		    (l->share_fds ? add(a, e, "fd=%d:kiln%zu%s", l->share_fds[i], i, ro)
				  : add(a, e, "%s:kiln%zu%s", s->shares[i].host_path, i, ro)))
			goto fail;
	}
	for (size_t i = 0; i < s->nshares; i++) {
		/* One timeout for all (sandbox_spec.h: the client shares agree). */
		if (s->shares[i].client) {
			if (add(a, e, "--share-remote-timeout") ||
			    add(a, e, "%u", s->shares[i].timeout_ms))
				goto fail;
			break;
		}
	}
	return 0;
fail:
	vmm_argv_free(a);
	return -1;
}

void vmm_argv_free(struct vmm_argv *a)
{
	for (size_t i = 0; i < a->argc; i++)
		free(a->argv[i]);
	memset(a, 0, sizeof(*a));
}
