/*
 * A graph: ten steps captured once and run with one request. Each step computes
 * y[i] = x[i] * 2 + 1 from the previous step's y, through temps that never leave the device;
 * the first reads the graph's input, the last writes its output.
 *
 *     cc graph_chain.c $(pkg-config --cflags --libs vyre) -o graph_chain
 *     ./graph_chain [SOCKET]
 *
 * Exits 0 when every output element equals the ten steps applied on the host.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <vy/vyre.h>

#define N 4096
#define STEPS 10

/* y[i] = x[i] * 2 + 1 for every i < len(y). */
static struct vy_program *build_step(struct vy_error *err)
{
	struct vy_program *p = vy_program_new("double_plus_one", 64, 1, 1);
	if (vy_program_buffer(p, "x", 0, "read_only", "u32", N, 0, err) != 0 ||
		vy_program_buffer(p, "y", 1, "write_only", "u32", N, 0, err) != 0) {
		vy_program_free(p);
		return NULL;
	}
	struct vy_node *early[] = {vy_node_return(p)};
	struct vy_expr *i = vy_expr_var(p, "i");
	struct vy_expr *twice =
		vy_expr_binary(p, "mul", vy_expr_load(p, "x", i), vy_expr_u32(p, 2));
	struct vy_node *body[] = {
		vy_node_let(p, "i", vy_expr_gid(p, 0)),
		vy_node_if(p, vy_expr_binary(p, "ge", i, vy_expr_len(p, "y")), early, 1, NULL, 0),
		vy_node_store(p, "y", i, vy_expr_binary(p, "add", twice, vy_expr_u32(p, 1))),
	};
	if (vy_program_entry(p, body, 3, err) != 0) {
		vy_program_free(p);
		return NULL;
	}
	return p;
}

static int fail(const char *what, const struct vy_error *err)
{
	char text[1024];
	fprintf(stderr, "graph_chain: %s: %s\n", what, vy_error_text(err, text, sizeof(text)));
	return 1;
}

static int run(struct vy_client *c, const struct vy_program *p, uint32_t *host)
{
	struct vy_error err;
	static const char *const temps[STEPS - 1] = {
		"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8"};
	struct vy_graph_bind binds[STEPS][2];
	struct vy_graph_step steps[STEPS];
	for (int s = 0; s < STEPS; s++) {
		binds[s][0] = s == 0 ? vy_bind_input("x", 0) : vy_bind_temp("x", temps[s - 1]);
		binds[s][1] = s == STEPS - 1 ? vy_bind_output("y", 0) : vy_bind_temp("y", temps[s]);
		steps[s] = (struct vy_graph_step){.program = p, .binds = binds[s], .n_binds = 2};
	}
	struct vy_graph_info g;
	if (vy_graph_create(c, steps, STEPS, "graph_chain", &g, &err) != 0) {
		return fail("graph_create", &err);
	}
	printf("graph %016llx: %u steps, %u barriers\n", (unsigned long long)g.graph, g.steps,
		g.barriers);
	for (uint32_t k = 0; k < N; k++) {
		host[k] = k;
	}
	struct vy_dispatch_input in = vy_input_bytes(host, N * 4);
	struct vy_reply *r = NULL;
	if (vy_graph_run(c, g.graph, &in, 1, NULL, &r, &err) != 0) {
		vy_graph_free(c, g.graph, NULL);
		return fail("graph_run", &err);
	}
	size_t len = 0;
	const uint32_t *y = vy_reply_output(r, 0, &len);
	size_t wrong = len == N * 4 ? 0 : N;
	for (uint32_t k = 0; y && k < N && len == N * 4; k++) {
		uint32_t want = k;
		for (int s = 0; s < STEPS; s++) {
			want = want * 2u + 1u;
		}
		wrong += y[k] != want;
	}
	struct vy_dispatch_timing t = {0};
	vy_reply_timing(r, &t);
	if (wrong == 0) {
		printf("graph_chain: %d steps in one request, y[%d] = %u, %llu us in the daemon\n",
			STEPS, N - 1, y[N - 1], (unsigned long long)(t.wall_ns / 1000));
	} else {
		fprintf(stderr, "graph_chain: %zu elements wrong\n", wrong);
	}
	vy_reply_destroy(r);
	vy_graph_free(c, g.graph, NULL);
	return wrong ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct vy_error err;
	struct vy_client *c = NULL;
	if (vy_client_connect(argc > 1 ? argv[1] : NULL, "graph-chain-example", &c, &err) != 0) {
		return fail("connect", &err);
	}
	struct vy_program *p = build_step(&err);
	if (!p) {
		vy_client_close(c);
		return fail("build", &err);
	}
	uint32_t *host = malloc(N * 4);
	int status = host ? run(c, p, host) : 1;
	free(host);
	vy_program_free(p);
	vy_client_close(c);
	return status;
}
