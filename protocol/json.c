/*
 * JSON <-> msgpack. json-c parses and prints; this file only walks one tree to build the other.
 * Floats are printed in the shortest form that reads back to the same value (float32 values with
 * the shortest decimal that reads back as that float32), so JSON stays readable and exact.
 */
#include "json.h"

#include "mp.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void vy_json_pack(struct json_object *obj, msgpack_packer *pk)
{
	switch (json_object_get_type(obj)) {
	case json_type_null:
		msgpack_pack_nil(pk);
		break;
	case json_type_boolean:
		if (json_object_get_boolean(obj)) {
			msgpack_pack_true(pk);
		} else {
			msgpack_pack_false(pk);
		}
		break;
	case json_type_int:
		/* json-c keeps integers above INT64_MAX as uint64 and reports them through
		 * get_uint64 */
		if (json_object_get_int64(obj) == INT64_MAX) {
			msgpack_pack_uint64(pk, json_object_get_uint64(obj));
		} else {
			msgpack_pack_int64(pk, json_object_get_int64(obj));
		}
		break;
	case json_type_double:
		msgpack_pack_double(pk, json_object_get_double(obj));
		break;
	case json_type_string: {
		int n = json_object_get_string_len(obj);
		msgpack_pack_str(pk, (size_t)n);
		msgpack_pack_str_body(pk, json_object_get_string(obj), (size_t)n);
		break;
	}
	case json_type_array: {
		size_t n = json_object_array_length(obj);
		msgpack_pack_array(pk, n);
		for (size_t i = 0; i < n; i++) {
			vy_json_pack(json_object_array_get_idx(obj, i), pk);
		}
		break;
	}
	case json_type_object:
		msgpack_pack_map(pk, (size_t)json_object_object_length(obj));
		json_object_object_foreach(obj, key, val)
		{
			size_t n = strlen(key);
			msgpack_pack_str(pk, n);
			msgpack_pack_str_body(pk, key, n);
			vy_json_pack(val, pk);
		}
		break;
	}
}

static void line_col(const char *text, size_t off, int *line, int *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off; i++) {
		if (text[i] == '\n') {
			++*line;
			*col = 1;
		} else {
			++*col;
		}
	}
}

int vy_json_to_msgpack(
	const char *text, size_t len, int code, msgpack_packer *pk, struct vy_err *err)
{
	if (len > INT32_MAX) {
		return vy_err_set(err, code, NULL, "send a smaller document",
			"the JSON document is %zu bytes long", len);
	}
	struct json_tokener *tok = json_tokener_new_ex(VY_JSON_MAX_DEPTH);
	if (!tok) {
		fprintf(stderr, "vyred: out of memory creating a JSON tokener\n");
		abort();
	}
	struct json_object *obj = json_tokener_parse_ex(tok, text, (int)len);
	enum json_tokener_error jerr = json_tokener_get_error(tok);
	size_t off = json_tokener_get_parse_end(tok);
	int rc = 0;
	if (!obj && jerr == json_tokener_success) {
		/* the literal null is a complete document but never a valid one for vyred */
		jerr = json_tokener_error_parse_unexpected;
	}
	if (jerr == json_tokener_continue) {
		rc = vy_err_set(err, code, NULL, "complete the JSON document",
			"the JSON document ends early");
	} else if (jerr != json_tokener_success) {
		int line;
		int col;
		line_col(text, off, &line, &col);
		rc = vy_err_set(err, code, NULL, "correct the JSON syntax at that place",
			"JSON syntax error at line %d, column %d: %s", line, col,
			json_tokener_error_desc(jerr));
	} else {
		while (off < len && (text[off] == ' ' || text[off] == '\n' || text[off] == '\t' ||
					    text[off] == '\r')) {
			off++;
		}
		if (off < len) {
			int line;
			int col;
			line_col(text, off, &line, &col);
			rc = vy_err_set(err, code, NULL, "remove what follows the document",
				"text follows the JSON document at line %d, column %d", line, col);
		}
	}
	if (rc == 0) {
		vy_json_pack(obj, pk);
	}
	json_object_put(obj);
	json_tokener_free(tok);
	return rc;
}

/* Shortest decimal text that reads back to exactly `v` (as a float when is_f32). */
static void shortest(double v, bool is_f32, char *buf, size_t size)
{
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, size, "%.*g", prec, v);
		bool same = is_f32 ? strtof(buf, NULL) == (float)v : strtod(buf, NULL) == v;
		if (same) {
			break;
		}
	}
	if (!strpbrk(buf, ".eEn")) {
		size_t n = strlen(buf);
		snprintf(buf + n, size - n, ".0");
	}
}

static struct json_object *float_json(double v, bool is_f32)
{
	if (isnan(v)) {
		return json_object_new_string("nan");
	}
	if (isinf(v)) {
		return json_object_new_string(v > 0 ? "inf" : "-inf");
	}
	char buf[40];
	shortest(v, is_f32, buf, sizeof(buf));
	return json_object_new_double_s(v, buf);
}

static int to_json(
	struct vy_mp_reader *r, unsigned depth, struct json_object **out, struct vy_err *err)
{
	if (depth > VY_JSON_MAX_DEPTH) {
		return vy_err_set(err, VY_E_BAD_REQUEST, NULL, "nest the document less deeply",
			"the document nests deeper than %d levels", VY_JSON_MAX_DEPTH);
	}
	struct vy_mp_obj o;
	int rc = vy_mp_read(r, &o);
	if (rc != VY_MP_OK) {
		return vy_err_set(err, VY_E_BAD_REQUEST, NULL, "send well-formed msgpack",
			"malformed msgpack at byte %zu: %s", vy_mp_offset(r), vy_mp_strerror(rc));
	}
	struct json_object *obj = NULL;
	switch (o.type) {
	case VY_MP_NIL:
		break;
	case VY_MP_BOOL:
		obj = json_object_new_boolean(o.b);
		break;
	case VY_MP_UINT:
		obj = o.u > INT64_MAX ? json_object_new_uint64(o.u)
				      : json_object_new_int64((int64_t)o.u);
		break;
	case VY_MP_INT:
		obj = json_object_new_int64(o.i);
		break;
	case VY_MP_FLOAT:
		obj = float_json(o.f, o.is_f32);
		break;
	case VY_MP_STR:
		obj = json_object_new_string_len((const char *)o.data, (int)o.len);
		break;
	case VY_MP_BIN: {
		char *hex = malloc((size_t)o.len * 2 + 1);
		if (!hex) {
			abort();
		}
		for (uint32_t i = 0; i < o.len; i++) {
			snprintf(hex + 2 * i, 3, "%02x", o.data[i]);
		}
		hex[2 * (size_t)o.len] = '\0';
		obj = json_object_new_string_len(hex, (int)o.len * 2);
		free(hex);
		break;
	}
	case VY_MP_ARRAY:
		obj = json_object_new_array_ext((int)o.len);
		for (uint32_t i = 0; i < o.len; i++) {
			struct json_object *item = NULL;
			rc = to_json(r, depth + 1, &item, err);
			if (rc) {
				json_object_put(obj);
				return rc;
			}
			json_object_array_add(obj, item);
		}
		break;
	case VY_MP_MAP:
		obj = json_object_new_object();
		for (uint32_t i = 0; i < o.len; i++) {
			struct vy_mp_obj key;
			rc = vy_mp_read(r, &key);
			if (rc != VY_MP_OK || key.type != VY_MP_STR) {
				json_object_put(obj);
				return vy_err_set(err, VY_E_BAD_REQUEST, NULL,
					"use strings as map keys",
					"a map key at byte %zu is not a string", vy_mp_offset(r));
			}
			struct json_object *val = NULL;
			rc = to_json(r, depth + 1, &val, err);
			if (rc) {
				json_object_put(obj);
				return rc;
			}
			if (memchr(key.data, '\0', key.len)) {
				json_object_put(val);
				json_object_put(obj);
				return vy_err_set(err, VY_E_BAD_REQUEST, NULL,
					"remove the NUL byte from the map key",
					"a map key at byte %zu holds a NUL byte", vy_mp_offset(r));
			}
			char *k = malloc((size_t)key.len + 1);
			if (!k) {
				abort();
			}
			memcpy(k, key.data, key.len);
			k[key.len] = '\0';
			json_object_object_add(obj, k, val);
			free(k);
		}
		break;
	case VY_MP_EXT:
		return vy_err_set(err, VY_E_BAD_REQUEST, NULL,
			"do not send msgpack extension types",
			"a msgpack extension value at byte %zu has no JSON form", vy_mp_offset(r));
	}
	*out = obj;
	return 0;
}

int vy_msgpack_to_json(const void *data, size_t len, struct json_object **out, struct vy_err *err)
{
	struct vy_mp_reader r;
	vy_mp_reader_init(&r, data, len);
	return to_json(&r, 0, out, err);
}

char *vy_json_text(struct json_object *obj, bool pretty)
{
	int flags = JSON_C_TO_STRING_NOSLASHESCAPE |
		    (pretty ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED
			    : JSON_C_TO_STRING_PLAIN);
	const char *s = json_object_to_json_string_ext(obj, flags);
	char *copy = strdup(s ? s : "null");
	if (!copy) {
		abort();
	}
	return copy;
}
