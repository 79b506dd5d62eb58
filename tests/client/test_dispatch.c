/*
 * compile and dispatch with every kind of input and option, the daemon's errors as the caller
 * sees them (code, message, location and Fix, unchanged), resident buffers and shared-memory
 * regions.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lv.h"

#define N 1024

/* saxpy's inputs: alpha = 2, x[k] = k, y[k] = 1. */
static void saxpy_data(float *alpha, float *x, float *y)
{
	*alpha = 2.0f;
	for (int k = 0; k < N; k++) {
		x[k] = (float)k;
		y[k] = 1.0f;
	}
}

static void check_saxpy(const struct vy_reply *r)
{
	size_t len = 0;
	const float *y = vy_reply_output(r, 0, &len);
	cr_assert_not_null(y);
	cr_assert_eq(len, N * sizeof(float));
	cr_assert_eq((uintptr_t)y % 64, 0, "outputs are aligned");
	for (int k = 0; k < N; k++) {
		cr_assert_float_eq(
			y[k], 2.0f * (float)k + 1.0f, 0.0f, "y[%d] = %g", k, (double)y[k]);
	}
}

Test(compile, answers_an_id_and_then_hits_the_cache)
{
	struct vy_client *c = lv_connect("lv-compile");
	struct vy_program *p = lv_program("saxpy");
	struct vy_compile_result first;
	struct vy_compile_result second;
	struct vy_error err;
	lv_ok(vy_compile(c, p, NULL, &first, &err), &err);
	cr_assert_eq(strlen(first.program_id), 32);
	for (int k = 0; k < 32; k++) {
		cr_assert(isxdigit((unsigned char)first.program_id[k]));
	}
	cr_assert(strcmp(first.cache, "hit") == 0 || strcmp(first.cache, "miss") == 0 ||
			  strcmp(first.cache, "disk") == 0,
		"%s", first.cache);
	struct vy_dispatch_options opt = {.label = "lv-compile"};
	lv_ok(vy_compile(c, p, &opt, &second, &err), &err);
	cr_assert_str_eq(second.program_id, first.program_id);
	cr_assert_str_eq(second.cache, "hit");
	lv_ok(vy_compile(c, p, NULL, NULL, &err), &err);
	vy_program_free(p);
	vy_client_close(c);
}

Test(compile, surfaces_every_validation_error_with_its_fix)
{
	struct vy_client *c = lv_connect("lv-invalid");
	struct vy_program *p = lv_invalid_program();
	struct vy_compile_result out;
	struct vy_error err;
	cr_assert_eq(vy_compile(c, p, NULL, &out, &err), VY_ERROR_INVALID_PROGRAM);
	cr_assert_str_eq(err.name, "INVALID_PROGRAM");
	cr_assert_eq(err.num, 1006);
	cr_assert_str_eq(err.retry, "after_fix");
	cr_assert(err.fix[0]);
	cr_assert_eq(err.n_errors, 2);
	for (size_t i = 0; i < 2; i++) {
		cr_assert(err.errors[i].at[0] && err.errors[i].fix[0], "error %zu: %s / %s", i,
			err.errors[i].at, err.errors[i].fix);
	}
	/* The same program validated locally gives the same first error. */
	struct vy_error local;
	cr_assert_eq(vy_program_check(p, &local), VY_ERROR_INVALID_PROGRAM);
	cr_assert_str_eq(local.errors[0].at, err.errors[0].at);
	cr_assert_str_eq(local.errors[0].fix, err.errors[0].fix);
	cr_assert_eq(vy_compile(c, NULL, NULL, &out, &err), VY_ERROR_INVALID_ARGUMENT);
	vy_program_free(p);
	vy_client_close(c);
}

Test(dispatch, runs_a_program_and_reports_timing)
{
	struct vy_client *c = lv_connect("lv-dispatch");
	struct vy_program *p = lv_program("saxpy");
	float alpha;
	float *x = malloc(N * sizeof(float));
	float *y = malloc(N * sizeof(float));
	saxpy_data(&alpha, x, y);
	struct vy_dispatch_input in[] = {
		vy_input_bytes(&alpha, sizeof(alpha)),
		vy_input_bytes(x, N * sizeof(float)),
		vy_input_bytes(y, N * sizeof(float)),
	};
	struct vy_dispatch_args args = {.program = p, .inputs = in, .n_inputs = 3};
	struct vy_reply *r = NULL;
	struct vy_error err;
	lv_ok(vy_dispatch(c, &args, &r, &err), &err);
	check_saxpy(r);
	struct vy_dispatch_timing t;
	cr_assert(vy_reply_timing(r, &t));
	cr_assert_neq(t.wall_ns, VY_TIME_NONE);
	cr_assert_neq(t.queue_ns, VY_TIME_NONE);
	cr_assert_geq(t.wall_ns, t.queue_ns);
	/* The stages of the dispatch path are each measured and together within wall_ns. */
	uint64_t staged = 0;
	static const char *const stages[] = {
		"timing.prepare_ns", "timing.queue_ns", "timing.backend_ns", "timing.handback_ns"};
	for (size_t i = 0; i < sizeof(stages) / sizeof(stages[0]); i++) {
		uint64_t ns = vy_value_get_u64(vy_reply_value(r), stages[i], VY_TIME_NONE);
		cr_assert_neq(ns, VY_TIME_NONE, "%s missing", stages[i]);
		staged += ns;
	}
	cr_assert_gt(vy_value_get_u64(vy_reply_value(r), "timing.backend_ns", 0), 0);
	cr_assert_leq(
		staged, t.wall_ns, "stages %" PRIu64 " ns, wall %" PRIu64 " ns", staged, t.wall_ns);
	cr_assert_str_neq(vy_value_get_str(vy_reply_value(r), "cache", ""), "");
	vy_reply_destroy(r);

	/* By id, with every option set. */
	struct vy_compile_result compiled;
	lv_ok(vy_compile(c, p, NULL, &compiled, &err), &err);
	struct vy_dispatch_options opt = {
		.grid = {N / 256, 1, 1},
		.workgroup_size = {256, 1, 1},
		.max_loop_iterations = 1000,
		.timeout_ms = 20000,
		.label = "lv-options",
		.has_device = true,
		.device = 0,
		.backend = lv_on_backend(c, "vulkan") ? "vulkan" : "reference",
		.timing = true,
	};
	struct vy_dispatch_args by_id = {
		.program_id = compiled.program_id, .inputs = in, .n_inputs = 3, .options = &opt};
	lv_ok(vy_dispatch(c, &by_id, &r, &err), &err);
	check_saxpy(r);
	vy_reply_destroy(r);
	/* The reply may be dropped. */
	lv_ok(vy_dispatch(c, &args, NULL, &err), &err);
	struct vy_dispatch_timing none;
	cr_assert_not(vy_reply_timing(NULL, &none));
	cr_assert_eq(none.device_ns, VY_TIME_NONE);
	cr_assert_eq(vy_reply_outputs(NULL), 0);
	free(x);
	free(y);
	vy_program_free(p);
	vy_client_close(c);
}

Test(dispatch, passes_specialization_values)
{
	struct vy_client *c = lv_connect("lv-spec");
	struct vy_program *p = lv_program("spec_scale");
	float x[1024];
	for (int k = 0; k < 1024; k++) {
		x[k] = (float)k;
	}
	struct vy_dispatch_input in[] = {vy_input_bytes(x, sizeof(x))};
	struct vy_spec_arg spec = {.name = "scale", .type = VY_SPEC_TYPE_F32, .v.f32 = 3.0f};
	struct vy_dispatch_options opt = {.spec = &spec, .n_spec = 1};
	struct vy_dispatch_args args = {.program = p, .inputs = in, .n_inputs = 1, .options = &opt};
	struct vy_reply *r = NULL;
	struct vy_error err;
	lv_ok(vy_dispatch(c, &args, &r, &err), &err);
	const float *y = vy_reply_output(r, 0, NULL);
	for (int k = 0; k < 1024; k++) {
		cr_assert_float_eq(y[k], 3.0f * (float)k, 0.0f);
	}
	vy_reply_destroy(r);
	/* A value of the wrong type is the daemon's to refuse, with a Fix. */
	spec.type = VY_SPEC_TYPE_BOOL;
	spec.v.b = true;
	int rc = vy_dispatch(c, &args, NULL, &err);
	cr_assert_lt(rc, 0);
	cr_assert(err.fix[0]);
	spec.type = (enum vy_spec_type)9;
	cr_assert_eq(vy_dispatch(c, &args, NULL, &err), VY_ERROR_INVALID_ARGUMENT);
	vy_program_free(p);
	vy_client_close(c);
}

/* A program storing `what` (JSON) to every element of a 256-element u32/i32 buffer "out". */
static struct vy_program *store_program(const char *type, const char *what)
{
	char text[1024];
	snprintf(text, sizeof(text),
		"{\"vyre\": 1, \"name\": \"lv_store\", \"workgroup_size\": [64, 1, 1], "
		"\"buffers\": [{\"name\": \"out\", \"binding\": 0, \"access\": \"write_only\", "
		"\"type\": \"%s\", \"count\": 256}], "
		"\"entry\": [[\"store\", \"out\", [\"gid\", 0], %s]]}",
		type, what);
	struct vy_program *p = NULL;
	struct vy_error err;
	lv_ok(vy_program_load_json(text, strlen(text), &p, &err), &err);
	return p;
}

Test(dispatch, passes_negative_and_extreme_i32_specialization_values)
{
	struct vy_client *c = lv_connect("lv-spec-i32");
	struct vy_program *p = store_program("i32", "[\"spec\", \"k\", \"i32\", [\"i32\", 5]]");
	static const int32_t values[] = {-7, -1, INT32_MIN, INT32_MAX, 0, 7};
	for (size_t v = 0; v < sizeof(values) / sizeof(values[0]); v++) {
		struct vy_spec_arg spec = {
			.name = "k", .type = VY_SPEC_TYPE_I32, .v.i32 = values[v]};
		struct vy_dispatch_options opt = {.spec = &spec, .n_spec = 1};
		struct vy_dispatch_args args = {.program = p, .options = &opt};
		struct vy_reply *r = NULL;
		struct vy_error err;
		lv_ok(vy_dispatch(c, &args, &r, &err), &err);
		size_t len = 0;
		const int32_t *out = vy_reply_output(r, 0, &len);
		cr_assert_eq(len, 256 * sizeof(int32_t));
		for (int k = 0; k < 256; k++) {
			cr_assert_eq(
				out[k], values[v], "k = %d: out[%d] = %d", values[v], k, out[k]);
		}
		vy_reply_destroy(r);
	}
	vy_program_free(p);
	vy_client_close(c);
}

Test(dispatch, a_workgroup_size_option_is_sent_whichever_axis_is_set)
{
	struct vy_client *c = lv_connect("lv-workgroup");
	struct vy_program *p = store_program("u32", "[\"wgid\", 0]");
	/* out[i] = the workgroup of invocation i: i / 64 with the program's size, i / 16 with
	 * [16, 1, 1] (the grid follows from the 256 outputs either way). */
	static const uint32_t sizes[][3] = {{0, 0, 0}, {16, 1, 1}};
	static const uint32_t per_group[] = {64, 16};
	for (size_t s = 0; s < 2; s++) {
		struct vy_dispatch_options opt = {0};
		memcpy(opt.workgroup_size, sizes[s], sizeof(opt.workgroup_size));
		struct vy_dispatch_args args = {.program = p, .options = &opt};
		struct vy_reply *r = NULL;
		struct vy_error err;
		lv_ok(vy_dispatch(c, &args, &r, &err), &err);
		const uint32_t *out = vy_reply_output(r, 0, NULL);
		for (uint32_t k = 0; k < 256; k++) {
			cr_assert_eq(out[k], k / per_group[s], "size %u: out[%u] = %u", sizes[s][0],
				k, out[k]);
		}
		vy_reply_destroy(r);
	}
	/* A zero axis, wherever it is, reaches the daemon, which refuses it with a Fix. */
	static const uint32_t zero[][3] = {{0, 1, 1}, {0, 0, 1}, {0, 0, 64}, {64, 0, 1}};
	for (size_t z = 0; z < sizeof(zero) / sizeof(zero[0]); z++) {
		struct vy_dispatch_options opt = {0};
		memcpy(opt.workgroup_size, zero[z], sizeof(opt.workgroup_size));
		struct vy_dispatch_args args = {.program = p, .options = &opt};
		struct vy_error err;
		cr_assert_eq(vy_dispatch(c, &args, NULL, &err), VY_ERROR_BAD_REQUEST,
			"[%u, %u, %u]: %s", zero[z][0], zero[z][1], zero[z][2], err.message);
		cr_expect_str_eq(err.at, "config.workgroup_size");
		cr_expect(err.fix[0], "no Fix: %s", err.message);
	}
	vy_program_free(p);
	vy_client_close(c);
}

Test(dispatch, surfaces_daemon_errors_unchanged)
{
	struct vy_client *c = lv_connect("lv-errors");
	struct vy_program *p = lv_program("saxpy");
	float alpha = 1.0f;
	float x[3] = {0};
	struct vy_dispatch_input in[] = {
		vy_input_bytes(&alpha, sizeof(alpha)),
		vy_input_bytes(x, sizeof(x)),
		vy_input_bytes(x, 2 * sizeof(float)),
	};
	struct vy_dispatch_args args = {.program = p, .inputs = in, .n_inputs = 2};
	struct vy_error err;
	/* One input short. */
	cr_assert_eq(vy_dispatch(c, &args, NULL, &err), VY_ERROR_BAD_REQUEST);
	cr_assert_str_eq(err.name, "BAD_REQUEST");
	cr_assert(err.fix[0], "no Fix: %s", err.message);
	/* A trap names its kind and where it happened. */
	struct vy_program *trap = lv_trap_program();
	int32_t a[64] = {0};
	struct vy_dispatch_input tin[] = {vy_input_bytes(a, sizeof(a))};
	struct vy_dispatch_args targs = {.program = trap, .inputs = tin, .n_inputs = 1};
	cr_assert_eq(vy_dispatch(c, &targs, NULL, &err), VY_ERROR_TRAP);
	cr_assert(strstr(err.message, "int_div_zero"), "%s", err.message);
	cr_assert(err.at[0]);
	cr_assert(err.fix[0]);
	/* An id the daemon never compiled. */
	struct vy_dispatch_args unknown = {
		.program_id = "00000000000000000000000000000000", .inputs = in, .n_inputs = 3};
	int rc = vy_dispatch(c, &unknown, NULL, &err);
	cr_assert_eq(rc, VY_ERROR_NOT_FOUND, "%s", err.message);
	cr_assert(err.fix[0]);
	/* The connection survives every one of them. */
	lv_ok(vy_ping(c, &err), &err);
	vy_program_free(trap);
	vy_program_free(p);
	vy_client_close(c);
}

Test(dispatch, refuses_bad_arguments_before_sending)
{
	struct vy_client *c = lv_connect("lv-args");
	struct vy_program *p = lv_program("saxpy");
	struct vy_error err;
	struct vy_dispatch_args none = {0};
	cr_assert_eq(vy_dispatch(c, &none, NULL, &err), VY_ERROR_INVALID_ARGUMENT);
	struct vy_dispatch_input many[33];
	for (int k = 0; k < 33; k++) {
		many[k] = vy_input_bytes("abcd", 4);
	}
	struct vy_dispatch_args too_many = {.program = p, .inputs = many, .n_inputs = 33};
	cr_assert_eq(vy_dispatch(c, &too_many, NULL, &err), VY_ERROR_INVALID_ARGUMENT);
	struct vy_dispatch_input null_bytes[] = {vy_input_bytes(NULL, 4)};
	struct vy_dispatch_args nb = {.program = p, .inputs = null_bytes, .n_inputs = 1};
	cr_assert_eq(vy_dispatch(c, &nb, NULL, &err), VY_ERROR_INVALID_ARGUMENT);
	struct vy_dispatch_options opt = {.backend = "cuda"};
	struct vy_dispatch_args bad_backend = {.program = p, .options = &opt};
	cr_assert_eq(vy_dispatch(c, &bad_backend, NULL, &err), VY_ERROR_INVALID_ARGUMENT);
	cr_assert(strstr(err.message, "cuda"));
	struct vy_dispatch_input no_region[] = {vy_input_shm(NULL, 0, 4)};
	struct vy_dispatch_args nr = {.program = p, .inputs = no_region, .n_inputs = 1};
	cr_assert_eq(vy_dispatch(c, &nr, NULL, &err), VY_ERROR_INVALID_ARGUMENT);
	cr_assert_eq(vy_client_pending(c), 0);
	lv_ok(vy_ping(c, &err), &err);
	vy_program_free(p);
	vy_client_close(c);
}

Test(resident, alloc_upload_download_free)
{
	struct vy_client *c = lv_connect("lv-resident");
	struct vy_error err;
	uint64_t h = 0;
	lv_ok(vy_buffer_alloc(c, 64, NULL, &h, &err), &err);
	cr_assert_neq(h, 0);
	uint8_t data[64];
	for (int k = 0; k < 64; k++) {
		data[k] = (uint8_t)(k * 3);
	}
	lv_ok(vy_buffer_upload(c, h, 0, data, 64, &err), &err);
	lv_ok(vy_buffer_upload(c, h, 60, "wxyz", 4, &err), &err);
	uint8_t back[64];
	lv_ok(vy_buffer_download(c, h, 0, back, 64, &err), &err);
	cr_assert_eq(memcmp(back, data, 60), 0);
	cr_assert_eq(memcmp(back + 60, "wxyz", 4), 0);
	lv_ok(vy_buffer_download(c, h, 8, back, 4, &err), &err);
	cr_assert_eq(memcmp(back, data + 8, 4), 0);
	cr_assert_eq(vy_buffer_upload(c, h, 62, "wxyz", 4, &err), VY_ERROR_BAD_REQUEST);
	cr_assert(err.fix[0]);
	cr_assert_eq(vy_buffer_download(c, h, 0, back, 65, &err), VY_ERROR_BAD_REQUEST);
	cr_assert_eq(vy_buffer_upload(c, h, 0, NULL, 4, &err), VY_ERROR_INVALID_ARGUMENT);
	lv_ok(vy_buffer_free(c, h, &err), &err);
	cr_assert_eq(vy_buffer_free(c, h, &err), VY_ERROR_NOT_FOUND);
	cr_assert_str_eq(err.name, "NOT_FOUND");
	cr_assert(err.fix[0]);
	cr_assert_eq(vy_buffer_download(c, h, 0, back, 4, &err), VY_ERROR_NOT_FOUND);
	vy_client_close(c);
}

Test(resident, alloc_on_places_a_buffer_on_the_named_device)
{
	struct vy_client *c = lv_connect("lv-placed");
	struct vy_error err;
	uint32_t n = (uint32_t)vy_value_len(vy_value_get(vy_client_hello(c), "devices"));
	struct vy_dispatch_options on0 = {.has_device = true, .device = 0};
	uint64_t h = 0;
	lv_ok(vy_buffer_alloc_on(c, 64, NULL, &on0, &h, &err), &err);
	struct vy_reply *r = NULL;
	lv_ok(vy_buffers(c, &r, &err), &err);
	const struct vy_value *rows = vy_reply_get(r, "buffers");
	uint64_t device = UINT64_MAX;
	for (size_t i = 0; i < vy_value_len(rows); i++) {
		if (vy_value_get_u64(vy_value_item(rows, i), "handle", 0) == h) {
			device = vy_value_get_u64(vy_value_item(rows, i), "device", UINT64_MAX);
		}
	}
	vy_reply_destroy(r);
	cr_assert_eq(device, 0, "the buffers table puts it on device %lu", (unsigned long)device);
	struct vy_dispatch_options beyond = {.has_device = true, .device = n};
	uint64_t none = 0;
	cr_assert_eq(vy_buffer_alloc_on(c, 64, NULL, &beyond, &none, &err), VY_ERROR_BAD_REQUEST);
	cr_assert_str_eq(err.at, "config.device");
	struct vy_dispatch_options bad = {.backend = "cuda"};
	cr_assert_eq(vy_buffer_alloc_on(c, 64, NULL, &bad, &none, &err), VY_ERROR_INVALID_ARGUMENT);
	lv_ok(vy_buffer_free(c, h, &err), &err);
	vy_client_close(c);
}

Test(resident, inject_fault_is_refused_by_a_daemon_without_fault_injection)
{
	struct vy_client *c = lv_connect("lv-no-faults");
	struct vy_error err;
	struct vy_reply *r = NULL;
	struct vy_dispatch_options on0 = {.has_device = true, .device = 0};
	cr_assert_eq(vy_inject_fault(c, "device_lost", &on0, &r, &err), VY_ERROR_PERMISSION_DENIED);
	cr_assert_null(r);
	cr_assert(strstr(err.fix, "fault_injection") != NULL, "%s", err.fix);
	cr_assert_eq(vy_inject_fault(c, NULL, NULL, &r, &err), VY_ERROR_INVALID_ARGUMENT);
	vy_client_close(c);
}

Test(resident, named_buffers_are_shared_between_connections)
{
	struct vy_client *a = lv_connect("lv-named-a");
	struct vy_client *b = lv_connect("lv-named-b");
	struct vy_error err;
	char name[64];
	snprintf(name, sizeof(name), "lv-shared-%d", (int)getpid());
	uint64_t ha = 0;
	uint64_t hb = 0;
	lv_ok(vy_buffer_alloc(a, 16, name, &ha, &err), &err);
	lv_ok(vy_buffer_upload(a, ha, 0, "0123456789abcdef", 16, &err), &err);
	lv_ok(vy_buffer_alloc(b, 16, name, &hb, &err), &err);
	cr_assert_eq(ha, hb);
	char back[16];
	lv_ok(vy_buffer_download(b, hb, 0, back, 16, &err), &err);
	cr_assert_eq(memcmp(back, "0123456789abcdef", 16), 0);
	cr_assert_eq(vy_buffer_alloc(b, 32, name, &hb, &err), VY_ERROR_BAD_REQUEST);
	lv_ok(vy_buffer_free(b, ha, &err), &err);
	vy_client_close(a);
	vy_client_close(b);
}

Test(resident, chains_dispatches_on_the_device)
{
	struct vy_client *c = lv_connect("lv-chain");
	struct vy_program *p = lv_program("saxpy");
	struct vy_error err;
	float alpha;
	float *x = malloc(N * sizeof(float));
	float *y = malloc(N * sizeof(float));
	saxpy_data(&alpha, x, y);
	uint64_t hx = 0;
	uint64_t hy = 0;
	lv_ok(vy_buffer_alloc(c, N * sizeof(float), NULL, &hx, &err), &err);
	lv_ok(vy_buffer_alloc(c, N * sizeof(float), NULL, &hy, &err), &err);
	lv_ok(vy_buffer_upload(c, hx, 0, x, N * sizeof(float), &err), &err);
	lv_ok(vy_buffer_upload(c, hy, 0, y, N * sizeof(float), &err), &err);
	struct vy_dispatch_input in[] = {
		vy_input_bytes(&alpha, sizeof(alpha)),
		vy_input_resident(hx),
		vy_input_resident(hy),
	};
	uint64_t to[] = {hy};
	struct vy_dispatch_args args = {
		.program = p, .inputs = in, .n_inputs = 3, .outputs_to = to, .n_outputs_to = 1};
	for (int pass = 0; pass < 3; pass++) {
		struct vy_reply *r = NULL;
		lv_ok(vy_dispatch(c, &args, &r, &err), &err);
		cr_assert_eq(vy_reply_outputs(r), 1);
		cr_assert_null(vy_reply_output(r, 0, NULL), "the output stayed on the device");
		cr_assert_eq(vy_value_kind(vy_reply_get(r, "outputs.0")), VY_KIND_NIL);
		vy_reply_destroy(r);
	}
	lv_ok(vy_buffer_download(c, hy, 0, y, N * sizeof(float), &err), &err);
	for (int k = 0; k < N; k++) {
		cr_assert_float_eq(
			y[k], 6.0f * (float)k + 1.0f, 0.0f, "y[%d] = %g", k, (double)y[k]);
	}
	free(x);
	free(y);
	vy_program_free(p);
	vy_client_close(c);
}

Test(region, feeds_a_dispatch_without_the_socket)
{
	struct vy_client *c = lv_connect("lv-region");
	struct vy_client *other = lv_connect("lv-region-other");
	struct vy_program *p = lv_program("saxpy");
	struct vy_error err;
	struct vy_region *r = NULL;
	lv_ok(vy_region_attach(c, 2 * N * sizeof(float), &r, &err), &err);
	cr_assert_eq(vy_region_size(r), 2 * N * sizeof(float));
	cr_assert_neq(vy_region_id(r), 0);
	float *mem = vy_region_data(r);
	float alpha;
	saxpy_data(&alpha, mem, mem + N);
	struct vy_dispatch_input in[] = {
		vy_input_bytes(&alpha, sizeof(alpha)),
		vy_input_shm(r, 0, N * sizeof(float)),
		vy_input_shm(r, N * sizeof(float), N * sizeof(float)),
	};
	struct vy_dispatch_args args = {.program = p, .inputs = in, .n_inputs = 3};
	struct vy_reply *rep = NULL;
	lv_ok(vy_dispatch(c, &args, &rep, &err), &err);
	check_saxpy(rep);
	vy_reply_destroy(rep);
	/* The region belongs to its client, and its bounds are checked before sending. */
	cr_assert_eq(vy_dispatch(other, &args, NULL, &err), VY_ERROR_INVALID_ARGUMENT);
	in[2] = vy_input_shm(r, N * sizeof(float) + 4, N * sizeof(float));
	cr_assert_eq(vy_dispatch(c, &args, NULL, &err), VY_ERROR_INVALID_ARGUMENT);
	struct vy_region *empty = NULL;
	cr_assert_eq(vy_region_attach(c, 0, &empty, &err), VY_ERROR_INVALID_ARGUMENT);
	cr_assert_null(empty);
	lv_ok(vy_region_detach(c, r, &err), &err);
	lv_ok(vy_region_detach(c, NULL, &err), &err);
	vy_program_free(p);
	vy_client_close(other);
	vy_client_close(c);
}

/* The daemon's shm figures (stats: resident.shm_regions, resident.shm_bytes), read by `watch`. */
static void shm_figures(struct vy_client *watch, uint64_t *regions, uint64_t *bytes)
{
	struct vy_error err;
	struct vy_reply *r = NULL;
	lv_ok(vy_stats(watch, &r, &err), &err);
	*regions = vy_value_get_u64(vy_reply_value(r), "resident.shm_regions", UINT64_MAX);
	*bytes = vy_value_get_u64(vy_reply_value(r), "resident.shm_bytes", UINT64_MAX);
	vy_reply_destroy(r);
	cr_assert_neq(*regions, UINT64_MAX, "stats has no resident.shm_regions");
	cr_assert_neq(*bytes, UINT64_MAX, "stats has no resident.shm_bytes");
}

/* How many mappings of libvyre's region memfds the daemon holds (its /proc/PID/maps). */
static int region_mappings(struct vy_client *watch)
{
	struct vy_error err;
	struct vy_reply *r = NULL;
	lv_ok(vy_stats(watch, &r, &err), &err);
	uint64_t pid = vy_value_get_u64(vy_reply_value(r), "daemon.pid", 0);
	vy_reply_destroy(r);
	char path[64];
	snprintf(path, sizeof(path), "/proc/%llu/maps", (unsigned long long)pid);
	FILE *f = fopen(path, "r");
	cr_assert(f, "cannot read %s: %s", path, strerror(errno));
	char line[512];
	int n = 0;
	while (fgets(line, sizeof(line), f)) {
		n += strstr(line, "/memfd:vyre-region") != NULL;
	}
	fclose(f);
	return n;
}

Test(region, a_closed_client_releases_its_regions)
{
	struct vy_client *watch = lv_connect("lv-region-watch");
	uint64_t regions0, bytes0, regions, bytes;
	shm_figures(watch, &regions0, &bytes0);
	int maps0 = region_mappings(watch);
	struct vy_client *c = lv_connect("lv-region-close");
	struct vy_error err;
	struct vy_region *r = NULL;
	lv_ok(vy_region_attach(c, 3 * 4096, &r, &err), &err);
	memset(vy_region_data(r), 7, 3 * 4096);
	shm_figures(watch, &regions, &bytes);
	cr_assert_eq(regions, regions0 + 1, "the daemon holds the attached region");
	cr_assert_eq(bytes, bytes0 + 3 * 4096);
	cr_assert_eq(region_mappings(watch), maps0 + 1, "the daemon maps the region");
	/* Closed with the region still attached: the daemon releases it once it reads the close,
	 * so the figures are read again until they are back (for at most 30 s). */
	vy_client_close(c);
	int maps = -1;
	for (int i = 0; i < 3000; i++) {
		shm_figures(watch, &regions, &bytes);
		maps = region_mappings(watch);
		if (regions == regions0 && bytes == bytes0 && maps == maps0) {
			break;
		}
		usleep(10000);
	}
	cr_assert_eq(regions, regions0, "the closed client's region is still held");
	cr_assert_eq(bytes, bytes0, "the closed client's region bytes are still counted");
	cr_assert_eq(maps, maps0, "the daemon still maps the closed client's region");
	vy_client_close(watch);
}
