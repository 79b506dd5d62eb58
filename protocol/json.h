/*
 * Conversion between JSON text and msgpack, so the JSON form of a program (and any other document
 * vyred reads or prints as JSON) goes through the one msgpack decoder. Maps keep their key order.
 * A float that is not finite is written as the JSON string "nan", "inf" or "-inf"; binaries are
 * written as lowercase hex strings.
 *
 * Thread-safety: reentrant.
 */
#ifndef VY_PROTOCOL_JSON_H
#define VY_PROTOCOL_JSON_H

#include <json-c/json.h>
#include <msgpack.h>
#include <stddef.h>

#include "err.h"

/* Deepest JSON nesting accepted (the IR limits are far below it). */
#define VY_JSON_MAX_DEPTH 1024

/* Parse JSON text and append its msgpack form. Errors: `code` (the caller's choice of
 * INVALID_PROGRAM or BAD_REQUEST) naming line and column of a syntax error. */
int vy_json_to_msgpack(
	const char *text, size_t len, int code, msgpack_packer *pk, struct vy_err *err);

/* Append the msgpack form of a json-c tree. */
void vy_json_pack(struct json_object *obj, msgpack_packer *pk);

/* A json-c tree of one msgpack value (the caller puts it). Errors: VY_E_BAD_REQUEST for
 * malformed msgpack, extension types, or nesting deeper than VY_JSON_MAX_DEPTH. */
int vy_msgpack_to_json(const void *data, size_t len, struct json_object **out, struct vy_err *err);

/* JSON text of a json-c tree, malloc'd; `pretty` indents by two spaces. */
char *vy_json_text(struct json_object *obj, bool pretty);

#endif
