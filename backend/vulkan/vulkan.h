/*
 * The Vulkan backend (DESIGN.md §8): runs vyre programs on one Vulkan device through volk,
 * shaderc and the code generator of vk_codegen.h, behind the contract of backend/backend.h.
 *
 * A backend owns one device: its own instance, logical device, compute queue, buffer pools,
 * pipeline caches and (with a cache_dir) the disk cache of §7.3. When the device opens, a float
 * probe (§4.4) measures fma, '/', sqrt and subnormal behaviour; the code generator lowers by what
 * it found, and the device profile reports it.
 *
 * Contract answers: dispatch, dispatch_into and dispatch_timed; compile_native (a pipeline that
 * dispatches repeatedly without recompiling); dispatch_async (several jobs per vkQueueSubmit);
 * resident buffers (alloc, upload, download, free, resident_dispatch); device_profile and limits
 * from the device; capabilities: subgroup_ops where the device has basic, arithmetic, ballot and
 * shuffle subgroup operations in compute shaders, and grid_sync (segments run in one command
 * buffer, buffers staying on the device); everything else false (one queue: no async_compute).
 * prepare, flush (submit and wait for all work, save the pipeline cache), shutdown, device_lost
 * and try_recover (recreates the device; resident buffers and host imports of the lost device
 * are gone; compiled pipelines recompile on their next dispatch). host_import and host_release
 * where the device has VK_EXT_external_memory_host: an input lying in an import is copied into
 * its buffer by the device (see vk_import.c), and the host copies nothing.
 *
 * Memory: buffers come from size-class pools (vk_memory.h). On a unified-memory device (lavapipe)
 * the shader's buffers are host-mapped and nothing is staged; elsewhere buffers up to 64 KiB live
 * in host-visible memory the shader reads directly, larger ones in device-local memory filled
 * and read through persistently mapped staging (vk_xfer.h). Every buffer is bound with its exact
 * byte range, so the generated bounds checks keep each program inside its own buffers.
 *
 * Resident dispatch: one resource per non-workgroup buffer, in binding order. Each is bound with
 * the buffer's byte length (its static size, or for a count-0 buffer the whole elements of the
 * resource); buffers of role output (binding.h) are zero-filled first, as a plain dispatch gives
 * them, every other buffer is read and written in place.
 *
 * Thread-safety: a backend accepts concurrent calls of every entry except shutdown and destroy
 * (backend.h). The enumeration function may be called at any time.
 */
#ifndef VY_BACKEND_VULKAN_VULKAN_H
#define VY_BACKEND_VULKAN_VULKAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "err.h"
#include "ir.h"

struct vy_vulkan_options {
	uint32_t device_index; /* in vy_vulkan_devices_enumerate order */
	const char *cache_dir; /* borrowed; NULL: no disk cache */
	/*
	 * Borrowed: the 32 secret bytes every file of the disk cache is authenticated with (a keyed
	 * BLAKE2b MAC); NULL turns the disk cache off.
	 */
	const uint8_t *cache_key;
	/*
	 * Enable VK_LAYER_KHRONOS_validation and check every generated module with spirv-val.
	 * The environment variable VYRED_VULKAN_VALIDATION=1 turns it on too.
	 */
	bool enable_validation;
	/* Bounds the bytes of the cache folder together with other writers (borrowed; NULL: the
	 * folder is not bounded). */
	struct vy_disk_quota *disk_quota;
	/*
	 * Compiled programs kept in memory once no pipeline holds them (0: 512). Each holds its
	 * shader modules and the pipelines made of them; the VkPipelineCache is rebuilt empty after
	 * twice that many pipelines went into it.
	 */
	uint32_t kernel_cache_entries;
	/*
	 * Generate the plain code: no loop and no run speculated (docs/architecture.md, "What the
	 * generator proves"), every product and fma decided where it is. Slower; the code whose
	 * results the speculated code must equal, for comparing the two (ulp_report --plain).
	 */
	bool plain_code;
};

struct vy_vulkan_device_info {
	uint32_t index;
	char name[VY_DEVICE_NAME_MAX];
	const char *type; /* "discrete", "integrated", "virtual", "cpu" or "other"; static */
	uint32_t vendor_id;
	uint32_t device_id;
	uint32_t driver_version;
	uint32_t api_version;
	uint8_t uuid[16]; /* deviceUUID: the same for every handle of one physical device */
	bool usable;      /* Vulkan 1.2 or newer with a compute queue */
};

/*
 * List the Vulkan devices: up to `cap` entries into `out` (may be NULL when cap is 0), and the
 * total count in *n. Errors: UNSUPPORTED_FEATURE when there is no Vulkan loader or instance.
 */
int vy_vulkan_devices_enumerate(
	struct vy_vulkan_device_info *out, uint32_t cap, uint32_t *n, struct vy_err *err);

/*
 * Open a backend on the device `opts->device_index` (opts may be NULL for device 0, no disk
 * cache, no validation). On success *out is a new backend (free it with vy_backend_destroy);
 * on failure *out is NULL. Errors: UNSUPPORTED_FEATURE (no loader, no such device, Vulkan below
 * 1.2, no compute queue, validation layer missing when asked for), OUT_OF_MEMORY,
 * DISPATCH_FAILED (the cache folder cannot be created, the probe failed).
 */
int vy_vulkan_backend_create(
	const struct vy_vulkan_options *opts, struct vy_backend **out, struct vy_err *err);

/* The backend id in the registry and in profiles. */
#define VY_VULKAN_BACKEND_ID "vulkan"

/* Counters of the disk cache and the submission path of one backend. */
struct vy_vulkan_stats {
	uint64_t spirv_disk_hits;   /* shaders loaded from disk instead of compiled */
	uint64_t spirv_disk_misses; /* shaders compiled because disk had none or a bad one */
	uint64_t disk_writes;
	uint64_t disk_rejected;      /* cache files that failed a check and were ignored */
	uint64_t spirv_disk_invalid; /* of those, SPIR-V files spirv-val refused */
	uint64_t disk_write_errors;
	bool pipeline_cache_from_disk; /* the VkPipelineCache was seeded from disk at open */
	uint64_t submits;              /* vkQueueSubmit calls */
	uint64_t jobs;                 /* jobs submitted (several per submit when batched) */
	uint64_t stopped;              /* unfinished jobs told to stop when abandoned (timeouts) */
	uint64_t bytes_in_use;         /* device and staging bytes handed out */
	uint64_t bytes_held;           /* device and staging bytes allocated from Vulkan */
	uint64_t resident_buffers;
	uint64_t host_imports;       /* host memory imports held (vy_backend_host_import) */
	uint64_t host_import_inputs; /* dispatch inputs the device copied from an import */
	uint64_t host_import_bytes;  /* their bytes */
};

/* Fill *out for a backend made by vy_vulkan_backend_create; false for any other backend. */
bool vy_vulkan_stats(struct vy_backend *b, struct vy_vulkan_stats *out);

/*
 * The code the backend runs, as text (`vyred --emit-glsl`, vyred(8)). What the generated GLSL
 * depends on besides the program is the device's float profile: the float probe's findings (fma()
 * fused, '/' and sqrt() correctly rounded), shaderFloat64, subgroup operations and their size, and
 * the limits the program is validated against. Named profiles hold the values the devices report:
 *   "lavapipe"  Mesa's lavapipe (Debian 12): fma() not fused, '/' and sqrt() correctly rounded,
 *               doubles, subgroups of 8 lanes, workgroups of up to 1024 invocations (1024 per
 *               axis), 32 KiB of shared memory;
 *   "nvidia"    NVIDIA H100 and H200 (driver 580): fma() fused, '/' and sqrt() not correctly
 *               rounded, doubles, subgroups of 32 lanes, workgroups of up to 1024 invocations
 *               (1024, 1024, 64), 48 KiB of shared memory;
 *   "device"    the device `device_index` of vy_vulkan_devices_enumerate, opened (its probe run)
 *               to learn its profile.
 * Needs no daemon and, for the named profiles, no Vulkan device.
 */
struct vy_vulkan_profile;

/* The named profiles, for messages: "lavapipe, nvidia or device". */
#define VY_VULKAN_PROFILE_NAMES "lavapipe, nvidia or device"

/*
 * Look up profile `name` (device_index is read for "device" only). On success *out is a profile
 * to free with vy_vulkan_profile_free. Errors: BAD_REQUEST for an unknown name; those of
 * vy_vulkan_backend_create for "device".
 */
int vy_vulkan_profile_get(const char *name, uint32_t device_index, struct vy_vulkan_profile **out,
	struct vy_err *err);
/* NULL is accepted. */
void vy_vulkan_profile_free(struct vy_vulkan_profile *profile);

/*
 * The text of what the backend runs for `program` under `profile`: the GLSL of each grid_sync
 * segment as the code generator writes it, or with `spirv` its SPIR-V as the backend's compiler
 * makes it, disassembled (and checked by spirv-val, whose verdict is a comment). Comment lines
 * first name the profile and each segment; a program of one segment gives a GLSL text that
 * compiles as it stands. The program is validated against the profile first. On success *text is
 * a malloc'd text the caller frees; on failure NULL. Errors: INVALID_PROGRAM and
 * UNSUPPORTED_FEATURE (the program, or what the profile lacks) with the node in `at`;
 * KERNEL_COMPILE_FAILED and INTERNAL (the generator's faults).
 */
int vy_vulkan_emit(const struct vy_program *program, const struct vy_vulkan_profile *profile,
	bool spirv, char **text, struct vy_err *err);

/* Whether the Vulkan validation layer is installed (tests enable it where it is). */
bool vy_vulkan_validation_available(void);

/*
 * Warnings and errors reported by the validation layer to any backend of this process so far,
 * and the text of the last one (into buf, `size` bytes; empty when none).
 */
uint64_t vy_vulkan_validation_messages(char *buf, size_t size);

#endif
