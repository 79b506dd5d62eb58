/*
 * One dispatch of the Vulkan backend, from checked inputs to outputs in the plan's order.
 *
 * Every non-workgroup buffer is bound with its exact byte range (`len` and the generated bounds
 * checks read it); output-role buffers start zeroed, input-consuming ones are uploaded, and the
 * buffers with an output index are read back. Each grid-sync segment is one dispatch in the same
 * command buffer, after a compute -> compute barrier, over the same buffers and with the whole
 * program's launch: every buffer keeps what the segments before wrote (DESIGN.md §5,
 * docs/semantics.md), as the reference runs a split program, and nothing leaves the device in
 * between. Each segment has its own range of the trap sidecar, so the first segment that trapped
 * is the one reported. An input whose config names an import holding exactly its bytes is copied
 * from the import by the device (vk_import.c); the import is held until the context is released.
 */
#include "vk_backend.h"

#include "node_path.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

/* Element counts of count-0 buffers from the request; checks the request against the plan. */
static int size_buffers(struct vy__vk_backend *b, struct vy__vk_kernel *k,
	const struct vy__vk_request *req, struct vy_binding *bind, struct vy_err *err)
{
	const struct vy_binding_plan *plan = k->plan;
	memcpy(bind, plan->bindings, plan->n_bindings * sizeof(*bind));
	if (req->inputs || !req->resources) {
		int rc = vy_binding_plan_check_inputs(plan, req->inputs, req->n_inputs, err);
		if (rc) {
			return rc;
		}
		for (uint32_t i = 0; i < plan->n_bindings; i++) {
			if (!bind[i].has_static_len && bind[i].input_index != VY_BINDING_NONE) {
				size_t len = req->inputs[bind[i].input_index].len;
				bind[i].element_count = (uint32_t)(len / bind[i].element_size);
			}
		}
		return 0;
	}
	uint32_t n = plan->n_bindings - plan->n_shared;
	if (req->n_resources != n) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "resources",
			"pass one resident buffer per non-workgroup buffer, in binding order",
			"the program has %u non-workgroup buffers; %zu resident buffers were given",
			n, req->n_resources);
	}
	uint32_t r = 0;
	for (uint32_t i = 0; i < plan->n_bindings; i++) {
		if (bind[i].role == VY_ROLE_SHARED) {
			continue;
		}
		const struct vy__vk_resident *res = req->resources[r];
		char at[32];
		snprintf(at, sizeof(at), "resources[%u]", r);
		r++;
		if (bind[i].has_static_len) {
			if (res->len < bind[i].static_byte_len) {
				return vy_err_set(err, VY_E_BAD_REQUEST, at,
					"allocate the resident buffer with at least the declared "
					"size",
					"buffer %s needs %zu bytes; the resident buffer holds %llu",
					bind[i].name, bind[i].static_byte_len,
					(unsigned long long)res->len);
			}
			continue;
		}
		if (res->len % bind[i].element_size != 0 ||
			res->len / bind[i].element_size > UINT32_MAX) {
			return vy_err_set(err, VY_E_BAD_REQUEST, at,
				"give a resident buffer of whole elements, at most 2^32 - 1 of "
				"them",
				"buffer %s takes %u-byte elements; the resident buffer holds %llu "
				"bytes",
				bind[i].name, bind[i].element_size, (unsigned long long)res->len);
		}
		bind[i].element_count = (uint32_t)(res->len / bind[i].element_size);
	}
	return 0;
}

int vy__vk_check_workgroup(struct vy__vk_backend *b, const uint32_t wg[3], struct vy_err *err)
{
	const VkPhysicalDeviceLimits *l = &b->dev.props.limits;
	uint64_t product = (uint64_t)wg[0] * wg[1] * wg[2];
	for (int i = 0; i < 3; i++) {
		if (wg[i] == 0) {
			return vy_err_set(err, VY_E_BAD_REQUEST, "config.workgroup_size",
				"give every axis of the workgroup size, each at least 1",
				"workgroup size override has 0 on axis %d", i);
		}
	}
	for (int i = 0; i < 3; i++) {
		if (wg[i] > l->maxComputeWorkGroupSize[i]) {
			return vy_err_set(err, VY_E_UNSUPPORTED_FEATURE, "config.workgroup_size",
				"use a workgroup size within the device's limits (vyrectl devices)",
				"workgroup size %u on axis %d exceeds the device's limit %u", wg[i],
				i, l->maxComputeWorkGroupSize[i]);
		}
	}
	if (product > l->maxComputeWorkGroupInvocations) {
		return vy_err_set(err, VY_E_UNSUPPORTED_FEATURE, "config.workgroup_size",
			"use a workgroup size within the device's limits (vyrectl devices)",
			"workgroup of %llu invocations exceeds the device's limit %u",
			(unsigned long long)product, l->maxComputeWorkGroupInvocations);
	}
	return 0;
}

/*
 * Whether a launch runs coarse (vk_coarse.c): every segment's shader is elementwise, the launch
 * is 1-D in workgroups and grid, and it has enough workgroups that a quarter of them still fill
 * the device. The logical grid stays below 2^31 workgroups, so the shader's workgroup numbers
 * cannot wrap.
 */
static bool coarse_fits(
	const struct vy__vk_backend *b, const struct vy__vk_kernel *k, const struct vy_launch *la)
{
	for (uint32_t s = 0; s < k->n_segments; s++) {
		if (!k->segments[s].layout.coarse) {
			return false;
		}
	}
	return la->workgroup_size[1] == 1 && la->workgroup_size[2] == 1 && la->grid[1] == 1 &&
	       la->grid[2] == 1 && la->grid[0] >= b->exec.coarse_min &&
	       la->grid[0] < UINT32_C(1) << 31;
}

/* Whether a launch of `w` workgroups runs as parts (vy__vk_split_plan). */
static bool splits(const struct vy_vk_exec *x, const uint32_t w[3])
{
	return (uint64_t)w[0] * w[1] * w[2] > x->part_min;
}

int vy__vk_plan_launch(struct vy__vk_backend *b, struct vy__vk_kernel *k,
	const struct vy_binding_plan *plan, const struct vy_dispatch_config *config,
	struct vy__vk_job *job, struct vy_err *err)
{
	struct vy_launch_config lcfg;
	memcpy(lcfg.grid, config->grid, sizeof(lcfg.grid));
	memcpy(lcfg.workgroup_size, config->workgroup_size, sizeof(lcfg.workgroup_size));
	struct vy_launch_limits limits;
	memcpy(limits.max_workgroup_count, b->dev.props.limits.maxComputeWorkGroupCount,
		sizeof(limits.max_workgroup_count));
	int rc =
		vy_launch_compute(k->program, k->features, plan, &lcfg, &limits, &job->launch, err);
	if (rc == 0 && (config->workgroup_size[0] || config->workgroup_size[1] ||
			       config->workgroup_size[2])) {
		rc = vy__vk_check_workgroup(b, job->launch.workgroup_size, err);
	}
	job->form.uncounted = vy__vk_uncounted(
		k, config->max_loop_iterations ? config->max_loop_iterations
					       : VY_DISPATCH_DEFAULT_MAX_LOOP_ITERATIONS);
	job->form.coarse = 0;
	if (rc == 0 && coarse_fits(b, k, &job->launch)) {
		/* The same workgroups, VY_VK_COARSE to a launched one: the launch of that many. */
		struct vy_launch fewer;
		lcfg.grid[0] = job->launch.grid[0] / VY_VK_COARSE +
			       (job->launch.grid[0] % VY_VK_COARSE != 0);
		lcfg.grid[1] = lcfg.grid[2] = 1;
		memcpy(lcfg.workgroup_size, job->launch.workgroup_size,
			sizeof(lcfg.workgroup_size));
		if (vy_launch_compute(
			    k->program, k->features, plan, &lcfg, &limits, &fewer, NULL) == 0) {
			memcpy(job->launch.workgroups, fewer.workgroups, sizeof(fewer.workgroups));
			job->launch.folded = fewer.folded;
			job->form.coarse = VY_VK_COARSE;
		}
	}
	job->form.direct = rc == 0 && job->form.coarse == 0 && !job->launch.folded &&
			   !splits(&b->exec, job->launch.workgroups);
	return rc;
}

static int prepare_buffers(struct vy__vk_backend *b, struct vy__vk_kernel *k,
	const struct vy_binding *bind, const struct vy__vk_request *req, struct vy__vk_job *job,
	struct vy_err *err)
{
	struct vy_vk_exec *x = &b->exec;
	const struct vy_binding_plan *plan = k->plan;
	uint32_t r = 0;
	for (uint32_t i = 0; i < VY_IR_MAX_BUFFERS; i++) {
		job->buf_of[i] = VY_BINDING_NONE;
	}
	for (uint32_t i = 0; i < plan->n_bindings; i++) {
		const struct vy_binding *bd = &bind[i];
		if (bd->role == VY_ROLE_SHARED) {
			continue;
		}
		uint64_t len = (uint64_t)bd->element_count * bd->element_size;
		if (len > b->dev.max_storage_range) {
			return vy_err_set(err, VY_E_UNSUPPORTED_FEATURE, NULL,
				"split the data over several dispatches or buffers",
				"buffer %s is %llu bytes; the device binds at most %llu bytes per "
				"buffer",
				bd->name, (unsigned long long)len,
				(unsigned long long)b->dev.max_storage_range);
		}
		uint32_t slot = job->n_bufs++;
		job->buf_of[bd->buffer_index] = slot;
		struct vy_vk_xfer *xf = &job->bufs[slot];
		bool zero = bd->role == VY_ROLE_OUTPUT;
		if (req->resources) {
			struct vy__vk_resident *res = req->resources[r++];
			atomic_fetch_add(&res->refs, 1);
			vy__vk_ctx_hold(job->ctx, vy__vk_resident_release, res);
			vy__vk_xfer_wrap(&res->slice, len, zero, xf);
		} else {
			const void *data = NULL;
			struct vy__vk_import *im = NULL;
			VkDeviceSize at = 0;
			if (bd->input_index != VY_BINDING_NONE) {
				data = req->inputs[bd->input_index].data;
			}
			if (data && req->config->imports) {
				im = vy__vk_import_find(
					b, &req->config->imports[bd->input_index], data, len, &at);
			}
			bool back = bd->output_index != VY_BINDING_NONE;
			int rc;
			if (im) {
				vy__vk_ctx_hold(job->ctx, vy__vk_import_release, im);
				rc = vy__vk_xfer_prepare_copy(
					x, job->ctx, len, im->buffer, at, back, xf, err);
				job->imported_inputs++;
				job->imported_bytes += len;
			} else {
				bool written =
					bd->role != VY_ROLE_INPUT && bd->role != VY_ROLE_UNIFORM;
				rc = vy__vk_xfer_prepare(x, job->ctx, len, data, zero, back,
					written, &job->pack, xf, err);
			}
			if (rc) {
				return rc;
			}
		}
	}
	job->n_outputs = req->resources ? 0 : plan->n_outputs;
	for (uint32_t i = 0; i < job->n_outputs; i++) {
		job->output_buf[i] = job->buf_of[plan->output_indices[i]];
	}
	VkDeviceSize align = b->dev.props.limits.minStorageBufferOffsetAlignment;
	uint32_t trap = k->segments[0].layout.trap_bytes;
	job->sidecar_stride = (uint32_t)((trap + align - 1) / align * align);
	job->sidecar = job->n_bufs++;
	int rc = vy__vk_xfer_prepare(x, job->ctx, (uint64_t)job->sidecar_stride * k->n_segments,
		NULL, true, true, true, &job->pack, &job->bufs[job->sidecar], err);
	if (rc == 0) {
		rc = vy__vk_xfer_pack(x, job->ctx, &job->pack, job->bufs, job->n_bufs, err);
	}
	return rc;
}

/*
 * Split a launch of more than exec.part_min workgroups into at most about PART_COUNT parts along
 * its outermost axis of more than one workgroup. Each part is an indirect dispatch whose
 * arguments the host empties when the job is abandoned: the stop word, which the shaders of a
 * split launch also read on entry, ends the workgroups that run, and the parts not started then
 * launch none (DESIGN.md §7.5). A launch too small to split reads it only in its loops: without
 * them, its invocations' work is bounded by the program's size.
 */
#define PART_COUNT 65536u

uint32_t vy__vk_split_plan(struct vy_vk_exec *x, struct vy__vk_job *job)
{
	const uint32_t *w = job->launch.workgroups;
	uint64_t total = (uint64_t)w[0] * w[1] * w[2];
	job->n_parts = 0;
	if (!splits(x, w)) {
		return 0;
	}
	uint32_t axis = w[2] > 1 ? 2 : w[1] > 1 ? 1 : 0;
	uint64_t unit = axis == 2 ? (uint64_t)w[0] * w[1] : axis == 1 ? w[0] : 1;
	uint64_t want = total / PART_COUNT > x->part_min ? total / PART_COUNT : x->part_min;
	uint64_t step = want / unit > 1 ? want / unit : 1;
	job->n_parts = (uint32_t)((w[axis] + step - 1) / step);
	job->part_axis = axis;
	job->part_step = (uint32_t)step;
	return job->n_parts;
}

void vy__vk_split_fill(const struct vy__vk_job *job, uint32_t *args)
{
	const uint32_t *w = job->launch.workgroups;
	uint32_t axis = job->part_axis;
	for (uint32_t i = 0; i < job->n_parts; i++) {
		uint64_t first = (uint64_t)i * job->part_step;
		memcpy(&args[3 * i], w, 3 * sizeof(uint32_t));
		args[3 * i + axis] = (uint32_t)(w[axis] - first < job->part_step ? w[axis] - first
										 : job->part_step);
	}
}

static int split_launch(struct vy_vk_exec *x, struct vy__vk_job *job, struct vy_err *err)
{
	uint32_t n = vy__vk_split_plan(x, job);
	if (n == 0) {
		return 0;
	}
	uint32_t *args = NULL;
	int rc = vy__vk_ctx_parts(x, job->ctx, n, &job->parts, &args, err);
	if (rc) {
		job->n_parts = 0;
		return rc;
	}
	vy__vk_split_fill(job, args);
	return 0;
}

static void record_launch(struct vy_vk_device *d, VkCommandBuffer cmd, VkPipelineLayout layout,
	const struct vy__vk_job *job)
{
	const struct vy_launch *la = &job->launch;
	if (job->n_parts == 0) {
		d->vk.vkCmdDispatch(cmd, la->workgroups[0], la->workgroups[1], la->workgroups[2]);
		return;
	}
	uint32_t base[3] = {0, 0, 0};
	for (uint32_t i = 0; i < job->n_parts; i++) {
		base[job->part_axis] = i * job->part_step;
		d->vk.vkCmdPushConstants(cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT,
			offsetof(struct vy_vk_push, base), sizeof(base), base);
		d->vk.vkCmdDispatchIndirect(cmd, job->parts.buffer,
			job->parts.offset + (VkDeviceSize)i * 3 * sizeof(uint32_t));
	}
}

void vy__vk_compute_barrier(struct vy_vk_device *d, VkCommandBuffer cmd)
{
	VkMemoryBarrier mb = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
	};
	d->vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
		VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
}

void vy__vk_entry_barrier(struct vy_vk_device *d, VkCommandBuffer cmd)
{
	VkMemoryBarrier mb = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
				 VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
	};
	VkPipelineStageFlags stages =
		VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
	d->vk.vkCmdPipelineBarrier(cmd, stages, stages, 0, 1, &mb, 0, NULL, 0, NULL);
}

int vy__vk_record_launches(struct vy__vk_backend *b, struct vy_vk_ctx *ctx, VkCommandBuffer cmd,
	const struct vy__vk_job *job, uint64_t loop_limit, struct vy_err *err)
{
	const struct vy__vk_kernel *k = job->k;
	struct vy_vk_device *d = &b->dev;
	struct vy_vk_exec *x = &b->exec;
	const struct vy_vk_xfer *side = &job->bufs[job->sidecar];
	const struct vy_launch *la = &job->launch;
	for (uint32_t s = 0; s < k->n_segments; s++) {
		const struct vy__vk_segment *seg = &k->segments[s];
		if (s > 0) {
			/* Every buffer keeps what the segments before wrote (DESIGN.md §5). */
			vy__vk_compute_barrier(d, cmd);
		}
		d->vk.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, job->v->pipelines[s]);
		uint32_t bindings[VY_LAYOUT_MAX_SLOTS];
		VkDescriptorBufferInfo infos[VY_LAYOUT_MAX_SLOTS];
		uint32_t n = 0;
		uint32_t empty = 0;
		for (uint32_t i = 0; i < seg->layout.n_bindings; i++) {
			uint32_t slot = job->buf_of[seg->layout.bindings[i].buffer_index];
			bindings[n] = seg->layout.bindings[i].vk_binding;
			infos[n++] = vy__vk_xfer_descriptor(x, &job->bufs[slot]);
			if (job->bufs[slot].len == 0) {
				empty |= UINT32_C(1) << bindings[n - 1];
			}
		}
		bindings[n] = seg->layout.trap_binding;
		infos[n++] = (VkDescriptorBufferInfo){side->dev.buffer,
			side->dev.offset + (VkDeviceSize)s * job->sidecar_stride,
			seg->layout.trap_bytes};
		bindings[n] = seg->layout.stop_binding;
		infos[n++] = (VkDescriptorBufferInfo){
			ctx->stop.buffer, ctx->stop.offset, sizeof(uint32_t)};
		int rc = vy__vk_xfer_bind(x, ctx, cmd, seg->vk_layout, n, bindings, infos, err);
		if (rc) {
			return rc;
		}
		struct vy_vk_push push = {
			.logical_workgroups = {la->grid[0], la->grid[1], la->grid[2]},
			.dispatch_x = la->workgroups[0],
			.dispatch_y = la->workgroups[1],
			.loop_limit_lo = (uint32_t)loop_limit,
			.loop_limit_hi = (uint32_t)(loop_limit >> 32),
			.empty_bindings = empty,
			.stop_on_entry = job->n_parts > 0,
		};
		d->vk.vkCmdPushConstants(cmd, seg->vk_layout->pipeline_layout,
			VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(push), &push);
		record_launch(d, cmd, seg->vk_layout->pipeline_layout, job);
	}
	return 0;
}

struct record_arg {
	struct vy__vk_backend *b;
	struct vy__vk_job *job;
	uint64_t loop_limit;
	bool tail; /* leave the copies back to the batch's tail */
};

static int record_job(struct vy_vk_ctx *ctx, VkCommandBuffer cmd, void *arg, struct vy_err *err)
{
	struct record_arg *ra = arg;
	struct vy__vk_backend *b = ra->b;
	struct vy__vk_job *job = ra->job;
	struct vy_vk_device *d = &b->dev;
	struct vy_vk_exec *x = &b->exec;
	if (job->resident) {
		vy__vk_entry_barrier(d, cmd);
	}
	vy__vk_xfer_record_in(x, cmd, ra->tail ? ctx : NULL, &job->pack, job->bufs, job->n_bufs);
	vy__vk_ctx_stamp(x, ctx, 0);
	int rc = vy__vk_record_launches(b, ctx, cmd, job, ra->loop_limit, err);
	if (rc) {
		return rc;
	}
	vy__vk_ctx_stamp(x, ctx, 1);
	vy__vk_ctx_scrub(x, ctx, cmd);
	struct vy_vk_xfer out[VY_IR_MAX_BUFFERS + 1];
	uint32_t n_out = 0;
	for (uint32_t i = 0; i < job->n_outputs; i++) {
		out[n_out++] = job->bufs[job->output_buf[i]];
	}
	out[n_out++] = job->bufs[job->sidecar];
	vy__vk_xfer_record_out(x, cmd, ra->tail ? ctx : NULL, &job->pack, out, n_out);
	return 0;
}

int vy__vk_job_start(struct vy__vk_backend *b, struct vy__vk_kernel *k,
	const struct vy__vk_request *req, bool now, struct vy__vk_job *job, struct vy_err *err)
{
	memset(job, 0, offsetof(struct vy__vk_job, buf_of));
	job->k = k;
	job->start_ns = now_ns();
	job->resident = req->resources != NULL;
	job->timed = req->timed || req->config->timing;
	job->timeout_ns =
		req->config->timeout_ms ? (uint64_t)req->config->timeout_ms * 1000000 : UINT64_MAX;
	job->n_bufs = 0;
	struct vy_binding bind[VY_IR_MAX_BUFFERS];
	struct vy_binding_plan plan = *k->plan;
	plan.bindings = bind;
	int rc = size_buffers(b, k, req, bind, err);
	if (rc == 0 && !req->resources) {
		/* Before any buffer is allocated for them. */
		rc = vy_binding_plan_check_outputs(&plan,
			req->config->max_output_bytes ? req->config->max_output_bytes
						      : VY_DISPATCH_DEFAULT_MAX_OUTPUT_BYTES,
			err);
	}
	if (rc == 0 && vy__vk_fault_take(b, VY_FAULT_OUT_OF_MEMORY, err)) {
		rc = VY_E_OUT_OF_MEMORY;
	}
	if (rc == 0 && vy__vk_fault_take(b, VY_FAULT_DISPATCH, err)) {
		rc = VY_E_DISPATCH_FAILED;
	}
	if (rc == 0) {
		rc = vy__vk_plan_launch(b, k, &plan, req->config, job, err);
	}
	if (rc == 0) {
		rc = vy__vk_variant_get(
			k, req->config->spec, job->launch.workgroup_size, job->form, &job->v, err);
	}
	if (rc == 0) {
		rc = vy__vk_ctx_acquire(&b->exec, &job->ctx, err);
	}
	if (rc) {
		vy__vk_kernel_unref(k);
		job->k = NULL;
		return rc;
	}
	vy__vk_ctx_hold(job->ctx, vy__vk_kernel_release, k);
	rc = prepare_buffers(b, k, bind, req, job, err);
	if (rc == 0) {
		rc = split_launch(&b->exec, job, err);
	}
	uint64_t limit = req->config->max_loop_iterations ? req->config->max_loop_iterations
							  : VY_DISPATCH_DEFAULT_MAX_LOOP_ITERATIONS;
	/* A job queued behind others (not submitted at once) with no resident buffer and no
	 * timestamps leaves its copies back to the batch's tail: the batch's dispatches then run
	 * without a barrier between them. */
	struct record_arg ra = {b, job, limit, !now && !job->resident && !job->timed};
	if (rc == 0) {
		uint32_t sets = b->pipes.push_descriptors ? 0 : k->n_segments;
		rc = vy__vk_ctx_submit(
			&b->exec, job->ctx, job->timed, now, sets, record_job, &ra, err);
	}
	if (rc) {
		vy__vk_ctx_release(&b->exec, job->ctx);
		job->ctx = NULL;
		job->k = NULL;
		return rc;
	}
	job->enqueue_ns = now_ns() - job->start_ns;
	if (job->imported_inputs) {
		atomic_fetch_add(&b->imported_inputs, job->imported_inputs);
		atomic_fetch_add(&b->imported_bytes, job->imported_bytes);
	}
	return 0;
}

bool vy__vk_job_ready(struct vy__vk_backend *b, struct vy__vk_job *job)
{
	return vy__vk_ctx_ready(&b->exec, job->ctx);
}

void vy__vk_job_abandon(struct vy__vk_backend *b, struct vy__vk_job *job)
{
	if (job->ctx) {
		vy__vk_ctx_abandon(&b->exec, job->ctx);
	}
	job->ctx = NULL;
	job->k = NULL;
}

/*
 * The trap of segment `s`, named by the program as written: the shader numbers the nodes of the
 * lowered segment, so the sidecar's nodes are first mapped back to the written ones.
 */
static int decode_segment(const struct vy__vk_kernel *k, uint32_t s, const uint8_t *sidecar,
	uint32_t loop_passes, struct vy_err *err)
{
	const struct vy__vk_segment *seg = &k->segments[s];
	uint32_t words[3];
	memcpy(words, sidecar, sizeof(words));
	if (words[0] == 0 && words[2] == 0) {
		return 0;
	}
	const struct vy_program *named = seg->program;
	uint32_t key = ~words[0];
	uint32_t node = key / VY_TRAP_KIND_COUNT;
	uint32_t cut = ~words[2];
	/* A node the lowered segment does not have is decoded as it is, which reports it. */
	if (seg->origins && (words[0] == 0 || node < seg->n_origins) &&
		(words[2] == 0 || cut < seg->n_origins)) {
		if (words[0] != 0) {
			enum vy_trap_kind kind = (enum vy_trap_kind)(key % VY_TRAP_KIND_COUNT);
			words[0] = ~(uint32_t)vy_trap_key(seg->origins[node], kind);
		}
		if (words[2] != 0) {
			words[2] = ~seg->origins[cut];
		}
		named = seg->written;
	}
	int rc = vy_vk_trap_decode(named, words, sizeof(words), loop_passes, err);
	return rc ? vy__vk_segment_error(k, s, rc, err) : 0;
}

int vy__vk_decode_sidecar(struct vy__vk_backend *b, const struct vy__vk_kernel *k,
	const uint8_t *side, uint32_t stride, struct vy_err *err)
{
	for (uint32_t s = 0; s < k->n_segments; s++) {
		int rc = decode_segment(k, s, side + (size_t)s * stride, b->cg.loop_passes, err);
		if (rc) {
			return rc;
		}
	}
	return 0;
}

static int decode_traps(struct vy__vk_backend *b, struct vy__vk_job *job, struct vy_err *err)
{
	const struct vy_vk_xfer *sidecar = &job->bufs[job->sidecar];
	uint8_t local[256];
	uint64_t len = sidecar->len;
	uint8_t *side = len <= sizeof(local) ? local : malloc(len);
	if (!side) {
		fprintf(stderr, "vyred: out of memory reading %llu trap bytes\n",
			(unsigned long long)len);
		abort();
	}
	int rc = vy__vk_xfer_read(&b->exec, sidecar, side, len, err);
	if (rc == 0) {
		rc = vy__vk_decode_sidecar(b, job->k, side, job->sidecar_stride, err);
	}
	if (side != local) {
		free(side);
	}
	return rc;
}

static int read_outputs(struct vy__vk_backend *b, struct vy__vk_job *job,
	struct vy_outputs *outputs, struct vy_err *err)
{
	bool reuse = outputs->len == job->n_outputs;
	for (uint32_t i = 0; reuse && i < job->n_outputs; i++) {
		reuse = outputs->items[i].len == job->bufs[job->output_buf[i]].len;
	}
	if (!reuse) {
		vy_outputs_clear(outputs);
		for (uint32_t i = 0; i < job->n_outputs; i++) {
			vy_outputs_push_zeroed(outputs, job->bufs[job->output_buf[i]].len);
		}
	}
	for (uint32_t i = 0; i < job->n_outputs; i++) {
		const struct vy_vk_xfer *xf = &job->bufs[job->output_buf[i]];
		int rc = vy__vk_xfer_read(&b->exec, xf, outputs->items[i].data, xf->len, err);
		if (rc) {
			return rc;
		}
	}
	return 0;
}

int vy__vk_job_finish(struct vy__vk_backend *b, struct vy__vk_job *job, struct vy_outputs *outputs,
	struct vy_timing *timing, struct vy_err *err)
{
	uint64_t wait_start = now_ns();
	int rc = vy__vk_ctx_wait(&b->exec, job->ctx, job->timeout_ns, err);
	uint64_t wait_ns = now_ns() - wait_start;
	if (rc == VY_E_TIMEOUT) {
		vy__vk_job_abandon(b, job);
		return rc;
	}
	if (rc == 0) {
		rc = decode_traps(b, job, err);
	}
	if (rc == 0 && outputs) {
		rc = read_outputs(b, job, outputs, err);
	}
	if (rc == 0 && timing) {
		timing->wall_ns = now_ns() - job->start_ns;
		timing->enqueue_ns = job->enqueue_ns;
		timing->wait_ns = wait_ns;
		uint64_t dev = vy__vk_ctx_device_ns(&b->exec, job->ctx);
		timing->device_ns = dev == UINT64_MAX ? VY_TIMING_NONE : dev;
	}
	vy__vk_ctx_release(&b->exec, job->ctx);
	job->ctx = NULL;
	job->k = NULL;
	return rc;
}
