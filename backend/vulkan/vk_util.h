/*
 * Vulkan error plumbing shared by the files of the Vulkan backend: the one checking macro that
 * wraps every Vulkan call that returns a VkResult, and the mapping from VkResult to the error
 * codes of protocol/err.h.
 *
 * VY_VK(call) evaluates `call`; a negative VkResult (an error; positive values such as
 * VK_TIMEOUT or VK_INCOMPLETE are statuses) fills the `err` in scope, stores the code in the
 * `rc` in scope and jumps to the `error` label of the function. A call whose status matters is
 * written as an assignment inside the macro: VY_VK(res = vkWaitSemaphores(...)).
 *
 * Thread-safety: the functions keep no state.
 */
#ifndef VY_BACKEND_VULKAN_VK_UTIL_H
#define VY_BACKEND_VULKAN_VK_UTIL_H

#include "vk_volk.h"

#include "err.h"

#define VY_VK(call)                                                                                \
	do {                                                                                       \
		VkResult vy__vk_res = (call);                                                      \
		if (vy__vk_res < 0) {                                                              \
			rc = vy__vk_call_fail(err, vy__vk_res, #call);                             \
			goto error;                                                                \
		}                                                                                  \
	} while (0)

/* "VK_ERROR_DEVICE_LOST", ...; "VK_RESULT_<n>" style text for a value it does not know. */
const char *vy__vk_result_name(VkResult res);

/*
 * The error code for a failed Vulkan call: out-of-memory results give VY_E_OUT_OF_MEMORY,
 * VK_ERROR_DEVICE_LOST gives VY_E_DEVICE_LOST, a missing driver, layer, extension or feature
 * gives VY_E_UNSUPPORTED_FEATURE, anything else VY_E_DISPATCH_FAILED.
 */
int vy__vk_result_code(VkResult res);

/*
 * Fill `err` (may be NULL) for the failed call `what` (the call's source text, of which the
 * function name is kept) and return vy__vk_result_code(res).
 */
int vy__vk_call_fail(struct vy_err *err, VkResult res, const char *what);

#endif
