/*
 * The figures that move data (DESIGN.md §10), each vyred side against its anchor in this run:
 *   stream     y = x + y over f32 on resident buffers (device time) against the hand-written vec4
 *              GLSL kernel, and the backend in-process beside them;
 *   transfer   a large input sent inside the dispatch request (socket) and through an attached
 *              memfd, end to end, against memcpy of the same bytes in this process, and the
 *              socket also against the same bytes through a bare AF_UNIX socket pair between
 *              two threads (the ceiling of any path through a socket);
 *   reduce     the u32 sum of resident elements, IR against the same algorithm in GLSL;
 *   matmul     f32 C = A * B on resident matrices, IR against the same tiling in GLSL.
 * Every result is checked: the stream's y after all runs, the probe's samples of each input, each
 * reduction's sum, sampled entries of C.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "inproc.h"
#include "programs.h"
#include "raw_vulkan.h"
#include "report.h"
#include "session.h"

#define PROBE_SAMPLES 64u
#define MATMUL_SAMPLES 256u

static int no_memory(struct vy_err *err, size_t bytes)
{
	return vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL, "use smaller sizes",
		"no memory for %zu bytes", bytes);
}

static double gbps(double bytes, uint64_t ns)
{
	return bytes / (double)ns;
}

/* --- stream ------------------------------------------------------------------------------ */

static int raw_stream(struct vy_raw_vk *raw, uint64_t n, uint32_t runs, uint64_t *median_ns,
	bool *device, struct vy_err *err)
{
	uint64_t t[VY_BENCH_RUNS_MAX];
	int rc = vy_raw_vk_stream_prepare(raw, n, err);
	for (uint32_t it = 0; rc == 0 && it < runs + 1; it++) {
		struct vy_raw_vk_run run;
		rc = vy_raw_vk_stream_run(raw, &run, err);
		*device = run.device_ns != UINT64_MAX;
		if (it > 0) {
			t[it - 1] = *device ? run.device_ns : run.wall_ns;
		}
	}
	float tail[1024];
	size_t count = n < 1024 ? (size_t)n : 1024;
	if (rc == 0) {
		rc = vy_raw_vk_stream_read(raw, n - count, tail, count, err);
	}
	for (size_t i = 0; rc == 0 && i < count; i++) {
		if (tail[i] != (float)(runs + 1)) {
			rc = vy_bench_wrong(err, "raw Vulkan stream kernel", "y holds %g, want %u",
				(double)tail[i], runs + 1);
		}
	}
	if (rc == 0) {
		*median_ns = vy_bench_median(t, runs);
	}
	return rc;
}

static int vyred_stream(struct vy_bench_ctx *ctx, uint64_t n, uint32_t runs, uint64_t *median_ns,
	uint64_t *wall_ns, bool *device, struct vy_err *err)
{
	size_t bytes = (size_t)n * 4;
	float *host = malloc(bytes);
	if (!host) {
		return no_memory(err, bytes);
	}
	struct vy_error e;
	struct vy_program *p = vy_bench_prog_stream((uint32_t)n, &e);
	struct vy_client *c = NULL;
	uint64_t h[2] = {0, 0};
	char id[VY_PROGRAM_ID_CHARS];
	int rc = p ? 0 : vy_bench_session_fail(err, "stream program", &e);
	if (rc == 0) {
		rc = vy_bench_session_connect(ctx, "vybench-stream", &c, err);
	}
	if (rc == 0) {
		rc = vy_bench_session_compile(c, p, NULL, id, NULL, err);
	}
	for (int b = 0; rc == 0 && b < 2; b++) {
		for (uint64_t i = 0; i < n; i++) {
			host[i] = b == 0 ? 1.0f : 0.0f;
		}
		rc = vy_bench_session_put(c, host, bytes, &h[b], err);
	}
	struct vy_dispatch_input in[2] = {vy_input_resident(h[0]), vy_input_resident(h[1])};
	struct vy_dispatch_options opt = {.timing = true};
	struct vy_dispatch_args args = {.program_id = id,
		.inputs = in,
		.n_inputs = 2,
		.outputs_to = &h[1],
		.n_outputs_to = 1,
		.options = &opt};
	uint32_t made = 0;
	if (rc == 0) {
		rc = vy_bench_session_runs(c, &args, runs, vy_bench_session_output_resident, NULL,
			median_ns, wall_ns, device, &made, err);
	}
	size_t check = bytes < 4096 ? bytes : 4096;
	if (rc == 0 && vy_buffer_download(c, h[1], bytes - check, host, check, &e) != 0) {
		rc = vy_bench_session_fail(err, "download", &e);
	}
	for (size_t i = 0; rc == 0 && i < check / 4; i++) {
		if (host[i] != (float)made) {
			rc = vy_bench_wrong(
				err, "vyred stream", "y holds %g, want %u", (double)host[i], made);
		}
	}
	for (int b = 0; b < 2; b++) {
		if (h[b]) {
			vy_buffer_free(c, h[b], NULL);
		}
	}
	vy_client_close(c);
	vy_program_free(p);
	free(host);
	return rc;
}

int vy_bench_stream_run(struct vy_bench_ctx *ctx, struct vy_err *err)
{
	uint64_t n = ctx->sizes.stream_elements;
	uint32_t runs = ctx->sizes.runs;
	uint64_t raw_ns = 0, ip_ns = 0, vy_ns = 0, vy_wall = 0;
	bool raw_dev = false, ip_dev = false, vy_dev = false;
	int rc = raw_stream(ctx->raw, n, runs, &raw_ns, &raw_dev, err);
	if (rc == 0) {
		rc = vy_bench_inproc_stream(ctx->inproc, n, runs, &ip_ns, &ip_dev, err);
	}
	if (rc == 0) {
		rc = vyred_stream(ctx, n, runs, &vy_ns, &vy_wall, &vy_dev, err);
	}
	if (rc) {
		return rc;
	}
	double moved = 12.0 * (double)n;
	ctx->stream_gbps = gbps(moved, vy_ns);
	struct vy_bench_figure *f = vy_bench_report_add(ctx->report, "stream_bandwidth",
		"elementwise f32 y=x+y, vyred", "GB/s", ctx->stream_gbps, "hand vec4 GLSL",
		gbps(moved, raw_ns), VY_BENCH_GOAL_RATIO_AT_LEAST, 0.9, "ratio >= 0.9");
	vy_bench_figure_note(f,
		"%llu elements on resident buffers, 12 bytes each, median of %u; timed by %s "
		"(vyred), %s (hand), %s (backend); end to end through vyred %.2f GB/s",
		(unsigned long long)n, runs, vy_dev ? "device" : "wall",
		raw_dev ? "device" : "wall", ip_dev ? "device" : "wall", gbps(moved, vy_wall));
	vy_bench_report_add(ctx->report, "stream_bandwidth_backend",
		"elementwise f32, backend in-process", "GB/s", gbps(moved, ip_ns), "hand vec4 GLSL",
		gbps(moved, raw_ns), VY_BENCH_GOAL_NONE, 0, NULL);
	return 0;
}

/* --- transfer ---------------------------------------------------------------------------- */

struct probe_want {
	const uint32_t *words;
	uint64_t stride;
};

static int probe_check(const struct vy_reply *r, const void *want, struct vy_err *err)
{
	const struct probe_want *pw = want;
	size_t len = 0;
	const uint32_t *out = vy_reply_output(r, 0, &len);
	if (!out || len != PROBE_SAMPLES * 4) {
		return vy_bench_wrong(err, "vyred probe", "%zu output bytes", len);
	}
	for (uint32_t i = 0; i < PROBE_SAMPLES; i++) {
		if (out[i] != pw->words[i * pw->stride]) {
			return vy_bench_wrong(err, "vyred input transfer",
				"sample %u is %u, want %u", i, out[i], pw->words[i * pw->stride]);
		}
	}
	return 0;
}

/* The runs of one path: before each, the probed words get new values, so every run must carry
 * this run's bytes. */
/* The runs of one input path; the medians of the client's time in *median_ns and of the
 * stages in *med. */
static int transfer_runs(struct vy_client *c, struct vy_dispatch_args *args, uint32_t *words,
	uint64_t n_words, uint32_t runs, uint64_t *median_ns, struct vy_bench_stages *med,
	struct vy_err *err)
{
	uint64_t stride = n_words / PROBE_SAMPLES;
	struct probe_want want = {words, stride};
	uint64_t t[VY_BENCH_RUNS_MAX], daemon[VY_BENCH_RUNS_MAX], prepare[VY_BENCH_RUNS_MAX],
		backend[VY_BENCH_RUNS_MAX];
	int rc = 0;
	for (uint32_t it = 0; rc == 0 && it < runs + 1; it++) {
		for (uint32_t i = 0; i < PROBE_SAMPLES; i++) {
			words[i * stride] = vy_bench_hash(((uint64_t)(it + 1) << 40) + i);
		}
		uint64_t ns = 0, wall = 0;
		bool device = false;
		struct vy_bench_stages st = {0};
		rc = vy_bench_session_dispatch(
			c, args, probe_check, &want, &ns, &wall, &device, &st, err);
		if (rc == 0 && it > 0) {
			t[it - 1] = wall;
			daemon[it - 1] = st.daemon;
			prepare[it - 1] = st.prepare;
			backend[it - 1] = st.backend;
		}
	}
	if (rc == 0) {
		*median_ns = vy_bench_median(t, runs);
		*med = (struct vy_bench_stages){vy_bench_median(daemon, runs),
			vy_bench_median(prepare, runs), vy_bench_median(backend, runs)};
	}
	return rc;
}

static int memcpy_runs(uint32_t *dst, const uint32_t *src, size_t bytes, uint32_t runs,
	uint64_t *median_ns, struct vy_err *err)
{
	uint64_t t[VY_BENCH_RUNS_MAX];
	for (uint32_t it = 0; it < runs + 1; it++) {
		uint64_t t0 = vy_bench_now_ns();
		memcpy(dst, src, bytes);
		uint64_t dt = vy_bench_now_ns() - t0;
		if (it > 0) {
			t[it - 1] = dt;
		}
	}
	if (memcmp(dst, src, bytes < 4096 ? bytes : 4096) != 0) {
		return vy_bench_wrong(err, "memcpy", "the copy differs");
	}
	*median_ns = vy_bench_median(t, runs);
	return 0;
}

struct pair_writer {
	int fd;
	const uint8_t *data;
	size_t len;
	uint32_t runs;
	bool failed;
};

static void *pair_write(void *arg)
{
	struct pair_writer *w = arg;
	for (uint32_t r = 0; r < w->runs && !w->failed; r++) {
		for (size_t off = 0; off < w->len;) {
			ssize_t n = write(w->fd, w->data + off, w->len - off);
			if (n < 0 && errno == EINTR) {
				continue;
			}
			if (n <= 0) {
				w->failed = true;
				break;
			}
			off += (size_t)n;
		}
	}
	return NULL;
}

/* `runs` transfers of `len` bytes from `src` to `dst` through a socket pair, a writer thread on
 * one end and this thread reading the other in 8 MiB reads (as vyred reads a large frame); the
 * median time per transfer in *median_ns. */
static int socket_pair_runs(void *dst, const void *src, size_t len, uint32_t runs,
	uint64_t *median_ns, struct vy_err *err)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
		return vy_err_set(err, VY_E_INTERNAL, NULL, "check the process's descriptor limit",
			"socketpair: %s", strerror(errno));
	}
	struct pair_writer w = {.fd = sv[1], .data = src, .len = len, .runs = runs};
	pthread_t t;
	if (pthread_create(&t, NULL, pair_write, &w) != 0) {
		close(sv[0]);
		close(sv[1]);
		return vy_err_set(err, VY_E_INTERNAL, NULL, "raise the thread limit",
			"cannot start the socket writer");
	}
	uint64_t times[VY_BENCH_RUNS_MAX];
	bool short_read = false;
	for (uint32_t r = 0; r < runs && !short_read; r++) {
		uint64_t t0 = vy_bench_now_ns();
		for (size_t got = 0; got < len;) {
			size_t want = len - got < ((size_t)8 << 20) ? len - got : (size_t)8 << 20;
			ssize_t n = read(sv[0], (uint8_t *)dst + got, want);
			if (n < 0 && errno == EINTR) {
				continue;
			}
			if (n <= 0) {
				short_read = true;
				break;
			}
			got += (size_t)n;
		}
		times[r] = vy_bench_now_ns() - t0;
	}
	close(sv[0]);
	pthread_join(t, NULL);
	close(sv[1]);
	if (short_read || w.failed || memcmp(dst, src, len) != 0) {
		return vy_bench_wrong(err, "socket pair", "the bytes did not arrive whole");
	}
	*median_ns = vy_bench_median(times, runs);
	return 0;
}

static int transfer_measure(struct vy_bench_ctx *ctx, uint32_t *host, uint32_t *copy,
	uint64_t ns[4], struct vy_bench_stages st[2], struct vy_err *err)
{
	size_t bytes = (size_t)ctx->sizes.transfer_bytes;
	uint64_t n_words = bytes / 4;
	uint32_t runs = ctx->sizes.transfer_runs;
	struct vy_error e;
	struct vy_program *p = vy_bench_prog_probe(&e);
	struct vy_client *c = NULL;
	struct vy_region *region = NULL;
	char id[VY_PROGRAM_ID_CHARS];
	int rc = p ? 0 : vy_bench_session_fail(err, "probe program", &e);
	if (rc == 0) {
		rc = vy_bench_session_connect(ctx, "vybench-transfer", &c, err);
	}
	if (rc == 0) {
		rc = vy_bench_session_compile(c, p, NULL, id, NULL, err);
	}
	struct vy_dispatch_input in = vy_input_bytes(host, bytes);
	struct vy_dispatch_args args = {.program_id = id, .inputs = &in, .n_inputs = 1};
	if (rc == 0) {
		rc = transfer_runs(c, &args, host, n_words, runs, &ns[0], &st[0], err);
	}
	if (rc == 0 && vy_region_attach(c, bytes, &region, &e) != 0) {
		rc = vy_bench_session_fail(err, "shm_attach", &e);
	}
	if (rc == 0) {
		memcpy(vy_region_data(region), host, bytes);
		in = vy_input_shm(region, 0, bytes);
		rc = transfer_runs(
			c, &args, vy_region_data(region), n_words, runs, &ns[1], &st[1], err);
	}
	if (region) {
		vy_region_detach(c, region, NULL);
	}
	vy_client_close(c);
	vy_program_free(p);
	if (rc == 0) {
		rc = memcpy_runs(copy, host, bytes, runs, &ns[2], err);
	}
	if (rc == 0) {
		rc = socket_pair_runs(copy, host, bytes, runs, &ns[3], err);
	}
	return rc;
}

int vy_bench_transfer_run(struct vy_bench_ctx *ctx, struct vy_err *err)
{
	size_t bytes = (size_t)ctx->sizes.transfer_bytes;
	uint32_t *host = malloc(bytes);
	uint32_t *copy = malloc(bytes);
	int rc = host && copy ? 0 : no_memory(err, bytes);
	uint64_t ns[4] = {0, 0, 0, 0};        /* socket, memfd, memcpy, bare socket pair */
	struct vy_bench_stages st[2] = {{0}}; /* socket, memfd */
	if (rc == 0) {
		for (size_t i = 0; i < bytes / 4; i++) {
			host[i] = vy_bench_hash(i);
		}
		/* Touch every page of the copy's target, so memcpy is not timed faulting them in.
		 */
		memset(copy, 0, bytes);
		rc = transfer_measure(ctx, host, copy, ns, st, err);
	}
	free(host);
	free(copy);
	if (rc) {
		return rc;
	}
	double b = (double)bytes;
	struct vy_bench_figure *f = vy_bench_report_add(ctx->report, "input_socket",
		"input through the socket", "GB/s", gbps(b, ns[0]), "memcpy", gbps(b, ns[2]),
		VY_BENCH_GOAL_AT_LEAST, 5, ">= 5 GB/s");
	vy_bench_figure_note(f,
		"%zu MiB input of a dispatch that samples it, end to end, median of %u (memcpy: "
		"one thread, same size); medians: the daemon's part %.1f ms (frame in to the "
		"device's queue %.1f ms, backend %.1f ms), the rest (the client, the socket) %.1f "
		"ms",
		bytes >> 20, ctx->sizes.transfer_runs, (double)st[0].daemon / 1e6,
		(double)st[0].prepare / 1e6, (double)st[0].backend / 1e6,
		(double)(ns[0] > st[0].daemon ? ns[0] - st[0].daemon : 0) / 1e6);
	vy_bench_report_add(ctx->report, "input_socket_vs_pair", "input through the socket", "GB/s",
		gbps(b, ns[0]), "bare socket pair", gbps(b, ns[3]), VY_BENCH_GOAL_NONE, 0, NULL);
	vy_bench_report_add(ctx->report, "input_memfd", "input through a memfd", "GB/s",
		gbps(b, ns[1]), "memcpy", gbps(b, ns[2]), VY_BENCH_GOAL_AT_LEAST, 40, ">= 40 GB/s");
	return 0;
}

/* --- paired figures ----------------------------------------------------------------------- */

/* One timed run of one side of a paired figure: its time (device where measured) in *ns. */
typedef int side_fn(void *arg, uint64_t *ns, bool *device, struct vy_err *err);

struct side {
	side_fn *run;
	void *arg;
	uint64_t median_ns;
	bool device;
};

/*
 * The hand-written anchor and vyred's side of a figure, run alternately: for VY_BENCH_WARM_NS (at
 * least once each), then `runs` times each, the median of each side's timed runs in its
 * median_ns. A GPU raises and lowers its clocks with its load from one run to the next;
 * alternating gives both sides the same clocks, so their ratio holds whatever the clocks did.
 */
static int paired_runs(struct side sides[2], uint32_t runs, struct vy_err *err)
{
	uint64_t t[2][VY_BENCH_RUNS_MAX];
	uint64_t warm_from = vy_bench_now_ns();
	uint32_t warm = 1;
	int rc = 0;
	for (uint32_t it = 0; rc == 0 && it < warm + runs; it++) {
		if (it + 1 == warm && vy_bench_now_ns() - warm_from < VY_BENCH_WARM_NS) {
			warm++;
		}
		for (int s = 0; rc == 0 && s < 2; s++) {
			uint64_t ns = 0;
			rc = sides[s].run(sides[s].arg, &ns, &sides[s].device, err);
			if (it >= warm) {
				t[s][it - warm] = ns;
			}
		}
	}
	for (int s = 0; rc == 0 && s < 2; s++) {
		sides[s].median_ns = vy_bench_median(t[s], runs);
	}
	return rc;
}

/* vyred's side: one dispatch, its reply checked. */
struct dispatch_side {
	struct vy_client *c;
	const struct vy_dispatch_args *args;
	vy_bench_check_fn *check;
	const void *want;
};

static int dispatch_side_run(void *arg, uint64_t *ns, bool *device, struct vy_err *err)
{
	const struct dispatch_side *d = arg;
	uint64_t wall = 0;
	return vy_bench_session_dispatch(
		d->c, d->args, d->check, d->want, ns, &wall, device, NULL, err);
}

static uint64_t raw_time(const struct vy_raw_vk_run *run, bool *device)
{
	*device = run->device_ns != UINT64_MAX;
	return *device ? run->device_ns : run->wall_ns;
}

/* --- reduce ------------------------------------------------------------------------------ */

static int sum_check(const struct vy_reply *r, const void *want, struct vy_err *err)
{
	size_t len = 0;
	const uint32_t *out = vy_reply_output(r, 0, &len);
	uint32_t expect = *(const uint32_t *)want;
	if (!out || len != 4 || *out != expect) {
		return vy_bench_wrong(
			err, "vyred reduction", "sum %u, want %u", out ? *out : 0, expect);
	}
	return 0;
}

struct raw_reduce {
	struct vy_raw_vk *raw;
	uint32_t expect;
};

static int raw_reduce_run(void *arg, uint64_t *ns, bool *device, struct vy_err *err)
{
	const struct raw_reduce *r = arg;
	struct vy_raw_vk_run run;
	uint32_t sum = 0;
	int rc = vy_raw_vk_reduce_run(r->raw, &sum, &run, err);
	if (rc == 0 && sum != r->expect) {
		rc = vy_bench_wrong(err, "raw Vulkan reduction", "sum %u, want %u", sum, r->expect);
	}
	*ns = raw_time(&run, device);
	return rc;
}

int vy_bench_reduce_run(struct vy_bench_ctx *ctx, struct vy_err *err)
{
	uint64_t n = ctx->sizes.reduce_elements;
	uint64_t g = (n + 256 * 16 - 1) / (256 * 16);
	uint32_t groups = g > 65535 ? 65535 : (uint32_t)g;
	uint32_t per = (uint32_t)((n + (uint64_t)groups * 256 - 1) / ((uint64_t)groups * 256));
	uint32_t *x = malloc((size_t)n * 4);
	if (!x) {
		return no_memory(err, (size_t)n * 4);
	}
	uint32_t expect = 0;
	for (uint64_t i = 0; i < n; i++) {
		x[i] = vy_bench_hash(i);
		expect += x[i];
	}
	struct vy_error e;
	struct vy_program *p = vy_bench_prog_reduce(groups, per, &e);
	struct vy_client *c = NULL;
	uint64_t h = 0;
	char id[VY_PROGRAM_ID_CHARS];
	struct vy_dispatch_options opt = {.grid = {groups, 1, 1}, .timing = true};
	int rc = p ? 0 : vy_bench_session_fail(err, "reduce program", &e);
	if (rc == 0) {
		rc = vy_raw_vk_reduce_prepare(ctx->raw, x, n, groups, per, err);
	}
	if (rc == 0) {
		rc = vy_bench_session_connect(ctx, "vybench-reduce", &c, err);
	}
	if (rc == 0) {
		rc = vy_bench_session_compile(c, p, &opt, id, NULL, err);
	}
	if (rc == 0) {
		rc = vy_bench_session_put(c, x, (size_t)n * 4, &h, err);
	}
	free(x);
	struct vy_dispatch_input in = vy_input_resident(h);
	struct vy_dispatch_args args = {
		.program_id = id, .inputs = &in, .n_inputs = 1, .options = &opt};
	struct raw_reduce hand = {ctx->raw, expect};
	struct dispatch_side vy = {c, &args, sum_check, &expect};
	struct side sides[2] = {
		{raw_reduce_run, &hand, 0, false}, {dispatch_side_run, &vy, 0, false}};
	if (rc == 0) {
		rc = paired_runs(sides, ctx->sizes.runs, err);
	}
	if (h) {
		vy_buffer_free(c, h, NULL);
	}
	vy_client_close(c);
	vy_program_free(p);
	if (rc) {
		return rc;
	}
	double bytes = 4.0 * (double)n;
	struct vy_bench_figure *f = vy_bench_report_add(ctx->report, "reduce_bandwidth",
		"reduction u32 sum, IR", "GB/s", gbps(bytes, sides[1].median_ns), "hand GLSL",
		gbps(bytes, sides[0].median_ns), VY_BENCH_GOAL_NONE, 0, NULL);
	vy_bench_figure_note(f,
		"%llu elements on %u workgroups of 256, %u per invocation, median of %u runs of "
		"each, the two run alternately; timed by %s (IR), %s (hand)",
		(unsigned long long)n, groups, per, ctx->sizes.runs,
		sides[1].device ? "device" : "wall", sides[0].device ? "device" : "wall");
	return 0;
}

/* --- matmul ------------------------------------------------------------------------------ */

/* Entries of C checked: all of them for small n, else MATMUL_SAMPLES spread by a hash. The
 * inputs are small integers, so every sum is exact in f32 and the check is exact too. */
static int matmul_check(const char *what, const float *a, const float *b, const float *c,
	uint32_t n, struct vy_err *err)
{
	uint64_t nn = (uint64_t)n * n;
	uint64_t count = nn <= 65536 ? nn : MATMUL_SAMPLES;
	for (uint64_t s = 0; s < count; s++) {
		uint64_t at = count == nn ? s : vy_bench_hash(s + 99) % nn;
		uint64_t row = at / n, col = at % n;
		double want = 0;
		for (uint32_t k = 0; k < n; k++) {
			want += (double)a[row * n + k] * (double)b[(uint64_t)k * n + col];
		}
		if ((double)c[at] != want) {
			return vy_bench_wrong(err, what, "C[%llu][%llu] = %g, want %g",
				(unsigned long long)row, (unsigned long long)col, (double)c[at],
				want);
		}
	}
	return 0;
}

static int raw_matmul_run(void *arg, uint64_t *ns, bool *device, struct vy_err *err)
{
	struct vy_raw_vk_run run;
	int rc = vy_raw_vk_matmul_run(arg, &run, err);
	*ns = raw_time(&run, device);
	return rc;
}

/* The hand-written kernel's C, then vyred's (resident buffer `hc`), each checked. */
static int matmul_results(struct vy_bench_ctx *ctx, struct vy_client *cl, uint64_t hc,
	const float *a, const float *b, float *c, uint32_t n, struct vy_err *err)
{
	size_t bytes = (size_t)n * n * 4;
	struct vy_error e;
	int rc = vy_raw_vk_matmul_read(ctx->raw, c, err);
	if (rc == 0) {
		rc = matmul_check("raw Vulkan matmul", a, b, c, n, err);
	}
	memset(c, 0, bytes);
	if (rc == 0 && vy_buffer_download(cl, hc, 0, c, bytes, &e) != 0) {
		rc = vy_bench_session_fail(err, "download", &e);
	}
	if (rc == 0) {
		rc = matmul_check("vyred matmul", a, b, c, n, err);
	}
	return rc;
}

int vy_bench_matmul_run(struct vy_bench_ctx *ctx, struct vy_err *err)
{
	uint32_t n = ctx->sizes.matmul_n;
	size_t nn = (size_t)n * n;
	size_t bytes = nn * 4;
	float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
	int rc = a && b && c ? 0 : no_memory(err, nn * 12);
	for (size_t i = 0; rc == 0 && i < nn; i++) {
		a[i] = (float)(vy_bench_hash(i) % 5);
		b[i] = (float)(vy_bench_hash(i + nn) % 7);
	}
	struct vy_error e;
	struct vy_program *p = rc == 0 ? vy_bench_prog_matmul(n, &e) : NULL;
	struct vy_client *cl = NULL;
	uint64_t h[3] = {0, 0, 0};
	char id[VY_PROGRAM_ID_CHARS];
	struct vy_dispatch_options opt = {.grid = {n / 16, n / 16, 1}, .timing = true};
	if (rc == 0 && !p) {
		rc = vy_bench_session_fail(err, "matmul program", &e);
	}
	if (rc == 0) {
		rc = vy_raw_vk_matmul_prepare(ctx->raw, a, b, n, err);
	}
	if (rc == 0) {
		rc = vy_bench_session_connect(ctx, "vybench-matmul", &cl, err);
	}
	if (rc == 0) {
		rc = vy_bench_session_compile(cl, p, &opt, id, NULL, err);
	}
	for (int i = 0; rc == 0 && i < 2; i++) {
		rc = vy_bench_session_put(cl, i == 0 ? a : b, bytes, &h[i], err);
	}
	if (rc == 0 && vy_buffer_alloc(cl, bytes, NULL, &h[2], &e) != 0) {
		rc = vy_bench_session_fail(err, "alloc", &e);
	}
	struct vy_dispatch_input in[2] = {vy_input_resident(h[0]), vy_input_resident(h[1])};
	struct vy_dispatch_args args = {.program_id = id,
		.inputs = in,
		.n_inputs = 2,
		.outputs_to = &h[2],
		.n_outputs_to = 1,
		.options = &opt};
	struct dispatch_side vy = {cl, &args, vy_bench_session_output_resident, NULL};
	struct side sides[2] = {
		{raw_matmul_run, ctx->raw, 0, false}, {dispatch_side_run, &vy, 0, false}};
	if (rc == 0) {
		rc = paired_runs(sides, ctx->sizes.runs, err);
	}
	if (rc == 0) {
		rc = matmul_results(ctx, cl, h[2], a, b, c, n, err);
	}
	for (int i = 0; i < 3; i++) {
		if (h[i]) {
			vy_buffer_free(cl, h[i], NULL);
		}
	}
	vy_client_close(cl);
	vy_program_free(p);
	free(a);
	free(b);
	free(c);
	if (rc) {
		return rc;
	}
	double flops = 2.0 * (double)n * (double)n * (double)n;
	struct vy_bench_figure *f = vy_bench_report_add(ctx->report, "matmul_rate",
		"matmul f32, IR", "GFLOP/s", flops / (double)sides[1].median_ns, "hand GLSL",
		flops / (double)sides[0].median_ns, VY_BENCH_GOAL_NONE, 0, NULL);
	vy_bench_figure_note(f,
		"%u x %u, 16 x 16 tiles in workgroup memory, median of %u runs of each, the two "
		"run "
		"alternately; timed by %s (IR), %s (hand)",
		n, n, ctx->sizes.runs, sides[1].device ? "device" : "wall",
		sides[0].device ? "device" : "wall");
	return 0;
}
