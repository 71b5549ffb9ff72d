/*
 * rate_limit: token buckets for a device's bytes and packets, in the shape
 * of Firecracker's rate limiters: a bucket of `size` tokens refilled evenly
 * over `refill_ms`, plus an optional one-time burst spent first and never
 * refilled.
 *
 * Contract:
 *  - Pure: time comes in as nanoseconds of a monotonic clock (now_ns never
 *    goes backwards; if it does, no tokens are added).
 *  - A bucket with size 0 is unlimited.
 *  - A request larger than the whole bucket (a 64 KiB frame through a 1 KiB
 *    bucket) is allowed when the bucket is full and leaves a debt that the
 *    refill pays off first, so large frames are slowed, never stuck.
 *  - rate_limiter_take() takes from both buckets or from neither.
 *  - Refill keeps the fraction of a token that elapsed time has earned, so
 *    frequent calls do not starve a slow bucket.
 */
#ifndef KILN_RATE_LIMIT_H
#define KILN_RATE_LIMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/base/err.h"

#define RATE_REFILL_MS_MAX (3600ULL * 1000) /* an hour */
#define RATE_SIZE_MAX (1ULL << 48)

struct rate_bucket_cfg {
	uint64_t size;           /* tokens per refill_ms; 0: unlimited */
	uint64_t one_time_burst; /* extra tokens at start, spent first */
	uint64_t refill_ms;      /* time to refill an empty bucket */
};

struct rate_bucket {
	struct rate_bucket_cfg cfg;
	int64_t tokens;         /* < 0: debt of an oversize request */
	uint64_t burst;         /* what is left of one_time_burst */
	uint64_t last_ns;       /* time of the last refill */
	unsigned __int128 frac; /* elapsed ns * size not yet worth a token */
};

struct rate_limiter {
	struct rate_bucket bytes, packets;
};

/* 0, or -EINVAL with a message naming the field (`what`: "rx bytes"). */
int rate_bucket_cfg_check(const struct rate_bucket_cfg *c, const char *what, struct err *e);

void rate_bucket_init(struct rate_bucket *b, const struct rate_bucket_cfg *c, uint64_t now_ns);
/* Take n tokens; false (nothing taken) when there are not enough. */
bool rate_bucket_take(struct rate_bucket *b, uint64_t n, uint64_t now_ns);
/* Nanoseconds until rate_bucket_take(b, n) would succeed; 0 = now. */
uint64_t rate_bucket_wait_ns(struct rate_bucket *b, uint64_t n, uint64_t now_ns);

void rate_limiter_init(struct rate_limiter *rl, const struct rate_bucket_cfg *bytes,
		       const struct rate_bucket_cfg *packets, uint64_t now_ns);
/* One packet of `bytes`: both buckets or neither. */
bool rate_limiter_take(struct rate_limiter *rl, uint64_t bytes, uint64_t now_ns);
/* Nanoseconds until one packet of `bytes` would pass (for backpressure instead of drops). */
uint64_t rate_limiter_wait_ns(struct rate_limiter *rl, uint64_t bytes, uint64_t now_ns);

#endif
