/*
 * Launch geometry (DESIGN.md §5): how many workgroups one dispatch runs, and how that count is
 * laid out on a device whose grid has a per-axis limit. Backends and the reference interpreter
 * both call this, so every backend runs the same invocations for the same request.
 *
 * The logical grid:
 *   - config.grid when the request gives one (every axis >= 1);
 *   - otherwise [ceil(n / workgroup_size.x), 1, 1], where n is the largest element count among
 *     the buffers with an output index, or among all non-workgroup buffers when there is no
 *     such buffer or the program uses atomics, workgroup memory or subgroup operations (then
 *     invocations can matter beyond the outputs' extent); n is at least 1. A workgroup size with
 *     y or z above 1 has no such default: the request must give config.grid.
 *
 * Folding: a 1-D logical grid longer than the device's x limit is spread over y and then z, so
 * that the dispatched x * y * z covers it with every axis within its limit. The generated code
 * then computes the linear workgroup id, id.x + id.y * workgroups[0] + id.z * workgroups[0] *
 * workgroups[1], treats it as the x workgroup id of the logical grid (so `gid` stays the linear
 * id), and lets workgroups whose linear id reaches logical_workgroups do nothing. A logical grid
 * with y or z above 1 is dispatched as it is and must fit the limit on every axis.
 *
 * Thread-safety: pure functions of their arguments.
 */
#ifndef VY_PLANNER_LAUNCH_H
#define VY_PLANNER_LAUNCH_H

#include <stdbool.h>
#include <stdint.h>

#include "binding.h"
#include "ir.h"

struct vy_err;

/* What a program does across invocations; a bit set returned by vy_launch_features_scan. */
enum vy_launch_feature {
	VY_LAUNCH_USES_ATOMICS = 1u << 0,
	/* A load, store or atomic on a workgroup buffer; `len` of one shares nothing. */
	VY_LAUNCH_USES_WORKGROUP_MEMORY = 1u << 1,
	/* Any subgroup expression (reduce, shuffle, ballot, lane, size). */
	VY_LAUNCH_USES_SUBGROUPS = 1u << 2,
};

/*
 * Walk the program's entry and return its vy_launch_feature bits. The program must have passed
 * validation, whose depth limits bound this walk's recursion. Cheap, but it visits every node:
 * compute it once per program (with the plan) rather than once per dispatch.
 */
unsigned vy_launch_features_scan(const struct vy_program *program);

/* The dispatch request's part: each field all zero when absent. */
struct vy_launch_config {
	uint32_t grid[3];           /* config.grid, in workgroups */
	uint32_t workgroup_size[3]; /* config.workgroup_size, replacing the program's */
};

/* The device's maxComputeWorkGroupCount; every axis >= 1. */
struct vy_launch_limits {
	uint32_t max_workgroup_count[3];
};

struct vy_launch {
	uint32_t workgroup_size[3];  /* the program's, or the override */
	uint32_t grid[3];            /* the logical grid, in workgroups */
	uint32_t workgroups[3];      /* what to dispatch: grid itself unless folded */
	bool folded;                 /* workgroups differs from grid; see the folding rule above */
	uint64_t logical_workgroups; /* grid[0] * grid[1] * grid[2] */
	uint64_t invocations;        /* logical_workgroups * the workgroup size's product */
};

/*
 * Compute the launch of `program` with `plan` (built for this dispatch's inputs, so count-0
 * buffers carry their element counts) and `features` from vy_launch_features_scan. `config` may
 * be NULL (no grid, no override); `limits` may be NULL (only the range of uint32_t limits an
 * axis). Fills *out and returns 0, or returns VY_E_BAD_REQUEST, filling `err` when given, for: a
 * grid or workgroup-size override with a zero axis; a workgroup size with y or z above 1 and no
 * grid; a grid whose workgroup or invocation count overflows 64 bits; a grid the device's limits
 * cannot hold even folded. The messages name the sizes involved.
 */
int vy_launch_compute(const struct vy_program *program, unsigned features,
	const struct vy_binding_plan *plan, const struct vy_launch_config *config,
	const struct vy_launch_limits *limits, struct vy_launch *out, struct vy_err *err);

#endif
