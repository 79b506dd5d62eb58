/*
 * The math-library lowering (DESIGN.md §4.4): the walk that finds the operations to expand, binds
 * operands and effects to fresh lets in evaluation order, and the emitter primitives the
 * expansions (vmath_exp.c, vmath_log.c, vmath_trig.c) build on.
 *
 * The rewrite is copy-on-write: a statement, block or expression is copied when something below it
 * changes and reused otherwise, so a subexpression shared by two statements (possible in programs
 * built in C) is never edited under the other one, and a failed lowering leaves the program as it
 * was.
 */
#include "vmath.h"

#include "arena.h"
#include "vmath_emit.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t vy__vm_f32_bits(float v)
{
	uint32_t bits;
	memcpy(&bits, &v, sizeof(bits));
	return bits;
}

bool vy_vmath_lowers(enum vy_unop op)
{
	switch (op) {
	case VY_UN_INVERSE_SQRT:
	case VY_UN_RECIPROCAL:
	case VY_UN_EXP:
	case VY_UN_EXP2:
	case VY_UN_EXP10:
	case VY_UN_EXPM1:
	case VY_UN_LOG:
	case VY_UN_LOG2:
	case VY_UN_LOG10:
	case VY_UN_LOG1P:
	case VY_UN_CBRT:
	case VY_UN_SIN:
	case VY_UN_COS:
	case VY_UN_TAN:
	case VY_UN_ASIN:
	case VY_UN_ACOS:
	case VY_UN_ATAN:
	case VY_UN_SINH:
	case VY_UN_COSH:
	case VY_UN_TANH:
	case VY_UN_ERF:
	case VY_UN_ERFC:
	case VY_UN_EXP_CR:
	case VY_UN_EXP2_CR:
	case VY_UN_LOG_CR:
	case VY_UN_LOG2_CR:
		return true;
	default:
		return false;
	}
}

bool vy_vmath_lowers_binary(enum vy_binop op)
{
	return op == VY_BIN_HYPOT || op == VY_BIN_ATAN2 || op == VY_BIN_POW;
}

static bool is_lowered(const struct vy_expr *e)
{
	return (e->kind == VY_EXPR_UNARY && vy_vmath_lowers((enum vy_unop)e->op)) ||
	       (e->kind == VY_EXPR_BINARY && vy_vmath_lowers_binary((enum vy_binop)e->op));
}

/*
 * Expressions whose evaluation must keep its place among the others: loads and atomics (memory),
 * and i32 division and remainder, which may trap (DESIGN.md §4.5).
 */
static bool has_effect(const struct vy_expr *e)
{
	if (e->kind == VY_EXPR_LOAD || e->kind == VY_EXPR_ATOMIC) {
		return true;
	}
	return e->kind == VY_EXPR_BINARY && (e->op == VY_BIN_DIV || e->op == VY_BIN_MOD) &&
	       e->args[0]->type == VY_TYPE_I32;
}

static bool expr_needs(const struct vy_expr *e)
{
	if (is_lowered(e)) {
		return true;
	}
	for (uint32_t i = 0; i < e->nargs; i++) {
		if (expr_needs(e->args[i])) {
			return true;
		}
	}
	return false;
}

static uint32_t node_slots(const struct vy_node *n)
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

static bool node_slots_need(const struct vy_node *n)
{
	for (uint32_t i = 0; i < node_slots(n); i++) {
		if (expr_needs(n->args[i])) {
			return true;
		}
	}
	return false;
}

static bool block_needs(const struct vy_block *b);

static bool node_needs(const struct vy_node *n)
{
	return node_slots_need(n) || block_needs(&n->body) || block_needs(&n->orelse);
}

static bool block_needs(const struct vy_block *b)
{
	for (uint32_t i = 0; i < b->len; i++) {
		if (node_needs(b->items[i])) {
			return true;
		}
	}
	return false;
}

bool vy_vmath_needed(const struct vy_program *p)
{
	return block_needs(&p->entry);
}

/* Emitter primitives. */

static struct vy_expr *new_expr(struct vy__vm *m, const struct vy_expr *like)
{
	struct vy_expr *e = vy_arena_alloc(m->p->arena, sizeof(*e));
	*e = *like;
	return e;
}

struct vy_expr *vy__vm_lit(struct vy__vm *m, enum vy_type type, uint32_t bits)
{
	return vy_ir_lit(m->p, type, bits);
}

struct vy_expr *vy__vm_cp(struct vy__vm *m, const struct vy_expr *leaf)
{
	assert(leaf->kind == VY_EXPR_VAR || leaf->kind == VY_EXPR_LIT);
	return new_expr(m, leaf);
}

static void push_let(struct vy__vm *m, struct vy_node *n)
{
	if (m->n_lets == m->cap_lets) {
		m->cap_lets = m->cap_lets ? 2 * m->cap_lets : 64;
		m->lets = realloc(m->lets, m->cap_lets * sizeof(*m->lets));
		if (!m->lets) {
			fprintf(stderr, "vyred: out of memory in the math-library lowering\n");
			abort();
		}
	}
	m->lets[m->n_lets++] = n;
}

struct vy_expr *vy__vm_bind(struct vy__vm *m, struct vy_expr *value)
{
	char name[VY_IR_MAX_NAME + 1];
	int len = snprintf(name, sizeof(name), "%s%u", m->prefix, m->counter++);
	assert(len > 0 && len <= VY_IR_MAX_NAME);
	(void)len;
	push_let(m, vy_ir_let(m->p, name, value));
	struct vy_expr *var = vy_ir_var(m->p, name);
	var->type = value->type;
	return var;
}

uint32_t vy__vm_branch_begin(struct vy__vm *m)
{
	m->branches++;
	return m->n_lets;
}

void vy__vm_branch_end(struct vy__vm *m, uint32_t mark, const struct vy_expr *cond,
	const struct vy_expr *const *vars, struct vy_expr *const *values, uint32_t n,
	struct vy_expr **after)
{
	assert(m->branches > 0);
	m->branches--;
	/* The if stands where the statement does; its lets one level deeper. */
	if (m->depth + m->branches + 1 > VY_IR_MAX_NESTING) {
		for (uint32_t i = 0; i < n; i++) {
			after[i] = vy__vm_bind(m, vy__vm_sel(m, vy__vm_cp(m, cond), values[i],
							  vy__vm_cp(m, vars[i])));
		}
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		push_let(m, vy_ir_assign(m->p, vars[i]->name, values[i]));
		after[i] = vy__vm_cp(m, vars[i]);
	}
	struct vy_block body = vy_ir_seqv(m->p, m->lets + mark, m->n_lets - mark);
	m->n_lets = mark;
	struct vy_node *branch =
		vy_ir_if(m->p, vy__vm_cp(m, cond), body, vy_ir_seqv(m->p, NULL, 0));
	/* Named after its condition: a written if has no name, so the branch is told apart as
	 * inserted (vy_node_path_origins). */
	branch->name = vy_arena_strdup(m->p->arena, cond->name);
	push_let(m, branch);
}

static bool is_comparison(enum vy_binop op)
{
	return op == VY_BIN_EQ || op == VY_BIN_NE || op == VY_BIN_LT || op == VY_BIN_LE ||
	       op == VY_BIN_GT || op == VY_BIN_GE;
}

struct vy_expr *vy__vm_bin(struct vy__vm *m, enum vy_binop op, struct vy_expr *a, struct vy_expr *b)
{
	bool shift = op == VY_BIN_SHL || op == VY_BIN_SHR;
	assert(shift ? b->type == VY_TYPE_U32 : a->type == b->type);
	(void)shift;
	struct vy_expr *e = vy_ir_binary(m->p, op, a, b);
	e->type = is_comparison(op) ? VY_TYPE_BOOL : a->type;
	return e;
}

struct vy_expr *vy__vm_un(struct vy__vm *m, enum vy_unop op, struct vy_expr *a)
{
	assert(!vy_vmath_lowers(op));
	struct vy_expr *e = vy_ir_unary(m->p, op, a);
	e->type = a->type;
	return e;
}

struct vy_expr *vy__vm_sel(
	struct vy__vm *m, struct vy_expr *cond, struct vy_expr *a, struct vy_expr *b)
{
	assert(cond->type == VY_TYPE_BOOL && a->type == b->type);
	struct vy_expr *e = vy_ir_select(m->p, cond, a, b);
	e->type = a->type;
	return e;
}

struct vy_expr *vy__vm_cast(struct vy__vm *m, enum vy_type type, struct vy_expr *a)
{
	return vy_ir_cast(m->p, type, a);
}

struct vy_expr *vy__vm_bitcast(struct vy__vm *m, enum vy_type type, struct vy_expr *a)
{
	return vy_ir_bitcast(m->p, type, a);
}

struct vy_expr *vy__vm_fma(
	struct vy__vm *m, struct vy_expr *a, struct vy_expr *b, struct vy_expr *c)
{
	assert(a->type == VY_TYPE_F32 && b->type == VY_TYPE_F32 && c->type == VY_TYPE_F32);
	struct vy_expr *e = vy_ir_fma(m->p, a, b, c);
	e->type = VY_TYPE_F32;
	return e;
}

struct vy_expr *vy__vm_horner(struct vy__vm *m, const float *c, uint32_t n, const struct vy_expr *z)
{
	assert(n > 0);
	struct vy_expr *acc = fl(m, c[n - 1]);
	for (uint32_t k = n - 1; k-- > 0;) {
		acc = fma3(m, acc, cp(m, z), fl(m, c[k]));
	}
	return acc;
}

struct vy_expr *vy__vm_pow2(struct vy__vm *m, struct vy_expr *k)
{
	return vy__vm_bitcast(m, VY_TYPE_F32, shl(m, to_u32(m, add(m, k, il(m, 127))), ul(m, 23)));
}

/*
 * With h = n >> 1 (in [-85, 85]), A = 2^h is a normal f32 built in its exponent field, and
 * p * 2^n = ((p or 2p) * A) * A. Every intermediate stays within [2^-86, 2^87], so only the last
 * multiplication rounds, exactly as an ldexp would, overflowing to infinity or flushing to zero.
 */
struct vy_expr *vy__vm_scale2(struct vy__vm *m, struct vy_expr *p, const struct vy_expr *n)
{
	struct vy_expr *big = bind(m, vy__vm_pow2(m, shr(m, cp(m, n), ul(m, 1))));
	struct vy_expr *pb = bind(m, p);
	struct vy_expr *odd = ne(m, band(m, cp(m, n), il(m, 1)), il(m, 0));
	struct vy_expr *p2 = sel(m, odd, mul(m, cp(m, pb), fl(m, 2.0f)), cp(m, pb));
	return mul(m, mul(m, p2, cp(m, big)), cp(m, big));
}

struct vy_expr *vy__vm_log_split(struct vy__vm *m, const struct vy_expr *x, struct vy_expr **ef)
{
	struct vy_expr *bits = bind(m, vy__vm_bitcast(m, VY_TYPE_U32, cp(m, x)));
	struct vy_expr *m1 = bind(
		m, vy__vm_bitcast(m, VY_TYPE_F32,
			   bor(m, band(m, cp(m, bits), ul(m, 0x007FFFFFu)), ul(m, 0x3F800000u))));
	/* 0x3FB504F3, the f32 just below sqrt(2) */
	struct vy_expr *big = bind(m, gt(m, cp(m, m1), fl(m, 1.41421354f)));
	struct vy_expr *mm = bind(m, sel(m, cp(m, big), mul(m, cp(m, m1), fl(m, 0.5f)), cp(m, m1)));
	*ef = bind(
		m, to_f32(m, add(m, sub(m, to_i32(m, shr(m, cp(m, bits), ul(m, 23))), il(m, 127)),
				     sel(m, cp(m, big), il(m, 1), il(m, 0)))));
	return mm;
}

static struct vy_expr *expand(struct vy__vm *m, enum vy_unop op, const struct vy_expr *x)
{
	switch (op) {
	case VY_UN_INVERSE_SQRT:
		return divide(m, fl(m, 1.0f), sqrtv(m, cp(m, x)));
	case VY_UN_EXP:
		return vy__vm_exp(m, x);
	case VY_UN_EXP2:
		return vy__vm_exp2(m, x);
	case VY_UN_EXP10:
		return vy__vm_exp10(m, x);
	case VY_UN_EXPM1:
		return vy__vm_expm1(m, x);
	case VY_UN_LOG:
		return vy__vm_log(m, x);
	case VY_UN_LOG2:
		return vy__vm_log2(m, x);
	case VY_UN_LOG10:
		return vy__vm_log10(m, x);
	case VY_UN_LOG1P:
		return vy__vm_log1p(m, x);
	case VY_UN_CBRT:
		return vy__vm_cbrt(m, x);
	case VY_UN_SIN:
		return vy__vm_sin(m, x);
	case VY_UN_COS:
		return vy__vm_cos(m, x);
	case VY_UN_TAN:
		return vy__vm_tan(m, x);
	case VY_UN_ASIN:
		return vy__vm_asin(m, x);
	case VY_UN_ACOS:
		return vy__vm_acos(m, x);
	case VY_UN_ATAN:
		return vy__vm_atan(m, x);
	case VY_UN_SINH:
		return vy__vm_sinh(m, x);
	case VY_UN_COSH:
		return vy__vm_cosh(m, x);
	case VY_UN_TANH:
		return vy__vm_tanh(m, x);
	case VY_UN_ERF:
		return vy__vm_erf(m, x);
	case VY_UN_ERFC:
		return vy__vm_erfc(m, x);
	case VY_UN_EXP_CR:
		return vy__vm_exp_cr(m, x);
	case VY_UN_EXP2_CR:
		return vy__vm_exp2_cr(m, x);
	case VY_UN_LOG_CR:
		return vy__vm_log_cr(m, x);
	case VY_UN_LOG2_CR:
		return vy__vm_log2_cr(m, x);
	default:
		assert(!"not a lowered operation");
		return NULL;
	}
}

static struct vy_expr *expand_binary(
	struct vy__vm *m, enum vy_binop op, const struct vy_expr *x, const struct vy_expr *y)
{
	switch (op) {
	case VY_BIN_HYPOT:
		return vy__vm_hypot(m, x, y);
	case VY_BIN_ATAN2:
		return vy__vm_atan2(m, x, y);
	case VY_BIN_POW:
		return vy__vm_pow(m, x, y);
	default:
		assert(!"not a lowered operation");
		return NULL;
	}
}

static bool is_leaf(const struct vy_expr *e)
{
	return e->kind == VY_EXPR_VAR || e->kind == VY_EXPR_LIT;
}

/*
 * Rewrite one expression of a statement that needs lowering: operands first, left to right; then a
 * lowered operation becomes its expansion (bound, so the statement's expression gets no deeper),
 * and an expression with an effect is bound where it stands in the evaluation order.
 */
static struct vy_expr *rewrite(struct vy__vm *m, struct vy_expr *e)
{
	struct vy_expr *args[3] = {NULL, NULL, NULL};
	bool changed = false;
	for (uint32_t i = 0; i < e->nargs; i++) {
		args[i] = rewrite(m, e->args[i]);
		changed |= args[i] != e->args[i];
	}
	if (is_lowered(e)) {
		if (e->kind == VY_EXPR_UNARY && e->op == VY_UN_RECIPROCAL) {
			return divide(m, fl(m, 1.0f), args[0]);
		}
		struct vy_expr *x = is_leaf(args[0]) ? args[0] : bind(m, args[0]);
		if (e->kind == VY_EXPR_BINARY) {
			struct vy_expr *y = is_leaf(args[1]) ? args[1] : bind(m, args[1]);
			return bind(m, expand_binary(m, (enum vy_binop)e->op, x, y));
		}
		return bind(m, expand(m, (enum vy_unop)e->op, x));
	}
	struct vy_expr *out = e;
	if (changed) {
		out = new_expr(m, e);
		memcpy(out->args, args, sizeof(args));
	}
	return has_effect(e) ? bind(m, out) : out;
}

struct built {
	struct vy_node **items; /* owned (malloc) */
	uint32_t len;
	uint32_t cap;
};

static void built_push(struct built *b, struct vy_node *n)
{
	if (b->len == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 16;
		b->items = realloc(b->items, b->cap * sizeof(*b->items));
		if (!b->items) {
			fprintf(stderr, "vyred: out of memory in the math-library lowering\n");
			abort();
		}
	}
	b->items[b->len++] = n;
}

static bool lower_block(struct vy__vm *m, const struct vy_block *in, struct vy_block *out);

/*
 * Append the lowered form of `n` to `out`: the lets its expressions need, then the node (a copy
 * when anything in it changed). Returns whether anything changed.
 */
static bool lower_node(struct vy__vm *m, struct vy_node *n, struct built *out)
{
	struct vy_node *copy = NULL;
	if (node_slots_need(n)) {
		copy = vy_arena_alloc(m->p->arena, sizeof(*copy));
		*copy = *n;
		m->n_lets = 0;
		for (uint32_t i = 0; i < node_slots(n); i++) {
			copy->args[i] = rewrite(m, n->args[i]);
		}
		for (uint32_t i = 0; i < m->n_lets; i++) {
			built_push(out, m->lets[i]);
		}
		m->n_lets = 0;
	}
	struct vy_block body;
	struct vy_block orelse;
	m->depth++;
	bool changed = lower_block(m, &n->body, &body);
	changed |= lower_block(m, &n->orelse, &orelse);
	m->depth--;
	if (changed && !copy) {
		copy = vy_arena_alloc(m->p->arena, sizeof(*copy));
		*copy = *n;
	}
	if (!copy) {
		built_push(out, n);
		return false;
	}
	copy->body = body;
	copy->orelse = orelse;
	built_push(out, copy);
	return true;
}

/* Lower every node of `in` into *out; returns whether anything changed (else *out is *in). */
static bool lower_block(struct vy__vm *m, const struct vy_block *in, struct vy_block *out)
{
	struct built items = {NULL, 0, 0};
	bool changed = false;
	for (uint32_t i = 0; i < in->len; i++) {
		changed |= lower_node(m, in->items[i], &items);
	}
	*out = changed ? vy_ir_seqv(m->p, items.items, items.len) : *in;
	free(items.items);
	return changed;
}

/* Every name the program uses: buffers, variables, loop counters and specialization constants. */
struct names {
	const char **items; /* owned (malloc); the strings belong to the program */
	size_t len;
	size_t cap;
};

static void names_push(struct names *names, const char *name)
{
	if (!name) {
		return;
	}
	if (names->len == names->cap) {
		names->cap = names->cap ? 2 * names->cap : 64;
		names->items = realloc(names->items, names->cap * sizeof(*names->items));
		if (!names->items) {
			fprintf(stderr, "vyred: out of memory in the math-library lowering\n");
			abort();
		}
	}
	names->items[names->len++] = name;
}

static void names_expr(struct names *names, const struct vy_expr *e)
{
	if (e->kind == VY_EXPR_VAR || e->kind == VY_EXPR_SPEC) {
		names_push(names, e->name);
	}
	for (uint32_t i = 0; i < e->nargs; i++) {
		names_expr(names, e->args[i]);
	}
}

static void names_block(struct names *names, const struct vy_block *b)
{
	for (uint32_t i = 0; i < b->len; i++) {
		const struct vy_node *n = b->items[i];
		if (n->kind == VY_NODE_LET || n->kind == VY_NODE_ASSIGN ||
			n->kind == VY_NODE_LOOP) {
			names_push(names, n->name);
		}
		for (uint32_t s = 0; s < node_slots(n); s++) {
			names_expr(names, n->args[s]);
		}
		names_block(names, &n->body);
		names_block(names, &n->orelse);
	}
}

static bool prefix_used(const struct names *names, const char *prefix)
{
	size_t len = strlen(prefix);
	for (size_t i = 0; i < names->len; i++) {
		if (strncmp(names->items[i], prefix, len) == 0) {
			return true;
		}
	}
	return false;
}

/* "_vm", or "_vm<k>_" for the first k that no name of the program starts with. */
static const char *choose_prefix(struct vy_program *p)
{
	struct names names = {NULL, 0, 0};
	for (uint32_t i = 0; i < p->n_buffers; i++) {
		names_push(&names, p->buffers[i].name);
	}
	names_block(&names, &p->entry);
	char prefix[24] = "_vm";
	for (uint32_t k = 0; prefix_used(&names, prefix); k++) {
		snprintf(prefix, sizeof(prefix), "_vm%u_", k);
	}
	free(names.items);
	return vy_arena_strdup(p->arena, prefix);
}

int vy_vmath_lower(struct vy_program *p, struct vy_err *err)
{
	if (!vy_vmath_needed(p)) {
		return 0;
	}
	struct vy__vm m = {.p = p, .prefix = choose_prefix(p), .depth = 1};
	struct vy_block entry;
	lower_block(&m, &p->entry, &entry);
	free(m.lets);
	uint32_t nodes = vy_block_count_nodes(&entry);
	if (nodes > VY_IR_MAX_NODES) {
		return vy_err_set(err, VY_E_UNSUPPORTED_FEATURE, "entry",
			"use fewer math functions in the program, or split it into several "
			"dispatches",
			"expanding the math functions (exp, sin, ...) would make the program %u "
			"nodes "
			"long, above the limit of %u",
			nodes, (unsigned)VY_IR_MAX_NODES);
	}
	p->entry = entry;
	return 0;
}
