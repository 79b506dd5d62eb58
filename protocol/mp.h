/*
 * A bounded msgpack reader. msgpack-c (used for all encoding) unpacks into a tree whose nesting is
 * capped at 32 levels and whose containers are allocated from their declared counts before their
 * elements arrive; vyred reads programs nested far deeper than that from untrusted peers, so every
 * frame is read with this pull reader instead. It never allocates: strings and binaries point into
 * the input, and a container's count is checked against the bytes left (each element takes at
 * least one byte) before anyone can act on it.
 *
 * Thread-safety: a reader belongs to one thread.
 */
#ifndef VY_PROTOCOL_MP_H
#define VY_PROTOCOL_MP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum vy_mp_type {
	VY_MP_NIL,
	VY_MP_BOOL,
	VY_MP_UINT,  /* any non-negative integer */
	VY_MP_INT,   /* a negative integer */
	VY_MP_FLOAT, /* float32 or float64; is_f32 says which */
	VY_MP_STR,
	VY_MP_BIN,
	VY_MP_ARRAY,
	VY_MP_MAP,
	VY_MP_EXT,
};

struct vy_mp_obj {
	enum vy_mp_type type;
	bool b;
	uint64_t u;
	int64_t i;
	double f;
	float f32;
	bool is_f32;
	const uint8_t *data; /* str, bin and ext payload, borrowed from the input */
	uint32_t len;        /* str, bin and ext payload bytes; array elements; map pairs */
};

struct vy_mp_reader {
	const uint8_t *start;
	const uint8_t *p;
	const uint8_t *end;
};

enum {
	VY_MP_OK = 0,
	VY_MP_TRUNCATED = -1, /* the input ends inside a value */
	VY_MP_INVALID = -2,   /* a reserved type byte (0xc1) */
	VY_MP_TOO_MANY = -3,  /* a container claims more elements than bytes remain */
};

void vy_mp_reader_init(struct vy_mp_reader *r, const void *data, size_t len);

/* Read one value's header (and the payload of str/bin/ext). For arrays and maps only the count is
 * read; the elements follow. Returns VY_MP_OK or a negative VY_MP_* code; on error the reader
 * does not move. */
int vy_mp_read(struct vy_mp_reader *r, struct vy_mp_obj *obj);

/* Skip one complete value, however deeply nested, without recursion. */
int vy_mp_skip(struct vy_mp_reader *r);

/* Byte offset of the reader from the start of its input. */
size_t vy_mp_offset(const struct vy_mp_reader *r);

/* Human name of a type with its article ("a map", "an unsigned integer", "nil"), for messages. */
const char *vy_mp_type_name(enum vy_mp_type type);

/* Human description of a negative VY_MP_* code. */
const char *vy_mp_strerror(int rc);

/* True when obj is a str equal to the NUL-terminated `s`. */
bool vy_mp_str_eq(const struct vy_mp_obj *obj, const char *s);

#endif
