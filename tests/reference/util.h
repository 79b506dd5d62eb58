/*
 * Helpers of the reference backend's tests: a backend per test, dispatches of small programs on
 * word arrays, and one-operation programs that apply an operation element by element, so that a
 * test lists witness values and the results it expects, computed by hand.
 */
#ifndef VY_TESTS_REFERENCE_UTIL_H
#define VY_TESTS_REFERENCE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "err.h"
#include "ir.h"

/*
 * Shorthands for building programs in tests; each expects the program under construction in a
 * variable named `p`.
 */
#define U32(v) vy_ir_u32(p, (v))
#define I32(v) vy_ir_i32(p, (v))
#define F32(v) vy_ir_f32(p, (v))
#define BOOL(v) vy_ir_bool(p, (v))
#define VAR(name) vy_ir_var(p, (name))
#define GID(axis) vy_ir_gid(p, (axis))
#define LID(axis) vy_ir_lid(p, (axis))
#define WGID(axis) vy_ir_wgid(p, (axis))
#define LEN(buf) vy_ir_len(p, (buf))
#define LOAD(buf, i) vy_ir_load(p, (buf), (i))
#define BIN(op, a, b) vy_ir_binary(p, VY_BIN_##op, (a), (b))
#define UN(op, a) vy_ir_unary(p, VY_UN_##op, (a))
#define CAST(t, a) vy_ir_cast(p, VY_TYPE_##t, (a))
#define ATOMIC(op, buf, i, v) vy_ir_atomic(p, VY_ATOMIC_##op, (buf), (i), (v))
#define LET(name, v) vy_ir_let(p, (name), (v))
#define ASSIGN(name, v) vy_ir_assign(p, (name), (v))
#define STORE(buf, i, v) vy_ir_store(p, (buf), (i), (v))
#define IF(c, t, e) vy_ir_if(p, (c), (t), (e))
#define LOOP(var, from, to, body) vy_ir_loop(p, (var), (from), (to), (body))
#define RETURN() vy_ir_return(p)
#define BARRIER() vy_ir_barrier(p, VY_ORDER_SEQ_CST)
#define SEQ(...) vy_ir_seq(p, __VA_ARGS__, NULL)
#define EMPTY vy_ir_seq(p, NULL)
#define BUF(name, binding, access, type, count)                                                    \
	vy_program_add_buffer(p, (name), (binding), VY_ACCESS_##access, VY_TYPE_##type, (count))

/* A reference backend with the given subgroup size (0: default); the test fails without one. */
struct vy_backend *ref_backend(uint32_t subgroup_size);

/* The result of one dispatch: its code, error and outputs (free with ref_result_finish). */
struct ref_result {
	int rc;
	struct vy_err err;
	struct vy_outputs out;
};

void ref_result_finish(struct ref_result *r);

/* Word `k` of output `i`; the test fails when it does not exist. */
uint32_t ref_word(const struct ref_result *r, size_t i, size_t k);
/* Words in output `i`. */
size_t ref_words(const struct ref_result *r, size_t i);

/* Input views of word arrays: ref_in(w, n). */
struct vy_bytes ref_in(const uint32_t *words, size_t n);

/* Dispatch on a fresh default backend (subgroup size 8); `config` may be NULL. */
struct ref_result ref_dispatch(struct vy_program *p, const struct vy_bytes *inputs, size_t n_inputs,
	const struct vy_dispatch_config *config);
/* Dispatch on the given backend. */
struct ref_result ref_dispatch_on(struct vy_backend *b, struct vy_program *p,
	const struct vy_bytes *inputs, size_t n_inputs, const struct vy_dispatch_config *config);

/* Bits of a float and back. */
uint32_t fbits(float f);
float ffrom(uint32_t bits);

/*
 * Apply one operation to n elements: out[k] = op(a[k], b[k]) with a of type `ta`, b of type `tb`
 * and a result of type `tr`. Returns the dispatch result; its output 0 holds the n results.
 */
struct ref_result ref_binary(enum vy_binop op, enum vy_type ta, enum vy_type tb, enum vy_type tr,
	const uint32_t *a, const uint32_t *b, size_t n);
struct ref_result ref_unary(
	enum vy_unop op, enum vy_type ta, enum vy_type tr, const uint32_t *a, size_t n);
struct ref_result ref_cast(enum vy_type from, enum vy_type to, const uint32_t *a, size_t n);
struct ref_result ref_bitcast(enum vy_type from, enum vy_type to, const uint32_t *a, size_t n);
struct ref_result ref_fma(const uint32_t *a, const uint32_t *b, const uint32_t *c, size_t n);

/* Assert that output 0 of `r` (which must have succeeded) holds `want[0..n)`; `what` names the
 * operation in the failure message. */
void ref_expect(const struct ref_result *r, const uint32_t *want, size_t n, const char *what);

/* Assert that `r` failed with `code` and, when `at` is not NULL, at that path. */
void ref_expect_error(const struct ref_result *r, int code, const char *at);

#endif
