/*
 * f32 rules of the reference interpreter (DESIGN.md §4.2) at their witness values: rounding,
 * canonical NaN and flush to zero on every result and load, true fma and no contraction, min and
 * max, comparisons, the rounding functions, sqrt and div, and the cast table. Every expected bit
 * pattern is written out by hand.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define F VY_TYPE_F32
#define U VY_TYPE_U32
#define I VY_TYPE_I32
#define B VY_TYPE_BOOL

#define ONE 0x3F800000u
#define MONE 0xBF800000u
#define TWO 0x40000000u
#define HALF 0x3F000000u
#define PZERO 0x00000000u
#define NZERO 0x80000000u
#define PINF 0x7F800000u
#define NINF 0xFF800000u
#define QNAN 0x7FC00000u
#define MIN_NORMAL 0x00800000u /* 2^-126 */
#define FMAX 0x7F7FFFFFu

static void binary(
	enum vy_binop op, const uint32_t *a, const uint32_t *b, const uint32_t *want, size_t n)
{
	enum vy_type tr = (op >= VY_BIN_EQ && op <= VY_BIN_GE) ? B : F;
	struct ref_result r = ref_binary(op, F, F, tr, a, b, n);
	char what[64];
	snprintf(what, sizeof(what), "f32 %s", vy_binop_name(op));
	ref_expect(&r, want, n, what);
	ref_result_finish(&r);
}

static void unary(
	enum vy_unop op, enum vy_type tr, const uint32_t *a, const uint32_t *want, size_t n)
{
	struct ref_result r = ref_unary(op, F, tr, a, n);
	char what[64];
	snprintf(what, sizeof(what), "f32 %s", vy_unop_name(op));
	ref_expect(&r, want, n, what);
	ref_result_finish(&r);
}

static void cast(
	enum vy_type from, enum vy_type to, const uint32_t *a, const uint32_t *want, size_t n)
{
	struct ref_result r = ref_cast(from, to, a, n);
	char what[64];
	snprintf(what, sizeof(what), "cast %s -> %s", vy_type_name(from), vy_type_name(to));
	ref_expect(&r, want, n, what);
	ref_result_finish(&r);
}

Test(reference_float, add_sub_mul_round_to_nearest_even)
{
	/* 1 + 2^-24 is a tie that rounds down to 1; 1 + 3 * 2^-24 a tie that rounds up. */
	uint32_t a[] = {ONE, ONE, PINF, FMAX, ONE};
	uint32_t b[] = {0x33800000u, 0x34400000u, PINF, TWO, NZERO};
	binary(VY_BIN_ADD, a, b, (uint32_t[]){ONE, 0x3F800002u, PINF, FMAX, ONE}, N(a));
	binary(VY_BIN_SUB, a, b, (uint32_t[]){0x3F7FFFFFu, 0x3F7FFFFDu, QNAN, FMAX, ONE}, N(a));
	binary(VY_BIN_MUL, a, b, (uint32_t[]){0x33800000u, 0x34400000u, PINF, PINF, NZERO}, N(a));
}

Test(reference_float, subnormal_results_flush_to_a_signed_zero)
{
	/* 2^-126 * 0.5 = 2^-127 and 1.5 * 2^-126 - 2^-126 = 2^-127 are subnormal. */
	uint32_t a[] = {MIN_NORMAL, MIN_NORMAL | NZERO, 0x00C00000u, MIN_NORMAL};
	uint32_t b[] = {HALF, HALF, MIN_NORMAL, 0x41200000u};
	binary(VY_BIN_MUL, a, b, (uint32_t[]){PZERO, NZERO, PZERO, 0x02200000u}, N(a));
	binary(VY_BIN_SUB, a, b, (uint32_t[]){0xBF000000u, 0xBF000000u, PZERO, 0xC1200000u}, N(a));
	binary(VY_BIN_DIV, a, b, (uint32_t[]){0x01000000u, 0x81000000u, 0x3FC00000u, PZERO}, N(a));
}

Test(reference_float, subnormal_inputs_are_flushed_when_loaded)
{
	/* Unflushed, 2^-127 * 2^24 would be the normal 2^-103 (0x0C000000). */
	uint32_t a[] = {0x00400000u, 0x80400000u, 0x00000001u};
	uint32_t b[] = {0x4B800000u, 0x4B800000u, 0x4B800000u};
	binary(VY_BIN_MUL, a, b, (uint32_t[]){PZERO, NZERO, PZERO}, N(a));
}

/* out[i] = a[i] through a load and a store only. */
static struct ref_result copy_f32(const uint32_t *a, size_t n)
{
	struct vy_program *p = vy_program_create("copy", 64, 1, 1);
	vy_program_add_buffer(p, "a", 0, VY_ACCESS_READ_ONLY, F, 0);
	vy_program_add_buffer(p, "out", 1, VY_ACCESS_WRITE_ONLY, F, (uint32_t)n);
	vy_program_set_entry(p,
		vy_ir_seq(p,
			vy_ir_store(p, "out", vy_ir_gid(p, 0), vy_ir_load(p, "a", vy_ir_gid(p, 0))),
			NULL));
	struct vy_bytes in = ref_in(a, n);
	struct ref_result r = ref_dispatch(p, &in, 1, NULL);
	vy_program_destroy(p);
	return r;
}

Test(reference_float, loads_canonicalize_nan_payloads_and_subnormals)
{
	uint32_t a[] = {0x7F800001u, 0xFFC12345u, 0x7FFFFFFFu, 0x007FFFFFu, 0x80000001u, PINF,
		NZERO, 0x3F8CCCCDu};
	uint32_t want[] = {QNAN, QNAN, QNAN, PZERO, NZERO, PINF, NZERO, 0x3F8CCCCDu};
	struct ref_result r = copy_f32(a, N(a));
	ref_expect(&r, want, N(want), "f32 load and store");
	ref_result_finish(&r);
}

Test(reference_float, nan_results_are_canonical)
{
	uint32_t a[] = {PINF, PZERO, NINF};
	uint32_t b[] = {NINF, PZERO, PZERO};
	binary(VY_BIN_ADD, a, b, (uint32_t[]){QNAN, PZERO, NINF}, N(a));
	binary(VY_BIN_DIV, a, b, (uint32_t[]){QNAN, QNAN, NINF}, N(a));
	binary(VY_BIN_MUL, a, b, (uint32_t[]){NINF, PZERO, QNAN}, N(a));
}

Test(reference_float, fma_is_fused)
{
	/* (1 + 2^-12)^2 - (1 + 2^-11) = 2^-24 exactly; rounded twice it is 0. */
	uint32_t a[] = {0x3F800800u, ONE, PINF};
	uint32_t b[] = {0x3F800800u, ONE, PZERO};
	uint32_t c[] = {0xBF801000u, MONE, ONE};
	struct ref_result r = ref_fma(a, b, c, N(a));
	ref_expect(&r, (uint32_t[]){0x33800000u, PZERO, QNAN}, N(a), "fma");
	ref_result_finish(&r);
}

Test(reference_float, a_times_b_plus_c_is_never_contracted)
{
	struct vy_program *p = vy_program_create("unfused", 1, 1, 1);
	vy_program_add_buffer(p, "x", 0, VY_ACCESS_READ_ONLY, F, 3);
	vy_program_add_buffer(p, "out", 1, VY_ACCESS_WRITE_ONLY, F, 2);
	struct vy_expr *ab = vy_ir_binary(p, VY_BIN_MUL, vy_ir_load(p, "x", vy_ir_u32(p, 0)),
		vy_ir_load(p, "x", vy_ir_u32(p, 1)));
	struct vy_expr *sum = vy_ir_binary(p, VY_BIN_ADD, ab, vy_ir_load(p, "x", vy_ir_u32(p, 2)));
	struct vy_expr *diff = vy_ir_binary(p, VY_BIN_SUB, vy_ir_load(p, "x", vy_ir_u32(p, 2)),
		vy_ir_binary(p, VY_BIN_MUL, vy_ir_load(p, "x", vy_ir_u32(p, 0)),
			vy_ir_load(p, "x", vy_ir_u32(p, 1))));
	vy_program_set_entry(p, vy_ir_seq(p, vy_ir_store(p, "out", vy_ir_u32(p, 0), sum),
					vy_ir_store(p, "out", vy_ir_u32(p, 1), diff), NULL));
	uint32_t x[] = {0x3F800800u, 0x3F800800u, 0xBF801000u};
	struct vy_bytes in = ref_in(x, 3);
	struct ref_result r = ref_dispatch(p, &in, 1, NULL);
	/* Fused, a*b+c would be 2^-24; rounded twice it is 0, and c-a*b is -(2 + 2^-10). */
	ref_expect(&r, (uint32_t[]){PZERO, 0xC0001000u}, 2, "a*b+c and c-a*b");
	ref_result_finish(&r);
	vy_program_destroy(p);
}

Test(reference_float, div_and_sqrt_are_correctly_rounded)
{
	uint32_t a[] = {ONE, TWO, ONE, MONE, 0x40E00000u};
	uint32_t b[] = {0x40400000u, 0x40400000u, NZERO, PZERO, 0x40400000u};
	binary(VY_BIN_DIV, a, b, (uint32_t[]){0x3EAAAAABu, 0x3F2AAAABu, NINF, NINF, 0x40155555u},
		N(a));
	uint32_t s[] = {TWO, NZERO, MONE, PINF, 0x40800000u, NINF};
	unary(VY_UN_SQRT, F, s, (uint32_t[]){0x3FB504F3u, NZERO, QNAN, PINF, TWO, QNAN}, N(s));
}

Test(reference_float, mod_is_exact_with_the_sign_of_a)
{
	/* 7.5 % -2, -7.5 % 2, -0 % 3, FLT_MAX % 1.1, 1 % inf; a result of 2^-127 and one of
	 * 3 * 2^-149 (FLT_MAX % the next number above 2^-126) flush; inf % 2, 1 % 0, NaN % 1 */
	uint32_t a[] = {0x40F00000u, 0xC0F00000u, NZERO, 0x7F7FFFFFu, ONE, 0x00C00000u, 0x7F7FFFFFu,
		PINF, ONE, QNAN};
	uint32_t b[] = {0xC0000000u, TWO, 0x40400000u, 0x3F8CCCCDu, PINF, 0x00800000u, 0x00800001u,
		TWO, PZERO, ONE};
	binary(VY_BIN_MOD, a, b,
		(uint32_t[]){0x3FC00000u, 0xBFC00000u, NZERO, 0x3F85C773u, ONE, PZERO, PZERO, QNAN,
			QNAN, QNAN},
		N(a));
}

Test(reference_float, min_max_ignore_nan_and_order_negative_zero_first)
{
	uint32_t a[] = {QNAN, ONE, QNAN, NZERO, PZERO, NINF, TWO};
	uint32_t b[] = {ONE, QNAN, QNAN, PZERO, NZERO, 0x40400000u, ONE};
	binary(VY_BIN_MIN, a, b, (uint32_t[]){ONE, ONE, QNAN, NZERO, NZERO, NINF, ONE}, N(a));
	binary(VY_BIN_MAX, a, b, (uint32_t[]){ONE, ONE, QNAN, PZERO, PZERO, 0x40400000u, TWO},
		N(a));
}

Test(reference_float, comparisons_are_ieee)
{
	uint32_t a[] = {QNAN, QNAN, NZERO, ONE, NINF};
	uint32_t b[] = {QNAN, ONE, PZERO, TWO, NINF};
	binary(VY_BIN_EQ, a, b, (uint32_t[]){0, 0, 1, 0, 1}, N(a));
	binary(VY_BIN_NE, a, b, (uint32_t[]){1, 1, 0, 1, 0}, N(a));
	binary(VY_BIN_LT, a, b, (uint32_t[]){0, 0, 0, 1, 0}, N(a));
	binary(VY_BIN_LE, a, b, (uint32_t[]){0, 0, 1, 1, 1}, N(a));
	binary(VY_BIN_GT, a, b, (uint32_t[]){0, 0, 0, 0, 0}, N(a));
	binary(VY_BIN_GE, a, b, (uint32_t[]){0, 0, 1, 0, 1}, N(a));
}

Test(reference_float, abs_and_neg_change_only_the_sign)
{
	uint32_t a[] = {PZERO, NZERO, QNAN, NINF, 0xC0490FDBu};
	unary(VY_UN_NEG, F, a, (uint32_t[]){NZERO, PZERO, QNAN, PINF, 0x40490FDBu}, N(a));
	unary(VY_UN_ABS, F, a, (uint32_t[]){PZERO, PZERO, QNAN, PINF, 0x40490FDBu}, N(a));
}

Test(reference_float, rounding_functions_keep_the_sign_of_zero)
{
	/* -0.5, 2.5, -2.5, 0.5, -0.4, 1.4999999, -1.5, inf */
	uint32_t a[] = {0xBF000000u, 0x40200000u, 0xC0200000u, HALF, 0xBECCCCCDu, 0x3FBFFFFFu,
		0xBFC00000u, PINF};
	unary(VY_UN_CEIL, F, a,
		(uint32_t[]){NZERO, 0x40400000u, TWO | NZERO, ONE, NZERO, TWO, MONE, PINF}, N(a));
	unary(VY_UN_FLOOR, F, a,
		(uint32_t[]){MONE, TWO, 0xC0400000u, PZERO, MONE, ONE, TWO | NZERO, PINF}, N(a));
	unary(VY_UN_TRUNC, F, a,
		(uint32_t[]){NZERO, TWO, TWO | NZERO, PZERO, NZERO, ONE, MONE, PINF}, N(a));
	unary(VY_UN_ROUND, F, a,
		(uint32_t[]){MONE, 0x40400000u, 0xC0400000u, ONE, NZERO, ONE, TWO | NZERO, PINF},
		N(a));
}

Test(reference_float, sign_gives_minus_one_zero_or_one)
{
	uint32_t a[] = {0xC0400000u, NZERO, PZERO, 0x40A00000u, QNAN, NINF, MIN_NORMAL};
	unary(VY_UN_SIGN, F, a, (uint32_t[]){MONE, PZERO, PZERO, ONE, QNAN, MONE, ONE}, N(a));
}

Test(reference_float, class_tests_read_the_bits)
{
	uint32_t a[] = {QNAN, PINF, NINF, PZERO, ONE, FMAX, 0x00000001u};
	unary(VY_UN_IS_NAN, B, a, (uint32_t[]){1, 0, 0, 0, 0, 0, 0}, N(a));
	unary(VY_UN_IS_INF, B, a, (uint32_t[]){0, 1, 1, 0, 0, 0, 0}, N(a));
	unary(VY_UN_IS_FINITE, B, a, (uint32_t[]){0, 0, 0, 1, 1, 1, 1}, N(a));
}

Test(reference_float, f32_to_u32_truncates_and_saturates)
{
	/* -1.0, NaN, 1e10, 3.9, -0.5, inf, -inf, 4294967040.0 */
	uint32_t a[] = {MONE, QNAN, 0x501502F9u, 0x4079999Au, 0xBF000000u, PINF, NINF, 0x4F7FFFFFu};
	cast(F, U, a, (uint32_t[]){0, 0, 0xFFFFFFFFu, 3, 0, 0xFFFFFFFFu, 0, 0xFFFFFF00u}, N(a));
}

Test(reference_float, f32_to_i32_truncates_and_saturates)
{
	/* 1e10, -1e10, -2147483648.0, NaN, -3.9, 2147483520.0, inf */
	uint32_t a[] = {
		0x501502F9u, 0xD01502F9u, 0xCF000000u, QNAN, 0xC079999Au, 0x4EFFFFFFu, PINF};
	cast(F, I, a,
		(uint32_t[]){0x7FFFFFFFu, 0x80000000u, 0x80000000u, 0, 0xFFFFFFFDu, 0x7FFFFF80u,
			0x7FFFFFFFu},
		N(a));
}

Test(reference_float, integers_to_f32_round_to_nearest_even)
{
	uint32_t u[] = {16777217u, 16777219u, 0xFFFFFFFFu, 0, 1};
	cast(U, F, u, (uint32_t[]){0x4B800000u, 0x4B800002u, 0x4F800000u, PZERO, ONE}, N(u));
	uint32_t i[] = {(uint32_t)-16777217, 0x80000000u, 0xFFFFFFFFu, 0x7FFFFFFFu};
	cast(I, F, i, (uint32_t[]){0xCB800000u, 0xCF000000u, MONE, 0x4F000000u}, N(i));
}

Test(reference_float, i32_and_u32_reinterpret_bits)
{
	uint32_t a[] = {0xFFFFFFFFu, 0x80000000u, 7};
	cast(I, U, a, a, N(a));
	cast(U, I, a, a, N(a));
}

static void bitcast(
	enum vy_type from, enum vy_type to, const uint32_t *a, const uint32_t *want, size_t n)
{
	struct ref_result r = ref_bitcast(from, to, a, n);
	char what[64];
	snprintf(what, sizeof(what), "bitcast %s -> %s", vy_type_name(from), vy_type_name(to));
	ref_expect(&r, want, n, what);
	ref_result_finish(&r);
}

Test(reference_float, bitcast_to_f32_canonicalizes_as_a_load_does)
{
	/* 1.0, a signalling NaN, a negative NaN with a payload, the smallest and the largest
	 * negative subnormal, -0, +inf, the largest finite value, the smallest normal. */
	uint32_t w[] = {ONE, 0x7F800001u, 0xFFC12345u, 0x00000001u, 0x807FFFFFu, NZERO, PINF,
		0x7F7FFFFFu, 0x00800000u};
	uint32_t want[] = {ONE, QNAN, QNAN, PZERO, NZERO, NZERO, PINF, 0x7F7FFFFFu, 0x00800000u};
	bitcast(U, F, w, want, N(w));
	bitcast(I, F, w, want, N(w));
}

/* The reference canonicalizes every f32 store, so the canonical bits are read back as u32. */
Test(reference_float, a_word_read_as_f32_is_canonical_before_any_store)
{
	uint32_t w[] = {0x7F800001u, 0xFFC12345u, 0x00000001u, 0x807FFFFFu, ONE, NINF};
	uint32_t want[] = {QNAN, QNAN, PZERO, NZERO, ONE, NINF};
	enum { N_W = sizeof(w) / sizeof(w[0]) };
	struct vy_program *p = vy_program_create("bits_back", 64, 1, 1);
	BUF("a", 0, READ_ONLY, U32, N_W);
	BUF("out", 1, WRITE_ONLY, U32, N_W);
	vy_program_set_entry(
		p, SEQ(STORE("out", GID(0),
			   vy_ir_bitcast(p, VY_TYPE_U32,
				   vy_ir_bitcast(p, VY_TYPE_F32, LOAD("a", GID(0)))))));
	struct vy_bytes in = ref_in(w, N_W);
	struct ref_result r = ref_dispatch(p, &in, 1, NULL);
	ref_expect(&r, want, N_W, "bitcast u32 -> f32 -> u32");
	ref_result_finish(&r);
	vy_program_destroy(p);
}

Test(reference_float, bitcast_from_f32_gives_the_canonical_bits)
{
	/* The load canonicalizes: a NaN payload reads as 0x7FC00000, a subnormal as a zero. */
	uint32_t f[] = {ONE, 0x7FC12345u, 0x80000001u, NZERO, NINF, 0xC0490FDBu};
	uint32_t want[] = {ONE, QNAN, NZERO, NZERO, NINF, 0xC0490FDBu};
	bitcast(F, U, f, want, N(f));
	bitcast(F, I, f, want, N(f));
	bitcast(F, F, f, want, N(f));
}

Test(reference_float, bitcast_between_integers_keeps_every_bit)
{
	uint32_t a[] = {0xFFFFFFFFu, 0x80000000u, 7, 0x7F800001u};
	bitcast(U, I, a, a, N(a));
	bitcast(I, U, a, a, N(a));
	bitcast(U, U, a, a, N(a));
	bitcast(I, I, a, a, N(a));
}

Test(reference_float, casts_to_bool_test_nonzero)
{
	uint32_t f[] = {NZERO, PZERO, QNAN, HALF, 0x00000001u, NINF};
	cast(F, B, f, (uint32_t[]){0, 0, 1, 1, 0, 1}, N(f));
	uint32_t u[] = {0, 5, 0x80000000u};
	cast(U, B, u, (uint32_t[]){0, 1, 1}, N(u));
	cast(I, B, u, (uint32_t[]){0, 1, 1}, N(u));
}

Test(reference_float, bool_to_numbers_gives_zero_or_one)
{
	uint32_t b[] = {0, 1, 7};
	cast(B, U, b, (uint32_t[]){0, 1, 1}, N(b));
	cast(B, I, b, (uint32_t[]){0, 1, 1}, N(b));
	cast(B, F, b, (uint32_t[]){PZERO, ONE, ONE}, N(b));
}
