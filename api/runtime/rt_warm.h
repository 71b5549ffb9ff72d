/*
 * rt_warm: warm starts (design: docs/oci-runtime.md "Warm starts").
 *
 * A container without a network interface need not boot its VM: it can
 * resume a snapshot of a VM that booted once with the same kiln-vmm,
 * kernel, initramfs, RAM, vCPUs and shares, whose agent was answering
 * and which had seen no container (its shares were an empty directory).
 * The restore is given the container's own shares; the FUSE server
 * reopens the saved nodes (only the shares' roots) beneath them, so the
 * guest sees the container's files from its first lookup on.
 *
 * The templates live in <root>/.warm/<name>/ (kiln-vmm's snapshot files,
 * root's, 0600: kiln-vmm opens them as root before its jail), each with
 * a lock file <name>.lock: held shared while a VM resumes from it,
 * exclusive while one is made. A name says what it fits (rt_warm_name),
 * so a rebuilt kiln-vmm, kernel or initramfs makes new ones; making one
 * removes those of other builds of kiln-vmm and the initramfs that
 * nobody holds (a lock file stays: creates may hold it open).
 *
 * This file is the pure part (the name, the annotation) and the
 * directory's bookkeeping; the template's VM is the shim's
 * (rt_shim_warm.c).
 */
#ifndef KILN_RT_WARM_H
#define KILN_RT_WARM_H

#include <stdbool.h>
#include <stdint.h>

#include "api/runtime/rt_config.h"
#include "api/runtime/rt_dir.h"
#include "lib/base/err.h"

#define RT_WARM_EMPTY "empty" /* in that: the template VM's shares */
#define RT_WARM_ANNOTATION "io.kiln.warm"
#define RT_WARM_NAME_MAX 48

/* What a template must match besides the files: RAM, vCPUs, shares. */
struct rt_warm_shape {
	unsigned mem_mib, cpus;
	bool root_ro, bro, brw, pod;
};

/* One file a template was made from: kiln-vmm, the kernel, the initrd. */
struct rt_warm_ident {
	uint64_t dev, ino, size, mtime_ns;
};

#define RT_WARM_FILES 3
enum { RT_WARM_VMM, RT_WARM_KERNEL, RT_WARM_INITRD }; /* their order */

/*
 * The template's name for files (kiln-vmm, kernel, initrd) and a shape:
 * "<16 hex digits: kiln-vmm's and the initrd's identity (the build)>-
 * <8 hex digits: the kernel's>-<mem>m<cpus>c-<shares>", the shares a
 * letter each (r root rw, R root ro, o bro, w brw, p pod). Another
 * io.kiln.kernel is another template of the same build.
 */
void rt_warm_name(const struct rt_warm_ident id[RT_WARM_FILES], const struct rt_warm_shape *sh,
		  char out[RT_WARM_NAME_MAX]);

/* The build's part of a name (its first 16 characters): making a
 * template sweeps those of other builds. */
#define RT_WARM_IDENT_LEN 16

/*
 * The annotation io.kiln.warm: absent or "true" 1 (warm when it can),
 * "false" 0 (always boot), anything else -EINVAL with e.
 */
int rt_warm_wanted(const struct rt_config *c, struct err *e);

/* The three files' identities (stat, following links as exec does). */
int rt_warm_idents(const char *const paths[RT_WARM_FILES], struct rt_warm_ident id[RT_WARM_FILES],
		   struct err *e);

/*
 * <root>/.warm made (0700) and opened; *fd its descriptor.
 */
int rt_warm_dir_open(const char *root, int *fd, struct err *e);

/*
 * Take the template `name` in warmfd: its lock shared when it exists
 * (1, *lockfd held until rt_warm_release), else exclusive (0: the caller
 * makes it into <name>.tmp, then rt_warm_install; *lockfd held). Waits
 * for a maker at most wait_ms. -errno with e.
 */
int rt_warm_take(int warmfd, const char *name, int wait_ms, int *lockfd, struct err *e);

/* <name>.tmp (a fresh, empty directory for the snapshot's files). */
int rt_warm_tmp_make(int warmfd, const char *name, int *tmpfd, struct err *e);

/*
 * <name>.tmp renamed to <name>; then every other build's template that
 * nobody holds removed. The lock stays the caller's.
 */
int rt_warm_install(int warmfd, const char *name, struct err *e);

/* Drop a lock rt_warm_take returned (-1: none). */
void rt_warm_release(int lockfd);

#endif
