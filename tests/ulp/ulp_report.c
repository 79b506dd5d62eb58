/*
 * The ULP report of DESIGN.md §4.4: for div, sqrt, inverse_sqrt, reciprocal and every
 * transcendental function, run a large sample of its documented domain through the reference
 * backend (which applies the math-library lowering of planner/vmath.h) and compare each result
 * with a long double libm computation rounded once to f32. Prints one table row per operation and
 * exits 1 when an operation is less accurate than its contract: div, sqrt and reciprocal must be
 * exact (0 ULP), inverse_sqrt within 2 ULP, the transcendental functions within 4 ULP.
 *
 * Reference results follow the canonical f32 of DESIGN.md §4.2: a NaN is 0x7FC00000 and a true
 * result in the subnormal range becomes the zero of its sign. The distance between two results
 * counts the canonical f32 values between them, so there is no subnormal step anywhere: the
 * smallest normal number is one step from zero, and -0 and +0 are one step apart (a wrong zero
 * sign counts). A NaN where the reference is a number (or the reverse) fails outright.
 *
 * Samples: every special value of the operation, then half of the rest spread evenly over the
 * bit patterns of the domain (every binade gets its share) and half uniform over its values, from
 * a fixed seed, so the report is reproducible. VYRED_ULP_SAMPLES sets the number per operation
 * (default 1048576), VYRED_ULP_SEED the seed.
 */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "err.h"
#include "ir.h"
#include "reference.h"

#define DEFAULT_SAMPLES (UINT32_C(1) << 20)
#define NOT_COMPARABLE INT64_MAX

enum shape { UNARY, DIV, SQRT };

struct op {
	const char *name;
	enum shape shape;
	enum vy_unop unop; /* for UNARY */
	long double (*ref)(long double x);
	float lo, hi; /* the range sampled (the specials lie outside it too) */
	bool bounded; /* the domain is [lo, hi]: finite inputs outside it are not measured */
	const char *domain;
	int64_t limit; /* worst ULP allowed */
};

static long double ref_inverse_sqrt(long double x)
{
	return 1.0L / sqrtl(x);
}

static long double ref_reciprocal(long double x)
{
	return 1.0L / x;
}

static const struct op ops[] = {
	{"div", DIV, 0, NULL, -FLT_MAX, FLT_MAX, false, "all", 0},
	{"sqrt", SQRT, 0, sqrtl, 0.0f, FLT_MAX, false, "all", 0},
	{"reciprocal", UNARY, VY_UN_RECIPROCAL, ref_reciprocal, -FLT_MAX, FLT_MAX, false, "all", 0},
	{"inverse_sqrt", UNARY, VY_UN_INVERSE_SQRT, ref_inverse_sqrt, 0.0f, FLT_MAX, false, "all",
		2},
	{"exp", UNARY, VY_UN_EXP, expl, -104.0f, 89.0f, false, "all", 4},
	{"exp2", UNARY, VY_UN_EXP2, exp2l, -150.0f, 128.0f, false, "all", 4},
	{"log", UNARY, VY_UN_LOG, logl, 0.0f, FLT_MAX, false, "all", 4},
	{"log2", UNARY, VY_UN_LOG2, log2l, 0.0f, FLT_MAX, false, "all", 4},
	{"sin", UNARY, VY_UN_SIN, sinl, -0x1p22f, 0x1p22f, true, "|x| <= 2^22", 4},
	{"cos", UNARY, VY_UN_COS, cosl, -0x1p22f, 0x1p22f, true, "|x| <= 2^22", 4},
	{"tan", UNARY, VY_UN_TAN, tanl, -0x1p22f, 0x1p22f, true, "|x| <= 2^22", 4},
	{"asin", UNARY, VY_UN_ASIN, asinl, -1.0f, 1.0f, false, "all", 4},
	{"acos", UNARY, VY_UN_ACOS, acosl, -1.0f, 1.0f, false, "all", 4},
	{"atan", UNARY, VY_UN_ATAN, atanl, -FLT_MAX, FLT_MAX, false, "all", 4},
	{"sinh", UNARY, VY_UN_SINH, sinhl, -90.0f, 90.0f, false, "all", 4},
	{"cosh", UNARY, VY_UN_COSH, coshl, -90.0f, 90.0f, false, "all", 4},
	{"tanh", UNARY, VY_UN_TANH, tanhl, -FLT_MAX, FLT_MAX, false, "all", 4},
};

/* Inputs every operation sees besides its samples (outside its domain too). */
static const uint32_t specials[] = {
	0x00000000,
	0x80000000,
	0x7F800000,
	0xFF800000,
	0x7FC00000,
	0x3F800000,
	0xBF800000,
	0x7F7FFFFF,
	0xFF7FFFFF,
	0x00800000,
	0x80800000,
	0x00000001,
	0x807FFFFF,
	0x3F000000,
	0xBF000000,
	0x40000000,
	0xC0000000,
	0x3FC90FDB,
	0xBFC90FDB,
	0x40490FDB,
	0x42B17217,
	0x42B17218,
	0x42B2D4FC,
	0x42B2D4FD,
	0xC2CE8ED0,
	0xC2CE8ED1,
	0xC2AEAC4F,
	0xC2AEAC50,
	0x43000000,
	0x42FE0000,
	0xC3150000,
	0xC3160000,
	0xC2FC0000,
	0x3F3504F3,
	0x3FB504F3,
	0x3F7FFFFF,
	0x3F800001,
	0x33800000,
	0xB3800000,
	0x39800000,
	0x3ED413CD,
	0x47C35000,
	0xC7C35000,
	0x4A800000,
	0xCA800000,
	0x4B000000,
	0x4EFFFFFF,
};

static float f32_of(uint32_t bits)
{
	float f;
	memcpy(&f, &bits, sizeof(f));
	return f;
}

static uint32_t bits_of(float f)
{
	uint32_t bits;
	memcpy(&bits, &f, sizeof(bits));
	return bits;
}

static uint32_t canon(uint32_t bits)
{
	if ((bits & 0x7F800000u) == 0x7F800000u && (bits & 0x007FFFFFu) != 0) {
		return 0x7FC00000u;
	}
	if ((bits & 0x7F800000u) == 0) {
		return bits & 0x80000000u;
	}
	return bits;
}

static bool is_nan(uint32_t bits)
{
	return (bits & 0x7FFFFFFFu) > 0x7F800000u;
}

/* Position of a canonical f32 on the line of canonical values: ..., -0 = -1, +0 = 0, ... */
static int64_t ordinal(uint32_t bits)
{
	uint32_t mag = bits & 0x7FFFFFFFu;
	int64_t o = mag == 0 ? 0 : (int64_t)mag - 0x00800000 + 1;
	return (bits & 0x80000000u) ? -o - 1 : o;
}

static int64_t ulp_distance(uint32_t got, uint32_t want)
{
	if (is_nan(got) || is_nan(want)) {
		return is_nan(got) && is_nan(want) ? 0 : NOT_COMPARABLE;
	}
	int64_t d = ordinal(got) - ordinal(want);
	return d < 0 ? -d : d;
}

/* The canonical f32 of a long double: one rounding, then the flush of §4.2. */
static uint32_t round_ref(long double v)
{
	return canon(bits_of((float)v));
}

static uint64_t next_random(uint64_t *state)
{
	uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* The f32 at a position of the canonical line (inverse of ordinal for finite values). */
static float at_ordinal(int64_t o)
{
	bool negative = o < 0;
	if (negative) {
		o = -o - 1;
	}
	uint32_t mag = o == 0 ? 0 : (uint32_t)(o + 0x00800000 - 1);
	return f32_of(mag | (negative ? 0x80000000u : 0));
}

/* A sample of [lo, hi]: even over bit patterns for even `i`, uniform over values for odd `i`. */
static float sample(uint64_t *state, float lo, float hi, uint32_t i)
{
	uint64_t r = next_random(state);
	if (i % 2 == 0) {
		int64_t a = ordinal(canon(bits_of(lo)));
		int64_t b = ordinal(canon(bits_of(hi)));
		return at_ordinal(a + (int64_t)(r % (uint64_t)(b - a + 1)));
	}
	double u = (double)(r >> 11) * 0x1p-53;
	float x = (float)((double)lo + ((double)hi - (double)lo) * u);
	return x > hi ? hi : x;
}

static struct vy_program *build(const struct op *op, uint32_t n)
{
	struct vy_program *p = vy_program_create(op->name, 64, 1, 1);
	vy_program_add_buffer(p, "a", 0, VY_ACCESS_READ_ONLY, VY_TYPE_F32, n);
	struct vy_expr *a = vy_ir_load(p, "a", vy_ir_gid(p, 0));
	struct vy_expr *value;
	if (op->shape == DIV) {
		vy_program_add_buffer(p, "b", 1, VY_ACCESS_READ_ONLY, VY_TYPE_F32, n);
		value = vy_ir_binary(p, VY_BIN_DIV, a, vy_ir_load(p, "b", vy_ir_gid(p, 0)));
	} else {
		value = vy_ir_unary(p, op->shape == SQRT ? VY_UN_SQRT : op->unop, a);
	}
	vy_program_add_buffer(p, "y", 2, VY_ACCESS_WRITE_ONLY, VY_TYPE_F32, n);
	vy_program_set_entry(p, vy_ir_seq(p, vy_ir_store(p, "y", vy_ir_gid(p, 0), value), NULL));
	return p;
}

struct result {
	uint32_t samples;
	int64_t worst;
	uint32_t at_a, at_b, got, want;
};

static uint32_t reference(const struct op *op, uint32_t a, uint32_t b)
{
	if (op->shape == DIV) {
		/* A double quotient of two floats rounds to f32 without a double-rounding error. */
		return round_ref((long double)((double)f32_of(a) / (double)f32_of(b)));
	}
	return round_ref(op->ref((long double)f32_of(a)));
}

static int run_op(struct vy_backend *backend, const struct op *op, uint32_t n, uint64_t seed,
	struct result *res)
{
	size_t n_specials = sizeof(specials) / sizeof(specials[0]);
	uint32_t total = n + (uint32_t)(n_specials * (op->shape == DIV ? n_specials : 1));
	float *a = malloc((size_t)total * sizeof(float));
	float *b = malloc((size_t)total * sizeof(float));
	if (!a || !b) {
		fprintf(stderr, "ulp_report: out of memory\n");
		exit(2);
	}
	uint32_t k = 0;
	for (size_t i = 0; i < n_specials; i++) {
		if (op->shape == DIV) {
			for (size_t j = 0; j < n_specials; j++) {
				a[k] = f32_of(specials[i]);
				b[k++] = f32_of(specials[j]);
			}
		} else {
			a[k] = f32_of(specials[i]);
			b[k++] = 1.0f;
		}
	}
	uint64_t state = seed;
	for (uint32_t i = 0; k < total; i++) {
		a[k] = sample(&state, op->lo, op->hi, i);
		b[k++] = sample(&state, op->lo, op->hi, i);
	}

	struct vy_program *p = build(op, total);
	struct vy_bytes inputs[2] = {
		{(const uint8_t *)a, (size_t)total * sizeof(float)},
		{(const uint8_t *)b, (size_t)total * sizeof(float)},
	};
	struct vy_outputs outputs;
	vy_outputs_init(&outputs);
	struct vy_err err = {0};
	int rc = vy_backend_dispatch(
		backend, p, inputs, op->shape == DIV ? 2 : 1, NULL, &outputs, &err);
	if (rc == 0 && (outputs.len != 1 || outputs.items[0].len != (size_t)total * 4)) {
		rc = vy_err_set(&err, VY_E_INTERNAL, NULL, "check the reference backend",
			"expected one output of %u floats", total);
	}
	if (rc) {
		char buf[1024];
		fprintf(stderr, "ulp_report: %s: %s\n", op->name,
			vy_err_format(&err, buf, sizeof(buf)));
	} else {
		res->samples = 0;
		res->worst = -1;
		for (uint32_t i = 0; i < total; i++) {
			uint32_t got;
			memcpy(&got, outputs.items[0].data + (size_t)i * 4, 4);
			uint32_t ia = canon(bits_of(a[i]));
			uint32_t ib = canon(bits_of(b[i]));
			uint32_t want = reference(op, ia, ib);
			float x = f32_of(ia);
			if (op->bounded && isfinite(x) && (x < op->lo || x > op->hi)) {
				continue;
			}
			res->samples++;
			int64_t d = ulp_distance(got, want);
			if (d > res->worst) {
				*res = (struct result){res->samples, d, ia, ib, got, want};
			}
		}
	}
	vy_outputs_finish(&outputs);
	vy_program_destroy(p);
	free(a);
	free(b);
	return rc;
}

static uint64_t env_u64(const char *name, uint64_t fallback)
{
	const char *s = getenv(name);
	if (!s || !*s) {
		return fallback;
	}
	char *end;
	unsigned long long v = strtoull(s, &end, 0);
	if (*end || v == 0) {
		fprintf(stderr, "ulp_report: ignoring %s=%s (not a positive number)\n", name, s);
		return fallback;
	}
	return v;
}

int main(void)
{
	uint64_t n = env_u64("VYRED_ULP_SAMPLES", DEFAULT_SAMPLES);
	if (n > (UINT64_C(1) << 28)) {
		n = UINT64_C(1) << 28;
	}
	uint64_t seed = env_u64("VYRED_ULP_SEED", UINT64_C(0x5EED0F1EA7));
	struct vy_backend *backend = NULL;
	struct vy_err err = {0};
	if (vy_reference_backend_create(NULL, &backend, &err)) {
		char buf[1024];
		fprintf(stderr, "ulp_report: %s\n", vy_err_format(&err, buf, sizeof(buf)));
		return 2;
	}
	printf("%-12s  %-11s  %-21s  %9s  %4s  %-29s  %-15s  %-15s  %s\n", "op", "domain",
		"sampled", "samples", "ulp", "worst input", "result", "reference", "status");
	int failed = 0;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		const struct op *op = &ops[i];
		struct result r = {0};
		if (run_op(backend, op, (uint32_t)n, seed + i, &r)) {
			failed++;
			continue;
		}
		char input[64] = "-";
		if (r.worst == 0) {
			/* Exact everywhere: no input to single out. */
		} else if (op->shape == DIV) {
			snprintf(input, sizeof(input), "%.8g / %.8g", f32_of(r.at_a),
				f32_of(r.at_b));
		} else {
			snprintf(input, sizeof(input), "%.9g", f32_of(r.at_a));
		}
		bool ok = r.worst <= op->limit;
		char ulp[24];
		if (r.worst == NOT_COMPARABLE) {
			snprintf(ulp, sizeof(ulp), "nan");
		} else {
			snprintf(ulp, sizeof(ulp), "%lld", (long long)r.worst);
		}
		char range[48];
		snprintf(range, sizeof(range), "[%.3g, %.3g]", op->lo, op->hi);
		printf("%-12s  %-11s  %-21s  %9llu  %4s  %-29s  %-15.9g  %-15.9g  %s (limit "
		       "%lld)\n",
			op->name, op->domain, range, (unsigned long long)r.samples, ulp, input,
			f32_of(r.got), f32_of(r.want), ok ? "ok" : "FAIL", (long long)op->limit);
		failed += !ok;
	}
	vy_backend_destroy(backend);
	if (failed) {
		printf("ulp_report: %d operation(s) outside their contract\n", failed);
		return 1;
	}
	return 0;
}
