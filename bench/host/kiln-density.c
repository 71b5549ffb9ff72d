/*
 * kiln-density: forks of one snapshot through libkiln in one process, no
 * kilnd (bench/density's other half). It boots a VM, runs an optional warm
 * command in it, snapshots it, stops it, then for each count N forks N VMs
 * from the snapshot at once (one thread each, with a config of its own:
 * fork, start, wait for the agent, give it the host's clock and fresh
 * entropy, then one exec or run), and prints one JSON line per N: each
 * fork's times (ms from the batch's start) until kiln_vm_fork returned,
 * kiln_vm_start returned, its agent was ready and its exec's result came,
 * the batch's wall time to the last ready agent, and this process's PSS
 * and private memory (/proc/self/smaps_rollup, KiB) before the batch and
 * once every fork is idle. The forks are stopped before the next N.
 *
 *   kiln-density --kernel K (--initrd CPIO | --disk ROOT.ext4) --workdir DIR
 *                --counts 1,8,32 [--mem MIB] [--timeout MS] [--settle-ms MS]
 *                [--warm SHELL-CMD] [--python CODE]
 *
 * Without --python each fork execs /bin/true; with it, the agent's run of
 * that Python code. Exit 0 when every fork answered, 1 otherwise (what
 * failed on stderr), 2 for bad usage. Figures only: it never judges them.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <kiln/kiln.h>

#define MAX_FORKS 1024

struct args {
	const char *kernel, *initrd, *disk, *dir, *warm, *python;
	unsigned counts[16], ncounts, mem;
	int timeout_ms, settle_ms;
};

/* One fork of a batch, filled by its thread. */
struct fork {
	const struct args *a;
	kiln_vm_config *cfg; /* its own: kiln_vm_fork takes one call per config at a time */
	const char *snap;
	char dir[4096];
	double t0, forked_ms, started_ms, ready_ms, exec_ms; /* from the batch's start */
	kiln_vm *vm;
	kiln_agent *ag;
	char err[512];
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Pss and Private_Clean + Private_Dirty of this process, in KiB. */
static int self_memory(uint64_t *pss, uint64_t *uss)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	char line[256];
	uint64_t v;

	if (!f)
		return -errno;
	*pss = *uss = 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Pss: %" SCNu64, &v) == 1)
			*pss = v;
		else if (sscanf(line, "Private_Clean: %" SCNu64, &v) == 1 ||
			 sscanf(line, "Private_Dirty: %" SCNu64, &v) == 1)
			*uss += v;
	}
	fclose(f);
	return 0;
}

static int parse_counts(const char *s, struct args *a)
{
	char *end;

	for (a->ncounts = 0; *s && a->ncounts < 16; s = *end ? end + 1 : end) {
		unsigned long n = strtoul(s, &end, 10);

		if (end == s || n < 1 || n > MAX_FORKS || (*end && *end != ','))
			return -1;
		a->counts[a->ncounts++] = (unsigned)n;
	}
	return a->ncounts ? 0 : -1;
}

static int parse(int argc, char **argv, struct args *a)
{
	*a = (struct args){ .mem = 128, .timeout_ms = 600000, .settle_ms = 2000 };
	for (int i = 1; i + 1 < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];

		if (!strcmp(k, "--kernel"))
			a->kernel = v;
		else if (!strcmp(k, "--initrd"))
			a->initrd = v;
		else if (!strcmp(k, "--disk"))
			a->disk = v;
		else if (!strcmp(k, "--workdir"))
			a->dir = v;
		else if (!strcmp(k, "--warm"))
			a->warm = v;
		else if (!strcmp(k, "--python"))
			a->python = v;
		else if (!strcmp(k, "--mem"))
			a->mem = (unsigned)atoi(v);
		else if (!strcmp(k, "--timeout"))
			a->timeout_ms = atoi(v);
		else if (!strcmp(k, "--settle-ms"))
			a->settle_ms = atoi(v);
		else if (!strcmp(k, "--counts")) {
			if (parse_counts(v, a) < 0)
				return -1;
		} else
			return -1;
	}
	return (argc % 2 == 1 && a->kernel && a->dir && a->ncounts && (a->initrd || a->disk)) ? 0
											      : -1;
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
	r = r ? r : kiln_vm_config_set_vsock(c, path, 0);
	if (a->initrd)
		r = r ? r : kiln_vm_config_set_initrd(c, a->initrd);
	if (a->disk) {
		snprintf(path, sizeof(path), "%s/disk0.overlay", a->dir);
		r = r ? r : kiln_vm_config_add_disk(c, a->disk, 0, path);
	}
	if (r < 0) {
		fprintf(stderr, "kiln-density: config: %s\n", kiln_vm_config_errmsg(c));
		kiln_vm_config_free(c);
		return NULL;
	}
	return c;
}

/* The agent of vm, ready; a restored guest also gets the host's clock and
 * fresh entropy (what kilnd gives a fork). NULL with err set. */
static kiln_agent *agent_up(kiln_vm *vm, int timeout_ms, char *err, size_t n)
{
	kiln_agent *ag;
	int r = kiln_agent_new(kiln_vm_vsock_path(vm), &ag);

	if (r < 0) {
		snprintf(err, n, "agent: %s", strerror(-r));
		return NULL;
	}
	kiln_agent_set_timeout(ag, timeout_ms);
	if ((r = kiln_agent_wait_ready(ag, timeout_ms)) < 0 ||
	    (kiln_vm_restored(vm) &&
	     (r = kiln_agent_sync_clock(ag, KILN_AGENT_RESEED, NULL)) < 0)) {
		snprintf(err, n, "waiting for the agent: %s (%s)", kiln_agent_errmsg(ag),
			 strerror(-r));
		kiln_agent_free(ag);
		return NULL;
	}
	return ag;
}

/* /bin/true, or the Python code through the agent's run; 0 when it exited 0. */
static int exec_one(kiln_agent *ag, const struct args *a, char *err, size_t n)
{
	static const char *const argv[] = { "true", NULL };
	struct kiln_exec_opts o = { .size = sizeof(o), .argv = argv };
	struct kiln_exit_status st = { .size = sizeof(st) };
	int r;

	if (a->python) {
		o.lang = "python";
		o.code = a->python;
		o.code_len = strlen(a->python);
		r = kiln_agent_run(ag, &o, &st, NULL, NULL, NULL, NULL, NULL);
	} else
		r = kiln_agent_exec(ag, &o, &st, NULL, NULL, NULL, NULL);
	if (r < 0)
		snprintf(err, n, "exec: %s (%s)", kiln_agent_errmsg(ag), strerror(-r));
	else if (st.exit_code != 0)
		snprintf(err, n, "exec: exit status %d", st.exit_code);
	return r < 0 || st.exit_code != 0 ? -1 : 0;
}

static void *fork_thread(void *arg)
{
	struct fork *f = arg;
	int r;

	if (mkdir(f->dir, 0700) < 0 && errno != EEXIST) {
		snprintf(f->err, sizeof(f->err), "mkdir: %s", strerror(errno));
		return NULL;
	}
	if (!(f->cfg = configure(f->a))) {
		snprintf(f->err, sizeof(f->err), "config failed");
		return NULL;
	}
	r = kiln_vm_fork(f->cfg, f->snap, f->dir, &f->vm);
	f->forked_ms = now_ms() - f->t0;
	if (r < 0) {
		snprintf(f->err, sizeof(f->err), "fork: %s", kiln_vm_config_errmsg(f->cfg));
		return NULL;
	}
	if ((r = kiln_vm_start(f->vm)) < 0) {
		snprintf(f->err, sizeof(f->err), "start: %s", kiln_vm_errmsg(f->vm));
		return NULL;
	}
	f->started_ms = now_ms() - f->t0;
	if (!(f->ag = agent_up(f->vm, f->a->timeout_ms, f->err, sizeof(f->err))))
		return NULL;
	f->ready_ms = now_ms() - f->t0;
	if (exec_one(f->ag, f->a, f->err, sizeof(f->err)) == 0)
		f->exec_ms = now_ms() - f->t0;
	return NULL;
}

static void fork_end(struct fork *f)
{
	kiln_agent_free(f->ag);
	if (f->vm) {
		kiln_vm_stop(f->vm);
		kiln_vm_wait(f->vm, -1);
		kiln_vm_destroy(f->vm);
	}
	kiln_vm_config_free(f->cfg);
}

/* One of each fork's times, picked by its offset in struct fork. */
static void print_list(const char *name, const struct fork *fs, unsigned n, size_t off)
{
	printf(",\"%s\":[", name);
	for (unsigned i = 0; i < n; i++)
		printf("%s%.3f", i ? "," : "", *(const double *)((const char *)&fs[i] + off));
	printf("]");
}

/* N forks at once; one JSON line. 0, or -1 when a fork failed. */
static int batch(const struct args *a, const char *snap, unsigned n)
{
	struct fork *fs = calloc(n, sizeof(*fs));
	pthread_t *th = calloc(n, sizeof(*th));
	uint64_t pss0, uss0, pss1 = 0, uss1 = 0;
	double t0, all = 0;
	int bad = 0;

	if (!fs || !th || self_memory(&pss0, &uss0) < 0) {
		free(fs);
		free(th);
		return -1;
	}
	t0 = now_ms();
	for (unsigned i = 0; i < n; i++) {
		fs[i] = (struct fork){ .a = a, .snap = snap, .t0 = t0 };
		snprintf(fs[i].dir, sizeof(fs[i].dir), "%s/n%u-%u", a->dir, n, i);
		if (pthread_create(&th[i], NULL, fork_thread, &fs[i]) != 0) {
			snprintf(fs[i].err, sizeof(fs[i].err), "no thread");
			th[i] = 0;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		if (th[i])
			pthread_join(th[i], NULL);
		if (fs[i].err[0]) {
			fprintf(stderr, "kiln-density: N=%u fork %u: %s\n", n, i, fs[i].err);
			bad = 1;
		}
		all = fs[i].ready_ms > all ? fs[i].ready_ms : all;
	}
	if (!bad) {
		usleep((useconds_t)a->settle_ms * 1000);
		self_memory(&pss1, &uss1);
		printf("{\"n\":%u,\"all_ready_ms\":%.3f", n, all);
		print_list("forked_ms", fs, n, offsetof(struct fork, forked_ms));
		print_list("started_ms", fs, n, offsetof(struct fork, started_ms));
		print_list("ready_ms", fs, n, offsetof(struct fork, ready_ms));
		print_list("exec_ms", fs, n, offsetof(struct fork, exec_ms));
		printf(",\"pss_before_kib\":%" PRIu64 ",\"uss_before_kib\":%" PRIu64
		       ",\"pss_kib\":%" PRIu64 ",\"uss_kib\":%" PRIu64 "}\n",
		       pss0, uss0, pss1, uss1);
		fflush(stdout);
	}
	for (unsigned i = 0; i < n; i++)
		fork_end(&fs[i]);
	free(fs);
	free(th);
	return bad ? -1 : 0;
}

/* Boot the parent, warm it, snapshot it into snap, stop it. 0 or -1. */
static int parent(const struct args *a, kiln_vm_config *cfg, const char *snap)
{
	static const char *argv[] = { NULL, NULL };
	struct kiln_exec_opts o = { .size = sizeof(o), .argv = argv, .flags = KILN_AGENT_SHELL };
	struct kiln_exit_status st = { .size = sizeof(st) };
	char err[512] = "";
	kiln_vm *vm = NULL;
	kiln_agent *ag = NULL;
	double t0 = now_ms();
	int ok = -1;

	if (kiln_vm_create(cfg, &vm) < 0) {
		fprintf(stderr, "kiln-density: create: %s\n", kiln_vm_config_errmsg(cfg));
		return -1;
	}
	if (kiln_vm_start(vm) < 0) {
		fprintf(stderr, "kiln-density: start: %s\n", kiln_vm_errmsg(vm));
		goto out;
	}
	if (!(ag = agent_up(vm, a->timeout_ms, err, sizeof(err)))) {
		fprintf(stderr, "kiln-density: boot: %s\n", err);
		goto out;
	}
	argv[0] = a->warm;
	if (a->warm && (kiln_agent_exec(ag, &o, &st, NULL, NULL, NULL, NULL) < 0 || st.exit_code)) {
		fprintf(stderr, "kiln-density: warm command failed: %s (exit %d)\n",
			kiln_agent_errmsg(ag), st.exit_code);
		goto out;
	}
	if (kiln_vm_snapshot(vm, snap, 0) < 0) {
		fprintf(stderr, "kiln-density: snapshot: %s\n", kiln_vm_errmsg(vm));
		goto out;
	}
	printf("{\"parent_ready_and_snapshot_ms\":%.3f}\n", now_ms() - t0);
	fflush(stdout);
	ok = 0;
out:
	kiln_agent_free(ag);
	kiln_vm_stop(vm);
	kiln_vm_wait(vm, -1);
	kiln_vm_destroy(vm);
	return ok;
}

int main(int argc, char **argv)
{
	kiln_vm_config *cfg;
	struct args a;
	char snap[4096];
	int r = 0;

	if (parse(argc, argv, &a) < 0) {
		fprintf(stderr,
			"usage: kiln-density --kernel K (--initrd CPIO | --disk ROOT.ext4) "
			"--workdir DIR --counts N[,N...] [--mem MIB] [--timeout MS] "
			"[--settle-ms MS] [--warm SHELL-CMD] [--python CODE]\n");
		return 2;
	}
	/* libkiln kicks vCPU threads with SIGUSR1 and leaves its handler to
	 * the program. */
	if (kiln_kick_signal_install(SIGUSR1) < 0) {
		fprintf(stderr, "kiln-density: cannot install the SIGUSR1 kick handler\n");
		return 1;
	}
	if (!(cfg = configure(&a)))
		return 1;
	snprintf(snap, sizeof(snap), "%s/snap", a.dir);
	if (parent(&a, cfg, snap) < 0)
		r = -1;
	for (unsigned i = 0; r == 0 && i < a.ncounts; i++)
		r = batch(&a, snap, a.counts[i]);
	kiln_vm_config_free(cfg);
	return r < 0 ? 1 : 0;
}
