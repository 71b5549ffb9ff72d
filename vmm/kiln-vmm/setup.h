/*
 * setup: kiln-vmm's command line and every step from it to a VM ready to
 * run, jailed when asked: the one sequence kiln-vmm runs and the escape
 * suite (tests/escape/) runs before playing the compromised VMM, so what
 * the suite attacks is exactly what kiln-vmm holds.
 *
 *   struct vmm_opts o;
 *   switch (vmm_opts_parse(argc, argv, &o)) ...     // cfg filled, or usage
 *   vmm_setup(&o, &vm, &ctl, &e);                   // created, jailed, control served
 *   kiln_vm_run(vm) ...                             // kiln-vmm; the suite attacks instead
 *
 * vmm_setup may fork (a standalone --jail becomes pid 1 of a new pid
 * namespace; the parent waits and exits with the child's status), closes
 * every descriptor not given on the command line, and installs kiln-vmm's
 * signal handlers: it is a program's step, not library code.
 */
#ifndef KILN_VMM_SETUP_H
#define KILN_VMM_SETUP_H

#include <stdint.h>

#include <kiln/kiln.h>

#include "lib/base/err.h"
#include "vmm/kiln-vmm/control.h"
#include "vmm/kiln-vmm/devspec.h"

#define VMM_KEEP_MAX 16

struct vmm_opts {
	kiln_vm_config *cfg;
	const char *control_path, *firewall_path, *egress_proxy, *restore_dir, *kernel, *jail_dir;
	unsigned log_flags;
	int timeline, json, console, nets, net_rate;
	int keep[VMM_KEEP_MAX], nkeep; /* descriptors given on the command line (--share fd=N) */
	int prep_fds[2], nprep;        /* a parked kiln-vmm's prepared KVM VM (vmm_opts_prepared) */
	struct devspec_state dev;      /* the device options so far */
	uint64_t uid, gid;
};

/*
 * Parse kiln-vmm's options into o (o->cfg allocated: vmm_opts_free).
 * VMM_EXIT_OK to go on; VMM_EXIT_USAGE with the message printed; or
 * VMM_OPTS_DONE when --help or --version printed what was asked.
 */
#define VMM_OPTS_DONE (-1)
int vmm_opts_parse(int argc, char **argv, struct vmm_opts *o);
void vmm_opts_free(struct vmm_opts *o);

/*
 * Give o's config the KVM parts a parked kiln-vmm made while it waited
 * (kiln_vm_prepare; park.h), keeping their descriptors through --jail's
 * descriptor hygiene. Dropped (freed) when the setup will fork into a pid
 * namespace: a KVM VM is its maker's process's alone.
 */
void vmm_opts_prepared(struct vmm_opts *o, kiln_vm_prepared *p);

/* kiln-vmm --help. */
extern const char vmm_usage[];

/*
 * From parsed options to a VM ready to run: pid namespace and descriptor
 * hygiene (--jail), the firewall file, the VM created or restored, the
 * share descriptors it was given closed (the VM holds its own, confined
 * ones), the control socket bound, the jail entered, the control thread
 * started. VMM_EXIT_OK with *vm (and *ctl when --control) set;
 * VMM_EXIT_USAGE or VMM_EXIT_SETUP with e->msg. o->cfg is consumed.
 */
int vmm_setup(struct vmm_opts *o, kiln_vm **vm, struct control **ctl, struct err *e);

#endif
