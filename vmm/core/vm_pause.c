/*
 * Pausing a running VM: every vCPU parked outside KVM_RUN with its last
 * exit completed, and the device thread stopped (see vm.h).
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>

#include "vmm/core/vm_internal.h"

void vcpu_park(struct vcpu *v)
{
	struct vm *vm = v->vm;

	/*
	 * An exit we just handled may be half done inside KVM (the data of a
	 * port or MMIO read goes into registers on the next entry). KVM_RUN
	 * with immediate_exit completes it and returns -EINTR without running
	 * the guest, so the registers a snapshot reads are whole.
	 */
	v->run->immediate_exit = 1;
	ioctl(v->fd, KVM_RUN, 0);
	pthread_mutex_lock(&vm->lock);
	if (!vm->stopping)
		v->run->immediate_exit = 0; /* vm_stop's stays */
	vm->parked++;
	pthread_cond_broadcast(&vm->pause_cond);
	while (vm->pause_req && !vm->stopping)
		pthread_cond_wait(&vm->pause_cond, &vm->lock);
	vm->parked--;
	pthread_mutex_unlock(&vm->lock);
}

static int started_vcpus(struct vm *vm)
{
	int n = 0;

	for (int i = 0; i < vm->ncpus; i++)
		n += vm->vcpu[i].started;
	return n;
}

int vm_pause(struct vm *vm, struct err *e)
{
	int n;

	if ((n = vm_loaded(vm, "pause", e)))
		return n;
	pthread_mutex_lock(&vm->lock);
	if (vm->stopping) {
		pthread_mutex_unlock(&vm->lock);
		return err_set(e, ESRCH, "cannot pause: the VM has stopped (%s)", vm->result.msg);
	}
	if (vm->paused || vm->pause_req) {
		/* Paused, or another thread is pausing it: wait for that. */
		while (!vm->paused && !vm->stopping)
			pthread_cond_wait(&vm->pause_cond, &vm->lock);
		n = vm->stopping;
		pthread_mutex_unlock(&vm->lock);
		return n ? err_set(e, ESRCH, "cannot pause: the VM stopped meanwhile") : 0;
	}
	__atomic_store_n(&vm->pause_req, 1, __ATOMIC_RELEASE);
	/* As in vm_stop: immediate_exit first, then the kick, so a vCPU between
	 * its check and KVM_RUN returns at once. */
	for (int i = 0; i < vm->ncpus; i++)
		if (vm->vcpu[i].started) {
			vm->vcpu[i].run->immediate_exit = 1;
			pthread_kill(vm->vcpu[i].thread, vm->cfg.kick_signal);
		}
	n = started_vcpus(vm);
	while (vm->parked < n && !vm->stopping)
		pthread_cond_wait(&vm->pause_cond, &vm->lock);
	if (vm->stopping) {
		__atomic_store_n(&vm->pause_req, 0, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&vm->pause_cond);
		pthread_mutex_unlock(&vm->lock);
		return err_set(e, ESRCH, "cannot pause: the VM stopped meanwhile (%s)",
			       vm->result.msg);
	}
	pthread_mutex_unlock(&vm->lock);
	/* vCPUs are parked: no new notifications. Finish the device thread's
	 * work and stop it; its eventfds keep what arrives until resume. */
	event_loop_stop(vm->loop);
	pthread_mutex_lock(&vm->lock);
	vm->paused = 1;
	pthread_cond_broadcast(&vm->pause_cond);
	pthread_mutex_unlock(&vm->lock);
	return 0;
}

int vm_resume(struct vm *vm, struct err *e)
{
	int err = 0;

	pthread_mutex_lock(&vm->lock);
	if (!vm->paused) {
		pthread_mutex_unlock(&vm->lock);
		return err_set(e, EINVAL, "cannot resume: the VM is not paused");
	}
	if (vm->loop && (err = event_loop_start(vm->loop))) {
		pthread_mutex_unlock(&vm->lock);
		return err_set(e, -err, "cannot restart the device thread: %s", strerror(-err));
	}
	vm->paused = 0;
	__atomic_store_n(&vm->pause_req, 0, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&vm->pause_cond);
	pthread_mutex_unlock(&vm->lock);
	return 0;
}

int vm_is_paused(struct vm *vm)
{
	int p;

	pthread_mutex_lock(&vm->lock);
	p = vm->paused;
	pthread_mutex_unlock(&vm->lock);
	return p;
}
