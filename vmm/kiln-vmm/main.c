/*
 * kiln-vmm: boot one Linux VM in the foreground.
 *
 * Exit status: 0 the guest reset or powered off (including a triple fault
 * after kiln-init announced its shutdown); 1 setup failure; 2 usage;
 * 3 the guest reset before its init started (a kernel panic, most often);
 * 4 guest triple fault; 5 KVM failure or an exit kiln cannot handle.
 */
#include <errno.h>
#include <signal.h>
#include <execinfo.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "vmm/core/vm.h"

#include "vmm/control/control.h"
#include "lib/netrules/net_rules.h"
#include "lib/base/version.h"

enum { EXIT_OK = 0, EXIT_SETUP = 1, EXIT_USAGE = 2, EXIT_EARLY_RESET = 3, EXIT_TRIPLE = 4, EXIT_KVM = 5 };

static const char usage[] =
	"usage: kiln-vmm --kernel PATH [options]\n"
	"Boot one Linux guest on KVM in the foreground.\n"
	"\n"
	"  --kernel PATH        bzImage, or uncompressed vmlinux with a PVH entry note\n"
	"  --initrd PATH        initramfs (cpio, optionally compressed)\n"
	"  --cmdline STRING     extra kernel parameters, appended to kiln's defaults\n"
	"  --mem MIB            guest RAM in MiB (default 128, at least 32)\n"
	"  --cpus N             vCPUs (default 1)\n"
	"  --hugepages          back guest RAM with 2 MiB hugetlb pages\n"
	"  --console            serial console on stdin/stdout (off by default: every\n"
	"                       byte is a VM exit)\n"
	"  --boot-timeline[=json]  print the boot timeline on stderr when the VM ends\n"
	"  --disk PATH[,ro][,overlay=OVL][,serial=ID]\n"
	"                       virtio-blk on a raw image; with overlay=, PATH is a\n"
	"                       read-only base and writes go to the copy-on-write\n"
	"                       overlay OVL (created if missing). Without --initrd the\n"
	"                       first disk is the root filesystem (root=/dev/vda)\n"
	"  --share DIR:TAG[:ro] virtio-fs: host directory DIR as mount tag TAG\n"
	"  --vsock PATH[,cid=N] virtio-vsock; host side is the Unix socket PATH\n"
	"                       (CONNECT <port> protocol), guest CID N (default 3)\n"
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
	"  --firewall-log       denied and cut flows on stderr (at most 10 a second)\n"
	"  --net-rate tx_bytes=N,tx_packets=N,rx_bytes=N,rx_packets=N\n"
	"                       the filter's rate limits per second (0 or absent:\n"
	"                       unlimited); over the limit frames wait, never drop\n"
	"  --no-rng             no virtio-rng device (on by default: entropy from getrandom)\n"
	"  --control PATH       control socket (mode 0600): pause, resume, status,\n"
	"                       snapshot [--compress] DIR, firewall-set JSON,\n"
	"                       firewall-get (docs/architecture.md)\n"
	"  --restore DIR        resume the snapshot in DIR instead of booting (then\n"
	"                       --kernel is not needed); --mem, --cpus and the device\n"
	"                       options must be the ones it was taken with\n"
	"  --verbose            log guest accesses to ports/MMIO with no device\n"
	"  --version, --help\n"
	"\n"
	"Exit status: 0 guest reset/poweroff, 1 setup error, 2 usage, 3 reset before\n"
	"init started (kernel panic?), 4 guest triple fault, 5 KVM failure.\n";

static int parse_u64(const char *s, unsigned long long *out)
{
	char *end;

	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return (errno || *end) ? -1 : 0;
}

/* virtio-fs holds one host fd per guest inode it knows: allow as many as
 * the hard limit does. */
static void raise_fd_limit(void)
{
	struct rlimit r;

	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

/*
 * A kiln-vmm bug must still leave a trace in the log kilnd keeps: the
 * signal and a backtrace on stderr (async-signal-safe calls only), then
 * the default action, so the exit status still says which signal.
 */
static void crash_report(int sig)
{
	static const char head[] = "kiln-vmm: crashed (a kiln-vmm bug; please report it), backtrace:\n";
	void *frames[48];
	int n;

	if (write(STDERR_FILENO, head, sizeof(head) - 1) < 0) {
		/* nothing more to do */
	}
	n = backtrace(frames, 48);
	backtrace_symbols_fd(frames, n, STDERR_FILENO);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void install_crash_report(void)
{
	void *warm[1];

	backtrace(warm, 1); /* loads libgcc now, not inside the handler */
	signal(SIGSEGV, crash_report);
	signal(SIGBUS, crash_report);
	signal(SIGILL, crash_report);
	signal(SIGFPE, crash_report);
	signal(SIGABRT, crash_report);
}

/* vCPUs are kicked out of KVM_RUN with SIGUSR1 (vm.h): kiln-vmm's choice. */
static void kick_noop(int sig)
{
	(void)sig;
}

static int bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "kiln-vmm: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see kiln-vmm --help)\n");
	return EXIT_USAGE;
}

/*
 * Read and check the --firewall rule set, so a bad one is a usage error
 * with net_rules' own message (the field it names). EXIT_OK or EXIT_USAGE.
 */
static int load_firewall(const char *path, char **text, size_t *len)
{
	struct net_rules_err re = { 0 };
	struct net_rules *rules = NULL;
	struct stat st;
	char *buf;
	size_t have = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr, "kiln-vmm: --firewall %s: %s\n", path, strerror(errno));
		return EXIT_USAGE;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > NET_RULES_TEXT_MAX) {
		fprintf(stderr, "kiln-vmm: --firewall %s: not a regular file of at most %d bytes\n", path,
			NET_RULES_TEXT_MAX);
		close(fd);
		return EXIT_USAGE;
	}
	buf = malloc((size_t)st.st_size + 1);
	while (buf && have < (size_t)st.st_size) {
		ssize_t k = read(fd, buf + have, (size_t)st.st_size - have);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		have += (size_t)k;
	}
	close(fd);
	if (!buf || have != (size_t)st.st_size) {
		fprintf(stderr, "kiln-vmm: --firewall %s: cannot read it\n", path);
		free(buf);
		return EXIT_USAGE;
	}
	buf[have] = '\0';
	if (net_rules_parse_text(buf, have, &rules, &re) < 0) {
		fprintf(stderr, "kiln-vmm: --firewall %s: %s\n", path, re.msg);
		free(buf);
		return EXIT_USAGE;
	}
	net_rules_free(rules);
	*text = buf;
	*len = have;
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	enum { OPT_KERNEL = 256, OPT_INITRD, OPT_CMDLINE, OPT_MEM, OPT_CPUS, OPT_HUGE, OPT_CONSOLE,
	       OPT_TIMELINE, OPT_VERBOSE, OPT_VERSION, OPT_HELP, OPT_NO_RNG, OPT_NET, OPT_DISK, OPT_SHARE, OPT_VSOCK,
	       OPT_CONTROL, OPT_RESTORE, OPT_FIREWALL, OPT_FIREWALL_LOG, OPT_NET_RATE };
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
		{ "vsock", required_argument, 0, OPT_VSOCK },
		{ "control", required_argument, 0, OPT_CONTROL },
		{ "restore", required_argument, 0, OPT_RESTORE },
		{ "firewall", required_argument, 0, OPT_FIREWALL },
		{ "firewall-log", no_argument, 0, OPT_FIREWALL_LOG },
		{ "net-rate", required_argument, 0, OPT_NET_RATE },
		{ "version", no_argument, 0, OPT_VERSION },
		{ "help", no_argument, 0, OPT_HELP },
		{ 0, 0, 0, 0 },
	};
	struct vm_config cfg = {
		.mem_mib = 128, .cpus = 1, .console_out_fd = -1, .console_in_fd = -1, .rng = 1,
	};
	struct err err = { { 0 } };
	struct vm_result res;
	struct vm *vm;
	struct control *ctl = NULL;
	const char *control_path = NULL;
	const char *firewall_path = NULL;
	char *firewall = NULL;
	int net_rate = 0;
	struct termios saved;
	unsigned long long n;
	int timeline = 0, json = 0, console = 0, raw = 0, status, opt;
	const char *reason;

	cfg.t0_ns = timeline_now_ns();
	install_crash_report();
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case OPT_KERNEL:
			cfg.kernel = optarg;
			break;
		case OPT_INITRD:
			cfg.initrd = optarg;
			break;
		case OPT_CMDLINE:
			cfg.cmdline = optarg;
			break;
		case OPT_MEM:
			if (parse_u64(optarg, &n) || n > (1ULL << 30))
				return bad_usage("--mem '%s': not a size in MiB", optarg);
			cfg.mem_mib = n;
			break;
		case OPT_CPUS:
			if (parse_u64(optarg, &n) || n > 4096)
				return bad_usage("--cpus '%s': not a number of vCPUs", optarg);
			cfg.cpus = (int)n;
			break;
		case OPT_HUGE:
			cfg.hugepages = 1;
			break;
		case OPT_CONSOLE:
			console = 1;
			break;
		case OPT_TIMELINE:
			timeline = 1;
			if (optarg && strcmp(optarg, "json") == 0)
				json = 1;
			else if (optarg && strcmp(optarg, "text") != 0)
				return bad_usage("--boot-timeline='%s': expected text or json", optarg);
			break;
		case OPT_VERBOSE:
			cfg.verbose = 1;
			break;
		case OPT_NO_RNG:
			cfg.rng = 0;
			break;
		case OPT_NET:
			if (cfg.nnet == DEVSPEC_MAX_NETS)
				return bad_usage("--net: at most %s network devices", "4");
			if (devspec_net(optarg, &cfg.net[cfg.nnet++], &err))
				return bad_usage("%s", err.msg);
			break;
		case OPT_DISK:
			if (cfg.ndisk == DEVSPEC_MAX_DISKS)
				return bad_usage("--disk: at most %s disks", "8");
			if (devspec_disk(optarg, &cfg.disk[cfg.ndisk++], &err))
				return bad_usage("%s", err.msg);
			break;
		case OPT_SHARE:
			if (cfg.nshare == DEVSPEC_MAX_SHARES)
				return bad_usage("--share: at most %s shares", "8");
			if (devspec_share(optarg, &cfg.share[cfg.nshare++], &err))
				return bad_usage("%s", err.msg);
			break;
		case OPT_VSOCK:
			if (cfg.vsock.uds)
				return bad_usage("--vsock: given twice%s", "");
			if (devspec_vsock(optarg, &cfg.vsock, &err))
				return bad_usage("%s", err.msg);
			break;
		case OPT_CONTROL:
			control_path = optarg;
			break;
		case OPT_RESTORE:
			cfg.restore_dir = optarg;
			break;
		case OPT_FIREWALL:
			if (firewall_path)
				return bad_usage("--firewall: given twice%s", "");
			firewall_path = optarg;
			break;
		case OPT_FIREWALL_LOG:
			cfg.firewall_log = 1;
			break;
		case OPT_NET_RATE:
			net_rate = 1;
			if (devspec_net_rate(optarg, &cfg.net_rate, &err))
				return bad_usage("%s", err.msg);
			break;
		case OPT_VERSION:
			printf("kiln-vmm %s\n", KILN_VERSION);
			return EXIT_OK;
		case OPT_HELP:
			fputs(usage, stdout);
			return EXIT_OK;
		default:
			return bad_usage("unknown or incomplete option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return bad_usage("unexpected argument '%s'", argv[optind]);
	if (!cfg.kernel && !cfg.restore_dir)
		return bad_usage("%sno kernel given: pass --kernel PATH (or --restore DIR)", "");
	if ((firewall_path || cfg.firewall_log || net_rate) && !cfg.nnet)
		return bad_usage("%s--firewall, --firewall-log and --net-rate need a --net device", "");
	if ((cfg.firewall_log || net_rate) && !firewall_path)
		return bad_usage("%s--firewall-log and --net-rate are the packet filter's: add --firewall FILE", "");
	if (firewall_path && (status = load_firewall(firewall_path, &firewall, &cfg.firewall_len)) != EXIT_OK)
		return status;
	cfg.firewall = firewall;
	raise_fd_limit();
	{
		struct sigaction sa = { .sa_handler = kick_noop };

		sigemptyset(&sa.sa_mask);
		sigaction(SIGUSR1, &sa, NULL);
	}
	cfg.kick_signal = SIGUSR1;
	cfg.log_fd = STDERR_FILENO;
	if (console) {
		cfg.console_out_fd = STDOUT_FILENO;
		cfg.console_in_fd = STDIN_FILENO;
	}

	if (vm_create(&cfg, &vm, &err) < 0) {
		fprintf(stderr, "kiln-vmm: %s\n", err.msg);
		return EXIT_SETUP;
	}
	if (control_path && control_start(vm, control_path, &ctl, &err) < 0) {
		fprintf(stderr, "kiln-vmm: %s\n", err.msg);
		vm_destroy(vm);
		return EXIT_SETUP;
	}
	if (console && isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0) {
		struct termios t = saved;

		/* Keys go to the guest; ISIG stays so ^C still stops kiln-vmm. */
		t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		t.c_iflag &= ~(tcflag_t)(ICRNL);
		raw = tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0;
	}
	if (vm_run(vm, &res, &err) < 0) {
		if (raw)
			tcsetattr(STDIN_FILENO, TCSANOW, &saved);
		control_stop(ctl);
		fprintf(stderr, "kiln-vmm: %s\n", err.msg);
		vm_destroy(vm);
		return EXIT_SETUP;
	}
	if (raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	control_stop(ctl);

	switch (res.exit) {
	case VM_EXIT_RESET:
		/* A restored guest's init started before the snapshot. */
		if (vm_restored(vm) || timeline_has(vm_timeline(vm), "init_started")) {
			status = EXIT_OK;
			reason = "reset";
		} else {
			status = EXIT_EARLY_RESET;
			reason = "reset_before_init";
		}
		break;
	case VM_EXIT_TRIPLE_FAULT:
		/* After kiln-init asked for the reset, a triple fault is Linux's
		 * last-resort way of resetting (or an AP dying in the reboot IPI
		 * storm): the reset the guest wanted, not a crash. */
		if (timeline_has(vm_timeline(vm), "shutdown_requested")) {
			status = EXIT_OK;
			reason = "reset";
			break;
		}
		status = EXIT_TRIPLE;
		reason = "triple_fault";
		break;
	default:
		status = EXIT_KVM;
		reason = "failure";
		break;
	}
	if (timeline)
		timeline_print(vm_timeline(vm), stderr, json, reason, status);
	if (status == EXIT_EARLY_RESET)
		fprintf(stderr, "kiln-vmm: guest reset before its init started (kernel panic? run with --console to see it)\n");
	else if (status != EXIT_OK)
		fprintf(stderr, "kiln-vmm: %s\n", res.msg);
	vm_destroy(vm);
	free(firewall);
	return status;
}
