/*
 * The backend contract (seed 001, DESIGN.md §2 and §8): what every execution backend of vyred
 * offers, as a vtable. A backend is a pure function from a validated program and its input bytes
 * to its output bytes; on success the outputs are byte-identical to the reference backend's.
 *
 * A backend fills in a struct vy_backend_ops and leaves NULL every entry it does not implement.
 * Only `dispatch` is required. Callers never read the ops table: they call the vy_backend_*
 * functions below, which apply the contract's conservative default wherever an entry is NULL:
 *   dispatch_owned, dispatch_into   run `dispatch` (owned inputs are freed afterwards)
 *   dispatch_timed                  host wall time around vy_backend_dispatch_into
 *   compile_native                  a passthrough pipeline that runs `dispatch` every time
 *   dispatch_async                  runs the dispatch now and returns a ready handle
 *   resident_* entries, try_recover,
 *   inject_fault, host_import       UNSUPPORTED_FEATURE naming the feature and the backend id
 *   graph_run, graph_forget         the graph's steps as resident dispatches, one by one
 *                                   (graph_run.h); nothing to forget
 *   graph_start                     runs the graph now (graph_run) and returns a ready handle
 *   host_release                    does nothing
 *   capability queries, device_lost false
 *   limits                          workgroup size [1,1,1], one workgroup per dimension,
 *                                   invocations = product of the workgroup size (saturating),
 *                                   subgroup size 0 (unknown), storage buffer bytes 0 (unknown)
 *   device_profile                  built from the capability and limit answers above
 *   supported_ops                   every operation of IR version 1; the subgroup expressions
 *                                   only where the backend reports VY_CAP_SUBGROUP_OPS
 *   version                         "unspecified"
 *   prepare, flush, shutdown        succeed without doing anything
 *   pipeline_cache_stats            false (no counters to report)
 * Capability answers are promises: true only where the backend's lowering really emits the
 * feature on this device.
 *
 * Inputs are views (struct vy_bytes, from binding.h): one per input-consuming buffer, in the
 * binding plan's input order, borrowed for the length of the call. A caller that imported host
 * memory (vy_backend_host_import) may also say, through the dispatch config's `imports`, that an
 * input's bytes lie in an import; a backend may then read them from there instead of copying the
 * view, or ignore the hint: the view always holds the same bytes. Outputs go into a caller-owned
 * struct vy_outputs: one malloc'd buffer per output, in the plan's output order. (The seed's
 * dispatch over owned vectors and its dispatch_borrowed over slices read the same views in C, so
 * both are `dispatch` here; dispatch_owned is the variant where the input buffers change hands.)
 *
 * Errors: every fallible entry returns 0 or a negative VY_E_* code and fills the optional
 * struct vy_err with a Fix line. On failure the caller's outputs are left empty.
 *
 * Thread-safety: a backend must accept concurrent calls of every entry except shutdown and
 * destroy, which the owner calls once no other call is running. A pipeline may be dispatched from
 * several threads at once. A pending handle belongs to one thread at a time. struct vy_outputs
 * belongs to its caller.
 */
#ifndef VY_BACKEND_BACKEND_H
#define VY_BACKEND_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "binding.h"
#include "ir.h"

struct vy_err;
struct vy_spec_map;

/* A caller-owned list of output buffers. */
struct vy_output {
	uint8_t *data; /* owned, from malloc; NULL when len is 0 or after vy_outputs_take */
	size_t len;
};

struct vy_outputs {
	struct vy_output *items; /* owned */
	size_t len;
	size_t cap;
};

/* Make `outputs` empty. A zeroed struct is also a valid empty list. */
void vy_outputs_init(struct vy_outputs *outputs);
/* Free every buffer and the list. NULL is accepted. */
void vy_outputs_finish(struct vy_outputs *outputs);
/* Free every buffer and make the list empty, keeping its capacity. */
void vy_outputs_clear(struct vy_outputs *outputs);
/* Append a buffer, taking ownership of `data` (malloc'd; NULL when len is 0). */
void vy_outputs_push(struct vy_outputs *outputs, uint8_t *data, size_t len);
/* Append a copy of `len` bytes of `data`. */
void vy_outputs_push_copy(struct vy_outputs *outputs, const void *data, size_t len);
/* Append a zero-filled buffer of `len` bytes and return it for the caller to fill. */
uint8_t *vy_outputs_push_zeroed(struct vy_outputs *outputs, size_t len);
/*
 * Move buffer `i` (< len, asserted) out of the list: returns its data (the caller frees it) and
 * stores its length in *len; the item stays in the list, empty.
 */
uint8_t *vy_outputs_take(struct vy_outputs *outputs, size_t i, size_t *len);
/* Replace the buffers of `dst` by those of `src`, leaving `src` empty. */
void vy_outputs_move(struct vy_outputs *dst, struct vy_outputs *src);

/*
 * Where an input's bytes also lie in imported host memory: `offset` bytes past the pointer given
 * to vy_backend_host_import when import `id` was made. id 0 names no import.
 */
struct vy_host_ref {
	uint64_t id;
	uint64_t offset;
};

/* Default loop limit of an invocation when the config sets none (DESIGN.md §4.5). */
#define VY_DISPATCH_DEFAULT_MAX_LOOP_ITERATIONS (UINT64_C(1) << 24)
/* Default bound on a dispatch's output bytes: what one reply frame of the protocol carries. */
#define VY_DISPATCH_DEFAULT_MAX_OUTPUT_BYTES (UINT64_C(0xFFFFFFFF) - 4096)

/*
 * How to run one dispatch (the protocol's `config`, DESIGN.md §6). A zeroed struct asks for every
 * default. Pointers are borrowed for the length of the call.
 */
struct vy_dispatch_config {
	uint32_t grid[3];           /* workgroup counts; all 0: derived from the program (§5) */
	uint32_t workgroup_size[3]; /* override; all 0: the program's own */
	const struct vy_spec_map *spec; /* specialization values (planner/spec.h); NULL: defaults */
	uint64_t max_loop_iterations;   /* 0: VY_DISPATCH_DEFAULT_MAX_LOOP_ITERATIONS */
	uint32_t timeout_ms;            /* 0: no limit beyond the daemon's */
	const char *label;              /* for logs and stats; NULL: none */
	bool has_device;                /* false: any capable device */
	uint32_t device;                /* device index, read when has_device */
	bool timing;                    /* the caller wants device timing where it costs extra */
	/* NULL, or one per input (n_inputs of the dispatch): where that input's bytes also lie in
	 * an import. A ref that does not describe exactly the input's view is ignored. */
	const struct vy_host_ref *imports;
	/* Output bytes the dispatch may allocate, checked before any is (QUOTA_EXCEEDED beyond);
	 * 0: VY_DISPATCH_DEFAULT_MAX_OUTPUT_BYTES. Outputs into caller resources do not count. */
	uint64_t max_output_bytes;
};

/* Marks a timing figure the backend could not measure. */
#define VY_TIMING_NONE UINT64_MAX

struct vy_timing {
	uint64_t wall_ns;    /* host wall time of the whole call */
	uint64_t device_ns;  /* GPU execution time, or VY_TIMING_NONE */
	uint64_t enqueue_ns; /* time to record and submit, or VY_TIMING_NONE */
	uint64_t wait_ns;    /* time waiting for completion, or VY_TIMING_NONE */
};

/* A backend-resident buffer: only meaningful to the backend that allocated it. */
struct vy_resource {
	uint64_t id;
	size_t len; /* bytes */
};

/* Capability queries, X(suffix, name). All default to false. */
#define VY_CAPABILITY_MAP(X)                                                                       \
	X(SUBGROUP_OPS, "subgroup_ops")                                                            \
	X(F16, "f16")                                                                              \
	X(BF16, "bf16")                                                                            \
	X(TENSOR_CORES, "tensor_cores")                                                            \
	X(ASYNC_COMPUTE, "async_compute")                                                          \
	X(INDIRECT_DISPATCH, "indirect_dispatch")                                                  \
	X(SPECULATION, "speculation")                                                              \
	X(PERSISTENT_THREADS, "persistent_threads")                                                \
	X(GRID_SYNC, "grid_sync")                                                                  \
	X(DISTRIBUTED, "distributed")

#define VY__ENUM_CAP(suffix, name) VY_CAP_##suffix,
enum vy_capability { VY_CAPABILITY_MAP(VY__ENUM_CAP) VY_CAP_COUNT };
#undef VY__ENUM_CAP

/* "subgroup_ops", ...; "?" for a value outside the enum. */
const char *vy_capability_name(enum vy_capability cap);

/* Operations a backend executes without further lowering: one bit per enum value of ir.h. */
struct vy_op_set {
	uint32_t nodes;   /* bit (1 << enum vy_node_kind) */
	uint32_t exprs;   /* bit (1 << enum vy_expr_kind) */
	uint32_t binops;  /* bit (1 << enum vy_binop) */
	uint64_t unops;   /* bit (1 << enum vy_unop) */
	uint32_t atomics; /* bit (1 << enum vy_atomic_op) */
	uint32_t reduces; /* bit (1 << enum vy_reduce_op) */
};

/* Every operation of IR version 1. */
void vy_op_set_all(struct vy_op_set *set);

#define VY_DEVICE_MAX_HEAPS 16
#define VY_DEVICE_NAME_MAX 256

struct vy_memory_heap {
	uint64_t total_bytes;
	uint64_t used_bytes; /* 0 where the device cannot tell */
	bool device_local;
};

/*
 * Facts about the device behind a backend, for planning, lowering (DESIGN.md §4.4) and
 * `vyrectl devices`. 0 and false mean "none" or "not known".
 */
struct vy_device_profile {
	const char *backend; /* the backend id; static */
	char name[VY_DEVICE_NAME_MAX];
	char driver_info[VY_DEVICE_NAME_MAX];
	uint32_t vendor_id;
	uint32_t device_id;
	uint32_t driver_version;
	uint8_t pipeline_cache_uuid[16];
	/* The physical device's identity (Vulkan's deviceUUID): two handles with the same one
	 * are one GPU. has_device_uuid is false where the backend has no physical device. */
	bool has_device_uuid;
	uint8_t device_uuid[16];

	bool supports_subgroup_ops;
	bool has_subgroup_shuffle;
	uint32_t subgroup_size;
	bool supports_indirect_dispatch;
	bool supports_specialization_constants;
	bool supports_f16;
	bool supports_bf16;
	bool supports_tensor_cores;
	bool supports_trap_propagation;
	bool has_shared_memory;
	uint32_t max_native_int_width; /* bits */

	uint32_t max_workgroup_size[3];
	uint32_t max_workgroup_invocations;
	uint32_t max_workgroup_count[3];
	uint64_t max_shared_bytes;
	uint64_t max_storage_buffer_bytes;
	uint32_t compute_units;

	/* Float behaviour measured by the device probe (§4.4). */
	bool fma_fused;        /* fma() is a true fused multiply-add */
	bool div_exact;        /* '/' is correctly rounded */
	bool sqrt_exact;       /* sqrt() is correctly rounded */
	bool keeps_subnormals; /* subnormal results are kept, not flushed */
	bool fold_exact;   /* the compiler keeps +-0, inf, NaN when it folds constant operands */
	bool select_exact; /* a select between two constants keeps their bits */
	/* Loop passes an invocation may take over all its loops before the driver leaves them on
	 * its own (llvmpipe: 65,535); 0 when the probe found no such limit. */
	uint32_t loop_passes;

	bool timestamps;            /* device_ns can be measured */
	double timestamp_period_ns; /* nanoseconds per timestamp tick */
	bool unified_memory;        /* host and device share memory: no staging copies */
	bool cpu_device; /* a CPU implementation: a thread that spins takes a core from its work */
	uint32_t n_heaps;
	struct vy_memory_heap heaps[VY_DEVICE_MAX_HEAPS];
};

/* Counters of a backend's own compiled-pipeline cache. */
struct vy_pipeline_cache_stats {
	uint64_t entries;
	uint64_t bytes;
	uint64_t hits;
	uint64_t misses;
	uint64_t evictions;
	uint64_t compile_ns;
};

/*
 * Faults a backend can be told to produce, so that its callers' handling of failures the wire
 * cannot cause is tested on a healthy device (DESIGN.md §7.8). X(suffix, name).
 *   DEVICE_LOST    the device counts as lost at once: operations fail DEVICE_LOST until
 *                  try_recover succeeds
 *   COMPILE        the next program compiled (not found in the backend's own cache) fails
 *                  KERNEL_COMPILE_FAILED
 *   DISPATCH       the next dispatch fails DISPATCH_FAILED before it reaches the device
 *   OUT_OF_MEMORY  the next resident allocation or dispatch fails OUT_OF_MEMORY
 * Each is armed once and fires once.
 */
#define VY_FAULT_MAP(X)                                                                            \
	X(DEVICE_LOST, "device_lost")                                                              \
	X(COMPILE, "compile")                                                                      \
	X(DISPATCH, "dispatch")                                                                    \
	X(OUT_OF_MEMORY, "out_of_memory")

#define VY__ENUM_FAULT(suffix, name) VY_FAULT_##suffix,
enum vy_fault { VY_FAULT_MAP(VY__ENUM_FAULT) VY_FAULT_COUNT };
#undef VY__ENUM_FAULT

/* "device_lost", ...; "?" for a value outside the enum. */
const char *vy_fault_name(enum vy_fault fault);
/* The fault named `name`; false for an unknown name. */
bool vy_fault_parse(const char *name, enum vy_fault *out);

struct vy_backend;
struct vy_pipeline;
struct vy_pending;

struct vy_graph_plan;
struct vy_graph_step_run;
struct vy_graph_recording;

/*
 * The vtable. Every entry receives the backend first. Entries that fill outputs receive them
 * empty (the wrappers clear them) and push one buffer per output; on failure the wrappers empty
 * them again, so an entry need not clean up what it pushed.
 */
struct vy_backend_ops {
	/* Required. */
	int (*dispatch)(struct vy_backend *b, const struct vy_program *program,
		const struct vy_bytes *inputs, size_t n_inputs,
		const struct vy_dispatch_config *config, struct vy_outputs *outputs,
		struct vy_err *err);

	/* Free the backend (after shutdown). NULL: nothing to free. */
	void (*destroy)(struct vy_backend *b);
	/* Implementation version for reports and certificates. */
	const char *(*version)(struct vy_backend *b);
	void (*supported_ops)(struct vy_backend *b, struct vy_op_set *out);

	/* May take buffers out of `inputs` (vy_outputs_take) to reuse them; the wrapper frees
	 * whatever is left there. */
	int (*dispatch_owned)(struct vy_backend *b, const struct vy_program *program,
		struct vy_outputs *inputs, const struct vy_dispatch_config *config,
		struct vy_outputs *outputs, struct vy_err *err);
	/* Receives the caller's outputs as they are, to reuse their buffers; replaces them. */
	int (*dispatch_into)(struct vy_backend *b, const struct vy_program *program,
		const struct vy_bytes *inputs, size_t n_inputs,
		const struct vy_dispatch_config *config, struct vy_outputs *outputs,
		struct vy_err *err);
	/* As dispatch_into, and fills `timing` (received with every figure VY_TIMING_NONE but
	 * wall_ns, which is 0). */
	int (*dispatch_timed)(struct vy_backend *b, const struct vy_program *program,
		const struct vy_bytes *inputs, size_t n_inputs,
		const struct vy_dispatch_config *config, struct vy_outputs *outputs,
		struct vy_timing *timing, struct vy_err *err);

	int (*resident_alloc)(
		struct vy_backend *b, size_t len, struct vy_resource *out, struct vy_err *err);
	int (*resident_upload)(struct vy_backend *b, const struct vy_resource *res, size_t offset,
		struct vy_bytes data, struct vy_err *err);
	int (*resident_download)(struct vy_backend *b, const struct vy_resource *res, size_t offset,
		uint8_t *dst, size_t len, struct vy_err *err);
	int (*resident_free)(struct vy_backend *b, struct vy_resource res, struct vy_err *err);
	int (*resident_dispatch)(struct vy_backend *b, const struct vy_program *program,
		const struct vy_resource *resources, size_t n_resources,
		const struct vy_dispatch_config *config, struct vy_timing *timing,
		struct vy_err *err);

	/* One run of a checked graph from a recording the backend keeps in *rec between runs
	 * (graph_run.h); graph_forget drops that recording. */
	int (*graph_run)(struct vy_backend *b, const struct vy_graph_plan *plan,
		const struct vy_graph_step_run *steps, const struct vy_bytes *inputs,
		const struct vy_resource *residents, uint32_t timeout_ms,
		struct vy_outputs *outputs, uint64_t *step_ns, struct vy_graph_recording **rec,
		struct vy_err *err);
	void (*graph_forget)(struct vy_backend *b, struct vy_graph_recording *rec);
	/* As graph_run without step times, returning once the run is on the device: its outputs
	 * and errors come from the handle stored in *out (see vy_backend_graph_start). */
	int (*graph_start)(struct vy_backend *b, const struct vy_graph_plan *plan,
		const struct vy_graph_step_run *steps, const struct vy_bytes *inputs,
		const struct vy_resource *residents, uint32_t timeout_ms,
		struct vy_graph_recording **rec, struct vy_pending **out, struct vy_err *err);

	/* Stores a native pipeline in *out (see struct vy_pipeline), or leaves *out NULL for "no
	 * native pipeline", in which case the wrapper makes a passthrough one. */
	int (*compile_native)(struct vy_backend *b, const struct vy_program *program,
		const struct vy_dispatch_config *config, struct vy_pipeline **out,
		struct vy_err *err);
	/* Starts the dispatch and stores a handle in *out; the handle must not borrow `inputs`. */
	int (*dispatch_async)(struct vy_backend *b, const struct vy_program *program,
		const struct vy_bytes *inputs, size_t n_inputs,
		const struct vy_dispatch_config *config, struct vy_pending **out,
		struct vy_err *err);
	bool (*pipeline_cache_stats)(struct vy_backend *b, struct vy_pipeline_cache_stats *out);

	bool (*supports)(struct vy_backend *b, enum vy_capability cap);
	void (*max_workgroup_size)(struct vy_backend *b, uint32_t out[3]);
	uint32_t (*max_workgroups_per_dimension)(struct vy_backend *b);
	uint32_t (*max_workgroup_invocations)(struct vy_backend *b);
	uint32_t (*subgroup_size)(struct vy_backend *b);
	uint64_t (*max_storage_buffer_bytes)(struct vy_backend *b);
	/* Receives the default profile already filled in and overrides what the device knows. */
	void (*device_profile)(struct vy_backend *b, struct vy_device_profile *out);

	int (*prepare)(struct vy_backend *b, struct vy_err *err);
	int (*flush)(struct vy_backend *b, struct vy_err *err);
	int (*shutdown)(struct vy_backend *b, struct vy_err *err);
	bool (*device_lost)(struct vy_backend *b);
	int (*try_recover)(struct vy_backend *b, struct vy_err *err);
	int (*inject_fault)(struct vy_backend *b, enum vy_fault fault, struct vy_err *err);

	/* Stores a new import id (never 0) in *out_id. */
	int (*host_import)(struct vy_backend *b, const void *ptr, size_t len, uint64_t *out_id,
		struct vy_err *err);
	/* Receives any id, known or not. */
	void (*host_release)(struct vy_backend *b, uint64_t id);
};

/*
 * One backend instance. The implementation embeds or points to it; `ops` and `id` are static.
 * The id is unique among the backends linked into the process ("vulkan", "reference").
 */
struct vy_backend {
	const struct vy_backend_ops *ops; /* borrowed, static; ops->dispatch is not NULL */
	const char *id;                   /* borrowed, static */
	void *impl;                       /* the implementation's state */
};

/* Destroy a backend through ops->destroy. NULL is accepted. */
void vy_backend_destroy(struct vy_backend *b);

const char *vy_backend_version(struct vy_backend *b);
void vy_backend_supported_ops(struct vy_backend *b, struct vy_op_set *out);
/*
 * Check that every operation of `program` is in the backend's supported set. Returns 0, or
 * VY_E_UNSUPPORTED_FEATURE naming the first unsupported operation, its location and the backend.
 */
int vy_backend_check_ops(
	struct vy_backend *b, const struct vy_program *program, struct vy_err *err);

/*
 * Run `program` on `inputs` (n_inputs views, borrowed for the call; NULL when n_inputs is 0).
 * `outputs` must be initialized; its previous buffers are freed and replaced by the results.
 * `config` may be NULL for every default; so may it in every call below that takes one.
 */
int vy_backend_dispatch(struct vy_backend *b, const struct vy_program *program,
	const struct vy_bytes *inputs, size_t n_inputs, const struct vy_dispatch_config *config,
	struct vy_outputs *outputs, struct vy_err *err);
/*
 * As vy_backend_dispatch, with inputs whose buffers the backend takes: `inputs` is empty when
 * the call returns, whatever the result.
 */
int vy_backend_dispatch_owned(struct vy_backend *b, const struct vy_program *program,
	struct vy_outputs *inputs, const struct vy_dispatch_config *config,
	struct vy_outputs *outputs, struct vy_err *err);
/*
 * As vy_backend_dispatch, letting a backend that implements dispatch_into reuse the buffers that
 * `outputs` already holds (a caller that dispatches repeatedly keeps one list).
 */
int vy_backend_dispatch_into(struct vy_backend *b, const struct vy_program *program,
	const struct vy_bytes *inputs, size_t n_inputs, const struct vy_dispatch_config *config,
	struct vy_outputs *outputs, struct vy_err *err);
/* As vy_backend_dispatch_into, and fills *timing (wall_ns always; the rest where measured). */
int vy_backend_dispatch_timed(struct vy_backend *b, const struct vy_program *program,
	const struct vy_bytes *inputs, size_t n_inputs, const struct vy_dispatch_config *config,
	struct vy_outputs *outputs, struct vy_timing *timing, struct vy_err *err);

/* Allocate `len` bytes on the device; *out describes the new resource. */
int vy_backend_resident_alloc(
	struct vy_backend *b, size_t len, struct vy_resource *out, struct vy_err *err);
/* Write `data` at `offset` of the resource. */
int vy_backend_resident_upload(struct vy_backend *b, const struct vy_resource *res, size_t offset,
	struct vy_bytes data, struct vy_err *err);
/* Read `len` bytes at `offset` of the resource into `dst`. */
int vy_backend_resident_download(struct vy_backend *b, const struct vy_resource *res, size_t offset,
	uint8_t *dst, size_t len, struct vy_err *err);
int vy_backend_resident_free(struct vy_backend *b, struct vy_resource res, struct vy_err *err);
/*
 * Dispatch on resident buffers: one resource per non-workgroup buffer of the program, in binding
 * order; the program reads and writes them in place. Fills *timing.
 */
int vy_backend_resident_dispatch(struct vy_backend *b, const struct vy_program *program,
	const struct vy_resource *resources, size_t n_resources,
	const struct vy_dispatch_config *config, struct vy_timing *timing, struct vy_err *err);

/* Capability query; false unless the backend answers true. */
bool vy_backend_supports(struct vy_backend *b, enum vy_capability cap);
void vy_backend_max_workgroup_size(struct vy_backend *b, uint32_t out[3]);
uint32_t vy_backend_max_workgroups_per_dimension(struct vy_backend *b);
uint32_t vy_backend_max_workgroup_invocations(struct vy_backend *b);
/* Native subgroup width, or 0 when the backend cannot tell. */
uint32_t vy_backend_subgroup_size(struct vy_backend *b);
/* Largest storage buffer in bytes, or 0 when the backend has not reported a limit. */
uint64_t vy_backend_max_storage_buffer_bytes(struct vy_backend *b);
void vy_backend_device_profile(struct vy_backend *b, struct vy_device_profile *out);
/* Fill *out and return true when the backend keeps counters of its own pipeline cache. */
bool vy_backend_pipeline_cache_stats(struct vy_backend *b, struct vy_pipeline_cache_stats *out);

/* Warm up before the first dispatch. */
int vy_backend_prepare(struct vy_backend *b, struct vy_err *err);
/* Finish all queued work. */
int vy_backend_flush(struct vy_backend *b, struct vy_err *err);
/* Release device resources; afterwards only vy_backend_destroy may be called. */
int vy_backend_shutdown(struct vy_backend *b, struct vy_err *err);
/* Whether the device was lost since the last successful dispatch. */
bool vy_backend_device_lost(struct vy_backend *b);
/* Reacquire a lost device and drop its caches; recovery is opt-in, so the default refuses. */
int vy_backend_try_recover(struct vy_backend *b, struct vy_err *err);
/* Arm `fault` (see enum vy_fault); UNSUPPORTED_FEATURE where the backend has no such hook. */
int vy_backend_inject_fault(struct vy_backend *b, enum vy_fault fault, struct vy_err *err);

/*
 * Let the device read host memory in place: import what it can of the `len` bytes at `ptr` and
 * store a new id, never 0, in *id. Dispatches then name the import in their config's `imports`.
 * The memory must stay mapped, and hold the bytes the dispatches name, until
 * vy_backend_host_release returns; it must be mapped writable (the device only reads it, but
 * drivers pin pages for writing, and NVIDIA's, refusing a read-only mapping, then fails later
 * allocations: the Vulkan backend refuses such memory itself). A backend may import less than
 * asked (a device imports whole aligned pages); an input outside what it imported is read from
 * its view as usual. An import is only a faster path, so callers treat any error as "read the
 * views": UNSUPPORTED_FEATURE where the backend or device cannot import (the default) or
 * refuses this memory, OUT_OF_MEMORY (also how a driver may refuse), DEVICE_LOST. The backend
 * drops its imports when its device is lost: their ids become unknown, dispatches naming them
 * read the views, and the caller may import again after recovery.
 */
int vy_backend_host_import(
	struct vy_backend *b, const void *ptr, size_t len, uint64_t *id, struct vy_err *err);
/*
 * Drop import `id` (an unknown or dropped id is ignored). Work already submitted that reads it
 * finishes first, so the caller may unmap the memory once this returns. Call it when no dispatch
 * naming the import is starting.
 */
void vy_backend_host_release(struct vy_backend *b, uint64_t id);

/*
 * Fill `err` with UNSUPPORTED_FEATURE for `feature` on backend `b` and return the code: the
 * message a backend gives for something it does not do (the defaults above use it too).
 */
int vy_backend_unsupported(struct vy_backend *b, const char *feature, struct vy_err *err);

/*
 * A compiled pipeline: a program prepared once for repeated dispatches, bit-identical to
 * vy_backend_dispatch of the program it came from. A pipeline does not borrow that program (a
 * native one keeps what it needs; the passthrough one keeps a copy), but it borrows its backend,
 * which must outlive it.
 */
struct vy_pipeline_ops {
	int (*dispatch)(struct vy_pipeline *pl, const struct vy_bytes *inputs, size_t n_inputs,
		const struct vy_dispatch_config *config, struct vy_outputs *outputs,
		struct vy_err *err);
	/* Optional: start a dispatch as vy_backend_dispatch_async does, with the work of
	 * finding the program's kernel already done. NULL: the dispatch runs at once and the
	 * handle comes back ready. */
	int (*dispatch_async)(struct vy_pipeline *pl, const struct vy_bytes *inputs,
		size_t n_inputs, const struct vy_dispatch_config *config, struct vy_pending **out,
		struct vy_err *err);
	void (*destroy)(struct vy_pipeline *pl);
};

/*
 * A bound on the bytes of a disk cache that several writers share (the daemon's program files and
 * a backend's compiled files). Before writing a file of `bytes`, a writer calls reserve, which
 * removes the least recently used files of the whole cache until the new one fits and returns
 * true, or returns false when the file cannot fit at all (the writer then skips it); after the
 * write, done or failed, it calls release with the same count. A writer records a use of a file
 * it read by setting the file's modification time to now: that time orders the files.
 * Thread-safety: both functions may be called from any thread.
 */
struct vy_disk_quota {
	bool (*reserve)(struct vy_disk_quota *q, uint64_t bytes);
	void (*release)(struct vy_disk_quota *q, uint64_t bytes, bool written);
};

struct vy_pipeline {
	const struct vy_pipeline_ops *ops; /* borrowed, static */
	struct vy_backend *backend;        /* borrowed */
	bool native;                       /* false for the passthrough pipeline */
	bool from_disk; /* its code came from the backend's disk cache, not from a compiler */
	void *impl;
};

/*
 * Compile `program` for repeated dispatch; stores a new pipeline in *out (free it with
 * vy_pipeline_destroy) or leaves *out NULL and returns an error, which means the program cannot
 * dispatch on this backend by any path.
 */
int vy_backend_compile_native(struct vy_backend *b, const struct vy_program *program,
	const struct vy_dispatch_config *config, struct vy_pipeline **out, struct vy_err *err);
/* Dispatch a compiled pipeline; `outputs` as for vy_backend_dispatch. */
int vy_pipeline_dispatch(struct vy_pipeline *pl, const struct vy_bytes *inputs, size_t n_inputs,
	const struct vy_dispatch_config *config, struct vy_outputs *outputs, struct vy_err *err);
/* Start a dispatch of a compiled pipeline; the handle as for vy_backend_dispatch_async. */
int vy_pipeline_dispatch_async(struct vy_pipeline *pl, const struct vy_bytes *inputs,
	size_t n_inputs, const struct vy_dispatch_config *config, struct vy_pending **out,
	struct vy_err *err);
/* NULL is accepted. */
void vy_pipeline_destroy(struct vy_pipeline *pl);

/*
 * A dispatch in flight. Errors that surface only while the work runs come back from
 * vy_pending_wait, not from vy_backend_dispatch_async.
 */
struct vy_pending_ops {
	bool (*is_ready)(struct vy_pending *p);
	/* Block until done, move the results into `outputs` (received empty), free the handle. */
	int (*wait)(struct vy_pending *p, struct vy_outputs *outputs, struct vy_err *err);
	/* Abandon the handle without waiting for its results. */
	void (*destroy)(struct vy_pending *p);
};

struct vy_pending {
	const struct vy_pending_ops *ops; /* borrowed, static */
	void *impl;
};

/* Start a dispatch; stores a new handle in *out, or leaves it NULL and returns an error. */
int vy_backend_dispatch_async(struct vy_backend *b, const struct vy_program *program,
	const struct vy_bytes *inputs, size_t n_inputs, const struct vy_dispatch_config *config,
	struct vy_pending **out, struct vy_err *err);
/* A handle whose work is done: vy_pending_wait gives `outputs`, which it takes over (left
 * empty). */
struct vy_pending *vy_pending_done(struct vy_outputs *outputs);
/* Whether vy_pending_wait would return without blocking. */
bool vy_pending_is_ready(struct vy_pending *p);
/*
 * Wait for the dispatch, replace the buffers of `outputs` by its results, and free the handle
 * (whatever the result: the handle is consumed).
 */
int vy_pending_wait(struct vy_pending *p, struct vy_outputs *outputs, struct vy_err *err);
/* Abandon a handle without its results. NULL is accepted. */
void vy_pending_destroy(struct vy_pending *p);

#endif
