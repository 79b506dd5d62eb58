/*
 * Resident buffers and shared memory regions (DESIGN.md §7.4, §6).
 *
 * Handles are 64 random bits from getrandom(), checked against the table, so a handle is never
 * guessable and never reused while the daemon runs. A buffer belongs to the user (uid) and the
 * connection that allocated it and is freed when that connection closes, unless it was given a
 * name: a named buffer belongs to the user, any connection of that user can attach it (alloc with
 * the same name and size returns the same handle) and free it, and it lives until freed. A
 * handle of another user, or another connection's unnamed buffer, is NOT_FOUND exactly like a
 * handle that never existed. Bytes count against the user's resident_quota from the moment an
 * alloc is accepted.
 *
 * Shared memory: shm_attach receives a memfd with SCM_RIGHTS. It must carry F_SEAL_SHRINK, so
 * the client cannot shrink it under the daemon's mapping (which would make reads fault), be at
 * least the announced size, and live on shmem: a hole punched in a shmem file refaults as fresh
 * zeroed pages, but on hugetlbfs (MFD_HUGETLB) the refault needs a page from the huge page pool,
 * which the client can drain, and the read then raises SIGBUS. The daemon maps it shared and
 * reads dispatch inputs in place. What could still make a read fault (a shmem page that cannot
 * be allocated under strict overcommit, a swap-in error, a memory error) is caught by the SIGBUS
 * guard (sigbus.h): every mapping is registered there, the read gets zeros, and the requests
 * that used the region fail from then on.
 * Regions belong to their connection. On a device whose backend imports host memory
 * (VK_EXT_external_memory_host on Vulkan), the mapping is imported on the region's first
 * dispatch there, so the device copies inputs out of it and the host copies nothing; where the
 * device refuses, the inputs are read in place as before. Drivers pin imported pages for
 * writing, and NVIDIA's not only refuses a read-only mapping but then refuses any later import
 * at its addresses, so the region is mapped writable where the memfd allows it (the daemon never
 * writes through the mapping) and only such a mapping is imported; a write-sealed memfd is
 * mapped read-only and never imported. A lost and recovered device loses its imports: the next
 * use imports again. The imports are released before the mapping goes, with the region's last
 * reference.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "log.h"
#include "sigbus.h"
#include "vyred.h"

uint64_t vy_random_u64(void)
{
	uint64_t v = 0;
	while (v == 0) {
		if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v)) {
			fprintf(stderr, "vyred: getrandom failed: %s\n", strerror(errno));
			abort();
		}
	}
	return v;
}

void vy_resident_init(struct vy_server *s)
{
	memset(&s->res, 0, sizeof(s->res));
	vy_list_init(&s->res.named);
}

static struct vy_resident *lookup(struct vy_resident_table *t, uint64_t handle)
{
	for (struct vy_hlink *l = vy_htable_bucket(&t->index, handle); l; l = l->next) {
		struct vy_resident *r = VY_CONTAINER_OF(l, struct vy_resident, link);
		if (r->handle == handle) {
			return r;
		}
	}
	return NULL;
}

static struct vy_uid_usage *usage_of(struct vy_resident_table *t, uid_t uid, bool create)
{
	for (size_t i = 0; i < t->n_usage; i++) {
		if (t->usage[i].uid == uid) {
			return &t->usage[i];
		}
	}
	if (!create) {
		return NULL;
	}
	if (t->n_usage == t->cap_usage) {
		t->cap_usage = t->cap_usage ? t->cap_usage * 2 : 8;
		t->usage = realloc(t->usage, t->cap_usage * sizeof(*t->usage));
		if (!t->usage) {
			fprintf(stderr, "vyred: out of memory in the quota table\n");
			abort();
		}
	}
	t->usage[t->n_usage] = (struct vy_uid_usage){.uid = uid};
	return &t->usage[t->n_usage++];
}

int vy_resident_reserve(struct vy_server *s, uid_t uid, uint64_t bytes, struct vy_err *err)
{
	struct vy_uid_usage *u = usage_of(&s->res, uid, true);
	uint64_t quota = s->cfg.resident_quota;
	if (bytes > quota || u->bytes > quota - bytes) {
		return vy_err_set(err, VY_E_QUOTA_EXCEEDED, "size",
			"free resident buffers you no longer need, or ask the operator to raise "
			"resident_quota",
			"user %u holds %" PRIu64 " resident bytes; %" PRIu64
			" more would pass the quota of %" PRIu64,
			(unsigned)uid, u->bytes, bytes, quota);
	}
	uint64_t total = s->cfg.resident_total;
	if (bytes > total || s->res.reserved > total - bytes) {
		return vy_err_set(err, VY_E_QUOTA_EXCEEDED, "size",
			"free resident buffers you no longer need, retry once other users have "
			"freed "
			"theirs, or ask the operator to raise resident_total",
			"all users together hold %" PRIu64 " resident bytes; %" PRIu64
			" more would pass resident_total, %" PRIu64,
			s->res.reserved, bytes, total);
	}
	u->bytes += bytes;
	s->res.reserved += bytes;
	return 0;
}

void vy_resident_unreserve(struct vy_server *s, uid_t uid, uint64_t bytes)
{
	struct vy_uid_usage *u = usage_of(&s->res, uid, false);
	if (u) {
		uint64_t n = bytes < u->bytes ? bytes : u->bytes;
		u->bytes -= n;
		s->res.reserved -= n;
	}
}

static int not_found(struct vy_err *err, uint64_t handle)
{
	return vy_err_set(err, VY_E_NOT_FOUND, "handle",
		"use a handle that alloc returned on this connection (or a named buffer of your "
		"user)",
		"no resident buffer %" PRIu64, handle);
}

struct vy_resident *vy_resident_find(
	struct vy_server *s, struct vy_conn *c, uint64_t handle, struct vy_err *err)
{
	struct vy_resident *r = lookup(&s->res, handle);
	if (!r || r->uid != c->uid || (!r->named && r->conn != c)) {
		not_found(err, handle);
		return NULL;
	}
	return r;
}

struct vy_resident *vy_resident_get(
	struct vy_server *s, struct vy_conn *c, uint64_t handle, struct vy_err *err)
{
	struct vy_resident *r = vy_resident_find(s, c, handle, err);
	if (r && r->lost) {
		vy_err_set(err, VY_E_NOT_FOUND, "handle",
			"allocate and upload the buffer again: its device was lost and recovered",
			"resident buffer %" PRIu64 " was lost with device %u", handle,
			r->dev->index);
		return NULL;
	}
	if (r) {
		r->last_use_ns = vy_now_ns();
	}
	return r;
}

struct vy_resident *vy_resident_find_named(struct vy_server *s, uid_t uid, const char *name)
{
	for (struct vy_link *l = s->res.named.next; l != &s->res.named; l = l->next) {
		struct vy_resident *r = VY_CONTAINER_OF(l, struct vy_resident, owner);
		if (r->uid == uid && strcmp(r->name, name) == 0 && !r->lost) {
			return r;
		}
	}
	return NULL;
}

static void table_insert(struct vy_resident_table *t, struct vy_resident *r)
{
	r->link.hash = r->handle;
	vy_htable_insert(&t->index, &r->link);
	t->count++;
	t->bytes += r->size;
}

struct vy_resident *vy_resident_add(struct vy_server *s, struct vy_conn *c, struct vy_device *d,
	const struct vy_resource *res, uint64_t size, const char *name)
{
	struct vy_resident *r = calloc(1, sizeof(*r));
	if (!r) {
		fprintf(stderr, "vyred: out of memory for a resident buffer\n");
		abort();
	}
	/* Handles are never reused: a fresh random value is drawn until it is unused, and freed
	 * handles are 64-bit values nobody will draw again in practice. */
	do {
		r->handle = vy_random_u64();
	} while (lookup(&s->res, r->handle));
	r->dev = d;
	r->res = *res;
	r->size = size;
	r->uid = c->uid;
	r->pid = c->pid;
	r->conn_id = c->id;
	r->conn = c;
	r->refs = 1;
	r->in_table = true;
	r->created_ns = r->last_use_ns = vy_now_ns();
	pthread_mutex_lock(&d->lock);
	r->generation = d->generation;
	pthread_mutex_unlock(&d->lock);
	if (name) {
		r->named = true;
		snprintf(r->name, sizeof(r->name), "%s", name);
		vy_list_insert_tail(&s->res.named, &r->owner);
	} else {
		vy_list_insert_tail(&c->residents, &r->owner);
	}
	table_insert(&s->res, r);
	s->res.allocs++;
	return r;
}

void vy_resident_ref(struct vy_resident *r)
{
	r->refs++;
}

void vy_resident_unref(struct vy_server *s, struct vy_resident *r)
{
	if (--r->refs > 0) {
		return;
	}
	if (!r->lost) {
		struct vy_err err = {0};
		if (vy_backend_resident_free(r->dev->backend, r->res, &err) != 0) {
			vy_log_err(VY_LOG_WARNING, &err, "freeing resident buffer %" PRIu64,
				r->handle);
		}
	}
	free(r);
}

void vy_resident_remove(struct vy_server *s, struct vy_resident *r)
{
	if (!r->in_table) {
		return;
	}
	struct vy_resident_table *t = &s->res;
	vy_htable_remove(&t->index, &r->link);
	r->in_table = false;
	t->count--;
	t->frees++;
	vy_list_remove(&r->owner);
	if (!r->lost) {
		t->bytes -= r->size;
		vy_resident_unreserve(s, r->uid, r->size);
	}
	vy_resident_unref(s, r);
}

void vy_resident_conn_closed(struct vy_server *s, struct vy_conn *c)
{
	while (!vy_list_empty(&c->residents)) {
		vy_resident_remove(
			s, VY_CONTAINER_OF(c->residents.next, struct vy_resident, owner));
	}
	for (struct vy_link *l = s->res.named.next; l != &s->res.named; l = l->next) {
		struct vy_resident *r = VY_CONTAINER_OF(l, struct vy_resident, owner);
		if (r->conn == c) {
			r->conn = NULL;
		}
	}
}

void vy_resident_device_lost(struct vy_server *s, struct vy_device *d)
{
	struct vy_resident_table *t = &s->res;
	size_t n = 0;
	for (size_t i = 0; i < t->index.n_buckets; i++) {
		for (struct vy_hlink *l = t->index.buckets[i]; l; l = l->next) {
			struct vy_resident *r = VY_CONTAINER_OF(l, struct vy_resident, link);
			/* The entry stays, so that the handle answers NOT_FOUND with the advice to
			 * upload again, until its owner frees it or goes; its bytes are released
			 * now. */
			if (r->dev == d && !r->lost) {
				r->lost = true;
				t->bytes -= r->size;
				vy_resident_unreserve(s, r->uid, r->size);
				n++;
			}
		}
	}
	t->lost += n;
	vy_log(VY_LOG_WARNING, "device %u: %zu resident buffers were lost with the device",
		d->index, n);
}

void vy_resident_finish(struct vy_server *s)
{
	struct vy_resident_table *t = &s->res;
	for (size_t i = 0; i < t->index.n_buckets; i++) {
		while (t->index.buckets[i]) {
			vy_resident_remove(
				s, VY_CONTAINER_OF(t->index.buckets[i], struct vy_resident, link));
		}
	}
	vy_htable_finish(&t->index);
	free(t->usage);
	memset(t, 0, sizeof(*t));
	vy_list_init(&t->named);
}

void vy_resident_pack_stats(struct vy_server *s, msgpack_packer *pk)
{
	struct vy_resident_table *t = &s->res;
	size_t named = 0;
	for (struct vy_link *l = t->named.next; l != &t->named; l = l->next) {
		named++;
	}
	uint64_t regions = 0;
	uint64_t region_bytes = 0;
	for (struct vy_link *l = s->conns.next; l != &s->conns; l = l->next) {
		struct vy_conn *c = VY_CONTAINER_OF(l, struct vy_conn, link);
		for (struct vy_link *m = c->shms.next; m != &c->shms; m = m->next) {
			regions++;
			region_bytes += VY_CONTAINER_OF(m, struct vy_shm, link)->size;
		}
	}
	uint64_t imported = 0;
	uint64_t generations[VY_MAX_DEVICES];
	for (uint32_t i = 0; i < s->n_devices; i++) {
		generations[i] = vy_device_generation(&s->devices[i]);
	}
	for (struct vy_link *l = s->conns.next; l != &s->conns; l = l->next) {
		struct vy_conn *c = VY_CONTAINER_OF(l, struct vy_conn, link);
		for (struct vy_link *m = c->shms.next; m != &c->shms; m = m->next) {
			const struct vy_shm *region = VY_CONTAINER_OF(m, struct vy_shm, link);
			bool any = false;
			for (uint32_t i = 0; i < s->n_devices && !any; i++) {
				any = region->imports[i].id &&
				      region->imports[i].generation == generations[i];
			}
			imported += any;
		}
	}
	uint64_t import_inputs;
	uint64_t import_bytes;
	vy_devices_import_counts(s, &import_inputs, &import_bytes);
	vy_pack_cstr(pk, "resident");
	msgpack_pack_map(pk, 12);
	vy_pack_cstr(pk, "buffers");
	msgpack_pack_uint64(pk, t->count);
	vy_pack_cstr(pk, "bytes");
	msgpack_pack_uint64(pk, t->bytes);
	vy_pack_cstr(pk, "named");
	msgpack_pack_uint64(pk, named);
	vy_pack_cstr(pk, "allocs");
	msgpack_pack_uint64(pk, t->allocs);
	vy_pack_cstr(pk, "frees");
	msgpack_pack_uint64(pk, t->frees);
	vy_pack_cstr(pk, "lost");
	msgpack_pack_uint64(pk, t->lost);
	vy_pack_cstr(pk, "shm_regions");
	msgpack_pack_uint64(pk, regions);
	vy_pack_cstr(pk, "shm_bytes");
	msgpack_pack_uint64(pk, region_bytes);
	vy_pack_kv_u64(pk, "shm_imported", imported);
	vy_pack_kv_u64(pk, "shm_import_inputs", import_inputs);
	vy_pack_kv_u64(pk, "shm_import_bytes", import_bytes);
	vy_pack_kv_u64(pk, "shm_faults", vy_sigbus_faults());
}

void vy_resident_pack_table(struct vy_server *s, struct vy_conn *viewer, msgpack_packer *pk)
{
	struct vy_resident_table *t = &s->res;
	bool admin = vy_server_is_admin(s, viewer);
	size_t n = 0;
	for (size_t i = 0; i < t->index.n_buckets; i++) {
		for (struct vy_hlink *l = t->index.buckets[i]; l; l = l->next) {
			struct vy_resident *r = VY_CONTAINER_OF(l, struct vy_resident, link);
			n += admin || r->uid == viewer->uid;
		}
	}
	uint64_t now = vy_now_ns();
	vy_pack_cstr(pk, "buffers");
	msgpack_pack_array(pk, n);
	for (size_t i = 0; i < t->index.n_buckets; i++) {
		for (struct vy_hlink *l = t->index.buckets[i]; l; l = l->next) {
			struct vy_resident *r = VY_CONTAINER_OF(l, struct vy_resident, link);
			if (!admin && r->uid != viewer->uid) {
				continue;
			}
			msgpack_pack_map(pk, 10);
			vy_pack_cstr(pk, "handle");
			msgpack_pack_uint64(pk, r->handle);
			vy_pack_cstr(pk, "size");
			msgpack_pack_uint64(pk, r->size);
			vy_pack_cstr(pk, "name");
			vy_pack_cstr(pk, r->name);
			vy_pack_cstr(pk, "uid");
			msgpack_pack_uint32(pk, (uint32_t)r->uid);
			vy_pack_cstr(pk, "pid");
			msgpack_pack_int32(pk, r->pid);
			vy_pack_cstr(pk, "client");
			msgpack_pack_uint64(pk, r->conn_id);
			vy_pack_cstr(pk, "device");
			msgpack_pack_uint32(pk, r->dev->index);
			vy_pack_cstr(pk, "age_ms");
			msgpack_pack_uint64(pk, (now - r->created_ns) / 1000000);
			vy_pack_cstr(pk, "idle_ms");
			msgpack_pack_uint64(pk, (now - r->last_use_ns) / 1000000);
			vy_pack_cstr(pk, "lost");
			if (r->lost) {
				msgpack_pack_true(pk);
			} else {
				msgpack_pack_false(pk);
			}
		}
	}
}

/* --- shared memory regions ------------------------------------------------------------- */

int vy_shm_attach(struct vy_conn *c, int fd, uint64_t size, uint64_t *id, struct vy_err *err)
{
	int seals = fcntl(fd, F_GET_SEALS);
	struct stat st;
	struct statfs fs;
	int rc = 0;
	if (seals < 0) {
		rc = vy_err_set(err, VY_E_BAD_REQUEST, "size",
			"create the region with memfd_create(name, MFD_ALLOW_SEALING)",
			"the descriptor passed is not a sealable memfd (%s)", strerror(errno));
	} else if (!(seals & F_SEAL_SHRINK)) {
		rc = vy_err_set(err, VY_E_BAD_REQUEST, "size",
			"seal the memfd with fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) before sending "
			"it",
			"the memfd is not sealed against shrinking");
	} else if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < size) {
		rc = vy_err_set(err, VY_E_BAD_REQUEST, "size",
			"ftruncate the memfd to at least the size you announce before sealing it",
			"the memfd holds %jd bytes, fewer than the %" PRIu64 " announced",
			(intmax_t)st.st_size, size);
	} else if (fstatfs(fd, &fs) != 0) {
		rc = vy_err_set(err, VY_E_BAD_REQUEST, "size",
			"create the region with memfd_create(name, MFD_ALLOW_SEALING)",
			"the file system of the memfd cannot be read (%s)", strerror(errno));
	} else if (fs.f_type == HUGETLBFS_MAGIC) {
		rc = vy_err_set(err, VY_E_BAD_REQUEST, "size",
			"create the memfd without MFD_HUGETLB (plain shmem pages cannot "
			"vanish under the daemon's mapping)",
			"the memfd lives on hugetlbfs, whose pages can be freed under the "
			"daemon's mapping (a punched hole refaults only while the huge page "
			"pool has a page)");
	} else if (fs.f_type != TMPFS_MAGIC || !S_ISREG(st.st_mode)) {
		rc = vy_err_set(err, VY_E_BAD_REQUEST, "size",
			"create the region with memfd_create(name, MFD_ALLOW_SEALING), without "
			"MFD_HUGETLB",
			"the descriptor is not a shmem memfd (file system magic 0x%jx)",
			(uintmax_t)fs.f_type);
	} else if (size > SIZE_MAX) {
		rc = vy_err_set(err, VY_E_BAD_REQUEST, "size", "announce a smaller region",
			"a region of %" PRIu64 " bytes cannot be mapped", size);
	}
	struct vy_server *s = c->srv;
	struct vy_uid_usage *u = usage_of(&s->res, c->uid, true);
	uint64_t quota = s->cfg.shm_quota;
	if (rc == 0 && (size > quota || u->shm_bytes > quota - size)) {
		rc = vy_err_set(err, VY_E_QUOTA_EXCEEDED, "size",
			"detach regions you no longer need, attach a smaller one, or ask the "
			"operator "
			"to raise shm_quota",
			"user %u has %" PRIu64 " bytes of shared memory attached; %" PRIu64
			" more would pass the quota of %" PRIu64,
			(unsigned)c->uid, u->shm_bytes, size, quota);
	}
	uint64_t total = s->cfg.shm_total;
	if (rc == 0 && (size > total || s->res.shm_bytes > total - size)) {
		rc = vy_err_set(err, VY_E_QUOTA_EXCEEDED, "size",
			"detach regions you no longer need, retry once other users have detached "
			"theirs, or ask the operator to raise shm_total",
			"all users together have %" PRIu64 " bytes of shared memory attached; "
			"%" PRIu64 " more would pass shm_total, %" PRIu64,
			s->res.shm_bytes, size, total);
	}
	void *map = MAP_FAILED;
	bool writable = false;
	if (rc == 0) {
		/* Fails (EPERM, EACCES) for a write-sealed memfd or a read-only descriptor. */
		map = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		writable = map != MAP_FAILED;
		if (!writable) {
			map = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
		}
		if (map == MAP_FAILED) {
			rc = vy_err_set(err, VY_E_OUT_OF_MEMORY, "size", "attach a smaller region",
				"mapping %" PRIu64 " bytes failed: %s", size, strerror(errno));
		}
	}
	close(fd);
	/* The guard covers the whole mapping, which mmap made of whole pages. */
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t mapped = (size_t)size <= SIZE_MAX - page ? ((size_t)size + page - 1) / page * page
							: (size_t)size;
	uint32_t slot = 0;
	bool guarded = false;
	if (rc == 0 && vy_sigbus_guard_active()) {
		rc = vy_sigbus_region_add(map, mapped, &slot);
		if (rc) {
			munmap(map, (size_t)size);
			rc = vy_err_set(err, rc, "size", "detach regions you no longer need",
				"the daemon guards at most %u shared memory regions at once, and "
				"every one is in use",
				VY_SIGBUS_CHUNK * VY_SIGBUS_MAX_CHUNKS);
		}
		guarded = rc == 0;
	}
	if (rc) {
		return rc;
	}
	struct vy_shm *m = calloc(1, sizeof(*m));
	if (!m) {
		fprintf(stderr, "vyred: out of memory for a shared memory region\n");
		abort();
	}
	m->id = vy_random_u64();
	m->srv = c->srv;
	m->conn = c;
	m->uid = c->uid;
	m->map = map;
	m->size = (size_t)size;
	m->refs = 1;
	u->shm_bytes += size;
	s->res.shm_bytes += size;
	m->attached = true;
	m->importable = writable;
	m->guarded = guarded;
	m->guard_slot = slot;
	vy_list_insert_tail(&c->shms, &m->link);
	c->n_shms++;
	*id = m->id;
	return 0;
}

struct vy_shm *vy_shm_get(struct vy_conn *c, uint64_t id)
{
	for (struct vy_link *l = c->shms.next; l != &c->shms; l = l->next) {
		struct vy_shm *m = VY_CONTAINER_OF(l, struct vy_shm, link);
		if (m->id == id) {
			return m;
		}
	}
	return NULL;
}

void vy_shm_ref(struct vy_shm *m)
{
	m->refs++;
}

void vy_shm_unref(struct vy_shm *m)
{
	if (--m->refs > 0) {
		return;
	}
	/* Releasing waits for any device work still reading the import, so the unmap is safe. */
	for (uint32_t i = 0; i < m->srv->n_devices; i++) {
		vy_backend_host_release(m->srv->devices[i].backend, m->imports[i].id);
	}
	/* Out of the guard's registry first: the handler must never match an address that is about
	 * to be reused by another mapping. */
	if (m->guarded) {
		vy_sigbus_region_remove(m->guard_slot);
	}
	munmap((void *)m->map, m->size);
	struct vy_uid_usage *u = usage_of(&m->srv->res, m->uid, false);
	if (u) {
		uint64_t n = m->size < u->shm_bytes ? m->size : u->shm_bytes;
		u->shm_bytes -= n;
		m->srv->res.shm_bytes -= n;
	}
	free(m);
}

uint64_t vy_shm_import(struct vy_shm *m, struct vy_device *d)
{
	if (!m->importable) {
		return 0;
	}
	uint64_t generation = vy_device_generation(d);
	struct vy_shm_import *im = &m->imports[d->index];
	if (im->tried && im->generation == generation) {
		return im->id;
	}
	/* A recovery dropped the old import, unless it was made in the new device just before the
	 * generation moved: releasing covers both (an unknown id is ignored). */
	vy_backend_host_release(d->backend, im->id);
	*im = (struct vy_shm_import){.tried = true, .generation = generation};
	/* The mapping covers whole pages, so the tail of the last page may be imported too. */
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t len = m->size <= SIZE_MAX - page ? (m->size + page - 1) / page * page : m->size;
	if (vy_backend_host_import(d->backend, m->map, len, &im->id, NULL) != 0) {
		im->id = 0;
	}
	return im->id;
}

int vy_shm_check_faulted(const struct vy_shm *m, const char *at, struct vy_err *err)
{
	if (!m->guarded || !vy_sigbus_region_faulted(m->guard_slot)) {
		return 0;
	}
	return vy_err_set(err, VY_E_BAD_REQUEST, at,
		"detach the region and attach a fresh memfd; never punch holes in a region the "
		"daemon may be reading",
		"shared memory region %" PRIu64 " lost pages while the daemon read it (SIGBUS); "
		"the daemon read zeros in their place and fails every request that uses it",
		m->id);
}

void vy_shm_detach(struct vy_shm *m)
{
	if (!m->attached) {
		return;
	}
	m->attached = false;
	vy_list_remove(&m->link);
	m->conn->n_shms--;
	vy_shm_unref(m);
}

void vy_shm_conn_closed(struct vy_conn *c)
{
	while (!vy_list_empty(&c->shms)) {
		vy_shm_detach(VY_CONTAINER_OF(c->shms.next, struct vy_shm, link));
	}
}
