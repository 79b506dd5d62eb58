/*
 * VkResult names and their translation into vyred's error codes, with a Fix line chosen by what
 * a user can do about each kind of failure.
 */
#include "vk_util.h"

#include <stdio.h>
#include <string.h>

#define VY__VK_RESULT_MAP(X)                                                                       \
	X(VK_SUCCESS)                                                                              \
	X(VK_NOT_READY)                                                                            \
	X(VK_TIMEOUT)                                                                              \
	X(VK_EVENT_SET)                                                                            \
	X(VK_EVENT_RESET)                                                                          \
	X(VK_INCOMPLETE)                                                                           \
	X(VK_ERROR_OUT_OF_HOST_MEMORY)                                                             \
	X(VK_ERROR_OUT_OF_DEVICE_MEMORY)                                                           \
	X(VK_ERROR_INITIALIZATION_FAILED)                                                          \
	X(VK_ERROR_DEVICE_LOST)                                                                    \
	X(VK_ERROR_MEMORY_MAP_FAILED)                                                              \
	X(VK_ERROR_LAYER_NOT_PRESENT)                                                              \
	X(VK_ERROR_EXTENSION_NOT_PRESENT)                                                          \
	X(VK_ERROR_FEATURE_NOT_PRESENT)                                                            \
	X(VK_ERROR_INCOMPATIBLE_DRIVER)                                                            \
	X(VK_ERROR_TOO_MANY_OBJECTS)                                                               \
	X(VK_ERROR_FORMAT_NOT_SUPPORTED)                                                           \
	X(VK_ERROR_FRAGMENTED_POOL)                                                                \
	X(VK_ERROR_UNKNOWN)                                                                        \
	X(VK_ERROR_OUT_OF_POOL_MEMORY)                                                             \
	X(VK_ERROR_INVALID_EXTERNAL_HANDLE)                                                        \
	X(VK_ERROR_FRAGMENTATION)                                                                  \
	X(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)                                                 \
	X(VK_PIPELINE_COMPILE_REQUIRED)                                                            \
	X(VK_ERROR_INVALID_SHADER_NV)

const char *vy__vk_result_name(VkResult res)
{
	switch (res) {
#define VY__VK_RESULT_CASE(name)                                                                   \
	case name:                                                                                 \
		return #name;
		VY__VK_RESULT_MAP(VY__VK_RESULT_CASE)
#undef VY__VK_RESULT_CASE
	default:
		return res < 0 ? "VK_ERROR_(other)" : "VK_(other status)";
	}
}

int vy__vk_result_code(VkResult res)
{
	switch (res) {
	case VK_ERROR_OUT_OF_HOST_MEMORY:
	case VK_ERROR_OUT_OF_DEVICE_MEMORY:
	case VK_ERROR_OUT_OF_POOL_MEMORY:
	case VK_ERROR_FRAGMENTED_POOL:
	case VK_ERROR_FRAGMENTATION:
	case VK_ERROR_TOO_MANY_OBJECTS:
		return VY_E_OUT_OF_MEMORY;
	case VK_ERROR_DEVICE_LOST:
		return VY_E_DEVICE_LOST;
	case VK_ERROR_INITIALIZATION_FAILED:
	case VK_ERROR_INCOMPATIBLE_DRIVER:
	case VK_ERROR_LAYER_NOT_PRESENT:
	case VK_ERROR_EXTENSION_NOT_PRESENT:
	case VK_ERROR_FEATURE_NOT_PRESENT:
		return VY_E_UNSUPPORTED_FEATURE;
	default:
		return VY_E_DISPATCH_FAILED;
	}
}

static const char *fix_for(int code, VkResult res)
{
	switch (code) {
	case VY_E_OUT_OF_MEMORY:
		return "free resident buffers or send smaller requests, then retry";
	case VY_E_DEVICE_LOST:
		return "retry once the device has been recovered, and check the kernel log for GPU "
		       "faults";
	case VY_E_UNSUPPORTED_FEATURE:
		if (res == VK_ERROR_LAYER_NOT_PRESENT) {
			return "install vulkan-validationlayers or run without validation";
		}
		return "install a Vulkan 1.2 driver for this device (mesa-vulkan-drivers gives "
		       "lavapipe)";
	default:
		return "retry the request, and report the message if it persists";
	}
}

int vy__vk_call_fail(struct vy_err *err, VkResult res, const char *what)
{
	int code = vy__vk_result_code(res);
	/* Keep the function name of the call's source text, not its arguments. */
	size_t n = strcspn(what, "(");
	const char *name = what;
	const char *assign = memchr(what, '=', n);
	if (assign) {
		name = assign + 1;
		while (*name == ' ') {
			name++;
		}
		n = strcspn(name, "(");
	}
	const char *dot = NULL;
	for (const char *s = name; s < name + n; s++) {
		if (*s == '.' || *s == '>') {
			dot = s;
		}
	}
	if (dot) {
		n -= (size_t)(dot + 1 - name);
		name = dot + 1;
	}
	return vy_err_set(err, code, NULL, fix_for(code, res), "%.*s failed: %s", (int)n, name,
		vy__vk_result_name(res));
}
