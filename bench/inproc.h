/*
 * The middle anchor of vybench: vyred's Vulkan backend (backend/vulkan) opened in the bench's
 * own process, with no socket and no daemon in the way. Its figures sit between the raw
 * hand-written Vulkan program and the daemon, so the gap of each can be read apart:
 *   tiny    y[i] = x[i] + 1 over u32, compiled once with vy_backend_compile_native, each call
 *           vy_pipeline_dispatch with fresh input, timed on the host around the call;
 *   stream  y[i] = x[i] + y[i] on resident f32 buffers through vy_backend_resident_dispatch,
 *           timed from the backend's device_ns where it has one.
 *
 * The programs are built with protocol/ir.h here, so this interface uses no IR type and can be
 * called from code that includes libvyre's <vy/vyre.h>.
 *
 * Errors: 0 or a negative VY_E_* code from the backend, with `err` filled; VY_BENCH_WRONG when
 * the backend computed a wrong result.
 *
 * Thread-safety: one thread at a time.
 */
#ifndef VY_BENCH_INPROC_H
#define VY_BENCH_INPROC_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"

struct vy_bench_inproc;

/* Open the Vulkan backend on device `device`. */
int vy_bench_inproc_create(uint32_t device, struct vy_bench_inproc **out, struct vy_err *err);
/* NULL is accepted. */
void vy_bench_inproc_destroy(struct vy_bench_inproc *ip);

/*
 * `warmup` untimed then `iterations` timed tiny dispatches of `n` (1 to 1024) u32 elements;
 * samples[0..iterations) receives the round trips in nanoseconds, sorted.
 */
int vy_bench_inproc_tiny(struct vy_bench_inproc *ip, uint32_t n, uint32_t warmup,
	uint32_t iterations, uint64_t *samples, struct vy_err *err);
/*
 * Tiny dispatches of `n` u32 elements through vy_pipeline_dispatch_async for about `seconds`, in
 * batches of `batch` (1 to 256) started together, `depth` (1 to 4) batches in flight: a batch
 * is collected just before its slot is started again. Depth 1 is what a submit thread that
 * waits for each batch gets. Every result is checked; *out receives the rate and its split.
 */
struct vy_bench_inproc_rate {
	double per_s;      /* dispatches per second */
	double start_ns;   /* host time a dispatch took to start (vy_pipeline_dispatch_async) */
	double collect_ns; /* time a dispatch took to collect (vy_pending_wait, the device's
			    * time the host waited for included) and check */
};
int vy_bench_inproc_rate(struct vy_bench_inproc *ip, uint32_t n, uint32_t batch, uint32_t depth,
	double seconds, struct vy_bench_inproc_rate *out, struct vy_err *err);
/*
 * One warm-up then `runs` (1 to 256) stream dispatches over `n` f32 elements (below 2^32); the
 * median time in *median_ns, from device timestamps when *device_timed is true, else host wall
 * time.
 */
int vy_bench_inproc_stream(struct vy_bench_inproc *ip, uint64_t n, uint32_t runs,
	uint64_t *median_ns, bool *device_timed, struct vy_err *err);

#endif
