/*
 * Chunked bump allocator behind struct vy_arena. Small requests are carved from 16 KiB chunks;
 * a request larger than a quarter chunk gets a chunk of its own so it wastes nothing.
 */
#include "arena.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_SIZE ((size_t)16 * 1024)

struct chunk {
	struct chunk *next;
	size_t size;
	size_t used;
	alignas(max_align_t) unsigned char data[];
};

struct vy_arena {
	struct chunk *head;
	size_t used;
};

static void *xmalloc(size_t size)
{
	void *p = malloc(size);
	if (!p) {
		fprintf(stderr, "vyred: out of memory allocating %zu bytes\n", size);
		abort();
	}
	return p;
}

struct vy_arena *vy_arena_create(void)
{
	struct vy_arena *arena = xmalloc(sizeof(*arena));
	arena->head = NULL;
	arena->used = 0;
	return arena;
}

void vy_arena_destroy(struct vy_arena *arena)
{
	if (!arena) {
		return;
	}
	struct chunk *c = arena->head;
	while (c) {
		struct chunk *next = c->next;
		free(c);
		c = next;
	}
	free(arena);
}

static struct chunk *chunk_new(size_t size)
{
	struct chunk *c = xmalloc(sizeof(*c) + size);
	c->next = NULL;
	c->size = size;
	c->used = 0;
	return c;
}

void *vy_arena_alloc(struct vy_arena *arena, size_t size)
{
	const size_t align = alignof(max_align_t);
	if (size == 0) {
		size = 1;
	}
	if (size > SIZE_MAX - align) {
		fprintf(stderr, "vyred: arena request of %zu bytes overflows\n", size);
		abort();
	}
	size = (size + align - 1) & ~(align - 1);
	arena->used += size;
	if (size > CHUNK_SIZE / 4) {
		/* Keep the current chunk at the head: later small requests still fill it. */
		struct chunk *big = chunk_new(size);
		big->used = size;
		if (arena->head) {
			big->next = arena->head->next;
			arena->head->next = big;
		} else {
			arena->head = big;
		}
		memset(big->data, 0, size);
		return big->data;
	}
	struct chunk *c = arena->head;
	if (!c || c->size - c->used < size) {
		c = chunk_new(CHUNK_SIZE);
		c->next = arena->head;
		arena->head = c;
	}
	void *p = c->data + c->used;
	c->used += size;
	memset(p, 0, size);
	return p;
}

void *vy_arena_calloc(struct vy_arena *arena, size_t n, size_t size)
{
	if (size != 0 && n > SIZE_MAX / size) {
		fprintf(stderr, "vyred: arena array of %zu x %zu bytes overflows\n", n, size);
		abort();
	}
	return vy_arena_alloc(arena, n * size);
}

char *vy_arena_strndup(struct vy_arena *arena, const char *s, size_t len)
{
	char *d = vy_arena_alloc(arena, len + 1);
	memcpy(d, s, len);
	d[len] = '\0';
	return d;
}

char *vy_arena_strdup(struct vy_arena *arena, const char *s)
{
	return vy_arena_strndup(arena, s, strlen(s));
}

size_t vy_arena_used(const struct vy_arena *arena)
{
	return arena->used;
}
