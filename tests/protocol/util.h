/* Helpers shared by the protocol test files. */
#ifndef VY_TESTS_PROTOCOL_UTIL_H
#define VY_TESTS_PROTOCOL_UTIL_H

#include <stddef.h>

/* Whole file as a NUL-terminated malloc'd string, or NULL. */
char *vy_test_read_file(const char *path, size_t *len);

#endif
