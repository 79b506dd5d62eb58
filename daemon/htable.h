/*
 * An intrusive hash table with chaining: the link (next pointer and the object's 64-bit hash)
 * lives inside the object, so the program cache, the pipeline cache and the resident table index
 * their entries without allocating per entry. The bucket array doubles when the table holds as
 * many entries as buckets. Callers compare keys themselves while walking a bucket.
 *
 * Thread-safety: none; each table belongs to the loop thread.
 */
#ifndef VY_DAEMON_HTABLE_H
#define VY_DAEMON_HTABLE_H

#include <stddef.h>
#include <stdint.h>

struct vy_hlink {
	struct vy_hlink *next;
	uint64_t hash;
};

struct vy_htable {
	struct vy_hlink **buckets; /* owned */
	size_t n_buckets;          /* 0 or a power of two */
	size_t count;
};

/* Link `l`, whose hash is set, into the table. */
void vy_htable_insert(struct vy_htable *t, struct vy_hlink *l);
/* Unlink `l`, which must be in the table. */
void vy_htable_remove(struct vy_htable *t, struct vy_hlink *l);
/* Free the bucket array; the entries belong to the caller. */
void vy_htable_finish(struct vy_htable *t);

/* The first link of the bucket of `hash` (walk it with ->next), or NULL. */
static inline struct vy_hlink *vy_htable_bucket(const struct vy_htable *t, uint64_t hash)
{
	return t->n_buckets ? t->buckets[hash & (t->n_buckets - 1)] : NULL;
}

#endif
