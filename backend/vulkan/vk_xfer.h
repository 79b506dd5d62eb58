/*
 * Moving bytes between the host and the buffers of one job (DESIGN.md §8). On a unified-memory
 * device the shader's buffers are host-mapped: inputs are copied straight into them, outputs
 * zero-filled by the host and read straight out of them, and no staging copy is recorded. On
 * other devices small buffers (up to the context's direct limit) do the same in host-visible
 * memory (write-combined for inputs, host-cached for what is read back), which the shader
 * reads and writes over the bus; larger inputs go through persistently mapped upload staging
 * and a transfer copy into device-local memory, larger outputs are zero-filled with
 * vkCmdFillBuffer, and their results come back through host-cached readback staging. An input
 * whose bytes lie in imported host memory (vk_import.c) is copied by the device from there into
 * its buffer, on every device, and the host copies nothing.
 *
 * Use: prepare every buffer of the job (outside the queue lock: this is where bytes are copied),
 * then from the record function record_in before the dispatches and record_out after them, then,
 * once the job is done, read each result.
 *
 * Thread-safety: as for the context the buffers belong to.
 */
#ifndef VY_BACKEND_VULKAN_VK_XFER_H
#define VY_BACKEND_VULKAN_VK_XFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "vk_exec.h"
#include "vk_memory.h"
#include "vk_pipeline.h"

/* One buffer of a job. A zero-length buffer has no slice and binds as a null or dummy range. */
struct vy_vk_xfer {
	struct vy_vk_slice dev;  /* what the shader binds */
	struct vy_vk_slice up;   /* upload staging, or zeroed */
	struct vy_vk_slice down; /* readback staging, or zeroed */
	VkBuffer src;            /* borrowed: bytes to copy in (an import), or VK_NULL_HANDLE */
	VkDeviceSize src_offset; /* where they start in `src` */
	uint64_t len;            /* bytes the job uses */
	bool fill_zero;          /* zero-fill on the device before the dispatches */
	bool read_back;          /* copy back after the dispatches */
};

/*
 * Give the job a buffer of `len` bytes: with `data` (len bytes) uploaded, or zero-filled when
 * `zero`, or left as it is; `read_back` makes it readable with vy__vk_xfer_read afterwards.
 * `written` says that a shader may write it (`zero` and `read_back` imply it): on a discrete GPU
 * only a buffer no shader writes may lie in host memory. The slices belong to `ctx`. Errors:
 * OUT_OF_MEMORY.
 */
int vy__vk_xfer_prepare(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, uint64_t len, const void *data,
	bool zero, bool read_back, bool written, struct vy_vk_xfer *out, struct vy_err *err);

/*
 * As vy__vk_xfer_prepare for an input of `len` bytes (len > 0) that already lie in a buffer the
 * device reads, `src` at `src_offset`: record_in copies them into the job's buffer. The caller
 * keeps `src` alive until the job is done. Errors: OUT_OF_MEMORY.
 */
int vy__vk_xfer_prepare_copy(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, uint64_t len,
	VkBuffer src, VkDeviceSize src_offset, bool read_back, struct vy_vk_xfer *out,
	struct vy_err *err);

/*
 * Use an existing device slice (a resident buffer) as the job's buffer `len` bytes long:
 * zero-filled when `zero`; no staging. Never fails.
 */
void vy__vk_xfer_wrap(
	const struct vy_vk_slice *dev, uint64_t len, bool zero, struct vy_vk_xfer *out);

/* Record the uploads and fills of `n` buffers and the barrier that makes them visible to compute
 * shaders. */
void vy__vk_xfer_record_in(
	struct vy_vk_exec *x, VkCommandBuffer cmd, const struct vy_vk_xfer *bufs, size_t n);

/* Record the barrier after the dispatches and the readback copies of `n` buffers. */
void vy__vk_xfer_record_out(
	struct vy_vk_exec *x, VkCommandBuffer cmd, const struct vy_vk_xfer *bufs, size_t n);

/* Copy `len` bytes (at most b->len) of a read-back buffer to `dst` once the job is done. Errors:
 * OUT_OF_MEMORY, DEVICE_LOST (from invalidating non-coherent memory). */
int vy__vk_xfer_read(struct vy_vk_exec *x, const struct vy_vk_xfer *b, void *dst, uint64_t len,
	struct vy_err *err);

/* The descriptor of a buffer for a shader binding: its exact range, or a null descriptor for a
 * zero-length buffer (a dummy 4-byte range where null descriptors are missing). */
VkDescriptorBufferInfo vy__vk_xfer_descriptor(struct vy_vk_exec *x, const struct vy_vk_xfer *b);

/*
 * Bind `n` buffers (binding numbers and descriptors) to set 0 of `layout` for the next dispatch:
 * push descriptors where the device has them, else a set from the context's pool (reserved by
 * vy__vk_ctx_submit). Call from the record function. Errors: OUT_OF_MEMORY.
 */
int vy__vk_xfer_bind(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, VkCommandBuffer cmd,
	const struct vy_vk_layout *layout, uint32_t n, const uint32_t *bindings,
	const VkDescriptorBufferInfo *infos, struct vy_err *err);

#endif
