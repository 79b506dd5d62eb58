/*
 * The caches (DESIGN.md §10): a cold compile of a program no cache has seen, the lookup of a
 * cached one, and the first dispatch after a daemon restart, whose pipeline must come from the
 * disk cache. The anchors are raw Vulkan pipeline creation in this process: shaderc plus
 * vkCreateComputePipelines cold, again through the VkPipelineCache that holds it, and from a
 * saved cache blob and SPIR-V as a restarted process would.
 *
 * A cached lookup costs far less than a round trip through the socket, so it is measured as the
 * difference of two medians on one connection: compile of a cached program minus ping.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "programs.h"
#include "raw_vulkan.h"
#include "report.h"
#include "session.h"

#define N VY_BENCH_TINY_N
#define RAW_RUNS 20u
#define SAMPLES_MAX 64u

struct cache_figs {
	uint64_t cold_wall[SAMPLES_MAX];
	uint64_t cold_daemon[SAMPLES_MAX];
	uint64_t raw_cold[SAMPLES_MAX];
	uint64_t raw_warm[SAMPLES_MAX];
	uint64_t raw_blob[SAMPLES_MAX];
	uint64_t ping_p50, hit_p50;
	uint64_t restart_pipe[SAMPLES_MAX];
	uint64_t restart_daemon[SAMPLES_MAX]; /* the first dispatch's wall_ns: the daemon's part */
	uint64_t restart_wall[SAMPLES_MAX];
	/* The first dispatch's stages (its reply's timing): before the device's queue (the
	 * compile included) and in the backend. */
	uint64_t restart_prepare[SAMPLES_MAX];
	uint64_t restart_backend[SAMPLES_MAX];
	uint64_t ready[SAMPLES_MAX];
	uint32_t from_disk; /* restarts whose pipeline came from the disk cache */
	char outcomes[128];
};

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

/* The raw anchor of cold compile i (odd nonces): shaderc and pipeline creation, cold, warm and
 * from a cache blob. */
static int raw_pipeline(struct vy_bench_ctx *ctx, uint32_t nonce, uint32_t i, struct cache_figs *f,
	struct vy_err *err)
{
	struct vy_raw_vk_pipeline_times t;
	int rc = vy_raw_vk_pipeline_times(ctx->raw, nonce + 2 * i + 1, RAW_RUNS, &t, err);
	if (rc == 0) {
		f->raw_cold[i] = t.cold_ns;
		f->raw_warm[i] = t.warm_ns;
		f->raw_blob[i] = t.blob_ns;
	}
	return rc;
}

/* Cold compile i of a program no cache has seen (even nonces), into *p (the caller frees it). */
static int vyred_cold(struct vy_client *c, uint32_t nonce, uint32_t i, struct vy_program **p,
	struct cache_figs *f, struct vy_err *err)
{
	struct vy_error e;
	char id[VY_PROGRAM_ID_CHARS];
	vy_program_free(*p);
	*p = vy_bench_prog_tiny(N, nonce + 2 * i, &e);
	if (!*p) {
		return vy_bench_session_fail(err, "tiny program", &e);
	}
	struct vy_compile_result res;
	uint64_t t0 = vy_bench_now_ns();
	int rc = vy_bench_session_compile(c, *p, NULL, id, &res, err);
	f->cold_wall[i] = vy_bench_now_ns() - t0;
	f->cold_daemon[i] = res.compile_ns;
	if (rc == 0 && strcmp(res.cache, "miss") != 0) {
		rc = vy_err_set(err, VY_E_INTERNAL, "compile",
			"start the bench with an empty cache folder",
			"a program never sent before was a cache %s", res.cache);
	}
	return rc;
}

/*
 * Cold compiles, each next to its anchor (the anchor first, then vyred's, pair after pair, so
 * that the device's and the host's pace of the moment weigh on both alike), then cached lookups
 * of the last program.
 */
static int vyred_compiles(struct vy_bench_ctx *ctx, struct vy_client *c, uint32_t nonce,
	struct cache_figs *f, struct vy_err *err)
{
	struct vy_program *p = NULL;
	struct vy_error e;
	char id[VY_PROGRAM_ID_CHARS];
	int rc = 0;
	for (uint32_t i = 0; rc == 0 && i < ctx->sizes.cold_compiles; i++) {
		rc = raw_pipeline(ctx, nonce, i, f, err);
		if (rc == 0) {
			rc = vyred_cold(c, nonce, i, &p, f, err);
		}
	}
	uint32_t n = ctx->sizes.lookups;
	uint64_t *ping = calloc(n, sizeof(*ping));
	uint64_t *hit = calloc(n, sizeof(*hit));
	if (rc == 0 && (!ping || !hit)) {
		rc = vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL, "use fewer lookups",
			"no memory for the samples");
	}
	for (uint32_t k = 0; rc == 0 && k < n; k++) {
		uint64_t t0 = vy_bench_now_ns();
		if (vy_ping(c, &e) != 0) {
			rc = vy_bench_session_fail(err, "ping", &e);
			break;
		}
		uint64_t t1 = vy_bench_now_ns();
		struct vy_compile_result res;
		rc = vy_bench_session_compile(c, p, NULL, id, &res, err);
		hit[k] = vy_bench_now_ns() - t1;
		ping[k] = t1 - t0;
		if (rc == 0 && strcmp(res.cache, "hit") != 0) {
			rc = vy_err_set(err, VY_E_INTERNAL, "compile",
				"make sure pipeline_cache_entries is not 0",
				"a program compiled just before was a cache %s", res.cache);
		}
	}
	if (rc == 0) {
		f->ping_p50 = vy_bench_median(ping, n);
		f->hit_p50 = vy_bench_median(hit, n);
	}
	free(ping);
	free(hit);
	vy_program_free(p);
	return rc;
}

/* Restart the daemon on its cache and time the first dispatch of the tiny program. */
static int restart_once(struct vy_bench_ctx *ctx, const struct vy_program *p, uint32_t r,
	struct cache_figs *f, struct vy_err *err)
{
	int rc = vy_bench_daemon_stop(ctx->daemon, err);
	if (rc == 0) {
		rc = vy_bench_daemon_start(ctx->daemon, err);
	}
	f->ready[r] = ctx->daemon->ready_ns;
	struct vy_client *c = NULL;
	if (rc == 0) {
		rc = vy_bench_session_connect(ctx, "vybench-restart", &c, err);
	}
	uint32_t in[N];
	for (uint32_t i = 0; i < N; i++) {
		in[i] = vy_bench_hash(((uint64_t)r << 20) + i);
	}
	struct vy_dispatch_input input = vy_input_bytes(in, sizeof(in));
	struct vy_dispatch_args args = {.program = p, .inputs = &input, .n_inputs = 1};
	struct vy_reply *reply = NULL;
	struct vy_error e;
	uint64_t t0 = vy_bench_now_ns();
	if (rc == 0 && vy_dispatch(c, &args, &reply, &e) != 0) {
		rc = vy_bench_session_fail(err, "first dispatch after restart", &e);
	}
	f->restart_wall[r] = vy_bench_now_ns() - t0;
	if (rc == 0) {
		struct vy_dispatch_timing t;
		f->restart_pipe[r] = vy_reply_timing(reply, &t) ? t.compile_ns : 0;
		const struct vy_value *v = vy_reply_value(reply);
		f->restart_prepare[r] = vy_value_get_u64(v, "timing.prepare_ns", 0);
		f->restart_backend[r] = vy_value_get_u64(v, "timing.backend_ns", 0);
		f->restart_daemon[r] = vy_value_get_u64(v, "timing.wall_ns", 0);
		const char *cache = vy_value_get_str(vy_reply_value(reply), "cache", "?");
		f->from_disk += strcmp(cache, "disk") == 0;
		size_t used = strlen(f->outcomes);
		snprintf(f->outcomes + used, sizeof(f->outcomes) - used, "%s%s", used ? " " : "",
			cache);
		size_t len = 0;
		const uint32_t *out = vy_reply_output(reply, 0, &len);
		for (uint32_t i = 0; rc == 0 && i < N; i++) {
			if (!out || len != sizeof(in) || out[i] != in[i] + 1) {
				rc = vy_bench_wrong(
					err, "first dispatch after restart", "element %u", i);
			}
		}
	}
	vy_reply_destroy(reply);
	vy_client_close(c);
	return rc;
}

static int measure(struct vy_bench_ctx *ctx, struct cache_figs *f, struct vy_err *err)
{
	/* Odd nonces for the raw side, even for vyred: no program is seen twice by either. */
	uint32_t nonce = ((uint32_t)vy_bench_now_ns() ^ ((uint32_t)getpid() << 16)) | 0x10000u;
	nonce &= ~1u;
	struct vy_client *c = NULL;
	int rc = vy_bench_session_connect(ctx, "vybench-cache", &c, err);
	if (rc == 0) {
		rc = vyred_compiles(ctx, c, nonce, f, err);
	}
	struct vy_error e;
	struct vy_program *p = vy_bench_prog_tiny(N, 1, &e);
	char id[VY_PROGRAM_ID_CHARS];
	if (rc == 0 && !p) {
		rc = vy_bench_session_fail(err, "tiny program", &e);
	}
	/* Make sure the restarts have something on disk, whatever ran before. */
	if (rc == 0) {
		rc = vy_bench_session_compile(c, p, NULL, id, NULL, err);
	}
	vy_client_close(c);
	for (uint32_t r = 0; rc == 0 && r < ctx->sizes.restarts; r++) {
		rc = restart_once(ctx, p, r, f, err);
	}
	vy_program_free(p);
	return rc;
}

int vy_bench_cache_run(struct vy_bench_ctx *ctx, struct vy_err *err)
{
	if (ctx->sizes.cold_compiles > SAMPLES_MAX || ctx->sizes.restarts > SAMPLES_MAX) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "sizes",
			"use at most 64 compiles and restarts",
			"%u cold compiles, %u restarts asked for", ctx->sizes.cold_compiles,
			ctx->sizes.restarts);
	}
	struct cache_figs *f = calloc(1, sizeof(*f));
	if (!f) {
		return vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL, "free some memory",
			"no memory for the cache figures");
	}
	int rc = measure(ctx, f, err);
	if (rc) {
		free(f);
		return rc;
	}
	uint32_t nc = ctx->sizes.cold_compiles, nr = ctx->sizes.restarts;
	struct vy_bench_report *r = ctx->report;
	struct vy_bench_figure *row = vy_bench_report_add(r, "cold_compile", "cold compile, vyred",
		"ms", ms(vy_bench_median(f->cold_wall, nc)), "shaderc + pipeline",
		ms(vy_bench_median(f->raw_cold, nc)), VY_BENCH_GOAL_RATIO_AT_MOST, 1.3,
		"ratio <= 1.3");
	vy_bench_figure_note(row,
		"median of %u programs never seen, compile request end to end, each after its "
		"anchor's; the daemon's compile_ns %.2f ms",
		nc, ms(vy_bench_median(f->cold_daemon, nc)));
	double lookup = f->hit_p50 > f->ping_p50 ? (double)(f->hit_p50 - f->ping_p50) / 1e3 : 0;
	row = vy_bench_report_add(r, "cached_lookup", "cached compile lookup", "us", lookup,
		"VkPipelineCache hit", (double)vy_bench_median(f->raw_warm, nc) / 1e3,
		VY_BENCH_GOAL_AT_MOST, 5, "< 5 us");
	vy_bench_figure_note(row, "compile of a cached program p50 %.1f us minus ping p50 %.1f us",
		(double)f->hit_p50 / 1e3, (double)f->ping_p50 / 1e3);
	row = vy_bench_report_add(r, "pipeline_after_restart", "pipeline after restart, vyred",
		"ms", ms(vy_bench_median(f->restart_pipe, nr)), "pipeline cache blob",
		ms(vy_bench_median(f->raw_blob, nc)), VY_BENCH_GOAL_AT_MOST, 1, "< 1 ms");
	vy_bench_figure_note(row,
		"the first dispatch's compile_ns after each of %u restarts; cache outcomes: %s", nr,
		f->outcomes);
	if (f->from_disk != nr) {
		row->status = "miss";
		vy_bench_figure_note(row, "not every pipeline came from the disk cache");
	}
	row = vy_bench_report_add(r, "first_dispatch_after_restart", "first dispatch after restart",
		"ms", ms(vy_bench_median(f->restart_wall, nr)), "warm dispatch",
		ctx->tiny_p50_us / 1e3, VY_BENCH_GOAL_NONE, 0, NULL);
	vy_bench_figure_note(row,
		"program sent whole, end to end; the daemon was ready %.0f ms after its start; "
		"stages (medians): to the device's queue %.3f ms, backend %.3f ms; the daemon's "
		"part %.3f ms; the pipeline's build %.3f ms (at the daemon's start, before it was "
		"ready, where it builds the pipelines of recent programs: warm_pipelines)",
		ms(vy_bench_median(f->ready, nr)), ms(vy_bench_median(f->restart_prepare, nr)),
		ms(vy_bench_median(f->restart_backend, nr)),
		ms(vy_bench_median(f->restart_daemon, nr)),
		ms(vy_bench_median(f->restart_pipe, nr)));
	free(f);
	return 0;
}
