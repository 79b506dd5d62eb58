/*
 * Execution contexts, batched submission on one timeline semaphore, and completion by spinning
 * then sleeping. The queue lock covers recording too, because command buffers allocated from one
 * pool must not be recorded concurrently; everything slow (staging copies, waiting, readback)
 * happens outside it.
 */
#include "vk_exec.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "binding.h"
#include "vk_util.h"

#define BATCH_LIMIT 16
#define GPU_SPIN_NS 50000
/* Below this, a GPU reading host memory over the bus costs less than a copy command and the
 * barriers around it (buffers the shader writes are always in device memory: vk_xfer.c). */
#define DIRECT_LIMIT ((uint64_t)64 << 10)
/* Workgroups beyond which a dispatch is launched in parts (vk_dispatch.c): on lavapipe 4096
 * empty workgroups take about 3 ms, on a GPU a million take well under a millisecond. */
#define PART_MIN_CPU ((uint64_t)1 << 12)
#define PART_MIN_GPU ((uint64_t)1 << 20)
/* Logical workgroups from which a 1-D launch of an elementwise program runs coarse
 * (vk_coarse.c): on a GPU, a launch that still fills the device with an eighth of its
 * workgroups; on a CPU device none, since llvmpipe compiles the coarse form's eight calls at a
 * cost in time and memory that a CPU's loads in flight do not repay (the tests run it there
 * with VY__VK_TEST_COARSE_ALL). */
#define COARSE_MIN_CPU UINT32_MAX
#define COARSE_MIN_GPU (1u << 12)

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

static void *xrealloc(void *p, size_t n, size_t size)
{
	void *q = realloc(p, n * size);
	if (!q) {
		fprintf(stderr, "vyred: out of memory (%zu x %zu bytes)\n", n, size);
		abort();
	}
	return q;
}

int vy__vk_exec_init(struct vy_vk_exec *x, struct vy_vk_device *dev, struct vy_vk_memory *mem,
	struct vy_err *err)
{
	memset(x, 0, sizeof(*x));
	x->dev = dev;
	x->mem = mem;
	x->batch_limit = BATCH_LIMIT;
	/* On a CPU device the spinning thread would take a core from the work it waits for. */
	x->spin_ns = dev->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? 0 : GPU_SPIN_NS;
	x->direct_limit = DIRECT_LIMIT;
	/* A part of a split launch should end within milliseconds once its job is stopped. */
	x->part_min =
		dev->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? PART_MIN_CPU : PART_MIN_GPU;
	x->coarse_min = dev->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? COARSE_MIN_CPU
									     : COARSE_MIN_GPU;
	x->clean = xrealloc(NULL, VY_VK_KEPT_PACKS, sizeof(*x->clean));
	x->dirty = xrealloc(NULL, VY_VK_KEPT_PACKS, sizeof(*x->dirty));
	pthread_mutex_init(&x->lock, NULL);
	int rc = 0;
	VkCommandPoolCreateInfo pool = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
		.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
		.queueFamilyIndex = dev->queue_family,
	};
	VY_VK(dev->vk.vkCreateCommandPool(dev->dev, &pool, NULL, &x->pool));
	VkSemaphoreTypeCreateInfo type = {
		.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
		.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
		.initialValue = 0,
	};
	VkSemaphoreCreateInfo sem = {
		.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &type};
	VY_VK(dev->vk.vkCreateSemaphore(dev->dev, &sem, NULL, &x->timeline));
	if (!dev->null_descriptor) {
		rc = vy__vk_slice_alloc(mem, VY_VK_POOL_DEVICE, 4, &x->dummy, err);
		if (rc) {
			goto error;
		}
	}
	return 0;
error:
	vy__vk_exec_finish(x);
	return rc;
}

static uint64_t counter_value(struct vy_vk_exec *x);

/* Keep a pack slice in `list` (clean or dirty) for reuse, or free it when the list is full. */
static void keep_pack(
	struct vy_vk_exec *x, struct vy_vk_used *list, size_t *n, const struct vy_vk_used *u)
{
	if (*n < VY_VK_KEPT_PACKS) {
		list[(*n)++] = *u;
	} else {
		struct vy_vk_slice s = u->slice;
		vy__vk_slice_free(x->mem, &s);
	}
}

/* The context's pack slice becomes dirty; those it zeroed become clean if its job ran. */
static void release_packs_locked(struct vy_vk_exec *x, struct vy_vk_ctx *ctx)
{
	if (ctx->pack.slice.buffer) {
		keep_pack(x, x->dirty, &x->n_dirty, &ctx->pack);
		memset(&ctx->pack, 0, sizeof(ctx->pack));
	}
	if (ctx->n_scrubbing == 0) {
		return;
	}
	bool ran = ctx->value && !ctx->failed && counter_value(x) >= ctx->value;
	for (size_t i = 0; i < ctx->n_scrubbing; i++) {
		if (ran) {
			keep_pack(x, x->clean, &x->n_clean, &ctx->scrubbing[i]);
		} else {
			keep_pack(x, x->dirty, &x->n_dirty, &ctx->scrubbing[i]);
		}
	}
	ctx->n_scrubbing = 0;
}

static void free_packs(struct vy_vk_exec *x, struct vy_vk_used *list, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		vy__vk_slice_free(x->mem, &list[i].slice);
	}
}

static void ctx_release_locked(struct vy_vk_exec *x, struct vy_vk_ctx *ctx)
{
	for (size_t i = 0; i < ctx->n_slices; i++) {
		vy__vk_slice_free(x->mem, &ctx->slices[i]);
	}
	ctx->n_slices = 0;
	release_packs_locked(x, ctx);
	for (size_t i = 0; i < ctx->n_holds; i++) {
		ctx->holds[i].release(ctx->holds[i].arg);
	}
	ctx->n_holds = 0;
	ctx->parts = NULL;
	ctx->n_parts = 0;
	ctx->n_tail = 0;
	ctx->n_head = 0;
	ctx->value = 0;
	ctx->timed = false;
	ctx->submitted = false;
	ctx->abandoned = false;
	ctx->stopped = false;
	ctx->failed = 0;
	ctx->next = x->free_list;
	x->free_list = ctx;
}

static void ctx_destroy(struct vy_vk_exec *x, struct vy_vk_ctx *ctx)
{
	struct vy_vk_device *d = x->dev;
	for (size_t i = 0; i < ctx->n_slices; i++) {
		vy__vk_slice_free(x->mem, &ctx->slices[i]);
	}
	for (size_t i = 0; i < ctx->n_holds; i++) {
		ctx->holds[i].release(ctx->holds[i].arg);
	}
	free(ctx->holds);
	free(ctx->slices);
	free(ctx->tail);
	free(ctx->head);
	vy__vk_slice_free(x->mem, &ctx->pack.slice);
	free_packs(x, ctx->scrubbing, ctx->n_scrubbing);
	free(ctx->scrubbing);
	vy__vk_slice_free(x->mem, &ctx->stop);
	if (ctx->queries) {
		d->vk.vkDestroyQueryPool(d->dev, ctx->queries, NULL);
	}
	if (ctx->descriptors) {
		d->vk.vkDestroyDescriptorPool(d->dev, ctx->descriptors, NULL);
	}
	if (ctx->cmd) {
		d->vk.vkFreeCommandBuffers(d->dev, x->pool, 1, &ctx->cmd);
	}
	free(ctx);
}

void vy__vk_exec_finish(struct vy_vk_exec *x)
{
	if (!x->dev) {
		return;
	}
	struct vy_vk_device *d = x->dev;
	for (size_t i = 0; i < x->n_all; i++) {
		ctx_destroy(x, x->all[i]);
	}
	free(x->all);
	free(x->batch);
	for (size_t i = 0; i < x->n_tails; i++) {
		d->vk.vkFreeCommandBuffers(d->dev, x->pool, 1, &x->tails[i].cmd);
	}
	free(x->tails);
	free_packs(x, x->clean, x->n_clean);
	free_packs(x, x->dirty, x->n_dirty);
	free(x->clean);
	free(x->dirty);
	vy__vk_slice_free(x->mem, &x->dummy);
	if (x->reap) {
		if (x->reap_queued && !x->lost) {
			d->vk.vkWaitForFences(d->dev, 1, &x->reap, VK_TRUE, UINT64_MAX);
		}
		d->vk.vkDestroyFence(d->dev, x->reap, NULL);
	}
	if (x->gate) {
		d->vk.vkDestroySemaphore(d->dev, x->gate, NULL);
	}
	if (x->timeline) {
		d->vk.vkDestroySemaphore(d->dev, x->timeline, NULL);
	}
	if (x->pool) {
		d->vk.vkDestroyCommandPool(d->dev, x->pool, NULL);
	}
	pthread_mutex_destroy(&x->lock);
	memset(x, 0, sizeof(*x));
}

static int lost_error(struct vy_err *err)
{
	return vy_err_set(err, VY_E_DEVICE_LOST, NULL,
		"retry once the device has been recovered, and check the kernel log for GPU faults",
		"the Vulkan device was lost");
}

/* The semaphore's counter; UINT64_MAX on device loss (everything counts as done). */
static uint64_t counter_value(struct vy_vk_exec *x)
{
	uint64_t v = 0;
	struct vy_err *err = NULL;
	int rc = 0;
	VY_VK(x->dev->vk.vkGetSemaphoreCounterValue(x->dev->dev, x->timeline, &v));
	return v;
error:
	if (rc == VY_E_DEVICE_LOST) {
		x->lost = true;
	}
	return UINT64_MAX;
}

static void reclaim_locked(struct vy_vk_exec *x)
{
	if (!x->abandoned) {
		return;
	}
	uint64_t done = counter_value(x);
	struct vy_vk_ctx **link = &x->abandoned;
	while (*link) {
		struct vy_vk_ctx *ctx = *link;
		if (ctx->failed || !ctx->value || ctx->value <= done) {
			*link = ctx->next;
			ctx_release_locked(x, ctx);
		} else {
			link = &ctx->next;
		}
	}
}

static int ctx_create_locked(struct vy_vk_exec *x, struct vy_vk_ctx **out, struct vy_err *err)
{
	struct vy_vk_device *d = x->dev;
	int rc = 0;
	struct vy_vk_ctx *ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		fprintf(stderr, "vyred: out of memory for an execution context\n");
		abort();
	}
	VkCommandBufferAllocateInfo info = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
		.commandPool = x->pool,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
		.commandBufferCount = 1,
	};
	VY_VK(d->vk.vkAllocateCommandBuffers(d->dev, &info, &ctx->cmd));
	rc = vy__vk_slice_alloc(x->mem, VY_VK_POOL_CONTROL, sizeof(uint32_t), &ctx->stop, err);
	if (rc) {
		goto error;
	}
	if (d->timestamps) {
		VkQueryPoolCreateInfo q = {
			.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
			.queryType = VK_QUERY_TYPE_TIMESTAMP,
			.queryCount = 2,
		};
		VY_VK(d->vk.vkCreateQueryPool(d->dev, &q, NULL, &ctx->queries));
	}
	if (x->n_all == x->cap_all) {
		x->cap_all = x->cap_all ? x->cap_all * 2 : 8;
		x->all = xrealloc(x->all, x->cap_all, sizeof(*x->all));
	}
	x->all[x->n_all++] = ctx;
	*out = ctx;
	return 0;
error:
	ctx_destroy(x, ctx);
	return rc;
}

int vy__vk_ctx_acquire(struct vy_vk_exec *x, struct vy_vk_ctx **out, struct vy_err *err)
{
	*out = NULL;
	pthread_mutex_lock(&x->lock);
	int rc = 0;
	if (x->lost) {
		rc = lost_error(err);
		goto done;
	}
	reclaim_locked(x);
	if (x->free_list) {
		*out = x->free_list;
		x->free_list = x->free_list->next;
		(*out)->next = NULL;
	} else {
		rc = ctx_create_locked(x, out, err);
	}
	if (rc == 0) {
		/* Host writes to coherent memory before the submission are visible to the job. */
		__atomic_store_n((uint32_t *)(void *)(*out)->stop.map, 0, __ATOMIC_RELAXED);
	}
done:
	pthread_mutex_unlock(&x->lock);
	return rc;
}

int vy__vk_ctx_slice(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, enum vy_vk_pool_kind kind,
	uint64_t size, struct vy_vk_slice *out, struct vy_err *err)
{
	int rc = vy__vk_slice_alloc(x->mem, kind, size, out, err);
	if (rc) {
		return rc;
	}
	if (ctx->n_slices == ctx->cap_slices) {
		ctx->cap_slices = ctx->cap_slices ? ctx->cap_slices * 2 : 16;
		ctx->slices = xrealloc(ctx->slices, ctx->cap_slices, sizeof(*ctx->slices));
	}
	ctx->slices[ctx->n_slices++] = *out;
	return 0;
}

int vy__vk_ctx_pack_slice(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, uint64_t size,
	struct vy_vk_slice *out, bool *zeroed, struct vy_err *err)
{
	*zeroed = false;
	if (size > VY_VK_KEPT_PACK_BYTES || ctx->pack.slice.buffer) {
		return vy__vk_ctx_slice(x, ctx, VY_VK_POOL_DEVICE, size, out, err);
	}
	pthread_mutex_lock(&x->lock);
	size_t best = x->n_clean;
	for (size_t i = 0; i < x->n_clean; i++) {
		VkDeviceSize cap = x->clean[i].slice.size;
		if (cap >= size && (best == x->n_clean || cap < x->clean[best].slice.size)) {
			best = i;
		}
	}
	if (best < x->n_clean) {
		ctx->pack.slice = x->clean[best].slice;
		x->clean[best] = x->clean[--x->n_clean];
		x->clean_packs++;
		*zeroed = true;
	}
	pthread_mutex_unlock(&x->lock);
	if (!*zeroed) {
		int rc = vy__vk_slice_alloc(x->mem, VY_VK_POOL_DEVICE, size, &ctx->pack.slice, err);
		if (rc) {
			return rc;
		}
	}
	/* A new slice holds whatever its memory held, beyond the job's bytes too. */
	ctx->pack.used = ctx->pack.slice.size;
	*out = ctx->pack.slice;
	return 0;
}

void vy__vk_ctx_scrub(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, VkCommandBuffer cmd)
{
	if (x->n_dirty == 0) {
		return;
	}
	if (!ctx->scrubbing) {
		ctx->scrubbing = xrealloc(NULL, VY_VK_KEPT_PACKS, sizeof(*ctx->scrubbing));
	}
	while (x->n_dirty > 0 && ctx->n_scrubbing < VY_VK_KEPT_PACKS) {
		const struct vy_vk_used *u = &x->dirty[--x->n_dirty];
		x->dev->vk.vkCmdFillBuffer(cmd, u->slice.buffer, u->slice.offset, u->used, 0);
		ctx->scrubbing[ctx->n_scrubbing++] = *u;
		x->scrubs++;
	}
}

int vy__vk_ctx_parts(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, uint32_t n,
	struct vy_vk_slice *out, uint32_t **map, struct vy_err *err)
{
	assert(n > 0 && !ctx->parts);
	int rc = vy__vk_ctx_slice(
		x, ctx, VY_VK_POOL_CONTROL, (uint64_t)n * 3 * sizeof(uint32_t), out, err);
	if (rc) {
		return rc;
	}
	ctx->parts = (uint32_t *)(void *)out->map;
	ctx->n_parts = n;
	*map = ctx->parts;
	return 0;
}

void vy__vk_ctx_hold(struct vy_vk_ctx *ctx, void (*release)(void *arg), void *arg)
{
	if (ctx->n_holds == ctx->cap_holds) {
		ctx->cap_holds = ctx->cap_holds ? ctx->cap_holds * 2 : 8;
		ctx->holds = xrealloc(ctx->holds, ctx->cap_holds, sizeof(*ctx->holds));
	}
	ctx->holds[ctx->n_holds++] = (struct vy_vk_hold){release, arg};
}

/* Drop a half-recorded command buffer. A failed reset leaves it to the next
 * vkBeginCommandBuffer, which resets it too (the pool allows resetting single buffers). */
static void reset_recording(struct vy_vk_device *d, VkCommandBuffer cmd)
{
	struct vy_err *err = NULL;
	int rc = 0;
	VY_VK(d->vk.vkResetCommandBuffer(cmd, 0));
error:
	(void)rc;
}

void vy__vk_ctx_defer_copy(
	struct vy_vk_ctx *ctx, VkBuffer src, VkBuffer dst, const VkBufferCopy *region)
{
	if (ctx->n_tail == ctx->cap_tail) {
		ctx->cap_tail = ctx->cap_tail ? ctx->cap_tail * 2 : 8;
		ctx->tail = xrealloc(ctx->tail, ctx->cap_tail, sizeof(*ctx->tail));
	}
	ctx->tail[ctx->n_tail++] = (struct vy_vk_copy){src, dst, *region};
}

void vy__vk_ctx_defer_in(
	struct vy_vk_ctx *ctx, VkBuffer src, VkBuffer dst, const VkBufferCopy *region)
{
	if (ctx->n_head == ctx->cap_head) {
		ctx->cap_head = ctx->cap_head ? ctx->cap_head * 2 : 8;
		ctx->head = xrealloc(ctx->head, ctx->cap_head, sizeof(*ctx->head));
	}
	ctx->head[ctx->n_head++] = (struct vy_vk_copy){src, dst, *region};
}

/* A tail command buffer the device is done with, or a new one (x->lock held). */
static int tail_take_locked(struct vy_vk_exec *x, struct vy_vk_tail **out, struct vy_err *err)
{
	struct vy_vk_device *d = x->dev;
	int rc = 0;
	uint64_t done = x->n_tails ? counter_value(x) : 0;
	for (size_t i = 0; i < x->n_tails; i++) {
		if (x->tails[i].value <= done) {
			*out = &x->tails[i];
			return 0;
		}
	}
	VkCommandBufferAllocateInfo info = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
		.commandPool = x->pool,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
		.commandBufferCount = 1,
	};
	VkCommandBuffer cmd;
	VY_VK(d->vk.vkAllocateCommandBuffers(d->dev, &info, &cmd));
	x->tails = xrealloc(x->tails, x->n_tails + 1, sizeof(*x->tails));
	x->tails[x->n_tails] = (struct vy_vk_tail){cmd, 0};
	*out = &x->tails[x->n_tails++];
	return 0;
error:
	return rc;
}

/* Take a free command buffer for the head or tail of a batch and begin it (x->lock held). */
static int side_begin_locked(struct vy_vk_exec *x, struct vy_vk_tail **out, struct vy_err *err)
{
	int rc = tail_take_locked(x, out, err);
	if (rc) {
		return rc;
	}
	VkCommandBufferBeginInfo begin = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
		.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
	};
	VY_VK(x->dev->vk.vkBeginCommandBuffer((*out)->cmd, &begin));
	return 0;
error:
	*out = NULL; /* its value is still 0: free for the next batch */
	return rc;
}

/* End the head or tail `t` of the batch into *out; it is free again once the batch is done. */
static int side_end_locked(
	struct vy_vk_exec *x, struct vy_vk_tail *t, struct vy_vk_tail **out, struct vy_err *err)
{
	int rc = 0;
	VY_VK(x->dev->vk.vkEndCommandBuffer(t->cmd));
	t->value = x->batch[x->n_batch - 1]->value;
	*out = t;
	return 0;
error:
	reset_recording(x->dev, t->cmd);
	return rc;
}

/*
 * Record the batch's tail (x->lock held): one barrier after every dispatch and fill before it,
 * the copies back of every job in the batch, and one barrier that makes them visible to the
 * host. NULL in *out when no job of the batch left a copy to it.
 */
static int tail_record_locked(struct vy_vk_exec *x, struct vy_vk_tail **out, struct vy_err *err)
{
	struct vy_vk_device *d = x->dev;
	*out = NULL;
	size_t copies = 0;
	for (size_t i = 0; i < x->n_batch; i++) {
		copies += x->batch[i]->n_tail;
	}
	if (copies == 0) {
		return 0;
	}
	struct vy_vk_tail *t = NULL;
	int rc = side_begin_locked(x, &t, err);
	if (rc) {
		return rc;
	}
	VkMemoryBarrier before = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_HOST_READ_BIT,
	};
	d->vk.vkCmdPipelineBarrier(t->cmd,
		VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
		VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &before, 0, NULL,
		0, NULL);
	for (size_t i = 0; i < x->n_batch; i++) {
		struct vy_vk_ctx *ctx = x->batch[i];
		for (size_t k = 0; k < ctx->n_tail; k++) {
			const struct vy_vk_copy *c = &ctx->tail[k];
			d->vk.vkCmdCopyBuffer(t->cmd, c->src, c->dst, 1, &c->region);
		}
	}
	VkMemoryBarrier after = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_HOST_READ_BIT,
	};
	d->vk.vkCmdPipelineBarrier(t->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
		VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &after, 0, NULL, 0, NULL);
	x->tail_copies += copies;
	return side_end_locked(x, t, out, err);
}

/*
 * Record the batch's head (x->lock held): the uploads and fills that its jobs left to it, and
 * one barrier that makes them visible to every dispatch after it. NULL in *out when no job of
 * the batch left one.
 */
static int head_record_locked(struct vy_vk_exec *x, struct vy_vk_tail **out, struct vy_err *err)
{
	struct vy_vk_device *d = x->dev;
	*out = NULL;
	size_t ops = 0;
	for (size_t i = 0; i < x->n_batch; i++) {
		ops += x->batch[i]->n_head;
	}
	if (ops == 0) {
		return 0;
	}
	struct vy_vk_tail *t = NULL;
	int rc = side_begin_locked(x, &t, err);
	if (rc) {
		return rc;
	}
	for (size_t i = 0; i < x->n_batch; i++) {
		struct vy_vk_ctx *ctx = x->batch[i];
		for (size_t k = 0; k < ctx->n_head; k++) {
			const struct vy_vk_copy *c = &ctx->head[k];
			if (c->src) {
				d->vk.vkCmdCopyBuffer(t->cmd, c->src, c->dst, 1, &c->region);
			} else {
				d->vk.vkCmdFillBuffer(
					t->cmd, c->dst, c->region.dstOffset, c->region.size, 0);
			}
		}
	}
	VkMemoryBarrier after = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
	};
	d->vk.vkCmdPipelineBarrier(t->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
		VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &after, 0, NULL, 0, NULL);
	return side_end_locked(x, t, out, err);
}

static int submit_batch_locked(struct vy_vk_exec *x, struct vy_err *err)
{
	if (x->n_batch == 0) {
		return 0;
	}
	struct vy_vk_device *d = x->dev;
	VkSubmitInfo infos[BATCH_LIMIT + 1];
	VkTimelineSemaphoreSubmitInfo timelines[BATCH_LIMIT + 1];
	VkCommandBuffer cmds[BATCH_LIMIT + 2];
	assert(x->n_batch <= BATCH_LIMIT);
	const VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
	/* Indexes into x->tails, which taking the tail may move. */
	size_t head_at = SIZE_MAX;
	size_t tail_at = SIZE_MAX;
	struct vy_vk_tail *t = NULL;
	int rc = head_record_locked(x, &t, err);
	if (rc == 0 && t) {
		head_at = (size_t)(t - x->tails);
		cmds[0] = t->cmd;
	}
	if (rc == 0) {
		rc = tail_record_locked(x, &t, err);
	}
	if (rc) {
		goto error;
	}
	if (t) {
		tail_at = (size_t)(t - x->tails);
	}
	/* With a tail, the batch is one submission (the head, every job's command buffer, the
	 * tail) that signals the batch's last value once every job's copies are in. Without one,
	 * each job signals its own value, after the head's submission if there is a head. */
	uint32_t n = 0;
	uint32_t n_cmds = head_at != SIZE_MAX;
	if (head_at != SIZE_MAX && tail_at == SIZE_MAX) {
		timelines[n] = (VkTimelineSemaphoreSubmitInfo){
			.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
		};
		infos[n] = (VkSubmitInfo){
			.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
			.pNext = &timelines[n],
			.commandBufferCount = 1,
			.pCommandBuffers = &cmds[0],
		};
		n++;
	}
	for (size_t i = 0; i < x->n_batch; i++) {
		struct vy_vk_ctx *ctx = x->batch[i];
		cmds[n_cmds++] = ctx->cmd;
		ctx->n_tail = 0;
		ctx->n_head = 0;
		if (tail_at != SIZE_MAX) {
			continue;
		}
		timelines[n] = (VkTimelineSemaphoreSubmitInfo){
			.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
			.signalSemaphoreValueCount = 1,
			.pSignalSemaphoreValues = &ctx->value,
		};
		infos[n] = (VkSubmitInfo){
			.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
			.pNext = &timelines[n],
			.commandBufferCount = 1,
			.pCommandBuffers = &ctx->cmd,
			.signalSemaphoreCount = 1,
			.pSignalSemaphores = &x->timeline,
		};
		n++;
	}
	if (tail_at != SIZE_MAX) {
		cmds[n_cmds++] = x->tails[tail_at].cmd;
		timelines[0] = (VkTimelineSemaphoreSubmitInfo){
			.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
			.signalSemaphoreValueCount = 1,
			.pSignalSemaphoreValues = &x->batch[x->n_batch - 1]->value,
		};
		infos[0] = (VkSubmitInfo){
			.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
			.pNext = &timelines[0],
			.commandBufferCount = n_cmds,
			.pCommandBuffers = cmds,
			.signalSemaphoreCount = 1,
			.pSignalSemaphores = &x->timeline,
		};
		n = 1;
		x->tail_batches++;
	}
	x->head_batches += head_at != SIZE_MAX;
	if (x->gate_closed) {
		timelines[0].waitSemaphoreValueCount = 1;
		timelines[0].pWaitSemaphoreValues = &x->gate_value;
		infos[0].waitSemaphoreCount = 1;
		infos[0].pWaitSemaphores = &x->gate;
		infos[0].pWaitDstStageMask = &wait_stage;
	}
	VY_VK(d->vk.vkQueueSubmit(d->queue, n, infos, VK_NULL_HANDLE));
	x->submits++;
	x->jobs += x->n_batch;
	x->submitted_value = x->batch[x->n_batch - 1]->value;
	for (size_t i = 0; i < x->n_batch; i++) {
		x->batch[i]->submitted = true;
	}
	x->n_batch = 0;
	return 0;
error:
	if (rc == VY_E_DEVICE_LOST) {
		x->lost = true;
	}
	/* Never submitted: free for the next batch. */
	if (head_at != SIZE_MAX) {
		x->tails[head_at].value = 0;
	}
	if (tail_at != SIZE_MAX) {
		x->tails[tail_at].value = 0;
	}
	for (size_t i = 0; i < x->n_batch; i++) {
		x->batch[i]->failed = rc;
	}
	x->n_batch = 0;
	return rc;
}

static int reserve_sets(
	struct vy_vk_exec *x, struct vy_vk_ctx *ctx, uint32_t sets, struct vy_err *err)
{
	struct vy_vk_device *d = x->dev;
	int rc = 0;
	if (sets == 0) {
		return 0;
	}
	if (ctx->descriptors && ctx->descriptor_capacity >= sets) {
		VY_VK(d->vk.vkResetDescriptorPool(d->dev, ctx->descriptors, 0));
		return 0;
	}
	if (ctx->descriptors) {
		d->vk.vkDestroyDescriptorPool(d->dev, ctx->descriptors, NULL);
		ctx->descriptors = VK_NULL_HANDLE;
	}
	uint32_t cap = ctx->descriptor_capacity * 2 > sets ? ctx->descriptor_capacity * 2 : sets;
	VkDescriptorPoolSize sizes[] = {
		{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, cap * VY_LAYOUT_MAX_SLOTS},
		{VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, cap * VY_LAYOUT_MAX_SLOTS},
	};
	VkDescriptorPoolCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
		.maxSets = cap,
		.poolSizeCount = 2,
		.pPoolSizes = sizes,
	};
	VY_VK(d->vk.vkCreateDescriptorPool(d->dev, &info, NULL, &ctx->descriptors));
	ctx->descriptor_capacity = cap;
	return 0;
error:
	ctx->descriptor_capacity = 0;
	return rc;
}

/* Record `ctx` with `record` (x->lock held); `keep` allows submitting the recording again. */
static int record_locked(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, bool timed, bool keep,
	uint32_t sets, vy_vk_record_fn record, void *arg, struct vy_err *err)
{
	struct vy_vk_device *d = x->dev;
	int rc = 0;
	bool recording = false;
	if (x->lost) {
		return lost_error(err);
	}
	rc = reserve_sets(x, ctx, sets, err);
	if (rc) {
		goto error;
	}
	VkCommandBufferBeginInfo begin = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
		.flags = keep ? 0 : VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
	};
	VY_VK(d->vk.vkBeginCommandBuffer(ctx->cmd, &begin));
	recording = true;
	ctx->timed = timed && ctx->queries;
	if (ctx->timed) {
		d->vk.vkCmdResetQueryPool(ctx->cmd, ctx->queries, 0, 2);
	}
	rc = record(ctx, ctx->cmd, arg, err);
	if (rc) {
		goto error;
	}
	VY_VK(d->vk.vkEndCommandBuffer(ctx->cmd));
	return 0;
error:
	if (recording) {
		reset_recording(d, ctx->cmd);
	}
	if (rc == VY_E_DEVICE_LOST) {
		x->lost = true;
	}
	return rc;
}

/* Give the recorded `ctx` the next timeline value and put it in the batch (x->lock held). */
static int queue_locked(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, bool now, struct vy_err *err)
{
	if (x->lost) {
		return lost_error(err);
	}
	ctx->submitted = false;
	ctx->failed = 0;
	ctx->value = ++x->last_value;
	if (x->n_batch == x->cap_batch) {
		x->cap_batch = x->cap_batch ? x->cap_batch * 2 : BATCH_LIMIT;
		x->batch = xrealloc(x->batch, x->cap_batch, sizeof(*x->batch));
	}
	x->batch[x->n_batch++] = ctx;
	if (now || x->n_batch >= x->batch_limit) {
		return submit_batch_locked(x, err);
	}
	return 0;
}

int vy__vk_ctx_submit(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, bool timed, bool now,
	uint32_t sets, vy_vk_record_fn record, void *arg, struct vy_err *err)
{
	pthread_mutex_lock(&x->lock);
	int rc = record_locked(x, ctx, timed, false, sets, record, arg, err);
	if (rc == 0) {
		rc = queue_locked(x, ctx, now, err);
	}
	pthread_mutex_unlock(&x->lock);
	return rc;
}

int vy__vk_ctx_record(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, uint32_t sets,
	vy_vk_record_fn record, void *arg, struct vy_err *err)
{
	pthread_mutex_lock(&x->lock);
	int rc = record_locked(x, ctx, false, true, sets, record, arg, err);
	pthread_mutex_unlock(&x->lock);
	return rc;
}

int vy__vk_ctx_queue(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, bool now, struct vy_err *err)
{
	pthread_mutex_lock(&x->lock);
	int rc = queue_locked(x, ctx, now, err);
	pthread_mutex_unlock(&x->lock);
	return rc;
}

void vy__vk_ctx_stamp(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, int which)
{
	if (!ctx->timed) {
		return;
	}
	x->dev->vk.vkCmdWriteTimestamp(ctx->cmd,
		which == 0 ? VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT
			   : VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
		ctx->queries, which ? 1 : 0);
}

int vy__vk_ctx_descriptor_set(struct vy_vk_exec *x, struct vy_vk_ctx *ctx,
	VkDescriptorSetLayout layout, VkDescriptorSet *out, struct vy_err *err)
{
	struct vy_vk_device *d = x->dev;
	int rc = 0;
	VkDescriptorSetAllocateInfo info = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
		.descriptorPool = ctx->descriptors,
		.descriptorSetCount = 1,
		.pSetLayouts = &layout,
	};
	VY_VK(d->vk.vkAllocateDescriptorSets(d->dev, &info, out));
	return 0;
error:
	return rc;
}

/* Make sure the context's job is on the queue; returns its failure code, or 0. */
static int ensure_submitted(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, struct vy_err *err)
{
	pthread_mutex_lock(&x->lock);
	int rc = 0;
	if (!ctx->submitted && !ctx->failed) {
		rc = submit_batch_locked(x, err);
	}
	if (ctx->failed) {
		rc = ctx->failed;
		if (ctx->failed == VY_E_DEVICE_LOST) {
			lost_error(err);
		} else if (err && err->code == 0) {
			vy_err_set(err, ctx->failed, NULL, "retry the request",
				"the job could not be submitted");
		}
	}
	pthread_mutex_unlock(&x->lock);
	return rc;
}

bool vy__vk_ctx_ready(struct vy_vk_exec *x, struct vy_vk_ctx *ctx)
{
	if (ensure_submitted(x, ctx, NULL)) {
		return true;
	}
	return counter_value(x) >= ctx->value;
}

int vy__vk_ctx_wait(
	struct vy_vk_exec *x, struct vy_vk_ctx *ctx, uint64_t timeout_ns, struct vy_err *err)
{
	struct vy_vk_device *d = x->dev;
	int rc = ensure_submitted(x, ctx, err);
	if (rc) {
		return rc;
	}
	uint64_t start = now_ns();
	uint64_t v = 0;
	if (x->spin_ns) {
		do {
			VY_VK(d->vk.vkGetSemaphoreCounterValue(d->dev, x->timeline, &v));
			if (v >= ctx->value) {
				return 0;
			}
		} while (now_ns() - start < x->spin_ns && now_ns() - start < timeout_ns);
	}
	uint64_t spent = now_ns() - start;
	uint64_t left = timeout_ns == UINT64_MAX ? UINT64_MAX
			: timeout_ns > spent     ? timeout_ns - spent
						 : 0;
	VkSemaphoreWaitInfo info = {
		.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
		.semaphoreCount = 1,
		.pSemaphores = &x->timeline,
		.pValues = &ctx->value,
	};
	VkResult res;
	VY_VK(res = d->vk.vkWaitSemaphores(d->dev, &info, left));
	if (res == VK_TIMEOUT) {
		return vy_err_set(err, VY_E_TIMEOUT, NULL,
			"raise config.timeout_ms, or make the program do less work per dispatch",
			"the dispatch did not finish within %llu ms",
			(unsigned long long)(timeout_ns / 1000000));
	}
	return 0;
error:
	if (rc == VY_E_DEVICE_LOST) {
		x->lost = true;
	}
	return rc;
}

uint64_t vy__vk_ctx_device_ns(struct vy_vk_exec *x, struct vy_vk_ctx *ctx)
{
	struct vy_vk_device *d = x->dev;
	if (!ctx->timed) {
		return UINT64_MAX;
	}
	uint64_t ts[2];
	struct vy_err *err = NULL;
	int rc = 0;
	VkResult res;
	VY_VK(res = d->vk.vkGetQueryPoolResults(d->dev, ctx->queries, 0, 2, sizeof(ts), ts,
		      sizeof(ts[0]), VK_QUERY_RESULT_64_BIT));
	if (res != VK_SUCCESS) {
		return UINT64_MAX;
	}
	uint64_t ticks = (ts[1] - ts[0]) & d->timestamp_mask;
	return (uint64_t)((double)ticks * d->timestamp_period_ns);
error:
	(void)rc;
	return UINT64_MAX;
}

void vy__vk_ctx_release(struct vy_vk_exec *x, struct vy_vk_ctx *ctx)
{
	pthread_mutex_lock(&x->lock);
	ctx_release_locked(x, ctx);
	pthread_mutex_unlock(&x->lock);
}

/* x->lock held */
static void stop_locked(struct vy_vk_exec *x, struct vy_vk_ctx *ctx)
{
	if (ctx->value && !ctx->failed && !ctx->stopped && counter_value(x) < ctx->value) {
		/* Its shaders poll this word and return once it is set (vk_codegen.h). */
		__atomic_store_n((uint32_t *)(void *)ctx->stop.map, 1, __ATOMIC_RELEASE);
		for (uint32_t i = 0; i < ctx->n_parts; i++) {
			__atomic_store_n(&ctx->parts[3 * i], 0, __ATOMIC_RELAXED);
		}
		ctx->stopped = true;
		x->stopped++;
	}
}

void vy__vk_ctx_stop(struct vy_vk_exec *x, struct vy_vk_ctx *ctx)
{
	pthread_mutex_lock(&x->lock);
	stop_locked(x, ctx);
	pthread_mutex_unlock(&x->lock);
}

void vy__vk_ctx_abandon(struct vy_vk_exec *x, struct vy_vk_ctx *ctx)
{
	pthread_mutex_lock(&x->lock);
	stop_locked(x, ctx);
	if (!ctx->submitted && !ctx->failed) {
		/* Still in the batch: let it run, so that its value is signalled in order. */
		submit_batch_locked(x, NULL);
	}
	ctx->abandoned = true;
	ctx->next = x->abandoned;
	x->abandoned = ctx;
	reclaim_locked(x);
	pthread_mutex_unlock(&x->lock);
}

int vy__vk_exec_flush(struct vy_vk_exec *x, struct vy_err *err)
{
	pthread_mutex_lock(&x->lock);
	int rc = submit_batch_locked(x, err);
	pthread_mutex_unlock(&x->lock);
	return rc;
}

int vy__vk_exec_drain(struct vy_vk_exec *x, struct vy_err *err)
{
	struct vy_vk_device *d = x->dev;
	pthread_mutex_lock(&x->lock);
	int rc = submit_batch_locked(x, err);
	uint64_t last = x->submitted_value;
	pthread_mutex_unlock(&x->lock);
	if (rc) {
		return rc;
	}
	if (last > 0) {
		VkSemaphoreWaitInfo info = {
			.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
			.semaphoreCount = 1,
			.pSemaphores = &x->timeline,
			.pValues = &last,
		};
		VY_VK(d->vk.vkWaitSemaphores(d->dev, &info, UINT64_MAX));
	}
	pthread_mutex_lock(&x->lock);
	reclaim_locked(x);
	pthread_mutex_unlock(&x->lock);
	return 0;
error:
	if (rc == VY_E_DEVICE_LOST) {
		x->lost = true;
	}
	return rc;
}

int vy__vk_exec_gate_close(struct vy_vk_exec *x, struct vy_err *err)
{
	struct vy_vk_device *d = x->dev;
	int rc = 0;
	pthread_mutex_lock(&x->lock);
	if (!x->gate) {
		VkSemaphoreTypeCreateInfo type = {
			.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
			.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
		};
		VkSemaphoreCreateInfo info = {
			.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &type};
		VY_VK(d->vk.vkCreateSemaphore(d->dev, &info, NULL, &x->gate));
	}
	if (!x->gate_closed) {
		x->gate_value++;
		x->gate_closed = true;
	}
error:
	pthread_mutex_unlock(&x->lock);
	return rc;
}

int vy__vk_exec_gate_open(struct vy_vk_exec *x, struct vy_err *err)
{
	struct vy_vk_device *d = x->dev;
	int rc = 0;
	pthread_mutex_lock(&x->lock);
	if (x->gate_closed) {
		x->gate_closed = false;
		VkSemaphoreSignalInfo info = {
			.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO,
			.semaphore = x->gate,
			.value = x->gate_value,
		};
		VY_VK(d->vk.vkSignalSemaphore(d->dev, &info));
	}
error:
	pthread_mutex_unlock(&x->lock);
	return rc;
}

void vy__vk_exec_reap(struct vy_vk_exec *x)
{
	struct vy_vk_device *d = x->dev;
	pthread_mutex_lock(&x->lock);
	VkResult r = x->lost ? VK_ERROR_DEVICE_LOST : VK_SUCCESS;
	if (r == VK_SUCCESS && x->reap_queued) {
		/* VK_NOT_READY: the last one is still queued, and frees what was destroyed before
		 * it; the next call submits again. */
		r = d->vk.vkGetFenceStatus(d->dev, x->reap);
		if (r == VK_SUCCESS) {
			r = d->vk.vkResetFences(d->dev, 1, &x->reap);
			x->reap_queued = r != VK_SUCCESS;
		}
	}
	if (r == VK_SUCCESS && !x->reap) {
		VkFenceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
		r = d->vk.vkCreateFence(d->dev, &info, NULL, &x->reap);
	}
	if (r == VK_SUCCESS && d->vk.vkQueueSubmit(d->queue, 0, NULL, x->reap) == VK_SUCCESS) {
		x->reap_queued = true;
		x->reaps++;
	}
	pthread_mutex_unlock(&x->lock);
}
