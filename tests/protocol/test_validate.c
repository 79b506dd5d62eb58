/* The IR validator: typing, scopes, access rules, limits, barrier uniformity and capability gates.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "ir.h"
#include "validate.h"

#define T_U (1u << VY_TYPE_U32)
#define T_I (1u << VY_TYPE_I32)
#define T_F (1u << VY_TYPE_F32)
#define T_B (1u << VY_TYPE_BOOL)
#define T_UIF (T_U | T_I | T_F)

static struct vy_err_list errs;

static void setup(void)
{
	vy_err_list_init(&errs);
}

static void teardown(void)
{
	vy_err_list_finish(&errs);
}

TestSuite(validate, .init = setup, .fini = teardown);

/* in: read_only u32, out: read_write u32, fo: read_write f32, io: read_write i32, wo: write_only
 * i32, uni: uniform u32, sh: workgroup u32[64], bo: read_write bool. */
static struct vy_program *base(void)
{
	struct vy_program *p = vy_program_create("t", 64, 1, 1);
	vy_program_add_buffer(p, "in", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 0);
	vy_program_add_buffer(p, "out", 1, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 0);
	vy_program_add_buffer(p, "fo", 2, VY_ACCESS_READ_WRITE, VY_TYPE_F32, 0);
	vy_program_add_buffer(p, "io", 3, VY_ACCESS_READ_WRITE, VY_TYPE_I32, 0);
	vy_program_add_buffer(p, "wo", 4, VY_ACCESS_WRITE_ONLY, VY_TYPE_I32, 8);
	vy_program_add_buffer(p, "uni", 5, VY_ACCESS_UNIFORM, VY_TYPE_U32, 4);
	vy_program_add_buffer(p, "sh", 0, VY_ACCESS_WORKGROUP, VY_TYPE_U32, 64);
	vy_program_add_buffer(p, "bo", 6, VY_ACCESS_READ_WRITE, VY_TYPE_BOOL, 0);
	return p;
}

static const char *dump(void)
{
	static char buf[8192];
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < errs.len && used < sizeof(buf); i++) {
		char line[1024];
		vy_err_format(&errs.items[i], line, sizeof(line));
		int n = snprintf(buf + used, sizeof(buf) - used, "\n  %s", line);
		used += n > 0 ? (size_t)n : 0;
	}
	return buf;
}

/* Validate and expect exactly one error with this code, location and fix fragment. */
static void expect_one(
	struct vy_program *p, const struct vy_caps *caps, int code, const char *at, const char *fix)
{
	int rc = vy_validate(p, caps, &errs);
	cr_assert_eq(errs.len, 1, "expected one error at %s, got %zu:%s", at, errs.len, dump());
	cr_assert_eq(rc, code, "rc %d:%s", rc, dump());
	cr_assert_eq(errs.items[0].code, code, "%s", dump());
	cr_assert_str_eq(errs.items[0].at, at, "%s", dump());
	cr_assert(
		strstr(errs.items[0].fix, fix), "fix \"%s\" lacks \"%s\"", errs.items[0].fix, fix);
	cr_assert(errs.items[0].message[0]);
	vy_program_destroy(p);
}

static void expect_valid(struct vy_program *p, const struct vy_caps *caps)
{
	int rc = vy_validate(p, caps, &errs);
	cr_assert_eq(rc, 0, "expected a valid program:%s", dump());
	cr_assert_eq(errs.len, 0);
	vy_program_destroy(p);
}

static struct vy_expr *lit(struct vy_program *p, enum vy_type t)
{
	return vy_ir_lit(p, t, t == VY_TYPE_F32 ? 0x3f800000u : 1u);
}

/* entry = [node] */
static struct vy_program *one(struct vy_program *p, struct vy_node *n)
{
	vy_program_set_entry(p, vy_ir_seq(p, n, NULL));
	return p;
}

static struct vy_program *store_out(struct vy_expr *(*make)(struct vy_program *))
{
	struct vy_program *p = base();
	return one(p, vy_ir_store(p, "out", vy_ir_u32(p, 0), make(p)));
}

/* Independent statement of the operand rules of DESIGN.md §3 and §4.1. */
struct rule {
	unsigned types;
	bool gives_bool;
	bool count;
	bool gives_u32; /* abs_diff: a u32 whatever the operand type */
};

static const struct rule bin_spec[VY_BINOP_COUNT] = {
	[VY_BIN_ADD] = {T_UIF, false, false},
	[VY_BIN_SUB] = {T_UIF, false, false},
	[VY_BIN_MUL] = {T_UIF, false, false},
	[VY_BIN_DIV] = {T_UIF, false, false},
	[VY_BIN_MOD] = {T_U | T_I | T_F, false, false},
	[VY_BIN_MIN] = {T_UIF, false, false},
	[VY_BIN_MAX] = {T_UIF, false, false},
	[VY_BIN_BIT_AND] = {T_U | T_I, false, false},
	[VY_BIN_BIT_OR] = {T_U | T_I, false, false},
	[VY_BIN_BIT_XOR] = {T_U | T_I, false, false},
	[VY_BIN_SHL] = {T_U | T_I, false, true},
	[VY_BIN_SHR] = {T_U | T_I, false, true},
	[VY_BIN_ROTL] = {T_U | T_I, false, true},
	[VY_BIN_ROTR] = {T_U | T_I, false, true},
	[VY_BIN_EQ] = {T_UIF | T_B, true, false},
	[VY_BIN_NE] = {T_UIF | T_B, true, false},
	[VY_BIN_LT] = {T_UIF, true, false},
	[VY_BIN_LE] = {T_UIF, true, false},
	[VY_BIN_GT] = {T_UIF, true, false},
	[VY_BIN_GE] = {T_UIF, true, false},
	[VY_BIN_AND] = {T_U | T_I | T_B, false, false},
	[VY_BIN_OR] = {T_U | T_I | T_B, false, false},
	[VY_BIN_ABS_DIFF] = {T_U | T_I, false, false, true},
	[VY_BIN_SAT_ADD] = {T_U | T_I, false, false},
	[VY_BIN_SAT_SUB] = {T_U | T_I, false, false},
	[VY_BIN_SAT_MUL] = {T_U, false, false},
	[VY_BIN_MUL_HIGH] = {T_U | T_I, false, false},
	[VY_BIN_HYPOT] = {T_F, false, false},
	[VY_BIN_ATAN2] = {T_F, false, false},
	[VY_BIN_POW] = {T_F, false, false},
};

static const struct rule un_spec[VY_UNOP_COUNT] = {
	[VY_UN_NEG] = {T_UIF, false, false},
	[VY_UN_BIT_NOT] = {T_U | T_I, false, false},
	[VY_UN_NOT] = {T_U | T_I | T_B, false, false},
	[VY_UN_POPCOUNT] = {T_U | T_I, false, false},
	[VY_UN_CLZ] = {T_U | T_I, false, false},
	[VY_UN_CTZ] = {T_U | T_I, false, false},
	[VY_UN_REVERSE_BITS] = {T_U | T_I, false, false},
	[VY_UN_ABS] = {T_I | T_F, false, false},
	[VY_UN_SIGN] = {T_I | T_F, false, false},
	[VY_UN_FLOOR] = {T_F, false, false},
	[VY_UN_CEIL] = {T_F, false, false},
	[VY_UN_ROUND] = {T_F, false, false},
	[VY_UN_TRUNC] = {T_F, false, false},
	[VY_UN_SQRT] = {T_F, false, false},
	[VY_UN_INVERSE_SQRT] = {T_F, false, false},
	[VY_UN_RECIPROCAL] = {T_F, false, false},
	[VY_UN_EXP] = {T_F, false, false},
	[VY_UN_EXP2] = {T_F, false, false},
	[VY_UN_LOG] = {T_F, false, false},
	[VY_UN_LOG2] = {T_F, false, false},
	[VY_UN_LOG10] = {T_F, false, false},
	[VY_UN_EXP10] = {T_F, false, false},
	[VY_UN_EXPM1] = {T_F, false, false},
	[VY_UN_LOG1P] = {T_F, false, false},
	[VY_UN_CBRT] = {T_F, false, false},
	[VY_UN_SIN] = {T_F, false, false},
	[VY_UN_COS] = {T_F, false, false},
	[VY_UN_TAN] = {T_F, false, false},
	[VY_UN_ASIN] = {T_F, false, false},
	[VY_UN_ACOS] = {T_F, false, false},
	[VY_UN_ATAN] = {T_F, false, false},
	[VY_UN_SINH] = {T_F, false, false},
	[VY_UN_COSH] = {T_F, false, false},
	[VY_UN_TANH] = {T_F, false, false},
	[VY_UN_ERF] = {T_F, false, false},
	[VY_UN_ERFC] = {T_F, false, false},
	[VY_UN_IS_NAN] = {T_F, true, false},
	[VY_UN_IS_INF] = {T_F, true, false},
	[VY_UN_IS_FINITE] = {T_F, true, false},
	[VY_UN_UNPACK4_LOW] = {T_U, false, false},
	[VY_UN_UNPACK4_HIGH] = {T_U, false, false},
	[VY_UN_UNPACK8_LOW] = {T_U, false, false},
	[VY_UN_UNPACK8_HIGH] = {T_U, false, false},
	[VY_UN_EXP_CR] = {T_F, false, false},
	[VY_UN_EXP2_CR] = {T_F, false, false},
	[VY_UN_LOG_CR] = {T_F, false, false},
	[VY_UN_LOG2_CR] = {T_F, false, false},
};

struct typed {
	struct vy_expr *e;
	enum vy_type want;
};

struct census {
	size_t exprs;
	size_t untyped;
	uint32_t expr_kinds; /* bit per enum vy_expr_kind seen */
	uint32_t node_kinds; /* bit per enum vy_node_kind seen */
};

static void census_expr(const struct vy_expr *e, struct census *c)
{
	if (!e) {
		return;
	}
	c->exprs++;
	c->untyped += e->type >= VY_TYPE_COUNT ? 1 : 0;
	c->expr_kinds |= 1u << e->kind;
	for (unsigned i = 0; i < 3; i++) {
		census_expr(e->args[i], c);
	}
}

static void census_block(const struct vy_block *b, struct census *c)
{
	for (uint32_t i = 0; i < b->len; i++) {
		const struct vy_node *node = b->items[i];
		c->node_kinds |= 1u << node->kind;
		census_expr(node->args[0], c);
		census_expr(node->args[1], c);
		census_block(&node->body, c);
		census_block(&node->orelse, c);
	}
}

Test(validate, valid_program_with_every_node_and_expression_types_every_expression)
{
	struct vy_program *p = base();
	struct vy_buffer *hinted = &p->buffers[1];
	hinted->has_hints = true;
	hinted->hints.alignment = 64;
	hinted->hints.coalesce_axis = 0;
	hinted->hints.locality = VY_LOCALITY_STREAMING;
	hinted->output = true;
	hinted->count = 64;

	struct vy_node *nodes[1024];
	struct typed checks[1024];
	uint32_t n = 0, nc = 0;
	char name[32];

	for (unsigned op = 0; op < VY_BINOP_COUNT; op++) {
		for (unsigned t = 0; t < VY_TYPE_COUNT; t++) {
			if (!(bin_spec[op].types & (1u << t))) {
				continue;
			}
			struct vy_expr *b = bin_spec[op].count ? vy_ir_u32(p, 3) : lit(p, t);
			struct vy_expr *e = vy_ir_binary(p, op, lit(p, t), b);
			snprintf(name, sizeof(name), "b%u_%u", op, t);
			nodes[n++] = vy_ir_let(p, name, e);
			enum vy_type want = bin_spec[op].gives_u32 ? VY_TYPE_U32 : (enum vy_type)t;
			checks[nc++] =
				(struct typed){e, bin_spec[op].gives_bool ? VY_TYPE_BOOL : want};
		}
	}
	for (unsigned op = 0; op < VY_UNOP_COUNT; op++) {
		for (unsigned t = 0; t < VY_TYPE_COUNT; t++) {
			if (!(un_spec[op].types & (1u << t))) {
				continue;
			}
			struct vy_expr *e = vy_ir_unary(p, op, lit(p, t));
			snprintf(name, sizeof(name), "u%u_%u", op, t);
			nodes[n++] = vy_ir_let(p, name, e);
			checks[nc++] = (struct typed){
				e, un_spec[op].gives_bool ? VY_TYPE_BOOL : (enum vy_type)t};
		}
	}
	for (unsigned to = 0; to < VY_TYPE_COUNT; to++) {
		for (unsigned from = 0; from < VY_TYPE_COUNT; from++) {
			snprintf(name, sizeof(name), "c%u_%u", to, from);
			nodes[n++] = vy_ir_let(p, name, vy_ir_cast(p, to, lit(p, from)));
		}
	}
	for (unsigned to = 0; to < VY_TYPE_COUNT; to++) {
		for (unsigned from = 0; from < VY_TYPE_COUNT; from++) {
			if (to == VY_TYPE_BOOL || from == VY_TYPE_BOOL) {
				continue;
			}
			struct vy_expr *e = vy_ir_bitcast(p, to, lit(p, from));
			snprintf(name, sizeof(name), "bc%u_%u", to, from);
			nodes[n++] = vy_ir_let(p, name, e);
			checks[nc++] = (struct typed){e, (enum vy_type)to};
		}
	}
	for (unsigned op = 0; op < VY_ATOMIC_COMPARE_EXCHANGE; op++) {
		struct vy_expr *e = vy_ir_atomic(p, op, "out", vy_ir_gid(p, 0), vy_ir_u32(p, op));
		snprintf(name, sizeof(name), "a%u", op);
		nodes[n++] = vy_ir_let(p, name, e);
		checks[nc++] = (struct typed){e, VY_TYPE_U32};
	}
	struct vy_expr *cas =
		vy_ir_atomic_cas(p, "out", vy_ir_u32(p, 0), vy_ir_u32(p, 1), vy_ir_u32(p, 2));
	nodes[n++] = vy_ir_let(p, "cas", cas);
	checks[nc++] = (struct typed){cas, VY_TYPE_U32};
	for (unsigned op = 0; op < VY_REDUCE_COUNT; op++) {
		unsigned types = op <= VY_REDUCE_MAX ? T_UIF : (T_U | T_I);
		for (unsigned t = 0; t < VY_TYPE_COUNT; t++) {
			if (types & (1u << t)) {
				struct vy_expr *e = vy_ir_subgroup_reduce(p, op, lit(p, t));
				snprintf(name, sizeof(name), "r%u_%u", op, t);
				nodes[n++] = vy_ir_let(p, name, e);
				checks[nc++] = (struct typed){e, (enum vy_type)t};
			}
		}
	}
	struct vy_expr *shuf =
		vy_ir_subgroup_shuffle(p, vy_ir_f32(p, 2.0f), vy_ir_subgroup_lane(p));
	struct vy_expr *ballot = vy_ir_subgroup_ballot(p, vy_ir_bool(p, true));
	struct vy_expr *ballot_u = vy_ir_subgroup_ballot(p, vy_ir_u32(p, 1));
	struct vy_expr *size = vy_ir_subgroup_size(p);
	struct vy_expr *fma =
		vy_ir_fma(p, vy_ir_f32(p, 1.0f), vy_ir_f32(p, 2.0f), vy_ir_f32(p, 3.0f));
	struct vy_expr *sel = vy_ir_select(p, vy_ir_u32(p, 1), vy_ir_i32(p, -1), vy_ir_i32(p, 2));
	struct vy_expr *selb =
		vy_ir_select(p, vy_ir_bool(p, false), vy_ir_bool(p, true), vy_ir_bool(p, false));
	struct vy_expr *ld = vy_ir_load(p, "fo", vy_ir_gid(p, 0));
	struct vy_expr *ldb = vy_ir_load(p, "bo", vy_ir_lid(p, 1));
	struct vy_expr *lnw = vy_ir_len(p, "sh");
	struct vy_expr *spec = vy_ir_spec(p, "scale", VY_TYPE_F32, 0x40000000u);
	struct vy_expr *spec2 = vy_ir_spec(p, "scale", VY_TYPE_F32, 0x40000000u);
	struct vy_expr *var = vy_ir_var(p, "b0_0");
	struct vy_expr *wg = vy_ir_wgid(p, 2);
	struct typed more[] = {{shuf, VY_TYPE_F32}, {ballot, VY_TYPE_U32}, {ballot_u, VY_TYPE_U32},
		{size, VY_TYPE_U32}, {fma, VY_TYPE_F32}, {sel, VY_TYPE_I32}, {selb, VY_TYPE_BOOL},
		{ld, VY_TYPE_F32}, {ldb, VY_TYPE_BOOL}, {lnw, VY_TYPE_U32}, {spec, VY_TYPE_F32},
		{var, VY_TYPE_U32}, {wg, VY_TYPE_U32}};
	nodes[n++] = vy_ir_let(p, "shuf", shuf);
	nodes[n++] = vy_ir_let(p, "ballot", ballot);
	nodes[n++] = vy_ir_let(p, "ballot_u", ballot_u);
	nodes[n++] = vy_ir_let(p, "size", size);
	nodes[n++] = vy_ir_store(p, "fo", vy_ir_u32(p, 0), fma);
	nodes[n++] = vy_ir_store(p, "io", vy_ir_u32(p, 1), sel);
	nodes[n++] = vy_ir_store(p, "bo", vy_ir_u32(p, 2), selb);
	nodes[n++] = vy_ir_store(p, "fo", vy_ir_u32(p, 3), vy_ir_binary(p, VY_BIN_MUL, ld, spec));
	nodes[n++] = vy_ir_store(p, "bo", vy_ir_u32(p, 4), ldb);
	nodes[n++] = vy_ir_store(p, "wo", lnw, vy_ir_i32(p, 5));
	nodes[n++] = vy_ir_store(p, "sh", vy_ir_lid(p, 0), vy_ir_load(p, "uni", wg));
	nodes[n++] = vy_ir_let(p, "sp2", spec2);
	nodes[n++] = vy_ir_let(p, "acc", vy_ir_u32(p, 0));
	nodes[n++] = vy_ir_assign(p, "acc", var);
	nodes[n++] = vy_ir_if(p, vy_ir_binary(p, VY_BIN_EQ, vy_ir_wgid(p, 0), vy_ir_u32(p, 0)),
		vy_ir_seq(p, vy_ir_barrier(p, VY_ORDER_ACQUIRE),
			vy_ir_assign(p, "acc", vy_ir_load(p, "in", vy_ir_u32(p, 0))), NULL),
		vy_ir_seq(p, vy_ir_barrier(p, VY_ORDER_RELEASE), NULL));
	nodes[n++] = vy_ir_loop(p, "i", vy_ir_u32(p, 0), vy_ir_len(p, "in"),
		vy_ir_seq(p, vy_ir_barrier(p, VY_ORDER_ACQ_REL),
			vy_ir_store(p, "out", vy_ir_var(p, "i"), vy_ir_var(p, "acc")), NULL));
	nodes[n++] = vy_ir_barrier(p, VY_ORDER_GRID_SYNC);
	nodes[n++] = vy_ir_block(p, vy_ir_seq(p, vy_ir_barrier(p, VY_ORDER_SEQ_CST), NULL));
	nodes[n++] = vy_ir_region(p, "vyre::ops::demo",
		vy_ir_seq(p, vy_ir_barrier(p, VY_ORDER_ACQUIRE), vy_ir_barrier(p, VY_ORDER_SEQ_CST),
			NULL));
	nodes[n++] = vy_ir_if(p, vy_ir_binary(p, VY_BIN_GE, vy_ir_gid(p, 0), vy_ir_len(p, "out")),
		vy_ir_seq(p, vy_ir_return(p), NULL), vy_ir_seq(p, NULL));
	cr_assert_lt(n, 1024);
	vy_program_set_entry(p, vy_ir_seqv(p, nodes, n));

	struct vy_caps caps = {true, 1024, {1024, 1024, 64}, 49152};
	int rc = vy_validate(p, &caps, &errs);
	cr_assert_eq(rc, 0, "expected a valid program:%s", dump());
	cr_assert_eq(errs.len, 0);
	for (uint32_t i = 0; i < nc; i++) {
		cr_assert_eq(checks[i].e->type, checks[i].want, "check %u: %s gives %s, want %s", i,
			vy_expr_kind_name(checks[i].e->kind), vy_type_name(checks[i].e->type),
			vy_type_name(checks[i].want));
	}
	for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); i++) {
		cr_assert_eq(more[i].e->type, more[i].want, "%s gives %s",
			vy_expr_kind_name(more[i].e->kind), vy_type_name(more[i].e->type));
	}
	struct census c = {0};
	census_block(&p->entry, &c);
	cr_assert_eq(c.untyped, 0, "%zu of %zu expressions have no type", c.untyped, c.exprs);
	cr_assert_gt(c.exprs, 400);
	cr_assert_eq(
		c.expr_kinds, (1u << VY_EXPR_KIND_COUNT) - 1, "expression kinds %#x", c.expr_kinds);
	cr_assert_eq(c.node_kinds, (1u << VY_NODE_KIND_COUNT) - 1, "node kinds %#x", c.node_kinds);
	vy_program_destroy(p);
}

Test(validate, every_binary_operator_rejects_types_outside_its_domain)
{
	for (unsigned op = 0; op < VY_BINOP_COUNT; op++) {
		for (unsigned t = 0; t < VY_TYPE_COUNT; t++) {
			if (bin_spec[op].types & (1u << t)) {
				continue;
			}
			struct vy_program *p = base();
			struct vy_expr *b = bin_spec[op].count ? vy_ir_u32(p, 1) : lit(p, t);
			one(p, vy_ir_let(p, "x", vy_ir_binary(p, op, lit(p, t), b)));
			char at[64];
			snprintf(at, sizeof(at), "entry[0].let.value.%s.a", vy_binop_name(op));
			expect_one(p, NULL, VY_E_INVALID_PROGRAM, at, "cast a to");
			vy_err_list_finish(&errs);
		}
	}
}

Test(validate, every_unary_operator_rejects_types_outside_its_domain)
{
	for (unsigned op = 0; op < VY_UNOP_COUNT; op++) {
		for (unsigned t = 0; t < VY_TYPE_COUNT; t++) {
			if (un_spec[op].types & (1u << t)) {
				continue;
			}
			struct vy_program *p = base();
			one(p, vy_ir_let(p, "x", vy_ir_unary(p, op, lit(p, t))));
			char at[64];
			snprintf(at, sizeof(at), "entry[0].let.value.%s.a", vy_unop_name(op));
			expect_one(p, NULL, VY_E_INVALID_PROGRAM, at, "cast a to");
			vy_err_list_finish(&errs);
		}
	}
}

Test(validate, binary_operands_of_different_types_are_not_promoted)
{
	struct vy_program *p = base();
	one(p, vy_ir_store(p, "out", vy_ir_u32(p, 0),
		       vy_ir_binary(p, VY_BIN_ADD, vy_ir_u32(p, 1), vy_ir_i32(p, 2))));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].store.value.add.b", "cast b to u32");
	cr_assert(strstr(errs.items[0].message, "u32") && strstr(errs.items[0].message, "i32"));
}

Test(validate, shift_count_must_be_u32_while_the_value_may_be_i32)
{
	struct vy_program *p = base();
	one(p, vy_ir_store(p, "io", vy_ir_u32(p, 0),
		       vy_ir_binary(p, VY_BIN_SHL, vy_ir_i32(p, 1), vy_ir_i32(p, 2))));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].store.value.shl.b", "count to u32");
	vy_err_list_finish(&errs);
	p = base();
	one(p, vy_ir_store(p, "io", vy_ir_u32(p, 0),
		       vy_ir_binary(p, VY_BIN_ROTR, vy_ir_i32(p, 1), vy_ir_u32(p, 2))));
	expect_valid(p, NULL);
}

Test(validate, comparison_gives_bool_that_a_u32_buffer_does_not_take)
{
	struct vy_program *p = base();
	one(p, vy_ir_store(p, "out", vy_ir_u32(p, 0),
		       vy_ir_binary(p, VY_BIN_LT, vy_ir_u32(p, 1), vy_ir_u32(p, 2))));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].store.value", "cast the value to u32");
}

Test(validate, select_needs_a_u32_i32_or_bool_condition_and_arms_of_one_type)
{
	struct vy_program *p = base();
	one(p, vy_ir_let(p, "x",
		       vy_ir_select(p, vy_ir_i32(p, -1), vy_ir_u32(p, 1), vy_ir_u32(p, 2))));
	expect_valid(p, NULL);
	p = base();
	one(p, vy_ir_let(p, "x",
		       vy_ir_select(p, vy_ir_f32(p, 1.0f), vy_ir_u32(p, 1), vy_ir_u32(p, 2))));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].let.value.select.cond", "comparison");
	vy_err_list_finish(&errs);
	p = base();
	one(p, vy_ir_let(p, "x",
		       vy_ir_select(p, vy_ir_bool(p, true), vy_ir_u32(p, 1), vy_ir_f32(p, 2))));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].let.value.select.b", "cast b to u32");
}

Test(validate, bitcast_takes_and_gives_u32_i32_or_f32_never_bool)
{
	struct vy_program *p = base();
	one(p, vy_ir_let(p, "x", vy_ir_bitcast(p, VY_TYPE_F32, vy_ir_bool(p, true))));
	expect_one(
		p, NULL, VY_E_INVALID_PROGRAM, "entry[0].let.value.bitcast.value", "cast the bool");
	vy_err_list_finish(&errs);
	p = base();
	one(p, vy_ir_let(p, "x", vy_ir_bitcast(p, VY_TYPE_BOOL, vy_ir_u32(p, 1))));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].let.value", "bitcast to u32, i32");
	vy_err_list_finish(&errs);
	p = base();
	one(p, vy_ir_store(p, "io", vy_ir_u32(p, 0),
		       vy_ir_bitcast(p, VY_TYPE_U32, vy_ir_f32(p, 1.0f))));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].store.value", "cast the value to i32");
}

Test(validate, abs_diff_of_i32_gives_u32)
{
	struct vy_program *p = base();
	one(p, vy_ir_store(p, "io", vy_ir_u32(p, 0),
		       vy_ir_binary(p, VY_BIN_ABS_DIFF, vy_ir_i32(p, -5), vy_ir_i32(p, 7))));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].store.value", "cast the value to i32");
	vy_err_list_finish(&errs);
	p = base();
	one(p, vy_ir_store(p, "out", vy_ir_u32(p, 0),
		       vy_ir_binary(p, VY_BIN_ABS_DIFF, vy_ir_i32(p, -5), vy_ir_i32(p, 7))));
	expect_valid(p, NULL);
}

Test(validate, fma_takes_f32_only)
{
	struct vy_program *p = base();
	one(p, vy_ir_let(p, "x", vy_ir_fma(p, vy_ir_f32(p, 1), vy_ir_f32(p, 2), vy_ir_u32(p, 3))));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].let.value.fma.c", "f32");
}

Test(validate, if_condition_and_loop_bounds_are_typed)
{
	struct vy_program *p = base();
	one(p, vy_ir_if(p, vy_ir_f32(p, 1), vy_ir_seq(p, NULL), vy_ir_seq(p, NULL)));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].if.cond", "comparison");
	vy_err_list_finish(&errs);
	p = base();
	one(p, vy_ir_if(p, vy_ir_i32(p, -2), vy_ir_seq(p, NULL), vy_ir_seq(p, NULL)));
	expect_valid(p, NULL);
	p = base();
	one(p, vy_ir_loop(p, "i", vy_ir_u32(p, 0), vy_ir_i32(p, 4), vy_ir_seq(p, NULL)));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].loop.to", "cast the bound to u32");
}

Test(validate, store_needs_a_u32_index_and_a_value_of_the_element_type)
{
	struct vy_program *p = base();
	one(p, vy_ir_store(p, "out", vy_ir_i32(p, 0), vy_ir_u32(p, 1)));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].store.index", "cast the index to u32");
	vy_err_list_finish(&errs);
	p = base();
	one(p, vy_ir_store(p, "fo", vy_ir_u32(p, 0), vy_ir_u32(p, 1)));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].store.value", "cast the value to f32");
	cr_assert(strstr(errs.items[0].message, "fo"));
}

Test(validate, load_and_atomic_indices_are_u32)
{
	struct vy_program *p = base();
	one(p, vy_ir_store(p, "out", vy_ir_u32(p, 0),
		       vy_ir_binary(p, VY_BIN_ADD, vy_ir_u32(p, 1),
			       vy_ir_load(p, "in", vy_ir_f32(p, 0)))));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].store.value.add.b.load.index",
		"cast the index to u32");
	vy_err_list_finish(&errs);
	p = base();
	one(p, vy_ir_let(p, "x",
		       vy_ir_atomic(p, VY_ATOMIC_ADD, "out", vy_ir_i32(p, 0), vy_ir_u32(p, 1))));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].let.value.atomic.index", "u32");
}

Test(validate, atomic_values_are_u32_and_buffers_u32)
{
	struct vy_program *p = base();
	one(p, vy_ir_let(p, "x",
		       vy_ir_atomic_cas(
			       p, "out", vy_ir_u32(p, 0), vy_ir_f32(p, 0), vy_ir_u32(p, 1))));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].let.value.atomic.expected", "u32");
	vy_err_list_finish(&errs);
	p = base();
	one(p, vy_ir_let(p, "x",
		       vy_ir_atomic(p, VY_ATOMIC_MAX, "out", vy_ir_u32(p, 0), vy_ir_i32(p, 1))));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].let.value.atomic.value", "u32");
	vy_err_list_finish(&errs);
	p = base();
	one(p, vy_ir_let(p, "x",
		       vy_ir_atomic(p, VY_ATOMIC_ADD, "fo", vy_ir_u32(p, 0), vy_ir_u32(p, 1))));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].let.value", "with type u32");
}

Test(validate, ids_take_axes_zero_to_two)
{
	struct vy_program *p = base();
	one(p, vy_ir_store(p, "out", vy_ir_lid(p, 3), vy_ir_u32(p, 0)));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].store.index", "axis 0");
}

Test(validate, literals_and_spec_defaults_hold_a_value_of_their_type)
{
	struct vy_program *p = base();
	one(p, vy_ir_let(p, "x", vy_ir_lit(p, VY_TYPE_BOOL, 2)));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].let.value", "true or false");
	vy_err_list_finish(&errs);
	p = base();
	one(p, vy_ir_let(p, "x", vy_ir_spec(p, "flag", VY_TYPE_BOOL, 7)));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].let.value", "true or false");
	vy_err_list_finish(&errs);
	p = base();
	one(p, vy_ir_let(p, "x", vy_ir_spec(p, "flag", VY_TYPE_BOOL, 2)));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].let.value", "true or false");
	vy_err_list_finish(&errs);
	p = base();
	one(p, vy_ir_let(p, "x", vy_ir_spec(p, "9lives", VY_TYPE_U32, 7)));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].let.value", "letters");
}

Test(validate, spec_name_used_twice_needs_the_same_type_and_default)
{
	struct vy_program *p = base();
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_let(p, "a", vy_ir_spec(p, "n", VY_TYPE_U32, 4)),
			   vy_ir_let(p, "b", vy_ir_spec(p, "n", VY_TYPE_U32, 4)),
			   vy_ir_let(p, "c", vy_ir_spec(p, "n", VY_TYPE_U32, 8)), NULL));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[2].let.value", "same type and default");
	cr_assert(strstr(errs.items[0].message, "8") && strstr(errs.items[0].message, "4"));
	vy_err_list_finish(&errs);
	p = base();
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_let(p, "a", vy_ir_spec(p, "n", VY_TYPE_U32, 4)),
			   vy_ir_let(p, "b", vy_ir_spec(p, "n", VY_TYPE_I32, 4)), NULL));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[1].let.value", "same type and default");
}

static struct vy_expr *make_ballot_f32(struct vy_program *p)
{
	return vy_ir_subgroup_ballot(p, vy_ir_f32(p, 1));
}

static struct vy_expr *make_shuffle_i32_lane(struct vy_program *p)
{
	return vy_ir_subgroup_shuffle(p, vy_ir_u32(p, 1), vy_ir_i32(p, 0));
}

static struct vy_expr *make_reduce_xor_f32(struct vy_program *p)
{
	return vy_ir_cast(p, VY_TYPE_U32, vy_ir_subgroup_reduce(p, VY_REDUCE_XOR, vy_ir_f32(p, 1)));
}

Test(validate, subgroup_operands_are_typed)
{
	expect_one(store_out(make_ballot_f32), NULL, VY_E_INVALID_PROGRAM,
		"entry[0].store.value.subgroup_ballot.cond", "bool");
	vy_err_list_finish(&errs);
	expect_one(store_out(make_shuffle_i32_lane), NULL, VY_E_INVALID_PROGRAM,
		"entry[0].store.value.subgroup_shuffle.lane", "u32");
	vy_err_list_finish(&errs);
	expect_one(store_out(make_reduce_xor_f32), NULL, VY_E_INVALID_PROGRAM,
		"entry[0].store.value.cast.value.subgroup_reduce.value", "u32 or i32");
}

Test(validate, subgroups_denied_by_caps_are_unsupported_features)
{
	struct vy_caps caps = {false, 0, {0, 0, 0}, 0};
	struct vy_program *p = base();
	one(p, vy_ir_store(p, "out", vy_ir_u32(p, 0), vy_ir_subgroup_size(p)));
	expect_one(p, &caps, VY_E_UNSUPPORTED_FEATURE, "entry[0].store.value", "subgroup support");
	cr_assert(strstr(errs.items[0].message, "subgroup_size"));
	vy_err_list_finish(&errs);

	/* An invalid-program error outranks a capability error in the return code. */
	p = base();
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_let(p, "x", vy_ir_subgroup_lane(p)),
			   vy_ir_store(p, "in", vy_ir_u32(p, 0), vy_ir_u32(p, 0)), NULL));
	cr_assert_eq(vy_validate(p, &caps, &errs), VY_E_INVALID_PROGRAM);
	cr_assert_eq(errs.len, 2);
	cr_assert_eq(errs.items[0].code, VY_E_UNSUPPORTED_FEATURE);
	cr_assert_eq(errs.items[1].code, VY_E_INVALID_PROGRAM);
	vy_program_destroy(p);
	vy_err_list_finish(&errs);

	/* NULL caps allow subgroups. */
	p = base();
	one(p, vy_ir_store(p, "out", vy_ir_u32(p, 0), vy_ir_subgroup_lane(p)));
	expect_valid(p, NULL);
}

Test(validate, version_must_be_one)
{
	struct vy_program *p = base();
	p->version = 2;
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "vyre", "version 1");
}

Test(validate, workgroup_axes_are_at_least_one_and_within_caps)
{
	struct vy_program *p = vy_program_create(NULL, 64, 0, 1);
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "workgroup_size[1]", "1 or more");
	vy_err_list_finish(&errs);

	struct vy_caps caps = {true, 256, {1024, 1024, 64}, 0};
	p = vy_program_create(NULL, 32, 16, 1);
	expect_one(p, &caps, VY_E_UNSUPPORTED_FEATURE, "workgroup_size", "256 or less");
	vy_err_list_finish(&errs);
	p = vy_program_create(NULL, 1, 1, 128);
	expect_one(p, &caps, VY_E_UNSUPPORTED_FEATURE, "workgroup_size[2]", "64 or less");
	vy_err_list_finish(&errs);
	expect_valid(vy_program_create(NULL, 16, 16, 1), &caps);
}

Test(validate, each_workgroup_limit_admits_its_cap_and_refuses_one_more)
{
	struct vy_caps axes = {true, 0, {1024, 512, 64}, 0};
	expect_valid(vy_program_create(NULL, 1024, 1, 1), &axes);
	expect_valid(vy_program_create(NULL, 1, 512, 1), &axes);
	expect_valid(vy_program_create(NULL, 1, 1, 64), &axes);
	expect_one(vy_program_create(NULL, 1025, 1, 1), &axes, VY_E_UNSUPPORTED_FEATURE,
		"workgroup_size[0]", "1024 or less");
	vy_err_list_finish(&errs);
	expect_one(vy_program_create(NULL, 1, 513, 1), &axes, VY_E_UNSUPPORTED_FEATURE,
		"workgroup_size[1]", "512 or less");
	vy_err_list_finish(&errs);
	expect_one(vy_program_create(NULL, 1, 1, 65), &axes, VY_E_UNSUPPORTED_FEATURE,
		"workgroup_size[2]", "64 or less");
	vy_err_list_finish(&errs);

	struct vy_caps invocations = {true, 768, {0, 0, 0}, 0};
	expect_valid(vy_program_create(NULL, 16, 16, 3), &invocations);
	expect_one(vy_program_create(NULL, 769, 1, 1), &invocations, VY_E_UNSUPPORTED_FEATURE,
		"workgroup_size", "768 or less");
}

Test(validate, at_most_32_buffers)
{
	struct vy_program *p = vy_program_create(NULL, 1, 1, 1);
	char name[16];
	for (uint32_t i = 0; i < VY_IR_MAX_BUFFERS; i++) {
		snprintf(name, sizeof(name), "b%u", i);
		cr_assert_not_null(
			vy_program_add_buffer(p, name, i, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 0));
	}
	cr_assert_null(vy_program_add_buffer(p, "extra", 99, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 0));
	cr_assert_eq(vy_validate(p, NULL, &errs), 0);
	p->n_buffers = VY_IR_MAX_BUFFERS + 1;
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "buffers", "32 or fewer");
}

Test(validate, buffer_names_are_identifiers)
{
	struct vy_program *p = vy_program_create(NULL, 1, 1, 1);
	vy_program_add_buffer(p, "9lives", 0, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 0);
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "buffers[0].name", "letters");
	vy_err_list_finish(&errs);
	p = vy_program_create(NULL, 1, 1, 1);
	vy_program_add_buffer(p, "ok", 0, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 0);
	vy_program_add_buffer(p, "has-dash", 1, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 0);
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "buffers[1].name", "letters");
}

Test(validate, names_are_at_most_64_bytes)
{
	char n64[65], n65[66];
	memset(n64, 'a', 64);
	n64[64] = '\0';
	memset(n65, 'b', 65);
	n65[65] = '\0';
	struct vy_program *p = vy_program_create(NULL, 1, 1, 1);
	vy_program_add_buffer(p, n64, 0, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 0);
	one(p, vy_ir_let(p, n64, vy_ir_u32(p, 1)));
	expect_valid(p, NULL);
	p = vy_program_create(NULL, 1, 1, 1);
	vy_program_add_buffer(p, n65, 0, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 0);
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "buffers[0].name", "1 to 64");
	vy_err_list_finish(&errs);
	p = vy_program_create(NULL, 1, 1, 1);
	one(p, vy_ir_let(p, n65, vy_ir_u32(p, 1)));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].let", "1 to 64");
	vy_err_list_finish(&errs);
	p = vy_program_create(NULL, 1, 1, 1);
	one(p, vy_ir_region(p, n65, vy_ir_seq(p, NULL)));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].region", "1 to 64");
}

Test(validate, buffer_names_are_unique)
{
	struct vy_program *p = vy_program_create(NULL, 1, 1, 1);
	vy_program_add_buffer(p, "x", 0, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 0);
	vy_program_add_buffer(p, "x", 1, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 0);
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "buffers[1].name", "own name");
}

Test(validate, bindings_are_unique_among_non_workgroup_buffers)
{
	struct vy_program *p = vy_program_create(NULL, 1, 1, 1);
	vy_program_add_buffer(p, "a", 3, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 0);
	vy_program_add_buffer(p, "s", 3, VY_ACCESS_WORKGROUP, VY_TYPE_U32, 8);
	vy_program_add_buffer(p, "t", 3, VY_ACCESS_WORKGROUP, VY_TYPE_U32, 8);
	vy_program_add_buffer(p, "b", 3, VY_ACCESS_UNIFORM, VY_TYPE_U32, 0);
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "buffers[3].binding", "own binding");
	cr_assert(strstr(errs.items[0].message, "\"a\""));
	vy_err_list_finish(&errs);

	p = vy_program_create(NULL, 1, 1, 1);
	vy_program_add_buffer(p, "a", 0, VY_ACCESS_READ_ONLY, VY_TYPE_U32, 0);
	vy_program_add_buffer(p, "b", 0, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 0);
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "buffers[1].binding", "own binding");
}

Test(validate, workgroup_buffers_need_a_count)
{
	struct vy_program *p = vy_program_create(NULL, 1, 1, 1);
	vy_program_add_buffer(p, "s", 0, VY_ACCESS_WORKGROUP, VY_TYPE_U32, 0);
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "buffers[0].count", "count > 0");
}

Test(validate, hints_take_power_of_two_alignment_and_an_axis)
{
	struct vy_program *p = vy_program_create(NULL, 1, 1, 1);
	struct vy_buffer *b =
		vy_program_add_buffer(p, "a", 0, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 0);
	b->has_hints = true;
	b->hints.alignment = 48;
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "buffers[0].hints.alignment", "power of two");
	vy_err_list_finish(&errs);
	p = vy_program_create(NULL, 1, 1, 1);
	b = vy_program_add_buffer(p, "a", 0, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 0);
	b->has_hints = true;
	b->hints.coalesce_axis = 3;
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "buffers[0].hints.coalesce_axis", "0, 1 or 2");
}

Test(validate, workgroup_memory_fits_the_device)
{
	struct vy_caps caps = {true, 0, {0, 0, 0}, 1024};
	struct vy_program *p = vy_program_create(NULL, 1, 1, 1);
	vy_program_add_buffer(p, "s1", 0, VY_ACCESS_WORKGROUP, VY_TYPE_U32, 200);
	vy_program_add_buffer(p, "s2", 0, VY_ACCESS_WORKGROUP, VY_TYPE_F32, 56);
	expect_valid(p, &caps);
	p = vy_program_create(NULL, 1, 1, 1);
	vy_program_add_buffer(p, "s1", 0, VY_ACCESS_WORKGROUP, VY_TYPE_U32, 200);
	vy_program_add_buffer(p, "g", 0, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 100000);
	vy_program_add_buffer(p, "s2", 0, VY_ACCESS_WORKGROUP, VY_TYPE_F32, 57);
	expect_one(p, &caps, VY_E_UNSUPPORTED_FEATURE, "buffers[2].count", "1024 bytes");
}

Test(validate, undefined_variable_is_an_error)
{
	struct vy_program *p = base();
	one(p, vy_ir_store(p, "out", vy_ir_u32(p, 0), vy_ir_var(p, "ghost")));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].store.value", "with a let");
	cr_assert(strstr(errs.items[0].message, "ghost"));
}

Test(validate, shadowing_any_visible_variable_is_an_error)
{
	struct vy_program *p = base();
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_let(p, "x", vy_ir_u32(p, 1)),
			   vy_ir_block(p, vy_ir_seq(p, vy_ir_let(p, "x", vy_ir_u32(p, 2)), NULL)),
			   NULL));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[1].block.body[0].let", "shadowing");
	vy_err_list_finish(&errs);

	p = base();
	one(p, vy_ir_loop(p, "i", vy_ir_u32(p, 0), vy_ir_u32(p, 4),
		       vy_ir_seq(p, vy_ir_let(p, "i", vy_ir_u32(p, 2)), NULL)));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].loop.body[0].let", "shadowing");
	cr_assert(strstr(errs.items[0].message, "loop variable"));
	vy_err_list_finish(&errs);

	p = base();
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_let(p, "i", vy_ir_u32(p, 1)),
			   vy_ir_loop(p, "i", vy_ir_u32(p, 0), vy_ir_u32(p, 4), vy_ir_seq(p, NULL)),
			   NULL));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[1].loop", "shadowing");
	vy_err_list_finish(&errs);

	p = base();
	vy_program_set_entry(p, vy_ir_seq(p, vy_ir_let(p, "x", vy_ir_u32(p, 1)),
					vy_ir_let(p, "x", vy_ir_u32(p, 2)), NULL));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[1].let", "shadowing");
}

Test(validate, names_of_ended_sibling_scopes_may_be_reused)
{
	struct vy_program *p = base();
	vy_program_set_entry(p,
		vy_ir_seq(p, vy_ir_block(p, vy_ir_seq(p, vy_ir_let(p, "x", vy_ir_u32(p, 1)), NULL)),
			vy_ir_if(p, vy_ir_bool(p, true),
				vy_ir_seq(p, vy_ir_let(p, "x", vy_ir_f32(p, 1)), NULL),
				vy_ir_seq(p, vy_ir_let(p, "x", vy_ir_i32(p, 1)), NULL)),
			vy_ir_loop(p, "x", vy_ir_u32(p, 0), vy_ir_u32(p, 2), vy_ir_seq(p, NULL)),
			vy_ir_let(p, "x", vy_ir_bool(p, true)), NULL));
	expect_valid(p, NULL);
}

Test(validate, loop_variable_is_u32_and_visible_in_the_body_only)
{
	struct vy_program *p = base();
	vy_program_set_entry(p,
		vy_ir_seq(p,
			vy_ir_loop(p, "i", vy_ir_u32(p, 0), vy_ir_u32(p, 4),
				vy_ir_seq(p,
					vy_ir_store(p, "out", vy_ir_var(p, "i"), vy_ir_var(p, "i")),
					NULL)),
			vy_ir_store(p, "out", vy_ir_u32(p, 0), vy_ir_var(p, "i")), NULL));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[1].store.value", "with a let");
	vy_err_list_finish(&errs);
	p = base();
	one(p, vy_ir_loop(p, "i", vy_ir_var(p, "i"), vy_ir_u32(p, 4), vy_ir_seq(p, NULL)));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].loop.from", "with a let");
}

Test(validate, assign_needs_an_existing_variable_of_the_same_type)
{
	struct vy_program *p = base();
	one(p, vy_ir_assign(p, "y", vy_ir_u32(p, 1)));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].assign", "declare y with a let");
	vy_err_list_finish(&errs);
	p = base();
	vy_program_set_entry(p, vy_ir_seq(p, vy_ir_let(p, "x", vy_ir_u32(p, 1)),
					vy_ir_assign(p, "x", vy_ir_f32(p, 1)), NULL));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[1].assign.value", "cast the value to u32");
}

Test(validate, loop_variables_are_read_only)
{
	struct vy_program *p = base();
	one(p, vy_ir_loop(p, "i", vy_ir_u32(p, 0), vy_ir_u32(p, 4),
		       vy_ir_seq(p, vy_ir_assign(p, "i", vy_ir_u32(p, 9)), NULL)));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].loop.body[0].assign", "copy the loop");
}

Test(validate, buffer_references_must_name_declared_buffers)
{
	struct vy_program *p = base();
	one(p, vy_ir_store(p, "out", vy_ir_u32(p, 0), vy_ir_load(p, "nope", vy_ir_u32(p, 0))));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].store.value", "declare the buffer");
	vy_err_list_finish(&errs);
	p = base();
	one(p, vy_ir_store(p, "nope", vy_ir_u32(p, 0), vy_ir_u32(p, 0)));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].store", "declare the buffer");
	vy_err_list_finish(&errs);
	p = base();
	one(p, vy_ir_let(p, "n", vy_ir_len(p, "nope")));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].let.value", "declare the buffer");
	vy_err_list_finish(&errs);
	p = base();
	one(p, vy_ir_let(p, "n",
		       vy_ir_atomic(p, VY_ATOMIC_OR, "nope", vy_ir_u32(p, 0), vy_ir_u32(p, 0))));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].let.value", "declare the buffer");
}

Test(validate, stores_need_a_writable_buffer)
{
	struct vy_program *p = base();
	one(p, vy_ir_store(p, "in", vy_ir_u32(p, 0), vy_ir_u32(p, 0)));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].store", "read_write");
	cr_assert(strstr(errs.items[0].message, "read_only"));
	vy_err_list_finish(&errs);
	p = base();
	one(p, vy_ir_store(p, "uni", vy_ir_u32(p, 0), vy_ir_u32(p, 0)));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].store", "read_write");
	vy_err_list_finish(&errs);
	p = base();
	vy_program_set_entry(p,
		vy_ir_seq(p, vy_ir_store(p, "wo", vy_ir_u32(p, 0), vy_ir_i32(p, 0)),
			vy_ir_store(p, "sh", vy_ir_u32(p, 0), vy_ir_load(p, "sh", vy_ir_u32(p, 1))),
			NULL));
	expect_valid(p, NULL);
}

Test(validate, atomics_need_read_write_buffers)
{
	struct vy_program *p = base();
	one(p, vy_ir_let(p, "x",
		       vy_ir_atomic(p, VY_ATOMIC_ADD, "in", vy_ir_u32(p, 0), vy_ir_u32(p, 1))));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].let.value", "read_write");
	vy_err_list_finish(&errs);
	p = base();
	one(p, vy_ir_let(p, "x",
		       vy_ir_atomic_cas(
			       p, "uni", vy_ir_u32(p, 0), vy_ir_u32(p, 1), vy_ir_u32(p, 2))));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].let.value", "read_write");
	vy_err_list_finish(&errs);
	p = base();
	one(p, vy_ir_let(p, "x",
		       vy_ir_atomic(
			       p, VY_ATOMIC_EXCHANGE, "sh", vy_ir_u32(p, 0), vy_ir_u32(p, 1))));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].let.value",
		"declare buffer sh read_write");
}

Test(validate, write_only_buffers_cannot_be_loaded)
{
	struct vy_program *p = base();
	one(p, vy_ir_store(p, "io", vy_ir_u32(p, 0), vy_ir_load(p, "wo", vy_ir_u32(p, 0))));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].store.value",
		"declare buffer wo read_write");
}

Test(validate, len_of_a_workgroup_buffer_is_u32)
{
	struct vy_program *p = base();
	struct vy_expr *len = vy_ir_len(p, "sh");
	one(p, vy_ir_loop(p, "i", vy_ir_u32(p, 0), len,
		       vy_ir_seq(p, vy_ir_barrier(p, VY_ORDER_SEQ_CST), NULL)));
	cr_assert_eq(vy_validate(p, NULL, &errs), 0, "%s", dump());
	cr_assert_eq(len->type, VY_TYPE_U32);
	vy_program_destroy(p);
}

static struct vy_node *barrier_if(struct vy_program *p, struct vy_expr *cond)
{
	return vy_ir_if(p, cond, vy_ir_seq(p, vy_ir_barrier(p, VY_ORDER_SEQ_CST), NULL),
		vy_ir_seq(p, NULL));
}

Test(validate, barrier_under_a_per_invocation_condition_is_an_error)
{
	struct vy_program *p = base();
	one(p, barrier_if(p, vy_ir_binary(p, VY_BIN_EQ, vy_ir_gid(p, 0), vy_ir_u32(p, 0))));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].if.then[0].barrier", "literals");
	cr_assert(strstr(errs.items[0].message, "entry[0].if.cond"), "%s", errs.items[0].message);
	vy_err_list_finish(&errs);
	p = base();
	one(p, barrier_if(p, vy_ir_binary(p, VY_BIN_LT, vy_ir_load(p, "in", vy_ir_wgid(p, 0)),
				     vy_ir_u32(p, 3))));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].if.then[0].barrier", "literals");
	vy_err_list_finish(&errs);
	p = base();
	one(p, vy_ir_loop(p, "i", vy_ir_u32(p, 0), vy_ir_lid(p, 0),
		       vy_ir_seq(p, vy_ir_barrier(p, VY_ORDER_SEQ_CST), NULL)));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].loop.body[0].barrier", "literals");
}

Test(validate, barrier_under_uniform_conditions_is_valid)
{
	struct vy_program *p = base();
	struct vy_expr *u = vy_ir_binary(p, VY_BIN_ADD, vy_ir_len(p, "in"),
		vy_ir_binary(p, VY_BIN_MUL, vy_ir_wgid(p, 1), vy_ir_spec(p, "k", VY_TYPE_U32, 2)));
	vy_program_set_entry(p,
		vy_ir_seq(p, vy_ir_let(p, "n", u),
			vy_ir_let(p, "m",
				vy_ir_binary(p, VY_BIN_DIV, vy_ir_var(p, "n"), vy_ir_u32(p, 2))),
			vy_ir_assign(p, "m",
				vy_ir_binary(p, VY_BIN_ADD, vy_ir_var(p, "m"), vy_ir_u32(p, 1))),
			vy_ir_loop(p, "i", vy_ir_u32(p, 0), vy_ir_var(p, "m"),
				vy_ir_seq(p,
					barrier_if(p, vy_ir_binary(p, VY_BIN_NE, vy_ir_var(p, "i"),
							      vy_ir_u32(p, 2))),
					NULL)),
			NULL));
	expect_valid(p, NULL);
}

Test(validate, variables_derived_from_invocation_values_are_not_uniform)
{
	struct vy_program *p = base();
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_let(p, "x", vy_ir_gid(p, 0)),
			   vy_ir_let(p, "y",
				   vy_ir_binary(p, VY_BIN_ADD, vy_ir_var(p, "x"), vy_ir_u32(p, 1))),
			   barrier_if(p, vy_ir_var(p, "y")), NULL));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[2].if.then[0].barrier", "literals");
}

Test(validate, a_later_non_uniform_assign_makes_an_earlier_use_non_uniform)
{
	struct vy_program *p = base();
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_let(p, "x", vy_ir_u32(p, 0)),
			   vy_ir_loop(p, "i", vy_ir_u32(p, 0), vy_ir_u32(p, 4),
				   vy_ir_seq(p, barrier_if(p, vy_ir_var(p, "x")),
					   vy_ir_assign(
						   p, "x", vy_ir_load(p, "in", vy_ir_var(p, "i"))),
					   NULL)),
			   NULL));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[1].loop.body[0].if.then[0].barrier",
		"literals");
}

Test(validate, a_variable_assigned_under_a_non_uniform_condition_is_not_uniform)
{
	struct vy_program *p = base();
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_let(p, "x", vy_ir_u32(p, 0)),
			   vy_ir_if(p, vy_ir_lid(p, 0),
				   vy_ir_seq(p, vy_ir_assign(p, "x", vy_ir_u32(p, 1)), NULL),
				   vy_ir_seq(p, NULL)),
			   vy_ir_let(p, "z", vy_ir_var(p, "x")), barrier_if(p, vy_ir_var(p, "z")),
			   NULL));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[3].if.then[0].barrier", "literals");
}

Test(validate, a_non_uniform_return_makes_later_barriers_non_uniform)
{
	struct vy_program *p = base();
	struct vy_node *early = vy_ir_if(
		p, vy_ir_gid(p, 0), vy_ir_seq(p, vy_ir_return(p), NULL), vy_ir_seq(p, NULL));
	vy_program_set_entry(p, vy_ir_seq(p, vy_ir_barrier(p, VY_ORDER_SEQ_CST), early,
					vy_ir_barrier(p, VY_ORDER_SEQ_CST), NULL));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[2].barrier", "move the return");
	vy_err_list_finish(&errs);

	/* Inside a loop the next iteration's barriers come after the return too. */
	p = base();
	one(p, vy_ir_loop(p, "i", vy_ir_u32(p, 0), vy_ir_u32(p, 4),
		       vy_ir_seq(p, vy_ir_barrier(p, VY_ORDER_SEQ_CST),
			       vy_ir_if(p,
				       vy_ir_binary(
					       p, VY_BIN_EQ, vy_ir_gid(p, 0), vy_ir_var(p, "i")),
				       vy_ir_seq(p, vy_ir_return(p), NULL), vy_ir_seq(p, NULL)),
			       NULL)));
	expect_one(
		p, NULL, VY_E_INVALID_PROGRAM, "entry[0].loop.body[0].barrier", "move the return");
	vy_err_list_finish(&errs);

	/* A return every invocation of the workgroup takes alike is harmless. */
	p = base();
	vy_program_set_entry(
		p, vy_ir_seq(p,
			   vy_ir_if(p, vy_ir_wgid(p, 0), vy_ir_seq(p, vy_ir_return(p), NULL),
				   vy_ir_seq(p, NULL)),
			   vy_ir_barrier(p, VY_ORDER_SEQ_CST), NULL));
	expect_valid(p, NULL);
}

Test(validate, grid_sync_only_at_the_top_level)
{
	struct vy_program *p = base();
	one(p, vy_ir_if(p, vy_ir_bool(p, true),
		       vy_ir_seq(p, vy_ir_barrier(p, VY_ORDER_GRID_SYNC), NULL),
		       vy_ir_seq(p, NULL)));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].if.then[0].barrier", "top level");
	vy_err_list_finish(&errs);
	p = base();
	one(p, vy_ir_block(
		       p, vy_ir_seq(p,
				  vy_ir_region(p, "inner",
					  vy_ir_seq(p, vy_ir_barrier(p, VY_ORDER_GRID_SYNC), NULL)),
				  NULL)));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].block.body[0].region.body[0].barrier",
		"top level");
	vy_err_list_finish(&errs);
	p = base();
	one(p, vy_ir_loop(p, "i", vy_ir_u32(p, 0), vy_ir_u32(p, 2),
		       vy_ir_seq(p, vy_ir_barrier(p, VY_ORDER_GRID_SYNC), NULL)));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].loop.body[0].barrier", "top level");
	vy_err_list_finish(&errs);
	p = base();
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_let(p, "x", vy_ir_u32(p, 1)),
			   vy_ir_region(p, "two_regions",
				   vy_ir_seq(p, vy_ir_barrier(p, VY_ORDER_GRID_SYNC), NULL)),
			   NULL));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[1].region.body[0].barrier",
		"region that is the entry's only node");
}

Test(validate, grid_sync_inside_the_region_that_wraps_the_entry_is_accepted)
{
	struct vy_program *p = base();
	one(p, vy_ir_region(p, "wrapped",
		       vy_ir_seq(p, vy_ir_store(p, "out", vy_ir_u32(p, 0), vy_ir_u32(p, 1)),
			       vy_ir_barrier(p, VY_ORDER_GRID_SYNC),
			       vy_ir_store(p, "out", vy_ir_u32(p, 1), vy_ir_u32(p, 2)), NULL)));
	expect_valid(p, NULL);
}

Test(validate, variables_do_not_survive_a_grid_sync_barrier)
{
	struct vy_program *p = base();
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_let(p, "i", vy_ir_gid(p, 0)),
			   vy_ir_barrier(p, VY_ORDER_GRID_SYNC),
			   vy_ir_store(p, "out", vy_ir_var(p, "i"), vy_ir_u32(p, 1)), NULL));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[2].store.index",
		"recompute the value after the grid_sync barrier");
	vy_err_list_finish(&errs);
	p = base();
	vy_program_set_entry(p, vy_ir_seq(p, vy_ir_let(p, "i", vy_ir_gid(p, 0)),
					vy_ir_barrier(p, VY_ORDER_GRID_SYNC),
					vy_ir_assign(p, "i", vy_ir_u32(p, 1)), NULL));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[2].assign",
		"recompute the value after the grid_sync barrier");
}

Test(validate, output_buffers_need_a_count)
{
	struct vy_program *p = base();
	vy_program_add_buffer(p, "res", 9, VY_ACCESS_READ_WRITE, VY_TYPE_U32, 0)->output = true;
	one(p, vy_ir_store(p, "res", vy_ir_u32(p, 0), vy_ir_u32(p, 1)));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "buffers[8].count", "give res a count > 0");
	vy_err_list_finish(&errs);
	p = vy_program_create(NULL, 1, 1, 1);
	vy_program_add_buffer(p, "w", 0, VY_ACCESS_WRITE_ONLY, VY_TYPE_F32, 0);
	one(p, vy_ir_return(p));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "buffers[0].count", "give w a count > 0");
}

static struct vy_program *nested_blocks(uint32_t levels)
{
	struct vy_program *p = vy_program_create(NULL, 1, 1, 1);
	struct vy_node *n = vy_ir_return(p);
	for (uint32_t i = 0; i < levels; i++) {
		n = vy_ir_block(p, vy_ir_seq(p, n, NULL));
	}
	return one(p, n);
}

Test(validate, nesting_is_limited_to_64_levels)
{
	/* 63 blocks around a return: the return sits at level 64. */
	expect_valid(nested_blocks(VY_IR_MAX_NESTING - 1), NULL);
	struct vy_program *p = nested_blocks(VY_IR_MAX_NESTING);
	cr_assert_eq(vy_validate(p, NULL, &errs), VY_E_INVALID_PROGRAM);
	cr_assert_eq(errs.len, 1, "%s", dump());
	cr_assert(strstr(errs.items[0].message, "return nests deeper than 64"));
	cr_assert(strstr(errs.items[0].fix, "64 levels"));
	vy_program_destroy(p);
}

Test(validate, ten_thousand_nested_blocks_give_the_limit_error)
{
	struct vy_program *p = nested_blocks(10000);
	cr_assert_eq(vy_validate(p, NULL, &errs), VY_E_INVALID_PROGRAM);
	cr_assert_eq(errs.len, 1, "%s", dump());
	const struct vy_err *e = &errs.items[0];
	cr_assert(strstr(e->message, "deeper than 64"));
	cr_assert(
		strncmp(e->at, "entry[0].block.body[0].block.body[0].block", 42) == 0, "%s", e->at);
	size_t len = strlen(e->at);
	cr_assert_lt(len, VY_ERR_AT_MAX);
	cr_assert_str_eq(e->at + len - 3, "...");
	vy_program_destroy(p);
}

static struct vy_program *nested_expr(uint32_t levels)
{
	struct vy_program *p = vy_program_create(NULL, 1, 1, 1);
	struct vy_expr *e = vy_ir_i32(p, 1);
	for (uint32_t i = 1; i < levels; i++) {
		e = vy_ir_unary(p, VY_UN_NEG, e);
	}
	return one(p, vy_ir_let(p, "x", e));
}

Test(validate, expressions_nest_at_most_128_levels)
{
	expect_valid(nested_expr(VY_IR_MAX_EXPR_DEPTH), NULL);
	struct vy_program *p = nested_expr(VY_IR_MAX_EXPR_DEPTH + 1);
	cr_assert_eq(vy_validate(p, NULL, &errs), VY_E_INVALID_PROGRAM);
	cr_assert_eq(errs.len, 1, "%s", dump());
	cr_assert(strstr(errs.items[0].fix, "let variables"));
	cr_assert(strncmp(errs.items[0].at, "entry[0].let.value.neg.a.neg.a", 30) == 0);
	vy_program_destroy(p);
}

Test(validate, ten_thousand_nested_expressions_give_the_limit_error)
{
	struct vy_program *p = nested_expr(10000);
	cr_assert_eq(vy_validate(p, NULL, &errs), VY_E_INVALID_PROGRAM);
	cr_assert_eq(errs.len, 1, "%s", dump());
	cr_assert(strstr(errs.items[0].message, "deeper than 128"));
	vy_program_destroy(p);
}

Test(validate, shared_subexpressions_are_bounded)
{
	struct vy_program *p = vy_program_create(NULL, 1, 1, 1);
	struct vy_expr *e = vy_ir_u32(p, 1);
	for (int i = 0; i < 40; i++) {
		e = vy_ir_binary(p, VY_BIN_ADD, e, e);
	}
	one(p, vy_ir_let(p, "x", e));
	cr_assert_eq(vy_validate(p, NULL, &errs), VY_E_INVALID_PROGRAM);
	cr_assert_eq(errs.len, 1, "%s", dump());
	cr_assert(strstr(errs.items[0].message, "expressions"));
	vy_program_destroy(p);
}

Test(validate, programs_hold_at_most_100000_nodes)
{
	struct vy_program *p = vy_program_create(NULL, 1, 1, 1);
	uint32_t n = VY_IR_MAX_NODES + 1;
	struct vy_node **nodes = malloc(n * sizeof(*nodes));
	char name[16];
	for (uint32_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "v%u", i);
		nodes[i] = vy_ir_let(p, name, vy_ir_u32(p, i));
	}
	vy_program_set_entry(p, vy_ir_seqv(p, nodes, n - 1));
	cr_assert_eq(vy_validate(p, NULL, &errs), 0, "%s", dump());
	vy_program_set_entry(p, vy_ir_seqv(p, nodes, n));
	free(nodes);
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry", "split");
}

Test(validate, missing_operands_are_errors_not_crashes)
{
	struct vy_program *p = base();
	one(p, vy_ir_store(p, "out", NULL, vy_ir_u32(p, 0)));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].store.index", "operand");
	vy_err_list_finish(&errs);
	p = base();
	one(p, vy_ir_let(p, "x", vy_ir_binary(p, VY_BIN_ADD, vy_ir_u32(p, 0), NULL)));
	expect_one(p, NULL, VY_E_INVALID_PROGRAM, "entry[0].let.value.add.b", "operand");
}

Test(validate, every_independent_error_is_reported)
{
	struct vy_program *p = base();
	p->version = 3;
	vy_program_set_entry(
		p, vy_ir_seq(p, vy_ir_store(p, "in", vy_ir_u32(p, 0), vy_ir_u32(p, 0)),
			   vy_ir_let(p, "x", vy_ir_var(p, "nothing")),
			   vy_ir_if(p, vy_ir_gid(p, 0),
				   vy_ir_seq(p, vy_ir_barrier(p, VY_ORDER_SEQ_CST), NULL),
				   vy_ir_seq(p, NULL)),
			   NULL));
	cr_assert_eq(vy_validate(p, NULL, &errs), VY_E_INVALID_PROGRAM);
	cr_assert_eq(errs.len, 4, "%s", dump());
	cr_assert_str_eq(errs.items[0].at, "vyre");
	cr_assert_str_eq(errs.items[1].at, "entry[0].store");
	cr_assert_str_eq(errs.items[2].at, "entry[1].let.value");
	cr_assert_str_eq(errs.items[3].at, "entry[2].if.then[0].barrier");
	for (size_t i = 0; i < errs.len; i++) {
		cr_assert(errs.items[i].fix[0], "error %zu has no fix", i);
	}

	struct vy_err first;
	cr_assert_eq(vy_validate_first(p, NULL, &first), VY_E_INVALID_PROGRAM);
	cr_assert_str_eq(first.at, "vyre");
	cr_assert(strncmp(first.message, "4 errors; first: IR version 3", 29) == 0, "%s",
		first.message);
	cr_assert(strstr(first.fix, "version 1"));
	vy_program_destroy(p);
}

Test(validate, validate_first_keeps_a_single_message_and_clears_on_success)
{
	struct vy_program *p = base();
	one(p, vy_ir_store(p, "uni", vy_ir_u32(p, 0), vy_ir_u32(p, 0)));
	struct vy_err err;
	cr_assert_eq(vy_validate_first(p, NULL, &err), VY_E_INVALID_PROGRAM);
	cr_assert_eq(err.code, VY_E_INVALID_PROGRAM);
	cr_assert(strstr(err.message, "errors;") == NULL, "%s", err.message);
	vy_program_destroy(p);
	p = base();
	cr_assert_eq(vy_validate_first(p, NULL, &err), 0);
	cr_assert_eq(err.code, 0);
	cr_assert_eq(err.message[0], '\0');
	vy_program_destroy(p);
}

Test(validate, the_error_list_caps_and_counts_what_it_drops)
{
	struct vy_program *p = base();
	struct vy_node *nodes[100];
	for (int i = 0; i < 100; i++) {
		nodes[i] = vy_ir_store(p, "in", vy_ir_u32(p, 0), vy_ir_u32(p, 0));
	}
	vy_program_set_entry(p, vy_ir_seqv(p, nodes, 100));
	cr_assert_eq(vy_validate(p, NULL, &errs), VY_E_INVALID_PROGRAM);
	cr_assert_eq(errs.len, VY_ERR_LIST_MAX);
	cr_assert_eq(errs.dropped, 100 - VY_ERR_LIST_MAX);
	struct vy_err err;
	vy_validate_first(p, NULL, &err);
	cr_assert(strncmp(err.message, "100 errors; first:", 18) == 0, "%s", err.message);
	vy_program_destroy(p);
}
