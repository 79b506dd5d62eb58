/*
 * Shared-memory regions: a memfd sized and sealed (no shrinking, no growing, no more seals) before
 * it is handed to the daemon with SCM_RIGHTS in the same sendmsg as its shm_attach frame. The
 * seals are what let the daemon map it without fear of SIGBUS; the client keeps its own read-write
 * mapping and the descriptor, so a region survives a reconnect: it is attached again with the same
 * memory under a new id.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

static int attach(struct vy_client *c, struct vy_region *r, struct vy_error *err)
{
	struct vy__msg m;
	vy__msg_begin(c, &m, VY_OP_SHM_ATTACH, 1);
	vy_pack_cstr(&m.pk, "size");
	msgpack_pack_uint64(&m.pk, r->size);
	struct vy_reply *rep = NULL;
	int rc = vy__msg_call(c, &m, r->fd, &rep, err);
	if (rc == 0 && !vy_value_u64(vy_reply_get(rep, "region"), &r->id)) {
		rc = vy__error_set(err, VY_ERROR_BAD_REPLY, "region",
			"use a vyred that speaks protocol 1",
			"the shm_attach reply holds no region");
	}
	vy_reply_destroy(rep);
	return rc;
}

static void release(struct vy_region *r)
{
	if (r->map && r->map != MAP_FAILED) {
		munmap(r->map, r->size);
	}
	if (r->fd >= 0) {
		close(r->fd);
	}
	free(r);
}

static int sys_error(const char *what, struct vy_error *err)
{
	int e = errno;
	return vy__error_set(err, e == ENOMEM ? VY_ERROR_OUT_OF_MEMORY : VY_ERROR_SYSTEM, NULL,
		"check the memory limits of the process (ulimit, memory.max) and the region's size",
		"%s: %s (%s)", what, strerror(e), strerrorname_np(e));
}

int vy_region_attach(struct vy_client *c, size_t size, struct vy_region **out, struct vy_error *err)
{
	*out = NULL;
	if (size == 0) {
		return vy__error_set(err, VY_ERROR_INVALID_ARGUMENT, "size",
			"ask for a region of at least one byte", "a region of 0 bytes");
	}
	struct vy_region *r = calloc(1, sizeof(*r));
	if (!r) {
		return vy__error_set(err, VY_ERROR_OUT_OF_MEMORY, NULL, "free memory and try again",
			"no memory for a region");
	}
	r->client = c;
	r->size = size;
	r->fd = memfd_create("vyre-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	int rc = 0;
	if (r->fd < 0) {
		rc = sys_error("memfd_create", err);
	} else if (ftruncate(r->fd, (off_t)size) != 0) {
		rc = sys_error("ftruncate", err);
	} else if (fcntl(r->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
		rc = sys_error("fcntl F_ADD_SEALS", err);
	} else {
		r->map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
		if (r->map == MAP_FAILED) {
			rc = sys_error("mmap", err);
		}
	}
	if (rc == 0) {
		rc = attach(c, r, err);
	}
	if (rc != 0) {
		release(r);
		return rc;
	}
	r->next = c->regions;
	if (c->regions) {
		c->regions->prev = r;
	}
	c->regions = r;
	*out = r;
	return 0;
}

int vy_region_detach(struct vy_client *c, struct vy_region *r, struct vy_error *err)
{
	if (!r) {
		return 0;
	}
	if (r->prev) {
		r->prev->next = r->next;
	} else {
		c->regions = r->next;
	}
	if (r->next) {
		r->next->prev = r->prev;
	}
	int rc = 0;
	if (vy_client_connected(c)) {
		struct vy__msg m;
		vy__msg_begin(c, &m, VY_OP_SHM_DETACH, 1);
		vy_pack_cstr(&m.pk, "region");
		msgpack_pack_uint64(&m.pk, r->id);
		rc = vy__msg_call(c, &m, -1, NULL, err);
	}
	release(r);
	return rc;
}

void *vy_region_data(const struct vy_region *r)
{
	return r->map;
}

size_t vy_region_size(const struct vy_region *r)
{
	return r->size;
}

uint64_t vy_region_id(const struct vy_region *r)
{
	return r->id;
}

int vy__regions_reattach(struct vy_client *c, struct vy_error *err)
{
	for (struct vy_region *r = c->regions; r; r = r->next) {
		int rc = attach(c, r, err);
		if (rc != 0) {
			return rc;
		}
	}
	return 0;
}

void vy__regions_release(struct vy_client *c)
{
	while (c->regions) {
		struct vy_region *r = c->regions;
		c->regions = r->next;
		release(r);
	}
}
