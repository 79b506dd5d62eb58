/*
 * The vyre IR programs vybench sends to vyred, built with libvyre's builders and checked
 * locally before they are returned. Each mirrors a hand-written kernel of raw_vulkan.c (same
 * algorithm, same workgroup size), so their ratio shows what code generation costs.
 *
 * Every function returns a new program (free it with vy_program_free) or NULL with `err` filled
 * (VY_ERROR_INVALID_ARGUMENT or VY_ERROR_INVALID_PROGRAM: a defect of this file).
 *
 * Thread-safety: a returned program is checked, so any number of clients may send it at once.
 */
#ifndef VY_BENCH_PROGRAMS_H
#define VY_BENCH_PROGRAMS_H

#include <stdbool.h>
#include <stdint.h>

#include <vy/vyre.h>

/* y[i] = x[i] + add over n u32 (inputs: x; outputs: y), one workgroup of n. */
struct vy_program *vy_bench_prog_tiny(uint32_t n, uint32_t add, struct vy_error *err);
/* y[i] = x[i] + y[i] over n f32 (inputs: x, y; outputs: y), workgroups of 256. */
struct vy_program *vy_bench_prog_stream(uint32_t n, struct vy_error *err);
/*
 * out[i] = x[i * (len(x) / 64)] for i < 64 (inputs: x of any length; outputs: out, 64 u32): it
 * reads a sample across its input, so a transfer figure can check the bytes arrived.
 */
struct vy_program *vy_bench_prog_probe(struct vy_error *err);
/*
 * s[0] = the wrapping u32 sum of x (inputs: x; outputs: s). Run it on `groups` workgroups of
 * 256 (config.grid); each invocation sums `per` elements `groups * 256` apart, a shared-memory
 * tree sums each workgroup, and one atomic add per workgroup makes the total.
 */
struct vy_program *vy_bench_prog_reduce(uint32_t groups, uint32_t per, struct vy_error *err);
/*
 * y[i] = op(x[i]) over n f32 (unary `op`; inputs: x, y) or y[i] = op(a[i], b[i]) (binary; inputs:
 * a, b, y), workgroups of 256. y is read_write: a resident y that is also its own outputs_to
 * target is written in place, as PyTorch's out= writes its tensor, where a write_only y would be
 * zero-filled before every dispatch (protocol.md, dispatch).
 */
struct vy_program *vy_bench_prog_math(
	const char *op, bool binary, uint32_t n, struct vy_error *err);
/* C = A * B over n x n row-major f32 (inputs: a, b; outputs: c) with 16 x 16 tiles in
 * workgroup memory; run it on n/16 x n/16 workgroups (config.grid). */
struct vy_program *vy_bench_prog_matmul(uint32_t n, struct vy_error *err);

#endif
