/*
 * A chain of dispatches that never leaves the device: two resident buffers, a program compiled
 * once, ten dispatches that add `a` into `b` in place (outputs_to sends the output back into b),
 * one download at the end.
 *
 *     cc resident_chain.c $(pkg-config --cflags --libs vyre) -o resident_chain
 *     ./resident_chain [SOCKET]
 *
 * Exits 0 when b ends as 10 * a.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <vy/vyre.h>

#define N 4096
#define STEPS 10

/* b[i] = b[i] + a[i] for every i < len(b). */
static struct vy_program *build_accumulate(struct vy_error *err)
{
	struct vy_program *p = vy_program_new("accumulate", 64, 1, 1);
	if (vy_program_buffer(p, "a", 0, "read_only", "u32", 0, 0, err) != 0 ||
		vy_program_buffer(p, "b", 1, "read_write", "u32", 0, 0, err) != 0) {
		vy_program_free(p);
		return NULL;
	}
	struct vy_node *early[] = {vy_node_return(p)};
	struct vy_expr *i = vy_expr_var(p, "i");
	struct vy_node *body[] = {
		vy_node_let(p, "i", vy_expr_gid(p, 0)),
		vy_node_if(p, vy_expr_binary(p, "ge", i, vy_expr_len(p, "b")), early, 1, NULL, 0),
		vy_node_store(p, "b", i,
			vy_expr_binary(p, "add", vy_expr_load(p, "b", i), vy_expr_load(p, "a", i))),
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
	fprintf(stderr, "resident_chain: %s: %s\n", what, vy_error_text(err, text, sizeof(text)));
	return 1;
}

static int run(struct vy_client *c, const struct vy_program *p, uint32_t *host)
{
	struct vy_error err;
	struct vy_compile_result compiled;
	if (vy_compile(c, p, NULL, &compiled, &err) != 0) {
		return fail("compile", &err);
	}
	printf("compiled %s (cache %s, %llu us)\n", compiled.program_id, compiled.cache,
		(unsigned long long)(compiled.compile_ns / 1000));
	uint64_t a = 0;
	uint64_t b = 0;
	for (uint32_t k = 0; k < N; k++) {
		host[k] = k;
	}
	int rc = vy_buffer_alloc(c, N * 4, NULL, &a, &err);
	if (rc == 0) {
		rc = vy_buffer_alloc(c, N * 4, NULL, &b, &err);
	}
	if (rc == 0) {
		rc = vy_buffer_upload(c, a, 0, host, N * 4, &err);
	}
	if (rc != 0) {
		fail("alloc and upload", &err);
	}
	/* b starts zeroed by the daemon; each step adds a into it. */
	struct vy_dispatch_input in[] = {vy_input_resident(a), vy_input_resident(b)};
	uint64_t to[] = {b};
	struct vy_dispatch_args args = {.program_id = compiled.program_id,
		.inputs = in,
		.n_inputs = 2,
		.outputs_to = to,
		.n_outputs_to = 1};
	uint64_t wall = 0;
	for (int step = 0; rc == 0 && step < STEPS; step++) {
		struct vy_reply *r = NULL;
		rc = vy_dispatch(c, &args, &r, &err);
		struct vy_dispatch_timing t;
		if (rc == 0 && vy_reply_timing(r, &t)) {
			wall += t.wall_ns;
		}
		if (rc == 0 && vy_reply_output(r, 0, NULL) != NULL) {
			fprintf(stderr,
				"resident_chain: the output came back instead of staying\n");
			rc = 1;
		}
		vy_reply_destroy(r);
		if (rc < 0) {
			fail("dispatch", &err);
		}
	}
	if (rc == 0 && vy_buffer_download(c, b, 0, host, N * 4, &err) != 0) {
		rc = fail("download", &err);
	}
	size_t wrong = 0;
	for (uint32_t k = 0; rc == 0 && k < N; k++) {
		wrong += host[k] != STEPS * k;
	}
	if (rc == 0 && wrong == 0) {
		printf("resident_chain: %d dispatches, b[%d] = %u, %llu us in the daemon\n", STEPS,
			N - 1, host[N - 1], (unsigned long long)(wall / 1000));
	} else if (rc == 0) {
		fprintf(stderr, "resident_chain: %zu elements wrong\n", wrong);
		rc = 1;
	}
	vy_buffer_free(c, a, NULL);
	vy_buffer_free(c, b, NULL);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct vy_error err;
	struct vy_client *c = NULL;
	if (vy_client_connect(argc > 1 ? argv[1] : NULL, "resident-chain-example", &c, &err) != 0) {
		return fail("connect", &err);
	}
	struct vy_program *p = build_accumulate(&err);
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
