/*
 * fuzz_agent_watch: the agent's watch translation
 * (guest-init/agent/agent_watch_events.c): inotify record buffers as
 * read() returns them, parsed with watch_record_next and fed to
 * watch_feed, with the host reading (popping) and the rename timer
 * (flush) firing between records, and every event rendered as the
 * agent's fs_event line.
 *
 * Input: flags (bit 0 recursive), queue size (16 + byte % 64), watch
 * limit (1 + byte % 8), then inotify records (struct inotify_event +
 * name). A record's cookie also steers the host: bit 31 pops up to its
 * low 5 bits events, bit 30 flushes a held move. A directory handed to
 * new_dir gets the next wd (the caller's inotify_add_watch).
 * Invariants: seq counts from 0 without holes; the queue holds at most
 * its size and WATCH_QUEUE_BYTES of paths; the table at most the limit;
 * an event's path is 1..AGENT_PATH_MAX bytes, a rename has both; every
 * line renders (agent_line_fs_event) and decodes as a JSON object; an
 * ended watch takes no more events; freeing releases everything (ASan).
 */
#include <sys/inotify.h>

#include "api/proto/agent_proto.h"
#include "fuzz.h"
#include "guest-init/agent/agent_watch_events.h"

struct run {
	struct watch_state w;
	int next_wd;
	uint64_t seq;
};

static void on_new_dir(void *arg, const char *rel, size_t len)
{
	struct run *r = arg;

	FUZZ_ASSERT(len > 0 && len <= AGENT_PATH_MAX && strlen(rel) == len);
	(void)watch_dir_add(&r->w, r->next_wd++, rel, len);
}

static void on_unwatch(void *arg, int wd)
{
	(void)arg;
	FUZZ_ASSERT(wd >= 1);
}

static void pop(struct run *r, unsigned n)
{
	const struct agent_fs_event *e;

	while (n-- && (e = watch_peek(&r->w))) {
		struct agent_line l;
		struct agent_err err;
		json_t *h = NULL;
		uint64_t len;

		FUZZ_ASSERT(e->seq == r->seq);
		r->seq++;
		if (e->kind != AGENT_FS_OVERFLOW) {
			FUZZ_ASSERT(e->path && e->path_len >= 1 && e->path_len <= AGENT_PATH_MAX);
			FUZZ_ASSERT(strlen(e->path) == e->path_len);
			FUZZ_ASSERT(e->kind != AGENT_FS_RENAME || (e->old_path && e->old_len >= 1));
		} else {
			FUZZ_ASSERT(e->reason);
		}
		FUZZ_ASSERT(agent_line_fs_event(&l, e) == 0);
		FUZZ_ASSERT(l.len >= 2 && l.data[l.len - 1] == '\n');
		FUZZ_ASSERT(agent_header_decode(l.data, l.len - 1, &h, &len, &err) == AGENT_OK);
		FUZZ_ASSERT(json_is_object(h));
		json_decref(h);
		agent_line_free(&l);
		watch_pop(&r->w);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct run r = { .next_wd = 2 };
	size_t pos = 3, nlen;
	const char *name;
	uint32_t mask, cookie;
	int wd;

	if (size < 3)
		return 0;
	FUZZ_ASSERT(watch_init(&r.w, data[0] & 1, 1 + data[2] % 8, 16 + data[1] % 64) == 0);
	r.w.new_dir = on_new_dir;
	r.w.unwatch = on_unwatch;
	r.w.arg = &r;
	FUZZ_ASSERT(watch_dir_add(&r.w, 1, "", 0) == 0);
	while (watch_record_next(data, size, &pos, &wd, &mask, &cookie, &name, &nlen)) {
		bool ended = watch_ended(&r.w) != NULL;
		uint64_t before = r.w.next_seq;

		FUZZ_ASSERT(pos <= size && nlen < size);
		watch_feed(&r.w, wd, mask, cookie, name, nlen);
		if (ended)
			FUZZ_ASSERT(r.w.next_seq == before);
		if (cookie & 0x40000000u)
			watch_flush(&r.w);
		if (cookie & 0x80000000u)
			pop(&r, cookie & 31);
		FUZZ_ASSERT(r.w.qlen <= r.w.qcap && r.w.qbytes <= WATCH_QUEUE_BYTES);
		FUZZ_ASSERT(r.w.ndirs <= r.w.max_watches);
	}
	watch_flush(&r.w);
	pop(&r, UINT32_MAX);
	FUZZ_ASSERT(r.w.qlen == 0);
	watch_free(&r.w);
	return 0;
}
