/*
 * The tiny warm dispatch (DESIGN.md §10): y[i] = x[i] + 1 over 64 u32, end to end through vyred
 * with libvyre's synchronous vy_dispatch, against the raw Vulkan round trip (submit, then sleep
 * in vkWaitForFences: the anchor DESIGN.md §10 names; also submit and spin on the fence status,
 * the fastest a single program can wait) and against vyred's backend in this process. Each
 * iteration sends fresh input and checks every output element. The sorted samples of the three
 * sides go to latency.dat for the plot.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inproc.h"
#include "programs.h"
#include "raw_vulkan.h"
#include "report.h"
#include "session.h"

#define N VY_BENCH_TINY_N
#define WARMUP 20u
/* The busy-poll of the client of tiny_p50_busy_poll: longer than a tiny round trip. */
#define VY_BENCH_BUSY_POLL_US 200u

static void fill(uint32_t *in, uint32_t it)
{
	for (uint32_t i = 0; i < N; i++) {
		in[i] = vy_bench_hash((uint64_t)it * N + i);
	}
}

static int check(
	const char *what, const uint32_t *in, const uint32_t *out, size_t len, struct vy_err *err)
{
	if (len != N * 4) {
		return vy_bench_wrong(err, what, "%zu output bytes, want %u", len, N * 4);
	}
	for (uint32_t i = 0; i < N; i++) {
		if (out[i] != in[i] + 1) {
			return vy_bench_wrong(
				err, what, "y[%u] = %u, want %u", i, out[i], in[i] + 1);
		}
	}
	return 0;
}

/* The sample series of the tiny figures (see vy_bench_tiny_run). */
#define SERIES 7

/*
 * The stages of a dispatch by program id, each a series: the daemon's own part (its timing's
 * wall_ns), the four stages its reply names (protocol.md: prepare, queue, backend, hand-back),
 * the rest of wall_ns (packing the reply), and what the client saw beyond wall_ns (libvyre
 * encoding the request, the socket both ways, both wake-ups, decoding the reply).
 */
enum { ST_WALL, ST_PREPARE, ST_QUEUE, ST_BACKEND, ST_HANDBACK, ST_REPLY, ST_OUTSIDE, STAGES };
static const char *const stage_key[STAGES] = {NULL, "timing.prepare_ns", "timing.queue_ns",
	"timing.backend_ns", "timing.handback_ns", NULL, NULL};

/* Split one reply's wall time into its stages (sample `k` of each series). */
static void stages_of(
	const struct vy_reply *r, uint64_t total, uint64_t *const stage[STAGES], uint32_t k)
{
	struct vy_dispatch_timing t;
	uint64_t wall = vy_reply_timing(r, &t) && t.wall_ns != VY_TIME_NONE ? t.wall_ns : 0;
	uint64_t named = 0;
	for (int i = ST_PREPARE; i <= ST_HANDBACK; i++) {
		stage[i][k] = vy_value_get_u64(vy_reply_value(r), stage_key[i], 0);
		named += stage[i][k];
	}
	stage[ST_WALL][k] = wall;
	stage[ST_REPLY][k] = wall > named ? wall - named : 0;
	stage[ST_OUTSIDE][k] = total > wall ? total - wall : 0;
}

static int raw_tiny(struct vy_raw_vk *raw, uint32_t iterations, bool block, bool staged,
	uint64_t *samples, struct vy_err *err)
{
	uint32_t in[N], out[N];
	int rc = vy_raw_vk_tiny_prepare(raw, N, staged, err);
	for (uint32_t it = 0; rc == 0 && it < WARMUP + iterations; it++) {
		fill(in, it);
		uint64_t t0 = vy_bench_now_ns();
		rc = vy_raw_vk_tiny_run(raw, in, out, block, err);
		uint64_t dt = vy_bench_now_ns() - t0;
		if (rc == 0) {
			rc = check("raw Vulkan tiny kernel", in, out, sizeof(out), err);
		}
		if (it >= WARMUP) {
			samples[it - WARMUP] = dt;
		}
	}
	if (rc == 0) {
		vy_bench_sort(samples, iterations);
	}
	return rc;
}

/*
 * `iterations` dispatches of `args` (by program id or with the whole program), timed on the
 * client; samples sorted; the stages of each (see ST_*) sorted into `stage` when it is not NULL.
 */
static int vyred_tiny(struct vy_client *c, struct vy_dispatch_args *args, uint32_t iterations,
	uint64_t *samples, uint64_t *const *stage, struct vy_err *err)
{
	uint32_t in[N] = {0};
	struct vy_dispatch_input input = vy_input_bytes(in, sizeof(in));
	args->inputs = &input;
	args->n_inputs = 1;
	int rc = 0;
	for (uint32_t it = 0; rc == 0 && it < WARMUP + iterations; it++) {
		fill(in, it);
		struct vy_reply *r = NULL;
		struct vy_error e;
		uint64_t t0 = vy_bench_now_ns();
		int drc = vy_dispatch(c, args, &r, &e);
		uint64_t dt = vy_bench_now_ns() - t0;
		if (drc) {
			rc = vy_bench_session_fail(err, "tiny dispatch", &e);
			break;
		}
		size_t len = 0;
		const uint32_t *out = vy_reply_output(r, 0, &len);
		rc = out ? check("vyred tiny dispatch", in, out, len, err)
			 : vy_bench_wrong(err, "vyred tiny dispatch", "no output");
		if (it >= WARMUP) {
			samples[it - WARMUP] = dt;
			if (stage) {
				stages_of(r, dt, stage, it - WARMUP);
			}
		}
		vy_reply_destroy(r);
	}
	if (rc == 0) {
		vy_bench_sort(samples, iterations);
		for (int i = 0; stage && i < STAGES; i++) {
			vy_bench_sort(stage[i], iterations);
		}
	}
	return rc;
}

static int write_latency(const struct vy_bench_ctx *ctx, uint32_t n, const uint64_t *vy,
	const uint64_t *ip, const uint64_t *raw, const uint64_t *block, struct vy_err *err)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/latency.dat", ctx->out_dir);
	FILE *f = fopen(path, "w");
	if (!f) {
		return vy_err_set(err, VY_E_INTERNAL, path, "make the output folder writable",
			"cannot write %s: %s", path, strerror(errno));
	}
	fprintf(f, "# vybench: tiny dispatch (%u u32, y = x + 1) round trips on %s, sorted\n", N,
		vy_raw_vk_device_name(ctx->raw));
	fprintf(f, "# fraction  vyred_us  backend_in_process_us  raw_vulkan_spin_us  "
		   "raw_vulkan_fence_wait_us\n");
	for (uint32_t i = 0; i < n; i++) {
		fprintf(f, "%.6f %.3f %.3f %.3f %.3f\n", (double)(i + 1) / n, (double)vy[i] / 1e3,
			(double)ip[i] / 1e3, (double)raw[i] / 1e3, (double)block[i] / 1e3);
	}
	if (fclose(f) != 0) {
		return vy_err_set(err, VY_E_INTERNAL, path, "free some disk space",
			"cannot write %s: %s", path, strerror(errno));
	}
	return 0;
}

static double us(uint64_t ns)
{
	return (double)ns / 1e3;
}

static int measure(struct vy_bench_ctx *ctx, uint64_t *const s[SERIES],
	uint64_t *const stage[STAGES], uint64_t *const busy[STAGES], struct vy_err *err)
{
	uint32_t iters = ctx->sizes.tiny_iterations;
	uint32_t sends = ctx->sizes.send_iterations;
	int rc = raw_tiny(ctx->raw, iters, false, false, s[0], err);
	if (rc == 0) {
		rc = raw_tiny(ctx->raw, iters, true, false, s[4], err);
	}
	if (rc == 0) {
		rc = raw_tiny(ctx->raw, iters, false, true, s[5], err);
	}
	if (rc == 0) {
		rc = vy_bench_inproc_tiny(ctx->inproc, N, WARMUP, iters, s[1], err);
	}
	if (rc) {
		return rc;
	}
	struct vy_client *c = NULL;
	struct vy_error e;
	struct vy_program *p = vy_bench_prog_tiny(N, 1, &e);
	if (!p) {
		return vy_bench_session_fail(err, "tiny program", &e);
	}
	char id[VY_PROGRAM_ID_CHARS];
	rc = vy_bench_session_connect(ctx, "vybench-tiny", &c, err);
	if (rc == 0) {
		rc = vy_bench_session_compile(c, p, NULL, id, NULL, err);
	}
	struct vy_dispatch_args by_id = {.program_id = id};
	struct vy_dispatch_args by_program = {.program = p};
	if (rc == 0) {
		rc = vyred_tiny(c, &by_id, iters, s[2], stage, err);
	}
	if (rc == 0) {
		rc = vyred_tiny(c, &by_program, sends, s[3], NULL, err);
	}
	/* By id again, the client busy-polling for its replies (VY_BENCH_BUSY_POLL_US). */
	if (rc == 0) {
		vy_client_set_busy_poll(c, VY_BENCH_BUSY_POLL_US);
		rc = vyred_tiny(c, &by_id, iters, s[6], busy, err);
	}
	vy_client_close(c);
	vy_program_free(p);
	return rc;
}

/*
 * One row per stage of the tiny dispatch by id: its p50 against the whole round trip's p50
 * (the ratio is its share; stage p50s need not add up to the total's); the backend's stage also
 * against the backend in-process, which does the same work without the daemon.
 */
static void stage_rows(struct vy_bench_report *r, uint64_t *const stage[STAGES], uint32_t iters,
	double vy50, double ip50)
{
	static const struct {
		const char *key, *name;
	} rows[STAGES] = {
		[ST_WALL] = {"tiny_stage_daemon", "tiny dispatch, the daemon's part (wall_ns)"},
		[ST_PREPARE] = {"tiny_stage_prepare", "tiny dispatch, frame in to device queue"},
		[ST_QUEUE] = {"tiny_stage_queue", "tiny dispatch, in the device queue"},
		[ST_BACKEND] = {"tiny_stage_backend", "tiny dispatch, backend in the daemon"},
		[ST_HANDBACK] = {"tiny_stage_handback", "tiny dispatch, back to the event loop"},
		[ST_REPLY] = {"tiny_stage_reply", "tiny dispatch, reply packed"},
		[ST_OUTSIDE] = {"tiny_stage_outside",
			"tiny dispatch, outside the daemon (client, socket, wake-ups)"},
	};
	for (int i = 0; i < STAGES; i++) {
		double p50 = us(vy_bench_percentile(stage[i], iters, 50));
		struct vy_bench_figure *f = vy_bench_report_add(r, rows[i].key, rows[i].name, "us",
			p50, "tiny dispatch p50, vyred", vy50, VY_BENCH_GOAL_NONE, 0, NULL);
		vy_bench_figure_note(
			f, "p99 %.1f us", us(vy_bench_percentile(stage[i], iters, 99)));
		if (i == ST_BACKEND) {
			vy_bench_figure_note(f, "the backend in-process p50: %.1f us", ip50);
		}
	}
}

int vy_bench_tiny_run(struct vy_bench_ctx *ctx, struct vy_err *err)
{
	uint32_t iters = ctx->sizes.tiny_iterations;
	uint32_t sends = ctx->sizes.send_iterations;
	/* raw spinning, backend in-process, vyred by id, vyred sending the program, raw sleeping
	 * in vkWaitForFences, raw staged spinning, vyred by id busy-polling; then the stages of
	 * vyred by id, and of vyred by id busy-polling */
	uint64_t *s[SERIES + 2 * STAGES];
	uint64_t **stage = s + SERIES;
	uint64_t **busy = stage + STAGES;
	int rc = 0;
	for (int i = 0; i < SERIES + 2 * STAGES; i++) {
		s[i] = calloc(i == 3 ? sends : iters, sizeof(uint64_t));
		if (!s[i]) {
			rc = vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL, "use fewer iterations",
				"no memory for the samples");
		}
	}
	if (rc == 0) {
		rc = measure(ctx, s, stage, busy, err);
	}
	if (rc == 0) {
		rc = write_latency(ctx, iters, s[2], s[1], s[0], s[4], err);
	}
	if (rc == 0) {
		struct vy_bench_report *r = ctx->report;
		double raw50 = us(vy_bench_percentile(s[0], iters, 50));
		double block50 = us(vy_bench_percentile(s[4], iters, 50));
		double ip50 = us(vy_bench_percentile(s[1], iters, 50));
		double vy50 = us(vy_bench_percentile(s[2], iters, 50));
		ctx->tiny_p50_us = vy50;
		struct vy_bench_figure *f = vy_bench_report_add(r, "tiny_p50",
			"tiny dispatch p50, vyred", "us", vy50, "raw Vulkan fence wait", block50,
			VY_BENCH_GOAL_RATIO_AT_MOST, 1.0, "ratio <= 1.0");
		vy_bench_figure_note(f,
			"%u dispatches of %u u32 by program id; min %.1f us (raw fence wait %.1f "
			"us, "
			"raw spin %.1f us); the daemon's own part p50 %.1f us",
			iters, N, us(s[2][0]), us(s[4][0]), us(s[0][0]),
			us(vy_bench_percentile(stage[ST_WALL], iters, 50)));
		vy_bench_report_add(r, "tiny_p50_vs_spin", "tiny dispatch p50, vyred vs spin", "us",
			vy50, "raw Vulkan spin", raw50, VY_BENCH_GOAL_NONE, 0, NULL);
		vy_bench_report_add(r, "tiny_p99", "tiny dispatch p99, vyred", "us",
			us(vy_bench_percentile(s[2], iters, 99)), "raw Vulkan fence wait",
			us(vy_bench_percentile(s[4], iters, 99)), VY_BENCH_GOAL_NONE, 0, NULL);
		vy_bench_report_add(r, "tiny_p50_vs_backend",
			"tiny dispatch p50, vyred vs in-process", "us", vy50, "backend in-process",
			ip50, VY_BENCH_GOAL_NONE, 0, NULL);
		vy_bench_report_add(r, "tiny_p50_backend", "tiny dispatch p50, backend in-process",
			"us", ip50, "raw Vulkan spin", raw50, VY_BENCH_GOAL_NONE, 0, NULL);
		double staged50 = us(vy_bench_percentile(s[5], iters, 50));
		f = vy_bench_report_add(r, "tiny_p50_raw_staged",
			"tiny dispatch p50, raw Vulkan with y in device memory", "us", staged50,
			"raw Vulkan spin", raw50, VY_BENCH_GOAL_NONE, 0, NULL);
		vy_bench_figure_note(f, "fill, dispatch, copy back to host memory; what a discrete "
					"GPU's safe path costs by hand");
		vy_bench_report_add(r, "tiny_p50_backend_vs_staged",
			"tiny dispatch p50, backend in-process vs raw staged", "us", ip50,
			"raw Vulkan staged spin", staged50, VY_BENCH_GOAL_NONE, 0, NULL);
		vy_bench_report_add(r, "tiny_p50_send_program",
			"tiny dispatch p50, program sent each time", "us",
			us(vy_bench_percentile(s[3], sends, 50)), "by program id", vy50,
			VY_BENCH_GOAL_NONE, 0, NULL);
		stage_rows(r, stage, iters, vy50, ip50);
		f = vy_bench_report_add(r, "tiny_p50_busy_poll",
			"tiny dispatch p50, vyred, client busy-polling", "us",
			us(vy_bench_percentile(s[6], iters, 50)), "backend in-process", ip50,
			VY_BENCH_GOAL_RATIO_AT_MOST, 1.25, "ratio <= 1.25");
		vy_bench_figure_note(f,
			"by program id, the client spinning up to %u us for each reply; p99 %.1f "
			"us; "
			"outside the daemon p50 %.1f us (%.1f us without busy-poll); the daemon's "
			"part p50 %.1f us",
			VY_BENCH_BUSY_POLL_US, us(vy_bench_percentile(s[6], iters, 99)),
			us(vy_bench_percentile(busy[ST_OUTSIDE], iters, 50)),
			us(vy_bench_percentile(stage[ST_OUTSIDE], iters, 50)),
			us(vy_bench_percentile(busy[ST_WALL], iters, 50)));
	}
	for (int i = 0; i < SERIES + 2 * STAGES; i++) {
		free(s[i]);
	}
	return rc;
}
