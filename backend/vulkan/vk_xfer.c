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
	bool zero, bool read_back, bool written, struct vy_vk_pack *pack, struct vy_vk_xfer *out,
	struct vy_err *err)
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
	if (pack && !x->dev->unified && len <= x->direct_limit) {
		out->packed = true;
		out->data = data;
		return 0;
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

/* Where a packed buffer goes: its group's index in the layout of struct vy_vk_pack. */
static int pack_group(const struct vy_vk_xfer *b)
{
	if (b->data) {
		return b->read_back ? 1 : 0;
	}
	return b->read_back ? 2 : 3;
}

static VkDeviceSize round_up(VkDeviceSize v, VkDeviceSize to)
{
	return (v + to - 1) / to * to;
}

/* A view of `len` bytes of `whole` starting `at` bytes in, for one buffer of a pack. */
static struct vy_vk_slice pack_view(const struct vy_vk_slice *whole, VkDeviceSize at, uint64_t len)
{
	struct vy_vk_slice v = *whole;
	v.offset += at;
	v.size = round_up(len, 4);
	v.map = whole->map ? whole->map + at : NULL;
	return v;
}

int vy__vk_xfer_pack(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, struct vy_vk_pack *pack,
	struct vy_vk_xfer *bufs, size_t n, struct vy_err *err)
{
	memset(pack, 0, sizeof(*pack));
	VkDeviceSize align = x->dev->props.limits.minStorageBufferOffsetAlignment;
	align = align < 4 ? 4 : align;
	VkDeviceSize starts[4];
	VkDeviceSize ends[4];
	VkDeviceSize end = 0;
	/* Offsets within the pack, group by group; a buffer's dev.offset holds its own until the
	 * slices exist. */
	for (int g = 0; g < 4; g++) {
		starts[g] = round_up(end, align);
		end = starts[g];
		for (size_t i = 0; i < n; i++) {
			if (bufs[i].packed && pack_group(&bufs[i]) == g) {
				bufs[i].dev.offset = round_up(end, align);
				end = bufs[i].dev.offset + round_up(bufs[i].len, 4);
			}
		}
		ends[g] = end;
	}
	if (end == 0) {
		return 0;
	}
	pack->up_len = ends[1];
	pack->fill_at = starts[2];
	pack->fill_len = ends[3] - starts[2];
	pack->down_at = starts[1];
	pack->down_len = ends[2] - starts[1];
	bool zeroed = false;
	int rc = vy__vk_ctx_pack_slice(x, ctx, end, &pack->dev, &zeroed, err);
	if (zeroed) {
		pack->fill_len = 0;
	}
	if (rc == 0 && pack->up_len) {
		rc = vy__vk_ctx_slice(x, ctx, VY_VK_POOL_UPLOAD, pack->up_len, &pack->up, err);
	}
	if (rc == 0 && pack->down_len) {
		rc = vy__vk_ctx_slice(
			x, ctx, VY_VK_POOL_READBACK, pack->down_len, &pack->down, err);
	}
	if (rc) {
		return rc;
	}
	for (size_t i = 0; i < n; i++) {
		struct vy_vk_xfer *b = &bufs[i];
		if (!b->packed) {
			continue;
		}
		VkDeviceSize at = b->dev.offset;
		b->dev = pack_view(&pack->dev, at, b->len);
		if (b->data) {
			b->up = pack_view(&pack->up, at, b->len);
			memcpy(b->up.map, b->data, b->len);
			b->data = NULL;
		} else {
			b->fill_zero = true;
		}
		if (b->read_back) {
			b->down = pack_view(&pack->down, at - pack->down_at, b->len);
		}
	}
	return 0;
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

/* Record one upload or fill of record_in, or leave it to the batch's head. */
static void record_in_one(struct vy_vk_exec *x, VkCommandBuffer cmd, struct vy_vk_ctx *head,
	VkBuffer src, VkBuffer dst, const VkBufferCopy *region)
{
	struct vy_vk_device *d = x->dev;
	if (head) {
		vy__vk_ctx_defer_in(head, src, dst, region);
	} else if (src) {
		d->vk.vkCmdCopyBuffer(cmd, src, dst, 1, region);
	} else {
		d->vk.vkCmdFillBuffer(cmd, dst, region->dstOffset, region->size, 0);
	}
}

void vy__vk_xfer_record_in(struct vy_vk_exec *x, VkCommandBuffer cmd, struct vy_vk_ctx *head,
	const struct vy_vk_pack *pack, const struct vy_vk_xfer *bufs, size_t n)
{
	bool any = false;
	if (pack && pack->up_len) {
		VkBufferCopy region = {pack->up.offset, pack->dev.offset, pack->up_len};
		record_in_one(x, cmd, head, pack->up.buffer, pack->dev.buffer, &region);
		any = true;
	}
	if (pack && pack->fill_len) {
		VkBufferCopy region = {0, pack->dev.offset + pack->fill_at, pack->fill_len};
		record_in_one(x, cmd, head, VK_NULL_HANDLE, pack->dev.buffer, &region);
		any = true;
	}
	for (size_t i = 0; i < n; i++) {
		const struct vy_vk_xfer *b = &bufs[i];
		if (b->packed) {
			continue;
		}
		if (b->src) {
			VkBufferCopy region = {b->src_offset, b->dev.offset, b->len};
			record_in_one(x, cmd, head, b->src, b->dev.buffer, &region);
			any = true;
		} else if (b->up.buffer) {
			VkBufferCopy region = {b->up.offset, b->dev.offset, b->len};
			record_in_one(x, cmd, head, b->up.buffer, b->dev.buffer, &region);
			any = true;
		} else if (b->fill_zero) {
			VkBufferCopy region = {0, b->dev.offset, b->len};
			record_in_one(x, cmd, head, VK_NULL_HANDLE, b->dev.buffer, &region);
			any = true;
		} else if (b->len == 0 && x->dummy.buffer) {
			VkBufferCopy region = {0, x->dummy.offset, 4};
			record_in_one(x, cmd, head, VK_NULL_HANDLE, x->dummy.buffer, &region);
			any = true;
		}
	}
	if (any && !head) {
		barrier(x, cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
			VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
			VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
	}
}

void vy__vk_xfer_record_out(struct vy_vk_exec *x, VkCommandBuffer cmd, struct vy_vk_ctx *tail,
	const struct vy_vk_pack *pack, const struct vy_vk_xfer *bufs, size_t n)
{
	struct vy_vk_device *d = x->dev;
	bool copies = pack && pack->down_len;
	bool direct = false; /* a buffer the host reads where the shader wrote it */
	for (size_t i = 0; i < n; i++) {
		copies = copies || (bufs[i].down.buffer && !bufs[i].packed);
		direct = direct || (!bufs[i].down.buffer && !bufs[i].packed && bufs[i].len);
	}
	if (tail && copies && !direct) {
		if (pack && pack->down_len) {
			VkBufferCopy region = {pack->dev.offset + pack->down_at, pack->down.offset,
				pack->down_len};
			vy__vk_ctx_defer_copy(tail, pack->dev.buffer, pack->down.buffer, &region);
		}
		for (size_t i = 0; i < n; i++) {
			const struct vy_vk_xfer *b = &bufs[i];
			if (b->down.buffer && !b->packed) {
				VkBufferCopy region = {b->dev.offset, b->down.offset, b->len};
				vy__vk_ctx_defer_copy(tail, b->dev.buffer, b->down.buffer, &region);
			}
		}
		return;
	}
	/* Buffers the host reads directly need the shader's writes; staged ones need the copies. */
	barrier(x, cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
		VK_PIPELINE_STAGE_HOST_BIT | (copies ? VK_PIPELINE_STAGE_TRANSFER_BIT : 0),
		VK_ACCESS_HOST_READ_BIT | (copies ? VK_ACCESS_TRANSFER_READ_BIT : 0));
	if (!copies) {
		return;
	}
	if (pack && pack->down_len) {
		VkBufferCopy region = {
			pack->dev.offset + pack->down_at, pack->down.offset, pack->down_len};
		d->vk.vkCmdCopyBuffer(cmd, pack->dev.buffer, pack->down.buffer, 1, &region);
	}
	for (size_t i = 0; i < n; i++) {
		const struct vy_vk_xfer *b = &bufs[i];
		if (b->down.buffer && !b->packed) {
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
