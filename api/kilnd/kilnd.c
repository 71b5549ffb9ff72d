/*
 * kilnd: kiln's daemon. Serves the HTTP/JSON API of docs/api.md on a Unix
 * socket and runs each sandbox as one kiln-vmm child.
 *
 * main() is the only place that prints usage, decides exit statuses and
 * handles signals: SIGTERM/SIGINT stop every sandbox and exit 0. Exit
 * status: 0 after a clean shutdown, 1 a setup error (one line saying what
 * and what to do), 2 usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <libgen.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>

#include "api/kilnd/supervision/cgroup.h"
#include "api/kilnd/registry/checkpoint.h"
#include "api/kilnd/endpoints/service.h"
#include "api/kilnd/preview/preview_server.h"
#include "api/kilnd/http/http.h"
#include "api/kilnd/keeper/keeper.h"
#include "api/kilnd/supervision/egress_proxy.h"
#include "api/kilnd/supervision/egress_proxy_plan.h"
#include "api/kilnd/supervision/handover.h"
#include "api/kilnd/core/kilnd.h"
#include "api/kilnd/core/listen.h"
#include "api/kilnd/core/state_lock.h"
#include "api/kilnd/images/image_import.h"
#include "api/kilnd/registry/sandbox.h"
#include "api/kilnd/registry/secrets.h"
#include "api/kilnd/net/sandbox_egress.h"
#include "api/kilnd/supervision/zygote.h"
#include "lib/base/num_parse.h"
#include "lib/base/version.h"

/* How long a handed-over kilnd waits for its preview answers in flight. */
#define PREVIEW_DRAIN_MS 2000

enum { EXIT_OK = 0, EXIT_SETUP = 1, EXIT_USAGE = 2 };
/* parse_args: --help or --version answered, nothing more to do. */
#define ARGS_DONE (-1)
/* run: a clean exit, but a thread still uses the daemon context. */
#define RUN_BUSY (-2)

static const char usage[] =
	"usage: kilnd [options]\n"
	"kiln's daemon: the HTTP/JSON API (docs/api.md) on a Unix socket.\n"
	"\n"
	"  --socket PATH         API socket (default /run/kiln/kiln.sock), mode 0660\n"
	"  --socket-group GROUP  group of the socket file (name or number)\n"
	"  --allow-uid UID       also allow this uid (repeatable; root and kilnd's\n"
	"                        own uid always may connect)\n"
	"  --allow-gid GID       also allow peers with this primary gid (repeatable)\n"
	"  --state-dir DIR       images/, sandboxes/ (default /var/lib/kiln); one kilnd\n"
	"                        per directory (kilnd.lock)\n"
	"  --kernel PATH         guest kernel (default: kernel/vmlinux next to kilnd)\n"
	"  --vmm PATH            kiln-vmm (default: kiln-vmm next to kilnd)\n"
	"  --image NAME=PATH     register a root image (repeatable); images are also\n"
	"                        found as <state-dir>/images/NAME.ext4\n"
	"  --share-root DIR      non-root clients may share directories beneath DIR\n"
	"                        (repeatable)\n"
	"  --boot-timeout SEC    wait this long for a guest agent (default 60)\n"
	"  --stop-timeout SEC    wait this long for a clean guest shutdown (default 10)\n"
	"  --max-body BYTES      largest JSON request body (default 2097152)\n"
	"  --max-upload BYTES    largest file upload, 0 for none (default 4294967296)\n"
	"  --max-image BYTES     largest image archive POST /v1/images takes\n"
	"                        (default 17179869184; also the cap of its content)\n"
	"  --importer PATH       kiln-image-import (default: next to kilnd, or\n"
	"                        ../lib/kiln/ from it, looked for at each import)\n"
	"  --kiln-init PATH      the guest init imported images get (default: next to\n"
	"                        kilnd, or ../lib/kiln/ from it, looked for at each import)\n"
	"  --import-id ID        uid (= gid) the importer runs as when kilnd is root\n"
	"                        (default: the id after the --jail-ids range)\n"
	"  --egress-proxy PATH   kiln-egress, the HTTP(S) egress proxy of sandboxes\n"
	"                        with http rules (default: next to kilnd, or\n"
	"                        ../lib/kiln/ from it)\n"
	"  --egress-upstream-ca FILE\n"
	"                        PEM certificates the egress proxies verify upstream\n"
	"                        servers against, instead of the host's trust store\n"
	"                        (an internal CA; the tests' own)\n"
	"  --egress-ids FIRST    the first uid (= gid) of the egress proxies, one per\n"
	"                        sandbox, as many as --jail-ids (default: the id after\n"
	"                        the import id's default, FIRST + COUNT + 1 of --jail-ids)\n"
	"  --client-timeout SEC  a client sends each request head, and each part of a\n"
	"                        body, and reads each part of an answer within this\n"
	"                        (default 30)\n"
	"  --max-connections-per-uid N\n"
	"                        API connections one uid other than root and kilnd's\n"
	"                        own may hold at once (default 64, of 256; 0: no cap)\n"
	"  --max-sandboxes N     sandboxes at once (default 64)\n"
	"  --max-cpus N          largest cpus of a sandbox (default: online CPUs, <= 64)\n"
	"  --max-memory MIB      largest memory_mib of a sandbox (default 16384)\n"
	"  --max-disk MIB        largest disk_mib of a sandbox (default 65536; at most 1048576)\n"
	"  --idle-timeout SEC    hibernate a running sandbox after this long without a\n"
	"                        request (its idle_timeout_s default; 0: never; 300)\n"
	"  --max-checkpoints N   checkpoints per sandbox (default 8; 0: none)\n"
	"  --pool IMAGE=N[,cpus=C][,memory_mib=M][,network=none|passt]\n"
	"                        keep N sandboxes of IMAGE restored and paused, so a\n"
	"                        create that fits takes one instead of booting\n"
	"                        (repeatable, one per image; docs/api.md, Warm pools)\n"
	"  --dns-resolver ADDR   the IPv4 nameserver that passt sandboxes' DNS goes to\n"
	"                        (root only; default: the first of /etc/resolv.conf)\n"
	"  --jail-ids FIRST:COUNT  uids (= gids) for sandboxes' kiln-vmm processes,\n"
	"                        one per sandbox (default 2000000000:65536; never 0),\n"
	"                        given round the range: a deleted sandbox's id comes\n"
	"                        back last\n"
	"  --cgroup-parent DIR   cgroup v2 directory for the sandboxes' cgroups\n"
	"                        (default /sys/fs/cgroup/kiln; docs/api.md)\n"
	"  --no-jail             run kiln-vmm unconfined, with kilnd's own privileges,\n"
	"                        and without cgroups where they are unusable (needed\n"
	"                        when kilnd cannot jail: not root); said in\n"
	"                        GET /v1/health (docs/security.md)\n"
	"  --keeper-grace SEC    a sandbox's VM outlives a kilnd that dies (crash,\n"
	"                        kill -9) this long waiting for a new one, then it is\n"
	"                        stopped (default 600; 0: never; docs/api.md)\n"
	"  --zygotes N           keep N kiln-vmms started and parked, each under its\n"
	"                        keeper, so a sandbox's start, wake or fork claims one\n"
	"                        instead of starting two programs (default 1; 0: off;\n"
	"                        at most 64; docs/architecture.md, The fork path)\n"
	"  --upgrade             take over from the kilnd running on --state-dir: its\n"
	"                        API socket, then its sandboxes, without a gap\n"
	"                        (docs/api.md)\n"
	"  --preview-listen ADDR:PORT\n"
	"                        serve sandboxes' preview URLs (plain HTTP, no TLS)\n"
	"                        on this IPv4 address (default: off; keep it on\n"
	"                        127.0.0.1 unless a TLS proxy fronts it; docs/api.md,\n"
	"                        Preview URLs)\n"
	"  --preview-domain DOMAIN\n"
	"                        the host-based preview URLs' domain:\n"
	"                        http://PORT-ID.DOMAIN:PORT/ (default localhost)\n"
	"  --preview-head-timeout SEC\n"
	"                        a preview client sends its request head within this\n"
	"                        (default 10)\n"
	"  --preview-max-per-client N\n"
	"                        preview connections at once from one client address\n"
	"                        (1..128, default 32; 429 beyond)\n"
	"  --preview-max-per-sandbox N\n"
	"                        preview connections at once to one sandbox\n"
	"                        (1..128, default 32; 503 beyond)\n"
	"  --quiet               no request log lines\n"
	"  --version, --help\n";

int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int bad_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int bad_usage(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "kilnd: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see kilnd --help)\n");
	return EXIT_USAGE;
}

static int setup_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int setup_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "kilnd: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return EXIT_SETUP;
}

static int parse_gid(const char *s, gid_t *gid)
{
	uint64_t n;
	struct group *g;

	if (num_parse_u64(s, 10, 0, UINT32_MAX - 1, &n) == 0) {
		*gid = (gid_t)n;
		return 0;
	}
	g = getgrnam(s);
	if (!g)
		return -1;
	*gid = g->gr_gid;
	return 0;
}

/* The directory of the running kilnd binary: defaults live next to it. */
static void self_dir(char *out, size_t cap)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0) {
		snprintf(out, cap, ".");
		return;
	}
	exe[n] = '\0';
	snprintf(out, cap, "%s", dirname(exe));
}

static int mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(buf, mode) < 0 && errno != EEXIST ? -1 : 0;
}

/*
 * Make a path kilnd hands to kiln-vmm absolute (sandboxes boot long after
 * start-up, from another working directory) and check kiln-vmm can take
 * it. Symlinks are kept, not resolved: a kernel or image path that is a
 * symlink to a cache keeps following it.
 */
static int absolute(const char *what, const char *path, char *out)
{
	char cwd[PATH_MAX];

	if (path[0] == '/') {
		snprintf(out, PATH_MAX, "%s", path);
	} else {
		if (!getcwd(cwd, sizeof(cwd)))
			return setup_error("%s '%s': cannot tell the working directory: %s", what,
					   path, strerror(errno));
		int n = snprintf(out, PATH_MAX, "%s/%s", strcmp(cwd, "/") ? cwd : "", path);

		if (n < 0 || n >= PATH_MAX)
			return setup_error("%s '%s': path too long", what, path);
	}
	if (access(out, F_OK) < 0)
		return setup_error("%s '%s': %s", what, path, strerror(errno));
	if (!host_path_valid(out))
		return setup_error(
			"%s '%s': a path with a control character cannot be given to kiln-vmm",
			what, out);
	return 0;
}

/* stdin/stdout/stderr must be open: a pipe or log created later must not
 * land on 0-2 (kiln-vmm's children get their stdio by dup2). */
static void ensure_stdio(void)
{
	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
			int n = open("/dev/null", O_RDWR);

			if (n >= 0 && n != fd) {
				dup2(n, fd);
				close(n);
			}
		}
	}
}

/* "FIRST:COUNT" of uids: 0 or -1. */
static int parse_id_range(const char *s, uint32_t *first, uint32_t *count)
{
	const char *colon = strchr(s, ':');
	uint64_t f, c;

	if (!colon || num_parse_u64_n(s, (size_t)(colon - s), 10, 1, UINT32_MAX - 1, &f) ||
	    num_parse_u64(colon + 1, 10, 1, UINT32_MAX, &c) || f + c - 1 >= UINT32_MAX)
		return -1;
	*first = (uint32_t)f;
	*count = (uint32_t)c;
	return 0;
}

/* --preview-listen "A.B.C.D:PORT": 0 or -1. */
static int parse_preview_listen(const char *s, struct kilnd_config *cfg)
{
	const char *colon = strrchr(s, ':');
	struct in_addr a;
	uint64_t port;

	if (!colon || (size_t)(colon - s) >= sizeof(cfg->preview_addr) ||
	    num_parse_u64(colon + 1, 10, 1, 65535, &port))
		return -1;
	memcpy(cfg->preview_addr, s, (size_t)(colon - s));
	cfg->preview_addr[colon - s] = '\0';
	if (inet_pton(AF_INET, cfg->preview_addr, &a) != 1)
		return -1;
	cfg->preview_port = (uint16_t)port;
	return 0;
}

static int parse_args(int argc, char **argv, struct kilnd_config *cfg)
{
	char why[256];
	enum {
		OPT_SOCKET = 256,
		OPT_SOCKET_GROUP,
		OPT_ALLOW_UID,
		OPT_ALLOW_GID,
		OPT_STATE,
		OPT_KERNEL,
		OPT_VMM,
		OPT_IMAGE,
		OPT_SHARE_ROOT,
		OPT_BOOT_TIMEOUT,
		OPT_STOP_TIMEOUT,
		OPT_MAX_BODY,
		OPT_MAX_UPLOAD,
		OPT_MAX_SANDBOXES,
		OPT_MAX_UID_CONNECTIONS,
		OPT_MAX_CPUS,
		OPT_MAX_MEMORY,
		OPT_MAX_DISK,
		OPT_QUIET,
		OPT_VERSION,
		OPT_HELP,
		OPT_IDLE_TIMEOUT,
		OPT_MAX_CHECKPOINTS,
		OPT_DNS_RESOLVER,
		OPT_JAIL_IDS,
		OPT_CGROUP_PARENT,
		OPT_NO_JAIL,
		OPT_CLIENT_TIMEOUT,
		OPT_KEEPER_GRACE,
		OPT_ZYGOTES,
		OPT_UPGRADE,
		OPT_POOL,
		OPT_PREVIEW_LISTEN,
		OPT_PREVIEW_DOMAIN,
		OPT_PREVIEW_HEAD_TIMEOUT,
		OPT_PREVIEW_MAX_PER_CLIENT,
		OPT_PREVIEW_MAX_PER_SANDBOX,
		OPT_MAX_IMAGE,
		OPT_IMPORTER,
		OPT_KILN_INIT,
		OPT_IMPORT_ID,
		OPT_EGRESS_PROXY,
		OPT_EGRESS_IDS,
		OPT_EGRESS_UPSTREAM_CA
	};
	static const struct option opts[] = {
		{ "socket", required_argument, 0, OPT_SOCKET },
		{ "socket-group", required_argument, 0, OPT_SOCKET_GROUP },
		{ "allow-uid", required_argument, 0, OPT_ALLOW_UID },
		{ "allow-gid", required_argument, 0, OPT_ALLOW_GID },
		{ "state-dir", required_argument, 0, OPT_STATE },
		{ "kernel", required_argument, 0, OPT_KERNEL },
		{ "vmm", required_argument, 0, OPT_VMM },
		{ "image", required_argument, 0, OPT_IMAGE },
		{ "share-root", required_argument, 0, OPT_SHARE_ROOT },
		{ "boot-timeout", required_argument, 0, OPT_BOOT_TIMEOUT },
		{ "stop-timeout", required_argument, 0, OPT_STOP_TIMEOUT },
		{ "max-body", required_argument, 0, OPT_MAX_BODY },
		{ "max-upload", required_argument, 0, OPT_MAX_UPLOAD },
		{ "max-image", required_argument, 0, OPT_MAX_IMAGE },
		{ "importer", required_argument, 0, OPT_IMPORTER },
		{ "kiln-init", required_argument, 0, OPT_KILN_INIT },
		{ "import-id", required_argument, 0, OPT_IMPORT_ID },
		{ "egress-proxy", required_argument, 0, OPT_EGRESS_PROXY },
		{ "egress-ids", required_argument, 0, OPT_EGRESS_IDS },
		{ "egress-upstream-ca", required_argument, 0, OPT_EGRESS_UPSTREAM_CA },
		{ "client-timeout", required_argument, 0, OPT_CLIENT_TIMEOUT },
		{ "max-sandboxes", required_argument, 0, OPT_MAX_SANDBOXES },
		{ "max-connections-per-uid", required_argument, 0, OPT_MAX_UID_CONNECTIONS },
		{ "max-cpus", required_argument, 0, OPT_MAX_CPUS },
		{ "max-memory", required_argument, 0, OPT_MAX_MEMORY },
		{ "max-disk", required_argument, 0, OPT_MAX_DISK },
		{ "idle-timeout", required_argument, 0, OPT_IDLE_TIMEOUT },
		{ "max-checkpoints", required_argument, 0, OPT_MAX_CHECKPOINTS },
		{ "dns-resolver", required_argument, 0, OPT_DNS_RESOLVER },
		{ "cgroup-parent", required_argument, 0, OPT_CGROUP_PARENT },
		{ "keeper-grace", required_argument, 0, OPT_KEEPER_GRACE },
		{ "zygotes", required_argument, 0, OPT_ZYGOTES },
		{ "upgrade", no_argument, 0, OPT_UPGRADE },
		{ "pool", required_argument, 0, OPT_POOL },
		{ "preview-listen", required_argument, 0, OPT_PREVIEW_LISTEN },
		{ "preview-domain", required_argument, 0, OPT_PREVIEW_DOMAIN },
		{ "preview-head-timeout", required_argument, 0, OPT_PREVIEW_HEAD_TIMEOUT },
		{ "preview-max-per-client", required_argument, 0, OPT_PREVIEW_MAX_PER_CLIENT },
		{ "preview-max-per-sandbox", required_argument, 0, OPT_PREVIEW_MAX_PER_SANDBOX },
		{ "quiet", no_argument, 0, OPT_QUIET },
		{ "jail-ids", required_argument, 0, OPT_JAIL_IDS },
		{ "no-jail", no_argument, 0, OPT_NO_JAIL },
		{ "version", no_argument, 0, OPT_VERSION },
		{ "help", no_argument, 0, OPT_HELP },
		{ 0, 0, 0, 0 },
	};
	char here[PATH_MAX - 64]; /* room for the file names appended */
	uint64_t n;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int opt;

	self_dir(here, sizeof(here));
	snprintf(cfg->socket_path, sizeof(cfg->socket_path), "/run/kiln/kiln.sock");
	snprintf(cfg->state_dir, sizeof(cfg->state_dir), "/var/lib/kiln");
	snprintf(cfg->kernel, sizeof(cfg->kernel), "%s/kernel/vmlinux", here);
	snprintf(cfg->vmm, sizeof(cfg->vmm), "%s/kiln-vmm", here);
	cfg->boot_timeout_ms = 60000;
	cfg->stop_timeout_ms = 10000;
	cfg->max_body = 2u << 20;
	cfg->max_upload = 4ull << 30;
	cfg->max_image = 16ull << 30;
	/* the importer and kiln-init: found at each import (image_import_helper) */
	snprintf(cfg->self_dir, sizeof(cfg->self_dir), "%s", here);
	cfg->client_timeout_s = 30;
	cfg->keeper_grace_s = KEEPER_GRACE_DEFAULT_S;
	cfg->zygotes = 1;
	cfg->max_sandboxes = 64;
	cfg->uid_connections = HTTP_UID_CONNECTIONS_DEFAULT;
	cfg->limits.max_cpus = cpus < 1 ? 1 : cpus > 64 ? 64 : (unsigned)cpus;
	cfg->limits.max_memory_mib = 16384;
	cfg->limits.max_disk_mib = SPEC_DISK_DEFAULT_MAX_MIB;
	cfg->limits.idle_timeout_default_s = 300;
	cfg->max_checkpoints = CHECKPOINTS_DEFAULT;
	cfg->jail_id_first = 2000000000u;
	cfg->jail_id_count = 65536;
	snprintf(cfg->preview_domain, sizeof(cfg->preview_domain), "localhost");
	cfg->preview_head_timeout_s = PREVIEW_HEAD_TIMEOUT_DEFAULT_S;
	cfg->preview_max_per_client = PREVIEW_PER_CLIENT_DEFAULT;
	cfg->preview_max_per_sandbox = PREVIEW_PER_SANDBOX_DEFAULT;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case OPT_SOCKET:
			if (strlen(optarg) >= sizeof(cfg->socket_path))
				return bad_usage("--socket '%s': longer than a Unix socket path may be",
						 optarg);
			snprintf(cfg->socket_path, sizeof(cfg->socket_path), "%s", optarg);
			break;
		case OPT_SOCKET_GROUP:
			if (parse_gid(optarg, &cfg->socket_gid))
				return bad_usage("--socket-group '%s': no such group", optarg);
			cfg->has_socket_gid = true;
			break;
		case OPT_ALLOW_UID:
			if (cfg->nallow_uid == KILND_MAX_ALLOW ||
			    num_parse_u64(optarg, 10, 0, UINT32_MAX - 1, &n))
				return bad_usage("--allow-uid '%s': not a uid (at most %d of them)",
						 optarg, KILND_MAX_ALLOW);
			cfg->allow_uid[cfg->nallow_uid++] = (uid_t)n;
			break;
		case OPT_ALLOW_GID:
			if (cfg->nallow_gid == KILND_MAX_ALLOW ||
			    parse_gid(optarg, &cfg->allow_gid[cfg->nallow_gid]))
				return bad_usage("--allow-gid '%s': not a group (at most %d of them)",
						 optarg, KILND_MAX_ALLOW);
			cfg->nallow_gid++;
			break;
		case OPT_STATE:
			snprintf(cfg->state_dir, sizeof(cfg->state_dir), "%s", optarg);
			break;
		case OPT_KERNEL:
			snprintf(cfg->kernel, sizeof(cfg->kernel), "%s", optarg);
			break;
		case OPT_VMM:
			snprintf(cfg->vmm, sizeof(cfg->vmm), "%s", optarg);
			break;
		case OPT_IMAGE: {
			const char *eq = strchr(optarg, '=');
			struct kilnd_image *im = &cfg->images[cfg->nimages];

			if (cfg->nimages == KILND_MAX_IMAGES)
				return bad_usage("--image: at most %d images", KILND_MAX_IMAGES);
			if (!eq || (size_t)(eq - optarg) > IMAGE_NAME_MAX)
				return bad_usage("--image '%s': expected NAME=PATH", optarg);
			memcpy(im->name, optarg, (size_t)(eq - optarg));
			im->name[eq - optarg] = '\0';
			if (!image_name_valid(im->name))
				return bad_usage(
					"--image '%s': the name must be 1..64 of [A-Za-z0-9._-], first a letter or digit",
					optarg);
			for (size_t i = 0; i < cfg->nimages; i++)
				if (strcmp(cfg->images[i].name, im->name) == 0)
					return bad_usage("--image: '%s' given twice", im->name);
			snprintf(im->path, sizeof(im->path), "%s", eq + 1);
			cfg->nimages++;
			break;
		}
		case OPT_SHARE_ROOT:
			if (cfg->nshare_roots == KILND_MAX_SHARE_ROOTS)
				return bad_usage("--share-root: at most %d", KILND_MAX_SHARE_ROOTS);
			snprintf(cfg->share_roots[cfg->nshare_roots++], PATH_MAX, "%s", optarg);
			break;
		case OPT_BOOT_TIMEOUT:
		case OPT_STOP_TIMEOUT:
			if (num_parse_u64(optarg, 10, 0, 86400, &n) || n == 0)
				return bad_usage("%s '%s': a number of seconds from 1 to 86400",
						 argv[optind - 1], optarg);
			*(opt == OPT_BOOT_TIMEOUT ? &cfg->boot_timeout_ms
						  : &cfg->stop_timeout_ms) = (int)n * 1000;
			break;
		case OPT_MAX_BODY:
			if (num_parse_u64(optarg, 10, 0, 1u << 30, &n) || n < 1024)
				return bad_usage("--max-body '%s': bytes, from 1024 to 1073741824",
						 optarg);
			cfg->max_body = n;
			break;
		case OPT_MAX_UPLOAD:
			if (num_parse_u64(optarg, 10, 0, UINT64_MAX, &n))
				return bad_usage("--max-upload '%s': a number of bytes", optarg);
			cfg->max_upload = n;
			break;
		case OPT_MAX_IMAGE:
			if (num_parse_u64(optarg, 10, 1u << 20, UINT64_MAX, &n))
				return bad_usage("--max-image '%s': a number of bytes, at least 1048576",
						 optarg);
			cfg->max_image = n;
			break;
		case OPT_IMPORTER:
		case OPT_KILN_INIT:
			if (optarg[0] != '/' || strlen(optarg) >= PATH_MAX)
				return bad_usage("%s '%s': an absolute path", argv[optind - 1],
						 optarg);
			snprintf(opt == OPT_IMPORTER ? cfg->importer : cfg->kiln_init, PATH_MAX,
				 "%s", optarg);
			break;
		case OPT_EGRESS_PROXY:
			if (optarg[0] != '/' || strlen(optarg) >= PATH_MAX)
				return bad_usage("--egress-proxy '%s': an absolute path", optarg);
			snprintf(cfg->egress_prog, PATH_MAX, "%s", optarg);
			break;
		case OPT_EGRESS_UPSTREAM_CA:
			if (optarg[0] != '/' || strlen(optarg) >= PATH_MAX)
				return bad_usage("--egress-upstream-ca '%s': an absolute path",
						 optarg);
			if (access(optarg, R_OK) < 0)
				return bad_usage("--egress-upstream-ca '%s': %s", optarg,
						 strerror(errno));
			snprintf(cfg->egress_upstream_ca, PATH_MAX, "%s", optarg);
			break;
		case OPT_EGRESS_IDS:
			if (num_parse_u64(optarg, 10, 1, UINT32_MAX - 1, &n))
				return bad_usage("--egress-ids '%s': a uid from 1 to 4294967294",
						 optarg);
			cfg->egress_id_first = (uint32_t)n;
			break;
		case OPT_IMPORT_ID:
			if (num_parse_u64(optarg, 10, 1, UINT32_MAX - 1, &n))
				return bad_usage("--import-id '%s': a uid from 1 to 4294967294",
						 optarg);
			cfg->import_id = (uint32_t)n;
			break;
		case OPT_CLIENT_TIMEOUT:
			if (num_parse_u64(optarg, 10, 1, 3600, &n))
				return bad_usage(
					"--client-timeout '%s': a number of seconds from 1 to 3600",
					optarg);
			cfg->client_timeout_s = (unsigned)n;
			break;
		case OPT_MAX_UID_CONNECTIONS:
			if (num_parse_u64(optarg, 10, 0, HTTP_CONNECTION_LIMIT, &n))
				return bad_usage("--max-connections-per-uid '%s': from 0 (no cap) to %d",
						 optarg, HTTP_CONNECTION_LIMIT);
			cfg->uid_connections = (unsigned)n;
			break;
		case OPT_MAX_SANDBOXES:
			if (num_parse_u64(optarg, 10, 0, 100000, &n) || n == 0)
				return bad_usage("--max-sandboxes '%s': from 1 to 100000", optarg);
			cfg->max_sandboxes = (unsigned)n;
			break;
		case OPT_MAX_CPUS:
			/* kiln-vmm's limit. */
			if (num_parse_u64(optarg, 10, 0, 64, &n) || n == 0)
				return bad_usage("--max-cpus '%s': from 1 to 64", optarg);
			cfg->limits.max_cpus = (unsigned)n;
			break;
		case OPT_MAX_MEMORY:
			if (num_parse_u64(optarg, 10, 0, 1u << 20, &n) || n < SPEC_MEM_MIN_MIB)
				return bad_usage("--max-memory '%s': MiB, from %u to 1048576",
						 optarg, SPEC_MEM_MIN_MIB);
			cfg->limits.max_memory_mib = (unsigned)n;
			break;
		case OPT_MAX_DISK:
			if (num_parse_u64(optarg, 10, 0, SPEC_DISK_MAX_MIB, &n) || n == 0)
				return bad_usage("--max-disk '%s': MiB, from 1 to %u", optarg,
						 SPEC_DISK_MAX_MIB);
			cfg->limits.max_disk_mib = (unsigned)n;
			break;
		case OPT_IDLE_TIMEOUT:
			if (num_parse_u64(optarg, 10, 0, SPEC_TIMEOUT_MAX_S, &n))
				return bad_usage("--idle-timeout '%s': seconds, from 0 (never) to %u",
						 optarg, SPEC_TIMEOUT_MAX_S);
			cfg->limits.idle_timeout_default_s = (uint32_t)n;
			break;
		case OPT_POOL: {
			struct err why;

			if (cfg->npools == KILND_MAX_POOLS)
				return bad_usage("--pool: at most %d pools", KILND_MAX_POOLS);
			if (pool_cfg_parse(optarg, &cfg->pools[cfg->npools], &why))
				return bad_usage("--pool '%s': %s", optarg, why.msg);
			for (size_t i = 0; i < cfg->npools; i++)
				if (strcmp(cfg->pools[i].image, cfg->pools[cfg->npools].image) == 0)
					return bad_usage(
						"--pool: image '%s' given twice (one pool per image)",
						cfg->pools[i].image);
			cfg->npools++;
			break;
		}
		case OPT_MAX_CHECKPOINTS:
			if (num_parse_u64(optarg, 10, 0, CHECKPOINTS_LIMIT_MAX, &n))
				return bad_usage("--max-checkpoints '%s': from 0 to %d", optarg,
						 CHECKPOINTS_LIMIT_MAX);
			cfg->max_checkpoints = (unsigned)n;
			break;
		case OPT_DNS_RESOLVER: {
			struct in_addr a;

			if (strlen(optarg) >= sizeof(cfg->dns_resolver) ||
			    inet_pton(AF_INET, optarg, &a) != 1)
				return bad_usage("--dns-resolver '%s': an IPv4 address, like 192.0.2.53",
						 optarg);
			/* kiln-vmm bind-mounts passt's resolv.conf in a mount namespace. */
			if (geteuid() != 0)
				return bad_usage(
					"--dns-resolver needs kilnd to run as root (passt gets its own resolv.conf in a mount namespace): run kilnd as root or leave --dns-resolver out");
			snprintf(cfg->dns_resolver, sizeof(cfg->dns_resolver), "%s", optarg);
			break;
		}
		case OPT_CGROUP_PARENT:
			if (optarg[0] != '/' ||
			    strlen(optarg) >= sizeof(cfg->cgroup_parent) - SANDBOX_ID_LEN - 32)
				return bad_usage(
					"--cgroup-parent '%s': an absolute path (of a cgroup v2 directory), shorter than %zu bytes",
					optarg, sizeof(cfg->cgroup_parent) - SANDBOX_ID_LEN - 32);
			snprintf(cfg->cgroup_parent, sizeof(cfg->cgroup_parent), "%s", optarg);
			break;
		case OPT_KEEPER_GRACE:
			if (num_parse_u64(optarg, 10, 0, 86400 * 365, &n))
				return bad_usage(
					"--keeper-grace '%s': seconds, from 0 (never) to 31536000",
					optarg);
			cfg->keeper_grace_s = (unsigned)n;
			break;
		case OPT_ZYGOTES:
			if (num_parse_u64(optarg, 10, 0, ZYGOTES_MAX, &n))
				return bad_usage("--zygotes '%s': a count from 0 (off) to %d",
						 optarg, ZYGOTES_MAX);
			cfg->zygotes = (unsigned)n;
			break;
		case OPT_UPGRADE:
			cfg->upgrade = true;
			break;
		case OPT_PREVIEW_LISTEN:
			if (parse_preview_listen(optarg, cfg))
				return bad_usage(
					"--preview-listen '%s': expected IPV4:PORT, like 127.0.0.1:8443 (PORT 1..65535)",
					optarg);
			break;
		case OPT_PREVIEW_DOMAIN:
			if (!preview_domain_valid(optarg))
				return bad_usage(
					"--preview-domain '%s': a lowercase DNS name (labels of a-z, 0-9 and '-'), like preview.example.com",
					optarg);
			snprintf(cfg->preview_domain, sizeof(cfg->preview_domain), "%s", optarg);
			break;
		case OPT_PREVIEW_HEAD_TIMEOUT:
			if (num_parse_u64(optarg, 10, 1, 3600, &n))
				return bad_usage(
					"--preview-head-timeout '%s': a number of seconds from 1 to 3600",
					optarg);
			cfg->preview_head_timeout_s = (unsigned)n;
			break;
		case OPT_PREVIEW_MAX_PER_CLIENT:
		case OPT_PREVIEW_MAX_PER_SANDBOX:
			if (num_parse_u64(optarg, 10, 1, PREVIEW_CONNS_MAX, &n))
				return bad_usage("--%s '%s': a number of connections from 1 to %d",
						 opt == OPT_PREVIEW_MAX_PER_CLIENT
							 ? "preview-max-per-client"
							 : "preview-max-per-sandbox",
						 optarg, PREVIEW_CONNS_MAX);
			*(opt == OPT_PREVIEW_MAX_PER_CLIENT
				  ? &cfg->preview_max_per_client
				  : &cfg->preview_max_per_sandbox) = (unsigned)n;
			break;
		case OPT_QUIET:
			cfg->quiet = true;
			break;
		case OPT_JAIL_IDS:
			if (parse_id_range(optarg, &cfg->jail_id_first, &cfg->jail_id_count))
				return bad_usage(
					"--jail-ids '%s': FIRST:COUNT with FIRST >= 1, COUNT >= 1 and FIRST + COUNT - 1 below 4294967295",
					optarg);
			break;
		case OPT_NO_JAIL:
			cfg->no_jail = true;
			break;
		case OPT_VERSION:
			printf("kilnd %s\n", KILN_VERSION);
			return ARGS_DONE;
		case OPT_HELP:
			fputs(usage, stdout);
			return ARGS_DONE;
		default:
			return bad_usage("unknown or incomplete option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return bad_usage("unexpected argument '%s'", argv[optind]);
	if (!cfg->import_id) {
		/* the first id past the jail range: no sandbox's VMM has it */
		if (cfg->jail_id_first + (uint64_t)cfg->jail_id_count >= UINT32_MAX)
			return bad_usage(
				"--jail-ids reaches the last uid: give --import-id ID outside it");
		cfg->import_id = cfg->jail_id_first + cfg->jail_id_count;
	}
	if (cfg->import_id >= cfg->jail_id_first &&
	    cfg->import_id - cfg->jail_id_first < cfg->jail_id_count)
		return bad_usage(
			"--import-id %u is inside the --jail-ids range: the importer would share a sandbox's uid",
			cfg->import_id);
	/* the egress proxies' range: after the jail range and its default import id */
	if (!cfg->egress_id_first) {
		if (cfg->jail_id_first + (uint64_t)cfg->jail_id_count + 1 >= UINT32_MAX)
			return bad_usage(
				"--jail-ids reaches the last uid: give --egress-ids FIRST outside it");
		cfg->egress_id_first = cfg->jail_id_first + cfg->jail_id_count + 1;
	}
	if (egress_ids_check(cfg->egress_id_first, cfg->jail_id_first, cfg->jail_id_count,
			     cfg->import_id, why, sizeof(why)))
		return bad_usage("%s", why);
	return EXIT_OK;
}

/* Each VMM gets a cgroup of its own; without one it runs only with --no-jail. */
static int check_cgroups(struct kilnd_config *cfg)
{
	struct err e;

	cfg->cgroups = cgroup_setup(cfg->cgroup_parent, sizeof(cfg->cgroup_parent), &e) == 0;
	if (cfg->cgroups) {
		sandbox_egress_probe(cfg);
		return EXIT_OK;
	}
	/* A kilnd that cannot jail starts to say so (health) and runs nothing. */
	if (!cfg->no_jail && !cfg->jail_unavailable[0])
		return setup_error("%s; or pass --no-jail to run sandboxes without cgroup limits",
				   e.msg);
	if (cfg->no_jail)
		kilnd_log("%s; running sandboxes without cgroup limits (--no-jail)", e.msg);
	snprintf(cfg->cgroup_off, sizeof(cfg->cgroup_off), "%s", e.msg);
	cfg->cgroup_parent[0] = '\0';
	return EXIT_OK;
}

/*
 * --upgrade: the running kilnd's listening socket, then its state
 * directory's lock once it has finished its requests and exited.
 */
static int take_over(struct kilnd_config *cfg)
{
	struct err e;
	int64_t deadline;
	pid_t old;

	if (handover_request(cfg->state_dir, &cfg->listen_fd, &cfg->preview_fd, &old, &e))
		return setup_error("%s", e.msg);
	/* Handed over but not asked for (no --preview-listen now): closed, so
	 * the port is free once the old kilnd exits. */
	if (cfg->preview_fd >= 0 && !cfg->preview_port) {
		close(cfg->preview_fd);
		cfg->preview_fd = -1;
	}
	kilnd_log("--upgrade: kilnd pid %d handed its API socket%s over; waiting for it to finish its requests and exit",
		  (int)old, cfg->preview_fd >= 0 ? " and preview listener" : "");
	/* Its requests get --client-timeout to finish, then it exits. */
	deadline = mono_ms() + (int64_t)cfg->client_timeout_s * 1000 + HANDOVER_ANSWER_MS;
	while (state_lock_take(cfg->state_dir, cfg->socket_path, &cfg->state_lock_fd, &e)) {
		if (mono_ms() > deadline)
			return setup_error("--upgrade: %s (it did not exit after handing over)",
					   e.msg);
		usleep(50000);
	}
	return EXIT_OK;
}

/* Whether the state directory keeps its files in RAM (docs/api.md,
 * "limits"): what guests write and snapshots are then cgroup memory. */
static void state_dir_fs(struct kilnd_config *cfg)
{
	struct statfs sf;

	cfg->state_in_ram = statfs(cfg->state_dir, &sf) == 0 &&
		(sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC);
	snprintf(cfg->state_fs, sizeof(cfg->state_fs), "%s",
		 !cfg->state_in_ram                 ? "disk"
			 : sf.f_type == TMPFS_MAGIC ? "tmpfs"
						    : "ramfs");
}

/* Everything that can be checked before serving, so bad setups fail at once. */
static int check_config(struct kilnd_config *cfg)
{
	char real[PATH_MAX], sub[PATH_MAX + 16];
	struct stat st;
	struct err e;
	int r;

	if (mkdir_p(cfg->state_dir, 0755) < 0)
		return setup_error("--state-dir '%s': cannot create it: %s", cfg->state_dir,
				   strerror(errno));
	if (!realpath(cfg->state_dir, real))
		return setup_error("--state-dir '%s': %s", cfg->state_dir, strerror(errno));
	if (!host_path_valid(real))
		return setup_error(
			"--state-dir '%s': a path with a control character cannot be given to kiln-vmm",
			real);
	snprintf(cfg->state_dir, sizeof(cfg->state_dir), "%s", real);
	state_dir_fs(cfg);
	/* Before anything of the state directory (or the cgroups) is read or
	 * changed: a second kilnd here would break the first's sandboxes. */
	cfg->listen_fd = -1;
	cfg->preview_fd = -1;
	if (cfg->upgrade && (r = take_over(cfg)))
		return r;
	if (!cfg->upgrade &&
	    state_lock_take(cfg->state_dir, cfg->socket_path, &cfg->state_lock_fd, &e))
		return setup_error("%s", e.msg);
	if (!cfg->no_jail && geteuid() != 0) {
		snprintf(cfg->jail_unavailable, sizeof(cfg->jail_unavailable),
			 "kilnd runs as uid %u, not root, so it cannot give each kiln-vmm its own uid and namespaces (jails inside a user namespace are not implemented): run kilnd as root, or pass --no-jail to run sandboxes unconfined",
			 (unsigned)geteuid());
		kilnd_log("no sandbox can start: %s", cfg->jail_unavailable);
	} else if (cfg->no_jail) {
		kilnd_log("--no-jail: every kiln-vmm runs with kilnd's own privileges, unconfined");
	}
	/* The longest socket kiln-vmm binds for a sandbox: its vsock socket
	 * plus the "_<port>" of guest-initiated connections. */
	if (strlen(cfg->state_dir) + strlen("/sandboxes/") + SANDBOX_ID_LEN +
		    strlen("/vm/vsock.sock_4294967295") >=
	    KILND_SOCKET_MAX)
		return setup_error(
			"--state-dir '%s': too long; sandbox sockets beneath it would not fit a Unix socket address (%d bytes); pick a shorter one",
			cfg->state_dir, KILND_SOCKET_MAX - 1);
	snprintf(sub, sizeof(sub), "%s/images", cfg->state_dir);
	if (mkdir(sub, 0755) < 0 && errno != EEXIST)
		return setup_error("cannot create %s: %s", sub, strerror(errno));
	snprintf(sub, sizeof(sub), "%s/sandboxes", cfg->state_dir);
	if (mkdir(sub, 0700) < 0 && errno != EEXIST)
		return setup_error("cannot create %s: %s", sub, strerror(errno));
	if ((r = absolute("--kernel", cfg->kernel, real)))
		return r;
	if (stat(real, &st) < 0 || !S_ISREG(st.st_mode))
		return setup_error("--kernel '%s': not a regular file", cfg->kernel);
	snprintf(cfg->kernel, sizeof(cfg->kernel), "%s", real);
	if ((r = absolute("--vmm", cfg->vmm, real)))
		return r;
	if (access(real, X_OK) < 0)
		return setup_error(
			"--vmm '%s': not executable: %s (build it with make, or pass --vmm PATH)",
			cfg->vmm, strerror(errno));
	snprintf(cfg->vmm, sizeof(cfg->vmm), "%s", real);
	for (size_t i = 0; i < cfg->nimages; i++) {
		char what[IMAGE_NAME_MAX + 16];

		snprintf(what, sizeof(what), "--image %s", cfg->images[i].name);
		if ((r = absolute(what, cfg->images[i].path, real)))
			return r;
		if (stat(real, &st) < 0 || !S_ISREG(st.st_mode))
			return setup_error("%s: '%s' is not a regular file", what,
					   cfg->images[i].path);
		snprintf(cfg->images[i].path, sizeof(cfg->images[i].path), "%s", real);
	}
	for (size_t i = 0; i < cfg->nshare_roots; i++) {
		if (!realpath(cfg->share_roots[i], real) || stat(real, &st) < 0 ||
		    !S_ISDIR(st.st_mode))
			return setup_error("--share-root '%s': not a directory",
					   cfg->share_roots[i]);
		snprintf(cfg->share_roots[i], PATH_MAX, "%s", real);
	}
	return check_cgroups(cfg);
}

/*
 * SIGUSR2 from `kilnd --upgrade`: pass it the listening sockets (API and
 * previews), stop accepting API connections (new ones wait in the socket's
 * backlog for the new kilnd), let the requests in flight finish
 * (--client-timeout at most) while previews are still served, then stop
 * accepting those too and exit with every sandbox left running for it to
 * reattach. 0: handed over (the caller exits); -1: nobody asked, or the
 * new kilnd did not take the sockets: serving goes on.
 */
static int hand_over(struct kilnd *d, struct http_server *mhd, int fd,
		     struct preview_server *previews)
{
	struct err e;

	if (handover_send(d->cfg.state_dir, fd, preview_server_listen_fd(previews), &e)) {
		kilnd_log("%s; still serving", e.msg);
		return -1;
	}
	kilnd_log(
		"handing over to the new kilnd: no new connections; finishing the requests in flight");
	/* The new kilnd removes the pools' sandboxes and fills its own, and
	 * parks its own kiln-vmms. */
	sandbox_pools_stop(d, false);
	/* Requests in flight may still look for one: stopped, not freed. */
	zygote_pool_stop(d->zygotes);
	http_quiesce(mhd);
	if (!http_drain(mhd, (int)d->cfg.client_timeout_s * 1000))
		kilnd_log("requests still in flight after %u s (--client-timeout) are cut; their clients retry",
			  d->cfg.client_timeout_s);
	/* Previews were served during the drain (the new kilnd serves none
	 * before this one exits); from here they wait in the listener's
	 * backlog for it. Relays in flight end when this kilnd exits. */
	preview_server_stop_accepting(previews);
	/* A preview connection accepted just before would otherwise be closed
	 * unanswered by the exit (kilnd_upgrade_hands_over_without_a_gap saw
	 * one in 510); relays still open after this are cut. */
	preview_server_drain(previews, PREVIEW_DRAIN_MS);
	/* Not http_stop(): it would wait for streams that outlive the drain.
	 * Exiting closes them; the sandboxes and their keepers stay. */
	kilnd_log("handed over; exiting with every sandbox left running");
	return 0;
}

/* Serve until SIGTERM/SIGINT/SIGHUP, then stop every sandbox. */
static int run(struct kilnd *d)
{
	/* The server's view of the daemon: it lives as long as the server. */
	struct api_service api;
	struct err e;
	struct http_server *mhd;
	struct preview_server *previews = NULL;
	struct sigaction ign = { .sa_handler = SIG_IGN };
	sigset_t stop;
	int fd, sig;

	/* Writes to a gone client or a finished agent transfer return EPIPE
	 * instead of killing the daemon. */
	sigaction(SIGPIPE, &ign, NULL);
	/* Shutdown signals are taken by sigtimedwait below; blocked before
	 * any thread exists, so every thread inherits the mask. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGHUP);
	sigaddset(&stop, SIGUSR2); /* kilnd --upgrade asks for the socket */
	pthread_sigmask(SIG_BLOCK, &stop, NULL);

	d->started_mono_ms = mono_ms();
	atomic_init(&d->shutting_down, false);
	pthread_mutex_init(&d->metrics_mu, NULL);
	metrics_init(&d->metrics);
	/* before any import can start: what a killed kilnd's import left */
	image_import_sweep(d);
	/* Before any sandbox: a start (its egress proxy) reads them. */
	if (secrets_init(d, &e))
		return setup_error("%s", e.msg);
	/* Before the sandboxes load: a reattached one gets its egress proxy back. */
	if (egress_proxies_new(d, &e)) {
		secrets_fini(d);
		return setup_error("%s", e.msg);
	}
	if (sandboxes_init(d, &e)) {
		egress_proxies_free(d);
		secrets_fini(d);
		return setup_error("%s", e.msg);
	}
	if (sandbox_pools_init(d, &e)) {
		secrets_fini(d);
		sandboxes_free(d);
		return setup_error("%s", e.msg);
	}
	/* Before the pools fill: their first sandboxes claim zygotes too. */
	if (zygote_pool_new(d->cfg.zygotes, KILND_SELF_EXE, d->cfg.vmm, d->cfg.keeper_grace_s,
			    !d->cfg.no_jail, &d->zygotes) ||
	    zygote_pool_start(d->zygotes)) {
		zygote_pool_free(d->zygotes);
		sandbox_pools_free(d);
		sandboxes_free(d);
		return setup_error("zygotes: out of memory or threads");
	}
	fd = d->cfg.listen_fd;
	if (fd < 0 &&
	    listen_unix(d->cfg.socket_path, d->cfg.has_socket_gid, d->cfg.socket_gid, &fd, &e)) {
		zygote_pool_free(d->zygotes);
		sandbox_pools_free(d);
		sandboxes_free(d);
		return setup_error("%s", e.msg);
	}
	api_service_init(&api, d);
	mhd = http_start(&api.svc, fd, &e);
	if (mhd && d->cfg.preview_port && preview_server_start(d, &previews, &e)) {
		http_quiesce(mhd);
		http_stop(mhd);
		mhd = NULL;
	}
	if (!mhd) {
		unlink(d->cfg.socket_path);
		close(fd);
		zygote_pool_free(d->zygotes);
		sandbox_pools_free(d);
		sandboxes_free(d);
		return setup_error("%s", e.msg);
	}
	kilnd_log("listening on %s (state %s, kernel %s, vmm %s)", d->cfg.socket_path,
		  d->cfg.state_dir, d->cfg.kernel, d->cfg.vmm);
	if (previews)
		kilnd_log("serving preview URLs on http://%s:%u/ (http://PORT-ID.%s:%u/ and /preview/ID/PORT/)",
			  d->cfg.preview_addr, (unsigned)d->cfg.preview_port, d->cfg.preview_domain,
			  (unsigned)d->cfg.preview_port);
	sandbox_pools_start(d);

	for (;;) {
		struct timespec tick = { .tv_sec = 1 };

		sig = sigtimedwait(&stop, NULL, &tick);
		if (sig == SIGUSR2) {
			/* Threads still hold d (monitors, streams): it stays allocated. */
			if (hand_over(d, mhd, fd, previews) == 0)
				return RUN_BUSY;
			continue;
		}
		if (sig > 0)
			break;
		sandboxes_tick(d);
	}
	kilnd_log("%s: stopping every sandbox, then exiting", strsignal(sig));
	atomic_store(&d->shutting_down, true);
	/* No new connections; requests in flight see shutting_down, and the
	 * ones waiting on a guest end when its VM stops. */
	sandbox_pools_stop(d, true);
	zygote_pool_stop(d->zygotes);
	http_quiesce(mhd);
	preview_server_quiesce(previews);
	unlink(d->cfg.socket_path);
	sandboxes_shutdown(d);
	preview_server_free(previews);
	sandbox_pools_free(d);
	http_stop(mhd);
	close(fd);
	kilnd_log("stopped");
	/* A thread that still holds a sandbox keeps d alive until exit. */
	if (!sandboxes_free(d))
		return RUN_BUSY;
	egress_proxies_free(d);
	zygote_pool_free(d->zygotes);
	secrets_fini(d);
	return EXIT_OK;
}

/*
 * glibc's malloc keeps what a thread freed in that thread's arena, and
 * raises its mmap threshold after each large free: after request bodies
 * of a few MiB on many threads, kilnd's RSS kept rising (2.9 to 36.8 MB
 * over nine rounds of one load) with nothing leaked. Two arenas, and
 * blocks of 256 KiB and more always mmap'd (so given back when freed),
 * bound it (the soak, tests/soak, reports RSS at start and end).
 */
static void malloc_bound(void)
{
	mallopt(M_ARENA_MAX, 2);
	mallopt(M_MMAP_THRESHOLD, 256 * 1024);
}

int main(int argc, char **argv)
{
	struct kilnd *d;
	int r;

	malloc_bound();
	/* Not an option: the keeper mode supervise.c runs as /proc/self/exe. */
	if (argc > 1 && strcmp(argv[1], "--keeper") == 0)
		return keeper_main(argc - 1, argv + 1);
	ensure_stdio();
	/* Large (paths, images): on the heap, handed to everything by pointer. */
	d = calloc(1, sizeof(*d));
	if (!d)
		return setup_error("out of memory");
	r = parse_args(argc, argv, &d->cfg);
	if (!r)
		r = check_config(&d->cfg);
	if (!r)
		r = run(d);
	if (r == RUN_BUSY)
		return EXIT_OK; /* d stays: see run() */
	free(d);
	return r == ARGS_DONE ? EXIT_OK : r;
}
