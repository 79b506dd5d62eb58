/*
 * Submission and completion (DESIGN.md §7.1, §8): every job of the Vulkan backend runs in an
 * execution context, which holds a pre-allocated command buffer, a timestamp query pair, a
 * descriptor pool where push descriptors are missing, and the buffer slices the job uses.
 * Contexts are reused, so a warm job allocates no Vulkan object.
 *
 * One timeline semaphore orders everything: a job's context gets the next value when it is
 * recorded and signals it when done. Recorded jobs wait in a batch and go to the queue together,
 * several per vkQueueSubmit: when a job asks to be submitted at once, when the batch is full, and
 * whenever somebody waits on or polls a job still in the batch. Jobs that leave their uploads
 * and fills to the batch's head and their copies back to its tail (vy__vk_ctx_defer_in,
 * vy__vk_ctx_defer_copy) go as one submission, head first and tail last, which signals the
 * batch's last value: the batch then has one barrier before its dispatches and one after them.
 * Waiting spins briefly on the semaphore's counter (a tiny dispatch finishes within
 * microseconds on a GPU) and then sleeps in vkWaitSemaphores, up to the job's timeout.
 *
 * Life of a context: acquire -> attach slices and fill staging (no lock held) -> submit (records
 * under the queue lock) -> wait -> read results -> release. A waiter that gives up (timeout)
 * abandons the context instead: it is released once the device is done with it. Abandoning
 * also sets the context's stop word, which the dispatch's shaders poll on entry and in their
 * loops, so that the device is soon done with a job nobody waits for any more.
 *
 * Ownership: struct vy_vk_exec is embedded in the backend (init/finish). Contexts belong to it;
 * a caller holds one from acquire to release or abandon.
 * Thread-safety: every function may be called from several threads; one context is used by one
 * thread at a time.
 */
#ifndef VY_BACKEND_VULKAN_VK_EXEC_H
#define VY_BACKEND_VULKAN_VK_EXEC_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vk_volk.h"

#include "err.h"
#include "vk_device.h"
#include "vk_memory.h"

struct vy_vk_ctx;

/* Records a job's commands into `cmd`; called with the queue lock held. */
typedef int (*vy_vk_record_fn)(
	struct vy_vk_ctx *ctx, VkCommandBuffer cmd, void *arg, struct vy_err *err);

struct vy_vk_hold {
	void (*release)(void *arg);
	void *arg;
};

/* A copy back that a job leaves to the tail of its batch (vy__vk_ctx_defer_copy), or an upload
 * or fill it leaves to the head (vy__vk_ctx_defer_in): `src` VK_NULL_HANDLE fills region.size
 * bytes of `dst` at region.dstOffset with zeros. */
struct vy_vk_copy {
	VkBuffer src;
	VkBuffer dst;
	VkBufferCopy region;
};

/* A command buffer of batch tails, free again once the timeline reaches `value`. */
struct vy_vk_tail {
	VkCommandBuffer cmd;
	uint64_t value;
};

/* A device slice of a job's pack (vk_xfer.h) and the bytes from its start that jobs wrote. */
struct vy_vk_used {
	struct vy_vk_slice slice;
	VkDeviceSize used;
};

struct vy_vk_ctx {
	VkCommandBuffer cmd;
	VkQueryPool queries;          /* two timestamps; VK_NULL_HANDLE without timestamp support */
	VkDescriptorPool descriptors; /* without push descriptors: the sets of this job */
	uint32_t descriptor_capacity; /* sets the pool holds */
	uint64_t value;               /* timeline value signalled when the job is done; 0: none */
	bool timed;                   /* the job writes its timestamps */
	bool submitted;               /* handed to the queue (not only in the batch) */
	bool abandoned;
	bool stopped;               /* its stop word is set (vy__vk_ctx_stop) */
	int failed;                 /* error code that ended the job before it ran, or 0 */
	struct vy_vk_slice *slices; /* owned: released with the context */
	size_t n_slices;
	size_t cap_slices;
	struct vy_vk_hold *holds; /* owned */
	size_t n_holds;
	size_t cap_holds;
	/* The pack's device slice, kept for reuse when released (vy__vk_ctx_pack_slice), and the
	 * released pack slices whose fills this job records (vy__vk_ctx_scrub). */
	struct vy_vk_used pack;
	struct vy_vk_used *scrubbing; /* owned: room for VY_VK_KEPT_PACKS */
	size_t n_scrubbing;
	struct vy_vk_ctx *next; /* free list or abandoned list */
	/* One word the dispatch's shaders poll: 0 while the job is wanted, 1 once abandoned. */
	struct vy_vk_slice stop;
	/* The indirect arguments of a launch split into parts (vy__vk_ctx_parts), or NULL:
	 * abandoning the context empties the parts the device has not started. */
	uint32_t *parts;
	uint32_t n_parts;
	/* Copies back recorded at the tail of the job's batch instead of in `cmd`. */
	struct vy_vk_copy *tail; /* owned */
	size_t n_tail;
	size_t cap_tail;
	/* Uploads and fills recorded at the head of the job's batch instead of in `cmd`. */
	struct vy_vk_copy *head; /* owned */
	size_t n_head;
	size_t cap_head;
};

struct vy_vk_exec {
	struct vy_vk_device *dev; /* borrowed */
	struct vy_vk_memory *mem; /* borrowed */
	pthread_mutex_t lock;     /* command pool, contexts, batch, queue */
	VkCommandPool pool;
	VkSemaphore timeline;
	uint64_t last_value;      /* the last value handed to a job */
	uint64_t submitted_value; /* the value of the last job the queue accepted */
	struct vy_vk_ctx **all;   /* owned */
	size_t n_all;
	size_t cap_all;
	struct vy_vk_ctx *free_list;
	struct vy_vk_ctx *abandoned;
	struct vy_vk_ctx **batch; /* recorded, not yet submitted, in value order */
	size_t n_batch;
	size_t cap_batch;
	uint32_t batch_limit;
	uint32_t spin_ns;      /* busy-wait before sleeping */
	uint64_t direct_limit; /* buffers up to this size bind host-visible memory directly */
	uint64_t part_min;     /* launches of more workgroups run in parts a stopped job skips */
	uint32_t coarse_min;   /* 1-D launches of at least this many workgroups may run coarse */
	bool lost;
	/* Zero-filled stand-in for empty buffers where null descriptors are missing. */
	struct vy_vk_slice dummy;
	VkSemaphore gate; /* tests: submissions wait on it while the gate is closed */
	uint64_t gate_value;
	bool gate_closed;
	uint64_t submits; /* vkQueueSubmit calls, for tests and stats */
	uint64_t jobs;    /* jobs submitted */
	uint64_t stopped; /* unfinished jobs told to stop when abandoned */
	VkFence reap;     /* of vy__vk_exec_reap, or VK_NULL_HANDLE */
	bool reap_queued; /* `reap` was submitted and not reset since */
	uint64_t reaps;
	/*
	 * Pack slices of released jobs: `dirty` ones wait for a later job's fill, `clean` ones are
	 * all zeros and need no fill before their next job, so that a small job on a discrete GPU
	 * records no fill and no barrier before its dispatches (at most VY_VK_KEPT_PACKS each).
	 */
	struct vy_vk_used *clean; /* owned */
	size_t n_clean;
	struct vy_vk_used *dirty; /* owned */
	size_t n_dirty;
	uint64_t clean_packs; /* packs that needed no fill, for tests and stats */
	uint64_t scrubs;      /* pack slices zeroed behind their jobs */
	/*
	 * Batch tails: the jobs of a batch that leave their copies back to it run their dispatches
	 * without a barrier between them, and one command buffer after them makes all their
	 * writes visible once, copies every job's results back, and signals the batch's last value.
	 */
	struct vy_vk_tail *tails; /* owned */
	size_t n_tails;
	uint64_t tail_batches; /* batches submitted with a tail, for tests and stats */
	uint64_t head_batches; /* batches submitted with a head, for tests and stats */
	uint64_t tail_copies;  /* copies recorded in tails */
};

/* Pack slices kept for reuse, clean and dirty each; and the largest one kept. */
#define VY_VK_KEPT_PACKS 32
#define VY_VK_KEPT_PACK_BYTES ((uint64_t)256 << 10)

int vy__vk_exec_init(struct vy_vk_exec *x, struct vy_vk_device *dev, struct vy_vk_memory *mem,
	struct vy_err *err);
/*
 * Release every context and the Vulkan objects. The device must be idle (or lost). Accepts a
 * zeroed struct.
 */
void vy__vk_exec_finish(struct vy_vk_exec *x);

/* A free context (created when none is free). Errors: OUT_OF_MEMORY, DEVICE_LOST. */
int vy__vk_ctx_acquire(struct vy_vk_exec *x, struct vy_vk_ctx **out, struct vy_err *err);

/* A slice from pool `kind`, owned by the context from now on. Errors: OUT_OF_MEMORY. */
int vy__vk_ctx_slice(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, enum vy_vk_pool_kind kind,
	uint64_t size, struct vy_vk_slice *out, struct vy_err *err);

/*
 * The device slice of the job's pack, at least `size` bytes, owned by the context: a clean one
 * (all zeros: *zeroed is true, no fill needed) where one is kept, else a new one. Once the
 * context is released, the slice waits for a later job to zero it (vy__vk_ctx_scrub) and is
 * used again. Errors: OUT_OF_MEMORY.
 */
int vy__vk_ctx_pack_slice(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, uint64_t size,
	struct vy_vk_slice *out, bool *zeroed, struct vy_err *err);

/*
 * Record fills that zero released pack slices waiting for one, from a record function (the
 * queue lock held). Nothing of this job touches them, so they need no barrier before them; the
 * job's end makes them clean for the next jobs, once it is done.
 */
void vy__vk_ctx_scrub(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, VkCommandBuffer cmd);

/* Call release(arg) when the context is released (after its job is done). */
void vy__vk_ctx_hold(struct vy_vk_ctx *ctx, void (*release)(void *arg), void *arg);

/*
 * Record the job with `record` and queue it; `now` submits the batch at once. `timed` makes
 * vy__vk_ctx_stamp write timestamps (where the device has them). `sets` is the number of
 * descriptor sets `record` takes with vy__vk_ctx_descriptor_set (0 with push descriptors).
 * Errors: those of `record` and of recording, DEVICE_LOST. On error the context is still the
 * caller's, to release.
 */
int vy__vk_ctx_submit(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, bool timed, bool now,
	uint32_t sets, vy_vk_record_fn record, void *arg, struct vy_err *err);

/*
 * Record the job with `record` and keep the recording for vy__vk_ctx_queue, which may submit it
 * any number of times, one at a time (a recorded graph, vk_graph.c). Errors: those of `record`
 * and of recording, DEVICE_LOST.
 */
int vy__vk_ctx_record(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, uint32_t sets,
	vy_vk_record_fn record, void *arg, struct vy_err *err);

/*
 * Queue the kept recording of `ctx` once more, as vy__vk_ctx_submit queues a new one; the
 * previous submission must be done. Errors: DEVICE_LOST and other submit failures.
 */
int vy__vk_ctx_queue(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, bool now, struct vy_err *err);

/* Timestamp `which` (0 at the start of the work, 1 at its end) of a timed context, recorded into
 * its command buffer; call from the record function. */
void vy__vk_ctx_stamp(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, int which);

/*
 * Without push descriptors: a descriptor set of `layout` from the context's pool; call from the
 * record function. Errors: OUT_OF_MEMORY.
 */
int vy__vk_ctx_descriptor_set(struct vy_vk_exec *x, struct vy_vk_ctx *ctx,
	VkDescriptorSetLayout layout, VkDescriptorSet *out, struct vy_err *err);

/* Whether the job is done (submitting the batch when it is still there). */
bool vy__vk_ctx_ready(struct vy_vk_exec *x, struct vy_vk_ctx *ctx);

/*
 * Wait for the job, at most `timeout_ns` (UINT64_MAX: no limit). Errors: TIMEOUT (the job still
 * runs; abandon the context), DEVICE_LOST, and the job's own failure.
 */
int vy__vk_ctx_wait(
	struct vy_vk_exec *x, struct vy_vk_ctx *ctx, uint64_t timeout_ns, struct vy_err *err);

/* GPU time between the context's timestamps, or UINT64_MAX when not measured. */
uint64_t vy__vk_ctx_device_ns(struct vy_vk_exec *x, struct vy_vk_ctx *ctx);

/*
 * Indirect dispatch arguments for a launch split into `n` parts, three workgroup counts each,
 * in a host-written slice the context owns (from VY_VK_POOL_CONTROL). The caller fills *map
 * before the submission; abandoning the context sets every part's x count to 0. One set per
 * context. Errors: OUT_OF_MEMORY.
 */
/*
 * Leave a copy back of the job in `ctx` to the tail of its batch (call from its record
 * function, instead of recording the copy and the barriers around it). The tail orders it
 * after every dispatch of the batch and before the host reads `dst`.
 */
void vy__vk_ctx_defer_copy(
	struct vy_vk_ctx *ctx, VkBuffer src, VkBuffer dst, const VkBufferCopy *region);
/*
 * Leave an upload (or, with `src` VK_NULL_HANDLE, a zero fill) of the job in `ctx` to the head
 * of its batch: one command buffer before the batch's jobs records every job's uploads and
 * fills and one barrier that makes them visible to the shaders. Only for a job that also
 * leaves its copies back to the tail.
 */
void vy__vk_ctx_defer_in(
	struct vy_vk_ctx *ctx, VkBuffer src, VkBuffer dst, const VkBufferCopy *region);

int vy__vk_ctx_parts(struct vy_vk_exec *x, struct vy_vk_ctx *ctx, uint32_t n,
	struct vy_vk_slice *out, uint32_t **map, struct vy_err *err);

/* Give the context back: its slices return to their pools and its holds are released. The job
 * must be done or never submitted. */
void vy__vk_ctx_release(struct vy_vk_exec *x, struct vy_vk_ctx *ctx);

/* Stop the context's job where it still runs: its stop word is set, which its shaders poll, and
 * the parts of its split launches not started launch nothing. */
void vy__vk_ctx_stop(struct vy_vk_exec *x, struct vy_vk_ctx *ctx);

/* Give the context back while its job may still run: it is stopped (vy__vk_ctx_stop), and
 * released once the job is done. */
void vy__vk_ctx_abandon(struct vy_vk_exec *x, struct vy_vk_ctx *ctx);

/* Submit whatever waits in the batch. Errors: DEVICE_LOST and other submit failures. */
int vy__vk_exec_flush(struct vy_vk_exec *x, struct vy_err *err);

/* Submit the batch and wait for every job submitted so far; then release abandoned contexts. */
int vy__vk_exec_drain(struct vy_vk_exec *x, struct vy_err *err);

/*
 * Tests: make every later submission wait until vy__vk_exec_gate_open (so that a job is certainly
 * still running when its waiter gives up). Errors: those of vkCreateSemaphore.
 */
int vy__vk_exec_gate_close(struct vy_vk_exec *x, struct vy_err *err);
/* Tests: let the held submissions run. Errors: DEVICE_LOST. */
int vy__vk_exec_gate_open(struct vy_vk_exec *x, struct vy_err *err);

/*
 * Let the driver free what it defers until a queue submission (lavapipe frees a destroyed
 * pipeline only at its next vkQueueSubmit, so pipelines evicted while nothing is dispatched would
 * pile up): submits nothing, with a fence, unless the previous such submission has not finished
 * yet. Never waits; call it without x->lock held.
 */
void vy__vk_exec_reap(struct vy_vk_exec *x);

#endif
