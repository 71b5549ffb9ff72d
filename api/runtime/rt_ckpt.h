/*
 * rt_ckpt: a container's checkpoint as kiln-runtime keeps it
 * (docs/oci-runtime.md "Checkpoint and restore"): the kiln-vmm snapshot
 * of its VM, copied out of the VM's jail into the engine's --image-path,
 * and the container's record beside it (RT_CKPT_STATE), which restore
 * reads for the guest's container ID.
 *
 * The snapshot's files are bytes a jailed, possibly compromised kiln-vmm
 * wrote: only the names kiln-vmm writes, each a regular file of the VM's
 * uid with one link, opened without following links, at most the VM's
 * RAM, are copied (not parsed); the next kiln-vmm reads them, in its
 * jail (docs/security.md, "Restore"). kiln-runtime writes RT_CKPT_STATE
 * and RT_CKPT_INVENTORY itself.
 *
 * Contract: thin syscalls.
 */
#ifndef KILN_RT_CKPT_H
#define KILN_RT_CKPT_H

#include <stdint.h>

#include "api/runtime/rt_state.h"
#include "lib/base/err.h"

#define RT_CKPT_STATE "kiln-state.json"
#define RT_CKPT_INVENTORY "inventory.img" /* what engines stat (criu's name) */
#define RT_CKPT_FILES_MAX 64
#define RT_CKPT_WORK "snap"  /* in the jail directory, the VM's uid's */
#define RT_CKPT_SNAP "image" /* in that: the snapshot kiln-vmm writes */

/* <jail>/RT_CKPT_WORK made (or emptied) for the jailed kiln-vmm (uid and
 * gid id, 0700); *fd opened on it. */
int rt_ckpt_work_open(const char *jail, uint32_t id, int *fd, struct err *e);

/* Who wrote the snapshot: the jailed kiln-vmm's uid, and its largest
 * file (the VM's RAM and a margin). */
struct rt_ckpt_src {
	uint32_t uid;
	uint64_t max_bytes;
	const char *what; /* what the copy is for, in messages: "checkpoint" */
};

/* The snapshot in workfd/RT_CKPT_SNAP copied into the directory image
 * (made 0700 when missing), holes kept; then RT_CKPT_INVENTORY and rec as
 * RT_CKPT_STATE. */
int rt_ckpt_export(int workfd, const char *image, const struct rt_state_rec *rec,
		   const struct rt_ckpt_src *from, struct err *e);

/* The snapshot in workfd/RT_CKPT_SNAP copied into the directory dstfd
 * (kiln-vmm's files only, checked as rt_ckpt_export does), holes kept. */
int rt_ckpt_copy(int workfd, int dstfd, const struct rt_ckpt_src *from, struct err *e);

/* kiln-vmm's snapshot of the VM whose jail is jail into
 * <jail>/RT_CKPT_WORK/RT_CKPT_SNAP through its control socket (what
 * names the VM in e: `what`). */
int rt_ckpt_snapshot(const char *jail, const char *what, struct err *e);

/* RT_CKPT_STATE of image, decoded strictly (rt_state_decode). */
int rt_ckpt_read(const char *image, struct rt_state_rec *rec, struct err *e);

/* Remove <jail>/RT_CKPT_WORK and the regular files in it. Quiet. */
void rt_ckpt_work_remove(const char *jail);

#endif
