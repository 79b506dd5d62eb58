/*
 * Graph runs (backend/graph_run.h) on every backend that opens here (the reference, and the
 * Vulkan backend on lavapipe), each both step by step (vy_backend_graph_run) and from a recording
 * kept between runs (vy_backend_graph_replay: one command buffer on Vulkan): a 10-step chain
 * gives the bytes of the same 10 dispatches, run after run; a graph with a grid_sync step, a
 * read_write temp and a resident buffer gives the values computed here by hand, also when the
 * next run binds another resident buffer; a trap in step 7 of 10 is named by step and node while
 * the steps after it still run; a step that outlasts the run's timeout is named; runs started
 * together (vy_backend_graph_start), two of one graph among them, give the bytes of runs one by
 * one, and a started run given up leaves its graph to run again.
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
#ifdef VY_GRAPH_RUN_STAGED
#include "vk_backend.h"
#endif

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

/* The end of a test: its outputs, its plan and its n steps. */
static void finish(struct vy_outputs *got, struct vy_graph_plan *g, struct step *steps, uint32_t n)
{
	vy_outputs_finish(got);
	vy_graph_plan_destroy(g);
	for (uint32_t i = 0; i < n; i++) {
		release(&steps[i]);
	}
}

static struct vy_graph_bind bind(
	const char *buf, enum vy_graph_slot_kind kind, uint32_t index, const char *temp)
{
	return (struct vy_graph_bind){.buffer = buf, .kind = kind, .index = index, .temp = temp};
}

/* How a test runs its graph: step by step, or from the backend's recording kept in `rec`. */
struct mode {
	bool replay;
	struct vy_graph_recording *rec;
	char id[64]; /* backend and mode, for messages */
};

static int go(struct vy_backend *b, struct mode *m, const struct vy_graph_plan *g,
	const struct vy_graph_step_run *run, const struct vy_bytes *in,
	const struct vy_resource *slots, uint32_t timeout_ms, struct vy_outputs *got,
	struct vy_err *err)
{
	if (m->replay) {
		return vy_backend_graph_replay(
			b, g, run, in, slots, timeout_ms, got, NULL, &m->rec, err);
	}
	return vy_backend_graph_run(b, g, run, in, slots, timeout_ms, got, NULL, err);
}

static void both_ways(
	struct vy_backend *b, const char *id, void (*fn)(struct vy_backend *b, struct mode *m))
{
	for (int replay = 0; replay < 2; replay++) {
		struct mode m = {.replay = replay};
		snprintf(m.id, sizeof(m.id), "%s (%s)", id, replay ? "replayed" : "step by step");
		fn(b, &m);
		vy_backend_graph_forget(b, m.rec);
	}
}

#ifndef VY_GRAPH_RUN_STAGED
/* Call fn once per backend that opens (at least the reference must) and per way of running. */
static void each_backend(void (*fn)(struct vy_backend *b, struct mode *m))
{
	struct vy_registry_set set;
	size_t opened = vy_registry_open_all(NULL, &set);
	cr_assert_geq(opened, 1);
	for (size_t i = 0; i < set.len; i++) {
		if (set.items[i].backend) {
			both_ways(set.items[i].backend, set.items[i].entry->id, fn);
		}
	}
	vy_registry_set_finish(&set);
}
#else
/*
 * The build of this file as test_graph_run_staged: the Vulkan backend as a discrete GPU runs it
 * (inputs and results through staging copies, descriptor sets instead of push descriptors, a
 * dummy range for empty buffers), under the validation layer where it is installed: no message
 * may come.
 */
static void each_backend(void (*fn)(struct vy_backend *b, struct mode *m))
{
	uint64_t before = vy_vulkan_validation_messages(NULL, 0);
	struct vy_vulkan_options opts = {.enable_validation = vy_vulkan_validation_available()};
	struct vy_backend *b = NULL;
	struct vy_err err = {0};
	unsigned flags = VY__VK_TEST_STAGING | VY__VK_TEST_COPY_ALL |
			 VY__VK_TEST_NO_PUSH_DESCRIPTORS | VY__VK_TEST_NO_NULL_DESCRIPTOR;
	int rc = vy__vk_backend_create_for_test(&opts, flags, &b, &err);
	if (rc == VY_E_UNSUPPORTED_FEATURE) {
		cr_skip_test("no usable Vulkan device: %s", err.message);
	}
	cr_assert_eq(rc, 0, "%s", err.message);
	both_ways(b, "vulkan as a discrete GPU", fn);
	vy_backend_destroy(b);
	char last[512];
	uint64_t after = vy_vulkan_validation_messages(last, sizeof(last));
	cr_assert_eq(after, before, "the validation layer reported: %s", last);
}
#endif

/* A chain of affine steps (affine_chain): its steps, binds, runs and plan. */
struct chain {
	struct step steps[10];
	struct vy_graph_bind binds[10][2];
	struct vy_graph_step_run run[10];
	struct vy_graph_plan *g;
};

/*
 * A chain of n <= 10 steps vy_test_graph_affine(first), (first + 1), ...: input 0 -> temps ->
 * output 0, each step reading what the one before wrote.
 */
static void affine_chain(struct chain *c, uint32_t n, uint32_t first)
{
	static const char *const temps[] = {"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8"};
	struct vy_graph_step_desc desc[10];
	cr_assert_leq(n, 10);
	for (uint32_t i = 0; i < n; i++) {
		struct step *st = &c->steps[i];
		*st = prepare(vy_test_graph_affine(first + i));
		c->binds[i][0] = i == 0 ? bind("x", VY_GRAPH_INPUT, 0, NULL)
					: bind("x", VY_GRAPH_TEMP, 0, temps[i - 1]);
		c->binds[i][1] = i + 1 == n ? bind("y", VY_GRAPH_OUTPUT, 0, NULL)
					    : bind("y", VY_GRAPH_TEMP, 0, temps[i]);
		desc[i] = (struct vy_graph_step_desc){st->p, st->plan, c->binds[i], 2};
		c->run[i] = (struct vy_graph_step_run){.program = st->p};
	}
	struct vy_err err = {0};
	c->g = NULL;
	cr_assert_eq(vy_graph_plan_build(desc, n, 16, &c->g, &err), 0, "%s", err.message);
}

static void chain_of_ten(struct vy_backend *b, struct mode *m)
{
	const char *id = m->id;
	struct chain c;
	affine_chain(&c, 10, 2);
	struct step *steps = c.steps;
	struct vy_graph_step_run *run = c.run;
	struct vy_graph_plan *g = c.g;
	struct vy_err err = {0};
	cr_assert_eq(g->totals.barriers, 9);
	struct vy_outputs got, one;
	vy_outputs_init(&got);
	vy_outputs_init(&one);
	const struct vy_graph_recording *first = NULL;
	/* Three runs of the same plan, the last two with other inputs: each starts from zeroed
	 * temps and gives the bytes of the ten steps as ten dispatches, each output the next
	 * input. */
	for (uint32_t r = 0; r < 3; r++) {
		uint32_t x[N];
		for (uint32_t i = 0; i < N; i++) {
			x[i] = 0x9E3779B9u * (i + 1) + r * 0x01000193u;
		}
		struct vy_bytes in = {(const uint8_t *)x, sizeof(x)};
		cr_assert_eq(go(b, m, g, run, &in, NULL, 0, &got, &err), 0, "%s run %u: %s: %s", id,
			r, err.at, err.message);
		cr_assert_eq(got.len, 1);
		cr_assert_eq(got.items[0].len, sizeof(x));
		uint8_t cur[sizeof(x)];
		memcpy(cur, x, sizeof(x));
		for (uint32_t i = 0; i < 10; i++) {
			struct vy_bytes view = {cur, sizeof(cur)};
			cr_assert_eq(vy_backend_dispatch(b, steps[i].p, &view, 1, NULL, &one, &err),
				0, "%s step %u: %s", id, i, err.message);
			memcpy(cur, one.items[0].data, sizeof(cur));
		}
		cr_assert_arr_eq(got.items[0].data, cur, sizeof(cur),
			"%s run %u: graph and dispatches differ", id, r);
		if (r == 0) {
			first = m->rec;
		}
	}
	/* A recording is made by the first run and used by the later ones. */
	bool records = m->replay && strncmp(m->id, "vulkan", 6) == 0;
	cr_assert_eq(m->rec != NULL, records, "%s", id);
	cr_assert_eq(m->rec, first, "%s: the recording was replaced", id);
	printf("graph_run: %s: 10 steps, 9 barriers, same bytes as 10 dispatches, 3 runs\n", id);
	vy_outputs_finish(&one);
	finish(&got, g, steps, 10);
}

Test(graph_run, a_chain_of_ten_steps_gives_the_bytes_of_ten_dispatches)
{
	each_backend(chain_of_ten);
}

static void grid_sync_temp_and_resident(struct vy_backend *b, struct mode *m)
{
	const char *id = m->id;
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
	cr_assert_eq(go(b, m, g, run, &in, slots, 0, &got, &err), 0, "%s: %s: %s", id, err.at,
		err.message);
	cr_assert_arr_eq(got.items[0].data, want_y, sizeof(want_y), "%s: output 0", id);
	uint8_t back[2 * N * 4];
	cr_assert_eq(vy_backend_resident_download(b, &r, 0, back, sizeof(back), &err), 0, "%s",
		err.message);
	cr_assert_arr_eq(back, want_r, sizeof(want_r), "%s: the resident buffer", id);
	uint8_t zeros[N * 4] = {0};
	cr_assert_arr_eq(back + N * 4, zeros, sizeof(zeros), "%s: past the declaration", id);
	/* The next run binds another resident buffer to the same slot. */
	struct vy_resource r2;
	cr_assert_eq(vy_backend_resident_alloc(b, 2 * N * 4, &r2, &err), 0, "%s", err.message);
	for (uint32_t s = 0; s < g->n_slots; s++) {
		if (g->slots[s].kind == VY_GRAPH_RESIDENT) {
			slots[s] = r2;
		}
	}
	cr_assert_eq(go(b, m, g, run, &in, slots, 0, &got, &err), 0, "%s: %s: %s", id, err.at,
		err.message);
	cr_assert_arr_eq(got.items[0].data, want_y, sizeof(want_y), "%s: output 0, run 2", id);
	cr_assert_eq(vy_backend_resident_download(b, &r2, 0, back, sizeof(back), &err), 0, "%s",
		err.message);
	cr_assert_arr_eq(back, want_r, sizeof(want_r), "%s: the second resident buffer", id);
	printf("graph_run: %s: grid_sync, a read_write temp and a resident buffer: as computed, "
	       "twice\n",
		id);
	vy_outputs_finish(&got);
	vy_graph_plan_destroy(g);
	vy_backend_resident_free(b, r, NULL);
	vy_backend_resident_free(b, r2, NULL);
	release(&s0);
	release(&s1);
	release(&s2);
	release(&s3);
}

Test(graph_run, grid_sync_steps_temps_and_resident_buffers_give_the_values_computed_by_hand)
{
	each_backend(grid_sync_temp_and_resident);
}

static void trap_in_step_seven(struct vy_backend *b, struct mode *m)
{
	const char *id = m->id;
	struct step steps[10];
	struct vy_graph_bind binds[10][2];
	struct vy_graph_step_desc desc[10];
	struct vy_graph_step_run run[10];
	struct vy_err err = {0};
	struct vy_resource r;
	cr_assert_eq(vy_backend_resident_alloc(b, N * 4, &r, &err), 0, "%s", err.message);
	for (uint32_t i = 0; i < 10; i++) {
		steps[i] =
			prepare(i == 7 ? vy_test_graph_divide_by_zero() : vy_test_graph_affine(1));
		binds[i][0] = bind("x", VY_GRAPH_INPUT, 0, NULL);
		binds[i][1] = i == 9 ? (struct vy_graph_bind){.buffer = "y",
					       .kind = VY_GRAPH_RESIDENT,
					       .handle = 0x7E57,
					       .resident_len = r.len}
				     : bind("y", VY_GRAPH_OUTPUT, i, NULL);
		desc[i] = (struct vy_graph_step_desc){steps[i].p, steps[i].plan, binds[i], 2};
		run[i] = (struct vy_graph_step_run){.program = steps[i].p};
	}
	struct vy_graph_plan *g = NULL;
	cr_assert_eq(vy_graph_plan_build(desc, 10, 16, &g, &err), 0, "%s", err.message);
	struct vy_resource slots[16] = {0};
	for (uint32_t s = 0; s < g->n_slots; s++) {
		if (g->slots[s].kind == VY_GRAPH_RESIDENT) {
			slots[s] = r;
		}
	}
	uint32_t x[N] = {0};
	struct vy_bytes in = {(const uint8_t *)x, sizeof(x)};
	struct vy_outputs got;
	vy_outputs_init(&got);
	int rc = go(b, m, g, run, &in, slots, 0, &got, &err);
	cr_assert_eq(rc, VY_E_TRAP, "%s: rc %d: %s", id, rc, err.message);
	cr_assert_eq(strncmp(err.message, "step 7 of 10: ", 14), 0, "%s: %s", id, err.message);
	cr_assert(strstr(err.message, "int_div_zero"), "%s: %s", id, err.message);
	cr_assert_str_eq(err.at, "steps[7].entry[0].store", "%s", id);
	cr_assert_eq(got.len, 0, "a failed run returns no outputs");
	/* The steps after the trap ran to their end: step 9 wrote y[gid] = 0 * 1 + gid. */
	uint32_t back[N];
	cr_assert_eq(vy_backend_resident_download(b, &r, 0, (uint8_t *)back, sizeof(back), &err), 0,
		"%s", err.message);
	for (uint32_t i = 0; i < N; i++) {
		cr_assert_eq(back[i], i, "%s: element %u of step 9's resident buffer", id, i);
	}
	printf("graph_run: %s: %s (at %s); step 9 ran\n", id, err.message, err.at);
	vy_backend_resident_free(b, r, NULL);
	finish(&got, g, steps, 10);
}

Test(graph_run, a_trap_in_step_seven_of_ten_names_the_step_and_the_node)
{
	each_backend(trap_in_step_seven);
}

/*
 * Three quick steps, which a recording stamps only for a run that asks for its steps' times: such
 * a run gets a time for each step where the device has timestamps (from a recording of its own
 * on Vulkan), and every run, asking or not, the same bytes.
 */
static void times_when_asked(struct vy_backend *b, struct mode *m)
{
	const char *id = m->id;
	struct chain c;
	affine_chain(&c, 3, 3);
	struct vy_err err = {0};
	struct vy_device_profile prof;
	vy_backend_device_profile(b, &prof);
	uint32_t x[N];
	for (uint32_t i = 0; i < N; i++) {
		x[i] = 0x85EBCA6Bu * (i + 7);
	}
	struct vy_bytes in = {(const uint8_t *)x, sizeof(x)};
	struct vy_outputs got;
	vy_outputs_init(&got);
	uint8_t first[sizeof(x)];
	for (int r = 0; r < 4; r++) {
		bool timed = r == 1 || r == 2;
		uint64_t ns[3] = {0, 0, 0};
		int rc = m->replay ? vy_backend_graph_replay(b, c.g, c.run, &in, NULL, 0, &got,
					     timed ? ns : NULL, &m->rec, &err)
				   : vy_backend_graph_run(b, c.g, c.run, &in, NULL, 0, &got,
					     timed ? ns : NULL, &err);
		cr_assert_eq(rc, 0, "%s run %d: %s", id, r, err.message);
		cr_assert_eq(got.len, 1);
		if (r == 0) {
			memcpy(first, got.items[0].data, sizeof(first));
		}
		cr_assert_arr_eq(got.items[0].data, first, sizeof(first), "%s run %d", id, r);
		for (uint32_t i = 0; timed && prof.timestamps && i < 3; i++) {
			cr_assert_neq(
				ns[i], VY_TIMING_NONE, "%s run %d: no time for step %u", id, r, i);
		}
	}
	printf("graph_run: %s: times for each step when asked (timestamps: %s)\n", id,
		prof.timestamps ? "yes" : "no");
	finish(&got, c.g, c.steps, 3);
}

Test(graph_run, a_run_that_asks_for_times_gets_each_steps_time_and_the_same_bytes)
{
	each_backend(times_when_asked);
}

/* Steps 0 to 2 are quick; step 3 counts to 16,000,000 in each of 2^16 invocations, far past the
 * run's 1000 ms on any device here (a GPU included: about 10^12 iterations in all; 4 * 10^9,
 * an earlier count, took lavapipe less than a second on a quiet machine). Its stop word ends it
 * within a loop's polling interval once the timeout is seen. */
static void timeout_in_step_three(struct vy_backend *b, struct mode *m)
{
	const char *id = m->id;
	struct step steps[5];
	struct vy_graph_bind binds[5][2];
	struct vy_graph_step_desc desc[5];
	struct vy_graph_step_run run[5];
	for (uint32_t i = 0; i < 5; i++) {
		steps[i] = prepare(i == 3 ? vy_test_graph_count_to_x() : vy_test_graph_affine(1));
		binds[i][0] = bind("x", VY_GRAPH_INPUT, 0, NULL);
		binds[i][1] = bind("y", VY_GRAPH_OUTPUT, i, NULL);
		desc[i] = (struct vy_graph_step_desc){steps[i].p, steps[i].plan, binds[i], 2};
		run[i] = (struct vy_graph_step_run){.program = steps[i].p};
		if (i == 3) {
			run[i].config.grid[0] = 1u << 12;
			run[i].config.grid[1] = 1;
			run[i].config.grid[2] = 1;
		}
	}
	struct vy_graph_plan *g = NULL;
	struct vy_err err = {0};
	cr_assert_eq(vy_graph_plan_build(desc, 5, 16, &g, &err), 0, "%s", err.message);
	uint32_t x[N];
	struct vy_bytes in = {(const uint8_t *)x, sizeof(x)};
	struct vy_outputs got;
	vy_outputs_init(&got);
	/* A first run with a count of 0 compiles the steps (and records the graph), so that the
	 * timed run's 1000 ms go to running them, however loaded the machine. */
	memset(x, 0, sizeof(x));
	cr_assert_eq(go(b, m, g, run, &in, NULL, 0, &got, &err), 0, "%s: %s", id, err.message);
	memset(x, 0xFF, sizeof(x));
	int rc = go(b, m, g, run, &in, NULL, 1000, &got, &err);
	cr_assert_eq(rc, VY_E_TIMEOUT, "%s: rc %d: %s", id, rc, err.message);
	cr_assert_eq(strncmp(err.message, "step 3 of 5: ", 13), 0, "%s: %s", id, err.message);
	cr_assert_eq(strncmp(err.at, "steps[3]", 8), 0, "%s: %s", id, err.at);
	cr_assert_eq(got.len, 0);
	/* The next run of the same graph with a small count succeeds. */
	memset(x, 0, sizeof(x));
	cr_assert_eq(go(b, m, g, run, &in, NULL, 0, &got, &err), 0, "%s: %s", id, err.message);
	cr_assert_eq(got.len, 5);
	printf("graph_run: %s: %s (at %s)\n", id, err.message, err.at);
	finish(&got, g, steps, 5);
}

Test(graph_run, a_step_that_outlasts_the_timeout_is_named)
{
	each_backend(timeout_in_step_three);
}

/* The bytes one run of chain `c` gives for input `x`, step by step. */
static void expected_run(struct vy_backend *b, struct chain *c, const uint32_t *x, uint8_t *want)
{
	struct vy_outputs got;
	vy_outputs_init(&got);
	struct vy_err err = {0};
	struct vy_bytes in = {(const uint8_t *)x, N * 4};
	cr_assert_eq(vy_backend_graph_run(b, c->g, c->run, &in, NULL, 0, &got, NULL, &err), 0, "%s",
		err.message);
	cr_assert_eq(got.len, 1);
	memcpy(want, got.items[0].data, N * 4);
	vy_outputs_finish(&got);
}

static void started_together(struct vy_backend *b, struct mode *m)
{
	if (!m->replay) {
		return; /* a started run replays a recording; one mode is enough */
	}
	const char *id = m->id;
	struct chain c[2];
	affine_chain(&c[0], 10, 2);
	affine_chain(&c[1], 7, 5);
	struct vy_graph_recording *rec[2] = {NULL, NULL};
	struct vy_err err = {0};
	/* Four runs started before any is waited for: each graph once, then the first graph
	 * again while its first run still holds its recording, then the second graph again;
	 * each gives the bytes of its graph run step by step. */
	enum { RUNS = 4 };
	static const uint32_t which[RUNS] = {0, 1, 0, 1};
	uint32_t x[RUNS][N];
	struct vy_pending *p[RUNS];
	for (uint32_t r = 0; r < RUNS; r++) {
		for (uint32_t i = 0; i < N; i++) {
			x[r][i] = 0x85EBCA6Bu * (i + 1) ^ (r + 1) * 0x27D4EB2Fu;
		}
		struct vy_bytes in = {(const uint8_t *)x[r], sizeof(x[r])};
		struct chain *g = &c[which[r]];
		cr_assert_eq(vy_backend_graph_start(
				     b, g->g, g->run, &in, NULL, 0, &rec[which[r]], &p[r], &err),
			0, "%s start %u: %s", id, r, err.message);
	}
	struct vy_graph_recording *kept[2] = {NULL, NULL};
	for (uint32_t r = 0; r < RUNS; r++) {
		struct vy_outputs got;
		vy_outputs_init(&got);
		cr_assert_eq(vy_pending_wait(p[r], &got, &err), 0, "%s run %u: %s: %s", id, r,
			err.at, err.message);
		/* The first recording kept stays the graph's: a later run that recorded its
		 * own copy meanwhile does not replace it. */
		if (!kept[which[r]]) {
			kept[which[r]] = rec[which[r]];
		}
		cr_assert_eq(rec[which[r]], kept[which[r]], "%s run %u: the recording was replaced",
			id, r);
		uint8_t want[N * 4];
		expected_run(b, &c[which[r]], x[r], want);
		cr_assert_eq(got.len, 1);
		cr_assert_arr_eq(got.items[0].data, want, sizeof(want),
			"%s run %u: started together, the graph gave other bytes", id, r);
		vy_outputs_finish(&got);
	}
	/* A started run given up without its results leaves the graph to run again. */
	struct vy_bytes in = {(const uint8_t *)x[0], sizeof(x[0])};
	struct vy_pending *q = NULL;
	cr_assert_eq(vy_backend_graph_start(b, c[0].g, c[0].run, &in, NULL, 0, &rec[0], &q, &err),
		0, "%s: %s", id, err.message);
	vy_pending_destroy(q);
	cr_assert_eq(vy_backend_graph_start(b, c[0].g, c[0].run, &in, NULL, 0, &rec[0], &q, &err),
		0, "%s: %s", id, err.message);
	struct vy_outputs got;
	vy_outputs_init(&got);
	cr_assert_eq(vy_pending_wait(q, &got, &err), 0, "%s: %s", id, err.message);
	uint8_t want[N * 4];
	expected_run(b, &c[0], x[0], want);
	cr_assert_arr_eq(got.items[0].data, want, sizeof(want), "%s: after a run given up", id);
	bool records = strncmp(id, "vulkan", 6) == 0;
	cr_assert_eq(rec[0] != NULL && rec[1] != NULL, records, "%s: recordings kept", id);
	printf("graph_run: %s: %u runs of two graphs started together, one given up\n", id, RUNS);
	vy_outputs_finish(&got);
	for (int k = 0; k < 2; k++) {
		vy_backend_graph_forget(b, rec[k]);
		finish(&got, c[k].g, c[k].steps, k ? 7 : 10);
	}
}

Test(graph_run, runs_started_together_give_the_bytes_of_runs_one_by_one)
{
	each_backend(started_together);
}
