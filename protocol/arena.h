/*
 * Region allocator. A program, a decoded request and the planner's temporaries live in one arena
 * and die together. Allocation never fails: running out of memory aborts with a message, because
 * every size taken from the wire is bounded before it reaches an arena.
 *
 * Thread-safety: an arena belongs to one thread at a time.
 */
#ifndef VY_PROTOCOL_ARENA_H
#define VY_PROTOCOL_ARENA_H

#include <stddef.h>

struct vy_arena;

/* Create an empty arena. Never returns NULL. */
struct vy_arena *vy_arena_create(void);

/* Free every allocation of the arena and the arena itself. NULL is accepted. */
void vy_arena_destroy(struct vy_arena *arena);

/* Zeroed memory of `size` bytes, aligned for any scalar type, valid until the arena dies. */
void *vy_arena_alloc(struct vy_arena *arena, size_t size);

/* Zeroed array of `n` elements of `size` bytes; aborts when n * size overflows. */
void *vy_arena_calloc(struct vy_arena *arena, size_t n, size_t size);

/* Copy of `len` bytes of `s` with a terminating NUL. */
char *vy_arena_strndup(struct vy_arena *arena, const char *s, size_t len);

/* Copy of the NUL-terminated string `s`. */
char *vy_arena_strdup(struct vy_arena *arena, const char *s);

/* Bytes handed out so far (for limits and stats). */
size_t vy_arena_used(const struct vy_arena *arena);

#endif
