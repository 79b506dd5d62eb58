/* The streaming frame reader and the frame writer helpers. */
#include "frame.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <inttypes.h>
#include <string.h>

#define FIRST_CHUNK ((size_t)64 * 1024)

void vy_frame_reader_init(struct vy_frame_reader *r, size_t max_frame)
{
	memset(r, 0, sizeof(*r));
	r->max_frame = max_frame ? max_frame : VY_FRAME_DEFAULT_MAX;
}

void vy_frame_reader_finish(struct vy_frame_reader *r)
{
	if (r) {
		free(r->buf);
		r->buf = NULL;
		r->cap = 0;
	}
}

static void reserve(struct vy_frame_reader *r, size_t need)
{
	if (need <= r->cap) {
		return;
	}
	size_t cap = r->cap ? r->cap : FIRST_CHUNK;
	while (cap < need) {
		cap = cap > r->len / 2 ? r->len : cap * 2;
	}
	if (cap > r->len || r->exact) {
		cap = r->exact ? need : r->len;
	}
	uint8_t *buf = realloc(r->buf, cap);
	if (!buf) {
		fprintf(stderr, "vyred: out of memory buffering a frame of %zu bytes\n", r->len);
		abort();
	}
	r->buf = buf;
	r->cap = cap;
}

int vy_frame_reader_feed(
	struct vy_frame_reader *r, const void *data, size_t n, size_t *consumed, struct vy_err *err)
{
	const uint8_t *p = data;
	size_t used = 0;
	while (r->header_have < VY_FRAME_HEADER && used < n) {
		r->header[r->header_have++] = p[used++];
		if (r->header_have == VY_FRAME_HEADER) {
			uint32_t len = (uint32_t)r->header[0] << 24 | (uint32_t)r->header[1] << 16 |
				       (uint32_t)r->header[2] << 8 | r->header[3];
			if (len == 0 || len > r->max_frame) {
				*consumed = used;
				if (len == 0) {
					return vy_err_set(err, VY_E_BAD_FRAME, NULL,
						"send a 4-byte big-endian length followed by that "
						"many bytes of one msgpack map",
						"a frame announced length 0");
				}
				return vy_err_set(err, VY_E_BAD_FRAME, NULL,
					"split the data into several requests or raise max_frame "
					"in vyred.conf",
					"a frame announced %" PRIu32
					" bytes, more than max_frame (%zu)",
					len, r->max_frame);
			}
			r->len = len;
			r->have = 0;
			if (r->stop_at_header) {
				*consumed = used;
				return VY_FRAME_HEADER_DONE;
			}
		}
	}
	if (r->header_have == VY_FRAME_HEADER && used < n) {
		size_t take = r->len - r->have;
		if (take > n - used) {
			take = n - used;
		}
		reserve(r, r->have + take);
		memcpy(r->buf + r->have, p + used, take);
		r->have += take;
		used += take;
	}
	*consumed = used;
	return r->header_have == VY_FRAME_HEADER && r->have == r->len ? 1 : 0;
}

uint8_t *vy_frame_reader_space(struct vy_frame_reader *r, size_t max, size_t *len)
{
	if (r->header_have < VY_FRAME_HEADER || r->have == r->len) {
		*len = 0;
		return NULL;
	}
	size_t room = r->len - r->have;
	room = room < max ? room : max;
	reserve(r, r->have + room);
	*len = room;
	return r->buf + r->have;
}

int vy_frame_reader_commit(struct vy_frame_reader *r, size_t n)
{
	assert(r->header_have == VY_FRAME_HEADER && n <= r->cap - r->have && n <= r->len - r->have);
	r->have += n;
	return r->have == r->len ? 1 : 0;
}

uint8_t *vy_frame_reader_take(struct vy_frame_reader *r, size_t *len)
{
	uint8_t *buf = r->buf;
	*len = r->len;
	r->buf = NULL;
	r->cap = 0;
	r->header_have = 0;
	r->len = 0;
	r->have = 0;
	return buf;
}

bool vy_frame_reader_give(struct vy_frame_reader *r, uint8_t *buf, size_t cap)
{
	if (r->header_have < VY_FRAME_HEADER || r->have != 0 || r->buf || cap < r->len) {
		return false;
	}
	r->buf = buf;
	r->cap = cap;
	return true;
}

size_t vy_frame_reader_pending(const struct vy_frame_reader *r)
{
	return r->header_have + r->have;
}

size_t vy_frame_begin(msgpack_sbuffer *sb)
{
	size_t off = sb->size;
	static const char zero[VY_FRAME_HEADER];
	msgpack_sbuffer_write(sb, zero, sizeof(zero));
	return off;
}

void vy_frame_end(msgpack_sbuffer *sb, size_t offset)
{
	size_t len = sb->size - offset - VY_FRAME_HEADER;
	uint8_t *h = (uint8_t *)sb->data + offset;
	h[0] = (uint8_t)(len >> 24);
	h[1] = (uint8_t)(len >> 16);
	h[2] = (uint8_t)(len >> 8);
	h[3] = (uint8_t)len;
}
