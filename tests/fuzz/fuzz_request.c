/*
 * libFuzzer target for request decoding: one frame payload through vy_request_decode and
 * vy_request_finish. A decoded request's config is written back with vy_request_config_pack and
 * must read back as one well-formed msgpack value; a failure must carry one of the codes the
 * header promises, with its message and fix. The same bytes also go through the response decoder
 * and the msgpack-to-JSON converter, which read the same untrusted frames on the client side.
 */
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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
