/*
 * The capture plan of a replayable dispatch (seed 003) and the checked capacity arithmetic it is
 * built with. The counts cannot overflow for a plan of at most VY_IR_MAX_BUFFERS bindings, but
 * recorders reuse the accounting for tables whose sizes come from elsewhere, so the checks stay
 * on every addition rather than being argued away here.
 */
#include "graph_capture.h"

#include "err.h"

#include <stdint.h>

static const struct vy_transfer_accounting capture_accounting = {
	.policy = "graph capture binding plan",
	.fix = "record a smaller graph shape",
};

int vy_transfer_accounting_add(const struct vy_transfer_accounting *acct, size_t lhs, size_t rhs,
	const char *label, size_t *out, struct vy_err *err)
{
	if (lhs > SIZE_MAX - rhs) {
		return vy_err_set(err, VY_E_INVALID_PROGRAM, NULL, acct->fix,
			"%s: %s capacity %zu + %zu overflows the host's size_t", acct->policy,
			label, lhs, rhs);
	}
	*out = lhs + rhs;
	return 0;
}

int vy_graph_capture_capacity_add(
	size_t lhs, size_t rhs, const char *label, size_t *out, struct vy_err *err)
{
	return vy_transfer_accounting_add(&capture_accounting, lhs, rhs, label, out, err);
}

/* Count one more entry of a table; returns the accounting's result. */
static int bump(size_t *count, const char *label, struct vy_err *err)
{
	return vy_graph_capture_capacity_add(*count, 1, label, count, err);
}

int vy_graph_capture_plan_build(const struct vy_binding_plan *bindings,
	struct vy_graph_capture_plan *out, struct vy_err *err)
{
	struct vy_graph_capture_plan plan = {.resident_input_replay_safe = true};
	int rc;

	for (uint32_t i = 0; i < bindings->n_bindings; i++) {
		const struct vy_binding *b = &bindings->bindings[i];
		if (b->role == VY_ROLE_SHARED) {
			continue;
		}
		bool has_input = b->input_index != VY_BINDING_NONE;
		bool has_output = b->output_index != VY_BINDING_NONE;

		rc = bump(&plan.kernel_pointer_capacity, "kernel pointer table", err);
		if (rc < 0) {
			return rc;
		}
		if (has_input) {
			rc = bump(&plan.input_device_capacity, "input device table", err);
		} else {
			rc = bump(&plan.output_device_capacity, "output device table", err);
		}
		if (rc < 0) {
			return rc;
		}
		if (has_output) {
			rc = bump(&plan.output_readback_capacity, "output readback table", err);
			if (rc < 0) {
				return rc;
			}
		}
		if (has_input && has_output) {
			plan.resident_input_replay_safe = false;
		}
	}

	rc = vy_graph_capture_capacity_add(plan.kernel_pointer_capacity, 1, "kernel argument table",
		&plan.kernel_argument_capacity, err);
	if (rc < 0) {
		return rc;
	}
	*out = plan;
	return 0;
}
