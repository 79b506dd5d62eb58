/*
 * Every operation of protocol v1 against a running vyred, with the errors a client can cause.
 * These tests share the suite's daemon; each uses programs renamed to a unique name, so cache
 * outcomes do not depend on other tests.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codec.h"
#include "spec.h"
#include "users.h"
#include "util.h"

static struct tc c;

static void setup(void)
{
	tc_open(&c, vyd_shared_socket(), "test_ops");
}

static void teardown(void)
{
	tc_close(&c);
}

TestSuite(ops, .init = setup, .fini = teardown, .timeout = 120);

Test(ops, hello_must_come_first)
{
	struct tc first;
	cr_assert_eq(tc_connect(&first, vyd_shared_socket()), 0);
	struct tc_reply r;
	cr_assert_eq(t_simple(&first, VY_OP_PING, &r), VY_E_BAD_REQUEST);
	cr_expect(strstr(r.r.error.fix, "hello"), "fix: %s", r.r.error.fix);
	tc_reply_free(&r);
	cr_assert_eq(tc_hello(&first, "late"), 0);
	cr_expect_eq(t_simple(&first, VY_OP_PING, &r), 0);
	tc_reply_free(&r);
	tc_close(&first);
}

Test(ops, hello_reports_server_devices_and_limits)
{
	struct tc fresh;
	cr_assert_eq(tc_connect(&fresh, vyd_shared_socket()), 0);
	struct tc_msg m;
	tc_begin(&fresh, &m, VY_OP_HELLO, 2);
	vy_pack_cstr(&m.pk, "protocol");
	msgpack_pack_uint32(&m.pk, 1);
	vy_pack_cstr(&m.pk, "client");
	vy_pack_cstr(&m.pk, "hello-test");
	struct tc_reply r;
	cr_assert_eq(tc_call(&fresh, &m, &r), 0);
	cr_assert(r.r.ok);
	uint64_t protocol = 0;
	uint64_t inflight = 0;
	char server[64] = "";
	cr_expect(tc_u64(&r, "protocol", &protocol) && protocol == 1);
	cr_expect(
		tc_str(&r, "server", server, sizeof(server)) && strncmp(server, "vyred ", 6) == 0);
	cr_expect(tc_u64(&r, "limits.max_inflight", &inflight) && inflight == 64);
	cr_expect_gt(tc_array_len(&r, "devices"), 0);
	tc_reply_free(&r);
	tc_close(&fresh);
}

Test(ops, other_protocol_versions_are_unsupported)
{
	struct tc fresh;
	cr_assert_eq(tc_connect(&fresh, vyd_shared_socket()), 0);
	struct tc_msg m;
	tc_begin(&fresh, &m, VY_OP_HELLO, 1);
	vy_pack_cstr(&m.pk, "protocol");
	msgpack_pack_uint32(&m.pk, 2);
	struct tc_reply r;
	cr_assert_eq(tc_call(&fresh, &m, &r), 0);
	cr_assert_eq(tc_code(&r), VY_E_UNSUPPORTED_PROTOCOL);
	cr_expect(strstr(r.r.error.message, "[1]"), "message: %s", r.r.error.message);
	tc_reply_free(&r);
	cr_expect_eq(tc_hello(&fresh, "second try"), 0, "the connection stays usable");
	tc_close(&fresh);
}

Test(ops, hello_twice_is_a_bad_request)
{
	cr_expect_eq(tc_hello(&c, "again"), VY_E_BAD_REQUEST);
}

Test(ops, ping_answers)
{
	struct tc_reply r;
	cr_expect_eq(t_simple(&c, VY_OP_PING, &r), 0);
	tc_reply_free(&r);
}

static void expect_bad_frame_then_close(const void *bytes, size_t len)
{
	struct tc bad;
	tc_open(&bad, vyd_shared_socket(), "bad-frame");
	cr_assert_eq(tc_send_raw(&bad, bytes, len), 0);
	struct tc_reply r;
	cr_assert_eq(tc_recv(&bad, &r, 30000), 0);
	cr_expect_eq(tc_code(&r), VY_E_BAD_FRAME, "code %d", tc_code(&r));
	cr_expect(r.r.error.fix[0]);
	tc_reply_free(&r);
	cr_expect(tc_wait_eof(&bad, 30000), "the daemon closes a connection after a bad frame");
	tc_close(&bad);
	/* Only that connection: this one still works. */
	cr_expect_eq(t_simple(&c, VY_OP_PING, &r), 0);
	tc_reply_free(&r);
}

Test(ops, zero_length_frame_is_bad_frame)
{
	static const uint8_t zero[4] = {0, 0, 0, 0};
	expect_bad_frame_then_close(zero, sizeof(zero));
}

Test(ops, frame_above_max_frame_is_bad_frame)
{
	static const uint8_t huge[4] = {0x7f, 0xff, 0xff, 0xff};
	expect_bad_frame_then_close(huge, sizeof(huge));
}

Test(ops, payload_that_is_not_a_map_is_bad_frame)
{
	static const uint8_t array[6] = {0, 0, 0, 2, 0x91, 0x01};
	expect_bad_frame_then_close(array, sizeof(array));
}

Test(ops, trailing_bytes_are_bad_frame)
{
	/* {"id": 1, "op": "ping"} followed by one more byte inside the frame. */
	static const uint8_t frame[] = {0, 0, 0, 14, 0x82, 0xa2, 'i', 'd', 0x01, 0xa2, 'o', 'p',
		0xa4, 'p', 'i', 'n', 'g', 0xc0};
	expect_bad_frame_then_close(frame, sizeof(frame));
}

Test(ops, unknown_operation_and_field_are_bad_requests)
{
	struct tc_msg m;
	msgpack_sbuffer_init(&m.sb);
	msgpack_packer_init(&m.pk, &m.sb, msgpack_sbuffer_write);
	vy_frame_begin(&m.sb);
	msgpack_pack_map(&m.pk, 2);
	vy_pack_cstr(&m.pk, "id");
	msgpack_pack_uint64(&m.pk, 77);
	vy_pack_cstr(&m.pk, "op");
	vy_pack_cstr(&m.pk, "launch_missiles");
	m.id = 77;
	struct tc_reply r;
	cr_assert_eq(tc_call(&c, &m, &r), 0);
	cr_expect_eq(tc_code(&r), VY_E_BAD_REQUEST);
	tc_reply_free(&r);

	tc_begin(&c, &m, VY_OP_PING, 1);
	vy_pack_cstr(&m.pk, "colour");
	msgpack_pack_uint32(&m.pk, 1);
	cr_assert_eq(tc_call(&c, &m, &r), 0);
	cr_expect_eq(tc_code(&r), VY_E_BAD_REQUEST);
	cr_expect(strstr(r.r.error.message, "colour"), "message: %s", r.r.error.message);
	tc_reply_free(&r);
}

static int compile(struct tc *cl, const struct vy_program *p, struct tc_reply *r)
{
	struct tc_msg m;
	tc_begin(cl, &m, VY_OP_COMPILE, 1);
	t_pack_program(&m.pk, p);
	cr_assert_eq(tc_call(cl, &m, r), 0);
	return tc_code(r);
}

static uint64_t hits_by_bytes(void)
{
	struct tc_reply r;
	cr_assert_eq(t_simple(&c, VY_OP_STATS, &r), 0);
	uint64_t n = 0;
	cr_assert(tc_u64(&r, "program_cache.hits_by_bytes", &n));
	tc_reply_free(&r);
	return n;
}

/* Compile `p` sent with its program map's fields in reverse order: not its canonical form. */
static int compile_reordered(struct tc *cl, const struct vy_program *p, struct tc_reply *r)
{
	msgpack_sbuffer canonical;
	msgpack_sbuffer_init(&canonical);
	msgpack_packer cpk;
	msgpack_packer_init(&cpk, &canonical, msgpack_sbuffer_write);
	vy_program_pack(p, &cpk);
	msgpack_unpacked u;
	msgpack_unpacked_init(&u);
	cr_assert_eq(msgpack_unpack_next(&u, canonical.data, canonical.size, NULL),
		MSGPACK_UNPACK_SUCCESS);
	const msgpack_object_map *map = &u.data.via.map;
	struct tc_msg m;
	tc_begin(cl, &m, VY_OP_COMPILE, 1);
	vy_pack_cstr(&m.pk, "program");
	msgpack_pack_map(&m.pk, map->size);
	for (uint32_t i = map->size; i-- > 0;) {
		msgpack_pack_object(&m.pk, map->ptr[i].key);
		msgpack_pack_object(&m.pk, map->ptr[i].val);
	}
	msgpack_unpacked_destroy(&u);
	msgpack_sbuffer_destroy(&canonical);
	cr_assert_eq(tc_call(cl, &m, r), 0);
	return tc_code(r);
}

Test(ops, compile_misses_then_hits)
{
	char name[64];
	t_unique(name, sizeof(name), "compile");
	struct vy_program *p = tc_program_renamed("vector_add", name);
	struct tc_reply r;
	cr_assert_eq(compile(&c, p, &r), 0, "%s", r.r.error.message);
	char cache[16] = "";
	char id[64] = "";
	/* A cold compile is a miss, or "disk" where the backend's disk cache already holds its
	 * shader (the Vulkan backend keys SPIR-V by content, and other tests compile alike). */
	cr_expect(tc_str(&r, "cache", cache, sizeof(cache)));
	cr_expect(strcmp(cache, "miss") == 0 || strcmp(cache, "disk") == 0, "cache: %s", cache);
	cr_expect(tc_str(&r, "program_id", id, sizeof(id)));
	cr_expect_eq(strlen(id), 32);
	tc_reply_free(&r);
	/* libvyre sends programs in canonical form, as here: a known one is found by its bytes,
	 * without being decoded. */
	uint64_t by_bytes = hits_by_bytes();
	cr_assert_eq(compile(&c, p, &r), 0);
	cr_expect(tc_str(&r, "cache", cache, sizeof(cache)));
	cr_expect_str_eq(cache, "hit");
	uint64_t ns = 1;
	cr_expect(tc_u64(&r, "compile_ns", &ns) && ns == 0);
	tc_reply_free(&r);
	/* Other tests share the daemon: its counter may grow beyond this test's hit. */
	cr_expect_geq(hits_by_bytes(), by_bytes + 1);
	/* The same program in another form is decoded, and found all the same. */
	char again[64] = "";
	cr_assert_eq(compile_reordered(&c, p, &r), 0, "%s", r.r.error.message);
	cr_expect(tc_str(&r, "cache", cache, sizeof(cache)));
	cr_expect(tc_str(&r, "program_id", again, sizeof(again)));
	cr_expect_str_eq(cache, "hit");
	cr_expect_str_eq(again, id, "the same program whatever the order of its fields");
	tc_reply_free(&r);
	vy_program_destroy(p);
}

Test(ops, invalid_program_lists_every_error)
{
	struct vy_program *p = t_invalid_program();
	struct tc_reply r;
	cr_assert_eq(compile(&c, p, &r), VY_E_INVALID_PROGRAM);
	cr_expect_geq(r.r.n_errors, 2, "errors: %zu", r.r.n_errors);
	cr_expect(r.r.error.at[0], "the first error has a location");
	cr_expect(r.r.error.fix[0]);
	tc_reply_free(&r);
	vy_program_destroy(p);
}

Test(ops, workgroup_beyond_the_device_is_unsupported)
{
	char name[64];
	t_unique(name, sizeof(name), "wide");
	struct vy_program *p = tc_program_renamed("vector_add", name);
	p->workgroup_size[0] = 4096;
	struct tc_reply r;
	cr_expect_eq(compile(&c, p, &r), VY_E_UNSUPPORTED_FEATURE, "%s", r.r.error.message);
	tc_reply_free(&r);
	vy_program_destroy(p);
}

Test(ops, dispatch_matches_the_reference)
{
	static const char *const files[] = {
		"vector_add", "saxpy", "select_clamp", "histogram_atomic"};
	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		struct vy_program *p = tc_program(files[f]);
		struct t_inputs in;
		t_inputs_make(p, 256, f + 1, &in);
		struct vy_outputs want;
		cr_assert_eq(t_reference(p, &in, NULL, &want), 0);
		struct tc_reply r;
		cr_assert_eq(t_dispatch(&c, p, &in, &r), 0);
		cr_assert(r.r.ok, "%s: %s", files[f], r.r.error.message);
		cr_expect(t_outputs_equal(&r, &want), "%s", files[f]);
		uint64_t wall = 0;
		cr_expect(tc_u64(&r, "timing.wall_ns", &wall) && wall > 0);
		tc_reply_free(&r);
		vy_outputs_finish(&want);
		t_inputs_free(&in);
		vy_program_destroy(p);
	}
}

Test(ops, dispatch_by_program_id)
{
	char name[64];
	t_unique(name, sizeof(name), "by-id");
	struct vy_program *p = tc_program_renamed("vector_add", name);
	struct tc_reply r;
	cr_assert_eq(compile(&c, p, &r), 0);
	char id[64];
	cr_assert(tc_str(&r, "program_id", id, sizeof(id)));
	tc_reply_free(&r);
	struct t_inputs in;
	t_inputs_make(p, 0, 7, &in);
	struct vy_outputs want;
	cr_assert_eq(t_reference(p, &in, NULL, &want), 0);
	struct tc_msg m;
	tc_begin(&c, &m, VY_OP_DISPATCH, 2);
	vy_pack_cstr(&m.pk, "program_id");
	vy_pack_cstr(&m.pk, id);
	t_pack_inputs(&m.pk, &in);
	cr_assert_eq(tc_call(&c, &m, &r), 0);
	cr_assert(r.r.ok, "%s", r.r.error.message);
	cr_expect(t_outputs_equal(&r, &want));
	char cache[16];
	cr_expect(tc_str(&r, "cache", cache, sizeof(cache)));
	cr_expect_str_eq(cache, "hit");
	tc_reply_free(&r);
	vy_outputs_finish(&want);
	t_inputs_free(&in);
	vy_program_destroy(p);
}

Test(ops, unknown_program_id_is_not_found)
{
	struct tc_msg m;
	tc_begin(&c, &m, VY_OP_DISPATCH, 2);
	vy_pack_cstr(&m.pk, "program_id");
	vy_pack_cstr(&m.pk, "0123456789abcdef0123456789abcdef");
	vy_pack_cstr(&m.pk, "inputs");
	msgpack_pack_array(&m.pk, 0);
	struct tc_reply r;
	cr_assert_eq(tc_call(&c, &m, &r), 0);
	cr_expect_eq(tc_code(&r), VY_E_NOT_FOUND);
	tc_reply_free(&r);
}

Test(ops, wrong_input_count_is_a_bad_request)
{
	struct vy_program *p = tc_program("vector_add");
	struct t_inputs in;
	t_inputs_make(p, 0, 3, &in);
	in.n = 1;
	struct tc_reply r;
	cr_assert_eq(t_dispatch(&c, p, &in, &r), 0);
	cr_expect_eq(tc_code(&r), VY_E_BAD_REQUEST);
	cr_expect(strstr(r.r.error.message, "2 inputs"), "message: %s", r.r.error.message);
	tc_reply_free(&r);
	in.n = 2;
	t_inputs_free(&in);
	vy_program_destroy(p);
}

static int dispatch_spec(const struct vy_program *p, const struct t_inputs *in, const char *key,
	int kind, double value, struct tc_reply *r)
{
	struct tc_msg m;
	tc_begin(&c, &m, VY_OP_DISPATCH, 3);
	t_pack_program(&m.pk, p);
	t_pack_inputs(&m.pk, in);
	vy_pack_cstr(&m.pk, "config");
	msgpack_pack_map(&m.pk, 1);
	vy_pack_cstr(&m.pk, "spec");
	msgpack_pack_map(&m.pk, 1);
	vy_pack_cstr(&m.pk, key);
	if (kind == 0) {
		msgpack_pack_double(&m.pk, value);
	} else {
		msgpack_pack_true(&m.pk);
	}
	cr_assert_eq(tc_call(&c, &m, r), 0);
	return tc_code(r);
}

Test(ops, spec_values_select_their_pipeline)
{
	char name[64];
	t_unique(name, sizeof(name), "spec");
	struct vy_program *p = tc_program_renamed("spec_scale", name);
	struct t_inputs in;
	t_inputs_make(p, 0, 5, &in);
	struct vy_spec_map spec;
	vy_spec_map_init(&spec);
	vy_spec_map_insert(&spec, "scale", vy_spec_f32(3.0f));
	struct vy_outputs want;
	cr_assert_eq(t_reference(p, &in, &spec, &want), 0);
	struct tc_reply r;
	cr_assert_eq(dispatch_spec(p, &in, "scale", 0, 3.0, &r), 0, "%s", r.r.error.message);
	cr_expect(t_outputs_equal(&r, &want));
	char cache[16];
	cr_expect(tc_str(&r, "cache", cache, sizeof(cache)) && strcmp(cache, "hit") != 0);
	tc_reply_free(&r);
	cr_assert_eq(dispatch_spec(p, &in, "scale", 0, 3.0, &r), 0);
	cr_expect(tc_str(&r, "cache", cache, sizeof(cache)) && strcmp(cache, "hit") == 0);
	tc_reply_free(&r);
	cr_expect_eq(dispatch_spec(p, &in, "shift", 0, 1.0, &r), VY_E_BAD_REQUEST);
	cr_expect(strstr(r.r.error.fix, "scale"), "the fix lists the declared names: %s",
		r.r.error.fix);
	tc_reply_free(&r);
	cr_expect_eq(dispatch_spec(p, &in, "scale", 1, 0, &r), VY_E_BAD_REQUEST);
	tc_reply_free(&r);
	vy_outputs_finish(&want);
	vy_spec_map_finish(&spec);
	t_inputs_free(&in);
	vy_program_destroy(p);
}

Test(ops, traps_name_their_kind)
{
	struct vy_program *p = t_trap_program("trap");
	struct t_inputs in;
	t_inputs_make(p, 0, 1, &in);
	struct tc_reply r;
	cr_assert_eq(t_dispatch(&c, p, &in, &r), 0);
	cr_expect_eq(tc_code(&r), VY_E_TRAP, "code %d: %s", tc_code(&r), r.r.error.message);
	cr_expect(strstr(r.r.error.message, "int_div_zero"), "message: %s", r.r.error.message);
	tc_reply_free(&r);
	t_inputs_free(&in);
	vy_program_destroy(p);
}

Test(ops, loop_limit_traps)
{
	struct vy_program *p = t_loop_program("loop-limit");
	struct tc_msg m;
	tc_begin(&c, &m, VY_OP_DISPATCH, 3);
	t_pack_program(&m.pk, p);
	vy_pack_cstr(&m.pk, "inputs");
	msgpack_pack_array(&m.pk, 0);
	vy_pack_cstr(&m.pk, "config");
	msgpack_pack_map(&m.pk, 1);
	vy_pack_cstr(&m.pk, "max_loop_iterations");
	msgpack_pack_uint32(&m.pk, 10);
	struct tc_reply r;
	cr_assert_eq(tc_call(&c, &m, &r), 0);
	cr_expect_eq(tc_code(&r), VY_E_TRAP, "%s", r.r.error.message);
	cr_expect(strstr(r.r.error.message, "loop_limit"), "message: %s", r.r.error.message);
	tc_reply_free(&r);
	vy_program_destroy(p);
}

Test(ops, timeout_ends_a_long_dispatch)
{
	struct vy_program *p = t_slow_program("slow-timeout");
	struct t_slow slow = t_slow_calibrate(&c, p, -1, 300);
	struct tc_msg m;
	t_pack_slow(&c, &m, p, slow, -1, 5);
	struct tc_reply r;
	cr_assert_eq(tc_call(&c, &m, &r), 0);
	cr_expect_eq(tc_code(&r), VY_E_TIMEOUT, "code %d: %s", tc_code(&r), r.r.error.message);
	tc_reply_free(&r);
	vy_program_destroy(p);
}

static uint64_t alloc(struct tc *cl, uint64_t size, const char *name, struct tc_reply *r)
{
	struct tc_msg m;
	tc_begin(cl, &m, VY_OP_ALLOC, name ? 2 : 1);
	vy_pack_cstr(&m.pk, "size");
	msgpack_pack_uint64(&m.pk, size);
	if (name) {
		vy_pack_cstr(&m.pk, "name");
		vy_pack_cstr(&m.pk, name);
	}
	cr_assert_eq(tc_call(cl, &m, r), 0);
	uint64_t h = 0;
	if (r->r.ok) {
		cr_assert(tc_u64(r, "handle", &h));
	}
	return h;
}

/* Send a request whose reply only matters for its error code. */
static int call_code(struct tc *cl, struct tc_msg *m)
{
	struct tc_reply r;
	cr_assert_eq(tc_call(cl, m, &r), 0);
	int code = tc_code(&r);
	tc_reply_free(&r);
	return code;
}

static int upload(struct tc *cl, uint64_t h, uint64_t offset, const void *data, size_t len)
{
	struct tc_msg m;
	tc_begin(cl, &m, VY_OP_UPLOAD, 3);
	vy_pack_cstr(&m.pk, "handle");
	msgpack_pack_uint64(&m.pk, h);
	vy_pack_cstr(&m.pk, "offset");
	msgpack_pack_uint64(&m.pk, offset);
	vy_pack_cstr(&m.pk, "data");
	msgpack_pack_bin(&m.pk, len);
	msgpack_pack_bin_body(&m.pk, data, len);
	return call_code(cl, &m);
}

/* download into buf; returns the error code, the length read in *len. */
static int download(
	struct tc *cl, uint64_t h, uint64_t offset, int64_t length, void *buf, size_t *len)
{
	struct tc_msg m;
	tc_begin(cl, &m, VY_OP_DOWNLOAD, length >= 0 ? 3 : 2);
	vy_pack_cstr(&m.pk, "handle");
	msgpack_pack_uint64(&m.pk, h);
	vy_pack_cstr(&m.pk, "offset");
	msgpack_pack_uint64(&m.pk, offset);
	if (length >= 0) {
		vy_pack_cstr(&m.pk, "length");
		msgpack_pack_uint64(&m.pk, (uint64_t)length);
	}
	struct tc_reply r;
	cr_assert_eq(tc_call(cl, &m, &r), 0);
	int code = tc_code(&r);
	if (code == 0) {
		struct vy_mp_reader rd;
		struct vy_mp_obj o;
		cr_assert(tc_field(&r, "data", &rd));
		cr_assert_eq(vy_mp_read(&rd, &o), VY_MP_OK);
		cr_assert_eq(o.type, VY_MP_BIN);
		memcpy(buf, o.data, o.len);
		*len = o.len;
	}
	tc_reply_free(&r);
	return code;
}

static int free_handle(struct tc *cl, uint64_t h)
{
	struct tc_msg m;
	tc_begin(cl, &m, VY_OP_FREE, 1);
	vy_pack_cstr(&m.pk, "handle");
	msgpack_pack_uint64(&m.pk, h);
	return call_code(cl, &m);
}

Test(ops, resident_buffers_round_trip)
{
	struct tc_reply r;
	uint64_t h = alloc(&c, 64, NULL, &r);
	cr_assert(h, "%s", r.r.error.message);
	tc_reply_free(&r);
	uint8_t data[16];
	for (int i = 0; i < 16; i++) {
		data[i] = (uint8_t)(0xa0 + i);
	}
	cr_expect_eq(upload(&c, h, 8, data, sizeof(data)), 0);
	uint8_t back[64];
	size_t len = 0;
	cr_assert_eq(download(&c, h, 0, -1, back, &len), 0);
	cr_expect_eq(len, 64);
	cr_expect_eq(memcmp(back + 8, data, sizeof(data)), 0);
	cr_expect_eq(download(&c, h, 8, 16, back, &len), 0);
	cr_expect_eq(len, 16);
	cr_expect_eq(memcmp(back, data, sizeof(data)), 0);
	cr_expect_eq(upload(&c, h, 60, data, sizeof(data)), VY_E_BAD_REQUEST, "out of range");
	cr_expect_eq(download(&c, h, 32, 40, back, &len), VY_E_BAD_REQUEST, "out of range");
	cr_expect_eq(free_handle(&c, h), 0);
	cr_expect_eq(download(&c, h, 0, -1, back, &len), VY_E_NOT_FOUND);
	cr_expect_eq(free_handle(&c, h), VY_E_NOT_FOUND);
	cr_expect_eq(upload(&c, 12345, 0, data, 4), VY_E_NOT_FOUND);
}

Test(ops, quota_limits_resident_bytes)
{
	struct tc_reply r;
	uint64_t h = alloc(&c, (uint64_t)4 << 30, NULL, &r);
	cr_expect_eq(h, 0);
	cr_expect_eq(tc_code(&r), VY_E_QUOTA_EXCEEDED);
	tc_reply_free(&r);
}

/* The program and its three inputs: the first sent inline, the other two as resident handles. */
static void pack_resident_inputs(struct tc_msg *m, const struct vy_program *p,
	const struct t_inputs *in, uint64_t second, uint64_t third)
{
	t_pack_program(&m->pk, p);
	vy_pack_cstr(&m->pk, "inputs");
	msgpack_pack_array(&m->pk, 3);
	msgpack_pack_bin(&m->pk, in->in[0].len);
	msgpack_pack_bin_body(&m->pk, in->in[0].data, in->in[0].len);
	const uint64_t handles[] = {second, third};
	for (size_t i = 0; i < 2; i++) {
		msgpack_pack_map(&m->pk, 1);
		vy_pack_cstr(&m->pk, "resident");
		msgpack_pack_uint64(&m->pk, handles[i]);
	}
}

Test(ops, resident_dispatch_chains_on_the_device)
{
	struct vy_program *p = tc_program("saxpy");
	struct t_inputs in;
	t_inputs_make(p, 256, 11, &in);
	struct vy_outputs want;
	cr_assert_eq(t_reference(p, &in, NULL, &want), 0);
	struct tc_reply r;
	uint64_t x = alloc(&c, in.in[1].len, NULL, &r);
	tc_reply_free(&r);
	uint64_t y = alloc(&c, in.in[2].len, NULL, &r);
	tc_reply_free(&r);
	cr_assert(x && y);
	cr_assert_eq(upload(&c, x, 0, in.in[1].data, in.in[1].len), 0);
	cr_assert_eq(upload(&c, y, 0, in.in[2].data, in.in[2].len), 0);

	/* y stays intact when its output comes back in the reply. */
	struct tc_msg m;
	tc_begin(&c, &m, VY_OP_DISPATCH, 2);
	pack_resident_inputs(&m, p, &in, x, y);
	cr_assert_eq(tc_call(&c, &m, &r), 0);
	cr_assert(r.r.ok, "%s", r.r.error.message);
	cr_expect(t_outputs_equal(&r, &want));
	tc_reply_free(&r);
	uint8_t *back = malloc(in.in[2].len);
	size_t len = 0;
	cr_assert_eq(download(&c, y, 0, -1, back, &len), 0);
	cr_expect_eq(memcmp(back, in.in[2].data, len), 0, "an input is never changed in place");

	/* With outputs_to, the output goes to y and the reply holds nil. */
	tc_begin(&c, &m, VY_OP_DISPATCH, 3);
	pack_resident_inputs(&m, p, &in, x, y);
	vy_pack_cstr(&m.pk, "outputs_to");
	msgpack_pack_array(&m.pk, 1);
	msgpack_pack_uint64(&m.pk, y);
	cr_assert_eq(tc_call(&c, &m, &r), 0);
	cr_assert(r.r.ok, "%s", r.r.error.message);
	const uint8_t *data[1];
	size_t lens[1];
	bool nil[1];
	cr_expect_eq(tc_outputs(&r, data, lens, nil, 1), 1);
	cr_expect(nil[0], "an output sent to a resident buffer is nil in the reply");
	tc_reply_free(&r);
	cr_assert_eq(download(&c, y, 0, -1, back, &len), 0);
	cr_expect_eq(len, want.items[0].len);
	cr_expect_eq(memcmp(back, want.items[0].data, len), 0);

	/* A handle that does not exist is NOT_FOUND, naming the input. */
	tc_begin(&c, &m, VY_OP_DISPATCH, 2);
	pack_resident_inputs(&m, p, &in, 42, y);
	cr_assert_eq(tc_call(&c, &m, &r), 0);
	cr_expect_eq(tc_code(&r), VY_E_NOT_FOUND);
	cr_expect(strstr(r.r.error.at, "inputs[1]"), "at: %s", r.r.error.at);
	tc_reply_free(&r);

	free(back);
	cr_expect_eq(free_handle(&c, x), 0);
	cr_expect_eq(free_handle(&c, y), 0);
	vy_outputs_finish(&want);
	t_inputs_free(&in);
	vy_program_destroy(p);
}

Test(ops, named_buffers_are_shared_within_a_user)
{
	char name[64];
	t_unique(name, sizeof(name), "named");
	struct tc other;
	tc_open(&other, vyd_shared_socket(), "named-peer");
	struct tc_reply r;
	uint64_t h = alloc(&c, 32, name, &r);
	cr_assert(h);
	uint64_t attached = 1;
	cr_expect(tc_u64(&r, "attached", &attached) && attached == 0);
	tc_reply_free(&r);
	uint64_t h2 = alloc(&other, 32, name, &r);
	cr_expect_eq(h2, h, "the same name gives the same buffer");
	cr_expect(tc_u64(&r, "attached", &attached) && attached == 1);
	tc_reply_free(&r);
	cr_expect_eq(alloc(&other, 64, name, &r), 0);
	cr_expect_eq(tc_code(&r), VY_E_BAD_REQUEST, "another size is refused");
	tc_reply_free(&r);
	uint8_t data[32];
	memset(data, 0x5a, sizeof(data));
	cr_expect_eq(upload(&other, h, 0, data, sizeof(data)), 0);
	uint64_t unnamed = alloc(&c, 16, NULL, &r);
	tc_reply_free(&r);
	cr_expect_eq(free_handle(&other, unnamed), VY_E_NOT_FOUND,
		"another connection's unnamed buffer is not visible");
	tc_close(&c);
	/* The named buffer outlives the connection that made it. */
	uint8_t back[32];
	size_t len = 0;
	cr_expect_eq(download(&other, h, 0, -1, back, &len), 0);
	cr_expect_eq(memcmp(back, data, sizeof(data)), 0);
	cr_expect_eq(free_handle(&other, h), 0);
	cr_expect_eq(download(&other, h, 0, -1, back, &len), VY_E_NOT_FOUND);
	tc_close(&other);
	tc_open(&c, vyd_shared_socket(), "test_ops");
}

/* A request without arguments; its error code, or -1 when the connection failed (no assert:
 * it runs as another user, in a thread of its own). */
static int plain_request(struct tc *o, enum vy_op op, struct tc_reply *r)
{
	struct tc_msg m;
	tc_begin(o, &m, op, 0);
	return tc_call(o, &m, r) == 0 ? tc_code(r) : -1;
}

struct others {
	uint64_t h;
	uint64_t named;
};

/* As nobody: root's buffers are NOT_FOUND, admin operations are refused, and the tables list
 * nobody's own connection and buffers only. 0, or the check that failed. */
static int nobody_checks(void *arg)
{
	const struct others *b = arg;
	struct tc o;
	if (tc_connect(&o, vyd_shared_socket()) != 0 || tc_hello(&o, "nobody") != 0) {
		return 11;
	}
	int failed = 0;
	struct tc_reply rr = {0};
	struct tc_reply cl = {0};
	struct tc_reply bl = {0};
	if (plain_request(&o, VY_OP_CACHE_CLEAR, &rr) != VY_E_PERMISSION_DENIED) {
		failed = 12;
	} else if (free_handle(&o, b->h) != VY_E_NOT_FOUND ||
		   free_handle(&o, b->named) != VY_E_NOT_FOUND) {
		failed = 13;
	} else if (plain_request(&o, VY_OP_CLIENTS, &cl) != 0 ||
		   tc_array_len(&cl, "clients") != 1) {
		failed = 14;
	} else if (plain_request(&o, VY_OP_BUFFERS, &bl) != 0 ||
		   tc_array_len(&bl, "buffers") != 0) {
		failed = 15;
	}
	tc_reply_free(&rr);
	tc_reply_free(&cl);
	tc_reply_free(&bl);
	tc_close(&o);
	return failed;
}

Test(ops, another_user_sees_not_found_and_no_admin)
{
	if (getuid() != 0) {
		cr_skip_test("needs root to connect as another user");
	}
	struct tc_reply r;
	struct others b;
	b.h = alloc(&c, 16, NULL, &r);
	tc_reply_free(&r);
	cr_assert(b.h);
	char name[64];
	t_unique(name, sizeof(name), "root-named");
	b.named = alloc(&c, 16, name, &r);
	tc_reply_free(&r);
	struct t_user *nobody = t_user_start(65534, 65534, nobody_checks, &b);
	cr_assert(nobody, "cannot start a client as nobody: %s", strerror(errno));
	int failed = t_user_wait(nobody);
	cr_expect_eq(failed, 0, "the other user's checks: %d", failed);
	cr_expect_eq(free_handle(&c, b.h), 0, "the owner still has its buffer");
	cr_expect_eq(free_handle(&c, b.named), 0);
}

Test(ops, stats_tree_has_every_section)
{
	struct tc_reply r;
	cr_assert_eq(t_simple(&c, VY_OP_STATS, &r), 0);
	static const char *const paths[] = {"daemon.version", "daemon.uptime_ms", "daemon.pid",
		"devices", "pipeline_cache.hits", "pipeline_cache.compile_ns_p99",
		"spec_cache.entries", "program_cache.entries", "resident.buffers", "clients.count",
		"queue.wait_p99_ns", "requests.by_op.hello", "requests.by_error.BUSY",
		"latency.hello.p50_ns"};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		struct vy_mp_reader rd;
		cr_expect(tc_field(&r, paths[i], &rd), "stats has no %s", paths[i]);
	}
	uint64_t hellos = 0;
	cr_expect(tc_u64(&r, "requests.by_op.hello", &hellos) && hellos >= 1);
	uint64_t id = 0;
	cr_expect_gt(tc_array_len(&r, "clients.list"), 0);
	tc_reply_free(&r);
	id = t_client_id(&c);
	cr_assert_eq(t_simple(&c, VY_OP_STATS, &r), 0);
	uint64_t requests = 0;
	cr_expect(t_client_stat(&r, id, "requests", &requests) && requests >= 2);
	tc_reply_free(&r);
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The global counters of a stats reply that a_client_row_holds_what_the_client_did moves. */
static const char *const moved[] = {"requests.by_op.ping", "requests.by_op.alloc",
	"requests.by_op.clients", "requests.by_op.stats", "requests.by_error.BAD_REQUEST",
	"latency.ping.count", "latency.alloc.count", "latency.stats.count"};
#define N_MOVED (sizeof(moved) / sizeof(moved[0]))

static void read_moved(const struct tc_reply *r, uint64_t *out)
{
	for (size_t i = 0; i < N_MOVED; i++) {
		cr_assert(tc_u64(r, moved[i], &out[i]), "stats has no %s", moved[i]);
	}
}

Test(ops, a_client_row_holds_what_the_client_did)
{
	/* A fresh connection does a known sequence; its row in stats must count exactly that, the
	 * global counters must move by exactly that (the suite's tests run one at a time), and its
	 * age lies between the time this test slept and the time the test measured. */
	uint64_t before = monotonic_ns();
	struct tc me;
	tc_open(&me, vyd_shared_socket(), "row-figures");
	struct tc_reply r;
	uint64_t first[N_MOVED];
	cr_assert_eq(t_simple(&me, VY_OP_STATS, &r), 0);
	read_moved(&r, first);
	tc_reply_free(&r);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(t_simple(&me, VY_OP_PING, &r), 0);
		tc_reply_free(&r);
	}
	struct tc_msg m;
	tc_begin(&me, &m, VY_OP_PING, 1);
	vy_pack_cstr(&m.pk, "colour");
	msgpack_pack_uint32(&m.pk, 1);
	cr_assert_eq(tc_call(&me, &m, &r), 0);
	cr_assert_eq(tc_code(&r), VY_E_BAD_REQUEST);
	tc_reply_free(&r);
	uint64_t h1 = alloc(&me, 1000, NULL, &r);
	tc_reply_free(&r);
	uint64_t h2 = alloc(&me, 24, NULL, &r);
	tc_reply_free(&r);
	cr_assert(h1 && h2);
	uint64_t id = t_client_id(&me);
	struct timespec nap = {0, 200 * 1000000};
	nanosleep(&nap, NULL);
	cr_assert_eq(t_simple(&me, VY_OP_STATS, &r), 0);
	uint64_t elapsed_ns = monotonic_ns() - before;
	/* hello, a stats, 3 pings, the refused ping, 2 allocs, clients and this stats, which is
	 * the one request in flight while its reply is packed. */
	static const struct {
		const char *key;
		uint64_t want;
	} counts[] = {{"requests", 10}, {"errors", 1}, {"resident_bytes", 1024}, {"in_flight", 1}};
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		uint64_t v = UINT64_MAX;
		cr_expect(t_client_stat(&r, id, counts[i].key, &v), "no %s", counts[i].key);
		cr_expect_eq(v, counts[i].want, "%s is %llu, not %llu", counts[i].key,
			(unsigned long long)v, (unsigned long long)counts[i].want);
	}
	uint64_t pid = 0;
	uint64_t uid = 0;
	cr_expect(t_client_stat(&r, id, "pid", &pid) && pid == (uint64_t)getpid());
	cr_expect(t_client_stat(&r, id, "uid", &uid) && uid == (uint64_t)getuid());
	uint64_t ms = 0;
	cr_assert(t_client_stat(&r, id, "connected_ms", &ms));
	cr_expect_geq(
		ms, 200, "connected %llu ms, yet the test slept 200 ms", (unsigned long long)ms);
	cr_expect_leq(ms * 1000000, elapsed_ns, "connected %llu ms, longer than the test's %llu ns",
		(unsigned long long)ms, (unsigned long long)elapsed_ns);
	/* The refused ping never decoded: an error, but no ping and no latency. A reply's latency
	 * is recorded once it is sent, so this stats counts itself in by_op only. */
	static const uint64_t delta[N_MOVED] = {3, 2, 1, 1, 1, 3, 2, 1};
	uint64_t last[N_MOVED];
	read_moved(&r, last);
	for (size_t i = 0; i < N_MOVED; i++) {
		cr_expect_eq(last[i] - first[i], delta[i], "%s moved by %llu, not %llu", moved[i],
			(unsigned long long)(last[i] - first[i]), (unsigned long long)delta[i]);
	}
	tc_reply_free(&r);
	cr_expect_eq(free_handle(&me, h1), 0);
	cr_expect_eq(free_handle(&me, h2), 0);
	tc_close(&me);
}

Test(ops, tables_list_clients_buffers_and_cache)
{
	struct tc_reply r;
	uint64_t h = alloc(&c, 8, NULL, &r);
	tc_reply_free(&r);
	char name[64];
	t_unique(name, sizeof(name), "listed");
	struct vy_program *p = tc_program_renamed("vector_add", name);
	cr_assert_eq(compile(&c, p, &r), 0);
	tc_reply_free(&r);
	cr_assert_eq(t_simple(&c, VY_OP_BUFFERS, &r), 0);
	uint64_t size = 0;
	cr_expect(tc_row_u64(&r, "buffers", "handle", h, "size", &size) && size == 8);
	tc_reply_free(&r);
	cr_assert_eq(t_simple(&c, VY_OP_CLIENTS, &r), 0);
	cr_expect_gt(tc_array_len(&r, "clients"), 0);
	tc_reply_free(&r);
	cr_assert_eq(t_simple(&c, VY_OP_CACHE_LIST, &r), 0);
	cr_expect_gt(tc_array_len(&r, "pipelines"), 0);
	cr_expect_gt(tc_array_len(&r, "programs"), 0);
	tc_reply_free(&r);
	cr_expect_eq(free_handle(&c, h), 0);
	vy_program_destroy(p);
}
