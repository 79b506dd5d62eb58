/*
 * f32 operations and casts of the reference interpreter (DESIGN.md §4.2). Every operand is a
 * canonical f32 (loads, literals, spec values and every result are canonicalized), and every
 * result goes through ref_canon, so a NaN is always 0x7FC00000 and no subnormal ever appears.
 *
 * This file is compiled with -ffp-contract=off and without fast-math: each IR operation is one
 * correctly rounded C operation in the default rounding mode (round to nearest even), and a*b+c
 * written as two IR operations is never fused. fma is C's fmaf, a true fused multiply-add; div
 * and sqrt are C's '/' and sqrtf, which IEEE 754 requires to be correctly rounded.
 *
 * Where DESIGN.md leaves room:
 *   sign             -1.0, +0.0 (for both zeros) or 1.0; NaN for NaN.
 *   min, max         a NaN operand is ignored (both NaN gives NaN); -0 is below +0.
 *   mod              C's fmodf (exact): NaN for an infinite a or a zero b, a for an infinite b.
 *   f32 -> bool      true when the canonical value is not a zero: NaN is true, -0 is false.
 *   bitcast to f32   the word canonicalized, as a load canonicalizes it; to u32 or i32, the word
 *                    as it is (an f32 is canonical already, so f32 -> u32 gives canonical bits).
 */
#include <assert.h>
#include <math.h>

#include "interp.h"

static inline bool is_nan(uint32_t v)
{
	return (v & REF_F32_EXP) == REF_F32_EXP && (v & REF_F32_MANT) != 0;
}

static inline bool is_inf(uint32_t v)
{
	return (v & ~REF_F32_SIGN) == REF_F32_EXP;
}

uint32_t vy__ref_f32_add(uint32_t a, uint32_t b)
{
	return ref_bits(ref_f32(a) + ref_f32(b));
}

uint32_t vy__ref_f32_mul(uint32_t a, uint32_t b)
{
	return ref_bits(ref_f32(a) * ref_f32(b));
}

/*
 * min and max differ only in which side of an ordered pair wins and which zero wins a tie:
 * a NaN operand loses to a number, and -0 is below +0.
 */
static uint32_t min_or_max(uint32_t a, uint32_t b, bool max)
{
	if (is_nan(a)) {
		return b;
	}
	if (is_nan(b)) {
		return a;
	}
	float fa = ref_f32(a);
	float fb = ref_f32(b);
	if (fa != fb) {
		return (fa < fb) != max ? a : b;
	}
	/* Equal: only the zeros differ in bits. */
	return max ? a & (b | ~REF_F32_SIGN) : a | (b & REF_F32_SIGN);
}

uint32_t vy__ref_f32_min(uint32_t a, uint32_t b)
{
	return min_or_max(a, b, false);
}

uint32_t vy__ref_f32_max(uint32_t a, uint32_t b)
{
	return min_or_max(a, b, true);
}

void vy__ref_f32_binary(enum vy_binop op, const struct ref_lanes *lanes, const uint32_t *a,
	const uint32_t *b, uint32_t *out)
{
	switch (op) {
	case VY_BIN_ADD:
		REF_EACH(ref_bits(ref_f32(a[l]) + ref_f32(b[l])));
		break;
	case VY_BIN_SUB:
		REF_EACH(ref_bits(ref_f32(a[l]) - ref_f32(b[l])));
		break;
	case VY_BIN_MUL:
		REF_EACH(ref_bits(ref_f32(a[l]) * ref_f32(b[l])));
		break;
	case VY_BIN_DIV:
		REF_EACH(ref_bits(ref_f32(a[l]) / ref_f32(b[l])));
		break;
	case VY_BIN_MOD:
		/* exact: the remainder of the truncated quotient, with the sign of a */
		REF_EACH(ref_bits(fmodf(ref_f32(a[l]), ref_f32(b[l]))));
		break;
	case VY_BIN_MIN:
		REF_EACH(vy__ref_f32_min(a[l], b[l]));
		break;
	case VY_BIN_MAX:
		REF_EACH(vy__ref_f32_max(a[l], b[l]));
		break;
	case VY_BIN_EQ:
		REF_EACH(ref_f32(a[l]) == ref_f32(b[l]));
		break;
	case VY_BIN_NE:
		REF_EACH(ref_f32(a[l]) != ref_f32(b[l]));
		break;
	case VY_BIN_LT:
		REF_EACH(ref_f32(a[l]) < ref_f32(b[l]));
		break;
	case VY_BIN_LE:
		REF_EACH(ref_f32(a[l]) <= ref_f32(b[l]));
		break;
	case VY_BIN_GT:
		REF_EACH(ref_f32(a[l]) > ref_f32(b[l]));
		break;
	case VY_BIN_GE:
		REF_EACH(ref_f32(a[l]) >= ref_f32(b[l]));
		break;
	default:
		assert(!"not an f32 binary operation");
		break;
	}
}

static inline uint32_t sign_f32(uint32_t v)
{
	if (is_nan(v)) {
		return REF_F32_NAN;
	}
	if ((v & ~REF_F32_SIGN) == 0) {
		return 0;
	}
	return (v & REF_F32_SIGN) ? UINT32_C(0xBF800000) : UINT32_C(0x3F800000);
}

void vy__ref_f32_unary(
	enum vy_unop op, const struct ref_lanes *lanes, const uint32_t *a, uint32_t *out)
{
	switch (op) {
	case VY_UN_NEG:
		REF_EACH(ref_canon(a[l] ^ REF_F32_SIGN));
		break;
	case VY_UN_ABS:
		REF_EACH(ref_canon(a[l] & ~REF_F32_SIGN));
		break;
	case VY_UN_SIGN:
		REF_EACH(sign_f32(a[l]));
		break;
	case VY_UN_FLOOR:
		REF_EACH(ref_bits(floorf(ref_f32(a[l]))));
		break;
	case VY_UN_CEIL:
		REF_EACH(ref_bits(ceilf(ref_f32(a[l]))));
		break;
	case VY_UN_ROUND:
		REF_EACH(ref_bits(roundf(ref_f32(a[l]))));
		break;
	case VY_UN_TRUNC:
		REF_EACH(ref_bits(truncf(ref_f32(a[l]))));
		break;
	case VY_UN_SQRT:
		REF_EACH(ref_bits(sqrtf(ref_f32(a[l]))));
		break;
	case VY_UN_IS_NAN:
		REF_EACH(is_nan(a[l]));
		break;
	case VY_UN_IS_INF:
		REF_EACH(is_inf(a[l]));
		break;
	case VY_UN_IS_FINITE:
		REF_EACH((a[l] & REF_F32_EXP) != REF_F32_EXP);
		break;
	default:
		/* The lowered operations are refused when the program is compiled. */
		assert(!"not an f32 unary operation the interpreter executes");
		break;
	}
}

void vy__ref_f32_fma(const struct ref_lanes *lanes, const uint32_t *a, const uint32_t *b,
	const uint32_t *c, uint32_t *out)
{
	REF_EACH(ref_bits(fmaf(ref_f32(a[l]), ref_f32(b[l]), ref_f32(c[l]))));
}

/* f32 -> u32: truncate toward zero, saturate, NaN gives 0. */
static inline uint32_t f32_to_u32(uint32_t v)
{
	if (is_nan(v)) {
		return 0;
	}
	float f = truncf(ref_f32(v));
	if (f <= 0.0f) {
		return 0;
	}
	if (f >= 4294967296.0f) {
		return UINT32_MAX;
	}
	return (uint32_t)f;
}

/* f32 -> i32: truncate toward zero, saturate, NaN gives 0. */
static inline uint32_t f32_to_i32(uint32_t v)
{
	if (is_nan(v)) {
		return 0;
	}
	float f = truncf(ref_f32(v));
	if (f >= 2147483648.0f) {
		return UINT32_C(0x7FFFFFFF);
	}
	if (f <= -2147483648.0f) {
		return UINT32_C(0x80000000);
	}
	int32_t i = (int32_t)f;
	return (uint32_t)i;
}

void vy__ref_cast(enum vy_type from, enum vy_type to, const struct ref_lanes *lanes,
	const uint32_t *a, uint32_t *out)
{
	if (from == to || (from != VY_TYPE_F32 && from != VY_TYPE_BOOL && to != VY_TYPE_F32 &&
				  to != VY_TYPE_BOOL)) {
		/* Same type, or u32 <-> i32: the same bits. */
		REF_EACH(a[l]);
		return;
	}
	switch (to) {
	case VY_TYPE_BOOL:
		if (from == VY_TYPE_F32) {
			REF_EACH((a[l] & ~REF_F32_SIGN) != 0);
		} else {
			REF_EACH(a[l] != 0);
		}
		break;
	case VY_TYPE_F32:
		if (from == VY_TYPE_BOOL) {
			REF_EACH(a[l] ? UINT32_C(0x3F800000) : 0);
		} else if (from == VY_TYPE_I32) {
			REF_EACH(ref_bits((float)ref_i32(a[l])));
		} else {
			REF_EACH(ref_bits((float)a[l]));
		}
		break;
	case VY_TYPE_U32:
	case VY_TYPE_I32:
		if (from == VY_TYPE_BOOL) {
			REF_EACH(a[l] != 0);
		} else if (to == VY_TYPE_U32) {
			REF_EACH(f32_to_u32(a[l]));
		} else {
			REF_EACH(f32_to_i32(a[l]));
		}
		break;
	default:
		assert(!"cast to a type outside the enum");
		break;
	}
}

uint32_t vy__ref_reduce_step(enum vy_reduce_op op, enum vy_type type, uint32_t acc, uint32_t v)
{
	bool f = type == VY_TYPE_F32;
	bool s = type == VY_TYPE_I32;
	int32_t sa = ref_i32(acc);
	int32_t sv = ref_i32(v);
	switch (op) {
	case VY_REDUCE_ADD:
		return f ? vy__ref_f32_add(acc, v) : acc + v;
	case VY_REDUCE_MUL:
		return f ? vy__ref_f32_mul(acc, v) : acc * v;
	case VY_REDUCE_MIN:
		if (f) {
			return vy__ref_f32_min(acc, v);
		}
		return (s ? sv < sa : v < acc) ? v : acc;
	case VY_REDUCE_MAX:
		if (f) {
			return vy__ref_f32_max(acc, v);
		}
		return (s ? sv > sa : v > acc) ? v : acc;
	case VY_REDUCE_AND:
		return acc & v;
	case VY_REDUCE_OR:
		return acc | v;
	case VY_REDUCE_XOR:
		return acc ^ v;
	case VY_REDUCE_COUNT:
		break;
	}
	assert(!"reduction outside the enum");
	return acc;
}

void vy__ref_bitcast(
	enum vy_type to, const struct ref_lanes *lanes, const uint32_t *a, uint32_t *out)
{
	if (to == VY_TYPE_F32) {
		REF_EACH(ref_canon(a[l]));
	} else {
		REF_EACH(a[l]);
	}
}
