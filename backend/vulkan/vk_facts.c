/*
 * What the code generator can prove about a program before it writes a line of it
 * (docs/architecture.md, "What the generator proves"):
 *
 *   - the names that some `assign` targets: every other variable keeps the value its `let` or its
 *     loop gave it, so what is known of that value holds wherever the name is in scope;
 *   - the range of a u32 index: an interval [lo, hi] that holds every value the expression can
 *     take when the launch has the program's own workgroup size. Literals, local ids, the
 *     variables of loops and lets, and the arithmetic that cannot wrap on the interval: anything
 *     else is the whole range. A workgroup buffer's bounds check is left out where the range
 *     ends below the buffer's count, under that workgroup size (the shader's vy_wg_own);
 *   - the values that depend on what only the run can know (a load, gid, ...): an add, sub or
 *     mul of such a value runs on the device, never in a compiler's constant folding, which
 *     keeps subnormals where the device flushes them (vk_codegen_lib.c, flushes_subnormals);
 *   - the buffers a barrier must order: the non-workgroup buffers the program stores to or
 *     updates atomically. A barrier fences buffer memory only when an access to one of them may
 *     come before it in the invocation (before it in the program, or anywhere in a loop around
 *     it); otherwise no invocation has a buffer access that another could race with across it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_codegen_internal.h"

static const struct vy__vk_range full = {0, UINT32_MAX};

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void *grow(void *p, size_t n, size_t size)
{
	void *q = realloc(p, n * size);
	if (!q) {
		fprintf(stderr, "vyred: out of memory reading a program's facts\n");
		abort();
	}
	return q;
}

static void written_in_expr(struct vy__vk_gen *g, const struct vy_expr *e)
{
	if (!e) {
		return;
	}
	if (e->kind == VY_EXPR_ATOMIC) {
		uint32_t b = vy__vk_buffer_find(g, e->name);
		if (g->p->buffers[b].access != VY_ACCESS_WORKGROUP) {
			g->written |= UINT32_C(1) << b;
		}
	}
	for (uint32_t i = 0; i < e->nargs; i++) {
		written_in_expr(g, e->args[i]);
	}
}

static void scan_block(struct vy__vk_gen *g, const struct vy_block *b, uint32_t *cap)
{
	for (uint32_t i = 0; i < b->len; i++) {
		const struct vy_node *x = b->items[i];
		if (x->kind == VY_NODE_ASSIGN) {
			if (g->n_assigned == *cap) {
				*cap = *cap ? *cap * 2 : 16;
				g->assigned = grow(g->assigned, *cap, sizeof(*g->assigned));
			}
			g->assigned[g->n_assigned++] = x->name;
		}
		if (x->kind == VY_NODE_STORE) {
			uint32_t k = vy__vk_buffer_find(g, x->name);
			if (g->p->buffers[k].access != VY_ACCESS_WORKGROUP) {
				g->written |= UINT32_C(1) << k;
			}
		}
		written_in_expr(g, x->args[0]);
		written_in_expr(g, x->args[1]);
		scan_block(g, &x->body, cap);
		scan_block(g, &x->orelse, cap);
	}
}

void vy__vk_facts_init(struct vy__vk_gen *g)
{
	uint32_t cap = 0;
	scan_block(g, &g->p->entry, &cap);
	if (g->n_assigned > 1) {
		qsort(g->assigned, g->n_assigned, sizeof(*g->assigned), name_cmp);
	}
}

void vy__vk_facts_finish(struct vy__vk_gen *g)
{
	free(g->assigned);
	g->assigned = NULL;
	g->n_assigned = 0;
}

bool vy__vk_assigned(const struct vy__vk_gen *g, const char *name)
{
	return g->n_assigned > 0 &&
	       bsearch(&name, g->assigned, g->n_assigned, sizeof(*g->assigned), name_cmp);
}

/* ---- Ranges ---- */

static struct vy__vk_range span(uint64_t lo, uint64_t hi)
{
	if (hi > UINT32_MAX || lo > hi) {
		return full;
	}
	return (struct vy__vk_range){(uint32_t)lo, (uint32_t)hi};
}

static struct vy__vk_range binary_range(
	enum vy_binop op, struct vy__vk_range a, struct vy__vk_range b)
{
	switch (op) {
	case VY_BIN_ADD:
		return span((uint64_t)a.lo + b.lo, (uint64_t)a.hi + b.hi);
	case VY_BIN_SUB:
		return a.lo >= b.hi ? span((uint64_t)a.lo - b.hi, (uint64_t)a.hi - b.lo) : full;
	case VY_BIN_MUL:
		return span((uint64_t)a.lo * b.lo, (uint64_t)a.hi * b.hi);
	case VY_BIN_DIV:
		/* x / 0 is 0xFFFFFFFF */
		return b.lo > 0 ? span(a.lo / b.hi, a.hi / b.lo) : full;
	case VY_BIN_MOD:
		/* x % 0 is 0, and x % y < y */
		return span(0, b.hi > 0 && b.hi - 1 < a.hi ? b.hi - 1 : a.hi);
	case VY_BIN_BIT_AND:
		return span(0, a.hi < b.hi ? a.hi : b.hi);
	case VY_BIN_SHR:
		/* the shift counts modulo 32 */
		return b.lo == b.hi ? span(a.lo >> (b.lo & 31u), a.hi >> (b.lo & 31u))
				    : span(0, a.hi);
	case VY_BIN_MIN:
		return span(a.lo < b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi);
	case VY_BIN_MAX:
		return span(a.lo > b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi);
	default:
		return full;
	}
}

struct vy__vk_range vy__vk_range_of(const struct vy__vk_gen *g, const struct vy_expr *e)
{
	switch (e->kind) {
	case VY_EXPR_LIT:
		return e->type == VY_TYPE_U32 ? span(e->bits, e->bits) : full;
	case VY_EXPR_VAR:
		return e->type == VY_TYPE_U32 && !vy__vk_assigned(g, e->name)
			       ? vy__vk_var_range(g, e->name)
			       : full;
	case VY_EXPR_LID:
		return span(0, (uint64_t)g->p->workgroup_size[e->bits] - 1);
	case VY_EXPR_BINARY:
		if (e->type != VY_TYPE_U32) {
			return full;
		}
		return binary_range((enum vy_binop)e->op, vy__vk_range_of(g, e->args[0]),
			vy__vk_range_of(g, e->args[1]));
	case VY_EXPR_SELECT: {
		if (e->type != VY_TYPE_U32) {
			return full;
		}
		struct vy__vk_range a = vy__vk_range_of(g, e->args[1]);
		struct vy__vk_range b = vy__vk_range_of(g, e->args[2]);
		return span(a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi);
	}
	default:
		return full;
	}
}

struct vy__vk_range vy__vk_loop_range(const struct vy__vk_gen *g, const struct vy_node *loop)
{
	struct vy__vk_range from = vy__vk_range_of(g, loop->args[0]);
	struct vy__vk_range to = vy__vk_range_of(g, loop->args[1]);
	/* The variable runs from `from` while below the bound read at the start; a loop that
	 * never runs leaves its range unused. */
	return to.hi == 0 ? span(0, 0) : span(from.lo, (uint64_t)to.hi - 1);
}

bool vy__vk_index_within(const struct vy__vk_gen *g, const struct vy_expr *idx, uint32_t count)
{
	return vy__vk_range_of(g, idx).hi < count;
}

/* ---- Values no compiler knows ---- */

bool vy__vk_varying(const struct vy__vk_gen *g, const struct vy_expr *e)
{
	switch (e->kind) {
	case VY_EXPR_LOAD:
	case VY_EXPR_ATOMIC:
	case VY_EXPR_GID:
	case VY_EXPR_WGID:
	case VY_EXPR_LEN:
	case VY_EXPR_SUBGROUP_REDUCE:
	case VY_EXPR_SUBGROUP_SHUFFLE:
	case VY_EXPR_SUBGROUP_BALLOT:
		return true;
	case VY_EXPR_VAR:
		return vy__vk_var_varying(g, e->name);
	default:
		for (uint32_t i = 0; i < e->nargs; i++) {
			if (vy__vk_varying(g, e->args[i])) {
				return true;
			}
		}
		return false;
	}
}

/* ---- Buffer accesses a barrier orders ---- */

bool vy__vk_expr_touches(const struct vy__vk_gen *g, const struct vy_expr *e)
{
	if (!e) {
		return false;
	}
	if ((e->kind == VY_EXPR_LOAD || e->kind == VY_EXPR_ATOMIC) &&
		(g->written & (UINT32_C(1) << vy__vk_buffer_find(g, e->name)))) {
		return true;
	}
	for (uint32_t i = 0; i < e->nargs; i++) {
		if (vy__vk_expr_touches(g, e->args[i])) {
			return true;
		}
	}
	return false;
}

bool vy__vk_node_touches(const struct vy__vk_gen *g, const struct vy_node *n)
{
	if (n->kind == VY_NODE_STORE &&
		(g->written & (UINT32_C(1) << vy__vk_buffer_find(g, n->name)))) {
		return true;
	}
	return vy__vk_expr_touches(g, n->args[0]) || vy__vk_expr_touches(g, n->args[1]) ||
	       vy__vk_block_touches(g, &n->body) || vy__vk_block_touches(g, &n->orelse);
}

bool vy__vk_block_touches(const struct vy__vk_gen *g, const struct vy_block *b)
{
	for (uint32_t i = 0; i < b->len; i++) {
		if (vy__vk_node_touches(g, b->items[i])) {
			return true;
		}
	}
	return false;
}

/* ---- Loops whose body may run twice ---- */

static bool expr_replayable(const struct vy_expr *e, bool *f32_mul)
{
	if (!e) {
		return true;
	}
	switch (e->kind) {
	case VY_EXPR_ATOMIC:
	case VY_EXPR_SUBGROUP_REDUCE:
	case VY_EXPR_SUBGROUP_SHUFFLE:
	case VY_EXPR_SUBGROUP_BALLOT:
		return false;
	case VY_EXPR_BINARY:
		if ((e->op == VY_BIN_DIV || e->op == VY_BIN_MOD) && e->type == VY_TYPE_I32) {
			return false;
		}
		*f32_mul = *f32_mul || (e->op == VY_BIN_MUL && e->type == VY_TYPE_F32);
		break;
	default:
		break;
	}
	for (uint32_t i = 0; i < e->nargs; i++) {
		if (!expr_replayable(e->args[i], f32_mul)) {
			return false;
		}
	}
	return true;
}

bool vy__vk_block_replayable(const struct vy_block *b, bool *f32_mul)
{
	for (uint32_t i = 0; i < b->len; i++) {
		const struct vy_node *x = b->items[i];
		switch (x->kind) {
		case VY_NODE_LET:
		case VY_NODE_ASSIGN:
		case VY_NODE_IF:
		case VY_NODE_BLOCK:
		case VY_NODE_REGION:
			break;
		default:
			return false;
		}
		if (!expr_replayable(x->args[0], f32_mul) ||
			!expr_replayable(x->args[1], f32_mul) ||
			!vy__vk_block_replayable(&x->body, f32_mul) ||
			!vy__vk_block_replayable(&x->orelse, f32_mul)) {
			return false;
		}
	}
	return true;
}
