/*
 * The float probe of DESIGN.md §4.4: when a device opens, one small self-test dispatch runs a
 * hand-written GLSL kernel over a few thousand fixed f32 triples and compares its results with
 * the host's correctly rounded ones, to learn whether fma() is fused, whether '/' and sqrt() are
 * correctly rounded, and whether subnormal results are kept; and a second one whether the
 * driver's compiler keeps IEEE special values when it folds constant operands and selects between
 * constants, and whether the driver ends long loops on its own. The code generator lowers by these
 * findings, and the device profile reports them.
 *
 * Thread-safety: runs during device open, before the backend is shared.
 */
#ifndef VY_BACKEND_VULKAN_VK_PROBE_H
#define VY_BACKEND_VULKAN_VK_PROBE_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "vk_exec.h"
#include "vk_pipeline.h"
#include "vk_shader.h"

struct vy_vk_probe {
	bool fma_fused;
	bool div_exact;
	bool sqrt_exact;
	bool keeps_subnormals;
	/* every subnormal product and sum came back as the zero of its sign */
	bool flushes_subnormals;
	bool fold_exact;   /* add, sub, mul with constant operands keep +-0, inf, NaN */
	bool select_exact; /* a select or an if between two constant words keeps their bits */
	/* Loop iterations one invocation ran of a loop of 2^20 before the driver ended it: the
	 * loop passes the driver allows an invocation, over all its loops; 0: no end was seen. */
	uint32_t loop_passes;
	uint32_t samples;   /* triples checked */
	uint32_t fma_diffs; /* results that differ from the host's, per operation */
	uint32_t div_diffs;
	uint32_t sqrt_diffs;
	uint32_t subnormal_flushed;
	uint32_t fold_diffs;   /* results of the constant-operand kernel that differ from IEEE */
	uint32_t select_diffs; /* selects between constants that lost their bits */
	/* Products of vy_fmulq's probe: those the device may flush before they round to 2^-126,
	 * those of which it did not set the flag, and the flags set where an operand is zero or
	 * the product 2^-125 or more (needless: they cost a speculated loop its second run). */
	uint32_t flag_tried;
	uint32_t flag_misses;
	uint32_t flag_needless;
	/* Triples of vy_ffmaq's probe whose result or flag is prescribed (vk_probe.c), those that
	 * broke it, and the flags set where the exact result was 0 or normal (needless). Where fma
	 * is not fused the helper is never used, and its misses are expected. */
	uint32_t fma_flag_tried;
	uint32_t fma_flag_misses;
	uint32_t fma_flag_needless;
};

/*
 * The float probe's questions and its judgement, for tests. vy__vk_probe_triples writes the
 * VY__VK_PROBE_SAMPLES random triples (a, b, c) and then IEEE's special cases of fma into t
 * (3 floats each; room for vy__vk_probe_count() triples). vy__vk_probe_judge fills the findings of
 * the first kernel in *out from a device's answers, VY__VK_PROBE_OUT words per triple: fma(a, b,
 * c), a / b, sqrt(|a|), a * b and a + c.
 */
#define VY__VK_PROBE_SAMPLES 4096u
#define VY__VK_PROBE_OUT 5u
uint32_t vy__vk_probe_count(void);
void vy__vk_probe_triples(float *t);
void vy__vk_probe_judge(const float *t, const uint32_t *res, struct vy_vk_probe *out);

/* Run the probe on the device behind `x`. Errors: those of compiling and dispatching. */
int vy__vk_probe_run(struct vy_vk_exec *x, struct vy_vk_pipelines *pipes, struct vy_vk_compiler *cc,
	struct vy_vk_probe *out, struct vy_err *err);

#endif
