/*
 * The math-library lowering (planner/vmath.h): what the rewrite does to programs (no lowered
 * operation left, still valid, effects evaluated once and in order, fresh names, nothing moved
 * out of a loop or a branch, the node limit) and the special values of every function, run
 * through the reference backend. Accuracy over whole domains is the ULP report's job (tests/ulp).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "node_path.h"
#include "reference.h"
#include "validate.h"
#include "vmath.h"

#define LOWERED_COUNT 26
static const enum vy_unop lowered_ops[LOWERED_COUNT] = {VY_UN_INVERSE_SQRT, VY_UN_RECIPROCAL,
	VY_UN_EXP, VY_UN_EXP2, VY_UN_EXP10, VY_UN_EXPM1, VY_UN_LOG, VY_UN_LOG2, VY_UN_LOG10,
	VY_UN_LOG1P, VY_UN_SIN, VY_UN_COS, VY_UN_TAN, VY_UN_ASIN, VY_UN_ACOS, VY_UN_ATAN,
	VY_UN_SINH, VY_UN_COSH, VY_UN_TANH, VY_UN_CBRT, VY_UN_ERF, VY_UN_ERFC, VY_UN_EXP_CR,
	VY_UN_EXP2_CR, VY_UN_LOG_CR, VY_UN_LOG2_CR};

static bool is_lowered_op(uint32_t op)
{
	for (int i = 0; i < LOWERED_COUNT; i++) {
		if (lowered_ops[i] == op) {
			return true;
		}
	}
	return false;
}

/* What a walk over every expression of a program counts. */
struct census {
	uint32_t lowered; /* lowered operations left */
	uint32_t loads;
	uint32_t atomics;
	uint32_t untyped; /* expressions without a result type */
};

static void census_expr(struct census *c, const struct vy_expr *e)
{
	c->lowered += (e->kind == VY_EXPR_UNARY && is_lowered_op(e->op)) ||
		      (e->kind == VY_EXPR_BINARY && vy_vmath_lowers_binary((enum vy_binop)e->op));
	c->loads += e->kind == VY_EXPR_LOAD;
	c->atomics += e->kind == VY_EXPR_ATOMIC;
	c->untyped += e->type == VY_TYPE_NONE;
	for (uint32_t i = 0; i < e->nargs; i++) {
		census_expr(c, e->args[i]);
	}
}

static uint32_t slots(const struct vy_node *n)
{
	switch (n->kind) {
	case VY_NODE_LET:
	case VY_NODE_ASSIGN:
	case VY_NODE_IF:
		return 1;
	case VY_NODE_STORE:
	case VY_NODE_LOOP:
		return 2;
	default:
		return 0;
	}
}

static void census_block(struct census *c, const struct vy_block *b)
{
	for (uint32_t i = 0; i < b->len; i++) {
		const struct vy_node *n = b->items[i];
		for (uint32_t s = 0; s < slots(n); s++) {
			census_expr(c, n->args[s]);
		}
		census_block(c, &n->body);
		census_block(c, &n->orelse);
	}
}

static struct census census(const struct vy_program *p)
{
	struct census c = {0};
	census_block(&c, &p->entry);
	return c;
}

static void must_validate(struct vy_program *p)
{
	struct vy_err err;
	int rc = vy_validate_first(p, NULL, &err);
	cr_assert_eq(rc, 0, "validation failed: %s at %s", err.message, err.at);
}

static void must_lower(struct vy_program *p)
{
	struct vy_err err;
	int rc = vy_vmath_lower(p, &err);
	cr_assert_eq(rc, 0, "lowering failed: %s", err.message);
}

/* x (read_only f32), y (write_only f32), c (read_write u32): `n` elements each. */
static struct vy_program *program_xyc(uint32_t n)
{
	struct vy_program *p = vy_program_create("vmath", 1, 1, 1);
	vy_program_add_buffer(p, "x", 0, VY_ACCESS_READ_ONLY, VY_TYPE_F32, n);
	vy_program_add_buffer(p, "y", 1, VY_ACCESS_WRITE_ONLY, VY_TYPE_F32, n);
	vy_program_add_buffer(p, "c", 2, VY_ACCESS_READ_WRITE, VY_TYPE_U32, n);
	return p;
}

static struct vy_expr *load_x(struct vy_program *p, uint32_t i)
{
	return vy_ir_load(p, "x", vy_ir_u32(p, i));
}

Test(vmath, lowering_removes_every_lowered_operation)
{
	struct vy_program *p = program_xyc(LOWERED_COUNT);
	struct vy_node *nodes[LOWERED_COUNT];
	for (uint32_t i = 0; i < LOWERED_COUNT; i++) {
		nodes[i] = vy_ir_store(
			p, "y", vy_ir_u32(p, i), vy_ir_unary(p, lowered_ops[i], load_x(p, i)));
	}
	vy_program_set_entry(p, vy_ir_seqv(p, nodes, LOWERED_COUNT));
	must_validate(p);
	cr_assert(vy_vmath_needed(p));
	cr_assert_eq(census(p).lowered, LOWERED_COUNT);
	must_lower(p);
	struct census c = census(p);
	cr_assert_eq(c.lowered, 0, "%u lowered operations remain", c.lowered);
	cr_assert_eq(c.untyped, 0, "%u new expressions carry no type", c.untyped);
	cr_assert_not(vy_vmath_needed(p));
	must_validate(p);
	vy_program_destroy(p);
}

Test(vmath, program_without_math_functions_is_left_alone)
{
	struct vy_program *p = program_xyc(4);
	struct vy_block entry = vy_ir_seq(p,
		vy_ir_store(p, "y", vy_ir_gid(p, 0),
			vy_ir_unary(p, VY_UN_SQRT, vy_ir_load(p, "x", vy_ir_gid(p, 0)))),
		NULL);
	vy_program_set_entry(p, entry);
	must_validate(p);
	cr_assert_not(vy_vmath_needed(p));
	must_lower(p);
	cr_assert_eq(p->entry.items, entry.items);
	cr_assert_eq(p->entry.len, 1);
	vy_program_destroy(p);
}

Test(vmath, statements_without_math_functions_keep_their_nodes)
{
	struct vy_program *p = program_xyc(4);
	struct vy_node *plain = vy_ir_store(p, "y", vy_ir_u32(p, 0), load_x(p, 0));
	struct vy_node *math =
		vy_ir_store(p, "y", vy_ir_u32(p, 1), vy_ir_unary(p, VY_UN_EXP, load_x(p, 1)));
	vy_program_set_entry(p, vy_ir_seq(p, plain, math, NULL));
	must_validate(p);
	must_lower(p);
	cr_assert_eq(p->entry.items[0], plain);
	cr_assert_gt(p->entry.len, 2);
	cr_assert_eq(p->entry.items[p->entry.len - 1]->kind, VY_NODE_STORE);
	vy_program_destroy(p);
}

Test(vmath, load_argument_is_loaded_once)
{
	for (int i = 0; i < LOWERED_COUNT; i++) {
		struct vy_program *p = program_xyc(4);
		vy_program_set_entry(
			p, vy_ir_seq(p,
				   vy_ir_store(p, "y", vy_ir_gid(p, 0),
					   vy_ir_unary(p, lowered_ops[i],
						   vy_ir_load(p, "x", vy_ir_gid(p, 0)))),
				   NULL));
		must_validate(p);
		must_lower(p);
		cr_assert_eq(census(p).loads, 1, "%s loads %u times", vy_unop_name(lowered_ops[i]),
			census(p).loads);
		must_validate(p);
		vy_program_destroy(p);
	}
}

Test(vmath, atomic_argument_is_not_duplicated)
{
	for (int i = 0; i < LOWERED_COUNT; i++) {
		struct vy_program *p = program_xyc(4);
		struct vy_expr *old =
			vy_ir_atomic(p, VY_ATOMIC_ADD, "c", vy_ir_u32(p, 0), vy_ir_u32(p, 1));
		vy_program_set_entry(p, vy_ir_seq(p,
						vy_ir_store(p, "y", vy_ir_u32(p, 0),
							vy_ir_unary(p, lowered_ops[i],
								vy_ir_cast(p, VY_TYPE_F32, old))),
						NULL));
		must_validate(p);
		must_lower(p);
		cr_assert_eq(census(p).atomics, 1, "%s runs the atomic %u times",
			vy_unop_name(lowered_ops[i]), census(p).atomics);
		vy_program_destroy(p);
	}
}

/* Run `p` on one invocation of the reference backend with x and c as given; returns y. */
static void run_reference(
	struct vy_program *p, const float *x, const uint32_t *c, uint32_t n, uint32_t *y)
{
	struct vy_backend *b = NULL;
	struct vy_err err;
	cr_assert_eq(vy_reference_backend_create(NULL, &b, &err), 0, "%s", err.message);
	struct vy_bytes in[2] = {
		{(const uint8_t *)x, n * sizeof(float)},
		{(const uint8_t *)c, n * sizeof(uint32_t)},
	};
	struct vy_outputs out;
	vy_outputs_init(&out);
	struct vy_dispatch_config config = {.grid = {1, 1, 1}};
	int rc = vy_backend_dispatch(b, p, in, 2, &config, &out, &err);
	cr_assert_eq(rc, 0, "dispatch failed: %s", err.message);
	cr_assert_geq(out.len, 1);
	cr_assert_eq(out.items[0].len, n * sizeof(uint32_t));
	memcpy(y, out.items[0].data, n * sizeof(uint32_t));
	vy_outputs_finish(&out);
	vy_backend_destroy(b);
}

static uint32_t f32_bits(float f)
{
	uint32_t bits;
	memcpy(&bits, &f, sizeof(bits));
	return bits;
}

static float bits_f32(uint32_t bits)
{
	float f;
	memcpy(&f, &bits, sizeof(f));
	return f;
}

Test(vmath, effects_keep_their_order)
{
	/*
	 * store y[atomic_add(c[0], 1)] = exp(f32(atomic_add(c[0], 1))): the index's atomic runs
	 * first and sees 0, the value's sees 1, so y[0] = exp(1). Hoisting the value's atomic
	 * ahead of the index's would write exp(0) = 1 to y[1] instead.
	 */
	struct vy_program *p = program_xyc(4);
	struct vy_expr *first =
		vy_ir_atomic(p, VY_ATOMIC_ADD, "c", vy_ir_u32(p, 0), vy_ir_u32(p, 1));
	struct vy_expr *second =
		vy_ir_atomic(p, VY_ATOMIC_ADD, "c", vy_ir_u32(p, 0), vy_ir_u32(p, 1));
	vy_program_set_entry(
		p, vy_ir_seq(p,
			   vy_ir_store(p, "y", first,
				   vy_ir_unary(p, VY_UN_EXP, vy_ir_cast(p, VY_TYPE_F32, second))),
			   NULL));
	must_validate(p);
	struct vy_program *lowered = vy_program_clone(p);
	must_lower(lowered);
	must_validate(lowered);
	cr_assert_eq(census(lowered).atomics, 2);

	float x[4] = {0};
	uint32_t c[4] = {0};
	uint32_t y[4];
	run_reference(lowered, x, c, 4, y);
	cr_assert_eq(y[1], 0, "the value's atomic ran before the index's");
	cr_assert_float_eq(bits_f32(y[0]), 2.7182817f, 1e-6f);
	uint32_t y_written[4];
	run_reference(p, x, c, 4, y_written);
	cr_assert_arr_eq(y, y_written, sizeof(y));
	vy_program_destroy(lowered);
	vy_program_destroy(p);
}

static bool name_in_block(const struct vy_block *b, const char *name)
{
	for (uint32_t i = 0; i < b->len; i++) {
		const struct vy_node *n = b->items[i];
		if (n->name && strcmp(n->name, name) == 0 && n->kind == VY_NODE_LET) {
			return true;
		}
		if (name_in_block(&n->body, name) || name_in_block(&n->orelse, name)) {
			return true;
		}
	}
	return false;
}

Test(vmath, names_do_not_collide_with_the_program)
{
	struct vy_program *p = program_xyc(4);
	vy_program_add_buffer(p, "_vm", 3, VY_ACCESS_READ_ONLY, VY_TYPE_F32, 4);
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_let(p, "_vm0", load_x(p, 0)),
			   vy_ir_let(p, "_vm0_1", vy_ir_f32(p, 2.0f)),
			   vy_ir_let(p, "_vm1_", vy_ir_f32(p, 3.0f)),
			   vy_ir_let(p, "_vm2_0", vy_ir_unary(p, VY_UN_SIN, vy_ir_var(p, "_vm0"))),
			   vy_ir_store(p, "y", vy_ir_u32(p, 0),
				   vy_ir_binary(p, VY_BIN_ADD,
					   vy_ir_unary(p, VY_UN_LOG, vy_ir_var(p, "_vm0_1")),
					   vy_ir_var(p, "_vm2_0"))),
			   NULL));
	must_validate(p);
	must_lower(p);
	/* A new let shadowing or reusing a user name would fail validation. */
	must_validate(p);
	uint32_t user = 0;
	for (uint32_t i = 0; i < p->entry.len; i++) {
		const struct vy_node *n = p->entry.items[i];
		if (n->kind != VY_NODE_LET) {
			continue;
		}
		bool is_user = strcmp(n->name, "_vm0") == 0 || strcmp(n->name, "_vm0_1") == 0 ||
			       strcmp(n->name, "_vm1_") == 0 || strcmp(n->name, "_vm2_0") == 0;
		user += is_user;
		if (!is_user) {
			cr_assert(strncmp(n->name, "_vm3_", 5) == 0, "new name %s", n->name);
		}
	}
	cr_assert_eq(user, 4);
	cr_assert(name_in_block(&p->entry, "_vm3_0"));
	vy_program_destroy(p);
}

Test(vmath, hoisted_lets_stay_inside_loops_and_branches)
{
	struct vy_program *p = program_xyc(8);
	struct vy_node *in_loop = vy_ir_store(p, "y", vy_ir_var(p, "i"),
		vy_ir_unary(p, VY_UN_COS, vy_ir_load(p, "x", vy_ir_var(p, "i"))));
	struct vy_node *in_else =
		vy_ir_store(p, "y", vy_ir_u32(p, 7), vy_ir_unary(p, VY_UN_TANH, load_x(p, 7)));
	vy_program_set_entry(
		p, vy_ir_seq(p,
			   vy_ir_loop(p, "i", vy_ir_u32(p, 0), vy_ir_u32(p, 4),
				   vy_ir_seq(p, in_loop, NULL)),
			   vy_ir_if(p, vy_ir_binary(p, VY_BIN_LT, load_x(p, 0), vy_ir_f32(p, 0.0f)),
				   vy_ir_seq(p, NULL), vy_ir_seq(p, in_else, NULL)),
			   NULL));
	must_validate(p);
	must_lower(p);
	must_validate(p);
	cr_assert_eq(p->entry.len, 2, "something moved out of the loop or the branch");
	const struct vy_node *loop = p->entry.items[0];
	const struct vy_node *branch = p->entry.items[1];
	cr_assert_eq(loop->kind, VY_NODE_LOOP);
	cr_assert_gt(loop->body.len, 1);
	cr_assert_eq(loop->body.items[loop->body.len - 1]->kind, VY_NODE_STORE);
	cr_assert_eq(branch->kind, VY_NODE_IF);
	cr_assert_eq(branch->body.len, 0);
	cr_assert_gt(branch->orelse.len, 1);
	cr_assert_eq(census(p).loads, 3);
	vy_program_destroy(p);
}

Test(vmath, condition_and_bounds_are_hoisted_before_their_statement)
{
	struct vy_program *p = program_xyc(8);
	struct vy_expr *bound =
		vy_ir_cast(p, VY_TYPE_U32, vy_ir_unary(p, VY_UN_EXP2, load_x(p, 0)));
	struct vy_expr *cond = vy_ir_binary(
		p, VY_BIN_GT, vy_ir_unary(p, VY_UN_LOG, load_x(p, 1)), vy_ir_f32(p, 0.0f));
	vy_program_set_entry(p,
		vy_ir_seq(p,
			vy_ir_loop(p, "i", vy_ir_u32(p, 0), bound,
				vy_ir_seq(p,
					vy_ir_store(p, "y", vy_ir_var(p, "i"), vy_ir_f32(p, 1.0f)),
					NULL)),
			vy_ir_if(p, cond,
				vy_ir_seq(p,
					vy_ir_store(p, "y", vy_ir_u32(p, 7), vy_ir_f32(p, 2.0f)),
					NULL),
				vy_ir_seq(p, NULL)),
			NULL));
	must_validate(p);
	must_lower(p);
	must_validate(p);
	const struct vy_node *last = p->entry.items[p->entry.len - 1];
	cr_assert_eq(last->kind, VY_NODE_IF);
	cr_assert_eq(last->body.len, 1);
	uint32_t loops = 0;
	for (uint32_t i = 0; i < p->entry.len; i++) {
		loops += p->entry.items[i]->kind == VY_NODE_LOOP;
		if (p->entry.items[i]->kind == VY_NODE_LOOP) {
			cr_assert_eq(p->entry.items[i]->body.len, 1);
		}
	}
	cr_assert_eq(loops, 1);

	/* exp2(2) = 4 iterations write 1 to y[0..3]; log(4) > 0 writes 2 to y[7]. */
	float x[8] = {2.0f, 4.0f};
	uint32_t c[8] = {0};
	uint32_t y[8];
	run_reference(p, x, c, 8, y);
	for (int i = 0; i < 8; i++) {
		float want = i < 4 ? 1.0f : i == 7 ? 2.0f : 0.0f;
		cr_assert_eq(y[i], f32_bits(want), "y[%d] = %g", i, (double)bits_f32(y[i]));
	}
	vy_program_destroy(p);
}

Test(vmath, shared_subexpression_is_rewritten_in_each_scope)
{
	/* One sin node under both arms of an if (programs built in C may share nodes). */
	struct vy_program *p = program_xyc(4);
	struct vy_expr *shared = vy_ir_unary(p, VY_UN_SIN, load_x(p, 0));
	vy_program_set_entry(p,
		vy_ir_seq(p,
			vy_ir_if(p, vy_ir_binary(p, VY_BIN_GT, load_x(p, 1), vy_ir_f32(p, 0.0f)),
				vy_ir_seq(p, vy_ir_store(p, "y", vy_ir_u32(p, 0), shared), NULL),
				vy_ir_seq(p, vy_ir_store(p, "y", vy_ir_u32(p, 1), shared), NULL)),
			NULL));
	must_validate(p);
	must_lower(p);
	must_validate(p);
	cr_assert_eq(shared->kind, VY_EXPR_UNARY, "the shared node was edited in place");
	cr_assert_eq(census(p).lowered, 0);
	vy_program_destroy(p);
}

Test(vmath, lowered_program_maps_back_to_the_written_nodes)
{
	struct vy_program *p = program_xyc(4);
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_let(p, "a", vy_ir_unary(p, VY_UN_ATAN, load_x(p, 0))),
			   vy_ir_block(p,
				   vy_ir_seq(p,
					   vy_ir_store(p, "y", vy_ir_u32(p, 0),
						   vy_ir_unary(p, VY_UN_ACOS, vy_ir_var(p, "a"))),
					   NULL)),
			   NULL));
	must_validate(p);
	struct vy_program *lowered = vy_program_clone(p);
	must_lower(lowered);
	uint32_t n = vy_node_path_count(lowered);
	cr_assert_gt(n, vy_node_path_count(p));
	uint32_t origins[512];
	cr_assert_leq(n, 512);
	cr_assert_eq(vy_node_path_origins(p, lowered, origins, n), 0);
	cr_assert_eq(origins[n - 1], vy_node_path_count(p) - 1);
	vy_program_destroy(lowered);
	vy_program_destroy(p);
}

Test(vmath, lowering_past_the_node_limit_fails_and_keeps_the_program)
{
	struct vy_program *p = program_xyc(4);
	enum { LETS = 9000 };
	static struct vy_node *nodes[LETS];
	for (uint32_t i = 0; i < LETS; i++) {
		char name[16];
		snprintf(name, sizeof(name), "v%u", i);
		nodes[i] = vy_ir_let(p, name, vy_ir_unary(p, VY_UN_SIN, vy_ir_f32(p, (float)i)));
	}
	vy_program_set_entry(p, vy_ir_seqv(p, nodes, LETS));
	must_validate(p);
	struct vy_node **before = p->entry.items;
	struct vy_err err;
	int rc = vy_vmath_lower(p, &err);
	cr_assert_eq(rc, VY_E_UNSUPPORTED_FEATURE);
	cr_assert(strstr(err.message, "100000"), "%s", err.message);
	cr_assert_neq(err.fix[0], '\0');
	cr_assert_eq(p->entry.items, before);
	cr_assert_eq(p->entry.len, LETS);
	cr_assert_eq(census(p).lowered, LETS);
	vy_program_destroy(p);
}

/*
 * One function at a witness input: the bits expected, exactly (ulps 0: special values, and results
 * the expansion computes exactly) or within `ulps` canonical f32 steps (the correctly rounded
 * value of an ordinary input).
 */
struct witness {
	float x;
	uint32_t want;
	int ulps;
};

/* Position on the line of canonical f32 values (no subnormals; -0 just below +0). */
static int64_t ordinal(uint32_t bits)
{
	uint32_t mag = bits & 0x7FFFFFFFu;
	int64_t o = mag == 0 ? 0 : (int64_t)mag - 0x00800000 + 1;
	return (bits & 0x80000000u) ? -o - 1 : o;
}

static bool close_enough(uint32_t got, const struct witness *w)
{
	if (w->ulps == 0 || (got & 0x7FFFFFFFu) > 0x7F800000u) {
		return got == w->want;
	}
	int64_t d = ordinal(got) - ordinal(w->want);
	return d <= w->ulps && -d <= w->ulps;
}

#define NAN_BITS 0x7FC00000u
#define PINF 0x7F800000u
#define NINF 0xFF800000u
#define PZERO 0x00000000u
#define NZERO 0x80000000u
#define ONE 0x3F800000u
#define PIO2 0x3FC90FDBu
#define PIO4 0x3F490FDBu
#define PI 0x40490FDBu

static void check_witnesses(enum vy_unop op, const struct witness *w, uint32_t n)
{
	struct vy_program *p = vy_program_create("witness", 1, 1, 1);
	vy_program_add_buffer(p, "x", 0, VY_ACCESS_READ_ONLY, VY_TYPE_F32, n);
	vy_program_add_buffer(p, "y", 1, VY_ACCESS_WRITE_ONLY, VY_TYPE_F32, n);
	vy_program_add_buffer(p, "c", 2, VY_ACCESS_READ_WRITE, VY_TYPE_U32, n);
	vy_program_set_entry(
		p, vy_ir_seq(p,
			   vy_ir_loop(p, "i", vy_ir_u32(p, 0), vy_ir_u32(p, n),
				   vy_ir_seq(p,
					   vy_ir_store(p, "y", vy_ir_var(p, "i"),
						   vy_ir_unary(p, op,
							   vy_ir_load(p, "x", vy_ir_var(p, "i")))),
					   NULL)),
			   NULL));
	float x[32];
	uint32_t c[32] = {0};
	uint32_t y[32];
	cr_assert_leq(n, 32);
	for (uint32_t i = 0; i < n; i++) {
		x[i] = w[i].x;
	}
	run_reference(p, x, c, n, y);
	for (uint32_t i = 0; i < n; i++) {
		cr_expect(close_enough(y[i], &w[i]),
			"%s(%g) = %.9g (0x%08X), expected %.9g (0x%08X)", vy_unop_name(op),
			(double)w[i].x, (double)bits_f32(y[i]), y[i], (double)bits_f32(w[i].want),
			w[i].want);
	}
	vy_program_destroy(p);
}

#define EXACT(x, bits)                                                                             \
	{                                                                                          \
		(x), (bits), 0                                                                     \
	}
#define NEAR(x, bits)                                                                              \
	{                                                                                          \
		(x), (bits), 4                                                                     \
	}
#define CHECK(op, ...)                                                                             \
	do {                                                                                       \
		static const struct witness w_[] = {__VA_ARGS__};                                  \
		check_witnesses(VY_UN_##op, w_, sizeof(w_) / sizeof(w_[0]));                       \
	} while (0)

Test(vmath, special_values_of_reciprocal_and_inverse_sqrt)
{
	CHECK(RECIPROCAL, EXACT(0.0f, PINF), EXACT(-0.0f, NINF), EXACT(INFINITY, PZERO),
		EXACT(-INFINITY, NZERO), EXACT(NAN, NAN_BITS), EXACT(4.0f, 0x3E800000u),
		EXACT(-0.5f, 0xC0000000u),
		EXACT(0x1p127f, PZERO)); /* 2^-127 is subnormal: flushed */
	CHECK(INVERSE_SQRT, EXACT(0.0f, PINF), EXACT(-0.0f, NINF), EXACT(INFINITY, PZERO),
		EXACT(-1.0f, NAN_BITS), EXACT(-INFINITY, NAN_BITS), EXACT(NAN, NAN_BITS),
		EXACT(4.0f, 0x3F000000u), EXACT(0x1p-126f, 0x5F000000u));
}

Test(vmath, special_values_of_exp_and_exp2)
{
	CHECK(EXP, EXACT(0.0f, ONE), EXACT(-0.0f, ONE), EXACT(INFINITY, PINF),
		EXACT(-INFINITY, PZERO), EXACT(NAN, NAN_BITS), EXACT(89.0f, PINF),
		EXACT(1000.0f, PINF), EXACT(-104.0f, PZERO), EXACT(-1000.0f, PZERO),
		NEAR(88.7f, 0x7F7A37FCu));
	CHECK(EXP2, EXACT(0.0f, ONE), EXACT(-0.0f, ONE), EXACT(INFINITY, PINF),
		EXACT(-INFINITY, PZERO), EXACT(NAN, NAN_BITS), EXACT(128.0f, PINF),
		EXACT(127.0f, 0x7F000000u), EXACT(-126.0f, 0x00800000u), EXACT(-127.0f, PZERO),
		EXACT(3.0f, 0x41000000u), EXACT(-3.0f, 0x3E000000u), NEAR(0.5f, 0x3FB504F3u));
	/* exp10 of 0 to 10 is the power of ten, exactly (each is an f32). */
	CHECK(EXP10, EXACT(0.0f, ONE), EXACT(-0.0f, ONE), EXACT(INFINITY, PINF),
		EXACT(-INFINITY, PZERO), EXACT(NAN, NAN_BITS), EXACT(39.0f, PINF),
		EXACT(1000.0f, PINF), EXACT(-46.0f, PZERO), EXACT(-1000.0f, PZERO),
		EXACT(1.0f, 0x41200000u), EXACT(2.0f, 0x42C80000u), EXACT(3.0f, 0x447A0000u),
		EXACT(4.0f, 0x461C4000u), EXACT(5.0f, 0x47C35000u), EXACT(6.0f, 0x49742400u),
		EXACT(7.0f, 0x4B189680u), EXACT(8.0f, 0x4CBEBC20u), EXACT(9.0f, 0x4E6E6B28u),
		EXACT(10.0f, 0x501502F9u), NEAR(-1.0f, 0x3DCCCCCDu), NEAR(38.0f, 0x7E967699u));
	/* expm1 keeps the sign of zero and tiny arguments whole; -1 below -18. */
	CHECK(EXPM1, EXACT(0.0f, PZERO), EXACT(-0.0f, NZERO), EXACT(INFINITY, PINF),
		EXACT(-INFINITY, 0xBF800000u), EXACT(NAN, NAN_BITS), EXACT(89.0f, PINF),
		EXACT(-20.0f, 0xBF800000u), EXACT(0x1p-30f, 0x30800000u),
		EXACT(-0x1p-30f, 0xB0800000u), NEAR(1.0f, 0x3FDBF0A9u), NEAR(-1.0f, 0xBF21D2A7u));
}

Test(vmath, special_values_of_log_and_log2)
{
	CHECK(LOG, EXACT(0.0f, NINF), EXACT(-0.0f, NINF), EXACT(INFINITY, PINF),
		EXACT(-INFINITY, NAN_BITS), EXACT(-1.0f, NAN_BITS), EXACT(NAN, NAN_BITS),
		EXACT(1.0f, PZERO), NEAR(0x1p-126f, 0xC2AEAC50u),
		NEAR(0x1.fffffep127f, 0x42B17218u), NEAR(2.0f, 0x3F317218u));
	CHECK(LOG2, EXACT(0.0f, NINF), EXACT(-0.0f, NINF), EXACT(INFINITY, PINF),
		EXACT(-2.0f, NAN_BITS), EXACT(NAN, NAN_BITS), EXACT(1.0f, PZERO),
		EXACT(8.0f, 0x40400000u), EXACT(0x1p-126f, 0xC2FC0000u),
		EXACT(0x1p127f, 0x42FE0000u), EXACT(0.5f, 0xBF800000u));
	/* log10 of a power of ten that is an f32 is its exponent, exactly. */
	CHECK(LOG10, EXACT(0.0f, NINF), EXACT(-0.0f, NINF), EXACT(INFINITY, PINF),
		EXACT(-10.0f, NAN_BITS), EXACT(NAN, NAN_BITS), EXACT(1.0f, PZERO),
		EXACT(10.0f, 0x3F800000u), EXACT(100.0f, 0x40000000u), EXACT(1000.0f, 0x40400000u),
		EXACT(1e4f, 0x40800000u), EXACT(1e5f, 0x40A00000u), EXACT(1e6f, 0x40C00000u),
		EXACT(1e7f, 0x40E00000u), EXACT(1e8f, 0x41000000u), EXACT(1e9f, 0x41100000u),
		EXACT(1e10f, 0x41200000u), NEAR(0.1f, 0xBF800000u), NEAR(2.0f, 0x3E9A209Bu));
	/* log1p: -1 -> -inf, below it NaN, zeros and tiny arguments kept. */
	CHECK(LOG1P, EXACT(0.0f, PZERO), EXACT(-0.0f, NZERO), EXACT(INFINITY, PINF),
		EXACT(-1.0f, NINF), EXACT(-2.0f, NAN_BITS), EXACT(-INFINITY, NAN_BITS),
		EXACT(NAN, NAN_BITS), EXACT(0x1p-30f, 0x30800000u), EXACT(-0x1p-30f, 0xB0800000u),
		NEAR(1.0f, 0x3F317218u), NEAR(-0.5f, 0xBF317218u));
}

/*
 * The correctly rounded variants: the special values of their functions, exact powers and
 * logarithms of powers of two, and the hardest input of each to round (docs/semantics.md §6.6),
 * all exactly (the value correctly rounded, from mpmath).
 */
Test(vmath, special_values_and_hardest_inputs_of_the_correctly_rounded_functions)
{
	CHECK(EXP_CR, EXACT(0.0f, ONE), EXACT(-0.0f, ONE), EXACT(INFINITY, PINF),
		EXACT(-INFINITY, PZERO), EXACT(NAN, NAN_BITS), EXACT(89.0f, PINF),
		EXACT(-104.0f, PZERO), EXACT(1.0f, 0x402DF854u), EXACT(88.7f, 0x7F7A37FCu),
		EXACT(0x1p-24f, 0x3F800001u), EXACT(-14.56709f, 0x34FD331Bu));
	CHECK(EXP2_CR, EXACT(0.0f, ONE), EXACT(-0.0f, ONE), EXACT(INFINITY, PINF),
		EXACT(-INFINITY, PZERO), EXACT(NAN, NAN_BITS), EXACT(128.0f, PINF),
		EXACT(127.0f, 0x7F000000u), EXACT(-126.0f, 0x00800000u), EXACT(-127.0f, PZERO),
		EXACT(-3.0f, 0x3E000000u), EXACT(0.5f, 0x3FB504F3u),
		EXACT(-6.44935085e-07f, 0x3F7FFFF8u));
	CHECK(LOG_CR, EXACT(0.0f, NINF), EXACT(-0.0f, NINF), EXACT(INFINITY, PINF),
		EXACT(-INFINITY, NAN_BITS), EXACT(-1.0f, NAN_BITS), EXACT(NAN, NAN_BITS),
		EXACT(1.0f, PZERO), EXACT(2.0f, 0x3F317218u), EXACT(0x1p-126f, 0xC2AEAC50u),
		EXACT(1.27837837e+23f, 0x4254D1F9u));
	CHECK(LOG2_CR, EXACT(0.0f, NINF), EXACT(-0.0f, NINF), EXACT(INFINITY, PINF),
		EXACT(-2.0f, NAN_BITS), EXACT(NAN, NAN_BITS), EXACT(1.0f, PZERO),
		EXACT(8.0f, 0x40400000u), EXACT(0x1p-126f, 0xC2FC0000u),
		EXACT(0x1p127f, 0x42FE0000u), EXACT(0.5f, 0xBF800000u),
		EXACT(0.3134363f, 0xBFD63DA2u));
}

/* A two-operand function at the pairs (x, z). */
struct pair_witness {
	float x, z;
	uint32_t want;
};

static void check_pairs(enum vy_binop op, const struct pair_witness *w, uint32_t n)
{
	struct vy_program *p = vy_program_create("pairs", 1, 1, 1);
	vy_program_add_buffer(p, "x", 0, VY_ACCESS_READ_ONLY, VY_TYPE_F32, n);
	vy_program_add_buffer(p, "y", 1, VY_ACCESS_WRITE_ONLY, VY_TYPE_F32, n);
	vy_program_add_buffer(p, "z", 2, VY_ACCESS_READ_ONLY, VY_TYPE_F32, n);
	struct vy_expr *i = vy_ir_var(p, "i");
	vy_program_set_entry(
		p, vy_ir_seq(p,
			   vy_ir_loop(p, "i", vy_ir_u32(p, 0), vy_ir_u32(p, n),
				   vy_ir_seq(p,
					   vy_ir_store(p, "y", i,
						   vy_ir_binary(p, op, vy_ir_load(p, "x", i),
							   vy_ir_load(p, "z", i))),
					   NULL)),
			   NULL));
	float x[32];
	uint32_t z[32];
	uint32_t y[32];
	cr_assert_leq(n, 32);
	for (uint32_t k = 0; k < n; k++) {
		x[k] = w[k].x;
		z[k] = f32_bits(w[k].z);
	}
	run_reference(p, x, z, n, y);
	for (uint32_t k = 0; k < n; k++) {
		cr_expect_eq(y[k], w[k].want, "%s(%g, %g) = %.9g (0x%08X), expected %.9g (0x%08X)",
			vy_binop_name(op), (double)w[k].x, (double)w[k].z, (double)bits_f32(y[k]),
			y[k], (double)bits_f32(w[k].want), w[k].want);
	}
	vy_program_destroy(p);
}

Test(vmath, special_values_of_hypot)
{
	/* Annex F: an infinity wins over a NaN; signs and order never matter; no overflow or
	 * underflow on the way; a zero operand gives the other's magnitude exactly. */
	static const struct pair_witness w[] = {{INFINITY, NAN, PINF}, {NAN, -INFINITY, PINF},
		{NAN, 1.0f, NAN_BITS}, {2.0f, NAN, NAN_BITS}, {0.0f, -0.0f, PZERO},
		{-0.0f, -0.0f, PZERO}, {-3.0f, 0.0f, 0x40400000u}, {-0.0f, -1e-30f, 0x0DA24260u},
		{3.0f, -4.0f, 0x40A00000u}, {-4.0f, 3.0f, 0x40A00000u}, {5.0f, 12.0f, 0x41500000u},
		{3e38f, 3e38f, PINF}, {2e38f, 1e38f, 0x7F28391Au}, {3e-38f, 4e-38f, 0x01881CEAu},
		{1e-45f, 0x1p-126f, 0x00800000u}, {1.0f, 0x1p-12f, 0x3F800000u},
		{0x1p-70f, 0x1p-70f, 0x1CB504F3u}, {0x1p100f, 1.0f, 0x71800000u}};
	check_pairs(VY_BIN_HYPOT, w, sizeof(w) / sizeof(w[0]));
}

Test(vmath, special_values_of_atan2)
{
	/* atan2(y, x), C99 Annex F: the sign of y on every result; a zero y gives +-0 or +-pi by
	 * the sign bit of x; infinities give the multiples of pi/4; NaN stays NaN. */
	static const struct pair_witness w[] = {{0.0f, 1.0f, PZERO}, {-0.0f, 1.0f, NZERO},
		{0.0f, -1.0f, PI}, {-0.0f, -1.0f, 0xC0490FDBu}, {0.0f, 0.0f, PZERO},
		{-0.0f, 0.0f, NZERO}, {0.0f, -0.0f, PI}, {-0.0f, -0.0f, 0xC0490FDBu},
		{1.0f, 0.0f, PIO2}, {-1.0f, -0.0f, 0xBFC90FDBu}, {INFINITY, INFINITY, PIO4},
		{INFINITY, -INFINITY, 0x4016CBE4u}, {-INFINITY, -INFINITY, 0xC016CBE4u},
		{1.0f, INFINITY, PZERO}, {-1.0f, INFINITY, NZERO}, {1.0f, -INFINITY, PI},
		{-1.0f, -INFINITY, 0xC0490FDBu}, {INFINITY, 5.0f, PIO2},
		{-INFINITY, -5.0f, 0xBFC90FDBu}, {NAN, 1.0f, NAN_BITS}, {1.0f, NAN, NAN_BITS},
		{INFINITY, NAN, NAN_BITS}, {1.0f, 1.0f, PIO4}, {-1.0f, -1.0f, 0xC016CBE4u},
		{1e-45f, -1.0f, PI}, {3.40282347e38f, 3.40282347e38f, PIO4},
		{1.0f, 3.40282347e38f, PZERO}, {-3.40282347e38f, 1.0f, 0xBFC90FDBu}};
	check_pairs(VY_BIN_ATAN2, w, sizeof(w) / sizeof(w[0]));
}

Test(vmath, special_values_of_pow)
{
	/* C99 Annex F: pow(x, +-0) = 1 and pow(1, y) = 1 even for NaN; a negative base takes an
	 * integer power only, signed by its parity; zeros and infinities by the sign of y. */
	static const struct pair_witness w[] = {{NAN, 0.0f, ONE}, {NAN, -0.0f, ONE},
		{1.0f, NAN, ONE}, {1.0f, INFINITY, ONE}, {-1.0f, INFINITY, ONE},
		{-1.0f, -INFINITY, ONE}, {NAN, 1.0f, NAN_BITS}, {2.0f, NAN, NAN_BITS},
		{-2.0f, 0.5f, NAN_BITS}, {-2.0f, 3.0f, 0xC1000000u}, {-2.0f, -2.0f, 0x3E800000u},
		{0.0f, -3.0f, PINF}, {-0.0f, -3.0f, NINF}, {-0.0f, -2.0f, PINF},
		{-0.0f, -1.5f, PINF}, {-0.0f, 3.0f, NZERO}, {-0.0f, 1.5f, PZERO},
		{0.0f, -INFINITY, PINF}, {0.5f, INFINITY, PZERO}, {0.5f, -INFINITY, PINF},
		{2.0f, INFINITY, PINF}, {-2.0f, -INFINITY, PZERO}, {-INFINITY, -3.0f, NZERO},
		{-INFINITY, -2.0f, PZERO}, {-INFINITY, 3.0f, NINF}, {INFINITY, -0.5f, PZERO},
		{4.0f, 0.5f, 0x40000000u}, {2.0f, 127.0f, 0x7F000000u}, {2.0f, 128.0f, PINF},
		{2.0f, -126.0f, 0x00800000u}, {2.0f, -127.0f, PZERO},
		{-8.0f, 16777217.0f, 0x7F800000u}};
	check_pairs(VY_BIN_POW, w, sizeof(w) / sizeof(w[0]));
}

Test(vmath, special_values_of_cbrt)
{
	/* Signed zeros and infinities kept, subnormal operands read as zero, exact cubes exact,
	 * odd to the bit. */
	CHECK(CBRT, EXACT(0.0f, PZERO), EXACT(-0.0f, NZERO), EXACT(INFINITY, PINF),
		EXACT(-INFINITY, NINF), EXACT(NAN, NAN_BITS), EXACT(1e-45f, PZERO),
		EXACT(-1e-45f, NZERO), EXACT(8.0f, 0x40000000u), EXACT(-27.0f, 0xC0400000u),
		EXACT(0.125f, 0x3F000000u), EXACT(1000.0f, 0x41200000u),
		EXACT(0x1p-126f, 0x2A800000u), EXACT(0x1p126f, 0x54800000u),
		EXACT(2.0f, 0x3FA14518u), EXACT(-2.0f, 0xBFA14518u),
		NEAR(3.40282347e38f, 0x54CB2FF5u));
}

Test(vmath, special_values_of_sin_cos_tan)
{
	CHECK(SIN, EXACT(0.0f, PZERO), EXACT(-0.0f, NZERO), EXACT(INFINITY, NAN_BITS),
		EXACT(-INFINITY, NAN_BITS), EXACT(NAN, NAN_BITS), EXACT(0x1p-20f, 0x35800000u),
		EXACT(-0x1p-20f, 0xB5800000u));
	CHECK(COS, EXACT(0.0f, ONE), EXACT(-0.0f, ONE), EXACT(INFINITY, NAN_BITS),
		EXACT(-INFINITY, NAN_BITS), EXACT(NAN, NAN_BITS), EXACT(0x1p-20f, ONE));
	CHECK(TAN, EXACT(0.0f, PZERO), EXACT(-0.0f, NZERO), EXACT(INFINITY, NAN_BITS),
		EXACT(-INFINITY, NAN_BITS), EXACT(NAN, NAN_BITS), EXACT(0x1p-20f, 0x35800000u),
		EXACT(-0x1p-20f, 0xB5800000u));
}

Test(vmath, sin_and_cos_stay_within_one_everywhere)
{
	static const float big[] = {3.4e38f, -1e30f, 1e10f, -7e9f, 2.5e9f, 1.5707964f, 1e6f};
	uint32_t n = sizeof(big) / sizeof(big[0]);
	for (int f = 0; f < 2; f++) {
		struct vy_program *p = program_xyc(n);
		struct vy_node *nodes[8];
		for (uint32_t i = 0; i < n; i++) {
			nodes[i] = vy_ir_store(p, "y", vy_ir_u32(p, i),
				vy_ir_unary(p, f ? VY_UN_COS : VY_UN_SIN, load_x(p, i)));
		}
		vy_program_set_entry(p, vy_ir_seqv(p, nodes, n));
		float x[8];
		uint32_t c[8] = {0};
		uint32_t y[8];
		for (uint32_t i = 0; i < n; i++) {
			x[i] = big[i];
		}
		run_reference(p, x, c, n, y);
		for (uint32_t i = 0; i < n; i++) {
			float v = bits_f32(y[i]);
			cr_assert(v >= -1.0f && v <= 1.0f, "%s(%g) = %g", f ? "cos" : "sin",
				(double)x[i], (double)v);
		}
		vy_program_destroy(p);
	}
}

/* One result of sin, cos or tan at a large argument, within 2 ULP of the true value. */
#define CLOSE(x, bits)                                                                             \
	{                                                                                          \
		(x), (bits), 2                                                                     \
	}

Test(vmath, sin_cos_tan_of_large_arguments_reduce_exactly)
{
	/* The wanted bits are glibc's double sin, cos and tan (whose reduction is exact) rounded to
	 * f32; before the Payne-Hanek reduction sin(1e10) was 1.0 and cos(FLT_MAX) 1. */
	const float max = 0x1.fffffep127f;
	CHECK(SIN, CLOSE(1e10f, 0xBEF99A64u), CLOSE(max, 0xBF0599B3u), CLOSE(-max, 0x3F0599B3u),
		CLOSE(0x1p100f, 0xBF5F476Du));
	CHECK(COS, CLOSE(1e10f, 0x3F5F84C5u), CLOSE(max, 0x3F5A5F96u), CLOSE(-max, 0x3F5A5F96u),
		CLOSE(0x1p100f, 0x3EFA75A0u));
	CHECK(TAN, CLOSE(1e10f, 0xBF0EF000u), CLOSE(max, 0xBF1C9ECAu), CLOSE(-max, 0x3F1C9ECAu));
}

static struct vy_expr *unary_of_x(struct vy_program *p, enum vy_unop op, bool negate)
{
	struct vy_expr *x = vy_ir_load(p, "x", vy_ir_var(p, "i"));
	return vy_ir_unary(p, op, negate ? vy_ir_unary(p, VY_UN_NEG, x) : x);
}

/* f(-x) differs from f(x) (`odd`: from -f(x)) in any bit. */
static struct vy_expr *asymmetric(struct vy_program *p, enum vy_unop op, bool odd)
{
	struct vy_expr *plus = unary_of_x(p, op, false);
	return vy_ir_binary(p, VY_BIN_NE, unary_of_x(p, op, true),
		odd ? vy_ir_unary(p, VY_UN_NEG, plus) : plus);
}

/* Run `any` (true where f(-x) is not +-f(x) to the bit) over x[0..n) on the reference and
 * expect it false everywhere; `what` names the symmetry in the message. */
static void expect_symmetric(
	struct vy_program *p, struct vy_expr *any, const float *x, uint32_t n, const char *what)
{
	vy_program_set_entry(
		p, vy_ir_seq(p,
			   vy_ir_loop(p, "i", vy_ir_u32(p, 0), vy_ir_u32(p, n),
				   vy_ir_seq(p,
					   vy_ir_store(p, "y", vy_ir_var(p, "i"),
						   vy_ir_select(p, any, vy_ir_f32(p, 1.0f),
							   vy_ir_f32(p, 0.0f))),
					   NULL)),
			   NULL));
	uint32_t c[32] = {0};
	uint32_t y[32];
	cr_assert_leq(n, 32);
	run_reference(p, x, c, n, y);
	for (uint32_t i = 0; i < n; i++) {
		cr_expect_eq(
			y[i], 0, "%s does not hold to the bit at x = %.9g", what, (double)x[i]);
	}
	vy_program_destroy(p);
}

Test(vmath, cos_is_even_and_sin_and_tan_odd_to_the_bit)
{
	enum { N = 32 };
	struct vy_program *p = program_xyc(N);
	struct vy_expr *any = vy_ir_binary(p, VY_BIN_OR, asymmetric(p, VY_UN_SIN, true),
		vy_ir_binary(p, VY_BIN_OR, asymmetric(p, VY_UN_COS, false),
			asymmetric(p, VY_UN_TAN, true)));
	/* Magnitudes from 2^-20 to 2^127, both reductions and their border at 2^12. */
	float x[N];
	for (uint32_t i = 0; i < N; i++) {
		x[i] = ldexpf(1.2345678f + (float)i / 64.0f, -20 + (int)(i * 147 / (N - 1)));
	}
	x[0] = 4096.0f;
	x[1] = 4095.9998f;
	expect_symmetric(p, any, x, N, "f(-x) = +-f(x)");
}

Test(vmath, special_values_of_erf_and_erfc)
{
	/* C99 Annex F's special values; subnormal operands read as signed zeros; results just
	 * past each threshold of the expansion (the series below 0.25, the pieces of erfcx from
	 * 0.25, 0.75 and 1.625, its asymptotic form from 3, the clamp at 9.25) correctly rounded,
	 * the wanted bits from mpmath at 50 digits; erfc flushes what falls below 2^-126. */
	CHECK(ERF, EXACT(0.0f, PZERO), EXACT(-0.0f, NZERO), EXACT(INFINITY, ONE),
		EXACT(-INFINITY, ONE | 0x80000000u), EXACT(NAN, NAN_BITS), EXACT(1e-45f, PZERO),
		EXACT(-1e-45f, NZERO), EXACT(0x1p-126f, 0x00906EBBu), EXACT(1e-10f, 0x2EF8221Au),
		EXACT(-0.125f, 0xBE0FAF0Du), EXACT(0x1.fffffep-3f, 0x3E8D7AA7u),
		EXACT(0.25f, 0x3E8D7AA7u), EXACT(0.5f, 0x3F053F7Bu), EXACT(0.75f, 0x3F360E4Cu),
		EXACT(1.0f, 0x3F57BB3Du), EXACT(1.625f, 0x3F7A7B4Au), EXACT(2.0f, 0x3F7ECD71u),
		EXACT(-1.5f, 0xBF7752ABu), EXACT(3.0f, 0x3F7FFE8Du), EXACT(3.5f, 0x3F7FFFF4u),
		EXACT(3.9f, 0x3F7FFFFFu), EXACT(4.0f, ONE), EXACT(9.5f, ONE),
		EXACT(-1e30f, ONE | 0x80000000u));
	CHECK(ERFC, EXACT(0.0f, ONE), EXACT(-0.0f, ONE), EXACT(INFINITY, PZERO),
		EXACT(-INFINITY, 0x40000000u), EXACT(NAN, NAN_BITS), EXACT(1e-45f, ONE),
		EXACT(0x1p-126f, ONE), EXACT(1e-8f, ONE), EXACT(0.1f, 0x3F6335A1u),
		EXACT(0x1.fffffep-3f, 0x3F3942ADu), EXACT(0.25f, 0x3F3942ACu),
		EXACT(-0.25f, 0x3FA35EAAu), EXACT(0.5f, 0x3EF5810Au), EXACT(0.75f, 0x3E93E369u),
		EXACT(1.0f, 0x3E21130Bu), EXACT(-1.0f, 0x3FEBDD9Fu), EXACT(1.625f, 0x3CB096C5u),
		EXACT(2.0f, 0x3B9947AFu), EXACT(3.0f, 0x37B94EFBu), EXACT(5.0f, 0x2BD860D4u),
		EXACT(9.0f, 0x030CC6A1u), EXACT(9.19f, 0x008B3C4Au), EXACT(9.25f, PZERO),
		EXACT(10.0f, PZERO), EXACT(3e38f, PZERO), EXACT(-3.9f, 0x40000000u),
		EXACT(-5.0f, 0x40000000u));
}

Test(vmath, erf_is_odd_to_the_bit)
{
	enum { N = 32 };
	struct vy_program *p = program_xyc(N);
	/* Magnitudes from 2^-126 to 2^4, every path of the expansion. */
	float x[N];
	for (uint32_t i = 0; i < N; i++) {
		x[i] = ldexpf(1.2345678f + (float)i / 64.0f, -126 + (int)(i * 130 / (N - 1)));
	}
	x[0] = 0.25f;
	x[1] = 3.0f;
	x[2] = 0.0f;
	expect_symmetric(p, asymmetric(p, VY_UN_ERF, true), x, N, "erf(-x) = -erf(x)");
}

Test(vmath, special_values_of_asin_acos_atan)
{
	CHECK(ASIN, EXACT(0.0f, PZERO), EXACT(-0.0f, NZERO), EXACT(1.0f, PIO2),
		EXACT(-1.0f, PIO2 | 0x80000000u), EXACT(1.0000001f, NAN_BITS),
		EXACT(-2.0f, NAN_BITS), EXACT(INFINITY, NAN_BITS), EXACT(NAN, NAN_BITS),
		NEAR(0.5f, 0x3F060A92u));
	CHECK(ACOS, EXACT(1.0f, PZERO), EXACT(-1.0f, PI), EXACT(0.0f, PIO2), EXACT(-0.0f, PIO2),
		EXACT(1.5f, NAN_BITS), EXACT(-INFINITY, NAN_BITS), EXACT(NAN, NAN_BITS),
		NEAR(0.5f, 0x3F860A92u));
	CHECK(ATAN, EXACT(0.0f, PZERO), EXACT(-0.0f, NZERO), EXACT(INFINITY, PIO2),
		EXACT(-INFINITY, PIO2 | 0x80000000u), EXACT(NAN, NAN_BITS), EXACT(1.0f, PIO4),
		EXACT(-1.0f, PIO4 | 0x80000000u), EXACT(3e38f, PIO2));
}

Test(vmath, special_values_of_sinh_cosh_tanh)
{
	CHECK(SINH, EXACT(0.0f, PZERO), EXACT(-0.0f, NZERO), EXACT(INFINITY, PINF),
		EXACT(-INFINITY, NINF), EXACT(NAN, NAN_BITS), EXACT(89.5f, PINF),
		EXACT(-100.0f, NINF), NEAR(89.0f, 0x7F28E166u));
	CHECK(COSH, EXACT(0.0f, ONE), EXACT(-0.0f, ONE), EXACT(INFINITY, PINF),
		EXACT(-INFINITY, PINF), EXACT(NAN, NAN_BITS), EXACT(-89.5f, PINF),
		NEAR(-89.0f, 0x7F28E166u));
	CHECK(TANH, EXACT(0.0f, PZERO), EXACT(-0.0f, NZERO), EXACT(INFINITY, ONE),
		EXACT(-INFINITY, ONE | 0x80000000u), EXACT(NAN, NAN_BITS), EXACT(20.0f, ONE),
		EXACT(-9.5f, ONE | 0x80000000u), EXACT(0x1p-20f, 0x35800000u));
}

/* The ifs the lowering inserted: those with a name (a written if has none). */
static uint32_t inserted_ifs(const struct vy_block *b)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < b->len; i++) {
		const struct vy_node *n = b->items[i];
		k += n->kind == VY_NODE_IF && n->name != NULL;
		k += inserted_ifs(&n->body) + inserted_ifs(&n->orelse);
	}
	return k;
}

/* y[0] = sin(x[0]) under `depth` written ifs (each always taken). */
static struct vy_program *sin_nested(uint32_t depth)
{
	struct vy_program *p = program_xyc(1);
	struct vy_block body = vy_ir_seq(p,
		vy_ir_store(p, "y", vy_ir_u32(p, 0), vy_ir_unary(p, VY_UN_SIN, load_x(p, 0))),
		NULL);
	for (uint32_t d = 0; d < depth; d++) {
		body = vy_ir_seq(
			p, vy_ir_if(p, vy_ir_bool(p, true), body, vy_ir_seqv(p, NULL, 0)), NULL);
	}
	vy_program_set_entry(p, body);
	return p;
}

/* sin's large reduction runs in a branch that the lowering inserts; at the deepest nesting a
 * program may have there is no room for it, and the reduction runs for every operand instead,
 * with the same results. */
Test(vmath, a_branch_of_the_lowering_at_the_nesting_limit_becomes_selects)
{
	/* the deepest: sin's statement at level 64 */
	struct vy_program *deep = sin_nested(VY_IR_MAX_NESTING - 1);
	must_validate(deep);
	struct vy_program *shallow = sin_nested(0);
	must_validate(shallow);
	static const float xs[] = {1e10f, 3.0f, -5000.0f, 4096.0f};
	for (size_t i = 0; i < sizeof(xs) / sizeof(xs[0]); i++) {
		uint32_t c = 0;
		uint32_t got = 0;
		uint32_t want = 0;
		run_reference(deep, &xs[i], &c, 1, &got);
		run_reference(shallow, &xs[i], &c, 1, &want);
		cr_assert_eq(got, want, "sin(%g): %a at the limit, %a at the top", (double)xs[i],
			(double)bits_f32(got), (double)bits_f32(want));
	}
	must_lower(deep);
	must_validate(deep);
	cr_assert_eq(inserted_ifs(&deep->entry), 0);
	must_lower(shallow);
	cr_assert_eq(inserted_ifs(&shallow->entry), 1);
	/* one level up there is room: the branch stays, and the program validates */
	struct vy_program *room = sin_nested(VY_IR_MAX_NESTING - 2);
	must_validate(room);
	must_lower(room);
	must_validate(room);
	cr_assert_eq(inserted_ifs(&room->entry), 1);
	vy_program_destroy(deep);
	vy_program_destroy(shallow);
	vy_program_destroy(room);
}
