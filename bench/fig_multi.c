/*
 * Every device at once (DESIGN.md §7.2): a second vyred, opened on every device (--all-devices,
 * default all) beside the one-device daemon of the other figures, measures
 *   dispatch_rate_16_all   16 clients of tiny dispatches, no device pinned, so the daemon spreads
 *                          them over its devices; against dispatch_rate_16 of the same run (one
 *                          device), target ratio >= 1.8 with two devices or more;
 *   stream_bandwidth_all   the elementwise kernel of stream_bandwidth on every device at once: one
 *                          client per device, pinned with config.device, on resident buffers of
 *                          that device, all starting together; the sum of the devices' bandwidths
 *                          (each its median device time, as stream_bandwidth) against
 *                          stream_bandwidth of the same run, target ratio >= 1.9 with two devices
 *                          or more.
 * With one device there is no target (status report) and the note says so. The notes give each
 * device's share of the dispatches, and for the stream the wall-clock aggregate over the window
 * from the first client's start to the last one's end and how long all devices ran together.
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "programs.h"
#include "report.h"
#include "session.h"

#define MAX_DEVICES 16u
#define RUNS_MAX 256u
#define RATE_CLIENTS 16u

/* Per device: how many dispatches the daemon's stats count. */
static int dispatch_counts(struct vy_client *c, uint64_t *out, uint32_t n, struct vy_err *err)
{
	struct vy_reply *st = NULL;
	struct vy_error e;
	if (vy_stats(c, &st, &e) != 0) {
		return vy_bench_session_fail(err, "stats", &e);
	}
	const struct vy_value *devs = vy_reply_get(st, "devices");
	for (uint32_t i = 0; i < n; i++) {
		out[i] = vy_value_get_u64(vy_value_item(devs, i), "dispatches", 0);
	}
	vy_reply_destroy(st);
	return 0;
}

static int rate_all(struct vy_bench_ctx *ctx, uint32_t n, struct vy_client *c, struct vy_err *err)
{
	struct vy_error e;
	struct vy_program *p = vy_bench_prog_tiny(VY_BENCH_TINY_N, 1, &e);
	if (!p) {
		return vy_bench_session_fail(err, "tiny program", &e);
	}
	/* A pipeline on every device before the clock starts. */
	char id[VY_PROGRAM_ID_CHARS];
	int rc = 0;
	for (uint32_t d = 0; rc == 0 && d < n; d++) {
		struct vy_dispatch_options opt = {.has_device = true, .device = d};
		rc = vy_bench_session_compile(c, p, &opt, id, NULL, err);
	}
	vy_program_free(p);
	uint64_t before[MAX_DEVICES], after[MAX_DEVICES];
	struct vy_bench_rate rate;
	if (rc == 0) {
		rc = dispatch_counts(c, before, n, err);
	}
	if (rc == 0) {
		rc = vy_bench_rate_measure(ctx, id, RATE_CLIENTS, &rate, err);
	}
	if (rc == 0) {
		rc = dispatch_counts(c, after, n, err);
	}
	if (rc) {
		return rc;
	}
	bool several = n >= 2;
	struct vy_bench_figure *f = vy_bench_report_add(ctx->report, "dispatch_rate_16_all",
		"tiny dispatches/s, 16 clients, every device", "k/s", rate.per_s / 1e3,
		"dispatch_rate_16", ctx->rate16_per_s / 1e3,
		several ? VY_BENCH_GOAL_RATIO_AT_LEAST : VY_BENCH_GOAL_NONE, 1.8,
		several ? "ratio >= 1.8" : NULL);
	uint64_t total = 0;
	for (uint32_t d = 0; d < n; d++) {
		total += after[d] - before[d];
	}
	char shares[256] = "";
	size_t len = 0;
	for (uint32_t d = 0; d < n && len < sizeof(shares); d++) {
		len += (size_t)snprintf(shares + len, sizeof(shares) - len, "%s%u: %.0f%%",
			d ? ", " : "", d,
			total ? 100.0 * (double)(after[d] - before[d]) / (double)total : 0.0);
	}
	vy_bench_figure_note(f,
		"a daemon on %u device%s (--device %s), no device pinned; dispatches by device %s; "
		"fairness %.3f",
		n, n == 1 ? "" : "s", ctx->all_devices, shares, rate.jain);
	if (!several) {
		vy_bench_figure_note(f, "the daemon opened one device: no target");
	}
	return 0;
}

/* One device's client of the stream figure. */
struct streamer {
	struct vy_bench_ctx *ctx;
	uint32_t device;
	uint64_t n;
	uint32_t runs;
	pthread_barrier_t *start;
	struct vy_client *c;
	uint64_t h[2];
	char id[VY_PROGRAM_ID_CHARS];
	uint64_t median_ns; /* device time where measured, else wall */
	bool device_time;
	uint64_t t0, t1; /* the timed runs, wall clock */
	int rc;
	struct vy_err err;
	pthread_t thread;
	bool started;
};

/* Connect, compile on the device, and fill x = 1, y = 0 on it. */
static int streamer_prepare(struct streamer *s, float *host)
{
	struct vy_error e;
	struct vy_program *p = vy_bench_prog_stream((uint32_t)s->n, &e);
	if (!p) {
		return vy_bench_session_fail(&s->err, "stream program", &e);
	}
	struct vy_dispatch_options opt = {.has_device = true, .device = s->device};
	int rc = vy_bench_session_connect(s->ctx, "vybench-stream-all", &s->c, &s->err);
	if (rc == 0) {
		rc = vy_bench_session_compile(s->c, p, &opt, s->id, NULL, &s->err);
	}
	vy_program_free(p);
	size_t bytes = (size_t)s->n * 4;
	for (int b = 0; rc == 0 && b < 2; b++) {
		for (uint64_t i = 0; i < s->n; i++) {
			host[i] = b == 0 ? 1.0f : 0.0f;
		}
		if (vy_buffer_alloc_on(s->c, bytes, NULL, &opt, &s->h[b], &e) != 0 ||
			vy_buffer_upload(s->c, s->h[b], 0, host, bytes, &e) != 0) {
			rc = vy_bench_session_fail(&s->err, "resident buffer", &e);
		}
	}
	return rc;
}

/*
 * The runs: warm-up runs for VY_BENCH_WARM_NS (every device busy together, so that each GPU's
 * clocks have risen before the clock starts: one run after an idle spell ran at 60 % of the
 * device's bandwidth on one of two H200s), then `runs` timed; then y's tail checked: it holds the
 * count.
 */
static int streamer_runs(struct streamer *s, float *host)
{
	struct vy_dispatch_input in[2] = {vy_input_resident(s->h[0]), vy_input_resident(s->h[1])};
	struct vy_dispatch_options opt = {.has_device = true, .device = s->device, .timing = true};
	struct vy_dispatch_args args = {.program_id = s->id,
		.inputs = in,
		.n_inputs = 2,
		.outputs_to = &s->h[1],
		.n_outputs_to = 1,
		.options = &opt};
	uint64_t t[RUNS_MAX];
	int rc = 0;
	uint32_t warm = 0;
	uint64_t warm_from = vy_bench_now_ns();
	for (uint32_t it = 0; rc == 0 && it < warm + s->runs; it++) {
		struct vy_reply *r = NULL;
		struct vy_error e;
		uint64_t w0 = vy_bench_now_ns();
		if (it == warm && w0 - warm_from < VY_BENCH_WARM_NS) {
			warm++;
		} else if (it == warm) {
			s->t0 = w0;
		}
		if (vy_dispatch(s->c, &args, &r, &e) != 0) {
			rc = vy_bench_session_fail(&s->err, "dispatch", &e);
			break;
		}
		uint64_t w1 = vy_bench_now_ns();
		s->t1 = w1;
		if (it >= warm) {
			t[it - warm] = vy_bench_session_time(r, w1 - w0, &s->device_time);
		}
		vy_reply_destroy(r);
	}
	size_t bytes = (size_t)s->n * 4;
	size_t check = bytes < 4096 ? bytes : 4096;
	struct vy_error e;
	if (rc == 0 && vy_buffer_download(s->c, s->h[1], bytes - check, host, check, &e) != 0) {
		rc = vy_bench_session_fail(&s->err, "download", &e);
	}
	for (size_t i = 0; rc == 0 && i < check / 4; i++) {
		if (host[i] != (float)(warm + s->runs)) {
			rc = vy_bench_wrong(&s->err, "vyred stream on every device",
				"device %u: y holds %g, want %u", s->device, (double)host[i],
				warm + s->runs);
		}
	}
	if (rc == 0) {
		s->median_ns = vy_bench_median(t, s->runs);
	}
	return rc;
}

static void *streamer_main(void *arg)
{
	struct streamer *s = arg;
	float *host = malloc((size_t)s->n * 4);
	s->rc = host ? streamer_prepare(s, host)
		     : vy_err_set(&s->err, VY_E_OUT_OF_MEMORY, NULL, "use smaller sizes",
			       "no memory for %" PRIu64 " elements", s->n);
	/* Every client waits for the others, ready or failed, so that all start together. */
	pthread_barrier_wait(s->start);
	if (s->rc == 0) {
		s->rc = streamer_runs(s, host);
	}
	for (int b = 0; b < 2; b++) {
		if (s->h[b]) {
			vy_buffer_free(s->c, s->h[b], NULL);
		}
	}
	vy_client_close(s->c);
	free(host);
	return NULL;
}

static int stream_all(struct vy_bench_ctx *ctx, uint32_t n, struct vy_err *err)
{
	struct streamer s[MAX_DEVICES];
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, n);
	uint32_t runs = ctx->sizes.runs < RUNS_MAX ? ctx->sizes.runs : RUNS_MAX;
	int rc = 0;
	for (uint32_t d = 0; d < n; d++) {
		s[d] = (struct streamer){.ctx = ctx,
			.device = d,
			.n = ctx->sizes.stream_elements,
			.runs = runs,
			.start = &start};
	}
	for (uint32_t d = 0; d < n; d++) {
		s[d].started = pthread_create(&s[d].thread, NULL, streamer_main, &s[d]) == 0;
		if (!s[d].started) {
			/* The barrier counts n threads: without them all, none may wait on it. */
			fprintf(stderr, "vybench: cannot start the stream client of device %u\n",
				d);
			abort();
		}
	}
	for (uint32_t d = 0; d < n; d++) {
		pthread_join(s[d].thread, NULL);
		if (rc == 0 && s[d].rc) {
			rc = s[d].rc;
			*err = s[d].err;
		}
	}
	pthread_barrier_destroy(&start);
	if (rc) {
		return rc;
	}
	double moved = 12.0 * (double)ctx->sizes.stream_elements;
	double sum = 0;
	uint64_t first = UINT64_MAX, last = 0, all_from = 0, all_to = UINT64_MAX;
	bool device_time = true;
	char per[256] = "";
	size_t len = 0;
	for (uint32_t d = 0; d < n; d++) {
		double gbps = moved / (double)s[d].median_ns;
		sum += gbps;
		device_time = device_time && s[d].device_time;
		first = s[d].t0 < first ? s[d].t0 : first;
		last = s[d].t1 > last ? s[d].t1 : last;
		all_from = s[d].t0 > all_from ? s[d].t0 : all_from;
		all_to = s[d].t1 < all_to ? s[d].t1 : all_to;
		if (len < sizeof(per)) {
			len += (size_t)snprintf(
				per + len, sizeof(per) - len, "%s%u: %.3g", d ? ", " : "", d, gbps);
		}
	}
	double wall_gbps = moved * runs * n / (double)(last - first);
	double together = all_to > all_from ? (double)(all_to - all_from) / 1e6 : 0;
	bool several = n >= 2;
	struct vy_bench_figure *f = vy_bench_report_add(ctx->report, "stream_bandwidth_all",
		"elementwise f32 y=x+y, every device", "GB/s", sum, "stream_bandwidth",
		ctx->stream_gbps, several ? VY_BENCH_GOAL_RATIO_AT_LEAST : VY_BENCH_GOAL_NONE, 1.9,
		several ? "ratio >= 1.9" : NULL);
	vy_bench_figure_note(f,
		"%u device%s (--device %s), %" PRIu64 " elements each, median of %u timed by %s; "
		"GB/s by device %s; wall clock over all %.3g GB/s; all ran together %.1f of "
		"%.1f ms",
		n, n == 1 ? "" : "s", ctx->all_devices, ctx->sizes.stream_elements, runs,
		device_time ? "device" : "wall", per, wall_gbps, together,
		(double)(last - first) / 1e6);
	if (!several) {
		vy_bench_figure_note(f, "the daemon opened one device: no target");
	} else {
		ctx->stream_all_gbps = sum;
	}
	return 0;
}

int vy_bench_all_run(struct vy_bench_ctx *ctx, struct vy_err *err)
{
	char log[4096];
	snprintf(log, sizeof(log), "%s/vyred.log", ctx->out_dir);
	struct vy_bench_daemon d;
	int rc = vy_bench_daemon_init(&d, ctx->daemon->bin, log, err);
	if (rc) {
		return rc;
	}
	if (!vy_bench_daemon_args(&d, ctx->all_devices, ctx->sets, ctx->n_sets)) {
		vy_bench_daemon_finish(&d);
		return vy_err_set(err, VY_E_BAD_REQUEST, "-o", "give fewer -o settings",
			"too many daemon arguments");
	}
	rc = vy_bench_daemon_start(&d, err);
	/* The figures below talk to this daemon: a context that names it. */
	struct vy_bench_ctx all = *ctx;
	all.daemon = &d;
	struct vy_client *c = NULL;
	if (rc == 0) {
		rc = vy_bench_session_connect(&all, "vybench-all", &c, err);
	}
	uint32_t n = 0;
	if (rc == 0) {
		n = (uint32_t)vy_value_len(vy_value_get(vy_client_hello(c), "devices"));
		if (n == 0 || n > MAX_DEVICES) {
			rc = vy_err_set(err, VY_E_INTERNAL, NULL, "run vyred on 1 to 16 devices",
				"the daemon opened %u devices", n);
		}
	}
	if (rc == 0) {
		rc = rate_all(&all, n, c, err);
	}
	if (rc == 0) {
		rc = stream_all(&all, n, err);
		ctx->stream_all_gbps = all.stream_all_gbps; /* for the PyTorch row */
	}
	vy_client_close(c);
	struct vy_err stop_err = {0};
	int stop = vy_bench_daemon_stop(&d, &stop_err);
	if (rc == 0 && stop) {
		*err = stop_err;
		rc = stop;
	}
	vy_bench_daemon_finish(&d);
	return rc;
}
