/*
 * The code the backend runs, as text (vulkan.h, vy_vulkan_emit). A profile is the set of values
 * the backend hands the code generator and the validator when a device opens (vk_backend.c): the
 * code generator's options and the capabilities. Programs go through the steps of kernel_build
 * (vk_kernel.c): whole-program validation and binding plan, the grid_sync split, and per segment
 * validation, the math-library lowering where needed, code generation and the backend's own
 * shader compiler.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "validate.h"
#include "vk_backend.h"
#include "vk_codegen_internal.h"
#include "vmath.h"

struct vy_vulkan_profile {
	char name[16];
	char about[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE + VK_MAX_DRIVER_NAME_SIZE + 16];
	struct vy_vk_codegen_options cg;
	struct vy_caps caps;
};

static const struct vy_vulkan_profile named[] = {
	{
		.name = "lavapipe",
		.about = "Mesa lavapipe, as its float probe finds it",
		.cg =
			{
				.math = {.fma_fused = false,
					.div_exact = true,
					.sqrt_exact = true,
					.has_f64 = true,
					.fold_exact = false,
					.select_exact = false,
					.product_flag = true},
				.subgroups = true,
				.subgroup_size = 8,
				.loop_passes = 65535,
				.coarse = true,
			},
		.caps =
			{
				.subgroups = true,
				.max_workgroup_invocations = 1024,
				.max_workgroup_size = {1024, 1024, 1024},
				.max_shared_bytes = 32768,
			},
	},
	{
		.name = "nvidia",
		.about = "NVIDIA H100 and H200, as their float probe finds them",
		.cg =
			{
				.math = {.fma_fused = true,
					.div_exact = false,
					.sqrt_exact = false,
					.has_f64 = true,
					.fold_exact = true,
					.select_exact = true,
					.flushes_subnormals = true,
					.product_flag = true},
				.subgroups = true,
				.subgroup_size = 32,
				.coarse = true,
			},
		.caps =
			{
				.subgroups = true,
				.max_workgroup_invocations = 1024,
				.max_workgroup_size = {1024, 1024, 64},
				.max_shared_bytes = 49152,
			},
	},
};

static struct vy_vulkan_profile *profile_new(void)
{
	struct vy_vulkan_profile *p = calloc(1, sizeof(*p));
	if (!p) {
		fprintf(stderr, "vyred: out of memory for a float profile\n");
		abort();
	}
	return p;
}

/* The profile of an open backend: what vk_backend.c and fill_caps (vk_kernel.c) give it. */
static void profile_of_device(struct vy__vk_backend *b, struct vy_vulkan_profile *p)
{
	const VkPhysicalDeviceLimits *l = &b->dev.props.limits;
	snprintf(p->name, sizeof(p->name), "device");
	snprintf(p->about, sizeof(p->about), "%s, driver %s", b->dev.props.deviceName,
		b->dev.driver_name);
	p->cg = b->cg;
	p->caps.subgroups = b->subgroups;
	p->caps.max_workgroup_invocations = l->maxComputeWorkGroupInvocations;
	for (int i = 0; i < 3; i++) {
		p->caps.max_workgroup_size[i] = l->maxComputeWorkGroupSize[i];
	}
	p->caps.max_shared_bytes = l->maxComputeSharedMemorySize;
}

int vy_vulkan_profile_get(
	const char *name, uint32_t device_index, struct vy_vulkan_profile **out, struct vy_err *err)
{
	*out = NULL;
	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
		if (strcmp(name, named[i].name) == 0) {
			*out = profile_new();
			**out = named[i];
			return 0;
		}
	}
	if (strcmp(name, "device") != 0) {
		return vy_err_set(err, VY_E_BAD_REQUEST, NULL,
			"name one of the profiles " VY_VULKAN_PROFILE_NAMES,
			"there is no float profile \"%s\"", name);
	}
	struct vy_vulkan_options opts = {.device_index = device_index};
	struct vy_backend *b = NULL;
	int rc = vy_vulkan_backend_create(&opts, &b, err);
	if (rc) {
		return rc;
	}
	*out = profile_new();
	profile_of_device(vy__vk_from(b), *out);
	vy_backend_destroy(b);
	return 0;
}

void vy_vulkan_profile_free(struct vy_vulkan_profile *profile)
{
	free(profile);
}

static const char *yes_no(bool b)
{
	return b ? "yes" : "no";
}

static void describe(struct vy__vk_str *out, const char *c, const struct vy_vulkan_profile *p)
{
	const struct vy_vk_math *m = &p->cg.math;
	vy__vk_str_addf(out, "%s float profile %s: %s\n", c, p->name, p->about);
	vy__vk_str_addf(out,
		"%s   fma() fused: %s; '/' correctly rounded: %s; sqrt() correctly rounded: %s; "
		"shaderFloat64: %s\n",
		c, yes_no(m->fma_fused), yes_no(m->div_exact), yes_no(m->sqrt_exact),
		yes_no(m->has_f64));
	vy__vk_str_addf(out,
		"%s   constant operands folded exactly: %s; selects between constants exact: %s; "
		"subnormal sums and products flushed: %s\n",
		c, yes_no(m->fold_exact), yes_no(m->select_exact), yes_no(m->flushes_subnormals));
	vy__vk_str_addf(out, "%s   flags of speculated products and fmas sound: %s\n", c,
		yes_no(m->product_flag));
	vy__vk_str_addf(out, "%s   subgroup operations: %s (%u lanes)\n", c,
		yes_no(p->cg.subgroups), p->cg.subgroup_size);
	if (p->cg.loop_passes > 0) {
		vy__vk_str_addf(
			out, "%s   loop passes per invocation: at most %u\n", c, p->cg.loop_passes);
	} else {
		vy__vk_str_addf(out, "%s   loop passes per invocation: no limit found\n", c);
	}
	vy__vk_str_addf(out,
		"%s   workgroups: %u invocations, %u x %u x %u; shared memory: %u bytes\n", c,
		p->caps.max_workgroup_invocations, p->caps.max_workgroup_size[0],
		p->caps.max_workgroup_size[1], p->caps.max_workgroup_size[2],
		p->caps.max_shared_bytes);
}

/* Append the text of one segment: its GLSL, or its SPIR-V disassembled (through the optimizer
 * when `optimize`, as the backend compiles a coarse form). */
static int emit_segment(struct vy_vk_compiler *cc, const char *glsl, bool spirv, bool optimize,
	struct vy__vk_str *out, struct vy_err *err)
{
	if (!spirv) {
		vy__vk_str_add(out, glsl);
		return 0;
	}
	uint32_t *words = NULL;
	size_t n_words = 0;
	int rc = vy__vk_compile_glsl(
		cc, glsl, strlen(glsl), "kernel.comp", optimize, &words, &n_words, err);
	char *text = NULL;
	if (rc == 0) {
		rc = vy__vk_disassemble_spirv(words, n_words, &text, err);
	}
	if (rc == 0) {
		struct vy_err verdict = {0};
		if (vy__vk_validate_spirv(words, n_words, &verdict) == 0) {
			vy__vk_str_add(out, "; spirv-val: valid\n");
		} else {
			vy__vk_str_addf(out, "; spirv-val: %s\n", verdict.message);
		}
		vy__vk_str_add(out, text);
	}
	free(text);
	free(words);
	return rc;
}

/* Validate, lower and generate one segment, as build_segment (vk_kernel.c) does. */
static int segment_glsl(const struct vy_program *view, const struct vy_vulkan_profile *p,
	char **glsl, struct vy_vk_shader_layout *layout, struct vy_err *err)
{
	struct vy_program *seg = vy_program_clone(view);
	int rc = vy_validate_first(seg, &p->caps, err);
	if (rc == 0 && vy_vmath_needed(seg)) {
		rc = vy_vmath_lower(seg, err);
	}
	if (rc == 0) {
		rc = vy_vk_codegen(seg, &p->cg, glsl, layout, err);
	}
	vy_program_destroy(seg);
	return rc;
}

int vy_vulkan_emit(const struct vy_program *program, const struct vy_vulkan_profile *profile,
	bool spirv, char **text, struct vy_err *err)
{
	*text = NULL;
	const char *c = spirv ? ";" : "//";
	struct vy_program *whole = vy_program_clone(program);
	struct vy_binding_plan *plan = NULL;
	int rc = vy_validate_first(whole, &profile->caps, err);
	if (rc == 0) {
		rc = vy_binding_plan_build(whole, &plan, err);
	}
	vy_binding_plan_destroy(plan);
	if (rc) {
		vy_program_destroy(whole);
		return rc;
	}
	struct vy_grid_sync_split split;
	vy_grid_sync_split(whole, &split);
	struct vy_vk_compiler *cc = spirv ? vy__vk_compiler_create() : NULL;
	struct vy__vk_str out = {0};
	describe(&out, c, profile);
	for (uint32_t s = 0; s < split.len && rc == 0; s++) {
		char *glsl = NULL;
		struct vy_vk_shader_layout layout;
		rc = segment_glsl(split.segments[s], profile, &glsl, &layout, err);
		if (rc) {
			if (split.len > 1 && err) {
				err->code = err->code ? err->code : rc;
				vy_grid_sync_segment_error(&split, s, err);
			}
			break;
		}
		vy__vk_str_addf(&out,
			"%s grid_sync segment %u of %u: %u buffer binding(s), %u spec constant(s), "
			"needs shaderFloat64: %s, subgroup features 0x%x\n",
			c, s + 1, split.len, layout.n_bindings, layout.n_spec,
			yes_no(layout.uses_f64), layout.subgroup_features);
		rc = emit_segment(cc, glsl, spirv, profile->cg.coarse && layout.coarse, &out, err);
		free(glsl);
	}
	vy__vk_compiler_destroy(cc);
	vy_grid_sync_split_finish(&split);
	vy_program_destroy(whole);
	if (rc) {
		vy__vk_str_finish(&out);
		return rc;
	}
	*text = out.data;
	return 0;
}
