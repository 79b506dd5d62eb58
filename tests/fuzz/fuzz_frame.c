/*
 * libFuzzer target for the streaming frame reader. The input is a control byte, up to eight chunk
 * sizes, then the byte stream a peer would send. The stream is fed to a frame reader in chunks of
 * those sizes (cycled), as a socket would deliver it, and every completed frame is decoded as a
 * request. A plain one-pass parse of the same stream is the oracle: the reader must complete the
 * same frames with the same bytes and fail at the same frame, and must never buffer more than
 * the frame in progress has delivered.
 *
 * Control byte: bits 0-2 give the number of chunk-size bytes minus one; bit 3 selects a small
 * max_frame (4 KiB) instead of the default, so both limits are exercised.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envelope.h"
#include "err.h"
#include "frame.h"

#define SMALL_MAX_FRAME ((size_t)4096)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void finding(const char *what)
{
	fprintf(stderr, "fuzz_frame: %s\n", what);
	abort();
}

/*
 * The oracle: where the next frame of `s` starting at `pos` ends. Returns 1 with the payload
 * bounds when a whole frame is there, 0 when the stream ends first, -1 for a bad length.
 */
static int expect_frame(
	const uint8_t *s, size_t n, size_t pos, size_t max_frame, size_t *start, size_t *len)
{
	if (n - pos < VY_FRAME_HEADER) {
		return 0;
	}
	uint32_t l = (uint32_t)s[pos] << 24 | (uint32_t)s[pos + 1] << 16 |
		     (uint32_t)s[pos + 2] << 8 | s[pos + 3];
	if (l == 0 || l > max_frame) {
		return -1;
	}
	if (n - pos - VY_FRAME_HEADER < l) {
		return 0;
	}
	*start = pos + VY_FRAME_HEADER;
	*len = l;
	return 1;
}

static void decode_request(const uint8_t *payload, size_t len)
{
	struct vy_request req;
	struct vy_err err;
	int rc = vy_request_decode(payload, len, &req, &err);
	if (rc == 0) {
		vy_request_finish(&req);
	} else if (err.code != rc || err.message[0] == '\0') {
		finding("vy_request_decode failed without its code and message");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2) {
		return 0;
	}
	size_t n_sizes = (size_t)(data[0] & 7) + 1;
	size_t max_frame = data[0] & 8 ? SMALL_MAX_FRAME : VY_FRAME_DEFAULT_MAX;
	if (size < 1 + n_sizes) {
		return 0;
	}
	const uint8_t *sizes = data + 1;
	const uint8_t *s = data + 1 + n_sizes;
	size_t n = size - 1 - n_sizes;

	struct vy_frame_reader r;
	vy_frame_reader_init(&r, max_frame);
	size_t pos = 0;       /* bytes fed so far */
	size_t frame_pos = 0; /* where the frame in progress starts in the stream */
	size_t chunk_no = 0;
	bool failed = false;
	while (pos < n && !failed) {
		/* chunk sizes 1..256, with the larger ones scaled up to reach past one 64 KiB step
		 */
		size_t chunk = (size_t)sizes[chunk_no++ % n_sizes] + 1;
		if (chunk > 200) {
			chunk *= 512;
		}
		if (chunk > n - pos) {
			chunk = n - pos;
		}
		size_t off = 0;
		while (off < chunk) {
			size_t used = 0;
			struct vy_err err;
			int rc = vy_frame_reader_feed(&r, s + pos + off, chunk - off, &used, &err);
			if (used > chunk - off) {
				finding("the reader consumed more bytes than it was given");
			}
			off += used;
			size_t start = 0;
			size_t len = 0;
			int want = expect_frame(s, n, frame_pos, max_frame, &start, &len);
			if (rc < 0) {
				if (rc != VY_E_BAD_FRAME || err.code != rc || want != -1 ||
					pos + off != frame_pos + VY_FRAME_HEADER) {
					finding("the reader failed where the stream holds no bad "
						"length");
				}
				failed = true;
				break;
			}
			if (r.cap > r.have + (size_t)64 * 1024 && r.cap > r.have * 2) {
				finding("the reader buffered far more than the peer sent");
			}
			if (rc == 0) {
				if (off != chunk) {
					finding("the reader stopped early without completing a "
						"frame");
				}
				continue;
			}
			if (want != 1 || pos + off != start + len) {
				finding("the reader completed a frame the stream does not hold");
			}
			size_t got_len = 0;
			uint8_t *payload = vy_frame_reader_take(&r, &got_len);
			if (got_len != len || memcmp(payload, s + start, len) != 0) {
				finding("a completed frame differs from the bytes sent");
			}
			if (vy_frame_reader_pending(&r) != 0) {
				finding("the reader kept bytes after handing out a frame");
			}
			decode_request(payload, got_len);
			free(payload);
			frame_pos = start + len;
		}
		pos += off;
	}
	if (!failed) {
		size_t start = 0;
		size_t len = 0;
		int want = expect_frame(s, n, frame_pos, max_frame, &start, &len);
		if (want == -1 || want == 1 || vy_frame_reader_pending(&r) != n - frame_pos) {
			finding("the reader and the stream disagree at the end of the input");
		}
	}
	vy_frame_reader_finish(&r);
	return 0;
}
