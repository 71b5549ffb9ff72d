/*
 * vm_seccomp: a kiln_vm's seccomp filters (docs/security.md, "seccomp
 * filters per thread"). The role programs are built once, on the
 * thread that starts the VM (or the first that asks for one), before any
 * VM thread exists; vmm/core calls vm_seccomp_enter on each VM thread as
 * it starts, which only loads the prebuilt program on that thread.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "libkiln/handles.h"

static const enum seccomp_role role_of[] = {
	[VM_THREAD_VCPU] = SECCOMP_ROLE_VCPU,
	[VM_THREAD_DEVICE] = SECCOMP_ROLE_DEVICE,
	[VM_THREAD_RUNNER] = SECCOMP_ROLE_CONTROL,
	[VM_THREAD_RESTORE] = SECCOMP_ROLE_RESTORE,
};

/* Build under vm->lk held. */
static int build_locked(kiln_vm *vm)
{
	enum seccomp_filter_mode mode = vm->seccomp == KILN_SECCOMP_LOG ? SECCOMP_FILTER_LOG
									: SECCOMP_FILTER_KILL;
	struct err e = { { 0 } };
	int r;

	if (vm->seccomp == KILN_SECCOMP_OFF || vm->filters_built)
		return 0;
	for (int i = 0; i < SECCOMP_ROLE_COUNT; i++) {
		if ((r = seccomp_filter_build((enum seccomp_role)i, mode, &vm->filters[i], &e)) <
		    0) {
			for (int j = 0; j < i; j++)
				seccomp_prog_free(&vm->filters[j]);
			return handle_err(vm->err, r, &e);
		}
	}
	vm->filters_built = 1;
	return 0;
}

int vm_seccomp_prepare(kiln_vm *vm)
{
	int r;

	pthread_mutex_lock(&vm->lk);
	r = build_locked(vm);
	pthread_mutex_unlock(&vm->lk);
	return r;
}

int vm_seccomp_enter(void *ctx, enum vm_thread_role role)
{
	kiln_vm *vm = ctx;

	if (vm->seccomp == KILN_SECCOMP_OFF)
		return 0;
	/* Built by kiln_vm_start/run before the first VM thread: read-only now. */
	if (!vm->filters_built || (unsigned)role >= sizeof(role_of) / sizeof(role_of[0]))
		return -EINVAL;
	return seccomp_filter_load(&vm->filters[role_of[role]]);
}

int kiln_seccomp_apply_control(kiln_vm *vm)
{
	int r;

	if (vm->seccomp == KILN_SECCOMP_OFF)
		return 0;
	if ((r = vm_seccomp_prepare(vm)) < 0)
		return r;
	if ((r = seccomp_filter_load(&vm->filters[SECCOMP_ROLE_CONTROL])) < 0) {
		pthread_mutex_lock(&vm->lk);
		snprintf(vm->err, sizeof(vm->err),
			 "seccomp: cannot install the control thread's filter: %s", strerror(-r));
		pthread_mutex_unlock(&vm->lk);
	}
	return r;
}

void vm_seccomp_free(kiln_vm *vm)
{
	for (int i = 0; i < SECCOMP_ROLE_COUNT; i++)
		seccomp_prog_free(&vm->filters[i]);
	vm->filters_built = 0;
}
