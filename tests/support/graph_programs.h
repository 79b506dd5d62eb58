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

#endif
