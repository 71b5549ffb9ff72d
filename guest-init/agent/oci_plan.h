/*
 * oci_plan: a container's filesystem (docs/agent-protocol.md, 7.9
 * `ctr_create`, steps 4 and 5) laid out as a list of steps, from the
 * request and the guest's mount table:
 *
 *   the root share bound on itself (the container's own copy of it, in its
 *   mount namespace), each mount in the request's order with its flags and
 *   filesystem data (a bind: the source beneath its share, with the mount
 *   attributes its options ask for), runc's default devices in a tmpfs
 *   /dev, then pivot_root, then `/` read-only when asked.
 *
 * Contract:
 *  - Pure: the shares' mount points come from /proc/self/mountinfo's text
 *    (oci_share_find), so the plan is unit-tested without mounting
 *    anything. Built by the agent before the clone; oci_apply.h runs it in
 *    the child, which may not allocate: everything it needs is here.
 *  - Destinations are kept relative to the container's root (no leading
 *    '/'), because the child resolves them inside it (RESOLVE_IN_ROOT), and
 *    a bind's source relative to its share (RESOLVE_BENEATH and
 *    RESOLVE_NO_SYMLINKS): the plan never names a guest path the request
 *    chose.
 *  - Strings point into the request (which outlives the child's start) or
 *    into memory the plan owns; oci_plan_free releases it.
 */
#ifndef KILN_OCI_PLAN_H
#define KILN_OCI_PLAN_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/proto/agent_proto.h"

enum oci_op {
	OCI_ROOT,  /* bind src (the root share's mount point) on itself: the new root */
	OCI_MOUNT, /* mount fstype on dst with flags and data */
	OCI_BIND,  /* clone src beneath share (AT_RECURSIVE with rbind), set attr, attach on dst */
	OCI_DEVICES, /* runc's default devices and links in dst (a tmpfs /dev) */
	OCI_PIVOT,   /* pivot_root into the new root, the old one detached */
	OCI_READONLY /* the new root read-only, its other attributes kept */
};

struct oci_step {
	enum oci_op op;
	const char *dst;             /* relative to the container's root; "" is the root */
	const char *src;             /* relative to share ("." = it) */
	const char *share;           /* OCI_ROOT, OCI_BIND: the share's mount point in the guest */
	const char *fstype;          /* OCI_MOUNT */
	const char *data;            /* OCI_MOUNT: the filesystem's options, or NULL */
	unsigned long flags;         /* OCI_MOUNT: MS_ flags */
	bool recursive;              /* OCI_BIND: rbind */
	uint64_t attr_set, attr_clr; /* OCI_BIND: mount_setattr's */
	size_t mount;                /* the request's mount this step makes (for messages) */
};

struct oci_plan {
	size_t n;
	struct oci_step *step;
	char **owned; /* strings the plan allocated */
	size_t nowned;
};

/*
 * The mount point of the virtio-fs share tagged `tag` in mountinfo
 * (/proc/self/mountinfo's text): the first virtiofs mount of that source
 * that shows the share's root, with its octal escapes undone. 0, -ENOENT
 * when none, -ENAMETOOLONG when it does not fit out.
 */
int oci_share_find(const char *mountinfo, const char *tag, char *out, size_t outsz);

/* The filesystem type of the mount that is the root of mountinfo's reader
 * ("rootfs" for an initramfs), in out; -ENOENT when none. */
int oci_root_fstype(const char *mountinfo, char *out, size_t outsz);

/*
 * Lay out c's filesystem, the shares looked up in mountinfo. 0, or -1
 * with err set: not_found (a share no virtio-fs mount has), bad_field (a
 * mount over the root itself), busy (out of memory).
 */
int oci_plan_build(struct oci_plan *p, const struct agent_ctr_create *c, const char *mountinfo,
		   struct agent_err *err);
void oci_plan_free(struct oci_plan *p);

/* Step i in words for an error message ("mounting proc on /proc"), with
 * paths as the container sees them. */
void oci_step_describe(const struct oci_plan *p, const struct agent_ctr_create *c, size_t i,
		       char *buf, size_t bufsz);

/* ---- an exec's namespaces (7.9 `ctr_exec`) ---- */

/* The namespaces a container's init gets of its own (clone3's flags);
 * the network and the clock are the guest's. */
#define OCI_CTR_NAMESPACES \
	(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWCGROUP)

/*
 * What an exec's child joins itself, in order, through the init's pidfd:
 * every namespace of OCI_CTR_NAMESPACES but the PID namespace (a process
 * cannot move itself into one: the agent enters it for the fork), the
 * mount namespace last (once in it, the child's root is the container's).
 * oci_join_count() steps; oci_join_flag(i) is step i's CLONE_NEW* flag,
 * oci_join_name(i) its name as /proc/PID/ns calls it ("?" out of range).
 */
size_t oci_join_count(void);
int oci_join_flag(size_t i);
const char *oci_join_name(size_t i);

/*
 * The next PATH candidate for `name` (no '/'), like execvp: *cursor starts
 * at path_var and moves on; an empty entry is the cwd's ("name" as is).
 * Writes "dir/name" into out without allocating (the child runs it after
 * pivot_root). 1 with a candidate, 0 when the entries are used up; a
 * candidate that does not fit is skipped.
 */
int oci_path_next(const char **cursor, const char *name, char *out, size_t outsz);

/* PATH's value in an environment of "KEY=VALUE" strings, or the
 * protocol's default when it has none. */
const char *oci_env_path(const char *const *env, size_t envc);

#endif
