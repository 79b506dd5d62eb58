/*
 * Envelopes of protocol version 1 (DESIGN.md §6): requests {"id", "op", ...}, responses
 * {"id", "ok": true, ...} or {"id", "ok": false, "error": {...}}, and the error object.
 *
 * The operations are described as data (VY_OP_MAP): wire name, whether the operation needs an
 * admin peer, and the request fields it accepts. A request with an unknown field is refused, so a
 * typo never passes silently.
 *
 * Decoded requests borrow binary payloads (inputs, upload data) from the frame they were decoded
 * from: the frame must outlive the request. Everything else lives in the request's arena.
 *
 * Thread-safety: reentrant; a request belongs to one thread at a time.
 */
#ifndef VY_PROTOCOL_ENVELOPE_H
#define VY_PROTOCOL_ENVELOPE_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec.h"
#include "err.h"
#include "ir.h"
#include "mp.h"

#define VY_PROTOCOL_VERSION 1

/* X(ENUM, wire name, admin only, accepted fields besides id and op, required fields) */
#define VY_OP_MAP(X)                                                                               \
	X(HELLO, "hello", false, "protocol client", "protocol")                                    \
	X(PING, "ping", false, "", "")                                                             \
	X(COMPILE, "compile", false, "program config", "program")                                  \
	X(DISPATCH, "dispatch", false, "program program_id inputs config outputs_to", "")          \
	X(ALLOC, "alloc", false, "size name config", "size")                                       \
	X(UPLOAD, "upload", false, "handle data offset", "handle data")                            \
	X(DOWNLOAD, "download", false, "handle offset length", "handle")                           \
	X(FREE, "free", false, "handle", "handle")                                                 \
	X(STATS, "stats", false, "", "")                                                           \
	X(CLIENTS, "clients", false, "", "")                                                       \
	X(BUFFERS, "buffers", false, "", "")                                                       \
	X(CACHE_LIST, "cache_list", false, "", "")                                                 \
	X(CACHE_CLEAR, "cache_clear", true, "", "")                                                \
	X(SHM_ATTACH, "shm_attach", false, "size", "size")                                         \
	X(SHM_DETACH, "shm_detach", false, "region", "region")                                     \
	X(INJECT_FAULT, "inject_fault", true, "fault config", "fault")                             \
	X(GRAPH_CREATE, "graph_create", false, "steps name", "steps")                              \
	X(GRAPH_RUN, "graph_run", false, "graph inputs outputs_to config", "graph")                \
	X(GRAPH_FREE, "graph_free", false, "graph", "graph")                                       \
	X(GRAPHS, "graphs", false, "", "")

#define VY__OP_ENUM(e, wire, admin, fields, required) VY_OP_##e,
enum vy_op { VY_OP_MAP(VY__OP_ENUM) VY_OP_COUNT };
#undef VY__OP_ENUM

const char *vy_op_name(enum vy_op op);
bool vy_op_admin(enum vy_op op);
/* The op for a wire name, or -1. */
int vy_op_from_name(const char *name, size_t len);

enum vy_input_kind {
	VY_INPUT_BYTES,    /* data, len */
	VY_INPUT_RESIDENT, /* handle */
	VY_INPUT_SHM,      /* region, offset, len */
};

struct vy_input {
	enum vy_input_kind kind;
	const uint8_t *data; /* borrowed from the frame */
	uint64_t len;
	uint64_t handle;
	uint64_t region;
	uint64_t offset;
};

/* A spec value as sent: its type is resolved against the program's spec declarations later. */
enum vy_spec_wire { VY_SPEC_WIRE_UINT, VY_SPEC_WIRE_INT, VY_SPEC_WIRE_FLOAT, VY_SPEC_WIRE_BOOL };

struct vy_spec_setting {
	const char *name;
	enum vy_spec_wire wire;
	uint64_t u;
	int64_t i;
	double f;
	bool b;
};

enum vy_backend_choice { VY_BACKEND_ANY, VY_BACKEND_VULKAN, VY_BACKEND_REFERENCE };

#define VY_MAX_SPEC_SETTINGS 64
#define VY_MAX_LABEL 128

/* `config` of compile and dispatch. Absent fields keep the values of vy_request_config_init. */
struct vy_request_config {
	bool has_grid;
	uint32_t grid[3];
	bool has_workgroup_size;
	uint32_t workgroup_size[3];
	uint32_t n_spec;
	struct vy_spec_setting *spec;
	uint64_t max_loop_iterations; /* 0 = the daemon's default */
	uint32_t timeout_ms;          /* 0 = the daemon's default */
	const char *label;            /* NULL when absent */
	int32_t device;               /* -1 = the least-loaded capable device */
	enum vy_backend_choice backend;
	bool timing;
};

void vy_request_config_init(struct vy_request_config *config);

/* A bind of a graph step (docs/graphs.md): the buffer `buffer` to a slot of the graph. */
enum vy_step_bind_kind { VY_STEP_INPUT, VY_STEP_OUTPUT, VY_STEP_TEMP, VY_STEP_RESIDENT };

struct vy_step_bind {
	const char *buffer; /* in the request's arena */
	enum vy_step_bind_kind kind;
	uint64_t value;   /* input or output index, or resident handle */
	const char *temp; /* temp name, in the arena */
};

/* One step of graph_create. */
struct vy_step_request {
	struct vy_program *program; /* owned; NULL when the step names a program_id */
	bool has_program_id;
	struct vy_program_id program_id;
	struct vy_request_config config;
	uint32_t n_binds;
	struct vy_step_bind *binds; /* in the arena */
};

/* Steps one graph_create may carry; the daemon's max_graph_steps is at most this. */
#define VY_MAX_GRAPH_STEPS 4096

struct vy_request {
	struct vy_arena *arena; /* owned */
	uint64_t id;
	enum vy_op op;
	/* hello */
	uint32_t protocol;
	const char *client;
	/* compile, dispatch */
	struct vy_program *program; /* owned; NULL when absent */
	/* With VY_DECODE_PROGRAM_RAW: the program's msgpack bytes as sent (borrowed from the
	 * frame), not decoded; `program` stays NULL (vy_request_program decodes them). */
	const uint8_t *program_raw;
	size_t program_raw_len;
	bool has_program_id;
	struct vy_program_id program_id;
	struct vy_request_config config;
	uint32_t n_inputs;
	struct vy_input *inputs;
	bool has_outputs_to;
	uint32_t n_outputs_to;
	uint64_t *outputs_to; /* 0 where the output comes back in the reply */
	/* alloc, shm_attach */
	uint64_t size;
	const char *name;
	/* upload, download, free, shm_detach */
	uint64_t handle;
	const uint8_t *data; /* borrowed from the frame */
	uint64_t data_len;
	uint64_t offset;
	bool has_length;
	uint64_t length;
	uint64_t region;
	/* inject_fault */
	const char *fault;
	/* graph_create; graph_run and graph_free name `graph` */
	uint32_t n_steps;
	struct vy_step_request *steps; /* in the arena; their programs owned */
	uint64_t graph;
};

#define VY_MAX_INPUTS 32

/*
 * Decode one request frame. On success the request owns an arena and maybe a program; release it
 * with vy_request_finish. On failure `req->id` holds the id when it could be read (0 otherwise),
 * the request needs no finish, and the error is VY_E_BAD_FRAME (not one msgpack map, trailing
 * bytes), VY_E_BAD_REQUEST (missing, unknown or mistyped fields), or VY_E_INVALID_PROGRAM (the
 * embedded program failed to decode; `at` starts with "program").
 */
int vy_request_decode(const uint8_t *frame, size_t len, struct vy_request *req, struct vy_err *err);
/*
 * The same with `flags`: VY_DECODE_PROGRAM_RAW leaves a compile's or dispatch's program
 * undecoded (program_raw), for a caller that can often find it by its bytes alone; the frame
 * must then outlive the request. Errors as vy_request_decode, but none from the program.
 */
#define VY_DECODE_PROGRAM_RAW 1u
int vy_request_decode_flags(const uint8_t *frame, size_t len, unsigned flags,
	struct vy_request *req, struct vy_err *err);
/* Decode program_raw into req->program, with the errors vy_request_decode gives for it. */
int vy_request_program(struct vy_request *req, struct vy_err *err);
void vy_request_finish(struct vy_request *req);

/* Request writing (clients): a map of `nfields` fields plus id and op. */
void vy_request_pack_head(msgpack_packer *pk, uint64_t id, enum vy_op op, uint32_t nfields);
/* The config map; fields at their defaults are left out. */
void vy_request_config_pack(msgpack_packer *pk, const struct vy_request_config *config);
void vy_pack_cstr(msgpack_packer *pk, const char *s);

/* Response writing: a success map of `nfields` result fields plus id and ok. */
void vy_response_pack_ok(msgpack_packer *pk, uint64_t id, uint32_t nfields);
/* A failure response; `errors` (may be NULL or empty) lists every validation error. */
void vy_response_pack_error(msgpack_packer *pk, uint64_t id, const struct vy_err *err,
	const struct vy_err_list *errors);
/* The error object alone. */
void vy_error_pack(msgpack_packer *pk, const struct vy_err *err);

/* A decoded response: id, ok, the error, and a reader over the whole response map. */
struct vy_response {
	uint64_t id;
	bool ok;
	struct vy_err error; /* when !ok */
	size_t n_errors;     /* entries of the error's "errors" list */
	const uint8_t *frame;
	size_t len;
};

/* Decode the envelope of a response frame (borrowed). Errors: VY_E_BAD_FRAME. */
int vy_response_decode(
	const uint8_t *frame, size_t len, struct vy_response *resp, struct vy_err *err);
/* Position `r` on the value of result field `key`; false when the response has no such field. */
bool vy_response_field(const struct vy_response *resp, const char *key, struct vy_mp_reader *r);
/* Decode an error object at the reader; unknown codes become VY_E_INTERNAL. */
int vy_error_read(struct vy_mp_reader *r, struct vy_err *out, size_t *n_errors);

#endif
