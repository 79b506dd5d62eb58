/*
 * Graph plans: a chain of dispatches checked once, so that it can be recorded once and replayed
 * with one request (docs/graphs.md). A graph has steps; each step is a program with its binding
 * plan, and binds every non-workgroup buffer of that program to one slot of the graph:
 *   input k      bytes the caller gives at each run, in order (graph input k)
 *   output j     read back and returned at the end of each run, in order (graph output j)
 *   temp NAME    device memory of the graph that lives between its steps
 *   resident H   a resident buffer of the caller, read and written in place
 * Outputs and temps hold zeros when a run begins; inputs hold the run's bytes. A step's buffer
 * reads its slot when its role reads (input, input_output, uniform) and writes it when its role
 * writes (output, input_output), so the plan knows, between any two steps, which slots one writes
 * and the other touches: each such hazard (read after write, write after read, write after write)
 * puts a barrier before the later step, and nothing else does.
 *
 * Checks, each error naming its place (`steps[3].bind.x`) with a Fix line: the step count is
 * within the caller's limit; every non-workgroup buffer of every step is bound exactly once and
 * no bind names a buffer the program lacks or a workgroup buffer; the inputs and outputs are
 * numbered 0.. without gaps, each input is read by a step and each output written by one; all the
 * buffers bound to one slot have one element type and, where their declarations fix a length,
 * one length; a temp or an output has a length from some declaration bound to it; a resident
 * buffer is at least as long as every declaration bound to it.
 *
 * The plan also carries, per step, the seed's capture plan (graph_capture.h) and, for the graph,
 * the totals a recorder sizes its tables with, under the same checked accounting.
 *
 * Ownership: a plan is a heap object from vy_graph_plan_build, freed by vy_graph_plan_destroy; it
 * copies the names it keeps and borrows nothing. Thread-safety: a built plan is immutable.
 */
#ifndef VY_PLANNER_GRAPH_H
#define VY_PLANNER_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "binding.h"
#include "graph_capture.h"
#include "ir.h"

struct vy_err;

enum vy_graph_slot_kind {
	VY_GRAPH_INPUT,
	VY_GRAPH_OUTPUT,
	VY_GRAPH_TEMP,
	VY_GRAPH_RESIDENT,
};

/* One bind of a step: the program buffer `buffer` (borrowed) to a slot. */
struct vy_graph_bind {
	const char *buffer;
	enum vy_graph_slot_kind kind;
	uint32_t index;        /* input k or output j */
	const char *temp;      /* temp name (borrowed) */
	uint64_t handle;       /* resident handle */
	uint64_t resident_len; /* bytes of that resident buffer (the caller resolved the handle) */
};

/* One step as the caller describes it; everything borrowed for the call. */
struct vy_graph_step_desc {
	const struct vy_program *program;
	const struct vy_binding_plan *plan; /* the program's plan without inputs */
	const struct vy_graph_bind *binds;
	uint32_t n_binds;
};

/* Marks a binding that has no slot (a workgroup buffer). */
#define VY_GRAPH_NO_SLOT UINT32_MAX

struct vy_graph_slot {
	enum vy_graph_slot_kind kind;
	uint32_t index;  /* input k or output j */
	char *temp;      /* owned; temps only */
	uint64_t handle; /* residents only */
	enum vy_type type;
	bool has_len;    /* a declaration bound to it fixes its length */
	size_t byte_len; /* that length, when has_len; for a resident, the buffer's length */
	uint32_t element_size;
	bool read;    /* some step reads it */
	bool written; /* some step writes it */
};

struct vy_graph_step {
	uint32_t n_bindings;
	uint32_t *slot_of;   /* per binding of the step's plan: its slot, or VY_GRAPH_NO_SLOT */
	bool barrier_before; /* a hazard with an earlier step since the previous barrier */
	struct vy_graph_capture_plan capture;
};

/* What a recorder of the whole graph sizes: the sums of the steps' capture plans, and more. */
struct vy_graph_totals {
	size_t kernel_argument_capacity; /* sum over the steps */
	size_t output_readback_capacity; /* one per graph output */
	size_t input_upload_capacity;    /* one per graph input */
	size_t temp_bytes;               /* device bytes of all the temps */
	size_t output_bytes;             /* bytes read back per run */
	size_t barriers;
};

struct vy_graph_plan {
	uint32_t n_steps;
	struct vy_graph_step *steps;
	uint32_t n_slots;
	struct vy_graph_slot *slots; /* inputs, outputs, temps and residents, as first bound */
	uint32_t n_inputs;
	uint32_t *input_slot; /* slot of graph input k */
	uint32_t n_outputs;
	uint32_t *output_slot; /* slot of graph output j */
	struct vy_graph_totals totals;
};

/*
 * Check and plan a graph of `n_steps` steps, at most `max_steps`. On success stores a new plan in
 * *out and returns 0; otherwise leaves *out NULL and returns BAD_REQUEST (a bind that does not
 * fit), INVALID_PROGRAM (a capacity overflow) or OUT_OF_MEMORY, filling `err`.
 */
int vy_graph_plan_build(const struct vy_graph_step_desc *steps, uint32_t n_steps,
	uint32_t max_steps, struct vy_graph_plan **out, struct vy_err *err);

/*
 * Check the inputs of one run (n_inputs views in graph input order) and give each slot's length
 * for it in lens[plan->n_slots]: an input's is its bytes, which must be whole elements of its
 * type and equal to every fixed length bound to it; the others are their planned lengths.
 * Returns 0 or BAD_REQUEST naming `inputs[k]`.
 */
int vy_graph_plan_run_lengths(const struct vy_graph_plan *plan, const struct vy_bytes *inputs,
	uint32_t n_inputs, size_t *lens, struct vy_err *err);

/* Free a plan. NULL is accepted. */
void vy_graph_plan_destroy(struct vy_graph_plan *plan);

#endif
