/*
 * Hostile input: the program decoder, the request decoder, the JSON form and the frame reader fed
 * truncated documents, wrong types, unknown fields, absurd counts and lengths, deep nesting and
 * random bytes. Each must fail with its error code and a message, never crash, hang or allocate
 * in proportion to what the input claims. The suite runs under ASan and UBSan, which turn an
 * out-of-bounds read of a truncated input into a failure: inputs are therefore copied into heap
 * blocks of exactly their length.
 */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <msgpack.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec.h"
#include "envelope.h"
#include "err.h"
#include "frame.h"
#include "ir.h"
#include "json.h"
#include "validate.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HOSTILE_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define HOSTILE_ASAN 1
#endif
#ifdef HOSTILE_ASAN
/* From <sanitizer/allocator_interface.h>, which gcc does not ship; libasan exports it. */
int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
	void (*free_hook)(const volatile void *));
#endif

/* --- helpers ------------------------------------------------------------------------------- */

/* A heap copy of exactly `len` bytes, so reading past the end is an ASan error. */
static uint8_t *exact_copy(const void *data, size_t len)
{
	uint8_t *copy = malloc(len ? len : 1);
	cr_assert_not_null(copy);
	memcpy(copy, data, len);
	return copy;
}

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * The largest single allocation since the last reset. Under ASan a malloc hook sees every
 * allocation; elsewhere the tracking is off and largest_allocation() stays 0.
 */
static size_t largest_seen;

#ifdef HOSTILE_ASAN
static void on_malloc(const volatile void *ptr, size_t size)
{
	(void)ptr;
	if (size > largest_seen) {
		largest_seen = size;
	}
}

static void on_free(const volatile void *ptr)
{
	(void)ptr;
}
#endif

static void track_allocations(void)
{
#ifdef HOSTILE_ASAN
	static bool installed;
	if (!installed) {
		__sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
		installed = true;
	}
#endif
	largest_seen = 0;
}

static size_t largest_allocation(void)
{
	return largest_seen;
}

/* Run fn(arg) on a thread with a 1 MiB stack: unbounded recursion on deep input overflows it. */
static void run_on_small_stack(void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	pthread_t thread;
	cr_assert_eq(pthread_attr_init(&attr), 0);
	cr_assert_eq(pthread_attr_setstacksize(&attr, (size_t)1 << 20), 0);
	cr_assert_eq(pthread_create(&thread, &attr, fn, arg), 0);
	cr_assert_eq(pthread_join(thread, NULL), 0);
	pthread_attr_destroy(&attr);
}

static void init_packer(msgpack_sbuffer *sb, msgpack_packer *pk)
{
	msgpack_sbuffer_init(sb);
	msgpack_packer_init(pk, sb, msgpack_sbuffer_write);
}

static void pack_str(msgpack_packer *pk, const char *s)
{
	size_t n = strlen(s);
	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s, n);
}

/* Decode a program from an exact heap copy; the result must be an error with code and message. */
static int decode_program_copy(const void *data, size_t len, struct vy_err *err)
{
	uint8_t *copy = exact_copy(data, len);
	struct vy_program *p = NULL;
	vy_err_clear(err);
	int rc = vy_program_decode(copy, len, &p, err);
	vy_program_destroy(p);
	free(copy);
	return rc;
}

static void expect_invalid_program(const void *data, size_t len, struct vy_err *err)
{
	int rc = decode_program_copy(data, len, err);
	cr_assert_eq(rc, VY_E_INVALID_PROGRAM, "decoding %zu bytes gave %d (%s)", len, rc,
		vy_err_name(rc));
	cr_assert_eq(err->code, VY_E_INVALID_PROGRAM);
	cr_assert_neq(err->message[0], '\0', "an error without a message");
	cr_assert_neq(err->fix[0], '\0', "an error without a fix");
}

static int decode_request_copy(const void *data, size_t len, struct vy_err *err)
{
	uint8_t *copy = exact_copy(data, len);
	struct vy_request req;
	vy_err_clear(err);
	int rc = vy_request_decode(copy, len, &req, err);
	if (rc == 0) {
		vy_request_finish(&req);
	} else {
		cr_assert_null(req.arena, "a failed request decode kept its arena");
		cr_assert_null(req.program, "a failed request decode kept its program");
	}
	free(copy);
	return rc;
}

/* --- sample documents ---------------------------------------------------------------------- */

/* A valid program that uses every node kind and most expression kinds. */
static struct vy_program *sample_program(void)
{
	struct vy_program *p = vy_program_create("hostile sample", 64, 1, 1);
	vy_program_add_buffer(p, "x", 0, VY_ACCESS_READ_ONLY, VY_TYPE_F32, 0);
	struct vy_buffer *b =
		vy_program_add_buffer(p, "y", 1, VY_ACCESS_READ_WRITE, VY_TYPE_F32, 0);
	b->has_hints = true;
	b->hints.alignment = 64;
	b->hints.coalesce_axis = 0;
	b->hints.locality = VY_LOCALITY_STREAMING;
	b = vy_program_add_buffer(p, "counts", 2, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 16);
	b->live_out = true;
	vy_program_add_buffer(p, "tile", 3, VY_ACCESS_WORKGROUP, VY_TYPE_F32, 64);
	b = vy_program_add_buffer(p, "o", 4, VY_ACCESS_WRITE_ONLY, VY_TYPE_I32, 4);
	b->output = true;

	/* after the grid_sync barrier the variable i is gone: the code there reads gid itself */
	struct vy_expr *i = vy_ir_gid(p, 0);
	struct vy_expr *axpy = vy_ir_fma(p, vy_ir_spec(p, "a", VY_TYPE_F32, 0x40000000u),
		vy_ir_load(p, "x", i), vy_ir_load(p, "y", i));
	struct vy_node *guard = vy_ir_if(p, vy_ir_binary(p, VY_BIN_LT, i, vy_ir_len(p, "y")),
		vy_ir_seq(p, vy_ir_store(p, "y", i, axpy), NULL),
		vy_ir_seq(p, vy_ir_return(p), NULL));

	struct vy_expr *bump =
		vy_ir_atomic(p, VY_ATOMIC_ADD, "counts", vy_ir_var(p, "k"), vy_ir_u32(p, 1));
	struct vy_node *loop = vy_ir_loop(p, "k", vy_ir_u32(p, 0), vy_ir_u32(p, 4),
		vy_ir_seq(p, vy_ir_let(p, "t", bump), NULL));

	struct vy_expr *pick = vy_ir_select(p, vy_ir_bool(p, true), vy_ir_i32(p, -3),
		vy_ir_unary(p, VY_UN_NEG, vy_ir_i32(p, 7)));
	struct vy_block inner = vy_ir_seq(p, vy_ir_let(p, "v", pick),
		vy_ir_store(p, "o", vy_ir_u32(p, 0), vy_ir_var(p, "v")), NULL);
	struct vy_node *region = vy_ir_region(p, "gen", vy_ir_seq(p, vy_ir_block(p, inner), NULL));

	struct vy_expr *reduce = vy_ir_subgroup_reduce(
		p, VY_REDUCE_ADD, vy_ir_subgroup_shuffle(p, i, vy_ir_subgroup_lane(p)));
	struct vy_expr *cas =
		vy_ir_atomic_cas(p, "counts", vy_ir_u32(p, 0), vy_ir_u32(p, 1), vy_ir_u32(p, 2));
	struct vy_expr *tile_value = vy_ir_cast(p, VY_TYPE_F32, vy_ir_wgid(p, 0));

	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_let(p, "i", vy_ir_gid(p, 0)),
			   vy_ir_assign(p, "i",
				   vy_ir_binary(p, VY_BIN_ADD, vy_ir_var(p, "i"), vy_ir_u32(p, 0))),
			   vy_ir_store(p, "tile", vy_ir_lid(p, 0), tile_value),
			   vy_ir_barrier(p, VY_ORDER_SEQ_CST), loop, region,
			   vy_ir_barrier(p, VY_ORDER_GRID_SYNC), vy_ir_let(p, "s", reduce),
			   vy_ir_let(p, "cas", cas),
			   vy_ir_let(p, "ballot", vy_ir_subgroup_ballot(p, vy_ir_bool(p, false))),
			   vy_ir_let(p, "size", vy_ir_subgroup_size(p)),
			   vy_ir_let(p, "root", vy_ir_unary(p, VY_UN_SQRT, vy_ir_f32(p, 2.5f))),
			   vy_ir_barrier(p, VY_ORDER_ACQ_REL), guard, NULL));
	return p;
}

static void sample_encoding(msgpack_sbuffer *sb)
{
	struct vy_program *p = sample_program();
	vy_program_encode(p, sb);
	vy_program_destroy(p);
}

/* A compile request (program and a config using every field) framed for the wire. */
static void sample_compile_frame(msgpack_sbuffer *sb, size_t *payload_off)
{
	msgpack_packer pk;
	init_packer(sb, &pk);
	size_t off = vy_frame_begin(sb);
	vy_request_pack_head(&pk, 42, VY_OP_COMPILE, 2);
	struct vy_program *p = sample_program();
	pack_str(&pk, "program");
	vy_program_pack(p, &pk);
	vy_program_destroy(p);

	struct vy_request_config c;
	vy_request_config_init(&c);
	struct vy_spec_setting spec[2] = {
		{.name = "a", .wire = VY_SPEC_WIRE_FLOAT, .f = 1.5},
		{.name = "n", .wire = VY_SPEC_WIRE_INT, .i = -4},
	};
	c.has_grid = true;
	c.grid[0] = 4;
	c.grid[1] = 2;
	c.grid[2] = 1;
	c.has_workgroup_size = true;
	c.workgroup_size[0] = 64;
	c.workgroup_size[1] = 1;
	c.workgroup_size[2] = 1;
	c.n_spec = 2;
	c.spec = spec;
	c.max_loop_iterations = 1000;
	c.timeout_ms = 500;
	c.label = "hostile";
	c.device = 0;
	c.backend = VY_BACKEND_REFERENCE;
	c.timing = true;
	pack_str(&pk, "config");
	vy_request_config_pack(&pk, &c);
	vy_frame_end(sb, off);
	*payload_off = off + VY_FRAME_HEADER;
}

/* A dispatch by program id with inputs of every kind and outputs_to, framed. */
static void sample_dispatch_frame(msgpack_sbuffer *sb, size_t *payload_off)
{
	msgpack_packer pk;
	init_packer(sb, &pk);
	size_t off = vy_frame_begin(sb);
	vy_request_pack_head(&pk, 7, VY_OP_DISPATCH, 3);
	pack_str(&pk, "program_id");
	pack_str(&pk, "00112233445566778899aabbccddeeff");
	pack_str(&pk, "inputs");
	msgpack_pack_array(&pk, 3);
	msgpack_pack_bin(&pk, 8);
	msgpack_pack_bin_body(&pk, "\1\2\3\4\5\6\7\10", 8);
	msgpack_pack_map(&pk, 1);
	pack_str(&pk, "resident");
	msgpack_pack_uint64(&pk, 0x1234567890ull);
	msgpack_pack_map(&pk, 1);
	pack_str(&pk, "shm");
	msgpack_pack_array(&pk, 3);
	msgpack_pack_uint64(&pk, 3);
	msgpack_pack_uint64(&pk, 0);
	msgpack_pack_uint64(&pk, 64);
	pack_str(&pk, "outputs_to");
	msgpack_pack_array(&pk, 2);
	msgpack_pack_nil(&pk);
	msgpack_pack_uint64(&pk, 99);
	vy_frame_end(sb, off);
	*payload_off = off + VY_FRAME_HEADER;
}

Test(hostile, sample_program_is_valid_and_decodes)
{
	struct vy_program *p = sample_program();
	struct vy_err err;
	cr_assert_eq(vy_validate_first(p, NULL, &err), 0, "the sample is invalid: %s at %s",
		err.message, err.at);
	vy_program_destroy(p);

	msgpack_sbuffer sb;
	sample_encoding(&sb);
	struct vy_program *back = NULL;
	cr_assert_eq(vy_program_decode(sb.data, sb.size, &back, &err), 0, "%s at %s", err.message,
		err.at);
	vy_program_destroy(back);
	msgpack_sbuffer_destroy(&sb);
}

/* --- truncation ---------------------------------------------------------------------------- */

Test(hostile, program_truncated_at_every_offset_is_invalid)
{
	msgpack_sbuffer sb;
	sample_encoding(&sb);
	cr_assert_gt(sb.size, 300, "the sample should be large enough to truncate in many places");
	for (size_t len = 0; len < sb.size; len++) {
		struct vy_err err;
		expect_invalid_program(sb.data, len, &err);
	}
	struct vy_err err;
	cr_assert_eq(decode_program_copy(sb.data, sb.size, &err), 0);
	msgpack_sbuffer_destroy(&sb);
}

Test(hostile, request_truncated_at_every_offset_is_refused)
{
	void (*samples[])(msgpack_sbuffer *, size_t *) = {
		sample_compile_frame, sample_dispatch_frame};
	for (size_t s = 0; s < 2; s++) {
		msgpack_sbuffer sb;
		size_t off;
		samples[s](&sb, &off);
		const uint8_t *payload = (const uint8_t *)sb.data + off;
		size_t size = sb.size - off;
		struct vy_err err;
		cr_assert_eq(decode_request_copy(payload, size, &err), 0, "sample %zu: %s at %s", s,
			err.message, err.at);
		for (size_t len = 0; len < size; len++) {
			int rc = decode_request_copy(payload, len, &err);
			cr_assert(rc == VY_E_BAD_FRAME || rc == VY_E_BAD_REQUEST,
				"sample %zu cut to %zu bytes gave %d (%s)", s, len, rc,
				vy_err_name(rc));
			cr_assert_eq(err.code, rc);
			cr_assert_neq(err.message[0], '\0');
		}
		msgpack_sbuffer_destroy(&sb);
	}
}

Test(hostile, frame_reader_fed_one_byte_at_a_time_completes_once)
{
	msgpack_sbuffer sb;
	size_t off;
	sample_compile_frame(&sb, &off);
	cr_assert_eq(off, VY_FRAME_HEADER);
	const uint8_t *wire = (const uint8_t *)sb.data;
	struct vy_frame_reader r;
	vy_frame_reader_init(&r, 0);
	int completed = 0;
	for (size_t i = 0; i < sb.size; i++) {
		size_t used = 0;
		struct vy_err err;
		int rc = vy_frame_reader_feed(&r, wire + i, 1, &used, &err);
		cr_assert_eq(used, 1, "byte %zu was not consumed", i);
		if (i + 1 < sb.size) {
			cr_assert_eq(rc, 0, "byte %zu of %zu gave %d", i, sb.size, rc);
			cr_assert_eq(vy_frame_reader_pending(&r), i + 1);
			continue;
		}
		cr_assert_eq(rc, 1, "the last byte did not complete the frame");
		completed++;
		size_t len = 0;
		uint8_t *payload = vy_frame_reader_take(&r, &len);
		cr_assert_eq(len, sb.size - off);
		cr_assert_eq(memcmp(payload, wire + off, len), 0, "the frame's bytes changed");
		struct vy_request req;
		cr_assert_eq(vy_request_decode(payload, len, &req, &err), 0, "%s", err.message);
		cr_assert_eq(req.id, 42);
		cr_assert_eq(req.op, VY_OP_COMPILE);
		vy_request_finish(&req);
		free(payload);
	}
	cr_assert_eq(completed, 1);
	cr_assert_eq(vy_frame_reader_pending(&r), 0);
	vy_frame_reader_finish(&r);
	msgpack_sbuffer_destroy(&sb);
}

/* --- wrong types --------------------------------------------------------------------------- */

/*
 * The documents of the wrong-type and unknown-field tests are written in JSON for readability,
 * parsed with json-c, and packed value by value with msgpack-c's packer; while packing, the value
 * (or map key) at one pre-order position is replaced by a value of a wrong type. Every position
 * has a generic path ("/buffers/0/binding", a key ends in "#") naming it in the tables below.
 */
static const char sample_json[] =
	"{\"vyre\": 1, \"name\": \"sample\", \"workgroup_size\": [64, 1, 1],"
	" \"buffers\": ["
	"  {\"name\": \"x\", \"binding\": 0, \"access\": \"read_only\", \"type\": \"f32\","
	"   \"count\": 16, \"output\": false, \"live_out\": false,"
	"   \"hints\": {\"alignment\": 16, \"coalesce_axis\": 0, \"locality\": \"streaming\"}},"
	"  {\"name\": \"y\", \"binding\": 1, \"access\": \"read_write\", \"type\": \"u32\","
	"   \"count\": 0, \"hints\": {\"coalesce_axis\": null}}],"
	" \"entry\": ["
	"  [\"let\", \"i\", [\"gid\", 0]],"
	"  [\"assign\", \"i\", [\"add\", [\"var\", \"i\"], [\"u32\", 1]]],"
	"  [\"store\", \"y\", [\"var\", \"i\"], [\"cast\", \"u32\", [\"load\", \"x\", [\"u32\", "
	"0]]]],"
	"  [\"if\", [\"lt\", [\"var\", \"i\"], [\"len\", \"y\"]], [[\"return\"]], []],"
	"  [\"loop\", \"k\", [\"u32\", 0], [\"u32\", 4], [[\"barrier\", \"acquire\"]]],"
	"  [\"block\", [[\"region\", \"gen\", []]]],"
	"  [\"let\", \"f\", [\"fma\", [\"f32\", 1.5], [\"spec\", \"s\", \"f32\", [\"f32\", 2.5]],"
	"   [\"select\", [\"bool\", true], [\"f32\", 0.5], [\"f32\", 1]]]],"
	"  [\"let\", \"a\", [\"atomic\", \"compare_exchange\", \"y\", [\"u32\", 0], [\"u32\", 1],"
	"   [\"u32\", 2]]],"
	"  [\"let\", \"r\", [\"subgroup_reduce\", \"add\","
	"   [\"subgroup_shuffle\", [\"var\", \"i\"], [\"subgroup_lane\"]]]],"
	"  [\"let\", \"n\", [\"neg\", [\"i32\", -3]]]]}";

struct walk {
	long index;  /* pre-order position of the next value or key */
	long target; /* position to replace with a wrong type, or -1 */
	char path[256];
	char target_path[256]; /* generic path of the replaced position */
};

/* A value of a type that no field expecting `v`'s type accepts. */
static void pack_wrong(msgpack_packer *pk, struct json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_string:
		msgpack_pack_true(pk);
		break;
	case json_type_array:
		msgpack_pack_map(pk, 0);
		break;
	case json_type_object:
		msgpack_pack_array(pk, 0);
		break;
	default:
		pack_str(pk, "wrong");
		break;
	}
}

static bool at_target(struct walk *w, const char *suffix)
{
	if (w->index++ != w->target) {
		return false;
	}
	snprintf(w->target_path, sizeof(w->target_path), "%s%s", w->path, suffix);
	return true;
}

static void pack_walk(msgpack_packer *pk, struct json_object *v, struct walk *w)
{
	if (at_target(w, "")) {
		pack_wrong(pk, v);
		return;
	}
	size_t mark = strlen(w->path);
	switch (json_object_get_type(v)) {
	case json_type_null:
		msgpack_pack_nil(pk);
		break;
	case json_type_boolean:
		if (json_object_get_boolean(v)) {
			msgpack_pack_true(pk);
		} else {
			msgpack_pack_false(pk);
		}
		break;
	case json_type_int:
		msgpack_pack_int64(pk, json_object_get_int64(v));
		break;
	case json_type_double:
		msgpack_pack_float(pk, (float)json_object_get_double(v));
		break;
	case json_type_string:
		msgpack_pack_str(pk, (size_t)json_object_get_string_len(v));
		msgpack_pack_str_body(
			pk, json_object_get_string(v), (size_t)json_object_get_string_len(v));
		break;
	case json_type_array: {
		size_t n = json_object_array_length(v);
		msgpack_pack_array(pk, n);
		for (size_t i = 0; i < n; i++) {
			snprintf(w->path + mark, sizeof(w->path) - mark, "/%zu", i);
			pack_walk(pk, json_object_array_get_idx(v, i), w);
		}
		break;
	}
	case json_type_object:
		msgpack_pack_map(pk, (size_t)json_object_object_length(v));
		json_object_object_foreach(v, key, val)
		{
			snprintf(w->path + mark, sizeof(w->path) - mark, "/%s", key);
			if (at_target(w, "#")) {
				msgpack_pack_true(pk);
			} else {
				pack_str(pk, key);
			}
			pack_walk(pk, val, w);
		}
		break;
	}
	w->path[mark] = '\0';
}

/* Pack `json` with position `target` replaced (-1: none); returns the number of positions. */
static long pack_document(
	const char *json, long target, msgpack_sbuffer *sb, char *target_path, size_t size)
{
	struct json_object *doc = json_tokener_parse(json);
	cr_assert_not_null(doc, "the test document is not JSON");
	msgpack_packer pk;
	init_packer(sb, &pk);
	struct walk w = {.target = target};
	pack_walk(&pk, doc, &w);
	json_object_put(doc);
	if (target_path) {
		snprintf(target_path, size, "%s", w.target_path);
	}
	return w.index;
}

struct at_case {
	const char *where; /* generic path of the replaced value */
	const char *at;    /* location the decoder must report */
};

/* Every field of the program, the buffer and hints fields, and each element of every node and
 * expression form of the sample: the error must point at the field itself. */
static const struct at_case wrong_type_cases[] = {
	{"", ""},
	{"/vyre", "vyre"},
	{"/name", "name"},
	{"/workgroup_size", "workgroup_size"},
	{"/workgroup_size/0", "workgroup_size[0]"},
	{"/workgroup_size/1", "workgroup_size[1]"},
	{"/workgroup_size/2", "workgroup_size[2]"},
	{"/buffers", "buffers"},
	{"/buffers/0", "buffers[0]"},
	{"/buffers/0/name", "buffers[0].name"},
	{"/buffers/0/binding", "buffers[0].binding"},
	{"/buffers/0/access", "buffers[0].access"},
	{"/buffers/0/type", "buffers[0].type"},
	{"/buffers/0/count", "buffers[0].count"},
	{"/buffers/0/output", "buffers[0].output"},
	{"/buffers/0/live_out", "buffers[0].live_out"},
	{"/buffers/0/hints", "buffers[0].hints"},
	{"/buffers/0/hints/alignment", "buffers[0].hints.alignment"},
	{"/buffers/0/hints/coalesce_axis", "buffers[0].hints.coalesce_axis"},
	{"/buffers/0/hints/locality", "buffers[0].hints.locality"},
	{"/buffers/1/hints/coalesce_axis", "buffers[1].hints.coalesce_axis"},
	{"/entry", "entry"},
	/* let */
	{"/entry/0", "entry[0]"},
	{"/entry/0/0", "entry[0]"},
	{"/entry/0/1", "entry[0].let"},
	{"/entry/0/2", "entry[0].let.value"},
	{"/entry/0/2/0", "entry[0].let.value"},
	{"/entry/0/2/1", "entry[0].let.value.gid"},
	/* assign, binary, var, literal */
	{"/entry/1/1", "entry[1].assign"},
	{"/entry/1/2/0", "entry[1].assign.value"},
	{"/entry/1/2/1", "entry[1].assign.value.add.a"},
	{"/entry/1/2/1/1", "entry[1].assign.value.add.a.var"},
	{"/entry/1/2/2", "entry[1].assign.value.add.b"},
	{"/entry/1/2/2/0", "entry[1].assign.value.add.b"},
	{"/entry/1/2/2/1", "entry[1].assign.value.add.b.u32"},
	/* store, cast, load */
	{"/entry/2/1", "entry[2].store"},
	{"/entry/2/2", "entry[2].store.index"},
	{"/entry/2/3", "entry[2].store.value"},
	{"/entry/2/3/1", "entry[2].store.value.cast"},
	{"/entry/2/3/2", "entry[2].store.value.cast.value"},
	{"/entry/2/3/2/1", "entry[2].store.value.cast.value.load"},
	{"/entry/2/3/2/2", "entry[2].store.value.cast.value.load.index"},
	/* if, len, return */
	{"/entry/3/1", "entry[3].if.cond"},
	{"/entry/3/1/2/1", "entry[3].if.cond.lt.b.len"},
	{"/entry/3/2", "entry[3].if.then"},
	{"/entry/3/2/0", "entry[3].if.then[0]"},
	{"/entry/3/2/0/0", "entry[3].if.then[0]"},
	{"/entry/3/3", "entry[3].if.else"},
	/* loop, barrier */
	{"/entry/4/1", "entry[4].loop"},
	{"/entry/4/2", "entry[4].loop.from"},
	{"/entry/4/3", "entry[4].loop.to"},
	{"/entry/4/4", "entry[4].loop.body"},
	{"/entry/4/4/0/1", "entry[4].loop.body[0].barrier"},
	/* block, region */
	{"/entry/5/1", "entry[5].block.body"},
	{"/entry/5/1/0/1", "entry[5].block.body[0].region"},
	{"/entry/5/1/0/2", "entry[5].block.body[0].region.body"},
	/* fma, spec, select, bool literal */
	{"/entry/6/2/1", "entry[6].let.value.fma.a"},
	{"/entry/6/2/2/1", "entry[6].let.value.fma.b.spec"},
	{"/entry/6/2/2/2", "entry[6].let.value.fma.b.spec"},
	{"/entry/6/2/2/3", "entry[6].let.value.fma.b.spec.default"},
	{"/entry/6/2/3/1", "entry[6].let.value.fma.c.select.cond"},
	{"/entry/6/2/3/1/1", "entry[6].let.value.fma.c.select.cond.bool"},
	{"/entry/6/2/3/3/1", "entry[6].let.value.fma.c.select.b.f32"},
	/* atomic compare_exchange */
	{"/entry/7/2/1", "entry[7].let.value.atomic"},
	{"/entry/7/2/2", "entry[7].let.value.atomic"},
	{"/entry/7/2/3", "entry[7].let.value.atomic.index"},
	{"/entry/7/2/4", "entry[7].let.value.atomic.expected"},
	{"/entry/7/2/5", "entry[7].let.value.atomic.value"},
	/* subgroups */
	{"/entry/8/2/1", "entry[8].let.value.subgroup_reduce"},
	{"/entry/8/2/2", "entry[8].let.value.subgroup_reduce.value"},
	{"/entry/8/2/2/1", "entry[8].let.value.subgroup_reduce.value.subgroup_shuffle.value"},
	{"/entry/8/2/2/2", "entry[8].let.value.subgroup_reduce.value.subgroup_shuffle.lane"},
	{"/entry/8/2/2/2/0", "entry[8].let.value.subgroup_reduce.value.subgroup_shuffle.lane"},
	/* unary, negative literal */
	{"/entry/9/2/1", "entry[9].let.value.neg.a"},
	{"/entry/9/2/1/1", "entry[9].let.value.neg.a.i32"},
};

Test(hostile, wrong_type_in_every_field_is_invalid_and_located)
{
	msgpack_sbuffer sb;
	long positions = pack_document(sample_json, -1, &sb, NULL, 0);
	struct vy_err err;
	cr_assert_eq(decode_program_copy(sb.data, sb.size, &err), 0,
		"the sample is not accepted: %s", err.message);
	msgpack_sbuffer_destroy(&sb);

	size_t n_cases = sizeof(wrong_type_cases) / sizeof(wrong_type_cases[0]);
	size_t matched = 0;
	for (long pos = 0; pos < positions; pos++) {
		char where[256];
		pack_document(sample_json, pos, &sb, where, sizeof(where));
		int rc = decode_program_copy(sb.data, sb.size, &err);
		cr_assert_eq(rc, VY_E_INVALID_PROGRAM, "a wrong type at %s gave %d", where, rc);
		cr_assert_neq(err.message[0], '\0', "no message for a wrong type at %s", where);
		for (size_t c = 0; c < n_cases; c++) {
			if (strcmp(wrong_type_cases[c].where, where) == 0) {
				cr_assert_str_eq(err.at, wrong_type_cases[c].at,
					"a wrong type at %s was reported at \"%s\" (%s)", where,
					err.at, err.message);
				matched++;
			}
		}
		msgpack_sbuffer_destroy(&sb);
	}
	cr_assert_eq(matched, n_cases, "some cases name no position of the sample document");
}

Test(hostile, mistyped_scalars_name_the_type_found)
{
	/* the message says what was expected and what came: "binding must be ..., found a string"
	 */
	msgpack_sbuffer sb;
	char where[256];
	long positions = pack_document(sample_json, -1, &sb, NULL, 0);
	msgpack_sbuffer_destroy(&sb);
	for (long pos = 0; pos < positions; pos++) {
		pack_document(sample_json, pos, &sb, where, sizeof(where));
		if (strcmp(where, "/buffers/0/binding") == 0 || strcmp(where, "/vyre") == 0) {
			struct vy_err err;
			expect_invalid_program(sb.data, sb.size, &err);
			cr_assert(strstr(err.message, "string") != NULL, "%s: %s", where,
				err.message);
		}
		msgpack_sbuffer_destroy(&sb);
	}
}

/* --- unknown fields ------------------------------------------------------------------------ */

static void expect_program_field_refused(const char *json, const char *at, const char *field)
{
	msgpack_sbuffer sb;
	pack_document(json, -1, &sb, NULL, 0);
	struct vy_err err;
	expect_invalid_program(sb.data, sb.size, &err);
	cr_assert_str_eq(err.at, at, "reported at %s: %s", err.at, err.message);
	cr_assert(strstr(err.message, field) != NULL, "the message does not name %s: %s", field,
		err.message);
	msgpack_sbuffer_destroy(&sb);
}

Test(hostile, unknown_program_field_is_named)
{
	expect_program_field_refused(
		"{\"vyre\": 1, \"workgroup_size\": [1, 1, 1], \"buffers\": [], \"entry\": [],"
		" \"entrypoint\": []}",
		"entrypoint", "entrypoint");
}

Test(hostile, unknown_buffer_field_is_named)
{
	expect_program_field_refused("{\"vyre\": 1, \"workgroup_size\": [1, 1, 1], \"entry\": [], "
				     "\"buffers\": [{\"name\":"
				     " \"x\", \"binding\": 0, \"access\": \"read_only\", \"type\": "
				     "\"u32\", \"count\": 1,"
				     " \"bindng\": 0}]}",
		"buffers[0].bindng", "bindng");
}

Test(hostile, unknown_hints_field_is_named)
{
	expect_program_field_refused("{\"vyre\": 1, \"workgroup_size\": [1, 1, 1], \"entry\": [], "
				     "\"buffers\": [{\"name\":"
				     " \"x\", \"binding\": 0, \"access\": \"read_only\", \"type\": "
				     "\"u32\", \"count\": 1,"
				     " \"hints\": {\"alignment\": 4, \"prefetch\": true}}]}",
		"buffers[0].hints.prefetch", "prefetch");
}

static void expect_request_field_refused(const char *json, const char *field)
{
	msgpack_sbuffer sb;
	pack_document(json, -1, &sb, NULL, 0);
	struct vy_err err;
	int rc = decode_request_copy(sb.data, sb.size, &err);
	cr_assert_eq(rc, VY_E_BAD_REQUEST, "gave %d: %s", rc, err.message);
	cr_assert_eq(err.code, VY_E_BAD_REQUEST);
	cr_assert(strstr(err.message, field) != NULL, "the message does not name %s: %s", field,
		err.message);
	cr_assert_neq(err.fix[0], '\0');
	msgpack_sbuffer_destroy(&sb);
}

Test(hostile, unknown_request_field_is_named)
{
	expect_request_field_refused("{\"id\": 1, \"op\": \"ping\", \"verbose\": true}", "verbose");
	expect_request_field_refused(
		"{\"id\": 2, \"op\": \"alloc\", \"size\": 64, \"sise\": 64}", "sise");
	/* a field of another operation is unknown to this one */
	expect_request_field_refused(
		"{\"id\": 3, \"op\": \"free\", \"handle\": 5, \"data\": \"00\"}", "data");
}

Test(hostile, unknown_config_field_is_named)
{
	expect_request_field_refused(
		"{\"id\": 4, \"op\": \"dispatch\", \"program_id\": "
		"\"00112233445566778899aabbccddeeff\","
		" \"inputs\": [], \"config\": {\"grid\": [1, 1, 1], \"gird\": [1, 1, 1]}}",
		"gird");
}

/* --- absurd counts and lengths ------------------------------------------------------------- */

struct huge_case {
	const char *what;
	const uint8_t *bytes;
	size_t len;
};

#define HUGE_CASE(what, ...)                                                                       \
	{                                                                                          \
		what, (const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__})       \
	}

/* {"vyre": 1, "workgroup_size": [1, 1, 1], ...} with one header claiming 2^32-1 items. */
static const struct huge_case huge_programs[] = {
	HUGE_CASE("array32 entry", 0x82, 0xa4, 'v', 'y', 'r', 'e', 0x01, 0xa5, 'e', 'n', 't', 'r',
		'y', 0xdd, 0xff, 0xff, 0xff, 0xff, 0x90),
	HUGE_CASE("array32 buffers", 0x82, 0xa4, 'v', 'y', 'r', 'e', 0x01, 0xa7, 'b', 'u', 'f', 'f',
		'e', 'r', 's', 0xdd, 0xff, 0xff, 0xff, 0xff, 0x80),
	HUGE_CASE("array32 workgroup_size", 0x81, 0xae, 'w', 'o', 'r', 'k', 'g', 'r', 'o', 'u', 'p',
		'_', 's', 'i', 'z', 'e', 0xdd, 0xff, 0xff, 0xff, 0xff, 0x01, 0x01, 0x01),
	HUGE_CASE("map32 program", 0xdf, 0xff, 0xff, 0xff, 0xff, 0xa4, 'v', 'y', 'r', 'e', 0x01),
	HUGE_CASE("map32 buffer", 0x81, 0xa7, 'b', 'u', 'f', 'f', 'e', 'r', 's', 0x91, 0xdf, 0xff,
		0xff, 0xff, 0xff, 0xa4, 'n', 'a', 'm', 'e', 0xa1, 'x'),
	HUGE_CASE("str32 name", 0x81, 0xa4, 'n', 'a', 'm', 'e', 0xdb, 0xff, 0xff, 0xff, 0xff, 'a',
		'b', 'c'),
	HUGE_CASE("str32 key", 0x81, 0xdb, 0xff, 0xff, 0xff, 0xff, 'v', 'y', 'r', 'e', 0x01),
	HUGE_CASE("bin32 name", 0x81, 0xa4, 'n', 'a', 'm', 'e', 0xc6, 0xff, 0xff, 0xff, 0xff, 'a',
		'b', 'c'),
	HUGE_CASE("array32 node", 0x81, 0xa5, 'e', 'n', 't', 'r', 'y', 0x91, 0xdd, 0xff, 0xff, 0xff,
		0xff, 0xa6, 'r', 'e', 't', 'u', 'r', 'n'),
	HUGE_CASE("array32 expression", 0x81, 0xa5, 'e', 'n', 't', 'r', 'y', 0x91, 0x93, 0xa3, 'l',
		'e', 't', 0xa1, 'v', 0xdd, 0xff, 0xff, 0xff, 0xff, 0xa3, 'u', '3', '2', 0x01),
	HUGE_CASE("ext32", 0x81, 0xa4, 'n', 'a', 'm', 'e', 0xc9, 0xff, 0xff, 0xff, 0xff, 0x01),
};

/* {"id": 1, "op": ..., field: <header claiming 2^32-1>} */
static const struct huge_case huge_requests[] = {
	HUGE_CASE("array32 inputs", 0x83, 0xa2, 'i', 'd', 0x01, 0xa2, 'o', 'p', 0xa8, 'd', 'i', 's',
		'p', 'a', 't', 'c', 'h', 0xa6, 'i', 'n', 'p', 'u', 't', 's', 0xdd, 0xff, 0xff, 0xff,
		0xff, 0xc4, 0x00),
	HUGE_CASE("map32 config", 0x83, 0xa2, 'i', 'd', 0x01, 0xa2, 'o', 'p', 0xa7, 'c', 'o', 'm',
		'p', 'i', 'l', 'e', 0xa6, 'c', 'o', 'n', 'f', 'i', 'g', 0xdf, 0xff, 0xff, 0xff,
		0xff),
	HUGE_CASE("bin32 data", 0x84, 0xa2, 'i', 'd', 0x01, 0xa2, 'o', 'p', 0xa6, 'u', 'p', 'l',
		'o', 'a', 'd', 0xa6, 'h', 'a', 'n', 'd', 'l', 'e', 0x01, 0xa4, 'd', 'a', 't', 'a',
		0xc6, 0xff, 0xff, 0xff, 0xff, 0x00),
	HUGE_CASE("str32 client", 0x83, 0xa2, 'i', 'd', 0x01, 0xa2, 'o', 'p', 0xa5, 'h', 'e', 'l',
		'l', 'o', 0xa6, 'c', 'l', 'i', 'e', 'n', 't', 0xdb, 0xff, 0xff, 0xff, 0xff, 'x'),
	HUGE_CASE("map32 request", 0xdf, 0xff, 0xff, 0xff, 0xff, 0xa2, 'i', 'd', 0x01),
	HUGE_CASE("array32 program entry", 0x83, 0xa2, 'i', 'd', 0x01, 0xa2, 'o', 'p', 0xa7, 'c',
		'o', 'm', 'p', 'i', 'l', 'e', 0xa7, 'p', 'r', 'o', 'g', 'r', 'a', 'm', 0x81, 0xa5,
		'e', 'n', 't', 'r', 'y', 0xdd, 0xff, 0xff, 0xff, 0xff),
};

/* Small inputs must fail fast without allocating in proportion to the claimed counts. */
#define HOSTILE_MAX_SECONDS 0.25
#define HOSTILE_MAX_ALLOCATION ((size_t)1 << 20)

Test(hostile, huge_counts_in_a_program_fail_fast_without_allocating)
{
	for (size_t i = 0; i < sizeof(huge_programs) / sizeof(huge_programs[0]); i++) {
		const struct huge_case *c = &huge_programs[i];
		track_allocations();
		double t0 = now_seconds();
		struct vy_err err;
		expect_invalid_program(c->bytes, c->len, &err);
		double dt = now_seconds() - t0;
		cr_assert_lt(dt, HOSTILE_MAX_SECONDS, "%s took %.3f s", c->what, dt);
		cr_assert_lt(largest_allocation(), HOSTILE_MAX_ALLOCATION, "%s allocated %zu bytes",
			c->what, largest_allocation());
	}
}

Test(hostile, huge_counts_in_a_request_fail_fast_without_allocating)
{
	for (size_t i = 0; i < sizeof(huge_requests) / sizeof(huge_requests[0]); i++) {
		const struct huge_case *c = &huge_requests[i];
		track_allocations();
		double t0 = now_seconds();
		struct vy_err err;
		int rc = decode_request_copy(c->bytes, c->len, &err);
		double dt = now_seconds() - t0;
		cr_assert(
			rc == VY_E_BAD_FRAME || rc == VY_E_BAD_REQUEST, "%s gave %d", c->what, rc);
		cr_assert_neq(err.message[0], '\0', "%s gave no message", c->what);
		cr_assert_lt(dt, HOSTILE_MAX_SECONDS, "%s took %.3f s", c->what, dt);
		cr_assert_lt(largest_allocation(), HOSTILE_MAX_ALLOCATION, "%s allocated %zu bytes",
			c->what, largest_allocation());
	}
}

Test(hostile, huge_counts_through_the_json_converter_fail_fast)
{
	const struct huge_case *sets[] = {huge_programs, huge_requests};
	size_t counts[] = {sizeof(huge_programs) / sizeof(huge_programs[0]),
		sizeof(huge_requests) / sizeof(huge_requests[0])};
	for (size_t s = 0; s < 2; s++) {
		for (size_t i = 0; i < counts[s]; i++) {
			const struct huge_case *c = &sets[s][i];
			uint8_t *copy = exact_copy(c->bytes, c->len);
			track_allocations();
			struct json_object *obj = NULL;
			struct vy_err err;
			int rc = vy_msgpack_to_json(copy, c->len, &obj, &err);
			cr_assert_eq(rc, VY_E_BAD_REQUEST, "%s gave %d", c->what, rc);
			cr_assert_lt(largest_allocation(), HOSTILE_MAX_ALLOCATION,
				"%s allocated %zu bytes", c->what, largest_allocation());
			free(copy);
		}
	}
}

/* --- deep nesting -------------------------------------------------------------------------- */

#define DEEP 10000

/* {"vyre": 1, "workgroup_size": [1,1,1], "buffers": [], "entry": [ <node> ]} around `node`. */
static void pack_program_head(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 4);
	pack_str(pk, "vyre");
	msgpack_pack_uint32(pk, 1);
	pack_str(pk, "workgroup_size");
	msgpack_pack_array(pk, 3);
	for (int i = 0; i < 3; i++) {
		msgpack_pack_uint32(pk, 1);
	}
	pack_str(pk, "buffers");
	msgpack_pack_array(pk, 0);
	pack_str(pk, "entry");
	msgpack_pack_array(pk, 1);
}

struct deep_job {
	const void *data;
	size_t len;
	bool json;
	int rc;
	struct vy_err err;
};

static void *decode_job(void *arg)
{
	struct deep_job *job = arg;
	struct vy_program *p = NULL;
	if (job->json) {
		job->rc = vy_program_from_json(job->data, job->len, &p, &job->err);
	} else {
		job->rc = vy_program_decode(job->data, job->len, &p, &job->err);
	}
	vy_program_destroy(p);
	return NULL;
}

static void decode_deep(const void *data, size_t len, bool json, struct deep_job *job)
{
	job->data = data;
	job->len = len;
	job->json = json;
	vy_err_clear(&job->err);
	run_on_small_stack(decode_job, job);
}

/* A program whose only statement is a let of v: the caller packs the deep value next. */
static void begin_deep_let(msgpack_sbuffer *sb, msgpack_packer *pk)
{
	init_packer(sb, pk);
	pack_program_head(pk);
	msgpack_pack_array(pk, 3);
	pack_str(pk, "let");
	pack_str(pk, "v");
}

/* An entry of DEEP blocks, each the only statement of the one around it, ending in a return. */
static void pack_deep_blocks(msgpack_packer *pk)
{
	for (int i = 0; i < DEEP; i++) {
		msgpack_pack_array(pk, 2);
		pack_str(pk, "block");
		msgpack_pack_array(pk, 1);
	}
	msgpack_pack_array(pk, 1);
	pack_str(pk, "return");
}

Test(hostile, expression_nested_ten_thousand_deep_names_the_limit)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	begin_deep_let(&sb, &pk);
	for (int i = 0; i < DEEP; i++) {
		msgpack_pack_array(&pk, 2);
		pack_str(&pk, "neg");
	}
	msgpack_pack_array(&pk, 2);
	pack_str(&pk, "i32");
	msgpack_pack_int32(&pk, 1);
	struct deep_job job;
	decode_deep(sb.data, sb.size, false, &job);
	cr_assert_eq(job.rc, VY_E_INVALID_PROGRAM);
	cr_assert(strstr(job.err.message, "128") != NULL, "the limit is not named: %s",
		job.err.message);
	msgpack_sbuffer_destroy(&sb);
}

Test(hostile, bare_arrays_nested_ten_thousand_deep_as_an_expression_fail)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	begin_deep_let(&sb, &pk);
	for (int i = 0; i < DEEP; i++) {
		msgpack_pack_array(&pk, 1);
	}
	msgpack_pack_array(&pk, 0);
	struct deep_job job;
	decode_deep(sb.data, sb.size, false, &job);
	cr_assert_eq(job.rc, VY_E_INVALID_PROGRAM);
	cr_assert_str_eq(job.err.at, "entry[0].let.value");
	msgpack_sbuffer_destroy(&sb);
}

Test(hostile, blocks_nested_ten_thousand_deep_name_the_limit)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	init_packer(&sb, &pk);
	pack_program_head(&pk);
	pack_deep_blocks(&pk);
	struct deep_job job;
	decode_deep(sb.data, sb.size, false, &job);
	cr_assert_eq(job.rc, VY_E_INVALID_PROGRAM);
	cr_assert(strstr(job.err.message, "64") != NULL, "the limit is not named: %s",
		job.err.message);
	cr_assert_eq(
		strncmp(job.err.at, "entry[0].block.body[0].block", 28), 0, "at %s", job.err.at);
	msgpack_sbuffer_destroy(&sb);
}

static char *deep_json(const char *open, const char *inner, const char *close, int depth)
{
	const char *head = "{\"vyre\": 1, \"workgroup_size\": [1, 1, 1], \"buffers\": [], "
			   "\"entry\": [[\"let\", \"v\", ";
	const char *tail = "]]}";
	size_t n = strlen(head) + (strlen(open) + strlen(close)) * (size_t)depth + strlen(inner) +
		   strlen(tail) + 1;
	char *text = malloc(n);
	cr_assert_not_null(text);
	char *p = text;
	p = stpcpy(p, head);
	for (int i = 0; i < depth; i++) {
		p = stpcpy(p, open);
	}
	p = stpcpy(p, inner);
	for (int i = 0; i < depth; i++) {
		p = stpcpy(p, close);
	}
	stpcpy(p, tail);
	return text;
}

Test(hostile, json_nested_ten_thousand_deep_names_the_limit)
{
	const char *opens[] = {"[", "[\"neg\", "};
	for (size_t k = 0; k < 2; k++) {
		char *text = deep_json(opens[k], "[\"i32\", 1]", "]", DEEP);
		struct deep_job job;
		decode_deep(text, strlen(text), true, &job);
		cr_assert_eq(job.rc, VY_E_INVALID_PROGRAM, "form %zu gave %d", k, job.rc);
		cr_assert(strstr(job.err.message, "nest") != NULL,
			"the message does not say the nesting is too deep: %s", job.err.message);
		free(text);
	}
}

Test(hostile, json_within_the_parser_limit_still_meets_the_ir_limit)
{
	char *text = deep_json("[\"neg\", ", "[\"i32\", 1]", "]", 1000);
	struct deep_job job;
	decode_deep(text, strlen(text), true, &job);
	cr_assert_eq(job.rc, VY_E_INVALID_PROGRAM);
	cr_assert(strstr(job.err.message, "128") != NULL, "the limit is not named: %s",
		job.err.message);
	free(text);
}

static void *to_json_job(void *arg)
{
	struct deep_job *job = arg;
	struct json_object *obj = NULL;
	job->rc = vy_msgpack_to_json(job->data, job->len, &obj, &job->err);
	json_object_put(obj);
	return NULL;
}

Test(hostile, msgpack_nested_ten_thousand_deep_fails_in_the_json_converter)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	init_packer(&sb, &pk);
	for (int i = 0; i < DEEP; i++) {
		msgpack_pack_array(&pk, 1);
	}
	msgpack_pack_nil(&pk);
	struct deep_job job = {.data = sb.data, .len = sb.size};
	run_on_small_stack(to_json_job, &job);
	cr_assert_eq(job.rc, VY_E_BAD_REQUEST);
	cr_assert(strstr(job.err.message, "1024") != NULL, "the limit is not named: %s",
		job.err.message);
	msgpack_sbuffer_destroy(&sb);
}

static void *request_job(void *arg)
{
	struct deep_job *job = arg;
	struct vy_request req;
	job->rc = vy_request_decode(job->data, job->len, &req, &job->err);
	if (job->rc == 0) {
		vy_request_finish(&req);
	}
	return NULL;
}

Test(hostile, deep_program_inside_a_request_is_invalid)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	init_packer(&sb, &pk);
	vy_request_pack_head(&pk, 9, VY_OP_COMPILE, 1);
	pack_str(&pk, "program");
	pack_program_head(&pk);
	pack_deep_blocks(&pk);
	struct deep_job job = {.data = sb.data, .len = sb.size};
	run_on_small_stack(request_job, &job);
	cr_assert_eq(job.rc, VY_E_INVALID_PROGRAM);
	cr_assert_eq(strncmp(job.err.at, "program.entry[0]", 16), 0, "at %s", job.err.at);
	msgpack_sbuffer_destroy(&sb);
}

/* --- the frame reader ---------------------------------------------------------------------- */

static void expect_bad_length(const uint8_t prefix[4])
{
	struct vy_frame_reader r;
	vy_frame_reader_init(&r, 0);
	cr_assert_eq(r.max_frame, VY_FRAME_DEFAULT_MAX);
	for (int i = 0; i < 3; i++) {
		size_t used = 0;
		cr_assert_eq(vy_frame_reader_feed(&r, prefix + i, 1, &used, NULL), 0);
		cr_assert_eq(used, 1);
	}
	struct vy_err err;
	size_t used = 0;
	int rc = vy_frame_reader_feed(&r, prefix + 3, 1, &used, &err);
	cr_assert_eq(rc, VY_E_BAD_FRAME, "the 4th byte gave %d", rc);
	cr_assert_eq(err.code, VY_E_BAD_FRAME);
	cr_assert_neq(err.message[0], '\0');
	cr_assert_leq(vy_frame_reader_pending(&r), 4);
	cr_assert_null(r.buf, "payload memory was allocated for a refused frame");
	vy_frame_reader_finish(&r);

	/* the same with the prefix and a payload in one chunk: nothing past the prefix is taken */
	uint8_t chunk[64] = {prefix[0], prefix[1], prefix[2], prefix[3]};
	vy_frame_reader_init(&r, 0);
	rc = vy_frame_reader_feed(&r, chunk, sizeof(chunk), &used, &err);
	cr_assert_eq(rc, VY_E_BAD_FRAME);
	cr_assert_eq(used, 4);
	cr_assert_null(r.buf);
	vy_frame_reader_finish(&r);
}

Test(hostile, frame_of_two_gib_is_refused_at_the_fourth_byte)
{
	expect_bad_length((const uint8_t[]){0x80, 0x00, 0x00, 0x00});
}

Test(hostile, frame_of_four_gib_minus_one_is_refused_at_the_fourth_byte)
{
	expect_bad_length((const uint8_t[]){0xff, 0xff, 0xff, 0xff});
}

Test(hostile, frame_of_length_zero_is_refused)
{
	expect_bad_length((const uint8_t[]){0x00, 0x00, 0x00, 0x00});
}

Test(hostile, frame_one_past_max_frame_is_refused_and_max_frame_accepted)
{
	struct vy_frame_reader r;
	vy_frame_reader_init(&r, 16);
	size_t used = 0;
	struct vy_err err;
	const uint8_t over[4] = {0, 0, 0, 17};
	cr_assert_eq(vy_frame_reader_feed(&r, over, 4, &used, &err), VY_E_BAD_FRAME);
	cr_assert(strstr(err.message, "17") != NULL, "%s", err.message);
	vy_frame_reader_finish(&r);

	uint8_t exact[20] = {0, 0, 0, 16};
	vy_frame_reader_init(&r, 16);
	cr_assert_eq(vy_frame_reader_feed(&r, exact, sizeof(exact), &used, &err), 1);
	cr_assert_eq(used, sizeof(exact));
	size_t len = 0;
	free(vy_frame_reader_take(&r, &len));
	cr_assert_eq(len, 16);
	vy_frame_reader_finish(&r);
}

Test(hostile, frame_announcing_200_mib_buffers_only_what_arrived)
{
	uint8_t wire[14] = {0x0c, 0x80, 0x00, 0x00, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
	struct vy_frame_reader r;
	vy_frame_reader_init(&r, 0);
	track_allocations();
	size_t used = 0;
	cr_assert_eq(vy_frame_reader_feed(&r, wire, sizeof(wire), &used, NULL), 0);
	cr_assert_eq(used, sizeof(wire));
	cr_assert_eq(vy_frame_reader_pending(&r), 14);
	cr_assert_leq(r.cap, (size_t)64 * 1024, "the reader reserved %zu bytes", r.cap);
	cr_assert_leq(largest_allocation(), (size_t)64 * 1024);
	/* a trickle of further bytes keeps the buffer near what was sent */
	uint8_t more[4096] = {0};
	for (int i = 0; i < 32; i++) {
		cr_assert_eq(vy_frame_reader_feed(&r, more, sizeof(more), &used, NULL), 0);
	}
	size_t have = 10 + 32 * sizeof(more);
	cr_assert_eq(vy_frame_reader_pending(&r), 4 + have);
	cr_assert_leq(r.cap, 2 * have + (size_t)64 * 1024, "the reader reserved %zu bytes", r.cap);
	vy_frame_reader_finish(&r);
}

/* --- random bytes -------------------------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rng(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

/* Random bytes, or a valid document with a few bytes changed and maybe cut short. */
static size_t random_input(
	uint8_t *out, size_t cap, const msgpack_sbuffer *program, const msgpack_sbuffer *request)
{
	uint64_t mode = rng() % 4;
	if (mode < 2) {
		size_t len = (size_t)(rng() % 512);
		for (size_t i = 0; i < len; i++) {
			out[i] = (uint8_t)rng();
		}
		if (mode == 1 && len > 0) {
			out[0] = (uint8_t)(0x80 |
					   (rng() & 0x0f)); /* a fixmap, as a real frame starts */
		}
		return len;
	}
	const msgpack_sbuffer *base = mode == 2 ? program : request;
	size_t len = base->size < cap ? base->size : cap;
	memcpy(out, base->data, len);
	int changes = 1 + (int)(rng() % 4);
	for (int i = 0; i < changes; i++) {
		out[rng() % len] = (uint8_t)rng();
	}
	if (rng() % 2) {
		len = (size_t)(rng() % (len + 1));
	}
	return len;
}

Test(hostile, random_bytes_never_crash_any_decoder)
{
	rng_state = 0x9e3779b97f4a7c15ull;
	msgpack_sbuffer program;
	sample_encoding(&program);
	msgpack_sbuffer request;
	size_t off;
	sample_compile_frame(&request, &off);
	msgpack_sbuffer payload;
	msgpack_sbuffer_init(&payload);
	msgpack_sbuffer_write(&payload, request.data + off, request.size - off);

	static uint8_t buf[4096];
	for (int n = 0; n < 4000; n++) {
		size_t len = random_input(buf, sizeof(buf), &program, &payload);
		struct vy_err err;
		int rc = decode_program_copy(buf, len, &err);
		cr_assert(rc == 0 || rc == VY_E_INVALID_PROGRAM, "input %d: program decode gave %d",
			n, rc);
		cr_assert(rc == 0 || err.message[0] != '\0');

		rc = decode_request_copy(buf, len, &err);
		cr_assert(rc == 0 || rc == VY_E_BAD_FRAME || rc == VY_E_BAD_REQUEST ||
				  rc == VY_E_INVALID_PROGRAM,
			"input %d: request decode gave %d", n, rc);
		cr_assert(rc == 0 || err.message[0] != '\0');

		uint8_t *copy = exact_copy(buf, len);
		struct json_object *obj = NULL;
		rc = vy_msgpack_to_json(copy, len, &obj, &err);
		cr_assert(rc == 0 || rc == VY_E_BAD_REQUEST);
		json_object_put(obj);

		struct vy_frame_reader r;
		vy_frame_reader_init(&r, 1024);
		size_t pos = 0;
		while (pos < len) {
			size_t chunk = 1 + (size_t)(rng() % 64);
			if (chunk > len - pos) {
				chunk = len - pos;
			}
			size_t used = 0;
			rc = vy_frame_reader_feed(&r, copy + pos, chunk, &used, &err);
			cr_assert_leq(used, chunk);
			pos += used;
			if (rc < 0) {
				cr_assert_eq(rc, VY_E_BAD_FRAME);
				break;
			}
			if (rc == 1) {
				size_t flen = 0;
				free(vy_frame_reader_take(&r, &flen));
				cr_assert(flen >= 1 && flen <= 1024);
			}
		}
		vy_frame_reader_finish(&r);
		free(copy);
	}
	msgpack_sbuffer_destroy(&payload);
	msgpack_sbuffer_destroy(&request);
	msgpack_sbuffer_destroy(&program);
}
