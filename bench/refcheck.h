/*
 * The reference backend (backend/reference, DESIGN.md §4) in the bench's own process: the CPU
 * interpreter whose bytes every backend must give. A figure group runs a small slice of its work
 * through it, outside its timed runs, and compares vyred's bytes for that slice with these.
 *
 * The program comes as JSON text (libvyre's vy_program_json), so this interface uses no IR type
 * and can be called from code that includes libvyre's <vy/vyre.h>.
 *
 * Errors: 0, or a negative VY_E_* code with `err` filled (the program did not decode or validate,
 * the backend failed); VY_BENCH_WRONG when the program's outputs are not the one output of
 * `out_len` bytes the caller expects.
 *
 * Thread-safety: reentrant; each call opens a backend of its own.
 */
#ifndef VY_BENCH_REFCHECK_H
#define VY_BENCH_REFCHECK_H

#include <stddef.h>

#include "err.h"

/* Most inputs of one program run here. */
#define VY_BENCH_REF_INPUTS_MAX 8u

/*
 * Run the program `json` on the reference backend with `n_inputs` inputs (inputs[i], lens[i]
 * bytes, in the program's input order); its single output's `out_len` bytes into `out`.
 */
int vy_bench_reference_run(const char *json, const void *const *inputs, const size_t *lens,
	size_t n_inputs, void *out, size_t out_len, struct vy_err *err);

#endif
