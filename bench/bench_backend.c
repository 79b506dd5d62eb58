/*
 * bench_backend: the Vulkan backend's figures of DESIGN.md §10, each measured in the same run as
 * its hand-written anchor (raw_vulkan.h) and printed as a ratio, never asserted on:
 *   tiny warm dispatch   p50 and p99 of a compiled 64-element u32 program through
 *                        vy_pipeline_dispatch, against the raw submit-and-spin round trip;
 *   stream bandwidth     y[i] = x[i] + y[i] on resident f32 buffers through
 *                        vy_backend_resident_dispatch, against a vec4 GLSL kernel.
 * Results are checked before they are timed, so a fast wrong answer cannot pass as a figure.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "err.h"
#include "ir.h"
#include "raw_vulkan.h"
#include "validate.h"
#include "vulkan/vulkan.h"

#define TINY_N 64u
#define WARMUP 20u
#define STREAM_RUNS 20u
#define GPU_ELEMENTS (UINT64_C(64) << 20)
#define CPU_ELEMENTS (UINT64_C(1) << 20)

struct options {
	uint32_t iterations;
	uint64_t elements; /* 0: by device type */
	const char *json_path;
	uint32_t device;
};

struct figure {
	const char *name;
	const char *unit;
	double value;
	double anchor;
	double ratio;
	const char *target;
};

struct report {
	struct figure items[8];
	size_t len;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int fail(const char *what, const struct vy_err *err)
{
	fprintf(stderr, "bench_backend: %s: %s", what, err->message);
	if (err->fix[0]) {
		fprintf(stderr, ". Fix: %s", err->fix);
	}
	fputc('\n', stderr);
	return 1;
}

static int usage(void)
{
	fprintf(stderr, "usage: bench_backend [--iterations N] [--elements N] [--json PATH] "
			"[--device I]\n");
	return 2;
}

static bool parse_u64(const char *s, uint64_t min, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < min) {
		return false;
	}
	*out = v;
	return true;
}

static int parse_args(int argc, char **argv, struct options *o)
{
	*o = (struct options){.iterations = 2000};
	for (int i = 1; i < argc; i++) {
		uint64_t v = 0;
		if (i + 1 >= argc) {
			return usage();
		}
		const char *arg = argv[i];
		const char *val = argv[++i];
		if (strcmp(arg, "--json") == 0) {
			o->json_path = val;
		} else if (strcmp(arg, "--iterations") == 0 && parse_u64(val, 1, &v) &&
			   v <= UINT32_MAX) {
			o->iterations = (uint32_t)v;
		} else if (strcmp(arg, "--elements") == 0 && parse_u64(val, 4, &v) &&
			   v <= (UINT64_C(1) << 32) - 4) {
			o->elements = v & ~UINT64_C(3);
		} else if (strcmp(arg, "--device") == 0 && parse_u64(val, 0, &v) && v < 64) {
			o->device = (uint32_t)v;
		} else {
			return usage();
		}
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a;
	uint64_t y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted samples. */
static uint64_t percentile(const uint64_t *sorted, size_t n, double p)
{
	size_t rank = (size_t)(p / 100.0 * (double)n + 0.999999);
	rank = rank < 1 ? 1 : rank > n ? n : rank;
	return sorted[rank - 1];
}

static void add(struct report *r, const char *name, const char *unit, double value, double anchor,
	const char *target)
{
	if (r->len < sizeof(r->items) / sizeof(r->items[0])) {
		r->items[r->len++] = (struct figure){
			name, unit, value, anchor, anchor > 0 ? value / anchor : 0, target};
	}
}

/* y[i] = x[i] + 1 over TINY_N u32 elements, one workgroup. */
static struct vy_program *tiny_program(void)
{
	struct vy_program *p = vy_program_create("bench_tiny", TINY_N, 1, 1);
	vy_program_add_buffer(p, "x", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, TINY_N);
	struct vy_buffer *y =
		vy_program_add_buffer(p, "y", 1, VY_ACCESS_WRITE_ONLY, VY_TYPE_U32, TINY_N);
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

static bool tiny_ok(const uint32_t *in, const uint32_t *out)
{
	for (uint32_t i = 0; i < TINY_N; i++) {
		if (out[i] != in[i] + 1) {
			return false;
		}
	}
	return true;
}

/* Fills samples[0..iterations) with the raw round trips in nanoseconds, sorted. */
static int raw_tiny(struct vy_raw_vk *raw, uint32_t iterations, uint64_t *samples)
{
	struct vy_err err = {0};
	uint32_t in[TINY_N], out[TINY_N];
	if (vy_raw_vk_tiny_prepare(raw, TINY_N, &err)) {
		return fail("raw tiny kernel", &err);
	}
	for (uint32_t it = 0; it < WARMUP + iterations; it++) {
		for (uint32_t i = 0; i < TINY_N; i++) {
			in[i] = it * TINY_N + i;
		}
		uint64_t t0 = now_ns();
		if (vy_raw_vk_tiny_run(raw, in, out, &err)) {
			return fail("raw tiny dispatch", &err);
		}
		uint64_t dt = now_ns() - t0;
		if (!tiny_ok(in, out)) {
			fprintf(stderr,
				"bench_backend: the raw tiny kernel computed a wrong result\n");
			return 1;
		}
		if (it >= WARMUP) {
			samples[it - WARMUP] = dt;
		}
	}
	qsort(samples, iterations, sizeof(*samples), cmp_u64);
	return 0;
}

static int vyred_tiny(struct vy_backend *b, uint32_t iterations, uint64_t *samples)
{
	struct vy_err err = {0};
	struct vy_program *p = tiny_program();
	struct vy_pipeline *pl = NULL;
	struct vy_outputs outs;
	vy_outputs_init(&outs);
	int rc = 1;
	if (vy_validate_first(p, NULL, &err) || vy_backend_compile_native(b, p, NULL, &pl, &err)) {
		rc = fail("compiling the tiny program", &err);
		goto done;
	}
	uint32_t in[TINY_N];
	struct vy_bytes view = {(const uint8_t *)in, sizeof(in)};
	for (uint32_t it = 0; it < WARMUP + iterations; it++) {
		for (uint32_t i = 0; i < TINY_N; i++) {
			in[i] = it * TINY_N + i;
		}
		uint64_t t0 = now_ns();
		if (vy_pipeline_dispatch(pl, &view, 1, NULL, &outs, &err)) {
			rc = fail("vyred tiny dispatch", &err);
			goto done;
		}
		uint64_t dt = now_ns() - t0;
		if (outs.len != 1 || outs.items[0].len != sizeof(in) ||
			!tiny_ok(in, (const uint32_t *)outs.items[0].data)) {
			fprintf(stderr,
				"bench_backend: the vyred tiny dispatch gave a wrong result\n");
			goto done;
		}
		if (it >= WARMUP) {
			samples[it - WARMUP] = dt;
		}
	}
	qsort(samples, iterations, sizeof(*samples), cmp_u64);
	rc = 0;
done:
	vy_outputs_finish(&outs);
	vy_pipeline_destroy(pl);
	vy_program_destroy(p);
	return rc;
}

/* Median time of STREAM_RUNS runs after one warm-up; device time where measured. */
static int raw_stream(struct vy_raw_vk *raw, uint64_t n, uint64_t *median_ns, bool *device)
{
	struct vy_err err = {0};
	if (vy_raw_vk_stream_prepare(raw, n, &err)) {
		return fail("raw stream kernel", &err);
	}
	uint64_t t[STREAM_RUNS];
	for (uint32_t it = 0; it < STREAM_RUNS + 1; it++) {
		uint64_t dev, wall;
		if (vy_raw_vk_stream_run(raw, &dev, &wall, &err)) {
			return fail("raw stream dispatch", &err);
		}
		*device = dev != UINT64_MAX;
		if (it > 0) {
			t[it - 1] = *device ? dev : wall;
		}
	}
	qsort(t, STREAM_RUNS, sizeof(t[0]), cmp_u64);
	*median_ns = t[STREAM_RUNS / 2];
	return 0;
}

static int vyred_stream(struct vy_backend *b, uint64_t n, uint64_t *median_ns, bool *device)
{
	struct vy_err err = {0};
	struct vy_program *p = stream_program((uint32_t)n);
	struct vy_resource res[2] = {{0}, {0}};
	size_t bytes = (size_t)n * 4;
	float *host = malloc(bytes);
	int rc = 1;
	if (!host) {
		fprintf(stderr, "bench_backend: no memory for %zu bytes\n", bytes);
		goto done;
	}
	if (vy_validate_first(p, NULL, &err)) {
		rc = fail("the stream program", &err);
		goto done;
	}
	for (int i = 0; i < 2; i++) {
		for (uint64_t j = 0; j < n; j++) {
			host[j] = i == 0 ? 1.0f : 0.0f;
		}
		if (vy_backend_resident_alloc(b, bytes, &res[i], &err) ||
			vy_backend_resident_upload(b, &res[i], 0,
				(struct vy_bytes){(const uint8_t *)host, bytes}, &err)) {
			rc = fail("resident buffers", &err);
			goto done;
		}
	}
	struct vy_dispatch_config cfg = {.timing = true};
	uint64_t t[STREAM_RUNS];
	for (uint32_t it = 0; it < STREAM_RUNS + 1; it++) {
		struct vy_timing tm;
		if (vy_backend_resident_dispatch(b, p, res, 2, &cfg, &tm, &err)) {
			rc = fail("vyred resident dispatch", &err);
			goto done;
		}
		*device = tm.device_ns != VY_TIMING_NONE;
		if (it > 0) {
			t[it - 1] = *device ? tm.device_ns : tm.wall_ns;
		}
	}
	/* Every run added 1.0 to each element of y. */
	size_t check = bytes < 4096 ? bytes : 4096;
	if (vy_backend_resident_download(b, &res[1], bytes - check, (uint8_t *)host, check, &err)) {
		rc = fail("resident download", &err);
		goto done;
	}
	for (size_t j = 0; j < check / 4; j++) {
		if (host[j] != (float)(STREAM_RUNS + 1)) {
			fprintf(stderr, "bench_backend: the vyred stream kernel gave %g, want %u\n",
				(double)host[j], STREAM_RUNS + 1);
			goto done;
		}
	}
	qsort(t, STREAM_RUNS, sizeof(t[0]), cmp_u64);
	*median_ns = t[STREAM_RUNS / 2];
	rc = 0;
done:
	for (int i = 0; i < 2; i++) {
		if (res[i].len) {
			vy_backend_resident_free(b, res[i], NULL);
		}
	}
	free(host);
	vy_program_destroy(p);
	return rc;
}

static void print_table(const struct report *r)
{
	printf("%-28s %14s %14s %8s  %s\n", "figure", "value", "anchor", "ratio", "target");
	for (size_t i = 0; i < r->len; i++) {
		const struct figure *f = &r->items[i];
		char v[32], a[32];
		snprintf(v, sizeof(v), "%.2f %s", f->value, f->unit);
		snprintf(a, sizeof(a), "%.2f %s", f->anchor, f->unit);
		printf("%-28s %14s %14s %8.3f  %s\n", f->name, v, a, f->ratio, f->target);
	}
}

static int write_json(const char *path, const struct report *r, const char *device,
	const struct options *o, uint64_t elements, bool dev_timing)
{
	json_object *root = json_object_new_object();
	json_object_object_add(root, "bench", json_object_new_string("backend"));
	json_object_object_add(root, "device", json_object_new_string(device));
	json_object_object_add(root, "iterations", json_object_new_int64(o->iterations));
	json_object_object_add(root, "elements", json_object_new_int64((int64_t)elements));
	json_object_object_add(
		root, "stream_timing", json_object_new_string(dev_timing ? "device" : "wall"));
	json_object *figs = json_object_new_array();
	for (size_t i = 0; i < r->len; i++) {
		const struct figure *f = &r->items[i];
		json_object *j = json_object_new_object();
		json_object_object_add(j, "name", json_object_new_string(f->name));
		json_object_object_add(j, "unit", json_object_new_string(f->unit));
		json_object_object_add(j, "value", json_object_new_double(f->value));
		json_object_object_add(j, "anchor", json_object_new_double(f->anchor));
		json_object_object_add(j, "ratio", json_object_new_double(f->ratio));
		json_object_object_add(j, "target", json_object_new_string(f->target));
		json_object_array_add(figs, j);
	}
	json_object_object_add(root, "figures", figs);
	int rc = json_object_to_file_ext(path, root, JSON_C_TO_STRING_PRETTY);
	json_object_put(root);
	if (rc) {
		fprintf(stderr, "bench_backend: cannot write %s: %s\n", path, strerror(errno));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct options o;
	if (parse_args(argc, argv, &o)) {
		return 2;
	}
	struct vy_err err = {0};
	struct vy_raw_vk *raw = NULL;
	struct vy_backend *b = NULL;
	uint64_t *raw_s = calloc(o.iterations, sizeof(uint64_t));
	uint64_t *vy_s = calloc(o.iterations, sizeof(uint64_t));
	int rc = 1;
	if (!raw_s || !vy_s) {
		fprintf(stderr, "bench_backend: no memory for %u samples\n", o.iterations);
		goto done;
	}
	if (vy_raw_vk_create(o.device, &raw, &err)) {
		rc = fail("raw Vulkan", &err);
		goto done;
	}
	struct vy_vulkan_options vo = {.device_index = o.device};
	if (vy_vulkan_backend_create(&vo, &b, &err)) {
		rc = fail("the Vulkan backend", &err);
		goto done;
	}
	uint64_t n = o.elements ? o.elements : vy_raw_vk_is_cpu(raw) ? CPU_ELEMENTS : GPU_ELEMENTS;
	const char *name = vy_raw_vk_device_name(raw);
	printf("device %u: %s; %u tiny dispatches of %u u32; stream of %llu f32\n\n", o.device,
		name, o.iterations, TINY_N, (unsigned long long)n);

	struct report r = {0};
	if ((rc = raw_tiny(raw, o.iterations, raw_s)) || (rc = vyred_tiny(b, o.iterations, vy_s))) {
		goto done;
	}
	add(&r, "tiny dispatch p50", "us", (double)percentile(vy_s, o.iterations, 50) / 1e3,
		(double)percentile(raw_s, o.iterations, 50) / 1e3, "ratio <= 1.0");
	add(&r, "tiny dispatch p99", "us", (double)percentile(vy_s, o.iterations, 99) / 1e3,
		(double)percentile(raw_s, o.iterations, 99) / 1e3, "report");
	add(&r, "tiny dispatch min", "us", (double)vy_s[0] / 1e3, (double)raw_s[0] / 1e3, "report");

	uint64_t raw_ns = 0, vy_ns = 0;
	bool raw_dev = false, vy_dev = false;
	if ((rc = raw_stream(raw, n, &raw_ns, &raw_dev)) ||
		(rc = vyred_stream(b, n, &vy_ns, &vy_dev))) {
		goto done;
	}
	double moved = 3.0 * 4.0 * (double)n;
	add(&r, "stream f32 bandwidth", "GB/s", moved / (double)vy_ns, moved / (double)raw_ns,
		"ratio >= 0.9");
	print_table(&r);
	printf("\nstream timing: vyred %s, raw %s (median of %u runs)\n",
		vy_dev ? "device timestamps" : "wall", raw_dev ? "device timestamps" : "wall",
		STREAM_RUNS);
	if (o.json_path) {
		rc = write_json(o.json_path, &r, name, &o, n, vy_dev && raw_dev);
	}
done:
	if (b) {
		vy_backend_shutdown(b, NULL);
		vy_backend_destroy(b);
	}
	vy_raw_vk_destroy(raw);
	free(raw_s);
	free(vy_s);
	return rc;
}
