/*
 * libvyre: the C client library of vyred, the GPU dispatch daemon.
 *
 * Build with `pkg-config --cflags --libs vyre` and include <vy/vyre.h>. This header is the whole
 * API and is self-contained: it needs no other vyred header.
 *
 * A session:
 *
 *	struct vy_client *c;
 *	struct vy_error err;
 *	char text[1024];
 *	if (vy_client_connect(NULL, "saxpy", &c, &err) != 0) {
 *		fprintf(stderr, "%s\n", vy_error_text(&err, text, sizeof(text)));
 *		return 1;
 *	}
 *	struct vy_program *p;
 *	vy_program_load_file("saxpy.json", &p, &err);
 *	struct vy_dispatch_input in[2] = {vy_input_bytes(x, n * 4), vy_input_bytes(y, n * 4)};
 *	struct vy_dispatch_args args = {.program = p, .inputs = in, .n_inputs = 2};
 *	struct vy_reply *r;
 *	if (vy_dispatch(c, &args, &r, &err) == 0) {
 *		size_t len;
 *		const float *out = vy_reply_output(r, 0, &len);
 *		...
 *		vy_reply_destroy(r);
 *	}
 *	vy_program_free(p);
 *	vy_client_close(c);
 *
 * Conventions.
 * - Fallible functions return 0 or a negative VY_ERROR_* code and fill the optional
 *   `struct vy_error *err` (NULL is accepted everywhere) with the code, a message and a Fix line.
 *   Errors from the daemon come back unchanged: code, number, message, fix, retry, at and the
 *   list of validation errors. Errors that happen in the client (no daemon at the socket, the
 *   daemon went away, a bad argument) have codes of their own, below -2000.
 * - The creator destroys: every _connect/_new/_load/_attach has a matching
 *   _close/_free/_destroy/_detach, and each of those accepts NULL.
 * - Strings and pointers given to a call are copied or used only during the call, unless the
 *   comment says otherwise.
 *
 * Connection: vy_client_connect uses the socket path given, else $VYRED_SOCKET, else
 * VY_DEFAULT_SOCKET, and sends hello (protocol 1). A client is one connection.
 *
 * Reconnecting: the library never reconnects by itself, because a new connection loses the
 * resident buffers of the old one and the caller must know that. When the daemon goes away
 * (restart, crash, SHUTTING_DOWN), pending requests and later calls fail with
 * VY_ERROR_DISCONNECTED (retry "reconnect"); vy_client_reconnect then opens a new connection to
 * the same socket, sends hello again and re-attaches every shared-memory region of the client
 * (their ids change, their mappings and contents stay). Unnamed resident buffers die with the
 * connection that allocated them, and nothing resident survives a daemon restart: the daemon
 * answers NOT_FOUND for such handles; allocate and upload again. Named buffers of a daemon that
 * kept running are attached again by allocating the same name.
 *
 * Pipelining: every request carries an id and the daemon may answer out of order. Synchronous
 * calls (vy_dispatch, vy_compile, ...) send a request and wait for its reply; the asynchronous
 * calls (*_start) send the whole request (waiting only while the socket is full) and return
 * without waiting for the reply. vy_client_fd gives a descriptor to poll for POLLIN;
 * vy_client_process reads whatever replies have arrived without blocking and completes their
 * requests; vy_client_wait blocks until one given request completes. While it waits, a call also
 * reads replies of other requests, so a slow reader never deadlocks against the daemon's
 * backpressure.
 *
 * Thread-safety: each type says its own. In short: a client and its regions are used by one
 * thread at a time; the caller serializes. Separate clients are independent. A reply, once
 * returned, is independent of its client and immutable: any number of threads may read it.
 * Programs: building is single-threaded; a finished program may be sent by many clients on many
 * threads, but vy_program_check writes inferred types into it, so check it before sharing it.
 */
#ifndef VY_VYRE_H
#define VY_VYRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define VY_API __attribute__((visibility("default")))
#else
#define VY_API
#endif

#define VYRE_VERSION_MAJOR 1
#define VYRE_VERSION_MINOR 0
#define VYRE_VERSION_PATCH 0

/* The socket used when no path is given and $VYRED_SOCKET is unset. */
#define VY_DEFAULT_SOCKET "/run/vyred/vyred.sock"
/* The protocol version this library speaks. */
#define VY_CLIENT_PROTOCOL 1

/* The library's version as "1.0.0". */
VY_API const char *vy_version(void);

/* --- errors ------------------------------------------------------------------------------- */

/*
 * Error codes. The daemon's codes are the negated wire numbers of the protocol (docs/protocol.md);
 * the client's own codes follow.
 */
enum vy_error_code {
	VY_ERROR_OUT_OF_MEMORY = -1001,
	VY_ERROR_UNSUPPORTED_FEATURE = -1002,
	VY_ERROR_TIMEOUT = -1003,
	VY_ERROR_KERNEL_COMPILE_FAILED = -1004,
	VY_ERROR_DISPATCH_FAILED = -1005,
	VY_ERROR_INVALID_PROGRAM = -1006,
	VY_ERROR_TRAP = -1007,
	VY_ERROR_DEVICE_LOST = -1008,
	VY_ERROR_QUOTA_EXCEEDED = -1009,
	VY_ERROR_NOT_FOUND = -1010,
	VY_ERROR_PERMISSION_DENIED = -1011,
	VY_ERROR_BUSY = -1012,
	VY_ERROR_SHUTTING_DOWN = -1013,
	VY_ERROR_BAD_FRAME = -1020,
	VY_ERROR_BAD_REQUEST = -1021,
	VY_ERROR_UNSUPPORTED_PROTOCOL = -1022,
	VY_ERROR_INTERNAL = -1999,
	/* No daemon answered at the socket (ENOENT, ECONNREFUSED, EACCES...). */
	VY_ERROR_CONNECT_FAILED = -2001,
	/* The connection broke or was never opened; vy_client_reconnect makes a new one. */
	VY_ERROR_DISCONNECTED = -2002,
	/* The daemon's reply did not decode as protocol 1; the connection is closed. */
	VY_ERROR_BAD_REPLY = -2003,
	/* A call's arguments are wrong (caught before anything is sent). */
	VY_ERROR_INVALID_ARGUMENT = -2004,
	/* A system call the client needs failed (memfd_create, mmap, ...). */
	VY_ERROR_SYSTEM = -2005,
	/* No reply came within the wait's timeout; the request stays pending. */
	VY_ERROR_NO_REPLY = -2006,
};

#define VY_ERROR_NAME_MAX 32
#define VY_ERROR_RETRY_MAX 16
#define VY_ERROR_AT_MAX 192
#define VY_ERROR_MESSAGE_MAX 384
#define VY_ERROR_FIX_MAX 256
/* Entries of a validation error list kept in a struct vy_error. */
#define VY_ERROR_ITEMS_MAX 8

/* One entry of the daemon's list of validation errors. */
struct vy_error_item {
	int code;
	char at[VY_ERROR_AT_MAX];
	char message[VY_ERROR_MESSAGE_MAX];
	char fix[VY_ERROR_FIX_MAX];
};

/*
 * An error, as the daemon sent it or as the client made it. About 8 KiB: reuse one.
 * Thread-safety: belongs to its caller.
 */
struct vy_error {
	int code;                     /* a VY_ERROR_* value; 0 when there is no error */
	int num;                      /* wire number (1006); 2001... for the client's codes */
	char name[VY_ERROR_NAME_MAX]; /* "INVALID_PROGRAM", "CONNECT_FAILED", ... */
	/* "never", "later", "after_fix" or "reconnect": whether and when a retry can succeed. */
	char retry[VY_ERROR_RETRY_MAX];
	char at[VY_ERROR_AT_MAX]; /* location ("entry[2].store.value"), "" when none */
	char message[VY_ERROR_MESSAGE_MAX];
	char fix[VY_ERROR_FIX_MAX]; /* one imperative sentence, without a "Fix: " prefix */
	/* The daemon's "errors" list (all validation errors): its full length, and the first
	 * VY_ERROR_ITEMS_MAX entries. */
	size_t n_errors;
	struct vy_error_item errors[VY_ERROR_ITEMS_MAX];
};

/* Reset to "no error". NULL is accepted. */
VY_API void vy_error_clear(struct vy_error *err);
/* "NAME: message (at ...). Fix: fix" into buf (always NUL-terminated); returns buf. */
VY_API char *vy_error_text(const struct vy_error *err, char *buf, size_t size);
/* Wire or client name of a code ("NOT_FOUND"), or "UNKNOWN". */
VY_API const char *vy_error_name(int code);

/* --- values: read-only trees of a reply ---------------------------------------------------- */

enum vy_kind {
	VY_KIND_MISSING, /* no value (a NULL struct vy_value, a path that does not exist) */
	VY_KIND_NIL,
	VY_KIND_BOOL,
	VY_KIND_UINT, /* a non-negative integer */
	VY_KIND_INT,  /* a negative integer */
	VY_KIND_FLOAT,
	VY_KIND_STR,
	VY_KIND_BIN,
	VY_KIND_ARRAY,
	VY_KIND_MAP,
};

/*
 * One value of a reply: a node of the tree decoded from the daemon's msgpack answer. Values
 * belong to their reply and live until it is destroyed. Every accessor accepts NULL (and then
 * answers as for VY_KIND_MISSING), so paths can be chained without checks.
 * Thread-safety: read-only; readable by any number of threads while its reply lives.
 */
struct vy_value;

VY_API enum vy_kind vy_value_kind(const struct vy_value *v);
/* Name of a kind ("map", "uint", ...). */
VY_API const char *vy_kind_name(enum vy_kind kind);
/*
 * The value at a dotted path below `v`: map keys and array indices separated by dots
 * ("pipeline_cache.hits", "devices.0.name"). An empty path is `v` itself. NULL when absent.
 */
VY_API const struct vy_value *vy_value_get(const struct vy_value *v, const char *path);
/* Elements of an array, pairs of a map, bytes of a str or bin; 0 for anything else. */
VY_API size_t vy_value_len(const struct vy_value *v);
/* Element `i` of an array, or the value of pair `i` of a map (in the daemon's order); NULL
 * when out of range. */
VY_API const struct vy_value *vy_value_item(const struct vy_value *v, size_t i);
/* The key of pair `i` of a map, NUL-terminated (integer keys are written in decimal); NULL when
 * `v` is not a map or `i` is out of range. */
VY_API const char *vy_value_key(const struct vy_value *v, size_t i);
/* Typed reads. Each returns false, leaving *out alone, when the kind does not fit: u64 takes
 * non-negative integers (and bools as 0/1); i64 takes integers within int64_t; f64 takes any
 * number; boolean takes bools. */
VY_API bool vy_value_u64(const struct vy_value *v, uint64_t *out);
VY_API bool vy_value_i64(const struct vy_value *v, int64_t *out);
VY_API bool vy_value_f64(const struct vy_value *v, double *out);
VY_API bool vy_value_bool(const struct vy_value *v, bool *out);
/* A str as NUL-terminated text (it may contain NULs; vy_value_len gives its length), or NULL. */
VY_API const char *vy_value_str(const struct vy_value *v);
/* A bin's bytes (length in *len when len is not NULL), or NULL. The bytes start on a 64-byte
 * boundary, so they can be read in place as floats or vectors. */
VY_API const void *vy_value_bin(const struct vy_value *v, size_t *len);
/* Shorthands: the u64 or str at `path` below `v`, or `fallback`. */
VY_API uint64_t vy_value_get_u64(const struct vy_value *v, const char *path, uint64_t fallback);
VY_API const char *vy_value_get_str(
	const struct vy_value *v, const char *path, const char *fallback);
/* JSON text of the value, malloc'd (free it with free()); `pretty` indents by two spaces. Bins
 * are written as hex strings, non-finite floats as "nan", "inf", "-inf". NULL when `v` is
 * NULL. */
VY_API char *vy_value_json(const struct vy_value *v, bool pretty);

/* --- replies ------------------------------------------------------------------------------ */

/*
 * A successful answer of the daemon: its result fields as a tree (without "id" and "ok").
 * Thread-safety: immutable; readable by any number of threads; destroyed by one.
 */
struct vy_reply;

VY_API void vy_reply_destroy(struct vy_reply *reply);
/* The id of the request this reply answers. */
VY_API uint64_t vy_reply_id(const struct vy_reply *reply);
/* The result map (a VY_KIND_MAP value). */
VY_API const struct vy_value *vy_reply_value(const struct vy_reply *reply);
/* Shorthand for vy_value_get(vy_reply_value(reply), path). */
VY_API const struct vy_value *vy_reply_get(const struct vy_reply *reply, const char *path);

/* dispatch replies: the number of outputs, and output `i`'s bytes (NULL for an output that
 * went to a resident buffer through outputs_to, or when `i` is out of range). The bytes start on
 * a 64-byte boundary and live as long as the reply. */
VY_API size_t vy_reply_outputs(const struct vy_reply *reply);
VY_API const void *vy_reply_output(const struct vy_reply *reply, size_t i, size_t *len);

/* The "timing" map of a dispatch reply. A field the daemon did not measure is VY_TIME_NONE. */
#define VY_TIME_NONE UINT64_MAX
struct vy_dispatch_timing {
	uint64_t wall_ns;    /* request received to reply sent, in the daemon */
	uint64_t queue_ns;   /* waiting for the device */
	uint64_t compile_ns; /* compiling for this request (0 on a cache hit) */
	uint64_t device_ns;  /* on the device (timestamp queries) */
};
/* Fill `t` from the reply; false (every field VY_TIME_NONE) when it holds no timing. */
VY_API bool vy_reply_timing(const struct vy_reply *reply, struct vy_dispatch_timing *t);

/* --- programs ----------------------------------------------------------------------------- */

/*
 * A vyre IR program (docs/ir.md): loaded from its JSON form or built with the functions below.
 * The library sends it in its canonical msgpack form with compile and dispatch requests.
 * Thread-safety: built by one thread; once finished, sent by any number of clients and threads
 * (see vy_program_check).
 */
struct vy_program;
/* An expression and a statement of a program under construction; both belong to the program. */
struct vy_expr;
struct vy_node;

/* Parse the JSON form. Errors: VY_ERROR_INVALID_PROGRAM (syntax errors name line and column,
 * structure errors name their location in `at`). */
VY_API int vy_program_load_json(
	const char *text, size_t len, struct vy_program **out, struct vy_error *err);
/* Read and parse a JSON file. Errors: as vy_program_load_json, VY_ERROR_SYSTEM when the file
 * cannot be read. */
VY_API int vy_program_load_file(const char *path, struct vy_program **out, struct vy_error *err);
/* The canonical JSON form, malloc'd (free it with free()). */
VY_API char *vy_program_json(const struct vy_program *p, bool pretty);
/* Validate locally, with the rules the daemon applies (device limits aside). Errors:
 * VY_ERROR_INVALID_PROGRAM with the first error in the fields and every error in err->errors.
 * Writes inferred types into the program: do not call it while others read the program. */
VY_API int vy_program_check(struct vy_program *p, struct vy_error *err);
/* Free a program however it was made. NULL is accepted. */
VY_API void vy_program_free(struct vy_program *p);

/*
 * Building. Names of types ("u32", "i32", "f32", "bool"), accesses ("read_only", "read_write",
 * "write_only", "uniform", "workgroup"), operators ("add", "sqrt", "compare_exchange", ...),
 * barrier orderings and localities are the IR's own words (docs/ir.md). Strings are copied.
 *
 * Builders do not fail on the spot: one that gets an unknown word or a NULL operand returns NULL,
 * and the NULL travels up to vy_program_entry, which reports the first such mistake made on this
 * thread (with the word that was wrong). Structural rules (types, scopes, access) are checked by
 * vy_program_check and by the daemon.
 */

/* A new empty program; `name` (a label for logs and stats) may be NULL. */
VY_API struct vy_program *vy_program_new(const char *name, uint32_t wx, uint32_t wy, uint32_t wz);

/* Buffer flags. */
#define VY_BUFFER_OUTPUT 1u   /* is_output: allocated by the backend, zero-filled */
#define VY_BUFFER_LIVE_OUT 2u /* pipeline_live_out */

/* Declare a buffer (count 0: sized by its input at dispatch). Errors: VY_ERROR_INVALID_ARGUMENT
 * for an unknown access or type, more than 32 buffers, or unknown flags. */
VY_API int vy_program_buffer(struct vy_program *p, const char *name, uint32_t binding,
	const char *access, const char *type, uint32_t count, unsigned flags, struct vy_error *err);
/* Give buffer `name` hints: alignment (0 or a power of two), coalesce axis (-1: none),
 * locality ("temporal", "streaming", "random"). Errors: VY_ERROR_INVALID_ARGUMENT. */
VY_API int vy_program_hints(struct vy_program *p, const char *buffer, uint32_t alignment,
	int32_t coalesce_axis, const char *locality, struct vy_error *err);
/* Set the entry block to `n` statements. Errors: VY_ERROR_INVALID_ARGUMENT when a statement is
 * NULL (a builder failed; the message says which word it could not use). */
VY_API int vy_program_entry(
	struct vy_program *p, struct vy_node *const *body, size_t n, struct vy_error *err);

/* Expressions. */
VY_API struct vy_expr *vy_expr_u32(struct vy_program *p, uint32_t v);
VY_API struct vy_expr *vy_expr_i32(struct vy_program *p, int32_t v);
VY_API struct vy_expr *vy_expr_f32(struct vy_program *p, float v);
VY_API struct vy_expr *vy_expr_bool(struct vy_program *p, bool v);
VY_API struct vy_expr *vy_expr_var(struct vy_program *p, const char *name);
VY_API struct vy_expr *vy_expr_load(
	struct vy_program *p, const char *buffer, struct vy_expr *index);
VY_API struct vy_expr *vy_expr_len(struct vy_program *p, const char *buffer);
/* Global invocation id, local id and workgroup id on `axis` (0..2). */
VY_API struct vy_expr *vy_expr_gid(struct vy_program *p, uint32_t axis);
VY_API struct vy_expr *vy_expr_lid(struct vy_program *p, uint32_t axis);
VY_API struct vy_expr *vy_expr_wgid(struct vy_program *p, uint32_t axis);
/* `op`: add sub mul div mod bit_and bit_or bit_xor shl shr eq ne lt le gt ge and or min max
 * abs_diff sat_add sat_sub sat_mul rotl rotr mul_high hypot atan2 pow. */
VY_API struct vy_expr *vy_expr_binary(
	struct vy_program *p, const char *op, struct vy_expr *a, struct vy_expr *b);
/* `op`: neg bit_not not popcount clz ctz reverse_bits abs sign floor ceil round trunc sqrt
 * inverse_sqrt reciprocal exp exp2 exp10 expm1 log log2 log10 log1p cbrt sin cos tan asin acos atan
 * sinh cosh tanh erf erfc is_nan is_inf is_finite unpack4_low unpack4_high unpack8_low
 * unpack8_high exp_cr exp2_cr log_cr log2_cr. */
VY_API struct vy_expr *vy_expr_unary(struct vy_program *p, const char *op, struct vy_expr *a);
VY_API struct vy_expr *vy_expr_select(
	struct vy_program *p, struct vy_expr *cond, struct vy_expr *a, struct vy_expr *b);
VY_API struct vy_expr *vy_expr_cast(struct vy_program *p, const char *type, struct vy_expr *a);
/* The 32 bits of `a` read as `type` ("u32", "i32" or "f32"); read as f32 they are canonicalized. */
VY_API struct vy_expr *vy_expr_bitcast(struct vy_program *p, const char *type, struct vy_expr *a);
VY_API struct vy_expr *vy_expr_fma(
	struct vy_program *p, struct vy_expr *a, struct vy_expr *b, struct vy_expr *c);
/* `op`: add and or xor min max exchange (compare_exchange has its own builder). */
VY_API struct vy_expr *vy_expr_atomic(struct vy_program *p, const char *op, const char *buffer,
	struct vy_expr *index, struct vy_expr *value);
VY_API struct vy_expr *vy_expr_atomic_cas(struct vy_program *p, const char *buffer,
	struct vy_expr *index, struct vy_expr *expected, struct vy_expr *value);
/* A specialization constant `name` whose type and default come from the literal `fallback`
 * (made with vy_expr_u32/i32/f32/bool). */
VY_API struct vy_expr *vy_expr_spec(
	struct vy_program *p, const char *name, struct vy_expr *fallback);
/* `op`: add mul min max and or xor. */
VY_API struct vy_expr *vy_expr_subgroup_reduce(
	struct vy_program *p, const char *op, struct vy_expr *a);
VY_API struct vy_expr *vy_expr_subgroup_shuffle(
	struct vy_program *p, struct vy_expr *value, struct vy_expr *lane);
VY_API struct vy_expr *vy_expr_subgroup_ballot(struct vy_program *p, struct vy_expr *cond);
VY_API struct vy_expr *vy_expr_subgroup_lane(struct vy_program *p);
VY_API struct vy_expr *vy_expr_subgroup_size(struct vy_program *p);

/* Statements. Bodies are arrays of `n` statements, copied. */
VY_API struct vy_node *vy_node_let(struct vy_program *p, const char *name, struct vy_expr *value);
VY_API struct vy_node *vy_node_assign(
	struct vy_program *p, const char *name, struct vy_expr *value);
VY_API struct vy_node *vy_node_store(
	struct vy_program *p, const char *buffer, struct vy_expr *index, struct vy_expr *value);
VY_API struct vy_node *vy_node_if(struct vy_program *p, struct vy_expr *cond,
	struct vy_node *const *then_body, size_t n_then, struct vy_node *const *else_body,
	size_t n_else);
/* for var in [from, to): body. */
VY_API struct vy_node *vy_node_loop(struct vy_program *p, const char *var, struct vy_expr *from,
	struct vy_expr *to, struct vy_node *const *body, size_t n);
VY_API struct vy_node *vy_node_return(struct vy_program *p);
VY_API struct vy_node *vy_node_block(struct vy_program *p, struct vy_node *const *body, size_t n);
VY_API struct vy_node *vy_node_region(
	struct vy_program *p, const char *generator, struct vy_node *const *body, size_t n);
/* `order`: acquire release acq_rel seq_cst grid_sync; NULL means seq_cst. */
VY_API struct vy_node *vy_node_barrier(struct vy_program *p, const char *order);

/* --- clients ------------------------------------------------------------------------------ */

/*
 * A connection to vyred.
 * Thread-safety: one thread at a time, with no internal locking; the caller serializes every
 * call on a client, including async completion processing. Use one client per thread for
 * parallel work (the daemon schedules clients fairly).
 */
struct vy_client;

/*
 * Connect to `path` (NULL: $VYRED_SOCKET, else VY_DEFAULT_SOCKET) and send hello with `name`
 * (NULL: the program's name) as the client name. Errors: VY_ERROR_CONNECT_FAILED (nobody listens,
 * no permission), the daemon's answer to hello (UNSUPPORTED_PROTOCOL, SHUTTING_DOWN), or
 * VY_ERROR_DISCONNECTED / VY_ERROR_BAD_REPLY. *out is NULL on failure.
 */
VY_API int vy_client_connect(
	const char *path, const char *name, struct vy_client **out, struct vy_error *err);
/* Close the connection and free the client. Pending requests are abandoned (their callbacks do
 * not run); regions still attached are unmapped and freed. NULL is accepted. */
VY_API void vy_client_close(struct vy_client *c);
/*
 * Drop the current connection (if any), complete every pending request with
 * VY_ERROR_DISCONNECTED (running their callbacks), connect again to the same path, send hello and
 * re-attach the client's regions. Errors: as vy_client_connect; on failure the client stays
 * disconnected and may try again.
 */
VY_API int vy_client_reconnect(struct vy_client *c, struct vy_error *err);
/* Whether the client holds a live connection as far as it knows (a closed peer is noticed by
 * the next read or write). */
VY_API bool vy_client_connected(const struct vy_client *c);
/* The socket path in use. */
VY_API const char *vy_client_path(const struct vy_client *c);
/*
 * The hello reply: "server" (name and version), "protocol", "client_id", "devices" (array of
 * device profiles), "limits" (max_frame, max_inflight, resident_quota, max_inputs, ...). Valid
 * until the next reconnect or the close.
 */
VY_API const struct vy_value *vy_client_hello(const struct vy_client *c);
/* Timeout of synchronous calls in milliseconds; -1 (the default) waits forever. */
VY_API void vy_client_set_timeout(struct vy_client *c, int timeout_ms);
/*
 * Busy-poll: a call waiting for its reply first polls the socket without sleeping for up to
 * `us` microseconds (at most VY_BUSY_POLL_MAX_US), then sleeps in poll() as usual. A reply that
 * comes within that time is read without the wake-up of a sleeping thread, which saves
 * microseconds per round trip on a loaded or virtual machine; the cost is the core that spins.
 * 0 (the default, unless $VYRE_BUSY_POLL_US names a number at connect) turns it off.
 */
#define VY_BUSY_POLL_MAX_US 100000u
VY_API void vy_client_set_busy_poll(struct vy_client *c, uint32_t us);

/* Generic request of an operation without fields by its wire name ("stats", "clients",
 * "buffers", "graphs", "cache_list", "cache_clear", "ping"): the reply in *out (may be NULL to drop
 * it). */
VY_API int vy_call(
	struct vy_client *c, const char *op, struct vy_reply **out, struct vy_error *err);
/* Round trip with no work. */
VY_API int vy_ping(struct vy_client *c, struct vy_error *err);
/* The stats tree (daemon, devices, pipeline_cache, resident, clients, queue, requests, ...). */
VY_API int vy_stats(struct vy_client *c, struct vy_reply **out, struct vy_error *err);
/* Tables for operators, each an array of row maps: vy_clients answers "clients" (connected
 * clients), vy_buffers "buffers" (resident buffers), vy_cache_list "pipelines" and "programs"
 * (the daemon's caches). Other users' rows need an admin peer. */
VY_API int vy_clients(struct vy_client *c, struct vy_reply **out, struct vy_error *err);
VY_API int vy_buffers(struct vy_client *c, struct vy_reply **out, struct vy_error *err);
VY_API int vy_cache_list(struct vy_client *c, struct vy_reply **out, struct vy_error *err);
/* Empty the daemon's caches (admin only: PERMISSION_DENIED otherwise). `out` may be NULL. */
VY_API int vy_cache_clear(struct vy_client *c, struct vy_reply **out, struct vy_error *err);

/* --- compile and dispatch ----------------------------------------------------------------- */

enum vy_spec_type { VY_SPEC_TYPE_U32, VY_SPEC_TYPE_I32, VY_SPEC_TYPE_F32, VY_SPEC_TYPE_BOOL };

/* A value for specialization constant `name`. */
struct vy_spec_arg {
	const char *name;
	enum vy_spec_type type;
	union {
		uint32_t u32;
		int32_t i32;
		float f32;
		bool b;
	} v;
};

/* `config` of compile and dispatch. Zero-initialized fields mean "the daemon's default". */
struct vy_dispatch_options {
	uint32_t grid[3];           /* workgroup count; all zero: derived from the outputs */
	uint32_t workgroup_size[3]; /* all zero: the program's */
	const struct vy_spec_arg *spec;
	size_t n_spec;
	uint64_t max_loop_iterations;
	uint32_t timeout_ms;
	const char *label; /* NULL: none */
	bool has_device;   /* run on `device` (an index into hello's devices) */
	uint32_t device;
	const char *backend; /* "vulkan", "reference", or NULL for any */
	bool timing;         /* ask for device_ns (timestamp queries) */
};

enum vy_input_source {
	VY_INPUT_FROM_BYTES,    /* data, len: sent inside the request */
	VY_INPUT_FROM_RESIDENT, /* handle: a resident buffer */
	VY_INPUT_FROM_SHM,      /* region, offset, len: bytes of an attached region, not copied */
};

struct vy_region;

struct vy_dispatch_input {
	enum vy_input_source from;
	const void *data; /* borrowed during the call */
	size_t len;
	uint64_t handle;
	const struct vy_region *region;
	size_t offset;
};

static inline struct vy_dispatch_input vy_input_bytes(const void *data, size_t len)
{
	struct vy_dispatch_input in = {VY_INPUT_FROM_BYTES, data, len, 0, NULL, 0};
	return in;
}

static inline struct vy_dispatch_input vy_input_resident(uint64_t handle)
{
	struct vy_dispatch_input in = {VY_INPUT_FROM_RESIDENT, NULL, 0, handle, NULL, 0};
	return in;
}

static inline struct vy_dispatch_input vy_input_shm(
	const struct vy_region *region, size_t offset, size_t len)
{
	struct vy_dispatch_input in = {VY_INPUT_FROM_SHM, NULL, len, 0, region, offset};
	return in;
}

/*
 * A dispatch: the program (or the program_id a compile returned), one input per input buffer in
 * binding order (read_only, read_write and uniform buffers), optional options, and optional
 * outputs_to: one entry per output, a resident handle to write that output into (it then comes
 * back as NULL in the reply) or 0 to get it back in the reply.
 */
struct vy_dispatch_args {
	const struct vy_program *program;
	const char *program_id; /* 32 hex digits; used when program is NULL */
	const struct vy_dispatch_input *inputs;
	size_t n_inputs;
	const uint64_t *outputs_to;
	size_t n_outputs_to;
	const struct vy_dispatch_options *options; /* NULL: defaults */
};

#define VY_PROGRAM_ID_CHARS 33

struct vy_compile_result {
	char program_id[VY_PROGRAM_ID_CHARS]; /* 32 hex digits */
	char cache[8];                        /* "hit", "disk" or "miss" */
	uint64_t compile_ns;
	uint32_t device; /* the device it was compiled for */
};

/* Validate, plan and compile on the daemon (the pipeline is cached there). `options` may be NULL.
 * Errors: the daemon's (INVALID_PROGRAM with every error, UNSUPPORTED_FEATURE,
 * KERNEL_COMPILE_FAILED, ...) and the client's. */
VY_API int vy_compile(struct vy_client *c, const struct vy_program *p,
	const struct vy_dispatch_options *options, struct vy_compile_result *out,
	struct vy_error *err);

/* Run a program. The reply (outputs, timing, cache) goes to *out, which may be NULL to drop it.
 * Errors: the daemon's (TRAP, TIMEOUT, BAD_REQUEST for wrong input sizes, NOT_FOUND, ...) and the
 * client's (VY_ERROR_INVALID_ARGUMENT for more than 32 inputs or a region of another client). */
VY_API int vy_dispatch(struct vy_client *c, const struct vy_dispatch_args *args,
	struct vy_reply **out, struct vy_error *err);

/*
 * Arm a fault on a device for tests of failure handling (docs/operations.md): `fault` is
 * device_lost, compile, dispatch or out_of_memory; `options` names the device (has_device and
 * device; NULL: the least-loaded one). The reply's "device" is the device that got it. Only a
 * daemon started with fault_injection = true in [debug] accepts it, from an admin peer; otherwise
 * PERMISSION_DENIED. UNSUPPORTED_FEATURE where the device's backend cannot produce the fault.
 */
VY_API int vy_inject_fault(struct vy_client *c, const char *fault,
	const struct vy_dispatch_options *options, struct vy_reply **out, struct vy_error *err);

/* --- resident buffers ----------------------------------------------------------------------- */

/* Allocate `size` bytes on the device. A `name` (NULL: none) keeps the buffer alive after this
 * connection closes and lets other connections of the same user attach it by allocating the
 * same name and size. Errors: QUOTA_EXCEEDED, OUT_OF_MEMORY, BAD_REQUEST. */
VY_API int vy_buffer_alloc(struct vy_client *c, uint64_t size, const char *name, uint64_t *handle,
	struct vy_error *err);
/* vy_buffer_alloc on the device `options` names (has_device and device, or backend; its other
 * fields are ignored); NULL or no device named: the least-loaded device. The buffer stays on
 * that device: dispatches and graphs that use it run there. The reply's device is not kept;
 * vy_buffers lists it. Errors: as vy_buffer_alloc, and BAD_REQUEST for a device hello did not
 * list or a named buffer that lives on another device. */
VY_API int vy_buffer_alloc_on(struct vy_client *c, uint64_t size, const char *name,
	const struct vy_dispatch_options *options, uint64_t *handle, struct vy_error *err);
/* Write `len` bytes at `offset`. Errors: NOT_FOUND, BAD_REQUEST (out of range). */
VY_API int vy_buffer_upload(struct vy_client *c, uint64_t handle, uint64_t offset, const void *data,
	size_t len, struct vy_error *err);
/* Read exactly `len` bytes at `offset` into `dst`. Errors: NOT_FOUND, BAD_REQUEST (out of
 * range), VY_ERROR_BAD_REPLY when the daemon sent another length. */
VY_API int vy_buffer_download(struct vy_client *c, uint64_t handle, uint64_t offset, void *dst,
	size_t len, struct vy_error *err);
VY_API int vy_buffer_free(struct vy_client *c, uint64_t handle, struct vy_error *err);

/* --- shared-memory regions -------------------------------------------------------------------- */

/*
 * A region of shared memory: a memfd the client maps read-write and the daemon maps read-only,
 * so inputs reach the daemon without passing through the socket. The memfd is sealed against
 * shrinking, growing and further sealing before it is sent, so the daemon can never fault on it.
 * Writes made before vy_dispatch are seen by that dispatch; do not write a region while a
 * dispatch that reads it is pending.
 * Thread-safety: as its client; the mapping itself may be written by any thread.
 */

/* Create a region of `size` bytes (zero-filled) and attach it to the daemon. Errors:
 * VY_ERROR_SYSTEM (memfd, seals, mmap), QUOTA_EXCEEDED (max_shm_regions), BAD_REQUEST. */
VY_API int vy_region_attach(
	struct vy_client *c, size_t size, struct vy_region **out, struct vy_error *err);
/* Detach from the daemon, unmap and free the region, whatever the daemon answers (the error is
 * still reported). NULL is accepted. */
VY_API int vy_region_detach(struct vy_client *c, struct vy_region *region, struct vy_error *err);
VY_API void *vy_region_data(const struct vy_region *region);
VY_API size_t vy_region_size(const struct vy_region *region);
/* The daemon's id of the region (changes when vy_client_reconnect re-attaches it). */
VY_API uint64_t vy_region_id(const struct vy_region *region);

/* --- asynchronous requests ----------------------------------------------------------------------
 */

/*
 * Completion of an asynchronous request: `reply` on success (yours: destroy it with
 * vy_reply_destroy), or NULL and `error` (borrowed for the call) on failure. A callback may start
 * new requests but must not call vy_client_process, vy_client_wait, a synchronous call or
 * vy_client_reconnect/close.
 */
typedef void vy_done_fn(struct vy_client *c, uint64_t id, struct vy_reply *reply,
	const struct vy_error *error, void *user);

/*
 * Send a request and return at once with its id in *id (may be NULL). With `done` set, the
 * completion is delivered to it from vy_client_process or vy_client_wait (or from
 * vy_client_reconnect, as VY_ERROR_DISCONNECTED). With `done` NULL, the completion is kept
 * until vy_client_wait(id) takes it. Errors here mean nothing was sent (or the connection broke
 * while sending: VY_ERROR_DISCONNECTED) and no completion will come.
 */
VY_API int vy_dispatch_start(struct vy_client *c, const struct vy_dispatch_args *args,
	vy_done_fn *done, void *user, uint64_t *id, struct vy_error *err);
VY_API int vy_compile_start(struct vy_client *c, const struct vy_program *p,
	const struct vy_dispatch_options *options, vy_done_fn *done, void *user, uint64_t *id,
	struct vy_error *err);
VY_API int vy_buffer_upload_start(struct vy_client *c, uint64_t handle, uint64_t offset,
	const void *data, size_t len, vy_done_fn *done, void *user, uint64_t *id,
	struct vy_error *err);
/* The reply's "data" field holds the bytes (vy_reply_get(reply, "data")). `len` UINT64_MAX:
 * up to the end of the buffer. */
VY_API int vy_buffer_download_start(struct vy_client *c, uint64_t handle, uint64_t offset,
	uint64_t len, vy_done_fn *done, void *user, uint64_t *id, struct vy_error *err);
/* An operation without fields, by wire name, as vy_call. */
VY_API int vy_call_start(struct vy_client *c, const char *op, vy_done_fn *done, void *user,
	uint64_t *id, struct vy_error *err);

/* A descriptor that polls readable (POLLIN) when replies may be waiting; -1 when disconnected.
 * It changes with vy_client_reconnect. Do not read it or change its flags. */
VY_API int vy_client_fd(const struct vy_client *c);
/* Requests sent whose completion has not been delivered yet. */
VY_API size_t vy_client_pending(const struct vy_client *c);
/*
 * Read every reply available now without blocking and deliver completions to their callbacks
 * (completions of requests without a callback are kept for vy_client_wait). Returns the number of
 * completions that arrived, or a negative code: VY_ERROR_DISCONNECTED when the connection broke
 * (every pending request then completes with that error), VY_ERROR_BAD_REPLY.
 */
VY_API int vy_client_process(struct vy_client *c, struct vy_error *err);
/*
 * Block until request `id` completes, up to `timeout_ms` (-1: forever), delivering other
 * completions to their callbacks meanwhile. For a request started without a callback, its reply
 * goes to *out (which may be NULL to drop it) and its error is returned; for one with a callback,
 * the callback runs and 0 is returned with *out NULL. Errors: VY_ERROR_NO_REPLY on timeout (the
 * request stays pending), VY_ERROR_INVALID_ARGUMENT for an id that is not pending (never
 * started, already taken, or a request whose callback has already run).
 */
VY_API int vy_client_wait(struct vy_client *c, uint64_t id, int timeout_ms, struct vy_reply **out,
	struct vy_error *err);

/* --- graphs ------------------------------------------------------------------------------------
 */

/*
 * A graph: a chain of steps checked once on the daemon and run with one request (docs/graphs.md).
 * Each step binds every non-workgroup buffer of its program to a graph input, a graph output, a
 * temp (device memory shared by the steps that name it, zeroed at each run) or a resident
 * buffer.
 */
enum vy_graph_bind_kind {
	VY_BIND_INPUT,    /* value: the graph input's index */
	VY_BIND_OUTPUT,   /* value: the graph output's index */
	VY_BIND_TEMP,     /* temp: its name */
	VY_BIND_RESIDENT, /* value: a resident handle */
};

struct vy_graph_bind {
	const char *buffer; /* the buffer's name in the step's program */
	enum vy_graph_bind_kind kind;
	uint64_t value;
	const char *temp;
};

static inline struct vy_graph_bind vy_bind_input(const char *buffer, uint32_t k)
{
	struct vy_graph_bind b = {buffer, VY_BIND_INPUT, k, NULL};
	return b;
}

static inline struct vy_graph_bind vy_bind_output(const char *buffer, uint32_t j)
{
	struct vy_graph_bind b = {buffer, VY_BIND_OUTPUT, j, NULL};
	return b;
}

static inline struct vy_graph_bind vy_bind_temp(const char *buffer, const char *name)
{
	struct vy_graph_bind b = {buffer, VY_BIND_TEMP, 0, name};
	return b;
}

static inline struct vy_graph_bind vy_bind_resident(const char *buffer, uint64_t handle)
{
	struct vy_graph_bind b = {buffer, VY_BIND_RESIDENT, handle, NULL};
	return b;
}

/* One step: its program (or program_id), its options (grid, workgroup_size, spec,
 * max_loop_iterations; step 0's device and backend choose the device) and its binds. */
struct vy_graph_step {
	const struct vy_program *program;
	const char *program_id;                    /* used when program is NULL */
	const struct vy_dispatch_options *options; /* NULL: defaults */
	const struct vy_graph_bind *binds;
	size_t n_binds;
};

struct vy_graph_info {
	uint64_t graph; /* the handle */
	uint32_t steps;
	uint32_t inputs;  /* how many inputs vy_graph_run takes */
	uint32_t outputs; /* how many outputs it returns */
	uint32_t barriers;
};

/* Create a graph (`name` may be NULL). Errors: the daemon's, each naming its place
 * (steps[3].bind.x) with a Fix: BAD_REQUEST, NOT_FOUND (a program_id or a resident handle),
 * INVALID_PROGRAM, QUOTA_EXCEEDED (max_graphs); VY_ERROR_INVALID_ARGUMENT for no steps. */
VY_API int vy_graph_create(struct vy_client *c, const struct vy_graph_step *steps, size_t n_steps,
	const char *name, struct vy_graph_info *out, struct vy_error *err);
/* Run a graph on one input per graph input (bytes or shm ranges). The reply holds "outputs" (one
 * bin per graph output) and "timing"; `options` may set timeout_ms (for the whole run), label and
 * timing (per-step device times in "timing.steps_ns"). Errors: a step's, naming it (TRAP at
 * steps[7].entry[0].store), NOT_FOUND (a freed graph or resident buffer), BAD_REQUEST. */
VY_API int vy_graph_run(struct vy_client *c, uint64_t graph, const struct vy_dispatch_input *inputs,
	size_t n_inputs, const struct vy_dispatch_options *options, struct vy_reply **out,
	struct vy_error *err);
VY_API int vy_graph_run_start(struct vy_client *c, uint64_t graph,
	const struct vy_dispatch_input *inputs, size_t n_inputs,
	const struct vy_dispatch_options *options, vy_done_fn *done, void *user, uint64_t *id,
	struct vy_error *err);
VY_API int vy_graph_free(struct vy_client *c, uint64_t graph, struct vy_error *err);
/* The caller's graphs ("graphs": rows of graph, name, steps, inputs, outputs, runs, ...). */
VY_API int vy_graphs(struct vy_client *c, struct vy_reply **out, struct vy_error *err);

#ifdef __cplusplus
}
#endif

#endif
