/*
 * The anchor of bench_backend (DESIGN.md §10): the least Vulkan program a careful engineer would
 * write by hand for the same work as the backend, so that each vyred figure is printed beside
 * what the device gives without vyred in the way.
 *
 * One context owns one instance, one device, one compute queue and two kernels, each compiled
 * from GLSL with shaderc when the context opens:
 *   tiny    y[i] = x[i] + 1 over a few u32 elements in host-visible coherent memory, one
 *           pre-recorded command buffer, submitted and waited on (spinning on the fence) per run;
 *   stream  y[i] = x[i] + y[i] over f32 elements read and written as vec4, on device-local
 *           buffers filled on the device, timed with timestamp queries where the queue has them.
 *
 * Errors: every fallible function returns 0 or a negative VY_E_* code and fills the optional
 * struct vy_err: UNSUPPORTED_FEATURE (no loader, no such device, no compute queue),
 * OUT_OF_MEMORY, DISPATCH_FAILED (any other Vulkan or shaderc failure, with its cause).
 *
 * Thread-safety: a context belongs to one thread at a time.
 */
#ifndef VY_BENCH_RAW_VULKAN_H
#define VY_BENCH_RAW_VULKAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct vy_raw_vk;

/*
 * Open device `device_index` (in vkEnumeratePhysicalDevices order, the backend's order too).
 * On success *out is a new context (free it with vy_raw_vk_destroy); on failure *out is NULL.
 */
int vy_raw_vk_create(uint32_t device_index, struct vy_raw_vk **out, struct vy_err *err);
/* Free the context and everything it made. NULL is accepted. */
void vy_raw_vk_destroy(struct vy_raw_vk *raw);

/* The device's name (borrowed from the context) and whether it is a CPU implementation. */
const char *vy_raw_vk_device_name(const struct vy_raw_vk *raw);
bool vy_raw_vk_is_cpu(const struct vy_raw_vk *raw);

/* Make the tiny kernel's buffers and command buffer for `n` u32 elements (1 to 1024). */
int vy_raw_vk_tiny_prepare(struct vy_raw_vk *raw, uint32_t n, struct vy_err *err);
/*
 * One round trip of the tiny kernel: copy `n` elements of `in` into the input buffer, submit,
 * spin until the fence signals, copy the results into `out`. Needs vy_raw_vk_tiny_prepare.
 */
int vy_raw_vk_tiny_run(
	struct vy_raw_vk *raw, const uint32_t *in, uint32_t *out, struct vy_err *err);

/*
 * Make the stream kernel's buffers for `n` f32 elements (a positive multiple of 4), fill x with
 * 1.0 and y with 0.0 on the device, and record its command buffer.
 */
int vy_raw_vk_stream_prepare(struct vy_raw_vk *raw, uint64_t n, struct vy_err *err);
/*
 * One run of the stream kernel, waited for. *device_ns receives the time between the timestamps
 * around the dispatch, or UINT64_MAX where the queue has no timestamps; *wall_ns the host time of
 * submit and wait.
 */
int vy_raw_vk_stream_run(
	struct vy_raw_vk *raw, uint64_t *device_ns, uint64_t *wall_ns, struct vy_err *err);

#endif
