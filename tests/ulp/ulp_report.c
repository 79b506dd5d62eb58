/*
 * The ULP report of DESIGN.md §4.4: for div, sqrt, inverse_sqrt, reciprocal and every
 * transcendental function, run inputs of its domain through the reference backend (which applies
 * the math-library lowering of planner/vmath.h) and compare each result with a long double libm
 * computation rounded once to f32. Prints one table row per operation and exits 1 when an
 * operation exceeds its bound, the worst error measured over all 2^32 inputs and documented in
 * docs/semantics.md §6.2: div, sqrt and reciprocal exact (0 ULP) and cbrt correctly rounded
 * (0 ULP), exp_cr, exp2_cr, log_cr and log2_cr correctly rounded (0 ULP, every result
 * exact), tan, asin, atan and sinh 2 ULP, every other function 1 ULP (hypot and atan2, of two
 * operands, pow, erf and erfc included). hypot also fails when fewer than 99.99% of its results
 * are correctly rounded, atan2, erf and erfc below 99.9%, pow below 97%, tan below 95%.
 *
 * Reference results follow the canonical f32 of DESIGN.md §4.2: a NaN is 0x7FC00000 and a true
 * result in the subnormal range becomes the zero of its sign. The distance between two results
 * counts the canonical f32 values between them, so there is no subnormal step anywhere: the
 * smallest normal number is one step from zero, and -0 and +0 are one step apart (a wrong zero
 * sign counts). NaNs are compared by their bits: where the reference is NaN the result must be
 * exactly 0x7FC00000; a NaN where the reference is a number (or the reverse), any other NaN, and
 * any result that is not canonical (a subnormal) fail outright.
 *
 *   ulp_report                       the sample below; what CI runs
 *   ulp_report --exhaustive          every one of the 2^32 inputs of each unary operation and
 *                                    sqrt; for hypot, atan2 and pow every pair of specials
 *                                    and 2^30 random pairs (pair_at); div keeps its sample
 *   ulp_report [--threads N] [--only OP,OP...]
 *   ulp_report --exhaustive --compare vulkan ...
 *                                    also run every chunk on another backend (through the
 *                                    registry: vulkan on a GPU machine), whose results must
 *                                    equal the reference backend's bit for bit
 *   ulp_report --on vulkan ...       measure another backend (through the registry) against
 *                                    libm instead of the reference backend
 *   ulp_report --on vulkan --compare vulkan --plain ...
 *                                    the code the Vulkan backend generates against its plain
 *                                    code (nothing speculated: docs/architecture.md), bit for
 *                                    bit, with no reference run and nothing measured against
 *                                    libm: what proves on a GPU, in seconds a function, that
 *                                    speculation changes no result
 *   ulp_report --list-wrong ...      print each input whose result is not the reference's as a
 *                                    C table row {input, reference}: the rows of the tables
 *                                    of exceptions of planner/vmath_cr.c
 *
 * The sample of an operation: its special values; a strided sweep over all 2^32 bit patterns
 * (every binade of both signs gets about a thousand inputs at the default size); and random inputs
 * of its dense range (where its results are not just 0, 1 or infinity), half spread evenly over
 * the bit patterns and half uniform over the values, from a fixed seed, so the report is
 * reproducible. VYRED_ULP_SAMPLES sets the number of swept plus random inputs per operation
 * (default 1048576), VYRED_ULP_SEED the seed. Threads (default 1; with --exhaustive the number of
 * processors) share the inputs in chunks.
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "err.h"
#include "ir.h"
#include "reference.h"
#include "registry.h"

#define DEFAULT_SAMPLES (UINT32_C(1) << 20)
#define NOT_COMPARABLE INT64_MAX
#define CANONICAL_NAN UINT32_C(0x7FC00000)
#define CHUNK (UINT32_C(1) << 20)
#define MAX_THREADS 256

enum shape { UNARY, BINARY, DIV, SQRT };

struct op {
	const char *name;
	enum shape shape;
	enum vy_unop unop; /* for UNARY */
	long double (*ref)(long double x);
	float lo, hi; /* the dense range of the random samples */
	bool bounded; /* accuracy is promised on [-dom, dom] only: finite inputs outside it are
			 not measured */
	float dom;
	const char *domain;
	int64_t limit;       /* worst ULP allowed */
	enum vy_binop binop; /* for BINARY */
	long double (*ref2)(long double x, long double y);
	double min_exact; /* the share of results equal to the reference's, in percent, below which
			     the operation fails: where docs/semantics.md promises correct
			     rounding but for rare ties */
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
	{"div", DIV, 0, NULL, -FLT_MAX, FLT_MAX, false, 0, "all", 0, 0, NULL, 0},
	{"sqrt", SQRT, 0, sqrtl, 0.0f, FLT_MAX, false, 0, "all", 0, 0, NULL, 0},
	{"reciprocal", UNARY, VY_UN_RECIPROCAL, ref_reciprocal, -FLT_MAX, FLT_MAX, false, 0, "all",
		0, 0, NULL, 0},
	{"inverse_sqrt", UNARY, VY_UN_INVERSE_SQRT, ref_inverse_sqrt, 0.0f, FLT_MAX, false, 0,
		"all", 1, 0, NULL, 0},
	{"exp", UNARY, VY_UN_EXP, expl, -104.0f, 89.0f, false, 0, "all", 1, 0, NULL, 0},
	{"exp2", UNARY, VY_UN_EXP2, exp2l, -150.0f, 128.0f, false, 0, "all", 1, 0, NULL, 0},
	{"exp10", UNARY, VY_UN_EXP10, exp10l, -45.0f, 39.0f, false, 0, "all", 1, 0, NULL, 0},
	{"expm1", UNARY, VY_UN_EXPM1, expm1l, -18.0f, 89.0f, false, 0, "all", 1, 0, NULL, 0},
	{"log", UNARY, VY_UN_LOG, logl, 0.0f, FLT_MAX, false, 0, "all", 1, 0, NULL, 0},
	{"log2", UNARY, VY_UN_LOG2, log2l, 0.0f, FLT_MAX, false, 0, "all", 1, 0, NULL, 0},
	{"log10", UNARY, VY_UN_LOG10, log10l, 0.0f, FLT_MAX, false, 0, "all", 1, 0, NULL, 0},
	{"log1p", UNARY, VY_UN_LOG1P, log1pl, -1.0f, FLT_MAX, false, 0, "all", 1, 0, NULL, 0},
	{"cbrt", UNARY, VY_UN_CBRT, cbrtl, -FLT_MAX, FLT_MAX, false, 0, "all", 0, 0, NULL, 0},
	{"sin", UNARY, VY_UN_SIN, sinl, -0x1p22f, 0x1p22f, false, 0, "all", 1, 0, NULL, 0},
	{"cos", UNARY, VY_UN_COS, cosl, -0x1p22f, 0x1p22f, false, 0, "all", 1, 0, NULL, 0},
	{"tan", UNARY, VY_UN_TAN, tanl, -0x1p22f, 0x1p22f, false, 0, "all", 2, 0, NULL, 95.0},
	{"asin", UNARY, VY_UN_ASIN, asinl, -1.0f, 1.0f, false, 0, "all", 2, 0, NULL, 0},
	{"acos", UNARY, VY_UN_ACOS, acosl, -1.0f, 1.0f, false, 0, "all", 1, 0, NULL, 0},
	{"atan", UNARY, VY_UN_ATAN, atanl, -FLT_MAX, FLT_MAX, false, 0, "all", 2, 0, NULL, 0},
	{"sinh", UNARY, VY_UN_SINH, sinhl, -90.0f, 90.0f, false, 0, "all", 2, 0, NULL, 0},
	{"cosh", UNARY, VY_UN_COSH, coshl, -90.0f, 90.0f, false, 0, "all", 1, 0, NULL, 0},
	{"tanh", UNARY, VY_UN_TANH, tanhl, -FLT_MAX, FLT_MAX, false, 0, "all", 1, 0, NULL, 0},
	{"erf", UNARY, VY_UN_ERF, erfl, -4.0f, 4.0f, false, 0, "all", 1, 0, NULL, 99.9},
	{"erfc", UNARY, VY_UN_ERFC, erfcl, -4.0f, 9.25f, false, 0, "all", 1, 0, NULL, 99.9},
	{"exp_cr", UNARY, VY_UN_EXP_CR, expl, -104.0f, 89.0f, false, 0, "all", 0, 0, NULL, 100},
	{"exp2_cr", UNARY, VY_UN_EXP2_CR, exp2l, -150.0f, 128.0f, false, 0, "all", 0, 0, NULL, 100},
	{"log_cr", UNARY, VY_UN_LOG_CR, logl, 0.0f, FLT_MAX, false, 0, "all", 0, 0, NULL, 100},
	{"log2_cr", UNARY, VY_UN_LOG2_CR, log2l, 0.0f, FLT_MAX, false, 0, "all", 0, 0, NULL, 100},
	{"hypot", BINARY, 0, NULL, -FLT_MAX, FLT_MAX, false, 0, "all", 1, VY_BIN_HYPOT, hypotl,
		99.99},
	{"atan2", BINARY, 0, NULL, -FLT_MAX, FLT_MAX, false, 0, "all", 1, VY_BIN_ATAN2, atan2l,
		99.9},
	{"pow", BINARY, 0, NULL, -FLT_MAX, FLT_MAX, false, 0, "all", 1, VY_BIN_POW, powl, 97.0},
};

#define N_OPS (sizeof(ops) / sizeof(ops[0]))

/* Inputs every operation sees besides its samples (outside its domain too). */
static const uint32_t specials[] = {
	0x00000000,
	0x80000000,
	0x7F800000,
	0xFF800000,
	0x7FC00000,
	0x7FC12345,
	0xFFC00001,
	0x7F800001,
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

#define N_SPECIALS (sizeof(specials) / sizeof(specials[0]))

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
		return CANONICAL_NAN;
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

/* `want` is canonical. A non-canonical result, or a NaN on one side only, is not comparable;
 * two NaNs are equal only when the result is the canonical NaN itself. */
static int64_t ulp_distance(uint32_t got, uint32_t want)
{
	if (canon(got) != got || is_nan(got) != is_nan(want)) {
		return NOT_COMPARABLE;
	}
	if (is_nan(want)) {
		return got == want ? 0 : NOT_COMPARABLE;
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
	if (op->shape == DIV || op->shape == BINARY) {
		vy_program_add_buffer(p, "b", 1, VY_ACCESS_READ_ONLY, VY_TYPE_F32, n);
		value = vy_ir_binary(p, op->shape == DIV ? VY_BIN_DIV : op->binop, a,
			vy_ir_load(p, "b", vy_ir_gid(p, 0)));
	} else {
		value = vy_ir_unary(p, op->shape == SQRT ? VY_UN_SQRT : op->unop, a);
	}
	vy_program_add_buffer(p, "y", 2, VY_ACCESS_WRITE_ONLY, VY_TYPE_F32, n);
	vy_program_set_entry(p, vy_ir_seq(p, vy_ir_store(p, "y", vy_ir_gid(p, 0), value), NULL));
	return p;
}

/* What one operation measured; threads merge theirs under the job's lock. */
struct result {
	uint64_t samples;
	uint64_t exact; /* results equal to the reference */
	int64_t worst;
	uint32_t at_a, at_b, got, want;
	bool failed_dispatch;
	uint64_t differ;                       /* results of the other backend that differ */
	uint32_t diff_at, diff_got, diff_want; /* the first of them */
};

static uint32_t reference(const struct op *op, uint32_t a, uint32_t b)
{
	if (op->shape == DIV) {
		/* A double quotient of two floats rounds to f32 without a double-rounding error. */
		return round_ref((long double)((double)f32_of(a) / (double)f32_of(b)));
	}
	if (op->shape == BINARY) {
		return round_ref(op->ref2((long double)f32_of(a), (long double)f32_of(b)));
	}
	return round_ref(op->ref((long double)f32_of(a)));
}

/* Where the inputs of one operation come from: an explicit list, or all 2^32 patterns. */
struct job {
	const struct op *op;
	struct vy_backend *backend;
	struct vy_backend *other;   /* NULL, or the backend compared bit for bit (--compare) */
	pthread_mutex_t other_lock; /* one dispatch on it at a time */
	const uint32_t *a, *b;      /* NULL: input i is the bit pattern i (exhaustive) */
	bool pairs;                 /* with a NULL: input i is pair_at(pair_seed, i, ...) */
	uint64_t pair_seed;
	uint64_t total;
	bool list_wrong;           /* print each input whose result is not the reference's */
	bool measure;              /* against libm; not with --plain, which only compares */
	atomic_uint_fast64_t next; /* first input of the next chunk to take */
	pthread_mutex_t lock;
	struct result res;
};

static void merge(struct result *into, const struct result *r)
{
	into->samples += r->samples;
	into->exact += r->exact;
	into->failed_dispatch |= r->failed_dispatch;
	if (r->differ && (!into->differ || r->diff_at < into->diff_at)) {
		into->diff_at = r->diff_at;
		into->diff_got = r->diff_got;
		into->diff_want = r->diff_want;
	}
	into->differ += r->differ;
	if (r->worst > into->worst ||
		(r->worst == into->worst && r->worst >= 0 && r->at_a < into->at_a)) {
		into->worst = r->worst;
		into->at_a = r->at_a;
		into->at_b = r->at_b;
		into->got = r->got;
		into->want = r->want;
	}
}

/* Dispatch the chunk on the backend compared and count the results that differ from the
 * reference backend's `ref` (n of them count). */
static int compare_chunk(struct job *job, struct vy_program *p, const struct vy_bytes *inputs,
	uint32_t n_inputs, const uint8_t *ref, uint32_t n, const uint32_t *a,
	struct vy_outputs *outputs, struct result *mine)
{
	struct vy_err err = {0};
	pthread_mutex_lock(&job->other_lock);
	int rc = vy_backend_dispatch(job->other, p, inputs, n_inputs, NULL, outputs, &err);
	pthread_mutex_unlock(&job->other_lock);
	if (rc == 0 && (outputs->len != 1 || outputs->items[0].len != CHUNK * 4)) {
		rc = vy_err_set(&err, VY_E_INTERNAL, NULL, "check the backend compared",
			"expected one output of %u floats", CHUNK);
	}
	if (rc) {
		char buf[1024];
		fprintf(stderr, "ulp_report: %s on the backend compared: %s\n", job->op->name,
			vy_err_format(&err, buf, sizeof(buf)));
		return rc;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t got, want;
		memcpy(&got, outputs->items[0].data + (size_t)i * 4, 4);
		memcpy(&want, ref + (size_t)i * 4, 4);
		if (got != want && mine->differ++ == 0) {
			mine->diff_at = a[i];
			mine->diff_got = got;
			mine->diff_want = want;
		}
	}
	return 0;
}

/*
 * Input pair `i` of a two-operand function's large run: first every pair of specials, then
 * random pairs from a counter-based generator (so threads need no shared state): half with both
 * operands random bit patterns, half with b in a's binade or up to 24 binades from it (where
 * both operands count), of either sign. For pow (`power`) the second half is instead where the
 * result is a normal number: b = w / log2|a| for w uniform in [-150, 130], and, every other
 * pair, a small integer b with a in [-10, 10] (negative bases, odd and even powers).
 */
static void pair_at(uint64_t seed, uint64_t i, bool power, uint32_t *a, uint32_t *b)
{
	if (i < (uint64_t)N_SPECIALS * N_SPECIALS) {
		*a = specials[i / N_SPECIALS];
		*b = specials[i % N_SPECIALS];
		return;
	}
	uint64_t state = seed ^ (i * UINT64_C(0xD1B54A32D192ED03));
	uint64_t r = next_random(&state);
	*a = (uint32_t)r;
	if (i % 2 == 0) {
		*b = (uint32_t)(r >> 32);
		return;
	}
	uint64_t q = next_random(&state);
	if (power && i % 4 == 1) {
		double w = -150.0 + 280.0 * (double)(q >> 11) * 0x1p-53;
		double l = log2(fabs((double)f32_of(*a)));
		*b = bits_of((float)(l != 0 && isfinite(l) ? w / l : w));
		return;
	}
	if (power) {
		*a = bits_of((float)(-10.0 + 20.0 * (double)(r >> 11) * 0x1p-53));
		*b = bits_of((float)((int)(q % 81) - 40));
		return;
	}
	int32_t ea = (int32_t)((*a >> 23) & 0xFF);
	int32_t eb = ea + (int32_t)(q % 49) - 24;
	eb = eb < 1 ? 1 : eb > 254 ? 254 : eb;
	*b = (uint32_t)(q >> 32) & 0x807FFFFFu;
	*b |= (uint32_t)eb << 23;
}

static void *work(void *arg)
{
	struct job *job = arg;
	const struct op *op = job->op;
	struct vy_program *p = build(op, CHUNK);
	uint32_t *a = malloc(CHUNK * sizeof(uint32_t));
	uint32_t *b = malloc(CHUNK * sizeof(uint32_t));
	if (!a || !b) {
		fprintf(stderr, "ulp_report: out of memory\n");
		exit(2);
	}
	struct result mine = {.worst = -1};
	struct vy_outputs outputs, theirs;
	vy_outputs_init(&outputs);
	vy_outputs_init(&theirs);
	for (;;) {
		uint64_t first = atomic_fetch_add(&job->next, CHUNK);
		if (first >= job->total) {
			break;
		}
		uint32_t n = job->total - first < CHUNK ? (uint32_t)(job->total - first) : CHUNK;
		for (uint32_t i = 0; i < CHUNK; i++) {
			/* The tail of a partial chunk repeats its first input. */
			uint64_t k = first + (i < n ? i : 0);
			if (job->pairs) {
				pair_at(job->pair_seed, k, op->binop == VY_BIN_POW, &a[i], &b[i]);
			} else {
				a[i] = job->a ? job->a[k] : (uint32_t)k;
				b[i] = job->b ? job->b[k] : 0x3F800000u;
			}
		}
		struct vy_bytes inputs[2] = {
			{(const uint8_t *)a, CHUNK * sizeof(uint32_t)},
			{(const uint8_t *)b, CHUNK * sizeof(uint32_t)},
		};
		struct vy_err err = {0};
		uint32_t n_inputs = op->shape == DIV || op->shape == BINARY ? 2 : 1;
		int rc = vy_backend_dispatch(
			job->backend, p, inputs, n_inputs, NULL, &outputs, &err);
		if (rc == 0 && (outputs.len != 1 || outputs.items[0].len != CHUNK * 4)) {
			rc = vy_err_set(&err, VY_E_INTERNAL, NULL, "check the reference backend",
				"expected one output of %u floats", CHUNK);
		}
		if (rc) {
			char buf[1024];
			fprintf(stderr, "ulp_report: %s: %s\n", op->name,
				vy_err_format(&err, buf, sizeof(buf)));
			mine.failed_dispatch = true;
			break;
		}
		if (job->other && compare_chunk(job, p, inputs, n_inputs, outputs.items[0].data, n,
					  a, &theirs, &mine)) {
			mine.failed_dispatch = true;
			break;
		}
		if (!job->measure) {
			mine.samples += n;
			continue;
		}
		for (uint32_t i = 0; i < n; i++) {
			uint32_t got;
			memcpy(&got, outputs.items[0].data + (size_t)i * 4, 4);
			uint32_t ia = canon(a[i]);
			uint32_t ib = canon(b[i]);
			float x = f32_of(ia);
			if (op->bounded && isfinite(x) && fabsf(x) > op->dom) {
				continue;
			}
			uint32_t want = reference(op, ia, ib);
			int64_t d = ulp_distance(got, want);
			if (d != 0 && job->list_wrong) {
				pthread_mutex_lock(&job->lock);
				printf("\t{0x%08" PRIX32 ", 0x%08" PRIX32
				       "}, /* %.9g: not 0x%08" PRIX32 " */\n",
					ia, want, f32_of(ia), got);
				pthread_mutex_unlock(&job->lock);
			}
			mine.samples++;
			mine.exact += d == 0;
			if (d > mine.worst) {
				mine.worst = d;
				mine.at_a = ia;
				mine.at_b = ib;
				mine.got = got;
				mine.want = want;
			}
		}
	}
	vy_outputs_finish(&outputs);
	vy_outputs_finish(&theirs);
	vy_program_destroy(p);
	free(a);
	free(b);
	pthread_mutex_lock(&job->lock);
	merge(&job->res, &mine);
	pthread_mutex_unlock(&job->lock);
	return NULL;
}

/* The line that says how many results of the backend compared differ, and the first of them. */
static void report_differ(const struct op *op, const struct result *r, const char *compare,
	const char *on, bool plain)
{
	printf("ulp_report: %s: %" PRIu64 " result(s) of %s%s differ from %s", op->name, r->differ,
		compare, plain ? "'s plain code" : "", on ? on : "the reference");
	if (r->differ) {
		printf(" (the first at 0x%08" PRIX32 ": 0x%08" PRIX32 ", not 0x%08" PRIX32 ")",
			r->diff_at, r->diff_got, r->diff_want);
	}
	printf("\n");
}

static void run_job(struct job *job, unsigned threads)
{
	atomic_init(&job->next, 0);
	pthread_mutex_init(&job->lock, NULL);
	pthread_mutex_init(&job->other_lock, NULL);
	job->res = (struct result){.worst = -1};
	pthread_t tid[MAX_THREADS];
	unsigned started = 0;
	for (unsigned t = 1; t < threads; t++) {
		if (pthread_create(&tid[started], NULL, work, job) == 0) {
			started++;
		}
	}
	work(job);
	for (unsigned t = 0; t < started; t++) {
		pthread_join(tid[t], NULL);
	}
	pthread_mutex_destroy(&job->lock);
	pthread_mutex_destroy(&job->other_lock);
}

/* The inputs of the sample: specials, the strided sweep, random inputs of the dense range. */
static uint64_t make_sample(const struct op *op, uint32_t n, uint64_t seed, uint32_t **pa,
	uint32_t **pb, bool binades[512])
{
	uint32_t sweep = n / 2;
	/* An odd stride walks every binade (2^23 patterns each) about 2^23 / stride times. */
	uint32_t stride = (uint32_t)(((UINT64_C(1) << 32) / (sweep ? sweep : 1)) | 1);
	bool two = op->shape == DIV || op->shape == BINARY;
	uint64_t pairs = two ? N_SPECIALS * N_SPECIALS : N_SPECIALS;
	uint64_t total = pairs + n;
	uint32_t *a = malloc(total * sizeof(uint32_t));
	uint32_t *b = malloc(total * sizeof(uint32_t));
	if (!a || !b) {
		fprintf(stderr, "ulp_report: out of memory\n");
		exit(2);
	}
	uint64_t k = 0;
	for (size_t i = 0; i < N_SPECIALS; i++) {
		if (two) {
			for (size_t j = 0; j < N_SPECIALS; j++) {
				a[k] = specials[i];
				b[k++] = specials[j];
			}
		} else {
			a[k] = specials[i];
			b[k++] = 0x3F800000u;
		}
	}
	uint64_t state = seed;
	uint32_t start = (uint32_t)(next_random(&state) % stride);
	for (uint32_t i = 0; i < sweep; i++) {
		a[k] = start + i * stride;
		binades[a[k] >> 23] = true;
		b[k++] = bits_of(sample(&state, -FLT_MAX, FLT_MAX, 0));
	}
	for (uint32_t i = 0; k < total; i++) {
		if (op->shape == BINARY) {
			pair_at(seed, pairs + i, op->binop == VY_BIN_POW, &a[k], &b[k]);
			k++;
			continue;
		}
		a[k] = bits_of(sample(&state, op->lo, op->hi, i));
		b[k++] = bits_of(sample(&state, op->lo, op->hi, i));
	}
	*pa = a;
	*pb = b;
	return total;
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

static bool selected(const char *only, const char *name)
{
	if (!only) {
		return true;
	}
	size_t len = strlen(name);
	for (const char *p = only; *p;) {
		size_t n = strcspn(p, ",");
		if (n == len && strncmp(p, name, n) == 0) {
			return true;
		}
		p += n + (p[n] == ',');
	}
	return false;
}

static void usage(void)
{
	fprintf(stderr, "usage: ulp_report [--exhaustive] [--threads N] [--only OP,OP...] "
			"[--compare BACKEND [--plain]] [--on BACKEND] [--list-wrong]\n");
}

int main(int argc, char **argv)
{
	bool exhaustive = false;
	long threads = 0;
	const char *only = NULL;
	const char *compare = NULL;
	const char *on = NULL;
	bool list_wrong = false;
	struct vy_registry_options compared = {0};
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--exhaustive") == 0) {
			exhaustive = true;
		} else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
			threads = strtol(argv[++i], NULL, 10);
			if (threads < 1 || threads > MAX_THREADS) {
				fprintf(stderr, "ulp_report: --threads takes 1 to %d\n",
					MAX_THREADS);
				return 2;
			}
		} else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
			only = argv[++i];
		} else if (strcmp(argv[i], "--compare") == 0 && i + 1 < argc) {
			compare = argv[++i];
		} else if (strcmp(argv[i], "--on") == 0 && i + 1 < argc) {
			on = argv[++i];
		} else if (strcmp(argv[i], "--list-wrong") == 0) {
			list_wrong = true;
		} else if (strcmp(argv[i], "--plain") == 0) {
			compared.plain_code = true;
		} else {
			usage();
			return 2;
		}
	}
	if (compared.plain_code && !compare) {
		fprintf(stderr,
			"ulp_report: --plain applies to the compared backend, and none is "
			"given\nFix: add --compare vulkan (and --on vulkan to compare the two "
			"codes of one device)\n");
		return 2;
	}
	if (threads == 0) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		threads = exhaustive ? (cpus < 1 ? 1 : cpus > MAX_THREADS ? MAX_THREADS : cpus) : 1;
	}
	uint64_t n = env_u64("VYRED_ULP_SAMPLES", DEFAULT_SAMPLES);
	if (n > (UINT64_C(1) << 28)) {
		n = UINT64_C(1) << 28;
	}
	uint64_t seed = env_u64("VYRED_ULP_SEED", UINT64_C(0x5EED0F1EA7));
	struct vy_backend *backend = NULL;
	struct vy_err err = {0};
	if (on ? vy_registry_open(on, NULL, &backend, &err)
	       : vy_reference_backend_create(NULL, &backend, &err)) {
		char buf[1024];
		fprintf(stderr, "ulp_report: %s\n", vy_err_format(&err, buf, sizeof(buf)));
		return 2;
	}
	struct vy_backend *other = NULL;
	if (compare && vy_registry_open(compare, &compared, &other, &err)) {
		char buf[1024];
		fprintf(stderr, "ulp_report: --compare %s: %s\n", compare,
			vy_err_format(&err, buf, sizeof(buf)));
		vy_backend_destroy(backend);
		return 2;
	}
	printf("ulp_report: %s, %ld thread%s%s%s%s%s%s\n",
		exhaustive ? "every f32 input (div: its sample)" : "sampled", threads,
		threads == 1 ? "" : "s", on ? "; run on " : "",
		on ? vy_backend_version(backend) : "", other ? "; compared bit for bit with " : "",
		other ? vy_backend_version(other) : "",
		other && compared.plain_code ? " (plain code)" : "");
	printf("%-12s  %-11s  %-10s  %10s  %8s  %4s  %-29s  %-15s  %-15s  %s\n", "op", "domain",
		"inputs", "measured", "exact", "ulp", "worst input", "result", "reference",
		"status");
	int failed = 0;
	bool matched = false;
	for (size_t i = 0; i < N_OPS; i++) {
		const struct op *op = &ops[i];
		if (!selected(only, op->name)) {
			continue;
		}
		matched = true;
		struct job job = {.op = op,
			.backend = backend,
			.other = other,
			.list_wrong = list_wrong,
			.measure = !compared.plain_code};
		uint32_t *a = NULL, *b = NULL;
		bool binades[512] = {0};
		bool all = exhaustive && op->shape != DIV && op->shape != BINARY;
		bool many = exhaustive && op->shape == BINARY;
		const char *inputs = all ? "all 2^32" : many ? "2^30 pairs" : "sample";
		if (all) {
			job.total = UINT64_C(1) << 32;
		} else if (many) {
			job.pairs = true;
			job.pair_seed = seed + i;
			job.total = N_SPECIALS * N_SPECIALS + (UINT64_C(1) << 30);
		} else {
			job.total = make_sample(op, (uint32_t)n, seed + i, &a, &b, binades);
			job.a = a;
			job.b = b;
		}
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		run_job(&job, (unsigned)threads);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		free(a);
		free(b);
		const struct result *r = &job.res;
		if (r->failed_dispatch) {
			failed++;
			continue;
		}
		double seconds =
			(double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
		if (!job.measure) {
			/* --plain: the two codes compared, nothing measured against libm. */
			printf("%-12s  %-11s  %-10s  %10" PRIu64 "  compared only  %s (%.1f s)\n",
				op->name, op->domain, inputs, r->samples,
				r->differ == 0 && r->samples > 0 ? "ok" : "FAIL", seconds);
			report_differ(op, r, compare, on, true);
			failed += r->differ != 0 || r->samples == 0;
			continue;
		}
		unsigned missing = 0;
		for (size_t k = 0; !all && !many && k < 512; k++) {
			/* Binades 0 and 256 (zeros, subnormals), 255 and 511 (infinities, NaNs)
			 * included. */
			missing += !binades[k];
		}
		char input[64] = "-";
		if (r->worst == 0) {
			/* Exact everywhere: no input to single out. */
		} else if (op->shape == DIV) {
			snprintf(input, sizeof(input), "%.8g / %.8g", f32_of(r->at_a),
				f32_of(r->at_b));
		} else if (op->shape == BINARY) {
			snprintf(input, sizeof(input), "%.8g, %.8g", f32_of(r->at_a),
				f32_of(r->at_b));
		} else {
			snprintf(input, sizeof(input), "%.9g (0x%08" PRIX32 ")", f32_of(r->at_a),
				r->at_a);
		}
		bool ok = r->worst <= op->limit && r->samples > 0 && missing == 0 &&
			  r->differ == 0 &&
			  100.0 * (double)r->exact >= op->min_exact * (double)r->samples;
		char ulp[24];
		if (r->worst == NOT_COMPARABLE) {
			snprintf(ulp, sizeof(ulp), "bits");
		} else {
			snprintf(ulp, sizeof(ulp), "%" PRId64, r->worst);
		}
		char exact[16];
		snprintf(exact, sizeof(exact), "%.2f%%",
			r->samples ? 100.0 * (double)r->exact / (double)r->samples : 0.0);
		char got[32], want[32];
		snprintf(got, sizeof(got), "%.9g", f32_of(r->got));
		snprintf(want, sizeof(want), "%.9g", f32_of(r->want));
		if (r->worst == NOT_COMPARABLE) {
			snprintf(got, sizeof(got), "0x%08" PRIX32, r->got);
			snprintf(want, sizeof(want), "0x%08" PRIX32, r->want);
		}
		char floor[48] = "";
		if (op->min_exact > 0) {
			snprintf(floor, sizeof(floor), ", exact at least %.2f%%", op->min_exact);
		}
		printf("%-12s  %-11s  %-10s  %10" PRIu64
		       "  %8s  %4s  %-29s  %-15s  %-15s  %s (limit "
		       "%" PRId64 "%s, %.1f s)\n",
			op->name, op->domain, inputs, r->samples, exact, ulp, input, got, want,
			ok ? "ok" : "FAIL", op->limit, floor, seconds);
		if (op->min_exact > 0) {
			printf("ulp_report: %s: %" PRIu64 " of %" PRIu64
			       " results not correctly rounded\n",
				op->name, r->samples - r->exact, r->samples);
		}
		if (missing) {
			printf("ulp_report: %s: the sweep missed %u binades\n", op->name, missing);
		}
		if (other) {
			report_differ(op, r, compare, on, compared.plain_code);
		}
		failed += !ok;
	}
	vy_backend_destroy(backend);
	if (other) {
		vy_backend_destroy(other);
	}
	if (!matched) {
		fprintf(stderr, "ulp_report: no operation is named %s\n", only);
		return 2;
	}
	if (failed) {
		printf("ulp_report: %d operation(s) outside their contract\n", failed);
		return 1;
	}
	return 0;
}
