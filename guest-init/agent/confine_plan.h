/*
 * confine_plan: the view of a process started with "confine": true
 * (docs/agent-protocol.md, section 8, "Confinement"), laid out as a list of
 * steps: its own mount namespace whose root is a tmpfs holding
 *
 *   /usr /bin /sbin /lib* /opt   the image's, read-only (symbolic links,
 *                                as in merged-/usr images, are recreated)
 *   /etc                         only CONFINE_ETC's entries, read-only: no
 *                                passwd, group, shadow or anything else
 *   /workspace                   the image's, read-write (with its mounts),
 *                                nosuid and nodev throughout
 *   /tmp, /dev/shm               private tmpfs, empty at each start
 *   /dev                         null zero full random urandom tty, pts
 *   /proc                        a new proc mount, hidepid=invisible
 *
 * then pivot_root into it and make the new root read-only.
 *
 * Contract:
 *  - Pure: what the real root holds comes from a probe callback, so the
 *    plan is unit-tested with a fake filesystem. Built by the agent before
 *    fork(); confine_apply.h runs it in the child.
 *  - The plan holds its strings (no pointers into the caller's memory
 *    except the static mount options), so the child needs nothing else.
 */
#ifndef KILN_CONFINE_PLAN_H
#define KILN_CONFINE_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "api/proto/agent_proto.h"

/* Where the new root is built, in the process's own mount namespace; the
 * directory is created on the guest's /run tmpfs and stays empty there. */
#define CONFINE_ROOT "/run/kiln-confine"
#define CONFINE_WORKSPACE AGENT_WORKSPACE
#define CONFINE_PATH_MAX 256
#define CONFINE_STEPS_MAX 160

enum confine_kind {
	CONFINE_ABSENT,
	CONFINE_DIR,
	CONFINE_LINK, /* target filled */
	CONFINE_NODE, /* anything else: a regular file or a device node */
};

/* What `path` is in the real root (lstat: links are not followed); for a
 * link, its target into link[linksz] (NUL-terminated; too long: ABSENT). */
typedef enum confine_kind (*confine_probe_fn)(void *ctx, const char *path, char *link,
					      size_t linksz);

enum confine_op {
	CONFINE_UNSHARE,  /* unshare(CLONE_NEWNS) */
	CONFINE_PRIVATE,  /* every mount private, recursively: nothing propagates back */
	CONFINE_MKDIR,    /* mkdir(dst, mode); an existing directory is fine */
	CONFINE_FILE,     /* an empty file at dst: a mount point for a bind of a file */
	CONFINE_SYMLINK,  /* symlink(src, dst) */
	CONFINE_MOUNT,    /* mount(fstype, dst, fstype, flags, data) */
	CONFINE_BIND,     /* bind src on dst (flags may add MS_REC) */
	CONFINE_READONLY, /* bind-remount dst read-only, nosuid, nodev */
	CONFINE_NOSUID,   /* dst and every mount below it nosuid, nodev (mount_setattr) */
	CONFINE_PIVOT,    /* make dst the root (pivot_root, or move + chroot on initramfs) */
};

struct confine_step {
	enum confine_op op;
	unsigned long flags;
	unsigned mode;
	const char *fstype, *data; /* static strings */
	char src[CONFINE_PATH_MAX];
	char dst[CONFINE_PATH_MAX];
};

struct confine_plan {
	size_t n;
	struct confine_step step[CONFINE_STEPS_MAX];
};

/* The agent's run-code directory: the interpreters' helpers and one
 * directory per run (agent_run.c). */
#define CONFINE_RUN_DIR "/run/kiln-run"

/*
 * Lay out the view. run_dir: for a run, its own directory, directly under
 * CONFINE_RUN_DIR, shown with the helpers (and no other run's); NULL for
 * an exec or a process, which see nothing of /run. 0, or -ENOENT when
 * there is no /workspace to show (the agent creates it first, so this
 * means it is not a directory), -EINVAL for a run_dir that is not such a
 * directory, -ENAMETOOLONG / -E2BIG if the plan does not fit (a bug,
 * tested).
 */
int confine_plan_build(struct confine_plan *p, confine_probe_fn probe, void *ctx,
		       const char *run_dir);

/* Step i in words for an error message ("mounting tmpfs on /tmp"), with
 * paths as the confined process would see them. */
void confine_step_describe(const struct confine_plan *p, size_t i, char *buf, size_t bufsz);

#endif
