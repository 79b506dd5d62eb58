/*
 * The expansion of pow (DESIGN.md §4.4; docs/semantics.md gives its domain and error).
 *
 * pow(x, y) = 2^(y log2|x|), with log2|x| carried as a pair hi + lo to about 2^-40 and the
 * product y log2|x| as a pair w (its rounding error from an fma), so that 2^w sees an error
 * well below what its own evaluation adds.
 *
 * log2|x|: |x| = 2^k m with m in [sqrt(1/2), sqrt(2)) from the bits; s = (m - 1) / (m + 1) in
 * [-0.172, 0.172] as a pair (m - 1 is exact, m + 1 a pair by Fast2Sum, the quotient corrected by
 * its remainder from an fma); ln m = 2 atanh s = 2s + (2/3) s^3 + s^5 P(s^2), P the Taylor
 * coefficients 2/5 ... 2/13 (the next term is below 2^-42). 2s is exact, (2/3) s^3 is formed
 * as a pair (2/3 in two parts, s^3 with the errors of its products), and the low part of s
 * enters as 2 s_lo (1 + s^2). Then times 1/ln 2 in two parts, and plus k (Fast2Sum: k is 0 or at
 * least as large as log2 m).
 *
 * 2^w: n = round(w_hi), r = (w_hi - n) + w_lo, 1 + r Q(r) with exp2's polynomial, times 2^n
 * exactly (vy__vm_exp2_pair).
 *
 * Special values (C99 Annex F): pow(x, +-0) = 1 and pow(1, y) = 1, even for a NaN; a finite
 * negative x with a finite y that is not an integer gives NaN; a negative x with an odd integer
 * y gives the negated pow(|x|, y); x = +-0 or +-inf gives 0 or inf by the sign of y and of
 * log|x|, signed by x only for an odd integer y; y = +-inf gives 1 for |x| = 1, else 0 or inf
 * by whether |x| < 1 and the sign of y; any other NaN operand gives NaN.
 */
#include "vmath_emit.h"

/* 2/5, 2/7, ..., 2/13: 2 atanh(s) = 2s + (2/3) s^3 + s^5 P(s^2). */
static const float atanh_p[] = {0.4f, 0.285714286f, 0.222222222f, 0.181818182f, 0.153846154f};

#define TWO_THIRDS_HI 0.666666687f     /* 0x3F2AAAAB */
#define TWO_THIRDS_LO -1.98682155e-08f /* 0xB2AAAAAB */
#define LOG2E_HI 1.44269502f           /* 0x3FB8AA3B */
#define LOG2E_LO 1.92596303e-08f       /* 0x32A57060 */
#define TWO_24 16777216.0f

/* The pair of log2 |x| for a finite nonzero x: writes the low part to *lo, returns the high. */
static struct vy_expr *log2_pair(struct vy__vm *m, const struct vy_expr *ax, struct vy_expr **lo)
{
	struct vy_expr *kf = NULL;
	struct vy_expr *mm = vy__vm_log_split(m, ax, &kf);
	/* s = f / (dh + dl) with f = m - 1 exact and 1 + m = dh + dl exactly */
	struct vy_expr *f = bind(m, sub(m, cp(m, mm), fl(m, 1.0f)));
	struct vy_expr *dh = bind(m, add(m, fl(m, 1.0f), cp(m, mm)));
	struct vy_expr *dl = sub(m, cp(m, mm), sub(m, cp(m, dh), fl(m, 1.0f)));
	struct vy_expr *sh = bind(m, divide(m, cp(m, f), cp(m, dh)));
	struct vy_expr *rem =
		sub(m, fma3(m, neg(m, cp(m, sh)), cp(m, dh), cp(m, f)), mul(m, cp(m, sh), dl));
	struct vy_expr *sl = bind(m, divide(m, rem, cp(m, dh)));
	/* s^2 and s^3 with the errors of their products */
	struct vy_expr *z = bind(m, mul(m, cp(m, sh), cp(m, sh)));
	struct vy_expr *zl = fma3(m, cp(m, sh), cp(m, sh), neg(m, cp(m, z)));
	struct vy_expr *c3 = bind(m, mul(m, cp(m, z), cp(m, sh)));
	struct vy_expr *c3l =
		bind(m, fma3(m, zl, cp(m, sh), fma3(m, cp(m, z), cp(m, sh), neg(m, cp(m, c3)))));
	/* (2/3) s^3 as t + tl */
	struct vy_expr *t = bind(m, mul(m, fl(m, TWO_THIRDS_HI), cp(m, c3)));
	struct vy_expr *tl = fma3(m, fl(m, TWO_THIRDS_HI), cp(m, c3), neg(m, cp(m, t)));
	tl = add(m, tl,
		fma3(m, fl(m, TWO_THIRDS_HI), cp(m, c3l), mul(m, fl(m, TWO_THIRDS_LO), cp(m, c3))));
	/* the small terms: 2 s_lo (1 + s^2), the low part of (2/3) s^3 and s^5 P(s^2) */
	struct vy_expr *tail = mul(m, mul(m, cp(m, c3), cp(m, z)), VY__VM_HORNER(m, atanh_p, z));
	struct vy_expr *two_sl = bind(m, mul(m, cp(m, sl), fl(m, 2.0f)));
	struct vy_expr *small =
		add(m, fma3(m, cp(m, two_sl), cp(m, z), cp(m, two_sl)), add(m, tl, tail));
	/* ln m = lh + ll: 2s + t exactly by Fast2Sum (|2s| > |t|) */
	struct vy_expr *two_sh = bind(m, mul(m, cp(m, sh), fl(m, 2.0f)));
	struct vy_expr *lh = bind(m, add(m, cp(m, two_sh), cp(m, t)));
	struct vy_expr *ll =
		bind(m, add(m, sub(m, cp(m, t), sub(m, cp(m, lh), cp(m, two_sh))), small));
	/* log2 m = gh + gl */
	struct vy_expr *gh = bind(m, mul(m, cp(m, lh), fl(m, LOG2E_HI)));
	struct vy_expr *gl = bind(m,
		add(m, fma3(m, cp(m, lh), fl(m, LOG2E_HI), neg(m, cp(m, gh))),
			fma3(m, cp(m, lh), fl(m, LOG2E_LO), mul(m, cp(m, ll), fl(m, LOG2E_HI)))));
	/* k + log2 m by Fast2Sum */
	struct vy_expr *hi = bind(m, add(m, cp(m, kf), cp(m, gh)));
	*lo = bind(m, add(m, sub(m, cp(m, gh), sub(m, cp(m, hi), cp(m, kf))), cp(m, gl)));
	return hi;
}

struct vy_expr *vy__vm_pow(struct vy__vm *m, const struct vy_expr *x, const struct vy_expr *y)
{
	struct vy_expr *ax = bind(m, absv(m, cp(m, x)));
	struct vy_expr *ay = bind(m, absv(m, cp(m, y)));
	struct vy_expr *lo = NULL;
	struct vy_expr *hi = log2_pair(m, ax, &lo);
	struct vy_expr *wh = bind(m, mul(m, cp(m, y), cp(m, hi)));
	struct vy_expr *wl = bind(
		m, fma3(m, cp(m, y), cp(m, lo), fma3(m, cp(m, y), cp(m, hi), neg(m, cp(m, wh)))));
	struct vy_expr *mag = bind(m, vy__vm_exp2_pair(m, wh, wl));
	/* y's kind: an integer (every f32 of 2^23 or more is), and an odd one */
	struct vy_expr *yint = bind(m, eq(m, vy__vm_un(m, VY_UN_TRUNC, cp(m, y)), cp(m, y)));
	struct vy_expr *yodd = bind(
		m, vy__vm_bin(m, VY_BIN_AND,
			   vy__vm_bin(m, VY_BIN_AND, cp(m, yint), lt(m, cp(m, ay), fl(m, TWO_24))),
			   ne(m, band(m, to_i32(m, cp(m, y)), il(m, 1)), il(m, 0))));
	struct vy_expr *xneg = bind(m, lt(m, vy__vm_bitcast(m, VY_TYPE_I32, cp(m, x)), il(m, 0)));
	struct vy_expr *flip = bind(m, vy__vm_bin(m, VY_BIN_AND, cp(m, xneg), cp(m, yodd)));
	struct vy_expr *inf = fbits(m, VY__VM_INF);
	/* finite nonzero x, finite y */
	struct vy_expr *res = sel(m, cp(m, flip), neg(m, cp(m, mag)), cp(m, mag));
	res = sel(m, vy__vm_bin(m, VY_BIN_AND, cp(m, xneg), vy__vm_un(m, VY_UN_NOT, cp(m, yint))),
		fbits(m, VY__VM_NAN), res);
	/* y = +-inf */
	struct vy_expr *ylt0 = bind(m, lt(m, cp(m, y), fl(m, 0.0f)));
	struct vy_expr *yinf_v = sel(m, eq(m, cp(m, ax), fl(m, 1.0f)), fl(m, 1.0f),
		sel(m, eq(m, lt(m, cp(m, ax), fl(m, 1.0f)), cp(m, ylt0)), cp(m, inf), fl(m, 0.0f)));
	res = sel(m, eq(m, cp(m, ay), cp(m, inf)), yinf_v, res);
	/* x = +-0 or +-inf */
	struct vy_expr *xzero = bind(m, eq(m, cp(m, ax), fl(m, 0.0f)));
	struct vy_expr *edge =
		bind(m, sel(m, eq(m, cp(m, xzero), cp(m, ylt0)), cp(m, inf), fl(m, 0.0f)));
	struct vy_expr *edge_v = sel(m, cp(m, flip), neg(m, cp(m, edge)), cp(m, edge));
	res = sel(m, lor(m, cp(m, xzero), eq(m, cp(m, ax), cp(m, inf))), edge_v, res);
	struct vy_expr *any_nan = lor(m, ne(m, cp(m, x), cp(m, x)), ne(m, cp(m, y), cp(m, y)));
	res = sel(m, any_nan, fbits(m, VY__VM_NAN), res);
	return sel(m, lor(m, eq(m, cp(m, y), fl(m, 0.0f)), eq(m, cp(m, x), fl(m, 1.0f))),
		fl(m, 1.0f), res);
}
