/*
 * Layouts, modules and pipelines. Descriptor-set layouts and pipeline layouts are few (one per
 * distinct buffer shape) and live as long as the device, so a compile never creates one twice and
 * a dispatch never creates one at all.
 */
#include "vk_pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_util.h"

int vy__vk_pipelines_init(struct vy_vk_pipelines *p, struct vy_vk_device *dev,
	struct vy_vk_disk *disk, bool push_descriptors, struct vy_err *err)
{
	memset(p, 0, sizeof(*p));
	p->dev = dev;
	p->disk = disk;
	p->push_descriptors = push_descriptors;
	pthread_mutex_init(&p->lock, NULL);
	pthread_rwlock_init(&p->cache_life, NULL);
	int rc = 0;
	void *blob = NULL;
	size_t blob_len = 0;
	p->cache_from_disk =
		vy__vk_disk_read(disk, VY_VK_DISK_PIPELINE_CACHE, NULL, &blob, &blob_len);
	VkPipelineCacheCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
		.initialDataSize = blob_len,
		.pInitialData = blob,
	};
	VY_VK(dev->vk.vkCreatePipelineCache(dev->dev, &info, NULL, &p->cache));
	free(blob);
	/* A cache that was rejected or absent is written anew at the next save. */
	p->dirty = !p->cache_from_disk && disk->dir;
	return 0;
error:
	free(blob);
	return rc;
}

void vy__vk_pipelines_finish(struct vy_vk_pipelines *p)
{
	if (!p->dev) {
		return;
	}
	struct vy_vk_device *d = p->dev;
	while (p->layouts) {
		struct vy_vk_layout *l = p->layouts;
		p->layouts = l->next;
		d->vk.vkDestroyPipelineLayout(d->dev, l->pipeline_layout, NULL);
		d->vk.vkDestroyDescriptorSetLayout(d->dev, l->set_layout, NULL);
		free(l);
	}
	if (p->cache) {
		d->vk.vkDestroyPipelineCache(d->dev, p->cache, NULL);
	}
	pthread_mutex_destroy(&p->lock);
	pthread_rwlock_destroy(&p->cache_life);
	memset(p, 0, sizeof(*p));
}

int vy__vk_pipelines_save(struct vy_vk_pipelines *p, struct vy_err *err)
{
	struct vy_vk_device *d = p->dev;
	int rc = 0;
	void *data = NULL;
	bool held = false;
	pthread_mutex_lock(&p->lock);
	bool dirty = p->dirty;
	p->dirty = false;
	pthread_mutex_unlock(&p->lock);
	if (!dirty || !p->disk->dir) {
		return 0;
	}
	size_t len = 0;
	pthread_rwlock_rdlock(&p->cache_life);
	held = true;
	VY_VK(d->vk.vkGetPipelineCacheData(d->dev, p->cache, &len, NULL));
	data = malloc(len ? len : 1);
	if (!data) {
		fprintf(stderr, "vyred: out of memory saving a %zu-byte pipeline cache\n", len);
		abort();
	}
	VkResult res;
	VY_VK(res = d->vk.vkGetPipelineCacheData(d->dev, p->cache, &len, data));
	pthread_rwlock_unlock(&p->cache_life);
	held = false;
	/* VK_INCOMPLETE: the cache grew between the calls; the prefix written is still valid. */
	(void)res;
	rc = vy__vk_disk_write(p->disk, VY_VK_DISK_PIPELINE_CACHE, NULL, data, len, err);
	free(data);
	if (rc) {
		pthread_mutex_lock(&p->lock);
		p->dirty = true;
		pthread_mutex_unlock(&p->lock);
	}
	return rc;
error:
	if (held) {
		pthread_rwlock_unlock(&p->cache_life);
	}
	free(data);
	pthread_mutex_lock(&p->lock);
	p->dirty = true;
	pthread_mutex_unlock(&p->lock);
	return rc;
}

static int layout_create(struct vy_vk_pipelines *p, const struct vy_vk_shape *shape,
	struct vy_vk_layout *l, struct vy_err *err)
{
	struct vy_vk_device *d = p->dev;
	int rc = 0;
	VkDescriptorSetLayoutBinding bindings[VY_LAYOUT_MAX_SLOTS];
	for (uint32_t i = 0; i < shape->n_slots; i++) {
		bindings[i] = (VkDescriptorSetLayoutBinding){
			.binding = shape->slots[i].binding,
			.descriptorType = shape->slots[i].class == VY_LAYOUT_UNIFORM
						  ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER
						  : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
			.descriptorCount = 1,
			.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
		};
	}
	VkDescriptorSetLayoutCreateInfo set_info = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
		.flags = p->push_descriptors
				 ? VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR
				 : 0,
		.bindingCount = shape->n_slots,
		.pBindings = bindings,
	};
	VY_VK(d->vk.vkCreateDescriptorSetLayout(d->dev, &set_info, NULL, &l->set_layout));
	VkPushConstantRange range = {
		.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
		.offset = 0,
		.size = shape->push_bytes,
	};
	VkPipelineLayoutCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
		.setLayoutCount = 1,
		.pSetLayouts = &l->set_layout,
		.pushConstantRangeCount = shape->push_bytes ? 1 : 0,
		.pPushConstantRanges = &range,
	};
	VY_VK(d->vk.vkCreatePipelineLayout(d->dev, &info, NULL, &l->pipeline_layout));
	return 0;
error:
	if (l->set_layout) {
		d->vk.vkDestroyDescriptorSetLayout(d->dev, l->set_layout, NULL);
		l->set_layout = VK_NULL_HANDLE;
	}
	return rc;
}

int vy__vk_layout_get(struct vy_vk_pipelines *p, const struct vy_vk_shape *shape,
	const struct vy_vk_layout **out, struct vy_err *err)
{
	struct vy_layout_fingerprint fp;
	vy_layout_fingerprint_init(&fp, shape->slots, shape->n_slots);
	uint64_t hash = vy_layout_fingerprint_hash(&fp) ^ shape->push_bytes;
	int rc = 0;
	pthread_mutex_lock(&p->lock);
	for (struct vy_vk_layout *l = p->layouts; l; l = l->next) {
		if (l->hash == hash && l->push_bytes == shape->push_bytes &&
			vy_layout_fingerprint_equal(&l->fp, &fp)) {
			*out = l;
			goto done;
		}
	}
	struct vy_vk_layout *l = calloc(1, sizeof(*l));
	if (!l) {
		fprintf(stderr, "vyred: out of memory for a pipeline layout\n");
		abort();
	}
	l->fp = fp;
	l->hash = hash;
	l->push_bytes = shape->push_bytes;
	l->push = p->push_descriptors;
	struct vy_vk_shape sorted = *shape;
	sorted.n_slots = fp.n_slots;
	memcpy(sorted.slots, fp.slots, fp.n_slots * sizeof(fp.slots[0]));
	rc = layout_create(p, &sorted, l, err);
	if (rc) {
		free(l);
		goto done;
	}
	l->next = p->layouts;
	p->layouts = l;
	*out = l;
done:
	pthread_mutex_unlock(&p->lock);
	return rc;
}

int vy__vk_module_create(struct vy_vk_pipelines *p, const uint32_t *words, size_t n_words,
	VkShaderModule *out, struct vy_err *err)
{
	struct vy_vk_device *d = p->dev;
	int rc = 0;
	VkShaderModuleCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
		.codeSize = n_words * 4,
		.pCode = words,
	};
	VY_VK(d->vk.vkCreateShaderModule(d->dev, &info, NULL, out));
	return 0;
error:
	*out = VK_NULL_HANDLE;
	return rc;
}

/* Replace a full VkPipelineCache by an empty one; on failure the old one stays. */
static void cache_rebuild(struct vy_vk_pipelines *p)
{
	struct vy_vk_device *d = p->dev;
	pthread_rwlock_wrlock(&p->cache_life);
	pthread_mutex_lock(&p->lock);
	bool full = p->cache_pipelines >= p->cache_limit;
	pthread_mutex_unlock(&p->lock);
	VkPipelineCacheCreateInfo info = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
	VkPipelineCache fresh = VK_NULL_HANDLE;
	if (full && d->vk.vkCreatePipelineCache(d->dev, &info, NULL, &fresh) == VK_SUCCESS) {
		d->vk.vkDestroyPipelineCache(d->dev, p->cache, NULL);
		p->cache = fresh;
		pthread_mutex_lock(&p->lock);
		p->cache_pipelines = 0;
		p->cache_rebuilds++;
		pthread_mutex_unlock(&p->lock);
	}
	pthread_rwlock_unlock(&p->cache_life);
}

int vy__vk_pipeline_create(struct vy_vk_pipelines *p, VkShaderModule module,
	const struct vy_vk_layout *layout, const VkSpecializationInfo *spec, uint32_t subgroup_size,
	VkPipeline *out, struct vy_err *err)
{
	struct vy_vk_device *d = p->dev;
	int rc = 0;
	VkPipelineShaderStageRequiredSubgroupSizeCreateInfo pin = {
		.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO,
		.requiredSubgroupSize = subgroup_size,
	};
	bool pinned = subgroup_size != 0 && d->subgroup_size_control &&
		      d->min_subgroup_size != d->max_subgroup_size;
	VkComputePipelineCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
		.stage =
			{
				.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
				.pNext = pinned ? &pin : NULL,
				.stage = VK_SHADER_STAGE_COMPUTE_BIT,
				.module = module,
				.pName = "main",
				.pSpecializationInfo = spec,
			},
		.layout = layout->pipeline_layout,
	};
	pthread_rwlock_rdlock(&p->cache_life);
	VkResult res = d->vk.vkCreateComputePipelines(d->dev, p->cache, 1, &info, NULL, out);
	pthread_rwlock_unlock(&p->cache_life);
	VY_VK(res);
	pthread_mutex_lock(&p->lock);
	p->dirty = p->disk->dir != NULL;
	bool full = p->cache_limit && ++p->cache_pipelines >= p->cache_limit;
	pthread_mutex_unlock(&p->lock);
	if (full) {
		cache_rebuild(p);
	}
	return 0;
error:
	*out = VK_NULL_HANDLE;
	return rc;
}
