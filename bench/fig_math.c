/*
 * The math functions against PyTorch: for each of sin, cos, exp, log, tanh, sqrt, div, add (the
 * kernel's own floor) and pow, y = f(x) (or f(a, b)) over math_elements f32 on resident buffers,
 * dispatched through vyred and timed as the elementwise figure is (device time, the median of the
 * timed runs after the warm-up). Each row is GB/s, the bytes read and written (8 per element, 12
 * for div, add and pow) over the median time; its note gives elements/s. Its anchor is PyTorch's
 * same operation on CUDA tensors of the same size, measured by torch_anchor.py after every group,
 * which vybench writes into the row when it has it (vy_bench_math_anchor); without PyTorch the
 * row reports vyred alone.
 *
 * Inputs lie in each function's meaningful range and are made on the host from a hash of their
 * index, so no constant fold can predict them; torch_anchor.py draws the same distributions.
 * After the timed runs, 16 blocks of 256 outputs spread over y are read back and compared, bit
 * for bit, with the reference backend's result for the same inputs (the same program over those
 * elements, run in this process), and with libm's double-precision function rounded to f32:
 * within the bound semantics.md §6.2 documents. Nothing of the check runs inside a timed run.
 *
 * The correctly rounded variants (exp_cr, exp2_cr, log_cr, log2_cr) and exp2 and log2 follow:
 * a variant's anchor is the default sequence of its function in the same run (its cost against
 * it decides whether it could be the default: at most 1.5 times, a ratio of at least 2/3).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "programs.h"
#include "refcheck.h"
#include "report.h"
#include "session.h"

/* Outputs checked per function: SAMPLE_BLOCKS blocks of SAMPLE_BLOCK elements across y. */
#define SAMPLE_BLOCKS 16u
#define SAMPLE_BLOCK 256u
#define SAMPLES (SAMPLE_BLOCKS * SAMPLE_BLOCK)

/* How an operand is drawn from u, a uniform 24-bit fraction in [0, 1), and the hash's bits. */
enum draw {
	/* from + (to - from) * u: every value between `from` and `to` equally likely. */
	DRAW_UNIFORM,
	/* 2^e * (1 + m), e an integer from `from` to `to` and m a uniform 23-bit fraction: every
	 * binade of the range equally often (values over many orders of magnitude). */
	DRAW_BINADES,
};

struct operand {
	enum draw draw;
	double from, to;
};

struct math_fn {
	const char *op;    /* the IR operator; the row's key is math_<op> */
	const char *shape; /* y = ... in the row's name */
	bool binary;
	struct operand a, b;
	double (*libm1)(double);
	double (*libm2)(double, double);
	uint32_t ulp;         /* semantics.md §6.2's bound against libm */
	const char *baseline; /* a variant's default function (its row is the anchor), or NULL */
};

static double divide(double a, double b)
{
	return a / b;
}

static double sum(double a, double b)
{
	return a + b;
}

static const struct math_fn fns[] = {
	{"sin", "y=sin(x)", false, {DRAW_UNIFORM, -100, 100}, {0}, sin, NULL, 1, NULL},
	{"cos", "y=cos(x)", false, {DRAW_UNIFORM, -100, 100}, {0}, cos, NULL, 1, NULL},
	{"exp", "y=exp(x)", false, {DRAW_UNIFORM, -80, 80}, {0}, exp, NULL, 1, NULL},
	{"log", "y=log(x)", false, {DRAW_BINADES, -100, 99}, {0}, log, NULL, 1, NULL},
	{"tanh", "y=tanh(x)", false, {DRAW_UNIFORM, -10, 10}, {0}, tanh, NULL, 1, NULL},
	{"sqrt", "y=sqrt(x)", false, {DRAW_BINADES, -100, 99}, {0}, sqrt, NULL, 0, NULL},
	{"div", "y=a/b", true, {DRAW_UNIFORM, -100, 100}, {DRAW_UNIFORM, 1, 100}, NULL, divide, 0,
		NULL},
	/* The kernel's own floor: one exact operation, no expansion. */
	{"add", "y=a+b", true, {DRAW_UNIFORM, -100, 100}, {DRAW_UNIFORM, -100, 100}, NULL, sum, 0,
		NULL},
	/* a from 10 down to 0, 0 excluded: pow of a positive base over its whole output range. */
	{"pow", "y=pow(a,b)", true, {DRAW_UNIFORM, 10, 0}, {DRAW_UNIFORM, -8, 8}, NULL, pow, 1,
		NULL},
	{"exp_cr", "y=exp_cr(x)", false, {DRAW_UNIFORM, -80, 80}, {0}, exp, NULL, 0, "exp"},
	{"log_cr", "y=log_cr(x)", false, {DRAW_BINADES, -100, 99}, {0}, log, NULL, 0, "log"},
	{"exp2", "y=exp2(x)", false, {DRAW_UNIFORM, -120, 120}, {0}, exp2, NULL, 1, NULL},
	{"exp2_cr", "y=exp2_cr(x)", false, {DRAW_UNIFORM, -120, 120}, {0}, exp2, NULL, 0, "exp2"},
	{"log2", "y=log2(x)", false, {DRAW_BINADES, -100, 99}, {0}, log2, NULL, 1, NULL},
	{"log2_cr", "y=log2_cr(x)", false, {DRAW_BINADES, -100, 99}, {0}, log2, NULL, 0, "log2"},
};

#define FNS (sizeof(fns) / sizeof(fns[0]))

static float draw(const struct operand *o, uint32_t h)
{
	if (o->draw == DRAW_BINADES) {
		uint32_t span = (uint32_t)(o->to - o->from) + 1;
		int32_t e = (int32_t)o->from + (int32_t)((h & 0xFF) % span);
		uint32_t bits = ((uint32_t)(e + 127) << 23) | (h >> 9);
		float v;
		memcpy(&v, &bits, 4);
		return v;
	}
	double u = (double)(h >> 8) * 0x1p-24;
	return (float)(o->from + (o->to - o->from) * u);
}

/* Operand `which` (0: x or a, 1: b) of function `f` at element i: the same in every run. */
static float operand(size_t f, int which, uint64_t i)
{
	const struct operand *o = which ? &fns[f].b : &fns[f].a;
	return draw(o, vy_bench_hash(((uint64_t)(2 * f + (size_t)which + 1) << 40) + i));
}

static void describe(const struct operand *o, char *buf, size_t size)
{
	if (o->draw == DRAW_BINADES) {
		snprintf(buf, size, "2^%g to 2^%g, every binade equally often", o->from, o->to + 1);
	} else {
		snprintf(buf, size, "uniform from %g to %g", o->from, o->to);
	}
}

/* The value every backend gives for a true result `v` (semantics.md §3.1): a subnormal is the
 * zero of its sign, any NaN the canonical one. */
static float canonical(double v)
{
	float f = (float)v;
	if (isnan(f)) {
		return NAN;
	}
	if (f != 0 && fabsf(f) < 0x1p-126f) {
		return copysignf(0.0f, f);
	}
	return f;
}

/* The rank of a canonical f32 among the canonical values (semantics.md §6.2: no subnormal step,
 * +0 and -0 one apart). */
static int64_t rank(float v)
{
	uint32_t bits;
	memcpy(&bits, &v, 4);
	int64_t mag = (bits & 0x7FFFFFFF) == 0 ? 0 : (int64_t)(bits & 0x7FFFFFFF) - 0x7FFFFF;
	return bits >> 31 ? -1 - mag : mag;
}

/* ULP between vyred's `got` and libm's `want`, both canonical; UINT32_MAX where one is NaN and
 * the other is not. */
static uint32_t ulp_distance(float got, float want)
{
	if (isnan(got) || isnan(want)) {
		return isnan(got) && isnan(want) ? 0 : UINT32_MAX;
	}
	int64_t d = rank(got) - rank(want);
	return (uint32_t)(d < 0 ? -d : d);
}

/* Where block k of the sampled outputs starts: the first and last blocks of y, the others spread
 * between them. */
static uint64_t sample_block(uint64_t n, uint32_t k)
{
	uint64_t blocks = n / SAMPLE_BLOCK, per = blocks / SAMPLE_BLOCKS;
	uint64_t at = k == 0                   ? 0
		      : k == SAMPLE_BLOCKS - 1 ? blocks - 1
					       : k * per + vy_bench_hash(k) % per;
	return at * SAMPLE_BLOCK;
}

struct fn_result {
	uint64_t median_ns, wall_ns;
	bool device;
	uint32_t worst_ulp; /* against libm, over the samples */
};

/* The sampled outputs of y (resident `hy`) against the reference backend's bytes for the same
 * inputs and against libm. */
static int check_samples(struct vy_client *c, size_t f, uint64_t n, uint64_t hy,
	struct fn_result *res, struct vy_err *err)
{
	const struct math_fn *fn = &fns[f];
	size_t bytes = SAMPLES * 4;
	float *in[2] = {malloc(bytes), malloc(bytes)};
	float *got = malloc(bytes), *want = malloc(bytes), *zero = calloc(SAMPLES, 4);
	struct vy_error e;
	struct vy_program *p = NULL;
	char *json = NULL;
	int rc = in[0] && in[1] && got && want && zero
			 ? 0
			 : vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL, "free some memory",
				   "no memory for the samples");
	for (uint32_t k = 0; rc == 0 && k < SAMPLE_BLOCKS; k++) {
		uint64_t at = sample_block(n, k);
		for (uint32_t j = 0; j < SAMPLE_BLOCK; j++) {
			in[0][k * SAMPLE_BLOCK + j] = operand(f, 0, at + j);
			in[1][k * SAMPLE_BLOCK + j] = fn->binary ? operand(f, 1, at + j) : 0;
		}
		if (vy_buffer_download(
			    c, hy, at * 4, got + k * SAMPLE_BLOCK, SAMPLE_BLOCK * 4, &e) != 0) {
			rc = vy_bench_session_fail(err, "download", &e);
		}
	}
	if (rc == 0) {
		p = vy_bench_prog_math(fn->op, fn->binary, SAMPLES, &e);
		json = p ? vy_program_json(p, false) : NULL;
		if (!json) {
			rc = vy_bench_session_fail(err, "reference program", &e);
		}
	}
	if (rc == 0) {
		/* The inputs: x, or a and b, then y (zeros: the program only writes it). */
		const void *inputs[3] = {in[0], fn->binary ? in[1] : zero, zero};
		size_t lens[3] = {bytes, bytes, bytes};
		rc = vy_bench_reference_run(
			json, inputs, lens, fn->binary ? 3 : 2, want, bytes, err);
	}
	res->worst_ulp = 0;
	for (uint32_t i = 0; rc == 0 && i < SAMPLES; i++) {
		char args[64];
		if (fn->binary) {
			snprintf(args, sizeof(args), "%a, %a", (double)in[0][i], (double)in[1][i]);
		} else {
			snprintf(args, sizeof(args), "%a", (double)in[0][i]);
		}
		if (memcmp(&got[i], &want[i], 4) != 0) {
			rc = vy_bench_wrong(err, "vyred math",
				"%s(%s) = %a, the reference backend gives %a", fn->op, args,
				(double)got[i], (double)want[i]);
			break;
		}
		double exact = fn->binary ? fn->libm2(in[0][i], in[1][i]) : fn->libm1(in[0][i]);
		uint32_t d = ulp_distance(got[i], canonical(exact));
		if (d > fn->ulp) {
			rc = vy_bench_wrong(err, "vyred math",
				"%s(%s) = %a is %u ULP from libm's %a (the bound is %u)", fn->op,
				args, (double)got[i], d, (double)canonical(exact), fn->ulp);
		}
		res->worst_ulp = d > res->worst_ulp ? d : res->worst_ulp;
	}
	free(json);
	vy_program_free(p);
	free(in[0]);
	free(in[1]);
	free(got);
	free(want);
	free(zero);
	return rc;
}

/* Fill `host` with operand `which` of function f and upload it into resident `h`. */
static int put_operand(struct vy_client *c, size_t f, int which, float *host, uint64_t n,
	uint64_t h, struct vy_err *err)
{
	for (uint64_t i = 0; i < n; i++) {
		host[i] = operand(f, which, i);
	}
	struct vy_error e;
	if (vy_buffer_upload(c, h, 0, host, (size_t)n * 4, &e) != 0) {
		return vy_bench_session_fail(err, "upload", &e);
	}
	return 0;
}

/* One function: its inputs uploaded, its program compiled, its runs timed, its samples checked.
 * h holds the resident x (or a), b and y. */
static int measure_fn(struct vy_bench_ctx *ctx, struct vy_client *c, size_t f, float *host,
	const uint64_t h[3], struct fn_result *res, struct vy_err *err)
{
	const struct math_fn *fn = &fns[f];
	uint64_t n = ctx->sizes.math_elements;
	struct vy_error e;
	struct vy_program *p = vy_bench_prog_math(fn->op, fn->binary, (uint32_t)n, &e);
	char id[VY_PROGRAM_ID_CHARS];
	int rc = p ? 0 : vy_bench_session_fail(err, "math program", &e);
	if (rc == 0) {
		rc = vy_bench_session_compile(c, p, NULL, id, NULL, err);
	}
	vy_program_free(p);
	for (int which = 0; rc == 0 && which < (fn->binary ? 2 : 1); which++) {
		rc = put_operand(c, f, which, host, n, h[which], err);
	}
	struct vy_dispatch_input in[3] = {
		vy_input_resident(h[0]), vy_input_resident(h[1]), vy_input_resident(h[2])};
	if (!fn->binary) {
		in[1] = in[2];
	}
	struct vy_dispatch_options opt = {.timing = true};
	struct vy_dispatch_args args = {.program_id = id,
		.inputs = in,
		.n_inputs = fn->binary ? 3 : 2,
		.outputs_to = &h[2],
		.n_outputs_to = 1,
		.options = &opt};
	if (rc == 0) {
		rc = vy_bench_session_runs(c, &args, ctx->sizes.runs,
			vy_bench_session_output_resident, NULL, &res->median_ns, &res->wall_ns,
			&res->device, NULL, err);
	}
	if (rc == 0) {
		rc = check_samples(c, f, n, h[2], res, err);
	}
	return rc;
}

static void add_row(struct vy_bench_ctx *ctx, size_t f, const struct fn_result *res)
{
	const struct math_fn *fn = &fns[f];
	uint64_t n = ctx->sizes.math_elements;
	double per = fn->binary ? 12.0 : 8.0;
	double gbps = per * (double)n / (double)res->median_ns;
	char key[48], name[64], a[64], b[64];
	snprintf(key, sizeof(key), "math_%s", fn->op);
	snprintf(name, sizeof(name), "math %s f32 %s, vyred", fn->op, fn->shape);
	struct vy_bench_figure *row = vy_bench_report_add(
		ctx->report, key, name, "GB/s", gbps, NULL, NAN, VY_BENCH_GOAL_NONE, 0, NULL);
	describe(&fn->a, a, sizeof(a));
	if (fn->binary) {
		describe(&fn->b, b, sizeof(b));
		vy_bench_figure_note(row, "a %s, b %s", a, b);
	} else {
		vy_bench_figure_note(row, "x %s", a);
	}
	vy_bench_figure_note(row,
		"%llu elements on resident buffers, %.0f bytes each read and written, median of "
		"%u timed by %s: %.4g G elements/s; end to end through vyred %.3g GB/s; %u "
		"outputs bit-identical to the reference backend, at most %u ULP from libm",
		(unsigned long long)n, per, ctx->sizes.runs, res->device ? "device" : "wall",
		(double)n / (double)res->median_ns, per * (double)n / (double)res->wall_ns, SAMPLES,
		res->worst_ulp);
}

/* A correctly rounded variant against its function's default sequence, measured in this run. */
static void anchor_variant(struct vy_bench_ctx *ctx, const struct math_fn *fn)
{
	char key[48], base[48];
	snprintf(key, sizeof(key), "math_%s", fn->op);
	snprintf(base, sizeof(base), "math_%s", fn->baseline);
	struct vy_bench_figure *row = vy_bench_report_find(ctx->report, key);
	const struct vy_bench_figure *anchor = vy_bench_report_find(ctx->report, base);
	if (!row || !anchor || strcmp(row->status, "report") != 0 ||
		strcmp(anchor->status, "report") != 0) {
		return; /* not measured, or failed */
	}
	char label[64];
	snprintf(label, sizeof(label), "vyred %s, same run", fn->baseline);
	vy_bench_figure_anchor(row, label, anchor->value, VY_BENCH_GOAL_RATIO_AT_LEAST, 2.0 / 3.0,
		"ratio >= 0.667 (cost <= 1.5x)");
}

int vy_bench_math_run(struct vy_bench_ctx *ctx, struct vy_err *err)
{
	uint64_t n = ctx->sizes.math_elements;
	if (n == 0 || n % SAMPLES != 0 || n >= (UINT64_C(1) << 32)) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "math",
			"use a multiple of 4096 below 2^32", "%llu math elements",
			(unsigned long long)n);
	}
	size_t bytes = (size_t)n * 4;
	float *host = malloc(bytes);
	if (!host) {
		return vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL, "use smaller sizes",
			"no memory for %zu bytes", bytes);
	}
	struct vy_error e;
	struct vy_client *c = NULL;
	uint64_t h[3] = {0, 0, 0}; /* x (or a), b, y */
	int rc = vy_bench_session_connect(ctx, "vybench-math", &c, err);
	for (int i = 0; rc == 0 && i < 3; i++) {
		if (vy_buffer_alloc(c, bytes, NULL, &h[i], &e) != 0) {
			rc = vy_bench_session_fail(err, "alloc", &e);
		}
	}
	for (size_t f = 0; rc == 0 && f < FNS; f++) {
		struct fn_result res = {0};
		struct vy_err fe = {0};
		if (measure_fn(ctx, c, f, host, h, &res, &fe) == 0) {
			add_row(ctx, f, &res);
			continue;
		}
		/* One function's failure leaves the others' figures standing. */
		char key[48], name[64];
		snprintf(key, sizeof(key), "math_%s", fns[f].op);
		snprintf(name, sizeof(name), "math %s f32 %s, vyred", fns[f].op, fns[f].shape);
		vy_bench_report_fail(ctx->report, key, name, &fe);
	}
	for (size_t f = 0; f < FNS; f++) {
		if (fns[f].baseline) {
			anchor_variant(ctx, &fns[f]);
		}
	}
	for (int i = 0; i < 3; i++) {
		if (h[i]) {
			vy_buffer_free(c, h[i], NULL);
		}
	}
	vy_client_close(c);
	free(host);
	return rc;
}

void vy_bench_math_anchor(struct vy_bench_ctx *ctx, struct json_object *torch)
{
	json_object *status = NULL, *math = NULL, *ops = NULL;
	json_object_object_get_ex(torch, "status", &status);
	bool present = status && strcmp(json_object_get_string(status), "present") == 0;
	if (present) {
		json_object_object_get_ex(torch, "math", &math);
		json_object_object_get_ex(math, "ops", &ops);
	}
	for (size_t f = 0; f < FNS; f++) {
		char key[48];
		snprintf(key, sizeof(key), "math_%s", fns[f].op);
		struct vy_bench_figure *row = vy_bench_report_find(ctx->report, key);
		if (fns[f].baseline || !row || strcmp(row->status, "report") != 0) {
			continue; /* a variant (anchored in the run), not measured, or failed */
		}
		json_object *op = NULL, *gbps = NULL, *call = NULL, *eps = NULL;
		if (!ops || !json_object_object_get_ex(ops, fns[f].op, &op) ||
			!json_object_object_get_ex(op, "gbps", &gbps)) {
			/* bench.json's "torch" says why in full. */
			vy_bench_figure_note(row, "no PyTorch anchor: PyTorch %s",
				present  ? "gave no figure for it"
				: status ? json_object_get_string(status)
					 : "absent");
			continue;
		}
		json_object_object_get_ex(op, "call", &call);
		json_object_object_get_ex(op, "elements_per_s", &eps);
		char anchor[40];
		snprintf(anchor, sizeof(anchor), "%s",
			call ? json_object_get_string(call) : fns[f].op);
		vy_bench_figure_anchor(row, anchor, json_object_get_double(gbps),
			VY_BENCH_GOAL_RATIO_AT_LEAST, 0.8, "ratio >= 0.8");
		if (eps) {
			vy_bench_figure_note(row, "PyTorch %.4g G elements/s",
				json_object_get_double(eps) / 1e9);
		}
	}
}
