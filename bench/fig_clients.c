/*
 * Many clients at once (DESIGN.md §10): aggregate tiny dispatches per second with 1, 4, 16 and 64
 * clients, each a connection of its own on a thread of its own keeping a window of requests in
 * flight, with Jain's fairness index over the clients' shares; and the number of connections the
 * daemon holds at once, each having said hello and answered a ping.
 *
 * The anchor of the rate is the raw Vulkan round trip repeated by one thread: what a program
 * gets from the device alone, without sharing it.
 */
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "inproc.h"
#include "programs.h"
#include "raw_vulkan.h"
#include "report.h"
#include "session.h"

#define N VY_BENCH_TINY_N
#define WARMUP_NS 200000000u
#define RAW_RATE_NS 500000000u
/* The daemon's batch_max by default. */
#define BACKEND_BATCH 64u

struct worker {
	struct vy_client *c;
	uint32_t in[N];
	struct vy_dispatch_input input;
	struct vy_dispatch_args args;
	uint32_t window;
	atomic_uint_fast64_t done;
	atomic_bool *stop;
	atomic_bool *go;
	int rc;
	struct vy_err err;
	pthread_t thread;
	bool started;
};

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
	while (nanosleep(&ts, &ts) != 0) {
	}
}

static void on_done(struct vy_client *c, uint64_t id, struct vy_reply *reply,
	const struct vy_error *error, void *user)
{
	struct worker *w = user;
	if (!reply) {
		if (w->rc == 0) {
			w->rc = vy_bench_session_fail(&w->err, "dispatch", error);
		}
		return;
	}
	size_t len = 0;
	const uint32_t *out = vy_reply_output(reply, 0, &len);
	for (uint32_t i = 0; w->rc == 0 && i < N; i++) {
		if (!out || len != sizeof(w->in) || out[i] != w->in[i] + 1) {
			w->rc = vy_bench_wrong(&w->err, "vyred tiny dispatch", "element %u", i);
		}
	}
	vy_reply_destroy(reply);
	atomic_fetch_add(&w->done, 1);
	if (w->rc == 0 && !atomic_load(w->stop)) {
		struct vy_error e;
		if (vy_dispatch_start(c, &w->args, on_done, w, NULL, &e) != 0) {
			w->rc = vy_bench_session_fail(&w->err, "dispatch", &e);
		}
	}
}

static void *work(void *arg)
{
	struct worker *w = arg;
	if (!w->c) {
		return NULL;
	}
	while (!atomic_load(w->go)) {
		sleep_ns(100000);
	}
	for (uint32_t i = 0; i < w->window && w->rc == 0 && !atomic_load(w->stop); i++) {
		struct vy_error e;
		if (vy_dispatch_start(w->c, &w->args, on_done, w, NULL, &e) != 0) {
			w->rc = vy_bench_session_fail(&w->err, "dispatch", &e);
		}
	}
	while (vy_client_pending(w->c) > 0) {
		struct pollfd p = {.fd = vy_client_fd(w->c), .events = POLLIN};
		poll(&p, 1, 50);
		struct vy_error e;
		if (vy_client_process(w->c, &e) < 0) {
			if (w->rc == 0) {
				w->rc = vy_bench_session_fail(&w->err, "reading replies", &e);
			}
			break;
		}
	}
	return NULL;
}

int vy_bench_rate_measure(struct vy_bench_ctx *ctx, const char *id, uint32_t n,
	struct vy_bench_rate *out, struct vy_err *err)
{
	struct worker *w = calloc(n, sizeof(*w));
	uint64_t *s0 = calloc(n, sizeof(*s0));
	uint64_t *delta = calloc(n, sizeof(*delta));
	if (!w || !s0 || !delta) {
		free(w);
		free(s0);
		free(delta);
		return vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL, "use fewer clients",
			"no memory for %u clients", n);
	}
	atomic_bool stop = false;
	atomic_bool go = false;
	int rc = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct worker *k = &w[i];
		for (uint32_t j = 0; j < N; j++) {
			k->in[j] = vy_bench_hash(((uint64_t)i << 32) + j);
		}
		k->input = vy_input_bytes(k->in, sizeof(k->in));
		k->args = (struct vy_dispatch_args){
			.program_id = id, .inputs = &k->input, .n_inputs = 1};
		k->window = ctx->sizes.clients_window;
		k->stop = &stop;
		k->go = &go;
		atomic_init(&k->done, 0);
		if (rc == 0) {
			rc = vy_bench_session_connect(ctx, "vybench-rate", &k->c, err);
		}
	}
	for (uint32_t i = 0; rc == 0 && i < n; i++) {
		w[i].started = pthread_create(&w[i].thread, NULL, work, &w[i]) == 0;
		if (!w[i].started) {
			rc = vy_err_set(err, VY_E_INTERNAL, NULL, "raise the thread limit",
				"cannot start client thread %u", i);
		}
	}
	/* On failure the threads started still run: they stop at once, as `stop` is set. */
	atomic_store(&stop, rc != 0);
	atomic_store(&go, true);
	sleep_ns(rc ? 0 : WARMUP_NS);
	for (uint32_t i = 0; i < n; i++) {
		s0[i] = atomic_load(&w[i].done);
	}
	uint64_t t0 = vy_bench_now_ns();
	sleep_ns(rc ? 0 : (uint64_t)(ctx->sizes.clients_seconds * 1e9));
	for (uint32_t i = 0; i < n; i++) {
		delta[i] = atomic_load(&w[i].done) - s0[i];
	}
	uint64_t t1 = vy_bench_now_ns();
	atomic_store(&stop, true);
	uint64_t total = 0;
	out->min = UINT64_MAX;
	out->max = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (w[i].started) {
			pthread_join(w[i].thread, NULL);
		}
		if (rc == 0 && w[i].rc) {
			rc = w[i].rc;
			*err = w[i].err;
		}
		vy_client_close(w[i].c);
		total += delta[i];
		out->min = delta[i] < out->min ? delta[i] : out->min;
		out->max = delta[i] > out->max ? delta[i] : out->max;
	}
	out->per_s = (double)total * 1e9 / (double)(t1 - t0);
	out->jain = vy_bench_jain(delta, n);
	free(w);
	free(s0);
	free(delta);
	return rc;
}

/* Round trips per second of the raw tiny kernel from one thread. */
static int raw_rate(struct vy_raw_vk *raw, double *per_s, struct vy_err *err)
{
	uint32_t in[N], out[N];
	for (uint32_t i = 0; i < N; i++) {
		in[i] = vy_bench_hash(i);
	}
	int rc = vy_raw_vk_tiny_prepare(raw, N, false, err);
	uint64_t t0 = vy_bench_now_ns(), t = t0, count = 0;
	while (rc == 0 && t - t0 < RAW_RATE_NS) {
		rc = vy_raw_vk_tiny_run(raw, in, out, false, err);
		count++;
		t = vy_bench_now_ns();
	}
	for (uint32_t i = 0; rc == 0 && i < N; i++) {
		if (out[i] != in[i] + 1) {
			rc = vy_bench_wrong(err, "raw Vulkan tiny kernel", "element %u", i);
		}
	}
	*per_s = (double)count * 1e9 / (double)(t - t0);
	return rc;
}

/*
 * The backend's own rate in the bench's process, the dispatch_rate_16 of the same run as the
 * anchor: batches of BACKEND_BATCH tiny dispatches started together, one batch at a time (what
 * a submit thread that waits for each batch gets) and two in flight.
 */
static int backend_rates(struct vy_bench_ctx *ctx, double rate16, struct vy_err *err)
{
	if (!ctx->inproc) {
		return 0;
	}
	static const struct {
		uint32_t depth;
		const char *key, *name;
	} runs[] = {
		{1, "backend_rate", "tiny/s, backend in-process, one batch at a time"},
		{2, "backend_rate_overlapped", "tiny/s, backend in-process, two batches in flight"},
	};
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		struct vy_bench_inproc_rate got;
		int rc = vy_bench_inproc_rate(ctx->inproc, N, BACKEND_BATCH, runs[i].depth,
			ctx->sizes.clients_seconds, &got, err);
		if (rc) {
			return rc;
		}
		struct vy_bench_figure *f = vy_bench_report_add(ctx->report, runs[i].key,
			runs[i].name, "k/s", got.per_s / 1e3, "dispatch_rate_16", rate16 / 1e3,
			VY_BENCH_GOAL_NONE, 0, NULL);
		vy_bench_figure_note(f,
			"batches of %u started with vy_pipeline_dispatch_async; a dispatch's host "
			"time to start %.2f us, to collect %.2f us",
			BACKEND_BATCH, got.start_ns / 1e3, got.collect_ns / 1e3);
	}
	return 0;
}

int vy_bench_throughput_run(struct vy_bench_ctx *ctx, struct vy_err *err)
{
	static const uint32_t counts[] = {1, 4, 16, 64};
	double anchor = 0;
	int rc = raw_rate(ctx->raw, &anchor, err);
	if (rc) {
		return rc;
	}
	struct vy_error e;
	struct vy_program *p = vy_bench_prog_tiny(N, 1, &e);
	if (!p) {
		return vy_bench_session_fail(err, "tiny program", &e);
	}
	struct vy_client *c = NULL;
	char id[VY_PROGRAM_ID_CHARS];
	rc = vy_bench_session_connect(ctx, "vybench-rate", &c, err);
	if (rc == 0) {
		rc = vy_bench_session_compile(c, p, NULL, id, NULL, err);
	}
	vy_client_close(c);
	vy_program_free(p);
	struct vy_bench_rate rates[4];
	for (size_t i = 0; rc == 0 && i < 4; i++) {
		rc = vy_bench_rate_measure(ctx, id, counts[i], &rates[i], err);
	}
	if (rc) {
		return rc;
	}
	ctx->rate16_per_s = rates[2].per_s;
	for (size_t i = 0; i < 4; i++) {
		char key[48], name[64];
		snprintf(key, sizeof(key), "dispatch_rate_%u", counts[i]);
		snprintf(name, sizeof(name), "tiny dispatches/s, %u client%s", counts[i],
			counts[i] > 1 ? "s" : "");
		bool goal = counts[i] == 16;
		struct vy_bench_figure *f = vy_bench_report_add(ctx->report, key, name, "k/s",
			rates[i].per_s / 1e3, "raw Vulkan 1 thread", anchor / 1e3,
			goal ? VY_BENCH_GOAL_AT_LEAST : VY_BENCH_GOAL_NONE, 200,
			goal ? ">= 200 k/s" : NULL);
		if (i == 0) {
			vy_bench_figure_note(f,
				"%u requests in flight per client, %.1f s each count, after %.1f s "
				"of warm-up",
				ctx->sizes.clients_window, ctx->sizes.clients_seconds,
				WARMUP_NS / 1e9);
		}
	}
	rc = backend_rates(ctx, rates[2].per_s, err);
	for (size_t i = 1; rc == 0 && i < 4; i++) {
		char key[48], name[64];
		snprintf(key, sizeof(key), "fairness_%u", counts[i]);
		snprintf(name, sizeof(name), "fairness (Jain), %u clients", counts[i]);
		struct vy_bench_figure *f = vy_bench_report_add(ctx->report, key, name, "",
			rates[i].jain, NULL, NAN, VY_BENCH_GOAL_NONE, 0, NULL);
		vy_bench_figure_note(f, "per-client dispatches %llu to %llu",
			(unsigned long long)rates[i].min, (unsigned long long)rates[i].max);
	}
	return rc;
}

int vy_bench_clients_run(struct vy_bench_ctx *ctx, struct vy_err *err)
{
	uint32_t n = ctx->sizes.connections;
	struct vy_client **cs = calloc(n, sizeof(*cs));
	uint64_t *ids = calloc(n, sizeof(*ids));
	if (!cs || !ids) {
		free(cs);
		free(ids);
		return vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL, "use fewer connections",
			"no memory for %u connections", n);
	}
	int rc = 0;
	uint32_t open = 0, answered = 0;
	uint64_t t0 = vy_bench_now_ns();
	while (rc == 0 && open < n) {
		rc = vy_bench_session_connect(ctx, "vybench-hold", &cs[open], err);
		open += rc == 0;
	}
	uint64_t t1 = vy_bench_now_ns();
	for (uint32_t i = 0; i < open; i++) {
		struct vy_error e;
		if (vy_call_start(cs[i], "ping", NULL, NULL, &ids[i], &e) != 0 && rc == 0) {
			rc = vy_bench_session_fail(err, "ping", &e);
		}
	}
	for (uint32_t i = 0; i < open; i++) {
		struct vy_error e;
		if (ids[i] && vy_client_wait(cs[i], ids[i], 30000, NULL, &e) == 0) {
			answered++;
		} else if (ids[i] && rc == 0) {
			rc = vy_bench_session_fail(err, "ping", &e);
		}
	}
	uint64_t t2 = vy_bench_now_ns();
	for (uint32_t i = 0; i < open; i++) {
		vy_client_close(cs[i]);
	}
	free(cs);
	free(ids);
	struct vy_bench_figure *f =
		vy_bench_report_add(ctx->report, "connections_held", "connections held at once", "",
			(double)answered, NULL, NAN, VY_BENCH_GOAL_AT_LEAST, 1000, ">= 1000");
	vy_bench_figure_note(f, "%u of %u connections said hello and answered a ping", answered, n);
	if (rc) {
		vy_bench_figure_note(f, "stopped at: %s", err->message);
	}
	f = vy_bench_report_add(ctx->report, "connections_time", "connect + hello, then ping each",
		"ms", (double)(t2 - t0) / 1e6, NULL, NAN, VY_BENCH_GOAL_NONE, 0, NULL);
	vy_bench_figure_note(f, "connect + hello %.1f ms, pings %.1f ms, for %u connections",
		(double)(t1 - t0) / 1e6, (double)(t2 - t1) / 1e6, open);
	return 0;
}
