/*
 * Pipeline objects of the Vulkan backend (DESIGN.md §8): descriptor-set layouts and pipeline
 * layouts cached by their layout fingerprint (planner/binding.h, the seed's
 * BackendLayoutFingerprint) and push-constant size, shader modules, and compute pipelines created
 * through one VkPipelineCache that is loaded from and saved to the disk cache.
 *
 * Every shader of the backend uses descriptor set 0 only, storage or uniform buffers, and one
 * push-constant range for the compute stage. With VK_KHR_push_descriptor the set layouts are made
 * for push descriptors.
 *
 * Ownership: struct vy_vk_pipelines is embedded in the backend (init/finish); layouts belong to
 * it and live until finish; modules and pipelines belong to their caller.
 * Thread-safety: every function may be called from several threads.
 */
#ifndef VY_BACKEND_VULKAN_VK_PIPELINE_H
#define VY_BACKEND_VULKAN_VK_PIPELINE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vk_volk.h"

#include "binding.h"
#include "err.h"
#include "vk_device.h"
#include "vk_disk.h"

/* The descriptor shape of one shader: its buffers in set 0 and its push-constant bytes. */
struct vy_vk_shape {
	uint32_t n_slots;
	struct vy_layout_slot slots[VY_LAYOUT_MAX_SLOTS]; /* group is always 0 */
	uint32_t push_bytes;
};

struct vy_vk_layout {
	struct vy_layout_fingerprint fp;
	uint32_t push_bytes;
	uint64_t hash;
	bool push; /* made for push descriptors */
	VkDescriptorSetLayout set_layout;
	VkPipelineLayout pipeline_layout;
	struct vy_vk_layout *next;
};

struct vy_vk_pipelines {
	struct vy_vk_device *dev; /* borrowed */
	struct vy_vk_disk *disk;  /* borrowed */
	bool push_descriptors;
	pthread_mutex_t lock;
	struct vy_vk_layout *layouts; /* owned, linked */
	VkPipelineCache cache;
	bool cache_from_disk; /* the blob on disk passed its checks and was loaded */
	bool dirty;           /* pipelines were created since the last save */
	/*
	 * A VkPipelineCache keeps every pipeline created with it, so after cache_limit pipelines
	 * (0: never) it is replaced by an empty one. Users of `cache` hold cache_life for reading,
	 * the replacement holds it for writing. Under `lock`: cache_pipelines, cache_rebuilds.
	 */
	pthread_rwlock_t cache_life;
	uint64_t cache_limit;
	uint64_t cache_pipelines; /* created with the current cache */
	uint64_t cache_rebuilds;
};

/*
 * Create the VkPipelineCache, seeded from the disk cache when its blob passes every check.
 * Errors: those of vkCreatePipelineCache.
 */
int vy__vk_pipelines_init(struct vy_vk_pipelines *p, struct vy_vk_device *dev,
	struct vy_vk_disk *disk, bool push_descriptors, struct vy_err *err);
/* Destroy every layout and the cache (without saving it). Accepts a zeroed struct. */
void vy__vk_pipelines_finish(struct vy_vk_pipelines *p);

/* Write the VkPipelineCache to the disk cache when it changed. Errors: those of the write. */
int vy__vk_pipelines_save(struct vy_vk_pipelines *p, struct vy_err *err);

/* The layouts of a shape, created on first use and shared by every shader of that shape. */
int vy__vk_layout_get(struct vy_vk_pipelines *p, const struct vy_vk_shape *shape,
	const struct vy_vk_layout **out, struct vy_err *err);

int vy__vk_module_create(struct vy_vk_pipelines *p, const uint32_t *words, size_t n_words,
	VkShaderModule *out, struct vy_err *err);

/*
 * A compute pipeline for `module` with `layout` and specialization `spec` (may be NULL).
 * `subgroup_size` is 0, or the size to pin where the device allows it.
 */
int vy__vk_pipeline_create(struct vy_vk_pipelines *p, VkShaderModule module,
	const struct vy_vk_layout *layout, const VkSpecializationInfo *spec, uint32_t subgroup_size,
	VkPipeline *out, struct vy_err *err);

#endif
