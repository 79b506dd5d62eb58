/* Test support: the example programs of the source tree (tests/programs, docs/ir.md). */
#ifndef VY_TESTS_SUPPORT_EXAMPLES_H
#define VY_TESTS_SUPPORT_EXAMPLES_H

#include <stddef.h>

/* Whole file as a NUL-terminated malloc'd string, or NULL. */
char *vy_test_read_file(const char *path, size_t *len);

/*
 * Call fn(json, what, ctx) for every complete program of docs/ir.md under `source_root`: each
 * ```json block whose document begins with the field "vyre". `what` names the program in
 * messages. Returns the number of programs, or -1 when the document cannot be read or a block is
 * not terminated.
 */
int vy_test_each_ir_doc_program(const char *source_root,
	void (*fn)(const char *json, const char *what, void *ctx), void *ctx);

#endif
