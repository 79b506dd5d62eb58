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
