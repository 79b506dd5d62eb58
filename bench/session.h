/*
 * libvyre glue shared by vybench's figure groups: connecting to the daemon under measurement,
 * compiling a program to its id, and turning libvyre's errors into the bench's struct vy_err.
 *
 * Thread-safety: each function touches only the client it is given.
 */
#ifndef VY_BENCH_SESSION_H
#define VY_BENCH_SESSION_H

#include <vy/vyre.h>

#include "bench.h"

/* Connect to the daemon of `ctx` as client `name`. */
int vy_bench_session_connect(const struct vy_bench_ctx *ctx, const char *name,
	struct vy_client **out, struct vy_err *err);
/* Copy a libvyre error into `err` (prefixing `what`) and return its code. */
int vy_bench_session_fail(struct vy_err *err, const char *what, const struct vy_error *e);
/* Compile `p` on the daemon; its id in `id`, the cache outcome in `res` (may be NULL). */
int vy_bench_session_compile(struct vy_client *c, const struct vy_program *p,
	const struct vy_dispatch_options *options, char id[VY_PROGRAM_ID_CHARS],
	struct vy_compile_result *res, struct vy_err *err);
/* The time of a dispatch reply: device_ns where measured, else `wall_ns` (the caller's);
 * *device says which. */
uint64_t vy_bench_session_time(const struct vy_reply *r, uint64_t wall_ns, bool *device);

#endif
