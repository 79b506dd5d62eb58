/*
 * libvyre's private declarations, shared by its source files: the client and its calls, replies
 * and their value trees, regions, and the error helpers. Nothing here is exported: the symbols are
 * vy__* and hidden by the build's -fvisibility=hidden; only what <vy/vyre.h> marks VY_API is.
 *
 * Thread-safety: as the public types (see vyre.h).
 */
#ifndef VY_CLIENT_LIBVYRE_INTERNAL_H
#define VY_CLIENT_LIBVYRE_INTERNAL_H

#include <msgpack.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vy/vyre.h>

#include "envelope.h"
#include "err.h"
#include "frame.h"

/* --- errors --- */

/* Fill `err` (may be NULL) and return `code`; `fix` without the "Fix: " prefix, `at` may be
 * NULL. */
int vy__error_set(struct vy_error *err, int code, const char *at, const char *fix, const char *fmt,
	...) __attribute__((format(printf, 5, 6)));
/* A protocol-layer error as a public one. */
int vy__error_from_err(struct vy_error *err, const struct vy_err *e);
/* The daemon's error object (a map value of a reply) as a public error; returns its code. */
int vy__error_from_value(struct vy_error *err, const struct vy_value *obj);
/* Copy `src` (may be NULL: no error) into `dst` (may be NULL). */
void vy__error_copy(struct vy_error *dst, const struct vy_error *src);

/* --- replies --- */

struct vy_value {
	enum vy_kind kind;
	uint32_t len; /* array elements, map pairs, str and bin bytes */
	uint64_t u;
	int64_t i;
	double f;
	bool b;
	const char *str;        /* str: a NUL-terminated copy */
	const uint8_t *bin;     /* bin: inside the reply's frame */
	struct vy_value *items; /* array elements, map values */
	const char **keys;      /* map keys */
	const uint8_t *raw;     /* the value's msgpack bytes, for JSON */
	size_t raw_len;
	bool root; /* the response map, whose "id" and "ok" are left out */
};

struct vy_reply {
	uint64_t id;
	bool ok;
	uint8_t *frame; /* owned */
	size_t len;
	uint8_t *bins;          /* owned: the bins' bytes, aligned */
	struct vy_arena *arena; /* owned: the tree's nodes and strings */
	struct vy_value root;
};

/* Decode a response frame (taking ownership of it, even on failure) into a reply whose root is
 * the response map without "id" and "ok". NULL when the frame is not a well-formed response. */
struct vy_reply *vy__reply_decode(uint8_t *frame, size_t len);

/* --- client --- */

enum vy__call_state { VY__CALL_SENT, VY__CALL_DONE };

/* One request sent and not yet delivered. */
struct vy__call {
	uint64_t id;
	enum vy__call_state state;
	vy_done_fn *done; /* NULL: kept for vy_client_wait */
	void *user;
	bool abandoned;         /* a synchronous call gave up waiting: drop the completion */
	struct vy_reply *reply; /* owned, when done and ok */
	struct vy_error *error; /* owned, when done and failed */
	struct vy__call *prev;
	struct vy__call *next;
};

struct vy__call_list {
	struct vy__call *head;
	struct vy__call *tail;
	size_t len;
};

struct vy_region {
	struct vy_client *client; /* borrowed: the client it is attached through */
	int fd;
	void *map;
	size_t size;
	uint64_t id;
	struct vy_region *prev;
	struct vy_region *next;
};

struct vy_client {
	char path[108];
	char name[128];
	int fd;
	uint64_t next_id;
	int timeout_ms;
	uint64_t busy_poll_ns; /* spin this long on the socket before sleeping in poll() */
	size_t max_frame;
	struct vy_frame_reader reader;
	struct vy_reply *hello;     /* owned */
	struct vy__call_list calls; /* sent: waiting for a reply, or done and kept */
	struct vy__call_list ready; /* done with a callback to run */
	struct vy_region *regions;
	bool in_callback;
	/* An error the daemon sent without a request id before it closed the connection. */
	char last_words[VY_ERROR_MESSAGE_MAX];
};

/* A request being packed. Bins above a small size are referenced, not copied. */
struct vy__msg {
	msgpack_vrefbuffer vb;
	msgpack_packer pk;
	enum vy_op op;
};

void vy__msg_begin(struct vy_client *c, struct vy__msg *m, enum vy_op op, uint32_t nfields);
void vy__msg_free(struct vy__msg *m);
/* Send the message (freeing it) and register its call; `pass_fd` >= 0 travels with SCM_RIGHTS. */
int vy__msg_start(struct vy_client *c, struct vy__msg *m, int pass_fd, vy_done_fn *done, void *user,
	uint64_t *id, struct vy_error *err);
/* Send the message and wait for its reply with the client's timeout. */
int vy__msg_call(struct vy_client *c, struct vy__msg *m, int pass_fd, struct vy_reply **out,
	struct vy_error *err);

/* ops.c, shared with graph.c: the public options as the protocol's config (`spec` has room for
 * VY_MAX_SPEC_SETTINGS); the checks and the packing of a request's inputs. */
int vy__make_config(const struct vy_dispatch_options *o, struct vy_request_config *cfg,
	struct vy_spec_setting *spec, struct vy_error *err);
int vy__check_inputs(const struct vy_client *c, const struct vy_dispatch_input *inputs, size_t n,
	struct vy_error *err);
void vy__pack_inputs(msgpack_packer *pk, const struct vy_dispatch_input *inputs, size_t n);

/* The client's side of regions: re-attach every region after a reconnect. */
int vy__regions_reattach(struct vy_client *c, struct vy_error *err);
/* Unmap and free every region without telling the daemon (close). */
void vy__regions_release(struct vy_client *c);

#endif
