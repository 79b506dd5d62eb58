/*
 * `graph run GRAPH.json`: make a graph from a file of steps, run it once and print its outputs.
 * The file is a JSON object:
 *
 *     {"name": "chain",
 *      "steps": [{"program": "step.json", "bind": {"x": {"input": 0}, "y": {"temp": "t"}}},
 *                {"program": "step.json", "bind": {"x": {"temp": "t"}, "y": {"output": 0}},
 *                 "grid": [4, 1, 1]}]}
 *
 * Each step names a program file (relative to the graph file's folder), which is checked locally
 * as `run` checks it, its binds as graph_create takes them, and optionally its grid and
 * workgroup_size. Inputs are given by graph input index (-i 0=DATA), in the element type of the
 * buffer bound to them; outputs print under "output J" in the type of the buffer that writes
 * them. The graph is freed after the run.
 */
#include <errno.h>
#include <json-c/json.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

enum { OPT_TIMING = 0x300 };

#define MAX_STEPS 256

struct step_file {
	struct ctl_layout lay;
	struct vy_program *program;
	struct vy_graph_bind binds[CTL_LAYOUT_MAX * 2];
	size_t n_binds;
	struct vy_dispatch_options options;
	bool has_options;
};

struct graph_file {
	char name[72];
	size_t n_steps;
	struct step_file *steps;
	struct json_object *root; /* owns the strings the binds borrow */
	/* per graph input and output: the buffer that gives it its type */
	struct ctl_slot inputs[CTL_LAYOUT_MAX];
	bool has_input[CTL_LAYOUT_MAX];
	struct ctl_slot outputs[CTL_LAYOUT_MAX];
	bool has_output[CTL_LAYOUT_MAX];
};

static int bad_file(const char *path, const char *what)
{
	fprintf(stderr,
		"vyrectl graph: %s: %s.\nFix: write the graph as `vyrectl graph --help` shows.\n",
		path, what);
	return CTL_EXIT_INVALID;
}

static const struct ctl_slot *slot_named(const struct ctl_slot *s, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(s[i].name, name) == 0) {
			return &s[i];
		}
	}
	return NULL;
}

static bool read_triple(struct json_object *v, uint32_t out[3])
{
	if (!json_object_is_type(v, json_type_array) || json_object_array_length(v) < 1 ||
		json_object_array_length(v) > 3) {
		return false;
	}
	out[0] = out[1] = out[2] = 1;
	for (size_t k = 0; k < json_object_array_length(v); k++) {
		int64_t x = json_object_get_int64(json_object_array_get_idx(v, k));
		if (x < 1 || x > UINT32_MAX) {
			return false;
		}
		out[k] = (uint32_t)x;
	}
	return true;
}

/* One bind "buffer": {"kind": value}; records the slot types of graph inputs and outputs. */
static int read_bind(struct graph_file *g, struct step_file *st, const char *path,
	const char *buffer, struct json_object *v)
{
	char what[160];
	struct json_object *val = NULL;
	struct vy_graph_bind *b = &st->binds[st->n_binds];
	*b = (struct vy_graph_bind){.buffer = buffer};
	static const char *const kinds[] = {"input", "output", "temp", "resident"};
	int kind = -1;
	if (json_object_is_type(v, json_type_object) && json_object_object_length(v) == 1) {
		for (int k = 0; k < 4 && kind < 0; k++) {
			if (json_object_object_get_ex(v, kinds[k], &val)) {
				kind = k;
			}
		}
	}
	if (kind < 0) {
		snprintf(what, sizeof(what),
			"the bind of %.64s is not one of input, output, temp or resident", buffer);
		return bad_file(path, what);
	}
	b->kind = (enum vy_graph_bind_kind)kind;
	if (b->kind == VY_BIND_TEMP) {
		b->temp = json_object_get_string(val);
	} else {
		int64_t x = json_object_get_int64(val);
		b->value = (uint64_t)x;
		if (x < 0 || (b->kind != VY_BIND_RESIDENT && x >= CTL_LAYOUT_MAX)) {
			snprintf(what, sizeof(what), "buffer %.64s is bound to %s %lld", buffer,
				kinds[kind], (long long)x);
			return bad_file(path, what);
		}
	}
	const struct ctl_slot *in = slot_named(st->lay.inputs, st->lay.n_inputs, buffer);
	const struct ctl_slot *out = slot_named(st->lay.outputs, st->lay.n_outputs, buffer);
	if (b->kind == VY_BIND_INPUT && in && !g->has_input[b->value]) {
		g->inputs[b->value] = *in;
		g->has_input[b->value] = true;
	}
	if (b->kind == VY_BIND_OUTPUT && out && !g->has_output[b->value]) {
		g->outputs[b->value] = *out;
		g->has_output[b->value] = true;
	}
	st->n_binds++;
	return 0;
}

static int read_step(const struct ctl *ctl, struct graph_file *g, struct step_file *st,
	const char *path, const char *dir, struct json_object *o)
{
	struct json_object *prog = NULL;
	struct json_object *bind = NULL;
	if (!json_object_is_type(o, json_type_object) ||
		!json_object_object_get_ex(o, "program", &prog) ||
		!json_object_object_get_ex(o, "bind", &bind) ||
		!json_object_is_type(bind, json_type_object)) {
		return bad_file(path, "a step needs \"program\" (a file) and \"bind\" (an object)");
	}
	json_object_object_foreach(o, key, val)
	{
		if (strcmp(key, "grid") == 0 || strcmp(key, "workgroup_size") == 0) {
			uint32_t *t = key[0] == 'g' ? st->options.grid : st->options.workgroup_size;
			if (!read_triple(val, t)) {
				return bad_file(
					path, "grid and workgroup_size are 1 to 3 numbers >= 1");
			}
			st->has_options = true;
		} else if (strcmp(key, "program") != 0 && strcmp(key, "bind") != 0) {
			return bad_file(
				path, "a step holds only program, bind, grid, workgroup_size");
		}
	}
	char file[4096];
	const char *name = json_object_get_string(prog);
	snprintf(file, sizeof(file), "%s%s%s", name[0] == '/' ? "" : dir, name[0] == '/' ? "" : "/",
		name);
	char *text = NULL;
	size_t len = 0;
	int rc = ctl_layout_load(ctl, file, &st->lay, &text, &len);
	if (rc) {
		return rc;
	}
	struct vy_error err;
	if (vy_program_load_json(text, len, &st->program, &err) != 0) {
		free(text);
		return ctl_report(ctl, "load", &err);
	}
	free(text);
	if (json_object_object_length(bind) > CTL_LAYOUT_MAX * 2) {
		return bad_file(path, "a step binds more buffers than a program has");
	}
	json_object_object_foreach(bind, buffer, v)
	{
		rc = read_bind(g, st, path, buffer, v);
		if (rc) {
			return rc;
		}
	}
	return 0;
}

static int read_graph(const struct ctl *ctl, const char *path, struct graph_file *g)
{
	size_t len = 0;
	char *text = ctl_read_file(path, &len);
	if (!text) {
		fprintf(stderr, "vyrectl graph: cannot read %s: %s.\nFix: check the path.\n", path,
			strerror(errno));
		return CTL_EXIT_FILE;
	}
	g->root = json_tokener_parse(text);
	free(text);
	struct json_object *steps = NULL;
	if (!g->root || !json_object_object_get_ex(g->root, "steps", &steps) ||
		!json_object_is_type(steps, json_type_array) ||
		json_object_array_length(steps) == 0 ||
		json_object_array_length(steps) > MAX_STEPS) {
		return bad_file(path, "it is not a JSON object with 1 to 256 \"steps\"");
	}
	struct json_object *name = NULL;
	if (json_object_object_get_ex(g->root, "name", &name)) {
		snprintf(g->name, sizeof(g->name), "%s", json_object_get_string(name));
	}
	char *copy = ctl_realloc(NULL, strlen(path) + 1);
	memcpy(copy, path, strlen(path) + 1);
	const char *dir = dirname(copy);
	g->n_steps = json_object_array_length(steps);
	g->steps = ctl_realloc(NULL, g->n_steps * sizeof(*g->steps));
	memset(g->steps, 0, g->n_steps * sizeof(*g->steps));
	int rc = 0;
	for (size_t i = 0; i < g->n_steps && rc == 0; i++) {
		rc = read_step(
			ctl, g, &g->steps[i], path, dir, json_object_array_get_idx(steps, i));
	}
	free(copy);
	return rc;
}

static void graph_file_free(struct graph_file *g)
{
	for (size_t i = 0; g->steps && i < g->n_steps; i++) {
		vy_program_free(g->steps[i].program);
	}
	free(g->steps);
	json_object_put(g->root);
}

/* The run's inputs from -i K=DATA, in graph input order. */
static int graph_inputs(const struct ctl *ctl, const struct graph_file *g, char **args,
	size_t n_args, uint8_t **data, size_t *lens, size_t *n_inputs)
{
	size_t n = 0;
	while (n < CTL_LAYOUT_MAX && g->has_input[n]) {
		n++;
	}
	*n_inputs = n;
	bool given[CTL_LAYOUT_MAX] = {0};
	for (size_t a = 0; a < n_args; a++) {
		char *end = NULL;
		unsigned long k = strtoul(args[a], &end, 10);
		if (end == args[a] || *end != '=' || k >= n) {
			return ctl_usage_error(ctl,
				"--input takes K=DATA with K a graph input (0 to %zu), not \"%s\"",
				n ? n - 1 : 0, args[a]);
		}
		if (given[k]) {
			return ctl_usage_error(ctl, "input %lu is given twice", k);
		}
		given[k] = true;
		int rc = ctl_slot_input(ctl, &g->inputs[k], end + 1, &data[k], &lens[k]);
		if (rc) {
			return rc;
		}
	}
	for (size_t k = 0; k < n; k++) {
		if (!given[k]) {
			return ctl_usage_error(ctl,
				"no --input for graph input %zu (%s, bound to %s)", k,
				g->inputs[k].type, g->inputs[k].name);
		}
	}
	return 0;
}

static int run_graph(struct ctl *ctl, struct graph_file *g, struct vy_client *c,
	struct vy_dispatch_input *in, size_t n_inputs, bool timing)
{
	struct vy_graph_step steps[MAX_STEPS];
	for (size_t i = 0; i < g->n_steps; i++) {
		struct step_file *st = &g->steps[i];
		steps[i] = (struct vy_graph_step){.program = st->program,
			.options = st->has_options ? &st->options : NULL,
			.binds = st->binds,
			.n_binds = st->n_binds};
	}
	struct vy_error err;
	struct vy_graph_info info;
	if (vy_graph_create(c, steps, g->n_steps, g->name[0] ? g->name : NULL, &info, &err) != 0) {
		return ctl_report(ctl, "graph_create", &err);
	}
	struct vy_dispatch_options o = {.timing = timing};
	struct vy_reply *r = NULL;
	int rc = vy_graph_run(c, info.graph, in, n_inputs, &o, &r, &err);
	vy_graph_free(c, info.graph, NULL);
	if (rc) {
		return ctl_report(ctl, "graph_run", &err);
	}
	struct json_object *outs = ctl->json ? json_object_new_array() : NULL;
	for (size_t j = 0; j < vy_reply_outputs(r); j++) {
		size_t len = 0;
		const uint8_t *p = vy_reply_output(r, j, &len);
		struct ctl_slot slot = g->outputs[j];
		snprintf(slot.name, sizeof(slot.name), "output %zu", j);
		ctl_slot_print(ctl, &slot, p, len, outs);
	}
	if (ctl->json) {
		struct json_object *o2 = json_object_new_object();
		json_object_object_add(o2, "steps", json_object_new_uint64(info.steps));
		json_object_object_add(o2, "barriers", json_object_new_uint64(info.barriers));
		json_object_object_add(o2, "outputs", outs);
		json_object_object_add(o2, "timing", ctl_json_of(vy_reply_get(r, "timing")));
		ctl_json_print(o2);
	} else {
		struct vy_dispatch_timing t = {0};
		vy_reply_timing(r, &t);
		char a[CTL_FMT_MAX];
		fflush(stdout);
		fprintf(stderr, "vyrectl graph: %u steps, %u barriers; wall %s\n", info.steps,
			info.barriers, ctl_fmt_ns(t.wall_ns, a));
	}
	vy_reply_destroy(r);
	return CTL_EXIT_OK;
}

int ctl_cmd_graph(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
		{"input", required_argument, NULL, 'i'},
		{"timing", no_argument, NULL, OPT_TIMING},
		{NULL, 0, NULL, 0},
	};
	char *args[CTL_LAYOUT_MAX];
	size_t n_args = 0;
	bool timing = false;
	int opt;
	while ((opt = ctl_getopt(ctl, argc, argv, "i:", opts)) != -1) {
		if (opt == 'i' && n_args < CTL_LAYOUT_MAX) {
			args[n_args++] = optarg;
		} else if (opt == 'i') {
			return ctl_usage_error(
				ctl, "more than %d --input arguments", CTL_LAYOUT_MAX);
		} else if (opt == OPT_TIMING) {
			timing = true;
		} else {
			return CTL_EXIT_USAGE;
		}
	}
	if (!ctl_want_args(ctl, argc, argv, 2)) {
		return CTL_EXIT_USAGE;
	}
	if (strcmp(argv[optind], "run") != 0) {
		return ctl_usage_error(
			ctl, "the graph command is \"run\", not \"%s\"", argv[optind]);
	}
	struct graph_file g = {0};
	uint8_t *data[CTL_LAYOUT_MAX] = {0};
	size_t lens[CTL_LAYOUT_MAX] = {0};
	size_t n_inputs = 0;
	struct vy_client *c = NULL;
	int rc = read_graph(ctl, argv[optind + 1], &g);
	if (rc == 0) {
		rc = graph_inputs(ctl, &g, args, n_args, data, lens, &n_inputs);
	}
	if (rc == 0) {
		rc = ctl_connect(ctl, &c);
	}
	if (rc == 0) {
		struct vy_dispatch_input in[CTL_LAYOUT_MAX];
		for (size_t k = 0; k < n_inputs; k++) {
			in[k] = vy_input_bytes(data[k], lens[k]);
		}
		rc = run_graph(ctl, &g, c, in, n_inputs, timing);
	}
	vy_client_close(c);
	for (size_t k = 0; k < CTL_LAYOUT_MAX; k++) {
		free(data[k]);
	}
	graph_file_free(&g);
	return rc;
}
