/*
 * Integer and bool rules of the reference interpreter (DESIGN.md §4.1) at their witness values:
 * wrapping, the division rules and their traps, shift and rotate counts, bit counts, mul_high,
 * saturation, signed and unsigned comparisons, the logical operators and the unpack fields.
 * Every expected value is written out by hand.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define U VY_TYPE_U32
#define I VY_TYPE_I32
#define B VY_TYPE_BOOL
#define IMIN 0x80000000u
#define IMAX 0x7FFFFFFFu
#define NEG(v) ((uint32_t)(0u - (uint32_t)(v)))

static void binary(enum vy_binop op, enum vy_type t, const uint32_t *a, const uint32_t *b,
	const uint32_t *want, size_t n)
{
	enum vy_type tb =
		(op == VY_BIN_SHL || op == VY_BIN_SHR || op == VY_BIN_ROTL || op == VY_BIN_ROTR)
			? U
			: t;
	enum vy_type tr = (op >= VY_BIN_EQ && op <= VY_BIN_GE) ? B : op == VY_BIN_ABS_DIFF ? U : t;
	struct ref_result r = ref_binary(op, t, tb, tr, a, b, n);
	char what[64];
	snprintf(what, sizeof(what), "%s %s", vy_type_name(t), vy_binop_name(op));
	ref_expect(&r, want, n, what);
	ref_result_finish(&r);
}

static void unary(
	enum vy_unop op, enum vy_type t, const uint32_t *a, const uint32_t *want, size_t n)
{
	struct ref_result r = ref_unary(op, t, t, a, n);
	char what[64];
	snprintf(what, sizeof(what), "%s %s", vy_type_name(t), vy_unop_name(op));
	ref_expect(&r, want, n, what);
	ref_result_finish(&r);
}

Test(reference_int, u32_add_sub_mul_wrap)
{
	uint32_t a[] = {0xFFFFFFFFu, 0, 0x80000000u, 0xFFFFu, 0x10000u};
	uint32_t b[] = {1, 1, 2, 0x10001u, 0x10000u};
	binary(VY_BIN_ADD, U, a, b, (uint32_t[]){0, 1, 0x80000002u, 0x20000u, 0x20000u}, N(a));
	binary(VY_BIN_SUB, U, a, b,
		(uint32_t[]){0xFFFFFFFEu, 0xFFFFFFFFu, 0x7FFFFFFEu, 0xFFFFFFFEu, 0}, N(a));
	binary(VY_BIN_MUL, U, a, b, (uint32_t[]){0xFFFFFFFFu, 0, 0, 0xFFFFFFFFu, 0}, N(a));
}

Test(reference_int, i32_add_sub_mul_neg_wrap)
{
	uint32_t a[] = {IMAX, IMIN, IMIN, NEG(3)};
	uint32_t b[] = {1, 1, NEG(1), 5};
	binary(VY_BIN_ADD, I, a, b, (uint32_t[]){IMIN, IMIN + 1, IMAX, 2}, N(a));
	binary(VY_BIN_SUB, I, a, b, (uint32_t[]){IMAX - 1, IMAX, IMIN + 1, NEG(8)}, N(a));
	binary(VY_BIN_MUL, I, a, b, (uint32_t[]){IMAX, IMIN, IMIN, NEG(15)}, N(a));
	unary(VY_UN_NEG, I, a, (uint32_t[]){IMIN + 1, IMIN, IMIN, 3}, N(a));
}

Test(reference_int, u32_division_by_zero_gives_all_ones_and_remainder_zero)
{
	uint32_t a[] = {7, 0, 0xFFFFFFFFu, 7, 0xFFFFFFFFu};
	uint32_t b[] = {0, 0, 0, 2, 0x10u};
	binary(VY_BIN_DIV, U, a, b,
		(uint32_t[]){0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 3, 0x0FFFFFFFu}, N(a));
	binary(VY_BIN_MOD, U, a, b, (uint32_t[]){0, 0, 0, 1, 0xFu}, N(a));
}

Test(reference_int, i32_division_truncates_toward_zero)
{
	uint32_t a[] = {NEG(7), NEG(7), 7, 7, IMIN, IMIN, NEG(1)};
	uint32_t b[] = {2, NEG(2), NEG(2), 2, 1, 2, NEG(1)};
	binary(VY_BIN_DIV, I, a, b, (uint32_t[]){NEG(3), 3, NEG(3), 3, IMIN, 0xC0000000u, 1}, N(a));
	binary(VY_BIN_MOD, I, a, b, (uint32_t[]){NEG(1), NEG(1), 1, 1, 0, 0, 0}, N(a));
}

static void expect_trap(enum vy_binop op, uint32_t a, uint32_t b, const char *kind)
{
	uint32_t va[] = {10, a, 12};
	uint32_t vb[] = {2, b, 3};
	struct ref_result r = ref_binary(op, I, I, I, va, vb, 3);
	ref_expect_error(&r, VY_E_TRAP, "entry[2].store");
	cr_assert(strstr(r.err.message, kind), "the message names the trap kind %s: %s", kind,
		r.err.message);
	cr_assert(strstr(r.err.message, "local invocation 1"),
		"the message names the invocation: %s", r.err.message);
	ref_result_finish(&r);
}

Test(reference_int, i32_division_by_zero_traps)
{
	expect_trap(VY_BIN_DIV, 7, 0, "int_div_zero");
	expect_trap(VY_BIN_DIV, 0, 0, "int_div_zero");
}

Test(reference_int, i32_remainder_by_zero_traps)
{
	expect_trap(VY_BIN_MOD, 7, 0, "int_div_zero");
}

Test(reference_int, i32_int_min_by_minus_one_traps)
{
	expect_trap(VY_BIN_DIV, IMIN, NEG(1), "int_overflow_div");
	expect_trap(VY_BIN_MOD, IMIN, NEG(1), "int_overflow_div");
}

Test(reference_int, shift_counts_are_masked_to_five_bits)
{
	uint32_t a[] = {1, 1, 1, 0x80000000u, 0x80000000u, 0xF0u};
	uint32_t b[] = {33, 31, 32, 31, 33, 0xFFFFFFE4u};
	binary(VY_BIN_SHL, U, a, b, (uint32_t[]){2, 0x80000000u, 1, 0, 0, 0xF00u}, N(a));
	binary(VY_BIN_SHR, U, a, b, (uint32_t[]){0, 0, 1, 1, 0x40000000u, 0xFu}, N(a));
}

Test(reference_int, shr_is_arithmetic_for_i32_and_logical_for_u32)
{
	uint32_t a[] = {0x80000000u, NEG(8), 0x80000000u, 0x40000000u, NEG(1)};
	uint32_t b[] = {31, 1, 32, 30, 63};
	binary(VY_BIN_SHR, I, a, b, (uint32_t[]){0xFFFFFFFFu, NEG(4), 0x80000000u, 1, 0xFFFFFFFFu},
		N(a));
	binary(VY_BIN_SHR, U, a, b, (uint32_t[]){1, 0x7FFFFFFCu, 0x80000000u, 1, 1}, N(a));
}

Test(reference_int, rotations_take_the_count_mod_32)
{
	uint32_t a[] = {0x80000001u, 0x80000001u, 1, 0x12345678u, 0x12345678u};
	uint32_t b[] = {1, 33, 1, 32, 4};
	binary(VY_BIN_ROTL, U, a, b, (uint32_t[]){3, 3, 2, 0x12345678u, 0x23456781u}, N(a));
	binary(VY_BIN_ROTR, U, a, b,
		(uint32_t[]){0xC0000000u, 0xC0000000u, 0x80000000u, 0x12345678u, 0x81234567u},
		N(a));
	binary(VY_BIN_ROTL, I, a, b, (uint32_t[]){3, 3, 2, 0x12345678u, 0x23456781u}, N(a));
}

Test(reference_int, bitwise_operations)
{
	uint32_t a[] = {0xF0F0F0F0u, 0};
	uint32_t b[] = {0xFF00FF00u, 0xFFFFFFFFu};
	binary(VY_BIN_BIT_AND, U, a, b, (uint32_t[]){0xF000F000u, 0}, N(a));
	binary(VY_BIN_BIT_OR, U, a, b, (uint32_t[]){0xFFF0FFF0u, 0xFFFFFFFFu}, N(a));
	binary(VY_BIN_BIT_XOR, U, a, b, (uint32_t[]){0x0FF00FF0u, 0xFFFFFFFFu}, N(a));
	unary(VY_UN_BIT_NOT, I, a, (uint32_t[]){0x0F0F0F0Fu, 0xFFFFFFFFu}, N(a));
}

Test(reference_int, bit_counts_of_zero_are_32)
{
	uint32_t a[] = {0, 1, 0x80000000u, 0xFFFFFFFFu, 0x12345678u};
	unary(VY_UN_CLZ, U, a, (uint32_t[]){32, 31, 0, 0, 3}, N(a));
	unary(VY_UN_CTZ, U, a, (uint32_t[]){32, 0, 31, 0, 3}, N(a));
	unary(VY_UN_POPCOUNT, U, a, (uint32_t[]){0, 1, 1, 32, 13}, N(a));
	unary(VY_UN_REVERSE_BITS, U, a, (uint32_t[]){0, 0x80000000u, 1, 0xFFFFFFFFu, 0x1E6A2C48u},
		N(a));
	unary(VY_UN_CLZ, I, a, (uint32_t[]){32, 31, 0, 0, 3}, N(a));
}

Test(reference_int, mul_high_is_the_high_word_of_the_widening_product)
{
	uint32_t a[] = {0xFFFFFFFFu, 0x80000000u, 0x12345678u, IMIN, IMIN};
	uint32_t b[] = {0xFFFFFFFFu, 2, 0x10u, IMIN, 2};
	binary(VY_BIN_MUL_HIGH, U, a, b, (uint32_t[]){0xFFFFFFFEu, 1, 1, 0x40000000u, 1}, N(a));
	/* Signed: (-1)(-1) = 1, (-2^31)(2) = -2^32, (2^28 + ...)(16), (-2^31)^2 = 2^62. */
	binary(VY_BIN_MUL_HIGH, I, a, b, (uint32_t[]){0, 0xFFFFFFFFu, 1, 0x40000000u, 0xFFFFFFFFu},
		N(a));
}

Test(reference_int, abs_diff_and_saturating_operations)
{
	uint32_t a[] = {3, 10, 0, 0xFFFFFFF0u, 0x10000u, 0xFFFFu};
	uint32_t b[] = {10, 3, 0xFFFFFFFFu, 0x20u, 0x10000u, 0x10001u};
	binary(VY_BIN_ABS_DIFF, U, a, b, (uint32_t[]){7, 7, 0xFFFFFFFFu, 0xFFFFFFD0u, 0, 2}, N(a));
	binary(VY_BIN_SAT_ADD, U, a, b,
		(uint32_t[]){13, 13, 0xFFFFFFFFu, 0xFFFFFFFFu, 0x20000u, 0x20000u}, N(a));
	binary(VY_BIN_SAT_SUB, U, a, b, (uint32_t[]){0, 7, 0, 0xFFFFFFD0u, 0, 0}, N(a));
	binary(VY_BIN_SAT_MUL, U, a, b,
		(uint32_t[]){30, 30, 0, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu}, N(a));
}

Test(reference_int, i32_saturating_operations_clamp_to_int_min_and_int_max)
{
	uint32_t a[] = {IMAX, IMIN, IMIN, IMAX, NEG(5), 5, 0, NEG(1), IMIN};
	uint32_t b[] = {1, NEG(1), 1, NEG(1), NEG(7), NEG(7), IMIN, IMAX, IMIN};
	/* Exact results: 2^31, -2^31 - 1, -2^31 + 1, 2^31 - 2, -12, -2, -2^31, 2^31 - 2, -2^32. */
	binary(VY_BIN_SAT_ADD, I, a, b,
		(uint32_t[]){IMAX, IMIN, IMIN + 1, IMAX - 1, NEG(12), NEG(2), IMIN, IMAX - 1, IMIN},
		N(a));
	/* Exact: 2^31 - 2, -2^31 + 1, -2^31 - 1, 2^31, 2, 12, 2^31, -2^31, 0. */
	binary(VY_BIN_SAT_SUB, I, a, b,
		(uint32_t[]){IMAX - 1, IMIN + 1, IMIN, IMAX, 2, 12, IMAX, IMIN, 0}, N(a));
}

Test(reference_int, abs_diff_of_i32_is_the_exact_distance_as_a_u32)
{
	uint32_t a[] = {IMIN, IMAX, NEG(3), 4, NEG(1), 0};
	uint32_t b[] = {IMAX, IMIN, 4, NEG(3), NEG(1), IMIN};
	binary(VY_BIN_ABS_DIFF, I, a, b,
		(uint32_t[]){0xFFFFFFFFu, 0xFFFFFFFFu, 7, 7, 0, 0x80000000u}, N(a));
}

Test(reference_int, neg_of_u32_wraps)
{
	uint32_t a[] = {0, 1, 0x80000000u, 0xFFFFFFFFu, 12};
	unary(VY_UN_NEG, U, a, (uint32_t[]){0, 0xFFFFFFFFu, 0x80000000u, 1, NEG(12)}, N(a));
}

Test(reference_int, abs_and_sign_of_i32)
{
	uint32_t a[] = {IMIN, NEG(5), 0, 9, IMAX};
	unary(VY_UN_ABS, I, a, (uint32_t[]){IMIN, 5, 0, 9, IMAX}, N(a));
	unary(VY_UN_SIGN, I, a, (uint32_t[]){NEG(1), NEG(1), 0, 1, 1}, N(a));
}

Test(reference_int, min_max_compare_signed_or_unsigned_by_type)
{
	uint32_t a[] = {1, IMIN, 5};
	uint32_t b[] = {0xFFFFFFFFu, IMAX, 5};
	binary(VY_BIN_MIN, U, a, b, (uint32_t[]){1, IMAX, 5}, N(a));
	binary(VY_BIN_MAX, U, a, b, (uint32_t[]){0xFFFFFFFFu, IMIN, 5}, N(a));
	binary(VY_BIN_MIN, I, a, b, (uint32_t[]){0xFFFFFFFFu, IMIN, 5}, N(a));
	binary(VY_BIN_MAX, I, a, b, (uint32_t[]){1, IMAX, 5}, N(a));
}

Test(reference_int, comparisons_give_bool_signed_or_unsigned_by_type)
{
	uint32_t a[] = {1, IMIN, 5};
	uint32_t b[] = {0xFFFFFFFFu, IMAX, 5};
	binary(VY_BIN_LT, U, a, b, (uint32_t[]){1, 0, 0}, N(a));
	binary(VY_BIN_LT, I, a, b, (uint32_t[]){0, 1, 0}, N(a));
	binary(VY_BIN_LE, I, a, b, (uint32_t[]){0, 1, 1}, N(a));
	binary(VY_BIN_GT, U, a, b, (uint32_t[]){0, 1, 0}, N(a));
	binary(VY_BIN_GE, I, a, b, (uint32_t[]){1, 0, 1}, N(a));
	binary(VY_BIN_EQ, U, a, b, (uint32_t[]){0, 0, 1}, N(a));
	binary(VY_BIN_NE, I, a, b, (uint32_t[]){1, 1, 0}, N(a));
	uint32_t ba[] = {0, 1, 1};
	uint32_t bb[] = {0, 0, 1};
	binary(VY_BIN_EQ, B, ba, bb, (uint32_t[]){1, 0, 1}, N(ba));
}

Test(reference_int, and_or_not_are_logical_not_bitwise)
{
	uint32_t a[] = {2, 0, 0, 0xFFFFFFFFu};
	uint32_t b[] = {4, 0, 8, 1};
	binary(VY_BIN_AND, U, a, b, (uint32_t[]){1, 0, 0, 1}, N(a));
	binary(VY_BIN_OR, U, a, b, (uint32_t[]){1, 0, 1, 1}, N(a));
	unary(VY_UN_NOT, U, a, (uint32_t[]){0, 1, 1, 0}, N(a));
	uint32_t ia[] = {NEG(2), 0, 0, IMIN};
	uint32_t ib[] = {NEG(1), 0, 3, 1};
	binary(VY_BIN_AND, I, ia, ib, (uint32_t[]){1, 0, 0, 1}, N(ia));
	binary(VY_BIN_OR, I, ia, ib, (uint32_t[]){1, 0, 1, 1}, N(ia));
	unary(VY_UN_NOT, I, ia, (uint32_t[]){0, 1, 1, 0}, N(ia));
	uint32_t ba[] = {1, 1, 0, 0};
	uint32_t bb[] = {1, 0, 1, 0};
	binary(VY_BIN_AND, B, ba, bb, (uint32_t[]){1, 0, 0, 0}, N(ba));
	binary(VY_BIN_OR, B, ba, bb, (uint32_t[]){1, 1, 1, 0}, N(ba));
	unary(VY_UN_NOT, B, ba, (uint32_t[]){0, 0, 1, 1}, N(ba));
}

Test(reference_int, unpack_takes_the_documented_fields)
{
	uint32_t a[] = {0xABCD1234u, 0xFFFFFFFFu, 0};
	unary(VY_UN_UNPACK4_LOW, U, a, (uint32_t[]){0x4, 0xF, 0}, N(a));
	unary(VY_UN_UNPACK4_HIGH, U, a, (uint32_t[]){0xA, 0xF, 0}, N(a));
	unary(VY_UN_UNPACK8_LOW, U, a, (uint32_t[]){0x34, 0xFF, 0}, N(a));
	unary(VY_UN_UNPACK8_HIGH, U, a, (uint32_t[]){0xAB, 0xFF, 0}, N(a));
}
