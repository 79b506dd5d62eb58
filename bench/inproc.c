/*
 * vyred's Vulkan backend in the bench's own process (inproc.h): the same tiny and stream work as
 * the daemon figures, built with the protocol's IR builders and run through the backend contract
 * directly. Every result is checked before its time counts.
 */
#include "inproc.h"

#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "bench.h"
#include "ir.h"
#include "validate.h"
#include "vulkan/vulkan.h"

#define STREAM_RUNS_MAX 256u

struct vy_bench_inproc {
	struct vy_backend *backend;
};

int vy_bench_inproc_create(uint32_t device, struct vy_bench_inproc **out, struct vy_err *err)
{
	*out = NULL;
	struct vy_bench_inproc *ip = calloc(1, sizeof(*ip));
	if (!ip) {
		return vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL, "free some memory",
			"no memory for the in-process backend");
	}
	struct vy_vulkan_options vo = {.device_index = device};
	int rc = vy_vulkan_backend_create(&vo, &ip->backend, err);
	if (rc) {
		free(ip);
		return rc;
	}
	*out = ip;
	return 0;
}

void vy_bench_inproc_destroy(struct vy_bench_inproc *ip)
{
	if (!ip) {
		return;
	}
	if (ip->backend) {
		vy_backend_shutdown(ip->backend, NULL);
		vy_backend_destroy(ip->backend);
	}
	free(ip);
}

/* y[i] = x[i] + 1 over n u32 elements, one workgroup. */
static struct vy_program *tiny_program(uint32_t n)
{
	struct vy_program *p = vy_program_create("bench_tiny", n, 1, 1);
	vy_program_add_buffer(p, "x", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, n);
	struct vy_buffer *y =
		vy_program_add_buffer(p, "y", 1, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, n);
	y->output = true;
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_let(p, "i", vy_ir_gid(p, 0)),
			   vy_ir_store(p, "y", vy_ir_var(p, "i"),
				   vy_ir_binary(p, VY_BIN_ADD,
					   vy_ir_load(p, "x", vy_ir_var(p, "i")), vy_ir_u32(p, 1))),
			   NULL));
	return p;
}

/* y[i] = x[i] + y[i] over n f32 elements, read and written in place. */
static struct vy_program *stream_program(uint32_t n)
{
	struct vy_program *p = vy_program_create("bench_stream", 256, 1, 1);
	vy_program_add_buffer(p, "x", 0, VY_ACCESS_READ_ONLY, VY_TYPE_F32, n);
	vy_program_add_buffer(p, "y", 1, VY_ACCESS_READ_WRITE, VY_TYPE_F32, n);
	vy_program_set_entry(p,
		vy_ir_seq(p, vy_ir_let(p, "i", vy_ir_gid(p, 0)),
			vy_ir_store(p, "y", vy_ir_var(p, "i"),
				vy_ir_binary(p, VY_BIN_ADD, vy_ir_load(p, "x", vy_ir_var(p, "i")),
					vy_ir_load(p, "y", vy_ir_var(p, "i")))),
			NULL));
	return p;
}

int vy_bench_inproc_tiny(struct vy_bench_inproc *ip, uint32_t n, uint32_t warmup,
	uint32_t iterations, uint64_t *samples, struct vy_err *err)
{
	if (n == 0 || n > 1024 || iterations == 0) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "tiny", "use 1 to 1024 elements",
			"%u elements, %u iterations asked for", n, iterations);
	}
	struct vy_program *p = tiny_program(n);
	struct vy_pipeline *pl = NULL;
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	uint32_t *in = calloc(n, sizeof(*in));
	int rc = in ? 0
		    : vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL, "free some memory",
			      "no memory for the tiny input");
	if (rc == 0) {
		rc = vy_validate_first(p, NULL, err);
	}
	if (rc == 0) {
		rc = vy_backend_compile_native(ip->backend, p, NULL, &pl, err);
	}
	struct vy_bytes view = {(const uint8_t *)in, (size_t)n * 4};
	for (uint32_t it = 0; rc == 0 && it < warmup + iterations; it++) {
		for (uint32_t i = 0; i < n; i++) {
			in[i] = vy_bench_hash((uint64_t)it * n + i);
		}
		uint64_t t0 = vy_bench_now_ns();
		rc = vy_pipeline_dispatch(pl, &view, 1, NULL, &outs, err);
		uint64_t dt = vy_bench_now_ns() - t0;
		if (rc) {
			break;
		}
		if (outs.len != 1 || outs.items[0].len != view.len) {
			rc = vy_bench_wrong(err, "backend tiny dispatch", "%zu outputs", outs.len);
			break;
		}
		const uint32_t *y = (const uint32_t *)outs.items[0].data;
		for (uint32_t i = 0; i < n && rc == 0; i++) {
			if (y[i] != in[i] + 1) {
				rc = vy_bench_wrong(err, "backend tiny dispatch",
					"y[%u] = %u, want %u", i, y[i], in[i] + 1);
			}
		}
		if (it >= warmup) {
			samples[it - warmup] = dt;
		}
	}
	if (rc == 0) {
		vy_bench_sort(samples, iterations);
	}
	vy_outputs_finish(&outs);
	vy_pipeline_destroy(pl);
	vy_program_destroy(p);
	free(in);
	return rc;
}

/* Batches of a rate run: each dispatch's input, handle and outputs. */
struct rate_batch {
	uint32_t *in; /* batch * n words */
	struct vy_bytes *views;
	struct vy_pending **pend;
	uint32_t first; /* the tag of its first dispatch */
};

/* Collect a batch's results and check each: y = x + 1. */
static int rate_collect(struct rate_batch *rb, uint32_t batch, uint32_t n, struct vy_outputs *outs,
	struct vy_err *err)
{
	int rc = 0;
	for (uint32_t k = 0; k < batch; k++) {
		int wrc = vy_pending_wait(rb->pend[k], outs, err);
		rb->pend[k] = NULL;
		if (rc == 0 && wrc) {
			rc = wrc;
		}
		if (rc) {
			continue;
		}
		const uint32_t *x = rb->in + (size_t)k * n;
		const uint32_t *y = outs->len == 1 ? (const uint32_t *)outs->items[0].data : NULL;
		for (uint32_t i = 0; i < n && rc == 0; i++) {
			if (!y || y[i] != x[i] + 1) {
				rc = vy_bench_wrong(err, "backend tiny rate",
					"dispatch %u of a batch: y[%u]", k, i);
			}
		}
	}
	return rc;
}

/* Fill and start a batch of `batch` tiny dispatches. */
static int rate_start(struct vy_pipeline *pl, struct rate_batch *rb, uint32_t batch, uint32_t n,
	uint32_t tag, struct vy_err *err)
{
	rb->first = tag;
	for (uint32_t k = 0; k < batch; k++) {
		uint32_t *x = rb->in + (size_t)k * n;
		for (uint32_t i = 0; i < n; i++) {
			x[i] = vy_bench_hash(((uint64_t)tag + k) * n + i);
		}
		rb->views[k] = (struct vy_bytes){(const uint8_t *)x, (size_t)n * 4};
		int rc = vy_pipeline_dispatch_async(pl, &rb->views[k], 1, NULL, &rb->pend[k], err);
		if (rc) {
			for (uint32_t j = 0; j < k; j++) {
				vy_pending_destroy(rb->pend[j]);
				rb->pend[j] = NULL;
			}
			return rc;
		}
	}
	/* Polling the last handle puts the batch on the queue without waiting for it. */
	(void)vy_pending_is_ready(rb->pend[batch - 1]);
	return 0;
}

int vy_bench_inproc_rate(struct vy_bench_inproc *ip, uint32_t n, uint32_t batch, uint32_t depth,
	double seconds, struct vy_bench_inproc_rate *out, struct vy_err *err)
{
	*out = (struct vy_bench_inproc_rate){0};
	if (n == 0 || n > 1024 || batch == 0 || batch > 256 || depth == 0 || depth > 4) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "rate",
			"use 1 to 1024 elements, batches of 1 to 256, 1 to 4 in flight",
			"%u elements, batches of %u, %u in flight asked for", n, batch, depth);
	}
	struct vy_program *p = tiny_program(n);
	struct rate_batch rb[4] = {{0}};
	int rc = 0;
	for (uint32_t d = 0; d < depth && rc == 0; d++) {
		rb[d].in = calloc((size_t)batch * n, sizeof(uint32_t));
		rb[d].views = calloc(batch, sizeof(*rb[d].views));
		rb[d].pend = calloc(batch, sizeof(*rb[d].pend));
		if (!rb[d].in || !rb[d].views || !rb[d].pend) {
			rc = vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL, "free some memory",
				"no memory for a batch of %u dispatches", batch);
		}
	}
	struct vy_pipeline *pl = NULL;
	if (rc == 0) {
		rc = vy_validate_first(p, NULL, err);
	}
	if (rc == 0) {
		rc = vy_backend_compile_native(ip->backend, p, NULL, &pl, err);
	}
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	uint64_t t0 = 0;
	uint64_t done = 0;
	uint32_t tag = 0;
	uint32_t started = 0; /* batches started, in ring order */
	uint64_t limit = (uint64_t)(seconds * 1e9);
	uint64_t start_ns = 0, collect_ns = 0; /* of the batches timed */
	bool warm = false;
	for (; rc == 0; started++) {
		struct rate_batch *cur = &rb[started % depth];
		if (started >= depth) { /* the ring's oldest batch goes back before it is reused */
			uint64_t c0 = vy_bench_now_ns();
			rc = rate_collect(cur, batch, n, &outs, err);
			collect_ns += warm ? vy_bench_now_ns() - c0 : 0;
			done += warm ? batch : 0;
			if (!warm && started >= 2 * depth) {
				warm = true;
				t0 = vy_bench_now_ns();
			}
			if (rc || (warm && vy_bench_now_ns() - t0 >= limit)) {
				break;
			}
		}
		uint64_t s0 = vy_bench_now_ns();
		rc = rate_start(pl, cur, batch, n, tag, err);
		start_ns += warm ? vy_bench_now_ns() - s0 : 0;
		tag += batch;
	}
	uint64_t dt = vy_bench_now_ns() - t0;
	for (uint32_t d = 0; d < depth; d++) {
		for (uint32_t k = 0; k < batch && rb[d].pend; k++) {
			vy_pending_destroy(rb[d].pend[k]);
		}
		free(rb[d].in);
		free(rb[d].views);
		free(rb[d].pend);
	}
	if (rc == 0 && dt > 0 && done > 0) {
		out->per_s = (double)done * 1e9 / (double)dt;
		/* As many batches were started as collected after the warm-up. */
		out->start_ns = (double)start_ns / (double)done;
		out->collect_ns = (double)collect_ns / (double)done;
	}
	vy_outputs_finish(&outs);
	vy_pipeline_destroy(pl);
	vy_program_destroy(p);
	return rc;
}

static int stream_fill(struct vy_backend *b, struct vy_resource *res, uint64_t n, float value,
	float *host, struct vy_err *err)
{
	size_t bytes = (size_t)n * 4;
	for (uint64_t j = 0; j < n; j++) {
		host[j] = value;
	}
	int rc = vy_backend_resident_alloc(b, bytes, res, err);
	if (rc == 0) {
		rc = vy_backend_resident_upload(
			b, res, 0, (struct vy_bytes){(const uint8_t *)host, bytes}, err);
	}
	return rc;
}

int vy_bench_inproc_stream(struct vy_bench_inproc *ip, uint64_t n, uint32_t runs,
	uint64_t *median_ns, bool *device_timed, struct vy_err *err)
{
	if (n == 0 || n >= (UINT64_C(1) << 32) || runs == 0 || runs > STREAM_RUNS_MAX) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "stream",
			"use 1 to 2^32-1 elements and 1 to 256 runs",
			"%llu elements, %u runs asked for", (unsigned long long)n, runs);
	}
	struct vy_backend *b = ip->backend;
	struct vy_program *p = stream_program((uint32_t)n);
	struct vy_resource res[2] = {{0}, {0}};
	size_t bytes = (size_t)n * 4;
	float *host = malloc(bytes);
	int rc = host ? 0
		      : vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL, "use fewer elements",
				"no memory for %zu bytes", bytes);
	if (rc == 0) {
		rc = vy_validate_first(p, NULL, err);
	}
	if (rc == 0) {
		rc = stream_fill(b, &res[0], n, 1.0f, host, err);
	}
	if (rc == 0) {
		rc = stream_fill(b, &res[1], n, 0.0f, host, err);
	}
	struct vy_dispatch_config cfg = {.timing = true};
	uint64_t t[STREAM_RUNS_MAX];
	uint32_t warm = 1;
	uint64_t warm_from = vy_bench_now_ns();
	for (uint32_t it = 0; rc == 0 && it < warm + runs; it++) {
		if (it + 1 == warm && vy_bench_now_ns() - warm_from < VY_BENCH_WARM_NS) {
			warm++;
		}
		struct vy_timing tm;
		rc = vy_backend_resident_dispatch(b, p, res, 2, &cfg, &tm, err);
		*device_timed = tm.device_ns != VY_TIMING_NONE;
		if (rc == 0 && it >= warm) {
			t[it - warm] = *device_timed ? tm.device_ns : tm.wall_ns;
		}
	}
	/* Every run added 1.0 to each element of y. */
	size_t check = bytes < 4096 ? bytes : 4096;
	if (rc == 0) {
		rc = vy_backend_resident_download(
			b, &res[1], bytes - check, (uint8_t *)host, check, err);
	}
	for (size_t j = 0; rc == 0 && j < check / 4; j++) {
		if (host[j] != (float)(warm + runs)) {
			rc = vy_bench_wrong(err, "backend stream", "y holds %g, want %u",
				(double)host[j], warm + runs);
		}
	}
	if (rc == 0) {
		*median_ns = vy_bench_median(t, runs);
	}
	for (int i = 0; i < 2; i++) {
		if (res[i].len) {
			vy_backend_resident_free(b, res[i], NULL);
		}
	}
	free(host);
	vy_program_destroy(p);
	return rc;
}
