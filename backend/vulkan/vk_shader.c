/*
 * The shaderc front end of the Vulkan backend. Compile errors carry shaderc's log, and because a
 * log line such as "kernel.comp:12: error: ..." means little without the code, the message also
 * quotes the source line it names.
 */
#include "vk_shader.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <shaderc/shaderc.h>
/* libspirv.h defines (not declares) a const with external linkage, so a second C file of the same
 * executable that includes it would clash with this one; give this file's copy its own name. */
#define kDefaultMaxIdBound vy__vk_spirv_default_max_id_bound
#include <spirv-tools/libspirv.h>
#undef kDefaultMaxIdBound

struct vy_vk_compiler {
	shaderc_compiler_t compiler;
	shaderc_compile_options_t options;     /* glslang's module as it is */
	shaderc_compile_options_t options_opt; /* and through the optimizer */
	bool float_preserve;                   /* add SignedZeroInfNanPreserve 32 to each module */
};

struct vy_vk_compiler *vy__vk_compiler_create(void)
{
	struct vy_vk_compiler *c = calloc(1, sizeof(*c));
	if (!c) {
		fprintf(stderr, "vyred: out of memory creating the shader compiler\n");
		abort();
	}
	c->compiler = shaderc_compiler_initialize();
	c->options = shaderc_compile_options_initialize();
	if (!c->compiler || !c->options) {
		fprintf(stderr, "vyred: shaderc failed to initialize\n");
		abort();
	}
	shaderc_compile_options_set_target_env(
		c->options, shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_2);
	shaderc_compile_options_set_target_spirv(c->options, shaderc_spirv_version_1_5);
	shaderc_compile_options_set_source_language(c->options, shaderc_source_language_glsl);
	c->options_opt = shaderc_compile_options_clone(c->options);
	if (!c->options_opt) {
		fprintf(stderr, "vyred: shaderc failed to initialize\n");
		abort();
	}
	shaderc_compile_options_set_optimization_level(c->options, shaderc_optimization_level_zero);
	shaderc_compile_options_set_optimization_level(
		c->options_opt, shaderc_optimization_level_performance);
	return c;
}

void vy__vk_compiler_set_float_preserve(struct vy_vk_compiler *c, bool on)
{
	c->float_preserve = on;
}

void vy__vk_compiler_destroy(struct vy_vk_compiler *c)
{
	if (!c) {
		return;
	}
	shaderc_compile_options_release(c->options);
	shaderc_compile_options_release(c->options_opt);
	shaderc_compiler_release(c->compiler);
	free(c);
}

/* The first "name:LINE:" in the log, or 0. */
static unsigned long failing_line(const char *log, const char *name)
{
	size_t n = strlen(name);
	for (const char *s = strstr(log, name); s; s = strstr(s + 1, name)) {
		if (s[n] == ':' && isdigit((unsigned char)s[n + 1])) {
			return strtoul(s + n + 1, NULL, 10);
		}
	}
	return 0;
}

/* Copy line `line` (from 1) of `src` into buf, trimmed of leading blanks. */
static void source_line(const char *src, size_t len, unsigned long line, char *buf, size_t size)
{
	const char *s = src;
	const char *end = src + len;
	for (unsigned long i = 1; i < line && s < end; i++) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		s = nl ? nl + 1 : end;
	}
	while (s < end && (*s == ' ' || *s == '\t')) {
		s++;
	}
	const char *nl = memchr(s, '\n', (size_t)(end - s));
	size_t n = (size_t)((nl ? nl : end) - s);
	snprintf(buf, size, "%.*s", (int)n, s);
}

/* SPIR-V numbers (the SPIR-V specification, 1.4 and later: float controls are core). */
enum {
	SPV_OP_CAPABILITY = 17,
	SPV_OP_ENTRY_POINT = 15,
	SPV_OP_EXECUTION_MODE = 16,
	SPV_CAP_SIGNED_ZERO_INF_NAN_PRESERVE = 4466,
	SPV_MODE_SIGNED_ZERO_INF_NAN_PRESERVE = 4461,
	SPV_HEADER_WORDS = 5,
};

/*
 * Add SignedZeroInfNanPreserve for 32-bit floats to every entry point of a module (a copy in a
 * new malloc'd array, 6 words longer per entry point), or return NULL for a module that does not
 * parse. Without this execution mode a driver may treat float operations as blind to the sign of
 * zero, infinities and NaN even where they are decorated NoContraction (GLSL `precise`): Mesa's
 * NIR folds `x * 0.0` to `0.0` and `0.0 * x == 0.0` to true, which gives +0 for -0, NaN and
 * infinite results. GLSL offers no portable way to ask for the mode (glslang's
 * GL_EXT_spirv_intrinsics emits it without its capability), so it is added to the compiled
 * module, after the optimizer, which keeps NoContraction operations exact on its own.
 */
static uint32_t *with_float_preserve(const uint32_t *w, size_t n, size_t *n_out)
{
	size_t cap_at = 0, entries = 0;
	for (size_t i = SPV_HEADER_WORDS; i < n;) {
		uint32_t op = w[i] & 0xFFFFu, wc = w[i] >> 16;
		if (wc == 0 || i + wc > n) {
			return NULL;
		}
		if (op == SPV_OP_CAPABILITY && cap_at == 0) {
			cap_at = i;
		}
		entries += op == SPV_OP_ENTRY_POINT;
		i += wc;
	}
	if (n < SPV_HEADER_WORDS || cap_at == 0) {
		return NULL;
	}
	uint32_t *out = malloc((n + 2 + 4 * entries) * sizeof(*out));
	if (!out) {
		fprintf(stderr, "vyred: out of memory for a %zu-word shader module\n", n);
		abort();
	}
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		size_t wc = i < SPV_HEADER_WORDS ? SPV_HEADER_WORDS : w[i] >> 16;
		memcpy(out + o, w + i, wc * sizeof(*w));
		o += wc;
		if (i == cap_at) {
			out[o++] = 2u << 16 | SPV_OP_CAPABILITY;
			out[o++] = SPV_CAP_SIGNED_ZERO_INF_NAN_PRESERVE;
		}
		if (i >= SPV_HEADER_WORDS && (w[i] & 0xFFFFu) == SPV_OP_ENTRY_POINT) {
			/* OpEntryPoint model id name...: the mode follows the entry points. */
			out[o++] = 4u << 16 | SPV_OP_EXECUTION_MODE;
			out[o++] = w[i + 2];
			out[o++] = SPV_MODE_SIGNED_ZERO_INF_NAN_PRESERVE;
			out[o++] = 32;
		}
		i += wc;
	}
	*n_out = o;
	return out;
}

int vy__vk_compile_glsl(struct vy_vk_compiler *c, const char *glsl, size_t len, const char *name,
	bool optimize, uint32_t **words, size_t *n_words, struct vy_err *err)
{
	*words = NULL;
	*n_words = 0;
	shaderc_compilation_result_t res = shaderc_compile_into_spv(c->compiler, glsl, len,
		shaderc_compute_shader, name, "main", optimize ? c->options_opt : c->options);
	if (!res) {
		fprintf(stderr, "vyred: shaderc returned no result\n");
		abort();
	}
	int rc = 0;
	if (shaderc_result_get_compilation_status(res) != shaderc_compilation_status_success) {
		const char *log = shaderc_result_get_error_message(res);
		log = log ? log : "";
		unsigned long line = failing_line(log, name);
		char text[160] = "";
		if (line > 0) {
			source_line(glsl, len, line, text, sizeof(text));
		}
		/* The log's last newline only ends it; keep messages on one line each. */
		size_t log_len = strlen(log);
		while (log_len > 0 && (log[log_len - 1] == '\n' || log[log_len - 1] == ' ')) {
			log_len--;
		}
		if (line > 0) {
			rc = vy_err_set(err, VY_E_KERNEL_COMPILE_FAILED, NULL,
				"report the program and this log: the generated shader should "
				"always "
				"compile",
				"shader compile failed at line %lu (`%s`): %.*s", line, text,
				(int)log_len, log);
		} else {
			rc = vy_err_set(err, VY_E_KERNEL_COMPILE_FAILED, NULL,
				"report the program and this log: the generated shader should "
				"always "
				"compile",
				"shader compile failed: %.*s", (int)log_len, log);
		}
		shaderc_result_release(res);
		return rc;
	}
	size_t bytes = shaderc_result_get_length(res);
	uint32_t *out = malloc(bytes ? bytes : 4);
	if (!out) {
		fprintf(stderr, "vyred: out of memory for a %zu-byte shader module\n", bytes);
		abort();
	}
	memcpy(out, shaderc_result_get_bytes(res), bytes);
	shaderc_result_release(res);
	*words = out;
	*n_words = bytes / 4;
	if (c->float_preserve) {
		size_t n = 0;
		uint32_t *patched = with_float_preserve(out, bytes / 4, &n);
		if (!patched) {
			return vy_err_set(err, VY_E_INTERNAL, NULL,
				"report the program: shaderc's module should always parse",
				"the compiled module does not parse as SPIR-V");
		}
		free(out);
		*words = patched;
		*n_words = n;
	}
	return 0;
}

int vy__vk_validate_spirv(const uint32_t *words, size_t n_words, struct vy_err *err)
{
	spv_context ctx = spvContextCreate(SPV_ENV_VULKAN_1_2);
	spv_validator_options opts = spvValidatorOptionsCreate();
	spv_const_binary_t bin = {words, n_words};
	spv_diagnostic diag = NULL;
	spv_result_t res = spvValidateWithOptions(ctx, opts, &bin, &diag);
	int rc = 0;
	if (res != SPV_SUCCESS) {
		rc = vy_err_set(err, VY_E_INTERNAL, NULL,
			"report the program: the generated module must pass spirv-val",
			"spirv-val rejected the module: %s",
			diag && diag->error ? diag->error : "no diagnostic");
	}
	spvDiagnosticDestroy(diag);
	spvValidatorOptionsDestroy(opts);
	spvContextDestroy(ctx);
	return rc;
}

int vy__vk_disassemble_spirv(const uint32_t *words, size_t n_words, char **text, struct vy_err *err)
{
	*text = NULL;
	spv_context ctx = spvContextCreate(SPV_ENV_VULKAN_1_2);
	spv_text out = NULL;
	spv_diagnostic diag = NULL;
	spv_result_t res = spvBinaryToText(ctx, words, n_words,
		SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES | SPV_BINARY_TO_TEXT_OPTION_INDENT, &out,
		&diag);
	int rc = 0;
	if (res != SPV_SUCCESS) {
		rc = vy_err_set(err, VY_E_INTERNAL, NULL,
			"report the program: a module the compiler made must disassemble",
			"the SPIR-V disassembler failed: %s",
			diag && diag->error ? diag->error : "no diagnostic");
	} else {
		*text = malloc(out->length + 1);
		if (!*text) {
			fprintf(stderr, "vyred: out of memory for a SPIR-V disassembly\n");
			abort();
		}
		memcpy(*text, out->str, out->length);
		(*text)[out->length] = '\0';
	}
	spvTextDestroy(out);
	spvDiagnosticDestroy(diag);
	spvContextDestroy(ctx);
	return rc;
}
