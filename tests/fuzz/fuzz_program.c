/*
 * libFuzzer target for the program decoder and the validator. Every input that decodes is
 * validated (with no capability limits and with tight ones), and its canonical form is checked
 * to be a fixed point: encoding, decoding the encoding and encoding again gives the same bytes,
 * both through msgpack and through the JSON form. Validation must not change the encoding either
 * (it only records expression types). Any difference is a finding and aborts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "err.h"
#include "ir.h"
#include "validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void finding(const char *what, const struct vy_err *err)
{
	fprintf(stderr, "fuzz_program: %s", what);
	if (err) {
		fprintf(stderr, ": %s (at %s)", err->message, err->at);
	}
	fputc('\n', stderr);
	abort();
}

/* Every error a function hands back carries its code, a message and a fix. */
static void check_err(const struct vy_err *err, int rc)
{
	if (err->code != rc || err->message[0] == '\0' || err->fix[0] == '\0') {
		finding("an error came back without its code, message or fix", err);
	}
}

static bool same_bytes(const msgpack_sbuffer *a, const msgpack_sbuffer *b)
{
	return a->size == b->size && memcmp(a->data, b->data, a->size) == 0;
}

static void validate(struct vy_program *p)
{
	static const struct vy_caps tight = {
		.subgroups = false,
		.max_workgroup_invocations = 256,
		.max_workgroup_size = {128, 4, 2},
		.max_shared_bytes = 1024,
	};
	const struct vy_caps *caps[] = {NULL, &tight};
	for (size_t c = 0; c < 2; c++) {
		struct vy_err_list errs;
		vy_err_list_init(&errs);
		int rc = vy_validate(p, caps[c], &errs);
		bool known =
			rc == 0 || rc == VY_E_INVALID_PROGRAM || rc == VY_E_UNSUPPORTED_FEATURE;
		if (!known || (rc == 0) != (errs.len == 0)) {
			finding("vy_validate returned a code that disagrees with its error list",
				NULL);
		}
		for (size_t i = 0; i < errs.len; i++) {
			check_err(&errs.items[i], errs.items[i].code);
		}
		vy_err_list_finish(&errs);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vy_program *p = NULL;
	struct vy_err err;
	int rc = vy_program_decode(data, size, &p, &err);
	if (rc != 0) {
		if (rc != VY_E_INVALID_PROGRAM || p != NULL) {
			finding("vy_program_decode failed with a code other than INVALID_PROGRAM",
				&err);
		}
		check_err(&err, rc);
		return 0;
	}

	msgpack_sbuffer before;
	vy_program_encode(p, &before);
	validate(p);
	msgpack_sbuffer first;
	vy_program_encode(p, &first);
	if (!same_bytes(&before, &first)) {
		finding("validation changed the canonical encoding", NULL);
	}

	struct vy_program *again = NULL;
	if (vy_program_decode(first.data, first.size, &again, &err) != 0) {
		finding("the canonical encoding does not decode", &err);
	}
	msgpack_sbuffer second;
	vy_program_encode(again, &second);
	if (!same_bytes(&first, &second)) {
		finding("decoding and re-encoding the canonical form changed its bytes", NULL);
	}

	char *json = vy_program_to_json(p, false);
	struct vy_program *from_json = NULL;
	if (vy_program_from_json(json, strlen(json), &from_json, &err) != 0) {
		fprintf(stderr, "JSON: %s\n", json);
		finding("the JSON form of a decoded program does not decode", &err);
	}
	msgpack_sbuffer third;
	vy_program_encode(from_json, &third);
	if (!same_bytes(&first, &third)) {
		fprintf(stderr, "JSON: %s\n", json);
		finding("the JSON round trip changed the canonical encoding", NULL);
	}

	free(json);
	msgpack_sbuffer_destroy(&third);
	msgpack_sbuffer_destroy(&second);
	msgpack_sbuffer_destroy(&first);
	msgpack_sbuffer_destroy(&before);
	vy_program_destroy(from_json);
	vy_program_destroy(again);
	vy_program_destroy(p);
	return 0;
}
