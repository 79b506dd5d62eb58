/*
 * The expansion of hypot (DESIGN.md §4.4; docs/semantics.md gives its domain and error).
 *
 * With B the larger of |x| and |y| and S the smaller, both are scaled by the same power of two
 * 2^-e so that B lands in [0.5, 1): B from its own bits, S by two exact multiplications (each
 * factor a normal power of two; a product that flushes on the way is below 2^-126 where B is at
 * least 0.5, far too small to count). B^2 + S^2 is then kept as a pair hi + lo: each square as
 * its rounded product plus the product's error from an fma, and the sum of the rounded squares
 * with its rounding error (the larger square first, so the error is exact). r = sqrt(hi) is
 * correctly rounded, hi - r^2 is exact from an fma, and one Newton step r + (hi - r^2 + lo) / 2r
 * leaves an error near 2^-46 relative before the final addition rounds: the result is within
 * 1 ULP and correctly rounded unless its exact value lies within about 2^-22 ULP of a tie. It
 * goes back to scale with vy__vm_scale2, which rounds only if it overflows.
 *
 * Special values (C99 Annex F): an infinite operand gives +inf even when the other is NaN;
 * otherwise a NaN operand gives NaN; hypot(+-0, +-0) = +0; hypot(x, +-0) = |x|; the result never
 * depends on the operands' signs or order.
 */
#include "vmath_emit.h"

struct vy_expr *vy__vm_hypot(struct vy__vm *m, const struct vy_expr *x, const struct vy_expr *y)
{
	struct vy_expr *ax = bind(m, absv(m, cp(m, x)));
	struct vy_expr *ay = bind(m, absv(m, cp(m, y)));
	struct vy_expr *big = bind(m, vmax(m, cp(m, ax), cp(m, ay)));
	struct vy_expr *small = vmin(m, cp(m, ax), cp(m, ay));
	struct vy_expr *bits = bind(m, vy__vm_bitcast(m, VY_TYPE_U32, cp(m, big)));
	/* big = B * 2^e with B in [0.5, 1): e = biased exponent - 126 */
	struct vy_expr *e =
		bind(m, sub(m, to_i32(m, band(m, shr(m, cp(m, bits), ul(m, 23)), ul(m, 0xFF))),
				il(m, 126)));
	struct vy_expr *b = bind(
		m, vy__vm_bitcast(m, VY_TYPE_F32,
			   bor(m, band(m, cp(m, bits), ul(m, 0x007FFFFFu)), ul(m, 0x3F000000u))));
	/* S = small * 2^-e in two factors, k1 + k2 = -e, each in [-65, 64] */
	struct vy_expr *k1 = bind(m, shr(m, neg(m, cp(m, e)), ul(m, 1)));
	struct vy_expr *k2 = sub(m, neg(m, cp(m, e)), cp(m, k1));
	struct vy_expr *s =
		bind(m, mul(m, mul(m, small, vy__vm_pow2(m, cp(m, k1))), vy__vm_pow2(m, k2)));
	struct vy_expr *bh = bind(m, mul(m, cp(m, b), cp(m, b)));
	struct vy_expr *bl = fma3(m, cp(m, b), cp(m, b), neg(m, cp(m, bh)));
	struct vy_expr *sh = bind(m, mul(m, cp(m, s), cp(m, s)));
	struct vy_expr *sl = fma3(m, cp(m, s), cp(m, s), neg(m, cp(m, sh)));
	struct vy_expr *hi = bind(m, add(m, cp(m, bh), cp(m, sh)));
	struct vy_expr *err = sub(m, cp(m, sh), sub(m, cp(m, hi), cp(m, bh)));
	struct vy_expr *lo = bind(m, add(m, err, add(m, bl, sl)));
	struct vy_expr *r = bind(m, sqrtv(m, cp(m, hi)));
	struct vy_expr *d = add(m, fma3(m, neg(m, cp(m, r)), cp(m, r), cp(m, hi)), cp(m, lo));
	struct vy_expr *t = divide(m, d, add(m, cp(m, r), cp(m, r)));
	struct vy_expr *rr = bind(m, add(m, cp(m, r), t));
	struct vy_expr *res = vy__vm_scale2(m, rr, e);
	struct vy_expr *inf = fbits(m, VY__VM_INF);
	struct vy_expr *any_inf =
		bind(m, lor(m, eq(m, cp(m, ax), cp(m, inf)), eq(m, cp(m, ay), inf)));
	struct vy_expr *any_nan = lor(m, ne(m, cp(m, x), cp(m, x)), ne(m, cp(m, y), cp(m, y)));
	res = sel(m, eq(m, cp(m, big), fl(m, 0.0f)), fl(m, 0.0f), res);
	res = sel(m, any_nan, fbits(m, VY__VM_NAN), res);
	return sel(m, cp(m, any_inf), fbits(m, VY__VM_INF), res);
}
