/*
 * Buffer memory of the Vulkan backend (DESIGN.md §8): size-class pools for device-local buffers,
 * persistently mapped upload staging, and host-cached readback staging. A request is served by a
 * slice of the smallest class that holds it: classes up to 256 KiB are powers of two carved out
 * of 4 MiB chunks (one VkDeviceMemory and one VkBuffer per chunk), larger classes step by a
 * quarter power of two and own a dedicated allocation each. Released slices return to their
 * class's free list, so a warm dispatch allocates no Vulkan object; dedicated slices beyond a
 * cached-bytes budget are freed, and everything cached is freed once when an allocation runs out
 * of memory.
 *
 * A slice's capacity is its class size; the caller binds the exact byte range it needs.
 *
 * Ownership: struct vy_vk_memory is embedded in the backend (init/finish); slices are values
 * handed out by vy__vk_slice_alloc and given back with vy__vk_slice_free.
 * Thread-safety: every function may be called from several threads (one internal mutex).
 */
#ifndef VY_BACKEND_VULKAN_VK_MEMORY_H
#define VY_BACKEND_VULKAN_VK_MEMORY_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vk_volk.h"

#include "err.h"
#include "vk_device.h"

enum vy_vk_pool_kind {
	VY_VK_POOL_DEVICE,   /* shader buffers; host-mapped too on unified-memory devices */
	VY_VK_POOL_UPLOAD,   /* host-visible, coherent */
	VY_VK_POOL_READBACK, /* host-visible, cached where the device has it */
	VY_VK_POOL_CONTROL,  /* host-visible, coherent, device-local where the device has it */
	VY_VK_POOL_COUNT
};

struct vy_vk_chunk;

struct vy_vk_slice {
	VkBuffer buffer; /* borrowed from its chunk */
	VkDeviceSize offset;
	VkDeviceSize size; /* capacity: the class size */
	uint8_t *map;      /* host address of `offset`, or NULL when not host-visible */
	struct vy_vk_chunk *chunk;
	uint32_t kind;
	uint32_t cls;
};

struct vy_vk_free_list {
	struct vy_vk_slice *items;
	size_t len;
	size_t cap;
};

#define VY_VK_CLASS_COUNT 96

struct vy_vk_pool {
	uint32_t type; /* memory type index */
	bool mapped;
	struct vy_vk_chunk *chunks; /* owned, linked */
	struct vy_vk_free_list free[VY_VK_CLASS_COUNT];
	uint64_t allocated;    /* bytes of VkDeviceMemory held */
	uint64_t cached_bytes; /* bytes of dedicated slices waiting in free lists */
	uint64_t in_use;       /* bytes of slices handed out */
};

struct vy_vk_memory {
	struct vy_vk_device *dev; /* borrowed */
	pthread_mutex_t lock;
	struct vy_vk_pool pools[VY_VK_POOL_COUNT];
	uint64_t cache_budget; /* dedicated bytes a pool keeps for reuse */
};

void vy__vk_memory_init(struct vy_vk_memory *m, struct vy_vk_device *dev);
/* Free every chunk; no slice may be in use by the device. */
void vy__vk_memory_finish(struct vy_vk_memory *m);

/*
 * A slice of at least `size` bytes (size > 0) from pool `kind`. Errors: OUT_OF_MEMORY naming the
 * requested and the available bytes (also for a size above the device's largest allocation).
 * The slice's contents are undefined.
 */
int vy__vk_slice_alloc(struct vy_vk_memory *m, enum vy_vk_pool_kind kind, uint64_t size,
	struct vy_vk_slice *out, struct vy_err *err);
/* Return a slice to its pool. A zeroed slice (buffer VK_NULL_HANDLE) is accepted. */
void vy__vk_slice_free(struct vy_vk_memory *m, struct vy_vk_slice *s);

/*
 * Make device writes to the first `len` bytes of a mapped readback slice visible to the host (a
 * no-op on coherent memory). Errors: OUT_OF_MEMORY, DEVICE_LOST.
 */
int vy__vk_slice_invalidate(
	struct vy_vk_memory *m, const struct vy_vk_slice *s, uint64_t len, struct vy_err *err);

/* Bytes currently handed out and held, summed over the pools. */
void vy__vk_memory_usage(struct vy_vk_memory *m, uint64_t *in_use, uint64_t *held);

/* Free every cached slice that owns its memory (under memory pressure). */
void vy__vk_memory_trim(struct vy_vk_memory *m);

#endif
