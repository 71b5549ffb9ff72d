/* The shim's VM: kiln-runtime's files, kiln-vmm started jailed as the
 * shim's child, the agent waited for; see rt_shim.h. */
#include "api/runtime/rt_shim_vmm.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <linux/close_range.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/base/mono.h"
#include "lib/base/sig_reset.h"

/* name beside the binary (the build tree), else in ../lib/kiln from it. */
static int find_one(const char *here, const char *build_name, const char *lib_name, char *out,
		    const char *what, struct err *e)
{
	snprintf(out, RT_PATH_MAX, "%s/%s", here, build_name);
	if (access(out, R_OK) == 0)
		return 0;
	snprintf(out, RT_PATH_MAX, "%s/../lib/kiln/%s", here, lib_name);
	if (access(out, R_OK) == 0)
		return 0;
	return err_set(e, ENOENT,
		       "%s not found: looked for %s/%s and %s/../lib/kiln/%s (make install puts it "
		       "there)",
		       what, here, build_name, here, lib_name);
}

int rt_files_find(const char *kernel_name, struct rt_files *f, struct err *e)
{
	char exe[RT_PATH_MAX], kernel[RT_PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	const char *here;

	if (n <= 0)
		return err_set(e, errno, "finding kiln-runtime's own directory: %s",
			       strerror(errno));
	exe[n] = '\0';
	here = dirname(exe);
	snprintf(kernel, sizeof(kernel), "kernel/%s", kernel_name ? kernel_name : "vmlinux");
	if (find_one(here, "kiln-vmm", "../../bin/kiln-vmm", f->vmm, "kiln-vmm", e) < 0 ||
	    find_one(here, kernel, kernel_name ? kernel_name : "vmlinux", f->kernel,
		     "the guest kernel", e) < 0 ||
	    find_one(here, "rootfs/oci-init.cpio", "oci-init.cpio", f->initrd,
		     "kiln-runtime's initramfs", e) < 0)
		return -ENOENT;
	return 0;
}

/* The child's side: everything before exec, then exec. Only
 * async-signal-safe calls (the shim is single-threaded, still). */
static __attribute__((noreturn)) void vmm_child(const struct rt_vmm_spawn *s)
{
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	sig_reset_all();
	if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 || dup2(s->log_fd, 2) < 0)
		_exit(127);
	/* Nothing of the shim's but the shares reaches kiln-vmm: the
	 * engine's stdio, the state directory, the ready pipe stay here. */
	syscall(SYS_close_range, 3, ~0u, CLOSE_RANGE_CLOEXEC);
	for (size_t i = 0; i < s->nkeep; i++)
		if (s->keep[i] >= 0 && fcntl(s->keep[i], F_SETFD, 0) < 0)
			_exit(127);
	setsid();
	execv(s->argv[0], s->argv);
	/* raw write: after a bare clone, nothing that could take a lock */
	(void)!write(2, "kiln-runtime: cannot execute kiln-vmm\n", 38);
	_exit(127);
}

int rt_vmm_spawn(const struct rt_vmm_spawn *s, int *pid, struct err *e)
{
	/* As fork, plus the pid namespace: kiln-vmm is its pid 1, so its
	 * jail needs no fork of its own and its end ends every thread. */
	pid_t p = (pid_t)syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, NULL, NULL, NULL, NULL);

	if (p < 0)
		return err_set(e, errno, "starting kiln-vmm: clone: %s", strerror(errno));
	if (p == 0)
		vmm_child(s);
	*pid = p;
	return 0;
}

/* kiln-vmm's end as words for a message. */
static void vmm_status_text(int status, char *out, size_t cap)
{
	if (WIFEXITED(status))
		snprintf(out, cap, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(out, cap, "was killed by signal %d", WTERMSIG(status));
	else
		snprintf(out, cap, "ended (status 0x%x)", status);
}

int rt_vmm_gone(int pid, char *why, size_t cap)
{
	int status;
	pid_t r = waitpid(pid, &status, WNOHANG);

	if (r != pid)
		return 0;
	vmm_status_text(status, why, cap);
	return 1;
}

int rt_vmm_wait_agent(const struct agent_client *c, int vmm_pid, int boot_ms,
		      struct capped_log *log, struct err *e)
{
	int64_t dl = mono_deadline_ms(boot_ms);
	struct agent_client_err ae;
	char why[64];

	for (;;) {
		int left = (int)(dl - mono_ms());

		capped_log_pump(log);
		if (rt_vmm_gone(vmm_pid, why, sizeof(why)))
			return err_set(e, ECHILD, "kiln-vmm %s while the guest booted", why);
		if (left <= 0)
			return err_set(e, ETIMEDOUT,
				       "the guest's agent did not answer within %d ms of kiln-vmm's "
				       "start",
				       boot_ms);
		if (agent_client_wait_ready_hold(c, left < 500 ? left : 500, 5000, &ae) == 0)
			return 0;
	}
}
