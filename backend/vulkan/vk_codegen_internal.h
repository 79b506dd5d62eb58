/*
 * Internals of the code generator, shared by vk_codegen.c (program, statements, interface),
 * vk_codegen_expr.c (expressions) and vk_codegen_lib.c (the GLSL helper library). Nothing outside
 * these files includes this header.
 *
 * Values in generated code: u32, i32 and f32 are all GLSL `uint` holding the value's 32 bits
 * (f32 always canonical), bool is GLSL `bool`. Every f32 operation is a helper function of the
 * library working on bits, so float arithmetic only happens inside helpers, on `precise`
 * variables, and nothing outside them can reorder, contract or reinterpret it.
 */
#ifndef VY_BACKEND_VULKAN_VK_CODEGEN_INTERNAL_H
#define VY_BACKEND_VULKAN_VK_CODEGEN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "ir.h"
#include "vk_codegen.h"

/* Logical invocations per invocation of a coarse launch (vk_coarse.c). */
#define VY__VK_COARSE VY_VK_COARSE
/* Most nodes and expressions of a coarse program (after math lowering). */
#define VY__VK_COARSE_SIZE 64u
/* Names a program may bind to gid.x and still be coarse. */
#define VY__VK_COARSE_NAMES 64u

/* How an elementwise program runs several logical invocations per invocation (vk_coarse.c). */
struct vy__vk_coarse {
	bool on;
	uint32_t reg;     /* buffers (bit = program index) whose gid.x element is a register */
	uint32_t preload; /* of those, the ones loaded somewhere: the register starts as the element
			   */
	uint32_t stored;  /* of those, the ones stored: the register goes back after the calls */
	const char *names[VY__VK_COARSE_NAMES]; /* names bound only to gid.x (borrowed) */
	uint32_t n_names;
};

/* A growable text; running out of memory aborts. A zeroed struct is an empty text. */
struct vy__vk_str {
	char *data; /* owned, NUL-terminated when len > 0 */
	size_t len;
	size_t cap;
};

void vy__vk_str_add(struct vy__vk_str *s, const char *text);
void vy__vk_str_addf(struct vy__vk_str *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void vy__vk_str_finish(struct vy__vk_str *s);

/* The helpers of the GLSL library; a program's shader holds the ones it uses and their deps. */
#define VY__VK_LIB_MAP(X)                                                                          \
	X(CANON)                                                                                   \
	X(FLUSH)                                                                                   \
	X(ISNAN)                                                                                   \
	X(ROUND_PACK)                                                                              \
	X(MULX)                                                                                    \
	X(FMA_EXACT)                                                                               \
	X(FADD)                                                                                    \
	X(FSUB)                                                                                    \
	X(FMUL)                                                                                    \
	X(FADDK)                                                                                   \
	X(FSUBK)                                                                                   \
	X(FMULK)                                                                                   \
	X(FMULQ)                                                                                   \
	X(FDIV)                                                                                    \
	X(FMOD)                                                                                    \
	X(FSQRT)                                                                                   \
	X(FFMA)                                                                                    \
	X(FFMAQ)                                                                                   \
	X(FMIN)                                                                                    \
	X(FMAX)                                                                                    \
	X(FCMP)                                                                                    \
	X(FTRUNC)                                                                                  \
	X(FFLOOR)                                                                                  \
	X(FCEIL)                                                                                   \
	X(FROUND)                                                                                  \
	X(FSIGN)                                                                                   \
	X(U2F)                                                                                     \
	X(I2F)                                                                                     \
	X(F2U)                                                                                     \
	X(F2I)                                                                                     \
	X(SDIV)                                                                                    \
	X(SMOD)                                                                                    \
	X(ROT)                                                                                     \
	X(BITS)                                                                                    \
	X(WIDE)                                                                                    \
	X(SAT_I32)                                                                                 \
	X(TRAP)                                                                                    \
	X(SG_SHUFFLE)                                                                              \
	X(SG_FADD)                                                                                 \
	X(SG_FMUL)                                                                                 \
	X(SG_FMINMAX)

#define VY__VK_LIB_ENUM(name) VY__VK_LIB_##name,
enum vy__vk_lib { VY__VK_LIB_MAP(VY__VK_LIB_ENUM) VY__VK_LIB_COUNT };
#undef VY__VK_LIB_ENUM

#define VY__VK_USE(name) (UINT64_C(1) << VY__VK_LIB_##name)

/* Add the dependencies of every helper in `uses`, transitively. */
uint64_t vy__vk_lib_close(uint64_t uses);

/* Append the helpers of `uses` (closed), in dependency order, chosen for the device's math. */
void vy__vk_lib_emit(struct vy__vk_str *out, uint64_t uses, const struct vy_vk_math *math);

/* Whether the fma helper needs doubles on this device. */
bool vy__vk_lib_fma_needs_f64(const struct vy_vk_math *math);
/* vy_ffma gives back the device's NaN (loose) rather than the canonical one. */
bool vy__vk_lib_fma_loose(const struct vy_vk_math *math);

/* An operand: a temporary, a variable, a literal or a builtin, as GLSL text. An f32 operand is
 * `loose` when it may be a NaN other than the canonical one (vk_codegen_lib.c): what makes its
 * bits seen (a store, a bitcast) canonicalizes it first. */
struct vy__vk_val {
	enum vy_type type;
	bool loose;
	char text[96];
};

/* An interval of u32 values, bounds included (vk_facts.c). */
struct vy__vk_range {
	uint32_t lo;
	uint32_t hi;
};

/* A variable in scope: its IR name, its GLSL identifier number and the range of its value. */
struct vy__vk_var {
	const char *name; /* borrowed from the program */
	uint32_t id;
	int32_t next; /* the entry below in the same hash chain, or -1 */
	struct vy__vk_range range;
	enum vy_type type;
	bool loose;   /* an f32 that may hold a loose NaN */
	bool varying; /* vy__vk_val.varying of its value; false for an assigned name */
};

/* Hash chains of the scope stack; a power of two. */
#define VY__VK_VAR_HEADS 1024u

/* How a loop is written on a device that ends long loops (vk_codegen.c): `copies` bodies per pass
 * of one GLSL loop (1: a plain loop), or, when `whole`, every iteration its own copy and no GLSL
 * loop at all. */
struct vy__vk_loop_shape {
	uint32_t copies;
	bool whole;
};

struct vy__vk_gen {
	const struct vy_program *p;
	const struct vy_vk_codegen_options *opts;
	struct vy_vk_shader_layout *layout;
	struct vy_err *err;
	int rc; /* the first error; generation stops emitting once it is set */

	struct vy__vk_str body; /* the statements of main() */
	uint32_t indent;
	uint64_t uses; /* VY__VK_USE bits */
	uint32_t next_temp;
	uint32_t next_var;
	uint32_t node;      /* preorder number of the node being generated */
	uint32_t next_node; /* preorder number of the next node */

	/*
	 * The scope stack, with a hash chain per bucket. Entries are pushed and popped in stack
	 * order and each push goes to the head of its chain, so a lookup meets the innermost
	 * binding first and a popped entry is always the head of its chain.
	 */
	struct vy__vk_var *vars; /* owned */
	uint32_t n_vars;
	uint32_t cap_vars;
	int32_t heads[VY__VK_VAR_HEADS];

	uint32_t vk_binding[VY_IR_MAX_BUFFERS]; /* by program buffer index; workgroup: unused */

	bool has_barrier;
	bool has_loop;
	/* vk_facts.c: the names some assign targets (sorted, borrowed strings; owned array), the
	 * non-workgroup buffers stored to or updated atomically (bit = program index), whether an
	 * access to one of those may have run before the node being generated, and whether a
	 * barrier fenced buffer memory. */
	const char **assigned;
	uint32_t n_assigned;
	uint32_t written;
	bool touched;
	bool fenced;
	/* layout.uncountable: the counting of loop iterations and the stop word's reads in loops
	 * hang on the spec constant vy_counted (VY_VK_COUNT_SPEC_ID). */
	bool guarded;
	/* By preorder node number, when the device ends long loops and the program may run into
	 * that (else NULL: every loop is plain). Owned. */
	struct vy__vk_loop_shape *shapes;
	/* Inside the first run of a loop or run that may run again (loop() and run() in
	 * vk_codegen.c): a product or fma whose result the exact helper might not keep sets the
	 * bool temporary t<hazard> instead of being decided on the spot. */
	bool speculating;
	uint32_t hazard;
	/* Inside the second run of a speculated run: nothing in it is speculated again. */
	bool rerun;
	uint32_t subgroup_features; /* VY_VK_SUBGROUP_* */
	struct vy__vk_coarse coarse;
};

/* Append one indented line of main()'s body. */
void vy__vk_line(struct vy__vk_gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Record the first error, located at the current node; returns the code. */
int vy__vk_fail(struct vy__vk_gen *g, int code, const char *fix, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The GLSL identifier of a variable in scope; the program is validated, so it is there. */
void vy__vk_var_ident(const struct vy__vk_gen *g, const char *name, char *buf, size_t size);
/* The range recorded for a variable in scope when it was bound. */
struct vy__vk_range vy__vk_var_range(const struct vy__vk_gen *g, const char *name);
/* Whether a variable in scope may hold a loose NaN. */
bool vy__vk_var_loose(const struct vy__vk_gen *g, const char *name);
/* The GLSL text of a value whose bits are about to be seen: canonical. */
void vy__vk_seen(struct vy__vk_gen *g, const struct vy__vk_val *v, char *buf, size_t size);

/* vk_facts.c: read the program's assigned names and written buffers (before generating), and
 * free them. */
void vy__vk_facts_init(struct vy__vk_gen *g);
void vy__vk_facts_finish(struct vy__vk_gen *g);
/* Whether some assign in the program targets `name`. */
bool vy__vk_assigned(const struct vy__vk_gen *g, const char *name);
/* The range of a u32 expression in the current scope, under the program's workgroup size. */
struct vy__vk_range vy__vk_range_of(const struct vy__vk_gen *g, const struct vy_expr *e);
/* The range of a loop's variable in its body, the loop being generated in the current scope. */
struct vy__vk_range vy__vk_loop_range(const struct vy__vk_gen *g, const struct vy_node *loop);
/* Whether an index is below `count` whenever the launch has the program's workgroup size. */
bool vy__vk_index_within(const struct vy__vk_gen *g, const struct vy_expr *idx, uint32_t count);
/* Whether an expression depends on what only the run can know (a load, an atomic, gid, wgid, a
 * buffer's length, a subgroup operation), so that no compiler can fold an operation on it. */
bool vy__vk_varying(const struct vy__vk_gen *g, const struct vy_expr *e);
/* Whether a variable in scope holds such a value (an assigned one counts as not). */
bool vy__vk_var_varying(const struct vy__vk_gen *g, const char *name);
/* Whether an expression (NULL: none), a node or a block accesses a buffer of g->written. */
bool vy__vk_expr_touches(const struct vy__vk_gen *g, const struct vy_expr *e);
bool vy__vk_node_touches(const struct vy__vk_gen *g, const struct vy_node *n);
bool vy__vk_block_touches(const struct vy__vk_gen *g, const struct vy_block *b);
/* Whether a loop body may run twice with nothing of the first run seen but its variables: no
 * store, atomic, barrier, return, loop, subgroup operation or i32 division (which traps). Sets
 * *f32_mul when it multiplies f32 values. */
bool vy__vk_block_replayable(const struct vy_block *b, bool *f32_mul);

/* The GLSL identifiers of a buffer (array expression without index) and the text of its length. */
void vy__vk_buffer_array(const struct vy__vk_gen *g, uint32_t buffer, char *buf, size_t size);
void vy__vk_buffer_len(const struct vy__vk_gen *g, uint32_t buffer, char *buf, size_t size);
/* Index of a buffer in program->buffers; the program is validated, so it is there. */
uint32_t vy__vk_buffer_find(const struct vy__vk_gen *g, const char *name);

/* The GLSL identifier of a spec constant (by name) as given in the layout. */
void vy__vk_spec_ident(const struct vy__vk_gen *g, const char *name, char *buf, size_t size);

/* Emit the statements computing `e` into temporaries, in evaluation order; `out` receives the
 * operand holding its value. After an error `out` holds a zero of the right type. */
void vy__vk_expr(struct vy__vk_gen *g, const struct vy_expr *e, struct vy__vk_val *out);

/*
 * Make an index operand safe to subscript with: glslang rejects a constant subscript that is
 * negative as an int (a u32 of 2^31 or more) or past a fixed array's end, even in a branch that
 * the bounds check never takes, so a literal index is first copied into a temporary.
 */
void vy__vk_index(struct vy__vk_gen *g, struct vy__vk_val *idx);

/* A condition operand (u32 or bool) as a GLSL bool expression. */
void vy__vk_cond_text(const struct vy__vk_val *v, char *buf, size_t size);

/* The GLSL type of a value. */
const char *vy__vk_glsl_type(enum vy_type t);

/*
 * Make a selected or assigned 32-bit value opaque where the device's select between two
 * constants is not exact (vy_vk_math.select_exact): `v` becomes a temp holding
 * `v + (v & vy_z)`, vy_z being a push constant that is always 0. The operand of the opaque
 * addition is the value itself, so no two values merged by a select or a phi share an operation
 * with a common operand that the driver could take out, leaving a select between constants
 * (docs/semantics.md section 10). Booleans and exact devices keep `v` as it is.
 */
void vy__vk_opaque(struct vy__vk_gen *g, struct vy__vk_val *v);

/* Emit the code that raises trap `kind` at the current node and ends the invocation, guarded by
 * the GLSL condition `cond`. */
void vy__vk_trap_if(struct vy__vk_gen *g, const char *cond, unsigned kind);

/* Decide whether the program is coarse (g->coarse, layout->coarse); before any emission. */
void vy__vk_coarse_plan(struct vy__vk_gen *g);
/* Whether an index expression is gid.x in a coarse program. */
bool vy__vk_coarse_gid_index(const struct vy__vk_gen *g, const struct vy_expr *idx);
/* A coarse program's globals and the head of vy_main, which holds the entry's statements. */
void vy__vk_coarse_head(const struct vy__vk_gen *g, struct vy__vk_str *out);
/* A coarse program's main() after its prologue: registers, calls of vy_main, stores. */
void vy__vk_coarse_main(const struct vy__vk_gen *g, struct vy__vk_str *out);

#endif
