/*
 * Hand-written Vulkan for the anchors of bench_backend (raw_vulkan.h). It is deliberately plain:
 * everything is made once, command buffers are recorded once, and a run is only submit and wait,
 * which is the floor the backend is measured against. volk is reached the way the backend reaches
 * it (vk_volk.h), with a device table of its own.
 */
#include "raw_vulkan.h"

#include <shaderc/shaderc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vk_volk.h"

#define STREAM_WG 256u
#define STREAM_GRID_X 32768u
#define TINY_MAX 1024u

struct raw_buf {
	VkBuffer buf;
	VkDeviceMemory mem;
	void *map; /* NULL for device-local memory */
};

struct raw_kernel {
	VkShaderModule module;
	VkDescriptorSetLayout set_layout;
	VkPipelineLayout layout;
	VkPipeline pipeline;
	VkDescriptorPool pool;
	VkDescriptorSet set;
	VkCommandBuffer cmd;
	struct raw_buf x, y;
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
	struct raw_kernel tiny;
	struct raw_kernel stream;
};

static const char tiny_glsl[] = "#version 450\n"
				"layout(local_size_x_id = 0) in;\n"
				"layout(std430, binding = 0) readonly buffer X { uint x[]; };\n"
				"layout(std430, binding = 1) writeonly buffer Y { uint y[]; };\n"
				"void main() {\n"
				"\tuint i = gl_GlobalInvocationID.x;\n"
				"\tif (i < x.length()) { y[i] = x[i] + 1u; }\n"
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
		return vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL, "free some memory",
			"no memory for the device list");
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
		return vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL, "free some memory",
			"no memory for the raw Vulkan context");
	}
	VkApplicationInfo app = {
		.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
		.pApplicationName = "bench_raw",
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
}

static void kernel_destroy(struct vy_raw_vk *raw, struct raw_kernel *k)
{
	buf_destroy(raw, &k->x);
	buf_destroy(raw, &k->y);
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
		.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
		.sharingMode = VK_SHARING_MODE_EXCLUSIVE,
	};
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

static int compile(struct vy_raw_vk *raw, const char *glsl, const char *name, VkShaderModule *out,
	struct vy_err *err)
{
	shaderc_compiler_t compiler = shaderc_compiler_initialize();
	shaderc_compile_options_t opts = shaderc_compile_options_initialize();
	if (!compiler || !opts) {
		shaderc_compile_options_release(opts);
		shaderc_compiler_release(compiler);
		return vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL, "free some memory",
			"shaderc could not start");
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
		VkShaderModuleCreateInfo smi = {
			.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
			.codeSize = shaderc_result_get_length(res),
			.pCode = (const uint32_t *)shaderc_result_get_bytes(res),
		};
		VkResult vr = raw->vk.vkCreateShaderModule(raw->dev, &smi, NULL, out);
		if (vr != VK_SUCCESS) {
			rc = vk_fail(err, "vkCreateShaderModule", vr);
		}
	}
	shaderc_result_release(res);
	shaderc_compile_options_release(opts);
	shaderc_compiler_release(compiler);
	return rc;
}

/* Pipeline, one descriptor set over x and y, and one primary command buffer for kernel `k`. */
static int kernel_build(struct vy_raw_vk *raw, struct raw_kernel *k, const char *glsl,
	const char *name, const VkSpecializationInfo *spec, VkDeviceSize x_size,
	VkDeviceSize y_size, struct vy_err *err)
{
	int rc = compile(raw, glsl, name, &k->module, err);
	if (rc) {
		return rc;
	}
	VkDescriptorSetLayoutBinding binds[2];
	for (uint32_t i = 0; i < 2; i++) {
		binds[i] = (VkDescriptorSetLayoutBinding){
			.binding = i,
			.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
			.descriptorCount = 1,
			.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
		};
	}
	VkDescriptorSetLayoutCreateInfo dsl = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
		.bindingCount = 2,
		.pBindings = binds,
	};
	VK_TRY(raw->vk.vkCreateDescriptorSetLayout(raw->dev, &dsl, NULL, &k->set_layout));
	VkPipelineLayoutCreateInfo pli = {
		.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
		.setLayoutCount = 1,
		.pSetLayouts = &k->set_layout,
	};
	VK_TRY(raw->vk.vkCreatePipelineLayout(raw->dev, &pli, NULL, &k->layout));
	VkComputePipelineCreateInfo cpi = {
		.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
		.stage =
			{
				.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
				.stage = VK_SHADER_STAGE_COMPUTE_BIT,
				.module = k->module,
				.pName = "main",
				.pSpecializationInfo = spec,
			},
		.layout = k->layout,
	};
	VK_TRY(raw->vk.vkCreateComputePipelines(
		raw->dev, VK_NULL_HANDLE, 1, &cpi, NULL, &k->pipeline));
	VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2};
	VkDescriptorPoolCreateInfo dpi = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
		.maxSets = 1,
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
	VkDescriptorBufferInfo infos[2] = {{k->x.buf, 0, x_size}, {k->y.buf, 0, y_size}};
	VkWriteDescriptorSet writes[2];
	for (uint32_t i = 0; i < 2; i++) {
		writes[i] = (VkWriteDescriptorSet){
			.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
			.dstSet = k->set,
			.dstBinding = i,
			.descriptorCount = 1,
			.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
			.pBufferInfo = &infos[i],
		};
	}
	raw->vk.vkUpdateDescriptorSets(raw->dev, 2, writes, 0, NULL);
	VkCommandBufferAllocateInfo cai = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
		.commandPool = raw->cmd_pool,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
		.commandBufferCount = 1,
	};
	VK_TRY(raw->vk.vkAllocateCommandBuffers(raw->dev, &cai, &k->cmd));
	return 0;
}

static int submit_wait(struct vy_raw_vk *raw, VkCommandBuffer cmd, struct vy_err *err)
{
	VkSubmitInfo si = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.commandBufferCount = 1,
		.pCommandBuffers = &cmd,
	};
	VK_TRY(raw->vk.vkResetFences(raw->dev, 1, &raw->fence));
	VK_TRY(raw->vk.vkQueueSubmit(raw->queue, 1, &si, raw->fence));
	VkResult res;
	while ((res = raw->vk.vkGetFenceStatus(raw->dev, raw->fence)) == VK_NOT_READY) {
	}
	VK_TRY(res);
	return 0;
}

int vy_raw_vk_tiny_prepare(struct vy_raw_vk *raw, uint32_t n, struct vy_err *err)
{
	if (n == 0 || n > TINY_MAX) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "tiny", "use 1 to 1024 elements",
			"%u elements asked for", n);
	}
	raw->tiny_n = n;
	struct raw_kernel *k = &raw->tiny;
	VkDeviceSize size = (VkDeviceSize)n * 4;
	int rc = buf_create(raw, size, true, &k->x, err);
	if (rc == 0) {
		rc = buf_create(raw, size, true, &k->y, err);
	}
	uint32_t wg = n;
	VkSpecializationMapEntry entry = {0, 0, sizeof(wg)};
	VkSpecializationInfo spec = {1, &entry, sizeof(wg), &wg};
	if (rc == 0) {
		rc = kernel_build(raw, k, tiny_glsl, "tiny.comp", &spec, size, size, err);
	}
	if (rc) {
		return rc;
	}
	VkCommandBufferBeginInfo cbi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
	VK_TRY(raw->vk.vkBeginCommandBuffer(k->cmd, &cbi));
	raw->vk.vkCmdBindPipeline(k->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k->pipeline);
	raw->vk.vkCmdBindDescriptorSets(
		k->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k->layout, 0, 1, &k->set, 0, NULL);
	raw->vk.vkCmdDispatch(k->cmd, 1, 1, 1);
	/* The host reads y after the fence: make the shader's writes visible to it. */
	VkMemoryBarrier mb = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_HOST_READ_BIT,
	};
	raw->vk.vkCmdPipelineBarrier(k->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
		VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
	VK_TRY(raw->vk.vkEndCommandBuffer(k->cmd));
	return 0;
}

int vy_raw_vk_tiny_run(struct vy_raw_vk *raw, const uint32_t *in, uint32_t *out, struct vy_err *err)
{
	size_t bytes = (size_t)raw->tiny_n * 4;
	memcpy(raw->tiny.x.map, in, bytes);
	int rc = submit_wait(raw, raw->tiny.cmd, err);
	if (rc == 0) {
		memcpy(out, raw->tiny.y.map, bytes);
	}
	return rc;
}

int vy_raw_vk_stream_prepare(struct vy_raw_vk *raw, uint64_t n, struct vy_err *err)
{
	if (n == 0 || n % 4 != 0) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "stream", "use a multiple of 4 elements",
			"%llu elements asked for", (unsigned long long)n);
	}
	struct raw_kernel *k = &raw->stream;
	VkDeviceSize size = (VkDeviceSize)n * 4;
	int rc = buf_create(raw, size, false, &k->x, err);
	if (rc == 0) {
		rc = buf_create(raw, size, false, &k->y, err);
	}
	if (rc == 0) {
		rc = kernel_build(raw, k, stream_glsl, "stream.comp", NULL, size, size, err);
	}
	if (rc) {
		return rc;
	}
	/* Fill once on the device: x = 1.0f, y = 0.0f. */
	VkCommandBufferBeginInfo once = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
		.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
	};
	VK_TRY(raw->vk.vkBeginCommandBuffer(k->cmd, &once));
	raw->vk.vkCmdFillBuffer(k->cmd, k->x.buf, 0, VK_WHOLE_SIZE, 0x3f800000u);
	raw->vk.vkCmdFillBuffer(k->cmd, k->y.buf, 0, VK_WHOLE_SIZE, 0);
	VK_TRY(raw->vk.vkEndCommandBuffer(k->cmd));
	rc = submit_wait(raw, k->cmd, err);
	if (rc) {
		return rc;
	}
	VK_TRY(raw->vk.vkResetCommandBuffer(k->cmd, 0));

	uint64_t groups = (n / 4 + STREAM_WG - 1) / STREAM_WG;
	uint32_t gx = groups < STREAM_GRID_X ? (uint32_t)groups : STREAM_GRID_X;
	uint32_t gy = (uint32_t)((groups + gx - 1) / gx);
	VkCommandBufferBeginInfo cbi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
	VK_TRY(raw->vk.vkBeginCommandBuffer(k->cmd, &cbi));
	if (raw->timestamps) {
		raw->vk.vkCmdResetQueryPool(k->cmd, raw->queries, 0, 2);
		raw->vk.vkCmdWriteTimestamp(
			k->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, raw->queries, 0);
	}
	raw->vk.vkCmdBindPipeline(k->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k->pipeline);
	raw->vk.vkCmdBindDescriptorSets(
		k->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k->layout, 0, 1, &k->set, 0, NULL);
	raw->vk.vkCmdDispatch(k->cmd, gx, gy, 1);
	if (raw->timestamps) {
		raw->vk.vkCmdWriteTimestamp(
			k->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, raw->queries, 1);
	}
	/* Back-to-back runs read what the previous one wrote. */
	VkMemoryBarrier mb = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
	};
	raw->vk.vkCmdPipelineBarrier(k->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
		VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
	VK_TRY(raw->vk.vkEndCommandBuffer(k->cmd));
	return 0;
}

int vy_raw_vk_stream_run(
	struct vy_raw_vk *raw, uint64_t *device_ns, uint64_t *wall_ns, struct vy_err *err)
{
	uint64_t t0 = now_ns();
	int rc = submit_wait(raw, raw->stream.cmd, err);
	*wall_ns = now_ns() - t0;
	*device_ns = UINT64_MAX;
	if (rc || !raw->timestamps) {
		return rc;
	}
	uint64_t ticks[2];
	VK_TRY(raw->vk.vkGetQueryPoolResults(raw->dev, raw->queries, 0, 2, sizeof(ticks), ticks,
		sizeof(ticks[0]), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
	uint64_t dt = (ticks[1] - ticks[0]) & raw->timestamp_mask;
	*device_ns = (uint64_t)((double)dt * (double)raw->props.limits.timestampPeriod);
	return 0;
}
