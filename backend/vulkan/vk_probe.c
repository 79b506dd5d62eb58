/*
 * The float probe. The triples are fixed (a xorshift sequence from a constant seed), so every run
 * on one device asks the same questions:
 *   - fma: a quarter of the triples set c = -(a * b) rounded, so that a fused fma returns the
 *     product's rounding error and an unfused one returns 0 or a different value;
 *   - '/' and sqrt: quotients and roots of normal numbers over a wide exponent range, compared
 *     with the host's correctly rounded results (x86-64 SSE arithmetic and sqrtf);
 *   - subnormals: products of two small normal numbers whose exact result is subnormal.
 * Results whose correct value is subnormal are left out of the first three comparisons, so that
 * flushing is reported once, as keeps_subnormals = false, and not as an inexact operation.
 */
#include "vk_probe.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vk_xfer.h"

#define PROBE_SAMPLES 4096u
#define PROBE_GROUP 64u

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
	"	dst.v[4u * i] = floatBitsToUint(f);\n"
	"	dst.v[4u * i + 1u] = floatBitsToUint(q);\n"
	"	dst.v[4u * i + 2u] = floatBitsToUint(s);\n"
	"	dst.v[4u * i + 3u] = floatBitsToUint(m);\n"
	"}\n";

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
		default:
			x[0] = random_float(&s, -40, 40);
			x[1] = random_float(&s, -40, 40);
			x[2] = random_float(&s, -40, 40);
			break;
		}
	}
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
	vy__vk_xfer_record_in(j->x, cmd, j->bufs, 2);
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
	vy__vk_xfer_record_out(j->x, cmd, j->bufs, 2);
	return 0;
}

static void judge(const float *t, const uint32_t *res, uint32_t n, struct vy_vk_probe *out)
{
	memset(out, 0, sizeof(*out));
	out->samples = n;
	uint32_t subnormal_kept = 0;
	for (uint32_t i = 0; i < n; i++) {
		float a = t[3 * i];
		float b = t[3 * i + 1];
		float c = t[3 * i + 2];
		float want[4] = {fmaf(a, b, c), a / b, sqrtf(fabsf(a)), a * b};
		for (int k = 0; k < 3; k++) {
			if (subnormal(want[k]) || res[4 * i + k] == bits_of(want[k])) {
				continue;
			}
			*(k == 0         ? &out->fma_diffs
				: k == 1 ? &out->div_diffs
					 : &out->sqrt_diffs) += 1;
		}
		if (subnormal(want[3])) {
			if (res[4 * i + 3] == bits_of(want[3])) {
				subnormal_kept++;
			} else {
				out->subnormal_flushed++;
			}
		}
	}
	out->fma_fused = out->fma_diffs == 0;
	out->div_exact = out->div_diffs == 0;
	out->sqrt_exact = out->sqrt_diffs == 0;
	out->keeps_subnormals = subnormal_kept > 0 && out->subnormal_flushed == 0;
}

int vy__vk_probe_run(struct vy_vk_exec *x, struct vy_vk_pipelines *pipes, struct vy_vk_compiler *cc,
	struct vy_vk_probe *out, struct vy_err *err)
{
	struct vy_vk_device *d = x->dev;
	uint32_t n = PROBE_SAMPLES;
	uint32_t *words = NULL;
	size_t n_words = 0;
	VkShaderModule module = VK_NULL_HANDLE;
	struct vy_vk_ctx *ctx = NULL;
	float *triples = calloc(3 * n, sizeof(float));
	uint32_t *results = calloc(4 * n, sizeof(uint32_t));
	if (!triples || !results) {
		free(triples);
		free(results);
		return vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL, "free host memory and retry",
			"no memory for the float probe");
	}
	make_triples(triples, n);
	struct probe_job job = {.x = x, .n = n};
	int rc = vy__vk_compile_glsl(
		cc, probe_glsl, sizeof(probe_glsl) - 1, "probe.comp", &words, &n_words, err);
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
			x, ctx, (uint64_t)n * 12, triples, false, false, &job.bufs[0], err);
	}
	if (rc == 0) {
		rc = vy__vk_xfer_prepare(
			x, ctx, (uint64_t)n * 16, NULL, true, true, &job.bufs[1], err);
	}
	if (rc == 0) {
		rc = vy__vk_ctx_submit(
			x, ctx, false, true, job.layout->push ? 0 : 1, record_probe, &job, err);
	}
	if (rc == 0) {
		rc = vy__vk_ctx_wait(x, ctx, UINT64_MAX, err);
	}
	if (rc == 0) {
		rc = vy__vk_xfer_read(x, &job.bufs[1], results, (uint64_t)n * 16, err);
	}
	if (rc == 0) {
		judge(triples, results, n, out);
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
	free(triples);
	free(results);
	return rc;
}
