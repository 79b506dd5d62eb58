/*
 * Internals of the Vulkan backend shared by vk_backend.c (the contract's entries, device life,
 * resident buffers), vk_kernel.c (compiling programs and caching the results) and vk_dispatch.c
 * (running one dispatch). Tests include it for the hooks at the end.
 *
 * Objects:
 *   kernel   one program, compiled: the validated program, its binding plan, its grid-sync
 *            split, and per segment the math-lowered program, a shader module and its
 *            interface. Kept in an LRU cache keyed by the program's canonical bytes (XXH3-128 to
 *            find, the bytes to confirm).
 *   variant  the compute pipelines of a kernel for one (spec values, workgroup size).
 *   job      one dispatch in flight: a context, the buffers bound, the trap sidecar.
 *   import   host memory the device reads in place (VK_EXT_external_memory_host), in a table by
 *            random id; a job whose input lies in one copies it from there on the device.
 *
 * Device life: every entry that touches the device holds `life` for reading; recovery after a
 * lost device takes it for writing, destroys every Vulkan object (kernels keep their programs and
 * are rebuilt on next use: `generation` tells them apart), and opens the device again.
 *
 * Thread-safety: see vulkan.h. Lock order: life first; then exec, which may take cache (a job's
 * kernel reference dropped at completion) and memory; cache, memory and imports take nothing
 * after them.
 */
#ifndef VY_BACKEND_VULKAN_VK_BACKEND_H
#define VY_BACKEND_VULKAN_VK_BACKEND_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "binding.h"
#include "grid_sync.h"
#include "launch.h"
#include "spec.h"
#include "vk_codegen.h"
#include "vk_device.h"
#include "vk_disk.h"
#include "vk_exec.h"
#include "vk_memory.h"
#include "vk_pipeline.h"
#include "vk_probe.h"
#include "vk_shader.h"
#include "vk_xfer.h"
#include "vulkan.h"

struct vy__vk_pending;

struct vy__vk_segment {
	struct vy_program *written; /* owned: the segment as the program states it, validated */
	/* owned: `written` math-lowered, what the shader runs; `written` itself when nothing needed
	 * lowering */
	struct vy_program *program;
	uint32_t *origins; /* owned: the `written` node of each node of `program`, or NULL */
	uint32_t n_origins;
	struct vy_vk_shader_layout layout;
	const struct vy_vk_layout *vk_layout; /* borrowed from the layout cache */
	VkShaderModule module;
	/* The coarse form's module (vk_coarse.c), made by the first coarse variant; guarded by the
	 * kernel's variants_lock until then. */
	VkShaderModule coarse_module;
	uint32_t subgroup_size; /* to pin, or 0 */
	/* owned: SPIR-V compiled now, written to the disk cache once a pipeline of it is built (a
	 * module whose pipelines all fail is not kept); NULL once written or when not to write */
	uint32_t *unsaved;
	size_t unsaved_words;
	uint8_t spirv_key[16];
};

/* Which pipelines of a kernel a launch takes, besides its spec values and workgroup size. */
struct vy__vk_form {
	/* VY_VK_COARSE when every invocation runs that many logical workgroups (launch.workgroups
	 * then covers ceil(launch.grid[0] / VY_VK_COARSE)): the coarse form; else 0. */
	uint32_t coarse;
	bool uncounted; /* VY_VK_COUNT_SPEC_ID false: vy__vk_uncounted for the loop limit */
	/* VY_VK_DIRECT_SPEC_ID true: a plain launch of its logical grid as it is, in one part */
	bool direct;
};

struct vy__vk_variant {
	struct vy_spec_map spec; /* owned copy of the values it was made for */
	uint32_t workgroup_size[3];
	struct vy__vk_form form;
	VkPipeline *pipelines; /* owned, one per segment */
	struct vy__vk_variant *next;
};

/* A spec constant of the program, as a dispatch may set it. */
struct vy__vk_spec_name {
	const char *name; /* borrowed from the kernel's program */
	enum vy_type type;
};

struct vy__vk_kernel {
	_Atomic uint32_t refs;
	struct vy__vk_backend *b; /* borrowed */
	uint64_t generation;      /* the device generation its Vulkan objects belong to */
	uint8_t id[16];           /* XXH3-128 of the canonical bytes */
	uint64_t hash;
	uint8_t *canonical; /* owned */
	size_t canonical_len;
	struct vy_program *program;      /* owned: validated, as written */
	struct vy_binding_plan *plan;    /* owned: built without inputs */
	unsigned features;               /* vy_launch_features_scan of the whole program */
	struct vy_grid_sync_split split; /* views into `program`, to place segment errors */
	uint32_t n_segments;
	struct vy__vk_segment *segments; /* owned */
	uint32_t n_spec_names;
	struct vy__vk_spec_name *spec_names; /* owned, sorted by name */
	uint32_t max_spec_id;
	pthread_mutex_t variants_lock;
	struct vy__vk_variant *variants; /* owned */
	uint64_t bytes;                  /* SPIR-V bytes, for the cache's accounting */
	bool from_disk;                  /* every segment's SPIR-V came from the disk cache */
	bool cached;                     /* in the cache's table */
	struct vy__vk_kernel *chain;     /* hash chain */
	struct vy__vk_kernel *lru_prev;
	struct vy__vk_kernel *lru_next;
	struct vy__vk_kernel *all_prev; /* every live kernel, for recovery */
	struct vy__vk_kernel *all_next;
};

struct vy__vk_resident {
	uint64_t id;
	uint64_t len;
	struct vy_vk_slice slice; /* zeroed when len is 0 */
	_Atomic uint32_t refs;    /* the table's and each job's using it */
	struct vy__vk_backend *b;
	struct vy__vk_resident *next;
};

/* Host memory imported as a transfer source: the aligned pages inside what the caller gave. */
struct vy__vk_import {
	uint64_t id;
	uintptr_t ptr;            /* the first byte the caller gave: refs' offsets count from it */
	uintptr_t base;           /* the first byte imported */
	VkDeviceSize size;        /* bytes imported from `base` */
	VkDeviceMemory memory;    /* owned */
	VkBuffer buffer;          /* owned: TRANSFER_SRC over the whole range */
	_Atomic uint32_t refs;    /* the table's and each job's reading it */
	struct vy_vk_device *dev; /* borrowed */
	struct vy__vk_import *next;
};

#define VY__VK_IMPORT_BUCKETS 256
#define VY__VK_CACHE_BUCKETS 1024
#define VY__VK_CACHE_MAX_ENTRIES 512

struct vy__vk_backend {
	struct vy_backend base;
	char *cache_dir; /* owned, or NULL */
	uint8_t cache_key[VY_VK_DISK_MAC_KEY_BYTES];
	bool validation;
	bool plain_code;     /* vy_vulkan_options.plain_code */
	unsigned test_flags; /* VY__VK_TEST_* */
	char version[128];

	pthread_rwlock_t life;
	bool open; /* device objects exist */
	bool shut;
	_Atomic bool lost;
	_Atomic unsigned faults; /* armed one-shot faults: bit (1 << enum vy_fault) */
	_Atomic uint64_t generation;
	struct vy_vk_device dev;
	struct vy_vk_memory mem;
	struct vy_vk_exec exec;
	struct vy_vk_pipelines pipes;
	struct vy_vk_disk disk;
	struct vy_vk_compiler *cc;
	struct vy_vk_probe probe;
	struct vy_vk_codegen_options cg;
	bool subgroups; /* VY_CAP_SUBGROUP_OPS */

	uint32_t
		kernel_limit; /* kernels the table keeps (vy_vulkan_options.kernel_cache_entries) */
	struct vy_disk_quota *disk_quota; /* borrowed, or NULL */
	_Atomic uint64_t destroyed;       /* pipelines destroyed since the last vy__vk_reap */

	pthread_mutex_t cache_lock;
	struct vy__vk_kernel *buckets[VY__VK_CACHE_BUCKETS];
	struct vy__vk_kernel *lru_head; /* most recent */
	struct vy__vk_kernel *lru_tail;
	struct vy__vk_kernel *all;
	struct vy_pipeline_cache_stats stats;

	pthread_mutex_t pending_lock;
	struct vy__vk_pending *pendings; /* live async handles, invalidated by recovery */

	pthread_mutex_t resident_lock;
	struct vy__vk_resident **res_buckets;
	size_t res_n_buckets;
	size_t res_count;

	pthread_mutex_t import_lock;
	struct vy__vk_import *imports[VY__VK_IMPORT_BUCKETS];
	size_t import_count;
	_Atomic uint64_t imported_inputs; /* inputs jobs copied from imports */
	_Atomic uint64_t imported_bytes;

	pthread_mutex_t graph_lock;
	struct vy_graph_recording *recordings; /* live recorded graphs (vk_graph.c) */
};

/* Drop a reference to a resident buffer (a hold release function); the last frees it. */
void vy__vk_resident_release(void *resident);

/* The resident buffer `id`, with a reference the caller drops. Errors: NOT_FOUND. */
int vy__vk_resident_get(
	struct vy__vk_backend *b, uint64_t id, struct vy__vk_resident **out, struct vy_err *err);

/* 0 while the device is open and not lost; SHUTTING_DOWN or DEVICE_LOST otherwise. Call with
 * `life` held. */
int vy__vk_usable(struct vy__vk_backend *b, struct vy_err *err);

/* The backend behind a struct vy_backend made by vy_vulkan_backend_create. */
static inline struct vy__vk_backend *vy__vk_from(struct vy_backend *b)
{
	return (struct vy__vk_backend *)b;
}

/*
 * Turn an error of segment `seg` of `k` into one of the whole program, as the reference backend
 * words it (planner/grid_sync.h); nothing changes for a program without grid_sync. Returns `rc`.
 */
int vy__vk_segment_error(const struct vy__vk_kernel *k, uint32_t seg, int rc, struct vy_err *err);

/*
 * Check a workgroup-size override: BAD_REQUEST for a zero axis, UNSUPPORTED_FEATURE beyond the
 * device's limits.
 */
int vy__vk_check_workgroup(struct vy__vk_backend *b, const uint32_t wg[3], struct vy_err *err);

/*
 * Whether `fault` was armed (vy_backend_inject_fault), disarming it: the caller then fails as
 * the fault says. Fills `err` for COMPILE, DISPATCH and OUT_OF_MEMORY.
 */
bool vy__vk_fault_take(struct vy__vk_backend *b, enum vy_fault fault, struct vy_err *err);

/* Record a failure code: DEVICE_LOST marks the device lost. Returns `rc`. */
int vy__vk_note(struct vy__vk_backend *b, int rc);

/*
 * The kernel of `program` (taking a reference): from the cache, or compiled and inserted. Call
 * with `life` held for reading. Errors: INVALID_PROGRAM, UNSUPPORTED_FEATURE and
 * KERNEL_COMPILE_FAILED from validation, lowering, code generation and shaderc (prefixed with
 * "grid_sync segment K: " where a segment fails), and those of creating Vulkan objects.
 */
int vy__vk_kernel_get(struct vy__vk_backend *b, const struct vy_program *program,
	struct vy__vk_kernel **out, struct vy_err *err);
void vy__vk_kernel_ref(struct vy__vk_kernel *k);
void vy__vk_kernel_unref(struct vy__vk_kernel *k);
/* vy__vk_kernel_unref as a hold release function. */
void vy__vk_kernel_release(void *kernel);

/*
 * The pipelines of `k` for the spec values and workgroup size of a dispatch (made on first use).
 * Errors: BAD_REQUEST for spec values the program has no constant for or of the wrong kind, and
 * those of vkCreateComputePipelines.
 */
int vy__vk_variant_get(struct vy__vk_kernel *k, const struct vy_spec_map *spec,
	const uint32_t workgroup_size[3], struct vy__vk_form form, struct vy__vk_variant **out,
	struct vy_err *err);

/*
 * Whether a launch of `k` under a loop limit of `limit` iterations runs uncounted
 * (VY_VK_COUNT_SPEC_ID): some segment can, and no segment's loops can run more than `limit`
 * iterations in an invocation, so none could trap at the limit.
 */
bool vy__vk_uncounted(const struct vy__vk_kernel *k, uint64_t limit);

/*
 * Destroy the Vulkan objects of every live kernel and empty the cache (before closing the
 * device); kernels still referenced keep their programs and are recompiled on their next use.
 */
void vy__vk_kernels_drop_device(struct vy__vk_backend *b);

/*
 * Import what the device can of the `len` bytes at `ptr` (vy_backend_host_import) and enter it
 * into the table; *id is its new id. Call with `life` held for reading on an open device.
 * Errors: UNSUPPORTED_FEATURE (no VK_EXT_external_memory_host, no whole aligned page in the
 * range, pages not mapped readable and writable, the driver refuses this memory), OUT_OF_MEMORY,
 * DEVICE_LOST.
 */
int vy__vk_import_add(
	struct vy__vk_backend *b, const void *ptr, size_t len, uint64_t *id, struct vy_err *err);
/*
 * Take import `id` out of the table (an unknown id is ignored); when jobs still hold it, wait
 * for the submitted work first, so that the device no longer reads the memory. Call with `life`
 * held for reading.
 */
void vy__vk_import_remove(struct vy__vk_backend *b, uint64_t id);
/*
 * The import `ref` names, with a reference for the caller, when it holds all `len` bytes at
 * `data` exactly where the ref says; their offset in its buffer in *src_offset. NULL otherwise.
 */
struct vy__vk_import *vy__vk_import_find(struct vy__vk_backend *b, const struct vy_host_ref *ref,
	const void *data, uint64_t len, VkDeviceSize *src_offset);
/* Drop a reference to an import (a hold release function); the last frees it. */
void vy__vk_import_release(void *import);
/* Drop the table's reference to every import (before the device closes). */
void vy__vk_imports_clear(struct vy__vk_backend *b);

/* One dispatch's buffers: host inputs, or resident resources. */
struct vy__vk_request {
	const struct vy_bytes *inputs; /* NULL for a resident dispatch */
	size_t n_inputs;
	struct vy__vk_resident *const *resources; /* NULL for a host dispatch */
	size_t n_resources;
	const struct vy_dispatch_config *config;
	bool timed;
};

/* One dispatch. Lives on the caller's stack for a synchronous dispatch, in the pending handle for
 * an asynchronous one. */
struct vy__vk_job {
	struct vy__vk_kernel *k; /* a reference, dropped when the context is released */
	struct vy__vk_variant *v;
	struct vy_vk_ctx *ctx;
	bool resident;
	bool timed;
	uint64_t timeout_ns;
	uint64_t start_ns;
	uint64_t enqueue_ns;
	uint32_t imported_inputs; /* inputs copied from imports */
	uint64_t imported_bytes;
	struct vy_vk_pack pack;             /* the small buffers shaders write, on a discrete GPU */
	uint32_t n_bufs;                    /* the non-workgroup buffers, then the sidecar */
	uint32_t buf_of[VY_IR_MAX_BUFFERS]; /* program buffer index -> bufs index */
	/* The non-workgroup buffers in plan order, then the trap sidecar: one range per segment. */
	struct vy_vk_xfer bufs[VY_IR_MAX_BUFFERS + 1];
	uint32_t sidecar;
	uint32_t sidecar_stride;
	uint32_t n_outputs;
	uint32_t output_buf[VY_IR_MAX_BUFFERS]; /* output i -> bufs index */
	struct vy_launch launch;                /* the whole program's, for every segment */
	struct vy__vk_form form;
	/* A launch of many workgroups runs as n_parts indirect dispatches of `part_step` units
	 * along axis `part_axis` each, so that a stopped job skips the parts not yet started. */
	uint32_t n_parts; /* 0: one direct dispatch */
	uint32_t part_axis;
	uint32_t part_step;
	struct vy_vk_slice parts; /* the indirect arguments, owned by the context */
};

/*
 * Start a dispatch of `k` in `job` (caller storage), taking over the caller's reference to `k`
 * whatever the result: check the request, bind and upload, record and queue it (`now`: submit at
 * once). Call with `life` held for reading. Errors: BAD_REQUEST (inputs or resources that do not
 * match the plan, bad spec values or grids), UNSUPPORTED_FEATURE (a workgroup-size override above
 * the device's limits, a buffer larger than the device binds), OUT_OF_MEMORY, DEVICE_LOST. On
 * failure the job holds nothing.
 */
int vy__vk_job_start(struct vy__vk_backend *b, struct vy__vk_kernel *k,
	const struct vy__vk_request *req, bool now, struct vy__vk_job *job, struct vy_err *err);
/* Whether the job is done. */
bool vy__vk_job_ready(struct vy__vk_backend *b, struct vy__vk_job *job);
/*
 * Wait for the job, decode its traps and move its outputs into `outputs` (reusing the buffers it
 * holds where every length matches; NULL for a resident dispatch), fill `timing` when given, and
 * release what the job holds (on a timeout, once its work is done). Errors: TIMEOUT, TRAP,
 * DEVICE_LOST, OUT_OF_MEMORY.
 */
int vy__vk_job_finish(struct vy__vk_backend *b, struct vy__vk_job *job, struct vy_outputs *outputs,
	struct vy_timing *timing, struct vy_err *err);
/* Release a job without its results (its work may still run). */
void vy__vk_job_abandon(struct vy__vk_backend *b, struct vy__vk_job *job);

/*
 * The pieces of a dispatch that a recorded graph (vk_graph.c) puts together differently: the
 * launch of `k` for `config` over the binding plan `plan` (whose count-0 buffers carry the
 * element counts of this dispatch) into job->launch; the split of that launch into parts
 * (job->n_parts, part_axis, part_step; 0 parts for a launch too small to split) and the indirect
 * arguments of those parts written to `args` (3 words each); the dispatches of every segment of
 * job->k, bound to job->bufs through job->buf_of, with job->sidecar's ranges and the stop word of
 * `ctx`, from a record function; the barrier that orders one step's compute writes before the
 * next one's reads and writes, and the one that orders earlier submissions' writes before this
 * command buffer's work; and the traps of `k` read from a sidecar of `stride`-byte ranges, one per
 * segment, named as a dispatch names them (TRAP, or 0).
 */
int vy__vk_plan_launch(struct vy__vk_backend *b, struct vy__vk_kernel *k,
	const struct vy_binding_plan *plan, const struct vy_dispatch_config *config,
	struct vy__vk_job *job, struct vy_err *err);
uint32_t vy__vk_split_plan(struct vy_vk_exec *x, struct vy__vk_job *job);
void vy__vk_split_fill(const struct vy__vk_job *job, uint32_t *args);
int vy__vk_record_launches(struct vy__vk_backend *b, struct vy_vk_ctx *ctx, VkCommandBuffer cmd,
	const struct vy__vk_job *job, uint64_t loop_limit, struct vy_err *err);
void vy__vk_compute_barrier(struct vy_vk_device *d, VkCommandBuffer cmd);
void vy__vk_entry_barrier(struct vy_vk_device *d, VkCommandBuffer cmd);
int vy__vk_decode_sidecar(struct vy__vk_backend *b, const struct vy__vk_kernel *k,
	const uint8_t *side, uint32_t stride, struct vy_err *err);

/*
 * Recorded graphs (vk_graph.c): the backend's graph_run, graph_start and graph_forget entries, and,
 * before the device closes (`life` held for writing), the end of every recording's Vulkan objects:
 * a recording whose device went away is recorded anew on its next run.
 */
int vy__vk_graph_run(struct vy_backend *base, const struct vy_graph_plan *plan,
	const struct vy_graph_step_run *steps, const struct vy_bytes *inputs,
	const struct vy_resource *residents, uint32_t timeout_ms, struct vy_outputs *outputs,
	uint64_t *step_ns, struct vy_graph_recording **rec, struct vy_err *err);
void vy__vk_graph_forget(struct vy_backend *base, struct vy_graph_recording *rec);
int vy__vk_graph_start(struct vy_backend *base, const struct vy_graph_plan *plan,
	const struct vy_graph_step_run *steps, const struct vy_bytes *inputs,
	const struct vy_resource *residents, uint32_t timeout_ms, struct vy_graph_recording **rec,
	struct vy_pending **out, struct vy_err *err);
void vy__vk_graphs_drop_device(struct vy__vk_backend *b);

/* Test hooks. */

/* Act as if the device had reported VK_ERROR_DEVICE_LOST. */
void vy__vk_simulate_device_lost(struct vy_backend *b);
/*
 * vy_vulkan_backend_create taking the paths of other devices, so that they run on lavapipe too:
 * descriptor sets instead of push descriptors, host-visible and staged buffers instead of
 * unified memory, a smaller grid limit. Only the tests create a backend this way; vyred never
 * sets these flags.
 */
enum {
	VY__VK_TEST_NO_PUSH_DESCRIPTORS = 1u << 0,
	VY__VK_TEST_STAGING =
		1u << 1, /* as a discrete GPU: small buffers host-visible, large staged */
	VY__VK_TEST_COPY_ALL = 1u << 2,           /* with STAGING: stage even the smallest buffer */
	VY__VK_TEST_NO_NULL_DESCRIPTOR = 1u << 3, /* empty buffers bind a dummy range */
	/* As a device whose grid limit (maxComputeWorkGroupCount) is VY__VK_TEST_GRID_LIMITS: a
	 * 1-D launch of more than 16 workgroups folds over y, of more than 64 over z as well. */
	VY__VK_TEST_SMALL_GRID = 1u << 4,
	/* Every 1-D launch of an elementwise program runs coarse, however few its workgroups (a
	 * GPU runs only large ones coarse, a CPU device none). */
	VY__VK_TEST_COARSE_ALL = 1u << 5,
};
#define VY__VK_TEST_GRID_LIMITS                                                                    \
	{                                                                                          \
		16u, 4u, 65535u                                                                    \
	}
int vy__vk_backend_create_for_test(const struct vy_vulkan_options *opts, unsigned flags,
	struct vy_backend **out, struct vy_err *err);
/* Hold every later submission (`hold`) until called again with `hold` false. */
int vy__vk_hold_submissions(struct vy_backend *b, bool hold, struct vy_err *err);
/* The probe's findings of an open backend. */
const struct vy_vk_probe *vy__vk_backend_probe(struct vy_backend *b);
/* Compile GLSL with the backend's compiler (compile errors as a dispatch reports them). */
int vy__vk_backend_compile(struct vy_backend *b, const char *glsl, struct vy_err *err);

/*
 * After pipelines were destroyed, let the driver free them now (vy__vk_exec_reap) rather than at
 * the next dispatch; skipped (left to the next call) while a recovery holds b->life. Never
 * blocks. Call it holding no lock of the backend.
 */
void vy__vk_reap(struct vy__vk_backend *b);

#endif
