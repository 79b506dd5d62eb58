/*
 * Host <-> device transfers of a job, with the barriers that order them against the compute
 * shaders. On unified memory the host touches the shader's buffers directly; the queue submission
 * makes host writes visible, and a compute -> host barrier makes the shader's writes visible. On
 * a discrete GPU a small buffer that no shader writes stays in host memory, and every buffer a
 * shader writes lies in device memory the host does not map, zeroed or filled and read back by
 * copy commands.
 */
#include "vk_xfer.h"

#include <string.h>

/* A host-visible buffer the shaders only read, filled by the host. */
static int prepare_direct(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, uint64_t len,
	const void *data, struct vy_vk_xfer *out, struct vy_err *err)
{
	int rc = vy__vk_ctx_slice(x, ctx, VY_VK_POOL_UPLOAD, len, &out->dev, err);
	if (rc == 0 && data) {
		memcpy(out->dev.map, data, len);
	}
	return rc;
}

int vy__vk_xfer_prepare(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, uint64_t len, const void *data,
	bool zero, bool read_back, bool written, struct vy_vk_xfer *out, struct vy_err *err)
{
	memset(out, 0, sizeof(*out));
	out->len = len;
	out->read_back = read_back;
	if (len == 0) {
		return 0;
	}
	/* On a discrete GPU, no shader writes memory the host maps: with many small jobs in
	 * flight, an NVIDIA H200 returned words of other jobs, or zeros, in buffers that shaders
	 * wrote in mapped memory (host memory or device memory alike), and then stopped finishing
	 * work (docs/semantics.md section 10). */
	if (!x->dev->unified && len <= x->direct_limit && !(written || zero || read_back)) {
		return prepare_direct(x, ctx, len, data, out, err);
	}
	int rc = vy__vk_ctx_slice(x, ctx, VY_VK_POOL_DEVICE, len, &out->dev, err);
	if (rc) {
		return rc;
	}
	bool direct = x->dev->unified && out->dev.map;
	if (data) {
		if (direct) {
			memcpy(out->dev.map, data, len);
		} else {
			rc = vy__vk_ctx_slice(x, ctx, VY_VK_POOL_UPLOAD, len, &out->up, err);
			if (rc) {
				return rc;
			}
			memcpy(out->up.map, data, len);
		}
	} else if (zero) {
		if (direct) {
			memset(out->dev.map, 0, len);
		} else {
			out->fill_zero = true;
		}
	}
	if (read_back && !direct) {
		rc = vy__vk_ctx_slice(x, ctx, VY_VK_POOL_READBACK, len, &out->down, err);
	}
	return rc;
}

int vy__vk_xfer_prepare_copy(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, uint64_t len,
	VkBuffer src, VkDeviceSize src_offset, bool read_back, struct vy_vk_xfer *out,
	struct vy_err *err)
{
	memset(out, 0, sizeof(*out));
	out->len = len;
	out->read_back = read_back;
	out->src = src;
	out->src_offset = src_offset;
	int rc = vy__vk_ctx_slice(x, ctx, VY_VK_POOL_DEVICE, len, &out->dev, err);
	if (rc == 0 && read_back && !(x->dev->unified && out->dev.map)) {
		rc = vy__vk_ctx_slice(x, ctx, VY_VK_POOL_READBACK, len, &out->down, err);
	}
	return rc;
}

void vy__vk_xfer_wrap(
	const struct vy_vk_slice *dev, uint64_t len, bool zero, struct vy_vk_xfer *out)
{
	memset(out, 0, sizeof(*out));
	out->dev = *dev;
	out->len = len;
	if (zero && len > 0) {
		out->fill_zero = true;
	}
}

static void barrier(struct vy_vk_exec *x, VkCommandBuffer cmd, VkPipelineStageFlags src,
	VkAccessFlags src_access, VkPipelineStageFlags dst, VkAccessFlags dst_access)
{
	VkMemoryBarrier mb = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = src_access,
		.dstAccessMask = dst_access,
	};
	x->dev->vk.vkCmdPipelineBarrier(cmd, src, dst, 0, 1, &mb, 0, NULL, 0, NULL);
}

void vy__vk_xfer_record_in(
	struct vy_vk_exec *x, VkCommandBuffer cmd, const struct vy_vk_xfer *bufs, size_t n)
{
	struct vy_vk_device *d = x->dev;
	bool any = false;
	for (size_t i = 0; i < n; i++) {
		const struct vy_vk_xfer *b = &bufs[i];
		if (b->src) {
			VkBufferCopy region = {b->src_offset, b->dev.offset, b->len};
			d->vk.vkCmdCopyBuffer(cmd, b->src, b->dev.buffer, 1, &region);
			any = true;
		} else if (b->up.buffer) {
			VkBufferCopy region = {b->up.offset, b->dev.offset, b->len};
			d->vk.vkCmdCopyBuffer(cmd, b->up.buffer, b->dev.buffer, 1, &region);
			any = true;
		} else if (b->fill_zero) {
			d->vk.vkCmdFillBuffer(cmd, b->dev.buffer, b->dev.offset, b->len, 0);
			any = true;
		} else if (b->len == 0 && x->dummy.buffer) {
			d->vk.vkCmdFillBuffer(cmd, x->dummy.buffer, x->dummy.offset, 4, 0);
			any = true;
		}
	}
	if (any) {
		barrier(x, cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
			VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
			VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
	}
}

void vy__vk_xfer_record_out(
	struct vy_vk_exec *x, VkCommandBuffer cmd, const struct vy_vk_xfer *bufs, size_t n)
{
	struct vy_vk_device *d = x->dev;
	bool copies = false;
	for (size_t i = 0; i < n; i++) {
		copies = copies || bufs[i].down.buffer;
	}
	/* Buffers the host reads directly need the shader's writes; staged ones need the copies. */
	barrier(x, cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
		VK_PIPELINE_STAGE_HOST_BIT | (copies ? VK_PIPELINE_STAGE_TRANSFER_BIT : 0),
		VK_ACCESS_HOST_READ_BIT | (copies ? VK_ACCESS_TRANSFER_READ_BIT : 0));
	if (!copies) {
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct vy_vk_xfer *b = &bufs[i];
		if (b->down.buffer) {
			VkBufferCopy region = {b->dev.offset, b->down.offset, b->len};
			d->vk.vkCmdCopyBuffer(cmd, b->dev.buffer, b->down.buffer, 1, &region);
		}
	}
	barrier(x, cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
		VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
}

int vy__vk_xfer_read(struct vy_vk_exec *x, const struct vy_vk_xfer *b, void *dst, uint64_t len,
	struct vy_err *err)
{
	if (len > b->len) {
		len = b->len;
	}
	if (len == 0) {
		return 0;
	}
	const struct vy_vk_slice *src = b->down.buffer ? &b->down : &b->dev;
	int rc = vy__vk_slice_invalidate(x->mem, src, len, err);
	if (rc == 0) {
		memcpy(dst, src->map, len);
	}
	return rc;
}

VkDescriptorBufferInfo vy__vk_xfer_descriptor(struct vy_vk_exec *x, const struct vy_vk_xfer *b)
{
	if (b->len > 0) {
		return (VkDescriptorBufferInfo){b->dev.buffer, b->dev.offset, b->len};
	}
	if (x->dummy.buffer) {
		return (VkDescriptorBufferInfo){x->dummy.buffer, x->dummy.offset, 4};
	}
	return (VkDescriptorBufferInfo){VK_NULL_HANDLE, 0, VK_WHOLE_SIZE};
}

int vy__vk_xfer_bind(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, VkCommandBuffer cmd,
	const struct vy_vk_layout *layout, uint32_t n, const uint32_t *bindings,
	const VkDescriptorBufferInfo *infos, struct vy_err *err)
{
	struct vy_vk_device *d = x->dev;
	VkWriteDescriptorSet writes[VY_LAYOUT_MAX_SLOTS];
	for (uint32_t i = 0; i < n; i++) {
		writes[i] = (VkWriteDescriptorSet){
			.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
			.dstBinding = bindings[i],
			.descriptorCount = 1,
			.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
			.pBufferInfo = &infos[i],
		};
	}
	if (layout->push) {
		d->vk.vkCmdPushDescriptorSetKHR(
			cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout->pipeline_layout, 0, n, writes);
		return 0;
	}
	VkDescriptorSet set;
	int rc = vy__vk_ctx_descriptor_set(x, ctx, layout->set_layout, &set, err);
	if (rc) {
		return rc;
	}
	for (uint32_t i = 0; i < n; i++) {
		writes[i].dstSet = set;
	}
	d->vk.vkUpdateDescriptorSets(d->dev, n, writes, 0, NULL);
	d->vk.vkCmdBindDescriptorSets(
		cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout->pipeline_layout, 0, 1, &set, 0, NULL);
	return 0;
}
