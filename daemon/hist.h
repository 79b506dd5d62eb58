/*
 * Latency histograms of the daemon (DESIGN.md §7.6). A histogram has fixed buckets, four per
 * power of two (each about 19% wide), so recording is a few instructions and a quantile is read
 * in one pass. Values 0 to 3 have a bucket each; a value v >= 4 with its highest bit at e lands
 * in bucket 4 (e - 1) + (the two bits below that highest bit), whose range is
 * [(4 + sub) << (e - 2), (5 + sub) << (e - 2) - 1]. Quantiles are nearest-rank (the value of rank
 * ceil(q * count)), reported as the upper edge of that value's bucket, capped at the largest
 * value seen.
 *
 * Thread-safety: none; every histogram is written and read on the loop thread.
 */
#ifndef VY_DAEMON_HIST_H
#define VY_DAEMON_HIST_H

#include <stdint.h>

#define VY_HIST_BUCKETS 252

struct vy_hist {
	uint64_t count;
	uint64_t sum;
	uint64_t max;
	uint32_t buckets[VY_HIST_BUCKETS];
};

void vy_hist_add(struct vy_hist *h, uint64_t value);
/* The q-quantile (0 < q <= 1) of the recorded values, 0 when none were recorded. */
uint64_t vy_hist_quantile(const struct vy_hist *h, double q);

#endif
