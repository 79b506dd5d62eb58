/*
 * Preparing a program for the reference interpreter: clone it (the caller's program is const and
 * may be read by other threads, while validation writes types), validate the clone against the
 * interpreter's limits, lower the math library, and compile the clone into the tree of
 * interp.h, where every variable is a slot, every buffer an index and every spec constant an
 * index into the values chosen at dispatch. Scopes reuse slots: a variable's slot is free again
 * once its block ends, so the slots a run needs are the variables live at once, not all of them.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "err.h"
#include "interp.h"
#include "validate.h"
#include "vmath.h"

/* Names in scope, pushed and popped in stack order, found through hash chains. */
#define TABLE_HEADS 4096u

struct name_entry {
	const char *name;
	uint32_t hash;
	int32_t next; /* the entry below in the same chain, or -1 */
	uint32_t value;
};

struct name_table {
	struct name_entry *items;
	uint32_t len;
	uint32_t cap;
	int32_t heads[TABLE_HEADS];
};

static uint32_t hash_name(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++) {
		h = (h ^ (uint8_t)*s) * 16777619u;
	}
	return h;
}

static void table_init(struct name_table *t)
{
	memset(t, 0, sizeof(*t));
	for (uint32_t i = 0; i < TABLE_HEADS; i++) {
		t->heads[i] = -1;
	}
}

static void table_finish(struct name_table *t)
{
	free(t->items);
}

static void table_push(struct name_table *t, const char *name, uint32_t value)
{
	if (t->len == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 64;
		struct name_entry *items = realloc(t->items, (size_t)cap * sizeof(*items));
		if (!items) {
			fprintf(stderr, "vyred: out of memory compiling a program\n");
			abort();
		}
		t->items = items;
		t->cap = cap;
	}
	uint32_t h = hash_name(name);
	uint32_t b = h & (TABLE_HEADS - 1);
	t->items[t->len] = (struct name_entry){name, h, t->heads[b], value};
	t->heads[b] = (int32_t)t->len;
	t->len++;
}

static void table_pop_to(struct name_table *t, uint32_t len)
{
	while (t->len > len) {
		struct name_entry *e = &t->items[--t->len];
		t->heads[e->hash & (TABLE_HEADS - 1)] = e->next;
	}
}

static const struct name_entry *table_find(const struct name_table *t, const char *name)
{
	uint32_t h = hash_name(name);
	for (int32_t i = t->heads[h & (TABLE_HEADS - 1)]; i >= 0; i = t->items[i].next) {
		if (t->items[i].hash == h && strcmp(t->items[i].name, name) == 0) {
			return &t->items[i];
		}
	}
	return NULL;
}

struct compiler {
	struct ref_prog *rp;
	struct vy_program *p;
	struct vy_err *err;
	uint32_t *origins; /* written-program number of each node, when lowering inserted some */
	struct name_table vars;
	struct name_table specs;
	uint32_t n_specs;
	uint32_t cap_specs;
	uint32_t next_slot;
	uint32_t next_node;
	uint32_t lists; /* lane lists held by the nodes around the current one */
	int rc;
};

/* Record the first error; later ones are dropped. */
static void fail_at_node(
	struct compiler *c, uint32_t node, int code, const char *fix, const char *what)
{
	if (c->rc) {
		return;
	}
	char at[VY_ERR_AT_MAX];
	vy_node_path(ref_prog_written(c->rp), node, at, sizeof(at));
	c->rc = vy_err_set(c->err, code, at, fix, "%s", what);
}

static void *arena_array(struct compiler *c, size_t n, size_t size)
{
	return n ? vy_arena_calloc(c->rp->arena, n, size) : NULL;
}

static uint32_t buffer_index(struct compiler *c, const char *name, uint32_t node)
{
	const struct vy_buffer *b = name ? vy_program_find_buffer(c->p, name) : NULL;
	if (!b) {
		fail_at_node(c, node, VY_E_INTERNAL, "validate the program before dispatching it",
			"a node names a buffer the program does not declare");
		return 0;
	}
	return (uint32_t)(b - c->p->buffers);
}

static uint32_t spec_index(struct compiler *c, const struct vy_expr *e)
{
	const struct name_entry *found = table_find(&c->specs, e->name);
	if (found) {
		return found->value;
	}
	if (c->n_specs == c->cap_specs) {
		uint32_t cap = c->cap_specs ? c->cap_specs * 2 : 8;
		struct ref_spec *specs = realloc(c->rp->specs, (size_t)cap * sizeof(*specs));
		if (!specs) {
			fprintf(stderr, "vyred: out of memory compiling a program\n");
			abort();
		}
		c->rp->specs = specs;
		c->cap_specs = cap;
	}
	uint32_t bits = e->type == VY_TYPE_F32 ? ref_canon(e->bits) : e->bits;
	c->rp->specs[c->n_specs] = (struct ref_spec){e->name, (uint8_t)e->type, bits};
	table_push(&c->specs, e->name, c->n_specs);
	return c->n_specs++;
}

static const struct ref_expr *compile_expr(
	struct compiler *c, const struct vy_expr *e, uint32_t depth, uint32_t node)
{
	if (c->rc) {
		return NULL;
	}
	if (!e || e->type >= VY_TYPE_COUNT || e->nargs > 3) {
		fail_at_node(c, node, VY_E_INTERNAL, "validate the program before dispatching it",
			"an expression has no type; the program was not validated");
		return NULL;
	}
	if (depth > c->rp->expr_depth) {
		c->rp->expr_depth = depth;
	}
	struct ref_expr *r = vy_arena_alloc(c->rp->arena, sizeof(*r));
	r->kind = (uint8_t)e->kind;
	r->type = (uint8_t)e->type;
	r->op = e->op;
	r->imm = e->bits;
	r->nargs = (uint8_t)e->nargs;
	for (uint32_t i = 0; i < e->nargs; i++) {
		r->args[i] = compile_expr(c, e->args[i], depth + 1, node);
		if (c->rc) {
			return NULL;
		}
	}
	r->atype = e->nargs > 0 ? r->args[0]->type : r->type;

	switch (e->kind) {
	case VY_EXPR_LIT:
		if (e->type == VY_TYPE_F32) {
			r->imm = ref_canon(e->bits);
		}
		break;
	case VY_EXPR_VAR: {
		const struct name_entry *v = e->name ? table_find(&c->vars, e->name) : NULL;
		if (!v) {
			fail_at_node(c, node, VY_E_INTERNAL,
				"validate the program before dispatching it",
				"a variable is used outside the scope of its let");
			return NULL;
		}
		r->imm = v->value;
		break;
	}
	case VY_EXPR_LOAD:
	case VY_EXPR_LEN:
	case VY_EXPR_ATOMIC:
		r->imm = buffer_index(c, e->name, node);
		break;
	case VY_EXPR_SPEC:
		r->imm = spec_index(c, e);
		break;
	case VY_EXPR_UNARY:
	case VY_EXPR_BINARY:
		if (e->kind == VY_EXPR_UNARY ? vy_vmath_lowers((enum vy_unop)e->op)
					     : vy_vmath_lowers_binary((enum vy_binop)e->op)) {
			char what[128];
			snprintf(what, sizeof(what),
				"the reference interpreter reached %s, which the math-library "
				"lowering replaces",
				e->kind == VY_EXPR_UNARY ? vy_unop_name((enum vy_unop)e->op)
							 : vy_binop_name((enum vy_binop)e->op));
			fail_at_node(c, node, VY_E_UNSUPPORTED_FEATURE,
				"lower the program with vy_vmath_lower before interpreting it",
				what);
			return NULL;
		}
		break;
	default:
		break;
	}
	return r;
}

static void compile_block(struct compiler *c, const struct vy_block *b, struct ref_block *out);

static void new_slot(struct compiler *c, uint32_t *slot, uint32_t n)
{
	*slot = c->next_slot;
	c->next_slot += n;
	if (c->next_slot > c->rp->n_slots) {
		c->rp->n_slots = c->next_slot;
	}
}

static void hold_lists(struct compiler *c, uint32_t n)
{
	c->lists += n;
	if (c->lists > c->rp->nesting) {
		c->rp->nesting = c->lists;
	}
}

static void compile_node(struct compiler *c, const struct vy_node *n, struct ref_node *r)
{
	r->kind = (uint8_t)n->kind;
	r->index = c->origins ? c->origins[c->next_node] : c->next_node;
	c->next_node++;
	switch (n->kind) {
	case VY_NODE_LET:
		r->args[0] = compile_expr(c, n->args[0], 0, r->index);
		new_slot(c, &r->slot, 1);
		if (!c->rc) {
			table_push(&c->vars, n->name, r->slot);
		}
		break;
	case VY_NODE_ASSIGN: {
		r->args[0] = compile_expr(c, n->args[0], 0, r->index);
		const struct name_entry *v = n->name ? table_find(&c->vars, n->name) : NULL;
		if (!v) {
			fail_at_node(c, r->index, VY_E_INTERNAL,
				"validate the program before dispatching it",
				"an assignment names a variable outside its scope");
			return;
		}
		r->slot = v->value;
		break;
	}
	case VY_NODE_STORE:
		r->buffer = buffer_index(c, n->name, r->index);
		r->args[0] = compile_expr(c, n->args[0], 0, r->index);
		r->args[1] = compile_expr(c, n->args[1], 0, r->index);
		break;
	case VY_NODE_IF:
		r->args[0] = compile_expr(c, n->args[0], 0, r->index);
		hold_lists(c, 2);
		compile_block(c, &n->body, &r->body);
		compile_block(c, &n->orelse, &r->orelse);
		c->lists -= 2;
		break;
	case VY_NODE_LOOP: {
		r->args[0] = compile_expr(c, n->args[0], 0, r->index);
		r->args[1] = compile_expr(c, n->args[1], 0, r->index);
		c->rp->has_loops = true;
		uint32_t scope = c->vars.len;
		uint32_t slots = c->next_slot;
		new_slot(c, &r->slot, 2);
		if (!c->rc) {
			table_push(&c->vars, n->name, r->slot);
		}
		hold_lists(c, 1);
		compile_block(c, &n->body, &r->body);
		c->lists -= 1;
		table_pop_to(&c->vars, scope);
		c->next_slot = slots;
		break;
	}
	case VY_NODE_BLOCK:
	case VY_NODE_REGION:
		compile_block(c, &n->body, &r->body);
		break;
	case VY_NODE_BARRIER:
		if (n->order == VY_ORDER_GRID_SYNC) {
			fail_at_node(c, r->index, VY_E_UNSUPPORTED_FEATURE,
				"move the grid_sync barrier to the top level of the entry, or of a "
				"region that is the entry's only node",
				"a grid_sync barrier below the top level cannot be split into "
				"launches");
		}
		break;
	case VY_NODE_RETURN:
		break;
	default:
		fail_at_node(c, r->index, VY_E_INTERNAL,
			"validate the program before dispatching it", "unknown node kind");
		break;
	}
}

static void compile_block(struct compiler *c, const struct vy_block *b, struct ref_block *out)
{
	uint32_t scope = c->vars.len;
	uint32_t slots = c->next_slot;
	struct ref_node *items = arena_array(c, b->len, sizeof(*items));
	for (uint32_t i = 0; i < b->len && !c->rc; i++) {
		compile_node(c, b->items[i], &items[i]);
	}
	out->items = items;
	out->len = b->len;
	table_pop_to(&c->vars, scope);
	c->next_slot = slots;
}

static const struct vy_caps ref_caps = {
	.subgroups = true,
	.max_workgroup_invocations = REF_MAX_INVOCATIONS,
	.max_workgroup_size = {REF_MAX_WORKGROUP_X, REF_MAX_WORKGROUP_Y, REF_MAX_WORKGROUP_Z},
	.max_shared_bytes = REF_MAX_SHARED_BYTES,
};

static int lowering_defect(struct vy_err *err, const char *at, const char *what)
{
	return vy_err_set(err, VY_E_INTERNAL, at, "report this defect of the math-library lowering",
		"the lowered program %s", what);
}

/*
 * Keep the program as written in rp->written and lower a copy into rp->program. The copy must
 * validate again and correspond node for node to the original, but for the lets it inserts;
 * anything else is a defect of the lowering.
 */
static int lower(struct ref_prog *rp, uint32_t **origins, struct vy_err *err)
{
	rp->written = rp->program;
	rp->program = vy_program_clone(rp->written);
	int rc = vy_vmath_lower(rp->program, err);
	if (rc) {
		return rc;
	}
	struct vy_err why;
	if (vy_validate_first(rp->program, &ref_caps, &why)) {
		char what[VY_ERR_MESSAGE_MAX];
		snprintf(what, sizeof(what), "does not validate: %.300s", why.message);
		return lowering_defect(err, why.at, what);
	}
	uint32_t n = vy_node_path_count(rp->program);
	*origins = malloc((n ? n : 1) * sizeof(**origins));
	if (!*origins) {
		fprintf(stderr, "vyred: out of memory compiling a program\n");
		abort();
	}
	if (vy_node_path_origins(rp->written, rp->program, *origins, n)) {
		return lowering_defect(err, NULL, "does not keep the statements of the original");
	}
	return 0;
}

int vy__ref_prog_create(
	const struct vy_program *src, bool validate, struct ref_prog **out, struct vy_err *err)
{
	*out = NULL;
	struct ref_prog *rp = calloc(1, sizeof(*rp));
	if (!rp) {
		fprintf(stderr, "vyred: out of memory compiling a program\n");
		abort();
	}
	rp->program = vy_program_clone(src);
	rp->arena = vy_arena_create();
	int rc = 0;
	uint32_t *origins = NULL;
	if (validate) {
		rc = vy_validate_first(rp->program, &ref_caps, err);
	}
	if (rc == 0 && vy_vmath_needed(rp->program)) {
		rc = lower(rp, &origins, err);
	}
	if (rc) {
		free(origins);
		vy__ref_prog_destroy(rp);
		return rc;
	}

	/* The name tables' heads make the compiler too large for the stack. */
	struct compiler *c = calloc(1, sizeof(*c));
	if (!c) {
		fprintf(stderr, "vyred: out of memory compiling a program\n");
		abort();
	}
	c->rp = rp;
	c->p = rp->program;
	c->err = err;
	c->origins = origins;
	table_init(&c->vars);
	table_init(&c->specs);
	compile_block(c, &rp->program->entry, &rp->entry);
	rp->n_specs = c->n_specs;
	rc = c->rc;
	table_finish(&c->vars);
	table_finish(&c->specs);
	free(c);
	free(origins);
	if (rc) {
		vy__ref_prog_destroy(rp);
		return rc;
	}
	rp->features = vy_launch_features_scan(rp->program);
	*out = rp;
	return 0;
}

void vy__ref_prog_destroy(struct ref_prog *rp)
{
	if (!rp) {
		return;
	}
	vy_program_destroy(rp->program);
	vy_program_destroy(rp->written);
	vy_arena_destroy(rp->arena);
	free(rp->specs);
	free(rp);
}

int vy__ref_validate(const struct vy_program *src, struct vy_err *err)
{
	struct vy_program *p = vy_program_clone(src);
	int rc = vy_validate_first(p, &ref_caps, err);
	vy_program_destroy(p);
	return rc;
}
