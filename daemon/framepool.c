/*
 * The frame pool: a large frame (VY_FRAMEPOOL_MIN bytes or more) is received into a buffer that
 * an earlier large frame left behind, when one is kept, so that its bytes land in memory that is
 * already paged in. A fresh buffer of 256 MiB costs 65,536 page faults to fill, which on a
 * virtual machine take longer than the socket takes to bring the bytes (docs/performance.md).
 *
 * At most VY_FRAMEPOOL_SLOTS buffers, together at most frame_pool_bytes (0 turns the pool off),
 * are kept; a buffer unused for VY_FRAMEPOOL_IDLE_NS is freed by the server's tick, so that an
 * idle daemon gives the memory back. A frame takes a kept buffer only once it is admitted (its
 * whole length counted against the inbound quotas), so a peer that announces a large frame and
 * stalls holds memory that was resident already, never a new buffer of the announced size.
 *
 * Thread-safety: the event loop's thread only.
 */
#include <stdlib.h>

#include "vyred.h"

#define VY_FRAMEPOOL_IDLE_NS (UINT64_C(5) * 1000000000)

/* Take slot i out of the pool (its buffer is the caller's now). */
static uint8_t *remove_at(struct vy_framepool *p, uint32_t i)
{
	uint8_t *buf = p->buf[i];
	p->bytes -= p->cap[i];
	p->n--;
	p->buf[i] = p->buf[p->n];
	p->cap[i] = p->cap[p->n];
	p->put_ns[i] = p->put_ns[p->n];
	return buf;
}

uint8_t *vy_framepool_take(struct vy_server *s, size_t len, size_t *cap)
{
	struct vy_framepool *p = &s->frames;
	uint32_t best = UINT32_MAX;
	for (uint32_t i = 0; i < p->n; i++) {
		if (p->cap[i] >= len && (best == UINT32_MAX || p->cap[i] < p->cap[best])) {
			best = i;
		}
	}
	if (best == UINT32_MAX) {
		p->misses++;
		return NULL;
	}
	*cap = p->cap[best];
	p->hits++;
	return remove_at(p, best);
}

void vy_framepool_put(struct vy_server *s, uint8_t *buf, size_t cap)
{
	struct vy_framepool *p = &s->frames;
	uint64_t limit = s->cfg.frame_pool_bytes;
	if (!buf || cap < VY_FRAMEPOOL_MIN || cap > limit) {
		free(buf);
		return;
	}
	/* Make room by freeing the buffers kept longest. */
	while (p->n && (p->n == VY_FRAMEPOOL_SLOTS || p->bytes + cap > limit)) {
		uint32_t oldest = 0;
		for (uint32_t i = 1; i < p->n; i++) {
			oldest = p->put_ns[i] < p->put_ns[oldest] ? i : oldest;
		}
		free(remove_at(p, oldest));
	}
	p->buf[p->n] = buf;
	p->cap[p->n] = cap;
	p->put_ns[p->n] = vy_now_ns();
	p->bytes += cap;
	p->n++;
}

void vy_framepool_trim(struct vy_server *s, uint64_t now)
{
	struct vy_framepool *p = &s->frames;
	for (uint32_t i = 0; i < p->n;) {
		if (now - p->put_ns[i] >= VY_FRAMEPOOL_IDLE_NS ||
			p->bytes > s->cfg.frame_pool_bytes) {
			free(remove_at(p, i));
		} else {
			i++;
		}
	}
}

void vy_framepool_finish(struct vy_server *s)
{
	struct vy_framepool *p = &s->frames;
	while (p->n) {
		free(remove_at(p, p->n - 1));
	}
}
