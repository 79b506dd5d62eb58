/*
 * Test support: keep Mesa's lavapipe and the validation layer loaded until the process ends.
 * Both keep a few allocations per Vulkan instance; the loader unloads them at vkDestroyInstance,
 * before LeakSanitizer runs, and a leak in unloaded code cannot be named, so tests/lsan.supp
 * could not suppress it by library name. Call after the first Vulkan instance exists.
 */
#ifndef VY_TESTS_SUPPORT_VK_KEEP_H
#define VY_TESTS_SUPPORT_VK_KEEP_H

void vy_test_keep_vulkan_drivers(void);

#endif
