/*
 * The program codec: msgpack <-> IR and JSON <-> IR (DESIGN.md §3), and the program id.
 *
 * Decoding reads untrusted bytes: every count is checked against the bytes that remain before
 * anything is allocated, nesting and node counts are bounded by the IR limits while reading
 * (so no input can exhaust the stack), unknown fields and wrong types are errors with a location
 * path. Decoding does not validate typing or scoping: run vy_validate afterwards.
 *
 * Encoding always writes the canonical form: buffers sorted by binding (then name), map keys in a
 * fixed order (vyre, name, workgroup_size, buffers, entry; name, binding, access, type, count,
 * output, live_out, hints; alignment, coalesce_axis, locality), `output` and `live_out` only when
 * true, `hints` with all three keys when the buffer has hints, a seq_cst barrier as ["barrier"],
 * integers in their shortest form and f32 literals as float32. A decoded canonical document
 * encodes to the same bytes.
 *
 * Thread-safety: all functions are reentrant.
 */
#ifndef VY_PROTOCOL_CODEC_H
#define VY_PROTOCOL_CODEC_H

#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "ir.h"
#include "mp.h"

/* Decode one program that fills exactly `len` bytes. On success *out owns a new program. Errors:
 * VY_E_INVALID_PROGRAM with `at` set where a location exists. */
int vy_program_decode(const void *data, size_t len, struct vy_program **out, struct vy_err *err);

/* Decode one program at the reader's position (inside a larger document) and leave the reader
 * after it. `at_prefix` (may be NULL) prefixes every location, e.g. "program". */
int vy_program_read(
	struct vy_mp_reader *r, const char *at_prefix, struct vy_program **out, struct vy_err *err);

/* Append the canonical msgpack form of the program. */
void vy_program_pack(const struct vy_program *program, msgpack_packer *pk);

/* The canonical bytes into a fresh sbuffer (the caller destroys it with msgpack_sbuffer_destroy).
 */
void vy_program_encode(const struct vy_program *program, msgpack_sbuffer *out);

/* Decode the JSON form. Errors: VY_E_INVALID_PROGRAM (syntax errors name line and column). */
int vy_program_from_json(const char *text, size_t len, struct vy_program **out, struct vy_err *err);

/* The JSON form of the canonical encoding, malloc'd; `pretty` indents by two spaces. */
char *vy_program_to_json(const struct vy_program *program, bool pretty);

struct vy_program_id {
	uint8_t bytes[16]; /* XXH3-128, canonical (big-endian) representation */
};

#define VY_PROGRAM_ID_HEX 33

/* The id of a canonical encoding. */
void vy_program_id_compute(const void *canonical, size_t len, struct vy_program_id *id);
/* Canonical encoding and its id in one step; the caller destroys `canonical`. */
void vy_program_id_of(
	const struct vy_program *program, msgpack_sbuffer *canonical, struct vy_program_id *id);
/* 32 lowercase hex digits and a NUL. */
void vy_program_id_hex(const struct vy_program_id *id, char out[VY_PROGRAM_ID_HEX]);
/* Parse 32 hex digits; VY_E_BAD_REQUEST when the text is not an id. */
int vy_program_id_parse(const char *hex, size_t len, struct vy_program_id *id, struct vy_err *err);

#endif
