/* Pin the Vulkan driver and layer libraries a test process has loaded (see vk_keep.h). */
#include "vk_keep.h"

#include <dlfcn.h>

void vy_test_keep_vulkan_drivers(void)
{
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
}
