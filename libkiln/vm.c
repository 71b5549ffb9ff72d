/*
 * vm: kiln_vm, the public handle of one VM (include/kiln/vm.h) over
 * vmm/core's struct vm. It adds what an embedder needs and the core does
 * not do: a thread of its own to run on, waiting with a timeout, the
 * exit classified, and per-handle messages.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kiln/version.h>

#include "lib/base/mono.h"
#include "lib/base/thread_start.h"
#include "lib/base/version.h"
#include "libkiln/handles.h"
#include "devices/pseudo/timeline.h"
#include "vmm/jail/jail.h"

const char *kiln_version(void)
{
	return KILN_VERSION;
}

static void kick_noop(int sig)
{
	(void)sig;
}

int kiln_kick_signal_install(int signo)
{
	struct sigaction sa = { .sa_handler = kick_noop };

	if (signo <= 0 || signo >= NSIG || signo == SIGKILL || signo == SIGSTOP)
		return -EINVAL;
	sigemptyset(&sa.sa_mask);
	return sigaction(signo, &sa, NULL) < 0 ? -errno : 0;
}

static int vm_fail(kiln_vm *vm, int rc, const struct err *e)
{
	pthread_mutex_lock(&vm->lk);
	handle_err(vm->err, rc, e);
	pthread_mutex_unlock(&vm->lk);
	return rc;
}

/* The seccomp filters, built while vm_create works (mostly in the kernel:
 * KVM's VM, devices, RAM); libseccomp's compile is CPU work of its own. */
static void *prebuild(void *arg)
{
	vm_seccomp_prepare(arg); /* a failure is reported again by claim() */
	return NULL;
}

/*
 * pthread_join returns once the kernel cleared the thread's tid, which it
 * does before the thread has left the thread group: a jail entered right
 * after (kiln-vmm's, which counts /proc/self/task, as unshare's own check
 * counts the group) could still find it. Wait, at most a second, until the
 * process has `n` threads again (a count that cannot be read: no wait).
 */
static void wait_thread_gone(int n)
{
	for (int i = 0; i < 10000 && jail_thread_count() > n; i++)
		nanosleep(&(struct timespec){ .tv_nsec = 100000 }, NULL);
}

/* Build a VM from cfg (restore_dir set by the caller's copy when restoring). */
static int make(kiln_vm_config *cfg, const struct vm_config *c, kiln_vm **out)
{
	struct vm_kvm_prep *prep;
	struct err e = { { 0 } };
	pthread_condattr_t ca;
	pthread_t pre;
	kiln_vm *vm;
	int r, pre_started, threads = jail_thread_count();

	*out = NULL;
	cfg->err[0] = '\0';
	/* Taken by this call whatever it returns (kiln_vm_config_set_prepared). */
	prep = cfg->c.prep;
	cfg->c.prep = NULL;
	if ((c->firewall_log || cfg->has_rate) && !c->firewall) {
		snprintf(cfg->err, sizeof(cfg->err),
			 "the firewall log and the rate limits need a firewall");
		vm_kvm_prep_free(prep);
		return -EINVAL;
	}
	if (kiln_vm_config_needs_egress_proxy(cfg)) {
		snprintf(cfg->err, sizeof(cfg->err), "%s", KILN_VM_EGRESS_PROXY_MISSING);
		vm_kvm_prep_free(prep);
		return -EINVAL;
	}
	if (c->egress_proxy && !c->firewall) {
		snprintf(cfg->err, sizeof(cfg->err),
			 "an egress proxy needs a firewall: its rules' `http` say what is steered");
		vm_kvm_prep_free(prep);
		return -EINVAL;
	}
	if (c->firewall && !c->nnet) {
		snprintf(cfg->err, sizeof(cfg->err), "a firewall needs a network device");
		vm_kvm_prep_free(prep);
		return -EINVAL;
	}
	vm = calloc(1, sizeof(*vm));
	if (!vm || config_clone(c, &vm->cfg, &vm->owned) < 0) {
		if (vm)
			strs_free(&vm->owned);
		free(vm);
		vm_kvm_prep_free(prep);
		snprintf(cfg->err, sizeof(cfg->err), "out of memory");
		return -ENOMEM;
	}
	vm->cfg.prep = prep;
	vm->seccomp = cfg->seccomp;
	vm->cfg.thread_enter = vm_seccomp_enter;
	vm->cfg.thread_ctx = vm;
	pthread_mutex_init(&vm->lk, NULL);
	/* Joined before this returns: the caller may need a single thread
	 * next (kiln-vmm's jail). Without a thread, claim() builds them. */
	pre_started = vm->seccomp != KILN_SECCOMP_OFF && thread_start(&pre, prebuild, vm) == 0;
	r = vm_create(&vm->cfg, &vm->vm, &e);
	vm->cfg.prep = NULL; /* vm_create took them */
	if (pre_started) {
		pthread_join(pre, NULL);
		if (threads > 0)
			wait_thread_gone(threads);
		vm->err[0] = '\0'; /* a build that failed is tried and reported again by claim() */
	}
	if (r < 0) {
		handle_err(cfg->err, r, &e);
		vm_seccomp_free(vm);
		pthread_mutex_destroy(&vm->lk);
		strs_free(&vm->owned);
		free(vm);
		return r;
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&vm->cv, &ca);
	pthread_condattr_destroy(&ca);
	*out = vm;
	return 0;
}

int kiln_vm_create(kiln_vm_config *cfg, kiln_vm **out)
{
	struct vm_config c = cfg->c;

	c.restore_dir = NULL;
	return make(cfg, &c, out);
}

int kiln_vm_restore(kiln_vm_config *cfg, const char *snapshot_dir, kiln_vm **out)
{
	struct vm_config c = cfg->c;

	c.restore_dir = snapshot_dir;
	return make(cfg, &c, out);
}

int kiln_vm_fork(kiln_vm_config *cfg, const char *snapshot_dir, const char *fork_dir, kiln_vm **out)
{
	struct vm_config c = cfg->c;
	struct strs paths = { 0 };
	char buf[4096];
	int r = -ENOMEM;

	for (int i = 0; i < c.nnet; i++) {
		if (c.net[i].tap) {
			snprintf(cfg->err, sizeof(cfg->err),
				 "fork: network %d is TAP '%s', which one VM holds: give the fork a config with its own",
				 i, c.net[i].tap);
			kiln_vm_config_set_prepared(cfg, NULL); /* taken whatever happens */
			return -EBUSY;
		}
	}
	/* What kilnd's fork gives each sandbox (api/kilnd/registry/sandbox_fork.c):
	 * its own overlay, which restore fills from the snapshot's copy, and
	 * its own vsock socket. */
	for (int i = 0; i < c.ndisk; i++) {
		if (!c.disk[i].overlay)
			continue;
		snprintf(buf, sizeof(buf), "%s/disk%d.overlay", fork_dir, i);
		if (!(c.disk[i].overlay = strs_add(&paths, buf, strlen(buf))))
			goto out;
	}
	if (c.vsock.uds) {
		snprintf(buf, sizeof(buf), "%s/vsock", fork_dir);
		if (!(c.vsock.uds = strs_add(&paths, buf, strlen(buf))))
			goto out;
	}
	c.restore_dir = snapshot_dir;
	r = make(cfg, &c, out);
out:
	if (r == -ENOMEM && !cfg->err[0])
		snprintf(cfg->err, sizeof(cfg->err), "out of memory");
	if (r == -ENOMEM)
		kiln_vm_config_set_prepared(cfg, NULL); /* make() never ran: taken here */
	strs_free(&paths);
	return r;
}

/* Classify the end the way kiln-vmm's exit status always has. */
static enum kiln_vm_exit classify(kiln_vm *vm)
{
	struct timeline *t = vm_timeline(vm->vm);

	switch (vm->res.exit) {
	case VM_EXIT_RESET:
		/* A restored guest's init started before the snapshot. */
		if (vm_restored(vm->vm) || timeline_has(t, "init_started"))
			return KILN_VM_EXIT_RESET;
		return KILN_VM_EXIT_EARLY_RESET;
	case VM_EXIT_TRIPLE_FAULT:
		/* After kiln-init asked for the reset, a triple fault is Linux's
		 * last-resort way of resetting (or an AP dying in the reboot IPI
		 * storm): the reset the guest wanted, not a crash. */
		if (timeline_has(t, "shutdown_requested"))
			return KILN_VM_EXIT_RESET;
		return KILN_VM_EXIT_TRIPLE_FAULT;
	case VM_EXIT_STOPPED:
		return KILN_VM_EXIT_STOPPED;
	default:
		return KILN_VM_EXIT_FAILURE;
	}
}

static int run_here(kiln_vm *vm)
{
	struct err e = { { 0 } };
	struct vm_result res = { 0 };
	int r = vm_run(vm->vm, &res, &e);

	pthread_mutex_lock(&vm->lk);
	if (r < 0) {
		handle_err(vm->err, r, &e);
		res.exit = VM_EXIT_FAILURE;
		snprintf(res.msg, sizeof(res.msg), "%s", vm->err);
	}
	vm->res = res;
	vm->exit = classify(vm);
	vm->ended = 1;
	pthread_cond_broadcast(&vm->cv);
	pthread_mutex_unlock(&vm->lk);
	return r;
}

static void *runner(void *arg)
{
	run_here(arg);
	return NULL;
}

/* What the VM's files hold, read now: a restored VM's snapshot, every
 * disk overlay's header; after the caller's own steps (kiln-vmm's jail),
 * on the restore thread under its filter (vm_load). */
static int load(kiln_vm *vm)
{
	struct err e = { { 0 } };
	int r = vm_load(vm->vm, &e);

	return r < 0 ? vm_fail(vm, r, &e) : 0;
}

/* Mark started, build the threads' seccomp filters and load what the
 * VM's files hold before any VM thread exists; -EALREADY when it was
 * started. */
static int claim(kiln_vm *vm)
{
	int r = 0;

	/* The restore timeline's legs after vm_ready: the caller's own steps
	 * (kiln-vmm: control socket, jail), the filters, then the snapshot
	 * read (restore_state_disks .. restored). */
	if (vm_restored(vm->vm))
		timeline_mark(vm_timeline(vm->vm), "run_start");
	pthread_mutex_lock(&vm->lk);
	if (vm->started) {
		snprintf(vm->err, sizeof(vm->err), "the VM was started already");
		r = -EALREADY;
	}
	vm->started = 1;
	pthread_mutex_unlock(&vm->lk);
	if (!r && (r = vm_seccomp_prepare(vm)) < 0) {
		pthread_mutex_lock(&vm->lk);
		vm->started = 0;
		pthread_mutex_unlock(&vm->lk);
	}
	if (!r && vm_restored(vm->vm))
		timeline_mark(vm_timeline(vm->vm), "seccomp_built");
	if (!r && (r = load(vm)) < 0) {
		pthread_mutex_lock(&vm->lk);
		vm->started = 0;
		pthread_mutex_unlock(&vm->lk);
	}
	return r;
}

int kiln_vm_start(kiln_vm *vm)
{
	int r;

	if ((r = claim(vm)))
		return r;
	if ((r = thread_start(&vm->runner, runner, vm))) {
		pthread_mutex_lock(&vm->lk);
		vm->started = 0;
		snprintf(vm->err, sizeof(vm->err), "cannot start the VM's thread: %s", strerror(r));
		pthread_mutex_unlock(&vm->lk);
		return -r;
	}
	return 0;
}

int kiln_vm_run(kiln_vm *vm)
{
	int r;

	if ((r = claim(vm)))
		return r;
	vm->joined = 1; /* no runner thread to join */
	return run_here(vm);
}

int kiln_vm_wait(kiln_vm *vm, int timeout_ms)
{
	struct timespec dl;
	int r = 0, join = 0;

	mono_deadline_in(&dl, timeout_ms); /* vm->cv runs on CLOCK_MONOTONIC */
	pthread_mutex_lock(&vm->lk);
	if (!vm->started) {
		pthread_mutex_unlock(&vm->lk);
		return -EINVAL;
	}
	while (!vm->ended && r == 0) {
		if (timeout_ms < 0)
			r = pthread_cond_wait(&vm->cv, &vm->lk);
		else if (timeout_ms == 0)
			r = ETIMEDOUT;
		else
			r = pthread_cond_timedwait(&vm->cv, &vm->lk, &dl);
	}
	if (vm->ended && !vm->joined) {
		vm->joined = 1;
		join = 1;
	}
	pthread_mutex_unlock(&vm->lk);
	if (join)
		pthread_join(vm->runner, NULL);
	return vm->ended ? 0 : -ETIMEDOUT;
}

int kiln_vm_stop(kiln_vm *vm)
{
	vm_request_stop(vm->vm);
	return 0;
}

int kiln_vm_pause(kiln_vm *vm)
{
	struct err e = { { 0 } };
	int r = vm_pause(vm->vm, &e);

	return r < 0 ? vm_fail(vm, r, &e) : 0;
}

int kiln_vm_resume(kiln_vm *vm)
{
	struct err e = { { 0 } };
	int r = vm_resume(vm->vm, &e);

	return r < 0 ? vm_fail(vm, r, &e) : 0;
}

int kiln_vm_is_paused(const kiln_vm *vm)
{
	return vm_is_paused(vm->vm);
}

int kiln_vm_snapshot_layered(kiln_vm *vm, const char *dir, const char *base, unsigned flags)
{
	struct vm_snapshot_info info = { 0 };
	struct err e = { { 0 } };
	int r = vm_snapshot(vm->vm, dir, !!(flags & KILN_SNAPSHOT_COMPRESS), base, &info, &e);

	if (r < 0)
		return vm_fail(vm, r, &e);
	pthread_mutex_lock(&vm->lk);
	vm->snap = info;
	pthread_mutex_unlock(&vm->lk);
	return 0;
}

int kiln_vm_snapshot(kiln_vm *vm, const char *dir, unsigned flags)
{
	return kiln_vm_snapshot_layered(vm, dir, NULL, flags);
}

int kiln_vm_snapshot_base(const kiln_vm *vm, char *buf, size_t n, uint64_t *pages)
{
	kiln_vm *v = (kiln_vm *)vm; /* the lock is not part of the value */
	int layered;

	pthread_mutex_lock(&v->lk);
	layered = v->snap.base[0] != 0;
	if (buf && n)
		snprintf(buf, n, "%s", v->snap.base);
	if (pages)
		*pages = v->snap.dirty_pages;
	pthread_mutex_unlock(&v->lk);
	return layered;
}

void kiln_vm_snapshot_stats(const kiln_vm *vm, uint64_t *memory_bytes, uint64_t *stored_bytes,
			    uint64_t *state_bytes, uint64_t *disk_bytes, double *ms)
{
	kiln_vm *v = (kiln_vm *)vm; /* the lock is not part of the value */
	struct vm_snapshot_info s;

	pthread_mutex_lock(&v->lk);
	s = v->snap;
	pthread_mutex_unlock(&v->lk);
	if (memory_bytes)
		*memory_bytes = s.memory_bytes;
	if (stored_bytes)
		*stored_bytes = s.memory_stored_bytes;
	if (state_bytes)
		*state_bytes = s.state_bytes;
	if (disk_bytes)
		*disk_bytes = s.disk_bytes;
	if (ms)
		*ms = s.ms;
}

int kiln_vm_firewall_set(kiln_vm *vm, const char *json, size_t len, size_t *cut)
{
	struct err e = { { 0 } };
	size_t n = 0;
	int r = vm_firewall_set(vm->vm, json, len, &n, &e);

	if (r < 0)
		return vm_fail(vm, r, &e);
	if (cut)
		*cut = n;
	return 0;
}

int kiln_vm_share_graft(kiln_vm *vm, const char *tag, const char *name, int fd)
{
	struct err e = { { 0 } };
	int r = vm_share_graft(vm->vm, tag, name, fd, &e);

	return r < 0 ? vm_fail(vm, r, &e) : 0;
}

int kiln_vm_firewall_get(kiln_vm *vm, char **json)
{
	struct err e = { { 0 } };

	*json = vm_firewall_get(vm->vm, &e);
	return *json ? 0 : vm_fail(vm, -ENODEV, &e);
}

void kiln_vm_destroy(kiln_vm *vm)
{
	if (!vm)
		return;
	pthread_mutex_lock(&vm->lk);
	int started = vm->started;
	pthread_mutex_unlock(&vm->lk);
	if (started) {
		vm_request_stop(vm->vm);
		kiln_vm_wait(vm, -1);
	}
	vm_destroy(vm->vm);
	vm_seccomp_free(vm);
	strs_free(&vm->owned);
	pthread_cond_destroy(&vm->cv);
	pthread_mutex_destroy(&vm->lk);
	free(vm);
}

const char *kiln_vm_errmsg(const kiln_vm *vm)
{
	return vm->err;
}

size_t kiln_vm_errmsg_copy(const kiln_vm *vm, char *buf, size_t n)
{
	kiln_vm *v = (kiln_vm *)vm;
	size_t len;

	pthread_mutex_lock(&v->lk);
	len = strlen(v->err);
	if (n)
		snprintf(buf, n, "%s", v->err);
	pthread_mutex_unlock(&v->lk);
	return len;
}

enum kiln_vm_exit kiln_vm_exit_reason(const kiln_vm *vm)
{
	kiln_vm *v = (kiln_vm *)vm;
	enum kiln_vm_exit x;

	pthread_mutex_lock(&v->lk);
	x = v->ended ? v->exit : KILN_VM_EXIT_NONE;
	pthread_mutex_unlock(&v->lk);
	return x;
}

const char *kiln_vm_exit_name(enum kiln_vm_exit reason)
{
	switch (reason) {
	case KILN_VM_EXIT_RESET:
		return "reset";
	case KILN_VM_EXIT_EARLY_RESET:
		return "reset_before_init";
	case KILN_VM_EXIT_TRIPLE_FAULT:
		return "triple_fault";
	case KILN_VM_EXIT_FAILURE:
		return "failure";
	case KILN_VM_EXIT_STOPPED:
		return "stopped";
	default:
		return "running";
	}
}

const char *kiln_vm_exit_message(const kiln_vm *vm)
{
	return kiln_vm_exit_reason(vm) == KILN_VM_EXIT_NONE ? "" : vm->res.msg;
}

size_t kiln_vm_timeline_count(const kiln_vm *vm)
{
	return (size_t)timeline_count(vm_timeline(vm->vm));
}

int kiln_vm_timeline_get(const kiln_vm *vm, size_t i, char *name, size_t name_size, uint64_t *ns,
			 int *derived)
{
	if (i > TIMELINE_MAX)
		return -ERANGE;
	return timeline_get(vm_timeline(vm->vm), (int)i, name, name_size, ns, derived);
}

int kiln_vm_timeline_find(const kiln_vm *vm, const char *name, uint64_t *ns)
{
	return timeline_find(vm_timeline(vm->vm), name, ns);
}

int kiln_vm_restored(const kiln_vm *vm)
{
	return vm_restored(vm->vm);
}

const char *kiln_vm_vsock_path(const kiln_vm *vm)
{
	return vm->cfg.vsock.uds;
}
