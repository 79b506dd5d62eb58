/*
 * The validator of vyre IR programs (DESIGN.md §3). It checks a program built by the builders of
 * ir.h or decoded by the codec, records the result type of every expression in expr->type, and
 * reports every error it finds, each with a location path, a message naming the offending thing
 * and the types involved, and one imperative fix.
 *
 * Location paths: `vyre`, `name`, `workgroup_size[i]`, `buffers`, `buffers[i].name|binding|access|
 * type|count|hints.alignment|hints.coalesce_axis|hints.locality`, `entry`; a node is
 * `entry[i].kind` and its slots follow (`.let.value`, `.if.then[0]`, `.loop.body[2]`, ...); an
 * expression in a slot is named by the slot and its operands follow as `.<name>.<operand>`, where
 * <name> is the operator for binary and unary expressions
 * (`entry[0].store.value.add.b.load.index`). An error about a node stops at the node kind
 * (`entry[4].barrier`); an error about an expression stops at its slot. Paths longer than
 * VY_ERR_AT_MAX are cut and end in "...".
 *
 * Decisions where DESIGN.md leaves room:
 * - Buffer access: read_only and uniform buffers are loaded only; write_only buffers are stored
 *   only; read_write buffers take loads, stores and atomics; workgroup buffers (shared memory of
 *   one workgroup) take loads and stores (atomics only on read_write buffers, as DESIGN.md §3
 *   says). `len` of a workgroup buffer is its declared count. write_only and output buffers need
 *   a count > 0: the backend allocates them, and no input sizes them.
 * - grid_sync: only at the top level of the entry, or at the top level of a region that is the
 *   entry's only node (the wrapped form the split of planner/grid_sync.h peels). Each side of a
 *   grid_sync barrier runs as its own launch, so a variable declared before one cannot be used
 *   or assigned after it.
 * - Types: add sub mul div min max on u32, i32, f32; mod on u32 and i32 (an exact f32
 *   remainder has no cheap exact GPU form); bit_and bit_or bit_xor mul_high on u32
 *   and i32; abs_diff and sat_* on u32 only; shl shr rotl rotr take a u32 or i32 value and a u32
 *   count; eq and ne compare any two values of one type, lt le gt ge compare u32, i32 or f32 (not
 *   bool); and, or, not take u32 or bool. bit_not popcount clz ctz reverse_bits keep the type of
 *   their u32 or i32 operand; neg abs sign take i32 or f32; the float functions take f32 only;
 *   is_nan is_inf is_finite give bool; unpack* map u32 to u32. subgroup_shuffle moves a value of
 *   any type.
 * - Uniform values (for barriers) are built from literals, spec constants, len, wgid and uniform
 *   variables only; gid, lid, load, atomic and every subgroup expression are not uniform. A
 *   variable is uniform unless its let value or any assignment to it is not, or it is assigned
 *   under non-uniform control flow; a loop variable is uniform when its loop is reached in uniform
 *   control flow with uniform bounds. A return under non-uniform control flow makes every later
 *   barrier non-uniform, and every barrier of the loops around that return.
 * - Names (buffers, variables, spec constants) match [A-Za-z_][A-Za-z0-9_]{0,63}; region
 *   generator names and the program label are 1 to 64 bytes of any text.
 *
 * Capability errors, reported as VY_E_UNSUPPORTED_FEATURE: subgroup expressions when the caps
 * deny them, a workgroup size above the caps' per-axis or total limit, and workgroup buffers
 * larger than the caps' shared memory. Everything else is VY_E_INVALID_PROGRAM.
 *
 * The walk is bounded: nodes deeper than VY_IR_MAX_NESTING and expressions deeper than
 * VY_IR_MAX_EXPR_DEPTH are reported and not entered, the walk stops after VY_IR_MAX_NODES nodes
 * and after VY_VALIDATE_MAX_EXPRS expression visits, so no program, however deep or however much
 * it shares subexpressions, can exhaust the stack or run for long.
 *
 * Memory: temporaries live on the heap during the call only; running out of memory aborts.
 * Thread-safety: vy_validate writes the type fields of the program's expressions, so one program
 * is validated by one thread at a time; different programs may be validated concurrently.
 */
#ifndef VY_PROTOCOL_VALIDATE_H
#define VY_PROTOCOL_VALIDATE_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"
#include "ir.h"

/*
 * Expression visits allowed in one program. A decoded expression takes several bytes of the
 * document, so no program within VY_IR_MAX_DOCUMENT reaches this; it bounds the work on programs
 * built in C that share one subexpression in many places.
 */
#define VY_VALIDATE_MAX_EXPRS (UINT32_C(1) << 22)

/* What the target backend and device support. */
struct vy_caps {
	bool subgroups;                     /* subgroup_* expressions allowed */
	uint32_t max_workgroup_invocations; /* 0 = no limit check */
	uint32_t max_workgroup_size[3];     /* 0 = no limit check on that axis */
	uint32_t max_shared_bytes;          /* 0 = no limit check */
};

/*
 * Check the program, record the result type of every expression in expr->type (VY_TYPE_NONE
 * where an error makes it unknown), and append every error found to `errs` (which may be NULL;
 * the list keeps VY_ERR_LIST_MAX errors and counts the rest in `dropped`). `caps` may be NULL: no
 * capability limits, subgroups allowed.
 *
 * Returns 0 when the program is valid, VY_E_INVALID_PROGRAM when any INVALID_PROGRAM error was
 * found, otherwise VY_E_UNSUPPORTED_FEATURE when only capability errors were found.
 */
int vy_validate(struct vy_program *program, const struct vy_caps *caps, struct vy_err_list *errs);

/*
 * vy_validate, keeping only the first error in `err` (which may be NULL). When there were several
 * errors the message starts with their count: "3 errors; first: ...". Returns what vy_validate
 * returns; on success `err` is cleared.
 */
int vy_validate_first(struct vy_program *p, const struct vy_caps *caps, struct vy_err *err);

#endif
