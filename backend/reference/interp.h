/*
 * Internals of the reference interpreter, shared by its source files and its unit tests; nothing
 * outside backend/reference/ and tests/reference/ includes this header.
 *
 * A dispatch goes through three stages:
 *   prepare  clone the caller's program, validate the clone (which types every expression), lower
 *            the math library (planner/vmath.h) and compile the clone into the tree of struct
 *            ref_node and struct ref_expr below, where names are resolved to variable slots,
 *            buffer indices and spec-constant indices (compile.c);
 *   bind     turn the inputs or resident buffers into one word array per buffer (memory.c,
 *            resident.c);
 *   run      execute the grid, one workgroup after another in linear order, each workgroup in
 *            lock step over all of its invocations with a list of active lanes (interp.c, with
 *            the operations of ops_int.c, ops_float.c and memory.c).
 *
 * Values are 32-bit words: u32 and i32 as their bits, f32 as its bits (always canonical, see
 * ref_canon), bool as 0 or 1.
 *
 * Thread-safety: a compiled program is immutable and may be run by several threads at once; all
 * state of a run lives in that run.
 */
#ifndef VY_BACKEND_REFERENCE_INTERP_H
#define VY_BACKEND_REFERENCE_INTERP_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "backend.h"
#include "binding.h"
#include "ir.h"
#include "launch.h"
#include "node_path.h"

struct vy_arena;
struct vy_err;

/* Device limits of the interpreter (reported in its device profile and checked at dispatch). */
#define REF_MAX_INVOCATIONS 1024u
#define REF_MAX_WORKGROUP_X 1024u
#define REF_MAX_WORKGROUP_Y 1024u
#define REF_MAX_WORKGROUP_Z 64u
#define REF_MAX_SHARED_BYTES (64u * 1024u)
#define REF_MAX_SUBGROUP_SIZE 128u
/* A u32 index reaches UINT32_MAX elements of 4 bytes. */
#define REF_MAX_BUFFER_BYTES ((uint64_t)UINT32_MAX * 4u)

/* ---- Canonical f32 (DESIGN.md §4.2) ---- */

#define REF_F32_NAN UINT32_C(0x7FC00000)
#define REF_F32_SIGN UINT32_C(0x80000000)
#define REF_F32_EXP UINT32_C(0x7F800000)
#define REF_F32_MANT UINT32_C(0x007FFFFF)

/* The one canonicalization of every f32 result, load and store: any NaN becomes 0x7FC00000 and
 * any subnormal becomes the zero of its sign. */
static inline uint32_t ref_canon(uint32_t bits)
{
	uint32_t exp = bits & REF_F32_EXP;
	if (exp == REF_F32_EXP) {
		return (bits & REF_F32_MANT) ? REF_F32_NAN : bits;
	}
	if (exp == 0) {
		return bits & REF_F32_SIGN;
	}
	return bits;
}

static inline float ref_f32(uint32_t bits)
{
	float f;
	memcpy(&f, &bits, sizeof(f));
	return f;
}

/* Bits of `f`, canonicalized. */
static inline uint32_t ref_bits(float f)
{
	uint32_t bits;
	memcpy(&bits, &f, sizeof(bits));
	return ref_canon(bits);
}

/* i32 meaning of a word, without implementation-defined conversions. */
static inline int32_t ref_i32(uint32_t v)
{
	return v < UINT32_C(0x80000000) ? (int32_t)v
					: (int32_t)(v - UINT32_C(0x80000000)) + INT32_MIN;
}

/* ---- The compiled program ---- */

struct ref_expr {
	uint8_t kind;  /* enum vy_expr_kind */
	uint8_t type;  /* enum vy_type of the result */
	uint8_t atype; /* enum vy_type of the first operand (binary, unary, cast, reduce, shuffle)
			*/
	uint8_t nargs;
	uint32_t op;  /* enum vy_binop, vy_unop, vy_atomic_op or vy_reduce_op */
	uint32_t imm; /* literal bits, axis, variable slot, buffer index or spec index */
	const struct ref_expr *args[3];
};

struct ref_node;

struct ref_block {
	const struct ref_node *items;
	uint32_t len;
};

struct ref_node {
	uint8_t kind;    /* enum vy_node_kind */
	uint32_t index;  /* preorder number in the written program (planner/node_path.h) */
	uint32_t slot;   /* let, assign: the variable; loop: the counter, its bound at slot + 1 */
	uint32_t buffer; /* store: the buffer's index in the program */
	const struct ref_expr *args[2];
	struct ref_block body; /* then, or the body */
	struct ref_block orelse;
};

struct ref_spec {
	const char *name; /* borrowed from the program */
	uint8_t type;
	uint32_t bits; /* default, canonical */
};

struct ref_prog {
	struct vy_program *program; /* owned: the validated, lowered clone that runs */
	/* owned: the validated clone before lowering, when lowering changed it; NULL otherwise.
	 * Node numbers and paths name nodes of this program, the one its author wrote. */
	struct vy_program *written;
	struct vy_arena *arena; /* owned: everything below */
	struct ref_block entry;
	uint32_t n_slots;    /* variable slots live at once, at most */
	uint32_t expr_depth; /* deepest operand level below a node's expression */
	uint32_t nesting;    /* deepest nesting of if and loop nodes */
	uint32_t n_specs;
	struct ref_spec *specs;
	unsigned features; /* vy_launch_features_scan */
	bool has_loops;
};

/* The program that node numbers refer to. */
static inline const struct vy_program *ref_prog_written(const struct ref_prog *rp)
{
	return rp->written ? rp->written : rp->program;
}

/*
 * Clone `src`, validate the clone for the interpreter's limits (when `validate`; otherwise its
 * expressions must already carry their types, which is how the unit tests run a program that
 * validation would refuse), lower the math library and compile it. Stores a new program in *out.
 * Errors: the validator's first error (INVALID_PROGRAM or UNSUPPORTED_FEATURE), the lowering's
 * error, UNSUPPORTED_FEATURE for a grid_sync barrier below the top level the split honours.
 */
int vy__ref_prog_create(
	const struct vy_program *src, bool validate, struct ref_prog **out, struct vy_err *err);
/* NULL is accepted. */
void vy__ref_prog_destroy(struct ref_prog *rp);

/* Clone `src` and validate the clone for the interpreter's limits, keeping nothing. */
int vy__ref_validate(const struct vy_program *src, struct vy_err *err);

/* ---- Buffers of one run ---- */

/* One word array per buffer of the program, by its index in the program's buffer table. */
struct ref_mem {
	uint32_t *words[VY_IR_MAX_BUFFERS]; /* NULL for workgroup buffers and empty buffers */
	uint32_t count[VY_IR_MAX_BUFFERS];  /* elements bound at dispatch */
	bool owned[VY_IR_MAX_BUFFERS];      /* words came from malloc in vy__ref_mem_bind */
};

/*
 * Bind the inputs of a dispatch: read_only, uniform and read_write buffers get a copy of their
 * input, output buffers zeroed words, workgroup buffers nothing (the run makes them). `plan` was
 * built for these inputs, which it has checked. Returns 0, or OUT_OF_MEMORY with nothing bound.
 */
int vy__ref_mem_bind(struct ref_mem *mem, const struct vy_program *p,
	const struct vy_binding_plan *plan, const struct vy_bytes *inputs, struct vy_err *err);
/* Move the buffers with an output index into `outputs`, in output order. */
void vy__ref_mem_outputs(struct ref_mem *mem, const struct vy_program *p,
	const struct vy_binding_plan *plan, struct vy_outputs *outputs);
/* Free the words this memory owns. */
void vy__ref_mem_finish(struct ref_mem *mem);

/* ---- Resident buffers ---- */

/* One resident buffer; the table holds a reference, and so does each dispatch that binds it. */
struct ref_resident {
	uint64_t id;
	size_t len;      /* bytes */
	uint32_t *words; /* owned: len rounded up to whole words, zero-filled at allocation */
	uint32_t refs;
};

/* Resident buffers by id. Every function may be called from any thread. */
struct ref_residents {
	pthread_mutex_t lock;
	struct ref_resident **items; /* owned */
	size_t len;
	size_t cap;
};

void vy__ref_residents_init(struct ref_residents *t);
/* Free every buffer, whoever still holds it: the backend is going away. */
void vy__ref_residents_finish(struct ref_residents *t);
/* Allocate a zero-filled buffer of `len` bytes under a new random id. BAD_REQUEST above
 * REF_MAX_BUFFER_BYTES; INTERNAL when the system gives no randomness. */
int vy__ref_residents_alloc(
	struct ref_residents *t, size_t len, struct vy_resource *out, struct vy_err *err);
/* Copy in or out at `offset`; NOT_FOUND for an unknown id, BAD_REQUEST past the end. */
int vy__ref_residents_upload(struct ref_residents *t, const struct vy_resource *res, size_t offset,
	struct vy_bytes data, struct vy_err *err);
int vy__ref_residents_download(struct ref_residents *t, const struct vy_resource *res,
	size_t offset, uint8_t *dst, size_t len, struct vy_err *err);
/* Drop the table's reference: the id is gone at once, the memory when the last user lets go. */
int vy__ref_residents_free(struct ref_residents *t, struct vy_resource res, struct vy_err *err);
/* Forget every id at once (a lost device); memory held by a dispatch goes when it lets go. */
void vy__ref_residents_drop_all(struct ref_residents *t);
/* Take a reference on each of `n` resources for a dispatch; NOT_FOUND names the first unknown
 * one (`resources[i]`), and then no reference is held. */
int vy__ref_residents_acquire(struct ref_residents *t, const struct vy_resource *res, size_t n,
	struct ref_resident **out, struct vy_err *err);
void vy__ref_residents_release(struct ref_residents *t, struct ref_resident **bufs, size_t n);

/* ---- Lanes and the operations on them ---- */

/* Active lanes (linear local invocation indices), ascending. */
struct ref_lanes {
	uint16_t *at;
	uint32_t n;
};

/* out[l] = expr for each active lane l of `lanes` (the names `lanes` and `out` are in scope). */
#define REF_EACH(expr)                                                                             \
	do {                                                                                       \
		for (uint32_t k_ = 0; k_ < lanes->n; k_++) {                                       \
			uint32_t l = lanes->at[k_];                                                \
			out[l] = (expr);                                                           \
		}                                                                                  \
	} while (0)

struct ref_exec;

/* Lane `lane` traps with `kind` at the node being executed; only its first trap counts. */
void vy__ref_trap(struct ref_exec *x, uint32_t lane, enum vy_trap_kind kind);

void vy__ref_int_binary(struct ref_exec *x, enum vy_binop op, enum vy_type type,
	const struct ref_lanes *lanes, const uint32_t *a, const uint32_t *b, uint32_t *out);
void vy__ref_int_unary(enum vy_unop op, enum vy_type type, const struct ref_lanes *lanes,
	const uint32_t *a, uint32_t *out);
void vy__ref_f32_binary(enum vy_binop op, const struct ref_lanes *lanes, const uint32_t *a,
	const uint32_t *b, uint32_t *out);
void vy__ref_f32_unary(
	enum vy_unop op, const struct ref_lanes *lanes, const uint32_t *a, uint32_t *out);
void vy__ref_f32_fma(const struct ref_lanes *lanes, const uint32_t *a, const uint32_t *b,
	const uint32_t *c, uint32_t *out);
void vy__ref_cast(enum vy_type from, enum vy_type to, const struct ref_lanes *lanes,
	const uint32_t *a, uint32_t *out);
/* Bitcast between u32, i32 and f32: the same word, canonical when read as f32 (a NaN or subnormal
 * pattern becomes the canonical NaN or the zero of its sign, as a load does). */
void vy__ref_bitcast(
	enum vy_type to, const struct ref_lanes *lanes, const uint32_t *a, uint32_t *out);
/* One step of a subgroup reduction: acc `op` v, for a value of `type`. */
uint32_t vy__ref_reduce_step(enum vy_reduce_op op, enum vy_type type, uint32_t acc, uint32_t v);

/* Scalar f32 operations, on canonical bits, with canonical results. */
uint32_t vy__ref_f32_add(uint32_t a, uint32_t b);
uint32_t vy__ref_f32_mul(uint32_t a, uint32_t b);
uint32_t vy__ref_f32_min(uint32_t a, uint32_t b);
uint32_t vy__ref_f32_max(uint32_t a, uint32_t b);

/* Load element idx[l] of a buffer of `count` elements for each lane; out of bounds reads 0. */
void vy__ref_load(const uint32_t *words, uint32_t count, enum vy_type type,
	const struct ref_lanes *lanes, const uint32_t *idx, uint32_t *out);
/* Store for each live lane, in ascending lane order; out of bounds does nothing. */
void vy__ref_store(uint32_t *words, uint32_t count, enum vy_type type,
	const struct ref_lanes *lanes, const uint8_t *alive, const uint32_t *idx,
	const uint32_t *val);
/*
 * Apply an atomic for each live lane in ascending lane order and give each lane the old value;
 * `expected` is read by compare_exchange only. Out of bounds does nothing and gives 0.
 */
void vy__ref_atomic(uint32_t *words, uint32_t count, enum vy_atomic_op op,
	const struct ref_lanes *lanes, const uint8_t *alive, const uint32_t *idx,
	const uint32_t *expected, const uint32_t *val, uint32_t *out);

/* ---- Running ---- */

struct ref_run_config {
	const struct vy_spec_map *spec; /* borrowed; NULL: every default */
	uint64_t max_loop_iterations;   /* per invocation, over all of its loops; >= 1 */
	uint64_t deadline_ns;           /* CLOCK_MONOTONIC; 0: none */
	uint32_t timeout_ms;            /* for the message */
	uint32_t subgroup_size;
};

/*
 * Run the grid of `launch` over `mem`. Returns 0; TRAP naming the first trap site (node path and
 * kind) when any invocation trapped; DISPATCH_FAILED naming a barrier that part of a live
 * workgroup reached; BAD_REQUEST for a spec value of the wrong type; TIMEOUT past the deadline.
 * Buffers keep whatever the run wrote, whatever the result.
 */
int vy__ref_run(const struct ref_prog *rp, struct ref_mem *mem, const struct vy_launch *launch,
	const struct ref_run_config *cfg, struct vy_err *err);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t vy__ref_now_ns(void);

/* ---- For the unit tests ---- */

/*
 * vy_backend_dispatch on the reference backend `b`, without validating the program: its
 * expressions must already carry their types (run vy_validate on it first, whatever the result).
 * This is how a test makes a program that validation refuses reach the interpreter.
 */
int vy__reference_dispatch_unchecked(struct vy_backend *b, const struct vy_program *program,
	const struct vy_bytes *inputs, size_t n_inputs, const struct vy_dispatch_config *config,
	struct vy_outputs *outputs, struct vy_err *err);

#endif
