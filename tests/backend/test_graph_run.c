/*
 * Graph runs (backend/graph_run.h) on every backend that opens here (the reference, and the
 * Vulkan backend on lavapipe): a 10-step chain gives the bytes of the same 10 dispatches; a graph
 * with a grid_sync step, a read_write temp and a resident buffer gives the values computed here
 * by hand; a trap in step 7 of 10 is named by step and node.
 */
#include <criterion/criterion.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "err.h"
#include "graph.h"
#include "graph_programs.h"
#include "graph_run.h"
#include "ir.h"
#include "registry.h"
#include "validate.h"

#define N VY_TEST_GRAPH_N

struct step {
	struct vy_program *p;
	struct vy_binding_plan *plan;
};

static struct step prepare(struct vy_program *p)
{
	struct vy_err err = {0};
	cr_assert_eq(vy_validate_first(p, NULL, &err), 0, "%s: %s", err.at, err.message);
	struct step s = {p, NULL};
	cr_assert_eq(vy_binding_plan_build(p, &s.plan, &err), 0, "%s", err.message);
	return s;
}

static void release(struct step *s)
{
	vy_binding_plan_destroy(s->plan);
	vy_program_destroy(s->p);
}

static struct vy_graph_bind bind(
	const char *buf, enum vy_graph_slot_kind kind, uint32_t index, const char *temp)
{
	return (struct vy_graph_bind){.buffer = buf, .kind = kind, .index = index, .temp = temp};
}

/* Call fn once per backend that opens; at least the reference must. */
static void each_backend(void (*fn)(struct vy_backend *b, const char *id))
{
	struct vy_registry_set set;
	size_t opened = vy_registry_open_all(NULL, &set);
	cr_assert_geq(opened, 1);
	for (size_t i = 0; i < set.len; i++) {
		if (set.items[i].backend) {
			fn(set.items[i].backend, set.items[i].entry->id);
		}
	}
	vy_registry_set_finish(&set);
}

static void chain_of_ten(struct vy_backend *b, const char *id)
{
	struct step steps[10];
	struct vy_graph_bind binds[10][2];
	struct vy_graph_step_desc desc[10];
	struct vy_graph_step_run run[10];
	static const char *const temps[] = {"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8"};
	for (uint32_t i = 0; i < 10; i++) {
		steps[i] = prepare(vy_test_graph_affine(i + 2));
		binds[i][0] = i == 0 ? bind("x", VY_GRAPH_INPUT, 0, NULL)
				     : bind("x", VY_GRAPH_TEMP, 0, temps[i - 1]);
		binds[i][1] = i == 9 ? bind("y", VY_GRAPH_OUTPUT, 0, NULL)
				     : bind("y", VY_GRAPH_TEMP, 0, temps[i]);
		desc[i] = (struct vy_graph_step_desc){steps[i].p, steps[i].plan, binds[i], 2};
		run[i] = (struct vy_graph_step_run){.program = steps[i].p};
	}
	struct vy_graph_plan *g = NULL;
	struct vy_err err = {0};
	cr_assert_eq(vy_graph_plan_build(desc, 10, 16, &g, &err), 0, "%s", err.message);
	cr_assert_eq(g->totals.barriers, 9);
	uint32_t x[N];
	for (uint32_t i = 0; i < N; i++) {
		x[i] = 0x9E3779B9u * (i + 1);
	}
	struct vy_bytes in = {(const uint8_t *)x, sizeof(x)};
	struct vy_outputs got;
	vy_outputs_init(&got);
	cr_assert_eq(vy_backend_graph_run(b, g, run, &in, NULL, 0, &got, NULL, &err), 0,
		"%s: %s: %s", id, err.at, err.message);
	cr_assert_eq(got.len, 1);
	cr_assert_eq(got.items[0].len, sizeof(x));
	/* The same ten steps as ten dispatches, each output the next input. */
	struct vy_outputs one;
	vy_outputs_init(&one);
	uint8_t cur[sizeof(x)];
	memcpy(cur, x, sizeof(x));
	for (uint32_t i = 0; i < 10; i++) {
		struct vy_bytes view = {cur, sizeof(cur)};
		cr_assert_eq(vy_backend_dispatch(b, steps[i].p, &view, 1, NULL, &one, &err), 0,
			"%s step %u: %s", id, i, err.message);
		memcpy(cur, one.items[0].data, sizeof(cur));
	}
	cr_assert_arr_eq(
		got.items[0].data, cur, sizeof(cur), "%s: graph and dispatches differ", id);
	/* A second run of the same plan starts from zeroed temps and gives the same bytes. */
	cr_assert_eq(vy_backend_graph_run(b, g, run, &in, NULL, 0, &got, NULL, &err), 0, "%s",
		err.message);
	cr_assert_arr_eq(got.items[0].data, cur, sizeof(cur), "%s: the replay differs", id);
	printf("graph_run: %s: 10 steps, 9 barriers, same bytes as 10 dispatches, twice\n", id);
	vy_outputs_finish(&one);
	vy_outputs_finish(&got);
	vy_graph_plan_destroy(g);
	for (uint32_t i = 0; i < 10; i++) {
		release(&steps[i]);
	}
}

Test(graph_run, a_chain_of_ten_steps_gives_the_bytes_of_ten_dispatches)
{
	each_backend(chain_of_ten);
}

static void grid_sync_temp_and_resident(struct vy_backend *b, const char *id)
{
	struct step s0 = prepare(vy_test_graph_affine(3));
	struct step s1 = prepare(vy_test_graph_mirror());
	struct step s2 = prepare(vy_test_graph_accumulate());
	struct step s3 = prepare(vy_test_graph_affine(5));
	struct vy_err err = {0};
	struct vy_resource r;
	cr_assert_eq(vy_backend_resident_alloc(b, 2 * N * 4, &r, &err), 0, "%s", err.message);
	uint64_t handle = 0x5EED;
	struct vy_graph_bind b0[] = {
		bind("x", VY_GRAPH_INPUT, 0, NULL), bind("y", VY_GRAPH_TEMP, 0, "a")};
	struct vy_graph_bind b1[] = {
		bind("buf", VY_GRAPH_TEMP, 0, "a"), {.buffer = "o",
							    .kind = VY_GRAPH_RESIDENT,
							    .handle = handle,
							    .resident_len = r.len}};
	struct vy_graph_bind b2[] = {
		{.buffer = "a", .kind = VY_GRAPH_RESIDENT, .handle = handle, .resident_len = r.len},
		bind("b", VY_GRAPH_INPUT, 0, NULL)};
	struct vy_graph_bind b3[] = {
		{.buffer = "x", .kind = VY_GRAPH_RESIDENT, .handle = handle, .resident_len = r.len},
		bind("y", VY_GRAPH_OUTPUT, 0, NULL)};
	struct vy_graph_step_desc desc[] = {{s0.p, s0.plan, b0, 2}, {s1.p, s1.plan, b1, 2},
		{s2.p, s2.plan, b2, 2}, {s3.p, s3.plan, b3, 2}};
	struct vy_graph_step_run run[] = {
		{.program = s0.p}, {.program = s1.p}, {.program = s2.p}, {.program = s3.p}};
	struct vy_graph_plan *g = NULL;
	cr_assert_eq(vy_graph_plan_build(desc, 4, 16, &g, &err), 0, "%s", err.message);
	struct vy_resource slots[8] = {0};
	for (uint32_t s = 0; s < g->n_slots; s++) {
		if (g->slots[s].kind == VY_GRAPH_RESIDENT) {
			slots[s] = r;
		}
	}
	uint32_t x[N];
	uint32_t want_r[N];
	uint32_t want_y[N];
	vy_test_graph_four_steps(x, want_r, want_y);
	struct vy_bytes in = {(const uint8_t *)x, sizeof(x)};
	struct vy_outputs got;
	vy_outputs_init(&got);
	cr_assert_eq(vy_backend_graph_run(b, g, run, &in, slots, 0, &got, NULL, &err), 0,
		"%s: %s: %s", id, err.at, err.message);
	cr_assert_arr_eq(got.items[0].data, want_y, sizeof(want_y), "%s: output 0", id);
	uint8_t back[2 * N * 4];
	cr_assert_eq(vy_backend_resident_download(b, &r, 0, back, sizeof(back), &err), 0, "%s",
		err.message);
	cr_assert_arr_eq(back, want_r, sizeof(want_r), "%s: the resident buffer", id);
	uint8_t zeros[N * 4] = {0};
	cr_assert_arr_eq(back + N * 4, zeros, sizeof(zeros), "%s: past the declaration", id);
	printf("graph_run: %s: grid_sync, a read_write temp and a resident buffer: as computed\n",
		id);
	vy_outputs_finish(&got);
	vy_graph_plan_destroy(g);
	vy_backend_resident_free(b, r, NULL);
	release(&s0);
	release(&s1);
	release(&s2);
	release(&s3);
}

Test(graph_run, grid_sync_steps_temps_and_resident_buffers_give_the_values_computed_by_hand)
{
	each_backend(grid_sync_temp_and_resident);
}

static void trap_in_step_seven(struct vy_backend *b, const char *id)
{
	struct step steps[10];
	struct vy_graph_bind binds[10][2];
	struct vy_graph_step_desc desc[10];
	struct vy_graph_step_run run[10];
	for (uint32_t i = 0; i < 10; i++) {
		steps[i] =
			prepare(i == 7 ? vy_test_graph_divide_by_zero() : vy_test_graph_affine(1));
		binds[i][0] = bind("x", VY_GRAPH_INPUT, 0, NULL);
		binds[i][1] = bind("y", VY_GRAPH_OUTPUT, i, NULL);
		desc[i] = (struct vy_graph_step_desc){steps[i].p, steps[i].plan, binds[i], 2};
		run[i] = (struct vy_graph_step_run){.program = steps[i].p};
	}
	struct vy_graph_plan *g = NULL;
	struct vy_err err = {0};
	cr_assert_eq(vy_graph_plan_build(desc, 10, 16, &g, &err), 0, "%s", err.message);
	uint32_t x[N] = {0};
	struct vy_bytes in = {(const uint8_t *)x, sizeof(x)};
	struct vy_outputs got;
	vy_outputs_init(&got);
	int rc = vy_backend_graph_run(b, g, run, &in, NULL, 0, &got, NULL, &err);
	cr_assert_eq(rc, VY_E_TRAP, "%s: rc %d: %s", id, rc, err.message);
	cr_assert_eq(strncmp(err.message, "step 7 of 10: ", 14), 0, "%s: %s", id, err.message);
	cr_assert(strstr(err.message, "int_div_zero"), "%s: %s", id, err.message);
	cr_assert_str_eq(err.at, "steps[7].entry[0].store", "%s", id);
	cr_assert_eq(got.len, 0, "a failed run returns no outputs");
	printf("graph_run: %s: %s (at %s)\n", id, err.message, err.at);
	vy_graph_plan_destroy(g);
	for (uint32_t i = 0; i < 10; i++) {
		release(&steps[i]);
	}
}

Test(graph_run, a_trap_in_step_seven_of_ten_names_the_step_and_the_node)
{
	each_backend(trap_in_step_seven);
}
