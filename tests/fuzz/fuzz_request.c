/*
 * libFuzzer target for request decoding: one frame payload through vy_request_decode and
 * vy_request_finish. A decoded request must round-trip: written back as a request (every field
 * it holds, its config through vy_request_config_pack and its program through vy_program_pack),
 * it decodes again, and the second request written back gives the same bytes, so decoding lost
 * or changed nothing that the first one held. A failure must carry one of the codes the header
 * promises, with its message and fix. The same bytes also go through the response decoder and
 * the msgpack-to-JSON converter, which read the same untrusted frames on the client side.
 */
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <string.h>

#include "codec.h"
#include "envelope.h"
#include "err.h"
#include "json.h"
#include "mp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void finding(const char *what, const struct vy_err *err)
{
	fprintf(stderr, "fuzz_request: %s", what);
	if (err) {
		fprintf(stderr, ": %s (at %s)", err->message, err->at);
	}
	fputc('\n', stderr);
	abort();
}

static void repack_config(const struct vy_request_config *config)
{
	msgpack_sbuffer sb;
	msgpack_sbuffer_init(&sb);
	msgpack_packer pk;
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	vy_request_config_pack(&pk, config);
	struct vy_mp_reader r;
	vy_mp_reader_init(&r, sb.data, sb.size);
	if (vy_mp_skip(&r) != VY_MP_OK || vy_mp_offset(&r) != sb.size) {
		finding("vy_request_config_pack wrote something other than one msgpack value",
			NULL);
	}
	msgpack_sbuffer_destroy(&sb);
}

static void pack_u64(msgpack_packer *pk, const char *key, uint64_t v)
{
	vy_pack_cstr(pk, key);
	msgpack_pack_uint64(pk, v);
}

static void pack_input(msgpack_packer *pk, const struct vy_input *in)
{
	switch (in->kind) {
	case VY_INPUT_BYTES:
		msgpack_pack_bin(pk, in->len);
		msgpack_pack_bin_body(pk, in->data, in->len);
		break;
	case VY_INPUT_RESIDENT:
		msgpack_pack_map(pk, 1);
		pack_u64(pk, "resident", in->handle);
		break;
	case VY_INPUT_SHM:
		msgpack_pack_map(pk, 1);
		vy_pack_cstr(pk, "shm");
		msgpack_pack_array(pk, 3);
		msgpack_pack_uint64(pk, in->region);
		msgpack_pack_uint64(pk, in->offset);
		msgpack_pack_uint64(pk, in->len);
		break;
	}
}

/* Whether the operation takes the field (its table in envelope.h). */
static bool takes(enum vy_op op, const char *field)
{
	static const char *const fields[] = {
#define FIELDS(e, wire, admin, accepted, required) accepted,
		VY_OP_MAP(FIELDS)
#undef FIELDS
	};
	size_t len = strlen(field);
	for (const char *p = fields[op]; *p;) {
		size_t n = strcspn(p, " ");
		if (n == len && strncmp(p, field, n) == 0) {
			return true;
		}
		p += n + (p[n] == ' ');
	}
	return false;
}

/* The request as a client would write it: every field it holds, none at its default. */
static void pack_request(msgpack_sbuffer *sb, const struct vy_request *q)
{
	msgpack_packer pk;
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	bool has[] = {
		q->protocol != 0,
		q->client != NULL,
		q->program != NULL,
		q->has_program_id,
		q->n_inputs > 0,
		takes(q->op, "config"),
		q->has_outputs_to,
		q->size != 0,
		q->name != NULL,
		q->handle != 0,
		q->data != NULL,
		q->offset != 0,
		q->has_length,
		q->region != 0,
		q->fault != NULL,
	};
	uint32_t n = 0;
	for (size_t i = 0; i < sizeof(has) / sizeof(has[0]); i++) {
		n += has[i];
	}
	vy_request_pack_head(&pk, q->id, q->op, n);
	if (q->protocol) {
		pack_u64(&pk, "protocol", q->protocol);
	}
	if (q->client) {
		vy_pack_cstr(&pk, "client");
		vy_pack_cstr(&pk, q->client);
	}
	if (q->program) {
		vy_pack_cstr(&pk, "program");
		vy_program_pack(q->program, &pk);
	}
	if (q->has_program_id) {
		char hex[VY_PROGRAM_ID_HEX];
		vy_program_id_hex(&q->program_id, hex);
		vy_pack_cstr(&pk, "program_id");
		vy_pack_cstr(&pk, hex);
	}
	if (q->n_inputs > 0) {
		vy_pack_cstr(&pk, "inputs");
		msgpack_pack_array(&pk, q->n_inputs);
		for (uint32_t i = 0; i < q->n_inputs; i++) {
			pack_input(&pk, &q->inputs[i]);
		}
	}
	if (takes(q->op, "config")) {
		vy_pack_cstr(&pk, "config");
		vy_request_config_pack(&pk, &q->config);
	}
	if (q->has_outputs_to) {
		vy_pack_cstr(&pk, "outputs_to");
		msgpack_pack_array(&pk, q->n_outputs_to);
		for (uint32_t i = 0; i < q->n_outputs_to; i++) {
			if (q->outputs_to[i]) {
				msgpack_pack_uint64(&pk, q->outputs_to[i]);
			} else {
				msgpack_pack_nil(&pk);
			}
		}
	}
	if (q->size) {
		pack_u64(&pk, "size", q->size);
	}
	if (q->name) {
		vy_pack_cstr(&pk, "name");
		vy_pack_cstr(&pk, q->name);
	}
	if (q->handle) {
		pack_u64(&pk, "handle", q->handle);
	}
	if (q->data) {
		vy_pack_cstr(&pk, "data");
		msgpack_pack_bin(&pk, q->data_len);
		msgpack_pack_bin_body(&pk, q->data, q->data_len);
	}
	if (q->offset) {
		pack_u64(&pk, "offset", q->offset);
	}
	if (q->has_length) {
		pack_u64(&pk, "length", q->length);
	}
	if (q->region) {
		pack_u64(&pk, "region", q->region);
	}
	if (q->fault) {
		vy_pack_cstr(&pk, "fault");
		vy_pack_cstr(&pk, q->fault);
	}
}

/* decode -> write -> decode -> write: the two written forms are the same bytes. */
static void round_trip(const struct vy_request *req)
{
	msgpack_sbuffer first;
	msgpack_sbuffer_init(&first);
	pack_request(&first, req);
	struct vy_request again;
	struct vy_err err;
	if (vy_request_decode((const uint8_t *)first.data, first.size, &again, &err) != 0) {
		finding("a decoded request, written back, does not decode", &err);
	}
	if (again.id != req->id || again.op != req->op) {
		finding("the id or op changed in a round trip", NULL);
	}
	msgpack_sbuffer second;
	msgpack_sbuffer_init(&second);
	pack_request(&second, &again);
	if (second.size != first.size || memcmp(second.data, first.data, first.size) != 0) {
		finding("a request changed in a round trip (decode, write, decode, write)", NULL);
	}
	vy_request_finish(&again);
	msgpack_sbuffer_destroy(&first);
	msgpack_sbuffer_destroy(&second);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vy_request req;
	struct vy_err err;
	int rc = vy_request_decode(data, size, &req, &err);
	if (rc == 0) {
		if ((unsigned)req.op >= VY_OP_COUNT) {
			finding("a decoded request has no valid op", NULL);
		}
		repack_config(&req.config);
		round_trip(&req);
		vy_request_finish(&req);
	} else {
		bool known = rc == VY_E_BAD_FRAME || rc == VY_E_BAD_REQUEST ||
			     rc == VY_E_INVALID_PROGRAM;
		if (!known || err.code != rc || err.message[0] == '\0' || err.fix[0] == '\0') {
			finding("vy_request_decode failed without a documented code, message and "
				"fix",
				&err);
		}
		if (req.arena != NULL || req.program != NULL) {
			finding("a failed decode left memory in the request", NULL);
		}
	}

	struct vy_response resp;
	vy_response_decode(data, size, &resp, NULL);

	struct json_object *obj = NULL;
	if (vy_msgpack_to_json(data, size, &obj, NULL) == 0) {
		json_object_put(obj);
	}
	return 0;
}
