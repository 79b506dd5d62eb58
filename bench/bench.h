/*
 * What the parts of vybench share: the run's context (options, sizes chosen by device type, the
 * anchors' contexts, the daemon, the report), the figure groups, and small statistics helpers.
 *
 * Each figure group measures vyred through libvyre and its anchors in the same process, checks
 * every result before its time counts, adds its rows to the report and returns 0; or returns a
 * negative code with `err` filled: VY_BENCH_WRONG when a kernel computed a wrong result, a
 * VY_E_* code when something could not be measured. The caller records the failure in the
 * report and goes on with the next group.
 *
 * Thread-safety: the context and the groups belong to the main thread; a group may start threads
 * of its own and joins them before it returns.
 */
#ifndef VY_BENCH_BENCH_H
#define VY_BENCH_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* A kernel (vyred's or an anchor's) computed a wrong result: the run fails. */
#define VY_BENCH_WRONG (-3000)

/* Elements of the tiny kernel: y[i] = x[i] + 1 over 64 u32, one workgroup. */
#define VY_BENCH_TINY_N 64u
/* Warm-up before a bandwidth figure's timed runs, so that the GPU's clocks have risen: one run
 * after an idle spell ran at 60 % of an H200's bandwidth. */
#define VY_BENCH_WARM_NS 300000000u

struct vy_raw_vk;
struct vy_bench_inproc;
struct vy_bench_daemon;
struct vy_bench_report;
struct json_object;

/* Problem sizes and repetitions, chosen by device type (bench/README.md lists them). */
struct vy_bench_sizes {
	uint32_t tiny_iterations; /* timed tiny dispatches per side */
	uint32_t send_iterations; /* tiny dispatches that send the whole program */
	double clients_seconds;   /* measured time of each client count */
	uint32_t clients_window;  /* requests each client keeps in flight */
	uint64_t stream_elements; /* f32 elements of the elementwise figure */
	uint32_t runs;            /* timed runs of the stream, reduce and matmul figures */
	uint64_t transfer_bytes;  /* input size of the transfer figures */
	uint32_t transfer_runs;
	uint64_t reduce_elements; /* u32 elements summed */
	uint32_t matmul_n;        /* n x n matrices */
	uint64_t math_elements;   /* f32 elements of each math function's input */
	uint32_t cold_compiles;   /* distinct programs compiled cold */
	uint32_t lookups;         /* cache-hit compiles and pings, each */
	uint32_t restarts;        /* daemon restarts of the disk-cache figure */
	uint32_t connections;     /* connections held at once */
};

struct vy_bench_ctx {
	uint32_t device; /* Vulkan device index, raw and daemon alike */
	bool cpu;        /* the device is a CPU implementation (lavapipe) */
	const char *out_dir;
	struct vy_bench_sizes sizes;
	struct vy_raw_vk *raw;
	struct vy_bench_inproc *inproc;
	struct vy_bench_daemon *daemon;
	struct vy_bench_report *report;
	const char *all_devices; /* the devices key of the daemon of the every-device figures */
	const char *const *sets; /* -o KEY=VALUE settings of every daemon started */
	size_t n_sets;
	/* Figures reused by later rows (the PyTorch anchor, the every-device figures); NAN until
	 * measured. */
	double tiny_p50_us;
	double stream_gbps;
	double rate16_per_s;
	double stream_all_gbps; /* stream_bandwidth_all, with two devices or more */
};

/* The figure groups, in the order vybench runs them (the cache group restarts the daemon). */
int vy_bench_tiny_run(struct vy_bench_ctx *ctx, struct vy_err *err);
int vy_bench_graph_run(struct vy_bench_ctx *ctx, struct vy_err *err);
int vy_bench_throughput_run(struct vy_bench_ctx *ctx, struct vy_err *err);
int vy_bench_stream_run(struct vy_bench_ctx *ctx, struct vy_err *err);
int vy_bench_transfer_run(struct vy_bench_ctx *ctx, struct vy_err *err);
int vy_bench_reduce_run(struct vy_bench_ctx *ctx, struct vy_err *err);
int vy_bench_matmul_run(struct vy_bench_ctx *ctx, struct vy_err *err);
int vy_bench_cache_run(struct vy_bench_ctx *ctx, struct vy_err *err);
int vy_bench_clients_run(struct vy_bench_ctx *ctx, struct vy_err *err);
int vy_bench_all_run(struct vy_bench_ctx *ctx, struct vy_err *err);
int vy_bench_math_run(struct vy_bench_ctx *ctx, struct vy_err *err);
/*
 * Give the math group's rows PyTorch's figure of the same operation (torch_anchor.py's "math"
 * object) as their anchor, with the goal ratio >= 0.8; where PyTorch is absent or has no figure,
 * the row keeps vyred's alone and its note says why.
 */
void vy_bench_math_anchor(struct vy_bench_ctx *ctx, struct json_object *torch);

/* Dispatches per second of `n` clients over the measured window, Jain's index over their shares
 * and the least and most one client completed. */
struct vy_bench_rate {
	double per_s;
	double jain;
	uint64_t min, max;
};

/* `n` clients of ctx's daemon, each a connection and a thread keeping clients_window tiny
 * dispatches of program `id` (unpinned) in flight, every reply checked; counted over
 * clients_seconds after 0.2 s of warm-up. */
int vy_bench_rate_measure(struct vy_bench_ctx *ctx, const char *id, uint32_t n,
	struct vy_bench_rate *out, struct vy_err *err);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t vy_bench_now_ns(void);
/* Sort ascending. */
void vy_bench_sort(uint64_t *v, size_t n);
/* Nearest-rank percentile (0 < p <= 100) of `n` >= 1 sorted samples. */
uint64_t vy_bench_percentile(const uint64_t *sorted, size_t n, double p);
/* Median of `n` >= 1 samples; sorts them. */
uint64_t vy_bench_median(uint64_t *v, size_t n);
/* Jain's fairness index of `n` >= 1 shares: 1 when all are equal, 1/n when one has all. */
double vy_bench_jain(const uint64_t *x, size_t n);
/* A well-mixed 32-bit value of `i` (test data that no constant fold can predict). */
uint32_t vy_bench_hash(uint64_t i);
/* Fill `err` with a wrong-result failure of `what` and return VY_BENCH_WRONG. */
int vy_bench_wrong(struct vy_err *err, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
