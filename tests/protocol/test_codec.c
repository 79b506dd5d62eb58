/*
 * The program codec: round trips through every form, canonical bytes, program ids, and the JSON
 * details (non-finite literals, exact f32 text, syntax errors with line and column).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "json.h"
#include "examples.h"

/* A program that uses every node kind and every expression kind once. */
static struct vy_program *every_kind(void)
{
	struct vy_program *p = vy_program_create("every_kind", 64, 1, 1);
	vy_program_add_buffer(p, "out", 2, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 64);
	struct vy_buffer *x = vy_program_add_buffer(p, "x", 0, VY_ACCESS_READ_ONLY, VY_TYPE_F32, 0);
	x->has_hints = true;
	x->hints.alignment = 64;
	x->hints.coalesce_axis = 0;
	x->hints.locality = VY_LOCALITY_STREAMING;
	vy_program_add_buffer(p, "tile", 1, VY_ACCESS_WORKGROUP, VY_TYPE_I32, 64);
	struct vy_buffer *w =
		vy_program_add_buffer(p, "w", 3, VY_ACCESS_WRITE_ONLY, VY_TYPE_BOOL, 64);
	w->output = true;
	w->live_out = true;
	struct vy_expr *gid = vy_ir_gid(p, 0);
	struct vy_node *nodes[] = {
		vy_ir_let(p, "i", gid),
		vy_ir_let(p, "f",
			vy_ir_fma(p, vy_ir_load(p, "x", vy_ir_var(p, "i")),
				vy_ir_spec(p, "scale", VY_TYPE_F32, 0x40000000u),
				vy_ir_f32(p, -0.0f))),
		vy_ir_let(p, "s",
			vy_ir_select(p, vy_ir_bool(p, true), vy_ir_i32(p, -3),
				vy_ir_cast(p, VY_TYPE_I32, vy_ir_len(p, "x")))),
		vy_ir_let(p, "bits", vy_ir_bitcast(p, VY_TYPE_U32, vy_ir_var(p, "f"))),
		vy_ir_store(p, "tile", vy_ir_lid(p, 0), vy_ir_var(p, "s")),
		vy_ir_barrier(p, VY_ORDER_SEQ_CST),
		vy_ir_barrier(p, VY_ORDER_ACQ_REL),
		vy_ir_if(p, vy_ir_binary(p, VY_BIN_LT, vy_ir_var(p, "i"), vy_ir_u32(p, 10)),
			vy_ir_seq(p, vy_ir_return(p), NULL), vy_ir_seq(p, NULL)),
		vy_ir_loop(p, "k", vy_ir_u32(p, 0), vy_ir_wgid(p, 0),
			vy_ir_seq(p,
				vy_ir_let(p, "old",
					vy_ir_atomic(p, VY_ATOMIC_ADD, "out", vy_ir_var(p, "k"),
						vy_ir_u32(p, 1))),
				vy_ir_let(p, "cas",
					vy_ir_atomic_cas(p, "out", vy_ir_u32(p, 0),
						vy_ir_var(p, "old"), vy_ir_u32(p, 5))),
				NULL)),
		vy_ir_block(p,
			vy_ir_seq(p,
				vy_ir_let(p, "r",
					vy_ir_subgroup_reduce(p, VY_REDUCE_ADD,
						vy_ir_subgroup_lane(p))),
				vy_ir_let(p, "sh",
					vy_ir_subgroup_shuffle(p, vy_ir_var(p, "r"),
						vy_ir_subgroup_size(p))),
				vy_ir_let(p, "b", vy_ir_subgroup_ballot(p, vy_ir_bool(p, false))),
				NULL)),
		vy_ir_region(p, "gen.sqrt",
			vy_ir_seq(p,
				vy_ir_let(p, "q", vy_ir_unary(p, VY_UN_SQRT, vy_ir_var(p, "f"))),
				vy_ir_assign(p, "q", vy_ir_f32(p, NAN)), NULL)),
		vy_ir_store(p, "w", vy_ir_var(p, "i"), vy_ir_bool(p, true)),
		vy_ir_barrier(p, VY_ORDER_GRID_SYNC),
	};
	vy_program_set_entry(p, vy_ir_seqv(p, nodes, sizeof(nodes) / sizeof(nodes[0])));
	return p;
}

static void assert_same_bytes(const msgpack_sbuffer *a, const msgpack_sbuffer *b)
{
	cr_assert_eq(a->size, b->size, "canonical sizes differ: %zu vs %zu", a->size, b->size);
	cr_assert(memcmp(a->data, b->data, a->size) == 0, "canonical bytes differ");
}

/* JSON -> IR -> msgpack -> IR -> JSON, asserting both JSON texts and both encodings agree. */
static void round_trip_json(const char *text, const char *what)
{
	struct vy_err err;
	struct vy_program *p1 = NULL;
	int rc = vy_program_from_json(text, strlen(text), &p1, &err);
	cr_assert_eq(rc, 0, "%s: %s (at %s)", what, err.message, err.at);
	msgpack_sbuffer enc1;
	vy_program_encode(p1, &enc1);
	struct vy_program *p2 = NULL;
	rc = vy_program_decode(enc1.data, enc1.size, &p2, &err);
	cr_assert_eq(rc, 0, "%s: %s", what, err.message);
	msgpack_sbuffer enc2;
	vy_program_encode(p2, &enc2);
	assert_same_bytes(&enc1, &enc2);
	char *j1 = vy_program_to_json(p1, true);
	char *j2 = vy_program_to_json(p2, true);
	cr_assert_str_eq(j1, j2, "%s: JSON differs after the msgpack round trip", what);
	/* the output is the same JSON tree as the input (examples are written in canonical form) */
	struct json_object *in = json_tokener_parse(text);
	struct json_object *out = json_tokener_parse(j2);
	cr_assert(json_object_equal(in, out), "%s: JSON changed:\n%s", what, j2);
	json_object_put(in);
	json_object_put(out);
	free(j1);
	free(j2);
	msgpack_sbuffer_destroy(&enc1);
	msgpack_sbuffer_destroy(&enc2);
	vy_program_destroy(p1);
	vy_program_destroy(p2);
}

Test(codec, builder_program_round_trips_to_identical_bytes)
{
	struct vy_program *p = every_kind();
	msgpack_sbuffer a;
	vy_program_encode(p, &a);
	struct vy_program *q = NULL;
	struct vy_err err;
	cr_assert_eq(
		vy_program_decode(a.data, a.size, &q, &err), 0, "%s at %s", err.message, err.at);
	msgpack_sbuffer b;
	vy_program_encode(q, &b);
	assert_same_bytes(&a, &b);
	char *text = vy_program_to_json(p, false);
	round_trip_json(text, "every_kind");
	free(text);
	msgpack_sbuffer_destroy(&a);
	msgpack_sbuffer_destroy(&b);
	vy_program_destroy(p);
	vy_program_destroy(q);
}

Test(codec, example_programs_round_trip)
{
	char dir[1024];
	snprintf(dir, sizeof(dir), "%s/tests/programs", VY_SOURCE_ROOT);
	DIR *d = opendir(dir);
	cr_assert_not_null(d, "no %s", dir);
	int n = 0;
	struct dirent *ent;
	while ((ent = readdir(d))) {
		size_t len = strlen(ent->d_name);
		if (len < 6 || strcmp(ent->d_name + len - 5, ".json") != 0) {
			continue;
		}
		char path[2048];
		snprintf(path, sizeof(path), "%s/%s", dir, ent->d_name);
		char *text = vy_test_read_file(path, NULL);
		cr_assert_not_null(text);
		round_trip_json(text, ent->d_name);
		free(text);
		n++;
	}
	closedir(d);
	cr_assert_geq(n, 10, "expected at least 10 example programs, found %d", n);
}

static void round_trip_doc(const char *json, const char *what, void *ctx)
{
	round_trip_json(json, what);
}

Test(codec, every_program_in_the_ir_reference_round_trips)
{
	int n = vy_test_each_ir_doc_program(VY_SOURCE_ROOT, round_trip_doc, NULL);
	cr_assert_geq(n, 20, "expected an example per node and expression kind, found %d", n);
}

Test(codec, canonical_form_sorts_buffers_by_binding)
{
	struct vy_program *a = vy_program_create(NULL, 64, 1, 1);
	vy_program_add_buffer(a, "b", 1, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 4);
	vy_program_add_buffer(a, "a", 0, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 4);
	vy_program_set_entry(a, vy_ir_seq(a, NULL));
	struct vy_program *b = vy_program_create(NULL, 64, 1, 1);
	vy_program_add_buffer(b, "a", 0, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 4);
	vy_program_add_buffer(b, "b", 1, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 4);
	vy_program_set_entry(b, vy_ir_seq(b, NULL));
	msgpack_sbuffer ea;
	msgpack_sbuffer eb;
	struct vy_program_id ia;
	struct vy_program_id ib;
	vy_program_id_of(a, &ea, &ia);
	vy_program_id_of(b, &eb, &ib);
	assert_same_bytes(&ea, &eb);
	cr_assert(memcmp(ia.bytes, ib.bytes, 16) == 0);
	char *text = vy_program_to_json(a, false);
	cr_assert(strstr(text, "\"name\":\"a\"") < strstr(text, "\"name\":\"b\""), "%s", text);
	free(text);
	msgpack_sbuffer_destroy(&ea);
	msgpack_sbuffer_destroy(&eb);
	vy_program_destroy(a);
	vy_program_destroy(b);
}

Test(codec, program_id_is_xxh3_128_of_canonical_bytes_and_changes_with_the_program)
{
	struct vy_program *p = every_kind();
	msgpack_sbuffer enc;
	struct vy_program_id id;
	vy_program_id_of(p, &enc, &id);
	struct vy_program_id again;
	vy_program_id_compute(enc.data, enc.size, &again);
	cr_assert(memcmp(id.bytes, again.bytes, 16) == 0);
	/* XXH3-128 of the empty input, from the xxHash reference vectors */
	struct vy_program_id empty;
	vy_program_id_compute("", 0, &empty);
	char hex[VY_PROGRAM_ID_HEX];
	vy_program_id_hex(&empty, hex);
	cr_assert_str_eq(hex, "99aa06d3014798d86001c324468d497f");
	vy_program_id_hex(&id, hex);
	struct vy_program_id parsed;
	cr_assert_eq(vy_program_id_parse(hex, 32, &parsed, NULL), 0);
	cr_assert(memcmp(parsed.bytes, id.bytes, 16) == 0);
	struct vy_err err;
	cr_assert_eq(vy_program_id_parse("xyz", 3, &parsed, &err), VY_E_BAD_REQUEST);
	cr_assert(strstr(err.fix, "32 hex digits"));
	p->workgroup_size[0] = 32;
	msgpack_sbuffer enc2;
	struct vy_program_id id2;
	vy_program_id_of(p, &enc2, &id2);
	cr_assert(memcmp(id.bytes, id2.bytes, 16) != 0);
	msgpack_sbuffer_destroy(&enc);
	msgpack_sbuffer_destroy(&enc2);
	vy_program_destroy(p);
}

static struct vy_program *decode_json_ok(const char *text)
{
	struct vy_program *p = NULL;
	struct vy_err err;
	int rc = vy_program_from_json(text, strlen(text), &p, &err);
	cr_assert_eq(rc, 0, "%s at %s", err.message, err.at);
	return p;
}

#define PROGRAM_WITH(stmt)                                                                         \
	"{\"vyre\":1,\"workgroup_size\":[1,1,1],\"buffers\":[{\"name\":\"o\",\"binding\":0,"       \
	"\"access\":\"read_write\",\"type\":\"f32\",\"count\":4}],\"entry\":[" stmt "]}"

Test(codec, f32_literals_keep_exact_bits_and_non_finite_values)
{
	struct vy_program *p =
		decode_json_ok(PROGRAM_WITH("[\"store\",\"o\",[\"u32\",0],[\"f32\",0.1]],"
					    "[\"store\",\"o\",[\"u32\",1],[\"f32\",\"nan\"]],"
					    "[\"store\",\"o\",[\"u32\",2],[\"f32\",\"-inf\"]],"
					    "[\"store\",\"o\",[\"u32\",3],[\"f32\",-0.0]]"));
	float tenth = 0.1f;
	uint32_t bits;
	memcpy(&bits, &tenth, 4);
	cr_assert_eq(p->entry.items[0]->args[1]->bits, bits);
	cr_assert_eq(p->entry.items[1]->args[1]->bits, 0x7fc00000u);
	cr_assert_eq(p->entry.items[2]->args[1]->bits, 0xff800000u);
	cr_assert_eq(p->entry.items[3]->args[1]->bits, 0x80000000u);
	char *text = vy_program_to_json(p, false);
	cr_assert(strstr(text, "[\"f32\",0.1]"), "%s", text);
	cr_assert(strstr(text, "[\"f32\",\"nan\"]"), "%s", text);
	cr_assert(strstr(text, "[\"f32\",\"-inf\"]"), "%s", text);
	cr_assert(strstr(text, "[\"f32\",-0.0]"), "%s", text);
	free(text);
	vy_program_destroy(p);
}

/* A program storing one f32 literal, encoded with 1.5 and then patched to `word`, decoded. */
static uint32_t decoded_f32_literal(uint32_t word)
{
	struct vy_program *p = vy_program_create(NULL, 1, 1, 1);
	vy_program_add_buffer(p, "o", 0, VY_ACCESS_READ_WRITE, VY_TYPE_F32, 1);
	vy_program_set_entry(p, vy_ir_seq(p,
					vy_ir_store(p, "o", vy_ir_u32(p, 0),
						vy_ir_lit(p, VY_TYPE_F32, 0x3fc00000u)),
					NULL));
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	vy_program_encode(p, &sb);
	vy_program_destroy(p);
	static const uint8_t one_and_half[5] = {0xca, 0x3f, 0xc0, 0x00, 0x00};
	uint8_t *at = memmem(sb.data, sb.size, one_and_half, sizeof(one_and_half));
	cr_assert_not_null(at);
	at[1] = (uint8_t)(word >> 24);
	at[2] = (uint8_t)(word >> 16);
	at[3] = (uint8_t)(word >> 8);
	at[4] = (uint8_t)word;
	struct vy_err err;
	cr_assert_eq(vy_program_decode(sb.data, sb.size, &p, &err), 0, "%s", err.message);
	msgpack_sbuffer_destroy(&sb);
	uint32_t bits = p->entry.items[0]->args[1]->bits;
	vy_program_destroy(p);
	return bits;
}

Test(codec, nan_literals_decode_to_the_canonical_nan_and_infinities_stay)
{
	cr_assert_eq(decoded_f32_literal(0x7fc12345u), 0x7fc00000u);
	cr_assert_eq(decoded_f32_literal(0xffc00001u), 0x7fc00000u);
	cr_assert_eq(decoded_f32_literal(0x7f800000u), 0x7f800000u);
	cr_assert_eq(decoded_f32_literal(0xff800000u), 0xff800000u);
	cr_assert_eq(decoded_f32_literal(0x00000001u), 0x00000001u);
}

Test(codec, i32_literals_take_the_whole_range)
{
	struct vy_program *p = decode_json_ok(
		"{\"vyre\":1,\"workgroup_size\":[1,1,1],\"buffers\":[],\"entry\":["
		"[\"let\",\"lo\",[\"i32\",-2147483648]],[\"let\",\"hi\",[\"i32\",2147483647]]]}");
	cr_assert_eq(p->entry.items[0]->args[0]->bits, 0x80000000u);
	cr_assert_eq(p->entry.items[1]->args[0]->bits, 0x7fffffffu);
	vy_program_destroy(p);
	struct vy_err err;
	const char *past = "{\"vyre\":1,\"workgroup_size\":[1,1,1],\"buffers\":[],\"entry\":["
			   "[\"let\",\"lo\",[\"i32\",-2147483649]]]}";
	cr_assert_neq(vy_program_from_json(past, strlen(past), &p, &err), 0);
}

Test(codec, defaults_are_filled_and_left_out_of_the_canonical_form)
{
	struct vy_program *p = decode_json_ok(PROGRAM_WITH("[\"barrier\",\"seq_cst\"]"));
	cr_assert_eq(p->buffers[0].output, false);
	cr_assert_eq(p->entry.items[0]->order, VY_ORDER_SEQ_CST);
	char *text = vy_program_to_json(p, false);
	cr_assert(strstr(text, "\"count\":4}"), "false flags are left out: %s", text);
	cr_assert(strstr(text, "[[\"barrier\"]]"), "%s", text);
	free(text);
	vy_program_destroy(p);
}

Test(codec, json_syntax_error_names_line_and_column)
{
	const char *text = "{\"vyre\": 1,\n  \"entry\": [,]}";
	struct vy_program *p = NULL;
	struct vy_err err;
	cr_assert_eq(vy_program_from_json(text, strlen(text), &p, &err), VY_E_INVALID_PROGRAM);
	cr_assert_null(p);
	cr_assert(strstr(err.message, "line 2"), "%s", err.message);
	cr_assert(strstr(err.fix, "JSON syntax"), "%s", err.fix);
}

Test(codec, decode_errors_carry_a_location_and_a_fix)
{
	struct {
		const char *text;
		const char *at;
		const char *needle;
	} cases[] = {
		{PROGRAM_WITH("[\"store\",\"o\",[\"u32\",0],[\"frobnicate\",1]]"),
			"entry[0].store.value.frobnicate", "unknown expression"},
		{PROGRAM_WITH("[\"if\",[\"bool\",true],[[\"teleport\"]],[]]"),
			"entry[0].if.then[0]", "unknown node"},
		{PROGRAM_WITH("[\"store\",\"o\",[\"u32\",0]]"), "entry[0].store",
			"takes 4 elements"},
		{PROGRAM_WITH("[\"let\",\"v\",[\"u32\",-1]]"), "entry[0].let.value.u32",
			"0..4294967295"},
		{PROGRAM_WITH("[\"let\",\"v\",[\"add\",[\"u32\",1],[\"i32\",\"x\"]]]"),
			"entry[0].let.value.add.b.i32", "i32 literal"},
		{PROGRAM_WITH("[\"let\",\"v\",[\"bitcast\",\"u64\",[\"u32\",1]]]"),
			"entry[0].let.value.bitcast", "bitcast target type"},
		{PROGRAM_WITH("[\"let\",\"v\",[\"bitcast\",\"f32\"]]"),
			"entry[0].let.value.bitcast", "takes 3 elements"},
		{PROGRAM_WITH("[\"let\",\"v\",[\"spec\",\"k\",\"u32\",[\"i32\",1]]]"),
			"entry[0].let.value.spec.default", "must be a u32 literal"},
		{"{\"vyre\":1,\"workgroup_size\":[1,1,1],\"buffers\":[],\"entry\":[],\"extra\":0}",
			"extra", "unknown program field"},
		{"{\"vyre\":1,\"workgroup_size\":[1,1],\"buffers\":[],\"entry\":[]}",
			"workgroup_size", "takes 3 elements"},
		{"{\"vyre\":1,\"workgroup_size\":[1,1,1],\"buffers\":[{\"name\":\"a\",\"binding\":"
		 "0,"
		 "\"access\":\"readonly\",\"type\":\"u32\",\"count\":1}],\"entry\":[]}",
			"buffers[0].access", "unknown access"},
		{"{\"vyre\":1,\"workgroup_size\":[1,1,1],\"buffers\":[{\"name\":\"a\",\"binding\":"
		 "0,"
		 "\"access\":\"read_only\",\"type\":\"u32\"}],\"entry\":[]}",
			"buffers[0]", "lacks a count"},
		{"{\"vyre\":1,\"buffers\":[],\"entry\":[]}", "", "lacks the field workgroup_size"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vy_program *p = NULL;
		struct vy_err err;
		int rc = vy_program_from_json(cases[i].text, strlen(cases[i].text), &p, &err);
		cr_assert_eq(rc, VY_E_INVALID_PROGRAM, "case %zu decoded", i);
		cr_assert_null(p);
		cr_assert_str_eq(err.at, cases[i].at, "case %zu: at %s", i, err.at);
		cr_assert(strstr(err.message, cases[i].needle), "case %zu: %s", i, err.message);
		cr_assert_neq(err.fix[0], '\0', "case %zu has no fix", i);
	}
}

Test(codec, trailing_bytes_after_a_program_are_refused)
{
	struct vy_program *p = every_kind();
	msgpack_sbuffer enc;
	vy_program_encode(p, &enc);
	msgpack_sbuffer_write(&enc, "\xc0", 1);
	struct vy_program *q = NULL;
	struct vy_err err;
	cr_assert_eq(vy_program_decode(enc.data, enc.size, &q, &err), VY_E_INVALID_PROGRAM);
	cr_assert(strstr(err.message, "1 bytes follow"), "%s", err.message);
	msgpack_sbuffer_destroy(&enc);
	vy_program_destroy(p);
}

Test(codec, clone_is_deep_and_encodes_identically)
{
	struct vy_program *p = every_kind();
	struct vy_program *c = vy_program_clone(p);
	msgpack_sbuffer a;
	msgpack_sbuffer b;
	vy_program_encode(p, &a);
	vy_program_destroy(p);
	vy_program_encode(c, &b);
	assert_same_bytes(&a, &b);
	cr_assert_eq(vy_block_count_nodes(&c->entry), 21);
	msgpack_sbuffer_destroy(&a);
	msgpack_sbuffer_destroy(&b);
	vy_program_destroy(c);
}

Test(codec, path_indices_are_written_whole_from_zero_to_the_largest)
{
	char room[VY_PATH_INDEX_ROOM];
	size_t len = 0;
	const char *text = vy_path_index(0, room, &len);
	cr_expect_eq(len, 3);
	cr_expect_eq(memcmp(text, "[0]", 3), 0);
	text = vy_path_index(UINT32_MAX, room, &len);
	cr_expect_eq(len, VY_PATH_INDEX_ROOM);
	cr_expect_eq(memcmp(text, "[4294967295]", len), 0);
	cr_expect_eq(text, room, "the largest index fills the room exactly");
}
