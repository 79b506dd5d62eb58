/*
 * Graphs (docs/graphs.md): the tiny kernel (y = x + 1 over 64 u32) chained through temps and
 * run with one graph_run request.
 *   graph_step            p50 of a 100-step graph run, divided by its steps (device and host
 *                         cost per step), against the same 100 steps recorded by hand in one
 *                         command buffer (bench/raw_vulkan.c's chain): its device time per
 *                         step, the floor a recorded graph can reach on this device
 *   graph_chain10_vs_tiny p50 of a 10-step graph run against the tiny dispatch p50
 *   graph_rate_16         graph steps per second (thousands) with 16 clients each running
 *                         100-step graphs back to back, against the hand-recorded chain run
 *                         back to back by one thread on one queue (its steps per second, the
 *                         host's part included): the most the device gives a chain of tiny
 *                         steps, since chains on several queues or devices take turns on it
 *                         (docs/performance.md)
 * Every run's output is checked (x + steps) before its time counts.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "programs.h"
#include "raw_vulkan.h"
#include "report.h"
#include "session.h"

#define N VY_BENCH_TINY_N
#define WARMUP 5u
#define LONG_STEPS 100u
#define SHORT_STEPS 10u
#define RATE_CLIENTS 16u

/* A chain of `steps` tiny steps by program id: input 0 -> temps -> output 0. */
static int make_graph(
	struct vy_client *c, const char *id, uint32_t steps, uint64_t *graph, struct vy_err *err)
{
	struct vy_graph_bind *binds = calloc(2 * (size_t)steps, sizeof(*binds));
	struct vy_graph_step *st = calloc(steps, sizeof(*st));
	if (!binds || !st) {
		free(binds);
		free(st);
		return vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL, "use fewer steps",
			"no memory for a graph of %u steps", steps);
	}
	/* Two temps in turn: step i reads what step i - 1 wrote. */
	static const char *const temps[2] = {"a", "b"};
	for (uint32_t i = 0; i < steps; i++) {
		binds[2 * i] =
			i == 0 ? vy_bind_input("x", 0) : vy_bind_temp("x", temps[(i - 1) % 2]);
		binds[2 * i + 1] =
			i + 1 == steps ? vy_bind_output("y", 0) : vy_bind_temp("y", temps[i % 2]);
		st[i] = (struct vy_graph_step){
			.program_id = id, .binds = &binds[2 * i], .n_binds = 2};
	}
	struct vy_graph_info info;
	struct vy_error e;
	int rc = vy_graph_create(c, st, steps, "vybench", &info, &e);
	free(binds);
	free(st);
	if (rc) {
		return vy_bench_session_fail(err, "graph_create", &e);
	}
	*graph = info.graph;
	return 0;
}

/* One run of a `steps`-step graph on fresh input, checked; its client-side time in *ns. */
static int run_once(struct vy_client *c, uint64_t graph, uint32_t steps, uint32_t it, uint64_t *ns,
	struct vy_err *err)
{
	uint32_t in[N];
	for (uint32_t i = 0; i < N; i++) {
		in[i] = vy_bench_hash((uint64_t)it * N + i);
	}
	struct vy_dispatch_input input = vy_input_bytes(in, sizeof(in));
	struct vy_reply *r = NULL;
	struct vy_error e;
	uint64_t t0 = vy_bench_now_ns();
	int rc = vy_graph_run(c, graph, &input, 1, NULL, &r, &e);
	*ns = vy_bench_now_ns() - t0;
	if (rc) {
		return vy_bench_session_fail(err, "graph_run", &e);
	}
	size_t len = 0;
	const uint32_t *out = vy_reply_output(r, 0, &len);
	for (uint32_t i = 0; rc == 0 && i < N; i++) {
		if (!out || len != sizeof(in) || out[i] != in[i] + steps) {
			rc = vy_bench_wrong(err, "graph run", "y[%u] = %u, want %u", i,
				out && len == sizeof(in) ? out[i] : 0, in[i] + steps);
		}
	}
	vy_reply_destroy(r);
	return rc;
}

/* p50 of `iterations` runs of a `steps`-step graph. */
static int p50_of(struct vy_client *c, const char *id, uint32_t steps, uint32_t iterations,
	uint64_t *p50, struct vy_err *err)
{
	uint64_t graph = 0;
	uint64_t *s = calloc(iterations, sizeof(*s));
	int rc = s ? make_graph(c, id, steps, &graph, err)
		   : vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL, "use fewer iterations",
			     "no memory for the samples");
	for (uint32_t it = 0; rc == 0 && it < WARMUP + iterations; it++) {
		uint64_t ns = 0;
		rc = run_once(c, graph, steps, it, &ns, err);
		if (it >= WARMUP) {
			s[it - WARMUP] = ns;
		}
	}
	if (rc == 0) {
		*p50 = vy_bench_median(s, iterations);
	}
	if (graph) {
		vy_graph_free(c, graph, NULL);
	}
	free(s);
	return rc;
}

struct rate_client {
	const struct vy_bench_ctx *ctx;
	const char *id;
	uint64_t until_ns;
	uint64_t steps_done;
	int rc;
	struct vy_err err;
};

static void *rate_thread(void *arg)
{
	struct rate_client *rc = arg;
	struct vy_client *c = NULL;
	uint64_t graph = 0;
	rc->rc = vy_bench_session_connect(rc->ctx, "vybench-graph-rate", &c, &rc->err);
	if (rc->rc == 0) {
		rc->rc = make_graph(c, rc->id, LONG_STEPS, &graph, &rc->err);
	}
	for (uint32_t it = 0; rc->rc == 0 && vy_bench_now_ns() < rc->until_ns; it++) {
		uint64_t ns;
		rc->rc = run_once(c, graph, LONG_STEPS, it, &ns, &rc->err);
		rc->steps_done += rc->rc == 0 ? LONG_STEPS : 0;
	}
	if (graph) {
		vy_graph_free(c, graph, NULL);
	}
	vy_client_close(c);
	return NULL;
}

/* Steps per second over RATE_CLIENTS clients for clients_seconds. */
static int rate(const struct vy_bench_ctx *ctx, const char *id, double *per_s, struct vy_err *err)
{
	struct rate_client cl[RATE_CLIENTS];
	pthread_t th[RATE_CLIENTS];
	uint64_t t0 = vy_bench_now_ns();
	uint64_t until = t0 + (uint64_t)(ctx->sizes.clients_seconds * 1e9);
	uint32_t started = 0;
	for (uint32_t k = 0; k < RATE_CLIENTS; k++) {
		cl[k] = (struct rate_client){.ctx = ctx, .id = id, .until_ns = until};
		started += pthread_create(&th[k], NULL, rate_thread, &cl[k]) == 0;
	}
	uint64_t steps = 0;
	int rc = started == RATE_CLIENTS
			 ? 0
			 : vy_err_set(err, VY_E_INTERNAL, NULL, "raise the thread limit",
				   "started %u of %u client threads", started, RATE_CLIENTS);
	for (uint32_t k = 0; k < started; k++) {
		pthread_join(th[k], NULL);
		steps += cl[k].steps_done;
		if (rc == 0 && cl[k].rc) {
			rc = cl[k].rc;
			*err = cl[k].err;
		}
	}
	double secs = (double)(vy_bench_now_ns() - t0) / 1e9;
	*per_s = (double)steps / secs;
	return rc;
}

/*
 * The hand-recorded chain of LONG_STEPS tiny steps: the p50 of its device time per step (its
 * wall time per step where the queue has no timestamps), and the steps per second of its runs
 * back to back (wall time, input and output copies included), each run's results checked.
 */
static int raw_chain(struct vy_raw_vk *raw, uint32_t iterations, double *step_us, double *per_s,
	struct vy_err *err)
{
	int rc = vy_raw_vk_chain_prepare(raw, N, LONG_STEPS, err);
	uint64_t *s = calloc(iterations, sizeof(*s));
	if (!s) {
		return vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL, "free memory",
			"no memory for %u samples", iterations);
	}
	uint32_t in[N], out[N];
	uint64_t t0 = 0;
	for (uint32_t it = 0; rc == 0 && it < iterations + WARMUP; it++) {
		for (uint32_t i = 0; i < N; i++) {
			in[i] = it * 7919u + i;
		}
		struct vy_raw_vk_run run;
		rc = vy_raw_vk_chain_run(raw, in, out, &run, err);
		for (uint32_t i = 0; rc == 0 && i < N; i++) {
			if (out[i] != in[i] + LONG_STEPS) {
				rc = vy_err_set(err, VY_E_INTERNAL, "chain", "report the device",
					"the hand-recorded chain gave %u for element %u, not %u",
					out[i], i, in[i] + LONG_STEPS);
			}
		}
		if (rc == 0 && it == WARMUP) {
			t0 = vy_bench_now_ns();
		}
		if (rc == 0 && it >= WARMUP) {
			s[it - WARMUP] = run.device_ns != UINT64_MAX ? run.device_ns : run.wall_ns;
		}
	}
	if (rc == 0) {
		*step_us = (double)vy_bench_median(s, iterations) / 1e3 / LONG_STEPS;
		*per_s = (double)iterations * LONG_STEPS * 1e9 / (double)(vy_bench_now_ns() - t0);
	}
	free(s);
	return rc;
}

int vy_bench_graph_run(struct vy_bench_ctx *ctx, struct vy_err *err)
{
	struct vy_client *c = NULL;
	struct vy_error e;
	struct vy_program *p = vy_bench_prog_tiny(N, 1, &e);
	if (!p) {
		return vy_bench_session_fail(err, "tiny program", &e);
	}
	char id[VY_PROGRAM_ID_CHARS];
	int rc = vy_bench_session_connect(ctx, "vybench-graph", &c, err);
	if (rc == 0) {
		rc = vy_bench_session_compile(c, p, NULL, id, NULL, err);
	}
	uint32_t iters = ctx->sizes.tiny_iterations / 10 + 20;
	uint64_t long_p50 = 0;
	uint64_t short_p50 = 0;
	double per_s = 0;
	double raw_step_us = NAN;
	double raw_per_s = NAN;
	if (rc == 0 && ctx->raw) {
		rc = raw_chain(ctx->raw, iters, &raw_step_us, &raw_per_s, err);
	}
	if (rc == 0) {
		rc = p50_of(c, id, LONG_STEPS, iters, &long_p50, err);
	}
	if (rc == 0) {
		rc = p50_of(c, id, SHORT_STEPS, iters, &short_p50, err);
	}
	if (rc == 0) {
		rc = rate(ctx, id, &per_s, err);
	}
	vy_client_close(c);
	vy_program_free(p);
	if (rc) {
		return rc;
	}
	struct vy_bench_report *r = ctx->report;
	double step_us = (double)long_p50 / 1e3 / LONG_STEPS;
	struct vy_bench_figure *f = vy_bench_report_add(r, "graph_step",
		"graph step, 100-step replay", "us", step_us, "hand-recorded chain, per step",
		raw_step_us, VY_BENCH_GOAL_AT_MOST, 2.0, "<= 2 us");
	vy_bench_figure_note(f,
		"%u runs of a %u-step graph of the tiny kernel: p50 %.1f us a run; the "
		"same %u "
		"steps recorded by hand: %.2f us each on the device; tiny dispatch p50 "
		"%.1f us",
		iters, LONG_STEPS, (double)long_p50 / 1e3, LONG_STEPS, raw_step_us,
		ctx->tiny_p50_us);
	vy_bench_report_add(r, "graph_chain10_vs_tiny", "10-step graph run p50", "us",
		(double)short_p50 / 1e3, "tiny dispatch p50", ctx->tiny_p50_us,
		VY_BENCH_GOAL_RATIO_AT_MOST, 1.5, "ratio <= 1.5");
	f = vy_bench_report_add(r, "graph_rate_16", "graph steps at 16 clients", "k/s", per_s / 1e3,
		"hand chain back to back, one queue", raw_per_s / 1e3, VY_BENCH_GOAL_AT_LEAST,
		500.0, ">= 500 k/s");
	vy_bench_figure_note(f,
		"%u clients, each running %u-step graphs back to back for %.1f s; the same %u "
		"steps recorded by hand and run back to back by one thread: %.0f k steps/s",
		RATE_CLIENTS, LONG_STEPS, ctx->sizes.clients_seconds, LONG_STEPS, raw_per_s / 1e3);
	return 0;
}
