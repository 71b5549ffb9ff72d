/*
 * agent_ring: the output ring of one spawned process (docs/agent-protocol.md,
 * section 7.4: "ring", "seq", "gap").
 *
 * Contract:
 *  - Pure: no syscalls, no threads, no locking. The process table holds its
 *    lock around every call.
 *  - Every output byte gets a sequence number (seq), counted from 0 over
 *    stdout and stderr together. The ring keeps the newest bytes: at most
 *    `cap` of them. Each byte keeps the stream it was written to: a mark is
 *    stored wherever the stream changes (never for consecutive writes to
 *    the same stream), and the ring keeps at most cap / 8 marks. When marks
 *    run out, the oldest run of bytes is dropped as if overwritten, so a
 *    process that alternates streams every few bytes keeps less than `cap`
 *    bytes, never more memory than 2 * cap.
 *  - Byte `seq` lives at data[seq % cap], so finding a cursor's byte is
 *    arithmetic; finding its stream is a binary search over the marks.
 *  - Readers own their cursor (a seq). A cursor older than the oldest byte
 *    held reads as one gap (the bytes it missed), then the data from the
 *    oldest byte on. A slow reader never holds the writer back.
 *  - Memory is allocated with malloc at init. kiln-init pins glibc's mmap
 *    threshold (agent.c), so a ring of 128 KiB or more is a fresh anonymous
 *    mapping whose pages the kernel commits only as output arrives.
 */
#ifndef KILN_AGENT_RING_H
#define KILN_AGENT_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/proto/agent_proto.h"

/* Marks per byte of capacity: one 8-byte mark per 8 bytes at most. */
#define AGENT_RING_MARK_DIV 8u
#define AGENT_RING_MARKS_MIN 16u

struct agent_ring {
	uint8_t *data;
	size_t cap;
	uint64_t head;   /* seq of the next byte written (= all output so far) */
	uint64_t tail;   /* seq of the oldest byte held; head - tail <= cap */
	uint64_t *marks; /* circular: (first seq of a run << 1) | stream */
	size_t mcap, mfirst, mcount;
	uint64_t total[2]; /* bytes ever written to stdout, stderr */
};

enum agent_ring_kind {
	AGENT_RING_NONE, /* the cursor is at the head: nothing new */
	AGENT_RING_DATA, /* `len` bytes of `stream` from `seq` were copied out */
	AGENT_RING_GAP,  /* `len` bytes from `seq` were overwritten before this reader got them */
};

struct agent_ring_chunk {
	enum agent_ring_kind kind;
	enum agent_stream stream; /* DATA only */
	uint64_t seq;
	uint64_t len;
};

/* 0, -EINVAL (cap is 0 or above AGENT_RING_MAX), -ENOMEM. */
int agent_ring_init(struct agent_ring *r, size_t cap);
void agent_ring_free(struct agent_ring *r);

/* Append output of one stream (AGENT_STDOUT or AGENT_STDERR). Never fails. */
void agent_ring_write(struct agent_ring *r, enum agent_stream s, const void *buf, size_t n);

/*
 * Read from *cursor: a gap if the cursor is older than the tail (the cursor
 * moves to the tail), else up to `max` bytes of one stream into buf (the
 * cursor moves past them), else NONE. A cursor past the head is treated as
 * the head.
 */
enum agent_ring_kind agent_ring_read(const struct agent_ring *r, uint64_t *cursor, void *buf,
				     size_t max, struct agent_ring_chunk *out);

/*
 * Where an attach starts (section 7.4, attach.from): the oldest byte held
 * by default, the head for "now" or for a `from` past the head, otherwise
 * `from` itself (older than the tail: the reader's first read is a gap).
 */
uint64_t agent_ring_attach_seq(const struct agent_ring *r, bool from_now, bool has_from,
			       uint64_t from);

#endif
