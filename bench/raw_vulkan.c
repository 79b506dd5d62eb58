/*
 * Hand-written Vulkan for the anchors of vybench (raw_vulkan.h). It is deliberately plain:
 * everything is made once, command buffers are recorded once, and a run is only submit and wait,
 * which is the floor vyred is measured against. volk is reached the way the backend reaches it
 * (vk_volk.h), with a device table of its own.
 */
#include "raw_vulkan.h"

#include <shaderc/shaderc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vk_volk.h"

#define STREAM_WG 256u
#define GRID_X_MAX 32768u
#define TINY_MAX 1024u
#define MATMUL_MAX 8192u
#define RAW_MAX_BUFS 3u
#define PIPE_RUNS_MAX 256u

struct raw_buf {
	VkBuffer buf;
	VkDeviceMemory mem;
	VkDeviceSize size;
	void *map; /* NULL for device-local memory */
};

struct raw_kernel {
	VkShaderModule module;
	VkDescriptorSetLayout set_layout;
	VkPipelineLayout layout;
	VkPipeline pipeline;
	VkDescriptorPool pool;
	VkDescriptorSet set;
	VkDescriptorSet swapped; /* chain only: buffers 0 and 1 the other way round */
	VkCommandBuffer cmd;
	struct raw_buf bufs[RAW_MAX_BUFS];
	uint32_t n_bufs;
};

struct vy_raw_vk {
	VkInstance instance;
	VkPhysicalDevice phys;
	VkPhysicalDeviceProperties props;
	VkPhysicalDeviceMemoryProperties mem_props;
	uint32_t family;
	bool timestamps;
	uint64_t timestamp_mask; /* the queue's valid timestamp bits */
	VkDevice dev;
	struct VolkDeviceTable vk;
	VkQueue queue;
	VkCommandPool cmd_pool;
	VkFence fence;
	VkQueryPool queries;
	uint32_t tiny_n;
	uint32_t matmul_n;
	struct raw_kernel tiny;
	struct raw_kernel stream;
	struct raw_kernel reduce;
	struct raw_kernel matmul;
	struct raw_kernel chain;
	uint32_t chain_n;
	uint32_t chain_steps;
};

static const char tiny_glsl[] = "#version 450\n"
				"layout(local_size_x_id = 0) in;\n"
				"layout(std430, binding = 0) readonly buffer X { uint x[]; };\n"
				"layout(std430, binding = 1) writeonly buffer Y { uint y[]; };\n"
				"void main() {\n"
				"\tuint i = gl_GlobalInvocationID.x;\n"
				"\tif (i < x.length()) { y[i] = x[i] + %uu; }\n"
				"}\n";

/* The grid is folded onto y so that 64M elements stay within the 65535 workgroups of an axis. */
static const char stream_glsl[] = "#version 450\n"
				  "layout(local_size_x = 256) in;\n"
				  "layout(std430, binding = 0) readonly buffer X { vec4 x[]; };\n"
				  "layout(std430, binding = 1) buffer Y { vec4 y[]; };\n"
				  "void main() {\n"
				  "\tuint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y *\n"
				  "\t\t(gl_NumWorkGroups.x * gl_WorkGroupSize.x);\n"
				  "\tif (i < uint(y.length())) { y[i] = x[i] + y[i]; }\n"
				  "}\n";

/* The algorithm of the IR reduce program of vybench, written by hand. */
static const char reduce_glsl[] = "#version 450\n"
				  "layout(local_size_x = 256) in;\n"
				  "layout(constant_id = 0) const uint PER = 1u;\n"
				  "layout(std430, binding = 0) readonly buffer X { uint x[]; };\n"
				  "layout(std430, binding = 1) buffer S { uint s[]; };\n"
				  "shared uint part[256];\n"
				  "void main() {\n"
				  "\tuint l = gl_LocalInvocationID.x;\n"
				  "\tuint stride = gl_NumWorkGroups.x * 256u;\n"
				  "\tuint acc = 0u;\n"
				  "\tfor (uint j = 0u; j < PER; j++) {\n"
				  "\t\tuint i = gl_GlobalInvocationID.x + j * stride;\n"
				  "\t\tif (i < uint(x.length())) { acc += x[i]; }\n"
				  "\t}\n"
				  "\tpart[l] = acc;\n"
				  "\tmemoryBarrierShared();\n"
				  "\tbarrier();\n"
				  "\tfor (uint h = 128u; h > 0u; h >>= 1u) {\n"
				  "\t\tif (l < h) { part[l] += part[l + h]; }\n"
				  "\t\tmemoryBarrierShared();\n"
				  "\t\tbarrier();\n"
				  "\t}\n"
				  "\tif (l == 0u) { atomicAdd(s[0], part[0]); }\n"
				  "}\n";

/* The algorithm of the IR matmul program of vybench, written by hand; `precise` keeps a*b+c
 * unfused, as the IR's mul and add are. */
static const char matmul_glsl[] = "#version 450\n"
				  "layout(local_size_x = 16, local_size_y = 16) in;\n"
				  "layout(constant_id = 0) const uint N = 16u;\n"
				  "layout(std430, binding = 0) readonly buffer A { float a[]; };\n"
				  "layout(std430, binding = 1) readonly buffer B { float b[]; };\n"
				  "layout(std430, binding = 2) writeonly buffer C { float c[]; };\n"
				  "shared float ta[256];\n"
				  "shared float tb[256];\n"
				  "void main() {\n"
				  "\tuint col = gl_GlobalInvocationID.x;\n"
				  "\tuint row = gl_GlobalInvocationID.y;\n"
				  "\tuint lc = gl_LocalInvocationID.x;\n"
				  "\tuint lr = gl_LocalInvocationID.y;\n"
				  "\tprecise float acc = 0.0;\n"
				  "\tfor (uint t = 0u; t < N / 16u; t++) {\n"
				  "\t\tta[lr * 16u + lc] = a[row * N + t * 16u + lc];\n"
				  "\t\ttb[lr * 16u + lc] = b[(t * 16u + lr) * N + col];\n"
				  "\t\tmemoryBarrierShared();\n"
				  "\t\tbarrier();\n"
				  "\t\tfor (uint k = 0u; k < 16u; k++) {\n"
				  "\t\t\tprecise float p = ta[lr * 16u + k] * tb[k * 16u + lc];\n"
				  "\t\t\tacc = acc + p;\n"
				  "\t\t}\n"
				  "\t\tmemoryBarrierShared();\n"
				  "\t\tbarrier();\n"
				  "\t}\n"
				  "\tc[row * N + col] = acc;\n"
				  "}\n";

#define VK_TRY(call)                                                                               \
	do {                                                                                       \
		VkResult vk_try_res = (call);                                                      \
		if (vk_try_res != VK_SUCCESS) {                                                    \
			return vk_fail(err, #call, vk_try_res);                                    \
		}                                                                                  \
	} while (0)

static int vk_fail(struct vy_err *err, const char *what, VkResult res)
{
	int code = res == VK_ERROR_OUT_OF_HOST_MEMORY || res == VK_ERROR_OUT_OF_DEVICE_MEMORY
			   ? VY_E_OUT_OF_MEMORY
			   : VY_E_DISPATCH_FAILED;
	return vy_err_set(err, code, "raw_vulkan", "check the Vulkan driver with vulkaninfo",
		"%s failed with VkResult %d", what, (int)res);
}

static int no_memory(struct vy_err *err, const char *what)
{
	return vy_err_set(err, VY_E_OUT_OF_MEMORY, "raw_vulkan", "free some memory",
		"no memory for %s", what);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int pick_device(struct vy_raw_vk *raw, uint32_t index, struct vy_err *err)
{
	uint32_t n = 0;
	VK_TRY(vkEnumeratePhysicalDevices(raw->instance, &n, NULL));
	if (index >= n) {
		return vy_err_set(err, VY_E_UNSUPPORTED_FEATURE, "--device",
			"pass a device index that vulkaninfo --summary lists",
			"device %u asked for, %u present", index, n);
	}
	VkPhysicalDevice *all = calloc(n, sizeof(*all));
	if (!all) {
		return no_memory(err, "the device list");
	}
	VkResult res = vkEnumeratePhysicalDevices(raw->instance, &n, all);
	raw->phys = all[index];
	free(all);
	if (res != VK_SUCCESS && res != VK_INCOMPLETE) {
		return vk_fail(err, "vkEnumeratePhysicalDevices", res);
	}
	vkGetPhysicalDeviceProperties(raw->phys, &raw->props);
	vkGetPhysicalDeviceMemoryProperties(raw->phys, &raw->mem_props);

	uint32_t nf = 0;
	vkGetPhysicalDeviceQueueFamilyProperties(raw->phys, &nf, NULL);
	VkQueueFamilyProperties fams[64];
	nf = nf > 64 ? 64 : nf;
	vkGetPhysicalDeviceQueueFamilyProperties(raw->phys, &nf, fams);
	for (uint32_t i = 0; i < nf; i++) {
		if (fams[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
			raw->family = i;
			raw->timestamps = fams[i].timestampValidBits > 0 &&
					  raw->props.limits.timestampPeriod > 0.0f;
			uint32_t bits = fams[i].timestampValidBits;
			raw->timestamp_mask = bits >= 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
			return 0;
		}
	}
	return vy_err_set(err, VY_E_UNSUPPORTED_FEATURE, NULL, "pick a device with a compute queue",
		"device %s has no compute queue", raw->props.deviceName);
}

int vy_raw_vk_create(uint32_t device_index, struct vy_raw_vk **out, struct vy_err *err)
{
	*out = NULL;
	if (volkInitialize() != VK_SUCCESS) {
		return vy_err_set(err, VY_E_UNSUPPORTED_FEATURE, NULL,
			"install the Vulkan loader (libvulkan1) and a driver",
			"the Vulkan loader could not be loaded");
	}
	struct vy_raw_vk *raw = calloc(1, sizeof(*raw));
	if (!raw) {
		return no_memory(err, "the raw Vulkan context");
	}
	VkApplicationInfo app = {
		.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
		.pApplicationName = "vybench_raw",
		.apiVersion = VK_API_VERSION_1_2,
	};
	VkInstanceCreateInfo ici = {
		.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
		.pApplicationInfo = &app,
	};
	int rc = 0;
	VkResult res = vkCreateInstance(&ici, NULL, &raw->instance);
	if (res != VK_SUCCESS) {
		rc = vk_fail(err, "vkCreateInstance", res);
		goto error;
	}
	volkLoadInstanceOnly(raw->instance);
	rc = pick_device(raw, device_index, err);
	if (rc) {
		goto error;
	}
	float prio = 1.0f;
	VkDeviceQueueCreateInfo qci = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
		.queueFamilyIndex = raw->family,
		.queueCount = 1,
		.pQueuePriorities = &prio,
	};
	VkDeviceCreateInfo dci = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
		.queueCreateInfoCount = 1,
		.pQueueCreateInfos = &qci,
	};
	res = vkCreateDevice(raw->phys, &dci, NULL, &raw->dev);
	if (res != VK_SUCCESS) {
		rc = vk_fail(err, "vkCreateDevice", res);
		goto error;
	}
	volkLoadDeviceTable(&raw->vk, raw->dev);
	raw->vk.vkGetDeviceQueue(raw->dev, raw->family, 0, &raw->queue);
	VkCommandPoolCreateInfo cpi = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
		.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
		.queueFamilyIndex = raw->family,
	};
	VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
	VkQueryPoolCreateInfo qpi = {
		.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
		.queryType = VK_QUERY_TYPE_TIMESTAMP,
		.queryCount = 2,
	};
	res = raw->vk.vkCreateCommandPool(raw->dev, &cpi, NULL, &raw->cmd_pool);
	if (res == VK_SUCCESS) {
		res = raw->vk.vkCreateFence(raw->dev, &fci, NULL, &raw->fence);
	}
	if (res == VK_SUCCESS && raw->timestamps) {
		res = raw->vk.vkCreateQueryPool(raw->dev, &qpi, NULL, &raw->queries);
	}
	if (res != VK_SUCCESS) {
		rc = vk_fail(err, "creating the command pool, fence and query pool", res);
		goto error;
	}
	*out = raw;
	return 0;
error:
	vy_raw_vk_destroy(raw);
	return rc;
}

static void buf_destroy(struct vy_raw_vk *raw, struct raw_buf *b)
{
	if (b->buf) {
		raw->vk.vkDestroyBuffer(raw->dev, b->buf, NULL);
	}
	if (b->mem) {
		raw->vk.vkFreeMemory(raw->dev, b->mem, NULL);
	}
	*b = (struct raw_buf){0};
}

static void kernel_destroy(struct vy_raw_vk *raw, struct raw_kernel *k)
{
	for (uint32_t i = 0; i < RAW_MAX_BUFS; i++) {
		buf_destroy(raw, &k->bufs[i]);
	}
	if (k->pool) {
		raw->vk.vkDestroyDescriptorPool(raw->dev, k->pool, NULL);
	}
	if (k->pipeline) {
		raw->vk.vkDestroyPipeline(raw->dev, k->pipeline, NULL);
	}
	if (k->layout) {
		raw->vk.vkDestroyPipelineLayout(raw->dev, k->layout, NULL);
	}
	if (k->set_layout) {
		raw->vk.vkDestroyDescriptorSetLayout(raw->dev, k->set_layout, NULL);
	}
	if (k->module) {
		raw->vk.vkDestroyShaderModule(raw->dev, k->module, NULL);
	}
	if (k->cmd) {
		raw->vk.vkFreeCommandBuffers(raw->dev, raw->cmd_pool, 1, &k->cmd);
	}
	*k = (struct raw_kernel){0};
}

void vy_raw_vk_destroy(struct vy_raw_vk *raw)
{
	if (!raw) {
		return;
	}
	if (raw->dev) {
		raw->vk.vkDeviceWaitIdle(raw->dev);
		kernel_destroy(raw, &raw->tiny);
		kernel_destroy(raw, &raw->stream);
		kernel_destroy(raw, &raw->reduce);
		kernel_destroy(raw, &raw->matmul);
		kernel_destroy(raw, &raw->chain);
		if (raw->queries) {
			raw->vk.vkDestroyQueryPool(raw->dev, raw->queries, NULL);
		}
		if (raw->fence) {
			raw->vk.vkDestroyFence(raw->dev, raw->fence, NULL);
		}
		if (raw->cmd_pool) {
			raw->vk.vkDestroyCommandPool(raw->dev, raw->cmd_pool, NULL);
		}
		raw->vk.vkDestroyDevice(raw->dev, NULL);
	}
	if (raw->instance) {
		vkDestroyInstance(raw->instance, NULL);
	}
	free(raw);
}

const char *vy_raw_vk_device_name(const struct vy_raw_vk *raw)
{
	return raw->props.deviceName;
}

bool vy_raw_vk_is_cpu(const struct vy_raw_vk *raw)
{
	return raw->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
}

static int buf_create(
	struct vy_raw_vk *raw, VkDeviceSize size, bool host, struct raw_buf *b, struct vy_err *err)
{
	VkBufferCreateInfo bci = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.size = size,
		.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
			 VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
		.sharingMode = VK_SHARING_MODE_EXCLUSIVE,
	};
	b->size = size;
	VK_TRY(raw->vk.vkCreateBuffer(raw->dev, &bci, NULL, &b->buf));
	VkMemoryRequirements req;
	raw->vk.vkGetBufferMemoryRequirements(raw->dev, b->buf, &req);
	VkMemoryPropertyFlags want =
		host ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
		     : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
	uint32_t type = UINT32_MAX;
	for (uint32_t i = 0; i < raw->mem_props.memoryTypeCount && type == UINT32_MAX; i++) {
		if ((req.memoryTypeBits & (1u << i)) &&
			(raw->mem_props.memoryTypes[i].propertyFlags & want) == want) {
			type = i;
		}
	}
	if (type == UINT32_MAX) {
		return vy_err_set(err, VY_E_UNSUPPORTED_FEATURE, NULL,
			"run on a device with host-visible coherent and device-local memory",
			"no memory type with flags 0x%x", (unsigned)want);
	}
	VkMemoryAllocateInfo mai = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
		.allocationSize = req.size,
		.memoryTypeIndex = type,
	};
	VK_TRY(raw->vk.vkAllocateMemory(raw->dev, &mai, NULL, &b->mem));
	VK_TRY(raw->vk.vkBindBufferMemory(raw->dev, b->buf, b->mem, 0));
	if (host) {
		VK_TRY(raw->vk.vkMapMemory(raw->dev, b->mem, 0, VK_WHOLE_SIZE, 0, &b->map));
	}
	return 0;
}

/* Both ways of waiting start alike: one command buffer that signals the bench's fence. */
static int submit_one(struct vy_raw_vk *raw, VkCommandBuffer cmd, struct vy_err *err)
{
	VkSubmitInfo si = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.commandBufferCount = 1,
		.pCommandBuffers = &cmd,
	};
	VK_TRY(raw->vk.vkResetFences(raw->dev, 1, &raw->fence));
	VK_TRY(raw->vk.vkQueueSubmit(raw->queue, 1, &si, raw->fence));
	return 0;
}

static int submit_wait(struct vy_raw_vk *raw, VkCommandBuffer cmd, struct vy_err *err)
{
	int rc = submit_one(raw, cmd, err);
	if (rc) {
		return rc;
	}
	VkResult res;
	while ((res = raw->vk.vkGetFenceStatus(raw->dev, raw->fence)) == VK_NOT_READY) {
	}
	VK_TRY(res);
	return 0;
}

/* Submit and sleep in vkWaitForFences: what most Vulkan programs do. */
static int submit_block(struct vy_raw_vk *raw, VkCommandBuffer cmd, struct vy_err *err)
{
	int rc = submit_one(raw, cmd, err);
	if (rc) {
		return rc;
	}
	VK_TRY(raw->vk.vkWaitForFences(raw->dev, 1, &raw->fence, VK_TRUE, UINT64_MAX));
	return 0;
}

static int cmd_alloc(struct vy_raw_vk *raw, VkCommandBuffer *cmd, struct vy_err *err)
{
	VkCommandBufferAllocateInfo cai = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
		.commandPool = raw->cmd_pool,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
		.commandBufferCount = 1,
	};
	VK_TRY(raw->vk.vkAllocateCommandBuffers(raw->dev, &cai, cmd));
	return 0;
}

static int once_begin(struct vy_raw_vk *raw, VkCommandBuffer *cmd, struct vy_err *err)
{
	int rc = cmd_alloc(raw, cmd, err);
	if (rc) {
		return rc;
	}
	VkCommandBufferBeginInfo cbi = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
		.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
	};
	VkResult res = raw->vk.vkBeginCommandBuffer(*cmd, &cbi);
	if (res != VK_SUCCESS) {
		raw->vk.vkFreeCommandBuffers(raw->dev, raw->cmd_pool, 1, cmd);
		return vk_fail(err, "vkBeginCommandBuffer", res);
	}
	return 0;
}

/* End, submit and wait for a command buffer of once_begin, and free it. */
static int once_end(struct vy_raw_vk *raw, VkCommandBuffer cmd, struct vy_err *err)
{
	VkResult res = raw->vk.vkEndCommandBuffer(cmd);
	int rc = res == VK_SUCCESS ? submit_wait(raw, cmd, err)
				   : vk_fail(err, "vkEndCommandBuffer", res);
	raw->vk.vkFreeCommandBuffers(raw->dev, raw->cmd_pool, 1, &cmd);
	return rc;
}

/* Whatever a transfer wrote becomes visible to the shaders and the host that come after it. */
static void transfer_barrier(struct vy_raw_vk *raw, VkCommandBuffer cmd)
{
	VkMemoryBarrier mb = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
				 VK_ACCESS_HOST_READ_BIT,
	};
	raw->vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
		VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0,
		NULL, 0, NULL);
}

/* Copy bytes into a buffer: directly when it is mapped, else through a staging buffer. */
static int buf_write(struct vy_raw_vk *raw, struct raw_buf *dst, const void *data,
	VkDeviceSize size, struct vy_err *err)
{
	if (dst->map) {
		memcpy(dst->map, data, (size_t)size);
		return 0;
	}
	struct raw_buf st = {0};
	VkCommandBuffer cmd = VK_NULL_HANDLE;
	int rc = buf_create(raw, size, true, &st, err);
	if (rc == 0) {
		memcpy(st.map, data, (size_t)size);
		rc = once_begin(raw, &cmd, err);
	}
	if (rc == 0) {
		VkBufferCopy region = {0, 0, size};
		raw->vk.vkCmdCopyBuffer(cmd, st.buf, dst->buf, 1, &region);
		transfer_barrier(raw, cmd);
		rc = once_end(raw, cmd, err);
	}
	buf_destroy(raw, &st);
	return rc;
}

/* Copy `size` bytes at `offset` of a device-local buffer into `dst` through a staging buffer. */
static int buf_read(struct vy_raw_vk *raw, struct raw_buf *src, VkDeviceSize offset, void *dst,
	VkDeviceSize size, struct vy_err *err)
{
	struct raw_buf st = {0};
	VkCommandBuffer cmd = VK_NULL_HANDLE;
	int rc = buf_create(raw, size, true, &st, err);
	if (rc == 0) {
		rc = once_begin(raw, &cmd, err);
	}
	if (rc == 0) {
		VkMemoryBarrier before = {
			.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
			.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
			.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT,
		};
		raw->vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
			VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &before, 0, NULL, 0, NULL);
		VkBufferCopy region = {offset, 0, size};
		raw->vk.vkCmdCopyBuffer(cmd, src->buf, st.buf, 1, &region);
		transfer_barrier(raw, cmd);
		rc = once_end(raw, cmd, err);
	}
	if (rc == 0) {
		memcpy(dst, st.map, (size_t)size);
	}
	buf_destroy(raw, &st);
	return rc;
}

/* GLSL to SPIR-V with shaderc; *code is malloc'd. */
static int compile_spirv(
	const char *glsl, const char *name, uint32_t **code, size_t *len, struct vy_err *err)
{
	*code = NULL;
	shaderc_compiler_t compiler = shaderc_compiler_initialize();
	shaderc_compile_options_t opts = shaderc_compile_options_initialize();
	if (!compiler || !opts) {
		shaderc_compile_options_release(opts);
		shaderc_compiler_release(compiler);
		return no_memory(err, "shaderc");
	}
	shaderc_compile_options_set_target_env(
		opts, shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_2);
	shaderc_compile_options_set_optimization_level(
		opts, shaderc_optimization_level_performance);
	shaderc_compilation_result_t res = shaderc_compile_into_spv(
		compiler, glsl, strlen(glsl), shaderc_compute_shader, name, "main", opts);
	int rc = 0;
	if (shaderc_result_get_compilation_status(res) != shaderc_compilation_status_success) {
		rc = vy_err_set(err, VY_E_DISPATCH_FAILED, name,
			"reinstall libshaderc-dev and glslang-dev", "shaderc: %s",
			shaderc_result_get_error_message(res));
	} else {
		*len = shaderc_result_get_length(res);
		*code = malloc(*len);
		if (*code) {
			memcpy(*code, shaderc_result_get_bytes(res), *len);
		} else {
			rc = no_memory(err, "SPIR-V");
		}
	}
	shaderc_result_release(res);
	shaderc_compile_options_release(opts);
	shaderc_compiler_release(compiler);
	return rc;
}

static int module_create(struct vy_raw_vk *raw, const uint32_t *code, size_t len,
	VkShaderModule *out, struct vy_err *err)
{
	VkShaderModuleCreateInfo smi = {
		.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
		.codeSize = len,
		.pCode = code,
	};
	VK_TRY(raw->vk.vkCreateShaderModule(raw->dev, &smi, NULL, out));
	return 0;
}

/* A set layout of `n` storage buffers at bindings 0..n-1 and a pipeline layout over it. */
static int layout_create(struct vy_raw_vk *raw, uint32_t n, VkDescriptorSetLayout *set_layout,
	VkPipelineLayout *layout, struct vy_err *err)
{
	VkDescriptorSetLayoutBinding binds[RAW_MAX_BUFS];
	for (uint32_t i = 0; i < n; i++) {
		binds[i] = (VkDescriptorSetLayoutBinding){
			.binding = i,
			.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
			.descriptorCount = 1,
			.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
		};
	}
	VkDescriptorSetLayoutCreateInfo dsl = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
		.bindingCount = n,
		.pBindings = binds,
	};
	VK_TRY(raw->vk.vkCreateDescriptorSetLayout(raw->dev, &dsl, NULL, set_layout));
	VkPipelineLayoutCreateInfo pli = {
		.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
		.setLayoutCount = 1,
		.pSetLayouts = set_layout,
	};
	VK_TRY(raw->vk.vkCreatePipelineLayout(raw->dev, &pli, NULL, layout));
	return 0;
}

static int pipeline_create(struct vy_raw_vk *raw, VkShaderModule module, VkPipelineLayout layout,
	const VkSpecializationInfo *spec, VkPipelineCache cache, VkPipeline *out,
	struct vy_err *err)
{
	VkComputePipelineCreateInfo cpi = {
		.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
		.stage =
			{
				.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
				.stage = VK_SHADER_STAGE_COMPUTE_BIT,
				.module = module,
				.pName = "main",
				.pSpecializationInfo = spec,
			},
		.layout = layout,
	};
	VK_TRY(raw->vk.vkCreateComputePipelines(raw->dev, cache, 1, &cpi, NULL, out));
	return 0;
}

/* Pipeline, one descriptor set over the kernel's buffers, and one primary command buffer. */
static int kernel_build(struct vy_raw_vk *raw, struct raw_kernel *k, const char *glsl,
	const char *name, const VkSpecializationInfo *spec, struct vy_err *err)
{
	uint32_t *code = NULL;
	size_t len = 0;
	int rc = compile_spirv(glsl, name, &code, &len, err);
	if (rc == 0) {
		rc = module_create(raw, code, len, &k->module, err);
	}
	free(code);
	if (rc == 0) {
		rc = layout_create(raw, k->n_bufs, &k->set_layout, &k->layout, err);
	}
	if (rc == 0) {
		rc = pipeline_create(
			raw, k->module, k->layout, spec, VK_NULL_HANDLE, &k->pipeline, err);
	}
	if (rc) {
		return rc;
	}
	/* Room for a second set (the chain's swapped one). */
	VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2 * k->n_bufs};
	VkDescriptorPoolCreateInfo dpi = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
		.maxSets = 2,
		.poolSizeCount = 1,
		.pPoolSizes = &ps,
	};
	VK_TRY(raw->vk.vkCreateDescriptorPool(raw->dev, &dpi, NULL, &k->pool));
	VkDescriptorSetAllocateInfo dai = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
		.descriptorPool = k->pool,
		.descriptorSetCount = 1,
		.pSetLayouts = &k->set_layout,
	};
	VK_TRY(raw->vk.vkAllocateDescriptorSets(raw->dev, &dai, &k->set));
	VkDescriptorBufferInfo infos[RAW_MAX_BUFS];
	VkWriteDescriptorSet writes[RAW_MAX_BUFS];
	for (uint32_t i = 0; i < k->n_bufs; i++) {
		infos[i] = (VkDescriptorBufferInfo){k->bufs[i].buf, 0, k->bufs[i].size};
		writes[i] = (VkWriteDescriptorSet){
			.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
			.dstSet = k->set,
			.dstBinding = i,
			.descriptorCount = 1,
			.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
			.pBufferInfo = &infos[i],
		};
	}
	raw->vk.vkUpdateDescriptorSets(raw->dev, k->n_bufs, writes, 0, NULL);
	return cmd_alloc(raw, &k->cmd, err);
}

/*
 * Record the kernel's command buffer once: zero buffer `zero` first where it is not -1, the
 * dispatch between timestamps where `timed` and the queue has them, and a barrier after it so
 * that the next run and the host see what the dispatch wrote; where `back` is not -1, then copy
 * buffer `back` into the kernel's last buffer (host-visible) for the host to read.
 */
static int kernel_record(struct vy_raw_vk *raw, struct raw_kernel *k, uint32_t gx, uint32_t gy,
	int zero, int back, bool timed, struct vy_err *err)
{
	VkCommandBuffer cmd = k->cmd;
	VkCommandBufferBeginInfo cbi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
	VK_TRY(raw->vk.vkBeginCommandBuffer(cmd, &cbi));
	if (zero >= 0) {
		raw->vk.vkCmdFillBuffer(cmd, k->bufs[zero].buf, 0, VK_WHOLE_SIZE, 0);
		transfer_barrier(raw, cmd);
	}
	timed = timed && raw->timestamps;
	if (timed) {
		raw->vk.vkCmdResetQueryPool(cmd, raw->queries, 0, 2);
		raw->vk.vkCmdWriteTimestamp(
			cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, raw->queries, 0);
	}
	raw->vk.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k->pipeline);
	raw->vk.vkCmdBindDescriptorSets(
		cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k->layout, 0, 1, &k->set, 0, NULL);
	raw->vk.vkCmdDispatch(cmd, gx, gy, 1);
	if (timed) {
		raw->vk.vkCmdWriteTimestamp(
			cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, raw->queries, 1);
	}
	VkMemoryBarrier mb = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
				 VK_ACCESS_HOST_READ_BIT |
				 (back >= 0 ? VK_ACCESS_TRANSFER_READ_BIT : 0),
	};
	raw->vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
		VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_HOST_BIT |
			(back >= 0 ? VK_PIPELINE_STAGE_TRANSFER_BIT : 0),
		0, 1, &mb, 0, NULL, 0, NULL);
	if (back >= 0) {
		const struct raw_buf *src = &k->bufs[back];
		VkBufferCopy region = {0, 0, src->size};
		raw->vk.vkCmdCopyBuffer(cmd, src->buf, k->bufs[k->n_bufs - 1].buf, 1, &region);
		transfer_barrier(raw, cmd);
	}
	VK_TRY(raw->vk.vkEndCommandBuffer(cmd));
	return 0;
}

static int kernel_run(
	struct vy_raw_vk *raw, struct raw_kernel *k, struct vy_raw_vk_run *run, struct vy_err *err)
{
	uint64_t t0 = now_ns();
	int rc = submit_wait(raw, k->cmd, err);
	run->wall_ns = now_ns() - t0;
	run->device_ns = UINT64_MAX;
	if (rc || !raw->timestamps) {
		return rc;
	}
	uint64_t ticks[2];
	VK_TRY(raw->vk.vkGetQueryPoolResults(raw->dev, raw->queries, 0, 2, sizeof(ticks), ticks,
		sizeof(ticks[0]), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
	uint64_t dt = (ticks[1] - ticks[0]) & raw->timestamp_mask;
	run->device_ns = (uint64_t)((double)dt * (double)raw->props.limits.timestampPeriod);
	return 0;
}

/*
 * The tiny kernel (y = x + 1, one workgroup of n) over two new host-visible buffers of n u32;
 * `staged`: y in device-local memory instead, with a third, host-visible buffer to copy it into.
 */
static int tiny_kernel_make(struct vy_raw_vk *raw, struct raw_kernel *k, uint32_t n, bool staged,
	const char *name, struct vy_err *err)
{
	kernel_destroy(raw, k);
	k->n_bufs = staged ? 3 : 2;
	VkDeviceSize size = (VkDeviceSize)n * 4;
	int rc = buf_create(raw, size, true, &k->bufs[0], err);
	if (rc == 0) {
		rc = buf_create(raw, size, !staged, &k->bufs[1], err);
	}
	if (rc == 0 && staged) {
		rc = buf_create(raw, size, true, &k->bufs[2], err);
	}
	char glsl[sizeof(tiny_glsl) + 16];
	snprintf(glsl, sizeof(glsl), tiny_glsl, 1u);
	uint32_t wg = n;
	VkSpecializationMapEntry entry = {0, 0, sizeof(wg)};
	VkSpecializationInfo spec = {1, &entry, sizeof(wg), &wg};
	return rc ? rc : kernel_build(raw, k, glsl, name, &spec, err);
}

int vy_raw_vk_tiny_prepare(struct vy_raw_vk *raw, uint32_t n, bool staged, struct vy_err *err)
{
	if (n == 0 || n > TINY_MAX) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "tiny", "use 1 to 1024 elements",
			"%u elements asked for", n);
	}
	raw->tiny_n = n;
	int rc = tiny_kernel_make(raw, &raw->tiny, n, staged, "tiny.comp", err);
	if (rc == 0) {
		rc = kernel_record(
			raw, &raw->tiny, 1, 1, staged ? 1 : -1, staged ? 1 : -1, false, err);
	}
	return rc;
}

int vy_raw_vk_tiny_run(
	struct vy_raw_vk *raw, const uint32_t *in, uint32_t *out, bool block, struct vy_err *err)
{
	size_t bytes = (size_t)raw->tiny_n * 4;
	memcpy(raw->tiny.bufs[0].map, in, bytes);
	int rc = block ? submit_block(raw, raw->tiny.cmd, err)
		       : submit_wait(raw, raw->tiny.cmd, err);
	if (rc == 0) {
		memcpy(out, raw->tiny.bufs[raw->tiny.n_bufs - 1].map, bytes);
	}
	return rc;
}

/* The chain's second set: binding 0 reads buffer 1, binding 1 writes buffer 0. */
static int chain_swapped_set(struct vy_raw_vk *raw, struct raw_kernel *k, struct vy_err *err)
{
	VkDescriptorSetAllocateInfo dai = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
		.descriptorPool = k->pool,
		.descriptorSetCount = 1,
		.pSetLayouts = &k->set_layout,
	};
	VK_TRY(raw->vk.vkAllocateDescriptorSets(raw->dev, &dai, &k->swapped));
	VkDescriptorBufferInfo infos[2] = {
		{k->bufs[1].buf, 0, k->bufs[1].size}, {k->bufs[0].buf, 0, k->bufs[0].size}};
	VkWriteDescriptorSet writes[2];
	for (uint32_t i = 0; i < 2; i++) {
		writes[i] = (VkWriteDescriptorSet){
			.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
			.dstSet = k->swapped,
			.dstBinding = i,
			.descriptorCount = 1,
			.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
			.pBufferInfo = &infos[i],
		};
	}
	raw->vk.vkUpdateDescriptorSets(raw->dev, 2, writes, 0, NULL);
	return 0;
}

/* The chain's command buffer: `steps` dispatches, each reading what the one before wrote. */
static int chain_record(
	struct vy_raw_vk *raw, struct raw_kernel *k, uint32_t steps, struct vy_err *err)
{
	VkCommandBuffer cmd = k->cmd;
	VkCommandBufferBeginInfo cbi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
	VK_TRY(raw->vk.vkBeginCommandBuffer(cmd, &cbi));
	if (raw->timestamps) {
		raw->vk.vkCmdResetQueryPool(cmd, raw->queries, 0, 2);
		raw->vk.vkCmdWriteTimestamp(
			cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, raw->queries, 0);
	}
	raw->vk.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k->pipeline);
	VkMemoryBarrier mb = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
	};
	for (uint32_t s = 0; s < steps; s++) {
		if (s > 0) {
			raw->vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
				VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
		}
		VkDescriptorSet set = s % 2 ? k->swapped : k->set;
		raw->vk.vkCmdBindDescriptorSets(
			cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k->layout, 0, 1, &set, 0, NULL);
		raw->vk.vkCmdDispatch(cmd, 1, 1, 1);
	}
	if (raw->timestamps) {
		raw->vk.vkCmdWriteTimestamp(
			cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, raw->queries, 1);
	}
	mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
	raw->vk.vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
		VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
	VK_TRY(raw->vk.vkEndCommandBuffer(cmd));
	return 0;
}

int vy_raw_vk_chain_prepare(struct vy_raw_vk *raw, uint32_t n, uint32_t steps, struct vy_err *err)
{
	if (n == 0 || n > TINY_MAX || steps == 0) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "chain",
			"use 1 to 1024 elements and a step", "%u elements and %u steps asked for",
			n, steps);
	}
	raw->chain_n = n;
	raw->chain_steps = steps;
	struct raw_kernel *k = &raw->chain;
	int rc = tiny_kernel_make(raw, k, n, false, "chain.comp", err);
	if (rc == 0) {
		rc = chain_swapped_set(raw, k, err);
	}
	if (rc == 0) {
		rc = chain_record(raw, k, steps, err);
	}
	return rc;
}

int vy_raw_vk_chain_run(struct vy_raw_vk *raw, const uint32_t *in, uint32_t *out,
	struct vy_raw_vk_run *run, struct vy_err *err)
{
	size_t bytes = (size_t)raw->chain_n * 4;
	memcpy(raw->chain.bufs[0].map, in, bytes);
	int rc = kernel_run(raw, &raw->chain, run, err);
	if (rc == 0) {
		memcpy(out, raw->chain.bufs[raw->chain_steps % 2].map, bytes);
	}
	return rc;
}

/* Workgroups over x, folded onto y so that no axis passes GRID_X_MAX. */
static void fold_grid(uint64_t groups, uint32_t *gx, uint32_t *gy)
{
	*gx = groups < GRID_X_MAX ? (uint32_t)groups : GRID_X_MAX;
	*gy = (uint32_t)((groups + *gx - 1) / *gx);
}

int vy_raw_vk_stream_prepare(struct vy_raw_vk *raw, uint64_t n, struct vy_err *err)
{
	if (n == 0 || n % 4 != 0 || n > (UINT64_C(1) << 32) - 4) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "stream",
			"use a positive multiple of 4 elements below 2^32",
			"%llu elements asked for", (unsigned long long)n);
	}
	kernel_destroy(raw, &raw->stream);
	struct raw_kernel *k = &raw->stream;
	k->n_bufs = 2;
	VkDeviceSize size = (VkDeviceSize)n * 4;
	int rc = buf_create(raw, size, false, &k->bufs[0], err);
	if (rc == 0) {
		rc = buf_create(raw, size, false, &k->bufs[1], err);
	}
	if (rc == 0) {
		rc = kernel_build(raw, k, stream_glsl, "stream.comp", NULL, err);
	}
	VkCommandBuffer cmd = VK_NULL_HANDLE;
	if (rc == 0) {
		rc = once_begin(raw, &cmd, err);
	}
	if (rc) {
		return rc;
	}
	/* x = 1.0f, y = 0.0f */
	raw->vk.vkCmdFillBuffer(cmd, k->bufs[0].buf, 0, VK_WHOLE_SIZE, 0x3f800000u);
	raw->vk.vkCmdFillBuffer(cmd, k->bufs[1].buf, 0, VK_WHOLE_SIZE, 0);
	transfer_barrier(raw, cmd);
	rc = once_end(raw, cmd, err);
	uint32_t gx, gy;
	fold_grid((n / 4 + STREAM_WG - 1) / STREAM_WG, &gx, &gy);
	if (rc == 0) {
		rc = kernel_record(raw, k, gx, gy, -1, -1, true, err);
	}
	return rc;
}

int vy_raw_vk_stream_run(struct vy_raw_vk *raw, struct vy_raw_vk_run *run, struct vy_err *err)
{
	return kernel_run(raw, &raw->stream, run, err);
}

int vy_raw_vk_stream_read(
	struct vy_raw_vk *raw, uint64_t first, float *dst, size_t count, struct vy_err *err)
{
	struct raw_buf *y = &raw->stream.bufs[1];
	if (!y->buf || (first + count) * 4 > y->size || count == 0) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "stream", "read within the stream buffer",
			"elements %llu..%llu asked for", (unsigned long long)first,
			(unsigned long long)(first + count));
	}
	return buf_read(raw, y, first * 4, dst, count * 4, err);
}

int vy_raw_vk_reduce_prepare(struct vy_raw_vk *raw, const uint32_t *x, uint64_t n, uint32_t groups,
	uint32_t per, struct vy_err *err)
{
	if (n == 0 || n > UINT32_MAX || groups == 0 || groups > 65535 || per == 0) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "reduce",
			"use 1 to 2^32-1 elements and 1 to 65535 workgroups",
			"%llu elements over %u workgroups asked for", (unsigned long long)n,
			groups);
	}
	kernel_destroy(raw, &raw->reduce);
	struct raw_kernel *k = &raw->reduce;
	k->n_bufs = 2;
	int rc = buf_create(raw, (VkDeviceSize)n * 4, false, &k->bufs[0], err);
	if (rc == 0) {
		rc = buf_create(raw, 256, true, &k->bufs[1], err);
	}
	if (rc == 0) {
		rc = buf_write(raw, &k->bufs[0], x, (VkDeviceSize)n * 4, err);
	}
	VkSpecializationMapEntry entry = {0, 0, sizeof(per)};
	VkSpecializationInfo spec = {1, &entry, sizeof(per), &per};
	if (rc == 0) {
		rc = kernel_build(raw, k, reduce_glsl, "reduce.comp", &spec, err);
	}
	if (rc == 0) {
		rc = kernel_record(raw, k, groups, 1, 1, -1, true, err);
	}
	return rc;
}

int vy_raw_vk_reduce_run(
	struct vy_raw_vk *raw, uint32_t *sum, struct vy_raw_vk_run *run, struct vy_err *err)
{
	int rc = kernel_run(raw, &raw->reduce, run, err);
	if (rc == 0) {
		memcpy(sum, raw->reduce.bufs[1].map, sizeof(*sum));
	}
	return rc;
}

int vy_raw_vk_matmul_prepare(
	struct vy_raw_vk *raw, const float *a, const float *b, uint32_t n, struct vy_err *err)
{
	if (n == 0 || n % VY_RAW_MATMUL_TILE != 0 || n > MATMUL_MAX) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "matmul",
			"use a multiple of 16 up to 8192 for n", "n = %u asked for", n);
	}
	kernel_destroy(raw, &raw->matmul);
	raw->matmul_n = n;
	struct raw_kernel *k = &raw->matmul;
	k->n_bufs = 3;
	VkDeviceSize size = (VkDeviceSize)n * n * 4;
	int rc = 0;
	for (uint32_t i = 0; i < 3 && rc == 0; i++) {
		rc = buf_create(raw, size, false, &k->bufs[i], err);
	}
	if (rc == 0) {
		rc = buf_write(raw, &k->bufs[0], a, size, err);
	}
	if (rc == 0) {
		rc = buf_write(raw, &k->bufs[1], b, size, err);
	}
	VkSpecializationMapEntry entry = {0, 0, sizeof(n)};
	VkSpecializationInfo spec = {1, &entry, sizeof(n), &n};
	if (rc == 0) {
		rc = kernel_build(raw, k, matmul_glsl, "matmul.comp", &spec, err);
	}
	if (rc == 0) {
		rc = kernel_record(
			raw, k, n / VY_RAW_MATMUL_TILE, n / VY_RAW_MATMUL_TILE, -1, -1, true, err);
	}
	return rc;
}

int vy_raw_vk_matmul_run(struct vy_raw_vk *raw, struct vy_raw_vk_run *run, struct vy_err *err)
{
	return kernel_run(raw, &raw->matmul, run, err);
}

int vy_raw_vk_matmul_read(struct vy_raw_vk *raw, float *c, struct vy_err *err)
{
	VkDeviceSize size = (VkDeviceSize)raw->matmul_n * raw->matmul_n * 4;
	return buf_read(raw, &raw->matmul.bufs[2], 0, c, size, err);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a;
	uint64_t y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static uint64_t median(uint64_t *v, uint32_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

/* What vy_raw_vk_pipeline_times makes, so that one cleanup frees it on every path. */
struct pipe_probe {
	VkDescriptorSetLayout set_layout;
	VkPipelineLayout layout;
	VkShaderModule module;
	VkPipelineCache cache;
	VkPipeline pipeline;
	uint32_t *spirv;
	size_t spirv_len;
	void *blob;
	size_t blob_len;
};

/* Free the probe's pipeline, module and cache (keeping the layouts, SPIR-V and blob). */
static void probe_drop(struct vy_raw_vk *raw, struct pipe_probe *p)
{
	if (p->pipeline) {
		raw->vk.vkDestroyPipeline(raw->dev, p->pipeline, NULL);
		p->pipeline = VK_NULL_HANDLE;
	}
	if (p->module) {
		raw->vk.vkDestroyShaderModule(raw->dev, p->module, NULL);
		p->module = VK_NULL_HANDLE;
	}
	if (p->cache) {
		raw->vk.vkDestroyPipelineCache(raw->dev, p->cache, NULL);
		p->cache = VK_NULL_HANDLE;
	}
}

static int cache_create(struct vy_raw_vk *raw, const void *blob, size_t len, VkPipelineCache *out,
	struct vy_err *err)
{
	VkPipelineCacheCreateInfo pci = {
		.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
		.initialDataSize = len,
		.pInitialData = blob,
	};
	VK_TRY(raw->vk.vkCreatePipelineCache(raw->dev, &pci, NULL, out));
	return 0;
}

static int probe_times(struct vy_raw_vk *raw, struct pipe_probe *p, uint32_t nonce, uint32_t runs,
	struct vy_raw_vk_pipeline_times *out, struct vy_err *err)
{
	char glsl[sizeof(tiny_glsl) + 16];
	snprintf(glsl, sizeof(glsl), tiny_glsl, nonce);
	uint32_t wg = 64;
	VkSpecializationMapEntry entry = {0, 0, sizeof(wg)};
	VkSpecializationInfo spec = {1, &entry, sizeof(wg), &wg};
	uint64_t t[PIPE_RUNS_MAX];
	int rc = layout_create(raw, 2, &p->set_layout, &p->layout, err);
	if (rc) {
		return rc;
	}
	uint64_t t0 = now_ns();
	rc = compile_spirv(glsl, "probe.comp", &p->spirv, &p->spirv_len, err);
	if (rc == 0) {
		rc = module_create(raw, p->spirv, p->spirv_len, &p->module, err);
	}
	if (rc == 0) {
		rc = cache_create(raw, NULL, 0, &p->cache, err);
	}
	if (rc == 0) {
		rc = pipeline_create(raw, p->module, p->layout, &spec, p->cache, &p->pipeline, err);
	}
	out->cold_ns = now_ns() - t0;
	for (uint32_t r = 0; r < runs && rc == 0; r++) {
		raw->vk.vkDestroyPipeline(raw->dev, p->pipeline, NULL);
		p->pipeline = VK_NULL_HANDLE;
		t0 = now_ns();
		rc = pipeline_create(raw, p->module, p->layout, &spec, p->cache, &p->pipeline, err);
		t[r] = now_ns() - t0;
	}
	if (rc) {
		return rc;
	}
	out->warm_ns = median(t, runs);
	VK_TRY(raw->vk.vkGetPipelineCacheData(raw->dev, p->cache, &p->blob_len, NULL));
	p->blob = malloc(p->blob_len ? p->blob_len : 1);
	if (!p->blob) {
		return no_memory(err, "the pipeline cache blob");
	}
	VK_TRY(raw->vk.vkGetPipelineCacheData(raw->dev, p->cache, &p->blob_len, p->blob));
	for (uint32_t r = 0; r < runs && rc == 0; r++) {
		probe_drop(raw, p);
		t0 = now_ns();
		rc = cache_create(raw, p->blob, p->blob_len, &p->cache, err);
		if (rc == 0) {
			rc = module_create(raw, p->spirv, p->spirv_len, &p->module, err);
		}
		if (rc == 0) {
			rc = pipeline_create(
				raw, p->module, p->layout, &spec, p->cache, &p->pipeline, err);
		}
		t[r] = now_ns() - t0;
	}
	if (rc == 0) {
		out->blob_ns = median(t, runs);
	}
	return rc;
}

int vy_raw_vk_pipeline_times(struct vy_raw_vk *raw, uint32_t nonce, uint32_t runs,
	struct vy_raw_vk_pipeline_times *out, struct vy_err *err)
{
	if (runs == 0 || runs > PIPE_RUNS_MAX) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "pipeline_times", "use 1 to 256 runs",
			"%u runs asked for", runs);
	}
	struct pipe_probe p = {0};
	int rc = probe_times(raw, &p, nonce, runs, out, err);
	probe_drop(raw, &p);
	if (p.layout) {
		raw->vk.vkDestroyPipelineLayout(raw->dev, p.layout, NULL);
	}
	if (p.set_layout) {
		raw->vk.vkDestroyDescriptorSetLayout(raw->dev, p.set_layout, NULL);
	}
	free(p.spirv);
	free(p.blob);
	return rc;
}
