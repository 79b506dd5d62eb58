/*
 * Graph requests (graph_create, graph_run, graph_free, graphs; docs/graphs.md).
 */
#include <stdio.h>
#include <string.h>

#include "codec.h"
#include "internal.h"

static const char *const bind_keys[] = {"input", "output", "temp", "resident"};

static int check_steps(const struct vy_graph_step *steps, size_t n, struct vy_error *err)
{
	if (n == 0 || !steps || n > VY_MAX_GRAPH_STEPS) {
		return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, "steps",
			"give 1 to 4096 steps", "%zu steps", n);
	}
	for (size_t i = 0; i < n; i++) {
		const struct vy_graph_step *st = &steps[i];
		char at[48];
		snprintf(at, sizeof(at), "steps[%zu]", i);
		if (!st->program && !st->program_id) {
			return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, at,
				"give each step its program or the program_id vy_compile returned",
				"step %zu has no program", i);
		}
		if (st->n_binds > VY_IR_MAX_BUFFERS || (st->n_binds && !st->binds)) {
			return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, at,
				"bind each buffer of the step's program once", "%zu binds",
				st->n_binds);
		}
		for (size_t k = 0; k < st->n_binds; k++) {
			const struct vy_graph_bind *b = &st->binds[k];
			if (!b->buffer || (unsigned)b->kind > VY_BIND_RESIDENT ||
				(b->kind == VY_BIND_TEMP && !b->temp)) {
				return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, at,
					"name the buffer, use a VY_BIND_* kind, and name each temp",
					"bind %zu of step %zu is incomplete", k, i);
			}
		}
	}
	return 0;
}

int vy_graph_create(struct vy_client *c, const struct vy_graph_step *steps, size_t n_steps,
	const char *name, struct vy_graph_info *out, struct vy_error *err)
{
	int rc = check_steps(steps, n_steps, err);
	if (rc) {
		return rc;
	}
	struct vy__msg m;
	vy__msg_begin(c, &m, VY_OP_GRAPH_CREATE, name ? 2 : 1);
	if (name) {
		vy_pack_cstr(&m.pk, "name");
		vy_pack_cstr(&m.pk, name);
	}
	vy_pack_cstr(&m.pk, "steps");
	msgpack_pack_array(&m.pk, n_steps);
	for (size_t i = 0; i < n_steps && rc == 0; i++) {
		const struct vy_graph_step *st = &steps[i];
		struct vy_request_config cfg;
		struct vy_spec_setting spec[VY_MAX_SPEC_SETTINGS];
		rc = vy__make_config(st->options, &cfg, spec, err);
		msgpack_pack_map(&m.pk, st->options ? 3 : 2);
		if (st->program) {
			vy_pack_cstr(&m.pk, "program");
			vy_program_pack(st->program, &m.pk);
		} else {
			vy_pack_cstr(&m.pk, "program_id");
			vy_pack_cstr(&m.pk, st->program_id);
		}
		if (st->options) {
			vy_pack_cstr(&m.pk, "config");
			vy_request_config_pack(&m.pk, &cfg);
		}
		vy_pack_cstr(&m.pk, "bind");
		msgpack_pack_map(&m.pk, st->n_binds);
		for (size_t k = 0; k < st->n_binds; k++) {
			const struct vy_graph_bind *b = &st->binds[k];
			vy_pack_cstr(&m.pk, b->buffer);
			msgpack_pack_map(&m.pk, 1);
			vy_pack_cstr(&m.pk, bind_keys[b->kind]);
			if (b->kind == VY_BIND_TEMP) {
				vy_pack_cstr(&m.pk, b->temp);
			} else {
				msgpack_pack_uint64(&m.pk, b->value);
			}
		}
	}
	if (rc) {
		vy__msg_free(&m);
		return rc;
	}
	struct vy_reply *rep = NULL;
	rc = vy__msg_call(c, &m, -1, &rep, err);
	if (rc == 0 && out) {
		const struct vy_value *v = vy_reply_value(rep);
		memset(out, 0, sizeof(*out));
		out->graph = vy_value_get_u64(v, "graph", 0);
		out->steps = (uint32_t)vy_value_get_u64(v, "steps", 0);
		out->inputs = (uint32_t)vy_value_get_u64(v, "inputs", 0);
		out->outputs = (uint32_t)vy_value_get_u64(v, "outputs", 0);
		out->barriers = (uint32_t)vy_value_get_u64(v, "barriers", 0);
	}
	vy_reply_destroy(rep);
	return rc;
}

static int pack_run(struct vy_client *c, struct vy__msg *m, uint64_t graph,
	const struct vy_dispatch_input *inputs, size_t n_inputs,
	const struct vy_dispatch_options *options, struct vy_error *err)
{
	struct vy_request_config cfg;
	struct vy_spec_setting spec[VY_MAX_SPEC_SETTINGS];
	int rc = vy__check_inputs(c, inputs, n_inputs, err);
	if (rc == 0) {
		rc = vy__make_config(options, &cfg, spec, err);
	}
	if (rc) {
		return rc;
	}
	vy__msg_begin(c, m, VY_OP_GRAPH_RUN, options ? 3 : 2);
	vy_pack_cstr(&m->pk, "graph");
	msgpack_pack_uint64(&m->pk, graph);
	vy__pack_inputs(&m->pk, inputs, n_inputs);
	if (options) {
		/* A run takes timeout_ms, label and timing; the steps' own options were fixed at
		 * creation. */
		vy_request_config_init(&cfg);
		cfg.timeout_ms = options->timeout_ms;
		cfg.label = options->label;
		cfg.timing = options->timing;
		vy_pack_cstr(&m->pk, "config");
		vy_request_config_pack(&m->pk, &cfg);
	}
	return 0;
}

int vy_graph_run(struct vy_client *c, uint64_t graph, const struct vy_dispatch_input *inputs,
	size_t n_inputs, const struct vy_dispatch_options *options, struct vy_reply **out,
	struct vy_error *err)
{
	struct vy__msg m;
	if (out) {
		*out = NULL;
	}
	int rc = pack_run(c, &m, graph, inputs, n_inputs, options, err);
	return rc ? rc : vy__msg_call(c, &m, -1, out, err);
}

int vy_graph_run_start(struct vy_client *c, uint64_t graph, const struct vy_dispatch_input *inputs,
	size_t n_inputs, const struct vy_dispatch_options *options, vy_done_fn *done, void *user,
	uint64_t *id, struct vy_error *err)
{
	struct vy__msg m;
	int rc = pack_run(c, &m, graph, inputs, n_inputs, options, err);
	return rc ? rc : vy__msg_start(c, &m, -1, done, user, id, err);
}

int vy_graph_free(struct vy_client *c, uint64_t graph, struct vy_error *err)
{
	struct vy__msg m;
	vy__msg_begin(c, &m, VY_OP_GRAPH_FREE, 1);
	vy_pack_cstr(&m.pk, "graph");
	msgpack_pack_uint64(&m.pk, graph);
	return vy__msg_call(c, &m, -1, NULL, err);
}

int vy_graphs(struct vy_client *c, struct vy_reply **out, struct vy_error *err)
{
	return vy_call(c, "graphs", out, err);
}
