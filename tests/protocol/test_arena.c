/* The region allocator. */
#include <criterion/criterion.h>
#include <stdalign.h>
#include <stdint.h>
#include <string.h>

#include "arena.h"

Test(arena, allocations_are_zeroed_aligned_and_distinct)
{
	struct vy_arena *a = vy_arena_create();
	unsigned char *prev = NULL;
	for (size_t i = 1; i < 3000; i += 7) {
		unsigned char *p = vy_arena_alloc(a, i);
		cr_assert_eq((uintptr_t)p % alignof(max_align_t), 0);
		for (size_t j = 0; j < i; j++) {
			cr_assert_eq(p[j], 0);
		}
		memset(p, 0xab, i);
		cr_assert_neq(p, prev);
		prev = p;
	}
	void *big = vy_arena_alloc(a, 1 << 20);
	memset(big, 1, 1 << 20);
	cr_assert_geq(vy_arena_used(a), (size_t)1 << 20);
	vy_arena_destroy(a);
}

Test(arena, strdup_copies_and_terminates)
{
	struct vy_arena *a = vy_arena_create();
	char *s = vy_arena_strndup(a, "hello world", 5);
	cr_assert_str_eq(s, "hello");
	cr_assert_str_eq(vy_arena_strdup(a, "x"), "x");
	vy_arena_destroy(a);
	vy_arena_destroy(NULL);
}
