/*
 * appliance: a program embedding libkiln. It boots a guest, waits for its
 * agent, runs a command and prints its output, writes a file into the
 * guest and reads it back, snapshots the VM, restores the snapshot into a
 * second VM (a fork with its own overlay and vsock socket), checks the
 * fork answers and still has the file, and prints how long each step took.
 *
 *   make -C examples        (pkg-config --cflags --libs kiln)
 *   ./appliance --kernel K (--initrd CPIO | --disk ROOT.ext4) --workdir DIR
 *               [--mem MIB] [--cpus N] [--timeout MS]
 *
 * DIR must exist and hold Unix sockets (tmpfs is fine): it gets the vsock
 * sockets, the disk overlays and the snapshot. Exit status 0 when every
 * step worked, 1 otherwise (the failing step and libkiln's message on
 * stderr), 2 for bad usage.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, sigaction with -std=c11 */

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <kiln/kiln.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int agent_fail(const char *what, kiln_agent *a, int r)
{
	fprintf(stderr, "appliance: %s: %s (%s)\n", what, kiln_agent_errmsg(a), strerror(-r));
	return -1;
}

/* Run `cmd` through the guest's shell; print its output. */
static int run(kiln_agent *a, const char *cmd)
{
	const char *argv[] = { cmd, NULL };
	struct kiln_exec_opts o = { .size = sizeof(o), .argv = argv, .flags = KILN_AGENT_SHELL };
	struct kiln_exit_status st = { .size = sizeof(st) };
	char *out = NULL, *err = NULL;
	double t = now_ms();
	int r = kiln_agent_exec(a, &o, &st, &out, NULL, &err, NULL);

	if (r < 0)
		return agent_fail("exec", a, r);
	printf("$ %s\n%s%s", cmd, out ? out : "", err ? err : "");
	printf("exit %d (%.1f ms)\n", st.exit_code, now_ms() - t);
	kiln_free(out);
	kiln_free(err);
	return st.exit_code == 0 ? 0 : -1;
}

/* Wait for the agent of `vm`; a restored guest also gets the host's clock
 * and fresh entropy, so it does not share random numbers with its parent. */
static kiln_agent *agent_up(kiln_vm *vm, int timeout_ms)
{
	kiln_agent *a;
	int r = kiln_agent_new(kiln_vm_vsock_path(vm), &a);

	if (r < 0) {
		fprintf(stderr, "appliance: agent: %s\n", strerror(-r));
		return NULL;
	}
	kiln_agent_set_timeout(a, timeout_ms);
	if ((r = kiln_agent_wait_ready(a, timeout_ms)) < 0 ||
	    (kiln_vm_restored(vm) && (r = kiln_agent_sync_clock(a, KILN_AGENT_RESEED, NULL)) < 0)) {
		agent_fail("waiting for the agent", a, r);
		kiln_agent_free(a);
		return NULL;
	}
	return a;
}

struct args {
	const char *kernel, *initrd, *disk, *dir;
	unsigned mem, cpus;
	int timeout_ms;
};

static int parse(int argc, char **argv, struct args *a)
{
	*a = (struct args){ .mem = 256, .cpus = 2, .timeout_ms = 240000 };
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--kernel"))
			a->kernel = argv[i + 1];
		else if (!strcmp(argv[i], "--initrd"))
			a->initrd = argv[i + 1];
		else if (!strcmp(argv[i], "--disk"))
			a->disk = argv[i + 1];
		else if (!strcmp(argv[i], "--workdir"))
			a->dir = argv[i + 1];
		else if (!strcmp(argv[i], "--mem"))
			a->mem = (unsigned)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--cpus"))
			a->cpus = (unsigned)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--timeout"))
			a->timeout_ms = atoi(argv[i + 1]);
		else
			return -1;
	}
	return (argc % 2 == 1 && a->kernel && a->dir && (a->initrd || a->disk)) ? 0 : -1;
}

static kiln_vm_config *configure(const struct args *a)
{
	kiln_vm_config *c = kiln_vm_config_new();
	char path[4096];
	int r = 0;

	if (!c)
		return NULL;
	snprintf(path, sizeof(path), "%s/vsock", a->dir);
	r = r ? r : kiln_vm_config_set_kernel(c, a->kernel);
	r = r ? r : kiln_vm_config_set_memory(c, a->mem);
	r = r ? r : kiln_vm_config_set_cpus(c, a->cpus);
	r = r ? r : kiln_vm_config_set_vsock(c, path, 0);
	if (a->initrd)
		r = r ? r : kiln_vm_config_set_initrd(c, a->initrd);
	if (a->disk) {
		/* The image stays untouched: writes go to an overlay, which a
		 * snapshot needs anyway. */
		snprintf(path, sizeof(path), "%s/disk0.overlay", a->dir);
		r = r ? r : kiln_vm_config_add_disk(c, a->disk, 0, path);
	}
	if (r < 0) {
		fprintf(stderr, "appliance: config: %s\n", kiln_vm_config_errmsg(c));
		kiln_vm_config_free(c);
		return NULL;
	}
	return c;
}

/* Boot, exec, file round trip, snapshot, fork; 0 or -1. */
static int appliance(const struct args *a, kiln_vm_config *cfg)
{
	static const char text[] = "hello from the appliance\n";
	char snap[4096], fork_dir[4096];
	kiln_vm *vm = NULL, *fork = NULL;
	kiln_agent *ag = NULL, *fag = NULL;
	void *back = NULL;
	size_t len = 0;
	double t0 = now_ms(), t;
	uint64_t ready_ns = 0;
	int r, ok = -1;

	if ((r = kiln_vm_create(cfg, &vm)) < 0) {
		fprintf(stderr, "appliance: create: %s\n", kiln_vm_config_errmsg(cfg));
		return -1;
	}
	if ((r = kiln_vm_start(vm)) < 0) {
		fprintf(stderr, "appliance: start: %s\n", kiln_vm_errmsg(vm));
		goto out;
	}
	if (!(ag = agent_up(vm, a->timeout_ms)))
		goto out;
	kiln_vm_timeline_find(vm, "agent_ready", &ready_ns);
	printf("booted: agent ready after %.1f ms (guest timeline: %.1f ms)\n", now_ms() - t0,
	       ready_ns / 1e6);

	if (run(ag, "echo hello-from-guest; uname -sr") < 0)
		goto out;

	t = now_ms();
	if ((r = kiln_agent_file_write(ag, "/tmp/appliance.txt", KILN_AGENT_PARENTS, 0644, text,
				       strlen(text))) < 0 ||
	    (r = kiln_agent_file_read(ag, "/tmp/appliance.txt", 0, 1 << 20, &back, &len)) < 0) {
		agent_fail("file round trip", ag, r);
		goto out;
	}
	if (len != strlen(text) || memcmp(back, text, len) != 0) {
		fprintf(stderr, "appliance: file round trip: read back %zu bytes that differ\n",
			len);
		goto out;
	}
	printf("file round trip: %zu bytes ok (%.1f ms)\n", len, now_ms() - t);

	snprintf(snap, sizeof(snap), "%s/snap", a->dir);
	t = now_ms();
	if ((r = kiln_vm_snapshot(vm, snap, 0)) < 0) {
		fprintf(stderr, "appliance: snapshot: %s\n", kiln_vm_errmsg(vm));
		goto out;
	}
	{
		uint64_t mem, stored;
		double ms;

		kiln_vm_snapshot_stats(vm, &mem, &stored, NULL, NULL, &ms);
		printf("snapshot: %llu MiB RAM, %llu KiB stored, %.1f ms paused (%.1f ms call)\n",
		       (unsigned long long)(mem >> 20), (unsigned long long)(stored >> 10), ms,
		       now_ms() - t);
	}

	snprintf(fork_dir, sizeof(fork_dir), "%s/fork", a->dir);
	mkdir(fork_dir, 0700);
	t = now_ms();
	if ((r = kiln_vm_fork(cfg, snap, fork_dir, &fork)) < 0) {
		fprintf(stderr, "appliance: fork: %s\n", kiln_vm_config_errmsg(cfg));
		goto out;
	}
	if ((r = kiln_vm_start(fork)) < 0) {
		fprintf(stderr, "appliance: fork start: %s\n", kiln_vm_errmsg(fork));
		goto out;
	}
	if (!(fag = agent_up(fork, a->timeout_ms)))
		goto out;
	printf("restored into a second VM: agent answers after %.1f ms\n", now_ms() - t);
	if (run(fag, "echo restored-vm-answers; cat /tmp/appliance.txt") < 0)
		goto out;
	ok = 0;
out:
	kiln_free(back);
	kiln_agent_free(fag);
	kiln_agent_free(ag);
	if (fork) {
		kiln_vm_stop(fork);
		kiln_vm_wait(fork, -1);
		printf("fork ended: %s\n", kiln_vm_exit_name(kiln_vm_exit_reason(fork)));
		kiln_vm_destroy(fork);
	}
	if (vm) {
		kiln_vm_stop(vm);
		kiln_vm_wait(vm, -1);
		printf("first VM ended: %s\n", kiln_vm_exit_name(kiln_vm_exit_reason(vm)));
		kiln_vm_destroy(vm);
	}
	printf("total %.1f ms\n", now_ms() - t0);
	return ok;
}

int main(int argc, char **argv)
{
	kiln_vm_config *cfg;
	struct args a;
	int r;

	if (parse(argc, argv, &a) < 0) {
		fprintf(stderr,
			"usage: appliance --kernel K (--initrd CPIO | --disk ROOT.ext4) --workdir DIR "
			"[--mem MIB] [--cpus N] [--timeout MS]\n");
		return 2;
	}
	printf("libkiln %s\n", kiln_version());
	/* libkiln kicks vCPU threads with SIGUSR1 (the config's default) and
	 * leaves installing its handler to the program: here, libkiln's no-op. */
	if ((r = kiln_kick_signal_install(SIGUSR1)) < 0) {
		fprintf(stderr, "appliance: kick signal: %s\n", strerror(-r));
		return 1;
	}
	if (!(cfg = configure(&a)))
		return 1;
	r = appliance(&a, cfg);
	kiln_vm_config_free(cfg);
	return r < 0 ? 1 : 0;
}
