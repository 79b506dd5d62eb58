/*
 * Grid-sync splitting (seed 004, DESIGN.md §5). A `grid_sync` barrier asks every invocation of the
 * whole grid to wait and every earlier write to be visible after it. A backend without a native
 * grid barrier gets the same effect from kernel launches: the program is split at each top-level
 * grid_sync barrier and the segments are dispatched in order, each segment's read_write buffers
 * fed to the next, so the launch boundary is the fence.
 *
 * Only the top level counts. The top level is the entry, or, when the entry is exactly one region
 * (the "wrapped" form, a region recording the generator of the whole program), that region's
 * body. A grid_sync barrier anywhere else (inside a loop, an if, or a block or region that is not
 * the whole entry) is not seen and not split, as in the seed: a program must keep its grid_sync
 * barriers at this top level to have them honoured by a split. Variables do not live across a
 * split either: a segment sees only the lets of its own nodes.
 *
 * Ownership: segments are views. Each is a struct vy_program whose name, buffer table and nodes
 * are borrowed from the source program, which must outlive the split and must not change while
 * it exists; the split owns only what it adds (the segment structs, and the region that wraps
 * each segment of a wrapped program), all in one arena that vy_grid_sync_split_finish frees. A
 * segment's `arena` is NULL: never pass one to vy_program_destroy or to a builder (ir.h); take
 * vy_program_clone of it for a program of its own. Splitting copies no node and no buffer table,
 * so it costs time and memory linear in the top-level length, whatever the number of barriers.
 *
 * Thread-safety: the functions keep no state; a split belongs to its caller. Segments, like any
 * program, may be read by many threads.
 */
#ifndef VY_PLANNER_GRID_SYNC_H
#define VY_PLANNER_GRID_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "ir.h"

struct vy_arena;
struct vy_err;

/* Whether the top level of `program` holds a grid_sync barrier. */
bool vy_grid_sync_contains(const struct vy_program *program);

/* The segments of a program, in execution order; there is always at least one. */
struct vy_grid_sync_split {
	struct vy_arena *arena;             /* owned: holds the segments */
	const struct vy_program **segments; /* views into the source program */
	uint32_t *starts; /* top-level position in the source of each segment's first node */
	bool wrapped;     /* the source is one region around the top level */
	uint32_t len;
};

/*
 * Split `program` at every top-level grid_sync barrier. The barriers themselves are dropped: the
 * launch boundary replaces them. Segments keep the source's shape: when the source is wrapped,
 * each segment's entry is one region with the same generator name around the segment's nodes;
 * otherwise the segment's nodes are its entry. A segment with no nodes (two adjacent barriers, or
 * a barrier first or last) is kept, as a launch that changes nothing. A program without a
 * top-level grid_sync gives one segment whose entry holds the source's own top-level nodes.
 * Never fails (out of memory aborts).
 */
void vy_grid_sync_split(const struct vy_program *program, struct vy_grid_sync_split *out);

/*
 * Turn an error of segment `k` into an error of the whole program: the message gets the prefix
 * "grid_sync segment K: " and a location inside the segment (`entry[2].store`, or
 * `entry[0].region.body[2].store` for a wrapped program) is moved to the same node of the source
 * program. `err` may be NULL.
 */
void vy_grid_sync_segment_error(
	const struct vy_grid_sync_split *split, uint32_t k, struct vy_err *err);

/* Free the segments and empty the split. NULL and zeroed splits are accepted. */
void vy_grid_sync_split_finish(struct vy_grid_sync_split *split);

/*
 * Dispatch `program` on backend `b`, splitting it when needed. When the program has no top-level
 * grid_sync, or the backend reports VY_CAP_GRID_SYNC, this is one vy_backend_dispatch_into.
 * Otherwise each segment runs through vy_backend_dispatch_into in order: the first gets `inputs`;
 * every later one gets the same inputs except that each read_write buffer's input (a buffer of
 * role input_output in the binding plan: read_write, neither workgroup nor marked output) is
 * replaced by that buffer's output from the segment before. Inputs of the other buffers are
 * passed on as the caller gave them, never copied. `outputs` (initialized by the caller) receives
 * the last segment's outputs.
 *
 * Errors: the first segment that fails ends the dispatch; its error is returned with the code,
 * location and fix the backend gave and the message prefixed with "grid_sync segment K: " (K
 * counts from 0). On failure `outputs` is empty.
 */
int vy_grid_sync_dispatch(struct vy_backend *b, const struct vy_program *program,
	const struct vy_bytes *inputs, size_t n_inputs, const struct vy_dispatch_config *config,
	struct vy_outputs *outputs, struct vy_err *err);

#endif
