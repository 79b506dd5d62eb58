/*
 * The execution engine of the reference interpreter: the grid runs one workgroup after another
 * in linear order (x fastest), and each workgroup runs in lock step, as a GPU runs a subgroup:
 * every node is executed once for the list of active lanes, and every expression is evaluated
 * into an array holding one value per lane. `if` runs its then block with the lanes whose
 * condition holds and its else block with the others; `loop` iterates while any lane still has
 * iterations left; `return` and traps end a lane for the rest of the invocation. Lock step makes
 * a barrier a check rather than a wait: the active lanes must be every live lane of the
 * workgroup, and otherwise the dispatch fails, where a GPU would hang or misbehave.
 *
 * Where DESIGN.md leaves room:
 *   loop limit       counted per invocation over all of its loops: each iteration of any loop
 *                    counts one, and the iteration that would exceed max_loop_iterations traps
 *                    loop_limit at its loop instead of running.
 *   traps            an invocation's first trap ends it (later operations of the same node
 *                    neither trap again nor store, nor apply atomics); the other invocations
 *                    run to the end, and the dispatch reports the trap site with the smallest
 *                    vy_trap_key (lowest node number, then kind) over all invocations.
 *   subgroups        subgroup k of a workgroup is the lanes k*S .. k*S+S-1 of the linear local
 *                    index lid.x + lid.y*wx + lid.z*wx*wy, S the simulated subgroup size; the
 *                    last one is partial when S does not divide the workgroup size.
 *   subgroup_reduce  combines the active lanes of the subgroup in ascending lane order, one
 *                    operation at a time (so an f32 sum rounds after every addition).
 *   subgroup_ballot  bit k is lane k; lanes from 32 up are not represented.
 *   subgroup_shuffle the value of the given lane of the subgroup when that lane is below S,
 *                    exists and is active; 0 otherwise.
 *   atomics          applied lane by lane in ascending lane order within a node; workgroups
 *                    in linear order.
 *   if               the then block runs before the else block, so their atomics and stores
 *                    happen in that order.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "err.h"
#include "interp.h"
#include "spec.h"

/* Memory one run may take for its lane arrays; beyond it the program is refused. */
#define RUN_MEMORY_MAX ((size_t)512 * 1024 * 1024)

/* Loop iterations between two looks at the clock when a deadline is set. */
#define DEADLINE_EVERY 1024u

struct ref_exec {
	const struct ref_prog *rp;
	const struct ref_run_config *cfg;
	struct vy_err *err;

	uint32_t n;  /* lanes of a workgroup */
	uint32_t sg; /* simulated subgroup size */
	uint32_t wg[3];
	uint32_t wgid[3];
	uint64_t wg_linear;

	uint32_t *bw[VY_IR_MAX_BUFFERS]; /* words of each buffer, workgroup ones included */
	uint32_t bc[VY_IR_MAX_BUFFERS];
	uint8_t btype[VY_IR_MAX_BUFFERS];
	uint32_t *shared; /* every workgroup buffer, back to back */
	size_t shared_words;
	uint32_t *spec_values;

	/* One allocation holds every lane array below. */
	void *block;
	uint32_t *lid[3];
	uint32_t *slots;   /* n_slots arrays */
	uint32_t *scratch; /* two arrays per expression level */
	uint32_t *tmp;     /* two arrays for a node's own operands */
	uint32_t *sg_acc;  /* one value per subgroup */
	uint8_t *sg_has;
	uint8_t *active; /* lanes of the current subgroup operation */
	uint8_t *alive;
	uint64_t *iters;
	uint16_t *lists; /* (nesting + 1) lane lists */
	uint32_t lists_used;

	uint32_t n_alive;
	uint64_t deaths; /* lanes ended so far: lists are filtered when it moves */
	uint32_t cur_node;
	uint64_t steps;

	uint64_t trap_key;
	uint64_t trap_wg;
	uint32_t trap_lane;
	uint64_t trapped;
};

uint64_t vy__ref_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

static inline uint32_t *slot(struct ref_exec *x, uint32_t s)
{
	return x->slots + (size_t)s * x->n;
}

static void kill_lane(struct ref_exec *x, uint32_t lane)
{
	if (x->alive[lane]) {
		x->alive[lane] = 0;
		x->n_alive--;
		x->deaths++;
	}
}

void vy__ref_trap(struct ref_exec *x, uint32_t lane, enum vy_trap_kind kind)
{
	if (!x->alive[lane]) {
		return;
	}
	uint64_t key = vy_trap_key(x->cur_node, kind);
	if (key < x->trap_key) {
		x->trap_key = key;
		x->trap_wg = x->wg_linear;
		x->trap_lane = lane;
	}
	x->trapped++;
	kill_lane(x, lane);
}

static void filter_alive(struct ref_exec *x, struct ref_lanes *lanes)
{
	uint32_t m = 0;
	for (uint32_t k = 0; k < lanes->n; k++) {
		uint16_t l = lanes->at[k];
		if (x->alive[l]) {
			lanes->at[m++] = l;
		}
	}
	lanes->n = m;
}

static struct ref_lanes list_push(struct ref_exec *x)
{
	assert(x->lists_used <= x->rp->nesting);
	struct ref_lanes lanes = {x->lists + (size_t)x->lists_used * x->n, 0};
	x->lists_used++;
	return lanes;
}

static void fill(const struct ref_lanes *lanes, uint32_t *out, uint32_t v)
{
	for (uint32_t k = 0; k < lanes->n; k++) {
		out[lanes->at[k]] = v;
	}
}

static void copy_lanes(const struct ref_lanes *lanes, uint32_t *dst, const uint32_t *src)
{
	if (dst == src) {
		return;
	}
	for (uint32_t k = 0; k < lanes->n; k++) {
		uint32_t l = lanes->at[k];
		dst[l] = src[l];
	}
}

static const uint32_t *eval(struct ref_exec *x, const struct ref_expr *e,
	const struct ref_lanes *lanes, uint32_t *out, uint32_t depth);

static void subgroup_reduce(struct ref_exec *x, const struct ref_expr *e,
	const struct ref_lanes *lanes, const uint32_t *v, uint32_t *out)
{
	uint32_t groups = (x->n + x->sg - 1) / x->sg;
	memset(x->sg_has, 0, groups);
	for (uint32_t k = 0; k < lanes->n; k++) {
		uint32_t l = lanes->at[k];
		uint32_t g = l / x->sg;
		if (!x->sg_has[g]) {
			x->sg_acc[g] = v[l];
			x->sg_has[g] = 1;
		} else {
			x->sg_acc[g] = vy__ref_reduce_step((enum vy_reduce_op)e->op,
				(enum vy_type)e->atype, x->sg_acc[g], v[l]);
		}
	}
	for (uint32_t k = 0; k < lanes->n; k++) {
		uint32_t l = lanes->at[k];
		out[l] = x->sg_acc[l / x->sg];
	}
}

static void subgroup_shuffle(struct ref_exec *x, const struct ref_lanes *lanes, const uint32_t *v,
	const uint32_t *from, uint32_t *out)
{
	for (uint32_t k = 0; k < lanes->n; k++) {
		x->active[lanes->at[k]] = 1;
	}
	for (uint32_t k = 0; k < lanes->n; k++) {
		uint32_t l = lanes->at[k];
		uint32_t src = l - l % x->sg + from[l];
		bool ok = from[l] < x->sg && src < x->n && x->active[src];
		out[l] = ok ? v[src] : 0;
	}
	for (uint32_t k = 0; k < lanes->n; k++) {
		x->active[lanes->at[k]] = 0;
	}
}

static void subgroup_ballot(
	struct ref_exec *x, const struct ref_lanes *lanes, const uint32_t *cond, uint32_t *out)
{
	uint32_t groups = (x->n + x->sg - 1) / x->sg;
	memset(x->sg_acc, 0, (size_t)groups * sizeof(*x->sg_acc));
	for (uint32_t k = 0; k < lanes->n; k++) {
		uint32_t l = lanes->at[k];
		uint32_t bit = l % x->sg;
		if (cond[l] && bit < 32) {
			x->sg_acc[l / x->sg] |= UINT32_C(1) << bit;
		}
	}
	for (uint32_t k = 0; k < lanes->n; k++) {
		uint32_t l = lanes->at[k];
		out[l] = x->sg_acc[l / x->sg];
	}
}

/*
 * Evaluate `e` for the active lanes. The result is written to `out`, except for a variable or a
 * local id, whose array is returned as it is; operands go to `out` and to the two scratch arrays
 * of `depth`, and their own operands one level deeper.
 */
static const uint32_t *eval(struct ref_exec *x, const struct ref_expr *e,
	const struct ref_lanes *lanes, uint32_t *out, uint32_t depth)
{
	uint32_t *s0 = x->scratch + (size_t)depth * 2 * x->n;
	uint32_t *s1 = s0 + x->n;
	const uint32_t *a;
	const uint32_t *b;
	const uint32_t *c;
	switch ((enum vy_expr_kind)e->kind) {
	case VY_EXPR_LIT:
		fill(lanes, out, e->imm);
		break;
	case VY_EXPR_VAR:
		return slot(x, e->imm);
	case VY_EXPR_LOAD:
		a = eval(x, e->args[0], lanes, out, depth + 1);
		vy__ref_load(x->bw[e->imm], x->bc[e->imm], (enum vy_type)x->btype[e->imm], lanes, a,
			out);
		break;
	case VY_EXPR_LEN:
		fill(lanes, out, x->bc[e->imm]);
		break;
	case VY_EXPR_GID: {
		uint32_t base = x->wgid[e->imm] * x->wg[e->imm];
		const uint32_t *lid = x->lid[e->imm];
		for (uint32_t k = 0; k < lanes->n; k++) {
			uint32_t l = lanes->at[k];
			out[l] = base + lid[l];
		}
		break;
	}
	case VY_EXPR_LID:
		return x->lid[e->imm];
	case VY_EXPR_WGID:
		fill(lanes, out, x->wgid[e->imm]);
		break;
	case VY_EXPR_BINARY:
		a = eval(x, e->args[0], lanes, out, depth + 1);
		b = eval(x, e->args[1], lanes, s0, depth + 1);
		if (e->atype == VY_TYPE_F32) {
			vy__ref_f32_binary((enum vy_binop)e->op, lanes, a, b, out);
		} else {
			vy__ref_int_binary(
				x, (enum vy_binop)e->op, (enum vy_type)e->atype, lanes, a, b, out);
		}
		break;
	case VY_EXPR_UNARY:
		a = eval(x, e->args[0], lanes, out, depth + 1);
		if (e->atype == VY_TYPE_F32) {
			vy__ref_f32_unary((enum vy_unop)e->op, lanes, a, out);
		} else {
			vy__ref_int_unary(
				(enum vy_unop)e->op, (enum vy_type)e->atype, lanes, a, out);
		}
		break;
	case VY_EXPR_SELECT:
		c = eval(x, e->args[0], lanes, out, depth + 1);
		a = eval(x, e->args[1], lanes, s0, depth + 1);
		b = eval(x, e->args[2], lanes, s1, depth + 1);
		for (uint32_t k = 0; k < lanes->n; k++) {
			uint32_t l = lanes->at[k];
			out[l] = c[l] ? a[l] : b[l];
		}
		break;
	case VY_EXPR_CAST:
		a = eval(x, e->args[0], lanes, out, depth + 1);
		vy__ref_cast((enum vy_type)e->atype, (enum vy_type)e->type, lanes, a, out);
		break;
	case VY_EXPR_BITCAST:
		a = eval(x, e->args[0], lanes, out, depth + 1);
		vy__ref_bitcast((enum vy_type)e->type, lanes, a, out);
		break;
	case VY_EXPR_FMA:
		a = eval(x, e->args[0], lanes, out, depth + 1);
		b = eval(x, e->args[1], lanes, s0, depth + 1);
		c = eval(x, e->args[2], lanes, s1, depth + 1);
		vy__ref_f32_fma(lanes, a, b, c, out);
		break;
	case VY_EXPR_ATOMIC: {
		a = eval(x, e->args[0], lanes, out, depth + 1);
		const uint32_t *expected = NULL;
		if (e->op == VY_ATOMIC_COMPARE_EXCHANGE) {
			expected = eval(x, e->args[1], lanes, s0, depth + 1);
			b = eval(x, e->args[2], lanes, s1, depth + 1);
		} else {
			b = eval(x, e->args[1], lanes, s0, depth + 1);
		}
		vy__ref_atomic(x->bw[e->imm], x->bc[e->imm], (enum vy_atomic_op)e->op, lanes,
			x->alive, a, expected, b, out);
		break;
	}
	case VY_EXPR_SPEC:
		fill(lanes, out, x->spec_values[e->imm]);
		break;
	case VY_EXPR_SUBGROUP_REDUCE:
		a = eval(x, e->args[0], lanes, out, depth + 1);
		subgroup_reduce(x, e, lanes, a, out);
		break;
	case VY_EXPR_SUBGROUP_SHUFFLE:
		/* Lanes read each other's values, so neither operand may live in `out`. */
		a = eval(x, e->args[0], lanes, s0, depth + 1);
		b = eval(x, e->args[1], lanes, s1, depth + 1);
		subgroup_shuffle(x, lanes, a, b, out);
		break;
	case VY_EXPR_SUBGROUP_BALLOT:
		a = eval(x, e->args[0], lanes, out, depth + 1);
		subgroup_ballot(x, lanes, a, out);
		break;
	case VY_EXPR_SUBGROUP_LANE:
		for (uint32_t k = 0; k < lanes->n; k++) {
			uint32_t l = lanes->at[k];
			out[l] = l % x->sg;
		}
		break;
	case VY_EXPR_SUBGROUP_SIZE:
		fill(lanes, out, x->sg);
		break;
	case VY_EXPR_KIND_COUNT:
		assert(!"expression kind outside the enum");
		break;
	}
	return out;
}

static int past_deadline(struct ref_exec *x)
{
	if (x->cfg->deadline_ns == 0 || vy__ref_now_ns() < x->cfg->deadline_ns) {
		return 0;
	}
	return vy_err_set(x->err, VY_E_TIMEOUT, NULL,
		"raise config.timeout_ms, or split the work into smaller dispatches",
		"the dispatch ran past its timeout of %" PRIu32 " ms", x->cfg->timeout_ms);
}

static int exec_block(struct ref_exec *x, const struct ref_block *b, struct ref_lanes *lanes);

static int exec_barrier(struct ref_exec *x, const struct ref_node *r, const struct ref_lanes *lanes)
{
	if (lanes->n == x->n_alive) {
		return 0;
	}
	char at[VY_ERR_AT_MAX];
	vy_node_path(ref_prog_written(x->rp), r->index, at, sizeof(at));
	return vy_err_set(x->err, VY_E_DISPATCH_FAILED, at,
		"move the barrier into uniform control flow, where every live invocation of the "
		"workgroup reaches it",
		"barrier %s reached by %" PRIu32 " of the %" PRIu32
		" live invocations of workgroup %" PRIu64 "; the others would never arrive",
		at, lanes->n, x->n_alive, x->wg_linear);
}

static int exec_loop(struct ref_exec *x, const struct ref_node *r, const struct ref_lanes *lanes)
{
	uint32_t *var = slot(x, r->slot);
	uint32_t *bound = slot(x, r->slot + 1);
	copy_lanes(lanes, var, eval(x, r->args[0], lanes, var, 0));
	copy_lanes(lanes, bound, eval(x, r->args[1], lanes, bound, 0));

	struct ref_lanes cur = list_push(x);
	for (uint32_t k = 0; k < lanes->n; k++) {
		uint16_t l = lanes->at[k];
		if (x->alive[l] && var[l] < bound[l]) {
			cur.at[cur.n++] = l;
		}
	}
	uint64_t max = x->cfg->max_loop_iterations;
	int rc = 0;
	while (cur.n > 0) {
		uint64_t deaths = x->deaths;
		x->cur_node = r->index;
		for (uint32_t k = 0; k < cur.n; k++) {
			uint16_t l = cur.at[k];
			if (++x->iters[l] > max) {
				vy__ref_trap(x, l, VY_TRAP_LOOP_LIMIT);
			}
		}
		if (x->deaths != deaths) {
			filter_alive(x, &cur);
		}
		rc = exec_block(x, &r->body, &cur);
		if (rc) {
			break;
		}
		uint32_t m = 0;
		for (uint32_t k = 0; k < cur.n; k++) {
			uint16_t l = cur.at[k];
			if (++var[l] < bound[l]) {
				cur.at[m++] = l;
			}
		}
		cur.n = m;
		if ((++x->steps % DEADLINE_EVERY) == 0) {
			rc = past_deadline(x);
			if (rc) {
				break;
			}
		}
	}
	x->lists_used--;
	return rc;
}

static int exec_node(struct ref_exec *x, const struct ref_node *r, struct ref_lanes *lanes)
{
	x->cur_node = r->index;
	int rc = 0;
	switch ((enum vy_node_kind)r->kind) {
	case VY_NODE_LET: {
		uint32_t *dst = slot(x, r->slot);
		copy_lanes(lanes, dst, eval(x, r->args[0], lanes, dst, 0));
		break;
	}
	case VY_NODE_ASSIGN:
		/* Evaluated aside: the value may read the variable after an operand wrote `out`. */
		copy_lanes(lanes, slot(x, r->slot), eval(x, r->args[0], lanes, x->tmp, 0));
		break;
	case VY_NODE_STORE: {
		const uint32_t *idx = eval(x, r->args[0], lanes, x->tmp, 0);
		const uint32_t *val = eval(x, r->args[1], lanes, x->tmp + x->n, 0);
		uint32_t bi = r->buffer;
		vy__ref_store(x->bw[bi], x->bc[bi], (enum vy_type)x->btype[bi], lanes, x->alive,
			idx, val);
		break;
	}
	case VY_NODE_IF: {
		const uint32_t *cond = eval(x, r->args[0], lanes, x->tmp, 0);
		struct ref_lanes then_lanes = list_push(x);
		struct ref_lanes else_lanes = list_push(x);
		for (uint32_t k = 0; k < lanes->n; k++) {
			uint16_t l = lanes->at[k];
			if (!x->alive[l]) {
				continue;
			}
			struct ref_lanes *to = cond[l] ? &then_lanes : &else_lanes;
			to->at[to->n++] = l;
		}
		rc = exec_block(x, &r->body, &then_lanes);
		if (rc == 0) {
			rc = exec_block(x, &r->orelse, &else_lanes);
		}
		x->lists_used -= 2;
		break;
	}
	case VY_NODE_LOOP:
		rc = exec_loop(x, r, lanes);
		break;
	case VY_NODE_RETURN:
		for (uint32_t k = 0; k < lanes->n; k++) {
			kill_lane(x, lanes->at[k]);
		}
		break;
	case VY_NODE_BLOCK:
	case VY_NODE_REGION:
		rc = exec_block(x, &r->body, lanes);
		break;
	case VY_NODE_BARRIER:
		rc = exec_barrier(x, r, lanes);
		break;
	case VY_NODE_KIND_COUNT:
		assert(!"node kind outside the enum");
		break;
	}
	return rc;
}

/* Run the block for `lanes`, dropping lanes from the list as they end. */
static int exec_block(struct ref_exec *x, const struct ref_block *b, struct ref_lanes *lanes)
{
	for (uint32_t i = 0; i < b->len && lanes->n > 0; i++) {
		uint64_t deaths = x->deaths;
		int rc = exec_node(x, &b->items[i], lanes);
		if (rc) {
			return rc;
		}
		if (x->deaths != deaths) {
			filter_alive(x, lanes);
		}
	}
	return 0;
}

static const char *spec_kind_name(enum vy_spec_kind kind)
{
	switch (kind) {
	case VY_SPEC_U32:
		return "u32";
	case VY_SPEC_I32:
		return "i32";
	case VY_SPEC_F32:
		return "f32";
	case VY_SPEC_BOOL:
		return "bool";
	case VY_SPEC_DTYPE:
		return "a type";
	}
	return "?";
}

/* The value of every spec constant: config.spec's where given, else the default. */
static int resolve_specs(struct ref_exec *x, uint32_t *values)
{
	const struct ref_prog *rp = x->rp;
	for (uint32_t i = 0; i < rp->n_specs; i++) {
		const struct ref_spec *s = &rp->specs[i];
		const struct vy_spec_value *v =
			x->cfg->spec ? vy_spec_map_get(x->cfg->spec, s->name) : NULL;
		if (!v) {
			values[i] = s->bits;
			continue;
		}
		bool ok = true;
		switch (s->type) {
		case VY_TYPE_U32:
			ok = v->kind == VY_SPEC_U32;
			values[i] = v->as.u32;
			break;
		case VY_TYPE_I32:
			ok = v->kind == VY_SPEC_I32;
			values[i] = (uint32_t)v->as.i32;
			break;
		case VY_TYPE_F32:
			ok = v->kind == VY_SPEC_F32;
			values[i] = ref_bits(v->as.f32);
			break;
		default:
			ok = v->kind == VY_SPEC_BOOL;
			values[i] = v->as.b ? 1 : 0;
			break;
		}
		if (!ok) {
			char at[VY_ERR_AT_MAX];
			char fix[VY_ERR_FIX_MAX];
			const char *type = vy_type_name((enum vy_type)s->type);
			snprintf(at, sizeof(at), "config.spec.%.64s", s->name);
			snprintf(fix, sizeof(fix), "give config.spec.%.64s a value of type %s",
				s->name, type);
			return vy_err_set(x->err, VY_E_BAD_REQUEST, at, fix,
				"spec constant \"%.64s\" is %s, but config.spec gives %s", s->name,
				type, spec_kind_name(v->kind));
		}
	}
	return 0;
}

/* Carve the lane arrays of a run out of one allocation, or refuse a run too large to hold. */
static int alloc_lanes(struct ref_exec *x)
{
	const struct ref_prog *rp = x->rp;
	size_t n = x->n;
	size_t words = 3 * n + ((size_t)rp->n_slots + 2 * ((size_t)rp->expr_depth + 1) + 2 + 1) * n;
	size_t bytes = words * sizeof(uint32_t) + n * sizeof(uint64_t) + 3 * n +
		       ((size_t)rp->nesting + 1) * n * sizeof(uint16_t);
	if (bytes > RUN_MEMORY_MAX) {
		return vy_err_set(x->err, VY_E_OUT_OF_MEMORY, NULL,
			"keep fewer variables live at once, or use a smaller workgroup",
			"the program needs %zu MiB of invocation state per workgroup, more than "
			"the reference interpreter's %zu MiB",
			bytes >> 20, RUN_MEMORY_MAX >> 20);
	}
	uint8_t *p = calloc(1, bytes);
	if (!p) {
		return vy_err_set(x->err, VY_E_OUT_OF_MEMORY, NULL,
			"keep fewer variables live at once, use a smaller workgroup, or retry "
			"later",
			"no memory for %zu MiB of invocation state", bytes >> 20);
	}
	/* Widest elements first, so that every array is aligned for its type. */
	x->block = p;
	x->iters = (uint64_t *)p;
	uint32_t *w = (uint32_t *)(p + n * sizeof(uint64_t));
	for (int a = 0; a < 3; a++) {
		x->lid[a] = w;
		w += n;
	}
	x->slots = w;
	w += (size_t)rp->n_slots * n;
	x->scratch = w;
	w += 2 * ((size_t)rp->expr_depth + 1) * n;
	x->tmp = w;
	w += 2 * n;
	x->sg_acc = w;
	w += n;
	x->lists = (uint16_t *)w;
	p = (uint8_t *)(x->lists + ((size_t)rp->nesting + 1) * n);
	x->sg_has = p;
	x->active = p + n;
	x->alive = p + 2 * n;
	return 0;
}

static void bind_buffers(struct ref_exec *x, struct ref_mem *mem)
{
	const struct vy_program *p = x->rp->program;
	size_t shared = 0;
	for (uint32_t i = 0; i < p->n_buffers; i++) {
		x->btype[i] = (uint8_t)p->buffers[i].type;
		x->bc[i] = mem->count[i];
		x->bw[i] = mem->words[i];
		if (p->buffers[i].access == VY_ACCESS_WORKGROUP) {
			x->bc[i] = p->buffers[i].count;
			shared += p->buffers[i].count;
		}
	}
	x->shared_words = shared;
	if (shared == 0) {
		return;
	}
	x->shared = calloc(shared, sizeof(uint32_t));
	if (!x->shared) {
		fprintf(stderr, "vyred: out of memory allocating workgroup memory\n");
		abort();
	}
	size_t off = 0;
	for (uint32_t i = 0; i < p->n_buffers; i++) {
		if (p->buffers[i].access == VY_ACCESS_WORKGROUP) {
			x->bw[i] = x->shared + off;
			off += p->buffers[i].count;
		}
	}
}

static int trap_error(struct ref_exec *x)
{
	uint32_t node = (uint32_t)(x->trap_key / VY_TRAP_KIND_COUNT);
	enum vy_trap_kind kind = (enum vy_trap_kind)(x->trap_key % VY_TRAP_KIND_COUNT);
	char at[VY_ERR_AT_MAX];
	vy_node_path(ref_prog_written(x->rp), node, at, sizeof(at));
	char fix[VY_ERR_FIX_MAX];
	switch (kind) {
	case VY_TRAP_INT_DIV_ZERO:
		snprintf(fix, sizeof(fix),
			"guard the i32 division or remainder so the divisor is never zero");
		break;
	case VY_TRAP_INT_OVERFLOW_DIV:
		snprintf(fix, sizeof(fix),
			"guard the i32 division or remainder against -2147483648 divided by -1");
		break;
	default:
		snprintf(fix, sizeof(fix),
			"bound the loop, or raise config.max_loop_iterations (now %" PRIu64
			") if the work needs more iterations",
			x->cfg->max_loop_iterations);
		break;
	}
	return vy_err_set(x->err, VY_E_TRAP, at, fix,
		"trap %s at %s (workgroup %" PRIu64 ", local invocation %" PRIu32 "); %" PRIu64
		" invocation(s) trapped",
		vy_trap_kind_name(kind), at, x->trap_wg, x->trap_lane, x->trapped);
}

static int run_grid(struct ref_exec *x, const struct vy_launch *launch, struct ref_lanes *root)
{
	const uint32_t *grid = launch->grid;
	uint64_t plane = (uint64_t)grid[0] * grid[1];
	for (uint64_t w = 0; w < launch->logical_workgroups; w++) {
		x->wg_linear = w;
		x->wgid[0] = (uint32_t)(w % grid[0]);
		x->wgid[1] = (uint32_t)((w / grid[0]) % grid[1]);
		x->wgid[2] = (uint32_t)(w / plane);
		if (x->shared_words) {
			memset(x->shared, 0, x->shared_words * sizeof(uint32_t));
		}
		memset(x->alive, 1, x->n);
		if (x->rp->has_loops) {
			memset(x->iters, 0, x->n * sizeof(*x->iters));
		}
		x->n_alive = x->n;
		x->lists_used = 1;
		root->n = x->n;
		for (uint32_t l = 0; l < x->n; l++) {
			root->at[l] = (uint16_t)l;
		}
		int rc = exec_block(x, &x->rp->entry, root);
		if (rc == 0 && (w % 64) == 63) {
			rc = past_deadline(x);
		}
		if (rc) {
			return rc;
		}
	}
	return 0;
}

int vy__ref_run(const struct ref_prog *rp, struct ref_mem *mem, const struct vy_launch *launch,
	const struct ref_run_config *cfg, struct vy_err *err)
{
	assert(cfg->subgroup_size >= 1 && cfg->max_loop_iterations >= 1);
	struct ref_exec *x = calloc(1, sizeof(*x));
	if (!x) {
		fprintf(stderr, "vyred: out of memory starting a run\n");
		abort();
	}
	x->rp = rp;
	x->cfg = cfg;
	x->err = err;
	x->sg = cfg->subgroup_size;
	x->trap_key = UINT64_MAX;
	memcpy(x->wg, launch->workgroup_size, sizeof(x->wg));
	uint64_t n = (uint64_t)x->wg[0] * x->wg[1] * x->wg[2];
	assert(n >= 1 && n <= REF_MAX_INVOCATIONS);
	x->n = (uint32_t)n;

	x->spec_values = calloc(rp->n_specs ? rp->n_specs : 1, sizeof(uint32_t));
	if (!x->spec_values) {
		fprintf(stderr, "vyred: out of memory starting a run\n");
		abort();
	}
	int rc = resolve_specs(x, x->spec_values);
	if (rc == 0) {
		rc = alloc_lanes(x);
	}
	if (rc == 0) {
		for (uint32_t l = 0; l < x->n; l++) {
			x->lid[0][l] = l % x->wg[0];
			x->lid[1][l] = (l / x->wg[0]) % x->wg[1];
			x->lid[2][l] = l / (x->wg[0] * x->wg[1]);
		}
		bind_buffers(x, mem);
		struct ref_lanes root = {x->lists, 0};
		rc = run_grid(x, launch, &root);
	}
	if (rc == 0 && x->trap_key != UINT64_MAX) {
		rc = trap_error(x);
	}
	free(x->shared);
	free(x->block);
	free(x->spec_values);
	free(x);
	return rc;
}
