/*
 * The code generator of the Vulkan backend (DESIGN.md §4, §8): a validated, math-lowered vyre
 * program becomes the text of one GLSL 450 compute shader whose results are bit-identical to the
 * reference interpreter's, plus the interface the runtime needs to run it (bindings, push
 * constants, specialization constants, the trap sidecar).
 *
 * The interface of a generated shader:
 *   set 0, binding k       the k-th non-workgroup buffer in binding-plan order (binding number,
 *                          ties in program order), a std430 storage buffer holding one 32-bit
 *                          word per element. Uniform buffers are storage buffers too. The runtime
 *                          binds each with its exact byte range: `len` and every bounds check
 *                          read the array's length, except that a buffer marked in
 *                          vy_vk_push.empty_bindings has length 0.
 *   set 0, trap_binding    the trap sidecar, trap_bytes long, zero-filled before each dispatch:
 *                          word 0 is ~vy_trap_key(node, kind) of the lowest trap site raised
 *                          (atomicMax of the complement, so 0 means no trap), word 1 counts the
 *                          invocations that trapped, word 2 is ~node of the lowest loop that the
 *                          driver ended before its bound (0: none). vy_vk_trap_decode reads it.
 *   set 0, stop_binding    the stop word, 4 bytes the host may write while the dispatch runs:
 *                          every invocation reads it every VY_VK_STOP_PERIOD loop iterations, and
 *                          on entry when vy_vk_push.stop_on_entry is set, and returns at once when
 *                          it is not 0. The runtime sets it for a dispatch nobody waits for any
 *                          more (a timeout), whose results are then undefined.
 *   push constants         struct vy_vk_push, 52 bytes.
 *   spec constant VY_VK_COARSE_SPEC_ID  in the coarse form: logical workgroups per launched one.
 *   spec constant VY_VK_COUNT_SPEC_ID   where layout.uncountable: a bool, true by default; false
 *                          drops the counting of loop iterations against loop_limit and the reads
 *                          of the stop word in loops (the runtime sets it only when
 *                          layout.static_iters <= loop_limit, so no iteration could trap).
 *   spec constant VY_VK_DIRECT_SPEC_ID  in the plain form: a bool, false by default; true where
 *                          the launch dispatches its logical grid as it is, in one part (no
 *                          folding, no base offsets, stop_on_entry 0), which drops the folding
 *                          rule's arithmetic and the stop word's read on entry.
 *   spec constant 0..2     the workgroup size (local_size_{x,y,z}_id).
 *   spec constant 3..      one per distinct `spec` name, sorted by name (strcmp), each a 32-bit
 *                          word: u32 as is, i32 as two's complement, f32 as its bits, bool as
 *                          0 or 1. The shader canonicalizes an f32 value itself.
 *
 * Device features the shader may need: shaderFloat64 when layout.uses_f64 (the exact fma
 * emulation of a device without a fused fma but with doubles), and the subgroup operations of
 * layout.subgroup_features in the compute stage. Nothing else beyond Vulkan 1.2 core: a device
 * with neither a fused fma nor doubles gets an integer emulation.
 *
 * Thread-safety: vy_vk_codegen only reads the program (which must not change meanwhile) and
 * keeps no state; calls may run concurrently.
 */
#ifndef VY_BACKEND_VULKAN_VK_CODEGEN_H
#define VY_BACKEND_VULKAN_VK_CODEGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "ir.h"

/* What the device's probe found (DESIGN.md §4.4). */
struct vy_vk_math {
	bool fma_fused;  /* GLSL fma() is a true fused multiply-add */
	bool div_exact;  /* f32 '/' is correctly rounded */
	bool sqrt_exact; /* f32 sqrt() is correctly rounded */
	bool has_f64;    /* shaderFloat64 is enabled (usable for exact emulations) */
	/*
	 * f32 add, sub and mul with a constant operand (0 * x, x + 0, x - x) keep signed zeros,
	 * infinities and NaN: the native instruction may then see special operands. Otherwise
	 * they are decided by integer tests before the instruction.
	 */
	bool fold_exact;
	/*
	 * A select, or an if that assigns in both branches, between two 32-bit constants keeps
	 * their bits. Otherwise (a driver that turns a select between 0.0 and 1.0 into a
	 * conversion of the condition, and matches -0.0 as 0.0) every selected and assigned value
	 * passes through an OR with a push constant that is always 0, so no constant reaches it.
	 */
	bool select_exact;
	/*
	 * Every f32 add, sub and mul whose result is subnormal gives the zero of its sign (the
	 * probe saw no other answer): their results need no flush of their own.
	 */
	bool flushes_subnormals;
	/*
	 * The flag of vy_fmulq (the products of a speculated loop's or run's first run) was set for
	 * every product the probe tried that the device may flush before it rounds to 2^-126
	 * (vy_vk_probe.flag_misses = 0), and, where fma is fused, vy_ffmaq gave what its probe
	 * prescribes (fma_flag_misses = 0): loops and runs may be speculated.
	 */
	bool product_flag;
};

struct vy_vk_codegen_options {
	struct vy_vk_math math;
	bool subgroups;         /* subgroup operations allowed (GL_KHR_shader_subgroup_*) */
	uint32_t subgroup_size; /* informational: the shader reads gl_SubgroupSize */
	/*
	 * 0, or the loop passes the driver allows one invocation over all its loops before it
	 * leaves them on its own (llvmpipe: 65,535; vy_vk_probe.loop_passes). When the program's
	 * loops may need more, innermost loops run several copies of their body per pass.
	 */
	uint32_t loop_passes;
	/* An elementwise program gets the coarse form (vk_coarse.c); otherwise, or false, the plain
	 * one. layout.coarse says whether it is elementwise either way. */
	bool coarse;
};

enum { VY_VK_MAX_SPEC = 64 };

/* Bits of vy_vk_shader_layout.subgroup_features, as VkSubgroupFeatureFlagBits numbers them. */
enum {
	VY_VK_SUBGROUP_BASIC = 1u << 0,
	VY_VK_SUBGROUP_ARITHMETIC = 1u << 2,
	VY_VK_SUBGROUP_BALLOT = 1u << 3,
	VY_VK_SUBGROUP_SHUFFLE = 1u << 4,
};

struct vy_vk_binding {
	uint32_t vk_binding;   /* binding number in set 0 */
	uint32_t buffer_index; /* index in program->buffers */
	bool read_only;        /* read_only or uniform: declared readonly */
};

struct vy_vk_spec {
	const char *name; /* borrowed from the program */
	uint32_t constant_id;
	enum vy_type type;
	uint32_t default_bits; /* the program's default, as the 32-bit word the shader reads */
};

struct vy_vk_shader_layout {
	uint32_t n_bindings; /* descriptor set 0, storage buffers */
	/* One per non-workgroup buffer, in binding-plan order, vk_binding 0..n-1. */
	struct vy_vk_binding bindings[VY_IR_MAX_BUFFERS];
	uint32_t trap_binding;        /* the hidden sidecar storage buffer (= n_bindings) */
	uint32_t trap_bytes;          /* its size */
	uint32_t stop_binding;        /* the hidden stop word (= n_bindings + 1) */
	uint32_t push_constant_bytes; /* sizeof(struct vy_vk_push) */
	uint32_t n_spec;
	struct vy_vk_spec spec[VY_VK_MAX_SPEC]; /* constant ids 3.. (0..2 are the workgroup size) */
	bool uses_f64;                          /* the shader needs shaderFloat64 */
	uint32_t subgroup_features; /* VY_VK_SUBGROUP_* the shader needs in the compute stage */
	/* An elementwise program (vk_coarse.c): its coarse form, generated with
	 * vy_vk_codegen_options.coarse, takes spec constant VY_VK_COARSE_SPEC_ID. */
	bool coarse;
	/* The most loop iterations one invocation can run, as the literal bounds of its loops tell
	 * (0: no loop), or UINT64_MAX when a bound is not a literal. */
	uint64_t static_iters;
	/* static_iters is not 0 and small enough (VY_VK_UNCOUNTED_WORK): the shader takes
	 * VY_VK_COUNT_SPEC_ID. */
	bool uncountable;
};

/* Push constants, std430, filled per dispatch by the runtime. */
struct vy_vk_push {
	uint32_t logical_workgroups[3]; /* the grid the program sees (wgid range) */
	uint32_t dispatch_x;            /* workgroups launched on x (for folding: DESIGN.md §5) */
	uint32_t dispatch_y;            /* workgroups launched on y */
	uint32_t loop_limit_lo;         /* max_loop_iterations per invocation, low word */
	uint32_t loop_limit_hi;         /* high word */
	/*
	 * Bit k set: binding k is bound to no data (an empty buffer bound as a null descriptor or a
	 * dummy range), so the shader takes its length as 0 whatever .length() says.
	 */
	uint32_t empty_bindings;
	/* Added to gl_WorkGroupID: a launch split into several dispatches (DESIGN.md §7.5) runs
	 * each part with the workgroup ids it would have had in one dispatch. */
	uint32_t base[3];
	/* Not 0: every invocation reads the stop word on entry (a launch split into parts). */
	uint32_t stop_on_entry;
	/* Always 0: the value the driver cannot know, which keeps constants from selects (see
	 * vy_vk_math.select_exact). */
	uint32_t opaque_zero;
};

/*
 * Logical workgroups per launched workgroup of a coarse launch, and the spec constant that sets
 * it in a coarse layout's shader: 1 (the default) or VY_VK_COARSE. With VY_VK_COARSE and
 * lwg_y = lwg_z = 1 each invocation runs VY_VK_COARSE consecutive logical workgroups, and the
 * launch covers ceil(logical_workgroups[0] / VY_VK_COARSE) of them.
 */
#define VY_VK_COARSE 8u
#define VY_VK_COARSE_SPEC_ID (3u + VY_VK_MAX_SPEC)

/* The bool spec constant that turns the loop counting and stop reads off (see above). */
#define VY_VK_COUNT_SPEC_ID (4u + VY_VK_MAX_SPEC)

/* The bool spec constant of the plain form that drops the folding of a launched grid and the
 * stop word's read on entry (see above). */
#define VY_VK_DIRECT_SPEC_ID (5u + VY_VK_MAX_SPEC)

/* Loop iterations of one invocation between two reads of the stop word (a power of two). */
#define VY_VK_STOP_PERIOD 1024u

/*
 * A program may run uncounted when its loop iterations times its size (nodes and expressions)
 * is at most this: an invocation then runs no longer than a counted one of the largest program
 * may run between two reads of the stop word, so a timeout stops an uncounted launch as soon.
 */
#define VY_VK_UNCOUNTED_WORK ((uint64_t)VY_VK_STOP_PERIOD * VY_IR_MAX_NODES)

/* Size of the trap sidecar: the trap key word, the trap count word and the cut loop word. */
#define VY_VK_TRAP_BYTES 12u

/*
 * Generate the GLSL of `program`, which must have passed vy_validate and vy_vmath_lower (no
 * inverse_sqrt, reciprocal or transcendental remains) and must hold no grid_sync barrier (the
 * runtime dispatches the segments of vy_grid_sync_split). On success *glsl is a malloc'd,
 * NUL-terminated text the caller frees, and *layout describes its interface; on failure *glsl is
 * NULL.
 *
 * The folding rule of planner/launch.h is applied in the shader: when logical_workgroups has
 * y = z = 1, the launched workgroup id is linearized with dispatch_x and dispatch_y and
 * workgroups past logical_workgroups[0] do nothing; otherwise gl_WorkGroupID is the workgroup id.
 *
 * Errors: UNSUPPORTED_FEATURE naming the feature and the node (`at`): subgroup expressions when
 * opts->subgroups is false, a grid_sync barrier the split did not remove, more than
 * VY_VK_MAX_SPEC spec constants; INTERNAL for an operation that vy_vmath_lower should have
 * removed.
 */
int vy_vk_codegen(const struct vy_program *program, const struct vy_vk_codegen_options *opts,
	char **glsl, struct vy_vk_shader_layout *layout, struct vy_err *err);

/*
 * The GLSL function `uint vy_fmulq(uint a, uint b, inout bool hz)` that the first run of a
 * speculated loop uses for its products (it sets hz where the device's product may differ from
 * the exact one), for the float probe to try on the device.
 */
const char *vy_vk_codegen_product_flag(void);
/* The GLSL function `uint vy_ffmaq(uint a, uint b, uint c, inout bool hz)` that the first run of a
 * speculated loop or run uses for its fmas, for the float probe to try on the device. */
const char *vy_vk_codegen_fma_flag(void);

/*
 * Decode the trap sidecar (`len` bytes, at least VY_VK_TRAP_BYTES) after a dispatch of the shader
 * generated for `program` (the same program: node numbers are its preorder numbers, see
 * planner/node_path.h). Returns 0 when nothing trapped and no loop was cut; UNSUPPORTED_FEATURE
 * naming the loop (also in `at`) when the driver ended a loop before its bound, whatever else
 * happened (the dispatch did not run the program; `loop_passes` is the device's budget, 0 when
 * unknown); else VY_E_TRAP naming the trap kind, the node path (also in `at`) and the number of
 * invocations that trapped. A sidecar that is too short or names no node of the program gives
 * VY_E_INTERNAL.
 */
int vy_vk_trap_decode(const struct vy_program *program, const void *sidecar, size_t len,
	uint32_t loop_passes, struct vy_err *err);

#endif
