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
#include <unistd.h>

/* kiln-vmm is a user of libkiln's public API like any embedder. */
#include <kiln/kiln.h>

/* The control socket server is kiln-vmm's own (a program module, over
 * the public API); libkiln has no control socket. */
#include "vmm/kiln-vmm/control.h"
#include "vmm/kiln-vmm/jailed.h"

#include "lib/base/fd_io.h"
#include "lib/base/mono.h"
#include "lib/base/num_parse.h"
#include "lib/base/term_mode.h"
#include "vmm/control/exit_status.h"


static const char usage[] =
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
	"  --share DIR:TAG[:ro] virtio-fs: host directory DIR as mount tag TAG\n"
	"  --share fd=N:TAG[:ro] the same for the directory open as descriptor N\n"
	"                       (>= 3; no path is resolved; ./fd=N for a directory\n"
	"                       named so)\n"
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
	"                       options must be the ones it was taken with; opened\n"
	"                       before --jail, read in the jail\n"
	"  --jail DIR --uid U --gid G\n"
	"                       once set up, confine kiln-vmm (root needed to start):\n"
	"                       pid 1 of new pid, mount, ipc, uts, cgroup and (without\n"
	"                       a TAP device) network namespaces; its root an empty\n"
	"                       read-only tmpfs holding only DIR (an existing\n"
	"                       directory, at its own path: put the --vsock and\n"
	"                       --control sockets and snapshot directories there);\n"
	"                       uid U and gid G (not 0), no capabilities, no_new_privs\n"
	"                       (docs/security.md)\n"
	"  --seccomp=kill|log|off  seccomp filter per thread role (default kill: a\n"
	"                       syscall outside the thread's allowlist kills kiln-vmm;\n"
	"                       log: only logged by the kernel, to find a missing rule)\n"
	"  --verbose            log guest accesses to ports/MMIO with no device\n"
	"  --version, --help\n"
	"\n"
	"Exit status: 0 guest reset/poweroff, 1 setup error, 2 usage, 3 reset before\n"
	"init started (kernel panic?), 4 guest triple fault, 5 KVM failure.\n";

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

static int bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "kiln-vmm: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see kiln-vmm --help)\n");
	return VMM_EXIT_USAGE;
}

/*
 * Read the --firewall rule set into the config, so a bad one is a usage
 * error with the rule parser's own message (the field it names).
 * VMM_EXIT_OK or VMM_EXIT_USAGE.
 */
static int load_firewall(kiln_vm_config *cfg, const char *path)
{
	struct stat st;
	char *buf;
	size_t have = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), r;

	if (fd < 0) {
		fprintf(stderr, "kiln-vmm: --firewall %s: %s\n", path, strerror(errno));
		return VMM_EXIT_USAGE;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > KILN_VM_FIREWALL_MAX) {
		fprintf(stderr, "kiln-vmm: --firewall %s: not a regular file of at most %d bytes\n", path,
			KILN_VM_FIREWALL_MAX);
		close(fd);
		return VMM_EXIT_USAGE;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (buf) {
		ssize_t k = fd_io_read_full(fd, buf, (size_t)st.st_size);

		have = k > 0 ? (size_t)k : 0;
	}
	close(fd);
	if (!buf || have != (size_t)st.st_size) {
		fprintf(stderr, "kiln-vmm: --firewall %s: cannot read it\n", path);
		free(buf);
		return VMM_EXIT_USAGE;
	}
	r = kiln_vm_config_set_firewall(cfg, buf, have);
	free(buf);
	if (r < 0) {
		fprintf(stderr, "kiln-vmm: --firewall %s: %s\n", path, kiln_vm_config_errmsg(cfg));
		return VMM_EXIT_USAGE;
	}
	return VMM_EXIT_OK;
}

/* --boot-timeline: milestones since kiln-vmm started, as text or JSON. */
static void print_timeline(kiln_vm *vm, int json, const char *reason, int status)
{
	size_t n = kiln_vm_timeline_count(vm);
	char name[64];
	uint64_t ns;
	int derived;

	if (json) {
		fprintf(stderr, "{\"unit\":\"ms\",\"milestones\":[");
		for (size_t i = 0; i < n; i++) {
			if (kiln_vm_timeline_get(vm, i, name, sizeof(name), &ns, &derived) == 0)
				fprintf(stderr, "%s{\"name\":\"%s\",\"ms\":%.3f%s}", i ? "," : "", name, ns / 1e6,
					derived ? ",\"derived\":true" : "");
		}
		fprintf(stderr, "],\"exit\":{\"reason\":\"%s\",\"status\":%d}}\n", reason, status);
	} else {
		fprintf(stderr, "boot timeline (ms since kiln-vmm start):\n");
		for (size_t i = 0; i < n; i++) {
			if (kiln_vm_timeline_get(vm, i, name, sizeof(name), &ns, &derived) == 0)
				fprintf(stderr, "  %-20s %10.3f%s\n", name, ns / 1e6,
					derived ? "  (guest clock: init time - guest uptime)" : "");
		}
		fprintf(stderr, "  exit: %s (status %d)\n", reason, status);
	}
	fflush(stderr);
}

/*
 * --console puts the user's terminal in TERM_MODE_KEYS, which keeps ISIG:
 * ^C (or a kill, or the terminal closing) ends kiln-vmm by a signal, and
 * the terminal must be given back first or the user's shell is left
 * without echo. A signal handler has no argument to carry the saved
 * settings, so they live in this one static: kiln-vmm is a program with
 * one console, not library code (libkiln keeps no globals).
 */
static struct term_mode_saved console_term;

static void console_signal(int sig)
{
	sigset_t self;

	term_mode_leave(&console_term);
	signal(sig, SIG_DFL);
	raise(sig);
	/* The handler blocks sig: unblocking it delivers it now. */
	sigemptyset(&self);
	sigaddset(&self, sig);
	sigprocmask(SIG_UNBLOCK, &self, NULL);
	/* Still here: pid 1 of a jail ignores a signal left at SIG_DFL. */
	_exit(128 + sig);
}

/* Jailed, kiln-vmm is pid 1 of its pid namespace, where SIGTERM, SIGINT
 * and SIGHUP at SIG_DFL are ignored: make them end it as they would
 * elsewhere (the exit status says which: 128 + signal). */
static void exit_on_signal(int sig)
{
	_exit(128 + sig);
}

static void pid1_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa = { .sa_handler = exit_on_signal }, old;

	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
			sigaction(sigs[i], &sa, NULL);
}

/* The console's terminal in TERM_MODE_KEYS, given back on SIGINT/SIGTERM/SIGHUP too. */
static void console_term_enter(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa, old;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = console_signal;
	sigemptyset(&sa.sa_mask);
	/* Before the switch, so no signal finds the terminal changed and no
	 * handler; a signal the caller ignores (nohup) stays ignored. */
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
			sigaction(sigs[i], &sa, NULL);
	/* -ENOTTY (stdin is a pipe) leaves nothing to restore. */
	term_mode_enter(STDIN_FILENO, TERM_MODE_KEYS, &console_term);
}

/* libkiln's jail step, its message into e. */
static int jail_step(const char *dir, uint32_t uid, uint32_t gid, unsigned flags, struct err *e)
{
	char msg[sizeof(e->msg)];
	int r = kiln_jail_enter(dir, uid, gid, flags, msg, sizeof(msg));

	return r < 0 ? err_set(e, -r, "%s", msg) : 0;
}

/* A device option into the config; a bad one is a usage error with
 * libkiln's message (devspec's, the same as before libkiln). */
static int add_device(kiln_vm_config *cfg, const char *kind, const char *spec)
{
	if (kiln_vm_config_add_device(cfg, kind, spec) < 0)
		return bad_usage("%s", kiln_vm_config_errmsg(cfg));
	return VMM_EXIT_OK;
}

/* --seccomp=kill|log|off (docs/security.md, "seccomp filters per thread"). */
static int set_seccomp(kiln_vm_config *cfg, const char *mode)
{
	static const struct {
		const char *name;
		enum kiln_seccomp_mode mode;
	} modes[] = { { "kill", KILN_SECCOMP_KILL }, { "log", KILN_SECCOMP_LOG }, { "off", KILN_SECCOMP_OFF } };

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (strcmp(mode, modes[i].name) == 0) {
			kiln_vm_config_set_seccomp(cfg, modes[i].mode);
			return VMM_EXIT_OK;
		}
	return bad_usage("--seccomp=%s: expected kill, log or off", mode);
}

int main(int argc, char **argv)
{
	enum { OPT_KERNEL = 256, OPT_INITRD, OPT_CMDLINE, OPT_MEM, OPT_CPUS, OPT_HUGE, OPT_CONSOLE,
	       OPT_TIMELINE, OPT_VERBOSE, OPT_VERSION, OPT_HELP, OPT_NO_RNG, OPT_NET, OPT_DISK, OPT_SHARE, OPT_VSOCK,
	       OPT_CONTROL, OPT_RESTORE, OPT_FIREWALL, OPT_FIREWALL_LOG, OPT_NET_RATE, OPT_JAIL, OPT_UID, OPT_GID,
	       OPT_SECCOMP };
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
		{ "jail", required_argument, 0, OPT_JAIL },
		{ "uid", required_argument, 0, OPT_UID },
		{ "gid", required_argument, 0, OPT_GID },
		{ "seccomp", required_argument, 0, OPT_SECCOMP },
		{ "version", no_argument, 0, OPT_VERSION },
		{ "help", no_argument, 0, OPT_HELP },
		{ 0, 0, 0, 0 },
	};
	kiln_vm_config *cfg;
	kiln_vm *vm;
	struct control *ctl = NULL;
	struct err err = { { 0 } };
	const char *control_path = NULL, *firewall_path = NULL, *restore_dir = NULL, *kernel = NULL;
	uint64_t n;
	unsigned log_flags = KILN_LOG_DEVICE; /* a broken device or backend is always said */
	int timeline = 0, json = 0, console = 0, nets = 0, net_rate = 0, status, opt;
	const char *jail_dir = NULL;
	int keep[16], nkeep = 0; /* descriptors given on the command line */
	unsigned jail_flags = 0;
	uint64_t uid = 0, gid = 0;
	const char *reason;

	install_crash_report();
	cfg = kiln_vm_config_new();
	if (!cfg) {
		fprintf(stderr, "kiln-vmm: out of memory\n");
		return VMM_EXIT_SETUP;
	}
	kiln_vm_config_set_time_origin(cfg, mono_ns());
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case OPT_KERNEL:
			kernel = optarg;
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
			log_flags |= KILN_LOG_UNHANDLED;
			break;
		case OPT_NO_RNG:
			kiln_vm_config_set_rng(cfg, 0);
			break;
		case OPT_NET:
			nets++;
			if (strncmp(optarg, "tap=", 4) == 0)
				jail_flags |= KILN_JAIL_KEEP_NET; /* the TAP device is in this namespace */
			if ((status = add_device(cfg, "net", optarg)) != VMM_EXIT_OK)
				return status;
			break;
		case OPT_DISK:
			if ((status = add_device(cfg, "disk", optarg)) != VMM_EXIT_OK)
				return status;
			break;
		case OPT_SHARE:
			if ((status = add_device(cfg, "share", optarg)) != VMM_EXIT_OK)
				return status;
			/* fd=N: a descriptor the jail step must not close (libkiln
			 * checked N). */
			if (strncmp(optarg, "fd=", 3) == 0 && nkeep < (int)(sizeof(keep) / sizeof(keep[0])))
				keep[nkeep++] = atoi(optarg + 3);
			break;
		case OPT_VSOCK:
			if ((status = add_device(cfg, "vsock", optarg)) != VMM_EXIT_OK)
				return status;
			break;
		case OPT_CONTROL:
			control_path = optarg;
			break;
		case OPT_RESTORE:
			restore_dir = optarg;
			break;
		case OPT_FIREWALL:
			if (firewall_path)
				return bad_usage("--firewall: given twice%s", "");
			firewall_path = optarg;
			break;
		case OPT_FIREWALL_LOG:
			log_flags |= KILN_LOG_FIREWALL;
			break;
		case OPT_NET_RATE:
			net_rate = 1;
			if ((status = add_device(cfg, "net-rate", optarg)) != VMM_EXIT_OK)
				return status;
			break;
		case OPT_JAIL:
			jail_dir = optarg;
			break;
		case OPT_UID:
		case OPT_GID:
			if (num_parse_u64(optarg, 10, 1, UINT32_MAX - 1, opt == OPT_UID ? &uid : &gid))
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
			return VMM_EXIT_OK;
		case OPT_HELP:
			fputs(usage, stdout);
			return VMM_EXIT_OK;
		default:
			return bad_usage("unknown or incomplete option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return bad_usage("unexpected argument '%s'", argv[optind]);
	if (!kernel && !restore_dir)
		return bad_usage("%sno kernel given: pass --kernel PATH (or --restore DIR)", "");
	if ((firewall_path || (log_flags & KILN_LOG_FIREWALL) || net_rate) && !nets)
		return bad_usage("%s--firewall, --firewall-log and --net-rate need a --net device", "");
	if (((log_flags & KILN_LOG_FIREWALL) || net_rate) && !firewall_path)
		return bad_usage("%s--firewall-log and --net-rate are the packet filter's: add --firewall FILE", "");
	if (!jail_dir != !uid || !jail_dir != !gid)
		return bad_usage("%s--jail, --uid and --gid go together: give all three", "");
	if (jail_dir) {
		/* Standalone: become pid 1 of a new pid namespace (kilnd starts
		 * kiln-vmm in one already). Returns in the child only. */
		if (getpid() != 1 && jailed_fork_pid1(&err) < 0) {
			fprintf(stderr, "kiln-vmm: %s\n", err.msg);
			return VMM_EXIT_SETUP;
		}
		jailed_close_fds(keep, nkeep);
		pid1_signals();
	}
	if (firewall_path && (status = load_firewall(cfg, firewall_path)) != VMM_EXIT_OK)
		return status;
	kiln_vm_config_set_log(cfg, STDERR_FILENO, log_flags);
	raise_fd_limit();
	if (console)
		kiln_vm_config_set_console(cfg, STDIN_FILENO, STDOUT_FILENO);
	/* vCPUs are kicked out of KVM_RUN with SIGUSR1 (the config's
	 * default): kiln-vmm owns its process, so it takes libkiln's no-op
	 * handler for it. */
	kiln_kick_signal_install(SIGUSR1);

	/* A restore only opens the snapshot here (as root: /dev/kvm, images,
	 * TAP, passt and shares are opened now too); kiln_vm_run reads it,
	 * after the jail and under the restore thread's filter. */
	if ((restore_dir ? kiln_vm_restore(cfg, restore_dir, &vm) : kiln_vm_create(cfg, &vm)) < 0) {
		fprintf(stderr, "kiln-vmm: %s\n", kiln_vm_config_errmsg(cfg));
		kiln_vm_config_free(cfg);
		return VMM_EXIT_SETUP;
	}
	kiln_vm_config_free(cfg);
	/* Bound as the caller, before the jail; served after it (the jail
	 * needs a single thread). */
	if ((control_path && control_open(vm, control_path, &ctl, &err) < 0) ||
	    (jail_dir && jail_step(jail_dir, (uint32_t)uid, (uint32_t)gid, jail_flags, &err) < 0) ||
	    (ctl && control_start(ctl, &err) < 0)) {
		fprintf(stderr, "kiln-vmm: %s\n", err.msg);
		control_stop(ctl);
		kiln_vm_destroy(vm);
		return VMM_EXIT_SETUP;
	}
	/* Keys go to the guest; ISIG stays so ^C still stops kiln-vmm. */
	if (console)
		console_term_enter();
	if (kiln_vm_run(vm) < 0) {
		term_mode_leave(&console_term);
		control_stop(ctl);
		fprintf(stderr, "kiln-vmm: %s\n", kiln_vm_errmsg(vm));
		kiln_vm_destroy(vm);
		return VMM_EXIT_SETUP;
	}
	term_mode_leave(&console_term);
	control_stop(ctl);

	switch (kiln_vm_exit_reason(vm)) {
	case KILN_VM_EXIT_RESET:
	case KILN_VM_EXIT_STOPPED:
		status = VMM_EXIT_OK;
		break;
	case KILN_VM_EXIT_EARLY_RESET:
		status = VMM_EXIT_EARLY_RESET;
		break;
	case KILN_VM_EXIT_TRIPLE_FAULT:
		status = VMM_EXIT_TRIPLE;
		break;
	default:
		status = VMM_EXIT_KVM;
		break;
	}
	reason = kiln_vm_exit_name(kiln_vm_exit_reason(vm));
	if (timeline)
		print_timeline(vm, json, reason, status);
	if (status == VMM_EXIT_EARLY_RESET)
		fprintf(stderr, "kiln-vmm: guest reset before its init started (kernel panic? run with --console to see it)\n");
	else if (status != VMM_EXIT_OK)
		fprintf(stderr, "kiln-vmm: %s\n", kiln_vm_exit_message(vm));
	kiln_vm_destroy(vm);
	return status;
}
