/* kiln-vmm's command line into struct vmm_opts; see setup.h. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/mono.h"
#include "lib/base/num_parse.h"
#include "vmm/control/exit_status.h"
#include "vmm/kiln-vmm/setup.h"

const char vmm_usage[] =
	"usage: kiln-vmm --kernel PATH [options]\n"
	"Boot one Linux guest on KVM in the foreground.\n"
	"\n"
	"  --kernel PATH        bzImage, or uncompressed vmlinux with a PVH entry note\n"
	"  --initrd PATH        initramfs (cpio, plain or gzip)\n"
	"  --cmdline STRING     extra kernel parameters, appended to kiln's defaults\n"
	"  --mem MIB            guest RAM in MiB (default 128, at least 32)\n"
	"  --cpus N             vCPUs (default 1)\n"
	"  --hugepages          back guest RAM with 2 MiB hugetlb pages\n"
	"  --console            serial console on stdin/stdout (off by default: every\n"
	"                       byte is a VM exit)\n"
	"  --boot-timeline[=json]  print the boot timeline on stderr when the VM ends\n"
	"  --disk PATH[,ro][,overlay=OVL[,size=MIB]][,serial=ID]\n"
	"                       virtio-blk on a raw image; with overlay=, PATH is a\n"
	"                       read-only base and writes go to the copy-on-write\n"
	"                       overlay OVL (created if missing, size= MiB large:\n"
	"                       default the base's size). Without --initrd the\n"
	"                       first disk is the root filesystem (root=/dev/vda);\n"
	"                       kiln-init grows its ext4 to the disk's size\n"
	"  --disk-image PATH [--disk-overlay OVL] [--disk-size MIB]\n"
	"                       the same disk with one value per option: PATH and\n"
	"                       OVL are taken whole (',' and ':' are theirs)\n"
	"  --share DIR:TAG[:ro] virtio-fs: host directory DIR as mount tag TAG\n"
	"  --share fd=N:TAG[:ro] the same for the directory open as descriptor N\n"
	"                       (>= 3; no path is resolved; ./fd=N for a directory\n"
	"                       named so)\n"
	"  --share-remote SOCK:TAG[:ro]\n"
	"                       virtio-fs served by a client: each guest request\n"
	"                       that needs it is one JSON line on the Unix socket\n"
	"                       SOCK (docs/architecture.md, \"Client-served shares\";\n"
	"                       kilnd relays it to an API client); :ro answers\n"
	"                       writes EROFS without asking; with --jail, SOCK is\n"
	"                       the path inside the jail. Not in snapshots\n"
	"  --share-remote-timeout MS\n"
	"                       how long a reply may take before the guest gets EIO\n"
	"                       (100..60000, default 5000; every remote share)\n"
	"  --vsock PATH[,cid=N] virtio-vsock; host side is the Unix socket PATH\n"
	"                       (CONNECT <port> protocol), guest CID N (default 3)\n"
	"  --vsock-path PATH    the same with PATH taken whole (guest CID 3)\n"
	"  --net tap=NAME[,mac=MAC][,ip=ADDR/PREFIX]\n"
	"                       virtio-net on TAP device NAME (created if missing;\n"
	"                       needs CAP_NET_ADMIN); MAC random unless given; ip=:\n"
	"                       the guest's address, the only source --firewall lets out\n"
	"  --net passt[,mac=MAC][,ip=ADDR/PREFIX][,gw=ADDR][,dns=ADDR][,resolver=ADDR]\n"
	"                       virtio-net through a passt child (rootless NAT, IPv4):\n"
	"                       the guest is ip= (default 10.0.2.15/24) behind gw=\n"
	"                       (10.0.2.2); DNS sent to dns= (10.0.2.3) goes to\n"
	"                       resolver= (root only), else the first nameserver of\n"
	"                       the host's /etc/resolv.conf\n"
	"  --firewall FILE      packet filter on every --net device: default deny,\n"
	"                       the JSON rule set in FILE (docs/architecture.md,\n"
	"                       \"Packet filter\"); changed at runtime with the control\n"
	"                       socket's firewall-set. Without it every frame passes\n"
	"                       (passt not held by cgroup programs, i.e. not root:\n"
	"                       all but the host's own addresses and link-local)\n"
	"  --egress-proxy PATH  the egress proxy's Unix socket (kiln-egress): guest TCP\n"
	"                       to the ports the --firewall rules' \"http\" lists is\n"
	"                       relayed there, opened by a PROXY v2 header; needed by\n"
	"                       rules with \"http\" (with --jail: a socket inside DIR)\n"
	"  --firewall-log       denied and cut flows on stderr (at most 10 a second)\n"
	"  --net-rate tx_bytes=N,tx_packets=N,rx_bytes=N,rx_packets=N\n"
	"                       the filter's rate limits per second (0 or absent:\n"
	"                       unlimited); over the limit frames wait, never drop\n"
	"  --no-rng             no virtio-rng device (on by default: entropy from getrandom)\n"
	"  --control PATH       control socket (mode 0600): pause, resume, status,\n"
	"                       snapshot [--compress] [--base NAME] DIR,\n"
	"                       firewall-set JSON, firewall-get (docs/kiln-vmm.md)\n"
	"  --restore DIR        resume the snapshot in DIR instead of booting (then\n"
	"                       --kernel is not needed); --mem, --cpus and the device\n"
	"                       options must be the ones it was taken with; opened\n"
	"                       before --jail, read in the jail\n"
	"  --jail DIR --uid U --gid G\n"
	"                       once set up, confine kiln-vmm (root needed to start):\n"
	"                       pid 1 of new pid, mount, ipc, uts, cgroup and network\n"
	"                       namespaces (a TAP device too); its root an empty\n"
	"                       read-only tmpfs holding only DIR (an existing\n"
	"                       directory, at its own path: put the --vsock and\n"
	"                       --control sockets and snapshot directories there);\n"
	"                       uid U and gid G (not 0), no capabilities, no_new_privs\n"
	"                       (docs/security.md)\n"
	"  --seccomp=kill|log|off  seccomp filter per thread role (default kill: a\n"
	"                       syscall outside the thread's allowlist kills kiln-vmm;\n"
	"                       log: only logged by the kernel, to find a missing rule)\n"
	"  --verbose            log guest accesses to ports/MMIO with no device\n"
	"  --park FD            the only option then: wait, named kiln-zygote, for the\n"
	"                       real command line as one message on the SOCK_SEQPACKET\n"
	"                       socket FD (NUL-ended arguments, argv[0] first; its\n"
	"                       descriptor i becomes number 100 + i), then run it\n"
	"                       (kilnd's zygotes; vmm/kiln-vmm/park.h)\n"
	"  --version, --help\n"
	"\n"
	"Exit status: 0 guest reset/poweroff, 1 setup error, 2 usage, 3 reset before\n"
	"init started (kernel panic?), 4 guest triple fault, 5 KVM failure.\n";

static int bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "kiln-vmm: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see kiln-vmm --help)\n");
	return VMM_EXIT_USAGE;
}

/* A device option's result: a bad one is a usage error with its message
 * (devspec's for the syntax, libkiln's for the values). */
static int device(int r, const struct err *e)
{
	return r < 0 ? bad_usage("%s", e->msg) : VMM_EXIT_OK;
}

/* --seccomp=kill|log|off (docs/security.md, "seccomp filters per thread"). */
static int set_seccomp(kiln_vm_config *cfg, const char *mode)
{
	static const struct {
		const char *name;
		enum kiln_seccomp_mode mode;
	} modes[] = { { "kill", KILN_SECCOMP_KILL },
		      { "log", KILN_SECCOMP_LOG },
		      { "off", KILN_SECCOMP_OFF } };

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (strcmp(mode, modes[i].name) == 0) {
			kiln_vm_config_set_seccomp(cfg, modes[i].mode);
			return VMM_EXIT_OK;
		}
	return bad_usage("--seccomp=%s: expected kill, log or off", mode);
}

int vmm_opts_parse(int argc, char **argv, struct vmm_opts *o)
{
	enum {
		OPT_KERNEL = 256,
		OPT_INITRD,
		OPT_CMDLINE,
		OPT_MEM,
		OPT_CPUS,
		OPT_HUGE,
		OPT_CONSOLE,
		OPT_TIMELINE,
		OPT_VERBOSE,
		OPT_VERSION,
		OPT_HELP,
		OPT_NO_RNG,
		OPT_NET,
		OPT_DISK,
		OPT_SHARE,
		OPT_VSOCK,
		OPT_CONTROL,
		OPT_RESTORE,
		OPT_FIREWALL,
		OPT_EGRESS_PROXY,
		OPT_FIREWALL_LOG,
		OPT_NET_RATE,
		OPT_JAIL,
		OPT_UID,
		OPT_GID,
		OPT_SECCOMP,
		OPT_DISK_IMAGE,
		OPT_DISK_OVERLAY,
		OPT_DISK_SIZE,
		OPT_VSOCK_PATH,
		OPT_SHARE_REMOTE,
		OPT_SHARE_REMOTE_TIMEOUT
	};
	static const struct option opts[] = {
		{ "kernel", required_argument, 0, OPT_KERNEL },
		{ "initrd", required_argument, 0, OPT_INITRD },
		{ "cmdline", required_argument, 0, OPT_CMDLINE },
		{ "mem", required_argument, 0, OPT_MEM },
		{ "cpus", required_argument, 0, OPT_CPUS },
		{ "hugepages", no_argument, 0, OPT_HUGE },
		{ "console", no_argument, 0, OPT_CONSOLE },
		{ "boot-timeline", optional_argument, 0, OPT_TIMELINE },
		{ "verbose", no_argument, 0, OPT_VERBOSE },
		{ "no-rng", no_argument, 0, OPT_NO_RNG },
		{ "net", required_argument, 0, OPT_NET },
		{ "disk", required_argument, 0, OPT_DISK },
		{ "share", required_argument, 0, OPT_SHARE },
		{ "share-remote", required_argument, 0, OPT_SHARE_REMOTE },
		{ "share-remote-timeout", required_argument, 0, OPT_SHARE_REMOTE_TIMEOUT },
		{ "vsock", required_argument, 0, OPT_VSOCK },
		{ "vsock-path", required_argument, 0, OPT_VSOCK_PATH },
		{ "disk-image", required_argument, 0, OPT_DISK_IMAGE },
		{ "disk-overlay", required_argument, 0, OPT_DISK_OVERLAY },
		{ "disk-size", required_argument, 0, OPT_DISK_SIZE },
		{ "control", required_argument, 0, OPT_CONTROL },
		{ "restore", required_argument, 0, OPT_RESTORE },
		{ "firewall", required_argument, 0, OPT_FIREWALL },
		{ "egress-proxy", required_argument, 0, OPT_EGRESS_PROXY },
		{ "firewall-log", no_argument, 0, OPT_FIREWALL_LOG },
		{ "net-rate", required_argument, 0, OPT_NET_RATE },
		{ "jail", required_argument, 0, OPT_JAIL },
		{ "uid", required_argument, 0, OPT_UID },
		{ "gid", required_argument, 0, OPT_GID },
		{ "seccomp", required_argument, 0, OPT_SECCOMP },
		{ "version", no_argument, 0, OPT_VERSION },
		{ "help", no_argument, 0, OPT_HELP },
		{ 0, 0, 0, 0 },
	};
	struct err e = { { 0 } };
	kiln_vm_config *cfg;
	uint64_t n;
	int status, opt, fd;

	memset(o, 0, sizeof(*o));
	o->log_flags = KILN_LOG_DEVICE; /* a broken device or backend is always said */
	o->cfg = cfg = kiln_vm_config_new();
	if (!cfg) {
		fprintf(stderr, "kiln-vmm: out of memory\n");
		return VMM_EXIT_SETUP;
	}
	kiln_vm_config_set_time_origin(cfg, mono_ns());
	/* getopt's state is the caller's: 0 (glibc) starts a second parse
	 * afresh, its internal state included. */
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case OPT_KERNEL:
			o->kernel = optarg;
			kiln_vm_config_set_kernel(cfg, optarg);
			break;
		case OPT_INITRD:
			kiln_vm_config_set_initrd(cfg, optarg);
			break;
		case OPT_CMDLINE:
			kiln_vm_config_set_cmdline(cfg, optarg);
			break;
		case OPT_MEM:
			if (num_parse_u64(optarg, 10, 0, 1ULL << 30, &n))
				return bad_usage("--mem '%s': not a size in MiB", optarg);
			kiln_vm_config_set_memory(cfg, n);
			break;
		case OPT_CPUS:
			if (num_parse_u64(optarg, 10, 0, 4096, &n))
				return bad_usage("--cpus '%s': not a number of vCPUs", optarg);
			kiln_vm_config_set_cpus(cfg, (unsigned)n);
			break;
		case OPT_HUGE:
			kiln_vm_config_set_hugepages(cfg, 1);
			break;
		case OPT_CONSOLE:
			o->console = 1;
			break;
		case OPT_TIMELINE:
			o->timeline = 1;
			if (optarg && strcmp(optarg, "json") == 0)
				o->json = 1;
			else if (optarg && strcmp(optarg, "text") != 0)
				return bad_usage("--boot-timeline='%s': expected text or json",
						 optarg);
			break;
		case OPT_VERBOSE:
			o->log_flags |= KILN_LOG_UNHANDLED;
			break;
		case OPT_NO_RNG:
			kiln_vm_config_set_rng(cfg, 0);
			break;
		case OPT_NET:
			o->nets++;
			if ((status = device(devspec_net(cfg, optarg, &e), &e)) != VMM_EXIT_OK)
				return status;
			break;
		case OPT_DISK:
			if ((status = device(devspec_disk(cfg, &o->dev, optarg, &e), &e)) !=
			    VMM_EXIT_OK)
				return status;
			break;
		case OPT_DISK_IMAGE:
			if ((status = device(devspec_disk_image(cfg, &o->dev, optarg, &e), &e)) !=
			    VMM_EXIT_OK)
				return status;
			break;
		case OPT_DISK_OVERLAY:
			if ((status = device(devspec_disk_overlay(&o->dev, optarg, &e), &e)) !=
			    VMM_EXIT_OK)
				return status;
			break;
		case OPT_DISK_SIZE:
			if ((status = device(devspec_disk_size(&o->dev, optarg, &e), &e)) !=
			    VMM_EXIT_OK)
				return status;
			break;
		case OPT_SHARE:
			if ((status = device(devspec_share(cfg, optarg, &fd, &e), &e)) !=
			    VMM_EXIT_OK)
				return status;
			/* fd=N: a descriptor the jail step must not close. */
			if (fd >= 0 && o->nkeep < VMM_KEEP_MAX)
				o->keep[o->nkeep++] = fd;
			break;
		case OPT_SHARE_REMOTE:
			if ((status = device(devspec_share_remote(cfg, optarg, &e), &e)) !=
			    VMM_EXIT_OK)
				return status;
			break;
		case OPT_SHARE_REMOTE_TIMEOUT:
			if (num_parse_u64(optarg, 10, 0, UINT32_MAX, &n) ||
			    kiln_vm_config_set_remote_share_timeout(cfg, (unsigned)n) < 0)
				return bad_usage(
					"--share-remote-timeout '%s': expected milliseconds from 100 to 60000",
					optarg);
			break;
		case OPT_VSOCK:
			if ((status = device(devspec_vsock(cfg, &o->dev, optarg, &e), &e)) !=
			    VMM_EXIT_OK)
				return status;
			break;
		case OPT_VSOCK_PATH:
			if ((status = device(devspec_vsock_path(cfg, &o->dev, optarg, &e), &e)) !=
			    VMM_EXIT_OK)
				return status;
			break;
		case OPT_CONTROL:
			o->control_path = optarg;
			break;
		case OPT_RESTORE:
			o->restore_dir = optarg;
			break;
		case OPT_FIREWALL:
			if (o->firewall_path)
				return bad_usage("--firewall: given twice%s", "");
			o->firewall_path = optarg;
			break;
		case OPT_EGRESS_PROXY:
			if (o->egress_proxy)
				return bad_usage("--egress-proxy: given twice%s", "");
			if (kiln_vm_config_set_egress_proxy(cfg, optarg) < 0)
				return bad_usage("--%s", kiln_vm_config_errmsg(cfg));
			o->egress_proxy = optarg;
			break;
		case OPT_FIREWALL_LOG:
			o->log_flags |= KILN_LOG_FIREWALL;
			break;
		case OPT_NET_RATE:
			o->net_rate = 1;
			if ((status = device(devspec_net_rate(cfg, &o->dev, optarg, &e), &e)) !=
			    VMM_EXIT_OK)
				return status;
			break;
		case OPT_JAIL:
			o->jail_dir = optarg;
			break;
		case OPT_UID:
		case OPT_GID:
			if (num_parse_u64(optarg, 10, 1, UINT32_MAX - 1,
					  opt == OPT_UID ? &o->uid : &o->gid))
				return bad_usage(opt == OPT_UID ? "--uid '%s': not a uid above 0"
								: "--gid '%s': not a gid above 0",
						 optarg);
			break;
		case OPT_SECCOMP:
			if ((status = set_seccomp(cfg, optarg)) != VMM_EXIT_OK)
				return status;
			break;
		case OPT_VERSION:
			printf("kiln-vmm %s\n", kiln_version());
			return VMM_OPTS_DONE;
		case OPT_HELP:
			fputs(vmm_usage, stdout);
			return VMM_OPTS_DONE;
		default:
			return bad_usage("unknown or incomplete option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return bad_usage("unexpected argument '%s'", argv[optind]);
	if ((status = device(devspec_finish(cfg, &o->dev, &e), &e)) != VMM_EXIT_OK)
		return status;
	if (!o->kernel && !o->restore_dir)
		return bad_usage("%sno kernel given: pass --kernel PATH (or --restore DIR)", "");
	if ((o->firewall_path || (o->log_flags & KILN_LOG_FIREWALL) || o->net_rate) && !o->nets)
		return bad_usage("%s--firewall, --firewall-log and --net-rate need a --net device",
				 "");
	if (o->egress_proxy && !o->firewall_path)
		return bad_usage(
			"%s--egress-proxy is the packet filter's: add --firewall FILE (its \"http\" rules say what goes to the proxy)",
			"");
	if (((o->log_flags & KILN_LOG_FIREWALL) || o->net_rate) && !o->firewall_path)
		return bad_usage(
			"%s--firewall-log and --net-rate are the packet filter's: add --firewall FILE",
			"");
	if (!o->jail_dir != !o->uid || !o->jail_dir != !o->gid)
		return bad_usage("%s--jail, --uid and --gid go together: give all three", "");
	return VMM_EXIT_OK;
}

void vmm_opts_free(struct vmm_opts *o)
{
	kiln_vm_config_free(o->cfg);
	o->cfg = NULL;
}
