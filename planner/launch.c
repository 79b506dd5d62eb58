/*
 * Launch geometry: the logical workgroup grid of a dispatch, and its folding onto the device's
 * per-axis grid limit. Every product goes through a checked multiply, because the grid comes from
 * the request and the workgroup size may too; an overflow is an error that names the sizes, never
 * a wrapped count that would run the wrong number of invocations.
 */
#include "launch.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "err.h"

/*
 * A node's children sit at most VY_IR_MAX_NESTING levels down, each expression at most
 * VY_IR_MAX_EXPR_DEPTH below its node; the slack covers either side counting from 0 or 1.
 */
#define MAX_WALK_DEPTH (VY_IR_MAX_NESTING + VY_IR_MAX_EXPR_DEPTH + 4)

struct scan {
	const struct vy_program *program;
	bool has_workgroup_buffers;
	unsigned features;
};

static void note_buffer(struct scan *s, const char *name)
{
	if (!s->has_workgroup_buffers || !name) {
		return;
	}
	const struct vy_buffer *b = vy_program_find_buffer(s->program, name);
	if (b && b->access == VY_ACCESS_WORKGROUP) {
		s->features |= VY_LAUNCH_USES_WORKGROUP_MEMORY;
	}
}

static void scan_expr(struct scan *s, const struct vy_expr *e, unsigned depth)
{
	if (!e) {
		return;
	}
	assert(depth <= MAX_WALK_DEPTH);
	switch (e->kind) {
	case VY_EXPR_ATOMIC:
		s->features |= VY_LAUNCH_USES_ATOMICS;
		note_buffer(s, e->name);
		break;
	case VY_EXPR_LOAD:
		note_buffer(s, e->name);
		break;
	case VY_EXPR_SUBGROUP_REDUCE:
	case VY_EXPR_SUBGROUP_SHUFFLE:
	case VY_EXPR_SUBGROUP_BALLOT:
	case VY_EXPR_SUBGROUP_LANE:
	case VY_EXPR_SUBGROUP_SIZE:
		s->features |= VY_LAUNCH_USES_SUBGROUPS;
		break;
	default:
		break;
	}
	assert(e->nargs <= 3);
	for (uint32_t i = 0; i < e->nargs; i++) {
		scan_expr(s, e->args[i], depth + 1);
	}
}

static void scan_block(struct scan *s, const struct vy_block *block, unsigned depth)
{
	assert(depth <= MAX_WALK_DEPTH);
	for (uint32_t i = 0; i < block->len; i++) {
		const struct vy_node *n = block->items[i];
		if (n->kind == VY_NODE_STORE) {
			note_buffer(s, n->name);
		}
		scan_expr(s, n->args[0], depth + 1);
		scan_expr(s, n->args[1], depth + 1);
		scan_block(s, &n->body, depth + 1);
		scan_block(s, &n->orelse, depth + 1);
	}
}

unsigned vy_launch_features_scan(const struct vy_program *program)
{
	struct scan s = {.program = program};
	for (uint32_t i = 0; i < program->n_buffers; i++) {
		if (program->buffers[i].access == VY_ACCESS_WORKGROUP) {
			s.has_workgroup_buffers = true;
		}
	}
	scan_block(&s, &program->entry, 0);
	return s.features;
}

static bool mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
	if (a != 0 && b > UINT64_MAX / a) {
		return false;
	}
	*out = a * b;
	return true;
}

static bool all_zero(const uint32_t v[3])
{
	return v[0] == 0 && v[1] == 0 && v[2] == 0;
}

static bool any_zero(const uint32_t v[3])
{
	return v[0] == 0 || v[1] == 0 || v[2] == 0;
}

#define DIMS "[%" PRIu32 ", %" PRIu32 ", %" PRIu32 "]"
#define DIMS_ARGS(v) (v)[0], (v)[1], (v)[2]

/* Largest element count among the buffers that decide the default grid; at least 1. */
static uint32_t default_extent(const struct vy_binding_plan *plan, unsigned features)
{
	unsigned cross =
		VY_LAUNCH_USES_ATOMICS | VY_LAUNCH_USES_WORKGROUP_MEMORY | VY_LAUNCH_USES_SUBGROUPS;
	bool all = plan->n_outputs == 0 || (features & cross) != 0;
	uint32_t n = 1;
	for (uint32_t i = 0; i < plan->n_bindings; i++) {
		const struct vy_binding *b = &plan->bindings[i];
		bool counts = all ? b->role != VY_ROLE_SHARED : b->output_index != VY_BINDING_NONE;
		if (counts && b->element_count > n) {
			n = b->element_count;
		}
	}
	return n;
}

/*
 * Spread `needed` workgroups over up to three axes within `lim`: the fewest z slices, then the
 * fewest rows of at most lim[0] per slice, then the fewest columns that still cover a slice.
 * Rounding up at each step leaves fewer than z * (y + 1) workgroups idle.
 */
static bool fold(uint64_t needed, const uint32_t lim[3], uint32_t out[3])
{
	uint64_t plane = (uint64_t)lim[0] * lim[1];
	uint64_t z = (needed + plane - 1) / plane;
	if (z > lim[2]) {
		return false;
	}
	uint64_t per_slice = (needed + z - 1) / z;
	uint64_t y = (per_slice + lim[0] - 1) / lim[0];
	uint64_t x = (per_slice + y - 1) / y;
	assert(x <= lim[0] && y <= lim[1] && x * y * z >= needed);
	out[0] = (uint32_t)x;
	out[1] = (uint32_t)y;
	out[2] = (uint32_t)z;
	return true;
}

int vy_launch_compute(const struct vy_program *program, unsigned features,
	const struct vy_binding_plan *plan, const struct vy_launch_config *config,
	const struct vy_launch_limits *limits, struct vy_launch *out, struct vy_err *err)
{
	assert(program && plan && out);
	memset(out, 0, sizeof(*out));
	char fix[VY_ERR_FIX_MAX];

	const uint32_t *wg = program->workgroup_size;
	if (config && !all_zero(config->workgroup_size)) {
		wg = config->workgroup_size;
		if (any_zero(wg)) {
			return vy_err_set(err, VY_E_BAD_REQUEST, "config.workgroup_size",
				"give every axis of config.workgroup_size as 1 or more",
				"config.workgroup_size " DIMS " has an axis of 0", DIMS_ARGS(wg));
		}
	}
	assert(!any_zero(wg));
	memcpy(out->workgroup_size, wg, sizeof(out->workgroup_size));

	/* Size errors point at config.grid only when the request gave one. */
	const char *grid_at = NULL;
	if (config && !all_zero(config->grid)) {
		grid_at = "config.grid";
		if (any_zero(config->grid)) {
			return vy_err_set(err, VY_E_BAD_REQUEST, "config.grid",
				"give every axis of config.grid as 1 or more",
				"config.grid " DIMS " has an axis of 0", DIMS_ARGS(config->grid));
		}
		memcpy(out->grid, config->grid, sizeof(out->grid));
	} else if (wg[1] > 1 || wg[2] > 1) {
		snprintf(fix, sizeof(fix),
			"pass config.grid [x, y, z] with the number of workgroups of " DIMS
			" on each axis",
			DIMS_ARGS(wg));
		return vy_err_set(err, VY_E_BAD_REQUEST, "config.grid", fix,
			"workgroup size " DIMS " spans more than one axis, so no grid "
			"follows from the buffer sizes",
			DIMS_ARGS(wg));
	} else {
		uint32_t n = default_extent(plan, features);
		/* Rounded up without n + wg - 1, which could wrap for n near UINT32_MAX. */
		out->grid[0] = n / wg[0] + (n % wg[0] != 0);
		out->grid[1] = 1;
		out->grid[2] = 1;
	}

	uint64_t rows = 0;
	uint64_t wg_invocations = 0;
	uint64_t per_wg_rows = 0;
	if (!mul_u64(out->grid[0], out->grid[1], &rows) ||
		!mul_u64(rows, out->grid[2], &out->logical_workgroups) ||
		!mul_u64(wg[0], wg[1], &per_wg_rows) ||
		!mul_u64(per_wg_rows, wg[2], &wg_invocations) ||
		!mul_u64(out->logical_workgroups, wg_invocations, &out->invocations)) {
		return vy_err_set(err, VY_E_BAD_REQUEST, grid_at,
			"split the work into several dispatches of smaller grids",
			"a grid of " DIMS " workgroups of " DIMS
			" invocations counts more than 2^64 invocations",
			DIMS_ARGS(out->grid), DIMS_ARGS(wg));
	}

	uint32_t lim[3] = {UINT32_MAX, UINT32_MAX, UINT32_MAX};
	if (limits) {
		memcpy(lim, limits->max_workgroup_count, sizeof(lim));
	}
	assert(!any_zero(lim));

	if (out->grid[1] == 1 && out->grid[2] == 1) {
		if (out->grid[0] <= lim[0]) {
			memcpy(out->workgroups, out->grid, sizeof(out->workgroups));
			return 0;
		}
		if (!fold(out->grid[0], lim, out->workgroups)) {
			uint64_t most = (uint64_t)lim[0] * lim[1];
			most = most > UINT64_MAX / lim[2] ? UINT64_MAX : most * lim[2];
			snprintf(fix, sizeof(fix),
				"split the work into dispatches of at most %" PRIu64
				" workgroups each",
				most);
			return vy_err_set(err, VY_E_BAD_REQUEST, grid_at, fix,
				"%" PRIu32 " workgroups do not fit the device's grid limit " DIMS
				" even folded over y and z",
				out->grid[0], DIMS_ARGS(lim));
		}
		out->folded = true;
		return 0;
	}

	if (out->grid[0] > lim[0] || out->grid[1] > lim[1] || out->grid[2] > lim[2]) {
		snprintf(fix, sizeof(fix),
			"keep each axis of config.grid within " DIMS
			", or pass a 1-D grid [n, 1, 1], which folds",
			DIMS_ARGS(lim));
		return vy_err_set(err, VY_E_BAD_REQUEST, "config.grid", fix,
			"grid " DIMS " exceeds the device's per-axis workgroup limit " DIMS,
			DIMS_ARGS(out->grid), DIMS_ARGS(lim));
	}
	memcpy(out->workgroups, out->grid, sizeof(out->workgroups));
	return 0;
}
