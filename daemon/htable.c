/* The intrusive hash table of htable.h. */
#include "htable.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

static void grow(struct vy_htable *t)
{
	size_t n = t->n_buckets ? t->n_buckets * 2 : 256;
	struct vy_hlink **b = calloc(n, sizeof(*b));
	if (!b) {
		fprintf(stderr, "vyred: out of memory growing a hash table to %zu buckets\n", n);
		abort();
	}
	for (size_t i = 0; i < t->n_buckets; i++) {
		while (t->buckets[i]) {
			struct vy_hlink *l = t->buckets[i];
			t->buckets[i] = l->next;
			l->next = b[l->hash & (n - 1)];
			b[l->hash & (n - 1)] = l;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->n_buckets = n;
}

void vy_htable_insert(struct vy_htable *t, struct vy_hlink *l)
{
	if (t->count + 1 > t->n_buckets) {
		grow(t);
	}
	struct vy_hlink **slot = &t->buckets[l->hash & (t->n_buckets - 1)];
	l->next = *slot;
	*slot = l;
	t->count++;
}

void vy_htable_remove(struct vy_htable *t, struct vy_hlink *l)
{
	struct vy_hlink **slot = &t->buckets[l->hash & (t->n_buckets - 1)];
	while (*slot != l) {
		assert(*slot);
		slot = &(*slot)->next;
	}
	*slot = l->next;
	l->next = NULL;
	t->count--;
}

void vy_htable_finish(struct vy_htable *t)
{
	free(t->buckets);
	t->buckets = NULL;
	t->n_buckets = 0;
	t->count = 0;
}
