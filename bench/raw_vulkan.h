/*
 * The hand-written anchors of vybench (DESIGN.md §10): the least Vulkan program a careful
 * engineer would write by hand for the same work as vyred, so that each vyred figure is printed
 * beside what the device gives without vyred in the way.
 *
 * One context owns one instance, one device, one compute queue and its kernels, each compiled
 * from GLSL with shaderc when it is prepared:
 *   tiny     y[i] = x[i] + 1 over a few u32 elements in host-visible coherent memory, one
 *            pre-recorded command buffer, submitted and waited on (spinning on the fence);
 *            staged, y in device-local memory behind a fill and a copy back;
 *   stream   y[i] = x[i] + y[i] over f32 elements read and written as vec4, on device-local
 *            buffers filled on the device;
 *   reduce   the u32 sum (wrapping) of device-local elements: a grid-stride loop per
 *            invocation, a tree in shared memory per workgroup, one atomicAdd per workgroup;
 *   matmul   C = A * B over n x n f32 matrices, 16 x 16 tiles staged in shared memory;
 *   chain    the tiny kernel `steps` times in one command buffer, each dispatch reading what
 *            the one before wrote (two host-visible buffers in turn, a compute-to-compute
 *            barrier between dispatches): what a recorded graph of tiny steps costs by hand.
 * stream, reduce and matmul are timed with timestamp queries where the queue has them.
 * vy_raw_vk_pipeline_times measures pipeline creation cold, from a warm VkPipelineCache and from
 * a pipeline cache blob, the anchors of the daemon's cache figures.
 *
 * Errors: every fallible function returns 0 or a negative VY_E_* code and fills the optional
 * struct vy_err: UNSUPPORTED_FEATURE (no loader, no such device, no compute queue),
 * BAD_REQUEST (a size out of range), OUT_OF_MEMORY, DISPATCH_FAILED (any other Vulkan or
 * shaderc failure, with its cause).
 *
 * Thread-safety: a context belongs to one thread at a time.
 */
#ifndef VY_BENCH_RAW_VULKAN_H
#define VY_BENCH_RAW_VULKAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* The workgroup size of the reduce kernels, hand-written and IR alike. */
#define VY_RAW_REDUCE_WG 256u
/* The tile edge of the matmul kernels (workgroup TILE x TILE); n must be a multiple of it. */
#define VY_RAW_MATMUL_TILE 16u

struct vy_raw_vk;

/* Device time of one run, or UINT64_MAX where the queue has no timestamps, and host time. */
struct vy_raw_vk_run {
	uint64_t device_ns;
	uint64_t wall_ns;
};

/* Pipeline creation times of one small kernel, in nanoseconds. */
struct vy_raw_vk_pipeline_times {
	uint64_t cold_ns; /* shaderc compile, shader module and pipeline, with an empty cache */
	uint64_t warm_ns; /* the same pipeline again through the VkPipelineCache that holds it */
	uint64_t blob_ns; /* a new VkPipelineCache from the saved blob, module from saved SPIR-V,
			   * and the pipeline: what a restarted process does */
};

/*
 * Open device `device_index` (in vkEnumeratePhysicalDevices order, the backend's order too).
 * On success *out is a new context (free it with vy_raw_vk_destroy); on failure *out is NULL.
 */
int vy_raw_vk_create(uint32_t device_index, struct vy_raw_vk **out, struct vy_err *err);
/* Free the context and everything it made. NULL is accepted. */
void vy_raw_vk_destroy(struct vy_raw_vk *raw);

/* The device's name (borrowed from the context) and whether it is a CPU implementation. */
const char *vy_raw_vk_device_name(const struct vy_raw_vk *raw);
bool vy_raw_vk_is_cpu(const struct vy_raw_vk *raw);

/*
 * Make the tiny kernel's buffers and command buffer for `n` u32 elements (1 to 1024); `staged`:
 * y lies in device-local memory, zeroed by a fill before the dispatch and copied into
 * host-visible memory after it, as a discrete GPU's safe path has it (docs/semantics.md §10).
 */
int vy_raw_vk_tiny_prepare(struct vy_raw_vk *raw, uint32_t n, bool staged, struct vy_err *err);
/*
 * One round trip of the tiny kernel: copy `n` elements of `in` into the input buffer, submit,
 * wait for the fence (spinning on its status, or with `block` sleeping in vkWaitForFences), copy
 * the results into `out`. Needs vy_raw_vk_tiny_prepare.
 */
int vy_raw_vk_tiny_run(
	struct vy_raw_vk *raw, const uint32_t *in, uint32_t *out, bool block, struct vy_err *err);

/*
 * Make the stream kernel's buffers for `n` f32 elements (a positive multiple of 4), fill x with
 * 1.0 and y with 0.0 on the device, and record its command buffer.
 */
int vy_raw_vk_stream_prepare(struct vy_raw_vk *raw, uint64_t n, struct vy_err *err);
/* One run of the stream kernel (y += x), waited for. */
int vy_raw_vk_stream_run(struct vy_raw_vk *raw, struct vy_raw_vk_run *run, struct vy_err *err);
/* Copy `count` elements of y starting at element `first` into `dst`. */
int vy_raw_vk_stream_read(
	struct vy_raw_vk *raw, uint64_t first, float *dst, size_t count, struct vy_err *err);

/*
 * Upload the `n` u32 elements of `x` (n >= 1) and record the reduce kernel over `groups`
 * workgroups of VY_RAW_REDUCE_WG invocations, each summing `per` elements `groups *
 * VY_RAW_REDUCE_WG` apart.
 */
int vy_raw_vk_reduce_prepare(struct vy_raw_vk *raw, const uint32_t *x, uint64_t n, uint32_t groups,
	uint32_t per, struct vy_err *err);
/* One run: zero the sum, dispatch, wait; the sum in *sum. */
int vy_raw_vk_reduce_run(
	struct vy_raw_vk *raw, uint32_t *sum, struct vy_raw_vk_run *run, struct vy_err *err);

/* Upload the n x n row-major matrices a and b (n a positive multiple of VY_RAW_MATMUL_TILE, at
 * most 8192) and record the matmul kernel. */
int vy_raw_vk_matmul_prepare(
	struct vy_raw_vk *raw, const float *a, const float *b, uint32_t n, struct vy_err *err);
/* One run of C = A * B, waited for. */
int vy_raw_vk_matmul_run(struct vy_raw_vk *raw, struct vy_raw_vk_run *run, struct vy_err *err);
/* Copy the n x n elements of C into `c`. */
int vy_raw_vk_matmul_read(struct vy_raw_vk *raw, float *c, struct vy_err *err);

/* Make the chain's buffers for `n` u32 elements (1 to 1024) and record its `steps` dispatches. */
int vy_raw_vk_chain_prepare(struct vy_raw_vk *raw, uint32_t n, uint32_t steps, struct vy_err *err);
/* One run of the chain on `n` elements of `in` (each gets `steps` added), its results in `out`;
 * the device time covers the dispatches and barriers. Needs vy_raw_vk_chain_prepare. */
int vy_raw_vk_chain_run(struct vy_raw_vk *raw, const uint32_t *in, uint32_t *out,
	struct vy_raw_vk_run *run, struct vy_err *err);

/*
 * Build a kernel like tiny's that adds `nonce` instead of 1 (so no driver cache has seen it)
 * and time its pipeline creation three ways (struct vy_raw_vk_pipeline_times); the warm and blob
 * times are medians of `runs` tries.
 */
int vy_raw_vk_pipeline_times(struct vy_raw_vk *raw, uint32_t nonce, uint32_t runs,
	struct vy_raw_vk_pipeline_times *out, struct vy_err *err);

#endif
