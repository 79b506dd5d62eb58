/*
 * The GLSL helper library of generated shaders: every f32 operation, the conversions, the integer
 * operations that GLSL leaves undefined or implementation-defined, the trap raise and the
 * subgroup operations whose GLSL builtins do not give the reference's result. A shader holds only
 * the helpers its program uses, with their dependencies, in the order of the table below (each
 * helper after the ones it calls).
 *
 * f32 values are their bits in a uint, never subnormal, and canonical except that a NaN may be
 * *loose*: any NaN, of either sign and any payload, where the canonical one is 0x7FC00000.
 * NaN, Inf, zero and subnormal tests are integer tests on the bits, never isnan(), and every one
 * of them holds for any NaN: a magnitude above 0x7F800000, never a comparison with 0x7FC00000.
 * So every helper answers a loose NaN as it answers the canonical one, and the NaN it gives back
 * is either the canonical one or its operand; the code generator canonicalizes a value that may
 * be loose only where its bits are seen: a store and a bitcast to an integer (docs/semantics.md,
 * "Where a NaN is canonicalized"). add, sub and mul leave their NaN loose; every other helper
 * returns the canonical NaN or an operand. A subnormal result is flushed to the zero of its sign
 * after add, sub and mul (vy_flush), unless the device is known to do so itself
 * (vy_vk_math.flushes_subnormals), and by every other helper that can make one.
 * Float arithmetic happens only on `precise` variables, one IEEE operation at a time.
 *
 * Operations that the device does not compute exactly (the probe of DESIGN.md §4.4 says which)
 * are computed exactly from the bits:
 *   div   the 27-bit quotient of the significands by integer long division (8 bits a step,
 *         remainder < 2^24 so nothing overflows), a sticky bit from the remainder, and one
 *         rounding to nearest even (vy_round_pack);
 *   sqrt  the 27-bit integer square root of the significand scaled by 2^28, two radicand bits a
 *         step (remainder < 2^28), a sticky bit, one rounding;
 *   fma   with doubles: the product of two floats is exact in double; their sum with the addend
 *         is rounded to odd (TwoSum gives the rounding error, which decides the last bit), and
 *         rounding that double to float once more is then correctly rounded, because 53 >= 24 + 2;
 *         without doubles: the exact sum in 64-bit integer pairs (vy_ffma_exact), one rounding.
 * Devices that flush subnormal results may decide so before rounding (NVIDIA does): a product,
 * quotient or fma that rounds up to the smallest normal comes back as zero. So a zero result of
 * mul, div or fma from operands that cannot give an exact zero is recomputed from the bits.
 * (add and sub never round in that range: their tiny results are exact.)
 * Special operands take the IEEE answer from explicit tests before any of these run.
 */
#include <assert.h>

#include "vk_codegen_internal.h"

static const char canon_text[] = "uint vy_canon(uint x)\n"
				 "{\n"
				 "\tuint e = x & 0x7F800000u;\n"
				 "\tif (e == 0u) {\n"
				 "\t\treturn x & 0x80000000u;\n"
				 "\t}\n"
				 "\tif (e == 0x7F800000u && (x & 0x007FFFFFu) != 0u) {\n"
				 "\t\treturn 0x7FC00000u;\n"
				 "\t}\n"
				 "\treturn x;\n"
				 "}\n";

/* A subnormal result becomes the zero of its sign; a NaN stays as it is (see above). */
static const char flush_text[] = "uint vy_flush(uint x)\n"
				 "{\n"
				 "\treturn (x & 0x7F800000u) == 0u ? x & 0x80000000u : x;\n"
				 "}\n";

static const char isnan_text[] = "bool vy_isnan(uint x)\n"
				 "{\n"
				 "\treturn (x & 0x7FFFFFFFu) > 0x7F800000u;\n"
				 "}\n";

/* (m + f) * 2^e with 0 <= f < 1, f != 0 exactly when sticky: one rounding to nearest even, then
 * overflow to infinity and a subnormal result flushed to the zero of sign s. */
static const char round_pack_text[] =
	"uint vy_round_pack(uint s, int e, uint m, bool sticky)\n"
	"{\n"
	"\tif (m == 0u) {\n"
	"\t\treturn s;\n"
	"\t}\n"
	"\tint lead = e + findMSB(m);\n"
	"\tif (lead > 127) {\n"
	"\t\treturn s | 0x7F800000u;\n"
	"\t}\n"
	"\tint ulp = max(lead - 23, -149);\n"
	"\tint sh = ulp - e;\n"
	"\tuint q = 0u;\n"
	"\tbool up = false;\n"
	"\tif (sh <= 0) {\n"
	"\t\tq = m << uint(-sh);\n"
	"\t} else if (sh <= 32) {\n"
	"\t\tuint rest = m;\n"
	"\t\tuint mid = 0x80000000u;\n"
	"\t\tif (sh < 32) {\n"
	"\t\t\tq = m >> uint(sh);\n"
	"\t\t\trest = m & ((1u << uint(sh)) - 1u);\n"
	"\t\t\tmid = 1u << uint(sh - 1);\n"
	"\t\t}\n"
	"\t\tup = rest > mid || (rest == mid && (sticky || (q & 1u) != 0u));\n"
	"\t}\n"
	"\tuint bits = (uint(ulp + 149) << 23) + q + (up ? 1u : 0u);\n"
	"\tif (bits >= 0x7F800000u) {\n"
	"\t\treturn s | 0x7F800000u;\n"
	"\t}\n"
	"\tif (bits < 0x00800000u) {\n"
	"\t\treturn s;\n"
	"\t}\n"
	"\treturn s | bits;\n"
	"}\n";

/*
 * Zero, infinite and NaN operands take their IEEE result from integer tests, so the float
 * instruction only ever sees finite nonzero operands, on a device whose compiler folds an
 * operation with a constant operand as if zeros had no sign and NaN did not occur, even with
 * SignedZeroInfNanPreserve (math.fold_exact false): lavapipe turns `x + 0.0` into `x` (wrong for
 * -0) and `0.0 * x` into `0.0` (wrong for -0, inf and NaN) when the constant reaches the
 * instruction. Where the probe found no such folding, the instruction decides them itself.
 */
static const char fadd_special[] = "\tuint ma = a & 0x7FFFFFFFu;\n"
				   "\tuint mb = b & 0x7FFFFFFFu;\n"
				   "\tif (ma > 0x7F800000u || mb > 0x7F800000u) {\n"
				   "\t\treturn 0x7FC00000u;\n"
				   "\t}\n"
				   "\tif (ma == 0x7F800000u) {\n"
				   "\t\treturn mb == 0x7F800000u && a != b ? 0x7FC00000u : a;\n"
				   "\t}\n"
				   "\tif (mb == 0x7F800000u) {\n"
				   "\t\treturn b;\n"
				   "\t}\n"
				   "\tif (ma == 0u) {\n"
				   "\t\treturn mb == 0u ? (a & b) : b;\n"
				   "\t}\n"
				   "\tif (mb == 0u) {\n"
				   "\t\treturn a;\n"
				   "\t}\n";

static const char fadd_sum[] = "\tprecise float r = uintBitsToFloat(a) + uintBitsToFloat(b);\n";

/* a - b is a + (-b) exactly, NaN included (a NaN either way). */
static const char fsub_negate[] = "\tb ^= 0x80000000u;\n";

/*
 * A device that flushes subnormal results may decide before rounding, and so return zero where
 * the product rounds up to the smallest normal: a zero from nonzero operands is recomputed from
 * the bits (umulExtended gives the 48-bit product of the significands exactly).
 */
static const char mulx_text[] =
	"uint vy_fmul_exact(uint a, uint b)\n"
	"{\n"
	"\tuint hi;\n"
	"\tuint lo;\n"
	"\tumulExtended((a & 0x007FFFFFu) | 0x00800000u,\n"
	"\t\t(b & 0x007FFFFFu) | 0x00800000u, hi, lo);\n"
	"\tint e = int((a >> 23) & 0xFFu) + int((b >> 23) & 0xFFu) - 284;\n"
	"\treturn vy_round_pack((a ^ b) & 0x80000000u, e, (hi << 16) | (lo >> 16),\n"
	"\t\t(lo & 0xFFFFu) != 0u);\n"
	"}\n";

/* The sign of a product or quotient, both magnitudes, and the canonical NaN for a NaN operand. */
#define SIGN_AND_NAN                                                                               \
	"\tuint s = (a ^ b) & 0x80000000u;\n"                                                      \
	"\tuint ma = a & 0x7FFFFFFFu;\n"                                                           \
	"\tuint mb = b & 0x7FFFFFFFu;\n"                                                           \
	"\tif (ma > 0x7F800000u || mb > 0x7F800000u) {\n"                                          \
	"\t\treturn 0x7FC00000u;\n"                                                                \
	"\t}\n"

/* Special operands by integer tests, as for add: the product only sees finite nonzero ones. */
static const char fmul_special[] =
	SIGN_AND_NAN "\tif (ma == 0x7F800000u || mb == 0x7F800000u) {\n"
		     "\t\treturn ma == 0u || mb == 0u ? 0x7FC00000u : (s | 0x7F800000u);\n"
		     "\t}\n"
		     "\tif (ma == 0u || mb == 0u) {\n"
		     "\t\treturn s;\n"
		     "\t}\n"
		     "\tprecise float r = uintBitsToFloat(a) * uintBitsToFloat(b);\n";

static const char fmul_special_tail[] = "\tif ((x & 0x7FFFFFFFu) == 0u) {\n"
					"\t\tx = vy_fmul_exact(a, b);\n"
					"\t}\n"
					"\treturn x;\n"
					"}\n";

/* The instruction decides special operands; only a zero from nonzero operands is recomputed. */
static const char fmul_native[] = "\tprecise float r = uintBitsToFloat(a) * uintBitsToFloat(b);\n";

static const char fmul_native_tail[] =
	"\tif ((x & 0x7FFFFFFFu) == 0u && (a & 0x7FFFFFFFu) != 0u &&\n"
	"\t\t(b & 0x7FFFFFFFu) != 0u) {\n"
	"\t\tx = vy_fmul_exact(a, b);\n"
	"\t}\n"
	"\treturn x;\n"
	"}\n";

/*
 * On a device whose fma() is fused, a zero product of run-time operands (nothing else folds it)
 * is decided without the exact product: the result is the zero of the product's sign or, where
 * the flush came before rounding, the smallest normal number. It is the latter exactly when
 * |a * b| >= 2^-126 - 2^-150 (the tie rounds to the even 2^-126), the threshold T = 0x207FFFFF
 * scaled by 2^-64. With both operands nonzero |a| < 1 here (|b| >= 2^-126), so |a| * 2^64 is
 * exact, and the fused |a| * 2^64 * |b| - T has the sign of the exact difference, a flushed one
 * included (a flush keeps the sign; an exact 0 is +0, and the tie goes up): its bits are below
 * 0x7F800000 exactly when the product reaches the threshold. A zero operand gives -T, or NaN
 * where |a| * 2^64 overflows: the signed zero either way. No other operand gives a zero
 * product: infinities and NaN give neither.
 */
static const char fmul_fused_tail[] =
	"\tif (r == 0.0) {\n"
	"\t\tprecise float d = fma(abs(uintBitsToFloat(a)) * uintBitsToFloat(0x5F800000u),\n"
	"\t\t\tabs(uintBitsToFloat(b)), -uintBitsToFloat(0x207FFFFFu));\n"
	"\t\tx = ((a ^ b) & 0x80000000u) | (floatBitsToUint(d) < 0x7F800000u ? 0x00800000u : 0u);\n"
	"\t}\n"
	"\treturn x;\n"
	"}\n";

/*
 * The product in the first run of a speculated loop: the device's, with `hz` set wherever the
 * device's flush before rounding may differ from vy_fmul's 2^-126 (the loop then runs again with
 * vy_fmul). That happens only for normal operands with 2^-126 - 2^-150 <= |a * b| < 2^-126. The
 * fused |a| * |b| - 2^-126 is then in [-2^-150, 0): below 2^-126 in magnitude whether the device
 * keeps it subnormal or flushes it. A zero operand (or a subnormal one, which the device reads
 * as zero in the fma as in the product) gives exactly -2^-126, a product of 2^-125 or more
 * 2^-126 or more, an infinity or NaN no number below it: none of those sets `hz`. Products in
 * [2^-126, 2^-125) set it needlessly, which costs only the second run.
 */
static const char fmulq_text[] =
	"uint vy_fmulq(uint a, uint b, inout bool hz)\n"
	"{\n"
	"\tprecise float r = uintBitsToFloat(a) * uintBitsToFloat(b);\n"
	"\tprecise float w = fma(abs(uintBitsToFloat(a)), abs(uintBitsToFloat(b)),\n"
	"\t\t-uintBitsToFloat(0x00800000u));\n"
	"\thz = any(bvec2(hz, abs(w) < uintBitsToFloat(0x00800000u)));\n"
	"\treturn floatBitsToUint(r);\n"
	"}\n";

const char *vy_vk_codegen_product_flag(void)
{
	return fmulq_text;
}

/*
 * a * b + c for finite operands with a * b != 0, from the bits: the 48-bit product and the addend
 * in one 64-bit frame (uvec2: x the low word, y the high word; both values below 2^62), the one
 * with the smaller exponent shifted right with its lost bits jammed into bit 0, added or
 * subtracted, then rounded once. A jammed bit can only meet a result of 59 bits or more, so it
 * never counts as a value bit; a massive cancellation needs exponents within one, which loses no
 * bit at all.
 */
static const char fma_exact_text[] =
	"uvec2 vy_shr_jam(uvec2 v, int n)\n"
	"{\n"
	"\tif (n <= 0) {\n"
	"\t\treturn v;\n"
	"\t}\n"
	"\tuvec2 r = uvec2(0u);\n"
	"\tbool lost = (v.x | v.y) != 0u;\n"
	"\tif (n < 32) {\n"
	"\t\tuint k = uint(n);\n"
	"\t\tr = uvec2((v.x >> k) | (v.y << (32u - k)), v.y >> k);\n"
	"\t\tlost = (v.x & ((1u << k) - 1u)) != 0u;\n"
	"\t} else if (n < 64) {\n"
	"\t\tuint k = uint(n - 32);\n"
	"\t\tr = uvec2(v.y >> k, 0u);\n"
	"\t\tlost = v.x != 0u || (v.y & ((1u << k) - 1u)) != 0u;\n"
	"\t}\n"
	"\tif (lost) {\n"
	"\t\tr.x |= 1u;\n"
	"\t}\n"
	"\treturn r;\n"
	"}\n"
	"uint vy_ffma_exact(uint a, uint b, uint c)\n"
	"{\n"
	"\tif ((c & 0x7FFFFFFFu) == 0u) {\n"
	"\t\treturn vy_fmul_exact(a, b);\n"
	"\t}\n"
	"\tuint sp = (a ^ b) & 0x80000000u;\n"
	"\tuint sc = c & 0x80000000u;\n"
	"\tuint hi;\n"
	"\tuint lo;\n"
	"\tumulExtended((a & 0x007FFFFFu) | 0x00800000u,\n"
	"\t\t(b & 0x007FFFFFu) | 0x00800000u, hi, lo);\n"
	"\tuvec2 p = uvec2(lo << 14, (hi << 14) | (lo >> 18));\n"
	"\tint ep = int((a >> 23) & 0xFFu) + int((b >> 23) & 0xFFu) - 314;\n"
	"\tuvec2 q = uvec2(0u, ((c & 0x007FFFFFu) | 0x00800000u) << 6);\n"
	"\tint eq = int((c >> 23) & 0xFFu) - 188;\n"
	"\tuvec2 big = p;\n"
	"\tuvec2 small = vy_shr_jam(q, ep - eq);\n"
	"\tuint sbig = sp;\n"
	"\tuint ssmall = sc;\n"
	"\tint e = ep;\n"
	"\tif (eq > ep) {\n"
	"\t\tbig = q;\n"
	"\t\tsmall = vy_shr_jam(p, eq - ep);\n"
	"\t\tsbig = sc;\n"
	"\t\tssmall = sp;\n"
	"\t\te = eq;\n"
	"\t}\n"
	"\tuvec2 r;\n"
	"\tuint s = sbig;\n"
	"\tif (sbig == ssmall) {\n"
	"\t\tuint carry;\n"
	"\t\tr.x = uaddCarry(big.x, small.x, carry);\n"
	"\t\tr.y = big.y + small.y + carry;\n"
	"\t} else {\n"
	"\t\tif (small.y > big.y || (small.y == big.y && small.x > big.x)) {\n"
	"\t\t\tuvec2 t = big;\n"
	"\t\t\tbig = small;\n"
	"\t\t\tsmall = t;\n"
	"\t\t\ts = ssmall;\n"
	"\t\t}\n"
	"\t\tuint borrow;\n"
	"\t\tr.x = usubBorrow(big.x, small.x, borrow);\n"
	"\t\tr.y = big.y - small.y - borrow;\n"
	"\t}\n"
	"\tif ((r.x | r.y) == 0u) {\n"
	"\t\treturn 0u;\n"
	"\t}\n"
	"\tint msb = r.y != 0u ? 32 + findMSB(r.y) : findMSB(r.x);\n"
	"\tif (msb <= 31) {\n"
	"\t\treturn vy_round_pack(s, e, r.x, false);\n"
	"\t}\n"
	"\tuvec2 m = vy_shr_jam(r, msb - 31);\n"
	"\treturn vy_round_pack(s, e + msb - 31, m.x & ~1u, (m.x & 1u) != 0u);\n"
	"}\n";

static const char fdiv_exact[] = "uint vy_fdiv_exact(uint a, uint b)\n"
				 "{\n"
				 "\tuint na = (a & 0x007FFFFFu) | 0x00800000u;\n"
				 "\tuint nb = (b & 0x007FFFFFu) | 0x00800000u;\n"
				 "\tuint q = 0u;\n"
				 "\tuint r = na;\n"
				 "\tif (r >= nb) {\n"
				 "\t\tq = 1u;\n"
				 "\t\tr -= nb;\n"
				 "\t}\n"
				 "\tfor (int i = 0; i < 4; ++i) {\n"
				 "\t\tuint w = i < 3 ? 8u : 2u;\n"
				 "\t\tr <<= w;\n"
				 "\t\tuint d = r / nb;\n"
				 "\t\tq = (q << w) | d;\n"
				 "\t\tr -= d * nb;\n"
				 "\t}\n"
				 "\tint e = int((a >> 23) & 0xFFu) - int((b >> 23) & 0xFFu) - 26;\n"
				 "\treturn vy_round_pack((a ^ b) & 0x80000000u, e, q, r != 0u);\n"
				 "}\n";

static const char fdiv_head[] = "uint vy_fdiv(uint a, uint b)\n"
				"{\n" SIGN_AND_NAN "\tif (ma == 0x7F800000u) {\n"
				"\t\treturn mb == 0x7F800000u ? 0x7FC00000u : (s | 0x7F800000u);\n"
				"\t}\n"
				"\tif (mb == 0x7F800000u) {\n"
				"\t\treturn s;\n"
				"\t}\n"
				"\tif (ma == 0u) {\n"
				"\t\treturn mb == 0u ? 0x7FC00000u : s;\n"
				"\t}\n"
				"\tif (mb == 0u) {\n"
				"\t\treturn s | 0x7F800000u;\n"
				"\t}\n";

/* Operands are finite and nonzero here: a zero quotient is an underflow to recompute. */
static const char fdiv_builtin[] = "\tprecise float r = uintBitsToFloat(a) / uintBitsToFloat(b);\n"
				   "\tuint x = vy_canon(floatBitsToUint(r));\n"
				   "\treturn (x & 0x7FFFFFFFu) == 0u ? vy_fdiv_exact(a, b) : x;\n"
				   "}\n";

static const char fdiv_bits[] = "\treturn vy_fdiv_exact(a, b);\n"
				"}\n";

/*
 * Division from the device's approximate one, proven before it is kept (docs/semantics.md §6.5):
 * the significands as x and y in [1, 2), a quotient q refined by one fma step, and its exact
 * remainder x - q*y. When |x - q*y| < y*h, h the smaller half spacing of the floats beside q,
 * x/y lies nearer q than any other float, so q is the correctly rounded quotient; the remainder
 * is exact whenever that test can pass (it is then below 2^-23, a multiple of 2^-47). The
 * quotient's exponent is added to q's when the result is normal; anything else (a failed test, a
 * subnormal or overflowing result) takes the integer long division. Operands are finite,
 * nonzero and normal here.
 */
static const char fdiv_fast[] =
	"uint vy_fdiv_fast(uint a, uint b)\n"
	"{\n"
	"\tprecise float x = uintBitsToFloat((a & 0x007FFFFFu) | 0x3F800000u);\n"
	"\tprecise float y = uintBitsToFloat((b & 0x007FFFFFu) | 0x3F800000u);\n"
	"\tprecise float t = 1.0 / y;\n"
	"\tprecise float q0 = x * t;\n"
	"\tprecise float e = fma(-q0, y, x);\n"
	"\tprecise float q = fma(e, t, q0);\n"
	"\tprecise float r = fma(-q, y, x);\n"
	"\tuint qb = floatBitsToUint(q);\n"
	"\tprecise float h = uintBitsToFloat(qb > 0x3F800000u ? 0x33800000u : 0x33000000u);\n"
	"\tprecise float lim = y * h;\n"
	"\tint k = int((qb >> 23) & 0xFFu) + int((a >> 23) & 0xFFu) - int((b >> 23) & 0xFFu);\n"
	"\tif (abs(r) < lim && k > 0 && k < 255) {\n"
	"\t\treturn ((a ^ b) & 0x80000000u) | (uint(k) << 23) | (qb & 0x007FFFFFu);\n"
	"\t}\n"
	"\treturn vy_fdiv_exact(a, b);\n"
	"}\n";

static const char fdiv_fused[] = "\treturn vy_fdiv_fast(a, b);\n"
				 "}\n";

/* C's fmodf: the exact remainder of the truncated quotient, with the sign of a. */
static const char fmod_text[] = "uint vy_fmod(uint a, uint b)\n"
				"{\n"
				"\tuint s = a & 0x80000000u;\n"
				"\tuint ma = a & 0x7FFFFFFFu;\n"
				"\tuint mb = b & 0x7FFFFFFFu;\n"
				"\tif (ma >= 0x7F800000u || mb > 0x7F800000u || mb == 0u) {\n"
				"\t\treturn 0x7FC00000u;\n"
				"\t}\n"
				"\tif (mb == 0x7F800000u || ma < mb) {\n"
				"\t\treturn a;\n"
				"\t}\n"
				"\tuint d = (mb & 0x007FFFFFu) | 0x00800000u;\n"
				"\tuint r = ((ma & 0x007FFFFFu) | 0x00800000u) % d;\n"
				"\tint k = int(ma >> 23) - int(mb >> 23);\n"
				"\twhile (k > 0) {\n"
				"\t\tint w = min(k, 8);\n"
				"\t\tr = (r << uint(w)) % d;\n"
				"\t\tk -= w;\n"
				"\t}\n"
				"\treturn vy_round_pack(s, int(mb >> 23) - 150, r, false);\n"
				"}\n";

static const char fsqrt_head[] = "uint vy_fsqrt(uint x)\n"
				 "{\n"
				 "\tif ((x & 0x7FFFFFFFu) == 0u || x == 0x7F800000u) {\n"
				 "\t\treturn x;\n"
				 "\t}\n"
				 "\tif (x > 0x7F800000u) {\n"
				 "\t\treturn 0x7FC00000u;\n"
				 "\t}\n";

static const char fsqrt_builtin[] = "\tprecise float r = sqrt(uintBitsToFloat(x));\n"
				    "\treturn vy_canon(floatBitsToUint(r));\n"
				    "}\n";

/*
 * Square root from the device's approximate inverse square root, proven before it is kept
 * (docs/semantics.md §6.5): the significand as m in [1, 4) with an even exponent left over, a
 * root s refined by one fma step, and the exact remainder m - s*s. When |m - s*s| is below the
 * float under 2*s*h (h the smaller half spacing beside s), which is below 2*s*h - h*h, m lies
 * strictly between (s - h)^2 and (s + h)^2, so s is the correctly rounded root; the remainder
 * is exact whenever that test can pass (it is then below 2^-22, a multiple of 2^-46). Otherwise
 * the integer square root decides. x is positive, finite and normal here.
 */
static const char fsqrt_fused[] =
	"\tint ex = int(x >> 23) - 127;\n"
	"\tuint odd = uint(ex) & 1u;\n"
	"\tprecise float m = uintBitsToFloat((x & 0x007FFFFFu) | (odd != 0u ? 0x40000000u : "
	"0x3F800000u));\n"
	"\tprecise float t = inversesqrt(m);\n"
	"\tprecise float s0 = m * t;\n"
	"\tprecise float d = fma(-s0, s0, m);\n"
	"\tprecise float s = fma(d, 0.5 * t, s0);\n"
	"\tprecise float r = fma(-s, s, m);\n"
	"\tuint sb = floatBitsToUint(s);\n"
	"\tprecise float w = s * uintBitsToFloat(sb > 0x3F800000u ? 0x34000000u : 0x33800000u);\n"
	"\tif (abs(r) < uintBitsToFloat(floatBitsToUint(w) - 1u)) {\n"
	"\t\treturn uint(int(sb >> 23) + ((ex - int(odd)) >> 1)) << 23 | (sb & 0x007FFFFFu);\n"
	"\t}\n"
	"\treturn vy_fsqrt_bits(x);\n"
	"}\n";

static const char fsqrt_exact[] = "\tuint m = (x & 0x007FFFFFu) | 0x00800000u;\n"
				  "\tint e = int(x >> 23) - 150;\n"
				  "\tif ((e & 1) != 0) {\n"
				  "\t\tm <<= 1;\n"
				  "\t\te -= 1;\n"
				  "\t}\n"
				  "\tuint rem = 0u;\n"
				  "\tuint root = 0u;\n"
				  "\tfor (int i = 0; i < 27; ++i) {\n"
				  "\t\tuint pair = i < 13 ? (m >> uint(24 - 2 * i)) & 3u : 0u;\n"
				  "\t\trem = (rem << 2) | pair;\n"
				  "\t\tuint trial = (root << 2) | 1u;\n"
				  "\t\troot <<= 1;\n"
				  "\t\tif (rem >= trial) {\n"
				  "\t\t\trem -= trial;\n"
				  "\t\t\troot |= 1u;\n"
				  "\t\t}\n"
				  "\t}\n"
				  "\treturn vy_round_pack(0u, (e >> 1) - 14, root, rem != 0u);\n"
				  "}\n";

/*
 * The IEEE special cases of fma by integer tests, as for add and mul: a NaN, an infinite or zero
 * factor, an infinite addend. A driver may fold an fma whose operand is a constant zero (lavapipe
 * turns fma(NaN, 0.0, 0.0) into 0 and double(0.0) * x into 0), so every variant below answers
 * these first; what follows sees finite nonzero factors and a finite addend.
 */
#define FFMA_SPECIAL(name)                                                                         \
	"uint " name "(uint a, uint b, uint c)\n"                                                  \
	"{\n"                                                                                      \
	"\tif (vy_isnan(a) || vy_isnan(b) || vy_isnan(c)) {\n"                                     \
	"\t\treturn 0x7FC00000u;\n"                                                                \
	"\t}\n"                                                                                    \
	"\tuint sp = (a ^ b) & 0x80000000u;\n"                                                     \
	"\tbool zero = (a & 0x7FFFFFFFu) == 0u || (b & 0x7FFFFFFFu) == 0u;\n"                      \
	"\tbool inf = (a & 0x7FFFFFFFu) == 0x7F800000u || (b & 0x7FFFFFFFu) == 0x7F800000u;\n"     \
	"\tif (inf) {\n"                                                                           \
	"\t\tbool cancel = (c & 0x7FFFFFFFu) == 0x7F800000u && (c & 0x80000000u) != sp;\n"         \
	"\t\treturn zero || cancel ? 0x7FC00000u : (sp | 0x7F800000u);\n"                          \
	"\t}\n"                                                                                    \
	"\tif ((c & 0x7FFFFFFFu) == 0x7F800000u) {\n"                                              \
	"\t\treturn c;\n"                                                                          \
	"\t}\n"                                                                                    \
	"\tif (zero) {\n"                                                                          \
	"\t\tif ((c & 0x7FFFFFFFu) != 0u) {\n"                                                     \
	"\t\t\treturn c;\n"                                                                        \
	"\t\t}\n"                                                                                  \
	"\t\treturn sp == (c & 0x80000000u) ? c : 0u;\n"                                           \
	"\t}\n"

/* A product that rounds to zero although its factors are nonzero is recomputed, as for mul. */
#define FFMA_ZERO_RECOMPUTED                                                                       \
	"\tuint x = vy_canon(floatBitsToUint(r));\n"                                               \
	"\tif ((x & 0x7FFFFFFFu) == 0u) {\n"                                                       \
	"\t\tx = vy_ffma_exact(a, b, c);\n"                                                        \
	"\t}\n"                                                                                    \
	"\treturn x;\n"                                                                            \
	"}\n"

/* The device's fused fma behind the special cases, its zero result recomputed: `name`'s body. */
#define FFMA_FUSED(name)                                                                           \
	FFMA_SPECIAL(name)                                                                         \
	"\tprecise float r = fma(uintBitsToFloat(a), uintBitsToFloat(b), "                         \
	"uintBitsToFloat(c));\n" FFMA_ZERO_RECOMPUTED

static const char ffma_builtin[] = FFMA_FUSED("vy_ffma");

/*
 * A fused fma on a device that folds constants exactly gives IEEE's answer for every operand
 * (a NaN loose, section "Where a NaN is canonicalized" of docs/semantics.md), except where the
 * result is zero or subnormal: there the device may flush before it rounds, so that result is
 * decided as above, with the special cases first.
 */
static const char ffma_fused_special[] = FFMA_FUSED("vy_ffma_special");

static const char ffma_fused[] = "uint vy_ffma(uint a, uint b, uint c)\n"
				 "{\n"
				 "\tprecise float r = fma(uintBitsToFloat(a), uintBitsToFloat(b), "
				 "uintBitsToFloat(c));\n"
				 "\tuint x = floatBitsToUint(r);\n"
				 "\tif ((x & 0x7F800000u) == 0u) {\n"
				 "\t\tx = vy_ffma_special(a, b, c);\n"
				 "\t}\n"
				 "\treturn x;\n"
				 "}\n";

/*
 * The fma in the first run of a speculated loop or run (vk_codegen.c): the device's, with `hz` set
 * wherever vy_ffma might not keep it: a result whose exponent field is 0 (a zero, or a subnormal
 * where the device keeps one), unless the exact result is 0. An exact zero (an error term of a
 * product or a sum is often one) is IEEE's zero on both. An exact result that is not 0 but
 * below 2^-126 in magnitude and at least 2^-190 makes the same fma scaled by 2^64 (its operands
 * a * 2^64 and c * 2^64 exact) a normal number, which sets `hz`; one below 2^-190 rounds to the
 * zero of its sign on both (the device's flush keeps the sign). An operand of 2^64 or more can make
 * the scaled fma infinite or NaN, which sets `hz` needlessly; that costs only the second run.
 */
static const char ffmaq_text[] =
	"uint vy_ffmaq(uint a, uint b, uint c, inout bool hz)\n"
	"{\n"
	"\tfloat fa = uintBitsToFloat(a);\n"
	"\tfloat fb = uintBitsToFloat(b);\n"
	"\tfloat fc = uintBitsToFloat(c);\n"
	"\tprecise float r = fma(fa, fb, fc);\n"
	"\tprecise float s = fma(fa * uintBitsToFloat(0x5F800000u), fb,\n"
	"\t\tfc * uintBitsToFloat(0x5F800000u));\n"
	"\thz = any(bvec2(hz, abs(r) < uintBitsToFloat(0x00800000u) && s != 0.0));\n"
	"\treturn floatBitsToUint(r);\n"
	"}\n";

const char *vy_vk_codegen_fma_flag(void)
{
	return ffmaq_text;
}

/* The product is exact in double; the sum's rounding error decides the last bit (round to odd),
 * so that the one rounding to float is correct. */
static const char ffma_f64[] = FFMA_SPECIAL(
	"vy_ffma") "\tprecise double p = double(uintBitsToFloat(a)) * double(uintBitsToFloat(b));\n"
		   "\tprecise double z = double(uintBitsToFloat(c));\n"
		   "\tprecise double s = p + z;\n"
		   "\tprecise double v = s - p;\n"
		   "\tprecise double err = (p - (s - v)) + (z - v);\n"
		   "\tif (err != 0.0) {\n"
		   "\t\tuvec2 w = unpackDouble2x32(s);\n"
		   "\t\tif ((w.x & 1u) == 0u) {\n"
		   "\t\t\tif ((err > 0.0) == (s > 0.0)) {\n"
		   "\t\t\t\tw.x += 1u;\n"
		   "\t\t\t} else {\n"
		   "\t\t\t\tif (w.x == 0u) {\n"
		   "\t\t\t\t\tw.y -= 1u;\n"
		   "\t\t\t\t}\n"
		   "\t\t\t\tw.x -= 1u;\n"
		   "\t\t\t}\n"
		   "\t\t\ts = packDouble2x32(w);\n"
		   "\t\t}\n"
		   "\t}\n"
		   "\tprecise float r = float(s);\n" FFMA_ZERO_RECOMPUTED;

/* Neither a fused fma nor doubles: the special cases, then the exact computation. */
static const char ffma_bits[] = FFMA_SPECIAL("vy_ffma") "\treturn vy_ffma_exact(a, b, c);\n"
							"}\n";

/* A NaN operand is ignored; of two equal values only the zeros differ, and -0 is the smaller. */
static const char fmin_text[] = "uint vy_fmin(uint a, uint b)\n"
				"{\n"
				"\tif (vy_isnan(a)) {\n"
				"\t\treturn b;\n"
				"\t}\n"
				"\tif (vy_isnan(b)) {\n"
				"\t\treturn a;\n"
				"\t}\n"
				"\tfloat fa = uintBitsToFloat(a);\n"
				"\tfloat fb = uintBitsToFloat(b);\n"
				"\tif (fa < fb) {\n"
				"\t\treturn a;\n"
				"\t}\n"
				"\tif (fb < fa) {\n"
				"\t\treturn b;\n"
				"\t}\n"
				"\treturn a | (b & 0x80000000u);\n"
				"}\n";

static const char fmax_text[] = "uint vy_fmax(uint a, uint b)\n"
				"{\n"
				"\tif (vy_isnan(a)) {\n"
				"\t\treturn b;\n"
				"\t}\n"
				"\tif (vy_isnan(b)) {\n"
				"\t\treturn a;\n"
				"\t}\n"
				"\tfloat fa = uintBitsToFloat(a);\n"
				"\tfloat fb = uintBitsToFloat(b);\n"
				"\tif (fa > fb) {\n"
				"\t\treturn a;\n"
				"\t}\n"
				"\tif (fb > fa) {\n"
				"\t\treturn b;\n"
				"\t}\n"
				"\treturn a & (b | 0x7FFFFFFFu);\n"
				"}\n";

/*
 * IEEE comparisons on the bits: vy_fkey maps the non-NaN values to unsigned keys in their order
 * (with -0 just below +0, which the comparisons treat as equal); every comparison with a NaN is
 * false, and ne is the negation of eq.
 */
static const char fcmp_text[] =
	"uint vy_fkey(uint x)\n"
	"{\n"
	"\treturn (x & 0x80000000u) != 0u ? ~x : (x | 0x80000000u);\n"
	"}\n"
	"bool vy_fzeros(uint a, uint b)\n"
	"{\n"
	"\treturn ((a | b) & 0x7FFFFFFFu) == 0u;\n"
	"}\n"
	"bool vy_feq(uint a, uint b)\n"
	"{\n"
	"\treturn !vy_isnan(a) && !vy_isnan(b) && (a == b || vy_fzeros(a, b));\n"
	"}\n"
	"bool vy_flt(uint a, uint b)\n"
	"{\n"
	"\treturn !vy_isnan(a) && !vy_isnan(b) && !vy_fzeros(a, b) &&\n"
	"\t\tvy_fkey(a) < vy_fkey(b);\n"
	"}\n"
	"bool vy_fle(uint a, uint b)\n"
	"{\n"
	"\treturn !vy_isnan(a) && !vy_isnan(b) &&\n"
	"\t\t(vy_fzeros(a, b) || vy_fkey(a) <= vy_fkey(b));\n"
	"}\n";

static const char ftrunc_text[] = "uint vy_ftrunc(uint x)\n"
				  "{\n"
				  "\tuint e = (x >> 23) & 0xFFu;\n"
				  "\tif (e >= 150u) {\n"
				  "\t\treturn x;\n"
				  "\t}\n"
				  "\tif (e < 127u) {\n"
				  "\t\treturn x & 0x80000000u;\n"
				  "\t}\n"
				  "\treturn x & ~((1u << (150u - e)) - 1u);\n"
				  "}\n";

/* The step to the next integer is exact: |trunc(x)| < 2^23 there. */
static const char ffloor_text[] = "uint vy_ffloor(uint x)\n"
				  "{\n"
				  "\tuint t = vy_ftrunc(x);\n"
				  "\tif (t != x && (x & 0x80000000u) != 0u) {\n"
				  "\t\tprecise float r = uintBitsToFloat(t) - 1.0;\n"
				  "\t\treturn floatBitsToUint(r);\n"
				  "\t}\n"
				  "\treturn t;\n"
				  "}\n";

static const char fceil_text[] = "uint vy_fceil(uint x)\n"
				 "{\n"
				 "\tuint t = vy_ftrunc(x);\n"
				 "\tif (t != x && (x & 0x80000000u) == 0u) {\n"
				 "\t\tprecise float r = uintBitsToFloat(t) + 1.0;\n"
				 "\t\treturn floatBitsToUint(r);\n"
				 "\t}\n"
				 "\treturn t;\n"
				 "}\n";

/*
 * Half away from zero: add one half to the magnitude as an integer on the bits (a carry into the
 * exponent field lands on the next power of two, which truncation keeps), then truncate.
 */
static const char fround_text[] =
	"uint vy_fround(uint x)\n"
	"{\n"
	"\tuint e = (x >> 23) & 0xFFu;\n"
	"\tif (e >= 150u) {\n"
	"\t\treturn x;\n"
	"\t}\n"
	"\tuint s = x & 0x80000000u;\n"
	"\tif (e < 126u) {\n"
	"\t\treturn s;\n"
	"\t}\n"
	"\treturn s | vy_ftrunc((x & 0x7FFFFFFFu) + (1u << (149u - e)));\n"
	"}\n";

static const char fsign_text[] = "uint vy_fsign(uint x)\n"
				 "{\n"
				 "\tif (vy_isnan(x)) {\n"
				 "\t\treturn 0x7FC00000u;\n"
				 "\t}\n"
				 "\tif ((x & 0x7FFFFFFFu) == 0u) {\n"
				 "\t\treturn 0u;\n"
				 "\t}\n"
				 "\treturn (x & 0x80000000u) != 0u ? 0xBF800000u : 0x3F800000u;\n"
				 "}\n";

/*
 * An integer of at most 24 significant bits is an f32 exactly, and Vulkan converts a value the
 * destination type represents exactly to that value: the device's conversion gives it. Larger
 * integers round, and Vulkan leaves that rounding's direction open, so they round here.
 */
static const char u2f_text[] = "uint vy_u2f(uint x)\n"
			       "{\n"
			       "\tif (x <= 0x01000000u) {\n"
			       "\t\treturn floatBitsToUint(float(x));\n"
			       "\t}\n"
			       "\treturn vy_round_pack(0u, 0, x, false);\n"
			       "}\n";

static const char i2f_text[] = "uint vy_i2f(uint x)\n"
			       "{\n"
			       "\tif (x + 0x01000000u <= 0x02000000u) {\n"
			       "\t\treturn floatBitsToUint(float(int(x)));\n"
			       "\t}\n"
			       "\tuint s = x & 0x80000000u;\n"
			       "\treturn vy_round_pack(s, 0, s != 0u ? 0u - x : x, false);\n"
			       "}\n";

/* Truncate and saturate; NaN gives 0. Negative values (and -0) truncate or clamp to 0. */
static const char f2u_text[] = "uint vy_f2u(uint x)\n"
			       "{\n"
			       "\tif (x > 0x7F800000u) {\n"
			       "\t\treturn 0u;\n"
			       "\t}\n"
			       "\tuint e = x >> 23;\n"
			       "\tif (e < 127u) {\n"
			       "\t\treturn 0u;\n"
			       "\t}\n"
			       "\tif (e >= 159u) {\n"
			       "\t\treturn 0xFFFFFFFFu;\n"
			       "\t}\n"
			       "\tuint m = (x & 0x007FFFFFu) | 0x00800000u;\n"
			       "\treturn e >= 150u ? m << (e - 150u) : m >> (150u - e);\n"
			       "}\n";

static const char f2i_text[] = "uint vy_f2i(uint x)\n"
			       "{\n"
			       "\tif ((x & 0x7FFFFFFFu) > 0x7F800000u) {\n"
			       "\t\treturn 0u;\n"
			       "\t}\n"
			       "\tuint s = x & 0x80000000u;\n"
			       "\tuint e = (x >> 23) & 0xFFu;\n"
			       "\tif (e < 127u) {\n"
			       "\t\treturn 0u;\n"
			       "\t}\n"
			       "\tif (e >= 158u) {\n"
			       "\t\treturn s != 0u ? 0x80000000u : 0x7FFFFFFFu;\n"
			       "\t}\n"
			       "\tuint m = (x & 0x007FFFFFu) | 0x00800000u;\n"
			       "\tuint v = e >= 150u ? m << (e - 150u) : m >> (150u - e);\n"
			       "\treturn s != 0u ? 0u - v : v;\n"
			       "}\n";

/* Truncating i32 division on magnitudes; the caller has trapped b == 0 and INT_MIN / -1. */
static const char sdiv_text[] = "uint vy_sdiv(uint a, uint b)\n"
				"{\n"
				"\tuint ua = (a & 0x80000000u) != 0u ? 0u - a : a;\n"
				"\tuint ub = (b & 0x80000000u) != 0u ? 0u - b : b;\n"
				"\tuint q = ua / ub;\n"
				"\treturn ((a ^ b) & 0x80000000u) != 0u ? 0u - q : q;\n"
				"}\n";

static const char smod_text[] = "uint vy_smod(uint a, uint b)\n"
				"{\n"
				"\tuint ua = (a & 0x80000000u) != 0u ? 0u - a : a;\n"
				"\tuint ub = (b & 0x80000000u) != 0u ? 0u - b : b;\n"
				"\tuint r = ua % ub;\n"
				"\treturn (a & 0x80000000u) != 0u ? 0u - r : r;\n"
				"}\n";

static const char rot_text[] = "uint vy_rotl(uint a, uint n)\n"
			       "{\n"
			       "\tn &= 31u;\n"
			       "\treturn n == 0u ? a : (a << n) | (a >> (32u - n));\n"
			       "}\n"
			       "uint vy_rotr(uint a, uint n)\n"
			       "{\n"
			       "\tn &= 31u;\n"
			       "\treturn n == 0u ? a : (a >> n) | (a << (32u - n));\n"
			       "}\n";

static const char bits_text[] = "uint vy_clz(uint a)\n"
				"{\n"
				"\treturn a == 0u ? 32u : uint(31 - findMSB(a));\n"
				"}\n"
				"uint vy_ctz(uint a)\n"
				"{\n"
				"\treturn a == 0u ? 32u : uint(findLSB(a));\n"
				"}\n";

static const char wide_text[] = "uint vy_mulhi_u(uint a, uint b)\n"
				"{\n"
				"\tuint hi;\n"
				"\tuint lo;\n"
				"\tumulExtended(a, b, hi, lo);\n"
				"\treturn hi;\n"
				"}\n"
				"uint vy_mulhi_i(uint a, uint b)\n"
				"{\n"
				"\tint hi;\n"
				"\tint lo;\n"
				"\timulExtended(int(a), int(b), hi, lo);\n"
				"\treturn uint(hi);\n"
				"}\n"
				"uint vy_sat_mul(uint a, uint b)\n"
				"{\n"
				"\tuint hi;\n"
				"\tuint lo;\n"
				"\tumulExtended(a, b, hi, lo);\n"
				"\treturn hi != 0u ? 0xFFFFFFFFu : lo;\n"
				"}\n";

/*
 * i32 saturating add and subtract: the wrapped result, unless the operation overflowed (the
 * operands' signs say it could, and the result's sign says it did), which gives INT_MAX when a is
 * not negative and INT_MIN when it is: 0x7FFFFFFF + (a >> 31).
 */
static const char sat_i32_text[] = "uint vy_sat_add_i(uint a, uint b)\n"
				   "{\n"
				   "\tuint r = a + b;\n"
				   "\tbool over = ((a ^ r) & (b ^ r) & 0x80000000u) != 0u;\n"
				   "\treturn over ? 0x7FFFFFFFu + (a >> 31u) : r;\n"
				   "}\n"
				   "uint vy_sat_sub_i(uint a, uint b)\n"
				   "{\n"
				   "\tuint r = a - b;\n"
				   "\tbool over = ((a ^ b) & (a ^ r) & 0x80000000u) != 0u;\n"
				   "\treturn over ? 0x7FFFFFFFu + (a >> 31u) : r;\n"
				   "}\n";

/* The lowest trap key wins: the sidecar keeps the largest complement, so zero means none. */
static const char trap_text[] = "void vy_trap_raise(uint key)\n"
				"{\n"
				"\tatomicMax(vy_trap.key, ~key);\n"
				"\tatomicAdd(vy_trap.count, 1u);\n"
				"}\n"
				"void vy_cut_raise(uint node)\n"
				"{\n"
				"\tatomicMax(vy_trap.cut, ~node);\n"
				"}\n";

/*
 * The reference gives 0 for a lane at or past the subgroup size or not active. Every group
 * operation runs unconditionally, so the set of active invocations is the caller's.
 */
static const char sg_shuffle_text[] =
	"bool vy_sg_live(uvec4 act, uint lane)\n"
	"{\n"
	"\tbool inside = lane < gl_SubgroupSize;\n"
	"\tbool bit = subgroupBallotBitExtract(act, inside ? lane : 0u);\n"
	"\treturn inside && bit;\n"
	"}\n"
	"uint vy_sg_shuffle(uint v, uint lane)\n"
	"{\n"
	"\tuvec4 act = subgroupBallot(true);\n"
	"\tuint r = subgroupShuffle(v, min(lane, gl_SubgroupSize - 1u));\n"
	"\treturn vy_sg_live(act, lane) ? r : 0u;\n"
	"}\n"
	"bool vy_sg_shuffle_b(bool v, uint lane)\n"
	"{\n"
	"\tuvec4 act = subgroupBallot(true);\n"
	"\tbool r = subgroupShuffle(v, min(lane, gl_SubgroupSize - 1u));\n"
	"\treturn vy_sg_live(act, lane) && r;\n"
	"}\n";

/* f32 sums and products in the reference's order: active lanes ascending, one rounding each. */
static const char sg_fadd_text[] = "uint vy_sg_fadd(uint v)\n"
				   "{\n"
				   "\tuvec4 act = subgroupBallot(true);\n"
				   "\tuint acc = 0u;\n"
				   "\tbool have = false;\n"
				   "\tfor (uint l = 0u; l < gl_SubgroupSize; ++l) {\n"
				   "\t\tuint x = subgroupShuffle(v, l);\n"
				   "\t\tif (subgroupBallotBitExtract(act, l)) {\n"
				   "\t\t\tacc = have ? vy_fadd(acc, x) : x;\n"
				   "\t\t\thave = true;\n"
				   "\t\t}\n"
				   "\t}\n"
				   "\treturn acc;\n"
				   "}\n";

static const char sg_fmul_text[] = "uint vy_sg_fmul(uint v)\n"
				   "{\n"
				   "\tuvec4 act = subgroupBallot(true);\n"
				   "\tuint acc = 0u;\n"
				   "\tbool have = false;\n"
				   "\tfor (uint l = 0u; l < gl_SubgroupSize; ++l) {\n"
				   "\t\tuint x = subgroupShuffle(v, l);\n"
				   "\t\tif (subgroupBallotBitExtract(act, l)) {\n"
				   "\t\t\tacc = have ? vy_fmul(acc, x) : x;\n"
				   "\t\t\thave = true;\n"
				   "\t\t}\n"
				   "\t}\n"
				   "\treturn acc;\n"
				   "}\n";

/*
 * min and max are associative and commutative over the reference's order (-0 below +0, NaN
 * ignored unless every value is NaN), so the builtin unsigned reductions of order-preserving keys
 * give the reference's answer: for min a NaN gets the key 0xFFFFFFFF, above every other, for max
 * the key 0, below every other; a result of that key is the canonical NaN.
 */
static const char sg_fminmax_text[] =
	"uint vy_sg_key(uint x)\n"
	"{\n"
	"\treturn (x & 0x80000000u) != 0u ? ~x : (x | 0x80000000u);\n"
	"}\n"
	"uint vy_sg_unkey(uint k)\n"
	"{\n"
	"\treturn (k & 0x80000000u) != 0u ? (k & 0x7FFFFFFFu) : ~k;\n"
	"}\n"
	"uint vy_sg_fmin(uint v)\n"
	"{\n"
	"\tuint k = subgroupMin(vy_isnan(v) ? 0xFFFFFFFFu : vy_sg_key(v));\n"
	"\treturn k == 0xFFFFFFFFu ? 0x7FC00000u : vy_sg_unkey(k);\n"
	"}\n"
	"uint vy_sg_fmax(uint v)\n"
	"{\n"
	"\tuint k = subgroupMax(vy_isnan(v) ? 0u : vy_sg_key(v));\n"
	"\treturn k == 0u ? 0x7FC00000u : vy_sg_unkey(k);\n"
	"}\n";

struct lib_entry {
	uint64_t deps;
};

#define D(name) VY__VK_USE(name)

static const struct lib_entry lib[VY__VK_LIB_COUNT] = {
	[VY__VK_LIB_CANON] = {0},
	[VY__VK_LIB_FLUSH] = {0},
	[VY__VK_LIB_ISNAN] = {0},
	[VY__VK_LIB_ROUND_PACK] = {0},
	[VY__VK_LIB_MULX] = {D(ROUND_PACK)},
	[VY__VK_LIB_FMA_EXACT] = {D(MULX) | D(ROUND_PACK)},
	[VY__VK_LIB_FADD] = {D(FLUSH)},
	[VY__VK_LIB_FSUB] = {D(FLUSH)},
	[VY__VK_LIB_FMUL] = {D(FLUSH) | D(MULX)},
	[VY__VK_LIB_FADDK] = {D(FLUSH)},
	[VY__VK_LIB_FSUBK] = {D(FLUSH)},
	[VY__VK_LIB_FMULK] = {D(FLUSH) | D(MULX)},
	[VY__VK_LIB_FMULQ] = {0},
	[VY__VK_LIB_FDIV] = {D(CANON) | D(ROUND_PACK)},
	[VY__VK_LIB_FMOD] = {D(ROUND_PACK)},
	[VY__VK_LIB_FSQRT] = {D(CANON) | D(ROUND_PACK)},
	[VY__VK_LIB_FFMA] = {D(CANON) | D(ISNAN) | D(FMA_EXACT)},
	[VY__VK_LIB_FFMAQ] = {0},
	[VY__VK_LIB_FMIN] = {D(ISNAN)},
	[VY__VK_LIB_FMAX] = {D(ISNAN)},
	[VY__VK_LIB_FCMP] = {D(ISNAN)},
	[VY__VK_LIB_FTRUNC] = {0},
	[VY__VK_LIB_FFLOOR] = {D(FTRUNC)},
	[VY__VK_LIB_FCEIL] = {D(FTRUNC)},
	[VY__VK_LIB_FROUND] = {D(FTRUNC)},
	[VY__VK_LIB_FSIGN] = {D(ISNAN)},
	[VY__VK_LIB_U2F] = {D(ROUND_PACK)},
	[VY__VK_LIB_I2F] = {D(ROUND_PACK)},
	[VY__VK_LIB_F2U] = {0},
	[VY__VK_LIB_F2I] = {0},
	[VY__VK_LIB_SDIV] = {0},
	[VY__VK_LIB_SMOD] = {0},
	[VY__VK_LIB_ROT] = {0},
	[VY__VK_LIB_BITS] = {0},
	[VY__VK_LIB_WIDE] = {0},
	[VY__VK_LIB_SAT_I32] = {0},
	[VY__VK_LIB_TRAP] = {0},
	[VY__VK_LIB_SG_SHUFFLE] = {0},
	[VY__VK_LIB_SG_FADD] = {D(FADD)},
	[VY__VK_LIB_SG_FMUL] = {D(FMUL)},
	[VY__VK_LIB_SG_FMINMAX] = {D(ISNAN)},
};

#undef D

uint64_t vy__vk_lib_close(uint64_t uses)
{
	/* Dependencies never go deeper than two levels, but iterate to a fixed point anyway. */
	for (;;) {
		uint64_t more = uses;
		for (unsigned i = 0; i < VY__VK_LIB_COUNT; i++) {
			if (uses & (UINT64_C(1) << i)) {
				more |= lib[i].deps;
			}
		}
		if (more == uses) {
			return uses;
		}
		uses = more;
	}
}

bool vy__vk_lib_fma_loose(const struct vy_vk_math *math)
{
	return math->fma_fused && math->fold_exact;
}

bool vy__vk_lib_fma_needs_f64(const struct vy_vk_math *math)
{
	return !math->fma_fused && math->has_f64;
}

/*
 * add (FADD), sub (FSUB) or mul (FMUL) as vy_fadd, vy_fsub or vy_fmul with `suffix`, flushing a
 * subnormal result when `flush` (vy_flush), else leaving that to the device.
 */
static void emit_arith(struct vy__vk_str *out, enum vy__vk_lib op, const struct vy_vk_math *math,
	bool flush, const char *suffix)
{
	static const char *const names[] = {"fadd", "fsub", "fmul"};
	vy__vk_str_addf(
		out, "uint vy_%s%s(uint a, uint b)\n{\n", names[op - VY__VK_LIB_FADD], suffix);
	if (op == VY__VK_LIB_FMUL) {
		vy__vk_str_add(out, math->fold_exact ? fmul_native : fmul_special);
		vy__vk_str_add(out, flush ? "\tuint x = vy_flush(floatBitsToUint(r));\n"
					  : "\tuint x = floatBitsToUint(r);\n");
		if (!math->fold_exact) {
			vy__vk_str_add(out, fmul_special_tail);
		} else if (!flush && math->fma_fused) {
			vy__vk_str_add(out, fmul_fused_tail);
		} else {
			vy__vk_str_add(out, fmul_native_tail);
		}
		return;
	}
	if (op == VY__VK_LIB_FSUB) {
		vy__vk_str_add(out, fsub_negate);
	}
	if (!math->fold_exact) {
		vy__vk_str_add(out, fadd_special);
	}
	vy__vk_str_add(out, fadd_sum);
	vy__vk_str_add(out, flush ? "\treturn vy_flush(floatBitsToUint(r));\n}\n"
				  : "\treturn floatBitsToUint(r);\n}\n");
}

static void emit_one(struct vy__vk_str *out, enum vy__vk_lib which, const struct vy_vk_math *math)
{
	switch (which) {
	case VY__VK_LIB_CANON:
		vy__vk_str_add(out, canon_text);
		break;
	case VY__VK_LIB_FLUSH:
		vy__vk_str_add(out, flush_text);
		break;
	case VY__VK_LIB_ISNAN:
		vy__vk_str_add(out, isnan_text);
		break;
	case VY__VK_LIB_ROUND_PACK:
		vy__vk_str_add(out, round_pack_text);
		break;
	case VY__VK_LIB_FADD:
	case VY__VK_LIB_FSUB:
	case VY__VK_LIB_FMUL:
		emit_arith(out, which, math, !math->flushes_subnormals, "");
		break;
	case VY__VK_LIB_FADDK:
	case VY__VK_LIB_FSUBK:
	case VY__VK_LIB_FMULK:
		emit_arith(out, which - (VY__VK_LIB_FADDK - VY__VK_LIB_FADD), math, true, "k");
		break;
	case VY__VK_LIB_FMULQ:
		vy__vk_str_add(out, fmulq_text);
		break;
	case VY__VK_LIB_MULX:
		vy__vk_str_add(out, mulx_text);
		break;
	case VY__VK_LIB_FMA_EXACT:
		vy__vk_str_add(out, fma_exact_text);
		break;
	case VY__VK_LIB_FDIV:
		vy__vk_str_add(out, fdiv_exact);
		if (!math->div_exact && math->fma_fused) {
			vy__vk_str_add(out, fdiv_fast);
		}
		vy__vk_str_add(out, fdiv_head);
		vy__vk_str_add(out, math->div_exact   ? fdiv_builtin
				    : math->fma_fused ? fdiv_fused
						      : fdiv_bits);
		break;
	case VY__VK_LIB_FMOD:
		vy__vk_str_add(out, fmod_text);
		break;
	case VY__VK_LIB_FSQRT:
		if (!math->sqrt_exact && math->fma_fused) {
			vy__vk_str_add(out, "uint vy_fsqrt_bits(uint x)\n{\n");
			vy__vk_str_add(out, fsqrt_exact);
			vy__vk_str_add(out, fsqrt_head);
			vy__vk_str_add(out, fsqrt_fused);
			break;
		}
		vy__vk_str_add(out, fsqrt_head);
		vy__vk_str_add(out, math->sqrt_exact ? fsqrt_builtin : fsqrt_exact);
		break;
	case VY__VK_LIB_FFMA:
		if (vy__vk_lib_fma_loose(math)) {
			vy__vk_str_add(out, ffma_fused_special);
			vy__vk_str_add(out, ffma_fused);
		} else if (math->fma_fused) {
			vy__vk_str_add(out, ffma_builtin);
		} else {
			vy__vk_str_add(out, math->has_f64 ? ffma_f64 : ffma_bits);
		}
		break;
	case VY__VK_LIB_FFMAQ:
		vy__vk_str_add(out, ffmaq_text);
		break;
	case VY__VK_LIB_FMIN:
		vy__vk_str_add(out, fmin_text);
		break;
	case VY__VK_LIB_FMAX:
		vy__vk_str_add(out, fmax_text);
		break;
	case VY__VK_LIB_FCMP:
		vy__vk_str_add(out, fcmp_text);
		break;
	case VY__VK_LIB_FTRUNC:
		vy__vk_str_add(out, ftrunc_text);
		break;
	case VY__VK_LIB_FFLOOR:
		vy__vk_str_add(out, ffloor_text);
		break;
	case VY__VK_LIB_FCEIL:
		vy__vk_str_add(out, fceil_text);
		break;
	case VY__VK_LIB_FROUND:
		vy__vk_str_add(out, fround_text);
		break;
	case VY__VK_LIB_FSIGN:
		vy__vk_str_add(out, fsign_text);
		break;
	case VY__VK_LIB_U2F:
		vy__vk_str_add(out, u2f_text);
		break;
	case VY__VK_LIB_I2F:
		vy__vk_str_add(out, i2f_text);
		break;
	case VY__VK_LIB_F2U:
		vy__vk_str_add(out, f2u_text);
		break;
	case VY__VK_LIB_F2I:
		vy__vk_str_add(out, f2i_text);
		break;
	case VY__VK_LIB_SDIV:
		vy__vk_str_add(out, sdiv_text);
		break;
	case VY__VK_LIB_SMOD:
		vy__vk_str_add(out, smod_text);
		break;
	case VY__VK_LIB_ROT:
		vy__vk_str_add(out, rot_text);
		break;
	case VY__VK_LIB_BITS:
		vy__vk_str_add(out, bits_text);
		break;
	case VY__VK_LIB_WIDE:
		vy__vk_str_add(out, wide_text);
		break;
	case VY__VK_LIB_SAT_I32:
		vy__vk_str_add(out, sat_i32_text);
		break;
	case VY__VK_LIB_TRAP:
		vy__vk_str_add(out, trap_text);
		break;
	case VY__VK_LIB_SG_SHUFFLE:
		vy__vk_str_add(out, sg_shuffle_text);
		break;
	case VY__VK_LIB_SG_FADD:
		vy__vk_str_add(out, sg_fadd_text);
		break;
	case VY__VK_LIB_SG_FMUL:
		vy__vk_str_add(out, sg_fmul_text);
		break;
	case VY__VK_LIB_SG_FMINMAX:
		vy__vk_str_add(out, sg_fminmax_text);
		break;
	case VY__VK_LIB_COUNT:
		assert(!"helper outside the table");
		break;
	}
}

void vy__vk_lib_emit(struct vy__vk_str *out, uint64_t uses, const struct vy_vk_math *math)
{
	uses = vy__vk_lib_close(uses);
	if (math->flushes_subnormals &&
		!(uses & (VY__VK_USE(FADDK) | VY__VK_USE(FSUBK) | VY__VK_USE(FMULK)))) {
		/* add, sub and mul of run-time values, its only other callers, leave the flush to
		 * the device */
		uses &= ~VY__VK_USE(FLUSH);
	}
	/* The enum lists every helper after the helpers it calls. */
	for (unsigned i = 0; i < VY__VK_LIB_COUNT; i++) {
		if (uses & (UINT64_C(1) << i)) {
			emit_one(out, (enum vy__vk_lib)i, math);
			vy__vk_str_add(out, "\n");
		}
	}
}
