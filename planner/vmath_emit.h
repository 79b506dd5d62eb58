/*
 * Private to the math-library lowering (vmath*.c): the emitter that builds typed IR for the
 * expansions. An expansion receives its operand as a leaf (a variable or a literal, which may be
 * copied freely), builds expression trees in which every node is used once, and binds to a fresh
 * `let` each value it needs more than once. Every expression built here carries its result type.
 *
 * Thread-safety: an emitter belongs to one lowering call.
 */
#ifndef VY_PLANNER_VMATH_EMIT_H
#define VY_PLANNER_VMATH_EMIT_H

#include <stdint.h>

#include "ir.h"

struct vy__vm {
	struct vy_program *p;  /* borrowed: the program being lowered */
	const char *prefix;    /* names of new variables start with it */
	uint32_t counter;      /* next variable number */
	struct vy_node **lets; /* owned (malloc): lets to place before the current statement */
	uint32_t n_lets;
	uint32_t cap_lets;
	uint32_t depth;    /* nesting of the current statement, as the validator counts it */
	uint32_t branches; /* branches begun and not yet ended */
};

/* A literal of the type with these bits. */
struct vy_expr *vy__vm_lit(struct vy__vm *m, enum vy_type type, uint32_t bits);
/* Bind `value` to a new let placed before the current statement; returns a variable leaf. */
struct vy_expr *vy__vm_bind(struct vy__vm *m, struct vy_expr *value);
/*
 * A branch: the lets bound between vy__vm_branch_begin (which returns a mark) and
 * vy__vm_branch_end run only where the bool leaf `cond` holds, and end by assigning values[i] to
 * the variable leaves vars[i] (bound before the mark); after[i] receives the leaf that holds the
 * result from then on. Work that only rare operands need is then skipped by the others, and every
 * backend computes the same values where it runs. Where an if would nest deeper than a program
 * may, the lets run for every operand and after[i] is a new let selecting values[i] or vars[i] by
 * `cond`: the same values.
 */
uint32_t vy__vm_branch_begin(struct vy__vm *m);
void vy__vm_branch_end(struct vy__vm *m, uint32_t mark, const struct vy_expr *cond,
	const struct vy_expr *const *vars, struct vy_expr *const *values, uint32_t n,
	struct vy_expr **after);
/* A copy of a leaf (variable or literal). */
struct vy_expr *vy__vm_cp(struct vy__vm *m, const struct vy_expr *leaf);
/* Typed operations: the result type follows DESIGN.md §3 (comparisons give bool). */
struct vy_expr *vy__vm_bin(
	struct vy__vm *m, enum vy_binop op, struct vy_expr *a, struct vy_expr *b);
struct vy_expr *vy__vm_un(struct vy__vm *m, enum vy_unop op, struct vy_expr *a);
struct vy_expr *vy__vm_sel(
	struct vy__vm *m, struct vy_expr *cond, struct vy_expr *a, struct vy_expr *b);
struct vy_expr *vy__vm_cast(struct vy__vm *m, enum vy_type type, struct vy_expr *a);
/* The same 32 bits as another type (ir.md, bitcast). */
struct vy_expr *vy__vm_bitcast(struct vy__vm *m, enum vy_type type, struct vy_expr *a);
struct vy_expr *vy__vm_fma(
	struct vy__vm *m, struct vy_expr *a, struct vy_expr *b, struct vy_expr *c);
/* c[n-1] * z^(n-1) + ... + c[0], in Horner form with fma; `z` is a leaf. */
struct vy_expr *vy__vm_horner(
	struct vy__vm *m, const float *c, uint32_t n, const struct vy_expr *z);
/* 2^k as an f32 for an i32 tree k in [-126, 127]: the biased exponent k + 127 in its field. */
struct vy_expr *vy__vm_pow2(struct vy__vm *m, struct vy_expr *k);
/* p * 2^n for an f32 tree p in [0.5, 2] and an i32 leaf n in [-170, 170], exact until the result
 * overflows (to infinity) or leaves the normal range (flushed to zero). */
struct vy_expr *vy__vm_scale2(struct vy__vm *m, struct vy_expr *p, const struct vy_expr *n);

/*
 * x = 2^e m for a positive normal f32 leaf x, m in [sqrt(1/2), sqrt(2)) read from its bits (the
 * reduction of the logarithms): returns m (a leaf, exact) and writes e as an f32 leaf to *ef.
 * Other x give meaningless values that the callers replace.
 */
struct vy_expr *vy__vm_log_split(struct vy__vm *m, const struct vy_expr *x, struct vy_expr **ef);

/*
 * The expansions. Each takes the f32 operand as a leaf and returns an f32 tree of its result.
 * vy__vm_exp_scaled gives e^x * 2^k for k in {-1, 0}; exp, sinh and cosh share it.
 */
struct vy_expr *vy__vm_exp_scaled(struct vy__vm *m, const struct vy_expr *x, int32_t k);
struct vy_expr *vy__vm_exp(struct vy__vm *m, const struct vy_expr *x);
struct vy_expr *vy__vm_exp2(struct vy__vm *m, const struct vy_expr *x);
/* 2^(hi + lo) for leaves hi and a small lo (|lo| below 2^-20 |hi| or so); no NaN handling. */
struct vy_expr *vy__vm_exp2_pair(
	struct vy__vm *m, const struct vy_expr *hi, const struct vy_expr *lo);
struct vy_expr *vy__vm_sinh(struct vy__vm *m, const struct vy_expr *x);
struct vy_expr *vy__vm_cosh(struct vy__vm *m, const struct vy_expr *x);
struct vy_expr *vy__vm_tanh(struct vy__vm *m, const struct vy_expr *x);
struct vy_expr *vy__vm_log(struct vy__vm *m, const struct vy_expr *x);
struct vy_expr *vy__vm_log2(struct vy__vm *m, const struct vy_expr *x);
struct vy_expr *vy__vm_log10(struct vy__vm *m, const struct vy_expr *x);
struct vy_expr *vy__vm_exp10(struct vy__vm *m, const struct vy_expr *x);
struct vy_expr *vy__vm_expm1(struct vy__vm *m, const struct vy_expr *x);
struct vy_expr *vy__vm_log1p(struct vy__vm *m, const struct vy_expr *x);
struct vy_expr *vy__vm_cbrt(struct vy__vm *m, const struct vy_expr *x);
struct vy_expr *vy__vm_erf(struct vy__vm *m, const struct vy_expr *x);
struct vy_expr *vy__vm_erfc(struct vy__vm *m, const struct vy_expr *x);
struct vy_expr *vy__vm_sin(struct vy__vm *m, const struct vy_expr *x);
struct vy_expr *vy__vm_cos(struct vy__vm *m, const struct vy_expr *x);
struct vy_expr *vy__vm_tan(struct vy__vm *m, const struct vy_expr *x);
struct vy_expr *vy__vm_asin(struct vy__vm *m, const struct vy_expr *x);
struct vy_expr *vy__vm_acos(struct vy__vm *m, const struct vy_expr *x);
struct vy_expr *vy__vm_atan(struct vy__vm *m, const struct vy_expr *x);
/* The correctly rounded variants (vmath_cr.c). */
struct vy_expr *vy__vm_exp_cr(struct vy__vm *m, const struct vy_expr *x);
struct vy_expr *vy__vm_exp2_cr(struct vy__vm *m, const struct vy_expr *x);
struct vy_expr *vy__vm_log_cr(struct vy__vm *m, const struct vy_expr *x);
struct vy_expr *vy__vm_log2_cr(struct vy__vm *m, const struct vy_expr *x);
/* The binary expansions take both operands as leaves. */
struct vy_expr *vy__vm_hypot(struct vy__vm *m, const struct vy_expr *x, const struct vy_expr *y);
struct vy_expr *vy__vm_atan2(struct vy__vm *m, const struct vy_expr *y, const struct vy_expr *x);
struct vy_expr *vy__vm_pow(struct vy__vm *m, const struct vy_expr *x, const struct vy_expr *y);

/* Short forms for the expansions (each allocates new nodes from the program's arena). */
uint32_t vy__vm_f32_bits(float v);

static inline struct vy_expr *fl(struct vy__vm *m, float v)
{
	return vy__vm_lit(m, VY_TYPE_F32, vy__vm_f32_bits(v));
}

static inline struct vy_expr *fbits(struct vy__vm *m, uint32_t bits)
{
	return vy__vm_lit(m, VY_TYPE_F32, bits);
}

static inline struct vy_expr *il(struct vy__vm *m, int32_t v)
{
	return vy__vm_lit(m, VY_TYPE_I32, (uint32_t)v);
}

static inline struct vy_expr *ul(struct vy__vm *m, uint32_t v)
{
	return vy__vm_lit(m, VY_TYPE_U32, v);
}

static inline struct vy_expr *cp(struct vy__vm *m, const struct vy_expr *leaf)
{
	return vy__vm_cp(m, leaf);
}

static inline struct vy_expr *bind(struct vy__vm *m, struct vy_expr *value)
{
	return vy__vm_bind(m, value);
}

#define VY__VM_BIN(fn, op)                                                                         \
	static inline struct vy_expr *fn(struct vy__vm *m, struct vy_expr *a, struct vy_expr *b)   \
	{                                                                                          \
		return vy__vm_bin(m, op, a, b);                                                    \
	}
VY__VM_BIN(add, VY_BIN_ADD)
VY__VM_BIN(sub, VY_BIN_SUB)
VY__VM_BIN(mul, VY_BIN_MUL)
VY__VM_BIN(divide, VY_BIN_DIV)
VY__VM_BIN(vmin, VY_BIN_MIN)
VY__VM_BIN(vmax, VY_BIN_MAX)
VY__VM_BIN(band, VY_BIN_BIT_AND)
VY__VM_BIN(bor, VY_BIN_BIT_OR)
VY__VM_BIN(mulhi, VY_BIN_MUL_HIGH)
VY__VM_BIN(shl, VY_BIN_SHL)
VY__VM_BIN(shr, VY_BIN_SHR)
VY__VM_BIN(eq, VY_BIN_EQ)
VY__VM_BIN(ne, VY_BIN_NE)
VY__VM_BIN(lt, VY_BIN_LT)
VY__VM_BIN(le, VY_BIN_LE)
VY__VM_BIN(gt, VY_BIN_GT)
VY__VM_BIN(ge, VY_BIN_GE)
VY__VM_BIN(lor, VY_BIN_OR)
#undef VY__VM_BIN

#define VY__VM_UN(fn, op)                                                                          \
	static inline struct vy_expr *fn(struct vy__vm *m, struct vy_expr *a)                      \
	{                                                                                          \
		return vy__vm_un(m, op, a);                                                        \
	}
VY__VM_UN(neg, VY_UN_NEG)
VY__VM_UN(absv, VY_UN_ABS)
VY__VM_UN(rnd, VY_UN_ROUND)
VY__VM_UN(sqrtv, VY_UN_SQRT)
VY__VM_UN(clz, VY_UN_CLZ)
VY__VM_UN(bnot, VY_UN_BIT_NOT)
#undef VY__VM_UN

static inline struct vy_expr *sel(
	struct vy__vm *m, struct vy_expr *c, struct vy_expr *a, struct vy_expr *b)
{
	return vy__vm_sel(m, c, a, b);
}

static inline struct vy_expr *to_f32(struct vy__vm *m, struct vy_expr *a)
{
	return vy__vm_cast(m, VY_TYPE_F32, a);
}

static inline struct vy_expr *to_i32(struct vy__vm *m, struct vy_expr *a)
{
	return vy__vm_cast(m, VY_TYPE_I32, a);
}

static inline struct vy_expr *to_u32(struct vy__vm *m, struct vy_expr *a)
{
	return vy__vm_cast(m, VY_TYPE_U32, a);
}

static inline struct vy_expr *fma3(
	struct vy__vm *m, struct vy_expr *a, struct vy_expr *b, struct vy_expr *c)
{
	return vy__vm_fma(m, a, b, c);
}

#define VY__VM_HORNER(m, c, z) vy__vm_horner((m), (c), (uint32_t)(sizeof(c) / sizeof((c)[0])), (z))

/* IEEE single-precision bit patterns used by several expansions. */
#define VY__VM_NAN 0x7FC00000u
#define VY__VM_INF 0x7F800000u
#define VY__VM_NINF 0xFF800000u

#endif
