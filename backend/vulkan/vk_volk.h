/*
 * The one way the Vulkan backend includes volk. volk.h includes <vulkan/vulkan.h>, which the
 * backend/ include directory would resolve to this folder's vulkan.h (the backend's factory
 * header); pointing volk at the Vulkan core header by a path relative to volk.h itself avoids
 * that, and the core header is all a compute backend uses.
 */
#ifndef VY_BACKEND_VULKAN_VK_VOLK_H
#define VY_BACKEND_VULKAN_VK_VOLK_H

#define VOLK_VULKAN_H_PATH "vulkan/vulkan_core.h"
#include <volk.h>

#endif
