/*
 * A small blocking client of protocol v1 for the daemon's end-to-end tests: connect, send frames
 * (optionally with a descriptor passed by SCM_RIGHTS), read replies, and read fields of a reply.
 * The public libvyre will replace it; until then it is the reference of how a client talks to
 * vyred.
 *
 * Thread-safety: a struct tc belongs to one thread.
 */
#ifndef VY_TESTS_DAEMON_TCLIENT_H
#define VY_TESTS_DAEMON_TCLIENT_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "envelope.h"
#include "frame.h"
#include "ir.h"

struct tc {
	int fd;
	uint64_t next_id;
	struct vy_frame_reader reader;
	uint8_t buf[65536];
	size_t buf_len;
	size_t buf_off;
};

/* A request being packed: vy_request_pack_head has written id and op. */
struct tc_msg {
	msgpack_sbuffer sb;
	msgpack_packer pk;
	uint64_t id;
};

struct tc_reply {
	uint8_t *frame; /* owned */
	size_t len;
	struct vy_response r;
};

/* Connect to `path`; 0 or -errno. */
int tc_connect(struct tc *c, const char *path);
void tc_close(struct tc *c);

/* Begin a request of `op` with `nfields` fields besides id and op; the id is the next one. */
void tc_begin(struct tc *c, struct tc_msg *m, enum vy_op op, uint32_t nfields);
/* Frame and send the message, with `fd` passed by SCM_RIGHTS when >= 0; frees the message.
 * Returns 0 or -errno. */
int tc_send(struct tc *c, struct tc_msg *m, int fd);
int tc_send_raw(struct tc *c, const void *data, size_t len);
/* The next reply, within `timeout_ms` (-1: forever). 0, -ETIMEDOUT, or -EPIPE when the daemon
 * closed the connection, -EBADMSG for a frame that does not decode. */
int tc_recv(struct tc *c, struct tc_reply *out, int timeout_ms);
void tc_reply_free(struct tc_reply *r);
/* Send and receive the reply (which must carry the request's id). 0 or -errno. */
int tc_call(struct tc *c, struct tc_msg *m, struct tc_reply *out);
/* Whether the daemon closed the connection (EOF) within `timeout_ms`. */
bool tc_wait_eof(struct tc *c, int timeout_ms);

/* Field access by a dotted path through nested maps ("pipeline_cache.hits"). */
bool tc_u64(const struct tc_reply *r, const char *path, uint64_t *out);
bool tc_str(const struct tc_reply *r, const char *path, char *buf, size_t size);
bool tc_is_nil(const struct tc_reply *r, const char *path);
/* Find field `path` and position `rd` on its value. */
bool tc_field(const struct tc_reply *r, const char *path, struct vy_mp_reader *rd);
/* The outputs of a dispatch reply: up to `cap` views into the frame (nil: data NULL, len 0,
 * nil[i] true). Returns the count, or -1. */
int tc_outputs(const struct tc_reply *r, const uint8_t **data, size_t *lens, bool *nil, size_t cap);
/* Whether the reply's outputs are exactly `want`: as many, each of the same bytes. */
bool tc_outputs_equal(const struct tc_reply *r, const struct vy_outputs *want);
/* In an array of maps at `path`, the u64 field `key` of the element whose `match` field equals
 * `value`. */
bool tc_row_u64(const struct tc_reply *r, const char *path, const char *match, uint64_t value,
	const char *key, uint64_t *out);
/* The number of elements of the array at `path`, or -1. */
int tc_array_len(const struct tc_reply *r, const char *path);

/* hello with protocol 1; returns 0 or the error code of the reply. */
int tc_hello(struct tc *c, const char *name);
/* Connect and hello; aborts the test on failure. */
void tc_open(struct tc *c, const char *path, const char *name);

/* Read a program from tests/programs/<name>.json. */
struct vy_program *tc_program(const char *name);
/* A copy of a program renamed `name`, so its canonical bytes (and id) are new. */
struct vy_program *tc_program_renamed(const char *file, const char *name);

/* The error code of a reply (0 when ok). */
int tc_code(const struct tc_reply *r);

#endif
