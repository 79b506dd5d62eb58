/*
 * Integer and bool operations of the reference interpreter (DESIGN.md §4.1), each applied to the
 * active lanes of a workgroup at once. All arithmetic is done on uint32_t, where C defines
 * wrapping, and signed meaning is given explicitly (comparisons, division, arithmetic shift,
 * mul_high), so no operation depends on undefined or implementation-defined behaviour of signed
 * integers.
 *
 * Where DESIGN.md leaves room:
 *   and, or, not     logical on u32, i32 and bool: nonzero is true; the result is 1 or 0 (true
 *                    or false for bool), never a bitwise combination (bit_and and friends are).
 *   abs_diff         |a - b| as a u32 for u32 and for i32 operands (the distance of two i32
 *                    values reaches 4294967295, which only a u32 holds).
 *   i32 sat_add,     the exact sum or difference clamped to -2147483648 .. 2147483647.
 *   sat_sub
 *   unpack fields    unpack4_low(x)  = x & 0xF         the low nibble
 *                    unpack4_high(x) = x >> 28         the high nibble
 *                    unpack8_low(x)  = x & 0xFF        the low byte
 *                    unpack8_high(x) = x >> 24         the high byte
 *   neg on u32       0 - x (wrapping), like i32.
 *   i32 traps        x / 0 and x % 0 trap int_div_zero; INT_MIN / -1 and INT_MIN % -1 trap
 *                    int_overflow_div; the trapping lane's result is 0.
 */
#include <assert.h>

#include "interp.h"

#define INT32_MIN_BITS UINT32_C(0x80000000)

static inline uint32_t shr_arith(uint32_t a, uint32_t n)
{
	uint32_t r = a >> n;
	if ((a & INT32_MIN_BITS) && n != 0) {
		r |= ~(UINT32_MAX >> n);
	}
	return r;
}

static inline uint32_t rotl(uint32_t a, uint32_t n)
{
	return n == 0 ? a : (a << n) | (a >> (32 - n));
}

/* The bound an overflowing i32 sum saturates to: INT_MAX when `a` is not negative, else INT_MIN.
 * (A sum or difference overflows only toward the side of its first operand.) */
static inline uint32_t sat_bound(uint32_t a)
{
	return (a & INT32_MIN_BITS) ? INT32_MIN_BITS : INT32_MIN_BITS - 1u;
}

static inline uint32_t sat_add_i32(uint32_t a, uint32_t b)
{
	uint32_t r = a + b;
	/* Overflow: both operands have one sign and the sum the other. */
	return ((a ^ r) & (b ^ r) & INT32_MIN_BITS) ? sat_bound(a) : r;
}

static inline uint32_t sat_sub_i32(uint32_t a, uint32_t b)
{
	uint32_t r = a - b;
	/* Overflow: the operands have different signs and the difference has b's. */
	return ((a ^ b) & (a ^ r) & INT32_MIN_BITS) ? sat_bound(a) : r;
}

static inline uint32_t mul_high(uint32_t a, uint32_t b, bool is_signed)
{
	if (!is_signed) {
		return (uint32_t)(((uint64_t)a * b) >> 32);
	}
	int64_t p = (int64_t)ref_i32(a) * (int64_t)ref_i32(b);
	/* The conversion to uint64_t is modular, so the high word keeps the signed product's bits.
	 */
	return (uint32_t)((uint64_t)p >> 32);
}

/* Signed division and remainder with the i32 traps. */
static inline uint32_t div_i32(struct ref_exec *x, uint32_t lane, uint32_t a, uint32_t b, bool rem)
{
	if (b == 0) {
		vy__ref_trap(x, lane, VY_TRAP_INT_DIV_ZERO);
		return 0;
	}
	if (a == INT32_MIN_BITS && b == UINT32_MAX) {
		vy__ref_trap(x, lane, VY_TRAP_INT_OVERFLOW_DIV);
		return 0;
	}
	int32_t sa = ref_i32(a);
	int32_t sb = ref_i32(b);
	return (uint32_t)(rem ? sa % sb : sa / sb);
}

void vy__ref_int_binary(struct ref_exec *x, enum vy_binop op, enum vy_type type,
	const struct ref_lanes *lanes, const uint32_t *a, const uint32_t *b, uint32_t *out)
{
	bool s = type == VY_TYPE_I32;
	switch (op) {
	case VY_BIN_ADD:
		REF_EACH(a[l] + b[l]);
		break;
	case VY_BIN_SUB:
		REF_EACH(a[l] - b[l]);
		break;
	case VY_BIN_MUL:
		REF_EACH(a[l] * b[l]);
		break;
	case VY_BIN_DIV:
		if (s) {
			REF_EACH(div_i32(x, l, a[l], b[l], false));
		} else {
			REF_EACH(b[l] == 0 ? UINT32_MAX : a[l] / b[l]);
		}
		break;
	case VY_BIN_MOD:
		if (s) {
			REF_EACH(div_i32(x, l, a[l], b[l], true));
		} else {
			REF_EACH(b[l] == 0 ? 0 : a[l] % b[l]);
		}
		break;
	case VY_BIN_BIT_AND:
		REF_EACH(a[l] & b[l]);
		break;
	case VY_BIN_BIT_OR:
		REF_EACH(a[l] | b[l]);
		break;
	case VY_BIN_BIT_XOR:
		REF_EACH(a[l] ^ b[l]);
		break;
	case VY_BIN_SHL:
		REF_EACH(a[l] << (b[l] & 31));
		break;
	case VY_BIN_SHR:
		if (s) {
			REF_EACH(shr_arith(a[l], b[l] & 31));
		} else {
			REF_EACH(a[l] >> (b[l] & 31));
		}
		break;
	case VY_BIN_ROTL:
		REF_EACH(rotl(a[l], b[l] & 31));
		break;
	case VY_BIN_ROTR:
		REF_EACH(rotl(a[l], (32 - (b[l] & 31)) & 31));
		break;
	case VY_BIN_EQ:
		REF_EACH(a[l] == b[l]);
		break;
	case VY_BIN_NE:
		REF_EACH(a[l] != b[l]);
		break;
	case VY_BIN_LT:
		if (s) {
			REF_EACH(ref_i32(a[l]) < ref_i32(b[l]));
		} else {
			REF_EACH(a[l] < b[l]);
		}
		break;
	case VY_BIN_LE:
		if (s) {
			REF_EACH(ref_i32(a[l]) <= ref_i32(b[l]));
		} else {
			REF_EACH(a[l] <= b[l]);
		}
		break;
	case VY_BIN_GT:
		if (s) {
			REF_EACH(ref_i32(a[l]) > ref_i32(b[l]));
		} else {
			REF_EACH(a[l] > b[l]);
		}
		break;
	case VY_BIN_GE:
		if (s) {
			REF_EACH(ref_i32(a[l]) >= ref_i32(b[l]));
		} else {
			REF_EACH(a[l] >= b[l]);
		}
		break;
	case VY_BIN_AND:
		REF_EACH(a[l] != 0 && b[l] != 0);
		break;
	case VY_BIN_OR:
		REF_EACH(a[l] != 0 || b[l] != 0);
		break;
	case VY_BIN_MIN:
		if (s) {
			REF_EACH(ref_i32(a[l]) <= ref_i32(b[l]) ? a[l] : b[l]);
		} else {
			REF_EACH(a[l] <= b[l] ? a[l] : b[l]);
		}
		break;
	case VY_BIN_MAX:
		if (s) {
			REF_EACH(ref_i32(a[l]) >= ref_i32(b[l]) ? a[l] : b[l]);
		} else {
			REF_EACH(a[l] >= b[l] ? a[l] : b[l]);
		}
		break;
	case VY_BIN_ABS_DIFF:
		/* The larger minus the smaller: the exact distance, below 2^32, in a word. */
		if (s) {
			REF_EACH(ref_i32(a[l]) >= ref_i32(b[l]) ? a[l] - b[l] : b[l] - a[l]);
		} else {
			REF_EACH(a[l] >= b[l] ? a[l] - b[l] : b[l] - a[l]);
		}
		break;
	case VY_BIN_SAT_ADD:
		if (s) {
			REF_EACH(sat_add_i32(a[l], b[l]));
		} else {
			REF_EACH(a[l] + b[l] < a[l] ? UINT32_MAX : a[l] + b[l]);
		}
		break;
	case VY_BIN_SAT_SUB:
		if (s) {
			REF_EACH(sat_sub_i32(a[l], b[l]));
		} else {
			REF_EACH(a[l] < b[l] ? 0 : a[l] - b[l]);
		}
		break;
	case VY_BIN_SAT_MUL:
		REF_EACH((uint64_t)a[l] * b[l] > UINT32_MAX ? UINT32_MAX : a[l] * b[l]);
		break;
	case VY_BIN_MUL_HIGH:
		REF_EACH(mul_high(a[l], b[l], s));
		break;
	case VY_BIN_HYPOT: /* f32 only, and lowered before the interpreter runs */
	case VY_BIN_ATAN2:
	case VY_BIN_POW:
	case VY_BINOP_COUNT:
		assert(!"not an integer binary operation");
		break;
	}
}

static inline uint32_t popcount(uint32_t v)
{
	return (uint32_t)__builtin_popcount(v);
}

static inline uint32_t clz(uint32_t v)
{
	return v == 0 ? 32 : (uint32_t)__builtin_clz(v);
}

static inline uint32_t ctz(uint32_t v)
{
	return v == 0 ? 32 : (uint32_t)__builtin_ctz(v);
}

static inline uint32_t reverse_bits(uint32_t v)
{
	v = ((v >> 1) & 0x55555555u) | ((v & 0x55555555u) << 1);
	v = ((v >> 2) & 0x33333333u) | ((v & 0x33333333u) << 2);
	v = ((v >> 4) & 0x0F0F0F0Fu) | ((v & 0x0F0F0F0Fu) << 4);
	v = ((v >> 8) & 0x00FF00FFu) | ((v & 0x00FF00FFu) << 8);
	return (v >> 16) | (v << 16);
}

static inline uint32_t abs_i32(uint32_t v)
{
	/* abs(INT_MIN) wraps back to INT_MIN. */
	return (v & INT32_MIN_BITS) ? 0u - v : v;
}

static inline uint32_t sign_i32(uint32_t v)
{
	if (v == 0) {
		return 0;
	}
	return (v & INT32_MIN_BITS) ? UINT32_MAX : 1;
}

void vy__ref_int_unary(enum vy_unop op, enum vy_type type, const struct ref_lanes *lanes,
	const uint32_t *a, uint32_t *out)
{
	(void)type;
	switch (op) {
	case VY_UN_NEG:
		REF_EACH(0u - a[l]);
		break;
	case VY_UN_BIT_NOT:
		REF_EACH(~a[l]);
		break;
	case VY_UN_NOT:
		REF_EACH(a[l] == 0);
		break;
	case VY_UN_POPCOUNT:
		REF_EACH(popcount(a[l]));
		break;
	case VY_UN_CLZ:
		REF_EACH(clz(a[l]));
		break;
	case VY_UN_CTZ:
		REF_EACH(ctz(a[l]));
		break;
	case VY_UN_REVERSE_BITS:
		REF_EACH(reverse_bits(a[l]));
		break;
	case VY_UN_ABS:
		REF_EACH(abs_i32(a[l]));
		break;
	case VY_UN_SIGN:
		REF_EACH(sign_i32(a[l]));
		break;
	case VY_UN_UNPACK4_LOW:
		REF_EACH(a[l] & 0xFu);
		break;
	case VY_UN_UNPACK4_HIGH:
		REF_EACH(a[l] >> 28);
		break;
	case VY_UN_UNPACK8_LOW:
		REF_EACH(a[l] & 0xFFu);
		break;
	case VY_UN_UNPACK8_HIGH:
		REF_EACH(a[l] >> 24);
		break;
	default:
		assert(!"not an integer unary operation");
		break;
	}
}
