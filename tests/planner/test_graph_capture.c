/*
 * Capture plans (planner/graph_capture.h). The three tests of seed 003 under their own names,
 * with the seed's generator (the same LCG, seed value and case count), and a few on the
 * accounting helper itself. Binding plans are assembled by hand, as the seed does, so the
 * generator can go past the IR's 32 buffers.
 */
#include <criterion/criterion.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "graph_capture.h"

static struct vy_binding binding(const char *name, uint32_t slot, enum vy_binding_role role,
	uint32_t input_index, uint32_t output_index)
{
	return (struct vy_binding){
		.name = name,
		.binding = slot,
		.buffer_index = slot,
		.role = role,
		.element_size = 4,
		.preferred_alignment = 4,
		.element_count = 16,
		.has_static_len = true,
		.static_byte_len = 64,
		.input_index = input_index,
		.output_index = output_index,
	};
}

static struct vy_binding_plan plan_of(struct vy_binding *bindings, uint32_t n)
{
	return (struct vy_binding_plan){.n_bindings = n, .bindings = bindings};
}

static void assert_plan_eq(const struct vy_graph_capture_plan *got,
	const struct vy_graph_capture_plan *want, size_t case_index)
{
	cr_assert_eq(
		got->input_device_capacity, want->input_device_capacity, "case %zu", case_index);
	cr_assert_eq(
		got->output_device_capacity, want->output_device_capacity, "case %zu", case_index);
	cr_assert_eq(got->output_readback_capacity, want->output_readback_capacity, "case %zu",
		case_index);
	cr_assert_eq(got->kernel_pointer_capacity, want->kernel_pointer_capacity, "case %zu",
		case_index);
	cr_assert_eq(got->kernel_argument_capacity, want->kernel_argument_capacity, "case %zu",
		case_index);
	cr_assert_eq(got->resident_input_replay_safe, want->resident_input_replay_safe, "case %zu",
		case_index);
}

Test(graph_capture, binding_plan_counts_distinct_device_and_readback_tables)
{
	struct vy_binding b[] = {
		binding("input", 0, VY_ROLE_INPUT, 0, VY_BINDING_NONE),
		binding("shared", 1, VY_ROLE_SHARED, VY_BINDING_NONE, VY_BINDING_NONE),
		binding("output", 2, VY_ROLE_OUTPUT, VY_BINDING_NONE, 0),
		binding("state", 3, VY_ROLE_INPUT_OUTPUT, 1, 1),
	};
	struct vy_binding_plan bp = plan_of(b, 4);
	struct vy_graph_capture_plan got;
	struct vy_err err = {0};

	cr_assert_eq(vy_graph_capture_plan_build(&bp, &got, &err), 0,
		"normal bindings must plan: %s", err.message);
	const struct vy_graph_capture_plan want = {
		.input_device_capacity = 2,
		.output_device_capacity = 1,
		.output_readback_capacity = 2,
		.kernel_pointer_capacity = 3,
		.kernel_argument_capacity = 4,
		.resident_input_replay_safe = false,
	};
	assert_plan_eq(&got, &want, 0);
}

static uint64_t next_u64(uint64_t *state)
{
	*state = *state * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
	return *state;
}

Test(graph_capture, generated_binding_plan_preserves_order_independent_counts)
{
	uint64_t state = UINT64_C(0x9e3779b97f4a7c15);
	struct vy_binding *bindings = calloc(96, sizeof(*bindings));
	cr_assert_not_null(bindings);

	for (size_t case_index = 0; case_index < 768; case_index++) {
		uint32_t binding_count = 1 + (uint32_t)(next_u64(&state) % 96);
		struct vy_graph_capture_plan want = {.resident_input_replay_safe = true};
		uint32_t next_input = 0;
		uint32_t next_output = 0;

		for (uint32_t slot = 0; slot < binding_count; slot++) {
			enum vy_binding_role role;
			uint32_t input_index = VY_BINDING_NONE;
			uint32_t output_index = VY_BINDING_NONE;
			switch (next_u64(&state) % 4) {
			case 0:
				role = VY_ROLE_INPUT;
				input_index = next_input++;
				break;
			case 1:
				role = VY_ROLE_OUTPUT;
				output_index = next_output++;
				break;
			case 2:
				role = VY_ROLE_INPUT_OUTPUT;
				input_index = next_input++;
				output_index = next_output++;
				want.resident_input_replay_safe = false;
				break;
			default:
				role = VY_ROLE_SHARED;
				break;
			}

			if (role != VY_ROLE_SHARED) {
				want.kernel_pointer_capacity++;
				if (input_index != VY_BINDING_NONE) {
					want.input_device_capacity++;
				} else {
					want.output_device_capacity++;
				}
				if (output_index != VY_BINDING_NONE) {
					want.output_readback_capacity++;
				}
			}
			bindings[slot] =
				binding("generated", slot, role, input_index, output_index);
		}
		want.kernel_argument_capacity = want.kernel_pointer_capacity + 1;

		struct vy_binding_plan bp = plan_of(bindings, binding_count);
		struct vy_graph_capture_plan got;
		cr_assert_eq(vy_graph_capture_plan_build(&bp, &got, NULL), 0,
			"case %zu must fit host capacities", case_index);
		assert_plan_eq(&got, &want, case_index);
	}
	free(bindings);
}

Test(graph_capture, capacity_overflow_fails_loudly)
{
	size_t out = 42;
	struct vy_err err = {0};
	int rc = vy_graph_capture_capacity_add(SIZE_MAX, 1, "kernel argument table", &out, &err);

	cr_assert_eq(rc, VY_E_INVALID_PROGRAM, "an overflowing capacity must not wrap");
	cr_assert_eq(err.code, VY_E_INVALID_PROGRAM);
	cr_assert_eq(out, 42, "the result is left alone on overflow");
	char text[1024];
	vy_err_format(&err, text, sizeof(text));
	cr_assert_not_null(strstr(text, "graph capture binding plan"), "%s", text);
	cr_assert_not_null(strstr(text, "kernel argument table"), "%s", text);
	cr_assert_not_null(strstr(text, "record a smaller graph shape"), "%s", text);
	cr_assert_str_eq(err.fix, "record a smaller graph shape");
}

Test(graph_capture, capacity_add_sums_up_to_the_limit)
{
	size_t out = 0;
	cr_assert_eq(vy_graph_capture_capacity_add(SIZE_MAX - 1, 1, "t", &out, NULL), 0);
	cr_assert_eq(out, SIZE_MAX);
	cr_assert_eq(vy_graph_capture_capacity_add(3, 4, "t", &out, NULL), 0);
	cr_assert_eq(out, 7);
	cr_assert_eq(
		vy_graph_capture_capacity_add(1, SIZE_MAX, "t", &out, NULL), VY_E_INVALID_PROGRAM);
}

Test(graph_capture, accounting_errors_name_their_own_policy)
{
	static const struct vy_transfer_accounting upload = {
		.policy = "resident upload batch",
		.fix = "split the upload into smaller batches",
	};
	size_t out = 0;
	struct vy_err err = {0};
	cr_assert_eq(vy_transfer_accounting_add(&upload, SIZE_MAX / 2 + 1, SIZE_MAX / 2 + 1,
			     "staging table", &out, &err),
		VY_E_INVALID_PROGRAM);
	cr_assert_not_null(strstr(err.message, "resident upload batch"), "%s", err.message);
	cr_assert_not_null(strstr(err.message, "staging table"), "%s", err.message);
	cr_assert_str_eq(err.fix, "split the upload into smaller batches");
}

Test(graph_capture, empty_and_all_shared_plans_need_only_the_launch_argument)
{
	struct vy_binding b[] = {
		binding("tile", 0, VY_ROLE_SHARED, VY_BINDING_NONE, VY_BINDING_NONE),
		binding("scratch", 1, VY_ROLE_SHARED, VY_BINDING_NONE, VY_BINDING_NONE),
	};
	const struct vy_graph_capture_plan want = {
		.kernel_argument_capacity = 1,
		.resident_input_replay_safe = true,
	};
	struct vy_graph_capture_plan got;
	struct vy_binding_plan empty = plan_of(NULL, 0);
	cr_assert_eq(vy_graph_capture_plan_build(&empty, &got, NULL), 0);
	assert_plan_eq(&got, &want, 0);
	struct vy_binding_plan shared = plan_of(b, 2);
	cr_assert_eq(vy_graph_capture_plan_build(&shared, &got, NULL), 0);
	assert_plan_eq(&got, &want, 1);
}

Test(graph_capture, uniform_bindings_count_as_inputs_and_stay_replay_safe)
{
	struct vy_binding b[] = {
		binding("params", 0, VY_ROLE_UNIFORM, 0, VY_BINDING_NONE),
		binding("x", 1, VY_ROLE_INPUT, 1, VY_BINDING_NONE),
		binding("y", 2, VY_ROLE_OUTPUT, VY_BINDING_NONE, 0),
	};
	struct vy_binding_plan bp = plan_of(b, 3);
	struct vy_graph_capture_plan got;
	cr_assert_eq(vy_graph_capture_plan_build(&bp, &got, NULL), 0);
	const struct vy_graph_capture_plan want = {
		.input_device_capacity = 2,
		.output_device_capacity = 1,
		.output_readback_capacity = 1,
		.kernel_pointer_capacity = 3,
		.kernel_argument_capacity = 4,
		.resident_input_replay_safe = true,
	};
	assert_plan_eq(&got, &want, 0);
}
