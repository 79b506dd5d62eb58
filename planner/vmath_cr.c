/*
 * The correctly rounded exp, exp2, log and log2 (exp_cr, exp2_cr, log_cr, log2_cr; DESIGN.md
 * §4.4, docs/semantics.md §6.6). Each returns, for every f32 input, the f32 nearest the true
 * result (then the flush of §4.2), which is one answer on every backend and the answer of every
 * correctly rounded library.
 *
 * Each function evaluates its result as a pair of f32 h + l (about 48 significant bits) whose
 * relative error stays near 2^-49, then rounds it once. A rounding test tells the inputs whose
 * pair lies within 2^-42 of a rounding boundary (one input in about 100,000): only those enter
 * a branch, where the inputs on which the pair's rounding is not the true result's (listed by
 * the exhaustive command, `ulp_report --exhaustive --list-wrong`, and checked in high precision)
 * take their result from a table. The exhaustive ULP report then shows every one of the 2^32
 * results equal to the correctly rounded one (docs/semantics.md §6.6 has the run).
 *
 * exp2: x = n + r with n = round(x), r exact in [-1/2, 1/2]; 2^r = 1 + r P(r), P the Taylor
 * series of (2^r - 1) / r to degree 12 (the next term is below 2^-55): its terms from r^7 on in
 * f32, the seven before in pairs (each Horner step multiplies the pair by r exactly, with the
 * product's error from an fma, and adds the coefficient's pair by Fast2Sum). exp: t = x log2(e)
 * with log2(e) in three f32 parts (the two products of x by the first two exact as pairs), n =
 * round(t), r = t - n as a pair rh + rl; 2^(rh + rl) = 2^rh (1 + rl ln 2). Then 2^n exactly.
 *
 * log: x = 2^e m with m in [sqrt(1/2), sqrt(2)); s = (m - 1) / (m + 1) as a pair; log m =
 * 2 atanh s = 2s (1 + z/3 + z^2/5 + ...), z = s^2 as a pair, the series to z^9 (the next term is
 * below 2^-55) with the terms from z^5 on in f32 and the Horner steps before in pairs; then
 * e ln 2 with ln 2 in three parts, the first of 16 bits so that e times it is exact. log2: log m
 * times log2(e) as a pair, plus e.
 */
#include "vmath_emit.h"

/* ln(2)^k / k! for k = 1 ... 7 as pairs (high, low). */
static const float exp2_pairs[][2] = {
	{0.693147182f, -1.90465421e-09f},
	{0.240226507f, -2.2778894e-10f},
	{0.0555041097f, -1.04563336e-09f},
	{0.00961812865f, 4.57738042e-10f},
	{0.00133335579f, 2.74326777e-11f},
	{0.000154035297f, 7.06062639e-12f},
	{1.52527336e-05f, 1.57284247e-13f},
};
/* ln(2)^k / k! for k = 8 ... 13. */
static const float exp2_tail[] = {1.32154867e-06f, 1.01780863e-07f, 7.05491177e-09f,
	4.44553838e-10f, 2.56784368e-11f, 1.36914893e-12f};

/* 1 / (2k + 1) for k = 1 ... 4 as pairs. */
static const float atanh_pairs[][2] = {
	{0.333333343f, -9.93410776e-09f},
	{0.200000003f, -2.98023228e-09f},
	{0.142857149f, -6.386212e-09f},
	{0.111111112f, -8.27842295e-10f},
};
/* 1 / (2k + 1) for k = 5 ... 9. */
static const float atanh_tail[] = {
	0.0909090936f, 0.0769230798f, 0.0666666701f, 0.0588235296f, 0.0526315793f};

#define LOG2E_1 1.44269502f      /* 0x3FB8AA3B */
#define LOG2E_2 1.92596303e-08f  /* 0x32A57060 */
#define LOG2E_3 -4.23733949e-16f /* 0xA5F44418 */
#define LN2_1 0.693145752f       /* 0x3F317200: 16 significant bits */
#define LN2_2 1.42860677e-06f    /* 0x35BFBE8E */
#define LN2_3 5.49792315e-14f    /* 0x29779ABD */
#define LN2_HI 0.693147182f      /* 0x3F317218 */
#define ROUNDING_TEST 0x1p-42f   /* the width, relative, of the rounding test */

#define N_PAIRS(t) ((uint32_t)(sizeof(t) / sizeof((t)[0])))

struct pair {
	struct vy_expr *h, *l; /* leaves */
};

/* a * b exactly as a pair (the error of the product from an fma). */
static struct pair two_prod(struct vy__vm *m, const struct vy_expr *a, const struct vy_expr *b)
{
	struct pair p;
	p.h = bind(m, mul(m, cp(m, a), cp(m, b)));
	p.l = bind(m, fma3(m, cp(m, a), cp(m, b), neg(m, cp(m, p.h))));
	return p;
}

/* a + b exactly as a pair, whatever their magnitudes (TwoSum). */
static struct pair two_sum(struct vy__vm *m, const struct vy_expr *a, const struct vy_expr *b)
{
	struct pair p;
	p.h = bind(m, add(m, cp(m, a), cp(m, b)));
	struct vy_expr *bb = bind(m, sub(m, cp(m, p.h), cp(m, a)));
	struct vy_expr *ea = sub(m, cp(m, a), sub(m, cp(m, p.h), cp(m, bb)));
	p.l = bind(m, add(m, ea, sub(m, cp(m, b), cp(m, bb))));
	return p;
}

/*
 * One Horner step in pairs: c + v (H + L) for a coefficient pair c whose magnitude exceeds that
 * of the product. v is a pair (vl may be NULL for an exact f32 v), H + L the accumulator (L may
 * be NULL).
 */
static struct pair horner_step(struct vy__vm *m, const float c[2], const struct vy_expr *vh,
	const struct vy_expr *vl, const struct vy_expr *H, const struct vy_expr *L)
{
	struct pair p = two_prod(m, vh, H);
	struct vy_expr *low = cp(m, p.l);
	if (L) {
		low = fma3(m, cp(m, vh), cp(m, L), low);
	}
	if (vl) {
		low = fma3(m, cp(m, vl), cp(m, H), low);
	}
	low = bind(m, low);
	struct pair s;
	s.h = bind(m, add(m, fl(m, c[0]), cp(m, p.h)));
	struct vy_expr *e = sub(m, cp(m, p.h), sub(m, cp(m, s.h), fl(m, c[0])));
	s.l = bind(m, add(m, add(m, e, low), fl(m, c[1])));
	return s;
}

/* 2^r for an f32 leaf r in [-0.5, 0.5] (a little beyond is fine) as a pair near [0.7, 1.42]. */
static struct pair exp2_core(struct vy__vm *m, const struct vy_expr *r)
{
	struct pair acc = {bind(m, VY__VM_HORNER(m, exp2_tail, r)), NULL};
	for (uint32_t k = N_PAIRS(exp2_pairs); k-- > 0;) {
		acc = horner_step(m, exp2_pairs[k], r, NULL, acc.h, acc.l);
	}
	static const float one[2] = {1.0f, 0.0f};
	return horner_step(m, one, r, NULL, acc.h, acc.l);
}

/*
 * The rounding of a pair, h + l rounded once: writes to *ok whether every value within 2^-42 of
 * h + l (relative) rounds to the same f32.
 */
static struct vy_expr *round_pair(struct vy__vm *m, struct pair v, struct vy_expr **ok)
{
	struct vy_expr *eps = bind(m, mul(m, absv(m, cp(m, v.h)), fl(m, ROUNDING_TEST)));
	struct vy_expr *up = add(m, cp(m, v.h), add(m, cp(m, v.l), cp(m, eps)));
	struct vy_expr *down = add(m, cp(m, v.h), sub(m, cp(m, v.l), cp(m, eps)));
	*ok = bind(m, eq(m, up, down));
	return add(m, cp(m, v.h), cp(m, v.l));
}

/*
 * The table of the inputs whose pair rounds the wrong way, consulted only where the rounding
 * test failed: `res` (a tree) for every other input.
 */
static struct vy_expr *exceptions(struct vy__vm *m, const struct vy_expr *x, struct vy_expr *res,
	const struct vy_expr *ok, const uint32_t (*table)[2], uint32_t n)
{
	struct vy_expr *var = bind(m, res);
	struct vy_expr *xb = bind(m, vy__vm_bitcast(m, VY_TYPE_U32, cp(m, x)));
	struct vy_expr *unsure = bind(m, vy__vm_un(m, VY_UN_NOT, cp(m, ok)));
	uint32_t mark = vy__vm_branch_begin(m);
	struct vy_expr *r = cp(m, var);
	for (uint32_t i = 0; i < n; i++) {
		r = bind(m, sel(m, eq(m, cp(m, xb), ul(m, table[i][0])), fbits(m, table[i][1]), r));
	}
	const struct vy_expr *vars[1] = {var};
	struct vy_expr *values[1] = {r};
	struct vy_expr *after[1] = {NULL};
	vy__vm_branch_end(m, mark, unsure, vars, values, 1, after);
	return after[0];
}

static struct vy_expr *nan_passes(struct vy__vm *m, const struct vy_expr *x, struct vy_expr *res)
{
	return sel(m, ne(m, cp(m, x), cp(m, x)), cp(m, x), res);
}

/*
 * The inputs of each function whose pair rounds the wrong way, and their results (input bits,
 * result bits), written by `ulp_report --exhaustive --list-wrong`.
 */
static const uint32_t exp2_wrong[][2] = {
#include "vmath_cr_exp2.inc"
	{0, 0}, /* the end */
};
static const uint32_t exp_wrong[][2] = {
#include "vmath_cr_exp.inc"
	{0, 0}, /* the end */
};
static const uint32_t log2_wrong[][2] = {
#include "vmath_cr_log2.inc"
	{0, 0}, /* the end */
};
static const uint32_t log_wrong[][2] = {
#include "vmath_cr_log.inc"
	{0, 0}, /* the end */
};

#define N_WRONG(t) ((uint32_t)(sizeof(t) / sizeof((t)[0])) - 1)

/* 2^n (h + l) rounded, for a pair from exp2_core and n = nf (an f32 integer leaf). */
static struct vy_expr *exp_finish(struct vy__vm *m, const struct vy_expr *x, struct pair p,
	const struct vy_expr *nf, const uint32_t (*table)[2], uint32_t n)
{
	struct vy_expr *ok = NULL;
	struct vy_expr *u = round_pair(m, p, &ok);
	struct vy_expr *res = vy__vm_scale2(m, u, bind(m, to_i32(m, cp(m, nf))));
	return exceptions(m, x, nan_passes(m, x, res), ok, table, n);
}

struct vy_expr *vy__vm_exp2_cr(struct vy__vm *m, const struct vy_expr *x)
{
	struct vy_expr *xc = bind(m, vmin(m, vmax(m, cp(m, x), fl(m, -160.0f)), fl(m, 160.0f)));
	struct vy_expr *nf = bind(m, rnd(m, cp(m, xc)));
	struct vy_expr *r = bind(m, sub(m, cp(m, xc), cp(m, nf)));
	return exp_finish(m, x, exp2_core(m, r), nf, exp2_wrong, N_WRONG(exp2_wrong));
}

struct vy_expr *vy__vm_exp_cr(struct vy__vm *m, const struct vy_expr *x)
{
	struct vy_expr *xc = bind(m, vmin(m, vmax(m, cp(m, x), fl(m, -110.0f)), fl(m, 100.0f)));
	struct vy_expr *c1 = fl(m, LOG2E_1);
	struct pair a = two_prod(m, xc, c1);
	struct vy_expr *c2 = fl(m, LOG2E_2);
	struct pair b = two_prod(m, xc, c2);
	struct vy_expr *c = mul(m, cp(m, xc), fl(m, LOG2E_3));
	struct vy_expr *nf = bind(m, rnd(m, cp(m, a.h)));
	struct vy_expr *r0 = bind(m, sub(m, cp(m, a.h), cp(m, nf)));
	struct pair s1 = two_sum(m, a.l, b.h);
	struct pair r = two_sum(m, r0, s1.h);
	struct vy_expr *rl = add(m, cp(m, r.l), add(m, cp(m, s1.l), add(m, cp(m, b.l), c)));
	struct pair p = exp2_core(m, r.h);
	/* 2^(rh + rl) = 2^rh (1 + rl ln 2), |rl| below 2^-24 */
	p.l = bind(m, fma3(m, cp(m, p.h), mul(m, rl, fl(m, LN2_HI)), cp(m, p.l)));
	return exp_finish(m, x, p, nf, exp_wrong, N_WRONG(exp_wrong));
}

/* log m for m = x / 2^e in [sqrt(1/2), sqrt(2)) as a pair; e as f32 in *ef. */
static struct pair log_core(struct vy__vm *m, const struct vy_expr *x, struct vy_expr **ef)
{
	struct vy_expr *mm = vy__vm_log_split(m, x, ef);
	/* s = f / (dh + dl): f = m - 1 exact, 1 + m = dh + dl exactly */
	struct vy_expr *f = bind(m, sub(m, cp(m, mm), fl(m, 1.0f)));
	struct vy_expr *dh = bind(m, add(m, fl(m, 1.0f), cp(m, mm)));
	struct vy_expr *dl = sub(m, cp(m, mm), sub(m, cp(m, dh), fl(m, 1.0f)));
	struct pair s;
	s.h = bind(m, divide(m, cp(m, f), cp(m, dh)));
	struct vy_expr *rem =
		sub(m, fma3(m, neg(m, cp(m, s.h)), cp(m, dh), cp(m, f)), mul(m, cp(m, s.h), dl));
	s.l = bind(m, divide(m, rem, cp(m, dh)));
	/* z = s^2 as a pair */
	struct pair z = two_prod(m, s.h, s.h);
	z.l = bind(m, fma3(m, mul(m, cp(m, s.h), fl(m, 2.0f)), cp(m, s.l), cp(m, z.l)));
	struct pair q = {bind(m, VY__VM_HORNER(m, atanh_tail, z.h)), NULL};
	for (uint32_t k = N_PAIRS(atanh_pairs); k-- > 0;) {
		q = horner_step(m, atanh_pairs[k], z.h, z.l, q.h, q.l);
	}
	static const float one[2] = {1.0f, 0.0f};
	q = horner_step(m, one, z.h, z.l, q.h, q.l);
	/* 2 s q */
	struct pair p = two_prod(m, s.h, q.h);
	struct vy_expr *pl =
		fma3(m, cp(m, s.h), cp(m, q.l), fma3(m, cp(m, s.l), cp(m, q.h), cp(m, p.l)));
	struct pair out;
	out.h = bind(m, mul(m, cp(m, p.h), fl(m, 2.0f)));
	out.l = bind(m, mul(m, pl, fl(m, 2.0f)));
	return out;
}

static struct vy_expr *log_specials(struct vy__vm *m, const struct vy_expr *x, struct vy_expr *res)
{
	res = nan_passes(m, x, res);
	res = sel(m, eq(m, cp(m, x), fbits(m, VY__VM_INF)), fbits(m, VY__VM_INF), res);
	res = sel(m, lt(m, cp(m, x), fl(m, 0.0f)), fbits(m, VY__VM_NAN), res);
	return sel(m, eq(m, cp(m, x), fl(m, 0.0f)), fbits(m, VY__VM_NINF), res);
}

static struct vy_expr *log_finish(struct vy__vm *m, const struct vy_expr *x, struct pair v,
	const uint32_t (*table)[2], uint32_t n)
{
	struct vy_expr *ok = NULL;
	struct vy_expr *u = round_pair(m, v, &ok);
	return exceptions(m, x, log_specials(m, x, u), ok, table, n);
}

struct vy_expr *vy__vm_log_cr(struct vy__vm *m, const struct vy_expr *x)
{
	struct vy_expr *ef = NULL;
	struct pair lm = log_core(m, x, &ef);
	/* e ln 2 + log m: e LN2_1 exact, e LN2_2 exact as a pair */
	struct vy_expr *e1 = bind(m, mul(m, cp(m, ef), fl(m, LN2_1)));
	struct pair a = two_sum(m, e1, lm.h);
	struct vy_expr *c2 = fl(m, LN2_2);
	struct pair b2 = two_prod(m, ef, c2);
	struct pair b = two_sum(m, a.h, b2.h);
	struct vy_expr *small = add(m, fma3(m, cp(m, ef), fl(m, LN2_3), cp(m, lm.l)), cp(m, b2.l));
	struct pair v = {b.h, bind(m, add(m, small, add(m, cp(m, a.l), cp(m, b.l))))};
	return log_finish(m, x, v, log_wrong, N_WRONG(log_wrong));
}

struct vy_expr *vy__vm_log2_cr(struct vy__vm *m, const struct vy_expr *x)
{
	struct vy_expr *ef = NULL;
	struct pair lm = log_core(m, x, &ef);
	/* log m times log2(e) as a pair */
	struct vy_expr *c1 = fl(m, LOG2E_1);
	struct pair g = two_prod(m, lm.h, c1);
	struct vy_expr *gl = fma3(
		m, cp(m, lm.h), fl(m, LOG2E_2), fma3(m, cp(m, lm.l), fl(m, LOG2E_1), cp(m, g.l)));
	struct pair b = two_sum(m, ef, g.h);
	struct pair v = {b.h, bind(m, add(m, cp(m, b.l), gl))};
	return log_finish(m, x, v, log2_wrong, N_WRONG(log2_wrong));
}
