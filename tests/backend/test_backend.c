/*
 * The backend contract's defaults (seed 001): a backend that implements only `dispatch` still
 * answers every entry of the contract, conservatively, through the vy_backend_* wrappers.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "err.h"
#include "ir.h"

/* The minimal backend: each output is its input with every byte plus one. */
struct minimal {
	struct vy_backend base;
	int calls;
	bool fail;
	long sleep_ns;
};

static int minimal_dispatch(struct vy_backend *b, const struct vy_program *program,
	const struct vy_bytes *inputs, size_t n_inputs, const struct vy_dispatch_config *config,
	struct vy_outputs *outputs, struct vy_err *err)
{
	struct minimal *m = b->impl;
	m->calls++;
	cr_assert_not_null(config, "the wrappers hand a backend a config even when given NULL");
	cr_assert_eq(outputs->len, 0, "a backend's dispatch receives empty outputs");
	if (m->sleep_ns > 0) {
		struct timespec ts = {0, m->sleep_ns};
		nanosleep(&ts, NULL);
	}
	for (size_t i = 0; i < n_inputs; i++) {
		uint8_t *out = vy_outputs_push_zeroed(outputs, inputs[i].len);
		for (size_t j = 0; j < inputs[i].len; j++) {
			out[j] = (uint8_t)(inputs[i].data[j] + 1);
		}
	}
	if (m->fail) {
		return vy_err_set(err, VY_E_DISPATCH_FAILED, NULL, "retry the request",
			"the minimal backend was told to fail");
	}
	return 0;
}

static const struct vy_backend_ops minimal_ops = {
	.dispatch = minimal_dispatch,
};

static struct minimal mk;

static struct vy_backend *minimal_backend(void)
{
	memset(&mk, 0, sizeof(mk));
	mk.base = (struct vy_backend){&minimal_ops, "minimal", &mk};
	return &mk.base;
}

static struct vy_program *tiny_program(void)
{
	struct vy_program *p = vy_program_create("tiny", 1, 1, 1);
	vy_program_add_buffer(p, "x", 0, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 1);
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_store(p, "x", vy_ir_u32(p, 0), vy_ir_u32(p, 1)), NULL));
	return p;
}

static const uint8_t in0[] = {1, 2, 3, 4};
static const uint8_t in1[] = {10, 20};
static const struct vy_bytes two_inputs[] = {{in0, sizeof(in0)}, {in1, sizeof(in1)}};

static void assert_plus_one(const struct vy_outputs *outs)
{
	cr_assert_eq(outs->len, 2);
	cr_assert_eq(outs->items[0].len, 4);
	cr_assert_eq(outs->items[1].len, 2);
	const uint8_t want0[] = {2, 3, 4, 5};
	const uint8_t want1[] = {11, 21};
	cr_assert_arr_eq(outs->items[0].data, want0, 4);
	cr_assert_arr_eq(outs->items[1].data, want1, 2);
}

static void assert_unsupported(int rc, const struct vy_err *err, const char *feature)
{
	cr_assert_eq(rc, VY_E_UNSUPPORTED_FEATURE, "%s: got %d", feature, rc);
	cr_assert_eq(err->code, VY_E_UNSUPPORTED_FEATURE);
	cr_assert_not_null(
		strstr(err->message, feature), "message '%s' names %s", err->message, feature);
	cr_assert_not_null(
		strstr(err->message, "minimal"), "message '%s' names the backend", err->message);
	cr_assert_neq(err->fix[0], '\0', "an unsupported feature comes with a fix");
}

Test(backend, dispatch_runs_the_backend_and_replaces_old_outputs)
{
	struct vy_backend *b = minimal_backend();
	struct vy_program *p = tiny_program();
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	vy_outputs_push_copy(&outs, "stale", 5);
	cr_assert_eq(vy_backend_dispatch(b, p, two_inputs, 2, NULL, &outs, NULL), 0);
	assert_plus_one(&outs);
	cr_assert_eq(mk.calls, 1);
	vy_outputs_finish(&outs);
	vy_program_destroy(p);
}

Test(backend, dispatch_error_leaves_outputs_empty_and_keeps_the_backend_message)
{
	struct vy_backend *b = minimal_backend();
	mk.fail = true;
	struct vy_program *p = tiny_program();
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	struct vy_err err = {0};
	cr_assert_eq(
		vy_backend_dispatch(b, p, two_inputs, 2, NULL, &outs, &err), VY_E_DISPATCH_FAILED);
	cr_assert_eq(outs.len, 0, "the half-written outputs are dropped");
	cr_assert_str_eq(err.message, "the minimal backend was told to fail");
	vy_outputs_push_copy(&outs, "x", 1);
	cr_assert_eq(vy_backend_dispatch_into(b, p, two_inputs, 2, NULL, &outs, NULL),
		VY_E_DISPATCH_FAILED);
	cr_assert_eq(outs.len, 0);
	vy_outputs_finish(&outs);
	vy_program_destroy(p);
}

Test(backend, dispatch_owned_defaults_to_dispatch_and_consumes_the_inputs)
{
	struct vy_backend *b = minimal_backend();
	struct vy_program *p = tiny_program();
	struct vy_outputs ins, outs;
	vy_outputs_init(&ins);
	vy_outputs_init(&outs);
	vy_outputs_push_copy(&ins, in0, sizeof(in0));
	vy_outputs_push_copy(&ins, in1, sizeof(in1));
	cr_assert_eq(vy_backend_dispatch_owned(b, p, &ins, NULL, &outs, NULL), 0);
	assert_plus_one(&outs);
	cr_assert_eq(ins.len, 0, "owned inputs are consumed");
	cr_assert_eq(mk.calls, 1);
	vy_outputs_finish(&ins);
	vy_outputs_finish(&outs);
	vy_program_destroy(p);
}

Test(backend, dispatch_into_defaults_to_dispatch_and_fills_caller_outputs)
{
	struct vy_backend *b = minimal_backend();
	struct vy_program *p = tiny_program();
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	for (int i = 0; i < 5; i++) {
		vy_outputs_push_copy(&outs, "previous", 8);
	}
	cr_assert_eq(vy_backend_dispatch_into(b, p, two_inputs, 2, NULL, &outs, NULL), 0);
	assert_plus_one(&outs);
	cr_assert_eq(mk.calls, 1);
	vy_outputs_finish(&outs);
	vy_program_destroy(p);
}

Test(backend, dispatch_timed_defaults_to_host_wall_time)
{
	struct vy_backend *b = minimal_backend();
	mk.sleep_ns = 200000;
	struct vy_program *p = tiny_program();
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	struct vy_timing t;
	cr_assert_eq(vy_backend_dispatch_timed(b, p, two_inputs, 2, NULL, &outs, &t, NULL), 0);
	assert_plus_one(&outs);
	cr_assert_geq(t.wall_ns, 200000, "wall_ns covers the dispatch (%llu)",
		(unsigned long long)t.wall_ns);
	cr_assert_lt(t.wall_ns, UINT64_C(10000000000));
	cr_assert_eq(t.device_ns, VY_TIMING_NONE);
	cr_assert_eq(t.enqueue_ns, VY_TIMING_NONE);
	cr_assert_eq(t.wait_ns, VY_TIMING_NONE);
	vy_outputs_finish(&outs);
	vy_program_destroy(p);
}

Test(backend, resident_entries_default_to_unsupported_feature)
{
	struct vy_backend *b = minimal_backend();
	struct vy_program *p = tiny_program();
	struct vy_err err = {0};
	struct vy_resource res = {7, 16};
	uint8_t buf[4];
	struct vy_timing t;

	assert_unsupported(
		vy_backend_resident_alloc(b, 16, &res, &err), &err, "resident buffer allocation");
	assert_unsupported(vy_backend_resident_upload(b, &res, 0, two_inputs[0], &err), &err,
		"resident buffer upload");
	assert_unsupported(vy_backend_resident_download(b, &res, 0, buf, sizeof(buf), &err), &err,
		"resident buffer download");
	assert_unsupported(vy_backend_resident_free(b, res, &err), &err, "resident buffer free");
	assert_unsupported(vy_backend_resident_dispatch(b, p, &res, 1, NULL, &t, &err), &err,
		"resident timed dispatch");
	cr_assert_eq(vy_backend_resident_alloc(b, 16, &res, NULL), VY_E_UNSUPPORTED_FEATURE,
		"the error code comes back without a struct vy_err too");
	cr_assert_eq(mk.calls, 0, "no default falls back to a plain dispatch");
	vy_program_destroy(p);
}

Test(backend, compile_native_defaults_to_a_passthrough_pipeline)
{
	struct vy_backend *b = minimal_backend();
	struct vy_program *p = tiny_program();
	struct vy_pipeline *pl = NULL;
	cr_assert_eq(vy_backend_compile_native(b, p, NULL, &pl, NULL), 0);
	cr_assert_not_null(pl);
	cr_assert_not(pl->native);
	cr_assert_eq(pl->backend, b);
	cr_assert_eq(mk.calls, 0, "compiling a passthrough pipeline dispatches nothing");
	/* The pipeline keeps its own program: it outlives the caller's. */
	vy_program_destroy(p);

	struct vy_outputs outs;
	vy_outputs_init(&outs);
	for (int round = 1; round <= 2; round++) {
		cr_assert_eq(vy_pipeline_dispatch(pl, two_inputs, 2, NULL, &outs, NULL), 0);
		assert_plus_one(&outs);
		cr_assert_eq(
			mk.calls, round, "each pipeline dispatch calls the backend's dispatch");
	}
	/* Without an asynchronous entry, a pipeline's dispatch runs at once into a ready handle. */
	struct vy_pending *pending = NULL;
	cr_assert_eq(vy_pipeline_dispatch_async(pl, two_inputs, 2, NULL, &pending, NULL), 0);
	cr_assert_eq(mk.calls, 3, "the default runs the dispatch at once");
	cr_assert(vy_pending_is_ready(pending));
	cr_assert_eq(vy_pending_wait(pending, &outs, NULL), 0);
	assert_plus_one(&outs);
	mk.fail = true;
	cr_assert_eq(
		vy_pipeline_dispatch(pl, two_inputs, 2, NULL, &outs, NULL), VY_E_DISPATCH_FAILED);
	cr_assert_eq(outs.len, 0);
	cr_assert_eq(vy_pipeline_dispatch_async(pl, two_inputs, 2, NULL, &pending, NULL),
		VY_E_DISPATCH_FAILED);
	cr_assert_null(pending);
	vy_outputs_finish(&outs);
	vy_pipeline_destroy(pl);
	vy_pipeline_destroy(NULL);
}

Test(backend, dispatch_async_defaults_to_a_ready_handle_with_the_dispatch_result)
{
	struct vy_backend *b = minimal_backend();
	struct vy_program *p = tiny_program();
	struct vy_pending *pending = NULL;
	cr_assert_eq(vy_backend_dispatch_async(b, p, two_inputs, 2, NULL, &pending, NULL), 0);
	cr_assert_not_null(pending);
	cr_assert_eq(mk.calls, 1, "the default runs the dispatch at once");
	cr_assert(vy_pending_is_ready(pending));

	struct vy_outputs outs, direct;
	vy_outputs_init(&outs);
	vy_outputs_init(&direct);
	vy_outputs_push_copy(&outs, "old", 3);
	cr_assert_eq(vy_pending_wait(pending, &outs, NULL), 0);
	cr_assert_eq(vy_backend_dispatch(b, p, two_inputs, 2, NULL, &direct, NULL), 0);
	cr_assert_eq(outs.len, direct.len);
	for (size_t i = 0; i < outs.len; i++) {
		cr_assert_eq(outs.items[i].len, direct.items[i].len);
		cr_assert_arr_eq(outs.items[i].data, direct.items[i].data, outs.items[i].len);
	}

	/* An abandoned handle frees its results. */
	cr_assert_eq(vy_backend_dispatch_async(b, p, two_inputs, 2, NULL, &pending, NULL), 0);
	vy_pending_destroy(pending);
	vy_pending_destroy(NULL);

	/* A dispatch that cannot start returns its error and no handle. */
	mk.fail = true;
	struct vy_err err = {0};
	cr_assert_eq(vy_backend_dispatch_async(b, p, two_inputs, 2, NULL, &pending, &err),
		VY_E_DISPATCH_FAILED);
	cr_assert_null(pending);
	cr_assert_eq(err.code, VY_E_DISPATCH_FAILED);
	vy_outputs_finish(&outs);
	vy_outputs_finish(&direct);
	vy_program_destroy(p);
}

Test(backend, capability_queries_default_to_false)
{
	struct vy_backend *b = minimal_backend();
	for (int cap = 0; cap < VY_CAP_COUNT; cap++) {
		cr_assert_not(vy_backend_supports(b, (enum vy_capability)cap), "%s",
			vy_capability_name((enum vy_capability)cap));
	}
	cr_assert_str_eq(vy_capability_name(VY_CAP_GRID_SYNC), "grid_sync");
	cr_assert_str_eq(vy_capability_name(VY_CAP_COUNT), "?");
}

Test(backend, limits_default_to_a_scalar_device)
{
	struct vy_backend *b = minimal_backend();
	uint32_t size[3] = {0, 0, 0};
	vy_backend_max_workgroup_size(b, size);
	cr_assert_eq(size[0], 1);
	cr_assert_eq(size[1], 1);
	cr_assert_eq(size[2], 1);
	cr_assert_eq(vy_backend_max_workgroups_per_dimension(b), 1);
	cr_assert_eq(vy_backend_max_workgroup_invocations(b), 1);
	cr_assert_eq(vy_backend_subgroup_size(b), 0, "0 means unknown");
	cr_assert_eq(vy_backend_max_storage_buffer_bytes(b), 0, "0 means not reported");
	struct vy_pipeline_cache_stats stats = {.hits = 5};
	cr_assert_not(vy_backend_pipeline_cache_stats(b, &stats));
	cr_assert_eq(stats.hits, 0);
}

/* A backend that reports a workgroup size only: the other answers derive from it. */
static struct minimal wide;

static void wide_max_workgroup_size(struct vy_backend *b, uint32_t out[3])
{
	out[0] = 65536;
	out[1] = 65536;
	out[2] = 64;
}

static bool wide_supports(struct vy_backend *b, enum vy_capability cap)
{
	return cap == VY_CAP_SUBGROUP_OPS;
}

static void wide_device_profile(struct vy_backend *b, struct vy_device_profile *out)
{
	snprintf(out->name, sizeof(out->name), "Wide Test Device");
	out->fma_fused = true;
}

static const struct vy_backend_ops wide_ops = {
	.dispatch = minimal_dispatch,
	.max_workgroup_size = wide_max_workgroup_size,
	.supports = wide_supports,
	.device_profile = wide_device_profile,
};

static struct vy_backend *wide_backend(void)
{
	memset(&wide, 0, sizeof(wide));
	wide.base = (struct vy_backend){&wide_ops, "wide", &wide};
	return &wide.base;
}

Test(backend, invocations_default_to_the_saturated_product_of_the_workgroup_size)
{
	struct vy_backend *b = wide_backend();
	cr_assert_eq(vy_backend_max_workgroup_invocations(b), UINT32_MAX);
}

Test(backend, device_profile_defaults_follow_the_other_answers)
{
	struct vy_device_profile prof;
	vy_backend_device_profile(minimal_backend(), &prof);
	cr_assert_str_eq(prof.backend, "minimal");
	cr_assert_str_eq(prof.name, "minimal");
	cr_assert_not(prof.supports_subgroup_ops);
	cr_assert_not(prof.has_subgroup_shuffle);
	cr_assert_not(prof.fma_fused);
	cr_assert_not(prof.div_exact);
	cr_assert_not(prof.sqrt_exact);
	cr_assert_not(prof.timestamps);
	cr_assert_not(prof.unified_memory);
	cr_assert_eq(prof.max_native_int_width, 32);
	cr_assert_eq(prof.max_workgroup_size[0], 1);
	cr_assert_eq(prof.max_workgroup_invocations, 1);
	cr_assert_eq(prof.max_workgroup_count[2], 1);
	cr_assert_eq(prof.max_storage_buffer_bytes, 0);
	cr_assert_eq(prof.subgroup_size, 0);
	cr_assert_eq(prof.n_heaps, 0);

	vy_backend_device_profile(wide_backend(), &prof);
	cr_assert_str_eq(prof.backend, "wide");
	cr_assert_str_eq(prof.name, "Wide Test Device", "the backend overrides what it knows");
	cr_assert(prof.fma_fused);
	cr_assert(prof.supports_subgroup_ops, "the defaults it keeps come from its own answers");
	cr_assert(prof.has_subgroup_shuffle);
	cr_assert_eq(prof.max_workgroup_size[0], 65536);
	cr_assert_eq(prof.max_workgroup_invocations, UINT32_MAX);
}

Test(backend, lifecycle_hooks_default_to_success_and_recovery_to_unsupported)
{
	struct vy_backend *b = minimal_backend();
	struct vy_err err = {0};
	cr_assert_eq(vy_backend_prepare(b, &err), 0);
	cr_assert_eq(vy_backend_flush(b, &err), 0);
	cr_assert_not(vy_backend_device_lost(b));
	assert_unsupported(vy_backend_try_recover(b, &err), &err, "device recovery");
	cr_assert_eq(vy_backend_shutdown(b, &err), 0);
	cr_assert_eq(mk.calls, 0);
	vy_backend_destroy(b);
	vy_backend_destroy(NULL);
}

Test(backend, identity_defaults)
{
	struct vy_backend *b = minimal_backend();
	cr_assert_str_eq(b->id, "minimal");
	cr_assert_str_eq(vy_backend_version(b), "unspecified");
}

Test(backend, supported_ops_default_to_all_but_subgroup_without_the_capability)
{
	struct vy_op_set all, set;
	vy_op_set_all(&all);
	vy_backend_supported_ops(minimal_backend(), &set);
	cr_assert_eq(set.binops, all.binops);
	cr_assert_eq(set.unops, all.unops);
	cr_assert_eq(set.nodes, all.nodes);
	cr_assert(set.unops & (UINT64_C(1) << VY_UN_LOG2_CR), "the last unary op is in");
	cr_assert(set.exprs & (UINT32_C(1) << VY_EXPR_FMA));
	cr_assert_not(set.exprs & (UINT32_C(1) << VY_EXPR_SUBGROUP_REDUCE));
	cr_assert_not(set.exprs & (UINT32_C(1) << VY_EXPR_SUBGROUP_SIZE));

	vy_backend_supported_ops(wide_backend(), &set);
	cr_assert_eq(set.exprs, all.exprs, "subgroup expressions follow the subgroup capability");
}

Test(backend, check_ops_names_the_first_unsupported_operation_and_where)
{
	struct vy_program *p = vy_program_create("sg", 64, 1, 1);
	vy_program_add_buffer(p, "x", 0, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 64);
	struct vy_node *store = vy_ir_store(p, "x", vy_ir_gid(p, 0),
		vy_ir_subgroup_reduce(p, VY_REDUCE_ADD, vy_ir_load(p, "x", vy_ir_gid(p, 0))));
	struct vy_node *cond =
		vy_ir_if(p, vy_ir_bool(p, true), vy_ir_seq(p, NULL), vy_ir_seq(p, store, NULL));
	vy_program_set_entry(p, vy_ir_seq(p, vy_ir_return(p), cond, NULL));

	struct vy_err err = {0};
	cr_assert_eq(vy_backend_check_ops(minimal_backend(), p, &err), VY_E_UNSUPPORTED_FEATURE);
	cr_assert_not_null(strstr(err.message, "subgroup_reduce"), "%s", err.message);
	cr_assert_not_null(strstr(err.message, "minimal"), "%s", err.message);
	cr_assert_str_eq(err.at, "entry[1].if.else[0]");
	cr_assert_eq(vy_backend_check_ops(wide_backend(), p, NULL), 0);
	vy_program_destroy(p);
}

/* A backend whose op set leaves out one binary operation. */
static void no_rotl_ops(struct vy_backend *b, struct vy_op_set *out)
{
	vy_op_set_all(out);
	out->binops &= ~(UINT32_C(1) << VY_BIN_ROTL);
}

static const struct vy_backend_ops no_rotl_backend_ops = {
	.dispatch = minimal_dispatch,
	.supported_ops = no_rotl_ops,
};

Test(backend, check_ops_uses_the_backend_op_set)
{
	struct vy_backend b = {&no_rotl_backend_ops, "norotl", NULL};
	struct vy_program *p = vy_program_create(NULL, 1, 1, 1);
	vy_program_add_buffer(p, "x", 0, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 1);
	struct vy_node *ok = vy_ir_store(p, "x", vy_ir_u32(p, 0),
		vy_ir_binary(p, VY_BIN_ROTR, vy_ir_u32(p, 1), vy_ir_u32(p, 2)));
	struct vy_node *bad = vy_ir_store(p, "x", vy_ir_u32(p, 0),
		vy_ir_binary(p, VY_BIN_ROTL, vy_ir_u32(p, 1), vy_ir_u32(p, 2)));
	struct vy_node *loop =
		vy_ir_loop(p, "i", vy_ir_u32(p, 0), vy_ir_u32(p, 4), vy_ir_seq(p, ok, bad, NULL));
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_region(p, "gen", vy_ir_seq(p, loop, NULL)), NULL));
	struct vy_err err = {0};
	cr_assert_eq(vy_backend_check_ops(&b, p, &err), VY_E_UNSUPPORTED_FEATURE);
	cr_assert_not_null(strstr(err.message, "rotl"), "%s", err.message);
	cr_assert_not_null(strstr(err.message, "norotl"), "%s", err.message);
	cr_assert_str_eq(err.at, "entry[0].region.body[0].loop.body[1]");
	vy_program_destroy(p);
}

Test(backend, outputs_list_moves_and_takes_buffers)
{
	struct vy_outputs a, b;
	vy_outputs_init(&a);
	vy_outputs_init(&b);
	for (int i = 0; i < 20; i++) {
		uint8_t v = (uint8_t)i;
		vy_outputs_push_copy(&a, &v, 1);
	}
	vy_outputs_push_copy(&b, "gone", 4);
	vy_outputs_move(&b, &a);
	cr_assert_eq(a.len, 0);
	cr_assert_eq(b.len, 20);
	cr_assert_eq(b.items[19].data[0], 19);
	size_t len = 0;
	uint8_t *taken = vy_outputs_take(&b, 3, &len);
	cr_assert_eq(len, 1);
	cr_assert_eq(taken[0], 3);
	cr_assert_null(b.items[3].data);
	cr_assert_eq(b.items[3].len, 0);
	free(taken);
	vy_outputs_push(&b, NULL, 0);
	cr_assert_eq(b.len, 21);
	vy_outputs_clear(&b);
	cr_assert_eq(b.len, 0);
	vy_outputs_finish(&a);
	vy_outputs_finish(&b);
	vy_outputs_finish(NULL);
}
