/*
 * Graphs through the daemon (graph_create, graph_run, graph_free, graphs; docs/graphs.md): a
 * 10-step chain gives the bytes of 10 dispatches, steps named by program_id, a graph over a
 * resident buffer with a grid_sync step, a trap named by step and node, the refusals of
 * hostile or mistaken requests, after which the daemon serves on, and runs queued together.
 */
#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

#include "graph_programs.h"
#include "harness.h"
#include "tclient.h"
#include "util.h"

#define N VY_TEST_GRAPH_N

static void kv_u64(msgpack_packer *pk, const char *key, uint64_t v)
{
	vy_pack_cstr(pk, key);
	msgpack_pack_uint64(pk, v);
}

/* One bind: buffer, kind ("input", "output", "temp", "resident") and its value. */
struct gbind {
	const char *buffer;
	const char *kind;
	uint64_t value;
	const char *temp;
};

struct gstep {
	const struct vy_program *p; /* packed whole, unless id is set */
	const char *id;             /* a program_id in hex */
	uint32_t n_binds;
	struct gbind binds[4];
};

static void pack_steps(msgpack_packer *pk, const struct gstep *steps, uint32_t n)
{
	vy_pack_cstr(pk, "steps");
	msgpack_pack_array(pk, n);
	for (uint32_t i = 0; i < n; i++) {
		const struct gstep *st = &steps[i];
		msgpack_pack_map(pk, 2);
		if (st->id) {
			vy_pack_cstr(pk, "program_id");
			vy_pack_cstr(pk, st->id);
		} else {
			t_pack_program(pk, st->p);
		}
		vy_pack_cstr(pk, "bind");
		msgpack_pack_map(pk, st->n_binds);
		for (uint32_t k = 0; k < st->n_binds; k++) {
			const struct gbind *b = &st->binds[k];
			vy_pack_cstr(pk, b->buffer);
			msgpack_pack_map(pk, 1);
			vy_pack_cstr(pk, b->kind);
			if (b->temp) {
				vy_pack_cstr(pk, b->temp);
			} else {
				msgpack_pack_uint64(pk, b->value);
			}
		}
	}
}

/* graph_create; the reply's error code (0: *graph holds the handle). */
static int create(
	struct tc *c, const struct gstep *steps, uint32_t n, uint64_t *graph, struct tc_reply *r)
{
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_GRAPH_CREATE, 1);
	pack_steps(&m.pk, steps, n);
	cr_assert_eq(tc_call(c, &m, r), 0);
	*graph = 0;
	tc_u64(r, "graph", graph);
	return tc_code(r);
}

static int run(struct tc *c, uint64_t graph, const void *x, size_t len, struct tc_reply *r)
{
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_GRAPH_RUN, 2);
	kv_u64(&m.pk, "graph", graph);
	vy_pack_cstr(&m.pk, "inputs");
	msgpack_pack_array(&m.pk, 1);
	msgpack_pack_bin(&m.pk, len);
	msgpack_pack_bin_body(&m.pk, x, len);
	cr_assert_eq(tc_call(c, &m, r), 0);
	return tc_code(r);
}

static int graph_op(struct tc *c, enum vy_op op, uint64_t graph, struct tc_reply *r)
{
	struct tc_msg m;
	tc_begin(c, &m, op, 1);
	kv_u64(&m.pk, "graph", graph);
	cr_assert_eq(tc_call(c, &m, r), 0);
	return tc_code(r);
}

static void fill(uint32_t *x)
{
	for (uint32_t i = 0; i < N; i++) {
		x[i] = 0x9E3779B9u * (i + 1);
	}
}

static const char *const temps[] = {"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8"};

/* The chain x -> t0 -> ... -> t8 -> y of affine(i + 2) steps, programs sent whole. */
static void chain(struct gstep *steps, struct vy_program **progs)
{
	for (uint32_t i = 0; i < 10; i++) {
		progs[i] = vy_test_graph_affine(i + 2);
		steps[i] = (struct gstep){.p = progs[i], .n_binds = 2};
		steps[i].binds[0] = i == 0 ? (struct gbind){"x", "input", 0, NULL}
					   : (struct gbind){"x", "temp", 0, temps[i - 1]};
		steps[i].binds[1] = i == 9 ? (struct gbind){"y", "output", 0, NULL}
					   : (struct gbind){"y", "temp", 0, temps[i]};
	}
}

Test(graphs, a_chain_of_ten_steps_gives_the_bytes_of_ten_dispatches)
{
	struct tc c;
	tc_open(&c, vyd_shared_socket(), "graph-chain");
	struct gstep steps[10];
	struct vy_program *progs[10];
	chain(steps, progs);
	uint64_t g = 0;
	struct tc_reply r;
	cr_assert_eq(create(&c, steps, 10, &g, &r), 0, "%s", r.r.error.message);
	uint64_t v = 0;
	cr_expect(tc_u64(&r, "steps", &v) && v == 10);
	cr_expect(tc_u64(&r, "inputs", &v) && v == 1);
	cr_expect(tc_u64(&r, "outputs", &v) && v == 1);
	cr_expect(tc_u64(&r, "barriers", &v) && v == 9);
	tc_reply_free(&r);

	uint32_t x[N];
	fill(x);
	uint8_t cur[sizeof(x)];
	memcpy(cur, x, sizeof(x));
	for (uint32_t i = 0; i < 10; i++) {
		struct t_inputs step_in = {1, {{cur, sizeof(cur)}}};
		cr_assert_eq(t_dispatch(&c, progs[i], &step_in, &r), 0);
		const uint8_t *data[1];
		size_t lens[1];
		bool nil[1];
		cr_assert_eq(tc_outputs(&r, data, lens, nil, 1), 1, "%s", r.r.error.message);
		memcpy(cur, data[0], sizeof(cur));
		tc_reply_free(&r);
	}
	for (int k = 0; k < 2; k++) {
		cr_assert_eq(run(&c, g, x, sizeof(x), &r), 0, "%s", r.r.error.message);
		const uint8_t *data[1];
		size_t lens[1];
		bool nil[1];
		cr_assert_eq(tc_outputs(&r, data, lens, nil, 1), 1);
		cr_assert_eq(lens[0], sizeof(x));
		cr_assert_arr_eq(
			data[0], cur, sizeof(cur), "run %d differs from the dispatches", k);
		tc_reply_free(&r);
	}
	/* The same chain by program_id: the programs are in the cache now. */
	char ids[10][VY_PROGRAM_ID_HEX];
	for (uint32_t i = 0; i < 10; i++) {
		msgpack_sbuffer sb;
		struct vy_program_id id;
		vy_program_id_of(progs[i], &sb, &id);
		msgpack_sbuffer_destroy(&sb);
		vy_program_id_hex(&id, ids[i]);
		steps[i].id = ids[i];
	}
	uint64_t by_id = 0;
	cr_assert_eq(create(&c, steps, 10, &by_id, &r), 0, "%s", r.r.error.message);
	tc_reply_free(&r);
	cr_assert_eq(run(&c, by_id, x, sizeof(x), &r), 0, "%s", r.r.error.message);
	const uint8_t *data[1];
	size_t lens[1];
	bool nil[1];
	cr_assert_eq(tc_outputs(&r, data, lens, nil, 1), 1);
	cr_assert_arr_eq(data[0], cur, sizeof(cur));
	tc_reply_free(&r);
	cr_assert_geq(t_stat(&c, "graphs.runs"), 3);
	cr_assert_geq(t_stat(&c, "graphs.steps"), 30);
	cr_assert_eq(graph_op(&c, VY_OP_GRAPH_FREE, g, &r), 0);
	tc_reply_free(&r);
	cr_assert_eq(graph_op(&c, VY_OP_GRAPH_FREE, by_id, &r), 0);
	tc_reply_free(&r);
	cr_assert_eq(run(&c, g, x, sizeof(x), &r), VY_E_NOT_FOUND, "a freed graph runs no more");
	tc_reply_free(&r);
	for (uint32_t i = 0; i < 10; i++) {
		vy_program_destroy(progs[i]);
	}
	tc_close(&c);
}

static uint64_t alloc(struct tc *c, uint64_t size)
{
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_ALLOC, 1);
	kv_u64(&m.pk, "size", size);
	struct tc_reply r;
	cr_assert_eq(tc_call(c, &m, &r), 0);
	uint64_t h = 0;
	cr_assert(tc_u64(&r, "handle", &h), "%s", r.r.error.message);
	tc_reply_free(&r);
	return h;
}

Test(graphs, a_resident_buffer_and_a_grid_sync_step_give_the_values_computed_by_hand)
{
	struct tc c;
	tc_open(&c, vyd_shared_socket(), "graph-resident");
	struct vy_program *p0 = vy_test_graph_affine(3);
	struct vy_program *p1 = vy_test_graph_mirror();
	struct vy_program *p2 = vy_test_graph_accumulate();
	struct vy_program *p3 = vy_test_graph_affine(5);
	uint64_t h = alloc(&c, 2 * N * 4);
	struct gstep steps[] = {
		{p0, NULL, 2, {{"x", "input", 0, NULL}, {"y", "temp", 0, "a"}}},
		{p1, NULL, 2, {{"buf", "temp", 0, "a"}, {"o", "resident", h, NULL}}},
		{p2, NULL, 2, {{"a", "resident", h, NULL}, {"b", "input", 0, NULL}}},
		{p3, NULL, 2, {{"x", "resident", h, NULL}, {"y", "output", 0, NULL}}},
	};
	uint64_t g = 0;
	struct tc_reply r;
	cr_assert_eq(create(&c, steps, 4, &g, &r), 0, "%s (%s)", r.r.error.message, r.r.error.at);
	tc_reply_free(&r);
	uint32_t x[N];
	uint32_t want_r[N];
	uint32_t want_y[N];
	vy_test_graph_four_steps(x, want_r, want_y);
	cr_assert_eq(run(&c, g, x, sizeof(x), &r), 0, "%s (%s)", r.r.error.message, r.r.error.at);
	const uint8_t *data[1];
	size_t lens[1];
	bool nil[1];
	cr_assert_eq(tc_outputs(&r, data, lens, nil, 1), 1);
	cr_assert_arr_eq(data[0], want_y, sizeof(want_y));
	tc_reply_free(&r);
	struct tc_msg m;
	tc_begin(&c, &m, VY_OP_DOWNLOAD, 2);
	kv_u64(&m.pk, "handle", h);
	kv_u64(&m.pk, "length", sizeof(want_r));
	cr_assert_eq(tc_call(&c, &m, &r), 0);
	struct vy_mp_reader rd;
	cr_assert(tc_field(&r, "data", &rd));
	struct vy_mp_obj o;
	cr_assert_eq(vy_mp_read(&rd, &o), VY_MP_OK);
	cr_assert_eq(o.len, sizeof(want_r));
	cr_assert_arr_eq(o.data, want_r, sizeof(want_r), "the resident buffer");
	tc_reply_free(&r);
	/* A freed buffer: the run is refused, naming the graph, and the daemon goes on. */
	tc_begin(&c, &m, VY_OP_FREE, 1);
	kv_u64(&m.pk, "handle", h);
	cr_assert_eq(tc_call(&c, &m, &r), 0);
	tc_reply_free(&r);
	cr_assert_eq(run(&c, g, x, sizeof(x), &r), VY_E_NOT_FOUND);
	cr_expect_str_eq(r.r.error.at, "graph");
	cr_expect(strstr(r.r.error.fix, "create the graph again"), "%s", r.r.error.fix);
	tc_reply_free(&r);
	cr_assert_eq(t_simple(&c, VY_OP_PING, &r), 0);
	tc_reply_free(&r);
	vy_program_destroy(p0);
	vy_program_destroy(p1);
	vy_program_destroy(p2);
	vy_program_destroy(p3);
	tc_close(&c);
}

Test(graphs, a_trap_in_step_seven_of_ten_names_the_step_and_the_node)
{
	struct tc c;
	tc_open(&c, vyd_shared_socket(), "graph-trap");
	struct gstep steps[10];
	struct vy_program *progs[10];
	for (uint32_t i = 0; i < 10; i++) {
		progs[i] = i == 7 ? vy_test_graph_divide_by_zero() : vy_test_graph_affine(1);
		steps[i] = (struct gstep){
			progs[i], NULL, 2, {{"x", "input", 0, NULL}, {"y", "output", i, NULL}}};
	}
	uint64_t g = 0;
	struct tc_reply r;
	cr_assert_eq(create(&c, steps, 10, &g, &r), 0, "%s", r.r.error.message);
	tc_reply_free(&r);
	uint32_t x[N] = {0};
	cr_assert_eq(run(&c, g, x, sizeof(x), &r), VY_E_TRAP, "%s", r.r.error.message);
	cr_expect_str_eq(r.r.error.at, "steps[7].entry[0].store");
	cr_expect(strncmp(r.r.error.message, "step 7 of 10: ", 14) == 0, "%s", r.r.error.message);
	tc_reply_free(&r);
	cr_assert_eq(t_simple(&c, VY_OP_PING, &r), 0);
	tc_reply_free(&r);
	for (uint32_t i = 0; i < 10; i++) {
		vy_program_destroy(progs[i]);
	}
	tc_close(&c);
}

/* A graph_create of `count` empty steps (one byte each). */
static int announce_steps(struct tc *c, uint32_t count, struct tc_reply *r)
{
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_GRAPH_CREATE, 1);
	vy_pack_cstr(&m.pk, "steps");
	msgpack_pack_array(&m.pk, count);
	for (uint32_t i = 0; i < count; i++) {
		msgpack_pack_map(&m.pk, 0);
	}
	cr_assert_eq(tc_call(c, &m, r), 0);
	return tc_code(r);
}

Test(graphs, mistaken_and_hostile_graphs_get_clear_errors_and_the_daemon_serves_on)
{
	struct tc c;
	tc_open(&c, vyd_shared_socket(), "graph-hostile");
	struct tc_reply r;
	/* 10^6 steps: refused from the count, before anything is allocated for them. */
	cr_assert_eq(announce_steps(&c, 1000000, &r), VY_E_BAD_REQUEST);
	cr_expect_str_eq(r.r.error.at, "steps");
	cr_expect(strstr(r.r.error.message, "1000000 steps is more than 4096"), "%s",
		r.r.error.message);
	tc_reply_free(&r);
	struct vy_program *p = vy_test_graph_affine(2);
	uint64_t g = 0;
	/* A handle this user does not hold (another user's is answered alike). */
	struct gstep foreign[] = {
		{p, NULL, 2, {{"x", "input", 0, NULL}, {"y", "resident", 0x1234567, NULL}}}};
	cr_assert_eq(create(&c, foreign, 1, &g, &r), VY_E_NOT_FOUND);
	cr_expect_str_eq(r.r.error.at, "steps[0].bind.y");
	tc_reply_free(&r);
	struct gstep unbound[] = {{p, NULL, 2, {{"x", "input", 0, NULL}, {"y", "output", 0, NULL}}},
		{p, NULL, 1, {{"x", "input", 0, NULL}}}};
	cr_assert_eq(create(&c, unbound, 2, &g, &r), VY_E_BAD_REQUEST);
	cr_expect_str_eq(r.r.error.at, "steps[1].bind");
	cr_expect(strstr(r.r.error.message, "buffer y of step 1 is not bound"), "%s",
		r.r.error.message);
	tc_reply_free(&r);
	struct gstep unknown_id[] = {{NULL, "00112233445566778899aabbccddeeff", 2,
		{{"x", "input", 0, NULL}, {"y", "output", 0, NULL}}}};
	cr_assert_eq(create(&c, unknown_id, 1, &g, &r), VY_E_NOT_FOUND);
	cr_expect_str_eq(r.r.error.at, "steps[0].program_id");
	tc_reply_free(&r);
	struct gstep good[] = {{p, NULL, 2, {{"x", "input", 0, NULL}, {"y", "output", 0, NULL}}}};
	cr_assert_eq(create(&c, good, 1, &g, &r), 0, "%s", r.r.error.message);
	tc_reply_free(&r);
	uint32_t x[N + 1] = {0};
	cr_assert_eq(run(&c, g, x, sizeof(x), &r), VY_E_BAD_REQUEST, "one element too many");
	cr_expect_str_eq(r.r.error.at, "inputs[0]");
	tc_reply_free(&r);
	cr_assert_eq(run(&c, g ^ 1, x, N * 4, &r), VY_E_NOT_FOUND);
	tc_reply_free(&r);
	cr_assert_eq(graph_op(&c, VY_OP_GRAPH_FREE, g, &r), 0);
	tc_reply_free(&r);
	cr_assert_eq(graph_op(&c, VY_OP_GRAPH_FREE, g, &r), VY_E_NOT_FOUND);
	tc_reply_free(&r);
	cr_assert_eq(t_simple(&c, VY_OP_PING, &r), 0);
	tc_reply_free(&r);
	vy_program_destroy(p);
	tc_close(&c);
}

Test(graphs, graphs_are_listed_counted_limited_and_freed_with_their_connection)
{
	struct tc a;
	struct tc b;
	tc_open(&a, vyd_shared_socket(), "graph-owner");
	tc_open(&b, vyd_shared_socket(), "graph-viewer");
	struct tc_reply r;
	struct tc_msg m;
	struct tc fresh;
	cr_assert_eq(tc_connect(&fresh, vyd_shared_socket()), 0);
	tc_begin(&fresh, &m, VY_OP_HELLO, 1);
	kv_u64(&m.pk, "protocol", 1);
	cr_assert_eq(tc_call(&fresh, &m, &r), 0);
	uint64_t steps_limit = 0;
	uint64_t graphs_limit = 0;
	cr_expect(tc_u64(&r, "limits.max_graph_steps", &steps_limit) && steps_limit == 1024);
	cr_expect(tc_u64(&r, "limits.max_graphs", &graphs_limit) && graphs_limit == 256);
	tc_reply_free(&r);
	tc_close(&fresh);
	uint64_t before = t_stat(&b, "graphs.count");
	struct vy_program *p = vy_test_graph_affine(4);
	struct gstep one[] = {{p, NULL, 2, {{"x", "input", 0, NULL}, {"y", "output", 0, NULL}}}};
	uint64_t g = 0;
	cr_assert_eq(create(&a, one, 1, &g, &r), 0, "%s", r.r.error.message);
	tc_reply_free(&r);
	cr_assert_eq(t_stat(&b, "graphs.count"), before + 1);
	cr_assert_eq(t_simple(&b, VY_OP_GRAPHS, &r), 0);
	uint64_t steps = 0;
	cr_expect(tc_row_u64(&r, "graphs", "graph", g, "steps", &steps) && steps == 1);
	tc_reply_free(&r);
	/* Another connection of the same user may run it. */
	uint32_t x[N] = {1};
	cr_assert_eq(run(&b, g, x, sizeof(x), &r), 0, "%s", r.r.error.message);
	tc_reply_free(&r);
	/* A client that vanishes with a run in flight: the daemon serves on. */
	cr_assert_eq(create(&a, one, 1, &g, &r), 0);
	tc_reply_free(&r);
	tc_begin(&a, &m, VY_OP_GRAPH_RUN, 2);
	kv_u64(&m.pk, "graph", g);
	vy_pack_cstr(&m.pk, "inputs");
	msgpack_pack_array(&m.pk, 1);
	msgpack_pack_bin(&m.pk, sizeof(x));
	msgpack_pack_bin_body(&m.pk, x, sizeof(x));
	cr_assert_eq(tc_send(&a, &m, -1), 0);
	tc_close(&a);
	for (int k = 0; k < 200 && t_stat(&b, "graphs.count") != before; k++) {
		usleep(10000);
	}
	cr_assert_eq(t_stat(&b, "graphs.count"), before, "the owner's graphs went with it");
	cr_assert_eq(run(&b, g, x, sizeof(x), &r), VY_E_NOT_FOUND);
	tc_reply_free(&r);
	vy_program_destroy(p);
	tc_close(&b);
}

/* --- runs queued together --------------------------------------------------------------- */

#define TOGETHER_RUNS 8
#define TOGETHER_UPLOADS 4
#define TOGETHER_SENT (TOGETHER_RUNS + 2 * TOGETHER_UPLOADS)

/* A graph_run of `graph` on input `x`, or on no input where x is NULL. */
static void pack_run(struct tc_msg *m, uint64_t graph, const uint32_t *x)
{
	kv_u64(&m->pk, "graph", graph);
	vy_pack_cstr(&m->pk, "inputs");
	msgpack_pack_array(&m->pk, x ? 1 : 0);
	if (x) {
		msgpack_pack_bin(&m->pk, N * 4);
		msgpack_pack_bin_body(&m->pk, x, N * 4);
	}
}

static void send_upload(struct tc *c, uint64_t handle, const uint32_t *data, uint64_t *id)
{
	struct tc_msg m;
	tc_begin(c, &m, VY_OP_UPLOAD, 3);
	*id = m.id;
	kv_u64(&m.pk, "handle", handle);
	kv_u64(&m.pk, "offset", 0);
	vy_pack_cstr(&m.pk, "data");
	msgpack_pack_bin(&m.pk, N * 4);
	msgpack_pack_bin_body(&m.pk, data, N * 4);
	cr_assert_eq(tc_send(c, &m, -1), 0);
}

/* The single output of a run's reply, N u32, copied into `out`. */
static void output_of(const struct tc_reply *r, uint8_t *out)
{
	const uint8_t *data[1];
	size_t lens[1];
	bool nil[1];
	cr_assert_eq(tc_outputs(r, data, lens, nil, 1), 1);
	cr_assert_eq(lens[0], N * 4);
	memcpy(out, data[0], N * 4);
}

/*
 * Graph runs sent without waiting for their replies, by a daemon whose batches may hold several
 * (batch_cost_us of a second): the device starts the runs of graphs without resident buffers
 * together, queued one behind the other, and each gives the bytes of the same run sent alone;
 * so do a graph's runs that follow each other in one batch, the later waiting for the earlier's
 * recording. A graph over a resident buffer, each of its runs sent right after an upload into
 * that buffer, runs after the upload and reads what it wrote.
 */
Test(graphs, runs_queued_together_give_the_bytes_of_runs_sent_alone)
{
	struct vyd d;
	struct vyd_opts o = {.config = "[devices]\nbatch_cost_us = 1000000\n"};
	cr_assert_eq(vyd_start(&d, &o), 0);
	struct tc c;
	tc_open(&c, d.sock, "graph-together");
	struct gstep steps[10];
	struct vy_program *progs[10];
	chain(steps, progs);
	struct vy_program *res_prog = vy_test_graph_affine(9);
	uint64_t h = alloc(&c, N * 4);
	uint64_t g[3] = {0, 0, 0};
	struct tc_reply r;
	cr_assert_eq(create(&c, steps, 10, &g[0], &r), 0, "%s", r.r.error.message);
	tc_reply_free(&r);
	struct gstep three[3];
	memcpy(three, steps, sizeof(three));
	three[2].binds[1] = (struct gbind){"y", "output", 0, NULL};
	cr_assert_eq(create(&c, three, 3, &g[1], &r), 0, "%s", r.r.error.message);
	tc_reply_free(&r);
	struct gstep over_resident = {
		res_prog, NULL, 2, {{"x", "resident", h, NULL}, {"y", "output", 0, NULL}}};
	cr_assert_eq(create(&c, &over_resident, 1, &g[2], &r), 0, "%s", r.r.error.message);
	tc_reply_free(&r);
	/* The same graph twice in a row (runs 0 and 1), then the two in turn. */
	static const int which[TOGETHER_RUNS] = {0, 0, 1, 0, 1, 0, 1, 1};
	uint32_t x[TOGETHER_RUNS][N];
	uint8_t want[TOGETHER_RUNS][N * 4];
	uint32_t u[TOGETHER_UPLOADS][N];
	uint8_t want_res[TOGETHER_UPLOADS][N * 4];
	uint64_t ignored;
	for (int k = 0; k < TOGETHER_RUNS; k++) {
		for (uint32_t i = 0; i < N; i++) {
			x[k][i] = 0x27D4EB2Fu * (i + 1) + (uint32_t)k * 0x165667B1u;
		}
		cr_assert_eq(
			run(&c, g[which[k]], x[k], sizeof(x[k]), &r), 0, "%s", r.r.error.message);
		output_of(&r, want[k]);
		tc_reply_free(&r);
	}
	for (int j = 0; j < TOGETHER_UPLOADS; j++) {
		for (uint32_t i = 0; i < N; i++) {
			u[j][i] = 0xC2B2AE3Du * (i + 7) ^ (uint32_t)(j + 1) * 0x85EBCA77u;
		}
		send_upload(&c, h, u[j], &ignored);
		cr_assert_eq(tc_recv(&c, &r, 60000), 0);
		cr_assert_eq(tc_code(&r), 0, "%s", r.r.error.message);
		tc_reply_free(&r);
		struct tc_msg m;
		tc_begin(&c, &m, VY_OP_GRAPH_RUN, 2);
		pack_run(&m, g[2], NULL);
		cr_assert_eq(tc_call(&c, &m, &r), 0);
		cr_assert_eq(tc_code(&r), 0, "%s", r.r.error.message);
		output_of(&r, want_res[j]);
		tc_reply_free(&r);
	}
	for (int round = 0; round < 3; round++) {
		/* What each request's reply must hold: a run's bytes, or nothing (an upload). */
		uint64_t ids[TOGETHER_SENT];
		const uint8_t *expect[TOGETHER_SENT];
		int sent = 0;
		for (int k = 0; k < TOGETHER_RUNS; k++) {
			if (k % 2 == 0) {
				int j = k / 2;
				send_upload(&c, h, u[j], &ids[sent]);
				expect[sent++] = NULL;
				struct tc_msg m;
				tc_begin(&c, &m, VY_OP_GRAPH_RUN, 2);
				ids[sent] = m.id;
				expect[sent++] = want_res[j];
				pack_run(&m, g[2], NULL);
				cr_assert_eq(tc_send(&c, &m, -1), 0);
			}
			struct tc_msg m;
			tc_begin(&c, &m, VY_OP_GRAPH_RUN, 2);
			ids[sent] = m.id;
			expect[sent++] = want[k];
			pack_run(&m, g[which[k]], x[k]);
			cr_assert_eq(tc_send(&c, &m, -1), 0);
		}
		for (int n = 0; n < sent; n++) {
			cr_assert_eq(tc_recv(&c, &r, 60000), 0);
			int k = 0;
			while (k < sent && ids[k] != r.r.id) {
				k++;
			}
			cr_assert_lt(k, sent, "a reply to no request (id %llu)",
				(unsigned long long)r.r.id);
			cr_assert_eq(tc_code(&r), 0, "request %d: %s", k, r.r.error.message);
			if (expect[k]) {
				uint8_t got[N * 4];
				output_of(&r, got);
				cr_assert_arr_eq(got, expect[k], sizeof(got),
					"round %d, request %d: queued together, the graph gave "
					"other bytes",
					round, k);
			}
			tc_reply_free(&r);
		}
	}
	cr_assert_eq(t_simple(&c, VY_OP_STATS, &r), 0);
	uint64_t together = 0;
	cr_assert(tc_row_u64(&r, "devices", "index", 0, "started_together", &together));
	cr_expect_geq(together, 2, "no two graph runs were started together");
	printf("graphs: %d rounds of %d runs of two graphs and %d uploads each followed by a run "
	       "over the buffer, queued together: the bytes of runs sent alone; %llu jobs "
	       "started together\n",
		3, TOGETHER_RUNS, TOGETHER_UPLOADS, (unsigned long long)together);
	tc_reply_free(&r);
	tc_close(&c);
	for (uint32_t i = 0; i < 10; i++) {
		vy_program_destroy(progs[i]);
	}
	vy_program_destroy(res_prog);
	cr_assert_eq(vyd_stop(&d), 0);
	vyd_cleanup(&d);
}
