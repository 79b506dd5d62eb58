/*
 * Moving bytes between the host and the buffers of one job (DESIGN.md §8). On a unified-memory
 * device the shader's buffers are host-mapped: inputs are copied straight into them, outputs
 * zero-filled by the host and read straight out of them, and no staging copy is recorded. On a
 * discrete GPU only a small buffer that no shader writes (up to the context's direct limit) lies
 * in host-visible memory, written by the host and read by the shader over the bus; every buffer
 * a shader writes lies in device-local memory that the host does not map (docs/semantics.md
 * section 10): inputs go through persistently mapped upload staging and a transfer copy,
 * outputs are zero-filled with vkCmdFillBuffer, and results come back through host-cached
 * readback staging. A job may pack its small buffers that shaders write into one device slice
 * (struct vy_vk_pack): then one copy fills those with data, one fill zeroes the others (none
 * where the slice comes already zeroed: vy__vk_ctx_pack_slice), and one copy brings back those
 * read back, however many buffers the job has. An input whose bytes lie in imported host memory
 * (vk_import.c) is copied by the device from there into its buffer, on every device, and the
 * host copies nothing.
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
	bool packed;             /* lies in its job's pack: no copy or fill of its own */
	const void *data; /* borrowed until vy__vk_xfer_pack: the bytes a packed buffer gets */
};

/*
 * The small buffers of one job that shaders write, on a discrete GPU, laid out in one device
 * slice as [data, not read back][data, read back][zeroed, read back][zeroed, not read back]:
 * `up` mirrors the first two groups, `down` the middle two, and the last two are zeroed by one
 * fill. Each buffer starts at a multiple of the device's storage-buffer offset alignment.
 */
struct vy_vk_pack {
	struct vy_vk_slice dev;  /* owned by the context, like every slice */
	struct vy_vk_slice up;   /* upload staging for [0, up_len) */
	struct vy_vk_slice down; /* readback staging for [down_at, down_at + down_len) */
	VkDeviceSize up_len;     /* bytes copied in, from offset 0 */
	VkDeviceSize fill_at;    /* bytes zeroed */
	VkDeviceSize fill_len;
	VkDeviceSize down_at; /* bytes copied back */
	VkDeviceSize down_len;
};

/*
 * Give the job a buffer of `len` bytes: with `data` (len bytes) uploaded, or zero-filled when
 * `zero`, or left as it is; `read_back` makes it readable with vy__vk_xfer_read afterwards.
 * `written` says that a shader may write it (`zero` and `read_back` imply it): on a discrete GPU
 * only a buffer no shader writes may lie in host memory. The slices belong to `ctx`. With `pack`
 * (else NULL), a small buffer that a shader writes on a discrete GPU is only noted, `data` kept
 * by pointer, and vy__vk_xfer_pack places it (a buffer neither uploaded nor zeroed is zeroed
 * there). Errors: OUT_OF_MEMORY.
 */
int vy__vk_xfer_prepare(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, uint64_t len, const void *data,
	bool zero, bool read_back, bool written, struct vy_vk_pack *pack, struct vy_vk_xfer *out,
	struct vy_err *err);

/*
 * Place the packed buffers among `bufs` (n) in one device slice of `ctx`, with one upload and one
 * readback slice, and copy their data into the upload slice. The device slice comes zeroed where
 * the context keeps a clean one (vy__vk_ctx_pack_slice), and then nothing is filled. Call once
 * every buffer of the job is prepared; `pack` is overwritten. Errors: OUT_OF_MEMORY.
 */
int vy__vk_xfer_pack(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, struct vy_vk_pack *pack,
	struct vy_vk_xfer *bufs, size_t n, struct vy_err *err);

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

/* Record the uploads and fills of `n` buffers and of `pack` (or NULL) and the barrier that makes
 * them visible to compute shaders. With `head` (the job's context, or NULL), they are left to
 * the head of its batch instead (vy__vk_ctx_defer_in), which records the barrier once for the
 * batch. */
void vy__vk_xfer_record_in(struct vy_vk_exec *x, VkCommandBuffer cmd, struct vy_vk_ctx *head,
	const struct vy_vk_pack *pack, const struct vy_vk_xfer *bufs, size_t n);

/* Record the barrier after the dispatches and the readback copies of `n` buffers and of `pack`
 * (or NULL). With `tail` (the job's context, or NULL), copies are left to the tail of its batch
 * instead (vy__vk_ctx_defer_copy), which records the barriers once for the batch; a job
 * without copies records its barrier here either way. */
void vy__vk_xfer_record_out(struct vy_vk_exec *x, VkCommandBuffer cmd, struct vy_vk_ctx *tail,
	const struct vy_vk_pack *pack, const struct vy_vk_xfer *bufs, size_t n);

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
