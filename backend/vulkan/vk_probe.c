/*
 * The float probe. The triples are fixed (a xorshift sequence from a constant seed), so every run
 * on one device asks the same questions:
 *   - fma: a quarter of the triples set c = -(a * b) rounded, so that a fused fma returns the
 *     product's rounding error and an unfused one returns 0 or a different value; after the
 *     random triples come IEEE 754's special cases of fma (an infinite or NaN operand, zeros of
 *     both signs, an exact cancellation, a sum that a fused fma keeps finite), whose results must
 *     be IEEE's too (any NaN for a NaN), since the code generator trusts a fused fma with them;
 *   - '/' and sqrt: quotients and roots of normal numbers over a wide exponent range, compared
 *     with the host's correctly rounded results (x86-64 SSE arithmetic and sqrtf);
 *   - subnormals: products of two small normal numbers whose exact result is subnormal, and
 *     sums a + c of two normal numbers near the smallest normal whose exact result is subnormal:
 *     kept, or flushed to the zero of their sign (anything else is neither).
 * Results whose correct value is subnormal are left out of the first three comparisons, so that
 * flushing is reported once, as keeps_subnormals = false, and not as an inexact operation.
 *
 * A second kernel asks what the driver's compiler does with constants, which no run-time value
 * reveals: add, sub and mul with a constant zero or infinite operand and `x - x`, written as the
 * code generator writes them (a function of 32-bit words, inlined), over the special values; and
 * a select, and an if that assigns in both branches, between the words of -0.0 and 1.0 and of
 * +0.0 and -1.0. Its first invocation also counts the iterations of one loop of LOOP_PROBE
 * iterations (the count read from the input, so no compiler knows it): fewer mean that the driver
 * ends loops on its own (llvmpipe allows 65,535 loop passes per invocation, over all its loops).
 *
 * A third kernel runs vy_fmulq, the product of a speculated loop's first run, as the code
 * generator writes it, over pairs of operands: normal ones whose exact product lies in
 * [2^-126 - 2^-150, 2^-126), where a device that flushes before rounding gives 0 and the exact
 * result is 2^-126 for some (its flag must be set for every one, or no loop is speculated), a zero
 * times a normal number, and products of 2^-125 or more (a flag there is needless). A fourth runs
 * vy_ffmaq, the fma of that first run, over triples: a product minus its own rounding (an exact
 * result not 0 but below 2^-126: the flag must be set), a product minus itself where the product
 * is exact (an exact 0: +0 must come back, or the flag be set), a product below 2^-190 plus 0
 * (the zero of the product's sign, or the flag) and normal results (a flag there is needless).
 * A miss of either kernel keeps every loop and run from being speculated.
 */
#include "vk_probe.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_codegen.h"
#include "vk_xfer.h"

#define PROBE_SAMPLES VY__VK_PROBE_SAMPLES
#define PROBE_GROUP 64u
#define PROBE_OUT VY__VK_PROBE_OUT

static const char probe_glsl[] =
	"#version 450\n"
	"layout(local_size_x = 64) in;\n"
	"layout(set = 0, binding = 0, std430) readonly buffer In { uint v[]; } src;\n"
	"layout(set = 0, binding = 1, std430) writeonly buffer Out { uint v[]; } dst;\n"
	"layout(push_constant) uniform Push { uint n; } pc;\n"
	"void main() {\n"
	"	uint i = gl_GlobalInvocationID.x;\n"
	"	if (i >= pc.n) {\n"
	"		return;\n"
	"	}\n"
	"	float a = uintBitsToFloat(src.v[3u * i]);\n"
	"	float b = uintBitsToFloat(src.v[3u * i + 1u]);\n"
	"	float c = uintBitsToFloat(src.v[3u * i + 2u]);\n"
	"	precise float f = fma(a, b, c);\n"
	"	precise float q = a / b;\n"
	"	precise float s = sqrt(abs(a));\n"
	"	precise float m = a * b;\n"
	"	precise float d = a + c;\n"
	"	dst.v[5u * i] = floatBitsToUint(f);\n"
	"	dst.v[5u * i + 1u] = floatBitsToUint(q);\n"
	"	dst.v[5u * i + 2u] = floatBitsToUint(s);\n"
	"	dst.v[5u * i + 3u] = floatBitsToUint(m);\n"
	"	dst.v[5u * i + 4u] = floatBitsToUint(d);\n"
	"}\n";

static const char fold_glsl[] =
	"#version 450\n"
	"layout(local_size_x = 64) in;\n"
	"layout(set = 0, binding = 0, std430) readonly buffer In { uint v[]; } src;\n"
	"layout(set = 0, binding = 1, std430) writeonly buffer Out { uint v[]; } dst;\n"
	"layout(push_constant) uniform Push { uint n; } pc;\n"
	"uint f_add(uint a, uint b)\n"
	"{\n"
	"	precise float r = uintBitsToFloat(a) + uintBitsToFloat(b);\n"
	"	return floatBitsToUint(r);\n"
	"}\n"
	"uint f_sub(uint a, uint b)\n"
	"{\n"
	"	precise float r = uintBitsToFloat(a) - uintBitsToFloat(b);\n"
	"	return floatBitsToUint(r);\n"
	"}\n"
	"uint f_mul(uint a, uint b)\n"
	"{\n"
	"	precise float r = uintBitsToFloat(a) * uintBitsToFloat(b);\n"
	"	return floatBitsToUint(r);\n"
	"}\n"
	"void main() {\n"
	"	uint i = gl_GlobalInvocationID.x;\n"
	"	if (i >= pc.n) {\n"
	"		return;\n"
	"	}\n"
	"	uint x = src.v[2u * i];\n"
	"	bool c = src.v[2u * i + 1u] != 0u;\n"
	"	uint o = 12u * i;\n"
	"	dst.v[o] = f_mul(x, 0x80000000u);\n"
	"	dst.v[o + 1u] = f_mul(0u, x);\n"
	"	dst.v[o + 2u] = f_mul(x, 0x7F800000u);\n"
	"	dst.v[o + 3u] = f_add(x, 0u);\n"
	"	dst.v[o + 4u] = f_add(0u, x);\n"
	"	dst.v[o + 5u] = f_add(x, 0xFF800000u);\n"
	"	dst.v[o + 6u] = f_sub(x, 0u);\n"
	"	dst.v[o + 7u] = f_sub(x, x);\n"
	"	dst.v[o + 8u] = f_sub(0x80000000u, x);\n"
	"	dst.v[o + 9u] = c ? 0x80000000u : 0x3F800000u;\n"
	"	dst.v[o + 10u] = c ? 0u : 0xBF800000u;\n"
	"	uint t;\n"
	"	if (c) {\n"
	"		t = 0x3F800000u;\n"
	"	} else {\n"
	"		t = 0x80000000u;\n"
	"	}\n"
	"	dst.v[o + 11u] = t;\n"
	"	if (i == 0u) {\n"
	"		uint n = src.v[2u * pc.n];\n"
	"		uint k = 0u;\n"
	"		for (uint j = 0u; j < n; ++j) {\n"
	"			k += 1u;\n"
	"		}\n"
	"		dst.v[12u * pc.n] = k;\n"
	"	}\n"
	"}\n";

enum { FOLD_SAMPLES = 16, FOLD_OUT = 12, FOLD_FLOAT_OPS = 9 };

static const char flag_head[] =
	"#version 450\n"
	"layout(local_size_x = 64) in;\n"
	"layout(set = 0, binding = 0, std430) readonly buffer In { uint v[]; } src;\n"
	"layout(set = 0, binding = 1, std430) writeonly buffer Out { uint v[]; } dst;\n"
	"layout(push_constant) uniform Push { uint n; } pc;\n";

static const char flag_main[] =
	"void main() {\n"
	"	uint i = gl_GlobalInvocationID.x;\n"
	"	if (i >= pc.n) {\n"
	"		return;\n"
	"	}\n"
	"	bool hz = false;\n"
	"	dst.v[2u * i + 1u] = vy_fmulq(src.v[2u * i], src.v[2u * i + 1u], hz);\n"
	"	dst.v[2u * i] = hz ? 1u : 0u;\n"
	"}\n";

static const char fma_flag_main[] = "void main() {\n"
				    "	uint i = gl_GlobalInvocationID.x;\n"
				    "	if (i >= pc.n) {\n"
				    "		return;\n"
				    "	}\n"
				    "	bool hz = false;\n"
				    "	dst.v[2u * i + 1u] = vy_ffmaq(src.v[3u * i], src.v[3u * i "
				    "+ 1u], src.v[3u * i + 2u], hz);\n"
				    "	dst.v[2u * i] = hz ? 1u : 0u;\n"
				    "}\n";

/* Pairs of the flag kernel: a quarter each of zero operands and large products, half in the
 * band where the flag must be set. Triples of the fma flag kernel: a quarter of each kind
 * (fma_triple). */
enum { FLAG_SAMPLES = 256, FMA_FLAG_SAMPLES = 256 };

/* Iterations of the probe's loop: far more than any driver limit seen, few enough to take a
 * millisecond where loops are not limited. */
#define LOOP_PROBE (UINT32_C(1) << 20)

static uint32_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return (uint32_t)(*s >> 32);
}

/* A normal float with random sign and mantissa and an exponent in [lo, hi]. */
static float random_float(uint64_t *s, int lo, int hi)
{
	uint32_t mant = next(s) & 0x7fffffu;
	uint32_t sign = next(s) & 0x80000000u;
	int e = lo + (int)(next(s) % (uint32_t)(hi - lo + 1));
	uint32_t bits = sign | (uint32_t)(e + 127) << 23 | mant;
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

static uint32_t bits_of(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static bool subnormal(float f)
{
	return f != 0.0f && fabsf(f) < FLT_MIN;
}

/* IEEE 754's special cases of fma, appended to the random triples and judged for fma alone. */
static const float fma_specials[][3] = {
	{INFINITY, 0.0f, 1.0f},
	{0.0f, -INFINITY, 1.0f},
	{INFINITY, 1.0f, -INFINITY},
	{-INFINITY, 2.0f, 3.0f},
	{1.0f, 2.0f, -INFINITY},
	{NAN, 0.0f, 1.0f},
	{1.0f, 1.0f, NAN},
	{0.0f, 5.0f, -0.0f},
	{-0.0f, 5.0f, -0.0f},
	{-0.0f, 5.0f, 0.0f},
	{0.0f, 0.0f, 7.0f},
	{1.0f, 1.0f, -1.0f},
	{FLT_MAX, 2.0f, -FLT_MAX},
	{FLT_MAX, 2.0f, 0.0f},
	{-FLT_MAX, 2.0f, 0.0f},
};
#define FMA_SPECIALS (sizeof(fma_specials) / sizeof(fma_specials[0]))

static void make_triples(float *t, uint32_t n)
{
	uint64_t s = UINT64_C(0x9e3779b97f4a7c15);
	for (uint32_t i = 0; i < n; i++) {
		float *x = &t[3 * i];
		switch (i % 8) {
		case 0:
		case 1:
			x[0] = random_float(&s, -8, 8);
			x[1] = random_float(&s, -8, 8);
			x[2] = -(x[0] * x[1]);
			break;
		case 2:
			x[0] = random_float(&s, -75, -64);
			x[1] = random_float(&s, -75, -64);
			x[2] = 0.0f;
			break;
		case 3:
			/* a + c: two numbers of exponent -126 and opposite signs */
			x[0] = random_float(&s, -126, -126);
			x[1] = random_float(&s, -8, 8);
			x[2] = -random_float(&s, -126, -126);
			break;
		default:
			x[0] = random_float(&s, -40, 40);
			x[1] = random_float(&s, -40, 40);
			x[2] = random_float(&s, -40, 40);
			break;
		}
	}
	memcpy(&t[3 * n], fma_specials, sizeof(fma_specials));
}

/* The device's fma result r is IEEE's `want`: the same bits, or any NaN for a NaN. */
static bool fma_agrees(uint32_t r, float want)
{
	return isnan(want) ? (r & 0x7FFFFFFFu) > 0x7F800000u : r == bits_of(want);
}

struct probe_job {
	struct vy_vk_exec *x;
	const struct vy_vk_layout *layout;
	VkPipeline pipeline;
	struct vy_vk_xfer bufs[2];
	uint32_t n;
};

static int record_probe(struct vy_vk_ctx *ctx, VkCommandBuffer cmd, void *arg, struct vy_err *err)
{
	struct probe_job *j = arg;
	struct vy_vk_device *d = j->x->dev;
	vy__vk_xfer_record_in(j->x, cmd, NULL, NULL, j->bufs, 2);
	d->vk.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, j->pipeline);
	uint32_t bindings[2] = {0, 1};
	VkDescriptorBufferInfo infos[2] = {
		vy__vk_xfer_descriptor(j->x, &j->bufs[0]),
		vy__vk_xfer_descriptor(j->x, &j->bufs[1]),
	};
	int rc = vy__vk_xfer_bind(j->x, ctx, cmd, j->layout, 2, bindings, infos, err);
	if (rc) {
		return rc;
	}
	d->vk.vkCmdPushConstants(cmd, j->layout->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
		sizeof(j->n), &j->n);
	d->vk.vkCmdDispatch(cmd, (j->n + PROBE_GROUP - 1) / PROBE_GROUP, 1, 1);
	vy__vk_xfer_record_out(j->x, cmd, NULL, NULL, j->bufs, 2);
	return 0;
}

uint32_t vy__vk_probe_count(void)
{
	return PROBE_SAMPLES + FMA_SPECIALS;
}

void vy__vk_probe_triples(float *t)
{
	make_triples(t, PROBE_SAMPLES);
}

void vy__vk_probe_judge(const float *t, const uint32_t *res, struct vy_vk_probe *out)
{
	uint32_t n = vy__vk_probe_count();
	memset(out, 0, sizeof(*out));
	out->samples = n;
	uint32_t subnormal_kept = 0;
	uint32_t zeros[2] = {0, 0}; /* flushed to the zero of their sign: products, sums */
	uint32_t others = 0;        /* subnormal results neither kept nor flushed so */
	for (uint32_t i = 0; i < n; i++) {
		float a = t[3 * i];
		float b = t[3 * i + 1];
		float c = t[3 * i + 2];
		float want[5] = {fmaf(a, b, c), a / b, sqrtf(fabsf(a)), a * b, a + c};
		const uint32_t *r = &res[PROBE_OUT * i];
		if (i >= n - FMA_SPECIALS) {
			out->fma_diffs += !fma_agrees(r[0], want[0]);
			continue;
		}
		for (int k = 0; k < 3; k++) {
			if (subnormal(want[k]) || r[k] == bits_of(want[k])) {
				continue;
			}
			*(k == 0         ? &out->fma_diffs
				: k == 1 ? &out->div_diffs
					 : &out->sqrt_diffs) += 1;
		}
		for (int k = 3; k < 5; k++) {
			if (!subnormal(want[k])) {
				continue;
			}
			if (r[k] == bits_of(want[k])) {
				subnormal_kept++;
				continue;
			}
			out->subnormal_flushed++;
			if (r[k] == (bits_of(want[k]) & 0x80000000u)) {
				zeros[k - 3]++;
			} else {
				others++;
			}
		}
	}
	out->fma_fused = out->fma_diffs == 0;
	out->div_exact = out->div_diffs == 0;
	out->sqrt_exact = out->sqrt_diffs == 0;
	out->keeps_subnormals = subnormal_kept > 0 && out->subnormal_flushed == 0;
	out->flushes_subnormals =
		subnormal_kept == 0 && others == 0 && zeros[0] > 0 && zeros[1] > 0;
}

static float float_of(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static void make_fold_samples(uint32_t *in)
{
	static const uint32_t witness[FOLD_SAMPLES / 2] = {0x00000000u, 0x80000000u, 0x7F800000u,
		0xFF800000u, 0x7FC00000u, 0x40000000u, 0xC0400000u, 0x7F7FFFFFu};
	for (uint32_t i = 0; i < FOLD_SAMPLES; i++) {
		in[2 * i] = witness[i / 2];
		in[2 * i + 1] = i & 1u;
	}
	in[2 * FOLD_SAMPLES] = LOOP_PROBE;
}

static void judge_fold(const uint32_t *in, const uint32_t *res, struct vy_vk_probe *out)
{
	for (uint32_t i = 0; i < FOLD_SAMPLES; i++) {
		/* volatile: the host computes each one at run time, as IEEE says */
		volatile float x = float_of(in[2 * i]);
		volatile float nz = -0.0f;
		volatile float z = 0.0f;
		volatile float inf = INFINITY;
		bool c = in[2 * i + 1] != 0;
		float want[FOLD_FLOAT_OPS] = {
			x * nz, z * x, x * inf, x + z, z + x, x + -inf, x - z, x - x, nz - x};
		const uint32_t *r = &res[FOLD_OUT * i];
		for (int k = 0; k < FOLD_FLOAT_OPS; k++) {
			bool nan = isnan(want[k]);
			if (nan ? !isnan(float_of(r[k])) : r[k] != bits_of(want[k])) {
				out->fold_diffs++;
			}
		}
		uint32_t sel[3] = {c ? 0x80000000u : 0x3F800000u, c ? 0u : 0xBF800000u,
			c ? 0x3F800000u : 0x80000000u};
		for (int k = 0; k < 3; k++) {
			out->select_diffs += r[FOLD_FLOAT_OPS + k] != sel[k];
		}
	}
	out->fold_exact = out->fold_diffs == 0;
	out->select_exact = out->select_diffs == 0;
	uint32_t ran = res[FOLD_OUT * FOLD_SAMPLES];
	uint32_t passes = ran < LOOP_PROBE ? ran : 0;
	if (passes && (out->loop_passes == 0 || passes < out->loop_passes)) {
		out->loop_passes = passes;
	}
}

/* The kind of the flag kernel's pair i: 0 a product in the band, 1 a zero operand, 2 a product
 * of 2^-125 or more. */
static int flag_kind(uint32_t i)
{
	return i % 4 < 2 ? 0 : (int)(i % 4) - 1;
}

/*
 * Normal a and b with 2^-126 - 2^-150 <= |a * b| < 2^-126 (products of two floats are exact in
 * double), |a| < 1: for a random |a|, the largest b that keeps the product below 2^-126, when
 * that reaches the band; the tie 1 - 2^-24 times 2^-126 when no random |a| gave one.
 */
static void band_pair(uint64_t *s, uint32_t *a, uint32_t *b)
{
	const double top = ldexp(1.0, -126);
	const double low = top - ldexp(1.0, -150);
	for (int tries = 0; tries < 64; tries++) {
		float x = fabsf(random_float(s, -60, -1));
		float y = (float)(top / x);
		while ((double)x * y >= top) {
			y = nextafterf(y, 0.0f);
		}
		double p = (double)x * y;
		if (p >= low && y >= FLT_MIN) {
			*a = bits_of(x) | (next(s) & 0x80000000u);
			*b = bits_of(y) | (next(s) & 0x80000000u);
			return;
		}
	}
	*a = 0x3F7FFFFFu;
	*b = 0x00800000u;
}

static void make_flag_pairs(uint32_t *in)
{
	uint64_t s = UINT64_C(0x2545f4914f6cdd1d);
	for (uint32_t i = 0; i < FLAG_SAMPLES; i++) {
		uint32_t *p = &in[2 * i];
		switch (flag_kind(i)) {
		case 0:
			band_pair(&s, &p[0], &p[1]);
			break;
		case 1:
			p[0] = next(&s) & 0x80000000u;
			p[1] = bits_of(random_float(&s, -126, 127));
			break;
		default:
			p[0] = bits_of(random_float(&s, -40, 40));
			p[1] = bits_of(random_float(&s, -40, 40));
			break;
		}
		if (next(&s) & 1u) {
			uint32_t t = p[0];
			p[0] = p[1];
			p[1] = t;
		}
	}
}

static void judge_flag(const uint32_t *res, struct vy_vk_probe *out)
{
	for (uint32_t i = 0; i < FLAG_SAMPLES; i++) {
		bool set = res[2 * i] != 0;
		if (flag_kind(i) == 0) {
			out->flag_tried++;
			out->flag_misses += !set;
		} else {
			out->flag_needless += set;
		}
	}
}

/* The fma flag kernel's triple i, and the result it must give where the flag is not set (or
 * UINT32_MAX: the flag must be set; UINT32_MAX - 1: any result, a flag is needless). */
static uint32_t fma_triple(uint64_t *s, uint32_t i, uint32_t *t)
{
	float a, b;
	double p;
	switch (i % 4) {
	case 0: /* an inexact product below 2^-104 minus its rounding: below 2^-128 (half a unit
		 * of the product's last place), at least 2^-167 (a unit of the exact product's) */
		do {
			a = random_float(s, -60, -53);
			b = random_float(s, -60, -53);
			p = (double)a * b;
		} while ((double)(float)p == p);
		t[0] = bits_of(a);
		t[1] = bits_of(b);
		t[2] = bits_of(-(float)p);
		return UINT32_MAX;
	case 1: /* a product of 12-bit significands (exact) minus itself: +0 */
		a = random_float(s, -30, 30);
		b = random_float(s, -30, 30);
		t[0] = bits_of(a) & 0xFFFFF000u;
		t[1] = bits_of(b) & 0xFFFFF000u;
		memcpy(&a, &t[0], 4);
		memcpy(&b, &t[1], 4);
		t[2] = bits_of(-(a * b));
		return 0;
	case 2: /* a product below 2^-190 plus 0: the zero of its sign */
		t[0] = bits_of(random_float(s, -126, -100));
		t[1] = bits_of(random_float(s, -126, -100));
		t[2] = 0;
		return (t[0] ^ t[1]) & 0x80000000u;
	default: /* normal results */
		t[0] = bits_of(random_float(s, -40, 40));
		t[1] = bits_of(random_float(s, -40, 40));
		t[2] = bits_of(random_float(s, -40, 40));
		return UINT32_MAX - 1;
	}
}

static void judge_fma_flag(const uint32_t *want, const uint32_t *res, struct vy_vk_probe *out)
{
	for (uint32_t i = 0; i < FMA_FLAG_SAMPLES; i++) {
		bool set = res[2 * i] != 0;
		if (want[i] == UINT32_MAX - 1) {
			out->fma_flag_needless += set;
			continue;
		}
		out->fma_flag_tried++;
		if (want[i] == UINT32_MAX) {
			out->fma_flag_misses += !set;
		} else if (set) {
			out->fma_flag_needless++;
		} else {
			out->fma_flag_misses += res[2 * i + 1] != want[i];
		}
	}
}

/*
 * Compile `glsl` (one storage buffer in, one out, a push constant n), through the SPIR-V
 * optimizer when `optimize`, and run it once over n invocations: in_bytes from `in`, out_bytes
 * back into `out`.
 */
static int run_kernel(struct vy_vk_exec *x, struct vy_vk_pipelines *pipes,
	struct vy_vk_compiler *cc, const char *glsl, bool optimize, const void *in,
	uint64_t in_bytes, void *out, uint64_t out_bytes, uint32_t n, struct vy_err *err)
{
	struct vy_vk_device *d = x->dev;
	uint32_t *words = NULL;
	size_t n_words = 0;
	VkShaderModule module = VK_NULL_HANDLE;
	struct vy_vk_ctx *ctx = NULL;
	struct probe_job job = {.x = x, .n = n};
	int rc = vy__vk_compile_glsl(
		cc, glsl, strlen(glsl), "probe.comp", optimize, &words, &n_words, err);
	/* The validator builds its tables on first use (about 2 ms): paid here, at start, rather
	 * than by the first module read from the disk cache after a restart. */
	if (rc == 0) {
		rc = vy__vk_validate_spirv(words, n_words, err);
	}
	if (rc == 0) {
		rc = vy__vk_module_create(pipes, words, n_words, &module, err);
	}
	struct vy_vk_shape shape = {
		.n_slots = 2,
		.slots = {{0, 0, VY_LAYOUT_STORAGE, true, 4}, {0, 1, VY_LAYOUT_STORAGE, false, 4}},
		.push_bytes = sizeof(uint32_t),
	};
	if (rc == 0) {
		rc = vy__vk_layout_get(pipes, &shape, &job.layout, err);
	}
	if (rc == 0) {
		rc = vy__vk_pipeline_create(pipes, module, job.layout, NULL, 0, &job.pipeline, err);
	}
	if (rc == 0) {
		rc = vy__vk_ctx_acquire(x, &ctx, err);
	}
	if (rc == 0) {
		rc = vy__vk_xfer_prepare(
			x, ctx, in_bytes, in, false, false, false, NULL, &job.bufs[0], err);
	}
	if (rc == 0) {
		rc = vy__vk_xfer_prepare(
			x, ctx, out_bytes, NULL, true, true, true, NULL, &job.bufs[1], err);
	}
	if (rc == 0) {
		rc = vy__vk_ctx_submit(
			x, ctx, false, true, job.layout->push ? 0 : 1, record_probe, &job, err);
	}
	if (rc == 0) {
		rc = vy__vk_ctx_wait(x, ctx, UINT64_MAX, err);
	}
	if (rc == 0) {
		rc = vy__vk_xfer_read(x, &job.bufs[1], out, out_bytes, err);
	}
	if (ctx) {
		vy__vk_ctx_release(x, ctx);
	}
	if (job.pipeline) {
		d->vk.vkDestroyPipeline(d->dev, job.pipeline, NULL);
	}
	if (module) {
		d->vk.vkDestroyShaderModule(d->dev, module, NULL);
	}
	free(words);
	return rc;
}

/* A flag kernel: its helper `fn` and `main`. */
static char *flag_kernel(const char *fn, const char *main, struct vy_err *err)
{
	size_t len = strlen(flag_head) + strlen(fn) + strlen(main) + 1;
	char *glsl = malloc(len);
	if (!glsl) {
		vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL, "free host memory and retry",
			"no memory for the float probe");
		return NULL;
	}
	snprintf(glsl, len, "%s%s%s", flag_head, fn, main);
	return glsl;
}

/* The flag kernels at both optimization levels, as the fold kernel: misses and needless add. */
static int probe_flag(struct vy_vk_exec *x, struct vy_vk_pipelines *pipes,
	struct vy_vk_compiler *cc, struct vy_vk_probe *out, struct vy_err *err)
{
	char *glsl = flag_kernel(vy_vk_codegen_product_flag(), flag_main, err);
	char *fma = glsl ? flag_kernel(vy_vk_codegen_fma_flag(), fma_flag_main, err) : NULL;
	if (!fma) {
		free(glsl);
		return VY_E_OUT_OF_MEMORY;
	}
	uint32_t in[2 * FLAG_SAMPLES];
	uint32_t res[2 * FLAG_SAMPLES];
	uint32_t triples[3 * FMA_FLAG_SAMPLES];
	uint32_t want[FMA_FLAG_SAMPLES];
	uint32_t fres[2 * FMA_FLAG_SAMPLES];
	make_flag_pairs(in);
	uint64_t s = UINT64_C(0x9e3779b97f4a7c15);
	for (uint32_t i = 0; i < FMA_FLAG_SAMPLES; i++) {
		want[i] = fma_triple(&s, i, &triples[3 * i]);
	}
	out->flag_tried = out->flag_misses = out->flag_needless = 0;
	out->fma_flag_tried = out->fma_flag_misses = out->fma_flag_needless = 0;
	int rc = 0;
	for (int optimize = 0; optimize < 2 && rc == 0; optimize++) {
		rc = run_kernel(x, pipes, cc, glsl, optimize, in, sizeof(in), res, sizeof(res),
			FLAG_SAMPLES, err);
		if (rc == 0) {
			judge_flag(res, out);
			rc = run_kernel(x, pipes, cc, fma, optimize, triples, sizeof(triples), fres,
				sizeof(fres), FMA_FLAG_SAMPLES, err);
		}
		if (rc == 0) {
			judge_fma_flag(want, fres, out);
		}
	}
	free(glsl);
	free(fma);
	return rc;
}

int vy__vk_probe_run(struct vy_vk_exec *x, struct vy_vk_pipelines *pipes, struct vy_vk_compiler *cc,
	struct vy_vk_probe *out, struct vy_err *err)
{
	uint32_t n = vy__vk_probe_count();
	float *triples = calloc(3 * n, sizeof(float));
	uint32_t *results = calloc(PROBE_OUT * n, sizeof(uint32_t));
	if (!triples || !results) {
		free(triples);
		free(results);
		return vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL, "free host memory and retry",
			"no memory for the float probe");
	}
	vy__vk_probe_triples(triples);
	int rc = run_kernel(x, pipes, cc, probe_glsl, false, triples, (uint64_t)n * 12, results,
		(uint64_t)n * PROBE_OUT * 4, n, err);
	if (rc == 0) {
		vy__vk_probe_judge(triples, results, out);
		uint32_t in[2 * FOLD_SAMPLES + 1];
		uint32_t res[FOLD_OUT * FOLD_SAMPLES + 1];
		make_fold_samples(in);
		/* Constants may be folded by the SPIR-V optimizer or by the driver: the plain form
		 * of a kernel skips the optimizer, its coarse form does not, so both are judged and
		 * a finding holds only where both agree (the diffs add up; the smaller loop limit
		 * stands). */
		out->fold_diffs = 0;
		out->select_diffs = 0;
		out->loop_passes = 0;
		for (int optimize = 0; optimize < 2 && rc == 0; optimize++) {
			rc = run_kernel(x, pipes, cc, fold_glsl, optimize, in, sizeof(in), res,
				sizeof(res), FOLD_SAMPLES, err);
			if (rc == 0) {
				judge_fold(in, res, out);
			}
		}
	}
	if (rc == 0) {
		rc = probe_flag(x, pipes, cc, out, err);
	}
	free(triples);
	free(results);
	return rc;
}
