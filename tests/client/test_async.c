/*
 * The asynchronous API: many requests in flight on one connection, completions through callbacks
 * as the descriptor polls readable, waiting for one request, every *_start call, errors delivered
 * to callbacks, and callbacks that start more requests.
 */
#include <criterion/criterion.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "lv.h"

#define REQUESTS 100
#define N 256

struct tally {
	int done;
	int ok;
	int failed;
	int last_code;
	char last_fix[VY_ERROR_FIX_MAX];
	uint64_t first_id;
	uint32_t sums[REQUESTS];
};

/* out = in * 3 + 1 on u32, read_write, sized by its input. */
static struct vy_program *triple(void)
{
	struct vy_error err;
	struct vy_program *p = vy_program_new("lv_triple", 64, 1, 1);
	lv_ok(vy_program_buffer(p, "v", 0, "read_write", "u32", 0, 0, &err), &err);
	struct vy_node *early[] = {vy_node_return(p)};
	struct vy_expr *i = vy_expr_var(p, "i");
	struct vy_node *body[] = {
		vy_node_let(p, "i", vy_expr_gid(p, 0)),
		vy_node_if(p, vy_expr_binary(p, "ge", i, vy_expr_len(p, "v")), early, 1, NULL, 0),
		vy_node_store(p, "v", i,
			vy_expr_binary(p, "add",
				vy_expr_binary(
					p, "mul", vy_expr_load(p, "v", i), vy_expr_u32(p, 3)),
				vy_expr_u32(p, 1))),
	};
	lv_ok(vy_program_entry(p, body, 3, &err), &err);
	return p;
}

static void on_dispatch(struct vy_client *c, uint64_t id, struct vy_reply *reply,
	const struct vy_error *error, void *user)
{
	struct tally *t = user;
	t->done++;
	if (!reply) {
		t->failed++;
		t->last_code = error->code;
		snprintf(t->last_fix, sizeof(t->last_fix), "%s", error->fix);
		return;
	}
	size_t len = 0;
	const uint32_t *v = vy_reply_output(reply, 0, &len);
	uint64_t k = id - t->first_id;
	if (v && len == N * 4 && k < REQUESTS) {
		uint32_t sum = 0;
		for (uint32_t i = 0; i < N; i++) {
			sum += v[i];
		}
		t->sums[k] = sum;
		t->ok++;
	}
	vy_reply_destroy(reply);
}

Test(async, pipelines_many_dispatches_on_one_connection)
{
	struct vy_client *c = lv_connect("lv-async");
	struct vy_program *p = triple();
	struct vy_error err;
	struct vy_compile_result compiled;
	lv_ok(vy_compile(c, p, NULL, &compiled, &err), &err);
	uint64_t window = vy_value_get_u64(vy_client_hello(c), "limits.max_inflight", 8);
	struct tally *t = calloc(1, sizeof(*t));
	uint32_t data[N];
	int sent = 0;
	while (t->done < REQUESTS) {
		while (sent < REQUESTS && vy_client_pending(c) < window) {
			for (uint32_t i = 0; i < N; i++) {
				data[i] = (uint32_t)sent + i;
			}
			struct vy_dispatch_input in[] = {vy_input_bytes(data, sizeof(data))};
			struct vy_dispatch_args args = {
				.program_id = compiled.program_id, .inputs = in, .n_inputs = 1};
			uint64_t id = 0;
			lv_ok(vy_dispatch_start(c, &args, on_dispatch, t, &id, &err), &err);
			if (sent == 0) {
				t->first_id = id;
			}
			cr_assert_eq(id, t->first_id + (uint64_t)sent, "ids grow by one");
			sent++;
		}
		struct pollfd pfd = {vy_client_fd(c), POLLIN, 0};
		cr_assert_gt(poll(&pfd, 1, 60000), 0, "no reply within a minute");
		cr_assert_geq(vy_client_process(c, &err), 0);
	}
	cr_assert_eq(t->ok, REQUESTS, "%d ok, %d failed", t->ok, t->failed);
	for (uint32_t k = 0; k < REQUESTS; k++) {
		uint32_t want = 0;
		for (uint32_t i = 0; i < N; i++) {
			want += (k + i) * 3 + 1;
		}
		cr_assert_eq(t->sums[k], want, "request %u", k);
	}
	cr_assert_eq(vy_client_pending(c), 0);
	cr_assert_eq(vy_client_process(c, &err), 0, "nothing left to complete");
	free(t);
	vy_program_free(p);
	vy_client_close(c);
}

struct seen {
	int calls;
	int code;
	uint64_t id;
	size_t len;
	uint8_t first;
};

static void remember(struct vy_client *c, uint64_t id, struct vy_reply *reply,
	const struct vy_error *error, void *user)
{
	struct seen *s = user;
	s->calls++;
	s->id = id;
	s->code = reply ? 0 : error->code;
	const void *data = vy_value_bin(vy_reply_get(reply, "data"), &s->len);
	if (data && s->len) {
		s->first = *(const uint8_t *)data;
	}
	vy_reply_destroy(reply);
}

Test(async, every_start_call_completes)
{
	struct vy_client *c = lv_connect("lv-starts");
	struct vy_program *p = triple();
	struct vy_error err;
	uint64_t id = 0;
	/* compile without a callback: the reply waits for vy_client_wait. */
	lv_ok(vy_compile_start(c, p, NULL, NULL, NULL, &id, &err), &err);
	struct vy_reply *r = NULL;
	lv_ok(vy_client_wait(c, id, 60000, &r, &err), &err);
	cr_assert_eq(strlen(vy_value_get_str(vy_reply_value(r), "program_id", "")), 32);
	vy_reply_destroy(r);

	uint64_t h = 0;
	lv_ok(vy_buffer_alloc(c, 16, NULL, &h, &err), &err);
	struct seen up = {0};
	struct seen down = {0};
	struct seen stats = {0};
	uint64_t up_id = 0;
	uint64_t down_id = 0;
	uint64_t stats_id = 0;
	lv_ok(vy_buffer_upload_start(c, h, 4, "\x2a\x2b", 2, remember, &up, &up_id, &err), &err);
	lv_ok(vy_buffer_download_start(c, h, 4, UINT64_MAX, remember, &down, &down_id, &err), &err);
	lv_ok(vy_call_start(c, "stats", remember, &stats, &stats_id, &err), &err);
	cr_assert_eq(vy_client_pending(c), 3);
	/* Waiting for a request with a callback runs the callback and answers no reply. */
	r = (struct vy_reply *)1;
	lv_ok(vy_client_wait(c, stats_id, 60000, &r, &err), &err);
	cr_assert_null(r);
	cr_assert_eq(stats.calls, 1);
	cr_assert_eq(stats.id, stats_id);
	/* The daemon may answer in any order: wait for those whose callbacks have not run yet (a
	 * delivered request is no longer pending). */
	if (up.calls == 0) {
		lv_ok(vy_client_wait(c, up_id, 60000, NULL, &err), &err);
	}
	if (down.calls == 0) {
		lv_ok(vy_client_wait(c, down_id, 60000, NULL, &err), &err);
	}
	cr_assert_eq(up.calls, 1);
	cr_assert_eq(up.id, up_id);
	cr_assert_eq(up.code, 0);
	cr_assert_eq(down.calls, 1);
	cr_assert_eq(down.len, 12);
	cr_assert_eq(down.first, 0x2a);
	cr_assert_eq(vy_client_pending(c), 0);

	/* A daemon error reaches the callback with its Fix. */
	struct seen missing = {0};
	lv_ok(vy_buffer_download_start(c, h + 1, 0, 4, remember, &missing, &id, &err), &err);
	lv_ok(vy_client_wait(c, id, 60000, NULL, &err), &err);
	cr_assert_eq(missing.code, VY_ERROR_NOT_FOUND);

	/* A failure without a callback is returned by the wait. */
	lv_ok(vy_buffer_upload_start(c, h, 15, "ab", 2, NULL, NULL, &id, &err), &err);
	cr_assert_eq(vy_client_wait(c, id, 60000, NULL, &err), VY_ERROR_BAD_REQUEST);
	cr_assert(err.fix[0]);
	cr_assert_eq(vy_client_wait(c, 999999, 0, NULL, &err), VY_ERROR_INVALID_ARGUMENT);
	cr_assert_eq(vy_buffer_upload_start(c, h, 0, NULL, 2, NULL, NULL, &id, &err),
		VY_ERROR_INVALID_ARGUMENT);
	cr_assert_eq(vy_call_start(c, "alloc", NULL, NULL, &id, &err), VY_ERROR_INVALID_ARGUMENT);
	vy_program_free(p);
	vy_client_close(c);
}

Test(async, delivers_errors_to_callbacks)
{
	struct vy_client *c = lv_connect("lv-async-errors");
	struct vy_program *p = lv_trap_program();
	struct tally t = {0};
	int32_t a[64] = {0};
	struct vy_dispatch_input in[] = {vy_input_bytes(a, sizeof(a))};
	struct vy_dispatch_args args = {.program = p, .inputs = in, .n_inputs = 1};
	struct vy_error err;
	uint64_t id = 0;
	lv_ok(vy_dispatch_start(c, &args, on_dispatch, &t, &id, &err), &err);
	lv_ok(vy_client_wait(c, id, 60000, NULL, &err), &err);
	cr_assert_eq(t.done, 1);
	cr_assert_eq(t.failed, 1);
	cr_assert_eq(t.last_code, VY_ERROR_TRAP);
	cr_assert(t.last_fix[0]);
	struct vy_dispatch_args bad = {0};
	cr_assert_eq(
		vy_dispatch_start(c, &bad, on_dispatch, &t, &id, &err), VY_ERROR_INVALID_ARGUMENT);
	cr_assert_eq(vy_client_pending(c), 0, "a refused start leaves nothing pending");
	vy_program_free(p);
	vy_client_close(c);
}

struct relay {
	int left;
	int done;
};

static void relay_on(struct vy_client *c, uint64_t id, struct vy_reply *reply,
	const struct vy_error *error, void *user)
{
	struct relay *r = user;
	r->done++;
	vy_reply_destroy(reply);
	if (r->left > 0) {
		r->left--;
		cr_assert_eq(vy_call_start(c, "ping", relay_on, r, NULL, NULL), 0);
	}
}

Test(async, callbacks_may_start_requests)
{
	struct vy_client *c = lv_connect("lv-relay");
	struct relay r = {.left = 4};
	struct vy_error err;
	lv_ok(vy_call_start(c, "ping", relay_on, &r, NULL, &err), &err);
	while (vy_client_pending(c) > 0) {
		struct pollfd pfd = {vy_client_fd(c), POLLIN, 0};
		cr_assert_gt(poll(&pfd, 1, 60000), 0);
		cr_assert_geq(vy_client_process(c, &err), 0);
	}
	cr_assert_eq(r.done, 5);
	vy_client_close(c);
}

Test(async, close_abandons_pending_requests)
{
	struct vy_client *c = lv_connect("lv-abandon");
	struct seen s = {0};
	struct vy_error err;
	for (int k = 0; k < 8; k++) {
		lv_ok(vy_call_start(c, "stats", remember, &s, NULL, &err), &err);
		lv_ok(vy_call_start(c, "ping", NULL, NULL, NULL, &err), &err);
	}
	vy_client_close(c);
	cr_assert_eq(s.calls, 0, "no callback runs after close");
}
