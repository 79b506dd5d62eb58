/*
 * Programs for the tests of graphs (graph_programs.h).
 */
#include "graph_programs.h"

#define N VY_TEST_GRAPH_N

/* y[gid] = x[gid] * k + gid over N u32 (workgroups of 16: four of them). */
struct vy_program *vy_test_graph_affine(uint32_t k)
{
	struct vy_program *p = vy_program_create("affine", 16, 1, 1);
	vy_program_add_buffer(p, "x", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, N);
	vy_program_add_buffer(p, "y", 1, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, N);
	struct vy_expr *x = vy_ir_load(p, "x", vy_ir_gid(p, 0));
	struct vy_expr *v = vy_ir_binary(
		p, VY_BIN_ADD, vy_ir_binary(p, VY_BIN_MUL, x, vy_ir_u32(p, k)), vy_ir_gid(p, 0));
	vy_program_set_entry(p, vy_ir_seq(p, vy_ir_store(p, "y", vy_ir_gid(p, 0), v), NULL));
	return p;
}

/* buf[gid] *= 2, then after grid_sync o[gid] = buf[N - 1 - gid]: other workgroups' elements. */
struct vy_program *vy_test_graph_mirror(void)
{
	struct vy_program *p = vy_program_create("mirror", 16, 1, 1);
	vy_program_add_buffer(p, "buf", 0, VY_ACCESS_READ_WRITE, VY_TYPE_U32, N);
	vy_program_add_buffer(p, "o", 1, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, N);
	struct vy_expr *twice =
		vy_ir_binary(p, VY_BIN_MUL, vy_ir_load(p, "buf", vy_ir_gid(p, 0)), vy_ir_u32(p, 2));
	struct vy_expr *other = vy_ir_binary(p, VY_BIN_SUB, vy_ir_u32(p, N - 1), vy_ir_gid(p, 0));
	vy_program_set_entry(p,
		vy_ir_seq(p, vy_ir_store(p, "buf", vy_ir_gid(p, 0), twice),
			vy_ir_barrier(p, VY_ORDER_GRID_SYNC),
			vy_ir_store(p, "o", vy_ir_gid(p, 0), vy_ir_load(p, "buf", other)), NULL));
	return p;
}

/* a[gid] += b[gid]. */
struct vy_program *vy_test_graph_accumulate(void)
{
	struct vy_program *p = vy_program_create("accumulate", 16, 1, 1);
	vy_program_add_buffer(p, "a", 0, VY_ACCESS_READ_WRITE, VY_TYPE_U32, N);
	vy_program_add_buffer(p, "b", 1, VY_ACCESS_READ_ONLY, VY_TYPE_U32, N);
	struct vy_expr *sum = vy_ir_binary(p, VY_BIN_ADD, vy_ir_load(p, "a", vy_ir_gid(p, 0)),
		vy_ir_load(p, "b", vy_ir_gid(p, 0)));
	vy_program_set_entry(p, vy_ir_seq(p, vy_ir_store(p, "a", vy_ir_gid(p, 0), sum), NULL));
	return p;
}

/* y[gid] = x[gid] / 0 as i32: every invocation traps int_div_zero at entry[0].store. */
struct vy_program *vy_test_graph_divide_by_zero(void)
{
	struct vy_program *p = vy_program_create("trap", 16, 1, 1);
	vy_program_add_buffer(p, "x", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, N);
	vy_program_add_buffer(p, "y", 1, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, N);
	struct vy_expr *q = vy_ir_binary(p, VY_BIN_DIV,
		vy_ir_cast(p, VY_TYPE_I32, vy_ir_load(p, "x", vy_ir_gid(p, 0))), vy_ir_i32(p, 0));
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_store(p, "y", vy_ir_gid(p, 0), vy_ir_cast(p, VY_TYPE_U32, q)),
			   NULL));
	return p;
}

/*
 * y[gid] = the count of a loop from 0 to min(x[gid % N], 16,000,000), over whatever grid the
 * step's config gives: every invocation runs its loop (loads wrap into x; stores past N are
 * dropped). A count of 0 is quick; a large one runs far longer than a second on any device
 * here, and stays below the default loop limit of 2^24 iterations.
 */
struct vy_program *vy_test_graph_count_to_x(void)
{
	struct vy_program *p = vy_program_create("count", 16, 1, 1);
	vy_program_add_buffer(p, "x", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, N);
	vy_program_add_buffer(p, "y", 1, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, N);
	struct vy_expr *at = vy_ir_binary(p, VY_BIN_BIT_AND, vy_ir_gid(p, 0), vy_ir_u32(p, N - 1));
	struct vy_expr *bound =
		vy_ir_binary(p, VY_BIN_MIN, vy_ir_load(p, "x", at), vy_ir_u32(p, 16000000));
	struct vy_node *count = vy_ir_assign(
		p, "n", vy_ir_binary(p, VY_BIN_ADD, vy_ir_var(p, "n"), vy_ir_u32(p, 1)));
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_let(p, "n", vy_ir_u32(p, 0)),
			   vy_ir_loop(p, "i", vy_ir_u32(p, 0), bound, vy_ir_seq(p, count, NULL)),
			   vy_ir_store(p, "y", vy_ir_gid(p, 0), vy_ir_var(p, "n")), NULL));
	return p;
}

void vy_test_graph_four_steps(uint32_t *x, uint32_t *r, uint32_t *y)
{
	for (uint32_t i = 0; i < N; i++) {
		x[i] = 1000u + 7u * i;
	}
	for (uint32_t i = 0; i < N; i++) {
		uint32_t j = N - 1 - i;
		r[i] = 2u * (x[j] * 3u + j) + x[i];
		y[i] = r[i] * 5u + i;
	}
}
