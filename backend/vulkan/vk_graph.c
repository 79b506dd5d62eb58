/*
 * Recorded graphs (graph_run.h, docs/graphs.md): the whole graph in one command buffer, recorded
 * on its first run and submitted again by every later run with only its inputs copied in.
 *
 * A recording owns an execution context for its life: the context's command buffer holds, in
 * order, a barrier after earlier submissions (resident buffers), the copy of each input from its
 * upload staging and the zero fill of every output, temp and trap sidecar, then each step's
 * dispatches (a compute barrier before a step only where the plan has one), a timestamp after
 * each step that may run long (stamped_step) or after every step for a run that asks for its
 * steps' times, and the copies of the outputs and sidecars to readback staging. The context's
 * slices are the graph's slots; the kernels and resident buffers it binds are held by the
 * context. Slots that the host reads or writes directly (small buffers on a discrete GPU,
 * every buffer on unified memory) are filled by the host before each submission, as a single
 * dispatch fills them.
 *
 * A recording stays valid while the slot lengths (count-0 inputs take each run's length), the
 * resident buffers bound and whether the run asks for times are the same; otherwise the run
 * records anew. One run uses a recording at a time: a run that finds it busy records a one-run
 * copy. A run that times out abandons the context (its stop word ends the shaders' loops, its
 * split launches skip their parts) and the recording is recorded anew next time; the step it
 * names is the first whose end timestamp had not been written. A timestamp costs about a
 * microsecond of the device's time between two steps on NVIDIA, as much as a small step
 * itself: a step without loops over few invocations, which cannot run long, has none unless
 * the run asks for times. Recovery after a lost device ends every recording's Vulkan objects
 * (vy__vk_graphs_drop_device).
 *
 * Thread-safety: graph_lock guards the list of recordings and their busy flags; a recording's
 * other fields belong to the run that holds it busy.
 */
#include "vk_backend.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graph.h"
#include "graph_run.h"
#include "vk_util.h"

struct vk_gstep {
	struct vy__vk_kernel *k; /* a reference, held by the context */
	struct vy__vk_variant *v;
	struct vy_launch launch;
	struct vy__vk_form form; /* vy__vk_job.form */
	uint32_t n_parts;
	uint32_t part_axis;
	uint32_t part_step;
	uint32_t first_part;  /* of its parts in the graph's indirect arguments */
	uint32_t first_range; /* of its segments' ranges in the sidecar */
	uint64_t loop_limit;
};

/* Invocations up to which a step without loops and without parts gets no timestamp. */
#define LIGHT_INVOCATIONS (UINT64_C(1) << 16)

/* A query pool of the recording's timestamps, destroyed when its context is released. */
struct vk_stamps {
	struct vy_vk_device *dev;
	VkQueryPool pool;
	uint32_t count;
};

struct vy_graph_recording {
	struct vy__vk_backend *b;
	struct vy_graph_recording *prev; /* b->recordings */
	struct vy_graph_recording *next;
	bool linked; /* in b->recordings */
	bool busy;
	struct vy_vk_ctx *ctx; /* NULL once its Vulkan objects are gone */
	const struct vy_graph_plan *plan;
	uint32_t n_steps;
	struct vk_gstep *steps;
	uint32_t n_slots;
	struct vy_vk_xfer *slots;
	size_t *lens;
	struct vy__vk_resident **res; /* per slot: the resident buffer bound, or NULL */
	struct vy_vk_xfer sidecar;
	uint32_t stride; /* bytes per sidecar range */
	uint32_t n_ranges;
	struct vy_vk_slice parts;
	struct vk_stamps *stamps; /* NULL without timestamps */
	bool timed;               /* every step has its end timestamp (times were asked for) */
	/* Per step, the query of its end timestamp (query 0 is the start), or 0 for none. */
	uint32_t *stamp_of;
};

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p) {
		fprintf(stderr, "vyred: out of memory for a recorded graph\n");
		abort();
	}
	return p;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

static void stamps_release(void *arg)
{
	struct vk_stamps *st = arg;
	st->dev->vk.vkDestroyQueryPool(st->dev->dev, st->pool, NULL);
	free(st);
}

/* --- the list --------------------------------------------------------------------------- */

static void link_locked(struct vy__vk_backend *b, struct vy_graph_recording *r)
{
	r->prev = NULL;
	r->next = b->recordings;
	if (b->recordings) {
		b->recordings->prev = r;
	}
	b->recordings = r;
	r->linked = true;
}

static void unlink_locked(struct vy__vk_backend *b, struct vy_graph_recording *r)
{
	if (!r->linked) {
		return;
	}
	if (r->prev) {
		r->prev->next = r->next;
	} else {
		b->recordings = r->next;
	}
	if (r->next) {
		r->next->prev = r->prev;
	}
	r->prev = r->next = NULL;
	r->linked = false;
}

/* Free a recording that no run holds; its context is released (its work is done). */
static void recording_free(struct vy_graph_recording *r)
{
	if (r->ctx) {
		vy__vk_ctx_release(&r->b->exec, r->ctx);
	}
	free(r->steps);
	free(r->stamp_of);
	free(r->slots);
	free(r->lens);
	free(r->res);
	free(r);
}

void vy__vk_graphs_drop_device(struct vy__vk_backend *b)
{
	pthread_mutex_lock(&b->graph_lock);
	for (struct vy_graph_recording *r = b->recordings; r; r = r->next) {
		/* vy__vk_exec_finish destroys the context with its slices and holds. */
		r->ctx = NULL;
	}
	pthread_mutex_unlock(&b->graph_lock);
}

/* --- recording ------------------------------------------------------------------------- */

/* Whether `r` can run with these slot lengths and resident buffers. */
static bool still_valid(const struct vy_graph_recording *r, const size_t *lens,
	struct vy__vk_resident *const *res, bool timed)
{
	if (!r->ctx || r->timed != timed) {
		return false;
	}
	for (uint32_t s = 0; s < r->n_slots; s++) {
		if (r->lens[s] != lens[s] || r->res[s] != res[s]) {
			return false;
		}
	}
	return true;
}

/* The slot buffers, as a dispatch prepares its buffers (vk_xfer.h). */
static int make_slots(
	struct vy_graph_recording *r, const struct vy_bytes *inputs, struct vy_err *err)
{
	struct vy__vk_backend *b = r->b;
	struct vy_vk_exec *x = &b->exec;
	const struct vy_graph_plan *p = r->plan;
	for (uint32_t s = 0; s < r->n_slots; s++) {
		const struct vy_graph_slot *sl = &p->slots[s];
		uint64_t len = r->lens[s];
		if (len > b->dev.max_storage_range) {
			return vy_err_set(err, VY_E_UNSUPPORTED_FEATURE, NULL,
				"split the data over several graphs or buffers",
				"a slot of the graph is %" PRIu64
				" bytes; the device binds at most "
				"%" PRIu64 " bytes per buffer",
				len, (uint64_t)b->dev.max_storage_range);
		}
		int rc = 0;
		switch (sl->kind) {
		case VY_GRAPH_INPUT:
			rc = vy__vk_xfer_prepare(x, r->ctx, len,
				len ? inputs[sl->index].data : NULL, false, false, sl->written,
				NULL, &r->slots[s], err);
			break;
		case VY_GRAPH_OUTPUT:
			rc = vy__vk_xfer_prepare(
				x, r->ctx, len, NULL, true, true, true, NULL, &r->slots[s], err);
			break;
		case VY_GRAPH_TEMP:
			rc = vy__vk_xfer_prepare(
				x, r->ctx, len, NULL, true, false, true, NULL, &r->slots[s], err);
			break;
		case VY_GRAPH_RESIDENT:
			atomic_fetch_add(&r->res[s]->refs, 1);
			vy__vk_ctx_hold(r->ctx, vy__vk_resident_release, r->res[s]);
			vy__vk_xfer_wrap(&r->res[s]->slice, len, false, &r->slots[s]);
			break;
		}
		if (rc) {
			return rc;
		}
	}
	return 0;
}

/* The step's binding plan with this run's element counts, in `bind`. */
static void step_bindings(const struct vy_graph_recording *r, uint32_t i,
	const struct vy__vk_kernel *k, struct vy_binding *bind)
{
	const struct vy_graph_step *st = &r->plan->steps[i];
	memcpy(bind, k->plan->bindings, k->plan->n_bindings * sizeof(*bind));
	for (uint32_t j = 0; j < k->plan->n_bindings; j++) {
		uint32_t s = st->slot_of[j];
		if (s != VY_GRAPH_NO_SLOT && !bind[j].has_static_len) {
			bind[j].element_count = (uint32_t)(r->lens[s] / bind[j].element_size);
		}
	}
}

/* Compile, launch and split every step; sizes the sidecar and the indirect arguments. */
static int make_steps(struct vy_graph_recording *r, const struct vy_graph_step_run *steps,
	uint32_t *n_parts, uint32_t *n_sets, struct vy_err *err)
{
	struct vy__vk_backend *b = r->b;
	*n_parts = 0;
	*n_sets = 0;
	for (uint32_t i = 0; i < r->n_steps; i++) {
		struct vk_gstep *gs = &r->steps[i];
		int rc = vy__vk_kernel_get(b, steps[i].program, &gs->k, err);
		if (rc) {
			vy_graph_name_step(err, i, r->n_steps);
			return rc;
		}
		vy__vk_ctx_hold(r->ctx, vy__vk_kernel_release, gs->k);
		struct vy_binding bind[VY_IR_MAX_BUFFERS];
		step_bindings(r, i, gs->k, bind);
		struct vy_binding_plan plan = *gs->k->plan;
		plan.bindings = bind;
		const struct vy_dispatch_config *cfg = &steps[i].config;
		struct vy__vk_job job;
		rc = vy__vk_plan_launch(b, gs->k, &plan, cfg, &job, err);
		if (rc == 0) {
			rc = vy__vk_variant_get(
				gs->k, cfg->spec, job.launch.workgroup_size, job.form, &gs->v, err);
		}
		if (rc) {
			vy_graph_name_step(err, i, r->n_steps);
			return rc;
		}
		gs->launch = job.launch;
		gs->form = job.form;
		gs->n_parts = vy__vk_split_plan(&b->exec, &job);
		gs->part_axis = job.part_axis;
		gs->part_step = job.part_step;
		gs->first_part = *n_parts;
		*n_parts += gs->n_parts;
		gs->first_range = r->n_ranges;
		r->n_ranges += gs->k->n_segments;
		*n_sets += gs->k->n_segments;
		gs->loop_limit = cfg->max_loop_iterations ? cfg->max_loop_iterations
							  : VY_DISPATCH_DEFAULT_MAX_LOOP_ITERATIONS;
	}
	return 0;
}

/* The indirect arguments of every split launch, in one slice of the context. */
static int make_parts(struct vy_graph_recording *r, uint32_t n_parts, struct vy_err *err)
{
	if (n_parts == 0) {
		return 0;
	}
	uint32_t *args = NULL;
	int rc = vy__vk_ctx_parts(&r->b->exec, r->ctx, n_parts, &r->parts, &args, err);
	if (rc) {
		return rc;
	}
	for (uint32_t i = 0; i < r->n_steps; i++) {
		const struct vk_gstep *gs = &r->steps[i];
		struct vy__vk_job job = {
			.launch = gs->launch,
			.n_parts = gs->n_parts,
			.part_axis = gs->part_axis,
			.part_step = gs->part_step,
		};
		vy__vk_split_fill(&job, args + (size_t)3 * gs->first_part);
	}
	return 0;
}

/* Whether step i may run long enough to be named by a timeout: it loops, or runs in parts, or
 * runs more than LIGHT_INVOCATIONS invocations. */
static bool stamped_step(const struct vy_graph_recording *r, uint32_t i)
{
	const struct vk_gstep *gs = &r->steps[i];
	for (uint32_t s = 0; s < gs->k->n_segments; s++) {
		if (gs->k->segments[s].layout.static_iters != 0) {
			return true;
		}
	}
	const uint32_t *w = gs->launch.workgroups;
	const uint32_t *size = gs->launch.workgroup_size;
	uint64_t groups = (uint64_t)w[0] * w[1] * w[2];
	uint64_t per = (uint64_t)size[0] * size[1] * size[2];
	return gs->n_parts > 0 || groups > LIGHT_INVOCATIONS / (per ? per : 1);
}

/* The recording's timestamps: the start and the end of each step stamped_step names, or of
 * every step when `r->timed`; none when no step has one. */
static int make_stamps(struct vy_graph_recording *r, struct vy_err *err)
{
	struct vy_vk_device *d = &r->b->dev;
	if (!d->timestamps || !d->host_query_reset) {
		return 0;
	}
	r->stamp_of = xcalloc(r->n_steps, sizeof(*r->stamp_of));
	uint32_t count = 1;
	for (uint32_t i = 0; i < r->n_steps; i++) {
		if (r->timed || stamped_step(r, i)) {
			r->stamp_of[i] = count++;
		}
	}
	if (count == 1) {
		return 0;
	}
	int rc = 0;
	VkQueryPool pool = VK_NULL_HANDLE;
	VkQueryPoolCreateInfo q = {
		.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
		.queryType = VK_QUERY_TYPE_TIMESTAMP,
		.queryCount = count,
	};
	VY_VK(d->vk.vkCreateQueryPool(d->dev, &q, NULL, &pool));
	r->stamps = xcalloc(1, sizeof(*r->stamps));
	*r->stamps = (struct vk_stamps){d, pool, count};
	vy__vk_ctx_hold(r->ctx, stamps_release, r->stamps);
	return 0;
error:
	return rc;
}

/* The job of step i as vy__vk_record_launches reads it: its buffers, sidecar and launch. */
static void step_job(const struct vy_graph_recording *r, uint32_t i, struct vy__vk_job *job)
{
	const struct vk_gstep *gs = &r->steps[i];
	const struct vy_graph_step *st = &r->plan->steps[i];
	const struct vy_binding_plan *plan = gs->k->plan;
	job->k = gs->k;
	job->v = gs->v;
	job->launch = gs->launch;
	job->form = gs->form;
	job->n_parts = gs->n_parts;
	job->part_axis = gs->part_axis;
	job->part_step = gs->part_step;
	job->parts = r->parts;
	job->parts.offset += (VkDeviceSize)gs->first_part * 3 * sizeof(uint32_t);
	job->n_bufs = 0;
	for (uint32_t j = 0; j < plan->n_bindings; j++) {
		const struct vy_binding *bd = &plan->bindings[j];
		uint32_t s = st->slot_of[j];
		if (bd->role == VY_ROLE_SHARED || s == VY_GRAPH_NO_SLOT) {
			continue;
		}
		uint32_t n = job->n_bufs++;
		job->buf_of[bd->buffer_index] = n;
		job->bufs[n] = r->slots[s];
		/* A resident buffer may be longer than the declaration bound to it. */
		job->bufs[n].len = bd->has_static_len ? bd->static_byte_len : r->lens[s];
	}
	job->sidecar = job->n_bufs++;
	job->sidecar_stride = r->stride;
	vy__vk_xfer_wrap(&r->sidecar.dev, (uint64_t)r->stride * gs->k->n_segments, false,
		&job->bufs[job->sidecar]);
	job->bufs[job->sidecar].dev.offset += (VkDeviceSize)gs->first_range * r->stride;
}

/* The buffers that the host or a transfer fills before the steps, and those read back after. */
static uint32_t transfer_set(const struct vy_graph_recording *r, bool out, struct vy_vk_xfer *set)
{
	uint32_t n = 0;
	for (uint32_t s = 0; s < r->n_slots; s++) {
		enum vy_graph_slot_kind kind = r->plan->slots[s].kind;
		if (kind == VY_GRAPH_RESIDENT || (out && kind != VY_GRAPH_OUTPUT)) {
			continue;
		}
		set[n++] = r->slots[s];
	}
	set[n++] = r->sidecar;
	return n;
}

static int record_graph(struct vy_vk_ctx *ctx, VkCommandBuffer cmd, void *arg, struct vy_err *err)
{
	struct vy_graph_recording *r = arg;
	struct vy__vk_backend *b = r->b;
	struct vy_vk_device *d = &b->dev;
	struct vy_vk_exec *x = &b->exec;
	vy__vk_entry_barrier(d, cmd);
	struct vy_vk_xfer *set = xcalloc(r->n_slots + 1, sizeof(*set));
	uint32_t n = transfer_set(r, false, set);
	vy__vk_xfer_record_in(x, cmd, NULL, NULL, set, n);
	if (r->stamps) {
		d->vk.vkCmdWriteTimestamp(
			cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, r->stamps->pool, 0);
	}
	struct vy__vk_job *job = xcalloc(1, sizeof(*job));
	int rc = 0;
	for (uint32_t i = 0; rc == 0 && i < r->n_steps; i++) {
		bool barrier = i > 0 && r->plan->steps[i].barrier_before;
		if (barrier) {
			vy__vk_compute_barrier(d, cmd);
		}
		if (i > 0 && r->stamps && r->stamp_of[i - 1]) {
			/* The end of step i - 1. After a barrier, which already waits for it, the
			 * stamp waits for nothing more at the top of the pipe; without one it waits
			 * itself. */
			d->vk.vkCmdWriteTimestamp(cmd,
				barrier ? VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT
					: VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
				r->stamps->pool, r->stamp_of[i - 1]);
		}
		step_job(r, i, job);
		rc = vy__vk_record_launches(b, ctx, cmd, job, r->steps[i].loop_limit, err);
		if (rc) {
			vy_graph_name_step(err, i, r->n_steps);
		}
	}
	if (rc == 0 && r->stamps && r->stamp_of[r->n_steps - 1]) {
		d->vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
			r->stamps->pool, r->stamp_of[r->n_steps - 1]);
	}
	if (rc == 0) {
		n = transfer_set(r, true, set);
		vy__vk_xfer_record_out(x, cmd, NULL, NULL, set, n);
	}
	free(job);
	free(set);
	return rc;
}

/*
 * A new recording of the graph for these lengths and resident buffers (each resident with a
 * reference the recording takes its own of). The inputs of this run are already in place.
 */
static int record_new(struct vy__vk_backend *b, const struct vy_graph_plan *plan,
	const struct vy_graph_step_run *steps, const struct vy_bytes *inputs, const size_t *lens,
	struct vy__vk_resident *const *res, bool timed, struct vy_graph_recording **out,
	struct vy_err *err)
{
	struct vy_graph_recording *r = xcalloc(1, sizeof(*r));
	r->b = b;
	r->plan = plan;
	r->timed = timed;
	r->n_steps = plan->n_steps;
	r->steps = xcalloc(plan->n_steps, sizeof(*r->steps));
	r->n_slots = plan->n_slots;
	r->slots = xcalloc(plan->n_slots, sizeof(*r->slots));
	r->lens = xcalloc(plan->n_slots, sizeof(*r->lens));
	r->res = xcalloc(plan->n_slots, sizeof(*r->res));
	memcpy(r->lens, lens, plan->n_slots * sizeof(*lens));
	memcpy(r->res, res, plan->n_slots * sizeof(*res));
	VkDeviceSize align = b->dev.props.limits.minStorageBufferOffsetAlignment;
	r->stride = (uint32_t)((VY_VK_TRAP_BYTES + align - 1) / align * align);
	uint32_t n_parts = 0, n_sets = 0;
	int rc = vy__vk_ctx_acquire(&b->exec, &r->ctx, err);
	if (rc == 0) {
		rc = make_slots(r, inputs, err);
	}
	if (rc == 0) {
		rc = make_steps(r, steps, &n_parts, &n_sets, err);
	}
	if (rc == 0) {
		rc = vy__vk_xfer_prepare(&b->exec, r->ctx, (uint64_t)r->stride * r->n_ranges, NULL,
			true, true, true, NULL, &r->sidecar, err);
	}
	if (rc == 0) {
		rc = make_parts(r, n_parts, err);
	}
	if (rc == 0) {
		rc = make_stamps(r, err);
	}
	if (rc == 0) {
		rc = vy__vk_ctx_record(&b->exec, r->ctx, b->pipes.push_descriptors ? 0 : n_sets,
			record_graph, r, err);
	}
	if (rc) {
		recording_free(r);
		return rc;
	}
	*out = r;
	return 0;
}

/* --- a run ------------------------------------------------------------------------------ */

/* Before a submission of a kept recording: the inputs and zeros the host writes itself. */
static void refill(struct vy_graph_recording *r, const struct vy_bytes *inputs)
{
	for (uint32_t s = 0; s < r->n_slots; s++) {
		const struct vy_graph_slot *sl = &r->plan->slots[s];
		struct vy_vk_xfer *xf = &r->slots[s];
		if (xf->len == 0 || sl->kind == VY_GRAPH_RESIDENT) {
			continue;
		}
		if (sl->kind == VY_GRAPH_INPUT) {
			void *dst = xf->up.buffer ? xf->up.map : xf->dev.map;
			memcpy(dst, inputs[sl->index].data, xf->len);
		} else if (!xf->fill_zero && xf->dev.map) {
			memset(xf->dev.map, 0, xf->len);
		}
	}
	if (!r->sidecar.fill_zero && r->sidecar.dev.map) {
		memset(r->sidecar.dev.map, 0, r->sidecar.len);
	}
}

#define NOT_STARTED (UINT32_MAX - 1)

/*
 * The step that was running when the run's `timeout_ms` ran out: the first of those with an end
 * timestamp whose stamp is not written yet, or ended later than timeout_ms after the run's start
 * stamp (a wait may return after the work it gave up on finished); NOT_STARTED when not even the
 * start stamp was written (the queue was busy with earlier work); UINT32_MAX without timestamps.
 */
static uint32_t running_step(const struct vy_graph_recording *r, uint32_t timeout_ms)
{
	if (!r->stamps) {
		return UINT32_MAX;
	}
	struct vy_vk_device *d = &r->b->dev;
	uint64_t *q = xcalloc((size_t)r->stamps->count * 2, sizeof(*q));
	VkResult res = d->vk.vkGetQueryPoolResults(d->dev, r->stamps->pool, 0, r->stamps->count,
		(size_t)r->stamps->count * 2 * sizeof(*q), q, 2 * sizeof(*q),
		VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
	uint32_t step = UINT32_MAX;
	if (res == VK_SUCCESS || res == VK_NOT_READY) {
		step = q[1] == 0 ? NOT_STARTED : UINT32_MAX;
		double limit = (double)timeout_ms * 1e6 / d->timestamp_period_ns;
		for (uint32_t i = 0; q[1] != 0 && i < r->n_steps; i++) {
			uint32_t k = r->stamp_of[i];
			uint64_t ticks = (q[2 * k] - q[0]) & d->timestamp_mask;
			if (k && (q[2 * k + 1] == 0 || (double)ticks > limit)) {
				step = i;
				break;
			}
		}
	}
	free(q);
	return step;
}

/* Each step's device time from the timestamps (a timed recording), or VY_TIMING_NONE. */
static void step_times(const struct vy_graph_recording *r, uint64_t *step_ns)
{
	struct vy_vk_device *d = &r->b->dev;
	uint64_t *ts = NULL;
	VkResult res = VK_ERROR_UNKNOWN;
	if (r->stamps && r->timed) {
		ts = xcalloc(r->stamps->count, sizeof(*ts));
		res = d->vk.vkGetQueryPoolResults(d->dev, r->stamps->pool, 0, r->stamps->count,
			r->stamps->count * sizeof(*ts), ts, sizeof(*ts), VK_QUERY_RESULT_64_BIT);
	}
	for (uint32_t i = 0; i < r->n_steps; i++) {
		uint64_t ticks = res == VK_SUCCESS ? (ts[i + 1] - ts[i]) & d->timestamp_mask : 0;
		step_ns[i] = res == VK_SUCCESS ? (uint64_t)((double)ticks * d->timestamp_period_ns)
					       : VY_TIMING_NONE;
	}
	free(ts);
}

/* The trap of the first step that trapped (graph_run.h), or 0. */
static int step_traps(struct vy_graph_recording *r, struct vy_err *err)
{
	struct vy__vk_backend *b = r->b;
	uint8_t *side = xcalloc(1, r->sidecar.len);
	int rc = vy__vk_xfer_read(&b->exec, &r->sidecar, side, r->sidecar.len, err);
	for (uint32_t i = 0; rc == 0 && i < r->n_steps; i++) {
		const struct vk_gstep *gs = &r->steps[i];
		rc = vy__vk_decode_sidecar(
			b, gs->k, side + (size_t)gs->first_range * r->stride, r->stride, err);
		if (rc) {
			vy_graph_name_step(err, i, r->n_steps);
		}
	}
	free(side);
	return rc;
}

static int read_outputs(
	struct vy_graph_recording *r, struct vy_outputs *outputs, struct vy_err *err)
{
	const struct vy_graph_plan *p = r->plan;
	for (uint32_t j = 0; j < p->n_outputs; j++) {
		const struct vy_vk_xfer *xf = &r->slots[p->output_slot[j]];
		uint8_t *dst = vy_outputs_push_zeroed(outputs, xf->len);
		int rc = vy__vk_xfer_read(&r->b->exec, xf, dst, xf->len, err);
		if (rc) {
			return rc;
		}
	}
	return 0;
}

/* Queue `r` once (its timestamps reset first), at the front of the device's queue. */
static int run_queue(struct vy_graph_recording *r, struct vy_err *err)
{
	if (r->stamps) {
		/* From the host, so that a run that times out before its command buffer starts
		 * finds no timestamp of an earlier run. */
		r->b->dev.vk.vkResetQueryPool(r->b->dev.dev, r->stamps->pool, 0, r->stamps->count);
	}
	return vy__vk_ctx_queue(&r->b->exec, r->ctx, true, err);
}

/*
 * Wait for the queued `r` until `timeout_ms` after `queued_ns` and read its results; on a
 * timeout its context is abandoned (r->ctx NULL).
 */
static int run_wait(struct vy_graph_recording *r, uint32_t timeout_ms, uint64_t queued_ns,
	struct vy_outputs *outputs, uint64_t *step_ns, struct vy_err *err)
{
	struct vy_vk_exec *x = &r->b->exec;
	uint64_t timeout_ns = UINT64_MAX;
	if (timeout_ms) {
		uint64_t spent = now_ns() - queued_ns;
		uint64_t limit = (uint64_t)timeout_ms * 1000000;
		timeout_ns = spent < limit ? limit - spent : 0;
	}
	int rc = vy__vk_ctx_wait(x, r->ctx, timeout_ns, err);
	if (rc == VY_E_TIMEOUT) {
		/* Stopped before its timestamps are read: a driver may wait for the work in flight
		 * to read them (lavapipe does). */
		vy__vk_ctx_stop(x, r->ctx);
		uint32_t step = running_step(r, timeout_ms);
		if (step == NOT_STARTED) {
			vy_err_set(err, VY_E_TIMEOUT, NULL,
				"raise timeout_ms: the device was busy with earlier work",
				"the graph had not started when its %" PRIu32 " ms ran out",
				timeout_ms);
		} else {
			vy_err_set(err, VY_E_TIMEOUT, NULL, "raise timeout_ms, or split the graph",
				"the graph did not finish within its %" PRIu32 " ms", timeout_ms);
		}
		if (step < r->n_steps) {
			vy_graph_name_step(err, step, r->n_steps);
		}
		vy__vk_ctx_abandon(x, r->ctx);
		r->ctx = NULL;
		return rc;
	}
	if (rc == 0) {
		rc = step_traps(r, err);
	}
	if (rc == 0) {
		rc = read_outputs(r, outputs, err);
	}
	if (rc == 0 && step_ns) {
		step_times(r, step_ns);
	}
	return rc;
}

/* The resident buffers of the run, per slot, each with a reference for the caller. */
static int hold_residents(struct vy__vk_backend *b, const struct vy_graph_plan *plan,
	const struct vy_resource *residents, struct vy__vk_resident **res, struct vy_err *err)
{
	for (uint32_t s = 0; s < plan->n_slots; s++) {
		if (plan->slots[s].kind != VY_GRAPH_RESIDENT) {
			continue;
		}
		int rc = vy__vk_resident_get(b, residents[s].id, &res[s], err);
		if (rc) {
			if (err) {
				snprintf(err->at, sizeof(err->at), "graph");
			}
			return rc;
		}
	}
	return 0;
}

/*
 * The recording to run: the kept one when it is idle and still valid (marked busy), else NULL
 * after dropping a kept one that is idle but no longer valid; *one_shot tells the caller that the
 * kept one is busy, so that a new recording must not replace it.
 */
static struct vy_graph_recording *take_kept(struct vy__vk_backend *b,
	struct vy_graph_recording **rec, const size_t *lens, struct vy__vk_resident *const *res,
	bool timed, bool *one_shot)
{
	struct vy_graph_recording *r = *rec, *stale = NULL;
	*one_shot = false;
	pthread_mutex_lock(&b->graph_lock);
	if (r && r->busy) {
		*one_shot = true;
		r = NULL;
	} else if (r && still_valid(r, lens, res, timed)) {
		r->busy = true;
	} else if (r) {
		unlink_locked(b, r);
		stale = r;
		*rec = NULL;
		r = NULL;
	}
	pthread_mutex_unlock(&b->graph_lock);
	if (stale) {
		recording_free(stale);
	}
	return r;
}

/*
 * One run of a graph from its start to its end. `life` is held for reading from run_begin to
 * run_end, so that the device cannot close under the recording, whichever thread waits.
 */
struct vk_graph_run {
	struct vy__vk_backend *b;
	const struct vy_graph_plan *plan;
	struct vy_graph_recording **rec; /* the caller's kept recording */
	size_t *lens;                    /* owned */
	struct vy__vk_resident **res;    /* owned: a reference each */
	struct vy_graph_recording *r;    /* the recording this run queued, or NULL */
	bool one_shot;                   /* r is the run's own: the kept one was busy */
	uint32_t timeout_ms;             /* what is left of the run's time once queued */
	uint64_t queued_ns;
};

/* Check, record or refill, and queue the run; whatever happens, run_end ends it. */
static int run_begin(struct vk_graph_run *run, struct vy__vk_backend *b,
	const struct vy_graph_plan *plan, const struct vy_graph_step_run *steps,
	const struct vy_bytes *inputs, const struct vy_resource *residents, uint32_t timeout_ms,
	bool timed, struct vy_graph_recording **rec, struct vy_err *err)
{
	uint64_t start = now_ns();
	*run = (struct vk_graph_run){.b = b, .plan = plan, .rec = rec};
	run->lens = xcalloc(plan->n_slots, sizeof(*run->lens));
	run->res = xcalloc(plan->n_slots, sizeof(*run->res));
	pthread_rwlock_rdlock(&b->life);
	int rc = vy__vk_usable(b, err);
	if (rc == 0) {
		rc = vy_graph_plan_run_lengths(plan, inputs, plan->n_inputs, run->lens, err);
	}
	if (rc == 0) {
		rc = hold_residents(b, plan, residents, run->res, err);
	}
	if (rc == 0 && vy__vk_fault_take(b, VY_FAULT_OUT_OF_MEMORY, err)) {
		rc = VY_E_OUT_OF_MEMORY;
	}
	if (rc == 0 && vy__vk_fault_take(b, VY_FAULT_DISPATCH, err)) {
		rc = VY_E_DISPATCH_FAILED;
	}
	if (rc == 0) {
		run->r = take_kept(b, rec, run->lens, run->res, timed, &run->one_shot);
		if (run->r) {
			refill(run->r, inputs);
		} else {
			rc = record_new(
				b, plan, steps, inputs, run->lens, run->res, timed, &run->r, err);
		}
	}
	if (rc == 0 && timeout_ms) {
		/* Recording counts toward the run's time. */
		uint64_t spent_ms = (now_ns() - start) / 1000000;
		timeout_ms = spent_ms >= timeout_ms ? 1 : timeout_ms - (uint32_t)spent_ms;
	}
	run->timeout_ms = timeout_ms;
	if (rc == 0) {
		rc = run_queue(run->r, err);
	}
	run->queued_ns = now_ns();
	return rc;
}

/* Keep the recording for the next run or free it, release the run's holds; returns rc. */
static int run_end(struct vk_graph_run *run, int rc)
{
	struct vy__vk_backend *b = run->b;
	struct vy_graph_recording *r = run->r;
	if (r) {
		pthread_mutex_lock(&b->graph_lock);
		r->busy = false;
		/* A run started while another one recorded the graph anew keeps only the first
		 * recording kept. */
		bool keep = !run->one_shot && r->ctx && rc != VY_E_DEVICE_LOST &&
			    (!*run->rec || *run->rec == r);
		if (keep && !r->linked) {
			link_locked(b, r);
			*run->rec = r;
		} else if (!keep) {
			unlink_locked(b, r);
			if (*run->rec == r) {
				*run->rec = NULL;
			}
		}
		pthread_mutex_unlock(&b->graph_lock);
		if (!keep) {
			recording_free(r);
		}
	}
	for (uint32_t s = 0; s < run->plan->n_slots; s++) {
		if (run->res[s]) {
			vy__vk_resident_release(run->res[s]);
		}
	}
	pthread_rwlock_unlock(&b->life);
	free(run->lens);
	free(run->res);
	return vy__vk_note(b, rc);
}

int vy__vk_graph_run(struct vy_backend *base, const struct vy_graph_plan *plan,
	const struct vy_graph_step_run *steps, const struct vy_bytes *inputs,
	const struct vy_resource *residents, uint32_t timeout_ms, struct vy_outputs *outputs,
	uint64_t *step_ns, struct vy_graph_recording **rec, struct vy_err *err)
{
	struct vk_graph_run run;
	int rc = run_begin(&run, vy__vk_from(base), plan, steps, inputs, residents, timeout_ms,
		step_ns != NULL, rec, err);
	if (rc == 0) {
		rc = run_wait(run.r, run.timeout_ms, run.queued_ns, outputs, step_ns, err);
	}
	return run_end(&run, rc);
}

/* A run started by vy__vk_graph_start. */
struct vk_graph_pending {
	struct vy_pending base;
	struct vk_graph_run run;
};

static bool graph_pending_is_ready(struct vy_pending *base)
{
	struct vk_graph_pending *p = base->impl;
	return vy__vk_ctx_ready(&p->run.b->exec, p->run.r->ctx);
}

static int graph_pending_wait(
	struct vy_pending *base, struct vy_outputs *outputs, struct vy_err *err)
{
	struct vk_graph_pending *p = base->impl;
	struct vk_graph_run *run = &p->run;
	int rc = run_wait(run->r, run->timeout_ms, run->queued_ns, outputs, NULL, err);
	rc = run_end(run, rc);
	free(p);
	return rc;
}

/* Abandoned as a run that timed out is: stopped, and its recording not kept. */
static void graph_pending_destroy(struct vy_pending *base)
{
	struct vk_graph_pending *p = base->impl;
	struct vy_graph_recording *r = p->run.r;
	vy__vk_ctx_stop(&p->run.b->exec, r->ctx);
	vy__vk_ctx_abandon(&p->run.b->exec, r->ctx);
	r->ctx = NULL;
	(void)run_end(&p->run, VY_E_TIMEOUT);
	free(p);
}

static const struct vy_pending_ops graph_pending_ops = {
	.is_ready = graph_pending_is_ready,
	.wait = graph_pending_wait,
	.destroy = graph_pending_destroy,
};

int vy__vk_graph_start(struct vy_backend *base, const struct vy_graph_plan *plan,
	const struct vy_graph_step_run *steps, const struct vy_bytes *inputs,
	const struct vy_resource *residents, uint32_t timeout_ms, struct vy_graph_recording **rec,
	struct vy_pending **out, struct vy_err *err)
{
	struct vk_graph_pending *p = xcalloc(1, sizeof(*p));
	p->base = (struct vy_pending){&graph_pending_ops, p};
	int rc = run_begin(&p->run, vy__vk_from(base), plan, steps, inputs, residents, timeout_ms,
		false, rec, err);
	if (rc) {
		rc = run_end(&p->run, rc);
		free(p);
		return rc;
	}
	*out = &p->base;
	return 0;
}

void vy__vk_graph_forget(struct vy_backend *base, struct vy_graph_recording *rec)
{
	struct vy__vk_backend *b = vy__vk_from(base);
	pthread_rwlock_rdlock(&b->life);
	pthread_mutex_lock(&b->graph_lock);
	unlink_locked(b, rec);
	pthread_mutex_unlock(&b->graph_lock);
	recording_free(rec);
	pthread_rwlock_unlock(&b->life);
}
