/*
 * The expansions of erf and erfc (DESIGN.md §4.4; docs/semantics.md §6.4 gives the error argument
 * and §6.2 the measured error).
 *
 * Below |x| = 1/4, erf(x) = x W with W = C + p0 z + z^2 P(z), z = x^2, C = 2 / sqrt(pi) and
 * p0 = -C / 3 held as pairs, so that W is a pair (W_hi, W_lo) whose rounding errors all sit in
 * terms below 2^-11 of it. erf(x) = fma(x, W_hi, x W_lo) with x scaled by 2^48 and back (exact),
 * so that x W_lo does not flush for tiny x; erfc(x) = 1 - x W with the product and the difference
 * kept exactly until the last addition.
 *
 * From |x| = 1/4 on, both come from erfc(a), a = |x| (clamped to 9.25, where erfc < 2^-127), as
 * e^(-a^2) times erfcx(a) = e^(a^2) erfc(a), each a pair:
 *   e^(-a^2) = 2^-m (E_hi + E_lo): a^2 = h + l exactly (the product and its error), m =
 *   round(h / ln 2), r = m ln2_hi - h exact, and e^r (1 + m ln2_lo - l) with e^r = 1 + r + r^2 / 2
 *   + r^3 B(r), the first three terms summed exactly (Fast2Sum; r^2 as a product and its error);
 *   erfcx(a) on [1/4, 3): one of three pieces, a polynomial of degree 9 in d = a - z (exact),
 *   its terms of degree 0 to 2 added exactly (coefficients as pairs, each product with its error),
 *   so that rounding errors stay in the terms of degree 3 and up, below 2^-6 of the sum;
 *   erfcx(a) from 3 on: (t / sqrt(pi)) (1 - w / 2 + w^2 R(w)), t = 1/a and w = t^2 as pairs and
 *   the first two terms exact, the rest below 2^-7 of the sum.
 * The product of the two pairs is rounded once: erfc(a) = 2^-m fl(y_hi + y_lo). 2^-m is a normal
 * number (m <= 123), so the scaling rounds only where the result leaves the normal range, and
 * there it flushes to +0. erfc(-a) = 2 - erfc(a) and erf(a) = 1 - erfc(a) subtract the scaled
 * pair by Fast2Sum; erf takes the sign of x.
 *
 * The tables come from tools/vmath_coeffs.py (minimax relative error, Remez in mpmath).
 *
 * Special values: erf(+-0) = +-0, erf(+-inf) = +-1, erfc(-inf) = 2, erfc(+inf) = +0, NaN gives
 * NaN; a subnormal operand reads as a signed zero; erf(-x) = -erf(x) to the bit; erfc results
 * below 2^-126 flush to +0.
 */
#include "vmath_emit.h"

/* (erf(x) / x - C - p0 z) / z^2 for z = x^2 in [0, 1/16], degree 2. */
static const float erf_p[] = {0.112837911f, -0.0268643145f, 0.00514458586f};
/* (e^r - 1 - r - r^2 / 2) / r^3 on [-0.35004, 0.35004], degree 4. */
static const float erfc_b[] = {
	0.166666672f, 0.0416665487f, 0.00833334588f, 0.00139269035f, 0.000198623646f};
/* (sqrt(pi) a erfcx(a) - 1 + w / 2) / w^2, w = 1 / a^2 in [1 / 9.25^2, 1 / 9], degree 6. */
static const float erfc_r[] = {0.749997318f, -1.87445748f, 6.51948929f, -27.7637901f, 119.752426f,
	-395.931946f, 662.676331f};

/*
 * erfcx(a) on [0.25, 0.75), [0.75, 1.625) and [1.625, 3): the expansion point z of each piece and
 * its polynomial in d = a - z, the coefficients of degree 0 to 2 as pairs (high parts, low parts),
 * those of degree 3 to 9 single.
 */
#define ERFCX_BOUND1 0.75f
#define ERFCX_BOUND2 1.625f
static const float erfcx_z[] = {0.5f, 1.1875f, 2.3125f};
static const float erfcx_hi[][3] = {{0.615690351f, -0.512688816f, 0.359345943f},
	{0.381304055f, -0.222782031f, 0.116750389f}, {0.225679189f, -0.084612906f, 0.0300118364f}};
static const float erfcx_lo[][3] = {{-6.33783603e-09f, -7.30215532e-09f, -1.14186882e-08f},
	{3.54912677e-09f, 3.72358921e-09f, 3.35676464e-09f},
	{2.73016454e-09f, 1.37329328e-10f, 6.5547523e-10f}};
#define ERFCX_Q 7
static const float erfcx_q[][ERFCX_Q] = {
	{-0.222010568f, 0.124170505f, -0.0639701411f, 0.0307202097f, -0.0138862897f, 0.00609588856f,
		-0.00246763346f},
	{-0.0560939535f, 0.0250698011f, -0.0105296215f, 0.00418289192f, -0.00158630346f,
		0.000609147304f, -0.000209795151f},
	{-0.0101403408f, 0.00328131719f, -0.00102108938f, 0.00030568699f, -8.89385774e-05f,
		2.74185204e-05f, -7.42914517e-06f}};

#define ERF_C_HI 1.12837923f /* 2 / sqrt(pi) */
#define ERF_C_LO -5.86353828e-08f
#define ERF_P0_HI -0.376126379f /* -2 / (3 sqrt(pi)) */
#define ERF_P0_LO -1.02571942e-08f
#define RSQRT_PI_HI 0.564189613f /* 1 / sqrt(pi) */
#define RSQRT_PI_LO -2.93176914e-08f
#define LOG2E 1.44269502f
#define LN2_HI 0.693147182f     /* 0x3F317218 */
#define LN2_LO -1.90465421e-09f /* 0xB102E308: ln 2 - LN2_HI */

#define ERF_SMALL 0.25f  /* below: the series of erf(x) / x */
#define ERFC_TAIL 3.0f   /* from here: the asymptotic form of erfcx */
#define ERFC_CLAMP 9.25f /* erfc(9.25) < 2^-127, flushed to +0 like every result beyond */

/* erf(x) / x = W_hi + W_lo for |x| < ERF_SMALL; x is a leaf. */
static void small_w(
	struct vy__vm *m, const struct vy_expr *x, struct vy_expr **w_hi, struct vy_expr **w_lo)
{
	struct vy_expr *zh = bind(m, mul(m, cp(m, x), cp(m, x)));
	struct vy_expr *zl = fma3(m, cp(m, x), cp(m, x), neg(m, cp(m, zh)));
	/* p0 z_hi as a product and its error */
	struct vy_expr *th = bind(m, mul(m, cp(m, zh), fl(m, ERF_P0_HI)));
	struct vy_expr *tl = fma3(m, cp(m, zh), fl(m, ERF_P0_HI), neg(m, cp(m, th)));
	struct vy_expr *tail =
		fma3(m, fma3(m, VY__VM_HORNER(m, erf_p, zh), cp(m, zh), fl(m, ERF_P0_LO)),
			cp(m, zh), fma3(m, zl, fl(m, ERF_P0_HI), tl));
	/* C_hi + p0 z by Fast2Sum (|p0 z| < C_hi) */
	*w_hi = bind(m, add(m, fl(m, ERF_C_HI), cp(m, th)));
	struct vy_expr *e = add(m, sub(m, fl(m, ERF_C_HI), cp(m, *w_hi)), cp(m, th));
	*w_lo = bind(m, add(m, add(m, e, fl(m, ERF_C_LO)), tail));
}

/* The three-way choice of a piece of erfcx: below bound 1, below bound 2, else. */
static struct vy_expr *pick(struct vy__vm *m, const struct vy_expr *in1, const struct vy_expr *in2,
	float v0, float v1, float v2)
{
	return sel(m, cp(m, in1), fl(m, v0), sel(m, cp(m, in2), fl(m, v1), fl(m, v2)));
}

/* erfcx(a) on the pieces [0.25, 3) as F_hi + F_lo (not normalized); a is a leaf. */
static void erfcx_poly(
	struct vy__vm *m, const struct vy_expr *a, struct vy_expr **f_hi, struct vy_expr **f_lo)
{
	struct vy_expr *in1 = bind(m, lt(m, cp(m, a), fl(m, ERFCX_BOUND1)));
	struct vy_expr *in2 = bind(m, lt(m, cp(m, a), fl(m, ERFCX_BOUND2)));
#define PICK(t, k) pick(m, in1, in2, t[0][k], t[1][k], t[2][k])
	struct vy_expr *d =
		bind(m, sub(m, cp(m, a), pick(m, in1, in2, erfcx_z[0], erfcx_z[1], erfcx_z[2])));
	struct vy_expr *q = PICK(erfcx_q, ERFCX_Q - 1);
	for (int k = ERFCX_Q - 1; k-- > 0;) {
		q = fma3(m, q, cp(m, d), PICK(erfcx_q, k));
	}
	struct vy_expr *k0 = bind(m, PICK(erfcx_hi, 0));
	struct vy_expr *k1 = bind(m, PICK(erfcx_hi, 1));
	struct vy_expr *k2 = bind(m, PICK(erfcx_hi, 2));
	/* k0 + k1 d: the product and its error, the sum by Fast2Sum (|k1 d| < k0) */
	struct vy_expr *ph = bind(m, mul(m, cp(m, k1), cp(m, d)));
	struct vy_expr *pl = fma3(m, cp(m, k1), cp(m, d), neg(m, cp(m, ph)));
	struct vy_expr *s = bind(m, add(m, cp(m, k0), cp(m, ph)));
	struct vy_expr *e = add(m, sub(m, cp(m, k0), cp(m, s)), cp(m, ph));
	/* + k2 d^2: d^2 and k2 d^2_hi each with its error, the sum by Fast2Sum */
	struct vy_expr *dd = bind(m, mul(m, cp(m, d), cp(m, d)));
	struct vy_expr *ddl = fma3(m, cp(m, d), cp(m, d), neg(m, cp(m, dd)));
	struct vy_expr *mh = bind(m, mul(m, cp(m, k2), cp(m, dd)));
	struct vy_expr *ml = fma3(m, cp(m, k2), cp(m, dd), neg(m, cp(m, mh)));
	*f_hi = bind(m, add(m, cp(m, s), cp(m, mh)));
	struct vy_expr *e2 = add(m, sub(m, cp(m, s), cp(m, *f_hi)), cp(m, mh));
	/* the low parts of the coefficients, the errors, and d^3 times the rest */
	struct vy_expr *lo_k = fma3(m, PICK(erfcx_lo, 1), cp(m, d),
		fma3(m, cp(m, k2), ddl, fma3(m, PICK(erfcx_lo, 2), cp(m, dd), PICK(erfcx_lo, 0))));
#undef PICK
	struct vy_expr *low = add(m, add(m, add(m, pl, e), add(m, e2, ml)), lo_k);
	*f_lo = fma3(m, mul(m, cp(m, dd), cp(m, d)), q, low);
}

/* erfcx(a) for a in [3, 9.25] as F_hi + F_lo (not normalized); a is a leaf. */
static void erfcx_asymptotic(
	struct vy__vm *m, const struct vy_expr *a, struct vy_expr **f_hi, struct vy_expr **f_lo)
{
	/* t = 1/a and w = t^2 as pairs: the remainder of the quotient from an fma */
	struct vy_expr *th = bind(m, divide(m, fl(m, 1.0f), cp(m, a)));
	struct vy_expr *tl =
		bind(m, mul(m, fma3(m, neg(m, cp(m, th)), cp(m, a), fl(m, 1.0f)), cp(m, th)));
	struct vy_expr *wh = bind(m, mul(m, cp(m, th), cp(m, th)));
	struct vy_expr *wl = fma3(m, add(m, cp(m, th), cp(m, th)), cp(m, tl),
		fma3(m, cp(m, th), cp(m, th), neg(m, cp(m, wh))));
	/* v = t / sqrt(pi) as a pair */
	struct vy_expr *vh = bind(m, mul(m, cp(m, th), fl(m, RSQRT_PI_HI)));
	struct vy_expr *vl =
		bind(m, add(m, fma3(m, cp(m, th), fl(m, RSQRT_PI_HI), neg(m, cp(m, vh))),
				fma3(m, cp(m, tl), fl(m, RSQRT_PI_HI),
					mul(m, cp(m, th), fl(m, RSQRT_PI_LO)))));
	/* v - v w / 2: v_hi w_hi with its error, the difference by Fast2Sum (w <= 1/9) */
	struct vy_expr *p = bind(m, mul(m, cp(m, vh), cp(m, wh)));
	struct vy_expr *pl = fma3(m, cp(m, vh), cp(m, wh), neg(m, cp(m, p)));
	struct vy_expr *hp = bind(m, mul(m, cp(m, p), fl(m, 0.5f)));
	*f_hi = bind(m, sub(m, cp(m, vh), cp(m, hp)));
	struct vy_expr *ge = sub(m, sub(m, cp(m, vh), cp(m, *f_hi)), cp(m, hp));
	struct vy_expr *cross = fma3(m, cp(m, vh), wl, fma3(m, cp(m, vl), cp(m, wh), pl));
	struct vy_expr *low = add(m, cp(m, vl), sub(m, ge, mul(m, fl(m, 0.5f), cross)));
	/* + v w^2 R(w) */
	*f_lo = fma3(m, mul(m, cp(m, p), cp(m, wh)), VY__VM_HORNER(m, erfc_r, wh), low);
}

/*
 * erfc(a) for a = min(|x|, 9.25) >= 0.25 as 2^-m (y_hi + y_lo): the leaves y_hi, y_lo and p2 =
 * 2^-m. a is a leaf.
 */
static void erfc_scaled(struct vy__vm *m, const struct vy_expr *a, struct vy_expr **y_hi,
	struct vy_expr **y_lo, struct vy_expr **p2)
{
	/* e^(-a^2) = 2^-m e^r (1 + rs), r = m ln2_hi - h exactly, rs = m ln2_lo - l */
	struct vy_expr *h = bind(m, mul(m, cp(m, a), cp(m, a)));
	struct vy_expr *l = fma3(m, cp(m, a), cp(m, a), neg(m, cp(m, h)));
	struct vy_expr *mf = bind(m, rnd(m, mul(m, cp(m, h), fl(m, LOG2E))));
	struct vy_expr *r = bind(m, fma3(m, cp(m, mf), fl(m, LN2_HI), neg(m, cp(m, h))));
	struct vy_expr *rs = bind(m, fma3(m, cp(m, mf), fl(m, LN2_LO), neg(m, l)));
	/* e^r = 1 + r + r^2 / 2 + r^3 B(r): the first three terms summed exactly */
	struct vy_expr *s2 = bind(m, mul(m, cp(m, r), cp(m, r)));
	struct vy_expr *s2l = fma3(m, cp(m, r), cp(m, r), neg(m, cp(m, s2)));
	struct vy_expr *b = fma3(m, mul(m, cp(m, r), cp(m, s2)), VY__VM_HORNER(m, erfc_b, r),
		mul(m, s2l, fl(m, 0.5f)));
	struct vy_expr *e0h = bind(m, add(m, fl(m, 1.0f), cp(m, r)));
	struct vy_expr *e0l = add(m, sub(m, fl(m, 1.0f), cp(m, e0h)), cp(m, r));
	struct vy_expr *hs = bind(m, mul(m, cp(m, s2), fl(m, 0.5f)));
	struct vy_expr *e1h = bind(m, add(m, cp(m, e0h), cp(m, hs)));
	struct vy_expr *e1l = add(m, sub(m, cp(m, e0h), cp(m, e1h)), cp(m, hs));
	struct vy_expr *elo = bind(m, add(m, add(m, e0l, e1l), b));
	/* times (1 + rs), then normalized */
	struct vy_expr *elr = bind(m, fma3(m, add(m, cp(m, e1h), cp(m, elo)), rs, elo));
	struct vy_expr *eh = bind(m, add(m, cp(m, e1h), cp(m, elr)));
	struct vy_expr *el = bind(m, add(m, sub(m, cp(m, e1h), cp(m, eh)), elr));

	struct vy_expr *ph, *pl, *ah, *al;
	erfcx_poly(m, a, &ph, &pl);
	erfcx_asymptotic(m, a, &ah, &al);
	struct vy_expr *far = bind(m, ge(m, cp(m, a), fl(m, ERFC_TAIL)));
	struct vy_expr *f0 = bind(m, sel(m, cp(m, far), ah, ph));
	struct vy_expr *f1 = bind(m, sel(m, far, al, pl));
	struct vy_expr *fh = bind(m, add(m, cp(m, f0), cp(m, f1)));
	struct vy_expr *flo = bind(m, add(m, sub(m, f0, cp(m, fh)), f1));

	/* the product of the pairs; y_lo holds the error of y_hi and the cross terms */
	*y_hi = bind(m, mul(m, cp(m, eh), cp(m, fh)));
	struct vy_expr *cross = fma3(m, cp(m, eh), cp(m, flo),
		fma3(m, cp(m, el), cp(m, fh), mul(m, cp(m, el), cp(m, flo))));
	*y_lo = bind(m, add(m, fma3(m, eh, fh, neg(m, cp(m, *y_hi))), cross));
	*p2 = bind(m, vy__vm_pow2(m, neg(m, to_i32(m, mf))));
}

/* k - 2^-m (y_hi + y_lo) for k = 1 or 2 (larger than the scaled pair), by Fast2Sum. */
static struct vy_expr *minus_scaled(struct vy__vm *m, float k, const struct vy_expr *y_hi,
	const struct vy_expr *y_lo, const struct vy_expr *p2)
{
	struct vy_expr *hh = bind(m, mul(m, cp(m, y_hi), cp(m, p2)));
	struct vy_expr *s = bind(m, sub(m, fl(m, k), cp(m, hh)));
	struct vy_expr *e = sub(m, sub(m, fl(m, k), cp(m, s)), hh);
	return add(m, s, sub(m, e, mul(m, cp(m, y_lo), cp(m, p2))));
}

static struct vy_expr *nan_passes(struct vy__vm *m, const struct vy_expr *x, struct vy_expr *res)
{
	return sel(m, ne(m, cp(m, x), cp(m, x)), cp(m, x), res);
}

struct vy_expr *vy__vm_erf(struct vy__vm *m, const struct vy_expr *x)
{
	struct vy_expr *ax = bind(m, absv(m, cp(m, x)));
	struct vy_expr *a = bind(m, vmin(m, cp(m, ax), fl(m, ERFC_CLAMP)));
	struct vy_expr *w_hi, *w_lo, *y_hi, *y_lo, *p2;
	small_w(m, x, &w_hi, &w_lo);
	/* x W, with x scaled by 2^48 (exactly) so that x W_lo stays normal down to x = 2^-126 */
	struct vy_expr *xs = bind(m, mul(m, cp(m, x), fl(m, 0x1p48f)));
	struct vy_expr *near =
		mul(m, fma3(m, cp(m, xs), w_hi, mul(m, cp(m, xs), w_lo)), fl(m, 0x1p-48f));
	erfc_scaled(m, a, &y_hi, &y_lo, &p2);
	/* 1 - erfc(|x|), with the sign of x */
	struct vy_expr *far = bind(m, minus_scaled(m, 1.0f, y_hi, y_lo, p2));
	far = sel(m, lt(m, cp(m, x), fl(m, 0.0f)), neg(m, cp(m, far)), cp(m, far));
	struct vy_expr *res = sel(m, lt(m, ax, fl(m, ERF_SMALL)), near, far);
	/* -0 stays -0 (x W_lo may be +0 beside it) */
	res = sel(m, eq(m, cp(m, x), fl(m, 0.0f)), cp(m, x), res);
	return nan_passes(m, x, res);
}

struct vy_expr *vy__vm_erfc(struct vy__vm *m, const struct vy_expr *x)
{
	struct vy_expr *ax = bind(m, absv(m, cp(m, x)));
	struct vy_expr *a = bind(m, vmin(m, cp(m, ax), fl(m, ERFC_CLAMP)));
	struct vy_expr *w_hi, *w_lo, *y_hi, *y_lo, *p2;
	small_w(m, x, &w_hi, &w_lo);
	/* 1 - x W: the product and its error, the difference by Fast2Sum (|x W| < 0.28) */
	struct vy_expr *eh = bind(m, mul(m, cp(m, x), cp(m, w_hi)));
	struct vy_expr *el =
		add(m, fma3(m, cp(m, x), w_hi, neg(m, cp(m, eh))), mul(m, cp(m, x), w_lo));
	struct vy_expr *s = bind(m, sub(m, fl(m, 1.0f), cp(m, eh)));
	struct vy_expr *e = sub(m, sub(m, fl(m, 1.0f), cp(m, s)), eh);
	struct vy_expr *near = add(m, s, sub(m, e, el));
	erfc_scaled(m, a, &y_hi, &y_lo, &p2);
	/* x >= 0: the pair rounded, then scaled (a result below 2^-126 flushes); x < 0: 2 - it */
	struct vy_expr *pos = mul(m, add(m, cp(m, y_hi), cp(m, y_lo)), cp(m, p2));
	struct vy_expr *negv = minus_scaled(m, 2.0f, y_hi, y_lo, p2);
	struct vy_expr *far = sel(m, lt(m, cp(m, x), fl(m, 0.0f)), negv, pos);
	struct vy_expr *res = sel(m, lt(m, ax, fl(m, ERF_SMALL)), near, far);
	return nan_passes(m, x, res);
}
