/*
 * Helpers of the reference backend's tests (see util.h).
 */
#include "util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "reference.h"

struct vy_backend *ref_backend(uint32_t subgroup_size)
{
	struct vy_reference_options opts = {subgroup_size};
	struct vy_backend *b = NULL;
	struct vy_err err = {0};
	int rc = vy_reference_backend_create(&opts, &b, &err);
	cr_assert_eq(rc, 0, "creating the reference backend failed: %s", err.message);
	cr_assert_not_null(b);
	return b;
}

void ref_result_finish(struct ref_result *r)
{
	vy_outputs_finish(&r->out);
}

size_t ref_words(const struct ref_result *r, size_t i)
{
	cr_assert_lt(i, r->out.len, "output %zu missing (the dispatch gave %zu)", i, r->out.len);
	return r->out.items[i].len / 4;
}

uint32_t ref_word(const struct ref_result *r, size_t i, size_t k)
{
	cr_assert_lt(k, ref_words(r, i), "output %zu has no word %zu", i, k);
	uint32_t w;
	memcpy(&w, r->out.items[i].data + 4 * k, 4);
	return w;
}

struct vy_bytes ref_in(const uint32_t *words, size_t n)
{
	return (struct vy_bytes){(const uint8_t *)words, n * 4};
}

struct ref_result ref_dispatch_on(struct vy_backend *b, struct vy_program *p,
	const struct vy_bytes *inputs, size_t n_inputs, const struct vy_dispatch_config *config)
{
	struct ref_result r;
	memset(&r, 0, sizeof(r));
	vy_outputs_init(&r.out);
	r.rc = vy_backend_dispatch(b, p, inputs, n_inputs, config, &r.out, &r.err);
	return r;
}

struct ref_result ref_dispatch(struct vy_program *p, const struct vy_bytes *inputs, size_t n_inputs,
	const struct vy_dispatch_config *config)
{
	struct vy_backend *b = ref_backend(0);
	struct ref_result r = ref_dispatch_on(b, p, inputs, n_inputs, config);
	vy_backend_destroy(b);
	return r;
}

uint32_t fbits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

float ffrom(uint32_t bits)
{
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

/*
 * The element-wise program: buffers a (and b, c when used) of n elements, out of n elements, one
 * workgroup of 64 lanes per 64 elements; invocations past n return, the others store
 * out[gid] = e(a[gid], ...) at entry[2].
 */
static struct vy_program *elementwise(enum vy_type ta, enum vy_type tb, enum vy_type tc,
	enum vy_type tr, size_t n, struct vy_expr *(*make)(struct vy_program *, const void *),
	const void *ctx)
{
	struct vy_program *p = vy_program_create("elementwise", 64, 1, 1);
	vy_program_add_buffer(p, "a", 0, VY_ACCESS_READ_ONLY, ta, (uint32_t)n);
	if (tb != VY_TYPE_NONE) {
		vy_program_add_buffer(p, "b", 1, VY_ACCESS_READ_ONLY, tb, (uint32_t)n);
	}
	if (tc != VY_TYPE_NONE) {
		vy_program_add_buffer(p, "c", 2, VY_ACCESS_READ_ONLY, tc, (uint32_t)n);
	}
	vy_program_add_buffer(p, "out", 3, VY_ACCESS_WRITE_ONLY, tr, (uint32_t)n);
	struct vy_expr *past = vy_ir_binary(p, VY_BIN_GE, vy_ir_var(p, "i"), vy_ir_len(p, "out"));
	vy_program_set_entry(p,
		vy_ir_seq(p, vy_ir_let(p, "i", vy_ir_gid(p, 0)),
			vy_ir_if(p, past, vy_ir_seq(p, vy_ir_return(p), NULL), vy_ir_seq(p, NULL)),
			vy_ir_store(p, "out", vy_ir_var(p, "i"), make(p, ctx)), NULL));
	return p;
}

static struct vy_expr *ld(struct vy_program *p, const char *buf)
{
	return vy_ir_load(p, buf, vy_ir_var(p, "i"));
}

struct op_ctx {
	uint32_t op;
	enum vy_type to;
};

static struct vy_expr *make_binary(struct vy_program *p, const void *ctx)
{
	const struct op_ctx *c = ctx;
	return vy_ir_binary(p, (enum vy_binop)c->op, ld(p, "a"), ld(p, "b"));
}

static struct vy_expr *make_unary(struct vy_program *p, const void *ctx)
{
	const struct op_ctx *c = ctx;
	return vy_ir_unary(p, (enum vy_unop)c->op, ld(p, "a"));
}

static struct vy_expr *make_cast(struct vy_program *p, const void *ctx)
{
	const struct op_ctx *c = ctx;
	return vy_ir_cast(p, c->to, ld(p, "a"));
}

static struct vy_expr *make_bitcast(struct vy_program *p, const void *ctx)
{
	const struct op_ctx *c = ctx;
	return vy_ir_bitcast(p, c->to, ld(p, "a"));
}

static struct vy_expr *make_fma(struct vy_program *p, const void *ctx)
{
	return vy_ir_fma(p, ld(p, "a"), ld(p, "b"), ld(p, "c"));
}

static struct ref_result run_elementwise(
	struct vy_program *p, const uint32_t *const *in, size_t n_in, size_t n)
{
	struct vy_bytes inputs[3];
	for (size_t i = 0; i < n_in; i++) {
		inputs[i] = ref_in(in[i], n);
	}
	struct ref_result r = ref_dispatch(p, inputs, n_in, NULL);
	vy_program_destroy(p);
	return r;
}

struct ref_result ref_binary(enum vy_binop op, enum vy_type ta, enum vy_type tb, enum vy_type tr,
	const uint32_t *a, const uint32_t *b, size_t n)
{
	struct op_ctx c = {op, VY_TYPE_NONE};
	const uint32_t *in[] = {a, b};
	return run_elementwise(elementwise(ta, tb, VY_TYPE_NONE, tr, n, make_binary, &c), in, 2, n);
}

struct ref_result ref_unary(
	enum vy_unop op, enum vy_type ta, enum vy_type tr, const uint32_t *a, size_t n)
{
	struct op_ctx c = {op, VY_TYPE_NONE};
	const uint32_t *in[] = {a};
	return run_elementwise(
		elementwise(ta, VY_TYPE_NONE, VY_TYPE_NONE, tr, n, make_unary, &c), in, 1, n);
}

struct ref_result ref_cast(enum vy_type from, enum vy_type to, const uint32_t *a, size_t n)
{
	struct op_ctx c = {0, to};
	const uint32_t *in[] = {a};
	return run_elementwise(
		elementwise(from, VY_TYPE_NONE, VY_TYPE_NONE, to, n, make_cast, &c), in, 1, n);
}

struct ref_result ref_bitcast(enum vy_type from, enum vy_type to, const uint32_t *a, size_t n)
{
	struct op_ctx c = {0, to};
	const uint32_t *in[] = {a};
	return run_elementwise(
		elementwise(from, VY_TYPE_NONE, VY_TYPE_NONE, to, n, make_bitcast, &c), in, 1, n);
}

struct ref_result ref_fma(const uint32_t *a, const uint32_t *b, const uint32_t *c, size_t n)
{
	const uint32_t *in[] = {a, b, c};
	return run_elementwise(
		elementwise(VY_TYPE_F32, VY_TYPE_F32, VY_TYPE_F32, VY_TYPE_F32, n, make_fma, NULL),
		in, 3, n);
}

void ref_expect(const struct ref_result *r, const uint32_t *want, size_t n, const char *what)
{
	cr_assert_eq(r->rc, 0, "%s: dispatch failed: %s (at %s; fix: %s)", what, r->err.message,
		r->err.at, r->err.fix);
	cr_assert_eq(ref_words(r, 0), n, "%s: %zu results, expected %zu", what, ref_words(r, 0), n);
	for (size_t k = 0; k < n; k++) {
		uint32_t got = ref_word(r, 0, k);
		cr_expect_eq(got, want[k], "%s, element %zu: got 0x%08x, expected 0x%08x", what, k,
			got, want[k]);
	}
}

void ref_expect_error(const struct ref_result *r, int code, const char *at)
{
	cr_assert_eq(r->rc, code, "expected %s, got %s: %s", vy_err_name(code), vy_err_name(r->rc),
		r->err.message);
	cr_assert_eq(r->err.code, code);
	cr_assert_neq(r->err.fix[0], '\0', "every error carries a fix");
	cr_assert_eq(r->out.len, 0, "a failed dispatch returns no outputs");
	if (at) {
		cr_assert_str_eq(r->err.at, at);
	}
}
