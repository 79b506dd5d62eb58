/*
 * An asynchronous pipeline: 256 dispatches on one connection, a window of them in flight at any
 * time, completions handled by a callback as poll() reports the client's descriptor readable.
 *
 *     cc async_pipeline.c $(pkg-config --cflags --libs vyre) -o async_pipeline
 *     ./async_pipeline [SOCKET]
 *
 * Each request r sends v[i] = r * 1000 + i and expects v[i] * 3 + 1 back. Exits 0 when every
 * reply is right.
 */
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <vy/vyre.h>

#define REQUESTS 256
#define N 1024
#define WINDOW_MAX 32

struct pipeline {
	int done;
	int wrong;
	int failed;
	uint64_t ids[REQUESTS];
};

/* v[i] = v[i] * 3 + 1 for every i < len(v). */
static struct vy_program *build_program(struct vy_error *err)
{
	struct vy_program *p = vy_program_new("triple_plus_one", 64, 1, 1);
	if (vy_program_buffer(p, "v", 0, "read_write", "u32", 0, 0, err) != 0) {
		vy_program_free(p);
		return NULL;
	}
	struct vy_node *early[] = {vy_node_return(p)};
	struct vy_expr *i = vy_expr_var(p, "i");
	struct vy_expr *tripled =
		vy_expr_binary(p, "mul", vy_expr_load(p, "v", i), vy_expr_u32(p, 3));
	struct vy_node *body[] = {
		vy_node_let(p, "i", vy_expr_gid(p, 0)),
		vy_node_if(p, vy_expr_binary(p, "ge", i, vy_expr_len(p, "v")), early, 1, NULL, 0),
		vy_node_store(p, "v", i, vy_expr_binary(p, "add", tripled, vy_expr_u32(p, 1))),
	};
	if (vy_program_entry(p, body, 3, err) != 0) {
		vy_program_free(p);
		return NULL;
	}
	return p;
}

/* Which request an id belongs to (ids grow, but are the daemon's business: look it up). */
static int request_of(const struct pipeline *pl, uint64_t id)
{
	for (int r = 0; r < REQUESTS; r++) {
		if (pl->ids[r] == id) {
			return r;
		}
	}
	return -1;
}

static void on_done(struct vy_client *c, uint64_t id, struct vy_reply *reply,
	const struct vy_error *error, void *user)
{
	(void)c;
	struct pipeline *pl = user;
	pl->done++;
	if (!reply) {
		char text[1024];
		fprintf(stderr, "async_pipeline: request %llu: %s\n", (unsigned long long)id,
			vy_error_text(error, text, sizeof(text)));
		pl->failed++;
		return;
	}
	int r = request_of(pl, id);
	size_t len = 0;
	const uint32_t *v = vy_reply_output(reply, 0, &len);
	if (r < 0 || !v || len != N * 4) {
		pl->wrong++;
	}
	for (uint32_t i = 0; r >= 0 && v && len == N * 4 && i < N; i++) {
		if (v[i] != ((uint32_t)r * 1000 + i) * 3 + 1) {
			pl->wrong++;
			break;
		}
	}
	vy_reply_destroy(reply);
}

static int run(struct vy_client *c, const struct vy_program *p, struct pipeline *pl)
{
	char text[1024];
	struct vy_error err;
	/* Compile once, asynchronously, and wait for that one request. */
	uint64_t compile_id;
	struct vy_reply *compiled = NULL;
	if (vy_compile_start(c, p, NULL, NULL, NULL, &compile_id, &err) != 0 ||
		vy_client_wait(c, compile_id, 60000, &compiled, &err) != 0) {
		fprintf(stderr, "async_pipeline: compile: %s\n",
			vy_error_text(&err, text, sizeof(text)));
		return 1;
	}
	char program_id[VY_PROGRAM_ID_CHARS];
	snprintf(program_id, sizeof(program_id), "%s",
		vy_value_get_str(vy_reply_value(compiled), "program_id", ""));
	vy_reply_destroy(compiled);
	/* Stay under the daemon's in-flight limit, which it announced in hello. */
	uint64_t limit = vy_value_get_u64(vy_client_hello(c), "limits.max_inflight", WINDOW_MAX);
	size_t window = limit < WINDOW_MAX ? (size_t)limit : WINDOW_MAX;
	uint32_t *data = malloc(N * 4);
	int sent = 0;
	while (data && pl->done < REQUESTS && pl->failed == 0) {
		while (sent < REQUESTS && vy_client_pending(c) < window) {
			for (uint32_t i = 0; i < N; i++) {
				data[i] = (uint32_t)sent * 1000 + i;
			}
			struct vy_dispatch_input in[] = {vy_input_bytes(data, N * 4)};
			struct vy_dispatch_args args = {
				.program_id = program_id, .inputs = in, .n_inputs = 1};
			/* The bytes are sent before the call returns: `data` can be reused. */
			if (vy_dispatch_start(c, &args, on_done, pl, &pl->ids[sent], &err) != 0) {
				fprintf(stderr, "async_pipeline: dispatch: %s\n",
					vy_error_text(&err, text, sizeof(text)));
				free(data);
				return 1;
			}
			sent++;
		}
		struct pollfd pfd = {vy_client_fd(c), POLLIN, 0};
		if (poll(&pfd, 1, 60000) <= 0) {
			fprintf(stderr, "async_pipeline: no reply within a minute\n");
			break;
		}
		if (vy_client_process(c, &err) < 0) {
			fprintf(stderr, "async_pipeline: %s\n",
				vy_error_text(&err, text, sizeof(text)));
			break;
		}
	}
	free(data);
	printf("async_pipeline: %d requests, %d done, %d wrong, %d failed, window %zu\n", REQUESTS,
		pl->done, pl->wrong, pl->failed, window);
	return pl->done == REQUESTS && pl->wrong == 0 && pl->failed == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	char text[1024];
	struct vy_error err;
	struct vy_client *c = NULL;
	if (vy_client_connect(argc > 1 ? argv[1] : NULL, "async-pipeline-example", &c, &err) != 0) {
		fprintf(stderr, "async_pipeline: %s\n", vy_error_text(&err, text, sizeof(text)));
		return 1;
	}
	struct vy_program *p = build_program(&err);
	struct pipeline *pl = calloc(1, sizeof(*pl));
	int status = 1;
	if (!p) {
		fprintf(stderr, "async_pipeline: %s\n", vy_error_text(&err, text, sizeof(text)));
	} else if (pl) {
		status = run(c, p, pl);
	}
	free(pl);
	vy_program_free(p);
	vy_client_close(c);
	return status;
}
