/*
 * rt_shim: a container's shim (design: docs/oci-runtime.md "Processes").
 * create forks it; it is the process whose pid the engine's --pid-file
 * gets, and it lives exactly as long as the container's process:
 *
 *  - it runs the bundle's prestart and createRuntime hooks;
 *  - it boots the container's VM: kiln-vmm as its child, pid 1 of a new
 *    pid namespace, jailed (--jail, the container's host id), kiln's
 *    oci-init.cpio as
 *    the initrd and the bundle's rootfs (and the bind directories) as
 *    virtio-fs shares handed over by descriptor;
 *  - it waits for the agent, sends ctr_create, and connects the
 *    container's stdin, stdout and stderr to its own fds 0-2 (the
 *    engine's pipes, FIFOs or files) with fd_relay pumps, so no byte is
 *    lost and EOF passes both ways;
 *  - it records the container as created (state.json), writes the pid
 *    file last, and answers create's ready pipe (`ok`, or `err MESSAGE`
 *    and it exits);
 *  - it serves shim.sock (start, kill, resize) and forwards TERM, INT,
 *    HUP, QUIT, USR1 and USR2 it receives itself to the container;
 *  - when the container ended it drains the output, writes <id>/exit,
 *    kills and reaps kiln-vmm and ends as the container did (rt_exit):
 *    conmon and containerd's shim read its wait status as the
 *    container's. A VM that dies first is exit 255 (vm_crashed).
 *
 * Contract: runs in create's forked child (single-threaded), never
 * returns: the shim is a process of its own whose exit status is the
 * container's, so it ends with _exit (the one departure from "no exit
 * outside main": it is this process's main). It keeps nothing of
 * create's but fds 0-2, the ready pipe, the state directory and --log,
 * and leaves the working directory. Its messages after create go to --log only: fds 1 and 2 are
 * the container's.
 */
#ifndef KILN_RT_SHIM_H
#define KILN_RT_SHIM_H

#include "api/runtime/rt_cli.h"
#include "api/runtime/rt_dir.h"
#include "api/runtime/rt_config.h"
#include "api/runtime/rt_plan.h"
#include "api/runtime/rt_state.h"

#define RT_BOOT_MS 120000    /* kiln-vmm start to the agent's answer (nested harness: slow) */
#define RT_AGENT_MS 60000    /* one agent request's answer */
#define RT_DRAIN_MS 2000     /* the output's last bytes to the engine after the exit */
#define RT_VMM_LOG "vmm.log" /* kiln-vmm's stderr, in the container's directory */
#define RT_VMM_LOG_OLD "vmm.log.1"
#define RT_VMM_LOG_CAP (1u << 20) /* then vmm.log starts over: a hostile VMM fills no disk */

struct rt_shim_args {
	const struct rt_cmd *cmd;
	const struct rt_config *cfg; /* the container's shim: its bundle's config */
	const struct rt_plan *plan;
	const struct rt_process *proc; /* the process: cfg's, or exec's */
	json_t *exec_process;     /* an exec shim: ctr_exec's process, NULL: the container's shim */
	struct rt_state_rec *rec; /* status creating, bundle, rootfs, id_range set */
	const char *dir;          /* <root>/<id>, absolute */
	char jail[RT_JAIL_PATH_MAX]; /* rt_jail_path(dir): kiln-vmm's sockets */
	int dirfd;                   /* the same, open */
	int ready_fd;                /* create's pipe: one rt_shim_proto reply line */
	int log_fd;                  /* --log, -1: none */
	char pid_file[RT_PATH_MAX];  /* --pid-file made absolute, "" none */
	/* restore: the checkpoint's snapshot (--image-path, absolute), its
	 * VM's --net value ("" none); NULL: a create. restore_cid: the
	 * container's ID in the guest when it is not cmd's (a restored one's,
	 * also for its exec shims) */
	const char *restore, *restore_net, *restore_cid;
	/* a pod's further container (its shim and its exec shims): the
	 * sandbox's ID, whose VM it runs in; NULL: its own VM */
	const char *sandbox;
};

/*
 * An exec shim (exec_process set; `kiln-runtime exec`): the same process
 * for one further process in the running container, whose exec number
 * is the shim's pid: it connects to the container's agent (no VM of its
 * own, no shim.sock, no record), sends ctr_exec and ctr_start, writes
 * the pid file, relays the process's stdio or terminal, forwards the
 * signals it gets and ends as the process did. A SIGKILL to the exec
 * shim cannot be forwarded: the process then runs on until the
 * container ends.
 */

/*
 * A pod's further container's shim (sandbox set, no exec_process): the
 * container's shim without a VM of its own. It connects to the
 * sandbox's agent, sends ctr_create (the root and binds in the pod's
 * share), serves shim.sock and the stdio as above, and when the process
 * ended sends ctr_delete so the guest forgets it. A sandbox VM that
 * ends first ends it as a crash (exit 255).
 */

/* The shim; exits (as the container did, or 1 when create failed). */
__attribute__((noreturn)) void rt_shim_main(const struct rt_shim_args *a);

#endif
