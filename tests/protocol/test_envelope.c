/* Request and response envelopes of protocol version 1. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "envelope.h"

struct doc {
	msgpack_sbuffer sb;
	msgpack_packer pk;
};

static void doc_init(struct doc *d)
{
	msgpack_sbuffer_init(&d->sb);
	msgpack_packer_init(&d->pk, &d->sb, msgpack_sbuffer_write);
}

static void key(struct doc *d, const char *k)
{
	vy_pack_cstr(&d->pk, k);
}

static struct vy_program *tiny_program(void)
{
	struct vy_program *p = vy_program_create("tiny", 64, 1, 1);
	vy_program_add_buffer(p, "x", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 0);
	vy_program_add_buffer(p, "y", 1, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 0);
	vy_program_set_entry(p,
		vy_ir_seq(p,
			vy_ir_store(p, "y", vy_ir_gid(p, 0), vy_ir_load(p, "x", vy_ir_gid(p, 0))),
			NULL));
	return p;
}

static int decode(struct doc *d, struct vy_request *req, struct vy_err *err)
{
	return vy_request_decode((const uint8_t *)d->sb.data, d->sb.size, req, err);
}

Test(envelope, dispatch_request_decodes_every_field)
{
	struct doc d;
	doc_init(&d);
	vy_request_pack_head(&d.pk, 42, VY_OP_DISPATCH, 4);
	key(&d, "program");
	struct vy_program *p = tiny_program();
	vy_program_pack(p, &d.pk);
	vy_program_destroy(p);
	key(&d, "inputs");
	msgpack_pack_array(&d.pk, 3);
	msgpack_pack_bin(&d.pk, 8);
	msgpack_pack_bin_body(&d.pk, "abcdefgh", 8);
	msgpack_pack_map(&d.pk, 1);
	key(&d, "resident");
	msgpack_pack_uint64(&d.pk, 0x1234567890abcdefull);
	msgpack_pack_map(&d.pk, 1);
	key(&d, "shm");
	msgpack_pack_array(&d.pk, 3);
	msgpack_pack_uint32(&d.pk, 7);
	msgpack_pack_uint32(&d.pk, 64);
	msgpack_pack_uint32(&d.pk, 128);
	key(&d, "config");
	struct vy_request_config c;
	vy_request_config_init(&c);
	c.has_grid = true;
	c.grid[0] = 3;
	c.grid[1] = 2;
	c.grid[2] = 1;
	struct vy_spec_setting spec[2] = {
		{.name = "scale", .wire = VY_SPEC_WIRE_FLOAT, .f = 2.5},
		{.name = "n", .wire = VY_SPEC_WIRE_UINT, .u = 9},
	};
	c.n_spec = 2;
	c.spec = spec;
	c.max_loop_iterations = 1000;
	c.timeout_ms = 250;
	c.label = "job";
	c.device = 1;
	c.backend = VY_BACKEND_REFERENCE;
	c.timing = true;
	vy_request_config_pack(&d.pk, &c);
	key(&d, "outputs_to");
	msgpack_pack_array(&d.pk, 2);
	msgpack_pack_nil(&d.pk);
	msgpack_pack_uint64(&d.pk, 99);

	struct vy_request req;
	struct vy_err err;
	cr_assert_eq(decode(&d, &req, &err), 0, "%s at %s", err.message, err.at);
	cr_assert_eq(req.id, 42);
	cr_assert_eq(req.op, VY_OP_DISPATCH);
	cr_assert_not_null(req.program);
	cr_assert_str_eq(req.program->name, "tiny");
	cr_assert_eq(req.n_inputs, 3);
	cr_assert_eq(req.inputs[0].kind, VY_INPUT_BYTES);
	cr_assert_eq(req.inputs[0].len, 8);
	cr_assert(memcmp(req.inputs[0].data, "abcdefgh", 8) == 0);
	cr_assert_eq(req.inputs[1].kind, VY_INPUT_RESIDENT);
	cr_assert_eq(req.inputs[1].handle, 0x1234567890abcdefull);
	cr_assert_eq(req.inputs[2].kind, VY_INPUT_SHM);
	cr_assert_eq(req.inputs[2].region, 7);
	cr_assert_eq(req.inputs[2].offset, 64);
	cr_assert_eq(req.inputs[2].len, 128);
	cr_assert(req.config.has_grid);
	cr_assert_eq(req.config.grid[1], 2);
	cr_assert_eq(req.config.n_spec, 2);
	cr_assert_str_eq(req.config.spec[0].name, "scale");
	cr_assert_float_eq(req.config.spec[0].f, 2.5, 0.0);
	cr_assert_eq(req.config.spec[1].u, 9);
	cr_assert_eq(req.config.max_loop_iterations, 1000);
	cr_assert_eq(req.config.timeout_ms, 250);
	cr_assert_str_eq(req.config.label, "job");
	cr_assert_eq(req.config.device, 1);
	cr_assert_eq(req.config.backend, VY_BACKEND_REFERENCE);
	cr_assert(req.config.timing);
	cr_assert_eq(req.n_outputs_to, 2);
	cr_assert_eq(req.outputs_to[0], 0);
	cr_assert_eq(req.outputs_to[1], 99);
	vy_request_finish(&req);
	msgpack_sbuffer_destroy(&d.sb);
}

Test(envelope, a_program_kept_raw_is_its_bytes_and_decodes_with_the_same_errors)
{
	/* VY_DECODE_PROGRAM_RAW keeps the program's bytes as sent; vy_request_program decodes
	 * them later, to the program or to the error an eager decode gives. */
	struct doc d;
	doc_init(&d);
	vy_request_pack_head(&d.pk, 7, VY_OP_COMPILE, 1);
	key(&d, "program");
	size_t at = d.sb.size;
	struct vy_program *p = tiny_program();
	vy_program_pack(p, &d.pk);
	size_t end = d.sb.size;
	struct vy_request req;
	struct vy_err err = {0};
	cr_assert_eq(vy_request_decode_flags((const uint8_t *)d.sb.data, d.sb.size,
			     VY_DECODE_PROGRAM_RAW, &req, &err),
		0, "%s", err.message);
	cr_assert_null(req.program);
	cr_assert_eq(req.program_raw, (const uint8_t *)d.sb.data + at);
	cr_assert_eq(req.program_raw_len, end - at);
	cr_assert_eq(vy_request_program(&req, &err), 0, "%s", err.message);
	cr_assert_not_null(req.program);
	cr_assert_str_eq(req.program->name, "tiny");
	vy_request_finish(&req);
	vy_program_destroy(p);
	msgpack_sbuffer_destroy(&d.sb);

	doc_init(&d);
	vy_request_pack_head(&d.pk, 8, VY_OP_DISPATCH, 2);
	key(&d, "program");
	msgpack_pack_map(&d.pk, 1);
	key(&d, "vyre");
	vy_pack_cstr(&d.pk, "one");
	key(&d, "inputs");
	msgpack_pack_array(&d.pk, 0);
	struct vy_err eager = {0};
	cr_assert_eq(decode(&d, &req, &eager), VY_E_INVALID_PROGRAM);
	cr_assert_eq(vy_request_decode_flags((const uint8_t *)d.sb.data, d.sb.size,
			     VY_DECODE_PROGRAM_RAW, &req, &err),
		0, "%s", err.message);
	cr_assert_eq(vy_request_program(&req, &err), VY_E_INVALID_PROGRAM);
	cr_assert_str_eq(err.at, eager.at);
	cr_assert_str_eq(err.message, eager.message);
	cr_assert_str_eq(err.fix, eager.fix);
	vy_request_finish(&req);
	msgpack_sbuffer_destroy(&d.sb);
}

Test(envelope, simple_operations_decode)
{
	struct doc d;
	doc_init(&d);
	vy_request_pack_head(&d.pk, 1, VY_OP_HELLO, 2);
	key(&d, "protocol");
	msgpack_pack_uint32(&d.pk, 1);
	key(&d, "client");
	vy_pack_cstr(&d.pk, "test");
	struct vy_request req;
	struct vy_err err;
	cr_assert_eq(decode(&d, &req, &err), 0, "%s", err.message);
	cr_assert_eq(req.protocol, 1);
	cr_assert_str_eq(req.client, "test");
	vy_request_finish(&req);
	msgpack_sbuffer_destroy(&d.sb);

	doc_init(&d);
	vy_request_pack_head(&d.pk, 2, VY_OP_DOWNLOAD, 3);
	key(&d, "handle");
	msgpack_pack_uint64(&d.pk, 5);
	key(&d, "offset");
	msgpack_pack_uint64(&d.pk, 16);
	key(&d, "length");
	msgpack_pack_uint64(&d.pk, 32);
	cr_assert_eq(decode(&d, &req, &err), 0, "%s", err.message);
	cr_assert_eq(req.handle, 5);
	cr_assert_eq(req.offset, 16);
	cr_assert(req.has_length);
	cr_assert_eq(req.length, 32);
	vy_request_finish(&req);
	msgpack_sbuffer_destroy(&d.sb);

	for (int op = 0; op < VY_OP_COUNT; op++) {
		int back = vy_op_from_name(vy_op_name(op), strlen(vy_op_name(op)));
		cr_assert_eq(back, op);
	}
	cr_assert(vy_op_admin(VY_OP_CACHE_CLEAR));
	cr_assert_not(vy_op_admin(VY_OP_STATS));
}

static void expect_error(struct doc *d, int code, uint64_t id, const char *at, const char *needle)
{
	struct vy_request req;
	struct vy_err err;
	int rc = decode(d, &req, &err);
	cr_assert_eq(rc, code, "got %s: %s", vy_err_name(rc), err.message);
	cr_assert_eq(req.id, id);
	cr_assert_str_eq(err.at, at);
	cr_assert(strstr(err.message, needle), "%s", err.message);
	cr_assert_neq(err.fix[0], '\0');
	cr_assert_null(req.arena);
	msgpack_sbuffer_destroy(&d->sb);
}

Test(envelope, malformed_requests_get_their_code_and_keep_the_id)
{
	struct doc d;
	doc_init(&d);
	msgpack_pack_array(&d.pk, 0);
	expect_error(&d, VY_E_BAD_FRAME, 0, "", "not a msgpack map");

	doc_init(&d);
	msgpack_pack_map(&d.pk, 0);
	msgpack_pack_nil(&d.pk);
	expect_error(&d, VY_E_BAD_FRAME, 0, "", "follow the request map");

	doc_init(&d);
	msgpack_pack_map(&d.pk, 1);
	key(&d, "op");
	vy_pack_cstr(&d.pk, "ping");
	expect_error(&d, VY_E_BAD_REQUEST, 0, "id", "no id");

	doc_init(&d);
	msgpack_pack_map(&d.pk, 2);
	key(&d, "id");
	msgpack_pack_uint32(&d.pk, 9);
	key(&d, "op");
	vy_pack_cstr(&d.pk, "launch_missiles");
	expect_error(&d, VY_E_BAD_REQUEST, 9, "op", "unknown operation");

	doc_init(&d);
	vy_request_pack_head(&d.pk, 10, VY_OP_PING, 1);
	key(&d, "verbose");
	msgpack_pack_true(&d.pk);
	expect_error(&d, VY_E_BAD_REQUEST, 10, "verbose", "does not take the field");

	doc_init(&d);
	vy_request_pack_head(&d.pk, 11, VY_OP_ALLOC, 0);
	expect_error(&d, VY_E_BAD_REQUEST, 11, "size", "needs a nonzero field size");

	doc_init(&d);
	vy_request_pack_head(&d.pk, 12, VY_OP_FREE, 2);
	key(&d, "handle");
	msgpack_pack_uint32(&d.pk, 1);
	key(&d, "handle");
	msgpack_pack_uint32(&d.pk, 2);
	expect_error(&d, VY_E_BAD_REQUEST, 12, "handle", "appears twice");

	doc_init(&d);
	vy_request_pack_head(&d.pk, 13, VY_OP_DISPATCH, 1);
	key(&d, "inputs");
	msgpack_pack_array(&d.pk, 0);
	expect_error(&d, VY_E_BAD_REQUEST, 13, "program", "exactly one of program and program_id");

	doc_init(&d);
	vy_request_pack_head(&d.pk, 14, VY_OP_COMPILE, 2);
	key(&d, "program");
	struct vy_program *p = tiny_program();
	vy_program_pack(p, &d.pk);
	vy_program_destroy(p);
	key(&d, "config");
	msgpack_pack_map(&d.pk, 1);
	key(&d, "grdi");
	msgpack_pack_nil(&d.pk);
	expect_error(&d, VY_E_BAD_REQUEST, 14, "config", "unknown config field \"grdi\"");

	doc_init(&d);
	vy_request_pack_head(&d.pk, 15, VY_OP_COMPILE, 1);
	key(&d, "program");
	msgpack_pack_map(&d.pk, 1);
	key(&d, "vyre");
	vy_pack_cstr(&d.pk, "one");
	expect_error(&d, VY_E_INVALID_PROGRAM, 15, "program.vyre", "must be an unsigned integer");

	doc_init(&d);
	vy_request_pack_head(&d.pk, 16, VY_OP_DISPATCH, 2);
	key(&d, "program_id");
	vy_pack_cstr(&d.pk, "00112233445566778899aabbccddeeff");
	key(&d, "inputs");
	msgpack_pack_array(&d.pk, 1);
	msgpack_pack_map(&d.pk, 1);
	key(&d, "teleport");
	msgpack_pack_nil(&d.pk);
	expect_error(&d, VY_E_BAD_REQUEST, 16, "inputs", "unknown input kind");
}

/* A dispatch by program id with n empty inputs and, when n_spec > 0, that many spec values; the
 * label, when given, is sent with its length (so it may hold a NUL byte). */
static void pack_limits(struct doc *d, uint32_t n_inputs, uint32_t n_spec, uint64_t timeout,
	const char *label, size_t label_len)
{
	doc_init(d);
	vy_request_pack_head(&d->pk, 30, VY_OP_DISPATCH, 3);
	key(d, "program_id");
	vy_pack_cstr(&d->pk, "00112233445566778899aabbccddeeff");
	key(d, "inputs");
	msgpack_pack_array(&d->pk, n_inputs);
	for (uint32_t i = 0; i < n_inputs; i++) {
		msgpack_pack_bin(&d->pk, 0);
	}
	key(d, "config");
	msgpack_pack_map(&d->pk, 1 + (n_spec > 0) + (label != NULL));
	key(d, "timeout_ms");
	msgpack_pack_uint64(&d->pk, timeout);
	if (n_spec > 0) {
		key(d, "spec");
		msgpack_pack_map(&d->pk, n_spec);
		for (uint32_t i = 0; i < n_spec; i++) {
			char name[16];
			snprintf(name, sizeof(name), "s%u", i);
			key(d, name);
			msgpack_pack_uint32(&d->pk, i);
		}
	}
	if (label) {
		key(d, "label");
		msgpack_pack_str(&d->pk, label_len);
		msgpack_pack_str_body(&d->pk, label, label_len);
	}
}

Test(envelope, request_limits_admit_their_maximum_and_refuse_one_more)
{
	struct doc d;
	struct vy_request req;
	struct vy_err err;
	pack_limits(&d, VY_MAX_INPUTS, VY_MAX_SPEC_SETTINGS, UINT32_MAX, "job", 3);
	cr_assert_eq(decode(&d, &req, &err), 0, "%s", err.message);
	cr_assert_eq(req.n_inputs, VY_MAX_INPUTS);
	cr_assert_eq(req.config.n_spec, VY_MAX_SPEC_SETTINGS);
	cr_assert_eq(req.config.spec[63].u, 63);
	cr_assert_eq(req.config.timeout_ms, UINT32_MAX);
	cr_assert_str_eq(req.config.label, "job");
	vy_request_finish(&req);
	msgpack_sbuffer_destroy(&d.sb);

	pack_limits(&d, VY_MAX_INPUTS + 1, 0, 1, NULL, 0);
	expect_error(&d, VY_E_BAD_REQUEST, 30, "inputs", "33 inputs is more than 32");
	pack_limits(&d, 0, VY_MAX_SPEC_SETTINGS + 1, 1, NULL, 0);
	expect_error(&d, VY_E_BAD_REQUEST, 30, "config", "65 spec values is more than 64");
	pack_limits(&d, 0, 0, (uint64_t)UINT32_MAX + 1, NULL, 0);
	expect_error(&d, VY_E_BAD_REQUEST, 30, "config", "4294967296");
	pack_limits(&d, 0, 0, 1, "jo\0b", 4);
	expect_error(&d, VY_E_BAD_REQUEST, 30, "config", "without NUL bytes");
}

Test(envelope, error_response_round_trips_with_every_field)
{
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	msgpack_packer pk;
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	struct vy_err e;
	vy_err_set(&e, VY_E_INVALID_PROGRAM, "entry[2].if.then[0].store.value",
		"declare the buffer read_write", "store into read_only buffer \"x\"");
	struct vy_err_list list;
	vy_err_list_init(&list);
	vy_err_list_push(&list, &e);
	vy_err_list_push(&list, &e);
	vy_response_pack_error(&pk, 77, &e, &list);
	vy_err_list_finish(&list);

	struct vy_response resp;
	struct vy_err err;
	cr_assert_eq(vy_response_decode((const uint8_t *)sb.data, sb.size, &resp, &err), 0);
	cr_assert_eq(resp.id, 77);
	cr_assert_not(resp.ok);
	cr_assert_eq(resp.error.code, VY_E_INVALID_PROGRAM);
	cr_assert_str_eq(resp.error.at, "entry[2].if.then[0].store.value");
	cr_assert_str_eq(resp.error.fix, "declare the buffer read_write");
	cr_assert_str_eq(resp.error.message, "store into read_only buffer \"x\"");
	cr_assert_eq(resp.n_errors, 2);
	struct vy_mp_reader r;
	cr_assert(vy_response_field(&resp, "error", &r));
	struct vy_mp_obj o;
	vy_mp_read(&r, &o);
	cr_assert_eq(o.type, VY_MP_MAP);
	bool found_num = false;
	for (uint32_t i = 0; i < o.len; i++) {
		struct vy_mp_obj k;
		struct vy_mp_obj v;
		vy_mp_read(&r, &k);
		if (vy_mp_str_eq(&k, "num")) {
			vy_mp_read(&r, &v);
			cr_assert_eq(v.u, 1006);
			found_num = true;
		} else if (vy_mp_str_eq(&k, "message")) {
			vy_mp_read(&r, &v);
			cr_assert(memmem(v.data, v.len, ". Fix: declare", 14),
				"wire message ends with Fix");
		} else {
			vy_mp_skip(&r);
		}
	}
	cr_assert(found_num);
	msgpack_sbuffer_destroy(&sb);
}

Test(envelope, ok_response_exposes_result_fields)
{
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	msgpack_packer pk;
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	vy_response_pack_ok(&pk, 5, 1);
	vy_pack_cstr(&pk, "handle");
	msgpack_pack_uint64(&pk, 0xfeedull);
	struct vy_response resp;
	cr_assert_eq(vy_response_decode((const uint8_t *)sb.data, sb.size, &resp, NULL), 0);
	cr_assert(resp.ok);
	cr_assert_eq(resp.id, 5);
	struct vy_mp_reader r;
	cr_assert(vy_response_field(&resp, "handle", &r));
	struct vy_mp_obj o;
	vy_mp_read(&r, &o);
	cr_assert_eq(o.u, 0xfeedull);
	cr_assert_not(vy_response_field(&resp, "outputs", &r));
	msgpack_sbuffer_destroy(&sb);
}
