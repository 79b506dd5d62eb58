/*
 * Expansions of exp, exp2, exp10 and the hyperbolic functions (DESIGN.md §4.4; docs/semantics.md
 * gives each one's domain and measured error).
 *
 * exp(x) = 2^n * e^r with n = round(x / ln 2) and r = x - n ln 2 (|r| <= ln 2 / 2 plus a rounding),
 * computed by Cody-Waite reduction with ln 2 in two parts; the first fma is exact because x and
 * n * ln2_hi share their low-order bits. e^r = 1 + r q(r) with q a minimax polynomial, and 2^n is
 * applied by vy__vm_scale2. exp2 takes n = round(x) and r = x - n (exact). exp10 takes
 * n = round(x log2(10)) and r = x - n log10(2), log10(2) in two parts whose high part has 16
 * significant bits, so that n times it and the first subtraction are exact (|n| < 2^8); then
 * 10^r = 1 + r q(r). The argument is clamped
 * first so that n stays within what the scaling handles: beyond the clamp the result is infinity
 * or zero anyway. The clamp loses a NaN (min and max ignore NaN operands), so each function ends
 * with a NaN select.
 *
 * sinh and cosh use e^|x| / 2 (scaled inside the exponential so that it overflows exactly where
 * the function does); sinh switches to an odd polynomial below |x| = 1, where the difference
 * e^x/2 - e^-x/2 would cancel. tanh(x) = 1 - 2 / (e^2|x| + 1) above |x| = 0.625 and an odd
 * polynomial below it.
 *
 * Coefficients come from tools/vmath_coeffs.py (minimax relative error, rounded to f32).
 */
#include "vmath_emit.h"

/* (e^r - 1) / r on [-0.3501, 0.3501], degree 5. */
static const float exp_q[] = {
	1.0f, 0.49999997f, 0.166665003f, 0.0416671559f, 0.00836978666f, 0.00138888718f};
/* (10^r - 1) / r on [-0.15202, 0.15202], degree 6. */
static const float exp10_q[] = {2.30258512f, 2.650949f, 2.03467846f, 1.17124605f, 0.539387643f,
	0.207788184f, 0.0680892989f};
/* (2^r - 1) / r on [-0.5, 0.5], degree 5. */
static const float exp2_q[] = {
	0.693147182f, 0.240226492f, 0.0555035733f, 0.00961823761f, 0.00133907353f, 0.000154035122f};
/* (sinh(x) / x - 1) / x^2 for x^2 in [0, 1], degree 4. */
static const float sinh_h[] = {
	0.166666672f, 0.00833333377f, 0.000198412818f, 2.75537877e-06f, 2.54557868e-08f};
/* (tanh(x) / x - 1) / x^2 for x^2 in [0, 0.390625], degree 6. */
static const float tanh_k[] = {-0.333333343f, 0.133333325f, -0.0539676398f, 0.0218598992f,
	-0.00879102107f, 0.00330628525f, -0.000862248999f};

#define LOG2E 1.44269502f
#define LN2_HI 0.693147182f     /* 0x3F317218 */
#define LN2_LO -1.90465421e-09f /* 0xB102E308: ln 2 - LN2_HI */
#define TANH_POLY_MAX 0.625f
#define LOG2_10 3.32192802f     /* 0x40549A78 */
#define LG2_HI 0.30103302f      /* 0x3E9A2100: log10(2), 16 significant bits */
#define LG2_LO -3.02435546e-06f /* 0xB64AF608: log10(2) - LG2_HI */

static struct vy_expr *nan_passes(struct vy__vm *m, const struct vy_expr *x, struct vy_expr *res)
{
	return sel(m, ne(m, cp(m, x), cp(m, x)), cp(m, x), res);
}

/* The reduction of exp: x clamped to [lo, hi], n = round(x / ln 2) in *nf, r = x - n ln 2. */
static struct vy_expr *exp_reduce(
	struct vy__vm *m, const struct vy_expr *x, float lo, float hi, struct vy_expr **nf)
{
	struct vy_expr *xc = bind(m, vmin(m, vmax(m, cp(m, x), fl(m, lo)), fl(m, hi)));
	*nf = bind(m, rnd(m, mul(m, cp(m, xc), fl(m, LOG2E))));
	struct vy_expr *r1 = bind(m, fma3(m, cp(m, *nf), fl(m, -LN2_HI), cp(m, xc)));
	return bind(m, fma3(m, cp(m, *nf), fl(m, -LN2_LO), cp(m, r1)));
}

struct vy_expr *vy__vm_exp_scaled(struct vy__vm *m, const struct vy_expr *x, int32_t k)
{
	struct vy_expr *nf = NULL;
	struct vy_expr *r = exp_reduce(m, x, -110.0f, 100.0f, &nf);
	struct vy_expr *p = fma3(m, VY__VM_HORNER(m, exp_q, r), cp(m, r), fl(m, 1.0f));
	struct vy_expr *n = to_i32(m, cp(m, nf));
	if (k != 0) {
		n = add(m, n, il(m, k));
	}
	return vy__vm_scale2(m, p, bind(m, n));
}

struct vy_expr *vy__vm_exp(struct vy__vm *m, const struct vy_expr *x)
{
	return nan_passes(m, x, vy__vm_exp_scaled(m, x, 0));
}

struct vy_expr *vy__vm_exp2(struct vy__vm *m, const struct vy_expr *x)
{
	struct vy_expr *xc = bind(m, vmin(m, vmax(m, cp(m, x), fl(m, -160.0f)), fl(m, 160.0f)));
	struct vy_expr *nf = bind(m, rnd(m, cp(m, xc)));
	struct vy_expr *r = bind(m, sub(m, cp(m, xc), cp(m, nf)));
	struct vy_expr *p = fma3(m, VY__VM_HORNER(m, exp2_q, r), cp(m, r), fl(m, 1.0f));
	struct vy_expr *n = bind(m, to_i32(m, cp(m, nf)));
	return nan_passes(m, x, vy__vm_scale2(m, p, n));
}

struct vy_expr *vy__vm_exp2_pair(
	struct vy__vm *m, const struct vy_expr *hi, const struct vy_expr *lo)
{
	struct vy_expr *xc = bind(m, vmin(m, vmax(m, cp(m, hi), fl(m, -160.0f)), fl(m, 160.0f)));
	struct vy_expr *nf = bind(m, rnd(m, cp(m, xc)));
	/* past the clamp the result is infinity or zero whatever the low part says */
	struct vy_expr *low =
		sel(m, lt(m, absv(m, cp(m, hi)), fl(m, 160.0f)), cp(m, lo), fl(m, 0.0f));
	struct vy_expr *r = bind(m, add(m, sub(m, cp(m, xc), cp(m, nf)), low));
	struct vy_expr *p = fma3(m, VY__VM_HORNER(m, exp2_q, r), cp(m, r), fl(m, 1.0f));
	struct vy_expr *n = bind(m, to_i32(m, cp(m, nf)));
	return vy__vm_scale2(m, p, n);
}

struct vy_expr *vy__vm_exp10(struct vy__vm *m, const struct vy_expr *x)
{
	/* Beyond +-48, 10^x is infinity or zero in f32; n stays within [-160, 160]. */
	struct vy_expr *xc = bind(m, vmin(m, vmax(m, cp(m, x), fl(m, -48.0f)), fl(m, 48.0f)));
	struct vy_expr *nf = bind(m, rnd(m, mul(m, cp(m, xc), fl(m, LOG2_10))));
	struct vy_expr *r1 = bind(m, fma3(m, cp(m, nf), fl(m, -LG2_HI), cp(m, xc)));
	struct vy_expr *r = bind(m, fma3(m, cp(m, nf), fl(m, -LG2_LO), cp(m, r1)));
	struct vy_expr *p = fma3(m, VY__VM_HORNER(m, exp10_q, r), cp(m, r), fl(m, 1.0f));
	struct vy_expr *n = bind(m, to_i32(m, cp(m, nf)));
	return nan_passes(m, x, vy__vm_scale2(m, p, n));
}

/*
 * expm1(x) = e^x - 1 = 2^n (t + (1 - 2^-n)) with t = e^r - 1 = r Q(r) from the reduction of exp,
 * evaluated as r + r^2 (Q(r) - 1) / r:
 * for n = 0 that is t itself, accurate however small x is, and for 0 < |n| <= 24 the constant
 * 1 - 2^-n is exact, so one addition rounds. Beyond, 2^n (1 + t) - 1. Below x = -18 the result is
 * -1 (e^x < 2^-25), above 90 infinity.
 */
struct vy_expr *vy__vm_expm1(struct vy__vm *m, const struct vy_expr *x)
{
	struct vy_expr *nf = NULL;
	struct vy_expr *r = exp_reduce(m, x, -18.0f, 90.0f, &nf);
	/* r + r^2 (Q(r) - 1) / r: r itself exact, the rounding errors in the small correction. */
	uint32_t nq = sizeof(exp_q) / sizeof(exp_q[0]) - 1;
	struct vy_expr *t = bind(m,
		fma3(m, mul(m, cp(m, r), cp(m, r)), vy__vm_horner(m, exp_q + 1, nq, r), cp(m, r)));
	struct vy_expr *n = bind(m, to_i32(m, cp(m, nf)));
	struct vy_expr *u =
		sub(m, fl(m, 1.0f), vy__vm_scale2(m, fl(m, 1.0f), bind(m, neg(m, cp(m, n)))));
	struct vy_expr *mid = vy__vm_scale2(m, add(m, cp(m, t), u), n);
	struct vy_expr *far =
		sub(m, vy__vm_scale2(m, add(m, fl(m, 1.0f), cp(m, t)), n), fl(m, 1.0f));
	struct vy_expr *near = le(m, absv(m, cp(m, n)), il(m, 24));
	struct vy_expr *res = sel(m, near, mid, far);
	/* -0 stays -0 (t + 0 would give +0). */
	res = sel(m, eq(m, cp(m, x), fl(m, 0.0f)), cp(m, x), res);
	return nan_passes(m, x, res);
}

/* x + x^3 c(x^2): odd polynomials whose correction term is small against x. */
static struct vy_expr *odd_poly(
	struct vy__vm *m, const struct vy_expr *x, const float *c, uint32_t n)
{
	struct vy_expr *z = bind(m, mul(m, cp(m, x), cp(m, x)));
	return fma3(m, mul(m, cp(m, x), cp(m, z)), vy__vm_horner(m, c, n, z), cp(m, x));
}

static struct vy_expr *with_sign_of(
	struct vy__vm *m, const struct vy_expr *x, const struct vy_expr *v)
{
	return sel(m, lt(m, cp(m, x), fl(m, 0.0f)), neg(m, cp(m, v)), cp(m, v));
}

struct vy_expr *vy__vm_sinh(struct vy__vm *m, const struct vy_expr *x)
{
	struct vy_expr *a = bind(m, absv(m, cp(m, x)));
	struct vy_expr *small = odd_poly(m, x, sinh_h, sizeof(sinh_h) / sizeof(sinh_h[0]));
	struct vy_expr *h = bind(m, vy__vm_exp_scaled(m, a, -1));
	struct vy_expr *big = bind(m, sub(m, cp(m, h), divide(m, fl(m, 0.25f), cp(m, h))));
	struct vy_expr *res = sel(m, lt(m, cp(m, a), fl(m, 1.0f)), small, with_sign_of(m, x, big));
	return nan_passes(m, x, res);
}

struct vy_expr *vy__vm_cosh(struct vy__vm *m, const struct vy_expr *x)
{
	struct vy_expr *a = bind(m, absv(m, cp(m, x)));
	struct vy_expr *h = bind(m, vy__vm_exp_scaled(m, a, -1));
	return nan_passes(m, x, add(m, cp(m, h), divide(m, fl(m, 0.25f), cp(m, h))));
}

struct vy_expr *vy__vm_tanh(struct vy__vm *m, const struct vy_expr *x)
{
	struct vy_expr *a = bind(m, absv(m, cp(m, x)));
	struct vy_expr *small = odd_poly(m, x, tanh_k, sizeof(tanh_k) / sizeof(tanh_k[0]));
	struct vy_expr *a2 = bind(m, mul(m, cp(m, a), fl(m, 2.0f)));
	struct vy_expr *t = vy__vm_exp_scaled(m, a2, 0);
	struct vy_expr *big =
		bind(m, sub(m, fl(m, 1.0f), divide(m, fl(m, 2.0f), add(m, t, fl(m, 1.0f)))));
	struct vy_expr *res =
		sel(m, lt(m, cp(m, a), fl(m, TANH_POLY_MAX)), small, with_sign_of(m, x, big));
	/* The polynomial's negative correction would turn -0 into +0. */
	res = sel(m, eq(m, cp(m, x), fl(m, 0.0f)), cp(m, x), res);
	return nan_passes(m, x, res);
}
