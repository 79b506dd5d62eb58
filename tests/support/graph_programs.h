/*
 * Programs for the tests of graphs (tests/backend/test_graph_run.c, tests/daemon/test_graphs.c),
 * built with the IR builders: each over VY_TEST_GRAPH_N u32 elements in workgroups of 16.
 */
#ifndef VY_TESTS_SUPPORT_GRAPH_PROGRAMS_H
#define VY_TESTS_SUPPORT_GRAPH_PROGRAMS_H

#include <stdint.h>

#include "ir.h"

#define VY_TEST_GRAPH_N 64

/* y[gid] = x[gid] * k + gid. */
struct vy_program *vy_test_graph_affine(uint32_t k);
/* buf[gid] *= 2, then after grid_sync o[gid] = buf[N - 1 - gid]: other workgroups' elements. */
struct vy_program *vy_test_graph_mirror(void);
/* a[gid] += b[gid]. */
struct vy_program *vy_test_graph_accumulate(void);
/* y[gid] = x[gid] / 0 as i32: every invocation traps int_div_zero at entry[0].store. */
struct vy_program *vy_test_graph_divide_by_zero(void);

/* y[gid] = the count of a loop from 0 to min(x[gid % N], 16000000) over the grid the config gives:
 * as long as x and the grid say. */
struct vy_program *vy_test_graph_count_to_x(void);

/*
 * The input and the expected results of the four-step graph both graph suites run: affine(3)
 * into a temp, mirror of that temp into a resident buffer, accumulate the input into it, then
 * affine(5) of it into the output. Fills x (the input), r (the resident buffer after the run)
 * and y (the output), VY_TEST_GRAPH_N words each.
 */
void vy_test_graph_four_steps(uint32_t *x, uint32_t *r, uint32_t *y);

#endif
