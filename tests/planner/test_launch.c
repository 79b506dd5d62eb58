/* Launch geometry (DESIGN.md §5): default grids, explicit grids, folding and the error paths. */
#include <criterion/criterion.h>

#include <stdint.h>
#include <string.h>

#include "binding.h"
#include "err.h"
#include "ir.h"
#include "launch.h"

static const struct vy_launch_limits big = {{65535, 65535, 65535}};

static struct vy_launch launch_ok(const struct vy_program *p, const struct vy_launch_config *config,
	const struct vy_launch_limits *limits)
{
	struct vy_binding_plan *plan = NULL;
	struct vy_err err = {0};
	cr_assert_eq(vy_binding_plan_build(p, &plan, &err), 0, "%s", err.message);
	struct vy_launch l;
	int rc = vy_launch_compute(p, vy_launch_features_scan(p), plan, config, limits, &l, &err);
	cr_assert_eq(rc, 0, "launch failed: %s (fix: %s)", err.message, err.fix);
	vy_binding_plan_destroy(plan);
	return l;
}

static int launch_err(const struct vy_program *p, const struct vy_launch_config *config,
	const struct vy_launch_limits *limits, struct vy_err *err)
{
	struct vy_binding_plan *plan = NULL;
	cr_assert_eq(vy_binding_plan_build(p, &plan, err), 0, "%s", err->message);
	struct vy_launch l;
	int rc = vy_launch_compute(p, vy_launch_features_scan(p), plan, config, limits, &l, err);
	vy_binding_plan_destroy(plan);
	return rc;
}

/* in[1000] read-only, out[100] output: the outputs decide the grid unless told otherwise. */
static struct vy_program *wide_input_program(uint32_t wx)
{
	struct vy_program *p = vy_program_create("wide", wx, 1, 1);
	vy_program_add_buffer(p, "in", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 1000);
	vy_program_add_buffer(p, "out", 1, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 100)->output = true;
	return p;
}

static struct vy_program *output_only(uint32_t wx, uint32_t count)
{
	struct vy_program *p = vy_program_create("out", wx, 1, 1);
	vy_program_add_buffer(p, "out", 0, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, count)->output = true;
	return p;
}

Test(launch, default_grid_covers_the_largest_output)
{
	struct vy_program *p = wide_input_program(64);
	struct vy_launch l = launch_ok(p, NULL, &big);
	cr_assert_eq(l.grid[0], 2);
	cr_assert_eq(l.grid[1], 1);
	cr_assert_eq(l.grid[2], 1);
	cr_assert_eq(l.workgroups[0], 2);
	cr_assert_eq(l.workgroups[1], 1);
	cr_assert_eq(l.workgroups[2], 1);
	cr_assert_not(l.folded);
	cr_assert_eq(l.logical_workgroups, 2);
	cr_assert_eq(l.invocations, 128);
	vy_program_destroy(p);
}

Test(launch, default_grid_uses_all_buffers_when_atomics_are_used)
{
	struct vy_program *p = wide_input_program(64);
	vy_program_add_buffer(p, "hits", 2, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 1);
	struct vy_expr *add =
		vy_ir_atomic(p, VY_ATOMIC_ADD, "hits", vy_ir_u32(p, 0), vy_ir_u32(p, 1));
	vy_program_set_entry(p, vy_ir_seq(p, vy_ir_let(p, "old", add), NULL));
	cr_assert_eq(vy_launch_features_scan(p), VY_LAUNCH_USES_ATOMICS);
	struct vy_launch l = launch_ok(p, NULL, &big);
	cr_assert_eq(l.grid[0], 16, "1000 elements / 64 rounded up, got %u", l.grid[0]);
	cr_assert_eq(l.invocations, 1024);
	vy_program_destroy(p);
}

Test(launch, default_grid_uses_all_buffers_when_workgroup_memory_is_used)
{
	struct vy_program *p = wide_input_program(64);
	vy_program_add_buffer(p, "tile", 0, VY_ACCESS_WORKGROUP, VY_TYPE_U32, 5000);
	struct vy_node *store = vy_ir_store(p, "tile", vy_ir_lid(p, 0), vy_ir_u32(p, 1));
	vy_program_set_entry(p, vy_ir_seq(p, store, vy_ir_barrier(p, VY_ORDER_SEQ_CST), NULL));
	cr_assert_eq(vy_launch_features_scan(p), VY_LAUNCH_USES_WORKGROUP_MEMORY);
	struct vy_launch l = launch_ok(p, NULL, &big);
	/* The workgroup buffer's own count never sizes the grid. */
	cr_assert_eq(l.grid[0], 16, "got %u", l.grid[0]);
	vy_program_destroy(p);
}

Test(launch, default_grid_uses_all_buffers_when_subgroups_are_used)
{
	struct vy_program *p = wide_input_program(64);
	struct vy_expr *sum =
		vy_ir_subgroup_reduce(p, VY_REDUCE_ADD, vy_ir_load(p, "in", vy_ir_gid(p, 0)));
	struct vy_block then_body = vy_ir_seq(p, vy_ir_let(p, "s", sum), NULL);
	struct vy_node *branch = vy_ir_if(p, vy_ir_bool(p, true), then_body, vy_ir_seq(p, NULL));
	vy_program_set_entry(p, vy_ir_seq(p, branch, NULL));
	cr_assert_eq(vy_launch_features_scan(p), VY_LAUNCH_USES_SUBGROUPS);
	struct vy_launch l = launch_ok(p, NULL, &big);
	cr_assert_eq(l.grid[0], 16, "got %u", l.grid[0]);
	vy_program_destroy(p);
}

Test(launch, default_grid_uses_all_buffers_when_there_is_no_output)
{
	struct vy_program *p = vy_program_create("no_out", 64, 1, 1);
	vy_program_add_buffer(p, "a", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 300);
	vy_program_add_buffer(p, "u", 1, VY_ACCESS_UNIFORM, VY_TYPE_U32, 10);
	vy_program_add_buffer(p, "tile", 2, VY_ACCESS_WORKGROUP, VY_TYPE_U32, 4096);
	struct vy_launch l = launch_ok(p, NULL, &big);
	cr_assert_eq(l.grid[0], 5, "300 / 64 rounded up, got %u", l.grid[0]);
	vy_program_destroy(p);
}

Test(launch, live_out_buffer_counts_as_an_output)
{
	struct vy_program *p = wide_input_program(64);
	p->buffers[0].live_out = true;
	struct vy_launch l = launch_ok(p, NULL, &big);
	cr_assert_eq(l.grid[0], 16, "got %u", l.grid[0]);
	vy_program_destroy(p);
}

Test(launch, features_scan_sees_nested_nodes_and_ignores_plain_programs)
{
	struct vy_program *p = wide_input_program(64);
	vy_program_add_buffer(p, "tile", 2, VY_ACCESS_WORKGROUP, VY_TYPE_U32, 64);
	/* A declared but untouched workgroup buffer, and `len` of it, share nothing. */
	struct vy_node *copy =
		vy_ir_store(p, "out", vy_ir_var(p, "i"), vy_ir_load(p, "in", vy_ir_var(p, "i")));
	struct vy_node *loop =
		vy_ir_loop(p, "i", vy_ir_u32(p, 0), vy_ir_len(p, "tile"), vy_ir_seq(p, copy, NULL));
	vy_program_set_entry(p, vy_ir_seq(p, loop, NULL));
	cr_assert_eq(vy_launch_features_scan(p), 0);

	struct vy_expr *mixed = vy_ir_binary(
		p, VY_BIN_ADD, vy_ir_load(p, "tile", vy_ir_u32(p, 1)), vy_ir_subgroup_lane(p));
	struct vy_node *deep = vy_ir_store(p, "out", vy_ir_u32(p, 0), mixed);
	struct vy_node *region = vy_ir_region(p, "gen", vy_ir_seq(p, deep, NULL));
	vy_program_set_entry(p, vy_ir_seq(p, vy_ir_block(p, vy_ir_seq(p, region, NULL)), NULL));
	cr_assert_eq(vy_launch_features_scan(p),
		VY_LAUNCH_USES_WORKGROUP_MEMORY | VY_LAUNCH_USES_SUBGROUPS);

	struct vy_expr *cas =
		vy_ir_atomic_cas(p, "out", vy_ir_u32(p, 0), vy_ir_u32(p, 0), vy_ir_u32(p, 1));
	struct vy_block else_body = vy_ir_seq(p, vy_ir_let(p, "v", cas), NULL);
	struct vy_node *branch = vy_ir_if(p, vy_ir_bool(p, false), vy_ir_seq(p, NULL), else_body);
	vy_program_set_entry(p, vy_ir_seq(p, branch, NULL));
	cr_assert_eq(vy_launch_features_scan(p), VY_LAUNCH_USES_ATOMICS);
	vy_program_destroy(p);
}

Test(launch, default_grid_rounds_up)
{
	struct {
		uint32_t count;
		uint32_t wx;
		uint32_t want;
	} cases[] = {
		{64, 64, 1},
		{65, 64, 2},
		{128, 64, 2},
		{1, 256, 1},
		{1000, 1, 1000},
		{UINT32_MAX, 64, 67108864},
		{UINT32_MAX, 1, UINT32_MAX},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vy_program *p = output_only(cases[i].wx, cases[i].count);
		struct vy_launch l = launch_ok(p, NULL, NULL);
		cr_assert_eq(l.grid[0], cases[i].want, "count %u / %u: got %u", cases[i].count,
			cases[i].wx, l.grid[0]);
		vy_program_destroy(p);
	}
}

Test(launch, runtime_sized_output_without_input_runs_one_workgroup)
{
	struct vy_program *p = output_only(64, 0);
	struct vy_launch l = launch_ok(p, NULL, &big);
	cr_assert_eq(l.grid[0], 1);
	cr_assert_eq(l.invocations, 64);
	vy_program_destroy(p);
}

Test(launch, count_zero_buffer_sizes_the_grid_from_its_input)
{
	static uint8_t data[4000];
	struct vy_program *p = vy_program_create("dyn", 64, 1, 1);
	vy_program_add_buffer(p, "acc", 0, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 0);
	struct vy_bytes in[] = {{data, sizeof(data)}};
	struct vy_binding_plan *plan = NULL;
	struct vy_err err = {0};
	cr_assert_eq(vy_binding_plan_build_for_inputs(p, in, 1, &plan, &err), 0, "%s", err.message);
	struct vy_launch l;
	cr_assert_eq(vy_launch_compute(p, 0, plan, NULL, &big, &l, &err), 0, "%s", err.message);
	cr_assert_eq(l.grid[0], 16, "1000 elements / 64 rounded up, got %u", l.grid[0]);
	vy_binding_plan_destroy(plan);
	vy_program_destroy(p);
}

Test(launch, explicit_grid_is_used_as_given)
{
	struct vy_program *p = vy_program_create("tiles", 8, 8, 1);
	vy_program_add_buffer(p, "out", 0, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 10)->output = true;
	struct vy_launch_config config = {.grid = {3, 4, 5}};
	struct vy_launch l = launch_ok(p, &config, &big);
	cr_assert_eq(l.grid[0], 3);
	cr_assert_eq(l.grid[1], 4);
	cr_assert_eq(l.grid[2], 5);
	cr_assert_eq(l.workgroups[0], 3);
	cr_assert_eq(l.workgroups[1], 4);
	cr_assert_eq(l.workgroups[2], 5);
	cr_assert_not(l.folded);
	cr_assert_eq(l.logical_workgroups, 60);
	cr_assert_eq(l.invocations, 60 * 64);
	vy_program_destroy(p);
}

Test(launch, workgroup_size_override_replaces_the_programs)
{
	struct vy_program *p = output_only(64, 1000);
	struct vy_launch_config config = {.workgroup_size = {256, 1, 1}};
	struct vy_launch l = launch_ok(p, &config, &big);
	cr_assert_eq(l.workgroup_size[0], 256);
	cr_assert_eq(l.grid[0], 4);
	cr_assert_eq(l.invocations, 1024);
	vy_program_destroy(p);
}

Test(launch, two_dimensional_workgroup_without_grid_fails_with_its_fix)
{
	struct vy_program *p = vy_program_create("tiles", 8, 8, 1);
	vy_program_add_buffer(p, "out", 0, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 64)->output = true;
	struct vy_err err = {0};
	cr_assert_eq(launch_err(p, NULL, &big, &err), VY_E_BAD_REQUEST);
	cr_assert(strstr(err.fix, "config.grid"), "fix: %s", err.fix);
	cr_assert(strstr(err.message, "[8, 8, 1]"), "got: %s", err.message);

	/* The same through an override with a z axis. */
	struct vy_program *q = output_only(64, 64);
	struct vy_launch_config config = {.workgroup_size = {4, 1, 4}};
	vy_err_clear(&err);
	cr_assert_eq(launch_err(q, &config, &big, &err), VY_E_BAD_REQUEST);
	cr_assert(strstr(err.fix, "config.grid"), "fix: %s", err.fix);
	vy_program_destroy(p);
	vy_program_destroy(q);
}

Test(launch, zero_axis_in_grid_or_override_is_rejected)
{
	struct vy_program *p = output_only(64, 64);
	struct vy_err err = {0};
	struct vy_launch_config grid = {.grid = {4, 0, 1}};
	cr_assert_eq(launch_err(p, &grid, &big, &err), VY_E_BAD_REQUEST);
	cr_assert_str_eq(err.at, "config.grid");
	struct vy_launch_config wg = {.workgroup_size = {64, 0, 1}};
	vy_err_clear(&err);
	cr_assert_eq(launch_err(p, &wg, &big, &err), VY_E_BAD_REQUEST);
	cr_assert_str_eq(err.at, "config.workgroup_size");
	vy_program_destroy(p);
}

static void assert_fold_covers(
	const struct vy_launch *l, uint64_t needed, const struct vy_launch_limits *lim)
{
	uint64_t covered = (uint64_t)l->workgroups[0] * l->workgroups[1] * l->workgroups[2];
	cr_assert(covered >= needed, "%u x %u x %u covers %llu < %llu", l->workgroups[0],
		l->workgroups[1], l->workgroups[2], (unsigned long long)covered,
		(unsigned long long)needed);
	for (int i = 0; i < 3; i++) {
		cr_assert(l->workgroups[i] >= 1 && l->workgroups[i] <= lim->max_workgroup_count[i],
			"axis %d is %u", i, l->workgroups[i]);
	}
	/* Each rounding step idles less than one row per slice. */
	uint64_t bound = (uint64_t)l->workgroups[2] * (l->workgroups[1] + 1);
	cr_assert(covered - needed < bound, "tail %llu", (unsigned long long)(covered - needed));
	cr_assert_eq(l->logical_workgroups, needed);
	cr_assert(l->folded);
}

Test(launch, grid_past_the_x_limit_folds_into_y)
{
	struct vy_program *p = output_only(64, 64);
	struct vy_launch_config config = {.grid = {100000, 1, 1}};
	struct vy_launch l = launch_ok(p, &config, &big);
	assert_fold_covers(&l, 100000, &big);
	cr_assert_eq(l.workgroups[0], 50000);
	cr_assert_eq(l.workgroups[1], 2);
	cr_assert_eq(l.workgroups[2], 1);
	cr_assert_eq(l.grid[0], 100000);
	cr_assert_eq(l.invocations, 6400000);
	vy_program_destroy(p);
}

Test(launch, default_grid_past_the_x_limit_folds_too)
{
	struct vy_program *p = output_only(64, 100000 * 64 + 1);
	struct vy_launch l = launch_ok(p, NULL, &big);
	assert_fold_covers(&l, 100001, &big);
	vy_program_destroy(p);
}

Test(launch, grid_folds_into_z_past_a_small_limit)
{
	struct vy_launch_limits seven = {{7, 7, 7}};
	struct vy_program *p = output_only(1, 300);
	struct vy_launch l = launch_ok(p, NULL, &seven);
	assert_fold_covers(&l, 300, &seven);
	cr_assert(l.workgroups[2] > 1, "z is %u", l.workgroups[2]);

	struct vy_program *q = output_only(1, 343);
	l = launch_ok(q, NULL, &seven);
	assert_fold_covers(&l, 343, &seven);
	cr_assert_eq(l.workgroups[0], 7);
	cr_assert_eq(l.workgroups[1], 7);
	cr_assert_eq(l.workgroups[2], 7);
	vy_program_destroy(p);
	vy_program_destroy(q);
}

Test(launch, grid_beyond_every_axis_limit_fails_naming_the_sizes)
{
	struct vy_launch_limits seven = {{7, 7, 7}};
	struct vy_program *p = output_only(1, 344);
	struct vy_err err = {0};
	cr_assert_eq(launch_err(p, NULL, &seven, &err), VY_E_BAD_REQUEST);
	cr_assert(strstr(err.message, "344 workgroups"), "got: %s", err.message);
	cr_assert(strstr(err.message, "[7, 7, 7]"), "got: %s", err.message);
	cr_assert(strstr(err.fix, "at most 343 workgroups"), "fix: %s", err.fix);
	vy_program_destroy(p);
}

Test(launch, a_grid_at_each_axis_limit_runs_unfolded_and_one_more_fails)
{
	struct vy_launch_limits lim = {{7, 5, 3}};
	struct vy_program *p = output_only(1, 7);
	struct vy_launch l = launch_ok(p, NULL, &lim);
	cr_assert_not(l.folded);
	cr_assert_eq(l.workgroups[0], 7);
	cr_assert_eq(l.workgroups[1], 1);
	cr_assert_eq(l.workgroups[2], 1);

	struct vy_launch_config at = {.grid = {7, 5, 3}};
	l = launch_ok(p, &at, &lim);
	cr_assert_not(l.folded);
	cr_assert_eq(l.workgroups[0], 7);
	cr_assert_eq(l.workgroups[1], 5);
	cr_assert_eq(l.workgroups[2], 3);

	for (int axis = 0; axis < 3; axis++) {
		struct vy_launch_config past = at;
		past.grid[axis]++;
		struct vy_err err = {0};
		cr_assert_eq(launch_err(p, &past, &lim, &err), VY_E_BAD_REQUEST, "axis %d", axis);
		cr_assert(strstr(err.message, "[7, 5, 3]"), "got: %s", err.message);
	}
	vy_program_destroy(p);
}

Test(launch, multi_axis_grid_past_an_axis_limit_fails)
{
	struct vy_program *p = output_only(64, 64);
	struct vy_launch_config config = {.grid = {70000, 2, 1}};
	struct vy_err err = {0};
	cr_assert_eq(launch_err(p, &config, &big, &err), VY_E_BAD_REQUEST);
	cr_assert(strstr(err.message, "[70000, 2, 1]"), "got: %s", err.message);
	cr_assert(strstr(err.message, "[65535, 65535, 65535]"), "got: %s", err.message);
	vy_program_destroy(p);
}

Test(launch, overflowing_grid_is_an_error_naming_the_sizes)
{
	struct vy_program *p = output_only(1, 64);
	struct vy_launch_config workgroups = {.grid = {UINT32_MAX, UINT32_MAX, 2}};
	struct vy_err err = {0};
	cr_assert_eq(launch_err(p, &workgroups, NULL, &err), VY_E_BAD_REQUEST);
	cr_assert(strstr(err.message, "[4294967295, 4294967295, 2]"), "got: %s", err.message);
	cr_assert(strstr(err.message, "2^64"), "got: %s", err.message);

	/* The workgroup count fits in 64 bits; the invocation count does not. */
	struct vy_launch_config invocations = {
		.grid = {UINT32_MAX, UINT32_MAX, 1}, .workgroup_size = {2, 1, 1}};
	vy_err_clear(&err);
	cr_assert_eq(launch_err(p, &invocations, NULL, &err), VY_E_BAD_REQUEST);
	cr_assert(strstr(err.message, "[2, 1, 1]"), "got: %s", err.message);
	vy_program_destroy(p);
}
