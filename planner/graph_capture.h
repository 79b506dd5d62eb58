/*
 * Capture plans for replayable dispatch (seed 003). A backend that records a dispatch once and
 * replays it (a Vulkan command buffer kept for reuse, a CUDA graph, a persistent-dispatch
 * recorder) first walks the binding plan to learn how many stable input allocations, output
 * allocations, readback slots and kernel pointer arguments the recording needs, and whether the
 * steady state may skip uploads. This module owns that walk, so every recorder counts alike.
 *
 * Capacity arithmetic is checked (struct vy_transfer_accounting): a count that would overflow
 * size_t is an error that names the accounting policy, the table that overflowed and the fix,
 * never a wrapped size.
 *
 * Thread-safety: the functions keep no state and only read their arguments.
 */
#ifndef VY_PLANNER_GRAPH_CAPTURE_H
#define VY_PLANNER_GRAPH_CAPTURE_H

#include "binding.h"

#include <stdbool.h>
#include <stddef.h>

struct vy_err;

/*
 * An accounting policy for host-side capacities: `policy` names what is being sized (it leads
 * every error message) and `fix` is the imperative remedy an overflow reports. Both borrowed;
 * policies are usually static constants.
 */
struct vy_transfer_accounting {
	const char *policy;
	const char *fix;
};

/*
 * *out = lhs + rhs when the sum fits size_t, and return 0. Otherwise leave *out unchanged and
 * return VY_E_INVALID_PROGRAM, with `err` (when given) naming the policy, `label` (the table being
 * sized, borrowed) and both operands, and carrying the policy's fix.
 */
int vy_transfer_accounting_add(const struct vy_transfer_accounting *acct, size_t lhs, size_t rhs,
	const char *label, size_t *out, struct vy_err *err);

/* Every capacity a recorder needs for one replayable dispatch. */
struct vy_graph_capture_plan {
	/* Device allocations for bindings that take an input; an input-output binding counts here
	 * only, because its input allocation is read back as its output. */
	size_t input_device_capacity;
	/* Device allocations for the other non-shared bindings (outputs with no input). */
	size_t output_device_capacity;
	/* Host readback slots: one per binding with an output index. */
	size_t output_readback_capacity;
	/* Pointer arguments of the recorded kernel: one per non-shared binding, binding order. */
	size_t kernel_pointer_capacity;
	/* The pointer arguments plus the trailing launch-parameter pointer. */
	size_t kernel_argument_capacity;
	/*
	 * True when, once the inputs are on the device, the recording can be replayed without
	 * uploading them again: no binding is both read as an input and written as an output, so
	 * a replay never sees the previous replay's results in its inputs.
	 */
	bool resident_input_replay_safe;
};

/*
 * Plan the capture of a dispatch with these bindings. Shared (workgroup) bindings take no
 * storage and no argument. A binding has an input when its input_index is not
 * VY_BINDING_NONE, and an output likewise. Fills *out and returns 0, or returns
 * VY_E_INVALID_PROGRAM when a capacity would overflow size_t, leaving *out unchanged.
 */
int vy_graph_capture_plan_build(const struct vy_binding_plan *bindings,
	struct vy_graph_capture_plan *out, struct vy_err *err);

/*
 * The checked addition of vy_graph_capture_plan_build under its policy ("graph capture binding
 * plan"), exposed so that recorders sizing their own tables report overflows the same way.
 */
int vy_graph_capture_capacity_add(
	size_t lhs, size_t rhs, const char *label, size_t *out, struct vy_err *err);

#endif
