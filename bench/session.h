/*
 * libvyre glue shared by vybench's figure groups: connecting to the daemon under measurement,
 * compiling a program to its id, resident buffers, timed dispatches, and turning libvyre's
 * errors into the bench's struct vy_err.
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

/* Most timed runs of one figure (sizes.runs never exceeds it). */
#define VY_BENCH_RUNS_MAX 256u

/* Checks a dispatch's reply against `want`: 0, or VY_BENCH_WRONG with `err` filled. */
typedef int vy_bench_check_fn(const struct vy_reply *r, const void *want, struct vy_err *err);

/* The daemon's part of a dispatch and two of its stages (protocol.md, dispatch), in ns. */
struct vy_bench_stages {
	uint64_t daemon, prepare, backend;
};

/* A resident buffer holding `len` bytes of `data`; its handle in *handle. */
int vy_bench_session_put(
	struct vy_client *c, const void *data, size_t len, uint64_t *handle, struct vy_err *err);
/*
 * One dispatch, its reply checked by `check` (NULL: none); its client wall time in *wall_ns, its
 * time in *ns (device where measured, else the wall time; *device says which) and, where `st` is
 * not NULL, the daemon's stages.
 */
int vy_bench_session_dispatch(struct vy_client *c, const struct vy_dispatch_args *args,
	vy_bench_check_fn *check, const void *want, uint64_t *ns, uint64_t *wall_ns, bool *device,
	struct vy_bench_stages *st, struct vy_err *err);
/*
 * Run `args` for VY_BENCH_WARM_NS (at least once), then `runs` (1 to VY_BENCH_RUNS_MAX) times,
 * each reply checked; the median time of the timed runs (device where measured) in *median_ns,
 * the median client wall time in *wall_ns, and the runs made in all in *made (NULL: not wanted).
 */
int vy_bench_session_runs(struct vy_client *c, const struct vy_dispatch_args *args, uint32_t runs,
	vy_bench_check_fn *check, const void *want, uint64_t *median_ns, uint64_t *wall_ns,
	bool *device, uint32_t *made, struct vy_err *err);
/* A check: the dispatch's single output went to its resident target (outputs_to), so the reply
 * holds nil for it. */
int vy_bench_session_output_resident(
	const struct vy_reply *r, const void *want, struct vy_err *err);

#endif
