/*
 * saxpy through vyred: y = a * x + y on 65536 floats, with the program built in C.
 *
 *     cc saxpy.c $(pkg-config --cflags --libs vyre) -o saxpy && ./saxpy [SOCKET]
 *
 * The socket defaults to $VYRED_SOCKET, then /run/vyred/vyred.sock. Exits 0 when every output
 * element is right.
 */
#include <stdio.h>
#include <stdlib.h>

#include <vy/vyre.h>

#define N 65536

/* y[i] = fma(params[0], x[i], y[i]) for every i < len(y). */
static struct vy_program *build_saxpy(struct vy_error *err)
{
	struct vy_program *p = vy_program_new("saxpy", 256, 1, 1);
	vy_program_buffer(p, "params", 0, "uniform", "f32", 1, 0, err);
	vy_program_buffer(p, "x", 1, "read_only", "f32", 0, 0, err);
	vy_program_buffer(p, "y", 2, "read_write", "f32", 0, 0, err);
	struct vy_node *early[] = {vy_node_return(p)};
	struct vy_expr *i = vy_expr_var(p, "i");
	struct vy_node *body[] = {
		vy_node_let(p, "i", vy_expr_gid(p, 0)),
		vy_node_if(p, vy_expr_binary(p, "ge", i, vy_expr_len(p, "y")), early, 1, NULL, 0),
		vy_node_store(p, "y", i,
			vy_expr_fma(p, vy_expr_load(p, "params", vy_expr_u32(p, 0)),
				vy_expr_load(p, "x", i), vy_expr_load(p, "y", i))),
	};
	if (vy_program_entry(p, body, 3, err) != 0 || vy_program_check(p, err) != 0) {
		vy_program_free(p);
		return NULL;
	}
	return p;
}

int main(int argc, char **argv)
{
	char text[1024];
	struct vy_error err;
	struct vy_client *c = NULL;
	if (vy_client_connect(argc > 1 ? argv[1] : NULL, "saxpy-example", &c, &err) != 0) {
		fprintf(stderr, "saxpy: %s\n", vy_error_text(&err, text, sizeof(text)));
		return 1;
	}
	printf("connected to %s (%s)\n", vy_value_get_str(vy_client_hello(c), "server", "?"),
		vy_client_path(c));
	struct vy_program *p = build_saxpy(&err);
	if (!p) {
		fprintf(stderr, "saxpy: %s\n", vy_error_text(&err, text, sizeof(text)));
		vy_client_close(c);
		return 1;
	}
	float a = 2.0f;
	float *x = malloc(N * sizeof(float));
	float *y = malloc(N * sizeof(float));
	for (int k = 0; k < N; k++) {
		x[k] = (float)k;
		y[k] = 1.0f;
	}
	struct vy_dispatch_input in[] = {
		vy_input_bytes(&a, sizeof(a)),
		vy_input_bytes(x, N * sizeof(float)),
		vy_input_bytes(y, N * sizeof(float)),
	};
	struct vy_dispatch_args args = {.program = p, .inputs = in, .n_inputs = 3};
	struct vy_reply *r = NULL;
	int status = 1;
	if (vy_dispatch(c, &args, &r, &err) != 0) {
		fprintf(stderr, "saxpy: %s\n", vy_error_text(&err, text, sizeof(text)));
	} else {
		size_t len = 0;
		const float *out = vy_reply_output(r, 0, &len);
		size_t wrong = 0;
		for (int k = 0; out && len == N * sizeof(float) && k < N; k++) {
			wrong += out[k] != 2.0f * (float)k + 1.0f;
		}
		struct vy_dispatch_timing t;
		vy_reply_timing(r, &t);
		if (out && len == N * sizeof(float) && wrong == 0) {
			printf("saxpy: %d elements right (y[%d] = %g), wall %llu us, cache %s\n", N,
				N - 1, (double)out[N - 1], (unsigned long long)(t.wall_ns / 1000),
				vy_value_get_str(vy_reply_value(r), "cache", "?"));
			status = 0;
		} else {
			fprintf(stderr, "saxpy: %zu bytes back, %zu elements wrong\n", len, wrong);
		}
		vy_reply_destroy(r);
	}
	free(x);
	free(y);
	vy_program_free(p);
	vy_client_close(c);
	return status;
}
