/*
 * kilnd: the daemon's context, passed explicitly to every part of it
 * (docs/api.md describes the daemon and its API).
 *
 * Contract:
 *  - One struct kilnd per daemon, built by main() from the command line
 *    and handed to the HTTP server as its closure; nothing in kilnd is a
 *    global variable.
 *  - cfg is immutable once the server runs; the sandbox registry, the
 *    metrics and the secrets have their own locks (sandbox.h, metrics_mu,
 *    registry/secrets.h).
 */
#ifndef KILN_KILND_H
#define KILN_KILND_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "api/kilnd/core/kilnd_log.h" /* every layer logs */
#include "api/kilnd/core/api_error.h"
#include "api/kilnd/core/log_limit.h"
#include "api/kilnd/core/metrics.h"
#include "api/kilnd/core/names.h"
#include "api/kilnd/core/pool_spec.h"
#include "api/kilnd/core/preview_spec.h"
#include "api/kilnd/core/sandbox_spec.h"
#include "lib/base/err.h"
#include "lib/base/mono.h"

#define KILND_MAX_IMAGES 64
#define KILND_MAX_ALLOW 32
#define KILND_MAX_SHARE_ROOTS 16
#define KILND_SOCKET_MAX 108 /* sizeof(sun_path) */

struct kilnd_image {
	char name[IMAGE_NAME_MAX + 1];
	char path[PATH_MAX];
};

struct kilnd_config {
	char socket_path[KILND_SOCKET_MAX];
	gid_t socket_gid;
	bool has_socket_gid;
	uid_t allow_uid[KILND_MAX_ALLOW];
	size_t nallow_uid;
	gid_t allow_gid[KILND_MAX_ALLOW];
	size_t nallow_gid;
	char state_dir[PATH_MAX];
	/* Its filesystem keeps files in RAM (tmpfs, ramfs): overlays and
	 * snapshots are cgroup memory (cgroup_limits.h, cg_ram_state_mib). */
	bool state_in_ram;
	char state_fs[16]; /* "tmpfs", "ramfs", or "disk" */
	char kernel[PATH_MAX];
	char vmm[PATH_MAX];
	/* Image import (docs/api.md, "POST /v1/images"): the importer and
	 * the kiln-init it installs, the archive cap (--max-image), the
	 * uid = gid the importer runs as (--import-id; docs/security.md).
	 * importer and kiln_init are "" unless given: then they are looked
	 * for at each import, next to kilnd (self_dir) or in ../lib/kiln/. */
	char importer[PATH_MAX];
	char kiln_init[PATH_MAX];
	char self_dir[PATH_MAX];
	uint64_t max_image;
	uint32_t import_id;
	struct kilnd_image images[KILND_MAX_IMAGES];
	size_t nimages;
	char share_roots[KILND_MAX_SHARE_ROOTS][PATH_MAX]; /* resolved */
	size_t nshare_roots;
	int boot_timeout_ms;
	int stop_timeout_ms;
	uint64_t max_body;
	uint64_t max_upload;       /* 0: no limit */
	unsigned client_timeout_s; /* --client-timeout: a silent client is dropped after it */
	unsigned max_sandboxes;
	unsigned uid_connections;     /* --max-connections-per-uid, 0: no cap */
	unsigned max_checkpoints;     /* per sandbox; 0: none */
	struct sandbox_limits limits; /* and idle_timeout_s's default (--idle-timeout) */
	char dns_resolver[16]; /* --dns-resolver: passt sandboxes' upstream DNS; "": the host's */
	bool quiet;
	/* The jail (docs/security.md): each sandbox's kiln-vmm runs as its own
	 * uid = gid from jail_id_first .. jail_id_first + jail_id_count - 1,
	 * in a cgroup of its own. */
	bool no_jail; /* --no-jail: the operator runs VMMs unconfined (and without cgroups where unusable) */
	char jail_unavailable[256]; /* why this kilnd cannot jail; "": it can */
	uint32_t jail_id_first, jail_id_count;
	/* The egress proxies (supervision/egress_proxy.h): kiln-egress
	 * (--egress-proxy; "": next to kilnd or in ../lib/kiln/) and the
	 * first of their uids (--egress-ids; as many as --jail-ids). */
	char egress_prog[PATH_MAX];
	uint32_t egress_id_first;
	/* --egress-upstream-ca: the certificates the proxies verify upstream
	 * servers against instead of the host's trust store ("": the host's). */
	char egress_upstream_ca[PATH_MAX];
	/* --cgroup-parent; after start the directory in use ("": cgroups off). */
	char cgroup_parent[PATH_MAX];
	bool cgroups; /* each VMM runs in a cgroup of its own (supervision/cgroup.h) */
	char cgroup_off[ERR_MSG_MAX]; /* why not, when cgroups is false (cgroup_setup's struct err) */
	/* Egress programs on each passt sandbox's cgroup (sandbox_egress.h). */
	bool egress;
	char egress_off[512]; /* why not, when egress is false */
	int state_lock_fd; /* <state>/kilnd.lock, locked for this process's life (state_lock.h) */
	unsigned keeper_grace_s; /* --keeper-grace: how long a VMM waits for a new kilnd (keeper.h) */
	unsigned zygotes;        /* --zygotes: parked kiln-vmms kept ready (zygote.h) */
	bool upgrade;            /* --upgrade: take over from the running kilnd (handover.h) */
	int listen_fd;           /* the API socket handed over by it; -1: bind our own */
	int preview_fd;          /* its preview listener, handed over too; -1: none */
	struct pool_cfg pools[KILND_MAX_POOLS]; /* --pool (sandbox_pool.c) */
	size_t npools;
	/* --preview-listen ADDR:PORT and --preview-domain (docs/api.md,
	 * "Preview URLs"); preview_port 0: no preview listener. */
	char preview_addr[16];
	uint16_t preview_port;
	char preview_domain[PREVIEW_DOMAIN_MAX + 1];
	/* --preview-head-timeout, --preview-max-per-client and
	 * --preview-max-per-sandbox (preview_caps.h). */
	unsigned preview_head_timeout_s;
	unsigned preview_max_per_client, preview_max_per_sandbox;
};

/* What supervise.c runs as `--keeper` (keeper.h): this very binary. */
#define KILND_SELF_EXE "/proc/self/exe"

struct sandbox;
struct kilnd_pools;   /* sandbox_pool.c */
struct kilnd_secrets; /* registry/secrets.c */

struct sandbox_registry {
	pthread_mutex_t mu;
	struct sandbox **v;
	size_t n, cap;
};

/* Template builds at once, and a template name's longest (names.h's image rule). */
#define KILND_TEMPLATE_BUILDS_MAX 4
#define KILND_TEMPLATE_NAME_MAX 64

struct kilnd {
	struct kilnd_config cfg;
	struct sandbox_registry reg;
	pthread_mutex_t metrics_mu;
	struct kiln_metrics metrics;
	/* Log lines of connections answered without a request read, one a
	 * second per error code (a refused flood); under metrics_mu. */
	struct log_limit unread_log[API_CODE_COUNT];
	int64_t started_mono_ms;
	atomic_bool shutting_down;
	struct kilnd_pools *pools;   /* NULL: no --pool; its fields under reg.mu */
	struct zygote_pool *zygotes; /* parked kiln-vmms (supervision/zygote.h); NULL: none */
	struct egress_proxies *egress_proxies; /* supervision/egress_proxy.h */
	/* Names of the template builds under way ("": a free slot; reg.mu;
	 * images/templates.h). */
	char tmpl_building[KILND_TEMPLATE_BUILDS_MAX][KILND_TEMPLATE_NAME_MAX + 1];
	struct kilnd_secrets *secrets; /* the named secrets (registry/secrets.h), own lock */
};

/* Milliseconds on CLOCK_REALTIME (the monotonic clock is lib/base/mono.h). */
int64_t wall_ms(void);

#endif
