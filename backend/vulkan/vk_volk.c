/*
 * volk's implementation (Debian's libvulkan-volk-dev ships it as source), built with the include
 * rule of vk_volk.h.
 */
#define VOLK_VULKAN_H_PATH "vulkan/vulkan_core.h"
#include <volk.c>
