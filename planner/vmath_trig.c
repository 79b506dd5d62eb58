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

struct quadrant {
	struct vy_expr *n; /* i32 leaf: the multiple of pi/2 */
	struct vy_expr *r; /* leaf: x - n pi/2 */
	struct vy_expr *z; /* leaf: r^2 */
};

static struct quadrant reduce(struct vy__vm *m, const struct vy_expr *x)
{
	struct quadrant q;
	struct vy_expr *nf = rnd(m, mul(m, cp(m, x), fl(m, TWO_OVER_PI)));
	q.n = bind(m, to_i32(m, nf));
	struct vy_expr *nz = bind(m, to_f32(m, cp(m, q.n)));
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
	struct vy_expr *tail = fma3(m, cp(m, nz), fl(m, -PIO2_3), sub(m, e, pl));
	q.r = bind(m, add(m, cp(m, s), tail));
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
	struct quadrant q = reduce(m, x);
	struct vy_expr *sr = sin_r(m, &q);
	struct vy_expr *cr = cos_r(m, &q);
	struct vy_expr *v = bind(m, sel(m, bit_set(m, cp(m, q.n), 1), cp(m, cr), cp(m, sr)));
	v = sel(m, bit_set(m, cp(m, q.n), 2), neg(m, cp(m, v)), cp(m, v));
	return finite_only(m, x, zero_passes(m, x, unit_clamp(m, v)));
}

struct vy_expr *vy__vm_cos(struct vy__vm *m, const struct vy_expr *x)
{
	struct quadrant q = reduce(m, x);
	struct vy_expr *sr = sin_r(m, &q);
	struct vy_expr *cr = cos_r(m, &q);
	struct vy_expr *v = bind(m, sel(m, bit_set(m, cp(m, q.n), 1), cp(m, sr), cp(m, cr)));
	struct vy_expr *flip = bit_set(m, add(m, cp(m, q.n), il(m, 1)), 2);
	v = sel(m, flip, neg(m, cp(m, v)), cp(m, v));
	return finite_only(m, x, unit_clamp(m, v));
}

struct vy_expr *vy__vm_tan(struct vy__vm *m, const struct vy_expr *x)
{
	struct quadrant q = reduce(m, x);
	struct vy_expr *t = bind(m,
		fma3(m, mul(m, cp(m, q.r), cp(m, q.z)), VY__VM_HORNER(m, tan_t, q.z), cp(m, q.r)));
	struct vy_expr *cot = divide(m, fl(m, -1.0f), cp(m, t));
	struct vy_expr *v = sel(m, bit_set(m, cp(m, q.n), 1), cot, cp(m, t));
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
