/*
 * Size-class buffer pools. Small classes share 4 MiB chunks so that thousands of small buffers
 * cost a handful of VkDeviceMemory objects (drivers cap their number); large classes own their
 * memory so that freeing one returns it to the device.
 */
#include "vk_memory.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_util.h"

#define SLAB_CLASSES 11 /* 256 B .. 256 KiB */
#define SLAB_CHUNK ((VkDeviceSize)4 << 20)
#define MIN_CLASS ((VkDeviceSize)256)
#define NO_CLASS UINT32_MAX

struct vy_vk_chunk {
	VkDeviceMemory memory;
	VkBuffer buffer;
	VkDeviceSize size;
	uint8_t *map;
	bool dedicated;
	struct vy_vk_chunk *prev;
	struct vy_vk_chunk *next;
};

static VkDeviceSize class_size(uint32_t c)
{
	if (c < SLAB_CLASSES) {
		return MIN_CLASS << c;
	}
	uint32_t j = c - SLAB_CLASSES;
	VkDeviceSize base = (MIN_CLASS << (SLAB_CLASSES - 1)) << (j / 4);
	return base / 4 * (5 + j % 4);
}

static uint32_t class_of(VkDeviceSize size)
{
	for (uint32_t c = 0; c < VY_VK_CLASS_COUNT; c++) {
		if (class_size(c) >= size) {
			return c;
		}
	}
	return NO_CLASS;
}

void vy__vk_memory_init(struct vy_vk_memory *m, struct vy_vk_device *dev)
{
	memset(m, 0, sizeof(*m));
	m->dev = dev;
	pthread_mutex_init(&m->lock, NULL);
	m->pools[VY_VK_POOL_DEVICE].type = dev->type_device;
	m->pools[VY_VK_POOL_DEVICE].mapped = dev->device_mappable;
	m->pools[VY_VK_POOL_UPLOAD].type = dev->type_upload;
	m->pools[VY_VK_POOL_UPLOAD].mapped = true;
	m->pools[VY_VK_POOL_READBACK].type = dev->type_readback;
	m->pools[VY_VK_POOL_READBACK].mapped = true;
	m->pools[VY_VK_POOL_CONTROL].type = dev->type_control;
	m->pools[VY_VK_POOL_CONTROL].mapped = true;
	uint64_t heap = dev->mem.memoryHeaps[dev->mem.memoryTypes[dev->type_device].heapIndex].size;
	m->cache_budget = heap / 8 < (UINT64_C(1) << 30) ? heap / 8 : (UINT64_C(1) << 30);
}

static void chunk_destroy(struct vy_vk_memory *m, struct vy_vk_pool *p, struct vy_vk_chunk *c)
{
	struct vy_vk_device *d = m->dev;
	if (c->prev) {
		c->prev->next = c->next;
	} else {
		p->chunks = c->next;
	}
	if (c->next) {
		c->next->prev = c->prev;
	}
	d->vk.vkDestroyBuffer(d->dev, c->buffer, NULL);
	if (c->map) {
		d->vk.vkUnmapMemory(d->dev, c->memory);
	}
	d->vk.vkFreeMemory(d->dev, c->memory, NULL);
	p->allocated -= c->size;
	free(c);
}

static void free_list_push(struct vy_vk_free_list *l, const struct vy_vk_slice *s)
{
	if (l->len == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct vy_vk_slice *items = realloc(l->items, cap * sizeof(*items));
		if (!items) {
			fprintf(stderr, "vyred: out of memory growing a buffer free list\n");
			abort();
		}
		l->items = items;
		l->cap = cap;
	}
	l->items[l->len++] = *s;
}

static void trim_locked(struct vy_vk_memory *m)
{
	for (int k = 0; k < VY_VK_POOL_COUNT; k++) {
		struct vy_vk_pool *p = &m->pools[k];
		for (uint32_t c = SLAB_CLASSES; c < VY_VK_CLASS_COUNT; c++) {
			struct vy_vk_free_list *l = &p->free[c];
			for (size_t i = 0; i < l->len; i++) {
				chunk_destroy(m, p, l->items[i].chunk);
			}
			l->len = 0;
		}
		p->cached_bytes = 0;
	}
}

void vy__vk_memory_trim(struct vy_vk_memory *m)
{
	pthread_mutex_lock(&m->lock);
	trim_locked(m);
	pthread_mutex_unlock(&m->lock);
}

void vy__vk_memory_finish(struct vy_vk_memory *m)
{
	if (!m->dev) {
		return;
	}
	for (int k = 0; k < VY_VK_POOL_COUNT; k++) {
		struct vy_vk_pool *p = &m->pools[k];
		while (p->chunks) {
			chunk_destroy(m, p, p->chunks);
		}
		for (uint32_t c = 0; c < VY_VK_CLASS_COUNT; c++) {
			free(p->free[c].items);
		}
	}
	pthread_mutex_destroy(&m->lock);
	memset(m, 0, sizeof(*m));
}

static int chunk_create(struct vy_vk_memory *m, struct vy_vk_pool *p, VkDeviceSize size,
	bool dedicated, struct vy_vk_chunk **out, struct vy_err *err)
{
	struct vy_vk_device *d = m->dev;
	int rc = 0;
	struct vy_vk_chunk *c = calloc(1, sizeof(*c));
	if (!c) {
		fprintf(stderr, "vyred: out of memory for a buffer chunk\n");
		abort();
	}
	c->size = size;
	c->dedicated = dedicated;
	VkBufferCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.size = size,
		.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
			 VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT,
		.sharingMode = VK_SHARING_MODE_EXCLUSIVE,
	};
	VY_VK(d->vk.vkCreateBuffer(d->dev, &info, NULL, &c->buffer));
	VkMemoryRequirements req;
	d->vk.vkGetBufferMemoryRequirements(d->dev, c->buffer, &req);
	assert(req.memoryTypeBits & (1u << p->type));
	VkMemoryAllocateInfo alloc = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
		.allocationSize = req.size,
		.memoryTypeIndex = p->type,
	};
	VY_VK(d->vk.vkAllocateMemory(d->dev, &alloc, NULL, &c->memory));
	VY_VK(d->vk.vkBindBufferMemory(d->dev, c->buffer, c->memory, 0));
	if (p->mapped) {
		void *map = NULL;
		VY_VK(d->vk.vkMapMemory(d->dev, c->memory, 0, VK_WHOLE_SIZE, 0, &map));
		c->map = map;
	}
	c->size = req.size;
	p->allocated += c->size;
	c->next = p->chunks;
	if (p->chunks) {
		p->chunks->prev = c;
	}
	p->chunks = c;
	*out = c;
	return 0;
error:
	if (c->buffer) {
		d->vk.vkDestroyBuffer(d->dev, c->buffer, NULL);
	}
	if (c->memory) {
		d->vk.vkFreeMemory(d->dev, c->memory, NULL);
	}
	free(c);
	return rc;
}

static int oom(struct vy_vk_memory *m, struct vy_vk_pool *p, uint64_t size, struct vy_err *err)
{
	uint64_t avail = vy__vk_device_available(m->dev, p->type, p->allocated);
	return vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL,
		"free resident buffers or send smaller requests, then retry",
		"out of device memory: requested %llu bytes, %llu bytes available",
		(unsigned long long)size, (unsigned long long)avail);
}

static int alloc_locked(struct vy_vk_memory *m, enum vy_vk_pool_kind kind, uint64_t size,
	struct vy_vk_slice *out, struct vy_err *err)
{
	struct vy_vk_pool *p = &m->pools[kind];
	uint32_t cls = class_of(size);
	VkDeviceSize cap = cls == NO_CLASS ? size : class_size(cls);
	if (cls != NO_CLASS && cls >= SLAB_CLASSES && cap > m->dev->max_allocation) {
		/* The class would exceed the device's largest allocation: take the size itself. */
		cls = NO_CLASS;
		cap = (size + 65535) & ~(VkDeviceSize)65535;
	}
	if (cap > m->dev->max_allocation) {
		return vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL,
			"split the data into buffers below the device's allocation limit",
			"out of device memory: requested %llu bytes in one buffer, at most %llu "
			"bytes available in one allocation",
			(unsigned long long)size, (unsigned long long)m->dev->max_allocation);
	}
	if (cls != NO_CLASS && p->free[cls].len > 0) {
		*out = p->free[cls].items[--p->free[cls].len];
		if (cls >= SLAB_CLASSES) {
			p->cached_bytes -= out->size;
		}
		p->in_use += out->size;
		return 0;
	}
	bool slab = cls != NO_CLASS && cls < SLAB_CLASSES;
	VkDeviceSize chunk_size = slab ? SLAB_CHUNK : cap;
	struct vy_vk_chunk *c = NULL;
	struct vy_err first;
	int rc = chunk_create(m, p, chunk_size, !slab, &c, &first);
	if (rc == VY_E_OUT_OF_MEMORY) {
		trim_locked(m);
		rc = chunk_create(m, p, chunk_size, !slab, &c, &first);
	}
	if (rc == VY_E_OUT_OF_MEMORY) {
		return oom(m, p, size, err);
	}
	if (rc) {
		if (err) {
			*err = first;
		}
		return rc;
	}
	struct vy_vk_slice s = {
		.buffer = c->buffer,
		.offset = 0,
		.size = cap,
		.map = c->map,
		.chunk = c,
		.kind = kind,
		.cls = cls,
	};
	if (slab) {
		for (VkDeviceSize off = SLAB_CHUNK - cap; off > 0; off -= cap) {
			struct vy_vk_slice more = s;
			more.offset = off;
			more.map = c->map ? c->map + off : NULL;
			free_list_push(&p->free[cls], &more);
		}
	}
	*out = s;
	p->in_use += cap;
	return 0;
}

int vy__vk_slice_alloc(struct vy_vk_memory *m, enum vy_vk_pool_kind kind, uint64_t size,
	struct vy_vk_slice *out, struct vy_err *err)
{
	assert(size > 0 && kind < VY_VK_POOL_COUNT);
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&m->lock);
	int rc = alloc_locked(m, kind, size, out, err);
	pthread_mutex_unlock(&m->lock);
	return rc;
}

void vy__vk_slice_free(struct vy_vk_memory *m, struct vy_vk_slice *s)
{
	if (!s->buffer) {
		return;
	}
	pthread_mutex_lock(&m->lock);
	struct vy_vk_pool *p = &m->pools[s->kind];
	p->in_use -= s->size;
	if (s->cls == NO_CLASS) {
		chunk_destroy(m, p, s->chunk);
	} else if (s->cls >= SLAB_CLASSES && p->cached_bytes + s->size > m->cache_budget) {
		chunk_destroy(m, p, s->chunk);
	} else {
		if (s->cls >= SLAB_CLASSES) {
			p->cached_bytes += s->size;
		}
		free_list_push(&p->free[s->cls], s);
	}
	pthread_mutex_unlock(&m->lock);
	memset(s, 0, sizeof(*s));
}

int vy__vk_slice_invalidate(
	struct vy_vk_memory *m, const struct vy_vk_slice *s, uint64_t len, struct vy_err *err)
{
	struct vy_vk_device *d = m->dev;
	int rc = 0;
	if (s->kind != VY_VK_POOL_READBACK || d->readback_coherent || len == 0) {
		return 0;
	}
	VkDeviceSize atom = d->props.limits.nonCoherentAtomSize;
	VkDeviceSize start = s->offset / atom * atom;
	VkDeviceSize end = (s->offset + len + atom - 1) / atom * atom;
	if (end > s->chunk->size) {
		end = s->chunk->size;
	}
	VkMappedMemoryRange range = {
		.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE,
		.memory = s->chunk->memory,
		.offset = start,
		.size = end - start,
	};
	VY_VK(d->vk.vkInvalidateMappedMemoryRanges(d->dev, 1, &range));
	return 0;
error:
	return rc;
}

void vy__vk_memory_usage(struct vy_vk_memory *m, uint64_t *in_use, uint64_t *held)
{
	pthread_mutex_lock(&m->lock);
	*in_use = 0;
	*held = 0;
	for (int k = 0; k < VY_VK_POOL_COUNT; k++) {
		*in_use += m->pools[k].in_use;
		*held += m->pools[k].allocated;
	}
	pthread_mutex_unlock(&m->lock);
}
