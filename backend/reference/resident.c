/*
 * Resident buffers of the reference backend: heap buffers that outlive a dispatch, named by
 * random 64-bit ids. Dispatches bind them in place. Each buffer is reference counted, so that a
 * buffer freed while a dispatch runs on it stays valid until that dispatch lets go; its id is
 * gone at once. Concurrent writes to one buffer (an upload during a dispatch that writes it)
 * are a race in the caller's program, as they would be on a GPU, but never touch freed memory.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>

#include "err.h"
#include "interp.h"

void vy__ref_residents_init(struct ref_residents *t)
{
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
}

static void buffer_free(struct ref_resident *r)
{
	free(r->words);
	free(r);
}

void vy__ref_residents_finish(struct ref_residents *t)
{
	for (size_t i = 0; i < t->len; i++) {
		buffer_free(t->items[i]);
	}
	free(t->items);
	pthread_mutex_destroy(&t->lock);
	memset(t, 0, sizeof(*t));
}

/* Index of the buffer of `id`, or SIZE_MAX; called with the lock held. */
static size_t find(const struct ref_residents *t, uint64_t id)
{
	for (size_t i = 0; i < t->len; i++) {
		if (t->items[i]->id == id) {
			return i;
		}
	}
	return SIZE_MAX;
}

static int not_found(struct vy_err *err, const char *at, uint64_t id)
{
	return vy_err_set(err, VY_E_NOT_FOUND, at,
		"allocate the buffer again and upload its contents; a freed handle never comes "
		"back",
		"no resident buffer 0x%016" PRIx64 " on the reference backend", id);
}

static int random_id(uint64_t *id, struct vy_err *err)
{
	for (;;) {
		ssize_t n = getrandom(id, sizeof(*id), 0);
		if (n == (ssize_t)sizeof(*id)) {
			return 0;
		}
		if (n < 0 && errno != EINTR) {
			return vy_err_set(err, VY_E_INTERNAL, NULL,
				"make the kernel's random source available to the process",
				"getrandom failed (%s) while naming a resident buffer",
				strerrorname_np(errno) ? strerrorname_np(errno) : "unknown");
		}
	}
}

int vy__ref_residents_alloc(
	struct ref_residents *t, size_t len, struct vy_resource *out, struct vy_err *err)
{
	if ((uint64_t)len > REF_MAX_BUFFER_BYTES) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "size",
			"allocate at most 17179869180 bytes per buffer (a u32 index of 4-byte "
			"elements reaches no further)",
			"a resident buffer of %zu bytes is larger than the reference backend's "
			"limit",
			len);
	}
	struct ref_resident *r = calloc(1, sizeof(*r));
	if (!r) {
		fprintf(stderr, "vyred: out of memory allocating a resident buffer\n");
		abort();
	}
	r->len = len;
	r->refs = 1;
	size_t words = (len + 3) / 4;
	if (words > 0) {
		r->words = calloc(words, sizeof(uint32_t));
		if (!r->words) {
			free(r);
			return vy_err_set(err, VY_E_OUT_OF_MEMORY, NULL,
				"free other resident buffers or allocate a smaller one",
				"no memory for a resident buffer of %zu bytes", len);
		}
	}

	pthread_mutex_lock(&t->lock);
	int rc = 0;
	do {
		rc = random_id(&r->id, err);
	} while (rc == 0 && (r->id == 0 || find(t, r->id) != SIZE_MAX));
	if (rc == 0) {
		if (t->len == t->cap) {
			size_t cap = t->cap ? t->cap * 2 : 16;
			struct ref_resident **items = realloc(t->items, cap * sizeof(*items));
			if (!items) {
				fprintf(stderr,
					"vyred: out of memory growing the resident table\n");
				abort();
			}
			t->items = items;
			t->cap = cap;
		}
		t->items[t->len++] = r;
		*out = (struct vy_resource){r->id, len};
	}
	pthread_mutex_unlock(&t->lock);
	if (rc) {
		buffer_free(r);
	}
	return rc;
}

static int check_range(const struct ref_resident *r, size_t offset, size_t len, struct vy_err *err)
{
	if (offset > r->len || len > r->len - offset) {
		return vy_err_set(err, VY_E_BAD_REQUEST, "offset",
			"keep offset + length within the buffer's size",
			"bytes %zu..%zu are outside resident buffer 0x%016" PRIx64 " of %zu bytes",
			offset, offset + len, r->id, r->len);
	}
	return 0;
}

int vy__ref_residents_upload(struct ref_residents *t, const struct vy_resource *res, size_t offset,
	struct vy_bytes data, struct vy_err *err)
{
	pthread_mutex_lock(&t->lock);
	size_t i = find(t, res->id);
	int rc = i == SIZE_MAX ? not_found(err, "handle", res->id)
			       : check_range(t->items[i], offset, data.len, err);
	if (rc == 0 && data.len > 0) {
		memcpy((uint8_t *)t->items[i]->words + offset, data.data, data.len);
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

int vy__ref_residents_download(struct ref_residents *t, const struct vy_resource *res,
	size_t offset, uint8_t *dst, size_t len, struct vy_err *err)
{
	pthread_mutex_lock(&t->lock);
	size_t i = find(t, res->id);
	int rc = i == SIZE_MAX ? not_found(err, "handle", res->id)
			       : check_range(t->items[i], offset, len, err);
	if (rc == 0 && len > 0) {
		memcpy(dst, (const uint8_t *)t->items[i]->words + offset, len);
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

/* Drop one reference; called with the lock held. */
static void unref(struct ref_resident *r)
{
	assert(r->refs > 0);
	if (--r->refs == 0) {
		buffer_free(r);
	}
}

int vy__ref_residents_free(struct ref_residents *t, struct vy_resource res, struct vy_err *err)
{
	pthread_mutex_lock(&t->lock);
	size_t i = find(t, res.id);
	int rc = 0;
	if (i == SIZE_MAX) {
		rc = not_found(err, "handle", res.id);
	} else {
		struct ref_resident *r = t->items[i];
		t->items[i] = t->items[--t->len];
		unref(r);
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

void vy__ref_residents_drop_all(struct ref_residents *t)
{
	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < t->len; i++) {
		unref(t->items[i]);
	}
	t->len = 0;
	pthread_mutex_unlock(&t->lock);
}

int vy__ref_residents_acquire(struct ref_residents *t, const struct vy_resource *res, size_t n,
	struct ref_resident **out, struct vy_err *err)
{
	pthread_mutex_lock(&t->lock);
	int rc = 0;
	size_t got = 0;
	for (; got < n; got++) {
		size_t i = find(t, res[got].id);
		if (i == SIZE_MAX) {
			char at[32];
			snprintf(at, sizeof(at), "resources[%zu]", got);
			rc = not_found(err, at, res[got].id);
			break;
		}
		out[got] = t->items[i];
		out[got]->refs++;
	}
	if (rc) {
		for (size_t k = 0; k < got; k++) {
			unref(out[k]);
		}
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

void vy__ref_residents_release(struct ref_residents *t, struct ref_resident **bufs, size_t n)
{
	pthread_mutex_lock(&t->lock);
	for (size_t i = 0; i < n; i++) {
		unref(bufs[i]);
	}
	pthread_mutex_unlock(&t->lock);
}
