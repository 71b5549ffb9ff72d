/*
 * snapshot_file: the snapshot state file (vCPU, irqchip, clock and device
 * state) as bytes, independent of KVM's structs.
 *
 * Contract: a writer builds the file in memory (a header naming the kiln
 * version and the host CPU, then tagged sections, then a CRC-32 trailer);
 * a reader parses an untrusted buffer into a read-only view and refuses it
 * with its own error code and message for each way it can be wrong: not a
 * snapshot, truncated, damaged (checksum), unsupported format version,
 * written by another kiln version, taken on an incompatible CPU, malformed
 * or duplicate section, too large. Every length in the file is checked
 * against the buffer before use; the view points into the caller's buffer
 * and is valid while that buffer is. Pure: no I/O, no KVM (snapshot_io
 * reads and writes the files; docs/architecture.md, "Snapshot files",
 * gives the byte layout).
 */
#ifndef KILN_SNAPSHOT_FILE_H
#define KILN_SNAPSHOT_FILE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/base/err.h"

/* The files of a snapshot directory. */
#define SNAP_STATE_FILE "state"
#define SNAP_MEM_FILE "memory"    /* raw, sparse: mmap it MAP_PRIVATE */
#define SNAP_MEMZ_FILE "memory.z" /* zlib runs (snapshot_mem.h) */

#define SNAP_MAGIC "KILNSNAP" /* 8 bytes, no NUL */
#define SNAP_FORMAT_VERSION 1
#define SNAP_HEADER_SIZE 96
#define SNAP_SECTION_HEADER_SIZE 32
#define SNAP_TRAILER_SIZE 8
#define SNAP_END_MAGIC 0x444e454bu /* "KEND" */
#define SNAP_NAME_MAX 15           /* a section name: 1..15 printable chars */
#define SNAP_VERSION_MAX 31        /* the kiln version string */
#define SNAP_VENDOR_MAX 15         /* the CPU vendor string */

/*
 * Limits a file must respect (the reader refuses more with
 * SNAP_ERR_TOO_BIG, the writer refuses to produce more): 256 vCPUs with a
 * dozen sections each plus every device fit many times over.
 */
#define SNAP_MAX_SECTIONS 16384
#define SNAP_STATE_MAX (256u << 20)

/* The distinct refusals (negative errno values, as every vmm/ function). */
#define SNAP_ERR_MAGIC (-ENOEXEC)          /* not a kiln snapshot */
#define SNAP_ERR_TRUNCATED (-ENODATA)      /* shorter than its header says */
#define SNAP_ERR_CHECKSUM (-EBADMSG)       /* damaged: CRC or trailer wrong */
#define SNAP_ERR_FORMAT (-EPROTONOSUPPORT) /* format version this kiln cannot read */
#define SNAP_ERR_KILN_VERSION (-ESTALE)    /* written by another kiln version */
#define SNAP_ERR_CPU (-ENODEV)             /* taken on an incompatible host CPU */
#define SNAP_ERR_MALFORMED (-EUCLEAN)      /* bad section header, name, padding, count */
#define SNAP_ERR_DUPLICATE (-EEXIST)       /* two sections with one (type, index) */
#define SNAP_ERR_TOO_BIG (-EFBIG)          /* over SNAP_STATE_MAX or SNAP_MAX_SECTIONS */

/*
 * Section types. The payload of each is defined by the code that saves
 * and loads it; `index` is the vCPU number for per-vCPU state, the device
 * slot for device state, 0 otherwise. Numbers are never reused.
 */
enum snap_section_type {
	SNAP_SEC_VM_INFO = 1,    /* memory size, vCPU count, devices: the VM's shape */
	SNAP_SEC_VCPU_REGS = 16, /* general registers */
	SNAP_SEC_VCPU_SREGS,     /* segment, control registers, pending interrupt */
	SNAP_SEC_VCPU_XSAVE,     /* FPU/SSE/AVX state */
	SNAP_SEC_VCPU_XCRS,
	SNAP_SEC_VCPU_MSRS, /* including the TSC */
	SNAP_SEC_VCPU_LAPIC,
	SNAP_SEC_VCPU_EVENTS,
	SNAP_SEC_VCPU_MP_STATE,
	SNAP_SEC_VCPU_DEBUGREGS,
	SNAP_SEC_VCPU_CPUID, /* the CPUID table the vCPU was given */
	SNAP_SEC_PIC = 48,   /* index 0 master, 1 slave */
	SNAP_SEC_IOAPIC,
	SNAP_SEC_PIT,
	SNAP_SEC_CLOCK,       /* kvmclock */
	SNAP_SEC_DEVICE = 64, /* index = device slot; name = device kind */
	SNAP_SEC_SERIAL,
	SNAP_SEC_BOOT_TIMER,
	SNAP_SEC_SNAP_ID = 96, /* the snapshot's id (snapshot_layer.h) */
};

/*
 * Who wrote the snapshot / who would restore it. The reader refuses a
 * file whose record differs from the restoring host's.
 */
struct snap_cpu {
	char vendor[SNAP_VENDOR_MAX + 1]; /* CPUID leaf 0, e.g. "AuthenticAMD" */
	uint32_t family, model;           /* CPUID leaf 1, extended fields folded in */
	uint64_t features;                /* snap_digest() of what the guest was shown */
};

struct snap_compat {
	char kiln_version[SNAP_VERSION_MAX + 1];
	struct snap_cpu cpu;
};

/* Fill vendor, family and model from CPUID leaf 0 (ebx, ecx, edx) and leaf 1 eax. */
void snap_cpu_from_cpuid(struct snap_cpu *c, uint32_t ebx0, uint32_t ecx0, uint32_t edx0,
			 uint32_t eax1);

/*
 * FNV-1a 64 over `len` bytes, continuing from `h` (start with
 * SNAP_DIGEST_INIT): digest the CPUID entries, XCR0 and MSR list the
 * guest was given into snap_cpu.features.
 */
#define SNAP_DIGEST_INIT 0xcbf29ce484222325ull
uint64_t snap_digest(uint64_t h, const void *p, size_t len);

/* ---- writing ---- */

struct snap_writer {
	uint8_t *buf;
	size_t len, cap;
	uint32_t count;
	size_t open;    /* offset of the section being written, 0 when none */
	int finished;   /* snap_finish succeeded: nothing more may be added */
	int err;        /* first error; every later call returns it ... */
	struct err why; /* ... with this message */
};

/*
 * Start a file for `who` (kiln version and CPU). Returns 0, or
 * -EINVAL/-ENOMEM with a message.
 */
int snap_writer_init(struct snap_writer *w, const struct snap_compat *who, struct err *e);

/* Free the writer's buffer (and any buffer snap_finish returned). Safe on a zeroed writer. */
void snap_writer_free(struct snap_writer *w);

/*
 * Append one whole section. `name`: 1..SNAP_NAME_MAX printable ASCII
 * characters. Returns 0 or -errno (-EINVAL for a bad name, a type of 0 or
 * a section already open; SNAP_ERR_TOO_BIG past the limits; -ENOMEM).
 */
int snap_add(struct snap_writer *w, uint32_t type, uint32_t index, const char *name,
	     const void *data, size_t len, struct err *e);

/*
 * Or build a section piece by piece: snap_begin, any number of snap_put*
 * (the payload is appended as given; the snap_put_u* helpers write little
 * endian), snap_end. Errors stick: after one, every call returns it, so a
 * saver may check only snap_end's (or snap_finish's) result.
 */
int snap_begin(struct snap_writer *w, uint32_t type, uint32_t index, const char *name,
	       struct err *e);
int snap_put(struct snap_writer *w, const void *data, size_t len, struct err *e);
int snap_put_u8(struct snap_writer *w, uint8_t v, struct err *e);
int snap_put_u16(struct snap_writer *w, uint16_t v, struct err *e);
int snap_put_u32(struct snap_writer *w, uint32_t v, struct err *e);
int snap_put_u64(struct snap_writer *w, uint64_t v, struct err *e);
int snap_end(struct snap_writer *w, struct err *e);

/*
 * Close the file: count, size, checksum. *out and *out_len are the file's
 * bytes, owned by the writer (freed by snap_writer_free); nothing may be
 * appended afterwards. Duplicate (type, index) pairs are refused here with
 * SNAP_ERR_DUPLICATE. Returns 0 or -errno.
 */
int snap_finish(struct snap_writer *w, const uint8_t **out, size_t *out_len, struct err *e);

/* ---- reading ---- */

struct snap_section {
	uint32_t type, index;
	char name[SNAP_NAME_MAX + 1];
	const uint8_t *data; /* into the parsed buffer */
	uint64_t len;
};

struct snap_view {
	struct snap_compat origin; /* what the header says */
	uint32_t format_version;
	uint32_t count;
	struct snap_section *sections; /* in file order */
	uint32_t *sorted;              /* indexes into sections, by (type, index) */
};

/*
 * Parse `len` bytes of a state file into `v`. Checks, in this order, with
 * the SNAP_ERR_* code of the first failure: magic, size (truncated, or
 * longer than the header says), checksum, format version, header fields,
 * every section (bounds, name, zero padding, count), duplicates; then,
 * when `host` is not NULL, the kiln version (must be equal) and the CPU
 * (vendor, family, model, features must be equal), naming what differs.
 * Pass host == NULL only to inspect a snapshot, never to restore it.
 * On success free the view with snap_view_free.
 */
int snap_parse(const void *buf, size_t len, const struct snap_compat *host, struct snap_view *v,
	       struct err *e);

/* Refuse a snapshot whose origin is not `host` (snap_parse calls this). */
int snap_check_compat(const struct snap_compat *origin, const struct snap_compat *host,
		      struct err *e);

void snap_view_free(struct snap_view *v);

/* The section (type, index), or NULL. O(log n). */
const struct snap_section *snap_find(const struct snap_view *v, uint32_t type, uint32_t index);

/*
 * A bounds-checked payload decoder: snap_get* take bytes from the front
 * and, past the end, return zeros and mark the cursor bad; snap_cursor_end
 * then refuses the section (SNAP_ERR_MALFORMED, naming it) when it was
 * short, or had bytes left over.
 */
struct snap_cursor {
	const struct snap_section *s;
	uint64_t off;
	int bad;
};

void snap_cursor_init(struct snap_cursor *c, const struct snap_section *s);
void snap_get(struct snap_cursor *c, void *out, size_t len);
uint8_t snap_get_u8(struct snap_cursor *c);
uint16_t snap_get_u16(struct snap_cursor *c);
uint32_t snap_get_u32(struct snap_cursor *c);
uint64_t snap_get_u64(struct snap_cursor *c);
int snap_cursor_end(const struct snap_cursor *c, struct err *e);

#endif
