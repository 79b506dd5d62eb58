/*
 * Graphs (docs/graphs.md, docs/protocol.md): graph_create looks up each step's program through
 * the program cache, one step after another (a lookup may answer at once or after validation on
 * the pool), then resolves the resident buffers, plans the graph (planner/graph.h) and enters it
 * in the table; graph_run queues one job that runs every step on the graph's device
 * (backend/graph_run.h), under one timeout; graph_free and the owner's disconnect take a graph
 * out of the table, and it dies with its last reference (a run in progress holds one).
 *
 * A graph belongs to the connection that made it; another connection of the same user may run
 * it, and another user's handle is NOT_FOUND, as for resident buffers. A graph made on a device
 * that was lost since is NOT_FOUND with a Fix that says to create it again.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "graph_run.h"
#include "log.h"
#include "vyred.h"

/* Distinct resident buffers one graph may bind (graph_run holds a reference on each). */
#define MAX_GRAPH_RESIDENTS VY_IR_MAX_BUFFERS

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p) {
		fprintf(stderr, "vyred: out of memory for a graph\n");
		abort();
	}
	return p;
}

/* --- the table ------------------------------------------------------------------------- */

static void graph_destroy(struct vy_graph *g)
{
	if (g->rec) {
		vy_backend_graph_forget(g->dev->backend, g->rec);
	}
	for (uint32_t i = 0; g->steps && i < g->n_steps; i++) {
		vy_prog_unref(g->steps[i].prog);
		vy_spec_map_finish(&g->steps[i].spec);
	}
	free(g->steps);
	free(g->runs);
	free(g->handles);
	vy_graph_plan_destroy(g->plan);
	free(g);
}

static void graph_unref(struct vy_graph *g)
{
	if (--g->refs == 0) {
		graph_destroy(g);
	}
}

static void graph_remove(struct vy_server *s, struct vy_graph *g)
{
	if (!g->in_table) {
		return;
	}
	vy_htable_remove(&s->graph_index, &g->hlink);
	vy_list_remove(&g->link);
	vy_list_remove(&g->owner);
	g->conn->n_graphs--;
	g->in_table = false;
	s->n_graphs--;
	graph_unref(g);
}

/*
 * The graph `handle` if `c` may use it, or NULL with NOT_FOUND in err. A graph made on a device
 * that was lost since is NOT_FOUND too, unless `lost_ok` (graph_free forgets it all the same).
 */
static struct vy_graph *graph_find(
	struct vy_server *s, struct vy_conn *c, uint64_t handle, bool lost_ok, struct vy_err *err)
{
	for (struct vy_hlink *l = vy_htable_bucket(&s->graph_index, handle); l; l = l->next) {
		struct vy_graph *g = VY_CONTAINER_OF(l, struct vy_graph, hlink);
		if (g->handle != handle || g->uid != c->uid) {
			continue;
		}
		if (!lost_ok && g->generation != vy_device_generation(g->dev)) {
			vy_err_set(err, VY_E_NOT_FOUND, "graph",
				"create the graph again (and upload its resident buffers again)",
				"graph %#" PRIx64 " was lost with device %u", handle,
				g->dev->index);
			return NULL;
		}
		return g;
	}
	/* Another user's graph is answered exactly as one that never existed. */
	vy_err_set(err, VY_E_NOT_FOUND, "graph", "create the graph with graph_create first",
		"no graph %#" PRIx64 " is known to this daemon", handle);
	return NULL;
}

void vy_graph_conn_closed(struct vy_server *s, struct vy_conn *c)
{
	while (!vy_list_empty(&c->graphs)) {
		graph_remove(s, VY_CONTAINER_OF(c->graphs.next, struct vy_graph, owner));
	}
}

void vy_graph_finish(struct vy_server *s)
{
	while (!vy_list_empty(&s->graphs)) {
		graph_remove(s, VY_CONTAINER_OF(s->graphs.next, struct vy_graph, link));
	}
	vy_htable_finish(&s->graph_index);
}

void vy_graph_req_free(struct vy_req *req)
{
	struct vy_graph_build *b = req->build;
	if (b) {
		for (uint32_t i = 0; i < b->next && b->progs; i++) {
			vy_prog_unref(b->progs[i]);
		}
		free(b->progs);
		free(b);
		req->build = NULL;
	}
	if (req->graph) {
		graph_unref(req->graph);
		req->graph = NULL;
	}
	free(req->job.graph_res);
	free(req->job.step_ns);
	req->job.graph_res = NULL;
	req->job.step_ns = NULL;
}

void vy_graph_pack_stats(struct vy_server *s, msgpack_packer *pk)
{
	vy_pack_cstr(pk, "graphs");
	msgpack_pack_map(pk, 4);
	vy_pack_kv_u64(pk, "count", s->n_graphs);
	vy_pack_kv_u64(pk, "created", s->graphs_created);
	vy_pack_kv_u64(pk, "runs", s->graph_runs);
	vy_pack_kv_u64(pk, "steps", s->graph_steps);
}

/* --- graph_create ---------------------------------------------------------------------- */

static void build_next(struct vy_req *req);

/* Prefix the place of an error of step i's program lookup with "steps[i].". */
static void at_step(struct vy_err *err, uint32_t i, const char *what)
{
	char at[VY_ERR_AT_MAX + 32];
	snprintf(at, sizeof(at), "steps[%" PRIu32 "].%s", i, err->at[0] ? err->at : what);
	snprintf(err->at, sizeof(err->at), "%.*s", (int)sizeof(err->at) - 1, at);
}

void vy_graph_on_prog(
	struct vy_req *req, int rc, const struct vy_err *err, const struct vy_err_list *errs)
{
	struct vy_graph_build *b = req->build;
	b->settled = true;
	b->dead = !vy_conn_alive(req->conn);
	b->rc = rc;
	if (rc && err) {
		b->err = *err;
	}
	if (rc == 0) {
		/* The lookup's reference moves to the build. */
		b->progs[b->next++] = req->prog;
		req->prog = NULL;
	}
	if (!b->in_acquire) {
		build_next(req);
	}
}

/* The device the graph runs on: its resident buffers', else config.device or the least loaded
 * one that every step's program can run on (step 0's config names the backend and device). */
static struct vy_device *graph_device(struct vy_req *req, struct vy_err *err)
{
	struct vy_server *s = req->conn->srv;
	struct vy_device *dev = NULL;
	for (uint32_t i = 0; i < req->r.n_steps; i++) {
		const struct vy_step_request *st = &req->r.steps[i];
		for (uint32_t k = 0; k < st->n_binds; k++) {
			if (st->binds[k].kind != VY_STEP_RESIDENT) {
				continue;
			}
			struct vy_resident *r =
				vy_resident_get(s, req->conn, st->binds[k].value, err);
			if (!r) {
				snprintf(err->at, sizeof(err->at), "steps[%" PRIu32 "].bind.%.64s",
					i, st->binds[k].buffer);
				return NULL;
			}
			if (dev && dev != r->dev) {
				vy_err_set(err, VY_E_BAD_REQUEST, NULL,
					"bind resident buffers of one device in one graph",
					"resident buffer %#" PRIx64 " lives on device %u, another "
					"of the graph on device %u",
					r->handle, r->dev->index, dev->index);
				snprintf(err->at, sizeof(err->at), "steps[%" PRIu32 "].bind.%.64s",
					i, st->binds[k].buffer);
				return NULL;
			}
			dev = r->dev;
		}
	}
	unsigned features = 0;
	for (uint32_t i = 0; i < req->r.n_steps; i++) {
		features |= req->build->progs[i]->features;
	}
	if (!dev) {
		dev = vy_device_pick(s, &req->r.steps[0].config, features, err);
	}
	for (uint32_t i = 0; dev && i < req->r.n_steps; i++) {
		int32_t want = req->r.steps[i].config.device;
		if (want >= 0 && (uint32_t)want != dev->index) {
			vy_err_set(err, VY_E_BAD_REQUEST, NULL,
				"run every step of a graph on one device",
				"step %" PRIu32 " asks for device %" PRId32 "; the graph runs on "
				"device %u",
				i, want, dev->index);
			snprintf(err->at, sizeof(err->at), "steps[%" PRIu32 "].config.device", i);
			return NULL;
		}
	}
	return dev;
}

/* Step i's dispatch config from its request config, capped as dispatch caps it. */
static int step_config(struct vy_req *req, struct vy_graph *g, uint32_t i, struct vy_err *err)
{
	struct vy_server *s = req->conn->srv;
	const struct vy_request_config *rc = &req->r.steps[i].config;
	struct vy_graph_step_entry *st = &g->steps[i];
	struct vy_dispatch_config *cfg = &g->runs[i].config;
	g->runs[i].program = st->prog->program;
	int e = vy_spec_resolve(st->prog, rc, &st->spec, err);
	if (e) {
		at_step(err, i, "config.spec");
		return e;
	}
	if (rc->has_grid) {
		memcpy(cfg->grid, rc->grid, sizeof(cfg->grid));
	}
	if (rc->has_workgroup_size) {
		for (int k = 0; k < 3; k++) {
			if (rc->workgroup_size[k] == 0) {
				vy_err_set(err, VY_E_BAD_REQUEST, NULL,
					"give every axis a size of 1 or more",
					"the workgroup size of step %" PRIu32 " has a zero axis",
					i);
				at_step(err, i, "config.workgroup_size");
				return VY_E_BAD_REQUEST;
			}
		}
		memcpy(cfg->workgroup_size, rc->workgroup_size, sizeof(cfg->workgroup_size));
	}
	cfg->spec = &st->spec;
	uint64_t cap = s->cfg.max_loop_iterations;
	cfg->max_loop_iterations = rc->max_loop_iterations && rc->max_loop_iterations < cap
					   ? rc->max_loop_iterations
					   : cap;
	cfg->has_device = true;
	cfg->device = g->dev->index;
	return 0;
}

/* The planner's binds of step i; resident lengths from the table. */
static int step_binds(struct vy_req *req, uint32_t i, struct vy_graph_bind *out, struct vy_err *err)
{
	const struct vy_step_request *st = &req->r.steps[i];
	for (uint32_t k = 0; k < st->n_binds; k++) {
		const struct vy_step_bind *sb = &st->binds[k];
		struct vy_graph_bind *b = &out[k];
		*b = (struct vy_graph_bind){.buffer = sb->buffer, .temp = sb->temp};
		switch (sb->kind) {
		case VY_STEP_INPUT:
			b->kind = VY_GRAPH_INPUT;
			b->index = (uint32_t)sb->value;
			break;
		case VY_STEP_OUTPUT:
			b->kind = VY_GRAPH_OUTPUT;
			b->index = (uint32_t)sb->value;
			break;
		case VY_STEP_TEMP:
			b->kind = VY_GRAPH_TEMP;
			break;
		case VY_STEP_RESIDENT: {
			struct vy_resident *r =
				vy_resident_get(req->conn->srv, req->conn, sb->value, err);
			if (!r) {
				snprintf(err->at, sizeof(err->at), "steps[%" PRIu32 "].bind.%.64s",
					i, sb->buffer);
				return VY_E_NOT_FOUND;
			}
			b->kind = VY_GRAPH_RESIDENT;
			b->handle = sb->value;
			b->resident_len = r->size;
			break;
		}
		}
	}
	return 0;
}

static int plan_graph(struct vy_req *req, struct vy_graph *g, struct vy_err *err)
{
	struct vy_server *s = req->conn->srv;
	uint32_t n = req->r.n_steps;
	struct vy_graph_step_desc *desc = xcalloc(n, sizeof(*desc));
	struct vy_graph_bind *binds = xcalloc((size_t)n * VY_IR_MAX_BUFFERS, sizeof(*binds));
	int rc = 0;
	for (uint32_t i = 0; i < n && rc == 0; i++) {
		struct vy_graph_bind *b = &binds[(size_t)i * VY_IR_MAX_BUFFERS];
		rc = step_binds(req, i, b, err);
		desc[i] = (struct vy_graph_step_desc){g->steps[i].prog->program,
			g->steps[i].prog->plan, b, req->r.steps[i].n_binds};
	}
	if (rc == 0) {
		rc = vy_graph_plan_build(desc, n, (uint32_t)s->cfg.max_graph_steps, &g->plan, err);
	}
	free(desc);
	free(binds);
	if (rc) {
		return rc;
	}
	const struct vy_graph_plan *p = g->plan;
	uint32_t residents = 0;
	g->handles = xcalloc(p->n_slots, sizeof(*g->handles));
	for (uint32_t k = 0; k < p->n_slots; k++) {
		if (p->slots[k].kind == VY_GRAPH_RESIDENT) {
			g->handles[k] = p->slots[k].handle;
			residents++;
		}
	}
	if (p->n_inputs > VY_MAX_INPUTS || p->n_outputs > VY_IR_MAX_BUFFERS ||
		residents > MAX_GRAPH_RESIDENTS) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "steps",
			"split the graph, or keep intermediate results in temps",
			"the graph has %" PRIu32 " inputs, %" PRIu32 " outputs and %" PRIu32
			" resident buffers; a graph takes at most %d, %d and %d",
			p->n_inputs, p->n_outputs, residents, VY_MAX_INPUTS, VY_IR_MAX_BUFFERS,
			MAX_GRAPH_RESIDENTS);
	}
	return 0;
}

static void reply_created(struct vy_req *req, const struct vy_graph *g)
{
	struct vy_reply *rp = vy_reply_begin(req, 5);
	msgpack_packer *pk = &rp->pk;
	vy_pack_kv_u64(pk, "graph", g->handle);
	vy_pack_kv_u64(pk, "steps", g->n_steps);
	vy_pack_kv_u64(pk, "inputs", g->plan->n_inputs);
	vy_pack_kv_u64(pk, "outputs", g->plan->n_outputs);
	vy_pack_kv_u64(pk, "barriers", g->plan->totals.barriers);
	vy_reply_send(rp);
}

/* Every step's program is found: make the graph. */
static void build_done(struct vy_req *req)
{
	struct vy_conn *c = req->conn;
	struct vy_server *s = c->srv;
	struct vy_err err = {0};
	struct vy_graph *g = xcalloc(1, sizeof(*g));
	g->n_steps = req->r.n_steps;
	g->steps = xcalloc(g->n_steps, sizeof(*g->steps));
	g->runs = xcalloc(g->n_steps, sizeof(*g->runs));
	g->refs = 1;
	for (uint32_t i = 0; i < g->n_steps; i++) {
		g->steps[i].prog = req->build->progs[i];
		vy_spec_map_init(&g->steps[i].spec);
	}
	/* The references moved to the graph. */
	req->build->next = 0;
	int rc = 0;
	g->dev = graph_device(req, &err);
	if (!g->dev) {
		rc = err.code;
	}
	for (uint32_t i = 0; rc == 0 && i < g->n_steps; i++) {
		rc = step_config(req, g, i, &err);
	}
	if (rc == 0) {
		rc = plan_graph(req, g, &err);
	}
	if (rc == 0 && c->n_graphs >= s->cfg.max_graphs) {
		rc = vy_err_set(&err, VY_E_QUOTA_EXCEEDED, NULL,
			"free graphs this connection no longer runs (graph_free), or ask the "
			"operator to raise max_graphs",
			"this connection holds %" PRIu32 " graphs; max_graphs is %" PRIu64,
			c->n_graphs, s->cfg.max_graphs);
	}
	if (rc) {
		graph_destroy(g);
		vy_reply_error(req, &err, NULL);
		return;
	}
	for (uint32_t i = 0; i < g->n_steps; i++) {
		vy_prog_keep(s, g->steps[i].prog);
	}
	g->handle = vy_random_u64();
	g->conn = c;
	g->uid = c->uid;
	g->pid = c->pid;
	snprintf(g->name, sizeof(g->name), "%s", req->r.name ? req->r.name : "");
	g->generation = vy_device_generation(g->dev);
	g->created_ns = vy_now_ns();
	g->in_table = true;
	g->hlink.hash = g->handle;
	vy_htable_insert(&s->graph_index, &g->hlink);
	vy_list_insert_tail(&s->graphs, &g->link);
	vy_list_insert_tail(&c->graphs, &g->owner);
	c->n_graphs++;
	s->n_graphs++;
	s->graphs_created++;
	reply_created(req, g);
}

/* Look up the programs of the steps in order; each lookup may settle now or later. */
static void build_next(struct vy_req *req)
{
	struct vy_graph_build *b = req->build;
	for (;;) {
		if (b->settled) {
			b->settled = false;
			if (b->dead) {
				vy_req_drop(req);
				return;
			}
			if (b->rc) {
				at_step(&b->err, b->next, "program");
				vy_reply_error(req, &b->err, NULL);
				return;
			}
		}
		if (b->next == req->r.n_steps) {
			build_done(req);
			return;
		}
		struct vy_step_request *st = &req->r.steps[b->next];
		/* A program found in the cache stays with the request: the next step's replaces it.
		 */
		vy_program_destroy(req->r.program);
		req->r.program = st->program;
		st->program = NULL;
		req->r.has_program_id = st->has_program_id;
		req->r.program_id = st->program_id;
		b->in_acquire = true;
		vy_prog_acquire(req);
		b->in_acquire = false;
		if (!b->settled) {
			return; /* vy_graph_on_prog goes on once the program is validated */
		}
	}
}

static void op_graph_create(struct vy_req *req)
{
	struct vy_server *s = req->conn->srv;
	if (req->r.n_steps > s->cfg.max_graph_steps) {
		struct vy_err err = {0};
		vy_err_set(&err, VY_E_BAD_REQUEST, "steps",
			"split the work into graphs of at most max_graph_steps steps (hello's "
			"limits)",
			"the graph has %" PRIu32 " steps; max_graph_steps is %" PRIu64,
			req->r.n_steps, s->cfg.max_graph_steps);
		vy_reply_error(req, &err, NULL);
		return;
	}
	req->build = xcalloc(1, sizeof(*req->build));
	req->build->progs = xcalloc(req->r.n_steps, sizeof(*req->build->progs));
	build_next(req);
}

/* --- graph_run ------------------------------------------------------------------------- */

/* Hold the graph's resident buffers for the run; a freed one is NOT_FOUND naming its slot. */
static int hold_graph_residents(struct vy_req *req, struct vy_graph *g, struct vy_err *err)
{
	const struct vy_graph_plan *p = g->plan;
	struct vy_job *j = &req->job;
	j->graph_res = xcalloc(p->n_slots, sizeof(*j->graph_res));
	for (uint32_t k = 0; k < p->n_slots; k++) {
		if (!g->handles[k]) {
			continue;
		}
		struct vy_resident *r =
			vy_resident_get(req->conn->srv, req->conn, g->handles[k], err);
		if (!r) {
			snprintf(err->fix, sizeof(err->fix),
				"create the graph again with live resident buffers");
			snprintf(err->at, sizeof(err->at), "graph");
			return VY_E_NOT_FOUND;
		}
		vy_resident_ref(r);
		req->res[req->n_res++] = r;
		j->graph_res[k] = r->res;
	}
	return 0;
}

static void op_graph_run(struct vy_req *req)
{
	struct vy_conn *c = req->conn;
	struct vy_server *s = c->srv;
	struct vy_err err = {0};
	struct vy_graph *g = graph_find(s, c, req->r.graph, false, &err);
	if (!g) {
		vy_reply_error(req, &err, NULL);
		return;
	}
	g->refs++;
	req->graph = g;
	req->dev = g->dev;
	struct vy_job *j = &req->job;
	for (uint32_t i = 0; i < req->r.n_inputs; i++) {
		if (req->r.inputs[i].kind == VY_INPUT_RESIDENT) {
			vy_err_set(&err, VY_E_BAD_REQUEST, NULL,
				"bind the resident buffer in the graph ({\"resident\": handle}) "
				"instead",
				"a graph's inputs are bytes or shm ranges");
			snprintf(err.at, sizeof(err.at), "inputs[%" PRIu32 "]", i);
			vy_reply_error(req, &err, NULL);
			return;
		}
		if (vy_ops_input_bytes(req, i, false, &err) != 0) {
			vy_reply_error(req, &err, NULL);
			return;
		}
	}
	size_t *lens = xcalloc(g->plan->n_slots, sizeof(*lens));
	int rc = vy_graph_plan_run_lengths(g->plan, j->inputs, req->r.n_inputs, lens, &err);
	uint64_t out_bytes = 0;
	for (uint32_t k = 0; rc == 0 && k < g->plan->n_outputs; k++) {
		out_bytes += lens[g->plan->output_slot[k]];
	}
	free(lens);
	if (rc == 0) {
		rc = hold_graph_residents(req, g, &err);
	}
	if (rc) {
		vy_reply_error(req, &err, NULL);
		return;
	}
	j->kind = VY_JOB_GRAPH;
	j->req = req;
	j->dev = g->dev;
	j->graph = g;
	j->n_inputs = req->r.n_inputs;
	j->n_outputs = g->plan->n_outputs;
	uint32_t tcap = (uint32_t)s->cfg.dispatch_timeout_ms;
	uint32_t t = req->r.config.timeout_ms;
	j->cfg.timeout_ms = t && t < tcap ? t : tcap;
	j->cfg.label = req->r.config.label;
	j->cfg.timing = req->r.config.timing;
	if (j->cfg.timing) {
		j->step_ns = xcalloc(g->n_steps, sizeof(*j->step_ns));
	}
	req->reply_bytes = out_bytes;
	vy_ops_submit_sized(req);
}

int vy_graph_job_run(struct vy_job *j)
{
	struct vy_graph *g = j->graph;
	return vy_backend_graph_replay(j->dev->backend, g->plan, g->runs, j->inputs, j->graph_res,
		j->cfg.timeout_ms, &j->outputs, j->step_ns, &g->rec, &j->err);
}

bool vy_graph_job_startable(const struct vy_job *j)
{
	const struct vy_graph_plan *plan = j->graph->plan;
	for (uint32_t s = 0; s < plan->n_slots; s++) {
		if (plan->slots[s].kind == VY_GRAPH_RESIDENT) {
			return false;
		}
	}
	return j->step_ns == NULL;
}

int vy_graph_job_start(struct vy_job *j, struct vy_pending **out)
{
	struct vy_graph *g = j->graph;
	return vy_backend_graph_start(j->dev->backend, g->plan, g->runs, j->inputs, j->graph_res,
		j->cfg.timeout_ms, &g->rec, out, &j->err);
}

void vy_graph_on_job(struct vy_req *req)
{
	struct vy_server *s = req->conn->srv;
	struct vy_job *j = &req->job;
	struct vy_graph *g = req->graph;
	g->runs_done++;
	g->last_run_ns = vy_now_ns();
	s->graph_runs++;
	s->graph_steps += g->n_steps;
	struct vy_reply *rp = vy_reply_begin(req, 2);
	msgpack_packer *pk = &rp->pk;
	vy_pack_cstr(pk, "outputs");
	msgpack_pack_array(pk, j->outputs.len);
	for (size_t o = 0; o < j->outputs.len; o++) {
		vy_reply_bin(rp, j->outputs.items[o].data, j->outputs.items[o].len);
	}
	vy_pack_cstr(pk, "timing");
	msgpack_pack_map(pk, j->step_ns ? 4 : 3);
	vy_pack_kv_u64(pk, "wall_ns", vy_now_ns() - req->t_start);
	vy_pack_kv_u64(pk, "queue_ns", j->t_start - j->t_enqueue);
	vy_pack_cstr(pk, "device_ns");
	uint64_t sum = 0;
	bool known = j->step_ns != NULL;
	for (uint32_t i = 0; known && i < g->n_steps; i++) {
		known = j->step_ns[i] != VY_TIMING_NONE;
		sum += known ? j->step_ns[i] : 0;
	}
	if (known) {
		msgpack_pack_uint64(pk, sum);
	} else {
		msgpack_pack_nil(pk);
	}
	if (j->step_ns) {
		vy_pack_cstr(pk, "steps_ns");
		msgpack_pack_array(pk, g->n_steps);
		for (uint32_t i = 0; i < g->n_steps; i++) {
			if (j->step_ns[i] == VY_TIMING_NONE) {
				msgpack_pack_nil(pk);
			} else {
				msgpack_pack_uint64(pk, j->step_ns[i]);
			}
		}
	}
	vy_reply_send(rp);
}

/* --- graph_free and graphs ------------------------------------------------------------- */

static void op_graph_free(struct vy_req *req)
{
	struct vy_conn *c = req->conn;
	struct vy_err err = {0};
	struct vy_graph *g = graph_find(c->srv, c, req->r.graph, true, &err);
	if (!g) {
		vy_reply_error(req, &err, NULL);
		return;
	}
	graph_remove(c->srv, g);
	struct vy_reply *rp = vy_reply_begin(req, 0);
	vy_reply_send(rp);
}

static void op_graphs(struct vy_req *req)
{
	struct vy_conn *c = req->conn;
	struct vy_server *s = c->srv;
	bool admin = vy_server_is_admin(s, c);
	uint32_t n = 0;
	for (struct vy_link *l = s->graphs.next; l != &s->graphs; l = l->next) {
		n += admin || VY_CONTAINER_OF(l, struct vy_graph, link)->uid == c->uid;
	}
	uint64_t now = vy_now_ns();
	struct vy_reply *rp = vy_reply_begin(req, 1);
	msgpack_packer *pk = &rp->pk;
	vy_pack_cstr(pk, "graphs");
	msgpack_pack_array(pk, n);
	for (struct vy_link *l = s->graphs.next; l != &s->graphs; l = l->next) {
		struct vy_graph *g = VY_CONTAINER_OF(l, struct vy_graph, link);
		if (!admin && g->uid != c->uid) {
			continue;
		}
		msgpack_pack_map(pk, 12);
		vy_pack_kv_u64(pk, "graph", g->handle);
		vy_pack_kv_str(pk, "name", g->name);
		vy_pack_kv_u64(pk, "steps", g->n_steps);
		vy_pack_kv_u64(pk, "inputs", g->plan->n_inputs);
		vy_pack_kv_u64(pk, "outputs", g->plan->n_outputs);
		vy_pack_kv_u64(pk, "barriers", g->plan->totals.barriers);
		vy_pack_kv_u64(pk, "temp_bytes", g->plan->totals.temp_bytes);
		vy_pack_kv_u64(pk, "uid", (uint64_t)g->uid);
		vy_pack_kv_u64(pk, "client", g->conn->id);
		vy_pack_kv_u64(pk, "device", g->dev->index);
		vy_pack_kv_u64(pk, "runs", g->runs_done);
		vy_pack_kv_u64(pk, "age_ms", (now - g->created_ns) / 1000000);
	}
	vy_reply_send(rp);
}

void vy_graph_op(struct vy_req *req)
{
	switch (req->r.op) {
	case VY_OP_GRAPH_CREATE:
		op_graph_create(req);
		break;
	case VY_OP_GRAPH_RUN:
		op_graph_run(req);
		break;
	case VY_OP_GRAPH_FREE:
		op_graph_free(req);
		break;
	default:
		op_graphs(req);
		break;
	}
}
