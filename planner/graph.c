/*
 * Graph plans (graph.h): slots found from the binds, the checks of each bind against its slot,
 * the hazards between steps, and the capacities a recorder needs.
 */
#include "graph.h"

#include "err.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {"input", "output", "temp", "resident"};

static bool role_reads(enum vy_binding_role r)
{
	return r == VY_ROLE_INPUT || r == VY_ROLE_INPUT_OUTPUT || r == VY_ROLE_UNIFORM;
}

static bool role_writes(enum vy_binding_role r)
{
	return r == VY_ROLE_OUTPUT || r == VY_ROLE_INPUT_OUTPUT;
}

static int no_memory(struct vy_err *err)
{
	return vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL, "free host memory and retry",
		"no memory to plan the graph");
}

/* The slot a bind names, or n when there is none yet. */
static uint32_t slot_find(const struct vy_graph_plan *g, const struct vy_graph_bind *b)
{
	for (uint32_t s = 0; s < g->n_slots; s++) {
		const struct vy_graph_slot *x = &g->slots[s];
		if (x->kind != b->kind) {
			continue;
		}
		bool same = b->kind == VY_GRAPH_TEMP       ? strcmp(x->temp, b->temp) == 0
			    : b->kind == VY_GRAPH_RESIDENT ? x->handle == b->handle
							   : x->index == b->index;
		if (same) {
			return s;
		}
	}
	return g->n_slots;
}

/* Describe a slot for messages: "input 2", "temp \"t\"", "resident 0x1f". */
static void slot_text(const struct vy_graph_slot *x, char *buf, size_t size)
{
	if (x->kind == VY_GRAPH_TEMP) {
		snprintf(buf, size, "temp \"%s\"", x->temp);
	} else if (x->kind == VY_GRAPH_RESIDENT) {
		snprintf(buf, size, "resident buffer %#" PRIx64, x->handle);
	} else {
		snprintf(buf, size, "%s %" PRIu32, kind_names[x->kind], x->index);
	}
}

/* Bind program binding `b` of step `i` to its slot, checking it against what is already bound. */
static int bind_slot(struct vy_graph_plan *g, uint32_t i, const struct vy_graph_bind *gb,
	const struct vy_binding *b, const struct vy_program *p, uint32_t *slot, struct vy_err *err)
{
	char at[96];
	snprintf(at, sizeof(at), "steps[%" PRIu32 "].bind.%s", i, b->name);
	enum vy_type type = p->buffers[b->buffer_index].type;
	uint32_t s = slot_find(g, gb);
	if (s == g->n_slots) {
		struct vy_graph_slot *x = &g->slots[g->n_slots++];
		*x = (struct vy_graph_slot){.kind = gb->kind,
			.index = gb->index,
			.handle = gb->handle,
			.type = type,
			.element_size = b->element_size};
		if (gb->kind == VY_GRAPH_TEMP) {
			x->temp = strdup(gb->temp);
			if (!x->temp) {
				return no_memory(err);
			}
		}
		if (gb->kind == VY_GRAPH_RESIDENT) {
			x->has_len = true;
			x->byte_len = gb->resident_len;
		}
	}
	struct vy_graph_slot *x = &g->slots[s];
	char what[64];
	slot_text(x, what, sizeof(what));
	if (x->kind != VY_GRAPH_RESIDENT && x->type != type) {
		return vy_err_set(err, VY_E_BAD_REQUEST, at,
			"bind buffers of one element type to one slot",
			"buffer %s holds %s; %s is already bound to buffers of %s", b->name,
			vy_type_name(type), what, vy_type_name(x->type));
	}
	if (b->has_static_len && x->kind == VY_GRAPH_RESIDENT && x->byte_len < b->static_byte_len) {
		return vy_err_set(err, VY_E_BAD_REQUEST, at,
			"allocate the resident buffer at least as large as the buffer bound to it",
			"buffer %s needs %zu bytes; %s holds %zu", b->name, b->static_byte_len,
			what, x->byte_len);
	}
	if (b->has_static_len && x->kind != VY_GRAPH_RESIDENT) {
		if (x->has_len && x->byte_len != b->static_byte_len) {
			return vy_err_set(err, VY_E_BAD_REQUEST, at,
				"declare one count for every buffer bound to one slot",
				"buffer %s holds %zu bytes; %s is already bound to buffers of %zu "
				"bytes",
				b->name, b->static_byte_len, what, x->byte_len);
		}
		x->has_len = true;
		x->byte_len = b->static_byte_len;
	}
	if (x->kind == VY_GRAPH_INPUT && b->role == VY_ROLE_OUTPUT) {
		return vy_err_set(err, VY_E_BAD_REQUEST, at,
			"bind a write_only buffer to an output, a temp or a resident buffer",
			"buffer %s is write_only, so it would never read input %" PRIu32, b->name,
			x->index);
	}
	x->read = x->read || role_reads(b->role);
	x->written = x->written || role_writes(b->role);
	*slot = s;
	return 0;
}

/* The bind of binding `b` among the step's binds: exactly one, naming a buffer it has. */
static int find_bind(const struct vy_graph_step_desc *st, uint32_t i, const struct vy_binding *b,
	const struct vy_graph_bind **out, struct vy_err *err)
{
	*out = NULL;
	for (uint32_t k = 0; k < st->n_binds; k++) {
		if (strcmp(st->binds[k].buffer, b->name) != 0) {
			continue;
		}
		if (*out) {
			char at[96];
			snprintf(at, sizeof(at), "steps[%" PRIu32 "].bind.%s", i, b->name);
			return vy_err_set(err, VY_E_BAD_REQUEST, at, "bind each buffer once",
				"buffer %s is bound twice", b->name);
		}
		*out = &st->binds[k];
	}
	if (!*out) {
		char at[96];
		snprintf(at, sizeof(at), "steps[%" PRIu32 "].bind", i);
		return vy_err_set(err, VY_E_BAD_REQUEST, at,
			"bind every buffer of the program to an input, an output, a temp or a "
			"resident buffer",
			"buffer %s of step %" PRIu32 " is not bound", b->name, i);
	}
	return 0;
}

/* Every bind names a non-workgroup buffer of the step's program. */
static int check_bind_names(const struct vy_graph_step_desc *st, uint32_t i, struct vy_err *err)
{
	for (uint32_t k = 0; k < st->n_binds; k++) {
		const struct vy_graph_bind *gb = &st->binds[k];
		const struct vy_binding *hit = NULL;
		for (uint32_t n = 0; n < st->plan->n_bindings && !hit; n++) {
			if (strcmp(st->plan->bindings[n].name, gb->buffer) == 0) {
				hit = &st->plan->bindings[n];
			}
		}
		char at[96];
		snprintf(at, sizeof(at), "steps[%" PRIu32 "].bind.%s", i, gb->buffer);
		if (!hit) {
			return vy_err_set(err, VY_E_BAD_REQUEST, at,
				"bind only buffers the step's program declares",
				"step %" PRIu32 "'s program has no buffer %s", i, gb->buffer);
		}
		if (hit->role == VY_ROLE_SHARED) {
			return vy_err_set(err, VY_E_BAD_REQUEST, at,
				"leave workgroup buffers unbound: each workgroup has its own",
				"buffer %s is a workgroup buffer", gb->buffer);
		}
		if (gb->kind == VY_GRAPH_TEMP && (!gb->temp || !gb->temp[0])) {
			return vy_err_set(err, VY_E_BAD_REQUEST, at, "name the temp",
				"buffer %s is bound to a temp without a name", gb->buffer);
		}
	}
	return 0;
}

/* Inputs and outputs are numbered 0..n-1, each used as it must be; every slot has a length. */
static int check_slots(struct vy_graph_plan *g, struct vy_err *err)
{
	uint32_t n_in = 0;
	uint32_t n_out = 0;
	for (uint32_t s = 0; s < g->n_slots; s++) {
		const struct vy_graph_slot *x = &g->slots[s];
		if (x->kind == VY_GRAPH_INPUT && x->index + 1 > n_in) {
			n_in = x->index + 1;
		}
		if (x->kind == VY_GRAPH_OUTPUT && x->index + 1 > n_out) {
			n_out = x->index + 1;
		}
	}
	g->input_slot = malloc((n_in ? n_in : 1) * sizeof(uint32_t));
	g->output_slot = malloc((n_out ? n_out : 1) * sizeof(uint32_t));
	if (!g->input_slot || !g->output_slot) {
		return no_memory(err);
	}
	for (uint32_t k = 0; k < n_in; k++) {
		g->input_slot[k] = VY_GRAPH_NO_SLOT;
	}
	for (uint32_t k = 0; k < n_out; k++) {
		g->output_slot[k] = VY_GRAPH_NO_SLOT;
	}
	g->n_inputs = n_in;
	g->n_outputs = n_out;
	for (uint32_t s = 0; s < g->n_slots; s++) {
		const struct vy_graph_slot *x = &g->slots[s];
		if (x->kind == VY_GRAPH_INPUT) {
			g->input_slot[x->index] = s;
		} else if (x->kind == VY_GRAPH_OUTPUT) {
			g->output_slot[x->index] = s;
		}
	}
	for (uint32_t k = 0; k < n_in; k++) {
		uint32_t s = g->input_slot[k];
		if (s == VY_GRAPH_NO_SLOT || !g->slots[s].read) {
			return vy_err_set(err, VY_E_BAD_REQUEST, "steps",
				"number the inputs 0, 1, ... and read each in some step",
				"graph input %" PRIu32 " is %s", k,
				s == VY_GRAPH_NO_SLOT ? "bound to no buffer" : "never read");
		}
	}
	for (uint32_t k = 0; k < n_out; k++) {
		uint32_t s = g->output_slot[k];
		if (s == VY_GRAPH_NO_SLOT || !g->slots[s].written) {
			return vy_err_set(err, VY_E_BAD_REQUEST, "steps",
				"number the outputs 0, 1, ... and write each in some step",
				"graph output %" PRIu32 " is %s", k,
				s == VY_GRAPH_NO_SLOT ? "bound to no buffer" : "never written");
		}
	}
	for (uint32_t s = 0; s < g->n_slots; s++) {
		const struct vy_graph_slot *x = &g->slots[s];
		char what[64];
		slot_text(x, what, sizeof(what));
		if ((x->kind == VY_GRAPH_TEMP || x->kind == VY_GRAPH_OUTPUT) && !x->has_len) {
			return vy_err_set(err, VY_E_BAD_REQUEST, "steps",
				"declare a count on one buffer bound to it",
				"%s has no length: every buffer bound to it has count 0", what);
		}
		if (x->kind == VY_GRAPH_TEMP && !x->written) {
			return vy_err_set(err, VY_E_BAD_REQUEST, "steps",
				"write the temp in some step, or bind an input instead",
				"%s is never written, so it would only ever hold zeros", what);
		}
	}
	return 0;
}

/*
 * Barriers: for each slot, whether a step since the last barrier wrote it and whether one read
 * it; a step that reads a written slot, or writes a touched one, starts after a barrier.
 */
static int place_barriers(
	struct vy_graph_plan *g, const struct vy_graph_step_desc *steps, struct vy_err *err)
{
	bool *wrote = calloc(g->n_slots, 1);
	bool *read = calloc(g->n_slots, 1);
	if (!wrote || !read) {
		free(wrote);
		free(read);
		return no_memory(err);
	}
	for (uint32_t i = 0; i < g->n_steps; i++) {
		struct vy_graph_step *st = &g->steps[i];
		const struct vy_binding_plan *plan = steps[i].plan;
		bool hazard = false;
		for (uint32_t k = 0; k < st->n_bindings; k++) {
			uint32_t s = st->slot_of[k];
			if (s == VY_GRAPH_NO_SLOT) {
				continue;
			}
			enum vy_binding_role r = plan->bindings[k].role;
			hazard = hazard || (role_reads(r) && wrote[s]) ||
				 (role_writes(r) && (wrote[s] || read[s]));
		}
		if (hazard) {
			st->barrier_before = true;
			g->totals.barriers++;
			memset(wrote, 0, g->n_slots);
			memset(read, 0, g->n_slots);
		}
		for (uint32_t k = 0; k < st->n_bindings; k++) {
			uint32_t s = st->slot_of[k];
			if (s == VY_GRAPH_NO_SLOT) {
				continue;
			}
			enum vy_binding_role r = plan->bindings[k].role;
			wrote[s] = wrote[s] || role_writes(r);
			read[s] = read[s] || role_reads(r);
		}
	}
	free(wrote);
	free(read);
	return 0;
}

static int add_totals(struct vy_graph_plan *g, struct vy_err *err)
{
	struct vy_graph_totals *t = &g->totals;
	for (uint32_t i = 0; i < g->n_steps; i++) {
		int rc = vy_graph_capture_capacity_add(t->kernel_argument_capacity,
			g->steps[i].capture.kernel_argument_capacity, "graph kernel argument table",
			&t->kernel_argument_capacity, err);
		if (rc) {
			return rc;
		}
	}
	t->input_upload_capacity = g->n_inputs;
	t->output_readback_capacity = g->n_outputs;
	for (uint32_t s = 0; s < g->n_slots; s++) {
		const struct vy_graph_slot *x = &g->slots[s];
		int rc = 0;
		if (x->kind == VY_GRAPH_TEMP) {
			rc = vy_graph_capture_capacity_add(t->temp_bytes, x->byte_len,
				"graph temp bytes", &t->temp_bytes, err);
		} else if (x->kind == VY_GRAPH_OUTPUT) {
			rc = vy_graph_capture_capacity_add(t->output_bytes, x->byte_len,
				"graph output bytes", &t->output_bytes, err);
		}
		if (rc) {
			return rc;
		}
	}
	return 0;
}

static int plan_step(struct vy_graph_plan *g, const struct vy_graph_step_desc *st, uint32_t i,
	struct vy_err *err)
{
	struct vy_graph_step *out = &g->steps[i];
	int rc = check_bind_names(st, i, err);
	if (rc) {
		return rc;
	}
	out->n_bindings = st->plan->n_bindings;
	out->slot_of = malloc((out->n_bindings ? out->n_bindings : 1) * sizeof(uint32_t));
	if (!out->slot_of) {
		return no_memory(err);
	}
	for (uint32_t k = 0; k < st->plan->n_bindings; k++) {
		const struct vy_binding *b = &st->plan->bindings[k];
		out->slot_of[k] = VY_GRAPH_NO_SLOT;
		if (b->role == VY_ROLE_SHARED) {
			continue;
		}
		const struct vy_graph_bind *gb;
		rc = find_bind(st, i, b, &gb, err);
		if (rc == 0) {
			rc = bind_slot(g, i, gb, b, st->program, &out->slot_of[k], err);
		}
		if (rc) {
			return rc;
		}
	}
	return vy_graph_capture_plan_build(st->plan, &out->capture, err);
}

int vy_graph_plan_build(const struct vy_graph_step_desc *steps, uint32_t n_steps,
	uint32_t max_steps, struct vy_graph_plan **out, struct vy_err *err)
{
	*out = NULL;
	if (n_steps == 0 || n_steps > max_steps) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "steps",
			n_steps ? "split the work into graphs of at most that many steps"
				: "give the graph at least one step",
			"the graph has %" PRIu32 " steps; a graph holds 1 to %" PRIu32, n_steps,
			max_steps);
	}
	size_t max_slots = 0;
	for (uint32_t i = 0; i < n_steps; i++) {
		max_slots += steps[i].plan->n_bindings;
	}
	struct vy_graph_plan *g = calloc(1, sizeof(*g));
	if (g) {
		g->n_steps = n_steps;
		g->steps = calloc(n_steps, sizeof(*g->steps));
		g->slots = calloc(max_slots ? max_slots : 1, sizeof(*g->slots));
	}
	if (!g || !g->steps || !g->slots) {
		vy_graph_plan_destroy(g);
		return no_memory(err);
	}
	int rc = 0;
	for (uint32_t i = 0; i < n_steps && rc == 0; i++) {
		rc = plan_step(g, &steps[i], i, err);
	}
	if (rc == 0) {
		rc = check_slots(g, err);
	}
	if (rc == 0) {
		rc = place_barriers(g, steps, err);
	}
	if (rc == 0) {
		rc = add_totals(g, err);
	}
	if (rc) {
		vy_graph_plan_destroy(g);
		return rc;
	}
	*out = g;
	return 0;
}

int vy_graph_plan_run_lengths(const struct vy_graph_plan *plan, const struct vy_bytes *inputs,
	uint32_t n_inputs, size_t *lens, struct vy_err *err)
{
	if (n_inputs != plan->n_inputs) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "inputs", "send one input per graph input",
			"the graph takes %" PRIu32 " inputs; the request gave %" PRIu32,
			plan->n_inputs, n_inputs);
	}
	for (uint32_t s = 0; s < plan->n_slots; s++) {
		lens[s] = plan->slots[s].byte_len;
	}
	for (uint32_t k = 0; k < n_inputs; k++) {
		uint32_t s = plan->input_slot[k];
		const struct vy_graph_slot *x = &plan->slots[s];
		char at[32];
		snprintf(at, sizeof(at), "inputs[%" PRIu32 "]", k);
		if (inputs[k].len % x->element_size) {
			return vy_err_set(err, VY_E_BAD_REQUEST, at, "send whole 4-byte elements",
				"input %" PRIu32
				" holds %zu bytes, not a whole number of %s elements",
				k, inputs[k].len, vy_type_name(x->type));
		}
		if (x->has_len && inputs[k].len != x->byte_len) {
			return vy_err_set(err, VY_E_BAD_REQUEST, at,
				"send exactly as many bytes as the buffers bound to it declare",
				"input %" PRIu32
				" holds %zu bytes; the buffers bound to it hold %zu",
				k, inputs[k].len, x->byte_len);
		}
		if (inputs[k].len / x->element_size > UINT32_MAX) {
			return vy_err_set(err, VY_E_BAD_REQUEST, at,
				"send at most 2^32 - 1 elements per input",
				"input %" PRIu32
				" holds %zu elements; a u32 index reaches 2^32 - 1",
				k, inputs[k].len / x->element_size);
		}
		lens[s] = inputs[k].len;
	}
	return 0;
}

void vy_graph_plan_destroy(struct vy_graph_plan *plan)
{
	if (!plan) {
		return;
	}
	for (uint32_t i = 0; plan->steps && i < plan->n_steps; i++) {
		free(plan->steps[i].slot_of);
	}
	for (uint32_t s = 0; plan->slots && s < plan->n_slots; s++) {
		free(plan->slots[s].temp);
	}
	free(plan->steps);
	free(plan->slots);
	free(plan->input_slot);
	free(plan->output_slot);
	free(plan);
}
