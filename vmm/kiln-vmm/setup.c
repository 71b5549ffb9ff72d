/* From kiln-vmm's parsed options to a VM ready to run; see setup.h. */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base/fd_io.h"
#include "vmm/control/exit_status.h"
#include "vmm/kiln-vmm/jailed.h"
#include "vmm/kiln-vmm/setup.h"

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

/*
 * Read the --firewall rule set into the config, so a bad one is a usage
 * error with the rule parser's own message (the field it names).
 * VMM_EXIT_OK or VMM_EXIT_USAGE with e set.
 */
static int load_firewall(kiln_vm_config *cfg, const char *path, struct err *e)
{
	struct stat st;
	char *buf;
	size_t have = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), r;

	if (fd < 0) {
		err_set(e, errno, "--firewall %s: %s", path, strerror(errno));
		return VMM_EXIT_USAGE;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > KILN_VM_FIREWALL_MAX) {
		err_set(e, EINVAL, "--firewall %s: not a regular file of at most %d bytes", path,
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
		err_set(e, EIO, "--firewall %s: cannot read it", path);
		free(buf);
		return VMM_EXIT_USAGE;
	}
	r = kiln_vm_config_set_firewall(cfg, buf, have);
	free(buf);
	if (r < 0) {
		err_set(e, -r, "--firewall %s: %s", path, kiln_vm_config_errmsg(cfg));
		return VMM_EXIT_USAGE;
	}
	/* `http` rules without the proxy: a usage error now, not a failed create. */
	if (kiln_vm_config_needs_egress_proxy(cfg)) {
		err_set(e, EINVAL, "--firewall %s: %s", path, KILN_VM_EGRESS_PROXY_MISSING);
		return VMM_EXIT_USAGE;
	}
	return VMM_EXIT_OK;
}

/* libkiln's jail step, its message into e. */
static int jail_step(const char *dir, uint32_t uid, uint32_t gid, struct err *e)
{
	char msg[sizeof(e->msg)];
	int r = kiln_jail_enter(dir, uid, gid, 0, msg, sizeof(msg));

	return r < 0 ? err_set(e, -r, "%s", msg) : 0;
}

/* The VM, created or restored; o->cfg consumed. A restore only opens the
 * snapshot here (as root: /dev/kvm, images, TAP, passt and shares are
 * opened now too); kiln_vm_run reads it, after the jail and under the
 * restore thread's filter. */
static int make_vm(struct vmm_opts *o, kiln_vm **vm, struct err *e)
{
	int r = o->restore_dir ? kiln_vm_restore(o->cfg, o->restore_dir, vm)
			       : kiln_vm_create(o->cfg, vm);

	if (r < 0)
		err_set(e, -r, "%s", kiln_vm_config_errmsg(o->cfg));
	vmm_opts_free(o);
	/* Each share's device holds a descriptor of its own, a detached
	 * mount of just that directory; the one given on the command line
	 * is still in the host's mount tree, where ".." leads out of any
	 * jail: it must not outlive the setup. */
	for (int i = 0; i < o->nkeep; i++)
		close(o->keep[i]);
	o->nkeep = 0;
	return r < 0 ? VMM_EXIT_SETUP : VMM_EXIT_OK;
}

void vmm_opts_prepared(struct vmm_opts *o, kiln_vm_prepared *p)
{
	if (!p)
		return;
	if (o->jail_dir && getpid() != 1) {
		kiln_vm_prepared_free(p);
		return;
	}
	o->nprep = kiln_vm_prepared_fds(p, o->prep_fds, 2);
	if (o->nprep < 0)
		o->nprep = 0;
	kiln_vm_config_set_prepared(o->cfg, p);
}

int vmm_setup(struct vmm_opts *o, kiln_vm **vm, struct control **ctl, struct err *e)
{
	int status;

	*vm = NULL;
	*ctl = NULL;
	if (o->jail_dir) {
		int keep[VMM_KEEP_MAX + 2], n = 0;

		/* Standalone: become pid 1 of a new pid namespace (kilnd starts
		 * kiln-vmm in one already). Returns in the child only. */
		if (getpid() != 1 && jailed_fork_pid1(e) < 0) {
			vmm_opts_free(o);
			return VMM_EXIT_SETUP;
		}
		for (int i = 0; i < o->nkeep; i++)
			keep[n++] = o->keep[i];
		for (int i = 0; i < o->nprep; i++)
			keep[n++] = o->prep_fds[i];
		jailed_close_fds(keep, n);
		pid1_signals();
	}
	if (o->firewall_path &&
	    (status = load_firewall(o->cfg, o->firewall_path, e)) != VMM_EXIT_OK) {
		vmm_opts_free(o);
		return status;
	}
	kiln_vm_config_set_log(o->cfg, STDERR_FILENO, o->log_flags);
	raise_fd_limit();
	if (o->console)
		kiln_vm_config_set_console(o->cfg, STDIN_FILENO, STDOUT_FILENO);
	/* vCPUs are kicked out of KVM_RUN with SIGUSR1 (the config's
	 * default): kiln-vmm owns its process, so it takes libkiln's no-op
	 * handler for it. */
	kiln_kick_signal_install(SIGUSR1);
	if ((status = make_vm(o, vm, e)) != VMM_EXIT_OK)
		return status;
	/* Bound as the caller, before the jail; served after it (the jail
	 * needs a single thread). */
	if ((o->control_path && control_open(*vm, o->control_path, ctl, e) < 0) ||
	    (o->jail_dir && jail_step(o->jail_dir, (uint32_t)o->uid, (uint32_t)o->gid, e) < 0) ||
	    (*ctl && control_start(*ctl, e) < 0)) {
		control_stop(*ctl);
		*ctl = NULL;
		kiln_vm_destroy(*vm);
		*vm = NULL;
		return VMM_EXIT_SETUP;
	}
	/* Setup's scratch (the filters' compilation, the kernel's and
	 * image's parsing) is freed but its pages are still ours: give
	 * them back before the guest's long idle life. */
	malloc_trim(0);
	return VMM_EXIT_OK;
}
