/*
 * Host memory the device reads in place (DESIGN.md §6: shm inputs are imported with
 * VK_EXT_external_memory_host where the device allows). An import covers the whole pages, at the
 * device's minImportedHostPointerAlignment, that lie inside the range the caller gave: a
 * VkDeviceMemory imported from the host pointer and a transfer-source buffer bound to all of it.
 * A job copies an input that lies inside an import from there into its own buffer with one
 * transfer command, so the host copies nothing; anything else (no import, bytes outside it, an
 * id the table no longer knows) takes the ordinary path through the input's view, which holds
 * the same bytes.
 *
 * Only memory mapped writable is imported (see writable_range): the device only reads it, but
 * drivers pin pages for writing and one leaves itself unable to allocate after refusing.
 *
 * Imports live in a table by random id, reference-counted: the table holds one reference and
 * each job copying from an import holds another until its context is released, so removing an
 * import never frees memory a recorded copy still reads. A lost device drops the whole table.
 */
#include "vk_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>

#include "vk_util.h"

static size_t bucket_of(uint64_t id)
{
	return (size_t)((id * UINT64_C(0x9e3779b97f4a7c15)) >> 40) % VY__VK_IMPORT_BUCKETS;
}

static struct vy__vk_import *find_locked(struct vy__vk_backend *b, uint64_t id)
{
	for (struct vy__vk_import *im = b->imports[bucket_of(id)]; im; im = im->next) {
		if (im->id == id) {
			return im;
		}
	}
	return NULL;
}

static void destroy(struct vy__vk_import *im)
{
	struct vy_vk_device *d = im->dev;
	if (im->buffer) {
		d->vk.vkDestroyBuffer(d->dev, im->buffer, NULL);
	}
	if (im->memory) {
		d->vk.vkFreeMemory(d->dev, im->memory, NULL);
	}
	free(im);
}

void vy__vk_import_release(void *import)
{
	struct vy__vk_import *im = import;
	if (atomic_fetch_sub(&im->refs, 1) == 1) {
		destroy(im);
	}
}

/* A memory type of `bits` the host writes reach without flushes (the host never maps it). */
static uint32_t coherent_type(const struct vy_vk_device *d, uint32_t bits)
{
	for (uint32_t i = 0; i < d->mem.memoryTypeCount; i++) {
		if ((bits & (1u << i)) && (d->mem.memoryTypes[i].propertyFlags &
						  VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)) {
			return i;
		}
	}
	return VY_VK_NO_TYPE;
}

/*
 * Whether every page of [base, end) is mapped readable and writable in this process. Drivers pin
 * imported pages for writing, and NVIDIA's (580) refuses a read-only mapping and then fails later
 * host-memory allocations on the device, so such memory is refused before a driver sees it.
 */
static bool writable_range(uintptr_t base, uintptr_t end)
{
	FILE *f = fopen("/proc/self/maps", "re");
	if (!f) {
		return false;
	}
	char *line = NULL;
	size_t cap = 0;
	uintptr_t at = base;
	/* The mappings are listed in address order; each must start where the last one ended. */
	while (at < end && getline(&line, &cap, f) > 0) {
		unsigned long lo;
		unsigned long hi;
		char perms[5];
		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) != 3 || hi <= at) {
			continue;
		}
		if (lo > at || perms[0] != 'r' || perms[1] != 'w') {
			break;
		}
		at = hi;
	}
	free(line);
	fclose(f);
	return at >= end;
}

static int refused(const struct vy_vk_device *d, const char *why, struct vy_err *err)
{
	return vy_err_set(err, VY_E_UNSUPPORTED_FEATURE, NULL,
		"pass the bytes as they are: inputs in this memory are copied by the host instead",
		"device %u (%s) cannot import this host memory: %s", d->index, d->props.deviceName,
		why);
}

/* The Vulkan objects of an import of `im->size` bytes at `im->base`. */
static int import_memory(struct vy_vk_device *d, struct vy__vk_import *im, struct vy_err *err)
{
	int rc = 0;
	const VkExternalMemoryHandleTypeFlagBits handle =
		VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
	void *host = (void *)im->base;
	VkMemoryHostPointerPropertiesEXT props = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
	VY_VK(d->vk.vkGetMemoryHostPointerPropertiesEXT(d->dev, handle, host, &props));
	VkExternalMemoryBufferCreateInfo external = {
		.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
		.handleTypes = handle,
	};
	VkBufferCreateInfo info = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.pNext = &external,
		.size = im->size,
		.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT,
		.sharingMode = VK_SHARING_MODE_EXCLUSIVE,
	};
	VY_VK(d->vk.vkCreateBuffer(d->dev, &info, NULL, &im->buffer));
	VkMemoryRequirements req;
	d->vk.vkGetBufferMemoryRequirements(d->dev, im->buffer, &req);
	uint32_t type = coherent_type(d, props.memoryTypeBits & req.memoryTypeBits);
	if (type == VY_VK_NO_TYPE) {
		return refused(d, "no coherent memory type serves it as a transfer source", err);
	}
	if (req.size > im->size) {
		return refused(d, "a buffer over it needs more bytes than it holds", err);
	}
	VkImportMemoryHostPointerInfoEXT import = {
		.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT,
		.handleType = handle,
		.pHostPointer = host,
	};
	VkMemoryAllocateInfo alloc = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
		.pNext = &import,
		.allocationSize = im->size,
		.memoryTypeIndex = type,
	};
	VY_VK(d->vk.vkAllocateMemory(d->dev, &alloc, NULL, &im->memory));
	VY_VK(d->vk.vkBindBufferMemory(d->dev, im->buffer, im->memory, 0));
	return 0;
error:
	/* A driver that cannot pin this memory refuses it with an error of its choice (NVIDIA's
	 * says VK_ERROR_OUT_OF_DEVICE_MEMORY for a read-only mapping): out-of-memory results and a
	 * lost device keep their codes, anything else is a refusal. */
	if (rc != VY_E_OUT_OF_MEMORY && rc != VY_E_DEVICE_LOST) {
		char why[VY_ERR_MESSAGE_MAX];
		snprintf(why, sizeof(why), "%s", err ? err->message : "the driver refused it");
		rc = refused(d, why, err);
	}
	return rc;
}

int vy__vk_import_add(
	struct vy__vk_backend *b, const void *ptr, size_t len, uint64_t *id, struct vy_err *err)
{
	struct vy_vk_device *d = &b->dev;
	if (!d->host_import) {
		return refused(d, "it lacks VK_EXT_external_memory_host", err);
	}
	uintptr_t align = (uintptr_t)d->import_alignment;
	uintptr_t first = (uintptr_t)ptr;
	uintptr_t base = (first + align - 1) & ~(align - 1);
	uintptr_t end = len > UINTPTR_MAX - first ? UINTPTR_MAX : first + len;
	end &= ~(align - 1);
	if (base < first || end <= base) {
		return refused(d, "the range holds no whole aligned page", err);
	}
	VkDeviceSize size = end - base;
	VkDeviceSize most = d->max_allocation & ~(VkDeviceSize)(align - 1);
	if (size > most) {
		size = most;
	}
	if (size == 0) {
		return refused(d, "its largest allocation is smaller than one page", err);
	}
	if (!writable_range(base, base + size)) {
		return refused(d, "it is not all mapped readable and writable", err);
	}
	struct vy__vk_import *im = calloc(1, sizeof(*im));
	if (!im) {
		fprintf(stderr, "vyred: out of memory for a host memory import\n");
		abort();
	}
	im->ptr = first;
	im->base = base;
	im->size = size;
	im->dev = d;
	atomic_init(&im->refs, 1);
	int rc = import_memory(d, im, err);
	if (rc) {
		destroy(im);
		return rc;
	}
	pthread_mutex_lock(&b->import_lock);
	do {
		if (getrandom(&im->id, sizeof(im->id), 0) != (ssize_t)sizeof(im->id)) {
			im->id = (uint64_t)time(NULL) * UINT64_C(0x9e3779b97f4a7c15) +
				 b->import_count;
		}
	} while (im->id == 0 || find_locked(b, im->id));
	size_t j = bucket_of(im->id);
	im->next = b->imports[j];
	b->imports[j] = im;
	b->import_count++;
	pthread_mutex_unlock(&b->import_lock);
	*id = im->id;
	return 0;
}

void vy__vk_import_remove(struct vy__vk_backend *b, uint64_t id)
{
	pthread_mutex_lock(&b->import_lock);
	struct vy__vk_import **link = &b->imports[bucket_of(id)];
	while (*link && (*link)->id != id) {
		link = &(*link)->next;
	}
	struct vy__vk_import *im = *link;
	if (im) {
		*link = im->next;
		b->import_count--;
	}
	pthread_mutex_unlock(&b->import_lock);
	if (!im) {
		return;
	}
	/* Jobs that still hold it were abandoned (timed out) with their copies submitted: the
	 * caller unmaps the memory after this, so the device must be done reading it. */
	if (atomic_load(&im->refs) > 1 && b->open) {
		(void)vy__vk_exec_drain(&b->exec, NULL);
	}
	vy__vk_import_release(im);
}

struct vy__vk_import *vy__vk_import_find(struct vy__vk_backend *b, const struct vy_host_ref *ref,
	const void *data, uint64_t len, VkDeviceSize *src_offset)
{
	if (ref->id == 0 || len == 0) {
		return NULL;
	}
	pthread_mutex_lock(&b->import_lock);
	struct vy__vk_import *im = find_locked(b, ref->id);
	uintptr_t at = (uintptr_t)data;
	/* The ref must name exactly the view's bytes, and they must lie inside the import. */
	bool fits = im && ref->offset <= UINTPTR_MAX - im->ptr && im->ptr + ref->offset == at &&
		    at >= im->base && at - im->base <= im->size &&
		    len <= im->size - (at - im->base);
	if (fits) {
		atomic_fetch_add(&im->refs, 1);
		*src_offset = at - im->base;
	}
	pthread_mutex_unlock(&b->import_lock);
	return fits ? im : NULL;
}

void vy__vk_imports_clear(struct vy__vk_backend *b)
{
	pthread_mutex_lock(&b->import_lock);
	for (size_t i = 0; i < VY__VK_IMPORT_BUCKETS; i++) {
		while (b->imports[i]) {
			struct vy__vk_import *im = b->imports[i];
			b->imports[i] = im->next;
			vy__vk_import_release(im);
		}
	}
	b->import_count = 0;
	pthread_mutex_unlock(&b->import_lock);
}
