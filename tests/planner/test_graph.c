/*
 * Graph plans (planner/graph.h): slots, barriers only at hazards, the totals a recorder sizes,
 * every refusal with its place and Fix line, and the lengths of one run's slots.
 */
#include <criterion/criterion.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "err.h"
#include "graph.h"
#include "ir.h"

struct prog {
	struct vy_program *p;
	struct vy_binding_plan *plan;
};

struct buf {
	const char *name;
	enum vy_access access;
	enum vy_type type;
	uint32_t count;
};

/* A program of these buffers (binding numbers in order); the plan reads only the declarations. */
static struct prog load(const struct buf *bufs, uint32_t n)
{
	struct prog out = {vy_program_create("step", 16, 1, 1), NULL};
	for (uint32_t i = 0; i < n; i++) {
		cr_assert_not_null(vy_program_add_buffer(
			out.p, bufs[i].name, i, bufs[i].access, bufs[i].type, bufs[i].count));
	}
	struct vy_err err = {0};
	cr_assert_eq(vy_binding_plan_build(out.p, &out.plan, &err), 0, "%s", err.message);
	return out;
}

/* y = f(x) over 16 f32. */
static const struct buf scale_bufs[] = {
	{"x", VY_ACCESS_READ_ONLY, VY_TYPE_F32, 16}, {"y", VY_ACCESS_WRITE_ONLY, VY_TYPE_F32, 16}};
/* a += b over 16 f32. */
static const struct buf accum_bufs[] = {
	{"a", VY_ACCESS_READ_WRITE, VY_TYPE_F32, 16}, {"b", VY_ACCESS_READ_ONLY, VY_TYPE_F32, 16}};
/* y = x of any length (count 0 both), u32, with a workgroup buffer. */
static const struct buf copy_bufs[] = {{"x", VY_ACCESS_READ_ONLY, VY_TYPE_U32, 0},
	{"y", VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 0}, {"w", VY_ACCESS_WORKGROUP, VY_TYPE_U32, 64}};
/* y = x over 8 f32: the length differs from scale's. */
static const struct buf short_bufs[] = {
	{"x", VY_ACCESS_READ_ONLY, VY_TYPE_F32, 8}, {"y", VY_ACCESS_WRITE_ONLY, VY_TYPE_F32, 8}};

#define LOAD(bufs) load(bufs, sizeof(bufs) / sizeof(bufs[0]))

static void unload(struct prog *p)
{
	vy_binding_plan_destroy(p->plan);
	vy_program_destroy(p->p);
}

static struct vy_graph_bind in(const char *buf, uint32_t k)
{
	return (struct vy_graph_bind){.buffer = buf, .kind = VY_GRAPH_INPUT, .index = k};
}

static struct vy_graph_bind out(const char *buf, uint32_t k)
{
	return (struct vy_graph_bind){.buffer = buf, .kind = VY_GRAPH_OUTPUT, .index = k};
}

static struct vy_graph_bind temp(const char *buf, const char *name)
{
	return (struct vy_graph_bind){.buffer = buf, .kind = VY_GRAPH_TEMP, .temp = name};
}

static struct vy_graph_bind res(const char *buf, uint64_t handle, uint64_t len)
{
	return (struct vy_graph_bind){
		.buffer = buf, .kind = VY_GRAPH_RESIDENT, .handle = handle, .resident_len = len};
}

#define STEP(prog, ...)                                                                            \
	(struct vy_graph_step_desc)                                                                \
	{                                                                                          \
		(prog).p, (prog).plan, (const struct vy_graph_bind[]){__VA_ARGS__},                \
			sizeof((struct vy_graph_bind[]){__VA_ARGS__}) /                            \
				sizeof(struct vy_graph_bind)                                       \
	}

Test(graph, a_chain_gets_slots_and_barriers_only_where_a_step_touches_what_another_wrote)
{
	struct prog scale = LOAD(scale_bufs);
	struct prog accum = LOAD(accum_bufs);
	struct vy_graph_step_desc steps[] = {
		STEP(scale, in("x", 0), temp("y", "t")),
		STEP(scale, in("x", 0), temp("y", "u")),     /* no hazard with step 0 */
		STEP(accum, temp("a", "t"), temp("b", "u")), /* reads t and u: barrier */
		STEP(scale, temp("x", "t"), out("y", 0)),    /* reads t that step 2 wrote */
	};
	struct vy_graph_plan *g = NULL;
	struct vy_err err = {0};
	cr_assert_eq(vy_graph_plan_build(steps, 4, 16, &g, &err), 0, "%s", err.message);
	cr_assert_eq(g->n_steps, 4);
	cr_assert_eq(g->n_slots, 4); /* input 0, temp t, temp u, output 0 */
	cr_assert_eq(g->n_inputs, 1);
	cr_assert_eq(g->n_outputs, 1);
	bool want_barrier[] = {false, false, true, true};
	for (uint32_t i = 0; i < 4; i++) {
		cr_assert_eq(g->steps[i].barrier_before, want_barrier[i], "step %u", i);
	}
	cr_assert_eq(g->totals.barriers, 2);
	cr_assert_eq(g->steps[0].slot_of[0], g->steps[1].slot_of[0], "both read input 0");
	cr_assert_eq(g->steps[0].slot_of[1], g->steps[2].slot_of[0], "temp t");
	cr_assert_eq(g->steps[1].slot_of[1], g->steps[2].slot_of[1], "temp u");
	const struct vy_graph_slot *t = &g->slots[g->steps[0].slot_of[1]];
	cr_assert_eq(t->kind, VY_GRAPH_TEMP);
	cr_assert_str_eq(t->temp, "t");
	cr_assert(t->read && t->written);
	cr_assert_eq(t->byte_len, 64);
	cr_assert_eq(g->slots[g->output_slot[0]].kind, VY_GRAPH_OUTPUT);
	cr_assert_eq(g->slots[g->input_slot[0]].kind, VY_GRAPH_INPUT);
	cr_assert_eq(g->totals.temp_bytes, 128);
	cr_assert_eq(g->totals.output_bytes, 64);
	cr_assert_eq(g->totals.input_upload_capacity, 1);
	cr_assert_eq(g->totals.output_readback_capacity, 1);
	/* Two pointer arguments and the launch parameters per step. */
	cr_assert_eq(g->totals.kernel_argument_capacity, 12);
	cr_assert_not(g->steps[2].capture.resident_input_replay_safe);
	vy_graph_plan_destroy(g);
	unload(&scale);
	unload(&accum);
}

Test(graph, writing_a_slot_that_an_earlier_step_read_or_wrote_needs_a_barrier)
{
	struct prog scale = LOAD(scale_bufs);
	struct vy_graph_step_desc war[] = {
		STEP(scale, in("x", 0), temp("y", "t")),
		STEP(scale, temp("x", "t"), out("y", 0)), /* read after write */
		STEP(scale, in("x", 0), temp("y", "t")),  /* write after read */
		STEP(scale, in("x", 0), temp("y", "t")),  /* write after write */
	};
	struct vy_graph_plan *g = NULL;
	struct vy_err err = {0};
	cr_assert_eq(vy_graph_plan_build(war, 4, 4, &g, &err), 0, "%s", err.message);
	for (uint32_t i = 1; i < 4; i++) {
		cr_assert(g->steps[i].barrier_before, "step %u", i);
	}
	cr_assert_not(g->steps[0].barrier_before);
	cr_assert_eq(g->totals.barriers, 3);
	vy_graph_plan_destroy(g);
	/* Two readers of one input and writers of distinct slots share no hazard. */
	struct vy_graph_step_desc free_steps[] = {
		STEP(scale, in("x", 0), out("y", 0)),
		STEP(scale, in("x", 0), out("y", 1)),
		STEP(scale, in("x", 1), out("y", 2)),
	};
	cr_assert_eq(vy_graph_plan_build(free_steps, 3, 4, &g, &err), 0, "%s", err.message);
	cr_assert_eq(g->totals.barriers, 0);
	cr_assert_eq(g->n_inputs, 2);
	cr_assert_eq(g->n_outputs, 3);
	vy_graph_plan_destroy(g);
	unload(&scale);
}

/* Build a graph that must fail; return the error for the caller to check. */
static struct vy_err refused(const struct vy_graph_step_desc *steps, uint32_t n, uint32_t max)
{
	struct vy_graph_plan *g = (struct vy_graph_plan *)1;
	struct vy_err err = {0};
	int rc = vy_graph_plan_build(steps, n, max, &g, &err);
	cr_assert_eq(rc, VY_E_BAD_REQUEST, "rc %d: %s", rc, err.message);
	cr_assert_null(g);
	cr_assert_neq(err.fix[0], 0, "no Fix for: %s", err.message);
	return err;
}

static void expect(const struct vy_err *err, const char *at, const char *says)
{
	cr_assert_str_eq(err->at, at, "%s", err->message);
	cr_assert(strstr(err->message, says), "\"%s\" not in: %s", says, err->message);
}

Test(graph, each_bind_that_does_not_fit_is_refused_with_its_place)
{
	struct prog scale = LOAD(scale_bufs);
	struct prog copy = LOAD(copy_bufs);
	struct prog shrt = LOAD(short_bufs);
	struct vy_err e;

	e = refused((struct vy_graph_step_desc[]){STEP(scale, in("x", 0))}, 1, 8);
	expect(&e, "steps[0].bind", "buffer y of step 0 is not bound");
	e = refused(
		(struct vy_graph_step_desc[]){STEP(scale, in("x", 0), out("y", 0), out("y", 1))}, 1,
		8);
	expect(&e, "steps[0].bind.y", "buffer y is bound twice");
	e = refused((struct vy_graph_step_desc[]){STEP(scale, in("x", 0), out("z", 0))}, 1, 8);
	expect(&e, "steps[0].bind.z", "step 0's program has no buffer z");
	e = refused(
		(struct vy_graph_step_desc[]){STEP(copy, in("x", 0), out("y", 0), temp("w", "s"))},
		1, 8);
	expect(&e, "steps[0].bind.w", "buffer w is a workgroup buffer");
	/* An f32 temp read as u32. */
	e = refused((struct vy_graph_step_desc[]){STEP(scale, in("x", 0), temp("y", "t")),
			    STEP(copy, temp("x", "t"), out("y", 0))},
		2, 8);
	expect(&e, "steps[1].bind.x", "already bound to buffers of f32");
	/* 16 elements written, 8 read. */
	e = refused((struct vy_graph_step_desc[]){STEP(scale, in("x", 0), temp("y", "t")),
			    STEP(shrt, temp("x", "t"), out("y", 0))},
		2, 8);
	expect(&e, "steps[1].bind.x", "buffer x holds 32 bytes");
	e = refused((struct vy_graph_step_desc[]){STEP(scale, in("x", 0), out("y", 0)),
			    STEP(scale, in("x", 2), out("y", 1))},
		2, 8);
	expect(&e, "steps", "graph input 1 is bound to no buffer");
	e = refused((struct vy_graph_step_desc[]){STEP(scale, in("x", 0), out("y", 1))}, 1, 8);
	expect(&e, "steps", "graph output 0 is bound to no buffer");
	e = refused((struct vy_graph_step_desc[]){STEP(scale, out("x", 0), in("y", 0))}, 1, 8);
	expect(&e, "steps[0].bind.y", "buffer y is write_only");
	e = refused((struct vy_graph_step_desc[]){STEP(scale, temp("x", "t"), out("y", 0))}, 1, 8);
	expect(&e, "steps", "temp \"t\" is never written");
	e = refused((struct vy_graph_step_desc[]){STEP(copy, in("x", 0), out("y", 0))}, 1, 8);
	expect(&e, "steps", "output 0 has no length");
	e = refused(
		(struct vy_graph_step_desc[]){STEP(scale, in("x", 0), res("y", 0x51, 60))}, 1, 8);
	expect(&e, "steps[0].bind.y", "buffer y needs 64 bytes; resident buffer 0x51 holds 60");
	e = refused(
		(struct vy_graph_step_desc[]){STEP(scale, in("x", 0), out("y", 0)),
			STEP(scale, in("x", 0), out("y", 0)), STEP(scale, in("x", 0), out("y", 0))},
		3, 2);
	expect(&e, "steps", "the graph has 3 steps; a graph holds 1 to 2");
	e = refused(NULL, 0, 2);
	expect(&e, "steps", "the graph has 0 steps");
	cr_assert_str_eq(e.fix, "give the graph at least one step");
	unload(&scale);
	unload(&copy);
	unload(&shrt);
}

Test(graph, a_run_takes_its_lengths_from_its_inputs_where_no_count_fixes_them)
{
	struct prog copy = LOAD(copy_bufs);
	struct prog scale = LOAD(scale_bufs);
	/* copy: count-0 input into a resident buffer; scale: fixed input into an output. */
	struct vy_graph_step_desc steps[] = {
		STEP(copy, in("x", 0), res("y", 7, 4096)),
		STEP(scale, in("x", 1), out("y", 0)),
	};
	struct vy_graph_plan *g = NULL;
	struct vy_err err = {0};
	cr_assert_eq(vy_graph_plan_build(steps, 2, 8, &g, &err), 0, "%s", err.message);
	size_t lens[8];
	uint8_t bytes[64] = {0};
	struct vy_bytes ins[] = {{bytes, 40}, {bytes, 64}};
	cr_assert_eq(vy_graph_plan_run_lengths(g, ins, 2, lens, &err), 0, "%s", err.message);
	cr_assert_eq(lens[g->input_slot[0]], 40);
	cr_assert_eq(lens[g->input_slot[1]], 64);
	cr_assert_eq(lens[g->output_slot[0]], 64);
	cr_assert_eq(lens[g->steps[0].slot_of[1]], 4096, "the resident buffer's length");

	ins[0].len = 42;
	cr_assert_eq(vy_graph_plan_run_lengths(g, ins, 2, lens, &err), VY_E_BAD_REQUEST);
	cr_assert_str_eq(err.at, "inputs[0]");
	cr_assert(strstr(err.message, "not a whole number of u32 elements"), "%s", err.message);
	ins[0].len = 40;
	ins[1].len = 60;
	cr_assert_eq(vy_graph_plan_run_lengths(g, ins, 2, lens, &err), VY_E_BAD_REQUEST);
	cr_assert_str_eq(err.at, "inputs[1]");
	cr_assert(strstr(err.message, "the buffers bound to it hold 64"), "%s", err.message);
	cr_assert_eq(vy_graph_plan_run_lengths(g, ins, 1, lens, &err), VY_E_BAD_REQUEST);
	cr_assert(strstr(err.message, "the graph takes 2 inputs; the request gave 1"), "%s",
		err.message);
	vy_graph_plan_destroy(g);
	unload(&copy);
	unload(&scale);
}
