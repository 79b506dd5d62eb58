/*
 * The reference backend (DESIGN.md §4): a CPU interpreter of the whole vyre IR behind the backend
 * contract (backend.h). Its outputs define the semantics: every other backend must return the
 * same bytes for every program of the conformance corpus. The comments at the top of interp.c,
 * ops_int.c, ops_float.c and memory.c record the decisions made where DESIGN.md leaves room.
 *
 * Node paths in errors name nodes of the program as written (planner/node_path.h), also when the
 * math-library lowering inserted nodes; a grid_sync segment's errors name nodes of the segment,
 * as the split driver runs it, with the message prefixed "grid_sync segment K: ". A timeout
 * (config.timeout_ms) applies to each launch, so to each grid_sync segment on its own.
 *
 * What it offers through the contract:
 *   dispatch         validate (the validator's first error is INVALID_PROGRAM or
 *                    UNSUPPORTED_FEATURE), lower the math library, plan the bindings, compute
 *                    the launch (planner/launch.h, never folded: the interpreter has no grid
 *                    limit) and interpret it. A program with a top-level grid_sync runs through
 *                    the split driver (planner/grid_sync.h), one launch per segment.
 *   dispatch_timed   wall_ns of the whole call; device_ns the time spent interpreting.
 *   resident_*       heap buffers under random 64-bit ids. resident_dispatch binds one resource
 *                    per non-workgroup buffer, in binding order, and runs in place: a buffer
 *                    with a declared count needs at least count * 4 bytes and uses the first
 *                    count elements; a count-0 buffer uses the whole resource, whose size must
 *                    be a multiple of 4 bytes. Output buffers (write_only, or marked output)
 *                    are zero-filled before the program runs (before each grid_sync segment),
 *                    as a dispatch's outputs are, so both paths compute the same bytes. On
 *                    failure the resources keep whatever the program wrote before it failed.
 *   capabilities     SUBGROUP_OPS (simulated at the configured subgroup size); not GRID_SYNC,
 *                    which goes through the split driver.
 *   limits           workgroups of at most 1024 invocations ([1024, 1024, 64] per axis), 64 KiB
 *                    of workgroup memory, UINT32_MAX workgroups per axis.
 *
 * Run-time failures: TRAP names the trap kind and the node path of the lowest-numbered node that
 * trapped; DISPATCH_FAILED names a barrier that only part of a workgroup's live invocations
 * reached (a barrier in divergent control flow that slipped past validation); TIMEOUT when the
 * run passes config.timeout_ms; BAD_REQUEST for a config.spec value of the wrong type;
 * OUT_OF_MEMORY when a buffer, or the invocation state of a workgroup (at most 512 MiB: variable
 * slots times lanes), cannot be held.
 *
 * Thread-safety: every entry but destroy may be called from any number of threads at once. A
 * dispatch runs on the calling thread; workgroups run one after another, so a dispatch is
 * deterministic, atomics included.
 */
#ifndef VY_BACKEND_REFERENCE_REFERENCE_H
#define VY_BACKEND_REFERENCE_REFERENCE_H

#include <stdint.h>

#include "backend.h"

struct vy_err;

/* The backend's id in the registry and in requests ("backend": "reference"). */
#define VY_REFERENCE_ID "reference"

/* lavapipe's subgroup size, the reference's default (DESIGN.md §4.3). */
#define VY_REFERENCE_DEFAULT_SUBGROUP_SIZE 8u

struct vy_reference_options {
	/*
	 * Lanes of a simulated subgroup: a power of two from 1 to 128; 0 for the default. Set it
	 * to the subgroup size of the backend the reference is compared with (NVIDIA: 32).
	 */
	uint32_t subgroup_size;
};

/*
 * Create a reference backend; `opts` may be NULL for every default. Stores the backend in *out
 * (free it with vy_backend_destroy) and returns 0, or leaves *out NULL and returns BAD_REQUEST
 * for a subgroup size that is not a power of two from 1 to 128.
 */
int vy_reference_backend_create(
	const struct vy_reference_options *opts, struct vy_backend **out, struct vy_err *err);

#endif
