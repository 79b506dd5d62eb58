/*
 * Grid-sync splitting (seed 004): the seed's split tests with their cases and expectations, the
 * shape of the segments (wrapped or not, empty ones kept), and the split dispatch driver against
 * a backend that records every segment it receives and the inputs threaded into it.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "err.h"
#include "grid_sync.h"
#include "ir.h"

/* The seed's Program::wrapped: one outer region around the given top-level nodes. */
static void set_wrapped_entry(struct vy_program *p, struct vy_block top)
{
	vy_program_set_entry(p, vy_ir_seq(p, vy_ir_region(p, "main", top), NULL));
}

/* Both entry forms must split alike: the bare block, and the block inside a region. */
static void split_entry(
	struct vy_program *p, struct vy_block top, bool wrapped, struct vy_grid_sync_split *split)
{
	if (wrapped) {
		set_wrapped_entry(p, top);
	} else {
		vy_program_set_entry(p, top);
	}
	vy_grid_sync_split(p, split);
}

/* The seed's test program: one read_write u32 buffer of 4 elements, wrapped entry. */
static struct vy_program *seed_program(uint32_t wx, struct vy_block (*top)(struct vy_program *))
{
	struct vy_program *p = vy_program_create(NULL, wx, 1, 1);
	vy_program_add_buffer(p, "buf", 0, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 4);
	set_wrapped_entry(p, top(p));
	return p;
}

static struct vy_node *region_store(
	struct vy_program *p, const char *gen, uint32_t index, uint32_t value)
{
	return vy_ir_region(p, gen,
		vy_ir_seq(
			p, vy_ir_store(p, "buf", vy_ir_u32(p, index), vy_ir_u32(p, value)), NULL));
}

static struct vy_node *region_return(struct vy_program *p, const char *gen)
{
	return vy_ir_region(p, gen, vy_ir_seq(p, vy_ir_return(p), NULL));
}

static struct vy_node *grid_sync(struct vy_program *p)
{
	return vy_ir_barrier(p, VY_ORDER_GRID_SYNC);
}

/* The seed's inner_len: the length of the top level, past a wrapping region. */
static uint32_t inner_len(const struct vy_program *p)
{
	if (p->entry.len == 1 && p->entry.items[0]->kind == VY_NODE_REGION) {
		return p->entry.items[0]->body.len;
	}
	return p->entry.len;
}

static const struct vy_block *inner(const struct vy_program *p)
{
	if (p->entry.len == 1 && p->entry.items[0]->kind == VY_NODE_REGION) {
		return &p->entry.items[0]->body;
	}
	return &p->entry;
}

static struct vy_block top_no_grid_sync(struct vy_program *p)
{
	return vy_ir_seq(p, region_store(p, "a", 0, 1), NULL);
}

Test(grid_sync, no_grid_sync_returns_single_segment)
{
	struct vy_program *p = seed_program(1, top_no_grid_sync);
	cr_assert_not(vy_grid_sync_contains(p));
	struct vy_grid_sync_split split;
	vy_grid_sync_split(p, &split);
	cr_assert_eq(split.len, 1);
	cr_assert_eq(inner_len(split.segments[0]), 1);
	vy_grid_sync_split_finish(&split);
	vy_program_destroy(p);
}

static struct vy_block top_one_grid_sync(struct vy_program *p)
{
	return vy_ir_seq(
		p, region_store(p, "a", 0, 1), grid_sync(p), region_store(p, "b", 1, 2), NULL);
}

Test(grid_sync, one_grid_sync_splits_into_two)
{
	struct vy_program *p = seed_program(1, top_one_grid_sync);
	cr_assert(vy_grid_sync_contains(p));
	struct vy_grid_sync_split split;
	vy_grid_sync_split(p, &split);
	cr_assert_eq(split.len, 2);
	cr_assert_eq(inner_len(split.segments[0]), 1);
	cr_assert_eq(inner_len(split.segments[1]), 1);
	vy_grid_sync_split_finish(&split);
	vy_program_destroy(p);
}

static struct vy_block top_three_grid_syncs(struct vy_program *p)
{
	return vy_ir_seq(p, region_return(p, "a"), grid_sync(p), region_return(p, "b"),
		grid_sync(p), region_return(p, "c"), grid_sync(p), region_return(p, "d"), NULL);
}

Test(grid_sync, three_grid_syncs_split_into_four)
{
	struct vy_program *p = seed_program(1, top_three_grid_syncs);
	struct vy_grid_sync_split split;
	vy_grid_sync_split(p, &split);
	cr_assert_eq(split.len, 4);
	vy_grid_sync_split_finish(&split);
	vy_program_destroy(p);
}

static struct vy_block top_workgroup_barrier(struct vy_program *p)
{
	return vy_ir_seq(p, region_return(p, "a"), vy_ir_barrier(p, VY_ORDER_SEQ_CST),
		region_return(p, "b"), NULL);
}

Test(grid_sync, workgroup_barrier_does_not_split)
{
	struct vy_program *p = seed_program(1, top_workgroup_barrier);
	cr_assert_not(vy_grid_sync_contains(p));
	struct vy_grid_sync_split split;
	vy_grid_sync_split(p, &split);
	cr_assert_eq(split.len, 1);
	/* Region a, the seq_cst barrier, region b. */
	cr_assert_eq(inner_len(split.segments[0]), 3);
	vy_grid_sync_split_finish(&split);
	vy_program_destroy(p);
}

static struct vy_block top_two_returns(struct vy_program *p)
{
	return vy_ir_seq(p, region_return(p, "a"), grid_sync(p), region_return(p, "b"), NULL);
}

Test(grid_sync, buffers_and_workgroup_size_propagate_to_each_segment)
{
	struct vy_program *p = seed_program(256, top_two_returns);
	struct vy_grid_sync_split split;
	vy_grid_sync_split(p, &split);
	cr_assert_eq(split.len, 2);
	for (uint32_t i = 0; i < split.len; i++) {
		const struct vy_program *seg = split.segments[i];
		cr_assert_eq(seg->workgroup_size[0], 256);
		cr_assert_eq(seg->workgroup_size[1], 1);
		cr_assert_eq(seg->workgroup_size[2], 1);
		cr_assert_eq(seg->n_buffers, 1);
		cr_assert_str_eq(seg->buffers[0].name, "buf");
	}
	vy_grid_sync_split_finish(&split);
	vy_program_destroy(p);
}

Test(grid_sync, other_barrier_orderings_do_not_split)
{
	const enum vy_order orders[] = {VY_ORDER_ACQUIRE, VY_ORDER_RELEASE, VY_ORDER_ACQ_REL};
	for (size_t i = 0; i < sizeof(orders) / sizeof(orders[0]); i++) {
		struct vy_program *p = vy_program_create(NULL, 1, 1, 1);
		vy_program_add_buffer(p, "buf", 0, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 4);
		vy_program_set_entry(p, vy_ir_seq(p, vy_ir_return(p), vy_ir_barrier(p, orders[i]),
						vy_ir_return(p), NULL));
		cr_assert_not(vy_grid_sync_contains(p), "%s", vy_order_name(orders[i]));
		struct vy_grid_sync_split split;
		vy_grid_sync_split(p, &split);
		cr_assert_eq(split.len, 1);
		cr_assert_eq(split.segments[0]->entry.len, 3);
		vy_grid_sync_split_finish(&split);
		vy_program_destroy(p);
	}
}

Test(grid_sync, wrapped_segments_keep_the_generator_and_drop_the_barrier)
{
	struct vy_program *p = vy_program_create("two_phase", 64, 1, 1);
	vy_program_add_buffer(p, "buf", 0, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 4);
	struct vy_node *a = region_store(p, "a", 0, 1);
	struct vy_node *b = region_store(p, "b", 1, 2);
	struct vy_node *c = vy_ir_return(p);
	vy_program_set_entry(
		p, vy_ir_seq(p,
			   vy_ir_region(p, "kernel.gen", vy_ir_seq(p, a, grid_sync(p), b, c, NULL)),
			   NULL));

	struct vy_grid_sync_split split;
	vy_grid_sync_split(p, &split);
	cr_assert_eq(split.len, 2);
	for (uint32_t i = 0; i < split.len; i++) {
		const struct vy_program *seg = split.segments[i];
		cr_assert_eq(seg->entry.len, 1, "each segment is wrapped again");
		cr_assert_eq(seg->entry.items[0]->kind, VY_NODE_REGION);
		cr_assert_str_eq(seg->entry.items[0]->name, "kernel.gen");
		cr_assert_str_eq(seg->name, "two_phase");
	}
	cr_assert_eq(inner(split.segments[0])->len, 1);
	cr_assert_eq(inner(split.segments[0])->items[0], a);
	cr_assert_eq(inner(split.segments[1])->len, 2);
	cr_assert_eq(inner(split.segments[1])->items[0], b);
	cr_assert_eq(inner(split.segments[1])->items[1], c);
	vy_grid_sync_split_finish(&split);
	vy_program_destroy(p);
}

Test(grid_sync, unwrapped_programs_split_without_adding_a_region)
{
	struct vy_program *p = vy_program_create(NULL, 1, 1, 1);
	vy_program_add_buffer(p, "buf", 0, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 4);
	struct vy_node *s0 = vy_ir_store(p, "buf", vy_ir_u32(p, 0), vy_ir_u32(p, 1));
	struct vy_node *s1 = vy_ir_store(p, "buf", vy_ir_u32(p, 1), vy_ir_u32(p, 2));
	vy_program_set_entry(p, vy_ir_seq(p, s0, grid_sync(p), s1, NULL));
	cr_assert(vy_grid_sync_contains(p));
	struct vy_grid_sync_split split;
	vy_grid_sync_split(p, &split);
	cr_assert_eq(split.len, 2);
	cr_assert_eq(split.segments[0]->entry.len, 1);
	cr_assert_eq(split.segments[0]->entry.items[0], s0);
	cr_assert_eq(split.segments[1]->entry.len, 1);
	cr_assert_eq(split.segments[1]->entry.items[0], s1);
	cr_assert_null(split.segments[0]->name);
	vy_grid_sync_split_finish(&split);
	vy_program_destroy(p);
}

Test(grid_sync, empty_segments_are_kept)
{
	for (int wrapped = 0; wrapped < 2; wrapped++) {
		struct vy_program *p = vy_program_create(NULL, 1, 1, 1);
		vy_program_add_buffer(p, "buf", 0, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 4);
		struct vy_node *r = vy_ir_return(p);
		struct vy_block top =
			vy_ir_seq(p, grid_sync(p), grid_sync(p), r, grid_sync(p), NULL);
		struct vy_grid_sync_split split;
		split_entry(p, top, wrapped, &split);
		cr_assert_eq(split.len, 4, "wrapped=%d", wrapped);
		const uint32_t want[] = {0, 0, 1, 0};
		for (uint32_t i = 0; i < 4; i++) {
			const struct vy_program *seg = split.segments[i];
			cr_assert_eq(inner_len(seg), want[i], "wrapped=%d segment %u", wrapped, i);
			cr_assert_eq(seg->entry.len, wrapped ? 1u : want[i]);
		}
		cr_assert_eq(inner(split.segments[2])->items[0], r);
		vy_grid_sync_split_finish(&split);
		vy_program_destroy(p);
	}
}

Test(grid_sync, nested_grid_sync_is_not_seen)
{
	struct vy_program *p = vy_program_create(NULL, 1, 1, 1);
	vy_program_add_buffer(p, "buf", 0, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 4);
	struct vy_node *in_region = vy_ir_region(p, "a", vy_ir_seq(p, grid_sync(p), NULL));
	struct vy_node *in_loop = vy_ir_loop(
		p, "i", vy_ir_u32(p, 0), vy_ir_u32(p, 2), vy_ir_seq(p, grid_sync(p), NULL));
	vy_program_set_entry(p, vy_ir_seq(p, in_region, in_loop, NULL));
	cr_assert_not(vy_grid_sync_contains(p));
	struct vy_grid_sync_split split;
	vy_grid_sync_split(p, &split);
	cr_assert_eq(split.len, 1);
	cr_assert_eq(split.segments[0]->entry.len, 2);
	vy_grid_sync_split_finish(&split);
	vy_program_destroy(p);
}

Test(grid_sync, a_single_segment_keeps_the_entry_as_it_is)
{
	struct vy_program *p = seed_program(1, top_no_grid_sync);
	struct vy_grid_sync_split split;
	vy_grid_sync_split(p, &split);
	cr_assert_eq(split.segments[0]->entry.len, 1);
	cr_assert_eq(split.segments[0]->entry.items[0], p->entry.items[0],
		"the outer region itself, not a new one");
	vy_grid_sync_split_finish(&split);
	vy_program_destroy(p);
}

Test(grid_sync, segments_are_views_that_clone_into_programs_of_their_own)
{
	struct vy_program *p = seed_program(8, top_one_grid_sync);
	struct vy_grid_sync_split split;
	vy_grid_sync_split(p, &split);
	cr_assert_null(split.segments[1]->arena);
	cr_assert_eq(split.segments[1]->buffers, p->buffers, "the buffer table is shared");
	struct vy_program *own = vy_program_clone(split.segments[1]);
	vy_grid_sync_split_finish(&split);
	vy_grid_sync_split_finish(&split);
	vy_grid_sync_split_finish(NULL);
	vy_program_destroy(p);

	cr_assert_eq(own->workgroup_size[0], 8);
	cr_assert_str_eq(own->buffers[0].name, "buf");
	cr_assert_eq(own->entry.len, 1);
	const struct vy_node *region = own->entry.items[0];
	cr_assert_str_eq(region->name, "main");
	cr_assert_eq(region->body.len, 1);
	cr_assert_str_eq(region->body.items[0]->name, "b");
	vy_program_destroy(own);
}

Test(grid_sync, many_barriers_split_in_linear_time)
{
	enum { N = 30000 };
	struct vy_program *p = vy_program_create(NULL, 1, 1, 1);
	vy_program_add_buffer(p, "buf", 0, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 4);
	struct vy_node **nodes = calloc(2 * N + 1, sizeof(*nodes));
	cr_assert_not_null(nodes);
	for (uint32_t i = 0; i < N; i++) {
		nodes[2 * i] = vy_ir_return(p);
		nodes[2 * i + 1] = grid_sync(p);
	}
	nodes[2 * N] = vy_ir_return(p);
	set_wrapped_entry(p, vy_ir_seqv(p, nodes, 2 * N + 1));
	free(nodes);

	struct vy_grid_sync_split split;
	vy_grid_sync_split(p, &split);
	cr_assert_eq(split.len, N + 1);
	for (uint32_t i = 0; i < split.len; i++) {
		cr_assert_eq(inner_len(split.segments[i]), 1);
	}
	vy_grid_sync_split_finish(&split);
	vy_program_destroy(p);
}

/*
 * The recording backend. Its outputs are functions of its inputs and of the segment's tag (the
 * value stored by the segment's first top-level store, 0xEE when it has none), for the driver
 * program below.
 */
#define MAX_CALLS 8
#define NO_TAG 0xEE

enum { IN_A, IN_ACC, IN_KEEP, IN_U, IN_ACC2, N_IN };
enum { OUT_ACC, OUT_OUT, OUT_KEEP, OUT_RES, OUT_ACC2, N_OUT };

struct call {
	const struct vy_program *program;
	const char *generator; /* wrapping region's, or NULL */
	uint32_t inner_len;
	uint8_t tag;
	size_t n_inputs;
	const uint8_t *input_data[N_IN];
	struct vy_outputs inputs; /* copies */
};

struct recorder {
	struct vy_backend base;
	struct call calls[MAX_CALLS];
	int n_calls;
	int fail_tag;      /* the segment tag that fails, or -1 */
	bool short_output; /* return one output too few */
	bool grid_sync;    /* report a native grid barrier */
};

static uint8_t segment_tag(const struct vy_program *p)
{
	const struct vy_block *top = inner(p);
	for (uint32_t i = 0; i < top->len; i++) {
		if (top->items[i]->kind == VY_NODE_STORE) {
			return (uint8_t)top->items[i]->args[1]->bits;
		}
	}
	return NO_TAG;
}

static void push_with(struct vy_outputs *outs, struct vy_bytes in, uint8_t extra)
{
	uint8_t *d = vy_outputs_push_zeroed(outs, in.len + 1);
	if (in.len > 0) {
		memcpy(d, in.data, in.len);
	}
	d[in.len] = extra;
}

static int recorder_dispatch(struct vy_backend *b, const struct vy_program *program,
	const struct vy_bytes *inputs, size_t n_inputs, const struct vy_dispatch_config *config,
	struct vy_outputs *outputs, struct vy_err *err)
{
	struct recorder *r = b->impl;
	cr_assert_lt(r->n_calls, MAX_CALLS);
	struct call *c = &r->calls[r->n_calls++];
	c->program = program;
	c->generator = program->entry.len == 1 && program->entry.items[0]->kind == VY_NODE_REGION
			       ? program->entry.items[0]->name
			       : NULL;
	c->inner_len = inner_len(program);
	c->tag = segment_tag(program);
	c->n_inputs = n_inputs;
	vy_outputs_init(&c->inputs);
	for (size_t i = 0; i < n_inputs; i++) {
		if (i < N_IN) {
			c->input_data[i] = inputs[i].data;
		}
		vy_outputs_push_copy(&c->inputs, inputs[i].data, inputs[i].len);
	}
	if (c->tag == r->fail_tag) {
		return vy_err_set(err, VY_E_DISPATCH_FAILED, "entry[0]", "retry the request",
			"recorder failed");
	}
	cr_assert_eq(n_inputs, N_IN);
	const uint8_t out[] = {'w', c->tag};
	const uint8_t keep[] = {'k', c->tag};
	const uint8_t res[] = {'r', c->tag};
	push_with(outputs, inputs[IN_ACC], c->tag);
	vy_outputs_push_copy(outputs, out, sizeof(out));
	vy_outputs_push_copy(outputs, keep, sizeof(keep));
	vy_outputs_push_copy(outputs, res, sizeof(res));
	if (!r->short_output) {
		push_with(outputs, inputs[IN_ACC2], (uint8_t)(c->tag + 100));
	}
	return 0;
}

static bool recorder_supports(struct vy_backend *b, enum vy_capability cap)
{
	struct recorder *r = b->impl;
	return cap == VY_CAP_GRID_SYNC && r->grid_sync;
}

static const struct vy_backend_ops recorder_ops = {
	.dispatch = recorder_dispatch,
	.supports = recorder_supports,
};

static struct recorder rec;

static struct vy_backend *recorder_backend(void)
{
	memset(&rec, 0, sizeof(rec));
	rec.base = (struct vy_backend){&recorder_ops, "recorder", &rec};
	rec.fail_tag = -1;
	return &rec.base;
}

static void recorder_finish(void)
{
	for (int i = 0; i < rec.n_calls; i++) {
		vy_outputs_finish(&rec.calls[i].inputs);
	}
}

/*
 * Buffers declared out of binding order. In binding order: a (read_only: IN_A), acc
 * (read_write: IN_ACC, OUT_ACC), out (write_only live_out: OUT_OUT), keep (read_only live_out:
 * IN_KEEP, OUT_KEEP), scratch (workgroup: neither), res (read_write marked output: OUT_RES), u
 * (uniform: IN_U), acc2 (read_write live_out: IN_ACC2, OUT_ACC2). Only acc and acc2 are carried
 * from one segment to the next.
 */
static struct vy_program *driver_program(void)
{
	struct vy_program *p = vy_program_create("driver", 4, 1, 1);
	vy_program_add_buffer(p, "out", 2, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, 0)->live_out = true;
	vy_program_add_buffer(p, "u", 5, VY_ACCESS_UNIFORM, VY_TYPE_U32, 1);
	vy_program_add_buffer(p, "acc2", 6, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 0)->live_out = true;
	vy_program_add_buffer(p, "acc", 1, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 0);
	vy_program_add_buffer(p, "scratch", 3, VY_ACCESS_WORKGROUP, VY_TYPE_U32, 16);
	vy_program_add_buffer(p, "keep", 3, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 0)->live_out = true;
	vy_program_add_buffer(p, "res", 4, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 4)->output = true;
	vy_program_add_buffer(p, "a", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 1);
	return p;
}

static struct vy_node *tag_store(struct vy_program *p, uint32_t tag)
{
	return vy_ir_store(p, "acc", vy_ir_u32(p, 0), vy_ir_u32(p, tag));
}

static const uint8_t in_a[] = {1, 2, 3, 4};
static const uint8_t in_acc[] = {'A'};
static const uint8_t in_u[] = {9};
static const uint8_t in_acc2[] = {'B'};
static const uint8_t in_keep[] = {7, 7};
static const struct vy_bytes driver_inputs[N_IN] = {
	[IN_A] = {in_a, sizeof(in_a)},
	[IN_ACC] = {in_acc, sizeof(in_acc)},
	[IN_KEEP] = {in_keep, sizeof(in_keep)},
	[IN_U] = {in_u, sizeof(in_u)},
	[IN_ACC2] = {in_acc2, sizeof(in_acc2)},
};

static void assert_bytes(
	const struct vy_output *o, const uint8_t *want, size_t len, const char *what)
{
	cr_assert_eq(o->len, len, "%s: length %zu, want %zu", what, o->len, len);
	cr_assert_arr_eq(o->data, want, len, "%s", what);
}

/* The caller's uncarried inputs reach every segment as the caller's own bytes, never copied. */
static void assert_borrowed_inputs(const struct call *c)
{
	cr_assert_eq(c->n_inputs, N_IN);
	cr_assert_eq(c->input_data[IN_A], in_a);
	cr_assert_eq(c->input_data[IN_KEEP], in_keep);
	cr_assert_eq(c->input_data[IN_U], in_u);
	assert_bytes(&c->inputs.items[IN_A], in_a, sizeof(in_a), "a");
	assert_bytes(&c->inputs.items[IN_KEEP], in_keep, sizeof(in_keep), "keep");
	assert_bytes(&c->inputs.items[IN_U], in_u, sizeof(in_u), "u");
}

Test(grid_sync, driver_dispatches_segments_in_order_threading_read_write_buffers)
{
	struct vy_backend *b = recorder_backend();
	struct vy_program *p = driver_program();
	set_wrapped_entry(
		p, vy_ir_seq(p, tag_store(p, 0), vy_ir_barrier(p, VY_ORDER_SEQ_CST), grid_sync(p),
			   tag_store(p, 1), grid_sync(p), tag_store(p, 2), vy_ir_return(p), NULL));
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	vy_outputs_push_copy(&outs, "stale", 5);

	cr_assert_eq(vy_grid_sync_dispatch(b, p, driver_inputs, N_IN, NULL, &outs, NULL), 0);
	cr_assert_eq(rec.n_calls, 3);

	const uint32_t want_inner[] = {2, 1, 2};
	for (int k = 0; k < 3; k++) {
		const struct call *c = &rec.calls[k];
		cr_assert_neq(c->program, p, "segment %d is a segment, not the source", k);
		cr_assert_str_eq(c->generator, "main");
		cr_assert_eq(c->inner_len, want_inner[k], "segment %d", k);
		cr_assert_eq(c->tag, k, "segments run in order");
		assert_borrowed_inputs(c);
	}
	/* The first segment gets the caller's inputs as they are. */
	cr_assert_eq(rec.calls[0].input_data[IN_ACC], in_acc);
	cr_assert_eq(rec.calls[0].input_data[IN_ACC2], in_acc2);
	/* Each later one gets the read_write buffers as the segment before left them. */
	const uint8_t acc1[] = {'A', 0};
	const uint8_t acc2_1[] = {'B', 100};
	assert_bytes(&rec.calls[1].inputs.items[IN_ACC], acc1, sizeof(acc1), "acc into segment 1");
	assert_bytes(
		&rec.calls[1].inputs.items[IN_ACC2], acc2_1, sizeof(acc2_1), "acc2 into segment 1");
	const uint8_t acc2[] = {'A', 0, 1};
	const uint8_t acc2_2[] = {'B', 100, 101};
	assert_bytes(&rec.calls[2].inputs.items[IN_ACC], acc2, sizeof(acc2), "acc into segment 2");
	assert_bytes(
		&rec.calls[2].inputs.items[IN_ACC2], acc2_2, sizeof(acc2_2), "acc2 into segment 2");

	/* The final outputs are the last segment's. */
	cr_assert_eq(outs.len, N_OUT);
	const uint8_t fin_acc[] = {'A', 0, 1, 2};
	const uint8_t fin_out[] = {'w', 2};
	const uint8_t fin_keep[] = {'k', 2};
	const uint8_t fin_res[] = {'r', 2};
	const uint8_t fin_acc2[] = {'B', 100, 101, 102};
	assert_bytes(&outs.items[OUT_ACC], fin_acc, sizeof(fin_acc), "acc");
	assert_bytes(&outs.items[OUT_OUT], fin_out, sizeof(fin_out), "out");
	assert_bytes(&outs.items[OUT_KEEP], fin_keep, sizeof(fin_keep), "keep");
	assert_bytes(&outs.items[OUT_RES], fin_res, sizeof(fin_res), "res");
	assert_bytes(&outs.items[OUT_ACC2], fin_acc2, sizeof(fin_acc2), "acc2");
	cr_assert_eq(in_acc[0], 'A', "the caller's inputs are never written");

	vy_outputs_finish(&outs);
	recorder_finish();
	vy_program_destroy(p);
}

Test(grid_sync, driver_dispatches_empty_segments_of_unwrapped_programs)
{
	struct vy_backend *b = recorder_backend();
	struct vy_program *p = driver_program();
	vy_program_set_entry(p, vy_ir_seq(p, grid_sync(p), grid_sync(p), tag_store(p, 5), NULL));
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	cr_assert_eq(vy_grid_sync_dispatch(b, p, driver_inputs, N_IN, NULL, &outs, NULL), 0);
	cr_assert_eq(rec.n_calls, 3);
	const uint8_t tags[] = {NO_TAG, NO_TAG, 5};
	for (int k = 0; k < 3; k++) {
		cr_assert_null(
			rec.calls[k].generator, "no region is added to an unwrapped program");
		cr_assert_eq(rec.calls[k].inner_len, k == 2 ? 1u : 0u);
		cr_assert_eq(rec.calls[k].tag, tags[k]);
		assert_borrowed_inputs(&rec.calls[k]);
	}
	const uint8_t into2[] = {'A', NO_TAG, NO_TAG};
	assert_bytes(
		&rec.calls[2].inputs.items[IN_ACC], into2, sizeof(into2), "acc into segment 2");
	const uint8_t fin_acc[] = {'A', NO_TAG, NO_TAG, 5};
	assert_bytes(&outs.items[OUT_ACC], fin_acc, sizeof(fin_acc), "acc");
	vy_outputs_finish(&outs);
	recorder_finish();
	vy_program_destroy(p);
}

Test(grid_sync, driver_dispatches_a_program_without_grid_sync_once)
{
	struct vy_backend *b = recorder_backend();
	struct vy_program *p = driver_program();
	set_wrapped_entry(p, vy_ir_seq(p, tag_store(p, 3), NULL));
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	cr_assert_eq(vy_grid_sync_dispatch(b, p, driver_inputs, N_IN, NULL, &outs, NULL), 0);
	cr_assert_eq(rec.n_calls, 1);
	cr_assert_eq(rec.calls[0].program, p, "the source program itself");
	cr_assert_eq(rec.calls[0].input_data[IN_ACC], in_acc);
	cr_assert_eq(outs.len, N_OUT);
	vy_outputs_finish(&outs);
	recorder_finish();
	vy_program_destroy(p);
}

Test(grid_sync, driver_leaves_grid_sync_to_a_backend_with_a_native_grid_barrier)
{
	struct vy_backend *b = recorder_backend();
	rec.grid_sync = true;
	struct vy_program *p = driver_program();
	set_wrapped_entry(p, vy_ir_seq(p, tag_store(p, 0), grid_sync(p), tag_store(p, 1), NULL));
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	cr_assert_eq(vy_grid_sync_dispatch(b, p, driver_inputs, N_IN, NULL, &outs, NULL), 0);
	cr_assert_eq(rec.n_calls, 1);
	cr_assert_eq(rec.calls[0].program, p);
	cr_assert_eq(rec.calls[0].inner_len, 3, "the barrier stays in the program");
	vy_outputs_finish(&outs);
	recorder_finish();
	vy_program_destroy(p);
}

Test(grid_sync, driver_prefixes_a_segment_error_with_its_index)
{
	for (int fail_at = 0; fail_at < 3; fail_at++) {
		struct vy_backend *b = recorder_backend();
		rec.fail_tag = fail_at;
		struct vy_program *p = driver_program();
		set_wrapped_entry(p, vy_ir_seq(p, tag_store(p, 0), grid_sync(p), tag_store(p, 1),
					     grid_sync(p), tag_store(p, 2), NULL));
		struct vy_outputs outs;
		vy_outputs_init(&outs);
		vy_outputs_push_copy(&outs, "stale", 5);
		struct vy_err err = {0};
		cr_assert_eq(vy_grid_sync_dispatch(b, p, driver_inputs, N_IN, NULL, &outs, &err),
			VY_E_DISPATCH_FAILED);
		char want[64];
		snprintf(want, sizeof(want), "grid_sync segment %d: recorder failed", fail_at);
		cr_assert_str_eq(err.message, want);
		cr_assert_eq(err.code, VY_E_DISPATCH_FAILED);
		cr_assert_str_eq(err.fix, "retry the request", "the backend's fix is kept");
		cr_assert_str_eq(err.at, "entry[0]", "the backend's location is kept");
		cr_assert_eq(rec.n_calls, fail_at + 1, "no segment runs after a failed one");
		cr_assert_eq(outs.len, 0, "a failed dispatch leaves no outputs");
		cr_assert_eq(vy_grid_sync_dispatch(b, p, driver_inputs, N_IN, NULL, &outs, NULL),
			VY_E_DISPATCH_FAILED, "the code comes back without a struct vy_err too");
		cr_assert_eq(rec.n_calls, 2 * (fail_at + 1));
		vy_outputs_finish(&outs);
		recorder_finish();
		vy_program_destroy(p);
	}
}

Test(grid_sync, driver_reports_a_backend_that_returns_too_few_outputs)
{
	struct vy_backend *b = recorder_backend();
	rec.short_output = true;
	struct vy_program *p = driver_program();
	set_wrapped_entry(p, vy_ir_seq(p, tag_store(p, 0), grid_sync(p), tag_store(p, 1), NULL));
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	struct vy_err err = {0};
	cr_assert_eq(
		vy_grid_sync_dispatch(b, p, driver_inputs, N_IN, NULL, &outs, &err), VY_E_INTERNAL);
	cr_assert_eq(rec.n_calls, 1);
	cr_assert_not_null(strstr(err.message, "grid_sync segment 0: "), "%s", err.message);
	cr_assert_not_null(strstr(err.message, "recorder"), "%s", err.message);
	cr_assert_eq(outs.len, 0);
	vy_outputs_finish(&outs);
	recorder_finish();
	vy_program_destroy(p);
}

Test(grid_sync, segment_errors_are_located_in_the_whole_program)
{
	for (int wrapped = 0; wrapped < 2; wrapped++) {
		struct vy_program *p = vy_program_create(NULL, 1, 1, 1);
		vy_program_add_buffer(p, "buf", 0, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 4);
		struct vy_block top = vy_ir_seq(p, vy_ir_return(p), grid_sync(p), vy_ir_return(p),
			vy_ir_return(p), grid_sync(p), vy_ir_return(p), NULL);
		struct vy_grid_sync_split split;
		split_entry(p, top, wrapped, &split);
		cr_assert_eq(split.len, 3);
		struct vy_err err;
		vy_err_set(&err, VY_E_TRAP,
			wrapped ? "entry[0].region.body[1].store" : "entry[1].store", "fix it",
			"trap int_div_zero");
		vy_grid_sync_segment_error(&split, 1, &err);
		cr_assert_str_eq(
			err.at, wrapped ? "entry[0].region.body[3].store" : "entry[3].store");
		cr_assert_str_eq(err.message, "grid_sync segment 1: trap int_div_zero");
		cr_assert_eq(err.code, VY_E_TRAP);
		vy_err_set(&err, VY_E_TRAP, wrapped ? "entry[0].region.body[0]" : "entry[0]",
			"fix it", "late");
		vy_grid_sync_segment_error(&split, 2, &err);
		cr_assert_str_eq(err.at, wrapped ? "entry[0].region.body[5]" : "entry[5]");
		vy_grid_sync_split_finish(&split);
		vy_program_destroy(p);
	}
}
