/*
 * One Vulkan device of the backend: its instance (with the validation layer and a debug messenger
 * counting its messages when asked), the physical device chosen by index, the logical device with
 * its own VolkDeviceTable, the compute queue, and the features and limits the rest of the backend
 * reads (DESIGN.md §8).
 *
 * Every backend owns its instance and device, so recovering from a lost device recreates both
 * without disturbing another backend. volk's global instance-level entry points are loaded once
 * per process (they are the loader's trampolines, valid for any instance); device-level calls go
 * through each device's table only.
 *
 * Ownership: vy__vk_device_open fills a caller-embedded struct; vy__vk_device_close releases what
 * it holds and accepts a zeroed or half-opened struct.
 * Thread-safety: opening and closing are serialized by the caller; the struct is read-only while
 * open, except that VkQueue use must be externally synchronized (the backend's submit lock).
 */
#ifndef VY_BACKEND_VULKAN_VK_DEVICE_H
#define VY_BACKEND_VULKAN_VK_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "vk_volk.h"

#include "backend.h"
#include "err.h"

#define VY_VK_NO_TYPE UINT32_MAX

struct vy_vk_device {
	VkInstance instance;                /* owned */
	VkDebugUtilsMessengerEXT messenger; /* owned; VK_NULL_HANDLE without validation */
	PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger;
	bool validation;

	uint32_t index;
	VkPhysicalDevice phys;
	VkDevice dev; /* owned */
	struct VolkDeviceTable vk;
	VkQueue queue;
	uint32_t queue_family;

	VkPhysicalDeviceProperties props;
	VkPhysicalDeviceMemoryProperties mem;
	char driver_name[VK_MAX_DRIVER_NAME_SIZE];
	char driver_info[VK_MAX_DRIVER_INFO_SIZE];
	uint8_t device_uuid[VK_UUID_SIZE]; /* the physical device's identity */
	uint32_t compute_units;            /* 0 when the driver does not say */

	uint32_t subgroup_size;
	uint32_t min_subgroup_size;
	uint32_t max_subgroup_size;
	/* shaderSignedZeroInfNanPreserveFloat32: modules may ask for exact signed zeros, infinities
	 * and NaN (vy__vk_compiler_set_float_preserve) */
	bool float32_preserve;
	bool subgroup_ops;          /* basic, arithmetic, ballot and shuffle in compute shaders */
	bool subgroup_size_control; /* the size can be pinned per pipeline (feature enabled) */

	bool push_descriptors;
	uint32_t max_push_descriptors;
	bool f64;
	bool int64;
	bool memory_budget;
	bool null_descriptor; /* VK_EXT_robustness2: a zero-length buffer binds as a null one */
	/* VK_EXT_external_memory_host: host allocations import as transfer sources, at addresses
	 * and sizes that are multiples of import_alignment */
	bool host_import;
	VkDeviceSize import_alignment;

	bool timestamps;
	bool host_query_reset;   /* vkResetQueryPool from the host (Vulkan 1.2 hostQueryReset) */
	uint64_t timestamp_mask; /* valid bits of a timestamp on the queue */
	double timestamp_period_ns;

	/*
	 * Memory types: `device` for buffers the shaders use, `upload` for staging writes,
	 * `readback` for staging reads (host-cached where the device has it). On a unified-memory
	 * device the device type is host-visible and coherent and no staging is used.
	 */
	bool unified;
	uint32_t type_device;
	uint32_t type_upload;
	uint32_t type_readback;
	uint32_t type_control; /* host-written words that shaders poll */
	bool device_mappable;  /* type_device is host-visible and coherent */
	bool readback_coherent;
	VkDeviceSize max_allocation;
	VkDeviceSize max_storage_range;
};

/*
 * Open device `index` (in vkEnumeratePhysicalDevices order). `validation` enables
 * VK_LAYER_KHRONOS_validation and a messenger that counts its warnings and errors. Errors:
 * UNSUPPORTED_FEATURE (no loader, no such device, Vulkan below 1.2, no compute queue, no timeline
 * semaphores, validation layer missing), OUT_OF_MEMORY, DISPATCH_FAILED. On failure the struct
 * is closed again.
 */
int vy__vk_device_open(struct vy_vk_device *d, uint32_t index, bool validation, struct vy_err *err);
void vy__vk_device_close(struct vy_vk_device *d);

/* Wait until the device is idle; DEVICE_LOST when it is lost. */
int vy__vk_device_wait_idle(struct vy_vk_device *d, struct vy_err *err);

/* Heap sizes and, where VK_EXT_memory_budget exists, their current use. */
void vy__vk_device_heaps(const struct vy_vk_device *d, struct vy_device_profile *out);

/*
 * Bytes the device can still give for `type` (the heap's budget minus its use where the driver
 * reports them, else the heap size minus `allocated`, our own allocations from that heap).
 */
uint64_t vy__vk_device_available(const struct vy_vk_device *d, uint32_t type, uint64_t allocated);

/* Make sure the Vulkan loader is loaded. UNSUPPORTED_FEATURE when there is none. */
int vy__vk_loader_init(struct vy_err *err);

/* Create a bare instance (optionally with validation and a counting messenger). */
int vy__vk_instance_create(bool validation, VkInstance *out, VkDebugUtilsMessengerEXT *messenger,
	PFN_vkDestroyDebugUtilsMessengerEXT *destroy_messenger, struct vy_err *err);

/* Whether VK_LAYER_KHRONOS_validation is installed. */
bool vy__vk_validation_available(void);

/* Warnings and errors reported by validation messengers so far, process-wide. */
uint64_t vy__vk_validation_count(void);
/* The last such message, truncated to `size` bytes, into `buf`; empty when none. */
void vy__vk_validation_last(char *buf, size_t size);

#endif
