/*
 * The bounded msgpack pull reader (see mp.h for why it exists). It follows the msgpack
 * specification's type table; every multi-byte quantity is big-endian.
 */
#include "mp.h"

#include <string.h>

void vy_mp_reader_init(struct vy_mp_reader *r, const void *data, size_t len)
{
	r->start = data;
	r->p = data;
	r->end = r->p + len;
}

size_t vy_mp_offset(const struct vy_mp_reader *r)
{
	return (size_t)(r->p - r->start);
}

static uint64_t be(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++) {
		v = (v << 8) | p[i];
	}
	return v;
}

/* Decode the type byte and its fixed-size header; *used gets the header's length. */
static int payload(struct vy_mp_obj *o, const uint8_t *p, size_t avail, size_t *used)
{
	uint8_t t = p[0];
	size_t need = 1;
	memset(o, 0, sizeof(*o));
#define NEED(n)                                                                                    \
	do {                                                                                       \
		need = (n);                                                                        \
		if (avail < need) {                                                                \
			return VY_MP_TRUNCATED;                                                    \
		}                                                                                  \
	} while (0)
	if (t <= 0x7f) {
		o->type = VY_MP_UINT;
		o->u = t;
	} else if (t >= 0xe0) {
		o->type = VY_MP_INT;
		o->i = (int8_t)t;
	} else if ((t & 0xf0) == 0x80) {
		o->type = VY_MP_MAP;
		o->len = t & 0x0f;
	} else if ((t & 0xf0) == 0x90) {
		o->type = VY_MP_ARRAY;
		o->len = t & 0x0f;
	} else if ((t & 0xe0) == 0xa0) {
		o->type = VY_MP_STR;
		o->len = t & 0x1f;
	} else {
		switch (t) {
		case 0xc0:
			o->type = VY_MP_NIL;
			break;
		case 0xc2:
		case 0xc3:
			o->type = VY_MP_BOOL;
			o->b = t == 0xc3;
			break;
		case 0xc4:
		case 0xc5:
		case 0xc6: {
			unsigned n = 1u << (t - 0xc4);
			NEED(1 + n);
			o->type = VY_MP_BIN;
			o->len = (uint32_t)be(p + 1, n);
			break;
		}
		case 0xc7:
		case 0xc8:
		case 0xc9: {
			unsigned n = 1u << (t - 0xc7);
			NEED(1 + n);
			o->type = VY_MP_EXT;
			o->len = (uint32_t)be(p + 1, n);
			break;
		}
		case 0xca: {
			NEED(5);
			uint32_t bits = (uint32_t)be(p + 1, 4);
			o->type = VY_MP_FLOAT;
			o->is_f32 = true;
			memcpy(&o->f32, &bits, sizeof(bits));
			o->f = o->f32;
			break;
		}
		case 0xcb: {
			NEED(9);
			uint64_t bits = be(p + 1, 8);
			o->type = VY_MP_FLOAT;
			memcpy(&o->f, &bits, sizeof(bits));
			o->f32 = (float)o->f;
			break;
		}
		case 0xcc:
		case 0xcd:
		case 0xce:
		case 0xcf: {
			unsigned n = 1u << (t - 0xcc);
			NEED(1 + n);
			o->type = VY_MP_UINT;
			o->u = be(p + 1, n);
			break;
		}
		case 0xd0:
		case 0xd1:
		case 0xd2:
		case 0xd3: {
			unsigned n = 1u << (t - 0xd0);
			NEED(1 + n);
			uint64_t raw = be(p + 1, n);
			int64_t v;
			if (n == 8) {
				memcpy(&v, &raw, sizeof(v));
			} else {
				uint64_t sign = (uint64_t)1 << (8 * n - 1);
				v = (int64_t)(raw ^ sign) - (int64_t)sign;
			}
			if (v >= 0) {
				o->type = VY_MP_UINT;
				o->u = (uint64_t)v;
			} else {
				o->type = VY_MP_INT;
				o->i = v;
			}
			break;
		}
		case 0xd4:
		case 0xd5:
		case 0xd6:
		case 0xd7:
		case 0xd8:
			o->type = VY_MP_EXT;
			o->len = 1u << (t - 0xd4);
			break;
		case 0xd9:
		case 0xda:
		case 0xdb: {
			unsigned n = 1u << (t - 0xd9);
			NEED(1 + n);
			o->type = VY_MP_STR;
			o->len = (uint32_t)be(p + 1, n);
			break;
		}
		case 0xdc:
		case 0xdd: {
			unsigned n = 2u << (t - 0xdc);
			NEED(1 + n);
			o->type = VY_MP_ARRAY;
			o->len = (uint32_t)be(p + 1, n);
			break;
		}
		case 0xde:
		case 0xdf: {
			unsigned n = 2u << (t - 0xde);
			NEED(1 + n);
			o->type = VY_MP_MAP;
			o->len = (uint32_t)be(p + 1, n);
			break;
		}
		default:
			return VY_MP_INVALID;
		}
	}
#undef NEED
	*used = need;
	return VY_MP_OK;
}

int vy_mp_read(struct vy_mp_reader *r, struct vy_mp_obj *obj)
{
	size_t avail = (size_t)(r->end - r->p);
	if (avail == 0) {
		return VY_MP_TRUNCATED;
	}
	size_t used = 0;
	int rc = payload(obj, r->p, avail, &used);
	if (rc != VY_MP_OK) {
		return rc;
	}
	size_t rest = avail - used;
	switch (obj->type) {
	case VY_MP_STR:
	case VY_MP_BIN:
		if (obj->len > rest) {
			return VY_MP_TRUNCATED;
		}
		obj->data = r->p + used;
		used += obj->len;
		break;
	case VY_MP_EXT:
		/* one type byte, then the payload */
		if ((uint64_t)obj->len + 1 > rest) {
			return VY_MP_TRUNCATED;
		}
		obj->data = r->p + used + 1;
		used += (size_t)obj->len + 1;
		break;
	case VY_MP_ARRAY:
		if (obj->len > rest) {
			return VY_MP_TOO_MANY;
		}
		break;
	case VY_MP_MAP:
		if ((uint64_t)obj->len * 2 > rest) {
			return VY_MP_TOO_MANY;
		}
		break;
	default:
		break;
	}
	r->p += used;
	return VY_MP_OK;
}

int vy_mp_skip(struct vy_mp_reader *r)
{
	const uint8_t *mark = r->p;
	uint64_t pending = 1;
	while (pending > 0) {
		struct vy_mp_obj o;
		int rc = vy_mp_read(r, &o);
		if (rc != VY_MP_OK) {
			r->p = mark;
			return rc;
		}
		pending--;
		if (o.type == VY_MP_ARRAY) {
			pending += o.len;
		} else if (o.type == VY_MP_MAP) {
			pending += (uint64_t)o.len * 2;
		}
	}
	return VY_MP_OK;
}

const char *vy_mp_type_name(enum vy_mp_type type)
{
	switch (type) {
	case VY_MP_NIL:
		return "nil";
	case VY_MP_BOOL:
		return "a boolean";
	case VY_MP_UINT:
		return "an unsigned integer";
	case VY_MP_INT:
		return "a negative integer";
	case VY_MP_FLOAT:
		return "a float";
	case VY_MP_STR:
		return "a string";
	case VY_MP_BIN:
		return "a binary";
	case VY_MP_ARRAY:
		return "an array";
	case VY_MP_MAP:
		return "a map";
	case VY_MP_EXT:
		return "an extension";
	}
	return "unknown";
}

const char *vy_mp_strerror(int rc)
{
	switch (rc) {
	case VY_MP_TRUNCATED:
		return "the msgpack data ends inside a value";
	case VY_MP_INVALID:
		return "the msgpack data holds the reserved type byte 0xc1";
	case VY_MP_TOO_MANY:
		return "a msgpack array or map claims more elements than bytes remain";
	default:
		return "no error";
	}
}

bool vy_mp_str_eq(const struct vy_mp_obj *obj, const char *s)
{
	size_t n = strlen(s);
	return obj->type == VY_MP_STR && obj->len == n && memcmp(obj->data, s, n) == 0;
}
