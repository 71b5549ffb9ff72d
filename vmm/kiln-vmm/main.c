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
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* kiln-vmm is a user of libkiln's public API like any embedder. */
#include <kiln/kiln.h>

/* The control socket server is kiln-vmm's own (a program module, over
 * the public API); libkiln has no control socket. */
#include "vmm/kiln-vmm/control.h"
#include "vmm/kiln-vmm/park.h"
#include "vmm/kiln-vmm/setup.h"

#include "lib/base/term_mode.h"
#include "vmm/control/exit_status.h"

/*
 * A kiln-vmm bug must still leave a trace in the log kilnd keeps: the
 * signal and a backtrace on stderr (async-signal-safe calls only), then
 * the default action, so the exit status still says which signal.
 */
static void crash_report(int sig)
{
	static const char head[] =
		"kiln-vmm: crashed (a kiln-vmm bug; please report it), backtrace:\n";
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
				fprintf(stderr, "%s{\"name\":\"%s\",\"ms\":%.3f%s}", i ? "," : "",
					name, ns / 1e6, derived ? ",\"derived\":true" : "");
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

int main(int argc, char **argv)
{
	struct vmm_opts o;
	struct control *ctl;
	struct err err = { { 0 } };
	kiln_vm *vm;
	kiln_vm_prepared *prep = NULL;
	const char *reason;
	int status;

	/* One malloc arena for the whole process: by default glibc gives
	 * each thread that allocates one of its own (64 MiB reserved), and
	 * the pages it touched stay kiln-vmm's after free (168 KiB from
	 * the seccomp filters' compilation alone). Before any thread. */
	mallopt(M_ARENA_MAX, 1);
	/* glibc raises its mmap threshold to the size of each mmapped block
	 * freed: after one vsock connection's 256 KiB buffer (allocated
	 * while the host lags) the next ones would come from the heap and
	 * stay there, dirty, after free. Setting it keeps it where it is. */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	install_crash_report();
	/* A zygote: the command line comes later, over the socket; KVM's
	 * part of the VM is made while it waits (without a usable KVM, the
	 * claimed kiln-vmm says so as any other would). */
	if (argc > 1 && strcmp(argv[1], "--park") == 0) {
		int r;

		kiln_vm_prepare(&prep, NULL, 0);
		r = park_wait(argc, argv, &argc, &argv, &err);
		if (r) {
			kiln_vm_prepared_free(prep);
			if (r < 0)
				fprintf(stderr, "kiln-vmm: %s\n", err.msg);
			return r < 0 ? VMM_EXIT_SETUP : VMM_EXIT_OK;
		}
	}
	status = vmm_opts_parse(argc, argv, &o);
	if (status != VMM_EXIT_OK) {
		kiln_vm_prepared_free(prep);
		vmm_opts_free(&o);
		return status == VMM_OPTS_DONE ? VMM_EXIT_OK : status;
	}
	vmm_opts_prepared(&o, prep);
	if ((status = vmm_setup(&o, &vm, &ctl, &err)) != VMM_EXIT_OK) {
		fprintf(stderr, "kiln-vmm: %s\n", err.msg);
		return status;
	}
	/* Keys go to the guest; ISIG stays so ^C still stops kiln-vmm. */
	if (o.console)
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
	if (o.timeline)
		print_timeline(vm, o.json, reason, status);
	if (status == VMM_EXIT_EARLY_RESET)
		fprintf(stderr,
			"kiln-vmm: guest reset before its init started (kernel panic? run with --console to see it)\n");
	else if (status != VMM_EXIT_OK)
		fprintf(stderr, "kiln-vmm: %s\n", kiln_vm_exit_message(vm));
	kiln_vm_destroy(vm);
	return status;
}
