/*
 * Expansions of log, log2 and log10 (DESIGN.md §4.4; docs/semantics.md gives their domain and
 * error).
 *
 * x = 2^e * m with m in [sqrt(2)/2, sqrt(2)), read from the bits of x (a positive normal x is
 * 2^(E - 127) times its significand in [1, 2); every other x is answered by the special values at
 * the end). Then with f = m - 1 and s = f / (2 + f),
 *   log(1 + f) = f - (f^2/2 - s (f^2/2 + R(s^2))),   R(z) = z T(z),   2 atanh(s) = 2 s + s R,
 * where T is a minimax polynomial, so that the rounding errors of s and R land in a small
 * correction of f; and log x = e ln 2 + log(1 + f) with ln 2 in two parts (e ln2_hi is exact).
 * log2 divides log(1 + f) by ln 2 with 1/ln 2 in two parts and adds e last. log10 divides
 * log(1 + f) by ln 10 with 1/ln 10 in two parts, then adds e log10(2), log10(2) in two parts,
 * the small part first, so that one final fma rounds the sum once.
 *
 * Special values: log(+-0) = -inf, log of a negative number = NaN, log(+inf) = +inf, NaN stays NaN.
 */
#include "vmath_emit.h"

/* (2 atanh(s) / s - 2) / s^2 for s^2 in [0, 0.02944] (|s| <= (sqrt 2 - 1) / (sqrt 2 + 1)). */
static const float log_t[] = {0.666666687f, 0.400001228f, 0.285507977f, 0.23330994f};

#define LN2_HI 0.693147182f        /* 0x3F317218 */
#define LN2_LO -1.90465421e-09f    /* 0xB102E308 */
#define IVLN2_HI 1.44269502f       /* 0x3FB8AA3B: 1 / ln 2 */
#define IVLN2_LO 1.92596303e-08f   /* 0x32A57060 */
#define IVLN10_HI 0.434294492f     /* 0x3EDE5BD9: 1 / ln 10 */
#define IVLN10_LO -1.01030500e-08f /* 0xB22D91AF */
#define LG2_HI 0.30103001f         /* 0x3E9A209B: log10(2) */
#define LG2_LO -1.43209888e-08f    /* 0xB2760860 */

struct log_parts {
	struct vy_expr *ef; /* e as f32 */
	struct vy_expr *f;  /* m - 1, exact */
	struct vy_expr *t;  /* log(1 + f) - f */
};

static struct log_parts reduce(struct vy__vm *m, const struct vy_expr *x)
{
	struct log_parts out;
	struct vy_expr *mr = vy__vm_log_split(m, x, &out.ef);
	out.f = bind(m, sub(m, cp(m, mr), fl(m, 1.0f)));
	struct vy_expr *s = bind(m, divide(m, cp(m, out.f), add(m, cp(m, out.f), fl(m, 2.0f))));
	struct vy_expr *z = bind(m, mul(m, cp(m, s), cp(m, s)));
	struct vy_expr *hf = bind(m, mul(m, mul(m, cp(m, out.f), cp(m, out.f)), fl(m, 0.5f)));
	struct vy_expr *r = mul(m, cp(m, z), VY__VM_HORNER(m, log_t, z));
	out.t = bind(m, fma3(m, cp(m, s), add(m, cp(m, hf), r), neg(m, cp(m, hf))));
	return out;
}

static struct vy_expr *specials(struct vy__vm *m, const struct vy_expr *x, struct vy_expr *res)
{
	res = sel(m, ne(m, cp(m, x), cp(m, x)), cp(m, x), res);
	res = sel(m, eq(m, cp(m, x), fbits(m, VY__VM_INF)), fbits(m, VY__VM_INF), res);
	res = sel(m, lt(m, cp(m, x), fl(m, 0.0f)), fbits(m, VY__VM_NAN), res);
	return sel(m, eq(m, cp(m, x), fl(m, 0.0f)), fbits(m, VY__VM_NINF), res);
}

struct vy_expr *vy__vm_log(struct vy__vm *m, const struct vy_expr *x)
{
	struct log_parts l = reduce(m, x);
	struct vy_expr *low = fma3(m, cp(m, l.ef), fl(m, LN2_LO), cp(m, l.t));
	struct vy_expr *res = fma3(m, cp(m, l.ef), fl(m, LN2_HI), add(m, cp(m, l.f), low));
	return specials(m, x, res);
}

struct vy_expr *vy__vm_log2(struct vy__vm *m, const struct vy_expr *x)
{
	struct log_parts l = reduce(m, x);
	struct vy_expr *low =
		fma3(m, cp(m, l.f), fl(m, IVLN2_LO), mul(m, cp(m, l.t), fl(m, IVLN2_HI)));
	struct vy_expr *frac = fma3(m, cp(m, l.f), fl(m, IVLN2_HI), low);
	return specials(m, x, add(m, cp(m, l.ef), frac));
}

/*
 * log1p(x) = log(u) + c with u = 1 + x rounded and c = (x - (u - 1)) / u, the rounding error of
 * u relative to u: for |x| below 2^-24, u = 1 and the result is x itself. The special values
 * follow from u (u = 0 at x = -1, negative below), and +-0 stays itself.
 */
struct vy_expr *vy__vm_log1p(struct vy__vm *m, const struct vy_expr *x)
{
	struct vy_expr *u = bind(m, add(m, fl(m, 1.0f), cp(m, x)));
	struct vy_expr *c = divide(m, sub(m, cp(m, x), sub(m, cp(m, u), fl(m, 1.0f))), cp(m, u));
	struct log_parts l = reduce(m, u);
	struct vy_expr *low = fma3(m, cp(m, l.ef), fl(m, LN2_LO), add(m, cp(m, l.t), c));
	struct vy_expr *res = fma3(m, cp(m, l.ef), fl(m, LN2_HI), add(m, cp(m, l.f), low));
	res = specials(m, u, res);
	return sel(m, eq(m, cp(m, x), fl(m, 0.0f)), cp(m, x), res);
}

struct vy_expr *vy__vm_log10(struct vy__vm *m, const struct vy_expr *x)
{
	struct log_parts l = reduce(m, x);
	struct vy_expr *low =
		fma3(m, cp(m, l.f), fl(m, IVLN10_LO), mul(m, cp(m, l.t), fl(m, IVLN10_HI)));
	struct vy_expr *frac = fma3(m, cp(m, l.f), fl(m, IVLN10_HI), low);
	struct vy_expr *small = fma3(m, cp(m, l.ef), fl(m, LG2_LO), frac);
	return specials(m, x, fma3(m, cp(m, l.ef), fl(m, LG2_HI), small));
}
