/*
 * rt_plan: what a parsed config.json becomes: the VM's size, the host
 * cgroup it runs in, the host bind mounts to prepare, the kernel command
 * line, kiln-vmm's argument vector and the agent's ctr_create request
 * (docs/agent-protocol.md 7.9).
 *
 * Contract: pure (jansson only); decisions, no system calls. Every value
 * that reaches kiln-vmm's options or the guest's kernel command line is
 * checked here although the config was checked on the way in: a space or
 * a quote on the command line would add kernel parameters. Refusals are
 * one line naming the field and why (-EINVAL with e).
 *
 * Shares: the rootfs is tag "r", mounted at /run/kiln/root in the guest
 * (":ro" with root.readonly); the config's bind mounts are bound on the
 * host at <state>/binds/ro/<n> and <state>/binds/rw/<n> (never a file's
 * parent directory: Podman's userdata directory also holds config.json
 * and the pid file), and those two directories are the shares "bro"
 * (read-only) and "brw", so a bind costs no device of its own.
 *
 * Pods (rt_pod.h): a pod's sandbox VM also has the share "pod", its
 * state directory's pod/, empty at boot (virtio-mmio has no hotplug, and
 * kiln-vmm serves a clone of the share taken then, which later host
 * mounts never reach). Each further container of the pod gets a slot,
 * slots/<id>/root (its rootfs bound there on the host) and
 * slots/<id>/binds/{ro,rw}/<n> (its binds), and the slot, cloned with its
 * mounts, is grafted into the running VM's share as <id> (kiln-vmm's
 * control socket, `graft pod ID`): its ctr_create names <id>/root and
 * <id>/binds/... in the share "pod". A read-only one is a read-only mount
 * on the host.
 */
#ifndef KILN_RT_PLAN_H
#define KILN_RT_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api/runtime/nl_parse.h"
#include "api/runtime/rt_config.h"
#include "api/runtime/rt_warm.h"
#include "api/runtime/rt_pod.h"
#include "lib/base/err.h"

#define RT_RAM_DEFAULT_MIB 512 /* no memory limit and no io.kiln.memory */
#define RT_RAM_MIN_MIB 64      /* kiln-init, the agent and a container's page cache */
#define RT_RAM_MAX_MIB (1024u * 1024)
/* What kiln-vmm itself takes beside guest RAM (its threads, virtqueues,
 * the FUSE server's buffers): host memory.max is RAM plus this. A first
 * bound, to be measured (design 2.7). */
#define RT_VMM_OVERHEAD_MIB 64
#define RT_CPUS_MAX 64               /* kiln-vmm --cpus */
#define RT_CPU_PERIOD_DEFAULT 100000 /* cgroup v2's cpu.max period */
#define RT_MOUNTS_MAX 256            /* AGENT_CTR_MOUNTS_MAX */
#define RT_BINDS_MAX RT_MOUNTS_MAX
#define RT_MOUNT_OPTIONS_MAX 64 /* AGENT_CTR_OPTIONS_MAX */
#define RT_MOUNT_DATA_MAX 4095  /* AGENT_CTR_DATA_MAX */
#define RT_CID_MAX 128          /* AGENT_CID_MAX */
#define RT_CMDLINE_MAX 2048
#define RT_ARGV_MAX 48
#define RT_ARGV_BUF 16384

#define RT_SHARE_ROOT "r"
#define RT_SHARE_BINDS_RO "bro"
#define RT_SHARE_BINDS_RW "brw"
#define RT_SHARE_POD "pod"
#define RT_POD_DIR "pod"     /* in a pod sandbox's state directory: the share */
#define RT_POD_SLOTS "slots" /* there too: each further container's slot, grafted */
#define RT_POD_ROOT "root"   /* slots/<id>/root: a member's rootfs */
#define RT_BINDS_DIR "binds" /* the binds in a state directory (rt_binds) */

/* The VM's size and the host's limits on it. */
struct rt_sizing {
	unsigned mem_mib;
	unsigned cpus;
	int64_t host_memory_max; /* bytes: RAM + RT_VMM_OVERHEAD_MIB */
	int64_t cpu_quota;       /* host cpu.max: -1 "max" */
	uint64_t cpu_period;
	const char *kernel; /* io.kiln.kernel: a file name in kiln's lib dir, NULL: the default */
};

/* Guest RAM: io.kiln.memory (MiB), else linux.resources.memory.limit,
 * else RT_RAM_DEFAULT_MIB. vCPUs: io.kiln.cpus, else the CPU quota over
 * its period rounded up, else the count of cpuset.cpus, else 1. */
int rt_plan_sizing(const struct rt_config *c, struct rt_sizing *s, struct err *e);

#define RT_CPU_MAX_LEN 48

/*
 * update --resources req against the VM booted with boot: what reaches
 * the host cgroup. 1 with its new cpu.max value in cpu_max (the quota
 * and period: the VM's vCPUs are fixed at boot, their share of the host
 * is not; a quota alone keeps the period, a period alone keeps the quota
 * read from current, cpu.max's present value, NULL: unlimited; a quota
 * of -1 is unlimited); 0 when nothing changes there (a memory limit at or above the
 * VM's RAM: its RAM is the bound; a pids limit, which the caller takes
 * to the guest); -EINVAL with e for what a running VM cannot take: RAM
 * below its size, cpuset.cpus, a pids limit above the guest's bound.
 */
int rt_plan_update(const struct rt_sizing *boot, const struct rt_resources *req,
		   const char *current, char cpu_max[RT_CPU_MAX_LEN], struct err *e);

/*
 * The host cgroup directory for the container's shim and kiln-vmm, into
 * out[cap]: cgroupfs form (an absolute or relative path under
 * /sys/fs/cgroup), or with systemd the "slice:prefix:name" form made
 * directly (slice "a-b.slice" -> a.slice/a-b.slice, unit
 * "prefix-name.scope"; systemd is not told: there is no D-Bus client).
 * No cgroupsPath: /sys/fs/cgroup/kiln-runtime/<id> (systemd:
 * system.slice/kiln-runtime-<id>.scope). A ".." or empty component is
 * refused.
 */
int rt_plan_cgroup(const struct rt_config *c, const char *id, bool systemd, char *out, size_t cap,
		   struct err *e);

/* A host bind mount the runtime prepares before the VM starts: source
 * bound at <state>/binds/{ro,rw}/<index>. */
struct rt_bind {
	const char *source;
	bool readonly;
	bool recursive; /* option rbind: its submounts too */
	unsigned index;
};

struct rt_plan {
	json_t *ctr_create; /* the agent request, owned */
	struct rt_bind binds[RT_BINDS_MAX];
	size_t nbinds;
	bool has_ro_binds, has_rw_binds;
	bool pod_share;     /* a pod's sandbox: its VM has the share "pod" */
	const char *member; /* a pod's further container: its ID (the build's), else NULL */
	char cmdline[RT_CMDLINE_MAX]; /* kiln-vmm --cmdline */
};

/* ctr_create, the binds and the kernel command line for container id
 * (its cid in the guest) in its pod role. rt_plan_free releases plan. */
int rt_plan_build(const struct rt_config *c, const char *id, enum rt_pod_role pod,
		  struct rt_plan *plan, struct err *e);

void rt_plan_free(struct rt_plan *plan);

/*
 * The kernel command line for a VM of shape sh (its shares' mount
 * points) and hostname (NULL or "": none) into out[cap]; E2BIG when it
 * does not fit.
 */
int rt_plan_cmdline(const struct rt_warm_shape *sh, const char *hostname, char *out, size_t cap,
		    struct err *e);

/* The VM's shape (rt_warm.h) for plan, c and size (NULL: RAM and vCPUs 0). */
void rt_plan_shape(const struct rt_plan *p, const struct rt_config *c, const struct rt_sizing *size,
		   struct rt_warm_shape *sh);

/* A process as ctr_create's and ctr_exec's `process` object
 * (docs/agent-protocol.md 7.9); a new reference, NULL: out of memory. */
json_t *rt_plan_process(const struct rt_process *pr);

#define RT_NET_OPT_MAX 128

/*
 * The VM's network from the namespace's interface (nl_pick_iface) and
 * the TAP named tap: the kiln-vmm --net value into net[RT_NET_OPT_MAX]
 * ("tap=TAP,mac=..,
 * ip=ADDR/PREFIX", the packet filter's source address) and kernel
 * parameters appended to cmdline[cap] (kiln.ip= kiln.gw= kiln.mtu=).
 * The first IPv4 address is the guest's; an interface without one is
 * refused (IPv6-only networks: not yet).
 */
int rt_plan_net(const struct nl_iface *f, const char *tap, char *cmdline, size_t cap, char *net,
		struct err *e);

/* kiln-vmm's launch: paths chosen by the caller, shares by descriptor. */
struct rt_vmm_launch {
	const char *vmm, *kernel, *initrd;
	const char *vsock, *control; /* in jail_dir */
	const char *jail_dir;
	uint32_t jail_id;
	int root_fd, bro_fd, brw_fd, pod_fd; /* -1: no such share */
	bool root_readonly;
	const struct rt_sizing *size;
	const char *cmdline;
	const char *net;     /* rt_plan_net's --net value, NULL: no NIC (loopback only) */
	const char *restore; /* a checkpoint's snapshot to resume (--restore), NULL: boot */
};

struct rt_argv {
	char *argv[RT_ARGV_MAX + 1]; /* NULL-terminated, into buf */
	size_t argc;
	char buf[RT_ARGV_BUF];
	size_t used;
};

int rt_plan_vmm_argv(const struct rt_vmm_launch *l, struct rt_argv *out, struct err *e);

#endif
