/*
 * The expansion of cbrt (DESIGN.md §4.4; docs/semantics.md gives its domain and error).
 *
 * |x| = 2^e * m with m in [1, 2), read from the bits: e = 3q + r with r in {0, 1, 2}, so that
 * cbrt|x| = 2^q * cbrt(m') with m' = m * 2^r in [1, 8), exact. A degree-4 polynomial on [1, 2)
 * (interpolation at the Chebyshev nodes, relative error 1.4e-5) times cbrt(2^r) starts y; one
 * Newton step y - (y^3 - m') / (3 y^2) takes it to about 2^-23; a last step with the residual
 * y^3 - m' computed nearly exactly (y^2 as a rounded product plus its error from an fma, then
 * two fmas) leaves only the final subtraction's rounding, so the result is within 1 ULP and
 * almost always correctly rounded. 2^q is applied exactly (vy__vm_scale2).
 *
 * Special values: cbrt(+-0) = +-0 (a subnormal operand reads as the zero of its sign),
 * cbrt(+-inf) = +-inf, NaN stays NaN; cbrt(-x) = -cbrt(x) exactly.
 */
#include "vmath_emit.h"

/* cbrt(m) for m in [1, 2), lowest degree first. */
static const float cbrt_p[] = {
	0.509248137f, 0.711742401f, -0.293954104f, 0.0830790326f, -0.0101022124f};

#define CBRT2 1.25992107f /* 0x3FA14518: 2^(1/3) rounded */
#define CBRT4 1.58740103f /* 0x3FCB2FF5: 4^(1/3) rounded */

/* The cube root of m in [1, 8) from its estimate y: y - (y^3 - m) / (3 y^2), where `exact` asks
 * for the residual y^3 - m with the error of y^2 included. Both are leaves. */
static struct vy_expr *newton(
	struct vy__vm *m, const struct vy_expr *y, const struct vy_expr *mm, bool exact)
{
	struct vy_expr *s = bind(m, mul(m, cp(m, y), cp(m, y)));
	struct vy_expr *res = fma3(m, cp(m, s), cp(m, y), neg(m, cp(m, mm)));
	if (exact) {
		struct vy_expr *lo = fma3(m, cp(m, y), cp(m, y), neg(m, cp(m, s)));
		res = fma3(m, lo, cp(m, y), res);
	}
	return sub(m, cp(m, y), divide(m, res, mul(m, cp(m, s), fl(m, 3.0f))));
}

struct vy_expr *vy__vm_cbrt(struct vy__vm *m, const struct vy_expr *x)
{
	struct vy_expr *bits = bind(m, vy__vm_bitcast(m, VY_TYPE_U32, cp(m, x)));
	struct vy_expr *ef = bind(m, band(m, shr(m, cp(m, bits), ul(m, 23)), ul(m, 0xFF)));
	/* e + 129 = ef + 2 is in [3, 256] for a normal x: q' = (ef + 2) / 3 = q + 43. */
	struct vy_expr *t = bind(m, add(m, cp(m, ef), ul(m, 2)));
	struct vy_expr *q3 = bind(m, divide(m, cp(m, t), ul(m, 3)));
	struct vy_expr *r = bind(m, sub(m, cp(m, t), mul(m, cp(m, q3), ul(m, 3))));
	struct vy_expr *q = bind(m, sub(m, to_i32(m, cp(m, q3)), il(m, 43)));
	struct vy_expr *mant = bind(
		m, vy__vm_bitcast(m, VY_TYPE_F32,
			   bor(m, band(m, cp(m, bits), ul(m, 0x007FFFFFu)), ul(m, 0x3F800000u))));
	struct vy_expr *one = bind(m, eq(m, cp(m, r), ul(m, 1)));
	struct vy_expr *two = bind(m, eq(m, cp(m, r), ul(m, 2)));
	struct vy_expr *scale =
		sel(m, cp(m, two), fl(m, 4.0f), sel(m, cp(m, one), fl(m, 2.0f), fl(m, 1.0f)));
	struct vy_expr *mm = bind(m, mul(m, cp(m, mant), scale));
	struct vy_expr *root =
		sel(m, cp(m, two), fl(m, CBRT4), sel(m, cp(m, one), fl(m, CBRT2), fl(m, 1.0f)));
	struct vy_expr *y0 = bind(m, mul(m, VY__VM_HORNER(m, cbrt_p, mant), root));
	struct vy_expr *y1 = bind(m, newton(m, y0, mm, false));
	struct vy_expr *y2 = bind(m, newton(m, y1, mm, true));
	struct vy_expr *mag = bind(m, vy__vm_scale2(m, cp(m, y2), q));
	struct vy_expr *res = sel(m, lt(m, cp(m, x), fl(m, 0.0f)), neg(m, cp(m, mag)), cp(m, mag));
	/* inf and NaN stay themselves; zero and subnormal operands give the zero of their sign */
	res = sel(m, eq(m, cp(m, ef), ul(m, 0xFF)), cp(m, x), res);
	return sel(m, eq(m, cp(m, ef), ul(m, 0)), mul(m, cp(m, x), fl(m, 0.0f)), res);
}
