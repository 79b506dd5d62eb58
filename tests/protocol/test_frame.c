/* The streaming frame reader and the frame writer. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"

static size_t make_frames(msgpack_sbuffer *sb, int n)
{
	msgpack_sbuffer_init(sb);
	msgpack_packer pk;
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	for (int i = 0; i < n; i++) {
		size_t off = vy_frame_begin(sb);
		msgpack_pack_map(&pk, 1);
		msgpack_pack_str(&pk, 2);
		msgpack_pack_str_body(&pk, "id", 2);
		msgpack_pack_uint32(&pk, (uint32_t)i * 1000u);
		vy_frame_end(sb, off);
	}
	return sb->size;
}

static int feed_all(struct vy_frame_reader *r, const uint8_t *data, size_t len, size_t chunk,
	uint8_t **frames, size_t *lens, int max)
{
	int got = 0;
	size_t pos = 0;
	while (pos < len) {
		size_t n = len - pos < chunk ? len - pos : chunk;
		size_t used = 0;
		int rc = vy_frame_reader_feed(r, data + pos, n, &used, NULL);
		cr_assert_geq(rc, 0);
		pos += used;
		if (rc == 1) {
			cr_assert_lt(got, max);
			frames[got] = vy_frame_reader_take(r, &lens[got]);
			got++;
		} else {
			cr_assert_eq(used, n, "an incomplete frame must consume everything");
		}
	}
	return got;
}

Test(frame, frames_arrive_whole_at_every_chunk_size)
{
	msgpack_sbuffer sb;
	size_t len = make_frames(&sb, 5);
	for (size_t chunk = 1; chunk <= len; chunk++) {
		struct vy_frame_reader r;
		vy_frame_reader_init(&r, 0);
		uint8_t *frames[5];
		size_t lens[5];
		int got = feed_all(&r, (const uint8_t *)sb.data, len, chunk, frames, lens, 5);
		cr_assert_eq(got, 5, "chunk %zu: %d frames", chunk, got);
		size_t off = 0;
		for (int i = 0; i < 5; i++) {
			cr_assert(memcmp(frames[i], sb.data + off + 4, lens[i]) == 0);
			off += 4 + lens[i];
			free(frames[i]);
		}
		cr_assert_eq(vy_frame_reader_pending(&r), 0);
		vy_frame_reader_finish(&r);
	}
	msgpack_sbuffer_destroy(&sb);
}

Test(frame, writer_prefixes_big_endian_length)
{
	msgpack_sbuffer sb;
	make_frames(&sb, 1);
	const uint8_t *h = (const uint8_t *)sb.data;
	uint32_t len = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3];
	cr_assert_eq(len, sb.size - 4);
	msgpack_sbuffer_destroy(&sb);
}

Test(frame, length_zero_and_above_max_are_bad_frames)
{
	struct vy_frame_reader r;
	vy_frame_reader_init(&r, 1024);
	struct vy_err err;
	size_t used;
	const uint8_t zero[4] = {0, 0, 0, 0};
	cr_assert_eq(vy_frame_reader_feed(&r, zero, 4, &used, &err), VY_E_BAD_FRAME);
	cr_assert(strstr(err.message, "length 0"));
	vy_frame_reader_finish(&r);

	vy_frame_reader_init(&r, 1024);
	const uint8_t big[5] = {0, 0, 4, 1, 0xaa};
	cr_assert_eq(vy_frame_reader_feed(&r, big, 5, &used, &err), VY_E_BAD_FRAME);
	cr_assert_eq(used, 4, "nothing past the prefix is consumed");
	cr_assert(strstr(err.message, "1025 bytes, more than max_frame (1024)"), "%s", err.message);
	cr_assert(strstr(err.fix, "max_frame"));
	cr_assert_eq(vy_frame_reader_pending(&r), 4);
	vy_frame_reader_finish(&r);
}

Test(frame, frame_of_exactly_max_is_accepted)
{
	struct vy_frame_reader r;
	vy_frame_reader_init(&r, 8);
	const uint8_t f[12] = {0, 0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8};
	size_t used;
	cr_assert_eq(vy_frame_reader_feed(&r, f, sizeof(f), &used, NULL), 1);
	size_t len;
	uint8_t *payload = vy_frame_reader_take(&r, &len);
	cr_assert_eq(len, 8);
	cr_assert_eq(payload[7], 8);
	free(payload);
	vy_frame_reader_finish(&r);
}

Test(frame, payload_received_in_place_completes_the_frame)
{
	/* A 1 MiB payload: header and first bytes fed, the rest written into the reader's own
	 * space in uneven pieces, as a socket read into place would. */
	size_t len = (size_t)1 << 20;
	uint8_t *payload = malloc(len);
	cr_assert_not_null(payload);
	for (size_t i = 0; i < len; i++) {
		payload[i] = (uint8_t)(i * 7 + 3);
	}
	uint8_t head[4 + 10] = {0x00, 0x10, 0x00, 0x00};
	memcpy(head + 4, payload, 10);
	struct vy_frame_reader r;
	vy_frame_reader_init(&r, 0);
	size_t room = 99;
	cr_expect_null(vy_frame_reader_space(&r, 4096, &room), "no room before the header");
	cr_expect_eq(room, 0);
	size_t used = 0;
	cr_assert_eq(vy_frame_reader_feed(&r, head, sizeof(head), &used, NULL), 0);
	size_t have = 10;
	size_t step = 1000;
	int rc = 0;
	while (rc == 0) {
		uint8_t *at = vy_frame_reader_space(&r, step, &room);
		cr_assert_not_null(at);
		cr_assert_eq(room, len - have < step ? len - have : step);
		cr_assert_leq(vy_frame_reader_pending(&r), 4 + have, "the buffer never runs ahead");
		size_t n = room > 3 ? room - 3 : room; /* a short read */
		memcpy(at, payload + have, n);
		have += n;
		rc = vy_frame_reader_commit(&r, n);
		step = step * 2 + 1;
	}
	cr_assert_eq(have, len);
	size_t got_len = 0;
	uint8_t *frame = vy_frame_reader_take(&r, &got_len);
	cr_assert_eq(got_len, len);
	cr_expect(memcmp(frame, payload, len) == 0);
	cr_expect_null(vy_frame_reader_space(&r, 4096, &room), "the next frame has no header yet");
	free(frame);
	free(payload);
	vy_frame_reader_finish(&r);
}

Test(frame, stop_at_header_pauses_before_the_payload_and_exact_grows_to_the_bytes)
{
	uint8_t data[4 + 300000];
	data[0] = 0;
	data[1] = (uint8_t)(300000 >> 16);
	data[2] = (uint8_t)(300000 >> 8);
	data[3] = (uint8_t)300000;
	memset(data + 4, 0x42, 300000);
	struct vy_frame_reader r;
	vy_frame_reader_init(&r, 1u << 20);
	r.stop_at_header = true;
	size_t used = 0;
	/* The prefix alone, then nothing of the payload until fed again. */
	cr_assert_eq(
		vy_frame_reader_feed(&r, data, sizeof(data), &used, NULL), VY_FRAME_HEADER_DONE);
	cr_expect_eq(used, 4);
	cr_expect_eq(r.len, 300000);
	cr_expect_eq(r.have, 0);
	cr_expect_null(r.buf);
	/* Exact growth: the buffer holds what arrived, not the usual chunk ahead. */
	r.exact = true;
	cr_assert_eq(vy_frame_reader_feed(&r, data + 4, 100, &used, NULL), 0);
	cr_expect_eq(used, 100);
	cr_expect_eq(r.cap, 100);
	r.exact = false;
	size_t pos = 104;
	int rc = 0;
	while (pos < sizeof(data)) {
		rc = vy_frame_reader_feed(&r, data + pos, sizeof(data) - pos, &used, NULL);
		cr_assert_geq(rc, 0);
		pos += used;
	}
	cr_assert_eq(rc, 1);
	cr_expect_leq(r.cap, 300000, "the buffer never outgrows the frame");
	size_t len = 0;
	uint8_t *frame = vy_frame_reader_take(&r, &len);
	cr_expect_eq(len, 300000);
	cr_expect_eq(frame[299999], 0x42);
	free(frame);
	vy_frame_reader_finish(&r);
}

/* A buffer given at the length prefix receives the payload; one given too early, too small or
 * after payload bytes arrived is refused and stays the caller's. */
Test(frame, a_buffer_given_at_the_prefix_receives_the_frame)
{
	msgpack_sbuffer sb;
	size_t len = make_frames(&sb, 1);
	size_t payload = len - VY_FRAME_HEADER;
	struct vy_frame_reader r;
	vy_frame_reader_init(&r, 0);
	r.stop_at_header = true;
	uint8_t *buf = malloc(payload + 8);
	cr_assert_not(vy_frame_reader_give(&r, buf, payload + 8), "no prefix yet");
	size_t used = 0;
	cr_assert_eq(vy_frame_reader_feed(&r, sb.data, VY_FRAME_HEADER, &used, NULL),
		VY_FRAME_HEADER_DONE);
	cr_assert_not(vy_frame_reader_give(&r, buf, payload - 1), "shorter than the frame");
	cr_assert(vy_frame_reader_give(&r, buf, payload + 8));
	cr_assert_not(vy_frame_reader_give(&r, buf, payload + 8), "the reader has a buffer");
	cr_assert_eq(vy_frame_reader_feed(&r, sb.data + VY_FRAME_HEADER, payload, &used, NULL), 1);
	size_t got = 0;
	uint8_t *frame = vy_frame_reader_take(&r, &got);
	cr_assert_eq(frame, buf, "the payload went into the given buffer");
	cr_assert_eq(got, payload);
	cr_assert(memcmp(frame, sb.data + VY_FRAME_HEADER, payload) == 0);
	free(frame);
	vy_frame_reader_finish(&r);
	msgpack_sbuffer_destroy(&sb);
}
