/*
 * GLSL -> SPIR-V through shaderc, and SPIR-V validation through SPIRV-Tools (DESIGN.md §8: every
 * generated module must pass spirv-val; the backend checks it whenever validation is on).
 *
 * Ownership: a compiler is created and destroyed by the backend; a compiled module is a malloc'd
 * array of words that the caller frees.
 * Thread-safety: one compiler may compile from several threads at once (shaderc allows it).
 */
#ifndef VY_BACKEND_VULKAN_VK_SHADER_H
#define VY_BACKEND_VULKAN_VK_SHADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct vy_vk_compiler;

/* A compiler targeting Vulkan 1.2 (SPIR-V 1.5). Aborts when shaderc cannot start. */
struct vy_vk_compiler *vy__vk_compiler_create(void);
/*
 * Ask for every module compiled from now on to carry the execution mode SignedZeroInfNanPreserve
 * for 32-bit floats (set it once, before compiling, on a device whose
 * shaderSignedZeroInfNanPreserveFloat32 is true). Without it a driver may fold float operations
 * as if zeros had no sign and NaN and infinities did not occur.
 */
void vy__vk_compiler_set_float_preserve(struct vy_vk_compiler *c, bool on);
/* NULL is accepted. */
void vy__vk_compiler_destroy(struct vy_vk_compiler *c);

/*
 * Compile a compute shader. `name` labels the source in messages. With `optimize` the module goes
 * through the SPIR-V optimizer (shaderc's performance level); without, it goes to the driver as
 * glslang writes it, which compiles in about a quarter of the time and which the driver's own
 * compiler optimizes (docs/performance.md, "What a cold compile spends"). On success stores the
 * module in *words (malloc'd) and its length in words in *n_words. Errors: KERNEL_COMPILE_FAILED
 * whose message holds shaderc's log and names the first failing line with its source text.
 */
int vy__vk_compile_glsl(struct vy_vk_compiler *c, const char *glsl, size_t len, const char *name,
	bool optimize, uint32_t **words, size_t *n_words, struct vy_err *err);

/* Check a module with the SPIR-V validator for Vulkan 1.2. Errors: INTERNAL with its message. */
int vy__vk_validate_spirv(const uint32_t *words, size_t n_words, struct vy_err *err);

/*
 * Disassemble a module as spirv-dis prints it (friendly names, the header as comments). On success
 * *text is a malloc'd, NUL-terminated text the caller frees. Errors: INTERNAL with SPIRV-Tools'
 * message.
 */
int vy__vk_disassemble_spirv(
	const uint32_t *words, size_t n_words, char **text, struct vy_err *err);

#endif
