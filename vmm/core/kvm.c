#include "vmm/core/kvm.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define CAP(x)        \
	{             \
		x, #x \
	}
const struct kvm_cap_need kvm_required_caps[] = {
	CAP(KVM_CAP_IRQCHIP),      CAP(KVM_CAP_USER_MEMORY),
	CAP(KVM_CAP_SET_TSS_ADDR), CAP(KVM_CAP_EXT_CPUID),
	CAP(KVM_CAP_PIT2),         CAP(KVM_CAP_IMMEDIATE_EXIT),
	CAP(KVM_CAP_IRQFD),        CAP(KVM_CAP_IOEVENTFD),
	CAP(KVM_CAP_MP_STATE),     { 0, NULL },
};

int kvm_open(struct err *e)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	int err;

	if (fd < 0) {
		err = errno;
		if (err == ENOENT)
			return err_set(e, err,
				       "/dev/kvm does not exist: this machine has no KVM (enable virtualization, "
				       "load kvm_intel or kvm_amd, or use tests/harness/run)");
		if (err == EACCES)
			return err_set(e, err,
				       "/dev/kvm: permission denied: add this user to group 'kvm'");
		return err_set(e, err, "/dev/kvm: %s", strerror(err));
	}
	/* A software KVM for PVM guests only: ordinary kernels die in it with
	 * an emulation error deep in boot, so refuse it up front. */
	if (access("/sys/module/kvm_pvm", F_OK) == 0 && access("/sys/module/kvm_amd", F_OK) != 0 &&
	    access("/sys/module/kvm_intel", F_OK) != 0) {
		close(fd);
		return err_set(e, ENOTSUP,
			       "/dev/kvm is kvm-pvm, which runs only PVM-enabled guests: use a host with "
			       "hardware KVM, or tests/harness/run");
	}
	if (ioctl(fd, KVM_GET_API_VERSION, 0) != KVM_API_VERSION) {
		close(fd);
		return err_set(e, ENOTSUP, "/dev/kvm speaks an API version other than %d",
			       KVM_API_VERSION);
	}
	for (const struct kvm_cap_need *c = kvm_required_caps; c->name; c++) {
		if (ioctl(fd, KVM_CHECK_EXTENSION, c->cap) <= 0) {
			close(fd);
			return err_set(e, ENOTSUP,
				       "KVM lacks %s, which kiln-vmm needs (host kernel too old?)",
				       c->name);
		}
	}
	return fd;
}
