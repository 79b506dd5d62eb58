/*
 * Expansions of sin, cos, tan, asin, acos and atan (DESIGN.md §4.4; docs/semantics.md gives each
 * one's domain and measured error).
 *
 * sin, cos, tan: n = round(x 2/pi), r = x - n pi/2 by Cody-Waite reduction with pi/2 in three f32
 * parts. The first step (an fma) is exact while |n| < 2^22; the second product and difference are
 * kept exactly as pairs (the fma product error and TwoSum), so r is rounded once at the end. The
 * reduction is accurate over the documented domain and deterministic (but meaningless) beyond it.
 * n goes to i32 and back so that a zero n is +0, and x = -0 gives r = -0.
 * On r: sin r = r + r^3 S(r^2), cos r = 1 + r^2 C(r^2), and the quadrant n mod 4 picks which one
 * and its sign; tan r = r + r^3 T(r^2), and tan x is tan r or -1 / tan r by the parity of n.
 * sin and cos are clamped to [-1, 1] (which also bounds them outside the domain); infinities and
 * NaN give NaN.
 *
 * asin, acos: for |x| <= 1/2, asin x = x + x^3 A(x^2); above, with z = (1 - |x|) / 2 (exact) and
 * s = sqrt(z), asin |x| = pi/2 - 2 (s + s z A(z)), acos x = 2 (s + s z A(z)) for x > 0 and
 * pi - 2 (...) for x < 0, with pi/2 and pi in two parts. Outside [-1, 1] the result is NaN.
 *
 * atan: |x| > 1 is reflected to 1/|x| (atan |x| = pi/2 - atan(1/|x|)), and t > tan(pi/8) is moved
 * to u = (t - 1) / (t + 1) (atan t = pi/4 + atan u), leaving |u| <= tan(pi/8) for
 * u + u^3 B(u^2). The constant is added last in two parts, so the result never cancels.
 *
 * Odd functions return x itself for x = +-0: a negative correction term would otherwise turn -0
 * into +0 (an fma adding +0 and -0 gives +0).
 */
#include "vmath_emit.h"

/* (sin(r) / r - 1) / r^2 for r^2 in [0, (pi/4)^2], degree 3. */
static const float sin_s[] = {-0.166666672f, 0.00833333191f, -0.000198400812f, 2.72493799e-06f};
/* (cos(r) - 1) / r^2 for r^2 in [0, (pi/4)^2], degree 4. */
static const float cos_c[] = {
	-0.5f, 0.0416666679f, -0.00138888846f, 2.47998523e-05f, -2.72363394e-07f};
/* (tan(r) / r - 1) / r^2 for r^2 in [0, (pi/4)^2], degree 7. */
static const float tan_t[] = {0.333333343f, 0.13333343f, 0.0539650097f, 0.0219107382f,
	0.00860895589f, 0.0044260486f, -9.03533305e-07f, 0.00178968778f};
/* (asin(x) / x - 1) / x^2 for x^2 in [0, 1/4], degree 5. */
static const float asin_a[] = {
	0.166666657f, 0.0750009865f, 0.0445981063f, 0.0311153214f, 0.0170816518f, 0.0337997191f};
/* (atan(u) / u - 1) / u^2 for u^2 in [0, tan(pi/8)^2], degree 5. */
static const float atan_b[] = {
	-0.333333343f, 0.199999779f, -0.142841652f, 0.110716008f, -0.0862622932f, 0.0505172275f};

#define TWO_OVER_PI 0.636619747f /* 0x3F22F983 */
#define PIO2_1 1.57079637f       /* 0x3FC90FDB */
#define PIO2_2 -4.37113883e-08f  /* 0xB33BBD2E */
#define PIO2_3 -1.71512451e-15f  /* 0xA6F72CED */
#define PIO2_HI PIO2_1
#define PIO2_LO PIO2_2
#define PIO4_HI 0.785398185f     /* 0x3F490FDB */
#define PIO4_LO -2.18556941e-08f /* 0xB2BBBD2E */
#define PI_HI 3.14159274f        /* 0x40490FDB */
#define PI_LO -8.74227766e-08f   /* 0xB3BBBD2E */
#define TAN_PI_8 0.414213568f    /* 0x3ED413CD */
/* From this |x| on the reduction is Payne-Hanek's (reduce_large), below it Cody-Waite's. */
#define LARGE_REDUCTION 4096.0f /* 2^12 */

struct quadrant {
	struct vy_expr *n;  /* i32 leaf: the multiple of pi/2 */
	struct vy_expr *r;  /* leaf: x - n pi/2 */
	struct vy_expr *rl; /* leaf: x - n pi/2 - r, the rounding error of r (tan only), or NULL */
	struct vy_expr *z;  /* leaf: r^2 */
};

/*
 * 2/pi in binary, 32 zero bits first: bit i of this string (from the top of word 0) is the bit of
 * weight 2^(32 - i - 1) of 2/pi, so that a window may start before the binary point.
 */
static const uint32_t two_over_pi_bits[8] = {0x00000000, 0xA2F9836E, 0x4E441529, 0xFC2757D1,
	0xF534DDC0, 0xDB629599, 0x3C439041, 0xFE5163AB};

/* Word w + k of the table for a u32 leaf w in [0, 4] (other w give word k). */
static struct vy_expr *table_word(struct vy__vm *m, const struct vy_expr *w, uint32_t k)
{
	struct vy_expr *v = ul(m, two_over_pi_bits[k]);
	for (uint32_t j = 1; j <= 4; j++) {
		v = sel(m, eq(m, cp(m, w), ul(m, j)), ul(m, two_over_pi_bits[j + k]), v);
	}
	return v;
}

/* The 32 bits of a:b starting s bits into a, for u32 leaves a, b, s (s in [0, 31]). */
static struct vy_expr *funnel(
	struct vy__vm *m, const struct vy_expr *a, const struct vy_expr *b, const struct vy_expr *s)
{
	struct vy_expr *joined =
		bor(m, shl(m, cp(m, a), cp(m, s)), shr(m, cp(m, b), sub(m, ul(m, 32), cp(m, s))));
	return sel(m, eq(m, cp(m, s), ul(m, 0)), cp(m, a), joined);
}

/* The carry (0 or 1, as u32) of the u32 sum `sum` = a + b, for u32 leaves. */
static struct vy_expr *carry_of(
	struct vy__vm *m, const struct vy_expr *sum, const struct vy_expr *a)
{
	return to_u32(m, lt(m, cp(m, sum), cp(m, a)));
}

/*
 * Payne-Hanek reduction, exact for every finite |x| >= 2^-7 (DESIGN.md §4.4): with |x| = M 2^e
 * (M the 24-bit significand), x 2/pi mod 4 is M times the 96 bits of 2/pi that begin at weight
 * 2^(1 - e), as a fixed-point number with two integer bits; the bits of 2/pi before that window
 * only add multiples of 4, and those after it less than 2^-69. The 94-bit fraction is rounded to
 * the nearest quadrant (a fraction of 1/2 or more moves to the next one and becomes negative),
 * normalized, converted to a pair of f32 that hold its top 48 bits exactly, and multiplied by
 * pi/2 in two parts. Every step is an integer operation, an exact conversion or scaling, or one
 * of three f32 operations at the end, so every backend computes the same bits. Returns n mod 4
 * (i32) and r = x - n pi/2 (f32, the sign of x), and where rl_out is not NULL the rounding error
 * of r's last addition (Fast2Sum).
 */
static void reduce_large(struct vy__vm *m, const struct vy_expr *x, struct vy_expr **n_out,
	struct vy_expr **r_out, struct vy_expr **rl_out)
{
	struct vy_expr *bits = bind(m, vy__vm_bitcast(m, VY_TYPE_U32, absv(m, cp(m, x))));
	struct vy_expr *mant =
		bind(m, bor(m, band(m, cp(m, bits), ul(m, 0x7FFFFF)), ul(m, 0x800000)));
	/* The window starts at bit i0 = e + 30 of the table, e = biased exponent - 150. */
	struct vy_expr *i0 = bind(m, sub(m, shr(m, cp(m, bits), ul(m, 23)), ul(m, 120)));
	struct vy_expr *w = bind(m, shr(m, cp(m, i0), ul(m, 5)));
	struct vy_expr *s = bind(m, band(m, cp(m, i0), ul(m, 31)));
	struct vy_expr *t[4];
	for (uint32_t k = 0; k < 4; k++) {
		t[k] = bind(m, table_word(m, w, k));
	}
	struct vy_expr *win[3];
	for (uint32_t k = 0; k < 3; k++) {
		win[k] = bind(m, funnel(m, t[k], t[k + 1], s));
	}
	/* M * win as words R2:R1:R0 (the bits above R2 are whole multiples of 4). */
	struct vy_expr *r0 = bind(m, mul(m, cp(m, mant), cp(m, win[2])));
	struct vy_expr *hi2 = bind(m, mulhi(m, cp(m, mant), cp(m, win[2])));
	struct vy_expr *r1 = bind(m, add(m, cp(m, hi2), mul(m, cp(m, mant), cp(m, win[1]))));
	struct vy_expr *c1 = carry_of(m, r1, hi2);
	struct vy_expr *r2 = bind(m, add(m,
					     add(m, mulhi(m, cp(m, mant), cp(m, win[1])),
						     mul(m, cp(m, mant), cp(m, win[0]))),
					     c1));
	/* The quadrant is bits 31:30 of R2; the fraction's top 64 bits follow. */
	struct vy_expr *frac_hi =
		bind(m, bor(m, shl(m, band(m, cp(m, r2), ul(m, 0x3FFFFFFF)), ul(m, 2)),
				shr(m, cp(m, r1), ul(m, 30))));
	struct vy_expr *frac_lo =
		bind(m, bor(m, shl(m, cp(m, r1), ul(m, 2)), shr(m, cp(m, r0), ul(m, 30))));
	struct vy_expr *up = bind(m, ne(m, band(m, cp(m, frac_hi), ul(m, 0x80000000u)), ul(m, 0)));
	struct vy_expr *quad = bind(m, add(m, shr(m, cp(m, r2), ul(m, 30)), to_u32(m, cp(m, up))));
	/* |fraction| as a 64-bit integer mh:ml. */
	struct vy_expr *nl = bind(m, add(m, bnot(m, cp(m, frac_lo)), ul(m, 1)));
	struct vy_expr *nh = add(m, bnot(m, cp(m, frac_hi)), to_u32(m, eq(m, cp(m, nl), ul(m, 0))));
	struct vy_expr *mh = bind(m, sel(m, cp(m, up), nh, cp(m, frac_hi)));
	struct vy_expr *ml = bind(m, sel(m, cp(m, up), cp(m, nl), cp(m, frac_lo)));
	/* Normalized: top:next = (mh:ml) << lz, top's high bit set (all zero for a zero fraction).
	 */
	struct vy_expr *hz = bind(m, eq(m, cp(m, mh), ul(m, 0)));
	struct vy_expr *a = bind(m, sel(m, cp(m, hz), cp(m, ml), cp(m, mh)));
	struct vy_expr *b = bind(m, sel(m, cp(m, hz), ul(m, 0), cp(m, ml)));
	struct vy_expr *l = bind(m, clz(m, cp(m, a)));
	struct vy_expr *top = bind(m, funnel(m, a, b, l));
	struct vy_expr *next = bind(m, shl(m, cp(m, b), cp(m, l)));
	struct vy_expr *lz = add(m, cp(m, l), sel(m, cp(m, hz), ul(m, 32), ul(m, 0)));
	/* fraction = (top >> 8) 2^-24 + (24 bits below them) 2^-48, times 2^-lz (lz <= 64). */
	struct vy_expr *scale =
		bind(m, vy__vm_bitcast(m, VY_TYPE_F32, shl(m, sub(m, ul(m, 127), lz), ul(m, 23))));
	struct vy_expr *hi24 = to_f32(m, shr(m, cp(m, top), ul(m, 8)));
	struct vy_expr *lo24 = to_f32(m, bor(m, shl(m, band(m, cp(m, top), ul(m, 0xFF)), ul(m, 16)),
						 shr(m, cp(m, next), ul(m, 16))));
	struct vy_expr *qh =
		bind(m, mul(m, mul(m, hi24, fbits(m, 0x33800000u /* 2^-24 */)), cp(m, scale)));
	struct vy_expr *ql =
		bind(m, mul(m, mul(m, lo24, fbits(m, 0x27800000u /* 2^-48 */)), cp(m, scale)));
	/* r = (qh + ql) pi/2, pi/2 = PIO2_1 + PIO2_2. */
	struct vy_expr *rh = bind(m, mul(m, cp(m, qh), fl(m, PIO2_1)));
	struct vy_expr *re = fma3(m, cp(m, qh), fl(m, PIO2_1), neg(m, cp(m, rh)));
	struct vy_expr *tail =
		bind(m, fma3(m, cp(m, qh), fl(m, PIO2_2), fma3(m, cp(m, ql), fl(m, PIO2_1), re)));
	struct vy_expr *rm = bind(m, add(m, cp(m, rh), cp(m, tail)));
	/* The fraction was negative after rounding up; x < 0 mirrors both. */
	struct vy_expr *xneg = bind(m, lt(m, cp(m, x), fl(m, 0.0f)));
	struct vy_expr *rs = bind(m, sel(m, cp(m, up), neg(m, cp(m, rm)), cp(m, rm)));
	*r_out = sel(m, cp(m, xneg), neg(m, cp(m, rs)), cp(m, rs));
	if (rl_out) {
		struct vy_expr *rl = bind(m, sub(m, cp(m, tail), sub(m, cp(m, rm), cp(m, rh))));
		struct vy_expr *rls = bind(m, sel(m, cp(m, up), neg(m, cp(m, rl)), cp(m, rl)));
		*rl_out = sel(m, cp(m, xneg), neg(m, cp(m, rls)), cp(m, rls));
	}
	struct vy_expr *nq = sel(m, cp(m, xneg), sub(m, ul(m, 0), cp(m, quad)), cp(m, quad));
	*n_out = to_i32(m, band(m, nq, ul(m, 3)));
}

/* The reduction of sin, cos and tan; tan also takes r's rounding error (`low`). */
static struct quadrant reduce(struct vy__vm *m, const struct vy_expr *x, bool low)
{
	struct quadrant q;
	struct vy_expr *nf = rnd(m, mul(m, cp(m, x), fl(m, TWO_OVER_PI)));
	struct vy_expr *n = bind(m, to_i32(m, nf));
	struct vy_expr *nz = bind(m, to_f32(m, cp(m, n)));
	/* r1 = x - n PIO2_1 is exact; n PIO2_2 = ph + pl exactly (fma gives the product's error).
	 */
	struct vy_expr *r1 = bind(m, fma3(m, cp(m, nz), fl(m, -PIO2_1), cp(m, x)));
	struct vy_expr *ph = bind(m, mul(m, cp(m, nz), fl(m, PIO2_2)));
	struct vy_expr *pl = fma3(m, cp(m, nz), fl(m, PIO2_2), neg(m, cp(m, ph)));
	/* s + e = r1 - ph exactly (TwoSum, no assumption on the magnitudes). */
	struct vy_expr *s = bind(m, sub(m, cp(m, r1), cp(m, ph)));
	struct vy_expr *bb = bind(m, sub(m, cp(m, s), cp(m, r1)));
	struct vy_expr *e = add(m, sub(m, cp(m, r1), sub(m, cp(m, s), cp(m, bb))),
		sub(m, neg(m, cp(m, ph)), cp(m, bb)));
	/* The tail is a few units of s's last place; adding it rounds once. */
	struct vy_expr *tail = bind(m, fma3(m, cp(m, nz), fl(m, -PIO2_3), sub(m, e, pl)));
	q.n = bind(m, cp(m, n));
	q.r = bind(m, add(m, cp(m, s), cp(m, tail)));
	q.rl = low ? bind(m, sub(m, cp(m, tail), sub(m, cp(m, q.r), cp(m, s)))) : NULL;
	/* Large arguments (and infinities, whose results the callers replace) take the exact
	 * reduction instead, computed only where they occur. */
	struct vy_expr *large = bind(m, ge(m, absv(m, cp(m, x)), fl(m, LARGE_REDUCTION)));
	uint32_t mark = vy__vm_branch_begin(m);
	struct vy_expr *large_q[3] = {NULL, NULL, NULL};
	reduce_large(m, x, &large_q[0], &large_q[1], low ? &large_q[2] : NULL);
	const struct vy_expr *vars[3] = {q.n, q.r, q.rl};
	struct vy_expr *after[3] = {NULL, NULL, NULL};
	vy__vm_branch_end(m, mark, large, vars, large_q, low ? 3 : 2, after);
	q.n = after[0];
	q.r = after[1];
	q.rl = after[2];
	q.z = bind(m, mul(m, cp(m, q.r), cp(m, q.r)));
	return q;
}

/* sin r and cos r on the reduced argument. */
static struct vy_expr *sin_r(struct vy__vm *m, const struct quadrant *q)
{
	return bind(m, fma3(m, mul(m, cp(m, q->r), cp(m, q->z)), VY__VM_HORNER(m, sin_s, q->z),
			       cp(m, q->r)));
}

static struct vy_expr *cos_r(struct vy__vm *m, const struct quadrant *q)
{
	return bind(m, fma3(m, cp(m, q->z), VY__VM_HORNER(m, cos_c, q->z), fl(m, 1.0f)));
}

static struct vy_expr *bit_set(struct vy__vm *m, struct vy_expr *n, int32_t bit)
{
	return ne(m, band(m, n, il(m, bit)), il(m, 0));
}

/* NaN for infinite and NaN arguments, which fail |x| < inf. */
static struct vy_expr *finite_only(struct vy__vm *m, const struct vy_expr *x, struct vy_expr *res)
{
	return sel(m, lt(m, absv(m, cp(m, x)), fbits(m, VY__VM_INF)), res, fbits(m, VY__VM_NAN));
}

static struct vy_expr *zero_passes(struct vy__vm *m, const struct vy_expr *x, struct vy_expr *res)
{
	return sel(m, eq(m, cp(m, x), fl(m, 0.0f)), cp(m, x), res);
}

static struct vy_expr *unit_clamp(struct vy__vm *m, struct vy_expr *v)
{
	return vmin(m, vmax(m, v, fl(m, -1.0f)), fl(m, 1.0f));
}

struct vy_expr *vy__vm_sin(struct vy__vm *m, const struct vy_expr *x)
{
	struct quadrant q = reduce(m, x, false);
	struct vy_expr *sr = sin_r(m, &q);
	struct vy_expr *cr = cos_r(m, &q);
	struct vy_expr *v = bind(m, sel(m, bit_set(m, cp(m, q.n), 1), cp(m, cr), cp(m, sr)));
	v = sel(m, bit_set(m, cp(m, q.n), 2), neg(m, cp(m, v)), cp(m, v));
	return finite_only(m, x, zero_passes(m, x, unit_clamp(m, v)));
}

struct vy_expr *vy__vm_cos(struct vy__vm *m, const struct vy_expr *x)
{
	struct quadrant q = reduce(m, x, false);
	struct vy_expr *sr = sin_r(m, &q);
	struct vy_expr *cr = cos_r(m, &q);
	struct vy_expr *v = bind(m, sel(m, bit_set(m, cp(m, q.n), 1), cp(m, sr), cp(m, cr)));
	struct vy_expr *flip = bit_set(m, add(m, cp(m, q.n), il(m, 1)), 2);
	v = sel(m, flip, neg(m, cp(m, v)), cp(m, v));
	return finite_only(m, x, unit_clamp(m, v));
}

/*
 * tan r = th + tl, th = r + c rounded once with c = r^3 T(r^2) + rl (Fast2Sum gives tl); in the odd
 * quadrants -1 / (th + tl) = q0 (1 + d), q0 = -1 / th and d = 1 + q0 (th + tl) from two fma, so
 * that neither r's rounding nor the quotient's adds a unit of error.
 */
struct vy_expr *vy__vm_tan(struct vy__vm *m, const struct vy_expr *x)
{
	struct quadrant q = reduce(m, x, true);
	struct vy_expr *c = bind(m,
		fma3(m, mul(m, cp(m, q.r), cp(m, q.z)), VY__VM_HORNER(m, tan_t, q.z), cp(m, q.rl)));
	struct vy_expr *th = bind(m, add(m, cp(m, q.r), cp(m, c)));
	struct vy_expr *tl = sub(m, cp(m, c), sub(m, cp(m, th), cp(m, q.r)));
	struct vy_expr *q0 = bind(m, divide(m, fl(m, -1.0f), cp(m, th)));
	struct vy_expr *d = fma3(m, cp(m, q0), tl, fma3(m, cp(m, q0), cp(m, th), fl(m, 1.0f)));
	struct vy_expr *cot = fma3(m, cp(m, q0), d, cp(m, q0));
	struct vy_expr *v = sel(m, bit_set(m, cp(m, q.n), 1), cot, cp(m, th));
	return finite_only(m, x, zero_passes(m, x, v));
}

/* x + x^3 A(x^2) (asin for |x| <= 1/2), and the pieces s, w of asin sqrt((1 - |x|) / 2) = s + w. */
struct asin_parts {
	struct vy_expr *z1; /* x^2 */
	struct vy_expr *s;  /* sqrt((1 - |x|) / 2) */
	struct vy_expr *w;  /* s z A(z) */
};

static struct asin_parts asin_split(struct vy__vm *m, const struct vy_expr *x)
{
	struct asin_parts a;
	a.z1 = bind(m, mul(m, cp(m, x), cp(m, x)));
	struct vy_expr *z2 = bind(m, mul(m, sub(m, fl(m, 1.0f), absv(m, cp(m, x))), fl(m, 0.5f)));
	a.s = bind(m, sqrtv(m, cp(m, z2)));
	a.w = bind(m, mul(m, mul(m, cp(m, a.s), cp(m, z2)), VY__VM_HORNER(m, asin_a, z2)));
	return a;
}

static struct vy_expr *in_unit(struct vy__vm *m, const struct vy_expr *x, struct vy_expr *res)
{
	return sel(m, le(m, absv(m, cp(m, x)), fl(m, 1.0f)), res, fbits(m, VY__VM_NAN));
}

struct vy_expr *vy__vm_asin(struct vy__vm *m, const struct vy_expr *x)
{
	struct asin_parts a = asin_split(m, x);
	struct vy_expr *small =
		fma3(m, mul(m, cp(m, x), cp(m, a.z1)), VY__VM_HORNER(m, asin_a, a.z1), cp(m, x));
	struct vy_expr *big =
		bind(m, add(m, sub(m, fl(m, PIO2_HI), mul(m, cp(m, a.s), fl(m, 2.0f))),
				fma3(m, cp(m, a.w), fl(m, -2.0f), fl(m, PIO2_LO))));
	struct vy_expr *sbig = sel(m, lt(m, cp(m, x), fl(m, 0.0f)), neg(m, cp(m, big)), cp(m, big));
	struct vy_expr *res = sel(m, le(m, absv(m, cp(m, x)), fl(m, 0.5f)), small, sbig);
	return in_unit(m, x, res);
}

struct vy_expr *vy__vm_acos(struct vy__vm *m, const struct vy_expr *x)
{
	struct asin_parts a = asin_split(m, x);
	struct vy_expr *corr = fma3(m, neg(m, mul(m, cp(m, x), cp(m, a.z1))),
		VY__VM_HORNER(m, asin_a, a.z1), fl(m, PIO2_LO));
	struct vy_expr *small = sub(m, fl(m, PIO2_HI), sub(m, cp(m, x), corr));
	struct vy_expr *pos = mul(m, add(m, cp(m, a.s), cp(m, a.w)), fl(m, 2.0f));
	struct vy_expr *negv = add(m, sub(m, fl(m, PI_HI), mul(m, cp(m, a.s), fl(m, 2.0f))),
		fma3(m, cp(m, a.w), fl(m, -2.0f), fl(m, PI_LO)));
	struct vy_expr *big = sel(m, gt(m, cp(m, x), fl(m, 0.0f)), pos, negv);
	struct vy_expr *res = sel(m, le(m, absv(m, cp(m, x)), fl(m, 0.5f)), small, big);
	return in_unit(m, x, res);
}

struct vy_expr *vy__vm_atan(struct vy__vm *m, const struct vy_expr *x)
{
	struct vy_expr *a = bind(m, absv(m, cp(m, x)));
	struct vy_expr *inv = bind(m, gt(m, cp(m, a), fl(m, 1.0f)));
	struct vy_expr *t = bind(m, sel(m, cp(m, inv), divide(m, fl(m, 1.0f), cp(m, a)), cp(m, a)));
	struct vy_expr *mid = bind(m, gt(m, cp(m, t), fl(m, TAN_PI_8)));
	struct vy_expr *shifted =
		divide(m, sub(m, cp(m, t), fl(m, 1.0f)), add(m, cp(m, t), fl(m, 1.0f)));
	struct vy_expr *u = bind(m, sel(m, cp(m, mid), shifted, cp(m, t)));
	struct vy_expr *z = bind(m, mul(m, cp(m, u), cp(m, u)));
	struct vy_expr *p =
		fma3(m, mul(m, cp(m, u), cp(m, z)), VY__VM_HORNER(m, atan_b, z), cp(m, u));
	struct vy_expr *hi =
		sel(m, cp(m, mid), fl(m, PIO4_HI), sel(m, cp(m, inv), fl(m, PIO2_HI), fl(m, 0.0f)));
	struct vy_expr *lo =
		sel(m, cp(m, mid), fl(m, PIO4_LO), sel(m, cp(m, inv), fl(m, PIO2_LO), fl(m, 0.0f)));
	struct vy_expr *sign = sel(m, cp(m, inv), fl(m, -1.0f), fl(m, 1.0f));
	struct vy_expr *r = bind(m, add(m, hi, fma3(m, sign, p, lo)));
	struct vy_expr *res = sel(m, lt(m, cp(m, x), fl(m, 0.0f)), neg(m, cp(m, r)), cp(m, r));
	return zero_passes(m, x, res);
}

#define PI3O4_HI 2.3561945f       /* 0x4016CBE4 */
#define PI3O4_LO -5.96244032e-09f /* 0xB1CCDE2E */

/* A two-part constant picked by selects: `c` chooses `a` (hi, lo) over `b`. */
struct pair {
	struct vy_expr *hi, *lo;
};

static struct pair pick(struct vy__vm *m, const struct vy_expr *c, struct pair a, struct pair b)
{
	return (struct pair){sel(m, cp(m, c), a.hi, b.hi), sel(m, cp(m, c), a.lo, b.lo)};
}

static struct pair two(struct vy__vm *m, float hi, float lo)
{
	return (struct pair){fl(m, hi), fl(m, lo)};
}

/*
 * atan2(y, x): the smaller of |x| and |y| over the larger is t in [0, 1]; both are first scaled
 * by the power of two that brings the larger into [1, 2) (as hypot does), so nothing below
 * overflows or loses its low part to underflow. t <= tan(pi/8) is u = t as a pair: the
 * quotient and its remainder from an fma over the divisor. Above, atan t = pi/4 + atan u with
 * u = (n - d) / (n + d), the difference and the sum kept exactly as pairs (Fast2Sum) and the
 * quotient corrected as before. atan(u_hi + u_lo) = u_hi + u_hi^3 B(u^2) + u_lo (1 - u^2).
 * The quadrant adds a constant K in two parts (0, pi/4, pi/2, 3pi/4 or pi) with a sign s on the
 * angle; K_hi + s u_hi is summed exactly (Fast2Sum, K_hi being 0 or larger than |u_hi|), so only
 * the final addition of all the small parts rounds. The result takes the sign of y.
 */
struct vy_expr *vy__vm_atan2(struct vy__vm *m, const struct vy_expr *y, const struct vy_expr *x)
{
	struct vy_expr *ay = bind(m, absv(m, cp(m, y)));
	struct vy_expr *ax = bind(m, absv(m, cp(m, x)));
	struct vy_expr *swap = bind(m, gt(m, cp(m, ay), cp(m, ax)));
	struct vy_expr *xbits = bind(m, vy__vm_bitcast(m, VY_TYPE_U32, cp(m, x)));
	struct vy_expr *xneg = bind(m, ne(m, shr(m, cp(m, xbits), ul(m, 31)), ul(m, 0)));
	struct vy_expr *den = bind(m, vmax(m, cp(m, ax), cp(m, ay)));
	struct vy_expr *bits = bind(m, vy__vm_bitcast(m, VY_TYPE_U32, cp(m, den)));
	/* den = d * 2^e with d in [1, 2); n = num * 2^-e in two factors */
	struct vy_expr *k =
		bind(m, sub(m, il(m, 127),
				to_i32(m, band(m, shr(m, cp(m, bits), ul(m, 23)), ul(m, 0xFF)))));
	struct vy_expr *d = bind(
		m, vy__vm_bitcast(m, VY_TYPE_F32,
			   bor(m, band(m, cp(m, bits), ul(m, 0x007FFFFFu)), ul(m, 0x3F800000u))));
	struct vy_expr *k1 = bind(m, shr(m, cp(m, k), ul(m, 1)));
	struct vy_expr *n =
		bind(m, mul(m, mul(m, vmin(m, cp(m, ax), cp(m, ay)), vy__vm_pow2(m, cp(m, k1))),
				vy__vm_pow2(m, sub(m, cp(m, k), cp(m, k1)))));
	struct vy_expr *t = bind(m, divide(m, cp(m, n), cp(m, d)));
	struct vy_expr *mid = bind(m, gt(m, cp(m, t), fl(m, TAN_PI_8)));
	/* the numerator and denominator of u, each as a pair */
	struct vy_expr *sh = bind(m, sel(m, cp(m, mid), sub(m, cp(m, n), cp(m, d)), cp(m, n)));
	struct vy_expr *sl = bind(
		m, sel(m, cp(m, mid), sub(m, cp(m, n), add(m, cp(m, sh), cp(m, d))), fl(m, 0.0f)));
	struct vy_expr *ph = bind(m, sel(m, cp(m, mid), add(m, cp(m, n), cp(m, d)), cp(m, d)));
	struct vy_expr *pl = bind(
		m, sel(m, cp(m, mid), sub(m, cp(m, n), sub(m, cp(m, ph), cp(m, d))), fl(m, 0.0f)));
	struct vy_expr *uh = bind(m, divide(m, cp(m, sh), cp(m, ph)));
	struct vy_expr *rem = add(m, fma3(m, neg(m, cp(m, uh)), cp(m, ph), cp(m, sh)),
		fma3(m, neg(m, cp(m, uh)), cp(m, pl), cp(m, sl)));
	struct vy_expr *ul_ = bind(m, divide(m, rem, cp(m, ph)));
	struct vy_expr *z = bind(m, mul(m, cp(m, uh), cp(m, uh)));
	struct vy_expr *corr = fma3(m, neg(m, cp(m, ul_)), cp(m, z), cp(m, ul_));
	struct vy_expr *low =
		bind(m, fma3(m, mul(m, cp(m, uh), cp(m, z)), VY__VM_HORNER(m, atan_b, z), corr));
	/* the quadrant's constant and the sign of the angle */
	struct vy_expr *minus = bind(m, ne(m, cp(m, xneg), cp(m, swap)));
	struct pair far = pick(m, xneg, two(m, PI_HI, PI_LO), two(m, 0.0f, 0.0f));
	struct pair plain = pick(m, swap, two(m, PIO2_HI, PIO2_LO), far);
	struct pair shifted = pick(m, xneg, two(m, PI3O4_HI, PI3O4_LO), two(m, PIO4_HI, PIO4_LO));
	struct pair kc = pick(m, mid, shifted, plain);
	struct vy_expr *khi = bind(m, kc.hi);
	struct vy_expr *su = bind(m, sel(m, cp(m, minus), neg(m, cp(m, uh)), cp(m, uh)));
	struct vy_expr *slow = sel(m, cp(m, minus), neg(m, cp(m, low)), cp(m, low));
	struct vy_expr *s = bind(m, add(m, cp(m, khi), cp(m, su)));
	struct vy_expr *err = sub(m, cp(m, su), sub(m, cp(m, s), cp(m, khi)));
	struct vy_expr *mag = bind(m, add(m, cp(m, s), add(m, err, add(m, slow, kc.lo))));
	/* infinities and zeros of the operands */
	struct vy_expr *yinf = bind(m, eq(m, cp(m, ay), fbits(m, VY__VM_INF)));
	struct vy_expr *xinf = bind(m, eq(m, cp(m, ax), fbits(m, VY__VM_INF)));
	struct vy_expr *both_inf = sel(m, cp(m, xneg), fl(m, PI3O4_HI), fl(m, PIO4_HI));
	struct vy_expr *x_inf = sel(m, cp(m, xneg), fl(m, PI_HI), fl(m, 0.0f));
	struct vy_expr *zeros = sel(m, cp(m, xneg), fl(m, PI_HI), fl(m, 0.0f));
	mag = sel(m, eq(m, cp(m, den), fl(m, 0.0f)), zeros, mag);
	mag = sel(m, cp(m, xinf), x_inf, mag);
	mag = sel(m, cp(m, yinf), sel(m, cp(m, xinf), both_inf, fl(m, PIO2_HI)), mag);
	mag = bind(m, mag);
	struct vy_expr *res = sel(m, lt(m, vy__vm_bitcast(m, VY_TYPE_I32, cp(m, y)), il(m, 0)),
		neg(m, cp(m, mag)), cp(m, mag));
	struct vy_expr *any_nan = lor(m, ne(m, cp(m, x), cp(m, x)), ne(m, cp(m, y), cp(m, y)));
	return sel(m, any_nan, fbits(m, VY__VM_NAN), res);
}
