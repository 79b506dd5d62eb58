/*
 * The Vulkan backend runtime (backend/vulkan, DESIGN.md §8) on whatever Vulkan device the machine
 * has (lavapipe in CI): the device profile and the float probe, dispatches checked against
 * results computed here, folded grids, buffer isolation, grid-sync segments, spec constants,
 * traps and loop limits, timeouts, compiled pipelines, asynchronous batches, resident buffers,
 * out-of-memory and device-loss reporting, the disk cache, and compile errors.
 *
 * Every test runs under VK_LAYER_KHRONOS_validation when it is installed (VYRED_VULKAN_VALIDATION=1
 * makes a missing layer a failure), and fails on any warning or error the layer reports. Without
 * a Vulkan device every test is skipped.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend.h"
#include "err.h"
#include "ir.h"
#include "spec.h"
#include "vk_backend.h"
#include "vk_disk.h"
#include "vk_probe.h"
#include "vulkan.h"

static struct vy_backend *be;
static uint64_t expected_messages;
static char cache_dir[256];

static struct vy_backend *open_with(const struct vy_vulkan_options *base, unsigned test_flags)
{
	struct vy_vulkan_options opts = base ? *base : (struct vy_vulkan_options){0};
	opts.enable_validation = vy_vulkan_validation_available();
	const char *demand = getenv("VYRED_VULKAN_VALIDATION");
	if (demand && strcmp(demand, "1") == 0 && !opts.enable_validation) {
		cr_assert_fail(
			"VYRED_VULKAN_VALIDATION=1 but VK_LAYER_KHRONOS_validation is missing; "
			"install vulkan-validationlayers");
	}
	struct vy_backend *b = NULL;
	struct vy_err err = {0};
	int rc = test_flags ? vy__vk_backend_create_for_test(&opts, test_flags, &b, &err)
			    : vy_vulkan_backend_create(&opts, &b, &err);
	if (rc == VY_E_UNSUPPORTED_FEATURE) {
		cr_skip_test("no usable Vulkan device: %s", err.message);
	}
	cr_assert_eq(rc, 0, "backend create: %s (fix: %s)", err.message, err.fix);
	return b;
}

static void setup(void)
{
	expected_messages = vy_vulkan_validation_messages(NULL, 0);
	be = open_with(NULL, 0);
}

/*
 * The end of every test: close the backend and fail on any message the validation layer gave
 * since setup. (An assertion in a fixture's fini is printed but does not fail the test.)
 */
static void done(void)
{
	vy_backend_destroy(be);
	be = NULL;
	char last[512];
	uint64_t n = vy_vulkan_validation_messages(last, sizeof(last));
	cr_assert_eq(n, expected_messages, "validation layer reported %llu message(s); last: %s",
		(unsigned long long)(n - expected_messages), last);
}

static void teardown(void)
{
	vy_backend_destroy(be);
	be = NULL;
	if (cache_dir[0]) {
		char cmd[400];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", cache_dir);
		if (system(cmd) != 0) {
			fprintf(stderr, "could not remove %s\n", cache_dir);
		}
		cache_dir[0] = '\0';
	}
}

TestSuite(vulkan, .init = setup, .fini = teardown, .timeout = 60);

/* Programs, built with the IR builders. */

#define EXPR_I(p) vy_ir_var(p, "i")

/* c[i] = a[i] + b[i] over n f32 elements. */
static struct vy_program *vector_add(uint32_t n)
{
	struct vy_program *p = vy_program_create("vector_add", 64, 1, 1);
	vy_program_add_buffer(p, "a", 0, VY_ACCESS_READ_ONLY, VY_TYPE_F32, n);
	vy_program_add_buffer(p, "b", 1, VY_ACCESS_READ_ONLY, VY_TYPE_F32, n);
	vy_program_add_buffer(p, "c", 2, VY_ACCESS_WRITE_ONLY, VY_TYPE_F32, n);
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_let(p, "i", vy_ir_gid(p, 0)),
			   vy_ir_store(p, "c", EXPR_I(p),
				   vy_ir_binary(p, VY_BIN_ADD, vy_ir_load(p, "a", EXPR_I(p)),
					   vy_ir_load(p, "b", EXPR_I(p)))),
			   NULL));
	return p;
}

static void fill_inputs(float *a, float *b, uint32_t n, float salt)
{
	for (uint32_t i = 0; i < n; i++) {
		a[i] = (float)i * 0.5f + salt;
		b[i] = 1.0f / (float)(i + 1) - salt;
	}
}

static void check_sum(const struct vy_outputs *outs, const float *a, const float *b, uint32_t n)
{
	cr_assert_eq(outs->len, 1);
	cr_assert_eq(outs->items[0].len, n * sizeof(float));
	const float *c = (const float *)outs->items[0].data;
	for (uint32_t i = 0; i < n; i++) {
		float want = a[i] + b[i];
		cr_assert(memcmp(&c[i], &want, 4) == 0, "c[%u] = %a, want %a", i, c[i], want);
	}
}

static void dispatch_ok(struct vy_backend *b, const struct vy_program *p, const struct vy_bytes *in,
	size_t n_in, const struct vy_dispatch_config *cfg, struct vy_outputs *outs)
{
	struct vy_err err = {0};
	int rc = vy_backend_dispatch(b, p, in, n_in, cfg, outs, &err);
	cr_assert_eq(rc, 0, "dispatch: %s %s (at %s; fix: %s)", vy_err_name(rc), err.message,
		err.at, err.fix);
}

Test(vulkan, enumerates_devices_and_reports_an_honest_profile)
{
	struct vy_vulkan_device_info devs[8];
	uint32_t n = 0;
	struct vy_err err;
	cr_assert_eq(vy_vulkan_devices_enumerate(devs, 8, &n, &err), 0, "%s", err.message);
	cr_assert_geq(n, 1);
	cr_assert(devs[0].usable);
	cr_assert_neq(devs[0].name[0], '\0');

	struct vy_device_profile prof;
	vy_backend_device_profile(be, &prof);
	cr_assert_str_eq(prof.backend, "vulkan");
	cr_assert_str_eq(prof.name, devs[0].name);
	cr_assert_eq(prof.vendor_id, devs[0].vendor_id);
	cr_assert_gt(prof.subgroup_size, 0);
	cr_assert_eq(prof.supports_subgroup_ops, vy_backend_supports(be, VY_CAP_SUBGROUP_OPS));
	cr_assert(vy_backend_supports(be, VY_CAP_GRID_SYNC));
	cr_assert_not(vy_backend_supports(be, VY_CAP_F16), "the lowering emits no f16");
	cr_assert_not(vy_backend_supports(be, VY_CAP_TENSOR_CORES));
	cr_assert_gt(prof.max_workgroup_invocations, 0);
	cr_assert_gt(prof.max_storage_buffer_bytes, 0);
	cr_assert_gt(prof.max_shared_bytes, 0);
	cr_assert_geq(prof.n_heaps, 1);
	cr_assert_gt(prof.heaps[0].total_bytes, 0);
	uint32_t wg[3];
	vy_backend_max_workgroup_size(be, wg);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(wg[i], prof.max_workgroup_size[i]);
		cr_assert_geq(
			prof.max_workgroup_count[i], vy_backend_max_workgroups_per_dimension(be));
	}
	cr_assert_eq(vy_backend_subgroup_size(be), prof.subgroup_size);
	cr_assert(strncmp(vy_backend_version(be), "vulkan ", 7) == 0, "%s", vy_backend_version(be));

	/* DESIGN.md §4.4 measured lavapipe: unfused fma, exact '/' and sqrt, subnormals kept. */
	const struct vy_vk_probe *pr = vy__vk_backend_probe(be);
	/* 4096 random triples, then IEEE's special cases of fma */
	cr_assert_gt(pr->samples, 4096);
	cr_assert_lt(pr->samples, 4096 + 64);
	cr_assert_eq(prof.fma_fused, pr->fma_fused);
	cr_assert_eq(prof.div_exact, pr->div_exact);
	cr_assert_eq(prof.sqrt_exact, pr->sqrt_exact);
	cr_assert_eq(prof.keeps_subnormals, pr->keeps_subnormals);
	cr_assert_eq(prof.fold_exact, pr->fold_exact);
	cr_assert_eq(prof.select_exact, pr->select_exact);
	cr_assert_eq(pr->fold_exact, pr->fold_diffs == 0);
	cr_assert_eq(pr->select_exact, pr->select_diffs == 0);
	cr_assert(!(pr->flushes_subnormals && pr->keeps_subnormals));
	/* The flag of a speculated product: 128 products in the band, at two optimization
	 * levels; set for each of them (lavapipe keeps the fused difference subnormal), and for
	 * no zero operand and no product of 2^-125 or more. */
	cr_assert_eq(pr->flag_tried, 256);
	cr_assert_eq(pr->flag_misses, 0);
	cr_assert_eq(pr->flag_needless, 0);
	/* The flag of a speculated fma: 64 exact results below 2^-126 that set it, 64 exact zeros
	 * that give +0 and 64 products below 2^-190 that give the zero of their sign without it,
	 * at both levels. lavapipe's fma is not fused (a product minus its rounding gives 0 there),
	 * so the helper is never used and a miss keeps every run plain. */
	cr_assert_eq(pr->fma_flag_tried, 384);
	cr_assert_eq(pr->fma_flag_misses == 0, pr->fma_fused);
	if (strstr(prof.name, "llvmpipe")) {
		/* lavapipe folds 0 * x to 0 and x + 0 to x, and a select between -0.0 and 1.0 into
		 * a conversion of the condition that gives +0 (docs/semantics.md §10). */
		cr_assert_not(prof.fold_exact);
		cr_assert_not(prof.select_exact);
		cr_assert_not(prof.fma_fused, "lavapipe's fma() is not fused");
		cr_assert_gt(pr->fma_diffs, 0);
		cr_assert(prof.div_exact);
		cr_assert(prof.sqrt_exact);
		cr_assert(prof.keeps_subnormals);
		cr_assert_not(pr->flushes_subnormals, "lavapipe's sums and products keep them");
		cr_assert_eq(pr->subnormal_flushed, 0);
		cr_assert(prof.unified_memory, "lavapipe needs no staging");
	}
	done();
}

Test(vulkan, vector_add_matches_host_and_reuses_output_buffers)
{
	enum { N = 1000 };
	struct vy_program *p = vector_add(N);
	static float a[N], b[N];
	fill_inputs(a, b, N, 0.25f);
	struct vy_bytes in[2] = {{(uint8_t *)a, sizeof(a)}, {(uint8_t *)b, sizeof(b)}};
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	dispatch_ok(be, p, in, 2, NULL, &outs);
	check_sum(&outs, a, b, N);

	/* dispatch_into with outputs of the right shape writes into them. */
	uint8_t *kept = outs.items[0].data;
	fill_inputs(a, b, N, 3.0f);
	struct vy_err err;
	cr_assert_eq(
		vy_backend_dispatch_into(be, p, in, 2, NULL, &outs, &err), 0, "%s", err.message);
	cr_assert_eq(outs.items[0].data, kept);
	check_sum(&outs, a, b, N);

	/* Inputs that do not match the plan are refused before anything runs. */
	struct vy_bytes short_in[2] = {{(uint8_t *)a, 8}, {(uint8_t *)b, sizeof(b)}};
	cr_assert_eq(vy_backend_dispatch(be, p, short_in, 2, NULL, &outs, &err), VY_E_BAD_REQUEST);
	cr_assert_eq(vy_backend_dispatch(be, p, in, 1, NULL, &outs, &err), VY_E_BAD_REQUEST);

	struct vy_timing t;
	cr_assert_eq(vy_backend_dispatch_timed(be, p, in, 2, NULL, &outs, &t, &err), 0);
	check_sum(&outs, a, b, N);
	cr_assert_gt(t.wall_ns, 0);
	struct vy_device_profile prof;
	vy_backend_device_profile(be, &prof);
	if (prof.timestamps) {
		cr_assert_neq(t.device_ns, VY_TIMING_NONE, "timestamps give device_ns");
		cr_assert_leq(t.device_ns, t.wall_ns);
	}
	struct vy_pipeline_cache_stats st;
	cr_assert(vy_backend_pipeline_cache_stats(be, &st));
	cr_assert_eq(st.misses, 1, "one compile for one program");
	cr_assert_geq(st.hits, 2);
	cr_assert_eq(st.entries, 1);
	vy_outputs_finish(&outs);
	vy_program_destroy(p);
	done();
}

Test(vulkan, compiled_pipeline_dispatches_repeatedly_without_recompiling)
{
	enum { N = 256 };
	struct vy_program *p = vector_add(N);
	struct vy_pipeline *pl = NULL;
	struct vy_err err;
	cr_assert_eq(vy_backend_compile_native(be, p, NULL, &pl, &err), 0, "%s", err.message);
	cr_assert(pl->native);
	vy_program_destroy(p); /* the pipeline keeps what it needs */
	struct vy_pipeline_cache_stats before, after;
	vy_backend_pipeline_cache_stats(be, &before);
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	static float a[N], b[N];
	for (int round = 0; round < 5; round++) {
		fill_inputs(a, b, N, (float)round);
		struct vy_bytes in[2] = {{(uint8_t *)a, sizeof(a)}, {(uint8_t *)b, sizeof(b)}};
		cr_assert_eq(
			vy_pipeline_dispatch(pl, in, 2, NULL, &outs, &err), 0, "%s", err.message);
		check_sum(&outs, a, b, N);
	}
	vy_backend_pipeline_cache_stats(be, &after);
	cr_assert_eq(after.misses, before.misses, "no compile after compile_native");
	cr_assert_eq(after.compile_ns, before.compile_ns);
	vy_outputs_finish(&outs);
	vy_pipeline_destroy(pl);
	done();
}

Test(vulkan, grid_larger_than_the_workgroup_count_limit_folds_and_stays_right)
{
	struct vy_device_profile prof;
	vy_backend_device_profile(be, &prof);
	uint32_t limit = prof.max_workgroup_count[0];
	if (limit > (1u << 22)) {
		cr_skip_test("the device's x limit (%u) is too large to pass cheaply", limit);
	}
	/* One invocation per workgroup: `limit + 1000` workgroups cannot fit on x. */
	uint32_t n = limit + 1000;
	struct vy_program *p = vy_program_create("fold", 1, 1, 1);
	vy_program_add_buffer(p, "out", 0, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, n);
	vy_program_set_entry(p, vy_ir_seq(p,
					vy_ir_store(p, "out", vy_ir_gid(p, 0),
						vy_ir_binary(p, VY_BIN_ADD,
							vy_ir_binary(p, VY_BIN_MUL, vy_ir_gid(p, 0),
								vy_ir_u32(p, 3)),
							vy_ir_u32(p, 1))),
					NULL));
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	dispatch_ok(be, p, NULL, 0, NULL, &outs);
	const uint32_t *out = (const uint32_t *)outs.items[0].data;
	for (uint32_t i = 0; i < n; i++) {
		cr_assert_eq(out[i], i * 3 + 1, "out[%u] = %u", i, out[i]);
	}
	vy_outputs_finish(&outs);
	vy_program_destroy(p);
	done();
}

Test(vulkan, out_of_bounds_indices_never_touch_another_buffer)
{
	/* a (4 words) sits in the pool next to secret; every index past a's end must read 0 and
	 * every store past w's end must vanish, never reach secret. */
	struct vy_program *p = vy_program_create("isolation", 64, 1, 1);
	vy_program_add_buffer(p, "a", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 4);
	vy_program_add_buffer(p, "secret", 1, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 64);
	vy_program_add_buffer(p, "w", 2, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 4);
	vy_program_add_buffer(p, "out", 3, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 64);
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_let(p, "i", vy_ir_gid(p, 0)),
			   vy_ir_store(p, "out", EXPR_I(p), vy_ir_load(p, "a", EXPR_I(p))),
			   vy_ir_store(p, "w", EXPR_I(p), vy_ir_u32(p, 0x11111111)),
			   vy_ir_store(p, "w", vy_ir_u32(p, 0xFFFFFFF0u), vy_ir_u32(p, 0x22222222)),
			   NULL));
	uint32_t a[4] = {1, 2, 3, 4};
	uint32_t secret[64];
	uint32_t w[4] = {0};
	for (int i = 0; i < 64; i++) {
		secret[i] = 0xDEADBEEF;
	}
	struct vy_bytes in[3] = {{(uint8_t *)a, sizeof(a)}, {(uint8_t *)secret, sizeof(secret)},
		{(uint8_t *)w, sizeof(w)}};
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	for (int round = 0; round < 3; round++) {
		dispatch_ok(be, p, in, 3, NULL, &outs);
		cr_assert_eq(outs.len, 3);
		const uint32_t *s = (const uint32_t *)outs.items[0].data;
		const uint32_t *wo = (const uint32_t *)outs.items[1].data;
		const uint32_t *o = (const uint32_t *)outs.items[2].data;
		for (int i = 0; i < 64; i++) {
			cr_assert_eq(s[i], 0xDEADBEEF, "secret[%d] changed to %08x", i, s[i]);
			cr_assert_eq(o[i], i < 4 ? a[i] : 0, "out[%d] = %08x", i, o[i]);
		}
		for (int i = 0; i < 4; i++) {
			cr_assert_eq(wo[i], 0x11111111);
		}
	}
	vy_outputs_finish(&outs);
	vy_program_destroy(p);
	done();
}

/* data = 3 * data; grid_sync; out[i] = data[i] + data[(i + 1) % len]. */
static struct vy_program *two_phase(uint32_t n)
{
	struct vy_program *p = vy_program_create("two_phase", 64, 1, 1);
	vy_program_add_buffer(p, "data", 0, VY_ACCESS_READ_WRITE, VY_TYPE_U32, n);
	vy_program_add_buffer(p, "out", 1, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, n);
	struct vy_node *phase1 = vy_ir_block(
		p, vy_ir_seq(p, vy_ir_let(p, "i", vy_ir_gid(p, 0)),
			   vy_ir_store(p, "data", EXPR_I(p),
				   vy_ir_binary(p, VY_BIN_MUL, vy_ir_load(p, "data", EXPR_I(p)),
					   vy_ir_u32(p, 3))),
			   NULL));
	struct vy_expr *next = vy_ir_binary(p, VY_BIN_MOD,
		vy_ir_binary(p, VY_BIN_ADD, EXPR_I(p), vy_ir_u32(p, 1)), vy_ir_len(p, "data"));
	struct vy_node *phase2 = vy_ir_block(
		p, vy_ir_seq(p, vy_ir_let(p, "i", vy_ir_gid(p, 0)), vy_ir_let(p, "next", next),
			   vy_ir_store(p, "out", EXPR_I(p),
				   vy_ir_binary(p, VY_BIN_ADD, vy_ir_load(p, "data", EXPR_I(p)),
					   vy_ir_load(p, "data", vy_ir_var(p, "next")))),
			   NULL));
	vy_program_set_entry(
		p, vy_ir_seq(p, phase1, vy_ir_barrier(p, VY_ORDER_GRID_SYNC), phase2, NULL));
	return p;
}

static void check_two_phase(struct vy_backend *b)
{
	enum { N = 1024 };
	struct vy_program *p = two_phase(N);
	static uint32_t data[N];
	for (uint32_t i = 0; i < N; i++) {
		data[i] = i * 7 + 1;
	}
	struct vy_bytes in[1] = {{(uint8_t *)data, sizeof(data)}};
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	struct vy_vulkan_stats before, after;
	cr_assert(vy_vulkan_stats(b, &before));
	dispatch_ok(b, p, in, 1, NULL, &outs);
	cr_assert(vy_vulkan_stats(b, &after));
	cr_assert_eq(after.jobs - before.jobs, 1, "both segments run in one job");
	cr_assert_eq(outs.len, 2);
	const uint32_t *d = (const uint32_t *)outs.items[0].data;
	const uint32_t *o = (const uint32_t *)outs.items[1].data;
	for (uint32_t i = 0; i < N; i++) {
		cr_assert_eq(d[i], 3 * data[i]);
		cr_assert_eq(o[i], 3 * data[i] + 3 * data[(i + 1) % N], "out[%u]", i);
	}
	vy_outputs_finish(&outs);
	vy_program_destroy(p);
}

Test(vulkan, grid_sync_segments_run_in_one_submission_with_buffers_on_the_device)
{
	check_two_phase(be);

	/* What a segment stores stays for the next, outputs included. */
	struct vy_program *p = vy_program_create("keep", 64, 1, 1);
	vy_program_add_buffer(p, "out", 0, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 256);
	struct vy_node *first = vy_ir_block(
		p, vy_ir_seq(p, vy_ir_store(p, "out", vy_ir_gid(p, 0), vy_ir_gid(p, 0)), NULL));
	struct vy_expr *odd = vy_ir_binary(p, VY_BIN_EQ,
		vy_ir_binary(p, VY_BIN_BIT_AND, vy_ir_gid(p, 0), vy_ir_u32(p, 1)), vy_ir_u32(p, 1));
	struct vy_node *second = vy_ir_if(p, odd,
		vy_ir_seq(p, vy_ir_store(p, "out", vy_ir_gid(p, 0), vy_ir_u32(p, 7)), NULL),
		vy_ir_seq(p, NULL));
	vy_program_set_entry(
		p, vy_ir_seq(p, first, vy_ir_barrier(p, VY_ORDER_GRID_SYNC), second, NULL));
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	dispatch_ok(be, p, NULL, 0, NULL, &outs);
	const uint32_t *o = (const uint32_t *)outs.items[0].data;
	for (uint32_t i = 0; i < 256; i++) {
		cr_assert_eq(o[i], i % 2 ? 7 : i, "out[%u] = %u", i, o[i]);
	}
	vy_outputs_finish(&outs);
	vy_program_destroy(p);
	done();
}

/* A count-0 buffer is as long as its input, an empty one too. */
static void check_lengths(struct vy_backend *b)
{
	struct vy_program *p = vy_program_create("lengths", 16, 1, 1);
	vy_program_add_buffer(p, "in", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 0);
	vy_program_add_buffer(p, "out", 1, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 16);
	vy_program_set_entry(
		p, vy_ir_seq(p,
			   vy_ir_store(p, "out", vy_ir_gid(p, 0),
				   vy_ir_binary(p, VY_BIN_ADD, vy_ir_len(p, "in"),
					   vy_ir_binary(p, VY_BIN_MUL, vy_ir_u32(p, 1000),
						   vy_ir_load(p, "in", vy_ir_gid(p, 0))))),
			   NULL));
	uint32_t three[3] = {1, 2, 3};
	struct vy_bytes in[1] = {{(uint8_t *)three, sizeof(three)}};
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	dispatch_ok(b, p, in, 1, NULL, &outs);
	const uint32_t *o = (const uint32_t *)outs.items[0].data;
	for (uint32_t i = 0; i < 16; i++) {
		cr_assert_eq(o[i], 3 + 1000 * (i < 3 ? three[i] : 0), "out[%u] = %u", i, o[i]);
	}
	in[0] = (struct vy_bytes){NULL, 0};
	dispatch_ok(b, p, in, 1, NULL, &outs);
	o = (const uint32_t *)outs.items[0].data;
	for (uint32_t i = 0; i < 16; i++) {
		cr_assert_eq(
			o[i], 0, "an empty buffer has len 0 and loads 0: out[%u] = %u", i, o[i]);
	}
	vy_outputs_finish(&outs);
	vy_program_destroy(p);
}

/* A resident round trip: upload, dispatch in place, download. */
static void check_resident(struct vy_backend *b)
{
	enum { N = 200 };
	struct vy_program *p = vector_add(N);
	struct vy_resource r[3];
	struct vy_err err;
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(
			vy_backend_resident_alloc(b, N * 4, &r[i], &err), 0, "%s", err.message);
	}
	static float a[N], bb[N], c[N];
	fill_inputs(a, bb, N, 0.125f);
	cr_assert_eq(vy_backend_resident_upload(
			     b, &r[0], 0, (struct vy_bytes){(uint8_t *)a, sizeof(a)}, &err),
		0, "%s", err.message);
	cr_assert_eq(vy_backend_resident_upload(
			     b, &r[1], 0, (struct vy_bytes){(uint8_t *)bb, sizeof(bb)}, &err),
		0);
	struct vy_timing t;
	cr_assert_eq(
		vy_backend_resident_dispatch(b, p, r, 3, NULL, &t, &err), 0, "%s", err.message);
	cr_assert_eq(vy_backend_resident_download(b, &r[2], 4, (uint8_t *)c, sizeof(c) - 4, &err),
		0, "%s", err.message);
	for (int i = 1; i < N; i++) {
		float want = a[i] + bb[i];
		cr_assert(memcmp(&c[i - 1], &want, 4) == 0, "c[%d]", i);
	}
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(vy_backend_resident_free(b, r[i], &err), 0);
	}
	vy_program_destroy(p);
}

static void check_vector_add(struct vy_backend *b, uint32_t n)
{
	enum { N = 100000 };
	cr_assert_leq(n, N);
	struct vy_program *p = vector_add(n);
	static float a[N], bb[N];
	fill_inputs(a, bb, n, 1.5f);
	struct vy_bytes in[2] = {{(uint8_t *)a, n * 4}, {(uint8_t *)bb, n * 4}};
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	dispatch_ok(b, p, in, 2, NULL, &outs);
	check_sum(&outs, a, bb, n);
	vy_outputs_finish(&outs);
	vy_program_destroy(p);
}

Test(vulkan, paths_of_other_devices_give_the_same_results)
{
	/* Devices without VK_KHR_push_descriptor bind descriptor sets, without null descriptors
	 * bind empty buffers to a dummy range; discrete GPUs keep small read-only buffers in
	 * host-visible memory and copy the others through staging. */
	unsigned flags[] = {
		VY__VK_TEST_NO_PUSH_DESCRIPTORS | VY__VK_TEST_STAGING |
			VY__VK_TEST_NO_NULL_DESCRIPTOR,
		VY__VK_TEST_STAGING | VY__VK_TEST_COPY_ALL,
	};
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		struct vy_backend *b = open_with(NULL, flags[i]);
		check_two_phase(b);
		check_vector_add(b, 100);
		check_vector_add(b, 100000);
		check_resident(b);
		check_lengths(b);
		vy_backend_destroy(b);
	}
	done();
}

Test(vulkan, on_a_discrete_gpu_shaders_write_only_device_memory)
{
	/* A discrete GPU's shaders read small inputs from host memory, but every buffer they
	 * write lies in device memory behind copies: an NVIDIA H200 running many small jobs lost
	 * and mixed up words that shaders wrote to mapped memory (docs/semantics.md section 10). */
	struct vy_backend *be2 = open_with(NULL, VY__VK_TEST_STAGING);
	struct vy__vk_backend *b = vy__vk_from(be2);
	struct vy_err err = {0};
	struct vy_vk_ctx *ctx = NULL;
	cr_assert_eq(vy__vk_ctx_acquire(&b->exec, &ctx, &err), 0, "%s", err.message);
	const uint32_t data[4] = {1, 2, 3, 4};
	struct vy_vk_xfer in, out, rw, temp;
	struct vy_vk_exec *x = &b->exec;
	cr_assert_eq(
		vy__vk_xfer_prepare(x, ctx, 16, data, false, false, false, NULL, &in, &err), 0);
	cr_assert_eq(vy__vk_xfer_prepare(x, ctx, 16, NULL, true, true, true, NULL, &out, &err), 0);
	cr_assert_eq(vy__vk_xfer_prepare(x, ctx, 16, data, false, true, true, NULL, &rw, &err), 0);
	cr_assert_eq(
		vy__vk_xfer_prepare(x, ctx, 16, data, false, false, true, NULL, &temp, &err), 0);
	/* The read-only input: host memory the shader reads, no copy. */
	cr_assert_eq(in.dev.kind, VY_VK_POOL_UPLOAD);
	cr_assert(!in.up.buffer && !in.down.buffer && !in.fill_zero);
	cr_assert_eq(memcmp(in.dev.map, data, sizeof(data)), 0);
	/* The output: zeroed on the device and copied back. */
	cr_assert_eq(out.dev.kind, VY_VK_POOL_DEVICE);
	cr_assert(out.fill_zero && out.down.buffer && !out.up.buffer);
	/* The read_write buffer: copied in and copied back. */
	cr_assert_eq(rw.dev.kind, VY_VK_POOL_DEVICE);
	cr_assert(rw.up.buffer && rw.down.buffer);
	cr_assert_eq(memcmp(rw.up.map, data, sizeof(data)), 0);
	/* A buffer a shader writes but nobody reads back (a read_write buffer that is not an
	 * output, a graph's temp): copied in, not back. */
	cr_assert_eq(temp.dev.kind, VY_VK_POOL_DEVICE);
	cr_assert(temp.up.buffer && !temp.down.buffer);
	vy__vk_ctx_release(&b->exec, ctx);
	vy_backend_destroy(be2);
	done();
}

Test(vulkan, a_jobs_small_written_buffers_share_one_slice_one_fill_and_one_copy_back)
{
	/* On a discrete GPU the small buffers a job's shaders write are packed: those with data
	 * first, then those read back, then those zeroed, so that one copy in, one fill and one
	 * copy back serve them all. */
	struct vy_backend *be2 = open_with(NULL, VY__VK_TEST_STAGING);
	struct vy__vk_backend *b = vy__vk_from(be2);
	struct vy_vk_exec *x = &b->exec;
	struct vy_err err = {0};
	struct vy_vk_ctx *ctx = NULL;
	cr_assert_eq(vy__vk_ctx_acquire(x, &ctx, &err), 0, "%s", err.message);
	const uint32_t data[5] = {1, 2, 3, 4, 5};
	struct vy_vk_pack pack;
	enum { IN, OUT, RW, TEMP, SCRATCH, SIDECAR, N };
	struct vy_vk_xfer bufs[N];
	static const struct {
		uint64_t len;
		bool data, zero, back, written;
	} spec[N] = {
		[IN] = {20, true, false, false, false},
		[OUT] = {12, false, true, true, true},
		[RW] = {20, true, false, true, true},
		[TEMP] = {8, true, false, false, true},
		[SCRATCH] = {6, false, false, false, true},
		[SIDECAR] = {4, false, true, true, true},
	};
	for (int i = 0; i < N; i++) {
		cr_assert_eq(
			vy__vk_xfer_prepare(x, ctx, spec[i].len, spec[i].data ? data : NULL,
				spec[i].zero, spec[i].back, spec[i].written, &pack, &bufs[i], &err),
			0, "buffer %d: %s", i, err.message);
	}
	cr_assert(!bufs[IN].packed && bufs[IN].dev.kind == VY_VK_POOL_UPLOAD);
	cr_assert_eq(vy__vk_xfer_pack(x, ctx, &pack, bufs, N, &err), 0, "%s", err.message);
	VkDeviceSize align = b->dev.props.limits.minStorageBufferOffsetAlignment;
	VkDeviceSize at[N];
	for (int i = OUT; i < N; i++) {
		cr_assert(bufs[i].packed);
		cr_assert_eq(bufs[i].dev.buffer, pack.dev.buffer);
		at[i] = bufs[i].dev.offset - pack.dev.offset;
		cr_assert_eq(at[i] % align, 0, "buffer %d at %llu", i, (unsigned long long)at[i]);
	}
	/* [temp][rw] uploaded, [rw][out][sidecar] read back, [out][sidecar][scratch] zeroed. */
	cr_assert_eq(at[TEMP], 0);
	cr_assert(at[RW] > at[TEMP] && at[OUT] > at[RW] && at[SIDECAR] > at[OUT]);
	cr_assert(at[SCRATCH] > at[SIDECAR]);
	cr_assert_eq(pack.up_len, at[RW] + 20);
	cr_assert_eq(pack.down_at, at[RW]);
	cr_assert_eq(pack.down_len, at[SIDECAR] + 4 - at[RW]);
	cr_assert_eq(pack.fill_at, at[OUT]);
	cr_assert_eq(pack.fill_len, at[SCRATCH] + 8 - at[OUT]);
	cr_assert_eq(memcmp(pack.up.map + at[RW], data, 20), 0);
	cr_assert_eq(memcmp(pack.up.map + at[TEMP], data, 8), 0);
	cr_assert_eq(bufs[RW].down.map, pack.down.map + (at[RW] - pack.down_at));
	cr_assert_eq(bufs[OUT].down.map, pack.down.map + (at[OUT] - pack.down_at));
	cr_assert(bufs[OUT].fill_zero && bufs[SCRATCH].fill_zero && !bufs[RW].fill_zero);
	cr_assert(!bufs[TEMP].down.buffer && !bufs[SCRATCH].down.buffer);
	vy__vk_ctx_release(x, ctx);
	vy_backend_destroy(be2);
	done();
}

/* y[i] = x[i] + 1 where i % 3 == k[0]; the other elements of y are left as they are (zero). */
static struct vy_program *every_third(uint32_t n)
{
	struct vy_program *p = vy_program_create("every_third", 64, 1, 1);
	vy_program_add_buffer(p, "x", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, n);
	vy_program_add_buffer(p, "k", 1, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 1);
	vy_program_add_buffer(p, "y", 2, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, n);
	struct vy_expr *mine =
		vy_ir_binary(p, VY_BIN_EQ, vy_ir_binary(p, VY_BIN_MOD, EXPR_I(p), vy_ir_u32(p, 3)),
			vy_ir_load(p, "k", vy_ir_u32(p, 0)));
	struct vy_node *store = vy_ir_store(p, "y", EXPR_I(p),
		vy_ir_binary(p, VY_BIN_ADD, vy_ir_load(p, "x", EXPR_I(p)), vy_ir_u32(p, 1)));
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_let(p, "i", vy_ir_gid(p, 0)),
			   vy_ir_if(p, mine, vy_ir_seq(p, store, NULL), vy_ir_seq(p, NULL)), NULL));
	return p;
}

Test(vulkan, pack_slices_are_zeroed_behind_their_jobs_and_reused_without_a_fill)
{
	/* Each job writes a third of y, another third each time: a reused pack slice that kept an
	 * earlier job's words would show them. After the first jobs, packs come clean from
	 * the fills that later jobs recorded, and need no fill of their own. */
	enum { N = 64, ROUNDS = 24 };
	struct vy_backend *be2 = open_with(NULL, VY__VK_TEST_STAGING);
	struct vy__vk_backend *b = vy__vk_from(be2);
	struct vy_program *p = every_third(N);
	for (uint32_t round = 0; round < ROUNDS; round++) {
		uint32_t x[N], k = round % 3;
		for (uint32_t i = 0; i < N; i++) {
			x[i] = i * 3 + round * 1000;
		}
		struct vy_bytes in[2] = {{(uint8_t *)x, sizeof(x)}, {(uint8_t *)&k, sizeof(k)}};
		struct vy_outputs outs;
		vy_outputs_init(&outs);
		dispatch_ok(be2, p, in, 2, NULL, &outs);
		cr_assert_eq(outs.len, 1);
		cr_assert_eq(outs.items[0].len, sizeof(x));
		const uint32_t *y = (const uint32_t *)(const void *)outs.items[0].data;
		for (uint32_t i = 0; i < N; i++) {
			uint32_t want = i % 3 == k ? x[i] + 1 : 0;
			cr_assert_eq(
				y[i], want, "round %u: y[%u] = %u, want %u", round, i, y[i], want);
		}
		vy_outputs_finish(&outs);
	}
	cr_assert_gt(b->exec.clean_packs, ROUNDS / 2, "%llu clean packs",
		(unsigned long long)b->exec.clean_packs);
	cr_assert_gt(b->exec.scrubs, ROUNDS / 2);
	vy_program_destroy(p);
	vy_backend_destroy(be2);
	done();
}

Test(vulkan, queued_jobs_copy_back_in_their_batch_tail)
{
	/* Jobs queued together (not submitted at once) on a discrete GPU leave their uploads and
	 * fills to one command buffer before the batch (its head) and their copies back to one
	 * after it (its tail): each job's y must come back whole, its own third written and the
	 * rest zero, over pack slices reused and scrubbed between rounds; a job submitted at once
	 * keeps its copies in its own command buffer. */
	enum { N = 64, JOBS = 6, ROUNDS = 4 };
	struct vy_backend *be2 = open_with(NULL, VY__VK_TEST_STAGING);
	struct vy__vk_backend *b = vy__vk_from(be2);
	struct vy_program *p = every_third(N);
	struct vy_err err = {0};
	uint64_t heads_before = b->exec.head_batches;
	for (uint32_t round = 0; round < ROUNDS; round++) {
		uint64_t batches = b->exec.tail_batches, copies = b->exec.tail_copies;
		uint32_t x[JOBS][N], k[JOBS];
		struct vy_pending *pend[JOBS];
		for (uint32_t j = 0; j < JOBS; j++) {
			k[j] = (round + j) % 3;
			for (uint32_t i = 0; i < N; i++) {
				x[j][i] = i * 7 + j * 100 + round * 1000;
			}
			struct vy_bytes in[2] = {
				{(uint8_t *)x[j], sizeof(x[j])}, {(uint8_t *)&k[j], sizeof(k[j])}};
			cr_assert_eq(vy_backend_dispatch_async(be2, p, in, 2, NULL, &pend[j], &err),
				0, "%s", err.message);
		}
		struct vy_outputs outs;
		vy_outputs_init(&outs);
		for (int j = JOBS - 1; j >= 0; j--) {
			cr_assert_eq(vy_pending_wait(pend[j], &outs, &err), 0, "%s", err.message);
			cr_assert_eq(outs.items[0].len, sizeof(x[j]));
			const uint32_t *y = (const uint32_t *)(const void *)outs.items[0].data;
			for (uint32_t i = 0; i < N; i++) {
				uint32_t want = i % 3 == k[j] ? x[j][i] + 1 : 0;
				cr_assert_eq(y[i], want, "round %u job %d: y[%u] = %u, want %u",
					round, j, i, y[i], want);
			}
		}
		vy_outputs_finish(&outs);
		/* One tail for the batch, with each job's pack copy back in it. */
		cr_assert_eq(b->exec.tail_batches, batches + 1, "round %u", round);
		cr_assert_geq(b->exec.tail_copies, copies + JOBS, "round %u", round);
		/* A head when some job had an upload or a fill: the first round's fresh packs
		 * are zeroed there; clean packs reused later may need none. */
		cr_assert_leq(b->exec.head_batches, heads_before + round + 1, "round %u", round);
	}
	cr_assert_geq(b->exec.head_batches, heads_before + 1, "no batch had a head");
	uint64_t batches = b->exec.tail_batches;
	uint64_t heads = b->exec.head_batches;
	uint32_t x[N], k = 1;
	for (uint32_t i = 0; i < N; i++) {
		x[i] = i;
	}
	struct vy_bytes in[2] = {{(uint8_t *)x, sizeof(x)}, {(uint8_t *)&k, sizeof(k)}};
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	dispatch_ok(be2, p, in, 2, NULL, &outs);
	cr_assert_eq(((const uint32_t *)(const void *)outs.items[0].data)[1], 2);
	cr_assert_eq(b->exec.tail_batches, batches, "a dispatch submitted at once has no tail");
	cr_assert_eq(b->exec.head_batches, heads, "a dispatch submitted at once has no head");
	vy_outputs_finish(&outs);
	vy_program_destroy(p);
	vy_backend_destroy(be2);
	done();
}

Test(vulkan, queued_jobs_upload_large_inputs_in_their_batch_head)
{
	/* Inputs above the size a discrete GPU reads in host memory are uploaded into device
	 * memory; for jobs queued together that upload is in the batch's head, ahead of every
	 * dispatch of the batch. Each job's y must show its own x. */
	enum { N = 20000, JOBS = 3 };
	struct vy_backend *be2 = open_with(NULL, VY__VK_TEST_STAGING);
	struct vy__vk_backend *b = vy__vk_from(be2);
	struct vy_program *p = every_third(N);
	struct vy_err err = {0};
	uint64_t heads = b->exec.head_batches;
	static uint32_t x[JOBS][N];
	uint32_t k[JOBS];
	struct vy_pending *pend[JOBS];
	for (uint32_t j = 0; j < JOBS; j++) {
		k[j] = j;
		for (uint32_t i = 0; i < N; i++) {
			x[j][i] = i * 5 + j * 100000;
		}
		struct vy_bytes in[2] = {{(uint8_t *)x[j], sizeof(x[j])}, {(uint8_t *)&k[j], 4}};
		cr_assert_eq(vy_backend_dispatch_async(be2, p, in, 2, NULL, &pend[j], &err), 0,
			"%s", err.message);
	}
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	/* The last job first: its value is the one the batch signals (the validation layer
	 * stalls on a wait for a value the queue skipped over). */
	for (int j = JOBS - 1; j >= 0; j--) {
		cr_assert_eq(vy_pending_wait(pend[j], &outs, &err), 0, "%s", err.message);
		const uint32_t *y = (const uint32_t *)(const void *)outs.items[0].data;
		for (uint32_t i = 0; i < N; i++) {
			uint32_t want = i % 3 == k[j] ? x[j][i] + 1 : 0;
			cr_assert_eq(y[i], want, "job %d: y[%u] = %u, want %u", j, i, y[i], want);
		}
	}
	cr_assert_eq(b->exec.head_batches, heads + 1, "the batch had no head");
	vy_outputs_finish(&outs);
	vy_program_destroy(p);
	vy_backend_destroy(be2);
	done();
}

Test(vulkan, launches_folded_over_y_and_z_cover_every_workgroup_once)
{
	/* With a grid limit of [16, 4, 65535], 1-D launches fold: 16 workgroups (1024 elements)
	 * run unfolded, 17 fold to [9, 2, 1], 100 to [13, 4, 2] and 301 to [16, 4, 5]; the
	 * shaders unfold them with the dispatch's x and y, which differ. */
	struct vy_backend *b = open_with(NULL, VY__VK_TEST_SMALL_GRID);
	struct vy_device_profile prof;
	vy_backend_device_profile(b, &prof);
	cr_assert_eq(prof.max_workgroup_count[0], 16);
	cr_assert_eq(prof.max_workgroup_count[1], 4);
	static const uint32_t sizes[] = {1024, 1025, 6400, 64 * 300 + 5};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		check_vector_add(b, sizes[i]);
	}
	vy_backend_destroy(b);
	done();
}

Test(vulkan, spec_values_select_pipelines_and_bad_ones_are_refused)
{
	enum { N = 128 };
	struct vy_program *p = vy_program_create("spec_scale", 64, 1, 1);
	vy_program_add_buffer(p, "x", 0, VY_ACCESS_READ_ONLY, VY_TYPE_F32, N);
	vy_program_add_buffer(p, "y", 1, VY_ACCESS_WRITE_ONLY, VY_TYPE_F32, N);
	uint32_t two = 0x40000000; /* 2.0f */
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_let(p, "i", vy_ir_gid(p, 0)),
			   vy_ir_store(p, "y", EXPR_I(p),
				   vy_ir_binary(p, VY_BIN_MUL, vy_ir_load(p, "x", EXPR_I(p)),
					   vy_ir_spec(p, "scale", VY_TYPE_F32, two))),
			   NULL));
	static float x[N];
	for (int i = 0; i < N; i++) {
		x[i] = (float)i + 0.5f;
	}
	struct vy_bytes in[1] = {{(uint8_t *)x, sizeof(x)}};
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	dispatch_ok(be, p, in, 1, NULL, &outs);
	const float *y = (const float *)outs.items[0].data;
	for (int i = 0; i < N; i++) {
		cr_assert_eq(y[i], x[i] * 2.0f);
	}
	struct vy_spec_map spec;
	vy_spec_map_init(&spec);
	vy_spec_map_insert(&spec, "scale", vy_spec_f32(-3.0f));
	struct vy_dispatch_config cfg = {.spec = &spec};
	dispatch_ok(be, p, in, 1, &cfg, &outs);
	y = (const float *)outs.items[0].data;
	for (int i = 0; i < N; i++) {
		cr_assert_eq(y[i], x[i] * -3.0f);
	}
	/* A workgroup-size override is another pipeline with the same results. */
	cfg.workgroup_size[0] = 32;
	cfg.workgroup_size[1] = 1;
	cfg.workgroup_size[2] = 1;
	dispatch_ok(be, p, in, 1, &cfg, &outs);
	y = (const float *)outs.items[0].data;
	for (int i = 0; i < N; i++) {
		cr_assert_eq(y[i], x[i] * -3.0f);
	}
	struct vy_err err;
	cfg.workgroup_size[0] = 1u << 20;
	cr_assert_eq(
		vy_backend_dispatch(be, p, in, 1, &cfg, &outs, &err), VY_E_UNSUPPORTED_FEATURE);
	cfg.workgroup_size[0] = 0;
	cfg.workgroup_size[1] = 0;
	cfg.workgroup_size[2] = 0;
	vy_spec_map_insert(&spec, "scale", vy_spec_u32(3));
	cr_assert_eq(vy_backend_dispatch(be, p, in, 1, &cfg, &outs, &err), VY_E_BAD_REQUEST);
	cr_assert(strstr(err.message, "scale"), "%s", err.message);
	vy_spec_map_finish(&spec);
	vy_spec_map_init(&spec);
	vy_spec_map_insert(&spec, "scael", vy_spec_f32(1.0f));
	cr_assert_eq(vy_backend_dispatch(be, p, in, 1, &cfg, &outs, &err), VY_E_BAD_REQUEST);
	cr_assert(strstr(err.message, "scael"), "%s", err.message);
	vy_spec_map_finish(&spec);
	vy_outputs_finish(&outs);
	vy_program_destroy(p);
	done();
}

Test(vulkan, traps_and_loop_limits_fail_the_dispatch_with_the_node)
{
	enum { N = 8 };
	struct vy_program *p = vy_program_create("divide", 8, 1, 1);
	vy_program_add_buffer(p, "a", 0, VY_ACCESS_READ_ONLY, VY_TYPE_I32, N);
	vy_program_add_buffer(p, "b", 1, VY_ACCESS_READ_ONLY, VY_TYPE_I32, N);
	vy_program_add_buffer(p, "q", 2, VY_ACCESS_WRITE_ONLY, VY_TYPE_I32, N);
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_let(p, "i", vy_ir_gid(p, 0)),
			   vy_ir_store(p, "q", EXPR_I(p),
				   vy_ir_binary(p, VY_BIN_DIV, vy_ir_load(p, "a", EXPR_I(p)),
					   vy_ir_load(p, "b", EXPR_I(p)))),
			   NULL));
	int32_t a[N] = {10, 20, 30, 40, 50, 60, 70, 80};
	int32_t b[N] = {1, 2, 3, 4, 5, 6, 7, 8};
	struct vy_bytes in[2] = {{(uint8_t *)a, sizeof(a)}, {(uint8_t *)b, sizeof(b)}};
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	dispatch_ok(be, p, in, 2, NULL, &outs);
	cr_assert_eq(((const int32_t *)outs.items[0].data)[7], 10);
	b[5] = 0;
	struct vy_err err = {0};
	cr_assert_eq(vy_backend_dispatch(be, p, in, 2, NULL, &outs, &err), VY_E_TRAP);
	cr_assert(strstr(err.message, "int_div_zero"), "%s", err.message);
	cr_assert(strstr(err.at, "entry[1]"), "at %s", err.at);
	cr_assert_eq(outs.len, 0, "a failed dispatch returns no outputs");
	vy_program_destroy(p);

	/* An endless loop ends at max_loop_iterations. */
	p = vy_program_create("spin", 8, 1, 1);
	vy_program_add_buffer(p, "out", 0, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 8);
	vy_program_set_entry(p,
		vy_ir_seq(p,
			vy_ir_loop(p, "k", vy_ir_u32(p, 0), vy_ir_u32(p, 0xFFFFFFFFu),
				vy_ir_seq(p,
					vy_ir_store(p, "out", vy_ir_gid(p, 0), vy_ir_var(p, "k")),
					NULL)),
			NULL));
	struct vy_dispatch_config cfg = {.max_loop_iterations = 1000};
	cr_assert_eq(vy_backend_dispatch(be, p, NULL, 0, &cfg, &outs, &err), VY_E_TRAP);
	cr_assert(strstr(err.message, "loop_limit"), "%s", err.message);

	/* A dispatch that outlives its timeout ends with TIMEOUT; its buffers come back once the
	 * device is done with it, and the backend goes on serving. Its submission is held, so it
	 * cannot finish before its 20 ms run out, however fast or loaded the machine; the dispatch
	 * after it has no timeout of its own, so only its trap can end it. Rounds repeat until
	 * the bytes in use stay the same across one: the pools of execution contexts may grow in
	 * the first rounds (a context made for a round, or for a reap running beside it), while a
	 * job that kept its buffers would add to them in every round. */
	struct vy_dispatch_config tcfg = {.max_loop_iterations = 1000, .timeout_ms = 20};
	uint64_t last = UINT64_MAX;
	bool stable = false;
	for (int round = 0; round < 8 && !stable; round++) {
		cr_assert_eq(vy__vk_hold_submissions(be, true, &err), 0, "%s", err.message);
		cr_assert_eq(vy_backend_dispatch(be, p, NULL, 0, &tcfg, &outs, &err), VY_E_TIMEOUT,
			"%s", err.message);
		cr_assert(strstr(err.message, "20 ms"), "%s", err.message);
		cr_assert_eq(vy__vk_hold_submissions(be, false, &err), 0, "%s", err.message);
		cr_assert_eq(vy_backend_dispatch(be, p, NULL, 0, &cfg, &outs, &err), VY_E_TRAP,
			"%s", err.message);
		cr_assert(strstr(err.message, "loop_limit"), "%s", err.message);
		cr_assert_eq(vy_backend_flush(be, &err), 0, "%s", err.message);
		struct vy_vulkan_stats now;
		vy_vulkan_stats(be, &now);
		stable = round > 0 && now.bytes_in_use == last;
		last = now.bytes_in_use;
	}
	cr_assert(stable, "the abandoned jobs' buffers are back (bytes in use still change)");
	vy_outputs_finish(&outs);
	vy_program_destroy(p);
	done();
}

/* A dispatch past its timeout; then a small one must get the device back well before the work
 * the first one asked for could have run (hours on lavapipe, minutes on a GPU). */
static void times_out_then_device_serves(
	const struct vy_program *p, const struct vy_dispatch_config *cfg)
{
	struct vy_err err = {0};
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	struct vy_vulkan_stats before, after;
	vy_vulkan_stats(be, &before);
	cr_assert_eq(vy_backend_dispatch(be, p, NULL, 0, cfg, &outs, &err), VY_E_TIMEOUT, "%s",
		err.message);
	vy_vulkan_stats(be, &after);
	cr_expect_eq(after.stopped - before.stopped, 1, "the abandoned job was told to stop");

	struct vy_program *add = vector_add(64);
	float a[64], b[64];
	for (int i = 0; i < 64; i++) {
		a[i] = (float)i;
		b[i] = 0.5f;
	}
	struct vy_bytes in[2] = {{(uint8_t *)a, sizeof(a)}, {(uint8_t *)b, sizeof(b)}};
	struct vy_dispatch_config quick = {.timeout_ms = 30000};
	dispatch_ok(be, add, in, 2, &quick, &outs);
	for (int i = 0; i < 64; i++) {
		cr_expect_eq(((const float *)outs.items[0].data)[i], (float)i + 0.5f);
	}
	cr_assert_eq(vy_backend_flush(be, &err), 0, "%s", err.message);
	vy_outputs_finish(&outs);
	vy_program_destroy(add);
}

Test(vulkan, a_dispatch_abandoned_at_its_timeout_stops_on_the_device)
{
	/* 2^32 workgroups, launched in parts: the workgroups that run read the stop word on
	 * entry, and the parts not started launch none once it is set. */
	struct vy_program *wide = vy_program_create("wide", 64, 1, 1);
	vy_program_add_buffer(wide, "out", 0, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 64);
	vy_program_set_entry(wide,
		vy_ir_seq(wide, vy_ir_store(wide, "out", vy_ir_lid(wide, 0), vy_ir_gid(wide, 0)),
			NULL));
	struct vy_dispatch_config cfg = {.grid = {65535, 65535, 1}, .timeout_ms = 200};
	times_out_then_device_serves(wide, &cfg);
	vy_program_destroy(wide);
	done();
}

Test(vulkan, a_loop_abandoned_at_its_timeout_stops_on_the_device)
{
	struct vy_device_profile prof;
	vy_backend_device_profile(be, &prof);
	if (prof.cpu_device) {
		/* llvmpipe ends an invocation's loops after 65,535 passes (docs/semantics.md §7):
		 * no invocation of a lavapipe dispatch runs long enough for its stop check to
		 * show. */
		done();
		cr_skip_test("a CPU device does not run one invocation long");
	}
	/* One workgroup in three nested loops of 60,000 iterations each, 2 x 10^14 in all: the
	 * loops read the stop word. */
	struct vy_program *deep = vy_program_create("deep", 64, 1, 1);
	vy_program_add_buffer(deep, "out", 0, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 64);
	struct vy_node *loop = vy_ir_loop(deep, "i", vy_ir_u32(deep, 0), vy_ir_u32(deep, 60000),
		vy_ir_seq(deep,
			vy_ir_assign(deep, "acc",
				vy_ir_binary(deep, VY_BIN_ADD, vy_ir_var(deep, "acc"),
					vy_ir_var(deep, "i"))),
			NULL));
	static const char *const outer[] = {"j", "k"};
	for (int d = 0; d < 2; d++) {
		loop = vy_ir_loop(deep, outer[d], vy_ir_u32(deep, 0), vy_ir_u32(deep, 60000),
			vy_ir_seq(deep, loop, NULL));
	}
	vy_program_set_entry(
		deep, vy_ir_seq(deep, vy_ir_let(deep, "acc", vy_ir_u32(deep, 0)), loop,
			      vy_ir_store(deep, "out", vy_ir_lid(deep, 0), vy_ir_var(deep, "acc")),
			      NULL));
	struct vy_dispatch_config loops = {
		.grid = {1, 1, 1}, .timeout_ms = 200, .max_loop_iterations = UINT64_MAX};
	times_out_then_device_serves(deep, &loops);
	vy_program_destroy(deep);
	done();
}

/* acc = number of iterations of one loop of `n`, stored in out[0]. */
static struct vy_program *counting_loop(uint32_t n)
{
	struct vy_program *p = vy_program_create("long_loop", 1, 1, 1);
	vy_program_add_buffer(p, "out", 0, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 1);
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_let(p, "acc", vy_ir_u32(p, 0)),
			   vy_ir_loop(p, "k", vy_ir_u32(p, 0), vy_ir_u32(p, n),
				   vy_ir_seq(p,
					   vy_ir_assign(p, "acc",
						   vy_ir_binary(p, VY_BIN_ADD, vy_ir_var(p, "acc"),
							   vy_ir_u32(p, 1))),
					   NULL)),
			   vy_ir_store(p, "out", vy_ir_u32(p, 0), vy_ir_var(p, "acc")), NULL));
	return p;
}

Test(vulkan, a_long_loop_counts_right_or_fails_at_the_devices_loop_limit)
{
	/* llvmpipe allows 65,535 loop passes per invocation (docs/semantics.md §7): 100,000
	 * iterations fit, 16 bodies a pass; 4,000,000 do not, and the dispatch says so at the
	 * loop rather than come back short. Elsewhere both counts are exact. */
	struct vy_device_profile prof;
	vy_backend_device_profile(be, &prof);
	if (strstr(prof.name, "llvmpipe")) {
		cr_assert_eq(prof.loop_passes, 65535, "the probe finds llvmpipe's loop limiter");
	}
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	struct vy_err err = {0};
	struct vy_program *p = counting_loop(100000);
	cr_assert_eq(vy_backend_dispatch(be, p, NULL, 0, NULL, &outs, &err), 0, "%s on %s",
		err.message, prof.name);
	cr_expect_eq(((const uint32_t *)outs.items[0].data)[0], 100000u);
	vy_program_destroy(p);
	p = counting_loop(4000000);
	int rc = vy_backend_dispatch(be, p, NULL, 0, NULL, &outs, &err);
	if (prof.loop_passes > 0) {
		cr_expect_eq(rc, VY_E_UNSUPPORTED_FEATURE, "%s", err.message);
		cr_expect_str_eq(err.at, "entry[1].loop");
		cr_expect(strstr(err.message, "loop passes per invocation"), "%s", err.message);
	} else {
		cr_assert_eq(rc, 0, "%s on %s", err.message, prof.name);
		cr_expect_eq(((const uint32_t *)outs.items[0].data)[0], 4000000u);
	}
	vy_outputs_finish(&outs);
	vy_program_destroy(p);
	done();
}

Test(vulkan, traps_are_named_by_the_program_as_written)
{
	enum { N = 8 };
	int32_t a[N] = {10, 20, 30, 40, 50, 60, 70, 80};
	int32_t b[N] = {1, 2, 3, 4, 5, 0, 7, 8};
	float f[N] = {0.5f, 1, 2, 3, 4, 5, 6, 7};
	struct vy_bytes in[3] = {
		{(uint8_t *)a, sizeof(a)}, {(uint8_t *)b, sizeof(b)}, {(uint8_t *)f, sizeof(f)}};
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	struct vy_err err = {0};

	/* sin() is lowered into many statements before its own: the division's trap still names
	 * the third statement. */
	struct vy_program *p = vy_program_create("lowered_then_trap", 8, 1, 1);
	vy_program_add_buffer(p, "a", 0, VY_ACCESS_READ_ONLY, VY_TYPE_I32, N);
	vy_program_add_buffer(p, "b", 1, VY_ACCESS_READ_ONLY, VY_TYPE_I32, N);
	vy_program_add_buffer(p, "f", 2, VY_ACCESS_READ_ONLY, VY_TYPE_F32, N);
	vy_program_add_buffer(p, "q", 3, VY_ACCESS_WRITE_ONLY, VY_TYPE_I32, N);
	vy_program_add_buffer(p, "s", 4, VY_ACCESS_WRITE_ONLY, VY_TYPE_F32, N);
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_let(p, "i", vy_ir_gid(p, 0)),
			   vy_ir_store(p, "s", EXPR_I(p),
				   vy_ir_unary(p, VY_UN_SIN, vy_ir_load(p, "f", EXPR_I(p)))),
			   vy_ir_store(p, "q", EXPR_I(p),
				   vy_ir_binary(p, VY_BIN_DIV, vy_ir_load(p, "a", EXPR_I(p)),
					   vy_ir_load(p, "b", EXPR_I(p)))),
			   NULL));
	cr_assert_eq(
		vy_backend_dispatch(be, p, in, 3, NULL, &outs, &err), VY_E_TRAP, "%s", err.message);
	cr_assert_str_eq(err.at, "entry[2].store");
	vy_program_destroy(p);

	/* In the second grid_sync segment the trap is located in the whole program. */
	p = vy_program_create("segment_trap", 8, 1, 1);
	vy_program_add_buffer(p, "a", 0, VY_ACCESS_READ_ONLY, VY_TYPE_I32, N);
	vy_program_add_buffer(p, "b", 1, VY_ACCESS_READ_ONLY, VY_TYPE_I32, N);
	vy_program_add_buffer(p, "q", 2, VY_ACCESS_WRITE_ONLY, VY_TYPE_I32, N);
	struct vy_node *first = vy_ir_block(
		p, vy_ir_seq(p, vy_ir_store(p, "q", vy_ir_gid(p, 0), vy_ir_i32(p, 1)), NULL));
	struct vy_node *second = vy_ir_block(
		p, vy_ir_seq(p, vy_ir_let(p, "i", vy_ir_gid(p, 0)),
			   vy_ir_store(p, "q", EXPR_I(p),
				   vy_ir_binary(p, VY_BIN_DIV, vy_ir_load(p, "a", EXPR_I(p)),
					   vy_ir_load(p, "b", EXPR_I(p)))),
			   NULL));
	vy_program_set_entry(
		p, vy_ir_seq(p, first, vy_ir_barrier(p, VY_ORDER_GRID_SYNC), second, NULL));
	cr_assert_eq(
		vy_backend_dispatch(be, p, in, 2, NULL, &outs, &err), VY_E_TRAP, "%s", err.message);
	cr_assert_str_eq(err.at, "entry[2].block.body[1].store");
	cr_assert(strncmp(err.message, "grid_sync segment 1: ", 21) == 0, "%s", err.message);
	vy_outputs_finish(&outs);
	vy_program_destroy(p);
	done();
}

Test(vulkan, output_buffers_start_zeroed_and_count_zero_buffers_take_their_input)
{
	/* First fill pooled memory with ones, then write only even words of a buffer of the same
	 * size: the odd ones must still be zero. */
	enum { N = 512 };
	struct vy_program *fill = vy_program_create("fill", 64, 1, 1);
	vy_program_add_buffer(fill, "out", 0, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, N);
	vy_program_set_entry(fill,
		vy_ir_seq(fill, vy_ir_store(fill, "out", vy_ir_gid(fill, 0), vy_ir_u32(fill, ~0u)),
			NULL));
	struct vy_program *even = vy_program_create("even", 64, 1, 1);
	vy_program_add_buffer(even, "out", 0, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, N);
	vy_program_set_entry(even, vy_ir_seq(even,
					   vy_ir_store(even, "out",
						   vy_ir_binary(even, VY_BIN_MUL,
							   vy_ir_gid(even, 0), vy_ir_u32(even, 2)),
						   vy_ir_u32(even, 7)),
					   NULL));
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	dispatch_ok(be, fill, NULL, 0, NULL, &outs);
	cr_assert_eq(((const uint32_t *)outs.items[0].data)[N - 1], ~0u);
	dispatch_ok(be, even, NULL, 0, NULL, &outs);
	const uint32_t *o = (const uint32_t *)outs.items[0].data;
	for (int i = 0; i < N; i++) {
		cr_assert_eq(o[i], i % 2 ? 0u : 7u, "out[%d] = %08x", i, o[i]);
	}

	check_lengths(be);
	vy_outputs_finish(&outs);
	vy_program_destroy(even);
	vy_program_destroy(fill);
	done();
}

Test(vulkan, async_dispatches_batch_into_few_submits)
{
	/* Odd jobs start through a compiled pipeline, which finds no kernel by the program's
	 * bytes; even ones by the program. */
	enum { N = 64, JOBS = 8 };
	struct vy_program *p = vector_add(N);
	static float a[JOBS][N], b[JOBS][N];
	struct vy_pending *pend[JOBS];
	struct vy_vulkan_stats before, after;
	struct vy_err err;
	struct vy_pipeline *pl = NULL;
	cr_assert_eq(vy_backend_compile_native(be, p, NULL, &pl, &err), 0, "%s", err.message);
	struct vy_pipeline_cache_stats kernels_before, kernels_after;
	cr_assert(vy_backend_pipeline_cache_stats(be, &kernels_before));
	vy_vulkan_stats(be, &before);
	for (int j = 0; j < JOBS; j++) {
		fill_inputs(a[j], b[j], N, (float)j);
		struct vy_bytes in[2] = {
			{(uint8_t *)a[j], sizeof(a[j])}, {(uint8_t *)b[j], sizeof(b[j])}};
		int rc = j % 2 ? vy_pipeline_dispatch_async(pl, in, 2, NULL, &pend[j], &err)
			       : vy_backend_dispatch_async(be, p, in, 2, NULL, &pend[j], &err);
		cr_assert_eq(rc, 0, "%s", err.message);
	}
	cr_assert(vy_backend_pipeline_cache_stats(be, &kernels_after));
	cr_assert_eq(kernels_after.hits - kernels_before.hits, JOBS / 2,
		"%llu kernel lookups for %d jobs started by program",
		(unsigned long long)(kernels_after.hits - kernels_before.hits), JOBS / 2);
	/* The inputs were copied at dispatch time: changing them now changes nothing. */
	memset(a, 0, sizeof(a));
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	for (int j = JOBS - 1; j >= 0; j--) {
		cr_assert_eq(vy_pending_wait(pend[j], &outs, &err), 0, "%s", err.message);
		float ra[N], rb[N];
		fill_inputs(ra, rb, N, (float)j);
		check_sum(&outs, ra, rb, N);
	}
	vy_vulkan_stats(be, &after);
	cr_assert_eq(after.jobs - before.jobs, JOBS);
	cr_assert_lt(after.submits - before.submits, JOBS, "several jobs per vkQueueSubmit");

	/* A handle dropped without waiting frees everything once its work is done. */
	struct vy_bytes in[2] = {{(uint8_t *)b[0], sizeof(b[0])}, {(uint8_t *)b[1], sizeof(b[1])}};
	struct vy_pending *dropped;
	cr_assert_eq(vy_backend_dispatch_async(be, p, in, 2, NULL, &dropped, &err), 0);
	vy_pending_destroy(dropped);
	cr_assert_eq(vy_backend_flush(be, &err), 0, "%s", err.message);
	vy_outputs_finish(&outs);
	vy_pipeline_destroy(pl);
	vy_program_destroy(p);
	done();
}

struct worker {
	const struct vy_program *program;
	int id;
	int failures;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	enum { N = 333 };
	float a[N], b[N];
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	for (int round = 0; round < 10; round++) {
		fill_inputs(a, b, N, (float)(w->id * 100 + round));
		struct vy_bytes in[2] = {{(uint8_t *)a, sizeof(a)}, {(uint8_t *)b, sizeof(b)}};
		struct vy_err err;
		if (vy_backend_dispatch(be, w->program, in, 2, NULL, &outs, &err) != 0 ||
			outs.len != 1) {
			w->failures++;
			continue;
		}
		const float *c = (const float *)outs.items[0].data;
		for (int i = 0; i < N; i++) {
			float want = a[i] + b[i];
			if (memcmp(&c[i], &want, 4) != 0) {
				w->failures++;
				break;
			}
		}
	}
	vy_outputs_finish(&outs);
	return NULL;
}

Test(vulkan, concurrent_dispatches_from_several_threads_stay_separate)
{
	/* All threads start on one program nobody has compiled yet. */
	struct vy_program *p = vector_add(333);
	enum { THREADS = 4 };
	pthread_t threads[THREADS];
	struct worker workers[THREADS];
	for (int i = 0; i < THREADS; i++) {
		workers[i] = (struct worker){p, i, 0};
		cr_assert_eq(pthread_create(&threads[i], NULL, worker_main, &workers[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(threads[i], NULL);
		cr_assert_eq(workers[i].failures, 0, "thread %d saw %d wrong results", i,
			workers[i].failures);
	}
	struct vy_pipeline_cache_stats st;
	vy_backend_pipeline_cache_stats(be, &st);
	cr_assert_eq(st.entries, 1, "one cached kernel however many threads compiled it");
	cr_assert_eq(st.hits + st.misses, THREADS * 10);
	vy_program_destroy(p);
	done();
}

Test(vulkan, resident_buffers_work_in_place_and_running_out_of_memory_is_reported)
{
	enum { N = 300 };
	struct vy_program *p = vector_add(N);
	struct vy_resource ra, rb, rc;
	struct vy_err err;
	cr_assert_eq(vy_backend_resident_alloc(be, N * 4, &ra, &err), 0, "%s", err.message);
	cr_assert_eq(vy_backend_resident_alloc(be, N * 4, &rb, &err), 0);
	cr_assert_eq(vy_backend_resident_alloc(be, N * 4, &rc, &err), 0);
	cr_assert_neq(ra.id, rb.id);
	static float a[N], b[N], c[N];
	/* A new buffer never shows bytes of an earlier one. */
	cr_assert_eq(vy_backend_resident_download(be, &rc, 0, (uint8_t *)c, sizeof(c), &err), 0);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(c[i], 0.0f);
	}
	fill_inputs(a, b, N, 0.75f);
	cr_assert_eq(
		vy_backend_resident_upload(be, &ra, 0, (struct vy_bytes){(uint8_t *)a, 400}, &err),
		0);
	cr_assert_eq(vy_backend_resident_upload(be, &ra, 400,
			     (struct vy_bytes){(uint8_t *)a + 400, sizeof(a) - 400}, &err),
		0);
	cr_assert_eq(vy_backend_resident_upload(
			     be, &rb, 0, (struct vy_bytes){(uint8_t *)b, sizeof(b)}, &err),
		0);
	struct vy_resource res[3] = {ra, rb, rc};
	struct vy_timing t;
	cr_assert_eq(
		vy_backend_resident_dispatch(be, p, res, 3, NULL, &t, &err), 0, "%s", err.message);
	cr_assert_gt(t.wall_ns, 0);
	cr_assert_eq(vy_backend_resident_download(be, &rc, 0, (uint8_t *)c, sizeof(c), &err), 0);
	for (int i = 0; i < N; i++) {
		float want = a[i] + b[i];
		cr_assert(memcmp(&c[i], &want, 4) == 0, "c[%d]", i);
	}
	/* Outputs of one dispatch feed the next without leaving the device. */
	struct vy_resource chained[3] = {rc, rb, ra};
	cr_assert_eq(vy_backend_resident_dispatch(be, p, chained, 3, NULL, &t, &err), 0);
	cr_assert_eq(vy_backend_resident_download(be, &ra, 0, (uint8_t *)a, sizeof(a), &err), 0);
	for (int i = 0; i < N; i++) {
		float want = c[i] + b[i];
		cr_assert(memcmp(&a[i], &want, 4) == 0, "a[%d]", i);
	}
	cr_assert_eq(vy_backend_resident_upload(
			     be, &ra, N * 4 - 2, (struct vy_bytes){(uint8_t *)a, 4}, &err),
		VY_E_BAD_REQUEST);
	cr_assert_eq(vy_backend_resident_dispatch(be, p, res, 2, NULL, &t, &err), VY_E_BAD_REQUEST);
	struct vy_resource small;
	cr_assert_eq(vy_backend_resident_alloc(be, 8, &small, &err), 0);
	struct vy_resource too_small[3] = {ra, small, rc};
	cr_assert_eq(vy_backend_resident_dispatch(be, p, too_small, 3, NULL, &t, &err),
		VY_E_BAD_REQUEST);
	cr_assert_eq(vy_backend_resident_free(be, small, &err), 0);
	cr_assert_eq(vy_backend_resident_free(be, rc, &err), 0);
	cr_assert_eq(
		vy_backend_resident_download(be, &rc, 0, (uint8_t *)c, 4, &err), VY_E_NOT_FOUND);
	cr_assert_eq(vy_backend_resident_free(be, rc, &err), VY_E_NOT_FOUND);
	struct vy_vulkan_stats st;
	vy_vulkan_stats(be, &st);
	cr_assert_eq(st.resident_buffers, 2);
	vy_backend_resident_free(be, ra, &err);
	vy_backend_resident_free(be, rb, &err);
	vy_program_destroy(p);

	/* More than the device has: OUT_OF_MEMORY with both sizes, and nothing allocated. */
	struct vy_resource r;
	memset(&err, 0, sizeof(err));
	size_t huge = (size_t)1 << 50;
	cr_assert_eq(vy_backend_resident_alloc(be, huge, &r, &err), VY_E_OUT_OF_MEMORY);
	cr_assert(strstr(err.message, "requested 1125899906842624 bytes"), "%s", err.message);
	cr_assert(strstr(err.message, "available"), "%s", err.message);
	cr_assert_neq(err.fix[0], '\0');
	vy_vulkan_stats(be, &st);
	cr_assert_eq(st.resident_buffers, 0);
	check_resident(be);
	done();
}

Test(vulkan, lost_device_is_reported_and_recovered)
{
	enum { N = 64 };
	struct vy_program *p = vector_add(N);
	struct vy_pipeline *pl;
	struct vy_err err = {0};
	cr_assert_eq(vy_backend_compile_native(be, p, NULL, &pl, &err), 0);
	struct vy_resource r;
	cr_assert_eq(vy_backend_resident_alloc(be, 64, &r, &err), 0);
	cr_assert_not(vy_backend_device_lost(be));
	vy__vk_simulate_device_lost(be);
	cr_assert(vy_backend_device_lost(be));
	static float a[N], b[N];
	fill_inputs(a, b, N, 2.0f);
	struct vy_bytes in[2] = {{(uint8_t *)a, sizeof(a)}, {(uint8_t *)b, sizeof(b)}};
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	cr_assert_eq(vy_backend_dispatch(be, p, in, 2, NULL, &outs, &err), VY_E_DEVICE_LOST);
	cr_assert_eq(vy_err_retry(VY_E_DEVICE_LOST), VY_RETRY_LATER);
	cr_assert_eq(vy_pipeline_dispatch(pl, in, 2, NULL, &outs, &err), VY_E_DEVICE_LOST);
	cr_assert_eq(vy_backend_try_recover(be, &err), 0, "%s", err.message);
	cr_assert_not(vy_backend_device_lost(be));
	dispatch_ok(be, p, in, 2, NULL, &outs);
	check_sum(&outs, a, b, N);
	cr_assert_eq(vy_pipeline_dispatch(pl, in, 2, NULL, &outs, &err), 0, "%s", err.message);
	check_sum(&outs, a, b, N);
	uint8_t byte;
	cr_assert_eq(vy_backend_resident_download(be, &r, 0, &byte, 1, &err), VY_E_NOT_FOUND,
		"resident buffers are lost with their device");
	vy_outputs_finish(&outs);
	vy_pipeline_destroy(pl);
	vy_program_destroy(p);
	done();
}

/* The secret the disk cache's files are authenticated with in these tests. */
static const uint8_t mac_key[VY_VK_DISK_MAC_KEY_BYTES] = "vyred test key: 32 bytes long..";

/* Damage a file of the disk cache: 0 truncates it, 1 flips a payload byte, 2 rewrites it as
 * another device's file with a valid MAC, 3 forges it with another key (what someone without
 * the secret can do), 4 replaces a SPIR-V payload by a module spirv-val refuses, with a valid
 * MAC (a blob gets a flipped byte instead). */
static void damage(const char *path, int how)
{
	FILE *f = fopen(path, "r+b");
	cr_assert_not_null(f, "no cache file %s", path);
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	cr_assert_gt(size, VY_VK_DISK_HEADER_BYTES);
	rewind(f);
	uint8_t *data = malloc((size_t)size);
	cr_assert_eq(fread(data, 1, (size_t)size, f), (size_t)size);
	fclose(f);
	if (how == 0) {
		cr_assert_eq(truncate(path, size / 2), 0);
	} else if (how == 1) {
		data[size - 1] ^= 0x40;
	} else if (how == 2 || how == 3) {
		struct vy_vk_disk_identity id = {.vendor_id = 0x10de, .device_id = 0x2330};
		uint8_t other_key[VY_VK_DISK_MAC_KEY_BYTES] = {1};
		if (how == 3) {
			memcpy(&id.vendor_id, data + 16, 4);
			memcpy(&id.device_id, data + 20, 4);
			memcpy(&id.driver_version, data + 24, 4);
			memcpy(id.cache_uuid, data + 32, 16);
		}
		uint8_t key[16];
		memcpy(key, data + 48, 16);
		uint32_t kind = data[12];
		vy__vk_disk_header(&id, kind, key, how == 3 ? other_key : mac_key,
			data + VY_VK_DISK_HEADER_BYTES, (size_t)size - VY_VK_DISK_HEADER_BYTES,
			data);
	} else if (data[12] == VY_VK_DISK_PIPELINE_CACHE) {
		data[size - 1] ^= 0x40;
	} else {
		/* The SPIR-V header, then words no module can hold. */
		uint32_t *w = (uint32_t *)(data + VY_VK_DISK_HEADER_BYTES);
		size_t n = ((size_t)size - VY_VK_DISK_HEADER_BYTES) / 4;
		for (size_t i = 5; i < n; i++) {
			w[i] = 0xdeadbeefu ^ (uint32_t)i;
		}
		struct vy_vk_disk_identity id;
		memcpy(&id.vendor_id, data + 16, 4);
		memcpy(&id.device_id, data + 20, 4);
		memcpy(&id.driver_version, data + 24, 4);
		memcpy(id.cache_uuid, data + 32, 16);
		uint8_t key[16];
		memcpy(key, data + 48, 16);
		vy__vk_disk_header(&id, VY_VK_DISK_SPIRV, key, mac_key,
			data + VY_VK_DISK_HEADER_BYTES, (size_t)size - VY_VK_DISK_HEADER_BYTES,
			data);
	}
	if (how != 0) {
		f = fopen(path, "wb");
		cr_assert_eq(fwrite(data, 1, (size_t)size, f), (size_t)size);
		fclose(f);
	}
	free(data);
}

static void find_spirv(char *out, size_t size)
{
	char dir[300];
	snprintf(dir, sizeof(dir), "%s/spirv", cache_dir);
	DIR *d = opendir(dir);
	cr_assert_not_null(d);
	struct dirent *e;
	out[0] = '\0';
	while ((e = readdir(d))) {
		if (strstr(e->d_name, ".spv") && !strstr(e->d_name, ".tmp")) {
			snprintf(out, size, "%s/%s", dir, e->d_name);
		}
	}
	closedir(d);
	cr_assert_neq(out[0], '\0', "no SPIR-V file was written");
}

static struct vy_program *counting_loop(uint32_t n);

/*
 * Open a backend on the cache, dispatch a program with `flags`, and return its stats before
 * closing: counting_loop, whose kernel has one module (it stores at a fixed index, so it is not
 * elementwise), or with `coarse`, vector_add, which runs in its coarse form (vk_coarse.c) and so
 * has two, the plain one and the coarse one.
 */
static struct vy_vulkan_stats cached_run_with(bool coarse)
{
	struct vy_vulkan_options opts = {.cache_dir = cache_dir, .cache_key = mac_key};
	struct vy_backend *b = open_with(&opts, coarse ? VY__VK_TEST_COARSE_ALL : 0);
	enum { N = 96 };
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	struct vy_program *p = NULL;
	if (coarse) {
		p = vector_add(N);
		static float a[N], bb[N];
		fill_inputs(a, bb, N, 4.0f);
		struct vy_bytes in[2] = {{(uint8_t *)a, sizeof(a)}, {(uint8_t *)bb, sizeof(bb)}};
		dispatch_ok(b, p, in, 2, NULL, &outs);
		check_sum(&outs, a, bb, N);
	} else {
		p = counting_loop(N);
		dispatch_ok(b, p, NULL, 0, NULL, &outs);
		cr_assert_eq(((const uint32_t *)outs.items[0].data)[0], N);
	}
	struct vy_vulkan_stats st;
	cr_assert(vy_vulkan_stats(b, &st));
	vy_outputs_finish(&outs);
	vy_program_destroy(p);
	vy_backend_destroy(b);
	return st;
}

static struct vy_vulkan_stats cached_run(void)
{
	return cached_run_with(false);
}

/* Both files of the cache pass every check for this device (they were replaced). */
static void check_cache_files(const struct vy_device_profile *prof, int how)
{
	struct vy_vk_disk_identity id = {
		.vendor_id = prof->vendor_id,
		.device_id = prof->device_id,
		.driver_version = prof->driver_version,
	};
	memcpy(id.cache_uuid, prof->pipeline_cache_uuid, 16);
	struct vy_vk_disk disk;
	struct vy_err err;
	cr_assert_eq(vy__vk_disk_open(&disk, cache_dir, mac_key, &id, &err), 0, "%s", err.message);
	void *data = NULL;
	size_t len = 0;
	cr_assert(vy__vk_disk_read(&disk, VY_VK_DISK_PIPELINE_CACHE, NULL, &data, &len),
		"damage %d: the blob was not replaced", how);
	free(data);
	char spv[600];
	find_spirv(spv, sizeof(spv));
	const char *hex = strrchr(spv, '/') + 1;
	uint8_t key[16];
	for (int i = 0; i < 16; i++) {
		cr_assert_eq(sscanf(hex + 2 * i, "%2hhx", &key[i]), 1);
	}
	cr_assert(vy__vk_disk_read(&disk, VY_VK_DISK_SPIRV, key, &data, &len),
		"damage %d: the module was not replaced", how);
	cr_assert_eq(((const uint32_t *)data)[0], 0x07230203u, "a SPIR-V module");
	free(data);
	cr_assert_eq(atomic_load(&disk.rejected), 0);
	vy__vk_disk_close(&disk);
}

Test(vulkan, damaged_or_foreign_cache_files_are_ignored_and_replaced)
{
	snprintf(cache_dir, sizeof(cache_dir), "/tmp/vy-vk-cache-%ld", (long)getpid());
	struct vy_device_profile prof;
	vy_backend_device_profile(be, &prof);
	char blob[400];
	snprintf(blob, sizeof(blob), "%s/pipeline-cache-%04x-%04x.bin", cache_dir, prof.vendor_id,
		prof.device_id);

	struct vy_vulkan_stats st = cached_run();
	cr_assert_not(st.pipeline_cache_from_disk);
	cr_assert_eq(st.spirv_disk_hits, 0);
	cr_assert_geq(st.disk_writes, 1, "the SPIR-V is written when compiled");
	struct stat sb;
	cr_assert_eq(stat(blob, &sb), 0, "the pipeline cache is written at shutdown");

	/* A restart gets its shaders and pipeline cache from disk. */
	st = cached_run();
	cr_assert(st.pipeline_cache_from_disk);
	cr_assert_eq(st.spirv_disk_hits, 1);
	cr_assert_eq(st.disk_rejected, 0);

	for (int how = 0; how < 5; how++) {
		char spv[600];
		find_spirv(spv, sizeof(spv));
		damage(blob, how);
		damage(spv, how);
		st = cached_run();
		cr_assert_not(
			st.pipeline_cache_from_disk, "damage %d: the blob is not trusted", how);
		cr_assert_eq(st.spirv_disk_hits, 0, "damage %d: the module is not trusted", how);
		cr_assert_eq(st.disk_rejected, 2, "damage %d", how);
		cr_assert_eq(
			st.spirv_disk_invalid, how == 4, "damage %d: spirv-val's refusals", how);
		check_cache_files(&prof, how);
	}
	done();
}

Test(vulkan, the_coarse_form_is_cached_with_the_plain_one)
{
	/* A coarse launch needs both modules of vector_add: both are written, and a restart
	 * reads both from disk instead of compiling either. */
	snprintf(cache_dir, sizeof(cache_dir), "/tmp/vy-vk-coarse-%ld", (long)getpid());
	struct vy_vulkan_stats st = cached_run_with(true);
	cr_assert_eq(st.spirv_disk_hits, 0);
	cr_assert_geq(st.disk_writes, 2, "both modules are written");
	st = cached_run_with(true);
	cr_assert_eq(st.spirv_disk_hits, 2, "both modules come from disk");
	cr_assert_eq(st.disk_rejected, 0);
	done();
}

Test(vulkan, a_coarse_launch_runs_every_logical_workgroup_of_its_grid_and_no_more)
{
	/* Nine logical workgroups of 64 over 1000 elements: one launched workgroup runs eight,
	 * the next the ninth alone, and no tenth writes c[576..639]. */
	enum { N = 1000, GROUPS = 9 };
	struct vy_backend *b = open_with(NULL, VY__VK_TEST_COARSE_ALL);
	struct vy_program *p = vector_add(N);
	static float a[N], bb[N];
	fill_inputs(a, bb, N, 2.0f);
	struct vy_bytes in[2] = {{(uint8_t *)a, sizeof(a)}, {(uint8_t *)bb, sizeof(bb)}};
	struct vy_dispatch_config cfg = {.grid = {GROUPS, 1, 1}};
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	dispatch_ok(b, p, in, 2, &cfg, &outs);
	const float *c = (const float *)outs.items[0].data;
	for (uint32_t i = 0; i < N; i++) {
		float want = i < GROUPS * 64 ? a[i] + bb[i] : 0.0f;
		cr_assert_eq(c[i], want, "c[%u] = %g, want %g", i, (double)c[i], (double)want);
	}
	vy_outputs_finish(&outs);
	vy_program_destroy(p);
	vy_backend_destroy(b);
	done();
}

static int vet_calls;

static bool vet_accept(const uint32_t *words, size_t n_words)
{
	vet_calls++;
	return n_words > 5 && words[0] == 0x07230203u;
}

static bool vet_refuse(const uint32_t *words, size_t n_words)
{
	(void)words;
	(void)n_words;
	vet_calls++;
	return false;
}

/* The key of the SPIR-V file at `path` (its name). */
static void spirv_key_of(const char *path, uint8_t key[16])
{
	const char *hex = strrchr(path, '/') + 1;
	for (int i = 0; i < 16; i++) {
		cr_assert_eq(sscanf(hex + 2 * i, "%2hhx", &key[i]), 1);
	}
}

Test(vulkan, modules_checked_ahead_are_trusted_only_byte_for_byte)
{
	snprintf(cache_dir, sizeof(cache_dir), "/tmp/vy-vk-vet-%ld", (long)getpid());
	struct vy_vulkan_stats st = cached_run();
	cr_assert_geq(st.disk_writes, 1);
	struct vy_device_profile prof;
	vy_backend_device_profile(be, &prof);
	struct vy_vk_disk_identity id = {
		.vendor_id = prof.vendor_id,
		.device_id = prof.device_id,
		.driver_version = prof.driver_version,
	};
	memcpy(id.cache_uuid, prof.pipeline_cache_uuid, 16);
	char spv[600];
	find_spirv(spv, sizeof(spv));
	uint8_t key[16];
	spirv_key_of(spv, key);
	struct vy_vk_disk disk;
	struct vy_err err;

	/* Nothing is checked without files, time or a validator's yes. */
	cr_assert_eq(vy__vk_disk_open(&disk, cache_dir, mac_key, &id, &err), 0, "%s", err.message);
	vet_calls = 0;
	vy__vk_disk_vet(&disk, 0, 50000000u, vet_accept);
	vy__vk_disk_vet(&disk, 8, 0, vet_accept);
	cr_assert_eq(disk.n_vetted, 0);
	cr_assert_eq(vet_calls, 0);
	vy__vk_disk_close(&disk);
	cr_assert_eq(vy__vk_disk_open(&disk, cache_dir, mac_key, &id, &err), 0, "%s", err.message);
	vy__vk_disk_vet(&disk, 8, 50000000u, vet_refuse);
	cr_assert_eq(vet_calls, 1, "the one module is offered to the validator");
	cr_assert_eq(disk.n_vetted, 0, "a refused module is not remembered");
	vy__vk_disk_close(&disk);

	/* Checked ahead, the same bytes read later are trusted, counting nothing meanwhile. */
	cr_assert_eq(vy__vk_disk_open(&disk, cache_dir, mac_key, &id, &err), 0, "%s", err.message);
	vet_calls = 0;
	vy__vk_disk_vet(&disk, 8, 50000000u, vet_accept);
	cr_assert_eq(vet_calls, 1);
	cr_assert_eq(disk.n_vetted, 1);
	cr_assert_eq(atomic_load(&disk.spirv_hits) + atomic_load(&disk.rejected), 0);
	void *data = NULL;
	size_t len = 0;
	cr_assert(vy__vk_disk_read(&disk, VY_VK_DISK_SPIRV, key, &data, &len));
	cr_assert(vy__vk_disk_vetted(&disk, key, data, len));
	uint8_t other[16];
	memcpy(other, key, 16);
	other[0] ^= 1;
	cr_assert_not(vy__vk_disk_vetted(&disk, other, data, len), "another key");
	free(data);

	/* A module replaced after the check (garbage under a valid MAC) is checked again. */
	damage(spv, 4);
	cr_assert(vy__vk_disk_read(&disk, VY_VK_DISK_SPIRV, key, &data, &len));
	cr_assert_not(vy__vk_disk_vetted(&disk, key, data, len), "replaced bytes are not vetted");
	free(data);
	vy__vk_disk_close(&disk);
	cr_assert_null(disk.vetted);

	/* Through the backend: the garbage never reaches the driver. */
	st = cached_run();
	cr_assert_eq(st.spirv_disk_invalid, 1);
	cr_assert_eq(st.spirv_disk_hits, 0);
	done();
}

Test(vulkan, a_compile_error_names_the_failing_line)
{
	const char *bad = "#version 450\n"
			  "layout(local_size_x = 1) in;\n"
			  "void main() {\n"
			  "	uint x = undefined_thing + 1u;\n"
			  "}\n";
	struct vy_err err = {0};
	cr_assert_eq(vy__vk_backend_compile(be, bad, &err), VY_E_KERNEL_COMPILE_FAILED);
	cr_assert(strstr(err.message, "line 4"), "%s", err.message);
	cr_assert(strstr(err.message, "uint x = undefined_thing + 1u;"), "%s", err.message);
	cr_assert(strstr(err.message, "undefined_thing"), "%s", err.message);
	cr_assert_neq(err.fix[0], '\0');
	const char *good = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n";
	cr_assert_eq(vy__vk_backend_compile(be, good, &err), 0, "%s", err.message);
	done();
}

Test(vulkan, validation_messages_are_counted)
{
	if (!vy_vulkan_validation_available()) {
		cr_skip_test("VK_LAYER_KHRONOS_validation is not installed");
	}
	/* A buffer of size 0 is invalid usage: the messenger must see it, or a clean run proves
	 * nothing. */
	struct vy__vk_backend *b = vy__vk_from(be);
	VkBufferCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.size = 0,
		.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
	};
	uint64_t before = vy_vulkan_validation_messages(NULL, 0);
	VkBuffer buf = VK_NULL_HANDLE;
	VkResult res = b->dev.vk.vkCreateBuffer(b->dev.dev, &info, NULL, &buf);
	char last[512];
	uint64_t after = vy_vulkan_validation_messages(last, sizeof(last));
	if (res == VK_SUCCESS && buf) {
		b->dev.vk.vkDestroyBuffer(b->dev.dev, buf, NULL);
	}
	cr_assert_gt(after, before, "the layer reported nothing");
	cr_assert(strstr(last, "size"), "%s", last);
	expected_messages = vy_vulkan_validation_messages(NULL, 0);
	done();
}

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
	struct vy_vk_compiler *cc = vy__vk_compiler_create();
	const char *s = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n";
	uint32_t *w = NULL;
	size_t n = 0;
	vy__vk_compile_glsl(cc, s, strlen(s), "warm.comp", false, &w, &n, NULL);
	free(w);
	vy__vk_compiler_destroy(cc);
}

/* A device's answers to the float probe's first kernel, as a correctly rounded device with a fused
 * fma gives them (this host's arithmetic); `fused` false adds a*b and c as two roundings. */
static uint32_t *probe_answers(const float *t, uint32_t n, bool fused)
{
	uint32_t *res = calloc((size_t)n * VY__VK_PROBE_OUT, sizeof(uint32_t));
	cr_assert_not_null(res);
	for (uint32_t i = 0; i < n; i++) {
		float a = t[3 * i];
		float b = t[3 * i + 1];
		float c = t[3 * i + 2];
		volatile float product = a * b;
		float r[VY__VK_PROBE_OUT] = {
			fused ? fmaf(a, b, c) : product + c, a / b, sqrtf(fabsf(a)), a * b, a + c};
		memcpy(&res[(size_t)i * VY__VK_PROBE_OUT], r, sizeof(r));
	}
	return res;
}

Test(vulkan, the_probe_counts_fma_fused_only_with_ieee_special_cases)
{
	uint32_t n = vy__vk_probe_count();
	cr_assert_gt(n, VY__VK_PROBE_SAMPLES);
	float *t = calloc((size_t)n * 3, sizeof(float));
	cr_assert_not_null(t);
	vy__vk_probe_triples(t);
	struct vy_vk_probe pr;

	uint32_t *res = probe_answers(t, n, true);
	vy__vk_probe_judge(t, res, &pr);
	cr_assert(pr.fma_fused && pr.div_exact && pr.sqrt_exact, "%u %u %u", pr.fma_diffs,
		pr.div_diffs, pr.sqrt_diffs);
	/* a NaN of another payload is still IEEE's NaN */
	uint32_t nans = 0;
	for (uint32_t i = VY__VK_PROBE_SAMPLES; i < n; i++) {
		uint32_t *f = &res[(size_t)i * VY__VK_PROBE_OUT];
		if ((*f & 0x7FFFFFFFu) > 0x7F800000u) {
			*f = 0x7FFFFFFFu;
			nans++;
		}
	}
	cr_assert_geq(nans, 3);
	vy__vk_probe_judge(t, res, &pr);
	cr_assert(pr.fma_fused);
	/* each special case answered otherwise: not fused */
	for (uint32_t i = VY__VK_PROBE_SAMPLES; i < n; i++) {
		uint32_t *f = &res[(size_t)i * VY__VK_PROBE_OUT];
		uint32_t kept = *f;
		*f = (kept & 0x7FFFFFFFu) > 0x7F800000u ? 0x3F800000u : kept ^ 1u;
		vy__vk_probe_judge(t, res, &pr);
		cr_assert_not(pr.fma_fused, "special case %u (%a, %a, %a)",
			i - VY__VK_PROBE_SAMPLES, (double)t[3 * i], (double)t[3 * i + 1],
			(double)t[3 * i + 2]);
		cr_assert_eq(pr.fma_diffs, 1);
		*f = kept;
	}
	free(res);

	res = probe_answers(t, n, false);
	vy__vk_probe_judge(t, res, &pr);
	cr_assert_not(pr.fma_fused);
	cr_assert(pr.div_exact && pr.sqrt_exact);
	free(res);
	free(t);
}
