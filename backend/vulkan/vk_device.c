/*
 * Instance and device creation for the Vulkan backend: the loader through volk, an instance per
 * backend (with the validation layer and a message-counting messenger on request), the physical
 * device by index, a compute queue, the features the generated code may use, and the memory
 * types the buffer pools draw from.
 */
#include "vk_device.h"

#include <assert.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_util.h"

#define VALIDATION_LAYER "VK_LAYER_KHRONOS_validation"

static pthread_mutex_t loader_lock = PTHREAD_MUTEX_INITIALIZER;
static bool loader_tried;
static VkResult loader_result;
static bool instance_fns_loaded;

static _Atomic uint64_t validation_messages;
static pthread_mutex_t last_message_lock = PTHREAD_MUTEX_INITIALIZER;
static char last_message[512];

int vy__vk_loader_init(struct vy_err *err)
{
	pthread_mutex_lock(&loader_lock);
	if (!loader_tried) {
		loader_result = volkInitialize();
		loader_tried = true;
	}
	VkResult res = loader_result;
	pthread_mutex_unlock(&loader_lock);
	if (res != VK_SUCCESS) {
		return vy_err_set(err, VY_E_UNSUPPORTED_FEATURE, NULL,
			"install the Vulkan loader (libvulkan1) and a driver (mesa-vulkan-drivers "
			"gives lavapipe)",
			"the Vulkan loader libvulkan.so.1 could not be loaded");
	}
	return 0;
}

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
	VkDebugUtilsMessageTypeFlagsEXT types, const VkDebugUtilsMessengerCallbackDataEXT *data,
	void *user)
{
	if (severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
		return VK_FALSE;
	}
	atomic_fetch_add(&validation_messages, 1);
	pthread_mutex_lock(&last_message_lock);
	snprintf(last_message, sizeof(last_message), "%s", data->pMessage ? data->pMessage : "");
	pthread_mutex_unlock(&last_message_lock);
	return VK_FALSE;
}

uint64_t vy__vk_validation_count(void)
{
	return atomic_load(&validation_messages);
}

void vy__vk_validation_last(char *buf, size_t size)
{
	pthread_mutex_lock(&last_message_lock);
	snprintf(buf, size, "%s", last_message);
	pthread_mutex_unlock(&last_message_lock);
}

/*
 * A sanitizer build keeps Mesa's lavapipe and the validation layer loaded until the process ends.
 * Both keep a few allocations per Vulkan instance that only their own data points to; the loader
 * unloads them at vkDestroyInstance, before LeakSanitizer runs, and then reports those
 * allocations as leaks of a module it cannot name, which tests/lsan.supp could not suppress by
 * library name. Other builds let the loader unload them.
 */
static void keep_drivers(void)
{
#ifdef VY_VK_KEEP_DRIVERS
	static const char *const libs[] = {
		"libvulkan_lvp.so",
		"libVkLayer_khronos_validation.so",
	};
	for (unsigned i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
		/* RTLD_NOLOAD: only a library already loaded; RTLD_NODELETE: never unload it */
		void *h = dlopen(libs[i], RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
		if (h) {
			dlclose(h);
		}
	}
#endif
}

static bool has_layer(const char *name)
{
	struct vy_err *err = NULL;
	int rc = 0;
	uint32_t n = 0;
	VkLayerProperties *layers = NULL;
	bool found = false;
	VY_VK(vkEnumerateInstanceLayerProperties(&n, NULL));
	layers = calloc(n ? n : 1, sizeof(*layers));
	if (!layers) {
		return false;
	}
	VY_VK(vkEnumerateInstanceLayerProperties(&n, layers));
	for (uint32_t i = 0; i < n && !found; i++) {
		found = strcmp(layers[i].layerName, name) == 0;
	}
error:
	(void)rc;
	free(layers);
	return found;
}

bool vy__vk_validation_available(void)
{
	return vy__vk_loader_init(NULL) == 0 && has_layer(VALIDATION_LAYER);
}

static const VkDebugUtilsMessengerCreateInfoEXT messenger_info = {
	.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
	.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
			   VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
	.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
		       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
		       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
	.pfnUserCallback = on_message,
};

int vy__vk_instance_create(bool validation, VkInstance *out, VkDebugUtilsMessengerEXT *messenger,
	PFN_vkDestroyDebugUtilsMessengerEXT *destroy_messenger, struct vy_err *err)
{
	int rc = vy__vk_loader_init(err);
	*out = VK_NULL_HANDLE;
	*messenger = VK_NULL_HANDLE;
	*destroy_messenger = NULL;
	if (rc) {
		return rc;
	}
	uint32_t version = volkGetInstanceVersion();
	if (version < VK_API_VERSION_1_2) {
		return vy_err_set(err, VY_E_UNSUPPORTED_FEATURE, NULL,
			"install a Vulkan 1.2 or newer loader (libvulkan1)",
			"the Vulkan loader offers version %u.%u; vyred needs 1.2",
			VK_API_VERSION_MAJOR(version), VK_API_VERSION_MINOR(version));
	}
	if (validation && !has_layer(VALIDATION_LAYER)) {
		return vy_err_set(err, VY_E_UNSUPPORTED_FEATURE, NULL,
			"install vulkan-validationlayers or run without validation",
			"the Vulkan validation layer %s is not installed", VALIDATION_LAYER);
	}
	const char *layers[] = {VALIDATION_LAYER};
	const char *extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
	VkApplicationInfo app = {
		.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
		.pApplicationName = "vyred",
		.pEngineName = "vyred",
		.apiVersion =
			version >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3 : VK_API_VERSION_1_2,
	};
	VkInstanceCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
		.pNext = validation ? &messenger_info : NULL,
		.pApplicationInfo = &app,
		.enabledLayerCount = validation ? 1 : 0,
		.ppEnabledLayerNames = layers,
		.enabledExtensionCount = validation ? 1 : 0,
		.ppEnabledExtensionNames = extensions,
	};
	VY_VK(vkCreateInstance(&info, NULL, out));
	keep_drivers();

	pthread_mutex_lock(&loader_lock);
	if (!instance_fns_loaded) {
		volkLoadInstanceOnly(*out);
		instance_fns_loaded = true;
	}
	pthread_mutex_unlock(&loader_lock);

	if (validation) {
		PFN_vkCreateDebugUtilsMessengerEXT create =
			(PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
				*out, "vkCreateDebugUtilsMessengerEXT");
		*destroy_messenger = (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
			*out, "vkDestroyDebugUtilsMessengerEXT");
		if (!create || !*destroy_messenger) {
			rc = vy_err_set(err, VY_E_UNSUPPORTED_FEATURE, NULL,
				"install vulkan-validationlayers or run without validation",
				"VK_EXT_debug_utils is missing although validation was requested");
			goto error;
		}
		VY_VK(create(*out, &messenger_info, NULL, messenger));
	}
	return 0;
error:
	if (*out) {
		vkDestroyInstance(*out, NULL);
		*out = VK_NULL_HANDLE;
	}
	*destroy_messenger = NULL;
	return rc;
}

static bool has_extension(const VkExtensionProperties *exts, uint32_t n, const char *name)
{
	for (uint32_t i = 0; i < n; i++) {
		if (strcmp(exts[i].extensionName, name) == 0) {
			return true;
		}
	}
	return false;
}

static uint32_t find_type(const VkPhysicalDeviceMemoryProperties *mem, uint32_t bits,
	VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid)
{
	for (uint32_t i = 0; i < mem->memoryTypeCount; i++) {
		VkMemoryPropertyFlags f = mem->memoryTypes[i].propertyFlags;
		if ((bits & (1u << i)) && (f & want) == want && (f & avoid) == 0) {
			return i;
		}
	}
	return VY_VK_NO_TYPE;
}

static uint32_t first_type(const VkPhysicalDeviceMemoryProperties *mem, uint32_t bits,
	const VkMemoryPropertyFlags *wants, const VkMemoryPropertyFlags *avoids, int n)
{
	for (int i = 0; i < n; i++) {
		uint32_t t = find_type(mem, bits, wants[i], avoids[i]);
		if (t != VY_VK_NO_TYPE) {
			return t;
		}
	}
	return VY_VK_NO_TYPE;
}

/* Memory types are chosen against the requirements of a buffer with the usage every buffer of
 * the backend has, so that any later buffer accepts them. */
static int choose_memory(struct vy_vk_device *d, struct vy_err *err)
{
	int rc = 0;
	VkBuffer probe = VK_NULL_HANDLE;
	VkBufferCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.size = 256,
		.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
			 VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT,
		.sharingMode = VK_SHARING_MODE_EXCLUSIVE,
	};
	VY_VK(d->vk.vkCreateBuffer(d->dev, &info, NULL, &probe));
	VkMemoryRequirements req;
	d->vk.vkGetBufferMemoryRequirements(d->dev, probe, &req);
	d->vk.vkDestroyBuffer(d->dev, probe, NULL);

	const VkMemoryPropertyFlags dl = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
	const VkMemoryPropertyFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
	const VkMemoryPropertyFlags hc = VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
	const VkMemoryPropertyFlags cached = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
	VkPhysicalDeviceType type = d->props.deviceType;
	uint32_t shared = find_type(&d->mem, req.memoryTypeBits, dl | hv | hc, 0);
	d->unified = shared != VY_VK_NO_TYPE && (type == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ||
							type == VK_PHYSICAL_DEVICE_TYPE_CPU);
	if (d->unified) {
		/* Prefer a cached variant: outputs are read by the host straight from it. */
		uint32_t best = find_type(&d->mem, req.memoryTypeBits, dl | hv | hc | cached, 0);
		d->type_device = best != VY_VK_NO_TYPE ? best : shared;
		d->type_upload = d->type_device;
		d->type_readback = d->type_device;
		d->type_control = d->type_device;
	} else {
		VkMemoryPropertyFlags dev_want[] = {dl, dl, 0};
		VkMemoryPropertyFlags dev_avoid[] = {hv, 0, 0};
		d->type_device = first_type(&d->mem, req.memoryTypeBits, dev_want, dev_avoid, 3);
		VkMemoryPropertyFlags up_want[] = {hv | hc, hv | hc};
		VkMemoryPropertyFlags up_avoid[] = {dl, 0};
		d->type_upload = first_type(&d->mem, req.memoryTypeBits, up_want, up_avoid, 2);
		VkMemoryPropertyFlags rb_want[] = {hv | hc | cached, hv | cached, hv | hc};
		VkMemoryPropertyFlags rb_avoid[] = {0, 0, 0};
		d->type_readback = first_type(&d->mem, req.memoryTypeBits, rb_want, rb_avoid, 3);
		/* Words the host writes while a shader polls them: device memory the host can map
		 * keeps the shader's reads on the device. */
		VkMemoryPropertyFlags ctl_want[] = {dl | hv | hc, hv | hc};
		VkMemoryPropertyFlags ctl_avoid[] = {0, 0};
		d->type_control = first_type(&d->mem, req.memoryTypeBits, ctl_want, ctl_avoid, 2);
	}
	if (d->type_device == VY_VK_NO_TYPE || d->type_upload == VY_VK_NO_TYPE ||
		d->type_readback == VY_VK_NO_TYPE || d->type_control == VY_VK_NO_TYPE) {
		return vy_err_set(err, VY_E_UNSUPPORTED_FEATURE, NULL,
			"use another device (config.device) or update its driver",
			"device %u offers no memory types usable for storage buffers and staging",
			d->index);
	}
	VkMemoryPropertyFlags df = d->mem.memoryTypes[d->type_device].propertyFlags;
	d->device_mappable = (df & (hv | hc)) == (hv | hc);
	d->readback_coherent = (d->mem.memoryTypes[d->type_readback].propertyFlags & hc) != 0;
	return 0;
error:
	return rc;
}

static int pick_queue(struct vy_vk_device *d, struct vy_err *err)
{
	uint32_t n = 0;
	vkGetPhysicalDeviceQueueFamilyProperties(d->phys, &n, NULL);
	VkQueueFamilyProperties *fams = calloc(n ? n : 1, sizeof(*fams));
	if (!fams) {
		return vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL, "free host memory and retry",
			"no memory for %u queue family descriptions", n);
	}
	vkGetPhysicalDeviceQueueFamilyProperties(d->phys, &n, fams);
	/* A compute-only family runs beside graphics work on GPUs that have one. */
	uint32_t best = UINT32_MAX;
	for (uint32_t i = 0; i < n; i++) {
		if (!(fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT) || fams[i].queueCount == 0) {
			continue;
		}
		if (best == UINT32_MAX ||
			(!(fams[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) &&
				(fams[best].queueFlags & VK_QUEUE_GRAPHICS_BIT))) {
			best = i;
		}
	}
	if (best == UINT32_MAX) {
		free(fams);
		return vy_err_set(err, VY_E_UNSUPPORTED_FEATURE, NULL,
			"use another device (config.device)", "device %u (%s) has no compute queue",
			d->index, d->props.deviceName);
	}
	d->queue_family = best;
	uint32_t bits = fams[best].timestampValidBits;
	d->timestamps = bits > 0 && d->props.limits.timestampPeriod > 0;
	d->timestamp_mask = bits >= 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
	d->timestamp_period_ns = d->props.limits.timestampPeriod;
	free(fams);
	return 0;
}

/* Whether host allocations import as memory of transfer-source buffers (the only use made of
 * them: vk_import.c). */
static bool host_importable(VkPhysicalDevice phys)
{
	VkPhysicalDeviceExternalBufferInfo info = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_BUFFER_INFO,
		.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
		.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT,
	};
	VkExternalBufferProperties props = {.sType = VK_STRUCTURE_TYPE_EXTERNAL_BUFFER_PROPERTIES};
	vkGetPhysicalDeviceExternalBufferProperties(phys, &info, &props);
	const VkExternalMemoryProperties *m = &props.externalMemoryProperties;
	return (m->externalMemoryFeatures & VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT) &&
	       (m->compatibleHandleTypes & VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT);
}

/* Device properties and features; enabled features go into the chain handed to vkCreateDevice. */
struct feature_chain {
	VkPhysicalDeviceFeatures2 f2;
	VkPhysicalDeviceVulkan12Features v12;
	VkPhysicalDeviceSubgroupSizeControlFeatures ssc;
	VkPhysicalDeviceRobustness2FeaturesEXT rb2;
};

static int create_device(struct vy_vk_device *d, struct vy_err *err)
{
	int rc = 0;
	uint32_t n_ext = 0;
	VkExtensionProperties *exts = NULL;
	VY_VK(vkEnumerateDeviceExtensionProperties(d->phys, NULL, &n_ext, NULL));
	exts = calloc(n_ext ? n_ext : 1, sizeof(*exts));
	if (!exts) {
		return vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL, "free host memory and retry",
			"no memory for %u extension descriptions", n_ext);
	}
	VY_VK(vkEnumerateDeviceExtensionProperties(d->phys, NULL, &n_ext, exts));

	bool v13 = d->props.apiVersion >= VK_API_VERSION_1_3;
	bool has_push = has_extension(exts, n_ext, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
	bool has_ssc_ext = has_extension(exts, n_ext, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
	bool has_ssc = v13 || has_ssc_ext;
	d->memory_budget = has_extension(exts, n_ext, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
	bool has_sm = has_extension(exts, n_ext, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME);
	bool has_rb2 = has_extension(exts, n_ext, VK_EXT_ROBUSTNESS_2_EXTENSION_NAME);
	bool has_host = has_extension(exts, n_ext, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);

	VkPhysicalDeviceSubgroupProperties sg = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
	VkPhysicalDeviceDriverProperties drv = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES, .pNext = &sg};
	VkPhysicalDeviceMaintenance3Properties m3 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES, .pNext = &drv};
	VkPhysicalDevicePushDescriptorPropertiesKHR push = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PUSH_DESCRIPTOR_PROPERTIES_KHR};
	VkPhysicalDeviceSubgroupSizeControlProperties sscp = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
	VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
	VkPhysicalDeviceExternalMemoryHostPropertiesEXT hostp = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT};
	VkPhysicalDeviceFloatControlsProperties fc = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES, .pNext = &m3};
	VkPhysicalDeviceProperties2 p2 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &fc};
	if (has_push) {
		push.pNext = p2.pNext;
		p2.pNext = &push;
	}
	if (has_ssc) {
		sscp.pNext = p2.pNext;
		p2.pNext = &sscp;
	}
	if (has_sm) {
		sm.pNext = p2.pNext;
		p2.pNext = &sm;
	}
	if (has_host) {
		hostp.pNext = p2.pNext;
		p2.pNext = &hostp;
	}
	vkGetPhysicalDeviceProperties2(d->phys, &p2);
	snprintf(d->driver_name, sizeof(d->driver_name), "%s", drv.driverName);
	snprintf(d->driver_info, sizeof(d->driver_info), "%s", drv.driverInfo);
	d->compute_units = has_sm ? sm.shaderSMCount : 0;
	d->max_allocation = m3.maxMemoryAllocationSize;
	d->max_storage_range = d->props.limits.maxStorageBufferRange;
	d->subgroup_size = sg.subgroupSize;
	d->float32_preserve = fc.shaderSignedZeroInfNanPreserveFloat32;
	d->min_subgroup_size = has_ssc ? sscp.minSubgroupSize : sg.subgroupSize;
	d->max_subgroup_size = has_ssc ? sscp.maxSubgroupSize : sg.subgroupSize;
	VkSubgroupFeatureFlags need_ops =
		VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT |
		VK_SUBGROUP_FEATURE_BALLOT_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
	d->subgroup_ops = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
			  (sg.supportedOperations & need_ops) == need_ops && sg.subgroupSize > 0;
	d->max_push_descriptors = has_push ? push.maxPushDescriptors : 0;
	d->host_import = has_host && host_importable(d->phys);
	d->import_alignment = d->host_import ? hostp.minImportedHostPointerAlignment : 0;
	/* Alignments are powers of two (the import path rounds with masks). */
	if (d->import_alignment == 0 || (d->import_alignment & (d->import_alignment - 1))) {
		d->host_import = false;
		d->import_alignment = 0;
	}

	struct feature_chain have = {
		.f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &have.v12},
		.v12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES},
		.ssc = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES},
		.rb2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT},
	};
	void **tail = &have.v12.pNext;
	if (has_ssc) {
		*tail = &have.ssc;
		tail = &have.ssc.pNext;
	}
	if (has_rb2) {
		*tail = &have.rb2;
	}
	vkGetPhysicalDeviceFeatures2(d->phys, &have.f2);
	if (!have.v12.timelineSemaphore) {
		rc = vy_err_set(err, VY_E_UNSUPPORTED_FEATURE, NULL,
			"update the device's Vulkan driver or use another device",
			"device %u (%s) lacks timeline semaphores", d->index, d->props.deviceName);
		goto error;
	}
	struct feature_chain want = {
		.f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &want.v12},
		.v12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES},
		.ssc = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES},
		.rb2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT},
	};
	want.f2.features.shaderFloat64 = have.f2.features.shaderFloat64;
	want.f2.features.shaderInt64 = have.f2.features.shaderInt64;
	want.v12.timelineSemaphore = VK_TRUE;
	want.v12.hostQueryReset = have.v12.hostQueryReset;
	d->host_query_reset = have.v12.hostQueryReset;
	d->f64 = have.f2.features.shaderFloat64;
	d->int64 = have.f2.features.shaderInt64;
	d->subgroup_size_control = has_ssc && have.ssc.subgroupSizeControl &&
				   have.ssc.computeFullSubgroups &&
				   (sscp.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT);
	tail = &want.v12.pNext;
	if (d->subgroup_size_control) {
		want.ssc.subgroupSizeControl = VK_TRUE;
		want.ssc.computeFullSubgroups = VK_TRUE;
		*tail = &want.ssc;
		tail = &want.ssc.pNext;
	}
	d->null_descriptor = has_rb2 && have.rb2.nullDescriptor;
	if (d->null_descriptor) {
		want.rb2.nullDescriptor = VK_TRUE;
		*tail = &want.rb2;
	}

	const char *enable[8];
	uint32_t n_enable = 0;
	if (has_push) {
		enable[n_enable++] = VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME;
	}
	if (d->subgroup_size_control && !v13) {
		enable[n_enable++] = VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME;
	}
	if (d->memory_budget) {
		enable[n_enable++] = VK_EXT_MEMORY_BUDGET_EXTENSION_NAME;
	}
	if (d->null_descriptor) {
		enable[n_enable++] = VK_EXT_ROBUSTNESS_2_EXTENSION_NAME;
	}
	if (d->host_import) {
		enable[n_enable++] = VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME;
	}
	d->push_descriptors = has_push && d->max_push_descriptors > 0;

	float priority = 1.0f;
	VkDeviceQueueCreateInfo queue = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
		.queueFamilyIndex = d->queue_family,
		.queueCount = 1,
		.pQueuePriorities = &priority,
	};
	VkDeviceCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
		.pNext = &want.f2,
		.queueCreateInfoCount = 1,
		.pQueueCreateInfos = &queue,
		.enabledExtensionCount = n_enable,
		.ppEnabledExtensionNames = enable,
	};
	VY_VK(vkCreateDevice(d->phys, &info, NULL, &d->dev));
	volkLoadDeviceTable(&d->vk, d->dev);
	d->vk.vkGetDeviceQueue(d->dev, d->queue_family, 0, &d->queue);
	free(exts);
	return 0;
error:
	free(exts);
	return rc;
}

int vy__vk_device_open(struct vy_vk_device *d, uint32_t index, bool validation, struct vy_err *err)
{
	memset(d, 0, sizeof(*d));
	d->index = index;
	d->validation = validation;
	VkPhysicalDevice *phys = NULL;
	int rc = vy__vk_instance_create(
		validation, &d->instance, &d->messenger, &d->destroy_messenger, err);
	if (rc) {
		goto error;
	}
	uint32_t n = 0;
	VY_VK(vkEnumeratePhysicalDevices(d->instance, &n, NULL));
	if (index >= n) {
		rc = vy_err_set(err, VY_E_UNSUPPORTED_FEATURE, NULL,
			n ? "name a device index below the count (vyrectl devices lists them)"
			  : "install a Vulkan driver (mesa-vulkan-drivers gives lavapipe)",
			"no Vulkan device %u: the loader found %u", index, n);
		goto error;
	}
	phys = calloc(n, sizeof(*phys));
	if (!phys) {
		rc = vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL, "free host memory and retry",
			"no memory to list %u devices", n);
		goto error;
	}
	VY_VK(vkEnumeratePhysicalDevices(d->instance, &n, phys));
	d->phys = phys[index];
	free(phys);
	phys = NULL;

	VkPhysicalDeviceIDProperties ids = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
	VkPhysicalDeviceProperties2 props = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &ids};
	vkGetPhysicalDeviceProperties2(d->phys, &props);
	d->props = props.properties;
	memcpy(d->device_uuid, ids.deviceUUID, sizeof(d->device_uuid));
	vkGetPhysicalDeviceMemoryProperties(d->phys, &d->mem);
	if (d->props.apiVersion < VK_API_VERSION_1_2) {
		rc = vy_err_set(err, VY_E_UNSUPPORTED_FEATURE, NULL,
			"update the device's Vulkan driver or use another device",
			"device %u (%s) offers Vulkan %u.%u; vyred needs 1.2", index,
			d->props.deviceName, VK_API_VERSION_MAJOR(d->props.apiVersion),
			VK_API_VERSION_MINOR(d->props.apiVersion));
		goto error;
	}
	rc = pick_queue(d, err);
	if (rc == 0) {
		rc = create_device(d, err);
	}
	if (rc == 0) {
		rc = choose_memory(d, err);
	}
	if (rc) {
		goto error;
	}
	return 0;
error:
	free(phys);
	vy__vk_device_close(d);
	return rc;
}

void vy__vk_device_close(struct vy_vk_device *d)
{
	if (d->dev) {
		d->vk.vkDestroyDevice(d->dev, NULL);
	}
	if (d->messenger) {
		d->destroy_messenger(d->instance, d->messenger, NULL);
	}
	if (d->instance) {
		vkDestroyInstance(d->instance, NULL);
	}
	uint32_t index = d->index;
	memset(d, 0, sizeof(*d));
	d->index = index;
}

int vy__vk_device_wait_idle(struct vy_vk_device *d, struct vy_err *err)
{
	int rc = 0;
	VY_VK(d->vk.vkDeviceWaitIdle(d->dev));
	return 0;
error:
	return rc;
}

static void read_budget(const struct vy_vk_device *d, VkPhysicalDeviceMemoryBudgetPropertiesEXT *b)
{
	memset(b, 0, sizeof(*b));
	b->sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT;
	VkPhysicalDeviceMemoryProperties2 p = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2, .pNext = b};
	vkGetPhysicalDeviceMemoryProperties2(d->phys, &p);
}

void vy__vk_device_heaps(const struct vy_vk_device *d, struct vy_device_profile *out)
{
	VkPhysicalDeviceMemoryBudgetPropertiesEXT budget;
	if (d->memory_budget) {
		read_budget(d, &budget);
	}
	uint32_t n = d->mem.memoryHeapCount;
	if (n > VY_DEVICE_MAX_HEAPS) {
		n = VY_DEVICE_MAX_HEAPS;
	}
	out->n_heaps = n;
	for (uint32_t i = 0; i < n; i++) {
		out->heaps[i] = (struct vy_memory_heap){
			.total_bytes = d->mem.memoryHeaps[i].size,
			.used_bytes = d->memory_budget ? budget.heapUsage[i] : 0,
			.device_local = (d->mem.memoryHeaps[i].flags &
						VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0,
		};
	}
}

uint64_t vy__vk_device_available(const struct vy_vk_device *d, uint32_t type, uint64_t allocated)
{
	assert(type < d->mem.memoryTypeCount);
	uint32_t heap = d->mem.memoryTypes[type].heapIndex;
	uint64_t size = d->mem.memoryHeaps[heap].size;
	if (d->memory_budget) {
		VkPhysicalDeviceMemoryBudgetPropertiesEXT budget;
		read_budget(d, &budget);
		uint64_t b = budget.heapBudget[heap];
		uint64_t used = budget.heapUsage[heap];
		return b > used ? b - used : 0;
	}
	return size > allocated ? size - allocated : 0;
}
