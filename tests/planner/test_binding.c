/* Binding plans: the tests of seed 000 (n7_tests and tests) and one per error path. */
#include <criterion/criterion.h>

#include <stdint.h>
#include <string.h>

#include "binding.h"
#include "err.h"
#include "ir.h"

static struct vy_program *add_one_program(uint32_t count)
{
	struct vy_program *p = vy_program_create("add_one", 16, 1, 1);
	vy_program_add_buffer(p, "input", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, count);
	vy_program_add_buffer(p, "out", 1, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, count)->output = true;
	return p;
}

static struct vy_program *three_binding_program(void)
{
	struct vy_program *p = vy_program_create("three", 16, 1, 1);
	vy_program_add_buffer(p, "a", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 16);
	vy_program_add_buffer(p, "b", 1, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 16);
	vy_program_add_buffer(p, "out", 2, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 16)->output = true;
	return p;
}

static struct vy_binding_plan *build_ok(const struct vy_program *p)
{
	struct vy_binding_plan *plan = NULL;
	struct vy_err err = {0};
	int rc = vy_binding_plan_build(p, &plan, &err);
	cr_assert_eq(rc, 0, "build failed: %s (fix: %s)", err.message, err.fix);
	cr_assert_not_null(plan);
	return plan;
}

static struct vy_program *single_output(uint32_t alignment, bool has_hints)
{
	struct vy_program *p = vy_program_create("out_only", 64, 1, 1);
	struct vy_buffer *b =
		vy_program_add_buffer(p, "out", 0, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 16);
	b->output = true;
	b->has_hints = has_hints;
	b->hints.alignment = alignment;
	return p;
}

/* --- seed n7_tests ------------------------------------------------------------------------- */

Test(binding, same_layout_with_different_element_counts_shares_fingerprint)
{
	struct vy_program *p16 = add_one_program(16);
	struct vy_program *p64 = add_one_program(64);
	struct vy_binding_plan *a = build_ok(p16);
	struct vy_binding_plan *b = build_ok(p64);
	cr_assert(vy_binding_plans_share_layout(a, b),
		"the same (binding, role, element size) tuples must share a layout");
	cr_assert_eq(a->bindings[0].element_count, 16);
	cr_assert_eq(b->bindings[0].element_count, 64);
	vy_binding_plan_destroy(a);
	vy_binding_plan_destroy(b);
	vy_program_destroy(p16);
	vy_program_destroy(p64);
}

Test(binding, different_binding_count_does_not_share_layout)
{
	struct vy_program *p2 = add_one_program(16);
	struct vy_program *p3 = three_binding_program();
	struct vy_binding_plan *a = build_ok(p2);
	struct vy_binding_plan *b = build_ok(p3);
	cr_assert_not(vy_binding_plans_share_layout(a, b),
		"plans with different binding counts must not share a layout");
	vy_binding_plan_destroy(a);
	vy_binding_plan_destroy(b);
	vy_program_destroy(p2);
	vy_program_destroy(p3);
}

Test(binding, fingerprint_is_stable_across_repeated_builds)
{
	struct vy_program *p = add_one_program(16);
	struct vy_binding_plan *a = build_ok(p);
	struct vy_binding_plan *b = build_ok(p);
	struct vy_binding_set_fingerprint fa;
	struct vy_binding_set_fingerprint fb;
	vy_binding_set_fingerprint_init(&fa, a);
	vy_binding_set_fingerprint_init(&fb, b);
	cr_assert(vy_binding_set_fingerprint_equal(&fa, &fb));
	cr_assert_eq(vy_binding_set_fingerprint_hash(&fa), vy_binding_set_fingerprint_hash(&fb));
	vy_binding_plan_destroy(a);
	vy_binding_plan_destroy(b);
	vy_program_destroy(p);
}

Test(binding, fingerprint_slots_are_sorted_by_binding_index)
{
	/* Declared out of order, so the sort is what puts the slots in order. */
	struct vy_program *p = vy_program_create("reversed", 16, 1, 1);
	vy_program_add_buffer(p, "out", 1, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 16)->output = true;
	vy_program_add_buffer(p, "input", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 16);
	struct vy_binding_plan *plan = build_ok(p);
	struct vy_binding_set_fingerprint fp;
	vy_binding_set_fingerprint_init(&fp, plan);
	cr_assert_eq(fp.n_slots, 2);
	cr_assert_eq(fp.slots[0].binding, 0);
	cr_assert_eq(fp.slots[1].binding, 1);
	cr_assert_eq(fp.slots[0].role, VY_ROLE_INPUT);
	cr_assert_eq(fp.slots[1].role, VY_ROLE_OUTPUT);
	cr_assert_eq(fp.slots[0].element_size, 4);
	vy_binding_plan_destroy(plan);
	vy_program_destroy(p);
}

Test(binding, backend_layout_fingerprint_sorts_slots)
{
	struct vy_layout_slot storage = {.group = 1,
		.binding = 4,
		.class = VY_LAYOUT_STORAGE,
		.read_only = false,
		.element_size = 4};
	struct vy_layout_slot uniform = {.group = 0,
		.binding = 1,
		.class = VY_LAYOUT_UNIFORM,
		.read_only = true,
		.element_size = 4};
	struct vy_layout_slot first[] = {storage, uniform};
	struct vy_layout_slot second[] = {uniform, storage};
	struct vy_layout_fingerprint a;
	struct vy_layout_fingerprint b;
	vy_layout_fingerprint_init(&a, first, 2);
	vy_layout_fingerprint_init(&b, second, 2);
	cr_assert(vy_layout_fingerprint_equal(&a, &b));
	cr_assert_eq(vy_layout_fingerprint_hash(&a), vy_layout_fingerprint_hash(&b));
	cr_assert_eq(a.slots[0].group, 0);
	cr_assert_eq(a.slots[1].group, 1);
}

/* --- seed tests ---------------------------------------------------------------------------- */

Test(binding, binding_plan_carries_alignment_hints)
{
	struct vy_program *p = single_output(64, true);
	p->buffers[0].hints.coalesce_axis = 0;
	p->buffers[0].hints.locality = VY_LOCALITY_STREAMING;
	struct vy_binding_plan *plan = build_ok(p);
	cr_assert_eq(plan->bindings[0].preferred_alignment, 64);
	vy_binding_plan_destroy(plan);
	vy_program_destroy(p);
}

Test(binding, binding_plan_rejects_non_power_of_two_alignment_hint)
{
	struct vy_program *p = single_output(48, true);
	struct vy_binding_plan *plan = NULL;
	struct vy_err err = {0};
	int rc = vy_binding_plan_build(p, &plan, &err);
	cr_assert_eq(rc, VY_E_INVALID_PROGRAM);
	cr_assert_eq(err.code, VY_E_INVALID_PROGRAM);
	cr_assert_null(plan);
	char text[1024];
	vy_err_format(&err, text, sizeof(text));
	cr_assert(strstr(text, "preferred_alignment=48"), "got: %s", text);
	cr_assert(strstr(err.fix, "power of two"), "fix: %s", err.fix);
	cr_assert_str_eq(err.at, "buffers[0].hints.alignment");
	vy_program_destroy(p);
}

Test(binding, binding_plan_alignment_defaults_to_element_size)
{
	struct vy_program *p = single_output(0, false);
	struct vy_binding_plan *plan = build_ok(p);
	cr_assert_eq(plan->bindings[0].preferred_alignment, 4);
	vy_binding_plan_destroy(plan);
	vy_program_destroy(p);
}

/* --- roles, order and indices -------------------------------------------------------------- */

Test(binding, alignment_hint_below_element_size_gives_element_size)
{
	struct vy_program *p = single_output(2, true);
	struct vy_binding_plan *plan = build_ok(p);
	cr_assert_eq(plan->bindings[0].preferred_alignment, 4);
	vy_binding_plan_destroy(plan);
	vy_program_destroy(p);
}

Test(binding, roles_follow_access_and_output_flag)
{
	struct vy_program *p = vy_program_create("roles", 64, 1, 1);
	vy_program_add_buffer(p, "ro", 0, VY_ACCESS_READ_ONLY, VY_TYPE_F32, 8);
	vy_program_add_buffer(p, "rw", 1, VY_ACCESS_READ_WRITE, VY_TYPE_I32, 8);
	vy_program_add_buffer(p, "wo", 2, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 8);
	vy_program_add_buffer(p, "un", 3, VY_ACCESS_UNIFORM, VY_TYPE_U32, 4);
	vy_program_add_buffer(p, "wg", 4, VY_ACCESS_WORKGROUP, VY_TYPE_U32, 64)->output = true;
	vy_program_add_buffer(p, "rw_out", 5, VY_ACCESS_READ_WRITE, VY_TYPE_BOOL, 8)->output = true;
	struct vy_binding_plan *plan = build_ok(p);
	cr_assert_eq(plan->n_bindings, 6);
	enum vy_binding_role want[] = {VY_ROLE_INPUT, VY_ROLE_INPUT_OUTPUT, VY_ROLE_OUTPUT,
		VY_ROLE_UNIFORM, VY_ROLE_SHARED, VY_ROLE_OUTPUT};
	for (uint32_t i = 0; i < 6; i++) {
		cr_assert_eq(plan->bindings[i].role, want[i], "binding %u is %s", i,
			vy_binding_role_name(plan->bindings[i].role));
	}
	cr_assert_str_eq(vy_binding_role_name(VY_ROLE_PERSISTENT), "persistent");
	vy_binding_plan_destroy(plan);
	vy_program_destroy(p);
}

Test(binding, bindings_are_ordered_and_indices_count_in_binding_order)
{
	struct vy_program *p = vy_program_create("order", 64, 1, 1);
	vy_program_add_buffer(p, "out", 7, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 4);
	vy_program_add_buffer(p, "acc", 3, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 4);
	vy_program_add_buffer(p, "tile", 0, VY_ACCESS_WORKGROUP, VY_TYPE_U32, 4);
	vy_program_add_buffer(p, "x", 1, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 4);
	vy_program_add_buffer(p, "params", 5, VY_ACCESS_UNIFORM, VY_TYPE_U32, 4);
	struct vy_binding_plan *plan = build_ok(p);

	uint32_t bindings[] = {0, 1, 3, 5, 7};
	uint32_t buffer_index[] = {2, 3, 1, 4, 0};
	const char *names[] = {"tile", "x", "acc", "params", "out"};
	for (uint32_t i = 0; i < 5; i++) {
		cr_assert_eq(plan->bindings[i].binding, bindings[i]);
		cr_assert_eq(plan->bindings[i].buffer_index, buffer_index[i]);
		cr_assert_str_eq(plan->bindings[i].name, names[i]);
	}
	/* Inputs: x, acc, params. Outputs: acc, out. Shared: tile. */
	cr_assert_eq(plan->n_inputs, 3);
	cr_assert_eq(plan->input_indices[0], 3);
	cr_assert_eq(plan->input_indices[1], 1);
	cr_assert_eq(plan->input_indices[2], 4);
	cr_assert_eq(plan->n_outputs, 2);
	cr_assert_eq(plan->output_indices[0], 1);
	cr_assert_eq(plan->output_indices[1], 0);
	cr_assert_eq(plan->n_shared, 1);
	cr_assert_eq(plan->shared_indices[0], 2);

	cr_assert_eq(plan->bindings[0].input_index, VY_BINDING_NONE);
	cr_assert_eq(plan->bindings[0].output_index, VY_BINDING_NONE);
	cr_assert_eq(plan->bindings[1].input_index, 0);
	cr_assert_eq(plan->bindings[2].input_index, 1);
	cr_assert_eq(plan->bindings[2].output_index, 0);
	cr_assert_eq(plan->bindings[3].input_index, 2);
	cr_assert_eq(plan->bindings[4].output_index, 1);
	cr_assert_eq(plan->bindings[4].input_index, VY_BINDING_NONE);
	vy_binding_plan_destroy(plan);
	vy_program_destroy(p);
}

Test(binding, equal_binding_numbers_keep_program_order)
{
	struct vy_program *p = vy_program_create("ties", 64, 1, 1);
	vy_program_add_buffer(p, "data", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 4);
	vy_program_add_buffer(p, "tile", 0, VY_ACCESS_WORKGROUP, VY_TYPE_U32, 4);
	struct vy_binding_plan *plan = build_ok(p);
	cr_assert_str_eq(plan->bindings[0].name, "data");
	cr_assert_str_eq(plan->bindings[1].name, "tile");
	vy_binding_plan_destroy(plan);
	vy_program_destroy(p);
}

Test(binding, live_out_buffer_gets_an_output_index)
{
	struct vy_program *p = vy_program_create("live", 64, 1, 1);
	vy_program_add_buffer(p, "x", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 4)->live_out = true;
	vy_program_add_buffer(p, "y", 1, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 4);
	vy_program_add_buffer(p, "z", 2, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 4);
	struct vy_binding_plan *plan = build_ok(p);
	cr_assert_eq(plan->bindings[0].role, VY_ROLE_INPUT);
	cr_assert_eq(plan->bindings[0].input_index, 0);
	cr_assert_eq(plan->bindings[0].output_index, 0);
	cr_assert_eq(plan->bindings[1].output_index, 1);
	cr_assert_eq(plan->bindings[2].output_index, VY_BINDING_NONE);
	cr_assert_eq(plan->n_outputs, 2);
	cr_assert_eq(plan->output_indices[0], 0);
	vy_binding_plan_destroy(plan);
	vy_program_destroy(p);
}

Test(binding, static_byte_length_is_count_times_element_size)
{
	struct vy_program *p = vy_program_create("sizes", 64, 1, 1);
	vy_program_add_buffer(p, "fixed", 0, VY_ACCESS_READ_ONLY, VY_TYPE_F32, 10);
	vy_program_add_buffer(p, "sized", 1, VY_ACCESS_READ_ONLY, VY_TYPE_F32, 0);
	struct vy_binding_plan *plan = build_ok(p);
	cr_assert(plan->bindings[0].has_static_len);
	cr_assert_eq(plan->bindings[0].static_byte_len, 40);
	cr_assert_eq(plan->bindings[0].element_size, 4);
	cr_assert_not(plan->bindings[1].has_static_len);
	cr_assert_eq(plan->bindings[1].element_count, 0, "no input was given to size it");
	vy_binding_plan_destroy(plan);
	vy_program_destroy(p);
}

Test(binding, plan_owns_copies_of_the_names)
{
	struct vy_program *p = add_one_program(4);
	struct vy_binding_plan *plan = build_ok(p);
	vy_program_destroy(p);
	cr_assert_str_eq(plan->bindings[0].name, "input");
	cr_assert_str_eq(plan->bindings[1].name, "out");
	vy_binding_plan_destroy(plan);
}

Test(binding, unknown_access_value_is_invalid_program)
{
	struct vy_program *p = vy_program_create("bad", 64, 1, 1);
	vy_program_add_buffer(p, "odd", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 4)->access =
		VY_ACCESS_COUNT;
	struct vy_binding_plan *plan = NULL;
	struct vy_err err = {0};
	cr_assert_eq(vy_binding_plan_build(p, &plan, &err), VY_E_INVALID_PROGRAM);
	cr_assert_null(plan);
	cr_assert(strstr(err.message, "`odd`"), "got: %s", err.message);
	cr_assert_str_eq(err.at, "buffers[0].access");
	vy_program_destroy(p);
}

Test(binding, fingerprint_differs_when_a_role_differs)
{
	struct vy_program *p = add_one_program(16);
	struct vy_program *q = add_one_program(16);
	q->buffers[0].access = VY_ACCESS_UNIFORM;
	struct vy_binding_plan *a = build_ok(p);
	struct vy_binding_plan *b = build_ok(q);
	cr_assert_not(vy_binding_plans_share_layout(a, b));
	struct vy_binding_set_fingerprint fa;
	struct vy_binding_set_fingerprint fb;
	vy_binding_set_fingerprint_init(&fa, a);
	vy_binding_set_fingerprint_init(&fb, b);
	cr_assert_neq(vy_binding_set_fingerprint_hash(&fa), vy_binding_set_fingerprint_hash(&fb));
	vy_binding_plan_destroy(a);
	vy_binding_plan_destroy(b);
	vy_program_destroy(p);
	vy_program_destroy(q);
}

Test(binding, fingerprint_differs_when_any_one_slot_field_differs)
{
	struct vy_program *p = three_binding_program();
	struct vy_binding_plan *plan = build_ok(p);
	struct vy_binding_set_fingerprint base;
	vy_binding_set_fingerprint_init(&base, plan);
	cr_assert(base.n_slots > 1);
	for (int field = 0; field < 4; field++) {
		struct vy_binding_set_fingerprint other = base;
		struct vy_binding_slot *s = &other.slots[base.n_slots - 1];
		switch (field) {
		case 0:
			s->binding += 7;
			break;
		case 1:
			s->role = s->role == VY_ROLE_INPUT ? VY_ROLE_OUTPUT : VY_ROLE_INPUT;
			break;
		case 2:
			s->element_size *= 2;
			break;
		default:
			other.n_slots--;
			break;
		}
		cr_assert_not(vy_binding_set_fingerprint_equal(&base, &other), "field %d", field);
		cr_assert_not(vy_binding_set_fingerprint_equal(&other, &base), "field %d", field);
		cr_assert_neq(vy_binding_set_fingerprint_hash(&base),
			vy_binding_set_fingerprint_hash(&other), "field %d", field);
	}
	vy_binding_plan_destroy(plan);
	vy_program_destroy(p);
}

Test(binding, layout_fingerprint_differs_when_read_only_differs)
{
	struct vy_layout_slot s = {.group = 0,
		.binding = 2,
		.class = VY_LAYOUT_STORAGE,
		.read_only = true,
		.element_size = 4};
	struct vy_layout_slot t = s;
	t.read_only = false;
	struct vy_layout_fingerprint a;
	struct vy_layout_fingerprint b;
	vy_layout_fingerprint_init(&a, &s, 1);
	vy_layout_fingerprint_init(&b, &t, 1);
	cr_assert_not(vy_layout_fingerprint_equal(&a, &b));
	cr_assert_neq(vy_layout_fingerprint_hash(&a), vy_layout_fingerprint_hash(&b));
}

/* --- inputs -------------------------------------------------------------------------------- */

static uint8_t bytes[4096];

Test(binding, inputs_that_match_build_and_check)
{
	struct vy_program *p = add_one_program(16);
	struct vy_bytes in[] = {{bytes, 64}};
	struct vy_binding_plan *plan = NULL;
	struct vy_err err = {0};
	cr_assert_eq(vy_binding_plan_build_for_inputs(p, in, 1, &plan, &err), 0, "%s", err.message);
	cr_assert_eq(vy_binding_plan_check_inputs(plan, in, 1, &err), 0, "%s", err.message);
	vy_binding_plan_destroy(plan);
	vy_program_destroy(p);
}

Test(binding, input_count_mismatch_is_rejected)
{
	struct vy_program *p = add_one_program(16);
	struct vy_bytes in[] = {{bytes, 64}, {bytes, 64}};
	struct vy_binding_plan *plan = NULL;
	struct vy_err err = {0};
	cr_assert_eq(vy_binding_plan_build_for_inputs(p, in, 2, &plan, &err), VY_E_BAD_REQUEST);
	cr_assert_null(plan);
	cr_assert(strstr(err.message, "1 input buffer(s)"), "got: %s", err.message);
	cr_assert(strstr(err.message, "sent 2"), "got: %s", err.message);
	cr_assert(strstr(err.fix, "send 1 input(s)"), "fix: %s", err.fix);

	/* The same check on a plan built without inputs (the seed's validate_inputs). */
	plan = build_ok(p);
	vy_err_clear(&err);
	cr_assert_eq(vy_binding_plan_check_inputs(plan, NULL, 0, &err), VY_E_BAD_REQUEST);
	cr_assert(strstr(err.message, "sent 0"), "got: %s", err.message);
	vy_binding_plan_destroy(plan);
	vy_program_destroy(p);
}

Test(binding, misaligned_input_length_is_rejected)
{
	struct vy_program *p = vy_program_create("dyn", 64, 1, 1);
	vy_program_add_buffer(p, "data", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 0);
	struct vy_bytes in[] = {{bytes, 6}};
	struct vy_binding_plan *plan = NULL;
	struct vy_err err = {0};
	cr_assert_eq(vy_binding_plan_build_for_inputs(p, in, 1, &plan, &err), VY_E_BAD_REQUEST);
	cr_assert_null(plan);
	cr_assert(strstr(err.message, "`data` holds 6 bytes"), "got: %s", err.message);
	cr_assert(strstr(err.message, "4-byte element size"), "got: %s", err.message);
	cr_assert(strstr(err.fix, "4-byte elements for `data`"), "fix: %s", err.fix);
	cr_assert_str_eq(err.at, "inputs[0]");
	vy_program_destroy(p);
}

Test(binding, static_length_mismatch_is_rejected)
{
	struct vy_program *p = add_one_program(16);
	struct vy_bytes in[] = {{bytes, 60}};
	struct vy_binding_plan *plan = NULL;
	struct vy_err err = {0};
	cr_assert_eq(vy_binding_plan_build_for_inputs(p, in, 1, &plan, &err), VY_E_BAD_REQUEST);
	cr_assert_null(plan);
	cr_assert(strstr(err.message, "`input` holds 60 bytes"), "got: %s", err.message);
	cr_assert(strstr(err.message, "fixes 64 bytes"), "got: %s", err.message);
	cr_assert(strstr(err.fix, "exactly 64 bytes for `input`"), "fix: %s", err.fix);
	vy_program_destroy(p);
}

Test(binding, second_input_error_names_its_position)
{
	struct vy_program *p = vy_program_create("two", 64, 1, 1);
	vy_program_add_buffer(p, "a", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 2);
	vy_program_add_buffer(p, "b", 1, VY_ACCESS_UNIFORM, VY_TYPE_U32, 2);
	struct vy_binding_plan *plan = build_ok(p);
	struct vy_bytes in[] = {{bytes, 8}, {bytes, 12}};
	struct vy_err err = {0};
	cr_assert_eq(vy_binding_plan_check_inputs(plan, in, 2, &err), VY_E_BAD_REQUEST);
	cr_assert_str_eq(err.at, "inputs[1]");
	cr_assert(strstr(err.message, "`b`"), "got: %s", err.message);
	vy_binding_plan_destroy(plan);
	vy_program_destroy(p);
}

Test(binding, count_zero_buffer_is_sized_from_its_input)
{
	struct vy_program *p = vy_program_create("dyn", 64, 1, 1);
	vy_program_add_buffer(p, "fixed", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 4);
	vy_program_add_buffer(p, "acc", 1, VY_ACCESS_READ_WRITE, VY_TYPE_F32, 0);
	struct vy_bytes in[] = {{bytes, 16}, {bytes, 4000}};
	struct vy_binding_plan *plan = NULL;
	struct vy_err err = {0};
	cr_assert_eq(vy_binding_plan_build_for_inputs(p, in, 2, &plan, &err), 0, "%s", err.message);
	cr_assert_eq(plan->bindings[1].element_count, 1000);
	cr_assert_not(plan->bindings[1].has_static_len);
	cr_assert_eq(plan->bindings[0].element_count, 4);
	vy_binding_plan_destroy(plan);
	vy_program_destroy(p);
}

Test(binding, count_zero_input_beyond_u32_elements_is_rejected)
{
	if (SIZE_MAX / 4 <= UINT32_MAX) {
		cr_skip_test("size_t cannot describe more than UINT32_MAX elements here");
	}
	struct vy_program *p = vy_program_create("huge", 64, 1, 1);
	vy_program_add_buffer(p, "data", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 0);
	/* Only lengths are read, so a short buffer may claim a huge length here. */
	struct vy_bytes in[] = {{bytes, ((size_t)UINT32_MAX + 1) * 4}};
	struct vy_binding_plan *plan = NULL;
	struct vy_err err = {0};
	cr_assert_eq(vy_binding_plan_build_for_inputs(p, in, 1, &plan, &err), VY_E_BAD_REQUEST);
	cr_assert_null(plan);
	cr_assert(strstr(err.message, "4294967296 elements"), "got: %s", err.message);
	vy_program_destroy(p);
}

Test(binding, errors_without_an_err_struct_still_return_the_code)
{
	struct vy_program *p = single_output(48, true);
	struct vy_binding_plan *plan = NULL;
	cr_assert_eq(vy_binding_plan_build(p, &plan, NULL), VY_E_INVALID_PROGRAM);
	cr_assert_null(plan);
	vy_program_destroy(p);
	vy_binding_plan_destroy(NULL);
}
