/*
 * The reference backend behind the backend contract: the vtable, the dispatch paths (inputs,
 * resident buffers, grid_sync splits), timing, capabilities and the device profile. The work
 * itself is done by compile.c (prepare a program) and interp.c (run it); this file decides what
 * runs on which buffers with which launch.
 *
 * Device loss can be simulated (inject_fault "device_lost", for tests of the daemon's recovery
 * without a GPU): every operation then fails DEVICE_LOST, as on a lost Vulkan device, until
 * try_recover drops the resident buffers, which a real device loses too. The other faults are
 * Vulkan's alone: the interpreter has no compiler, submit or device memory to fail.
 */
#include "reference.h"

#include <assert.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "grid_sync.h"
#include "interp.h"

struct reference {
	struct vy_backend base;
	uint32_t subgroup_size;
	struct ref_residents residents;
	atomic_bool lost; /* a simulated device loss, until try_recover */
};

static struct reference *impl(struct vy_backend *b)
{
	return b->impl;
}

/* DEVICE_LOST while a simulated loss lasts; 0 otherwise. */
static int check_lost(struct vy_backend *b, struct vy_err *err)
{
	if (!atomic_load(&impl(b)->lost)) {
		return 0;
	}
	return vy_err_set(err, VY_E_DEVICE_LOST, NULL, "call try_recover, then retry",
		"the reference device was lost (injected fault)");
}

static void run_config(const struct reference *r, const struct vy_dispatch_config *config,
	struct ref_run_config *out)
{
	out->spec = config->spec;
	out->max_loop_iterations = config->max_loop_iterations
					   ? config->max_loop_iterations
					   : VY_DISPATCH_DEFAULT_MAX_LOOP_ITERATIONS;
	out->timeout_ms = config->timeout_ms;
	out->deadline_ns =
		config->timeout_ms ? vy__ref_now_ns() + (uint64_t)config->timeout_ms * 1000000u : 0;
	out->subgroup_size = r->subgroup_size;
}

/* The launch of `program` for this plan; an overriding workgroup size must fit the interpreter.
 * A program split at grid_sync barriers launches every segment with the whole program's grid. */
static int launch_for(const struct vy_program *program, const struct vy_binding_plan *plan,
	const struct vy_dispatch_config *config, struct vy_launch *launch, struct vy_err *err)
{
	struct vy_launch_config lc;
	memcpy(lc.grid, config->grid, sizeof(lc.grid));
	memcpy(lc.workgroup_size, config->workgroup_size, sizeof(lc.workgroup_size));
	int rc = vy_launch_compute(
		program, vy_launch_features_scan(program), plan, &lc, NULL, launch, err);
	if (rc) {
		return rc;
	}
	const uint32_t *wg = launch->workgroup_size;
	uint64_t n = (uint64_t)wg[0] * wg[1] * wg[2];
	if (n > REF_MAX_INVOCATIONS || wg[0] > REF_MAX_WORKGROUP_X || wg[1] > REF_MAX_WORKGROUP_Y ||
		wg[2] > REF_MAX_WORKGROUP_Z) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "config.workgroup_size",
			"keep the workgroup size within [1024, 1024, 64] and 1024 invocations",
			"workgroup size [%" PRIu32 ", %" PRIu32 ", %" PRIu32
			"] exceeds the reference interpreter's limits",
			wg[0], wg[1], wg[2]);
	}
	return 0;
}

/* Prepare `program` (validated when `validate`) and run it once on bound memory. */
static int run_once(const struct vy_program *program, bool validate, struct ref_mem *mem,
	const struct vy_launch *launch, const struct ref_run_config *cfg, uint64_t *run_ns,
	struct vy_err *err)
{
	struct ref_prog *rp = NULL;
	int rc = vy__ref_prog_create(program, validate, &rp, err);
	if (rc == 0) {
		uint64_t start = vy__ref_now_ns();
		rc = vy__ref_run(rp, mem, launch, cfg, err);
		*run_ns += vy__ref_now_ns() - start;
	}
	vy__ref_prog_destroy(rp);
	return rc;
}

/*
 * Run `program` on bound memory. A program with top-level grid_sync barriers runs segment after
 * segment over the same memory, as one grid whose every invocation meets at each barrier: every
 * buffer keeps what the segments before wrote (workgroup memory starts zeroed in each, as in any
 * launch). Errors of a segment are prefixed with its index and located in the whole program.
 */
static int run_program(struct reference *r, const struct vy_program *program, bool validate,
	const struct vy_binding_plan *plan, struct ref_mem *mem,
	const struct vy_dispatch_config *config, uint64_t *run_ns, struct vy_err *err)
{
	struct vy_launch launch;
	int rc = launch_for(program, plan, config, &launch, err);
	if (rc) {
		return rc;
	}
	struct ref_run_config cfg;
	run_config(r, config, &cfg);
	if (!vy_grid_sync_contains(program)) {
		return run_once(program, validate, mem, &launch, &cfg, run_ns, err);
	}
	struct vy_grid_sync_split split;
	vy_grid_sync_split(program, &split);
	for (uint32_t k = 0; k < split.len && rc == 0; k++) {
		rc = run_once(split.segments[k], validate, mem, &launch, &cfg, run_ns, err);
		if (rc) {
			vy_grid_sync_segment_error(&split, k, err);
		}
	}
	vy_grid_sync_split_finish(&split);
	return rc;
}

static int dispatch_impl(struct vy_backend *b, const struct vy_program *program, bool validate,
	const struct vy_bytes *inputs, size_t n_inputs, const struct vy_dispatch_config *config,
	struct vy_outputs *outputs, uint64_t *run_ns, struct vy_err *err)
{
	*run_ns = 0;
	int rc = check_lost(b, err);
	if (rc) {
		return rc;
	}
	/* The whole program first, so that its errors carry whole-program paths. */
	rc = validate ? vy__ref_validate(program, err) : 0;
	if (rc) {
		return rc;
	}
	struct vy_binding_plan *plan = NULL;
	rc = vy_binding_plan_build_for_inputs(program, inputs, n_inputs, &plan, err);
	if (rc == 0) {
		/* Before the words are allocated: a declared count is not proof of memory. */
		rc = vy_binding_plan_check_outputs(plan,
			config->max_output_bytes ? config->max_output_bytes
						 : VY_DISPATCH_DEFAULT_MAX_OUTPUT_BYTES,
			err);
	}
	if (rc) {
		vy_binding_plan_destroy(plan);
		return rc;
	}
	struct ref_mem mem;
	rc = vy__ref_mem_bind(&mem, program, plan, inputs, err);
	if (rc == 0) {
		rc = run_program(impl(b), program, validate, plan, &mem, config, run_ns, err);
	}
	if (rc == 0) {
		vy__ref_mem_outputs(&mem, program, plan, outputs);
	}
	vy__ref_mem_finish(&mem);
	vy_binding_plan_destroy(plan);
	return rc;
}

static int ref_dispatch(struct vy_backend *b, const struct vy_program *program,
	const struct vy_bytes *inputs, size_t n_inputs, const struct vy_dispatch_config *config,
	struct vy_outputs *outputs, struct vy_err *err)
{
	uint64_t run_ns;
	return dispatch_impl(b, program, true, inputs, n_inputs, config, outputs, &run_ns, err);
}

int vy__reference_dispatch_unchecked(struct vy_backend *b, const struct vy_program *program,
	const struct vy_bytes *inputs, size_t n_inputs, const struct vy_dispatch_config *config,
	struct vy_outputs *outputs, struct vy_err *err)
{
	static const struct vy_dispatch_config defaults;
	vy_outputs_clear(outputs);
	uint64_t run_ns;
	int rc = dispatch_impl(b, program, false, inputs, n_inputs, config ? config : &defaults,
		outputs, &run_ns, err);
	if (rc) {
		vy_outputs_clear(outputs);
	}
	return rc;
}

static int ref_dispatch_timed(struct vy_backend *b, const struct vy_program *program,
	const struct vy_bytes *inputs, size_t n_inputs, const struct vy_dispatch_config *config,
	struct vy_outputs *outputs, struct vy_timing *timing, struct vy_err *err)
{
	uint64_t start = vy__ref_now_ns();
	uint64_t run_ns = 0;
	vy_outputs_clear(outputs);
	int rc = dispatch_impl(b, program, true, inputs, n_inputs, config, outputs, &run_ns, err);
	timing->wall_ns = vy__ref_now_ns() - start;
	timing->device_ns = run_ns;
	return rc;
}

/* Bind resource k to the k-th non-workgroup buffer in binding order. */
static int bind_resources(struct vy_binding_plan *plan, struct ref_resident **bufs,
	size_t n_resources, struct ref_mem *mem, struct vy_err *err)
{
	memset(mem, 0, sizeof(*mem));
	size_t k = 0;
	for (uint32_t i = 0; i < plan->n_bindings; i++) {
		struct vy_binding *b = &plan->bindings[i];
		if (b->role == VY_ROLE_SHARED) {
			continue;
		}
		assert(k < n_resources);
		const struct ref_resident *res = bufs[k];
		char at[32];
		snprintf(at, sizeof(at), "resources[%zu]", k);
		k++;
		uint64_t count = b->element_count;
		if (count == 0) {
			if (res->len % 4 != 0 || res->len / 4 > UINT32_MAX) {
				return vy_err_set(err, VY_E_BAD_REQUEST, at,
					"size the resident buffer in whole 4-byte elements, at "
					"most "
					"4294967295 of them",
					"resident buffer of %zu bytes bound to count-0 buffer `%s` "
					"is "
					"not a whole number of u32-sized elements within the index "
					"range",
					res->len, b->name);
			}
			count = res->len / 4;
		} else if (res->len < count * 4) {
			return vy_err_set(err, VY_E_BAD_REQUEST, at,
				"allocate the resident buffer with at least count * 4 bytes",
				"resident buffer of %zu bytes is smaller than buffer `%s` of "
				"%" PRIu64 " elements",
				res->len, b->name, count);
		}
		b->element_count = (uint32_t)count;
		mem->words[b->buffer_index] = res->words;
		mem->count[b->buffer_index] = (uint32_t)count;
	}
	return 0;
}

static void zero_outputs(const struct vy_binding_plan *plan, struct ref_mem *mem)
{
	for (uint32_t i = 0; i < plan->n_bindings; i++) {
		const struct vy_binding *b = &plan->bindings[i];
		if (b->role == VY_ROLE_OUTPUT && mem->words[b->buffer_index]) {
			memset(mem->words[b->buffer_index], 0,
				(size_t)mem->count[b->buffer_index] * sizeof(uint32_t));
		}
	}
}

static int ref_resident_dispatch(struct vy_backend *b, const struct vy_program *program,
	const struct vy_resource *resources, size_t n_resources,
	const struct vy_dispatch_config *config, struct vy_timing *timing, struct vy_err *err)
{
	struct reference *r = impl(b);
	uint64_t start = vy__ref_now_ns();
	uint64_t run_ns = 0;
	struct vy_binding_plan *plan = NULL;
	int rc = check_lost(b, err);
	if (rc == 0) {
		rc = vy_binding_plan_build(program, &plan, err);
	}
	if (rc) {
		return rc;
	}
	size_t wanted = plan->n_bindings - plan->n_shared;
	struct ref_resident *bufs[VY_IR_MAX_BUFFERS];
	if (n_resources != wanted) {
		rc = vy_err_set(err, VY_E_BAD_REQUEST, "resources",
			"pass one resource per non-workgroup buffer, in binding order",
			"the program binds %zu resident buffers but the dispatch gave %zu", wanted,
			n_resources);
	} else {
		rc = vy__ref_residents_acquire(&r->residents, resources, n_resources, bufs, err);
	}
	if (rc == 0) {
		struct ref_mem mem;
		rc = bind_resources(plan, bufs, n_resources, &mem, err);
		if (rc == 0) {
			rc = vy__ref_validate(program, err);
		}
		if (rc == 0) {
			zero_outputs(plan, &mem);
			rc = run_program(r, program, true, plan, &mem, config, &run_ns, err);
		}
		vy__ref_residents_release(&r->residents, bufs, n_resources);
	}
	vy_binding_plan_destroy(plan);
	timing->wall_ns = vy__ref_now_ns() - start;
	timing->device_ns = run_ns;
	return rc;
}

static int ref_resident_alloc(
	struct vy_backend *b, size_t len, struct vy_resource *out, struct vy_err *err)
{
	int rc = check_lost(b, err);
	return rc ? rc : vy__ref_residents_alloc(&impl(b)->residents, len, out, err);
}

static int ref_resident_upload(struct vy_backend *b, const struct vy_resource *res, size_t offset,
	struct vy_bytes data, struct vy_err *err)
{
	int rc = check_lost(b, err);
	return rc ? rc : vy__ref_residents_upload(&impl(b)->residents, res, offset, data, err);
}

static int ref_resident_download(struct vy_backend *b, const struct vy_resource *res, size_t offset,
	uint8_t *dst, size_t len, struct vy_err *err)
{
	int rc = check_lost(b, err);
	return rc ? rc
		  : vy__ref_residents_download(&impl(b)->residents, res, offset, dst, len, err);
}

static int ref_resident_free(struct vy_backend *b, struct vy_resource res, struct vy_err *err)
{
	return vy__ref_residents_free(&impl(b)->residents, res, err);
}

static void ref_destroy(struct vy_backend *b)
{
	struct reference *r = impl(b);
	vy__ref_residents_finish(&r->residents);
	free(r);
}

static bool ref_device_lost(struct vy_backend *b)
{
	return atomic_load(&impl(b)->lost);
}

/* A lost device comes back empty: its resident buffers are gone, as on a GPU. */
static int ref_try_recover(struct vy_backend *b, struct vy_err *err)
{
	struct reference *r = impl(b);
	if (atomic_load(&r->lost)) {
		vy__ref_residents_drop_all(&r->residents);
		atomic_store(&r->lost, false);
	}
	return 0;
}

static int ref_inject_fault(struct vy_backend *b, enum vy_fault fault, struct vy_err *err)
{
	assert((unsigned)fault < VY_FAULT_COUNT);
	if (fault != VY_FAULT_DEVICE_LOST) {
		char feature[64];
		snprintf(feature, sizeof(feature), "the injected fault %s (only device_lost)",
			vy_fault_name(fault));
		return vy_backend_unsupported(b, feature, err);
	}
	atomic_store(&impl(b)->lost, true);
	return 0;
}

static const char *ref_version(struct vy_backend *b)
{
	return "vyre-reference 1";
}

static bool ref_supports(struct vy_backend *b, enum vy_capability cap)
{
	return cap == VY_CAP_SUBGROUP_OPS || cap == VY_CAP_GRID_SYNC;
}

static void ref_max_workgroup_size(struct vy_backend *b, uint32_t out[3])
{
	out[0] = REF_MAX_WORKGROUP_X;
	out[1] = REF_MAX_WORKGROUP_Y;
	out[2] = REF_MAX_WORKGROUP_Z;
}

static uint32_t ref_max_workgroups_per_dimension(struct vy_backend *b)
{
	return UINT32_MAX;
}

static uint32_t ref_max_workgroup_invocations(struct vy_backend *b)
{
	return REF_MAX_INVOCATIONS;
}

static uint32_t ref_subgroup_size(struct vy_backend *b)
{
	return impl(b)->subgroup_size;
}

static uint64_t ref_max_storage_buffer_bytes(struct vy_backend *b)
{
	return REF_MAX_BUFFER_BYTES;
}

static void ref_device_profile(struct vy_backend *b, struct vy_device_profile *out)
{
	snprintf(out->name, sizeof(out->name), "vyre reference interpreter");
	snprintf(out->driver_info, sizeof(out->driver_info),
		"CPU interpreter, lock-step workgroups, simulated subgroups of %" PRIu32,
		impl(b)->subgroup_size);
	out->has_subgroup_shuffle = true;
	out->supports_specialization_constants = true;
	out->supports_trap_propagation = true;
	out->has_shared_memory = true;
	out->max_shared_bytes = REF_MAX_SHARED_BYTES;
	out->compute_units = 1;
	out->fma_fused = true;
	out->div_exact = true;
	out->sqrt_exact = true;
	out->keeps_subnormals = false;
	out->fold_exact = true;
	out->select_exact = true;
	out->timestamps = true;
	out->timestamp_period_ns = 1.0;
	out->unified_memory = true;
	out->cpu_device = true;
	long pages = sysconf(_SC_PHYS_PAGES);
	long page = sysconf(_SC_PAGESIZE);
	if (pages > 0 && page > 0) {
		out->n_heaps = 1;
		out->heaps[0] = (struct vy_memory_heap){(uint64_t)pages * (uint64_t)page, 0, false};
	}
}

static const struct vy_backend_ops reference_ops = {
	.dispatch = ref_dispatch,
	.destroy = ref_destroy,
	.version = ref_version,
	.dispatch_timed = ref_dispatch_timed,
	.resident_alloc = ref_resident_alloc,
	.resident_upload = ref_resident_upload,
	.resident_download = ref_resident_download,
	.resident_free = ref_resident_free,
	.resident_dispatch = ref_resident_dispatch,
	.supports = ref_supports,
	.max_workgroup_size = ref_max_workgroup_size,
	.max_workgroups_per_dimension = ref_max_workgroups_per_dimension,
	.max_workgroup_invocations = ref_max_workgroup_invocations,
	.subgroup_size = ref_subgroup_size,
	.max_storage_buffer_bytes = ref_max_storage_buffer_bytes,
	.device_profile = ref_device_profile,
	.device_lost = ref_device_lost,
	.try_recover = ref_try_recover,
	.inject_fault = ref_inject_fault,
};

int vy_reference_backend_create(
	const struct vy_reference_options *opts, struct vy_backend **out, struct vy_err *err)
{
	*out = NULL;
	uint32_t sg = opts && opts->subgroup_size ? opts->subgroup_size
						  : VY_REFERENCE_DEFAULT_SUBGROUP_SIZE;
	if (sg > REF_MAX_SUBGROUP_SIZE || (sg & (sg - 1)) != 0) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "subgroup_size",
			"give a subgroup size that is a power of two from 1 to 128, or 0 for 8",
			"subgroup size %" PRIu32 " cannot be simulated", sg);
	}
	struct reference *r = calloc(1, sizeof(*r));
	if (!r) {
		fprintf(stderr, "vyred: out of memory creating the reference backend\n");
		abort();
	}
	r->base = (struct vy_backend){&reference_ops, VY_REFERENCE_ID, r};
	r->subgroup_size = sg;
	vy__ref_residents_init(&r->residents);
	*out = &r->base;
	return 0;
}
