/*
 * kiln-vmm's exit statuses: the interface kilnd
 * (api/kilnd/supervision/sandbox_vmm.c) reads them through, kept here
 * beside the control protocol so both sides name the same numbers
 * (docs/kiln-vmm.md).
 */
#ifndef KILN_VMM_EXIT_STATUS_H
#define KILN_VMM_EXIT_STATUS_H

enum vmm_exit_status {
	VMM_EXIT_OK = 0,          /* the guest reset or powered off */
	VMM_EXIT_SETUP = 1,       /* gave up before the guest ran (a restore: unusable snapshot) */
	VMM_EXIT_USAGE = 2,       /* bad arguments */
	VMM_EXIT_EARLY_RESET = 3, /* the guest reset before init started (kernel panic?) */
	VMM_EXIT_TRIPLE = 4,      /* guest triple fault */
	VMM_EXIT_KVM = 5,         /* KVM failure or an exit kiln cannot handle */
};

#endif
