/*
 * agent_watch_events: the pure half of the agent's `watch` request
 * (docs/agent-protocol.md, 7.8): inotify records in, fs_event lines out.
 * agent_watch.c owns the inotify descriptor, the directory scans and the
 * connection; everything it decides is decided here, without syscalls, so
 * that unit tests and the fuzz target can drive it with any record.
 *
 * Contract:
 *  - Records are parsed from a read() buffer with bounds checks
 *    (watch_record_next): a record whose name runs past the buffer ends
 *    the buffer, it is never read past.
 *  - Directories: a table of inotify watch descriptor -> path below the
 *    watched root ("" is the root). At most max_watches entries and
 *    WATCH_DIR_BYTES of paths; a directory beyond that is not watched and
 *    an `overflow` event with reason "watch_limit" says so.
 *  - Translation: create (IN_CREATE, or IN_MOVED_TO from outside the
 *    tree), delete (IN_DELETE, or IN_MOVED_FROM to outside), rename (an
 *    IN_MOVED_FROM paired with the IN_MOVED_TO of the same cookie: held
 *    back until the next record or watch_flush), modify (IN_MODIFY and
 *    IN_CLOSE_WRITE, coalesced: a run of them on one path with no other
 *    event between is one modify until the writer closes, and a close
 *    right after a create of the same path adds nothing).
 *  - Recursive watches: a directory created in or moved into the tree is
 *    handed to new_dir (the caller adds its watch and scans it); one moved
 *    out loses its subtree's watches through unwatch. A directory deleted
 *    leaves the table when the kernel says IN_IGNORED.
 *  - The queue holds at most `queue` events and WATCH_QUEUE_BYTES of
 *    paths. An event that does not fit is dropped and counted; one
 *    `overflow` event (reason "queue") takes the place of all dropped
 *    since the last one, as soon as there is room. IN_Q_OVERFLOW becomes
 *    an `overflow` with reason "kernel". Sequence numbers count the events
 *    delivered, from 0, without holes.
 *  - The watch ends (watch_ended) when the root is deleted ("deleted"),
 *    moved ("moved") or its filesystem unmounted ("unmounted"); events
 *    queued before stay deliverable.
 */
#ifndef KILN_AGENT_WATCH_EVENTS_H
#define KILN_AGENT_WATCH_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/proto/agent_proto.h"

/* Paths queued for the host, all events together (bounds a watch's memory). */
#define WATCH_QUEUE_BYTES (1u << 20)
/* Paths of the watched directories together. */
#define WATCH_DIR_BYTES (8u << 20)

struct watch_dir {
	int wd;
	char *rel; /* below the root, "" for the root; NUL-terminated */
	size_t len;
};

struct watch_item {
	struct agent_fs_event ev; /* paths point at path / old below */
	char *path, *old;
};

struct watch_state {
	bool recursive;
	uint32_t max_watches;
	/* directories */
	struct watch_dir *dirs;
	size_t ndirs, dirs_cap, dir_bytes;
	/* an IN_MOVED_FROM waiting for its IN_MOVED_TO */
	bool pend;
	uint32_t pend_cookie;
	char *pend_path;
	size_t pend_len;
	bool pend_dir;
	/* modify coalescing: the last event queued (or dropped) */
	enum agent_fs_kind last_kind;
	bool last_valid, run_open;
	char *last_path;
	size_t last_len;
	/* the queue */
	struct watch_item *q;
	size_t qcap, qhead, qlen, qbytes;
	bool ov_pending;
	const char *ov_reason;
	uint64_t ov_dropped;
	uint64_t next_seq;
	/* the end */
	const char *end_reason; /* NULL while the watch runs */
	/* what the caller does: add a directory's watch (recursive), drop one */
	void (*new_dir)(void *arg, const char *rel, size_t len);
	void (*unwatch)(void *arg, int wd);
	void *arg;
};

/* queue: 1..AGENT_WATCH_QUEUE_MAX events. 0 or -ENOMEM. */
int watch_init(struct watch_state *w, bool recursive, uint32_t max_watches, uint32_t queue);
void watch_free(struct watch_state *w);

/*
 * Record directory `rel` (below the root) as watched by wd. 0; -ENOSPC
 * when max_watches or WATCH_DIR_BYTES would be exceeded (an overflow
 * "watch_limit" is queued; the caller removes the kernel's watch);
 * -ENOMEM. A wd already known is moved to the new path (the kernel hands
 * out the same wd for the same inode).
 */
int watch_dir_add(struct watch_state *w, int wd, const char *rel, size_t len);
/* The entry of wd, or NULL. */
const struct watch_dir *watch_dir_find(const struct watch_state *w, int wd);

/*
 * The next inotify record in buf[0..len) from *pos (advanced). False at
 * the end or when the remaining bytes cannot hold the record they
 * announce. *name is the name without its NUL padding (n may be 0).
 */
bool watch_record_next(const uint8_t *buf, size_t len, size_t *pos, int *wd, uint32_t *mask,
		       uint32_t *cookie, const char **name, size_t *n);

/* Translate one record (section above). */
void watch_feed(struct watch_state *w, int wd, uint32_t mask, uint32_t cookie, const char *name,
		size_t n);
/* A held IN_MOVED_FROM becomes a delete now (no IN_MOVED_TO came in time). */
void watch_flush(struct watch_state *w);
/* True while an IN_MOVED_FROM is held (the caller waits briefly, then flushes). */
bool watch_pending(const struct watch_state *w);

/* Queue a create found by scanning a new directory (rel below the root). */
void watch_synth_create(struct watch_state *w, const char *rel, size_t len, bool is_dir);
/* Queue an overflow with reason (a static string). */
void watch_overflow(struct watch_state *w, const char *reason);
/* Mark the watch ended (the first reason wins). */
void watch_end(struct watch_state *w, const char *reason);
/* The reason once ended, else NULL. */
const char *watch_ended(const struct watch_state *w);

/* The oldest queued event (with its seq), or NULL; watch_pop drops it. */
const struct agent_fs_event *watch_peek(struct watch_state *w);
void watch_pop(struct watch_state *w);

/*
 * Join dir and name into a new string "dir/name" ("name" when dir is
 * empty). NULL when out of memory or longer than AGENT_PATH_MAX.
 */
char *watch_join(const char *dir, size_t dlen, const char *name, size_t nlen, size_t *out_len);

#endif
