/*
 * Graphs through libvyre (vy_graph_*): a chain created from steps named by program_id, run
 * synchronously and asynchronously, listed and freed; the daemon's errors of a step unchanged
 * (code, place, Fix); the client's own refusals before anything is sent.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "lv.h"

#define N 1024

/* y = x * 2 + 1 over N u32 (count fixed, so graph slots get their lengths). */
static struct vy_program *step_program(void)
{
	struct vy_error err;
	struct vy_program *p = vy_program_new("lv_graph_step", 64, 1, 1);
	lv_ok(vy_program_buffer(p, "x", 0, "read_only", "u32", N, 0, &err), &err);
	lv_ok(vy_program_buffer(p, "y", 1, "write_only", "u32", N, 0, &err), &err);
	struct vy_expr *g = vy_expr_gid(p, 0);
	struct vy_expr *v = vy_expr_binary(p, "add",
		vy_expr_binary(p, "mul", vy_expr_load(p, "x", g), vy_expr_u32(p, 2)),
		vy_expr_u32(p, 1));
	struct vy_node *body[] = {vy_node_store(p, "y", vy_expr_gid(p, 0), v)};
	lv_ok(vy_program_entry(p, body, 1, &err), &err);
	return p;
}

static void done(struct vy_client *c, uint64_t id, struct vy_reply *reply,
	const struct vy_error *error, void *user)
{
	*(struct vy_reply **)user = reply;
	cr_assert_null(error);
}

Test(graph, a_chain_by_program_id_runs_listed_and_freed)
{
	struct vy_client *c = lv_connect("lv-graph");
	struct vy_program *p = step_program();
	struct vy_error err;
	struct vy_compile_result compiled;
	lv_ok(vy_compile(c, p, NULL, &compiled, &err), &err);
	struct vy_graph_bind b0[] = {vy_bind_input("x", 0), vy_bind_temp("y", "t")};
	struct vy_graph_bind b1[] = {vy_bind_temp("x", "t"), vy_bind_output("y", 0)};
	struct vy_graph_step steps[] = {
		{.program_id = compiled.program_id, .binds = b0, .n_binds = 2},
		{.program_id = compiled.program_id, .binds = b1, .n_binds = 2},
	};
	struct vy_graph_info g;
	lv_ok(vy_graph_create(c, steps, 2, "lv-chain", &g, &err), &err);
	cr_assert_neq(g.graph, 0);
	cr_assert_eq(g.steps, 2);
	cr_assert_eq(g.inputs, 1);
	cr_assert_eq(g.outputs, 1);
	cr_assert_eq(g.barriers, 1);
	uint32_t x[N];
	for (uint32_t k = 0; k < N; k++) {
		x[k] = k;
	}
	struct vy_dispatch_input in = vy_input_bytes(x, sizeof(x));
	struct vy_dispatch_options timed = {.timing = true, .timeout_ms = 20000};
	struct vy_reply *r = NULL;
	lv_ok(vy_graph_run(c, g.graph, &in, 1, &timed, &r, &err), &err);
	size_t len = 0;
	const uint32_t *y = vy_reply_output(r, 0, &len);
	cr_assert_eq(len, sizeof(x));
	for (uint32_t k = 0; k < N; k++) {
		cr_assert_eq(y[k], (k * 2 + 1) * 2 + 1, "y[%u] = %u", k, y[k]);
	}
	cr_assert_eq(vy_value_len(vy_reply_get(r, "timing.steps_ns")), 2);
	vy_reply_destroy(r);
	/* The same run started asynchronously. */
	struct vy_reply *async = NULL;
	uint64_t id = 0;
	lv_ok(vy_graph_run_start(c, g.graph, &in, 1, NULL, done, &async, &id, &err), &err);
	lv_ok(vy_client_wait(c, id, 20000, NULL, &err), &err);
	cr_assert_not_null(async);
	const uint32_t *ya = vy_reply_output(async, 0, &len);
	cr_assert_eq(len, sizeof(x));
	for (uint32_t k = 0; k < N; k++) {
		cr_assert_eq(ya[k], (k * 2 + 1) * 2 + 1, "async y[%u] = %u", k, ya[k]);
	}
	vy_reply_destroy(async);
	struct vy_reply *list = NULL;
	lv_ok(vy_graphs(c, &list, &err), &err);
	size_t rows = vy_value_len(vy_reply_get(list, "graphs"));
	cr_assert_geq(rows, 1);
	vy_reply_destroy(list);
	lv_ok(vy_graph_free(c, g.graph, &err), &err);
	cr_assert_eq(vy_graph_free(c, g.graph, &err), VY_ERROR_NOT_FOUND);
	vy_program_free(p);
	vy_client_close(c);
}

Test(graph, a_step_error_comes_back_with_its_place_and_fix)
{
	struct vy_client *c = lv_connect("lv-graph-errors");
	struct vy_program *p = step_program();
	struct vy_error err;
	/* Step 1 leaves y unbound. */
	struct vy_graph_bind b0[] = {vy_bind_input("x", 0), vy_bind_output("y", 0)};
	struct vy_graph_bind b1[] = {vy_bind_input("x", 0)};
	struct vy_graph_step steps[] = {
		{.program = p, .binds = b0, .n_binds = 2},
		{.program = p, .binds = b1, .n_binds = 1},
	};
	struct vy_graph_info g;
	cr_assert_eq(vy_graph_create(c, steps, 2, NULL, &g, &err), VY_ERROR_BAD_REQUEST);
	cr_assert_str_eq(err.at, "steps[1].bind");
	cr_assert(strstr(err.message, "buffer y of step 1 is not bound"), "%s", err.message);
	cr_assert_neq(err.fix[0], 0);
	/* Refused in the client: no steps, a temp without a name. */
	cr_assert_eq(vy_graph_create(c, steps, 0, NULL, &g, &err), VY_ERROR_INVALID_ARGUMENT);
	struct vy_graph_bind nameless[] = {vy_bind_input("x", 0), vy_bind_temp("y", NULL)};
	struct vy_graph_step bad[] = {{.program = p, .binds = nameless, .n_binds = 2}};
	cr_assert_eq(vy_graph_create(c, bad, 1, NULL, &g, &err), VY_ERROR_INVALID_ARGUMENT);
	cr_assert_str_eq(err.at, "steps[0]");
	lv_ok(vy_ping(c, &err), &err);
	vy_program_free(p);
	vy_client_close(c);
}
