/*
 * The code generator (backend/vulkan/vk_codegen.h): every example program of the repository
 * (tests/programs, the programs of docs/ir.md, the conformance corpus) becomes GLSL that shaderc
 * compiles without a warning and whose SPIR-V passes the validator for Vulkan 1.2, for each math
 * profile a device can report; the generated text holds the bounds checks, canonicalizations and
 * exact emulations that the semantics need; the interface (bindings, spec constants, trap
 * sidecar) is what the runtime relies on; unsupported programs fail with the documented codes.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <json-c/json.h>
#include <math.h>
#include <shaderc/shaderc.h>
#include <spirv-tools/libspirv.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bits.h"
#include "codec.h"
#include "err.h"
#include "grid_sync.h"
#include "ir.h"
#include "node_path.h"
#include "validate.h"
#include "examples.h"
#include "vk_codegen.h"
#include "vmath.h"

/*
 * What the probe reports on lavapipe, on NVIDIA, and on a device with neither fma nor doubles
 * (whose compiler folds constants exactly but not selects, the one mix the others lack).
 */
static const struct vy_vk_codegen_options profiles[] = {
	{.math = {.fma_fused = false,
		 .div_exact = true,
		 .sqrt_exact = true,
		 .has_f64 = true,
		 .fold_exact = false,
		 .select_exact = false},
		.subgroups = true,
		.subgroup_size = 8,
		.loop_passes = 65535},
	{.math = {.fma_fused = true,
		 .div_exact = false,
		 .sqrt_exact = false,
		 .has_f64 = true,
		 .fold_exact = true,
		 .select_exact = true},
		.subgroups = true,
		.subgroup_size = 32},
	{.math = {.fma_fused = false,
		 .div_exact = false,
		 .sqrt_exact = false,
		 .has_f64 = false,
		 .fold_exact = true,
		 .select_exact = false},
		.subgroups = true,
		.subgroup_size = 16},
};
static const char *const profile_names[] = {"lavapipe", "nvidia", "integer"};
#define N_PROFILES (sizeof(profiles) / sizeof(profiles[0]))

/* The result of compiling a shader: status, warnings and the message log, and the module. */
struct compiled {
	shaderc_compilation_status status;
	size_t warnings;
	char log[4096];
	uint32_t *words;
	size_t n_words;
};

/* One compiler per test process: glslang builds its builtin tables on the first compile. */
static shaderc_compiler_t compiler(void)
{
	static shaderc_compiler_t c;
	if (!c) {
		c = shaderc_compiler_initialize();
		cr_assert_not_null(c);
	}
	return c;
}

static void compile(const char *glsl, struct compiled *out)
{
	shaderc_compiler_t c = compiler();
	shaderc_compile_options_t o = shaderc_compile_options_initialize();
	shaderc_compile_options_set_target_env(
		o, shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_2);
	shaderc_compilation_result_t r = shaderc_compile_into_spv(
		c, glsl, strlen(glsl), shaderc_compute_shader, "vyre.comp", "main", o);
	memset(out, 0, sizeof(*out));
	out->status = shaderc_result_get_compilation_status(r);
	out->warnings = shaderc_result_get_num_warnings(r);
	snprintf(out->log, sizeof(out->log), "%s", shaderc_result_get_error_message(r));
	if (out->status == shaderc_compilation_status_success) {
		out->n_words = shaderc_result_get_length(r) / 4;
		out->words = malloc(out->n_words * 4);
		cr_assert_not_null(out->words);
		memcpy(out->words, shaderc_result_get_bytes(r), out->n_words * 4);
	}
	shaderc_result_release(r);
	shaderc_compile_options_release(o);
}

/* The shader compiles; the failure shows the compiler's log and the text. */
static void assert_compiles(const char *glsl)
{
	struct compiled c;
	compile(glsl, &c);
	cr_assert_eq(c.status, shaderc_compilation_status_success, "%s\n%s", c.log, glsl);
	free(c.words);
}

/* spirv-val for Vulkan 1.2; returns NULL when valid, else the validator's message (static). */
static const char *spirv_val(const uint32_t *words, size_t n_words)
{
	static char message[1024];
	spv_context ctx = spvContextCreate(SPV_ENV_VULKAN_1_2);
	spv_const_binary_t bin = {words, n_words};
	spv_diagnostic diag = NULL;
	spv_result_t r = spvValidate(ctx, &bin, &diag);
	const char *result = NULL;
	if (r != SPV_SUCCESS) {
		snprintf(message, sizeof(message), "%s", diag ? diag->error : "invalid module");
		result = message;
	}
	spvDiagnosticDestroy(diag);
	spvContextDestroy(ctx);
	return result;
}

/*
 * The runtime's compile step as the test sees it: KERNEL_COMPILE_FAILED with shaderc's log and
 * the text of the first line that the log names.
 */
static int compile_or_fail(const char *glsl, struct compiled *out, struct vy_err *err)
{
	compile(glsl, out);
	if (out->status == shaderc_compilation_status_success) {
		return 0;
	}
	unsigned line = 0;
	const char *at = strstr(out->log, "vyre.comp:");
	if (at) {
		line = (unsigned)strtoul(at + strlen("vyre.comp:"), NULL, 10);
	}
	const char *text = glsl;
	for (unsigned i = 1; i < line && text; i++) {
		text = strchr(text, '\n');
		text = text ? text + 1 : NULL;
	}
	int len = 0;
	if (text && line > 0) {
		const char *end = strchr(text, '\n');
		len = end ? (int)(end - text) : (int)strlen(text);
	}
	return vy_err_set(err, VY_E_KERNEL_COMPILE_FAILED, NULL,
		"report the program and this message as a code generator bug", "line %u: %.*s: %s",
		line, len, len ? text : "", out->log);
}

/* Generate, compile and validate one program for every profile, in its plain and its coarse form
 * (vk_coarse.c; a text that an earlier profile or form already gave is not compiled twice). */
static void check_program(struct vy_program *p, const char *what)
{
	struct vy_err err = {0};
	cr_assert_eq(
		vy_validate_first(p, NULL, &err), 0, "%s: %s (at %s)", what, err.message, err.at);
	if (vy_vmath_needed(p)) {
		cr_assert_eq(vy_vmath_lower(p, &err), 0, "%s: %s", what, err.message);
	}
	struct vy_grid_sync_split split = {0};
	vy_grid_sync_split(p, &split);
	for (uint32_t s = 0; s < split.len; s++) {
		char *done[2 * N_PROFILES] = {0};
		for (size_t i = 0; i < 2 * N_PROFILES; i++) {
			size_t k = i / 2;
			struct vy_vk_codegen_options opts = profiles[k];
			opts.coarse = i % 2 == 1;
			const char *form = opts.coarse ? "coarse" : "plain";
			char *glsl = NULL;
			struct vy_vk_shader_layout layout;
			int rc = vy_vk_codegen(split.segments[s], &opts, &glsl, &layout, &err);
			cr_assert_eq(rc, 0, "%s segment %u, %s profile, %s: %s (at %s)", what, s,
				profile_names[k], form, err.message, err.at);
			done[i] = glsl;
			bool seen = false;
			for (size_t j = 0; j < i; j++) {
				seen = seen || strcmp(done[j], glsl) == 0;
			}
			if (seen) {
				continue;
			}
			struct compiled c;
			rc = compile_or_fail(glsl, &c, &err);
			cr_assert_eq(rc, 0, "%s segment %u, %s profile, %s: %s", what, s,
				profile_names[k], form, err.message);
			cr_assert_eq(c.warnings, 0, "%s, %s profile, %s: %s", what,
				profile_names[k], form, c.log);
			const char *invalid = spirv_val(c.words, c.n_words);
			cr_assert_null(invalid, "%s segment %u, %s profile, %s: spirv-val: %s",
				what, s, profile_names[k], form, invalid);
			free(c.words);
		}
		for (size_t i = 0; i < 2 * N_PROFILES; i++) {
			free(done[i]);
		}
	}
	vy_grid_sync_split_finish(&split);
}

static void check_json(const char *text, const char *what)
{
	struct vy_program *p = NULL;
	struct vy_err err = {0};
	cr_assert_eq(
		vy_program_from_json(text, strlen(text), &p, &err), 0, "%s: %s", what, err.message);
	check_program(p, what);
	vy_program_destroy(p);
}

static int check_dir(const char *dir, bool wrapped)
{
	DIR *d = opendir(dir);
	cr_assert_not_null(d, "no %s", dir);
	int n = 0;
	struct dirent *ent;
	while ((ent = readdir(d))) {
		size_t len = strlen(ent->d_name);
		if (len < 6 || strcmp(ent->d_name + len - 5, ".json") != 0) {
			continue;
		}
		char path[2048];
		snprintf(path, sizeof(path), "%s/%s", dir, ent->d_name);
		char *text = vy_test_read_file(path, NULL);
		cr_assert_not_null(text, "cannot read %s", path);
		if (wrapped) {
			/* A conformance case holds its program under "program". */
			json_object *doc = json_tokener_parse(text);
			json_object *prog = NULL;
			cr_assert(doc && json_object_object_get_ex(doc, "program", &prog),
				"%s has no program", path);
			check_json(json_object_to_json_string_ext(prog, JSON_C_TO_STRING_PLAIN),
				ent->d_name);
			json_object_put(doc);
		} else {
			check_json(text, ent->d_name);
		}
		free(text);
		n++;
	}
	closedir(d);
	return n;
}

Test(codegen, example_programs_compile_and_pass_spirv_val_for_every_profile)
{
	char dir[1024];
	snprintf(dir, sizeof(dir), "%s/tests/programs", VY_SOURCE_ROOT);
	int n = check_dir(dir, false);
	cr_assert_geq(n, 10, "expected at least 10 example programs, found %d", n);
}

Test(codegen, conformance_programs_compile_and_pass_spirv_val_for_every_profile)
{
	char dir[1024];
	snprintf(dir, sizeof(dir), "%s/tests/conformance/cases", VY_SOURCE_ROOT);
	int n = check_dir(dir, true);
	cr_assert_geq(n, 10, "expected the conformance corpus, found %d cases", n);
}

static void check_doc(const char *json, const char *what, void *ctx)
{
	check_json(json, what);
}

Test(codegen, ir_reference_programs_compile_and_pass_spirv_val_for_every_profile)
{
	int n = vy_test_each_ir_doc_program(VY_SOURCE_ROOT, check_doc, NULL);
	cr_assert_geq(n, 20, "expected the examples of docs/ir.md, found %d", n);
}

/* Generate the GLSL of a JSON program (validated and lowered) for one profile; the layout borrows
 * names from the program, which is stored in *keep when given and destroyed otherwise. */
static char *glsl_kept(const char *json, const struct vy_vk_codegen_options *opts,
	struct vy_vk_shader_layout *layout, struct vy_program **keep)
{
	struct vy_program *p = NULL;
	struct vy_err err = {0};
	cr_assert_eq(vy_program_from_json(json, strlen(json), &p, &err), 0, "%s", err.message);
	cr_assert_eq(vy_validate_first(p, NULL, &err), 0, "%s", err.message);
	cr_assert_eq(vy_vmath_lower(p, &err), 0, "%s", err.message);
	char *glsl = NULL;
	int rc = vy_vk_codegen(p, opts, &glsl, layout, &err);
	cr_assert_eq(rc, 0, "%s", err.message);
	if (keep) {
		*keep = p;
	} else {
		vy_program_destroy(p);
	}
	return glsl;
}

static char *glsl_of(const char *json, const struct vy_vk_codegen_options *opts,
	struct vy_vk_shader_layout *layout)
{
	return glsl_kept(json, opts, layout, NULL);
}

/* The GLSL of `json` for NVIDIA's profile with one of its probe's findings (the bool at
 * `field` of struct vy_vk_math) set to `value`. */
static char *glsl_nvidia_but(const char *json, size_t field, bool value)
{
	struct vy_vk_codegen_options opts = profiles[1];
	memcpy((char *)&opts.math + field, &value, sizeof(value));
	struct vy_vk_shader_layout layout;
	return glsl_of(json, &opts, &layout);
}

static const char tiny[] =
	"{\"vyre\": 1, \"workgroup_size\": [64, 1, 1], \"buffers\": ["
	"{\"name\": \"x\", \"binding\": 0, \"access\": \"read_only\", \"type\": \"f32\", "
	"\"count\": 0},"
	"{\"name\": \"y\", \"binding\": 1, \"access\": \"write_only\", \"type\": \"f32\", "
	"\"count\": 64}],"
	"\"entry\": [[\"let\", \"i\", [\"gid\", 0]],"
	"[\"store\", \"y\", [\"var\", \"i\"], [\"mul\", [\"load\", \"x\", [\"var\", \"i\"]], "
	"[\"f32\", 2.0]]]]}";

Test(codegen, loads_and_stores_are_bounds_checked_and_floats_canonicalized)
{
	struct vy_vk_shader_layout layout;
	char *glsl = glsl_of(tiny, &profiles[0], &layout);
	/* Each buffer's length is read once (0 for a binding marked empty) and guards each access.
	 */
	cr_assert(strstr(glsl, "uint vy_len0 = (vy_pc.empty_bindings & 1u) != 0u ? 0u : "
			       "uint(b0_x.d.length());"),
		"%s", glsl);
	cr_assert(strstr(glsl, "if (v0_i < vy_len0) {"), "load not bounds-checked:\n%s", glsl);
	cr_assert(strstr(glsl, "= vy_canon(b0_x.d[v0_i]);"), "load not canonicalized:\n%s", glsl);
	cr_assert(strstr(glsl, "if (v0_i < vy_len1) {"), "store not bounds-checked:\n%s", glsl);
	cr_assert(strstr(glsl, "precise float r = uintBitsToFloat(a) * uintBitsToFloat(b);"), "%s",
		glsl);
	/* lavapipe keeps subnormals: the product is flushed, and its NaN canonicalized only where
	 * it is stored */
	cr_assert(strstr(glsl, "uint x = vy_flush(floatBitsToUint(r));"), "%s", glsl);
	cr_assert(strstr(glsl, "\tb1_y.d[v0_i] = vy_canon(t"), "%s", glsl);
	cr_assert_null(strstr(glsl, "isnan("), "NaN tests must use the bits:\n%s", glsl);
	cr_assert(strstr(glsl, "0x40000000u"), "the literal 2.0 as bits:\n%s", glsl);
	free(glsl);
}

/* A program of `let i = gid 0` and then `entry`, over x (read) and y (read and written). */
static char *elementwise_variant(const char *entry)
{
	static const char head[] =
		"{\"vyre\": 1, \"workgroup_size\": [64, 1, 1], \"buffers\": ["
		"{\"name\": \"x\", \"binding\": 0, \"access\": \"read_only\", \"type\": "
		"\"u32\", \"count\": 0},"
		"{\"name\": \"y\", \"binding\": 1, \"access\": \"read_write\", \"type\": "
		"\"u32\", \"count\": 0}],"
		"\"entry\": [[\"let\", \"i\", [\"gid\", 0]], ";
	size_t n = strlen(head) + strlen(entry) + 3;
	char *text = malloc(n);
	cr_assert_not_null(text);
	snprintf(text, n, "%s%s]}", head, entry);
	return text;
}

/* Whether the program is elementwise (layout.coarse) on `opts`, and its coarse form compiles. */
static bool coarse_on(const char *entry, const struct vy_vk_codegen_options *base)
{
	char *json = elementwise_variant(entry);
	struct vy_vk_codegen_options opts = *base;
	opts.coarse = true;
	struct vy_vk_shader_layout layout;
	char *glsl = glsl_of(json, &opts, &layout);
	cr_assert_eq(layout.coarse, strstr(glsl, "void vy_main(") != NULL, "%s", glsl);
	assert_compiles(glsl);
	free(glsl);
	free(json);
	return layout.coarse;
}

Test(codegen, elementwise_programs_get_a_coarse_form_and_no_other_does)
{
	const struct vy_vk_codegen_options *nv = &profiles[1];
	/* y[i] = x[i] + y[i]: y's element is a register, read before and written back after the
	 * calls; the plain form is the shader as it was. */
	static const char add[] = "[\"store\", \"y\", [\"var\", \"i\"], [\"add\", "
				  "[\"load\", \"x\", [\"var\", \"i\"]], [\"load\", \"y\", "
				  "[\"gid\", 0]]]]";
	cr_assert(coarse_on(add, nv));
	char *json = elementwise_variant(add);
	struct vy_vk_codegen_options opts = *nv;
	struct vy_vk_shader_layout layout;
	char *plain = glsl_of(json, &opts, &layout);
	cr_assert(layout.coarse, "elementwise whichever form is asked for");
	cr_assert_null(strstr(plain, "vy_main"), "%s", plain);
	cr_assert_null(strstr(plain, "vy_kc"), "%s", plain);
	opts.coarse = true;
	char *glsl = glsl_of(json, &opts, &layout);
	cr_assert(strstr(glsl, "layout(constant_id = 67) const uint vy_kc = 1u;"), "%s", glsl);
	cr_assert(strstr(glsl, "void vy_main(uvec3 vy_gid, inout uint vy_st, inout uint vy_r0, "
			       "inout uint vy_r1)"),
		"%s", glsl);
	cr_assert(strstr(glsl,
			  "\tif (vy_on3 && vy_g3.x < vy_len1) {\n\t\tvy_r1_3 = b1_y.d[vy_g3.x];"),
		"%s", glsl);
	cr_assert(strstr(glsl, "\t\tvy_r1 = "), "a store in range writes the register:\n%s", glsl);
	cr_assert(strstr(glsl, "\t\tvy_st |= 2u;"), "%s", glsl);
	cr_assert(strstr(glsl, "\tif ((vy_st3 & 2u) != 0u) {\n\t\tb1_y.d[vy_g3.x] = vy_r1_3;"),
		"%s", glsl);
	cr_assert(
		strstr(glsl, "\tbool vy_on3 = vy_k > 3u && vy_w0 + 3u < vy_pc.lwg_x;"), "%s", glsl);
	cr_assert_null(strstr(glsl, "vy_r2"), "x at another index stays a load:\n%s", glsl);
	free(glsl);
	free(plain);
	free(json);

	/* x is never written, so it may be read anywhere. */
	cr_assert(coarse_on("[\"store\", \"y\", [\"var\", \"i\"], [\"load\", \"x\", "
			    "[\"add\", [\"var\", \"i\"], [\"u32\", 1]]]]",
		nv));
	/* Each of these lets invocations meet, tells workgroups apart, or touches a written
	 * buffer away from gid.x. */
	static const char *const not_elementwise[] = {
		"[\"store\", \"y\", [\"add\", [\"var\", \"i\"], [\"u32\", 1]], [\"u32\", 1]]",
		"[\"store\", \"y\", [\"var\", \"i\"], [\"load\", \"y\", [\"u32\", 0]]]",
		"[\"store\", \"y\", [\"var\", \"i\"], [\"wgid\", 0]]",
		"[\"store\", \"y\", [\"var\", \"i\"], [\"gid\", 1]]",
		"[\"barrier\"], [\"store\", \"y\", [\"var\", \"i\"], [\"u32\", 1]]",
		"[\"let\", \"o\", [\"atomic\", \"add\", \"y\", [\"var\", \"i\"], [\"u32\", 1]]]",
		"[\"assign\", \"i\", [\"u32\", 0]], [\"store\", \"y\", [\"var\", \"i\"], [\"u32\", "
		"1]]",
		"[\"let\", \"j\", [\"add\", [\"var\", \"i\"], [\"u32\", 0]]], "
		"[\"store\", \"y\", [\"var\", \"j\"], [\"u32\", 1]]",
	};
	for (size_t i = 0; i < sizeof(not_elementwise) / sizeof(not_elementwise[0]); i++) {
		cr_assert_not(coarse_on(not_elementwise[i], nv), "%s", not_elementwise[i]);
	}
	/* A loop is elementwise where the driver does not end long loops, not on lavapipe, whose
	 * loop budget the logical invocations of one invocation would share. */
	static const char loop[] = "[\"loop\", \"k\", [\"u32\", 0], [\"u32\", 3], "
				   "[[\"store\", \"y\", [\"var\", \"i\"], [\"var\", \"k\"]]]]";
	cr_assert(coarse_on(loop, nv));
	cr_assert_not(coarse_on(loop, &profiles[0]));
	/* A long program spends its time on arithmetic: it keeps the plain form. */
	char longer[4096] = "[\"let\", \"a\", [\"load\", \"x\", [\"var\", \"i\"]]]";
	for (int k = 0; k < 40; k++) {
		size_t n = strlen(longer);
		snprintf(longer + n, sizeof(longer) - n,
			", [\"assign\", \"a\", [\"mul\", [\"var\", \"a\"], [\"u32\", 3]]]");
	}
	size_t n = strlen(longer);
	snprintf(longer + n, sizeof(longer) - n,
		", [\"store\", \"y\", [\"var\", \"i\"], [\"var\", \"a\"]]");
	cr_assert_not(coarse_on(longer, nv));
}

static const char math[] =
	"{\"vyre\": 1, \"workgroup_size\": [64, 1, 1], \"buffers\": ["
	"{\"name\": \"x\", \"binding\": 0, \"access\": \"read_only\", \"type\": \"f32\", "
	"\"count\": 0},"
	"{\"name\": \"y\", \"binding\": 1, \"access\": \"write_only\", \"type\": \"f32\", "
	"\"count\": 64}],"
	"\"entry\": [[\"let\", \"v\", [\"load\", \"x\", [\"gid\", 0]]],"
	"[\"let\", \"q\", [\"div\", [\"var\", \"v\"], [\"f32\", 3.0]]],"
	"[\"let\", \"r\", [\"sqrt\", [\"var\", \"q\"]]],"
	"[\"store\", \"y\", [\"gid\", 0], [\"fma\", [\"var\", \"r\"], [\"var\", \"v\"], [\"var\", "
	"\"q\"]]]]}";

Test(codegen, each_profile_gets_builtins_where_exact_and_emulations_elsewhere)
{
	struct vy_vk_shader_layout layout;
	/* lavapipe: builtin / and sqrt, fma through doubles rounded to odd. */
	char *glsl = glsl_of(math, &profiles[0], &layout);
	cr_assert(strstr(glsl, "uintBitsToFloat(a) / uintBitsToFloat(b)"), "%s", glsl);
	cr_assert(strstr(glsl, "sqrt(uintBitsToFloat(x))"), "%s", glsl);
	cr_assert(strstr(glsl, "precise double p"), "%s", glsl);
	cr_assert_null(strstr(glsl, "fma(uintBitsToFloat"), "lavapipe's fma() is not fused");
	cr_assert(layout.uses_f64);
	free(glsl);
	/* NVIDIA: native fma, exact division and square root from the bits. */
	glsl = glsl_of(math, &profiles[1], &layout);
	cr_assert(strstr(glsl, "fma(uintBitsToFloat(a), uintBitsToFloat(b), uintBitsToFloat(c))"),
		"%s", glsl);
	cr_assert_null(strstr(glsl, "uintBitsToFloat(a) / uintBitsToFloat(b)"), "%s", glsl);
	cr_assert_null(strstr(glsl, "sqrt(uintBitsToFloat"), "%s", glsl);
	cr_assert(strstr(glsl, "uint d = r / nb;"), "%s", glsl);
	cr_assert_null(strstr(glsl, "double"), "%s", glsl);
	cr_assert_not(layout.uses_f64);
	free(glsl);
	/* Neither fused fma nor doubles: fma from the bits, no double anywhere. */
	glsl = glsl_of(math, &profiles[2], &layout);
	cr_assert(strstr(glsl, "return vy_ffma_exact(a, b, c);"), "%s", glsl);
	cr_assert_null(strstr(glsl, "double"), "%s", glsl);
	cr_assert_not(layout.uses_f64);
	free(glsl);
}

static const char selects[] =
	"{\"vyre\": 1, \"workgroup_size\": [64, 1, 1], \"buffers\": ["
	"{\"name\": \"x\", \"binding\": 0, \"access\": \"read_only\", \"type\": \"f32\", "
	"\"count\": 0},"
	"{\"name\": \"y\", \"binding\": 1, \"access\": \"write_only\", \"type\": \"f32\", "
	"\"count\": 64}],"
	"\"entry\": [[\"let\", \"v\", [\"load\", \"x\", [\"gid\", 0]]],"
	"[\"let\", \"c\", [\"lt\", [\"var\", \"v\"], [\"f32\", 0.0]]],"
	"[\"let\", \"t\", [\"f32\", 2.0]],"
	"[\"if\", [\"var\", \"c\"], [[\"assign\", \"t\", [\"f32\", -0.0]]], "
	"[[\"assign\", \"c\", [\"bool\", false]]]],"
	"[\"store\", \"y\", [\"gid\", 0], [\"add\", [\"var\", \"t\"], "
	"[\"select\", [\"var\", \"c\"], [\"f32\", -0.0], [\"f32\", 1.0]]]]]}";

Test(codegen, constant_folding_and_selects_are_lowered_by_what_the_probe_found)
{
	struct vy_vk_shader_layout layout;
	/* lavapipe folds both inexactly: integer tests of add's special operands, and the words a
	 * select chooses or an assign stores pass through the opaque zero (bools need not). */
	char *glsl = glsl_of(selects, &profiles[0], &layout);
	cr_assert(strstr(glsl, "\tuint vy_z = vy_pc.opaque_zero;\n"), "%s", glsl);
	cr_assert(strstr(glsl, "\tif (ma > 0x7F800000u || mb > 0x7F800000u) {\n"), "%s", glsl);
	/* Each word is made opaque with itself as the operand, so the two arms of a select share
	 * no operation the driver could take out of it. */
	cr_assert(strstr(glsl, " = 0x80000000u + (0x80000000u & vy_z);"), "%s", glsl);
	cr_assert(strstr(glsl, " = 0x3F800000u + (0x3F800000u & vy_z);"), "%s", glsl);
	cr_assert(strstr(glsl, " = false;"), "%s", glsl);
	cr_assert_null(strstr(glsl, "false + "), "%s", glsl);
	cr_assert_null(strstr(glsl, "| vy_z"), "%s", glsl);
	cr_assert(strstr(glsl, " = v1_c ? t3 : t4;"), "%s", glsl);
	free(glsl);
	/* NVIDIA as assumed: the native add decides special operands, and no opaque zero. */
	glsl = glsl_of(selects, &profiles[1], &layout);
	cr_assert_null(strstr(glsl, "vy_z"), "%s", glsl);
	cr_assert_null(strstr(glsl, "ma > 0x7F800000u"), "%s", glsl);
	cr_assert(
		strstr(glsl, "uint vy_fadd(uint a, uint b)\n{\n\tprecise float r = "), "%s", glsl);
	cr_assert(strstr(glsl, " ? 0x80000000u : 0x3F800000u;"), "%s", glsl);
	free(glsl);
	/* Each finding decides its own lowering. */
	glsl = glsl_of(selects, &profiles[2], &layout);
	cr_assert(strstr(glsl, " = 0x80000000u + (0x80000000u & vy_z);"), "%s", glsl);
	cr_assert_null(strstr(glsl, "ma > 0x7F800000u"), "%s", glsl);
	free(glsl);
}

Test(codegen, a_compile_error_names_the_failing_line)
{
	struct vy_vk_shader_layout layout;
	char *glsl = glsl_of(tiny, &profiles[0], &layout);
	/* Break the statement that multiplies: the log must point at that line. */
	char *at = strstr(glsl, "= vy_fmul(");
	cr_assert_not_null(at);
	memcpy(at, "= vy_fmux(", 10);
	unsigned line = 1;
	for (const char *c = glsl; c < at; c++) {
		line += *c == '\n';
	}
	struct compiled c;
	struct vy_err err = {0};
	int rc = compile_or_fail(glsl, &c, &err);
	cr_assert_eq(rc, VY_E_KERNEL_COMPILE_FAILED);
	char want[32];
	snprintf(want, sizeof(want), "line %u: ", line);
	cr_assert(strstr(err.message, want), "wanted \"%s\" in: %s", want, err.message);
	cr_assert(strstr(err.message, "vy_fmux("), "the failing line's text: %s", err.message);
	cr_assert(strstr(err.message, "no matching overloaded function") ||
			  strstr(err.message, "vy_fmux"),
		"%s", err.message);
	free(glsl);
}

static const char layout_program[] =
	"{\"vyre\": 1, \"workgroup_size\": [32, 2, 1], \"buffers\": ["
	"{\"name\": \"out\", \"binding\": 7, \"access\": \"read_write\", \"type\": \"u32\", "
	"\"count\": 4, \"output\": true},"
	"{\"name\": \"tile\", \"binding\": 3, \"access\": \"workgroup\", \"type\": \"f32\", "
	"\"count\": 64},"
	"{\"name\": \"params\", \"binding\": 5, \"access\": \"uniform\", \"type\": \"u32\", "
	"\"count\": 4},"
	"{\"name\": \"src\", \"binding\": 1, \"access\": \"read_only\", \"type\": \"i32\", "
	"\"count\": 0}],"
	"\"entry\": [[\"let\", \"a\", [\"spec\", \"zeta\", \"u32\", [\"u32\", 9]]],"
	"[\"let\", \"b\", [\"spec\", \"alpha\", \"f32\", [\"f32\", 1.5]]],"
	"[\"let\", \"c\", [\"spec\", \"zeta\", \"u32\", [\"u32\", 9]]],"
	"[\"let\", \"d\", [\"spec\", \"mid\", \"bool\", [\"bool\", true]]],"
	"[\"store\", \"out\", [\"var\", \"a\"], [\"load\", \"params\", [\"u32\", 0]]]]}";

Test(codegen, layout_lists_bindings_in_binding_order_and_spec_constants_by_name)
{
	struct vy_vk_shader_layout layout;
	struct vy_program *p = NULL;
	char *glsl = glsl_kept(layout_program, &profiles[1], &layout, &p);
	cr_assert_eq(layout.n_bindings, 3, "workgroup buffers have no binding");
	/* src (binding 1, buffer 3), params (5, buffer 2), out (7, buffer 0). */
	uint32_t want_index[] = {3, 2, 0};
	bool want_ro[] = {true, true, false};
	for (uint32_t k = 0; k < 3; k++) {
		cr_assert_eq(layout.bindings[k].vk_binding, k);
		cr_assert_eq(layout.bindings[k].buffer_index, want_index[k], "binding %u", k);
		cr_assert_eq(layout.bindings[k].read_only, want_ro[k], "binding %u", k);
	}
	cr_assert_eq(layout.trap_binding, 3);
	cr_assert_eq(layout.trap_bytes, VY_VK_TRAP_BYTES);
	cr_assert_eq(layout.stop_binding, 4);
	cr_assert(strstr(glsl, "binding = 4) volatile readonly buffer VyStop"), "%s", glsl);
	cr_assert_eq(layout.push_constant_bytes, sizeof(struct vy_vk_push));
	cr_assert_eq(sizeof(struct vy_vk_push), 52);
	cr_assert_eq(layout.n_spec, 3);
	const char *names[] = {"alpha", "mid", "zeta"};
	enum vy_type types[] = {VY_TYPE_F32, VY_TYPE_BOOL, VY_TYPE_U32};
	uint32_t bits[] = {0x3FC00000u, 1, 9};
	for (uint32_t i = 0; i < 3; i++) {
		cr_assert_str_eq(layout.spec[i].name, names[i]);
		cr_assert_eq(layout.spec[i].constant_id, 3 + i);
		cr_assert_eq(layout.spec[i].type, types[i]);
		cr_assert_eq(layout.spec[i].default_bits, bits[i]);
	}
	cr_assert(strstr(glsl, "layout(constant_id = 3) const uint s3_alpha = 1069547520u;"), "%s",
		glsl);
	cr_assert(strstr(glsl, "layout(std430, set = 0, binding = 1) readonly buffer VyBuf2"), "%s",
		glsl);
	cr_assert(strstr(glsl, "layout(std430, set = 0, binding = 3) buffer VyTrap"), "%s", glsl);
	cr_assert(strstr(glsl, "shared uint b1_tile[64];"), "%s", glsl);
	cr_assert(strstr(glsl, "b1_tile[vy_i] = 0u;"), "workgroup memory starts zeroed:\n%s", glsl);
	cr_assert(
		strstr(glsl, "local_size_x = 32, local_size_y = 2, local_size_z = 1"), "%s", glsl);
	cr_assert_eq(layout.subgroup_features, 0);
	free(glsl);
	vy_program_destroy(p);
}

static const char awkward_names[] =
	"{\"vyre\": 1, \"workgroup_size\": [64, 1, 1], \"buffers\": ["
	"{\"name\": \"__buf\", \"binding\": 0, \"access\": \"read_write\", \"type\": \"u32\", "
	"\"count\": 0},"
	"{\"name\": \"main\", \"binding\": 1, \"access\": \"read_only\", \"type\": \"u32\", "
	"\"count\": 0}],"
	"\"entry\": [[\"let\", \"float\", [\"gid\", 0]],"
	"[\"let\", \"a__b_\", [\"spec\", \"__LINE__\", \"u32\", [\"u32\", 1]]],"
	"[\"let\", \"gl_Position\", [\"load\", \"main\", [\"var\", \"float\"]]],"
	"[\"block\", [[\"let\", \"t0\", [\"var\", \"gl_Position\"]],"
	"[\"store\", \"__buf\", [\"var\", \"float\"], [\"add\", [\"var\", \"t0\"], "
	"[\"var\", \"a__b_\"]]]]],"
	"[\"block\", [[\"let\", \"t0\", [\"u32\", 3]],"
	"[\"store\", \"__buf\", [\"var\", \"t0\"], [\"var\", \"t0\"]]]]]}";

Test(codegen, user_names_never_clash_with_glsl_or_generated_names)
{
	struct vy_program *p = NULL;
	struct vy_err err = {0};
	cr_assert_eq(vy_program_from_json(awkward_names, strlen(awkward_names), &p, &err), 0, "%s",
		err.message);
	check_program(p, "awkward names");
	vy_program_destroy(p);
	struct vy_vk_shader_layout layout;
	char *glsl = glsl_of(awkward_names, &profiles[0], &layout);
	cr_assert_null(strstr(glsl, "__"), "a reserved double underscore:\n%s", glsl);
	free(glsl);
}

static const char subgroup_program[] =
	"{\"vyre\": 1, \"workgroup_size\": [64, 1, 1], \"buffers\": ["
	"{\"name\": \"x\", \"binding\": 0, \"access\": \"read_only\", \"type\": \"f32\", "
	"\"count\": 0},"
	"{\"name\": \"y\", \"binding\": 1, \"access\": \"write_only\", \"type\": \"f32\", "
	"\"count\": 64}],"
	"\"entry\": [[\"let\", \"v\", [\"load\", \"x\", [\"gid\", 0]]],"
	"[\"store\", \"y\", [\"gid\", 0], [\"subgroup_reduce\", \"add\", [\"var\", \"v\"]]]]}";

Test(codegen, subgroups_need_the_device_feature_and_sum_floats_in_lane_order)
{
	struct vy_vk_shader_layout layout;
	char *glsl = glsl_of(subgroup_program, &profiles[1], &layout);
	cr_assert(strstr(glsl, "#extension GL_KHR_shader_subgroup_basic : require"), "%s", glsl);
	/* f32 sums are a fold over the active lanes in ascending order, as the reference's. */
	cr_assert(strstr(glsl, "for (uint l = 0u; l < gl_SubgroupSize; ++l) {"), "%s", glsl);
	cr_assert_null(strstr(glsl, "subgroupAdd("), "a builtin f32 sum has no fixed order");
	cr_assert_eq(layout.subgroup_features,
		VY_VK_SUBGROUP_BASIC | VY_VK_SUBGROUP_BALLOT | VY_VK_SUBGROUP_SHUFFLE);
	free(glsl);

	struct vy_program *p = NULL;
	struct vy_err err = {0};
	cr_assert_eq(vy_program_from_json(subgroup_program, strlen(subgroup_program), &p, &err), 0);
	cr_assert_eq(vy_validate_first(p, NULL, &err), 0);
	struct vy_vk_codegen_options no_subgroups = profiles[0];
	no_subgroups.subgroups = false;
	int rc = vy_vk_codegen(p, &no_subgroups, &glsl, &layout, &err);
	cr_assert_eq(rc, VY_E_UNSUPPORTED_FEATURE);
	cr_assert_null(glsl);
	cr_assert_str_eq(err.at, "entry[1].store");
	cr_assert(strstr(err.message, "subgroup"), "%s", err.message);
	cr_assert(err.fix[0] != '\0');
	vy_program_destroy(p);
}

Test(codegen, grid_sync_and_unlowered_math_are_refused)
{
	struct vy_program *p = vy_program_create(NULL, 64, 1, 1);
	vy_program_add_buffer(p, "x", 0, VY_ACCESS_READ_WRITE, VY_TYPE_F32, 0);
	vy_program_set_entry(p, vy_ir_seq(p, vy_ir_barrier(p, VY_ORDER_SEQ_CST),
					vy_ir_barrier(p, VY_ORDER_GRID_SYNC), NULL));
	struct vy_err err = {0};
	cr_assert_eq(vy_validate_first(p, NULL, &err), 0, "%s", err.message);
	char *glsl = NULL;
	struct vy_vk_shader_layout layout;
	cr_assert_eq(
		vy_vk_codegen(p, &profiles[0], &glsl, &layout, &err), VY_E_UNSUPPORTED_FEATURE);
	cr_assert_str_eq(err.at, "entry[1].barrier");
	cr_assert_null(glsl);
	vy_program_destroy(p);

	p = vy_program_create(NULL, 64, 1, 1);
	vy_program_add_buffer(p, "x", 0, VY_ACCESS_READ_WRITE, VY_TYPE_F32, 0);
	vy_program_set_entry(
		p, vy_ir_seq(p,
			   vy_ir_store(p, "x", vy_ir_u32(p, 0),
				   vy_ir_unary(p, VY_UN_EXP, vy_ir_load(p, "x", vy_ir_u32(p, 0)))),
			   NULL));
	cr_assert_eq(vy_validate_first(p, NULL, &err), 0, "%s", err.message);
	cr_assert_eq(vy_vk_codegen(p, &profiles[1], &glsl, &layout, &err), VY_E_INTERNAL);
	cr_assert(strstr(err.message, "exp"), "%s", err.message);
	cr_assert_null(glsl);
	vy_program_destroy(p);
}

/* A let, a loop whose body divides i32 values, and a store after it. */
static struct vy_program *trapping(void)
{
	struct vy_program *p = vy_program_create(NULL, 64, 1, 1);
	vy_program_add_buffer(p, "x", 0, VY_ACCESS_READ_WRITE, VY_TYPE_I32, 0);
	struct vy_expr *q = vy_ir_binary(p, VY_BIN_DIV, vy_ir_load(p, "x", vy_ir_var(p, "k")),
		vy_ir_load(p, "x", vy_ir_u32(p, 0)));
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_let(p, "n", vy_ir_u32(p, 4)),
			   vy_ir_loop(p, "k", vy_ir_u32(p, 0), vy_ir_var(p, "n"),
				   vy_ir_seq(p, vy_ir_store(p, "x", vy_ir_var(p, "k"), q), NULL)),
			   NULL));
	struct vy_err err = {0};
	cr_assert_eq(vy_validate_first(p, NULL, &err), 0, "%s", err.message);
	return p;
}

Test(codegen, traps_record_the_node_and_kind_in_the_sidecar)
{
	struct vy_program *p = trapping();
	char *glsl = NULL;
	struct vy_vk_shader_layout layout;
	struct vy_err err = {0};
	cr_assert_eq(vy_vk_codegen(p, &profiles[1], &glsl, &layout, &err), 0, "%s", err.message);
	/* The loop is node 1 and the store node 2: their trap keys are node * 3 + kind. */
	char want[64];
	snprintf(want, sizeof(want), "vy_trap_raise(%uu);",
		(unsigned)vy_trap_key(1, VY_TRAP_LOOP_LIMIT));
	cr_assert(strstr(glsl, want), "%s not in:\n%s", want, glsl);
	snprintf(want, sizeof(want), "vy_trap_raise(%uu);",
		(unsigned)vy_trap_key(2, VY_TRAP_INT_DIV_ZERO));
	cr_assert(strstr(glsl, want), "%s not in:\n%s", want, glsl);
	snprintf(want, sizeof(want), "vy_trap_raise(%uu);",
		(unsigned)vy_trap_key(2, VY_TRAP_INT_OVERFLOW_DIV));
	cr_assert(strstr(glsl, want), "%s not in:\n%s", want, glsl);
	/* The bound is read once, into a temporary, before the loop. */
	cr_assert(strstr(glsl, "uint t0 = v0_n;"), "%s", glsl);
	cr_assert(strstr(glsl, "uint v1_k = 0u;"), "%s", glsl);
	cr_assert(strstr(glsl, "for (; v1_k < t0; ++v1_k) {"), "%s", glsl);
	/* A loop the driver cut short records its node at its exit. */
	cr_assert(strstr(glsl, "if (v1_k < t0) {\n\t\t\tvy_cut_raise(1u);\n\t\t\treturn;"),
		"no cut test in:\n%s", glsl);
	free(glsl);

	uint32_t none[3] = {0, 0, 0};
	cr_assert_eq(vy_vk_trap_decode(p, none, sizeof(none), 0, &err), 0);

	uint32_t div[3] = {~(uint32_t)vy_trap_key(2, VY_TRAP_INT_DIV_ZERO), 5, 0};
	cr_assert_eq(vy_vk_trap_decode(p, div, sizeof(div), 0, &err), VY_E_TRAP);
	cr_assert_str_eq(err.at, "entry[1].loop.body[0].store");
	cr_assert(strstr(err.message, "int_div_zero"), "%s", err.message);
	cr_assert(strstr(err.message, "5 invocation"), "%s", err.message);
	cr_assert(strstr(err.fix, "divisor"), "%s", err.fix);

	uint32_t loop[3] = {~(uint32_t)vy_trap_key(1, VY_TRAP_LOOP_LIMIT), 1, 0};
	cr_assert_eq(vy_vk_trap_decode(p, loop, sizeof(loop), 0, &err), VY_E_TRAP);
	cr_assert_str_eq(err.at, "entry[1].loop");
	cr_assert(strstr(err.message, "loop_limit"), "%s", err.message);

	/* A cut loop is the device's limit, not the program's trap, and outranks any trap. */
	uint32_t cut[3] = {~(uint32_t)vy_trap_key(2, VY_TRAP_INT_DIV_ZERO), 1, ~1u};
	cr_assert_eq(vy_vk_trap_decode(p, cut, sizeof(cut), 65535, &err), VY_E_UNSUPPORTED_FEATURE);
	cr_assert_str_eq(err.at, "entry[1].loop");
	cr_assert(
		strstr(err.message, "at most 65535 loop passes per invocation"), "%s", err.message);
	cr_assert(strstr(err.fix, "fewer loop iterations"), "%s", err.fix);

	uint32_t stray[3] = {~(uint32_t)vy_trap_key(40, VY_TRAP_LOOP_LIMIT), 1, 0};
	cr_assert_eq(vy_vk_trap_decode(p, stray, sizeof(stray), 0, &err), VY_E_INTERNAL);
	uint32_t stray_cut[3] = {0, 0, ~40u};
	cr_assert_eq(vy_vk_trap_decode(p, stray_cut, sizeof(stray_cut), 0, &err), VY_E_INTERNAL);
	cr_assert_eq(vy_vk_trap_decode(p, div, 8, 0, &err), VY_E_INTERNAL);
	vy_program_destroy(p);
}

/* A long loop of one statement, a loop of 3 inside a loop of 100,000, and a loop whose bound is
 * a spec constant holding a loop that a load bounds; the last store traps on a zero divisor. */
static const char long_loops[] =
	"{\"vyre\": 1, \"workgroup_size\": [1, 1, 1], \"buffers\": ["
	"{\"name\": \"o\", \"binding\": 0, \"access\": \"read_write\", \"type\": \"i32\", "
	"\"count\": 4}],"
	"\"entry\": [[\"loop\", \"a\", [\"u32\", 0], [\"u32\", 1000000], ["
	"[\"store\", \"o\", [\"u32\", 0], [\"add\", [\"load\", \"o\", [\"u32\", 0]], [\"i32\", "
	"1]]]]],"
	"[\"loop\", \"b\", [\"u32\", 0], [\"u32\", 100000], ["
	"[\"loop\", \"c\", [\"u32\", 0], [\"u32\", 3], ["
	"[\"store\", \"o\", [\"u32\", 1], [\"add\", [\"load\", \"o\", [\"u32\", 1]], [\"i32\", "
	"1]]]]]]],"
	"[\"loop\", \"d\", [\"u32\", 0], [\"spec\", \"n\", \"u32\", [\"u32\", 4]], ["
	"[\"loop\", \"e\", [\"u32\", 0], [\"cast\", \"u32\", [\"load\", \"o\", [\"u32\", 3]]], ["
	"[\"store\", \"o\", [\"u32\", 2], [\"div\", [\"i32\", 1], [\"load\", \"o\", [\"u32\", "
	"3]]]]]]]]]}";

/* Two loops of 100 and 5 iterations: 107 passes at most, far from any limit. */
static const char short_loops[] =
	"{\"vyre\": 1, \"workgroup_size\": [1, 1, 1], \"buffers\": ["
	"{\"name\": \"o\", \"binding\": 0, \"access\": \"read_write\", \"type\": \"u32\", "
	"\"count\": 4}],"
	"\"entry\": [[\"loop\", \"a\", [\"u32\", 0], [\"u32\", 100], ["
	"[\"store\", \"o\", [\"u32\", 0], [\"var\", \"a\"]]]],"
	"[\"loop\", \"b\", [\"u32\", 3], [\"u32\", 8], ["
	"[\"store\", \"o\", [\"u32\", 1], [\"var\", \"b\"]]]]]}";

static size_t count_of(const char *text, const char *needle)
{
	size_t n = 0;
	for (const char *at = text; (at = strstr(at, needle)) != NULL; at += strlen(needle)) {
		n++;
	}
	return n;
}

Test(codegen, long_loops_run_copies_of_their_body_where_the_driver_ends_loops)
{
	struct vy_vk_shader_layout layout;
	/* lavapipe: the first loop runs 16 bodies per pass; the loop of 3 is written out whole,
	 * so the loop around it has no loop inside and runs copies of it too; the innermost loop
	 * of the last pair is copied, the loop around it stays a loop. */
	char *glsl = glsl_of(long_loops, &profiles[0], &layout);
	cr_assert_eq(count_of(glsl, "while ("), 3, "%s", glsl);
	cr_assert_eq(count_of(glsl, "for (; "), 1, "%s", glsl);
	cr_assert(strstr(glsl, "min(t0 - v0_a, 16u)"), "%s", glsl);
	/* Each of the 16 copies of the division traps as the store it is, node 7. */
	char key[64];
	snprintf(key, sizeof(key), "vy_trap_raise(%uu);",
		(unsigned)vy_trap_key(7, VY_TRAP_INT_DIV_ZERO));
	cr_assert_eq(count_of(glsl, key), 16, "%s", glsl);
	/* Each loop records its own node when the driver cuts it: 0, 2, 3, 5 and 6. */
	static const char *const cuts[] = {"vy_cut_raise(0u);", "vy_cut_raise(2u);",
		"vy_cut_raise(3u);", "vy_cut_raise(5u);", "vy_cut_raise(6u);"};
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		cr_assert(strstr(glsl, cuts[i]), "%s missing:\n%s", cuts[i], glsl);
	}
	free(glsl);
	/* A device without the limit keeps every loop a loop. */
	glsl = glsl_of(long_loops, &profiles[1], &layout);
	cr_assert_eq(count_of(glsl, "while ("), 0, "%s", glsl);
	cr_assert_eq(count_of(glsl, "for (; "), 5, "%s", glsl);
	free(glsl);
	/* Loops that cannot reach the limit stay as they are, on lavapipe too. */
	struct vy_vk_codegen_options unlimited = profiles[0];
	unlimited.loop_passes = 0;
	char *plain = glsl_of(short_loops, &unlimited, &layout);
	glsl = glsl_of(short_loops, &profiles[0], &layout);
	cr_assert_eq(count_of(glsl, "for (; "), 2, "%s", glsl);
	cr_assert_str_eq(glsl, plain);
	free(plain);
	free(glsl);
}

static const char ordered[] = "{\"vyre\": 1, \"workgroup_size\": [64, 1, 1], \"buffers\": ["
			      "{\"name\": \"c\", \"binding\": 0, \"access\": \"read_write\", "
			      "\"type\": \"u32\", \"count\": 4}],"
			      "\"entry\": [[\"let\", \"k\", [\"u32\", 0]],"
			      "[\"store\", \"c\", [\"u32\", 1], [\"add\", "
			      "[\"atomic\", \"add\", \"c\", [\"var\", \"k\"], [\"u32\", 1]], "
			      "[\"load\", \"c\", [\"var\", \"k\"]]]]]}";

Test(codegen, operands_run_once_in_order_and_atomics_are_bounds_checked)
{
	struct vy_vk_shader_layout layout;
	char *glsl = glsl_of(ordered, &profiles[0], &layout);
	const char *atomic = strstr(glsl, "atomicAdd(b0_c.d[v0_k], 1u)");
	const char *load = strstr(glsl, "= b0_c.d[v0_k];");
	cr_assert(atomic && load && atomic < load, "the load must follow the atomic:\n%s", glsl);
	cr_assert(strstr(glsl, "uint t0 = 0u;\n\tif (v0_k < vy_len0) {\n\t\tt0 = atomicAdd("), "%s",
		glsl);
	/* A literal index goes through a temporary, which glslang does not check as a constant. */
	cr_assert(strstr(glsl, "uint t3 = 1u;\n\tif (t3 < vy_len0) {\n\t\tb0_c.d[t3] = t2;"), "%s",
		glsl);
	free(glsl);
}

/* Shifts by counts from a buffer, on u32 and i32: every count may be 32 or more. */
static const char shifts[] =
	"{\"vyre\": 1, \"workgroup_size\": [64, 1, 1], \"buffers\": ["
	"{\"name\": \"x\", \"binding\": 0, \"access\": \"read_only\", \"type\": \"u32\", "
	"\"count\": 0},"
	"{\"name\": \"n\", \"binding\": 1, \"access\": \"read_only\", \"type\": \"u32\", "
	"\"count\": 0},"
	"{\"name\": \"l\", \"binding\": 2, \"access\": \"write_only\", \"type\": \"u32\", "
	"\"count\": 64},"
	"{\"name\": \"r\", \"binding\": 3, \"access\": \"write_only\", \"type\": \"u32\", "
	"\"count\": 64},"
	"{\"name\": \"s\", \"binding\": 4, \"access\": \"write_only\", \"type\": \"i32\", "
	"\"count\": 64},"
	"{\"name\": \"o\", \"binding\": 5, \"access\": \"write_only\", \"type\": \"u32\", "
	"\"count\": 64}],"
	"\"entry\": [[\"let\", \"i\", [\"gid\", 0]],"
	"[\"let\", \"v\", [\"load\", \"x\", [\"var\", \"i\"]]],"
	"[\"let\", \"k\", [\"load\", \"n\", [\"var\", \"i\"]]],"
	"[\"store\", \"l\", [\"var\", \"i\"], [\"shl\", [\"var\", \"v\"], [\"var\", \"k\"]]],"
	"[\"store\", \"r\", [\"var\", \"i\"], [\"shr\", [\"var\", \"v\"], [\"var\", \"k\"]]],"
	"[\"store\", \"s\", [\"var\", \"i\"], [\"shr\", [\"cast\", \"i32\", [\"var\", \"v\"]], "
	"[\"var\", \"k\"]]],"
	"[\"store\", \"o\", [\"var\", \"i\"], [\"bit_xor\", [\"rotl\", [\"var\", \"v\"], "
	"[\"var\", \"k\"]], [\"rotr\", [\"var\", \"v\"], [\"var\", \"k\"]]]]]}";

/* Whether the shift count at `at` (just after << or >>) is "(NAME & 31u)" or a literal below 32. */
static bool count_masked(const char *at)
{
	while (*at == ' ') {
		at++;
	}
	if (*at == '(') {
		size_t n = strspn(
			at + 1, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
		return n > 0 && strncmp(at + 1 + n, " & 31u)", 7) == 0;
	}
	char *end = NULL;
	unsigned long v = strtoul(at, &end, 10);
	return end != at && *end == 'u' && v < 32;
}

Test(codegen, every_shift_masks_its_count_to_five_bits)
{
	/* GLSL leaves a shift by 32 or more undefined; semantics.md takes the count modulo 32.
	 * lavapipe happens to mask it anyway, so only the text can show a missing mask. */
	static const char *const rot[] = {
		"uint vy_rotl(uint a, uint n)\n{\n\tn &= 31u;\n"
		"\treturn n == 0u ? a : (a << n) | (a >> (32u - n));\n}\n",
		"uint vy_rotr(uint a, uint n)\n{\n\tn &= 31u;\n"
		"\treturn n == 0u ? a : (a >> n) | (a << (32u - n));\n}\n",
	};
	for (size_t pi = 0; pi < N_PROFILES; pi++) {
		struct vy_vk_shader_layout layout;
		char *glsl = glsl_of(shifts, &profiles[pi], &layout);
		/* The rotations mask first and never shift by 32; blank them, then every shift left
		 * must mask its count or shift by a constant below 32. */
		for (size_t r = 0; r < 2; r++) {
			char *at = strstr(glsl, rot[r]);
			cr_assert(at, "%s: no helper\n%s\nin\n%s", profile_names[pi], rot[r], glsl);
			memset(at, ' ', strlen(rot[r]));
		}
		size_t shifts_seen = 0;
		for (const char *at = glsl; (at = strpbrk(at, "<>")) != NULL; at++) {
			if (at[1] != at[0]) {
				continue;
			}
			shifts_seen++;
			cr_expect(count_masked(at + 2), "%s: unmasked shift count: %.60s",
				profile_names[pi], at - 20 > glsl ? at - 20 : glsl);
			at++;
		}
		cr_expect_geq(
			shifts_seen, 3, "%s: the three shifts of the program", profile_names[pi]);
		free(glsl);
	}
}

/* A tiled product over 8x8 workgroups: two workgroup tiles, literal loops, barriers, and the
 * written buffer c stored only after the loops. `extra` goes before that store. */
static char *tiled(const char *extra)
{
	static const char head[] =
		"{\"vyre\": 1, \"workgroup_size\": [8, 8, 1], \"buffers\": ["
		"{\"name\": \"a\", \"binding\": 0, \"access\": \"read_only\", \"type\": \"f32\", "
		"\"count\": 0},"
		"{\"name\": \"c\", \"binding\": 1, \"access\": \"read_write\", \"type\": \"f32\", "
		"\"count\": 0},"
		"{\"name\": \"ta\", \"binding\": 2, \"access\": \"workgroup\", \"type\": \"f32\", "
		"\"count\": 64},"
		"{\"name\": \"tb\", \"binding\": 3, \"access\": \"workgroup\", \"type\": \"u32\", "
		"\"count\": 64}],"
		"\"entry\": [[\"let\", \"lx\", [\"lid\", 0]], [\"let\", \"ly\", [\"lid\", 1]],"
		"[\"let\", \"acc\", [\"f32\", 0.0]],"
		"[\"loop\", \"t\", [\"u32\", 0], [\"u32\", 3], ["
		"[\"store\", \"ta\", [\"add\", [\"mul\", [\"var\", \"ly\"], [\"u32\", 8]], "
		"[\"var\", \"lx\"]], [\"load\", \"a\", [\"gid\", 0]]],"
		"[\"barrier\"],"
		"[\"loop\", \"k\", [\"u32\", 0], [\"u32\", 8], [[\"assign\", \"acc\", [\"add\", "
		"[\"var\", \"acc\"], [\"load\", \"ta\", [\"add\", [\"mul\", [\"var\", \"k\"], "
		"[\"u32\", 8]], [\"var\", \"lx\"]]]]]]],"
		"[\"barrier\"]]], ";
	static const char tail[] = "[\"store\", \"c\", [\"gid\", 0], [\"var\", \"acc\"]]]}";
	size_t n = strlen(head) + strlen(extra) + strlen(tail) + 1;
	char *text = malloc(n);
	cr_assert_not_null(text);
	snprintf(text, n, "%s%s%s", head, extra, tail);
	return text;
}

Test(codegen, literal_loops_count_their_iterations_only_where_the_launch_asks)
{
	const struct vy_vk_codegen_options *nv = &profiles[1];
	char *json = tiled("");
	struct vy_vk_shader_layout layout;
	char *glsl = glsl_of(json, nv, &layout);
	cr_assert_eq(layout.static_iters, 3 + 3 * 8);
	cr_assert(layout.uncountable);
	cr_assert(
		strstr(glsl, "layout(constant_id = 68) const bool vy_counted = true;"), "%s", glsl);
	cr_assert(strstr(glsl, "\t\t\tif (vy_counted) {\n\t\t\t\tvy_it_lo += 1u;\n"), "%s", glsl);
	free(glsl);
	free(json);

	/* A bound read from memory, or more work than a counted invocation does between two
	 * reads of the stop word: always counted. */
	static const char *const counted[] = {
		"[\"loop\", \"j\", [\"u32\", 0], [\"len\", \"a\"], []], ",
		"[\"loop\", \"j\", [\"u32\", 0], [\"u32\", 65536], [[\"loop\", \"m\", "
		"[\"u32\", 0], [\"u32\", 65536], []]]], ",
	};
	for (size_t i = 0; i < sizeof(counted) / sizeof(counted[0]); i++) {
		json = tiled(counted[i]);
		glsl = glsl_of(json, nv, &layout);
		cr_assert_not(layout.uncountable, "%s", counted[i]);
		cr_assert_null(strstr(glsl, "vy_counted"), "%s", glsl);
		cr_assert(strstr(glsl, "vy_it_lo += 1u;"), "%s", glsl);
		free(glsl);
		free(json);
	}
	/* On llvmpipe the copied loops take their iterations from the limit only when counted. */
	json = tiled("[\"loop\", \"j\", [\"u32\", 0], [\"u32\", 70000], []], ");
	glsl = glsl_of(json, &profiles[0], &layout);
	cr_assert(layout.uncountable);
	cr_assert(strstr(glsl, " = 0xFFFFFFFFu;\n\t\t\tif (vy_counted) {\n\t\t\t\tt"), "%s", glsl);
	free(glsl);
	free(json);
}

Test(codegen, workgroup_indices_proven_in_range_skip_their_check_under_the_own_workgroup_size)
{
	struct vy_vk_shader_layout layout;
	for (size_t pi = 0; pi < N_PROFILES; pi++) {
		char *json = tiled(
			/* gid 0 may be anything; a variable that some assign changes too */
			"[\"let\", \"g\", [\"load\", \"tb\", [\"gid\", 0]]],"
			"[\"let\", \"h\", [\"lid\", 0]], [\"assign\", \"h\", [\"u32\", 99]],"
			"[\"let\", \"e\", [\"load\", \"tb\", [\"var\", \"h\"]]],"
			/* (lx * 8 + ly) % 64 and lx >> 0 are in range */
			"[\"let\", \"m\", [\"load\", \"tb\", [\"mod\", [\"add\", [\"mul\", "
			"[\"var\", "
			"\"lx\"], [\"u32\", 8]], [\"var\", \"ly\"]], [\"u32\", 64]]]],"
			"[\"let\", \"s\", [\"load\", \"tb\", [\"shr\", [\"var\", \"lx\"], "
			"[\"u32\", 0]]]],"
			/* j reaches 64 on its last pass: out of range */
			"[\"loop\", \"j\", [\"u32\", 0], [\"u32\", 65], [[\"let\", \"q\", "
			"[\"load\", \"tb\", [\"var\", \"j\"]]]]],");
		char *glsl = glsl_of(json, &profiles[pi], &layout);
		cr_assert(
			strstr(glsl,
				"const bool vy_wg_own = ((gl_WorkGroupSize.x ^ 8u) | "
				"(gl_WorkGroupSize.y ^ 8u) |\n\t(gl_WorkGroupSize.z ^ 1u)) == 0u;"),
			"%s", glsl);
		/* the store to ta, the load in the inner loop, and m and s */
		size_t own = 0;
		for (const char *at = glsl; (at = strstr(at, "if (vy_wg_own || ")) != NULL; at++) {
			own++;
		}
		cr_assert_eq(own, 4, "%s: %zu checks left out\n%s", profile_names[pi], own, glsl);
		cr_assert(strstr(glsl, "if (vy_gid.x < 64u) {"), "%s", glsl);
		cr_assert(strstr(glsl, "if (v6_h < 64u) {"), "%s", glsl);
		cr_assert(strstr(glsl, "_j < 64u) {"), "the last j is out of range:\n%s", glsl);
		/* the global load is checked against its length and canonicalized; the tile's
		 * words are canonical already */
		cr_assert(strstr(glsl, "if (vy_gid.x < vy_len0) {"), "%s", glsl);
		cr_assert(strstr(glsl, "vy_canon(b0_a.d[vy_gid.x])"), "%s", glsl);
		cr_assert_null(strstr(glsl, "vy_canon(b2_ta"), "%s", glsl);
		assert_compiles(glsl);
		free(glsl);
		free(json);
	}
}

Test(codegen, barriers_fence_buffer_memory_only_after_an_access_to_a_written_buffer)
{
	const struct vy_vk_codegen_options *nv = &profiles[1];
	struct vy_vk_shader_layout layout;
	/* c is touched only after the loops: no barrier orders a buffer access */
	char *json = tiled("");
	char *glsl = glsl_of(json, nv, &layout);
	cr_assert(strstr(glsl, "memoryBarrierShared();\n\t\t\tbarrier();"), "%s", glsl);
	cr_assert_null(strstr(glsl, "memoryBarrierBuffer"), "%s", glsl);
	cr_assert_null(strstr(glsl, "coherent"), "%s", glsl);
	free(glsl);
	free(json);
	/* A read of c before the loops, or a store to c in an if before them:
	 * every barrier after it fences, and c is coherent. */
	static const char *const before[] = {
		"[\"let\", \"r\", [\"load\", \"c\", [\"u32\", 0]]], ",
		"[\"if\", [\"eq\", [\"var\", \"lx\"], [\"u32\", 0]], [[\"store\", \"c\", "
		"[\"u32\", 1], [\"f32\", 1.0]]], []], ",
	};
	for (size_t i = 0; i < sizeof(before) / sizeof(before[0]); i++) {
		size_t n = strlen(before[i]) + 1;
		char *extra = malloc(n);
		cr_assert_not_null(extra);
		memcpy(extra, before[i], n);
		json = tiled("");
		/* move the access in front of the loops: splice it after the let of acc */
		const char *at = strstr(json, "[\"loop\", \"t\"");
		cr_assert_not_null(at);
		size_t head = (size_t)(at - json);
		size_t len = strlen(json) + n;
		char *moved = malloc(len);
		cr_assert_not_null(moved);
		snprintf(moved, len, "%.*s%s%s", (int)head, json, extra, at);
		glsl = glsl_of(moved, nv, &layout);
		cr_assert(strstr(glsl, "memoryBarrierBuffer();\n\t\t\tbarrier();\n\t\t\t"
				       "memoryBarrierBuffer();"),
			"%s\n%s", before[i], glsl);
		cr_assert(strstr(glsl, "coherent buffer VyBuf1"), "%s", glsl);
		free(glsl);
		free(moved);
		free(json);
		free(extra);
	}
	/* A store to c late in the loop's body comes before the barrier of the next pass. */
	json = tiled("");
	char *late = strstr(json, "[\"barrier\"]]], ");
	cr_assert_not_null(late);
	static const char store[] = "[\"store\", \"c\", [\"gid\", 0], [\"var\", \"acc\"]]]], ";
	size_t len = strlen(json) + sizeof(store);
	char *looped = malloc(len);
	cr_assert_not_null(looped);
	snprintf(looped, len, "%.*s[\"barrier\"], %s%s", (int)(late - json), json, store,
		late + strlen("[\"barrier\"]]], "));
	glsl = glsl_of(looped, nv, &layout);
	cr_assert(strstr(glsl, "memoryBarrierBuffer();\n\t\t\tbarrier();"), "%s\n%s", looped, glsl);
	free(glsl);
	free(looped);
	free(json);
}

Test(codegen, a_nan_is_canonicalized_where_its_bits_are_seen_and_nowhere_else)
{
	/* o[0] = -(x * 2) + x, o[1] = bits of x * 2, o[2] = x (a load), o[3] = a select of two
	 * loads, o[4] = the sum through a let and a select */
	static const char prog[] =
		"{\"vyre\": 1, \"workgroup_size\": [1, 1, 1], \"buffers\": ["
		"{\"name\": \"x\", \"binding\": 0, \"access\": \"read_only\", \"type\": \"f32\", "
		"\"count\": 1},"
		"{\"name\": \"o\", \"binding\": 1, \"access\": \"write_only\", \"type\": \"f32\", "
		"\"count\": 8},"
		"{\"name\": \"u\", \"binding\": 2, \"access\": \"write_only\", \"type\": \"u32\", "
		"\"count\": 1}],"
		"\"entry\": [[\"let\", \"v\", [\"load\", \"x\", [\"u32\", 0]]],"
		"[\"let\", \"m\", [\"mul\", [\"var\", \"v\"], [\"f32\", 2.0]]],"
		"[\"store\", \"o\", [\"u32\", 0], [\"add\", [\"neg\", [\"var\", \"m\"]], "
		"[\"var\", \"v\"]]],"
		"[\"store\", \"u\", [\"u32\", 0], [\"bitcast\", \"u32\", [\"var\", \"m\"]]],"
		"[\"store\", \"o\", [\"u32\", 2], [\"var\", \"v\"]],"
		"[\"store\", \"o\", [\"u32\", 3], [\"select\", [\"bool\", true], [\"var\", \"v\"], "
		"[\"load\", \"x\", [\"u32\", 0]]]],"
		"[\"store\", \"o\", [\"u32\", 4], [\"select\", [\"bool\", true], [\"var\", \"m\"], "
		"[\"var\", \"v\"]]],"
		"[\"store\", \"o\", [\"u32\", 5], [\"neg\", [\"var\", \"v\"]]]]}";
	for (size_t pi = 0; pi < N_PROFILES; pi++) {
		struct vy_vk_shader_layout layout;
		char *glsl = glsl_of(prog, &profiles[pi], &layout);
		size_t canon = 0;
		for (const char *at = glsl; (at = strstr(at, "= vy_canon(")) != NULL; at++) {
			canon++;
		}
		/* the two loads, the sum, the bits of m, the select with m, the negated load */
		cr_assert_eq(
			canon, 6, "%s: %zu canonicalizations\n%s", profile_names[pi], canon, glsl);
		cr_assert(strstr(glsl, "\tb1_o.d[t"), "%s", glsl);
		cr_assert(strstr(glsl, "] = v0_v;\n"), "a load is canonical already:\n%s", glsl);
		free(glsl);
	}
	/* A device that flushes subnormal sums and products itself: no flush after them. */
	char *glsl = glsl_nvidia_but(prog, offsetof(struct vy_vk_math, flushes_subnormals), true);
	cr_assert(strstr(glsl, "\tuint x = floatBitsToUint(r);\n"), "%s", glsl);
	cr_assert(strstr(glsl, "\treturn floatBitsToUint(r);\n}\n"), "%s", glsl);
	cr_assert_null(strstr(glsl, "vy_flush("), "%s", glsl);
	/* a zero product is decided by the fused threshold test, not the exact product */
	cr_assert(strstr(glsl, "-uintBitsToFloat(0x207FFFFFu));"), "%s", glsl);
	cr_assert(
		strstr(glsl, "(floatBitsToUint(d) < 0x7F800000u ? 0x00800000u : 0u);"), "%s", glsl);
	free(glsl);
}

Test(codegen, fma_division_and_square_root_take_fast_paths_only_where_fma_is_fused)
{
	/* o[0] = fma(x, x, y), o[1] = x / y, o[2] = sqrt(x), o[3] = f32 of an i32 */
	static const char prog[] =
		"{\"vyre\": 1, \"workgroup_size\": [1, 1, 1], \"buffers\": ["
		"{\"name\": \"x\", \"binding\": 0, \"access\": \"read_only\", \"type\": \"f32\", "
		"\"count\": 1},"
		"{\"name\": \"y\", \"binding\": 1, \"access\": \"read_only\", \"type\": \"f32\", "
		"\"count\": 1},"
		"{\"name\": \"o\", \"binding\": 2, \"access\": \"write_only\", \"type\": \"f32\", "
		"\"count\": 4}],"
		"\"entry\": [[\"let\", \"a\", [\"load\", \"x\", [\"u32\", 0]]],"
		"[\"let\", \"b\", [\"load\", \"y\", [\"u32\", 0]]],"
		"[\"store\", \"o\", [\"u32\", 0], [\"fma\", [\"var\", \"a\"], [\"var\", \"a\"], "
		"[\"var\", \"b\"]]],"
		"[\"store\", \"o\", [\"u32\", 1], [\"div\", [\"var\", \"a\"], [\"var\", \"b\"]]],"
		"[\"store\", \"o\", [\"u32\", 2], [\"sqrt\", [\"var\", \"a\"]]],"
		"[\"store\", \"o\", [\"u32\", 3], [\"cast\", \"f32\", [\"cast\", \"i32\", "
		"[\"var\", \"a\"]]]]]}";
	static const char *const fast[] = {
		"\t\tx = vy_ffma_special(a, b, c);\n",
		"\tif (abs(r) < lim && k > 0 && k < 255) {\n",
		"\treturn vy_fdiv_fast(a, b);\n",
		"\tprecise float t = inversesqrt(m);\n",
		"\treturn vy_fsqrt_bits(x);\n",
	};
	for (size_t pi = 0; pi < N_PROFILES; pi++) {
		struct vy_vk_shader_layout layout;
		char *glsl = glsl_of(prog, &profiles[pi], &layout);
		bool fused = profiles[pi].math.fma_fused;
		for (size_t k = 0; k < sizeof(fast) / sizeof(fast[0]); k++) {
			cr_assert_eq(strstr(glsl, fast[k]) != NULL, fused, "%s: %s\n%s",
				profile_names[pi], fast[k], glsl);
		}
		/* the fused fma's NaN is the device's, canonicalized at the store */
		cr_assert_eq(strstr(glsl, "] = vy_canon(t") != NULL, fused, "%s:\n%s",
			profile_names[pi], glsl);
		/* an integer of 24 bits or fewer converts on the device on every profile */
		cr_assert(strstr(glsl, "\tif (x + 0x01000000u <= 0x02000000u) {\n"
				       "\t\treturn floatBitsToUint(float(int(x)));\n"),
			"%s:\n%s", profile_names[pi], glsl);
		free(glsl);
	}
	/* A fused fma on a device whose compiler folds constants inexactly keeps its tests. */
	char *glsl = glsl_nvidia_but(prog, offsetof(struct vy_vk_math, fold_exact), false);
	cr_assert_null(strstr(glsl, "vy_ffma_special"), "%s", glsl);
	cr_assert_null(strstr(glsl, "] = vy_canon(t"), "%s", glsl);
	free(glsl);
}

/*
 * The arguments of docs/semantics.md §6.5 in C, step for step as vy_fdiv_fast and vy_fsqrt's fast
 * path write them, with the device's approximate reciprocal and inverse square root played by the
 * correct ones moved by up to 3 units in the last place. With `wobble` the candidate itself is
 * moved by -1, 0 or +1 unit before the test, so that the test meets wrong candidates as often as
 * right ones: whatever it accepts must be the correctly rounded result. Without, it must reject
 * few.
 */
static uint64_t model_state = UINT64_C(0x2545F4914F6CDD1D);

static uint32_t model_next(void)
{
	model_state ^= model_state << 13;
	model_state ^= model_state >> 7;
	model_state ^= model_state << 17;
	return (uint32_t)(model_state >> 16);
}

/* v moved by -k to +k units in the last place */
static float model_move(float v, uint32_t k)
{
	return vy_test_float(vy_test_bits(v) + (model_next() % (2u * k + 1u)) - k);
}

static bool model_fdiv(uint32_t a, uint32_t b, bool wobble, uint32_t *out)
{
	float x = vy_test_float((a & 0x007FFFFFu) | 0x3F800000u);
	float y = vy_test_float((b & 0x007FFFFFu) | 0x3F800000u);
	float t = model_move(1.0f / y, 3);
	float q0 = x * t;
	float q = fmaf(fmaf(-q0, y, x), t, q0);
	q = wobble ? model_move(q, 1) : q;
	float r = fmaf(-q, y, x);
	uint32_t qb = vy_test_bits(q);
	float lim = y * vy_test_float(qb > 0x3F800000u ? 0x33800000u : 0x33000000u);
	int k = (int)((qb >> 23) & 0xFFu) + (int)((a >> 23) & 0xFFu) - (int)((b >> 23) & 0xFFu);
	if (fabsf(r) < lim && k > 0 && k < 255) {
		*out = ((a ^ b) & 0x80000000u) | ((uint32_t)k << 23) | (qb & 0x007FFFFFu);
		return true;
	}
	return false;
}

static bool model_fsqrt(uint32_t x, bool wobble, uint32_t *out)
{
	int ex = (int)(x >> 23) - 127;
	uint32_t odd = (uint32_t)ex & 1u;
	float m = vy_test_float((x & 0x007FFFFFu) | (odd != 0u ? 0x40000000u : 0x3F800000u));
	float t = model_move(1.0f / sqrtf(m), 3);
	float s0 = m * t;
	float s = fmaf(fmaf(-s0, s0, m), 0.5f * t, s0);
	s = wobble ? model_move(s, 1) : s;
	float r = fmaf(-s, s, m);
	uint32_t sb = vy_test_bits(s);
	float w = s * vy_test_float(sb > 0x3F800000u ? 0x34000000u : 0x33800000u);
	if (fabsf(r) < vy_test_float(vy_test_bits(w) - 1u)) {
		*out = ((uint32_t)((int)(sb >> 23) + ((ex - (int)odd) >> 1)) << 23) |
		       (sb & 0x007FFFFFu);
		return true;
	}
	return false;
}

Test(codegen, the_fast_division_and_root_keep_only_correctly_rounded_results)
{
	for (int wobble = 0; wobble < 2; wobble++) {
		/* every significand, under an even and an odd exponent */
		uint32_t kept = 0;
		uint32_t tried = 0;
		for (uint32_t f = 0; f < (1u << 23); f++) {
			for (uint32_t e = 126; e <= 127; e++) {
				uint32_t x = (e << 23) | f;
				uint32_t got;
				tried++;
				if (model_fsqrt(x, wobble, &got)) {
					kept++;
					cr_assert_eq(got, vy_test_bits(sqrtf(vy_test_float(x))),
						"sqrt(%a)", (double)vy_test_float(x));
				}
			}
		}
		cr_assert_gt(kept, wobble ? tried / 4 : tried - (tried >> 10), "%u of %u roots",
			kept, tried);
		/* exponents that keep the quotient normal; half the pairs with equal or
		 * neighbouring significands */
		kept = 0;
		tried = 1u << 22;
		for (uint32_t i = 0; i < tried; i++) {
			uint32_t b =
				(model_next() & 0x807FFFFFu) | ((model_next() % 126u + 64u) << 23);
			uint32_t frac =
				i % 2 ? (b + model_next() % 3u) & 0x007FFFFFu : model_next();
			uint32_t a = (frac & 0x807FFFFFu) | ((model_next() % 126u + 64u) << 23);
			uint32_t got;
			if (model_fdiv(a, b, wobble, &got)) {
				kept++;
				cr_assert_eq(got, vy_test_bits(vy_test_float(a) / vy_test_float(b)),
					"%a / %a", (double)vy_test_float(a),
					(double)vy_test_float(b));
			}
		}
		cr_assert_gt(kept, wobble ? tried / 4 : tried - (tried >> 10), "%u of %u quotients",
			kept, tried);
	}
}

/* acc = acc + a[k] * b[k] and n = n + 1 for k below 8, then the results stored; `extra` goes at
 * the end of the loop's body. */
static char *products_loop(const char *extra, const struct vy_vk_codegen_options *opts)
{
	char prog[2048];
	snprintf(prog, sizeof(prog),
		"{\"vyre\": 1, \"workgroup_size\": [1, 1, 1], \"buffers\": ["
		"{\"name\": \"a\", \"binding\": 0, \"access\": \"read_only\", \"type\": \"f32\", "
		"\"count\": 8},"
		"{\"name\": \"b\", \"binding\": 1, \"access\": \"read_only\", \"type\": \"f32\", "
		"\"count\": 8},"
		"{\"name\": \"o\", \"binding\": 2, \"access\": \"read_write\", \"type\": \"f32\", "
		"\"count\": 1},"
		"{\"name\": \"c\", \"binding\": 3, \"access\": \"write_only\", \"type\": \"i32\", "
		"\"count\": 1}],"
		"\"entry\": [[\"let\", \"acc\", [\"f32\", 0.0]], [\"let\", \"n\", [\"i32\", 1]],"
		"[\"loop\", \"k\", [\"u32\", 0], [\"u32\", 8], ["
		"[\"assign\", \"acc\", [\"add\", [\"var\", \"acc\"], [\"mul\", [\"load\", \"a\", "
		"[\"var\", \"k\"]], [\"load\", \"b\", [\"var\", \"k\"]]]]],"
		"[\"assign\", \"n\", [\"add\", [\"var\", \"n\"], [\"i32\", 1]]]%s]],"
		"[\"store\", \"o\", [\"u32\", 0], [\"var\", \"acc\"]],"
		"[\"store\", \"c\", [\"u32\", 0], [\"var\", \"n\"]]]}",
		extra);
	struct vy_vk_shader_layout layout;
	return glsl_of(prog, opts, &layout);
}

/* NVIDIA's profile as the probe finds it: fused fma, subnormal results flushed, the flags of
 * speculated products and fmas sound. */
static struct vy_vk_codegen_options speculating(void)
{
	struct vy_vk_codegen_options ftz = profiles[1];
	ftz.math.flushes_subnormals = true;
	ftz.math.product_flag = true;
	return ftz;
}

Test(codegen, a_loop_of_products_runs_twice_only_where_a_product_may_have_flushed_early)
{
	struct vy_vk_codegen_options ftz = speculating();
	char *glsl = products_loop("", &ftz);
	/* The first run notes a product of 0 from nonzero operands; the second decides each. */
	cr_assert_eq(count_of(glsl, "= vy_fmulq("), 1, "%s", glsl);
	cr_assert_eq(count_of(glsl, "= vy_fmul("), 1, "%s", glsl);
	cr_assert(strstr(glsl, "uint vy_fmulq(uint a, uint b, inout bool hz)"), "%s", glsl);
	/* Before the first run the sum, the count and the loop counts are saved; the second run
	 * begins from them. */
	cr_assert(strstr(glsl, "uint t2 = v0_acc;\n"), "%s", glsl);
	cr_assert(strstr(glsl, "uint t3 = v1_n;\n"), "%s", glsl);
	cr_assert(strstr(glsl, "uint t4 = vy_it_lo;\n"), "%s", glsl);
	cr_assert(strstr(glsl, "bool t6 = false;\n"), "%s", glsl);
	cr_assert(strstr(glsl, "if (t6) {\n\t\tv0_acc = t2;\n\t\tv1_n = t3;\n\t\tvy_it_lo = t4;\n"),
		"%s", glsl);
	assert_compiles(glsl);
	free(glsl);
	/* A device that decides products where they are, one whose probe did not see the flag
	 * set for every product it must, and bodies that cannot run twice: a store, a division
	 * that may trap, a loop. */
	struct vy_vk_codegen_options unsound = ftz;
	unsound.math.product_flag = false;
	glsl = products_loop("", &unsound);
	cr_assert_eq(count_of(glsl, "vy_fmulq("), 0, "%s", glsl);
	free(glsl);
	const char *const once[] = {"", ",[\"store\", \"o\", [\"u32\", 0], [\"var\", \"acc\"]]",
		",[\"let\", \"q\", [\"div\", [\"var\", \"n\"], [\"i32\", 3]]]",
		",[\"loop\", \"j\", [\"u32\", 0], [\"u32\", 2], []]"};
	for (size_t i = 0; i < sizeof(once) / sizeof(once[0]); i++) {
		glsl = products_loop(once[i], i == 0 ? &profiles[1] : &ftz);
		cr_assert_eq(count_of(glsl, "vy_fmulq("), 0, "%s\n%s", once[i], glsl);
		cr_assert_eq(count_of(glsl, "= vy_fmul("), 1, "%s\n%s", once[i], glsl);
		free(glsl);
	}
}

Test(codegen, the_plain_form_skips_the_folding_and_the_stop_word_where_the_launch_is_direct)
{
	struct vy_vk_shader_layout layout;
	char *glsl = glsl_of(tiny, &profiles[0], &layout);
	char decl[96];
	snprintf(decl, sizeof(decl), "layout(constant_id = %u) const bool vy_direct = false;\n",
		VY_VK_DIRECT_SPEC_ID);
	cr_assert(strstr(glsl, decl), "%s", glsl);
	/* Everything a launch of its grid as it is does not need waits behind the constant. */
	const char *direct = strstr(glsl, "\tuvec3 vy_wg = gl_WorkGroupID;\n\tif (!vy_direct) {\n");
	cr_assert(direct, "%s", glsl);
	const char *fold = strstr(glsl, "umulExtended(vy_wg.z");
	const char *stop = strstr(glsl, "vy_pc.stop_on_entry != 0u");
	const char *end = strstr(glsl, "\t}\n\tuvec3 vy_gid = ");
	cr_assert(fold && stop && end && direct < fold && fold < stop && stop < end, "%s", glsl);
	cr_assert_eq(count_of(glsl, "return;"), 2, "%s", glsl);
	assert_compiles(glsl);
	free(glsl);
	/* The coarse form has no such constant: its launches fold by design. */
	struct vy_vk_codegen_options coarse = profiles[0];
	coarse.coarse = true;
	glsl = glsl_of(tiny, &coarse, &layout);
	cr_assert(layout.coarse, "%s", glsl);
	cr_assert_null(strstr(glsl, "vy_direct"), "%s", glsl);
	free(glsl);
}

/* The flags of speculated runs and loops: lines `bool t<n> = false;`. */
static unsigned hazards(const char *glsl)
{
	unsigned n = 0;
	for (const char *p = strstr(glsl, "bool t"); p; p = strstr(p + 1, "bool t")) {
		const char *q = p + 6;
		while (*q >= '0' && *q <= '9') {
			q++;
		}
		n += q > p + 6 && strncmp(q, " = false;", 9) == 0;
	}
	return n;
}

/* x loaded, then y = fma(x, x, 1) * x and z = y * y as lets (`between` after the let of y), z
 * stored; `outer` is a let before the run. */
static char *products_run(
	const char *outer, const char *between, const struct vy_vk_codegen_options *opts)
{
	char prog[2048];
	snprintf(prog, sizeof(prog),
		"{\"vyre\": 1, \"workgroup_size\": [64, 1, 1], \"buffers\": ["
		"{\"name\": \"x\", \"binding\": 0, \"access\": \"read_only\", \"type\": \"f32\", "
		"\"count\": 0},"
		"{\"name\": \"o\", \"binding\": 1, \"access\": \"read_write\", \"type\": \"f32\", "
		"\"count\": 0}],"
		"\"entry\": [[\"let\", \"i\", [\"gid\", 0]]%s,"
		"[\"let\", \"v\", [\"load\", \"x\", [\"var\", \"i\"]]],"
		"[\"let\", \"y\", [\"mul\", [\"fma\", [\"var\", \"v\"], [\"var\", \"v\"], "
		"[\"f32\", 1.0]], [\"var\", \"v\"]]]%s,"
		"[\"let\", \"z\", [\"mul\", [\"var\", \"y\"], [\"var\", \"y\"]]],"
		"[\"store\", \"o\", [\"var\", \"i\"], [\"var\", \"z\"]]]}",
		outer, between);
	struct vy_vk_shader_layout layout;
	return glsl_of(prog, opts, &layout);
}

Test(codegen, a_run_of_lets_runs_twice_only_where_a_result_may_differ)
{
	struct vy_vk_codegen_options ftz = speculating();
	/* An if that assigns the run's own let stays in the run; its body is not a run of its own
	 * in either run. */
	char *glsl = products_run("",
		",[\"if\", [\"lt\", [\"var\", \"y\"], [\"f32\", 0.0]], [[\"let\", \"w\", "
		"[\"fma\", [\"fma\", [\"var\", \"y\"], [\"var\", \"y\"], [\"f32\", 2.0]], "
		"[\"var\", \"y\"], [\"f32\", 2.0]]], [\"assign\", \"y\", [\"var\", \"w\"]]], []]",
		&ftz);
	/* The first run notes what the exact helpers would not keep; the second decides each. */
	cr_assert_eq(count_of(glsl, "= vy_ffmaq("), 3, "%s", glsl);
	cr_assert_eq(count_of(glsl, "= vy_fmulq("), 1, "%s", glsl);
	cr_assert_eq(count_of(glsl, "= vy_ffma("), 3, "%s", glsl);
	cr_assert_eq(count_of(glsl, "= vy_fmul("), 1, "%s", glsl);
	cr_assert_eq(hazards(glsl), 1, "%s", glsl);
	cr_assert(strstr(glsl, "uint vy_ffmaq(uint a, uint b, uint c, inout bool hz)"), "%s", glsl);
	/* The lets are declared once, before both runs, which assign them. */
	cr_assert(strstr(glsl, "\tuint v1_v;\n\tuint v2_y;\n\tuint v4_z;\n\tbool t"), "%s", glsl);
	cr_assert_eq(count_of(glsl, "v4_z = "), 2, "%s", glsl);
	cr_assert_eq(count_of(glsl, "uint v4_z"), 1, "%s", glsl);
	assert_compiles(glsl);
	free(glsl);
	/* Devices whose results are decided where they are. */
	struct vy_vk_codegen_options unsound = ftz;
	unsound.math.product_flag = false;
	const struct vy_vk_codegen_options *plain[] = {&profiles[0], &profiles[1], &unsound};
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		glsl = products_run("", "", plain[i]);
		cr_assert_eq(count_of(glsl, "q("), 0, "%zu\n%s", i, glsl);
		free(glsl);
	}
	/* A store between two runs of one block: each is speculated. */
	glsl = products_run("",
		",[\"store\", \"o\", [\"u32\", 0], [\"var\", \"y\"]],"
		"[\"let\", \"w\", [\"mul\", [\"mul\", [\"var\", \"v\"], [\"var\", \"y\"]], "
		"[\"var\", \"v\"]]]",
		&ftz);
	cr_assert_eq(hazards(glsl), 2, "%s", glsl);
	assert_compiles(glsl);
	free(glsl);
	/* What ends a run: a store, an i32 division, an assign of a variable from before the run
	 * (here after a store); the product after it is alone and decided where it is. */
	const char *const cut[] = {",[\"store\", \"o\", [\"u32\", 0], [\"var\", \"y\"]]",
		",[\"let\", \"q\", [\"div\", [\"var\", \"n\"], [\"i32\", 3]]]",
		",[\"assign\", \"n\", [\"i32\", 2]]"};
	for (size_t i = 0; i < sizeof(cut) / sizeof(cut[0]); i++) {
		glsl = products_run(",[\"let\", \"n\", [\"i32\", 1]],"
				    "[\"store\", \"o\", [\"u32\", 1], [\"f32\", 0.0]]",
			cut[i], &ftz);
		cr_assert_eq(count_of(glsl, "= vy_fmulq("), 1, "%s\n%s", cut[i], glsl);
		cr_assert_eq(count_of(glsl, "= vy_ffmaq("), 1, "%s\n%s", cut[i], glsl);
		cr_assert_eq(count_of(glsl, "= vy_fmul("), 2, "%s\n%s", cut[i], glsl);
		free(glsl);
	}
}
