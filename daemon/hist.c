/* The histograms of hist.h. */
#include "hist.h"

static unsigned bucket_of(uint64_t v)
{
	if (v < 4) {
		return (unsigned)v;
	}
	unsigned e = 63u - (unsigned)__builtin_clzll(v);
	unsigned sub = (unsigned)(v >> (e - 2)) & 3u;
	return 4u * (e - 1u) + sub;
}

static uint64_t bucket_upper(unsigned i)
{
	if (i < 4) {
		return i;
	}
	unsigned e = i / 4 + 1;
	uint64_t lo = (uint64_t)(4 + i % 4) << (e - 2);
	return lo + ((uint64_t)1 << (e - 2)) - 1;
}

void vy_hist_add(struct vy_hist *h, uint64_t value)
{
	h->count++;
	h->sum += value;
	if (value > h->max) {
		h->max = value;
	}
	h->buckets[bucket_of(value)]++;
}

uint64_t vy_hist_quantile(const struct vy_hist *h, double q)
{
	if (h->count == 0) {
		return 0;
	}
	uint64_t rank = (uint64_t)(q * (double)h->count + 0.999999);
	if (rank < 1) {
		rank = 1;
	}
	uint64_t seen = 0;
	for (unsigned i = 0; i < VY_HIST_BUCKETS; i++) {
		seen += h->buckets[i];
		if (seen >= rank) {
			uint64_t up = bucket_upper(i);
			return up < h->max ? up : h->max;
		}
	}
	return h->max;
}
