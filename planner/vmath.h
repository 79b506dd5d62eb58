/*
 * The math-library lowering (DESIGN.md §4.4). inverse_sqrt, reciprocal, the transcendental
 * functions (exp exp2 exp10 expm1 log log2 log10 log1p cbrt sin cos tan asin acos atan sinh cosh
 * tanh erf erfc, and the correctly rounded exp_cr exp2_cr log_cr log2_cr) and those of two
 * operands (hypot atan2 pow) have no single cheap right answer, so
 * vyred defines each one as a fixed expansion into operations that every backend computes exactly
 * the same way: f32 add, sub, mul, fma, correctly rounded div and sqrt, min, max, abs, neg, round,
 * comparisons, select, casts, bitcasts and i32/u32 integer operations. The
 * reference interpreter and the code generators run the lowered program, so these functions give
 * the same bits everywhere. docs/semantics.md lists every expansion with its domain and measured
 * error.
 *
 * The lowering rewrites the statements that use one of these operations. Every operand that an
 * expansion reads more than once is first bound to a fresh `let` placed just before the statement
 * (inside the same block, so nothing moves out of a loop body or a branch). To keep the order and
 * the number of evaluations of everything with an effect, a rewritten statement also has each of
 * its loads, atomics and i32 divisions or remainders (which may trap) bound to a `let`, in
 * evaluation order: a node's slots in order (store: index then value; loop: from then to), an
 * expression's operands left to right, operands before the operation. Statements that use none of
 * the lowered operations are left untouched, and so are shared subexpressions: the rewrite copies
 * what it changes.
 *
 * New variables are named with a prefix that no buffer, variable or specialization constant of the
 * program starts with ("_vm" unless the program already uses it), followed by a counter.
 *
 * The new `let` nodes shift the positions of the nodes after them in their block; every other node
 * keeps its kind and name, so vy_node_path_origins (node_path.h) maps the lowered program back to
 * the program as written, and run-time errors name the statements the author wrote.
 */
#ifndef VY_PLANNER_VMATH_H
#define VY_PLANNER_VMATH_H

#include <stdbool.h>

#include "err.h"
#include "ir.h"

/*
 * True when the program uses at least one operation that vy_vmath_lower expands. The program must
 * have passed vy_validate (the walk trusts its shape).
 */
bool vy_vmath_needed(const struct vy_program *p);

/* Whether the lowering replaces unary operator `op` (inverse_sqrt, reciprocal and the
 * transcendentals): no backend ever sees these. */
bool vy_vmath_lowers(enum vy_unop op);

/* Whether the lowering replaces binary operator `op` (hypot, atan2, pow). */
bool vy_vmath_lowers_binary(enum vy_binop op);

/*
 * Rewrite the program in place so that none of the lowered operations remains. `p` must have
 * passed vy_validate; everything new is allocated from p->arena and carries its result type, so
 * the lowered program is ready for a backend, and it also passes vy_validate again.
 *
 * Errors: VY_E_UNSUPPORTED_FEATURE when the lowered program would exceed VY_IR_MAX_NODES nodes;
 * the program is then left exactly as it was. `err` may be NULL.
 *
 * Thread-safety: writes the program; one thread at a time.
 */
int vy_vmath_lower(struct vy_program *p, struct vy_err *err);

#endif
