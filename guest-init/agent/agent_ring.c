#include "guest-init/agent/agent_ring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int agent_ring_init(struct agent_ring *r, size_t cap)
{
	memset(r, 0, sizeof(*r));
	if (cap == 0 || cap > AGENT_RING_MAX)
		return -EINVAL;
	r->mcap = cap / AGENT_RING_MARK_DIV;
	if (r->mcap < AGENT_RING_MARKS_MIN)
		r->mcap = AGENT_RING_MARKS_MIN;
	r->data = malloc(cap);
	r->marks = malloc(r->mcap * sizeof(*r->marks));
	if (!r->data || !r->marks) {
		agent_ring_free(r);
		return -ENOMEM;
	}
	r->cap = cap;
	return 0;
}

void agent_ring_free(struct agent_ring *r)
{
	free(r->data);
	free(r->marks);
	memset(r, 0, sizeof(*r));
}

static uint64_t mark_at(const struct agent_ring *r, size_t i)
{
	return r->marks[(r->mfirst + i) % r->mcap];
}

static uint64_t mark_seq(uint64_t m)
{
	return m >> 1;
}

/* Forget marks whose whole run lies before the tail. */
static void drop_stale_marks(struct agent_ring *r)
{
	while (r->mcount >= 2 && mark_seq(mark_at(r, 1)) <= r->tail) {
		r->mfirst = (r->mfirst + 1) % r->mcap;
		r->mcount--;
	}
}

static void push_mark(struct agent_ring *r, enum agent_stream s)
{
	if (r->mcount && (mark_at(r, r->mcount - 1) & 1) == (uint64_t)s)
		return;
	if (r->mcount == r->mcap) {
		/* Out of marks: the oldest run goes, exactly as if the data
		 * had been overwritten (readers see it as a gap). */
		uint64_t next = mark_seq(mark_at(r, 1));

		if (r->tail < next)
			r->tail = next;
		r->mfirst = (r->mfirst + 1) % r->mcap;
		r->mcount--;
	}
	r->marks[(r->mfirst + r->mcount) % r->mcap] = (r->head << 1) | (uint64_t)s;
	r->mcount++;
}

void agent_ring_write(struct agent_ring *r, enum agent_stream s, const void *buf, size_t n)
{
	const uint8_t *p = buf;

	if (n == 0 || (s != AGENT_STDOUT && s != AGENT_STDERR))
		return;
	push_mark(r, s);
	r->total[s] += n;
	/* Only the last `cap` bytes of a huge write can survive it. */
	if (n > r->cap) {
		r->head += n - r->cap;
		p += n - r->cap;
		n = r->cap;
	}
	while (n) {
		size_t off = (size_t)(r->head % r->cap), run = r->cap - off;

		if (run > n)
			run = n;
		memcpy(r->data + off, p, run);
		r->head += run;
		p += run;
		n -= run;
	}
	if (r->head - r->tail > r->cap)
		r->tail = r->head - r->cap;
	drop_stale_marks(r);
}

/* Index of the last mark at or before seq (seq is in [tail, head)). */
static size_t find_mark(const struct agent_ring *r, uint64_t seq)
{
	size_t lo = 0, hi = r->mcount;

	/* Invariant: mark lo starts at or before seq; marks from hi start after it. */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (mark_seq(mark_at(r, mid)) <= seq)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

enum agent_ring_kind agent_ring_read(const struct agent_ring *r, uint64_t *cursor, void *buf,
				     size_t max, struct agent_ring_chunk *out)
{
	uint64_t seq = *cursor, end;
	size_t i, len, done = 0;
	uint8_t *p = buf;

	memset(out, 0, sizeof(*out));
	if (seq > r->head)
		seq = r->head;
	if (seq < r->tail) {
		out->kind = AGENT_RING_GAP;
		out->seq = seq;
		out->len = r->tail - seq;
		*cursor = r->tail;
		return out->kind;
	}
	if (seq == r->head || max == 0) {
		*cursor = seq;
		out->kind = AGENT_RING_NONE;
		out->seq = seq;
		return out->kind;
	}
	i = find_mark(r, seq);
	end = i + 1 < r->mcount ? mark_seq(mark_at(r, i + 1)) : r->head;
	len = end - seq > max ? max : (size_t)(end - seq);
	while (done < len) {
		size_t off = (size_t)((seq + done) % r->cap), run = r->cap - off;

		if (run > len - done)
			run = len - done;
		memcpy(p + done, r->data + off, run);
		done += run;
	}
	out->kind = AGENT_RING_DATA;
	out->stream = (enum agent_stream)(mark_at(r, i) & 1);
	out->seq = seq;
	out->len = len;
	*cursor = seq + len;
	return out->kind;
}

uint64_t agent_ring_attach_seq(const struct agent_ring *r, bool from_now, bool has_from,
			       uint64_t from)
{
	if (from_now)
		return r->head;
	if (!has_from)
		return r->tail;
	return from > r->head ? r->head : from;
}
