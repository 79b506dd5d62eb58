/*
 * Framing (DESIGN.md §6): each message is a 4-byte big-endian length N, then N bytes holding
 * exactly one msgpack map, with 1 <= N <= max_frame.
 *
 * The reader accepts bytes in chunks of any size (one byte at a time works) and checks the length
 * against max_frame as soon as the prefix is complete, before anything is buffered. The payload
 * buffer grows with the bytes that really arrive, so a peer that announces a large frame and then
 * stalls holds only what it sent.
 *
 * Thread-safety: a reader belongs to one connection and one thread.
 */
#ifndef VY_PROTOCOL_FRAME_H
#define VY_PROTOCOL_FRAME_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define VY_FRAME_HEADER 4
#define VY_FRAME_DEFAULT_MAX ((size_t)256 * 1024 * 1024)

struct vy_frame_reader {
	size_t max_frame;
	uint8_t header[VY_FRAME_HEADER];
	unsigned header_have;
	uint8_t *buf; /* owned */
	size_t cap;
	size_t len;  /* announced payload length, valid once the header is complete */
	size_t have; /* payload bytes received */
	/* Feed returns VY_FRAME_HEADER_DONE once a length prefix is complete, before any payload
	 * is taken, so that the caller can count the frame against a budget first. */
	bool stop_at_header;
	/* The buffer grows to exactly the bytes that arrive (no doubling ahead), for a caller that
	 * counts what a frame it could not admit holds. */
	bool exact;
};

/* vy_frame_reader_feed: a length prefix was just completed (with stop_at_header). */
#define VY_FRAME_HEADER_DONE 2

void vy_frame_reader_init(struct vy_frame_reader *r, size_t max_frame);
void vy_frame_reader_finish(struct vy_frame_reader *r);

/*
 * Consume bytes from `data`. Returns 1 when a whole frame is ready (take it with
 * vy_frame_reader_take before feeding more; *consumed says how much of `data` was used), 0 when
 * every byte was consumed and the frame is still incomplete, VY_FRAME_HEADER_DONE when
 * stop_at_header is set and a length prefix was just completed (feed again for the payload), or
 * VY_E_BAD_FRAME (length 0 or above max_frame); after an error the connection must be closed.
 */
int vy_frame_reader_feed(struct vy_frame_reader *r, const void *data, size_t n, size_t *consumed,
	struct vy_err *err);

/*
 * Room to receive payload bytes of the frame in progress in place, without a copy: at most `max`
 * bytes at the returned address, their count in *len; NULL when no frame is past its header.
 * Write there, then count what was written with vy_frame_reader_commit before anything else.
 * The buffer grows to hold that room only, so a peer that stalls holds little beyond what it sent.
 */
uint8_t *vy_frame_reader_space(struct vy_frame_reader *r, size_t max, size_t *len);
/* Count `n` bytes (<= the room given) received in place. Returns 1 when the frame is complete
 * (take it with vy_frame_reader_take), else 0. */
int vy_frame_reader_commit(struct vy_frame_reader *r, size_t n);

/* The completed payload, malloc'd, now owned by the caller; the reader starts the next frame. */
uint8_t *vy_frame_reader_take(struct vy_frame_reader *r, size_t *len);

/*
 * Read the frame whose length prefix has arrived, none of whose payload has, into `buf` (from
 * malloc, `cap` bytes, at least the frame's length), which the reader now owns. Returns false,
 * leaving `buf` to the caller, when the reader is not at that point or `cap` is short.
 */
bool vy_frame_reader_give(struct vy_frame_reader *r, uint8_t *buf, size_t cap);

/* Bytes of the frame in progress buffered so far (header included). */
size_t vy_frame_reader_pending(const struct vy_frame_reader *r);

/* Start a frame in `sb`: reserve the length prefix. Returns the offset to pass to _end. */
size_t vy_frame_begin(msgpack_sbuffer *sb);
/* Patch the length prefix of the frame started at `offset`. */
void vy_frame_end(msgpack_sbuffer *sb, size_t offset);

#endif
