/*
 * The bits of an f32 and the f32 of some bits, as they are (no canonicalization), for tests.
 */
#ifndef VY_TESTS_SUPPORT_BITS_H
#define VY_TESTS_SUPPORT_BITS_H

#include <stdint.h>

typedef union {
	uint32_t bits;
	float value;
} vy_test_word;

static inline float vy_test_float(uint32_t bits)
{
	return ((vy_test_word){.bits = bits}).value;
}

static inline uint32_t vy_test_bits(float f)
{
	return ((vy_test_word){.value = f}).bits;
}

#endif
