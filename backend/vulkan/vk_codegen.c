/*
 * The code generator of the Vulkan backend: the shader's interface (bindings, push constants,
 * specialization constants, the trap sidecar), the prologue that computes the program's ids,
 * folds the grid and zeroes workgroup memory, the statements of the program, and the decoding of
 * the trap sidecar. Expressions are in vk_codegen_expr.c, the GLSL helper library in
 * vk_codegen_lib.c.
 *
 * GLSL names: helpers and the prologue's variables start with `vy_`, temporaries are `t<n>`,
 * and a user name gets a numbered prefix (`v<n>_` variables, `b<n>_` buffers, `s<n>_` spec
 * constants) before a cosmetic copy of the name with its leading underscores dropped and runs of
 * underscores collapsed, so no generated name collides with another, with a GLSL keyword or
 * builtin, or contains the reserved "__".
 *
 * Traps end the invocation with `return`. An invocation that traps before a barrier leaves its
 * workgroup's other invocations at a barrier it never reaches; the dispatch fails with TRAP
 * anyway, and what a device does with such a barrier (wait for the invocations that are still
 * running, as lavapipe and NVIDIA do) only decides the contents of buffers that are not returned.
 */
#include "vk_codegen.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node_path.h"
#include "vk_codegen_internal.h"

/* ---- Text ---- */

static void reserve(struct vy__vk_str *s, size_t more)
{
	if (s->len + more + 1 <= s->cap) {
		return;
	}
	size_t cap = s->cap ? s->cap : 4096;
	while (cap < s->len + more + 1) {
		cap *= 2;
	}
	char *data = realloc(s->data, cap);
	if (!data) {
		fprintf(stderr, "vyred: out of memory generating a shader\n");
		abort();
	}
	s->data = data;
	s->cap = cap;
}

void vy__vk_str_add(struct vy__vk_str *s, const char *text)
{
	size_t n = strlen(text);
	reserve(s, n);
	memcpy(s->data + s->len, text, n + 1);
	s->len += n;
}

static void str_vaddf(struct vy__vk_str *s, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

static void str_vaddf(struct vy__vk_str *s, const char *fmt, va_list ap)
{
	va_list again;
	va_copy(again, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	assert(n >= 0);
	reserve(s, (size_t)n);
	vsnprintf(s->data + s->len, (size_t)n + 1, fmt, again);
	va_end(again);
	s->len += (size_t)n;
}

void vy__vk_str_addf(struct vy__vk_str *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	str_vaddf(s, fmt, ap);
	va_end(ap);
}

void vy__vk_str_finish(struct vy__vk_str *s)
{
	free(s->data);
	*s = (struct vy__vk_str){0};
}

void vy__vk_line(struct vy__vk_gen *g, const char *fmt, ...)
{
	reserve(&g->body, g->indent + 1);
	for (uint32_t i = 0; i < g->indent; i++) {
		g->body.data[g->body.len++] = '\t';
	}
	va_list ap;
	va_start(ap, fmt);
	str_vaddf(&g->body, fmt, ap);
	va_end(ap);
	vy__vk_str_add(&g->body, "\n");
}

int vy__vk_fail(struct vy__vk_gen *g, int code, const char *fix, const char *fmt, ...)
{
	if (g->rc) {
		return g->rc;
	}
	g->rc = code;
	if (!g->err) {
		return code;
	}
	char at[VY_ERR_AT_MAX];
	bool located = vy_node_path(g->p, g->node, at, sizeof(at)) == 0;
	va_list ap;
	va_start(ap, fmt);
	vy_err_setv(g->err, code, located ? at : NULL, fix, fmt, ap);
	va_end(ap);
	return code;
}

/* ---- Names ---- */

/* `prefix` and `n`, then the cosmetic copy of `name` described at the top of the file. */
static void ident(char *buf, size_t size, char prefix, uint32_t n, const char *name)
{
	int used = snprintf(buf, size, "%c%u_", prefix, n);
	assert(used > 0 && (size_t)used < size);
	size_t at = (size_t)used;
	bool after_underscore = true;
	for (const char *c = name; *c && at + 1 < size; c++) {
		if (*c == '_' && after_underscore) {
			continue;
		}
		after_underscore = *c == '_';
		buf[at++] = *c;
	}
	buf[at] = '\0';
}

static uint32_t bucket(const char *name)
{
	uint32_t h = 2166136261u;
	for (const char *c = name; *c; c++) {
		h = (h ^ (uint8_t)*c) * 16777619u;
	}
	return h & (VY__VK_VAR_HEADS - 1);
}

static void var_push(struct vy__vk_gen *g, const char *name, uint32_t id, struct vy__vk_range range,
	enum vy_type type, bool loose, bool varying)
{
	if (g->n_vars == g->cap_vars) {
		uint32_t cap = g->cap_vars ? g->cap_vars * 2 : 64;
		struct vy__vk_var *vars = realloc(g->vars, (size_t)cap * sizeof(*vars));
		if (!vars) {
			fprintf(stderr, "vyred: out of memory generating a shader\n");
			abort();
		}
		g->vars = vars;
		g->cap_vars = cap;
	}
	uint32_t b = bucket(name);
	g->vars[g->n_vars] =
		(struct vy__vk_var){name, id, g->heads[b], range, type, loose, varying};
	g->heads[b] = (int32_t)g->n_vars;
	g->n_vars++;
}

/* Drop the variables pushed since the stack held `mark` entries. */
static void var_pop_to(struct vy__vk_gen *g, uint32_t mark)
{
	while (g->n_vars > mark) {
		const struct vy__vk_var *v = &g->vars[--g->n_vars];
		g->heads[bucket(v->name)] = v->next;
	}
}

/* The innermost binding of a name in scope; the program is validated, so it is there. */
static const struct vy__vk_var *var_find(const struct vy__vk_gen *g, const char *name)
{
	for (int32_t i = g->heads[bucket(name)]; i >= 0; i = g->vars[i].next) {
		if (strcmp(g->vars[i].name, name) == 0) {
			return &g->vars[i];
		}
	}
	return NULL;
}

void vy__vk_var_ident(const struct vy__vk_gen *g, const char *name, char *buf, size_t size)
{
	const struct vy__vk_var *v = var_find(g, name);
	assert(v && "variable out of scope in a validated program");
	if (v) {
		ident(buf, size, 'v', v->id, name);
	} else {
		snprintf(buf, size, "0u");
	}
}

struct vy__vk_range vy__vk_var_range(const struct vy__vk_gen *g, const char *name)
{
	const struct vy__vk_var *v = var_find(g, name);
	return v ? v->range : (struct vy__vk_range){0, UINT32_MAX};
}

bool vy__vk_var_loose(const struct vy__vk_gen *g, const char *name)
{
	const struct vy__vk_var *v = var_find(g, name);
	return !v || v->loose;
}

bool vy__vk_var_varying(const struct vy__vk_gen *g, const char *name)
{
	const struct vy__vk_var *v = var_find(g, name);
	return v && v->varying;
}

uint32_t vy__vk_buffer_find(const struct vy__vk_gen *g, const char *name)
{
	for (uint32_t i = 0; i < g->p->n_buffers; i++) {
		if (strcmp(g->p->buffers[i].name, name) == 0) {
			return i;
		}
	}
	assert(!"unknown buffer in a validated program");
	return 0;
}

void vy__vk_buffer_array(const struct vy__vk_gen *g, uint32_t buffer, char *buf, size_t size)
{
	const struct vy_buffer *b = &g->p->buffers[buffer];
	ident(buf, size, 'b', buffer, b->name);
	if (b->access != VY_ACCESS_WORKGROUP) {
		size_t n = strlen(buf);
		snprintf(buf + n, size - n, ".d");
	}
}

void vy__vk_buffer_len(const struct vy__vk_gen *g, uint32_t buffer, char *buf, size_t size)
{
	const struct vy_buffer *b = &g->p->buffers[buffer];
	if (b->access == VY_ACCESS_WORKGROUP) {
		snprintf(buf, size, "%uu", b->count);
		return;
	}
	snprintf(buf, size, "vy_len%u", g->vk_binding[buffer]);
}

void vy__vk_spec_ident(const struct vy__vk_gen *g, const char *name, char *buf, size_t size)
{
	for (uint32_t i = 0; i < g->layout->n_spec; i++) {
		const struct vy_vk_spec *s = &g->layout->spec[i];
		if (strcmp(s->name, name) == 0) {
			ident(buf, size, 's', s->constant_id, name);
			return;
		}
	}
	assert(!"spec constant missing from the layout");
	snprintf(buf, size, "0u");
}

void vy__vk_trap_if(struct vy__vk_gen *g, const char *cond, unsigned kind)
{
	/* Node numbers stay below VY_IR_MAX_NODES, so the key fits 32 bits. */
	uint64_t key = vy_trap_key(g->node, (enum vy_trap_kind)kind);
	assert(key < UINT32_MAX);
	g->uses |= VY__VK_USE(TRAP);
	vy__vk_line(g, "if (%s) {", cond);
	vy__vk_line(g, "\tvy_trap_raise(%uu);", (uint32_t)key);
	vy__vk_line(g, "\treturn;");
	vy__vk_line(g, "}");
}

/* ---- Interface ---- */

/* Non-workgroup buffers by binding number, ties in program order: the binding plan's order. */
static void plan_bindings(const struct vy_program *p, struct vy_vk_shader_layout *layout)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < p->n_buffers; i++) {
		const struct vy_buffer *b = &p->buffers[i];
		if (b->access == VY_ACCESS_WORKGROUP) {
			continue;
		}
		uint32_t at = n;
		while (at > 0 &&
			p->buffers[layout->bindings[at - 1].buffer_index].binding > b->binding) {
			layout->bindings[at] = layout->bindings[at - 1];
			at--;
		}
		layout->bindings[at] = (struct vy_vk_binding){
			.buffer_index = i,
			.read_only =
				b->access == VY_ACCESS_READ_ONLY || b->access == VY_ACCESS_UNIFORM,
		};
		n++;
	}
	for (uint32_t k = 0; k < n; k++) {
		layout->bindings[k].vk_binding = k;
	}
	layout->n_bindings = n;
	layout->trap_binding = n;
	layout->trap_bytes = VY_VK_TRAP_BYTES;
	layout->stop_binding = n + 1;
	layout->push_constant_bytes = (uint32_t)sizeof(struct vy_vk_push);
}

/* Insert a spec constant in name order; false when the table is full. */
static bool spec_add(struct vy_vk_shader_layout *layout, const struct vy_expr *e)
{
	uint32_t at = 0;
	while (at < layout->n_spec) {
		int c = strcmp(layout->spec[at].name, e->name);
		if (c == 0) {
			return true;
		}
		if (c > 0) {
			break;
		}
		at++;
	}
	if (layout->n_spec == VY_VK_MAX_SPEC) {
		return false;
	}
	memmove(&layout->spec[at + 1], &layout->spec[at],
		(layout->n_spec - at) * sizeof(layout->spec[0]));
	layout->spec[at] = (struct vy_vk_spec){
		.name = e->name,
		.type = e->type,
		.default_bits = e->bits,
	};
	layout->n_spec++;
	return true;
}

static bool specs_in_expr(struct vy_vk_shader_layout *layout, const struct vy_expr *e)
{
	if (e->kind == VY_EXPR_SPEC && !spec_add(layout, e)) {
		return false;
	}
	for (uint32_t i = 0; i < e->nargs; i++) {
		if (e->args[i] && !specs_in_expr(layout, e->args[i])) {
			return false;
		}
	}
	return true;
}

static bool specs_in_block(struct vy_vk_shader_layout *layout, const struct vy_block *b)
{
	for (uint32_t i = 0; i < b->len; i++) {
		const struct vy_node *n = b->items[i];
		for (uint32_t k = 0; k < 2; k++) {
			if (n->args[k] && !specs_in_expr(layout, n->args[k])) {
				return false;
			}
		}
		if (!specs_in_block(layout, &n->body) || !specs_in_block(layout, &n->orelse)) {
			return false;
		}
	}
	return true;
}

/* ---- Statements ---- */

static void block(struct vy__vk_gen *g, const struct vy_block *b);

static void store(struct vy__vk_gen *g, const struct vy_node *n)
{
	struct vy__vk_val idx, val;
	vy__vk_expr(g, n->args[0], &idx);
	vy__vk_expr(g, n->args[1], &val);
	if (g->rc) {
		return;
	}
	uint32_t b = vy__vk_buffer_find(g, n->name);
	char arr[160], len[160];
	vy__vk_buffer_array(g, b, arr, sizeof(arr));
	vy__vk_buffer_len(g, b, len, sizeof(len));
	vy__vk_index(g, &idx);
	bool within = g->p->buffers[b].access == VY_ACCESS_WORKGROUP &&
		      vy__vk_index_within(g, n->args[0], g->p->buffers[b].count);
	vy__vk_line(g, "if (%s%s < %s) {", within ? "vy_wg_own || " : "", idx.text, len);
	/* A loose f32 is canonicalized; a bool is stored as the word 1 or 0. */
	char word[160];
	vy__vk_seen(g, &val, word, sizeof(word));
	if (g->coarse.reg & (UINT32_C(1) << b)) {
		/* The element's register (vk_coarse.c): written back after the calls. */
		vy__vk_line(g, "\tvy_r%u = %s;", b, word);
		vy__vk_line(g, "\tvy_st |= %uu;", UINT32_C(1) << b);
		vy__vk_line(g, "}");
		return;
	}
	vy__vk_line(g, "\t%s[%s] = %s;", arr, idx.text, word);
	vy__vk_line(g, "}");
}

/*
 * Long loops on a device whose driver ends them (vy_vk_codegen_options.loop_passes): llvmpipe
 * counts every pass through every loop of an invocation against one budget of 65,535 and leaves
 * the loop it is in when the budget is spent, so nesting a long loop under another one would not
 * help. What helps is fewer passes: an innermost loop runs its body up to UNROLL_MAX times per
 * pass, and a short loop with literal bounds is written out whole, with no GLSL loop. UNROLL_NODES
 * bounds the IR nodes and expressions a loop grows to.
 */
#define UNROLL_NODES 192u
#define UNROLL_MAX 16u

static uint32_t expr_size(const struct vy_expr *e)
{
	uint32_t n = 1;
	for (uint32_t i = 0; e && i < e->nargs; i++) {
		n += expr_size(e->args[i]);
	}
	return n;
}

/* Iterations of a loop as far as its literal bounds tell, or UINT64_MAX. */
static uint64_t static_trips(const struct vy_node *n)
{
	const struct vy_expr *from = n->args[0];
	const struct vy_expr *to = n->args[1];
	if (to->kind != VY_EXPR_LIT) {
		return UINT64_MAX;
	}
	uint64_t lo = from->kind == VY_EXPR_LIT ? from->bits : 0;
	return to->bits > lo ? to->bits - lo : 0;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
	return a != 0 && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

/*
 * Loop counts of the block when it runs `times` times, a loop of n iterations counting
 * n + `extra`, or UINT64_MAX when a bound is not a literal: with extra 1, the loop passes as the
 * driver counts them (the last pass leaves the loop); with extra 0, the iterations as the shader
 * counts them.
 */
static uint64_t block_loops(const struct vy_block *b, uint64_t times, uint64_t extra)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < b->len; i++) {
		const struct vy_node *x = b->items[i];
		if (x->kind == VY_NODE_LOOP) {
			uint64_t trips = static_trips(x);
			n = sat_add(n, sat_mul(times, sat_add(trips, extra)));
			n = sat_add(n, block_loops(&x->body, sat_mul(times, trips), extra));
		} else {
			n = sat_add(n, block_loops(&x->body, times, extra));
			n = sat_add(n, block_loops(&x->orelse, times, extra));
		}
	}
	return n;
}

/* Nodes and expressions of a block, its nested blocks included. */
static uint64_t block_size(const struct vy_block *b)
{
	uint64_t size = 0;
	for (uint32_t i = 0; i < b->len; i++) {
		const struct vy_node *x = b->items[i];
		size += 1 + block_size(&x->body) + block_size(&x->orelse);
		for (uint32_t k = 0; k < 2; k++) {
			size += x->args[k] ? expr_size(x->args[k]) : 0;
		}
	}
	return size;
}

/* The prologue's loops that zero workgroup memory, one pass per workgroup-sized slice. */
static uint64_t prologue_passes(const struct vy_program *p)
{
	uint64_t wsize =
		(uint64_t)p->workgroup_size[0] * p->workgroup_size[1] * p->workgroup_size[2];
	uint64_t passes = 0;
	for (uint32_t i = 0; i < p->n_buffers && wsize > 0; i++) {
		if (p->buffers[i].access == VY_ACCESS_WORKGROUP) {
			passes += (p->buffers[i].count + wsize - 1) / wsize + 1;
		}
	}
	return passes;
}

/* A block as written out: its IR nodes and expressions, loops with their copies, and whether it
 * holds a GLSL loop. */
struct shaped {
	uint32_t size;
	bool loops;
};

static uint32_t size_add(uint32_t a, uint64_t b)
{
	uint64_t sum = a + b;
	return sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum;
}

/* The shape of loop `n` whose body, written out once, is `body`. */
static struct vy__vk_loop_shape choose_shape(const struct vy_node *n, struct shaped body)
{
	struct vy__vk_loop_shape plain = {1, false};
	uint64_t trips = static_trips(n);
	if (trips == 0 || body.loops) {
		return plain;
	}
	uint64_t size = body.size > 0 ? body.size : 1;
	if (trips <= UNROLL_MAX && trips * size <= UNROLL_NODES) {
		return (struct vy__vk_loop_shape){(uint32_t)trips, true};
	}
	uint64_t copies = UNROLL_NODES / size;
	copies = copies > UNROLL_MAX ? UNROLL_MAX : copies;
	return copies < 2 ? plain : (struct vy__vk_loop_shape){(uint32_t)copies, false};
}

/*
 * Choose the shape of every loop of the block, whose first node has the preorder number *next,
 * innermost loops first: a loop whose body holds no GLSL loop any more may itself be copied.
 */
static struct shaped shape_block(struct vy__vk_gen *g, const struct vy_block *b, uint32_t *next)
{
	struct shaped total = {0, false};
	for (uint32_t i = 0; i < b->len; i++) {
		const struct vy_node *x = b->items[i];
		uint32_t self = (*next)++;
		uint64_t own = 1;
		for (uint32_t k = 0; k < 2; k++) {
			own += x->args[k] ? expr_size(x->args[k]) : 0;
		}
		struct shaped body = shape_block(g, &x->body, next);
		struct shaped orelse = shape_block(g, &x->orelse, next);
		if (x->kind == VY_NODE_LOOP) {
			struct vy__vk_loop_shape sh = choose_shape(x, body);
			g->shapes[self] = sh;
			body.size = size_add(0, (uint64_t)body.size * sh.copies);
			body.loops = !sh.whole;
		}
		total.size = size_add(size_add(size_add(total.size, own), body.size), orelse.size);
		total.loops = total.loops || body.loops || orelse.loops;
	}
	return total;
}

/* The start of one iteration: count it, trap past the limit, and look at the stop word. */
static void iteration_head(struct vy__vk_gen *g)
{
	if (g->guarded) {
		vy__vk_line(g, "if (vy_counted) {");
		g->indent++;
	}
	vy__vk_line(g, "vy_it_lo += 1u;");
	vy__vk_line(g, "if (vy_it_lo == 0u) {");
	vy__vk_line(g, "\tvy_it_hi += 1u;");
	vy__vk_line(g, "}");
	vy__vk_trap_if(g,
		"vy_it_hi > vy_pc.loop_limit_hi || "
		"(vy_it_hi == vy_pc.loop_limit_hi && vy_it_lo > vy_pc.loop_limit_lo)",
		VY_TRAP_LOOP_LIMIT);
	vy__vk_line(
		g, "if ((vy_it_lo & %uu) == 0u && vy_stop.word != 0u) {", VY_VK_STOP_PERIOD - 1);
	vy__vk_line(g, "\treturn;");
	vy__vk_line(g, "}");
	if (g->guarded) {
		g->indent--;
		vy__vk_line(g, "}");
	}
}

/* One iteration's body, named by the IR's node numbers whichever copy it is. */
static void iteration_body(struct vy__vk_gen *g, const struct vy_node *n, uint32_t id)
{
	uint32_t mark = g->n_vars;
	var_push(g, n->name, id, vy__vk_loop_range(g, n), VY_TYPE_U32, false,
		vy__vk_varying(g, n->args[0]) || vy__vk_varying(g, n->args[1]));
	block(g, &n->body);
	var_pop_to(g, mark);
}

static bool holds_loop(const struct vy_block *b)
{
	for (uint32_t i = 0; i < b->len; i++) {
		const struct vy_node *x = b->items[i];
		if (x->kind == VY_NODE_LOOP || holds_loop(&x->body) || holds_loop(&x->orelse)) {
			return true;
		}
	}
	return false;
}

/*
 * The head of one pass of a copied loop that takes its iterations from the loop limit at once:
 * `step`, the iterations left to the bound but no more than `copies` nor than the limit still
 * allows, counted at once, so the count is what one count per iteration gives; `over` is set when
 * the limit, not the bound, made the step. Returns the temporary that holds the pass's end,
 * v + step.
 */
static uint32_t reserving_head(
	struct vy__vk_gen *g, const char *v, uint32_t bound, uint32_t over, uint32_t copies)
{
	uint32_t t = g->next_temp;
	g->next_temp += 5;
	/* t: borrow, room left under the limit, this pass's iterations, the end, the old count */
	vy__vk_line(g, "uint t%u;", t);
	if (g->guarded) {
		/* An uncounted launch has all the room it can use. */
		vy__vk_line(g, "uint t%u = 0xFFFFFFFFu;", t + 1);
		vy__vk_line(g, "if (vy_counted) {");
		g->indent++;
		vy__vk_line(g, "t%u = usubBorrow(vy_pc.loop_limit_lo, vy_it_lo, t%u);", t + 1, t);
	} else {
		vy__vk_line(
			g, "uint t%u = usubBorrow(vy_pc.loop_limit_lo, vy_it_lo, t%u);", t + 1, t);
	}
	vy__vk_line(g, "if (vy_pc.loop_limit_hi - vy_it_hi - t%u != 0u) {", t);
	vy__vk_line(g, "\tt%u = 0xFFFFFFFFu;", t + 1);
	vy__vk_line(g, "}");
	if (g->guarded) {
		g->indent--;
		vy__vk_line(g, "}");
	}
	vy__vk_line(g, "uint t%u = %s < t%u ? min(t%u - %s, %uu) : 0u;", t + 2, v, bound, bound, v,
		copies);
	vy__vk_line(g, "t%u = t%u < t%u;", over, t + 1, t + 2);
	vy__vk_line(g, "t%u = min(t%u, t%u);", t + 2, t + 1, t + 2);
	vy__vk_line(g, "uint t%u = %s + t%u;", t + 3, v, t + 2);
	if (g->guarded) {
		vy__vk_line(g, "if (vy_counted) {");
		g->indent++;
	}
	vy__vk_line(g, "uint t%u = vy_it_lo;", t + 4);
	vy__vk_line(g, "vy_it_lo = uaddCarry(vy_it_lo, t%u, t%u);", t + 2, t);
	vy__vk_line(g, "vy_it_hi += t%u;", t);
	vy__vk_line(g, "if (((t%u ^ vy_it_lo) & 0x%08Xu) != 0u && vy_stop.word != 0u) {", t + 4,
		~(VY_VK_STOP_PERIOD - 1));
	vy__vk_line(g, "\treturn;");
	vy__vk_line(g, "}");
	if (g->guarded) {
		g->indent--;
		vy__vk_line(g, "}");
	}
	return t + 3;
}

/*
 * A loop written as copies of its body (struct vy__vk_loop_shape); a whole loop is one pass and
 * no GLSL loop, its copies all the iterations it can have. Each copy runs while the variable is
 * below the pass's end. Where the body holds no loop, the pass takes its iterations from the loop
 * limit at once (reserving_head), and when the limit ends the pass the loop traps there: the next
 * iteration would exceed it. Where the body holds a (whole) loop, whose iterations count as they
 * run, each copy counts its own iteration first, as a plain loop does, so that the iteration that
 * exceeds the limit traps at the loop it belongs to.
 */
static void copied_loop(struct vy__vk_gen *g, const struct vy_node *n, uint32_t id, const char *v,
	uint32_t bound, struct vy__vk_loop_shape shape)
{
	uint32_t self = g->node;
	bool reserve = !holds_loop(&n->body);
	uint32_t over = 0;
	if (reserve) {
		over = g->next_temp++;
		vy__vk_line(g, "bool t%u = false;", over);
	}
	if (shape.whole) {
		vy__vk_line(g, "{");
	} else {
		vy__vk_line(g, "while (%s < t%u) {", v, bound);
	}
	g->indent++;
	uint32_t end;
	if (reserve) {
		end = reserving_head(g, v, bound, over, shape.copies);
	} else {
		end = g->next_temp++;
		vy__vk_line(g, "uint t%u = %s < t%u ? %s + min(t%u - %s, %uu) : %s;", end, v, bound,
			v, bound, v, shape.copies, v);
	}
	uint32_t first = g->next_node;
	for (uint32_t c = 0; c < shape.copies && !g->rc; c++) {
		g->next_node = first;
		g->node = self;
		if (shape.whole) {
			vy__vk_line(g, "if (%s < t%u) {", v, end);
		} else {
			vy__vk_line(g, "if (%s >= t%u) {", v, end);
			vy__vk_line(g, "\tbreak;");
			vy__vk_line(g, "}");
			vy__vk_line(g, "{");
		}
		g->indent++;
		if (!reserve) {
			iteration_head(g);
		}
		iteration_body(g, n, id);
		vy__vk_line(g, "++%s;", v);
		g->indent--;
		vy__vk_line(g, "}");
	}
	if (!shape.whole) {
		/* The last pass leaves by itself, without one more pass to test the bound. */
		vy__vk_line(g, "if (%s >= t%u) {", v, bound);
		vy__vk_line(g, "\tbreak;");
		vy__vk_line(g, "}");
	}
	g->indent--;
	vy__vk_line(g, "}");
	g->node = self;
	if (reserve) {
		char cond[64];
		snprintf(cond, sizeof(cond), "t%u", over);
		vy__vk_trap_if(g, cond, VY_TRAP_LOOP_LIMIT);
	}
}

/* The loop's variable from `from`, its iterations up to t<bound>, and the check that the driver
 * did not cut it short. */
static void loop_run(struct vy__vk_gen *g, const struct vy_node *n, const char *from,
	uint32_t bound, struct vy__vk_loop_shape shape)
{
	uint32_t self = g->node;
	uint32_t id = g->next_var++;
	char v[128];
	ident(v, sizeof(v), 'v', id, n->name);
	/* The variable outlives the loop so that its exit can be checked: a vyre loop has no
	 * break, so it ends with v >= bound unless the driver cut it short. Such a loop fails the
	 * dispatch instead of giving a wrong answer. */
	vy__vk_line(g, "{");
	g->indent++;
	vy__vk_line(g, "uint %s = %s;", v, from);
	if (shape.copies <= 1 && !shape.whole) {
		vy__vk_line(g, "for (; %s < t%u; ++%s) {", v, bound, v);
		g->indent++;
		iteration_head(g);
		iteration_body(g, n, id);
		g->indent--;
		vy__vk_line(g, "}");
	} else {
		copied_loop(g, n, id, v, bound, shape);
	}
	g->node = self;
	/* Node numbers stay below VY_IR_MAX_NODES, so the complement names the node. */
	g->uses |= VY__VK_USE(TRAP);
	vy__vk_line(g, "if (%s < t%u) {", v, bound);
	vy__vk_line(g, "\tvy_cut_raise(%uu);", self);
	vy__vk_line(g, "\treturn;");
	vy__vk_line(g, "}");
	g->indent--;
	vy__vk_line(g, "}");
}

/* The index of `name` in names[0..n), or n. */
static uint32_t name_index(const char *const *names, uint32_t n, const char *name)
{
	uint32_t k = 0;
	while (k < n && strcmp(names[k], name) != 0) {
		k++;
	}
	return k;
}

/* The names a block assigns, each once, into names[] (at most `cap`); the count, or cap + 1
 * when there are more. */
static uint32_t assigned_in(const struct vy_block *b, const char **names, uint32_t n, uint32_t cap)
{
	for (uint32_t i = 0; i < b->len && n <= cap; i++) {
		const struct vy_node *x = b->items[i];
		if (x->kind == VY_NODE_ASSIGN) {
			if (name_index(names, n, x->name) == n) {
				if (n == cap) {
					return cap + 1;
				}
				names[n++] = x->name;
			}
		}
		n = assigned_in(&x->body, names, n, cap);
		n = assigned_in(&x->orelse, names, n, cap);
	}
	return n;
}

/* Most variables from outside that a speculated loop may assign (each is saved before it). */
#define SPECULATE_MAX_VARS 16

/*
 * On a device that flushes a product before rounding, deciding at every f32 product whether it
 * should have been 2^-126 costs a loop of products (a matmul's) about half its speed
 * (docs/performance.md). A loop whose body may run twice (vy__vk_block_replayable) runs first with
 * products that only note that one came out 0 from nonzero operands (vy_fmulq); only then is the
 * loop run again from the state it began with, deciding every product. Everything the first run
 * changed is a variable: those from outside and the loop counts are saved before it and put back.
 */
static bool speculate(struct vy__vk_gen *g, const struct vy_node *n, struct vy__vk_loop_shape shape,
	const char **names, uint32_t *n_names)
{
	const struct vy_vk_math *m = &g->opts->math;
	bool f32_mul = false;
	if (g->speculating || shape.copies > 1 || shape.whole || !m->fold_exact || !m->fma_fused ||
		!m->flushes_subnormals || !m->product_flag ||
		!vy__vk_block_replayable(&n->body, &f32_mul) || !f32_mul) {
		return false;
	}
	*n_names = assigned_in(&n->body, names, 0, SPECULATE_MAX_VARS);
	return *n_names <= SPECULATE_MAX_VARS;
}

static void loop(struct vy__vk_gen *g, const struct vy_node *n)
{
	struct vy__vk_val from, to;
	vy__vk_expr(g, n->args[0], &from);
	vy__vk_expr(g, n->args[1], &to);
	if (g->rc) {
		return;
	}
	g->has_loop = true;
	/* A barrier in the body comes after the accesses of earlier iterations too. */
	g->touched = g->touched || vy__vk_block_touches(g, &n->body);
	uint32_t self = g->node;
	/* The bound is read once, even when it names a variable that the body assigns. */
	uint32_t bound = g->next_temp++;
	vy__vk_line(g, "uint t%u = %s;", bound, to.text);
	struct vy__vk_loop_shape shape =
		g->shapes ? g->shapes[self] : (struct vy__vk_loop_shape){1, false};
	const char *names[SPECULATE_MAX_VARS];
	uint32_t n_names = 0;
	if (!speculate(g, n, shape, names, &n_names)) {
		loop_run(g, n, from.text, bound, shape);
		return;
	}
	/* The first value of the loop's variable, and the state the loop begins with. */
	uint32_t start = g->next_temp++;
	vy__vk_line(g, "uint t%u = %s;", start, from.text);
	uint32_t saved = g->next_temp;
	g->next_temp += n_names + 2;
	char var[128];
	char first[32];
	snprintf(first, sizeof(first), "t%u", start);
	for (uint32_t i = 0; i < n_names; i++) {
		const struct vy__vk_var *v = var_find(g, names[i]);
		if (v) {
			ident(var, sizeof(var), 'v', v->id, v->name);
			vy__vk_line(g, "%s t%u = %s;", vy__vk_glsl_type(v->type), saved + i, var);
		}
	}
	vy__vk_line(g, "uint t%u = vy_it_lo;", saved + n_names);
	vy__vk_line(g, "uint t%u = vy_it_hi;", saved + n_names + 1);
	g->hazard = g->next_temp++;
	vy__vk_line(g, "bool t%u = false;", g->hazard);
	uint32_t hazard = g->hazard;
	uint32_t body = g->next_node;
	g->speculating = true;
	loop_run(g, n, first, bound, shape);
	g->speculating = false;
	vy__vk_line(g, "if (t%u) {", hazard);
	g->indent++;
	for (uint32_t i = 0; i < n_names; i++) {
		const struct vy__vk_var *v = var_find(g, names[i]);
		if (v) {
			ident(var, sizeof(var), 'v', v->id, v->name);
			vy__vk_line(g, "%s = t%u;", var, saved + i);
		}
	}
	vy__vk_line(g, "vy_it_lo = t%u;", saved + n_names);
	vy__vk_line(g, "vy_it_hi = t%u;", saved + n_names + 1);
	g->next_node = body;
	g->node = self;
	loop_run(g, n, first, bound, shape);
	g->indent--;
	vy__vk_line(g, "}");
}

/* Region generator names are free text: keep printable ASCII for the comment. */
static void region_comment(struct vy__vk_gen *g, const char *name)
{
	char text[VY_IR_MAX_NAME + 1];
	size_t n = 0;
	for (const char *c = name; *c && n < VY_IR_MAX_NAME; c++) {
		text[n++] = (*c >= 0x20 && *c < 0x7F) ? *c : '?';
	}
	text[n] = '\0';
	vy__vk_line(g, "// region %s", text);
}

/* A let of a speculated run (run() below): its variable, declared before the run. */
struct hoisted {
	uint32_t id;
	const char *name;
	enum vy_type type;
};

/* A let: its variable declared with its value, or, in a speculated run (`in_run`), assigned the
 * value, the variable being declared before the run; `hoisted`, when given, records its identifier
 * and type for that declaration. */
static void let(struct vy__vk_gen *g, const struct vy_node *n, bool in_run, struct hoisted *hoisted)
{
	struct vy__vk_val v;
	vy__vk_expr(g, n->args[0], &v);
	if (g->rc) {
		return;
	}
	uint32_t id = g->next_var++;
	char text[192];
	ident(text, sizeof(text), 'v', id, n->name);
	if (hoisted) {
		*hoisted = (struct hoisted){id, n->name, v.type};
	}
	if (in_run) {
		vy__vk_line(g, "%s = %s;", text, v.text);
	} else {
		vy__vk_line(g, "%s %s = %s;", vy__vk_glsl_type(v.type), text, v.text);
	}
	/* An assigned f32 may take a loose value later: taken as loose throughout. */
	var_push(g, n->name, id, vy__vk_range_of(g, n->args[0]), v.type,
		v.loose || (v.type == VY_TYPE_F32 && vy__vk_assigned(g, n->name)),
		!vy__vk_assigned(g, n->name) && vy__vk_varying(g, n->args[0]));
}

static void node_begin(struct vy__vk_gen *g, const struct vy_node *n)
{
	g->node = g->next_node++;
	/* A node's own expressions run before anything in its body, whose nodes mark themselves
	 * as they are generated (a loop marks its whole body: see loop()). */
	g->touched = g->touched || vy__vk_expr_touches(g, n->args[0]) ||
		     vy__vk_expr_touches(g, n->args[1]) ||
		     (n->kind == VY_NODE_STORE && vy__vk_node_touches(g, n));
}

static void node(struct vy__vk_gen *g, const struct vy_node *n)
{
	node_begin(g, n);
	struct vy__vk_val v;
	char text[192];
	switch (n->kind) {
	case VY_NODE_LET:
		let(g, n, false, NULL);
		return;
	case VY_NODE_ASSIGN:
		vy__vk_expr(g, n->args[0], &v);
		if (g->rc) {
			return;
		}
		vy__vk_var_ident(g, n->name, text, sizeof(text));
		vy__vk_opaque(g, &v);
		vy__vk_line(g, "%s = %s;", text, v.text);
		return;
	case VY_NODE_STORE:
		store(g, n);
		return;
	case VY_NODE_IF:
		vy__vk_expr(g, n->args[0], &v);
		if (g->rc) {
			return;
		}
		vy__vk_cond_text(&v, text, sizeof(text));
		vy__vk_line(g, "if (%s) {", text);
		g->indent++;
		block(g, &n->body);
		g->indent--;
		if (n->orelse.len > 0) {
			vy__vk_line(g, "} else {");
			g->indent++;
			block(g, &n->orelse);
			g->indent--;
		}
		vy__vk_line(g, "}");
		return;
	case VY_NODE_LOOP:
		loop(g, n);
		return;
	case VY_NODE_RETURN:
		vy__vk_line(g, "return;");
		return;
	case VY_NODE_BLOCK:
	case VY_NODE_REGION:
		vy__vk_line(g, "{");
		g->indent++;
		if (n->kind == VY_NODE_REGION) {
			region_comment(g, n->name);
		}
		block(g, &n->body);
		g->indent--;
		vy__vk_line(g, "}");
		return;
	case VY_NODE_BARRIER:
		if (n->order == VY_ORDER_GRID_SYNC) {
			vy__vk_fail(g, VY_E_UNSUPPORTED_FEATURE,
				"move the grid_sync barrier to the top level of the entry, or of "
				"a region that is the whole entry, where the runtime splits it",
				"a grid_sync barrier reached code generation, but no barrier "
				"inside one shader waits for the whole grid");
			return;
		}
		/* Release this invocation's writes, meet, then acquire the others'. Every order
		 * gets the full fence, never weaker than what the program asked for, except that
		 * buffer memory needs none before any access to a buffer that the program writes
		 * (vk_facts.c). */
		g->has_barrier = true;
		vy__vk_line(g, "memoryBarrierShared();");
		if (g->touched) {
			g->fenced = true;
			vy__vk_line(g, "memoryBarrierBuffer();");
		}
		vy__vk_line(g, "barrier();");
		if (g->touched) {
			vy__vk_line(g, "memoryBarrierBuffer();");
		}
		return;
	case VY_NODE_KIND_COUNT:
		break;
	}
	assert(!"node kind outside the enum");
}

/* ---- Speculated runs ---- */

/*
 * On a device that flushes before rounding, every f32 product and fma decides on the spot
 * whether its result needs the exact computation (vy_fmul, vy_ffma): a test and a branch to a
 * long inlined path after each, which costs a math function's expansion (dozens of them in a
 * row) more than half its speed (docs/performance.md). A run of consecutive nodes that can run
 * twice with nothing of the first run seen but the variables it declares (lets, and ifs, blocks
 * and assigns that assign only the run's own lets) runs first with the device's results
 * (vy_fmulq, vy_ffmaq), which only note in one flag that some result may differ from the exact
 * one; only then does the run go again, deciding every result. A first run without the flag
 * computed every value as the second would have: each of its operations met the operands the
 * exact one would have, and gave the same bits wherever the exact one keeps the device's.
 * docs/semantics.md §10, "Speculated runs", gives the proof.
 */

/* Most lets of one speculated run, and the fewest products and fmas that make one worth it. */
#define RUN_MAX_LETS 256
#define RUN_MIN_CHECKED 2

static uint32_t checked_in_expr(const struct vy_expr *e)
{
	if (!e) {
		return 0;
	}
	uint32_t n = e->kind == VY_EXPR_FMA ||
		     (e->kind == VY_EXPR_BINARY && e->op == VY_BIN_MUL && e->type == VY_TYPE_F32);
	for (uint32_t i = 0; i < e->nargs; i++) {
		n += checked_in_expr(e->args[i]);
	}
	return n;
}

static uint32_t checked_in_block(const struct vy_block *b)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < b->len; i++) {
		const struct vy_node *x = b->items[i];
		n += checked_in_expr(x->args[0]) + checked_in_expr(x->args[1]) +
		     checked_in_block(&x->body) + checked_in_block(&x->orelse);
	}
	return n;
}

/* Whether every name that `b` assigns is one of the run's lets so far, names[0..n). */
static bool assigns_within(const struct vy_block *b, const char *const *names, uint32_t n)
{
	const char *assigned[RUN_MAX_LETS];
	uint32_t k = assigned_in(b, assigned, 0, RUN_MAX_LETS);
	if (k > RUN_MAX_LETS) {
		return false;
	}
	for (uint32_t i = 0; i < k; i++) {
		if (name_index(names, n, assigned[i]) == n) {
			return false;
		}
	}
	return true;
}

/*
 * The end of the speculated run that begins at b->items[from], or `from` where none does. Then
 * *plain is where the next run may begin: a stretch too poor in products for a run from `from`
 * holds none from any node inside it either (a later start meets the same nodes, with fewer
 * names of its own), unless the stretch ended at the cap on lets.
 */
static uint32_t run_end(
	const struct vy__vk_gen *g, const struct vy_block *b, uint32_t from, uint32_t *plain)
{
	const struct vy_vk_math *m = &g->opts->math;
	*plain = b->len; /* no run in this block at all */
	if (g->speculating || g->rerun || !m->fold_exact || !m->fma_fused ||
		!m->flushes_subnormals || !m->product_flag) {
		return from;
	}
	const char *names[RUN_MAX_LETS];
	uint32_t n = 0;
	uint32_t checked = 0;
	uint32_t end = from;
	for (; end < b->len; end++) {
		struct vy_block one = {&b->items[end], 1};
		bool f32_mul = false;
		if (!vy__vk_block_replayable(&one, &f32_mul)) {
			break;
		}
		if (b->items[end]->kind == VY_NODE_LET) {
			if (n == RUN_MAX_LETS) {
				break;
			}
			names[n++] = b->items[end]->name;
		} else if (!assigns_within(&one, names, n)) {
			break;
		}
		checked += checked_in_block(&one);
	}
	if (checked >= RUN_MIN_CHECKED) {
		*plain = end;
		return end;
	}
	*plain = n == RUN_MAX_LETS ? from + 1 : end > from ? end : from + 1;
	return from;
}

/* The nodes of a run, its lets assigned; `hoisted` (the first run) records them. */
static void run_nodes(struct vy__vk_gen *g, const struct vy_block *b, uint32_t from, uint32_t end,
	struct hoisted *hoisted)
{
	for (uint32_t i = from; i < end && !g->rc; i++) {
		const struct vy_node *x = b->items[i];
		if (x->kind == VY_NODE_LET) {
			node_begin(g, x);
			let(g, x, true, hoisted ? hoisted++ : NULL);
		} else {
			node(g, x);
		}
	}
}

/* b->items[from..end) as a speculated run: the lets declared, the first run in a scope of its
 * own, the second where the first set the flag; both assign the lets (the same identifiers). */
static void run(struct vy__vk_gen *g, const struct vy_block *b, uint32_t from, uint32_t end)
{
	struct hoisted lets[RUN_MAX_LETS];
	uint32_t n_lets = 0;
	for (uint32_t i = from; i < end; i++) {
		n_lets += b->items[i]->kind == VY_NODE_LET;
	}
	uint32_t mark = g->n_vars;
	uint32_t first_var = g->next_var;
	uint32_t first_node = g->next_node;
	uint32_t hazard = g->next_temp++;
	struct vy__vk_str outer = g->body;
	g->body = (struct vy__vk_str){0};
	g->indent++;
	g->speculating = true;
	g->hazard = hazard;
	run_nodes(g, b, from, end, lets);
	g->speculating = false;
	struct vy__vk_str first = g->body;
	g->body = (struct vy__vk_str){0};
	var_pop_to(g, mark);
	g->next_var = first_var;
	g->next_node = first_node;
	g->rerun = true;
	run_nodes(g, b, from, end, NULL);
	g->rerun = false;
	struct vy__vk_str second = g->body;
	g->body = outer;
	g->indent--;
	for (uint32_t i = 0; i < n_lets && !g->rc; i++) {
		char text[192];
		ident(text, sizeof(text), 'v', lets[i].id, lets[i].name);
		vy__vk_line(g, "%s %s;", vy__vk_glsl_type(lets[i].type), text);
	}
	vy__vk_line(g, "bool t%u = false;", hazard);
	vy__vk_line(g, "{");
	vy__vk_str_add(&g->body, first.data ? first.data : "");
	vy__vk_line(g, "}");
	vy__vk_line(g, "if (t%u) {", hazard);
	vy__vk_str_add(&g->body, second.data ? second.data : "");
	vy__vk_line(g, "}");
	vy__vk_str_finish(&first);
	vy__vk_str_finish(&second);
}

static void block(struct vy__vk_gen *g, const struct vy_block *b)
{
	uint32_t mark = g->n_vars;
	uint32_t plain = 0; /* below it no run begins (run_end) */
	for (uint32_t i = 0; i < b->len && !g->rc;) {
		uint32_t end = i < plain ? i : run_end(g, b, i, &plain);
		if (end > i) {
			run(g, b, i, end);
			i = end;
		} else {
			node(g, b->items[i++]);
		}
	}
	var_pop_to(g, mark);
}

/* ---- The shader ---- */

static void emit_interface(struct vy__vk_gen *g, struct vy__vk_str *out)
{
	const struct vy_program *p = g->p;
	const struct vy_vk_shader_layout *layout = g->layout;
	vy__vk_str_add(out, "#version 450\n");
	static const struct {
		uint32_t bit;
		const char *ext;
	} exts[] = {
		{VY_VK_SUBGROUP_BASIC, "GL_KHR_shader_subgroup_basic"},
		{VY_VK_SUBGROUP_ARITHMETIC, "GL_KHR_shader_subgroup_arithmetic"},
		{VY_VK_SUBGROUP_BALLOT, "GL_KHR_shader_subgroup_ballot"},
		{VY_VK_SUBGROUP_SHUFFLE, "GL_KHR_shader_subgroup_shuffle"},
	};
	for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
		if (g->subgroup_features & exts[i].bit) {
			vy__vk_str_addf(out, "#extension %s : require\n", exts[i].ext);
		}
	}
	vy__vk_str_addf(out,
		"\nlayout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2,\n"
		"\tlocal_size_x = %u, local_size_y = %u, local_size_z = %u) in;\n\n",
		p->workgroup_size[0], p->workgroup_size[1], p->workgroup_size[2]);
	for (uint32_t i = 0; i < p->n_buffers; i++) {
		if (p->buffers[i].access == VY_ACCESS_WORKGROUP) {
			/* The launch has the program's own workgroup size: the ranges of vk_facts.c
			 * hold, and the bounds checks they make redundant fold away. (No && here:
			 * glslang writes a short-circuit outside any function.) */
			vy__vk_str_addf(out,
				"const bool vy_wg_own = ((gl_WorkGroupSize.x ^ %uu) | "
				"(gl_WorkGroupSize.y ^ %uu) |\n"
				"\t(gl_WorkGroupSize.z ^ %uu)) == 0u;\n\n",
				p->workgroup_size[0], p->workgroup_size[1], p->workgroup_size[2]);
			break;
		}
	}

	char id[128];
	for (uint32_t i = 0; i < layout->n_spec; i++) {
		const struct vy_vk_spec *s = &layout->spec[i];
		ident(id, sizeof(id), 's', s->constant_id, s->name);
		vy__vk_str_addf(out, "layout(constant_id = %u) const uint %s = %uu;\n",
			s->constant_id, id, s->default_bits);
	}
	if (layout->n_spec > 0) {
		vy__vk_str_add(out, "\n");
	}

	for (uint32_t k = 0; k < layout->n_bindings; k++) {
		const struct vy_vk_binding *bd = &layout->bindings[k];
		const char *qual = bd->read_only ? "readonly " : (g->fenced ? "coherent " : "");
		ident(id, sizeof(id), 'b', bd->buffer_index, p->buffers[bd->buffer_index].name);
		vy__vk_str_addf(out,
			"layout(std430, set = 0, binding = %u) %sbuffer VyBuf%u {\n\tuint d[];\n} "
			"%s;\n",
			bd->vk_binding, qual, bd->buffer_index, id);
	}
	vy__vk_str_addf(out,
		"layout(std430, set = 0, binding = %u) buffer VyTrap {\n"
		"\tuint key;\n"
		"\tuint count;\n"
		"\tuint cut;\n"
		"} vy_trap;\n",
		layout->trap_binding);
	vy__vk_str_addf(out,
		"layout(std430, set = 0, binding = %u) volatile readonly buffer VyStop {\n"
		"\tuint word;\n"
		"} vy_stop;\n",
		layout->stop_binding);
	vy__vk_str_add(out, "layout(push_constant, std430) uniform VyPush {\n"
			    "\tuint lwg_x;\n"
			    "\tuint lwg_y;\n"
			    "\tuint lwg_z;\n"
			    "\tuint dispatch_x;\n"
			    "\tuint dispatch_y;\n"
			    "\tuint loop_limit_lo;\n"
			    "\tuint loop_limit_hi;\n"
			    "\tuint empty_bindings;\n"
			    "\tuint base_x;\n"
			    "\tuint base_y;\n"
			    "\tuint base_z;\n"
			    "\tuint stop_on_entry;\n"
			    "\tuint opaque_zero;\n"
			    "} vy_pc;\n");
	if (g->coarse.on) {
		vy__vk_str_addf(out, "layout(constant_id = %u) const uint vy_kc = 1u;\n",
			VY_VK_COARSE_SPEC_ID);
	} else {
		vy__vk_str_addf(out, "layout(constant_id = %u) const bool vy_direct = false;\n",
			VY_VK_DIRECT_SPEC_ID);
	}
	if (g->guarded) {
		vy__vk_str_addf(out, "layout(constant_id = %u) const bool vy_counted = true;\n",
			VY_VK_COUNT_SPEC_ID);
	}
	for (uint32_t i = 0; i < p->n_buffers; i++) {
		const struct vy_buffer *b = &p->buffers[i];
		if (b->access == VY_ACCESS_WORKGROUP) {
			ident(id, sizeof(id), 'b', i, b->name);
			vy__vk_str_addf(out, "shared uint %s[%u];\n", id, b->count);
		}
	}
	vy__vk_str_add(out, "\n");
}

/*
 * The logical workgroup id (the folding rule of planner/launch.h, computed without overflow:
 * a launched id whose linear number does not fit 32 bits is past any logical grid), the global
 * ids, zeroed workgroup memory and the loop counter. The plain form skips the folding and the
 * stop word where the launch is its logical grid in one part (vy_direct, VY_VK_DIRECT_SPEC_ID):
 * each early return costs the driver's compiler time, and a cold compile waits for it.
 */
static void emit_prologue(struct vy__vk_gen *g, struct vy__vk_str *out)
{
	const struct vy_program *p = g->p;
	bool coarse = g->coarse.on;
	/* The folding, one level deeper in the plain form, inside `if (!vy_direct)`. */
	const char *in = coarse ? "\t" : "\t\t";
	if (coarse) {
		vy__vk_str_add(out, "\tuvec3 vy_wg = gl_WorkGroupID + "
				    "uvec3(vy_pc.base_x, vy_pc.base_y, vy_pc.base_z);\n"
				    "\tuint vy_k = 1u;\n");
	} else {
		vy__vk_str_add(out,
			"\tuvec3 vy_wg = gl_WorkGroupID;\n"
			"\tif (!vy_direct) {\n"
			"\t\tvy_wg += uvec3(vy_pc.base_x, vy_pc.base_y, vy_pc.base_z);\n");
	}
	static const char *const fold[] = {
		"if (vy_pc.lwg_y == 1u && vy_pc.lwg_z == 1u) {",
		"\tuint vy_hi;",
		"\tuint vy_lo;",
		"\tumulExtended(vy_wg.z, vy_pc.dispatch_y, vy_hi, vy_lo);",
		"\tbool vy_over = vy_hi != 0u;",
		"\tuint vy_lin = vy_lo + vy_wg.y;",
		"\tvy_over = vy_over || vy_lin < vy_lo;",
		"\tumulExtended(vy_lin, vy_pc.dispatch_x, vy_hi, vy_lo);",
		"\tvy_over = vy_over || vy_hi != 0u;",
		"\tvy_lin = vy_lo + vy_wg.x;",
		"\tvy_over = vy_over || vy_lin < vy_lo;",
	};
	for (size_t i = 0; i < sizeof(fold) / sizeof(fold[0]); i++) {
		vy__vk_str_addf(out, "%s%s\n", in, fold[i]);
	}
	if (coarse) {
		/* The launch covers ceil(lwg_x / vy_k) workgroups of vy_k logical ones each. */
		vy__vk_str_add(out, "\t\tvy_k = vy_kc;\n"
				    "\t\tuint vy_lim = vy_pc.lwg_x / vy_k + (vy_pc.lwg_x % vy_k != "
				    "0u ? 1u : 0u);\n");
	}
	vy__vk_str_addf(out,
		"%s\tif (vy_over || vy_lin >= %s) {\n"
		"%s\t\treturn;\n"
		"%s\t}\n"
		"%s\tvy_wg = uvec3(vy_lin, 0u, 0u);\n"
		"%s}\n"
		"%sif (vy_pc.stop_on_entry != 0u && vy_stop.word != 0u) {\n"
		"%s\treturn;\n"
		"%s}\n",
		in, coarse ? "vy_lim" : "vy_pc.lwg_x", in, in, in, in, in, in, in);
	if (!coarse) {
		vy__vk_str_add(out,
			"\t}\n"
			"\tuvec3 vy_gid = vy_wg * gl_WorkGroupSize + gl_LocalInvocationID;\n");
	}
	char id[128];
	for (uint32_t k = 0; k < g->layout->n_bindings; k++) {
		uint32_t i = g->layout->bindings[k].buffer_index;
		ident(id, sizeof(id), 'b', i, p->buffers[i].name);
		vy__vk_str_addf(out,
			"\t%svy_len%u = (vy_pc.empty_bindings & %uu) != 0u ? 0u : "
			"uint(%s.d.length());\n",
			coarse ? "" : "uint ", k, 1u << k, id);
	}
	bool shared = false;
	for (uint32_t i = 0; i < p->n_buffers; i++) {
		const struct vy_buffer *b = &p->buffers[i];
		if (b->access != VY_ACCESS_WORKGROUP) {
			continue;
		}
		if (!shared) {
			vy__vk_str_add(out,
				"\tuint vy_wsize = gl_WorkGroupSize.x * gl_WorkGroupSize.y *"
				" gl_WorkGroupSize.z;\n");
			shared = true;
		}
		ident(id, sizeof(id), 'b', i, b->name);
		vy__vk_str_addf(out,
			"\tfor (uint vy_i = gl_LocalInvocationIndex; vy_i < %uu; vy_i += vy_wsize) "
			"{\n"
			"\t\t%s[vy_i] = 0u;\n"
			"\t}\n",
			b->count, id);
	}
	if (shared) {
		vy__vk_str_add(out, "\tmemoryBarrierShared();\n\tbarrier();\n");
	}
	if (g->has_loop && !coarse) {
		vy__vk_str_add(out, "\tuint vy_it_lo = 0u;\n\tuint vy_it_hi = 0u;\n");
	}
	if (!g->opts->math.select_exact) {
		vy__vk_str_addf(out, "\t%svy_z = vy_pc.opaque_zero;\n", coarse ? "" : "uint ");
	}
}

int vy_vk_codegen(const struct vy_program *program, const struct vy_vk_codegen_options *opts,
	char **glsl, struct vy_vk_shader_layout *layout, struct vy_err *err)
{
	assert(program && opts && glsl && layout);
	*glsl = NULL;
	memset(layout, 0, sizeof(*layout));
	plan_bindings(program, layout);
	if (!specs_in_block(layout, &program->entry)) {
		return vy_err_set(err, VY_E_UNSUPPORTED_FEATURE, NULL,
			"use at most 64 distinct spec constants in one program",
			"the program uses more than %d distinct spec constants", VY_VK_MAX_SPEC);
	}
	for (uint32_t i = 0; i < layout->n_spec; i++) {
		layout->spec[i].constant_id = 3 + i;
	}

	struct vy__vk_gen g = {
		.p = program,
		.opts = opts,
		.layout = layout,
		.err = err,
		.indent = 1,
	};
	for (uint32_t k = 0; k < layout->n_bindings; k++) {
		g.vk_binding[layout->bindings[k].buffer_index] = layout->bindings[k].vk_binding;
	}
	for (uint32_t i = 0; i < VY__VK_VAR_HEADS; i++) {
		g.heads[i] = -1;
	}
	if (opts->loop_passes > 0 &&
		sat_add(prologue_passes(program), block_loops(&program->entry, 1, 1)) >=
			opts->loop_passes) {
		uint32_t nodes = vy_block_count_nodes(&program->entry);
		g.shapes = calloc(nodes > 0 ? nodes : 1, sizeof(*g.shapes));
		if (!g.shapes) {
			fprintf(stderr, "vyred: out of memory shaping the loops of a shader\n");
			abort();
		}
		uint32_t next = 0;
		shape_block(&g, &program->entry, &next);
	}
	vy__vk_facts_init(&g);
	layout->static_iters = block_loops(&program->entry, 1, 0);
	g.guarded =
		layout->static_iters > 0 &&
		sat_mul(layout->static_iters, block_size(&program->entry)) <= VY_VK_UNCOUNTED_WORK;
	layout->uncountable = g.guarded;
	vy__vk_coarse_plan(&g);
	block(&g, &program->entry);
	vy__vk_facts_finish(&g);
	free(g.shapes);
	if (g.rc) {
		vy__vk_str_finish(&g.body);
		free(g.vars);
		return g.rc;
	}

	struct vy__vk_str out = {0};
	emit_interface(&g, &out);
	vy__vk_lib_emit(&out, g.uses, &opts->math);
	if (g.coarse.on) {
		vy__vk_coarse_head(&g, &out);
	} else {
		vy__vk_str_add(&out, "void main()\n{\n");
		emit_prologue(&g, &out);
	}
	if (g.body.len > 0) {
		vy__vk_str_add(&out, g.body.data);
	}
	if (g.coarse.on) {
		vy__vk_str_add(&out, "}\n\nvoid main()\n{\n");
		emit_prologue(&g, &out);
		vy__vk_coarse_main(&g, &out);
	}
	vy__vk_str_add(&out, "}\n");

	layout->uses_f64 = (vy__vk_lib_close(g.uses) & VY__VK_USE(FFMA)) &&
			   vy__vk_lib_fma_needs_f64(&opts->math);
	layout->subgroup_features = g.subgroup_features;
	vy__vk_str_finish(&g.body);
	free(g.vars);
	*glsl = out.data;
	return 0;
}

/* ---- Traps ---- */

int vy_vk_trap_decode(const struct vy_program *program, const void *sidecar, size_t len,
	uint32_t loop_passes, struct vy_err *err)
{
	if (!sidecar || len < VY_VK_TRAP_BYTES) {
		return vy_err_set(err, VY_E_INTERNAL, NULL,
			"bind a trap sidecar of trap_bytes bytes and read all of it back",
			"the trap sidecar holds %zu bytes, fewer than %u", len, VY_VK_TRAP_BYTES);
	}
	uint32_t words[3];
	memcpy(words, sidecar, sizeof(words));
	char at[VY_ERR_AT_MAX];
	if (words[2] != 0) {
		uint32_t loop = ~words[2];
		if (vy_node_path(program, loop, at, sizeof(at)) != 0) {
			return vy_err_set(err, VY_E_INTERNAL, NULL,
				"decode the sidecar with the program the shader was generated from",
				"the trap sidecar names loop node %u, which the program does not "
				"have",
				loop);
		}
		char budget[96] = "a limit of its driver";
		if (loop_passes > 0) {
			snprintf(budget, sizeof(budget),
				"%u loop passes per invocation, over all of its loops",
				loop_passes);
		}
		return vy_err_set(err, VY_E_UNSUPPORTED_FEATURE, at,
			"give each invocation fewer loop iterations (more invocations, or more "
			"dispatches), or run the program on a device without this limit",
			"the device ended the loop at %s before its bound: it runs at most %s, and "
			"an invocation needed more",
			at, budget);
	}
	if (words[0] == 0) {
		return 0;
	}
	uint32_t key = ~words[0];
	uint32_t node = key / VY_TRAP_KIND_COUNT;
	enum vy_trap_kind kind = (enum vy_trap_kind)(key % VY_TRAP_KIND_COUNT);
	if (vy_node_path(program, node, at, sizeof(at)) != 0) {
		return vy_err_set(err, VY_E_INTERNAL, NULL,
			"decode the sidecar with the program the shader was generated from",
			"the trap sidecar names node %u, which the program does not have", node);
	}
	const char *fix;
	switch (kind) {
	case VY_TRAP_INT_DIV_ZERO:
		fix = "guard the i32 division or remainder so the divisor is never zero";
		break;
	case VY_TRAP_INT_OVERFLOW_DIV:
		fix = "guard the i32 division or remainder against -2147483648 divided by -1";
		break;
	default:
		fix = "bound the loop, or raise config.max_loop_iterations if the work needs more "
		      "iterations";
		break;
	}
	return vy_err_set(err, VY_E_TRAP, at, fix, "trap %s at %s; %u invocation(s) trapped",
		vy_trap_kind_name(kind), at, words[1]);
}
