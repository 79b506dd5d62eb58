/*
 * Test support: cases of the conformance corpus (the format is in tests/conformance/README.md)
 * and the comparison of a backend's results with the reference's, byte for byte. Used by the
 * conformance runner and by the differential fuzzer (tests/difffuzz), which builds its cases in
 * memory and loads them the same way, so what it prints is exactly what ran.
 *
 * Every function that can fail describes the failure in `why`, a buffer of VY_TEST_WHY_MAX bytes.
 * Out-of-memory aborts. Not thread-safe: each case belongs to one thread.
 */
#ifndef VY_TESTS_SUPPORT_CASE_H
#define VY_TESTS_SUPPORT_CASE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "binding.h"
#include "err.h"
#include "ir.h"
#include "spec.h"

#define VY_TEST_WHY_MAX 512

/* A growable array of 32-bit words. */
struct vy_test_words {
	uint32_t *v;
	size_t len;
	size_t cap;
};

void vy_test_words_push(struct vy_test_words *w, uint32_t x);
void vy_test_words_finish(struct vy_test_words *w);

/* calloc that aborts with a message when memory runs out. */
void *vy_test_xcalloc(size_t n, size_t size);

/* Write a message into `why` (VY_TEST_WHY_MAX bytes). */
void vy_test_why(char *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

float vy_test_f32_of(uint32_t bits);
/* The f32 value a load gives: NaN canonical, subnormals flushed to a signed zero. */
float vy_test_f32_loaded(uint32_t bits);
/* The little-endian word at p. */
uint32_t vy_test_word_at(const uint8_t *p);

/* One `ulp` check of a case. */
struct vy_test_ulp_check {
	char op[16];
	double (*fn)(double);
	double (*fn2)(double, double); /* a function of two operands: the second from input2 */
	uint32_t input, input2, output;
	double lo, hi, max;
};

/* A loaded case: its program decoded, validated and planned, its inputs expanded. */
struct vy_test_case {
	char name[256];
	json_object *root; /* owned */
	struct vy_program *program;
	struct vy_binding_plan *plan;
	unsigned features;
	uint32_t subgroup_size;       /* 0: the program uses no subgroup operation */
	struct vy_test_words *inputs; /* plan->n_inputs of them */
	struct vy_bytes *views;
	struct vy_spec_map spec;
	struct vy_dispatch_config config;
	json_object *expect_outputs; /* borrowed from root, or NULL */
	int expect_code;             /* expected error, or 0 */
	const char *expect_trap;     /* borrowed, or NULL */
	const char *expect_at;       /* borrowed, or NULL */
	struct vy_test_ulp_check ulp[16];
	size_t n_ulp;
	/* Set when loading failed because the decoder or the validator refused the program. */
	bool program_refused;
};

/*
 * Load a case from a file, or from a parsed JSON object whose reference it takes over (also on
 * failure). `k` must be zeroed with its spec map initialized (vy_spec_map_init). Returns 0, or
 * -1 with `why` saying what is wrong with the case. Free with vy_test_case_finish either way.
 */
int vy_test_case_load(struct vy_test_case *k, const char *path, char *why);
int vy_test_case_load_json(struct vy_test_case *k, json_object *root, char *why);
void vy_test_case_finish(struct vy_test_case *k);

/* The buffer of the o-th output and of the i-th input of a loaded case. */
const struct vy_buffer *vy_test_case_output(const struct vy_test_case *k, size_t o);
const struct vy_buffer *vy_test_case_input(const struct vy_test_case *k, size_t i);

/* Expand a generator of the case format into words of type `t`, appended to `out`. */
int vy_test_gen_eval(json_object *g, enum vy_type t, struct vy_test_words *out, char *why);

/* One dispatch's result. */
struct vy_test_result {
	int rc;
	struct vy_err err;
	struct vy_outputs outputs;
	double ms; /* wall time of the dispatch */
};

/* The trap kind a TRAP message names, or "". */
const char *vy_test_trap_kind_in(const char *message);
/* "CODE: message (at path)". */
void vy_test_describe_error(const struct vy_test_result *res, char *buf, size_t size);

/* Compare output o's bytes with words; describe the first difference in `why`. */
bool vy_test_same_words(const struct vy_test_case *k, size_t o, const uint8_t *got, size_t got_len,
	const uint32_t *want, size_t want_len, const char *got_name, const char *want_name,
	char *why);

/*
 * Another backend's result against the reference's: the same outputs byte for byte, or the same
 * error (code, location and trap kind). `why` says how they differ, or what matched.
 */
bool vy_test_same_as_reference(const struct vy_test_case *k, const struct vy_test_result *ref,
	const struct vy_test_result *res, const char *label, char *why);

/*
 * With VYRED_VULKAN_VALIDATION=1 the Vulkan backend runs under VK_LAYER_KHRONOS_validation and
 * checks every generated module with spirv-val: print the count of messages it collected (and
 * them), and return 1 when there is any, else 0.
 */
int vy_test_vulkan_validation_check(void);

#endif
