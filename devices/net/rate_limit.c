#include "devices/net/rate_limit.h"

#include <errno.h>
#include <string.h>

#define NS_PER_MS 1000000ULL

int rate_bucket_cfg_check(const struct rate_bucket_cfg *c, const char *what, struct err *e)
{
	if (c->size == 0)
		return 0;
	if (c->size > RATE_SIZE_MAX)
		return err_set(e, EINVAL, "%s: size %llu is above %llu", what,
			       (unsigned long long)c->size, (unsigned long long)RATE_SIZE_MAX);
	if (c->one_time_burst > RATE_SIZE_MAX)
		return err_set(e, EINVAL, "%s: one_time_burst %llu is above %llu", what,
			       (unsigned long long)c->one_time_burst,
			       (unsigned long long)RATE_SIZE_MAX);
	if (c->refill_ms == 0 || c->refill_ms > RATE_REFILL_MS_MAX)
		return err_set(e, EINVAL, "%s: refill_time must be 1..%llu ms", what,
			       (unsigned long long)RATE_REFILL_MS_MAX);
	return 0;
}

void rate_bucket_init(struct rate_bucket *b, const struct rate_bucket_cfg *c, uint64_t now_ns)
{
	memset(b, 0, sizeof(*b));
	b->cfg = *c;
	b->tokens = (int64_t)c->size;
	b->burst = c->one_time_burst;
	b->last_ns = now_ns;
}

static void refill(struct rate_bucket *b, uint64_t now_ns)
{
	uint64_t period = b->cfg.refill_ms * NS_PER_MS, elapsed;
	unsigned __int128 add;

	if (now_ns <= b->last_ns)
		return;
	elapsed = now_ns - b->last_ns;
	b->last_ns = now_ns;
	if (b->tokens >= (int64_t)b->cfg.size) {
		b->frac = 0;
		return;
	}
	/* At most 2^64 ns times 2^48 tokens: the product fits in 128 bits. */
	b->frac += (unsigned __int128)elapsed * b->cfg.size;
	add = b->frac / period;
	b->frac %= period;
	if ((__int128)b->tokens + (__int128)add >= (__int128)b->cfg.size) {
		b->tokens = (int64_t)b->cfg.size;
		b->frac = 0;
	} else {
		b->tokens += (int64_t)add;
	}
}

/* What a take of n would need from the refilling part, after the burst. */
static uint64_t from_bucket(const struct rate_bucket *b, uint64_t n)
{
	if (n > (1ULL << 62)) /* keeps the debt within int64_t */
		n = 1ULL << 62;
	return n > b->burst ? n - b->burst : 0;
}

static bool can_take(const struct rate_bucket *b, uint64_t n)
{
	uint64_t need = from_bucket(b, n);

	if (need == 0)
		return true;
	if (need > b->cfg.size) /* oversize: only from a full bucket */
		return b->tokens >= (int64_t)b->cfg.size;
	return b->tokens >= (int64_t)need;
}

static void do_take(struct rate_bucket *b, uint64_t n)
{
	uint64_t need = from_bucket(b, n);

	b->burst -= n > b->burst ? b->burst : n;
	b->tokens -= (int64_t)need;
}

bool rate_bucket_take(struct rate_bucket *b, uint64_t n, uint64_t now_ns)
{
	if (b->cfg.size == 0)
		return true;
	refill(b, now_ns);
	if (!can_take(b, n))
		return false;
	do_take(b, n);
	return true;
}

uint64_t rate_bucket_wait_ns(struct rate_bucket *b, uint64_t n, uint64_t now_ns)
{
	uint64_t period, need;
	unsigned __int128 missing, ns;

	if (b->cfg.size == 0)
		return 0;
	refill(b, now_ns);
	if (can_take(b, n))
		return 0;
	period = b->cfg.refill_ms * NS_PER_MS;
	need = from_bucket(b, n);
	if (need > b->cfg.size)
		need = b->cfg.size;
	/* Tokens still missing, in token-nanoseconds, less the fraction already earned. */
	missing = ((unsigned __int128)((__int128)need - b->tokens)) * period - b->frac;
	ns = (missing + b->cfg.size - 1) / b->cfg.size;
	return ns > UINT64_MAX ? UINT64_MAX : (uint64_t)ns;
}

void rate_limiter_init(struct rate_limiter *rl, const struct rate_bucket_cfg *bytes,
		       const struct rate_bucket_cfg *packets, uint64_t now_ns)
{
	rate_bucket_init(&rl->bytes, bytes, now_ns);
	rate_bucket_init(&rl->packets, packets, now_ns);
}

bool rate_limiter_take(struct rate_limiter *rl, uint64_t bytes, uint64_t now_ns)
{
	struct rate_bucket *bb = &rl->bytes, *pb = &rl->packets;

	if (bb->cfg.size)
		refill(bb, now_ns);
	if (pb->cfg.size)
		refill(pb, now_ns);
	if ((bb->cfg.size && !can_take(bb, bytes)) || (pb->cfg.size && !can_take(pb, 1)))
		return false;
	if (bb->cfg.size)
		do_take(bb, bytes);
	if (pb->cfg.size)
		do_take(pb, 1);
	return true;
}

uint64_t rate_limiter_wait_ns(struct rate_limiter *rl, uint64_t bytes, uint64_t now_ns)
{
	uint64_t a = rate_bucket_wait_ns(&rl->bytes, bytes, now_ns);
	uint64_t b = rate_bucket_wait_ns(&rl->packets, 1, now_ns);

	return a > b ? a : b;
}
