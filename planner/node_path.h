/*
 * Node numbers and node paths: how a backend names the statement where something happened at run
 * time (a trap, a barrier reached by part of a workgroup), so that every backend names the same
 * statement the same way (DESIGN.md §4.5).
 *
 * Numbering: every node of the program gets its preorder index, counting from 0: a node, then the
 * nodes of its first block (`then` of an if, `body` of a loop, block or region), then those of its
 * `else` block, then the next node of its own block. The entry's first node is 0.
 *
 * Paths use the validator's grammar for a node (protocol/validate.h): the block name and index of
 * each level, then the node's kind, as in `entry[1].loop.body[0].store`.
 *
 * Trap sites: a trap is identified by its node number and its kind. When several invocations
 * trap, a dispatch reports the site with the smallest vy_trap_key, which orders by node number
 * and then by kind in the order of VY_TRAP_KIND_MAP, so that every backend reports the same one.
 *
 * The program must have passed validation: its nesting limit bounds the recursion of these walks.
 * Thread-safety: pure functions of their arguments.
 */
#ifndef VY_PLANNER_NODE_PATH_H
#define VY_PLANNER_NODE_PATH_H

#include <stddef.h>
#include <stdint.h>

#include "ir.h"

/* Marks "no such node". */
#define VY_NODE_NONE UINT32_MAX

/* Number of nodes of the program (entry included recursively). */
uint32_t vy_node_path_count(const struct vy_program *p);

/* The preorder number of `node` in `p`, or VY_NODE_NONE when the node is not in the program. */
uint32_t vy_node_path_index(const struct vy_program *p, const struct vy_node *node);

/* The node numbered `index`, or NULL when the program has fewer nodes. */
const struct vy_node *vy_node_path_node(const struct vy_program *p, uint32_t index);

/*
 * Write the path of the node numbered `index` into `buf` (`size` > 0), NUL-terminated. A path
 * longer than the buffer is cut and ends in "..." (when `size` is at least 4). Returns 0, or
 * VY_E_NOT_FOUND with an empty string when the program has fewer nodes.
 */
int vy_node_path(const struct vy_program *p, uint32_t index, char *buf, size_t size);

/*
 * Map every node of `lowered`, a program made from `written` by inserting `let` nodes just before
 * statements (as the math-library lowering of planner/vmath.h does), to the number of the node of
 * `written` it stands for: a node present in both to itself, an inserted let to the statement it
 * precedes. So a backend that runs the lowered program names run-time events by the program as
 * its author wrote it. A node of `lowered` is the next node of `written` when it has the same kind
 * and name (inserted lets have names no program name shares). `out` receives
 * vy_node_path_count(lowered) numbers, `n_out` of room. Returns 0, or VY_E_INTERNAL when
 * `lowered` is not such a rewrite of `written`.
 */
int vy_node_path_origins(const struct vy_program *written, const struct vy_program *lowered,
	uint32_t *out, uint32_t n_out);

/* X(enum suffix, wire name), in tie-break order. */
#define VY_TRAP_KIND_MAP(X)                                                                        \
	X(INT_DIV_ZERO, "int_div_zero")                                                            \
	X(INT_OVERFLOW_DIV, "int_overflow_div")                                                    \
	X(LOOP_LIMIT, "loop_limit")

#define VY__ENUM_TRAP(suffix, wire) VY_TRAP_##suffix,
enum vy_trap_kind { VY_TRAP_KIND_MAP(VY__ENUM_TRAP) VY_TRAP_KIND_COUNT };
#undef VY__ENUM_TRAP

/* "int_div_zero", ...; "?" for a value outside the enum. */
const char *vy_trap_kind_name(enum vy_trap_kind kind);

/* The order of trap sites: node number first, then kind. */
static inline uint64_t vy_trap_key(uint32_t node, enum vy_trap_kind kind)
{
	return (uint64_t)node * VY_TRAP_KIND_COUNT + (uint64_t)kind;
}

#endif
