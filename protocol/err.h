/*
 * The one closed set of error codes of vyred (DESIGN.md §6). Every fallible function returns 0 or
 * a negative VY_E_* code; the same table gives each code its wire name, number, retry class and
 * one-line description. What a user can act on is described in a struct vy_err, which always
 * carries a Fix line.
 *
 * Thread-safety: the table is immutable; a struct vy_err belongs to its caller.
 */
#ifndef VY_PROTOCOL_ERR_H
#define VY_PROTOCOL_ERR_H

#include <stdarg.h>
#include <stddef.h>

/* X(NAME, number, retry class, description) */
#define VY_ERR_MAP(X)                                                                              \
	X(OUT_OF_MEMORY, 1001, LATER, "not enough memory for the request")                         \
	X(UNSUPPORTED_FEATURE, 1002, NEVER,                                                        \
		"the backend does not support a feature of the program")                           \
	X(TIMEOUT, 1003, LATER, "the request ran past its time limit")                             \
	X(KERNEL_COMPILE_FAILED, 1004, AFTER_FIX, "the kernel did not compile")                    \
	X(DISPATCH_FAILED, 1005, LATER, "the dispatch failed on the device")                       \
	X(INVALID_PROGRAM, 1006, AFTER_FIX, "the program is not valid vyre IR")                    \
	X(TRAP, 1007, AFTER_FIX, "an invocation trapped")                                          \
	X(DEVICE_LOST, 1008, LATER, "the device was lost")                                         \
	X(QUOTA_EXCEEDED, 1009, AFTER_FIX, "a per-client limit would be exceeded")                 \
	X(NOT_FOUND, 1010, NEVER, "no such object")                                                \
	X(PERMISSION_DENIED, 1011, NEVER, "the operation needs more privilege")                    \
	X(BUSY, 1012, LATER, "too many requests in flight")                                        \
	X(SHUTTING_DOWN, 1013, RECONNECT, "the daemon is shutting down")                           \
	X(BAD_FRAME, 1020, RECONNECT, "the frame is malformed")                                    \
	X(BAD_REQUEST, 1021, AFTER_FIX, "the request is malformed")                                \
	X(UNSUPPORTED_PROTOCOL, 1022, NEVER, "the protocol version is not supported")              \
	X(INTERNAL, 1999, LATER, "internal error")

enum vy_errc {
#define VY__ERR_ENUM(name, num, retry, desc) VY_E_##name = -(num),
	VY_ERR_MAP(VY__ERR_ENUM)
#undef VY__ERR_ENUM
};

enum vy_retry {
	VY_RETRY_NEVER,
	VY_RETRY_LATER,
	VY_RETRY_AFTER_FIX,
	VY_RETRY_RECONNECT,
};

#define VY_ERR_AT_MAX 192
#define VY_ERR_MESSAGE_MAX 384
#define VY_ERR_FIX_MAX 256

/* One actionable error: what failed (message), where (at, optional) and what to do (fix). */
struct vy_err {
	int code; /* a VY_E_* value, 0 when unset */
	char at[VY_ERR_AT_MAX];
	char message[VY_ERR_MESSAGE_MAX];
	char fix[VY_ERR_FIX_MAX];
};

/* A growable list of errors, used where every error is reported (validation). */
struct vy_err_list {
	struct vy_err *items; /* owned */
	size_t len;
	size_t cap;
	size_t dropped; /* errors not kept because the list reached VY_ERR_LIST_MAX */
};

#define VY_ERR_LIST_MAX 64

/* Wire name ("INVALID_PROGRAM"), or "UNKNOWN" for a value outside the table. */
const char *vy_err_name(int code);
/* Wire number (1006), or 1999 for a value outside the table. */
int vy_err_num(int code);
enum vy_retry vy_err_retry(int code);
const char *vy_err_retry_name(enum vy_retry retry);
const char *vy_err_desc(int code);
/* Code for a wire name, or 0 when the name is unknown. */
int vy_err_from_name(const char *name);
/* Code for a wire number, or 0 when the number is unknown. */
int vy_err_from_num(int num);

/*
 * Fill `err` (which may be NULL) and return `code`. `fix` is the imperative remedy without the
 * "Fix: " prefix; `at` may be NULL. The message is printf-formatted.
 */
int vy_err_set(struct vy_err *err, int code, const char *at, const char *fix, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
int vy_err_setv(struct vy_err *err, int code, const char *at, const char *fix, const char *fmt,
	va_list ap) __attribute__((format(printf, 5, 0)));

/* Clear `err` to the unset state. NULL is accepted. */
void vy_err_clear(struct vy_err *err);

/* "message. Fix: fix" (with " (at ...)" when a location exists) into buf; returns buf. */
char *vy_err_format(const struct vy_err *err, char *buf, size_t size);

void vy_err_list_init(struct vy_err_list *list);
void vy_err_list_finish(struct vy_err_list *list);
/* Append a copy of err; beyond VY_ERR_LIST_MAX entries only `dropped` grows. */
void vy_err_list_push(struct vy_err_list *list, const struct vy_err *err);

#endif
